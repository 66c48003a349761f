/*
 * charref.c: character references of the HTML Standard (see charref.h for
 * the contract, charref_table.h for the table).
 */
#include "parse/charref.h"

#include <stdint.h>
#include <string.h>

#include "frontier/base/ascii.h"
#include "frontier/base/utf8.h"
#include "parse/charref_table.h"

/* Character `at` of entry i's name; the caller knows the name is longer. */
static unsigned char name_at(size_t i, size_t at)
{
	return (unsigned char)charref_names[charref_table[i].name + at];
}

/* In [lo, hi), whose names are all longer than `at` and sorted by their
 * character `at`, the first index whose character `at` is >= c (above
 * = false) or > c (above = true). */
static size_t bound_at(size_t lo, size_t hi, size_t at, unsigned char c, bool above)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		unsigned char m = name_at(mid, at);
		if (m < c || (above && m == c))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The longest name that `p` (n bytes, after the '&') starts with, or NULL.
 * The range [lo, hi) holds the names that start with the `at` characters
 * read so far; its first entry is exactly those characters when they are
 * a name, since a name sorts before its extensions. */
static const struct charref_entry *named_match(const unsigned char *p, size_t n)
{
	if (n == 0 || !ascii_is_alpha(p[0]))
		return NULL;
	size_t letter = p[0] <= 'Z' ? (size_t)(p[0] - 'A') : (size_t)(p[0] - 'a') + 26;
	size_t lo = charref_first[letter], hi = charref_first[letter + 1];
	const struct charref_entry *best = NULL;
	for (size_t at = 1; lo < hi; at++) {
		if (charref_table[lo].name_len == at) {
			best = &charref_table[lo];
			lo++;
		}
		if (at == n || lo == hi)
			break;
		unsigned char c = p[at];
		if (!ascii_is_alnum(c) && c != ';')
			break;
		lo = bound_at(lo, hi, at, c, false);
		hi = bound_at(lo, hi, at, c, true);
	}
	return best;
}

/* "&#..." at in[0..len), len >= 2: the numeric states, then the numeric
 * character reference end state's replacements. */
static size_t numeric_ref(const unsigned char *in, size_t len, char *out, size_t *out_len)
{
	size_t i = 2;
	bool hex = i < len && (in[i] == 'x' || in[i] == 'X');
	if (hex)
		i++;
	size_t digits = i;
	uint32_t cp = 0;
	for (; i < len; i++) {
		int d = hex ? ascii_hex_value(in[i]) : (ascii_is_digit(in[i]) ? in[i] - '0' : -1);
		if (d < 0)
			break;
		/* Past 0x10FFFF the value no longer matters: it saturates. */
		if (cp <= 0x10FFFF)
			cp = cp * (hex ? 16u : 10u) + (uint32_t)d;
	}
	if (i == digits)
		return 0; /* "&#", "&#x": absence of digits, not a reference */
	if (i < len && in[i] == ';')
		i++;
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		cp = 0xFFFD;
	else if (cp >= 0x80 && cp <= 0x9F)
		cp = charref_c1[cp - 0x80];
	*out_len = utf8_put(cp, out);
	return i;
}

size_t charref_decode_one(const char *in, size_t len, bool in_attribute, char out[CHARREF_ONE_MAX],
                          size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)in;
	if (len < 2 || p[0] != '&')
		return 0;
	if (p[1] == '#')
		return numeric_ref(p, len, out, out_len);
	const struct charref_entry *e = named_match(p + 1, len - 1);
	if (!e)
		return 0;
	size_t end = 1 + e->name_len;
	if (in_attribute && charref_names[e->name + e->name_len - 1] != ';' && end < len &&
	    (p[end] == '=' || ascii_is_alnum(p[end])))
		return 0; /* legacy name glued to what follows: kept as written */
	memcpy(out, e->value, e->value_len);
	*out_len = e->value_len;
	return end;
}

/* Appends n bytes to out (cap bytes) at *o, writing only what fits; *o
 * counts every byte, written or not. */
static void put(char *out, size_t cap, size_t *o, const char *s, size_t n)
{
	if (n > 0 && *o < cap)
		memcpy(out + *o, s, n <= cap - *o ? n : cap - *o);
	*o += n;
}

size_t charref_decode_attribute(const char *in, size_t len, char *out, size_t cap)
{
	size_t o = 0;
	if (len == 0)
		return 0;
	const char *p = in, *end = in + len;
	for (;;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		if (!amp)
			break;
		char buf[CHARREF_ONE_MAX];
		size_t n;
		size_t used = charref_decode_one(amp, (size_t)(end - amp), true, buf, &n);
		if (used == 0) {
			put(out, cap, &o, p, (size_t)(amp - p) + 1);
		} else {
			put(out, cap, &o, p, (size_t)(amp - p));
			put(out, cap, &o, buf, n);
		}
		p = amp + (used ? used : 1);
	}
	put(out, cap, &o, p, (size_t)(end - p));
	return o;
}
