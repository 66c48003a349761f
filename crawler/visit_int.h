/*
 * visit_int.h: the visit's state, shared by its files: visit.c (the
 * per-host table, RESOLVE and FETCH, results), visit_robots.c (ROBOTS:
 * robots.txt, its redirects across hosts, its sitemaps) and visit_ckpt.c
 * (what a checkpoint saves of the visits). Not for other modules: they
 * use visit.h.
 */
#ifndef CRAWLER_VISIT_INT_H
#define CRAWLER_VISIT_INT_H

#include <stdint.h>

#include "crawler/config/config.h"
#include "crawler/crawl_writer.h"
#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"
#include "crawler/visit.h"
#include "frontier/base/ipaddr.h"
#include "frontier/frontier.h"
#include "politeness/politeness.h"

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

/* A host's state, outcome and DNS answer change only through their setters
 * (visit_set_state, visit_set_outcome, visit_set_dns in visit.c), each of
 * which can trace the change ([crawl] trace_visits); the other fields are
 * the visit's figures. */
struct host_state {
	uint8_t dns;           /* enum host_dns */
	uint8_t state;         /* enum visit_state */
	uint8_t outcome;       /* enum visit_kind so far */
	uint8_t families;      /* visit_family_bit()s of the usable addresses DNS gave */
	uint8_t failed;        /* visit_family_bit()s a connect failed on (fallback) */
	uint8_t reuse_drops;   /* pages re-queued in a row after a reused
	                        connection closed unanswered */
	uint8_t robots_misses; /* robots.txt failures in a row (saturating) */
	uint8_t yielded;       /* in visit.yielded: goes on at the next pump only */
	uint32_t visit_requests;
	uint32_t visit_max_urls;
	uint64_t visit_start_us;
	uint64_t visit_wait_us; /* the rest required before this visit */
	uint64_t visit_max_us;
	uint64_t retry_after_us;
};

/* A request's per-IP lease (visit.h; visit_lease.c). */
enum req_lease {
	REQ_LEASE_NONE = 0, /* none needed: a single crawl, or no IP delay */
	REQ_LEASE_ASKED,    /* waiting for Redis's answer: not started */
	REQ_LEASE_HELD,     /* granted: in flight; shortened when it ends */
};

/* One request in flight (fetch_request.user), or waiting for its lease. */
struct req {
	struct visit *v;
	uint32_t host;
	uint32_t depth;   /* link depth */
	uint32_t embed;   /* embed code (frontier.h): 0 for a page */
	int robots;       /* robots.txt fetch */
	int redirects;    /* redirects followed along the chain so far */
	int priority;     /* the URL rule's (frontier.h), kept if it goes back */
	int own_addr;     /* sent to the host's own address (not a robots hop's) */
	uint64_t wait_us; /* the visit's wait for its first request, else 0 */
	int lease;        /* enum req_lease */
	uint64_t lease_asked_us;
	char ip[IP_ADDR_STRLEN];     /* the address it goes to */
	char ip_key[IP_ADDR_STRLEN]; /* that address's politeness group */
	char *url;
	char *via; /* "" if none */
	struct req *prev, *next;
};

/* Sitemaps taken from one robots.txt (the protocol sets no limit; a few are
 * usual, and each may list 50,000 URLs). */
#define VISIT_SITEMAPS_PER_HOST 16

struct visit {
	struct visit_parts p;
	struct visit_stats st;
	struct host_state **blocks; /* see visit_host_state() */
	size_t n_blocks;
	size_t blocks_made; /* blocks allocated (a block lives as long as the visit) */
	struct req *live;   /* requests in flight or parked */
	uint32_t *dns_wait; /* held hosts waiting for the resolver (FIFO) */
	size_t dns_wait_head, dns_wait_n, dns_wait_cap;
	uint32_t *yielded; /* held hosts that gave their turn back (FIFO) */
	size_t yielded_n, yielded_cap;
	int in_dns_call;                   /* inside the lookup hook: its callback must not pump */
	int trace;                         /* [crawl] trace_visits: each change on stderr */
	uint64_t trace_t0_us;              /* the trace's times count from here */
	struct url *url_base, *url_target; /* resolving Locations */
};

/* A lookup's context. */
struct dns_wait {
	struct visit *v;
	uint32_t host;
};

/* Shared by visit.c, visit_robots.c and visit_ckpt.c. */
struct host_state *visit_host_state(struct visit *v, uint32_t host);
const struct host_state *visit_host_state_if_any(const struct visit *v, uint32_t host);
/* The setters: why says what moved it, for the trace. */
void visit_set_state(struct visit *v, uint32_t host, enum visit_state st, const char *why);
void visit_set_outcome(struct visit *v, uint32_t host, enum visit_kind kind, const char *why);
void visit_set_dns(struct visit *v, uint32_t host, enum host_dns dns, const char *why);
/* The host's queued URLs are dropped and none is taken any more. */
void visit_retire_host(struct visit *v, uint32_t host);
/* The visit ends (IDLE): politeness_release with its outcome. */
void visit_end(struct visit *v, uint32_t host, const char *why);
void visit_set_robots(struct visit *v, uint32_t host, enum politeness_robots_state st,
                      struct robots *robots, uint64_t expires_us);
uint8_t visit_family_bit(enum ip_family f);
void visit_count_fetch_error(struct visit *v, enum fetch_error e);
void visit_count_dns_error(struct visit *v, enum dns_error e);
const struct ip_addr *visit_addr_choose(struct visit *v, const struct ip_addr *addrs, size_t naddrs,
                                        uint8_t failed, uint8_t *families);
int visit_start_fetch(struct visit *v, uint32_t host, const char *url, uint32_t depth,
                      const char *via, int robots, int redirects, const char *ip);
/* Resolves a Location against the URL that answered with it. Returns a
 * malloc'd string, NULL when it does not resolve: the crawl key when the
 * target is http(s) (*crawlable = 1), else the resolved href (*crawlable =
 * 0: logged, not followed). */
char *visit_resolve_location(struct visit *v, const char *base, const char *loc, int *crawlable);
void visit_dns_start_waiting(struct visit *v);
/* Hands a request whose lease was granted (or not needed) to the engine.
 * 0, or -1 (counted; q released). */
int visit_req_send(struct visit *v, struct req *q);
/* A request that never went out back where it came from (a page to the
 * front of its queue, robots.txt to unknown), uncounted, and released. */
void visit_req_put_back(struct visit *v, struct req *q);
void visit_req_release(struct visit *v, struct req *q);

/* per-IP leases (visit_lease.c) */
/* 1 when q must wait for its lease (asked, or put back and the visit
 * ended: Redis unreachable), 0 when it may start now (no lease needed). */
int visit_lease_ask(struct visit *v, struct req *q);
/* q's answer is in: shortens its lease to the IP delay from now. */
void visit_lease_done(struct visit *v, struct req *q);

/* robots.txt (visit_robots.c) */
void visit_start_robots(struct visit *v, uint32_t host);
/* Why robots.txt cannot be had now. */
enum robots_miss {
	ROBOTS_MISS_LOCAL,       /* the crawl's own cause (back-pressure, a stop,
	                            no memory, a refused lease): not the host's */
	ROBOTS_MISS_HOST,        /* unreachable: 5xx, 429, network or DNS error */
	ROBOTS_MISS_UNDECODABLE, /* a 2xx whose body cannot be decoded */
};
/* robots.txt cannot be had now: the host's visit ends, its URLs kept, or
 * retired after robots_max_attempts misses of the host's in a row. */
void visit_robots_unreachable(struct visit *v, uint32_t host, enum robots_miss why);
int visit_robots_answer(struct visit *v, struct req *q, struct fetch_result *res,
                        struct crawl_job *j);
/* What robots.txt's final answer made of the host's rules. */
enum robots_take {
	ROBOTS_TAKEN,            /* the rules are set */
	ROBOTS_TAKE_UNREACHABLE, /* its status says unreachable (5xx, 429) */
	ROBOTS_TAKE_UNDECODABLE, /* a 2xx body that cannot be decoded */
	ROBOTS_TAKE_NOMEM,       /* out of memory */
};
enum robots_take visit_robots_take(struct visit *v, uint32_t host, long st, const char *encoding,
                                   const uint8_t *body, size_t len, const struct robots **rules);

#endif
