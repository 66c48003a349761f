/*
 * crawl_setup.c: the pieces of a crawl opened in order, and the one
 * teardown that closes them in reverse (see crawl_run_int.h); the loop
 * that drives them is crawl_run.c. Each piece gets the configuration
 * sections it reads and the loop's hooks through its parts struct.
 */
#include "crawler/crawl_run_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/archive/previous.h"
#include "crawler/config/config.h"
#include "crawler/control/metrics.h"
#include "crawler/control/steer.h"
#include "crawler/crawl_checkpoint.h"
#include "crawler/crawl_exit.h"
#include "crawler/crawl_outdir.h"
#include "crawler/crawl_source.h"
#include "crawler/crawl_writer.h"
#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"
#include "crawler/parse_jobs.h"
#include "crawler/sieve_path.h"
#include "crawler/sitemap_registry.h"
#include "crawler/store/done_set.h"
#include "crawler/store/io_stall.h"
#include "crawler/store/outdir_lock.h"
#include "crawler/visit.h"
#include "frontier/base/array.h"
#include "frontier/base/clock.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "frontier/url_rules_live.h"
#include "parse/focus.h"
#include "politeness/politeness.h"
#include "sieve/sieve.h"

/* Sitemap URLs registered and not yet fetched, at most (a few per site). */
#define SITEMAPS_MAX 100000

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

/* The source's inbound hook: the parse jobs judge (opened after the
 * source, before the loop runs). */
static int run_inbound(void *ctx, const char *url, size_t len, uint32_t word, uint32_t *out)
{
	struct run *r = ctx;
	return parse_jobs_inbound(r->parse, url, len, word, out);
}

/* The source's hooks to the steering (started after the source): where
 * an agent is in the crawl's shared rules, and an entry applied. */
static int run_shared_next(void *ctx, uint64_t *next)
{
	struct run *r = ctx;
	if (!r->steer)
		return -1;
	*next = steer_shared_next(r->steer);
	return 0;
}

static void run_shared_apply(void *ctx, uint64_t index, const char *text, size_t len,
                             const char *source)
{
	struct run *r = ctx;
	steer_shared_apply(r->steer, index, text, len, source);
}

/* Where work comes from: this process alone, or (--cluster) an agent
 * joining the shared crawl on the loop. */
static int open_source(struct run *r)
{
	struct crawl_source_config sc = {
		.cluster = &r->cfg->cluster,
		.politeness = &r->cfg->politeness,
		.max_pages = r->cfg->crawl.max_pages,
		.max_time_ms = r->cfg->crawl.max_time_ms,
		.max_url_len = r->cfg->scope.max_url_len,
	};
	struct crawl_source_parts sp = {
		.loop = &r->loop,
		.frontier = r->frontier,
		.pol = r->pol,
		.sp = r->sp,
		.ctx = r,
		.pages_started = run_pages_started,
		.pump = run_pump,
		.wake = run_wake,
		.fail = run_source_failed,
		.take = run_take_emit,
		.inbound = run_inbound,
		.shared_next = run_shared_next,
		.shared_apply = run_shared_apply,
	};
	int rc = crawl_source_open(&sc, &sp, &r->source);
	r->src.source = r->source;
	return rc;
}

/* Every module's configuration, from the crawl's. 0, or -1 (no memory). */
static int module_configs_from(struct run *r, const struct crawl_config *cfg, char *const *seeds,
                               size_t nseeds, struct module_configs *mc)
{
	mc->frontier = cfg->frontier;
	if (!cfg->frontier.spill_dir[0])
		mc->frontier.spill_dir = cfg->output.dir;
	/* Depth is judged before the sieve, by the scope or by the URL rule
	 * that accepted the URL (its depth=N may pass max_depth). */
	mc->frontier.max_depth = 0;
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

/* The URL rules: a new crawl's from its configuration, kept in
 * OUTPUT_DIR/rules.txt; a resumed crawl's from that copy (rules added
 * while it ran included), or from its configuration when it has none (a
 * crawl of an earlier version). A crawl exit code. */
static int open_rules(struct run *r, int resume)
{
	const struct crawl_config *cfg = r->cfg;
	char err[1200], path[4200];
	struct url_rules *rules = NULL;
	size_t added = 0;
	enum url_rules_err e;
	snprintf(path, sizeof path, "%s/rules.txt", cfg->output.dir);
	if (resume && access(path, F_OK) == 0)
		e = url_rules_live_read(path, &cfg->url, &rules, &added, err, sizeof err);
	else
		e = url_rules_from_config(&cfg->rules, &cfg->url, &rules, err, sizeof err);
	if (e != URL_RULES_OK) {
		fprintf(stderr, "crawler crawl: %s\n", err);
		return e == URL_RULES_ERR_NOMEM ? CRAWL_EXIT_FAILURE : CRAWL_EXIT_USAGE;
	}
	r->rules = url_rules_live_create(rules, added);
	rules = NULL;
	if (!r->rules)
		return CRAWL_EXIT_FAILURE;
	if (url_rules_live_write(r->rules, path) != 0) {
		fprintf(stderr, "crawler crawl: cannot write %s: %s\n", path, strerror(errno));
		return CRAWL_EXIT_FAILURE;
	}
	/* A rule whose text reads back otherwise (a wget flag's regex holding
	 * a space) would change at a resume: refused now. */
	if (!resume &&
	    url_rules_live_read(path, &cfg->url, &rules, &added, err, sizeof err) != URL_RULES_OK) {
		fprintf(stderr,
		        "crawler crawl: the URL rules cannot be kept for --resume: %s (write a "
		        "space in a pattern as \\s or %%20)\n",
		        err);
		return CRAWL_EXIT_USAGE;
	}
	url_rules_destroy(rules);
	return CRAWL_EXIT_OK;
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
	struct sieve_path_parts sp = {
		.cfg = { .url = &cfg->url,
		         .max_url_len = cfg->scope.max_url_len,
		         .max_transfers = cfg->fetch.max_connections + cfg->parse.queue,
		         .meta_memory = cfg->link_meta_memory,
		         .inbound = cfg->cluster.redis[0] != '\0' },
		.io = r->io,
		.hooks = { .ctx = r, .wake = run_wake, .take = run_take_emit },
	};
	char err[4800];
	if (sieve_path_create(&sp, &r->sp) != 0)
		return CRAWL_EXIT_FAILURE;
	r->src.sieve = r->sp;
	int rc = sieve_path_open_sieve(r->sp, &mc->sieve, ckpt, err, sizeof err);
	if (rc == SIEVE_OK)
		return CRAWL_EXIT_OK;
	fprintf(stderr, "crawler crawl: sieve ([sieve] impl = %s, memory = %" PRIu64 "): %s\n",
	        cfg->sieve.impl, cfg->sieve.memory, err[0] ? err : sieve_strerror(rc));
	return rc == SIEVE_EINVAL || rc == SIEVE_ENOTSUP ? CRAWL_EXIT_USAGE : CRAWL_EXIT_FAILURE;
}

/* The visit's network (visit.h): the engine and the resolver. */
static enum fetch_error net_start(void *ctx, const struct fetch_request *req)
{
	struct run *r = ctx;
	return fetch_engine_start(r->fetch, req);
}

static enum dns_error net_resolve(void *ctx, const char *name, dns_done_fn done, void *arg)
{
	struct run *r = ctx;
	return dns_resolve(r->dns, name, done, arg, uv_now(&r->loop));
}

/* The crawls recrawled against ([output] previous), loaded. 0, or -1
 * (said): a path that is not one, or this crawl's own folder. */
static int open_previous(struct run *r)
{
	const char *list = r->cfg->output.previous;
	char err[512];
	if (list[0] == '\0')
		return 0;
	if (previous_open_list(list, &r->cfg->url, r->cfg->output.dir, &r->previous, err,
	                       sizeof err) != 0) {
		fprintf(stderr, "crawler crawl: --previous: %s\n", err);
		return -1;
	}
	struct previous_stats ps;
	previous_stats(r->previous, &ps);
	r->src.previous = r->previous;
	if (!r->cfg->crawl.quiet)
		fprintf(stderr,
		        "crawler crawl: recrawl against %s: %" PRIu64 " pages (%" PRIu64
		        " lines skipped)\n",
		        list, ps.urls, ps.bad_lines + ps.cdxj_skipped);
	if (!r->cfg->crawl.quiet && ps.indexes_by_history > 0)
		fprintf(stderr,
		        "crawler crawl: --previous: %" PRIu64 " index(es) read as the history "
		        "beside them (it holds the validators)\n",
		        ps.indexes_by_history);
	return 0;
}

/* Fetch engine, DNS resolver, and the visit that drives them. */
static int open_fetch(struct run *r, struct module_configs *mc)
{
	enum fetch_error fe =
	        fetch_engine_create(&r->loop, &mc->fetch, run_on_fetch_done, r, &r->fetch);
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
	if (open_previous(r) != 0)
		return CRAWL_EXIT_USAGE;
	struct visit_lease_hooks leases;
	crawl_source_leases(r->source, &leases);
	struct visit_parts vp = {
		.crawl = &r->cfg->crawl,
		.url = &r->cfg->url,
		.fetch_config = &r->cfg->fetch,
		.politeness = &r->cfg->politeness,
		.frontier = r->frontier,
		.pol = r->pol,
		.net = { .ctx = r, .start = net_start, .resolve = net_resolve },
		.sitemaps = r->sitemaps,
		.hooks = { .ctx = r,
		           .can_start = run_can_start,
		           .page_allowed = run_page_allowed,
		           .pump = run_pump,
		           .dropped = run_rule_drops,
		           .pump_soon = run_pump_soon },
		.stopping = &r->stopping,
		.finished = &r->finished,
		.done = r->done,
		.previous = r->previous,
		.leases = leases,
	};
	r->visit = visit_create(&vp);
	r->src.visit = r->visit;
	r->src.fetch = r->fetch;
	r->src.dns = r->dns;
	return r->visit ? CRAWL_EXIT_OK : CRAWL_EXIT_FAILURE;
}

/* The writer's `recorded` hook: a job whose records are out goes to the
 * parse threads (r->parse is set before the loop hands over any job). */
static int run_recorded(void *ctx, struct crawl_job *j)
{
	struct run *r = ctx;
	return parse_jobs_recorded(r->parse, j);
}

/* Writer, parse threads, the checkpoint machine. */
static int start_workers(struct run *r, struct module_configs *mc, uint64_t ckpt_seq)
{
	const struct crawl_config *cfg = r->cfg;
	size_t wcap = (size_t)cfg->parse.queue + 2u * cfg->fetch.max_connections + 1024u;
	struct crawl_writer_parts wp = {
		.output = &cfg->output,
		.warc_config = cfg->output.warc ? &mc->warc : NULL,
		.queue_cap = 2 * wcap,
		.io = r->io,
		.wake = run_wake,
		.recorded = run_recorded,
		.ctx = r,
	};
	if (crawl_writer_open(&wp, &r->writer) != 0)
		return CRAWL_EXIT_FAILURE;
	r->src.writer = r->writer;
	struct parse_jobs_parts pp = {
		.parse = &cfg->parse,
		.links = &cfg->links,
		.url = &cfg->url,
		.crawl = &cfg->crawl,
		.fetch = &cfg->fetch,
		.scope = r->scope,
		.rules = r->rules,
		.source = r->source,
		.sp = r->sp,
		.writer = r->writer,
		.sitemaps = r->sitemaps,
		.focus = r->focus,
		.focus_tiers = cfg->frontier.order == FRONTIER_ORDER_FOCUSED,
		.wake = run_wake,
		.ctx = r,
	};
	if (parse_jobs_create(&pp, &r->parse) != 0)
		return CRAWL_EXIT_FAILURE;
	r->src.parse = r->parse;
	struct crawl_ckpt_parts cp = {
		.output = &cfg->output,
		.loop = &r->loop,
		.frontier = r->frontier,
		.pol = r->pol,
		.scope = r->scope,
		.rules = r->rules,
		.visit = r->visit,
		.sieve = r->sp,
		.parse = r->parse,
		.writer = r->writer,
		.stats = r->stats,
		.done = r->done,
		.spill_label = r->spill_label,
		.ctx = r,
		.finish = run_finish,
		.replay = run_fetch_done,
		.pump = run_pump,
	};
	r->ckpt = crawl_ckpt_create(&cp, ckpt_seq);
	r->src.ckpt = r->ckpt;
	return r->ckpt ? CRAWL_EXIT_OK : CRAWL_EXIT_FAILURE;
}

/* A resume: the crawl state of the checkpoint folder ckpt (NULL: none
 * was written). A crawl exit code. */
static int resume_state(struct run *r, const char *ckpt)
{
	struct crawl_ckpt_resume_parts p = {
		.output = &r->cfg->output,
		.quiet = r->cfg->crawl.quiet,
		.stats = r->stats,
		.scope = r->scope,
		.rules = r->rules,
		.visit = r->visit,
		.done = r->done,
	};
	if (crawl_ckpt_resume(&p, ckpt, &r->tail) != 0)
		return CRAWL_EXIT_FAILURE;
	crawl_outdir_archive(r->cfg, 0); /* an index it cannot write stops no crawl */
	return CRAWL_EXIT_OK;
}

/* The tail replay's hooks (crawl_tail.h). */
static int tail_count(void *ctx, const struct crawl_tail_entry *e, uint32_t *host)
{
	struct run *r = ctx;
	if (visit_host_get(r->visit, e->url, strlen(e->url), host) != 0)
		return -1;
	return visit_replayed(r->visit, *host, e);
}

static int tail_submit(void *ctx, struct crawl_job *j)
{
	struct run *r = ctx;
	return parse_jobs_try_submit(r->parse, j);
}

static void tail_drain(void *ctx)
{
	struct run *r = ctx;
	sieve_path_drain(r->sp, 0);
}

int run_replay_tail(struct run *r)
{
	struct crawl_tail_replay_parts p = {
		.output = &r->cfg->output,
		.crawl = &r->cfg->crawl,
		.fetch = &r->cfg->fetch,
		.warc = &r->cfg->warc,
		.done = r->done,
		.hooks = { .ctx = r,
		           .count = tail_count,
		           .submit = tail_submit,
		           .drain = tail_drain },
	};
	return crawl_tail_replay(&p, &r->tail, &r->tail_stats);
}

/* The focus terms ([crawl] focus), read again at a resume. A crawl exit
 * code. */
static int open_focus(struct run *r)
{
	const struct crawl_config *cfg = r->cfg;
	char err[1200];
	if (cfg->frontier.order == FRONTIER_ORDER_FOCUSED && !cfg->crawl.focus[0]) {
		fprintf(stderr,
		        "crawler crawl: --order focused needs --focus FILE ([crawl] focus)\n");
		return CRAWL_EXIT_USAGE;
	}
	if (cfg->crawl.focus[0] && focus_terms_load(cfg->crawl.focus, &r->focus, err, sizeof err)) {
		fprintf(stderr, "crawler crawl: %s\n", err);
		return CRAWL_EXIT_USAGE;
	}
	return CRAWL_EXIT_OK;
}

int run_setup(struct run *r, char *const *seeds, size_t nseeds, int resume)
{
	const struct crawl_config *cfg = r->cfg;
	struct module_configs *mc = calloc(1, sizeof *mc);
	uint64_t ckpt_seq = 0;
	int rc = CRAWL_EXIT_FAILURE, found = 0;
	if (!mc)
		return rc;
	/* before the output folder is touched, as a bad rules file */
	if ((rc = open_focus(r)) != CRAWL_EXIT_OK)
		goto out;
	rc = crawl_outdir_claim(cfg, resume, &r->lock, r->from, sizeof r->from, &ckpt_seq, &found);
	if (!found)
		r->from[0] = '\0';
	const char *from = found ? r->from : NULL;
	if (rc != CRAWL_EXIT_OK)
		goto out;
	rc = CRAWL_EXIT_FAILURE;
	r->resumed = resume;
	if ((rc = open_rules(r, resume)) != CRAWL_EXIT_OK)
		goto out;
	rc = CRAWL_EXIT_FAILURE;
	if (!resume && crawl_outdir_save_inputs(cfg, seeds, nseeds) != 0)
		goto out;
	crawl_outdir_remove_stale_spill(cfg);
	r->io = io_stall_create(1000);
	r->done = done_set_create();
	r->stats = crawl_stats_create(&r->src, &cfg->output, cfg->sieve.impl);
	if (!r->io || !r->done || !r->stats || module_configs_from(r, cfg, seeds, nseeds, mc) != 0)
		goto out;
	r->src = (struct crawl_stats_sources){
		.loop = &r->counters,
		.tail = &r->tail_stats,
		.io = r->io,
		.resumed = resume,
		.rules = r->rules,
	};
	snprintf(r->spill_label, sizeof r->spill_label, "%s (frontier spill)",
	         cfg->frontier.spill_dir[0] ? cfg->frontier.spill_dir : cfg->output.dir);
	if (uv_loop_init(&r->loop) != 0)
		goto out;
	r->loop_ok = 1;
	rc = open_frontier(r, mc, from);
	r->src.frontier = r->frontier;
	r->src.pol = r->pol;
	r->src.scope = r->scope;
	if (rc != CRAWL_EXIT_OK || (rc = open_sieve(r, mc, from)) != CRAWL_EXIT_OK ||
	    (rc = open_source(r)) != CRAWL_EXIT_OK || (rc = open_fetch(r, mc)) != CRAWL_EXIT_OK ||
	    (resume && (rc = resume_state(r, from)) != CRAWL_EXIT_OK) ||
	    (rc = start_workers(r, mc, ckpt_seq)) != CRAWL_EXIT_OK)
		goto out;
	rc = CRAWL_EXIT_OK;
out:
	free(mc);
	return rc;
}

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
	parse_jobs_stop(r->parse);
	sieve_path_close_sieve(r->sp);
	crawl_writer_close(r->writer);
}

static void write_reports(struct run *r)
{
	if (crawl_stats_write_json(r->stats) != 0)
		fprintf(stderr, "crawler crawl: cannot write %s/stats.json\n", r->cfg->output.dir);
	if (!r->cfg->crawl.quiet)
		crawl_stats_print_summary(r->stats);
}

/* Every exit: the fetch engine first (it cancels in-flight transfers,
 * whose results still go to the writer), the resolver, the handles, the
 * threads; then the reports of a crawl that ran, and the rest. */
void run_teardown(struct run *r, int ran)
{
	r->finished = 1;
	if (ran) /* the engine's and the resolver's figures, before they go */
		crawl_stats_gather(r->stats);
	r->src.fetch = NULL;
	r->src.dns = NULL;
	fetch_engine_destroy(r->fetch);
	r->fetch = NULL;
	dns_resolver_destroy(r->dns);
	r->dns = NULL;
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
	steer_stop(r->steer); /* no action file taken that the loop would not apply */
	crawl_source_stop(r->source);
	if (r->loop_ok)
		uv_run(&r->loop, UV_RUN_DEFAULT);
	stop_threads(r);
	if (ran)
		write_reports(r);
	if (ran && r->exit_code != CRAWL_EXIT_ABORTED)
		crawl_outdir_archive(r->cfg, 1);
	if (r->loop_ok) {
		uv_run(&r->loop, UV_RUN_DEFAULT);
		uv_loop_close(&r->loop);
	}
	steer_destroy(r->steer); /* before the pieces it steers; after the reports */
	crawl_ckpt_destroy(r->ckpt);
	parse_jobs_destroy(r->parse);
	crawl_writer_destroy(r->writer);
	sieve_path_destroy(r->sp);
	crawl_source_close(r->source); /* after every batch it made */
	visit_destroy(r->visit);
	sitemap_registry_destroy(r->sitemaps);
	url_rules_live_destroy(r->rules);
	focus_terms_destroy(r->focus); /* after the parse threads */
	scope_destroy(r->scope);
	politeness_destroy(r->pol);
	frontier_destroy(r->frontier);
	ARRAY_FREE_EACH(r->doms, r->ndoms);
	io_stall_destroy(r->io);
	done_set_destroy(r->done);
	previous_destroy(r->previous);
	crawl_stats_destroy(r->stats);
	outdir_lock_release(r->lock);
}
