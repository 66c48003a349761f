/*
 * visit_lease.c: per-IP leases across the agents of a cluster crawl: a
 * request waits for its address's lease before it starts, and shortens it
 * to the IP delay once answered (see visit.h).
 */
#include "crawler/visit.h"
#include "crawler/visit_int.h"

#include <string.h>

#include "frontier/base/clock.h"
#include "politeness/delay_policy.h"

/* Microseconds to whole milliseconds, rounded up, at least 1. */
static unsigned ms_up(uint64_t us)
{
	uint64_t ms = (us + 999) / 1000;
	return ms == 0 ? 1 : ms > UINT32_MAX ? UINT32_MAX : (unsigned)ms;
}

/* The IP delay after a visit of host that would end at end_us: what the
 * politeness policy makes the address rest (delay_policy_ip_wait). */
static uint64_t ip_wait(const struct visit *v, uint32_t host, uint64_t end_us)
{
	const struct host_state *hs = visit_host_state_if_any(v, host);
	uint64_t start = hs && hs->visit_start_us < end_us ? hs->visit_start_us : end_us;
	return delay_policy_ip_wait(v->p.politeness, start, end_us);
}

/* The host's IP group rests until_us, its visit ended; the loop is told. */
static void host_ip_busy(struct visit *v, uint32_t host, uint64_t until_us, int from_callback)
{
	politeness_ip_busy(v->p.pol, host, until_us);
	visit_end(v, host, "IP lease not had");
	if (from_callback)
		v->p.hooks.pump(v->p.hooks.ctx);
}

/* q cannot go now: back where it came from, its visit ended, its IP group
 * resting wait_us. */
static void lease_put_back(struct visit *v, struct req *q, uint64_t wait_us, int from_callback)
{
	uint32_t host = q->host;
	visit_req_put_back(v, q);
	host_ip_busy(v, host, monotonic_us() + wait_us, from_callback);
}

/* The lease of key ends the IP delay from now (the end of a request of
 * host's visit). */
static void lease_release(struct visit *v, const char *key, uint32_t host)
{
	v->p.leases.release(v->p.leases.ctx, key, ms_up(ip_wait(v, host, monotonic_us())));
}

/* The rest of a group refused its lease: the holder's time left, but no
 * more than the policy's IP delay (a holder whose request is in flight has
 * a long TTL it will shorten when the response is in). */
static uint64_t refused_wait(const struct visit *v, long wait_ms)
{
	uint64_t now = monotonic_us();
	uint64_t most = delay_policy_ip_wait(v->p.politeness, now, now);
	uint64_t w = (uint64_t)wait_ms * 1000;
	if (w > most)
		w = most;
	return w < VISIT_LEASE_MIN_WAIT_MS * 1000 ? VISIT_LEASE_MIN_WAIT_MS * 1000 : w;
}

/* The answer to q's lease (the lease hook's callback). */
static void lease_answered(void *arg, bool granted, long wait_ms)
{
	struct req *q = arg;
	struct visit *v = q->v;
	uint32_t host = q->host;
	if (*v->p.finished)
		return; /* q stays on the live list until visit_destroy */
	uint64_t late_us = monotonic_us() - q->lease_asked_us;
	if (!granted) {
		v->st.ip_lease_refused += wait_ms >= 0;
		v->st.ip_lease_errors += wait_ms < 0;
		lease_put_back(
		        v, q, wait_ms >= 0 ? refused_wait(v, wait_ms) : VISIT_LEASE_RETRY_MS * 1000,
		        1);
		return;
	}
	if (late_us > VISIT_LEASE_MARGIN_MS * 1000 || *v->p.stopping ||
	    !v->p.hooks.can_start(v->p.hooks.ctx)) {
		/* never sent: the lease shortened as after a request, which
		 * still covers the delay after this visit's earlier ones */
		v->st.ip_lease_errors += late_us > VISIT_LEASE_MARGIN_MS * 1000;
		lease_release(v, q->ip_key, host);
		lease_put_back(v, q, 0, 1);
		return;
	}
	int robots = q->robots;
	char key[IP_ADDR_STRLEN];
	memcpy(key, q->ip_key, sizeof key);
	q->lease = REQ_LEASE_HELD;
	if (visit_req_send(v, q) != 0) { /* q released */
		lease_release(v, key, host);
		if (robots) {
			visit_robots_unreachable(v, host, ROBOTS_MISS_LOCAL);
		} else {
			v->st.pages_started--;
			visit_continue(v, host); /* the next URL, as if this one had failed */
		}
		v->p.hooks.pump(v->p.hooks.ctx);
	}
}

int visit_lease_ask(struct visit *v, struct req *q)
{
	struct ip_addr addr, group;
	uint64_t now = monotonic_us();
	uint64_t bound = (uint64_t)v->p.fetch_config->total_timeout_ms * 1000;
	if (!v->p.leases.acquire || !v->p.politeness->ip_politeness ||
	    ip_wait(v, q->host, now + bound) == 0 || !q->ip[0] ||
	    ip_addr_parse(q->ip, strlen(q->ip), &addr) != 0)
		return 0;
	ip_addr_group(&addr, &group);
	ip_addr_format(&group, q->ip_key, sizeof q->ip_key);
	q->lease = REQ_LEASE_ASKED;
	q->lease_asked_us = now;
	/* the request's time bound and the delay after it, from a grant at
	 * most the margin late */
	unsigned ttl =
	        ms_up(ip_wait(v, q->host, now + bound) + bound + VISIT_LEASE_MARGIN_MS * 1000);
	if (v->p.leases.acquire(v->p.leases.ctx, q->ip_key, ttl, lease_answered, q) != 0) {
		v->st.ip_lease_errors++;
		lease_put_back(v, q, VISIT_LEASE_RETRY_MS * 1000, 0);
	}
	return 1;
}

void visit_lease_done(struct visit *v, struct req *q)
{
	if (q->lease != REQ_LEASE_HELD)
		return;
	q->lease = REQ_LEASE_NONE;
	lease_release(v, q->ip_key, q->host);
}
