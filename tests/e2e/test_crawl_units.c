/*
 * Unit tests of the crawl's glue: configuration (crawler/config/config.h), the
 * bounded queue (frontier/base/bqueue.h), the parse pool (parse/parse_pool.h),
 * the side table of URLs waiting in the sieve (crawler/link_meta.h) and the
 * counters a checkpoint carries (crawler/crawl_stats.h).
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier/base/bqueue.h"
#include "frontier/base/recfile.h"
#include "crawler/config/config.h"
#include "crawler/crawl_stats.h"
#include "crawler/link_meta.h"
#include "crawler/sitemap_registry.h"
#include "parse/parse_pool.h"

#ifndef CONFIGS_DIR
#define CONFIGS_DIR "configs"
#endif

static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/crawl_cfg_XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

START_TEST(config_defaults_and_set)
{
	struct crawl_config c;
	char err[CRAWL_CONFIG_ERR_MAX];
	ck_assert_int_eq(crawl_config_default(&c), 0);
	ck_assert_uint_eq(c.politeness.host_delay_us, 2000000);
	ck_assert_ptr_nonnull(strstr(c.crawl.user_agent, "CONTACT-ME"));
	ck_assert_int_eq(
	        crawl_config_set(&c, "politeness", "host_delay_ms", "150", err, sizeof err),
	        CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.politeness.host_delay_us, 150000);
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "policy", "ratio", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_int_eq(c.politeness.policy, 1);
	/* Bad values leave the struct unchanged and name the key. */
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "host_delay_ms", "-5", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "host_delay_ms"));
	ck_assert_uint_eq(c.politeness.host_delay_us, 150000);
	ck_assert_int_eq(
	        crawl_config_set(&c, "politeness", "host_delay_ms", "12abc", err, sizeof err),
	        CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "fetch", "max_connections", "0", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "ratio", "1.5", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(
	        crawl_config_set(&c, "fetch", "allow_private_networks", "maybe", err, sizeof err),
	        CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "no_such_key", "1", err, sizeof err),
	                 CRAWL_CONFIG_ERR_UNKNOWN_KEY);
	ck_assert_ptr_nonnull(strstr(err, "no_such_key"));
	ck_assert_int_eq(
	        crawl_config_set(&c, "crawl", "domains", "Example.ORG, .web.test", err, sizeof err),
	        CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.crawl.n_domains, 2);
	ck_assert_str_eq(c.crawl.domains[0], "example.org");
	ck_assert_str_eq(c.crawl.domains[1], "web.test");
	crawl_config_free(&c);
}
END_TEST

START_TEST(config_file_errors_name_line_and_key)
{
	struct crawl_config c;
	char err[CRAWL_CONFIG_ERR_MAX];
	ck_assert_int_eq(crawl_config_default(&c), 0);
	char *p =
	        write_tmp("# comment\n[fetch]\nmax_connections = 10\n\n[politeness]\nbogus = 3\n");
	ck_assert_int_eq(crawl_config_load(&c, p, err, sizeof err), CRAWL_CONFIG_ERR_UNKNOWN_KEY);
	ck_assert_ptr_nonnull(strstr(err, p));
	ck_assert_ptr_nonnull(strstr(err, ":6:"));
	ck_assert_ptr_nonnull(strstr(err, "bogus"));
	ck_assert_uint_eq(c.fetch.max_connections, 10); /* lines before the error applied */
	unlink(p);
	free(p);
	p = write_tmp("[dns]\ntimeout_ms = fast\n");
	ck_assert_int_eq(crawl_config_load(&c, p, err, sizeof err), CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, ":2:"));
	ck_assert_ptr_nonnull(strstr(err, "timeout_ms"));
	unlink(p);
	free(p);
	ck_assert_int_eq(crawl_config_load(&c, "/nonexistent/x.conf", err, sizeof err),
	                 CRAWL_CONFIG_ERR_IO);
	crawl_config_free(&c);
}
END_TEST

START_TEST(config_shipped_files_load)
{
	static const char *files[] = { "default.conf", "polite.conf", "research.conf",
		                       "testweb.conf", "archival.conf" };
	for (size_t i = 0; i < 5; i++) {
		struct crawl_config c;
		char err[CRAWL_CONFIG_ERR_MAX] = "";
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", CONFIGS_DIR, files[i]);
		ck_assert_int_eq(crawl_config_default(&c), 0);
		enum crawl_config_err e = crawl_config_load(&c, path, err, sizeof err);
		ck_assert_msg(e == CRAWL_CONFIG_OK, "%s: %s", path, err);
		/* Requisites: on in the archival configuration only, and the
		 * extractor's setting follows the key. */
		bool archival = i == 4;
		ck_assert_int_eq(c.crawl.page_requisites, archival);
		ck_assert_int_eq(c.links.requisites, archival);
		crawl_config_free(&c);
	}
}
END_TEST

START_TEST(bqueue_fifo_full_close)
{
	struct bqueue *q = bqueue_create(3);
	int v[4];
	void *out;
	ck_assert_ptr_nonnull(q);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(bqueue_try_push(q, &v[i]), BQUEUE_OK);
	ck_assert_int_eq(bqueue_try_push(q, &v[3]), BQUEUE_FULL);
	ck_assert_uint_eq(bqueue_size(q), 3);
	ck_assert_int_eq(bqueue_try_pop(q, &out), BQUEUE_OK);
	ck_assert_ptr_eq(out, &v[0]);
	ck_assert_int_eq(bqueue_try_push(q, &v[3]), BQUEUE_OK);
	bqueue_close(q);
	ck_assert_int_eq(bqueue_try_push(q, &v[0]), BQUEUE_CLOSED);
	for (int i = 1; i < 4; i++) {
		ck_assert_int_eq(bqueue_pop(q, &out), BQUEUE_OK);
		ck_assert_ptr_eq(out, &v[i]);
	}
	ck_assert_int_eq(bqueue_pop(q, &out), BQUEUE_CLOSED);
	bqueue_destroy(q);
	bqueue_destroy(NULL);
	ck_assert_ptr_null(bqueue_create(0));
}
END_TEST

struct mp {
	struct bqueue *q;
	int base;
};

static void *producer(void *arg)
{
	struct mp *m = arg;
	for (intptr_t i = 0; i < 10000; i++)
		ck_assert_int_eq(bqueue_push(m->q, (void *)(intptr_t)(m->base + i + 1)), BQUEUE_OK);
	return NULL;
}

START_TEST(bqueue_mpmc_every_item_once)
{
	struct bqueue *q = bqueue_create(16);
	pthread_t t[4];
	struct mp m[4];
	static unsigned char seen[40001];
	memset(seen, 0, sizeof seen);
	for (int i = 0; i < 4; i++) {
		m[i].q = q;
		m[i].base = i * 10000;
		pthread_create(&t[i], NULL, producer, &m[i]);
	}
	for (int n = 0; n < 40000; n++) {
		void *out;
		ck_assert_int_eq(bqueue_pop(q, &out), BQUEUE_OK);
		intptr_t k = (intptr_t)out;
		ck_assert(k >= 1 && k <= 40000);
		ck_assert_int_eq(seen[k], 0);
		seen[k] = 1;
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(bqueue_size(q), 0);
	bqueue_destroy(q);
}
END_TEST

struct pool_ctx {
	atomic_int done;
	atomic_int sum;
	atomic_int inits, finis;
	pthread_mutex_t gate;
};

static void *pinit(void *ctx)
{
	struct pool_ctx *c = ctx;
	atomic_fetch_add(&c->inits, 1);
	return malloc(1);
}

static void pwork(void *ctx, void *state, void *job)
{
	struct pool_ctx *c = ctx;
	ck_assert_ptr_nonnull(state);
	pthread_mutex_lock(&c->gate); /* lets the test hold workers back */
	pthread_mutex_unlock(&c->gate);
	atomic_fetch_add(&c->sum, *(int *)job);
	atomic_fetch_add(&c->done, 1);
	free(job);
}

static void pfini(void *ctx, void *state)
{
	struct pool_ctx *c = ctx;
	atomic_fetch_add(&c->finis, 1);
	free(state);
}

/* A pool of `threads` (0: the default) over c, 4 jobs queued at most. */
static struct parse_pool *pool_start(struct pool_ctx *c, unsigned threads)
{
	const struct parse_pool_ops ops = { pinit, pwork, pfini };
	struct parse_pool *p;
	memset(c, 0, sizeof *c);
	pthread_mutex_init(&c->gate, NULL);
	ck_assert_int_eq(parse_pool_create(threads, 4, &ops, c, &p), PARSE_POOL_OK);
	return p;
}

START_TEST(parse_pool_bounded_and_complete)
{
	struct pool_ctx c;
	struct parse_pool *p = pool_start(&c, 2);
	pthread_mutex_lock(&c.gate); /* workers block on the first jobs */
	ck_assert_uint_eq(parse_pool_threads(p), 2);
	int submitted = 0, expect = 0;
	/* 2 jobs can be taken by the blocked workers, 4 wait: then FULL. */
	for (int i = 0; i < 100; i++) {
		int *j = malloc(sizeof *j);
		*j = i;
		enum parse_pool_err e = parse_pool_try_submit(p, j);
		if (e == PARSE_POOL_ERR_FULL) {
			free(j);
			break;
		}
		ck_assert_int_eq(e, PARSE_POOL_OK);
		submitted++;
		expect += i;
		usleep(2000);
	}
	ck_assert_int_le(submitted, 6);
	ck_assert_int_ge(submitted, 4);
	ck_assert_uint_le(parse_pool_queued(p), 4);
	ck_assert_uint_eq(parse_pool_outstanding(p), (uint64_t)submitted);
	pthread_mutex_unlock(&c.gate);
	while (parse_pool_outstanding(p) > 0)
		usleep(1000);
	ck_assert_int_eq(atomic_load(&c.done), submitted);
	ck_assert_int_eq(atomic_load(&c.sum), expect);
	/* Jobs queued at destroy are still run. */
	for (int i = 0; i < 4; i++) {
		int *j = malloc(sizeof *j);
		*j = 1;
		ck_assert_int_eq(parse_pool_try_submit(p, j), PARSE_POOL_OK);
	}
	parse_pool_destroy(p);
	ck_assert_int_eq(atomic_load(&c.done), submitted + 4);
	ck_assert_int_eq(atomic_load(&c.inits), 2);
	ck_assert_int_eq(atomic_load(&c.finis), 2);
	parse_pool_destroy(NULL);
	pthread_mutex_destroy(&c.gate);
}
END_TEST

/* 0 threads: one fewer than the cores (the loop and the writer need one),
 * but never none. */
START_TEST(parse_pool_default_threads)
{
	struct pool_ctx c;
	struct parse_pool *p = pool_start(&c, 0);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	ck_assert_uint_eq(parse_pool_threads(p), cores > 1 ? (unsigned)(cores - 1) : 1u);
	parse_pool_destroy(p);
	ck_assert_int_eq(atomic_load(&c.inits), atomic_load(&c.finis));
	pthread_mutex_destroy(&c.gate);
}
END_TEST

START_TEST(config_sieve_keys)
{
	struct crawl_config c;
	char err[CRAWL_CONFIG_ERR_MAX];
	ck_assert_int_eq(crawl_config_default(&c), 0);
	ck_assert_str_eq(c.sieve.impl, "mercator");
	ck_assert_uint_eq(c.sieve.memory, 64u << 20);
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "memory", "256M", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.sieve.memory, 256u << 20);
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "memory", "1536KiB", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.sieve.memory, 1536u << 10);
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "memory", "1048576", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.sieve.memory, 1u << 20);
	/* below the sieve's minimum, junk suffix, fractions of a byte: refused, unchanged */
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "memory", "256K", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "memory"));
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "memory", "64Q", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "memory", "1000000.5", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_uint_eq(c.sieve.memory, 1u << 20);
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "impl", "mercator", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_int_eq(crawl_config_set(&c, "sieve", "impl", "nosuchsieve", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "impl"));
	ck_assert_str_eq(c.sieve.impl, "mercator");
	char *p = write_tmp("[sieve]\nmemory = 32M\nimpl = bloomish\n");
	ck_assert_int_eq(crawl_config_load(&c, p, err, sizeof err), CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, p));
	ck_assert_ptr_nonnull(strstr(err, ":3:"));
	ck_assert_ptr_nonnull(strstr(err, "impl"));
	ck_assert_uint_eq(c.sieve.memory, 32u << 20);
	unlink(p);
	free(p);
	crawl_config_free(&c);
}
END_TEST

/* The sitemap registry: an entry is taken once, with its level and scope;
 * a second add keeps the first; the cap refuses more. */
START_TEST(sitemap_registry_take_once_and_cap)
{
	struct sitemap_registry *r = sitemap_registry_create(2);
	ck_assert_ptr_nonnull(r);
	const char *a = "http://a.test/sitemap.xml", *b = "http://b.test/s.xml.gz";
	ck_assert_int_eq(sitemap_registry_add(r, a, strlen(a), 0, "http://a.test/robots.txt"), 0);
	ck_assert_int_eq(sitemap_registry_add(r, a, strlen(a), 1, NULL), 1);
	ck_assert_int_eq(sitemap_registry_add(r, b, strlen(b), 1, NULL), 0);
	ck_assert_int_eq(sitemap_registry_add(r, "http://c.test/", 14, 0, NULL), -1); /* full */
	unsigned level = 9;
	char *scope = NULL;
	ck_assert_int_eq(sitemap_registry_take(r, "http://a.test/", &level, &scope), 0);
	ck_assert_int_eq(sitemap_registry_take(r, a, &level, &scope), 1);
	ck_assert_uint_eq(level, 0);
	ck_assert_str_eq(scope, "http://a.test/robots.txt");
	free(scope);
	ck_assert_int_eq(sitemap_registry_take(r, a, &level, &scope), 0); /* taken once */
	ck_assert_int_eq(sitemap_registry_take(r, b, &level, &scope), 1);
	ck_assert_uint_eq(level, 1);
	ck_assert_ptr_null(scope);
	/* room again */
	ck_assert_int_eq(sitemap_registry_add(r, "http://c.test/", 14, 0, NULL), 0);
	sitemap_registry_destroy(r);
	sitemap_registry_destroy(NULL);
}
END_TEST

START_TEST(link_meta_put_take_first_writer)
{
	struct link_meta *m = link_meta_create(1u << 20);
	ck_assert_ptr_nonnull(m);
	struct link_meta_via *a = link_meta_via_new(m, "http://a/", 9);
	struct link_meta_via *b = link_meta_via_new(m, "http://b/", 9);
	uint64_t t1, t2, flushes = 0;
	for (uint64_t sig = 1; sig <= 5000; sig++)
		ck_assert_int_eq(link_meta_put(m, sig * 0x9E3779B97F4A7C15u, (uint32_t)sig, a,
		                               flushes, 0, &t1),
		                 LINK_META_ADDED);
	/* first writer wins: b does not replace a */
	ck_assert_int_eq(link_meta_put(m, 7 * 0x9E3779B97F4A7C15u, 99, b, flushes, 0, &t2),
	                 LINK_META_PRESENT);
	link_meta_via_release(m, a);
	link_meta_via_release(m, b); /* b had no entry: freed now */
	for (uint64_t sig = 1; sig <= 5000; sig++) {
		uint32_t depth;
		struct link_meta_via *v;
		ck_assert_int_eq(link_meta_take(m, sig * 0x9E3779B97F4A7C15u, &depth, &v),
		                 LINK_META_PRESENT);
		ck_assert_uint_eq(depth, sig);
		size_t len;
		ck_assert_str_eq(link_meta_via_str(v, &len), "http://a/");
		link_meta_via_release(m, v);
		ck_assert_int_eq(link_meta_take(m, sig * 0x9E3779B97F4A7C15u, &depth, &v),
		                 LINK_META_MISSING);
	}
	struct link_meta_stats st;
	link_meta_stats(m, &st);
	ck_assert_uint_eq(st.entries, 0);
	ck_assert_uint_eq(st.peak_entries, 5000);
	ck_assert_uint_eq(st.via_bytes, 0); /* every reference returned */
	link_meta_destroy(m);
	link_meta_destroy(NULL);
}
END_TEST

START_TEST(link_meta_sweep_rules)
{
	struct link_meta *m = link_meta_create(1u << 20);
	struct link_meta_via *v = link_meta_via_new(m, "", 0);
	uint64_t ta, tb, tc;
	ck_assert_int_eq(link_meta_put(m, 11, 1, v, 0, 0, &ta), LINK_META_ADDED);
	ck_assert_int_eq(link_meta_put(m, 22, 1, v, 0, 0, &tb), LINK_META_ADDED);
	ck_assert_int_eq(link_meta_put(m, 33, 1, v, 0, 0, &tc), LINK_META_ADDED);
	/* in progress: never swept, whatever the rules say */
	ck_assert_uint_eq(link_meta_sweep(m, 1000, UINT64_MAX), 0);
	/* a wrong ticket does not mark another writer's entry done */
	link_meta_done(m, 11, ta + 1000, 5);
	ck_assert_uint_eq(link_meta_sweep(m, 1000, UINT64_MAX), 0);
	link_meta_done(m, 11, ta, 5);                   /* added when 5 flushes had completed */
	ck_assert_uint_eq(link_meta_sweep(m, 7, 0), 0); /* may still be in a buffer */
	ck_assert_uint_eq(link_meta_sweep(m, 8, 0), 1); /* 5 + 3: certainly processed */
	uint64_t before = link_meta_clock(m);
	link_meta_done(m, 22, tb, 100);
	ck_assert_uint_eq(link_meta_sweep(m, 100, before), 0); /* done after the clock read */
	uint64_t after = link_meta_clock(m);
	link_meta_done(m, 33, tc, 100);
	ck_assert_uint_eq(link_meta_sweep(m, 100, after), 1); /* 22: done before "after" */
	uint32_t d;
	struct link_meta_via *got;
	ck_assert_int_eq(link_meta_take(m, 33, &d, &got), LINK_META_PRESENT);
	link_meta_via_release(m, got);
	ck_assert_int_eq(link_meta_take(m, 22, &d, &got), LINK_META_MISSING);
	link_meta_via_release(m, v);
	link_meta_destroy(m);
}
END_TEST

START_TEST(link_meta_bounded)
{
	/* 64 KiB: a handful of entries per stripe and 32 KiB of via strings */
	struct link_meta *m = link_meta_create(64u * 1024);
	ck_assert_ptr_nonnull(m);
	struct link_meta_via *v = link_meta_via_new(m, "http://v/", 9);
	struct link_meta_stats st;
	link_meta_stats(m, &st);
	uint64_t t, full = 0, added = 0;
	for (uint64_t i = 1; i <= 4 * st.capacity; i++) {
		enum link_meta_result r = link_meta_put(m, i * 0x9E3779B97F4A7C15u, 0, v, 0, 0, &t);
		if (r == LINK_META_FULL)
			full++;
		else if (r == LINK_META_ADDED)
			added++;
	}
	link_meta_stats(m, &st);
	ck_assert_uint_eq(added, st.capacity); /* never more entries than the pool */
	ck_assert_uint_ge(full, 3 * st.capacity);
	ck_assert_uint_eq(st.entries, st.capacity);
	link_meta_via_release(m, v);
	link_meta_destroy(m); /* releases the entries' references: v is freed */
	m = link_meta_create(64u * 1024);
	/* via strings past their half: FULL unless forced */
	char big[40000];
	memset(big, 'x', sizeof big);
	struct link_meta_via *huge = link_meta_via_new(m, big, sizeof big);
	ck_assert_int_eq(link_meta_put(m, 42, 0, huge, 0, 0, &t), LINK_META_FULL);
	ck_assert_int_eq(link_meta_put(m, 42, 0, huge, 0, 1, &t), LINK_META_ADDED);
	link_meta_via_release(m, huge);
	link_meta_destroy(m);
}
END_TEST

/* The counters a checkpoint carries, by the names every earlier version
 * wrote them under (its crawl state record), and where stats.json shows
 * each ("" for the few it does not show). A checkpoint of any earlier
 * version must resume with every one of them. */
static const struct {
	const char *name, *key;
} saved_names[] = {
	{ "pages_done", "pages" },
	{ "requests", "requests" },
	{ "bytes", "bytes" },
	{ "robots_fetches", "robots_fetches" },
	{ "robots_disallowed", "robots-disallowed" },
	{ "redirects", "redirects" },
	{ "private_refused", "private-address" },
	{ "parse_full", "parse-queue-full" },
	{ "writer_full", "writer-queue-full" },
	{ "hosts_dns_failed", "dns_failed" },
	{ "family_fallbacks", "family_fallbacks" },
	{ "ip_lease_refused", "ip-lease-refused" },
	{ "ip_lease_errors", "ip-lease-redis" },
	{ "redirect_dropped", "redirect-dropped" },
	{ "rules_dropped", "dropped_queued" },
	{ "ac.rules_rejected", "" },
	{ "redirect_limit", "redirect-limit" },
	{ "robots_redirect_limit", "robots-redirect-limit" },
	{ "robots_unreachable", "robots-unreachable" },
	{ "robots_undecodable", "robots-undecodable" },
	{ "inbox_rejected", "inbox-rejected" },
	{ "hosts_robots_retired", "robots_retired" },
	{ "disallowed_yields", "disallowed_yields" },
	{ "status_other", "other" },
	{ "forced_flushes", "forced_flushes" },
	{ "early_flushes", "early_flushes" },
	{ "ckpt_count", "written" },
	{ "ckpt_failures", "failed" },
	{ "ckpt_us_total", "" },
	{ "ckpt_us_max", "" },
	{ "tail_replayed", "tail_replayed" },
	{ "tail_lines_skipped", "tail_lines_skipped" },
	{ "tail_skipped", "tail_skipped" },
	{ "tail_recovered", "tail_recovered" },
	{ "ac.parsed", "parsed" },
	{ "ac.links", "links" },
	{ "ac.scope_rejected", "" },
	{ "ac.nofollow", "nofollow" },
	{ "ac.near_dups", "near_duplicates" },
	{ "ac.decode_errors", "decode" },
	{ "ac.emit_dropped", "emit-dropped" },
	{ "ac.writer_errors", "writer-io" },
	{ "ac.warc_revisits", "warc_revisits" },
	{ "ac.url_invalid", "url-invalid" },
	{ "ac.seeds_invalid", "seed-invalid" },
	{ "ac.meta_present", "skipped_present" },
	{ "ac.meta_dropped", "sieve-meta-dropped" },
	{ "ac.meta_missing", "sieve-meta-missing" },
	{ "ac.meta_flushes", "meta_full_flushes" },
	{ "ac.sieve_errors", "sieve" },
	{ "ac.emits_pushed", "links_new" },
	{ "ac.keys_added", "" },
	{ "ac.sitemaps", "parsed" },
	{ "ac.sitemap_urls", "urls" },
	{ "ac.sitemap_problems", "problems" },
	{ "ac.sitemaps_dropped", "not_registered" },
	{ "ac.sitemap_malformed", "sitemap-malformed" },
	{ "ac.sitemap_too_large", "sitemap-too-large" },
	{ "ac.sitemap_too_many", "sitemap-too-many-urls" },
	{ "ac.sitemap_urls_over_limit", "urls_over_limit" },
	{ "ac.embeds", "found" },
	{ "ac.embeds_added", "added" },
	{ "ac.embeds_off_domain", "off_domain" },
	{ "ac.stylesheets", "stylesheets_parsed" },
	{ "conditional", "conditional" },
	{ "ac.earlier_parsed", "earlier_parsed" },
	{ "ac.earlier_unreadable", "earlier_unreadable" },
	{ "ac.index_records_unreadable", "index_records_unreadable" },
	{ "ac.focus_scored", "pages_scored" },
	{ "ac.focus_on_topic", "on_topic" },
	{ "ac.focus_score_sum", "" }, /* shown as focus.mean_score */
};
#define N_SAVED_NAMES (sizeof saved_names / sizeof saved_names[0])

static void put_array(struct recfile_writer *w, uint32_t n, uint32_t at, uint64_t v)
{
	recfile_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		recfile_put_u64(w, i == at ? v : 0);
}

/* A crawl state's counters as an earlier version wrote them, one unknown
 * name among them (a later version's, skipped). */
static void write_old_counters(const char *path)
{
	struct recfile_writer *w;
	ck_assert_int_eq(recfile_writer_create(path, "TSTATE01", &w), RECFILE_OK);
	recfile_put_u64(w, 5000000); /* crawl time so far, us */
	recfile_put_u32(w, (uint32_t)N_SAVED_NAMES + 1);
	for (size_t i = 0; i < N_SAVED_NAMES; i++) {
		if (i == 3) {
			recfile_put_bytes(w, "ac.a_later_counter", 18);
			recfile_put_u64(w, 999999);
		}
		recfile_put_bytes(w, saved_names[i].name, (uint32_t)strlen(saved_names[i].name));
		recfile_put_u64(w, 1000 + i);
	}
	put_array(w, 600, 200, 77); /* status: 77 x 200 */
	put_array(w, 17, 3, 78);    /* dns errors: 78 notfound */
	put_array(w, 17, 6, 79);    /* fetch errors: 79 connect */
	recfile_put_u32(w, 2);      /* pages/s samples */
	recfile_put_u64(w, 40);
	recfile_put_u64(w, 60);
	ck_assert_int_eq(recfile_writer_close(w, 0), RECFILE_OK);
}

START_TEST(stats_checkpoint_counters_by_name)
{
	char dir[] = "/tmp/crawl_stats_XXXXXX", path[64], again[64], name[128];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/old", dir);
	snprintf(again, sizeof again, "%s/again", dir);
	write_old_counters(path);
	struct crawl_stats_sources src = { .resumed = 1 }; /* no piece stands */
	struct crawl_output out = { .dir = dir, .warc = 1, .stats_interval_s = 10 };
	struct crawl_stats *s = crawl_stats_create(&src, &out, NULL);
	struct recfile_reader *rd;
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(recfile_reader_open(path, "TSTATE01", &rd), RECFILE_OK);
	ck_assert_int_eq(crawl_stats_load(s, rd), 0);
	recfile_reader_close(rd);
	crawl_stats_start(s);
	ck_assert_uint_eq(crawl_stats_pages_before(s), 1000);
	/* stats.json shows every counter under its key */
	char *json = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&json, &len);
	ck_assert_int_eq(crawl_stats_write(f, s, CRAWL_STATS_JSON), 0);
	fclose(f);
	for (size_t i = 0; i < N_SAVED_NAMES; i++) {
		char want[96];
		if (!saved_names[i].key[0])
			continue;
		snprintf(want, sizeof want, "\"%s\": %zu", saved_names[i].key, 1000 + i);
		ck_assert_msg(strstr(json, want), "%s: no %s in stats.json", saved_names[i].name,
		              want);
	}
	ck_assert_ptr_nonnull(strstr(json, "\"200\": 77"));
	ck_assert_ptr_nonnull(strstr(json, "\"dns-notfound\": 78"));
	ck_assert_ptr_nonnull(strstr(json, "\"connect\": 79"));
	ck_assert_ptr_nonnull(strstr(json, "\"pages_per_s_series\": [4.00, 6.00]"));
	ck_assert_ptr_null(strstr(json, "999999"));
	free(json);
	/* the next checkpoint carries each of them again, under its name */
	struct recfile_writer *w;
	ck_assert_int_eq(recfile_writer_create(again, "TSTATE01", &w), RECFILE_OK);
	crawl_stats_save(s, w);
	ck_assert_int_eq(recfile_writer_close(w, 0), RECFILE_OK);
	uint64_t v;
	uint32_t n, nl;
	ck_assert_int_eq(recfile_reader_open(again, "TSTATE01", &rd), RECFILE_OK);
	ck_assert_int_eq(recfile_get_u64(rd, &v), RECFILE_OK);
	ck_assert_uint_ge(v, 5000000);
	ck_assert_uint_lt(v, 65000000);
	ck_assert_int_eq(recfile_get_u32(rd, &n), RECFILE_OK);
	ck_assert_uint_eq(n, N_SAVED_NAMES);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_int_eq(recfile_get_bytes(rd, name, sizeof name - 1, &nl), RECFILE_OK);
		ck_assert_int_eq(recfile_get_u64(rd, &v), RECFILE_OK);
		size_t k = 0;
		while (k < N_SAVED_NAMES && strcmp(saved_names[k].name, name) != 0)
			k++;
		ck_assert_msg(k < N_SAVED_NAMES, "%s: saved under a new name", name);
		ck_assert_uint_eq(v, 1000 + k);
	}
	recfile_reader_close(rd);
	crawl_stats_destroy(s);
	unlink(path);
	unlink(again);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("crawl_units");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, config_defaults_and_set);
	tcase_add_test(tc, config_file_errors_name_line_and_key);
	tcase_add_test(tc, config_shipped_files_load);
	tcase_add_test(tc, bqueue_fifo_full_close);
	tcase_add_test(tc, bqueue_mpmc_every_item_once);
	tcase_add_test(tc, parse_pool_bounded_and_complete);
	tcase_add_test(tc, parse_pool_default_threads);
	tcase_add_test(tc, config_sieve_keys);
	tcase_add_test(tc, sitemap_registry_take_once_and_cap);
	tcase_add_test(tc, link_meta_put_take_first_writer);
	tcase_add_test(tc, link_meta_sweep_rules);
	tcase_add_test(tc, link_meta_bounded);
	tcase_add_test(tc, stats_checkpoint_counters_by_name);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
