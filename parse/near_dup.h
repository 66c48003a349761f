/*
 * near_dup.h: the near-duplicate store: per host, the SimHash fingerprints
 * (simhash.h) of the pages parsed so far, in a memory budget. A page within
 * NEAR_DUP_DISTANCE bits of one of its host's fingerprints is a
 * near-duplicate (the caller marks it; nothing is dropped); any other page
 * adds its fingerprint.
 *
 * Data structure. NEAR_DUP_STRIPES stripes by host id, each under its own
 * mutex with its own share of the budget, so parse threads meet only when
 * two pages of hosts of one stripe are checked at once. A stripe holds
 *   - a dense array of host records {its first fingerprint, or its
 *     fingerprints' own allocation; host id, count, capacity, ring
 *     position, LRU links}, freed records chained for reuse;
 *   - an open-addressing index (linear probing, load at most 1/2, deletion
 *     by backward shift) from host id to record: a lookup is O(1);
 *   - a list of its hosts from the most to the least recently checked.
 * A host's first fingerprint lives in its record; at its second page it
 * gets an allocation of NEAR_DUP_HOST_MIN, doubled as its pages come, up
 * to NEAR_DUP_HOST_MAX; past that the oldest is overwritten (a ring). The
 * records and the index double together while they stay within three
 * quarters of the stripe's share.
 *
 * Eviction: least recently used hosts first. When a new host finds no free
 * record (and the records may not grow), or a new host or a host's growth
 * would take its stripe past its share of the budget, the stripe's least
 * recently checked hosts are evicted whole, never the host being checked.
 * An evicted host starts again from nothing: its next pages cannot match
 * the pages before. A host that cannot grow within the budget keeps its
 * ring.
 *
 * Invariants: bytes (near_dup_stats) <= the budget, but for one host's
 * smallest record when a stripe holds nothing else; a host's fingerprints
 * are unique to it; a fingerprint is added only when no fingerprint of its
 * host lies within NEAR_DUP_DISTANCE.
 *
 * Memory per host: a 32-byte record and 8 bytes of index (two slots at
 * load 1/2): 40 bytes for a host of one page; beyond, its fingerprints'
 * allocation (accounted as malloc rounds it: 16-byte steps, 8 bytes of
 * header, 32 at least): 48 bytes for 2-4 pages, 80 for 5-8, 144 for
 * 9-16, 8 per page beyond (doubling). A stripe's arrays grow by doubling
 * (counted at their capacity). Everything within the budget.
 *
 * Workload: one check per parsed HTML page, from any parse thread: a lookup,
 * then a scan of the host's fingerprints (at most NEAR_DUP_HOST_MAX
 * popcounts); nothing grows with the number of hosts.
 */
#ifndef PARSE_NEAR_DUP_H
#define PARSE_NEAR_DUP_H

#include <stdint.h>

#define NEAR_DUP_DISTANCE 3    /* near: at most this many bits apart */
#define NEAR_DUP_STRIPES 64    /* stripes, each with a mutex */
#define NEAR_DUP_HOST_MIN 4    /* a host's first allocation (at its 2nd page) */
#define NEAR_DUP_HOST_MAX 4096 /* fingerprints a host keeps at most (a ring) */
#define NEAR_DUP_MEMORY_MIN (256u * 1024u)

enum near_dup_err {
	NEAR_DUP_OK = 0,
	NEAR_DUP_ERR_NOMEM = 1,   /* allocation failed */
	NEAR_DUP_ERR_INVALID = 2, /* budget below NEAR_DUP_MEMORY_MIN */
};

struct near_dup_config {
	uint64_t memory; /* budget in bytes, at least NEAR_DUP_MEMORY_MIN */
};

struct near_dup_stats {
	uint64_t budget;        /* bytes */
	uint64_t bytes;         /* accounted now: records, index, fingerprints */
	uint64_t hosts;         /* hosts with fingerprints now */
	uint64_t fingerprints;  /* fingerprints held now */
	uint64_t checks;        /* pages checked, ever */
	uint64_t found;         /* of which near-duplicates */
	uint64_t hosts_evicted; /* hosts evicted for room, ever */
	uint64_t overwritten;   /* fingerprints a full ring overwrote, ever */
};

struct near_dup;

/* A store with c's budget (copied). NEAR_DUP_OK, or an error with *out
 * NULL. */
enum near_dup_err near_dup_create(const struct near_dup_config *c, struct near_dup **out);
/* Frees everything. NULL is a no-op. */
void near_dup_destroy(struct near_dup *nd);

/* Any thread: 1 if fp lies within NEAR_DUP_DISTANCE of a fingerprint of
 * host, else 0 and fp is added to host's (when memory allows: an
 * allocation that fails adds nothing). */
int near_dup_check(struct near_dup *nd, uint32_t host, uint64_t fp);

/* Any thread: the figures, summed over the stripes. */
void near_dup_stats(struct near_dup *nd, struct near_dup_stats *s);

#endif
