/*
 * politeness.h: the two-level politeness heap that decides which host the
 * fetch loop may visit next (course notes 2.8; BUbiNG's workbench).
 *
 * Data structure.
 *   - IP groups: hosts resolved to the same IPv4 address, or to the same
 *     IPv6 /64 (ipaddr.h says why a /64), form a group holding an
 *     indexed 4-ary min-heap of its hosts keyed by each host's next allowed
 *     time. A group's key is max(IP next allowed time, its best host's time).
 *   - Top heap: an indexed 4-ary min-heap of groups by key. A host whose IP
 *     is unknown (or every host when ip_politeness is 0) sits in the top heap
 *     directly, as its own group.
 *   - Every heap entry knows its slot, so insert, pop and key update are
 *     O(log n).
 *
 * Invariants.
 *   - A host is in a heap only if its frontier queue is non-empty, it is not
 *     held and not retired. Hosts with an empty queue are "parked" (no idle
 *     polling); the frontier's empty->non-empty callback unparks them.
 *   - Tokens: politeness_pop_ready removes the host AND its IP group from
 *     the heaps; neither can be handed out again until politeness_release.
 *     So a host, and an IP, is never visited twice at once.
 *   - The top of the top heap is always the next host to visit: if pop says
 *     "not ready until T", no idle host with URLs and an idle IP is ready
 *     before T.
 *   - Precedence: among the hosts (and IP groups) ready at a pop, the one
 *     whose next URL has the highest tier (frontier_host_best_tier: rule
 *     priority, then the crawl order) goes first; equal tiers go in the
 *     order they became ready. Readiness itself (delays, IP tokens) is
 *     never traded for a tier. A host's share per turn is the visit
 *     budget (politeness_visit_budget).
 *   - Delays count from the end of the visit (release time), see
 *     delay_policy.h.
 *
 * Protocol for the fetch loop (one thread, the same that owns the frontier):
 *   r = politeness_pop_ready(p, now, &host, &t);
 *     POLITENESS_OK: visit host (up to politeness_visit_budget URLs/time),
 *       popping URLs with frontier_pop; then politeness_release(p, host, &o, end).
 *       If the host's IP is unknown, resolve it, call politeness_host_set_ip
 *       and release with kind VISIT_NONE (no delay): it comes back under its
 *       IP's token before any request is made.
 *     POLITENESS_NOT_READY: arm a timer for t.
 *     POLITENESS_EMPTY: nothing queued outside held hosts; wait for URLs or
 *       releases.
 *   A release whose host exceeded max_consecutive_errors retires it: its
 *   queued URLs go to the retire callback (frontier_host_retire) and are
 *   counted; the release returns POLITENESS_RETIRED.
 *
 * Per host, beside its place in the heaps: its IP (the crawler's one copy
 * of it: the fetch loop formats it for each request, nothing else keeps
 * it), its Crawl-delay and consecutive errors, the adaptive policy's
 * estimate of its response time (delay_policy.h: the one copy, updated on
 * each release; not checkpointed, a resumed crawl starts it afresh), and
 * its robots.txt cache:
 * unknown (never fetched, forgotten, or a fetch in flight when a checkpoint
 * was taken), fetching, or known with its parsed rules (owned here, NULL =
 * allow all) and an expiry time (the caller's: robots_expiry_us after the
 * fetch) after which they are fetched again.
 *
 * The robots.txt cache is bounded: the rules of all hosts take at most
 * robots_cache_bytes (robots_mem_bytes each). Past it, a clock forgets
 * rules: its hand goes round the hosts that have rules, clearing the
 * reference bit a visit sets (pop) and forgetting the rules of a host whose
 * bit is clear, an idle one (nothing queued) rather than one with URLs
 * waiting when one comes within the next 16 such hosts; never those of a
 * held host or of the host whose rules are being set. A forgotten host is
 * unknown again: its robots.txt is fetched before its next URL; but rules
 * that allow every path (robots_allows_all) become NULL rules instead,
 * known until they expire, costing nothing.
 *
 * Memory: 96 bytes per host (the struct, in one array by host id) plus 32
 * bytes per heap entry (hosts with URLs waiting: 16 in its waiting or
 * ready heap, and room kept in the other) and 88 bytes per IP group,
 * plus 4 bytes per host whose rules were cached (the clock's ring), plus
 * the rules within robots_cache_bytes; outside the frontier's budget.
 * Every call O(1) or O(log n) but the checkpoint's (O(hosts)); a cache
 * eviction is amortized O(1).
 */
#ifndef POLITENESS_POLITENESS_H
#define POLITENESS_POLITENESS_H

#include <stdint.h>

#include "frontier/frontier.h"
#include "frontier/base/ipaddr.h"
#include "politeness/delay_policy.h"

enum politeness_err {
	POLITENESS_OK = 0,
	POLITENESS_NOT_READY = 1,   /* pop: no host ready now; *ready_at says when (not an error) */
	POLITENESS_EMPTY = 2,       /* pop: no host waiting at all (not an error) */
	POLITENESS_RETIRED = 3,     /* release: the host was retired (not an error) */
	POLITENESS_ERR_NOMEM = 4,   /* allocation failed; state unchanged */
	POLITENESS_ERR_INVALID = 5, /* bad argument or config */
	POLITENESS_ERR_STATE = 6,   /* release of a host that is not held */
	POLITENESS_ERR_IO = 7,      /* a checkpoint file cannot be written or read (errno) */
	POLITENESS_ERR_CORRUPT =
	        8, /* restore: the file is torn, or names a host not in the frontier */
};

enum politeness_robots_state {
	POLITENESS_ROBOTS_UNKNOWN = 0,  /* never fetched (or expired and reset) */
	POLITENESS_ROBOTS_FETCHING = 1, /* a robots.txt fetch is in flight */
	POLITENESS_ROBOTS_KNOWN = 2,    /* rules attached (NULL = allow all) */
};

struct politeness_stats {
	uint64_t hosts_in_heap; /* hosts waiting with URLs */
	uint64_t hosts_held;    /* popped, not yet released */
	uint64_t hosts_parked;  /* known hosts with an empty queue */
	uint64_t hosts_retired;
	uint64_t ip_groups;
	uint64_t pops;
	uint64_t releases;
	uint64_t errors;           /* VISIT_ERROR outcomes */
	uint64_t retry_laters;     /* VISIT_RETRY_LATER outcomes */
	uint64_t dropped_urls;     /* URLs drained from retired hosts */
	uint64_t robots_hosts;     /* hosts with robots.txt rules cached */
	uint64_t robots_bytes;     /* their rules' bytes (robots_mem_bytes) */
	uint64_t robots_evicted;   /* rules forgotten for room, ever */
	uint64_t robots_compacted; /* rules that allowed all, made NULL for room */
	/* robots.txt files set with a path that meets more wildcard rules
	 * than robots_max_wildcard_rules (robots.h) */
	uint64_t robots_capped;
	/* memory now: the per-host array (and the robots.txt cache's ring),
	 * the heaps' entries, the IP groups and their index */
	uint64_t mem_hosts, mem_heaps, mem_ip_groups;
};

struct politeness;
struct robots;

/* Creates the heaps over a frontier (borrowed; must outlive p). Registers
 * itself as the frontier's nonempty callback, and picks up hosts that already
 * have URLs. on_drop (may be NULL) receives the URLs of retired hosts. */
enum politeness_err politeness_create(struct frontier *f, const struct politeness_config *c,
                                      frontier_drain_fn on_drop, void *drop_ctx,
                                      struct politeness **out);
/* Unregisters from the frontier and frees. NULL is a no-op. */
void politeness_destroy(struct politeness *p);

/* Hands out the next ready host as a token (see protocol). */
enum politeness_err politeness_pop_ready(struct politeness *p, uint64_t now_us, uint32_t *host,
                                         uint64_t *ready_at_us);
/* Gives a held host back with the outcome of its visit, ended at now_us:
 * computes its next time (and its IP's), reinserts it if it has URLs, parks
 * it otherwise, or retires it. */
enum politeness_err politeness_release(struct politeness *p, uint32_t host,
                                       const struct visit_outcome *o, uint64_t now_us);

/* A held host's IP group (the token it carries) rests at least until
 * until_us, counted from its release: another agent of a cluster crawl
 * holds the IP's lease. Nothing for a host not held or without a group. */
void politeness_ip_busy(struct politeness *p, uint32_t host, uint64_t until_us);

/* How much a visit to this host may do: URLs and microseconds (ratio policy:
 * visit_budget; fixed: max_urls_per_visit and no time limit = UINT64_MAX). */
void politeness_visit_budget(const struct politeness *p, uint32_t host, uint32_t *max_urls,
                             uint64_t *max_us);

/* Assigns the host's resolved address (copied; either family). Moves the
 * host into its group (ip_addr_group: the address, or the /64 of an IPv6
 * one), creating it; with ip_politeness off only records it. A held host
 * may change address: its next visit comes under the new group. */
enum politeness_err politeness_host_set_ip(struct politeness *p, uint32_t host,
                                           const struct ip_addr *addr);
/* 1 and *addr set (may be NULL) if the host has an IP, else 0. */
int politeness_host_ip(const struct politeness *p, uint32_t host, struct ip_addr *addr);
/* robots.txt Crawl-delay for the host (0 = none); capped by crawl_delay_cap. */
enum politeness_err politeness_host_set_crawl_delay(struct politeness *p, uint32_t host,
                                                    uint64_t delay_us);
/* A steered host delay (a running crawl's POST /hosts/HOST/delay): ms
 * between the end of one request to the host and the start of the next,
 * in place of the policy's own wait (Crawl-delay, back-off and Retry-After
 * still lengthen it, the IP delay still holds), and one URL a visit; 0
 * gives the host back to the policy. From its next release on. Kept apart
 * from the per-host array (8 bytes a steered host, a binary search). */
enum politeness_err politeness_host_set_delay(struct politeness *p, uint32_t host, uint32_t ms);
/* The steered delay of a host in ms (0: none). */
uint32_t politeness_host_delay(const struct politeness *p, uint32_t host);
/* Next allowed time of a host (its own, not its IP's); 0 for unknown. */
uint64_t politeness_host_next(const struct politeness *p, uint32_t host);
/* Next allowed time of the host's IP group (0 if none). */
uint64_t politeness_host_ip_next(const struct politeness *p, uint32_t host);
uint32_t politeness_host_errors(const struct politeness *p, uint32_t host);
/* The rest the host's last visit that made requests imposed: its next
 * allowed time minus that visit's end (0 before any such visit). The crawl
 * log's wait_ms. */
uint64_t politeness_host_wait(const struct politeness *p, uint32_t host);
/* The host's adaptive-policy estimate (delay_policy.h; zeros for an unknown
 * host, and under the other policies, which keep none). */
void politeness_host_estimate(const struct politeness *p, uint32_t host,
                              struct delay_estimate *out);
/* 1 if the host is currently held (popped and not released). */
int politeness_host_held(const struct politeness *p, uint32_t host);

/* A host's politeness state in a form that outlives the process (crawl
 * checkpoints): times are waits relative to the moment of the save, since
 * the clock need not survive a restart. */
struct politeness_host_saved {
	uint64_t wait_us;        /* until the host's next allowed time (0: ready) */
	uint64_t ip_wait_us;     /* until its IP group's next allowed time */
	uint64_t crawl_delay_us; /* robots.txt Crawl-delay (0: none) */
	uint32_t errors;         /* consecutive errors */
	struct ip_addr addr;     /* with has_ip */
	uint8_t has_ip;
};
/* Fills *out with the host's state at now_us (zeros for an unknown host). */
void politeness_host_save(const struct politeness *p, uint32_t host, uint64_t now_us,
                          struct politeness_host_saved *out);
/* Gives a host (not held) the saved state at now_us. The process that saved
 * it may have contacted the host and its IP at any moment until it ended, so
 * the host, and its IP, first wait at least one policy delay counted from
 * now_us (as if a visit had just ended), or the saved wait when longer. A
 * retired host stays retired. */
enum politeness_err politeness_host_restore(struct politeness *p, uint32_t host,
                                            const struct politeness_host_saved *s, uint64_t now_us);

/* A host's robots.txt cache: its state, its rules (borrowed: valid until
 * the next politeness_robots_set of the host or politeness_destroy) and
 * their expiry (0 = none). Any argument but p may be NULL. */
enum politeness_err politeness_robots_state(const struct politeness *p, uint32_t host,
                                            enum politeness_robots_state *state,
                                            const struct robots **rules, uint64_t *expires_us);
/* Sets a host's robots.txt cache. Takes rules (may be NULL), in every case:
 * the host's former rules, and rules themselves on an error, are freed with
 * robots_destroy. */
enum politeness_err politeness_robots_set(struct politeness *p, uint32_t host,
                                          enum politeness_robots_state state, struct robots *rules,
                                          uint64_t expires_us);
/* Checkpoint of every host's robots.txt cache, in its own file at path
 * (written, not fsynced): known rules with their expiry relative to now_us;
 * a fetch in flight is saved as unknown (fetched again after a resume).
 * POLITENESS_ERR_IO (errno) when the file cannot be written. */
enum politeness_err politeness_robots_checkpoint(const struct politeness *p, const char *path,
                                                 uint64_t now_us);
/* Gives the hosts the robots.txt caches saved at path, expiries rebased on
 * now_us; the frontier must hold every host saved. Rules that cannot be
 * decoded leave their host unknown (fetched again rather than allowed).
 * POLITENESS_ERR_IO (errno) when it cannot be read, POLITENESS_ERR_CORRUPT,
 * POLITENESS_ERR_NOMEM. */
enum politeness_err politeness_robots_restore(struct politeness *p, const char *path,
                                              uint64_t now_us);

void politeness_stats(const struct politeness *p, struct politeness_stats *s);
const char *politeness_strerror(enum politeness_err e);

#endif
