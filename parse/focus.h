/*
 * focus.h: the terms of a focused crawl and a page's relevance to them.
 *
 * Score. Weighted term frequency, normalised by the page's length: the
 * sum of the weights of the page's words that are focus terms, divided by
 * its number of words (at least FOCUS_MIN_WORDS, so a page of three
 * words, one a term, does not outrank a real article). Why not cosine
 * similarity of term vectors: its norm needs the count of every distinct
 * word of the page, a per-page table that grows with the page; weighted
 * term frequency needs one probe of the term set per word and two
 * running sums, with the same length normalisation in effect (a long
 * page does not win by length, as the density is a share of its words).
 *
 * The words are the SimHash builder's tokens (parse/simhash.h: maximal
 * runs of letters and digits, ASCII lowercased, the page's visible text
 * only: no markup, script or style), matched by the token hash it
 * computes anyway: the text pass is the near-duplicate one, the focus
 * costs one probe per word (simhash_builder_set_terms).
 *
 * Data structure: an open-addressing table of (token hash, weight),
 * linear probing, its size a power of two at least twice the terms; a
 * token hash identifies a word of up to 8 bytes exactly (a bijection) and
 * a longer one by XXH3-64. Memory: 16 bytes a slot, at most
 * 2 * FOCUS_TERMS_MAX slots (128 KiB); read-only once loaded, so every
 * parse thread shares one.
 *
 * File: one term a line, optionally followed by blanks and a weight (a
 * number in (0, FOCUS_WEIGHT_MAX], default 1); blank lines and lines
 * starting with '#' are skipped. A term is one word as the tokenizer cuts
 * them (letters, digits, UTF-8 bytes; not digits only: numbers all hash
 * alike; at most SIMHASH_TOKEN_MAX bytes), matched case-insensitively for
 * ASCII. A term listed twice is an error.
 */
#ifndef PARSE_FOCUS_H
#define PARSE_FOCUS_H

#include <stddef.h>
#include <stdint.h>

#define FOCUS_TERMS_MAX 4096
#define FOCUS_FILE_MAX (1024u * 1024u)
#define FOCUS_WEIGHT_MAX 1000.0
/* The fewest words a page's score is divided by. */
#define FOCUS_MIN_WORDS 50
/* Scores are fixed-point: this many units make 1.0 (a page whose every
 * word is a term of weight 1). */
#define FOCUS_SCORE_ONE 10000u
/* "Not scored" (a page that was not parsed, or no focus). */
#define FOCUS_SCORE_NONE UINT32_MAX

struct focus_terms;

/* Reads a focus file (format above). 0, or -1 with a message naming the
 * file and line in err. */
int focus_terms_load(const char *path, struct focus_terms **out, char *err, size_t errcap);
/* The same from text (len bytes), name used in messages. */
int focus_terms_parse(const char *text, size_t len, const char *name, struct focus_terms **out,
                      char *err, size_t errcap);
void focus_terms_destroy(struct focus_terms *t);
size_t focus_terms_count(const struct focus_terms *t);

/* The weight of the word whose token hash (simhash_token_hash) is h; 0
 * when it is no term. */
double focus_terms_weight(const struct focus_terms *t, uint64_t h);

/* A filter of the terms' hashes: bit (h >> 56) of these 256 bits is set
 * for every term's hash h, so a word whose bit is clear is no term. With
 * a few terms it spares most words the probe (and the call). */
#define FOCUS_FILTER_WORDS 4
void focus_terms_filter(const struct focus_terms *t, uint64_t filter[FOCUS_FILTER_WORDS]);

static inline int focus_filter_may_hold(const uint64_t filter[FOCUS_FILTER_WORDS], uint64_t h)
{
	return (int)(filter[h >> 62] >> (h >> 56 & 63) & 1);
}

/* A page's score from its terms' weight sum and its number of words, in
 * FOCUS_SCORE_ONE units (saturating below FOCUS_SCORE_NONE). */
uint32_t focus_score(double weight_sum, uint64_t words);

/* The tier (best first) a page's links inherit from its score, against
 * the on-topic threshold (same units): 3 at 4x the threshold or more, 2
 * at 2x, 1 at 1x, 0 above 0, -1 for a page with no term (an unscored URL
 * has tier 0, as without focus). */
int focus_tier(uint32_t score, uint32_t threshold);

#endif
