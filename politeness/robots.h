/*
 * robots.h: robots.txt (RFC 9309) compiled for one user agent.
 *
 * Data structure. A `struct robots` holds only what matters to our crawler:
 * the allow/disallow rules of the group(s) that apply to our product token
 * (every group naming it, merged; if none does, every `*` group, merged; if
 * neither exists, no rule at all), the crawl-delay of those groups, and every
 * Sitemap line of the file. The rules are percent-normalized at parse time
 * (hex uppercased, %XX of unreserved characters decoded, octets >= 0x80
 * encoded), sorted by pattern length, longest first, Allow before Disallow
 * at equal length (the longest match wins and Allow wins ties: RFC 9309
 * 2.2.2), a rule repeated kept once, and from ROBOTS_INDEX_MIN_RULES rules
 * on indexed by literal prefix (the text before the first `*`), so that a
 * check meets only the rules whose literal prefix starts the path.
 * Patterns support `*` (any run of octets) and a final `$` (end anchor).
 *
 * Invariants: once shared, a compiled `struct robots` is immutable, so any
 * number of threads may call robots_allowed() on it at once; "/robots.txt"
 * is always allowed; a file with no applicable rule allows everything.
 *
 * Cost of a check: O(path length) to find the rules that can match (index
 * or, below ROBOTS_INDEX_MIN_RULES rules, a pass over them), plus one
 * search of the path per wildcard rule it meets (a rule with a literal
 * piece after a `*`, whose literal prefix starts the path). At most the
 * object's wildcard cap (robots_wildcard_cap_set) of those searches: a path
 * that meets more wildcard rules than the cap, none of them outranked by
 * a certain match, is refused unchecked (disallowed: when unsure, don't).
 * Only that refusal departs from RFC 9309, for files past the cap.
 *
 * Workload: a file is parsed once per host per expiry (24 h), then checked
 * for every URL of that host (thousands of checks per parse), so parsing
 * does the work (normalize, sort, index) and a check is a hash of the path's
 * prefixes and a few compares.
 *
 * Parsing is tolerant: unknown lines, lines without a colon (`disallow /`,
 * accepted as Google does when exactly two words), a UTF-8 BOM, CR / LF /
 * CRLF line ends and `#` comments are handled; only the first
 * ROBOTS_PARSE_LIMIT bytes are read (a line cut by the limit is dropped) and
 * a line is truncated at ROBOTS_LINE_MAX bytes.
 *
 * Where Google's reference parser and RFC 9309 part ways we follow the RFC
 * (tests/robots/robots_conformance.c lists each case): our agent is matched
 * by its product token (the UA up to '/' or space), and %XX of unreserved
 * characters and raw non-ASCII octets are normalized in both rule and path
 * (RFC 9309 2.2.2). As Google does, "Allow: /dir/index.html" also allows
 * "/dir/", and a missing colon is tolerated.
 */
#ifndef POLITENESS_ROBOTS_H
#define POLITENESS_ROBOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Only this many bytes of a robots.txt are parsed (RFC 9309 2.5: 500 KiB). */
#define ROBOTS_PARSE_LIMIT (500u * 1024u)
/* Longer lines are truncated to this many bytes (as Google's parser does). */
#define ROBOTS_LINE_MAX (2083u * 8u - 1u)
/* Redirects the caller follows when fetching robots.txt (RFC 9309 2.3.1.2). */
#define ROBOTS_MAX_REDIRECTS 5
/* At most this many Sitemap URLs are kept per file. */
#define ROBOTS_MAX_SITEMAPS 1024
/* Files of at least this many rules are indexed by literal prefix; fewer
 * are checked rule by rule (as fast, and no index to keep). */
#define ROBOTS_INDEX_MIN_RULES 32
/* Wildcard rules one check may meet, unless robots_wildcard_cap_set says
 * otherwise (the crawler sets [politeness] robots_max_wildcard_rules). */
#define ROBOTS_WILDCARD_CAP_DEFAULT 500
/* Expiry of a fetched robots.txt (parsed, or 4xx "unavailable"): 24 h. */
#define ROBOTS_TTL_MS (24LL * 3600 * 1000)
/* Retry delay after 5xx / 429 / network error ("unreachable"): 10 min. */
#define ROBOTS_RETRY_MS (10LL * 60 * 1000)

/* Error codes. */
enum robots_err {
	ROBOTS_OK = 0,      /* success */
	ROBOTS_ENOMEM = 1,  /* allocation failed; nothing was returned */
	ROBOTS_EINVAL = 2,  /* a NULL pointer where one is required */
	ROBOTS_ETOOLONG = 3 /* output buffer too small (robots_path_*) */
};

/* Static English text for an error code (never NULL). */
const char *robots_strerror(int err);

struct robots;

/*
 * Parses `body` (len bytes, need not be NUL-terminated; NULL with len 0 is
 * an empty file) for the agent whose User-Agent header is `user_agent`:
 * its product token is the part before the first '/' or space, matched
 * case-insensitively against each group's user-agent token. An empty or NULL
 * user_agent matches only `*` groups. On success *out is a new object the
 * caller frees with robots_destroy(); on error *out is NULL.
 */
int robots_parse(const char *body, size_t len, const char *user_agent, struct robots **out);

/* New objects that allow / disallow every path (except /robots.txt, always
 * allowed). NULL only when out of memory. The caller frees them. */
struct robots *robots_create_allow_all(void);
struct robots *robots_create_disallow_all(void);

/* Frees everything; NULL is a no-op. */
void robots_destroy(struct robots *r);

/*
 * true if our agent may fetch `path_and_query` (len bytes: the URL's path
 * plus '?' and query, no fragment; as emitted by frontier/url.h, i.e.
 * percent-encoded; an empty path means "/"). Non-ASCII octets and %XX
 * sequences are normalized as the rules were, so raw and encoded forms
 * compare equal. Thread-safe on a shared object. Returns false if memory for
 * a very long path (> 2 KiB) cannot be had, and for a path past the
 * wildcard cap (see the top comment): when unsure, don't.
 */
bool robots_allowed(const struct robots *r, const char *path_and_query, size_t len);

/*
 * Sets how many wildcard rules one check may meet (0: no cap; the default
 * is ROBOTS_WILDCARD_CAP_DEFAULT), before r is shared. Returns
 * robots_wildcard_max(r): when it is above a non-zero cap, some paths are
 * refused because of the cap.
 */
uint32_t robots_wildcard_cap_set(struct robots *r, uint32_t cap);

/* The most wildcard rules any one path can meet in r. */
uint32_t robots_wildcard_max(const struct robots *r);

/* Crawl-delay values above this (a year), infinite and overflowing ones
 * included, read as this: far above any cap, and small enough that the
 * delay in microseconds fits a 64-bit integer (the caller's conversion can
 * not overflow). */
#define ROBOTS_CRAWL_DELAY_MAX_S (365.0 * 24 * 3600)

/* Crawl-delay of the applicable group(s) in seconds, at most
 * ROBOTS_CRAWL_DELAY_MAX_S (the largest if merged groups give several), or a
 * negative value if none. The caller caps it. */
double robots_crawl_delay(const struct robots *r);

/* Sitemap URLs of the whole file, in file order (borrowed strings, valid
 * until robots_destroy). */
size_t robots_sitemap_count(const struct robots *r);
const char *robots_sitemap(const struct robots *r, size_t i);

/* Number of compiled rules, a repeated one counted once (for tests and
 * statistics). */
size_t robots_rule_count(const struct robots *r);
/* true if r has no rule: every path allowed (its Crawl-delay and
 * Sitemap lines aside); also for NULL. */
bool robots_allows_all(const struct robots *r);
/* The heap bytes r holds (its struct, rules, patterns, sitemaps, as malloc
 * rounds them); 0 for NULL. O(rules + sitemaps). */
size_t robots_mem_bytes(const struct robots *r);

/*
 * A compiled object as bytes and back (checkpoints keep the robots cache
 * across a resume without fetching every robots.txt again). The encoding is
 * exact (rules, their order, deny-all, crawl-delay, sitemaps) and versioned;
 * robots_decode refuses (NULL) anything malformed. robots_encode returns
 * ROBOTS_OK with *out malloc'd (the caller frees it), or ROBOTS_ENOMEM.
 */
int robots_encode(const struct robots *r, char **out, size_t *len);
struct robots *robots_decode(const char *data, size_t len);

/* ---- Fetch semantics (RFC 9309 2.3.1) as a pure function ---- */

enum robots_source {
	ROBOTS_SRC_PARSED = 0,      /* 2xx: the body's rules apply */
	ROBOTS_SRC_UNAVAILABLE = 1, /* 4xx (but 429), or a 3xx left after
                                   ROBOTS_MAX_REDIRECTS: allow all */
	ROBOTS_SRC_UNREACHABLE = 2  /* 5xx, 429, other status, network error
                                   (status < 0): disallow all, retry later */
};

struct robots_policy {
	struct robots *robots; /* owned by the caller: robots_destroy() */
	enum robots_source source;
	int64_t expires_ms; /* now_ms + ROBOTS_TTL_MS or ROBOTS_RETRY_MS */
};

/*
 * Turns the final result of fetching /robots.txt into a policy.
 * `status` is the HTTP status after the caller followed up to
 * ROBOTS_MAX_REDIRECTS redirects, or a negative value for a network error
 * (DNS, connect, timeout, TLS). `body` is read only for 2xx. `now_ms` is the
 * caller's clock (any epoch, milliseconds). On success out->robots is a new
 * object; on error (ROBOTS_ENOMEM) out->robots is NULL.
 */
int robots_policy_from_fetch(int status, const char *body, size_t len, const char *user_agent,
                             int64_t now_ms, struct robots_policy *out);

/* ---- Helpers (exposed for the tool and the conformance tests) ---- */

/*
 * Copies into `out` (cap bytes, NUL-terminated) the path, params and query of
 * `url` without the fragment, as Google's GetPathParamsQuery does: the text
 * after "//host" (or after the first '/' when there is no "//"), "/" if
 * empty, a leading '/' added before a bare "?query". No decoding, no
 * validation. Returns ROBOTS_OK or ROBOTS_ETOOLONG.
 */
int robots_path_from_url(const char *url, size_t len, char *out, size_t cap);

/*
 * Percent-normalizes `in` (len bytes) into `out` (cap bytes, NUL-terminated,
 * *out_len = length): %xx -> %XX, %XX of unreserved characters decoded,
 * octets >= 0x80 encoded as %XX. Rules and paths both go through it.
 * Returns ROBOTS_OK or ROBOTS_ETOOLONG (out needs at most 3 * len + 1).
 */
int robots_path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *out_len);

#endif
