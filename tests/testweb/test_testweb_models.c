/*
 * Check suite for the server-model rules (models.h), without a network:
 * the parser's resolution of selectors, overrides and phases; its clear
 * errors with line numbers; the latency distributions and their
 * reproducibility; capacity, in-flight and rate accounting on arrival.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/testweb/models.h"

static struct tw_models *models_from(const char *text, long hosts, uint64_t seed)
{
	char err[512] = "";
	struct tw_models *m = tw_models_create();
	ck_assert_ptr_nonnull(m);
	ck_assert_msg(tw_models_parse(m, text, strlen(text), "t", 1, err, sizeof err) == 0, "%s",
	              err);
	ck_assert_msg(tw_models_bind(m, "web.test", hosts, seed, err, sizeof err) == 0, "%s", err);
	return m;
}

START_TEST(resolution)
{
	static const char text[] = "# defaults first\n"
	                           "*      latency lognormal 80ms 40ms capacity 8\n"
	                           "\n"
	                           "h3     latency fixed 50ms   # h3 alone\n"
	                           "h4-h6  bandwidth 100KB/s over 503 retry-after 7\n"
	                           "h1*.web.test capacity 2\n"
	                           "h5     after 5s latency fixed 200ms\n"
	                           "h5     after 2s capacity 1\n"
	                           "h5     after 5s bandwidth unlimited\n";
	struct tw_models *m = models_from(text, 20, 1);
	const struct tw_model *d = tw_models_resolve(m, 0);
	ck_assert_uint_eq(d->nphases, 1);
	ck_assert_int_eq(d->phase[0].dist, TW_LAT_LOGNORMAL);
	ck_assert(d->phase[0].lat_a_us == 80000 && d->phase[0].lat_b_us == 40000);
	ck_assert_uint_eq(d->phase[0].capacity, 8);
	ck_assert_uint_eq(d->phase[0].bandwidth, 0);
	ck_assert_int_eq(d->phase[0].over_status, 429);
	ck_assert_uint_eq(d->phase[0].retry_after, 1);
	/* Interned: hosts with equal models share one. */
	ck_assert_ptr_eq(tw_models_resolve(m, 2), d);

	const struct tw_model *h3 = tw_models_resolve(m, 3);
	ck_assert_int_eq(h3->phase[0].dist, TW_LAT_FIXED);
	ck_assert(h3->phase[0].lat_a_us == 50000);
	ck_assert_uint_eq(h3->phase[0].capacity, 8);

	const struct tw_model *h4 = tw_models_resolve(m, 4);
	ck_assert_uint_eq(h4->phase[0].bandwidth, 100000);
	ck_assert_int_eq(h4->phase[0].over_status, 503);
	ck_assert_uint_eq(h4->phase[0].retry_after, 7);

	/* The glob: h1 and h10..h19, not h2. */
	ck_assert_uint_eq(tw_models_resolve(m, 1)->phase[0].capacity, 2);
	ck_assert_uint_eq(tw_models_resolve(m, 13)->phase[0].capacity, 2);
	ck_assert_uint_eq(tw_models_resolve(m, 2)->phase[0].capacity, 8);

	/* Phases: sorted, cumulative. */
	const struct tw_model *h5 = tw_models_resolve(m, 5);
	ck_assert_uint_eq(h5->nphases, 3);
	ck_assert_uint_eq(h5->phase[0].bandwidth, 100000);
	ck_assert_uint_eq(h5->phase[1].after_us, 2000000);
	ck_assert_uint_eq(h5->phase[1].capacity, 1);
	ck_assert_int_eq(h5->phase[1].dist, TW_LAT_LOGNORMAL);
	ck_assert_uint_eq(h5->phase[2].after_us, 5000000);
	ck_assert_uint_eq(h5->phase[2].capacity, 1);
	ck_assert(h5->phase[2].lat_a_us == 200000);
	ck_assert_uint_eq(h5->phase[2].bandwidth, 0);
	ck_assert_uint_eq(h5->phase[2].retry_after, 7);
	tw_models_destroy(m);
}
END_TEST

START_TEST(bad_lines)
{
	static const struct {
		const char *text;
		const char *want;
	} cases[] = {
		{ "* latency fixed 50\n", "t:1: duration '50' needs a unit" },
		{ "\n\n* latency fixed 5m\n", "t:3: bad unit in duration '5m'" },
		{ "# c\nh3\n", "t:2: no setting" },
		{ "h3 latency\n", "t:1: latency needs a distribution" },
		{ "h3 latency gamma 1ms\n", "t:1: unknown latency distribution 'gamma'" },
		{ "h3 latency uniform 9ms 2ms\n",
		  "t:1: latency uniform 9ms 2ms: the bounds are reversed" },
		{ "h3 latency normal 9ms\n", "t:1: latency normal needs 2 durations" },
		{ "h3 latency lognormal 0ms 1ms\n", "t:1: latency lognormal needs a mean above 0" },
		{ "h3 speed 9\n", "t:1: unknown setting 'speed'" },
		{ "h3 capacity -1\n", "t:1: bad capacity '-1'" },
		{ "h3 capacity\n", "t:1: 'capacity' needs a value" },
		{ "h3 over 404\n", "t:1: over '404': want 429 or 503" },
		{ "h3 bandwidth 10Kb\n", "t:1: bad unit in rate '10Kb'" },
		{ "h3 bandwidth 0B\n", "t:1: rate '0B' out of range" },
		{ "h3 retry-after 1.5\n", "t:1: bad retry-after '1.5'" },
		{ "web latency fixed 1ms\n", "t:1: bad selector 'web'" },
		{ "h7-h3 capacity 1\n", "t:1: bad host range 'h7-h3'" },
		{ "h3 after latency fixed 1ms\n", "t:1: bad duration 'latency'" },
		{ "h3 after\n", "t:1: 'after' needs a duration" },
		{ "h3 after 2s\n", "t:1: no setting" },
		{ "h3 latency fixed 2h\n", "t:1: bad unit in duration '2h'" },
		{ "h3 latency fixed 3601s\n", "t:1: duration '3601s' above one hour" },
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		char err[512] = "";
		struct tw_models *m = tw_models_create();
		/* A good line before the bad one is dropped with the text. */
		ck_assert_int_eq(tw_models_parse(m, "* capacity 3\n", 13, "ok", 1, err, sizeof err),
		                 0);
		int rc = tw_models_parse(m, cases[k].text, strlen(cases[k].text), "t", 1, err,
		                         sizeof err);
		ck_assert_msg(rc == -1, "accepted %s", cases[k].text);
		ck_assert_msg(strncmp(err, cases[k].want, strlen(cases[k].want)) == 0,
		              "%s: got '%s', want '%s...'", cases[k].text, err, cases[k].want);
		ck_assert_int_eq(tw_models_bind(m, "web.test", 10, 1, err, sizeof err), 0);
		ck_assert_uint_eq(tw_models_resolve(m, 3)->phase[0].capacity, 3);
		tw_models_destroy(m);
	}
	/* Binding: a host beyond --hosts, named with its line. */
	char err[512] = "";
	struct tw_models *m = tw_models_create();
	ck_assert_int_eq(tw_models_parse(m, "*\tcapacity 1\nh2-h12 capacity 2\n", 31, "f", 1, err,
	                                 sizeof err),
	                 0);
	ck_assert_int_eq(tw_models_bind(m, "web.test", 10, 1, err, sizeof err), -1);
	ck_assert_str_eq(err, "f:2: host h12 beyond --hosts 10");
	tw_models_destroy(m);
	/* Too many phases. */
	char text[2048] = "";
	for (int k = 1; k <= TW_MODEL_PHASES; k++)
		snprintf(text + strlen(text), sizeof text - strlen(text),
		         "h1 after %ds capacity %d\n", k, k);
	m = tw_models_create();
	ck_assert_int_eq(tw_models_parse(m, text, strlen(text), "p", 1, err, sizeof err), -1);
	ck_assert_msg(strstr(err, "p:16: more than 15 distinct 'after' offsets") == err, "%s", err);
	tw_models_destroy(m);
	/* Missing file. */
	m = tw_models_create();
	ck_assert_int_eq(tw_models_load(m, "/nonexistent/models", err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/models: "));
	tw_models_destroy(m);
}
END_TEST

/* Mean and sd of n draws of phase p. */
static void draw(const struct tw_model_phase *p, uint64_t seed, int n, double *mean, double *sd,
                 double *lo, double *hi)
{
	uint64_t rng = seed;
	double s = 0, s2 = 0;
	*lo = INFINITY;
	*hi = 0;
	for (int k = 0; k < n; k++) {
		double v = (double)tw_model_latency_sample(p, &rng);
		s += v;
		s2 += v * v;
		*lo = v < *lo ? v : *lo;
		*hi = v > *hi ? v : *hi;
	}
	*mean = s / n;
	*sd = sqrt(s2 / n - *mean * *mean);
}

START_TEST(distributions)
{
	struct tw_model_phase p;
	double mean, sd, lo, hi;
	memset(&p, 0, sizeof p);
	p.dist = TW_LAT_FIXED;
	p.lat_a_us = 50000;
	draw(&p, 1, 100, &mean, &sd, &lo, &hi);
	ck_assert(lo == 50000 && hi == 50000);
	p.dist = TW_LAT_UNIFORM;
	p.lat_a_us = 20000;
	p.lat_b_us = 80000;
	draw(&p, 2, 20000, &mean, &sd, &lo, &hi);
	ck_assert(lo >= 20000 && hi <= 80000 && fabs(mean - 50000) < 1000);
	ck_assert(lo < 21000 && hi > 79000);
	p.dist = TW_LAT_LOGNORMAL;
	p.lat_a_us = 80000;
	p.lat_b_us = 40000;
	draw(&p, 3, 40000, &mean, &sd, &lo, &hi);
	ck_assert_msg(fabs(mean - 80000) < 2000 && fabs(sd - 40000) < 3000, "%f %f", mean, sd);
	ck_assert(lo > 0);
	p.dist = TW_LAT_NORMAL;
	p.lat_a_us = 30000;
	p.lat_b_us = 5000;
	draw(&p, 4, 20000, &mean, &sd, &lo, &hi);
	ck_assert_msg(fabs(mean - 30000) < 500 && fabs(sd - 5000) < 500, "%f %f", mean, sd);
	p.dist = TW_LAT_EXPONENTIAL;
	p.lat_a_us = 10000;
	draw(&p, 5, 40000, &mean, &sd, &lo, &hi);
	ck_assert_msg(fabs(mean - 10000) < 400 && fabs(sd - 10000) < 600, "%f %f", mean, sd);
}
END_TEST

/* Latencies of n admitted arrivals of host 2, one a millisecond. */
static void latencies(uint64_t seed, uint64_t *out, int n)
{
	struct tw_models *m = models_from("* latency uniform 1ms 900ms\n", 5, seed);
	struct tw_arrival a;
	for (int k = 0; k < n; k++) {
		ck_assert_int_eq(tw_models_arrive(m, 2, 1000000u + (uint64_t)k * 1000u, 0, &a), 0);
		out[k] = a.delay_us;
		tw_models_depart(m, 2);
	}
	tw_models_destroy(m);
}

START_TEST(reproducible)
{
	uint64_t a[16], b[16], c[16];
	latencies(7, a, 16);
	latencies(7, b, 16);
	latencies(8, c, 16);
	ck_assert(memcmp(a, b, sizeof a) == 0);
	ck_assert(memcmp(a, c, sizeof a) != 0);
	int distinct = 0;
	for (int k = 1; k < 16; k++)
		distinct += a[k] != a[0];
	ck_assert_int_gt(distinct, 10);
}
END_TEST

START_TEST(capacity_and_rate)
{
	struct tw_models *m =
	        models_from("h1 capacity 2 over 503 retry-after 9 latency fixed 10ms\n"
	                    "h1 after 3s capacity 1\n",
	                    5, 1);
	struct tw_arrival a;
	const uint64_t t0 = 5000000;
	/* Two admitted, the next three refused, each seeing two in flight. */
	for (int k = 0; k < 5; k++) {
		ck_assert_int_eq(tw_models_arrive(m, 1, t0 + (uint64_t)k * 100u, 0, &a), 0);
		ck_assert_uint_eq(a.rate_1s, (unsigned)k + 1);
		ck_assert_uint_eq(a.in_flight, k < 2 ? (unsigned)k : 2u);
		ck_assert_int_eq(a.reject_status, k < 2 ? 0 : 503);
		ck_assert_uint_eq(a.retry_after, k < 2 ? 0u : 9u);
		ck_assert_uint_eq(a.delay_us, k < 2 ? 10000u : 0u);
	}
	tw_models_depart(m, 1);
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 999999u, 0, &a), 0);
	ck_assert_int_eq(a.reject_status, 0);
	ck_assert_uint_eq(a.in_flight, 1);
	ck_assert_uint_eq(a.rate_1s, 6);
	/* One second after the first five, they leave the rate window. */
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 1000400u, 0, &a), 0);
	ck_assert_uint_eq(a.rate_1s, 2);
	ck_assert_int_eq(a.reject_status, 503);
	tw_models_depart(m, 1);
	tw_models_depart(m, 1);
	/* Observed-only arrivals count but are never refused. */
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 2000000u, 1, &a), 0);
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 2000001u, 1, &a), 0);
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 2000002u, 1, &a), 0);
	ck_assert_uint_eq(a.in_flight, 2);
	ck_assert_int_eq(a.reject_status, 0);
	for (int k = 0; k < 3; k++)
		tw_models_depart(m, 1);
	/* Phase at 3 s after the first arrival: capacity 1. */
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 2999999u, 0, &a), 0);
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 2999999u, 0, &a), 0);
	ck_assert_int_eq(a.reject_status, 0);
	tw_models_depart(m, 1);
	tw_models_depart(m, 1);
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 3000000u, 0, &a), 0);
	ck_assert_int_eq(tw_models_arrive(m, 1, t0 + 3000000u, 0, &a), 0);
	ck_assert_int_eq(a.reject_status, 503);
	/* Many arrivals in a second: the ring grows. */
	for (int k = 0; k < 1000; k++)
		ck_assert_int_eq(tw_models_arrive(m, 4, t0 + (uint64_t)k, 1, &a), 0);
	ck_assert_uint_eq(a.rate_1s, 1000);
	ck_assert_uint_eq(a.in_flight, 999);
	tw_models_destroy(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("testweb_models");
	TCase *tc = tcase_create("models");
	tcase_add_test(tc, resolution);
	tcase_add_test(tc, bad_lines);
	tcase_add_test(tc, distributions);
	tcase_add_test(tc, reproducible);
	tcase_add_test(tc, capacity_and_rate);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
