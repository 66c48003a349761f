/*
 * lsm.c: the "lsm" sieve (sieve.h; the notes' 2.3): the set of seen
 * signatures kept in RocksDB, an LSM tree, through its C API.
 *
 * Keys: the URL's XXH3-64 signature, 8 bytes big-endian; values empty.
 * Add = check-and-insert: a point lookup (memtable, then each level's table,
 * skipped by the table's Bloom filter, 10 bits per key, unless it may hold
 * the key); if absent, a put (WAL + memtable) and then the emit. The lookup
 * and the put run under the sieve's mutex, so two adds of one URL cannot
 * both find it absent, and the emission order is the order of first adds.
 *
 * Memory: from cfg->memory (64 MiB if 0): three quarters for the LRU block
 * cache (which also holds the index and filter blocks, partitioned, so they
 * are bounded too and a lookup loads one 4 KiB filter partition), an eighth
 * for each of at most two write buffers (memtables, each with its own small
 * Bloom filter). RocksDB's own threads flush and compact in the background;
 * when the filters (~1.25 bytes per URL) outgrow the cache, lookups read
 * filter partitions from the page cache: the sieve slows down, it does not
 * grow.
 *
 * Files: cfg->dir/LOCK (ours) and cfg->dir/rocksdb (RocksDB's folder).
 * sieve_add_batch checks-and-inserts up to 256 URLs with one write batch
 * (one WAL append), then emits that chunk's new URLs.
 * Durability: every put goes to the WAL before the emit; sieve_sync and
 * sieve_close sync the WAL (unless cfg->no_fsync). So a URL is never
 * emitted twice across process crashes; after a machine crash, URLs added
 * since the last sync may be emitted again if re-added.
 */
#include "sieve/sieve.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <rocksdb/c.h>

#include "sieve/sieve_files.h"

struct lsm {
    char *dir;
    struct sieve_config cfg;
    sieve_emit_fn emit;
    void *emit_ctx;
    int lock_fd;
    pthread_mutex_t mu;
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_cache_t *cache;
    rocksdb_readoptions_t *ropts;
    rocksdb_writeoptions_t *wopts;
    rocksdb_writebatch_t *batch; /* add_batch's, reused */
    int err; /* a RocksDB error made the sieve unusable */
    struct sieve_stats st;
    char msg[512];
    char lastmsg[512];
};

static int lsm_fail(struct lsm *l, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->msg, sizeof l->msg, fmt, ap);
    va_end(ap);
    return code;
}

/* Records a RocksDB error (freeing its message); the sieve becomes unusable. */
static int lsm_dberr(struct lsm *l, const char *what, char *dberr)
{
    lsm_fail(l, SIEVE_EIO, "%s/rocksdb: %s: %s", l->dir, what, dberr);
    rocksdb_free(dberr);
    if (l->err == 0)
        l->err = SIEVE_EIO;
    return SIEVE_EIO;
}

static int add_locked(struct lsm *l, const char *url, size_t len)
{
    uint8_t key[8];
    uint64_t sig;
    char *dberr = NULL;
    rocksdb_pinnableslice_t *found;

    if (l->err != 0)
        return SIEVE_ECLOSED;
    if (len > l->cfg.max_url_len)
        return lsm_fail(l, SIEVE_ETOOLONG, "URL of %zu bytes (max %zu)", len, l->cfg.max_url_len);
    l->st.added++;
    sig = XXH3_64bits(url, len);
    for (int i = 0; i < 8; i++)
        key[i] = (uint8_t)(sig >> (56 - 8 * i));
    found = rocksdb_get_pinned(l->db, l->ropts, (const char *)key, sizeof key, &dberr);
    if (dberr != NULL)
        return lsm_dberr(l, "get", dberr);
    if (found != NULL) {
        rocksdb_pinnableslice_destroy(found);
        return SIEVE_OK;
    }
    rocksdb_put(l->db, l->wopts, (const char *)key, sizeof key, "", 0, &dberr);
    if (dberr != NULL)
        return lsm_dberr(l, "put", dberr);
    l->st.emitted++;
    if (l->emit != NULL)
        l->emit(l->emit_ctx, url, len);
    return SIEVE_OK;
}

static int lsm_add(void *impl, const char *url, size_t len)
{
    struct lsm *l = impl;
    int rc;
    pthread_mutex_lock(&l->mu);
    rc = add_locked(l, url, len);
    l->st.flushes++; /* decided: see sieve.h on flushes */
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* Up to CHUNK URLs in one write batch (one WAL append instead of one per
 * new URL): each is looked up in the DB and among the chunk's new keys (a
 * small linear-probing table), the batch is written, then the new URLs are
 * emitted in their order. On an error inside a chunk none of it is added. */
#define CHUNK 256

static int chunk_locked(struct lsm *l, const char *const *urls, const size_t *lens, size_t n)
{
    uint64_t seen[2 * CHUNK];
    bool used[2 * CHUNK] = {false};
    bool fresh[CHUNK];
    size_t nfresh = 0;
    char *dberr = NULL;
    int rc = SIEVE_OK;

    for (size_t i = 0; i < n; i++)
        if (lens[i] > l->cfg.max_url_len)
            return lsm_fail(l, SIEVE_ETOOLONG, "URL of %zu bytes (max %zu)", lens[i], l->cfg.max_url_len);
    rocksdb_writebatch_clear(l->batch);
    for (size_t i = 0; i < n; i++) {
        uint8_t key[8];
        uint64_t sig = XXH3_64bits(urls[i], lens[i]);
        size_t slot = (size_t)(sig & (2 * CHUNK - 1));
        rocksdb_pinnableslice_t *found;

        fresh[i] = false;
        while (used[slot] && seen[slot] != sig)
            slot = (slot + 1) & (2 * CHUNK - 1);
        if (used[slot])
            continue; /* a repeat inside the chunk */
        used[slot] = true;
        seen[slot] = sig;
        for (int b = 0; b < 8; b++)
            key[b] = (uint8_t)(sig >> (56 - 8 * b));
        found = rocksdb_get_pinned(l->db, l->ropts, (const char *)key, sizeof key, &dberr);
        if (dberr != NULL)
            return lsm_dberr(l, "get", dberr);
        if (found != NULL) {
            rocksdb_pinnableslice_destroy(found);
            continue;
        }
        rocksdb_writebatch_put(l->batch, (const char *)key, sizeof key, "", 0);
        fresh[i] = true;
        nfresh++;
    }
    if (nfresh > 0) {
        rocksdb_write(l->db, l->wopts, l->batch, &dberr);
        if (dberr != NULL)
            return lsm_dberr(l, "write", dberr);
    }
    l->st.added += n;
    for (size_t i = 0; i < n; i++) {
        if (!fresh[i])
            continue;
        l->st.emitted++;
        if (l->emit != NULL)
            l->emit(l->emit_ctx, urls[i], lens[i]);
    }
    return rc;
}

static int lsm_add_batch(void *impl, const char *const *urls, const size_t *lens, size_t n)
{
    struct lsm *l = impl;
    int rc = SIEVE_OK;
    pthread_mutex_lock(&l->mu);
    if (l->err != 0)
        rc = SIEVE_ECLOSED;
    for (size_t i = 0; i < n && rc == SIEVE_OK; i += CHUNK)
        rc = chunk_locked(l, urls + i, lens + i, n - i < CHUNK ? n - i : CHUNK);
    l->st.flushes++;
    pthread_mutex_unlock(&l->mu);
    return rc;
}

static int lsm_flush(void *impl)
{
    struct lsm *l = impl;
    int rc;
    pthread_mutex_lock(&l->mu);
    rc = l->err != 0 ? SIEVE_ECLOSED : SIEVE_OK; /* every URL is decided inside its add */
    l->st.flushes++;
    pthread_mutex_unlock(&l->mu);
    return rc;
}

static int sync_locked(struct lsm *l)
{
    char *dberr = NULL;
    if (l->err != 0)
        return SIEVE_ECLOSED;
    if (l->cfg.no_fsync)
        return SIEVE_OK;
    rocksdb_flush_wal(l->db, 1, &dberr);
    if (dberr != NULL)
        return lsm_dberr(l, "WAL sync", dberr);
    return SIEVE_OK;
}

static int lsm_sync(void *impl)
{
    struct lsm *l = impl;
    int rc;
    pthread_mutex_lock(&l->mu);
    rc = sync_locked(l);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

/* RocksDB's own checkpoint: a consistent copy of the database in dir/rocksdb,
 * its immutable tables hard-linked, the memtable flushed first. */
static int lsm_checkpoint(void *impl, const char *dir)
{
    struct lsm *l = impl;
    char path[4096], *dberr = NULL;
    int rc = SIEVE_OK;
    pthread_mutex_lock(&l->mu);
    if (l->err != 0) {
        rc = SIEVE_ECLOSED;
    } else if (snprintf(path, sizeof path, "%s/rocksdb", dir) >= (int)sizeof path) {
        rc = lsm_fail(l, SIEVE_EINVAL, "%s: path too long", dir);
    } else {
        rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(l->db, &dberr);
        if (cp != NULL && dberr == NULL)
            rocksdb_checkpoint_create(cp, path, 0, &dberr);
        if (cp != NULL)
            rocksdb_checkpoint_object_destroy(cp);
        if (dberr != NULL) {
            rc = lsm_fail(l, SIEVE_EIO, "checkpoint of %s/rocksdb into %s: %s", l->dir, path, dberr);
            free(dberr);
        }
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

static void lsm_free(struct lsm *l)
{
    if (l == NULL)
        return;
    if (l->db != NULL)
        rocksdb_close(l->db);
    if (l->ropts != NULL)
        rocksdb_readoptions_destroy(l->ropts);
    if (l->wopts != NULL)
        rocksdb_writeoptions_destroy(l->wopts);
    if (l->batch != NULL)
        rocksdb_writebatch_destroy(l->batch);
    if (l->opts != NULL)
        rocksdb_options_destroy(l->opts);
    if (l->cache != NULL)
        rocksdb_cache_destroy(l->cache);
    if (l->lock_fd >= 0)
        close(l->lock_fd);
    free(l->dir);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

static int lsm_close(void *impl)
{
    struct lsm *l = impl;
    int rc = sync_locked(l);
    lsm_free(l);
    return rc;
}

static uint64_t prop_u64(rocksdb_t *db, const char *name)
{
    char *v = rocksdb_property_value(db, name);
    uint64_t r = v != NULL ? strtoull(v, NULL, 10) : 0;
    rocksdb_free(v);
    return r;
}

static void lsm_stats(void *impl, struct sieve_stats *out)
{
    struct lsm *l = impl;
    pthread_mutex_lock(&l->mu);
    *out = l->st;
    out->z_count = prop_u64(l->db, "rocksdb.estimate-num-keys");
    out->z_bytes = prop_u64(l->db, "rocksdb.total-sst-files-size");
    pthread_mutex_unlock(&l->mu);
}

static const char *lsm_last_error(void *impl)
{
    struct lsm *l = impl;
    pthread_mutex_lock(&l->mu);
    memcpy(l->lastmsg, l->msg, sizeof l->lastmsg);
    pthread_mutex_unlock(&l->mu);
    return l->lastmsg;
}

static int lsm_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx, void **impl, char *err,
                    size_t errlen)
{
    struct lsm *l;
    rocksdb_block_based_table_options_t *table = NULL;
    char path[4096], *dberr = NULL;
    size_t mem;
    int rc;

    *impl = NULL;
    if (cfg->dir == NULL || cfg->dir[0] == '\0') {
        snprintf(err, errlen, "no sieve folder given");
        return SIEVE_EINVAL;
    }
    l = calloc(1, sizeof *l);
    if (l == NULL)
        return SIEVE_ENOMEM;
    l->lock_fd = -1;
    pthread_mutex_init(&l->mu, NULL);
    l->cfg = *cfg;
    l->emit = emit;
    l->emit_ctx = emit_ctx;
    l->dir = strdup(cfg->dir);
    if (l->dir == NULL) {
        rc = lsm_fail(l, SIEVE_ENOMEM, "out of memory");
        goto out;
    }
    l->cfg.dir = l->dir;
    if (l->cfg.max_url_len == 0)
        l->cfg.max_url_len = 65536;
    if (snprintf(path, sizeof path, "%s/rocksdb", l->dir) >= (int)sizeof path) {
        rc = lsm_fail(l, SIEVE_EINVAL, "%s: path too long", l->dir);
        goto out;
    }
    rc = sieve_dir_lock(l->dir, &l->lock_fd, l->msg, sizeof l->msg);
    if (rc != SIEVE_OK)
        goto out;
    mem = l->cfg.memory ? l->cfg.memory : (size_t)64 << 20;
    l->opts = rocksdb_options_create();
    table = rocksdb_block_based_options_create();
    l->cache = rocksdb_cache_create_lru(mem / 4 * 3);
    l->ropts = rocksdb_readoptions_create();
    l->wopts = rocksdb_writeoptions_create();
    l->batch = rocksdb_writebatch_create();
    if (l->opts == NULL || table == NULL || l->cache == NULL || l->ropts == NULL || l->wopts == NULL ||
        l->batch == NULL) {
        rc = lsm_fail(l, SIEVE_ENOMEM, "out of memory for RocksDB options");
        goto out;
    }
    rocksdb_block_based_options_set_block_cache(table, l->cache);
    rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom(10));
    rocksdb_block_based_options_set_cache_index_and_filter_blocks(table, 1);
    rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(table, 1);
    /* partitioned filters and index: a lookup loads one 4 KiB partition of a
     * table's filter, not the whole filter, so a cache smaller than all the
     * filters (about 1.25 bytes per URL) does not thrash */
    rocksdb_block_based_options_set_index_type(table, rocksdb_block_based_table_index_type_two_level_index_search);
    rocksdb_block_based_options_set_partition_filters(table, 1);
    rocksdb_block_based_options_set_metadata_block_size(table, 4096);
    rocksdb_block_based_options_set_pin_top_level_index_and_filter(table, 1);
    rocksdb_options_set_block_based_table_factory(l->opts, table);
    rocksdb_options_set_create_if_missing(l->opts, 1);
    rocksdb_options_set_write_buffer_size(l->opts, mem / 8);
    rocksdb_options_set_max_write_buffer_number(l->opts, 2);
    /* a Bloom filter on the memtable too (a tenth of it), so that a new
     * URL's lookup skips the skiplist search */
    rocksdb_options_set_memtable_prefix_bloom_size_ratio(l->opts, 0.1);
    rocksdb_options_set_memtable_whole_key_filtering(l->opts, 1);
    rocksdb_options_set_max_open_files(l->opts, 256);
    rocksdb_options_set_max_background_jobs(l->opts, 2);
    /* random 8-byte keys do not compress */
    rocksdb_options_set_compression(l->opts, rocksdb_no_compression);
    rocksdb_options_set_keep_log_file_num(l->opts, 2);
    rocksdb_options_set_max_log_file_size(l->opts, (size_t)1 << 20);
    l->db = rocksdb_open(l->opts, path, &dberr);
    if (dberr != NULL) {
        rc = lsm_fail(l, SIEVE_EIO, "%s: cannot open: %s", path, dberr);
        rocksdb_free(dberr);
        l->db = NULL;
        goto out;
    }
out:
    if (table != NULL)
        rocksdb_block_based_options_destroy(table);
    if (rc != SIEVE_OK) {
        snprintf(err, errlen, "%s", l->msg[0] ? l->msg : sieve_strerror(rc));
        lsm_free(l);
        return rc;
    }
    *impl = l;
    return SIEVE_OK;
}

const struct sieve_ops sieve_lsm_ops = {
    .name = "lsm",
    .open = lsm_open,
    .add = lsm_add,
    .add_batch = lsm_add_batch,
    .flush = lsm_flush,
    .sync = lsm_sync,
    .close = lsm_close,
    .stats = lsm_stats,
    .last_error = lsm_last_error,
    .checkpoint = lsm_checkpoint,
};
