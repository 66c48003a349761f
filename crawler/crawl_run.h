/*
 * crawl_run.h: one crawl, start to end: the fetch loop thread (libuv loop
 * owning the fetch engine, the DNS resolver, the frontier and the politeness
 * heap), the parse threads, the URL sieve with its feeder thread, and the
 * writer thread, joined by bounded queues. Each piece owns its state and
 * reaches the loop through hooks given at its creation:
 *   visit.h            the visit of a held host (RESOLVE, ROBOTS, FETCH),
 *                      per-host table, requests in flight, DNS wait line;
 *   sieve_path.h       every URL reaches the frontier through the sieve,
 *                      as a crawl key, exactly once (feeder, emit queue);
 *   parse_jobs.h       parse threads: links, scope, near-duplicates;
 *   crawl_writer.h     the writer thread: WARC and crawl.log;
 *   crawl_checkpoint.h the checkpoint phases and the crawl state file;
 *   crawl_stats.h      the gatherer of every piece's counters: stats.json,
 *                      the summary, the progress line;
 *   crawl_outdir.h     the output folder's claim, inputs and repairs;
 *   crawl_tail.h       a resume's replay of what the crash left after the
 *                      checkpoint (done_set.h: those URLs are skipped);
 *   crawl_source.h     where work comes from and found URLs go: this
 *                      process alone, or (--cluster, crawl_cluster.h) an
 *                      agent whose URLs go through Redis inboxes, with
 *                      hosts handed over and the end of the whole crawl.
 *
 * The hand-offs between threads:
 *   seeds, redirect targets --(feed queue, try_push)--> feeder thread --+
 *   fetch loop --try_submit--> parse pool (links: scope, crawl key) ----+
 *     --the thread's link batch (the source's)--> sieve_add_batch
 *     --> sieve --emit (flush thread)--> side table lookup
 *     --blocking push--> emit queue --uv_async_send--> fetch loop
 *     --> frontier;
 *   fetch loop / parse threads --> writer queue --> writer thread.
 * A cluster agent's link batches append to its outbox (under a mutex)
 * instead of adding to the sieve; the loop sends the outbox to the owners,
 * and the agent's own inbox entries come back through the feed queue.
 * The fetch loop never blocks and never calls the sieve: it starts no
 * transfer while the parse pool, the writer queue or the feed queue lacks
 * room for every transfer in flight (back-pressure), so its own pushes
 * always find room. Parse threads and the feeder may wait in sieve_add
 * (both sieve buffers full); the sieve's flush thread may wait for room in
 * the emit queue, which the loop drains without waiting (as does a
 * resume's tail replay, on the loop thread before its first turn, while it
 * waits for room in the parse pool).
 *
 * End: a forced flush requested with nothing in flight, no host held,
 * nothing queued in the frontier, no parse job outstanding and the emit and
 * feed queues empty emitted nothing (sieve_path_dry), and the source
 * agrees (an agent: the whole crawl is over); or the page budget
 * (max_pages; an agent's is the whole crawl's); or max_time / SIGINT (an
 * agent first hands over its work); or a failure of the sieve or the
 * source (exit 1 or 2). Every end but a second
 * SIGINT and a sieve failure writes a last checkpoint first. Every exit,
 * after a failed set-up too, goes through one teardown.
 *
 * Output in cfg->output.dir: WARC files, crawl.log, stats.json, sieve/ (the
 * live sieve), checkpoint/, seeds.txt and crawl.conf (for --resume),
 * crawl.lock while running.
 */
#ifndef CRAWLER_CRAWL_RUN_H
#define CRAWLER_CRAWL_RUN_H

#include <stddef.h>

#include "crawler/crawl_exit.h"

struct crawl_config;

/* Runs a crawl from seeds (n absolute URLs, borrowed) with cfg (borrowed).
 * Blocks until the crawl ends and returns an enum crawl_exit; prints the summary to stdout unless quiet.
 * A new crawl saves seeds and cfg in the output folder (seeds.txt,
 * crawl.conf) and refuses a folder that holds another crawl's checkpoint;
 * with resume it continues the crawl of the output folder from its last
 * checkpoint (seeds must then be that folder's seeds.txt). */
int crawl_run(const struct crawl_config *cfg, char *const *seeds, size_t n, int resume);

#endif
