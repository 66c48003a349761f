/*
 * crawl_stats.h: the crawl's counters, and the reports made of them
 * (stats.json, the summary on stdout, the progress line on stderr, the
 * counters a checkpoint carries).
 *
 * struct crawl_stats is plain data owned by crawl_run; every piece of the
 * crawl is given a pointer to it at creation and only adds to it. Each
 * field has one writer: the fields outside `ac` belong to the fetch loop
 * thread; those in `ac` (atomics) may be bumped by any thread (parse
 * threads, the feeder, the sieve's flush thread, the writer).
 *
 * The reports walk tables of {name, kind, pointer} entries: stats.json's
 * keys are those of the tables in crawl_stats.c, nothing else prints
 * them. The checkpoint's counters are saved by name ("pages_done",
 * "ac.parsed", ...), so a later version may add or drop one and still
 * read an older state.
 *
 * Workload: one add per event on the page path; the reports run once a
 * second (progress) and once per crawl (stats.json, summary).
 */
#ifndef CRAWLER_CRAWL_STATS_H
#define CRAWLER_CRAWL_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "crawler/config/config.h"
#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"
#include "crawler/link_meta.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "politeness/politeness.h"
#include "sieve/sieve.h"

#define CRAWL_STATS_STATUS_MAX 600 /* HTTP status codes counted one by one */
#define CRAWL_STATS_ERRORS 17      /* fetch and DNS error codes counted */
#define CRAWL_STATS_SAMPLES 8640   /* pages/s samples kept for the series */

/* Counters any thread may bump. */
struct crawl_stats_atomic {
	atomic_uint_fast64_t parsed, links, scope_rejected, nofollow, near_dups, decode_errors,
	        emit_dropped, writer_errors, warc_revisits;
	/* sitemaps: parsed, their URLs taken, parsed with a problem, not
	 * registered (the registry was full) */
	atomic_uint_fast64_t sitemaps, sitemap_urls, sitemap_problems, sitemaps_dropped;
	/* sitemap files malformed (XML, gzip, not a sitemap, too deep), cut at
	 * sitemap_max_bytes, with more than sitemap_max_urls entries; entries
	 * dropped past that */
	atomic_uint_fast64_t sitemap_malformed, sitemap_too_large, sitemap_too_many,
	        sitemap_urls_over_limit;
	/* page requisites: embeds found, in scope and handed to the sieve,
	 * of those off the allowed domains, stylesheets parsed */
	atomic_uint_fast64_t embeds, embeds_added, embeds_off_domain, stylesheets;
	/* the sieve path */
	atomic_uint_fast64_t url_invalid, seeds_invalid, meta_present, meta_dropped, meta_missing,
	        meta_flushes, sieve_errors, emits_pushed, keys_added;
};

struct crawl_stats {
	/* fetch loop thread */
	uint64_t t0_us;             /* monotonic start, minus the runs before a resume */
	uint64_t elapsed_before_us; /* crawl time of the runs before a resume */
	uint64_t pages_started, pages_done, requests, bytes, robots_fetches;
	uint64_t robots_disallowed, redirects, redirect_dropped;
	uint64_t redirect_limit;        /* redirects not followed: [fetch] max_redirects */
	uint64_t reuse_retries;         /* requests re-queued after a reused connection
	                                   closed unanswered (fetch.h reuse_dropped) */
	uint64_t robots_redirect_limit; /* robots.txt chains cut at ROBOTS_MAX_REDIRECTS */
	uint64_t robots_unreachable;    /* robots.txt 5xx/429/network error: retried */
	uint64_t status_other;          /* statuses outside 0..CRAWL_STATS_STATUS_MAX-1 */
	uint64_t private_refused, parse_full, writer_full, hosts_dns_failed;
	uint64_t family_fallbacks; /* hosts moved to their other address family */
	/* cluster crawls: requests put back because another agent held their
	 * IP's lease, or because Redis did not answer the lease (in time) */
	uint64_t ip_lease_refused, ip_lease_errors;
	uint64_t forced_flushes, early_flushes;
	uint64_t ckpt_count, ckpt_failures, ckpt_us_total, ckpt_us_max;
	uint64_t tail_replayed; /* resumes: fetches after the checkpoint taken from the tail */
	uint64_t tail_skipped;  /* queued URLs skipped: the tail had them fetched */
	uint64_t dns_errors[CRAWL_STATS_ERRORS], fetch_errors[CRAWL_STATS_ERRORS];
	uint64_t status[CRAWL_STATS_STATUS_MAX];
	uint64_t samples[CRAWL_STATS_SAMPLES]; /* pages per stats_interval_s */
	size_t n_samples;
	uint64_t last_sample_pages;
	struct crawl_stats_atomic ac;
};

/* What the other pieces report at the end (copied by the caller). */
struct crawl_stats_sources {
	const struct crawl_config *cfg;
	const char *cluster; /* the progress line's cluster part, or NULL */
	struct frontier_stats frontier;
	struct politeness_stats politeness;
	struct dns_stats dns;
	struct fetch_stats fetch;
	struct sieve_stats sieve;
	struct link_meta_stats meta;
	const struct scope *scope;
	uint64_t stalls;
	double stall_s;
	int resumed;
};

/* Records one pages/s sample (every stats_interval_s, loop thread). */
void crawl_stats_sample(struct crawl_stats *s);

/* Writes stats.json at path. 0, or -1 (errno). */
/* The figures of stats.json as they stand, to f: JSON, or Prometheus text
 * (one "crawler_PATH value" line per number, for the metrics endpoint).
 * 0, or -1 (write error). */
enum crawl_stats_format { CRAWL_STATS_JSON, CRAWL_STATS_PROMETHEUS };
int crawl_stats_write(FILE *f, const struct crawl_stats *s, const struct crawl_stats_sources *src,
                      double elapsed, enum crawl_stats_format fmt);
int crawl_stats_write_json(const struct crawl_stats *s, const struct crawl_stats_sources *src,
                           const char *path, double elapsed);

/* The end-of-crawl summary on stdout. */
void crawl_stats_print_summary(const struct crawl_stats *s, const struct crawl_config *cfg,
                               double elapsed);

/* The progress line on stderr (final: ends the line). stall: the output
 * stall's message, or "" when none. */
void crawl_stats_print_progress(const struct crawl_stats *s, const struct crawl_stats_sources *src,
                                size_t in_flight, const char *stall, int final);

struct recfile_writer;
struct recfile_reader;

/* The counters and the status, error and sample arrays, into a checkpoint's
 * state record (all threads quiet: a checkpoint's cut). */
void crawl_stats_save(const struct crawl_stats *s, struct recfile_writer *w);
/* Reads what crawl_stats_save wrote; counters of unknown names are
 * skipped. 0, or -1 (truncated or inconsistent). */
int crawl_stats_load(struct crawl_stats *s, struct recfile_reader *rd);

#endif
