/*
 * crawl_stats.c: the reports of the crawl's counters (see crawl_stats.h),
 * each one a walk over a table of entries.
 */
#include "crawler/crawl_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "frontier/base/ascii.h"
#include "frontier/base/clock.h"
#include "frontier/base/recfile.h"

/* ---- tables of named values ---- */

enum stat_kind {
	STAT_U64,    /* const uint64_t * */
	STAT_ATOMIC, /* const atomic_uint_fast64_t * */
	STAT_LONG,   /* const long * */
	STAT_F2,     /* const double *, 2 decimals */
	STAT_F3,     /* const double *, 3 decimals */
	STAT_F6,     /* const double *, 6 decimals */
	STAT_UINT,   /* const unsigned * */
	STAT_BOOL,   /* const int * */
	STAT_STR,    /* const char * (the string itself) */
	STAT_OBJECT, /* const struct stat_table *: a nested object on one line */
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
	if (e->kind == STAT_ATOMIC)
		return atomic_load((const atomic_uint_fast64_t *)e->p);
	return *(const uint64_t *)e->p;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_table(FILE *f, const struct stat_table *t, const char *open, const char *sep,
                       const char *close);

static void json_value(FILE *f, const struct stat_entry *e)
{
	switch (e->kind) {
	case STAT_U64:
	case STAT_ATOMIC: fprintf(f, "%" PRIu64, entry_u64(e)); break;
	case STAT_LONG: fprintf(f, "%ld", *(const long *)e->p); break;
	case STAT_F2: fprintf(f, "%.2f", *(const double *)e->p); break;
	case STAT_F3: fprintf(f, "%.3f", *(const double *)e->p); break;
	case STAT_F6: fprintf(f, "%.6f", *(const double *)e->p); break;
	case STAT_UINT: fprintf(f, "%u", *(const unsigned *)e->p); break;
	case STAT_BOOL: fputs(*(const int *)e->p ? "true" : "false", f); break;
	case STAT_STR: json_str(f, e->p); break;
	case STAT_OBJECT: json_table(f, e->p, "{", ", ", "}"); break;
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

/* The "errors" object: fetch and DNS errors by name, then the crawl's own
 * reasons; only those that happened. names holds the DNS keys. */
static size_t error_entries(const struct crawl_stats *s, const struct crawl_stats_sources *src,
                            struct stat_entry *e, char (*names)[64])
{
	size_t n = 0;
	for (int i = 1; i < CRAWL_STATS_ERRORS; i++)
		e[n++] = (struct stat_entry){ fetch_strerror((enum fetch_error)i), STAT_U64,
			                      &s->fetch_errors[i], 1 };
	for (int i = 1; i < CRAWL_STATS_ERRORS; i++) {
		const char *dn = dns_strerror((enum dns_error)i);
		snprintf(names[i], sizeof names[i], "%s%s",
		         strncmp(dn, "dns", 3) == 0 ? "" : "dns-", dn);
		e[n++] = (struct stat_entry){ names[i], STAT_U64, &s->dns_errors[i], 1 };
	}
	const struct stat_entry extra[] = {
		REASON("robots-disallowed", STAT_U64, &s->robots_disallowed),
		REASON("private-address", STAT_U64, &s->private_refused),
		REASON("decode", STAT_ATOMIC, &s->ac.decode_errors),
		REASON("truncated", STAT_U64, &src->fetch.truncated),
		REASON("retry-later", STAT_U64, &src->politeness.retry_laters),
		REASON("parse-queue-full", STAT_U64, &s->parse_full),
		REASON("writer-queue-full", STAT_U64, &s->writer_full),
		REASON("writer-io", STAT_ATOMIC, &s->ac.writer_errors),
		REASON("url-invalid", STAT_ATOMIC, &s->ac.url_invalid),
		REASON("seed-invalid", STAT_ATOMIC, &s->ac.seeds_invalid),
		REASON("sieve", STAT_ATOMIC, &s->ac.sieve_errors),
		REASON("sieve-meta-missing", STAT_ATOMIC, &s->ac.meta_missing),
		REASON("sieve-meta-dropped", STAT_ATOMIC, &s->ac.meta_dropped),
		REASON("redirect-dropped", STAT_U64, &s->redirect_dropped),
		REASON("redirect-limit", STAT_U64, &s->redirect_limit),
		REASON("keepalive-closed", STAT_U64, &s->reuse_retries),
		REASON("robots-redirect-limit", STAT_U64, &s->robots_redirect_limit),
		REASON("robots-unreachable", STAT_U64, &s->robots_unreachable),
		REASON("robots-wildcard-cap", STAT_U64, &src->politeness.robots_capped),
		REASON("ip-lease-refused", STAT_U64, &s->ip_lease_refused),
		REASON("ip-lease-redis", STAT_U64, &s->ip_lease_errors),
		REASON("emit-dropped", STAT_ATOMIC, &s->ac.emit_dropped),
		REASON("sitemap-malformed", STAT_ATOMIC, &s->ac.sitemap_malformed),
		REASON("sitemap-too-large", STAT_ATOMIC, &s->ac.sitemap_too_large),
		REASON("sitemap-too-many-urls", STAT_ATOMIC, &s->ac.sitemap_too_many),
	};
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
		e[n++] = extra[i];
	return n;
}

/* Derived figures the tables point at. */
struct stats_derived {
	double elapsed, pages_per_s, cpu, flush_s_total, flush_s_max, z_per_sig;
	double ckpt_s_total, ckpt_s_max, stall_s;
	long peak_rss_kb;
	uint64_t status_v[CRAWL_STATS_STATUS_MAX], scope_v[SCOPE_VERDICT_COUNT];
	char status_names[CRAWL_STATS_STATUS_MAX][4];
	char dns_names[CRAWL_STATS_ERRORS][64];
	struct stat_entry status_e[CRAWL_STATS_STATUS_MAX + 1], error_e[4 * CRAWL_STATS_ERRORS],
	        scope_e[SCOPE_VERDICT_COUNT];
};

static void derive(const struct crawl_stats *s, const struct crawl_stats_sources *src,
                   double elapsed, struct stats_derived *d)
{
	struct rusage ru;
	const struct sieve_stats *ss = &src->sieve;
	d->elapsed = elapsed;
	d->pages_per_s = elapsed > 0 ? (double)s->pages_done / elapsed : 0.0;
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
	d->ckpt_s_total = (double)s->ckpt_us_total / 1e6;
	d->ckpt_s_max = (double)s->ckpt_us_max / 1e6;
	d->stall_s = src->stall_s;
}

static size_t status_entries(const struct crawl_stats *s, struct stats_derived *d,
                             struct stat_entry *e)
{
	size_t n = 0;
	for (int i = 0; i < CRAWL_STATS_STATUS_MAX; i++) {
		if (!s->status[i])
			continue;
		snprintf(d->status_names[i], sizeof d->status_names[i], "%d", i);
		e[n++] = (struct stat_entry){ d->status_names[i], STAT_U64, &s->status[i], 0 };
	}
	if (s->status_other) /* 600..999 and beyond: no class of RFC 9110 */
		e[n++] = (struct stat_entry){ "other", STAT_U64, &s->status_other, 0 };
	return n;
}

static size_t scope_entries(const struct crawl_stats_sources *src, struct stats_derived *d,
                            struct stat_entry *e)
{
	size_t n = 0;
	for (int v = 1; v < SCOPE_VERDICT_COUNT; v++) {
		d->scope_v[v] = scope_count(src->scope, (enum scope_verdict)v);
		e[n++] = (struct stat_entry){ scope_verdict_name((enum scope_verdict)v), STAT_U64,
			                      &d->scope_v[v], 0 };
	}
	return n;
}

static void write_stats(FILE *f, const struct crawl_stats *s, const struct crawl_stats_sources *src,
                        struct stats_derived *d, enum crawl_stats_format fmt)
{
	const struct frontier_stats *fs = &src->frontier;
	const struct sieve_stats *ss = &src->sieve;
	const struct link_meta_stats *ms = &src->meta;
	const struct dns_stats *ds = &src->dns;
	const char *impl = src->cfg->sieve.impl ? src->cfg->sieve.impl : "mercator";
	const struct stat_series series = { s->samples, s->n_samples,
		                            src->cfg->output.stats_interval_s };
	struct stat_table status = { d->status_e, status_entries(s, d, d->status_e) };
	struct stat_table errors = { d->error_e, error_entries(s, src, d->error_e, d->dns_names) };
	struct stat_table scope = { d->scope_e, scope_entries(src, d, d->scope_e) };
	const struct stat_entry hosts_e[] = {
		{ "total", STAT_U64, &fs->hosts, 0 },
		{ "visiting", STAT_U64, &src->politeness.hosts_held, 0 },
		{ "waiting", STAT_U64, &src->politeness.hosts_in_heap, 0 },
		{ "idle", STAT_U64, &src->politeness.hosts_parked, 0 },
		{ "retired", STAT_U64, &src->politeness.hosts_retired, 0 },
		{ "dns_failed", STAT_U64, &s->hosts_dns_failed, 0 },
		STAT_OF(STAT_U64, s, family_fallbacks),
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
	const struct stat_entry sieve_e[] = {
		{ "impl", STAT_STR, impl, 0 },
		STAT_OF(STAT_U64, ss, added),
		STAT_OF(STAT_U64, ss, emitted),
		STAT_OF(STAT_U64, ss, cache_drops),
		STAT_OF(STAT_U64, ss, flushes),
		STAT_OF(STAT_U64, s, forced_flushes),
		STAT_OF(STAT_U64, s, early_flushes),
		{ "meta_full_flushes", STAT_ATOMIC, &s->ac.meta_flushes, 0 },
		STAT_OF(STAT_F6, d, flush_s_total),
		STAT_OF(STAT_F6, d, flush_s_max),
		STAT_OF(STAT_U64, ss, add_waits),
		STAT_OF(STAT_U64, ss, buffer_urls),
		STAT_OF(STAT_U64, ss, z_count),
		STAT_OF(STAT_U64, ss, z_bytes),
		{ "z_bytes_per_signature", STAT_F3, &d->z_per_sig, 0 },
		{ "skipped_present", STAT_ATOMIC, &s->ac.meta_present, 0 },
		{ "meta_capacity", STAT_U64, &ms->capacity, 0 },
		{ "meta_peak_entries", STAT_U64, &ms->peak_entries, 0 },
		{ "meta_entries_left", STAT_U64, &ms->entries, 0 },
		{ "meta_swept", STAT_U64, &ms->swept, 0 },
		{ "meta_full", STAT_U64, &ms->full, 0 },
	};
	const struct stat_entry dns_e[] = {
		STAT_OF(STAT_U64, ds, lookups),    STAT_OF(STAT_U64, ds, queries),
		STAT_OF(STAT_U64, ds, cache_hits), STAT_OF(STAT_U64, ds, coalesced),
		STAT_OF(STAT_U64, ds, failures),
	};
	const struct stat_entry ckpt_e[] = {
		{ "written", STAT_U64, &s->ckpt_count, 0 },
		{ "failed", STAT_U64, &s->ckpt_failures, 0 },
		{ "seconds_total", STAT_F3, &d->ckpt_s_total, 0 },
		{ "seconds_max", STAT_F3, &d->ckpt_s_max, 0 },
		STAT_OF(STAT_BOOL, src, resumed),
		STAT_OF(STAT_U64, s, tail_replayed),
		STAT_OF(STAT_U64, s, tail_skipped),
	};
	const struct stat_entry stall_e[] = {
		{ "count", STAT_U64, &src->stalls, 0 },
		{ "seconds", STAT_F3, &d->stall_s, 0 },
	};
	const struct stat_entry sitemap_e[] = {
		{ "parsed", STAT_ATOMIC, &s->ac.sitemaps, 0 },
		{ "urls", STAT_ATOMIC, &s->ac.sitemap_urls, 0 },
		{ "problems", STAT_ATOMIC, &s->ac.sitemap_problems, 0 },
		{ "not_registered", STAT_ATOMIC, &s->ac.sitemaps_dropped, 0 },
		{ "urls_over_limit", STAT_ATOMIC, &s->ac.sitemap_urls_over_limit, 0 },
	};
	const struct stat_entry requisite_e[] = {
		{ "found", STAT_ATOMIC, &s->ac.embeds, 0 },
		{ "added", STAT_ATOMIC, &s->ac.embeds_added, 0 },
		{ "off_domain", STAT_ATOMIC, &s->ac.embeds_off_domain, 0 },
		{ "stylesheets_parsed", STAT_ATOMIC, &s->ac.stylesheets, 0 },
	};
	const struct stat_table hosts = TABLE(hosts_e), frontier = TABLE(frontier_e),
	                        sieve = TABLE(sieve_e), dns = TABLE(dns_e), ckpt = TABLE(ckpt_e),
	                        stalls = TABLE(stall_e), sitemaps = TABLE(sitemap_e),
	                        requisites = TABLE(requisite_e);
	const struct stat_entry top_e[] = {
		{ "pages", STAT_U64, &s->pages_done, 0 },
		STAT_OF(STAT_U64, s, requests),
		STAT_OF(STAT_U64, s, robots_fetches),
		STAT_OF(STAT_U64, s, bytes),
		{ "elapsed_s", STAT_F3, &d->elapsed, 0 },
		STAT_OF(STAT_F2, d, pages_per_s),
		{ "cpu_s", STAT_F3, &d->cpu, 0 },
		STAT_OF(STAT_LONG, d, peak_rss_kb),
		{ "status", STAT_OBJECT, &status, 0 },
		{ "errors", STAT_OBJECT, &errors, 0 },
		{ "scope_rejected", STAT_OBJECT, &scope, 0 },
		STAT_OF(STAT_U64, s, redirects),
		{ "idle_connections_shut", STAT_U64, &src->fetch.idle_conns_shut, 0 },
		{ "near_duplicates", STAT_ATOMIC, &s->ac.near_dups, 0 },
		{ "parsed", STAT_ATOMIC, &s->ac.parsed, 0 },
		{ "links", STAT_ATOMIC, &s->ac.links, 0 },
		{ "links_new", STAT_ATOMIC, &s->ac.emits_pushed, 0 },
		{ "nofollow", STAT_ATOMIC, &s->ac.nofollow, 0 },
		{ "sitemaps", STAT_OBJECT, &sitemaps, 0 },
		{ "requisites", STAT_OBJECT, &requisites, 0 },
		{ "warc_revisits", STAT_ATOMIC, &s->ac.warc_revisits, 0 },
		{ "hosts", STAT_OBJECT, &hosts, 0 },
		{ "frontier", STAT_OBJECT, &frontier, 0 },
		{ "sieve", STAT_OBJECT, &sieve, 0 },
		{ "dns", STAT_OBJECT, &dns, 0 },
		{ "checkpoints", STAT_OBJECT, &ckpt, 0 },
		{ "output_stalls", STAT_OBJECT, &stalls, 0 },
		{ "pages_per_s_interval_s", STAT_UINT, &src->cfg->output.stats_interval_s, 0 },
		{ "pages_per_s_series", STAT_SERIES, &series, 0 },
	};
	const struct stat_table top = TABLE(top_e);
	if (fmt == CRAWL_STATS_PROMETHEUS)
		prom_table(f, &top, "crawler");
	else
		json_table(f, &top, "{\n  ", ",\n  ", "\n}\n");
}

int crawl_stats_write(FILE *f, const struct crawl_stats *s, const struct crawl_stats_sources *src,
                      double elapsed, enum crawl_stats_format fmt)
{
	struct stats_derived *d = calloc(1, sizeof *d);
	if (!d)
		return -1;
	derive(s, src, elapsed, d);
	write_stats(f, s, src, d, fmt);
	free(d);
	return ferror(f) ? -1 : 0;
}

int crawl_stats_write_json(const struct crawl_stats *s, const struct crawl_stats_sources *src,
                           const char *path, double elapsed)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int rc = crawl_stats_write(f, s, src, elapsed, CRAWL_STATS_JSON);
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* ---- stdout and stderr ---- */

void crawl_stats_print_summary(const struct crawl_stats *s, const struct crawl_config *cfg,
                               double elapsed)
{
	struct stat_entry e[2 * CRAWL_STATS_ERRORS + 1];
	size_t n = 0;
	int any = 0;
	printf("crawl finished: %" PRIu64 " pages, %" PRIu64 " requests (%" PRIu64
	       " robots.txt), %.2f MB in %.1f s, %.1f pages/s\n",
	       s->pages_done, s->requests, s->robots_fetches, (double)s->bytes / 1e6, elapsed,
	       elapsed > 0 ? (double)s->pages_done / elapsed : 0.0);
	for (int i = 1; i < CRAWL_STATS_ERRORS; i++)
		e[n++] = (struct stat_entry){ fetch_strerror((enum fetch_error)i), STAT_U64,
			                      &s->fetch_errors[i], 1 };
	for (int i = 1; i < CRAWL_STATS_ERRORS; i++)
		e[n++] = (struct stat_entry){ dns_strerror((enum dns_error)i), STAT_U64,
			                      &s->dns_errors[i], 1 };
	e[n++] = (struct stat_entry)REASON("robots-disallowed", STAT_U64, &s->robots_disallowed);
	printf("errors:");
	for (size_t i = 0; i < n; i++)
		if (entry_u64(&e[i])) {
			printf(" %s=%" PRIu64, e[i].name, entry_u64(&e[i]));
			any = 1;
		}
	printf("%s\n", any ? "" : " none");
	printf("output: %s/crawl.log %s/stats.json%s\n", cfg->output.dir, cfg->output.dir,
	       cfg->output.warc ? " and WARC files crawl-*.warc.gz" : "");
}

void crawl_stats_print_progress(const struct crawl_stats *s, const struct crawl_stats_sources *src,
                                size_t in_flight, const char *stall, int final)
{
	double el = (double)(monotonic_us() - s->t0_us) / 1e6;
	uint64_t errs = 0;
	for (int i = 1; i < CRAWL_STATS_ERRORS; i++)
		errs += s->fetch_errors[i];
	fprintf(stderr,
	        "\r%" PRIu64 " pages  %.0f p/s  %.2f MB/s  in flight %zu  hosts %" PRIu64
	        " waiting/%" PRIu64 "  frontier %" PRIu64 "  dns %zu  errors %" PRIu64
	        "%s%s%s%s   %s",
	        s->pages_done, el > 0 ? (double)s->pages_done / el : 0.0,
	        el > 0 ? (double)s->bytes / el / 1e6 : 0.0, in_flight,
	        src->politeness.hosts_in_heap, src->frontier.hosts, src->frontier.urls_queued,
	        src->dns.pending, errs, src->cluster ? "  " : "", src->cluster ? src->cluster : "",
	        stall[0] ? "  PAUSED: " : "", stall, final ? "\n" : "");
}

void crawl_stats_sample(struct crawl_stats *s)
{
	if (s->n_samples >= CRAWL_STATS_SAMPLES)
		return;
	s->samples[s->n_samples++] = s->pages_done - s->last_sample_pages;
	s->last_sample_pages = s->pages_done;
}

/* ---- the checkpoint's counters ---- */

struct saved_counter {
	const char *name;
	size_t off;
	int atomic;
};
#define LOOP_COUNTER(f)                                                                            \
	{                                                                                          \
#f, offsetof(struct crawl_stats, f), 0                                             \
	}
#define ATOMIC_COUNTER(f)                                                                          \
	{                                                                                          \
		"ac." #f, offsetof(struct crawl_stats, ac.f), 1                                    \
	}
static const struct saved_counter saved_counters[] = {
	LOOP_COUNTER(pages_done),
	LOOP_COUNTER(requests),
	LOOP_COUNTER(bytes),
	LOOP_COUNTER(robots_fetches),
	LOOP_COUNTER(robots_disallowed),
	LOOP_COUNTER(redirects),
	LOOP_COUNTER(private_refused),
	LOOP_COUNTER(parse_full),
	LOOP_COUNTER(writer_full),
	LOOP_COUNTER(hosts_dns_failed),
	LOOP_COUNTER(family_fallbacks),
	LOOP_COUNTER(ip_lease_refused),
	LOOP_COUNTER(ip_lease_errors),
	LOOP_COUNTER(redirect_dropped),
	LOOP_COUNTER(redirect_limit),
	LOOP_COUNTER(robots_redirect_limit),
	LOOP_COUNTER(robots_unreachable),
	LOOP_COUNTER(status_other),
	LOOP_COUNTER(forced_flushes),
	LOOP_COUNTER(early_flushes),
	LOOP_COUNTER(ckpt_count),
	LOOP_COUNTER(ckpt_failures),
	LOOP_COUNTER(ckpt_us_total),
	LOOP_COUNTER(ckpt_us_max),
	LOOP_COUNTER(tail_replayed),
	LOOP_COUNTER(tail_skipped),
	ATOMIC_COUNTER(parsed),
	ATOMIC_COUNTER(links),
	ATOMIC_COUNTER(scope_rejected),
	ATOMIC_COUNTER(nofollow),
	ATOMIC_COUNTER(near_dups),
	ATOMIC_COUNTER(decode_errors),
	ATOMIC_COUNTER(emit_dropped),
	ATOMIC_COUNTER(writer_errors),
	ATOMIC_COUNTER(warc_revisits),
	ATOMIC_COUNTER(url_invalid),
	ATOMIC_COUNTER(seeds_invalid),
	ATOMIC_COUNTER(meta_present),
	ATOMIC_COUNTER(meta_dropped),
	ATOMIC_COUNTER(meta_missing),
	ATOMIC_COUNTER(meta_flushes),
	ATOMIC_COUNTER(sieve_errors),
	ATOMIC_COUNTER(emits_pushed),
	ATOMIC_COUNTER(keys_added),
	ATOMIC_COUNTER(sitemaps),
	ATOMIC_COUNTER(sitemap_urls),
	ATOMIC_COUNTER(sitemap_problems),
	ATOMIC_COUNTER(sitemaps_dropped),
	ATOMIC_COUNTER(sitemap_malformed),
	ATOMIC_COUNTER(sitemap_too_large),
	ATOMIC_COUNTER(sitemap_too_many),
	ATOMIC_COUNTER(sitemap_urls_over_limit),
	ATOMIC_COUNTER(embeds),
	ATOMIC_COUNTER(embeds_added),
	ATOMIC_COUNTER(embeds_off_domain),
	ATOMIC_COUNTER(stylesheets),
};
#define N_SAVED (sizeof saved_counters / sizeof saved_counters[0])

static void put_array(struct recfile_writer *w, const uint64_t *v, uint32_t n)
{
	recfile_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		recfile_put_u64(w, v[i]);
}

void crawl_stats_save(const struct crawl_stats *s, struct recfile_writer *w)
{
	recfile_put_u32(w, (uint32_t)N_SAVED);
	for (size_t i = 0; i < N_SAVED; i++) {
		const struct saved_counter *c = &saved_counters[i];
		const char *p = (const char *)s + c->off;
		uint64_t v = c->atomic ? atomic_load((const atomic_uint_fast64_t *)(const void *)p)
		                       : *(const uint64_t *)(const void *)p;
		recfile_put_bytes(w, c->name, (uint32_t)strlen(c->name));
		recfile_put_u64(w, v);
	}
	put_array(w, s->status, CRAWL_STATS_STATUS_MAX);
	put_array(w, s->dns_errors, CRAWL_STATS_ERRORS);
	put_array(w, s->fetch_errors, CRAWL_STATS_ERRORS);
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

static void set_counter(struct crawl_stats *s, const char *name, uint64_t v)
{
	for (size_t k = 0; k < N_SAVED; k++) {
		const struct saved_counter *c = &saved_counters[k];
		if (strcmp(c->name, name) != 0)
			continue;
		char *p = (char *)s + c->off;
		if (c->atomic)
			atomic_store((atomic_uint_fast64_t *)(void *)p, v);
		else
			*(uint64_t *)(void *)p = v;
	}
}

int crawl_stats_load(struct crawl_stats *s, struct recfile_reader *rd)
{
	char name[128];
	uint32_t n, nsamples;
	if (recfile_get_u32(rd, &n) != RECFILE_OK)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len;
		uint64_t v;
		if (recfile_get_bytes(rd, name, sizeof name, &len) != RECFILE_OK ||
		    recfile_get_u64(rd, &v) != RECFILE_OK)
			return -1;
		set_counter(s, name, v);
	}
	s->pages_started = s->pages_done; /* what was in flight is queued again */
	if (get_array(rd, s->status, CRAWL_STATS_STATUS_MAX, NULL) ||
	    get_array(rd, s->dns_errors, CRAWL_STATS_ERRORS, NULL) ||
	    get_array(rd, s->fetch_errors, CRAWL_STATS_ERRORS, NULL) ||
	    get_array(rd, s->samples, CRAWL_STATS_SAMPLES, &nsamples))
		return -1;
	s->n_samples = nsamples;
	s->last_sample_pages = s->pages_done;
	return 0;
}
