/*
 * crawl_run.c: the fetch loop (see crawl_run.h): the pieces' hooks, the
 * results, the pump, the tick, the end condition, the signals, and the
 * crawl from start to end. The pieces it drives own their state (visit.h:
 * hosts, requests, DNS; sieve_path.h, parse_jobs.h, crawl_writer.h,
 * crawl_checkpoint.h, crawl_source.h, crawl_stats.h); crawl_setup.c opens
 * them and closes them (crawl_run_int.h: the state both files share).
 */
#include "crawler/crawl_run.h"
#include "crawler/crawl_run_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "crawler/config/config.h"
#include "crawler/control/metrics.h"
#include "crawler/control/steer.h"
#include "crawler/crawl_checkpoint.h"
#include "crawler/crawl_source.h"
#include "crawler/crawl_writer.h"
#include "crawler/net/fetch.h"
#include "crawler/parse_jobs.h"
#include "crawler/sieve_path.h"
#include "crawler/store/done_set.h"
#include "crawler/store/io_stall.h"
#include "crawler/visit.h"
#include "frontier/base/clock.h"
#include "frontier/frontier.h"
#include "frontier/url_rules_live.h"
#include "politeness/delay_policy.h"
#include "politeness/politeness.h"

#define ABANDON_MS 3000 /* in-flight transfers' grace at a stop */

static void on_wake(uv_timer_t *t);

/* ---- waking the loop from other threads ---- */

/* uv_async_send is the one libuv call other threads may make, and only
 * while the handle is open: teardown clears wake_ok under wake_mu before
 * closing it. */
void run_wake(void *ctx)
{
	struct run *r = ctx;
	pthread_mutex_lock(&r->wake_mu);
	if (r->wake_ok)
		uv_async_send(&r->async);
	pthread_mutex_unlock(&r->wake_mu);
}

/* ---- hooks of the pieces ---- */

/* Room to start one more transfer without any hand-off ever blocking. */
int run_can_start(void *ctx)
{
	struct run *r = ctx;
	size_t parked = 0;
	if (crawl_ckpt_active(r->ckpt) && !crawl_ckpt_fetching(r->ckpt, &parked))
		return 0;
	if (io_stall_active(r->io, NULL, 0) || steer_paused(r->steer))
		return 0;
	size_t inflight = fetch_engine_in_flight(r->fetch);
	if (inflight >= r->cfg->fetch.max_connections)
		return 0;
	if (!crawl_source_ready(r->source))
		return 0;
	/* results a checkpoint holds go on after it */
	return parse_jobs_has_room(r->parse, inflight, parked) &&
	       crawl_writer_has_room(r->writer, inflight + parked) &&
	       sieve_path_has_room(r->sp, inflight + parked);
}

void run_finish(void *ctx)
{
	struct run *r = ctx;
	if (r->finished)
		return;
	r->finished = 1;
	uv_timer_stop(&r->wake);
	uv_timer_stop(&r->tick);
	uv_timer_stop(&r->abandon);
	uv_stop(&r->loop);
}

static void ckpt_start(struct run *r, int final)
{
	if (!r->finished)
		crawl_ckpt_start(r->ckpt, final);
}

/* An emitted URL into the frontier (creating its host). -1 when it must be
 * tried again later (its spill file could not be written: a full disk; the
 * frontier is unchanged), else 0 (added, or refused for a reason the
 * frontier counts). */
int run_take_emit(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
                  uint32_t depth)
{
	struct run *r = ctx;
	uint32_t host;
	/* found by the sieve after the checkpoint, and fetched since */
	if (done_set_take(r->done, url, len)) {
		r->counters.tail_skipped++;
		return 0;
	}
	if (visit_host_get(r->visit, url, len, &host) != 0)
		return 0;
	if (frontier_push(r->frontier, host, url, len, via, via_len, depth) == FRONTIER_ERR_IO) {
		if (io_stall_retryable(errno)) {
			io_stall_note(r->io, r->spill_label, errno);
			r->spill_stalled = 1;
			return -1;
		}
		fprintf(stderr, "\ncrawler crawl: frontier spill %s: %s: URL dropped\n",
		        r->spill_label, strerror(errno));
	}
	if (r->spill_stalled) {
		r->spill_stalled = 0;
		io_stall_resolved(r->io, r->spill_label);
	}
	return 0;
}

int run_rule_drops(void *ctx, const char *url, size_t len, uint32_t depth)
{
	struct run *r = ctx;
	size_t added = url_rules_live_added(r->rules);
	if (!added || (frontier_depth_of(depth) == 0 && frontier_redirects_of(depth) == 0))
		return 0;
	struct url_rules *rules = url_rules_live_get(r->rules);
	struct url_rules_decision d;
	url_rules_decide_first(rules, added, url, len, frontier_depth_of(depth), &d);
	url_rules_live_put(r->rules, rules);
	if (d.action != URL_RULES_REJECT)
		return 0;
	r->counters.rules_dropped++;
	return 1;
}

/* ---- results ---- */

/* A result, now or after a checkpoint parked it. */
void run_fetch_done(void *ctx, struct fetch_result *res)
{
	struct run *r = ctx;
	int follow;
	struct crawl_job *j = visit_result(r->visit, res, &follow);
	if (!j)
		return;
	uint32_t host = j->host;
	/* A redirect target goes out through the feeder, into its batch from
	 * the source (sieve_add may wait; the loop never does). */
	uint32_t word;
	if (follow && !r->finished && parse_jobs_redirect_in_scope(r->parse, j, &word) &&
	    sieve_path_feed_redirect(r->sp, j->redirect, strlen(j->redirect), j->res->url,
	                             strlen(j->res->url), word) != 0)
		r->counters.redirect_dropped++;
	steer_note_fetch(r->steer, host, j->res->url, j->res->status);
	parse_jobs_take(r->parse, j);
	if (r->finished)
		return;
	visit_continue(r->visit, host);
	run_pump(r);
}

/* The fetch engine's callback. While a checkpoint is taken a finished
 * transfer is parked unprocessed (its URL counts as in flight), so nothing
 * reaches the parse threads, the sieve or the writer during the cut. */
void run_on_fetch_done(void *ctx, struct fetch_result *res)
{
	struct run *r = ctx;
	if (!r->finished && r->ckpt && crawl_ckpt_park(r->ckpt, res)) {
		run_pump_soon(r); /* its connection is free: the next transfer may start */
		return;
	}
	run_fetch_done(r, res);
}

/* ---- the loop ---- */

/* The pages the crawl has started, its earlier runs' included. */
uint64_t run_pages_started(void *ctx)
{
	struct run *r = ctx;
	return crawl_stats_pages_before(r->stats) + visit_pages_started(r->visit);
}

/* The visit's page_allowed hook (visit.h). */
int run_page_allowed(void *ctx)
{
	struct run *r = ctx;
	return crawl_source_page_allowed(r->source);
}

/* Arms the wake timer for monotonic time at_us (0: no need), unless it
 * already rings sooner. */
static void wake_at(struct run *r, uint64_t at_us)
{
	if (!at_us)
		return;
	uint64_t now = monotonic_us();
	uint64_t ms = at_us > now ? (at_us - now + 999) / 1000 : 0;
	if (!uv_is_active((uv_handle_t *)&r->wake) || uv_timer_get_due_in(&r->wake) > ms)
		uv_timer_start(&r->wake, on_wake, ms, 0);
}

/* The end: see crawl_run.h. */
static int crawl_is_done(struct run *r)
{
	struct politeness_stats ps;
	politeness_stats(r->pol, &ps);
	/* nothing in flight, held or being parsed */
	int quiet = fetch_engine_in_flight(r->fetch) == 0 && ps.hosts_held == 0;
	int idle = quiet && parse_jobs_outstanding(r->parse) == 0;
	/* a graceful stop: the source may have to hand its work over first */
	if (r->stopping && !r->exit_code && !crawl_source_leave(r->source, idle))
		return 0;
	if (r->stopping)
		return idle || (quiet && r->sigints > 0);
	if (crawl_source_budget_over(r->source))
		return idle;
	if (steer_busy(r->steer))
		return 0; /* steered seeds wait for the sieve */
	if (ps.hosts_in_heap > 0) {
		if (r->none_ready)
			wake_at(r, sieve_path_none_ready(r->sp, idle, monotonic_us()));
		/* ranked URLs found go ahead of the others whether or not a host
		 * is ready now: a few hosts fetching on at a crawl's start must
		 * not spend a page budget while the links of the rest wait in the
		 * sieve's buffer */
		sieve_path_raised(r->sp);
		return 0;
	}
	int dry = sieve_path_dry(r->sp, idle);
	return crawl_source_done(r->source, dry);
}

static void on_abandon(uv_timer_t *t);

static void on_wake(uv_timer_t *t)
{
	run_pump(t->data);
}

void run_pump_soon(void *ctx)
{
	wake_at(ctx, monotonic_us());
}

static void stop(struct run *r)
{
	r->stopping = 1;
	uv_timer_start(&r->abandon, on_abandon, ABANDON_MS, 0);
}

void run_pump(void *ctx)
{
	struct run *r = ctx;
	char msg[512];
	if (r->finished)
		return;
	if (!r->stopping && sieve_path_failed(r->sp, msg, sizeof msg)) {
		fprintf(stderr, "\ncrawler crawl: %s: stopping\n", msg);
		r->exit_code = CRAWL_EXIT_FAILURE;
		stop(r);
	}
	sieve_path_drain(r->sp, 0);
	visit_dns_line_run(r->visit);
	size_t parked;
	if (crawl_ckpt_active(r->ckpt)) {
		crawl_ckpt_step(r->ckpt);
		if (!crawl_ckpt_fetching(r->ckpt, &parked))
			return;
	} else {
		/* not during a checkpoint: URLs taken in now (an agent's
		 * inbox, steered seeds and rules) would reach the sieve while
		 * it is copied */
		crawl_source_pump(r->source);
		steer_pump(r->steer);
	}
	visit_yielded_run(r->visit);
	while (!r->stopping && run_can_start(r) && run_page_allowed(r)) {
		uint32_t host;
		uint64_t at;
		uint64_t now = monotonic_us();
		if (now < r->start_after_us) {
			uv_timer_start(&r->wake, on_wake, (r->start_after_us - now + 999) / 1000,
			               0);
			break;
		}
		enum politeness_err e = politeness_pop_ready(r->pol, now, &host, &at);
		r->none_ready = e == POLITENESS_NOT_READY;
		if (e == POLITENESS_OK) {
			int keep = crawl_source_keep_host(r->source, host);
			if (keep > 0)
				visit_begin(r->visit, host);
			if (keep < 0)
				break;
			continue;
		}
		if (e == POLITENESS_NOT_READY) {
			uint64_t ms = at > now ? (at - now + 999) / 1000 : 0;
			uv_timer_start(&r->wake, on_wake, ms, 0);
		}
		break;
	}
	/* (not while a checkpoint holds results: their links may follow) */
	if (!crawl_ckpt_active(r->ckpt) && crawl_is_done(r))
		ckpt_start(r, 1); /* the last checkpoint, then the end */
}

static void on_async(uv_async_t *a)
{
	run_pump(a->data);
}

/* The metrics endpoint's pages: stats.json's figures as they stand. */
static int render_metrics(void *ctx, enum metrics_page page, FILE *f)
{
	struct run *r = ctx;
	return crawl_stats_write(
	        f, r->stats, page == METRICS_STATUS ? CRAWL_STATS_JSON : CRAWL_STATS_PROMETHEUS);
}

static void print_progress(struct run *r, int final)
{
	char stall[600], part[300];
	if (!io_stall_active(r->io, stall, sizeof stall))
		stall[0] = '\0';
	int has_part = crawl_source_progress(r->source, part, sizeof part);
	crawl_stats_print_progress(r->stats, has_part ? part : NULL, stall, final);
}

/* In-flight transfers had their few seconds: a last checkpoint records them
 * as not done, and the crawl ends. */
static void on_abandon(uv_timer_t *t)
{
	struct run *r = t->data;
	/* A graceful stop of a cluster agent: nothing is in flight while it
	 * hands its URLs over, so it gets its own time (crawl_source.h). */
	if (crawl_source_leaving(r->source)) {
		uv_timer_start(&r->abandon, on_abandon, ABANDON_MS, 0);
		return;
	}
	ckpt_start(r, 1);
	run_pump(r);
}

static void on_tick(uv_timer_t *t)
{
	struct run *r = t->data;
	r->tick_count++;
	uint64_t el_ms = crawl_stats_elapsed_us(r->stats) / 1000u;
	if (((r->cfg->crawl.max_time_ms && el_ms >= r->cfg->crawl.max_time_ms) ||
	     crawl_source_time_up(r->source)) &&
	    !r->stopping)
		stop(r);
	if (!r->stopping && crawl_ckpt_due(r->ckpt))
		ckpt_start(r, 0);
	if (r->tick_count % 10 == 0) {
		struct crawl_stats_pages pages;
		crawl_stats_pages(r->stats, &pages);
		crawl_source_tick(r->source, &pages);
		if (r->progress)
			print_progress(r, 0);
		uint64_t per = r->cfg->output.stats_interval_s * 10u;
		if (per && r->tick_count % per == 0)
			crawl_stats_sample(r->stats);
	}
	run_pump(r);
}

static void on_sigint(uv_signal_t *s, int sig)
{
	(void)sig;
	struct run *r = s->data;
	r->sigints++;
	if (r->sigints >= 2) {
		fprintf(stderr, "\ncrawler crawl: second SIGINT, stopping at once\n");
		_exit(CRAWL_EXIT_ABORTED);
	}
	fprintf(stderr, "\ncrawler crawl: SIGINT, finishing (again to stop at once)\n");
	stop(r);
	run_pump(r);
}

/* ---- set-up ---- */

/* The source cannot go on (a cluster of another assignment method): the
 * crawl stops. */
void run_source_failed(void *ctx, int exit_code)
{
	struct run *r = ctx;
	if (!r->exit_code)
		r->exit_code = exit_code;
	if (!r->stopping)
		stop(r);
}

/* The loop's handles and clocks. */
static void start_handles(struct run *r, int resume)
{
	const struct crawl_config *cfg = r->cfg;
	uv_timer_init(&r->loop, &r->wake);
	uv_timer_init(&r->loop, &r->tick);
	uv_timer_init(&r->loop, &r->abandon);
	uv_async_init(&r->loop, &r->async, on_async);
	uv_signal_init(&r->loop, &r->sigint);
	r->wake.data = r->tick.data = r->abandon.data = r->async.data = r->sigint.data = r;
	r->handles_open = 1;
	pthread_mutex_lock(&r->wake_mu);
	r->wake_ok = 1;
	pthread_mutex_unlock(&r->wake_mu);
	uv_signal_start(&r->sigint, on_sigint, SIGINT);
	r->progress = !cfg->crawl.quiet && isatty(STDERR_FILENO);
	crawl_stats_start(r->stats);
	/* The crashed run may have contacted any host or IP just before it died,
	 * hosts it found after its last checkpoint too (unknown here): no
	 * request before one policy delay has passed. */
	if (resume) {
		const struct politeness_config *pc = &cfg->politeness;
		uint64_t d =
		        pc->policy == DELAY_POLICY_FIXED ? pc->host_delay_us : pc->min_delay_us;
		if (pc->ip_politeness && pc->ip_delay_us > d)
			d = pc->ip_delay_us;
		r->start_after_us = monotonic_us() + d;
	}
}

/* The steering's hook: a steered seed's key for the sieve, through the
 * feeder (as a redirect target is); -1 while its queue has no room. */
static int steer_feed(void *ctx, const char *key, size_t len)
{
	struct run *r = ctx;
	/* the room run_can_start keeps for redirect targets and a flush stays */
	if (r->stopping || !sieve_path_has_room(r->sp, fetch_engine_in_flight(r->fetch) + 1))
		return -1;
	return sieve_path_feed_redirect(r->sp, key, len, "", 0, 0);
}

/* The steering's hook: rules steered here, for the whole crawl. */
static void steer_share(void *ctx, const char *text, size_t len, const char *source)
{
	struct run *r = ctx;
	crawl_source_share_rules(r->source, text, len, source);
}

static int steer_request(void *ctx, const char *method, const char *target, const char *body,
                         size_t len, FILE *f)
{
	return steer_http(ctx, method, target, body, len, f);
}

/* Steering (a resume's steering.log replayed), and its requests on the
 * metrics server. A crawl exit code. */
static int start_steering(struct run *r, int resume)
{
	char msg[1400];
	const struct steer_parts sp = {
		.out_dir = r->cfg->output.dir,
		.url = &r->cfg->url,
		.rules = r->rules,
		.frontier = r->frontier,
		.pol = r->pol,
		.ctx = r,
		.feed = steer_feed,
		.wake = run_wake,
		.share = steer_share,
	};
	if (steer_create(&sp, resume, &r->steer, msg, sizeof msg) != 0) {
		fprintf(stderr, "crawler crawl: %s\n", msg);
		return CRAWL_EXIT_FAILURE;
	}
	r->src.steer = r->steer;
	if (r->metrics)
		metrics_server_set_control(r->metrics, steer_request, r->steer);
	return CRAWL_EXIT_OK;
}

/* The loop's handles and clocks, the metrics endpoint, the feeder (the
 * seeds: a checkpoint's sieve has seen them) and a resume's replay of the
 * tail, once every piece is open. A crawl exit code. */
static int start(struct run *r, char *const *seeds, size_t nseeds, int resume)
{
	const struct crawl_config *cfg = r->cfg;
	char msg[256];
	int rc;
	start_handles(r, resume);
	if (cfg->output.metrics[0] &&
	    metrics_server_start(&r->loop, cfg->output.metrics, render_metrics, r, &r->metrics, msg,
	                         sizeof msg) != 0) {
		fprintf(stderr, "crawler crawl: %s\n", msg);
		return CRAWL_EXIT_USAGE;
	}
	if ((rc = start_steering(r, resume)) != CRAWL_EXIT_OK)
		return rc;
	if (r->metrics)
		fprintf(stderr,
		        "crawler crawl: live figures on %s (port %d): /metrics, /status; steering:"
		        " POST /seeds, /rules, /pause, /resume, /hosts/HOST/delay?ms=N\n",
		        cfg->output.metrics, metrics_server_port(r->metrics));
	if (sieve_path_start_feeder(r->sp, seeds, r->from[0] ? 0 : nseeds,
	                            crawl_source_batch(r->source)) != 0 ||
	    (resume && run_replay_tail(r) != 0))
		return CRAWL_EXIT_FAILURE;
	return CRAWL_EXIT_OK;
}

int crawl_run(const struct crawl_config *cfg, char *const *seeds, size_t nseeds, int resume)
{
	struct run *r = calloc(1, sizeof *r);
	int rc, ran = 0;
	if (!r) {
		fprintf(stderr, "crawler crawl: out of memory\n");
		return CRAWL_EXIT_FAILURE;
	}
	r->cfg = cfg;
	pthread_mutex_init(&r->wake_mu, NULL);
	rc = run_setup(r, seeds, nseeds, resume);
	if (rc == CRAWL_EXIT_OK)
		rc = start(r, seeds, nseeds, resume);
	if (rc == CRAWL_EXIT_OK) {
		ran = 1;
		uv_timer_start(&r->tick, on_tick, 100, 100);
		run_pump(r);
		if (!r->finished)
			uv_run(&r->loop, UV_RUN_DEFAULT);
		crawl_stats_stop(r->stats);
		if (r->progress)
			print_progress(r, 1);
		rc = r->exit_code;
	}
	run_teardown(r, ran);
	pthread_mutex_destroy(&r->wake_mu);
	free(r);
	return rc;
}
