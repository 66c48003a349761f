/*
 * Politeness simulation on a virtual clock: 100,000 hosts over 2,000 IPs
 * (normal build; scaled down under sanitizers or by CRAWLER_TEST_SCALE),
 * random URL arrivals (skewed: 1% of hosts get half of them), random visit
 * durations, random outcomes (errors, Retry-After), 10% of hosts starting
 * with an unknown IP (resolved through the pop / set_ip / release-NONE
 * protocol). The simulated fetch loop keeps up to `slots` visits in flight.
 * Half of the model's IPs are IPv6 /64s: each host of such an IP gets its
 * own address in it (the host id in the low 64 bits), so the library must
 * group by /64 for the model's per-IP checks to hold.
 *
 * Asserts, against a reference model kept by the test:
 *   - politeness: each visit starts no earlier than the host's previous
 *     visit end + the policy delay, and its IP's previous visit end + the IP
 *     delay (both recomputed here from the config, not from the library);
 *     no host and no IP is visited twice at once;
 *   - no idle capacity: when pop answers "not ready until T" (or "empty"),
 *     no idle host with URLs and an idle IP is ready before T (checked on a
 *     random sample each time and on all hosts periodically), and every
 *     host handed out is indeed ready;
 *   - FIFO order per host and exactly-once delivery of every URL, retired
 *     hosts' URLs being all accounted for as dropped.
 * Run for both delay policies (the ratio run with a 4 MiB frontier budget,
 * so queues also pass through the disk spill), and once with IP politeness
 * off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "politeness/politeness.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define S 1000000ull
#define NEVER UINT64_MAX

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static uint64_t rnd(uint64_t lo, uint64_t hi) /* [lo, hi] */
{
	return lo + rng() % (hi - lo + 1);
}

struct mhost {
	uint64_t in, out;  /* URLs pushed / taken (FIFO sequence numbers) */
	uint64_t last_end; /* end of the last real visit, NEVER if none */
	uint64_t required; /* last_end + policy delay (independent formula) */
	uint64_t next;     /* model of the library's next allowed time */
	uint32_t ip;
	uint8_t has_ip, held, retired;
};

/* The address host gets for model IP ip: 10.0.0.0 + ip for an even ip,
 * else 2001:db8:0:ip::host, one address per host in the IP's /64. */
static void model_addr(uint32_t ip, uint32_t host, struct ip_addr *a)
{
	uint8_t b[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, (uint8_t)(ip >> 8), (uint8_t)ip };
	if (ip % 2 == 0) {
		ip_addr_from_v4(a, 0x0a000000u + ip);
		return;
	}
	for (int k = 0; k < 4; k++)
		b[15 - k] = (uint8_t)(host >> (8 * k));
	ip_addr_set(a, IP_V6, b);
}

/* Sets host's address for model IP ip. */
static enum politeness_err model_set_ip(struct politeness *p, uint32_t host, uint32_t ip)
{
	struct ip_addr a;
	model_addr(ip, host, &a);
	return politeness_host_set_ip(p, host, &a);
}

struct mip {
	uint64_t required; /* previous visit end + IP delay */
	uint64_t next;     /* model of the group's next allowed time */
	uint8_t held;
};

/* Visits in flight, in a binary min-heap by end time. */
struct visit {
	uint64_t end, start;
	uint32_t host;
	enum visit_kind kind;
	uint64_t retry_after;
};

struct vheap {
	struct visit *a;
	size_t n;
};

static void vpush(struct vheap *h, struct visit v)
{
	size_t i = h->n++;
	while (i > 0 && h->a[(i - 1) / 2].end > v.end) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = v;
}

static struct visit vpop(struct vheap *h)
{
	struct visit top = h->a[0], last = h->a[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1].end < h->a[c].end)
			c++;
		if (h->a[c].end >= last.end)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n > 0)
		h->a[i] = last;
	return top;
}

struct sim {
	struct politeness_config cfg;
	struct frontier *f;
	struct politeness *p;
	struct mhost *h;
	struct mip *ip;
	uint32_t nh, nip;
	uint64_t dropped_cb;
	uint64_t visits, checks, full_checks, not_ready, retired, dropped_model;
};

static void on_drop(void *ctx, uint32_t host, const struct frontier_url *u)
{
	struct sim *s = ctx;
	char want[64];

	snprintf(want, sizeof want, "http://h%u.t/%llu", host, (unsigned long long)s->h[host].out);
	if (strcmp(u->url, want) != 0)
		FAIL("drop order: got %s want %s", u->url, want);
	s->h[host].out++;
	s->dropped_cb++;
}

/* Earliest time the model says host i may be handed out; NEVER if it may
 * not (held, retired, no URL, IP held). */
static uint64_t model_ready(const struct sim *s, uint32_t i)
{
	const struct mhost *m = &s->h[i];
	uint64_t t = m->next;

	if (m->held || m->retired || m->in == m->out)
		return NEVER;
	if (m->has_ip && s->cfg.ip_politeness) {
		const struct mip *ip = &s->ip[m->ip];
		if (ip->held)
			return NEVER;
		if (ip->next > t)
			t = ip->next;
	}
	return t;
}

static void check_idle(struct sim *s, uint64_t ready_at, int full)
{
	uint32_t n = full ? s->nh : 64;

	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = full ? k : (uint32_t)(rng() % s->nh);
		uint64_t t = model_ready(s, i);
		if (t < ready_at)
			FAIL("idle capacity: host %u ready at %llu but pop said %llu", i,
			     (unsigned long long)t, (unsigned long long)ready_at);
	}
	s->checks++;
	if (full)
		s->full_checks++;
}

static uint64_t host_delay(const struct politeness_config *c, uint64_t start, uint64_t end)
{
	if (c->policy == DELAY_POLICY_FIXED)
		return c->host_delay_us;
	{
		uint64_t w = (uint64_t)((double)(end - start) / c->ratio);
		if (w < c->min_delay_us)
			w = c->min_delay_us;
		if (w > c->max_delay_us)
			w = c->max_delay_us;
		return w;
	}
}

static void push_url(struct sim *s, uint32_t i)
{
	char url[64];
	int n = snprintf(url, sizeof url, "http://h%u.t/%llu", i, (unsigned long long)s->h[i].in);
	enum frontier_err e = frontier_push(s->f, i, url, (size_t)n, NULL, 0, 0);

	if (s->h[i].retired) {
		if (e != FRONTIER_ERR_RETIRED)
			FAIL("push to retired host accepted");
		s->dropped_model++;
		return;
	}
	if (e != FRONTIER_OK)
		FAIL("push: %s", frontier_strerror(e));
	s->h[i].in++;
}

static void run(const char *name, enum delay_policy_kind pol, int ip_pol, uint32_t nh, uint32_t nip,
                uint64_t urls, uint32_t slots, uint64_t budget)
{
	struct sim s;
	struct frontier_config fc;
	struct vheap vh = { NULL, 0 };
	uint64_t now = 0, next_arrival = 0, arrived = 0, delivered = 0, pops_total = 0;
	uint64_t mean_gap;
	clock_t t0 = clock();
	char key[64];

	memset(&s, 0, sizeof s);
	politeness_config_default(&s.cfg);
	s.cfg.policy = pol;
	s.cfg.ip_politeness = ip_pol;
	s.cfg.host_delay_us = 2 * S;
	s.cfg.ip_delay_us = S / 2;
	s.cfg.ratio = 0.2;
	s.cfg.visit_budget_us = S;
	s.cfg.min_delay_us = S / 4;
	s.cfg.max_delay_us = 20 * S;
	s.cfg.backoff_base_us = 5 * S;
	s.cfg.backoff_max_us = 120 * S;
	s.cfg.max_consecutive_errors = 3;
	s.nh = nh;
	s.nip = nip;
	s.h = calloc(nh, sizeof *s.h);
	s.ip = calloc(nip, sizeof *s.ip);
	vh.a = calloc(slots, sizeof *vh.a);
	if (s.h == NULL || s.ip == NULL || vh.a == NULL)
		FAIL("calloc");
	frontier_config_default(&fc);
	fc.mem_budget = budget;
	if (frontier_create(&fc, &s.f) != FRONTIER_OK)
		FAIL("frontier_create");
	if (politeness_create(s.f, &s.cfg, on_drop, &s, &s.p) != POLITENESS_OK)
		FAIL("politeness_create");
	for (uint32_t i = 0; i < nh; i++) {
		uint32_t id;
		int n = snprintf(key, sizeof key, "http://h%u.t", i);
		if (frontier_host_get(s.f, key, (size_t)n, 1, &id) != FRONTIER_OK || id != i)
			FAIL("host_get");
		s.h[i].ip = (uint32_t)(rng() % nip);
		s.h[i].last_end = NEVER;
		if (rng() % 10 != 0) {
			s.h[i].has_ip = 1;
			if (model_set_ip(s.p, i, s.h[i].ip) != POLITENESS_OK)
				FAIL("set_ip");
		}
	}
	/* Arrivals over roughly the time the IPs need to serve them. */
	mean_gap = (uint64_t)((double)(urls / nip + 1) * 1.5 * S / (double)urls);
	if (mean_gap < 2)
		mean_gap = 2;
	for (;;) {
		uint64_t ready_at = NEVER, next_t;
		/* 1. visits ending now */
		while (vh.n > 0 && vh.a[0].end <= now) {
			struct visit v = vpop(&vh);
			struct mhost *m = &s.h[v.host];
			struct visit_outcome o = { v.kind, v.start, 1, v.retry_after };
			enum politeness_err r;
			uint64_t pending = m->in - m->out;
			r = politeness_release(s.p, v.host, &o, now);
			m->held = 0;
			if (m->has_ip && ip_pol)
				s.ip[m->ip].held = 0;
			m->last_end = now;
			m->required = now + host_delay(&s.cfg, v.start, now);
			m->next = politeness_host_next(s.p, v.host);
			if (m->next < m->required)
				FAIL("library next %llu before required %llu",
				     (unsigned long long)m->next, (unsigned long long)m->required);
			if (m->has_ip && ip_pol) {
				struct mip *ip = &s.ip[m->ip];
				uint64_t iw = s.cfg.ip_delay_us;
				if (pol == DELAY_POLICY_RATIO &&
				    host_delay(&s.cfg, v.start, now) > iw)
					iw = host_delay(&s.cfg, v.start, now);
				if (ip->required < now + iw)
					ip->required = now + iw;
				ip->next = politeness_host_ip_next(s.p, v.host);
				if (ip->next < ip->required)
					FAIL("IP next before required");
			}
			if (r == POLITENESS_RETIRED) {
				m->retired = 1;
				s.retired++;
				s.dropped_model += pending;
				if (m->out != m->in)
					FAIL("retired host %u: %llu URLs not drained", v.host,
					     (unsigned long long)(m->in - m->out));
			} else if (r != POLITENESS_OK) {
				FAIL("release: %s", politeness_strerror(r));
			}
		}
		/* 2. URLs arriving now */
		while (arrived < urls && next_arrival <= now) {
			uint32_t i = rng() % 2 ? (uint32_t)(rng() % nh)
			                       : (uint32_t)(rng() % (nh / 100 + 1));
			push_url(&s, i);
			arrived++;
			next_arrival += rnd(1, 2 * mean_gap);
		}
		/* 3. start visits while slots and ready hosts last */
		while (vh.n < slots) {
			uint32_t hid;
			uint64_t t = NEVER;
			enum politeness_err r = politeness_pop_ready(s.p, now, &hid, &t);
			struct mhost *m;
			struct visit v;
			uint32_t max_urls, k;
			uint64_t max_us, dur;
			if (r == POLITENESS_NOT_READY || r == POLITENESS_EMPTY) {
				if (r == POLITENESS_NOT_READY && t <= now)
					FAIL("not ready until the past");
				ready_at = r == POLITENESS_NOT_READY ? t : NEVER;
				s.not_ready++;
				check_idle(&s, ready_at, s.not_ready % 4000 == 0);
				break;
			}
			if (r != POLITENESS_OK)
				FAIL("pop: %s", politeness_strerror(r));
			pops_total++;
			m = &s.h[hid];
			if (model_ready(&s, hid) > now)
				FAIL("host %u handed out before it is ready (%llu > %llu)", hid,
				     (unsigned long long)model_ready(&s, hid),
				     (unsigned long long)now);
			if (!m->has_ip) {
				/* DNS: resolve, set the IP, give the host back without a request */
				struct visit_outcome none = { VISIT_NONE, now, 0, 0 };
				m->has_ip = 1;
				if (model_set_ip(s.p, hid, m->ip) != POLITENESS_OK)
					FAIL("set_ip");
				if (politeness_release(s.p, hid, &none, now) != POLITENESS_OK)
					FAIL("release none");
				m->next = politeness_host_next(s.p, hid);
				continue;
			}
			/* politeness checks, independent of the library's arithmetic */
			if (m->held)
				FAIL("host %u visited twice at once", hid);
			if (m->last_end != NEVER && now < m->required)
				FAIL("host %u: start %llu < required %llu", hid,
				     (unsigned long long)now, (unsigned long long)m->required);
			if (ip_pol) {
				struct mip *ip = &s.ip[m->ip];
				if (ip->held)
					FAIL("IP %u visited twice at once", m->ip);
				if (now < ip->required)
					FAIL("IP %u: start %llu < required %llu", m->ip,
					     (unsigned long long)now,
					     (unsigned long long)ip->required);
				ip->held = 1;
			}
			m->held = 1;
			/* the visit: k URLs within the budget */
			politeness_visit_budget(s.p, hid, &max_urls, &max_us);
			dur = 0;
			for (k = 0; k < max_urls && dur < max_us; k++) {
				struct frontier_url u;
				char want[64];
				enum frontier_err e = frontier_pop(s.f, hid, &u);
				if (e == FRONTIER_ERR_EMPTY)
					break;
				if (e != FRONTIER_OK)
					FAIL("frontier_pop: %s", frontier_strerror(e));
				snprintf(want, sizeof want, "http://h%u.t/%llu", hid,
				         (unsigned long long)m->out);
				if (strcmp(u.url, want) != 0)
					FAIL("FIFO: got %s want %s", u.url, want);
				m->out++;
				delivered++;
				dur += pol == DELAY_POLICY_FIXED ? rnd(1000, S)
				                                 : rnd(10000, 300000);
			}
			if (k == 0)
				FAIL("host %u handed out with an empty queue", hid);
			v.start = now;
			v.end = now + dur;
			v.host = hid;
			v.retry_after = 0;
			{
				uint64_t x = rng() % 100;
				v.kind = x < 95   ? VISIT_OK
				         : x < 98 ? VISIT_ERROR
				                  : VISIT_RETRY_LATER;
				if (v.kind == VISIT_RETRY_LATER)
					v.retry_after = v.end + rnd(0, 30 * S);
			}
			s.visits++;
			vpush(&vh, v);
		}
		/* 4. advance the virtual clock */
		next_t = NEVER;
		if (vh.n > 0)
			next_t = vh.a[0].end;
		if (arrived < urls && next_arrival < next_t)
			next_t = next_arrival;
		if (vh.n < slots && ready_at < next_t)
			next_t = ready_at;
		if (next_t == NEVER)
			break;
		if (next_t < now)
			FAIL("clock going back");
		now = next_t;
	}
	/* everything delivered or dropped, nothing left anywhere */
	{
		struct frontier_stats fs;
		struct politeness_stats ps;
		frontier_stats(s.f, &fs);
		politeness_stats(s.p, &ps);
		if (fs.urls_queued != 0)
			FAIL("%llu URLs left queued", (unsigned long long)fs.urls_queued);
		if (delivered + s.dropped_model != arrived)
			FAIL("delivered %llu + dropped %llu != arrived %llu",
			     (unsigned long long)delivered, (unsigned long long)s.dropped_model,
			     (unsigned long long)arrived);
		if (fs.dropped_retired != s.dropped_model || ps.hosts_retired != s.retired)
			FAIL("retirement accounting: frontier %llu model %llu",
			     (unsigned long long)fs.dropped_retired,
			     (unsigned long long)s.dropped_model);
		if (ps.hosts_held != 0 || ps.hosts_in_heap != 0)
			FAIL("hosts left held or in heap");
		check_idle(&s, NEVER, 1);
	}
	{
		struct frontier_stats fs;
		frontier_stats(s.f, &fs);
		if (budget < (64ull << 20) && fs.flushes == 0)
			FAIL("small budget but nothing spilled");
		printf("%s: frontier budget %llu KiB, %llu flushes, %llu refills\n", name,
		       (unsigned long long)(budget >> 10), (unsigned long long)fs.flushes,
		       (unsigned long long)fs.refills);
	}
	printf("%s: %u hosts, %u IPs, %llu URLs, %llu visits, %llu pops, %llu retired "
	       "(%llu URLs dropped), %llu idle checks (%llu full), virtual %.0f s, %.1f s CPU\n",
	       name, nh, nip, (unsigned long long)arrived, (unsigned long long)s.visits,
	       (unsigned long long)pops_total, (unsigned long long)s.retired,
	       (unsigned long long)s.dropped_model, (unsigned long long)s.checks,
	       (unsigned long long)s.full_checks, (double)now / S,
	       (double)(clock() - t0) / CLOCKS_PER_SEC);
	politeness_destroy(s.p);
	frontier_destroy(s.f);
	free(s.h);
	free(s.ip);
	free(vh.a);
}

int main(void)
{
	const char *e = getenv("CRAWLER_TEST_SCALE");
	double sc = SANITIZED ? 0.2 : 1.0;
	uint32_t nh, nip;
	uint64_t urls;

	if (e != NULL) {
		char *end;
		double v = strtod(e, &end);
		if (end != e && v > 0 && v <= 10)
			sc = v;
	}
	nh = (uint32_t)(100000 * sc);
	nip = (uint32_t)(2000 * sc);
	urls = (uint64_t)(1000000 * sc);
	if (nh < 200)
		nh = 200;
	if (nip < 4)
		nip = 4;
	/* the ratio run uses a small frontier budget so URLs also go through disk */
	run("fixed", DELAY_POLICY_FIXED, 1, nh, nip, urls, 1000, 512ull << 20);
	run("ratio", DELAY_POLICY_RATIO, 1, nh, nip, urls, 1000, 4ull << 20);
	run("fixed-no-ip", DELAY_POLICY_FIXED, 0, nh / 10, nip, urls / 10, 200, 512ull << 20);
	return 0;
}
