/*
 * crawl_source.c: the source's wrappers, and the source of a crawl run by
 * this process alone (see crawl_source.h). The agent of a shared crawl is
 * crawl_cluster.c.
 */
#include "crawler/crawl_source.h"

#include <stdlib.h>

#include "crawler/config/config.h"
#include "crawler/crawl_cluster.h"
#include "crawler/crawl_exit.h"
#include "crawler/sieve_path.h"
#include "crawler/visit.h"

struct crawl_source {
	const struct crawl_source_ops *ops;
	void *impl;
};

/* ---- this process alone ---- */

struct single {
	struct crawl_source_parts p;
	uint64_t max_pages;
};

static int single_open(const struct crawl_source_config *cfg,
                       const struct crawl_source_parts *parts, void **impl)
{
	struct single *s = calloc(1, sizeof *s);
	if (!s)
		return CRAWL_EXIT_FAILURE;
	s->p = *parts;
	s->max_pages = cfg->max_pages;
	*impl = s;
	return CRAWL_EXIT_OK;
}

static void single_stop(void *impl)
{
	(void)impl;
}

static void single_close(void *impl)
{
	free(impl);
}

static int single_ready(void *impl)
{
	(void)impl;
	return 1;
}

static int single_page_allowed(void *impl)
{
	struct single *s = impl;
	return !s->max_pages || s->p.pages_started(s->p.ctx) < s->max_pages;
}

static int single_budget_over(void *impl)
{
	return !single_page_allowed(impl);
}

static int single_keep_host(void *impl, uint32_t host)
{
	(void)impl;
	(void)host;
	return 1;
}

static void single_pump(void *impl)
{
	(void)impl;
}

static int single_done(void *impl, int dry)
{
	(void)impl;
	return dry;
}

static int single_leave(void *impl, int loop_idle)
{
	(void)impl;
	(void)loop_idle;
	return 1;
}

static int single_leaving(void *impl)
{
	(void)impl;
	return 0;
}

static void single_tick(void *impl, const struct crawl_stats_pages *pages)
{
	(void)impl;
	(void)pages;
}

static int single_progress(void *impl, char *buf, size_t cap)
{
	(void)impl;
	(void)buf;
	(void)cap;
	return 0;
}

static void single_leases(void *impl, struct visit_lease_hooks *out)
{
	(void)impl;
	*out = (struct visit_lease_hooks){ 0 };
}

static struct link_batch *single_batch(void *impl)
{
	struct single *s = impl;
	return sieve_path_batch_create(s->p.sp);
}

static void single_stats(void *impl, struct crawl_source_stats *out)
{
	(void)impl;
	*out = (struct crawl_source_stats){ 0 };
}

static const struct crawl_source_ops single_ops = {
	.name = "single",
	.open = single_open,
	.stop = single_stop,
	.close = single_close,
	.ready = single_ready,
	.page_allowed = single_page_allowed,
	.budget_over = single_budget_over,
	.keep_host = single_keep_host,
	.pump = single_pump,
	.done = single_done,
	.leave = single_leave,
	.leaving = single_leaving,
	.tick = single_tick,
	.progress = single_progress,
	.leases = single_leases,
	.batch_create = single_batch,
	.stats = single_stats,
};

/* ---- the wrappers ---- */

int crawl_source_open(const struct crawl_source_config *cfg, const struct crawl_source_parts *parts,
                      struct crawl_source **out)
{
	struct crawl_source *s = calloc(1, sizeof *s);
	*out = NULL;
	if (!s)
		return CRAWL_EXIT_FAILURE;
	s->ops = cfg->cluster->redis[0] ? &crawl_cluster_ops : &single_ops;
	int rc = s->ops->open(cfg, parts, &s->impl);
	if (rc != CRAWL_EXIT_OK) {
		free(s);
		return rc;
	}
	*out = s;
	return CRAWL_EXIT_OK;
}

void crawl_source_stop(struct crawl_source *s)
{
	if (s)
		s->ops->stop(s->impl);
}

void crawl_source_close(struct crawl_source *s)
{
	if (!s)
		return;
	s->ops->close(s->impl);
	free(s);
}

int crawl_source_ready(struct crawl_source *s)
{
	return s->ops->ready(s->impl);
}

int crawl_source_page_allowed(struct crawl_source *s)
{
	return s->ops->page_allowed(s->impl);
}

int crawl_source_budget_over(struct crawl_source *s)
{
	return s->ops->budget_over(s->impl);
}

int crawl_source_keep_host(struct crawl_source *s, uint32_t host)
{
	return s->ops->keep_host(s->impl, host);
}

void crawl_source_pump(struct crawl_source *s)
{
	s->ops->pump(s->impl);
}

int crawl_source_done(struct crawl_source *s, int dry)
{
	return s->ops->done(s->impl, dry);
}

int crawl_source_leave(struct crawl_source *s, int loop_idle)
{
	return s->ops->leave(s->impl, loop_idle);
}

int crawl_source_leaving(struct crawl_source *s)
{
	return s->ops->leaving(s->impl);
}

void crawl_source_tick(struct crawl_source *s, const struct crawl_stats_pages *pages)
{
	s->ops->tick(s->impl, pages);
}

int crawl_source_progress(struct crawl_source *s, char *buf, size_t cap)
{
	return s->ops->progress(s->impl, buf, cap);
}

void crawl_source_leases(struct crawl_source *s, struct visit_lease_hooks *out)
{
	s->ops->leases(s->impl, out);
}

struct link_batch *crawl_source_batch(struct crawl_source *s)
{
	return s->ops->batch_create(s->impl);
}

void crawl_source_stats(const struct crawl_source *s, struct crawl_source_stats *out)
{
	s->ops->stats(s->impl, out);
}
