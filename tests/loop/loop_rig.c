/*
 * loop_rig.c: the loop suites' shared rig (see loop_rig.h).
 */
#include "loop_rig.h"

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/crawl_writer.h"
#include "crawler/store/done_set.h"
#include "frontier/base/clock.h"

void rig_tempdir(char *dir, size_t cap)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, cap, "%s/loop-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void rig_rmtree(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- the fakes ---- */

static enum fetch_error fake_start(void *ctx, const struct fetch_request *req)
{
	struct rig *r = ctx;
	ck_assert_uint_lt(r->nfetch, RIG_MAX);
	struct rig_fetch *f = &r->fetch[r->nfetch++];
	snprintf(f->url, sizeof f->url, "%s", req->url);
	snprintf(f->ip, sizeof f->ip, "%s", req->ip ? req->ip : "");
	f->flags = req->flags;
	f->user = req->user;
	return FETCH_OK;
}

static enum dns_error fake_resolve(void *ctx, const char *name, dns_done_fn done, void *arg)
{
	struct rig *r = ctx;
	ck_assert_uint_lt(r->nlookup, RIG_MAX);
	struct rig_lookup *l = &r->lookup[r->nlookup++];
	snprintf(l->name, sizeof l->name, "%s", name);
	l->done = done;
	l->arg = arg;
	return DNS_OK;
}

static int fake_acquire(void *ctx, const char *key, unsigned ttl_ms, visit_lease_done_fn *done,
                        void *arg)
{
	struct rig *r = ctx;
	ck_assert_uint_lt(r->nlease, RIG_MAX);
	struct rig_lease *l = &r->lease[r->nlease++];
	snprintf(l->key, sizeof l->key, "%s", key);
	l->ttl_ms = ttl_ms;
	l->done = done;
	l->arg = arg;
	return 0;
}

static void fake_release(void *ctx, const char *key, unsigned ttl_ms)
{
	struct rig *r = ctx;
	(void)ttl_ms;
	ck_assert_uint_lt(r->nreleased, RIG_MAX);
	snprintf(r->released[r->nreleased++], IP_ADDR_STRLEN, "%s", key);
}

static int always(void *ctx)
{
	(void)ctx;
	return 1;
}

static void count_pump(void *ctx)
{
	struct rig *r = ctx;
	r->pumps++;
}

/* ---- set-up ---- */

void rig_config(struct rig *r)
{
	memset(r, 0, sizeof *r);
	rig_tempdir(r->dir, sizeof r->dir);
	ck_assert_int_eq(crawl_config_default(&r->cfg), 0);
	r->cfg.fetch.allow_private_networks = 1;
	r->cfg.politeness.max_urls_per_visit = 10;
}

void rig_open(struct rig *r, int leases)
{
	r->fc = r->cfg.frontier;
	r->fc.spill_dir = r->dir;
	ck_assert_int_eq(frontier_create(&r->fc, &r->frontier), FRONTIER_OK);
	ck_assert_int_eq(politeness_create(r->frontier, &r->cfg.politeness, NULL, NULL, &r->pol),
	                 POLITENESS_OK);
	r->done = done_set_create();
	ck_assert_ptr_nonnull(r->done);
	struct visit_parts vp = {
		.cfg = &r->cfg,
		.frontier = r->frontier,
		.pol = r->pol,
		.net = { .ctx = r, .start = fake_start, .resolve = fake_resolve },
		.stats = &r->stats,
		.hooks = { .ctx = r,
		           .can_start = always,
		           .page_allowed = always,
		           .pump = count_pump },
		.stopping = &r->stopping,
		.finished = &r->finished,
		.done = r->done,
	};
	if (leases)
		vp.leases = (struct visit_lease_hooks){ .ctx = r,
			                                .acquire = fake_acquire,
			                                .release = fake_release };
	r->visit = visit_create(&vp);
	ck_assert_ptr_nonnull(r->visit);
}

void rig_close(struct rig *r)
{
	r->finished = 1;
	visit_destroy(r->visit);
	politeness_destroy(r->pol);
	frontier_destroy(r->frontier);
	done_set_destroy(r->done);
	crawl_config_free(&r->cfg);
	rig_rmtree(r->dir);
}

/* ---- driving ---- */

uint32_t rig_add(struct rig *r, const char *url)
{
	uint32_t host;
	ck_assert_int_eq(visit_host_get(r->visit, url, strlen(url), &host), 0);
	ck_assert_int_eq(frontier_push(r->frontier, host, url, strlen(url), "", 0, 0), FRONTIER_OK);
	return host;
}

int rig_pop(struct rig *r, uint64_t now_us)
{
	uint32_t host;
	uint64_t at;
	int n = 0;
	while (politeness_pop_ready(r->pol, now_us, &host, &at) == POLITENESS_OK) {
		visit_begin(r->visit, host);
		n++;
	}
	return n;
}

uint64_t rig_later(void)
{
	return monotonic_us() + 3600u * 1000000u;
}

void rig_resolve(struct rig *r, size_t i, const char *ip1, const char *ip2)
{
	struct ip_addr a[2];
	size_t n = 0;
	ck_assert_uint_lt(i, r->nlookup);
	ck_assert(!r->lookup[i].answered);
	r->lookup[i].answered = 1;
	ck_assert_int_eq(ip_addr_parse(ip1, strlen(ip1), &a[n++]), 0);
	if (ip2)
		ck_assert_int_eq(ip_addr_parse(ip2, strlen(ip2), &a[n++]), 0);
	r->lookup[i].done(r->lookup[i].arg, DNS_OK, r->lookup[i].name, a, n);
}

static struct fetch_result *result_of(struct rig *r, size_t i)
{
	ck_assert_uint_lt(i, r->nfetch);
	ck_assert(!r->fetch[i].answered);
	r->fetch[i].answered = 1;
	struct fetch_result *res = calloc(1, sizeof *res);
	ck_assert_ptr_nonnull(res);
	res->user = r->fetch[i].user;
	res->flags = r->fetch[i].flags;
	res->url = strdup(r->fetch[i].url);
	snprintf(res->ip, sizeof res->ip, "%s", r->fetch[i].ip);
	res->retry_after_s = -1;
	return res;
}

/* What the loop does with a result (crawl_run.c's fetch_done, without
 * the parse threads and the writer). */
static void take_result(struct rig *r, struct fetch_result *res)
{
	int follow;
	struct crawl_job *j = visit_result(r->visit, res, &follow);
	ck_assert_ptr_nonnull(j);
	uint32_t host = j->host;
	crawl_job_free(j);
	visit_continue(r->visit, host);
}

static void set_buf(struct fetch_buf *b, const char *s)
{
	b->len = strlen(s);
	b->data = malloc(b->len + 1);
	ck_assert_ptr_nonnull(b->data);
	memcpy(b->data, s, b->len + 1);
}

void rig_answer(struct rig *r, size_t i, long status, const char *ctype, const char *body,
                long retry_after_s, const char *location)
{
	struct fetch_result *res = result_of(r, i);
	res->status = status;
	set_buf(&res->request_headers, "GET / HTTP/1.1\r\n\r\n");
	set_buf(&res->response_headers, "HTTP/1.1 200 OK\r\n\r\n");
	set_buf(&res->body, body ? body : "");
	res->content_type = ctype ? strdup(ctype) : NULL;
	res->location = location ? strdup(location) : NULL;
	res->retry_after_s = retry_after_s;
	take_result(r, res);
}

void rig_fail(struct rig *r, size_t i, enum fetch_error e)
{
	struct fetch_result *res = result_of(r, i);
	res->error = e;
	if (e != FETCH_ERR_CONNECT)
		set_buf(&res->request_headers, "GET / HTTP/1.1\r\n\r\n");
	take_result(r, res);
}
