/*
 * url_internal.h: what the URL module's files share (url.c: options,
 * lifecycle, the WHATWG state machine, the serializer and the accessors;
 * url_host.c: the host parsers; url_key.c: the crawl key and its cut). Only
 * those files include it; the module's contract is url.h.
 *
 * struct url holds one allocation cut into fixed-capacity byte buffers
 * (struct sbuf), one per component plus the href and the cleaned input; an
 * append past a buffer's capacity sets `over` and is dropped, so a parse
 * never writes out of bounds and reports URL_ERR_TOO_LONG instead.
 */
#ifndef FRONTIER_URL_INTERNAL_H
#define FRONTIER_URL_INTERNAL_H

#include "frontier/base/ascii.h"
#include "frontier/url.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define URL_HEX_DIGITS "0123456789ABCDEF" /* upper case, as percent-encoding is written */

/* A bounded byte buffer: appends past cap set `over` instead of writing. */
struct sbuf {
	char *p;
	size_t n, cap;
};

enum host_kind { HOST_NULL = 0, HOST_EMPTY, HOST_DOMAIN, HOST_IPV4, HOST_IPV6, HOST_OPAQUE };

struct url {
	struct url_options opt;
	size_t cap; /* per-component capacity */
	bool over;  /* some append overflowed during this parse */
	bool valid;
	/* components (the parse result; also read when `u` is a base) */
	struct sbuf scheme, user, pass, host, path, query, frag, seg;
	bool has_query, has_frag, opaque_path, special;
	enum host_kind host_kind;
	int port; /* -1 = null */
	/* serialization and spans into it */
	struct sbuf href;
	size_t host_off, host_len, user_off, user_len, pass_off, pass_len;
	size_t path_off, path_len, query_off, query_len, frag_off, frag_len;
	/* input after cleanup */
	struct sbuf in;
	char mem[]; /* every buffer above, allocated with the struct */
};

/* ---- small helpers ---- */

static inline void put(struct url *u, struct sbuf *b, char c)
{
	if (b->n >= b->cap) {
		u->over = true;
		return;
	}
	b->p[b->n++] = c;
}

static inline void puts_n(struct url *u, struct sbuf *b, const char *s, size_t n)
{
	if (n > b->cap - b->n) {
		u->over = true;
		n = b->cap - b->n;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

/* Percent-encode sets, as bits in a table over bytes. */
enum { SET_C0 = 1, SET_FRAG = 2, SET_QUERY = 4, SET_SQUERY = 8, SET_PATH = 16, SET_USERINFO = 32 };

/* Which sets each byte belongs to (url.c). */
extern const unsigned char url__enc_table[256];

static inline const unsigned char *enc_sets(void)
{
	return url__enc_table;
}

static inline void put_enc(struct url *u, struct sbuf *b, unsigned char c, unsigned set,
                           const unsigned char *t)
{
	if (t[c] & set) {
		put(u, b, '%');
		put(u, b, URL_HEX_DIGITS[c >> 4]);
		put(u, b, URL_HEX_DIGITS[c & 15]);
	} else {
		put(u, b, (char)c);
	}
}

static inline bool scheme_is(const struct sbuf *s, const char *name)
{
	size_t n = strlen(name);
	return s->n == n && memcmp(s->p, name, n) == 0;
}

static inline bool scheme_special(const struct sbuf *s)
{
	return scheme_is(s, "http") || scheme_is(s, "https") || scheme_is(s, "ws") ||
	       scheme_is(s, "wss") || scheme_is(s, "ftp") || scheme_is(s, "file");
}

static inline int default_port(const char *s, size_t n)
{
	if (n == 4 && !memcmp(s, "http", 4))
		return 80;
	if (n == 5 && !memcmp(s, "https", 5))
		return 443;
	if (n == 2 && !memcmp(s, "ws", 2))
		return 80;
	if (n == 3 && !memcmp(s, "wss", 3))
		return 443;
	if (n == 3 && !memcmp(s, "ftp", 3))
		return 21;
	return -1;
}

/* A Windows drive letter: ASCII alpha then ':' or '|'; normalized: ':' only. */
static inline bool is_drive(const char *s, size_t n, bool normalized)
{
	return n == 2 && ascii_is_alpha((unsigned char)s[0]) &&
	       (s[1] == ':' || (!normalized && s[1] == '|'));
}

/* "starts with a Windows drive letter": drive, then end or / \ ? # */
static inline bool starts_with_drive(const char *s, size_t n)
{
	if (n < 2 || !is_drive(s, 2, false))
		return false;
	if (n == 2)
		return true;
	char c = s[2];
	return c == '/' || c == '\\' || c == '?' || c == '#';
}

/* url_is_http, inlined where the crawl key is computed. */
static inline bool url__is_http(const struct url *u)
{
	return u->valid && (scheme_is(&u->scheme, "http") || scheme_is(&u->scheme, "https"));
}

/* url_host.c: the host parser (domain with IDNA, IPv4, IPv6, opaque) of
 * the standard; writes the serialized host into u->host and its kind. */
enum url_error url__host_parse(struct url *u, const char *s, size_t n, bool opaque);
/* The URL Standard's "ends in a number": the host's last label (a trailing
 * dot ignored) reads as an IPv4 number, so the host parses as an address. */
bool url__ends_in_number(const char *s, size_t n);

#endif
