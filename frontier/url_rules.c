/*
 * url_rules.c: the list of URL rules (url_rules.h): building it, sealing it
 * into a set table and a scan order, and deciding URLs.
 *
 * A decision cuts the key once into its parts (host, path, query, last
 * segment, extension) and computes the rest only when a rule asks: the
 * SURT form, the percent-decoded directory and file name, the registrable
 * domain, the prefilter's bits. The set table gives the lowest index among
 * the set rules that match; the scan list is then walked in order up to
 * that index, so the first matching rule wins whatever its kind.
 */
#include "frontier/url_rules_internal.h"
#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/base/fileio.h"

#include <errno.h>
#include <fnmatch.h>
#include <libpsl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

/* PCRE2 steps one regex may take on one URL before it counts as not
 * matching (catastrophic backtracking stays bounded). */
#define MATCH_LIMIT 100000u
#define HOST_MAX 256u

struct url_rules *url_rules_create(const struct url_options *opt)
{
	struct url_rules *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	if (opt)
		r->opt = *opt;
	else
		url_options_init(&r->opt);
	r->prefilter = true;
	return r;
}

struct url_rules *url_rules_create_like(const struct url_rules *r)
{
	return url_rules_create(&r->opt);
}

void url_rules_destroy(struct url_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		url_rule_free(&r->rules[i]);
	free(r->rules);
	ARRAY_FREE_EACH(r->sources, r->nsources);
	free(r->sealed_block);
	url_rules_pf_destroy(r->pf);
	pcre2_match_context_free(r->mctx);
	free(r);
}

void url_rules_set_prefilter(struct url_rules *r, bool on)
{
	r->prefilter = on;
}

/* The index of source name s in r->sources (added when new); -1 when out
 * of memory. */
static long source_index(struct url_rules *r, const char *s)
{
	if (r->nsources > 0 && strcmp(r->sources[r->nsources - 1], s) == 0)
		return (long)r->nsources - 1;
	if (array_push_strndup(&r->sources, &r->nsources, &r->sources_cap, s, strlen(s), 4) != 0)
		return -1;
	return (long)r->nsources - 1;
}

/* Takes rule (its memory) into the list; on error frees it. */
static enum url_rules_err append(struct url_rules *r, struct url_rule *rule, const char *source,
                                 char *err, size_t errlen)
{
	long src = source_index(r, source);
	struct url_rule *v = NULL;
	if (src >= 0 && r->n < URL_RULES_MAX)
		v = array_grow(r->rules, &r->cap, r->n, sizeof *v, 16);
	if (!v) {
		url_rule_free(rule);
		if (r->n >= URL_RULES_MAX) {
			snprintf(err, errlen, "%s: more than %u rules", source, URL_RULES_MAX);
			return URL_RULES_ERR_LIMIT;
		}
		snprintf(err, errlen, "%s: out of memory", source);
		return URL_RULES_ERR_NOMEM;
	}
	r->rules = v;
	rule->source = (uint32_t)src;
	r->rules[r->n++] = *rule;
	return URL_RULES_OK;
}

static enum url_rules_err refuse_sealed(char *err, size_t errlen)
{
	snprintf(err, errlen, "rules added after the list was sealed");
	return URL_RULES_ERR_STATE;
}

enum url_rules_err url_rules_add_line(struct url_rules *r, const char *text, size_t len,
                                      const char *source, uint32_t line, char *err, size_t errlen)
{
	struct url_rule rule;
	enum url_rules_err code = URL_RULES_OK;
	if (r->sealed)
		return refuse_sealed(err, errlen);
	int k = url_rule_parse(r, text, len, source, line, &rule, err, errlen, &code);
	if (k <= 0)
		return k == 0 ? URL_RULES_OK : code;
	return append(r, &rule, source, err, errlen);
}

enum url_rules_err url_rules_add_file(struct url_rules *r, const char *path, char *err,
                                      size_t errlen)
{
	size_t len, at = 0;
	uint32_t line = 0;
	enum url_rules_err e = URL_RULES_OK;
	if (r->sealed)
		return refuse_sealed(err, errlen);
	char *text = fileio_read_path(path, URL_RULES_FILE_MAX + 1, &len);
	if (!text) {
		snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
		return errno == ENOMEM ? URL_RULES_ERR_NOMEM : URL_RULES_ERR_IO;
	}
	if (len > URL_RULES_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %u MiB", path, URL_RULES_FILE_MAX >> 20);
		e = URL_RULES_ERR_LIMIT;
	}
	while (e == URL_RULES_OK && at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len;
		e = url_rules_add_line(r, text + at, end - at, path, ++line, err, errlen);
		at = end + 1;
	}
	free(text);
	return e;
}

static const struct wget_flag {
	const char *name;
	enum url_rules_matcher matcher;
	bool negated;
} wget_flags[URL_RULES_WGET_COUNT] = {
	[URL_RULES_WGET_ACCEPT] = { "--accept", URL_RULES_FILE, true },
	[URL_RULES_WGET_REJECT] = { "--reject", URL_RULES_FILE, false },
	[URL_RULES_WGET_ACCEPT_REGEX] = { "--accept-regex", URL_RULES_REGEX, true },
	[URL_RULES_WGET_REJECT_REGEX] = { "--reject-regex", URL_RULES_REGEX, false },
	[URL_RULES_WGET_INCLUDE_DIRS] = { "--include-directories", URL_RULES_DIR, true },
	[URL_RULES_WGET_EXCLUDE_DIRS] = { "--exclude-directories", URL_RULES_DIR, false },
};

enum url_rules_err url_rules_add_wget(struct url_rules *r, enum url_rules_wget flag,
                                      const char *value, char *err, size_t errlen)
{
	struct url_rule rule;
	enum url_rules_err code = URL_RULES_OK;
	if (r->sealed)
		return refuse_sealed(err, errlen);
	if ((unsigned)flag >= URL_RULES_WGET_COUNT) {
		snprintf(err, errlen, "no such wget flag");
		return URL_RULES_ERR_SYNTAX;
	}
	if (!value || !value[0])
		return URL_RULES_OK;
	const struct wget_flag *w = &wget_flags[flag];
	if (url_rule_make(r, URL_RULES_REJECT, w->matcher, w->negated, value, w->name, &rule, err,
	                  errlen, &code) < 0)
		return code;
	return append(r, &rule, w->name, err, errlen);
}

char *url_rules_wget_join(enum url_rules_wget flag, const char *old, const char *add)
{
	bool regex = flag == URL_RULES_WGET_ACCEPT_REGEX || flag == URL_RULES_WGET_REJECT_REGEX;
	size_t ol = old ? strlen(old) : 0, al = strlen(add);
	char *v = malloc(ol + al + 16);
	if (!v)
		return NULL;
	if (ol == 0 || al == 0)
		memcpy(v, add, al + 1);
	else if (regex)
		snprintf(v, ol + al + 16, "(?:%s)|(?:%s)", old, add);
	else
		snprintf(v, ol + al + 16, "%s,%s", old, add);
	return v;
}

/* A deep copy of rule src into *dst (its regex compiled code copied and
 * JIT-compiled again); 0 or -1 (no memory). */
static int rule_copy(const struct url_rule *src, struct url_rule *dst)
{
	*dst = *src;
	dst->items = NULL;
	dst->nitems = 0;
	dst->text = strdup(src->text);
	dst->re = NULL;
	dst->pf_slot = UINT32_MAX;
	if (!dst->text)
		goto bad;
	if (src->nitems && !(dst->items = calloc(src->nitems, sizeof *dst->items)))
		goto bad;
	for (uint32_t i = 0; i < src->nitems; i++) {
		dst->items[i] = src->items[i];
		if (!(dst->items[i].s = strdup(src->items[i].s)))
			goto bad;
		dst->nitems++;
	}
	if (src->re) {
		if (!(dst->re = pcre2_code_copy(src->re)))
			goto bad;
		dst->jit = pcre2_jit_compile(dst->re, PCRE2_JIT_COMPLETE) == 0;
	}
	return 0;
bad:
	url_rule_free(dst);
	return -1;
}

enum url_rules_err url_rules_add_copy(struct url_rules *r, const struct url_rules *src, char *err,
                                      size_t errlen)
{
	if (r->sealed)
		return refuse_sealed(err, errlen);
	for (size_t i = 0; i < src->n; i++) {
		struct url_rule rule;
		if (rule_copy(&src->rules[i], &rule) < 0) {
			snprintf(err, errlen, "URL rules: out of memory");
			return URL_RULES_ERR_NOMEM;
		}
		enum url_rules_err e =
		        append(r, &rule, src->sources[src->rules[i].source], err, errlen);
		if (e != URL_RULES_OK)
			return e;
	}
	return URL_RULES_OK;
}

/* ---- Sealing ---- */

static uint64_t set_hash(unsigned group, const char *s, size_t len)
{
	return XXH3_64bits_withSeed(s, len, group + 1);
}

/* The slot of (group, s) in the table: its entry, or the empty slot where
 * it would go. */
static const struct url_rules_set_entry *set_find(const struct url_rules *r, unsigned group,
                                                  const char *s, size_t len, uint64_t h)
{
	size_t i = h & r->table_mask;
	for (;;) {
		const struct url_rules_set_entry *e = &r->table[i];
		if (!e->s || (e->hash == h && e->group == group && e->len == len &&
		              memcmp(e->s, s, len) == 0))
			return e;
		i = (i + 1) & r->table_mask;
	}
}

static unsigned set_group(const struct url_rule *rule, const struct url_rule_item *it)
{
	switch (rule->matcher) {
	case URL_RULES_HOST:
		return it->flags & URL_RULE_ITEM_SUBDOMAINS ? URL_RULES_SET_SUFFIX
		                                            : URL_RULES_SET_HOST;
	case URL_RULES_DOMAIN: return URL_RULES_SET_DOMAIN;
	default: return URL_RULES_SET_EXT;
	}
}

static bool in_set_table(const struct url_rule *rule)
{
	return !rule->negated &&
	       (rule->matcher == URL_RULES_HOST || rule->matcher == URL_RULES_DOMAIN ||
	        rule->matcher == URL_RULES_EXT);
}

/* The counts (zero), the set table (rules in order, so a string keeps its
 * first rule) and the scan list of every other rule: one block. */
static int build_set_and_scan(struct url_rules *r)
{
	size_t items = 0, cap = 16;
	for (size_t i = 0; i < r->n; i++)
		if (in_set_table(&r->rules[i]))
			items += r->rules[i].nitems;
	while (cap < 2 * items)
		cap *= 2;
	size_t ncounts = 2 * (r->n + 1), ntable = items > 0 ? cap : 0;
	size_t table_at = ncounts * sizeof *r->counts;
	size_t scan_at = table_at + ntable * sizeof *r->table;
	char *block = calloc(1, scan_at + (r->n ? r->n : 1) * sizeof *r->scan);
	if (!block)
		return -1;
	r->sealed_block = block;
	r->counts = (uint64_t *)block;
	r->table = ntable ? (struct url_rules_set_entry *)(block + table_at) : NULL;
	r->scan = (uint32_t *)(block + scan_at);
	r->table_mask = cap - 1;
	for (size_t i = 0; i < r->n; i++) {
		struct url_rule *rule = &r->rules[i];
		if (!in_set_table(rule)) {
			r->scan[r->nscan++] = (uint32_t)i;
			continue;
		}
		for (uint32_t k = 0; k < rule->nitems; k++) {
			const struct url_rule_item *it = &rule->items[k];
			unsigned g = set_group(rule, it);
			uint64_t h = set_hash(g, it->s, it->len);
			struct url_rules_set_entry *e =
			        (struct url_rules_set_entry *)set_find(r, g, it->s, it->len, h);
			if (!e->s)
				*e = (struct url_rules_set_entry){ it->s, h, it->len, (uint32_t)i,
					                           (uint8_t)g };
			r->set_groups |= 1u << g;
		}
	}
	return 0;
}

/* Gives each regex of the scan list whose literal can be proved a slot in
 * the prefilter. */
static int build_prefilter(struct url_rules *r)
{
	uint32_t slot = 0;
	for (size_t k = 0; k < r->nscan && slot < URL_RULES_PF_SLOTS_MAX; k++) {
		struct url_rule *rule = &r->rules[r->scan[k]];
		char buf[1024];
		const char *lits[16];
		size_t lens[16], n;
		if (rule->matcher != URL_RULES_REGEX ||
		    !url_rules_pf_literals(rule->items[0].s, rule->items[0].len, buf, sizeof buf,
		                           lits, lens, 16, &n))
			continue;
		if (!r->pf && !(r->pf = url_rules_pf_create()))
			return -1;
		for (size_t i = 0; i < n; i++)
			if (url_rules_pf_add(r->pf, lits[i], lens[i], slot) < 0)
				return -1;
		rule->pf_slot = slot++;
	}
	return r->pf ? url_rules_pf_build(r->pf) : 0;
}

enum url_rules_err url_rules_seal(struct url_rules *r, char *err, size_t errlen)
{
	if (r->sealed)
		return refuse_sealed(err, errlen);
	r->mctx = pcre2_match_context_create(NULL);
	if (!r->mctx || pcre2_set_match_limit(r->mctx, MATCH_LIMIT) != 0 ||
	    build_set_and_scan(r) < 0 || build_prefilter(r) < 0) {
		snprintf(err, errlen, "URL rules: out of memory");
		return URL_RULES_ERR_NOMEM;
	}
	r->sealed = true;
	return URL_RULES_OK;
}

enum url_rules_err url_rules_seal_into(struct url_rules *r, enum url_rules_err e,
                                       struct url_rules **out, char *err, size_t errlen)
{
	if (e == URL_RULES_OK)
		e = url_rules_seal(r, err, errlen);
	if (e != URL_RULES_OK) {
		url_rules_destroy(r);
		return e;
	}
	*out = r;
	return URL_RULES_OK;
}

enum url_rules_err url_rules_from_config(const struct url_rules_config *c,
                                         const struct url_options *opt, struct url_rules **out,
                                         char *err, size_t errlen)
{
	static const enum url_rules_wget order[URL_RULES_WGET_COUNT] = {
		URL_RULES_WGET_EXCLUDE_DIRS, URL_RULES_WGET_INCLUDE_DIRS,
		URL_RULES_WGET_REJECT_REGEX, URL_RULES_WGET_ACCEPT_REGEX,
		URL_RULES_WGET_REJECT,       URL_RULES_WGET_ACCEPT,
	};
	enum url_rules_err e = URL_RULES_OK;
	struct url_rules *r = url_rules_create(opt);
	*out = NULL;
	if (!r) {
		snprintf(err, errlen, "URL rules: out of memory");
		return URL_RULES_ERR_NOMEM;
	}
	for (size_t i = 0; e == URL_RULES_OK && i < URL_RULES_WGET_COUNT; i++)
		e = url_rules_add_wget(r, order[i], c->wget[order[i]], err, errlen);
	if (e == URL_RULES_OK && c->file && c->file[0])
		e = url_rules_add_file(r, c->file, err, errlen);
	return url_rules_seal_into(r, e, out, err, errlen);
}

/* ---- Deciding ---- */

/* A URL cut into the parts the matchers read; the lazy ones are filled
 * when a rule first needs them. */
struct view {
	const char *key;
	size_t len;
	size_t path, host, hlen; /* path start; host span */
	size_t query;            /* the '?' or the key's end: the path ends there */
	size_t name;             /* the path's last segment */
	size_t ext, extlen;      /* after the name's last '.'; extlen 0: none */
	int reg;                 /* registrable domain: 0 not yet, 1 in regbuf, -1 none */
	const char *reg_domain;
	bool surt_done, dec_done, pf_done, regex_failed;
	size_t surt_len;
	const char *dec_dir, *dec_name; /* NUL-terminated in dec; NULL: key too long */
	pcre2_match_data *md;
	pcre2_general_context *gctx;
	char hostbuf[HOST_MAX];
	char surt[URL_RULES_KEY_MAX + 16];
	char dec[URL_RULES_KEY_MAX + 2];
	uint64_t bits[URL_RULES_PF_SLOTS_MAX / 64];
	_Alignas(16) char arena[1024]; /* PCRE2's match data, no malloc */
	size_t arena_used;
};

static void view_init(struct view *v, const char *key, size_t len)
{
	size_t alen, hoff, hlen;
	v->key = key;
	v->len = len;
	v->reg = 0;
	v->surt_done = v->dec_done = v->pf_done = v->regex_failed = false;
	v->md = NULL;
	v->gctx = NULL;
	v->arena_used = 0;
	if (url_key_split(key, len, &alen, &hoff, &hlen) < 0) {
		alen = len;
		hoff = hlen = 0;
	}
	v->path = alen;
	v->host = hoff;
	v->hlen = hlen;
	const char *q = memchr(key + alen, '?', len - alen);
	v->query = q ? (size_t)(q - key) : len;
	v->name = v->query;
	while (v->name > alen && key[v->name - 1] != '/')
		v->name--;
	v->ext = v->query;
	while (v->ext > v->name && key[v->ext - 1] != '.')
		v->ext--;
	v->extlen = v->ext > v->name ? v->query - v->ext : 0;
}

/* The registrable domain of the URL's host (libpsl), or NULL. */
static const char *view_reg_domain(struct view *v)
{
	if (v->reg == 0) {
		const psl_ctx_t *psl = psl_builtin();
		v->reg = -1;
		if (psl && v->hlen > 0 && v->hlen < HOST_MAX && v->key[v->host] != '[') {
			memcpy(v->hostbuf, v->key + v->host, v->hlen);
			v->hostbuf[v->hlen] = '\0';
			v->reg_domain = psl_registrable_domain(psl, v->hostbuf);
			v->reg = v->reg_domain ? 1 : -1;
		}
	}
	return v->reg > 0 ? v->reg_domain : NULL;
}

/* The lowest rule index the set table gives for v, or limit. */
static uint32_t set_lookup(const struct url_rules *r, struct view *v, uint32_t limit)
{
	const char *host = v->key + v->host;
	uint32_t best = limit;
	if (r->set_groups & (1u << URL_RULES_SET_HOST)) {
		const struct url_rules_set_entry *e =
		        set_find(r, URL_RULES_SET_HOST, host, v->hlen,
		                 set_hash(URL_RULES_SET_HOST, host, v->hlen));
		if (e->s && e->rule < best)
			best = e->rule;
	}
	unsigned suffixes =
	        r->set_groups & (1u << URL_RULES_SET_SUFFIX | 1u << URL_RULES_SET_DOMAIN);
	for (size_t at = 0; suffixes && at < v->hlen;) {
		for (unsigned g = URL_RULES_SET_SUFFIX; g <= URL_RULES_SET_DOMAIN; g++) {
			if (!(suffixes & (1u << g)))
				continue;
			const struct url_rules_set_entry *e =
			        set_find(r, g, host + at, v->hlen - at,
			                 set_hash(g, host + at, v->hlen - at));
			if (!e->s || e->rule >= best)
				continue;
			const char *reg = g == URL_RULES_SET_DOMAIN ? view_reg_domain(v) : NULL;
			if (g == URL_RULES_SET_SUFFIX ||
			    (reg && strlen(reg) == v->hlen - at &&
			     memcmp(reg, host + at, v->hlen - at) == 0))
				best = e->rule;
		}
		const char *dot = memchr(host + at, '.', v->hlen - at);
		at = dot ? (size_t)(dot - host) + 1 : v->hlen;
	}
	if ((r->set_groups & (1u << URL_RULES_SET_EXT)) && v->extlen > 0 && v->extlen < 256) {
		char ext[256];
		for (size_t i = 0; i < v->extlen; i++)
			ext[i] = (char)ascii_to_lower((unsigned char)v->key[v->ext + i]);
		const struct url_rules_set_entry *e =
		        set_find(r, URL_RULES_SET_EXT, ext, v->extlen,
		                 set_hash(URL_RULES_SET_EXT, ext, v->extlen));
		if (e->s && e->rule < best)
			best = e->rule;
	}
	return best;
}

static bool starts_with(const char *s, size_t n, const struct url_rule_item *it)
{
	return n >= it->len && memcmp(s, it->s, it->len) == 0;
}

static bool host_matches(const struct view *v, const struct url_rule_item *it)
{
	const char *h = v->key + v->host;
	if (v->hlen == it->len)
		return memcmp(h, it->s, it->len) == 0;
	return (it->flags & URL_RULE_ITEM_SUBDOMAINS) && v->hlen > it->len &&
	       h[v->hlen - it->len - 1] == '.' &&
	       memcmp(h + v->hlen - it->len, it->s, it->len) == 0;
}

static bool surt_matches(struct view *v, const struct url_rule_item *it)
{
	if (!v->surt_done) {
		v->surt_done = true;
		v->surt_len = v->len <= URL_RULES_KEY_MAX
		                      ? url_rules_surt(v->key, v->len, v->surt, sizeof v->surt)
		                      : 0;
	}
	const char *s = v->surt;
	size_t n = v->surt_len;
	if (n == 0)
		return false;
	if (it->flags & URL_RULE_ITEM_ANY_SCHEME) {
		const char *sep = memmem(s, n, "://", 3);
		if (!sep)
			return false;
		s = sep + 3;
		n -= (size_t)(s - v->surt);
	}
	return starts_with(s, n, it);
}

/* Percent-decodes src[n] into dst, NUL-terminated; returns dst. */
static const char *decode(const char *src, size_t n, char *dst)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (src[i] == '%' && i + 2 < n &&
		    (hi = ascii_hex_value((unsigned char)src[i + 1])) >= 0 &&
		    (lo = ascii_hex_value((unsigned char)src[i + 2])) >= 0) {
			dst[o++] = (char)(hi * 16 + lo);
			i += 2;
		} else {
			dst[o++] = src[i];
		}
	}
	dst[o] = '\0';
	return dst;
}

/* The directory (after the path's first '/', before its last) and the
 * file name, decoded as wget's -I/-X and -A/-R see them. */
static void view_decode(struct view *v)
{
	v->dec_done = true;
	v->dec_dir = v->dec_name = NULL;
	if (v->len > URL_RULES_KEY_MAX || v->path >= v->query)
		return;
	size_t dir_from = v->path + 1, dir_to = v->name > dir_from ? v->name - 1 : dir_from;
	v->dec_dir = decode(v->key + dir_from, dir_to - dir_from, v->dec);
	size_t dl = strlen(v->dec_dir);
	v->dec_name = decode(v->key + v->name, v->query - v->name, v->dec + dl + 1);
}

/* wget's pages: a name ending in html, htm or one character + html. */
static bool html_name(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot)
		return false;
	size_t n = strlen(dot + 1);
	return strcasecmp(dot + 1, "html") == 0 || strcasecmp(dot + 1, "htm") == 0 ||
	       (n == 5 && strcasecmp(dot + 2, "html") == 0);
}

/* wget's subdir_p: dir is d or lies below it. */
static bool below(const char *d, size_t dl, const char *dir)
{
	return dl == 0 || (strncmp(dir, d, dl) == 0 && (dir[dl] == '\0' || dir[dl] == '/'));
}

/* -1: the file rule does not apply to this URL (a page); else 0/1. */
static int file_matches(struct view *v, const struct url_rule *rule)
{
	if (!v->dec_done)
		view_decode(v);
	const char *name = v->dec_name;
	if (!name || !name[0] || html_name(name))
		return -1;
	size_t nl = strlen(name);
	for (uint32_t k = 0; k < rule->nitems; k++) {
		const struct url_rule_item *it = &rule->items[k];
		if ((it->flags & URL_RULE_ITEM_GLOB)
		            ? fnmatch(it->s, name, 0) == 0
		            : nl >= it->len && memcmp(name + nl - it->len, it->s, it->len) == 0)
			return 1;
	}
	return 0;
}

static int dir_matches(struct view *v, const struct url_rule *rule)
{
	if (!v->dec_done)
		view_decode(v);
	if (!v->dec_dir)
		return 0;
	for (uint32_t k = 0; k < rule->nitems; k++) {
		const struct url_rule_item *it = &rule->items[k];
		if ((it->flags & URL_RULE_ITEM_GLOB) ? fnmatch(it->s, v->dec_dir, FNM_PATHNAME) == 0
		                                     : below(it->s, it->len, v->dec_dir))
			return 1;
	}
	return 0;
}

static void *arena_malloc(PCRE2_SIZE size, void *data)
{
	struct view *v = data;
	size = (size + 15) & ~(PCRE2_SIZE)15;
	if (v->arena_used + size <= sizeof v->arena) {
		void *p = v->arena + v->arena_used;
		v->arena_used += size;
		return p;
	}
	return malloc(size);
}

static void arena_free(void *p, void *data)
{
	struct view *v = data;
	if ((char *)p < v->arena || (char *)p >= v->arena + sizeof v->arena)
		free(p);
}

static int regex_matches(const struct url_rules *r, struct view *v, const struct url_rule *rule)
{
	if (rule->pf_slot != UINT32_MAX && r->prefilter) {
		if (!v->pf_done) {
			uint32_t words = (url_rules_pf_slots(r->pf) + 63) / 64;
			memset(v->bits, 0, words * sizeof v->bits[0]);
			url_rules_pf_scan(r->pf, v->key, v->len, v->bits);
			v->pf_done = true;
		}
		if (!(v->bits[rule->pf_slot / 64] & (1ull << (rule->pf_slot % 64))))
			return 0;
	}
	if (!v->md) {
		v->gctx = pcre2_general_context_create(arena_malloc, arena_free, v);
		v->md = v->gctx ? pcre2_match_data_create(1, v->gctx) : NULL;
		if (!v->md) {
			v->regex_failed = true;
			return 0;
		}
	}
	int rc = rule->jit
	                 ? pcre2_jit_match(rule->re, (PCRE2_SPTR)v->key, v->len, 0, 0, v->md,
	                                   r->mctx)
	                 : pcre2_match(rule->re, (PCRE2_SPTR)v->key, v->len, 0, 0, v->md, r->mctx);
	if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)
		v->regex_failed = true;
	return rc >= 0;
}

/* Whether rule's matcher matches v: 1, 0, or -1 (the rule does not apply,
 * negated or not). */
static int matches(const struct url_rules *r, struct view *v, const struct url_rule *rule)
{
	switch ((enum url_rules_matcher)rule->matcher) {
	case URL_RULES_HOST:
		for (uint32_t k = 0; k < rule->nitems; k++)
			if (host_matches(v, &rule->items[k]))
				return 1;
		return 0;
	case URL_RULES_DOMAIN: {
		const char *reg = view_reg_domain(v);
		for (uint32_t k = 0; reg && k < rule->nitems; k++)
			if (strcmp(reg, rule->items[k].s) == 0)
				return 1;
		return 0;
	}
	case URL_RULES_EXT:
		for (uint32_t k = 0; k < rule->nitems; k++)
			if (v->extlen == rule->items[k].len &&
			    strncasecmp(v->key + v->ext, rule->items[k].s, v->extlen) == 0)
				return 1;
		return 0;
	case URL_RULES_PREFIX: return starts_with(v->key, v->len, &rule->items[0]);
	case URL_RULES_PATH:
		return starts_with(v->key + v->path, v->len - v->path, &rule->items[0]);
	case URL_RULES_SURT: return surt_matches(v, &rule->items[0]);
	case URL_RULES_REGEX: return regex_matches(r, v, rule);
	case URL_RULES_FILE: return file_matches(v, rule);
	case URL_RULES_DIR: return dir_matches(v, rule);
	case URL_RULES_MATCHER_COUNT: break;
	}
	return 0;
}

static bool applies(const struct url_rules *r, struct view *v, const struct url_rule *rule)
{
	int m = matches(r, v, rule);
	return m >= 0 && (m == 1) != rule->negated;
}

/* The decision of the first `limit` rules (r->n: all) into *out; counted
 * when one matched, or (count_none) when none did. */
static void decide(struct url_rules *r, const char *key, size_t len, uint32_t depth, uint32_t limit,
                   bool count_none, struct url_rules_decision *out)
{
	struct view v;
	uint32_t best = limit;
	view_init(&v, key, len);
	if (r->table)
		best = set_lookup(r, &v, best);
	for (size_t k = 0; k < r->nscan && r->scan[k] < best; k++)
		if (applies(r, &v, &r->rules[r->scan[k]])) {
			best = r->scan[k];
			break;
		}
	if (v.md) {
		pcre2_match_data_free(v.md);
		pcre2_general_context_free(v.gctx);
	}
	*out = (struct url_rules_decision){ .action = URL_RULES_NO_MATCH,
		                            .rule = -1,
		                            .regex_failed = v.regex_failed };
	if (best < limit) {
		const struct url_rule *rule = &r->rules[best];
		out->rule = (int32_t)best;
		out->action = (enum url_rules_action)rule->action;
		out->depth = rule->depth;
		out->priority = rule->priority;
		if (rule->action == URL_RULES_ACCEPT && rule->depth > 0 && depth > rule->depth) {
			out->action = URL_RULES_REJECT;
			out->too_deep = true;
		}
	} else if (!count_none) {
		return;
	} else {
		best = (uint32_t)r->n; /* the no-match counter */
	}
	if (r->counts) {
		size_t slot = 2 * (size_t)best + (out->action == URL_RULES_REJECT);
		__atomic_add_fetch(&r->counts[slot], 1, __ATOMIC_RELAXED);
	}
}

void url_rules_decide(struct url_rules *r, const char *key, size_t len, uint32_t depth,
                      struct url_rules_decision *out)
{
	decide(r, key, len, depth, (uint32_t)r->n, true, out);
}

void url_rules_decide_first(struct url_rules *r, size_t first, const char *key, size_t len,
                            uint32_t depth, struct url_rules_decision *out)
{
	decide(r, key, len, depth, (uint32_t)(first < r->n ? first : r->n), false, out);
}

/* ---- Reading the list ---- */

size_t url_rules_size(const struct url_rules *r)
{
	return r ? r->n : 0;
}

int url_rules_rule(const struct url_rules *r, size_t i, struct url_rule_info *out)
{
	if (!r || i >= r->n)
		return -1;
	const struct url_rule *rule = &r->rules[i];
	*out = (struct url_rule_info){
		.action = (enum url_rules_action)rule->action,
		.matcher = (enum url_rules_matcher)rule->matcher,
		.negated = rule->negated,
		.depth = rule->depth,
		.priority = rule->priority,
		.text = rule->text,
		.source = r->sources[rule->source],
		.line = rule->line,
	};
	return 0;
}

void url_rules_counts(const struct url_rules *r, size_t i, uint64_t *accepted, uint64_t *rejected)
{
	*accepted = *rejected = 0;
	if (!r || !r->counts || i > r->n)
		return;
	*accepted = __atomic_load_n(&r->counts[2 * i], __ATOMIC_RELAXED);
	*rejected = __atomic_load_n(&r->counts[2 * i + 1], __ATOMIC_RELAXED);
}

void url_rules_counts_add(struct url_rules *r, size_t i, uint64_t accepted, uint64_t rejected)
{
	if (!r || !r->counts || i > r->n)
		return;
	__atomic_add_fetch(&r->counts[2 * i], accepted, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->counts[2 * i + 1], rejected, __ATOMIC_RELAXED);
}

const char *url_rules_action_name(enum url_rules_action a)
{
	/* indexed by the enum's values, 0 to 2 (url_rules.h) */
	static const char *const names[] = { "no-match", "accept", "reject" };
	return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "unknown";
}

const char *url_rules_strerror(enum url_rules_err e)
{
	switch (e) {
	case URL_RULES_OK: return "ok";
	case URL_RULES_ERR_NOMEM: return "out of memory";
	case URL_RULES_ERR_SYNTAX: return "malformed rule";
	case URL_RULES_ERR_IO: return "cannot read the rules file";
	case URL_RULES_ERR_STATE: return "rules changed after sealing";
	case URL_RULES_ERR_LIMIT: return "too many rules";
	}
	return "unknown error";
}

/* Whether host h[n] is an IP address (not reversed in a SURT). */
static bool ip_host(const char *h, size_t n)
{
	if (n > 0 && h[0] == '[')
		return true;
	for (size_t i = 0; i < n; i++)
		if (!ascii_is_digit((unsigned char)h[i]) && h[i] != '.')
			return false;
	return n > 0;
}

size_t url_rules_surt(const char *key, size_t len, char *out, size_t cap)
{
	size_t alen, hoff, hlen, o = 0;
	if (url_key_split(key, len, &alen, &hoff, &hlen) < 0 || cap < len + 8)
		return 0;
	const char *sep = memmem(key, alen, "://", 3);
	if (!sep)
		return 0;
	size_t scheme_end = (size_t)(sep - key) + 3;
	memcpy(out, key, scheme_end);
	o = scheme_end;
	out[o++] = '(';
	if (ip_host(key + hoff, hlen)) {
		memcpy(out + o, key + hoff, hlen);
		o += hlen;
		out[o++] = ',';
	} else {
		size_t end = hoff + hlen;
		while (end > hoff) {
			size_t start = end;
			while (start > hoff && key[start - 1] != '.')
				start--;
			memcpy(out + o, key + start, end - start);
			o += end - start;
			out[o++] = ',';
			end = start > hoff ? start - 1 : hoff;
		}
	}
	if (hoff + hlen < alen) { /* ":port" */
		memcpy(out + o, key + hoff + hlen, alen - hoff - hlen);
		o += alen - hoff - hlen;
	}
	if (hoff > scheme_end) { /* "user:pass@" -> "@user:pass" */
		out[o++] = '@';
		memcpy(out + o, key + scheme_end, hoff - scheme_end - 1);
		o += hoff - scheme_end - 1;
	}
	out[o++] = ')';
	memcpy(out + o, key + alen, len - alen);
	o += len - alen;
	out[o] = '\0';
	return o;
}
