/*
 * url_rules.h: the user's URL rules, an ordered list of accept and reject
 * rules where the first rule that matches a URL decides it.
 *
 * A rule is `ACTION [!]MATCHER PATTERN [depth=N] [priority=N]`, one a line
 * in a rules file ('#' starts a comment at a line's start or after a space):
 *   ACTION   accept or reject.
 *   MATCHER  what the pattern is matched against, in the crawl key (the
 *            normalized URL the sieve is given, url.h); a '!' before it
 *            makes the rule apply to the URLs the matcher does NOT match:
 *     host    a host name, exactly; with a leading dot (".example.org")
 *             the host and its subdomains. A comma list is any of them.
 *     domain  a registrable domain (libpsl's list): every host whose
 *             registrable domain it is. A comma list is any of them.
 *     prefix  an http(s) URL: the keys that start with it.
 *     surt    a SURT prefix (below): the keys whose SURT form starts with it.
 *     path    a path starting with '/': the keys whose path and query start
 *             with it.
 *     regex   a PCRE2 regular expression searched anywhere in the key (use
 *             ^ and $ to anchor it; case-sensitive unless it says (?i)).
 *     ext     a comma list of file extensions, any case: what follows the
 *             last '.' of the path's last segment.
 *     file    wget's -A/-R list: a file name (the path's last segment,
 *             percent-decoded) ending with an item, or matching it as a
 *             shell glob when it holds one of * ? [ ]. As in wget, a file
 *             rule, negated or not, never applies to an empty name ("/",
 *             "/docs/") or a name ending in .htm, .html or ?html (any case):
 *             those pages lead to the files, so wget fetches them whatever
 *             -A/-R say.
 *     dir     wget's -I/-X list: the URL's directory (the path before its
 *             last '/', percent-decoded) is an item or below it, or matches
 *             it as a glob whose '*' does not cross '/'.
 *   depth=N     accept rules only: the URLs the rule accepts may lie at most
 *               N links from a seed (instead of the crawl's max_depth); a
 *               deeper URL the rule matches is rejected (`too_deep`).
 *   priority=N  accept rules only: -3..3 (default 0), higher fetched first;
 *               only carried in the decision.
 * Patterns are canonicalized as crawl keys are (url.h): host, domain,
 * prefix, surt and path patterns get their scheme and host lowercased,
 * IDNA, default ports dropped, percent-encoding normalized, and the key
 * options that act on a URL's front (strip_www, lowercase_path,
 * https_to_http); options that act on its end (strip_index, sort_query...)
 * are not applied to a prefix. No pattern holds white space (write \s or
 * %20).
 *
 * SURT form (Heritrix's): "scheme://(" + the host's labels in reverse, each
 * followed by ',' + [':' port] + ['@' userinfo] + ')' + path and query:
 * http://www.example.org:8080/a?b -> http://(org,example,www,:8080)/a?b;
 * an IP address is not reversed: http://(127.0.0.1,)/. A surt pattern is
 * written in that form ("http://(org,example," is example.org, its
 * subdomains and any port), or without "scheme://" ("(org,example,": any
 * scheme), or as a URL, which is converted: "http://example.org" (no path)
 * becomes "http://(org,example,", "http://example.org/a/" becomes
 * "http://(org,example,)/a/".
 *
 * A decision: the first rule that matches, with its action, depth and
 * priority; or URL_RULES_NO_MATCH when none does (the crawl then applies its
 * domain scope as without rules). What the crawl does with an accept (the
 * URL is taken even off the crawl's domains; the trap limits and robots.txt
 * still hold) is the caller's.
 *
 * Data structure. The rules in order (kind, action, options, pattern, the
 * text and where it came from), then, once sealed: one hash table from
 * (matcher, string) to the lowest rule index for the rules that are a set
 * of strings (host, host suffix, domain, ext, not negated), probed with the
 * URL's host and its parent suffixes and its extension; and the ordered
 * list of every other rule, scanned in order only as far as the best index
 * the table gave. Regexes are compiled with PCRE2's JIT; a literal that
 * every match of a regex must contain is taken from most regexes, and one
 * Aho-Corasick pass over the URL tells which of those literals it holds,
 * so a regex whose literal is absent is not run.
 *
 * Invariants: url_rules_decide gives the decision of the first rule, in
 * order, whose matcher says yes (a reference scan of every rule gives the
 * same: the tests check it); rules are added only before url_rules_seal
 * and decided only after; a sealed list is never changed, except its
 * counters.
 *
 * Memory: per rule 56 bytes, its text (as written) and its pattern
 * (canonical), 16 bytes an item of a list; the set table 64 bytes an item
 * (32-byte slots, at most half full); a regex PCRE2's compiled code and JIT
 * code (about 0.2 and 0.9 KiB for the regexes of tests/bench/rules.sh),
 * the prefilter 4 bytes x states x byte classes. Per decision: nothing
 * allocated with the JIT (PCRE2's match data lives in the frame); about
 * 18 KiB of stack, for keys up to URL_RULES_KEY_MAX.
 *
 * Threads: building and sealing by one thread; url_rules_decide from any
 * number of threads at once (the list is read-only then; PCRE2's match data
 * lives on the caller's stack; the per-rule counters are relaxed atomics).
 *
 * Workload: one decision per discovered URL in the parse threads, millions
 * a minute; a list of a few to thousands of rules (host lists), of which a
 * hundred regexes.
 */
#ifndef FRONTIER_URL_RULES_H
#define FRONTIER_URL_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontier/url.h"

#define URL_RULES_PRIORITY_MIN (-3)
#define URL_RULES_PRIORITY_MAX 3
#define URL_RULES_DEPTH_MAX 1000000u
/* Longest key the surt, file and dir matchers judge (a longer one matches
 * none of them): the crawl's max_url_len never exceeds it. */
#define URL_RULES_KEY_MAX 8192u
/* Most rules in one list, and the largest rules file read. */
#define URL_RULES_MAX 1000000u
#define URL_RULES_FILE_MAX (64u * 1024 * 1024)
/* Longest pattern, in bytes (a regex compiled). */
#define URL_RULES_PATTERN_MAX 8192u

enum url_rules_err {
	URL_RULES_OK = 0,
	URL_RULES_ERR_NOMEM = 1,  /* allocation failed */
	URL_RULES_ERR_SYNTAX = 2, /* a malformed rule or value (the message names it) */
	URL_RULES_ERR_IO = 3,     /* the rules file could not be read */
	URL_RULES_ERR_STATE = 4,  /* added after sealing, or sealed twice */
	URL_RULES_ERR_LIMIT = 5,  /* more than URL_RULES_MAX rules, or a file too large */
};

enum url_rules_action {
	URL_RULES_NO_MATCH = 0, /* no rule matched: the crawl's domain scope decides */
	URL_RULES_ACCEPT = 1,
	URL_RULES_REJECT = 2,
};

enum url_rules_matcher {
	URL_RULES_HOST = 0,
	URL_RULES_DOMAIN,
	URL_RULES_PREFIX,
	URL_RULES_SURT,
	URL_RULES_PATH,
	URL_RULES_REGEX,
	URL_RULES_EXT,
	URL_RULES_FILE,
	URL_RULES_DIR,
	URL_RULES_MATCHER_COUNT
};

/* wget's flags, each made into one rule (url_rules_add_wget). */
enum url_rules_wget {
	URL_RULES_WGET_ACCEPT = 0,   /* -A LIST: reject !file LIST */
	URL_RULES_WGET_REJECT,       /* -R LIST: reject file LIST */
	URL_RULES_WGET_ACCEPT_REGEX, /* --accept-regex RE: reject !regex RE */
	URL_RULES_WGET_REJECT_REGEX, /* --reject-regex RE: reject regex RE */
	URL_RULES_WGET_INCLUDE_DIRS, /* -I LIST: reject !dir LIST */
	URL_RULES_WGET_EXCLUDE_DIRS, /* -X LIST: reject dir LIST */
	URL_RULES_WGET_COUNT
};

/* What a crawl's configuration gives ([crawl] rules, accept, ...); NULL or
 * "" is none. A regex may be several joined as (?:A)|(?:B). */
struct url_rules_config {
	const char *file;
	const char *wget[URL_RULES_WGET_COUNT]; /* indexed by enum url_rules_wget */
};

struct url_rules_decision {
	enum url_rules_action action;
	int32_t rule;      /* index of the deciding rule (url_rules_rule), -1 for none */
	uint32_t depth;    /* the rule's depth=N; 0: it has none (max_depth applies) */
	int priority;      /* the rule's priority, 0 without one */
	bool too_deep;     /* an accept rule matched a URL deeper than its depth=N:
	                      the action is URL_RULES_REJECT */
	bool regex_failed; /* a regex hit PCRE2's match limit and counted as no match */
};

/* One rule as it was given, for tools and stats. Strings borrowed from the
 * list, valid until it is destroyed. */
struct url_rule_info {
	enum url_rules_action action;
	enum url_rules_matcher matcher;
	bool negated;
	uint32_t depth; /* 0: none */
	int priority;
	const char *text;   /* the rule as written, comment and spaces trimmed */
	const char *source; /* the file's path, or the wget flag ("--accept") */
	uint32_t line;      /* line in the file; 0 for a flag */
};

struct url_rules;

/* An empty list whose patterns are canonicalized with the crawl keys'
 * options opt (copied; NULL: url_options_init's). NULL when out of memory. */
struct url_rules *url_rules_create(const struct url_options *opt);
/* An empty list with r's options; NULL when out of memory. */
struct url_rules *url_rules_create_like(const struct url_rules *r);
void url_rules_destroy(struct url_rules *r); /* NULL is a no-op */

/* Appends the rule of one line (len bytes, no NUL needed; a blank or
 * comment line adds none). source and line name it in messages and
 * url_rules_rule. On error nothing is added and err gets
 * "SOURCE:LINE: reason". */
enum url_rules_err url_rules_add_line(struct url_rules *r, const char *text, size_t len,
                                      const char *source, uint32_t line, char *err, size_t errlen);
/* Appends every rule of a file (path "-": stdin); stops at the first bad
 * line (the rules before it stay). */
enum url_rules_err url_rules_add_file(struct url_rules *r, const char *path, char *err,
                                      size_t errlen);
/* Appends the rule wget's flag means (see enum url_rules_wget); an empty
 * value adds none. */
enum url_rules_err url_rules_add_wget(struct url_rules *r, enum url_rules_wget flag,
                                      const char *value, char *err, size_t errlen);
/* A wget flag given again, as wget takes it: lists add up ("a" then "b":
 * "a,b"), regexes are either ("(?:A)|(?:B)"), an empty value clears.
 * Returns the new value (malloc'd; the caller frees it), NULL when out of
 * memory. old may be NULL. */
char *url_rules_wget_join(enum url_rules_wget flag, const char *old, const char *add);
/* Appends a copy of every rule of src (sealed or not), each with its
 * text, source and line: a list that grows at its top is rebuilt so
 * (url_rules_live.h). */
enum url_rules_err url_rules_add_copy(struct url_rules *r, const struct url_rules *src, char *err,
                                      size_t errlen);
/* Builds the lookup structures; after it, decisions and no more rules. */
enum url_rules_err url_rules_seal(struct url_rules *r, char *err, size_t errlen);
/* The end of building a list: when e (how the building went) is
 * URL_RULES_OK, seals r and hands it to *out; otherwise, or when the seal
 * fails, destroys r. Returns how it ended. */
enum url_rules_err url_rules_seal_into(struct url_rules *r, enum url_rules_err e,
                                       struct url_rules **out, char *err, size_t errlen);

/* A sealed list from a configuration: wget's flags first (in enum order
 * reversed: -X, -I, --reject-regex, --accept-regex, -R, -A), then the
 * file's rules, so the flags filter what the file accepts too. *out is NULL
 * on error. */
enum url_rules_err url_rules_from_config(const struct url_rules_config *c,
                                         const struct url_options *opt, struct url_rules **out,
                                         char *err, size_t errlen);

/* Decides the crawl key key[len] found `depth` links from a seed, into
 * *out, and counts it for its rule. The list must be sealed. Thread-safe. */
void url_rules_decide(struct url_rules *r, const char *key, size_t len, uint32_t depth,
                      struct url_rules_decision *out);

/* The decision of the first `first` rules alone (a URL queued before they
 * were added on top, url_rules_live.h): URL_RULES_NO_MATCH, and nothing
 * counted, when none of them matches. Thread-safe. */
void url_rules_decide_first(struct url_rules *r, size_t first, const char *key, size_t len,
                            uint32_t depth, struct url_rules_decision *out);

/* Number of rules. */
size_t url_rules_size(const struct url_rules *r);
/* Rule i; -1 when i is out of range. */
int url_rules_rule(const struct url_rules *r, size_t i, struct url_rule_info *out);
/* The URLs rule i accepted and rejected so far (too deep ones among the
 * rejected), and those no rule matched (i = url_rules_size(r)). */
void url_rules_counts(const struct url_rules *r, size_t i, uint64_t *accepted, uint64_t *rejected);
/* Adds to rule i's counts (a resumed crawl carries its counts on). */
void url_rules_counts_add(struct url_rules *r, size_t i, uint64_t accepted, uint64_t rejected);

/* Names: "accept", "reject", "no-match"; "host", "domain"... */
const char *url_rules_action_name(enum url_rules_action a);
const char *url_rules_matcher_name(enum url_rules_matcher m);
const char *url_rules_strerror(enum url_rules_err e);

/* The SURT form of a crawl key (above) into out[cap], NUL-terminated;
 * its length, or 0 when the key does not split or cap is too small
 * (cap >= len + 8 always suffices). */
size_t url_rules_surt(const char *key, size_t len, char *out, size_t cap);

/* The prefilter's switch, for tests and benchmarks that compare a run with
 * and without it: when off, every regex is run. On by default; set before
 * url_rules_seal. */
void url_rules_set_prefilter(struct url_rules *r, bool on);

#endif
