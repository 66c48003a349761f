/*
 * Check suite for politeness/delay_policy.h: the three policies' waits
 * (the adaptive one's estimate followed visit by visit: smoothing, sharp
 * slowdowns, 429/503 back-off and its gradual recovery), the
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
	/* a cap below the policy's own wait bounds the server's ask, and does
	 * not cut the wait: a Crawl-delay of 4 s stays 4 s */
	c.retry_after_cap_us = 2 * S;
	o.retry_after_us = 500 * S;
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 10 * S, 4 * S, 0), 14 * S);
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 10 * S, 0, 0), 12 * S);
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

#define MS 1000ull

static void adaptive_config(struct politeness_config *c)
{
	politeness_config_default(c);
	c->policy = DELAY_POLICY_ADAPTIVE;
	c->adaptive_factor = 5;
	c->adaptive_smoothing = 0.5;
	c->adaptive_slowdown = 3;
	c->min_delay_us = 100 * MS;
	c->max_delay_us = 10 * S;
	c->ip_delay_us = 300 * MS;
}

/* One visit of the given kind and requests, from 0 to end_us. */
static struct delay_estimate visit(const struct politeness_config *c, struct delay_estimate e,
                                   enum visit_kind kind, uint32_t requests, uint64_t end_us)
{
	struct visit_outcome o = { kind, 0, requests, 0 };

	return delay_estimate_update(c, e, &o, end_us);
}

START_TEST(adaptive_follows_response_time)
{
	struct politeness_config c;
	struct delay_estimate e = { 0, 0 };
	struct visit_outcome o = { VISIT_OK, 10 * S, 1, 0 };

	adaptive_config(&c);
	ck_assert_int_eq(politeness_config_check(&c), 0);
	/* without an estimate: the factor on the visit's own time (Heritrix), clamped */
	ck_assert_uint_eq(delay_policy_host_wait(&c, 0, 200 * MS), 1 * S);
	ck_assert_uint_eq(delay_policy_host_wait(&c, 0, 1 * MS), 100 * MS);
	ck_assert_uint_eq(delay_policy_host_wait(&c, 0, 100 * S), 10 * S);
	ck_assert_uint_eq(delay_policy_ip_wait(&c, 0, 5 * S), 300 * MS);
	ck_assert_uint_eq(delay_policy_next_time(&c, &o, 10 * S + 200 * MS, 0, 0), 11200 * MS);
	/* the first sample is the estimate; then an EWMA with weight 1/2 */
	e = visit(&c, e, VISIT_OK, 1, 200 * MS);
	ck_assert_uint_eq(e.ewma_us, 200 * MS);
	ck_assert_uint_eq(e.level, 0);
	ck_assert_uint_eq(delay_estimate_wait(&c, &e), 1 * S);
	e = visit(&c, e, VISIT_OK, 1, 100 * MS);
	ck_assert_uint_eq(e.ewma_us, 150 * MS);
	ck_assert_uint_eq(delay_estimate_wait(&c, &e), 750 * MS);
	/* a sample is the visit's time over its requests */
	e = visit(&c, e, VISIT_OK, 2, 400 * MS);
	ck_assert_uint_eq(e.ewma_us, 175 * MS);
	ck_assert_uint_eq(e.level, 0);
	/* a sharp slowdown (600 > 3 * 175 ms) doubles the wait on top of the EWMA */
	e = visit(&c, e, VISIT_OK, 1, 600 * MS);
	ck_assert_uint_eq(e.ewma_us, 387500);
	ck_assert_uint_eq(e.level, 1);
	ck_assert_uint_eq(delay_estimate_wait(&c, &e), 3875 * MS);
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, 100 * S, 0, 0, &e), 103875 * MS);
	/* an ordinary visit recovers one level */
	e = visit(&c, e, VISIT_OK, 1, 387500);
	ck_assert_uint_eq(e.ewma_us, 387500);
	ck_assert_uint_eq(e.level, 0);
	ck_assert_uint_eq(delay_estimate_wait(&c, &e), 1937500);
	/* a visit without requests changes nothing */
	e = visit(&c, e, VISIT_NONE, 0, 50 * S);
	ck_assert_uint_eq(e.ewma_us, 387500);
	ck_assert_uint_eq(e.level, 0);
	/* Smoothing 1: the last fetch alone (Heritrix's delay factor). */
	c.adaptive_smoothing = 1;
	ck_assert_uint_eq(visit(&c, e, VISIT_OK, 1, 100 * MS).ewma_us, 100 * MS);
}
END_TEST

START_TEST(adaptive_backs_off_and_recovers)
{
	struct politeness_config c;
	struct delay_estimate e = { 387500, 0 };
	struct visit_outcome o = { VISIT_RETRY_LATER, 0, 1, 130 * S };
	static const uint64_t waits[] = { 1937500, 3875 * MS, 7750 * MS, 10 * S };

	adaptive_config(&c);
	/* each 429/503 or error doubles the wait, up to max_delay, and adds no sample */
	for (uint32_t k = 1; k <= 3; k++) {
		e = visit(&c, e, k == 2 ? VISIT_ERROR : VISIT_RETRY_LATER, 1, 1 * MS);
		ck_assert_uint_eq(e.level, k);
		ck_assert_uint_eq(e.ewma_us, 387500);
		ck_assert_uint_eq(delay_estimate_wait(&c, &e), waits[k]);
	}
	/* at the cap the level stops rising, so recovery starts at once */
	e = visit(&c, e, VISIT_RETRY_LATER, 1, 1 * MS);
	e = visit(&c, e, VISIT_ERROR, 1, 1 * MS);
	ck_assert_uint_eq(e.level, 3);
	for (uint32_t k = 3; k > 0; k--) {
		e = visit(&c, e, VISIT_OK, 1, 387500);
		ck_assert_uint_eq(e.level, k - 1);
		ck_assert_uint_eq(delay_estimate_wait(&c, &e), waits[k - 1]);
	}
	/* Retry-After beyond the wait still decides; a Crawl-delay above it too */
	e = delay_estimate_update(&c, e, &o, 100 * S);
	ck_assert_uint_eq(e.level, 1);
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, 100 * S, 0, 0, &e), 130 * S);
	o.kind = VISIT_OK;
	o.retry_after_us = 0;
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, 100 * S, 20 * S, 0, &e), 120 * S);
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, 100 * S, 0, 0, &e), 103875 * MS);
	/* a Retry-After capped below the adaptive wait does not shorten it */
	c.retry_after_cap_us = 50 * MS;
	o.kind = VISIT_RETRY_LATER;
	o.retry_after_us = 130 * S;
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, 100 * S, 0, 0, &e), 103875 * MS);
	o.retry_after_us = 0;
	/* error back-off above the adaptive wait */
	o.kind = VISIT_ERROR;
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, 100 * S, 0, 2, &e),
	                  100 * S + 2 * c.backoff_base_us);
	/* other policies ignore the estimate */
	c.policy = DELAY_POLICY_FIXED;
	o.kind = VISIT_OK;
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, 100 * S, 0, 0, &e),
	                  100 * S + c.host_delay_us);
}
END_TEST

START_TEST(adaptive_saturates)
{
	struct politeness_config c;
	struct delay_estimate e = { UINT64_MAX, 0 };
	struct visit_outcome o = { VISIT_OK, 0, 1, 0 };

	adaptive_config(&c);
	c.adaptive_factor = 1e6;
	c.max_delay_us = UINT64_MAX;
	ck_assert_uint_eq(delay_estimate_wait(&c, &e), UINT64_MAX);
	e.ewma_us = UINT64_MAX / 3;
	e.level = DELAY_ADAPTIVE_MAX_LEVEL;
	ck_assert_uint_eq(delay_estimate_wait(&c, &e), UINT64_MAX);
	ck_assert_uint_eq(delay_policy_next_time_est(&c, &o, UINT64_MAX - 5, 0, 0, &e), UINT64_MAX);
	ck_assert_uint_eq(delay_policy_host_wait(&c, 0, UINT64_MAX), UINT64_MAX);
	/* the longest sample the clock can give: a slowdown, an EWMA below 2^64 */
	e.ewma_us = 1;
	e.level = 0;
	e = delay_estimate_update(&c, e, &o, UINT64_MAX);
	ck_assert_uint_eq(e.level, 1);
	ck_assert_uint_ge(e.ewma_us, UINT64_MAX / 2 - 1);
	e = delay_estimate_update(&c, e, &o, UINT64_MAX);
	ck_assert_uint_gt(e.ewma_us, UINT64_MAX / 4 * 3);
	/* a clock that ran backwards gives a zero sample, not a huge one */
	e.ewma_us = 0;
	o.start_us = 10 * S;
	e = delay_estimate_update(&c, e, &o, 5 * S);
	ck_assert_uint_eq(e.ewma_us, 0);
	/* with a zero floor the wait stays 0 and the level stops at its maximum */
	c.min_delay_us = 0;
	c.max_delay_us = 10 * S;
	o.kind = VISIT_RETRY_LATER;
	for (int i = 0; i < 100; i++)
		e = delay_estimate_update(&c, e, &o, 5 * S);
	ck_assert_uint_eq(e.level, DELAY_ADAPTIVE_MAX_LEVEL);
	ck_assert_uint_eq(delay_estimate_wait(&c, &e), 0);
}
END_TEST

START_TEST(adaptive_config_and_names)
{
	struct politeness_config c;
	enum delay_policy_kind k;

	adaptive_config(&c);
	ck_assert_int_eq(politeness_config_check(&c), 0);
	c.adaptive_factor = 0;
	ck_assert_int_eq(politeness_config_check(&c), -1);
	c.adaptive_factor = 0.0 / 0.0;
	ck_assert_int_eq(politeness_config_check(&c), -1);
	adaptive_config(&c);
	c.adaptive_smoothing = 0;
	ck_assert_int_eq(politeness_config_check(&c), -1);
	c.adaptive_smoothing = 1.5;
	ck_assert_int_eq(politeness_config_check(&c), -1);
	adaptive_config(&c);
	c.adaptive_slowdown = 0.9;
	ck_assert_int_eq(politeness_config_check(&c), -1);
	adaptive_config(&c);
	c.policy = (enum delay_policy_kind)3;
	ck_assert_int_eq(politeness_config_check(&c), -1);
	ck_assert_str_eq(delay_policy_name((enum delay_policy_kind)3), "?");
	for (int i = 0; i <= 2; i++) {
		const char *name = delay_policy_name((enum delay_policy_kind)i);
		ck_assert_int_eq(delay_policy_from_name(name, &k), 0);
		ck_assert_int_eq(k, i);
	}
	ck_assert_str_eq(delay_policy_name(DELAY_POLICY_ADAPTIVE), "adaptive");
	ck_assert_int_eq(delay_policy_from_name("Adaptive", &k), -1);
	ck_assert_int_eq(delay_policy_from_name("", &k), -1);
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
	tcase_add_test(tc, adaptive_follows_response_time);
	tcase_add_test(tc, adaptive_backs_off_and_recovers);
	tcase_add_test(tc, adaptive_saturates);
	tcase_add_test(tc, adaptive_config_and_names);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
