/*
 * visit.c: the per-host visit state machine (see visit.h).
 */
#include "crawler/visit.h"
#include "crawler/visit_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/archive/previous.h"
#include "crawler/crawl_tail.h"
#include "crawler/sitemap_registry.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/done_set.h"
#include "frontier/base/array.h"
#include "frontier/base/clock.h"
#include "frontier/base/mem_cost.h"
#include "frontier/url.h"
#include "politeness/delay_policy.h"
#include "politeness/robots.h"

static void visit_next(struct visit *v, uint32_t host);
static void dns_done(void *ctx, enum dns_error err, const char *name, const struct ip_addr *addrs,
                     size_t naddrs);

/* ---- URLs (absolute and normalized here) ---- */

/* Resolves a Location against the URL that answered with it. Returns a
 * malloc'd string, NULL when it does not resolve: the crawl key when the
 * target is http(s) (*crawlable = 1), else the resolved href (*crawlable =
 * 0: logged, not followed). */
char *visit_resolve_location(struct visit *v, const char *base, const char *loc, int *crawlable)
{
	*crawlable = 0;
	if (url_parse(v->url_base, base, strlen(base), NULL) != URL_OK)
		return NULL;
	if (url_parse(v->url_target, loc, strlen(loc), v->url_base) != URL_OK)
		return NULL;
	size_t cap = url_href_cap(v->url_target) + 2, len;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	if (url_crawl_key(v->url_target, out, cap, &len) == URL_OK) {
		*crawlable = 1;
		return out;
	}
	const char *href = url_href(v->url_target, &len);
	if (len >= cap) {
		free(out);
		return NULL;
	}
	memcpy(out, href, len + 1);
	return out;
}

static int is_css(const char *ct)
{
	while (ct && *ct == ' ')
		ct++;
	return ct && strncasecmp(ct, "text/css", 8) == 0;
}

/* ---- the per-host table ---- */

struct host_state *visit_host_state(struct visit *v, uint32_t host)
{
	size_t b = host >> HOST_BLOCK_BITS;
	if (b >= v->n_blocks) {
		size_t n = v->n_blocks ? v->n_blocks : 16;
		while (n <= b)
			n *= 2;
		struct host_state **nb = realloc(v->blocks, n * sizeof *nb);
		if (!nb)
			return NULL;
		memset(nb + v->n_blocks, 0, (n - v->n_blocks) * sizeof *nb);
		v->blocks = nb;
		v->n_blocks = n;
	}
	if (!v->blocks[b]) {
		v->blocks[b] = calloc((size_t)1 << HOST_BLOCK_BITS, sizeof **v->blocks);
		if (!v->blocks[b])
			return NULL;
		v->blocks_made++;
	}
	return &v->blocks[b][host & ((1u << HOST_BLOCK_BITS) - 1)];
}

/* The host's entry if the table has its block, else NULL (no allocation). */
const struct host_state *visit_host_state_if_any(const struct visit *v, uint32_t host)
{
	size_t b = host >> HOST_BLOCK_BITS;
	if (b >= v->n_blocks || !v->blocks[b])
		return NULL;
	return &v->blocks[b][host & ((1u << HOST_BLOCK_BITS) - 1)];
}

int visit_host_get(struct visit *v, const char *url, size_t len, uint32_t *host)
{
	size_t kl, hs, hl;
	if (url_key_split(url, len, &kl, &hs, &hl) < 0)
		return -1;
	if (frontier_host_get(v->p.frontier, url, kl, 1, host) != FRONTIER_OK)
		return -1;
	return visit_host_state(v, *host) ? 0 : -1;
}

/* ---- robots.txt of a host (kept by politeness) ---- */

static enum politeness_robots_state robots_of(struct visit *v, uint32_t host,
                                              const struct robots **robots, uint64_t *expires_us)
{
	enum politeness_robots_state st;
	const struct robots *rob = NULL;
	uint64_t exp = 0;
	politeness_robots_state(v->p.pol, host, &st, &rob, &exp);
	if (robots)
		*robots = rob;
	if (expires_us)
		*expires_us = exp;
	return st;
}

/* Takes robots (freed by politeness, even when the call fails). */
void visit_set_robots(struct visit *v, uint32_t host, enum politeness_robots_state st,
                      struct robots *robots, uint64_t expires_us)
{
	politeness_robots_set(v->p.pol, host, st, robots, expires_us);
}

/* ---- counters ---- */

void visit_count_fetch_error(struct visit *v, enum fetch_error e)
{
	if ((size_t)e < VISIT_ERRORS)
		v->st.fetch_errors[e]++;
}

void visit_count_dns_error(struct visit *v, enum dns_error e)
{
	v->st.dns_errors[(size_t)e < VISIT_ERRORS ? e : VISIT_ERRORS - 1]++;
}

void visit_stats(const struct visit *v, struct visit_stats *out)
{
	*out = v->st;
	out->mem_bytes = v->blocks_made * mem_alloc_cost(sizeof **v->blocks << HOST_BLOCK_BITS) +
	                 v->n_blocks * sizeof *v->blocks + v->dns_wait_cap * sizeof *v->dns_wait;
}

uint64_t visit_pages_started(const struct visit *v)
{
	return v->st.pages_started;
}

/* ---- states ---- */

static const char *const state_names[] = { "IDLE", "RESOLVE", "ROBOTS", "FETCH" };
static const char *const dns_names[] = { "NONE", "PENDING", "OK", "FAILED" };
static const char *const outcome_names[] = {
	[VISIT_OK] = "OK",
	[VISIT_ERROR] = "ERROR",
	[VISIT_RETRY_LATER] = "RETRY_LATER",
	[VISIT_NONE] = "NONE",
};
#define NAME_OF(names, i) ((size_t)(i) < sizeof(names) / sizeof(names)[0] ? (names)[i] : "?")

/* A change of a host's state as one line on stderr ([crawl] trace_visits;
 * curl's multistate() manner): when (ms since the visit was created), the
 * host, what changed, from what to what, and why. */
static void trace(struct visit *v, uint32_t host, const char *what, const char *from,
                  const char *to, const char *why)
{
	size_t kl = 0;
	const char *key = frontier_host_key(v->p.frontier, host, &kl);
	fprintf(stderr, "visit %" PRIu64 " ms %.*s: %s %s -> %s (%s)\n",
	        (monotonic_us() - v->trace_t0_us) / 1000, key ? (int)kl : 1, key ? key : "?", what,
	        from, to, why);
}

/* Every change of a host's visit state (visit.h draws them), traced. */
void visit_set_state(struct visit *v, uint32_t host, enum visit_state st, const char *why)
{
	struct host_state *hs = visit_host_state(v, host);
	if (v->trace)
		trace(v, host, "state", NAME_OF(state_names, hs->state), NAME_OF(state_names, st),
		      why);
	hs->state = (uint8_t)st;
}

/* The visit's outcome so far (what politeness_release gets), traced when
 * it changes. */
void visit_set_outcome(struct visit *v, uint32_t host, enum visit_kind kind, const char *why)
{
	struct host_state *hs = visit_host_state(v, host);
	if (v->trace && hs->outcome != kind)
		trace(v, host, "outcome", NAME_OF(outcome_names, hs->outcome),
		      NAME_OF(outcome_names, kind), why);
	hs->outcome = (uint8_t)kind;
}

/* The host's DNS answer, traced when it changes. */
void visit_set_dns(struct visit *v, uint32_t host, enum host_dns dns, const char *why)
{
	struct host_state *hs = visit_host_state(v, host);
	if (v->trace && hs->dns != dns)
		trace(v, host, "dns", NAME_OF(dns_names, hs->dns), NAME_OF(dns_names, dns), why);
	hs->dns = (uint8_t)dns;
}

void visit_end(struct visit *v, uint32_t host, const char *why)
{
	struct host_state *hs = visit_host_state(v, host);
	struct visit_outcome o = {
		.kind = hs->visit_requests ? (enum visit_kind)hs->outcome : VISIT_NONE,
		.start_us = hs->visit_start_us,
		.requests = hs->visit_requests,
		.retry_after_us = hs->retry_after_us,
	};
	char line[200];
	if (v->trace) {
		snprintf(line, sizeof line, "%s; released %s, %" PRIu32 " requests", why,
		         NAME_OF(outcome_names, o.kind), o.requests);
		why = line;
	}
	visit_set_state(v, host, VISIT_IDLE, why);
	politeness_release(v->p.pol, host, &o, monotonic_us());
}

/* ---- requests ---- */

void visit_req_release(struct visit *v, struct req *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else if (v->live == q)
		v->live = q->next;
	if (q->next)
		q->next->prev = q->prev;
	free(q->url);
	free(q->via);
	free(q->earlier);
	free(q);
}

/* ---- addresses ---- */

uint8_t visit_family_bit(enum ip_family f)
{
	return f == IP_V4 ? 1 : f == IP_V6 ? 2 : 0;
}

/* The address a host's requests go to, from its DNS answer (the preferred
 * family first, dns.h): the first one allowed (not in a refused range,
 * unless allow_private_networks) whose family a connect has not failed on,
 * else the first allowed one (every family failed: try again in order).
 * *families (may be NULL) gets the visit_family_bit()s of the allowed ones.
 * NULL when none is allowed. */
const struct ip_addr *visit_addr_choose(struct visit *v, const struct ip_addr *addrs, size_t naddrs,
                                        uint8_t failed, uint8_t *families)
{
	const struct ip_addr *first = NULL, *best = NULL;
	uint8_t fams = 0;
	for (size_t i = 0; i < naddrs; i++) {
		char ip[IP_ADDR_STRLEN];
		ip_addr_format(&addrs[i], ip, sizeof ip);
		if (!v->p.fetch_config->allow_private_networks && fetch_addr_is_private(ip))
			continue;
		fams |= visit_family_bit(addrs[i].family);
		if (first == NULL)
			first = &addrs[i];
		if (best == NULL && !(failed & visit_family_bit(addrs[i].family)))
			best = &addrs[i];
	}
	if (families != NULL)
		*families = fams;
	return best != NULL ? best : first;
}

/* Starts a request of a held host's visit: to the host's own address, or
 * to ip (a robots.txt redirect to another host). depth: the URL's depth
 * word (its redirect count is `redirects`). 0 (started, or waiting for its
 * IP's lease, or put back and the visit ended: see visit_lease_ask), or -1
 * (counted). */
int visit_start_fetch(struct visit *v, uint32_t host, const char *url, uint32_t depth,
                      const char *via, int robots, int redirects, const char *ip)
{
	struct host_state *hs = visit_host_state(v, host);
	struct req *q = calloc(1, sizeof *q);
	if (!q)
		return -1;
	q->v = v;
	q->host = host;
	q->depth = frontier_depth_of(depth);
	q->embed = frontier_embed_of(depth);
	q->priority = frontier_priority_of(depth);
	q->robots = robots;
	q->redirects = redirects;
	q->wait_us = hs->visit_requests == 0 ? hs->visit_wait_us : 0;
	q->via = strdup(via ? via : "");
	q->url = strdup(url);
	q->next = v->live;
	if (v->live)
		v->live->prev = q;
	v->live = q;
	if (!q->via || !q->url) {
		visit_req_release(v, q);
		return -1;
	}
	struct ip_addr addr;
	if (ip)
		snprintf(q->ip, sizeof q->ip, "%s", ip);
	else if (politeness_host_ip(v->p.pol, host, &addr))
		ip_addr_format(&addr, q->ip, sizeof q->ip);
	q->own_addr = ip == NULL;
	if (visit_lease_ask(v, q))
		return 0;
	return visit_req_send(v, q);
}

int visit_req_send(struct visit *v, struct req *q)
{
	struct fetch_request fr = {
		.url = q->url, .ip = q->ip, .user = q, .flags = q->robots ? FETCH_FLAG_ROBOTS : 0
	};
	/* A recrawl asks for a page on the earlier capture's validators. */
	if (v->p.previous && !q->robots && !q->embed && !q->earlier_looked) {
		q->earlier = previous_lookup(v->p.previous, q->url, strlen(q->url));
		q->earlier_looked = 1;
		if (q->earlier && (q->earlier->e.etag || q->earlier->e.last_modified))
			v->st.conditional++;
	}
	if (q->earlier) {
		fr.if_none_match = q->earlier->e.etag;
		fr.if_modified_since = q->earlier->e.last_modified;
	}
	enum fetch_error e = v->p.net.start(v->p.net.ctx, &fr);
	if (e != FETCH_OK) {
		visit_count_fetch_error(v, e);
		visit_req_release(v, q);
		return -1;
	}
	visit_host_state(v, q->host)->visit_requests++;
	v->st.requests++;
	return 0;
}

/* ---- RESOLVE ---- */

void visit_retire_host(struct visit *v, uint32_t host)
{
	uint64_t n = 0;
	frontier_host_retire(v->p.frontier, host, NULL, NULL, &n);
}

/* Held host (its token) waiting for the resolver to have room for one
 * more lookup: started, in order, as lookups end (visit_dns_line_run). */
static int dns_wait_push(struct visit *v, uint32_t host)
{
	if (v->dns_wait_n == v->dns_wait_cap) {
		if (v->dns_wait_head > 0) {
			memmove(v->dns_wait, v->dns_wait + v->dns_wait_head,
			        (v->dns_wait_n - v->dns_wait_head) * sizeof *v->dns_wait);
			v->dns_wait_n -= v->dns_wait_head;
			v->dns_wait_head = 0;
		}
		if (v->dns_wait_n == v->dns_wait_cap) {
			size_t cap = v->dns_wait_cap ? 2 * v->dns_wait_cap : 256;
			uint32_t *q = realloc(v->dns_wait, cap * sizeof *q);
			if (!q)
				return -1;
			v->dns_wait = q;
			v->dns_wait_cap = cap;
		}
	}
	v->dns_wait[v->dns_wait_n++] = host;
	return 0;
}

/* A host that will never resolve: its URLs go, its visit ends. */
static void host_unresolvable(struct visit *v, uint32_t host, const char *why)
{
	visit_set_dns(v, host, HOST_DNS_FAILED, why);
	visit_retire_host(v, host);
	visit_end(v, host, why);
}

/* Starts the lookup of a held host's name; the visit goes on in dns_done.
 * Returns 0, or -1 when the resolver is at max_pending: the host, still
 * held, is then put in line, or stays first in it (in_line: it is the
 * line's front, which the caller removes only on 0). */
static int resolve_host(struct visit *v, uint32_t host, int in_line)
{
	struct host_state *hs = visit_host_state(v, host);
	size_t hl;
	const char *name = frontier_host_name(v->p.frontier, host, &hl);
	if (hs->dns == HOST_DNS_FAILED || name == NULL || hl == 0) {
		visit_retire_host(v, host);
		visit_end(v, host, "no name to resolve");
		return 0;
	}
	struct dns_wait *w = malloc(sizeof *w);
	if (!w) {
		visit_end(v, host, "out of memory");
		return 0;
	}
	w->v = v;
	w->host = host;
	visit_set_state(v, host, VISIT_RESOLVE, "no address yet");
	visit_set_dns(v, host, HOST_DNS_PENDING, "lookup");
	v->in_dns_call++;
	enum dns_error e = v->p.net.resolve(v->p.net.ctx, name, dns_done, w);
	v->in_dns_call--;
	if (e == DNS_OK)
		return 0;
	free(w);
	if (e == DNS_ERR_BUSY && (in_line || dns_wait_push(v, host) == 0))
		return -1; /* HOST_DNS_PENDING: in line */
	visit_set_dns(v, host, HOST_DNS_NONE, dns_strerror(e));
	visit_count_dns_error(v, e);
	if (e == DNS_ERR_INVALID) { /* not a name (a label or the whole too long) */
		v->st.hosts_dns_failed++;
		host_unresolvable(v, host, dns_strerror(e));
		return 0;
	}
	visit_set_outcome(v, host, VISIT_RETRY_LATER, "lookup not started");
	hs->visit_requests = 1; /* so the retry delay applies */
	hs->retry_after_us = monotonic_us() + 1000000u;
	visit_end(v, host, "lookup not started");
	return 0;
}

void visit_dns_start_waiting(struct visit *v)
{
	/* The front leaves the line only once its lookup started: pushing it
	 * again may compact the line (moving its head), and the line cannot
	 * be unpushed from then on. A push during resolve_host (a callback
	 * ending another visit) keeps the front first, at the new head. */
	while (v->dns_wait_head < v->dns_wait_n && !*v->p.finished) {
		if (resolve_host(v, v->dns_wait[v->dns_wait_head], 1) < 0)
			break;
		v->dns_wait_head++;
	}
	if (v->dns_wait_head == v->dns_wait_n)
		v->dns_wait_head = v->dns_wait_n = 0;
}

void visit_dns_line_run(struct visit *v)
{
	if (v->dns_wait_head < v->dns_wait_n && !v->in_dns_call)
		visit_dns_start_waiting(v);
}

/* A lookup's answer; the visit ends either way (VISIT_NONE on success:
 * the host comes back under its IP's token). */
static void dns_answered(struct visit *v, uint32_t host, enum dns_error err,
                         const struct ip_addr *addrs, size_t naddrs)
{
	struct host_state *hs = visit_host_state(v, host);
	if (*v->p.finished) {
		visit_set_dns(v, host, HOST_DNS_NONE, "crawl over");
		return;
	}
	if (err != DNS_OK || naddrs == 0) {
		const char *why = err != DNS_OK ? dns_strerror(err) : "no address";
		visit_count_dns_error(v, err);
		if (err == DNS_ERR_TIMEOUT || err == DNS_ERR_SERVFAIL || err == DNS_ERR_BUSY) {
			/* Transient: the host backs off as after a failed visit and
			 * is retired only after max_consecutive_errors of them. */
			visit_set_dns(v, host, HOST_DNS_NONE, why);
			visit_set_outcome(v, host, VISIT_ERROR, why);
			hs->visit_requests = 1;
			visit_end(v, host, why);
		} else {
			v->st.hosts_dns_failed++;
			host_unresolvable(v, host, why);
		}
		return;
	}
	const struct ip_addr *a = visit_addr_choose(v, addrs, naddrs, hs->failed, &hs->families);
	if (a == NULL) {
		v->st.private_refused++;
		host_unresolvable(v, host, "private address refused");
		return;
	}
	visit_set_dns(v, host, HOST_DNS_OK, "answered");
	politeness_host_set_ip(v->p.pol, host, a);
	visit_end(v, host, "resolved"); /* VISIT_NONE: back under the IP's token */
}

/* The resolver's callback: the host's visit goes on, then hosts waiting in
 * line for the resolver take the room this lookup left. A synchronous
 * answer (inside dns_resolve) leaves both to the caller's pump. */
static void dns_done(void *ctx, enum dns_error err, const char *name, const struct ip_addr *addrs,
                     size_t naddrs)
{
	(void)name;
	struct dns_wait *w = ctx;
	struct visit *v = w->v;
	uint32_t host = w->host;
	int was_finished = *v->p.finished;
	free(w);
	dns_answered(v, host, err, addrs, naddrs);
	if (v->in_dns_call)
		return;
	if (!was_finished)
		v->p.hooks.pump(v->p.hooks.ctx);
	visit_dns_start_waiting(v);
}

/* ---- FETCH ---- */

void visit_begin(struct visit *v, uint32_t host)
{
	struct host_state *hs = visit_host_state(v, host);
	if (!hs)
		return;
	hs->visit_requests = 0;
	visit_set_outcome(v, host, VISIT_OK, "visit begins");
	hs->retry_after_us = 0;
	hs->visit_start_us = monotonic_us();
	hs->visit_wait_us = politeness_host_wait(v->p.pol, host);
	politeness_visit_budget(v->p.pol, host, &hs->visit_max_urls, &hs->visit_max_us);
	if (hs->dns != HOST_DNS_OK) {
		resolve_host(v, host, 0);
		return;
	}
	visit_set_state(v, host, VISIT_FETCH, "visit begins");
	visit_next(v, host); /* robots.txt first if it is due */
}

/* Why the visit must end before its next request, or NULL. */
static const char *visit_over(struct visit *v, const struct host_state *hs)
{
	if (*v->p.stopping)
		return "stopping";
	if (hs->outcome != VISIT_OK)
		return "answer ends the visit";
	if (hs->visit_requests >= hs->visit_max_urls)
		return "budget: URLs";
	if (hs->visit_requests && monotonic_us() - hs->visit_start_us >= hs->visit_max_us)
		return "budget: time";
	if (!v->p.hooks.page_allowed(v->p.hooks.ctx))
		return "no more pages allowed";
	if (!v->p.hooks.can_start(v->p.hooks.ctx))
		return "no room for a transfer";
	return NULL;
}

/* 1 if robots.txt forbids the URL. */
static int disallowed(struct visit *v, uint32_t host, const struct frontier_url *fu)
{
	const struct robots *rob = NULL;
	char path[FRONTIER_URL_MAX + 8];
	if (!v->p.crawl->obey_robots)
		return 0;
	robots_of(v, host, &rob, NULL);
	return rob && (robots_path_from_url(fu->url, fu->url_len, path, sizeof path) != ROBOTS_OK ||
	               !robots_allowed(rob, path, strlen(path)));
}

/* Ends a turn of host's visit that dropped max_disallowed_per_turn URLs:
 * the host, still held, goes on at the next pump. 0, or -1 (no memory:
 * the visit goes on now). */
static int yield_turn(struct visit *v, uint32_t host)
{
	uint32_t *y = array_grow(v->yielded, &v->yielded_cap, v->yielded_n, sizeof *y, 16);
	if (!y)
		return -1;
	v->yielded = y;
	v->yielded[v->yielded_n++] = host;
	visit_host_state(v, host)->yielded = 1;
	v->st.disallowed_yields++;
	v->p.hooks.pump_soon(v->p.hooks.ctx);
	return 0;
}

void visit_yielded_run(struct visit *v)
{
	size_t n = v->yielded_n;
	if (n == 0 || *v->p.finished)
		return;
	/* those that yield again are appended: they wait for the next pump */
	for (size_t i = 0; i < n; i++) {
		visit_host_state(v, v->yielded[i])->yielded = 0;
		visit_continue(v, v->yielded[i]);
	}
	memmove(v->yielded, v->yielded + n, (v->yielded_n - n) * sizeof *v->yielded);
	v->yielded_n -= n;
}

/* 1 if robots.txt is to be fetched before the host's next URL: never
 * fetched, forgotten (the cache's bound), or expired. */
static int robots_due(struct visit *v, uint32_t host)
{
	uint64_t exp;
	enum politeness_robots_state st = robots_of(v, host, NULL, &exp);
	return v->p.crawl->obey_robots &&
	       (st == POLITENESS_ROBOTS_UNKNOWN ||
	        (st == POLITENESS_ROBOTS_KNOWN && exp && exp < monotonic_us()));
}

static void visit_next(struct visit *v, uint32_t host)
{
	struct host_state *hs = visit_host_state(v, host);
	uint32_t dropped = 0, turn = v->p.crawl->max_disallowed_per_turn;
	for (;;) {
		struct frontier_url fu;
		const char *over = visit_over(v, hs);
		if (over || frontier_host_queued(v->p.frontier, host) == 0) {
			visit_end(v, host, over ? over : "queue empty");
			return;
		}
		if (robots_due(v, host)) {
			visit_start_robots(v, host);
			return;
		}
		if (frontier_pop(v->p.frontier, host, &fu) != FRONTIER_OK) {
			visit_end(v, host, "queue empty");
			return;
		}
		/* fetched after the checkpoint, found in its tail (crawl_tail.h) */
		if (done_set_take(v->p.done, fu.url, fu.url_len)) {
			v->st.tail_skipped++;
			continue;
		}
		if (disallowed(v, host, &fu)) {
			v->st.robots_disallowed++;
			if (turn && ++dropped >= turn && yield_turn(v, host) == 0)
				return;
			continue;
		}
		if (v->p.hooks.dropped &&
		    v->p.hooks.dropped(v->p.hooks.ctx, fu.url, fu.url_len, fu.depth))
			continue;
		char *url = strndup(fu.url, fu.url_len);
		char *via = strndup(fu.via, fu.via_len);
		/* counted first: a request put back at once uncounts itself */
		v->st.pages_started++;
		int rc = (url && via)
		                 ? visit_start_fetch(v, host, url, fu.depth, via, 0,
		                                     (int)frontier_redirects_of(fu.depth), NULL)
		                 : -1;
		free(url);
		free(via);
		if (rc == 0)
			return; /* one request per host in flight; visit_continue goes on */
		v->st.pages_started--;
	}
}

void visit_continue(struct visit *v, uint32_t host)
{
	const struct host_state *hs = visit_host_state(v, host);
	if (hs->state == VISIT_FETCH && !hs->yielded)
		visit_next(v, host);
}

/* ---- results ---- */

static void count_status(struct visit_stats *s, long status, uint64_t bytes)
{
	if (status >= 0 && status < VISIT_STATUS_MAX)
		s->status[status]++;
	else
		s->status_other++;
	s->bytes += bytes;
}

/* Counts a result and what it says about the host's visit. */
static void count_result(struct visit *v, uint32_t host, struct host_state *hs,
                         const struct fetch_result *res)
{
	if (res->error != FETCH_OK) {
		visit_count_fetch_error(v, res->error);
		/* A reused connection the server closed: no error of the host's;
		 * the visit ends and the next waits the usual delay. */
		if (res->reuse_dropped && hs->outcome == VISIT_OK)
			visit_set_outcome(v, host, VISIT_RETRY_LATER, "reused connection dropped");
		else if (res->error != FETCH_ERR_CANCELLED)
			visit_set_outcome(v, host, VISIT_ERROR, fetch_strerror(res->error));
		return;
	}
	hs->reuse_drops = 0;
	count_status(&v->st, res->status, res->body.len);
	if (res->status == 429 || (res->status == 503 && res->retry_after_s >= 0)) {
		visit_set_outcome(v, host, VISIT_RETRY_LATER, res->status == 429 ? "429" : "503");
		uint64_t ra = res->retry_after_s >= 0 ? (uint64_t)res->retry_after_s : 60u;
		hs->retry_after_us = delay_policy_after_seconds(monotonic_us(), ra);
	} else if (res->status >= 500) {
		visit_set_outcome(v, host, VISIT_ERROR, "5xx");
	}
}

/* q's URL back at the front of its host's queue, with its depth and
 * redirect count (via: q's, or the job's once it took it). 1 when so. */
static int req_unpop(struct visit *v, const struct req *q, const char *via)
{
	uint32_t word = frontier_depth_pack_embed(q->depth, (uint32_t)q->redirects, q->embed);
	return frontier_unpop(v->p.frontier, q->host, q->url, strlen(q->url), via, strlen(via),
	                      frontier_depth_with_priority(word, q->priority)) == FRONTIER_OK;
}

/* A page whose reused connection closed before answering (libcurl's
 * immediate re-send refused, fetch.h): back at the front of its queue, to
 * be fetched at the host's next visit, after the politeness delay. 1 when
 * so (its log line is then an attempt: CRAWL_LOG_REQUEUED). */
static int page_requeue(struct visit *v, struct req *q, const char *via)
{
	struct host_state *hs = visit_host_state(v, q->host);
	if (hs->reuse_drops >= VISIT_MAX_REUSE_DROPS || !req_unpop(v, q, via))
		return 0;
	hs->reuse_drops++;
	v->st.reuse_retries++;
	return 1;
}

/* A page (not robots.txt): its redirect, whether to parse it. */
static void page_result(struct visit *v, struct req *q, struct fetch_result *res,
                        struct crawl_job *j, int *follow)
{
	v->st.pages_done++;
	if (res->reuse_dropped && !*v->p.stopping && page_requeue(v, q, j->via ? j->via : ""))
		j->flags |= CRAWL_LOG_REQUEUED;
	frontier_host_account(v->p.frontier, q->host, 1, res->body.len);
	if (res->error == FETCH_OK && res->status >= 300 && res->status < 400 && res->location) {
		int crawlable;
		j->flags |= CRAWL_LOG_REDIRECT;
		j->redirect = visit_resolve_location(v, res->url, res->location, &crawlable);
		j->redirects = (uint32_t)q->redirects + 1;
		v->st.redirects++;
		*follow = j->redirect && crawlable;
		/* An endless chain ends here: the hop count came with the URL. */
		if (*follow && (uint32_t)q->redirects >= v->p.crawl->max_redirects) {
			v->st.redirect_limit++;
			*follow = 0;
		}
	}
	int ok = res->error == FETCH_OK && res->status >= 200 && res->status < 300 &&
	         res->body.len > 0;
	unsigned level;
	if (v->p.sitemaps &&
	    sitemap_registry_take(v->p.sitemaps, res->url, &level, &j->sitemap_scope)) {
		j->sitemap_level = level + 1;
		j->parse = ok;
		return;
	}
	/* An embed is not parsed for links; a stylesheet is, for its url()s,
	 * when requisites are fetched. */
	if (v->p.crawl->page_requisites && is_css(res->content_type))
		j->parse = ok ? CRAWL_PARSE_CSS : 0;
	else
		j->parse = ok && !q->embed && fetch_type_is_html(res->content_type);
	/* a page not modified since the earlier crawl: its links are those of
	 * the earlier capture (parse_jobs.h reads it), discovery goes on */
	if (res->error == FETCH_OK && res->status == 304 && j->earlier && !q->embed)
		j->parse = 1;
}

/* ---- falling back to the other address family ---- */

/* The request back where it came from, to be made again (its via kept). */
static void req_put_back(struct visit *v, struct req *q)
{
	if (q->robots) {
		visit_set_robots(v, q->host, POLITENESS_ROBOTS_UNKNOWN, NULL, 0);
		if (q->redirects == 0)
			v->st.robots_fetches--; /* made again */
	} else {
		/* a retired host's queue counts it as dropped */
		(void)req_unpop(v, q, q->via);
		v->st.pages_started--;
	}
}

void visit_req_put_back(struct visit *v, struct req *q)
{
	req_put_back(v, q);
	visit_req_release(v, q);
}

/* 1 when res is a connect that failed: no byte of the request went out
 * (refused, unreachable, or the connect or TLS handshake timed out). */
static int connect_failed(const struct fetch_result *res)
{
	return (res->error == FETCH_ERR_CONNECT || res->error == FETCH_ERR_TIMEOUT) &&
	       res->request_headers.len == 0;
}

/* A failed connect to the host's own address, as its visit's first
 * request, when the host has an allowed address of a family that has not
 * failed yet: the request goes back (a page to the front of its queue,
 * robots.txt to unknown) and the visit ends as an ordinary one (the host
 * rests its delay, as the crawl log's account of it requires: the attempt
 * is a line there; no error is counted); the host is resolved again (a
 * cache hit), takes that address (addr_choose) and comes back under its
 * group's token. Each family is given up once
 * per host, so a host whose families both fail does not go back and
 * forth. Returns 1 when so (the result is only logged). */
static int family_fallback(struct visit *v, struct req *q, struct host_state *hs,
                           const struct fetch_result *res)
{
	struct ip_addr addr;
	if (!q->own_addr || *v->p.finished || hs->visit_requests != 1 || !connect_failed(res) ||
	    !politeness_host_ip(v->p.pol, q->host, &addr))
		return 0;
	uint8_t failed = hs->failed | visit_family_bit(addr.family);
	if ((hs->families & ~failed) == 0)
		return 0;
	hs->failed = failed;
	visit_set_dns(v, q->host, HOST_DNS_NONE, "connect failed: the other family next");
	req_put_back(v, q);
	v->st.family_fallbacks++;
	visit_end(v, q->host, "family fallback"); /* VISIT_OK: one delay's rest, no error */
	return 1;
}

struct crawl_job *visit_result(struct visit *v, struct fetch_result *res, int *follow)
{
	struct req *q = res->user;
	struct host_state *hs = visit_host_state(v, q->host);
	struct crawl_job *j = calloc(1, sizeof *j);
	*follow = 0;
	visit_lease_done(v, q);
	if (!j) {
		fetch_result_free(res);
		visit_req_release(v, q);
		return NULL;
	}
	j->res = res;
	j->host = q->host;
	j->depth = q->depth;
	j->embed = q->embed;
	if (q->embed)
		j->flags |= CRAWL_LOG_EMBED;
	j->robots = q->robots;
	j->via = q->via;
	j->wait_us = q->wait_us;
	j->earlier = q->earlier; /* the job's now */
	q->earlier = NULL;
	if (q->robots)
		j->flags |= CRAWL_LOG_ROBOTS;
	int fell_back = family_fallback(v, q, hs, res);
	q->via = NULL; /* the job's now */
	if (fell_back) {
		j->flags |= CRAWL_LOG_REQUEUED;
		visit_req_release(v, q);
		return j;
	}
	count_result(v, q->host, hs, res);
	if (q->robots) {
		if (!*v->p.finished)
			visit_robots_answer(v, q, res, j);
	} else {
		page_result(v, q, res, j, follow);
	}
	visit_req_release(v, q);
	return j;
}

int visit_replayed(struct visit *v, uint32_t host, const struct crawl_tail_entry *e)
{
	struct visit_stats *s = &v->st;
	const struct robots *rules;
	/* a robots.txt answer sets the rules, as its live fetch did (only a
	 * 2xx one needs its payload); a redirect's chain, an unreachable one or
	 * (with sitemaps) its Sitemap lines are left to a new fetch */
	if (e->robots && ((!e->body && e->status >= 200 && e->status < 300) ||
	                  (e->status >= 300 && e->status < 400) || v->p.sitemaps ||
	                  visit_robots_take(v, host, e->status, e->content_encoding, e->body,
	                                    e->body_len, &rules) != ROBOTS_TAKEN))
		return -1;
	if (e->status < 0 && -e->status < VISIT_ERRORS)
		visit_count_fetch_error(v, (enum fetch_error)(-e->status));
	else if (e->status >= 0)
		count_status(s, e->status, e->bytes);
	s->requests++;
	if (e->robots) {
		s->robots_fetches++;
		return 0;
	}
	s->pages_started++;
	s->pages_done++;
	frontier_host_account(v->p.frontier, host, 1, e->bytes);
	return 0;
}

/* ---- set-up and teardown ---- */

struct visit *visit_create(const struct visit_parts *parts)
{
	struct visit *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->p = *parts;
	v->trace = parts->crawl->trace_visits;
	v->trace_t0_us = monotonic_us();
	v->url_base = url_create(parts->url);
	v->url_target = url_create(parts->url);
	if (!v->url_base || !v->url_target) {
		visit_destroy(v);
		return NULL;
	}
	return v;
}

void visit_destroy(struct visit *v)
{
	if (!v)
		return;
	ARRAY_FREE_EACH(v->blocks, v->n_blocks);
	while (v->live)
		visit_req_release(v, v->live);
	free(v->dns_wait);
	free(v->yielded);
	url_destroy(v->url_base);
	url_destroy(v->url_target);
	free(v);
}
