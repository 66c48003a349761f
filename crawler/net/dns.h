/*
 * dns.h: asynchronous A and AAAA resolution through c-ares (1.18 API) on
 * the crawler's libuv loop, with a TTL-honouring cache.
 *
 * Data structure: one ares channel whose sockets are watched by uv_poll_t
 * handles (ARES_OPT_SOCK_STATE_CB) and whose timeouts run on one uv_timer_t;
 * a hash table of names -> entry. A lookup asks A and AAAA at once (two
 * queries, one entry) and ends when both answered. An entry is either
 * RESOLVED (up to DNS_MAX_ADDRS addresses, the preferred family's first,
 * both families kept when both answered: see answers_merge; and an expiry), NEGATIVE
 * (failure: for NXDOMAIN / neither an A nor an AAAA record, expiry =
 * negative_ttl; for a timeout or a server
 * failure, a short retry back-off, retry_backoff_ms doubled per failure in
 * a row, capped at negative_ttl) or PENDING (a query in flight and a list of waiters).
 * Resolved/negative entries sit on an LRU list bounded by cache_entries
 * ([dns] cache_entries): past it the least recently used go; pending
 * entries (at most max_pending) are never evicted. Memory: about 175 bytes
 * an entry (its struct with DNS_MAX_ADDRS addresses, and the name), and a
 * hash table of the next power of two above cache_entries + max_pending
 * buckets (8 bytes each), sized once: 11 MiB + 1 MiB at the defaults,
 * whatever the number of hosts. Every call O(1) but on_sock_state (the
 * channel's few sockets).
 *
 * Invariants:
 *  - at most one query per name is in flight: concurrent lookups of the same
 *    name wait on the same entry (coalescing).
 *  - a cached answer is served until now >= its expiry, where expiry = the
 *    time of the request that caused the query + the answer's smallest TTL
 *    (of both record types) clamped to [min_ttl_s, max_ttl_s].
 *  - addresses of one family answered and the other family's query failed
 *    (a timeout, SERVFAIL): the answer is the addresses; neither family
 *    answered: the failure is the worse of the two (a transient error
 *    over NOTFOUND, so the name is asked again soon).
 *  - the servers asked are, in this order of precedence: the configured
 *    list (server), else the nameserver lines of resolv_conf, else those
 *    of the system's /etc/resolv.conf (as c-ares reads it). Never
 *    /etc/hosts, never search domains. c-ares 1.18 reads no port from a
 *    resolv.conf file (a "nameserver ADDR:PORT" line is skipped), so a
 *    server on another port than 53 can only be given in the list.
 *  - IP literals (IPv4, IPv6 bare or in brackets as URL hosts carry them)
 *    are answered synchronously without a query.
 *
 * Time is the caller's: every call takes now_ms (a monotonic clock such as
 * uv_now), so tests can drive expiry. Workload: lookups per host before its
 * first fetch; cache hits dominate. Loop thread only.
 */
#ifndef CRAWLER_NET_DNS_H
#define CRAWLER_NET_DNS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "frontier/base/ipaddr.h"

#define DNS_MAX_ADDRS 4

enum dns_error {
	DNS_OK = 0,            /* addresses found */
	DNS_ERR_NOMEM = 1,     /* allocation failed */
	DNS_ERR_INVALID = 2,   /* bad argument (empty/too long name or label, bad server) */
	DNS_ERR_NOTFOUND = 3,  /* NXDOMAIN, or no A nor AAAA record */
	DNS_ERR_TIMEOUT = 4,   /* no answer in time */
	DNS_ERR_SERVFAIL = 5,  /* server failure, refused, malformed answer */
	DNS_ERR_BUSY = 6,      /* max_pending queries already in flight */
	DNS_ERR_CANCELLED = 7, /* resolver destroyed while waiting */
	DNS_ERR_ARES = 8,      /* other c-ares failure */
};

const char *dns_strerror(enum dns_error err);

struct dns_config {
	const char *server;        /* "S1,S2,...", each ADDR, ADDR:PORT, IPV6 or
	                             [IPV6]:PORT (port 53 by default), asked in
	                             that order; copied. NULL/"" -> resolv_conf */
	const char *resolv_conf;   /* a resolv.conf file whose nameserver lines
	                             are the servers (at least one usable);
	                             copied. NULL/"" -> /etc/resolv.conf */
	size_t cache_entries;      /* resolved+negative entries; 0 -> 65536 */
	unsigned min_ttl_s;        /* clamp; 0 -> 0 (honour tiny TTLs) */
	unsigned max_ttl_s;        /* clamp; 0 -> 86400 */
	unsigned negative_ttl_s;   /* NXDOMAIN/NODATA caching; 0 -> 60 */
	unsigned retry_backoff_ms; /* timeout/SERVFAIL caching, first failure;
	                             doubles per failure in a row up to
	                             negative_ttl; 0 -> 1000 */
	unsigned timeout_ms;       /* per try; 0 -> 2000 */
	unsigned tries;            /* 0 -> 2 */
	size_t max_pending;        /* distinct names in flight; 0 -> 4096 */
	enum ip_family prefer;     /* the family an answer lists first (callers
	                             try the first address, then one of the
	                             other family); IP_NONE -> IP_V4 */
};

/*
 * Result callback. host is borrowed for the call; addrs (naddrs entries,
 * 0 on error) too. Called exactly once per dns_resolve that returned DNS_OK:
 * SYNCHRONOUSLY, from inside dns_resolve, on a cache hit (positive or
 * negative) or an IP literal; otherwise later from the loop.
 */
typedef void (*dns_done_fn)(void *ctx, enum dns_error err, const char *host,
                            const struct ip_addr *addrs, size_t naddrs);

struct dns_resolver;

/*
 * Creates a resolver on loop (borrowed). Initializes c-ares globally
 * (reference counted). On error *out is NULL: DNS_ERR_INVALID for a bad
 * server list, or a resolv_conf that cannot be read or names no usable
 * server (c-ares would fall back to 127.0.0.1:53 without a word).
 */
enum dns_error dns_resolver_create(uv_loop_t *loop, const struct dns_config *config,
                                   struct dns_resolver **out);

/*
 * The servers the channel asks, as "ADDR:PORT,[IPV6]:PORT" (port 53 shown
 * too), into buf (cap bytes, NUL-terminated, cut if short). For tests and
 * the crawl's start-up line. DNS_OK, or DNS_ERR_NOMEM.
 */
enum dns_error dns_resolver_servers(const struct dns_resolver *r, char *buf, size_t cap);

/*
 * Resolves host (borrowed; case-insensitive; trailing dot ignored). Returns
 * DNS_OK and calls cb exactly once (maybe before returning), or returns an
 * error (INVALID, NOMEM, BUSY) and never calls cb.
 */
enum dns_error dns_resolve(struct dns_resolver *r, const char *host, dns_done_fn cb, void *ctx,
                           uint64_t now_ms);

struct dns_stats {
	uint64_t lookups;    /* dns_resolve calls accepted */
	uint64_t queries;    /* names sent to c-ares (each an A and an AAAA query) */
	uint64_t cache_hits; /* answered from the cache (positive or negative) */
	uint64_t coalesced;  /* waited on a query already in flight */
	uint64_t failures;   /* queries that ended in an error */
	uint64_t evictions;  /* cache entries evicted for space */
	size_t pending;      /* queries in flight now */
	size_t cached;       /* resolved+negative entries now */
	uint64_t bytes;      /* the cache's memory now: entries (pending ones
	                        too, as malloc rounds them) and the hash table */
};
void dns_resolver_stats(const struct dns_resolver *r, struct dns_stats *out);

/*
 * Cancels pending queries (their waiters get DNS_ERR_CANCELLED from inside
 * this call), destroys the channel and closes the libuv handles; memory is
 * released in the close callbacks, so run the loop afterwards before closing
 * it. NULL is a no-op.
 */
void dns_resolver_destroy(struct dns_resolver *r);

#endif
