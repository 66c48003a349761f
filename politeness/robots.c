/*
 * robots.c: RFC 9309 parser and matcher (see robots.h for the contract).
 *
 * One pass over the lines. Group state: `in_agents` is true while the last
 * significant line was a user-agent line (consecutive ones build a group's
 * agent list; a rule line ends it, blank and unknown lines and Sitemap do
 * not). `cur_specific` / `cur_global` say whether the current group names
 * our token / `*`. Rules of groups naming us go to one list, rules of `*`
 * groups to another; at the end the first list is kept if any group named
 * us, else the second.
 */
#include "politeness/delay_policy.h"
#include "politeness/robots_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/base/mem_cost.h"

struct rule_list {
	struct robots_rule *v;
	size_t n, cap;
};

const char *robots_strerror(int err)
{
	static const char *const msg[] = {
		[ROBOTS_OK] = "success",
		[ROBOTS_ENOMEM] = "out of memory",
		[ROBOTS_EINVAL] = "invalid argument",
		[ROBOTS_ETOOLONG] = "output buffer too small",
	};
	if (err < 0 || (size_t)err >= sizeof msg / sizeof msg[0])
		return "unknown robots error";
	return msg[err];
}

/* ASCII only, whatever the locale. */
static bool is_unreserved(unsigned char c)
{
	return ascii_is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

int robots_path_normalize(const char *in, size_t len, char *out, size_t cap, size_t *out_len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	if (!in || !out || cap == 0)
		return ROBOTS_EINVAL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)in[i];
		if (c == '%' && i + 2 < len && ascii_hex_value((unsigned char)in[i + 1]) >= 0 &&
		    ascii_hex_value((unsigned char)in[i + 2]) >= 0) {
			int v = ascii_hex_value((unsigned char)in[i + 1]) * 16 +
			        ascii_hex_value((unsigned char)in[i + 2]);
			if (is_unreserved((unsigned char)v)) {
				if (o + 1 >= cap)
					return ROBOTS_ETOOLONG;
				out[o++] = (char)v;
			} else {
				if (o + 3 >= cap)
					return ROBOTS_ETOOLONG;
				out[o++] = '%';
				out[o++] = hex[v >> 4];
				out[o++] = hex[v & 15];
			}
			i += 2;
		} else if (c >= 0x80) {
			if (o + 3 >= cap)
				return ROBOTS_ETOOLONG;
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		} else {
			if (o + 1 >= cap)
				return ROBOTS_ETOOLONG;
			out[o++] = (char)c;
		}
	}
	out[o] = '\0';
	if (out_len)
		*out_len = o;
	return ROBOTS_OK;
}

/* Index of the first '/', '?' or ';' in url[from, len), len if none. */
static size_t find_path_start(const char *url, size_t from, size_t len)
{
	for (size_t i = from; i < len; i++)
		if (url[i] == '/' || url[i] == '?' || url[i] == ';')
			return i;
	return len;
}

int robots_path_from_url(const char *url, size_t len, char *out, size_t cap)
{
	/* Mirrors Google's GetPathParamsQuery (robots_path_cases.jsonl). */
	if (!url || !out || cap == 0)
		return ROBOTS_EINVAL;
	size_t search_start = 0;
	if (len >= 2 && url[0] == '/' && url[1] == '/')
		search_start = 2;
	size_t early_path = find_path_start(url, search_start, len);
	size_t protocol_end = len;
	for (size_t i = search_start; i + 2 < len; i++) {
		if (url[i] == ':' && url[i + 1] == '/' && url[i + 2] == '/') {
			protocol_end = i;
			break;
		}
	}
	if (early_path < protocol_end)
		protocol_end = len; /* "://" after the path starts is not a scheme */
	protocol_end = protocol_end == len ? search_start : protocol_end + 3;
	size_t path_start = find_path_start(url, protocol_end, len);
	size_t hash_pos = len;
	for (size_t i = search_start; i < len; i++) {
		if (url[i] == '#') {
			hash_pos = i;
			break;
		}
	}
	if (path_start == len || hash_pos < path_start) {
		if (cap < 2)
			return ROBOTS_ETOOLONG;
		memcpy(out, "/", 2);
		return ROBOTS_OK;
	}
	size_t n = hash_pos - path_start;
	size_t pre = url[path_start] != '/' ? 1 : 0;
	if (pre + n + 1 > cap)
		return ROBOTS_ETOOLONG;
	if (pre)
		out[0] = '/';
	memcpy(out + pre, url + path_start, n);
	out[pre + n] = '\0';
	return ROBOTS_OK;
}

/* Product token of our agent: up to the first '/' or whitespace. */
static size_t our_token(const char *ua, const char **tok)
{
	*tok = ua;
	if (!ua)
		return 0;
	size_t n = 0;
	while (ua[n] && ua[n] != '/' && !ascii_is_space((unsigned char)ua[n]))
		n++;
	return n;
}

static bool is_token_char(unsigned char c)
{
	return ascii_is_alnum(c) || c == '-' || c == '_';
}

static bool key_is(const char *key, size_t klen, const char *const *names)
{
	for (; *names; names++) {
		if (strlen(*names) == klen && strncasecmp(key, *names, klen) == 0)
			return true;
	}
	return false;
}

static const char *const ua_keys[] = { "user-agent", "useragent", "user agent", NULL };
static const char *const allow_keys[] = { "allow", NULL };
static const char *const disallow_keys[] = { "disallow", "dissallow", "dissalow", "disalow",
	                                     "diasllow", "disallaw",  NULL };
static const char *const sitemap_keys[] = { "sitemap", "site-map", NULL };
static const char *const delay_keys[] = { "crawl-delay", "crawldelay", NULL };

static int rules_push(struct rule_list *l, const char *val, size_t vlen, bool allow)
{
	struct robots_rule *nv = array_grow(l->v, &l->cap, l->n, sizeof *nv, 16);
	if (!nv)
		return ROBOTS_ENOMEM;
	l->v = nv;
	size_t cap = 3 * vlen + 1;
	char *pat = malloc(cap);
	if (!pat)
		return ROBOTS_ENOMEM;
	size_t plen = 0;
	robots_path_normalize(val, vlen, pat, cap, &plen);
	struct robots_rule *r = &l->v[l->n++];
	memset(r, 0, sizeof *r);
	r->pat = pat;
	r->len = (uint32_t)plen;
	r->allow = allow;
	return ROBOTS_OK;
}

static void rules_free(struct rule_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].pat);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/* Adds a rule, and for "Allow: .../index.html" also ".../$" (Google: the
 * index page of a directory stands for the directory). */
static int add_rule(struct rule_list *l, const char *val, size_t vlen, bool allow)
{
	int rc = rules_push(l, val, vlen, allow);
	if (rc != ROBOTS_OK || !allow)
		return rc;
	static const char *const idx[] = { "/index.html", "/index.htm" };
	for (size_t k = 0; k < 2; k++) {
		size_t il = strlen(idx[k]);
		if (vlen >= il && memcmp(val + vlen - il, idx[k], il) == 0) {
			size_t keep = vlen - il + 1; /* up to and including the '/' */
			char buf[ROBOTS_LINE_MAX + 2];
			memcpy(buf, val, keep);
			buf[keep] = '$';
			return rules_push(l, buf, keep + 1, true);
		}
	}
	return ROBOTS_OK;
}

/* Priority order (longest first, Allow first at equal length), then the
 * pattern's bytes, so that two rules alike are neighbours. */
static int rule_cmp(const void *a, const void *b)
{
	const struct robots_rule *x = a, *y = b;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	if (x->allow != y->allow)
		return x->allow ? -1 : 1;
	return memcmp(x->pat, y->pat, x->len);
}

/* Sorts the rules into priority order and keeps one of each rule alike
 * (same pattern, same verdict): a repeat can change no check. */
static void rules_sort_unique(struct robots *r)
{
	size_t kept = 0;
	if (r->nrules > 1)
		qsort(r->rules, r->nrules, sizeof *r->rules, rule_cmp);
	for (size_t i = 0; i < r->nrules; i++) {
		if (kept > 0 && rule_cmp(&r->rules[kept - 1], &r->rules[i]) == 0) {
			free(r->rules[i].pat);
			continue;
		}
		r->rules[kept++] = r->rules[i];
	}
	r->nrules = kept;
}

/* A Crawl-delay value in seconds, or -1 when it is no delay ("soon", "-3",
 * "nan"). Text after the number is tolerated ("10 seconds"); numbers too
 * large to honour read as ROBOTS_CRAWL_DELAY_MAX_S. */
static double parse_delay(const char *val, size_t vlen)
{
	uint64_t us;
	size_t used;
	if (delay_policy_parse_seconds(val, vlen, &us, &used) != 0)
		return -1;
	double d = (double)us / 1e6;
	return d < ROBOTS_CRAWL_DELAY_MAX_S ? d : ROBOTS_CRAWL_DELAY_MAX_S;
}

struct parse_state {
	const char *tok; /* our product token */
	size_t toklen;
	bool in_agents; /* last significant line was a user-agent line */
	bool cur_specific;
	bool cur_global;
	bool found_specific;
	struct rule_list specific, global;
	double delay_specific, delay_global;
	char **sitemaps;
	size_t nsitemaps, sitemap_cap;
};

static int handle_line(struct parse_state *st, const char *line, size_t n)
{
	const char *hash = memchr(line, '#', n);
	if (hash)
		n = (size_t)(hash - line);
	ascii_trim(&line, &n);
	if (n == 0)
		return ROBOTS_OK;
	const char *sep = memchr(line, ':', n);
	const char *key = line, *val;
	size_t klen, vlen;
	if (sep) {
		klen = (size_t)(sep - line);
		val = sep + 1;
		vlen = n - klen - 1;
	} else {
		/* No colon: accept "key value" when there are exactly two words. */
		size_t i = 0;
		while (i < n && line[i] != ' ' && line[i] != '\t')
			i++;
		if (i == n)
			return ROBOTS_OK;
		klen = i;
		val = line + i;
		vlen = n - i;
		ascii_trim(&val, &vlen);
		for (size_t j = 0; j < vlen; j++) {
			if (val[j] == ' ' || val[j] == '\t')
				return ROBOTS_OK;
		}
	}
	ascii_trim(&key, &klen);
	ascii_trim(&val, &vlen);
	if (klen == 0)
		return ROBOTS_OK;

	if (key_is(key, klen, ua_keys)) {
		if (!st->in_agents) {
			st->cur_specific = false;
			st->cur_global = false;
		}
		st->in_agents = true;
		if (vlen >= 1 && val[0] == '*' &&
		    (vlen == 1 || ascii_is_space((unsigned char)val[1]))) {
			st->cur_global = true;
		} else {
			size_t t = 0;
			while (t < vlen && is_token_char((unsigned char)val[t]))
				t++;
			if (t > 0 && t == st->toklen && strncasecmp(val, st->tok, t) == 0) {
				st->cur_specific = true;
				st->found_specific = true;
			}
		}
		return ROBOTS_OK;
	}
	if (key_is(key, klen, sitemap_keys)) {
		if (vlen > 0 && st->nsitemaps < ROBOTS_MAX_SITEMAPS) {
			if (st->nsitemaps == st->sitemap_cap) {
				size_t ncap = st->sitemap_cap ? st->sitemap_cap * 2 : 4;
				char **nv = realloc(st->sitemaps, ncap * sizeof *nv);
				if (!nv)
					return ROBOTS_ENOMEM;
				st->sitemaps = nv;
				st->sitemap_cap = ncap;
			}
			char *s = strndup(val, vlen);
			if (!s)
				return ROBOTS_ENOMEM;
			st->sitemaps[st->nsitemaps++] = s;
		}
		return ROBOTS_OK;
	}
	bool allow = key_is(key, klen, allow_keys);
	bool disallow = !allow && key_is(key, klen, disallow_keys);
	bool delay = !allow && !disallow && key_is(key, klen, delay_keys);
	if (!allow && !disallow && !delay)
		return ROBOTS_OK; /* unknown line: ignored, does not end the agent list */
	st->in_agents = false;
	if (delay) {
		double d = parse_delay(val, vlen);
		if (d >= 0) {
			if (st->cur_specific && d > st->delay_specific)
				st->delay_specific = d;
			if (st->cur_global && d > st->delay_global)
				st->delay_global = d;
		}
		return ROBOTS_OK;
	}
	if (vlen == 0)
		return ROBOTS_OK; /* "Disallow:" with no path allows everything */
	int rc = ROBOTS_OK;
	if (st->cur_specific)
		rc = add_rule(&st->specific, val, vlen, allow);
	if (rc == ROBOTS_OK && st->cur_global)
		rc = add_rule(&st->global, val, vlen, allow);
	return rc;
}

static struct robots *robots_new(void)
{
	struct robots *r = calloc(1, sizeof *r);
	if (r) {
		r->crawl_delay = -1;
		r->wild_cap = ROBOTS_WILDCARD_CAP_DEFAULT;
	}
	return r;
}

struct robots *robots_create_allow_all(void)
{
	return robots_new();
}

struct robots *robots_create_disallow_all(void)
{
	struct robots *r = robots_new();
	if (r)
		r->deny_all = true;
	return r;
}

void robots_destroy(struct robots *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nrules; i++)
		free(r->rules[i].pat);
	free(r->rules);
	robots__index_free(r->index);
	ARRAY_FREE_EACH(r->sitemaps, r->nsitemaps);
	free(r);
}

/* The arrays cut to their length: a cache keeps the rules for hours (a
 * realloc that fails leaves an array as it was). */
static void shrink(struct robots *r)
{
	void *p;
	if (r->nrules > 0 && (p = realloc(r->rules, r->nrules * sizeof *r->rules)) != NULL)
		r->rules = p;
	if (r->nsitemaps > 0 &&
	    (p = realloc(r->sitemaps, r->nsitemaps * sizeof *r->sitemaps)) != NULL)
		r->sitemaps = p;
}

bool robots_allows_all(const struct robots *r)
{
	return !r || (r->nrules == 0 && !r->deny_all);
}

size_t robots_mem_bytes(const struct robots *r)
{
	if (!r)
		return 0;
	size_t n = mem_alloc_cost(sizeof *r);
	if (r->nrules > 0)
		n += mem_alloc_cost(r->nrules * sizeof *r->rules);
	for (size_t i = 0; i < r->nrules; i++)
		n += mem_alloc_cost(r->rules[i].len + 1);
	if (r->nsitemaps > 0)
		n += mem_alloc_cost(r->nsitemaps * sizeof *r->sitemaps);
	for (size_t i = 0; i < r->nsitemaps; i++)
		n += mem_alloc_cost(strlen(r->sitemaps[i]) + 1);
	return n;
}

int robots_parse(const char *body, size_t len, const char *user_agent, struct robots **out)
{
	int rc = ROBOTS_OK;
	struct robots *r = NULL;
	struct parse_state st;
	memset(&st, 0, sizeof st);
	st.delay_specific = -1;
	st.delay_global = -1;
	if (!out || (!body && len > 0))
		return ROBOTS_EINVAL;
	*out = NULL;
	st.toklen = our_token(user_agent, &st.tok);

	bool cut = false;
	if (len > ROBOTS_PARSE_LIMIT) {
		len = ROBOTS_PARSE_LIMIT;
		cut = true;
	}
	size_t pos = 0;
	if (len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0)
		pos = 3;
	while (pos < len) {
		size_t end = pos;
		while (end < len && body[end] != '\n' && body[end] != '\r')
			end++;
		if (end == len && cut)
			break; /* a line cut by the limit could say less than it meant */
		size_t n = end - pos;
		if (n > ROBOTS_LINE_MAX)
			n = ROBOTS_LINE_MAX;
		rc = handle_line(&st, body + pos, n);
		if (rc != ROBOTS_OK)
			goto out;
		if (end < len && body[end] == '\r' && end + 1 < len && body[end + 1] == '\n')
			end++;
		pos = end + 1;
	}

	r = robots_new();
	if (!r) {
		rc = ROBOTS_ENOMEM;
		goto out;
	}
	struct rule_list *keep = st.found_specific ? &st.specific : &st.global;
	r->rules = keep->v;
	r->nrules = keep->n;
	keep->v = NULL;
	keep->n = keep->cap = 0;
	rules_sort_unique(r);
	rc = robots__compile(r);
	if (rc != ROBOTS_OK)
		goto out;
	r->crawl_delay = st.found_specific ? st.delay_specific : st.delay_global;
	r->sitemaps = st.sitemaps;
	r->nsitemaps = st.nsitemaps;
	st.sitemaps = NULL;
	st.nsitemaps = 0;
	shrink(r);
	*out = r;
	r = NULL;
out:
	robots_destroy(r);
	rules_free(&st.specific);
	rules_free(&st.global);
	ARRAY_FREE_EACH(st.sitemaps, st.nsitemaps);
	return rc;
}

double robots_crawl_delay(const struct robots *r)
{
	return r ? r->crawl_delay : -1;
}

size_t robots_sitemap_count(const struct robots *r)
{
	return r ? r->nsitemaps : 0;
}

const char *robots_sitemap(const struct robots *r, size_t i)
{
	return r && i < r->nsitemaps ? r->sitemaps[i] : NULL;
}

size_t robots_rule_count(const struct robots *r)
{
	return r ? r->nrules : 0;
}

/* ---- encoding: "RB1" deny_all u8, crawl-delay f64 bits u64, nrules u32,
 * {allow u8, len u32, pattern}, nsitemaps u32, {len u32, url}; integers
 * little-endian ---- */

struct enc {
	char *p;
	size_t len, cap;
	bool oom;
};

static void enc_raw(struct enc *e, const void *p, size_t n)
{
	if (e->oom)
		return;
	if (e->len + n > e->cap) {
		size_t ncap = e->cap ? e->cap : 256;
		while (ncap < e->len + n)
			ncap *= 2;
		char *np = realloc(e->p, ncap);
		if (!np) {
			e->oom = true;
			return;
		}
		e->p = np;
		e->cap = ncap;
	}
	memcpy(e->p + e->len, p, n);
	e->len += n;
}

static void enc_u64(struct enc *e, uint64_t v, unsigned bytes)
{
	uint8_t b[8];
	for (unsigned i = 0; i < bytes; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	enc_raw(e, b, bytes);
}

int robots_encode(const struct robots *r, char **out, size_t *len)
{
	struct enc e = { 0 };
	uint64_t bits;
	if (!r || !out || !len)
		return ROBOTS_EINVAL;
	memcpy(&bits, &r->crawl_delay, sizeof bits);
	enc_raw(&e, "RB1", 3);
	enc_u64(&e, r->deny_all, 1);
	enc_u64(&e, bits, 8);
	enc_u64(&e, r->nrules, 4);
	for (size_t i = 0; i < r->nrules; i++) {
		enc_u64(&e, r->rules[i].allow, 1);
		enc_u64(&e, r->rules[i].len, 4);
		enc_raw(&e, r->rules[i].pat, r->rules[i].len);
	}
	enc_u64(&e, r->nsitemaps, 4);
	for (size_t i = 0; i < r->nsitemaps; i++) {
		size_t n = strlen(r->sitemaps[i]);
		enc_u64(&e, n, 4);
		enc_raw(&e, r->sitemaps[i], n);
	}
	if (e.oom) {
		free(e.p);
		return ROBOTS_ENOMEM;
	}
	*out = e.p;
	*len = e.len;
	return ROBOTS_OK;
}

struct dec {
	const uint8_t *p;
	size_t left;
	bool bad;
};

static uint64_t dec_u64(struct dec *d, unsigned bytes)
{
	uint64_t v = 0;
	if (d->bad || d->left < bytes) {
		d->bad = true;
		return 0;
	}
	for (unsigned i = bytes; i-- > 0;)
		v = (v << 8) | d->p[i];
	d->p += bytes;
	d->left -= bytes;
	return v;
}

/* A NUL-terminated copy of the next n bytes, or NULL (malformed or OOM). */
static char *dec_str(struct dec *d, size_t n)
{
	if (d->bad || d->left < n || memchr(d->p, '\0', n) != NULL) {
		d->bad = true;
		return NULL;
	}
	char *s = malloc(n + 1);
	if (!s) {
		d->bad = true;
		return NULL;
	}
	memcpy(s, d->p, n);
	s[n] = '\0';
	d->p += n;
	d->left -= n;
	return s;
}

struct robots *robots_decode(const char *data, size_t len)
{
	struct dec d = { (const uint8_t *)data, len, false };
	struct robots *r;
	uint64_t bits, n;
	if (!data || len < 3 || memcmp(data, "RB1", 3) != 0)
		return NULL;
	d.p += 3;
	d.left -= 3;
	r = robots_new();
	if (!r)
		return NULL;
	r->deny_all = dec_u64(&d, 1) != 0;
	bits = dec_u64(&d, 8);
	memcpy(&r->crawl_delay, &bits, sizeof bits);
	if (isnan(r->crawl_delay))
		d.bad = true;
	else if (r->crawl_delay > ROBOTS_CRAWL_DELAY_MAX_S)
		r->crawl_delay = ROBOTS_CRAWL_DELAY_MAX_S;
	n = dec_u64(&d, 4);
	if (!d.bad && n > d.left / 5) /* each rule takes at least 5 bytes */
		d.bad = true;
	if (!d.bad && n > 0) {
		r->rules = calloc(n, sizeof *r->rules);
		d.bad = r->rules == NULL;
	}
	for (uint64_t i = 0; !d.bad && i < n; i++) {
		struct robots_rule *rule = &r->rules[i];
		rule->allow = dec_u64(&d, 1) != 0;
		rule->len = (uint32_t)dec_u64(&d, 4);
		rule->pat = dec_str(&d, rule->len);
		if (rule->pat)
			r->nrules = i + 1;
	}
	n = dec_u64(&d, 4);
	if (!d.bad && n > d.left / 4)
		d.bad = true;
	if (!d.bad && n > 0) {
		r->sitemaps = calloc(n, sizeof *r->sitemaps);
		d.bad = r->sitemaps == NULL;
	}
	for (uint64_t i = 0; !d.bad && i < n; i++) {
		uint64_t sl = dec_u64(&d, 4);
		r->sitemaps[i] = dec_str(&d, sl);
		if (r->sitemaps[i])
			r->nsitemaps = i + 1;
	}
	if (d.bad || d.left != 0 || robots__compile(r) != ROBOTS_OK) {
		robots_destroy(r);
		return NULL;
	}
	return r;
}

int robots_policy_from_fetch(int status, const char *body, size_t len, const char *user_agent,
                             int64_t now_ms, struct robots_policy *out)
{
	if (!out)
		return ROBOTS_EINVAL;
	out->robots = NULL;
	if (status >= 200 && status < 300) {
		out->source = ROBOTS_SRC_PARSED;
		out->expires_ms = now_ms + ROBOTS_TTL_MS;
		return robots_parse(body ? body : "", body ? len : 0, user_agent, &out->robots);
	}
	if ((status >= 300 && status < 400) || (status >= 400 && status < 500 && status != 429)) {
		out->source = ROBOTS_SRC_UNAVAILABLE;
		out->expires_ms = now_ms + ROBOTS_TTL_MS;
		out->robots = robots_create_allow_all();
	} else {
		out->source = ROBOTS_SRC_UNREACHABLE;
		out->expires_ms = now_ms + ROBOTS_RETRY_MS;
		out->robots = robots_create_disallow_all();
	}
	return out->robots ? ROBOTS_OK : ROBOTS_ENOMEM;
}
