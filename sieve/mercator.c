/*
 * mercator.c: the Mercator sieve (see sieve.h for the contract and files).
 *
 * Two buffers of n signatures each: `cur` fills (adds append the URL to its A
 * segment file and the signature to its S), `pending` (if >= 0) is owned by
 * the flush thread. Buffer i's A segment is A.<seg>; segments are flushed in
 * increasing order, so the manifest's first_seg says which are committed.
 *
 * Z file: 40-byte header {magic "MSIEVEZ2", u64 count, u32 rice_b, u32 0,
 * u64 payload_len, u64 XXH3(payload)} then the Golomb-Rice coded gaps of
 * the sorted distinct signatures (quotient in unary as q zeros then a one,
 * then rice_b low bits; bits packed LSB first).
 *
 * A and EMITTED records: {u32 length, u64 XXH3 of the bytes, the bytes}.
 *
 * A flush (flush_segment): sort the buffer's signatures in place (MSD radix);
 * merge the distinct ones with Z into Z.tmp, a thread per flush decoding Z
 * into a ring of batches while the flush thread merges and encodes;
 * compact the fresh signatures F to the array's front; index F by its top
 * bits; (with EMITTED) scan A choosing the first record of each fresh
 * signature, append those to EMITTED; commit (rename Z.tmp, MANIFEST); scan
 * A (or reuse the first scan's marks) and emit. The previous Z is renamed
 * to Z.tmp and overwritten by the next flush (cheaper than a new file).
 *
 * Locks: mu guards the buffers, the cache, counters and the error; mmu guards
 * the committed state and MANIFEST writes. Order: mu before mmu.
 */
#include "sieve/sieve.h"

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

#define Z_MAGIC "MSIEVEZ2"
#define M_MAGIC "MSIEVEM2"
#define Z_HDR 40
#define M_SIZE 72
#define REC_HDR 12
#define VBATCH 1024
#define ZB_VALUES 8192   /* values per batch between Z's decoder thread and the merge */
#define ZB_RING 4        /* batches in flight */

struct buf {
    uint64_t *sig;
    size_t n;
    uint64_t seg;
    int fd;
    bool sorted;                      /* sig already sorted (by the sealing adder) */
};

/* The committed state (MANIFEST). */
struct mstate {
    uint64_t gen, z_count, z_bytes, first_seg, log_len, sync_seg, sync_len;
};

struct merc {
    char *dir;
    struct sieve_config cfg;
    sieve_emit_fn emit;
    void *emit_ctx;
    size_t cap;     /* slots per buffer */
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
    uint8_t *abuf;
    size_t alen;
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
    uint32_t *work;                   /* F's bucket index */
    unsigned rmax;                    /* log2 of work's bucket count */
    uint64_t *used, *amarks;          /* bits: per F entry, per A position */
    uint8_t *rbuf, *zin, *zout, *lbuf;
    uint64_t *zring;                  /* ZB_RING batches of decoded Z values */
    uint64_t ovals[VBATCH];           /* values for Z' */
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

/* Reads the next A/EMITTED record {u32 length, u64 XXH3 of the bytes, the
 * bytes}: the XXH3 is both the record's checksum and the URL's signature.
 * 1 = got one (*url,*len valid until the next call, *sig its verified
 * signature), 0 = clean end, -1 = torn or corrupt record at r->off,
 * -2 = read error. */
static int rec_next(struct rd *r, size_t maxlen, const char **url, size_t *len, uint64_t *sig)
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
    h = get64(r->buf + r->pos + 4);
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

/* ---------------- Golomb-Rice bit streams ---------------- */

/* Writer: a 64-bit accumulator holding nbits < 64 pending bits (LSB first),
 * stored 8 bytes at a time; one code (unary quotient + b low bits) is
 * usually one bw_bits call. */
struct bw {
    const struct merc *m;
    int fd;
    uint8_t *buf;
    size_t cap, len;
    uint64_t acc;
    unsigned nbits;
    uint64_t total;
    XXH3_state_t *xs;
    bool ioerr;
};

static void bw_drain(struct bw *w)
{
    if (w->len == 0)
        return;
    if (write_all(w->m, w->fd, w->buf, w->len) != 0)
        w->ioerr = true;
    XXH3_64bits_update(w->xs, w->buf, w->len);
    w->total += w->len;
    w->len = 0;
}

/* Appends the k low bits of v (1 <= k <= 64; v < 2^k). */
static inline void bw_bits(struct bw *w, uint64_t v, unsigned k)
{
    unsigned n = w->nbits;

    w->acc |= v << n;
    if (n + k < 64) {
        w->nbits = n + k;
        return;
    }
    if (w->len + 8 > w->cap)
        bw_drain(w);
    put64(w->buf + w->len, w->acc);
    w->len += 8;
    w->acc = n > 0 ? v >> (64 - n) : 0;
    w->nbits = n + k - 64;
}

static inline void bw_rice(struct bw *w, uint64_t v, unsigned b)
{
    uint64_t q = v >> b;
    uint64_t low = b > 0 ? v & (~(uint64_t)0 >> (64 - b)) : 0;

    if (q + 1 + b <= 64) {
        /* the common case: q zeros, a one, the b low bits, in one store */
        bw_bits(w, ((uint64_t)1 << q) | (low << q << 1), (unsigned)q + 1 + b);
        return;
    }
    while (q >= 63) {
        bw_bits(w, 0, 63);
        q -= 63;
    }
    bw_bits(w, (uint64_t)1 << q, (unsigned)q + 1);
    if (b > 0)
        bw_bits(w, low, b);
}

static void bw_finish(struct bw *w)
{
    while (w->nbits > 0) {
        if (w->len + 1 > w->cap)
            bw_drain(w);
        w->buf[w->len++] = (uint8_t)w->acc;
        w->acc >>= 8;
        w->nbits = w->nbits >= 8 ? w->nbits - 8 : 0;
    }
    bw_drain(w);
}

/* Reader: acc holds nbits valid bits (the bits above are zero). */
struct br {
    struct rd r;
    uint64_t acc;
    unsigned nbits;
    uint64_t left;       /* payload bytes not yet read from the file */
    XXH3_state_t *xs;
    bool bad;
};

/* Refills acc to at least 57 bits (fewer only at the end of the payload). */
static void br_refill_slow(struct br *b)
{
    while (b->nbits <= 56) {
        if (b->r.pos == b->r.len) {
            ssize_t h;
            size_t hl;
            if (b->left == 0)
                return;
            b->r.pos = b->r.len = 0;
            b->r.eof = false;
            h = rd_need(&b->r, 1);
            if (h <= 0) {
                b->bad = true;
                return;
            }
            /* hash what was just read, bounded by the payload */
            hl = b->r.len < b->left ? b->r.len : (size_t)b->left;
            b->r.len = hl;
            XXH3_64bits_update(b->xs, b->r.buf, hl);
            b->left -= hl;
        }
        b->acc |= (uint64_t)b->r.buf[b->r.pos++] << b->nbits;
        b->nbits += 8;
    }
}

static inline void br_refill(struct br *b)
{
    if (b->r.len - b->r.pos >= 8) {
        /* whole bytes from one 64-bit load */
        unsigned take = (63 - b->nbits) >> 3;
        uint64_t w;
        if (take == 0)
            return;
        w = get64(b->r.buf + b->r.pos);
        b->acc |= (w & (~(uint64_t)0 >> (64 - 8 * take))) << b->nbits;
        b->r.pos += take;
        b->nbits += 8 * take;
        return;
    }
    br_refill_slow(b);
}

static inline uint64_t br_get(struct br *b, unsigned k)
{
    uint64_t v;
    if (k == 0)
        return 0;
    if (b->nbits < k)
        br_refill(b);
    if (b->nbits < k) {
        b->bad = true;
        return 0;
    }
    v = b->acc & (~(uint64_t)0 >> (64 - k));
    b->acc >>= k;
    b->nbits -= k;
    return v;
}

static inline uint64_t br_rice(struct br *b, unsigned rb)
{
    uint64_t q = 0, v;
    unsigned t;

    if (b->nbits <= 56)
        br_refill(b);
    while (b->acc == 0) {
        /* a quotient longer than the buffered bits (rare) */
        q += b->nbits;
        b->nbits = 0;
        br_refill(b);
        if (b->nbits == 0) {
            b->bad = true;
            return 0;
        }
    }
    t = (unsigned)__builtin_ctzll(b->acc);
    q += t;
    b->acc = (b->acc >> t) >> 1;
    b->nbits -= t + 1;
    if (rb <= 56) {
        if (b->nbits < rb) {
            br_refill(b);
            if (b->nbits < rb) {
                b->bad = true;
                return 0;
            }
        }
        v = rb > 0 ? b->acc & (~(uint64_t)0 >> (64 - rb)) : 0;
        b->acc = rb > 0 ? b->acc >> rb : b->acc;
        b->nbits -= rb;
    } else {
        v = br_get(b, 32);
        v |= br_get(b, rb - 32) << 32;
    }
    return (q << rb) | v;
}

/* Decodes up to `want` values (gaps added to *prev) into out; returns how
 * many (fewer only at a damaged end: b->bad). The loop keeps the bit
 * buffer in locals; codes that do not fit it go through br_rice. */
static size_t br_batch(struct br *b, unsigned rb, uint64_t *prev, uint64_t *out, size_t want)
{
    uint64_t acc = b->acc, p = *prev;
    unsigned nb = b->nbits;
    const uint8_t *buf = b->r.buf;
    size_t pos = b->r.pos, len = b->r.len, i = 0;
    const uint64_t lowmask = rb > 0 ? ~(uint64_t)0 >> (64 - rb) : 0;

    while (i < want) {
        if (nb <= 8 * pos && len >= 8) {
            /* The fast loop: acc's nb bits are the last ones before byte
             * pos of this buffer, so the stream can be read by bit position
             * bp; each code is one unaligned load, a shift and a ctz (a
             * short dependency chain: the accumulator's refill and its
             * shifts were twice as long). It stops 8 bytes before the
             * buffer's end and at codes longer than 57 bits. */
            size_t bp = 8 * pos - nb, lim = len - 8;
            while (i < want && (bp >> 3) <= lim) {
                uint64_t w = get64(buf + (bp >> 3)) >> (bp & 7);
                unsigned t;
                if (w == 0)
                    break;
                t = (unsigned)__builtin_ctzll(w);
                if (t + 1 + rb > 57)
                    break;
                p += ((uint64_t)t << rb) | ((w >> t >> 1) & lowmask);
                bp += t + 1 + rb;
                out[i++] = p;
            }
            pos = bp >> 3;
            if ((bp & 7) != 0) {
                acc = (uint64_t)buf[pos] >> (bp & 7);
                nb = 8 - (unsigned)(bp & 7);
                pos++;
            } else {
                acc = 0;
                nb = 0;
            }
            if (i == want)
                break;
        }
        if (nb <= 55 && len - pos >= 8) {
            unsigned take = (63 - nb) >> 3;
            acc |= (get64(buf + pos) & (~(uint64_t)0 >> (64 - 8 * take))) << nb;
            pos += take;
            nb += 8 * take;
        }
        if (acc != 0) {
            unsigned t = (unsigned)__builtin_ctzll(acc);
            if (t + 1 + rb <= nb) {
                acc = (acc >> t) >> 1;
                p += ((uint64_t)t << rb) | (acc & lowmask);
                acc = rb < 64 ? acc >> rb : 0;
                nb -= t + 1 + rb;
                out[i++] = p;
                continue;
            }
        }
        /* near a buffer end or a long code: the general path */
        b->acc = acc;
        b->nbits = nb;
        b->r.pos = pos;
        p += br_rice(b, rb);
        if (b->bad)
            break;
        out[i++] = p;
        acc = b->acc;
        nb = b->nbits;
        buf = b->r.buf;
        pos = b->r.pos;
        len = b->r.len;
    }
    b->acc = acc;
    b->nbits = nb;
    b->r.pos = pos;
    *prev = p;
    return i;
}

/* Encodes the gaps of v[0..n) (ascending, after *prev) with parameter rb. */
static void bw_batch(struct bw *w, const uint64_t *v, size_t n, uint64_t *prev, unsigned rb)
{
    uint64_t acc = w->acc, p = *prev;
    unsigned nb = w->nbits;
    const uint64_t lowmask = rb > 0 ? ~(uint64_t)0 >> (64 - rb) : 0;
    uint8_t *buf = w->buf;
    size_t len = w->len, lim = w->cap - 8;

    for (size_t i = 0; i < n; i++) {
        uint64_t g = v[i] - p, q = g >> rb;
        unsigned k = (unsigned)q + 1 + rb;
        p = v[i];
        if (q + 1 + rb > 64 || len > lim) {
            w->acc = acc;
            w->nbits = nb;
            w->len = len;
            bw_rice(w, g, rb);
            acc = w->acc;
            nb = w->nbits;
            len = w->len;
            continue;
        }
        uint64_t code = ((uint64_t)1 << q) | ((g & lowmask) << q << 1);
        acc |= code << nb;
        if (nb + k < 64) {
            nb += k;
        } else {
            put64(buf + len, acc);
            len += 8;
            acc = nb > 0 ? code >> (64 - nb) : 0;
            nb = nb + k - 64;
        }
    }
    w->acc = acc;
    w->nbits = nb;
    w->len = len;
    *prev = p;
}

static unsigned rice_param(uint64_t count)
{
    double mean, l;
    if (count == 0)
        return 63;
    mean = ldexp(1.0, 64) / (double)count;
    l = floor(log2(mean * 0.6931471805599453));
    if (l < 0)
        l = 0;
    if (l > 63)
        l = 63;
    return (unsigned)l;
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
    if (g != M_SIZE || memcmp(b, M_MAGIC, 8) != 0 || get64(b + 64) != XXH64(b, 64, 0))
        return -1;
    s->gen = get64(b + 8);
    s->z_count = get64(b + 16);
    s->z_bytes = get64(b + 24);
    s->first_seg = get64(b + 32);
    s->log_len = get64(b + 40);
    s->sync_seg = get64(b + 48);
    s->sync_len = get64(b + 56);
    return 0;
}

/* ---------------- sorting ---------------- */

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
 * Not stable, and needs not be: equal keys are equal (the first occurrence
 * of a signature is found later, by the scan of A in order). */
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

/* Bits of the bucket digit for n keys: about 4 keys per bucket, at most
 * rmax bits (the size of the work array). */
static unsigned digit_bits(size_t n, unsigned rmax)
{
    unsigned r = 1;
    while (r < rmax && ((size_t)4 << r) <= n)
        r++;
    return r;
}

/* Bucket index of the sorted fresh signatures F[0..f): idx[d] is the first
 * position whose top r bits are >= d; idx[2^r] = f. */
static void f_index(const uint64_t *f, size_t nf, uint32_t *idx, unsigned r)
{
    size_t nb = (size_t)1 << r, j = 0;
    unsigned sh = 64 - r;

    for (size_t d = 0; d < nb; d++) {
        idx[d] = (uint32_t)j;
        while (j < nf && (f[j] >> sh) == d)
            j++;
    }
    idx[nb] = (uint32_t)nf;
}

/* Position of k in F, or -1. */
static inline long f_find(const uint64_t *f, const uint32_t *idx, unsigned r, uint64_t k)
{
    size_t d = k >> (64 - r);
    for (uint32_t j = idx[d]; j < idx[d + 1]; j++) {
        if (f[j] >= k)
            return f[j] == k ? (long)j : -1;
    }
    return -1;
}

/* ---------------- the flush ---------------- */

/* Opens Z.<gen> and checks its header. *fd = -1 when gen == 0. */
static int z_open(struct merc *m, const struct mstate *s, int *fd, uint64_t *count,
                  unsigned *rb, uint64_t *plen, uint64_t *psum)
{
    char p[4096];
    uint8_t h[Z_HDR];
    struct stat sb;

    *fd = -1;
    *count = 0;
    *rb = 0;
    *plen = 0;
    *psum = 0;
    if (s->gen == 0)
        return SIEVE_OK;
    if (path_of(m, p, sizeof p, "Z", (long long)s->gen))
        return SIEVE_EINVAL;
    *fd = open(p, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return fail(m, errno == ENOENT ? SIEVE_ECORRUPT : SIEVE_EIO, true, "%s: cannot open: %s", p, strerror(errno));
    if (fstat(*fd, &sb) != 0 || pread(*fd, h, Z_HDR, 0) != Z_HDR || memcmp(h, Z_MAGIC, 8) != 0)
        goto bad;
    *count = get64(h + 8);
    *rb = get32(h + 16);
    *plen = get64(h + 24);
    *psum = get64(h + 32);
    if (*rb > 63 || (uint64_t)sb.st_size != Z_HDR + *plen || *count != s->z_count ||
        (uint64_t)sb.st_size != s->z_bytes)
        goto bad;
    if (lseek(*fd, Z_HDR, SEEK_SET) != Z_HDR)
        goto bad;
    return SIEVE_OK;
bad:
    close(*fd);
    *fd = -1;
    return fail(m, SIEVE_ECORRUPT, true, "%s: truncated or corrupt signature file (bad header, size or count)", p);
}

/* Z's decoder: a thread per flush that reads, checks and decodes Z into a
 * ring of batches while the flush thread merges and encodes Z' (the two
 * halves of the merge's work run on two cores). */
struct zdec {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct br *in;
    XXH3_state_t *xs;
    unsigned rb;
    uint64_t zleft, psum;
    uint64_t *ring;
    size_t cnt[ZB_RING];
    uint64_t head, tail;              /* batches produced, batches released */
    bool done, ok;
    pthread_t thr_id;
};

static void *zdec_main(void *arg)
{
    struct zdec *d = arg;
    struct br *in = d->in;
    uint64_t prev = 0;

    for (;;) {
        size_t want = d->zleft < ZB_VALUES ? (size_t)d->zleft : ZB_VALUES, got;
        uint64_t slot;
        if (want == 0)
            break;
        pthread_mutex_lock(&d->mu);
        while (d->head - d->tail == ZB_RING)
            pthread_cond_wait(&d->cv, &d->mu);
        slot = d->head % ZB_RING;
        pthread_mutex_unlock(&d->mu);
        got = br_batch(in, d->rb, &prev, d->ring + slot * ZB_VALUES, want);
        d->zleft -= got;
        pthread_mutex_lock(&d->mu);
        d->cnt[slot] = got;
        if (got > 0)
            d->head++;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        if (got < want)
            break;
    }
    /* hash the payload bytes the decoder did not need (padding), check */
    while (!in->bad && in->left > 0) {
        ssize_t h;
        size_t hl;
        in->r.pos = in->r.len = 0;
        in->r.eof = false;
        h = rd_need(&in->r, 1);
        if (h <= 0) {
            in->bad = true;
            break;
        }
        hl = in->r.len < in->left ? in->r.len : (size_t)in->left;
        XXH3_64bits_update(d->xs, in->r.buf, hl);
        in->left -= hl;
    }
    pthread_mutex_lock(&d->mu);
    d->ok = !in->bad && d->zleft == 0 && XXH3_64bits_digest(d->xs) == d->psum;
    d->done = true;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* Releases the batch in use (if any) and waits for the next one; *zn = 0
 * when Z is exhausted (or its decoding stopped at damage). */
static const uint64_t *zdec_next(struct zdec *d, bool release, size_t *zn)
{
    const uint64_t *v = NULL;

    pthread_mutex_lock(&d->mu);
    if (release) {
        d->tail++;
        pthread_cond_broadcast(&d->cv);
    }
    while (d->tail == d->head && !d->done)
        pthread_cond_wait(&d->cv, &d->mu);
    *zn = 0;
    if (d->tail < d->head) {
        uint64_t slot = d->tail % ZB_RING;
        v = d->ring + slot * ZB_VALUES;
        *zn = d->cnt[slot];
    }
    pthread_mutex_unlock(&d->mu);
    return v;
}

/* The fresh signatures of a flush: F[0..nf) sorted, its bucket index, and
 * one bit per entry set once its first URL in A has been met. */
struct fset {
    const uint64_t *f;
    size_t nf;
    const uint32_t *idx;
    unsigned r;
    uint64_t *used;
};

/* Whether the record at A position idx with signature sig is emitted (see
 * a_scan). */
static inline bool a_pick(struct merc *m, const struct fset *fs, bool marks_ready, bool keep_marks, size_t idx,
                          uint64_t sig)
{
    long j;

    if (marks_ready)
        return m->amarks[idx / 64] >> (idx % 64) & 1;
    j = f_find(fs->f, fs->idx, fs->r, sig);
    if (j < 0 || (fs->used[j / 64] >> (j % 64) & 1))
        return false;
    fs->used[j / 64] |= (uint64_t)1 << (j % 64);
    if (keep_marks)
        m->amarks[idx / 64] |= (uint64_t)1 << (idx % 64);
    return true;
}

#define SCAN_BATCH 32

/* Scans the n records of A.<seg> (afd, named ap) in order and picks the URLs
 * to emit: the first one of each fresh signature. Without marks_ready that
 * is decided by looking the record's signature up in F (and remembered in
 * m->amarks by A position when keep_marks); with it, m->amarks decides.
 * Picked URLs go to EMITTED (lfd >= 0, appended at *log_len) or to the emit
 * callback (lfd < 0). Records already whole in the read buffer are taken
 * SCAN_BATCH at a time, so that F's lookups can be prefetched. */
static int a_scan(struct merc *m, int afd, const char *ap, size_t n, const struct fset *fs, bool marks_ready,
                  bool keep_marks, int lfd, uint64_t *log_len, uint64_t *emitted)
{
    struct rd r;
    size_t idx = 0, lb = 0;
    int g = 1;
    struct {
        const char *u;
        size_t len;
        uint64_t sig;
    } bt[SCAN_BATCH];

    if (lseek(afd, 0, SEEK_SET) != 0)
        return fail(m, SIEVE_EIO, true, "%s: %s", ap, strerror(errno));
    rd_init(&r, afd, m->rbuf, m->io);
    while (idx < n) {
        size_t cnt = 0;
        while (cnt < SCAN_BATCH && idx + cnt < n) {
            size_t avail = r.len - r.pos;
            uint32_t l;
            uint64_t h;
            if (avail < REC_HDR)
                break;
            l = get32(r.buf + r.pos);
            if (l > m->cfg.max_url_len || avail - REC_HDR < l)
                break;
            h = get64(r.buf + r.pos + 4);
            if (XXH3_64bits(r.buf + r.pos + REC_HDR, l) != h)
                break; /* rec_next below reports it */
            bt[cnt].u = (const char *)r.buf + r.pos + REC_HDR;
            bt[cnt].len = l;
            bt[cnt].sig = h;
            if (!marks_ready)
                __builtin_prefetch(&fs->idx[h >> (64 - fs->r)]);
            r.pos += REC_HDR + l;
            r.off += REC_HDR + l;
            cnt++;
        }
        if (cnt == 0) {
            /* the buffer's end (or damage): one record the careful way */
            g = rec_next(&r, m->cfg.max_url_len, &bt[0].u, &bt[0].len, &bt[0].sig);
            if (g != 1)
                break;
            cnt = 1;
        } else if (!marks_ready) {
            for (size_t j = 0; j < cnt; j++)
                __builtin_prefetch(&fs->f[fs->idx[bt[j].sig >> (64 - fs->r)]]);
        }
        for (size_t j = 0; j < cnt; j++, idx++) {
            const char *u = bt[j].u;
            size_t ul = bt[j].len;
            if (!a_pick(m, fs, marks_ready, keep_marks, idx, bt[j].sig))
                continue;
            if (lfd >= 0) {
                if (lb + REC_HDR + ul > m->io) {
                    if (pwrite_all(m, lfd, m->lbuf, lb, *log_len) != 0)
                        return fail(m, SIEVE_EIO, true, "%s/EMITTED: write failed: %s", m->dir, strerror(errno));
                    *log_len += lb;
                    lb = 0;
                }
                put32(m->lbuf + lb, (uint32_t)ul);
                put64(m->lbuf + lb + 4, bt[j].sig);
                memcpy(m->lbuf + lb + REC_HDR, u, ul);
                lb += REC_HDR + ul;
            } else {
                if (m->emit != NULL)
                    m->emit(m->emit_ctx, u, ul);
                (*emitted)++;
                crash_point();
            }
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

/* Flushes segment `seg` whose n signatures are sig[0..n) (sorted in place
 * unless `sorted` says the sealing adder did it: the array is the flush's
 * work space). A.<seg> holds the n URLs in the order added, each record
 * carrying its signature. Commits a new generation, then emits. Called from
 * the flush thread (or single-threaded at open/close). */
static int flush_segment(struct merc *m, uint64_t *sig, size_t n, uint64_t seg, bool sorted)
{
    struct mstate s;
    char zp[4096], zt[4096], ap[4096], lp[4096], oldz[4096];
    int zfd = -1, zofd = -1, afd = -1, lfd = -1, rc = SIEVE_OK;
    uint64_t zcount, plen, psum, distinct = 0, fresh = 0, t0 = now_ns(), emitted = 0;
    unsigned rb, r;
    struct br in;
    struct bw out;
    XXH3_state_t *xin = NULL, *xout = NULL;
    uint8_t hdr[Z_HDR];
    struct fset fs;

    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    pthread_mutex_lock(&m->mmu);
    s = m->ms;
    pthread_mutex_unlock(&m->mmu);

    /* 1-2: sort the signatures in place and count the distinct ones (the
     * first occurrence of each is found later, by the scan of A in order) */
    if (!sorted)
        msd_sort(sig, n, 56);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || sig[i] != sig[i - 1])
            distinct++;

    /* 3: merge with Z into Z'; the fresh signatures are compacted in place
     * to the front of sig (F) */
    rc = z_open(m, &s, &zfd, &zcount, &rb, &plen, &psum);
    if (rc != SIEVE_OK)
        goto out;
    xin = XXH3_createState();
    xout = XXH3_createState();
    if (xin == NULL || xout == NULL) {
        rc = SIEVE_ENOMEM;
        goto out;
    }
    XXH3_64bits_reset(xin);
    XXH3_64bits_reset(xout);
    if (path_of(m, zp, sizeof zp, "Z", (long long)s.gen) || path_of(m, zt, sizeof zt, "Z.tmp", -1) ||
        path_of(m, ap, sizeof ap, "A", (long long)seg) || path_of(m, lp, sizeof lp, "EMITTED", -1)) {
        rc = fail(m, SIEVE_EINVAL, true, "%s: path too long", m->dir);
        goto out;
    }
    memcpy(oldz, zp, sizeof zp);
    /* Z.tmp is usually the previous generation's file, renamed after its
     * last use: overwriting its pages costs less than a new file (the stale
     * tail is cut below, before the fsync) */
    zofd = open(zt, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (zofd < 0) {
        rc = fail(m, SIEVE_EIO, true, "%s: %s", zt, strerror(errno));
        goto out;
    }
    memset(hdr, 0, sizeof hdr);
    if (write_all(m, zofd, hdr, Z_HDR) != 0) {
        rc = fail(m, SIEVE_EIO, true, "%s: %s", zt, strerror(errno));
        goto out;
    }
    rd_init(&in.r, zfd, m->zin, m->io);
    in.left = plen;
    in.xs = xin;
    out.m = m;
    out.fd = zofd;
    out.buf = m->zout;
    out.cap = m->io;
    out.xs = xout;
    unsigned ob = rice_param(zcount + distinct);
    uint64_t oprev = 0, ocount = 0;
    uint64_t *ov = m->ovals;
    const uint64_t *zv = NULL;
    size_t zi = 0, zn = 0, on = 0;
    bool zdone = zcount == 0, zstarted = false;
    struct zdec zd;
    memset(&zd, 0, sizeof zd);
    pthread_mutex_init(&zd.mu, NULL);
    pthread_cond_init(&zd.cv, NULL);
    zd.in = &in;
    zd.xs = xin;
    zd.rb = rb;
    zd.zleft = zcount;
    zd.psum = psum;
    zd.ring = m->zring;
    zd.ok = zfd < 0;
    if (zfd >= 0) {
        if (pthread_create(&zd.thr_id, NULL, zdec_main, &zd) != 0) {
            pthread_mutex_destroy(&zd.mu);
            pthread_cond_destroy(&zd.cv);
            rc = fail(m, SIEVE_ENOMEM, true, "cannot start the decoder thread");
            goto out;
        }
        zstarted = true;
    }
    /* Z arrives decoded in batches; Z' is encoded in batches of VBATCH
     * values; the merge walks the arrays */
#define Z_FILL()                                                             \
    do {                                                                     \
        zv = zdec_next(&zd, zv != NULL, &zn);                                \
        zi = 0;                                                              \
        zdone = zn == 0;                                                     \
    } while (0)
#define Z_PUT(v)                                                             \
    do {                                                                     \
        ov[on++] = (v);                                                      \
        if (on == VBATCH) {                                                  \
            bw_batch(&out, ov, on, &oprev, ob);                              \
            ocount += on;                                                    \
            on = 0;                                                          \
        }                                                                    \
    } while (0)
    if (!zdone)
        Z_FILL();
    for (size_t i = 0; i < n; i++) {
        uint64_t k = sig[i];
        if (i > 0 && k == sig[i - 1])
            continue;
        while (!zdone) {
            while (zi < zn && zv[zi] < k)
                Z_PUT(zv[zi++]);
            if (zi < zn)
                break;
            Z_FILL();
        }
        if (!zdone && zv[zi] == k) {
            Z_PUT(k);
            zi++;
        } else {
            Z_PUT(k);
            sig[fresh++] = k; /* fresh <= i: never overwrites what is still to read */
        }
    }
    while (!zdone) {
        while (zi < zn)
            Z_PUT(zv[zi++]);
        Z_FILL();
    }
    bw_batch(&out, ov, on, &oprev, ob);
    ocount += on;
#undef Z_FILL
#undef Z_PUT
    if (zstarted)
        pthread_join(zd.thr_id, NULL);
    pthread_mutex_destroy(&zd.mu);
    pthread_cond_destroy(&zd.cv);
    if (!zd.ok) {
        rc = fail(m, SIEVE_ECORRUPT, true, "%s: truncated or corrupt signature file (checksum or count mismatch)", zp);
        goto out;
    }
    bw_finish(&out);
    memcpy(hdr, Z_MAGIC, 8);
    put64(hdr + 8, ocount);
    put32(hdr + 16, ob);
    put64(hdr + 24, out.total);
    put64(hdr + 32, XXH3_64bits_digest(xout));
    if (out.ioerr || ftruncate(zofd, (off_t)(Z_HDR + out.total)) != 0 || pwrite_all(m, zofd, hdr, Z_HDR, 0) != 0 ||
        do_fsync(m, zofd) != 0) {
        rc = fail(m, SIEVE_EIO, true, "%s: write failed: %s", zt, strerror(errno));
        goto out;
    }
    crash_point();

    /* the index of F, for the scans of A */
    r = digit_bits(fresh, m->rmax);
    f_index(sig, fresh, m->work, r);
    memset(m->used, 0, ((fresh + 63) / 64) * 8);
    fs.f = sig;
    fs.nf = fresh;
    fs.idx = m->work;
    fs.r = r;
    fs.used = m->used;

    /* A must hold exactly the n URLs whose signatures we sorted */
    afd = open(ap, O_RDONLY | O_CLOEXEC);
    if (afd < 0 && n > 0) {
        rc = fail(m, SIEVE_EIO, true, "%s: %s", ap, strerror(errno));
        goto out;
    }

    /* the durable output log: written before the commit, cut back on reopen */
    uint64_t log_len = s.log_len;
    bool marks_ready = false;
    if (m->cfg.emit_log && fresh > 0) {
        lfd = open(lp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (lfd < 0) {
            rc = fail(m, SIEVE_EIO, true, "%s: %s", lp, strerror(errno));
            goto out;
        }
        memset(m->amarks, 0, ((n + 63) / 64) * 8);
        rc = a_scan(m, afd, ap, n, &fs, false, true, lfd, &log_len, NULL);
        if (rc != SIEVE_OK)
            goto out;
        marks_ready = true;
        if (ftruncate(lfd, (off_t)log_len) != 0 || do_fsync(m, lfd) != 0) {
            rc = fail(m, SIEVE_EIO, true, "%s: %s", lp, strerror(errno));
            goto out;
        }
    }

    /* commit: Z' becomes Z.<gen+1>, then the manifest names it */
    struct mstate ns = s;
    ns.gen = s.gen + 1;
    ns.z_count = ocount;
    ns.z_bytes = Z_HDR + out.total;
    ns.first_seg = seg + 1;
    ns.log_len = log_len;
    if (path_of(m, zp, sizeof zp, "Z", (long long)ns.gen) || rename(zt, zp) != 0) {
        rc = fail(m, SIEVE_EIO, true, "%s: rename failed: %s", zt, strerror(errno));
        goto out;
    }
    crash_point();
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
    if (s.gen > 0) {
        /* kept as the next flush's Z.tmp (garbage at reopen), unless another
         * name links it (a checkpoint): the next flush would overwrite it */
        struct stat zs;
        if (stat(oldz, &zs) != 0 || zs.st_nlink > 1 || rename(oldz, zt) != 0)
            unlink(oldz);
    }

    /* 4: scan A in order, emit the first URL of each fresh signature */
    if (fresh > 0) {
        rc = a_scan(m, afd, ap, n, &fs, marks_ready, false, -1, NULL, &emitted);
        if (rc != SIEVE_OK)
            goto out;
    }
    unlink(ap);

out:
    if (zfd >= 0)
        close(zfd);
    if (zofd >= 0)
        close(zofd);
    if (afd >= 0)
        close(afd);
    if (lfd >= 0)
        close(lfd);
    XXH3_freeState(xin);
    XXH3_freeState(xout);
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
            rc = flush_segment(m, b->sig, b->n, b->seg, b->sorted);
        pthread_mutex_lock(&m->mu);
        if (rc != SIEVE_OK && m->err == 0)
            m->err = rc;
        if (b->fd >= 0)
            close(b->fd);
        b->fd = -1;
        b->n = 0;
        if (rc == SIEVE_OK)
            m->done_upto = b->seg + 1;
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

/* Opens a fresh segment file for the current buffer. Caller holds mu. */
static int seg_start(struct merc *m)
{
    char p[4096];
    struct buf *b = &m->b[m->cur];

    b->seg = m->next_seg++;
    b->n = 0;
    b->sorted = false;
    m->cur_len = 0;
    if (path_of(m, p, sizeof p, "A", (long long)b->seg))
        return fail(m, SIEVE_EINVAL, true, "%s: path too long", m->dir);
    b->fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (b->fd < 0)
        return fail(m, SIEVE_EIO, true, "%s: %s", p, strerror(errno));
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
    if (m->pending >= 0) {
        m->st.add_waits++;
        if (!b->sorted) {
            /* the flush thread is busy with the other buffer: sort this one
             * now, outside the lock, rather than wait idle (the flush then
             * skips its sort). Adds wait for `sealing`; nothing else
             * touches b->sig. */
            pthread_mutex_unlock(&m->mu);
            msd_sort(b->sig, b->n, 56);
            pthread_mutex_lock(&m->mu);
            b->sorted = true;
        }
    }
    while (m->pending >= 0 && m->err == 0)
        pthread_cond_wait(&m->cv_free, &m->mu);
    rc = m->err != 0 ? SIEVE_ECLOSED : abuf_drain(m);
    if (rc == SIEVE_OK) {
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

static int add_locked(struct merc *m, const char *url, size_t len, uint64_t h)
{
    struct buf *b;
    int rc;

    /* A seal may be sorting the current buffer outside the lock (a forced
     * flush seals a buffer that is not full while the other one is still
     * being flushed): an add now would leave it unsorted yet marked sorted. */
    while (m->sealing && m->err == 0)
        pthread_cond_wait(&m->cv_free, &m->mu);
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
    while (m->b[m->cur].n == m->cap) {
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
    put64(m->abuf + m->alen + 4, h);
    memcpy(m->abuf + m->alen + REC_HDR, url, len);
    m->alen += REC_HDR + len;
    m->cur_len += REC_HDR + len;
    b->sig[b->n++] = h;
    crash_point();
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
    if (do_fsync(m, m->b[m->cur].fd) != 0 ||
        (m->pending >= 0 && m->b[m->pending].fd >= 0 && do_fsync(m, m->b[m->pending].fd) != 0)) {
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
    /* MANIFEST is replaced by rename and Z.<gen> is never rewritten while
     * another name links it (flush_segment): both can be linked. */
    if (path_of(m, src, sizeof src, "MANIFEST", -1) ||
        snprintf(dst, sizeof dst, "%s/MANIFEST", dir) >= (int)sizeof dst ||
        sieve_checkpoint_file(src, dst, SIEVE_WHOLE_FILE) != 0) {
        rc = fail(m, SIEVE_EIO, false, "checkpoint of %s/MANIFEST into %s: %s", m->dir, dir, strerror(errno));
        goto out;
    }
    if (s.gen > 0 && (path_of(m, src, sizeof src, "Z", (long long)s.gen) ||
                      snprintf(dst, sizeof dst, "%s/Z.%llu", dir, (unsigned long long)s.gen) >= (int)sizeof dst ||
                      sieve_checkpoint_file(src, dst, SIEVE_WHOLE_FILE) != 0)) {
        rc = fail(m, SIEVE_EIO, false, "checkpoint of %s into %s: %s", src, dir, strerror(errno));
        goto out;
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
        free(m->b[i].sig);
    }
    free(m->abuf);
    free(m->cache);
    free(m->work);
    free(m->zring);
    free(m->used);
    free(m->amarks);
    free(m->rbuf);
    free(m->zin);
    free(m->zout);
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
        /* the empty current segment is not needed any more */
        if (m->b[m->cur].n == 0 && m->err == 0) {
            char p[4096];
            if (path_of(m, p, sizeof p, "A", (long long)m->b[m->cur].seg) == 0)
                unlink(p);
        }
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
        size_t ul, cnt = 0;
        uint64_t good = 0, sig;
        int g;

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
        rd_init(&r, fd, m->rbuf, m->io);
        while ((g = rec_next(&r, m->cfg.max_url_len, &u, &ul, &sig)) == 1) {
            if (cnt == m->cap)
                break;
            m->b[0].sig[cnt++] = sig;
            good = r.off;
        }
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
        if (cnt == 0) {
            unlink(p);
            if (stop)
                continue;
            break;
        }
        rc = flush_segment(m, m->b[0].sig, cnt, seg, false);
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
    /* the budget: 5 I/O buffers, a cache of 1/16, the ring of the Z
     * decoder, the rest for S, S2 (8
     * bytes per slot each: the flush sorts S in place), F's bucket index
     * (at most 1 byte per slot) and two bitmaps: 17.25 bytes per slot */
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
    fixed = 5 * m->io + ce * 8 + (size_t)ZB_RING * ZB_VALUES * 8 + sizeof *m;
    if (fixed + 64 * 33 > mem) {
        rc = fail(m, SIEVE_EINVAL, false, "memory %zu too small (needs at least %zu for I/O buffers and cache)", mem,
                  fixed + 64 * 33);
        goto out;
    }
    rest = mem - fixed;
    m->cap = rest * 4 / 69;
    if (m->cfg.buffer_urls > 0)
        m->cap = m->cfg.buffer_urls;
    if (m->cap > UINT32_MAX / 2)
        m->cap = UINT32_MAX / 2;
    m->rmax = 1;
    while (m->rmax < 30 && ((size_t)8 << m->rmax) <= m->cap)
        m->rmax++;
    m->cache_mask = ce - 1;
    m->st.buffer_urls = m->cap;
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
    m->b[0].sig = malloc(m->cap * sizeof(uint64_t));
    m->b[1].sig = malloc(m->cap * sizeof(uint64_t));
    m->work = malloc((((size_t)1 << m->rmax) + 1) * sizeof(uint32_t));
    m->used = malloc(((m->cap + 63) / 64) * 8);
    m->zring = malloc((size_t)ZB_RING * ZB_VALUES * sizeof(uint64_t));
    m->amarks = malloc(((m->cap + 63) / 64) * 8);
    m->cache = calloc(ce, sizeof(uint64_t));
    m->abuf = malloc(m->io);
    m->rbuf = malloc(m->io);
    m->zin = malloc(m->io);
    m->zout = malloc(m->io);
    m->lbuf = malloc(m->io);
    if (!m->b[0].sig || !m->b[1].sig || !m->work || !m->zring || !m->used || !m->amarks || !m->cache || !m->abuf || !m->rbuf || !m->zin ||
        !m->zout || !m->lbuf) {
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
    if (mr == 1) {
        memset(&m->ms, 0, sizeof m->ms);
    } else if (m->ms.gen > 0) {
        int fd;
        uint64_t c, pl, ps;
        unsigned rb;
        rc = z_open(m, &m->ms, &fd, &c, &rb, &pl, &ps);
        if (fd >= 0)
            close(fd);
        if (rc != SIEVE_OK)
            goto out;
    }
    /* leftovers of an interrupted flush: a Z' never committed, a newer Z */
    if (path_of(m, p, sizeof p, "Z.tmp", -1) == 0)
        unlink(p);
    if (path_of(m, p, sizeof p, "Z", (long long)(m->ms.gen + 1)) == 0)
        unlink(p);
    if (m->ms.gen > 0 && path_of(m, p, sizeof p, "Z", (long long)(m->ms.gen - 1)) == 0)
        unlink(p);
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
    while (r.off < s.log_len && (g = rec_next(&r, cap - 64, &u, &ul, &sig)) == 1)
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
