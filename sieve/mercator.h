/*
 * mercator.h: the Mercator sieve's state and its parts (internal to the
 * module; see sieve.h for the contract and the files).
 *
 * The parts: segment.c (the segment files and their record reader),
 * flush_sort.c (the layout and sort of the flush's array), zcodec.c (Z's
 * code), mercator_merge.c (a flush's merge of one part of Z, on its own
 * thread), mercator_flush.c (a flush: layout, merges, output log, commit,
 * emission; the manifest), mercator.c (the sieve: adds, seals, the flush
 * thread, the operations, open and replay).
 *
 * Two segments: `cur` fills (adds append the URL to its A segment file and
 * the signature to its slice's S file), `pending` (if >= 0) is owned by the
 * flush thread. Segments are flushed in increasing order, so the
 * manifest's first_seg says which are committed. The adds keep no
 * signature in memory, so the flush's single array gets the whole budget's
 * slots.
 *
 * Slices: the signatures' top SLICE_BITS bits cut a segment into SLICES
 * slices, SLICES_PER_PART to a part of Z. A flush sorts and merges a
 * part's slices one after the other, in ascending order, in the part's
 * share of the flush's array (slice_cap slots), continuing one merge with
 * the part's Z: so a segment holds up to SLICES_PER_PART times the array's
 * slots (seg_cap), and Z, read and rewritten once a flush, is rewritten
 * SLICES_PER_PART times less often. A slice fills before the others by
 * chance only; a segment is sealed when any slice is full.
 *
 * Z, the sorted distinct signatures, is kept in Z_PARTS files by the
 * signatures' top Z_PART_BITS bits, Z.<gen>.<j> (part j), so that a flush
 * merges the parts in parallel, each with the same part of the flush's
 * array (S is partitioned by top bits already). A part's file: 48-byte
 * header {magic "MSIEVEZ4", u64 count, u32 L, u32 block (1024), u64
 * payload_len, u64 XXH3(payload), u32 part j, u32 Z_PARTS} then its
 * payload (zcodec.h), the signatures less the part's first possible one
 * (j << (64 - Z_PART_BITS)).
 *
 * A flush (merc_flush_segment): a thread per part of Z (merc_part_merge),
 * for each of the part's slices: load the slice's signatures from S (or A)
 * into the part's share of the flush's array in the bucketed layout
 * (flush_sort.h); sort its buckets in place, merge its distinct signatures
 * into the merge of the part of Z into Z.tmp.<j>, a block of Z decoded and
 * a block of Z' encoded at a time, marking the position of the first
 * record of each signature not in Z (resolving the late ones with a scan
 * of A: rare); then (with EMITTED) scan A appending the marked records to
 * EMITTED; commit (rename the Z.tmp.<j>, MANIFEST); scan A and emit the
 * marked records. The previous Z's parts are renamed to Z.tmp.<j> and
 * overwritten by the next flush (cheaper than new files).
 *
 * Locks: base.mu guards the segments, the cache, counters and the error;
 * mmu guards the committed state and MANIFEST writes. Order: mu before
 * mmu.
 */
#ifndef SIEVE_MERCATOR_H
#define SIEVE_MERCATOR_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sieve/flush_sort.h"
#include "sieve/segment.h"
#include "sieve/sieve_base.h"
#include "sieve/zcodec.h"

#define Z_MAGIC "MSIEVEZ4"
#define M_MAGIC "MSIEVEM3"
#define Z_PART_BITS                                                                                \
	1 /* Z is in 2^Z_PART_BITS parts by the signatures' top bits, merged in parallel */
#define Z_PARTS (1u << Z_PART_BITS)
#define SLICES_PER_PART (SLICES / Z_PARTS)
#define Z_HDR 48
#define M_SIZE 72
#define SEAL_Z_RATIO 2 /* an early seal hands over at least |Z| / SEAL_Z_RATIO records */
#define SEAL_MIN_DEFAULT ((size_t)1 << 18) /* and at least this many (cfg->seal_min_urls = 0) */

_Static_assert(SLICE_BITS >= Z_PART_BITS && SLICE_BITS <= 8,
               "slices subdivide the parts; a slice is whole buckets");

/* A segment being filled or flushed: its URLs are in A.<id>; their
 * signatures are also listed, in the same order, slice by slice, in its S
 * files. */
struct segment {
	size_t n; /* records */
	uint64_t id;
	int a_fd;      /* A.<id> */
	uint64_t mask; /* the mask of A.<id>'s records (seg_mask) */
	struct s_files s;
	uint32_t s_count[SLICES]; /* records per slice */
	uint32_t *top;            /* records per bucket (top pbits of the signature): 2^pbits */
};

/* The committed state (MANIFEST). */
struct mstate {
	uint64_t gen, z_count, z_bytes, first_seg, log_len, sync_seg, sync_len;
};

/* A part's merge buffers. */
struct part_bufs {
	uint8_t *zin, *zout;     /* Z's reader, Z''s writer (and the sort's scratch before) */
	uint64_t zvals[Z_BLOCK]; /* the block of Z being merged */
	uint64_t ovals[Z_BLOCK]; /* the block of Z' being filled */
};

struct merc {
	struct sieve_base base; /* mu, err, msg, st: see "Locks" */
	/* most records of a slice in a segment: a part thread's share of the
	 * flush's array */
	size_t slice_cap;
	/* most records of a segment (SLICES slices, the flush's array Z_PARTS slices) */
	size_t seg_cap;
	size_t io; /* bytes per I/O buffer */

	pthread_cond_t cv_work, cv_free, cv_done;
	pthread_t thr;
	bool thr_started, stop;
	struct segment segs[2];
	int cur, pending;
	bool sealing;                   /* a thread is in seal_locked */
	uint64_t next_seg, sealed_upto; /* sealed_upto: 1 + last sealed segment */
	uint64_t done_upto;             /* 1 + last segment flushed AND emitted */
	uint64_t z_known;               /* Z's signatures after the last flush (for seal_early) */
	size_t seal_min;                /* fewest records an early seal hands over (seal_early) */
	uint8_t *a_wbuf;                /* A's write buffer */
	size_t a_wlen;
	struct s_writer s_w; /* S's write buffers */
	uint64_t cur_len;    /* bytes in the current segment (buffered ones too) */
	uint64_t *cache;     /* recent signatures, direct-mapped */
	uint64_t cache_mask;

	pthread_mutex_t mmu;
	struct mstate ms;

	/* the flush thread's work memory */
	unsigned pbits; /* bucket bits of the layout (flush_sort.h) */
	/* the flush's array, Z_PARTS * slice_cap keys: a slice of each part at a
	 * time, in the bucketed layout; then its late fresh signatures at its front */
	uint64_t *keys;
	uint32_t *bstart; /* 2^pbits + 1: where each bucket starts in the segment's layout */
	uint32_t *bnext;  /* 2^pbits: per bucket, the next position (the loads, then the scans) */
	uint64_t *marks;  /* a bit per position of the segment's layout: emit that record */
	uint64_t *late_used; /* per part, slice_cap bits: a slice's late fresh signatures met */
	uint8_t *scan_buf;   /* the scans of A */
	uint8_t *log_buf;    /* EMITTED's write buffer */
	struct part_bufs pb[Z_PARTS];
};

/* A part of Z as its header describes it. */
struct zhead {
	int fd;                     /* open at the payload, or -1 (no Z yet) */
	uint64_t count, plen, psum; /* signatures, payload bytes, XXH3 of the payload */
	unsigned lbits;
};

/* A part of a flush: the slices j * SLICES_PER_PART .. (j + 1) *
 * SLICES_PER_PART - 1 of the segment (the signatures whose top
 * Z_PART_BITS bits are j) against part j of Z, into Z.tmp.<j>. Run by its
 * own thread (the parts share nothing but the marks, whose words at the
 * edges of a part's positions they set with an atomic OR, and bnext, whose
 * buckets they split). */
struct zpart {
	struct merc *m;
	const struct segment *sg;
	const char *ap; /* A.<seg>'s path (the slices' loads from A, the late ones) */
	unsigned j;
	uint64_t gen;     /* Z's generation */
	struct zhead in;  /* part j of Z (fd owned by the flush) */
	uint64_t *region; /* the part's share of the array: slice_cap keys */
	uint64_t *used;   /* slice_cap bits: the late fresh signatures met */
	size_t wlo, whi;  /* the edge words of the part's marks */
	/* results */
	int rc;
	char msg[512];
	uint64_t distinct, fresh, ocount, obytes;
	pthread_t thr;
};

/* mercator_merge.c */
void *merc_part_merge(void *zpart);
/* Loads slice r's keys into zp->region from S.<seg>.<r>, if the file
 * holds exactly the slice's signatures and its XXH3 is the one the adds
 * computed: 0, or -1 (then A is read instead). buf: cap bytes of scratch. */
int merc_slice_load_s(struct zpart *zp, unsigned r, uint8_t *buf, size_t cap);

/* mercator_flush.c */
/* Flushes segment sg (from the flush thread, or single-threaded at open). */
int merc_flush_segment(struct merc *m, const struct segment *sg);
/* Opens every part of Z.<gen> (fd -1 when gen is 0), checking their
 * headers and their totals against the manifest's. */
int merc_z_open_all(struct merc *m, const struct mstate *s, struct zhead *zh);
void merc_z_close_all(struct zhead *zh);
/* Replaces MANIFEST atomically. 0, or -1 with errno set. */
int merc_manifest_write(struct merc *m, const struct mstate *s);
/* 0 = read, 1 = absent (fresh folder), -1 = corrupt, -2 = I/O error. */
int merc_manifest_read(const char *dir, struct mstate *s);

/* The path of part j of Z.<gen>, or of Z.tmp.<j> when tmp. 0 or -1. */
int merc_z_path(const struct merc *m, char *out, size_t len, uint64_t gen, unsigned j, bool tmp);

#endif
