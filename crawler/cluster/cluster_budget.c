/*
 * cluster_budget.c: the crawl-wide page budget P:budget (cluster.h): a
 * reservation is one script that grants what is left of it, at most what
 * was asked, so the counter never passes the limit; a give-back is a
 * DECRBY.
 */
#include <stdlib.h>

#include "crawler/cluster/cluster_int.h"

/* KEYS[1] the counter, ARGV[1] the limit, ARGV[2] the pages asked:
 * returns {granted, reserved crawl-wide after the grant}. Lua numbers are
 * doubles: exact up to 2^53, above any limit the key table allows. */
static const char reserve_script[] =
        "local used = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
        "local n = math.min(tonumber(ARGV[2]), tonumber(ARGV[1]) - used)\n"
        "if n > 0 then used = redis.call('INCRBY', KEYS[1], n) else n = 0 end\n"
        "return {n, used}\n";

struct budget_req {
	struct cluster *c;
	void (*done)(void *arg, bool ok, uint64_t granted, uint64_t reserved);
	void *arg;
};

static void on_reserved(redisAsyncContext *ac, void *reply, void *priv)
{
	struct budget_req *q = priv;
	redisReply *r = reply;
	(void)ac;
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
	redisAsyncContext *ac = cl_conn(c);
	if (max == 0 || done == NULL)
		return CLUSTER_EINVAL;
	if (ac == NULL || !c->connected)
		return CLUSTER_EDOWN;
	struct budget_req *q = malloc(sizeof *q);
	if (q == NULL)
		return CLUSTER_ENOMEM;
	*q = (struct budget_req){ c, done, arg };
	if (redisAsyncCommand(ac, on_reserved, q, "EVAL %s 1 %s:budget %llu %llu", reserve_script,
	                      c->prefix, (unsigned long long)max,
	                      (unsigned long long)want) != REDIS_OK) {
		free(q);
		return CLUSTER_EDOWN;
	}
	return CLUSTER_OK;
}

int cluster_budget_give_back(struct cluster *c, uint64_t n)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac == NULL || !c->connected)
		return CLUSTER_EDOWN;
	if (n > 0 && redisAsyncCommand(ac, NULL, NULL, "DECRBY %s:budget %llu", c->prefix,
	                               (unsigned long long)n) != REDIS_OK)
		return CLUSTER_EDOWN;
	return CLUSTER_OK;
}
