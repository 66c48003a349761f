/*
 * url.c: the WHATWG basic URL parser (state machine), the serializer, the
 * accessors, options and lifecycle (host parsers in url_host.c, the crawl
 * key in url_key.c, what they share in url_internal.h). Works on bytes:
 * non-ASCII bytes are carried through and percent-encoded as they are
 * (valid UTF-8 input therefore gives the standard's UTF-8 percent-encoding).
 */
#include "frontier/url_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which sets each byte belongs to (generated from the standard's lists:
 * C0 = c <= 0x1f or > 0x7e; fragment adds space " < > `; query adds space
 * " # < >; special-query adds '; path adds ? ^ ` { }; userinfo adds
 * / : ; = @ [ \\ ] |). */
/* One row per 16 bytes. */
/* clang-format off */
const unsigned char url__enc_table[256] = {
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	62, 0, 62, 60, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 32,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 62, 32, 62, 48,
	32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 32, 48, 0,
	50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 48, 32, 48, 0, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
	63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
};
/* clang-format on */

const char *url_strerror(enum url_error e)
{
	switch (e) {
	case URL_OK: return "ok";
	case URL_ERR_TOO_LONG: return "URL too long";
	case URL_ERR_NO_SCHEME_NO_BASE: return "relative reference without a usable base";
	case URL_ERR_INVALID_SCHEME: return "invalid scheme";
	case URL_ERR_MISSING_HOST: return "missing host";
	case URL_ERR_INVALID_HOST: return "invalid host";
	case URL_ERR_INVALID_PORT: return "invalid port";
	case URL_ERR_INVALID_IPV4: return "invalid IPv4 address";
	case URL_ERR_INVALID_IPV6: return "invalid IPv6 address";
	case URL_ERR_IDNA: return "IDNA processing failed";
	case URL_ERR_CREDENTIALS_NO_HOST: return "credentials without host";
	case URL_ERR_NOT_HTTP: return "not an http(s) URL";
	case URL_ERR_NO_SPACE: return "output buffer too small";
	case URL_ERR_INVALID_ARG: return "invalid argument";
	case URL_ERR_NOMEM: return "out of memory";
	}
	return "unknown error";
}

/* ---- options ---- */

static const struct {
	const char *name;
	unsigned flag;
} canon_names[] = {
	{ "strip_tracking_params", URL_CANON_STRIP_TRACKING },
	{ "sort_query_params", URL_CANON_SORT_QUERY },
	{ "strip_www", URL_CANON_STRIP_WWW },
	{ "strip_trailing_slash", URL_CANON_STRIP_TRAILING_SLASH },
	{ "lowercase_path", URL_CANON_LOWERCASE_PATH },
	{ "strip_index", URL_CANON_STRIP_INDEX },
	{ "drop_empty_query", URL_CANON_DROP_EMPTY_QUERY },
	{ "https_to_http", URL_CANON_SCHEME_FOLD },
};

void url_options_init(struct url_options *opt)
{
	opt->max_len = URL_DEFAULT_MAX_LEN;
	opt->flags = 0;
}

enum url_error url_options_set(struct url_options *opt, const char *name, const char *value)
{
	if (!opt || !name || !value)
		return URL_ERR_INVALID_ARG;
	if (strcmp(name, "max_url_length") == 0) {
		char *end;
		unsigned long long v = strtoull(value, &end, 10);
		if (end == value || *end != '\0' || v < 16 || v > (1u << 24))
			return URL_ERR_INVALID_ARG;
		opt->max_len = (size_t)v;
		return URL_OK;
	}
	bool on;
	if (!strcasecmp(value, "true") || !strcmp(value, "1") || !strcasecmp(value, "yes") ||
	    !strcasecmp(value, "on"))
		on = true;
	else if (!strcasecmp(value, "false") || !strcmp(value, "0") || !strcasecmp(value, "no") ||
	         !strcasecmp(value, "off"))
		on = false;
	else
		return URL_ERR_INVALID_ARG;
	for (size_t i = 0; i < sizeof canon_names / sizeof canon_names[0]; i++) {
		if (strcmp(name, canon_names[i].name) == 0) {
			if (on)
				opt->flags |= canon_names[i].flag;
			else
				opt->flags &= ~canon_names[i].flag;
			return URL_OK;
		}
	}
	return URL_ERR_INVALID_ARG;
}

/* ---- lifecycle ---- */

struct url *url_create(const struct url_options *opt)
{
	struct url_options o;
	if (opt)
		o = *opt;
	else
		url_options_init(&o);
	if (o.max_len == 0)
		o.max_len = URL_DEFAULT_MAX_LEN;
	size_t cap = 4 * o.max_len + 64;
	/* 9 component-sized buffers + href (2 components), in one block */
	struct url *u = malloc(sizeof *u + 11 * cap);
	if (!u)
		return NULL;
	*u = (struct url){ .opt = o, .cap = cap };
	struct sbuf *bufs[] = { &u->scheme, &u->user, &u->pass, &u->host, &u->path,
		                &u->query,  &u->frag, &u->seg,  &u->in };
	for (size_t i = 0; i < 9; i++) {
		bufs[i]->p = u->mem + i * u->cap;
		bufs[i]->cap = u->cap;
		bufs[i]->n = 0;
	}
	u->href.p = u->mem + 9 * u->cap;
	u->href.cap = 2 * u->cap;
	u->href.p[0] = '\0';
	return u;
}

void url_destroy(struct url *u)
{
	free(u);
}

/* ---- path list kept as "/seg/seg" ---- */

static size_t path_count(const struct sbuf *p)
{
	size_t k = 0;
	for (size_t i = 0; i < p->n; i++)
		k += p->p[i] == '/';
	return k;
}

static void path_first(const struct sbuf *p, const char **s, size_t *n)
{
	if (p->n == 0) {
		*s = NULL;
		*n = 0;
		return;
	}
	const char *e = memchr(p->p + 1, '/', p->n - 1);
	*s = p->p + 1;
	*n = e ? (size_t)(e - (p->p + 1)) : p->n - 1;
}

static void path_shorten(struct url *u)
{
	struct sbuf *p = &u->path;
	if (scheme_is(&u->scheme, "file") && path_count(p) == 1 &&
	    is_drive(p->p + 1, p->n - 1, true))
		return;
	while (p->n > 0 && p->p[p->n - 1] != '/')
		p->n--;
	if (p->n > 0)
		p->n--;
}

static bool is_single_dot(const char *s, size_t n)
{
	return (n == 1 && s[0] == '.') ||
	       (n == 3 && s[0] == '%' && s[1] == '2' && ascii_to_lower(s[2]) == 'e');
}

static bool is_double_dot(const char *s, size_t n)
{
	if (n == 2)
		return s[0] == '.' && s[1] == '.';
	if (n == 4)
		return (s[0] == '.' && is_single_dot(s + 1, 3)) ||
		       (is_single_dot(s, 3) && s[3] == '.');
	if (n == 6)
		return is_single_dot(s, 3) && is_single_dot(s + 3, 3);
	return false;
}

/* ---- the state machine ---- */

enum state {
	S_SCHEME_START,
	S_SCHEME,
	S_NO_SCHEME,
	S_SPECIAL_RELATIVE_OR_AUTHORITY,
	S_PATH_OR_AUTHORITY,
	S_RELATIVE,
	S_RELATIVE_SLASH,
	S_SPECIAL_AUTHORITY_SLASHES,
	S_SPECIAL_AUTHORITY_IGNORE_SLASHES,
	S_AUTHORITY,
	S_HOST,
	S_PORT,
	S_FILE,
	S_FILE_SLASH,
	S_FILE_HOST,
	S_PATH_START,
	S_PATH,
	S_OPAQUE_PATH,
	S_QUERY,
	S_FRAGMENT
};

static void copy_buf(struct url *u, struct sbuf *dst, const struct sbuf *src)
{
	dst->n = 0;
	puts_n(u, dst, src->p, src->n);
}

static void copy_authority(struct url *u, const struct url *b)
{
	copy_buf(u, &u->user, &b->user);
	copy_buf(u, &u->pass, &b->pass);
	copy_buf(u, &u->host, &b->host);
	u->host_kind = b->host_kind;
	u->port = b->port;
}

/* '?' starts the query, '#' the fragment; any other c stays in st. */
static inline enum state query_or_fragment(struct url *u, int c, enum state st)
{
	if (c == '?') {
		u->has_query = true;
		return S_QUERY;
	}
	if (c == '#') {
		u->has_frag = true;
		return S_FRAGMENT;
	}
	return st;
}

/* The relative and file states' shared step once a base's host is taken:
 * the base's path and query are taken too, then c decides: '?' starts a
 * new query, '#' a fragment, end of input (-1) stays in `st`, anything else
 * drops the query and goes on in the path state (the caller shortens the
 * path and reads c again). Returns the next state. */
static inline enum state take_base_path_query(struct url *u, const struct url *base, int c,
                                              enum state st)
{
	copy_buf(u, &u->path, &base->path);
	copy_buf(u, &u->query, &base->query);
	u->has_query = base->has_query;
	if (c == '?')
		u->query.n = 0;
	if (c == '?' || c == '#' || c == -1)
		return query_or_fragment(u, c, st);
	u->query.n = 0;
	u->has_query = false;
	return S_PATH;
}

static void reset(struct url *u)
{
	u->scheme.n = u->user.n = u->pass.n = u->host.n = u->path.n = 0;
	u->query.n = u->frag.n = u->seg.n = 0;
	u->has_query = u->has_frag = u->opaque_path = u->special = false;
	u->host_kind = HOST_NULL;
	u->port = -1;
	u->over = false;
	u->valid = false;
	u->href.n = 0;
	u->href.p[0] = '\0';
}

/* Appends the path segment buffer (seg) to the path at a path-state boundary. */
static void path_push_seg(struct url *u)
{
	put(u, &u->path, '/');
	puts_n(u, &u->path, u->seg.p, u->seg.n);
}

static enum url_error serialize(struct url *u);

static enum url_error parse_inner(struct url *u, const char *s, size_t n, const struct url *base)
{
	const unsigned char *T = enc_sets();
	enum state st = S_SCHEME_START;
	bool at_seen = false, pass_seen = false, brackets = false;
	size_t buf_start = 0; /* start of the authority/host/port buffer in s */
	enum url_error e;
	for (size_t i = 0;; i++) {
		int c = i < n ? (unsigned char)s[i] : -1;
		size_t rem = i < n ? n - i - 1 : 0; /* bytes after c */
		const char *r = s + i + 1;          /* remaining */
		switch (st) {
		case S_SCHEME_START:
			if (ascii_is_alpha(c)) {
				put(u, &u->scheme, (char)ascii_to_lower(c));
				st = S_SCHEME;
			} else {
				st = S_NO_SCHEME;
				i--;
			}
			break;
		case S_SCHEME:
			if (c != -1 && (ascii_is_alpha(c) || ascii_is_digit(c) || c == '+' ||
			                c == '-' || c == '.')) {
				put(u, &u->scheme, (char)ascii_to_lower(c));
			} else if (c == ':') {
				if (u->over)
					return URL_ERR_TOO_LONG;
				u->special = scheme_special(&u->scheme);
				if (scheme_is(&u->scheme, "file")) {
					st = S_FILE;
				} else if (u->special && base && base->scheme.n == u->scheme.n &&
				           memcmp(base->scheme.p, u->scheme.p, u->scheme.n) == 0) {
					st = S_SPECIAL_RELATIVE_OR_AUTHORITY;
				} else if (u->special) {
					st = S_SPECIAL_AUTHORITY_SLASHES;
				} else if (rem > 0 && r[0] == '/') {
					st = S_PATH_OR_AUTHORITY;
					i++;
				} else {
					u->opaque_path = true;
					st = S_OPAQUE_PATH;
				}
			} else {
				u->scheme.n = 0;
				st = S_NO_SCHEME;
				i = (size_t)-1;
			}
			break;
		case S_NO_SCHEME:
			if (!base || (base->opaque_path && c != '#'))
				return URL_ERR_NO_SCHEME_NO_BASE;
			if (base->opaque_path && c == '#') {
				copy_buf(u, &u->scheme, &base->scheme);
				u->special = base->special;
				copy_buf(u, &u->path, &base->path);
				u->opaque_path = true;
				copy_buf(u, &u->query, &base->query);
				u->has_query = base->has_query;
				u->has_frag = true;
				st = S_FRAGMENT;
			} else if (!scheme_is(&base->scheme, "file")) {
				st = S_RELATIVE;
				i--;
			} else {
				st = S_FILE;
				i--;
			}
			break;
		case S_SPECIAL_RELATIVE_OR_AUTHORITY:
			if (c == '/' && rem > 0 && r[0] == '/') {
				st = S_SPECIAL_AUTHORITY_IGNORE_SLASHES;
				i++;
			} else {
				st = S_RELATIVE;
				i--;
			}
			break;
		case S_PATH_OR_AUTHORITY:
			if (c == '/') {
				st = S_AUTHORITY;
				buf_start = i + 1;
			} else {
				st = S_PATH;
				i--;
			}
			break;
		case S_RELATIVE:
			copy_buf(u, &u->scheme, &base->scheme);
			u->special = base->special;
			if (c == '/' || (u->special && c == '\\')) {
				st = S_RELATIVE_SLASH;
			} else {
				copy_authority(u, base);
				st = take_base_path_query(u, base, c, st);
				if (st == S_PATH) {
					path_shorten(u);
					i--;
				}
			}
			break;
		case S_RELATIVE_SLASH:
			if (u->special && (c == '/' || c == '\\')) {
				st = S_SPECIAL_AUTHORITY_IGNORE_SLASHES;
			} else if (c == '/') {
				st = S_AUTHORITY;
				buf_start = i + 1;
			} else {
				copy_authority(u, base);
				st = S_PATH;
				i--;
			}
			break;
		case S_SPECIAL_AUTHORITY_SLASHES:
			st = S_SPECIAL_AUTHORITY_IGNORE_SLASHES;
			if (c == '/' && rem > 0 && r[0] == '/')
				i++; /* both slashes read */
			else
				i--; /* c is read again there */
			break;
		case S_SPECIAL_AUTHORITY_IGNORE_SLASHES:
			if (c != '/' && c != '\\') {
				st = S_AUTHORITY;
				buf_start = i;
				i--;
			}
			break;
		case S_AUTHORITY:
			if (c == '@') {
				if (at_seen)
					puts_n(u, pass_seen ? &u->pass : &u->user, "%40", 3);
				at_seen = true;
				for (size_t k = buf_start; k < i; k++) {
					unsigned char b = (unsigned char)s[k];
					if (b == ':' && !pass_seen) {
						pass_seen = true;
						continue;
					}
					put_enc(u, pass_seen ? &u->pass : &u->user, b, SET_USERINFO,
					        T);
				}
				buf_start = i + 1;
			} else if (c == -1 || c == '/' || c == '?' || c == '#' ||
			           (u->special && c == '\\')) {
				if (at_seen && i == buf_start)
					return URL_ERR_CREDENTIALS_NO_HOST;
				i = buf_start - 1;
				st = S_HOST;
			}
			break;
		case S_HOST:
			if (c == ':' && !brackets) {
				if (i == buf_start)
					return URL_ERR_MISSING_HOST;
				e = url__host_parse(u, s + buf_start, i - buf_start, !u->special);
				if (e)
					return e;
				st = S_PORT;
				buf_start = i + 1;
			} else if (c == -1 || c == '/' || c == '?' || c == '#' ||
			           (u->special && c == '\\')) {
				i--;
				if (u->special && i + 1 == buf_start)
					return URL_ERR_MISSING_HOST;
				e = url__host_parse(u, s + buf_start, i + 1 - buf_start,
				                    !u->special);
				if (e)
					return e;
				st = S_PATH_START;
			} else {
				if (c == '[')
					brackets = true;
				if (c == ']')
					brackets = false;
			}
			break;
		case S_PORT:
			if (ascii_is_digit(c)) {
				/* accumulate below */
			} else if (c == -1 || c == '/' || c == '?' || c == '#' ||
			           (u->special && c == '\\')) {
				if (i > buf_start) {
					unsigned long v = 0;
					for (size_t k = buf_start; k < i; k++) {
						v = v * 10 + (unsigned long)(s[k] - '0');
						if (v > 65535)
							return URL_ERR_INVALID_PORT;
					}
					int dp = default_port(u->scheme.p, u->scheme.n);
					u->port = ((int)v == dp) ? -1 : (int)v;
				}
				st = S_PATH_START;
				i--;
			} else {
				return URL_ERR_INVALID_PORT;
			}
			break;
		case S_FILE:
			u->scheme.n = 0;
			puts_n(u, &u->scheme, "file", 4);
			u->special = true;
			u->host.n = 0;
			u->host_kind = HOST_EMPTY;
			if (c == '/' || c == '\\') {
				st = S_FILE_SLASH;
			} else if (base && scheme_is(&base->scheme, "file")) {
				copy_buf(u, &u->host, &base->host);
				u->host_kind = base->host_kind;
				st = take_base_path_query(u, base, c, st);
				if (st == S_PATH) {
					if (!starts_with_drive(s + i, n - i))
						path_shorten(u);
					else
						u->path.n = 0;
					i--;
				}
			} else {
				st = S_PATH;
				i--;
			}
			break;
		case S_FILE_SLASH:
			if (c == '/' || c == '\\') {
				st = S_FILE_HOST;
				buf_start = i + 1;
			} else {
				if (base && scheme_is(&base->scheme, "file")) {
					copy_buf(u, &u->host, &base->host);
					u->host_kind = base->host_kind;
					const char *f;
					size_t fn;
					path_first(&base->path, &f, &fn);
					if (!starts_with_drive(s + i, i < n ? n - i : 0) && f &&
					    is_drive(f, fn, true)) {
						put(u, &u->path, '/');
						puts_n(u, &u->path, f, fn);
					}
				}
				st = S_PATH;
				i--;
			}
			break;
		case S_FILE_HOST:
			if (c == -1 || c == '/' || c == '\\' || c == '?' || c == '#') {
				i--;
				size_t bl = i + 1 - buf_start;
				if (is_drive(s + buf_start, bl, false)) {
					u->seg.n = 0;
					puts_n(u, &u->seg, s + buf_start, bl);
					st = S_PATH;
				} else if (bl == 0) {
					u->host.n = 0;
					u->host_kind = HOST_EMPTY;
					st = S_PATH_START;
				} else {
					e = url__host_parse(u, s + buf_start, bl, false);
					if (e)
						return e;
					if (u->host.n == 9 &&
					    memcmp(u->host.p, "localhost", 9) == 0) {
						u->host.n = 0;
						u->host_kind = HOST_EMPTY;
					}
					st = S_PATH_START;
				}
			}
			break;
		case S_PATH_START:
			if (u->special) {
				st = S_PATH;
				if (c != '/' && c != '\\')
					i--;
			} else if (c == '?') {
				u->has_query = true;
				st = S_QUERY;
			} else if (c == '#') {
				u->has_frag = true;
				st = S_FRAGMENT;
			} else if (c != -1) {
				st = S_PATH;
				if (c != '/')
					i--;
			}
			break;
		case S_PATH:
			if (c == -1 || c == '/' || (u->special && c == '\\') || c == '?' ||
			    c == '#') {
				bool slash = c == '/' || (u->special && c == '\\');
				if (is_double_dot(u->seg.p, u->seg.n)) {
					path_shorten(u);
					if (!slash)
						put(u, &u->path, '/');
				} else if (is_single_dot(u->seg.p, u->seg.n)) {
					if (!slash)
						put(u, &u->path, '/');
				} else {
					if (scheme_is(&u->scheme, "file") && u->path.n == 0 &&
					    is_drive(u->seg.p, u->seg.n, false))
						u->seg.p[1] = ':';
					path_push_seg(u);
				}
				u->seg.n = 0;
				st = query_or_fragment(u, c, st);
			} else {
				put_enc(u, &u->seg, (unsigned char)c, SET_PATH, T);
			}
			break;
		case S_OPAQUE_PATH:
			if (c == '?' || c == '#') {
				st = query_or_fragment(u, c, st);
			} else if (c == ' ') {
				if (rem > 0 && (r[0] == '?' || r[0] == '#'))
					puts_n(u, &u->path, "%20", 3);
				else
					put(u, &u->path, ' ');
			} else if (c != -1) {
				put_enc(u, &u->path, (unsigned char)c, SET_C0, T);
			}
			break;
		case S_QUERY:
			if (c == '#') {
				u->has_frag = true;
				st = S_FRAGMENT;
			} else if (c != -1) {
				put_enc(u, &u->query, (unsigned char)c,
				        u->special ? SET_SQUERY : SET_QUERY, T);
			}
			break;
		case S_FRAGMENT:
			if (c != -1)
				put_enc(u, &u->frag, (unsigned char)c, SET_FRAG, T);
			break;
		}
		/* at EOF, states that "decrease the pointer" run again */
		if (c == -1 && i == n)
			break;
		if (u->over)
			return URL_ERR_TOO_LONG;
	}
	if (u->over)
		return URL_ERR_TOO_LONG;
	return serialize(u);
}

static enum url_error serialize(struct url *u)
{
	struct sbuf *h = &u->href;
	h->n = 0;
	puts_n(u, h, u->scheme.p, u->scheme.n);
	put(u, h, ':');
	u->user_off = u->pass_off = u->host_off = h->n;
	u->user_len = u->pass_len = u->host_len = 0;
	if (u->host_kind != HOST_NULL) {
		puts_n(u, h, "//", 2);
		if (u->user.n || u->pass.n) {
			u->user_off = h->n;
			u->user_len = u->user.n;
			puts_n(u, h, u->user.p, u->user.n);
			if (u->pass.n) {
				put(u, h, ':');
				u->pass_off = h->n;
				u->pass_len = u->pass.n;
				puts_n(u, h, u->pass.p, u->pass.n);
			}
			put(u, h, '@');
		}
		u->host_off = h->n;
		u->host_len = u->host.n;
		puts_n(u, h, u->host.p, u->host.n);
		if (u->port >= 0) {
			char t[8];
			int k = snprintf(t, sizeof t, ":%d", u->port);
			puts_n(u, h, t, (size_t)k);
		}
	} else if (!u->opaque_path && u->path.n > 1 && u->path.p[0] == '/' && u->path.p[1] == '/') {
		puts_n(u, h, "/.", 2);
	}
	u->path_off = h->n;
	u->path_len = u->path.n;
	puts_n(u, h, u->path.p, u->path.n);
	u->query_off = u->frag_off = 0;
	u->query_len = u->frag_len = 0;
	if (u->has_query) {
		put(u, h, '?');
		u->query_off = h->n;
		u->query_len = u->query.n;
		puts_n(u, h, u->query.p, u->query.n);
	}
	if (u->has_frag) {
		put(u, h, '#');
		u->frag_off = h->n;
		u->frag_len = u->frag.n;
		puts_n(u, h, u->frag.p, u->frag.n);
	}
	if (u->over || h->n >= h->cap)
		return URL_ERR_TOO_LONG;
	h->p[h->n] = '\0';
	return URL_OK;
}

enum url_error url_parse(struct url *u, const char *input, size_t len, const struct url *base)
{
	if (!u || (!input && len) || base == u)
		return URL_ERR_INVALID_ARG;
	reset(u);
	if (base && !base->valid)
		base = NULL;
	if (len > u->opt.max_len)
		return URL_ERR_TOO_LONG;
	/* strip leading/trailing C0 control or space, remove tab and newlines */
	size_t a = 0, b = len;
	while (a < b && (unsigned char)input[a] <= 0x20)
		a++;
	while (b > a && (unsigned char)input[b - 1] <= 0x20)
		b--;
	struct sbuf *in = &u->in;
	in->n = 0;
	for (size_t i = a; i < b; i++) {
		char c = input[i];
		if (c == '\t' || c == '\n' || c == '\r')
			continue;
		in->p[in->n++] = c; /* in->cap > max_len >= len */
	}
	enum url_error e = parse_inner(u, in->p, in->n, base);
	if (e) {
		reset(u);
		return e;
	}
	u->valid = true;
	return URL_OK;
}

/* ---- accessors ---- */

static const char empty[] = "";

const char *url_href(const struct url *u, size_t *len)
{
	if (len)
		*len = u->valid ? u->href.n : 0;
	return u->valid ? u->href.p : empty;
}

size_t url_href_cap(const struct url *u)
{
	return u->href.cap - 1;
}

static const char *span(const struct url *u, size_t off, size_t n, size_t *len)
{
	if (len)
		*len = u->valid ? n : 0;
	return u->valid ? u->href.p + off : empty;
}

const char *url_scheme(const struct url *u, size_t *len)
{
	return span(u, 0, u->scheme.n, len);
}
const char *url_username(const struct url *u, size_t *len)
{
	return span(u, u->user_off, u->user_len, len);
}
const char *url_password(const struct url *u, size_t *len)
{
	return span(u, u->pass_off, u->pass_len, len);
}
const char *url_host(const struct url *u, size_t *len)
{
	return span(u, u->host_off, u->host_len, len);
}
const char *url_path(const struct url *u, size_t *len)
{
	return span(u, u->path_off, u->path_len, len);
}

const char *url_query(const struct url *u, size_t *len)
{
	if (!u->valid || !u->has_query) {
		if (len)
			*len = 0;
		return NULL;
	}
	return span(u, u->query_off, u->query_len, len);
}

const char *url_fragment(const struct url *u, size_t *len)
{
	if (!u->valid || !u->has_frag) {
		if (len)
			*len = 0;
		return NULL;
	}
	return span(u, u->frag_off, u->frag_len, len);
}

int url_port(const struct url *u)
{
	return u->valid ? u->port : -1;
}

int url_port_effective(const struct url *u)
{
	if (!u->valid)
		return -1;
	if (u->port >= 0)
		return u->port;
	return default_port(u->scheme.p, u->scheme.n);
}

bool url_is_http(const struct url *u)
{
	return url__is_http(u);
}

const char *url_request_target(const struct url *u, size_t *len)
{
	size_t n = u->path_len + (u->has_query ? 1 + u->query_len : 0);
	return span(u, u->path_off, n, len);
}

enum url_error url_origin_key(const struct url *u, char *out, size_t cap, size_t *len)
{
	if (!u || !out)
		return URL_ERR_INVALID_ARG;
	if (!url_is_http(u))
		return URL_ERR_NOT_HTTP;
	int k = snprintf(out, cap, "%.*s://%.*s:%d", (int)u->scheme.n, u->href.p, (int)u->host_len,
	                 u->href.p + u->host_off, url_port_effective(u));
	if (k < 0 || (size_t)k >= cap)
		return URL_ERR_NO_SPACE;
	if (len)
		*len = (size_t)k;
	return URL_OK;
}
