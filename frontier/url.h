/*
 * url.h: WHATWG URL parsing, resolution and the crawl key.
 *
 * Data structure. A `struct url` is an opaque, reusable parse result: it owns
 * fixed-capacity buffers (sized once from the options' max_len, no malloc per
 * parse) holding each component (scheme, username, password, host, port,
 * path, query, fragment) and the serialized href. `url_parse` runs the WHATWG
 * URL Standard's basic URL parser (state machine: scheme start ... fragment)
 * on an input, optionally against an already parsed base, and fills it.
 * Special schemes (http, https, ws, wss, ftp, file) get host parsing (percent
 * decoding, IDNA UTS #46 via libidn2, IPv4 and IPv6 parsers), default ports
 * dropped, dot segments removed; other schemes get opaque hosts or opaque
 * paths as the standard says. Only http and https are crawled.
 *
 * Two outputs:
 *  - the href: the WHATWG serialization, fragment kept, nothing more;
 *  - the crawl key (`url_crawl_key`): for http/https only, the href without
 *    fragment, percent-encoding normalized in path and query (hex upper
 *    case; %XX of unreserved ALPHA DIGIT - . _ ~ decoded; a '%' that starts
 *    no escape written %25), empty path as "/", then the opt-in
 *    canonicalizations of the options. A crawl key reparses to itself.
 *    It names the server by scheme, host and port alone: the userinfo
 *    (user:pass@) is dropped, so a page can neither choose credentials the
 *    crawler sends nor make one server many hosts, and so are a domain's
 *    final dots ("http://h./" and "http://h/" are one host).
 *
 * Known deviation: libidn2 (IDNA2008 on top of UTS #46) refuses some
 * non-ASCII hosts the standard accepts (symbols such as U+2603): they are
 * rejected with URL_ERR_IDNA. ASCII "xn--" labels it refuses are kept when
 * they are valid Punycode decoding to some non-ASCII text free of the code
 * points UTS #46 maps to nothing (U+00AD...) or disallows as invisible
 * (controls, format characters, private use...), else refused with
 * URL_ERR_IDNA. Mapped code points in such a label are not refused, nor is
 * the bare "xn--": the conformance suite in use expects both kept.
 *
 * Invariants: after a successful parse the href is NUL-terminated, at most
 * url_href_cap(u) bytes, and every accessor returns a span inside it. After a
 * failed parse the object holds no URL (url_href returns "" and accessors
 * empty spans) until the next successful parse. Inputs longer than max_len
 * bytes are rejected (URL_ERR_TOO_LONG) before any work, and so are crawl
 * keys longer than max_len.
 *
 * Threads: no global state; one `struct url` per thread (or per call site).
 * A parsed base may be shared read-only by many threads.
 *
 * Workload: millions of links per second per core, most of them relative
 * references against the page's base, almost all ASCII.
 */
#ifndef FRONTIER_URL_H
#define FRONTIER_URL_H

#include <stdbool.h>
#include <stddef.h>

#define URL_DEFAULT_MAX_LEN 2048

enum url_error {
	URL_OK = 0,
	URL_ERR_TOO_LONG,            /* input or crawl key longer than max_len */
	URL_ERR_NO_SCHEME_NO_BASE,   /* relative reference and no (usable) base */
	URL_ERR_INVALID_SCHEME,      /* scheme cannot be parsed */
	URL_ERR_MISSING_HOST,        /* special URL with an empty host */
	URL_ERR_INVALID_HOST,        /* forbidden code point or bad percent-decoding */
	URL_ERR_INVALID_PORT,        /* port not digits or > 65535 */
	URL_ERR_INVALID_IPV4,        /* host ends in a number but is no IPv4 */
	URL_ERR_INVALID_IPV6,        /* malformed [IPv6] literal */
	URL_ERR_IDNA,                /* UTS #46 processing (libidn2) rejected the host */
	URL_ERR_CREDENTIALS_NO_HOST, /* user:pass@ with nothing after */
	URL_ERR_NOT_HTTP,            /* crawl key asked for a non-http(s) URL */
	URL_ERR_NO_SPACE,            /* output buffer too small (caller's cap) */
	URL_ERR_INVALID_ARG,         /* NULL pointer or unknown option name */
	URL_ERR_NOMEM                /* url_create could not allocate */
};

/* Static string describing `e`; never NULL. */
const char *url_strerror(enum url_error e);

/* Opt-in canonicalizations for the crawl key (all off by default). Config
 * names in brackets. The ones marked CHANGES MEANING may merge URLs that a
 * server treats differently: use them only for crawls that accept that. */
enum {
	/* [strip_tracking_params] drop utm_*, fbclid, gclid, dclid, gbraid,
     * wbraid, msclkid, mc_cid, mc_eid, _ga, _gl, yclid, igshid, _hsenc,
     * _hsmi, mkt_tok from the query (CHANGES MEANING only for odd servers) */
	URL_CANON_STRIP_TRACKING = 1u << 0,
	/* [sort_query_params] stable sort of '&'-separated query parameters by
     * name (CHANGES MEANING for order-sensitive servers) */
	URL_CANON_SORT_QUERY = 1u << 1,
	/* [strip_www] drop a leading "www." label from domain hosts
     * (CHANGES MEANING: www.x and x may be different sites) */
	URL_CANON_STRIP_WWW = 1u << 2,
	/* [strip_trailing_slash] "/a/b/" -> "/a/b" (not the root "/")
     * (CHANGES MEANING: a directory and a file) */
	URL_CANON_STRIP_TRAILING_SLASH = 1u << 3,
	/* [lowercase_path] lower-case the path (CHANGES MEANING on
     * case-sensitive servers, i.e. most non-Windows ones) */
	URL_CANON_LOWERCASE_PATH = 1u << 4,
	/* [strip_index] drop a final "index.html", "index.htm", "index.php",
     * "default.asp(x)" segment (CHANGES MEANING if the server differs) */
	URL_CANON_STRIP_INDEX = 1u << 5,
	/* [drop_empty_query] "/a?" -> "/a" (CHANGES MEANING rarely) */
	URL_CANON_DROP_EMPTY_QUERY = 1u << 6,
	/* [https_to_http] key https and http URLs alike (scheme "http")
     * (CHANGES MEANING: only for de-duplication across schemes) */
	URL_CANON_SCHEME_FOLD = 1u << 7
};

struct url_options {
	size_t max_len; /* bytes; 0 means URL_DEFAULT_MAX_LEN */
	unsigned flags; /* URL_CANON_* bits */
};

/* Fills `opt` with the defaults (max_len 2048, no canonicalization). */
void url_options_init(struct url_options *opt);

/* Sets the option named `name` (config names above, or "max_url_length")
 * from `value` ("true"/"false"/"1"/"0"/"yes"/"no"/"on"/"off", or a number of
 * bytes for max_url_length). URL_ERR_INVALID_ARG for an unknown name or bad
 * value; `opt` is unchanged then. */
enum url_error url_options_set(struct url_options *opt, const char *name, const char *value);

/* A new parse object with a copy of `opt` (NULL = defaults). NULL only when
 * out of memory. The caller frees it with url_destroy. */
struct url *url_create(const struct url_options *opt);

/* Frees `u`; NULL is a no-op. */
void url_destroy(struct url *u);

/*
 * Parses `input` (len bytes, any bytes; need not be NUL-terminated) as a URL
 * or, when `base` is not NULL, as a reference resolved against `base` (a URL
 * previously parsed successfully; it is only read, and must not be `u`).
 * Returns URL_OK and fills `u`, or an error and leaves `u` empty.
 */
enum url_error url_parse(struct url *u, const char *input, size_t len, const struct url *base);

/* The href (NUL-terminated, owned by `u`, valid until the next parse); its
 * length in *len if len is not NULL. */
const char *url_href(const struct url *u, size_t *len);

/* Capacity of u's href buffer (the longest href it can hold). */
size_t url_href_cap(const struct url *u);

/* Components as spans into the href (not NUL-terminated), borrowed from `u`.
 * scheme: without ':'; host: serialized (IPv6 with brackets), "" if none;
 * path: "/a/b" or the opaque path; query and fragment: without '?'/'#', and
 * NULL with *len 0 when absent (distinct from empty, which returns non-NULL). */
const char *url_scheme(const struct url *u, size_t *len);
const char *url_username(const struct url *u, size_t *len);
const char *url_password(const struct url *u, size_t *len);
const char *url_host(const struct url *u, size_t *len);
const char *url_path(const struct url *u, size_t *len);
const char *url_query(const struct url *u, size_t *len);
const char *url_fragment(const struct url *u, size_t *len);

/* Port as written (-1 when absent or the scheme's default). */
int url_port(const struct url *u);

/* Port in effect: the explicit one or the scheme's default (80/443...; -1 if
 * the scheme has none). */
int url_port_effective(const struct url *u);

/* true for http and https URLs (the only ones crawled). */
bool url_is_http(const struct url *u);

/* The request target: path plus '?' and query when present (no fragment),
 * a span into the href; what robots.txt rules are matched against. */
const char *url_request_target(const struct url *u, size_t *len);

/*
 * The origin key "scheme://host:port" (port always written, effective) that
 * keys per-host queues, written NUL-terminated into out[cap]; length in
 * *len. URL_ERR_NOT_HTTP for non-http(s) URLs, URL_ERR_NO_SPACE if cap is
 * too small.
 */
enum url_error url_origin_key(const struct url *u, char *out, size_t cap, size_t *len);

/*
 * The crawl key of `u` under u's options (see the top comment), written
 * NUL-terminated into out[cap]; length in *len (may be NULL). Errors:
 * URL_ERR_NOT_HTTP, URL_ERR_TOO_LONG (key > max_len), URL_ERR_NO_SPACE.
 */
enum url_error url_crawl_key(const struct url *u, char *out, size_t cap, size_t *len);

/*
 * Splits an absolute URL already normalized (a crawl key) without parsing
 * it: *authority_len = length of "scheme://authority", the host key that
 * names the URL's frontier queue (the path starts there); the host name at
 * [*host_off, *host_off + *host_len) (userinfo and port left out, an IPv6
 * literal with its brackets). -1 when key has no "://" after its scheme or
 * an empty host. The one place the crawler cuts a key; no allocation.
 */
int url_key_split(const char *key, size_t len, size_t *authority_len, size_t *host_off,
                  size_t *host_len);

/*
 * true if host[len] is a name DNS can carry and a resolver will look up:
 * 1 to 253 octets (a final '.' of a fully qualified name not counted), no
 * empty label, labels of 1 to 63 octets of ASCII letters, digits, '-' and
 * '_' (underscores occur in real host names and resolvers pass them). A
 * URL host that fails it can never resolve, so it is refused once, before
 * it reaches the frontier (scope rule "invalid-host"). IPv4 dotted quads
 * pass; an IPv6 literal ("[...]") does not: test IP literals first.
 */
bool url_host_is_dns_name(const char *host, size_t len);

/* One shot: url_parse(u, ref, len, base) then url_crawl_key(u, ...). */
enum url_error url_normalize(struct url *u, const struct url *base, const char *ref, size_t len,
                             char *out, size_t cap, size_t *out_len);

#endif
