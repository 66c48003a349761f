/*
 * offline.c: the "offline" sieve (sieve.h; the notes' 2.4): sorted files
 * only, constant memory, emission in batches.
 *
 * Files in cfg->dir:
 *   A        the URLs added since the last merge, in discovery order (records
 *            as Mercator's A: u32 length, u32 XXH32 of the bytes, the bytes);
 *            a URL's position is its record's ordinal in A.
 *   R.<k>    sorted runs: every r adds (r = cfg->buffer_urls, or from
 *            cfg->memory) the (signature, position) pairs of the last r URLs
 *            are sorted by (signature, position), deduplicated (the first
 *            position kept) and written (16-byte host-order records).
 *   Z.<gen>  the sorted distinct XXH3-64 signatures of every URL ever merged:
 *            32-byte header {magic "MSIEVEOZ", u64 count, u64 XXH64(payload),
 *            u64 XXH64(header so far)} then count u64 little-endian.
 *   STATE    the committed generation: {magic "MSIEVEO1", u64 gen, u64
 *            count, u64 XXH64 of the 24 bytes before}; replaced atomically.
 *
 * Merge (when A holds RUNS_PER_MERGE runs, or at sieve_flush / sieve_close):
 * the last partial run is written; the runs are merged (k-way, smallest
 * (signature, position) first, so the first copy of a signature carries its
 * first position) and that sorted, deduplicated stream A' is merged
 * sequentially with Z into Z.<gen+1>: signatures of A' absent from Z are
 * written to Z' and their positions marked in a bitmap over A's positions
 * (the notes' "list of positions", kept sorted for free). Z' is fsynced,
 * STATE commits it, then A is scanned in order and the marked URLs are
 * emitted: the original discovery order restored. A and the runs are then
 * emptied and the old Z removed.
 *
 * Crashes: the emit runs only after the commit. An A found at open (a crash
 * before or after a commit) is merged again at once: runs are rebuilt from
 * A; URLs whose signatures a commit already put in Z are not emitted again.
 * A damaged or torn record ends A (the tail from it is cut). sieve_sync
 * makes A durable (write + fdatasync). Tests: SIEVE_CRASH_POINT=N in the
 * environment at open raises SIGKILL at the Nth crash point (as Mercator).
 *
 * Memory: r pairs of 16 bytes, a bitmap of RUNS_PER_MERGE * r bits, and
 * RUNS_PER_MERGE + 4 I/O buffers, all inside cfg->memory.
 */
#include "sieve/sieve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "sieve/sieve_files.h"

#define RUNS_PER_MERGE 8
#define Z_MAGIC "MSIEVEOZ"
#define M_MAGIC "MSIEVEO1"
#define Z_HDR 32
#define M_SIZE 32
#define REC_HDR 8

struct pair {
    uint64_t sig;
    uint64_t pos;
};

/* A buffered sequential reader of one file. */
struct rdr {
    int fd;
    uint8_t *buf;
    size_t cap, pos, len;
    bool ioerr;
};

struct offline {
    char *dir;
    struct sieve_config cfg;
    sieve_emit_fn emit;
    void *emit_ctx;
    int lock_fd;
    pthread_mutex_t mu;
    size_t io;          /* bytes per I/O buffer */
    size_t run_cap;     /* r */
    uint64_t a_max;     /* URLs in A that trigger a merge */
    /* A */
    int a_fd;
    uint8_t *abuf;      /* write buffer of A */
    size_t alen;
    uint64_t a_count;   /* records in A (written or buffered) */
    /* runs */
    struct pair *run;
    size_t run_n;
    unsigned nruns;
    /* committed state */
    uint64_t gen, z_count, z_bytes;
    /* merge work memory */
    uint64_t *marks;
    uint8_t *rbuf[RUNS_PER_MERGE + 1], *zin, *zout;
    int err;
    struct sieve_stats st;
    char msg[512];
    char lastmsg[512];
};

static int off_fail(struct offline *o, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, sizeof o->msg, fmt, ap);
    va_end(ap);
    return code;
}

static int path_of(const struct offline *o, char *out, size_t len, const char *name, long long num)
{
    int r = num >= 0 ? snprintf(out, len, "%s/%s.%lld", o->dir, name, num) : snprintf(out, len, "%s/%s", o->dir, name);
    return (r < 0 || (size_t)r >= len) ? -1 : 0;
}

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
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------- buffered reading ---------------- */

static void rdr_init(struct rdr *r, int fd, uint8_t *buf, size_t cap)
{
    r->fd = fd;
    r->buf = buf;
    r->cap = cap;
    r->pos = r->len = 0;
    r->ioerr = false;
}

/* Makes k bytes available at buf+pos if the file has them; returns how many are. */
static size_t rdr_need(struct rdr *r, size_t k)
{
    if (r->len - r->pos >= k)
        return k;
    memmove(r->buf, r->buf + r->pos, r->len - r->pos);
    r->len -= r->pos;
    r->pos = 0;
    while (r->len < k && r->len < r->cap) {
        ssize_t g = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (g < 0) {
            if (errno == EINTR)
                continue;
            r->ioerr = true;
            break;
        }
        if (g == 0)
            break;
        r->len += (size_t)g;
    }
    return r->len - r->pos;
}

/* Next record of A: 1 = got one, 0 = clean end, -1 = torn/corrupt, -2 = I/O error. */
static int rec_next(struct rdr *r, size_t maxlen, const char **url, size_t *len)
{
    size_t have = rdr_need(r, REC_HDR);
    uint32_t l, h;

    if (r->ioerr)
        return -2;
    if (have == 0)
        return 0;
    if (have < REC_HDR)
        return -1;
    l = sieve_get32(r->buf + r->pos);
    h = sieve_get32(r->buf + r->pos + 4);
    if (l > maxlen || l + REC_HDR > r->cap)
        return -1;
    have = rdr_need(r, REC_HDR + l);
    if (r->ioerr)
        return -2;
    if (have < REC_HDR + l || XXH32(r->buf + r->pos + REC_HDR, l, 0) != h)
        return -1;
    *url = (const char *)r->buf + r->pos + REC_HDR;
    *len = l;
    r->pos += REC_HDR + l;
    return 1;
}

/* ---------------- A and the runs ---------------- */

static int a_drain(struct offline *o)
{
    if (o->alen > 0 && sieve_write_full(o->a_fd, o->abuf, o->alen) != 0)
        return off_fail(o, SIEVE_EIO, "%s/A: write: %s", o->dir, strerror(errno));
    o->alen = 0;
    crash_point();
    return SIEVE_OK;
}

static int pair_cmp(const void *x, const void *y)
{
    const struct pair *a = x, *b = y;
    if (a->sig != b->sig)
        return a->sig < b->sig ? -1 : 1;
    return a->pos < b->pos ? -1 : (a->pos > b->pos);
}

/* Sorts the in-memory run, keeps the first position per signature, writes R.<nruns>. */
static int run_write(struct offline *o)
{
    char p[4096];
    size_t k = 0;
    int fd, rc = SIEVE_OK;

    if (o->run_n == 0)
        return SIEVE_OK;
    qsort(o->run, o->run_n, sizeof *o->run, pair_cmp);
    for (size_t i = 0; i < o->run_n; i++)
        if (k == 0 || o->run[i].sig != o->run[k - 1].sig)
            o->run[k++] = o->run[i];
    if (path_of(o, p, sizeof p, "R", o->nruns))
        return off_fail(o, SIEVE_EINVAL, "%s: path too long", o->dir);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return off_fail(o, SIEVE_EIO, "%s: %s", p, strerror(errno));
    if (sieve_write_full(fd, o->run, k * sizeof *o->run) != 0)
        rc = off_fail(o, SIEVE_EIO, "%s: write: %s", p, strerror(errno));
    close(fd);
    o->run_n = 0;
    o->nruns++;
    crash_point();
    return rc;
}

/* Appends the pair for the URL at position pos (already in A) to the runs. */
static int run_push(struct offline *o, const char *url, size_t len, uint64_t pos)
{
    o->run[o->run_n].sig = XXH3_64bits(url, len);
    o->run[o->run_n].pos = pos;
    o->run_n++;
    return o->run_n == o->run_cap ? run_write(o) : SIEVE_OK;
}

/* ---------------- the merge ---------------- */

static int manifest_write(struct offline *o, uint64_t gen, uint64_t count)
{
    uint8_t b[M_SIZE];
    memcpy(b, M_MAGIC, 8);
    sieve_put64(b + 8, gen);
    sieve_put64(b + 16, count);
    sieve_put64(b + 24, XXH64(b, 24, 0));
    if (sieve_file_replace(o->dir, "STATE", b, sizeof b, NULL, 0, o->cfg.no_fsync) != 0)
        return off_fail(o, SIEVE_EIO, "%s/STATE: %s", o->dir, strerror(errno));
    return SIEVE_OK;
}

struct zw {
    int fd;
    uint8_t *buf;
    size_t cap, len;
    XXH64_state_t *xs;
    uint64_t count;
    bool ioerr;
};

static void zw_put(struct zw *w, uint64_t sig)
{
    if (w->len + 8 > w->cap) {
        XXH64_update(w->xs, w->buf, w->len);
        if (sieve_write_full(w->fd, w->buf, w->len) != 0)
            w->ioerr = true;
        w->len = 0;
    }
    sieve_put64(w->buf + w->len, sig);
    w->len += 8;
    w->count++;
}

/* Opens Z.<gen> and checks its header; *fd = -1 when gen is 0 (no Z yet). */
static int z_open(struct offline *o, uint64_t gen, uint64_t want_count, int *fd, uint64_t *sum)
{
    char p[4096];
    uint8_t h[Z_HDR];
    ssize_t g;

    *fd = -1;
    if (gen == 0)
        return SIEVE_OK;
    if (path_of(o, p, sizeof p, "Z", (long long)gen))
        return off_fail(o, SIEVE_EINVAL, "%s: path too long", o->dir);
    *fd = open(p, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return off_fail(o, SIEVE_ECORRUPT, "%s: committed signature file missing: %s", p, strerror(errno));
    g = read(*fd, h, sizeof h);
    if (g != Z_HDR || memcmp(h, Z_MAGIC, 8) != 0 || sieve_get64(h + 24) != XXH64(h, 24, 0) ||
        sieve_get64(h + 8) != want_count)
        return off_fail(o, SIEVE_ECORRUPT, "%s: truncated or corrupt header", p);
    *sum = sieve_get64(h + 16);
    return SIEVE_OK;
}

/* Merges the runs with Z into Z.<gen+1>, marking the new positions; commits. */
static int merge_commit(struct offline *o)
{
    struct rdr rr[RUNS_PER_MERGE + 1], zr;
    int rfd[RUNS_PER_MERGE + 1];
    bool rlive[RUNS_PER_MERGE + 1];
    struct pair head[RUNS_PER_MERGE + 1];
    struct zw w = {.fd = -1};
    char p[4096], zp[4096] = "";
    uint8_t h[Z_HDR];
    uint64_t zsum = 0, zleft = 0, zcur = 0, last = 0;
    bool zhave = false, have_last = false;
    XXH64_state_t *zin_xs = NULL;
    int zfd = -1, rc;
    unsigned n = o->nruns;

    for (unsigned i = 0; i < n; i++)
        rfd[i] = -1;
    memset(o->marks, 0, (size_t)((o->a_max + 63) / 64) * 8);
    w.xs = XXH64_createState();
    zin_xs = XXH64_createState();
    if (w.xs == NULL || zin_xs == NULL) {
        rc = off_fail(o, SIEVE_ENOMEM, "out of memory");
        goto out;
    }
    XXH64_reset(w.xs, 0);
    XXH64_reset(zin_xs, 0);
    for (unsigned i = 0; i < n; i++) {
        if (path_of(o, p, sizeof p, "R", i)) {
            rc = off_fail(o, SIEVE_EINVAL, "%s: path too long", o->dir);
            goto out;
        }
        rfd[i] = open(p, O_RDONLY | O_CLOEXEC);
        if (rfd[i] < 0) {
            rc = off_fail(o, SIEVE_EIO, "%s: %s", p, strerror(errno));
            goto out;
        }
        rdr_init(&rr[i], rfd[i], o->rbuf[i], o->io);
        rlive[i] = false;
        if (rdr_need(&rr[i], sizeof(struct pair)) >= sizeof(struct pair)) {
            memcpy(&head[i], rr[i].buf + rr[i].pos, sizeof head[i]);
            rr[i].pos += sizeof(struct pair);
            rlive[i] = true;
        }
    }
    rc = z_open(o, o->gen, o->z_count, &zfd, &zsum);
    if (rc != SIEVE_OK)
        goto out;
    zleft = o->z_count;
    if (zfd >= 0)
        rdr_init(&zr, zfd, o->zin, o->io);
    if (path_of(o, zp, sizeof zp, "Z", (long long)(o->gen + 1))) {
        rc = off_fail(o, SIEVE_EINVAL, "%s: path too long", o->dir);
        goto out;
    }
    w.fd = open(zp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w.fd < 0) {
        rc = off_fail(o, SIEVE_EIO, "%s: %s", zp, strerror(errno));
        goto out;
    }
    w.buf = o->zout;
    w.cap = o->io;
    memset(h, 0, sizeof h);
    if (sieve_write_full(w.fd, h, sizeof h) != 0) {
        rc = off_fail(o, SIEVE_EIO, "%s: write: %s", zp, strerror(errno));
        goto out;
    }
#define Z_NEXT()                                                                 \
    do {                                                                         \
        zhave = false;                                                           \
        if (zleft > 0 && rdr_need(&zr, 8) >= 8) {                                \
            XXH64_update(zin_xs, zr.buf + zr.pos, 8);                            \
            zcur = sieve_get64(zr.buf + zr.pos);                                 \
            zr.pos += 8;                                                         \
            zleft--;                                                             \
            zhave = true;                                                        \
        }                                                                        \
    } while (0)
    if (zfd >= 0)
        Z_NEXT();
    for (;;) {
        int best = -1;
        struct pair cur;
        for (unsigned i = 0; i < n; i++)
            if (rlive[i] && (best < 0 || pair_cmp(&head[i], &head[best]) < 0))
                best = (int)i;
        if (best < 0)
            break;
        cur = head[best];
        if (rdr_need(&rr[best], sizeof(struct pair)) >= sizeof(struct pair)) {
            memcpy(&head[best], rr[best].buf + rr[best].pos, sizeof head[best]);
            rr[best].pos += sizeof(struct pair);
        } else {
            rlive[best] = false;
            if (rr[best].ioerr) {
                rc = off_fail(o, SIEVE_EIO, "%s/R.%d: read error", o->dir, best);
                goto out;
            }
        }
        if (have_last && cur.sig == last)
            continue; /* a later copy: the first position came first */
        have_last = true;
        last = cur.sig;
        while (zhave && zcur < cur.sig) {
            zw_put(&w, zcur);
            Z_NEXT();
        }
        if (zhave && zcur == cur.sig)
            continue; /* seen in an earlier merge */
        if (cur.pos >= o->a_count) {
            rc = off_fail(o, SIEVE_ECORRUPT, "%s/R.%d: position out of range", o->dir, best);
            goto out;
        }
        o->marks[cur.pos >> 6] |= 1ull << (cur.pos & 63);
        zw_put(&w, cur.sig);
    }
    while (zhave) {
        zw_put(&w, zcur);
        Z_NEXT();
    }
#undef Z_NEXT
    if (zfd >= 0 && (zleft != 0 || zr.ioerr || XXH64_digest(zin_xs) != zsum)) {
        rc = off_fail(o, SIEVE_ECORRUPT, "%s/Z.%llu: truncated or corrupt", o->dir, (unsigned long long)o->gen);
        goto out;
    }
    XXH64_update(w.xs, w.buf, w.len);
    if (sieve_write_full(w.fd, w.buf, w.len) != 0)
        w.ioerr = true;
    memcpy(h, Z_MAGIC, 8);
    sieve_put64(h + 8, w.count);
    sieve_put64(h + 16, XXH64_digest(w.xs));
    sieve_put64(h + 24, XXH64(h, 24, 0));
    if (w.ioerr || pwrite(w.fd, h, sizeof h, 0) != (ssize_t)sizeof h ||
        (!o->cfg.no_fsync && fdatasync(w.fd) != 0)) {
        rc = off_fail(o, SIEVE_EIO, "%s: write: %s", zp, strerror(errno));
        goto out;
    }
    crash_point();
    rc = manifest_write(o, o->gen + 1, w.count);
    if (rc != SIEVE_OK)
        goto out;
    crash_point();
    if (o->gen > 0 && path_of(o, p, sizeof p, "Z", (long long)o->gen) == 0)
        unlink(p);
    o->gen++;
    o->z_count = w.count;
    o->z_bytes = Z_HDR + 8 * w.count;
out:
    for (unsigned i = 0; i < n; i++)
        if (rfd[i] >= 0)
            close(rfd[i]);
    if (zfd >= 0)
        close(zfd);
    if (w.fd >= 0)
        close(w.fd);
    if (rc != SIEVE_OK && zp[0] != '\0')
        unlink(zp);
    XXH64_freeState(w.xs);
    XXH64_freeState(zin_xs);
    return rc;
}

/* Scans A in order and emits the marked records; then empties A and the runs. */
static int emit_marked(struct offline *o)
{
    struct rdr r;
    const char *u;
    size_t ul;
    uint64_t pos = 0;
    char p[4096];
    int g;

    if (lseek(o->a_fd, 0, SEEK_SET) < 0)
        return off_fail(o, SIEVE_EIO, "%s/A: seek: %s", o->dir, strerror(errno));
    rdr_init(&r, o->a_fd, o->rbuf[0], o->io);
    while (pos < o->a_count && (g = rec_next(&r, o->cfg.max_url_len, &u, &ul)) == 1) {
        if (o->marks[pos >> 6] >> (pos & 63) & 1) {
            crash_point();
            o->st.emitted++;
            if (o->emit != NULL)
                o->emit(o->emit_ctx, u, ul);
        }
        pos++;
    }
    if (pos != o->a_count)
        return off_fail(o, SIEVE_EIO, "%s/A: cannot read back record %llu", o->dir, (unsigned long long)pos);
    crash_point();
    if (ftruncate(o->a_fd, 0) != 0 || lseek(o->a_fd, 0, SEEK_SET) < 0)
        return off_fail(o, SIEVE_EIO, "%s/A: truncate: %s", o->dir, strerror(errno));
    crash_point();
    for (unsigned i = 0; i < o->nruns; i++)
        if (path_of(o, p, sizeof p, "R", i) == 0)
            unlink(p);
    o->nruns = 0;
    o->a_count = 0;
    return SIEVE_OK;
}

/* The merge of 2.4: runs + Z -> Z', commit, emit in discovery order. */
static int merge_locked(struct offline *o)
{
    uint64_t t0 = now_ns(), dt;
    int rc;

    if (o->a_count == 0)
        return SIEVE_OK;
    rc = a_drain(o);
    if (rc == SIEVE_OK)
        rc = run_write(o);
    if (rc == SIEVE_OK)
        rc = merge_commit(o);
    if (rc == SIEVE_OK)
        rc = emit_marked(o);
    if (rc != SIEVE_OK) {
        if (o->err == 0)
            o->err = rc;
        return rc;
    }
    dt = now_ns() - t0;
    o->st.flushes++;
    o->st.flush_ns_total += dt;
    if (dt > o->st.flush_ns_max)
        o->st.flush_ns_max = dt;
    return SIEVE_OK;
}

/* ---------------- operations ---------------- */

static int add_locked(struct offline *o, const char *url, size_t len)
{
    int rc;

    if (o->err != 0)
        return SIEVE_ECLOSED;
    if (len > o->cfg.max_url_len)
        return off_fail(o, SIEVE_ETOOLONG, "URL of %zu bytes (max %zu)", len, o->cfg.max_url_len);
    o->st.added++;
    if (o->alen + REC_HDR + len > o->io) {
        rc = a_drain(o);
        if (rc != SIEVE_OK)
            goto fatal;
    }
    sieve_put32(o->abuf + o->alen, (uint32_t)len);
    sieve_put32(o->abuf + o->alen + 4, XXH32(url, len, 0));
    memcpy(o->abuf + o->alen + REC_HDR, url, len);
    o->alen += REC_HDR + len;
    rc = run_push(o, url, len, o->a_count);
    o->a_count++;
    if (rc != SIEVE_OK)
        goto fatal;
    if (o->a_count == o->a_max)
        return merge_locked(o);
    return SIEVE_OK;
fatal:
    if (o->err == 0)
        o->err = rc;
    return rc;
}

static int off_add(void *impl, const char *url, size_t len)
{
    struct offline *o = impl;
    int rc;
    pthread_mutex_lock(&o->mu);
    rc = add_locked(o, url, len);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

static int off_add_batch(void *impl, const char *const *urls, const size_t *lens, size_t n)
{
    struct offline *o = impl;
    int rc = SIEVE_OK;
    pthread_mutex_lock(&o->mu);
    for (size_t i = 0; i < n && rc == SIEVE_OK; i++)
        rc = add_locked(o, urls[i], lens[i]);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

static int off_flush(void *impl)
{
    struct offline *o = impl;
    int rc;
    pthread_mutex_lock(&o->mu);
    rc = o->err != 0 ? SIEVE_ECLOSED : merge_locked(o);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

static int sync_locked(struct offline *o)
{
    int rc;
    if (o->err != 0)
        return SIEVE_ECLOSED;
    rc = a_drain(o);
    if (rc == SIEVE_OK && !o->cfg.no_fsync && fdatasync(o->a_fd) != 0)
        rc = off_fail(o, SIEVE_EIO, "%s/A: fdatasync: %s", o->dir, strerror(errno));
    return rc;
}

static int off_sync(void *impl)
{
    struct offline *o = impl;
    int rc;
    pthread_mutex_lock(&o->mu);
    rc = sync_locked(o);
    pthread_mutex_unlock(&o->mu);
    return rc;
}

/* After a merge A is empty and the runs gone: the state is STATE (replaced
 * by rename) and Z.<gen> (written once, removed when superseded), both
 * linkable. */
static int off_checkpoint(void *impl, const char *dir)
{
    struct offline *o = impl;
    char src[4096], dst[4096];
    int rc;
    pthread_mutex_lock(&o->mu);
    rc = o->err != 0 ? SIEVE_ECLOSED : merge_locked(o);
    if (rc == SIEVE_OK)
        rc = sync_locked(o);
    if (rc == SIEVE_OK && o->gen > 0 &&
        (snprintf(src, sizeof src, "%s/STATE", o->dir) >= (int)sizeof src ||
         snprintf(dst, sizeof dst, "%s/STATE", dir) >= (int)sizeof dst ||
         sieve_checkpoint_file(src, dst, SIEVE_WHOLE_FILE) != 0 ||
         path_of(o, src, sizeof src, "Z", (long long)o->gen) ||
         snprintf(dst, sizeof dst, "%s/Z.%llu", dir, (unsigned long long)o->gen) >= (int)sizeof dst ||
         sieve_checkpoint_file(src, dst, SIEVE_WHOLE_FILE) != 0))
        rc = off_fail(o, SIEVE_EIO, "checkpoint of %s into %s: %s", o->dir, dir, strerror(errno));
    pthread_mutex_unlock(&o->mu);
    return rc;
}

static void off_free(struct offline *o)
{
    if (o == NULL)
        return;
    if (o->a_fd >= 0)
        close(o->a_fd);
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    for (int i = 0; i <= RUNS_PER_MERGE; i++)
        free(o->rbuf[i]);
    free(o->zin);
    free(o->zout);
    free(o->abuf);
    free(o->run);
    free(o->marks);
    free(o->dir);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

static int off_close(void *impl)
{
    struct offline *o = impl;
    int rc = o->err != 0 ? o->err : merge_locked(o);
    off_free(o);
    return rc;
}

static void off_stats(void *impl, struct sieve_stats *out)
{
    struct offline *o = impl;
    pthread_mutex_lock(&o->mu);
    *out = o->st;
    out->z_count = o->z_count;
    out->z_bytes = o->z_bytes;
    out->buffer_urls = o->run_cap;
    pthread_mutex_unlock(&o->mu);
}

static const char *off_last_error(void *impl)
{
    struct offline *o = impl;
    pthread_mutex_lock(&o->mu);
    memcpy(o->lastmsg, o->msg, sizeof o->lastmsg);
    pthread_mutex_unlock(&o->mu);
    return o->lastmsg;
}

/* Reads STATE; removes files a crash may have left (runs, uncommitted Z). */
static int state_load(struct offline *o)
{
    char p[4096];
    uint8_t b[M_SIZE];
    DIR *d;
    struct dirent *e;
    int r;

    if (path_of(o, p, sizeof p, "STATE", -1))
        return off_fail(o, SIEVE_EINVAL, "%s: path too long", o->dir);
    r = sieve_file_read_at(p, b, sizeof b, 0);
    if (r == -2)
        return off_fail(o, SIEVE_EIO, "%s: %s", p, strerror(errno));
    if (r == -1 || (r == 0 && (memcmp(b, M_MAGIC, 8) != 0 || sieve_get64(b + 24) != XXH64(b, 24, 0))))
        return off_fail(o, SIEVE_ECORRUPT, "%s: truncated or corrupt", p);
    if (r == 0) {
        o->gen = sieve_get64(b + 8);
        o->z_count = sieve_get64(b + 16);
        o->z_bytes = o->gen > 0 ? Z_HDR + 8 * o->z_count : 0;
    }
    d = opendir(o->dir);
    if (d == NULL)
        return off_fail(o, SIEVE_EIO, "%s: %s", o->dir, strerror(errno));
    while ((e = readdir(d)) != NULL) {
        char want[64];
        snprintf(want, sizeof want, "Z.%llu", (unsigned long long)o->gen);
        if ((strncmp(e->d_name, "R.", 2) == 0 || strncmp(e->d_name, "Z.", 2) == 0) && strcmp(e->d_name, want) != 0 &&
            path_of(o, p, sizeof p, e->d_name, -1) == 0)
            unlink(p);
    }
    closedir(d);
    return SIEVE_OK;
}

/* Re-reads an A left by a crash, rebuilding its runs (cutting a torn tail).
 * An A written under a smaller configuration may hold more than a_max
 * records: the runs and the bitmap are then enlarged for this one merge. */
static int a_recover(struct offline *o)
{
    struct rdr r;
    const char *u;
    size_t ul;
    off_t good = 0;
    uint64_t count = 0;
    int g, rc = SIEVE_OK;

    rdr_init(&r, o->a_fd, o->rbuf[0], o->io);
    while ((g = rec_next(&r, o->cfg.max_url_len, &u, &ul)) == 1) {
        count++;
        good += (off_t)(REC_HDR + ul);
    }
    if (g == -2)
        return off_fail(o, SIEVE_EIO, "%s/A: read error", o->dir);
    if (ftruncate(o->a_fd, good) != 0 || lseek(o->a_fd, 0, SEEK_SET) < 0)
        return off_fail(o, SIEVE_EIO, "%s/A: %s", o->dir, strerror(errno));
    if (count > o->a_max) {
        size_t cap = (size_t)((count + RUNS_PER_MERGE - 1) / RUNS_PER_MERGE);
        struct pair *run = realloc(o->run, cap * sizeof *run);
        uint64_t *marks;
        if (run == NULL)
            return off_fail(o, SIEVE_ENOMEM, "out of memory recovering %s/A", o->dir);
        o->run = run;
        marks = realloc(o->marks, (size_t)((count + 63) / 64) * 8);
        if (marks == NULL)
            return off_fail(o, SIEVE_ENOMEM, "out of memory recovering %s/A", o->dir);
        o->marks = marks;
        o->run_cap = cap;
        o->a_max = (uint64_t)cap * RUNS_PER_MERGE;
    }
    rdr_init(&r, o->a_fd, o->rbuf[0], o->io);
    while (o->a_count < count && (g = rec_next(&r, o->cfg.max_url_len, &u, &ul)) == 1) {
        rc = run_push(o, u, ul, o->a_count);
        if (rc != SIEVE_OK)
            return rc;
        o->a_count++;
    }
    if (o->a_count != count)
        return off_fail(o, SIEVE_EIO, "%s/A: changed while recovering", o->dir);
    if (lseek(o->a_fd, 0, SEEK_END) < 0)
        return off_fail(o, SIEVE_EIO, "%s/A: %s", o->dir, strerror(errno));
    return SIEVE_OK;
}

static int off_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx, void **impl, char *err,
                    size_t errlen)
{
    struct offline *o;
    char p[4096];
    size_t mem, fixed;
    const char *env = getenv("SIEVE_CRASH_POINT");
    int rc;

    *impl = NULL;
    if (env != NULL) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v > 0) {
            crash_at = v;
            crash_n = 0;
        }
    }
    if (cfg->dir == NULL || cfg->dir[0] == '\0') {
        snprintf(err, errlen, "no sieve folder given");
        return SIEVE_EINVAL;
    }
    o = calloc(1, sizeof *o);
    if (o == NULL)
        return SIEVE_ENOMEM;
    o->lock_fd = o->a_fd = -1;
    pthread_mutex_init(&o->mu, NULL);
    o->cfg = *cfg;
    o->emit = emit;
    o->emit_ctx = emit_ctx;
    o->dir = strdup(cfg->dir);
    if (o->dir == NULL) {
        rc = off_fail(o, SIEVE_ENOMEM, "out of memory");
        goto out;
    }
    o->cfg.dir = o->dir;
    if (o->cfg.max_url_len == 0)
        o->cfg.max_url_len = 65536;
    if (o->cfg.max_url_len > (1u << 30)) {
        rc = off_fail(o, SIEVE_EINVAL, "max_url_len too large");
        goto out;
    }
    mem = o->cfg.memory ? o->cfg.memory : (size_t)64 << 20;
    o->io = mem / 64;
    if (o->io > ((size_t)1 << 20))
        o->io = (size_t)1 << 20;
    if (o->io < ((size_t)16 << 10))
        o->io = (size_t)16 << 10;
    if (o->io < o->cfg.max_url_len + 2 * REC_HDR)
        o->io = o->cfg.max_url_len + 2 * REC_HDR;
    fixed = (RUNS_PER_MERGE + 4) * o->io;
    if (fixed + 64 * 17 > mem) {
        rc = off_fail(o, SIEVE_EINVAL, "memory %zu too small (needs at least %zu for I/O buffers)", mem,
                      fixed + 64 * 17);
        goto out;
    }
    /* per run slot: a 16-byte pair, and RUNS_PER_MERGE bits of the bitmap */
    o->run_cap = (mem - fixed) / (16 + RUNS_PER_MERGE / 8);
    if (o->cfg.buffer_urls > 0)
        o->run_cap = o->cfg.buffer_urls;
    o->a_max = (uint64_t)o->run_cap * RUNS_PER_MERGE;
    o->run = malloc(o->run_cap * sizeof *o->run);
    o->marks = malloc((size_t)((o->a_max + 63) / 64) * 8);
    o->abuf = malloc(o->io);
    o->zin = malloc(o->io);
    o->zout = malloc(o->io);
    for (int i = 0; i <= RUNS_PER_MERGE; i++)
        o->rbuf[i] = malloc(o->io);
    if (o->run == NULL || o->marks == NULL || o->abuf == NULL || o->zin == NULL || o->zout == NULL) {
        rc = off_fail(o, SIEVE_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i <= RUNS_PER_MERGE; i++)
        if (o->rbuf[i] == NULL) {
            rc = off_fail(o, SIEVE_ENOMEM, "out of memory");
            goto out;
        }
    rc = sieve_dir_lock(o->dir, &o->lock_fd, o->msg, sizeof o->msg);
    if (rc != SIEVE_OK)
        goto out;
    rc = state_load(o);
    if (rc != SIEVE_OK)
        goto out;
    if (path_of(o, p, sizeof p, "A", -1)) {
        rc = off_fail(o, SIEVE_EINVAL, "%s: path too long", o->dir);
        goto out;
    }
    o->a_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (o->a_fd < 0 || (!o->cfg.no_fsync && sieve_dir_fsync(o->dir) != 0)) {
        rc = off_fail(o, SIEVE_EIO, "%s: %s", p, strerror(errno));
        goto out;
    }
    {
        size_t cap = o->run_cap;
        uint64_t amax = o->a_max;
        rc = a_recover(o);
        if (rc == SIEVE_OK)
            rc = merge_locked(o);
        o->run_cap = cap; /* the arrays may stay larger */
        o->a_max = amax;
    }
out:
    if (rc != SIEVE_OK) {
        snprintf(err, errlen, "%s", o->msg[0] ? o->msg : sieve_strerror(rc));
        off_free(o);
        return rc;
    }
    *impl = o;
    return SIEVE_OK;
}

const struct sieve_ops sieve_offline_ops = {
    .name = "offline",
    .open = off_open,
    .add = off_add,
    .add_batch = off_add_batch,
    .flush = off_flush,
    .sync = off_sync,
    .close = off_close,
    .stats = off_stats,
    .last_error = off_last_error,
    .checkpoint = off_checkpoint,
};
