/*
 * memory.c: the "memory" sieve (sieve.h; the notes' 2.1): a dictionary of
 * 64-bit XXH3 signatures in RAM.
 *
 * Table: a power-of-two array of signatures, linear probing, 0 = empty slot
 * (the signature 0 itself is kept in a flag). It doubles when it passes 70%
 * load, so memory grows with the crawl (8 / 0.35..0.7 bytes per URL): this
 * is why it is not the default, and why cfg->memory is not a bound here.
 *
 * Persistence: the table is written as-is to MEMSET (48-byte header {magic
 * "MSIEVEH1", u64 slots, u64 count, u64 has_zero, u64 XXH64(table), u64
 * XXH64(header so far)} then the slots) at sieve_sync and sieve_close, and
 * reloaded at open. No replay is needed: a URL is decided and emitted inside
 * its add.
 */
#include "sieve/sieve.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "sieve/sieve_files.h"

#define MEM_MAGIC "MSIEVEH1"
#define MEM_HDR 48
#define MEM_MIN_SLOTS 1024

struct memsieve {
    char *dir;
    struct sieve_config cfg;
    sieve_emit_fn emit;
    void *emit_ctx;
    int lock_fd;
    pthread_mutex_t mu;
    uint64_t *slot;  /* the table; 0 = empty */
    uint64_t mask;   /* slots - 1 */
    uint64_t count;  /* nonzero signatures stored */
    bool has_zero;   /* the signature 0 was seen */
    struct sieve_stats st;
    char msg[512];
    char lastmsg[512]; /* last_error's copy, taken under mu */
};

static int mem_fail(struct memsieve *m, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->msg, sizeof m->msg, fmt, ap);
    va_end(ap);
    return code;
}

/* Inserts sig (nonzero) into a table known to have room; 1 if new. */
static int table_insert(uint64_t *slot, uint64_t mask, uint64_t sig)
{
    uint64_t i = sig & mask;
    while (slot[i] != 0) {
        if (slot[i] == sig)
            return 0;
        i = (i + 1) & mask;
    }
    slot[i] = sig;
    return 1;
}

/* The signature's slot index comes from its low bits: XXH3 mixes fully, so
 * they are uniform. Doubles the table; SIEVE_ENOMEM leaves it as it was. */
static int table_grow(struct memsieve *m)
{
    uint64_t nslots = (m->mask + 1) * 2;
    uint64_t *n = calloc(nslots, sizeof *n);
    if (n == NULL)
        return mem_fail(m, SIEVE_ENOMEM, "out of memory growing the table to %llu slots", (unsigned long long)nslots);
    for (uint64_t i = 0; i <= m->mask; i++)
        if (m->slot[i] != 0)
            table_insert(n, nslots - 1, m->slot[i]);
    free(m->slot);
    m->slot = n;
    m->mask = nslots - 1;
    return SIEVE_OK;
}

static int add_locked(struct memsieve *m, const char *url, size_t len)
{
    uint64_t sig;
    int fresh;

    if (len > m->cfg.max_url_len)
        return mem_fail(m, SIEVE_ETOOLONG, "URL of %zu bytes (max %zu)", len, m->cfg.max_url_len);
    m->st.added++;
    sig = XXH3_64bits(url, len);
    if (sig == 0) {
        fresh = !m->has_zero;
        m->has_zero = true;
    } else {
        if ((m->count + 1) * 10 > (m->mask + 1) * 7) {
            int rc = table_grow(m);
            if (rc != SIEVE_OK)
                return rc;
        }
        fresh = table_insert(m->slot, m->mask, sig);
        m->count += (uint64_t)fresh;
    }
    if (fresh) {
        m->st.emitted++;
        if (m->emit != NULL)
            m->emit(m->emit_ctx, url, len);
    }
    return SIEVE_OK;
}

static int mem_add(void *impl, const char *url, size_t len)
{
    struct memsieve *m = impl;
    int rc;
    pthread_mutex_lock(&m->mu);
    rc = add_locked(m, url, len);
    m->st.flushes++; /* decided: see sieve.h on flushes */
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int mem_add_batch(void *impl, const char *const *urls, const size_t *lens, size_t n)
{
    struct memsieve *m = impl;
    int rc = SIEVE_OK;
    pthread_mutex_lock(&m->mu);
    for (size_t i = 0; i < n && rc == SIEVE_OK; i++)
        rc = add_locked(m, urls[i], lens[i]);
    m->st.flushes++;
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static int mem_flush(void *impl)
{
    struct memsieve *m = impl;
    pthread_mutex_lock(&m->mu);
    m->st.flushes++; /* every URL is decided inside its add: nothing to do */
    pthread_mutex_unlock(&m->mu);
    return SIEVE_OK;
}

static int snapshot_locked(struct memsieve *m)
{
    uint8_t h[MEM_HDR];
    size_t bytes = (size_t)(m->mask + 1) * sizeof(uint64_t);

    memcpy(h, MEM_MAGIC, 8);
    sieve_put64(h + 8, m->mask + 1);
    sieve_put64(h + 16, m->count);
    sieve_put64(h + 24, m->has_zero);
    sieve_put64(h + 32, XXH64(m->slot, bytes, 0));
    sieve_put64(h + 40, XXH64(h, 40, 0));
    if (sieve_file_replace(m->dir, "MEMSET", h, sizeof h, m->slot, bytes, m->cfg.no_fsync) != 0)
        return mem_fail(m, SIEVE_EIO, "%s/MEMSET: %s", m->dir, strerror(errno));
    return SIEVE_OK;
}

static int mem_sync(void *impl)
{
    struct memsieve *m = impl;
    int rc;
    pthread_mutex_lock(&m->mu);
    rc = snapshot_locked(m);
    pthread_mutex_unlock(&m->mu);
    return rc;
}

/* A fresh snapshot (replaced by rename, so linkable) under the lock. */
static int mem_checkpoint(void *impl, const char *dir)
{
    struct memsieve *m = impl;
    char src[4096], dst[4096];
    int rc;
    pthread_mutex_lock(&m->mu);
    rc = snapshot_locked(m);
    if (rc == SIEVE_OK &&
        (snprintf(src, sizeof src, "%s/MEMSET", m->dir) >= (int)sizeof src ||
         snprintf(dst, sizeof dst, "%s/MEMSET", dir) >= (int)sizeof dst ||
         sieve_checkpoint_file(src, dst, SIEVE_WHOLE_FILE) != 0))
        rc = mem_fail(m, SIEVE_EIO, "checkpoint of %s/MEMSET into %s: %s", m->dir, dir, strerror(errno));
    pthread_mutex_unlock(&m->mu);
    return rc;
}

static void mem_free(struct memsieve *m)
{
    if (m == NULL)
        return;
    if (m->lock_fd >= 0)
        close(m->lock_fd);
    free(m->slot);
    free(m->dir);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static int mem_close(void *impl)
{
    struct memsieve *m = impl;
    int rc = snapshot_locked(m);
    mem_free(m);
    return rc;
}

static void mem_stats(void *impl, struct sieve_stats *out)
{
    struct memsieve *m = impl;
    pthread_mutex_lock(&m->mu);
    *out = m->st;
    out->z_count = m->count + (m->has_zero ? 1 : 0);
    out->z_bytes = (m->mask + 1) * sizeof(uint64_t);
    pthread_mutex_unlock(&m->mu);
}

static const char *mem_last_error(void *impl)
{
    struct memsieve *m = impl;
    pthread_mutex_lock(&m->mu);
    memcpy(m->lastmsg, m->msg, sizeof m->lastmsg);
    pthread_mutex_unlock(&m->mu);
    return m->lastmsg;
}

/* Loads MEMSET if present. */
static int snapshot_load(struct memsieve *m)
{
    char p[4096];
    uint8_t h[MEM_HDR];
    uint64_t slots, count, zero;
    int r;

    if (snprintf(p, sizeof p, "%s/MEMSET", m->dir) >= (int)sizeof p)
        return mem_fail(m, SIEVE_EINVAL, "%s: path too long", m->dir);
    r = sieve_file_read_at(p, h, sizeof h, 0);
    if (r == 1)
        return SIEVE_OK;
    if (r == -2)
        return mem_fail(m, SIEVE_EIO, "%s: %s", p, strerror(errno));
    if (r == -1 || memcmp(h, MEM_MAGIC, 8) != 0 || sieve_get64(h + 40) != XXH64(h, 40, 0))
        return mem_fail(m, SIEVE_ECORRUPT, "%s: truncated or corrupt header", p);
    slots = sieve_get64(h + 8);
    count = sieve_get64(h + 16);
    zero = sieve_get64(h + 24);
    if (slots < MEM_MIN_SLOTS || (slots & (slots - 1)) != 0 || count * 10 > slots * 7 || zero > 1 ||
        slots > SIZE_MAX / sizeof(uint64_t))
        return mem_fail(m, SIEVE_ECORRUPT, "%s: corrupt header values", p);
    free(m->slot);
    m->slot = malloc((size_t)slots * sizeof(uint64_t));
    if (m->slot == NULL)
        return mem_fail(m, SIEVE_ENOMEM, "out of memory loading %s", p);
    m->mask = slots - 1;
    r = sieve_file_read_at(p, m->slot, (size_t)slots * sizeof(uint64_t), MEM_HDR);
    if (r == -2)
        return mem_fail(m, SIEVE_EIO, "%s: %s", p, strerror(errno));
    if (r != 0 || XXH64(m->slot, (size_t)slots * sizeof(uint64_t), 0) != sieve_get64(h + 32))
        return mem_fail(m, SIEVE_ECORRUPT, "%s: truncated or corrupt table", p);
    m->count = count;
    m->has_zero = zero != 0;
    return SIEVE_OK;
}

static int mem_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx, void **impl, char *err,
                    size_t errlen)
{
    struct memsieve *m;
    int rc;

    *impl = NULL;
    if (cfg->dir == NULL || cfg->dir[0] == '\0') {
        snprintf(err, errlen, "no sieve folder given");
        return SIEVE_EINVAL;
    }
    m = calloc(1, sizeof *m);
    if (m == NULL)
        return SIEVE_ENOMEM;
    m->lock_fd = -1;
    pthread_mutex_init(&m->mu, NULL);
    m->cfg = *cfg;
    m->emit = emit;
    m->emit_ctx = emit_ctx;
    m->dir = strdup(cfg->dir);
    m->slot = calloc(MEM_MIN_SLOTS, sizeof(uint64_t));
    if (m->dir == NULL || m->slot == NULL) {
        rc = mem_fail(m, SIEVE_ENOMEM, "out of memory");
        goto out;
    }
    m->cfg.dir = m->dir;
    m->mask = MEM_MIN_SLOTS - 1;
    if (m->cfg.max_url_len == 0)
        m->cfg.max_url_len = 65536;
    rc = sieve_dir_lock(m->dir, &m->lock_fd, m->msg, sizeof m->msg);
    if (rc != SIEVE_OK)
        goto out;
    rc = snapshot_load(m);
out:
    if (rc != SIEVE_OK) {
        snprintf(err, errlen, "%s", m->msg[0] ? m->msg : sieve_strerror(rc));
        mem_free(m);
        return rc;
    }
    *impl = m;
    return SIEVE_OK;
}

const struct sieve_ops sieve_memory_ops = {
    .name = "memory",
    .open = mem_open,
    .add = mem_add,
    .add_batch = mem_add_batch,
    .flush = mem_flush,
    .sync = mem_sync,
    .close = mem_close,
    .stats = mem_stats,
    .last_error = mem_last_error,
    .checkpoint = mem_checkpoint,
};
