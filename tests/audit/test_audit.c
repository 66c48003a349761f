/*
 * test_audit.c: Check suite for crawler/lab/audit.h on hand-written crawl logs
 * whose gaps are known: exact minimum and median, the tolerance edge,
 * overlaps, robots.txt lines, escaped fields, malformed lines (counted,
 * skipped, the audit goes on), an empty log, lines out of order, the
 * histogram beyond the exact list, the IP rule, and a whole output folder.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "crawler/lab/audit.h"

#define T0 1795600000000LL /* 2026-11-26T07:06:40Z in unix ms */

/* One crawl.log line ending at end_ms (from T0) after dur ms. */
static char *line(char *buf, size_t cap, int64_t end_ms, int64_t dur, const char *url,
                  const char *ip, const char *flags)
{
	int64_t t = T0 + end_ms;
	time_t secs = (time_t)(t / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	snprintf(buf, cap,
	         "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\t200\t1000\t%s\t-\t1\ttext/"
	         "html\t%lld\t%s\t-\t-\t%s",
	         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	         (int)(t % 1000), url, (long long)dur, ip, flags);
	return buf;
}

static struct audit *new_audit(int64_t host_delay, int64_t ip_delay, int ip_pol, int ratio)
{
	struct audit_config c;
	audit_config_default(&c);
	c.host_delay_ms = host_delay;
	c.ip_delay_ms = ip_delay;
	c.ip_politeness = ip_pol;
	c.policy = ratio ? DELAY_POLICY_RATIO : DELAY_POLICY_FIXED;
	struct audit *a = audit_create(&c);
	ck_assert_ptr_nonnull(a);
	return a;
}

static uint64_t lineno;

static void feed(struct audit *a, int64_t end, int64_t dur, const char *url, const char *ip,
                 const char *flags)
{
	char buf[4096];
	line(buf, sizeof buf, end, dur, url, ip, flags);
	ck_assert_int_eq(audit_feed(a, buf, strlen(buf), ++lineno, NULL), AUDIT_OK);
}

static void host(struct audit *a, const char *name, struct audit_entity_view *v)
{
	long i = audit_host_find(a, name);
	ck_assert_msg(i >= 0, "host %s not found", name);
	audit_host_get(a, (size_t)i, v);
}

/* robots [0,100], / [350,400], /b [600,650]: gaps 250 and 200. */
static void three_requests(struct audit *a)
{
	feed(a, 100, 100, "http://a.test:8080/robots.txt", "10.0.0.1", "robots");
	feed(a, 400, 50, "http://a.test:8080/", "10.0.0.1", "-");
	feed(a, 650, 50, "http://a.test:8080/b", "10.0.0.1", "-");
}

START_TEST(test_known_gaps)
{
	struct audit *a = new_audit(200, 0, 0, 0);
	three_requests(a);
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "a.test:8080", &v);
	ck_assert_str_eq(v.origin, "http://a.test:8080");
	ck_assert_str_eq(v.ip, "10.0.0.1");
	ck_assert_uint_eq(v.requests, 3);
	ck_assert_uint_eq(v.robots, 1);
	ck_assert_uint_eq(v.gaps, 2);
	ck_assert_int_eq(v.min_gap_ms, 200);
	ck_assert(fabs(v.median_gap_ms - 225) < 1e-9);
	ck_assert_uint_eq(v.violations, 0);
	ck_assert(fabs(v.busy_share - 200.0 / 650) < 1e-9);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.requests, 3);
	ck_assert_uint_eq(s.robots, 1);
	ck_assert_uint_eq(s.pages, 2);
	ck_assert_uint_eq(s.violations, 0);
	ck_assert_int_eq(s.end_ms - s.start_ms, 650);
	audit_destroy(a);

	a = new_audit(300, 0, 0, 0); /* both gaps are now too short */
	three_requests(a);
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.violations, 2);
	ck_assert_uint_eq(s.host_violations, 2);
	audit_destroy(a);
}
END_TEST

START_TEST(test_tolerance_edge)
{
	/* delay 200: a gap of 198 ms is within the 2 ms tolerance, 197 is not */
	struct audit *a = new_audit(200, 0, 0, 0);
	feed(a, 10, 10, "http://a.test/1", "10.0.0.1", "-");
	feed(a, 218, 10, "http://a.test/2", "10.0.0.1", "-"); /* gap 198 */
	feed(a, 425, 10, "http://a.test/3", "10.0.0.1", "-"); /* gap 197 */
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "a.test", &v);
	ck_assert_int_eq(v.min_gap_ms, 197);
	ck_assert_uint_eq(v.violations, 1);
	FILE *f = tmpfile();
	ck_assert_int_eq(audit_report_json(a, f), 0);
	rewind(f);
	char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\"gap_ms\": 197, \"required_ms\": 200"));
	ck_assert_ptr_nonnull(strstr(buf, "\"line_prev\": 2, \"line_next\": 3"));
	audit_destroy(a);
}
END_TEST

START_TEST(test_overlap)
{
	/* /2 runs [50,150] while /1 runs [0,100]: a 50 ms overlap; then /3
	 * starts 20 ms after the latest end (150), not after /2's start. */
	struct audit *a = new_audit(200, 0, 0, 1); /* ratio: only overlaps judged */
	feed(a, 100, 100, "http://a.test/1", "10.0.0.1", "-");
	feed(a, 150, 100, "http://a.test/2", "10.0.0.1", "-");
	feed(a, 180, 10, "http://a.test/3", "10.0.0.1", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "a.test", &v);
	ck_assert_int_eq(v.min_gap_ms, -50);
	ck_assert_uint_eq(v.overlaps, 1);
	ck_assert_uint_eq(v.violations, 1); /* the overlap, not the 20 ms gap */
	ck_assert_int_eq(v.required_gap_ms, 0);
	ck_assert(fabs(v.busy_share - 160.0 / 180) < 1e-9); /* union 0-150 + 170-180 */
	audit_destroy(a);
}
END_TEST

START_TEST(test_escaped_fields)
{
	struct audit *a = new_audit(100, 0, 0, 0);
	/* escaped tab and backslash in the URL's path, \x01 in via */
	const char *l1 =
	        "2026-11-26T07:06:40.100Z\t200\t5\thttp://E.test/a\\tb\\\\c\thttp://x/\\x01"
	        "\t1\ttext/html\t100\t10.0.0.2\t-\t-\t-";
	const char *l2 = "2026-11-26T07:06:40.400Z\t404\t5\thttp://e.test/q?x=\\x7f\t-\t1\t-\t100"
	                 "\t10.0.0.2\tnot\\tfound\t-\tnear-dup,revisit";
	const char *bad = "2026-11-26T07:06:40.900Z\t200\t5\thttp://e.test/\\q\t-\t1\t-\t1"
	                  "\t10.0.0.2\t-\t-\t-";
	FILE *errs = tmpfile();
	ck_assert_int_eq(audit_feed(a, l1, strlen(l1), 1, errs), AUDIT_OK);
	ck_assert_int_eq(audit_feed(a, l2, strlen(l2), 2, errs), AUDIT_OK);
	ck_assert_int_eq(audit_feed(a, bad, strlen(bad), 3, errs), AUDIT_OK);
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "e.test", &v);
	ck_assert_uint_eq(v.requests, 2);
	ck_assert_int_eq(v.min_gap_ms, 200);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.malformed, 1);
	ck_assert_uint_eq(s.lines, 3);
	rewind(errs);
	char msg[512] = "";
	ck_assert_ptr_nonnull(fgets(msg, sizeof msg, errs));
	ck_assert_ptr_nonnull(strstr(msg, "crawl.log:3: bad escape in url"));
	fclose(errs);
	audit_destroy(a);
}
END_TEST

START_TEST(test_malformed_goes_on)
{
	struct audit *a = new_audit(200, 0, 0, 0);
	static const char *const bad[] = {
		"",
		"garbage",
		"2026-11-26T07:06:40.100Z\t200\t5\thttp://a.test/\t-\t1\t-\t100\t10.0.0.1\t-\t-",
		"2026-11-26 07:06:40.100Z\t200\t5\thttp://a.test/\t-\t1\t-\t100\t10.0.0.1\t-\t-\t-",
		"2026-11-26T07:06:40.100Z\t200\t-5\thttp://a.test/"
		"\t-\t1\t-\t100\t10.0.0.1\t-\t-\t-",
		"2026-11-26T07:06:40.100Z\t200\t5\ta.test/x\t-\t1\t-\t100\t10.0.0.1\t-\t-\t-",
		"2026-11-26T07:06:40.100Z\t200\t5\thttp://a.test:8x/"
		"\t-\t1\t-\t100\t10.0.0.1\t-\t-\t-",
		"2026-11-26T07:06:40.100Z\t200\t5\thttp://a.test/"
		"\t-\t1\t-\tlong\t10.0.0.1\t-\t-\t-",
	};
	FILE *errs = tmpfile();
	feed(a, 100, 10, "http://a.test/1", "10.0.0.1", "-");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_int_eq(audit_feed(a, bad[i], strlen(bad[i]), 100 + i, errs), AUDIT_OK);
	feed(a, 400, 10, "http://a.test/2", "10.0.0.1", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.malformed, sizeof bad / sizeof bad[0]);
	ck_assert_uint_eq(s.requests, 2);
	struct audit_entity_view v;
	host(a, "a.test", &v);
	ck_assert_int_eq(v.min_gap_ms, 290);
	rewind(errs);
	char msg[512];
	int lines = 0;
	while (fgets(msg, sizeof msg, errs)) {
		ck_assert_ptr_nonnull(strstr(msg, "line skipped"));
		lines++;
	}
	ck_assert_int_eq(lines, sizeof bad / sizeof bad[0]);
	fclose(errs);
	audit_destroy(a);
}
END_TEST

static void reports_work(struct audit *a)
{
	int (*fn[3])(const struct audit *, FILE *) = { audit_report_text, audit_report_json,
		                                       audit_report_html };
	for (int i = 0; i < 3; i++) {
		FILE *f = tmpfile();
		ck_assert_int_eq(fn[i](a, f), 0);
		ck_assert(ftell(f) > 0);
		fclose(f);
	}
}

START_TEST(test_empty_log)
{
	struct audit *a = new_audit(200, 0, 0, 0);
	const char *hdr = "#timestamp\tstatus\tbytes\turl\tvia\tdepth\tcontent_type\tduration_ms"
	                  "\tip\terror\tredirect\tflags";
	ck_assert_int_eq(audit_feed(a, hdr, strlen(hdr), 1, NULL), AUDIT_OK);
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.lines, 0);
	ck_assert_uint_eq(s.requests, 0);
	ck_assert_uint_eq(audit_host_count(a), 0);
	reports_work(a);
	audit_destroy(a);
}
END_TEST

START_TEST(test_out_of_order)
{
	/* written 2, 1, 4, 3 (parse threads finish out of order): judged in
	 * start order, nothing late, gaps 100 each */
	struct audit *a = new_audit(100, 0, 0, 0);
	feed(a, 230, 10, "http://a.test/2", "10.0.0.1", "-");
	feed(a, 120, 10, "http://a.test/1", "10.0.0.1", "-");
	feed(a, 450, 10, "http://a.test/4", "10.0.0.1", "-");
	feed(a, 340, 10, "http://a.test/3", "10.0.0.1", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "a.test", &v);
	ck_assert_int_eq(v.min_gap_ms, 100);
	ck_assert(fabs(v.median_gap_ms - 100) < 1e-9);
	ck_assert_uint_eq(v.late, 0);
	ck_assert_uint_eq(v.violations, 0);
	audit_destroy(a);
}
END_TEST

START_TEST(test_late)
{
	/* 12 requests 100 ms apart, then one that ended before the 3rd: the
	 * 8-request window has judged the first four, so it is late (counted,
	 * its gap lost); one older than the whole window but newer than what
	 * was judged is judged in place */
	struct audit *a = new_audit(50, 0, 0, 0);
	for (int i = 1; i <= 12; i++)
		feed(a, 100 * i + 10, 10, "http://a.test/p", "10.0.0.1", "-");
	feed(a, 250, 10, "http://a.test/late", "10.0.0.1", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "a.test", &v);
	ck_assert_uint_eq(v.requests, 13);
	ck_assert_uint_eq(v.late, 1);
	ck_assert_uint_eq(v.gaps, 11);
	ck_assert_int_eq(v.min_gap_ms, 90);
	ck_assert_uint_eq(v.violations, 0);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.late, 1);
	audit_destroy(a);

	a = new_audit(50, 0, 0, 0);
	for (int i = 1; i <= 12; i++)
		feed(a, 100 * i + 10, 10, "http://a.test/p", "10.0.0.1", "-");
	/* 450-460: after #4 (judged), before #5 (the window's oldest) */
	feed(a, 460, 10, "http://a.test/mid", "10.0.0.1", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	host(a, "a.test", &v);
	ck_assert_uint_eq(v.late, 0);
	ck_assert_uint_eq(v.gaps, 12);
	ck_assert_int_eq(v.min_gap_ms, 40); /* 410 -> 450 and 460 -> 500 */
	ck_assert_uint_eq(v.violations, 2);
	audit_destroy(a);
}
END_TEST

START_TEST(test_histogram_median)
{
	/* 3001 requests: 3000 gaps, 1000 of 300 ms then 2000 of 1000 ms: the
	 * median (1000) comes from the histogram, within 1.6%; min is exact */
	struct audit *a = new_audit(100, 0, 0, 0);
	int64_t t = 10;
	feed(a, t, 10, "http://a.test/0", "10.0.0.1", "-");
	for (int i = 1; i <= 3000; i++) {
		t += (i <= 1000 ? 300 : 1000) + 10;
		feed(a, t, 10, "http://a.test/p", "10.0.0.1", "-");
	}
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "a.test", &v);
	ck_assert_uint_eq(v.gaps, 3000);
	ck_assert_int_eq(v.min_gap_ms, 300);
	ck_assert_msg(fabs(v.median_gap_ms - 1000) <= 16, "median %f", v.median_gap_ms);
	audit_destroy(a);
}
END_TEST

START_TEST(test_ip_rule)
{
	/* a.test and b.test share 10.0.0.1; IP delay 100. b/1 starts 50 ms after
	 * a/1 ends: an IP violation. a/2 follows b/1 by 150: fine. Same-host
	 * pairs are the host rule's (delay 100: a/1 -> a/2 is 200 apart). */
	struct audit *a = new_audit(100, 100, 1, 0);
	feed(a, 100, 100, "http://a.test/1", "10.0.0.1", "-");
	feed(a, 160, 10, "http://b.test/1", "10.0.0.1", "-");
	feed(a, 320, 10, "http://a.test/2", "10.0.0.1", "-");
	feed(a, 320, 10, "http://c.test/1", "10.0.0.9", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.ip_violations, 1);
	ck_assert_uint_eq(s.host_violations, 0);
	ck_assert_uint_eq(s.ips, 2);
	ck_assert_uint_eq(s.hosts, 3);
	struct audit_entity_view v;
	audit_ip_get(a, 0, &v); /* worst first */
	ck_assert_str_eq(v.name, "10.0.0.1");
	ck_assert_uint_eq(v.hosts, 2);
	ck_assert_uint_eq(v.requests, 3);
	ck_assert_int_eq(v.min_gap_ms, 50);
	ck_assert_uint_eq(v.violations, 1);
	audit_destroy(a);
}
END_TEST

START_TEST(test_host_key)
{
	/* default port and case fold to one host; another port is another host */
	struct audit *a = new_audit(100, 0, 0, 0);
	feed(a, 10, 10, "http://A.Test/", "10.0.0.1", "-");
	feed(a, 200, 10, "http://a.test:80/x", "10.0.0.1", "-");
	feed(a, 200, 10, "http://a.test:81/x", "10.0.0.1", "-");
	feed(a, 250, 10, "https://user@a.test/y", "-", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	ck_assert_uint_eq(audit_host_count(a), 3);
	struct audit_entity_view v;
	host(a, "a.test", &v);
	ck_assert_uint_eq(v.requests, 2);
	ck_assert_str_eq(v.origin, "http://a.test:80");
	host(a, "a.test:81", &v);
	ck_assert_str_eq(v.origin, "http://a.test:81");
	long i = -1;
	for (size_t k = 0; k < audit_host_count(a) && i < 0; k++) {
		audit_host_get(a, k, &v);
		if (strcmp(v.origin, "https://a.test:443") == 0)
			i = (long)k;
	}
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(v.name, "a.test");
	ck_assert_str_eq(v.ip, "-"); /* no IP: counted for the host only */
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.ips, 1);
	audit_destroy(a);
}
END_TEST

START_TEST(test_timeline)
{
	/* a: requests [0,1000) and [2000,2999): busy ~2 s, waiting 1 s between.
	 * b: one request [1000,1500), idle before and after. 1 s bins over 3 s
	 * (T0 is a whole second): busy 1, 0.5 (b), 0.999; waiting 0, 1 (a), 0;
	 * idle the rest of the 2 hosts */
	struct audit *a = new_audit(100, 0, 0, 0);
	feed(a, 1000, 1000, "http://a.test/1", "10.0.0.1", "-");
	feed(a, 1500, 500, "http://b.test/1", "10.0.0.2", "-");
	feed(a, 2999, 999, "http://a.test/2", "10.0.0.1", "-");
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	FILE *f = tmpfile();
	ck_assert_int_eq(audit_report_json(a, f), 0);
	rewind(f);
	static char out[1 << 16];
	size_t k = fread(out, 1, sizeof out - 1, f);
	out[k] = '\0';
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "\"interval_s\": 1, \"bins\": 3"));
	ck_assert_ptr_nonnull(strstr(out, "\"pages_per_s\": [0.000, 2.000, 1.000]"));
	ck_assert_ptr_nonnull(strstr(out, "\"hosts_busy\": [1.000, 0.500, 0.999]"));
	ck_assert_ptr_nonnull(strstr(out, "\"hosts_waiting\": [0.000, 1.000, 0.000]"));
	ck_assert_ptr_nonnull(strstr(out, "\"hosts_idle\": [1.000, 0.500, 1.001]"));
	struct audit_summary s;
	audit_summary_get(a, &s);
	/* without pass 2, interpolated in its second: the 2nd page is the
	 * last of the two ending in second 1 */
	ck_assert(fabs(s.time_to_pct_s[0] - 2.0) < 1e-9);
	audit_destroy(a);
}
END_TEST

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_load_dir)
{
	char dir[] = "/tmp/audit-unit-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char log[8192] = "#timestamp\tstatus\tbytes\turl\tvia\tdepth\tcontent_type\tduration_ms"
	                 "\tip\terror\tredirect\tflags\n";
	char buf[1024];
	size_t n = strlen(log);
	static const int64_t ends[] = { 100, 400, 500, 700 };
	for (int i = 0; i < 4; i++) {
		line(buf, sizeof buf, ends[i], 50,
		     i ? "http://a.test/p" : "http://a.test/robots.txt", "10.0.0.1",
		     i ? "-" : "robots");
		n += (size_t)snprintf(log + n, sizeof log - n, "%s\n", buf);
	}
	snprintf(log + n, sizeof log - n, "2026-11-26T07:06:41"); /* cut last line */
	write_file(dir, "crawl.log", log);
	write_file(dir, "crawl.conf",
	           "# saved\n[crawl]\nhost_delay_ms = 5\n[politeness]\n"
	           "policy = fixed\nhost_delay_ms = 250\nip_delay_ms = 7\n"
	           "ip_politeness = false\n");
	write_file(dir, "stats.json",
	           "{\n  \"pages\": 3,\n  \"requests\": 4,\n  \"robots_fetches\": 1,"
	           "\n  \"elapsed_s\": 0.8,\n  \"hosts\": {\"pages\": 9}\n}\n");
	struct audit *a = NULL;
	FILE *errs = tmpfile();
	ck_assert_int_eq(audit_load_dir(dir, &a, errs), AUDIT_OK);
	const struct audit_config *c = audit_config_get(a);
	ck_assert_int_eq(c->host_delay_ms, 250);
	ck_assert_int_eq(c->ip_delay_ms, 7);
	ck_assert_int_eq(c->ip_politeness, 0);
	ck_assert_int_eq(c->from_file, 1);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.requests, 4);
	ck_assert_uint_eq(s.malformed, 1); /* the cut line */
	ck_assert_int_eq(s.have_stats, 1);
	ck_assert_uint_eq(s.stats_pages, 3);
	ck_assert_uint_eq(s.stats_requests, 4);
	/* gaps 250, 50, 150 against 250: two violations, with URLs from pass 2 */
	ck_assert_uint_eq(s.violations, 2);
	/* pages end at 400, 500, 700, the crawl starts at 50: the 2nd and 3rd
	 * pages, exact to the ms from pass 2 */
	ck_assert(fabs(s.time_to_pct_s[0] - 0.45) < 1e-9);
	ck_assert(fabs(s.time_to_pct_s[1] - 0.65) < 1e-9);
	ck_assert(fabs(s.time_to_pct_s[2] - 0.65) < 1e-9);
	reports_work(a);
	FILE *f = tmpfile();
	ck_assert_int_eq(audit_report_json(a, f), 0);
	rewind(f);
	static char out[1 << 16];
	size_t k = fread(out, 1, sizeof out - 1, f);
	out[k] = '\0';
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "\"url_prev\": \"http://a.test/p\""));
	ck_assert_ptr_nonnull(strstr(out, "\"violations\": 2"));
	audit_destroy(a);
	fclose(errs);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The adaptive policy's floor is min_delay (its waits are not in the log):
 * read from crawl.conf, it is the host rule with one URL per visit. */
START_TEST(test_adaptive_rule)
{
	char dir[] = "/tmp/audit-unit-XXXXXX";
	char path[600];
	char err[256];
	struct audit_config c;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	write_file(dir, "crawl.conf",
	           "[politeness]\npolicy = adaptive\nhost_delay_ms = 2000\nmin_delay_ms = 200\n"
	           "ip_politeness = false\n");
	snprintf(path, sizeof path, "%s/crawl.conf", dir);
	audit_config_default(&c);
	ck_assert_int_eq(audit_config_load(&c, path, err, sizeof err), AUDIT_OK);
	ck_assert_int_eq(c.policy, DELAY_POLICY_ADAPTIVE);
	ck_assert_int_eq(c.min_delay_ms, 200);
	struct audit *a = audit_create(&c);
	ck_assert_ptr_nonnull(a);
	three_requests(a); /* gaps 250 and 200 */
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_entity_view v;
	host(a, "a.test:8080", &v);
	ck_assert_int_eq(v.required_gap_ms, 200);
	ck_assert_uint_eq(v.violations, 0);
	audit_destroy(a);
	write_file(dir, "crawl.conf", "[politeness]\npolicy = smart\n");
	ck_assert_int_eq(audit_config_load(&c, path, err, sizeof err), AUDIT_ERR_CONF);
	unlink(path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* wait_ms, the 13th field when present: each request's gap must reach it
 * (old 12-field lines mix in and are judged by the policy rule alone). */
START_TEST(test_wait_column)
{
	struct audit *a = new_audit(100, 0, 0, 0);
	char buf[4096], full[4200];
	/* [0,50]; [150,200] owed 100 (gap 100, ok); [260,300] owed 500 (gap 60:
	 * a violation, required 500); an old line [900,950] (gap 600, ok);
	 * [1000,1010] with a malformed wait */
	static const struct {
		int64_t end, dur;
		const char *wait; /* NULL: a 12-field line */
	} reqs[] = { { 50, 50, "0" },
		     { 200, 50, "100" },
		     { 300, 40, "500" },
		     { 950, 50, NULL },
		     { 1010, 10, "-5" } };
	for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
		line(buf, sizeof buf, reqs[i].end, reqs[i].dur, "http://a.test/p", "10.0.0.1", "-");
		if (reqs[i].wait)
			snprintf(full, sizeof full, "%s\t%s", buf, reqs[i].wait);
		else
			snprintf(full, sizeof full, "%s", buf);
		ck_assert_int_eq(audit_feed(a, full, strlen(full), ++lineno, NULL), AUDIT_OK);
	}
	snprintf(full, sizeof full, "%s\t7\textra", buf);
	ck_assert_int_eq(audit_feed(a, full, strlen(full), ++lineno, NULL), AUDIT_OK);
	ck_assert_int_eq(audit_finish(a), AUDIT_OK);
	struct audit_summary s;
	audit_summary_get(a, &s);
	ck_assert_uint_eq(s.requests, 4);
	ck_assert_uint_eq(s.malformed, 2); /* the bad wait, the 14-field line */
	ck_assert_uint_eq(s.wait_lines, 3);
	ck_assert_uint_eq(s.violations, 1);
	FILE *f = tmpfile();
	ck_assert_int_eq(audit_report_json(a, f), 0);
	rewind(f);
	static char out[1 << 16];
	size_t n = fread(out, 1, sizeof out - 1, f);
	out[n] = '\0';
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "\"gap_ms\": 60, \"required_ms\": 500"));
	ck_assert_ptr_nonnull(strstr(out, "\"wait_lines\": 3"));
	audit_destroy(a);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("audit");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_known_gaps);
	tcase_add_test(tc, test_tolerance_edge);
	tcase_add_test(tc, test_overlap);
	tcase_add_test(tc, test_escaped_fields);
	tcase_add_test(tc, test_malformed_goes_on);
	tcase_add_test(tc, test_empty_log);
	tcase_add_test(tc, test_out_of_order);
	tcase_add_test(tc, test_late);
	tcase_add_test(tc, test_histogram_median);
	tcase_add_test(tc, test_ip_rule);
	tcase_add_test(tc, test_host_key);
	tcase_add_test(tc, test_timeline);
	tcase_add_test(tc, test_load_dir);
	tcase_add_test(tc, test_adaptive_rule);
	tcase_add_test(tc, test_wait_column);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
