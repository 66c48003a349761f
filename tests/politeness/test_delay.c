/*
 * Check suite for politeness/delay_policy.h: both policies' waits, the
 * crawl-delay cap, exponential backoff, Retry-After (seconds and the three
 * HTTP-date formats of RFC 9110) and its cap.
 */
#include <check.h>

#include "politeness/delay_policy.h"

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

int main(void)
{
	Suite *s = suite_create("delay_policy");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, fixed_and_ratio);
	tcase_add_test(tc, crawl_delay_and_backoff);
	tcase_add_test(tc, retry_after);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
