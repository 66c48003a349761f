/*
 * focus.c: the focus term set and page scores (see focus.h).
 */
#include "parse/focus.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/fileio.h"
#include "parse/simhash.h"

struct focus_slot {
	uint64_t hash;
	double weight; /* 0: an empty slot */
};

struct focus_terms {
	size_t count;
	size_t mask; /* slots - 1 */
	struct focus_slot slots[];
};

static size_t slots_for(size_t terms)
{
	size_t n = 16;
	while (n < 2 * terms)
		n *= 2;
	return n;
}

/* 1 when added, 0 when the hash is there already. */
static int insert(struct focus_terms *t, uint64_t h, double w)
{
	size_t i = (size_t)(h ^ h >> 32) & t->mask;
	for (; t->slots[i].weight != 0; i = (i + 1) & t->mask)
		if (t->slots[i].hash == h)
			return 0;
	t->slots[i] = (struct focus_slot){ h, w };
	t->count++;
	return 1;
}

double focus_terms_weight(const struct focus_terms *t, uint64_t h)
{
	size_t i = (size_t)(h ^ h >> 32) & t->mask;
	for (; t->slots[i].weight != 0; i = (i + 1) & t->mask)
		if (t->slots[i].hash == h)
			return t->slots[i].weight;
	return 0;
}

void focus_terms_filter(const struct focus_terms *t, uint64_t filter[FOCUS_FILTER_WORDS])
{
	memset(filter, 0, FOCUS_FILTER_WORDS * sizeof filter[0]);
	for (size_t i = 0; i <= t->mask; i++)
		if (t->slots[i].weight != 0)
			filter[t->slots[i].hash >> 62] |= 1ull << (t->slots[i].hash >> 56 & 63);
}

static int is_word_byte(unsigned char c)
{
	unsigned char lower = c | 0x20;
	return c >= 0x80 || (c >= '0' && c <= '9') || (lower >= 'a' && lower <= 'z');
}

/* One line (no newline) into t: 0, or -1 with err set. */
static int parse_line(struct focus_terms *t, const char *s, size_t len, const char *name,
                      unsigned lineno, char *err, size_t errcap)
{
	size_t i = 0;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	if (i == len || s[i] == '#')
		return 0;
	size_t start = i, digits = 0;
	for (; i < len && is_word_byte((unsigned char)s[i]); i++)
		digits += s[i] >= '0' && s[i] <= '9';
	size_t wlen = i - start;
	double w = 1;
	while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
		i++;
	if (i < len) {
		char num[32], *end;
		size_t nl = len - i;
		while (nl > 0 &&
		       (s[i + nl - 1] == ' ' || s[i + nl - 1] == '\t' || s[i + nl - 1] == '\r'))
			nl--;
		if (wlen == 0 || nl >= sizeof num || i == start + wlen)
			goto bad_term;
		memcpy(num, s + i, nl);
		num[nl] = '\0';
		errno = 0;
		w = strtod(num, &end);
		if (errno || *end || !(w > 0) || w > FOCUS_WEIGHT_MAX) {
			snprintf(err, errcap, "%s:%u: bad weight \"%s\" (a number in (0, %g])",
			         name, lineno, num, FOCUS_WEIGHT_MAX);
			return -1;
		}
	}
	if (wlen == 0 || wlen > SIMHASH_TOKEN_MAX || digits == wlen)
		goto bad_term;
	if (t->count == FOCUS_TERMS_MAX) {
		snprintf(err, errcap, "%s:%u: more than %d terms", name, lineno, FOCUS_TERMS_MAX);
		return -1;
	}
	if (!insert(t, simhash_token_hash(s + start, wlen), w)) {
		snprintf(err, errcap, "%s:%u: \"%.*s\" is listed twice", name, lineno, (int)wlen,
		         s + start);
		return -1;
	}
	return 0;
bad_term:
	snprintf(err, errcap,
	         "%s:%u: a term is one word of letters and digits (not digits only, at most %d "
	         "bytes), optionally followed by a weight",
	         name, lineno, SIMHASH_TOKEN_MAX);
	return -1;
}

int focus_terms_parse(const char *text, size_t len, const char *name, struct focus_terms **out,
                      char *err, size_t errcap)
{
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	size_t n = slots_for(lines < FOCUS_TERMS_MAX ? lines : FOCUS_TERMS_MAX);
	struct focus_terms *t = calloc(1, sizeof *t + n * sizeof t->slots[0]);
	*out = NULL;
	if (!t) {
		snprintf(err, errcap, "%s: out of memory", name);
		return -1;
	}
	t->mask = n - 1;
	unsigned lineno = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - text) : len;
		if (parse_line(t, text + pos, end - pos, name, ++lineno, err, errcap) != 0) {
			free(t);
			return -1;
		}
		pos = end + 1;
	}
	if (t->count == 0) {
		snprintf(err, errcap, "%s: no focus term", name);
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

int focus_terms_load(const char *path, struct focus_terms **out, char *err, size_t errcap)
{
	size_t len;
	*out = NULL;
	char *text = fileio_read_path(path, FOCUS_FILE_MAX + 1, &len);
	if (!text) {
		snprintf(err, errcap, "cannot read the focus file %s: %s", path, strerror(errno));
		return -1;
	}
	int rc = -1;
	if (len > FOCUS_FILE_MAX)
		snprintf(err, errcap, "%s: longer than %u bytes", path, FOCUS_FILE_MAX);
	else
		rc = focus_terms_parse(text, len, path, out, err, errcap);
	free(text);
	return rc;
}

void focus_terms_destroy(struct focus_terms *t)
{
	free(t);
}

size_t focus_terms_count(const struct focus_terms *t)
{
	return t ? t->count : 0;
}

uint32_t focus_score(double weight_sum, uint64_t words)
{
	double s = weight_sum * FOCUS_SCORE_ONE /
	           (double)(words > FOCUS_MIN_WORDS ? words : FOCUS_MIN_WORDS);
	return s >= (double)(FOCUS_SCORE_NONE - 1) ? FOCUS_SCORE_NONE - 1 : (uint32_t)(s + 0.5);
}

int focus_tier(uint32_t score, uint32_t threshold)
{
	uint64_t s = score, th = threshold;
	if (s == 0)
		return -1;
	if (s >= 4 * th)
		return 3;
	if (s >= 2 * th)
		return 2;
	return s >= th ? 1 : 0;
}
