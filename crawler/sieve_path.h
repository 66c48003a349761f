/*
 * sieve_path.h: how a URL reaches the frontier, exactly once: the URL
 * sieve (sieve/sieve.h, in OUTPUT_DIR/sieve), its side table of depth and
 * via-URL (crawler/link_meta.h), the feeder thread, and the feed and emit
 * queues.
 *
 *   seeds, redirect targets --(feed queue, try_push)--> feeder thread --+
 *   parse threads (links: scope, crawl key) ----------------------------+
 *     --link batch (crawl_source.h)--> side table, sieve_add_batch
 *     --> sieve --emit (flush thread)--> side table lookup
 *     --blocking push--> emit queue --wake--> fetch loop
 *     --sieve_path_drain--> take callback (the frontier).
 *
 * The fetch loop never blocks and never calls the sieve: what it hands over
 * goes through the feed queue, which cannot overflow since the loop starts
 * no transfer unless sieve_path_has_room (one item per transfer in flight
 * plus a flush request). Parse threads and the feeder may wait in
 * sieve_add (both sieve buffers full); the sieve's flush thread may wait
 * for room in the emit queue, which the loop drains without waiting. One
 * feeder thread keeps its items in order: a flush requested after a
 * redirect covers it.
 *
 * Link batches (the sieve's kind of crawl_source.h's link_batch): crawl
 * keys on their way into the sieve, one batch per adding thread, written
 * straight into the batch's arena. A key whose signature already has a
 * side-table entry is on its way already (or was dropped by the sieve as
 * seen) and is skipped.
 *
 * Forced flushes: the sieve flushes by itself when its buffer is full.
 * When the frontier runs dry the loop asks (sieve_path_dry) for a forced
 * flush: early, while pages are still in flight or parsed, and once
 * everything is idle; an idle flush that emitted nothing ends the crawl.
 *
 * Where seeds and redirect targets go is the feeder's found batch, given
 * by the crawl's source (crawl_source.h): the sieve's own batch when this
 * process crawls alone; a cluster agent's sends them to their hosts'
 * owners, and its inbox entries come back through the feed queue
 * (sieve_path_feed_lines) into the sieve.
 *
 * A sieve failure leaves the sieve unusable (URLs would be lost
 * silently): the crawl stops (sieve_path_failed).
 *
 * Counters (sieve_path_stats): the adding threads, the feeder and the
 * sieve's flush thread bump atomics; the forced flushes asked for are the
 * loop thread's.
 */
#ifndef CRAWLER_SIEVE_PATH_H
#define CRAWLER_SIEVE_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "crawler/link_meta.h"
#include "sieve/sieve.h"

struct url_options;
struct io_stall;

struct sieve_path;
struct link_batch;

struct sieve_path_hooks {
	void *ctx;
	/* any thread: something for the loop happened (thread-safe) */
	void (*wake)(void *ctx);
	/* loop thread: an emitted URL for the frontier. 0 taken, -1 not now
	 * (kept and offered again first at the next drain). */
	int (*take)(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
	            uint32_t depth);
};

/* What the sieve path reads of the configuration. */
struct sieve_path_config {
	const struct url_options *url; /* the crawl keys of seeds and inbox lines */
	uint32_t max_url_len;          /* [frontier] max_url_len: a key's room */
	/* the feed queue's room, one per transfer: those in flight ([fetch]
	 * max_connections) and the finished ones a checkpoint holds, which
	 * the parse queue's room bounds ([parse] queue) */
	size_t max_transfers;
	uint64_t meta_memory; /* [sieve] meta_memory: the side table's bound */
	int inbound;          /* a cluster agent: room for inbox entries too */
};

/* What the sieve path uses, all borrowed. */
struct sieve_path_parts {
	struct sieve_path_config cfg;
	struct io_stall *io;
	struct sieve_path_hooks hooks;
};

/* The queues and the side table (cfg.meta_memory). 0, or -1 (out of
 * memory). */
int sieve_path_create(const struct sieve_path_parts *parts, struct sieve_path **out);

/* Empties a sieve folder for a new crawl (a sieve that remembered an
 * earlier crawl's URLs would emit nothing). -1 with errno EBUSY when a live
 * sieve holds its LOCK (another crawl in this output folder). */
int sieve_path_clear_dir(const char *dir);

/* Opens the sieve with svc (borrowed; its emit and write-error callbacks
 * are set here) in svc->dir: for a new crawl that folder is emptied first
 * (sieve_path_clear_dir), for a resumed one (ckpt not NULL) it gets the
 * checkpoint's copy, ckpt/sieve. Returns a sieve error code; err gets the
 * message ("" when there is none beyond the code's). */
int sieve_path_open_sieve(struct sieve_path *sp, struct sieve_config *svc, const char *ckpt,
                          char *err, size_t errlen);

/* Starts the feeder thread: it adds the n seeds (borrowed until
 * sieve_path_stop_feeder) to found, then serves the feed queue, redirect
 * targets going to found too. Takes found (NULL: out of memory, counted as
 * a sieve failure), even on failure. 0 or -1. */
int sieve_path_start_feeder(struct sieve_path *sp, char *const *seeds, size_t n,
                            struct link_batch *found);

/* ---- loop thread ---- */

/* 1 if the feed queue keeps room for in_flight transfers and a flush. */
int sieve_path_has_room(const struct sieve_path *sp, size_t in_flight);
/* A redirect target (crawl key, scope-checked) for the sieve. 0, or -1
 * (dropped). */
int sieve_path_feed_redirect(struct sieve_path *sp, const char *url, size_t len, const char *via,
                             size_t via_len, uint32_t depth);
/* Hands emitted URLs to hooks->take: all of them (all), else at most one
 * queue's worth. 0 if one had to stay pending, else 1. */
int sieve_path_drain(struct sieve_path *sp, int all);
/* The frontier is dry and the loop idle or not (loop_idle: nothing in
 * flight, no host held, no parse job): asks for the forced flushes that
 * deliver what waits in the sieve. 1 when the crawl is over: an idle flush
 * emitted nothing and everything is still idle. */
int sieve_path_dry(struct sieve_path *sp, int loop_idle);
/* The frontier holds URLs, but every host of theirs waits (a Retry-After,
 * a Crawl-delay): with nothing else to do (loop_idle: nothing in flight,
 * no host held, no parse job), asks for the flush that delivers the links
 * found since the last one, so that they do not wait in the sieve's buffer
 * for those hosts; the first at once, then at most every 500 ms or ten
 * times the last flush's time. Such a flush never ends the crawl. Returns 0, or the monotonic
 * time at which to ask again. */
uint64_t sieve_path_none_ready(struct sieve_path *sp, int loop_idle, uint64_t now_us);
/* Keys of a rule priority above 0 were added since the last forced
 * flush (hosts ready or not): asks for an early one (within the same flush
 * work bound as sieve_path_dry's), so that URLs ranked first reach the
 * frontier before a page budget is spent on others. */
void sieve_path_raised(struct sieve_path *sp);
/* Cluster: an inbox entry's lines (copied) for the sieve. 0, or -1 (no
 * room: call only while sieve_path_inbound_room). */
int sieve_path_feed_lines(struct sieve_path *sp, const char *lines, size_t len);
/* Cluster: 1 while the feed queue has room for an inbox entry. */
int sieve_path_inbound_room(const struct sieve_path *sp);
/* Checkpoint: 1 when the seeds are in, no forced flush is pending and the
 * feed queue is empty. */
int sieve_path_quiet(struct sieve_path *sp);
/* Checkpoint: asks for a forced flush; *seq names it. 0 or -1 (not now). */
int sieve_path_push_flush(struct sieve_path *sp, uint64_t *seq);
/* 1 once the forced flush seq delivered everything added before it. */
int sieve_path_flushed(const struct sieve_path *sp, uint64_t seq);
/* 1 after a sieve failure: msg gets its description. */
int sieve_path_failed(struct sieve_path *sp, char *msg, size_t cap);

/* Worker thread, all adders quiet: the sieve's copy into path. A sieve
 * error code; err gets the message. */
int sieve_path_checkpoint(struct sieve_path *sp, const char *path, char *err, size_t errlen);

/* ---- adding threads (parse threads) ---- */

/* A link batch into the sieve for one thread (its operations:
 * crawl_source.h); NULL if out of memory. */
struct link_batch *sieve_path_batch_create(struct sieve_path *sp);
/* A via string shared by several keys (link_meta_via_new); NULL if out of
 * memory. Release with sieve_path_via_release (NULL is a no-op). */
struct link_meta_via *sieve_path_via(struct sieve_path *sp, const char *s, size_t len);
void sieve_path_via_release(struct sieve_path *sp, struct link_meta_via *via);
/* 1 once teardown began: add nothing more. */
int sieve_path_adding_stopped(const struct sieve_path *sp);

/* ---- teardown, in this order ---- */

void sieve_path_stop_adding(struct sieve_path *sp);
/* Closes the emit queue (the flush thread drops instead of waiting), then
 * the feed queue, and joins the feeder. */
void sieve_path_stop_feeder(struct sieve_path *sp);
/* Saves the sieve's figures (what the crawl saw, not the final flush) and
 * closes it; after every adder has stopped. */
void sieve_path_close_sieve(struct sieve_path *sp);
/* The sieve path's figures: the sieve's and the side table's (saved at
 * close; zeros before), and its own counters. */
struct sieve_path_stats {
	struct sieve_stats sieve;
	struct link_meta_stats meta;
	/* any thread */
	uint64_t keys_added;    /* crawl keys handed to the sieve */
	uint64_t emits_pushed;  /* URLs the sieve emitted, queued for the frontier */
	uint64_t emit_dropped;  /* emitted URLs lost: no memory, or after teardown */
	uint64_t seeds_invalid; /* seeds that are no URL */
	uint64_t sieve_errors;  /* sieve calls that failed (the crawl stops) */
	uint64_t meta_present;  /* keys skipped: on their way already (side table) */
	uint64_t meta_dropped;  /* keys dropped: no room in the side table */
	uint64_t meta_missing;  /* emitted URLs without a side-table entry */
	uint64_t meta_flushes;  /* flushes forced by a full side table */
	/* loop thread */
	uint64_t forced_flushes, early_flushes; /* flushes asked for: idle, and early */
};
void sieve_path_stats(const struct sieve_path *sp, struct sieve_path_stats *out);
/* Frees the rest; NULL is a no-op. */
void sieve_path_destroy(struct sieve_path *sp);

#endif
