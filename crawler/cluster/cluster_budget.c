/*
 * cluster_budget.c: the crawl-wide page budget {P}:budget (cluster.h): a
 * reservation is one script that grants what is left of it, at most what
 * was asked, so the counter never passes the limit (a durable write: a
 * master killed does not forget a grant); a give-back is a DECRBY.
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
