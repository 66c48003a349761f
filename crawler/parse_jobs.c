/*
 * parse_jobs.c: the parse threads' work (see parse_jobs.h).
 */
#include "crawler/parse_jobs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/store/crawl_log.h"
#include "crawler/net/decode.h"
#include "frontier/frontier.h"
#include "frontier/url.h"
#include "parse/links.h"
#include "parse/parse_pool.h"
#include "parse/simhash.h"
#include "parse/sitemap.h"

#define NEAR_DUP_STRIPES 64
#define NEAR_DUP_PER_HOST 4096 /* fingerprints kept per host (oldest dropped) */
#define NEAR_DUP_DISTANCE 3

struct near_dup_host {
	uint32_t host;
	uint32_t n, next;
	uint64_t fp[NEAR_DUP_PER_HOST];
	struct near_dup_host *chain;
};

struct near_dup_stripe {
	pthread_mutex_t mu;
	struct near_dup_host *hosts;
};

struct parse_jobs {
	struct parse_jobs_parts p;
	struct parse_pool *pool;
	struct near_dup_stripe nd[NEAR_DUP_STRIPES];
};

/* One parse thread's own objects. */
struct parse_state {
	struct links_extractor *ex;
	struct url *u;
	struct link_batch *batch;
	struct sitemap_parser *sm; /* made at the thread's first sitemap */
};

static void *parse_init(void *ctx)
{
	struct parse_jobs *pj = ctx;
	struct parse_state *ps = calloc(1, sizeof *ps);
	if (!ps)
		return NULL;
	ps->u = url_create(&pj->p.cfg->url);
	ps->batch = sieve_path_batch_create(pj->p.sp);
	if (!ps->u || !ps->batch ||
	    links_extractor_create(&pj->p.cfg->links, &ps->ex) != LINKS_OK) {
		url_destroy(ps->u);
		sieve_path_batch_destroy(ps->batch);
		free(ps);
		return NULL;
	}
	return ps;
}

static void parse_fini(void *ctx, void *state)
{
	(void)ctx;
	struct parse_state *ps = state;
	if (!ps)
		return;
	links_extractor_destroy(ps->ex);
	url_destroy(ps->u);
	sieve_path_batch_destroy(ps->batch);
	sitemap_parser_destroy(ps->sm);
	free(ps);
}

/* 1 if fp is near a page already seen on host; records fp. */
static int near_dup_check(struct parse_jobs *pj, uint32_t host, uint64_t fp)
{
	struct near_dup_stripe *s = &pj->nd[host % NEAR_DUP_STRIPES];
	int dup = 0;
	pthread_mutex_lock(&s->mu);
	struct near_dup_host *h = s->hosts;
	while (h && h->host != host)
		h = h->chain;
	if (!h) {
		h = calloc(1, sizeof *h);
		if (!h)
			goto out;
		h->host = host;
		h->chain = s->hosts;
		s->hosts = h;
	}
	for (uint32_t i = 0; i < h->n; i++)
		if (simhash_distance(h->fp[i], fp) <= NEAR_DUP_DISTANCE) {
			dup = 1;
			break;
		}
	if (!dup) {
		h->fp[h->next] = fp;
		h->next = (h->next + 1) % NEAR_DUP_PER_HOST;
		if (h->n < NEAR_DUP_PER_HOST)
			h->n++;
	}
out:
	pthread_mutex_unlock(&s->mu);
	return dup;
}

/* The charset parameter of a Content-Type, copied into buf, or NULL. */
static const char *charset_of(const char *ct, char *buf, size_t cap)
{
	if (!ct)
		return NULL;
	const char *p = strcasestr(ct, "charset=");
	if (!p)
		return NULL;
	p += 8;
	if (*p == '"')
		p++;
	size_t n = 0;
	while (p[n] && p[n] != ';' && p[n] != '"' && p[n] != ' ' && n + 1 < cap) {
		buf[n] = p[n];
		n++;
	}
	buf[n] = '\0';
	return n ? buf : NULL;
}

/* How an embed is judged (NULL for a link): whether it may lie off the
 * allowed domains, and whether it does (set by batch_key). */
struct embed_scope {
	int allow_off_domain;
	int off_domain;
};

/* One URL's crawl key in the thread's batch, checked against the scope at
 * depth (as an embed when es): the key, or NULL (counted). A crawl key
 * (is_key: the extractors write them, under the crawl's URL options, and
 * keys are idempotent, url.h) is copied, and parsed again only when
 * longer than the batch's slot, to fail; any other URL is normalized. */
static char *batch_key(struct parse_jobs *pj, struct parse_state *ps, const char *url, size_t len,
                       int is_key, uint32_t depth, struct embed_scope *es, size_t *klen)
{
	struct crawl_stats_atomic *ac = &pj->p.stats->ac;
	size_t room;
	char *key = sieve_path_batch_slot(ps->batch, &room);
	*klen = len;
	if (is_key && len < room) {
		memcpy(key, url, len + 1);
	} else if (url_normalize(ps->u, NULL, url, len, key, room, klen) != URL_OK) {
		atomic_fetch_add(&ac->url_invalid, 1);
		return NULL;
	}
	enum scope_verdict v = es ? scope_check_embed(pj->p.scope, key, *klen, depth,
	                                              es->allow_off_domain, &es->off_domain)
	                          : scope_check(pj->p.scope, key, *klen, depth);
	if (v != SCOPE_OK) {
		atomic_fetch_add(&ac->scope_rejected, 1);
		return NULL;
	}
	return key;
}

static int add_url(struct parse_jobs *pj, struct parse_state *ps, const char *url, size_t len,
                   int is_key, uint32_t depth, struct link_meta_via *via)
{
	size_t klen;
	if (!batch_key(pj, ps, url, len, is_key, depth, NULL, &klen))
		return 0;
	sieve_path_batch_add(ps->batch, klen, depth, via);
	return 1;
}

/* 1 if crawl keys a and b name one host. */
static int same_host(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t aa, ah, al, ba, bh, bl;
	return url_key_split(a, alen, &aa, &ah, &al) == 0 &&
	       url_key_split(b, blen, &ba, &bh, &bl) == 0 && al == bl &&
	       memcmp(a + ah, b + bh, al) == 0;
}

/* An embed found in job j's response (a page's requisite, a stylesheet's
 * url()) into the batch: in scope by the embed rule of parse_jobs.h, at
 * j's own link depth, with its embed code. */
static void add_embed(struct parse_jobs *pj, struct parse_state *ps, const struct crawl_job *j,
                      const struct link *l, struct link_meta_via *via)
{
	struct crawl_stats_atomic *ac = &pj->p.stats->ac;
	uint32_t from_hops = j->embed ? j->embed - 1 : 0;
	/* If it is off the domains: on the same (off) host as what named it,
	 * as many hops off; else one more. */
	uint32_t hops = from_hops > 0 && same_host(j->res->url, strlen(j->res->url), l->url, l->len)
	                        ? from_hops
	                        : from_hops + 1;
	struct embed_scope es = { hops <= pj->p.cfg->crawl.requisites_hops, 0 };
	size_t klen;
	atomic_fetch_add(&ac->embeds, 1);
	if (!batch_key(pj, ps, l->url, l->len, 1, j->depth, &es, &klen))
		return;
	atomic_fetch_add(&ac->embeds_added, 1);
	if (es.off_domain)
		atomic_fetch_add(&ac->embeds_off_domain, 1);
	uint32_t code = 1 + (es.off_domain ? hops : 0);
	sieve_path_batch_add(ps->batch, klen, frontier_depth_pack_embed(j->depth, 0, code), via);
}

/* A sitemap URL into the batch, registered first (level, scope) so that
 * its response is known for one whatever thread sees it. */
static void add_sitemap_url(struct parse_jobs *pj, struct parse_state *ps, const char *url,
                            size_t len, int is_key, uint32_t depth, unsigned level,
                            const char *scope, struct link_meta_via *via)
{
	size_t klen;
	char *key = batch_key(pj, ps, url, len, is_key, depth, NULL, &klen);
	if (!key)
		return;
	if (sitemap_registry_add(pj->p.sitemaps, key, klen, level, scope) < 0) {
		atomic_fetch_add(&pj->p.stats->ac.sitemaps_dropped, 1);
		return;
	}
	sieve_path_batch_add(ps->batch, klen, depth, via);
}

/* The page's links into the thread's batch, via the page's URL. */
static void add_links(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j,
                      const struct link *l, size_t n, struct link_meta_via *via)
{
	struct crawl_stats_atomic *ac = &pj->p.stats->ac;
	for (size_t i = 0; i < n; i++) {
		if (link_kind_is_embed(l[i].kind)) {
			add_embed(pj, ps, j, &l[i], via);
			continue;
		}
		atomic_fetch_add(&ac->links, 1);
		if (l[i].nofollow)
			atomic_fetch_add(&ac->nofollow, 1);
		else
			add_url(pj, ps, l[i].url, l[i].len, 1, j->depth + 1, via);
	}
	/* Before the job counts as finished: "no parse job outstanding" then
	 * means every link found so far is in the sieve. */
	sieve_path_batch_flush(ps->batch);
}

/* A robots.txt's Sitemap URLs: level 0, judged against the robots.txt URL
 * (a sitemap it lists may list that host's URLs wherever it lives). */
static void add_robots_sitemaps(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j)
{
	const char *robots_url = j->res->url;
	struct link_meta_via *via = sieve_path_via(pj->p.sp, robots_url, strlen(robots_url));
	if (!via || sieve_path_adding_stopped(pj->p.sp)) {
		sieve_path_via_release(pj->p.sp, via);
		return;
	}
	for (size_t i = 0; i < j->nsitemaps; i++)
		add_sitemap_url(pj, ps, j->sitemaps[i], strlen(j->sitemaps[i]), 0, j->depth, 0,
		                robots_url, via);
	sieve_path_batch_flush(ps->batch);
	sieve_path_via_release(pj->p.sp, via);
}

struct sitemap_walk {
	struct parse_jobs *pj;
	struct parse_state *ps;
	struct crawl_job *j;
	struct link_meta_via *via;
};

static int on_sitemap_entry(const struct sitemap_entry *e, void *arg)
{
	struct sitemap_walk *w = arg;
	struct crawl_job *j = w->j;
	unsigned level = j->sitemap_level; /* the entry's own: one below the index */
	if (e->kind == SITEMAP_KIND_URLSET) {
		if (add_url(w->pj, w->ps, e->url, e->len, 1, j->depth + 1, w->via))
			atomic_fetch_add(&w->pj->p.stats->ac.sitemap_urls, 1);
	} else if (level <= SITEMAP_INDEX_DEPTH_MAX) {
		add_sitemap_url(w->pj, w->ps, e->url, e->len, 1, j->depth, level, j->sitemap_scope,
		                w->via);
	} else {
		atomic_fetch_add(&w->pj->p.stats->ac.sitemaps_dropped, 1);
	}
	return sieve_path_adding_stopped(w->pj->p.sp);
}

/* What a parsed sitemap's result says went wrong, by reason. What was
 * read before the problem was used: the first sitemap_max_urls entries,
 * those ended within sitemap_max_bytes, those before malformed XML. */
static void count_sitemap_problems(struct crawl_stats_atomic *ac, const struct sitemap_result *sr)
{
	if (sr->problem != SITEMAP_FINE && sr->problem != SITEMAP_STOPPED)
		atomic_fetch_add(&ac->sitemap_problems, 1);
	if (sr->problem == SITEMAP_TRUNCATED)
		atomic_fetch_add(&ac->sitemap_too_large, 1);
	else if (sr->problem != SITEMAP_FINE && sr->problem != SITEMAP_STOPPED)
		atomic_fetch_add(&ac->sitemap_malformed, 1);
	if (sr->dropped_over_limit) {
		atomic_fetch_add(&ac->sitemap_too_many, 1);
		atomic_fetch_add(&ac->sitemap_urls_over_limit, sr->dropped_over_limit);
	}
}

/* A sitemap's entries (the body decoded per Content-Encoding; a .gz file
 * sent as such is inflated by the parser). */
static void parse_sitemap(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j)
{
	struct fetch_result *res = j->res;
	struct crawl_stats_atomic *ac = &pj->p.stats->ac;
	struct decode_output d = { 0 };
	struct sitemap_walk w = { pj, ps, j, NULL };
	if (!ps->sm) {
		struct sitemap_config sc = { .max_locs = pj->p.cfg->crawl.sitemap_max_urls,
			                     .max_bytes = pj->p.cfg->crawl.sitemap_max_bytes,
			                     .max_tag_bytes =
			                             pj->p.cfg->crawl.sitemap_max_tag_bytes,
			                     .max_attributes =
			                             pj->p.cfg->crawl.sitemap_max_attributes,
			                     .scope = SITEMAP_SCOPE_HOST,
			                     .url_options = &pj->p.cfg->url };
		if (sitemap_parser_create(&sc, &ps->sm) != SITEMAP_OK)
			return;
	}
	if (decode_body(res->content_encoding, res->body.data, res->body.len,
	                pj->p.cfg->fetch.max_body_bytes, &d) != DECODE_OK) {
		atomic_fetch_add(&ac->decode_errors, 1);
		j->error = "decode";
		return;
	}
	w.via = sieve_path_via(pj->p.sp, res->url, strlen(res->url));
	struct sitemap_result sr;
	if (w.via && sitemap_parse(ps->sm, res->url, j->sitemap_scope, (const char *)d.data, d.len,
	                           on_sitemap_entry, &w, &sr) == SITEMAP_OK) {
		atomic_fetch_add(&ac->sitemaps, 1);
		count_sitemap_problems(ac, &sr);
	}
	sieve_path_batch_flush(ps->batch);
	sieve_path_via_release(pj->p.sp, w.via);
	free(d.data);
}

/* Extracts an HTML page's links (and embeds, with requisites) into the
 * thread's extractor and marks a near-duplicate: 1 when its links are to
 * be added (not a meta robots nofollow page). */
static int extract_page(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j,
                        const struct decode_output *d)
{
	struct fetch_result *res = j->res;
	struct crawl_stats_atomic *ac = &pj->p.stats->ac;
	char csbuf[64];
	const char *cs = charset_of(res->content_type, csbuf, sizeof csbuf);
	if (links_extract(ps->ex, res->url, cs, (const char *)d->data, d->len) != LINKS_OK)
		return 0;
	atomic_fetch_add(&ac->parsed, 1);
	const struct links_page *pg = links_page_info(ps->ex);
	if (pj->p.cfg->parse.near_dup && near_dup_check(pj, j->host, pg->simhash)) {
		j->flags |= CRAWL_LOG_NEAR_DUP;
		atomic_fetch_add(&ac->near_dups, 1);
	}
	if (pg->nofollow) {
		atomic_fetch_add(&ac->nofollow, 1);
		return 0;
	}
	return 1;
}

/* An HTML page's links, or a stylesheet's url()s (j->parse ==
 * CRAWL_PARSE_CSS), into the sieve. */
static void parse_page(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j)
{
	struct fetch_result *res = j->res;
	struct crawl_stats_atomic *ac = &pj->p.stats->ac;
	struct decode_output d = { 0 };
	struct link_meta_via *via = NULL;
	if (decode_body(res->content_encoding, res->body.data, res->body.len,
	                pj->p.cfg->fetch.max_body_bytes, &d) != DECODE_OK) {
		atomic_fetch_add(&ac->decode_errors, 1);
		j->error = "decode";
		return;
	}
	if (j->parse == CRAWL_PARSE_CSS) {
		if (links_extract_css(ps->ex, res->url, (const char *)d.data, d.len) != LINKS_OK)
			goto out;
		atomic_fetch_add(&ac->stylesheets, 1);
	} else if (!extract_page(pj, ps, j, &d)) {
		goto out;
	}
	size_t n;
	const struct link *l = links_result(ps->ex, &n);
	if (n == 0 || sieve_path_adding_stopped(pj->p.sp))
		goto out;
	/* One via string per page, shared by the side-table entries of its links. */
	via = sieve_path_via(pj->p.sp, res->url, strlen(res->url));
	if (!via) {
		atomic_fetch_add(&ac->emit_dropped, n);
		goto out;
	}
	add_links(pj, ps, j, l, n, via);
out:
	sieve_path_via_release(pj->p.sp, via);
	free(d.data);
}

/* A fetch replayed from a crashed crawl's tail (crawl_tail.h): its own
 * URL, so that the sieve knows it as seen (should it emit it, the done set
 * drops it), and its redirect target, as the fetch loop feeds one (one hop:
 * the chain's count before it is not in the log). */
static void add_replayed(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j)
{
	const char *url = j->res->url;
	struct link_meta_via *via = sieve_path_via(pj->p.sp, j->via, strlen(j->via));
	struct link_meta_via *from =
	        j->redirect ? sieve_path_via(pj->p.sp, url, strlen(url)) : NULL;
	size_t klen;
	if (via)
		add_url(pj, ps, url, strlen(url), 1, j->depth, via);
	if (from && batch_key(pj, ps, j->redirect, strlen(j->redirect), 0, j->depth, NULL, &klen))
		sieve_path_batch_add(ps->batch, klen, frontier_depth_pack(j->depth, 1), from);
	sieve_path_batch_flush(ps->batch);
	sieve_path_via_release(pj->p.sp, via);
	sieve_path_via_release(pj->p.sp, from);
}

static void parse_work(void *ctx, void *state, void *item)
{
	struct parse_jobs *pj = ctx;
	struct crawl_job *j = item;
	if (j->replayed && state && !sieve_path_adding_stopped(pj->p.sp))
		add_replayed(pj, state, j);
	if (j->parse && state) {
		if (j->nsitemaps)
			add_robots_sitemaps(pj, state, j);
		else if (j->sitemap_level)
			parse_sitemap(pj, state, j);
		else
			parse_page(pj, state, j);
	}
	crawl_writer_push(pj->p.writer, j);
	pj->p.wake(pj->p.ctx);
}

int parse_jobs_create(const struct parse_jobs_parts *parts, struct parse_jobs **out)
{
	const struct crawl_config *cfg = parts->cfg;
	struct parse_jobs *pj = calloc(1, sizeof *pj);
	struct parse_pool_ops ops = { parse_init, parse_work, parse_fini };
	*out = NULL;
	if (!pj)
		return -1;
	pj->p = *parts;
	for (int i = 0; i < NEAR_DUP_STRIPES; i++)
		pthread_mutex_init(&pj->nd[i].mu, NULL);
	if (parse_pool_create(cfg->parse.threads, cfg->parse.queue + cfg->fetch.max_connections,
	                      &ops, pj, &pj->pool) != PARSE_POOL_OK) {
		fprintf(stderr, "crawler crawl: cannot start parse threads\n");
		parse_jobs_destroy(pj);
		return -1;
	}
	*out = pj;
	return 0;
}

int parse_jobs_try_submit(struct parse_jobs *pj, struct crawl_job *j)
{
	return parse_pool_try_submit(pj->pool, j) == PARSE_POOL_OK ? 0 : -1;
}

void parse_jobs_take(struct parse_jobs *pj, struct crawl_job *j)
{
	struct crawl_stats *s = pj->p.stats;
	/* Redirects, errors, images: two thirds of a crawl's responses. Through
	 * a parse thread they would cost two more thread wake-ups (that thread,
	 * then the loop) for nothing but the hand-on to the writer. */
	if (j->parse) {
		if (parse_jobs_try_submit(pj, j) == 0)
			return;
		s->parse_full++;
		j->parse = 0;
	}
	if (crawl_writer_try_push(pj->p.writer, j) != 0) {
		s->writer_full++;
		crawl_job_free(j);
	}
}

int parse_jobs_redirect_in_scope(struct parse_jobs *pj, const struct crawl_job *j, uint32_t *word)
{
	const char *to = j->redirect;
	if (!j->embed) {
		*word = frontier_depth_pack(j->depth, j->redirects);
		return scope_check(pj->p.scope, to, strlen(to), j->depth) == SCOPE_OK;
	}
	uint32_t hops = j->embed > 1 ? j->embed - 1 : 1;
	int off_domain = 0;
	if (scope_check_embed(pj->p.scope, to, strlen(to), j->depth,
	                      hops <= pj->p.cfg->crawl.requisites_hops, &off_domain) != SCOPE_OK)
		return 0;
	*word = frontier_depth_pack_embed(j->depth, j->redirects, off_domain ? hops + 1 : 1);
	return 1;
}

int parse_jobs_has_room(struct parse_jobs *pj, size_t in_flight)
{
	return parse_pool_queued(pj->pool) + in_flight + 1 <= parse_pool_capacity(pj->pool);
}

uint64_t parse_jobs_outstanding(struct parse_jobs *pj)
{
	return parse_pool_outstanding(pj->pool);
}

void parse_jobs_destroy(struct parse_jobs *pj)
{
	if (!pj)
		return;
	parse_pool_destroy(pj->pool);
	for (int i = 0; i < NEAR_DUP_STRIPES; i++) {
		struct near_dup_host *h = pj->nd[i].hosts;
		while (h) {
			struct near_dup_host *n = h->chain;
			free(h);
			h = n;
		}
		pthread_mutex_destroy(&pj->nd[i].mu);
	}
	free(pj);
}
