/*
 * url_rules_prefilter.c: which regexes can match a URL, known from one pass
 * over it.
 *
 * For each regex, a literal every match must contain is read off its
 * pattern: the longest run of plain characters at the top level (outside
 * groups and classes, none made optional by a quantifier), or a group of
 * plain alternatives such as (jpg|png) that is not optional. Whatever cannot
 * be proved to be such a literal gives none (an alternation at the top
 * level, option settings, \Q...\E, escapes with arguments), and that regex
 * always runs. The literals of all regexes go into one Aho-Corasick
 * automaton, kept as a DFA over the byte classes the literals use (other
 * bytes are one class), so a scan is one table step per URL byte plus the
 * reports of the states where a literal ends.
 *
 * Memory: 4 bytes x states (at most 1 + the literals' total length) x
 * classes for the table, plus 9 bytes a state and 80 bytes a literal.
 */
#include "frontier/url_rules_internal.h"
#include "frontier/base/array.h"
#include "frontier/base/ascii.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
/* A literal longer than this is cut: any part of a literal every match
 * contains is one too. */
#define LIT_MAX 64u

/* ---- The literal of a regex ---- */

/* The best literal set found so far, and the run being read. */
struct lits {
	char *buf;
	size_t cap, used;
	const char **lits;
	size_t *lens;
	size_t max, n;
	size_t score; /* the shortest literal's length; 0: none */
	char run[LIT_MAX];
	size_t run_len;
};

/* Offers the literals alt[k] (lens[k] bytes) as every match's; kept when
 * their shortest is longer than the best so far. */
static void offer(struct lits *l, const char *const *alt, const size_t *lens, size_t n)
{
	size_t score = SIZE_MAX, total = 0;
	for (size_t k = 0; k < n; k++) {
		score = lens[k] < score ? lens[k] : score;
		total += lens[k];
	}
	if (n == 0 || n > l->max || score == 0 || score <= l->score || total > l->cap)
		return;
	l->used = 0;
	for (size_t k = 0; k < n; k++) {
		memcpy(l->buf + l->used, alt[k], lens[k]);
		l->lits[k] = l->buf + l->used;
		l->lens[k] = lens[k];
		l->used += lens[k];
	}
	l->n = n;
	l->score = score;
}

static void end_run(struct lits *l)
{
	const char *run = l->run;
	offer(l, &run, &l->run_len, 1);
	l->run_len = 0;
}

/* The quantifier at p[*i], if any: skipped, with whether it allows zero
 * repetitions. 0 when there is none. */
static int quantifier(const char *p, size_t n, size_t *i, bool *zero)
{
	size_t j = *i;
	if (j >= n)
		return 0;
	if (p[j] == '*' || p[j] == '?' || p[j] == '+') {
		*zero = p[j] != '+';
		j++;
	} else if (p[j] == '{') {
		size_t k = j + 1, lo = 0, digits = 0;
		while (k < n && ascii_is_digit((unsigned char)p[k]) && digits < 9)
			lo = lo * 10 + (size_t)(p[k++] - '0'), digits++;
		/* "{,n}" is a plain '{' to PCRE2 10.42 and {0,n} from 10.43 on:
		 * taken as optional, which only weakens a literal. */
		if (digits == 0 && !(k < n && p[k] == ','))
			return 0; /* "{" with no number: a plain '{' */
		while (k < n && (ascii_is_digit((unsigned char)p[k]) || p[k] == ','))
			k++;
		if (k >= n || p[k] != '}')
			return 0;
		*zero = lo == 0;
		j = k + 1;
	} else {
		return 0;
	}
	if (j < n && (p[j] == '?' || p[j] == '+')) /* lazy or possessive */
		j++;
	*i = j;
	return 1;
}

/* Skips the class starting at p[i] ('['); the index after it, or n. */
static size_t skip_class(const char *p, size_t n, size_t i)
{
	i++;
	if (i < n && p[i] == '^')
		i++;
	if (i < n && p[i] == ']')
		i++;
	while (i < n && p[i] != ']') {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '[' && i + 1 < n && p[i + 1] == ':') {
			const char *end = strstr(p + i + 2, ":]");
			if (end && (size_t)(end - p) < n)
				i = (size_t)(end - p) + 1;
		}
		i++;
	}
	return i < n ? i + 1 : n;
}

/* Skips the group starting at p[i] ('('); the index after its ')', or n. */
static size_t skip_group(const char *p, size_t n, size_t i)
{
	int depth = 0;
	while (i < n) {
		if (p[i] == '\\') {
			i += 2;
			continue;
		}
		if (p[i] == '[') {
			i = skip_class(p, n, i);
			continue;
		}
		if (p[i] == '(')
			depth++;
		else if (p[i] == ')' && --depth == 0)
			return i + 1;
		i++;
	}
	return n;
}

static bool is_meta(char c)
{
	return strchr("\\^$.[]|()?*+{}", c) != NULL;
}

/* A group body b[n] of plain alternatives ("?:" allowed first): each into
 * alt/lens (pointing into out). 0 or -1 when it is anything else. */
static int plain_alternatives(const char *b, size_t n, char *out, const char **alt, size_t *lens,
                              size_t max, size_t *nalt)
{
	size_t o = 0, start = 0;
	if (n >= 2 && b[0] == '?' && b[1] == ':')
		b += 2, n -= 2;
	*nalt = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || b[i] == '|') {
			if (*nalt == max || o - start > LIT_MAX)
				return -1;
			alt[*nalt] = out + start;
			lens[(*nalt)++] = o - start;
			start = o;
			continue;
		}
		char c = b[i];
		if (c == '\\' && i + 1 < n && !ascii_is_alnum((unsigned char)b[i + 1]))
			c = b[++i];
		else if (is_meta(c))
			return -1;
		out[o++] = c;
	}
	return 0;
}

/* The escape at p[i] ('\\'): 1 and *c for a literal character, 0 for a
 * class or assertion that ends a run, -1 for one this reader does not
 * follow (its argument would be read as literal text). */
static int escape(const char *p, size_t n, size_t i, char *c)
{
	if (i + 1 >= n)
		return -1;
	unsigned char e = (unsigned char)p[i + 1];
	if (!ascii_is_alnum(e)) {
		*c = (char)e;
		return 1;
	}
	if (ascii_is_digit(e) || strchr("xocNpPgkuQEL", e))
		return -1;
	return 0;
}

/* A group at p[i]: offered when it is plain alternatives that must occur. */
static size_t group(struct lits *l, const char *p, size_t n, size_t i)
{
	size_t end = skip_group(p, n, i), q = end;
	bool zero = false;
	char out[4 * LIT_MAX];
	const char *alt[16];
	size_t lens[16], nalt;
	int quant = quantifier(p, n, &q, &zero);
	if (end - i >= 2 && end - i - 2 < sizeof out &&
	    plain_alternatives(p + i + 1, end - i - 2, out, alt, lens, 16, &nalt) == 0 &&
	    !(quant && zero))
		offer(l, alt, lens, nalt);
	return q;
}

/* Reads regex p[n] at its top level; -1 when it cannot be followed. */
static int read_top(struct lits *l, const char *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		char c = p[i];
		size_t next = i + 1;
		bool lit = false, zero = false;
		if (c == '|' || c == ')' || (c == '(' && i + 1 < n && p[i + 1] == '*'))
			return -1;
		if (c == '(' && i + 2 < n && p[i + 1] == '?' &&
		    (ascii_is_alpha((unsigned char)p[i + 2]) || p[i + 2] == '^' ||
		     p[i + 2] == '-' || p[i + 2] == '\'' || p[i + 2] == '#'))
			return -1; /* option settings, named groups, comments: not followed */
		if (c == '(') {
			end_run(l);
			i = group(l, p, n, i);
			continue;
		}
		if (c == '\\') {
			int e = escape(p, n, i, &c);
			if (e < 0)
				return -1;
			lit = e == 1;
			next = i + 2;
		} else if (c == '[') {
			next = skip_class(p, n, i);
		} else {
			size_t qi = i;
			lit = !strchr("^$.?*+{", c) || (c == '{' && !quantifier(p, n, &qi, &zero));
		}
		i = next;
		if (!lit) {
			end_run(l);
			quantifier(p, n, &i, &zero);
			continue;
		}
		if (quantifier(p, n, &i, &zero)) {
			if (!zero && l->run_len < LIT_MAX)
				l->run[l->run_len++] = c;
			end_run(l);
			continue;
		}
		if (l->run_len == LIT_MAX)
			end_run(l);
		l->run[l->run_len++] = c;
	}
	end_run(l);
	return 0;
}

int url_rules_pf_literals(const char *re, size_t len, char *buf, size_t cap, const char **lits,
                          size_t *lits_len, size_t max_lits, size_t *nlits)
{
	struct lits l = { .buf = buf, .cap = cap, .lits = lits, .lens = lits_len, .max = max_lits };
	*nlits = 0;
	/* \Q...\E and (?#...) hold parentheses and brackets the skips would
	 * misread. */
	for (size_t i = 0; i + 1 < len; i++)
		if ((re[i] == '\\' && (re[i + 1] == 'Q' || re[i + 1] == 'E')) ||
		    (re[i] == '(' && re[i + 1] == '?' && i + 2 < len && re[i + 2] == '#'))
			return 0;
	if (read_top(&l, re, len) < 0 || l.score == 0)
		return 0;
	*nlits = l.n;
	return 1;
}

/* ---- The automaton ---- */

/* A literal is at most LIT_MAX bytes: kept inline, so the literals are one
 * array and the built tables one block. */
struct pf_lit {
	uint32_t len, slot;
	char s[LIT_MAX];
};

struct url_rules_pf {
	struct pf_lit *lits;
	size_t nlits, lits_cap;
	uint32_t nslots;
	/* Built, all in one block (tables) that next points to: */
	uint16_t cls[256];
	uint32_t nclasses, nstates;
	uint32_t *next;  /* nstates x nclasses: the DFA */
	uint32_t *dict;  /* the nearest proper suffix state that reports, or NONE */
	uint32_t *first; /* a state's first output in outs, or NONE */
	uint32_t *outs;  /* pairs (slot, next output index or NONE) */
	uint8_t *reports;
};

struct url_rules_pf *url_rules_pf_create(void)
{
	return calloc(1, sizeof(struct url_rules_pf));
}

void url_rules_pf_destroy(struct url_rules_pf *pf)
{
	if (!pf)
		return;
	free(pf->lits);
	free(pf->next);
	free(pf);
}

int url_rules_pf_add(struct url_rules_pf *pf, const char *s, size_t len, uint32_t slot)
{
	if (len == 0 || len > LIT_MAX)
		return -1;
	struct pf_lit *v = array_grow(pf->lits, &pf->lits_cap, pf->nlits, sizeof *v, 16);
	if (!v)
		return -1;
	pf->lits = v;
	struct pf_lit *lit = &pf->lits[pf->nlits++];
	lit->len = (uint32_t)len;
	lit->slot = slot;
	memcpy(lit->s, s, len);
	if (slot + 1 > pf->nslots)
		pf->nslots = slot + 1;
	return 0;
}

uint32_t url_rules_pf_slots(const struct url_rules_pf *pf)
{
	return pf ? pf->nslots : 0;
}

/* The trie of the literals, its outputs listed per state. */
static int build_trie(struct url_rules_pf *pf)
{
	uint32_t nc = pf->nclasses, n = 1;
	for (size_t i = 0; i < pf->nlits; i++) {
		uint32_t s = 0;
		for (uint32_t k = 0; k < pf->lits[i].len; k++) {
			uint32_t *t = &pf->next[s * nc + pf->cls[(unsigned char)pf->lits[i].s[k]]];
			if (*t == NONE)
				*t = n++;
			s = *t;
		}
		pf->outs[2 * i] = pf->lits[i].slot;
		pf->outs[2 * i + 1] = pf->first[s];
		pf->first[s] = (uint32_t)i;
	}
	pf->nstates = n;
	return 0;
}

/* Failure links in breadth-first order, folded into the DFA's edges. */
static int build_links(struct url_rules_pf *pf)
{
	uint32_t nc = pf->nclasses;
	uint32_t *queue = malloc(pf->nstates * sizeof *queue), *fail = NULL;
	size_t head = 0, tail = 0;
	fail = calloc(pf->nstates, sizeof *fail);
	if (!queue || !fail) {
		free(queue);
		free(fail);
		return -1;
	}
	for (uint32_t c = 0; c < nc; c++) {
		uint32_t t = pf->next[c];
		if (t == NONE) {
			pf->next[c] = 0;
		} else {
			fail[t] = 0;
			queue[tail++] = t;
		}
	}
	while (head < tail) {
		uint32_t s = queue[head++];
		uint32_t f = fail[s];
		pf->dict[s] = pf->reports[f] ? f : pf->dict[f];
		pf->reports[s] = pf->first[s] != NONE || pf->dict[s] != NONE;
		for (uint32_t c = 0; c < nc; c++) {
			uint32_t *t = &pf->next[s * nc + c];
			if (*t == NONE) {
				*t = pf->next[f * nc + c];
			} else {
				fail[*t] = pf->next[f * nc + c];
				queue[tail++] = *t;
			}
		}
	}
	free(queue);
	free(fail);
	return 0;
}

int url_rules_pf_build(struct url_rules_pf *pf)
{
	size_t states = 1;
	pf->nclasses = 1;
	memset(pf->cls, 0, sizeof pf->cls);
	for (size_t i = 0; i < pf->nlits; i++) {
		states += pf->lits[i].len;
		for (uint32_t k = 0; k < pf->lits[i].len; k++) {
			unsigned char b = (unsigned char)pf->lits[i].s[k];
			if (pf->cls[b] == 0)
				pf->cls[b] = (uint16_t)pf->nclasses++;
		}
	}
	if (states > UINT32_MAX / 256)
		return -1;
	size_t words = states * pf->nclasses + 2 * states + 2 * (pf->nlits ? pf->nlits : 1);
	uint32_t *tables = malloc(words * sizeof *tables + states);
	if (!tables)
		return -1;
	free(pf->next);
	pf->next = tables;
	pf->dict = pf->next + states * pf->nclasses;
	pf->first = pf->dict + states;
	pf->outs = pf->first + states;
	pf->reports = (uint8_t *)(tables + words);
	memset(pf->reports, 0, states);
	memset(pf->next, 0xff, states * pf->nclasses * sizeof *pf->next);
	memset(pf->first, 0xff, states * sizeof *pf->first);
	memset(pf->dict, 0xff, states * sizeof *pf->dict);
	build_trie(pf);
	pf->reports[0] = 0;
	return build_links(pf);
}

void url_rules_pf_scan(const struct url_rules_pf *pf, const char *s, size_t len, uint64_t *bits)
{
	uint32_t st = 0, nc = pf->nclasses;
	for (size_t i = 0; i < len; i++) {
		st = pf->next[st * nc + pf->cls[(unsigned char)s[i]]];
		if (!pf->reports[st])
			continue;
		for (uint32_t t = st; t != NONE; t = pf->dict[t])
			for (uint32_t o = pf->first[t]; o != NONE; o = pf->outs[2 * o + 1])
				bits[pf->outs[2 * o] / 64] |= 1ull << (pf->outs[2 * o] % 64);
	}
}
