/*
 * url_rules_parse.c: a rule's text to a rule record (url_rules.h gives the
 * format): the line cut into words, each pattern checked and brought to the
 * form the crawl keys have, each regex compiled; and wget's flags made into
 * rules. Every refusal says what was wrong, naming the source and line.
 */
#include "frontier/url_rules_internal.h"
#include "frontier/base/ascii.h"

#include <libpsl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_WORDS 8

struct word {
	const char *p;
	size_t n;
};

/* Where a rule comes from, for its messages. */
struct origin {
	const char *source;
	uint32_t line;
	char *err;
	size_t errlen;
	enum url_rules_err *code;
};

static int fail(const struct origin *o, enum url_rules_err code, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (o->line > 0)
		snprintf(o->err, o->errlen, "%s:%u: %s", o->source, o->line, msg);
	else
		snprintf(o->err, o->errlen, "%s: %s", o->source, msg);
	*o->code = code;
	return -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* The words of a line up to its comment; -1 when there are too many. */
static int split_words(const char *t, size_t len, struct word *w, size_t *nw)
{
	size_t i = 0;
	*nw = 0;
	while (i < len) {
		while (i < len && is_space(t[i]))
			i++;
		if (i == len || t[i] == '#')
			break;
		if (*nw == MAX_WORDS)
			return -1;
		size_t start = i;
		while (i < len && !is_space(t[i]))
			i++;
		w[*nw] = (struct word){ t + start, i - start };
		(*nw)++;
	}
	return 0;
}

static bool word_is(const struct word *w, const char *s)
{
	return w->n == strlen(s) && memcmp(w->p, s, w->n) == 0;
}

static const char *const matcher_names[URL_RULES_MATCHER_COUNT] = {
	"host", "domain", "prefix", "surt", "path", "regex", "ext", "file", "dir",
};

const char *url_rules_matcher_name(enum url_rules_matcher m)
{
	return (unsigned)m < URL_RULES_MATCHER_COUNT ? matcher_names[m] : "unknown";
}

/* Appends an item (s[n], copied) to the rule. */
static int add_item(struct url_rule *rule, const char *s, size_t n, uint8_t flags)
{
	struct url_rule_item *items = realloc(rule->items, (rule->nitems + 1) * sizeof *items);
	if (!items)
		return -1;
	rule->items = items;
	char *copy = malloc(n + 1);
	if (!copy)
		return -1;
	memcpy(copy, s, n);
	copy[n] = '\0';
	items[rule->nitems++] = (struct url_rule_item){ copy, (uint32_t)n, flags };
	return 0;
}

/* A URL parser with the key options that act on a URL's front. */
static struct url *front_parser(const struct url_rules *r)
{
	struct url_options o = r->opt;
	o.flags &= URL_CANON_STRIP_WWW | URL_CANON_LOWERCASE_PATH | URL_CANON_SCHEME_FOLD;
	o.max_len = URL_RULES_PATTERN_MAX + 64;
	return url_create(&o);
}

/* The crawl key of text s[n] (prefix written before it, e.g. "http://")
 * into key (cap bytes); its length, or 0 when it is no http(s) URL. */
static size_t front_key(const struct url_rules *r, const char *before, const char *s, size_t n,
                        const char *after, char *key, size_t cap)
{
	size_t bl = strlen(before), al = strlen(after), klen = 0;
	char *in = malloc(bl + n + al + 1);
	struct url *u = front_parser(r);
	if (in && u) {
		memcpy(in, before, bl);
		memcpy(in + bl, s, n);
		memcpy(in + bl + n, after, al);
		if (url_normalize(u, NULL, in, bl + n + al, key, cap, &klen) != URL_OK)
			klen = 0;
	}
	url_destroy(u);
	free(in);
	return klen;
}

/* A host pattern item (no leading dot) to its canonical form in out. */
static int canon_host(const struct url_rules *r, const char *s, size_t n, char *out, size_t cap,
                      size_t *olen)
{
	char key[URL_RULES_PATTERN_MAX + 128];
	size_t alen, hoff, hlen;
	if (n == 0 || (s[0] != '[' && memchr(s, ':', n)) || memchr(s, '/', n) ||
	    memchr(s, '?', n) || memchr(s, '#', n) || memchr(s, '@', n) || memchr(s, '\\', n))
		return -1;
	size_t klen = front_key(r, "http://", s, n, "/", key, sizeof key);
	if (klen == 0 || url_key_split(key, klen, &alen, &hoff, &hlen) < 0 || hlen >= cap)
		return -1;
	if (key[hoff] != '[' && !url_host_is_dns_name(key + hoff, hlen))
		return -1;
	memcpy(out, key + hoff, hlen);
	out[hlen] = '\0';
	*olen = hlen;
	return 0;
}

/* The comma list of pattern p[n] through fn, one item at a time. */
typedef int (*item_fn)(const struct url_rules *r, struct url_rule *rule, const char *s, size_t n,
                       const struct origin *o);

static int each_item(const struct url_rules *r, struct url_rule *rule, const char *p, size_t n,
                     item_fn fn, const struct origin *o)
{
	size_t i = 0;
	while (i <= n) {
		size_t j = i;
		while (j < n && p[j] != ',')
			j++;
		if (j > i && fn(r, rule, p + i, j - i, o) < 0)
			return -1;
		i = j + 1;
	}
	if (rule->nitems == 0)
		return fail(o, URL_RULES_ERR_SYNTAX, "%s: an empty list",
		            url_rules_matcher_name(rule->matcher));
	return 0;
}

static int host_item(const struct url_rules *r, struct url_rule *rule, const char *s, size_t n,
                     const struct origin *o)
{
	char host[512];
	size_t hl;
	bool sub = n > 0 && s[0] == '.';
	if (canon_host(r, s + sub, n - sub, host, sizeof host, &hl) < 0)
		return fail(o, URL_RULES_ERR_SYNTAX, "host: '%.*s' is not a host name", (int)n, s);
	if (add_item(rule, host, hl, sub ? URL_RULE_ITEM_SUBDOMAINS : 0) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

static int domain_item(const struct url_rules *r, struct url_rule *rule, const char *s, size_t n,
                       const struct origin *o)
{
	char host[512];
	size_t hl;
	const psl_ctx_t *psl = psl_builtin();
	if (canon_host(r, s, n, host, sizeof host, &hl) < 0 || host[0] == '[')
		return fail(o, URL_RULES_ERR_SYNTAX, "domain: '%.*s' is not a domain name", (int)n,
		            s);
	const char *reg = psl ? psl_registrable_domain(psl, host) : host;
	if (reg == NULL)
		return fail(o, URL_RULES_ERR_SYNTAX,
		            "domain: '%s' is a public suffix, not a registrable domain", host);
	if (strcmp(reg, host) != 0)
		return fail(o, URL_RULES_ERR_SYNTAX,
		            "domain: '%s' is not a registrable domain (it lies in %s): write "
		            "host .%s for it and its subdomains",
		            host, reg, host);
	if (add_item(rule, host, hl, 0) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

static int ext_item(const struct url_rules *r, struct url_rule *rule, const char *s, size_t n,
                    const struct origin *o)
{
	char ext[256];
	(void)r;
	if (n > 0 && s[0] == '.') {
		s++;
		n--;
	}
	if (n == 0 || n >= sizeof ext || memchr(s, '.', n) || memchr(s, '/', n) ||
	    memchr(s, '?', n) || memchr(s, '#', n))
		return fail(o, URL_RULES_ERR_SYNTAX,
		            "ext: '%.*s' is no extension (what follows a name's last '.')", (int)n,
		            s);
	for (size_t i = 0; i < n; i++)
		ext[i] = (char)ascii_to_lower((unsigned char)s[i]);
	if (add_item(rule, ext, n, 0) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

static uint8_t glob_flag(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[' || s[i] == ']')
			return URL_RULE_ITEM_GLOB;
	return 0;
}

static int file_item(const struct url_rules *r, struct url_rule *rule, const char *s, size_t n,
                     const struct origin *o)
{
	(void)r;
	if (add_item(rule, s, n, glob_flag(s, n)) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

/* A directory as wget's -I/-X take it: leading '/' dropped (the URL's
 * directory is compared without it), trailing ones too ("/pub/" is
 * "/pub"); "/" alone is every directory. */
static int dir_item(const struct url_rules *r, struct url_rule *rule, const char *s, size_t n,
                    const struct origin *o)
{
	(void)r;
	if (n > 0 && s[0] == '/') {
		s++;
		n--;
	}
	while (n > 0 && s[n - 1] == '/')
		n--;
	if (add_item(rule, s, n, glob_flag(s, n)) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

static bool has_http_scheme(const char *p, size_t n)
{
	return (n >= 7 && strncasecmp(p, "http://", 7) == 0) ||
	       (n >= 8 && strncasecmp(p, "https://", 8) == 0);
}

/* Whether URL text p[n] has nothing after its authority. */
static bool no_path(const char *p, size_t n)
{
	const char *a = memchr(p, ':', n);
	size_t from = a ? (size_t)(a - p) + 3 : 0;
	for (size_t i = from; i < n; i++)
		if (p[i] == '/' || p[i] == '?' || p[i] == '#')
			return false;
	return true;
}

static int prefix_pattern(const struct url_rules *r, struct url_rule *rule, const char *p, size_t n,
                          const struct origin *o)
{
	char key[URL_RULES_PATTERN_MAX + 128];
	size_t klen = has_http_scheme(p, n) ? front_key(r, "", p, n, "", key, sizeof key) : 0;
	if (klen == 0)
		return fail(o, URL_RULES_ERR_SYNTAX, "prefix: '%.*s' is not an http(s) URL", (int)n,
		            p);
	if (add_item(rule, key, klen, 0) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

static int path_pattern(const struct url_rules *r, struct url_rule *rule, const char *p, size_t n,
                        const struct origin *o)
{
	char key[URL_RULES_PATTERN_MAX + 128];
	size_t alen, hoff, hlen, klen = 0;
	if (n > 0 && p[0] == '/' && !memchr(p, '#', n))
		klen = front_key(r, "http://h", p, n, "", key, sizeof key);
	if (klen == 0 || url_key_split(key, klen, &alen, &hoff, &hlen) < 0)
		return fail(o, URL_RULES_ERR_SYNTAX, "path: '%.*s' is no path (it starts with '/')",
		            (int)n, p);
	if (add_item(rule, key + alen, klen - alen, 0) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

/* A SURT prefix written as one: lowercase up to its ')'. */
static int surt_written(struct url_rule *rule, const char *p, size_t n, uint8_t flags,
                        const struct origin *o)
{
	char buf[URL_RULES_PATTERN_MAX + 1];
	bool in_host = true;
	for (size_t i = 0; i < n; i++) {
		buf[i] = in_host ? (char)ascii_to_lower((unsigned char)p[i]) : p[i];
		if (p[i] == ')')
			in_host = false;
	}
	if (add_item(rule, buf, n, flags) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

static int surt_pattern(const struct url_rules *r, struct url_rule *rule, const char *p, size_t n,
                        const struct origin *o)
{
	char key[URL_RULES_PATTERN_MAX + 128], surt[URL_RULES_PATTERN_MAX + 160];
	if (n > 0 && p[0] == '(')
		return surt_written(rule, p, n, URL_RULE_ITEM_ANY_SCHEME, o);
	const char *sep = memchr(p, ':', n);
	if (sep && has_http_scheme(p, n) && (size_t)(sep - p) + 3 < n && sep[3] == '(')
		return surt_written(rule, p, n, 0, o);
	size_t klen = has_http_scheme(p, n) ? front_key(r, "", p, n, "", key, sizeof key) : 0;
	size_t sl = klen ? url_rules_surt(key, klen, surt, sizeof surt) : 0;
	if (sl == 0)
		return fail(o, URL_RULES_ERR_SYNTAX,
		            "surt: '%.*s' is neither a SURT prefix nor an http(s) URL", (int)n, p);
	if (no_path(p, n)) { /* open the host: "http://(org,example," */
		char *close = strchr(surt, ')');
		sl = close ? (size_t)(close - surt) : sl;
	}
	if (add_item(rule, surt, sl, 0) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

static int regex_pattern(struct url_rule *rule, const char *p, size_t n, const struct origin *o)
{
	int code;
	PCRE2_SIZE off;
	rule->re = pcre2_compile((PCRE2_SPTR)p, n, 0, &code, &off, NULL);
	if (!rule->re) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(code, msg, sizeof msg);
		return fail(o, URL_RULES_ERR_SYNTAX, "regex: %s at offset %zu of '%.*s'", msg,
		            (size_t)off, (int)n, p);
	}
	/* Without a JIT (another CPU), pcre2_match runs the same code slower. */
	rule->jit = pcre2_jit_compile(rule->re, PCRE2_JIT_COMPLETE) == 0;
	if (add_item(rule, p, n, 0) < 0)
		return fail(o, URL_RULES_ERR_NOMEM, "out of memory");
	return 0;
}

/* The matcher's pattern into rule's items (and regex). */
static int set_pattern(const struct url_rules *r, struct url_rule *rule, const char *p, size_t n,
                       const struct origin *o)
{
	if (n > URL_RULES_PATTERN_MAX)
		return fail(o, URL_RULES_ERR_SYNTAX, "a pattern longer than %u bytes",
		            URL_RULES_PATTERN_MAX);
	switch ((enum url_rules_matcher)rule->matcher) {
	case URL_RULES_HOST: return each_item(r, rule, p, n, host_item, o);
	case URL_RULES_DOMAIN: return each_item(r, rule, p, n, domain_item, o);
	case URL_RULES_EXT: return each_item(r, rule, p, n, ext_item, o);
	case URL_RULES_FILE: return each_item(r, rule, p, n, file_item, o);
	case URL_RULES_DIR: return each_item(r, rule, p, n, dir_item, o);
	case URL_RULES_PREFIX: return prefix_pattern(r, rule, p, n, o);
	case URL_RULES_SURT: return surt_pattern(r, rule, p, n, o);
	case URL_RULES_PATH: return path_pattern(r, rule, p, n, o);
	case URL_RULES_REGEX: return regex_pattern(rule, p, n, o);
	case URL_RULES_MATCHER_COUNT: break;
	}
	return fail(o, URL_RULES_ERR_SYNTAX, "no such matcher");
}

void url_rule_free(struct url_rule *rule)
{
	if (!rule)
		return;
	free(rule->text); /* made last, from the pattern's words */
	pcre2_code_free(rule->re);
	for (uint32_t i = 0; i < rule->nitems; i++)
		free(rule->items[i].s);
	free(rule->items);
	memset(rule, 0, sizeof *rule);
}

/* "depth=N" or "priority=N" into the rule; -1 (said) when malformed. */
static int set_option(struct url_rule *rule, const struct word *w, unsigned *seen,
                      const struct origin *o)
{
	const char *eq = memchr(w->p, '=', w->n);
	size_t nl = eq ? (size_t)(eq - w->p) : w->n;
	bool depth = nl == 5 && memcmp(w->p, "depth", 5) == 0;
	bool prio = nl == 8 && memcmp(w->p, "priority", 8) == 0;
	if (!eq || (!depth && !prio))
		return fail(o, URL_RULES_ERR_SYNTAX,
		            "'%.*s' after the pattern: expected depth=N or priority=N", (int)w->n,
		            w->p);
	unsigned bit = depth ? 1u : 2u;
	if (*seen & bit)
		return fail(o, URL_RULES_ERR_SYNTAX, "%.*s given twice", (int)nl, w->p);
	*seen |= bit;
	if (rule->action != URL_RULES_ACCEPT)
		return fail(o, URL_RULES_ERR_SYNTAX, "%.*s= applies to accept rules only", (int)nl,
		            w->p);
	char num[16];
	size_t vl = w->n - nl - 1;
	long val = LONG_MIN;
	if (vl > 0 && vl < sizeof num) {
		char *e;
		memcpy(num, eq + 1, vl);
		num[vl] = '\0';
		long v = strtol(num, &e, 10);
		if (*e == '\0' && (ascii_is_digit((unsigned char)num[0]) || prio))
			val = v;
	}
	if (depth && (val < 1 || val > (long)URL_RULES_DEPTH_MAX))
		return fail(o, URL_RULES_ERR_SYNTAX,
		            "depth=%.*s: expected a number of links, 1..%u", (int)vl, eq + 1,
		            URL_RULES_DEPTH_MAX);
	if (prio && (val < URL_RULES_PRIORITY_MIN || val > URL_RULES_PRIORITY_MAX))
		return fail(o, URL_RULES_ERR_SYNTAX, "priority=%.*s: expected %d..%d", (int)vl,
		            eq + 1, URL_RULES_PRIORITY_MIN, URL_RULES_PRIORITY_MAX);
	if (depth)
		rule->depth = (uint32_t)val;
	else
		rule->priority = (int8_t)val;
	return 0;
}

/* The action and matcher words; -1 (said) when unknown. */
static int set_kind(struct url_rule *rule, const struct word *w, const struct origin *o)
{
	if (word_is(&w[0], "accept"))
		rule->action = URL_RULES_ACCEPT;
	else if (word_is(&w[0], "reject"))
		rule->action = URL_RULES_REJECT;
	else
		return fail(o, URL_RULES_ERR_SYNTAX, "'%.*s': expected accept or reject",
		            (int)w[0].n, w[0].p);
	struct word m = w[1];
	rule->negated = m.n > 0 && m.p[0] == '!';
	m.p += rule->negated;
	m.n -= rule->negated;
	for (int k = 0; k < URL_RULES_MATCHER_COUNT; k++)
		if (word_is(&m, matcher_names[k])) {
			rule->matcher = (uint8_t)k;
			return 0;
		}
	return fail(o, URL_RULES_ERR_SYNTAX,
	            "'%.*s': expected a matcher: host, domain, prefix, surt, path, regex, ext, "
	            "file or dir (a '!' before it negates it)",
	            (int)w[1].n, w[1].p);
}

int url_rule_parse(const struct url_rules *r, const char *text, size_t len, const char *source,
                   uint32_t line, struct url_rule *out, char *err, size_t errlen,
                   enum url_rules_err *code)
{
	struct origin o = { source, line, err, errlen, code };
	struct word w[MAX_WORDS];
	size_t nw;
	unsigned seen = 0;
	memset(out, 0, sizeof *out);
	out->pf_slot = UINT32_MAX;
	out->line = line;
	if (split_words(text, len, w, &nw) < 0)
		return fail(&o, URL_RULES_ERR_SYNTAX, "too many words (a pattern holds no space)");
	if (nw == 0)
		return 0;
	if (nw < 3)
		return fail(&o, URL_RULES_ERR_SYNTAX,
		            "expected ACTION MATCHER PATTERN [depth=N] [priority=N]");
	if (set_kind(out, w, &o) < 0)
		goto bad;
	for (size_t i = 3; i < nw; i++)
		if (set_option(out, &w[i], &seen, &o) < 0)
			goto bad;
	if (set_pattern(r, out, w[2].p, w[2].n, &o) < 0)
		goto bad;
	size_t tl = (size_t)(w[nw - 1].p + w[nw - 1].n - w[0].p);
	out->text = strndup(w[0].p, tl);
	if (!out->text) {
		fail(&o, URL_RULES_ERR_NOMEM, "out of memory");
		goto bad;
	}
	return 1;
bad:
	url_rule_free(out);
	return -1;
}

int url_rule_make(const struct url_rules *r, enum url_rules_action action,
                  enum url_rules_matcher matcher, bool negated, const char *pattern,
                  const char *source, struct url_rule *out, char *err, size_t errlen,
                  enum url_rules_err *code)
{
	struct origin o = { source, 0, err, errlen, code };
	size_t n = strlen(pattern);
	memset(out, 0, sizeof *out);
	out->pf_slot = UINT32_MAX;
	out->action = (uint8_t)action;
	out->matcher = (uint8_t)matcher;
	out->negated = negated;
	if (set_pattern(r, out, pattern, n, &o) < 0)
		goto bad;
	size_t tl = n + 32;
	out->text = malloc(tl);
	if (!out->text) {
		fail(&o, URL_RULES_ERR_NOMEM, "out of memory");
		goto bad;
	}
	snprintf(out->text, tl, "%s %s%s %s", url_rules_action_name(action), negated ? "!" : "",
	         url_rules_matcher_name(matcher), pattern);
	return 0;
bad:
	url_rule_free(out);
	return -1;
}
