/*
 * crawl_run.c: the fetch loop (see crawl_run.h): set-up, the pump, the
 * tick, the end condition and the one teardown. The pieces it drives own
 * their state: visit.h (hosts, requests, DNS), sieve_path.h, parse_jobs.h,
 * crawl_writer.h, crawl_checkpoint.h, crawl_stats.h.
 */
#include "crawler/crawl_run.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "crawler/crawl_checkpoint.h"
#include "crawler/crawl_cluster.h"
#include "crawler/crawl_outdir.h"
#include "crawler/crawl_stats.h"
#include "crawler/crawl_tail.h"
#include "crawler/crawl_writer.h"
#include "crawler/net/dns.h"
#include "crawler/store/done_set.h"
#include "crawler/net/fetch.h"
#include "crawler/store/io_stall.h"
#include "crawler/control/metrics.h"
#include "crawler/store/outdir_lock.h"
#include "crawler/parse_jobs.h"
#include "crawler/sieve_path.h"
#include "crawler/sitemap_registry.h"
#include "crawler/visit.h"
#include "frontier/base/clock.h"
#include "frontier/url.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "politeness/delay_policy.h"
#include "politeness/politeness.h"
#include "frontier/base/array.h"

#define ABANDON_MS 3000 /* in-flight transfers' grace at a stop */

/* Sitemap URLs registered and not yet fetched, at most (a few per site). */
#define SITEMAPS_MAX 100000

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
	struct visit *visit;
	struct sitemap_registry *sitemaps; /* NULL: sitemaps are not followed */
	struct sieve_path *sp;
	struct parse_jobs *parse;
	struct crawl_writer *writer;
	struct crawl_ckpt *ckpt;
	struct done_set *done;      /* fetched after the checkpoint a resume started from */
	struct crawl_tail_pos tail; /* where that checkpoint's cut fell */
	struct io_stall *io; /* outputs that cannot be written (a full disk): fetching pauses */
	struct metrics_server *metrics; /* --metrics: the live figures */
	struct outdir_lock *lock;
	struct crawl_cluster *cluster; /* --cluster: this agent of a shared crawl */
	pthread_mutex_t wake_mu;       /* guards wake_ok against uv_close of async */
	int wake_ok;
	struct crawl_stats stats;
	struct fetch_stats fst; /* saved before the engine is destroyed */
	struct dns_stats dst;
	uint64_t tick_count;
	uint64_t start_after_us; /* resume: no request before (see start_handles) */
	int stopping, finished, sigints, progress, exit_code, resumed;
	int spill_stalled; /* an emitted URL waits for the frontier's spill */
	int none_ready;    /* the last pump found hosts queued, none of them ready */
	char **doms;       /* the seeds' domains, when they are the scope */
	size_t ndoms;
	char spill_label[4200];
};

/* The modules' configurations, copied from the crawl's. */
struct module_configs {
	struct frontier_config frontier;
	struct politeness_config politeness;
	struct scope_config scope;
	struct sieve_config sieve;
	struct fetch_config fetch;
	struct dns_config dns;
	struct warc_config warc;
	char sieve_dir[4200];
};

static void pump(void *ctx);
static void on_wake(uv_timer_t *t);

/* ---- waking the loop from other threads ---- */

/* uv_async_send is the one libuv call other threads may make, and only
 * while the handle is open: teardown clears wake_ok under wake_mu before
 * closing it. */
static void wake_loop(void *ctx)
{
	struct run *r = ctx;
	pthread_mutex_lock(&r->wake_mu);
	if (r->wake_ok)
		uv_async_send(&r->async);
	pthread_mutex_unlock(&r->wake_mu);
}

/* ---- hooks of the pieces ---- */

/* Room to start one more transfer without any hand-off ever blocking. */
static int can_start(void *ctx)
{
	struct run *r = ctx;
	if (crawl_ckpt_active(r->ckpt) || io_stall_active(r->io, NULL, 0))
		return 0;
	size_t inflight = fetch_engine_in_flight(r->fetch);
	if (inflight >= r->cfg->fetch.max_connections)
		return 0;
	if (r->cluster && !crawl_cluster_ready(r->cluster))
		return 0;
	return parse_jobs_has_room(r->parse, inflight) &&
	       crawl_writer_has_room(r->writer, inflight) && sieve_path_has_room(r->sp, inflight);
}

static void finish(void *ctx)
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
static int take_emit(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
                     uint32_t depth)
{
	struct run *r = ctx;
	uint32_t host;
	/* found by the sieve after the checkpoint, and fetched since */
	if (done_set_take(r->done, url, len)) {
		r->stats.tail_skipped++;
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

/* ---- results ---- */

/* A result, now or after a checkpoint parked it. */
static void fetch_done(void *ctx, struct fetch_result *res)
{
	struct run *r = ctx;
	int follow;
	struct crawl_job *j = visit_result(r->visit, res, &follow);
	if (!j)
		return;
	uint32_t host = j->host;
	/* A redirect target goes to the sieve through the feeder (sieve_add may
	 * wait; the loop never does). */
	uint32_t word;
	if (follow && !r->finished && parse_jobs_redirect_in_scope(r->parse, j, &word) &&
	    sieve_path_feed_redirect(r->sp, j->redirect, strlen(j->redirect), j->res->url,
	                             strlen(j->res->url), word) != 0)
		r->stats.redirect_dropped++;
	parse_jobs_take(r->parse, j);
	if (r->finished)
		return;
	visit_continue(r->visit, host);
	pump(r);
}

/* The fetch engine's callback. While a checkpoint is taken a finished
 * transfer is parked unprocessed (its URL counts as in flight), so nothing
 * reaches the parse threads, the sieve or the writer during the cut. */
static void on_fetch_done(void *ctx, struct fetch_result *res)
{
	struct run *r = ctx;
	if (!r->finished && r->ckpt && crawl_ckpt_park(r->ckpt, res))
		return;
	fetch_done(r, res);
}

/* ---- the loop ---- */

/* The visit's page_allowed hook (visit.h). */
static int page_allowed(void *ctx)
{
	struct run *r = ctx;
	uint64_t max = r->cfg->crawl.max_pages;
	return r->cluster ? crawl_cluster_page_allowed(r->cluster)
	                  : !max || r->stats.pages_started < max;
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
	if (r->stopping && r->cluster && !r->exit_code)
		return crawl_cluster_leave(r->cluster, idle);
	if (r->stopping)
		return idle || (quiet && r->sigints > 0);
	if (r->cluster ? crawl_cluster_budget_over(r->cluster) : !page_allowed(r))
		return idle;
	if (ps.hosts_in_heap > 0) {
		if (r->none_ready)
			wake_at(r, sieve_path_none_ready(r->sp, idle, monotonic_us()));
		return 0;
	}
	int dry = sieve_path_dry(r->sp, idle);
	return r->cluster ? crawl_cluster_done(r->cluster, dry) : dry;
}

static void on_abandon(uv_timer_t *t);

static void on_wake(uv_timer_t *t)
{
	pump(t->data);
}

static void stop(struct run *r)
{
	r->stopping = 1;
	uv_timer_start(&r->abandon, on_abandon, ABANDON_MS, 0);
}

static void pump(void *ctx)
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
	if (crawl_ckpt_active(r->ckpt)) {
		crawl_ckpt_step(r->ckpt);
		return;
	}
	/* after the checkpoint's cut: inbox entries fed now would reach the
	 * sieve while it is copied */
	if (r->cluster)
		crawl_cluster_pump(r->cluster);
	while (!r->stopping && can_start(r) && page_allowed(r)) {
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
			int keep = r->cluster ? crawl_cluster_keep_host(r->cluster, host) : 1;
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
	if (crawl_is_done(r))
		ckpt_start(r, 1); /* the last checkpoint, then the end */
}

static void on_async(uv_async_t *a)
{
	pump(a->data);
}

/* What the other pieces report (the engine's and the resolver's figures as
 * last saved, once they are gone). */
static void gather(struct run *r, struct crawl_stats_sources *src)
{
	*src = (struct crawl_stats_sources){ .cfg = r->cfg,
		                             .fetch = r->fst,
		                             .dns = r->dst,
		                             .scope = r->scope,
		                             .resumed = r->resumed };
	if (r->dns)
		dns_resolver_stats(r->dns, &src->dns);
	frontier_stats(r->frontier, &src->frontier);
	politeness_stats(r->pol, &src->politeness);
	sieve_path_stats(r->sp, &src->sieve, &src->meta);
	io_stall_stats(r->io, &src->stalls, &src->stall_s);
}

/* The metrics endpoint's pages: stats.json's figures as they stand. */
static int render_metrics(void *ctx, enum metrics_page page, FILE *f)
{
	struct run *r = ctx;
	struct crawl_stats_sources src;
	gather(r, &src);
	return crawl_stats_write(
	        f, &r->stats, &src, (double)(monotonic_us() - r->stats.t0_us) / 1e6,
	        page == METRICS_STATUS ? CRAWL_STATS_JSON : CRAWL_STATS_PROMETHEUS);
}

static void print_progress(struct run *r, int final)
{
	struct crawl_stats_sources src;
	char stall[600], cluster[300];
	gather(r, &src);
	if (!io_stall_active(r->io, stall, sizeof stall))
		stall[0] = '\0';
	if (r->cluster) {
		crawl_cluster_progress(r->cluster, cluster, sizeof cluster);
		src.cluster = cluster;
	}
	crawl_stats_print_progress(&r->stats, &src, fetch_engine_in_flight(r->fetch), stall, final);
}

/* In-flight transfers had their few seconds: a last checkpoint records them
 * as not done, and the crawl ends. */
static void on_abandon(uv_timer_t *t)
{
	struct run *r = t->data;
	/* A graceful stop of a cluster agent: nothing is in flight while it
	 * hands its URLs over, so it gets its own time (crawl_cluster.h). */
	if (r->cluster && crawl_cluster_leaving(r->cluster)) {
		uv_timer_start(&r->abandon, on_abandon, ABANDON_MS, 0);
		return;
	}
	ckpt_start(r, 1);
	pump(r);
}

static void on_tick(uv_timer_t *t)
{
	struct run *r = t->data;
	r->tick_count++;
	uint64_t el_ms = (monotonic_us() - r->stats.t0_us) / 1000u;
	if (r->cfg->crawl.max_time_ms && el_ms >= r->cfg->crawl.max_time_ms && !r->stopping)
		stop(r);
	if (!r->stopping && crawl_ckpt_due(r->ckpt))
		ckpt_start(r, 0);
	if (r->tick_count % 10 == 0) {
		if (r->cluster)
			crawl_cluster_tick(r->cluster);
		if (r->progress)
			print_progress(r, 0);
		uint64_t per = r->cfg->output.stats_interval_s * 10u;
		if (per && r->tick_count % per == 0)
			crawl_stats_sample(&r->stats);
	}
	pump(r);
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
	pump(r);
}

/* ---- set-up ---- */

/* The cluster cannot go on (another assignment method): the crawl stops. */
static void cluster_failed(void *ctx, int exit_code)
{
	struct run *r = ctx;
	if (!r->exit_code)
		r->exit_code = exit_code;
	if (!r->stopping)
		stop(r);
}

/* --cluster: this agent joins the shared crawl on the loop. */
static int open_cluster(struct run *r)
{
	if (!r->cfg->cluster.redis[0])
		return CRAWL_EXIT_OK;
	struct crawl_cluster_parts cp = { r->cfg,         &r->loop,  r->frontier, r->pol,
		                          r->sp,          &r->stats, r,           pump,
		                          cluster_failed, take_emit };
	return crawl_cluster_create(&cp, &r->cluster);
}

/* Every module's configuration, from the crawl's. 0, or -1 (no memory). */
static int module_configs_from(struct run *r, const struct crawl_config *cfg, char *const *seeds,
                               size_t nseeds, struct module_configs *mc)
{
	mc->frontier = cfg->frontier;
	if (!cfg->frontier.spill_dir[0])
		mc->frontier.spill_dir = cfg->output.dir;
	mc->politeness = cfg->politeness;
	mc->scope = cfg->scope;
	if (!cfg->crawl.any_domain && cfg->crawl.n_domains == 0) {
		if (scope_registrable_domains(seeds, nseeds, &r->doms, &r->ndoms) < 0)
			return -1;
		mc->scope.domains = (const char *const *)r->doms;
		mc->scope.n_domains = r->ndoms;
	}
	/* The sieve, in OUTPUT_DIR/sieve. A crashed crawl resumes from its
	 * checkpoint's copy of the sieve, never from this live folder, and a
	 * checkpoint fsyncs what it links: the live sieve's own fsyncs (three
	 * per flush) would buy nothing. */
	snprintf(mc->sieve_dir, sizeof mc->sieve_dir, "%s/sieve", cfg->output.dir);
	mc->sieve = cfg->sieve;
	mc->sieve.dir = mc->sieve_dir;
	mc->sieve.no_fsync = 1;
	mc->fetch = cfg->fetch;
	mc->dns = cfg->dns;
	mc->warc = cfg->warc;
	return 0;
}

/* Frontier, politeness and scope: restored from ckpt when given. */
static int open_frontier(struct run *r, struct module_configs *mc, const char *ckpt)
{
	char path[4400];
	enum frontier_err fe;
	if (ckpt) {
		snprintf(path, sizeof path, "%s/frontier", ckpt);
		fe = frontier_restore(&mc->frontier, path, &r->frontier);
	} else {
		fe = frontier_create(&mc->frontier, &r->frontier);
	}
	if (fe != FRONTIER_OK) {
		fprintf(stderr, "crawler crawl: frontier%s%s: %s\n", ckpt ? " of " : "",
		        ckpt ? path : "", frontier_strerror(fe));
		return CRAWL_EXIT_FAILURE;
	}
	if (politeness_config_check(&mc->politeness) != 0) {
		fprintf(stderr, "crawler crawl: inconsistent politeness settings\n");
		return CRAWL_EXIT_USAGE;
	}
	if (politeness_create(r->frontier, &mc->politeness, NULL, NULL, &r->pol) != POLITENESS_OK)
		return CRAWL_EXIT_FAILURE;
	if (ckpt) {
		snprintf(path, sizeof path, "%s/robots", ckpt);
		enum politeness_err pe = politeness_robots_restore(r->pol, path, monotonic_us());
		if (pe != POLITENESS_OK) {
			fprintf(stderr, "crawler crawl: robots.txt cache of %s: %s\n", path,
			        politeness_strerror(pe));
			return CRAWL_EXIT_FAILURE;
		}
	}
	if (scope_create(&mc->scope, &r->scope) != SCOPE_ERR_OK)
		return CRAWL_EXIT_FAILURE;
	return CRAWL_EXIT_OK;
}

/* The sieve path, its sieve emptied (new crawl) or the checkpoint's copy. */
static int open_sieve(struct run *r, struct module_configs *mc, const char *ckpt)
{
	const struct crawl_config *cfg = r->cfg;
	struct sieve_path_parts sp = { cfg, r->io, &r->stats, { r, wake_loop, take_emit } };
	char err[4800];
	if (sieve_path_create(&sp, &r->sp) != 0)
		return CRAWL_EXIT_FAILURE;
	int rc = sieve_path_open_sieve(r->sp, &mc->sieve, ckpt, err, sizeof err);
	if (rc == SIEVE_OK)
		return CRAWL_EXIT_OK;
	fprintf(stderr, "crawler crawl: sieve ([sieve] impl = %s, memory = %" PRIu64 "): %s\n",
	        cfg->sieve.impl, cfg->sieve.memory, err[0] ? err : sieve_strerror(rc));
	return rc == SIEVE_EINVAL || rc == SIEVE_ENOTSUP ? CRAWL_EXIT_USAGE : CRAWL_EXIT_FAILURE;
}

/* Fetch engine, DNS resolver, and the visit that drives them. */
static int open_fetch(struct run *r, struct module_configs *mc)
{
	enum fetch_error fe =
	        fetch_engine_create(&r->loop, &mc->fetch, on_fetch_done, r, &r->fetch);
	if (fe != FETCH_OK) {
		fprintf(stderr, "crawler crawl: fetch engine: %s\n", fetch_strerror(fe));
		return CRAWL_EXIT_FAILURE;
	}
	enum dns_error de = dns_resolver_create(&r->loop, &mc->dns, &r->dns);
	if (de != DNS_OK) {
		fprintf(stderr, "crawler crawl: DNS resolver (%s): %s\n",
		        r->cfg->dns.server[0]        ? r->cfg->dns.server
		        : r->cfg->dns.resolv_conf[0] ? r->cfg->dns.resolv_conf
		                                     : "/etc/resolv.conf",
		        dns_strerror(de));
		return de == DNS_ERR_INVALID ? CRAWL_EXIT_USAGE : CRAWL_EXIT_FAILURE;
	}
	if (r->cfg->crawl.sitemaps && !(r->sitemaps = sitemap_registry_create(SITEMAPS_MAX)))
		return CRAWL_EXIT_FAILURE;
	struct visit_lease_hooks leases = crawl_cluster_lease_hooks(r->cfg, &r->cluster);
	struct visit_parts vp = { r->cfg,       &r->loop,     r->frontier,
		                  r->pol,       r->fetch,     r->dns,
		                  &r->stats,    r->sitemaps,  { r, can_start, page_allowed, pump },
		                  &r->stopping, &r->finished, r->done,
		                  leases };
	r->visit = visit_create(&vp);
	return r->visit ? CRAWL_EXIT_OK : CRAWL_EXIT_FAILURE;
}

/* Writer, parse threads, the checkpoint machine. */
static int start_workers(struct run *r, struct module_configs *mc, uint64_t ckpt_seq)
{
	const struct crawl_config *cfg = r->cfg;
	size_t wcap = (size_t)cfg->parse.queue + 2u * cfg->fetch.max_connections + 1024u;
	struct crawl_writer_parts wp = {
		cfg, cfg->output.warc ? &mc->warc : NULL, 2 * wcap, r->io, &r->stats, wake_loop, r
	};
	if (crawl_writer_open(&wp, &r->writer) != 0)
		return CRAWL_EXIT_FAILURE;
	struct parse_jobs_parts pp = { cfg,       r->scope,    r->sp,     r->writer,
		                       &r->stats, r->sitemaps, wake_loop, r };
	if (parse_jobs_create(&pp, &r->parse) != 0)
		return CRAWL_EXIT_FAILURE;
	struct crawl_ckpt_parts cp = { cfg,       &r->loop,  r->frontier, r->pol,
		                       r->scope,  r->visit,  r->sp,       r->parse,
		                       r->writer, &r->stats, r->done,     r->spill_label,
		                       r,         finish,    fetch_done,  pump };
	r->ckpt = crawl_ckpt_create(&cp, ckpt_seq);
	return r->ckpt ? CRAWL_EXIT_OK : CRAWL_EXIT_FAILURE;
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
	r->stats.t0_us = monotonic_us() - r->stats.elapsed_before_us;
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

/* Everything up to the feeder thread, which adds the seeds. */
static int setup(struct run *r, char *const *seeds, size_t nseeds, int resume)
{
	const struct crawl_config *cfg = r->cfg;
	struct module_configs *mc = calloc(1, sizeof *mc);
	char ckpt[4200];
	uint64_t ckpt_seq = 0;
	int rc = CRAWL_EXIT_FAILURE, found = 0;
	if (!mc)
		return rc;
	rc = crawl_outdir_claim(cfg, resume, &r->lock, ckpt, sizeof ckpt, &ckpt_seq, &found);
	const char *from = found ? ckpt : NULL;
	if (rc != CRAWL_EXIT_OK)
		goto out;
	rc = CRAWL_EXIT_FAILURE;
	r->resumed = resume;
	if (!resume && crawl_outdir_save_inputs(cfg, seeds, nseeds) != 0)
		goto out;
	crawl_outdir_remove_stale_spill(cfg);
	r->io = io_stall_create(1000);
	r->done = done_set_create();
	if (!r->io || !r->done || module_configs_from(r, cfg, seeds, nseeds, mc) != 0)
		goto out;
	snprintf(r->spill_label, sizeof r->spill_label, "%s (frontier spill)",
	         cfg->frontier.spill_dir[0] ? cfg->frontier.spill_dir : cfg->output.dir);
	if (uv_loop_init(&r->loop) != 0)
		goto out;
	r->loop_ok = 1;
	if ((rc = open_frontier(r, mc, from)) != CRAWL_EXIT_OK ||
	    (rc = open_sieve(r, mc, from)) != CRAWL_EXIT_OK ||
	    (rc = open_fetch(r, mc)) != CRAWL_EXIT_OK ||
	    (resume &&
	     crawl_ckpt_resume(&(struct crawl_ckpt_resume_parts){ cfg, &r->stats, r->scope,
	                                                          r->visit, r->done },
	                       from, &r->tail) != 0) ||
	    (rc = start_workers(r, mc, ckpt_seq)) != CRAWL_EXIT_OK ||
	    (rc = open_cluster(r)) != CRAWL_EXIT_OK)
		goto out;
	start_handles(r, resume);
	char msg[256];
	rc = CRAWL_EXIT_USAGE;
	if (cfg->output.metrics[0] &&
	    metrics_server_start(&r->loop, cfg->output.metrics, render_metrics, r, &r->metrics, msg,
	                         sizeof msg) != 0) {
		fprintf(stderr, "crawler crawl: %s\n", msg);
		goto out;
	}
	if (r->metrics)
		fprintf(stderr, "crawler crawl: live figures on %s (port %d): /metrics, /status\n",
		        cfg->output.metrics, metrics_server_port(r->metrics));
	rc = CRAWL_EXIT_FAILURE;
	/* the checkpoint's sieve has seen the seeds */
	if (sieve_path_start_feeder(r->sp, seeds, from ? 0 : nseeds) != 0)
		goto out;
	if (resume &&
	    crawl_tail_replay(&(struct crawl_tail_replay_parts){ cfg, r->visit, r->parse, r->sp,
	                                                         r->done, &r->stats },
	                      &r->tail) != 0)
		goto out;
	rc = CRAWL_EXIT_OK;
out:
	free(mc);
	return rc;
}

/* ---- teardown ---- */

/* Stops the threads around the loop, in an order where nothing waits on a
 * thread already gone: the emit queue closes first (the sieve's flush
 * thread then drops instead of waiting), the feeder drains its queue, the
 * parse pool finishes its jobs (adding nothing more), the sieve closes
 * (its figures saved first: what the crawl saw, not the final flush), the
 * writer drains. */
static void stop_threads(struct run *r)
{
	sieve_path_stop_adding(r->sp);
	/* After the last checkpoint: a write still waiting for disk space gives
	 * up (what it holds is in that checkpoint as not done), so the threads
	 * can end. */
	if (r->io)
		io_stall_abort(r->io);
	sieve_path_stop_feeder(r->sp);
	parse_jobs_destroy(r->parse);
	r->parse = NULL;
	sieve_path_close_sieve(r->sp);
	crawl_writer_close(r->writer);
	r->writer = NULL;
}

static void write_reports(struct run *r, double elapsed)
{
	char path[4400];
	struct crawl_stats_sources src;
	gather(r, &src);
	snprintf(path, sizeof path, "%s/stats.json", r->cfg->output.dir);
	if (crawl_stats_write_json(&r->stats, &src, path, elapsed) != 0)
		fprintf(stderr, "crawler crawl: cannot write %s\n", path);
	if (!r->cfg->crawl.quiet)
		crawl_stats_print_summary(&r->stats, r->cfg, elapsed);
}

/* Every exit: the fetch engine first (it cancels in-flight transfers,
 * whose results still go to the writer), the resolver, the handles, the
 * threads; then the reports of a crawl that ran, and the rest. */
static void teardown(struct run *r, int ran, double elapsed)
{
	r->finished = 1;
	if (r->fetch) {
		fetch_engine_stats(r->fetch, &r->fst);
		fetch_engine_destroy(r->fetch);
		r->fetch = NULL;
	}
	if (r->dns) {
		dns_resolver_stats(r->dns, &r->dst);
		dns_resolver_destroy(r->dns);
		r->dns = NULL;
	}
	pthread_mutex_lock(&r->wake_mu);
	r->wake_ok = 0;
	pthread_mutex_unlock(&r->wake_mu);
	if (r->handles_open) {
		uv_handle_t *h[] = { (uv_handle_t *)&r->wake, (uv_handle_t *)&r->tick,
			             (uv_handle_t *)&r->abandon, (uv_handle_t *)&r->async,
			             (uv_handle_t *)&r->sigint };
		for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
			uv_close(h[i], NULL);
		r->handles_open = 0;
	}
	metrics_server_stop(r->metrics);
	crawl_cluster_destroy(r->cluster);
	r->cluster = NULL;
	if (r->loop_ok)
		uv_run(&r->loop, UV_RUN_DEFAULT);
	stop_threads(r);
	if (ran)
		write_reports(r, elapsed);
	if (ran && r->exit_code != CRAWL_EXIT_ABORTED)
		crawl_outdir_archive(r->cfg, 1);
	if (r->loop_ok) {
		uv_run(&r->loop, UV_RUN_DEFAULT);
		uv_loop_close(&r->loop);
	}
	crawl_ckpt_destroy(r->ckpt);
	sieve_path_destroy(r->sp);
	visit_destroy(r->visit);
	sitemap_registry_destroy(r->sitemaps);
	scope_destroy(r->scope);
	politeness_destroy(r->pol);
	frontier_destroy(r->frontier);
	ARRAY_FREE_EACH(r->doms, r->ndoms);
	io_stall_destroy(r->io);
	done_set_destroy(r->done);
	outdir_lock_release(r->lock);
}

int crawl_run(const struct crawl_config *cfg, char *const *seeds, size_t nseeds, int resume)
{
	struct run *r = calloc(1, sizeof *r);
	double elapsed = 0;
	int rc, ran = 0;
	if (!r) {
		fprintf(stderr, "crawler crawl: out of memory\n");
		return CRAWL_EXIT_FAILURE;
	}
	r->cfg = cfg;
	pthread_mutex_init(&r->wake_mu, NULL);
	/* Response bodies and per-record compressor state are large, short-lived
	 * blocks: keep glibc from mapping and unmapping (and trimming) them on
	 * every fetch, which costs more in page faults than the work itself. */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
	rc = setup(r, seeds, nseeds, resume);
	if (rc == CRAWL_EXIT_OK) {
		ran = 1;
		uv_timer_start(&r->tick, on_tick, 100, 100);
		pump(r);
		if (!r->finished)
			uv_run(&r->loop, UV_RUN_DEFAULT);
		elapsed = (double)(monotonic_us() - r->stats.t0_us) / 1e6;
		if (r->progress)
			print_progress(r, 1);
		rc = r->exit_code;
	}
	teardown(r, ran, elapsed);
	pthread_mutex_destroy(&r->wake_mu);
	free(r);
	return rc;
}
