/*
 * robots_internal.h: what the robots.txt files share (robots.c: the parser,
 * the fetch semantics and the encoding; robots_match.c: the compiled rules
 * and the check). Only those files include it; the contract is robots.h.
 *
 * A compiled file is its rules in priority order (longest pattern first,
 * Allow first at equal length; no two alike) and, from
 * ROBOTS_INDEX_MIN_RULES rules on, an index of them by literal prefix (see
 * robots_match.c). Each rule is one of three kinds, by what a check must
 * do once its literal prefix (the bytes before its first '*', or before
 * its final '$') is a prefix of the path:
 *   - PREFIX: nothing ("/a", "/a*", "/a*$"): it matches;
 *   - EXACT: compare lengths ("/a$"): it matches the path "/a" alone;
 *   - WILD: search the path for the pieces after a '*' ("/a*b", "/x*b$"):
 *     the one kind whose check costs the length of the path, and so the
 *     kind robots_wildcard_cap_set bounds.
 */
#ifndef POLITENESS_ROBOTS_INTERNAL_H
#define POLITENESS_ROBOTS_INTERNAL_H

#include "politeness/robots.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum robots_rule_kind { ROBOTS_RULE_PREFIX = 0, ROBOTS_RULE_EXACT, ROBOTS_RULE_WILD };

struct robots_rule {
	char *pat;    /* normalized pattern, NUL-terminated */
	uint32_t len; /* its length: the rule's priority */
	uint32_t lit; /* its literal prefix's length */
	bool allow;
	uint8_t kind; /* enum robots_rule_kind */
};

struct robots_index;

struct robots {
	struct robots_rule *rules; /* priority order: longest first, allow first on ties */
	size_t nrules;
	bool deny_all;
	double crawl_delay; /* < 0: none */
	char **sitemaps;
	size_t nsitemaps;
	uint32_t wild_cap;          /* most WILD rules a check may meet; 0: no cap */
	uint32_t wild_max;          /* most WILD rules one path can meet */
	struct robots_index *index; /* NULL below ROBOTS_INDEX_MIN_RULES rules */
};

/* Sets each rule's kind and literal prefix, wild_max and the index, from
 * r->rules in priority order. ROBOTS_OK or ROBOTS_ENOMEM (r is then still
 * whole, without an index: destroy it). */
int robots__compile(struct robots *r);

/* Frees what robots__compile built; NULL is a no-op. */
void robots__index_free(struct robots_index *ix);

#endif
