/*
 * loop_rig.c: the loop suites' shared rig (see loop_rig.h).
 */
#include "loop_rig.h"

#include <check.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "crawler/crawl_writer.h"
#include "crawler/store/done_set.h"
#include "crawler/store/io_stall.h"
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

/* ---- WARC files, read independently ---- */

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the complete members of one file's bytes to *out. */
static void inflate_members(const unsigned char *in, size_t n, char **out, size_t *len, size_t *cap)
{
	size_t at = 0;
	while (at < n) {
		z_stream z;
		memset(&z, 0, sizeof z);
		ck_assert_int_eq(inflateInit2(&z, 15 + 16), Z_OK);
		z.next_in = (unsigned char *)in + at;
		z.avail_in = (uInt)(n - at);
		size_t start = *len;
		int rc;
		do {
			if (*cap - *len < 65536) {
				*cap = 2 * *cap + 65536;
				*out = realloc(*out, *cap);
				ck_assert_ptr_nonnull(*out);
			}
			z.next_out = (unsigned char *)*out + *len;
			z.avail_out = (uInt)(*cap - *len - 1);
			rc = inflate(&z, Z_NO_FLUSH);
			*len = (size_t)((char *)z.next_out - *out);
		} while (rc == Z_OK && (z.avail_in > 0 || z.avail_out == 0));
		at = n - z.avail_in;
		inflateEnd(&z);
		if (rc != Z_STREAM_END) {
			*len = start; /* cut short: not a record yet */
			return;
		}
	}
}

char *rig_warc_text(const char *dir, size_t *len)
{
	char *names[256], path[600];
	size_t nn = 0, cap = 0;
	char *out = NULL;
	DIR *d = opendir(dir);
	struct dirent *e;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "crawl-", 6) == 0 && l > 8 &&
		    strcmp(e->d_name + l - 8, ".warc.gz") == 0 && nn < 256)
			names[nn++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, nn, sizeof names[0], by_name);
	*len = 0;
	for (size_t i = 0; i < nn; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		free(names[i]);
		FILE *f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		fseek(f, 0, SEEK_END);
		long n = ftell(f);
		rewind(f);
		unsigned char *buf = malloc((size_t)n + 1);
		ck_assert_ptr_nonnull(buf);
		ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
		fclose(f);
		inflate_members(buf, (size_t)n, &out, len, &cap);
		free(buf);
	}
	if (!out)
		out = malloc(1);
	ck_assert_ptr_nonnull(out);
	out[*len] = '\0';
	return out;
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

static void count_pump_soon(void *ctx)
{
	struct rig *r = ctx;
	r->soon_pumps++;
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
		.crawl = &r->cfg.crawl,
		.url = &r->cfg.url,
		.fetch_config = &r->cfg.fetch,
		.politeness = &r->cfg.politeness,
		.frontier = r->frontier,
		.pol = r->pol,
		.net = { .ctx = r, .start = fake_start, .resolve = fake_resolve },
		.hooks = { .ctx = r,
		           .can_start = always,
		           .page_allowed = always,
		           .pump = count_pump,
		           .pump_soon = count_pump_soon },
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

const struct visit_stats *rig_stats(struct rig *r)
{
	visit_stats(r->visit, &r->st);
	return &r->st;
}

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

void rig_first_visit(struct rig *r, uint32_t host, const char *ip1, const char *ip2)
{
	size_t before = r->nfetch;
	ck_assert_int_eq(rig_pop(r, monotonic_us() + 5000000u), 1);
	ck_assert_uint_eq(r->nfetch, before);
	ck_assert_uint_ge(r->nlookup, 1);
	rig_resolve(r, r->nlookup - 1, ip1, ip2);
	ck_assert(!politeness_host_held(r->pol, host));
	ck_assert_int_eq(rig_pop(r, monotonic_us()), 1);
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

void rig_set_buf(struct fetch_buf *b, const char *s)
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
	rig_set_buf(&res->request_headers, "GET / HTTP/1.1\r\n\r\n");
	rig_set_buf(&res->response_headers, "HTTP/1.1 200 OK\r\n\r\n");
	rig_set_buf(&res->body, body ? body : "");
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
		rig_set_buf(&res->request_headers, "GET / HTTP/1.1\r\n\r\n");
	take_result(r, res);
}

/* ---- the sieve path ---- */

static void sieve_wake(void *ctx)
{
	struct rig_sieve *r = ctx;
	atomic_fetch_add(&r->wakes, 1);
}

/* The frontier's side (crawl_run.c's take_emit). */
static int sieve_take(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
                      uint32_t depth)
{
	struct rig_sieve *r = ctx;
	ck_assert_uint_lt(r->ngot, RIG_GOT_MAX);
	snprintf(r->got[r->ngot].url, sizeof r->got[0].url, "%.*s", (int)len, url);
	snprintf(r->got[r->ngot].via, sizeof r->got[0].via, "%.*s", (int)via_len, via);
	r->got[r->ngot].depth = depth;
	r->ngot++;
	return 0;
}

static void rig_sieve_start(struct rig_sieve *r, const struct crawl_config *cfg, char *const *seeds,
                            size_t nseeds)
{
	char err[512];
	snprintf(r->sieve_dir, sizeof r->sieve_dir, "%s/sieve", r->dir);
	r->svc = cfg->sieve;
	r->svc.dir = r->sieve_dir;
	r->svc.memory = 1u << 20;
	r->svc.no_fsync = 1;
	r->io = io_stall_create(100);
	ck_assert_ptr_nonnull(r->io);
	struct sieve_path_parts parts = {
		.cfg = { .url = &cfg->url,
		         .max_url_len = cfg->scope.max_url_len,
		         .max_transfers = cfg->fetch.max_connections + cfg->parse.queue,
		         .meta_memory = cfg->link_meta_memory },
		.io = r->io,
		.hooks = { .ctx = r, .wake = sieve_wake, .take = sieve_take },
	};
	ck_assert_int_eq(sieve_path_create(&parts, &r->sp), 0);
	ck_assert_int_eq(sieve_path_open_sieve(r->sp, &r->svc, NULL, err, sizeof err), SIEVE_OK);
	ck_assert_int_eq(
	        sieve_path_start_feeder(r->sp, seeds, nseeds, sieve_path_batch_create(r->sp)), 0);
}

void rig_sieve_open(struct rig_sieve *r, char *const *seeds, size_t nseeds)
{
	memset(r, 0, sizeof *r);
	rig_tempdir(r->dir, sizeof r->dir);
	ck_assert_int_eq(crawl_config_default(&r->cfg), 0);
	r->cfg.link_meta_memory = 64u * 1024u;
	r->own = 1;
	rig_sieve_start(r, &r->cfg, seeds, nseeds);
}

void rig_sieve_open_in(struct rig_sieve *r, const char *dir, const struct crawl_config *cfg)
{
	memset(r, 0, sizeof *r);
	snprintf(r->dir, sizeof r->dir, "%s", dir);
	rig_sieve_start(r, cfg, NULL, 0);
}

void rig_sieve_close(struct rig_sieve *r)
{
	sieve_path_stop_adding(r->sp);
	io_stall_abort(r->io);
	sieve_path_stop_feeder(r->sp);
	sieve_path_close_sieve(r->sp);
	sieve_path_destroy(r->sp);
	io_stall_destroy(r->io);
	if (r->own) {
		crawl_config_free(&r->cfg);
		rig_rmtree(r->dir);
	}
}

void rig_sieve_quiet(struct rig_sieve *r)
{
	uint64_t end = monotonic_us() + 10000000u;
	while (!sieve_path_quiet(r->sp)) {
		ck_assert_msg(monotonic_us() < end, "the sieve path never went quiet");
		usleep(1000);
	}
}

void rig_sieve_flush(struct rig_sieve *r)
{
	uint64_t seq, end = monotonic_us() + 10000000u;
	ck_assert_int_eq(sieve_path_push_flush(r->sp, &seq), 0);
	while (!sieve_path_flushed(r->sp, seq)) {
		ck_assert_msg(monotonic_us() < end, "flush %llu never done",
		              (unsigned long long)seq);
		usleep(1000);
	}
	ck_assert_int_eq(sieve_path_drain(r->sp, 1), 1);
}

void rig_sieve_drain_until(struct rig_sieve *r, size_t n)
{
	uint64_t end = monotonic_us() + 10000000u;
	while (sieve_path_drain(r->sp, 1), r->ngot < n) {
		ck_assert_msg(monotonic_us() < end, "%zu URLs emitted, %zu expected", r->ngot, n);
		usleep(1000);
	}
}

const struct sieve_path_stats *rig_sieve_stats(struct rig_sieve *r)
{
	sieve_path_stats(r->sp, &r->st);
	return &r->st;
}

int rig_sieve_got(const struct rig_sieve *r, const char *url)
{
	for (size_t i = 0; i < r->ngot; i++)
		if (strcmp(r->got[i].url, url) == 0)
			return 1;
	return 0;
}
