/*
 * memory.c: the "memory" sieve (sieve.h; the notes' 2.1): a dictionary of
 * 64-bit XXH3 signatures in RAM.
 *
 * Table: a power-of-two array of signatures, linear probing, 0 = empty slot
 * (the signature 0 itself is kept in a flag). It doubles when it passes 70%
 * load, so memory grows with the crawl (8 / 0.35..0.7 bytes per URL): this
 * is why it is not the default, and why cfg->memory is not a bound here.
 *
 * Persistence: the table is written as-is to MEMSET, a snapshot
 * (sieve_base.h: 48-byte header {magic "MSIEVEH1", u64 slots, u64 count,
 * u64 has_zero, u64 XXH64(table), u64 XXH64(header so far)} then the
 * slots) at sieve_sync and sieve_close, and reloaded at open. No replay is
 * needed: a URL is decided and emitted inside its add.
 */
#include "sieve/sieve.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "frontier/base/byteorder.h"
#include "sieve/sieve_base.h"
#include "sieve/sieve_files.h"

#define MEM_MAGIC "MSIEVEH1"
#define MEM_HDR 48
#define MEM_MIN_SLOTS 1024

struct memsieve {
	struct sieve_base base; /* first: the generic operations reach it */
	uint64_t *slot;         /* the table; 0 = empty */
	uint64_t mask;          /* slots - 1 */
	uint64_t count;         /* nonzero signatures stored */
	bool has_zero;          /* the signature 0 was seen */
};

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
		return sieve_fail(&m->base, SIEVE_ENOMEM,
		                  "out of memory growing the table to %llu slots",
		                  (unsigned long long)nslots);
	for (uint64_t i = 0; i <= m->mask; i++)
		if (m->slot[i] != 0)
			table_insert(n, nslots - 1, m->slot[i]);
	free(m->slot);
	m->slot = n;
	m->mask = nslots - 1;
	return SIEVE_OK;
}

static int mem_add_locked(struct sieve_base *b, const char *url, size_t len)
{
	struct memsieve *m = (struct memsieve *)b;
	uint64_t sig;
	int fresh;

	b->st.added++;
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
	if (fresh)
		sieve_emit(b, url, len);
	return SIEVE_OK;
}

/* Writes MEMSET (the sync hook). */
static int mem_snapshot(struct sieve_base *b)
{
	struct memsieve *m = (struct memsieve *)b;
	uint8_t h[MEM_HDR];
	const uint64_t f[3] = { m->mask + 1, m->count, m->has_zero };

	le_put64s(h + 8, f, 3);
	return sieve_snapshot_write(b, "MEMSET", MEM_MAGIC, h, sizeof h, m->slot,
	                            (size_t)(m->mask + 1) * sizeof(uint64_t));
}

static void mem_stats_locked(struct sieve_base *b, struct sieve_stats *out)
{
	struct memsieve *m = (struct memsieve *)b;

	out->z_count = m->count + (m->has_zero ? 1 : 0);
	out->z_bytes = (m->mask + 1) * sizeof(uint64_t);
}

static void mem_destroy(struct sieve_base *b)
{
	struct memsieve *m = (struct memsieve *)b;

	sieve_base_release(b);
	free(m->slot);
	free(m);
}

/* Loads MEMSET if present. */
static int snapshot_load(struct memsieve *m)
{
	struct sieve_base *b = &m->base;
	uint8_t h[MEM_HDR];
	uint64_t slots, count, zero;
	bool present;
	int rc = sieve_snapshot_read(b, "MEMSET", MEM_MAGIC, h, sizeof h, &present);

	if (rc != SIEVE_OK || !present)
		return rc;
	slots = le_get64(h + 8);
	count = le_get64(h + 16);
	zero = le_get64(h + 24);
	if (slots < MEM_MIN_SLOTS || (slots & (slots - 1)) != 0 || count * 10 > slots * 7 ||
	    zero > 1 || slots > SIZE_MAX / sizeof(uint64_t))
		return sieve_fail(b, SIEVE_ECORRUPT, "%s/MEMSET: corrupt header values", b->dir);
	m->slot = malloc((size_t)slots * sizeof(uint64_t));
	if (m->slot == NULL)
		return sieve_fail(b, SIEVE_ENOMEM, "out of memory loading %s/MEMSET", b->dir);
	m->mask = slots - 1;
	m->count = count;
	m->has_zero = zero != 0;
	return sieve_snapshot_body(b, "MEMSET", h, sizeof h, m->slot,
	                           (size_t)slots * sizeof(uint64_t));
}

/* Locks the folder, loads MEMSET or starts an empty table. */
static int mem_start(struct sieve_base *b)
{
	struct memsieve *m = (struct memsieve *)b;
	int rc = sieve_base_lock(b);

	if (rc == SIEVE_OK)
		rc = snapshot_load(m);
	if (rc == SIEVE_OK && m->slot == NULL) {
		m->slot = calloc(MEM_MIN_SLOTS, sizeof(uint64_t));
		m->mask = MEM_MIN_SLOTS - 1;
		if (m->slot == NULL)
			rc = sieve_fail(b, SIEVE_ENOMEM, "out of memory");
	}
	return rc;
}

/* A URL is decided inside its add; the state is the snapshot MEMSET. */
SIEVE_BASE_OPS(sieve_memory_ops, "memory", struct memsieve, sieve_snapshot_checkpoint,
               .start = mem_start, .destroy = mem_destroy, .add_locked = mem_add_locked,
               .sync_locked = mem_snapshot, .stats_locked = mem_stats_locked, .snapshot = "MEMSET",
               .decides_in_add = true);
