/*
 * Server models: the rule parser, per-host resolution and interning, and
 * the per-host arrival bookkeeping (see models.h).
 */
#include "tests/testweb/models.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 64
#define MAX_LINE 4096
#define MAX_FILE (1u << 20)
#define MAX_DURATION_US 3600000000.0 /* one hour */
#define MAX_RATE 1e12
#define MAX_CAPACITY 1000000
#define MAX_RETRY_AFTER 86400
#define SECOND_US 1000000u

/* Which settings a rule sets. */
enum {
	SET_LATENCY = 1,
	SET_BANDWIDTH = 2,
	SET_CAPACITY = 4,
	SET_OVER = 8,
	SET_RETRY = 16,
};

enum selector { SEL_ALL, SEL_RANGE, SEL_GLOB };

struct rule {
	enum selector sel;
	long lo, hi;  /* SEL_RANGE */
	char *glob;   /* SEL_GLOB, lowercase, owned */
	char *source; /* owned */
	int line;
	uint64_t after_us;
	unsigned set;
	struct tw_model_phase val; /* fields named by set */
};

/* Per-host state; a page of TW_MODEL_PAGE of them is allocated at once. */
struct host_state {
	uint32_t model;     /* 1 + index into interned, 0 = unresolved */
	uint32_t in_flight; /* admitted requests not yet departed */
	uint64_t first_us;  /* first arrival */
	uint64_t rng;       /* latency stream */
	uint64_t *arrivals; /* ring of arrival times of the last second */
	uint32_t head, count, cap;
	int seen;
};

struct tw_models {
	struct rule *rules;
	size_t nrules, rules_cap;
	char domain[256];
	long hosts;
	uint64_t seed;
	struct host_state **pages; /* (hosts + PAGE - 1) / PAGE pointers */
	size_t npages;
	struct tw_model *interned;
	size_t ninterned, interned_cap;
	uint64_t offsets[TW_MODEL_PHASES - 1]; /* distinct 'after' offsets */
	size_t noffsets;
};

struct tw_models *tw_models_create(void)
{
	return calloc(1, sizeof(struct tw_models));
}

static void rule_clear(struct rule *r)
{
	free(r->glob);
	free(r->source);
}

void tw_models_destroy(struct tw_models *m)
{
	if (m == NULL)
		return;
	for (size_t k = 0; k < m->nrules; k++)
		rule_clear(&m->rules[k]);
	free(m->rules);
	for (size_t p = 0; p < m->npages; p++) {
		if (m->pages[p] == NULL)
			continue;
		for (size_t k = 0; k < TW_MODEL_PAGE; k++)
			free(m->pages[p][k].arrivals);
		free(m->pages[p]);
	}
	free(m->pages);
	free(m->interned);
	free(m);
}

/* ---------- parsing ---------- */

struct parse_ctx {
	const char *source;
	int line;
	char *err;
	size_t errcap;
};

static int fail(const struct parse_ctx *pc, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(pc->err, pc->errcap, "%s:%d: ", pc->source, pc->line);
	if (n >= 0 && (size_t)n < pc->errcap) {
		va_start(ap, fmt);
		vsnprintf(pc->err + n, pc->errcap - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A non-negative decimal number (digits with an optional fraction) at the
 * start of s; returns the rest (the unit) or NULL. */
static const char *parse_number(const char *s, double *v)
{
	if (!isdigit((unsigned char)s[0]))
		return NULL;
	char *end = NULL;
	errno = 0;
	*v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(*v))
		return NULL;
	return end;
}

static int parse_duration(const struct parse_ctx *pc, const char *w, double *us)
{
	double v = 0;
	const char *unit = parse_number(w, &v);
	if (unit == NULL)
		return fail(pc, "bad duration '%s' (want e.g. 50ms, 1.5s, 800us)", w);
	if (strcmp(unit, "us") == 0)
		*us = v;
	else if (strcmp(unit, "ms") == 0)
		*us = v * 1e3;
	else if (strcmp(unit, "s") == 0)
		*us = v * 1e6;
	else if (*unit == '\0')
		return fail(pc, "duration '%s' needs a unit: us, ms or s", w);
	else
		return fail(pc, "bad unit in duration '%s' (us, ms or s)", w);
	if (*us > MAX_DURATION_US)
		return fail(pc, "duration '%s' above one hour", w);
	return 0;
}

static int parse_rate(const struct parse_ctx *pc, const char *w, uint64_t *out)
{
	static const struct {
		const char *unit;
		double mult;
	} units[] = { { "", 1 },     { "B", 1 },           { "KB", 1e3 }, { "KiB", 1024 },
		      { "MB", 1e6 }, { "MiB", 1048576.0 }, { "GB", 1e9 }, { "GiB", 1073741824.0 } };
	if (strcmp(w, "unlimited") == 0) {
		*out = 0;
		return 0;
	}
	double v = 0;
	const char *unit = parse_number(w, &v);
	if (unit == NULL)
		return fail(pc, "bad rate '%s' (want e.g. 100KB, 1MiB/s or unlimited)", w);
	char u[8];
	size_t ul = strlen(unit);
	if (ul >= 2 && strcmp(unit + ul - 2, "/s") == 0)
		ul -= 2;
	if (ul >= sizeof u)
		return fail(pc, "bad unit in rate '%s' (B, KB, KiB, MB, MiB, GB, GiB)", w);
	memcpy(u, unit, ul);
	u[ul] = '\0';
	for (size_t k = 0; k < sizeof units / sizeof *units; k++) {
		if (strcmp(u, units[k].unit) != 0)
			continue;
		double r = v * units[k].mult;
		if (r < 1 || r > MAX_RATE)
			return fail(pc, "rate '%s' out of range (1 B/s .. 1 TB/s)", w);
		*out = (uint64_t)r;
		return 0;
	}
	return fail(pc, "bad unit in rate '%s' (B, KB, KiB, MB, MiB, GB, GiB)", w);
}

static int parse_uint(const struct parse_ctx *pc, const char *what, const char *w, long max,
                      uint32_t *out)
{
	char *end = NULL;
	errno = 0;
	long v = isdigit((unsigned char)w[0]) ? strtol(w, &end, 10) : -1;
	if (v < 0 || errno != 0 || *end != '\0' || v > max)
		return fail(pc, "bad %s '%s' (an integer 0..%ld)", what, w, max);
	*out = (uint32_t)v;
	return 0;
}

/* "hN" with N a decimal without leading zeros; -1 if w is not that. */
static long host_index(const char *w, size_t n)
{
	if (n < 2 || w[0] != 'h' || (w[1] == '0' && n > 2) || n > 12)
		return -1;
	long v = 0;
	for (size_t k = 1; k < n; k++) {
		if (!isdigit((unsigned char)w[k]))
			return -1;
		v = v * 10 + (w[k] - '0');
	}
	return v;
}

static int parse_selector(const struct parse_ctx *pc, const char *w, struct rule *r)
{
	const char *dash = strchr(w, '-');
	long a = host_index(w, strlen(w));
	if (strcmp(w, "*") == 0) {
		r->sel = SEL_ALL;
		return 0;
	}
	if (a >= 0) {
		r->sel = SEL_RANGE;
		r->lo = r->hi = a;
		return 0;
	}
	if (dash != NULL && (a = host_index(w, (size_t)(dash - w))) >= 0) {
		long b = host_index(dash + 1, strlen(dash + 1));
		if (b < a)
			return fail(pc, "bad host range '%s' (want hA-hB with A <= B)", w);
		r->sel = SEL_RANGE;
		r->lo = a;
		r->hi = b;
		return 0;
	}
	if (strpbrk(w, ".*?[") == NULL)
		return fail(pc, "bad selector '%s' (want *, hI, hA-hB or a host-name pattern)", w);
	r->sel = SEL_GLOB;
	r->glob = strdup(w);
	if (r->glob == NULL)
		return fail(pc, "out of memory");
	for (char *p = r->glob; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return 0;
}

static int parse_latency(const struct parse_ctx *pc, char **w, int nw, int *k, struct rule *r)
{
	static const struct {
		const char *name;
		enum tw_latency_dist dist;
		int nargs;
	} dists[] = { { "fixed", TW_LAT_FIXED, 1 },
		      { "uniform", TW_LAT_UNIFORM, 2 },
		      { "normal", TW_LAT_NORMAL, 2 },
		      { "lognormal", TW_LAT_LOGNORMAL, 2 },
		      { "exponential", TW_LAT_EXPONENTIAL, 1 } };
	if (*k >= nw)
		return fail(pc, "latency needs a distribution (fixed, uniform, normal, "
		                "lognormal, exponential)");
	for (size_t d = 0; d < sizeof dists / sizeof *dists; d++) {
		if (strcmp(w[*k], dists[d].name) != 0)
			continue;
		if (*k + dists[d].nargs >= nw)
			return fail(pc, "latency %s needs %d duration%s", dists[d].name,
			            dists[d].nargs, dists[d].nargs > 1 ? "s" : "");
		double a = 0, b = 0;
		if (parse_duration(pc, w[*k + 1], &a) != 0)
			return -1;
		if (dists[d].nargs > 1 && parse_duration(pc, w[*k + 2], &b) != 0)
			return -1;
		if (dists[d].dist == TW_LAT_UNIFORM && b < a)
			return fail(pc, "latency uniform %s %s: the bounds are reversed", w[*k + 1],
			            w[*k + 2]);
		if (dists[d].dist == TW_LAT_LOGNORMAL && a <= 0)
			return fail(pc, "latency lognormal needs a mean above 0");
		r->val.dist = dists[d].dist;
		r->val.lat_a_us = a;
		r->val.lat_b_us = b;
		r->set |= SET_LATENCY;
		*k += 1 + dists[d].nargs;
		return 0;
	}
	return fail(pc,
	            "unknown latency distribution '%s' (fixed, uniform, normal, lognormal, "
	            "exponential)",
	            w[*k]);
}

/* The setting at word *k (advanced past it). */
static int parse_setting(const struct parse_ctx *pc, char **w, int nw, int *k, struct rule *r)
{
	const char *key = w[(*k)++];
	if (strcmp(key, "latency") == 0)
		return parse_latency(pc, w, nw, k, r);
	if (strcmp(key, "bandwidth") != 0 && strcmp(key, "capacity") != 0 &&
	    strcmp(key, "over") != 0 && strcmp(key, "retry-after") != 0)
		return fail(pc,
		            "unknown setting '%s' (latency, bandwidth, capacity, over, "
		            "retry-after)",
		            key);
	if (*k >= nw)
		return fail(pc, "'%s' needs a value", key);
	const char *v = w[(*k)++];
	if (strcmp(key, "bandwidth") == 0) {
		r->set |= SET_BANDWIDTH;
		return parse_rate(pc, v, &r->val.bandwidth);
	}
	if (strcmp(key, "capacity") == 0) {
		r->set |= SET_CAPACITY;
		return parse_uint(pc, "capacity", v, MAX_CAPACITY, &r->val.capacity);
	}
	if (strcmp(key, "retry-after") == 0) {
		r->set |= SET_RETRY;
		return parse_uint(pc, "retry-after", v, MAX_RETRY_AFTER, &r->val.retry_after);
	}
	if (strcmp(v, "429") != 0 && strcmp(v, "503") != 0)
		return fail(pc, "over '%s': want 429 or 503", v);
	r->set |= SET_OVER;
	r->val.over_status = v[0] == '4' ? 429 : 503;
	return 0;
}

/* Records the rule's 'after' offset among the distinct ones; -1 if that
 * makes more phases than a model holds. */
static int offset_note(struct tw_models *m, uint64_t after_us)
{
	if (after_us == 0)
		return 0;
	for (size_t k = 0; k < m->noffsets; k++)
		if (m->offsets[k] == after_us)
			return 0;
	if (m->noffsets == TW_MODEL_PHASES - 1)
		return -1;
	m->offsets[m->noffsets++] = after_us;
	return 0;
}

static int rule_push(struct tw_models *m, const struct rule *r)
{
	if (m->nrules == m->rules_cap) {
		size_t cap = m->rules_cap ? m->rules_cap * 2 : 16;
		struct rule *nr = realloc(m->rules, cap * sizeof *nr);
		if (nr == NULL)
			return -1;
		m->rules = nr;
		m->rules_cap = cap;
	}
	m->rules[m->nrules++] = *r;
	return 0;
}

/* Parses one line (NUL-terminated, comment already cut) into m. */
static int parse_line(struct tw_models *m, const struct parse_ctx *pc, char *line)
{
	char *w[MAX_WORDS];
	int nw = 0;
	for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r", &save)) {
		if (nw == MAX_WORDS)
			return fail(pc, "more than %d words", MAX_WORDS);
		w[nw++] = t;
	}
	if (nw == 0)
		return 0;
	struct rule r;
	memset(&r, 0, sizeof r);
	r.line = pc->line;
	int k = 1;
	if (parse_selector(pc, w[0], &r) != 0)
		goto fail;
	if (nw > 1 && strcmp(w[1], "after") == 0) {
		double us = 0;
		if (nw < 3) {
			fail(pc, "'after' needs a duration");
			goto fail;
		}
		if (parse_duration(pc, w[2], &us) != 0)
			goto fail;
		r.after_us = (uint64_t)us;
		k = 3;
	}
	while (k < nw || r.set == 0) {
		if (k >= nw) {
			fail(pc, "no setting (latency, bandwidth, capacity, over, retry-after)");
			goto fail;
		}
		if (parse_setting(pc, w, nw, &k, &r) != 0)
			goto fail;
	}
	if (offset_note(m, r.after_us) != 0) {
		fail(pc, "more than %d distinct 'after' offsets", TW_MODEL_PHASES - 1);
		goto fail;
	}
	r.source = strdup(pc->source);
	if (r.source == NULL || rule_push(m, &r) != 0) {
		fail(pc, "out of memory");
		goto fail;
	}
	return 0;
fail:
	rule_clear(&r);
	return -1;
}

int tw_models_parse(struct tw_models *m, const char *text, size_t len, const char *source,
                    int first_line, char *err, size_t errcap)
{
	struct parse_ctx pc = { source, first_line, err, errcap };
	size_t keep = m->nrules, keep_offsets = m->noffsets;
	char line[MAX_LINE + 1];
	size_t pos = 0;
	while (pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - (text + pos)) : len - pos;
		if (ll > MAX_LINE) {
			fail(&pc, "line longer than %d bytes", MAX_LINE);
			goto fail;
		}
		memcpy(line, text + pos, ll);
		line[ll] = '\0';
		if (strlen(line) != ll) {
			fail(&pc, "NUL byte in line");
			goto fail;
		}
		char *hash = strchr(line, '#');
		if (hash != NULL)
			*hash = '\0';
		if (parse_line(m, &pc, line) != 0)
			goto fail;
		pos += ll + 1;
		pc.line++;
	}
	return 0;
fail:
	while (m->nrules > keep)
		rule_clear(&m->rules[--m->nrules]);
	m->noffsets = keep_offsets;
	return -1;
}

int tw_models_load(struct tw_models *m, const char *path, char *err, size_t errcap)
{
	int rc = -1;
	char *buf = NULL;
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		snprintf(err, errcap, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = malloc(MAX_FILE + 1);
	if (buf == NULL) {
		snprintf(err, errcap, "%s: out of memory", path);
		goto out;
	}
	size_t n = fread(buf, 1, MAX_FILE + 1, f);
	if (ferror(f)) {
		snprintf(err, errcap, "%s: read error", path);
		goto out;
	}
	if (n > MAX_FILE) {
		snprintf(err, errcap, "%s: larger than %u bytes", path, MAX_FILE);
		goto out;
	}
	rc = tw_models_parse(m, buf, n, path, 1, err, errcap);
out:
	free(buf);
	fclose(f);
	return rc;
}

int tw_models_bind(struct tw_models *m, const char *domain, long hosts, uint64_t seed, char *err,
                   size_t errcap)
{
	for (size_t k = 0; k < m->nrules; k++) {
		const struct rule *r = &m->rules[k];
		if (r->sel == SEL_RANGE && r->hi >= hosts) {
			snprintf(err, errcap, "%s:%d: host h%ld beyond --hosts %ld", r->source,
			         r->line, r->hi, hosts);
			return -1;
		}
	}
	if (strlen(domain) >= sizeof m->domain || hosts < 1) {
		snprintf(err, errcap, "bad domain or host count");
		return -1;
	}
	snprintf(m->domain, sizeof m->domain, "%s", domain);
	m->hosts = hosts;
	m->seed = seed;
	m->npages = ((size_t)hosts + TW_MODEL_PAGE - 1) / TW_MODEL_PAGE;
	free(m->pages);
	m->pages = calloc(m->npages, sizeof *m->pages);
	if (m->pages == NULL) {
		m->npages = 0;
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	return 0;
}

/* ---------- resolution ---------- */

static int rule_matches(const struct rule *r, long host, const char *name)
{
	switch (r->sel) {
	case SEL_ALL: return 1;
	case SEL_RANGE: return host >= r->lo && host <= r->hi;
	case SEL_GLOB: return fnmatch(r->glob, name, 0) == 0;
	}
	return 0;
}

static void rule_apply(const struct rule *r, struct tw_model_phase *p)
{
	if (r->set & SET_LATENCY) {
		p->dist = r->val.dist;
		p->lat_a_us = r->val.lat_a_us;
		p->lat_b_us = r->val.lat_b_us;
	}
	if (r->set & SET_BANDWIDTH)
		p->bandwidth = r->val.bandwidth;
	if (r->set & SET_CAPACITY)
		p->capacity = r->val.capacity;
	if (r->set & SET_OVER)
		p->over_status = r->val.over_status;
	if (r->set & SET_RETRY)
		p->retry_after = r->val.retry_after;
}

/* Applies the rules of offset at that match host, in text order. */
static void apply_matching(const struct tw_models *m, long host, const char *name, uint64_t at,
                           struct tw_model_phase *p)
{
	for (size_t k = 0; k < m->nrules; k++) {
		const struct rule *r = &m->rules[k];
		if (r->after_us == at && rule_matches(r, host, name))
			rule_apply(r, p);
	}
}

/* Builds host's model into *out (zeroed first, so equal models are equal
 * bytes and can be interned with memcmp). */
static void model_build(const struct tw_models *m, long host, struct tw_model *out)
{
	char name[300];
	snprintf(name, sizeof name, "h%ld.%s", host, m->domain);
	memset(out, 0, sizeof *out);
	out->nphases = 1;
	out->phase[0].over_status = 429;
	out->phase[0].retry_after = 1;
	apply_matching(m, host, name, 0, &out->phase[0]);
	uint64_t at = 0;
	for (;;) {
		/* The next offset above at named by a matching rule. */
		uint64_t next = UINT64_MAX;
		for (size_t k = 0; k < m->nrules; k++) {
			const struct rule *r = &m->rules[k];
			if (r->after_us > at && r->after_us < next && rule_matches(r, host, name))
				next = r->after_us;
		}
		/* offset_note() keeps the distinct offsets below TW_MODEL_PHASES. */
		if (next == UINT64_MAX || out->nphases == TW_MODEL_PHASES)
			break;
		struct tw_model_phase *p = &out->phase[out->nphases];
		*p = out->phase[out->nphases - 1];
		out->nphases++;
		p->after_us = next;
		apply_matching(m, host, name, next, p);
		at = next;
	}
}

static struct host_state *host_state(struct tw_models *m, long host)
{
	size_t pg = (size_t)host / TW_MODEL_PAGE;
	if (host < 0 || host >= m->hosts)
		return NULL;
	if (m->pages[pg] == NULL) {
		m->pages[pg] = calloc(TW_MODEL_PAGE, sizeof **m->pages);
		if (m->pages[pg] == NULL)
			return NULL;
	}
	return &m->pages[pg][(size_t)host % TW_MODEL_PAGE];
}

/* Index + 1 of host's interned model; 0 if out of memory. */
static uint32_t model_intern(struct tw_models *m, long host)
{
	struct tw_model built;
	model_build(m, host, &built);
	for (size_t k = 0; k < m->ninterned; k++)
		if (memcmp(&m->interned[k], &built, sizeof built) == 0)
			return (uint32_t)k + 1;
	if (m->ninterned == m->interned_cap) {
		size_t cap = m->interned_cap ? m->interned_cap * 2 : 8;
		struct tw_model *ni = realloc(m->interned, cap * sizeof *ni);
		if (ni == NULL)
			return 0;
		m->interned = ni;
		m->interned_cap = cap;
	}
	m->interned[m->ninterned++] = built;
	return (uint32_t)m->ninterned;
}

static struct host_state *host_resolved(struct tw_models *m, long host)
{
	struct host_state *hs = host_state(m, host);
	if (hs != NULL && hs->model == 0)
		hs->model = model_intern(m, host);
	return hs != NULL && hs->model != 0 ? hs : NULL;
}

const struct tw_model *tw_models_resolve(struct tw_models *m, long host)
{
	struct host_state *hs = host_resolved(m, host);
	return hs != NULL ? &m->interned[hs->model - 1] : NULL;
}

/* ---------- arrivals ---------- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double unit_open(uint64_t *rng)
{
	return ((double)(splitmix64(rng) >> 11) + 0.5) / 9007199254740992.0;
}

static double std_normal(uint64_t *rng)
{
	double u1 = unit_open(rng), u2 = unit_open(rng);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t tw_model_latency_sample(const struct tw_model_phase *p, uint64_t *rng)
{
	double a = p->lat_a_us, b = p->lat_b_us, v = a;
	switch (p->dist) {
	case TW_LAT_FIXED: v = a; break;
	case TW_LAT_UNIFORM: v = a + (b - a) * unit_open(rng); break;
	case TW_LAT_NORMAL: v = a + b * std_normal(rng); break;
	case TW_LAT_LOGNORMAL: {
		/* mu and sigma of the underlying normal from the mean and sd. */
		double s2 = log(1.0 + (b * b) / (a * a));
		v = exp(log(a) - s2 / 2 + sqrt(s2) * std_normal(rng));
		break;
	}
	case TW_LAT_EXPONENTIAL: v = -a * log(unit_open(rng)); break;
	}
	if (!(v > 0))
		return 0;
	if (v > MAX_DURATION_US)
		v = MAX_DURATION_US;
	return (uint64_t)(v + 0.5);
}

/* Drops arrivals older than one second, appends now; -1 if out of memory. */
static int arrivals_note(struct host_state *hs, uint64_t now_us)
{
	while (hs->count > 0 && hs->arrivals[hs->head] + SECOND_US <= now_us) {
		hs->head = (hs->head + 1) % hs->cap;
		hs->count--;
	}
	if (hs->count == hs->cap) {
		uint32_t cap = hs->cap ? hs->cap * 2 : 8;
		uint64_t *na = malloc(cap * sizeof *na);
		if (na == NULL || cap < hs->cap) {
			free(na);
			return -1;
		}
		for (uint32_t k = 0; k < hs->count; k++)
			na[k] = hs->arrivals[(hs->head + k) % hs->cap];
		free(hs->arrivals);
		hs->arrivals = na;
		hs->head = 0;
		hs->cap = cap;
	}
	hs->arrivals[(hs->head + hs->count) % hs->cap] = now_us;
	hs->count++;
	return 0;
}

int tw_models_arrive(struct tw_models *m, long host, uint64_t now_us, int observe_only,
                     struct tw_arrival *a)
{
	struct host_state *hs = host_resolved(m, host);
	memset(a, 0, sizeof *a);
	if (hs == NULL || arrivals_note(hs, now_us) != 0)
		return -1;
	if (!hs->seen) {
		hs->seen = 1;
		hs->first_us = now_us;
		hs->rng = m->seed ^ ((uint64_t)host * 0xd1342543de82ef95ULL);
		(void)splitmix64(&hs->rng);
	}
	a->in_flight = hs->in_flight;
	a->rate_1s = hs->count;
	if (observe_only) {
		hs->in_flight++;
		return 0;
	}
	const struct tw_model *md = &m->interned[hs->model - 1];
	const struct tw_model_phase *p = &md->phase[0];
	for (unsigned k = 1; k < md->nphases; k++)
		if (now_us - hs->first_us >= md->phase[k].after_us)
			p = &md->phase[k];
	if (p->capacity > 0 && hs->in_flight >= p->capacity) {
		a->reject_status = p->over_status;
		a->retry_after = p->retry_after;
		return 0;
	}
	hs->in_flight++;
	a->delay_us = tw_model_latency_sample(p, &hs->rng);
	a->bandwidth = p->bandwidth;
	return 0;
}

void tw_models_depart(struct tw_models *m, long host)
{
	struct host_state *hs = host_state(m, host);
	if (hs != NULL && hs->in_flight > 0)
		hs->in_flight--;
}
