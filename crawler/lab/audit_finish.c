/*
 * audit_finish.c: the end of pass 1 (medians, report order, the plotted
 * series, times to 50/90/99% of the pages), pass 2 (load timelines of the
 * busiest hosts and IPs, URLs of the listed violations) and the queries.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/audit_int.h"

static int cmp_i32(const void *x, const void *y)
{
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
	return (a > b) - (a < b);
}

static double median_of(struct audit_gaps *g)
{
	if (g->n == 0)
		return 0;
	if (g->exact) {
		qsort(g->exact, g->n, sizeof *g->exact, cmp_i32);
		if (g->n % 2)
			return g->exact[g->n / 2];
		return ((double)g->exact[g->n / 2 - 1] + g->exact[g->n / 2]) / 2;
	}
	uint64_t rank = g->n / 2; /* the (rank+1)-th smallest */
	if (rank < g->neg)
		return (double)g->neg_sum / (double)g->neg;
	uint64_t seen = g->neg;
	for (unsigned b = 0; b < AUDIT_FINE_BUCKETS; b++) {
		seen += g->hist[b];
		if (seen > rank)
			return audit_fine_mid(b);
	}
	return 0;
}

/* Report order: violations, then margin (min gap - required), then
 * requests. The qsort_r context: */
struct sort_ctx {
	const struct audit_table *t;
	int64_t required;
};

static int64_t margin(const struct audit_entity *e, int64_t required)
{
	if (e->gaps == 0)
		return INT64_MAX;
	return e->min_gap - (required > 0 ? required : 0);
}

/* The entity that sort element x (an index into the table) stands for. */
static const struct audit_entity *entity_at(const struct sort_ctx *c, const void *x)
{
	return &c->t->v[*(const uint32_t *)x];
}

/* Most requests first, then by name. */
static int cmp_requests(const void *x, const void *y, void *ctx)
{
	const struct audit_entity *a = entity_at(ctx, x), *b = entity_at(ctx, y);
	if (a->requests != b->requests)
		return a->requests > b->requests ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Most violations first, then the smallest margin, then as cmp_requests. */
static int cmp_entity(const void *x, const void *y, void *ctx)
{
	const struct sort_ctx *c = ctx;
	const struct audit_entity *a = entity_at(c, x), *b = entity_at(c, y);
	if (a->violations != b->violations)
		return a->violations > b->violations ? -1 : 1;
	int64_t ma = margin(a, c->required), mb = margin(b, c->required);
	if (ma != mb)
		return ma < mb ? -1 : 1;
	return cmp_requests(x, y, ctx);
}

/* Fills order (report order) and top (most requests) of one table. */
static int order_table(struct audit_table *t, int64_t required, uint32_t *top, size_t *ntop)
{
	t->order = malloc((t->n ? t->n : 1) * sizeof *t->order);
	uint32_t *tmp = malloc((t->n ? t->n : 1) * sizeof *tmp);
	if (!t->order || !tmp) {
		free(tmp);
		return -1;
	}
	for (size_t i = 0; i < t->n; i++)
		t->order[i] = tmp[i] = (uint32_t)i;
	struct sort_ctx ctx = { t, required };
	qsort_r(t->order, t->n, sizeof *t->order, cmp_entity, &ctx);
	qsort_r(tmp, t->n, sizeof *tmp, cmp_requests, &ctx);
	*ntop = t->n < AUDIT_TOP ? t->n : AUDIT_TOP;
	memcpy(top, tmp, *ntop * sizeof *top);
	free(tmp);
	return 0;
}

static int64_t nice_interval(int64_t secs)
{
	static const int64_t nice[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600 };
	int64_t want = (secs + AUDIT_PLOT_BINS - 1) / AUDIT_PLOT_BINS;
	for (size_t i = 0; i < sizeof nice / sizeof nice[0]; i++)
		if (nice[i] >= want)
			return nice[i];
	return (want + 3599) / 3600 * 3600;
}

/* Whole-second busy and active time from the parts and differences. */
static void tl_settle(struct audit *a)
{
	int64_t busy = 0, active = 0;
	for (size_t i = 0; i < a->tl_len; i++) {
		struct audit_tl_sec *s = &a->tl[i];
		busy += s->busy_diff;
		active += s->active_diff;
		s->busy_part += busy * 1000;
		s->active_part += active * 1000;
	}
}

static int build_series(struct audit *a)
{
	struct audit_series *se = &a->series;
	if (a->sum.requests == 0)
		return 0;
	int64_t s0 = a->sum.start_ms / 1000 - (a->sum.start_ms % 1000 < 0);
	int64_t s1 = a->sum.end_ms / 1000 - (a->sum.end_ms % 1000 < 0);
	/* lines beyond the timeline (clock jumps) are counted, not plotted */
	s0 = s0 < a->tl_base ? a->tl_base : s0;
	s1 = s1 >= a->tl_base + (int64_t)a->tl_len ? a->tl_base + (int64_t)a->tl_len - 1 : s1;
	int64_t secs = s1 - s0 + 1;
	se->interval_s = nice_interval(secs);
	se->n = (size_t)((secs + se->interval_s - 1) / se->interval_s);
	se->start_ms = s0 * 1000;
	double *all = calloc(5 * se->n, sizeof(double));
	if (!all)
		return -1;
	se->pages_per_s = all;
	se->bytes_per_s = all + se->n;
	se->busy = all + 2 * se->n;
	se->waiting = all + 3 * se->n;
	se->idle = all + 4 * se->n;
	for (size_t b = 0; b < se->n; b++) {
		int64_t from = s0 + (int64_t)b * se->interval_s;
		int64_t to = from + se->interval_s > s1 + 1 ? s1 + 1 : from + se->interval_s;
		double pages = 0, bytes = 0, busy = 0, active = 0;
		for (int64_t s = from; s < to; s++) {
			struct audit_tl_sec *x = &a->tl[audit_tl_index(a, s * 1000)];
			pages += x->pages;
			bytes += (double)x->bytes;
			busy += (double)x->busy_part;
			active += (double)x->active_part;
		}
		double len = (double)(to - from);
		se->pages_per_s[b] = pages / len;
		se->bytes_per_s[b] = bytes / len;
		se->busy[b] = busy / (len * 1000);
		se->waiting[b] = active / (len * 1000) - se->busy[b];
		if (se->waiting[b] < 0)
			se->waiting[b] = 0;
		se->idle[b] = (double)a->hosts.n - se->busy[b] - se->waiting[b];
	}
	static const double pct[3] = { 0.5, 0.9, 0.99 };
	for (int k = 0; k < 3; k++) {
		uint64_t target = (uint64_t)ceil(pct[k] * (double)a->sum.pages), cum = 0;
		target = target ? target : 1;
		a->sum.time_to_pct_s[k] = 0;
		for (int64_t s = s0; s <= s1 && a->sum.pages; s++) {
			uint32_t p = a->tl[audit_tl_index(a, s * 1000)].pages;
			if (cum + p >= target) {
				/* interpolated; pass 2 makes it exact */
				double t = (double)s * 1000 + 1000.0 * (double)(target - cum) / p;
				a->sum.time_to_pct_s[k] = (t - (double)a->sum.start_ms) / 1000;
				a->pct_sec[k] = s;
				a->pct_rank[k] = target - cum;
				a->pct_cap[k] = p;
				a->pct_ends[k] = malloc(p * sizeof *a->pct_ends[k]);
				if (!a->pct_ends[k])
					return -1;
				break;
			}
			cum += p;
		}
	}
	return 0;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return (a > b) - (a < b);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/* The lines whose URLs pass 2 fetches: (line << 21 | violation << 1 | next). */
static int want_lines(struct audit *a)
{
	a->nwant = 2 * a->nviol;
	if (!a->nwant)
		return 0;
	a->want_lines = malloc(a->nwant * sizeof *a->want_lines);
	if (!a->want_lines)
		return -1;
	for (size_t i = 0; i < a->nviol; i++) {
		a->want_lines[2 * i] = a->viol[i].line_prev << 21 | (uint64_t)i << 1;
		a->want_lines[2 * i + 1] = a->viol[i].line_next << 21 | (uint64_t)i << 1 | 1;
	}
	qsort(a->want_lines, a->nwant, sizeof *a->want_lines, cmp_u64);
	return 0;
}

enum audit_error audit_finish(struct audit *a)
{
	if (a->finished)
		return AUDIT_OK;
	a->finished = 1;
	if (audit_flush_windows(a) != 0)
		return AUDIT_ERR_NOMEM;
	for (size_t i = 0; i < a->hosts.n; i++) {
		struct audit_entity *e = &a->hosts.v[i];
		audit_tl_span(a, 1, e->first_start, e->last_end);
		if (e->ip != UINT32_MAX)
			a->ips.v[e->ip].hosts++;
	}
	if (a->tl)
		tl_settle(a);
	for (int ip = 0; ip < 2; ip++) {
		struct audit_table *t = ip ? &a->ips : &a->hosts;
		for (size_t i = 0; i < t->n; i++)
			t->v[i].median = median_of(&t->v[i].g);
	}
	a->sum.hosts = a->hosts.n;
	a->sum.ips = a->ips.n;
	if (order_table(&a->hosts, a->host_required, a->top_hosts, &a->ntop_hosts) != 0 ||
	    order_table(&a->ips, a->ip_required, a->top_ips, &a->ntop_ips) != 0 ||
	    build_series(a) != 0 || want_lines(a) != 0)
		return AUDIT_ERR_NOMEM;
	for (int ip = 0; ip < 2 && a->series.n; ip++) {
		size_t n = ip ? a->ntop_ips : a->ntop_hosts;
		struct audit_table *t = ip ? &a->ips : &a->hosts;
		for (size_t i = 0; i < n; i++) {
			uint32_t k = ip ? a->top_ips[i] : a->top_hosts[i];
			t->v[k].load = calloc(a->series.n, sizeof *t->v[k].load);
			if (!t->v[k].load)
				return AUDIT_ERR_NOMEM;
		}
	}
	return AUDIT_OK;
}

static void load_add(const struct audit *a, uint64_t *load, int64_t from, int64_t to)
{
	const struct audit_series *se = &a->series;
	int64_t bin_ms = se->interval_s * 1000, last = se->start_ms + (int64_t)se->n * bin_ms;
	from = from < se->start_ms ? se->start_ms : from;
	to = to > last ? last : to;
	for (int64_t b = (from - se->start_ms) / bin_ms; from < to; b++) {
		int64_t end = se->start_ms + (b + 1) * bin_ms;
		int64_t upto = to < end ? to : end;
		if (b >= 0 && b < (int64_t)se->n)
			load[b] += (uint64_t)(upto - from);
		from = upto;
	}
}

static char *url_copy(const char *u)
{
	size_t n = strlen(u);
	return strndup(u, n > 300 ? 300 : n);
}

void audit_feed2(struct audit *a, const char *line, size_t len, uint64_t lineno)
{
	struct audit_rec r;
	if (!a->finished || (len > 0 && line[0] == '#') || len > AUDIT_MAX_LINE ||
	    audit_parse_line(line, len, &r, a->scratch, a->scratch_cap))
		return;
	while (a->want_pos < a->nwant && (a->want_lines[a->want_pos] >> 21) < lineno)
		a->want_pos++;
	for (; a->want_pos < a->nwant && (a->want_lines[a->want_pos] >> 21) == lineno;
	     a->want_pos++) {
		uint64_t w = a->want_lines[a->want_pos];
		struct audit_violation *v = &a->viol[(w >> 1) & 0xfffff];
		char **slot = w & 1 ? &v->url_next : &v->url_prev;
		if (!*slot)
			*slot = url_copy(r.url);
	}
	int64_t sec = r.end_ms / 1000 - (r.end_ms % 1000 < 0);
	for (int k = 0; k < 3 && !r.robots; k++) {
		if (!a->pct_ends[k] || sec != a->pct_sec[k] || a->pct_n[k] == a->pct_cap[k])
			continue;
		a->pct_ends[k][a->pct_n[k]++] = r.end_ms;
		if (a->pct_n[k] == a->pct_cap[k]) {
			qsort(a->pct_ends[k], a->pct_n[k], sizeof *a->pct_ends[k], cmp_i64);
			int64_t t = a->pct_ends[k][a->pct_rank[k] - 1];
			a->sum.time_to_pct_s[k] = (double)(t - a->sum.start_ms) / 1000;
		}
	}
	if (!a->series.n || r.start_ms >= r.end_ms)
		return;
	uint32_t h = audit_table_find(&a->hosts, r.origin);
	if (h != UINT32_MAX && a->hosts.v[h].load)
		load_add(a, a->hosts.v[h].load, r.start_ms, r.end_ms);
	uint32_t ip = r.ip ? audit_table_find(&a->ips, r.ip) : UINT32_MAX;
	if (ip != UINT32_MAX && a->ips.v[ip].load)
		load_add(a, a->ips.v[ip].load, r.start_ms, r.end_ms);
}

/* ---- queries ---- */

void audit_summary_get(const struct audit *a, struct audit_summary *s)
{
	*s = a->sum;
}

const struct audit_config *audit_config_get(const struct audit *a)
{
	return &a->cfg;
}

size_t audit_host_count(const struct audit *a)
{
	return a->hosts.n;
}

size_t audit_ip_count(const struct audit *a)
{
	return a->ips.n;
}

void audit_view(const struct audit *a, const struct audit_table *t, uint32_t idx,
                struct audit_entity_view *v)
{
	const struct audit_entity *e = &t->v[idx];
	int ip = t == &a->ips;
	memset(v, 0, sizeof *v);
	v->name = e->name;
	v->origin = e->origin;
	v->ip = ip ? e->name : e->ip != UINT32_MAX ? a->ips.v[e->ip].name : "-";
	v->requests = e->requests;
	v->robots = e->robots;
	v->bytes = e->bytes;
	v->late = e->late;
	v->hosts = e->hosts;
	v->gaps = e->gaps;
	v->overlaps = e->overlaps;
	v->violations = e->violations;
	v->min_gap_ms = e->gaps ? e->min_gap : 0;
	v->median_gap_ms = e->median;
	v->required_gap_ms = ip ? a->ip_required : a->host_required;
	int64_t span = e->last_end - e->first_start;
	v->busy_share = span > 0 ? (double)e->busy_ms / (double)span : 0;
	v->first_start_ms = e->first_start;
	v->last_end_ms = e->last_end;
}

void audit_host_get(const struct audit *a, size_t i, struct audit_entity_view *v)
{
	audit_view(a, &a->hosts, a->hosts.order[i], v);
}

void audit_ip_get(const struct audit *a, size_t i, struct audit_entity_view *v)
{
	audit_view(a, &a->ips, a->ips.order[i], v);
}

long audit_host_find(const struct audit *a, const char *name)
{
	for (size_t i = 0; i < a->hosts.n; i++)
		if (strcmp(a->hosts.v[a->hosts.order[i]].name, name) == 0)
			return (long)i;
	return -1;
}
