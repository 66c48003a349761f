/*
 * url_rules_internal.h: what the files of the URL rules module share (not
 * for other modules): the rule records, the list, and the regex prefilter.
 *
 *   url_rules_parse.c      a rule's text -> a rule record (patterns
 *                          canonicalized, regexes compiled); wget's flags
 *   url_rules.c            the list: seal (set table, scan order,
 *                          prefilter), decide, counters, names
 *   url_rules_prefilter.c  a literal every match of a regex contains, and
 *                          an Aho-Corasick automaton over those literals
 */
#ifndef FRONTIER_URL_RULES_INTERNAL_H
#define FRONTIER_URL_RULES_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontier/url_rules.h"

/* One string of a rule's pattern (a list has several). */
struct url_rule_item {
	char *s; /* canonical, NUL-terminated */
	uint32_t len;
	uint8_t flags; /* URL_RULE_ITEM_* */
};

enum {
	URL_RULE_ITEM_SUBDOMAINS = 1u << 0, /* host ".x": x and its subdomains */
	URL_RULE_ITEM_GLOB = 1u << 1,       /* file, dir: holds * ? [ or ] */
	URL_RULE_ITEM_ANY_SCHEME = 1u << 2, /* surt written without scheme:// */
};

struct url_rule {
	uint8_t action;  /* enum url_rules_action */
	uint8_t matcher; /* enum url_rules_matcher */
	bool negated;
	int8_t priority;
	uint32_t depth;
	uint32_t line;
	uint32_t source; /* index in url_rules.sources */
	char *text;
	struct url_rule_item *items;
	uint32_t nitems;
	pcre2_code *re;   /* regex only */
	bool jit;         /* re has JIT code */
	uint32_t pf_slot; /* regex with a prefilter literal: its slot; else UINT32_MAX */
};

struct url_rules_pf;

/* Regexes that get a prefilter slot, at most (a decision keeps a bit per
 * slot on its stack); those after run unfiltered. */
#define URL_RULES_PF_SLOTS_MAX 4096u

/* A table slot of the set rules: (group, string) -> lowest rule index. */
struct url_rules_set_entry {
	const char *s; /* NULL: empty slot */
	uint64_t hash;
	uint32_t len;
	uint32_t rule;
	uint8_t group;
};

/* The groups of the set table. */
enum {
	URL_RULES_SET_HOST = 0,   /* host, exactly */
	URL_RULES_SET_SUFFIX = 1, /* host ".x": the host or a suffix after a dot */
	URL_RULES_SET_DOMAIN = 2, /* registrable domain */
	URL_RULES_SET_EXT = 3,    /* extension, lowercase */
	URL_RULES_SET_GROUPS = 4
};

struct url_rules {
	struct url_options opt;
	struct url_rule *rules;
	size_t n, cap;
	char **sources;
	size_t nsources, sources_cap;
	bool sealed;
	bool prefilter;
	/* Sealed: counts, table and scan point into sealed_block. */
	void *sealed_block;
	struct url_rules_set_entry *table; /* NULL when no set rule */
	size_t table_mask;
	unsigned set_groups; /* bit g: group g has entries */
	uint32_t *scan;      /* indexes of the rules not in the table, ascending */
	size_t nscan;
	struct url_rules_pf *pf; /* NULL when no regex has a literal */
	pcre2_match_context *mctx;
	uint64_t *counts; /* 2 per rule (accepted, rejected), then no match */
};

/* url_rules_parse.c: the rule of a line; 1 when it held one, 0 for a
 * blank or comment line, -1 with err set ("SOURCE:LINE: reason"). */
int url_rule_parse(const struct url_rules *r, const char *text, size_t len, const char *source,
                   uint32_t line, struct url_rule *out, char *err, size_t errlen,
                   enum url_rules_err *code);
/* A rule built from its parts (wget's flags): pattern is one value, split
 * into a list for the list matchers. 0 or -1 (err, code set). */
int url_rule_make(const struct url_rules *r, enum url_rules_action action,
                  enum url_rules_matcher matcher, bool negated, const char *pattern,
                  const char *source, struct url_rule *out, char *err, size_t errlen,
                  enum url_rules_err *code);
void url_rule_free(struct url_rule *rule);

/* url_rules_prefilter.c */
/* Literals one of which every match of regex re[len] contains (the
 * longest run of plain characters outside groups and classes, or a group
 * of plain alternatives): 1 with lits[k] (lits_len[k] bytes, copied into
 * buf, cap bytes) and *nlits set; 0 when none can be proved (then the
 * regex always runs). */
int url_rules_pf_literals(const char *re, size_t len, char *buf, size_t cap, const char **lits,
                          size_t *lits_len, size_t max_lits, size_t *nlits);
struct url_rules_pf *url_rules_pf_create(void);
void url_rules_pf_destroy(struct url_rules_pf *pf);
/* Adds literal s[len] for slot (a regex); 0 or -1 (no memory). */
int url_rules_pf_add(struct url_rules_pf *pf, const char *s, size_t len, uint32_t slot);
/* Builds the automaton after the last add; 0 or -1. */
int url_rules_pf_build(struct url_rules_pf *pf);
/* Number of slots (highest added + 1). */
uint32_t url_rules_pf_slots(const struct url_rules_pf *pf);
/* Sets bit slot of bits (url_rules_pf_slots / 64 words, zeroed by the
 * caller) for each slot whose literal occurs in s[len]. */
void url_rules_pf_scan(const struct url_rules_pf *pf, const char *s, size_t len, uint64_t *bits);

#endif
