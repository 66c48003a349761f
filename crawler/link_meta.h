/*
 * link_meta.h: what the crawl knows about a URL while it waits in the sieve:
 * its depth and the URL it was found on (via). The sieve (sieve/sieve.h)
 * keeps only the URL bytes, so this side table, keyed by the URL's 64-bit
 * sieve signature (XXH3 of the crawl key), carries the rest from the add to
 * the emit.
 *
 * Data structure: S stripes, each under its own mutex, each a chained hash
 * table over a fixed pool of entries allocated at create (no allocation per
 * URL). An entry: signature, depth, a counted reference to a shared via
 * string (one per parsed page, not per link), and its state: "in progress"
 * (the add that wrote it has not returned from the sieve yet, tagged with a
 * ticket) or "done" (with the sieve's flush count read after that add
 * returned, and a done sequence number).
 *
 * Protocol (per URL): put (first writer wins: a signature already present
 * keeps its entry) -> sieve_add -> done; the sieve's emit callback takes the
 * entry (removes it). An entry whose URL the sieve drops as seen before is
 * never taken: it is removed by a sweep, when it is certainly stale:
 *   - epoch rule: a URL whose add returned when the sieve had completed F
 *     flushes is in the buffer being filled or the one being flushed, so it
 *     has been processed once F + 2 flushes completed: the entry may go when
 *     flushes >= F + 3 (one of margin);
 *   - forced rule: a caller that read link_meta_clock() = D, then called
 *     sieve_flush() (every URL added before was processed) may remove every
 *     done entry with sequence < D.
 * In-progress entries are never swept.
 *
 * Memory bound: `memory` bytes at create; half is the entry pool (about 48
 * bytes an entry with its bucket), half is for via strings (counted in
 * via_bytes). put returns LINK_META_FULL when the stripe's pool is empty
 * after an epoch sweep, or when via strings exceed their half (unless
 * `force`): the caller then forces a sieve flush, sweeps, and retries with
 * force. Via strings can thus exceed their half only by those held by adds
 * in progress (one page's URL per adding thread).
 *
 * Threads: every call is thread-safe (parse threads put/done, the sieve's
 * flush thread takes). Workload: one put + done per extracted in-scope link,
 * one take per new URL; a sweep is O(stripe pool) and runs only when a
 * stripe is full.
 */
#ifndef CRAWLER_LINK_META_H
#define CRAWLER_LINK_META_H

#include <stddef.h>
#include <stdint.h>

enum link_meta_result {
	LINK_META_ADDED = 0,   /* new entry written (ticket set) */
	LINK_META_PRESENT = 1, /* put: sig has an entry already (first writer wins); take: found */
	LINK_META_FULL = 2,    /* no room: flush the sieve, sweep, retry with force */
	LINK_META_MISSING = 3, /* take: no entry for the signature */
};

struct link_meta;
struct link_meta_via;

struct link_meta_stats {
	uint64_t capacity;     /* entries in the pool */
	uint64_t entries;      /* entries now */
	uint64_t peak_entries; /* most entries at once */
	uint64_t via_bytes;    /* bytes of via strings now */
	uint64_t swept;        /* stale entries removed by sweeps */
	uint64_t full;         /* LINK_META_FULL answers */
	uint64_t mem_bytes;    /* the pool and its buckets (made at create), and via_bytes */
};

/* New table bounded by `memory` bytes (>= 64 KiB). NULL if out of memory or
 * memory too small. */
struct link_meta *link_meta_create(size_t memory);
/* Frees it (and every via reference its entries hold). NULL is a no-op. */
void link_meta_destroy(struct link_meta *m);

/* A via string (len bytes, copied) with one reference, the caller's; NULL
 * if out of memory. */
struct link_meta_via *link_meta_via_new(struct link_meta *m, const char *via, size_t len);
/* Drops one reference; the string is freed with the last. NULL is a no-op. */
void link_meta_via_release(struct link_meta *m, struct link_meta_via *v);
/* The string (NUL-terminated, borrowed while a reference is held). */
const char *link_meta_via_str(const struct link_meta_via *v, size_t *len);

/* Writes sig -> (depth, via) unless sig has an entry. The entry takes its
 * own reference to via. On LINK_META_ADDED *ticket identifies the entry for
 * link_meta_done. flushes: the sieve's completed flushes as last read (a
 * lower bound will do), for the epoch sweep of a full stripe. force: ignore
 * the via-bytes bound (see the top comment). */
enum link_meta_result link_meta_put(struct link_meta *m, uint64_t sig, uint32_t depth,
                                    struct link_meta_via *via, uint64_t flushes, int force,
                                    uint64_t *ticket);
/* The add of sig (put answered ADDED with ticket) returned from the sieve,
 * which had then completed `flushes` flushes. No-op if the entry was taken
 * meanwhile. */
void link_meta_done(struct link_meta *m, uint64_t sig, uint64_t ticket, uint64_t flushes);
/* Removes sig's entry: *depth and *via (the caller now owns that reference;
 * release it). LINK_META_PRESENT when found, LINK_META_MISSING if none. */
enum link_meta_result link_meta_take(struct link_meta *m, uint64_t sig, uint32_t *depth,
                                     struct link_meta_via **via);
/* The done clock, to read BEFORE a forced sieve_flush (see the top comment). */
uint64_t link_meta_clock(struct link_meta *m);
/* Removes stale entries by both rules: done entries with flush count
 * F + 3 <= flushes, and done entries with sequence < done_before (pass 0
 * for the epoch rule only). Returns how many were removed. */
uint64_t link_meta_sweep(struct link_meta *m, uint64_t flushes, uint64_t done_before);

void link_meta_stats(struct link_meta *m, struct link_meta_stats *out);

#endif
