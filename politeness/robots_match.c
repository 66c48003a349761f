/*
 * robots_match.c: the compiled rules of a robots.txt and the check of a
 * path against them (see robots.h for the contract, robots_internal.h for
 * the rule kinds).
 *
 * A check finds the rule of highest priority that matches the path (RFC
 * 9309 2.2.2: the longest match wins, Allow on ties) in three steps:
 *   1. the candidates: the rules whose literal prefix is a prefix of the
 *      path (no other rule can match);
 *   2. the best PREFIX or EXACT candidate: certain, and cheap to test;
 *   3. the WILD candidates of higher priority than it, each searched in
 *      the path, best first. More of them than the file's wild_cap: the
 *      path is refused unchecked (disallowed), so that no check costs more
 *      than wild_cap searches of the path.
 * Small files (fewer than ROBOTS_INDEX_MIN_RULES rules) find the candidates
 * by going over every rule. Larger ones keep an index: the rules grouped
 * into buckets by literal prefix (a bucket knows its best PREFIX and best
 * EXACT rule and lists its WILD rules best first), the buckets in an
 * open-addressing table keyed by the prefix's FNV-1a hash, and the distinct
 * prefix lengths in ascending order. One pass over the path hashes each of
 * its prefixes of such a length and looks it up: a check costs
 * O(path + prefixes of the path that are literal prefixes of rules) before
 * step 3, whatever the number of rules.
 *
 * Memory of the index: 40 bytes a bucket, 8 a table slot (two a bucket at
 * most), 4 a distinct length and 4 a WILD rule.
 */
#include "politeness/robots_internal.h"

#include "frontier/base/ascii.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define RULE_NONE UINT32_MAX
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

struct robots_bucket {
	const char *text;                 /* the literal prefix: a rule's pattern, borrowed */
	uint64_t hash;                    /* FNV-1a of the literal prefix */
	uint32_t lit;                     /* its length */
	uint32_t prefix_rule, exact_rule; /* the best of each kind, or RULE_NONE */
	uint32_t wild_first, wild_n;      /* its WILD rules: wild[first..first+n), best first */
};

/* One block: the struct, then the arrays its pointers name. */
struct robots_index {
	struct robots_bucket *buckets;
	uint32_t nbuckets;
	uint32_t *slots; /* bucket + 1; 0 = empty */
	uint32_t mask;
	uint32_t *lens; /* distinct literal prefix lengths, ascending */
	uint32_t nlens;
	uint32_t *wild; /* rule numbers, grouped by bucket */
};

/* Does `pat` (with '*' and a final '$') match a prefix of `path`?
 * The pattern is cut at its stars: the first piece must be a prefix, each
 * middle piece is matched at its leftmost place after the previous one
 * (leftmost is never worse with only '*' wildcards), and the last piece
 * must be a suffix when anchored by '$'. memmem keeps it linear, so a
 * hostile pattern cannot make a check quadratic. */
static bool pattern_match(const char *pat, size_t plen, const char *path, size_t len)
{
	bool anchored = plen > 0 && pat[plen - 1] == '$';
	if (anchored)
		plen--;
	const char *star = memchr(pat, '*', plen);
	if (!star) {
		if (anchored)
			return len == plen && memcmp(pat, path, plen) == 0;
		return plen <= len && memcmp(pat, path, plen) == 0;
	}
	size_t first = (size_t)(star - pat);
	if (first > len || memcmp(pat, path, first) != 0)
		return false;
	size_t pos = first;
	size_t p = first + 1; /* start of the next piece */
	for (;;) {
		const char *next = memchr(pat + p, '*', plen - p);
		size_t seglen = next ? (size_t)(next - (pat + p)) : plen - p;
		if (!next) {
			/* the last piece */
			if (anchored)
				return len - pos >= seglen &&
				       memcmp(path + len - seglen, pat + p, seglen) == 0;
			return seglen == 0 ||
			       memmem(path + pos, len - pos, pat + p, seglen) != NULL;
		}
		if (seglen > 0) {
			const char *found = memmem(path + pos, len - pos, pat + p, seglen);
			if (!found)
				return false;
			pos = (size_t)(found - path) + seglen;
		}
		p += seglen + 1;
	}
}

static void rule_classify(struct robots_rule *r)
{
	size_t plen = r->len;
	bool anchored = plen > 0 && r->pat[plen - 1] == '$';
	if (anchored)
		plen--;
	const char *star = memchr(r->pat, '*', plen);
	if (!star) {
		r->lit = (uint32_t)plen;
		r->kind = anchored ? ROBOTS_RULE_EXACT : ROBOTS_RULE_PREFIX;
		return;
	}
	r->lit = (uint32_t)(star - r->pat);
	r->kind = ROBOTS_RULE_PREFIX; /* only stars after the literal prefix */
	for (size_t i = r->lit; i < plen; i++)
		if (r->pat[i] != '*')
			r->kind = ROBOTS_RULE_WILD;
}

/* ---- the most WILD rules one path can meet ---- */

struct lit_ref {
	const char *p;
	uint32_t n;
};

static int lit_cmp(const void *a, const void *b)
{
	const struct lit_ref *x = a, *y = b;
	return ascii_bytes_cmp(x->p, x->n, y->p, y->n);
}

/* The longest chain of WILD literal prefixes, each a prefix of the next,
 * counted with repeats: in sorted order a prefix comes before every text it
 * starts (and before any text that does not), so a stack holding the chain
 * that ends at the current prefix finds it in one pass. */
static int wild_max(struct robots *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nrules; i++)
		n += r->rules[i].kind == ROBOTS_RULE_WILD;
	r->wild_max = 0;
	if (n == 0)
		return ROBOTS_OK;
	struct lit_ref *v = malloc(n * sizeof *v), *stack = malloc(n * sizeof *stack);
	if (!v || !stack) {
		free(v);
		free(stack);
		return ROBOTS_ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < r->nrules; i++)
		if (r->rules[i].kind == ROBOTS_RULE_WILD)
			v[n++] = (struct lit_ref){ r->rules[i].pat, r->rules[i].lit };
	qsort(v, n, sizeof *v, lit_cmp);
	size_t top = 0; /* stack[k] is a prefix of stack[k + 1]; depth = top */
	for (size_t i = 0; i < n; i++) {
		while (top > 0 && !(stack[top - 1].n <= v[i].n &&
		                    memcmp(stack[top - 1].p, v[i].p, stack[top - 1].n) == 0))
			top--;
		stack[top++] = v[i];
		if (top > r->wild_max)
			r->wild_max = (uint32_t)top;
	}
	free(v);
	free(stack);
	return ROBOTS_OK;
}

/* ---- the index ---- */

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= FNV_PRIME;
	}
	return h;
}

static uint32_t slot_of(uint64_t hash, uint32_t lit, uint32_t mask)
{
	uint64_t k = hash ^ ((uint64_t)lit * 0x9E3779B97F4A7C15ull);
	return (uint32_t)(k ^ (k >> 32)) & mask;
}

struct ix_entry {
	uint64_t hash;
	const char *text;
	uint32_t lit, rule;
};

static int entry_cmp(const void *a, const void *b)
{
	const struct ix_entry *x = a, *y = b;
	if (x->lit != y->lit)
		return x->lit < y->lit ? -1 : 1;
	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	int c = memcmp(x->text, y->text, x->lit);
	if (c)
		return c;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

void robots__index_free(struct robots_index *ix)
{
	free(ix);
}

/* Fills ix's buckets, WILD lists and lengths from the sorted entries. */
static void index_fill(struct robots_index *ix, const struct robots *r, const struct ix_entry *e,
                       size_t n)
{
	uint32_t nwild = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct robots_bucket *b = &ix->buckets[ix->nbuckets++];
		*b = (struct robots_bucket){ e[i].text, e[i].hash, e[i].lit, RULE_NONE,
			                     RULE_NONE, nwild,     0 };
		for (; j < n && e[j].lit == e[i].lit && e[j].hash == e[i].hash &&
		       memcmp(e[j].text, e[i].text, e[i].lit) == 0;
		     j++) {
			const struct robots_rule *rule = &r->rules[e[j].rule];
			if (rule->kind == ROBOTS_RULE_WILD)
				ix->wild[nwild++] = e[j].rule;
			else if (rule->kind == ROBOTS_RULE_EXACT && b->exact_rule == RULE_NONE)
				b->exact_rule = e[j].rule;
			else if (rule->kind == ROBOTS_RULE_PREFIX && b->prefix_rule == RULE_NONE)
				b->prefix_rule = e[j].rule;
		}
		b->wild_n = nwild - b->wild_first;
		if (ix->nlens == 0 || ix->lens[ix->nlens - 1] != b->lit)
			ix->lens[ix->nlens++] = b->lit;
		uint32_t s = slot_of(b->hash, b->lit, ix->mask);
		while (ix->slots[s] != 0)
			s = (s + 1) & ix->mask;
		ix->slots[s] = ix->nbuckets;
		i = j;
	}
}

static int index_build(struct robots *r)
{
	size_t n = r->nrules, cap = 4;
	while (cap < 2 * n)
		cap *= 2;
	struct robots_index *ix =
	        calloc(1, sizeof *ix + n * sizeof *ix->buckets + (cap + 2 * n) * sizeof *ix->slots);
	struct ix_entry *e = malloc(n * sizeof *e);
	if (!ix || !e) {
		free(e);
		robots__index_free(ix);
		return ROBOTS_ENOMEM;
	}
	ix->mask = (uint32_t)cap - 1;
	ix->buckets = (struct robots_bucket *)(ix + 1);
	ix->slots = (uint32_t *)(ix->buckets + n);
	ix->lens = ix->slots + cap;
	ix->wild = ix->lens + n;
	for (size_t i = 0; i < n; i++) {
		const struct robots_rule *rule = &r->rules[i];
		e[i] = (struct ix_entry){ fnv(FNV_OFFSET, rule->pat, rule->lit), rule->pat,
			                  rule->lit, (uint32_t)i };
	}
	qsort(e, n, sizeof *e, entry_cmp);
	index_fill(ix, r, e, n);
	free(e);
	r->index = ix;
	return ROBOTS_OK;
}

int robots__compile(struct robots *r)
{
	for (size_t i = 0; i < r->nrules; i++)
		rule_classify(&r->rules[i]);
	robots__index_free(r->index);
	r->index = NULL;
	int rc = wild_max(r);
	if (rc == ROBOTS_OK && r->nrules >= ROBOTS_INDEX_MIN_RULES)
		rc = index_build(r);
	return rc;
}

/* ---- the check ---- */

/* Whether rule's literal prefix starts path[n]. */
static bool lit_starts(const struct robots_rule *rule, const char *path, size_t n)
{
	return rule->lit <= n && memcmp(rule->pat, path, rule->lit) == 0;
}

/* Better of two rule numbers: the lower (RULE_NONE is the worst). */
static uint32_t better(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Whether rule i could change the verdict of rule best: it is longer, or
 * as long and an Allow against a Disallow (a rule of the same length and
 * verdict, placed before best by its bytes alone, could not). */
static bool outranks(const struct robots *r, uint32_t i, uint32_t best)
{
	if (best == RULE_NONE)
		return true;
	const struct robots_rule *a = &r->rules[i], *b = &r->rules[best];
	return a->len > b->len || (a->len == b->len && a->allow && !b->allow);
}

/* Small files: every rule in priority order. RULE_NONE when nothing
 * matches, *capped when past wild_cap. */
static uint32_t check_linear(const struct robots *r, const char *path, size_t n, bool *capped)
{
	uint32_t best = RULE_NONE, nwild = 0;
	for (uint32_t i = 0; i < r->nrules; i++) {
		const struct robots_rule *rule = &r->rules[i];
		if (rule->kind != ROBOTS_RULE_WILD && lit_starts(rule, path, n) &&
		    (rule->kind == ROBOTS_RULE_PREFIX || rule->lit == n)) {
			best = i;
			break;
		}
	}
	uint32_t end = 0; /* the rules that outrank best: [0, end) */
	while (end < r->nrules && outranks(r, end, best))
		end++;
	for (uint32_t i = 0; i < end; i++)
		nwild += r->rules[i].kind == ROBOTS_RULE_WILD && lit_starts(&r->rules[i], path, n);
	if (r->wild_cap != 0 && nwild > r->wild_cap) {
		*capped = true;
		return best;
	}
	for (uint32_t i = 0; i < end; i++) {
		const struct robots_rule *rule = &r->rules[i];
		if (rule->kind == ROBOTS_RULE_WILD && lit_starts(rule, path, n) &&
		    pattern_match(rule->pat, rule->len, path, n))
			return i;
	}
	return best;
}

static const struct robots_bucket *bucket_find(const struct robots_index *ix, uint64_t hash,
                                               uint32_t lit, const char *path)
{
	for (uint32_t s = slot_of(hash, lit, ix->mask); ix->slots[s] != 0; s = (s + 1) & ix->mask) {
		const struct robots_bucket *b = &ix->buckets[ix->slots[s] - 1];
		if (b->hash == hash && b->lit == lit && memcmp(b->text, path, lit) == 0)
			return b;
	}
	return NULL;
}

/* Large files, through the index; cand has room for ix->nlens buckets. */
static uint32_t check_indexed(const struct robots *r, const char *path, size_t n,
                              const struct robots_bucket **cand, bool *capped)
{
	const struct robots_index *ix = r->index;
	uint32_t best = RULE_NONE, ncand = 0, nwild = 0;
	uint64_t h = FNV_OFFSET;
	size_t hashed = 0;
	for (uint32_t k = 0; k < ix->nlens && ix->lens[k] <= n; k++) {
		h = fnv(h, path + hashed, ix->lens[k] - hashed);
		hashed = ix->lens[k];
		const struct robots_bucket *b = bucket_find(ix, h, ix->lens[k], path);
		if (!b)
			continue;
		cand[ncand++] = b;
		best = better(best, b->prefix_rule);
		if (b->lit == n)
			best = better(best, b->exact_rule);
	}
	uint32_t cap = r->wild_cap != 0 ? r->wild_cap : UINT32_MAX;
	for (uint32_t c = 0; c < ncand && nwild <= cap; c++) {
		const struct robots_bucket *b = cand[c];
		for (uint32_t w = 0; w < b->wild_n && nwild <= cap &&
		                     outranks(r, ix->wild[b->wild_first + w], best);
		     w++)
			nwild++;
	}
	if (nwild > cap) {
		*capped = true;
		return best;
	}
	/* the best matching WILD candidate better than best, bucket by bucket */
	for (uint32_t c = 0; c < ncand; c++) {
		const struct robots_bucket *b = cand[c];
		for (uint32_t w = 0; w < b->wild_n; w++) {
			uint32_t i = ix->wild[b->wild_first + w];
			if (!outranks(r, i, best))
				break;
			if (pattern_match(r->rules[i].pat, r->rules[i].len, path, n)) {
				best = i;
				break;
			}
		}
	}
	return best;
}

bool robots_allowed(const struct robots *r, const char *path, size_t len)
{
	if (!r)
		return true;
	if (len == 0 || !path) {
		path = "/";
		len = 1;
	}
	if (len == 11 && memcmp(path, "/robots.txt", 11) == 0)
		return true;
	if (r->deny_all)
		return false;
	if (r->nrules == 0)
		return true;

	/* one block: the normalized path, then (indexed files) the candidates */
	enum { STACK_BYTES = 8192 };
	_Alignas(max_align_t) char stackbuf[STACK_BYTES];
	size_t pcap = (3 * len + 1 + 7) & ~(size_t)7;
	size_t ccap = r->index ? r->index->nlens * sizeof(const struct robots_bucket *) : 0;
	char *buf = stackbuf;
	if (pcap + ccap > sizeof stackbuf) {
		buf = malloc(pcap + ccap);
		if (!buf)
			return false; /* when unsure, don't */
	}
	size_t n = 0;
	robots_path_normalize(path, len, buf, pcap, &n);
	bool capped = false;
	uint32_t best = r->index
	                        ? check_indexed(r, buf, n,
	                                        (const struct robots_bucket **)(void *)(buf + pcap),
	                                        &capped)
	                        : check_linear(r, buf, n, &capped);
	if (buf != stackbuf)
		free(buf);
	if (capped)
		return false;
	return best == RULE_NONE || r->rules[best].allow;
}

uint32_t robots_wildcard_cap_set(struct robots *r, uint32_t cap)
{
	if (!r)
		return 0;
	r->wild_cap = cap;
	return r->wild_max;
}

uint32_t robots_wildcard_max(const struct robots *r)
{
	return r ? r->wild_max : 0;
}
