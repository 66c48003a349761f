/*
 * Unit tests of the crawl's glue: configuration (crawler/config.h), the
 * bounded queue (crawler/bqueue.h), the parse pool (parse/parse_pool.h) and
 * the discovered-URL set (crawler/crawl_seen.h).
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/bqueue.h"
#include "crawler/config.h"
#include "crawler/crawl_seen.h"
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
	ck_assert_uint_eq(c.host_delay_ms, 2000);
	ck_assert_ptr_nonnull(strstr(c.user_agent, "CONTACT-ME"));
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "host_delay_ms", "150", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.host_delay_ms, 150);
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "policy", "ratio", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_int_eq(c.policy, 1);
	/* Bad values leave the struct unchanged and name the key. */
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "host_delay_ms", "-5", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "host_delay_ms"));
	ck_assert_uint_eq(c.host_delay_ms, 150);
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "host_delay_ms", "12abc", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "fetch", "max_connections", "0", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "ratio", "1.5", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "fetch", "allow_private_networks", "maybe", err,
	                                  sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "no_such_key", "1", err, sizeof err),
	                 CRAWL_CONFIG_ERR_UNKNOWN_KEY);
	ck_assert_ptr_nonnull(strstr(err, "no_such_key"));
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "domains", "Example.ORG, .web.test", err,
	                                  sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.n_domains, 2);
	ck_assert_str_eq(c.domains[0], "example.org");
	ck_assert_str_eq(c.domains[1], "web.test");
	crawl_config_free(&c);
}
END_TEST

START_TEST(config_file_errors_name_line_and_key)
{
	struct crawl_config c;
	char err[CRAWL_CONFIG_ERR_MAX];
	ck_assert_int_eq(crawl_config_default(&c), 0);
	char *p = write_tmp("# comment\n[fetch]\nmax_connections = 10\n\n[politeness]\nbogus = 3\n");
	ck_assert_int_eq(crawl_config_load(&c, p, err, sizeof err), CRAWL_CONFIG_ERR_UNKNOWN_KEY);
	ck_assert_ptr_nonnull(strstr(err, p));
	ck_assert_ptr_nonnull(strstr(err, ":6:"));
	ck_assert_ptr_nonnull(strstr(err, "bogus"));
	ck_assert_uint_eq(c.max_connections, 10); /* lines before the error applied */
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
	static const char *files[] = {"default.conf", "polite.conf", "research.conf", "testweb.conf"};
	for (size_t i = 0; i < 4; i++) {
		struct crawl_config c;
		char err[CRAWL_CONFIG_ERR_MAX] = "";
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", CONFIGS_DIR, files[i]);
		ck_assert_int_eq(crawl_config_default(&c), 0);
		enum crawl_config_err e = crawl_config_load(&c, path, err, sizeof err);
		ck_assert_msg(e == CRAWL_CONFIG_OK, "%s: %s", path, err);
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

START_TEST(parse_pool_bounded_and_complete)
{
	struct pool_ctx c;
	memset(&c, 0, sizeof c);
	pthread_mutex_init(&c.gate, NULL);
	struct parse_pool_ops ops = {pinit, pwork, pfini};
	struct parse_pool *p;
	pthread_mutex_lock(&c.gate); /* workers block on the first jobs */
	ck_assert_int_eq(parse_pool_create(2, 4, &ops, &c, &p), PARSE_POOL_OK);
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

START_TEST(seen_set_once)
{
	struct crawl_seen *s = crawl_seen_create();
	char url[64];
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 200000; i++) {
			int n = snprintf(url, sizeof url, "http://h%d.web.test/p%d", i % 97, i);
			ck_assert_int_eq(crawl_seen_add(s, url, (size_t)n), round == 0 ? 1 : 0);
		}
	ck_assert_uint_eq(crawl_seen_count(s), 200000);
	crawl_seen_destroy(s);
	crawl_seen_destroy(NULL);
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
	tcase_add_test(tc, seen_set_once);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
