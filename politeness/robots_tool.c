/*
 * robots_tool.c: `crawler robots --agent UA FILE [URL...]`.
 *
 * Parses FILE as robots.txt for UA and prints "allow" or "disallow" for each
 * URL given as an argument, or for each line of stdin when there is none.
 * A URL's path and query (no fragment) is what the rules match; it is taken
 * as Google's reference parser does (robots_path_from_url), so URLs that the
 * URL module would reject are still answered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/tools.h"
#include "frontier/base/fileio.h"
#include "frontier/base/tool_args.h"
#include "politeness/robots.h"

#define ROBOTS_TOOL_MAX_FILE (64u * 1024u * 1024u)

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: crawler robots --agent UA [--verbose] FILE [URL...]\n"
	        "  Parses FILE (a robots.txt; '-' is stdin) for user agent UA (its product\n"
	        "  token: the part before the first '/' or space) and prints `allow` or\n"
	        "  `disallow` for each URL argument, or for each URL read from stdin, one\n"
	        "  per line. --verbose also prints the URL, and the file's crawl-delay and\n"
	        "  sitemaps on stderr. Only the first %u bytes of FILE are parsed (RFC 9309).\n",
	        ROBOTS_PARSE_LIMIT);
}

static int check_url(const struct robots *r, const char *url, size_t len, bool verbose)
{
	size_t cap = len + 2;
	char *path = malloc(cap);
	if (!path)
		return 1;
	int rc = robots_path_from_url(url, len, path, cap);
	if (rc == ROBOTS_OK) {
		bool ok = robots_allowed(r, path, strlen(path));
		if (verbose)
			printf("%s\t%.*s\n", ok ? "allow" : "disallow", (int)len, url);
		else
			printf("%s\n", ok ? "allow" : "disallow");
	}
	free(path);
	return rc == ROBOTS_OK ? 0 : 1;
}

int robots_tool_main(int argc, char **argv)
{
	const char *agent = NULL, *file = NULL;
	bool verbose = false;
	int first_url = argc;
	for (int i = 1; i < argc; i++) {
		const char *value;
		if (tool_flag(argv[i], "--help", "-h")) {
			usage(stdout);
			return 0;
		} else if ((value = tool_option(argc, argv, &i, "--agent")) != NULL) {
			agent = value;
		} else if (tool_flag(argv[i], "--verbose", "-v")) {
			verbose = true;
		} else if (tool_is_option(argv[i])) {
			return tool_usage_error("robots", "unknown option", argv[i], usage);
		} else {
			file = argv[i];
			first_url = i + 1;
			break;
		}
	}
	if (!agent || !file) {
		usage(stderr);
		return 2;
	}
	if (strcmp(file, "-") == 0 && first_url == argc) {
		fprintf(stderr, "crawler robots: FILE is stdin, so URLs must be arguments\n");
		return 2;
	}

	int status = 1;
	char *body = NULL, *line = NULL;
	size_t len = 0, linecap = 0;
	struct robots *r = NULL;
	body = fileio_read_path(file, ROBOTS_TOOL_MAX_FILE, &len);
	if (body == NULL) {
		fprintf(stderr, "crawler robots: cannot read %s: %s\n", file, strerror(errno));
		goto out;
	}
	int rc = robots_parse(body, len, agent, &r);
	if (rc != ROBOTS_OK) {
		fprintf(stderr, "crawler robots: %s\n", robots_strerror(rc));
		goto out;
	}
	if (verbose) {
		double d = robots_crawl_delay(r);
		if (d >= 0)
			fprintf(stderr, "crawl-delay: %g\n", d);
		for (size_t i = 0; i < robots_sitemap_count(r); i++)
			fprintf(stderr, "sitemap: %s\n", robots_sitemap(r, i));
		fprintf(stderr, "rules: %zu\n", robots_rule_count(r));
	}
	status = 0;
	if (first_url < argc) {
		for (int i = first_url; i < argc; i++)
			if (check_url(r, argv[i], strlen(argv[i]), verbose) != 0)
				status = 1;
	} else {
		ssize_t got;
		while ((got = getline(&line, &linecap, stdin)) >= 0) {
			size_t n = (size_t)got;
			while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				n--;
			if (check_url(r, line, n, verbose) != 0)
				status = 1;
		}
	}
	if (fflush(stdout) != 0)
		status = 1;
out:
	free(line);
	free(body);
	robots_destroy(r);
	return status;
}
