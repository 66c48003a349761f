/*
 * cluster_budget.c: the crawl-wide page budget {P}:budget (cluster.h): a
 * reservation is one script that grants what is left of it, at most what
 * was asked, so the counter never passes the limit (a durable write: a
 * master killed does not forget a grant); a give-back is a DECRBY. And
 * the crawl's deadline {P}:deadline (crawl.max_time_ms), set once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/cluster_int.h"

#define CRAWL_SCRIPT_NUMS 2

/* Runs script id durably on the crawl-wide key "BASE:name" with the n
 * (at most CRAWL_SCRIPT_NUMS) numbers as its arguments; fn gets a copy
 * of req (size bytes, fn frees it) and the reply. */
static int crawl_script(struct cluster *c, enum cl_script_id id, const char *name,
                        const uint64_t *nums, int n, router_reply_fn *fn, const void *req,
                        size_t size)
{
	if (!cl_crawl_up(c))
		return CLUSTER_EDOWN;
	char key[CL_KEY_MAX], num[CRAWL_SCRIPT_NUMS][24];
	const char *args[2 + CRAWL_SCRIPT_NUMS] = { "1", key };
	snprintf(key, sizeof key, "%s:%s", c->base, name);
	for (int i = 0; i < n; i++) {
		snprintf(num[i], sizeof num[i], "%llu", (unsigned long long)nums[i]);
		args[2 + i] = num[i];
	}
	return cl_eval_copy(c, id, c->crawl_slot, ROUTER_DURABLE, fn, req, size, 2 + n, args);
}

struct budget_req {
	struct cluster *c;
	void (*done)(void *arg, bool ok, uint64_t granted, uint64_t reserved);
	void *arg;
};

static void on_reserved(void *priv, const redisReply *r)
{
	struct budget_req *q = priv;
	bool ok = cl_reply_ints(r, 2, 0);
	if (!ok)
		cl_fail(q->c, "page budget", r);
	if (!q->c->destroying)
		q->done(q->arg, ok, ok ? (uint64_t)r->element[0]->integer : 0,
		        ok ? (uint64_t)r->element[1]->integer : 0);
	free(q);
}

int cluster_budget_reserve(struct cluster *c, uint64_t max, uint64_t want,
                           void (*done)(void *arg, bool ok, uint64_t granted, uint64_t reserved),
                           void *arg)
{
	if (max == 0 || done == NULL)
		return CLUSTER_EINVAL;
	const struct budget_req q = { c, done, arg };
	const uint64_t nums[] = { max, want };
	return crawl_script(c, CL_S_RESERVE, "budget", nums, 2, on_reserved, &q, sizeof q);
}

int cluster_budget_give_back(struct cluster *c, uint64_t n)
{
	if (!cl_crawl_up(c))
		return CLUSTER_EDOWN;
	char key[CL_KEY_MAX];
	snprintf(key, sizeof key, "%s:budget", c->base);
	if (n > 0 && router_sendf(c->rt, c->crawl_slot, 0, NULL, NULL, "DECRBY %s %llu", key,
	                          (unsigned long long)n) != ROUTER_OK)
		return CLUSTER_EDOWN;
	return CLUSTER_OK;
}

struct deadline_req {
	struct cluster *c;
	void (*done)(void *arg, bool ok, int64_t left_ms);
	void *arg;
};

static void on_deadline(void *priv, const redisReply *r)
{
	struct deadline_req *q = priv;
	bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	          r->element[0]->type == REDIS_REPLY_INTEGER;
	if (!ok)
		cl_fail(q->c, "deadline", r);
	if (!q->c->destroying)
		q->done(q->arg, ok, ok ? (int64_t)r->element[0]->integer : 0);
	free(q);
}

int cluster_deadline(struct cluster *c, uint64_t max_ms,
                     void (*done)(void *arg, bool ok, int64_t left_ms), void *arg)
{
	if (max_ms == 0 || done == NULL)
		return CLUSTER_EINVAL;
	const struct deadline_req q = { c, done, arg };
	return crawl_script(c, CL_S_DEADLINE, "deadline", &max_ms, 1, on_deadline, &q, sizeof q);
}
