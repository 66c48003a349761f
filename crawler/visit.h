/*
 * visit.h: the visit of a host the politeness heap hands out, as a state
 * machine per held host (fetch loop thread only):
 *
 *   IDLE --visit_begin--> RESOLVE (DNS, when the host has no IP yet: ends
 *                          with a VISIT_NONE release, so the host comes
 *                          back under its IP's token)
 *                    \--> FETCH   (one URL after another while the
 *                          politeness visit budget allows, skipping those
 *                          a resume found already fetched (done_set.h); a page's
 *                          redirect is followed while the hops that led
 *                          to it, carried in its depth word, stay under
 *                          [fetch] max_redirects)
 *   FETCH <--> ROBOTS     (robots.txt first for each new host, and again
 *                          when it expired, was forgotten (the cache's
 *                          bound) or was unreachable: checked before each
 *                          URL of a visit; up to ROBOTS_MAX_REDIRECTS
 *                          redirects followed, another host's name looked
 *                          up first; unreachable ends the visit with the
 *                          URLs kept)
 *   any --visit end--> IDLE, with politeness_release carrying the outcome
 *                          (status class, Retry-After, duration).
 * Every transition goes through one function, visit_set_state (visit.c),
 * and so do the host's DNS answer (visit_set_dns) and the visit's outcome
 * so far (visit_set_outcome): with [crawl] trace_visits each change is a
 * line on stderr, "visit MS ms HOST: state FETCH -> IDLE (why)" (MS since
 * the visit was created).
 * Exactly one request of a host is in flight at a time. A turn of FETCH
 * that dropped [politeness] max_disallowed_per_turn URLs as disallowed by
 * robots.txt (each check can cost up to robots_max_wildcard_rules searches
 * of the URL) gives the loop back: the host stays held, with nothing in
 * flight, and goes on at the next pump (hooks.pump_soon asks for one), so
 * one host's queue of disallowed URLs cannot stall the others.
 *
 * Per-host table: one struct per frontier host id, in fixed blocks of 4096
 * that never move, so a pointer to one stays valid while the table grows
 * (callbacks nest: a redirect can add a host while a visit holds its
 * host's state). It keeps the host's visit and what its DNS answer said:
 * the families of its allowed addresses and those a connect failed on
 * (the address itself is politeness's, politeness_host_ip).
 *
 * Address families: a host's requests go to one address, the first of its
 * DNS answer ([dns] prefer's family first) of a family no connect has
 * failed on. When the first request of a visit cannot connect (refused,
 * unreachable, timed out: nothing sent) and the host has an address of
 * the other family, the request is put back, the visit ends (the host
 * rests its delay, no error counted), and the host comes back under the
 * other address's token:
 * a fallback done here rather than by curl's happy eyeballs, so that the
 * politeness token held is always that of the address contacted, and
 * paid once per host rather than per request.
 *
 * Live requests: every request from its start (or its wait for an IP
 * lease, below) until its result is processed, on one list: what a
 * checkpoint puts back in the frontier.
 *
 * DNS wait line: held hosts waiting for the resolver to have room for one
 * more lookup (FIFO), started as lookups end.
 *
 * Sitemaps (when followed): a robots.txt's Sitemap URLs go with its job, for
 * a parse thread to register (sitemap_registry.h) and hand to the sieve; a
 * response whose URL is registered is marked for the sitemap parser.
 *
 * The visit reaches the loop through hooks given at creation: whether a
 * transfer may start (back-pressure), whether a page may (the source's
 * budget, crawl_source.h) and the pump (after an asynchronous DNS
 * answer); it reads the loop's stopping and finished flags. It reaches
 * the network through hooks too (struct visit_net): the fetch engine's
 * start and the resolver's lookup, so that a test drives a visit with
 * fakes that answer when it says. It keeps its own counters (struct
 * visit_stats: requests, pages, statuses, errors by code), which the
 * stats gatherer reads (crawl_stats.h).
 *
 * Per-IP leases (an agent of a cluster crawl, crawl_cluster.h; given as
 * hooks, so the visit knows nothing of Redis): when the policy's IP delay
 * is above 0, a request to an address waits, on the live list, for the
 * lease of the address's politeness group (ip_addr_group) before it
 * starts, asked with a TTL of the IP delay + [fetch] timeout_ms +
 * VISIT_LEASE_MARGIN_MS (a grant that comes later than the margin is not
 * used: the TTL then still covers the request's time bound and the delay
 * after it). When the response is in, the lease is shortened to the IP
 * delay counted from then. Refused (another agent holds it), or Redis
 * unreachable: the request goes back (a page to the front of its queue,
 * robots.txt to unknown), the visit ends, and the host's IP group waits
 * the holder's time left (at most the policy's IP delay, at least
 * VISIT_LEASE_MIN_WAIT_MS; VISIT_LEASE_RETRY_MS when Redis did not
 * answer) before its next host asks again. The loop never waits for Redis.
 */
#ifndef CRAWLER_VISIT_H
#define CRAWLER_VISIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crawler/net/dns.h"   /* the lookup hook's types */
#include "crawler/net/fetch.h" /* the engine hook's types */

struct visit;
struct crawl_limits;
struct url_options;
struct fetch_config;
struct politeness_config;
struct frontier;
struct politeness;
struct fetch_result;
struct done_set;
struct previous;
struct crawl_job;
struct crawl_tail_entry;

struct visit_hooks {
	void *ctx;
	int (*can_start)(void *ctx); /* room for one more transfer */
	/* one more page may start: under crawl.max_pages, or in a cluster
	 * within the pages this agent reserved of the crawl's */
	int (*page_allowed)(void *ctx);
	void (*pump)(void *ctx); /* the loop's pump, after a DNS answer */
	/* NULL, or 1 when a queued URL (its depth word) is to be dropped at
	 * its turn: a rule added since it was queued rejects it */
	int (*dropped)(void *ctx, const char *url, size_t len, uint32_t depth);
	/* a pump on one of the loop's next turns, never from within this
	 * call: a held host gave its turn back (visit_yielded_run) */
	void (*pump_soon)(void *ctx);
};

/* The longest a lease's grant may take to come back and still be used. */
#define VISIT_LEASE_MARGIN_MS 200
/* Shortest rest of an IP group refused its lease; the rest when Redis did
 * not answer. */
#define VISIT_LEASE_MIN_WAIT_MS 5
#define VISIT_LEASE_RETRY_MS 100

/* Per-IP leases across agents (see above); acquire NULL: none. acquire:
 * 0, and done runs later, once (granted; else wait_ms left on another's
 * lease, or -1 when Redis did not answer); -1 and done never runs (not
 * connected). release: this agent's lease of key, if it still holds it,
 * ends ttl_ms from now (fire and forget). key: an IP group's text form. */
typedef void visit_lease_done_fn(void *arg, bool granted, long wait_ms);
struct visit_lease_hooks {
	void *ctx;
	int (*acquire)(void *ctx, const char *key, unsigned ttl_ms, visit_lease_done_fn *done,
	               void *arg);
	void (*release)(void *ctx, const char *key, unsigned ttl_ms);
};

/* The network (crawl_run.c wires the fetch engine and the resolver). start:
 * as fetch_engine_start (FETCH_OK, and the result comes back once through
 * visit_result; else never). resolve: as dns_resolve at the loop's time
 * (DNS_OK, and done runs once, maybe from inside the call; else never). */
struct visit_net {
	void *ctx;
	enum fetch_error (*start)(void *ctx, const struct fetch_request *req);
	enum dns_error (*resolve)(void *ctx, const char *name, dns_done_fn done, void *arg);
};

/* What a visit uses, all borrowed (the engine's results come back through
 * visit_result). */
struct sitemap_registry;

struct visit_parts {
	/* [crawl] obey_robots, user_agent, max_redirects, page_requisites,
	 * trace_visits */
	const struct crawl_limits *crawl;
	const struct url_options *url; /* resolving Locations */
	/* [fetch] allow_private_networks; timeout_ms (an IP lease's TTL) */
	const struct fetch_config *fetch_config;
	const struct politeness_config *politeness; /* the IP delay (leases) */
	struct frontier *frontier;
	struct politeness *pol;
	struct visit_net net;
	struct sitemap_registry *sitemaps; /* NULL: sitemaps are not followed */
	struct visit_hooks hooks;
	const int *stopping;             /* the loop's: the crawl starts nothing new */
	const int *finished;             /* the loop's: it is over */
	struct done_set *done;           /* fetched after the last checkpoint: skipped */
	const struct previous *previous; /* the crawl recrawled against, or NULL */
	struct visit_lease_hooks leases;
};

#define VISIT_STATUS_MAX 600 /* HTTP status codes counted one by one */
#define VISIT_ERRORS 17      /* fetch and DNS error codes counted one by one */

/* The visit's counters: fetch loop thread, from 0 at visit_create (a
 * resumed crawl's earlier runs are the stats gatherer's, crawl_stats.h). */
struct visit_stats {
	/* pages requested, or waiting for their IP's lease; a request put back
	 * (a refused lease, the family fallback) uncounts itself */
	uint64_t pages_started;
	uint64_t pages_done, requests, bytes, robots_fetches;
	uint64_t robots_disallowed, redirects;
	uint64_t redirect_limit;        /* redirects not followed: [fetch] max_redirects */
	uint64_t reuse_retries;         /* requests re-queued after a reused connection
	                                   closed unanswered (fetch.h reuse_dropped) */
	uint64_t robots_redirect_limit; /* robots.txt chains cut at ROBOTS_MAX_REDIRECTS */
	uint64_t robots_unreachable;    /* robots.txt 5xx/429/network error: retried */
	uint64_t robots_undecodable;    /* robots.txt 2xx bodies that cannot be decoded */
	/* hosts retired after [politeness] robots_max_attempts robots.txt
	 * misses in a row */
	uint64_t hosts_robots_retired;
	uint64_t status_other; /* statuses outside 0..VISIT_STATUS_MAX-1 */
	uint64_t private_refused, hosts_dns_failed;
	uint64_t family_fallbacks; /* hosts moved to their other address family */
	uint64_t conditional;      /* pages asked for on an earlier crawl's validators */
	/* cluster crawls: requests put back because another agent held their
	 * IP's lease, or because Redis did not answer the lease (in time) */
	uint64_t ip_lease_refused, ip_lease_errors;
	uint64_t tail_skipped;     /* URLs popped that a resume's tail had fetched */
	uint64_t sitemaps_dropped; /* robots.txt Sitemap lines past VISIT_SITEMAPS_PER_HOST */
	/* turns a visit gave back after [politeness] max_disallowed_per_turn
	 * URLs dropped as robots-disallowed in a row */
	uint64_t disallowed_yields;
	uint64_t dns_errors[VISIT_ERRORS], fetch_errors[VISIT_ERRORS];
	uint64_t status[VISIT_STATUS_MAX];
	/* memory now: the per-host table (blocks of 4,096 hosts' states, made
	 * as host ids reach them) and the resolver's wait line */
	uint64_t mem_bytes;
};

/* NULL if out of memory. */
struct visit *visit_create(const struct visit_parts *parts);
/* Frees the table, the live requests and the wait line; NULL is a no-op. */
void visit_destroy(struct visit *v);

/* The frontier host of an absolute URL, created (with its table entry) if
 * new. 0, or -1 (not absolute, or refused: the frontier counts why). */
int visit_host_get(struct visit *v, const char *url, size_t len, uint32_t *host);

/* Starts the visit of a host the politeness heap handed out. */
void visit_begin(struct visit *v, uint32_t host);

/* A finished transfer: counts it, moves its host's visit on (robots.txt,
 * Retry-After, errors), resolves a page's redirect. Returns the job for
 * the parse pool or writer (NULL if out of memory: the result is freed),
 * with *follow = 1 when j->redirect is a crawl key to follow. */
struct crawl_job *visit_result(struct visit *v, struct fetch_result *res, int *follow);

/* After a result was handed on: the host's next URL, unless its visit
 * waits for something else. */
void visit_continue(struct visit *v, uint32_t host);

/* A fetch of a crashed crawl's tail (crawl_tail.h) of host, counted as if
 * it had just been done; a robots.txt answer sets the host's rules. 0, or
 * -1 when it cannot stand for a fetch (a robots.txt answer without its
 * payload, a redirect, unreachable, or with sitemaps on): nothing done. */
int visit_replayed(struct visit *v, uint32_t host, const struct crawl_tail_entry *e);

/* Starts lookups of hosts waiting in line while the resolver has room. */
void visit_dns_line_run(struct visit *v);
/* Goes on with the visits that gave their turn back (the pump, once per
 * turn): each checks at most another max_disallowed_per_turn URLs. */
void visit_yielded_run(struct visit *v);

/* The counters as they stand. */
void visit_stats(const struct visit *v, struct visit_stats *out);
/* Its pages_started alone (the page limit reads it before every page). */
uint64_t visit_pages_started(const struct visit *v);

struct recfile_writer;
struct recfile_reader;

/* Checkpoint: per host, its DNS answer and politeness state, then the
 * URLs taken from the frontier and not done (in flight or parked). */
void visit_save(struct visit *v, struct recfile_writer *w, uint64_t now_us);
/* Resume: reads what visit_save wrote into a visit whose frontier and
 * politeness were restored from the same checkpoint; the URLs not done go
 * back at the front of their queues. 0, or -1 (corrupt). */
int visit_load(struct visit *v, struct recfile_reader *rd, uint64_t now_us);

#endif
