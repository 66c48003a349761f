/*
 * audit.c: pass 1 of the audit (audit.h): the entity tables, the reorder
 * windows, judging gaps, the timeline, and streaming DIR/crawl.log.
 * audit_finish.c ends the pass and answers the queries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/audit_int.h"
#include "frontier/base/array.h"

const char *audit_strerror(enum audit_error err)
{
	switch (err) {
	case AUDIT_OK: return "ok";
	case AUDIT_ERR_NOMEM: return "out of memory";
	case AUDIT_ERR_IO: return "cannot read";
	case AUDIT_ERR_CONF: return "bad configuration";
	}
	return "unknown error";
}

/* ---- gaps ---- */

const int64_t audit_display_edges[AUDIT_DISPLAY_BINS - 1] = {
	0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000,
};
const char *const audit_display_labels[AUDIT_DISPLAY_BINS] = {
	"<0",     "0",      "1",        "2-4",      "5-9",     "10-19",
	"20-49",  "50-99",  "100-199",  "200-499",  "500-999", "1-1.9s",
	"2-4.9s", "5-9.9s", "10-29.9s", "30-59.9s", ">=60s",
};

unsigned audit_display_bin(int64_t gap)
{
	unsigned b = 0;
	while (b < AUDIT_DISPLAY_BINS - 1 && gap >= audit_display_edges[b])
		b++;
	return b;
}

static unsigned fine_bucket(int64_t v)
{
	if (v < 64)
		return (unsigned)v;
	if (v >= (1LL << 31))
		return AUDIT_FINE_BUCKETS - 1;
	unsigned o = 63u - (unsigned)__builtin_clzll((unsigned long long)v);
	return 64 + (o - 6) * 32 + (unsigned)((v >> (o - 5)) & 31);
}

double audit_fine_mid(unsigned b)
{
	if (b < 64)
		return b;
	unsigned o = 6 + (b - 64) / 32, sub = (b - 64) % 32;
	double lo = (double)((32ull + sub) << (o - 5));
	return lo + ((double)(1ull << (o - 5)) - 1) / 2;
}

static int gaps_add(struct audit_gaps *g, int64_t gap)
{
	if (!g->hist && g->n == g->cap && g->cap < AUDIT_EXACT_GAPS) {
		uint32_t cap = g->cap ? g->cap * 2 : 4;
		int32_t *x = realloc(g->exact, cap * sizeof *x);
		if (!x)
			return -1;
		g->exact = x;
		g->cap = cap;
	}
	if (!g->hist && g->n == AUDIT_EXACT_GAPS) {
		/* the list is full: the histogram takes over for good */
		g->hist = calloc(AUDIT_FINE_BUCKETS, sizeof *g->hist);
		if (!g->hist)
			return -1;
		for (uint32_t i = 0; i < g->n; i++) {
			if (g->exact[i] < 0) {
				g->neg++;
				g->neg_sum += g->exact[i];
			} else {
				g->hist[fine_bucket(g->exact[i])]++;
			}
		}
		free(g->exact);
		g->exact = NULL;
		g->cap = 0;
	}
	if (g->hist) {
		if (gap < 0) {
			g->neg++;
			g->neg_sum += gap;
		} else {
			g->hist[fine_bucket(gap)]++;
		}
	} else {
		g->exact[g->n] = gap > INT32_MAX   ? INT32_MAX
		                 : gap < INT32_MIN ? INT32_MIN
		                                   : (int32_t)gap;
	}
	g->n++;
	return 0;
}

static void gaps_free(struct audit_gaps *g)
{
	free(g->exact);
	free(g->hist);
}

struct audit *audit_create(const struct audit_config *cfg)
{
	struct audit *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->cfg = *cfg;
	a->hosts.window = AUDIT_HOST_WINDOW;
	a->ips.window = AUDIT_IP_WINDOW;
	a->scratch_cap = 3 * (size_t)AUDIT_MAX_LINE + 64;
	a->scratch = malloc(a->scratch_cap);
	if (!a->scratch) {
		free(a);
		return NULL;
	}
	a->sum.start_ms = INT64_MAX;
	a->sum.end_ms = INT64_MIN;
	/* One URL per visit under the fixed and adaptive policies: every gap is
	 * between two visits. Otherwise visits hold back-to-back requests the
	 * log cannot tell apart, and only overlaps are judged. */
	int one_per_visit = cfg->policy != DELAY_POLICY_RATIO && cfg->max_urls_per_visit <= 1;
	int64_t ipd = cfg->ip_politeness ? cfg->ip_delay_ms : 0;
	int64_t hd = cfg->policy == DELAY_POLICY_ADAPTIVE ? cfg->min_delay_ms : cfg->host_delay_ms;
	a->host_required = one_per_visit ? (hd > ipd ? hd : ipd) : 0;
	a->ip_required = cfg->ip_politeness ? cfg->ip_delay_ms : -1;
	return a;
}

/* Frees what one entity owns; its fields were zeroed when it was added,
 * so a half-made entity frees as well. */
static void entity_free(struct audit_entity *e)
{
	free(e->name);
	free(e->origin);
	free(e->win);
	gaps_free(&e->g);
	free(e->load);
}

static void table_free(struct audit_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		entity_free(&t->v[i]);
	free(t->v);
	free(t->slots);
	free(t->order);
}

void audit_destroy(struct audit *a)
{
	if (!a)
		return;
	table_free(&a->hosts);
	table_free(&a->ips);
	for (size_t i = 0; i < a->nviol; i++) {
		free(a->viol[i].url_prev);
		free(a->viol[i].url_next);
	}
	free(a->viol);
	free(a->want_lines);
	free(a->tl);
	free(a->series.pages_per_s); /* and the other series */
	for (int k = 0; k < 3; k++)
		free(a->pct_ends[k]);
	free(a->scratch);
	free(a);
}

/* ---- entity tables ---- */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	/* FNV's low bits depend only on the bytes' low bits: mix before masking */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static const char *entity_key(const struct audit_entity *e)
{
	return e->origin ? e->origin : e->name;
}

/* A slot: the key's hash's top 32 bits, then entity index + 1 (0: free).
 * The tag spares loading an entity for most keys that only share a slot. */
static uint64_t slot_of(uint64_t h, size_t k)
{
	return (h >> 32) << 32 | ((uint64_t)k + 1);
}

uint32_t audit_table_find(const struct audit_table *t, const char *key)
{
	if (!t->nslots)
		return UINT32_MAX;
	size_t mask = t->nslots - 1;
	uint64_t h = hash_str(key);
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		uint64_t s = t->slots[i];
		if (s == 0)
			return UINT32_MAX;
		uint32_t k = (uint32_t)s - 1;
		if ((s >> 32) == (h >> 32) && strcmp(entity_key(&t->v[k]), key) == 0)
			return k;
	}
}

static void slot_put(uint64_t *slots, size_t nslots, uint64_t h, size_t k)
{
	size_t i = h & (nslots - 1);
	while (slots[i])
		i = (i + 1) & (nslots - 1);
	slots[i] = slot_of(h, k);
}

static int table_rehash(struct audit_table *t, size_t nslots)
{
	uint64_t *slots = calloc(nslots, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t k = 0; k < t->n; k++)
		slot_put(slots, nslots, hash_str(entity_key(&t->v[k])), k);
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return 0;
}

/* Finds or adds the entity named name (key origin for hosts, NULL for IPs).
 * UINT32_MAX when out of memory. */
static uint32_t table_get(struct audit_table *t, const char *name, const char *origin)
{
	uint32_t k = audit_table_find(t, origin ? origin : name);
	if (k != UINT32_MAX)
		return k;
	if (t->n >= UINT32_MAX - 1)
		return UINT32_MAX;
	if ((t->n + 1) * 2 > t->nslots && table_rehash(t, t->nslots ? t->nslots * 2 : 64) != 0)
		return UINT32_MAX;
	struct audit_entity *v = array_grow(t->v, &t->cap, t->n, sizeof *v, 64);
	if (!v)
		return UINT32_MAX;
	t->v = v;
	struct audit_entity *e = &t->v[t->n];
	memset(e, 0, sizeof *e);
	e->name = strdup(name);
	e->origin = origin ? strdup(origin) : NULL;
	e->wcap = t->window;
	e->win = malloc(e->wcap * sizeof *e->win);
	if (!e->name || (origin && !e->origin) || !e->win) {
		entity_free(e);
		return UINT32_MAX;
	}
	e->ip = UINT32_MAX;
	e->first_start = INT64_MAX;
	e->last_end = INT64_MIN;
	e->after_retry_min_gap = INT64_MAX;
	slot_put(t->slots, t->nslots, hash_str(origin ? origin : name), t->n);
	return (uint32_t)t->n++;
}

/* ---- timeline ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Makes the seconds of [lo_ms, hi_ms] part of the timeline if the span
 * stays under AUDIT_TL_MAX_SECS (else they will be clamped). */
static int tl_reach(struct audit *a, int64_t lo_ms, int64_t hi_ms)
{
	int64_t lo = floor_div(lo_ms, 1000), hi = floor_div(hi_ms, 1000);
	if (!a->tl) {
		if (hi - lo + 121 > AUDIT_TL_MAX_SECS)
			hi = lo;
		size_t len = (size_t)(hi - lo + 121);
		a->tl = calloc(len < 1024 ? 1024 : len, sizeof *a->tl);
		if (!a->tl)
			return -1;
		a->tl_base = lo - 60;
		a->tl_len = len < 1024 ? 1024 : len;
		return 0;
	}
	int64_t end = a->tl_base + (int64_t)a->tl_len;
	int64_t nlo = lo < a->tl_base ? lo : a->tl_base, nhi = hi >= end ? hi + 1 : end;
	if (nhi - nlo > AUDIT_TL_MAX_SECS || (nlo == a->tl_base && nhi == end))
		return 0;
	int64_t front = nlo < a->tl_base ? a->tl_base - nlo + (int64_t)a->tl_len / 2 : 0;
	int64_t back = nhi > end ? nhi - end + (int64_t)a->tl_len : 0;
	if ((int64_t)a->tl_len + front + back > AUDIT_TL_MAX_SECS) {
		front = front ? a->tl_base - nlo : 0;
		back = back ? nhi - end : 0;
	}
	size_t len = a->tl_len + (size_t)front + (size_t)back;
	struct audit_tl_sec *tl = realloc(a->tl, len * sizeof *tl);
	if (!tl)
		return -1;
	memmove(tl + front, tl, a->tl_len * sizeof *tl);
	memset(tl, 0, (size_t)front * sizeof *tl);
	memset(tl + front + a->tl_len, 0, (size_t)back * sizeof *tl);
	a->tl = tl;
	a->tl_base -= front;
	a->tl_len = len;
	return 0;
}

size_t audit_tl_index(struct audit *a, int64_t ms)
{
	int64_t i = floor_div(ms, 1000) - a->tl_base;
	if (i < 0 || i >= (int64_t)a->tl_len) {
		a->tl_clamped++;
		return i < 0 ? 0 : a->tl_len - 1;
	}
	return (size_t)i;
}

void audit_tl_span(struct audit *a, int active, int64_t from, int64_t to)
{
	if (!a->tl)
		return;
	int64_t lo = a->tl_base * 1000, hi = (a->tl_base + (int64_t)a->tl_len) * 1000 - 1;
	from = from < lo ? lo : from;
	to = to > hi ? hi : to;
	if (to <= from)
		return;
	size_t ia = audit_tl_index(a, from), ib = audit_tl_index(a, to);
	struct audit_tl_sec *x = &a->tl[ia], *y = &a->tl[ib];
	if (ia == ib) {
		*(active ? &x->active_part : &x->busy_part) += to - from;
		return;
	}
	*(active ? &x->active_part : &x->busy_part) += (a->tl_base + (int64_t)ia + 1) * 1000 - from;
	*(active ? &y->active_part : &y->busy_part) += to - (a->tl_base + (int64_t)ib) * 1000;
	*(active ? &a->tl[ia + 1].active_diff : &a->tl[ia + 1].busy_diff) += 1;
	*(active ? &y->active_diff : &y->busy_diff) -= 1;
}

/* ---- judging ---- */

static int add_violation(struct audit *a, int ip, uint32_t entity, const struct audit_entity *e,
                         const struct audit_span *s, int64_t gap, int64_t required)
{
	a->sum.violations++;
	if (ip)
		a->sum.ip_violations++;
	else
		a->sum.host_violations++;
	if (a->nviol == AUDIT_MAX_VIOLATIONS)
		return 0;
	if (a->nviol == a->capviol) {
		size_t cap = a->capviol ? a->capviol * 2 : 64;
		struct audit_violation *v = realloc(a->viol, cap * sizeof *v);
		if (!v)
			return -1;
		a->viol = v;
		a->capviol = cap;
	}
	a->viol[a->nviol++] = (struct audit_violation){
		.ip = (uint8_t)ip,
		.entity = entity,
		.host_next = s->host,
		.gap = gap,
		.required = required,
		.at_ms = s->start,
		.line_prev = e->max_end_line,
		.line_next = s->line,
	};
	return 0;
}

/* The part of s after everything judged so far is busy time. */
static void add_busy(struct audit *a, int ip, struct audit_entity *e, const struct audit_span *s)
{
	int64_t from = e->judged_any && e->max_end > s->start ? e->max_end : s->start;
	if (s->end > from) {
		e->busy_ms += s->end - from;
		if (!ip)
			audit_tl_span(a, 0, from, s->end);
	}
	if (!e->judged_any || s->end > e->max_end) {
		e->max_end = s->end;
		e->max_end_line = s->line;
		e->max_end_host = s->host;
		e->max_end_retry = s->retry;
	}
}

/* Judges s, the next request of entity idx in start order. */
static int judge(struct audit *a, int ip, uint32_t idx, const struct audit_span *s)
{
	struct audit_entity *e = ip ? &a->ips.v[idx] : &a->hosts.v[idx];
	if (e->judged_any) {
		int64_t gap = s->start - e->max_end;
		if (gaps_add(&e->g, gap) != 0)
			return -1;
		unsigned b = audit_display_bin(gap);
		e->disp[b]++;
		(ip ? a->disp_ip : a->disp_host)[b]++;
		if (gap < 0)
			e->overlaps++;
		if (e->gaps++ == 0 || gap < e->min_gap) {
			e->min_gap = gap;
			e->min_gap_line = s->line;
		}
		if (!ip && e->max_end_retry && gap < e->after_retry_min_gap)
			e->after_retry_min_gap = gap;
		int64_t req =
		        ip ? (s->host != e->max_end_host ? a->ip_required : -1) : a->host_required;
		if (!ip && s->wait > req)
			req = s->wait; /* what the crawler itself owed the host */
		if (req >= 0 && gap < req - AUDIT_TOLERANCE_MS) {
			e->violations++;
			if (add_violation(a, ip, idx, e, s, gap, req) != 0)
				return -1;
		}
	}
	add_busy(a, ip, e, s);
	e->judged_any = 1;
	e->last_start = s->start;
	return 0;
}

/* Puts s in the entity's window, judging the oldest when it is full. A
 * late request doubles the window (up to 32 times its first size): the
 * log showed this entity's lines can be that far out of order. */
static int entity_add(struct audit *a, int ip, uint32_t idx, const struct audit_span *s)
{
	struct audit_table *t = ip ? &a->ips : &a->hosts;
	struct audit_entity *e = &t->v[idx];
	if (e->judged_any && s->start < e->last_start) {
		/* older than a request already judged: its gaps are lost */
		e->late++;
		if (!ip)
			a->sum.late++;
		add_busy(a, ip, e, s);
		if (e->wcap < 32 * t->window) {
			struct audit_span *w = realloc(e->win, 2 * e->wcap * sizeof *w);
			if (!w)
				return -1;
			e->win = w;
			e->wcap *= 2;
		}
		return 0;
	}
	if (e->nwin == e->wcap) {
		if (s->start < e->win[0].start) /* s is the oldest: judge it now */
			return judge(a, ip, idx, s);
		if (judge(a, ip, idx, &e->win[0]) != 0)
			return -1;
		memmove(e->win, e->win + 1, (e->nwin - 1) * sizeof *e->win);
		e->nwin--;
	}
	uint32_t i = e->nwin;
	while (i > 0 && e->win[i - 1].start > s->start)
		i--;
	memmove(e->win + i + 1, e->win + i, (e->nwin - i) * sizeof *e->win);
	e->win[i] = *s;
	e->nwin++;
	return 0;
}

int audit_flush_windows(struct audit *a)
{
	for (int ip = 0; ip < 2; ip++) {
		struct audit_table *t = ip ? &a->ips : &a->hosts;
		for (size_t k = 0; k < t->n; k++) {
			struct audit_entity *e = &t->v[k];
			for (uint32_t i = 0; i < e->nwin; i++)
				if (judge(a, ip, (uint32_t)k, &e->win[i]) != 0)
					return -1;
			e->nwin = 0;
			free(e->win);
			e->win = NULL;
		}
	}
	return 0;
}

/* ---- feeding ---- */

void audit_malformed(struct audit *a, uint64_t lineno, const char *why, FILE *errs)
{
	a->sum.lines++;
	a->sum.malformed++;
	if (errs && a->messages++ < AUDIT_MAX_MESSAGES)
		fprintf(errs, "crawler audit: crawl.log:%llu: %s; line skipped\n",
		        (unsigned long long)lineno, why);
}

static void entity_count(struct audit_entity *e, const struct audit_rec *r)
{
	e->requests++;
	e->robots += r->robots ? 1 : 0;
	e->bytes += r->bytes;
	e->retry_statuses += r->status == 429 || r->status == 503;
	if (r->start_ms < e->first_start)
		e->first_start = r->start_ms;
	if (r->end_ms > e->last_end)
		e->last_end = r->end_ms;
}

enum audit_error audit_feed(struct audit *a, const char *line, size_t len, uint64_t lineno,
                            FILE *errs)
{
	struct audit_rec r;
	if (len > 0 && line[0] == '#')
		return AUDIT_OK;
	const char *why = len > AUDIT_MAX_LINE
	                          ? "line over 1 MiB"
	                          : audit_parse_line(line, len, &r, a->scratch, a->scratch_cap);
	if (why) {
		audit_malformed(a, lineno, why, errs);
		return AUDIT_OK;
	}
	uint32_t h = table_get(&a->hosts, r.name, r.origin);
	uint32_t ip = r.ip ? table_get(&a->ips, r.ip, NULL) : UINT32_MAX;
	if (h == UINT32_MAX || (r.ip && ip == UINT32_MAX) || tl_reach(a, r.start_ms, r.end_ms) != 0)
		return AUDIT_ERR_NOMEM;
	if (floor_div(r.start_ms, 1000) < a->tl_base ||
	    floor_div(r.end_ms, 1000) >= a->tl_base + (int64_t)a->tl_len)
		a->tl_outside++;
	a->sum.lines++;
	a->sum.requests++;
	a->sum.robots += r.robots ? 1 : 0;
	a->sum.pages += r.robots ? 0 : 1;
	a->sum.bytes += r.bytes;
	if (r.start_ms < a->sum.start_ms)
		a->sum.start_ms = r.start_ms;
	if (r.end_ms > a->sum.end_ms)
		a->sum.end_ms = r.end_ms;
	struct audit_tl_sec *sec = &a->tl[audit_tl_index(a, r.end_ms)];
	sec->pages += r.robots ? 0 : 1;
	sec->bytes += r.bytes;
	a->tl[audit_tl_index(a, r.start_ms)].requests++;
	struct audit_entity *he = &a->hosts.v[h];
	entity_count(he, &r);
	if (ip != UINT32_MAX) {
		if (he->ip == UINT32_MAX)
			he->ip = ip;
		entity_count(&a->ips.v[ip], &r);
	}
	struct audit_span s = {
		.start = r.start_ms,
		.end = r.end_ms,
		.line = lineno,
		.host = h,
		.retry = r.status == 429 || r.status == 503,
		.wait = r.wait_ms,
	};
	a->sum.wait_lines += r.wait_ms >= 0;
	if (entity_add(a, 0, h, &s) != 0 || (ip != UINT32_MAX && entity_add(a, 1, ip, &s) != 0))
		return AUDIT_ERR_NOMEM;
	return AUDIT_OK;
}

/* ---- the folder ---- */

typedef enum audit_error (*line_fn)(struct audit *a, const char *line, size_t len, int too_long,
                                    uint64_t lineno, FILE *errs);

/* Streams the lines of path (at most *limit bytes when limit is nonzero);
 * sets *limit to the bytes up to the last newline. A last line without a
 * newline is not passed on (pass 1 names it). */
static enum audit_error stream_lines(struct audit *a, const char *path, uint64_t *limit, line_fn fn,
                                     FILE *errs)
{
	enum audit_error rc = AUDIT_OK;
	char *line = malloc(AUDIT_MAX_LINE + 1), *chunk = malloc(1u << 16);
	FILE *f = fopen(path, "rb");
	uint64_t lineno = 0, consumed = 0, whole = 0, max = *limit;
	size_t n = 0, got;
	int too_long = 0;
	if (!line || !chunk) {
		rc = AUDIT_ERR_NOMEM;
		goto out;
	}
	if (!f) {
		rc = AUDIT_ERR_IO;
		goto out;
	}
	while (rc == AUDIT_OK && (got = fread(chunk, 1, 1u << 16, f)) > 0) {
		if (max && consumed + got > max)
			got = (size_t)(max - consumed);
		for (size_t i = 0; i < got && rc == AUDIT_OK;) {
			char *nl = memchr(chunk + i, '\n', got - i);
			size_t take = nl ? (size_t)(nl - (chunk + i)) : got - i;
			if (n + take > AUDIT_MAX_LINE)
				too_long = 1;
			else
				memcpy(line + n, chunk + i, take);
			n += too_long ? 0 : take;
			i += take;
			if (!nl)
				break;
			i++;
			rc = fn(a, line, n, too_long, ++lineno, errs);
			whole = consumed + i;
			n = 0;
			too_long = 0;
		}
		consumed += got;
		if (max && consumed >= max)
			break;
	}
	if (rc == AUDIT_OK && ferror(f))
		rc = AUDIT_ERR_IO;
	if (rc == AUDIT_OK && !max && (n > 0 || too_long))
		audit_malformed(a, lineno + 1, "last line without newline (cut, or still written)",
		                errs);
	*limit = whole;
out:
	if (f)
		fclose(f);
	free(line);
	free(chunk);
	return rc;
}

static enum audit_error pass1(struct audit *a, const char *line, size_t len, int too_long,
                              uint64_t lineno, FILE *errs)
{
	if (too_long) {
		audit_malformed(a, lineno, "line over 1 MiB", errs);
		return AUDIT_OK;
	}
	return audit_feed(a, line, len, lineno, errs);
}

static enum audit_error pass2(struct audit *a, const char *line, size_t len, int too_long,
                              uint64_t lineno, FILE *errs)
{
	(void)errs;
	if (!too_long)
		audit_feed2(a, line, len, lineno);
	return AUDIT_OK;
}

enum audit_error audit_load_dir(const char *dir, struct audit **out, FILE *errs)
{
	struct audit_config cfg;
	char path[4200], err[4400];
	enum audit_error rc;
	*out = NULL;
	audit_config_default(&cfg);
	snprintf(path, sizeof path, "%s/crawl.conf", dir);
	rc = audit_config_load(&cfg, path, err, sizeof err);
	if (rc == AUDIT_ERR_CONF) {
		fprintf(errs, "crawler audit: %s\n", err);
		return rc;
	}
	if (rc != AUDIT_OK)
		fprintf(errs, "crawler audit: %s: judging against the crawler's default delays\n",
		        err);
	struct audit *a = audit_create(&cfg);
	if (!a)
		return AUDIT_ERR_NOMEM;
	snprintf(a->dir, sizeof a->dir, "%s", dir);
	snprintf(path, sizeof path, "%s/crawl.log", dir);
	uint64_t size = 0;
	rc = stream_lines(a, path, &size, pass1, errs);
	if (rc == AUDIT_ERR_IO)
		fprintf(errs, "crawler audit: %s: %s\n", path, strerror(errno));
	if (rc == AUDIT_OK)
		rc = audit_finish(a);
	if (rc == AUDIT_OK && size > 0)
		rc = stream_lines(a, path, &size, pass2, errs);
	if (rc != AUDIT_OK) {
		audit_destroy(a);
		return rc;
	}
	if (a->sum.malformed > AUDIT_MAX_MESSAGES)
		fprintf(errs, "crawler audit: %llu malformed lines in all, skipped\n",
		        (unsigned long long)a->sum.malformed);
	snprintf(path, sizeof path, "%s/stats.json", dir);
	audit_stats_read(a, path);
	*out = a;
	return AUDIT_OK;
}
