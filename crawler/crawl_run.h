/*
 * crawl_run.h: one crawl, start to end: the fetch loop thread (libuv loop
 * owning the fetch engine, the DNS resolver, the frontier and the politeness
 * heap), the parse threads (parse/parse_pool.h), the discovered-URL set and
 * the writer thread (WARC + crawl log), joined by bounded queues.
 *
 * Hand-offs (all bounded):
 *   fetch loop --try_submit--> parse pool --blocking push--> emit queue
 *   --uv_async_send--> fetch loop (inserts into the frontier);
 *   fetch loop / parse threads --> writer queue --> writer thread.
 * The fetch loop never blocks: it starts no transfer while the parse pool
 * or the writer queue lacks room for every transfer in flight
 * (back-pressure), so its own pushes always find room.
 *
 * End: the frontier has nothing queued, no host is held, nothing is in
 * flight, no parse job is outstanding and the emit queue is empty; or
 * max_pages / max_time / SIGINT. Output in cfg->output_dir: WARC files,
 * crawl.log, stats.json.
 */
#ifndef CRAWLER_CRAWL_RUN_H
#define CRAWLER_CRAWL_RUN_H

#include <stddef.h>

#include "crawler/config.h"

/* Exit codes of a crawl (also of `crawler crawl`). */
enum crawl_exit {
	CRAWL_EXIT_OK = 0,       /* crawl finished (frontier exhausted or a limit) */
	CRAWL_EXIT_FAILURE = 1,  /* setup or I/O failure */
	CRAWL_EXIT_USAGE = 2,    /* bad command line or configuration */
	CRAWL_EXIT_ABORTED = 3,  /* second SIGINT: stopped at once */
};

/* Runs a crawl from seeds (n absolute URLs, borrowed) with cfg (borrowed).
 * Blocks until the crawl ends; prints the summary to stdout unless quiet. */
int crawl_run(const struct crawl_config *cfg, char *const *seeds, size_t n);

#endif
