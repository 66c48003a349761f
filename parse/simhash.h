/*
 * simhash.h: Charikar's SimHash of a page's text (course notes 2.6).
 *
 * Data structure. A `struct simhash_builder` streams text: it cuts it into
 * tokens (maximal runs of ASCII letters and digits, lowercased, plus any
 * octet >= 0x80 so UTF-8 words stay whole; tokens longer than
 * SIMHASH_TOKEN_MAX bytes are cut there; tokens made only of digits all
 * count as one placeholder token, so dates and counters do not matter),
 * forms shingles of
 * SIMHASH_SHINGLE consecutive tokens, hashes each shingle with XXH3-64 and
 * keeps 64 signed counters: counter i goes up by one for each shingle whose
 * hash has bit i set and down by one otherwise. The fingerprint has bit i set
 * iff counter i > 0. Shingles are counted with multiplicity (a repeated
 * shingle weighs more). A text with fewer than SIMHASH_SHINGLE tokens is one
 * shingle of all of them; an empty text hashes to 0.
 *
 * Invariants: the fingerprint depends only on the token sequence, not on how
 * the text was split into simhash_builder_add() calls, nor on markup
 * boundaries that the caller marks with simhash_builder_break().
 *
 * Workload: one builder per parse thread, reset per page, fed every text
 * node of the page (hundreds of KiB); near-duplicates are pages within a few
 * bits (simhash_distance() <= 3), unrelated pages are about 32 bits apart.
 */
#ifndef PARSE_SIMHASH_H
#define PARSE_SIMHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIMHASH_SHINGLE 4
#define SIMHASH_TOKEN_MAX 64

struct simhash_builder;

/* New builder in the reset state, or NULL when out of memory. */
struct simhash_builder *simhash_builder_create(void);
/* Frees it; NULL is a no-op. */
void simhash_builder_destroy(struct simhash_builder *b);
/* Forgets everything fed so far (start of a new page). */
void simhash_builder_reset(struct simhash_builder *b);
/* Feeds len bytes of text; tokens may span calls. */
void simhash_builder_add(struct simhash_builder *b, const char *text, size_t len);
/* Ends the current token (a markup boundary), as a space would. */
void simhash_builder_break(struct simhash_builder *b);
/* Fingerprint of everything fed since the last reset (the builder is left
 * as it was, so more text may follow). */
uint64_t simhash_builder_value(const struct simhash_builder *b);

/* Focus terms (parse/focus.h), borrowed: each token's hash is looked up
 * in them as it ends, and the weights of those found summed (kept across
 * resets; NULL: none). */
struct focus_terms;
void simhash_builder_set_terms(struct simhash_builder *b, const struct focus_terms *terms);
/* The focus terms' weight sum and the tokens seen since the last reset. */
void simhash_builder_focus(const struct simhash_builder *b, double *weight_sum, uint64_t *words);
/* The hash the builder gives a token (word: len bytes of one token, the
 * first SIMHASH_TOKEN_MAX count), as focus terms are matched by it. */
uint64_t simhash_token_hash(const char *word, size_t len);

/* One-shot fingerprint of a text (no allocation). */
uint64_t simhash_text(const char *text, size_t len);

/* Hamming distance between two fingerprints (0..64). */
static inline int simhash_distance(uint64_t a, uint64_t b)
{
	return __builtin_popcountll(a ^ b);
}

#endif
