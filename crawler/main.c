/*
 * main.c: `crawler SUBCOMMAND ...`. Only dispatch lives here; see tools.h.
 */
#include <stdio.h>
#include <string.h>

#include "frontier/base/tools.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct subcommand subcommands[] = {
	{ "crawl", crawl_tool_main, "crawl from seed URLs (see `crawler crawl --help`)" },
	{ "sieve", sieve_tool_main,
	  "print each stdin URL not seen before, in first-appearance order" },
	{ "url", url_tool_main, "parse, resolve and normalize URLs (WHATWG URL Standard)" },
	{ "rules", rules_tool_main,
	  "decide URLs read on stdin by URL rules (a rules file, wget's -A/-R/-I/-X)" },
	{ "robots", robots_tool_main, "check URLs against a robots.txt file (RFC 9309)" },
	{ "links", links_tool_main, "extract the links of an HTML page read on stdin" },
	{ "sitemaps", sitemap_tool_main,
	  "list the entries of a sitemap (XML or gzip) read on stdin" },
	{ "assign", assign_tool_main,
	  "assign hosts read on stdin to the agents of a distributed crawl" },
	{ "audit", audit_tool_main,
	  "audit the politeness of a finished crawl from its output folder" },
	{ "lab", lab_tool_main,
	  "compare politeness policies: crawls of a fresh local test web, judged by it" },
	{ "cluster-status", cluster_status_tool_main,
	  "print the agents, counters and streams of a distributed crawl" },
	{ "index", index_tool_main, "write the sorted CDXJ index of a crawl's WARC files" },
	{ "wacz", wacz_tool_main, "package a crawl as a WACZ file (ReplayWeb.page, pywb)" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: crawler SUBCOMMAND [ARGS...]\n\nsubcommands:\n");
	for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
		fprintf(out, "  %-7s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(out, "\n`crawler SUBCOMMAND --help` describes each one.\n"
	             "\nexit codes: 0 success; 1 runtime failure (I/O, network setup);\n"
	             "            2 usage or configuration error; 3 crawl stopped by a second "
	             "SIGINT.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
		if (strcmp(argv[1], subcommands[i].name) == 0)
			return subcommands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "crawler: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
