/*
 * bloom.c: the "bloom" sieve (sieve.h; the notes' 2.2): a Bloom filter of m
 * bits with d hash functions.
 *
 * Sizing: with n = cfg->expected_urls and p = cfg->fp_rate (0.01 if 0), the
 * notes' optimum m = n ln(1/p) / ln^2 2 bits and d = m ln2 / n (rounded;
 * then p ~ 2^-d). With n = 0 the filter takes cfg->memory (64 MiB if 0) as
 * m / 8 and d = round(log2(1/p)), so it holds m ln^2 2 / ln(1/p) URLs at p.
 * m is a multiple of 512.
 *
 * Hashing: one XXH3-128 of the URL gives a (low half) and b (high half, made
 * odd); Kirsch-Mitzenmacher: g_i = a + i b (mod 2^64), 0 <= i < d, each
 * mapped to [0, m) by a multiply-shift (g_i * m / 2^64). Blocked variant:
 * the block is a * (m / 512) / 2^64, and the d bits inside it are the top 9
 * bits of rotl(a, 32) + i b: one cache line per URL, at the price of a
 * higher false-positive rate (the blocks' loads vary).
 *
 * Add = check-and-set in one pass: the URL is new iff some of its d bits was
 * 0; then it is emitted (inside the add). A new URL whose bits are all set
 * already (a false positive) is dropped: loss, never a duplicate.
 *
 * Fill: bits_set counts the bits at 1; the estimated false-positive rate is
 * (bits_set / m)^d (for the blocked variant an underestimate). When the
 * fill passes the point where that reaches the target, the sieve warns once
 * on stderr (the filter degrades gracefully: the rate keeps rising to 1).
 *
 * Persistence: the bits are written to BLOOM, a snapshot (sieve_base.h:
 * 80-byte header {magic "MSIEVEB1", u64 m, d, blocked, bits_set, inserted,
 * capacity, target rate (IEEE bits), XXH64(bits), XXH64(header so far)}
 * then the words) at sieve_sync and sieve_close; a reopened filter keeps
 * its stored size.
 */
#include "sieve/sieve.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "frontier/base/byteorder.h"
#include "sieve/sieve_base.h"
#include "sieve/sieve_files.h"

#define BLOOM_MAGIC "MSIEVEB1"
#define BLOOM_HDR 80
#define BLOCK_BITS 512
#define MAX_HASHES 48

struct bloom {
	struct sieve_base base; /* first: the generic operations reach it */
	uint64_t *word;         /* m / 64 words of bits */
	uint64_t m;             /* bits */
	uint64_t blocks;        /* m / 512 */
	unsigned d;             /* hashes */
	bool blocked;
	uint64_t bits_set;
	uint64_t inserted;  /* URLs that set at least one bit (the emitted ones, ever) */
	uint64_t capacity;  /* n the filter was sized for */
	double target;      /* p */
	uint64_t warn_bits; /* bits_set past which (bits_set/m)^d > p */
	bool warned;
};

static inline uint64_t mulhi(uint64_t x, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)x * n) >> 64);
}

/* Sets the bit; 1 if it was 0. */
static inline int set_bit(struct bloom *b, uint64_t pos)
{
	uint64_t bit = 1ull << (pos & 63), *w = &b->word[pos >> 6];
	if (*w & bit)
		return 0;
	*w |= bit;
	return 1;
}

/* Check-and-set of the URL's d bits; returns how many were 0. */
static unsigned check_and_set(struct bloom *b, const char *url, size_t len)
{
	XXH128_hash_t h = XXH3_128bits(url, len);
	uint64_t a = h.low64, step = h.high64 | 1;
	unsigned fresh = 0;

	if (b->blocked) {
		uint64_t base = mulhi(a, b->blocks) * BLOCK_BITS;
		uint64_t g = (a << 32) | (a >> 32);
		for (unsigned i = 0; i < b->d; i++, g += step)
			fresh += (unsigned)set_bit(b, base + (g >> 55));
	} else {
		uint64_t g = a;
		for (unsigned i = 0; i < b->d; i++, g += step)
			fresh += (unsigned)set_bit(b, mulhi(g, b->m));
	}
	return fresh;
}

static int bloom_add_locked(struct sieve_base *sb, const char *url, size_t len)
{
	struct bloom *b = (struct bloom *)sb;
	unsigned fresh;

	sb->st.added++;
	fresh = check_and_set(b, url, len);
	if (fresh == 0)
		return SIEVE_OK; /* seen, or a false positive */
	b->bits_set += fresh;
	b->inserted++;
	if (!b->warned && b->bits_set > b->warn_bits) {
		b->warned = true;
		fprintf(stderr,
		        "sieve bloom: warning: estimated false-positive rate %.4g passed the "
		        "target %.4g "
		        "(%llu URLs in a filter sized for %llu): new URLs are being dropped more "
		        "often\n",
		        pow((double)b->bits_set / (double)b->m, b->d), b->target,
		        (unsigned long long)b->inserted, (unsigned long long)b->capacity);
	}
	sieve_emit(sb, url, len);
	return SIEVE_OK;
}

/* Writes BLOOM (the sync hook). */
static int bloom_snapshot(struct sieve_base *sb)
{
	struct bloom *b = (struct bloom *)sb;
	uint8_t h[BLOOM_HDR];
	uint64_t f[7] = { b->m, b->d, b->blocked, b->bits_set, b->inserted, b->capacity };

	memcpy(&f[6], &b->target, sizeof f[6]);
	le_put64s(h + 8, f, 7);
	return sieve_snapshot_write(sb, "BLOOM", BLOOM_MAGIC, h, sizeof h, b->word,
	                            (size_t)(b->m / 8));
}

static void bloom_destroy(struct sieve_base *sb)
{
	struct bloom *b = (struct bloom *)sb;

	sieve_base_release(sb);
	free(b->word);
	free(b);
}

static void bloom_stats_locked(struct sieve_base *sb, struct sieve_stats *out)
{
	struct bloom *b = (struct bloom *)sb;

	out->z_count = b->inserted;
	out->z_bytes = b->m / 8;
	out->filter_bits = b->m;
	out->filter_hashes = b->d;
	out->filter_bits_set = b->bits_set;
	out->filter_fp_estimate = pow((double)b->bits_set / (double)b->m, b->d);
	out->filter_fp_target = b->target;
}

/* Chooses m, d and the capacity from the configuration (see the top). */
static int bloom_size(struct bloom *b)
{
	const struct sieve_config *cfg = &b->base.cfg;
	const double ln2 = 0.69314718055994530942;
	double p = cfg->fp_rate > 0 ? cfg->fp_rate : 0.01;
	double bits, dd;

	if (!(p > 0 && p <= 0.5))
		return sieve_fail(&b->base, SIEVE_EINVAL, "bloom: fp_rate %g not in (0, 0.5]",
		                  cfg->fp_rate);
	b->target = p;
	if (cfg->expected_urls > 0) {
		bits = ceil((double)cfg->expected_urls * -log(p) / (ln2 * ln2));
		if (bits > 64.0 * (double)((size_t)1 << 40))
			return sieve_fail(&b->base, SIEVE_EINVAL,
			                  "bloom: %llu URLs at rate %g need too many bits",
			                  (unsigned long long)cfg->expected_urls, p);
		b->m = ((uint64_t)bits + BLOCK_BITS - 1) / BLOCK_BITS * BLOCK_BITS;
		b->capacity = cfg->expected_urls;
		dd = round((double)b->m * ln2 / (double)b->capacity);
	} else {
		size_t mem = cfg->memory ? cfg->memory : (size_t)64 << 20;
		b->m = (uint64_t)mem * 8 / BLOCK_BITS * BLOCK_BITS;
		if (b->m == 0)
			return sieve_fail(&b->base, SIEVE_EINVAL, "bloom: memory %zu too small",
			                  mem);
		dd = round(-log2(p));
		b->capacity = (uint64_t)((double)b->m * ln2 * ln2 / -log(p));
	}
	if (dd < 1)
		dd = 1;
	if (dd > MAX_HASHES)
		dd = MAX_HASHES;
	b->d = (unsigned)dd;
	return SIEVE_OK;
}

/* Loads BLOOM if present (its size wins over the configuration's). */
static int snapshot_load(struct bloom *b, bool *loaded)
{
	struct sieve_base *sb = &b->base;
	uint8_t h[BLOOM_HDR];
	uint64_t m, d, blocked, tbits;
	int rc = sieve_snapshot_read(sb, "BLOOM", BLOOM_MAGIC, h, sizeof h, loaded);

	if (rc != SIEVE_OK || !*loaded)
		return rc;
	m = le_get64(h + 8);
	d = le_get64(h + 16);
	blocked = le_get64(h + 24);
	tbits = le_get64(h + 56);
	if (m == 0 || m % BLOCK_BITS != 0 || m / 8 > SIZE_MAX || d < 1 || d > MAX_HASHES ||
	    blocked > 1 || le_get64(h + 32) > m)
		return sieve_fail(sb, SIEVE_ECORRUPT, "%s/BLOOM: corrupt header values", sb->dir);
	b->m = m;
	b->d = (unsigned)d;
	b->blocked = blocked != 0;
	b->bits_set = le_get64(h + 32);
	b->inserted = le_get64(h + 40);
	b->capacity = le_get64(h + 48);
	memcpy(&b->target, &tbits, sizeof tbits);
	b->word = malloc((size_t)(m / 8));
	if (b->word == NULL)
		return sieve_fail(sb, SIEVE_ENOMEM, "out of memory loading %s/BLOOM (%llu bits)",
		                  sb->dir, (unsigned long long)m);
	return sieve_snapshot_body(sb, "BLOOM", h, sizeof h, b->word, (size_t)(m / 8));
}

/* Sizes the filter, locks the folder and loads or allocates the bits. */
static int bloom_start(struct sieve_base *sb)
{
	struct bloom *b = (struct bloom *)sb;
	bool loaded = false;
	int rc = bloom_size(b);

	if (rc != SIEVE_OK)
		return rc;
	b->blocked = b->base.cfg.bloom_blocked != 0;
	rc = sieve_base_lock(&b->base);
	if (rc == SIEVE_OK)
		rc = snapshot_load(b, &loaded);
	if (rc != SIEVE_OK)
		return rc;
	if (!loaded) {
		b->word = calloc((size_t)(b->m / 64), sizeof(uint64_t));
		if (b->word == NULL)
			return sieve_fail(&b->base, SIEVE_ENOMEM,
			                  "out of memory for %llu filter bits",
			                  (unsigned long long)b->m);
	}
	b->blocks = b->m / BLOCK_BITS;
	b->warn_bits = (uint64_t)(pow(b->target, 1.0 / b->d) * (double)b->m);
	b->warned = b->bits_set > b->warn_bits;
	return SIEVE_OK;
}

/* A URL is decided inside its add; the state is the snapshot BLOOM. */
SIEVE_BASE_OPS(sieve_bloom_ops, "bloom", struct bloom, sieve_snapshot_checkpoint,
               .start = bloom_start, .destroy = bloom_destroy, .add_locked = bloom_add_locked,
               .sync_locked = bloom_snapshot, .stats_locked = bloom_stats_locked,
               .snapshot = "BLOOM", .decides_in_add = true);
