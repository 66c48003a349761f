/*
 * visit.c: the per-host visit state machine (see visit.h).
 */
#include "crawler/visit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/crawl_log.h"
#include "crawler/decode.h"
#include "crawler/done_set.h"
#include "crawler/sitemap_registry.h"
#include "frontier/clock.h"
#include "frontier/recfile.h"
#include "frontier/url.h"
#include "politeness/delay_policy.h"
#include "politeness/robots.h"
#include "frontier/array.h"

#define HOST_BLOCK_BITS 12
/* Re-queues in a row of a host's pages whose reused connection closed
 * unanswered; the next such failure stands as an error. */
#define VISIT_MAX_REUSE_DROPS 3

enum visit_state {
	VISIT_IDLE = 0, /* not held */
	VISIT_RESOLVE,  /* waiting for the resolver (in line or looking up) */
	VISIT_ROBOTS,   /* robots.txt (or one of its redirects) in flight */
	VISIT_FETCH,    /* a page in flight, or choosing the next one */
};

/* The host's DNS answer, kept across visits (saved by checkpoints: the
 * values are part of the state file). */
enum host_dns { HOST_DNS_NONE = 0, HOST_DNS_PENDING, HOST_DNS_OK, HOST_DNS_FAILED };

struct host_state {
	uint8_t dns;         /* enum host_dns */
	uint8_t state;       /* enum visit_state */
	uint8_t outcome;     /* enum visit_kind so far */
	uint8_t families;    /* family_bit()s of the usable addresses DNS gave */
	uint8_t failed;      /* family_bit()s a connect failed on (fallback) */
	uint8_t reuse_drops; /* pages re-queued in a row after a reused
	                        connection closed unanswered */
	uint32_t visit_requests;
	uint32_t visit_max_urls;
	uint64_t visit_start_us;
	uint64_t visit_wait_us; /* the rest required before this visit */
	uint64_t visit_max_us;
	uint64_t retry_after_us;
};

/* One request in flight (fetch_request.user). */
struct req {
	uint32_t host;
	uint32_t depth;   /* link depth */
	uint32_t embed;   /* embed code (frontier.h): 0 for a page */
	int robots;       /* robots.txt fetch */
	int redirects;    /* redirects followed along the chain so far */
	int own_addr;     /* sent to the host's own address (not a robots hop's) */
	uint64_t wait_us; /* the visit's wait for its first request, else 0 */
	char *url;
	char *via; /* "" if none */
	struct req *prev, *next;
};

/* Sitemaps taken from one robots.txt (the protocol sets no limit; a few are
 * usual, and each may list 50,000 URLs). */
#define VISIT_SITEMAPS_PER_HOST 16

struct visit {
	struct visit_parts p;
	struct host_state **blocks; /* see host_state() */
	size_t n_blocks;
	struct req *live;   /* requests in flight or parked */
	uint32_t *dns_wait; /* held hosts waiting for the resolver (FIFO) */
	size_t dns_wait_head, dns_wait_n, dns_wait_cap;
	int in_dns_call;                   /* inside dns_resolve: its callback must not pump */
	struct url *url_base, *url_target; /* resolving Locations */
};

/* A lookup's context. */
struct dns_wait {
	struct visit *v;
	uint32_t host;
};

static void visit_next(struct visit *v, uint32_t host);
static void dns_start_waiting(struct visit *v);
static void dns_done(void *ctx, enum dns_error err, const char *name, const struct ip_addr *addrs,
                     size_t naddrs);

/* ---- URLs (absolute and normalized here) ---- */

/* Resolves a Location against the URL that answered with it. Returns a
 * malloc'd string, NULL when it does not resolve: the crawl key when the
 * target is http(s) (*crawlable = 1), else the resolved href (*crawlable =
 * 0: logged, not followed). */
static char *resolve_location(struct visit *v, const char *base, const char *loc, int *crawlable)
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

int visit_is_html(const char *ct)
{
	if (!ct)
		return 0;
	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, "text/html", 9) == 0 ||
	       strncasecmp(ct, "application/xhtml+xml", 21) == 0;
}

static int is_css(const char *ct)
{
	while (ct && *ct == ' ')
		ct++;
	return ct && strncasecmp(ct, "text/css", 8) == 0;
}

/* ---- the per-host table ---- */

static struct host_state *host_state(struct visit *v, uint32_t host)
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
	}
	return &v->blocks[b][host & ((1u << HOST_BLOCK_BITS) - 1)];
}

/* The host's entry if the table has its block, else NULL (no allocation). */
static const struct host_state *host_state_if_any(const struct visit *v, uint32_t host)
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
	return host_state(v, *host) ? 0 : -1;
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
static void set_robots(struct visit *v, uint32_t host, enum politeness_robots_state st,
                       struct robots *robots, uint64_t expires_us)
{
	politeness_robots_set(v->p.pol, host, st, robots, expires_us);
}

/* ---- states ---- */

/* Every change of a host's visit state: the one place to trace them. */
static void set_state(struct host_state *hs, enum visit_state st)
{
	hs->state = (uint8_t)st;
}

static void visit_end(struct visit *v, uint32_t host)
{
	struct host_state *hs = host_state(v, host);
	struct visit_outcome o = {
		.kind = hs->visit_requests ? (enum visit_kind)hs->outcome : VISIT_NONE,
		.start_us = hs->visit_start_us,
		.requests = hs->visit_requests,
		.retry_after_us = hs->retry_after_us,
	};
	set_state(hs, VISIT_IDLE);
	politeness_release(v->p.pol, host, &o, monotonic_us());
}

/* ---- requests ---- */

static void req_release(struct visit *v, struct req *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else if (v->live == q)
		v->live = q->next;
	if (q->next)
		q->next->prev = q->prev;
	free(q->url);
	free(q->via);
	free(q);
}

/* ---- addresses ---- */

static uint8_t family_bit(enum ip_family f)
{
	return f == IP_V4 ? 1 : f == IP_V6 ? 2 : 0;
}

/* The address a host's requests go to, from its DNS answer (the preferred
 * family first, dns.h): the first one allowed (not in a refused range,
 * unless allow_private_networks) whose family a connect has not failed on,
 * else the first allowed one (every family failed: try again in order).
 * *families (may be NULL) gets the family_bit()s of the allowed ones.
 * NULL when none is allowed. */
static const struct ip_addr *addr_choose(struct visit *v, const struct ip_addr *addrs,
                                         size_t naddrs, uint8_t failed, uint8_t *families)
{
	const struct ip_addr *first = NULL, *best = NULL;
	uint8_t fams = 0;
	for (size_t i = 0; i < naddrs; i++) {
		char ip[IP_ADDR_STRLEN];
		ip_addr_format(&addrs[i], ip, sizeof ip);
		if (!v->p.cfg->fetch.allow_private_networks && fetch_addr_is_private(ip))
			continue;
		fams |= family_bit(addrs[i].family);
		if (first == NULL)
			first = &addrs[i];
		if (best == NULL && !(failed & family_bit(addrs[i].family)))
			best = &addrs[i];
	}
	if (families != NULL)
		*families = fams;
	return best != NULL ? best : first;
}

/* Starts a request of a held host's visit: to the host's own address, or
 * to ip (a robots.txt redirect to another host). depth: the URL's depth
 * word (its redirect count is `redirects`). 0, or -1 (counted). */
static int start_fetch(struct visit *v, uint32_t host, const char *url, uint32_t depth,
                       const char *via, int robots, int redirects, const char *ip)
{
	struct host_state *hs = host_state(v, host);
	struct req *q = calloc(1, sizeof *q);
	if (!q)
		return -1;
	q->host = host;
	q->depth = frontier_depth_of(depth);
	q->embed = frontier_embed_of(depth);
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
		req_release(v, q);
		return -1;
	}
	char own[IP_ADDR_STRLEN] = "";
	struct ip_addr addr;
	if (!ip && politeness_host_ip(v->p.pol, host, &addr))
		ip_addr_format(&addr, own, sizeof own);
	q->own_addr = ip == NULL;
	struct fetch_request fr = {
		.url = url, .ip = ip ? ip : own, .user = q, .flags = robots ? FETCH_FLAG_ROBOTS : 0
	};
	enum fetch_error e = fetch_engine_start(v->p.fetch, &fr);
	if (e != FETCH_OK) {
		if ((size_t)e < CRAWL_STATS_ERRORS)
			v->p.stats->fetch_errors[e]++;
		req_release(v, q);
		return -1;
	}
	hs->visit_requests++;
	v->p.stats->requests++;
	return 0;
}

/* ---- ROBOTS ---- */

/* robots.txt is unreachable (RFC 9309 2.3.1.4: a 5xx, 429 or network
 * error, or a request of its chain that could not start or resolve): all
 * of the host is disallowed for now, but its queued URLs stay for the
 * retry instead of being popped and dropped as disallowed. The visit ends
 * at once and the rules go back to unknown, so the host's next visit
 * fetches robots.txt again; the politeness backoff (5xx, network error)
 * or Retry-After (429, 503) decides when, else a second from now. A host
 * that keeps failing is retired after max_consecutive_errors. */
static void robots_unreachable(struct visit *v, uint32_t host)
{
	struct host_state *hs = host_state(v, host);
	set_robots(v, host, POLITENESS_ROBOTS_UNKNOWN, NULL, 0);
	if (hs->outcome == VISIT_OK) {
		hs->outcome = VISIT_RETRY_LATER;
		hs->retry_after_us = monotonic_us() + 1000000u;
	}
	if (!hs->visit_requests)
		hs->visit_requests = 1; /* so the delay applies */
	v->p.stats->robots_unreachable++;
	visit_end(v, host);
}

static void start_robots(struct visit *v, uint32_t host)
{
	size_t kl;
	const char *key = frontier_host_key(v->p.frontier, host, &kl);
	char url[FRONTIER_KEY_MAX + 16];
	snprintf(url, sizeof url, "%s/robots.txt", key);
	set_state(host_state(v, host), VISIT_ROBOTS);
	set_robots(v, host, POLITENESS_ROBOTS_FETCHING, NULL, 0);
	v->p.stats->robots_fetches++;
	if (start_fetch(v, host, url, 0, NULL, 1, 0, NULL) < 0)
		robots_unreachable(v, host);
}

/* The Sitemap URLs of a robots.txt (at most VISIT_SITEMAPS_PER_HOST), copied
 * into its job: a parse thread registers them and hands them to the sieve
 * (the loop never waits on the sieve). */
static void take_sitemaps(struct visit *v, const struct robots *rules, struct crawl_job *j)
{
	size_t n = rules ? robots_sitemap_count(rules) : 0;
	if (n > VISIT_SITEMAPS_PER_HOST) {
		atomic_fetch_add(&v->p.stats->ac.sitemaps_dropped, n - VISIT_SITEMAPS_PER_HOST);
		n = VISIT_SITEMAPS_PER_HOST;
	}
	if (n == 0 || !(j->sitemaps = calloc(n, sizeof *j->sitemaps)))
		return;
	for (size_t i = 0; i < n; i++)
		if ((j->sitemaps[j->nsitemaps] = strdup(robots_sitemap(rules, i))) != NULL)
			j->nsitemaps++;
	j->parse = j->nsitemaps > 0;
}

/* A robots.txt redirect to another host, while its name is looked up:
 * the visit of host (whose robots.txt it is) waits in VISIT_ROBOTS. */
struct robots_hop {
	struct visit *v;
	uint32_t host;
	int redirects; /* followed so far, this one included */
	char data[];   /* target URL NUL, its host name NUL */
};

/* The target's address: the next request of the chain goes there (the
 * resolver's callback; see dns_done for the pump). */
static void robots_hop_resolved(void *ctx, enum dns_error err, const char *name,
                                const struct ip_addr *addrs, size_t naddrs)
{
	(void)name;
	struct robots_hop *h = ctx;
	struct visit *v = h->v;
	int was_finished = *v->p.finished;
	if (!was_finished) {
		char ip[IP_ADDR_STRLEN] = "";
		int refused = 0;
		if (err != DNS_OK || naddrs == 0) {
			v->p.stats->dns_errors[err < CRAWL_STATS_ERRORS ? err
			                                                : CRAWL_STATS_ERRORS - 1]++;
		} else {
			const struct ip_addr *a = addr_choose(v, addrs, naddrs, 0, NULL);
			refused = a == NULL;
			if (a != NULL)
				ip_addr_format(a, ip, sizeof ip);
		}
		v->p.stats->private_refused += (uint64_t)refused;
		if (!ip[0] || refused || *v->p.stopping || !v->p.hooks.can_start(v->p.hooks.ctx) ||
		    start_fetch(v, h->host, h->data, 0, NULL, 1, h->redirects, ip) != 0)
			robots_unreachable(v, h->host);
	}
	free(h);
	if (v->in_dns_call || was_finished)
		return;
	v->p.hooks.pump(v->p.hooks.ctx);
	dns_start_waiting(v);
}

/* Follows a robots.txt redirect (RFC 9309 2.3.1.2: at least five, across
 * hosts): the same origin goes to the host's own address, another one is
 * looked up first. Returns 1 when the chain is handled (a request or a
 * lookup under way, or the host set unreachable), 0 when the target is not
 * an http(s) URL (robots.txt is then unavailable). Takes to. */
static int robots_follow(struct visit *v, struct req *q, char *to)
{
	uint32_t host = q->host;
	size_t kl, hs, hl, bkl;
	const char *key = frontier_host_key(v->p.frontier, host, &bkl);
	if (url_key_split(to, strlen(to), &kl, &hs, &hl) != 0) {
		free(to);
		return 0;
	}
	if (*v->p.stopping || !v->p.hooks.can_start(v->p.hooks.ctx)) {
		free(to);
		robots_unreachable(v, host);
		return 1;
	}
	if (kl == bkl && memcmp(to, key, kl) == 0) {
		if (start_fetch(v, host, to, 0, NULL, 1, q->redirects + 1, NULL) != 0)
			robots_unreachable(v, host);
		free(to);
		return 1;
	}
	size_t ul = strlen(to);
	struct robots_hop *h = malloc(sizeof *h + ul + hl + 2);
	if (!h) {
		free(to);
		robots_unreachable(v, host);
		return 1;
	}
	h->v = v;
	h->host = host;
	h->redirects = q->redirects + 1;
	memcpy(h->data, to, ul + 1);
	memcpy(h->data + ul + 1, to + hs, hl);
	h->data[ul + 1 + hl] = '\0';
	free(to);
	v->in_dns_call++;
	enum dns_error e =
	        dns_resolve(v->p.dns, h->data + ul + 1, robots_hop_resolved, h, uv_now(v->p.loop));
	v->in_dns_call--;
	if (e != DNS_OK) {
		free(h);
		v->p.stats->dns_errors[e < CRAWL_STATS_ERRORS ? e : CRAWL_STATS_ERRORS - 1]++;
		robots_unreachable(v, host);
	}
	return 1;
}

/* robots.txt's final answer (status st, body as received) as the host's
 * rules, with its Crawl-delay: 1 with *rules set (borrowed), or 0 when it
 * says robots.txt is unreachable (nothing set). */
static int robots_take(struct visit *v, uint32_t host, long st, const char *encoding,
                       const uint8_t *body, size_t len, const struct robots **rules)
{
	struct decode_output d = { 0 };
	const char *text = NULL;
	size_t tlen = 0;
	if (st >= 200 && st < 300 &&
	    decode_body(encoding, body, len, ROBOTS_PARSE_LIMIT, &d) == DECODE_OK) {
		text = (const char *)d.data;
		tlen = d.len;
	}
	struct robots_policy pol;
	int rc = robots_policy_from_fetch((int)st, text, tlen, v->p.cfg->crawl.user_agent,
	                                  (int64_t)(monotonic_us() / 1000), &pol);
	free(d.data);
	if (rc != ROBOTS_OK || pol.source == ROBOTS_SRC_UNREACHABLE) {
		robots_destroy(pol.robots);
		return 0;
	}
	set_robots(v, host, POLITENESS_ROBOTS_KNOWN, pol.robots, (uint64_t)pol.expires_ms * 1000u);
	double cd = robots_crawl_delay(pol.robots);
	if (cd > 0)
		politeness_host_set_crawl_delay(v->p.pol, host, (uint64_t)(cd * 1e6));
	*rules = pol.robots;
	return 1;
}

/* A robots.txt answer: follows a redirect (returns 1: the chain goes on,
 * or the host was set unreachable), else sets the host's policy (the visit
 * goes on: FETCH). A redirect past ROBOTS_MAX_REDIRECTS is not followed:
 * robots.txt is unavailable (RFC 9309 2.3.1.2 allows it; allow all). */
static int robots_answer(struct visit *v, struct req *q, struct fetch_result *res,
                         struct crawl_job *j)
{
	uint32_t host = q->host;
	long st = res->error == FETCH_OK ? res->status : -1;
	if (st >= 300 && st < 400 && res->location) {
		int crawlable;
		char *to = resolve_location(v, res->url, res->location, &crawlable);
		if (to)
			j->redirect = strdup(to); /* the crawl log's redirect column */
		if (q->redirects >= ROBOTS_MAX_REDIRECTS) {
			v->p.stats->robots_redirect_limit++;
			free(to);
		} else if (to && crawlable) {
			if (robots_follow(v, q, to))
				return 1;
		} else {
			free(to);
		}
	}
	const struct robots *rules = NULL;
	if (!robots_take(v, host, st, res->content_encoding, res->body.data, res->body.len,
	                 &rules)) {
		robots_unreachable(v, host);
		return 0;
	}
	set_state(host_state(v, host), VISIT_FETCH);
	if (v->p.sitemaps)
		take_sitemaps(v, rules, j);
	return 0;
}

/* ---- RESOLVE ---- */

static void retire_host(struct visit *v, uint32_t host)
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
static void host_unresolvable(struct visit *v, uint32_t host, struct host_state *hs)
{
	hs->dns = HOST_DNS_FAILED;
	retire_host(v, host);
	visit_end(v, host);
}

/* Starts the lookup of a held host's name; the visit goes on in dns_done.
 * Returns 0, or -1 when the resolver is at max_pending (the host was put
 * in line, still held). */
static int resolve_host(struct visit *v, uint32_t host)
{
	struct host_state *hs = host_state(v, host);
	size_t hl;
	const char *name = frontier_host_name(v->p.frontier, host, &hl);
	if (hs->dns == HOST_DNS_FAILED || name == NULL || hl == 0) {
		retire_host(v, host);
		visit_end(v, host);
		return 0;
	}
	struct dns_wait *w = malloc(sizeof *w);
	if (!w) {
		visit_end(v, host);
		return 0;
	}
	w->v = v;
	w->host = host;
	hs->dns = HOST_DNS_PENDING;
	set_state(hs, VISIT_RESOLVE);
	v->in_dns_call++;
	enum dns_error e = dns_resolve(v->p.dns, name, dns_done, w, uv_now(v->p.loop));
	v->in_dns_call--;
	if (e == DNS_OK)
		return 0;
	free(w);
	if (e == DNS_ERR_BUSY && dns_wait_push(v, host) == 0)
		return -1; /* HOST_DNS_PENDING: in line */
	hs->dns = HOST_DNS_NONE;
	v->p.stats->dns_errors[e < CRAWL_STATS_ERRORS ? e : CRAWL_STATS_ERRORS - 1]++;
	hs->outcome = VISIT_RETRY_LATER;
	hs->visit_requests = 1; /* so the retry delay applies */
	hs->retry_after_us = monotonic_us() + 1000000u;
	visit_end(v, host);
	return 0;
}

static void dns_start_waiting(struct visit *v)
{
	while (v->dns_wait_head < v->dns_wait_n && !*v->p.finished) {
		uint32_t host = v->dns_wait[v->dns_wait_head++];
		if (resolve_host(v, host) < 0) {
			v->dns_wait_n--; /* put back in front: it was pushed last */
			v->dns_wait[--v->dns_wait_head] = host;
			break;
		}
	}
	if (v->dns_wait_head == v->dns_wait_n)
		v->dns_wait_head = v->dns_wait_n = 0;
}

void visit_dns_line_run(struct visit *v)
{
	if (v->dns_wait_head < v->dns_wait_n && !v->in_dns_call)
		dns_start_waiting(v);
}

/* A lookup's answer; the visit ends either way (VISIT_NONE on success:
 * the host comes back under its IP's token). */
static void dns_answered(struct visit *v, uint32_t host, enum dns_error err,
                         const struct ip_addr *addrs, size_t naddrs)
{
	struct host_state *hs = host_state(v, host);
	if (*v->p.finished) {
		hs->dns = HOST_DNS_NONE;
		return;
	}
	if (err != DNS_OK || naddrs == 0) {
		v->p.stats->dns_errors[err < CRAWL_STATS_ERRORS ? err : CRAWL_STATS_ERRORS - 1]++;
		if (err == DNS_ERR_TIMEOUT || err == DNS_ERR_SERVFAIL || err == DNS_ERR_BUSY) {
			/* Transient: the host backs off as after a failed visit and
			 * is retired only after max_consecutive_errors of them. */
			hs->dns = HOST_DNS_NONE;
			hs->outcome = VISIT_ERROR;
			hs->visit_requests = 1;
			visit_end(v, host);
		} else {
			v->p.stats->hosts_dns_failed++;
			host_unresolvable(v, host, hs);
		}
		return;
	}
	const struct ip_addr *a = addr_choose(v, addrs, naddrs, hs->failed, &hs->families);
	if (a == NULL) {
		v->p.stats->private_refused++;
		host_unresolvable(v, host, hs);
		return;
	}
	hs->dns = HOST_DNS_OK;
	politeness_host_set_ip(v->p.pol, host, a);
	visit_end(v, host); /* VISIT_NONE: back under the IP's token */
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
	dns_start_waiting(v);
}

/* ---- FETCH ---- */

void visit_begin(struct visit *v, uint32_t host)
{
	struct host_state *hs = host_state(v, host);
	if (!hs)
		return;
	set_state(hs, VISIT_FETCH);
	hs->visit_requests = 0;
	hs->outcome = VISIT_OK;
	hs->retry_after_us = 0;
	hs->visit_start_us = monotonic_us();
	hs->visit_wait_us = politeness_host_wait(v->p.pol, host);
	politeness_visit_budget(v->p.pol, host, &hs->visit_max_urls, &hs->visit_max_us);
	if (hs->dns != HOST_DNS_OK) {
		resolve_host(v, host);
		return;
	}
	uint64_t exp;
	enum politeness_robots_state st = robots_of(v, host, NULL, &exp);
	if (v->p.cfg->crawl.obey_robots &&
	    (st == POLITENESS_ROBOTS_UNKNOWN ||
	     (st == POLITENESS_ROBOTS_KNOWN && exp && exp < monotonic_us()))) {
		start_robots(v, host);
		return;
	}
	visit_next(v, host);
}

/* 1 if the visit must end before its next request. */
static int visit_over(struct visit *v, const struct host_state *hs)
{
	return *v->p.stopping || hs->outcome != VISIT_OK ||
	       hs->visit_requests >= hs->visit_max_urls ||
	       (hs->visit_requests && monotonic_us() - hs->visit_start_us >= hs->visit_max_us) ||
	       (v->p.cfg->crawl.max_pages &&
	        v->p.stats->pages_started >= v->p.cfg->crawl.max_pages) ||
	       !v->p.hooks.can_start(v->p.hooks.ctx);
}

/* 1 if robots.txt forbids the URL. */
static int disallowed(struct visit *v, uint32_t host, const struct frontier_url *fu)
{
	const struct robots *rob = NULL;
	char path[FRONTIER_URL_MAX + 8];
	if (!v->p.cfg->crawl.obey_robots)
		return 0;
	robots_of(v, host, &rob, NULL);
	return rob && (robots_path_from_url(fu->url, fu->url_len, path, sizeof path) != ROBOTS_OK ||
	               !robots_allowed(rob, path, strlen(path)));
}

static void visit_next(struct visit *v, uint32_t host)
{
	struct host_state *hs = host_state(v, host);
	for (;;) {
		struct frontier_url fu;
		if (visit_over(v, hs) || frontier_pop(v->p.frontier, host, &fu) != FRONTIER_OK) {
			visit_end(v, host);
			return;
		}
		/* fetched after the checkpoint, found in its tail (crawl_tail.h) */
		if (done_set_take(v->p.done, fu.url, fu.url_len)) {
			v->p.stats->tail_skipped++;
			continue;
		}
		if (disallowed(v, host, &fu)) {
			v->p.stats->robots_disallowed++;
			continue;
		}
		char *url = strndup(fu.url, fu.url_len);
		char *via = strndup(fu.via, fu.via_len);
		int rc = (url && via) ? start_fetch(v, host, url, fu.depth, via, 0,
		                                    (int)frontier_redirects_of(fu.depth), NULL)
		                      : -1;
		free(url);
		free(via);
		if (rc == 0) {
			v->p.stats->pages_started++;
			return; /* one request per host in flight; visit_continue goes on */
		}
	}
}

void visit_continue(struct visit *v, uint32_t host)
{
	if (host_state(v, host)->state == VISIT_FETCH)
		visit_next(v, host);
}

/* ---- results ---- */

static void count_status(struct crawl_stats *s, long status, uint64_t bytes)
{
	if (status >= 0 && status < CRAWL_STATS_STATUS_MAX)
		s->status[status]++;
	else
		s->status_other++;
	s->bytes += bytes;
}

/* Counts a result and what it says about the host's visit. */
static void count_result(struct visit *v, struct host_state *hs, const struct fetch_result *res)
{
	struct crawl_stats *s = v->p.stats;
	if (res->error != FETCH_OK) {
		if ((size_t)res->error < CRAWL_STATS_ERRORS)
			s->fetch_errors[res->error]++;
		/* A reused connection the server closed: no error of the host's;
		 * the visit ends and the next waits the usual delay. */
		if (res->reuse_dropped && hs->outcome == VISIT_OK)
			hs->outcome = VISIT_RETRY_LATER;
		else if (res->error != FETCH_ERR_CANCELLED)
			hs->outcome = VISIT_ERROR;
		return;
	}
	hs->reuse_drops = 0;
	count_status(s, res->status, res->body.len);
	if (res->status == 429 || (res->status == 503 && res->retry_after_s >= 0)) {
		hs->outcome = VISIT_RETRY_LATER;
		uint64_t ra = res->retry_after_s >= 0 ? (uint64_t)res->retry_after_s : 60u;
		hs->retry_after_us = delay_policy_after_seconds(monotonic_us(), ra);
	} else if (res->status >= 500) {
		hs->outcome = VISIT_ERROR;
	}
}

/* A page whose reused connection closed before answering (libcurl's
 * immediate re-send refused, fetch.h): back at the front of its queue, to
 * be fetched at the host's next visit, after the politeness delay. */
static void page_requeue(struct visit *v, struct req *q, const char *via)
{
	struct host_state *hs = host_state(v, q->host);
	if (hs->reuse_drops >= VISIT_MAX_REUSE_DROPS)
		return;
	if (frontier_unpop(v->p.frontier, q->host, q->url, strlen(q->url), via, strlen(via),
	                   frontier_depth_pack(q->depth, (uint32_t)q->redirects)) == FRONTIER_OK) {
		hs->reuse_drops++;
		v->p.stats->reuse_retries++;
	}
}

/* A page (not robots.txt): its redirect, whether to parse it. */
static void page_result(struct visit *v, struct req *q, struct fetch_result *res,
                        struct crawl_job *j, int *follow)
{
	v->p.stats->pages_done++;
	if (res->reuse_dropped && !*v->p.stopping)
		page_requeue(v, q, j->via ? j->via : "");
	frontier_host_account(v->p.frontier, q->host, 1, res->body.len);
	if (res->error == FETCH_OK && res->status >= 300 && res->status < 400 && res->location) {
		int crawlable;
		j->flags |= CRAWL_LOG_REDIRECT;
		j->redirect = resolve_location(v, res->url, res->location, &crawlable);
		j->redirects = (uint32_t)q->redirects + 1;
		v->p.stats->redirects++;
		*follow = j->redirect && crawlable;
		/* An endless chain ends here: the hop count came with the URL. */
		if (*follow && (uint32_t)q->redirects >= v->p.cfg->crawl.max_redirects) {
			v->p.stats->redirect_limit++;
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
	if (v->p.cfg->crawl.page_requisites && is_css(res->content_type))
		j->parse = ok ? CRAWL_PARSE_CSS : 0;
	else
		j->parse = ok && !q->embed && visit_is_html(res->content_type);
}

/* ---- falling back to the other address family ---- */

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
	uint8_t failed = hs->failed | family_bit(addr.family);
	if ((hs->families & ~failed) == 0)
		return 0;
	hs->failed = failed;
	hs->dns = HOST_DNS_NONE;
	if (q->robots) {
		set_robots(v, q->host, POLITENESS_ROBOTS_UNKNOWN, NULL, 0);
		v->p.stats->robots_fetches--; /* made again */
	} else {
		frontier_unpop(v->p.frontier, q->host, q->url, strlen(q->url), q->via,
		               strlen(q->via),
		               frontier_depth_pack(q->depth, (uint32_t)q->redirects));
		v->p.stats->pages_started--;
	}
	v->p.stats->family_fallbacks++;
	visit_end(v, q->host); /* VISIT_OK: one delay's rest, no error */
	return 1;
}

struct crawl_job *visit_result(struct visit *v, struct fetch_result *res, int *follow)
{
	struct req *q = res->user;
	struct host_state *hs = host_state(v, q->host);
	struct crawl_job *j = calloc(1, sizeof *j);
	*follow = 0;
	if (!j) {
		fetch_result_free(res);
		req_release(v, q);
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
	if (q->robots)
		j->flags |= CRAWL_LOG_ROBOTS;
	int fell_back = family_fallback(v, q, hs, res);
	q->via = NULL; /* the job's now */
	if (fell_back) {
		req_release(v, q);
		return j;
	}
	count_result(v, hs, res);
	if (q->robots) {
		if (!*v->p.finished)
			robots_answer(v, q, res, j);
	} else {
		page_result(v, q, res, j, follow);
	}
	req_release(v, q);
	return j;
}

int visit_replayed(struct visit *v, uint32_t host, const struct crawl_tail_entry *e)
{
	struct crawl_stats *s = v->p.stats;
	const struct robots *rules;
	/* a robots.txt answer sets the rules, as its live fetch did (only a
	 * 2xx one needs its payload); a redirect's chain, an unreachable one or
	 * (with sitemaps) its Sitemap lines are left to a new fetch */
	if (e->robots &&
	    ((!e->body && e->status >= 200 && e->status < 300) ||
	     (e->status >= 300 && e->status < 400) || v->p.sitemaps ||
	     !robots_take(v, host, e->status, e->content_encoding, e->body, e->body_len, &rules)))
		return -1;
	if (e->status < 0 && (size_t)-e->status < CRAWL_STATS_ERRORS)
		s->fetch_errors[-e->status]++;
	else if (e->status >= 0)
		count_status(s, e->status, e->bytes);
	s->requests++;
	s->tail_replayed++;
	if (e->robots) {
		s->robots_fetches++;
		return 0;
	}
	s->pages_started++;
	s->pages_done++;
	frontier_host_account(v->p.frontier, host, 1, e->bytes);
	return 0;
}

/* ---- checkpoints ---- */

/* How a host's address is saved: the first checkpoints had an IPv4
 * address (u32) and a has_ip byte of 0 or 1; HOST_ADDR_SAVED (2) is
 * followed by the address of either family and the host's families and
 * failed masks (bytes), and the u32 is then 0. Both read back. */
#define HOST_ADDR_SAVED 2

static void host_addr_save(struct recfile_writer *w, const struct politeness_host_saved *ps,
                           const struct host_state *hs)
{
	recfile_put_u32(w, 0);
	recfile_put_u8(w, ps->has_ip ? HOST_ADDR_SAVED : 0);
	if (!ps->has_ip)
		return;
	recfile_put_u8(w, ps->addr.family);
	recfile_put_bytes(w, ps->addr.b, sizeof ps->addr.b);
	recfile_put_u8(w, hs ? hs->families : 0);
	recfile_put_u8(w, hs ? hs->failed : 0);
}

/* Reads what host_addr_save wrote (or the first form). 0, or -1. */
static int host_addr_load(struct recfile_reader *rd, struct politeness_host_saved *ps,
                          struct host_state *hs)
{
	uint32_t v4, len;
	uint8_t family;
	uint8_t b[sizeof ps->addr.b];
	memset(&ps->addr, 0, sizeof ps->addr);
	if (recfile_get_u32(rd, &v4) != RECFILE_OK || recfile_get_u8(rd, &ps->has_ip) != RECFILE_OK)
		return -1;
	if (ps->has_ip == 1) {
		ip_addr_from_v4(&ps->addr, v4);
		hs->families = family_bit(IP_V4);
		return 0;
	}
	if (ps->has_ip != HOST_ADDR_SAVED)
		return ps->has_ip == 0 ? 0 : -1;
	if (recfile_get_u8(rd, &family) != RECFILE_OK ||
	    recfile_get_bytes(rd, b, sizeof b, &len) != RECFILE_OK || len != sizeof b ||
	    (family != IP_V4 && family != IP_V6) ||
	    recfile_get_u8(rd, &hs->families) != RECFILE_OK ||
	    recfile_get_u8(rd, &hs->failed) != RECFILE_OK)
		return -1;
	ip_addr_set(&ps->addr, (enum ip_family)family, b);
	ps->has_ip = 1;
	return 0;
}

void visit_save(struct visit *v, struct recfile_writer *w, uint64_t now)
{
	uint32_t nhosts = frontier_host_count(v->p.frontier), n = 0;
	recfile_put_u32(w, nhosts);
	for (uint32_t h = 0; h < nhosts; h++) {
		struct politeness_host_saved ps;
		const struct host_state *hs = host_state_if_any(v, h);
		politeness_host_save(v->p.pol, h, now, &ps);
		/* a lookup in progress is made again */
		recfile_put_u8(w, hs && (hs->dns == HOST_DNS_OK || hs->dns == HOST_DNS_FAILED)
		                          ? hs->dns
		                          : HOST_DNS_NONE);
		recfile_put_u64(w, ps.wait_us);
		recfile_put_u64(w, ps.ip_wait_us);
		recfile_put_u64(w, ps.crawl_delay_us);
		recfile_put_u32(w, ps.errors);
		host_addr_save(w, &ps, hs);
	}
	for (const struct req *q = v->live; q; q = q->next)
		n += !q->robots;
	recfile_put_u32(w, n);
	for (const struct req *q = v->live; q; q = q->next) {
		if (q->robots)
			continue;
		recfile_put_u32(w, q->host);
		recfile_put_u32(
		        w, frontier_depth_pack_embed(q->depth, (uint32_t)q->redirects, q->embed));
		recfile_put_bytes(w, q->url, (uint32_t)strlen(q->url));
		recfile_put_bytes(w, q->via, (uint32_t)strlen(q->via));
	}
}

static int load_host(struct visit *v, struct recfile_reader *rd, uint32_t h, uint64_t now)
{
	struct politeness_host_saved ps;
	uint8_t dns;
	struct host_state *hs = host_state(v, h);
	if (!hs || recfile_get_u8(rd, &dns) != RECFILE_OK ||
	    recfile_get_u64(rd, &ps.wait_us) != RECFILE_OK ||
	    recfile_get_u64(rd, &ps.ip_wait_us) != RECFILE_OK ||
	    recfile_get_u64(rd, &ps.crawl_delay_us) != RECFILE_OK ||
	    recfile_get_u32(rd, &ps.errors) != RECFILE_OK || host_addr_load(rd, &ps, hs) != 0)
		return -1;
	hs->dns = dns == HOST_DNS_OK && ps.has_ip ? HOST_DNS_OK
	          : dns == HOST_DNS_FAILED        ? HOST_DNS_FAILED
	                                          : HOST_DNS_NONE;
	if (politeness_host_restore(v->p.pol, h, &ps, now) == POLITENESS_ERR_NOMEM)
		return -1;
	return 0;
}

int visit_load(struct visit *v, struct recfile_reader *rd, uint64_t now)
{
	uint32_t n, nhosts;
	char url[FRONTIER_URL_MAX + 1], via[FRONTIER_URL_MAX + 1];
	if (recfile_get_u32(rd, &nhosts) != RECFILE_OK ||
	    nhosts != frontier_host_count(v->p.frontier))
		return -1;
	for (uint32_t h = 0; h < nhosts; h++)
		if (load_host(v, rd, h, now) != 0)
			return -1;
	if (recfile_get_u32(rd, &n) != RECFILE_OK)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t host, depth, ulen, vlen;
		if (recfile_get_u32(rd, &host) != RECFILE_OK ||
		    recfile_get_u32(rd, &depth) != RECFILE_OK ||
		    recfile_get_bytes(rd, url, sizeof url, &ulen) != RECFILE_OK ||
		    recfile_get_bytes(rd, via, sizeof via, &vlen) != RECFILE_OK || host >= nhosts)
			return -1;
		/* a retired host counts it as dropped */
		frontier_unpop(v->p.frontier, host, url, ulen, via, vlen, depth);
	}
	return 0;
}

/* ---- set-up and teardown ---- */

struct visit *visit_create(const struct visit_parts *parts)
{
	struct visit *v = calloc(1, sizeof *v);
	if (!v)
		return NULL;
	v->p = *parts;
	v->url_base = url_create(&parts->cfg->url);
	v->url_target = url_create(&parts->cfg->url);
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
		req_release(v, v->live);
	free(v->dns_wait);
	url_destroy(v->url_base);
	url_destroy(v->url_target);
	free(v);
}
