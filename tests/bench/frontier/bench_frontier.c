/*
 * Frontier and politeness benchmark driver.
 *
 *   bench_frontier ops HOSTS URLS_PER_HOST
 *     Operations per second with HOSTS hosts (IP politeness on, HOSTS/20
 *     IPs): frontier_push (enqueue), politeness_pop_ready + frontier_pop
 *     (pop-ready), politeness_release. Baseline measured in the same run: a
 *     plain (non-indexed) binary heap of the same size doing push+pop, so the
 *     ratio shows the cost of the two-level indexed heap on this machine.
 *   bench_frontier rss BUDGET_MIB URLS HOSTS SPILL_DIR
 *     Pushes URLS URLs over HOSTS hosts into a frontier with a BUDGET_MIB
 *     budget, then pops a sample of hosts to check order. Prints peak RSS,
 *     accounted memory and disk bytes. Exits 1 if the RSS exceeds the budget
 *     + 64 MiB or an URL comes back wrong.
 * Prints "name value unit" lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "politeness/politeness.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rs = 0x2545F4914F6CDD1Dull;
static uint64_t rng(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (s == NULL || *s == '\0')
		return -1;
	x = strtoull(s, &end, 10);
	if (*end != '\0')
		return -1;
	*v = x;
	return 0;
}

static long peak_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* Baseline: textbook binary heap of (key, id), no slot index. */
struct bent {
	uint64_t key;
	uint32_t id;
};

static void bh_push(struct bent *a, size_t *n, struct bent e)
{
	size_t i = (*n)++;
	while (i > 0 && a[(i - 1) / 2].key > e.key) {
		a[i] = a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	a[i] = e;
}

static struct bent bh_pop(struct bent *a, size_t *n)
{
	struct bent top = a[0], last = a[--*n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && a[c + 1].key < a[c].key)
			c++;
		if (a[c].key >= last.key)
			break;
		a[i] = a[c];
		i = c;
	}
	if (*n > 0)
		a[i] = last;
	return top;
}

static int bench_ops(uint64_t hosts, uint64_t per_host)
{
	struct frontier_config fc;
	struct politeness_config pc;
	struct frontier *f = NULL;
	struct politeness *p = NULL;
	struct bent *bh = NULL;
	size_t bn = 0;
	uint64_t total = hosts * per_host, pops = 0, t = 0, sink = 0;
	double t0, t_push, t_pop = 0, t_rel = 0, t_base;
	char buf[96];
	int rc = 1;

	frontier_config_default(&fc);
	fc.mem_budget = 4ull << 30; /* in memory: this measures the heap, not the disk */
	politeness_config_default(&pc);
	pc.host_delay_us = 1000;
	pc.ip_delay_us = 100;
	if (frontier_create(&fc, &f) != FRONTIER_OK ||
	    politeness_create(f, &pc, NULL, NULL, &p) != POLITENESS_OK)
		goto out;
	for (uint64_t h = 0; h < hosts; h++) {
		uint32_t id;
		int n = snprintf(buf, sizeof buf, "http://h%llu.web.test", (unsigned long long)h);
		if (frontier_host_get(f, buf, (size_t)n, 1, &id) != FRONTIER_OK)
			goto out;
		struct ip_addr ip;
		ip_addr_from_v4(&ip, (uint32_t)(h % (hosts / 20 + 1)));
		if (politeness_host_set_ip(p, id, &ip) != POLITENESS_OK)
			goto out;
	}
	t0 = now_s();
	for (uint64_t i = 0; i < total; i++) {
		uint64_t h = rng() % hosts;
		int n = snprintf(buf, sizeof buf, "http://h%llu.web.test/p/%llu",
		                 (unsigned long long)h, (unsigned long long)i);
		if (frontier_push(f, (uint32_t)h, buf, (size_t)n, NULL, 0, 1) != FRONTIER_OK)
			goto out;
	}
	t_push = now_s() - t0;
	/* pop-ready / release cycles on a clock that advances 1 us per pop */
	for (;;) {
		uint32_t h;
		uint64_t ready = 0;
		struct frontier_url u;
		struct visit_outcome o = { VISIT_OK, t, 1, 0 };
		double a = now_s(), b;
		enum politeness_err r = politeness_pop_ready(p, t, &h, &ready);
		if (r == POLITENESS_EMPTY)
			break;
		if (r == POLITENESS_NOT_READY) {
			t = ready;
			t_pop += now_s() - a;
			continue;
		}
		if (frontier_pop(f, h, &u) != FRONTIER_OK)
			goto out;
		sink += u.url_len;
		b = now_s();
		t_pop += b - a;
		if (politeness_release(p, h, &o, t + 10) != POLITENESS_OK)
			goto out;
		t_rel += now_s() - b;
		pops++;
		t += 1;
	}
	if (pops != total) {
		fprintf(stderr, "popped %llu of %llu\n", (unsigned long long)pops,
		        (unsigned long long)total);
		goto out;
	}
	/* baseline: plain heap push+pop with as many entries as hosts */
	bh = malloc(hosts * sizeof *bh);
	if (bh == NULL)
		goto out;
	for (uint64_t h = 0; h < hosts; h++)
		bh_push(bh, &bn, (struct bent){ rng() % 1000000, (uint32_t)h });
	t0 = now_s();
	for (uint64_t i = 0; i < total; i++) {
		struct bent e = bh_pop(bh, &bn);
		sink += e.id;
		e.key += 1000 + rng() % 1000;
		bh_push(bh, &bn, e);
	}
	t_base = now_s() - t0;
	printf("hosts %llu\n", (unsigned long long)hosts);
	printf("urls %llu\n", (unsigned long long)total);
	printf("enqueue %.0f ops/s\n", (double)total / t_push);
	printf("pop_ready %.0f ops/s (politeness_pop_ready + frontier_pop)\n",
	       (double)pops / t_pop);
	printf("release %.0f ops/s\n", (double)pops / t_rel);
	printf("baseline_plain_heap_push_pop %.0f ops/s\n", (double)total / t_base);
	printf("ratio_pop_release_vs_baseline %.2f (cycle time / plain heap push+pop time)\n",
	       ((t_pop + t_rel) / (double)pops) / (t_base / (double)total));
	printf("peak_rss %ld KiB\n", peak_rss_kib());
	rc = sink == 0 ? 1 : 0;
out:
	free(bh);
	politeness_destroy(p);
	frontier_destroy(f);
	if (rc != 0)
		fprintf(stderr, "bench ops failed\n");
	return rc;
}

static int bench_rss(uint64_t budget_mib, uint64_t urls, uint64_t hosts, const char *dir)
{
	struct frontier_config fc;
	struct frontier *f = NULL;
	struct frontier_stats st;
	uint64_t *in = NULL, peak_disk = 0;
	uint32_t *ids = NULL;
	char buf[128];
	double t0 = now_s(), t_push, t_pop;
	uint64_t checked = 0;
	long rss_kib, limit_kib = (long)((budget_mib + 64) * 1024);
	int rc = 1;

	in = calloc(hosts, sizeof *in);
	ids = calloc(hosts, sizeof *ids);
	if (in == NULL || ids == NULL)
		goto out;
	frontier_config_default(&fc);
	fc.mem_budget = budget_mib << 20;
	fc.spill_dir = dir;
	if (frontier_create(&fc, &f) != FRONTIER_OK) {
		fprintf(stderr, "frontier_create failed (spill dir %s)\n", dir);
		goto out;
	}
	for (uint64_t h = 0; h < hosts; h++) {
		int n = snprintf(buf, sizeof buf, "http://h%llu.web.test", (unsigned long long)h);
		if (frontier_host_get(f, buf, (size_t)n, 1, &ids[h]) != FRONTIER_OK)
			goto out;
	}
	for (uint64_t i = 0; i < urls; i++) {
		uint64_t h = rng() % hosts;
		int n = snprintf(buf, sizeof buf, "http://h%llu.web.test/page/%llu.html",
		                 (unsigned long long)h, (unsigned long long)in[h]);
		enum frontier_err e = frontier_push(f, ids[h], buf, (size_t)n, NULL, 0, 1);
		if (e != FRONTIER_OK) {
			fprintf(stderr, "push: %s\n", frontier_strerror(e));
			goto out;
		}
		in[h]++;
		if ((i & 0xfffff) == 0) {
			frontier_stats(f, &st);
			if (st.disk_bytes > peak_disk)
				peak_disk = st.disk_bytes;
		}
	}
	t_push = now_s() - t0;
	frontier_stats(f, &st);
	if (st.disk_bytes > peak_disk)
		peak_disk = st.disk_bytes;
	rss_kib = peak_rss_kib();
	printf("budget %llu MiB\n", (unsigned long long)budget_mib);
	printf("urls_queued %llu over %llu hosts\n", (unsigned long long)st.urls_queued,
	       (unsigned long long)hosts);
	printf("urls_in_memory %llu\n", (unsigned long long)st.urls_in_memory);
	printf("urls_on_disk %llu\n", (unsigned long long)st.urls_on_disk);
	printf("accounted_memory %llu bytes\n", (unsigned long long)st.mem_bytes);
	printf("disk_bytes %llu\n", (unsigned long long)peak_disk);
	printf("segments %llu\n", (unsigned long long)st.segments);
	printf("enqueue %.0f URLs/s (with spill)\n", (double)urls / t_push);
	printf("peak_rss_after_enqueue %ld KiB (limit %ld KiB)\n", rss_kib, limit_kib);
	/* take back every URL of a sample of hosts (reads spilled data) */
	t0 = now_s();
	for (uint64_t h = 0; h < hosts; h += hosts / 100 + 1) {
		for (uint64_t k = 0; k < in[h]; k++) {
			struct frontier_url u;
			int n = snprintf(buf, sizeof buf, "http://h%llu.web.test/page/%llu.html",
			                 (unsigned long long)h, (unsigned long long)k);
			if (frontier_pop(f, ids[h], &u) != FRONTIER_OK || u.url_len != (size_t)n ||
			    memcmp(u.url, buf, (size_t)n) != 0) {
				fprintf(stderr, "host %llu URL %llu wrong\n", (unsigned long long)h,
				        (unsigned long long)k);
				goto out;
			}
			checked++;
		}
	}
	t_pop = now_s() - t0;
	rss_kib = peak_rss_kib();
	printf("pop_checked %llu URLs, %.0f URLs/s (from disk)\n", (unsigned long long)checked,
	       checked > 0 ? (double)checked / t_pop : 0.0);
	printf("peak_rss %ld KiB (limit %ld KiB)\n", rss_kib, limit_kib);
	if (rss_kib > limit_kib) {
		fprintf(stderr, "FAIL: peak RSS %ld KiB over budget + 64 MiB\n", rss_kib);
		goto out;
	}
	if (urls > 0 && checked == 0) {
		fprintf(stderr, "FAIL: nothing checked\n");
		goto out;
	}
	rc = 0;
out:
	frontier_destroy(f);
	free(in);
	free(ids);
	return rc;
}

int main(int argc, char **argv)
{
	uint64_t a, b, c;

	if (argc == 4 && strcmp(argv[1], "ops") == 0 && parse_u64(argv[2], &a) == 0 &&
	    parse_u64(argv[3], &b) == 0 && a > 0 && b > 0)
		return bench_ops(a, b);
	if (argc == 6 && strcmp(argv[1], "rss") == 0 && parse_u64(argv[2], &a) == 0 &&
	    parse_u64(argv[3], &b) == 0 && parse_u64(argv[4], &c) == 0 && a > 0 && c > 0)
		return bench_rss(a, b, c, argv[5]);
	fprintf(stderr,
	        "usage: %s ops HOSTS URLS_PER_HOST\n"
	        "       %s rss BUDGET_MIB URLS HOSTS SPILL_DIR\n",
	        argv[0], argv[0]);
	return 2;
}
