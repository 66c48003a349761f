/*
 * Check suite for politeness/delay_policy.h: both policies' waits, the
 * crawl-delay cap, exponential backoff, Retry-After (seconds and the three
 * HTTP-date formats of RFC 9110) and its cap, and hostile numbers: every
 * delay a server sends saturates at its cap, none wraps.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "politeness/delay_policy.h"
#include "politeness/robots.h"

#define S 1000000ull

START_TEST(fixed_and_ratio)
{
	struct politeness_config c;
	struct visit_outcome o = { VISIT_OK, 100 * S, 1, 0 };

	politeness_config_default(&c);
	ck_assert_int_eq(politeness_config_check(&c), 0);
	ck_assert_uint_eq(delay_policy_host_wait(&c, 0, 5 * S), c.host_delay_us);
	ck_assert_uint_eq(delay_policy_ip_wait(&c, 0, 5 * S), c.ip_delay_us);
	/* counted from the end of the visit */
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 103 * S, 0, 0), 103 * S + c.host_delay_us);

	c.policy = DELAY_POLICY_RATIO;
	c.ratio = 0.25;
	c.min_delay_us = 1 * S;
	c.max_delay_us = 20 * S;
	c.ip_delay_us = 3 * S;
	ck_assert_int_eq(politeness_config_check(&c), 0);
	/* s' = 2 s -> wait 8 s */
	ck_assert_uint_eq(delay_policy_host_wait(&c, 10 * S, 12 * S), 8 * S);
	ck_assert_uint_eq(delay_policy_ip_wait(&c, 10 * S, 12 * S), 8 * S);
	/* clamps */
	ck_assert_uint_eq(delay_policy_host_wait(&c, 10 * S, 10 * S + 1000), 1 * S);
	ck_assert_uint_eq(delay_policy_ip_wait(&c, 10 * S, 10 * S + 1000), 3 * S);
	ck_assert_uint_eq(delay_policy_host_wait(&c, 0, 60 * S), 20 * S);
	o.start_us = 10 * S;
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 12 * S, 0, 0), 20 * S);
	/* a visit that made no request adds no delay */
	o.kind = VISIT_NONE;
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 12 * S, 0, 0), 12 * S);

	c.ratio = 0;
	ck_assert_int_eq(politeness_config_check(&c), -1);
	c.ratio = 0.5;
	c.min_delay_us = 30 * S;
	ck_assert_int_eq(politeness_config_check(&c), -1);
}
END_TEST

START_TEST(crawl_delay_and_backoff)
{
	struct politeness_config c;
	struct visit_outcome o = { VISIT_OK, 0, 1, 0 };

	politeness_config_default(&c);
	c.host_delay_us = 1 * S;
	c.crawl_delay_cap_us = 10 * S;
	c.backoff_base_us = 2 * S;
	c.backoff_max_us = 60 * S;
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 100 * S, 5 * S, 0), 105 * S);
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 100 * S, 500 * S, 0), 110 * S);
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 100 * S, S / 2, 0), 101 * S);
	ck_assert_uint_eq(delay_policy_backoff(&c, 0), 0);
	ck_assert_uint_eq(delay_policy_backoff(&c, 1), 2 * S);
	ck_assert_uint_eq(delay_policy_backoff(&c, 2), 4 * S);
	ck_assert_uint_eq(delay_policy_backoff(&c, 5), 32 * S);
	ck_assert_uint_eq(delay_policy_backoff(&c, 6), 60 * S);
	ck_assert_uint_eq(delay_policy_backoff(&c, 1000), 60 * S);
	o.kind = VISIT_ERROR;
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 100 * S, 0, 3), 108 * S);
	/* crawl-delay larger than the backoff wins */
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 100 * S, 9 * S, 1), 109 * S);
}
END_TEST

START_TEST(retry_after)
{
	struct politeness_config c;
	struct visit_outcome o = { VISIT_RETRY_LATER, 0, 1, 0 };
	uint64_t at = 0;
	const int64_t now_unix = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */

	ck_assert_int_eq(politeness_parse_retry_after("120", 5 * S, now_unix, &at), 0);
	ck_assert_uint_eq(at, 125 * S);
	ck_assert_int_eq(politeness_parse_retry_after(" 0 ", 5 * S, now_unix, &at), 0);
	ck_assert_uint_eq(at, 5 * S);
	ck_assert_int_eq(
	        politeness_parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", 5 * S, now_unix, &at),
	        0);
	ck_assert_uint_eq(at, 65 * S);
	ck_assert_int_eq(politeness_parse_retry_after("Sunday, 06-Nov-94 08:49:47 GMT", 5 * S,
	                                              now_unix, &at),
	                 0);
	ck_assert_uint_eq(at, 15 * S);
	ck_assert_int_eq(
	        politeness_parse_retry_after("Sun Nov  6 08:49:57 1994", 5 * S, now_unix, &at), 0);
	ck_assert_uint_eq(at, 25 * S);
	/* a date in the past means now */
	ck_assert_int_eq(
	        politeness_parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", 5 * S, now_unix, &at),
	        0);
	ck_assert_uint_eq(at, 5 * S);
	ck_assert_int_eq(politeness_parse_retry_after("", 0, 0, &at), -1);
	ck_assert_int_eq(politeness_parse_retry_after("12abc", 0, 0, &at), -1);
	ck_assert_int_eq(politeness_parse_retry_after("-5", 0, 0, &at), -1);
	ck_assert_int_eq(politeness_parse_retry_after("Sun, 31 Feb 1994 08:49:37 GMT", 0, 0, &at),
	                 -1);
	ck_assert_int_eq(politeness_parse_retry_after("Sun, 06 Nov 1994 25:49:37 GMT", 0, 0, &at),
	                 -1);
	ck_assert_int_eq(politeness_parse_retry_after("Sun, 06 Nov 1994 08:49:37 UTC", 0, 0, &at),
	                 -1);
	ck_assert_int_eq(politeness_parse_retry_after("99999999999999999999999", 0, 0, &at), 0);
	ck_assert_int_eq(politeness_parse_retry_after(NULL, 0, 0, &at), -1);

	{
		int64_t t = 0;
		ck_assert_int_eq(politeness_parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT", &t),
		                 0);
		ck_assert_int_eq(t, 0);
		ck_assert_int_eq(politeness_parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT", &t),
		                 0);
		ck_assert_int_eq(t, 951825600);
		ck_assert_int_eq(politeness_parse_http_date("Fri, 29 Feb 2001 12:00:00 GMT", &t),
		                 -1);
	}

	politeness_config_default(&c);
	c.host_delay_us = 1 * S;
	c.retry_after_cap_us = 100 * S;
	o.retry_after_us = 50 * S;
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 10 * S, 0, 0), 50 * S);
	o.retry_after_us = 500 * S;
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 10 * S, 0, 0), 110 * S);
	o.retry_after_us = 5 * S; /* earlier than the policy allows: the policy wins */
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 10 * S, 0, 0), 11 * S);
}
END_TEST

static uint64_t seconds(const char *s, int *rc)
{
	uint64_t us = 12345;
	size_t used = 0;
	*rc = delay_policy_parse_seconds(s, strlen(s), &us, &used);
	return us;
}

/* Every number form a server may send, with the boundaries of 64-bit
 * microseconds: UINT64_MAX us is 18446744073709.551615 s. */
START_TEST(seconds_saturate)
{
	static const struct {
		const char *in;
		int rc;
		uint64_t us;
	} cases[] = {
		{ "0", 0, 0 },
		{ "2", 0, 2 * S },
		{ "+3", 0, 3 * S },
		{ "2.5", 0, 2500000 },
		{ ".5", 0, 500000 },
		{ "0.05", 0, 50000 },
		{ "0.0000001", 0, 1 }, /* a fraction of a microsecond rounds up */
		{ "1e-400", 0, 1 },
		{ "0e999999", 0, 0 },
		{ "1.5e1", 0, 15 * S },
		{ "25E-1", 0, 2500000 },
		{ "2e13", 0, UINT64_MAX }, /* 2e19 us: past 2^64 */
		{ "1e300", 0, UINT64_MAX },
		{ "1e400", 0, UINT64_MAX }, /* past a double too */
		{ "1e99999999999999999999", 0, UINT64_MAX },
		{ "inf", 0, UINT64_MAX },
		{ "Infinity", 0, UINT64_MAX },
		{ "99999999999999999999", 0, UINT64_MAX },
		{ "18446744073709", 0, 18446744073709000000ull }, /* UINT64_MAX / 10^6 */
		{ "18446744073710", 0, UINT64_MAX },              /* UINT64_MAX / 10^6 + 1 */
		{ "18446744073708", 0, 18446744073708000000ull }, /* UINT64_MAX / 10^6 - 1 */
		{ "18446744073709.551615", 0, UINT64_MAX },
		{ "18446744073709.551614", 0, UINT64_MAX - 1 },
		{ "18446744073709.5516141", 0, UINT64_MAX },
		{ "18446744073709.551616", 0, UINT64_MAX },
		{ "000000000000000000000000000000000007", 0, 7 * S },
		{ "0.0000000000000000000000000000000000000000000000001e49", 0, S },
		{ "-1", -1, 0 },
		{ "-0", -1, 0 },
		{ "nan", -1, 0 },
		{ "", -1, 0 },
		{ ".", -1, 0 },
		{ "e5", -1, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc;
		uint64_t us = seconds(cases[i].in, &rc);
		ck_assert_msg(rc == cases[i].rc, "%s: rc %d", cases[i].in, rc);
		if (rc == 0)
			ck_assert_msg(us == cases[i].us, "%s: %llu us", cases[i].in,
			              (unsigned long long)us);
	}
	/* what follows the number is the caller's to judge */
	{
		uint64_t us;
		size_t used;
		ck_assert_int_eq(delay_policy_parse_seconds("10 seconds", 10, &us, &used), 0);
		ck_assert_uint_eq(used, 2);
		ck_assert_uint_eq(us, 10 * S);
		ck_assert_int_eq(delay_policy_parse_seconds("3e", 2, &us, &used), 0);
		ck_assert_uint_eq(used, 1);
	}
	ck_assert_uint_eq(delay_policy_after_seconds(5 * S, 18446744073709ull), UINT64_MAX);
	ck_assert_uint_eq(delay_policy_after_seconds(0, 18446744073709ull),
	                  18446744073709000000ull);
	ck_assert_uint_eq(delay_policy_after_seconds(0, 18446744073710ull), UINT64_MAX);
	ck_assert_uint_eq(delay_policy_after_seconds(7, 2), 7 + 2 * S);
}
END_TEST

/* The host's next visit after a robots.txt Crawl-delay, converted to
 * microseconds as a caller does: a huge value means the cap (5 s here), not
 * the policy's 2 s. */
static uint64_t next_after_crawl_delay(const char *value)
{
	struct politeness_config c;
	struct visit_outcome o = { VISIT_OK, 100 * S, 1, 0 };
	char txt[256];
	struct robots *r = NULL;
	uint64_t cd_us = 0;

	politeness_config_default(&c);
	c.crawl_delay_cap_us = 5 * S;
	snprintf(txt, sizeof txt, "User-agent: *\nCrawl-delay: %s\nDisallow: /x\n", value);
	ck_assert_int_eq(robots_parse(txt, strlen(txt), "FooBot/1.0", &r), ROBOTS_OK);
	double cd = robots_crawl_delay(r);
	ck_assert(cd <= ROBOTS_CRAWL_DELAY_MAX_S);
	if (cd > 0)
		cd_us = (uint64_t)(cd * 1e6);
	robots_destroy(r);
	return delay_policy_next_time(&c, &o, 101 * S, cd_us, 0);
}

START_TEST(crawl_delay_saturates)
{
	static const char *const huge[] = {
		"1e300",
		"2e13",
		"1e400",
		"inf",
		"18446744073710",
		("99999999999999999999999999999999999999999999999999"
		 "99999999999999999999999999999999999999999999999999")
	};
	for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++)
		ck_assert_msg(next_after_crawl_delay(huge[i]) == 106 * S, "Crawl-delay: %s",
		              huge[i]);
	ck_assert_uint_eq(next_after_crawl_delay("3.5"), 101 * S + 3500000);
	ck_assert_uint_eq(next_after_crawl_delay("0.5"), 103 * S); /* below the policy's 2 s */
	ck_assert_uint_eq(next_after_crawl_delay("-4"), 103 * S);  /* no delay: ignored */
	ck_assert_uint_eq(next_after_crawl_delay("nan"), 103 * S);
	ck_assert_uint_eq(next_after_crawl_delay("1e-400"), 103 * S);
}
END_TEST

/* Retry-After values past the clock: the host waits the cap (12 s here),
 * never a wrapped time that the policy's 2 s overrides. */
START_TEST(retry_after_saturates)
{
	static const char *const huge[] = { "99999999999999999999",
		                            "18446744073709",
		                            "18446744073710",
		                            "2e13",
		                            "1e300",
		                            "inf",
		                            "Fri, 31 Dec 9999 23:59:59 GMT" };
	const uint64_t now = 1000000 * S; /* a monotonic clock some days in */
	struct politeness_config c;
	struct visit_outcome o = { VISIT_RETRY_LATER, now, 1, 0 };
	uint64_t at;

	politeness_config_default(&c);
	c.retry_after_cap_us = 12 * S;
	for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
		ck_assert_msg(politeness_parse_retry_after(huge[i], now, 784111777,
		                                           &o.retry_after_us) == 0,
		              "%s", huge[i]);
		ck_assert_msg(delay_policy_next_time(&c, &o, now, 0, 0) == now + 12 * S, "%s",
		              huge[i]);
	}
	ck_assert_int_eq(politeness_parse_retry_after("1.5", now, 0, &at), 0);
	ck_assert_uint_eq(at, now + 1500000);
	ck_assert_int_eq(politeness_parse_retry_after("18446744073709", 0, 0, &at), 0);
	ck_assert_uint_eq(at, 18446744073709000000ull);
	ck_assert_int_eq(politeness_parse_retry_after("nan", now, 0, &at), -1);
	ck_assert_int_eq(politeness_parse_retry_after("-1", now, 0, &at), -1);
	ck_assert_int_eq(politeness_parse_retry_after("-1e300", now, 0, &at), -1);
	ck_assert_int_eq(politeness_parse_retry_after("1e300x", now, 0, &at), -1);
	/* a date against a clock at either end of int64: no signed overflow */
	ck_assert_int_eq(
	        politeness_parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now, INT64_MIN, &at),
	        0);
	ck_assert_uint_eq(at, UINT64_MAX);
	ck_assert_int_eq(
	        politeness_parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now, INT64_MAX, &at),
	        0);
	ck_assert_uint_eq(at, now);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("delay_policy");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, fixed_and_ratio);
	tcase_add_test(tc, crawl_delay_and_backoff);
	tcase_add_test(tc, retry_after);
	tcase_add_test(tc, seconds_saturate);
	tcase_add_test(tc, crawl_delay_saturates);
	tcase_add_test(tc, retry_after_saturates);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
