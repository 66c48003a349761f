/*
 * lab.h: `crawler lab PLAN -o DIR`, politeness experiments from a plan.
 *
 * A plan (lab.c) lists entries; each entry is run `repetitions` times, and
 * each run (lab_run.c) is one crawl against a fresh test web (`testweb`,
 * which ships beside the crawler) started for it alone, judged afterwards
 * from the test web's own request log (lab_judge.c), never from the
 * crawler's account; lab_report.c writes the comparison, lab_tool.c is
 * the command. The comparison goes to stdout, DIR/lab.tsv,
 * DIR/lab.json and DIR/lab.html; each run keeps its files in
 * DIR/ENTRY/rep-K/ (testweb.log, expected.tsv, seeds.txt, models.txt,
 * crawl/, crawl.out, crawl.err).
 *
 * The plan file (line-based; '#' starts a comment line):
 *
 *   [lab]                          settings and defaults of every entry
 *   repetitions = 3                runs per entry (1..100, default 1)
 *   timeout_s = 300                cap on one crawl (default 300)
 *   testweb = PATH                 the test web binary (relative to the plan;
 *                                  --testweb wins; else `testweb` beside the
 *                                  crawler binary)
 *   tolerance_ms = N               an interval this much below the judged
 *                                  delay is still polite (default
 *                                  LAB_TOLERANCE_MS)
 *   [entry NAME]                   one policy to compare; NAME is
 *                                  [A-Za-z0-9._-], unique, the run's folder
 *   Keys of [lab] and of entries (an entry's come after [lab]'s):
 *   hosts = N, pages = P, ips = K, seed = S   the test web's generation
 *                                  (defaults 8, 20, 4, 1; an entry's value wins)
 *   model = RULE                   one test web server-model rule (repeatable)
 *   models = FILE                  a test web models file (relative to the plan)
 *   crawl = ARGS                   `crawler crawl` arguments, split on blanks
 *   SECTION.KEY = VALUE            a crawler configuration key, passed as
 *                                  `--set SECTION.KEY=VALUE` (any key, so a
 *                                  policy added later needs no lab change)
 *   judge_delay_ms = N             the delay violations are judged against
 *                                  (default: from the crawl's crawl.conf)
 *
 * Invariants after lab_plan_load: every entry's web fields are set, its
 * args hold [lab]'s crawl arguments then its own, its models [lab]'s rules
 * then its own; names are unique and safe as folder names.
 *
 * Judging a run (lab_judge.c), from the server log with models on (the
 * lab always passes --models, so every line has in_flight, rate_1s and
 * service_us): requests of a host are sorted by arrival; a request's end
 * is arrival + service_us. The interval before a request is its arrival
 * minus the previous arrival; the gap, its arrival minus the latest end
 * before it. A violation is an interval below the judged delay minus the
 * plan's tolerance_ms, or an overlap (a gap below 0, also counted apart).
 * The judged delay: judge_delay_ms if set, else for the fixed policy with
 * one URL per visit max(host delay, ip delay when ip_politeness), for
 * the adaptive one its floor min_delay_ms (and that ip delay), else 0 (a
 * keep-alive visit's requests may be back to back: only overlaps count).
 * Why arrival to arrival, when the policies rest from the end of a visit:
 * the server stamps a response's end when its write completes in its event
 * loop, which on a loaded machine (or under sanitizers) comes up to ~100
 * ms after the client has the last byte, while both arrivals are stamped
 * alike; a crawler resting from the end always passes, and an interval
 * below the delay is a violation whatever the ends were. The tolerance
 * covers the jitter of the arrival stamps. (Overlaps stand: the next
 * request cannot be read before the write it follows has completed.)
 * Pages are responses of the web's hosts for paths other than
 * /robots.txt; the duration runs from the first arrival to the last end;
 * time to 90% is from the first arrival until 90% of the expected set
 * (testweb --expected for the crawl's user agent) has been requested at
 * least once.
 *
 * Threads: none. Workload: a handful of runs of some 10^3..10^5 log lines.
 */
#ifndef CRAWLER_LAB_LAB_H
#define CRAWLER_LAB_LAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LAB_TOLERANCE_MS 5 /* default tolerance_ms */
#define LAB_MAX_REPETITIONS 100
#define LAB_MAX_LINE 8192

enum lab_error {
	LAB_OK = 0,
	LAB_ERR_NOMEM = 1,   /* allocation failed */
	LAB_ERR_IO = 2,      /* a file could not be read or written (errno set) */
	LAB_ERR_PLAN = 3,    /* the plan is malformed (the message names the line) */
	LAB_ERR_PROCESS = 4, /* the test web or the crawler could not run */
	LAB_ERR_LOG = 5,     /* the server log is unusable (no model columns) */
};

const char *lab_strerror(enum lab_error err);

/* A growable list of strings the list owns. */
struct lab_strv {
	char **v;
	size_t n, cap;
};

/* Appends a copy of s (len bytes). LAB_OK or LAB_ERR_NOMEM. */
enum lab_error lab_strv_add(struct lab_strv *sv, const char *s, size_t len);
void lab_strv_free(struct lab_strv *sv);

/* The test web's generation options; -1 in a field: not set. */
struct lab_web {
	long hosts, pages, ips, seed;
};

struct lab_entry {
	char *name;
	struct lab_web web;
	struct lab_strv args;        /* `crawler crawl` arguments */
	struct lab_strv models;      /* test web --model rules */
	struct lab_strv model_files; /* test web --models files */
	long judge_delay_ms;         /* -1: from crawl.conf */
};

struct lab_plan {
	char *testweb; /* NULL: not in the plan */
	unsigned repetitions;
	unsigned timeout_s;
	unsigned tolerance_ms;
	struct lab_entry *entries;
	size_t n, cap;
};

/* Parses the plan text (len bytes) named `name` (for messages; relative
 * model files resolve against its folder) into *plan, which the caller
 * frees with lab_plan_free even on error. LAB_ERR_PLAN writes "NAME:LINE:
 * why" into err. */
enum lab_error lab_plan_parse(struct lab_plan *plan, const char *text, size_t len, const char *name,
                              char *err, size_t errlen);
/* Reads and parses the plan file at path. */
enum lab_error lab_plan_load(struct lab_plan *plan, const char *path, char *err, size_t errlen);
void lab_plan_free(struct lab_plan *plan);

/* What the judge needs of a run beyond the server log. */
struct lab_judge_in {
	const char *log_path;      /* the test web's request log */
	const char *expected_path; /* testweb --expected output */
	long http_port;            /* to rebuild URLs from the log */
	int64_t delay_ms;          /* judged delay, 0: overlaps only */
	int64_t tolerance_ms;      /* an interval >= delay - tolerance is polite */
};

/* One run's figures, all from the server log. */
struct lab_result {
	int crawl_status; /* crawler exit status; -1 killed or not run */
	uint64_t requests, pages, robots, hosts;
	uint64_t expected, covered; /* expected-set size, URLs of it requested */
	double duration_s, pages_per_s;
	double t90_s;            /* -1: 90% of the expected set never requested */
	double coverage;         /* covered / expected */
	uint64_t peak_in_flight; /* most requests of one host in service at once */
	uint64_t peak_rate_1s;   /* most arrivals of one host within a second */
	double mean_rate;        /* mean of rate_1s over the requests */
	int64_t delay_ms;        /* judged delay */
	uint64_t violations, overlaps;
	int64_t min_gap_us;      /* smallest gap over all hosts (INT64_MAX: none) */
	int64_t min_interval_us; /* smallest interval (INT64_MAX: none) */
	double *cover_s;         /* sorted times (s from the first arrival) at which */
	size_t ncover;           /* each expected URL was first requested */
};

/* Judges one run; *r is filled (free its cover_s with lab_result_clear). */
enum lab_error lab_judge(const struct lab_judge_in *in, struct lab_result *r, char *err,
                         size_t errlen);
void lab_result_clear(struct lab_result *r);

/* The figures of a whole plan: runs[e * repetitions + k]. */
struct lab_report {
	const struct lab_plan *plan;
	struct lab_result *runs;
};

/* Writes the comparison: one row per run and a mean row per entry. Each
 * returns 0 or -1 if writing failed. */
int lab_report_text(const struct lab_report *rep, FILE *f);
int lab_report_tsv(const struct lab_report *rep, FILE *f);
int lab_report_json(const struct lab_report *rep, FILE *f);
int lab_report_html(const struct lab_report *rep, FILE *f);

/* Runs entry e's repetition k (lab_run.c): a fresh test web under
 * run_dir, the crawler (crawler_path crawl ...), the judge. *r gets the
 * figures; a crawl that failed or timed out is still judged. Messages on
 * errs. LAB_ERR_PROCESS when the test web could not start. */
struct lab_run_ctx {
	const char *crawler_path;
	const char *testweb_path;
	const char *run_dir;
	unsigned timeout_s;
	unsigned tolerance_ms;
	FILE *errs;
};
enum lab_error lab_run_one(const struct lab_run_ctx *ctx, const struct lab_entry *e,
                           struct lab_result *r);

/* SIGINT and SIGTERM stop the lab: the running crawl and test web are
 * stopped, lab_run_one returns, lab_run_stopped() is then 1. */
void lab_run_signals(void);
int lab_run_stopped(void);

#endif
