/*
 * scope.h: scope and crawler-trap rules applied to a URL before it enters the
 * frontier.
 *
 * Rules, checked in this order (the first failing rule gives the reason):
 *   1. the URL must parse as scheme://authority[/path][?query][#frag];
 *   1a. its host must be an IPv6 literal or a name DNS can carry
 *       (url_host_is_dns_name: labels of 1..63 LDH or '_' octets, at most
 *       253 in all): any other never resolves, and would be retried;
 *   1b. its port, when written, must be 1..65535: port 0 is valid URL
 *       syntax but no server can listen on it, so the URL is uncrawlable;
 *   2. length <= max_url_len;
 *   3. depth <= max_depth (0 = unlimited);
 *   4. if any allowed domain or URL prefix is configured, the URL must match
 *      one of them: a domain matches its host exactly or as a dot-suffix
 *      ("web.test" allows "web.test" and "h1.web.test", not "xweb.test");
 *      a prefix matches the URL's first bytes;
 *   5. path segments <= max_path_segments;
 *   6. no non-empty path segment occurring max_segment_repeats or more times
 *      anywhere in the path (e.g. /a/b/a/c/a with the default 3): calendar and
 *      relative-link loops;
 *   7. query parameters ('&'-separated, empty ones skipped) <=
 *      max_query_params: links that append a parameter on every page
 *      (filters, sorts, session and tracking stacks) end there.
 * Each rejection is counted per reason.
 *
 * The scope is immutable after creation except its counters, which are
 * atomic: scope_check may be called from many parse threads at once.
 * Workload: one check per extracted link, so O(URL length + segments^2) with
 * segments capped, no allocation.
 */
#ifndef FRONTIER_SCOPE_H
#define FRONTIER_SCOPE_H

#include <stddef.h>
#include <stdint.h>

enum scope_verdict {
	SCOPE_OK = 0,                /* in scope */
	SCOPE_BAD_URL = 1,           /* no scheme://host */
	SCOPE_TOO_LONG = 2,          /* longer than max_url_len */
	SCOPE_TOO_DEEP = 3,          /* depth > max_depth */
	SCOPE_OFF_DOMAIN = 4,        /* matches no allowed domain nor prefix */
	SCOPE_TOO_MANY_SEGMENTS = 5, /* more than max_path_segments */
	SCOPE_REPEATED_SEGMENT = 6,  /* a segment repeated max_segment_repeats+ times */
	SCOPE_INVALID_HOST = 7,      /* host is no IP literal and no valid DNS name */
	SCOPE_BAD_PORT = 8,          /* port 0 (or not 1..65535) */
	SCOPE_TOO_MANY_PARAMS = 9,   /* more than max_query_params query parameters */
	SCOPE_VERDICT_COUNT = 10
};

enum scope_err {
	SCOPE_ERR_OK = 0,
	SCOPE_ERR_NOMEM = 1,   /* allocation failed */
	SCOPE_ERR_INVALID = 2, /* NULL config/out, empty domain or prefix */
};

struct scope_config {
	const char *const *domains; /* allowed host suffixes (lowercase); may be NULL */
	size_t n_domains;
	const char *const *prefixes; /* allowed URL prefixes; may be NULL */
	size_t n_prefixes;
	uint32_t max_depth;           /* 0 = unlimited; default 0 */
	uint32_t max_url_len;         /* default 2048 */
	uint32_t max_path_segments;   /* default 32 */
	uint32_t max_segment_repeats; /* default 3; 0 disables the rule */
	uint32_t max_query_params;    /* default 10; 0 disables the rule */
};

struct scope;

/* Defaults: no domain or prefix restriction, limits as above. */
void scope_config_default(struct scope_config *c);
/* Copies the config (strings included). On error *out is NULL. */
enum scope_err scope_create(const struct scope_config *c, struct scope **out);
void scope_destroy(struct scope *s); /* NULL is a no-op */

/* Checks a URL (bytes, not NUL-terminated needed) discovered at `depth`;
 * counts and returns the verdict. Thread-safe. */
enum scope_verdict scope_check(struct scope *s, const char *url, size_t len, uint32_t depth);
/* scope_check for an embedded resource (a page requisite): when
 * allow_off_domain, rule 4 does not refuse, and *off_domain tells whether
 * the URL lies off the allowed domains and prefixes (0 when none are
 * configured); every other rule applies. Counted as scope_check is. */
enum scope_verdict scope_check_embed(struct scope *s, const char *url, size_t len, uint32_t depth,
                                     int allow_off_domain, int *off_domain);
/* scope_check for a URL a URL rule accepted (url_rules.h): rule 4 does
 * not refuse (*off_domain tells whether the URL lies off the allowed
 * domains and prefixes), and rule 3 takes max_depth, the rule's depth=N,
 * instead of the scope's (0: the scope's); every other rule applies.
 * Counted as scope_check is. */
enum scope_verdict scope_check_accepted(struct scope *s, const char *url, size_t len,
                                        uint32_t depth, uint32_t max_depth, int *off_domain);
/* Number of URLs that got verdict v so far (SCOPE_OK counts accepted ones). */
uint64_t scope_count(const struct scope *s, enum scope_verdict v);
/* Adds n to the count of verdict v (a resumed crawl carries its counts on). */
void scope_count_add(struct scope *s, enum scope_verdict v, uint64_t n);
/* Short stable name for logs ("ok", "bad-url", "too-long", "too-deep",
 * "off-domain", "too-many-segments", "repeated-segment", "invalid-host",
 * "bad-port"). New verdicts are only ever appended, so saved counts keep
 * their meaning. */
const char *scope_verdict_name(enum scope_verdict v);
const char *scope_strerror(enum scope_err e);

/* The distinct registrable domains (libpsl's built-in public suffix list;
 * the host itself when it has none) of the hosts of n crawl keys, in
 * order, into *out (malloc'd, each string too; *nout of them): the scope
 * of a crawl restricted to its seeds' sites. 0, or -1 (no memory). */
int scope_registrable_domains(char *const *urls, size_t n, char ***out, size_t *nout);

#endif
