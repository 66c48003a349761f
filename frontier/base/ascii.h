/*
 * ascii.h: byte classes of ASCII, whatever the locale (the <ctype.h>
 * functions follow the locale and take an int that must fit unsigned char).
 * For every module that scans or writes protocol text: URLs, robots.txt,
 * HTML, configuration files, the crawl log. Bytes >= 0x80 are in no class.
 */
#ifndef FRONTIER_BASE_ASCII_H
#define FRONTIER_BASE_ASCII_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static inline bool ascii_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* One compare: setting bit 0x20 folds A-Z onto a-z and nothing else
 * onto them (the HTML tokenizer asks this per byte). */
static inline bool ascii_is_alpha(unsigned char c)
{
	return (unsigned char)((c | 0x20) - 'a') < 26;
}

static inline bool ascii_is_alnum(unsigned char c)
{
	return ascii_is_digit(c) || ascii_is_alpha(c);
}

static inline bool ascii_is_hex(unsigned char c)
{
	return ascii_is_digit(c) || (unsigned char)((c | 0x20) - 'a') < 6;
}

/* Value of the hex digit c (either case), or -1 if c is none. */
static inline int ascii_hex_value(unsigned char c)
{
	if (ascii_is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* c in lower case when it is an ASCII capital letter, else c. */
static inline unsigned char ascii_to_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* White space as isspace() in the "C" locale: space, \t, \n, \v, \f, \r
 * (robots.txt, configuration files). */
static inline bool ascii_is_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* HTML's ASCII whitespace: space, \t, \n, \f, \r (no \v). */
static inline bool ascii_is_html_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/* Narrows [*s, *s + *n) to leave out ascii_is_space bytes at both ends. */
static inline void ascii_trim(const char **s, size_t *n)
{
	while (*n > 0 && ascii_is_space((unsigned char)**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && ascii_is_space((unsigned char)(*s)[*n - 1]))
		(*n)--;
}

/* The string s without ascii_is_space bytes at both ends: those at its
 * end are cut in place, the returned pointer is past those at its start. */
static inline char *ascii_trim_cstr(char *s)
{
	while (ascii_is_space((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && ascii_is_space((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* memcmp's order of the byte strings a (an bytes) and b (bn bytes), a
 * string before those it is a prefix of: <0, 0 or >0 as a sorts before,
 * with or after b. */
static inline int ascii_bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c != 0 ? c : an < bn ? -1 : an > bn;
}

/* The decimal number at the start of s (at most n bytes, leading digits
 * only), or -1 when there is none or it passes max: a bounded atoi for
 * text a peer sent. */
static inline long ascii_decimal_prefix(const char *s, size_t n, long max)
{
	long v = 0;
	size_t i = 0;
	for (; i < n && ascii_is_digit((unsigned char)s[i]); i++) {
		v = v * 10 + (s[i] - '0');
		if (v > max)
			return -1;
	}
	return i == 0 ? -1 : v;
}

/* Writes v in decimal, at least width digits (zero-padded), ending just
 * before end; returns where it starts (end - 20 at the most, plus any
 * padding). For text written per fetch, where printf's parsing of its
 * format costs more than the digits. */
static inline char *ascii_decimal_before(char *end, unsigned long long v, int width)
{
	char *p = end;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0 || end - p < width);
	return p;
}

/* s[n] as a JSON string, quoted: '"' and '\\' escaped, control bytes as
 * \u00XX, other bytes as they are (stats.json, the control pages). */
static inline void ascii_json_string(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

#endif
