/*
 * cluster_lease.c: per-IP politeness leases across agents, with turns
 * (cluster.h; the script is CL_S_IP_LEASE in cluster_scripts.c). Each IP
 * group's lease is its own hash tag, so leases spread over the masters.
 */
#include <stdio.h>
#include <stdlib.h>

#include "crawler/cluster/cluster_int.h"

struct ip_lease {
	struct cluster *c;
	void (*done)(void *arg, bool granted, long wait_ms);
	void *arg;
};

static void on_ip_lease(void *priv, const redisReply *r)
{
	struct ip_lease *l = priv;
	/* {granted, ms to wait} */
	bool ok = cl_reply_ints(r, 2, -2);
	if (!ok)
		cl_fail(l->c, "ip lease", r);
	if (!l->c->destroying) {
		bool granted = ok && r->element[0]->integer == 1;
		long left = ok && r->element[1]->integer > 0 ? (long)r->element[1]->integer : 0;
		l->done(l->arg, granted, ok ? left : -1);
	}
	free(l);
}

int cluster_ip_lease(struct cluster *c, const char *addr, unsigned delay_ms,
                     void (*done)(void *arg, bool granted, long wait_ms), void *arg)
{
	if (addr == NULL || *addr == '\0' || done == NULL || delay_ms == 0)
		return CLUSTER_EINVAL;
	char key[CL_KEY_MAX], q[CL_KEY_MAX], d[CL_KEY_MAX], ttl[24], grace[24], patience[24];
	unsigned slot = cl_key(c, "ip", addr, "", key);
	cl_key(c, "ip", addr, ":q", q);
	cl_key(c, "ip", addr, ":d", d);
	snprintf(ttl, sizeof ttl, "%u", delay_ms);
	snprintf(grace, sizeof grace, "%u", CLUSTER_IP_GRACE_MS);
	snprintf(patience, sizeof patience, "%u", c->ip_patience_ms);
	if (c->destroying || !router_up(c->rt, slot))
		return CLUSTER_EDOWN;
	const struct ip_lease l = { .c = c, .done = done, .arg = arg };
	const char *args[8] = { "3", key, q, d, c->name, ttl, grace, patience };
	return cl_eval_copy(c, CL_S_IP_LEASE, slot, 0, on_ip_lease, &l, sizeof l, 8, args);
}

int cluster_ip_release(struct cluster *c, const char *addr, unsigned delay_ms)
{
	if (addr == NULL || *addr == '\0' || delay_ms == 0)
		return CLUSTER_EINVAL;
	char key[CL_KEY_MAX], delay[24];
	unsigned slot = cl_key(c, "ip", addr, "", key);
	snprintf(delay, sizeof delay, "%u", delay_ms);
	const char *args[4] = { "1", key, c->name, delay };
	if (cl_eval(c, CL_S_IP_RELEASE, slot, 0, NULL, NULL, 4, args) != ROUTER_OK)
		return CLUSTER_EDOWN;
	return CLUSTER_OK;
}
