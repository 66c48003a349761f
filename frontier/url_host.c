/*
 * url_host.c: the URL Standard's host parsers: domains (percent-decoded,
 * IDNA UTS #46 through libidn2, forbidden code points refused), IPv4 in
 * every form the standard accepts, IPv6 with its compressed serialization,
 * and opaque hosts of non-special schemes.
 */
#include "frontier/url_internal.h"

#include <idn2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- host parsing ---- */

static bool forbidden_host_cp(unsigned char c)
{
	switch (c) {
	case 0:
	case '\t':
	case '\n':
	case '\r':
	case ' ':
	case '#':
	case '/':
	case ':':
	case '<':
	case '>':
	case '?':
	case '@':
	case '[':
	case '\\':
	case ']':
	case '^':
	case '|': return true;
	default: return false;
	}
}

static bool forbidden_domain_cp(unsigned char c)
{
	return forbidden_host_cp(c) || c <= 0x1f || c == '%' || c == 0x7f;
}

/* IPv4 number parser: 0 ok, -1 failure. Values saturate above 2^32. */
static int ipv4_number(const char *s, size_t n, uint64_t *out)
{
	if (n == 0)
		return -1;
	unsigned r = 10;
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		n -= 2;
		r = 16;
	} else if (n >= 2 && s[0] == '0') {
		s += 1;
		n -= 1;
		r = 8;
	}
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];
		unsigned d;
		if (r == 16 && ascii_is_hex(c))
			d = (unsigned)ascii_hex_value(c);
		else if (r == 10 && ascii_is_digit(c))
			d = (unsigned)(c - '0');
		else if (r == 8 && c >= '0' && c <= '7')
			d = (unsigned)(c - '0');
		else
			return -1;
		v = v * r + d;
		if (v > 0xffffffffull * 256)
			v = 0xffffffffull * 256; /* saturate: already out of range */
	}
	*out = v;
	return 0;
}

bool url__ends_in_number(const char *s, size_t n)
{
	if (n > 0 && s[n - 1] == '.') {
		n--; /* a trailing dot is ignored, unless it is the only label */
		if (n == 0)
			return false;
	}
	size_t st = n;
	while (st > 0 && s[st - 1] != '.')
		st--;
	const char *last = s + st;
	size_t ln = n - st;
	if (ln == 0)
		return false;
	bool digits = true;
	for (size_t i = 0; i < ln; i++)
		if (!ascii_is_digit((unsigned char)last[i]))
			digits = false;
	if (digits)
		return true;
	uint64_t v;
	return ipv4_number(last, ln, &v) == 0;
}

static enum url_error ipv4_parse(const char *s, size_t n, uint32_t *out)
{
	const char *parts[5];
	size_t lens[5];
	size_t k = 0, st = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '.') {
			if (k == 5)
				return URL_ERR_INVALID_IPV4;
			parts[k] = s + st;
			lens[k] = i - st;
			k++;
			st = i + 1;
		}
	}
	if (k > 1 && lens[k - 1] == 0)
		k--;
	if (k > 4)
		return URL_ERR_INVALID_IPV4;
	uint64_t nums[4];
	for (size_t i = 0; i < k; i++)
		if (ipv4_number(parts[i], lens[i], &nums[i]) != 0)
			return URL_ERR_INVALID_IPV4;
	for (size_t i = 0; i + 1 < k; i++)
		if (nums[i] > 255)
			return URL_ERR_INVALID_IPV4;
	uint64_t lim = 1ull << (8 * (5 - k));
	if (nums[k - 1] >= lim)
		return URL_ERR_INVALID_IPV4;
	uint64_t v = nums[k - 1];
	for (size_t i = 0; i + 1 < k; i++)
		v += nums[i] << (8 * (3 - i));
	*out = (uint32_t)v;
	return URL_OK;
}

static enum url_error ipv6_parse(const char *s, size_t n, uint16_t a[8])
{
	memset(a, 0, 16);
	int piece = 0, compress = -1;
	size_t p = 0;
#define C(i) ((i) < n ? (int)(unsigned char)s[i] : -1)
	if (C(p) == ':') {
		if (C(p + 1) != ':')
			return URL_ERR_INVALID_IPV6;
		p += 2;
		piece++;
		compress = piece;
	}
	while (C(p) != -1) {
		if (piece == 8)
			return URL_ERR_INVALID_IPV6;
		if (C(p) == ':') {
			if (compress != -1)
				return URL_ERR_INVALID_IPV6;
			p++;
			piece++;
			compress = piece;
			continue;
		}
		unsigned value = 0, length = 0;
		while (length < 4 && ascii_is_hex(C(p))) {
			value = value * 16 + (unsigned)ascii_hex_value(C(p));
			p++;
			length++;
		}
		if (C(p) == '.') {
			if (length == 0)
				return URL_ERR_INVALID_IPV6;
			p -= length;
			if (piece > 6)
				return URL_ERR_INVALID_IPV6;
			int seen = 0;
			while (C(p) != -1) {
				int v4 = -1;
				if (seen > 0) {
					if (C(p) == '.' && seen < 4)
						p++;
					else
						return URL_ERR_INVALID_IPV6;
				}
				if (!ascii_is_digit(C(p)))
					return URL_ERR_INVALID_IPV6;
				while (ascii_is_digit(C(p))) {
					int number = C(p) - '0';
					if (v4 == -1)
						v4 = number;
					else if (v4 == 0)
						return URL_ERR_INVALID_IPV6;
					else
						v4 = v4 * 10 + number;
					if (v4 > 255)
						return URL_ERR_INVALID_IPV6;
					p++;
				}
				a[piece] = (uint16_t)(a[piece] * 0x100 + v4);
				seen++;
				if (seen == 2 || seen == 4)
					piece++;
			}
			if (seen != 4)
				return URL_ERR_INVALID_IPV6;
			break;
		} else if (C(p) == ':') {
			p++;
			if (C(p) == -1)
				return URL_ERR_INVALID_IPV6;
		} else if (C(p) != -1) {
			return URL_ERR_INVALID_IPV6;
		}
		a[piece] = (uint16_t)value;
		piece++;
	}
#undef C
	if (compress != -1) {
		int swaps = piece - compress;
		piece = 7;
		while (piece != 0 && swaps > 0) {
			uint16_t t = a[piece];
			a[piece] = a[compress + swaps - 1];
			a[compress + swaps - 1] = t;
			piece--;
			swaps--;
		}
	} else if (piece != 8) {
		return URL_ERR_INVALID_IPV6;
	}
	return URL_OK;
}

static void ipv6_serialize(struct url *u, struct sbuf *b, const uint16_t a[8])
{
	int best = -1, bestlen = 1;
	for (int i = 0; i < 8;) {
		if (a[i] != 0) {
			i++;
			continue;
		}
		int j = i;
		while (j < 8 && a[j] == 0)
			j++;
		if (j - i > bestlen) {
			best = i;
			bestlen = j - i;
		}
		i = j;
	}
	put(u, b, '[');
	bool ignore0 = false;
	for (int i = 0; i < 8; i++) {
		if (ignore0 && a[i] == 0)
			continue;
		ignore0 = false;
		if (best == i) {
			puts_n(u, b, i == 0 ? "::" : ":", i == 0 ? 2 : 1);
			ignore0 = true;
			continue;
		}
		char t[8];
		int k = snprintf(t, sizeof t, "%x", a[i]);
		puts_n(u, b, t, (size_t)k);
		if (i != 7)
			put(u, b, ':');
	}
	put(u, b, ']');
}

/* Code points a decoded A-label may not hold, though libidn2's refusal left
 * the label to us: those UTS #46 maps to nothing (U+00AD soft hyphen,
 * variation selectors, zero-width space...), so that their A-label names
 * what a user never sees, and the disallowed ones that are no visible
 * character (C1 controls, spaces, format and bidi controls, surrogates,
 * private use, noncharacters, tags). Mapped code points are left alone, as
 * the conformance suite in use keeps labels such as "xn--pokxncvks". */
static bool alabel_cp_refused(uint64_t cp)
{
	static const struct {
		uint32_t lo, hi;
	} refused[] = {
		{ 0x0080, 0x00a0 },    { 0x00ad, 0x00ad },   { 0x034f, 0x034f },
		{ 0x115f, 0x1160 },    { 0x1680, 0x1680 },   { 0x17b4, 0x17b5 },
		{ 0x180b, 0x180f },    { 0x2000, 0x200b },   { 0x200e, 0x200f },
		{ 0x2028, 0x202f },    { 0x205f, 0x206f },   { 0x3000, 0x3000 },
		{ 0x3164, 0x3164 },    { 0xd800, 0xf8ff },   { 0xfdd0, 0xfdef },
		{ 0xfe00, 0xfe0f },    { 0xfeff, 0xfeff },   { 0xffa0, 0xffa0 },
		{ 0xfff0, 0xfffd },    { 0x1bca0, 0x1bca3 }, { 0xe0000, 0xe0fff },
		{ 0xf0000, 0x10ffff },
	};
	if (cp > 0x10ffff || (cp & 0xfffe) == 0xfffe)
		return true;
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		if (cp >= refused[i].lo && cp <= refused[i].hi)
			return true;
	return false;
}

/* true if s[n] (the part of an ASCII label after "xn--") is valid Punycode
 * (RFC 3492) decoding to a label UTS #46 can have produced: at least one
 * non-ASCII code point (an A-label of plain ASCII is no IDNA label; the
 * empty "xn--" is kept, as the conformance suite in use expects) and none
 * that alabel_cp_refused. Used when libidn2 refuses an A-label, as its
 * IDNA2008 checks are stricter than UTS #46 (U+2603 in "xn--n3h"). */
static bool punycode_valid(const char *s, size_t n)
{
	enum { BASE = 36, TMIN = 1, TMAX = 26, SKEW = 38, DAMP = 700 };
	size_t b = 0;
	for (size_t j = 0; j < n; j++)
		if (s[j] == '-')
			b = j;
	size_t out = 0, in = 0;
	if (b > 0 || (n > 0 && s[0] == '-')) {
		for (size_t j = 0; j < b; j++)
			if ((unsigned char)s[j] >= 0x80)
				return false;
		out = b;
		in = b + 1;
	}
	const size_t basic = out;
	uint64_t cp = 128, i = 0, bias = 72;
	while (in < n) {
		uint64_t oldi = i, w = 1;
		for (uint64_t k = BASE;; k += BASE) {
			if (in >= n)
				return false;
			int c = ascii_to_lower((unsigned char)s[in++]);
			uint64_t digit;
			if (c >= 'a' && c <= 'z')
				digit = (uint64_t)(c - 'a');
			else if (ascii_is_digit(c))
				digit = (uint64_t)(c - '0' + 26);
			else
				return false;
			i += digit * w;
			if (i > 0x7fffffff)
				return false;
			uint64_t t = k <= bias ? TMIN : (k >= bias + TMAX ? TMAX : k - bias);
			if (digit < t)
				break;
			w *= BASE - t;
			if (w > 0x7fffffff)
				return false;
		}
		uint64_t delta = (oldi == 0) ? (i - oldi) / DAMP : (i - oldi) / 2;
		delta += delta / (out + 1);
		uint64_t k = 0;
		while (delta > ((BASE - TMIN) * TMAX) / 2) {
			delta /= BASE - TMIN;
			k += BASE;
		}
		bias = k + (BASE - TMIN + 1) * delta / (delta + SKEW);
		cp += i / (out + 1);
		i %= out + 1;
		if (alabel_cp_refused(cp))
			return false;
		out++;
		i++;
	}
	return n == 0 || out > basic;
}

/* All labels of an ASCII domain that start with "xn--" are valid Punycode. */
static bool alabels_valid(const char *s, size_t n)
{
	size_t st = 0;
	for (size_t j = 0; j <= n; j++) {
		if (j < n && s[j] != '.')
			continue;
		size_t ln = j - st;
		const char *l = s + st;
		if (ln >= 4 && ascii_to_lower(l[0]) == 'x' && ascii_to_lower(l[1]) == 'n' &&
		    l[2] == '-' && l[3] == '-' && !punycode_valid(l + 4, ln - 4))
			return false;
		st = j + 1;
	}
	return true;
}

/* Parses host text s[n] into u->host (kind in u->host_kind); uses u->seg as
 * scratch. */
static enum url_error host_parse_inner(struct url *u, const char *s, size_t n, bool opaque)
{
	struct sbuf *h = &u->host;
	h->n = 0;
	if (n > 0 && s[0] == '[') {
		if (s[n - 1] != ']')
			return URL_ERR_INVALID_IPV6;
		uint16_t a[8];
		enum url_error e = ipv6_parse(s + 1, n - 2, a);
		if (e)
			return e;
		ipv6_serialize(u, h, a);
		u->host_kind = HOST_IPV6;
		return URL_OK;
	}
	if (opaque) {
		const unsigned char *t = enc_sets();
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c != '%' && forbidden_host_cp(c))
				return URL_ERR_INVALID_HOST;
			put_enc(u, h, c, SET_C0, t);
		}
		u->host_kind = n ? HOST_OPAQUE : HOST_EMPTY;
		return URL_OK;
	}
	/* percent-decode into seg (scratch), then domain to ASCII */
	struct sbuf *d = &u->seg;
	d->n = 0;
	bool ascii = true;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%' && i + 2 < n && ascii_is_hex((unsigned char)s[i + 1]) &&
		    ascii_is_hex((unsigned char)s[i + 2])) {
			c = (unsigned char)(ascii_hex_value((unsigned char)s[i + 1]) * 16 +
			                    ascii_hex_value((unsigned char)s[i + 2]));
			i += 2;
		}
		if (c >= 0x80)
			ascii = false;
		put(u, d, (char)c);
	}
	if (u->over)
		return URL_ERR_TOO_LONG;
	bool need_idna = !ascii;
	if (ascii) {
		/* xn-- labels need validation by IDNA */
		for (size_t i = 0; i + 4 <= d->n; i++) {
			if ((i == 0 || d->p[i - 1] == '.') && ascii_to_lower(d->p[i]) == 'x' &&
			    ascii_to_lower(d->p[i + 1]) == 'n' && d->p[i + 2] == '-' &&
			    d->p[i + 3] == '-') {
				need_idna = true;
				break;
			}
		}
	}
	if (!need_idna) {
		for (size_t i = 0; i < d->n; i++) {
			unsigned char c = (unsigned char)d->p[i];
			if (forbidden_domain_cp(c))
				return URL_ERR_INVALID_HOST;
			put(u, h, (char)ascii_to_lower(c));
		}
	} else {
		/* libidn2 wants a NUL-terminated string; a NUL inside is forbidden anyway */
		if (memchr(d->p, 0, d->n))
			return URL_ERR_INVALID_HOST;
		put(u, d, '\0');
		if (u->over)
			return URL_ERR_TOO_LONG;
		char *out = NULL;
		int rc = idn2_to_ascii_8z(d->p, &out, IDN2_NONTRANSITIONAL);
		if (rc != IDN2_OK) {
			idn2_free(out);
			out = NULL;
			if (!ascii || !alabels_valid(d->p, d->n - 1))
				return URL_ERR_IDNA;
			/* libidn2 applies IDNA2008 rules on top of UTS #46 and refuses
             * some A-labels the URL Standard keeps: keep the ASCII as is. */
			d->n--;
			for (size_t i = 0; i < d->n; i++) {
				unsigned char c = (unsigned char)d->p[i];
				if (forbidden_domain_cp(c))
					return URL_ERR_INVALID_HOST;
				put(u, h, (char)ascii_to_lower(c));
			}
			goto ascii_done;
		}
		size_t on = strlen(out);
		if (on == 0) {
			idn2_free(out);
			return URL_ERR_IDNA;
		}
		for (size_t i = 0; i < on; i++) {
			unsigned char c = (unsigned char)out[i];
			if (forbidden_domain_cp(c)) {
				idn2_free(out);
				return URL_ERR_INVALID_HOST;
			}
			put(u, h, (char)ascii_to_lower(c));
		}
		idn2_free(out);
	}
ascii_done:
	if (h->n == 0)
		return URL_ERR_INVALID_HOST;
	if (url__ends_in_number(h->p, h->n)) {
		uint32_t v4;
		enum url_error e = ipv4_parse(h->p, h->n, &v4);
		if (e)
			return e;
		char t[16];
		int k = snprintf(t, sizeof t, "%u.%u.%u.%u", v4 >> 24, (v4 >> 16) & 255,
		                 (v4 >> 8) & 255, v4 & 255);
		h->n = 0;
		puts_n(u, h, t, (size_t)k);
		u->host_kind = HOST_IPV4;
		return URL_OK;
	}
	u->host_kind = HOST_DOMAIN;
	return URL_OK;
}

enum url_error url__host_parse(struct url *u, const char *s, size_t n, bool opaque)
{
	enum url_error e = host_parse_inner(u, s, n, opaque);
	u->seg.n = 0;
	return e;
}
