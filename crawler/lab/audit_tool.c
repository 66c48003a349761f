/*
 * audit_tool.c: `crawler audit DIR [--html FILE] [--json FILE] [--quiet]`,
 * the politeness audit of a crawl's output folder (audit.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "crawler/lab/audit.h"
#include "frontier/base/tools.h"
#include "frontier/base/tool_args.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: crawler audit DIR [--json FILE] [--html FILE] [--quiet]\n"
	        "  Audits the politeness of the crawl in DIR from DIR/crawl.log, judged\n"
	        "  against DIR/crawl.conf's [politeness] delays (cross-checked with\n"
	        "  DIR/stats.json): per host and per IP, requests, bytes, the gaps between\n"
	        "  consecutive requests (end of one to start of the next: min, median,\n"
	        "  histogram), the busy share and every gap below the required delay\n"
	        "  (minus %d ms for the log's 1 ms resolution); crawl-wide, pages/s, time\n"
	        "  to 50/90/99%% of the pages, hosts busy, waiting and idle over time.\n"
	        "  Prints a summary and the worst hosts on stdout.\n"
	        "  --json FILE  everything, machine-readable ('-' for stdout)\n"
	        "  --html FILE  one self-contained page with inline SVG plots\n"
	        "  --quiet      no text report\n"
	        "  Malformed log lines are named on stderr and skipped. Each request is\n"
	        "  also judged against its logged wait_ms (the rest the crawler owed the\n"
	        "  host: policy, Crawl-delay, back-off and Retry-After in sum).\n"
	        "  Exit: 0 audited (violations or not), 1 unreadable, 2 usage.\n",
	        AUDIT_TOLERANCE_MS);
}

/* Writes one report to path ("-" stdout); 0 or 1. */
static int write_report(const struct audit *a, const char *path,
                        int (*fn)(const struct audit *, FILE *))
{
	int to_stdout = strcmp(path, "-") == 0;
	FILE *f = to_stdout ? stdout : fopen(path, "w");
	if (!f) {
		fprintf(stderr, "crawler audit: %s: %s\n", path, strerror(errno));
		return 1;
	}
	int rc = fn(a, f);
	if (to_stdout ? fflush(f) != 0 : fclose(f) != 0)
		rc = -1;
	if (rc != 0) {
		fprintf(stderr, "crawler audit: cannot write %s\n", path);
		return 1;
	}
	return 0;
}

int audit_tool_main(int argc, char **argv)
{
	const char *dir = NULL, *json = NULL, *html = NULL;
	bool quiet = false;
	const struct tool_spec spec = { "audit",
		                        usage,
		                        { { "--json", NULL, &json }, { "--html", NULL, &html } },
		                        { "--quiet", "-q", &quiet },
		                        &dir };
	int st = tool_parse_args(&spec, argc, argv);
	if (st >= 0)
		return st;
	struct audit *a = NULL;
	enum audit_error rc = audit_load_dir(dir, &a, stderr);
	if (rc != AUDIT_OK) {
		if (rc == AUDIT_ERR_NOMEM)
			fprintf(stderr, "crawler audit: %s\n", audit_strerror(rc));
		return rc == AUDIT_ERR_CONF ? 2 : 1;
	}
	int status = 0;
	if (!quiet && audit_report_text(a, stdout) != 0)
		status = 1;
	if (json && write_report(a, json, audit_report_json) != 0)
		status = 1;
	if (html && write_report(a, html, audit_report_html) != 0)
		status = 1;
	if (fflush(stdout) != 0)
		status = 1;
	audit_destroy(a);
	return status;
}
