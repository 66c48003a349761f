/*
 * flush_sort.h: the layout and the sort of a Mercator flush's array
 * (internal to the module).
 *
 * A segment's n records have positions in a bucketed layout: the records
 * are partitioned by the top pbits of their signatures (bucket d holds
 * positions bstart[d]..bstart[d+1]; a slice is whole buckets) and keep
 * A's order inside a bucket, so a record's position is its bucket's start
 * plus its rank, the number of records of the bucket before it in A. The
 * flush's array holds one slice of each part at a time. The entry at a position
 * is the key signature << pbits | min(rank, lim), lim = 2^pbits - 1: the
 * signature's bits below the bucket's (the bucket gives the top ones back)
 * with the rank packed below them. Sorting a bucket's keys is then the
 * notes' stable indirect sort of (signature, index) in 8 bytes a slot:
 * equal signatures come together, their first occurrence in A first, and
 * each knows its position, so the merge marks first occurrences of fresh
 * signatures by position and the scan of A reads the marks in A order
 * (its record's bucket, counted, gives the position back).
 *
 * pbits is chosen so that a bucket averages a quarter of lim or less
 * (2^(2 pbits) >= 4 n). A bucket can still outgrow lim when many records
 * share it (one URL repeated past the cache, or signatures chosen to
 * collide): records from rank lim on share the key rank lim, their order
 * is lost, and a fresh signature whose first record is among them is
 * "late": the merge lists it (sorted) at the front of the slice's array,
 * and a scan of A (slice_late) looks the slice's records past lim up in
 * that list and marks the first record of each.
 */
#ifndef SIEVE_FLUSH_SORT_H
#define SIEVE_FLUSH_SORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the layout's arrays for 2^p buckets: two histograms, bstart, bnext */
#define LAYOUT_BYTES(p) ((((size_t)4 << (p)) + 1) * sizeof(uint32_t))

/* Bucket bits for a buffer of n slots: at least 8, at most 24. */
unsigned layout_bits(size_t n);
/* bstart from the histogram top (2^p buckets); the total. */
uint64_t layout_starts(const uint32_t *top, unsigned p, uint32_t *bstart);

/* The next position of signature v's bucket (bnext counts the records met
 * so far, starting at bstart); false when the bucket is already full, i.e.
 * the records do not match the histogram the layout was built from. */
static inline bool layout_next(const uint32_t *bstart, uint32_t *bnext, unsigned p, uint64_t v,
                               uint32_t *pos)
{
	size_t d = (size_t)(v >> (64 - p));
	uint32_t at = bnext[d];

	if (at == bstart[d + 1])
		return false;
	bnext[d] = at + 1;
	*pos = at;
	return true;
}

/* Sorts a bucket of the flush's array (n keys, whose bits above the
 * signature's part are alike), with tmp (tmp_cap keys) as scratch. */
void bucket_sort(uint64_t *a, size_t n, uint64_t *tmp, size_t tmp_cap);

#endif
