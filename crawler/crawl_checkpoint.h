/*
 * crawl_checkpoint.h: taking a checkpoint of a running crawl (every
 * checkpoint_interval_s, and once more at the end), as a phase machine the
 * fetch loop moves on from its pump; and the crawl state file it writes.
 *
 *   IDLE --start--> DRAIN  finished transfers are parked unprocessed;
 *                          waits for the parse threads and the feeder to
 *                          be idle
 *        --> FLUSH   a forced sieve flush; then every emitted URL is
 *                    moved into the frontier
 *        --> WRITER  the writer thread syncs WARC and crawl log
 *        --> COMMIT  the loop writes the folder, the frontier's segments
 *                    (linked) and the crawl state, then forks a copy of
 *                    the process that writes the snapshot (the frontier's
 *                    queues, the robots.txt cache, the visit's state) as
 *                    they stood; a worker thread waits for it, copies the
 *                    sieve and commits all as one cut (checkpoint.h)
 *        --> IDLE    parked results go on as if they had just arrived.
 * Invariant: while not IDLE nothing reaches the parse threads, the sieve or
 * the writer but what the cut waits for, so sieve, frontier and crawl
 * state agree. Transfers still start (not during a final checkpoint):
 * a URL taken before the cut is in flight in it, one taken after it is
 * still queued in it; either way a resume fetches it again or finds it
 * in the tail (crawl_tail.h), as any fetch after a cut. So the loop's
 * pause is its own part of the files and the fork (page tables: about
 * 2 MB per GB of RSS), not O(hosts); without a fork (fork failed,
 * [output] checkpoint_fork = false, a final checkpoint) the loop writes
 * the snapshot itself. A failed checkpoint leaves the previous one
 * standing; a failed sieve cannot be checkpointed at all.
 *
 * The crawl state (OUTPUT_DIR/checkpoint/ckpt-N/state, recfile.h): crawl
 * time so far, the counters (crawl_stats.h), the scope's counts, where the
 * WARC stood, the crawl log's size, the done set (done_set.h), and the URL
 * rules' counts (url_rules_live.h); beside it ckpt-N/visit: per host its
 * DNS answer and politeness state, the URLs taken from the frontier and
 * not done (visit.h). A resume restores frontier, sieve and state,
 * re-queues what was in flight, and replays the tail the WARC and the log
 * hold after the cut (crawl_tail.h).
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
	/* and of the time no transfer could start: from the start to COMMIT */
	uint64_t us_nofetch_max;
	/* the loop thread's CPU time for its files, the longest: their cost
	 * on a machine that gives the loop a core */
	uint64_t us_files_cpu_max;
	/* the copy of the process writing the snapshot, its longest life */
	uint64_t us_snapshot_max;
};
void crawl_ckpt_stats(const struct crawl_ckpt *c, struct crawl_ckpt_stats *out);

/* Begins a checkpoint, or (final) the last one, after which the crawl
 * ends; during one, final is remembered. */
void crawl_ckpt_start(struct crawl_ckpt *c, int final);
/* 1 while a checkpoint is being taken. */
int crawl_ckpt_active(const struct crawl_ckpt *c);
/* 1 while a checkpoint is being taken and transfers may start: any but
 * a final one (see above). *parked: the finished transfers held, which go
 * on to the parse threads, the writer and the sieve after the cut, so they
 * count against the room those keep, as transfers in flight do. 0 (and
 * *parked 0) otherwise. */
int crawl_ckpt_fetching(const struct crawl_ckpt *c, size_t *parked);
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
