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

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <rocksdb/c.h>

#include "sieve/sieve_base.h"
#include "sieve/sieve_files.h"

struct lsm {
	struct sieve_base base; /* first: the generic operations reach it */
	rocksdb_t *db;
	rocksdb_readoptions_t *ropts;
	rocksdb_writeoptions_t *wopts;
	rocksdb_writebatch_t *batch; /* add_batch's, reused */
};

/* Records a RocksDB error (freeing its message); the sieve becomes unusable. */
static int lsm_dberr(struct lsm *l, const char *what, char *dberr)
{
	sieve_fatal(&l->base, SIEVE_EIO, "%s/rocksdb: %s: %s", l->base.dir, what, dberr);
	rocksdb_free(dberr);
	return SIEVE_EIO;
}

/* The key of a signature: its 8 bytes, big-endian (RocksDB orders keys
 * bytewise). */
static void sig_key(uint8_t key[8], uint64_t sig)
{
	for (int i = 0; i < 8; i++)
		key[i] = (uint8_t)(sig >> (56 - 8 * i));
}

/* Whether the key is in the database: 1, 0, or minus an error code (the
 * error recorded). */
static int key_seen(struct lsm *l, const uint8_t key[8])
{
	char *dberr = NULL;
	rocksdb_pinnableslice_t *found =
	        rocksdb_get_pinned(l->db, l->ropts, (const char *)key, 8, &dberr);

	if (dberr != NULL)
		return -lsm_dberr(l, "get", dberr);
	if (found == NULL)
		return 0;
	rocksdb_pinnableslice_destroy(found);
	return 1;
}

static int lsm_add_locked(struct sieve_base *b, const char *url, size_t len)
{
	struct lsm *l = (struct lsm *)b;
	uint8_t key[8];
	char *dberr = NULL;
	int seen;

	b->st.added++;
	sig_key(key, XXH3_64bits(url, len));
	seen = key_seen(l, key);
	if (seen != 0)
		return seen < 0 ? -seen : SIEVE_OK;
	rocksdb_put(l->db, l->wopts, (const char *)key, sizeof key, "", 0, &dberr);
	if (dberr != NULL)
		return lsm_dberr(l, "put", dberr);
	sieve_emit(b, url, len);
	return SIEVE_OK;
}

/* Up to CHUNK URLs in one write batch (one WAL append instead of one per
 * new URL): each is looked up in the DB and among the chunk's new keys (a
 * small linear-probing table), the batch is written, then the new URLs are
 * emitted in their order. On an error inside a chunk none of it is added. */
#define CHUNK 256

static int chunk_locked(struct lsm *l, const char *const *urls, const size_t *lens, size_t n)
{
	uint64_t seen[2 * CHUNK];
	bool used[2 * CHUNK] = { false };
	bool fresh[CHUNK];
	size_t nfresh = 0;
	char *dberr = NULL;

	for (size_t i = 0; i < n; i++)
		if (lens[i] > l->base.cfg.max_url_len)
			return sieve_fail(&l->base, SIEVE_ETOOLONG, "URL of %zu bytes (max %zu)",
			                  lens[i], l->base.cfg.max_url_len);
	rocksdb_writebatch_clear(l->batch);
	for (size_t i = 0; i < n; i++) {
		uint8_t key[8];
		uint64_t sig = XXH3_64bits(urls[i], lens[i]);
		size_t slot = (size_t)(sig & (2 * CHUNK - 1));
		int old;

		fresh[i] = false;
		while (used[slot] && seen[slot] != sig)
			slot = (slot + 1) & (2 * CHUNK - 1);
		if (used[slot])
			continue; /* a repeat inside the chunk */
		used[slot] = true;
		seen[slot] = sig;
		sig_key(key, sig);
		old = key_seen(l, key);
		if (old < 0)
			return -old;
		if (old)
			continue;
		rocksdb_writebatch_put(l->batch, (const char *)key, sizeof key, "", 0);
		fresh[i] = true;
		nfresh++;
	}
	if (nfresh > 0) {
		rocksdb_write(l->db, l->wopts, l->batch, &dberr);
		if (dberr != NULL)
			return lsm_dberr(l, "write", dberr);
	}
	l->base.st.added += n;
	for (size_t i = 0; i < n; i++)
		if (fresh[i])
			sieve_emit(&l->base, urls[i], lens[i]);
	return SIEVE_OK;
}

static int lsm_add_batch_locked(struct sieve_base *b, const char *const *urls, const size_t *lens,
                                size_t n)
{
	int rc = SIEVE_OK;

	for (size_t i = 0; i < n && rc == SIEVE_OK; i += CHUNK)
		rc = chunk_locked((struct lsm *)b, urls + i, lens + i,
		                  n - i < CHUNK ? n - i : CHUNK);
	return rc;
}

static int lsm_sync_locked(struct sieve_base *b)
{
	struct lsm *l = (struct lsm *)b;
	char *dberr = NULL;

	if (b->cfg.no_fsync)
		return SIEVE_OK;
	rocksdb_flush_wal(l->db, 1, &dberr);
	if (dberr != NULL)
		return lsm_dberr(l, "WAL sync", dberr);
	return SIEVE_OK;
}

/* RocksDB's own checkpoint: a consistent copy of the database in dir/rocksdb,
 * its immutable tables hard-linked, the memtable flushed first. */
static int lsm_checkpoint(void *impl, const char *dir)
{
	struct lsm *l = impl;
	char path[4096], *dberr = NULL;
	int rc = SIEVE_OK;

	pthread_mutex_lock(&l->base.mu);
	if (l->base.err != 0) {
		rc = SIEVE_ECLOSED;
	} else if (sieve_path(path, sizeof path, dir, "rocksdb") != 0) {
		rc = sieve_fail(&l->base, SIEVE_EINVAL, "%s: path too long", dir);
	} else {
		rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(l->db, &dberr);
		if (cp != NULL && dberr == NULL)
			rocksdb_checkpoint_create(cp, path, 0, &dberr);
		if (cp != NULL)
			rocksdb_checkpoint_object_destroy(cp);
		if (dberr != NULL) {
			rc = sieve_fail(&l->base, SIEVE_EIO, "checkpoint of %s/rocksdb into %s: %s",
			                l->base.dir, path, dberr);
			free(dberr);
		}
	}
	pthread_mutex_unlock(&l->base.mu);
	return rc;
}

static void lsm_destroy(struct sieve_base *b)
{
	struct lsm *l = (struct lsm *)b;

	if (l->db != NULL)
		rocksdb_close(l->db);
	/* (the destroy functions delete: NULL is a no-op) */
	rocksdb_readoptions_destroy(l->ropts);
	rocksdb_writeoptions_destroy(l->wopts);
	rocksdb_writebatch_destroy(l->batch);
	sieve_base_release(b);
	free(l);
}

static uint64_t prop_u64(rocksdb_t *db, const char *name)
{
	char *v = rocksdb_property_value(db, name);
	uint64_t r = v != NULL ? strtoull(v, NULL, 10) : 0;
	rocksdb_free(v);
	return r;
}

static void lsm_stats_locked(struct sieve_base *b, struct sieve_stats *out)
{
	struct lsm *l = (struct lsm *)b;

	out->z_count = prop_u64(l->db, "rocksdb.estimate-num-keys");
	out->z_bytes = prop_u64(l->db, "rocksdb.total-sst-files-size");
}

/* The table options: the block cache, a Bloom filter per table, filters
 * and index partitioned. */
static void table_options(rocksdb_block_based_table_options_t *table, rocksdb_cache_t *cache)
{
	rocksdb_block_based_options_set_block_cache(table, cache);
	rocksdb_block_based_options_set_filter_policy(table, rocksdb_filterpolicy_create_bloom(10));
	rocksdb_block_based_options_set_cache_index_and_filter_blocks(table, 1);
	rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(table, 1);
	/* partitioned filters and index: a lookup loads one 4 KiB partition of a
	 * table's filter, not the whole filter, so a cache smaller than all the
	 * filters (about 1.25 bytes per URL) does not thrash */
	rocksdb_block_based_options_set_index_type(
	        table, rocksdb_block_based_table_index_type_two_level_index_search);
	rocksdb_block_based_options_set_partition_filters(table, 1);
	rocksdb_block_based_options_set_metadata_block_size(table, 4096);
	rocksdb_block_based_options_set_pin_top_level_index_and_filter(table, 1);
}

/* The database options for a budget of mem bytes (see the top). */
static void db_options(rocksdb_options_t *opts, size_t mem)
{
	rocksdb_options_set_create_if_missing(opts, 1);
	rocksdb_options_set_write_buffer_size(opts, mem / 8);
	rocksdb_options_set_max_write_buffer_number(opts, 2);
	/* a Bloom filter on the memtable too (a tenth of it), so that a new
	 * URL's lookup skips the skiplist search */
	rocksdb_options_set_memtable_prefix_bloom_size_ratio(opts, 0.1);
	rocksdb_options_set_memtable_whole_key_filtering(opts, 1);
	rocksdb_options_set_max_open_files(opts, 256);
	rocksdb_options_set_max_background_jobs(opts, 2);
	/* random 8-byte keys do not compress */
	rocksdb_options_set_compression(opts, rocksdb_no_compression);
	rocksdb_options_set_keep_log_file_num(opts, 2);
	rocksdb_options_set_max_log_file_size(opts, (size_t)1 << 20);
}

/* Locks the folder and opens the database in dir/rocksdb. The options and
 * the cache's handle are the database's once it is open (it keeps copies
 * and a reference). */
static int lsm_start(struct sieve_base *b)
{
	struct lsm *l = (struct lsm *)b;
	rocksdb_options_t *opts;
	rocksdb_block_based_table_options_t *table;
	rocksdb_cache_t *cache;
	char path[4096], *dberr = NULL;
	size_t mem = b->cfg.memory ? b->cfg.memory : (size_t)64 << 20;
	int rc;

	if (sieve_path(path, sizeof path, b->dir, "rocksdb") != 0)
		return sieve_fail(b, SIEVE_EINVAL, "%s: path too long", b->dir);
	rc = sieve_base_lock(b);
	if (rc != SIEVE_OK)
		return rc;
	opts = rocksdb_options_create();
	table = rocksdb_block_based_options_create();
	cache = rocksdb_cache_create_lru(mem / 4 * 3);
	l->ropts = rocksdb_readoptions_create();
	l->wopts = rocksdb_writeoptions_create();
	l->batch = rocksdb_writebatch_create();
	if (opts != NULL && table != NULL && cache != NULL) {
		table_options(table, cache);
		rocksdb_options_set_block_based_table_factory(opts, table);
		db_options(opts, mem);
	}
	if (opts == NULL || table == NULL || cache == NULL || l->ropts == NULL ||
	    l->wopts == NULL || l->batch == NULL)
		rc = sieve_fail(b, SIEVE_ENOMEM, "out of memory for RocksDB options");
	else
		l->db = rocksdb_open(opts, path, &dberr);
	if (dberr != NULL) {
		rc = sieve_fail(b, SIEVE_EIO, "%s: cannot open: %s", path, dberr);
		rocksdb_free(dberr);
		l->db = NULL;
	}
	rocksdb_block_based_options_destroy(table);
	rocksdb_options_destroy(opts);
	rocksdb_cache_destroy(cache);
	return rc;
}

/* A URL is decided inside its add (a batch in chunks); the state is
 * RocksDB's, checkpointed by RocksDB. */
SIEVE_BASE_OPS(sieve_lsm_ops, "lsm", struct lsm, lsm_checkpoint, .start = lsm_start,
               .destroy = lsm_destroy, .add_locked = lsm_add_locked,
               .add_batch_locked = lsm_add_batch_locked, .sync_locked = lsm_sync_locked,
               .stats_locked = lsm_stats_locked, .decides_in_add = true);
