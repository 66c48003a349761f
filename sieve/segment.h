/*
 * segment.h: files of URL records, their one reader, and the Mercator
 * sieve's segment files (internal to the module).
 *
 * A record: {u32 length, u64 XXH3-64 of the bytes XOR a mask, the bytes},
 * little-endian. The XXH3 is both the record's checksum and the URL's
 * signature. The mask is seg_mask(seg) in Mercator's A.<seg>, 0 in its
 * EMITTED and in the offline sieve's A: a record of another segment fails
 * the check, so that the stale tail of a recycled segment file reads as
 * the end of the segment.
 *
 * Mercator's segment seg: A.<seg> (its records) and S.<seg>.<r> (the
 * signatures of its records of slice r, in order, 8 bytes each, not
 * synced: a cache the flush loads a slice from, checked against a checksum
 * and a count kept in memory; the flush reads A instead when they fail).
 * A flushed segment's files are removed, or become A.spare and
 * S.spare.<r>, which the next segment renames and writes over (seg_open).
 */
#ifndef SIEVE_SEGMENT_H
#define SIEVE_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <xxhash.h>

#include "frontier/base/byteorder.h"
#include "sieve/sieve_files.h"

#define REC_HDR 12

/* The mask of segment seg's records: distinct for every segment, never 0
 * (the unsegmented files have none). */
static inline uint64_t seg_mask(uint64_t seg)
{
	return (seg + 1) * 0x9e3779b97f4a7c15ull;
}

/* Writes the record of url (signature sig) with mask at p; its size. */
static inline size_t rec_put(uint8_t *p, const char *url, size_t len, uint64_t sig, uint64_t mask)
{
	le_put32(p, (uint32_t)len);
	le_put64(p + 4, sig ^ mask);
	memcpy(p + REC_HDR, url, len);
	return REC_HDR + len;
}

/* A buffered sequential reader of a file (of records, of runs, of Z). */
struct rd {
	int fd;
	uint8_t *buf;
	size_t cap, pos, len;
	uint64_t off; /* file offset of buf[pos] (counted by the record reads) */
	bool eof;
};

void rd_init(struct rd *r, int fd, uint8_t *buf, size_t cap);
/* Makes k <= cap contiguous bytes available at buf+pos; returns the bytes
 * available (< k at the end of the file), or -1 on a read error. */
ssize_t rd_need(struct rd *r, size_t k);

/* Reads the next record (mask: the file's): 1 = got one (*url, *len valid
 * until the next call, *sig its verified signature), 0 = clean end, -1 =
 * torn or corrupt record at r->off, -2 = read error. */
int rec_next(struct rd *r, size_t maxlen, uint64_t mask, const char **url, size_t *len,
             uint64_t *sig);

/* Takes the record at r's position when it lies whole in the buffer and
 * checks (length within maxlen; with verify, XXH3 equal to its
 * signature): the fast path of the scans. false leaves r as it was: the
 * buffer's end, or damage that rec_next then reads the careful way and
 * reports. A scan may skip the hash only on records this process wrote
 * or checked already (a live segment's, or a replayed one's). */
static inline bool rec_take_whole(struct rd *r, size_t maxlen, uint64_t mask, bool verify,
                                  const char **url, size_t *len, uint64_t *sig)
{
	size_t avail = r->len - r->pos;
	uint32_t l;
	uint64_t h;

	if (avail < REC_HDR)
		return false;
	l = le_get32(r->buf + r->pos);
	if (l > maxlen || avail - REC_HDR < l)
		return false;
	h = le_get64(r->buf + r->pos + 4) ^ mask;
	if (verify && XXH3_64bits(r->buf + r->pos + REC_HDR, l) != h)
		return false;
	*url = (const char *)r->buf + r->pos + REC_HDR;
	*len = l;
	*sig = h;
	r->pos += REC_HDR + l;
	r->off += REC_HDR + l;
	return true;
}

/* The next record, as rec_next returns it: the whole-record fast path
 * first, rec_next at the buffer's end (or at damage, to report it). */
static inline int rec_take(struct rd *r, size_t maxlen, uint64_t mask, const char **url,
                           size_t *len, uint64_t *sig)
{
	return rec_take_whole(r, maxlen, mask, true, url, len, sig)
	               ? 1
	               : rec_next(r, maxlen, mask, url, len, sig);
}

/* ---- Mercator's segment files ---- */

/* A segment's signatures are listed by slice: their top SLICE_BITS bits. */
#define SLICE_BITS 3
#define SLICES (1u << SLICE_BITS)

/* The slice of signature h. */
static inline unsigned slice_of(uint64_t h)
{
	return (unsigned)(h >> (64 - SLICE_BITS));
}

/* A segment's S files as its adds leave them for the flush. */
struct s_files {
	int fd[SLICES];       /* S.<seg>.<r>, while filled (-1 once sealed or failed) */
	bool ok[SLICES];      /* S.<seg>.<r> holds all of slice r's signatures */
	uint64_t sum[SLICES]; /* XXH3 of S.<seg>.<r>'s bytes (set at the seal) */
};

/* The writer of the filling segment's S files: a buffer per slice. */
struct s_writer {
	uint8_t *buf; /* slice r's signatures at r * cap */
	size_t cap, len[SLICES];
	XXH3_state_t *xs[SLICES]; /* XXH3 of S.<seg>.<r> so far */
};

/* Opens segment seg's S files (one that cannot be opened leaves its slice
 * to be loaded from A). */
void s_files_open(struct s_writer *w, struct s_files *f, const char *dir, uint64_t seg);
/* Writes slice r's buffered signatures. S is a cache: a failed write drops
 * it (the flush then reads A), without the wait a full disk gets for A. */
void s_files_drain(struct s_writer *w, struct s_files *f, unsigned r);
/* Writes what is buffered, records the checksums, closes the files. */
void s_files_seal(struct s_writer *w, struct s_files *f);

/* Lists signature h, of the segment's next record, in its slice's file. */
static inline void s_files_put(struct s_writer *w, struct s_files *f, uint64_t h)
{
	const unsigned r = slice_of(h);

	if (f->ok[r]) {
		le_put64(w->buf + r * w->cap + w->len[r], h);
		w->len[r] += 8;
		if (w->len[r] == w->cap)
			s_files_drain(w, f, r);
	}
}

/* The path of segment seg's file NAME.<seg>, or NAME.<seg>.<slice> when
 * slice >= 0 (S's files). 0 or -1 (too long). */
int seg_path(const char *dir, char *out, size_t len, const char *name, uint64_t seg, int slice);
/* Opens segment seg's file (seg_path, written into p) for writing from its
 * start: the spare renamed, else a new file. The spare's tail past what
 * the segment writes is never taken for records (A's records carry their
 * segment's mask, S is read up to its count). An fd, or -1. */
int seg_open(const char *dir, const char *name, uint64_t seg, int slice, char *p, size_t plen);
/* A flushed segment's files, A and S: made the spares (recycle), or
 * removed. */
void seg_done(const char *dir, uint64_t seg, bool recycle);
/* Removes the spares of A and S. */
void seg_spares_remove(const char *dir);
/* Removes segment seg's S files. */
void s_files_remove(const char *dir, uint64_t seg);

#endif
