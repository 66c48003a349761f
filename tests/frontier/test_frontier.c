/*
 * Check suite for frontier/frontier.h: FIFO order through memory and disk,
 * the memory budget, segment reclamation, retirement accounting, budgets,
 * robots state, the empty->non-empty callback. Every test checks the queue
 * against a reference model (per-host sequence numbers).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/frontier.h"

/* Largest overshoot allowed: one refilled record of the biggest size. */
#define SLACK (2 * FRONTIER_URL_MAX + 64)

static struct frontier *mk(uint64_t budget, uint64_t wbuf, uint64_t seg)
{
	struct frontier_config c;
	struct frontier *f = NULL;

	frontier_config_default(&c);
	c.spill_dir = "/tmp";
	c.mem_budget = budget;
	c.write_buffer = wbuf;
	c.segment_bytes = seg;
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	ck_assert_ptr_nonnull(f);
	return f;
}

static uint32_t host(struct frontier *f, const char *k)
{
	uint32_t id = FRONTIER_HOST_NONE;

	ck_assert_int_eq(frontier_host_get(f, k, strlen(k), 1, &id), FRONTIER_OK);
	return id;
}

START_TEST(host_table)
{
	struct frontier *f = mk(1 << 20, 0, 0);
	uint32_t a = host(f, "http://a.test"), b = host(f, "http://b.test:8080"), x = 0;
	size_t len = 0;

	ck_assert_uint_ne(a, b);
	ck_assert_uint_eq(host(f, "http://a.test"), a);
	ck_assert_int_eq(frontier_host_get(f, "http://c.test", 13, 0, &x), FRONTIER_ERR_NOT_FOUND);
	ck_assert_str_eq(frontier_host_key(f, b, &len), "http://b.test:8080");
	ck_assert_uint_eq(len, 18);
	ck_assert_uint_eq(frontier_host_count(f), 2);
	ck_assert_ptr_null(frontier_host_key(f, 99, NULL));
	ck_assert_int_eq(frontier_host_get(f, "", 0, 1, &x), FRONTIER_ERR_INVALID);
	ck_assert_int_eq(frontier_push(f, 99, "u", 1, NULL, 0, 0), FRONTIER_ERR_INVALID);
	ck_assert_int_eq(frontier_push(f, a, "", 0, NULL, 0, 0), FRONTIER_ERR_INVALID);
	/* many hosts: the index grows and every key still maps to its id */
	for (int i = 0; i < 20000; i++) {
		char k[64];
		int n = snprintf(k, sizeof k, "http://h%d.test", i);
		uint32_t id;
		ck_assert_int_eq(frontier_host_get(f, k, (size_t)n, 1, &id), FRONTIER_OK);
		ck_assert_uint_eq(id, (uint32_t)i + 2);
	}
	for (int i = 0; i < 20000; i += 7) {
		char k[64];
		int n = snprintf(k, sizeof k, "http://h%d.test", i);
		uint32_t id;
		ck_assert_int_eq(frontier_host_get(f, k, (size_t)n, 0, &id), FRONTIER_OK);
		ck_assert_uint_eq(id, (uint32_t)i + 2);
	}
	frontier_destroy(f);
	frontier_destroy(NULL);
}
END_TEST

START_TEST(fifo_memory)
{
	struct frontier *f = mk(1 << 20, 0, 0);
	uint32_t a = host(f, "http://a.test");
	struct frontier_url u;

	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_ERR_EMPTY);
	ck_assert_int_eq(frontier_push(f, a, "http://a.test/1", 15, "http://z/", 9, 3),
	                 FRONTIER_OK);
	ck_assert_int_eq(frontier_push(f, a, "http://a.test/2", 15, NULL, 0, 4), FRONTIER_OK);
	ck_assert_uint_eq(frontier_host_queued(f, a), 2);
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
	ck_assert_str_eq(u.url, "http://a.test/1");
	ck_assert_str_eq(u.via, "http://z/");
	ck_assert_uint_eq(u.depth, 3);
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
	ck_assert_str_eq(u.url, "http://a.test/2");
	ck_assert_uint_eq(u.via_len, 0);
	ck_assert_uint_eq(u.depth, 4);
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_ERR_EMPTY);
	frontier_destroy(f);
}
END_TEST

/* Pushes and pops over H hosts with a tiny budget, interleaved, checking
 * order, via/depth through the disk, the budget after every operation and
 * that the segments are all reclaimed at the end. */
START_TEST(fifo_spill)
{
	enum { H = 50, N = 200000 };
	struct frontier *f = mk(1 << 20, 64 << 10, 256 << 10);
	uint32_t ids[H];
	uint64_t in[H] = { 0 }, out[H] = { 0 };
	struct frontier_stats st;
	struct frontier_url u;
	unsigned seed = 1;
	uint64_t budget = 1 << 20;

	for (int i = 0; i < H; i++) {
		char k[32];
		snprintf(k, sizeof k, "http://h%d.test", i);
		ids[i] = host(f, k);
	}
	for (int step = 0; step < N; step++) {
		int h = (int)(rand_r(&seed) % H);
		if (rand_r(&seed) % 3 != 0) {
			char url[96], via[32];
			int n = snprintf(url, sizeof url, "http://h%d.test/%llu/%0*d", h,
			                 (unsigned long long)in[h], (int)(in[h] % 40), 0);
			int vn = snprintf(via, sizeof via, "v%llu", (unsigned long long)in[h]);
			ck_assert_int_eq(frontier_push(f, ids[h], url, (size_t)n, via, (size_t)vn,
			                               (uint32_t)(in[h] % 1000)),
			                 FRONTIER_OK);
			in[h]++;
		} else if (out[h] < in[h]) {
			char want[96];
			int n = snprintf(want, sizeof want, "http://h%d.test/%llu/%0*d", h,
			                 (unsigned long long)out[h], (int)(out[h] % 40), 0);
			ck_assert_int_eq(frontier_pop(f, ids[h], &u), FRONTIER_OK);
			ck_assert_uint_eq(u.url_len, (size_t)n);
			ck_assert_str_eq(u.url, want);
			ck_assert_uint_eq(u.depth, out[h] % 1000);
			snprintf(want, sizeof want, "v%llu", (unsigned long long)out[h]);
			ck_assert_str_eq(u.via, want);
			out[h]++;
		} else {
			ck_assert_int_eq(frontier_pop(f, ids[h], &u), FRONTIER_ERR_EMPTY);
		}
		frontier_stats(f, &st);
		ck_assert_uint_le(st.mem_bytes, budget + SLACK);
	}
	frontier_stats(f, &st);
	ck_assert_uint_gt(st.flushes, 10);
	ck_assert_uint_gt(st.urls_on_disk, 0);
	for (int h = 0; h < H; h++) {
		while (out[h] < in[h]) {
			char want[96];
			snprintf(want, sizeof want, "http://h%d.test/%llu/%0*d", h,
			         (unsigned long long)out[h], (int)(out[h] % 40), 0);
			ck_assert_int_eq(frontier_pop(f, ids[h], &u), FRONTIER_OK);
			ck_assert_str_eq(u.url, want);
			out[h]++;
		}
		ck_assert_int_eq(frontier_pop(f, ids[h], &u), FRONTIER_ERR_EMPTY);
	}
	frontier_stats(f, &st);
	ck_assert_uint_eq(st.urls_queued, 0);
	ck_assert_uint_eq(st.urls_on_disk, 0);
	ck_assert_uint_eq(st.urls_in_memory, 0);
	ck_assert_uint_eq(st.pushed, st.popped);
	/* only the segment still being appended may remain */
	ck_assert_uint_le(st.segments, 1);
	frontier_destroy(f);
}
END_TEST

static uint64_t drained;
static void count_drain(void *ctx, uint32_t host, const struct frontier_url *u)
{
	uint64_t *expect = ctx;
	char want[64];

	(void)host;
	snprintf(want, sizeof want, "http://r.test/%llu", (unsigned long long)*expect);
	ck_assert_str_eq(u->url, want);
	(*expect)++;
	drained++;
}

START_TEST(retire_accounting)
{
	struct frontier *f = mk(128 << 10, 64 << 10, 0);
	uint32_t r = host(f, "http://r.test"), o = host(f, "http://o.test");
	uint64_t expect = 0, n = 0;
	struct frontier_stats st;
	struct frontier_url u;

	for (int i = 0; i < 5000; i++) { /* enough to spill */
		char url[64];
		int k = snprintf(url, sizeof url, "http://r.test/%d", i);
		ck_assert_int_eq(frontier_push(f, r, url, (size_t)k, NULL, 0, 0), FRONTIER_OK);
	}
	ck_assert_int_eq(frontier_push(f, o, "http://o.test/", 14, NULL, 0, 0), FRONTIER_OK);
	frontier_stats(f, &st);
	ck_assert_uint_gt(st.urls_on_disk, 0);
	drained = 0;
	ck_assert_int_eq(frontier_host_retire(f, r, count_drain, &expect, &n), FRONTIER_OK);
	ck_assert_uint_eq(n, 5000);
	ck_assert_uint_eq(drained, 5000);
	ck_assert(frontier_host_is_retired(f, r));
	ck_assert(!frontier_host_is_retired(f, o));
	ck_assert_int_eq(frontier_push(f, r, "http://r.test/x", 15, NULL, 0, 0),
	                 FRONTIER_ERR_RETIRED);
	frontier_stats(f, &st);
	ck_assert_uint_eq(st.dropped_retired, 5001);
	ck_assert_uint_eq(st.urls_queued, 1);
	ck_assert_uint_eq(st.popped, 0);
	ck_assert_int_eq(frontier_pop(f, o, &u), FRONTIER_OK);
	ck_assert_str_eq(u.url, "http://o.test/");
	frontier_destroy(f);
}
END_TEST

START_TEST(budgets)
{
	struct frontier_config c;
	struct frontier *f = NULL;
	struct frontier_stats st;
	uint32_t a;

	frontier_config_default(&c);
	c.mem_budget = 1 << 20;
	c.max_urls_per_host = 3;
	c.max_depth = 5;
	c.max_hosts = 2;
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	a = host(f, "http://a.test");
	ck_assert_int_eq(frontier_push(f, a, "u1", 2, NULL, 0, 6), FRONTIER_ERR_DEPTH);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(frontier_push(f, a, "u", 1, NULL, 0, 5), FRONTIER_OK);
	ck_assert_int_eq(frontier_push(f, a, "u", 1, NULL, 0, 5), FRONTIER_ERR_BUDGET);
	(void)host(f, "http://b.test");
	ck_assert_int_eq(frontier_host_get(f, "http://c.test", 13, 1, &a), FRONTIER_ERR_FULL);
	frontier_stats(f, &st);
	ck_assert_uint_eq(st.rejected_depth, 1);
	ck_assert_uint_eq(st.rejected_budget, 1);
	ck_assert_uint_eq(st.urls_queued, 3);
	frontier_destroy(f);
}
END_TEST

/* The depth word carries the redirects that led to a URL above its link
 * depth: max_depth judges the depth alone, and the word comes back whole,
 * from memory and from the disk part alike. */
START_TEST(depth_word)
{
	struct frontier_config c;
	struct frontier *f = NULL;
	struct frontier_url u;
	uint32_t a;

	frontier_config_default(&c);
	c.spill_dir = "/tmp";
	c.mem_budget = 1 << 20;
	c.max_depth = 5;
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	a = host(f, "http://a.test");
	ck_assert_uint_eq(frontier_depth_of(frontier_depth_pack(5, 20)), 5);
	ck_assert_uint_eq(frontier_redirects_of(frontier_depth_pack(5, 20)), 20);
	ck_assert_uint_eq(frontier_redirects_of(frontier_depth_pack(0, 1000)),
	                  FRONTIER_REDIRECTS_MAX);
	ck_assert_uint_eq(frontier_depth_of(frontier_depth_pack(UINT32_MAX, 0)),
	                  FRONTIER_DEPTH_MASK);
	/* the priority rides above the counts and leaves them as they were */
	for (int p = -3; p <= 3; p++) {
		uint32_t w = frontier_depth_with_priority(frontier_depth_pack_embed(7, 31, 2), p);
		ck_assert_int_eq(frontier_priority_of(w), p);
		ck_assert_uint_eq(frontier_depth_of(w), 7);
		ck_assert_uint_eq(frontier_embed_of(w), 2);
		ck_assert_uint_eq(frontier_redirects_of(w), 31);
		ck_assert_int_eq(frontier_priority_of(frontier_depth_with_priority(w, 0)), 0);
	}
	ck_assert_int_eq(frontier_priority_of(frontier_depth_pack(9, 3)), 0);
	ck_assert_int_eq(frontier_priority_of(frontier_depth_with_priority(0, 9)), 3);
	ck_assert_int_eq(frontier_priority_of(frontier_depth_with_priority(0, -9)), -3);
	ck_assert_int_eq(frontier_push(f, a, "u0", 2, NULL, 0, frontier_depth_pack(6, 0)),
	                 FRONTIER_ERR_DEPTH);
	/* enough records to spill past the budget: the last ones come from disk */
	enum { N = 20000 };
	char url[64];
	for (uint32_t i = 0; i < N; i++) {
		int n = snprintf(url, sizeof url, "http://a.test/%u/%040u", i, 0u);
		uint32_t w = frontier_depth_pack(i % 6, i % 32);
		ck_assert_int_eq(frontier_push(f, a, url, (size_t)n, NULL, 0,
		                               frontier_depth_with_priority(w, (int)(i % 7) - 3)),
		                 FRONTIER_OK);
	}
	struct frontier_stats st;
	frontier_stats(f, &st);
	ck_assert_uint_gt(st.urls_on_disk, 0);
	/* the word comes back whole; the highest priority first, each
	 * priority in the order its URLs went in, through the disk too */
	for (int p = 3; p >= -3; p--) {
		for (uint32_t i = (uint32_t)(p + 3); i < N; i += 7) {
			int n = snprintf(url, sizeof url, "http://a.test/%u/%040u", i, 0u);
			ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
			ck_assert_str_eq(u.url, url);
			ck_assert_uint_eq(u.url_len, (size_t)n);
			ck_assert_uint_eq(frontier_depth_of(u.depth), i % 6);
			ck_assert_uint_eq(frontier_redirects_of(u.depth), i % 32);
			ck_assert_int_eq(frontier_priority_of(u.depth), p);
		}
	}
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_ERR_EMPTY);
	frontier_destroy(f);
}
END_TEST

START_TEST(host_counters_and_name)
{
	struct frontier_config c;
	struct frontier *f = NULL;
	uint32_t a, b, o;
	size_t len;

	frontier_config_default(&c);
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	a = host(f, "http://a.test");
	frontier_host_account(f, a, 2, 300);
	{
		uint64_t pg, by, ev;
		frontier_host_counts(f, a, &pg, &by, &ev);
		ck_assert_uint_eq(pg, 2);
		ck_assert_uint_eq(by, 300);
		ck_assert_uint_eq(ev, 0);
	}
	/* the host name is kept beside the key, NUL-terminated */
	ck_assert_str_eq(frontier_host_name(f, a, &len), "a.test");
	ck_assert_uint_eq(len, 6);
	b = host(f, "https://u:p@[::1]:8443");
	ck_assert_str_eq(frontier_host_name(f, b, &len), "[::1]");
	ck_assert_str_eq(frontier_host_key(f, b, NULL), "https://u:p@[::1]:8443");
	o = host(f, "not-a-key");
	ck_assert_str_eq(frontier_host_name(f, o, &len), "");
	ck_assert_uint_eq(len, 0);
	ck_assert_ptr_null(frontier_host_name(f, 99, &len));
	frontier_destroy(f);
}
END_TEST

static uint32_t woken[16];
static int nwoken;
static void wake(void *ctx, uint32_t host)
{
	(void)ctx;
	if (nwoken < 16)
		woken[nwoken] = host;
	nwoken++;
}

START_TEST(nonempty_callback)
{
	struct frontier *f = mk(1 << 20, 0, 0);
	uint32_t a = host(f, "http://a.test"), b = host(f, "http://b.test");
	struct frontier_url u;

	nwoken = 0;
	frontier_set_nonempty_cb(f, wake, NULL);
	ck_assert_int_eq(frontier_push(f, a, "1", 1, NULL, 0, 0), FRONTIER_OK);
	ck_assert_int_eq(frontier_push(f, a, "2", 1, NULL, 0, 0), FRONTIER_OK);
	ck_assert_int_eq(frontier_push(f, b, "1", 1, NULL, 0, 0), FRONTIER_OK);
	ck_assert_int_eq(nwoken, 2);
	ck_assert_uint_eq(woken[0], a);
	ck_assert_uint_eq(woken[1], b);
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
	ck_assert_int_eq(frontier_push(f, a, "3", 1, NULL, 0, 0), FRONTIER_OK);
	ck_assert_int_eq(nwoken, 2); /* a was never empty */
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
	ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
	ck_assert_int_eq(frontier_push(f, a, "4", 1, NULL, 0, 0), FRONTIER_OK);
	ck_assert_int_eq(nwoken, 3);
	frontier_destroy(f);
}
END_TEST

static int nonempty_calls;

static void count_nonempty(void *ctx, uint32_t h)
{
	(void)ctx;
	(void)h;
	nonempty_calls++;
}

/* An idle host keeps no queue: about 120 bytes each with its key; a queue
 * emptied by refills from the write buffer, then flushed by the host's own
 * next push, is made again for that push. */
/* The memory account's parts move with what they count: the host table
 * with hosts (the header's stated cost a host), the queue records with
 * the hosts that have URLs queued, and back when their queues empty. */
START_TEST(memory_account)
{
	struct frontier *f = mk(64 << 20, 64 << 10, 1 << 20);
	struct frontier_stats st0, st;
	struct frontier_url u;
	char k[64];
	enum { N = 20000 };

	frontier_stats(f, &st0);
	ck_assert_uint_eq(st0.mem_queues, 0);
	ck_assert_uint_le(st0.mem_hosts, st0.mem_bytes);
	for (int i = 0; i < N; i++) {
		snprintf(k, sizeof k, "http://h%06d.web.test:8080", i);
		host(f, k);
	}
	frontier_stats(f, &st);
	/* 56 of struct, 29 + 17 of key and name (with their NULs), 8 to 16 of
	 * index (it doubles), a little of the host pages' rounding */
	uint64_t per = (st.mem_hosts - st0.mem_hosts) / N;
	ck_assert_uint_ge(per, 56 + 46 + 8);
	ck_assert_uint_le(per, 56 + 46 + 16 + 4);
	ck_assert_uint_eq(st.mem_queues, 0);
	ck_assert_uint_eq(st.mem_bytes - st.mem_hosts, st0.mem_bytes - st0.mem_hosts);
	/* a queue record (112 bytes as malloc rounds it) a host with URLs */
	for (uint32_t h = 0; h < N / 2; h++)
		ck_assert_int_eq(frontier_push(f, h, "http://x/", 9, NULL, 0, 0), FRONTIER_OK);
	frontier_stats(f, &st);
	ck_assert_uint_eq(st.mem_queues, (uint64_t)(N / 2) * 112);
	for (uint32_t h = 0; h < N / 2; h++)
		ck_assert_int_eq(frontier_pop(f, h, &u), FRONTIER_OK);
	frontier_stats(f, &st);
	ck_assert_uint_eq(st.mem_queues, 0);
	ck_assert_uint_eq(st.mem_bytes - st.mem_hosts, st0.mem_bytes - st0.mem_hosts);
	frontier_destroy(f);
}
END_TEST

START_TEST(idle_hosts)
{
	struct frontier *f = mk(256 << 10, 64 << 10, 1 << 20);
	struct frontier_stats st0, st;
	struct frontier_url u;
	char k[64], url[4096];

	frontier_stats(f, &st0);
	for (int i = 0; i < 2048; i++) {
		snprintf(k, sizeof k, "http://idle%d.example.test", i);
		host(f, k);
	}
	frontier_stats(f, &st);
	/* 56 of struct, 51 of key and name, 8 to 16 of index (it doubles) */
	ck_assert_uint_le((st.mem_bytes - st0.mem_bytes) / 2048, 56 + 51 + 16 + 8);
	uint32_t a = host(f, "http://a.test"), b = host(f, "http://b.test");
	frontier_set_nonempty_cb(f, count_nonempty, NULL);
	frontier_stats(f, &st0);
	/* a's URLs go to the write buffer once b's fill the memory part */
	int nb = 0;
	for (; st.urls_on_disk == 0; nb++) {
		snprintf(url, sizeof url, "http://b.test/%d/%0100d", nb, 0);
		ck_assert_int_eq(frontier_push(f, b, url, strlen(url), NULL, 0, 0), FRONTIER_OK);
		frontier_stats(f, &st);
	}
	/* a's URL goes to the write buffer and comes back from it (a then
	 * empty, its records still in the buffer), round after round, until
	 * one of a's pushes is the one that flushes the buffer */
	int flushed_by_a = 0;
	for (int i = 0; i < 400 && !flushed_by_a; i++) {
		snprintf(url, sizeof url, "http://a.test/%d/%03000d", i, 0);
		frontier_stats(f, &st0);
		ck_assert_int_eq(frontier_push(f, a, url, strlen(url), NULL, 0, 0), FRONTIER_OK);
		frontier_stats(f, &st);
		flushed_by_a = st.flushes != st0.flushes;
		ck_assert_int_eq(nonempty_calls, 2 + i);
		ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_OK);
		ck_assert_str_eq(u.url, url);
		ck_assert_int_eq(frontier_pop(f, a, &u), FRONTIER_ERR_EMPTY);
		snprintf(url, sizeof url, "http://b.test/%d/%0100d", nb++, 0);
		ck_assert_int_eq(frontier_push(f, b, url, strlen(url), NULL, 0, 0), FRONTIER_OK);
	}
	ck_assert(flushed_by_a);
	ck_assert_uint_eq(frontier_host_queued(f, a), 0);
	/* every b URL comes back in order; then b costs no more than idle */
	for (int i = 0; i < nb; i++) {
		ck_assert_int_eq(frontier_pop(f, b, &u), FRONTIER_OK);
		snprintf(url, sizeof url, "http://b.test/%d/%0100d", i, 0);
		ck_assert_str_eq(u.url, url);
	}
	ck_assert_int_eq(frontier_pop(f, b, &u), FRONTIER_ERR_EMPTY);
	frontier_destroy(f);
}
END_TEST

START_TEST(bad_spill_dir)
{
	struct frontier_config c;
	struct frontier *f = (struct frontier *)&c;

	frontier_config_default(&c);
	c.spill_dir = "/nonexistent/dir/for/frontier";
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_ERR_IO);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(frontier_create(NULL, &f), FRONTIER_ERR_INVALID);
	ck_assert_str_eq(frontier_strerror(FRONTIER_ERR_EMPTY), "queue empty");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("frontier");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, host_table);
	tcase_add_test(tc, fifo_memory);
	tcase_add_test(tc, fifo_spill);
	tcase_add_test(tc, retire_accounting);
	tcase_add_test(tc, budgets);
	tcase_add_test(tc, depth_word);
	tcase_add_test(tc, host_counters_and_name);
	tcase_add_test(tc, nonempty_callback);
	tcase_add_test(tc, bad_spill_dir);
	tcase_add_test(tc, idle_hosts);
	tcase_add_test(tc, memory_account);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
