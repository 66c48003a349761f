/*
 * Large disk-spill test: 10 million URLs over 100,000 hosts pass through a
 * frontier with a 64 MiB budget (normal build). Pushes and pops are
 * interleaved in random host order, then every queue is drained. Asserts,
 * after every operation, that the accounted memory stays under the budget
 * (plus one record), and at the end that every URL came out exactly once and
 * in per-host order, and that the spill segments were reclaimed.
 *
 * Size: CRAWLER_TEST_SCALE (a factor, default 1; 0.2 under sanitizers)
 * scales URLs and hosts (0.2 under sanitizers). A plain program (not Check) to avoid fork overhead
 * on a 10M-operation loop; exits non-zero with a message on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontier/frontier.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

static double scale(void)
{
	const char *e = getenv("CRAWLER_TEST_SCALE");
	double s = SANITIZED ? 0.2 : 1.0;

	if (e != NULL) {
		char *end;
		double v = strtod(e, &end);
		if (end != e && v > 0 && v <= 10)
			s = v;
	}
	return s;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int url_of(char *buf, size_t n, uint64_t h, uint64_t seq)
{
	return snprintf(buf, n, "http://h%llu.t/%llu", (unsigned long long)h,
	                (unsigned long long)seq);
}

int main(void)
{
	double sc = scale();
	uint64_t total = (uint64_t)(10000000 * sc), nhosts = (uint64_t)(100000 * sc);
	uint64_t budget = 64ull << 20, pushed = 0, popped = 0, peak_disk = 0, peak_mem = 0;
	uint64_t *in, *out;
	uint32_t *ids;
	struct frontier_config c;
	struct frontier *f = NULL;
	struct frontier_stats st;
	struct frontier_url u;
	char buf[128];
	clock_t t0 = clock();

	if (nhosts < 10)
		nhosts = 10;
	if (SANITIZED || sc < 1)
		budget = 8ull << 20;
	in = calloc(nhosts, sizeof *in);
	out = calloc(nhosts, sizeof *out);
	ids = calloc(nhosts, sizeof *ids);
	if (in == NULL || out == NULL || ids == NULL)
		FAIL("calloc");
	frontier_config_default(&c);
	c.spill_dir = "/tmp";
	c.mem_budget = budget;
	c.segment_bytes = 16ull << 20;
	if (frontier_create(&c, &f) != FRONTIER_OK)
		FAIL("frontier_create");
	for (uint64_t h = 0; h < nhosts; h++) {
		int n = snprintf(buf, sizeof buf, "http://h%llu.t", (unsigned long long)h);
		if (frontier_host_get(f, buf, (size_t)n, 1, &ids[h]) != FRONTIER_OK || ids[h] != h)
			FAIL("host_get %llu", (unsigned long long)h);
	}
	/* Phase 1: 70% pushes, 30% pops in random hosts, until all are pushed.
	 * Phase 2: drain every host. */
	while (pushed < total) {
		uint64_t h = rng() % nhosts;
		enum frontier_err e;
		if (rng() % 10 < 7) {
			int n = url_of(buf, sizeof buf, h, in[h]);
			e = frontier_push(f, ids[h], buf, (size_t)n, NULL, 0,
			                  (uint32_t)(in[h] & 0xff));
			if (e != FRONTIER_OK)
				FAIL("push: %s", frontier_strerror(e));
			in[h]++;
			pushed++;
		} else {
			e = frontier_pop(f, ids[h], &u);
			if (out[h] == in[h]) {
				if (e != FRONTIER_ERR_EMPTY)
					FAIL("pop of empty host %llu: %s", (unsigned long long)h,
					     frontier_strerror(e));
				continue;
			}
			if (e != FRONTIER_OK)
				FAIL("pop: %s", frontier_strerror(e));
			int n = url_of(buf, sizeof buf, h, out[h]);
			if (u.url_len != (size_t)n || memcmp(u.url, buf, (size_t)n) != 0 ||
			    u.depth != (out[h] & 0xff))
				FAIL("host %llu: got %s want %s", (unsigned long long)h, u.url,
				     buf);
			out[h]++;
			popped++;
		}
		frontier_stats(f, &st);
		if (st.mem_bytes > budget + 2 * FRONTIER_URL_MAX + 64)
			FAIL("memory %llu over budget %llu", (unsigned long long)st.mem_bytes,
			     (unsigned long long)budget);
		if (st.disk_bytes > peak_disk)
			peak_disk = st.disk_bytes;
		if (st.mem_bytes > peak_mem)
			peak_mem = st.mem_bytes;
	}
	frontier_stats(f, &st);
	printf("phase 1: pushed %llu popped %llu queued %llu (memory %llu, disk %llu) "
	       "flushes %llu refills %llu\n",
	       (unsigned long long)pushed, (unsigned long long)popped,
	       (unsigned long long)st.urls_queued, (unsigned long long)st.urls_in_memory,
	       (unsigned long long)st.urls_on_disk, (unsigned long long)st.flushes,
	       (unsigned long long)st.refills);
	if (st.urls_on_disk == 0 || st.flushes == 0)
		FAIL("nothing went to disk: the test does not test the spill");
	for (uint64_t h = 0; h < nhosts; h++) {
		while (out[h] < in[h]) {
			enum frontier_err e = frontier_pop(f, ids[h], &u);
			int n;
			if (e != FRONTIER_OK)
				FAIL("drain pop host %llu: %s", (unsigned long long)h,
				     frontier_strerror(e));
			n = url_of(buf, sizeof buf, h, out[h]);
			if (u.url_len != (size_t)n || memcmp(u.url, buf, (size_t)n) != 0)
				FAIL("drain host %llu: got %s want %s", (unsigned long long)h,
				     u.url, buf);
			out[h]++;
			popped++;
			frontier_stats(f, &st);
			if (st.mem_bytes > budget + 2 * FRONTIER_URL_MAX + 64)
				FAIL("memory over budget while draining");
		}
		if (frontier_pop(f, ids[h], &u) != FRONTIER_ERR_EMPTY)
			FAIL("host %llu has more URLs than pushed", (unsigned long long)h);
	}
	frontier_stats(f, &st);
	if (popped != total || st.urls_queued != 0 || st.urls_on_disk != 0 || st.popped != total)
		FAIL("popped %llu of %llu", (unsigned long long)popped, (unsigned long long)total);
	if (st.segments > 1)
		FAIL("%llu segments not reclaimed", (unsigned long long)st.segments);
	printf("ok: %llu URLs over %llu hosts, budget %llu MiB, peak accounted memory %llu, "
	       "peak disk %llu bytes, %llu flushes, %llu refills, %.1f s CPU\n",
	       (unsigned long long)total, (unsigned long long)nhosts,
	       (unsigned long long)(budget >> 20), (unsigned long long)peak_mem,
	       (unsigned long long)peak_disk, (unsigned long long)st.flushes,
	       (unsigned long long)st.refills, (double)(clock() - t0) / CLOCKS_PER_SEC);
	frontier_destroy(f);
	free(in);
	free(out);
	free(ids);
	return 0;
}
