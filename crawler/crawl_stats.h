/*
 * crawl_stats.h: the gatherer of the crawl's figures, and the reports made
 * of them: stats.json (and its Prometheus form for the metrics endpoint),
 * the summary on stdout, the progress line on stderr, and the counters a
 * checkpoint carries.
 *
 * Every piece of the crawl keeps its own counters and hands them out
 * through its own *_stats() call (visit_stats, sieve_path_stats,
 * parse_jobs_stats, crawl_writer_stats, crawl_ckpt_stats, the tail's
 * replay, the loop's struct crawl_loop_stats, and the modules' own:
 * frontier_stats, politeness_stats, ...); no piece writes another's. The
 * gatherer reads them through the loop's table of its pieces (struct
 * crawl_stats_sources, borrowed for the gatherer's life) at every report,
 * and keeps the figures last read of each, so a piece torn down before the
 * final report (the fetch engine, the resolver) is still counted.
 *
 * A resumed crawl: each piece counts from 0 in every run; the counters its
 * checkpoint carried are the runs before, and every report (and the next
 * checkpoint) shows the runs before plus this one. The checkpoint's
 * counters are saved by name ("pages_done", "ac.parsed", ...: the names of
 * the first crawl's shared struct, kept so that every checkpoint reads
 * back), so a later version may add or drop one and still read an older
 * state. A figure two pieces count (sitemaps not registered: the visit's
 * and the parse threads') is reported and saved as their sum.
 *
 * The reports walk tables of {name, kind, pointer} entries: stats.json's
 * keys are those of the tables in crawl_stats.c, nothing else prints them.
 *
 * Fetch loop thread only. Workload: a report reads every piece (a few
 * kilobytes) once a second (progress, a cluster agent's tick) and once per
 * crawl (stats.json, summary); the page limit reads one counter per page
 * (crawl_stats_pages_before). Memory: three sets of every piece's figures
 * (this run's, the runs before, their total: about 6 KB each, mostly the
 * counts by HTTP status) and the pages/s series (8,640 samples, 69 KB).
 */
#ifndef CRAWLER_CRAWL_STATS_H
#define CRAWLER_CRAWL_STATS_H

#include <stdint.h>
#include <stdio.h>

struct crawl_stats;
struct crawl_output;
struct visit;
struct sieve_path;
struct parse_jobs;
struct crawl_writer;
struct crawl_ckpt;
struct crawl_source;
struct crawl_tail_stats;
struct fetch_engine;
struct dns_resolver;
struct frontier;
struct politeness;
struct scope;
struct url_rules_live;
struct io_stall;
struct recfile_writer;
struct recfile_reader;

/* The fetch loop's own counters (crawl_run.c; loop thread). */
struct crawl_loop_stats {
	uint64_t redirect_dropped; /* redirect targets the feed queue could not take */
	uint64_t tail_skipped;     /* emitted URLs a resume's tail had fetched */
	uint64_t rules_dropped;    /* queued URLs a rule added since dropped at their turn */
};

/* The loop's table of its pieces, read once its set-up is done: every slot
 * is then set, and only the engine's and the resolver's go NULL, together,
 * when they are torn down (their figures as last read stand). Every slot
 * NULL: a gatherer of no running crawl (a checkpoint's counters alone). */
struct previous;

struct crawl_stats_sources {
	/* the loop's pieces */
	const struct visit *visit;
	const struct sieve_path *sieve;
	const struct parse_jobs *parse;
	const struct crawl_writer *writer;
	const struct crawl_ckpt *ckpt;
	const struct crawl_source *source; /* where work comes from */
	/* figures of the loop's own, and of a resume's replay */
	const struct crawl_loop_stats *loop;
	const struct crawl_tail_stats *tail;
	int resumed;
	/* the modules the loop drives */
	const struct fetch_engine *fetch;
	const struct dns_resolver *dns;
	const struct frontier *frontier;
	const struct politeness *pol;
	const struct scope *scope;       /* its counts of rejected URLs */
	struct url_rules_live *rules;    /* the URL rules and their counts */
	struct io_stall *io;             /* output stalls (a full disk) */
	const struct previous *previous; /* the crawl recrawled against, or NULL */
	const struct steer *steer;       /* steering: actions applied and refused */
};

/* A gatherer of src's pieces (borrowed, read at every report) with the
 * [output] section (borrowed) and the sieve's implementation name (NULL:
 * the default); NULL if out of memory. */
struct crawl_stats *crawl_stats_create(const struct crawl_stats_sources *src,
                                       const struct crawl_output *output, const char *sieve_impl);
/* NULL is a no-op. */
void crawl_stats_destroy(struct crawl_stats *s);

/* The crawl's clock: starts (counting the runs before a resume), stops (the
 * reports then say how long it ran). */
void crawl_stats_start(struct crawl_stats *s);
void crawl_stats_stop(struct crawl_stats *s);
uint64_t crawl_stats_elapsed_us(const struct crawl_stats *s);
/* The pages a resumed crawl's earlier runs fetched (0 for a new crawl):
 * with the visit's pages_started, the pages the crawl has started. */
uint64_t crawl_stats_pages_before(const struct crawl_stats *s);

/* Reads every piece now: before the engine and the resolver go, so that
 * their last figures stay counted (the reports below read the pieces
 * themselves). */
void crawl_stats_gather(struct crawl_stats *s);

/* The crawl-wide figures a cluster agent publishes, as they stand. */
struct crawl_stats_pages {
	uint64_t done, requests, bytes;
};
void crawl_stats_pages(struct crawl_stats *s, struct crawl_stats_pages *out);

/* Records one pages/s sample (every stats_interval_s). */
void crawl_stats_sample(struct crawl_stats *s);

/* The figures of stats.json as they stand, to f: JSON, or Prometheus text
 * (one "crawler_PATH value" line per number, for the metrics endpoint).
 * 0, or -1 (write error). */
enum crawl_stats_format { CRAWL_STATS_JSON, CRAWL_STATS_PROMETHEUS };
int crawl_stats_write(FILE *f, struct crawl_stats *s, enum crawl_stats_format fmt);
/* Writes stats.json in the output folder. 0, or -1 (errno). */
int crawl_stats_write_json(struct crawl_stats *s);

/* The end-of-crawl summary on stdout. */
void crawl_stats_print_summary(struct crawl_stats *s);

/* The progress line on stderr (final: ends the line). cluster: the
 * cluster's part, or NULL; stall: the output stall's message, or "". */
void crawl_stats_print_progress(struct crawl_stats *s, const char *cluster, const char *stall,
                                int final);

/* A checkpoint's crawl time and counters, with the status, error and
 * sample arrays, into its state record (all threads quiet: a checkpoint's
 * cut). */
void crawl_stats_save(struct crawl_stats *s, struct recfile_writer *w);
/* Reads what crawl_stats_save wrote as the runs before this one;
 * counters of unknown names are skipped. 0, or -1 (truncated or
 * inconsistent). */
int crawl_stats_load(struct crawl_stats *s, struct recfile_reader *rd);

#endif
