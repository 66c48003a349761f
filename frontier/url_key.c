/*
 * url_key.c: the crawl key of a parsed URL (percent-encoding normalized,
 * the opt-in canonicalizations of url.h), the one-shot url_normalize,
 * url_key_split, the cut of a key into its host key and host name, and
 * url_host_is_dns_name, the test that such a host name can resolve.
 */
#include "frontier/url_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- crawl key ---- */

int url_key_split(const char *key, size_t len, size_t *authority_len, size_t *host_off,
                  size_t *host_len)
{
	const char *colon = memchr(key, ':', len);
	if (!colon || (size_t)(colon - key) + 3 > len || colon[1] != '/' || colon[2] != '/')
		return -1;
	/* One pass over the authority: userinfo ends at its last '@', the port
	 * starts at the first ':' after it. */
	enum { AUTH_END = 1, AUTH_AT, AUTH_COLON };
	static const unsigned char stop[256] = {
		['/'] = AUTH_END, ['?'] = AUTH_END,   ['#'] = AUTH_END,
		['@'] = AUTH_AT,  [':'] = AUTH_COLON,
	};
	size_t start = (size_t)(colon - key) + 3, end, hs = start, port = SIZE_MAX;
	for (end = start; end < len; end++) {
		unsigned char k = stop[(unsigned char)key[end]];
		if (k == 0)
			continue;
		if (k == AUTH_END)
			break;
		if (k == AUTH_AT) {
			hs = end + 1;
			port = SIZE_MAX;
		} else if (port == SIZE_MAX) {
			port = end;
		}
	}
	size_t he = port != SIZE_MAX ? port : end;
	if (hs < end && key[hs] == '[') {
		const char *rb = memchr(key + hs, ']', end - hs);
		if (!rb)
			return -1;
		he = (size_t)(rb - key) + 1;
	}
	if (he == hs)
		return -1;
	*authority_len = end;
	*host_off = hs;
	*host_len = he - hs;
	return 0;
}

bool url_host_is_dns_name(const char *host, size_t len)
{
	enum { NAME_MAX_OCTETS = 253, LABEL_MAX_OCTETS = 63 };
	size_t label = 0;

	if (host == NULL)
		return false;
	if (len > 0 && host[len - 1] == '.')
		len--; /* the root label of a fully qualified name */
	if (len == 0 || len > NAME_MAX_OCTETS)
		return false;
	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)host[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (ascii_is_alpha(c) || ascii_is_digit(c) || c == '-' || c == '_') {
			if (++label > LABEL_MAX_OCTETS)
				return false;
		} else {
			return false;
		}
	}
	return label > 0;
}

struct obuf {
	char *p;
	size_t n, cap;
	bool over;
};

static void oput(struct obuf *o, const char *s, size_t n)
{
	if (n > o->cap - o->n) {
		o->over = true;
		return;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static bool unreserved(int c)
{
	return ascii_is_alpha(c) || ascii_is_digit(c) || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

/* Percent-encoding normalized copy of s[n] (hex upper, unreserved decoded,
 * a '%' that starts no escape written as %25),
 * optionally lower-casing the characters that are not escapes. */
static void norm_pct(struct obuf *o, const char *s, size_t n, bool lowercase)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%' && i + 2 < n && ascii_is_hex((unsigned char)s[i + 1]) &&
		    ascii_is_hex((unsigned char)s[i + 2])) {
			int v = ascii_hex_value((unsigned char)s[i + 1]) * 16 +
			        ascii_hex_value((unsigned char)s[i + 2]);
			if (unreserved(v)) {
				char ch = (char)(lowercase ? ascii_to_lower(v) : v);
				oput(o, &ch, 1);
			} else {
				char t[3] = { '%', URL_HEX_DIGITS[v >> 4], URL_HEX_DIGITS[v & 15] };
				oput(o, t, 3);
			}
			i += 2;
		} else if (c == '%') {
			/* a stray '%' would form a new escape with decoded neighbours
             * ("%%36C" -> "%6C"): write it as the escape it stands for */
			oput(o, "%25", 3);
		} else {
			char ch = (char)(lowercase ? ascii_to_lower(c) : c);
			oput(o, &ch, 1);
		}
	}
}

static bool tracking_param(const char *s, size_t n)
{
	static const char *const names[] = { "fbclid",  "gclid",  "dclid",  "gbraid", "wbraid",
		                             "msclkid", "mc_cid", "mc_eid", "_ga",    "_gl",
		                             "yclid",   "igshid", "_hsenc", "_hsmi",  "mkt_tok" };
	if (n >= 4 && strncasecmp(s, "utm_", 4) == 0)
		return true;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strlen(names[i]) == n && strncasecmp(s, names[i], n) == 0)
			return true;
	return false;
}

struct qparam {
	const char *p;
	size_t n, name_n, idx;
};

static int qparam_cmp(const void *a, const void *b)
{
	const struct qparam *x = a, *y = b;
	int c = ascii_bytes_cmp(x->p, x->name_n, y->p, y->name_n);
	if (c)
		return c;
	return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

#define QPARAM_MAX 256

/* Query canonicalization: q[n] is already percent-normalized. */
static void canon_query(struct obuf *o, const char *q, size_t n, unsigned flags)
{
	struct qparam ps[QPARAM_MAX];
	size_t k = 0;
	bool too_many = false;
	size_t st = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && q[i] != '&')
			continue;
		const char *p = q + st;
		size_t pn = i - st;
		st = i + 1;
		const char *eq = memchr(p, '=', pn);
		size_t nn = eq ? (size_t)(eq - p) : pn;
		if ((flags & URL_CANON_STRIP_TRACKING) && tracking_param(p, nn))
			continue;
		if (k == QPARAM_MAX) {
			too_many = true;
			break;
		}
		ps[k] = (struct qparam){ p, pn, nn, k };
		k++;
	}
	if (too_many) { /* leave huge queries alone rather than half-process them */
		flags &= ~(unsigned)(URL_CANON_STRIP_TRACKING | URL_CANON_SORT_QUERY);
		oput(o, "?", 1);
		oput(o, q, n);
		return;
	}
	if ((flags & URL_CANON_SORT_QUERY) && k > 1)
		qsort(ps, k, sizeof ps[0], qparam_cmp);
	size_t mark = o->n;
	oput(o, "?", 1);
	for (size_t i = 0; i < k; i++) {
		if (i)
			oput(o, "&", 1);
		oput(o, ps[i].p, ps[i].n);
	}
	/* An empty result is dropped when asked, or when stripping emptied it
     * (so "?utm_x=1&" and its key "" agree). */
	if (!o->over && o->n == mark + 1 &&
	    ((flags & URL_CANON_DROP_EMPTY_QUERY) || ((flags & URL_CANON_STRIP_TRACKING) && n > 0)))
		o->n = mark;
}

enum url_error url_crawl_key(const struct url *u, char *out, size_t cap, size_t *len)
{
	if (!u || !out || cap == 0)
		return URL_ERR_INVALID_ARG;
	if (!url__is_http(u))
		return URL_ERR_NOT_HTTP;
	unsigned f = u->opt.flags;
	struct obuf o = { .p = out, .n = 0, .cap = cap - 1, .over = false };
	const char *h = u->href.p;
	/* https_to_http keeps "https://h:80" as it is: folded, its port would
     * vanish on reparse (80 is http's default) and the key would change. */
	if ((f & URL_CANON_SCHEME_FOLD) && u->port != 80)
		oput(&o, "http:", 5);
	else
		oput(&o, h, u->scheme.n + 1);
	/* authority: "//", host, port as serialized. The userinfo is left out:
	 * a page must not choose the credentials the crawler sends, nor split
	 * one server into many hosts. A domain's final dots are dropped too
	 * ("h." and "h" are one server), leaving at least one byte. strip_www
	 * removes every leading "www."; both keep the key a fixed point. */
	size_t host_off = u->host_off, host_end = host_off + u->host_len, skip = 0;
	if ((f & URL_CANON_STRIP_WWW) && u->host_kind == HOST_DOMAIN) {
		while (u->host_len - skip > 4 && memcmp(h + host_off + skip, "www.", 4) == 0)
			skip += 4;
	}
	if (u->host_kind == HOST_DOMAIN) {
		size_t end = host_end;
		while (end - (host_off + skip) > 1 && h[end - 1] == '.')
			end--;
		/* "2103..." is a domain, "2103" an IPv4 address: keep such dots */
		if (!url__ends_in_number(h + host_off + skip, end - host_off - skip))
			host_end = end;
	}
	oput(&o, "//", 2);
	oput(&o, h + host_off + skip, host_end - host_off - skip);
	oput(&o, h + host_off + u->host_len, u->path_off - host_off - u->host_len);
	/* path */
	size_t pstart = o.n;
	if (u->path_len == 0)
		oput(&o, "/", 1);
	else
		norm_pct(&o, h + u->path_off, u->path_len, (f & URL_CANON_LOWERCASE_PATH) != 0);
	/* strip_index and strip_trailing_slash feed each other ("/a/index.html/"):
     * repeat until neither applies, so the key is a fixed point. */
	for (bool changed = true; changed && !o.over;) {
		changed = false;
		if (f & URL_CANON_STRIP_TRAILING_SLASH) {
			while (o.n - pstart > 1 && o.p[o.n - 1] == '/') {
				o.n--;
				changed = true;
			}
		}
		if (f & URL_CANON_STRIP_INDEX) {
			static const char *const idx[] = { "index.html", "index.htm", "index.php",
				                           "default.asp", "default.aspx" };
			for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
				size_t l = strlen(idx[i]);
				if (o.n - pstart > l && o.p[o.n - l - 1] == '/' &&
				    strncasecmp(o.p + o.n - l, idx[i], l) == 0) {
					o.n -= l;
					changed = true;
					break;
				}
			}
		}
	}
	/* query */
	if (u->has_query) {
		if (f & (URL_CANON_STRIP_TRACKING | URL_CANON_SORT_QUERY |
		         URL_CANON_DROP_EMPTY_QUERY)) {
			/* normalize into the tail of out first, then canonicalize from a copy */
			char tmp[4096];
			struct obuf t = { .p = tmp, .n = 0, .cap = sizeof tmp, .over = false };
			norm_pct(&t, h + u->query_off, u->query_len, false);
			if (t.over) {
				oput(&o, "?", 1);
				norm_pct(&o, h + u->query_off, u->query_len, false);
			} else {
				canon_query(&o, tmp, t.n, f);
			}
		} else {
			oput(&o, "?", 1);
			norm_pct(&o, h + u->query_off, u->query_len, false);
		}
	}
	if (o.over)
		return o.n >= u->opt.max_len ? URL_ERR_TOO_LONG : URL_ERR_NO_SPACE;
	if (o.n > u->opt.max_len)
		return URL_ERR_TOO_LONG;
	out[o.n] = '\0';
	if (len)
		*len = o.n;
	return URL_OK;
}

enum url_error url_normalize(struct url *u, const struct url *base, const char *ref, size_t len,
                             char *out, size_t cap, size_t *out_len)
{
	enum url_error e = url_parse(u, ref, len, base);
	if (e)
		return e;
	return url_crawl_key(u, out, cap, out_len);
}
