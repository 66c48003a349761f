/*
 * cluster_drain.c: the heir's drain of a dead agent's inbox (cluster.h):
 * XAUTOCLAIM of the entries it read and never acked (re-routed raw: its
 * sieve may have taken them from the seen set), XREADGROUP of the unread
 * ones (re-routed with their field), each URL to its owner in the current
 * view by a durable XADD, then the epoch, then the XACK on the dead inbox.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/cluster_int.h"

/* Entries per claim or read. */
#define DRAIN_COUNT 64

/* One read of a dead inbox. */
struct drain {
	struct cluster *c;
	bool claim;
	char dead[ASSIGN_NAME_MAX + 1];
};

/* The entries of one read on their way: XADDs, then the epoch, then the XACK. */
struct reroute {
	struct cluster *c;
	char dead[ASSIGN_NAME_MAX + 1];
	char (*ids)[CL_ID_MAX];
	size_t nids;
	size_t waiting; /* XADDs not answered */
	bool failed;
};

static void drain_done(struct cluster *c)
{
	if (--c->drains == 0 && c->drain_found && !c->destroying)
		cl_drain_dead(c); /* this pass moved entries: more may wait */
}

static void reroute_free(struct reroute *q)
{
	struct cluster *c = q->c;
	free(q->ids);
	free(q);
	drain_done(c);
}

static void on_dead_xack(void *priv, const redisReply *r)
{
	struct reroute *q = priv;
	if (r == NULL || r->type != REDIS_REPLY_INTEGER)
		q->c->drain_found = false; /* the entries stay for the next pass */
	reroute_free(q);
}

static void on_drain_epoch(void *priv, const redisReply *r)
{
	struct reroute *q = priv;
	struct cluster *c = q->c;
	const char **argv = calloc(q->nids + 3, sizeof *argv);
	size_t *argl = calloc(q->nids + 3, sizeof *argl);
	char key[CL_KEY_MAX];
	unsigned slot = cl_key(c, "a", q->dead, ":inbox", key);
	bool sent = false;
	if (!c->destroying && r != NULL && r->type == REDIS_REPLY_INTEGER && argv && argl) {
		argv[0] = "XACK";
		argv[1] = key;
		argv[2] = "g";
		for (size_t i = 0; i < q->nids; i++)
			argv[i + 3] = q->ids[i];
		for (size_t i = 0; i < q->nids + 3; i++)
			argl[i] = strlen(argv[i]);
		sent = router_send(c->rt, slot, 0, on_dead_xack, q, (int)q->nids + 3, argv, argl) ==
		       ROUTER_OK;
	}
	free(argv);
	free(argl);
	if (!sent) {
		c->drain_found = false;
		reroute_free(q);
	}
}

/* Every XADD answered: the epoch moves, then the XACK (cluster.h). */
static void reroute_acks(struct reroute *q)
{
	struct cluster *c = q->c;
	char key[CL_KEY_MAX];
	snprintf(key, sizeof key, "%s:epoch", c->base);
	if (q->failed || c->destroying ||
	    router_sendf(c->rt, c->crawl_slot, 0, on_drain_epoch, q, "INCR %s", key) != ROUTER_OK) {
		c->drain_found = false;
		reroute_free(q);
	}
}

static void on_rerouted(void *priv, const redisReply *r)
{
	struct reroute *q = priv;
	if (r == NULL || r->type != REDIS_REPLY_STRING)
		q->failed = true;
	if (--q->waiting == 0)
		reroute_acks(q);
}

/* The URLs of entries, by owner in the current view: out[2 * o + raw]. */
static bool reroute_split(struct cluster *c, struct reroute *q, const redisReply *entries,
                          bool claimed, struct cl_batch *out)
{
	for (size_t i = 0; i < entries->elements; i++) {
		const redisReply *e = entries->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 ||
		    e->element[0]->type != REDIS_REPLY_STRING)
			continue;
		snprintf(q->ids[q->nids++], CL_ID_MAX, "%.*s", (int)e->element[0]->len,
		         e->element[0]->str);
		bool raw = true;
		const redisReply *lines = cl_entry_lines(e, &raw);
		char *text = lines ? strndup(lines->str, lines->len) : NULL;
		long k = text ? cl_lines_parse(c, text) : 0;
		raw = raw || claimed;
		for (long j = 0; j < k; j++) {
			size_t hl;
			const char *h = cluster_url_host(c->urls[j].url, &hl);
			const char *owner = assign_view_owner(c->view, h, hl);
			size_t o = 0;
			while (owner != NULL && o < c->nlive && strcmp(c->live[o], owner) != 0)
				o++;
			if (owner == NULL)
				o = c->nlive; /* no owner: nothing moves this pass */
			if (o == c->nlive || cl_batch_append(&out[2 * o + raw], c->urls[j].url,
			                                     c->urls[j].via, c->urls[j].depth)) {
				free(text);
				return false;
			}
		}
		c->st.rerouted += k > 0 ? (uint64_t)k : 0;
		free(text);
		if (lines != NULL && k < 0)
			return false;
	}
	return true;
}

/* Re-routes the entries of a read of dead agent's inbox to their owners
 * in the current view; nothing is acked unless every XADD went through. */
static void reroute(struct cluster *c, const char *dead, const redisReply *entries, bool claimed)
{
	size_t nout = 2 * c->nlive;
	struct cl_batch *out = calloc(nout + 1, sizeof *out);
	struct reroute *q = calloc(1, sizeof *q);
	if (q != NULL)
		q->ids = calloc(entries->elements + 1, sizeof *q->ids);
	if (out == NULL || q == NULL || q->ids == NULL || c->view == NULL ||
	    !reroute_split(c, q, entries, claimed, out)) {
		if (q != NULL)
			free(q->ids);
		free(q);
		goto out;
	}
	q->c = c;
	snprintf(q->dead, sizeof q->dead, "%s", dead);
	c->drains++;
	for (size_t o = 0; o < nout; o++) {
		if (out[o].nurls == 0)
			continue;
		char key[CL_KEY_MAX];
		unsigned slot = cl_key(c, "a", c->live[o / 2], ":inbox", key);
		if (router_sendf(c->rt, slot, ROUTER_DURABLE, on_rerouted, q, "XADD %s * %s %b",
		                 key, o % 2 ? "r" : "u", out[o].buf, out[o].len) == ROUTER_OK)
			q->waiting++;
		else
			q->failed = true;
	}
	if (q->waiting == 0) /* no answer runs before the loop is back */
		reroute_acks(q);
out:
	for (size_t o = 0; out != NULL && o < nout; o++)
		free(out[o].buf);
	free(out);
}

/* A claim ([cursor, entries, deleted]) or a read ([[stream, entries]]) of a dead inbox. */
static void on_dead_read(void *priv, const redisReply *r)
{
	struct drain *d = priv;
	struct cluster *c = d->c;
	const redisReply *entries = NULL;
	if (c->destroying || r == NULL || r->type != REDIS_REPLY_ARRAY || c->state != CL_LIVE)
		entries = NULL;
	else if (d->claim && r->elements >= 2 && r->element[1]->type == REDIS_REPLY_ARRAY)
		entries = r->element[1];
	else if (!d->claim && r->elements == 1 && r->element[0]->elements == 2)
		entries = r->element[0]->element[1];
	if (entries != NULL && entries->elements > 0) {
		c->drain_found = true;
		reroute(c, d->dead, entries, d->claim);
	}
	free(d);
	drain_done(c);
}

/* 1 if dead agent i's heir is this agent. */
static bool inherited(const struct cluster *c, size_t i)
{
	const char *heir = assign_view_owner(c->view, c->dead[i], strlen(c->dead[i]));
	return heir != NULL && strcmp(heir, c->name) == 0 && strcmp(c->dead[i], c->name) != 0;
}

/* A claim and a read of dead agent's inbox: false if not sent whole. */
static bool drain_one(struct cluster *c, const char *dead)
{
	char key[CL_KEY_MAX];
	unsigned slot = cl_key(c, "a", dead, ":inbox", key);
	for (int step = 0; step < 2; step++) {
		struct drain *d = calloc(1, sizeof *d);
		if (d == NULL)
			return false;
		d->c = c;
		d->claim = step == 0;
		snprintf(d->dead, sizeof d->dead, "%s", dead);
		int rc = d->claim ? router_sendf(c->rt, slot, 0, on_dead_read, d,
		                                 "XAUTOCLAIM %s g %s %u 0-0 COUNT %d", key,
		                                 c->consumer, c->lease_ms, DRAIN_COUNT)
		                  : router_sendf(c->rt, slot, 0, on_dead_read, d,
		                                 "XREADGROUP GROUP g %s COUNT %d STREAMS %s >",
		                                 c->consumer, DRAIN_COUNT, key);
		if (rc != ROUTER_OK) {
			free(d);
			return false;
		}
		c->drains++;
	}
	return true;
}

/* A pass drains every dead agent this agent is the heir of: an agent may
 * inherit several (one killed, one stopped), each inbox on its own master. */
void cl_drain_dead(struct cluster *c)
{
	if (c->view == NULL || c->drains > 0 || c->state != CL_LIVE || c->destroying)
		return;
	c->drain_found = false;
	for (size_t i = 0; i < c->ndead; i++)
		if (inherited(c, i) && !drain_one(c, c->dead[i]))
			return;
}
