/*
 * crawl_stats.c: the gatherer of the pieces' figures and the reports made
 * of them (see crawl_stats.h), each report a walk over a table of entries.
 */
#include "crawler/archive/previous.h"
#include "crawler/crawl_stats.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "crawler/config/config.h"
#include "crawler/control/steer.h"
#include "crawler/crawl_checkpoint.h"
#include "crawler/crawl_source.h"
#include "crawler/crawl_tail.h"
#include "crawler/crawl_writer.h"
#include "crawler/link_meta.h"
#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"
#include "crawler/parse_jobs.h"
#include "parse/focus.h"
#include "crawler/sieve_path.h"
#include "crawler/store/io_stall.h"
#include "crawler/visit.h"
#include "frontier/base/ascii.h"
#include "frontier/base/clock.h"
#include "frontier/base/recfile.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "frontier/url_rules_live.h"
#include "politeness/politeness.h"
#include "sieve/sieve.h"

#define SAMPLES_MAX 8640       /* pages/s samples kept for the series */
#define RULES_LISTED_MAX 10000 /* rules stats.json lists, of those that decided a URL */

/* Every piece's figures, as read at one time. */
struct figures {
	struct visit_stats visit;
	struct sieve_path_stats sieve;
	struct parse_jobs_stats parse;
	struct crawl_writer_stats writer;
	struct crawl_ckpt_stats ckpt;
	struct crawl_source_stats source;
	struct crawl_loop_stats loop;
	struct crawl_tail_stats tail;
	struct fetch_stats fetch;
	struct dns_stats dns;
	struct frontier_stats frontier;
	struct politeness_stats politeness;
	uint64_t stalls;
	double stall_s;
	size_t in_flight;
	/* figures two pieces count, reported and saved as one */
	struct {
		uint64_t tail_skipped;     /* the visit's and the loop's */
		uint64_t sitemaps_dropped; /* the visit's and the parse threads' */
		uint64_t emit_dropped;     /* the sieve path's and the parse threads' */
		uint64_t meta_dropped;     /* the sieve path's and the source's (outbox) */
	} sum;
};

struct crawl_stats {
	const struct crawl_stats_sources *src;
	const struct crawl_output *output;
	const char *sieve_impl;
	struct figures now;            /* this run's, as last read */
	struct figures before;         /* the runs before a resume: the saved counters */
	struct figures total;          /* before + now: what the reports show */
	uint64_t t0_us;                /* monotonic start, minus the runs before a resume */
	uint64_t before_us;            /* crawl time of the runs before a resume */
	uint64_t stopped_us;           /* the crawl time once stopped, else 0 */
	uint64_t samples[SAMPLES_MAX]; /* pages per stats_interval_s */
	size_t n_samples;
	uint64_t last_sample_pages;
};

/* ---- the counters a checkpoint carries, by name ---- */

struct saved_counter {
	const char *name;
	size_t off; /* of its uint64_t in struct figures */
	int max;    /* the runs' largest, not their sum */
};

#define SAVED(name, field)                                                                         \
	{                                                                                          \
		name, offsetof(struct figures, field), 0                                           \
	}

static const struct saved_counter saved_counters[] = {
	SAVED("pages_done", visit.pages_done),
	SAVED("requests", visit.requests),
	SAVED("bytes", visit.bytes),
	SAVED("robots_fetches", visit.robots_fetches),
	SAVED("robots_disallowed", visit.robots_disallowed),
	SAVED("redirects", visit.redirects),
	SAVED("private_refused", visit.private_refused),
	SAVED("parse_full", parse.parse_full),
	SAVED("writer_full", parse.writer_full),
	SAVED("hosts_dns_failed", visit.hosts_dns_failed),
	SAVED("family_fallbacks", visit.family_fallbacks),
	SAVED("ip_lease_refused", visit.ip_lease_refused),
	SAVED("ip_lease_errors", visit.ip_lease_errors),
	SAVED("redirect_dropped", loop.redirect_dropped),
	SAVED("rules_dropped", loop.rules_dropped),
	SAVED("ac.rules_rejected", parse.rules_rejected),
	SAVED("redirect_limit", visit.redirect_limit),
	SAVED("robots_redirect_limit", visit.robots_redirect_limit),
	SAVED("robots_unreachable", visit.robots_unreachable),
	SAVED("robots_undecodable", visit.robots_undecodable),
	SAVED("inbox_rejected", source.inbox_rejected),
	SAVED("hosts_robots_retired", visit.hosts_robots_retired),
	SAVED("disallowed_yields", visit.disallowed_yields),
	SAVED("status_other", visit.status_other),
	SAVED("forced_flushes", sieve.forced_flushes),
	SAVED("early_flushes", sieve.early_flushes),
	SAVED("ckpt_count", ckpt.written),
	SAVED("ckpt_failures", ckpt.failed),
	SAVED("ckpt_us_total", ckpt.us_total),
	{ "ckpt_us_max", offsetof(struct figures, ckpt.us_max), 1 },
	SAVED("tail_replayed", tail.replayed),
	SAVED("tail_lines_skipped", tail.lines_skipped),
	SAVED("tail_skipped", sum.tail_skipped),
	SAVED("tail_recovered", tail.recovered),
	SAVED("ac.parsed", parse.parsed),
	SAVED("ac.links", parse.links),
	SAVED("ac.scope_rejected", parse.scope_rejected),
	SAVED("ac.nofollow", parse.nofollow),
	SAVED("ac.near_dups", parse.near_dups),
	SAVED("ac.decode_errors", parse.decode_errors),
	SAVED("ac.emit_dropped", sum.emit_dropped),
	SAVED("ac.writer_errors", writer.errors),
	SAVED("ac.warc_revisits", writer.revisits),
	SAVED("ac.url_invalid", parse.url_invalid),
	SAVED("ac.seeds_invalid", sieve.seeds_invalid),
	SAVED("ac.meta_present", sieve.meta_present),
	SAVED("ac.meta_dropped", sum.meta_dropped),
	SAVED("ac.meta_missing", sieve.meta_missing),
	SAVED("ac.meta_flushes", sieve.meta_flushes),
	SAVED("ac.sieve_errors", sieve.sieve_errors),
	SAVED("ac.emits_pushed", sieve.emits_pushed),
	SAVED("ac.keys_added", sieve.keys_added),
	SAVED("ac.sitemaps", parse.sitemaps),
	SAVED("ac.sitemap_urls", parse.sitemap_urls),
	SAVED("ac.sitemap_problems", parse.sitemap_problems),
	SAVED("ac.sitemaps_dropped", sum.sitemaps_dropped),
	SAVED("ac.sitemap_malformed", parse.sitemap_malformed),
	SAVED("ac.sitemap_too_large", parse.sitemap_too_large),
	SAVED("ac.sitemap_too_many", parse.sitemap_too_many),
	SAVED("ac.sitemap_urls_over_limit", parse.sitemap_urls_over_limit),
	SAVED("ac.embeds", parse.embeds),
	SAVED("ac.embeds_added", parse.embeds_added),
	SAVED("ac.embeds_off_domain", parse.embeds_off_domain),
	SAVED("ac.stylesheets", parse.stylesheets),
	SAVED("conditional", visit.conditional),
	SAVED("ac.earlier_parsed", parse.earlier_parsed),
	SAVED("ac.earlier_unreadable", parse.earlier_unreadable),
	SAVED("ac.focus_scored", parse.focus_scored),
	SAVED("ac.focus_on_topic", parse.focus_on_topic),
	SAVED("ac.focus_score_sum", parse.focus_score_sum),
	SAVED("ac.index_records_unreadable", writer.index_records_unreadable),
};
#define N_SAVED (sizeof saved_counters / sizeof saved_counters[0])

static uint64_t *counter_of(struct figures *f, const struct saved_counter *c)
{
	return (uint64_t *)(void *)((char *)f + c->off);
}

/* ---- gathering ---- */

static void add_array(uint64_t *to, const uint64_t *a, const uint64_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		to[i] = a[i] + b[i];
}

/* Reads each piece that stands into s->now, then s->total. */
static void gather(struct crawl_stats *s)
{
	const struct crawl_stats_sources *src = s->src;
	struct figures *now = &s->now, *t = &s->total;
	if (src->visit) { /* a crawl's: its set-up done, every piece stands */
		visit_stats(src->visit, &now->visit);
		sieve_path_stats(src->sieve, &now->sieve);
		parse_jobs_stats(src->parse, &now->parse);
		crawl_writer_stats(src->writer, &now->writer);
		crawl_ckpt_stats(src->ckpt, &now->ckpt);
		crawl_source_stats(src->source, &now->source);
		frontier_stats(src->frontier, &now->frontier);
		politeness_stats(src->pol, &now->politeness);
		io_stall_stats(src->io, &now->stalls, &now->stall_s);
		now->loop = *src->loop;
		now->tail = *src->tail;
	}
	if (src->fetch) { /* with the resolver; once both are gone, as last read */
		fetch_engine_stats(src->fetch, &now->fetch);
		now->in_flight = fetch_engine_in_flight(src->fetch);
		dns_resolver_stats(src->dns, &now->dns);
	}
	now->sum.tail_skipped = now->visit.tail_skipped + now->loop.tail_skipped;
	now->sum.emit_dropped = now->sieve.emit_dropped + now->parse.emit_dropped;
	now->sum.sitemaps_dropped = now->visit.sitemaps_dropped + now->parse.sitemaps_dropped;
	now->sum.meta_dropped = now->sieve.meta_dropped + now->source.links_dropped;
	*t = *now;
	for (size_t i = 0; i < N_SAVED; i++) {
		const struct saved_counter *c = &saved_counters[i];
		uint64_t a = *counter_of(&s->before, c), b = *counter_of(now, c);
		*counter_of(t, c) = c->max ? (a > b ? a : b) : a + b;
	}
	add_array(t->visit.status, s->before.visit.status, now->visit.status, VISIT_STATUS_MAX);
	add_array(t->visit.dns_errors, s->before.visit.dns_errors, now->visit.dns_errors,
	          VISIT_ERRORS);
	add_array(t->visit.fetch_errors, s->before.visit.fetch_errors, now->visit.fetch_errors,
	          VISIT_ERRORS);
}

void crawl_stats_gather(struct crawl_stats *s)
{
	gather(s);
}

void crawl_stats_pages(struct crawl_stats *s, struct crawl_stats_pages *out)
{
	gather(s);
	out->done = s->total.visit.pages_done;
	out->requests = s->total.visit.requests;
	out->bytes = s->total.visit.bytes;
}

uint64_t crawl_stats_pages_before(const struct crawl_stats *s)
{
	return s->before.visit.pages_done;
}

/* ---- the clock and the series ---- */

void crawl_stats_start(struct crawl_stats *s)
{
	s->t0_us = monotonic_us() - s->before_us;
}

void crawl_stats_stop(struct crawl_stats *s)
{
	s->stopped_us = crawl_stats_elapsed_us(s);
}

uint64_t crawl_stats_elapsed_us(const struct crawl_stats *s)
{
	return s->stopped_us ? s->stopped_us : monotonic_us() - s->t0_us;
}

void crawl_stats_sample(struct crawl_stats *s)
{
	if (s->n_samples >= SAMPLES_MAX)
		return;
	gather(s);
	uint64_t pages = s->total.visit.pages_done;
	s->samples[s->n_samples++] = pages - s->last_sample_pages;
	s->last_sample_pages = pages;
}

struct crawl_stats *crawl_stats_create(const struct crawl_stats_sources *src,
                                       const struct crawl_output *output, const char *sieve_impl)
{
	struct crawl_stats *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->src = src;
	s->output = output;
	s->sieve_impl = sieve_impl ? sieve_impl : "mercator";
	return s;
}

void crawl_stats_destroy(struct crawl_stats *s)
{
	free(s);
}

/* ---- tables of named values ---- */

enum stat_kind {
	STAT_U64,    /* const uint64_t * */
	STAT_LONG,   /* const long * */
	STAT_F2,     /* const double *, 2 decimals */
	STAT_F3,     /* const double *, 3 decimals */
	STAT_F6,     /* const double *, 6 decimals */
	STAT_UINT,   /* const unsigned * */
	STAT_BOOL,   /* const int * */
	STAT_STR,    /* const char * (the string itself) */
	STAT_OBJECT, /* const struct stat_table *: a nested object on one line */
	STAT_RULES,  /* struct url_rules_live *: the rules that decided URLs, a list */
	STAT_SERIES, /* const struct stat_series * */
};

/* Samples of pages per interval, written as pages/s. */
struct stat_series {
	const uint64_t *v;
	size_t n;
	unsigned interval_s;
};

struct stat_entry {
	const char *name;
	enum stat_kind kind;
	const void *p;
	int omit_zero; /* left out when the value is 0 */
};

/* An entry named as the field it reads: STAT_OF(STAT_U64, ss, added) is
 * stats.json's "added" from ss->added. */
#define STAT_OF(kind, base, field)                                                                 \
	{                                                                                          \
#field, kind, &(base)->field, 0                                                    \
	}

/* An error reason: left out of stats.json while it is 0. */
#define REASON(name, kind, p)                                                                      \
	{                                                                                          \
		name, kind, p, 1                                                                   \
	}

struct stat_table {
	const struct stat_entry *e;
	size_t n;
};

#define TABLE(a)                                                                                   \
	{                                                                                          \
		(a), sizeof(a) / sizeof((a)[0])                                                    \
	}

static uint64_t entry_u64(const struct stat_entry *e)
{
	return *(const uint64_t *)e->p;
}

static void json_str(FILE *f, const char *s)
{
	ascii_json_string(f, s, strlen(s));
}

static void json_table(FILE *f, const struct stat_table *t, const char *open, const char *sep,
                       const char *close);

/* The URL rules that decided at least one URL (the first RULES_LISTED_MAX
 * of them), with where each came from: a JSON list, or (prom: the metric
 * name) one Prometheus line per count, labelled with the rule's index. */
static void rules_list(FILE *f, struct url_rules_live *l, const char *prom)
{
	struct url_rules *r = l ? url_rules_live_get(l) : NULL;
	size_t listed = 0, n = url_rules_size(r);
	if (!prom)
		fputc('[', f);
	for (size_t i = 0; i < n && listed < RULES_LISTED_MAX; i++) {
		struct url_rule_info in;
		uint64_t a, j;
		url_rules_counts(r, i, &a, &j);
		if (!a && !j)
			continue;
		url_rules_rule(r, i, &in);
		if (prom) {
			fprintf(f, "%s_accepted{index=\"%zu\"} %" PRIu64 "\n", prom, i, a);
			fprintf(f, "%s_rejected{index=\"%zu\"} %" PRIu64 "\n", prom, i, j);
		} else {
			fprintf(f, "%s{\"index\": %zu, \"source\": ", listed ? ", " : "", i);
			json_str(f, in.source);
			fprintf(f, ", \"line\": %u, \"text\": ", in.line);
			json_str(f, in.text);
			fprintf(f, ", \"accepted\": %" PRIu64 ", \"rejected\": %" PRIu64 "}", a, j);
		}
		listed++;
	}
	if (!prom)
		fputc(']', f);
	if (r)
		url_rules_live_put(l, r);
}

static void json_value(FILE *f, const struct stat_entry *e)
{
	switch (e->kind) {
	case STAT_U64: fprintf(f, "%" PRIu64, entry_u64(e)); break;
	case STAT_LONG: fprintf(f, "%ld", *(const long *)e->p); break;
	case STAT_F2: fprintf(f, "%.2f", *(const double *)e->p); break;
	case STAT_F3: fprintf(f, "%.3f", *(const double *)e->p); break;
	case STAT_F6: fprintf(f, "%.6f", *(const double *)e->p); break;
	case STAT_UINT: fprintf(f, "%u", *(const unsigned *)e->p); break;
	case STAT_BOOL: fputs(*(const int *)e->p ? "true" : "false", f); break;
	case STAT_STR: json_str(f, e->p); break;
	case STAT_OBJECT: json_table(f, e->p, "{", ", ", "}"); break;
	case STAT_RULES: rules_list(f, (struct url_rules_live *)e->p, NULL); break;
	case STAT_SERIES: {
		const struct stat_series *se = e->p;
		fputc('[', f);
		for (size_t i = 0; i < se->n; i++)
			fprintf(f, "%s%.2f", i ? ", " : "", (double)se->v[i] / se->interval_s);
		fputc(']', f);
		break;
	}
	}
}

static void json_table(FILE *f, const struct stat_table *t, const char *open, const char *sep,
                       const char *close)
{
	int first = 1;
	fputs(open, f);
	for (size_t i = 0; i < t->n; i++) {
		const struct stat_entry *e = &t->e[i];
		if (e->omit_zero && entry_u64(e) == 0)
			continue;
		fputs(first ? "" : sep, f);
		json_str(f, e->name);
		fputs(": ", f);
		json_value(f, e);
		first = 0;
	}
	fputs(close, f);
}

/* Prometheus text of a table: one "prefix_name value" line per number,
 * nested objects under prefix_name_, names reduced to [a-z0-9_]. */
static void prom_table(FILE *f, const struct stat_table *t, const char *prefix)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct stat_entry *e = &t->e[i];
		char name[160];
		size_t k = (size_t)snprintf(name, sizeof name, "%s_", prefix);
		for (const char *c = e->name; *c && k + 1 < sizeof name; c++)
			name[k++] = ascii_is_alnum((unsigned char)*c) ? *c : '_';
		name[k] = '\0';
		switch (e->kind) {
		case STAT_OBJECT: prom_table(f, e->p, name); break;
		case STAT_RULES: rules_list(f, (struct url_rules_live *)e->p, name); break;
		case STAT_BOOL: fprintf(f, "%s %d\n", name, *(const int *)e->p ? 1 : 0); break;
		case STAT_STR:
		case STAT_SERIES: break;
		default:
			fputs(name, f);
			fputc(' ', f);
			json_value(f, e);
			fputc('\n', f);
		}
	}
}

/* ---- stats.json ---- */

/* The "errors" object's fetch and DNS errors by name (the summary's too:
 * dns_prefix names the DNS ones as stats.json does, else as dns.h does);
 * names holds the DNS keys. */
static size_t error_code_entries(const struct visit_stats *v, struct stat_entry *e,
                                 char (*names)[64], int dns_prefix)
{
	size_t n = 0;
	for (int i = 1; i < VISIT_ERRORS; i++)
		e[n++] = (struct stat_entry)REASON(fetch_strerror((enum fetch_error)i), STAT_U64,
		                                   &v->fetch_errors[i]);
	for (int i = 1; i < VISIT_ERRORS; i++) {
		const char *dn = dns_strerror((enum dns_error)i);
		snprintf(names[i], sizeof names[i], "%s%s",
		         !dns_prefix || strncmp(dn, "dns", 3) == 0 ? "" : "dns-", dn);
		e[n++] = (struct stat_entry)REASON(names[i], STAT_U64, &v->dns_errors[i]);
	}
	return n;
}

/* The "errors" object: fetch and DNS errors by name, then the crawl's own
 * reasons; only those that happened. */
static size_t error_entries(const struct figures *t, struct stat_entry *e, char (*names)[64])
{
	size_t n = error_code_entries(&t->visit, e, names, 1);
	const struct stat_entry extra[] = {
		REASON("robots-disallowed", STAT_U64, &t->visit.robots_disallowed),
		REASON("private-address", STAT_U64, &t->visit.private_refused),
		REASON("decode", STAT_U64, &t->parse.decode_errors),
		REASON("truncated", STAT_U64, &t->fetch.truncated),
		REASON("retry-later", STAT_U64, &t->politeness.retry_laters),
		REASON("parse-queue-full", STAT_U64, &t->parse.parse_full),
		REASON("writer-queue-full", STAT_U64, &t->parse.writer_full),
		REASON("writer-io", STAT_U64, &t->writer.errors),
		REASON("url-invalid", STAT_U64, &t->parse.url_invalid),
		REASON("seed-invalid", STAT_U64, &t->sieve.seeds_invalid),
		REASON("sieve", STAT_U64, &t->sieve.sieve_errors),
		REASON("sieve-meta-missing", STAT_U64, &t->sieve.meta_missing),
		REASON("sieve-meta-dropped", STAT_U64, &t->sum.meta_dropped),
		REASON("redirect-dropped", STAT_U64, &t->loop.redirect_dropped),
		REASON("redirect-limit", STAT_U64, &t->visit.redirect_limit),
		REASON("keepalive-closed", STAT_U64, &t->visit.reuse_retries),
		REASON("robots-redirect-limit", STAT_U64, &t->visit.robots_redirect_limit),
		REASON("robots-unreachable", STAT_U64, &t->visit.robots_unreachable),
		REASON("robots-undecodable", STAT_U64, &t->visit.robots_undecodable),
		REASON("inbox-rejected", STAT_U64, &t->source.inbox_rejected),
		REASON("robots-wildcard-cap", STAT_U64, &t->politeness.robots_capped),
		REASON("ip-lease-refused", STAT_U64, &t->visit.ip_lease_refused),
		REASON("ip-lease-redis", STAT_U64, &t->visit.ip_lease_errors),
		REASON("emit-dropped", STAT_U64, &t->sum.emit_dropped),
		REASON("sitemap-malformed", STAT_U64, &t->parse.sitemap_malformed),
		REASON("sitemap-too-large", STAT_U64, &t->parse.sitemap_too_large),
		REASON("sitemap-too-many-urls", STAT_U64, &t->parse.sitemap_too_many),
	};
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
		e[n++] = extra[i];
	return n;
}

/* Derived figures the tables point at. */
struct stats_derived {
	double elapsed, pages_per_s, cpu, flush_s_total, flush_s_max, z_per_sig;
	double ckpt_s_total, ckpt_s_max;
	double ckpt_drain_s, ckpt_flush_s, ckpt_writer_s, ckpt_files_s, ckpt_commit_s,
	        ckpt_nofetch_s, ckpt_files_cpu_s, ckpt_snapshot_s;
	uint64_t mem_frontier_urls, mem_total;
	double focus_mean; /* the mean focus score of the pages scored */
	long peak_rss_kb;
	int resumed;
	unsigned interval_s;
	uint64_t status_v[VISIT_STATUS_MAX], scope_v[SCOPE_VERDICT_COUNT];
	uint64_t rules_n, rules_added, rules_accepted, rules_rejected, rules_no_match;
	struct previous_stats previous;
	struct steer_stats steer;
	uint64_t paused;
	char status_names[VISIT_STATUS_MAX][4];
	char dns_names[VISIT_ERRORS][64];
	struct stat_entry status_e[VISIT_STATUS_MAX + 1], error_e[4 * VISIT_ERRORS],
	        scope_e[SCOPE_VERDICT_COUNT], sieve_e[24], memory_e[16];
};

/* The rules' totals: URLs accepted and rejected by a rule, and by none. */
static void derive_rules(struct url_rules_live *l, struct stats_derived *d)
{
	uint64_t a, j;
	struct url_rules *r = l ? url_rules_live_get(l) : NULL;
	if (!r)
		return;
	d->rules_n = url_rules_size(r);
	d->rules_added = url_rules_live_added(l);
	for (size_t i = 0; i < d->rules_n; i++) {
		url_rules_counts(r, i, &a, &j);
		d->rules_accepted += a;
		d->rules_rejected += j;
	}
	url_rules_counts(r, d->rules_n, &a, &j);
	d->rules_no_match = a;
	url_rules_live_put(l, r);
}

static void derive(const struct crawl_stats *s, struct stats_derived *d)
{
	struct rusage ru;
	const struct figures *t = &s->total;
	const struct sieve_stats *ss = &t->sieve.sieve;
	d->elapsed = (double)crawl_stats_elapsed_us(s) / 1e6;
	d->pages_per_s = d->elapsed > 0 ? (double)t->visit.pages_done / d->elapsed : 0.0;
	d->focus_mean = t->parse.focus_scored
	                        ? (double)t->parse.focus_score_sum / (double)t->parse.focus_scored /
	                                  FOCUS_SCORE_ONE
	                        : 0.0;
	d->peak_rss_kb = -1;
	d->cpu = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		d->peak_rss_kb = ru.ru_maxrss;
		d->cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	}
	d->flush_s_total = (double)ss->flush_ns_total / 1e9;
	d->flush_s_max = (double)ss->flush_ns_max / 1e9;
	d->z_per_sig = ss->z_count ? (double)ss->z_bytes / (double)ss->z_count : 0.0;
	d->ckpt_s_total = (double)t->ckpt.us_total / 1e6;
	d->ckpt_s_max = (double)t->ckpt.us_max / 1e6;
	d->ckpt_drain_s = (double)t->ckpt.us_drain_max / 1e6;
	d->ckpt_flush_s = (double)t->ckpt.us_flush_max / 1e6;
	d->ckpt_writer_s = (double)t->ckpt.us_writer_max / 1e6;
	d->ckpt_files_s = (double)t->ckpt.us_files_max / 1e6;
	d->ckpt_commit_s = (double)t->ckpt.us_commit_max / 1e6;
	d->ckpt_nofetch_s = (double)t->ckpt.us_nofetch_max / 1e6;
	d->ckpt_files_cpu_s = (double)t->ckpt.us_files_cpu_max / 1e6;
	d->ckpt_snapshot_s = (double)t->ckpt.us_snapshot_max / 1e6;
	d->resumed = s->src->resumed;
	if (s->src->previous)
		previous_stats(s->src->previous, &d->previous);
	d->interval_s = s->output->stats_interval_s;
	derive_rules(s->src->rules, d);
	steer_stats(s->src->steer, &d->steer);
	d->paused = (uint64_t)steer_paused(s->src->steer);
}

static size_t status_entries(const struct visit_stats *v, struct stats_derived *d,
                             struct stat_entry *e)
{
	size_t n = 0;
	for (int i = 0; i < VISIT_STATUS_MAX; i++) {
		if (!v->status[i])
			continue;
		snprintf(d->status_names[i], sizeof d->status_names[i], "%d", i);
		e[n++] = (struct stat_entry){ d->status_names[i], STAT_U64, &v->status[i], 0 };
	}
	if (v->status_other) /* 600..999 and beyond: no class of RFC 9110 */
		e[n++] = (struct stat_entry){ "other", STAT_U64, &v->status_other, 0 };
	return n;
}

static size_t scope_entries(const struct scope *scope, struct stats_derived *d,
                            struct stat_entry *e)
{
	size_t n = 0;
	for (int v = 1; v < SCOPE_VERDICT_COUNT; v++) {
		d->scope_v[v] = scope ? scope_count(scope, (enum scope_verdict)v) : 0;
		e[n++] = (struct stat_entry){ scope_verdict_name((enum scope_verdict)v), STAT_U64,
			                      &d->scope_v[v], 0 };
	}
	return n;
}

/* stats.json's "sieve" object. */
static size_t sieve_entries(const struct crawl_stats *s, const struct stats_derived *d,
                            struct stat_entry *e)
{
	const struct figures *t = &s->total;
	const struct sieve_stats *ss = &t->sieve.sieve;
	const struct link_meta_stats *ms = &t->sieve.meta;
	const struct sieve_path_stats *sp = &t->sieve;
	const struct stat_entry sieve_e[] = {
		{ "impl", STAT_STR, s->sieve_impl, 0 },
		STAT_OF(STAT_U64, ss, added),
		STAT_OF(STAT_U64, ss, emitted),
		STAT_OF(STAT_U64, ss, cache_drops),
		STAT_OF(STAT_U64, ss, flushes),
		STAT_OF(STAT_U64, sp, forced_flushes),
		STAT_OF(STAT_U64, sp, early_flushes),
		{ "meta_full_flushes", STAT_U64, &sp->meta_flushes, 0 },
		STAT_OF(STAT_F6, d, flush_s_total),
		STAT_OF(STAT_F6, d, flush_s_max),
		STAT_OF(STAT_U64, ss, add_waits),
		STAT_OF(STAT_U64, ss, buffer_urls),
		STAT_OF(STAT_U64, ss, z_count),
		STAT_OF(STAT_U64, ss, z_bytes),
		{ "z_bytes_per_signature", STAT_F3, &d->z_per_sig, 0 },
		{ "skipped_present", STAT_U64, &sp->meta_present, 0 },
		{ "meta_capacity", STAT_U64, &ms->capacity, 0 },
		{ "meta_peak_entries", STAT_U64, &ms->peak_entries, 0 },
		{ "meta_entries_left", STAT_U64, &ms->entries, 0 },
		{ "meta_swept", STAT_U64, &ms->swept, 0 },
		{ "meta_full", STAT_U64, &ms->full, 0 },
	};
	memcpy(e, sieve_e, sizeof sieve_e);
	return sizeof sieve_e / sizeof sieve_e[0];
}

/* stats.json's "memory" object: the bytes of each structure that grows
 * with hosts, IPs, URLs or time (README, "Memory"), and their sum. */
static size_t memory_entries(const struct figures *t, struct stats_derived *d, struct stat_entry *e)
{
	const struct frontier_stats *fs = &t->frontier;
	const struct politeness_stats *ps = &t->politeness;
	const struct stat_entry mem_e[] = {
		{ "hosts_table", STAT_U64, &fs->mem_hosts, 0 },
		{ "frontier_queues", STAT_U64, &fs->mem_queues, 0 },
		{ "frontier_urls", STAT_U64, &d->mem_frontier_urls, 0 },
		{ "visit", STAT_U64, &t->visit.mem_bytes, 0 },
		{ "politeness_hosts", STAT_U64, &ps->mem_hosts, 0 },
		{ "politeness_heaps", STAT_U64, &ps->mem_heaps, 0 },
		{ "ip_groups", STAT_U64, &ps->mem_ip_groups, 0 },
		{ "ip_connections", STAT_U64, &t->fetch.conns_bytes, 0 },
		{ "robots_cache", STAT_U64, &ps->robots_bytes, 0 },
		{ "dns_cache", STAT_U64, &t->dns.bytes, 0 },
		{ "sieve_side_table", STAT_U64, &t->sieve.meta.mem_bytes, 0 },
		{ "near_dup", STAT_U64, &t->parse.mem_near_dup, 0 },
		{ "parse_queue", STAT_U64, &t->parse.mem_queued, 0 },
	};
	size_t n = sizeof mem_e / sizeof mem_e[0];
	d->mem_frontier_urls = fs->mem_bytes - fs->mem_hosts - fs->mem_queues;
	d->mem_total = 0;
	for (size_t i = 0; i < n; i++)
		d->mem_total += entry_u64(&mem_e[i]);
	memcpy(e, mem_e, sizeof mem_e);
	e[n] = (struct stat_entry){ "total", STAT_U64, &d->mem_total, 0 };
	return n + 1;
}

static void write_stats(FILE *f, const struct crawl_stats *s, struct stats_derived *d,
                        enum crawl_stats_format fmt)
{
	const struct figures *t = &s->total;
	const struct frontier_stats *fs = &t->frontier;
	const struct politeness_stats *ps = &t->politeness;
	const struct dns_stats *ds = &t->dns;
	const struct stat_series series = { s->samples, s->n_samples, d->interval_s };
	struct stat_table status = { d->status_e, status_entries(&t->visit, d, d->status_e) };
	struct stat_table errors = { d->error_e, error_entries(t, d->error_e, d->dns_names) };
	struct stat_table scope = { d->scope_e, scope_entries(s->src->scope, d, d->scope_e) };
	struct stat_table sieve = { d->sieve_e, sieve_entries(s, d, d->sieve_e) };
	struct stat_table memory = { d->memory_e, memory_entries(t, d, d->memory_e) };
	const struct stat_entry hosts_e[] = {
		{ "total", STAT_U64, &fs->hosts, 0 },
		{ "visiting", STAT_U64, &ps->hosts_held, 0 },
		{ "waiting", STAT_U64, &ps->hosts_in_heap, 0 },
		{ "idle", STAT_U64, &ps->hosts_parked, 0 },
		{ "retired", STAT_U64, &ps->hosts_retired, 0 },
		{ "dns_failed", STAT_U64, &t->visit.hosts_dns_failed, 0 },
		{ "robots_retired", STAT_U64, &t->visit.hosts_robots_retired, 0 },
		{ "family_fallbacks", STAT_U64, &t->visit.family_fallbacks, 0 },
		{ "dropped_urls", STAT_U64, &fs->dropped_retired, 0 },
	};
	const struct stat_entry frontier_e[] = {
		STAT_OF(STAT_U64, fs, pushed),
		STAT_OF(STAT_U64, fs, popped),
		{ "left", STAT_U64, &fs->urls_queued, 0 },
		STAT_OF(STAT_U64, fs, disk_bytes),
		STAT_OF(STAT_U64, fs, refills),
		STAT_OF(STAT_U64, fs, rejected_budget),
	};
	const struct stat_entry dns_e[] = {
		STAT_OF(STAT_U64, ds, lookups),    STAT_OF(STAT_U64, ds, queries),
		STAT_OF(STAT_U64, ds, cache_hits), STAT_OF(STAT_U64, ds, coalesced),
		STAT_OF(STAT_U64, ds, failures),
	};
	const struct stat_entry ckpt_e[] = {
		{ "written", STAT_U64, &t->ckpt.written, 0 },
		{ "failed", STAT_U64, &t->ckpt.failed, 0 },
		{ "seconds_total", STAT_F3, &d->ckpt_s_total, 0 },
		{ "seconds_max", STAT_F3, &d->ckpt_s_max, 0 },
		{ "fetch_pause_seconds_max", STAT_F3, &d->ckpt_nofetch_s, 0 },
		{ "drain_seconds_max", STAT_F3, &d->ckpt_drain_s, 0 },
		{ "flush_seconds_max", STAT_F3, &d->ckpt_flush_s, 0 },
		{ "writer_seconds_max", STAT_F3, &d->ckpt_writer_s, 0 },
		{ "files_seconds_max", STAT_F3, &d->ckpt_files_s, 0 },
		{ "files_cpu_seconds_max", STAT_F3, &d->ckpt_files_cpu_s, 0 },
		{ "snapshot_seconds_max", STAT_F3, &d->ckpt_snapshot_s, 0 },
		{ "commit_seconds_max", STAT_F3, &d->ckpt_commit_s, 0 },
		STAT_OF(STAT_BOOL, d, resumed),
		{ "tail_replayed", STAT_U64, &t->tail.replayed, 0 },
		{ "tail_lines_skipped", STAT_U64, &t->tail.lines_skipped, 0 },
		{ "tail_skipped", STAT_U64, &t->sum.tail_skipped, 0 },
		{ "tail_recovered", STAT_U64, &t->tail.recovered, 0 },
	};
	const struct stat_entry stall_e[] = {
		{ "count", STAT_U64, &t->stalls, 0 },
		{ "seconds", STAT_F3, &t->stall_s, 0 },
	};
	const struct stat_entry focus_e[] = {
		{ "pages_scored", STAT_U64, &t->parse.focus_scored, 0 },
		{ "mean_score", STAT_F6, &d->focus_mean, 0 },
		{ "on_topic", STAT_U64, &t->parse.focus_on_topic, 0 },
	};
	const struct stat_table focus = TABLE(focus_e);
	const struct stat_entry sitemap_e[] = {
		{ "parsed", STAT_U64, &t->parse.sitemaps, 0 },
		{ "urls", STAT_U64, &t->parse.sitemap_urls, 0 },
		{ "problems", STAT_U64, &t->parse.sitemap_problems, 0 },
		{ "not_registered", STAT_U64, &t->sum.sitemaps_dropped, 0 },
		{ "urls_over_limit", STAT_U64, &t->parse.sitemap_urls_over_limit, 0 },
	};
	const struct stat_entry rules_e[] = {
		{ "rules", STAT_U64, &d->rules_n, 0 },
		{ "added", STAT_U64, &d->rules_added, 0 },
		{ "accepted", STAT_U64, &d->rules_accepted, 0 },
		{ "rejected", STAT_U64, &d->rules_rejected, 0 },
		{ "no_match", STAT_U64, &d->rules_no_match, 0 },
		{ "dropped_queued", STAT_U64, &t->loop.rules_dropped, 0 },
		{ "by_rule", STAT_RULES, s->src->rules, 0 },
	};
	const struct stat_entry steer_e[] = {
		{ "applied", STAT_U64, &d->steer.applied, 0 },
		{ "refused", STAT_U64, &d->steer.refused, 0 },
		{ "seeds", STAT_U64, &d->steer.seeds, 0 },
		{ "paused", STAT_U64, &d->paused, 0 },
	};
	const struct stat_entry requisite_e[] = {
		{ "found", STAT_U64, &t->parse.embeds, 0 },
		{ "added", STAT_U64, &t->parse.embeds_added, 0 },
		{ "off_domain", STAT_U64, &t->parse.embeds_off_domain, 0 },
		{ "stylesheets_parsed", STAT_U64, &t->parse.stylesheets, 0 },
	};
	const struct stat_entry recrawl_e[] = {
		{ "conditional", STAT_U64, &t->visit.conditional, 0 },
		{ "not_modified", STAT_U64, &t->visit.status[304], 0 },
		{ "earlier_parsed", STAT_U64, &t->parse.earlier_parsed, 0 },
		{ "earlier_unreadable", STAT_U64, &t->parse.earlier_unreadable, 0 },
		{ "history_pages", STAT_U64, &d->previous.urls, 0 },
		{ "history_lines_skipped", STAT_U64, &d->previous.bad_lines, 0 },
		{ "indexes", STAT_U64, &d->previous.indexes, 0 },
		{ "indexes_read_as_history", STAT_U64, &d->previous.indexes_by_history, 0 },
		{ "index_lines_not_pages", STAT_U64, &d->previous.cdxj_skipped, 0 },
		{ "index_records_unreadable", STAT_U64, &t->writer.index_records_unreadable, 0 },
	};
	const struct stat_table recrawl = TABLE(recrawl_e);
	const struct stat_table hosts = TABLE(hosts_e), frontier = TABLE(frontier_e),
	                        dns = TABLE(dns_e), ckpt = TABLE(ckpt_e), stalls = TABLE(stall_e),
	                        sitemaps = TABLE(sitemap_e), requisites = TABLE(requisite_e),
	                        rules = TABLE(rules_e), steering = TABLE(steer_e);
	const struct stat_entry top_e[] = {
		{ "pages", STAT_U64, &t->visit.pages_done, 0 },
		{ "requests", STAT_U64, &t->visit.requests, 0 },
		{ "robots_fetches", STAT_U64, &t->visit.robots_fetches, 0 },
		{ "bytes", STAT_U64, &t->visit.bytes, 0 },
		{ "elapsed_s", STAT_F3, &d->elapsed, 0 },
		STAT_OF(STAT_F2, d, pages_per_s),
		{ "cpu_s", STAT_F3, &d->cpu, 0 },
		STAT_OF(STAT_LONG, d, peak_rss_kb),
		{ "status", STAT_OBJECT, &status, 0 },
		{ "errors", STAT_OBJECT, &errors, 0 },
		{ "scope_rejected", STAT_OBJECT, &scope, 0 },
		{ "url_rules", STAT_OBJECT, &rules, 0 },
		{ "steering", STAT_OBJECT, &steering, 0 },
		{ "redirects", STAT_U64, &t->visit.redirects, 0 },
		{ "disallowed_yields", STAT_U64, &t->visit.disallowed_yields, 0 },
		{ "idle_connections_shut", STAT_U64, &t->fetch.idle_conns_shut, 0 },
		{ "near_duplicates", STAT_U64, &t->parse.near_dups, 0 },
		{ "parsed", STAT_U64, &t->parse.parsed, 0 },
		{ "links", STAT_U64, &t->parse.links, 0 },
		{ "links_new", STAT_U64, &t->sieve.emits_pushed, 0 },
		{ "nofollow", STAT_U64, &t->parse.nofollow, 0 },
		{ "focus", STAT_OBJECT, &focus, 0 },
		{ "sitemaps", STAT_OBJECT, &sitemaps, 0 },
		{ "requisites", STAT_OBJECT, &requisites, 0 },
		{ "warc_revisits", STAT_U64, &t->writer.revisits, 0 },
		{ "recrawl", STAT_OBJECT, &recrawl, 0 },
		{ "hosts", STAT_OBJECT, &hosts, 0 },
		{ "frontier", STAT_OBJECT, &frontier, 0 },
		{ "sieve", STAT_OBJECT, &sieve, 0 },
		{ "dns", STAT_OBJECT, &dns, 0 },
		{ "checkpoints", STAT_OBJECT, &ckpt, 0 },
		{ "memory", STAT_OBJECT, &memory, 0 },
		{ "output_stalls", STAT_OBJECT, &stalls, 0 },
		{ "pages_per_s_interval_s", STAT_UINT, &d->interval_s, 0 },
		{ "pages_per_s_series", STAT_SERIES, &series, 0 },
	};
	const struct stat_table top = TABLE(top_e);
	if (fmt == CRAWL_STATS_PROMETHEUS)
		prom_table(f, &top, "crawler");
	else
		json_table(f, &top, "{\n  ", ",\n  ", "\n}\n");
}

int crawl_stats_write(FILE *f, struct crawl_stats *s, enum crawl_stats_format fmt)
{
	struct stats_derived *d = calloc(1, sizeof *d);
	if (!d)
		return -1;
	gather(s);
	derive(s, d);
	write_stats(f, s, d, fmt);
	free(d);
	return ferror(f) ? -1 : 0;
}

int crawl_stats_write_json(struct crawl_stats *s)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/stats.json", s->output->dir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int rc = crawl_stats_write(f, s, CRAWL_STATS_JSON);
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* ---- stdout and stderr ---- */

void crawl_stats_print_summary(struct crawl_stats *s)
{
	struct stat_entry e[2 * VISIT_ERRORS + 1];
	char names[VISIT_ERRORS][64];
	const struct figures *t = &s->total;
	double elapsed = (double)crawl_stats_elapsed_us(s) / 1e6;
	int any = 0;
	gather(s);
	printf("crawl finished: %" PRIu64 " pages, %" PRIu64 " requests (%" PRIu64
	       " robots.txt), %.2f MB in %.1f s, %.1f pages/s\n",
	       t->visit.pages_done, t->visit.requests, t->visit.robots_fetches,
	       (double)t->visit.bytes / 1e6, elapsed,
	       elapsed > 0 ? (double)t->visit.pages_done / elapsed : 0.0);
	size_t n = error_code_entries(&t->visit, e, names, 0);
	e[n++] = (struct stat_entry)REASON("robots-disallowed", STAT_U64,
	                                   &t->visit.robots_disallowed);
	printf("errors:");
	for (size_t i = 0; i < n; i++)
		if (entry_u64(&e[i])) {
			printf(" %s=%" PRIu64, e[i].name, entry_u64(&e[i]));
			any = 1;
		}
	printf("%s\n", any ? "" : " none");
	printf("output: %s/crawl.log %s/stats.json%s\n", s->output->dir, s->output->dir,
	       s->output->warc ? " and WARC files crawl-*.warc.gz" : "");
}

void crawl_stats_print_progress(struct crawl_stats *s, const char *cluster, const char *stall,
                                int final)
{
	const struct figures *t = &s->total;
	double el = (double)crawl_stats_elapsed_us(s) / 1e6;
	uint64_t errs = 0;
	gather(s);
	for (int i = 1; i < VISIT_ERRORS; i++)
		errs += t->visit.fetch_errors[i];
	fprintf(stderr,
	        "\r%" PRIu64 " pages  %.0f p/s  %.2f MB/s  in flight %zu  hosts %" PRIu64
	        " waiting/%" PRIu64 "  frontier %" PRIu64 "  dns %zu  errors %" PRIu64
	        "%s%s%s%s   %s",
	        t->visit.pages_done, el > 0 ? (double)t->visit.pages_done / el : 0.0,
	        el > 0 ? (double)t->visit.bytes / el / 1e6 : 0.0, t->in_flight,
	        t->politeness.hosts_in_heap, t->frontier.hosts, t->frontier.urls_queued,
	        t->dns.pending, errs, cluster ? "  " : "", cluster ? cluster : "",
	        stall[0] ? "  PAUSED: " : "", stall, final ? "\n" : "");
}

/* ---- the checkpoint's counters ---- */

static void put_array(struct recfile_writer *w, const uint64_t *v, uint32_t n)
{
	recfile_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		recfile_put_u64(w, v[i]);
}

void crawl_stats_save(struct crawl_stats *s, struct recfile_writer *w)
{
	gather(s);
	recfile_put_u64(w, crawl_stats_elapsed_us(s));
	recfile_put_u32(w, (uint32_t)N_SAVED);
	for (size_t i = 0; i < N_SAVED; i++) {
		const struct saved_counter *c = &saved_counters[i];
		recfile_put_bytes(w, c->name, (uint32_t)strlen(c->name));
		recfile_put_u64(w, *counter_of(&s->total, c));
	}
	put_array(w, s->total.visit.status, VISIT_STATUS_MAX);
	put_array(w, s->total.visit.dns_errors, VISIT_ERRORS);
	put_array(w, s->total.visit.fetch_errors, VISIT_ERRORS);
	put_array(w, s->samples, (uint32_t)s->n_samples);
}

static int get_array(struct recfile_reader *rd, uint64_t *v, uint32_t cap, uint32_t *n)
{
	uint32_t k;
	if (recfile_get_u32(rd, &k) != RECFILE_OK || k > cap)
		return -1;
	for (uint32_t i = 0; i < k; i++)
		if (recfile_get_u64(rd, &v[i]) != RECFILE_OK)
			return -1;
	if (n)
		*n = k;
	return 0;
}

static void set_counter(struct figures *f, const char *name, uint64_t v)
{
	for (size_t k = 0; k < N_SAVED; k++)
		if (strcmp(saved_counters[k].name, name) == 0)
			*counter_of(f, &saved_counters[k]) = v;
}

int crawl_stats_load(struct crawl_stats *s, struct recfile_reader *rd)
{
	char name[128];
	uint32_t n, nsamples;
	struct figures *b = &s->before;
	if (recfile_get_u64(rd, &s->before_us) != RECFILE_OK ||
	    recfile_get_u32(rd, &n) != RECFILE_OK)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len;
		uint64_t v;
		if (recfile_get_bytes(rd, name, sizeof name - 1, &len) != RECFILE_OK ||
		    recfile_get_u64(rd, &v) != RECFILE_OK)
			return -1;
		set_counter(b, name, v);
	}
	if (get_array(rd, b->visit.status, VISIT_STATUS_MAX, NULL) ||
	    get_array(rd, b->visit.dns_errors, VISIT_ERRORS, NULL) ||
	    get_array(rd, b->visit.fetch_errors, VISIT_ERRORS, NULL) ||
	    get_array(rd, s->samples, SAMPLES_MAX, &nsamples))
		return -1;
	s->n_samples = nsamples;
	s->last_sample_pages = b->visit.pages_done;
	return 0;
}
