/*
 * parse_jobs.c: the parse threads' work (see parse_jobs.h).
 */
#include "crawler/parse_jobs.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/archive/previous.h"
#include "crawler/config/config.h"
#include "crawler/crawl_source.h"
#include "crawler/crawl_writer.h"
#include "crawler/link_meta.h"
#include "crawler/net/decode.h"
#include "crawler/net/fetch.h"
#include "crawler/sieve_path.h"
#include "crawler/sitemap_registry.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/warc_reader.h"
#include "frontier/base/header_field.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "frontier/url.h"
#include "frontier/url_rules_live.h"
#include "parse/focus.h"
#include "parse/links.h"
#include "parse/near_dup.h"
#include "parse/parse_pool.h"
#include "parse/simhash.h"
#include "parse/sitemap.h"

/* Counted by the parse threads (their meaning: struct parse_jobs_stats). */
struct parse_jobs_counters {
	atomic_uint_fast64_t parsed, links, scope_rejected, rules_rejected, nofollow, near_dups,
	        decode_errors, url_invalid, emit_dropped;
	atomic_uint_fast64_t sitemaps, sitemap_urls, sitemap_problems, sitemaps_dropped,
	        sitemap_malformed, sitemap_too_large, sitemap_too_many, sitemap_urls_over_limit;
	atomic_uint_fast64_t embeds, embeds_added, embeds_off_domain, stylesheets;
	atomic_uint_fast64_t earlier_parsed, earlier_unreadable;
	atomic_uint_fast64_t focus_scored, focus_on_topic, focus_score_sum;
};

struct parse_jobs {
	struct parse_jobs_parts p;
	struct links_config links; /* p.links with the focus terms */
	uint32_t focus_threshold;  /* [crawl] focus_threshold, FOCUS_SCORE_ONE units */
	struct parse_jobs_counters ac;
	struct parse_pool *pool;
	struct near_dup *nd;             /* NULL: near-duplicates not flagged */
	atomic_uint_fast64_t jobs_bytes; /* responses submitted, not yet handed to the writer */
	/* jobs submitted and not yet in the writer's queue: dropped only after
	 * the hand-on, before the loop is woken, so that the loop never counts
	 * a job in neither (parse_jobs_has_room) */
	atomic_uint_fast64_t jobs_in_parse;
	/* jobs to parse taken from the loop, not yet submitted to the pool
	 * (their records being written): dropped only after the submit, so
	 * that parse_jobs_outstanding never misses one */
	atomic_uint_fast64_t jobs_unsubmitted;
	atomic_uint_fast64_t parse_full; /* the writer thread's: parse_jobs_recorded */
	uint64_t writer_full;            /* loop thread: see parse_jobs_take */
	/* loop thread: a cluster inbox URL parsed again (parse_jobs_inbound) */
	struct url *inbound_u;
	char *inbound_key; /* FRONTIER_URL_MAX + 1 bytes */
};

/* One parse thread's own objects. */
struct parse_state {
	struct links_extractor *ex;
	struct url *u;
	struct link_batch *batch;
	struct sitemap_parser *sm; /* made at the thread's first sitemap */
	struct url_rules *rules;   /* the URL rules, held for the job at hand */
};

static void *parse_init(void *ctx)
{
	struct parse_jobs *pj = ctx;
	struct parse_state *ps = calloc(1, sizeof *ps);
	if (!ps)
		return NULL;
	ps->u = url_create(pj->p.url);
	ps->batch = crawl_source_batch(pj->p.source);
	if (!ps->u || !ps->batch || links_extractor_create(&pj->links, &ps->ex) != LINKS_OK) {
		url_destroy(ps->u);
		link_batch_destroy(ps->batch);
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
	link_batch_destroy(ps->batch);
	sitemap_parser_destroy(ps->sm);
	free(ps);
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

/* The URL rules' decision on crawl key key[len] found `depth` links from a
 * seed (rules: the list in hand; none decide when it is empty). */
static void rules_decide(struct url_rules *rules, const char *key, size_t len, uint32_t depth,
                         struct url_rules_decision *d)
{
	if (url_rules_size(rules) == 0)
		*d = (struct url_rules_decision){ .action = URL_RULES_NO_MATCH, .rule = -1 };
	else
		url_rules_decide(rules, key, len, depth, d);
}

/* The URL rules, then the scope, on crawl key key[len] at depth (as an
 * embed when es): SCOPE_OK, *priority the deciding rule's; a rejection
 * is counted by the rule or the scope. An accept lifts the domain limit
 * and sets the rule's depth=N for max_depth (scope.h). */
static enum scope_verdict judge(struct scope *scope, struct url_rules *rules, const char *key,
                                size_t len, uint32_t depth, struct embed_scope *es, int *priority)
{
	struct url_rules_decision d;
	int off_domain = 0;
	rules_decide(rules, key, len, depth, &d);
	*priority = d.priority;
	if (d.action == URL_RULES_REJECT)
		return SCOPE_VERDICT_COUNT;
	if (d.action == URL_RULES_ACCEPT) {
		enum scope_verdict v = scope_check_accepted(scope, key, len, depth, d.depth,
		                                            es ? &es->off_domain : &off_domain);
		return v;
	}
	return es ? scope_check_embed(scope, key, len, depth, es->allow_off_domain, &es->off_domain)
	          : scope_check(scope, key, len, depth);
}

/* One URL's crawl key in the thread's batch, judged by the URL rules and
 * the scope at depth (as an embed when es): the key, or NULL (counted).
 * A crawl key (is_key: the extractors write them, under the crawl's URL
 * options, and keys are idempotent, url.h) is copied, and parsed again
 * only when longer than the batch's slot, to fail; any other URL is
 * normalized. *priority: the deciding rule's. */
static char *batch_key(struct parse_jobs *pj, struct parse_state *ps, const char *url, size_t len,
                       int is_key, uint32_t depth, struct embed_scope *es, size_t *klen,
                       int *priority)
{
	struct parse_jobs_counters *ac = &pj->ac;
	size_t room;
	char *key = link_batch_slot(ps->batch, &room);
	*klen = len;
	if (is_key && len < room) {
		memcpy(key, url, len + 1);
	} else if (url_normalize(ps->u, NULL, url, len, key, room, klen) != URL_OK) {
		atomic_fetch_add(&ac->url_invalid, 1);
		return NULL;
	}
	enum scope_verdict v = judge(pj->p.scope, ps->rules, key, *klen, depth, es, priority);
	if (v == SCOPE_VERDICT_COUNT) {
		atomic_fetch_add(&ac->rules_rejected, 1);
		return NULL;
	}
	if (v != SCOPE_OK) {
		atomic_fetch_add(&ac->scope_rejected, 1);
		return NULL;
	}
	return key;
}

/* tier: the tier the URL takes when its rule gave no priority (its page's
 * focus tier, its sitemap priority's; 0: none). */
static int add_url(struct parse_jobs *pj, struct parse_state *ps, const char *url, size_t len,
                   int is_key, uint32_t depth, struct link_meta_via *via, int tier)
{
	size_t klen;
	int prio;
	if (!batch_key(pj, ps, url, len, is_key, depth, NULL, &klen, &prio))
		return 0;
	if (prio == 0)
		prio = tier;
	link_batch_add(ps->batch, klen, frontier_depth_with_priority(depth, prio), via);
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
	struct parse_jobs_counters *ac = &pj->ac;
	uint32_t from_hops = j->embed ? j->embed - 1 : 0;
	/* If it is off the domains: on the same (off) host as what named it,
	 * as many hops off; else one more. */
	uint32_t hops = from_hops > 0 && same_host(j->res->url, strlen(j->res->url), l->url, l->len)
	                        ? from_hops
	                        : from_hops + 1;
	struct embed_scope es = { hops <= pj->p.crawl->requisites_hops, 0 };
	size_t klen;
	int prio;
	atomic_fetch_add(&ac->embeds, 1);
	if (!batch_key(pj, ps, l->url, l->len, 1, j->depth, &es, &klen, &prio))
		return;
	atomic_fetch_add(&ac->embeds_added, 1);
	if (es.off_domain)
		atomic_fetch_add(&ac->embeds_off_domain, 1);
	uint32_t code = 1 + (es.off_domain ? hops : 0);
	link_batch_add(
	        ps->batch, klen,
	        frontier_depth_with_priority(frontier_depth_pack_embed(j->depth, 0, code), prio),
	        via);
}

/* A sitemap URL into the batch, registered first (level, scope) so that
 * its response is known for one whatever thread sees it. */
static void add_sitemap_url(struct parse_jobs *pj, struct parse_state *ps, const char *url,
                            size_t len, int is_key, uint32_t depth, unsigned level,
                            const char *scope, struct link_meta_via *via)
{
	size_t klen;
	int prio;
	char *key = batch_key(pj, ps, url, len, is_key, depth, NULL, &klen, &prio);
	if (!key)
		return;
	if (sitemap_registry_add(pj->p.sitemaps, key, klen, level, scope) < 0) {
		atomic_fetch_add(&pj->ac.sitemaps_dropped, 1);
		return;
	}
	link_batch_add(ps->batch, klen, frontier_depth_with_priority(depth, prio), via);
}

/* The page's links into the thread's batch, via the page's URL. */
static void add_links(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j,
                      const struct link *l, size_t n, struct link_meta_via *via)
{
	struct parse_jobs_counters *ac = &pj->ac;
	int tier =
	        pj->p.focus_tiers && j->has_focus ? focus_tier(j->focus, pj->focus_threshold) : 0;
	for (size_t i = 0; i < n; i++) {
		if (link_kind_is_embed(l[i].kind)) {
			add_embed(pj, ps, j, &l[i], via);
			continue;
		}
		atomic_fetch_add(&ac->links, 1);
		if (l[i].nofollow)
			atomic_fetch_add(&ac->nofollow, 1);
		else
			add_url(pj, ps, l[i].url, l[i].len, 1, j->depth + 1, via, tier);
	}
	/* Before the job counts as finished: "no parse job outstanding" then
	 * means every link found so far is in the sieve. */
	link_batch_flush(ps->batch);
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
	link_batch_flush(ps->batch);
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
		int tier =
		        w->pj->p.crawl->sitemap_priority ? sitemap_priority_tier(e->priority) : 0;
		if (add_url(w->pj, w->ps, e->url, e->len, 1, j->depth + 1, w->via, tier))
			atomic_fetch_add(&w->pj->ac.sitemap_urls, 1);
	} else if (level <= SITEMAP_INDEX_DEPTH_MAX) {
		add_sitemap_url(w->pj, w->ps, e->url, e->len, 1, j->depth, level, j->sitemap_scope,
		                w->via);
	} else {
		atomic_fetch_add(&w->pj->ac.sitemaps_dropped, 1);
	}
	return sieve_path_adding_stopped(w->pj->p.sp);
}

/* What a parsed sitemap's result says went wrong, by reason. What was
 * read before the problem was used: the first sitemap_max_urls entries,
 * those ended within sitemap_max_bytes, those before malformed XML. */
static void count_sitemap_problems(struct parse_jobs_counters *ac, const struct sitemap_result *sr)
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
	struct parse_jobs_counters *ac = &pj->ac;
	struct decode_output d = { 0 };
	struct sitemap_walk w = { .pj = pj, .ps = ps, .j = j };
	if (!ps->sm) {
		struct sitemap_config sc = { .max_locs = pj->p.crawl->sitemap_max_urls,
			                     .max_bytes = pj->p.crawl->sitemap_max_bytes,
			                     .max_tag_bytes = pj->p.crawl->sitemap_max_tag_bytes,
			                     .max_attributes = pj->p.crawl->sitemap_max_attributes,
			                     .scope = SITEMAP_SCOPE_HOST,
			                     .url_options = pj->p.url };
		if (sitemap_parser_create(&sc, &ps->sm) != SITEMAP_OK)
			return;
	}
	if (decode_body(res->content_encoding, res->body.data, res->body.len,
	                pj->p.fetch->max_body_bytes, &d) != DECODE_OK) {
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
	link_batch_flush(ps->batch);
	sieve_path_via_release(pj->p.sp, w.via);
	free(d.data);
}

/* Extracts an HTML page's links (and embeds, with requisites) into the
 * thread's extractor and marks a near-duplicate: 1 when its links are to
 * be added (not a meta robots nofollow page). */
static int extract_page(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j,
                        const char *content_type, const struct decode_output *d)
{
	struct fetch_result *res = j->res;
	struct parse_jobs_counters *ac = &pj->ac;
	char csbuf[64];
	const char *cs = charset_of(content_type, csbuf, sizeof csbuf);
	if (links_extract(ps->ex, res->url, cs, (const char *)d->data, d->len) != LINKS_OK)
		return 0;
	atomic_fetch_add(&ac->parsed, 1);
	const struct links_page *pg = links_page_info(ps->ex);
	if (pg->focus != FOCUS_SCORE_NONE) {
		j->has_focus = 1;
		j->focus = pg->focus;
		atomic_fetch_add(&ac->focus_scored, 1);
		atomic_fetch_add(&ac->focus_score_sum, pg->focus);
		if (pg->focus >= pj->focus_threshold)
			atomic_fetch_add(&ac->focus_on_topic, 1);
	}
	if (pj->nd && near_dup_check(pj->nd, j->host, pg->simhash)) {
		j->flags |= CRAWL_LOG_NEAR_DUP;
		atomic_fetch_add(&ac->near_dups, 1);
	}
	if (pg->nofollow) {
		atomic_fetch_add(&ac->nofollow, 1);
		return 0;
	}
	return 1;
}

/* The bytes of a page to parse: the fetch's, or its earlier capture's. */
struct page_bytes {
	const uint8_t *body;
	size_t len;
	const char *content_type, *content_encoding; /* NULL: none */
};

/* An HTML page's links, or a stylesheet's url()s (j->parse ==
 * CRAWL_PARSE_CSS), into the sieve. */
static void parse_page(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j,
                       const struct page_bytes *pb)
{
	struct fetch_result *res = j->res;
	struct parse_jobs_counters *ac = &pj->ac;
	struct decode_output d = { 0 };
	struct link_meta_via *via = NULL;
	if (decode_body(pb->content_encoding, pb->body, pb->len, pj->p.fetch->max_body_bytes, &d) !=
	    DECODE_OK) {
		atomic_fetch_add(&ac->decode_errors, 1);
		j->error = "decode";
		return;
	}
	if (j->parse == CRAWL_PARSE_CSS) {
		if (links_extract_css(ps->ex, res->url, (const char *)d.data, d.len) != LINKS_OK)
			goto out;
		atomic_fetch_add(&ac->stylesheets, 1);
	} else if (!extract_page(pj, ps, j, pb->content_type, &d)) {
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

/* An earlier capture is read this many bytes at a time (a page's record
 * is a few tens of KB as a rule; a larger one takes more reads). */
#define EARLIER_READ_BYTES (32u * 1024u)

/* A page answered 304 to a recrawl: the links of its earlier capture,
 * read back from the earlier crawl's WARC (an HTML response of the same
 * URL at the place its history names). A capture that cannot be read is
 * counted (earlier_unreadable): the page's links are then not followed
 * from here. */
static void parse_earlier(struct parse_jobs *pj, struct parse_state *ps, struct crawl_job *j)
{
	const struct previous_hit *h = j->earlier;
	struct warc_reader *r = NULL;
	struct warc_record rec;
	char *ct = NULL, *ce = NULL;
	size_t cap = pj->p.fetch->max_body_bytes + WARC_READER_HEADER_MAX;
	if (warc_reader_open(h->ref_path, h->e.ref_offset, cap, &r) != 0) {
		r = NULL;
		goto out;
	}
	/* one record, of a page: no read-ahead of the ones after it */
	warc_reader_read_size(r, EARLIER_READ_BYTES);
	if (warc_reader_next(r, &rec) != WARC_READ_RECORD || rec.type == NULL ||
	    strcmp(rec.type, "response") != 0 || rec.target_uri == NULL ||
	    strcmp(rec.target_uri, h->e.ref_uri) != 0 || rec.http_headers == NULL) {
		warc_reader_close(r);
		r = NULL;
		goto out;
	}
	warc_record_unchunk(&rec);
	ct = header_field_dup(rec.http_headers, rec.http_headers_len, "Content-Type", false);
	ce = header_field_dup(rec.http_headers, rec.http_headers_len, "Content-Encoding", true);
	if (fetch_type_is_html(ct)) {
		struct page_bytes pb = { rec.payload, rec.payload_len, ct, ce };
		atomic_fetch_add(&pj->ac.earlier_parsed, 1);
		parse_page(pj, ps, j, &pb);
	}
out:
	if (r == NULL)
		atomic_fetch_add(&pj->ac.earlier_unreadable, 1);
	free(ct);
	free(ce);
	warc_reader_close(r);
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
	int prio;
	if (via)
		add_url(pj, ps, url, strlen(url), 1, j->depth, via, 0);
	if (from &&
	    batch_key(pj, ps, j->redirect, strlen(j->redirect), 0, j->depth, NULL, &klen, &prio))
		link_batch_add(ps->batch, klen,
		               frontier_depth_with_priority(frontier_depth_pack(j->depth, 1), prio),
		               from);
	link_batch_flush(ps->batch);
	sieve_path_via_release(pj->p.sp, via);
	sieve_path_via_release(pj->p.sp, from);
}

/* What a job holds of its response: the buffers' sizes (not their
 * capacities, which libcurl's growth rounds up), and the job itself. */
static uint64_t job_bytes(const struct crawl_job *j)
{
	const struct fetch_result *r = j->res;
	if (!r)
		return sizeof *j;
	return sizeof *j + sizeof *r + r->request_headers.len + r->response_headers.len +
	       r->body.len;
}

static void parse_work(void *ctx, void *state, void *item)
{
	struct parse_jobs *pj = ctx;
	struct crawl_job *j = item;
	struct parse_state *ps = state;
	if (ps) /* one list for the whole job: rules added meanwhile judge the next */
		ps->rules = url_rules_live_get(pj->p.rules);
	if (j->replayed && ps && !sieve_path_adding_stopped(pj->p.sp))
		add_replayed(pj, ps, j);
	if (j->parse && ps) {
		if (j->nsitemaps)
			add_robots_sitemaps(pj, ps, j);
		else if (j->sitemap_level)
			parse_sitemap(pj, ps, j);
		else if (j->res->status == 304 && j->earlier)
			parse_earlier(pj, ps, j);
		else
			parse_page(pj, ps, j,
			           &(struct page_bytes){ j->res->body.data, j->res->body.len,
			                                 j->res->content_type,
			                                 j->res->content_encoding });
	}
	if (ps) {
		url_rules_live_put(pj->p.rules, ps->rules);
		ps->rules = NULL;
	}
	atomic_fetch_sub(&pj->jobs_bytes, job_bytes(j));
	crawl_writer_push(pj->p.writer, j);
	atomic_fetch_sub(&pj->jobs_in_parse, 1);
	pj->p.wake(pj->p.ctx);
}

int parse_jobs_create(const struct parse_jobs_parts *parts, struct parse_jobs **out)
{
	struct parse_jobs *pj = calloc(1, sizeof *pj);
	struct parse_pool_ops ops = { .init = parse_init, .work = parse_work, .fini = parse_fini };
	*out = NULL;
	if (!pj)
		return -1;
	pj->p = *parts;
	pj->links = *parts->links;
	pj->links.focus = parts->focus;
	pj->focus_threshold = (uint32_t)(parts->crawl->focus_threshold * FOCUS_SCORE_ONE + 0.5);
	pj->inbound_u = url_create(parts->url);
	pj->inbound_key = malloc(FRONTIER_URL_MAX + 1);
	if (!pj->inbound_u || !pj->inbound_key) {
		parse_jobs_destroy(pj);
		return -1;
	}
	struct near_dup_config nc = { parts->parse->near_dup_memory };
	if (parts->parse->near_dup && near_dup_create(&nc, &pj->nd) != NEAR_DUP_OK) {
		fprintf(stderr, "crawler crawl: cannot create the near-duplicate store\n");
		parse_jobs_destroy(pj);
		return -1;
	}
	if (parse_pool_create(parts->parse->threads,
	                      parts->parse->queue + parts->fetch->max_connections, &ops, pj,
	                      &pj->pool) != PARSE_POOL_OK) {
		fprintf(stderr, "crawler crawl: cannot start parse threads\n");
		parse_jobs_destroy(pj);
		return -1;
	}
	*out = pj;
	return 0;
}

int parse_jobs_try_submit(struct parse_jobs *pj, struct crawl_job *j)
{
	uint64_t b = job_bytes(j); /* j is the parse thread's once submitted */
	atomic_fetch_add(&pj->jobs_bytes, b);
	atomic_fetch_add(&pj->jobs_in_parse, 1);
	if (parse_pool_try_submit(pj->pool, j) == PARSE_POOL_OK)
		return 0;
	atomic_fetch_sub(&pj->jobs_in_parse, 1);
	atomic_fetch_sub(&pj->jobs_bytes, b);
	return -1;
}

void parse_jobs_take(struct parse_jobs *pj, struct crawl_job *j)
{
	/* Counted before the push: the writer may submit it at once. */
	int parse = j->parse != 0;
	if (parse)
		atomic_fetch_add(&pj->jobs_unsubmitted, 1);
	if (crawl_writer_try_push(pj->p.writer, j) != 0) {
		pj->writer_full++;
		crawl_job_free(j);
		if (parse)
			atomic_fetch_sub(&pj->jobs_unsubmitted, 1);
	}
}

int parse_jobs_recorded(struct parse_jobs *pj, struct crawl_job *j)
{
	/* Redirects, errors, images: two thirds of a crawl's responses. Through
	 * a parse thread they would cost two more thread wake-ups (that thread,
	 * then the writer) for nothing. */
	if (!j->parse)
		return -1;
	int rc = parse_jobs_try_submit(pj, j);
	if (rc != 0) {
		atomic_fetch_add(&pj->parse_full, 1);
		j->parse = 0;
	}
	atomic_fetch_sub(&pj->jobs_unsubmitted, 1);
	if (rc != 0)
		pj->p.wake(pj->p.ctx); /* the loop may wait for it to be parsed */
	return rc;
}

int parse_jobs_redirect_in_scope(struct parse_jobs *pj, const struct crawl_job *j, uint32_t *word)
{
	const char *to = j->redirect;
	uint32_t hops = j->embed > 1 ? j->embed - 1 : 1;
	struct embed_scope es = { hops <= pj->p.crawl->requisites_hops, 0 };
	int prio;
	struct url_rules *rules = url_rules_live_get(pj->p.rules);
	enum scope_verdict v =
	        judge(pj->p.scope, rules, to, strlen(to), j->depth, j->embed ? &es : NULL, &prio);
	url_rules_live_put(pj->p.rules, rules);
	if (v == SCOPE_VERDICT_COUNT)
		atomic_fetch_add(&pj->ac.rules_rejected, 1);
	if (v != SCOPE_OK)
		return 0;
	*word = j->embed ? frontier_depth_pack_embed(j->depth, j->redirects,
	                                             es.off_domain ? hops + 1 : 1)
	                 : frontier_depth_pack(j->depth, j->redirects);
	*word = frontier_depth_with_priority(*word, prio);
	return 1;
}

int parse_jobs_inbound(struct parse_jobs *pj, const char *url, size_t len, uint32_t word,
                       uint32_t *out)
{
	const struct crawl_limits *cl = pj->p.crawl;
	size_t klen;
	if (url_normalize(pj->inbound_u, NULL, url, len, pj->inbound_key, FRONTIER_URL_MAX + 1,
	                  &klen) != URL_OK ||
	    klen != len || memcmp(pj->inbound_key, url, len) != 0)
		return 0; /* not a crawl key of this crawl's */
	uint32_t embed = cl->page_requisites ? frontier_embed_of(word) : 0;
	uint32_t redirects = frontier_redirects_of(word);
	if (embed > cl->requisites_hops + 1)
		embed = cl->requisites_hops + 1;
	if (redirects > cl->max_redirects)
		redirects = cl->max_redirects;
	/* an embed off the domains is judged one hop off them at least */
	struct embed_scope es = { embed > 1, 0 };
	int prio;
	struct url_rules *rules = url_rules_live_get(pj->p.rules);
	enum scope_verdict v = judge(pj->p.scope, rules, url, len, frontier_depth_of(word),
	                             embed ? &es : NULL, &prio);
	url_rules_live_put(pj->p.rules, rules);
	if (v == SCOPE_VERDICT_COUNT)
		atomic_fetch_add(&pj->ac.rules_rejected, 1);
	if (v != SCOPE_OK)
		return 0;
	if (embed)
		embed = es.off_domain ? (embed > 1 ? embed : 2) : 1;
	if (prio == 0) /* the sender's focus or sitemap tier */
		prio = frontier_priority_of(word);
	*out = frontier_depth_with_priority(
	        frontier_depth_pack_embed(frontier_depth_of(word), redirects, embed), prio);
	return 1;
}

/* Answers received and not yet through the writer's queue and the parse
 * threads: their memory, and of them, those still waiting for their
 * records (in the writer's queue, or held) a kill loses. */
static uint64_t answers_waiting(struct parse_jobs *pj, size_t held)
{
	return atomic_load(&pj->jobs_in_parse) + crawl_writer_queued(pj->p.writer) + held;
}

int parse_jobs_has_room(struct parse_jobs *pj, size_t in_flight, size_t held)
{
	/* the writer submits the jobs it holds to parse without waiting */
	size_t to_parse = parse_pool_queued(pj->pool) + atomic_load(&pj->jobs_unsubmitted);
	if (to_parse + in_flight + held + 1 > parse_pool_capacity(pj->pool))
		return 0;
	if (answers_waiting(pj, held) < pj->p.parse->queue)
		return 1;
	/* The parse threads wake the loop as they hand a job on, the writer
	 * only when asked: ask, then look again, lest it wrote the last job
	 * in between. */
	crawl_writer_wake_after_next(pj->p.writer);
	return answers_waiting(pj, held) < pj->p.parse->queue;
}

uint64_t parse_jobs_outstanding(struct parse_jobs *pj)
{
	/* in this order: a job moves from the first count to the second */
	uint64_t n = atomic_load(&pj->jobs_unsubmitted);
	return n + parse_pool_outstanding(pj->pool);
}

void parse_jobs_near_dup_stats(struct parse_jobs *pj, struct near_dup_stats *s)
{
	memset(s, 0, sizeof *s);
	if (pj->nd)
		near_dup_stats(pj->nd, s);
}

void parse_jobs_stats(const struct parse_jobs *pj, struct parse_jobs_stats *out)
{
	const struct parse_jobs_counters *ac = &pj->ac;
	struct near_dup_stats nds = { 0 };
	if (pj->nd)
		near_dup_stats(pj->nd, &nds);
	out->mem_near_dup = nds.bytes;
	out->mem_queued = atomic_load(&pj->jobs_bytes);
	out->parsed = atomic_load(&ac->parsed);
	out->links = atomic_load(&ac->links);
	out->scope_rejected = atomic_load(&ac->scope_rejected);
	out->rules_rejected = atomic_load(&ac->rules_rejected);
	out->nofollow = atomic_load(&ac->nofollow);
	out->near_dups = atomic_load(&ac->near_dups);
	out->decode_errors = atomic_load(&ac->decode_errors);
	out->url_invalid = atomic_load(&ac->url_invalid);
	out->emit_dropped = atomic_load(&ac->emit_dropped);
	out->sitemaps = atomic_load(&ac->sitemaps);
	out->sitemap_urls = atomic_load(&ac->sitemap_urls);
	out->sitemap_problems = atomic_load(&ac->sitemap_problems);
	out->sitemaps_dropped = atomic_load(&ac->sitemaps_dropped);
	out->sitemap_malformed = atomic_load(&ac->sitemap_malformed);
	out->sitemap_too_large = atomic_load(&ac->sitemap_too_large);
	out->sitemap_too_many = atomic_load(&ac->sitemap_too_many);
	out->sitemap_urls_over_limit = atomic_load(&ac->sitemap_urls_over_limit);
	out->embeds = atomic_load(&ac->embeds);
	out->embeds_added = atomic_load(&ac->embeds_added);
	out->embeds_off_domain = atomic_load(&ac->embeds_off_domain);
	out->stylesheets = atomic_load(&ac->stylesheets);
	out->earlier_parsed = atomic_load(&ac->earlier_parsed);
	out->earlier_unreadable = atomic_load(&ac->earlier_unreadable);
	out->focus_scored = atomic_load(&ac->focus_scored);
	out->focus_on_topic = atomic_load(&ac->focus_on_topic);
	out->focus_score_sum = atomic_load(&ac->focus_score_sum);
	out->parse_full = atomic_load(&pj->parse_full);
	out->writer_full = pj->writer_full;
}

void parse_jobs_stop(struct parse_jobs *pj)
{
	if (!pj)
		return;
	parse_pool_destroy(pj->pool); /* a no-op when stopped before */
	pj->pool = NULL;
}

void parse_jobs_destroy(struct parse_jobs *pj)
{
	if (!pj)
		return;
	parse_jobs_stop(pj);
	near_dup_destroy(pj->nd);
	url_destroy(pj->inbound_u);
	free(pj->inbound_key);
	free(pj);
}
