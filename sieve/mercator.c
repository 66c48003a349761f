/*
 * mercator.c: the Mercator sieve (see sieve.h for the contract and files).
 *
 * Two segments: `cur` fills (adds append the URL to its A segment file and
 * the signature to its slice's S file), `pending` (if >= 0) is owned by the
 * flush thread. Buffer i's A segment is A.<seg>; segments are flushed in
 * increasing order, so the manifest's first_seg says which are committed.
 *
 * Slices: the signatures' top SLICE_BITS bits cut a segment into SLICES
 * slices, SLICES_PER_PART to a part of Z. A flush sorts and merges a part's
 * slices one after the other, in ascending order, in the part's share of
 * the flush's array (slice_cap slots), continuing one merge with the
 * part's Z: so a segment holds up to SLICES_PER_PART times the array's
 * slots (seg_cap), and Z, read and rewritten once a flush, is rewritten
 * SLICES_PER_PART times less often (the seed's flush per slice: each
 * slice is a Mercator sieve of its own share of the signatures, with A
 * shared). Measured, 50M URLs at a 4 MB cap, 2 runs each: 10.0-13.6 s with
 * one slice a part (97 flushes), 7.0-7.4 s with 2 (52), 4.8-6.1 s with 4
 * (31), 4.3-5.5 s with 8 (22); 4 keeps A's segments (and the marks) half
 * the size of 8's. A slice fills before the others by chance only; a
 * segment is sealed when any slice is full.
 *
 * Z, the sorted distinct signatures, is kept in Z_PARTS files by the
 * signatures' top Z_PART_BITS bits, Z.<gen>.<j> (part j), so that a flush
 * merges the parts in parallel, each with the same part of the flush's
 * array (S is partitioned by top bits already). A part's file: 48-byte
 * header {magic "MSIEVEZ4", u64 count, u32 L, u32 block (1024), u64
 * payload_len, u64 XXH3(payload), u32 part j, u32 Z_PARTS} then its
 * signatures, less the part's first possible one (j << (64 -
 * Z_PART_BITS)), in blocks of 1024, each Elias-Fano coded: the high parts
 * (value >> L) as unary gaps from the previous value's (ones at high part
 * + index, LSB first, counted from the previous block's last), then the L
 * low bits of each as L/8 whole bytes. L is a multiple of 8 chosen for the
 * part's size (z_low_bits): ~log2(2^64/|Z|) + 2 bits per signature,
 * decoded with a ctz per signature and one load per low part (a
 * Golomb-Rice code, tried first, costs a bit-serial decode: ~7 ns a
 * signature against ~3). Folders of earlier builds (MANIFEST "MSIEVEM2")
 * are refused with a clear error.
 *
 * S.<seg>.<r>: the signatures of A.<seg>'s records of slice r in order, 8
 * bytes each, not synced: a cache the flush loads a slice from (checked
 * against a checksum and count kept in memory; the slice is read from A
 * instead when they fail; removed at open, rebuilt by the replay as it
 * reads A). The adds keep no signature in memory, so the flush's single
 * array gets the whole budget's slots.
 *
 * A and EMITTED records: {u32 length, u64 XXH3 of the bytes XOR a mask,
 * the bytes}; the mask is 0 in EMITTED and distinct per segment in A (see
 * rec_next). A flushed segment's A and S files become A.spare and
 * S.spare.<r>, which the next segment renames and writes over (seg_open).
 *
 * A flush (flush_segment): a thread per part of Z (part_merge), for each
 * of the part's slices: load the slice's signatures from S (or A) into
 * the part's share of the flush's array, partitioned by their top bits
 * with each record's rank in its bucket packed below the signature (the
 * bucketed layout, see "the flush's array"); sort its buckets in place,
 * merge its distinct signatures into the merge of the part of Z into
 * Z.tmp.<j>, a block of Z decoded and a block of Z' encoded at a time,
 * marking the position of the first record of each signature not in Z
 * (resolving the late ones with a scan of A: rare); then (with EMITTED)
 * scan A appending the marked records to EMITTED; commit (rename the
 * Z.tmp.<j>, MANIFEST); scan A and emit the marked records. The previous
 * Z's parts are renamed to Z.tmp.<j> and overwritten by the next flush
 * (cheaper than new files).
 *
 * Locks: mu guards the buffers, the cache, counters and the error; mmu guards
 * the committed state and MANIFEST writes. Order: mu before mmu.
 */
#include "sieve/sieve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "sieve/sieve_files.h"

#define Z_MAGIC "MSIEVEZ4"
#define M_MAGIC "MSIEVEM3"
#define M_MAGIC_EARLIER "MSIEVEM2" /* the earlier folders (one Z file, A records without masks): refused */
#define Z_PART_BITS 1    /* Z is in 2^Z_PART_BITS parts by the signatures' top bits, merged in parallel */
#define Z_PARTS (1u << Z_PART_BITS)
#define SLICE_BITS 3     /* a flush sorts and merges a segment in 2^SLICE_BITS slices by the signatures' top bits */
#define SLICES (1u << SLICE_BITS)
#define SLICES_PER_PART (SLICES / Z_PARTS)
#define Z_HDR 48
#define M_SIZE 72
#define REC_HDR 12
#define Z_BLOCK 1024     /* signatures per block of Z */
#define SEAL_Z_RATIO 2   /* an early seal hands over at least |Z| / SEAL_Z_RATIO records (seal_early) */
#define SEAL_MIN_DEFAULT ((size_t)1 << 18) /* and at least this many (cfg->seal_min_urls = 0) */
#define Z_LMAX 56        /* most low bits (a multiple of 8): a low part is one 8-byte load and a mask */
#define Z_SLACK 8        /* bytes past the reader's buffer that a low part's last load may touch */
/* the layout's arrays for 2^p buckets: two histograms, bstart, bnext */
#define LAYOUT_BYTES(p) ((((size_t)4 << (p)) + 1) * sizeof(uint32_t))

_Static_assert(Z_BLOCK * Z_LMAX / 8 + 16 <= 64 << 10, "a block's low parts fit the smallest I/O buffer");
_Static_assert(SLICE_BITS >= Z_PART_BITS && SLICE_BITS <= 8, "slices subdivide the parts; a slice is whole buckets");

/* The slice of signature h: its top SLICE_BITS bits. */
static inline unsigned slice_of(uint64_t h)
{
    return (unsigned)(h >> (64 - SLICE_BITS));
}

/* A segment being filled or flushed: its URLs are in A.<seg>; their
 * signatures are also listed, in the same order, slice by slice: those of
 * slice r in S.<seg>.<r> (a cache the flush loads a slice from, checked by
 * ssum[r]; when it is missing or wrong the flush loads the slice from A). */
struct buf {
    size_t n;                         /* records */
    uint64_t seg;
    int fd;                           /* A.<seg> */
    int sfd[SLICES];                  /* S.<seg>.<r>, while filled (-1 once sealed or failed) */
    bool s_ok[SLICES];                /* S.<seg>.<r> holds all sn[r] signatures of slice r */
    uint64_t mask;                    /* the mask of A.<seg>'s records (seg_mask) */
    uint64_t ssum[SLICES];            /* XXH3 of S.<seg>.<r>'s bytes (set at the seal) */
    uint32_t sn[SLICES];              /* records per slice */
    uint32_t *top;                    /* records per bucket (top pbits of the signature): 2^pbits */
};

/* The committed state (MANIFEST). */
struct mstate {
    uint64_t gen, z_count, z_bytes, first_seg, log_len, sync_seg, sync_len;
    bool earlier; /* read from an MSIEVEM2 manifest (an earlier build's folder) */
};

struct merc {
    char *dir;
    struct sieve_config cfg;
    sieve_emit_fn emit;
    void *emit_ctx;
    size_t slice_cap; /* most records of a slice in a segment: a part thread's share of the flush's array */
    size_t seg_cap;   /* most records of a segment (SLICES slices, the flush's array Z_PARTS slices) */
    size_t io;      /* bytes per I/O buffer */
    int lock_fd;

    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_free, cv_done;
    pthread_t thr;
    bool thr_started, stop;
    struct buf b[2];
    int cur, pending;
    bool sealing;                     /* a thread is in seal_locked (maybe sorting, unlocked) */
    uint64_t next_seg, sealed_upto;   /* sealed_upto: 1 + last sealed segment */
    uint64_t done_upto;               /* 1 + last segment flushed AND emitted */
    uint64_t z_known;                 /* Z's signatures after the last flush (for seal_early) */
    size_t seal_min;                  /* fewest records an early seal hands over (seal_early) */
    uint8_t *abuf;
    size_t alen;
    uint8_t *sbuf;                    /* S.<seg>.<r>'s buffered signatures, at r * scap */
    size_t slen[SLICES], scap;
    XXH3_state_t *sxs[SLICES];        /* XXH3 of S.<seg>.<r> so far */
    uint64_t cur_len;                 /* bytes in the current segment (incl. buffered) */
    uint64_t *cache;
    uint64_t cache_mask;
    int err;
    char msg[512];
    struct sieve_stats st;
    char lastmsg[512];

    pthread_mutex_t mmu;
    struct mstate ms;

    /* flush thread's work memory */
    unsigned pbits;                   /* bucket bits of the layout (see "the flush's array") */
    uint64_t *sig;                    /* Z_PARTS * slice_cap keys: a slice of each part at a time, in the
                                       * bucketed layout; then its late fresh signatures at its front */
    uint32_t *bstart;                 /* 2^pbits + 1: where each bucket starts in the segment's layout */
    uint32_t *bnext;                  /* 2^pbits: per bucket, the next position (the loads, then the scans) */
    uint64_t *marks;                  /* a bit per position of the segment's layout: emit that record */
    uint64_t *late_used;              /* per part, slice_cap bits: a slice's late fresh signatures met */
    uint8_t *rbuf, *lbuf;
    struct zbuf {                     /* a part's merge buffers */
        uint8_t *zin, *zout;          /* Z's reader, Z''s writer (and the sort's scratch before) */
        uint64_t zvals[Z_BLOCK];      /* the block of Z being merged */
        uint64_t ovals[Z_BLOCK];      /* the block of Z' being filled */
    } zb[Z_PARTS];
};

/* ---- test hook: SIEVE_CRASH_POINT=N raises SIGKILL at the Nth crash point ---- */
static long crash_at = -1;
static long crash_n;

static void crash_point(void)
{
    if (crash_at > 0 && __atomic_add_fetch(&crash_n, 1, __ATOMIC_SEQ_CST) == crash_at)
        raise(SIGKILL);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Little-endian 64-bit store and load (one unaligned move each: they are
 * on the codec's hot path). */
static inline void put64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

static inline uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Records an error (the first one sticks as the sieve's fatal error when
 * fatal is set). Caller holds mu or is single-threaded. */
static int fail(struct merc *m, int code, bool fatal, const char *fmt, ...)
{
    va_list ap;
    char tmp[512];

    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(m->msg, tmp, sizeof tmp);
    if (fatal && m->err == 0)
        m->err = code;
    return code;
}

static int path_of(const struct merc *m, char *out, size_t len, const char *name, long long num)
{
    int r;
    if (num >= 0)
        r = snprintf(out, len, "%s/%s.%lld", m->dir, name, num);
    else
        r = snprintf(out, len, "%s/%s", m->dir, name);
    return (r < 0 || (size_t)r >= len) ? -1 : 0;
}

/* The path of segment seg's file NAME.<seg>, or NAME.<seg>.<slice> when
 * slice >= 0 (S's files); with spare set, of the spare NAME.spare or
 * NAME.spare.<slice> instead. 0 or -1 (too long). */
static int seg_path(const struct merc *m, char *out, size_t len, const char *name, uint64_t seg, int slice, bool spare)
{
    char num[32];
    int r;

    if (spare)
        snprintf(num, sizeof num, "spare");
    else
        snprintf(num, sizeof num, "%llu", (unsigned long long)seg);
    if (slice >= 0)
        r = snprintf(out, len, "%s/%s.%s.%d", m->dir, name, num, slice);
    else
        r = snprintf(out, len, "%s/%s.%s", m->dir, name, num);
    return (r < 0 || (size_t)r >= len) ? -1 : 0;
}

/* Opens segment seg's file (seg_path) for writing from its start: the
 * spare (a flushed segment's file) renamed, else a new one. Writing
 * over a file's cached pages costs about half as much as filling new ones,
 * and nobody has to free them (measured: 0.26 against 0.45 s of system
 * time to write, read back and drop 1.2 GB in 60 MB files). The spare's
 * tail past what the segment writes is never taken for records: A's
 * records carry their segment's mask (rec_next), S is read up to its
 * count. */
static int seg_open(struct merc *m, const char *name, uint64_t seg, int slice, char *p, size_t plen)
{
    char spare[4096];
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;

    if (seg_path(m, p, plen, name, seg, slice, false) != 0 || seg_path(m, spare, sizeof spare, name, 0, slice, true) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if (rename(spare, p) != 0)
        flags |= O_TRUNC;
    return open(p, flags, 0644);
}

/* Makes segment seg's flushed file (seg_path) the spare (removes it when
 * that fails). */
static void recycle(const struct merc *m, const char *name, uint64_t seg, int slice)
{
    char p[4096], spare[4096];

    if (seg_path(m, p, sizeof p, name, seg, slice, false) != 0)
        return;
    if (seg_path(m, spare, sizeof spare, name, 0, slice, true) != 0 || rename(p, spare) != 0)
        unlink(p);
}

/* Removes the spare segment files (see seg_open). */
static void spares_remove(struct merc *m)
{
    char p[4096];

    if (seg_path(m, p, sizeof p, "A", 0, -1, true) == 0)
        unlink(p);
    for (int r = 0; r < (int)SLICES; r++)
        if (seg_path(m, p, sizeof p, "S", 0, r, true) == 0)
            unlink(p);
}

/* A write failed with err: 1 to retry it (cfg->on_write_error waited out
 * a full disk), 0 to fail. */
static bool write_retry(const struct merc *m, int err)
{
    if ((err != ENOSPC && err != EDQUOT && err != EIO) || m->cfg.on_write_error == NULL)
        return false;
    bool again = m->cfg.on_write_error(m->cfg.write_error_ctx, m->dir, err) != 0;
    errno = err;
    return again;
}

/* All n bytes, at the file offset (off == UINT64_MAX) or at off; the bytes
 * already written stay written across a retry, so nothing is torn or
 * doubled. */
static int write_at(const struct merc *m, int fd, const void *p, size_t n, uint64_t off)
{
    const uint8_t *c = p;
    bool waited = false;
    while (n > 0) {
        ssize_t w = off == UINT64_MAX ? write(fd, c, n) : pwrite(fd, c, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (write_retry(m, errno)) {
                waited = true;
                continue;
            }
            return -1;
        }
        c += w;
        n -= (size_t)w;
        if (off != UINT64_MAX)
            off += (uint64_t)w;
    }
    if (waited)
        m->cfg.on_write_error(m->cfg.write_error_ctx, m->dir, 0);
    return 0;
}

static int write_all(const struct merc *m, int fd, const void *p, size_t n)
{
    return write_at(m, fd, p, n, UINT64_MAX);
}

static int pwrite_all(const struct merc *m, int fd, const void *p, size_t n, uint64_t off)
{
    return write_at(m, fd, p, n, off);
}

static int do_fsync(const struct merc *m, int fd)
{
    if (m->cfg.no_fsync)
        return 0;
    return fdatasync(fd);
}

static int fsync_dir(const struct merc *m)
{
    int fd, rc;
    if (m->cfg.no_fsync)
        return 0;
    fd = open(m->dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

/* ---------------- buffered reader ---------------- */

struct rd {
    int fd;
    uint8_t *buf;
    size_t cap, pos, len;
    uint64_t off;      /* file offset of buf[pos] */
    bool eof;
};

static void rd_init(struct rd *r, int fd, uint8_t *buf, size_t cap)
{
    r->fd = fd;
    r->buf = buf;
    r->cap = cap;
    r->pos = r->len = 0;
    r->off = 0;
    r->eof = false;
}

/* Makes k contiguous bytes available at buf+pos; returns bytes available
 * (< k at end of file), or -1 on read error. */
static ssize_t rd_need(struct rd *r, size_t k)
{
    if (r->len - r->pos >= k)
        return (ssize_t)(r->len - r->pos);
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    while (r->len < k && !r->eof) {
        ssize_t g = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (g < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (g == 0)
            r->eof = true;
        r->len += (size_t)g;
    }
    return (ssize_t)(r->len - r->pos);
}

/* The mask of segment seg's records (see rec_next): distinct for every
 * segment, never 0 (EMITTED's records have none). */
static inline uint64_t seg_mask(uint64_t seg)
{
    return (seg + 1) * 0x9e3779b97f4a7c15ull;
}

/* Reads the next A/EMITTED record {u32 length, u64 XXH3 of the bytes XOR
 * mask, the bytes}: the XXH3 is both the record's checksum and the URL's
 * signature; the mask (seg_mask for A.<seg>, 0 for EMITTED) makes a record
 * of another segment fail the check, so that the stale tail of a recycled
 * segment file reads as the end of the segment (see seg_start). 1 = got
 * one (*url,*len valid until the next call, *sig its verified signature),
 * 0 = clean end, -1 = torn or corrupt record at r->off, -2 = read error. */
static int rec_next(struct rd *r, size_t maxlen, uint64_t mask, const char **url, size_t *len, uint64_t *sig)
{
    ssize_t have = rd_need(r, REC_HDR);
    uint32_t l;
    uint64_t h;

    if (have < 0)
        return -2;
    if (have == 0)
        return 0;
    if (have < REC_HDR)
        return -1;
    l = get32(r->buf + r->pos);
    h = get64(r->buf + r->pos + 4) ^ mask;
    if (l > maxlen || l + REC_HDR > r->cap)
        return -1;
    have = rd_need(r, REC_HDR + l);
    if (have < 0)
        return -2;
    if ((size_t)have < REC_HDR + l)
        return -1;
    if (XXH3_64bits(r->buf + r->pos + REC_HDR, l) != h)
        return -1;
    *url = (const char *)r->buf + r->pos + REC_HDR;
    *len = l;
    *sig = h;
    r->pos += REC_HDR + l;
    r->off += REC_HDR + l;
    return 1;
}

/* Takes the record at r's position when it lies whole in the buffer and
 * checks (length within maxlen, XXH3 equal to its signature): the fast
 * path of the scans of A. false leaves r as it was: the buffer's end, or
 * damage that rec_next then reads the careful way and reports. */
static inline bool rec_take_whole(struct rd *r, size_t maxlen, uint64_t mask, const char **url, size_t *len,
                                  uint64_t *sig)
{
    size_t avail = r->len - r->pos;
    uint32_t l;
    uint64_t h;

    if (avail < REC_HDR)
        return false;
    l = get32(r->buf + r->pos);
    if (l > maxlen || avail - REC_HDR < l)
        return false;
    h = get64(r->buf + r->pos + 4) ^ mask;
    if (XXH3_64bits(r->buf + r->pos + REC_HDR, l) != h)
        return false;
    *url = (const char *)r->buf + r->pos + REC_HDR;
    *len = l;
    *sig = h;
    r->pos += REC_HDR + l;
    r->off += REC_HDR + l;
    return true;
}

/* The next record of r, as rec_next returns it: the whole-record fast path
 * first, rec_next at the buffer's end (or at damage, to report it). */
static inline int rec_take(struct rd *r, size_t maxlen, uint64_t mask, const char **url, size_t *len, uint64_t *sig)
{
    return rec_take_whole(r, maxlen, mask, url, len, sig) ? 1 : rec_next(r, maxlen, mask, url, len, sig);
}

/* ---------------- Z's codec: Elias-Fano in blocks ---------------- */

/* Low bits per signature for n signatures: the multiple of 8 (whole bytes:
 * a low part is then one store to write and one load and mask to read)
 * that minimizes Elias-Fano's size, n (L + 1) + 2^(64-L) bits (L bits each,
 * one high bit each, 2^(64-L) zeros in all): it lies between
 * log2(2^64/n) - 3 and log2(2^64/n) + 5. At most Z_LMAX. */
static unsigned z_low_bits(uint64_t n)
{
    unsigned best = Z_LMAX;
    double best_bits = 0;

    for (unsigned l = 0; l <= Z_LMAX; l += 8) {
        double bits = (double)n * (l + 1) + ldexp(1.0, 64 - (int)l);
        if (l == 0 || bits < best_bits) {
            best = l;
            best_bits = bits;
        }
    }
    return best;
}

/* Writer of Z': the merge gathers Z''s signatures in blocks (an array of
 * Z_BLOCK, struct merc's ovals) and hands each to zw_block, which encodes
 * it into buf (cap bytes, drained to the file when a block might not fit).
 * Z' ascends strictly when the merge's inputs do (S sorted, Z checked by
 * its reader), so the writer checks only each block's ends. */
struct zw {
    const struct merc *m;
    int fd;
    uint8_t *buf;
    size_t cap, len;
    unsigned L;          /* a multiple of 8, <= Z_LMAX */
    uint64_t hprev;      /* high part of the last signature written */
    uint64_t vprev;      /* the last signature written */
    uint64_t count;      /* signatures written */
    uint64_t total;      /* payload bytes written to the file */
    XXH3_state_t *xs;
    bool ioerr;
    bool unsorted;       /* a block out of order was given (see zw_block) */
};

static void zw_drain(struct zw *w)
{
    if (w->len == 0)
        return;
    if (write_all(w->m, w->fd, w->buf, w->len) != 0)
        w->ioerr = true;
    XXH3_64bits_update(w->xs, w->buf, w->len);
    w->total += w->len;
    w->len = 0;
}

/* Makes room for k more bytes plus 8 (a store's overhang); k + 8 <= cap. */
static uint8_t *zw_room(struct zw *w, size_t k)
{
    if (w->len + k + 8 > w->cap)
        zw_drain(w);
    return w->buf + w->len;
}

/* The high parts of v[0..cnt) when they do not fit half the buffer (gaps
 * of hundreds of thousands of bits: never with hashes): each unary code
 * written bit by bit, zeros a byte at a time, draining as the buffer
 * fills. */
static void zw_high_slow(struct zw *w, const uint64_t *v, size_t cnt)
{
    uint64_t hp = w->hprev;
    unsigned acc = 0, nb = 0; /* bits of the byte being filled */

    for (size_t i = 0; i < cnt; i++) {
        uint64_t h = v[i] >> w->L, z;
        if (h < hp) {
            w->unsorted = true; /* see zw_block */
            h = hp;
        }
        z = h - hp;
        hp = h;
        if (nb + z >= 8) {
            /* finish the byte, whole zero bytes, then the one's byte */
            *zw_room(w, 1) = (uint8_t)acc;
            w->len++;
            z -= 8 - nb;
            while (z >= 8) {
                size_t k = w->cap - 8 - w->len;
                if (k > z / 8)
                    k = (size_t)(z / 8);
                memset(w->buf + w->len, 0, k);
                w->len += k;
                z -= 8 * (uint64_t)k;
                zw_room(w, 1);
            }
            acc = 0;
            nb = 0;
        }
        acc |= 1u << (nb + z);
        nb += (unsigned)z + 1;
        if (nb == 8) {
            *zw_room(w, 1) = (uint8_t)acc;
            w->len++;
            acc = 0;
            nb = 0;
        }
    }
    if (nb > 0) {
        *zw_room(w, 1) = (uint8_t)acc;
        w->len++;
    }
}

/* Encodes the block v[0..cnt): its high parts, then its low parts. A block
 * out of order at its ends (below the previous one, or last < first) is
 * refused (w->unsorted: the flush fails); disorder inside a block, which
 * the merge cannot produce from checked inputs, would be written wrong but
 * never outside buf. */
static void zw_block(struct zw *w, const uint64_t *v, size_t cnt)
{
    const unsigned L = w->L, lb = L / 8;
    const uint64_t hbase = w->hprev;
    uint64_t nbits;

    if (cnt == 0 || w->unsorted)
        return;
    if (v[0] < w->vprev || v[cnt - 1] < v[0]) {
        w->unsorted = true;
        return;
    }
    /* the high parts: a one at (high part - the previous block's last) +
     * index, the gaps in unary, LSB first */
    nbits = (v[cnt - 1] >> L) - hbase + cnt;
    if (nbits / 8 + 16 <= w->cap / 2) {
        size_t hbytes = (size_t)(nbits + 7) / 8, words = (size_t)(nbits + 63) / 64;
        uint8_t *p = zw_room(w, 8 * words);
        uint64_t acc = 0, cw = 0;
        memset(p, 0, 8 * words);
        /* each one ORed into the word being filled, the word stored every
         * time (no branch: a word left behind is complete, one skipped
         * stays zero) */
        for (size_t i = 0; i < cnt; i++) {
            uint64_t pos = (v[i] >> L) - hbase + i, wi = pos >> 6;
            wi = wi < words ? wi : words - 1;
            acc = (wi == cw ? acc : 0) | (uint64_t)1 << (pos & 63);
            cw = wi;
            put64(p + 8 * wi, acc);
        }
        w->len += hbytes;
    } else {
        zw_high_slow(w, v, cnt);
    }
    /* the low parts: lb bytes each, one 8-byte store each (its overhang is
     * overwritten by the next one, or lies past len) */
    if (lb > 0) {
        uint8_t *q = zw_room(w, cnt * lb);
        for (size_t i = 0; i < cnt; i++)
            put64(q + i * lb, v[i]);
        w->len += cnt * lb;
    }
    w->hprev = v[cnt - 1] >> L;
    w->vprev = v[cnt - 1];
    w->count += cnt;
}

static void zw_finish(struct zw *w)
{
    zw_drain(w);
}

/* Reader of Z's payload: a buffer of cap bytes (allocated with Z_SLACK
 * more, so that a low part's last 8-byte load stays inside it); every byte
 * is hashed as it is read, and reading stops at the payload's end. */
struct zr {
    int fd;
    uint8_t *buf;
    size_t cap, pos, len;
    uint64_t left;       /* payload bytes not yet read from the file */
    XXH3_state_t *xs;
    uint64_t vprev;      /* the last signature decoded (when count > 0) */
    uint64_t count;      /* signatures decoded */
    int ioerr;           /* errno of a failed read, or 0 */
    bool bad;
};

/* Makes k <= cap contiguous bytes available at buf+pos; returns how many
 * are (fewer than k only at the payload's end or on a read error). */
static size_t zr_need(struct zr *z, size_t k)
{
    if (z->len - z->pos >= k)
        return z->len - z->pos;
    if (z->pos > 0) {
        memmove(z->buf, z->buf + z->pos, z->len - z->pos);
        z->len -= z->pos;
        z->pos = 0;
    }
    while (z->len < k && z->left > 0) {
        size_t want = z->cap - z->len;
        ssize_t g;
        if (want > z->left)
            want = (size_t)z->left;
        g = read(z->fd, z->buf + z->len, want);
        if (g < 0 && errno == EINTR)
            continue;
        if (g < 0) {
            z->ioerr = errno;
            break;
        }
        if (g == 0)
            break; /* shorter than its header says */
        XXH3_64bits_update(z->xs, z->buf + z->len, (size_t)g);
        z->left -= (uint64_t)g;
        z->len += (size_t)g;
    }
    return z->len - z->pos;
}

/* Decodes one block of cnt signatures into out (*hprev: the high part of
 * the previous block's last one, updated). The high parts: each 64-bit
 * word's ones are taken lowest first (ctz, then clear it); a one at bit t
 * of a word, after k earlier ones of the word, is worth base + t - k, base
 * being the high part a one at the word's bit 0 would have. The low parts:
 * one load and a mask each, independent of each other. The signatures must
 * ascend strictly (Z is a set; the merge and Z's writer rely on the
 * order). false on a damaged, short or out-of-order payload (z->bad). */
static bool zr_block(struct zr *z, unsigned L, uint64_t *hprev, uint64_t *out, size_t cnt)
{
    uint64_t zb = *hprev, hlast;
    size_t j = 0;
    bool down;

    while (j < cnt) {
        size_t a = zr_need(z, 8), nb = a < 8 ? a : 8;
        uint64_t w, base = zb;
        unsigned t = 0;
        if (a == 0) {
            z->bad = true;
            return false;
        }
        w = get64(z->buf + z->pos);
        if (nb < 8)
            w &= ~(uint64_t)0 >> (64 - 8 * nb);
        while (w != 0 && j < cnt) {
            t = (unsigned)__builtin_ctzll(w);
            out[j++] = base + t;
            base--;
            w &= w - 1;
        }
        if (j == cnt) {
            z->pos += t / 8 + 1;
            break;
        }
        zb = base + 8 * nb;
        z->pos += nb;
    }
    hlast = out[cnt - 1];
    if (hlast > ~(uint64_t)0 >> L) {
        z->bad = true;
        return false;
    }
    if (L > 0) {
        const uint64_t mask = ~(uint64_t)0 >> (64 - L);
        const size_t lb = L / 8;
        const uint8_t *p;
        if (zr_need(z, cnt * lb) < cnt * lb) {
            z->bad = true;
            return false;
        }
        p = z->buf + z->pos;
        for (size_t i = 0; i < cnt; i++)
            out[i] = out[i] << L | (get64(p + i * lb) & mask);
        z->pos += cnt * lb;
    }
    down = z->count > 0 && out[0] <= z->vprev;
    for (size_t i = 1; i < cnt; i++)
        down |= out[i] <= out[i - 1];
    if (down) {
        z->bad = true;
        return false;
    }
    z->vprev = out[cnt - 1];
    z->count += cnt;
    *hprev = hlast;
    return true;
}

/* ---------------- manifest ---------------- */

static int manifest_write(struct merc *m, const struct mstate *s)
{
    char tmp[4096], fin[4096];
    uint8_t b[M_SIZE];
    int fd = -1, rc = -1;

    if (path_of(m, tmp, sizeof tmp, "MANIFEST.tmp", -1) || path_of(m, fin, sizeof fin, "MANIFEST", -1))
        return -1;
    memcpy(b, M_MAGIC, 8);
    put64(b + 8, s->gen);
    put64(b + 16, s->z_count);
    put64(b + 24, s->z_bytes);
    put64(b + 32, s->first_seg);
    put64(b + 40, s->log_len);
    put64(b + 48, s->sync_seg);
    put64(b + 56, s->sync_len);
    put64(b + 64, XXH64(b, 64, 0));
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto out;
    if (write_all(m, fd, b, sizeof b) != 0 || do_fsync(m, fd) != 0)
        goto out;
    close(fd);
    fd = -1;
    crash_point();
    if (rename(tmp, fin) != 0)
        goto out;
    crash_point();
    if (fsync_dir(m) != 0)
        goto out;
    rc = 0;
out:
    if (fd >= 0)
        close(fd);
    return rc;
}

/* 0 = read, 1 = absent (fresh folder), -1 = corrupt, -2 = I/O error. */
static int manifest_read(struct merc *m, struct mstate *s)
{
    char fin[4096];
    uint8_t b[M_SIZE + 1];
    int fd;
    ssize_t g;

    if (path_of(m, fin, sizeof fin, "MANIFEST", -1))
        return -2;
    fd = open(fin, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 1 : -2;
    g = read(fd, b, sizeof b);
    close(fd);
    if (g < 0)
        return -2;
    if (g != M_SIZE || (memcmp(b, M_MAGIC, 8) != 0 && memcmp(b, M_MAGIC_EARLIER, 8) != 0) ||
        get64(b + 64) != XXH64(b, 64, 0))
        return -1;
    s->earlier = memcmp(b, M_MAGIC_EARLIER, 8) == 0;
    s->gen = get64(b + 8);
    s->z_count = get64(b + 16);
    s->z_bytes = get64(b + 24);
    s->first_seg = get64(b + 32);
    s->log_len = get64(b + 40);
    s->sync_seg = get64(b + 48);
    s->sync_len = get64(b + 56);
    return 0;
}

/* ---------------- the flush's array ---------------- */

/* A segment's n records have positions in a bucketed layout: the records
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
 * that list and marks the first record of each. */

/* Bucket bits for a buffer of n slots: at least 8, at most 24. */
static unsigned layout_bits(size_t n)
{
    unsigned p = 8;
    while (p < 24 && ((uint64_t)1 << (2 * p)) < 4 * (uint64_t)n)
        p++;
    return p;
}

/* bstart from the histogram top (2^p buckets); the total. */
static uint64_t layout_starts(const uint32_t *top, unsigned p, uint32_t *bstart)
{
    uint64_t sum = 0;
    size_t nb = (size_t)1 << p;

    for (size_t d = 0; d < nb; d++) {
        bstart[d] = (uint32_t)sum;
        sum += top[d];
    }
    bstart[nb] = (uint32_t)(sum <= UINT32_MAX ? sum : UINT32_MAX);
    return sum;
}

/* The next position of signature v's bucket (bnext counts the records met
 * so far, starting at bstart); false when the bucket is already full, i.e.
 * the records do not match the histogram the layout was built from. */
static inline bool layout_next(const uint32_t *bstart, uint32_t *bnext, unsigned p, uint64_t v, uint32_t *pos)
{
    size_t d = (size_t)(v >> (64 - p));
    uint32_t at = bnext[d];

    if (at == bstart[d + 1])
        return false;
    bnext[d] = at + 1;
    *pos = at;
    return true;
}

static void ins_sort(uint64_t *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t v = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* In-place MSD (American flag) radix sort on 8-bit digits from `shift`
 * down. Each pass moves keys between 256 sequential streams (cache
 * friendly); a bucket of at most 32 keys is finished by insertion sort.
 * Not stable, and needs not be: the keys carry their ranks. */
static void msd_sort(uint64_t *a, size_t n, int shift)
{
    size_t cnt[256], head[256], tail[256], sum = 0;

    if (n <= 32) {
        ins_sort(a, n);
        return;
    }
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++)
        cnt[(a[i] >> shift) & 255]++;
    for (int d = 0; d < 256; d++) {
        head[d] = sum;
        sum += cnt[d];
        tail[d] = sum;
    }
    for (int d = 0; d < 256; d++) {
        while (head[d] < tail[d]) {
            uint64_t v = a[head[d]];
            unsigned dd = (unsigned)((v >> shift) & 255);
            while (dd != (unsigned)d) {
                uint64_t t = a[head[dd]];
                a[head[dd]++] = v;
                v = t;
                dd = (unsigned)((v >> shift) & 255);
            }
            a[head[d]++] = v;
        }
    }
    if (shift == 0)
        return;
    sum = 0;
    for (int d = 0; d < 256; d++) {
        if (cnt[d] > 1)
            msd_sort(a + sum, cnt[d], shift >= 8 ? shift - 8 : 0);
        sum += cnt[d];
    }
}

/* Sorts a bucket of the flush's array (n keys, whose bits above the
 * signature's part are alike: uniform below the bucket's bits), with tmp
 * (tmp_cap keys) as scratch: one counting pass on the keys' top w bits
 * (2^(w-1) <= n < 2^w: a key or none per sub-bucket) from tmp back into a,
 * then an insertion sort, which only moves keys inside their sub-buckets;
 * a sub-bucket of more than 32 (many records of one signature) gets the
 * radix sort instead. About 3x faster than msd_sort from the top on the
 * buckets of a few hundred keys the layout makes (4.3 against 12.2 ns a
 * key, 793,000 keys in 2,048 buckets); a bucket larger than tmp is radix
 * sorted in place. */
static void bucket_sort(uint64_t *a, size_t n, uint64_t *tmp, size_t tmp_cap)
{
    uint32_t cnt[((size_t)1 << 12) + 1];
    unsigned w = 1;
    bool big = false;
    size_t nb, from = 0;

    if (n <= 16) {
        ins_sort(a, n);
        return;
    }
    if (n > tmp_cap) {
        msd_sort(a, n, 56);
        return;
    }
    while (w < 12 && ((size_t)1 << w) <= n)
        w++;
    nb = (size_t)1 << w;
    memset(cnt, 0, (nb + 1) * sizeof *cnt);
    memcpy(tmp, a, n * sizeof *a);
    for (size_t i = 0; i < n; i++)
        cnt[(tmp[i] >> (64 - w)) + 1]++;
    for (size_t d = 1; d <= nb; d++) {
        big |= cnt[d] > 32;
        cnt[d] += cnt[d - 1];
    }
    for (size_t i = 0; i < n; i++)
        a[cnt[tmp[i] >> (64 - w)]++] = tmp[i];
    if (!big) {
        ins_sort(a, n);
        return;
    }
    for (size_t d = 0; d < nb; d++) {
        size_t c = cnt[d] - from;
        if (c > 32)
            msd_sort(a + from, c, 56 - (int)w);
        else if (c > 1)
            ins_sort(a + from, c);
        from = cnt[d];
    }
}

/* ---------------- the flush ---------------- */

/* A part of Z as its header describes it. */
struct zhead {
    int fd;                           /* open at the payload, or -1 (no Z yet) */
    uint64_t count, plen, psum;       /* signatures, payload bytes, XXH3 of the payload */
    unsigned lbits;
};

/* Opens part j of Z.<gen> (the file Z.<gen>.<j>) and checks its header;
 * zh->fd = -1 when gen == 0. The caller checks the parts against the
 * manifest's totals (z_open_all). */
static int z_open(struct merc *m, const struct mstate *s, unsigned j, struct zhead *zh)
{
    char p[4096];
    uint8_t h[Z_HDR];
    struct stat sb;

    memset(zh, 0, sizeof *zh);
    zh->fd = -1;
    if (s->gen == 0)
        return SIEVE_OK;
    if (snprintf(p, sizeof p, "%s/Z.%llu.%u", m->dir, (unsigned long long)s->gen, j) >= (int)sizeof p)
        return fail(m, SIEVE_EINVAL, true, "%s: path too long", m->dir);
    zh->fd = open(p, O_RDONLY | O_CLOEXEC);
    if (zh->fd < 0)
        return fail(m, errno == ENOENT ? SIEVE_ECORRUPT : SIEVE_EIO, true, "%s: cannot open: %s", p, strerror(errno));
    if (fstat(zh->fd, &sb) != 0 || pread(zh->fd, h, Z_HDR, 0) != Z_HDR)
        goto bad;
    if (memcmp(h, Z_MAGIC, 8) != 0)
        goto bad;
    zh->count = get64(h + 8);
    zh->lbits = get32(h + 16);
    zh->plen = get64(h + 24);
    zh->psum = get64(h + 32);
    /* each signature takes at least its L low bits and one high bit */
    if (zh->lbits > Z_LMAX || zh->lbits % 8 != 0 || get32(h + 20) != Z_BLOCK || get32(h + 40) != j ||
        get32(h + 44) != Z_PARTS || (uint64_t)sb.st_size != Z_HDR + zh->plen || zh->count > zh->plen * 8 ||
        zh->plen / (zh->lbits + 1) < zh->count / 8)
        goto bad;
    if (lseek(zh->fd, Z_HDR, SEEK_SET) != Z_HDR)
        goto bad;
    return SIEVE_OK;
bad:
    close(zh->fd);
    zh->fd = -1;
    return fail(m, SIEVE_ECORRUPT, true, "%s: truncated or corrupt signature file (bad header or size)", p);
}

static void z_close_all(struct zhead *zh)
{
    for (unsigned j = 0; j < Z_PARTS; j++) {
        if (zh[j].fd >= 0)
            close(zh[j].fd);
        zh[j].fd = -1;
    }
}

/* Opens every part of Z.<gen>: their counts and sizes must add up to the
 * manifest's (a part of another generation would not). */
static int z_open_all(struct merc *m, const struct mstate *s, struct zhead *zh)
{
    uint64_t count = 0, bytes = 0;
    int rc = SIEVE_OK;

    for (unsigned j = 0; j < Z_PARTS; j++)
        zh[j].fd = -1;
    for (unsigned j = 0; j < Z_PARTS && rc == SIEVE_OK; j++) {
        rc = z_open(m, s, j, &zh[j]);
        count += zh[j].count;
        bytes += zh[j].fd >= 0 ? Z_HDR + zh[j].plen : 0;
    }
    if (rc == SIEVE_OK && s->gen > 0 && (count != s->z_count || bytes != s->z_bytes))
        rc = fail(m, SIEVE_ECORRUPT, true,
                  "%s/Z.%llu.*: signature file parts hold %llu signatures in %llu bytes, the manifest says %llu in %llu",
                  m->dir, (unsigned long long)s->gen, (unsigned long long)count, (unsigned long long)bytes,
                  (unsigned long long)s->z_count, (unsigned long long)s->z_bytes);
    if (rc != SIEVE_OK)
        z_close_all(zh);
    return rc;
}

/* Reads the next block of Z (Z_BLOCK signatures, fewer for the last)
 * into v; its count, 0 at Z's end or at damage (then zr's bad or ioerr
 * says which). zleft: signatures of Z not yet read. */
static size_t z_next_block(struct zr *in, unsigned lbits, uint64_t *hprev, uint64_t *zleft, uint64_t *v)
{
    size_t c = *zleft < Z_BLOCK ? (size_t)*zleft : Z_BLOCK;

    if (c == 0 || !zr_block(in, lbits, hprev, v, c))
        return 0;
    *zleft -= c;
    return c;
}

/* Appends the run v[0..cnt) to the block of Z' being gathered in ov (on
 * values in it) and encodes every block it completes; returns the new
 * count. Most of a merge is such runs of Z between two of S's signatures:
 * a copy, or none when a whole block of the run can be encoded where it
 * is. */
static size_t z_put_run(struct zw *w, uint64_t *ov, size_t on, const uint64_t *v, size_t cnt)
{
    while (cnt > 0) {
        size_t k;
        if (on == 0 && cnt >= Z_BLOCK) {
            zw_block(w, v, Z_BLOCK);
            v += Z_BLOCK;
            cnt -= Z_BLOCK;
            continue;
        }
        k = Z_BLOCK - on < cnt ? Z_BLOCK - on : cnt;
        memcpy(ov + on, v, k * sizeof *v);
        on += k;
        v += k;
        cnt -= k;
        if (on == Z_BLOCK) {
            zw_block(w, ov, on);
            on = 0;
        }
    }
    return on;
}

/* Scans the n records of A.<seg> (afd, named ap) in order and emits the
 * marked ones: each record's signature gives its bucket, the bucket's
 * count of records so far its position in the segment's layout, and that
 * position's mark says whether it is the first record of a fresh
 * signature (the merge set the marks, and resolved the late ones: see
 * slice_late). Picked URLs go to EMITTED (lfd >= 0, appended at
 * *log_len) or to the emit callback (lfd < 0). */
static int a_scan(struct merc *m, int afd, const char *ap, uint64_t mask, size_t n, int lfd, uint64_t *log_len,
                  uint64_t *emitted)
{
    const unsigned p = m->pbits;
    const uint32_t *bstart = m->bstart;
    uint32_t *bnext = m->bnext;
    const uint64_t *marks = m->marks;
    struct rd r;
    size_t idx = 0, lb = 0;
    int g = 1;

    if (lseek(afd, 0, SEEK_SET) != 0)
        return fail(m, SIEVE_EIO, true, "%s: %s", ap, strerror(errno));
    memcpy(bnext, bstart, ((size_t)1 << p) * sizeof *bnext);
    rd_init(&r, afd, m->rbuf, m->io);
    while (idx < n) {
        const char *u;
        size_t ul;
        uint64_t sig;
        uint32_t pos;

        g = rec_take(&r, m->cfg.max_url_len, mask, &u, &ul, &sig);
        if (g != 1)
            break;
        if (!layout_next(bstart, bnext, p, sig, &pos)) {
            g = -1; /* more records of a bucket than its signatures counted */
            break;
        }
        idx++;
        if (!(marks[pos / 64] >> (pos % 64) & 1))
            continue;
        if (lfd >= 0) {
            if (lb + REC_HDR + ul > m->io) {
                if (pwrite_all(m, lfd, m->lbuf, lb, *log_len) != 0)
                    return fail(m, SIEVE_EIO, true, "%s/EMITTED: write failed: %s", m->dir, strerror(errno));
                *log_len += lb;
                lb = 0;
            }
            put32(m->lbuf + lb, (uint32_t)ul);
            put64(m->lbuf + lb + 4, sig);
            memcpy(m->lbuf + lb + REC_HDR, u, ul);
            lb += REC_HDR + ul;
        } else {
            if (m->emit != NULL)
                m->emit(m->emit_ctx, u, ul);
            (*emitted)++;
            crash_point();
        }
    }
    if (g == -2)
        return fail(m, SIEVE_EIO, true, "%s: read failed: %s", ap, strerror(errno));
    if (lfd >= 0) {
        if (pwrite_all(m, lfd, m->lbuf, lb, *log_len) != 0)
            return fail(m, SIEVE_EIO, true, "%s/EMITTED: write failed: %s", m->dir, strerror(errno));
        *log_len += lb;
    }
    if (idx != n)
        return fail(m, SIEVE_ECORRUPT, true, "%s: truncated or corrupt URL segment (%zu of %zu records)", ap, idx, n);
    return SIEVE_OK;
}

/* A part of a flush: the slices j * SLICES_PER_PART .. (j + 1) *
 * SLICES_PER_PART - 1 of the segment (the signatures whose top
 * Z_PART_BITS bits are j), one after the other in the part's share of the
 * flush's array, against part j of Z, into Z.tmp.<j>. Run by its own
 * thread (the parts share nothing but the marks, whose words at the edges
 * of a part's positions they set with an atomic OR, and bnext, whose
 * buckets they split). Values are merged and coded relative to the part's
 * base (its first signature), so that a part's codes start at 0. */
struct zpart {
    struct merc *m;
    const struct buf *b;
    const char *ap;                   /* A.<seg>'s path (the slices' loads from A, the late ones) */
    unsigned j;
    uint64_t gen;                     /* Z's generation */
    struct zhead in;                  /* part j of Z (fd owned by the flush) */
    uint64_t *region;                 /* the part's share of the array: slice_cap keys */
    uint64_t *used;                   /* slice_cap bits: the late fresh signatures met */
    size_t wlo, whi;                  /* the edge words of the part's marks */
    /* results */
    int rc;
    char msg[512];
    uint64_t distinct, fresh, ocount, obytes;
    pthread_t thr;
};

static int part_fail(struct zpart *zp, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(zp->msg, sizeof zp->msg, fmt, ap);
    va_end(ap);
    zp->rc = code;
    return code;
}

/* The buckets of slice r: d0 .. d1 - 1. */
static inline void slice_buckets(const struct merc *m, unsigned r, size_t *d0, size_t *d1)
{
    *d0 = (size_t)r << (m->pbits - SLICE_BITS);
    *d1 = (size_t)(r + 1) << (m->pbits - SLICE_BITS);
}

/* The position of slice r's first record in the segment's layout. */
static inline uint32_t slice_base(const struct merc *m, unsigned r)
{
    size_t d0, d1;

    slice_buckets(m, r, &d0, &d1);
    return m->bstart[d0];
}

/* Places signature v, the next record of its bucket, in a slice's part of
 * the layout: region holds the positions from base on. */
static inline bool layout_put(const struct merc *m, uint64_t *region, uint32_t base, uint64_t v)
{
    const unsigned p = m->pbits;
    const uint32_t lim = ((uint32_t)1 << p) - 1;
    uint32_t pos, rank;

    if (!layout_next(m->bstart, m->bnext, p, v, &pos))
        return false;
    rank = pos - m->bstart[v >> (64 - p)];
    region[pos - base] = v << p | (rank < lim ? rank : lim);
    return true;
}

/* Restarts the position count of slice r's buckets. */
static void slice_restart(const struct merc *m, unsigned r)
{
    size_t d0, d1;

    slice_buckets(m, r, &d0, &d1);
    memcpy(m->bnext + d0, m->bstart + d0, (d1 - d0) * sizeof *m->bnext);
}

/* Loads slice r's keys into zp->region from S.<seg>.<r>, if the file
 * holds exactly the slice's sn[r] signatures and its XXH3 is ssum[r]: 0,
 * or -1 (then A is read instead: S is only a cache of A's signatures, 8
 * bytes a record instead of ~80). buf: cap bytes of scratch. */
static int slice_load_s(struct zpart *zp, unsigned r, uint8_t *buf, size_t cap)
{
    struct merc *m = zp->m;
    const size_t n = zp->b->sn[r];
    const uint32_t base = slice_base(m, r);
    size_t got = 0, have = 0;
    char sp[4096];
    int fd = -1, rc = -1;
    XXH3_state_t *xs = XXH3_createState();

    if (xs == NULL || seg_path(m, sp, sizeof sp, "S", zp->b->seg, (int)r, false) != 0)
        goto out;
    fd = open(sp, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        goto out;
    XXH3_64bits_reset(xs);
    slice_restart(m, r);
    while (got < n) {
        size_t want = (n - got) * 8 - have;
        ssize_t g;
        if (want > cap - have)
            want = cap - have;
        g = read(fd, buf + have, want);
        if (g < 0 && errno == EINTR)
            continue;
        if (g <= 0)
            goto out;
        XXH3_64bits_update(xs, buf + have, (size_t)g);
        have += (size_t)g;
        for (size_t o = 0; o + 8 <= have; o += 8) {
            uint64_t v = get64(buf + o);
            if (slice_of(v) != r || !layout_put(m, zp->region, base, v))
                goto out; /* not what the adds wrote */
        }
        got += have / 8;
        memmove(buf, buf + have / 8 * 8, have % 8);
        have %= 8;
    }
    if (XXH3_64bits_digest(xs) == zp->b->ssum[r])
        rc = 0; /* (a recycled file's stale tail may follow) */
out:
    if (fd >= 0)
        close(fd);
    XXH3_freeState(xs);
    return rc;
}

/* Reads the n records of A.<seg> in order, each checked (its XXH3), and
 * calls take(zp, r, sig, arg) with those of slice r. buf: cap bytes of
 * scratch. */
static int slice_scan_a(struct zpart *zp, unsigned r, uint8_t *buf, size_t cap,
                        bool (*take)(struct zpart *, uint64_t, void *), void *arg)
{
    struct merc *m = zp->m;
    const size_t n = zp->b->n;
    struct rd rd;
    size_t idx = 0;
    int g = 1, fd = open(zp->ap, O_RDONLY | O_CLOEXEC);
    bool ok = true;

    if (fd < 0)
        return part_fail(zp, SIEVE_EIO, "%s: %s", zp->ap, strerror(errno));
    rd_init(&rd, fd, buf, cap);
    while (idx < n) {
        const char *u;
        size_t ul;
        uint64_t h;
        g = rec_take(&rd, m->cfg.max_url_len, zp->b->mask, &u, &ul, &h);
        if (g != 1)
            break;
        if (slice_of(h) == r && !take(zp, h, arg)) {
            ok = false;
            break;
        }
        idx++;
    }
    close(fd);
    if (g == -2)
        return part_fail(zp, SIEVE_EIO, "%s: read failed: %s", zp->ap, strerror(errno));
    if (idx != n || !ok)
        return part_fail(zp, SIEVE_ECORRUPT, "%s: truncated or corrupt URL segment (%zu of %zu records)", zp->ap, idx,
                         n);
    return SIEVE_OK;
}

static bool take_put(struct zpart *zp, uint64_t h, void *arg)
{
    return layout_put(zp->m, zp->region, *(const uint32_t *)arg, h);
}

/* Loads slice r's keys into zp->region from A.<seg> (when its S file is
 * missing or wrong). */
static int slice_load_a(struct zpart *zp, unsigned r, uint8_t *buf, size_t cap)
{
    uint32_t base = slice_base(zp->m, r);

    slice_restart(zp->m, r);
    return slice_scan_a(zp, r, buf, cap, take_put, &base);
}

/* Sets the mark of position pos (atomically at the part's edge words, which
 * the neighbouring part's thread may set at the same time). */
static inline void mark_set(struct zpart *zp, size_t pos)
{
    size_t w = pos / 64;
    uint64_t bit = (uint64_t)1 << (pos % 64);

    if (w == zp->wlo || w == zp->whi)
        __atomic_fetch_or(&zp->m->marks[w], bit, __ATOMIC_RELAXED);
    else
        zp->m->marks[w] |= bit;
}

/* Position of k in the sorted late[0..n), or -1 (a branch-free binary
 * search: the list is short, and read only for records past lim). */
static long late_find(const uint64_t *late, size_t n, uint64_t k)
{
    const uint64_t *b = late;
    size_t len = n;

    if (n == 0)
        return -1;
    while (len > 1) {
        size_t h = len >> 1;
        b = b[h] <= k ? b + h : b;
        len -= h;
    }
    return *b == k ? (long)(b - late) : -1;
}

struct late_ctx {
    size_t nlate; /* the slice's late fresh signatures, sorted, at zp->region's front */
};

static bool take_late(struct zpart *zp, uint64_t h, void *arg)
{
    const struct late_ctx *lc = arg;
    const struct merc *m = zp->m;
    const uint32_t lim = ((uint32_t)1 << m->pbits) - 1;
    uint32_t pos;
    long j;

    if (!layout_next(m->bstart, m->bnext, m->pbits, h, &pos))
        return false;
    if (pos - m->bstart[h >> (64 - m->pbits)] < lim)
        return true; /* its order is known: the merge marked it or not */
    j = late_find(zp->region, lc->nlate, h);
    if (j >= 0 && !(zp->used[j / 64] >> (j % 64) & 1)) {
        zp->used[j / 64] |= (uint64_t)1 << (j % 64);
        mark_set(zp, pos);
    }
    return true;
}

/* Marks the first record of each of slice r's late fresh signatures (see
 * "the flush's array"; the merge listed them, sorted, at the region's
 * front): a scan of A, counting the slice's positions, looking up the
 * records past their bucket's rank limit. Rare: only crowded buckets have
 * such records. */
static int slice_late(struct zpart *zp, unsigned r, size_t nlate, uint8_t *buf, size_t cap)
{
    struct late_ctx lc = {nlate};

    memset(zp->used, 0, ((nlate + 63) / 64) * 8);
    slice_restart(zp->m, r);
    return slice_scan_a(zp, r, buf, cap, take_late, &lc);
}

static void *part_merge(void *arg)
{
    struct zpart *zp = arg;
    struct merc *m = zp->m;
    const struct buf *b = zp->b;
    struct zbuf *zb = &m->zb[zp->j];
    const unsigned pb = m->pbits;
    const uint32_t lim = ((uint32_t)1 << pb) - 1, *bstart = m->bstart;
    const uint64_t base = (uint64_t)zp->j << (64 - Z_PART_BITS);
    const size_t dpart = (size_t)zp->j << (pb - Z_PART_BITS); /* the part's first bucket */
    uint64_t *region = zp->region;
    uint64_t part_records = 0;
    char zt[4096];
    int zofd = -1;
    struct zr in;
    struct zw out;
    XXH3_state_t *xin = XXH3_createState(), *xout = XXH3_createState();
    uint8_t hdr[Z_HDR];

    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    if (snprintf(zt, sizeof zt, "%s/Z.tmp.%u", m->dir, zp->j) >= (int)sizeof zt) {
        part_fail(zp, SIEVE_EINVAL, "%s: path too long", m->dir);
        goto out;
    }
    if (xin == NULL || xout == NULL) {
        part_fail(zp, SIEVE_ENOMEM, "out of memory");
        goto out;
    }
    for (unsigned s = 0; s < SLICES_PER_PART; s++)
        part_records += b->sn[zp->j * SLICES_PER_PART + s];

    /* Z.tmp.<j> is usually the previous generation's part, renamed after
     * its last use: overwriting its pages costs less than a new file (the
     * stale tail is cut below, before the fsync) */
    XXH3_64bits_reset(xin);
    XXH3_64bits_reset(xout);
    zofd = open(zt, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    memset(hdr, 0, sizeof hdr);
    if (zofd < 0 || write_all(m, zofd, hdr, Z_HDR) != 0) {
        part_fail(zp, SIEVE_EIO, "%s: %s", zt, strerror(errno));
        goto out;
    }
    in.fd = zp->in.fd;
    in.buf = zb->zin;
    in.cap = m->io;
    in.left = zp->in.plen;
    in.xs = xin;
    out.m = m;
    out.fd = zofd;
    out.buf = zb->zout;
    out.cap = m->io;
    out.xs = xout;

    /* merge: one thread reads and decodes its part of Z a block at a time,
     * merges, and encodes and writes Z' a block at a time, so the values
     * stay in the caches (a decoder thread and an encoder thread beside
     * the merge measured slower: handing batches over cost more than it
     * saved); the slices of the part, in ascending order, each sorted in
     * the region when its turn comes, continue one merge */
    uint64_t zleft = zp->in.count, hprev = 0, *zv = zb->zvals, *ov = zb->ovals;
    size_t zi = 0, zn = 0, on = 0;
    bool zdone = zleft == 0;
#define Z_FILL()                                                             \
    do {                                                                     \
        zn = z_next_block(&in, zp->in.lbits, &hprev, &zleft, zv);            \
        zi = 0;                                                              \
        zdone = zn == 0;                                                     \
    } while (0)
#define Z_PUT(v)                                                             \
    do {                                                                     \
        ov[on++] = (v);                                                      \
        if (on == Z_BLOCK) {                                                 \
            zw_block(&out, ov, on);                                          \
            on = 0;                                                          \
        }                                                                    \
    } while (0)
    if (!zdone)
        Z_FILL();
    for (unsigned s = 0; s < SLICES_PER_PART; s++) {
        const unsigned r = zp->j * SLICES_PER_PART + s;
        size_t d0, d1, nlate = 0;
        uint64_t distinct = 0;
        slice_buckets(m, r, &d0, &d1);
        const uint32_t sbase = bstart[d0];

        /* the writer's buffer is the scratch of the slice's load and sort
         * (and of the late ones' scan): empty it first */
        zw_drain(&out);
        if (b->sn[r] > 0 && (!b->s_ok[r] || slice_load_s(zp, r, zb->zout, m->io) != 0) &&
            slice_load_a(zp, r, zb->zout, m->io) != SIEVE_OK)
            goto out;

        /* sort each bucket in place (by signature, then rank: the first
         * record of a signature first) and count the distinct signatures */
        for (size_t d = d0; d < d1; d++) {
            uint64_t *a = region + (bstart[d] - sbase);
            size_t c = bstart[d + 1] - bstart[d];
            if (c > 1)
                bucket_sort(a, c, (uint64_t *)(void *)zb->zout, m->io / sizeof(uint64_t));
            for (size_t i = 0; i < c; i++)
                distinct += i == 0 || (a[i] >> pb) != (a[i - 1] >> pb);
        }
        zp->distinct += distinct;
        if (s == 0) {
            /* L from an estimate of |Z'|'s part: Z's, plus the part's
             * records times the first slice's share of distinct ones (the
             * slices are alike: hash ranges of the same records); at most
             * one bit below the best, when many of them are in Z; the
             * part's share of the signatures' range is 2^-Z_PART_BITS */
            uint64_t est = part_records;
            if (b->sn[r] > 0)
                est = (uint64_t)((double)part_records * (double)distinct / (double)b->sn[r]) + 1;
            out.L = z_low_bits((zp->in.count + (est < part_records ? est : part_records)) << Z_PART_BITS);
        }

        for (size_t d = d0; d < d1; d++) {
            const uint64_t top = (uint64_t)(d - dpart) << (64 - pb); /* relative to base */
            uint64_t prev = 0;
            for (size_t i = bstart[d]; i < bstart[d + 1]; i++) {
                uint64_t key = region[i - sbase], k = top | key >> pb;
                uint32_t rank = (uint32_t)(key & lim);
                if (i > bstart[d] && k == prev)
                    continue; /* a later record of the same signature */
                prev = k;
                while (!zdone) {
                    size_t e = zi;
                    while (e < zn && zv[e] < k)
                        e++;
                    on = z_put_run(&out, ov, on, zv + zi, e - zi);
                    zi = e;
                    if (zi < zn)
                        break;
                    Z_FILL();
                }
                if (!zdone && zv[zi] == k) {
                    zi++;
                } else {
                    zp->fresh++;
                    if (rank < lim)
                        mark_set(zp, bstart[d] + rank);
                    else
                        region[nlate++] = base + k; /* never past i - sbase: never overwrites what is still to read */
                }
                Z_PUT(k);
            }
        }
        if (nlate > 0) {
            zw_drain(&out);
            if (slice_late(zp, r, nlate, zb->zout, m->io) != SIEVE_OK)
                goto out;
        }
    }
    while (!zdone) {
        on = z_put_run(&out, ov, on, zv + zi, zn - zi);
        Z_FILL();
    }
    zw_block(&out, ov, on);
    zw_finish(&out);
#undef Z_FILL
#undef Z_PUT
    zp->ocount = out.count;
    zp->obytes = Z_HDR + out.total;
    if (in.ioerr != 0) {
        part_fail(zp, SIEVE_EIO, "%s/Z.*.%u: read failed: %s", m->dir, zp->j, strerror(in.ioerr));
        goto out;
    }
    /* every payload byte read and hashed, none left over */
    if ((zp->in.fd >= 0 && (in.bad || zleft != 0 || in.left != 0 || in.pos != in.len ||
                            XXH3_64bits_digest(in.xs) != zp->in.psum)) ||
        out.unsorted) {
        part_fail(zp, SIEVE_ECORRUPT, "%s/Z.%llu.%u: truncated or corrupt signature file (checksum or count mismatch)",
                  m->dir, (unsigned long long)zp->gen, zp->j);
        goto out;
    }
    memcpy(hdr, Z_MAGIC, 8);
    put64(hdr + 8, out.count);
    put32(hdr + 16, out.L);
    put32(hdr + 20, Z_BLOCK);
    put64(hdr + 24, out.total);
    put64(hdr + 32, XXH3_64bits_digest(xout));
    put32(hdr + 40, zp->j);
    put32(hdr + 44, Z_PARTS);
    if (out.ioerr || ftruncate(zofd, (off_t)(Z_HDR + out.total)) != 0 || pwrite_all(m, zofd, hdr, Z_HDR, 0) != 0 ||
        do_fsync(m, zofd) != 0)
        part_fail(zp, SIEVE_EIO, "%s: write failed: %s", zt, strerror(errno));
out:
    if (zofd >= 0)
        close(zofd);
    XXH3_freeState(xin);
    XXH3_freeState(xout);
    return NULL;
}

/* Flushes segment b->seg: A.<seg> holds its b->n URLs in the order
 * added, each record carrying its signature; b->top is their histogram by
 * bucket, b->sn by slice. A thread per part of Z (part_merge) loads the
 * part's slices one at a time into its share of the flush's array (from
 * S.<seg>.<r> when b says it is whole and its checksum checks, else from
 * A), sorts and merges them with its part of Z, and marks the first
 * records of the fresh signatures. Commits a new generation, then emits.
 * Called from the flush thread (or single-threaded at open). */
static int flush_segment(struct merc *m, const struct buf *b)
{
    const size_t n = b->n;
    const uint64_t seg = b->seg;
    struct mstate s;
    char ap[4096], lp[4096];
    int afd = -1, lfd = -1, rc = SIEVE_OK;
    uint64_t fresh = 0, ocount = 0, obytes = 0, t0 = now_ns(), emitted = 0;
    struct zhead zh[Z_PARTS];
    struct zpart zp[Z_PARTS];

    for (unsigned j = 0; j < Z_PARTS; j++)
        zh[j].fd = -1;
    pthread_mutex_lock(&m->mmu);
    s = m->ms;
    pthread_mutex_unlock(&m->mmu);

    if (path_of(m, ap, sizeof ap, "A", (long long)seg) || path_of(m, lp, sizeof lp, "EMITTED", -1)) {
        rc = fail(m, SIEVE_EINVAL, true, "%s: path too long", m->dir);
        goto out;
    }

    /* 1: the segment's layout from its histogram, which must agree with the
     * slices' counts, each within its share of the array (A must hold
     * exactly the n URLs: its records are checked by the scans) */
    if (n > 0) {
        afd = open(ap, O_RDONLY | O_CLOEXEC);
        if (afd < 0) {
            rc = fail(m, SIEVE_EIO, true, "%s: %s", ap, strerror(errno));
            goto out;
        }
    }
    if (layout_starts(b->top, m->pbits, m->bstart) != n) {
        rc = fail(m, SIEVE_ECORRUPT, true, "%s: %zu records, histogram of the segment differs", ap, n);
        goto out;
    }
    for (unsigned r = 0; r < SLICES; r++) {
        size_t d0, d1;
        slice_buckets(m, r, &d0, &d1);
        if (m->bstart[d1] - m->bstart[d0] != b->sn[r] || b->sn[r] > m->slice_cap) {
            rc = fail(m, SIEVE_ECORRUPT, true, "%s: slice %u holds %u records, histogram of the segment differs", ap, r,
                      b->sn[r]);
            goto out;
        }
    }

    /* 2: each part's slices sorted and merged with Z into Z', the parts in
     * parallel (the first on this thread); the first record of each fresh
     * signature marked */
    rc = z_open_all(m, &s, zh);
    if (rc != SIEVE_OK)
        goto out;
    memset(m->marks, 0, ((n + 63) / 64) * 8);
    for (unsigned j = 0; j < Z_PARTS; j++) {
        size_t d0 = (size_t)j << (m->pbits - Z_PART_BITS), d1 = (size_t)(j + 1) << (m->pbits - Z_PART_BITS);
        memset(&zp[j], 0, sizeof zp[j]);
        zp[j].m = m;
        zp[j].b = b;
        zp[j].ap = ap;
        zp[j].j = j;
        zp[j].gen = s.gen;
        zp[j].in = zh[j];
        zp[j].region = m->sig + j * m->slice_cap;
        zp[j].used = m->late_used + j * ((m->slice_cap + 63) / 64);
        zp[j].wlo = m->bstart[d0] / 64;
        zp[j].whi = (m->bstart[d1] + 63) / 64 - 1;
    }
    bool started[Z_PARTS] = {false};
    for (unsigned j = 1; j < Z_PARTS; j++)
        started[j] = pthread_create(&zp[j].thr, NULL, part_merge, &zp[j]) == 0;
    part_merge(&zp[0]);
    for (unsigned j = 1; j < Z_PARTS; j++) {
        if (started[j])
            pthread_join(zp[j].thr, NULL);
        else
            part_merge(&zp[j]); /* no thread: here, after the first */
    }
    for (unsigned j = 0; j < Z_PARTS; j++) {
        if (zp[j].rc != SIEVE_OK && rc == SIEVE_OK)
            rc = fail(m, zp[j].rc, true, "%s", zp[j].msg);
        fresh += zp[j].fresh;
        ocount += zp[j].ocount;
        obytes += zp[j].obytes;
    }
    if (rc != SIEVE_OK)
        goto out;
    crash_point();

    /* the durable output log: written before the commit, cut back on reopen */
    uint64_t log_len = s.log_len;
    if (m->cfg.emit_log && fresh > 0) {
        lfd = open(lp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (lfd < 0) {
            rc = fail(m, SIEVE_EIO, true, "%s: %s", lp, strerror(errno));
            goto out;
        }
        rc = a_scan(m, afd, ap, b->mask, n, lfd, &log_len, NULL);
        if (rc != SIEVE_OK)
            goto out;
        if (ftruncate(lfd, (off_t)log_len) != 0 || do_fsync(m, lfd) != 0) {
            rc = fail(m, SIEVE_EIO, true, "%s: %s", lp, strerror(errno));
            goto out;
        }
    }

    /* commit: the parts of Z' become Z.<gen+1>.<j>, then the manifest names
     * that generation (a crash between leaves files of a generation no
     * manifest names, removed at reopen) */
    struct mstate ns = s;
    ns.gen = s.gen + 1;
    ns.z_count = ocount;
    ns.z_bytes = obytes;
    ns.first_seg = seg + 1;
    ns.log_len = log_len;
    for (unsigned j = 0; j < Z_PARTS; j++) {
        char zt[4096], zn[4096];
        if (snprintf(zt, sizeof zt, "%s/Z.tmp.%u", m->dir, j) >= (int)sizeof zt ||
            snprintf(zn, sizeof zn, "%s/Z.%llu.%u", m->dir, (unsigned long long)ns.gen, j) >= (int)sizeof zn ||
            rename(zt, zn) != 0) {
            rc = fail(m, SIEVE_EIO, true, "%s: rename failed: %s", zt, strerror(errno));
            goto out;
        }
        crash_point();
    }
    pthread_mutex_lock(&m->mmu);
    ns.sync_seg = m->ms.sync_seg;
    ns.sync_len = m->ms.sync_len;
    if (ns.sync_seg <= seg) {
        ns.sync_seg = seg + 1;
        ns.sync_len = 0;
    }
    if (manifest_write(m, &ns) != 0) {
        pthread_mutex_unlock(&m->mmu);
        rc = fail(m, SIEVE_EIO, true, "%s/MANIFEST: write failed: %s", m->dir, strerror(errno));
        goto out;
    }
    m->ms = ns;
    pthread_mutex_unlock(&m->mmu);
    crash_point();
    for (unsigned j = 0; j < Z_PARTS && s.gen > 0; j++) {
        /* kept as the next flush's Z.tmp.<j> (garbage at reopen), unless
         * another name links it (a checkpoint): the next flush would
         * overwrite it */
        char zo[4096], zt[4096];
        struct stat zs;
        if (snprintf(zo, sizeof zo, "%s/Z.%llu.%u", m->dir, (unsigned long long)s.gen, j) >= (int)sizeof zo ||
            snprintf(zt, sizeof zt, "%s/Z.tmp.%u", m->dir, j) >= (int)sizeof zt)
            continue;
        if (stat(zo, &zs) != 0 || zs.st_nlink > 1 || rename(zo, zt) != 0)
            unlink(zo);
    }

    /* 3: scan A in order, emit the first URL of each fresh signature */
    if (fresh > 0) {
        rc = a_scan(m, afd, ap, b->mask, n, -1, NULL, &emitted);
        if (rc != SIEVE_OK)
            goto out;
    }
    /* the segment's files become the spares the next segment overwrites */
    recycle(m, "A", seg, -1);
    for (unsigned r = 0; r < SLICES; r++)
        recycle(m, "S", seg, (int)r);

out:
    z_close_all(zh);
    if (afd >= 0)
        close(afd);
    if (lfd >= 0)
        close(lfd);
    {
        uint64_t dt = now_ns() - t0;
        pthread_mutex_lock(&m->mu);
        m->st.emitted += emitted;
        if (rc == SIEVE_OK) {
            m->st.flushes++;
            m->st.flush_ns_total += dt;
            if (dt > m->st.flush_ns_max)
                m->st.flush_ns_max = dt;
        }
        pthread_mutex_unlock(&m->mu);
    }
    return rc;
}

/* ---------------- flush thread ---------------- */

static void *flush_main(void *arg)
{
    struct merc *m = arg;

    pthread_mutex_lock(&m->mu);
    for (;;) {
        while (m->pending < 0 && !m->stop)
            pthread_cond_wait(&m->cv_work, &m->mu);
        if (m->pending < 0)
            break;
        struct buf *b = &m->b[m->pending];
        int rc = SIEVE_OK;
        pthread_mutex_unlock(&m->mu);
        if (m->err == 0)
            rc = flush_segment(m, b);
        pthread_mutex_lock(&m->mu);
        int afd = b->fd;
        b->fd = -1;
        pthread_mutex_unlock(&m->mu);
        /* the last link of a flushed A: freeing its pages takes
         * milliseconds, so not under the lock the adds wait for */
        if (afd >= 0)
            close(afd);
        pthread_mutex_lock(&m->mu);
        if (rc != SIEVE_OK && m->err == 0)
            m->err = rc;
        b->n = 0;
        if (rc == SIEVE_OK) {
            m->done_upto = b->seg + 1;
            pthread_mutex_lock(&m->mmu);
            m->z_known = m->ms.z_count;
            pthread_mutex_unlock(&m->mmu);
        }
        m->pending = -1;
        pthread_cond_broadcast(&m->cv_free);
        pthread_cond_broadcast(&m->cv_done);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

/* Writes A's buffered bytes to the current segment. Caller holds mu. */
static int abuf_drain(struct merc *m)
{
    struct buf *b = &m->b[m->cur];
    if (m->alen == 0)
        return SIEVE_OK;
    if (write_all(m, b->fd, m->abuf, m->alen) != 0) {
        char p[4096];
        path_of(m, p, sizeof p, "A", (long long)b->seg);
        return fail(m, SIEVE_EIO, true, "%s: write failed: %s", p, strerror(errno));
    }
    m->alen = 0;
    return SIEVE_OK;
}

/* Writes slice r's buffered signatures to b's S file of slice r. S is a
 * cache: a failed write drops it (the flush then reads A), without the
 * on_write_error wait a full disk would get for A. Caller holds mu (or
 * is the replay, single-threaded). */
static void sbuf_drain(struct merc *m, struct buf *b, unsigned r)
{
    const uint8_t *p = m->sbuf + r * m->scap;
    size_t off = 0, len = m->slen[r];

    if (b->s_ok[r] && len > 0)
        XXH3_64bits_update(m->sxs[r], p, len);
    while (b->s_ok[r] && off < len) {
        ssize_t w = write(b->sfd[r], p + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            b->s_ok[r] = false;
        else
            off += (size_t)w;
    }
    m->slen[r] = 0;
}

/* Opens b's S files, one per slice (a file that cannot be opened leaves
 * its slice to be loaded from A). */
static void s_files_open(struct merc *m, struct buf *b)
{
    char p[4096];

    for (unsigned r = 0; r < SLICES; r++) {
        m->slen[r] = 0;
        b->sfd[r] = seg_open(m, "S", b->seg, (int)r, p, sizeof p);
        b->s_ok[r] = b->sfd[r] >= 0;
        XXH3_64bits_reset(m->sxs[r]);
    }
}

/* Lists signature h, of b's next record, in its slice's S file. */
static inline void s_put(struct merc *m, struct buf *b, uint64_t h)
{
    const unsigned r = slice_of(h);

    if (b->s_ok[r]) {
        put64(m->sbuf + r * m->scap + m->slen[r], h);
        m->slen[r] += 8;
        if (m->slen[r] == m->scap)
            sbuf_drain(m, b, r);
    }
}

/* Removes segment seg's S files. */
static void s_files_remove(const struct merc *m, uint64_t seg)
{
    char p[4096];

    for (unsigned r = 0; r < SLICES; r++)
        if (seg_path(m, p, sizeof p, "S", seg, (int)r, false) == 0)
            unlink(p);
}

/* Writes what b's S files have buffered, records their checksums, closes
 * them. */
static void s_files_seal(struct merc *m, struct buf *b)
{
    for (unsigned r = 0; r < SLICES; r++) {
        sbuf_drain(m, b, r);
        b->ssum[r] = XXH3_64bits_digest(m->sxs[r]);
        if (b->sfd[r] >= 0)
            close(b->sfd[r]);
        b->sfd[r] = -1;
    }
}

/* Opens the segment files for the current buffer. Caller holds mu. */
static int seg_start(struct merc *m)
{
    char p[4096];
    struct buf *b = &m->b[m->cur];

    b->seg = m->next_seg++;
    b->n = 0;
    m->cur_len = 0;
    b->mask = seg_mask(b->seg);
    b->fd = seg_open(m, "A", b->seg, -1, p, sizeof p);
    if (b->fd < 0)
        return fail(m, SIEVE_EIO, true, "%s/A.%llu: %s", m->dir, (unsigned long long)b->seg, strerror(errno));
    memset(b->top, 0, ((size_t)1 << m->pbits) * sizeof *b->top);
    memset(b->sn, 0, sizeof b->sn);
    s_files_open(m, b);
    return SIEVE_OK;
}

/* Hands the current buffer to the flush thread (waiting for the previous
 * flush) and starts a new one. Caller holds mu. */
static int seal_locked(struct merc *m)
{
    struct buf *b = &m->b[m->cur];
    int rc;

    if (m->sealing) {
        /* another thread is sealing this buffer: wait; the caller re-checks */
        while (m->sealing && m->err == 0)
            pthread_cond_wait(&m->cv_free, &m->mu);
        return m->err != 0 ? SIEVE_ECLOSED : SIEVE_OK;
    }
    m->sealing = true;
    if (m->pending >= 0)
        m->st.add_waits++;
    while (m->pending >= 0 && m->err == 0)
        pthread_cond_wait(&m->cv_free, &m->mu);
    rc = m->err != 0 ? SIEVE_ECLOSED : abuf_drain(m);
    /* a sealed segment is whole to its end (the replay takes damage in a
     * synced one for corruption): cut a recycled file's stale tail */
    if (rc == SIEVE_OK && ftruncate(b->fd, (off_t)m->cur_len) != 0)
        rc = fail(m, SIEVE_EIO, true, "%s/A.%llu: truncate failed: %s", m->dir, (unsigned long long)b->seg,
                  strerror(errno));
    if (rc == SIEVE_OK) {
        s_files_seal(m, b);
        m->pending = m->cur;
        m->sealed_upto = b->seg + 1;
        m->cur ^= 1;
        rc = seg_start(m);
        pthread_cond_signal(&m->cv_work);
    }
    m->sealing = false;
    pthread_cond_broadcast(&m->cv_free);
    return rc;
}

/* Whether to hand the current segment to the flush thread before it is
 * full: when the flush thread is idle, the segment holds at least
 * seal_min records and at least Z's signatures / SEAL_Z_RATIO. Without it a
 * large budget's full segment is flushed alone, after the adds that filled
 * it (at the end of the input: all of it, with nothing to overlap); the
 * bound by Z keeps the flushes' rewrites of Z linear in the records (a
 * flush costs O(|Z| + n) = O(n) for n >= |Z| / SEAL_Z_RATIO). Caller holds
 * mu. */
static inline bool seal_early(const struct merc *m, const struct buf *b)
{
    return m->pending < 0 && !m->sealing && b->n >= m->seal_min && b->n >= m->z_known / SEAL_Z_RATIO;
}

/* Whether segment b has no room for a record of signature h: it is full,
 * or h's slice is (each slice of a segment must fit a part's share of the
 * flush's array). */
static inline bool seg_full(const struct merc *m, const struct buf *b, uint64_t h)
{
    return b->n == m->seg_cap || b->sn[slice_of(h)] == m->slice_cap;
}

/* Counts a record of signature h in segment b (its bucket, its slice) and
 * lists h in the slice's S file. */
static inline void seg_count(struct merc *m, struct buf *b, uint64_t h)
{
    b->n++;
    b->top[h >> (64 - m->pbits)]++;
    b->sn[slice_of(h)]++;
    s_put(m, b, h);
}

static int add_locked(struct merc *m, const char *url, size_t len, uint64_t h)
{
    struct buf *b;
    int rc;

    /* (A seal waiting for the flush thread leaves the lock: adds made
     * meanwhile join the segment it seals, as if made before it.) */
    if (m->err != 0)
        return SIEVE_ECLOSED;
    m->st.added++;
    if (h != 0) {
        uint64_t *c = &m->cache[h & m->cache_mask];
        if (*c == h) {
            m->st.cache_drops++;
            return SIEVE_OK;
        }
        *c = h;
    }
    while (seg_full(m, &m->b[m->cur], h)) {
        rc = seal_locked(m);
        if (rc != SIEVE_OK)
            return rc;
    }
    b = &m->b[m->cur];
    if (m->alen + REC_HDR + len > m->io) {
        rc = abuf_drain(m);
        if (rc != SIEVE_OK)
            return rc;
    }
    put32(m->abuf + m->alen, (uint32_t)len);
    put64(m->abuf + m->alen + 4, h ^ b->mask);
    memcpy(m->abuf + m->alen + REC_HDR, url, len);
    m->alen += REC_HDR + len;
    m->cur_len += REC_HDR + len;
    seg_count(m, b, h);
    crash_point();
    if (seal_early(m, b))
        return seal_locked(m); /* (the flush thread is idle: no wait) */
    return SIEVE_OK;
}

static int merc_add(void *impl, const char *url, size_t len)
{
    struct merc *m = impl;
    uint64_t h;
    int rc;

    if (len > m->cfg.max_url_len)
        return SIEVE_ETOOLONG;
    h = XXH3_64bits(url, len);
    pthread_mutex_lock(&m->mu);
    rc = add_locked(m, url, len, h);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int merc_add_batch(void *impl, const char *const *urls, const size_t *lens, size_t n)
{
    struct merc *m = impl;
    uint64_t hs[64];
    int rc = SIEVE_OK;

    for (size_t i = 0; i < n && rc == SIEVE_OK;) {
        size_t k = n - i < 64 ? n - i : 64;
        for (size_t j = 0; j < k; j++) {
            if (lens[i + j] > m->cfg.max_url_len) {
                k = j;
                rc = SIEVE_ETOOLONG;
                break;
            }
            hs[j] = XXH3_64bits(urls[i + j], lens[i + j]);
            /* the cache probe is a random access: start it early (the
             * array and its mask never change after open) */
            __builtin_prefetch(&m->cache[hs[j] & m->cache_mask], 1);
        }
        pthread_mutex_lock(&m->mu);
        for (size_t j = 0; j < k; j++) {
            int r = add_locked(m, urls[i + j], lens[i + j], hs[j]);
            if (r != SIEVE_OK) {
                rc = r;
                break;
            }
        }
        pthread_mutex_unlock(&m->mu);
        i += k;
    }
    return rc;
}

static int merc_flush(void *impl)
{
    struct merc *m = impl;
    int rc = SIEVE_OK;
    uint64_t target, need;

    pthread_mutex_lock(&m->mu);
    need = m->b[m->cur].n > 0 ? m->b[m->cur].seg + 1 : 0;
    while (rc == SIEVE_OK && m->err == 0 && m->sealed_upto < need)
        rc = seal_locked(m);
    target = m->sealed_upto;
    /* Wait for the flush to end, not for its commit: a flush commits
     * (MANIFEST) before it emits, and the contract is "delivered". */
    while (rc == SIEVE_OK && m->err == 0 && m->done_upto < target)
        pthread_cond_wait(&m->cv_done, &m->mu);
    if (m->err != 0)
        rc = m->err;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int merc_sync(void *impl)
{
    struct merc *m = impl;
    int rc = SIEVE_OK;

    pthread_mutex_lock(&m->mu);
    if (m->err != 0) {
        rc = SIEVE_ECLOSED;
        goto out;
    }
    rc = abuf_drain(m);
    if (rc != SIEVE_OK)
        goto out;
    /* (fsync, not fdatasync, for a sealed segment: the seal cut its length) */
    if (do_fsync(m, m->b[m->cur].fd) != 0 ||
        (m->pending >= 0 && m->b[m->pending].fd >= 0 && !m->cfg.no_fsync && fsync(m->b[m->pending].fd) != 0)) {
        rc = fail(m, SIEVE_EIO, true, "%s: fsync of A failed: %s", m->dir, strerror(errno));
        goto out;
    }
    pthread_mutex_lock(&m->mmu);
    {
        struct mstate ns = m->ms;
        ns.sync_seg = m->b[m->cur].seg;
        ns.sync_len = m->cur_len;
        if (manifest_write(m, &ns) != 0)
            rc = fail(m, SIEVE_EIO, true, "%s/MANIFEST: write failed: %s", m->dir, strerror(errno));
        else
            m->ms = ns;
    }
    pthread_mutex_unlock(&m->mmu);
out:
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int merc_checkpoint(void *impl, const char *dir)
{
    struct merc *m = impl;
    char src[4096], dst[4096];
    int rc = merc_flush(m);

    if (rc == SIEVE_OK)
        rc = merc_sync(m); /* the manifest now names the current segment's length */
    if (rc != SIEVE_OK)
        return rc;
    pthread_mutex_lock(&m->mu);
    pthread_mutex_lock(&m->mmu);
    struct mstate s = m->ms;
    const struct buf *cur = &m->b[m->cur];
    /* MANIFEST is replaced by rename and Z.<gen>.<j> is never rewritten
     * while another name links it (flush_segment): all can be linked. */
    if (path_of(m, src, sizeof src, "MANIFEST", -1) ||
        snprintf(dst, sizeof dst, "%s/MANIFEST", dir) >= (int)sizeof dst ||
        sieve_checkpoint_file(src, dst, SIEVE_WHOLE_FILE) != 0) {
        rc = fail(m, SIEVE_EIO, false, "checkpoint of %s/MANIFEST into %s: %s", m->dir, dir, strerror(errno));
        goto out;
    }
    for (unsigned j = 0; j < Z_PARTS && s.gen > 0; j++) {
        if (snprintf(src, sizeof src, "%s/Z.%llu.%u", m->dir, (unsigned long long)s.gen, j) >= (int)sizeof src ||
            snprintf(dst, sizeof dst, "%s/Z.%llu.%u", dir, (unsigned long long)s.gen, j) >= (int)sizeof dst ||
            sieve_checkpoint_file(src, dst, SIEVE_WHOLE_FILE) != 0) {
            rc = fail(m, SIEVE_EIO, false, "checkpoint of %s into %s: %s", src, dir, strerror(errno));
            goto out;
        }
    }
    /* unflushed URL segments: appended to, so copied as they stand */
    for (uint64_t seg = s.first_seg; seg <= cur->seg; seg++) {
        struct stat st;
        uint64_t len;
        if (path_of(m, src, sizeof src, "A", (long long)seg) ||
            snprintf(dst, sizeof dst, "%s/A.%llu", dir, (unsigned long long)seg) >= (int)sizeof dst) {
            rc = fail(m, SIEVE_EINVAL, false, "%s: path too long", dir);
            goto out;
        }
        if (stat(src, &st) != 0)
            continue;
        len = seg == cur->seg ? m->cur_len : (uint64_t)st.st_size;
        if (sieve_checkpoint_file(src, dst, len) != 0) {
            rc = fail(m, SIEVE_EIO, false, "checkpoint of %s into %s: %s", src, dir, strerror(errno));
            goto out;
        }
    }
    if (m->cfg.emit_log && s.log_len > 0 &&
        (path_of(m, src, sizeof src, "EMITTED", -1) ||
         snprintf(dst, sizeof dst, "%s/EMITTED", dir) >= (int)sizeof dst ||
         sieve_checkpoint_file(src, dst, s.log_len) != 0)) {
        rc = fail(m, SIEVE_EIO, false, "checkpoint of %s into %s: %s", src, dir, strerror(errno));
        goto out;
    }
out:
    pthread_mutex_unlock(&m->mmu);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static void merc_free(struct merc *m)
{
    if (m == NULL)
        return;
    for (int i = 0; i < 2; i++) {
        if (m->b[i].fd >= 0)
            close(m->b[i].fd);
        for (unsigned r = 0; r < SLICES; r++)
            if (m->b[i].sfd[r] >= 0)
                close(m->b[i].sfd[r]);
    }
    free(m->sig);
    free(m->b[0].top);
    free(m->b[1].top);
    free(m->bstart);
    free(m->bnext);
    free(m->sbuf);
    for (unsigned r = 0; r < SLICES; r++)
        XXH3_freeState(m->sxs[r]);
    free(m->abuf);
    free(m->cache);
    free(m->marks);
    free(m->late_used);
    free(m->rbuf);
    for (unsigned j = 0; j < Z_PARTS; j++) {
        free(m->zb[j].zin);
        free(m->zb[j].zout);
    }
    free(m->lbuf);
    if (m->lock_fd >= 0)
        close(m->lock_fd);
    pthread_mutex_destroy(&m->mu);
    pthread_mutex_destroy(&m->mmu);
    pthread_cond_destroy(&m->cv_work);
    pthread_cond_destroy(&m->cv_free);
    pthread_cond_destroy(&m->cv_done);
    free(m->dir);
    free(m);
}

static int merc_close(void *impl)
{
    struct merc *m = impl;
    int rc = SIEVE_OK, r;

    if (m == NULL)
        return SIEVE_OK;
    if (m->thr_started) {
        rc = merc_flush(m);
        r = merc_sync(m);
        if (rc == SIEVE_OK)
            rc = r;
        pthread_mutex_lock(&m->mu);
        m->stop = true;
        pthread_cond_broadcast(&m->cv_work);
        pthread_mutex_unlock(&m->mu);
        pthread_join(m->thr, NULL);
        /* the empty current segment is not needed any more, nor its list
         * of signatures (a reopen replays A, not S) */
        char p[4096];
        if (m->b[m->cur].n == 0 && m->err == 0 && path_of(m, p, sizeof p, "A", (long long)m->b[m->cur].seg) == 0)
            unlink(p);
        s_files_remove(m, m->b[m->cur].seg);
        spares_remove(m);
    }
    merc_free(m);
    return rc;
}

static void merc_stats(void *impl, struct sieve_stats *out)
{
    struct merc *m = impl;
    pthread_mutex_lock(&m->mu);
    *out = m->st;
    pthread_mutex_unlock(&m->mu);
    pthread_mutex_lock(&m->mmu);
    out->z_count = m->ms.z_count;
    out->z_bytes = m->ms.z_bytes;
    pthread_mutex_unlock(&m->mmu);
}

static const char *merc_last_error(void *impl)
{
    struct merc *m = impl;
    pthread_mutex_lock(&m->mu);
    memcpy(m->lastmsg, m->msg, sizeof m->msg);
    pthread_mutex_unlock(&m->mu);
    return m->lastmsg;
}

/* Removes every S.<seg>.<r> (and S.<seg>, of earlier builds) of the
 * folder: lists of a previous run. */
static void s_remove_all(struct merc *m)
{
    DIR *d = opendir(m->dir);
    struct dirent *e;
    char p[4096];

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        const char *t = e->d_name + 2;
        size_t k = strspn(t, "0123456789");
        if (e->d_name[0] != 'S' || e->d_name[1] != '.' || k == 0)
            continue;
        if (t[k] == '.' && t[k + 1] != '\0' && strspn(t + k + 1, "0123456789") == strlen(t + k + 1))
            k = strlen(t);
        if (t[k] == '\0' && snprintf(p, sizeof p, "%s/%s", m->dir, e->d_name) < (int)sizeof p)
            unlink(p);
    }
    closedir(d);
}

/* Replays the A segments left unflushed by a crash, in order. */
static int replay(struct merc *m)
{
    struct mstate s = m->ms;
    uint64_t seg = s.first_seg;
    int rc = SIEVE_OK;
    bool stop = false;

    for (;; seg++) {
        char p[4096];
        int fd;
        struct rd r;
        const char *u;
        size_t ul;
        uint64_t good = 0, sig;
        int g;
        struct buf rb; /* the segment as flush_segment wants it: histograms and S files rebuilt from A */

        if (path_of(m, p, sizeof p, "A", (long long)seg))
            return fail(m, SIEVE_EINVAL, true, "%s: path too long", m->dir);
        fd = open(p, stop ? O_RDONLY : O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT)
                break;
            return fail(m, SIEVE_EIO, true, "%s: %s", p, strerror(errno));
        }
        if (stop) {
            /* after a torn segment nothing later was ever synced */
            close(fd);
            unlink(p);
            continue;
        }
        memset(&rb, 0, sizeof rb);
        rb.seg = seg;
        rb.mask = seg_mask(seg);
        rb.top = m->b[0].top;
        memset(rb.top, 0, ((size_t)1 << m->pbits) * sizeof *rb.top);
        s_files_open(m, &rb); /* the slices' lists, rebuilt as A is read */
        rd_init(&r, fd, m->rbuf, m->io);
        while ((g = rec_next(&r, m->cfg.max_url_len, rb.mask, &u, &ul, &sig)) == 1) {
            if (seg_full(m, &rb, sig))
                break;
            seg_count(m, &rb, sig);
            good = r.off;
        }
        s_files_seal(m, &rb);
        if (g == -2) {
            close(fd);
            return fail(m, SIEVE_EIO, true, "%s: read failed: %s", p, strerror(errno));
        }
        if (g == 1) {
            close(fd);
            return fail(m, SIEVE_EINVAL, true, "%s: segment holds more URLs than a buffer (memory reduced across reopen?)", p);
        }
        if (g == -1) {
            if (seg < s.sync_seg || (seg == s.sync_seg && good < s.sync_len)) {
                close(fd);
                return fail(m, SIEVE_ECORRUPT, true, "%s: truncated or corrupt URL record at offset %llu (before the synced length)", p,
                            (unsigned long long)good);
            }
            if (ftruncate(fd, (off_t)good) != 0) {
                close(fd);
                return fail(m, SIEVE_EIO, true, "%s: %s", p, strerror(errno));
            }
            stop = true;
        } else if (seg == s.sync_seg && good < s.sync_len) {
            close(fd);
            return fail(m, SIEVE_ECORRUPT, true, "%s: truncated URL segment (%llu bytes, %llu synced)", p,
                        (unsigned long long)good, (unsigned long long)s.sync_len);
        }
        close(fd);
        if (rb.n == 0) {
            unlink(p);
            s_files_remove(m, seg);
            if (stop)
                continue;
            break;
        }
        rc = flush_segment(m, &rb);
        if (rc != SIEVE_OK)
            return rc;
    }
    if (seg == s.first_seg && s.sync_seg > seg) {
        /* the synced segment vanished */
        char p[4096];
        path_of(m, p, sizeof p, "A", (long long)seg);
        return fail(m, SIEVE_ECORRUPT, true, "%s: synced URL segment missing", p);
    }
    return rc;
}

static int merc_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx, void **impl,
                     char *err, size_t errlen)
{
    struct merc *m = NULL;
    char p[4096];
    int rc = SIEVE_OK, mr;
    size_t mem, rest, ce, fixed;
    const char *env;

    *impl = NULL;
    if (cfg->dir == NULL || cfg->dir[0] == '\0') {
        snprintf(err, errlen, "no sieve folder given");
        return SIEVE_EINVAL;
    }
    env = getenv("SIEVE_CRASH_POINT");
    if (env != NULL) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v > 0) {
            crash_at = v;
            crash_n = 0;
        }
    }
    m = calloc(1, sizeof *m);
    if (m == NULL)
        return SIEVE_ENOMEM;
    m->lock_fd = -1;
    m->b[0].fd = m->b[1].fd = -1;
    for (unsigned r = 0; r < SLICES; r++)
        m->b[0].sfd[r] = m->b[1].sfd[r] = -1;
    m->pending = -1;
    pthread_mutex_init(&m->mu, NULL);
    pthread_mutex_init(&m->mmu, NULL);
    pthread_cond_init(&m->cv_work, NULL);
    pthread_cond_init(&m->cv_free, NULL);
    pthread_cond_init(&m->cv_done, NULL);
    m->cfg = *cfg;
    m->emit = emit;
    m->emit_ctx = emit_ctx;
    m->dir = strdup(cfg->dir);
    if (m->dir == NULL) {
        rc = SIEVE_ENOMEM;
        goto out;
    }
    m->cfg.dir = m->dir;
    if (m->cfg.max_url_len == 0)
        m->cfg.max_url_len = 65536;
    if (m->cfg.max_url_len > (1u << 30)) {
        rc = fail(m, SIEVE_EINVAL, false, "max_url_len too large");
        goto out;
    }
    mem = m->cfg.memory ? m->cfg.memory : (size_t)64 << 20;
    /* the budget: I/O buffers (A's, EMITTED's and the emitting scan's, each
     * part's Z reader and Z' writer, S's buffer of each slice), a cache of
     * 1/16, the merge's blocks (in struct merc), the layout's histograms
     * and bucket starts (4 arrays of 2^pbits), the rest for the flush's
     * array (8 bytes per slot: the adds keep no signature in memory, the
     * flush loads them from S or A and sorts them in place) and two
     * bitmaps, the marks (a bit per record of a segment, SLICES_PER_PART
     * per slot) and the late ones' (a bit per slot) */
    m->io = mem / 64;
    if (m->io > ((size_t)1 << 20))
        m->io = (size_t)1 << 20;
    if (m->io < ((size_t)64 << 10))
        m->io = (size_t)64 << 10;
    if (m->io < m->cfg.max_url_len + 2 * REC_HDR)
        m->io = m->cfg.max_url_len + 2 * REC_HDR;
    ce = 1;
    while (ce * 2 * sizeof(uint64_t) <= mem / 8)
        ce *= 2;
    m->scap = m->io / 2 / SLICES / 8 * 8;
    if (m->scap < 4096)
        m->scap = 4096;
    fixed = (3 + 2 * (size_t)Z_PARTS) * m->io + Z_PARTS * Z_SLACK + SLICES * m->scap + ce * 8 + sizeof *m +
            LAYOUT_BYTES(8);
    if (fixed + 64 * 80 > mem) {
        rc = fail(m, SIEVE_EINVAL, false, "memory %zu too small (needs at least %zu for I/O buffers and cache)", mem,
                  fixed + 64 * 80);
        goto out;
    }
    rest = mem - fixed + LAYOUT_BYTES(8);
    /* the slots (8 + (SLICES_PER_PART + 1) / 8 bytes each), then the
     * layout's arrays for a segment of them out of the same rest (fewer
     * slots never need more bucket bits) */
    size_t slots = rest * 8 / (65 + SLICES_PER_PART);
    m->pbits = layout_bits(slots * SLICES_PER_PART);
    if (rest > LAYOUT_BYTES(m->pbits) + 64 * 80)
        slots = (rest - LAYOUT_BYTES(m->pbits)) * 8 / (65 + SLICES_PER_PART);
    m->slice_cap = slots / Z_PARTS;
    m->seg_cap = m->slice_cap * SLICES;
    if (m->cfg.buffer_urls > 0) {
        /* (tests) segments of buffer_urls records; any slice may hold them all */
        m->seg_cap = m->cfg.buffer_urls;
        m->slice_cap = m->cfg.buffer_urls;
    }
    if (m->seg_cap > UINT32_MAX / 2)
        m->seg_cap = UINT32_MAX / 2;
    if (m->slice_cap > m->seg_cap)
        m->slice_cap = m->seg_cap;
    m->pbits = layout_bits(m->seg_cap);
    m->seal_min = m->cfg.seal_min_urls > 0 ? m->cfg.seal_min_urls : SEAL_MIN_DEFAULT;
    m->cache_mask = ce - 1;
    m->st.buffer_urls = m->seg_cap;
    m->st.cache_entries = ce;

    if (mkdir(m->dir, 0755) != 0 && errno != EEXIST) {
        rc = fail(m, SIEVE_EIO, false, "%s: cannot create: %s", m->dir, strerror(errno));
        goto out;
    }
    if (path_of(m, p, sizeof p, "LOCK", -1)) {
        rc = fail(m, SIEVE_EINVAL, false, "%s: path too long", m->dir);
        goto out;
    }
    m->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m->lock_fd < 0) {
        rc = fail(m, SIEVE_EIO, false, "%s: %s", p, strerror(errno));
        goto out;
    }
    if (flock(m->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = fail(m, SIEVE_ELOCKED, false, "%s: folder in use by another sieve", m->dir);
        goto out;
    }
    m->sig = malloc(Z_PARTS * m->slice_cap * sizeof(uint64_t));
    m->b[0].top = malloc(((size_t)1 << m->pbits) * sizeof(uint32_t));
    m->b[1].top = malloc(((size_t)1 << m->pbits) * sizeof(uint32_t));
    m->bstart = malloc((((size_t)1 << m->pbits) + 1) * sizeof(uint32_t));
    m->bnext = malloc(((size_t)1 << m->pbits) * sizeof(uint32_t));
    m->late_used = malloc(Z_PARTS * ((m->slice_cap + 63) / 64) * 8);
    m->marks = malloc(((m->seg_cap + 63) / 64) * 8);
    m->cache = calloc(ce, sizeof(uint64_t));
    m->abuf = malloc(m->io);
    m->sbuf = malloc(SLICES * m->scap);
    bool sxs_ok = true;
    for (unsigned r = 0; r < SLICES; r++) {
        m->sxs[r] = XXH3_createState();
        sxs_ok &= m->sxs[r] != NULL;
    }
    m->rbuf = malloc(m->io);
    m->lbuf = malloc(m->io);
    bool zb_ok = true;
    for (unsigned j = 0; j < Z_PARTS; j++) {
        m->zb[j].zin = calloc(1, m->io + Z_SLACK); /* zeroed: the slack is read, never used */
        m->zb[j].zout = malloc(m->io);
        zb_ok &= m->zb[j].zin != NULL && m->zb[j].zout != NULL;
    }
    if (!m->sig || !m->b[0].top || !m->b[1].top || !m->bstart || !m->bnext || !m->sbuf || !sxs_ok ||
        !m->late_used || !m->marks || !m->cache || !m->abuf || !m->rbuf || !zb_ok || !m->lbuf) {
        rc = fail(m, SIEVE_ENOMEM, false, "out of memory");
        goto out;
    }

    mr = manifest_read(m, &m->ms);
    if (mr == -1) {
        rc = fail(m, SIEVE_ECORRUPT, false, "%s/MANIFEST: truncated or corrupt", m->dir);
        goto out;
    }
    if (mr == -2) {
        rc = fail(m, SIEVE_EIO, false, "%s/MANIFEST: %s", m->dir, strerror(errno));
        goto out;
    }
    if (mr == 0 && m->ms.earlier) {
        rc = fail(m, SIEVE_ENOTSUP, false,
                  "%s/MANIFEST: a folder of an earlier build (%s: one signature file, URL records without segment "
                  "masks); this build reads %s folders only: start from a new sieve folder",
                  m->dir, M_MAGIC_EARLIER, M_MAGIC);
        goto out;
    }
    if (mr == 1) {
        memset(&m->ms, 0, sizeof m->ms);
    } else if (m->ms.gen > 0) {
        struct zhead zh[Z_PARTS];
        rc = z_open_all(m, &m->ms, zh);
        z_close_all(zh);
        if (rc != SIEVE_OK)
            goto out;
    }
    /* leftovers: signature lists of segments (S.*: caches, rebuilt from A
     * by the replay), spare segment files, a Z' never committed, a newer Z */
    s_remove_all(m);
    spares_remove(m);
    for (unsigned j = 0; j < Z_PARTS; j++) {
        if (snprintf(p, sizeof p, "%s/Z.tmp.%u", m->dir, j) < (int)sizeof p)
            unlink(p);
        if (snprintf(p, sizeof p, "%s/Z.%llu.%u", m->dir, (unsigned long long)(m->ms.gen + 1), j) < (int)sizeof p)
            unlink(p);
        if (m->ms.gen > 0 &&
            snprintf(p, sizeof p, "%s/Z.%llu.%u", m->dir, (unsigned long long)(m->ms.gen - 1), j) < (int)sizeof p)
            unlink(p);
    }
    if (m->cfg.emit_log) {
        struct stat sb;
        if (path_of(m, p, sizeof p, "EMITTED", -1)) {
            rc = fail(m, SIEVE_EINVAL, false, "%s: path too long", m->dir);
            goto out;
        }
        if (stat(p, &sb) == 0) {
            if ((uint64_t)sb.st_size < m->ms.log_len) {
                rc = fail(m, SIEVE_ECORRUPT, false, "%s: truncated output log (%lld bytes, %llu committed)", p,
                          (long long)sb.st_size, (unsigned long long)m->ms.log_len);
                goto out;
            }
            if ((uint64_t)sb.st_size > m->ms.log_len && truncate(p, (off_t)m->ms.log_len) != 0) {
                rc = fail(m, SIEVE_EIO, false, "%s: %s", p, strerror(errno));
                goto out;
            }
        } else if (m->ms.log_len > 0) {
            rc = fail(m, SIEVE_ECORRUPT, false, "%s: output log missing", p);
            goto out;
        }
    }
    rc = replay(m);
    if (rc != SIEVE_OK)
        goto out;
    m->next_seg = m->ms.first_seg;
    m->sealed_upto = m->ms.first_seg;
    m->done_upto = m->ms.first_seg;
    m->z_known = m->ms.z_count;
    m->cur = 0;
    rc = seg_start(m);
    if (rc != SIEVE_OK)
        goto out;
    if (pthread_create(&m->thr, NULL, flush_main, m) != 0) {
        rc = fail(m, SIEVE_ENOMEM, false, "cannot start the flush thread");
        goto out;
    }
    m->thr_started = true;
out:
    if (rc != SIEVE_OK) {
        snprintf(err, errlen, "%s", m && m->msg[0] ? m->msg : sieve_strerror(rc));
        merc_free(m);
        return rc;
    }
    *impl = m;
    return SIEVE_OK;
}

int sieve_log_read(const char *dir, sieve_emit_fn fn, void *ctx, char *errbuf, size_t errlen)
{
    char p[4096], mp[4096];
    struct merc tmp;
    struct mstate s;
    struct rd r;
    uint8_t *buf = NULL;
    const size_t cap = ((size_t)1 << 20) + 64;
    const char *u;
    size_t ul;
    uint64_t sig;
    int fd = -1, rc = SIEVE_OK, g, mr;
    char dummy[8];

    if (errbuf == NULL || errlen == 0) {
        errbuf = dummy;
        errlen = sizeof dummy;
    }
    errbuf[0] = '\0';
    memset(&tmp, 0, sizeof tmp);
    tmp.dir = (char *)dir;
    mr = manifest_read(&tmp, &s);
    if (mr < 0) {
        snprintf(errbuf, errlen, "%s/MANIFEST: truncated or corrupt or unreadable", dir);
        return mr == -1 ? SIEVE_ECORRUPT : SIEVE_EIO;
    }
    if (mr == 1 || s.log_len == 0)
        return SIEVE_OK;
    snprintf(mp, sizeof mp, "%s/EMITTED", dir);
    memcpy(p, mp, sizeof p);
    fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(errbuf, errlen, "%s: %s", p, strerror(errno));
        return SIEVE_ECORRUPT;
    }
    buf = malloc(cap);
    if (buf == NULL) {
        rc = SIEVE_ENOMEM;
        goto out;
    }
    rd_init(&r, fd, buf, cap);
    while (r.off < s.log_len && (g = rec_next(&r, cap - 64, 0, &u, &ul, &sig)) == 1)
        fn(ctx, u, ul);
    if (r.off != s.log_len) {
        snprintf(errbuf, errlen, "%s: truncated or corrupt output log at offset %llu", p, (unsigned long long)r.off);
        rc = SIEVE_ECORRUPT;
    }
out:
    free(buf);
    close(fd);
    return rc;
}

const struct sieve_ops sieve_mercator_ops = {
    .name = "mercator",
    .open = merc_open,
    .add = merc_add,
    .add_batch = merc_add_batch,
    .flush = merc_flush,
    .sync = merc_sync,
    .close = merc_close,
    .stats = merc_stats,
    .last_error = merc_last_error,
    .checkpoint = merc_checkpoint,
};
