/*
 * simhash.c: streaming SimHash over word shingles (see simhash.h).
 *
 * Each token is hashed once (up to 8 bytes: a bijective 64-bit mix of its
 * bytes and length; longer: XXH3-64); a shingle's hash mixes the
 * SIMHASH_SHINGLE token hashes in order (kept in a shift register, so no token
 * text is kept beyond the current one).
 *
 * Text is scanned 64 bytes at a time: one bit mask of the token bytes and
 * one of the digits (SSE2 compares where available, else a byte loop), so
 * a token's bounds are two counts of trailing zeros and its bytes are
 * lowercased and stored 8 at a time. The last bytes of a text go through a
 * zero-padded copy, so nothing reads past the text.
 *
 * Counting the 64 bits of each shingle hash one counter at a time cost more
 * than the rest of a token's work,
 * so it is done 64 lanes at a time: shingle hashes are gathered 16 at a
 * time and added by a carry-save adder tree (Harley-Seal: 15 CSAs of 5
 * word operations per 16 hashes). Its state is four words: lane i of
 * `ones`, `twos`, `fours`, `eights` holds bits 0-3 of the running count of
 * bit i, and each carry out of `eights` (16 shingles with that bit) is
 * added, 8 lanes per 64-bit addition through a spread table, into `acc`,
 * flushed into `count16` before a byte can overflow. The count of bit i is
 * 16 * count16[i] + ones_i + 2 twos_i + 4 fours_i + 8 eights_i + the bits
 * of the hashes still waiting in `batch`: the same integers as one counter
 * per bit, so the fingerprint is exactly the plain algorithm's.
 */
#include "parse/simhash.h"

#include "parse/focus.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
/* Inlined: tokens are short and hashed one by one, a call per token through
 * the shared library costs more than the hash itself. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#define SIMHASH_BATCH 16

struct simhash_builder {
	uint32_t count16[64];                /* carries out of eights (flushed) */
	uint64_t acc[8];                     /* byte j of acc[b]: pending carries of bit 8b+j */
	uint32_t pending;                    /* carry words in acc (< 255: bytes never overflow) */
	uint64_t ones, twos, fours, eights;  /* carry-save lanes, bits 0-3 of each count */
	uint64_t batch[SIMHASH_BATCH];       /* shingle hashes not yet added */
	uint32_t nbatch;                     /* hashes in batch (< SIMHASH_BATCH) */
	uint64_t shingles;                   /* shingles counted since reset */
	uint64_t ring[SIMHASH_SHINGLE];      /* mixed hashes of the last tokens, oldest first */
	uint64_t ntokens;                    /* tokens seen since reset */
	size_t toklen;                       /* bytes of the current token */
	uint64_t tokword;                    /* its first 8 bytes, little-endian */
	bool digits_only;                    /* the current token is a number */
	char tok[SIMHASH_TOKEN_MAX + 8];     /* + 8: whole-word stores */
	const struct focus_terms *terms;     /* NULL: no focus (kept by reset) */
	uint64_t filter[FOCUS_FILTER_WORDS]; /* the terms' (kept by reset) */
	double focus_sum;                    /* the weights of the terms seen since reset */
};

/* spread[v]: byte j is bit j of v, so 8 additions count 64 bits at once. */
#define SP(v)                                                                                      \
	((uint64_t)((v)&1) | ((uint64_t)(((v) >> 1) & 1) << 8) |                                   \
	 ((uint64_t)(((v) >> 2) & 1) << 16) | ((uint64_t)(((v) >> 3) & 1) << 24) |                 \
	 ((uint64_t)(((v) >> 4) & 1) << 32) | ((uint64_t)(((v) >> 5) & 1) << 40) |                 \
	 ((uint64_t)(((v) >> 6) & 1) << 48) | ((uint64_t)(((v) >> 7) & 1) << 56))
#define SP4(v) SP(v), SP((v) + 1), SP((v) + 2), SP((v) + 3)
#define SP16(v) SP4(v), SP4((v) + 4), SP4((v) + 8), SP4((v) + 12)
#define SP64(v) SP16(v), SP16((v) + 16), SP16((v) + 32), SP16((v) + 48)
static const uint64_t spread[256] = { SP64(0), SP64(64), SP64(128), SP64(192) };
#undef SP64
#undef SP16
#undef SP4
#undef SP

/* Token bytes: ASCII letters and digits, and every octet >= 0x80 (so
 * UTF-8 letters stay in their word); everything else separates tokens. A
 * token byte enters the token with ASCII letters lowercased. */
#if !defined(__SSE2__) /* block_masks' SSE2 path tests the same bytes */
static inline bool is_token_byte(unsigned char c)
{
	unsigned char lower = c | 0x20;
	return c >= 0x80 || (c >= '0' && c <= '9') || (lower >= 'a' && lower <= 'z');
}
#endif

static void flush_acc(struct simhash_builder *b)
{
	for (int k = 0; k < 8; k++) {
		for (int j = 0; j < 8; j++)
			b->count16[8 * k + j] += (uint32_t)((b->acc[k] >> (8 * j)) & 0xFF);
		b->acc[k] = 0;
	}
	b->pending = 0;
}

/* Carry-save adder: a + b + c per lane = 2 * high + low. */
static inline void csa(uint64_t *high, uint64_t *low, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t u = a ^ b;
	*high = (a & b) | (u & c);
	*low = u ^ c;
}

/* Adds two words of ones lane-wise into ones/twos; returns the carry into
 * fours. */
static inline uint64_t add_pair(struct simhash_builder *b, const uint64_t *d)
{
	uint64_t twos_a, twos_b, fours;
	csa(&twos_a, &b->ones, b->ones, d[0], d[1]);
	csa(&twos_b, &b->ones, b->ones, d[2], d[3]);
	csa(&fours, &b->twos, b->twos, twos_a, twos_b);
	return fours;
}

/* Adds the full batch of 16 hashes into the carry-save state. */
static void add_batch(struct simhash_builder *b)
{
	const uint64_t *d = b->batch;
	uint64_t fours_a, fours_b, eights_a, eights_b, sixteens;
	fours_a = add_pair(b, d);
	fours_b = add_pair(b, d + 4);
	csa(&eights_a, &b->fours, b->fours, fours_a, fours_b);
	fours_a = add_pair(b, d + 8);
	fours_b = add_pair(b, d + 12);
	csa(&eights_b, &b->fours, b->fours, fours_a, fours_b);
	csa(&sixteens, &b->eights, b->eights, eights_a, eights_b);
	for (int k = 0; k < 8; k++)
		b->acc[k] += spread[(sixteens >> (8 * k)) & 0xFF];
	b->nbatch = 0;
	if (++b->pending == 255)
		flush_acc(b);
}

static inline void count_shingle(struct simhash_builder *b, uint64_t h)
{
	b->batch[b->nbatch] = h;
	b->shingles++;
	if (++b->nbatch == SIMHASH_BATCH)
		add_batch(b);
}

/* MurmurHash3's 64-bit finalizer: a bijection with full avalanche. */
static inline uint64_t fmix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xFF51AFD7ED558CCDULL;
	h ^= h >> 33;
	h *= 0xC4CEB9FE1A85EC53ULL;
	h ^= h >> 33;
	return h;
}

static const uint64_t position_mul[SIMHASH_SHINGLE] = {
	0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL, 0x27D4EB2F165667C5ULL
};

/* A token hash as it enters the ring: folded once here rather than once
 * per shingle it is part of. */
static inline uint64_t ring_value(uint64_t th)
{
	return th ^ (th >> 29);
}

static inline uint64_t mix_final(uint64_t h)
{
	h ^= h >> 32;
	h *= 0xD6E8FEB86659FD93ULL;
	h ^= h >> 32;
	return h;
}

/* Shingle hash from n ring values (token hashes, already uniform): a
 * different odd multiplier per position (order matters, and the products
 * are independent, so they run in parallel), then a 64-bit finalizer. */
static uint64_t mix_tokens(const uint64_t *t, size_t n)
{
	uint64_t h = 0x2545F4914F6CDD1DULL + n;
	for (size_t i = 0; i < n; i++)
		h += t[i] * position_mul[i];
	return mix_final(h);
}

/* mix_tokens(t, SIMHASH_SHINGLE), written out: the per-token path. */
static inline uint64_t mix_shingle(const uint64_t *t)
{
	_Static_assert(SIMHASH_SHINGLE == 4, "mix_shingle is written for 4 tokens");
	uint64_t h = 0x2545F4914F6CDD1DULL + SIMHASH_SHINGLE;
	h += t[0] * position_mul[0] + t[1] * position_mul[1];
	h += t[2] * position_mul[2] + t[3] * position_mul[3];
	return mix_final(h);
}

/* The hash of the current token (toklen > 0). Numbers (dates, counters,
 * prices) all hash alike, so pages that differ only by them are
 * near-duplicates (course notes 2.6: "removing dates and other data that
 * differ by automatic mechanisms"). */
static inline uint64_t token_hash(const struct simhash_builder *b)
{
	if (b->digits_only)
		return 0x6A09E667F3BCC908ULL;
	if (b->toklen <= 8) /* most words: a bijection of (bytes, length), so no collisions */
		return fmix64(b->tokword ^ ((uint64_t)b->toklen << 59));
	return XXH3_64bits(b->tok, b->toklen);
}

static inline void end_token(struct simhash_builder *b)
{
	if (b->toklen == 0)
		return;
	uint64_t th = token_hash(b);
	if (b->terms && focus_filter_may_hold(b->filter, th))
		b->focus_sum += focus_terms_weight(b->terms, th);
	b->toklen = 0;
	b->tokword = 0;
	for (int k = 0; k + 1 < SIMHASH_SHINGLE; k++)
		b->ring[k] = b->ring[k + 1];
	b->ring[SIMHASH_SHINGLE - 1] = ring_value(th);
	if (++b->ntokens >= SIMHASH_SHINGLE)
		count_shingle(b, mix_shingle(b->ring));
}

struct simhash_builder *simhash_builder_create(void)
{
	return calloc(1, sizeof(struct simhash_builder));
}

void simhash_builder_destroy(struct simhash_builder *b)
{
	free(b);
}

void simhash_builder_reset(struct simhash_builder *b)
{
	const struct focus_terms *terms = b->terms;
	uint64_t filter[FOCUS_FILTER_WORDS];
	memcpy(filter, b->filter, sizeof filter);
	memset(b, 0, sizeof *b);
	b->terms = terms;
	memcpy(b->filter, filter, sizeof filter);
}

void simhash_builder_set_terms(struct simhash_builder *b, const struct focus_terms *terms)
{
	b->terms = terms;
	if (terms)
		focus_terms_filter(terms, b->filter);
}

void simhash_builder_focus(const struct simhash_builder *b, double *weight_sum, uint64_t *words)
{
	*weight_sum = b->focus_sum;
	*words = b->ntokens;
	if (b->toklen > 0) { /* the token not yet ended */
		*words += 1;
		if (b->terms)
			*weight_sum += focus_terms_weight(b->terms, token_hash(b));
	}
}

uint64_t simhash_token_hash(const char *word, size_t len)
{
	struct simhash_builder b;
	memset(&b, 0, sizeof b);
	simhash_builder_add(&b, word, len);
	return b.toklen > 0 ? token_hash(&b) : 0;
}

#define BYTES(c) (0x0101010101010101ULL * (uint64_t)(c))
#define HIGH BYTES(0x80)
#define SIMHASH_BLOCK 64

/* Bits 0..n-1 set (n <= 64). */
static inline uint64_t low_bits(size_t n)
{
	return n >= 64 ? ~0ULL : (1ULL << n) - 1;
}

/* Bit j of *tok: byte j of the 64 at blk is a token byte;
 * of *dig: it is a digit. */
static inline void block_masks(const unsigned char *blk, uint64_t *tok, uint64_t *dig)
{
	uint64_t t = 0, d = 0;
#if defined(__SSE2__)
	/* Signed compares: bytes >= 0x80 are negative, so neither letters nor
	 * digits; the sign mask adds them. */
	for (int k = 0; k < SIMHASH_BLOCK / 16; k++) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(blk + 16 * k));
		__m128i lower = _mm_or_si128(x, _mm_set1_epi8(0x20));
		__m128i letter = _mm_and_si128(_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
		                               _mm_cmplt_epi8(lower, _mm_set1_epi8('z' + 1)));
		__m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
		                              _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
		unsigned tm = (unsigned)_mm_movemask_epi8(_mm_or_si128(letter, digit)) |
		              (unsigned)_mm_movemask_epi8(x);
		t |= (uint64_t)tm << (16 * k);
		d |= (uint64_t)(unsigned)_mm_movemask_epi8(digit) << (16 * k);
	}
#else
	for (int j = 0; j < SIMHASH_BLOCK; j++) {
		t |= (uint64_t)is_token_byte(blk[j]) << j;
		d |= (uint64_t)(blk[j] >= '0' && blk[j] <= '9') << j;
	}
#endif
	*tok = t;
	*dig = d;
}

/* Appends r token bytes at s (8 readable bytes past each chunk start) to
 * the current token, as they enter it (ASCII lowercased): its first 8 in
 * tokword, its first SIMHASH_TOKEN_MAX in tok. */
static inline void append_run(struct simhash_builder *b, const unsigned char *s, size_t r)
{
	if (b->toklen == 0 && r <= 8) { /* most words: one chunk, a new token */
		uint64_t x;
		memcpy(&x, s, 8);
		uint64_t word = (x | ((~x & HIGH) >> 2)) & low_bits(8 * r);
		b->tokword = word;
		memcpy(b->tok, &word, 8);
		b->toklen = r;
		return;
	}
	while (r > 0) {
		size_t k = r < 8 ? r : 8;
		uint64_t x;
		memcpy(&x, s, 8);
		/* 0x20 into every ASCII byte: lowercases letters, keeps digits */
		uint64_t word = (x | ((~x & HIGH) >> 2)) & low_bits(8 * k);
		if (b->toklen < 8)
			b->tokword |= word << (8 * b->toklen);
		size_t room = SIMHASH_TOKEN_MAX - b->toklen;
		memcpy(b->tok + b->toklen, &word, 8); /* tok has 8 bytes of slack */
		b->toklen += k < room ? k : room;
		s += k;
		r -= k;
	}
}

/* Tokens of the first n (<= 64) bytes of the 64 readable at blk (+ 8
 * more readable past them); a token reaching byte n goes on in the next
 * bytes fed. */
static void add_block(struct simhash_builder *b, const unsigned char *blk, size_t n)
{
	uint64_t tm, dm;
	block_masks(blk, &tm, &dm);
	tm &= low_bits(n);
	size_t i = 0;
	while (i < n) {
		uint64_t rest = tm >> i;
		if (b->toklen == 0) {
			if (rest == 0)
				return;
			i += (size_t)__builtin_ctzll(rest);
			rest = tm >> i;
			b->digits_only = true;
		}
		uint64_t gaps = ~rest; /* bits past the block are gaps too */
		size_t r = gaps ? (size_t)__builtin_ctzll(gaps) : SIMHASH_BLOCK;
		if (r > 0) {
			uint64_t run = low_bits(r);
			b->digits_only = b->digits_only && ((dm >> i) & run) == run;
			append_run(b, blk + i, r);
			i += r;
		}
		if (i < n)
			end_token(b); /* byte i is a separator */
	}
}

void simhash_builder_add(struct simhash_builder *b, const char *text, size_t len)
{
	const unsigned char *p = (const unsigned char *)text, *end = p + len;
	/* The last bytes go through a zero-padded copy, so blocks and runs
	 * never read past the text. */
	unsigned char pad[SIMHASH_BLOCK + 8];
	while (p < end) {
		size_t left = (size_t)(end - p);
		size_t n = left < SIMHASH_BLOCK ? left : SIMHASH_BLOCK;
		const unsigned char *blk = p;
		if (left < SIMHASH_BLOCK + 8) {
			memset(pad, 0, sizeof(pad));
			memcpy(pad, p, n);
			blk = pad;
		}
		add_block(b, blk, n);
		p += n;
	}
}

void simhash_builder_break(struct simhash_builder *b)
{
	end_token(b);
}

/* Number of shingles counted in tmp with bit i set, for every i. */
static void bit_counts(struct simhash_builder *tmp, uint64_t counts[64])
{
	flush_acc(tmp);
	for (int i = 0; i < 64; i++) {
		uint64_t c = 16 * (uint64_t)tmp->count16[i];
		c += (tmp->ones >> i) & 1;
		c += 2 * ((tmp->twos >> i) & 1);
		c += 4 * ((tmp->fours >> i) & 1);
		c += 8 * ((tmp->eights >> i) & 1);
		for (uint32_t j = 0; j < tmp->nbatch; j++)
			c += (tmp->batch[j] >> i) & 1;
		counts[i] = c;
	}
}

uint64_t simhash_builder_value(const struct simhash_builder *b)
{
	struct simhash_builder tmp = *b;
	end_token(&tmp);
	if (tmp.ntokens == 0)
		return 0;
	if (tmp.ntokens < SIMHASH_SHINGLE)
		count_shingle(&tmp, mix_tokens(tmp.ring + SIMHASH_SHINGLE - tmp.ntokens,
		                               (size_t)tmp.ntokens));
	uint64_t counts[64];
	bit_counts(&tmp, counts);
	/* bit i is set iff more shingles have it set than clear */
	uint64_t v = 0;
	for (int i = 0; i < 64; i++)
		if (2 * counts[i] > tmp.shingles)
			v |= (uint64_t)1 << i;
	return v;
}

uint64_t simhash_text(const char *text, size_t len)
{
	struct simhash_builder b;
	memset(&b, 0, sizeof b);
	simhash_builder_add(&b, text, len);
	return simhash_builder_value(&b);
}
