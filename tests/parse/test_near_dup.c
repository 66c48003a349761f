/*
 * test_near_dup.c: Check suite for parse/near_dup.h.
 *  - a fingerprint within NEAR_DUP_DISTANCE bits of one of its host's is a
 *    near-duplicate, one more bit is not, another host's never is;
 *  - a host's first fingerprint lives in its record, the next ones in an
 *    allocation growing from NEAR_DUP_HOST_MIN as its pages come, and past
 *    NEAR_DUP_HOST_MAX the oldest are overwritten;
 *  - against a reference model (every fingerprint of every host, no
 *    budget), the store answers the same while its budget holds them all;
 *  - with a small budget, bytes never pass it over 100,000 hosts, hosts
 *    are evicted, and a host checked all along keeps its fingerprints
 *    (the least recently checked go first);
 *  - four threads at once on shared hosts: every repeat found.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "parse/near_dup.h"
#include "parse/simhash.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* A fingerprint at least 2 * NEAR_DUP_DISTANCE + 1 bits away from all of
 * v[0..n) (random 64-bit values are about 32 bits apart). */
static uint64_t far_fp(const uint64_t *v, size_t n)
{
	for (;;) {
		uint64_t f = rnd();
		size_t i = 0;
		while (i < n && simhash_distance(v[i], f) > 2 * NEAR_DUP_DISTANCE)
			i++;
		if (i == n)
			return f;
	}
}

static struct near_dup *store(uint64_t memory)
{
	struct near_dup_config c = { memory };
	struct near_dup *nd = NULL;
	ck_assert_int_eq(near_dup_create(&c, &nd), NEAR_DUP_OK);
	return nd;
}

START_TEST(test_distance)
{
	struct near_dup *nd = store(1 << 20);
	uint64_t fp = 0x0123456789ABCDEFull;
	ck_assert_int_eq(near_dup_check(nd, 7, fp), 0);
	ck_assert_int_eq(near_dup_check(nd, 7, fp), 1);
	ck_assert_int_eq(near_dup_check(nd, 7, fp ^ 0x7), 1);              /* 3 bits */
	ck_assert_int_eq(near_dup_check(nd, 7, fp ^ 0xF0), 0);             /* 4 bits: added */
	ck_assert_int_eq(near_dup_check(nd, 7, fp ^ 0xF1), 1);             /* 1 bit off the last */
	ck_assert_int_eq(near_dup_check(nd, 8, fp), 0);                    /* another host */
	ck_assert_int_eq(near_dup_check(nd, 7 + NEAR_DUP_STRIPES, fp), 0); /* same stripe */
	struct near_dup_stats s;
	near_dup_stats(nd, &s);
	ck_assert_uint_eq(s.hosts, 3);
	ck_assert_uint_eq(s.fingerprints, 4);
	ck_assert_uint_eq(s.checks, 7);
	ck_assert_uint_eq(s.found, 3);
	ck_assert_uint_le(s.bytes, s.budget);
	near_dup_destroy(nd);
	near_dup_destroy(NULL);
	struct near_dup_config small = { NEAR_DUP_MEMORY_MIN - 1 };
	ck_assert_int_eq(near_dup_create(&small, &nd), NEAR_DUP_ERR_INVALID);
	ck_assert_ptr_null(nd);
}
END_TEST

START_TEST(test_growth_and_ring)
{
	enum { N = NEAR_DUP_HOST_MAX + 40 };
	static uint64_t v[N];
	struct near_dup *nd = store(64u << 20);
	struct near_dup_stats s;
	rng_state = 1;
	for (size_t i = 0; i < N; i++) {
		v[i] = far_fp(v, i);
		ck_assert_int_eq(near_dup_check(nd, 3, v[i]), 0);
		near_dup_stats(nd, &s);
		size_t held = i + 1 < NEAR_DUP_HOST_MAX ? i + 1 : NEAR_DUP_HOST_MAX;
		ck_assert_uint_eq(s.fingerprints, held);
		/* records and index; the first fingerprint in its record, then 4 */
		if (i == 0)
			ck_assert_uint_eq(s.bytes, 16 * 32 + 32 * 4);
		if (i == 1)
			ck_assert_uint_eq(s.bytes, 16 * 32 + 32 * 4 + 48);
	}
	near_dup_stats(nd, &s);
	ck_assert_uint_eq(s.overwritten, N - NEAR_DUP_HOST_MAX);
	/* the oldest 40 were overwritten: new again; the rest are known */
	for (size_t i = 0; i < 40; i++)
		ck_assert_int_eq(near_dup_check(nd, 3, v[i] ^ 1), 0);
	for (size_t i = 80; i < N; i++)
		ck_assert_int_eq(near_dup_check(nd, 3, v[i] ^ 1), 1);
	near_dup_destroy(nd);
}
END_TEST

/* The reference: every fingerprint of every host, kept for ever. */
struct model {
	uint64_t fp[64][256];
	size_t n[64];
};

START_TEST(test_reference_model)
{
	static struct model m;
	struct near_dup *nd = store(16u << 20);
	rng_state = 7;
	for (int op = 0; op < 20000; op++) {
		uint32_t host = (uint32_t)(rnd() % 64);
		uint64_t fp;
		/* half repeats (or near: 0-4 bits off) of the host's, half new */
		if (m.n[host] > 0 && rnd() % 2 == 0) {
			fp = m.fp[host][rnd() % m.n[host]];
			for (uint64_t b = rnd() % 5; b > 0; b--)
				fp ^= 1ull << (rnd() % 64);
		} else {
			fp = rnd();
		}
		int want = 0;
		for (size_t i = 0; i < m.n[host] && !want; i++)
			want = simhash_distance(m.fp[host][i], fp) <= NEAR_DUP_DISTANCE;
		if (!want && m.n[host] < 256)
			m.fp[host][m.n[host]++] = fp;
		else if (!want)
			continue; /* the model is full for this host: skip the op */
		ck_assert_int_eq(near_dup_check(nd, host * 977, fp), want);
	}
	struct near_dup_stats s;
	near_dup_stats(nd, &s);
	ck_assert_uint_eq(s.hosts_evicted, 0);
	near_dup_destroy(nd);
}
END_TEST

START_TEST(test_budget)
{
	struct near_dup *nd = store(NEAR_DUP_MEMORY_MIN);
	struct near_dup_stats s;
	rng_state = 11;
	const uint32_t hot = 5;
	uint64_t hot_fp[8];
	for (int i = 0; i < 8; i++) {
		hot_fp[i] = far_fp(hot_fp, (size_t)i);
		ck_assert_int_eq(near_dup_check(nd, hot, hot_fp[i]), 0);
	}
	for (uint32_t h = 100; h < 100100; h++) {
		near_dup_check(nd, h, rnd());
		near_dup_check(nd, h, rnd());
		if (h % (NEAR_DUP_STRIPES * 4) == 0)
			ck_assert_int_eq(near_dup_check(nd, hot, hot_fp[h % 8] ^ 2), 1);
		if (h % 1000 == 0) {
			near_dup_stats(nd, &s);
			ck_assert_uint_le(s.bytes, s.budget);
		}
	}
	near_dup_stats(nd, &s);
	ck_assert_uint_gt(s.hosts_evicted, 90000);
	ck_assert_uint_gt(s.hosts, 1000); /* a budget's worth stays */
	ck_assert_uint_le(s.bytes, s.budget);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(near_dup_check(nd, hot, hot_fp[i]), 1);
	near_dup_destroy(nd);
}
END_TEST

struct worker {
	struct near_dup *nd;
	int id;
	int found;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	/* host h's fingerprints are h * 1000 + k scrambled: every thread adds
	 * the same ones, so each is new once and found by the three others */
	for (int round = 0; round < 2; round++)
		for (uint32_t h = 0; h < 500; h++)
			for (uint64_t k = 0; k < 4; k++) {
				uint64_t z = (h * 1000 + k + 1) * 0x9E3779B97F4A7C15ull;
				z ^= z >> 29;
				z *= 0xBF58476D1CE4E5B9ull;
				w->found += near_dup_check(w->nd, h, z ^ (z >> 32));
			}
	return NULL;
}

START_TEST(test_threads)
{
	struct near_dup *nd = store(64u << 20);
	struct worker w[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ nd, i, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	int found = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		found += w[i].found;
	}
	struct near_dup_stats s;
	near_dup_stats(nd, &s);
	ck_assert_uint_eq(s.fingerprints, 2000);
	ck_assert_int_eq(found, 4 * 2 * 2000 - 2000);
	ck_assert_uint_eq(s.found, (uint64_t)found);
	near_dup_destroy(nd);
}
END_TEST

int main(void)
{
	Suite *su = suite_create("near_dup");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_distance);
	tcase_add_test(tc, test_growth_and_ring);
	tcase_add_test(tc, test_reference_model);
	tcase_add_test(tc, test_budget);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
