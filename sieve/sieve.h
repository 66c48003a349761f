/*
 * sieve.h: the URL sieve. Every URL added is emitted at most once, ever
 * (across flushes, close/reopen and crashes); every URL never seen before is
 * emitted, in order of first appearance. Identity is the XXH3 64-bit hash of
 * the bytes given (the caller normalizes); two URLs with the same signature
 * are the same URL (probability ~n^2/2^65).
 *
 * One interface, several implementations behind a table of operations
 * (struct sieve_ops), selected by name in the configuration. Built now:
 * "mercator" (the default), the Mercator sieve of the course notes:
 *   - an array S of n signatures (the flush's, in memory; the adds list
 *     them in a file beside A) and an append-only file A of the URLs
 *     (records: u32 length, u64 XXH3 of the bytes XOR a mask of the
 *     segment, the bytes: the XXH3 is both the record's checksum and the
 *     URL's signature);
 *   - when S is full it is flushed, as in the notes: S is sorted stably
 *     and indirectly, the (signature, index) pairs packed in 8 bytes a slot
 *     (S is partitioned by the signatures' top bits, A's order kept inside
 *     a part, and a record's rank in its part packed below its signature:
 *     a part's sort then brings equal signatures together, first
 *     occurrence first, each knowing its index); the repeats after the
 *     first occurrence are skipped, the distinct signatures are merged
 *     sequentially with the sorted signature file Z into Z', and the index
 *     of the first occurrence of each signature not in Z is marked; A is
 *     scanned in order with S's index recounted from the records'
 *     signatures, and the marked URLs are emitted; Z' replaces Z; S and A
 *     are emptied.
 *   - beyond the notes: two segments (A/S and A2/S2): a background flush
 *     thread flushes one while adds fill the other, adds wait only when both
 *     are full; a segment goes to the flush thread before it is full when
 *     that thread is idle and the segment holds at least
 *     cfg->seal_min_urls URLs and an eighth as many as Z (a large budget's
 *     flushes then overlap the adds instead of running after them, and
 *     the reads of Z stay linear in the URLs); Z is stored Elias-Fano
 *     coded in blocks of 1024 (~log2(2^64/|Z|)+2 bits per signature, low
 *     parts in whole bytes), decoded, merged and encoded a block at a
 *     time, in two files by the signatures' top bit that two threads merge
 *     in parallel, and in runs (sorted sets written by one flush each, at
 *     most 8): a flush reads them all, and writes one new run of its fresh
 *     signatures and of the newest runs no larger than that (a binary
 *     counter: each signature is rewritten ~log2(flushes) times, not once
 *     a flush); the adds write signatures to files S beside A instead of
 *     memory, one per slice of the signatures (top 3 bits), and a flush
 *     sorts and merges a segment a slice at a time, each part's slices in
 *     turn in its half of the array, continuing one merge with the part of
 *     Z: so a segment holds 4 times the array's slots; a segment's A file
 *     is cut at twice the budget (256 MiB at least) and removed once
 *     flushed, so that it mostly lives and dies in the page cache, never
 *     written to the disk; a cache of recent signatures (8-way, LRU in a
 *     64-byte line) drops the common repeats before they take a slot in
 *     S; forced (waitable) flushes.
 *
 * Also built, same contract unless said (selected by cfg->impl; the course
 * notes' sections 2.1-2.4; files sieve/memory.c, bloom.c, lsm.c, offline.c):
 *   - "memory": an open-addressing (linear probing) set of XXH3-64 signatures
 *     that doubles at 70% load: memory grows with the crawl. A URL is
 *     emitted inside the add that first sees it. The set is snapshotted to
 *     MEMSET at sieve_sync and sieve_close and loaded at open; URLs emitted
 *     after the last snapshot are emitted again after a crash if re-added.
 *   - "bloom": a Bloom filter of m bits and d = round(m ln2 / n) hashes,
 *     sized from cfg->expected_urls and cfg->fp_rate, or from cfg->memory;
 *     the d positions come from one XXH3-128 hash by Kirsch-Mitzenmacher
 *     double hashing (a + i b); cfg->bloom_blocked keeps all d bits of a URL
 *     in one 512-bit block (one cache line). False positives DROP new URLs
 *     (no exactly-once guarantee for new URLs: at most once, never twice);
 *     the stats report fill and the estimated FP rate, and it warns once on
 *     stderr when that passes the target. Snapshotted like "memory" (BLOOM);
 *     a reopened filter keeps its stored size.
 *   - "lsm": RocksDB (an LSM tree; folder cfg->dir/rocksdb): check-and-insert
 *     of the 8-byte signature, a Bloom filter per table, memory bounded by
 *     the block cache and the write buffers (from cfg->memory). A URL is
 *     emitted inside the add that first sees it, after its key is written
 *     (WAL); sieve_sync syncs the WAL. Never twice across process crashes;
 *     after a machine crash, URLs added since the last sync may recur.
 *   - "offline": the offline sieve of 2.4: URLs are appended to a file A
 *     (records as Mercator's); every r URLs the (signature, position) pairs
 *     are sorted and written as a run file R.<k>; when A holds a set number
 *     of runs (or at sieve_flush/close) the runs are merged (first position
 *     kept per signature) against the sorted signature file Z into Z', the
 *     positions of signatures not in Z are marked in a bitmap, STATE
 *     commits Z', and A is scanned in order emitting the marked URLs (the
 *     discovery order restored). A left by a crash is merged again at open;
 *     its URLs already committed to Z are not emitted twice (a crash between
 *     a commit and the end of its emissions loses those deliveries, not the
 *     URLs, as in Mercator without emit_log).
 * Only "mercator" keeps EMITTED (cfg->emit_log is ignored by the others and
 * sieve_log_read reads Mercator folders only). In "memory", "bloom" and
 * "lsm" the emit callback runs inside sieve_add / sieve_add_batch on the
 * caller's thread; in "offline" inside add (when A fills), flush and close;
 * always under the sieve's lock, so never concurrently with itself.
 * In "memory", "bloom" and "lsm" every call of sieve_add, sieve_add_batch
 * and sieve_flush counts as one flush in the stats (each completes the
 * processing of everything added before it), so rules of the form "added
 * when F flushes had completed, processed by F + 2" hold for every sieve.
 *
 * Workload: adds outnumber flushes 10^5..10^6 to 1; an add is a hash, a
 * cache probe, a memcpy into A's write buffer and a store into S. A flush
 * costs O(n) for the sort plus one sequential read of Z and write of Z'.
 *
 * Memory: `memory` bytes in the configuration bound the flush's array S,
 * its bucket counts and bitmaps, the cache and all I/O buffers (the heap,
 * not the page cache: the S and A files live there). The cache takes 1/16
 * and the array the rest (4 records a slot of 8.6 bytes), but for a budget
 * past 128 MiB, whose array needs slots for at most one record per 32
 * bytes of the budget (a segment's A file is cut at twice the budget): the
 * cache takes what the array does not need. Disk: a segment's A file is
 * cut at twice the budget or 256 MiB; two exist at once (filling,
 * flushing); Z ~5 bytes per distinct URL.
 *
 * Files in the sieve folder (cfg->dir): MANIFEST (the committed state,
 * replaced atomically: write, fsync, rename, fsync folder, naming Z's
 * runs), Z.<g>.0 and Z.<g>.1 (the run written by the flush of generation
 * g, in two parts), A.<seg> (URL segments not yet flushed), S.<seg>.<r>
 * (their signatures of slice r: a cache, rebuilt from A) and, when
 * cfg->emit_log is set, EMITTED (the durable output log).
 *
 * Crash safety and the delivery contract ("never twice"):
 *   - A flush commits by replacing MANIFEST (new generation, Z's runs, the
 *     first A segment not yet flushed, EMITTED's committed length). The new
 *     run and EMITTED's new records are fsynced before that rename.
 *   - The emit callback is called for a flush's URLs only AFTER the flush
 *     has committed. So a URL is never delivered twice, even across crashes.
 *     A crash between the commit and the end of the callbacks loses those
 *     deliveries to the callback, not the URLs: with emit_log they are in
 *     EMITTED (exactly once, in order); EMITTED is the authoritative,
 *     exactly-once output of a persistent sieve (sieve_log_read reads it).
 *   - Segments of A not yet flushed at a crash are flushed when the folder is
 *     reopened (inside sieve_open, emitting through the callback).
 *   - sieve_sync makes every URL added so far durable: after a crash, the
 *     reopened sieve emits it (or has emitted it) exactly once. URLs added
 *     after the last sync may be lost by a crash (a torn tail of A is cut);
 *     damage before the synced point is reported as corruption.
 *   - A truncated or corrupt Z, A, EMITTED or MANIFEST (bad magic, length,
 *     count or checksum) is reported as SIEVE_ECORRUPT with the file named
 *     in sieve_last_error(); it is never silently used.
 *
 * Threads: sieve_add / sieve_add_batch / sieve_sync / sieve_flush are safe
 * from several threads at once. The emit callback runs on the sieve's flush
 * thread (or inside sieve_open / sieve_close / sieve_flush for replays), is
 * never called concurrently with itself, and must not call back into the
 * same sieve.
 */
#ifndef SIEVE_SIEVE_H
#define SIEVE_SIEVE_H

#include <stddef.h>
#include <stdint.h>

/* Error codes: 0 is success; values never renumber. */
enum sieve_err {
	SIEVE_OK = 0,
	SIEVE_EINVAL = 1,   /* bad argument or configuration (see last_error) */
	SIEVE_ENOMEM = 2,   /* allocation failed */
	SIEVE_EIO = 3,      /* a read/write/fsync/rename failed (errno in last_error) */
	SIEVE_ECORRUPT = 4, /* a sieve file is truncated or corrupt (named in last_error) */
	SIEVE_ETOOLONG = 5, /* URL longer than cfg->max_url_len: not added */
	SIEVE_ECLOSED = 6,  /* the sieve failed earlier (a flush error); it is unusable */
	SIEVE_ENOTSUP = 7,  /* unknown implementation name, or not supported by it */
	SIEVE_ELOCKED = 8,  /* the folder is in use by another open sieve */
};

/* Called with each emitted URL (bytes not NUL-terminated, borrowed for the
 * duration of the call). Runs on the flush thread; see the header comment. */
typedef void (*sieve_emit_fn)(void *ctx, const char *url, size_t len);

struct sieve_config {
	/* implementation name: NULL or "mercator", "memory", "bloom", "lsm", "offline" */
	const char *impl;
	const char *dir; /* folder of the sieve's files (created if missing); required */
	size_t memory;   /* heap budget in bytes (>= 64 KiB); 0 = 64 MiB */
	/* tests: most URLs in a segment (Mercator: any slice may hold them
	 * all); 0 = derived from memory */
	size_t buffer_urls;
	/* Mercator: fewest URLs a segment is flushed with before it is full; 0 = 262144 */
	size_t seal_min_urls;
	size_t max_url_len; /* longest URL accepted; 0 = 65536 */
	int emit_log;       /* nonzero: keep EMITTED, the durable output log */
	/* nonzero: skip fsyncs (tests, throwaway sieves); crash safety then
	 * holds for process crashes only */
	int no_fsync;
	/* for "bloom" (zero = default): */
	uint64_t expected_urls; /* distinct URLs the filter is sized for; 0 = size from memory */
	double fp_rate;         /* target false-positive rate, in (0, 0.5]; 0 = 0.01 */
	int bloom_blocked; /* nonzero: cache-blocked filter (a URL's bits in one 512-bit block) */
	/* Mercator: called by the thread whose write to a file of dir failed
	 * with ENOSPC, EDQUOT or EIO; return nonzero to retry the write (the
	 * callback waits first: the bytes written so far stay, so nothing is
	 * torn), zero to fail as without it. Called once more with err 0 when
	 * such a write went through. NULL: fail at once. */
	int (*on_write_error)(void *ctx, const char *dir, int err);
	void *write_error_ctx;
};

/* Counters (monotonic since open, except z_* which describe the current Z). */
struct sieve_stats {
	uint64_t added;          /* URLs given to add */
	uint64_t emitted;        /* URLs delivered to the callback */
	uint64_t cache_drops;    /* repeats dropped by the recent-signature cache */
	uint64_t flushes;        /* flushes completed (including forced and replays) */
	uint64_t flush_ns_total; /* wall time spent in flushes */
	uint64_t flush_ns_max;   /* longest flush */
	uint64_t add_waits;      /* adds that waited for a flush (both buffers full) */
	uint64_t z_count;        /* signatures in Z */
	uint64_t z_bytes;        /* Z's size in bytes (header included) */
	uint64_t buffer_urls;    /* most URLs in a segment (Mercator: slices x a part's slots) */
	uint64_t cache_entries;  /* entries of the recent-signature cache */
	/* "bloom" only (zero for the others): */
	uint64_t filter_bits;      /* m, bits in the filter */
	uint64_t filter_hashes;    /* d, bits set and tested per URL */
	uint64_t filter_bits_set;  /* bits now at 1 (fill = filter_bits_set / filter_bits) */
	double filter_fp_estimate; /* estimated false-positive rate now: fill^d */
	double filter_fp_target;   /* the configured target rate */
};

typedef struct sieve sieve_t;

/* The table of operations an implementation provides (sieve_open picks it by
 * cfg->impl). Each function has the contract of the public wrapper below. */
struct sieve_ops {
	const char *name;
	int (*open)(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx, void **impl,
	            char *err, size_t errlen);
	int (*add)(void *impl, const char *url, size_t len);
	int (*add_batch)(void *impl, const char *const *urls, const size_t *lens, size_t n);
	int (*flush)(void *impl);
	int (*sync)(void *impl);
	int (*close)(void *impl);
	void (*stats)(void *impl, struct sieve_stats *out);
	const char *(*last_error)(void *impl);
	int (*checkpoint)(void *impl, const char *dir);
};

/* Opens (creating if needed) the sieve in cfg->dir; cfg is copied (dir too).
 * Replays A segments left by a crash (emitting their new URLs through emit
 * before returning). On success *out owns the sieve: release with
 * sieve_close. On error *out is NULL and, if errbuf is non-NULL, a message
 * naming the file is written there. */
int sieve_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx, sieve_t **out,
               char *errbuf, size_t errlen);

/* Adds one URL (borrowed; copied). May block while both buffers are full.
 * SIEVE_ETOOLONG leaves the sieve usable. */
int sieve_add(sieve_t *s, const char *url, size_t len);

/* Adds n URLs under one lock acquisition; stops at the first error
 * (URLs before it were added). */
int sieve_add_batch(sieve_t *s, const char *const *urls, const size_t *lens, size_t n);

/* Forced flush: when it returns SIEVE_OK every URL added before the call has
 * been processed and its new URLs delivered to the callback. */
int sieve_flush(sieve_t *s);

/* Makes every URL added before the call durable (fsync of A + MANIFEST). */
int sieve_sync(sieve_t *s);

/* Flushes, emits the rest, syncs, joins the flush thread, frees everything.
 * Returns the first error met (the sieve is freed anyway). NULL is a no-op. */
int sieve_close(sieve_t *s);

/* Checkpoint: writes into dir (created; it must not exist or be empty) the
 * sieve's state once every URL added before the call is processed (a
 * forced flush runs first, delivering their new URLs to the callback), so
 * that a sieve opened on a folder restored from dir (sieve_restore) goes on
 * from exactly that state, whatever the live sieve did after. Call it with
 * no add running at the same time. Files never modified once written are
 * hard-linked, appended ones copied up to their state: Mercator links Z and
 * its manifest and copies only the unflushed URL segments (empty after the
 * flush), "lsm" makes a RocksDB checkpoint (links its tables), "memory" and
 * "bloom" link a fresh snapshot, "offline" links Z and its state file.
 * Nothing is left to fsync but dir's own entries (the caller's). */
int sieve_checkpoint(sieve_t *s, const char *dir);

/* Makes dir (a sieve folder, not open) a private copy of the checkpoint
 * ckpt: every file of dir but LOCK is removed, ckpt's files are copied in
 * and fsynced (never linked: ckpt can be restored again). On error err
 * (if non-NULL) names the file. */
int sieve_restore(const char *ckpt, const char *dir, char *err, size_t errlen);

/* Copies the counters into *out. */
void sieve_stats_get(sieve_t *s, struct sieve_stats *out);

/* The last error's message (names the file for I/O and corruption errors);
 * "" if none. Valid until the next call on s. */
const char *sieve_last_error(sieve_t *s);

/* A static description of an error code. */
const char *sieve_strerror(int err);

/* Reads the durable output log (EMITTED) of a closed sieve folder, calling
 * fn for each URL in emission order, up to the committed length. Returns
 * SIEVE_ECORRUPT (message in errbuf) on a damaged log. */
int sieve_log_read(const char *dir, sieve_emit_fn fn, void *ctx, char *errbuf, size_t errlen);

/* The implementation table of the Mercator sieve (for tests and registries). */
extern const struct sieve_ops sieve_mercator_ops;
/* The other implementations (memory.c, bloom.c, lsm.c, offline.c). */
extern const struct sieve_ops sieve_memory_ops;
extern const struct sieve_ops sieve_bloom_ops;
extern const struct sieve_ops sieve_lsm_ops;
extern const struct sieve_ops sieve_offline_ops;

#endif
