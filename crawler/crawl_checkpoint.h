/*
 * crawl_checkpoint.h: taking a checkpoint of a running crawl (every
 * checkpoint_interval_s, and once more at the end), as a phase machine the
 * fetch loop moves on from its pump; and the crawl state file it writes.
 *
 *   IDLE --start--> DRAIN  the loop starts no transfer and parks finished
 *                          ones unprocessed; waits for the parse threads
 *                          and the feeder to be idle
 *        --> FLUSH   a forced sieve flush; then every emitted URL is
 *                    moved into the frontier
 *        --> WRITER  the writer thread syncs WARC and crawl log
 *        --> COMMIT  frontier and crawl state written by the loop, the
 *                    sieve copied by a worker thread, all committed as one
 *                    cut (checkpoint.h)
 *        --> IDLE    parked results go on as if they had just arrived.
 * Invariant: while not IDLE nothing reaches the parse threads, the sieve or
 * the writer but what the cut waits for, so sieve, frontier and crawl
 * state agree. No transfer starts meanwhile: the pause is O(hosts + the
 * frontier's memory part) of the loop's own writing, and the sieve's
 * flush and copy. A failed checkpoint leaves the previous one standing; a
 * failed sieve cannot be checkpointed at all.
 *
 * The crawl state (OUTPUT_DIR/checkpoint/ckpt-N/state, recfile.h): crawl
 * time so far, the counters (crawl_stats.h), the scope's counts, where the
 * WARC stood, per host its DNS answer and politeness state, the URLs
 * taken from the frontier and not done (visit.h), the crawl log's size,
 * the done set (done_set.h), and the URL rules' counts (url_rules_live.h). A resume restores frontier, sieve and
 * state, re-queues what was in flight, and replays the tail the WARC and
 * the log hold after the cut (crawl_tail.h).
 *
 * Counters (crawl_ckpt_stats): checkpoints written and failed, and their
 * time; the crawl's counters a checkpoint carries are the stats gatherer's
 * to save and load (crawl_stats.h).
 *
 * Fetch loop thread only, but the commit's worker.
 */
#ifndef CRAWLER_CRAWL_CHECKPOINT_H
#define CRAWLER_CRAWL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct crawl_output;
struct frontier;
struct politeness;
struct scope;
struct url_rules_live;
struct visit;
struct sieve_path;
struct parse_jobs;
struct crawl_writer;
struct crawl_stats;
struct done_set;
struct fetch_result;
struct crawl_tail_pos;

/* What a checkpoint reads and writes (all borrowed), and the loop's hooks. */
struct crawl_ckpt_parts {
	const struct crawl_output *output; /* [output] dir, checkpoint_interval_s */
	uv_loop_t *loop;
	struct frontier *frontier;
	struct politeness *pol; /* its robots.txt cache is part of a checkpoint */
	struct scope *scope;
	struct url_rules_live *rules; /* their counts too */
	struct visit *visit;
	struct sieve_path *sieve;
	struct parse_jobs *parse;
	struct crawl_writer *writer;
	struct crawl_stats *stats;
	struct done_set *done;   /* URLs a resume found fetched, still to be met */
	const char *spill_label; /* the frontier's spill folder, for reports */
	void *ctx;
	void (*finish)(void *ctx);                           /* after the final checkpoint */
	void (*replay)(void *ctx, struct fetch_result *res); /* a parked result goes on */
	void (*pump)(void *ctx);
};

struct crawl_ckpt;

/* seq: the number of the last checkpoint written (0 for none). NULL if out
 * of memory. */
struct crawl_ckpt *crawl_ckpt_create(const struct crawl_ckpt_parts *parts, uint64_t seq);
/* Frees parked results; NULL is a no-op. */
void crawl_ckpt_destroy(struct crawl_ckpt *c);

/* Checkpoints written and failed, and the time they took (loop thread). */
struct crawl_ckpt_stats {
	uint64_t written, failed, us_total, us_max;
	/* this run's longest of each phase (not carried by a checkpoint):
	 * DRAIN, FLUSH, WRITER, the loop's own files (frontier, robots.txt
	 * cache, state: the loop does nothing else meanwhile), COMMIT */
	uint64_t us_drain_max, us_flush_max, us_writer_max, us_files_max, us_commit_max;
	/* the loop thread's CPU time for its files, the longest: their cost
	 * on a machine that gives the loop a core */
	uint64_t us_files_cpu_max;
};
void crawl_ckpt_stats(const struct crawl_ckpt *c, struct crawl_ckpt_stats *out);

/* Begins a checkpoint, or (final) the last one, after which the crawl
 * ends; during one, final is remembered. */
void crawl_ckpt_start(struct crawl_ckpt *c, int final);
/* 1 while a checkpoint is being taken (no transfer may start). */
int crawl_ckpt_active(const struct crawl_ckpt *c);
/* 1 when checkpoint_interval_s has passed since the last one ended. */
int crawl_ckpt_due(const struct crawl_ckpt *c);
/* Moves the checkpoint on as far as it can now. */
void crawl_ckpt_step(struct crawl_ckpt *c);
/* A finished transfer during a checkpoint: kept (1), or 0 when it must be
 * processed now (no checkpoint, or no memory to keep it). */
int crawl_ckpt_park(struct crawl_ckpt *c, struct fetch_result *res);

/* What a resume restores the crawl state into, all borrowed. */
struct crawl_ckpt_resume_parts {
	const struct crawl_output *output; /* [output] dir */
	int quiet;                         /* [crawl] quiet: no word of the resume */
	struct crawl_stats *stats;
	struct scope *scope;
	struct url_rules_live *rules;
	struct visit *visit; /* its frontier and politeness restored from ckpt */
	struct done_set *done;
};

/* Resume from the checkpoint folder ckpt (NULL: none was written, the
 * crawl starts over from its seeds): reads its state file into the parts,
 * and where its cut fell in the WARC and crawl log into *pos (for the
 * tail's replay, crawl_tail.h), then cuts what the crash tore off the WARC
 * files the checkpoint does not cover and the crawl log (crawl_outdir.h).
 * 0, or -1 (a message on stderr). */
int crawl_ckpt_resume(const struct crawl_ckpt_resume_parts *p, const char *ckpt,
                      struct crawl_tail_pos *pos);

#endif
