/*
 * test_lab.c: Check suite for crawler/lab/lab.h: plan parsing (defaults of
 * [lab] merged into every entry wherever [lab] stands, configuration keys
 * passed through as --set, crawl arguments split, model files resolved
 * against the plan's folder, each malformed line named), and the judge on
 * a hand-written test web log whose gaps, loads and coverage are known
 * (robots.txt not a page, requests of no host skipped, lines out of order,
 * an overlap, an interval at the tolerance edge, a log without model columns
 * refused), the reports built from a judged run, and lab_run_one with
 * stand-ins for the test web and the crawler: a crawl that outlasts its
 * timeout is stopped, a test web that dies at once is reported, and no
 * child outlives the call.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crawler/lab/lab.h"
#include "frontier/base/clock.h"

static enum lab_error parse(struct lab_plan *p, const char *text, char *err, size_t cap)
{
	return lab_plan_parse(p, text, strlen(text), "/plans/x.plan", err, cap);
}

START_TEST(test_plan_defaults)
{
	const char *text = "# a plan\n"
	                   "[entry fixed]\n"
	                   "politeness.policy = fixed\n"
	                   "politeness.host_delay_ms = 100\n"
	                   "hosts = 3\n"
	                   "model = h0 latency fixed 50ms\n"
	                   "\n"
	                   "[lab]\n"
	                   "repetitions = 2\n"
	                   "timeout_s = 30\n"
	                   "testweb = /opt/tw\n"
	                   "tolerance_ms = 7\n"
	                   "pages = 7\n"
	                   "model = * latency fixed 5ms\n"
	                   "models = m.txt\n"
	                   "crawl = --max-time  20   --parse-threads 1\n"
	                   "politeness.ip_politeness = false\n"
	                   "[entry  ratio ]\n"
	                   "crawl = --policy ratio\n"
	                   "judge_delay_ms = 0\n";
	struct lab_plan p;
	char err[256] = "";
	ck_assert_int_eq(parse(&p, text, err, sizeof err), LAB_OK);
	ck_assert_uint_eq(p.repetitions, 2);
	ck_assert_uint_eq(p.timeout_s, 30);
	ck_assert_str_eq(p.testweb, "/opt/tw");
	ck_assert_uint_eq(p.tolerance_ms, 7);
	ck_assert_uint_eq(p.n, 2);
	const struct lab_entry *f = &p.entries[0], *r = &p.entries[1];
	ck_assert_str_eq(f->name, "fixed");
	ck_assert_str_eq(r->name, "ratio");
	ck_assert_int_eq(f->web.hosts, 3);
	ck_assert_int_eq(r->web.hosts, 8); /* built-in default */
	ck_assert_int_eq(f->web.pages, 7); /* [lab]'s */
	ck_assert_int_eq(f->web.ips, 4);
	ck_assert_int_eq(f->web.seed, 1);
	ck_assert_int_eq(f->judge_delay_ms, -1);
	ck_assert_int_eq(r->judge_delay_ms, 0);
	/* [lab]'s arguments first, then the entry's */
	const char *want_f[] = { "--max-time",      "20",
		                 "--parse-threads", "1",
		                 "--set",           "politeness.ip_politeness=false",
		                 "--set",           "politeness.policy=fixed",
		                 "--set",           "politeness.host_delay_ms=100" };
	ck_assert_uint_eq(f->args.n, 10);
	for (size_t i = 0; i < 10; i++)
		ck_assert_str_eq(f->args.v[i], want_f[i]);
	ck_assert_uint_eq(r->args.n, 8);
	ck_assert_str_eq(r->args.v[6], "--policy");
	ck_assert_str_eq(r->args.v[7], "ratio");
	ck_assert_uint_eq(f->models.n, 2);
	ck_assert_str_eq(f->models.v[0], "* latency fixed 5ms");
	ck_assert_str_eq(f->models.v[1], "h0 latency fixed 50ms");
	ck_assert_uint_eq(r->models.n, 1);
	ck_assert_uint_eq(r->model_files.n, 1);
	ck_assert_str_eq(r->model_files.v[0], "/plans/m.txt");
	lab_plan_free(&p);
	lab_plan_free(&p); /* twice: a no-op */
}
END_TEST

static const struct {
	const char *text, *message;
} bad_plans[] = {
	{ "[lab]\nrepetitions = 2\n", "x.plan:2: no [entry NAME]" },
	{ "[entry a]\nfoo = 1\n", "x.plan:2: unknown key 'foo'" },
	{ "hosts = 1\n[entry a]\n", "x.plan:1: key before any" },
	{ "[entry a]\n[entry a]\n", "x.plan:2: entry 'a' twice" },
	{ "[entry a/b]\n", "x.plan:1: bad entry name" },
	{ "[entry ..]\n", "x.plan:1: bad entry name" },
	{ "[entries a]\n", "x.plan:1: unknown section" },
	{ "[entry a\n", "x.plan:1: section header without" },
	{ "[entry a]\nhosts 3\n", "x.plan:2: want KEY = VALUE" },
	{ "[entry a]\nhosts = 0\n", "x.plan:2: hosts: want 1..100000" },
	{ "[entry a]\nips = 251\n", "x.plan:2: ips: want 1..250" },
	{ "[lab]\nrepetitions = 101\n[entry a]\n", "x.plan:2: repetitions" },
	{ "[entry a]\nrepetitions = 2\n", "x.plan:2: unknown key 'repetitions'" },
	{ "[entry a]\n = 2\n", "x.plan:2: empty key" },
	{ "[entry a]\ntolerance_ms = 2\n", "x.plan:2: unknown key 'tolerance_ms'" },
	{ "[entry a]\n.x = 2\n", "x.plan:2: unknown key '.x'" },
};

START_TEST(test_plan_errors)
{
	struct lab_plan p;
	char err[256] = "";
	ck_assert_int_eq(parse(&p, bad_plans[_i].text, err, sizeof err), LAB_ERR_PLAN);
	ck_assert_msg(strstr(err, bad_plans[_i].message) != NULL, "plan %d: '%s' lacks '%s'", _i,
	              err, bad_plans[_i].message);
	lab_plan_free(&p);
}
END_TEST

START_TEST(test_plan_relative_testweb)
{
	struct lab_plan p;
	char err[256] = "";
	ck_assert_int_eq(parse(&p, "[lab]\ntestweb = bin/tw\n[entry a]\n", err, sizeof err),
	                 LAB_OK);
	ck_assert_str_eq(p.testweb, "/plans/bin/tw");
	ck_assert_uint_eq(p.tolerance_ms, LAB_TOLERANCE_MS);
	ck_assert_uint_eq(p.repetitions, 1);
	lab_plan_free(&p);
}
END_TEST

START_TEST(test_plan_load_missing)
{
	struct lab_plan p;
	char err[256] = "";
	ck_assert_int_eq(lab_plan_load(&p, "/nonexistent/x.plan", err, sizeof err), LAB_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.plan"));
	lab_plan_free(&p);
}
END_TEST

#define T0 1795600000000000LL /* us */
#define PORT 8080

static char tmpdir[64];

static void write_file(const char *name, const char *text, char *path)
{
	snprintf(path, 256, "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* One model log line: arrival at T0 + at_ms, served in svc_ms. */
static void log_line(FILE *f, double at_ms, const char *host, const char *path, int in_flight,
                     int rate, double svc_ms)
{
	fprintf(f, "%lld\t1\t%s\t127.0.1.1\tGET\t%s\t200\t100\t%d\t%d\t%lld\n",
	        T0 + (long long)(at_ms * 1000), host, path, in_flight, rate,
	        (long long)(svc_ms * 1000));
}

static void setup(void)
{
	snprintf(tmpdir, sizeof tmpdir, "/tmp/test_lab.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* (Judged with a 2 ms tolerance.) Host h0: robots at 0 (served in 5 ms),
 * pages at 105 (10 ms), 215 (10 ms; 110 ms after the one before), 313 (5
 * ms; 98 ms after 215: at the 100 ms delay's tolerance edge, no violation,
 * though only 88 ms after its end), 410 (2 ms; 97 ms after 313: a
 * violation), 411 (overlaps it: 1 ms after, 1 ms before its end). Host
 * h1: robots at 50, one page at 3050 (50 ms). A request of no host (host
 * '-'), a comment line, lines out of order. Expected: 8 URLs, 7 of them
 * requested. */
static void write_run(char *log, char *expected)
{
	char path[256];
	snprintf(path, sizeof path, "%s/log", tmpdir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	log_line(f, 215, "h0.web.test", "/s2/p2.html", 0, 3, 10);
	log_line(f, 0, "h0.web.test", "/robots.txt", 0, 1, 5);
	log_line(f, 105, "h0.web.test", "/", 0, 2, 10);
	log_line(f, 313, "h0.web.test", "/s3/p3.html", 0, 4, 5);
	log_line(f, 410, "h0.web.test", "/s4/p4.html", 0, 5, 2);
	log_line(f, 411, "h0.web.test", "/s4/p4.html?q=1", 1, 6, 3);
	log_line(f, 50, "h1.web.test", "/robots.txt", 0, 1, 5);
	log_line(f, 3050, "h1.web.test", "/", 0, 1, 50);
	fprintf(f, "%lld\t2\t-\t127.0.0.1\tGET\t/x\t400\t0\t-\t-\t100\n", T0 + 5000);
	fputs("# a comment line\n", f);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(log, 256, "%s", path);
	write_file("expected",
	           "http://h0.web.test:8080/\t200\n"
	           "http://h0.web.test:8080/robots.txt\t200\n"
	           "http://h0.web.test:8080/s2/p2.html\t200\n"
	           "http://h0.web.test:8080/s3/p3.html\t200\n"
	           "http://h0.web.test:8080/s4/p4.html\t200\n"
	           "http://h0.web.test:8080/s4/p4.html?q=1\t200\n"
	           "http://h1.web.test:8080/\t200\n"
	           "http://h1.web.test:8080/s1/p1.html\t200\n",
	           expected);
}

START_TEST(test_judge)
{
	char log[256], expected[256], err[256] = "";
	write_run(log, expected);
	struct lab_judge_in in = { log, expected, PORT, 100, 2 };
	struct lab_result r = { .crawl_status = 0 };
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_OK);
	ck_assert_int_eq(r.crawl_status, 0);
	ck_assert_uint_eq(r.requests, 8);
	ck_assert_uint_eq(r.robots, 2);
	ck_assert_uint_eq(r.pages, 6);
	ck_assert_uint_eq(r.hosts, 2);
	ck_assert_uint_eq(r.expected, 8);
	ck_assert_uint_eq(r.covered, 7);
	ck_assert_double_eq_tol(r.coverage, 7.0 / 8, 1e-9);
	/* 90% of 8 = 7.2: the 8th URL never came */
	ck_assert_double_eq(r.t90_s, -1);
	ck_assert_uint_eq(r.ncover, 7);
	ck_assert_double_eq_tol(r.cover_s[0], 0, 1e-9);
	ck_assert_double_eq_tol(r.cover_s[5], 0.411, 1e-9);
	ck_assert_double_eq_tol(r.cover_s[6], 3.05, 1e-9);
	/* from the first arrival (0) to the last end (3050 + 50 ms) */
	ck_assert_double_eq_tol(r.duration_s, 3.1, 1e-9);
	ck_assert_double_eq_tol(r.pages_per_s, 6 / 3.1, 1e-9);
	ck_assert_uint_eq(r.peak_in_flight, 2);
	ck_assert_uint_eq(r.peak_rate_1s, 6);
	ck_assert_double_eq_tol(r.mean_rate, (3 + 1 + 2 + 4 + 5 + 6 + 1 + 1) / 8.0, 1e-9);
	ck_assert_int_eq(r.delay_ms, 100);
	ck_assert_uint_eq(r.violations, 2); /* the 97 ms interval and the overlap */
	ck_assert_uint_eq(r.overlaps, 1);
	ck_assert_int_eq(r.min_gap_us, -1000);
	ck_assert_int_eq(r.min_interval_us, 1000);
	lab_result_clear(&r);

	/* overlaps only */
	in.delay_ms = 0;
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_OK);
	ck_assert_uint_eq(r.violations, 1);
	ck_assert_uint_eq(r.overlaps, 1);
	lab_result_clear(&r);
}
END_TEST

START_TEST(test_judge_t90)
{
	char log[256], expected[256], err[256] = "";
	write_run(log, expected);
	/* 7 expected URLs, all requested: 90% is the 7th (ceil 6.3), at 3.05 s */
	write_file("expected7",
	           "http://h0.web.test:8080/\t200\n"
	           "http://h0.web.test:8080/robots.txt\t200\n"
	           "http://h0.web.test:8080/s2/p2.html\t200\n"
	           "http://h0.web.test:8080/s3/p3.html\t200\n"
	           "http://h0.web.test:8080/s4/p4.html\t200\n"
	           "http://h0.web.test:8080/s4/p4.html?q=1\t200\n"
	           "http://h1.web.test:8080/\t200\n",
	           expected);
	struct lab_judge_in in = { log, expected, PORT, 0, 2 };
	struct lab_result r = { 0 };
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_OK);
	ck_assert_double_eq_tol(r.coverage, 1, 1e-9);
	ck_assert_double_eq_tol(r.t90_s, 3.05, 1e-9);
	lab_result_clear(&r);
	/* another port: nothing of the expected set was requested */
	in.http_port = 8081;
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_OK);
	ck_assert_uint_eq(r.covered, 0);
	ck_assert_double_eq(r.t90_s, -1);
	lab_result_clear(&r);
	/* an empty expected set */
	write_file("expected0", "", expected);
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_OK);
	ck_assert_uint_eq(r.expected, 0);
	ck_assert_uint_eq(r.requests, 8);
	ck_assert_double_eq(r.coverage, 0);
	ck_assert_double_eq(r.t90_s, -1);
	lab_result_clear(&r);
}
END_TEST

START_TEST(test_judge_refuses)
{
	char log[256], expected[256], err[256] = "";
	write_run(log, expected);
	write_file("plain", "1795600000000000\t1\th0.web.test\t127.0.1.1\tGET\t/\t200\t10\n", log);
	struct lab_judge_in in = { log, expected, PORT, 0, 2 };
	struct lab_result r = { 0 };
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_ERR_LOG);
	ck_assert_ptr_nonnull(strstr(err, "without in_flight"));
	lab_result_clear(&r);
	in.log_path = "/nonexistent/log";
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_ERR_IO);
	in.expected_path = "/nonexistent/expected";
	ck_assert_int_eq(lab_judge(&in, &r, err, sizeof err), LAB_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/expected"));
	lab_result_clear(&r);
}
END_TEST

static char *report(const struct lab_report *rep, int (*fn)(const struct lab_report *, FILE *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fn(rep, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	return buf;
}

START_TEST(test_reports)
{
	char log[256], expected[256], err[256] = "";
	write_run(log, expected);
	struct lab_plan p;
	ck_assert_int_eq(parse(&p, "[lab]\nrepetitions = 2\n[entry a<b]\n", err, sizeof err),
	                 LAB_ERR_PLAN);
	lab_plan_free(&p);
	ck_assert_int_eq(parse(&p, "[lab]\nrepetitions = 2\n[entry fixed]\n", err, sizeof err),
	                 LAB_OK);
	struct lab_result runs[2] = { { 0 }, { 0 } };
	struct lab_judge_in in = { log, expected, PORT, 100, 2 };
	ck_assert_int_eq(lab_judge(&in, &runs[0], err, sizeof err), LAB_OK);
	ck_assert_int_eq(lab_judge(&in, &runs[1], err, sizeof err), LAB_OK);
	runs[1].pages_per_s = 4; /* the mean row averages the repetitions */
	struct lab_report rep = { &p, runs };
	char *tsv = report(&rep, lab_report_tsv);
	ck_assert_ptr_nonnull(strstr(tsv, "entry\trep\texit\tpages\t"));
	ck_assert_ptr_nonnull(strstr(tsv, "\nfixed\t1\t0\t6\t8\t1.94\t-\t0.875\t3.100\t2\t6\t"));
	char want[64];
	snprintf(want, sizeof want, "\nfixed\tmean\t0\t6\t8\t%.2f\t", (6 / 3.1 + 4) / 2);
	ck_assert_ptr_nonnull(strstr(tsv, want));
	ck_assert_ptr_nonnull(strstr(tsv, "\t100\t2\t1\n"));
	char *json = report(&rep, lab_report_json);
	ck_assert_ptr_nonnull(strstr(json, "\"t90_s\": null"));
	ck_assert_ptr_nonnull(strstr(json, "\"violations\": 2"));
	char *html = report(&rep, lab_report_html);
	ck_assert_ptr_nonnull(strstr(html, "<svg"));
	ck_assert_ptr_null(strstr(html, "http://"));
	ck_assert_ptr_null(strstr(html, "<script"));
	char *text = report(&rep, lab_report_text);
	ck_assert_ptr_nonnull(strstr(text, "fixed"));
	free(tsv);
	free(json);
	free(html);
	free(text);
	lab_result_clear(&runs[0]);
	lab_result_clear(&runs[1]);
	lab_plan_free(&p);
}
END_TEST

/* A stand-in test web: serves by writing its ready file (with its pid) and
 * sleeping; --seeds and --expected print one URL. */
static const char fake_testweb[] =
        "#!/bin/sh\n"
        "case \" $* \" in\n"
        "*' --seeds '*) echo http://h0.web.test:1234/; exit 0;;\n"
        "*' --expected '*) printf 'http://h0.web.test:1234/\\t200\\n'; exit 0;;\n"
        "esac\n"
        "while [ $# -gt 0 ]; do\n"
        "  case $1 in --ready-file) rf=$2;; --log) log=$2;; esac; shift\n"
        "done\n"
        ": > \"$log\"\n"
        "printf 'http_port=1234\\ndns_port=1235\\npid=%d\\n' $$ > \"$rf.tmp\"\n"
        "mv \"$rf.tmp\" \"$rf\"\n"
        "exec sleep 100\n";

static void script(const char *name, const char *text, char *path)
{
	write_file(name, text, path);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

static long ready_pid(const char *run_dir)
{
	char path[512], line[64];
	long pid = -1;
	snprintf(path, sizeof path, "%s/ready", run_dir);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "pid=", 4) == 0)
			pid = strtol(line + 4, NULL, 10);
	fclose(f);
	return pid;
}

START_TEST(test_run_timeout)
{
	char tw[256], crawler[256], run_dir[256];
	script("testweb", fake_testweb, tw);
	script("crawler", "#!/bin/sh\nexec sleep 100\n", crawler);
	snprintf(run_dir, sizeof run_dir, "%s/run", tmpdir);
	struct lab_plan p;
	char err[256] = "";
	ck_assert_int_eq(parse(&p, "[entry a]\nhosts = 1\n", err, sizeof err), LAB_OK);
	struct lab_run_ctx ctx = { crawler, tw, run_dir, 1, 5, stderr };
	struct lab_result r;
	uint64_t t0 = monotonic_ms();
	ck_assert_int_eq(lab_run_one(&ctx, &p.entries[0], &r), LAB_OK);
	ck_assert_uint_lt(monotonic_ms() - t0, 15000);
	ck_assert_int_eq(r.crawl_status, -1); /* stopped at its timeout */
	ck_assert_uint_eq(r.requests, 0);
	ck_assert_uint_eq(r.expected, 1);
	long pid = ready_pid(run_dir);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(kill((pid_t)pid, 0), -1); /* the test web is gone */
	ck_assert_int_eq(errno, ESRCH);
	lab_result_clear(&r);
	lab_plan_free(&p);
}
END_TEST

START_TEST(test_run_testweb_dies)
{
	char tw[256], crawler[256], run_dir[256];
	script("testweb", "#!/bin/sh\necho no >&2\nexit 1\n", tw);
	script("crawler", "#!/bin/sh\nexit 0\n", crawler);
	snprintf(run_dir, sizeof run_dir, "%s/run", tmpdir);
	struct lab_plan p;
	char err[256] = "";
	ck_assert_int_eq(parse(&p, "[entry a]\n", err, sizeof err), LAB_OK);
	FILE *errs = tmpfile();
	ck_assert_ptr_nonnull(errs);
	struct lab_run_ctx ctx = { crawler, tw, run_dir, 5, 5, errs };
	struct lab_result r;
	uint64_t t0 = monotonic_ms();
	ck_assert_int_eq(lab_run_one(&ctx, &p.entries[0], &r), LAB_ERR_PROCESS);
	ck_assert_uint_lt(monotonic_ms() - t0, 5000);
	ck_assert_int_eq(r.crawl_status, -1); /* never started */
	ck_assert_int_gt(ftell(errs), 0);     /* the failure is named */
	fclose(errs);
	lab_result_clear(&r);
	lab_plan_free(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lab");
	TCase *tc = tcase_create("plan");
	tcase_add_test(tc, test_plan_defaults);
	tcase_add_loop_test(tc, test_plan_errors, 0, sizeof bad_plans / sizeof bad_plans[0]);
	tcase_add_test(tc, test_plan_relative_testweb);
	tcase_add_test(tc, test_plan_load_missing);
	suite_add_tcase(s, tc);
	tc = tcase_create("judge");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_judge);
	tcase_add_test(tc, test_judge_t90);
	tcase_add_test(tc, test_judge_refuses);
	tcase_add_test(tc, test_reports);
	suite_add_tcase(s, tc);
	tc = tcase_create("run");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_run_timeout);
	tcase_add_test(tc, test_run_testweb_dies);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
