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

static void single_close(void *impl)
{
	free(impl);
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

static struct link_batch *single_batch(void *impl)
{
	struct single *s = impl;
	return sieve_path_batch_create(s->p.sp);
}

/* The rest is each operation's default (crawl_source.h). */
static const struct crawl_source_ops single_ops = {
	.open = single_open,
	.close = single_close,
	.page_allowed = single_page_allowed,
	.budget_over = single_budget_over,
	.batch_create = single_batch,
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
	if (s && s->ops->stop)
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
	return !s->ops->ready || s->ops->ready(s->impl);
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
	return s->ops->keep_host ? s->ops->keep_host(s->impl, host) : 1;
}

void crawl_source_pump(struct crawl_source *s)
{
	if (s->ops->pump)
		s->ops->pump(s->impl);
}

int crawl_source_done(struct crawl_source *s, int dry)
{
	return s->ops->done ? s->ops->done(s->impl, dry) : dry;
}

int crawl_source_leave(struct crawl_source *s, int loop_idle)
{
	return !s->ops->leave || s->ops->leave(s->impl, loop_idle);
}

int crawl_source_leaving(struct crawl_source *s)
{
	return s->ops->leaving && s->ops->leaving(s->impl);
}

int crawl_source_time_up(struct crawl_source *s)
{
	return s->ops->time_up && s->ops->time_up(s->impl);
}

void crawl_source_tick(struct crawl_source *s, const struct crawl_stats_pages *pages)
{
	if (s->ops->tick)
		s->ops->tick(s->impl, pages);
}

int crawl_source_progress(struct crawl_source *s, char *buf, size_t cap)
{
	return s->ops->progress && s->ops->progress(s->impl, buf, cap);
}

void crawl_source_leases(struct crawl_source *s, struct visit_lease_hooks *out)
{
	if (s->ops->leases)
		s->ops->leases(s->impl, out);
	else
		*out = (struct visit_lease_hooks){ 0 };
}

struct link_batch *crawl_source_batch(struct crawl_source *s)
{
	return s->ops->batch_create(s->impl);
}

void crawl_source_stats(const struct crawl_source *s, struct crawl_source_stats *out)
{
	if (s->ops->stats)
		s->ops->stats(s->impl, out);
	else
		*out = (struct crawl_source_stats){ 0 };
}

void crawl_source_share_rules(struct crawl_source *s, const char *text, size_t len,
                              const char *source)
{
	if (s && s->ops->share_rules)
		s->ops->share_rules(s->impl, text, len, source);
}
