/*
 * visit_robots.c: ROBOTS, a visit's first state: robots.txt, its redirects
 * (followed across hosts, RFC 9309 2.3.1.2) and its sitemaps (see visit.h).
 */
#include "crawler/visit.h"
#include "crawler/visit_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/net/decode.h"
#include "frontier/base/clock.h"
#include "frontier/url.h"
#include "politeness/robots.h"

/* ---- ROBOTS ---- */

/* robots.txt is unreachable (RFC 9309 2.3.1.4: a 5xx, 429 or network
 * error, a request of its chain that could not start or resolve, or a body
 * that cannot be decoded): all of the host is disallowed for now, but its
 * queued URLs stay for the retry instead of being popped and dropped as
 * disallowed. The visit ends at once and the rules go back to unknown, so
 * the host's next visit fetches robots.txt again; the politeness backoff
 * (5xx, network error) or Retry-After (429, 503) decides when, else a
 * second from now. A host whose robots.txt failed [politeness]
 * robots_max_attempts times in a row (the crawl's own causes, why ==
 * ROBOTS_MISS_LOCAL, not counted) is retired with its URLs: a 429 forever,
 * or a redirect to a name that never resolves, would keep it waiting
 * forever (and the crawl with it). */
void visit_robots_unreachable(struct visit *v, uint32_t host, enum robots_miss why)
{
	struct host_state *hs = visit_host_state(v, host);
	uint32_t max = v->p.crawl->robots_max_attempts;
	visit_set_robots(v, host, POLITENESS_ROBOTS_UNKNOWN, NULL, 0);
	if (hs->outcome == VISIT_OK) {
		visit_set_outcome(v, host, VISIT_RETRY_LATER, "robots.txt unreachable");
		hs->retry_after_us = monotonic_us() + 1000000u;
	}
	if (!hs->visit_requests)
		hs->visit_requests = 1; /* so the delay applies */
	if (why != ROBOTS_MISS_LOCAL) {
		v->st.robots_unreachable += why == ROBOTS_MISS_HOST;
		v->st.robots_undecodable += why == ROBOTS_MISS_UNDECODABLE;
		if (hs->robots_misses < UINT8_MAX)
			hs->robots_misses++;
		if (max && hs->robots_misses >= max) {
			visit_retire_host(v, host);
			v->st.hosts_robots_retired++;
			visit_end(v, host, "robots.txt unreachable: host retired");
			return;
		}
	}
	visit_end(v, host, "robots.txt unreachable");
}

void visit_start_robots(struct visit *v, uint32_t host)
{
	size_t kl;
	const char *key = frontier_host_key(v->p.frontier, host, &kl);
	char url[FRONTIER_KEY_MAX + 16];
	snprintf(url, sizeof url, "%s/robots.txt", key);
	visit_set_state(v, host, VISIT_ROBOTS, "robots.txt unknown or expired");
	visit_set_robots(v, host, POLITENESS_ROBOTS_FETCHING, NULL, 0);
	v->st.robots_fetches++;
	if (visit_start_fetch(v, host, url, 0, NULL, 1, 0, NULL) < 0)
		visit_robots_unreachable(v, host, ROBOTS_MISS_LOCAL);
}

/* The Sitemap URLs of a robots.txt (at most VISIT_SITEMAPS_PER_HOST), copied
 * into its job: a parse thread registers them and hands them to the sieve
 * (the loop never waits on the sieve). */
static void take_sitemaps(struct visit *v, const struct robots *rules, struct crawl_job *j)
{
	size_t n = rules ? robots_sitemap_count(rules) : 0;
	if (n > VISIT_SITEMAPS_PER_HOST) {
		v->st.sitemaps_dropped += n - VISIT_SITEMAPS_PER_HOST;
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
		if (err != DNS_OK || naddrs == 0) {
			visit_count_dns_error(v, err);
		} else {
			const struct ip_addr *a = visit_addr_choose(v, addrs, naddrs, 0, NULL);
			v->st.private_refused += a == NULL;
			if (a != NULL)
				ip_addr_format(a, ip, sizeof ip);
		}
		if (!ip[0])
			visit_robots_unreachable(v, h->host, ROBOTS_MISS_HOST);
		else if (*v->p.stopping || !v->p.hooks.can_start(v->p.hooks.ctx) ||
		         visit_start_fetch(v, h->host, h->data, 0, NULL, 1, h->redirects, ip) != 0)
			visit_robots_unreachable(v, h->host, ROBOTS_MISS_LOCAL);
	}
	free(h);
	if (v->in_dns_call || was_finished)
		return;
	v->p.hooks.pump(v->p.hooks.ctx);
	visit_dns_start_waiting(v);
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
		visit_robots_unreachable(v, host, ROBOTS_MISS_LOCAL);
		return 1;
	}
	if (kl == bkl && memcmp(to, key, kl) == 0) {
		if (visit_start_fetch(v, host, to, 0, NULL, 1, q->redirects + 1, NULL) != 0)
			visit_robots_unreachable(v, host, ROBOTS_MISS_LOCAL);
		free(to);
		return 1;
	}
	size_t ul = strlen(to);
	struct robots_hop *h = malloc(sizeof *h + ul + hl + 2);
	if (!h) {
		free(to);
		visit_robots_unreachable(v, host, ROBOTS_MISS_LOCAL);
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
	enum dns_error e = v->p.net.resolve(v->p.net.ctx, h->data + ul + 1, robots_hop_resolved, h);
	v->in_dns_call--;
	if (e != DNS_OK) {
		free(h);
		visit_count_dns_error(v, e);
		visit_robots_unreachable(v, host,
		                         e == DNS_ERR_BUSY || e == DNS_ERR_NOMEM
		                                 ? ROBOTS_MISS_LOCAL
		                                 : ROBOTS_MISS_HOST);
	}
	return 1;
}

/* robots.txt's final answer (status st, body as received) as the host's
 * rules, with its Crawl-delay: ROBOTS_TAKEN with *rules set (borrowed),
 * else nothing set and what the answer says of robots.txt. A 2xx body that
 * cannot be decoded (an unknown or wrong Content-Encoding, a compressed
 * stream that is corrupt or cut short) is not read as an empty file, which
 * would allow everything: it makes robots.txt unreachable. */
enum robots_take visit_robots_take(struct visit *v, uint32_t host, long st, const char *encoding,
                                   const uint8_t *body, size_t len, const struct robots **rules)
{
	struct decode_output d = { 0 };
	const char *text = NULL;
	size_t tlen = 0;
	if (st >= 200 && st < 300) {
		enum decode_error de = decode_body(encoding, body, len, ROBOTS_PARSE_LIMIT, &d);
		if (de == DECODE_ERR_NOMEM)
			return ROBOTS_TAKE_NOMEM;
		/* cut short: what it says is unknown (its output is a prefix,
		 * under the parse limit, which a cap would fill) */
		if (de != DECODE_OK || (d.truncated && d.len < ROBOTS_PARSE_LIMIT)) {
			free(d.data);
			return ROBOTS_TAKE_UNDECODABLE;
		}
		text = (const char *)d.data;
		tlen = d.len;
	}
	struct robots_policy pol;
	int rc = robots_policy_from_fetch((int)st, text, tlen, v->p.crawl->user_agent,
	                                  (int64_t)(monotonic_us() / 1000), &pol);
	free(d.data);
	if (rc != ROBOTS_OK || pol.source == ROBOTS_SRC_UNREACHABLE) {
		robots_destroy(pol.robots);
		return rc != ROBOTS_OK ? ROBOTS_TAKE_NOMEM : ROBOTS_TAKE_UNREACHABLE;
	}
	visit_set_robots(v, host, POLITENESS_ROBOTS_KNOWN, pol.robots,
	                 monotonic_us() + v->p.politeness->robots_expiry_us);
	visit_host_state(v, host)->robots_misses = 0;
	double cd = robots_crawl_delay(pol.robots);
	if (cd > 0)
		politeness_host_set_crawl_delay(v->p.pol, host, (uint64_t)(cd * 1e6));
	*rules = pol.robots;
	return ROBOTS_TAKEN;
}

/* A robots.txt answer: follows a redirect (returns 1: the chain goes on,
 * or the host was set unreachable), else sets the host's policy (the visit
 * goes on: FETCH). A redirect past ROBOTS_MAX_REDIRECTS is not followed:
 * robots.txt is unavailable (RFC 9309 2.3.1.2 allows it; allow all). */
int visit_robots_answer(struct visit *v, struct req *q, struct fetch_result *res,
                        struct crawl_job *j)
{
	uint32_t host = q->host;
	long st = res->error == FETCH_OK ? res->status : -1;
	if (st >= 300 && st < 400 && res->location) {
		int crawlable;
		char *to = visit_resolve_location(v, res->url, res->location, &crawlable);
		if (to)
			j->redirect = strdup(to); /* the crawl log's redirect column */
		if (q->redirects >= ROBOTS_MAX_REDIRECTS) {
			v->st.robots_redirect_limit++;
			free(to);
		} else if (to && crawlable) {
			if (robots_follow(v, q, to))
				return 1;
		} else {
			free(to);
		}
	}
	const struct robots *rules = NULL;
	enum robots_take t = visit_robots_take(v, host, st, res->content_encoding, res->body.data,
	                                       res->body.len, &rules);
	if (t != ROBOTS_TAKEN) {
		visit_robots_unreachable(v, host,
		                         t == ROBOTS_TAKE_UNREACHABLE   ? ROBOTS_MISS_HOST
		                         : t == ROBOTS_TAKE_UNDECODABLE ? ROBOTS_MISS_UNDECODABLE
		                                                        : ROBOTS_MISS_LOCAL);
		return 0;
	}
	visit_set_state(v, host, VISIT_FETCH, "robots.txt answered");
	if (v->p.sitemaps)
		take_sitemaps(v, rules, j);
	return 0;
}
