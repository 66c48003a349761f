/*
 * links_tool.c: `crawler links [--charset CS] [--verbose] URL < page.html`.
 *
 * Extracts the links of the HTML page read on stdin, fetched from URL, and
 * prints each absolute, normalized link on its own line followed by a tab
 * and its kind (a, area, link-canonical, link-alternate, link-next,
 * link-prev, frame, iframe, meta-refresh), and by a tab and "nofollow" when
 * the element has rel=nofollow. --verbose adds the page-level results
 * (meta robots, base, canonical, SimHash, drop counts) on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/tools.h"
#include "frontier/base/fileio.h"
#include "frontier/base/tool_args.h"
#include "parse/links.h"

#define LINKS_TOOL_MAX_PAGE (256u * 1024u * 1024u)

static void usage(FILE *out)
{
	fprintf(out, "usage: crawler links [--charset CHARSET] [--max-links N] [--verbose] URL < "
	             "page.html\n"
	             "  Prints the links of the HTML page on stdin, fetched from URL (absolute\n"
	             "  http or https), one per line: the absolute normalized URL, a tab, its\n"
	             "  kind (a, area, link-canonical, link-alternate, link-next, link-prev,\n"
	             "  frame, iframe, meta-refresh) and, for rel=nofollow, a tab and `nofollow`.\n"
	             "  --charset gives the Content-Type charset (it wins over <meta charset>).\n"
	             "  --verbose prints page-level results (meta robots, base, canonical,\n"
	             "  SimHash, dropped links) on stderr.\n");
}

struct links_args {
	const char *charset, *max_links, *url;
	bool verbose;
};

static int links_run(const void *ctx)
{
	const struct links_args *a = ctx;
	struct links_config cfg = { 0 };
	if (a->max_links &&
	    tool_count("links", "--max-links", a->max_links, 10000000, &cfg.max_links))
		return 2;
	int status = 1;
	size_t len = 0;
	struct links_extractor *ex = NULL;
	char *body = fileio_read_stream(stdin, LINKS_TOOL_MAX_PAGE, &len);
	if (!body) {
		fprintf(stderr, "crawler links: cannot read stdin\n");
		goto out;
	}
	int rc = links_extractor_create(&cfg, &ex);
	if (rc != LINKS_OK) {
		fprintf(stderr, "crawler links: %s\n", links_strerror(rc));
		goto out;
	}
	rc = links_extract(ex, a->url, a->charset, body, len);
	if (rc == LINKS_EINVAL) {
		fprintf(stderr, "crawler links: '%s' is not an absolute http(s) URL\n", a->url);
		status = 2;
		goto out;
	}
	if (rc != LINKS_OK) {
		fprintf(stderr, "crawler links: %s\n", links_strerror(rc));
		goto out;
	}
	size_t n = 0;
	const struct link *l = links_result(ex, &n);
	for (size_t i = 0; i < n; i++)
		printf("%s\t%s%s\n", l[i].url, link_kind_name(l[i].kind),
		       l[i].nofollow ? "\tnofollow" : "");
	if (a->verbose) {
		const struct links_page *p = links_page_info(ex);
		fprintf(stderr,
		        "links: %zu\nnoindex: %s\nnofollow: %s\nbase: %s\ncanonical: %s\n"
		        "simhash: %016" PRIx64 "\ndropped_scheme: %zu\ndropped_invalid: %zu\n"
		        "truncated: %zu\n",
		        n, p->noindex ? "yes" : "no", p->nofollow ? "yes" : "no", p->base,
		        p->canonical ? p->canonical : "-", p->simhash, p->dropped_scheme,
		        p->dropped_invalid, p->truncated);
	}
	status = fflush(stdout) == 0 ? 0 : 1;
out:
	links_extractor_destroy(ex);
	free(body);
	return status;
}

int links_tool_main(int argc, char **argv)
{
	struct links_args a = { 0 };
	const struct tool_spec spec = { "links",
		                        usage,
		                        { { "--charset", NULL, &a.charset },
		                          { "--max-links", NULL, &a.max_links } },
		                        { "--verbose", "-v", &a.verbose },
		                        &a.url };
	return tool_run(&spec, argc, argv, links_run, &a);
}
