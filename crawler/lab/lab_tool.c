/*
 * lab_tool.c: `crawler lab PLAN -o DIR [--testweb PATH] [--quiet]`, the
 * politeness lab (lab.h): finds the test web, runs every entry's
 * repetitions one after another, writes the comparison.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/lab/lab.h"
#include "frontier/base/tools.h"
#include "frontier/base/fileio.h"
#include "frontier/base/tool_args.h"

static void usage(FILE *out)
{
	fprintf(out, "usage: crawler lab PLAN -o DIR [--testweb PATH] [--quiet]\n"
	             "  Runs the crawls PLAN lists (entries of crawler settings, the test web's\n"
	             "  size and server models, repetitions), each against a fresh local test\n"
	             "  web, judges each from the test web's own request log and compares them:\n"
	             "  pages/s, time to 90%% of the expected pages, peak and mean load per host\n"
	             "  as the server saw it, politeness violations; per entry the mean over its\n"
	             "  repetitions. Writes a table on stdout, DIR/lab.tsv, DIR/lab.json and\n"
	             "  DIR/lab.html (self-contained, inline SVG plots); each run's files in\n"
	             "  DIR/ENTRY/rep-K/ (testweb.log, expected.tsv, crawl/, crawl.err).\n"
	             "  --testweb PATH  the test web binary (else the plan's [lab] testweb, else\n"
	             "                  `testweb` beside this binary)\n"
	             "  --quiet         no table on stdout\n"
	             "  PLAN format (see configs/lab-policies.plan):\n"
	             "    [lab]           repetitions = N, timeout_s = S, testweb = PATH,\n"
	             "                    tolerance_ms = N (intervals judged: delay - N), and\n"
	             "                    defaults for every entry\n"
	             "    [entry NAME]    one crawl setting to compare\n"
	             "    hosts/pages/ips/seed = N   the test web's generation\n"
	             "    model = RULE    a test web server-model rule (repeatable);\n"
	             "    models = FILE   a test web models file\n"
	             "    crawl = ARGS    `crawler crawl` arguments\n"
	             "    SECTION.KEY = VALUE  any crawler configuration key (--set)\n"
	             "    judge_delay_ms = N   the delay judged (default: from crawl.conf)\n"
	             "  Exit: 0 every crawl finished and was judged, 1 a crawl, a run or a report\n"
	             "  failed (the others are still compared), 2 usage or bad plan,\n"
	             "  3 interrupted.\n");
}

/* dir/name if it is executable, into buf. */
static int try_path(char *buf, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(buf, cap, "%s/%s", dir, name);
	return n > 0 && (size_t)n < cap && access(buf, X_OK) == 0 ? 0 : -1;
}

/* This binary (for `crawl`) and the test web, into self and tw. */
static int find_binaries(const char *opt, const struct lab_plan *plan, char *self, char *tw,
                         size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", self, cap - 1);
	if (n <= 0) {
		fprintf(stderr, "crawler lab: cannot find this binary: %s\n", strerror(errno));
		return -1;
	}
	self[n] = '\0';
	const char *given = opt ? opt : plan->testweb;
	if (given != NULL) {
		snprintf(tw, cap, "%s", given);
		if (access(tw, X_OK) == 0)
			return 0;
		fprintf(stderr, "crawler lab: test web '%s': %s\n", tw, strerror(errno));
		return -1;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", self);
	char *slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	/* installed: bin/testweb; build tree: crawler/../tests/testweb/testweb */
	if (try_path(tw, cap, dir, "testweb") == 0 ||
	    try_path(tw, cap, dir, "../tests/testweb/testweb") == 0)
		return 0;
	fprintf(stderr, "crawler lab: no testweb beside %s: give --testweb PATH\n", self);
	return -1;
}

/* Writes one report into DIR/name; 0 or -1. */
static int write_report(const struct lab_report *rep, const char *dir, const char *name,
                        int (*fn)(const struct lab_report *, FILE *))
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, "crawler lab: %s: %s\n", path, strerror(errno));
		return -1;
	}
	int rc = fn(rep, f);
	if (fclose(f) != 0 || rc != 0) {
		fprintf(stderr, "crawler lab: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

/* Names a crawl that did not end well; returns 1, the lab's status. */
static int crawl_failed(const char *entry, int crawl_status, const char *run_dir)
{
	if (crawl_status < 0)
		fprintf(stderr, "crawler lab: %s: the crawl did not finish\n", entry);
	else
		fprintf(stderr, "crawler lab: %s: the crawl exited %d (see %s/crawl.err)\n", entry,
		        crawl_status, run_dir);
	return 1;
}

/* Runs every entry's repetitions; 0 all judged, 1 some failed, 3 stopped. */
static int run_all(const struct lab_plan *plan, struct lab_result *runs, const char *self,
                   const char *tw, const char *dir)
{
	int status = 0;
	for (size_t e = 0; e < plan->n; e++) {
		for (unsigned k = 0; k < plan->repetitions; k++) {
			char run_dir[PATH_MAX];
			snprintf(run_dir, sizeof run_dir, "%s/%s/rep-%u", dir,
			         plan->entries[e].name, k + 1);
			struct lab_run_ctx ctx = {
				self, tw, run_dir, plan->timeout_s, plan->tolerance_ms, stderr
			};
			struct lab_result *r = &runs[e * plan->repetitions + k];
			fprintf(stderr, "crawler lab: %s, repetition %u of %u\n",
			        plan->entries[e].name, k + 1, plan->repetitions);
			if (lab_run_one(&ctx, &plan->entries[e], r) != LAB_OK)
				status = 1;
			else if (r->crawl_status != 0 && !lab_run_stopped())
				status = crawl_failed(plan->entries[e].name, r->crawl_status,
				                      run_dir);
			if (lab_run_stopped())
				return 3;
		}
	}
	return status;
}

struct lab_args {
	const char *plan_path, *dir, *tw_opt;
	bool quiet;
};

static int lab_run(const void *ctx)
{
	const struct lab_args *a = ctx;
	int st;
	if (a->dir == NULL) {
		fprintf(stderr, "crawler lab: no output folder: give -o DIR\n");
		return 2;
	}
	struct lab_plan plan;
	struct lab_result *runs = NULL;
	char err[1024], self[PATH_MAX], tw[PATH_MAX];
	enum lab_error rc = lab_plan_load(&plan, a->plan_path, err, sizeof err);
	if (rc != LAB_OK) {
		fprintf(stderr, "crawler lab: %s\n", err);
		st = rc == LAB_ERR_PLAN ? 2 : 1;
		goto out;
	}
	st = 2;
	if (find_binaries(a->tw_opt, &plan, self, tw, sizeof self) != 0)
		goto out;
	st = 1;
	if (fileio_mkdir_p(a->dir) != 0) {
		fprintf(stderr, "crawler lab: %s: %s\n", a->dir, strerror(errno));
		goto out;
	}
	runs = calloc(plan.n * plan.repetitions, sizeof *runs);
	if (runs == NULL)
		goto out;
	lab_run_signals();
	st = run_all(&plan, runs, self, tw, a->dir);
	struct lab_report rep = { &plan, runs };
	if (!a->quiet && lab_report_text(&rep, stdout) != 0)
		st = st ? st : 1;
	if (write_report(&rep, a->dir, "lab.tsv", lab_report_tsv) != 0 ||
	    write_report(&rep, a->dir, "lab.json", lab_report_json) != 0 ||
	    write_report(&rep, a->dir, "lab.html", lab_report_html) != 0)
		st = st ? st : 1;
out:
	for (size_t i = 0; runs != NULL && i < plan.n * plan.repetitions; i++)
		lab_result_clear(&runs[i]);
	free(runs);
	lab_plan_free(&plan);
	return st;
}

int lab_tool_main(int argc, char **argv)
{
	struct lab_args a = { 0 };
	const struct tool_spec spec = { "lab",
		                        usage,
		                        { { "--output", "-o", &a.dir },
		                          { "--testweb", NULL, &a.tw_opt } },
		                        { "--quiet", "-q", &a.quiet },
		                        &a.plan_path };
	return tool_run(&spec, argc, argv, lab_run, &a);
}
