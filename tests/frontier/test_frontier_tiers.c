/*
 * Check suite for the frontier's tiers (frontier.h): within a host the
 * highest tier comes out first and each tier keeps first-appearance order,
 * through memory, the write buffer, the disk and checkpoints; the depth
 * order (no URL at depth d+1 while one at depth d waits); what tiers cost.
 * Every order is checked against a reference model.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/frontier.h"

#define HOSTS 4
#define MAX_RECS 6000

/* The reference: per host, every URL pushed (its sequence number is its
 * index) with its depth word and whether it came out. */
struct model {
	uint32_t word[HOSTS][MAX_RECS];
	uint8_t out[HOSTS][MAX_RECS];
	uint32_t n[HOSTS];
	enum frontier_order order;
};

static struct frontier *mk(uint64_t budget, enum frontier_order order)
{
	struct frontier_config c;
	struct frontier *f = NULL;

	frontier_config_default(&c);
	c.mem_budget = budget;
	c.write_buffer = 64 << 10;
	c.segment_bytes = 256 << 10;
	c.order = order;
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	return f;
}

static uint32_t host(struct frontier *f, int i)
{
	char k[64];
	uint32_t id = FRONTIER_HOST_NONE;
	int n = snprintf(k, sizeof k, "http://h%d.test", i);

	ck_assert_int_eq(frontier_host_get(f, k, (size_t)n, 1, &id), FRONTIER_OK);
	return id;
}

static int url_of(char *buf, size_t cap, int h, uint32_t seq)
{
	/* long enough that a few thousand spill past a small budget */
	return snprintf(buf, cap, "http://h%d.test/%u/%0200u", h, seq, 0u);
}

static void push(struct frontier *f, struct model *m, int h, uint32_t word)
{
	char url[512];
	uint32_t seq = m->n[h]++;
	int n = url_of(url, sizeof url, h, seq);

	ck_assert_uint_lt(seq, MAX_RECS);
	m->word[h][seq] = word;
	ck_assert_int_eq(frontier_push(f, host(f, h), url, (size_t)n, "v", 1, word), FRONTIER_OK);
}

/* The sequence number the model says comes out next: the first of the
 * highest tier; UINT32_MAX when the host has nothing. */
static uint32_t model_next(const struct model *m, int h)
{
	uint32_t best = UINT32_MAX, best_tier = 0;

	for (uint32_t i = 0; i < m->n[h]; i++) {
		uint32_t t = frontier_tier(m->word[h][i], m->order);
		if (!m->out[h][i] && (best == UINT32_MAX || t > best_tier)) {
			best = i;
			best_tier = t;
		}
	}
	return best;
}

static void pop_check(struct frontier *f, struct model *m, int h)
{
	struct frontier_url u;
	char url[512];
	uint32_t want = model_next(m, h);

	if (want == UINT32_MAX) {
		ck_assert_int_eq(frontier_pop(f, host(f, h), &u), FRONTIER_ERR_EMPTY);
		return;
	}
	ck_assert_uint_eq(frontier_host_best_tier(f, host(f, h)),
	                  frontier_tier(m->word[h][want], m->order));
	ck_assert_int_eq(frontier_pop(f, host(f, h), &u), FRONTIER_OK);
	url_of(url, sizeof url, h, want);
	ck_assert_str_eq(u.url, url);
	ck_assert_str_eq(u.via, "v");
	ck_assert_uint_eq(u.depth, m->word[h][want]);
	m->out[h][want] = 1;
}

static uint32_t random_word(unsigned *seed)
{
	uint32_t depth = (uint32_t)rand_r(seed) % 6;
	int prio = rand_r(seed) % 4 == 0 ? rand_r(seed) % 7 - 3 : 0;

	return frontier_depth_with_priority(frontier_depth_pack(depth, depth % 3), prio);
}

static void drain_check(struct frontier *f, struct model *m)
{
	for (int h = 0; h < HOSTS; h++) {
		while (model_next(m, h) != UINT32_MAX)
			pop_check(f, m, h);
		pop_check(f, m, h);
		ck_assert_uint_eq(frontier_host_queued(f, host(f, h)), 0);
		ck_assert_uint_eq(frontier_host_best_tier(f, host(f, h)), 0);
	}
}

/* Pushes and pops mixed at random, through a small budget (memory, write
 * buffer, disk), then a checkpoint restored into a new frontier that must
 * give the rest in the same order. */
static void mixed_run(enum frontier_order order, unsigned seed)
{
	static struct model m, saved;
	struct frontier *f = mk(512 << 10, order), *g = NULL;
	struct frontier_config c;
	struct frontier_stats st;
	char dir[] = "/tmp/tiers-ckpt-XXXXXX", cmd[64];

	memset(&m, 0, sizeof m);
	m.order = order;
	for (int round = 0; round < 8000; round++) {
		int h = rand_r(&seed) % HOSTS;
		if (rand_r(&seed) % 3 != 0)
			push(f, &m, h, random_word(&seed));
		else
			pop_check(f, &m, h);
		if (round == 5000) {
			ck_assert_ptr_nonnull(mkdtemp(dir));
			ck_assert_int_eq(frontier_checkpoint(f, dir), FRONTIER_OK);
			frontier_config_default(&c);
			c.mem_budget = 512 << 10;
			c.write_buffer = 64 << 10;
			c.order = order;
			ck_assert_int_eq(frontier_restore(&c, dir, &g), FRONTIER_OK);
			saved = m;
		}
	}
	frontier_stats(f, &st);
	ck_assert_uint_gt(st.flushes, 0);
	ck_assert_uint_gt(st.refills, 0);
	drain_check(f, &m);
	frontier_destroy(f);
	/* the restored frontier gives what was queued at the checkpoint, in
	 * the same order */
	drain_check(g, &saved);
	frontier_destroy(g);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(tiers_mixed_bfs)
{
	mixed_run(FRONTIER_ORDER_BFS, 7);
}
END_TEST

START_TEST(tiers_mixed_depth)
{
	mixed_run(FRONTIER_ORDER_DEPTH, 11);
}
END_TEST

/* Depth order: pushes in an order far from breadth-first; no URL at depth
 * d+1 comes out while one at depth d waits, and each depth is FIFO. */
START_TEST(depth_first_never)
{
	struct frontier *f = mk(1 << 20, FRONTIER_ORDER_DEPTH);
	uint32_t a = host(f, 0), waiting[8] = { 0 }, last_seq[8] = { 0 };
	struct frontier_url u;
	char url[64];
	unsigned seed = 3;

	for (uint32_t i = 0; i < 2000; i++) {
		uint32_t d = (uint32_t)rand_r(&seed) % 8;
		int n = snprintf(url, sizeof url, "http://h0.test/%u", i);
		ck_assert_int_eq(
		        frontier_push(f, a, url, (size_t)n, NULL, 0, frontier_depth_pack(d, 0)),
		        FRONTIER_OK);
		waiting[d]++;
		/* interleave pops: the shallowest waiting depth comes out */
		if (i % 3 == 0) {
			uint32_t min = 0;
			while (waiting[min] == 0)
				min++;
			ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
			ck_assert_uint_eq(frontier_depth_of(u.depth), min);
			uint32_t seq = (uint32_t)strtoul(u.url + 15, NULL, 10);
			ck_assert(last_seq[min] == 0 || seq > last_seq[min]);
			last_seq[min] = seq;
			waiting[min]--;
		}
	}
	frontier_destroy(f);
}
END_TEST

/* A host whose URLs are all of one tier costs what it cost before tiers,
 * whichever tier; a second tier costs one queue and a small table, given
 * back when the host is down to one tier again. */
START_TEST(tier_cost)
{
	struct frontier *f = mk(4 << 20, FRONTIER_ORDER_BFS), *g = mk(4 << 20, FRONTIER_ORDER_BFS);
	struct frontier_stats sf, sg, s2;
	struct frontier_url u;
	uint32_t a = host(f, 0), b = host(g, 0);
	char url[64];

	for (uint32_t i = 0; i < 100; i++) {
		int n = snprintf(url, sizeof url, "http://h0.test/%u", i);
		ck_assert_int_eq(frontier_push(f, a, url, (size_t)n, NULL, 0, 0), FRONTIER_OK);
		ck_assert_int_eq(frontier_push(g, b, url, (size_t)n, NULL, 0,
		                               frontier_depth_with_priority(0, 2)),
		                 FRONTIER_OK);
	}
	frontier_stats(f, &sf);
	frontier_stats(g, &sg);
	ck_assert_uint_eq(sf.mem_bytes, sg.mem_bytes);
	/* a second tier: one queue (96 bytes, 112 as malloc takes it) and a
	 * table of four slots (40 bytes, 48), beside the record */
	ck_assert_int_eq(frontier_push(f, a, "http://h0.test/x", 16, NULL, 0,
	                               frontier_depth_with_priority(0, 1)),
	                 FRONTIER_OK);
	frontier_stats(f, &s2);
	ck_assert_uint_eq(s2.mem_bytes - sf.mem_bytes, 112 + 48 + 48);
	ck_assert_uint_eq(frontier_host_best_tier(f, a),
	                  frontier_tier(frontier_depth_with_priority(0, 1), FRONTIER_ORDER_BFS));
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
	ck_assert_str_eq(u.url, "http://h0.test/x");
	frontier_stats(f, &s2);
	ck_assert_uint_eq(s2.mem_bytes, sf.mem_bytes);
	frontier_destroy(f);
	frontier_destroy(g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("frontier_tiers");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, tiers_mixed_bfs);
	tcase_add_test(tc, tiers_mixed_depth);
	tcase_add_test(tc, depth_first_never);
	tcase_add_test(tc, tier_cost);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
