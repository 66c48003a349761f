/*
 * cluster_budget.c: the crawl-wide page budget {P}:budget (cluster.h): a
 * reservation is one script that grants what is left of it, at most what
 * was asked, so the counter never passes the limit (a durable write: a
 * master killed does not forget a grant); a give-back is a DECRBY. And
 * the crawl's deadline {P}:deadline (crawl.max_time_ms), set once.
 */
#include <stdio.h>
#include <stdlib.h>

#include "crawler/cluster/cluster_int.h"

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
	if (!cl_crawl_up(c))
		return CLUSTER_EDOWN;
	struct budget_req *q = malloc(sizeof *q);
	if (q == NULL)
		return CLUSTER_ENOMEM;
	*q = (struct budget_req){ c, done, arg };
	char key[CL_KEY_MAX], m[24], w[24];
	snprintf(key, sizeof key, "%s:budget", c->base);
	snprintf(m, sizeof m, "%llu", (unsigned long long)max);
	snprintf(w, sizeof w, "%llu", (unsigned long long)want);
	const char *args[4] = { "1", key, m, w };
	if (cl_eval(c, CL_S_RESERVE, c->crawl_slot, ROUTER_DURABLE, on_reserved, q, 4, args) !=
	    ROUTER_OK) {
		free(q);
		return CLUSTER_EDOWN;
	}
	return CLUSTER_OK;
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
	if (!cl_crawl_up(c))
		return CLUSTER_EDOWN;
	struct deadline_req *q = malloc(sizeof *q);
	if (q == NULL)
		return CLUSTER_ENOMEM;
	*q = (struct deadline_req){ c, done, arg };
	char key[CL_KEY_MAX], m[24];
	snprintf(key, sizeof key, "%s:deadline", c->base);
	snprintf(m, sizeof m, "%llu", (unsigned long long)max_ms);
	const char *args[3] = { "1", key, m };
	if (cl_eval(c, CL_S_DEADLINE, c->crawl_slot, ROUTER_DURABLE, on_deadline, q, 3, args) !=
	    ROUTER_OK) {
		free(q);
		return CLUSTER_EDOWN;
	}
	return CLUSTER_OK;
}
