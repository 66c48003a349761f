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
 * slots (seg_cap), and Z, read once a flush, is read SLICES_PER_PART
 * times less often. A slice fills before the others by
 * chance only; a segment is sealed when any slice is full.
 *
 * Z, the sorted distinct signatures, is kept in runs: sorted sets, disjoint,
 * each written by one flush (its generation g) and never modified. A run
 * is Z_PARTS files by the signatures' top Z_PART_BITS bits, Z.<g>.<j>
 * (part j), so that a flush merges the parts in parallel, each with the
 * same part of the flush's array (S is partitioned by top bits already).
 * A part's file: 48-byte header {magic "MSIEVEZ4", u64 count, u32 L, u32
 * block (1024), u64 payload_len, u64 XXH3(payload), u32 part j, u32
 * Z_PARTS} then its payload (zcodec.h), the signatures less the part's
 * first possible one (j << (64 - Z_PART_BITS)). MANIFEST lists the runs,
 * oldest first. A flush reads every run (a signature is fresh when no run
 * holds it) and writes one new run: the fresh signatures and those of the
 * newest runs it merges in, as many as the binary counter's rule takes
 * (merc_runs_to_merge: a run at most as large as what the new one holds so
 * far, or the run count would pass Z_RUNS_MAX). So a flush writes little
 * but its fresh signatures while Z is rewritten a logarithmic number of
 * times in all (rewriting Z whole at every flush would make the writes
 * quadratic, and each flush's fsync as large as Z), and the runs stay few
 * (log2 of the flushes); the reads stay linear in Z.
 *
 * A flush (merc_flush_segment): a thread per part of Z (merc_part_merge),
 * for each of the part's slices: load the slice's signatures from S (or A)
 * into the part's share of the flush's array in the bucketed layout
 * (flush_sort.h); sort its buckets in place, merge its distinct signatures
 * with the part's runs, a block of each run decoded and a block of the new
 * run encoded at a time, into Z.tmp.<j>, marking the position of the first
 * record of each signature in no run (resolving the late ones with a scan
 * of A: rare); then (with EMITTED) scan A appending the marked records to
 * EMITTED; commit (rename the Z.tmp.<j> to the new run's files, MANIFEST,
 * remove the merged runs); scan A and emit the marked records.
 *
 * Segment files: a large budget's are removed once flushed. The kernel
 * writes back to the disk a file dirty for long (30 s) and dirty pages
 * past its background threshold (10% of the memory), so URL segments that
 * live a few seconds in new files, each at most A_CAP_BUDGETS times the
 * budget (a_cap), mostly never reach the disk; a file written over and
 * over would. A small budget's (twice it at most A_CAP_MIN) become the
 * spares the next segment writes over, which costs half the system time
 * of filling new files, and the little they hold is written back at most
 * every 30 s.
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
#define M_MAGIC "MSIEVEM4"
#define M_MAGIC_ONE_RUN "MSIEVEM3" /* read: the manifest of a Z in one run */
#define Z_PART_BITS                                                                                \
	1 /* Z is in 2^Z_PART_BITS parts by the signatures' top bits, merged in parallel */
#define Z_PARTS (1u << Z_PART_BITS)
#define SLICES_PER_PART (SLICES / Z_PARTS)
#define Z_HDR 48
#define Z_RUNS_MAX 8 /* runs in Z at most */
#define M_SIZE (80 + 8 * Z_RUNS_MAX)
#define M_SIZE_ONE_RUN 72
/* an early seal hands over at least |Z| / SEAL_Z_RATIO records (a flush
 * reads Z, ~5 ns a signature, and handles its records, ~50 ns each) */
#define SEAL_Z_RATIO 8
#define CACHE_WAYS 8 /* signatures per line of the recent-signature cache: 64 bytes */
/* a segment's URL file is cut at this many times the budget, or A_CAP_MIN
 * (a small budget's segments are bounded by its slots well below that) */
#define A_CAP_BUDGETS 2
#define A_CAP_MIN ((uint64_t)256 << 20)
/* a segment's records at most: its URL file's cut / SEG_RECORD_MIN (URLs
 * of 52 bytes on average fill it) */
#define SEG_RECORD_MIN 64
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
	unsigned nruns;
	uint64_t runs[Z_RUNS_MAX]; /* the runs' generations, oldest first */
};

/* A part's merge buffers. */
struct part_bufs {
	uint8_t *zin[Z_RUNS_MAX]; /* the runs' readers */
	uint8_t *zout;            /* the new run's writer (and the sort's scratch before) */
	uint64_t zvals[Z_RUNS_MAX][Z_BLOCK]; /* the block of each run being merged */
	uint64_t ovals[Z_BLOCK];             /* the block of the new run being filled */
};

struct merc {
	struct sieve_base base; /* mu, err, msg, st: see "Locks" */
	/* most records of a slice in a segment: a part thread's share of the
	 * flush's array */
	size_t slice_cap;
	/* most records of a segment (SLICES slices, the flush's array Z_PARTS slices) */
	size_t seg_cap;
	size_t io;      /* bytes per I/O buffer */
	size_t zr_io;   /* bytes per reader of a run */
	uint64_t a_cap; /* a segment's URL file is sealed past this many bytes */
	bool recycle;   /* a flushed segment's files become the spares (seg_done) */

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
	uint64_t *cache;     /* recent signatures, CACHE_WAYS a line (cache_seen) */
	uint64_t cache_mask; /* of a line's number */

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

/* A part of a run of Z as its header describes it. */
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
	unsigned nruns, nmerge;      /* Z's runs; the newest nmerge go into the new one */
	const uint64_t *runs;        /* their generations */
	struct zhead in[Z_RUNS_MAX]; /* part j of each run (fds owned by the flush) */
	uint64_t *region;            /* the part's share of the array: slice_cap keys */
	uint64_t *used;              /* slice_cap bits: the late fresh signatures met */
	size_t wlo, whi;             /* the edge words of the part's marks */
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
/* Opens every part of every run of Z, zh[run * Z_PARTS + part], checking
 * their headers and their totals against the manifest's. */
int merc_z_open_all(struct merc *m, const struct mstate *s, struct zhead *zh);
void merc_z_close_all(struct zhead *zh);
/* How many of the newest of the nruns runs (their sizes count[], oldest
 * first) a flush of n records merges into its new run. */
unsigned merc_runs_to_merge(const uint64_t *count, unsigned nruns, uint64_t n);
/* Replaces MANIFEST atomically. 0, or -1 with errno set. */
int merc_manifest_write(struct merc *m, const struct mstate *s);
/* 0 = read, 1 = absent (fresh folder), -1 = corrupt, -2 = I/O error. */
int merc_manifest_read(const char *dir, struct mstate *s);

/* The path of part j of Z.<gen>, or of Z.tmp.<j> when tmp. 0 or -1. */
int merc_z_path(const struct merc *m, char *out, size_t len, uint64_t gen, unsigned j, bool tmp);

#endif
