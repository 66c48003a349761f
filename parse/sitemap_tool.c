/*
 * sitemap_tool.c: `crawler sitemaps [--scope any|host|directory]
 * [--scope-url URL] [--max-locs N] [--verbose] URL < sitemap`.
 *
 * Reads a sitemap (XML or gzip-compressed XML) fetched from URL on stdin,
 * in pieces as the fetch loop would hand them over, and prints each entry
 * on its own line: the loc's crawl key, a tab, its kind (urlset: a page,
 * sitemapindex: a sitemap) and, when present, a tab and the lastmod. A
 * problem (malformed, truncated, ...) is reported on stderr; --verbose adds
 * the counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/tools.h"
#include "frontier/base/tool_args.h"
#include "parse/sitemap.h"

#define SITEMAP_TOOL_READ (64u * 1024u)

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: crawler sitemaps [--scope any|host|directory] [--scope-url URL]\n"
	        "                        [--max-locs N] [--verbose] URL < sitemap.xml[.gz]\n"
	        "  Prints the entries of the sitemap on stdin, fetched from URL (absolute\n"
	        "  http or https), one per line: the loc as a crawl key, a tab, `urlset`\n"
	        "  (a page) or `sitemapindex` (a sitemap) and, with a lastmod, a tab and it.\n"
	        "  gzip input is recognized by its magic bytes. The protocol's limits hold:\n"
	        "  %u locs (--max-locs lowers it), %u bytes uncompressed.\n"
	        "  --scope: which locs are kept: any (default), the host of the scope URL,\n"
	        "  or its directory (the protocol's rule); --scope-url: the URL they are\n"
	        "  compared with (default URL; a robots.txt URL for cross-submission).\n"
	        "  --verbose prints the counts on stderr.\n",
	        SITEMAP_MAX_LOCS, SITEMAP_MAX_BYTES);
}

static int print_entry(const struct sitemap_entry *e, void *arg)
{
	(void)arg;
	if (e->lastmod)
		printf("%s\t%s\t%s\n", e->url, sitemap_kind_name(e->kind), e->lastmod);
	else
		printf("%s\t%s\n", e->url, sitemap_kind_name(e->kind));
	return 0;
}

/* --scope NAME into *out: 0, or -1 for an unknown name. */
static int parse_scope(const char *s, enum sitemap_scope *out)
{
	if (strcmp(s, "any") == 0)
		*out = SITEMAP_SCOPE_ANY;
	else if (strcmp(s, "host") == 0)
		*out = SITEMAP_SCOPE_HOST;
	else if (strcmp(s, "directory") == 0)
		*out = SITEMAP_SCOPE_DIRECTORY;
	else
		return -1;
	return 0;
}

static void print_counts(const struct sitemap_result *r)
{
	fprintf(stderr,
	        "kind: %s\nproblem: %s\ngzip: %s\nforeign_namespace: %s\nbytes: %zu\nlocs: %zu\n"
	        "dropped_over_limit: %zu\ntoo_long: %zu\ninvalid: %zu\nout_of_scope: %zu\n"
	        "empty: %zu\n",
	        sitemap_kind_name(r->kind), sitemap_problem_name(r->problem),
	        r->gzip ? "yes" : "no", r->foreign_namespace ? "yes" : "no", r->bytes, r->locs,
	        r->dropped_over_limit, r->too_long, r->invalid, r->out_of_scope, r->empty);
}

/* Feeds stdin to the parser and prints what it gives: the exit code. */
static int run(const struct sitemap_config *cfg, const char *url, const char *scope_url,
               bool verbose)
{
	int status = 1;
	struct sitemap_parser *p = NULL;
	char *buf = malloc(SITEMAP_TOOL_READ);
	int rc = buf ? sitemap_parser_create(cfg, &p) : SITEMAP_ENOMEM;
	if (rc == SITEMAP_OK)
		rc = sitemap_begin(p, url, scope_url, print_entry, NULL);
	if (rc == SITEMAP_EINVAL) {
		fprintf(stderr, "crawler sitemaps: '%s' is not an absolute http(s) URL\n",
		        scope_url ? scope_url : url);
		status = 2;
		goto out;
	}
	size_t n;
	while (rc == SITEMAP_OK && (n = fread(buf, 1, SITEMAP_TOOL_READ, stdin)) > 0)
		rc = sitemap_feed(p, buf, n);
	if (rc == SITEMAP_OK && ferror(stdin)) {
		fprintf(stderr, "crawler sitemaps: cannot read stdin\n");
		goto out;
	}
	struct sitemap_result r;
	if (rc == SITEMAP_OK)
		rc = sitemap_finish(p, &r);
	if (rc != SITEMAP_OK) {
		fprintf(stderr, "crawler sitemaps: %s\n", sitemap_strerror(rc));
		goto out;
	}
	if (r.problem != SITEMAP_FINE)
		fprintf(stderr, "crawler sitemaps: %s: %s\n", sitemap_problem_name(r.problem),
		        r.message);
	if (verbose)
		print_counts(&r);
	status = fflush(stdout) == 0 ? 0 : 1;
out:
	sitemap_parser_destroy(p);
	free(buf);
	return status;
}

struct sitemap_args {
	const char *url, *scope_url, *scope, *max_locs;
	bool verbose;
};

static int sitemap_run(const void *ctx)
{
	const struct sitemap_args *a = ctx;
	struct sitemap_config cfg = { 0 };
	if (a->scope && parse_scope(a->scope, &cfg.scope) != 0) {
		fprintf(stderr, "crawler sitemaps: bad --scope '%s'\n", a->scope);
		return 2;
	}
	if (a->max_locs &&
	    tool_count("sitemaps", "--max-locs", a->max_locs, SITEMAP_MAX_LOCS, &cfg.max_locs) != 0)
		return 2;
	return run(&cfg, a->url, a->scope_url, a->verbose);
}

int sitemap_tool_main(int argc, char **argv)
{
	struct sitemap_args a = { 0 };
	const struct tool_spec spec = {
		"sitemaps",
		usage,
		{ { "--scope", NULL, &a.scope },
		  { "--scope-url", NULL, &a.scope_url },
		  { "--max-locs", NULL, &a.max_locs } },
		{ "--verbose", "-v", &a.verbose },
		&a.url,
	};
	return tool_run(&spec, argc, argv, sitemap_run, &a);
}
