/*
 * crawl_run_int.h: one crawl's state (struct run), shared by its two files:
 * crawl_run.c, the fetch loop (the pieces' hooks, results, the pump, the
 * tick, the end, signals), and crawl_setup.c, the pieces opened in order
 * and the one teardown that closes them in reverse. Not for other modules:
 * they use crawl_run.h.
 *
 * struct run owns every piece of the crawl (each owning its own state) and
 * the loop's own flags and handles; it is the ctx of every hook it gives
 * them. Fetch loop thread only, but wake_ok (under wake_mu).
 */
#ifndef CRAWLER_CRAWL_RUN_INT_H
#define CRAWLER_CRAWL_RUN_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "crawler/crawl_stats.h"
#include "crawler/crawl_tail.h"

struct run {
	const struct crawl_config *cfg;
	uv_loop_t loop;
	uv_timer_t wake, tick, abandon;
	uv_async_t async;
	uv_signal_t sigint;
	int loop_ok, handles_open;
	struct fetch_engine *fetch;
	struct dns_resolver *dns;
	struct frontier *frontier;
	struct politeness *pol;
	struct scope *scope;
	struct url_rules_live *rules; /* the URL rules, as they change while it runs */
	struct focus_terms *focus;    /* [crawl] focus, or NULL; the parse threads read it */
	struct visit *visit;
	struct sitemap_registry *sitemaps; /* NULL: sitemaps are not followed */
	struct sieve_path *sp;
	struct parse_jobs *parse;
	struct crawl_writer *writer;
	struct crawl_ckpt *ckpt;
	struct previous *previous;  /* the crawl recrawled against, or NULL */
	struct done_set *done;      /* fetched after the checkpoint a resume started from */
	struct crawl_tail_pos tail; /* where that checkpoint's cut fell */
	struct io_stall *io; /* outputs that cannot be written (a full disk): fetching pauses */
	struct metrics_server *metrics; /* --metrics: the live figures */
	struct steer *steer;            /* steering: POST /seeds..., OUT/action/ */
	struct outdir_lock *lock;
	struct crawl_source *source; /* where work comes from, found URLs go */
	pthread_mutex_t wake_mu;     /* guards wake_ok against uv_close of async */
	int wake_ok;
	struct crawl_stats *stats;        /* the gatherer of the pieces' figures */
	struct crawl_stats_sources src;   /* the pieces it reads */
	struct crawl_loop_stats counters; /* the loop's own */
	struct crawl_tail_stats tail_stats;
	uint64_t tick_count;
	uint64_t start_after_us; /* resume: no request before (see crawl_run.c start) */
	int stopping, finished, sigints, progress, exit_code, resumed;
	int spill_stalled; /* an emitted URL waits for the frontier's spill */
	int none_ready;    /* the last pump found hosts queued, none of them ready */
	char **doms;       /* the seeds' domains, when they are the scope */
	size_t ndoms;
	char spill_label[4200];
	char from[4200]; /* the checkpoint folder a resume starts from; "": none */
};

/* ---- the loop's hooks, given to the pieces (crawl_run.c) ---- */

struct fetch_result;
struct previous;

/* Any thread: wakes the loop (uv_async_send while the handle is open). */
void run_wake(void *ctx);
/* Room to start one more transfer without any hand-off ever blocking. */
int run_can_start(void *ctx);
/* One more page may start (the source's page budget). */
int run_page_allowed(void *ctx);
/* A queued URL at its turn: 1 (dropped, counted) when a rule added at
 * the top while the crawl ran rejects it; seeds are exempt. */
int run_rule_drops(void *ctx, const char *url, size_t len, uint32_t depth);
/* The pages the crawl has started, its earlier runs' included. */
uint64_t run_pages_started(void *ctx);
/* The loop's pump: whatever can move on does. */
void run_pump(void *ctx);
/* The pump on the loop's next turn (a zero timer), not from within. */
void run_pump_soon(void *ctx);
/* After the final checkpoint: the loop stops. */
void run_finish(void *ctx);
/* The fetch engine's callback (a result may be parked by a checkpoint). */
void run_on_fetch_done(void *ctx, struct fetch_result *res);
/* A result processed now (also a parked one once the checkpoint ends). */
void run_fetch_done(void *ctx, struct fetch_result *res);
/* An emitted URL into the frontier. 0, or -1 not now (a full disk). */
int run_take_emit(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
                  uint32_t depth);
/* The source cannot go on: the crawl stops with exit_code. */
void run_source_failed(void *ctx, int exit_code);

/* ---- set-up and teardown (crawl_setup.c) ---- */

/* Opens every piece, in order: the output folder's claim, the frontier,
 * the sieve path, the source, the engine and the visit, a resume's crawl
 * state, the writer, the parse threads and the checkpoint machine. A crawl
 * exit code. */
int run_setup(struct run *r, char *const *seeds, size_t nseeds, int resume);
/* A resume: what the crash left after the checkpoint. 0 or -1. */
int run_replay_tail(struct run *r);
/* Every exit, after a failed set-up too: the pieces closed in reverse; the
 * reports written when the crawl ran. */
void run_teardown(struct run *r, int ran);

#endif
