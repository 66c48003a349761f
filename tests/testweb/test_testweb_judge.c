/*
 * test_testweb_judge.c: Check suite for testweb --judge (judge.h) on a
 * hand-written log: each kind of violation is counted once where it is
 * planted, and a polite crawl's log counts none.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testweb/judge.h"

/* Host hI has robots kind (I + 1) % 10 with seed 1: h0 disallows /private/
 * for '*' (kind 1), h3 answers robots.txt 404 (kind 4), h6 503 (kind 7). */
static struct tw_judge_result judge(const char *log, unsigned delay_ms, int64_t after_us)
{
	struct tw_config cfg;
	struct tw_judge_options o = { "crawler/1.0", delay_ms, 1000, after_us };
	struct tw_judge_result r;
	tw_config_defaults(&cfg);
	cfg.hosts = 10;
	cfg.pages = 20;
	FILE *f = fmemopen((void *)log, strlen(log), "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(tw_judge_log(&cfg, &o, f, &r), 0);
	fclose(f);
	return r;
}

#define L(t, host, path, st) #t "\t1\t" host "\t127.0.1.1\tGET\t" path "\t" #st "\t10\n"

static const char polite[] = L(1000000, "h0.web.test", "/robots.txt", 200)
        L(1060000, "h0.web.test", "/", 200) L(1000500, "h1.web.test", "/robots.txt", 200)
                L(1120000, "h0.web.test", "/s1/p1.html?q=1", 200)
                        L(1200000, "h0.web.test", "/s1/p1.html?q=2", 200)
                                L(1250000, "h0.web.test", "/s2/p2.html?q=1", 200)
                                        L(1300000, "h0.web.test", "/s2/p2.html?q=2", 404)
                                                L(1100000, "h1.web.test", "/s3/p3.html", 200)
                                                        L(1400000, "nx1.web.test", "/",
                                                          404) "garbage line\n";

START_TEST(polite_log)
{
	struct tw_judge_result r = judge(polite, 50, 1250000);
	ck_assert_uint_eq(r.requests, 9);
	ck_assert_uint_eq(r.outside, 1);
	ck_assert_uint_eq(r.hosts, 2);
	ck_assert_uint_eq(r.robots_requests, 2);
	ck_assert_uint_eq(r.robots_repeats, 0);
	ck_assert_uint_eq(r.robots_violations, 0);
	ck_assert_uint_eq(r.politeness_violations, 0);
	ck_assert_uint_eq(r.near_dup_pairs, 1); /* p2's second variant was a 404 */
	ck_assert_int_eq(r.first_us, 1000000);
	ck_assert_int_eq(r.last_us, 1400000);
	ck_assert_int_eq(r.first_after_us, 1250000);
}
END_TEST

static const char rude[] = L(1000000, "h1.web.test", "/", 200) /* before robots.txt */
        L(2000000, "h0.web.test", "/robots.txt", 200)
                L(2100000, "h0.web.test", "/private/p7.html", 200) /* disallowed */
        L(2110000, "h0.web.test", "/s1/p1.html", 200)              /* 10 ms after */
        L(2200000, "h0.web.test", "/robots.txt", 200)              /* again */
        L(3000000, "h6.web.test", "/robots.txt", 503)
                L(3100000, "h6.web.test", "/", 200); /* 5xx: all disallowed */

START_TEST(rude_log)
{
	struct tw_judge_result r = judge(rude, 50, 9000000);
	ck_assert_uint_eq(r.robots_violations, 3);
	ck_assert_uint_eq(r.politeness_violations, 1);
	ck_assert_uint_eq(r.robots_repeats, 1);
	ck_assert_uint_eq(r.hosts_robots_repeated, 1);
	ck_assert_int_eq(r.first_after_us, -1);
	/* no delay given: no politeness judged */
	ck_assert_uint_eq(judge(rude, 0, 0).politeness_violations, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("testweb_judge");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, polite_log);
	tcase_add_test(tc, rude_log);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
