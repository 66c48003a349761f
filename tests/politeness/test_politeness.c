/*
 * Check suite for politeness/politeness.h: tokens (a host and an IP are
 * handed out once until released), "not ready until T", parking and waking,
 * backoff and retirement accounting through release, the DNS protocol
 * (set_ip on a held host), IP politeness turned off, an IP group resting
 * while another agent holds its lease, and the adaptive policy's per-host
 * estimate.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "politeness/politeness.h"

#define S 1000000ull

struct fx {
	struct frontier *f;
	struct politeness *p;
	uint64_t dropped;
};

static void on_drop(void *ctx, uint32_t host, const struct frontier_url *u)
{
	struct fx *x = ctx;

	(void)host;
	ck_assert_ptr_nonnull(u->url);
	x->dropped++;
}

static void setup_policy(struct fx *x, int ip_pol, enum delay_policy_kind policy)
{
	struct frontier_config fc;
	struct politeness_config pc;

	memset(x, 0, sizeof *x);
	frontier_config_default(&fc);
	fc.mem_budget = 4 << 20;
	ck_assert_int_eq(frontier_create(&fc, &x->f), FRONTIER_OK);
	politeness_config_default(&pc);
	pc.host_delay_us = 2 * S;
	pc.ip_delay_us = 1 * S;
	pc.ip_politeness = ip_pol;
	pc.backoff_base_us = 10 * S;
	pc.backoff_max_us = 100 * S;
	pc.max_consecutive_errors = 3;
	pc.policy = policy;
	ck_assert_int_eq(politeness_create(x->f, &pc, on_drop, x, &x->p), POLITENESS_OK);
}

static enum politeness_err set_ip4(struct politeness *p, uint32_t host, uint32_t v4)
{
	struct ip_addr a;
	ip_addr_from_v4(&a, v4);
	return politeness_host_set_ip(p, host, &a);
}

static void setup(struct fx *x, int ip_pol)
{
	setup_policy(x, ip_pol, DELAY_POLICY_FIXED);
}

static void teardown(struct fx *x)
{
	politeness_destroy(x->p);
	frontier_destroy(x->f);
}

static uint32_t add_host(struct fx *x, const char *key, int urls)
{
	uint32_t h;

	ck_assert_int_eq(frontier_host_get(x->f, key, strlen(key), 1, &h), FRONTIER_OK);
	for (int i = 0; i < urls; i++) {
		char u[128];
		int n = snprintf(u, sizeof u, "%s/%d", key, i);
		ck_assert_int_eq(frontier_push(x->f, h, u, (size_t)n, NULL, 0, 0), FRONTIER_OK);
	}
	return h;
}

/* Hosts a.test and b.test, one URL each, both on IPv4 address v4. */
static void two_hosts_one_ip(struct fx *x, uint32_t *a, uint32_t *b, uint32_t v4)
{
	*a = add_host(x, "http://a.test", 1);
	*b = add_host(x, "http://b.test", 1);
	ck_assert_int_eq(set_ip4(x->p, *a, v4), POLITENESS_OK);
	ck_assert_int_eq(set_ip4(x->p, *b, v4), POLITENESS_OK);
}

static struct visit_outcome ok_at(uint64_t start)
{
	struct visit_outcome o = { VISIT_OK, start, 1, 0 };
	return o;
}

/* The memory account moves with what it counts: the per-host array by
 * the header's 96 bytes a host, the heaps by 32 bytes an entry (a slot in
 * the waiting heap and one in the ready heap), the IP groups by their 88
 * bytes (and the index). */
START_TEST(memory_account)
{
	struct fx x;
	struct politeness_stats st0, st;
	enum { N = 16384, IPS = 256 };
	char key[64];

	setup(&x, 1);
	politeness_stats(x.p, &st0);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof key, "http://h%d.test", i);
		add_host(&x, key, 1);
	}
	politeness_stats(x.p, &st);
	ck_assert_uint_eq(st.mem_hosts,
	                  (uint64_t)N * 96); /* the array doubles: N is a power of 2 */
	ck_assert_uint_ge(st.mem_heaps - st0.mem_heaps, (uint64_t)N * 32);
	ck_assert_uint_le(st.mem_heaps - st0.mem_heaps, (uint64_t)2 * N * 32);
	ck_assert_uint_eq(st.mem_ip_groups, st0.mem_ip_groups);
	for (uint32_t h = 0; h < N; h++)
		ck_assert_int_eq(set_ip4(x.p, h, 0x7f000001u + h % IPS), POLITENESS_OK);
	politeness_stats(x.p, &st);
	ck_assert_uint_eq(st.ip_groups, IPS);
	/* 88 bytes a group, 4 an index slot (2 to 4 a group) */
	ck_assert_uint_ge(st.mem_ip_groups, (uint64_t)IPS * (88 + 8));
	ck_assert_uint_le(st.mem_ip_groups, (uint64_t)IPS * (88 + 16));
	teardown(&x);
}
END_TEST

/* A host with one URL of rule priority prio. */
static uint32_t add_tier_host(struct fx *x, const char *key, int prio)
{
	uint32_t h;
	char u[128];
	int n = snprintf(u, sizeof u, "%s/p%d", key, prio);

	ck_assert_int_eq(frontier_host_get(x->f, key, strlen(key), 1, &h), FRONTIER_OK);
	ck_assert_int_eq(frontier_push(x->f, h, u, (size_t)n, NULL, 0,
	                               frontier_depth_with_priority(0, prio)),
	                 FRONTIER_OK);
	return h;
}

/* Among the hosts ready at once, solo or sharing an IP, the one whose next
 * URL has the highest tier goes first, equal tiers in the order they
 * became ready; a host whose time has not come waits whatever its tier;
 * a tier that rises while a host is ready counts. */
START_TEST(precedence)
{
	struct fx x;
	uint32_t h, lo, mid, hi, g1, g2, late;
	uint64_t t = 0;
	struct visit_outcome o;
	struct frontier_url u;

	setup(&x, 1);
	lo = add_tier_host(&x, "http://lo.test", -1);
	mid = add_tier_host(&x, "http://mid.test", 0);
	hi = add_tier_host(&x, "http://hi.test", 2);
	g1 = add_tier_host(&x, "http://g1.test", 1);
	g2 = add_tier_host(&x, "http://g2.test", 3);
	ck_assert_int_eq(set_ip4(x.p, g1, 0x7f000009), POLITENESS_OK);
	ck_assert_int_eq(set_ip4(x.p, g2, 0x7f000009), POLITENESS_OK);
	/* g2 (3) through its IP, hi (2), then mid (0), lo (-1); g1 waits for
	 * the IP g2 holds */
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, g2);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, hi);
	/* lo's tier rises while it is ready: it now passes mid; later lo,
	 * its time not come, does not pass mid with a tier 3 URL */
	ck_assert_int_eq(frontier_push(x.f, lo, "http://lo.test/x", 16, NULL, 0,
	                               frontier_depth_with_priority(0, 1)),
	                 FRONTIER_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, lo);
	ck_assert_int_eq(frontier_pop(x.f, lo, &u), FRONTIER_OK);
	ck_assert_str_eq(u.url, "http://lo.test/x");
	o = ok_at(0);
	ck_assert_int_eq(politeness_release(x.p, lo, &o, 1 * S), POLITENESS_OK);
	late = lo; /* lo, next allowed at 3 s, still has its tier -1 URL */
	ck_assert_int_eq(frontier_push(x.f, late, "http://lo.test/y", 16, NULL, 0,
	                               frontier_depth_with_priority(0, 3)),
	                 FRONTIER_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 2 * S, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, mid);
	ck_assert_int_eq(politeness_pop_ready(x.p, 2 * S, &h, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 3 * S);
	ck_assert_int_eq(politeness_pop_ready(x.p, 3 * S, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, late);
	/* g2 gives the IP back: g1 follows after the IP delay, not before */
	ck_assert_int_eq(frontier_pop(x.f, g2, &u), FRONTIER_OK);
	ck_assert_int_eq(politeness_release(x.p, g2, &o, 3 * S), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 3 * S, &h, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 4 * S);
	ck_assert_int_eq(politeness_pop_ready(x.p, 4 * S, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, g1);
	teardown(&x);
}
END_TEST

/* Hosts sharing an IP, all ready while the IP rests: when it frees, the
 * best tier goes, then the next, each after the IP's delay. */
START_TEST(precedence_in_group)
{
	struct fx x;
	uint32_t hs[4], h;
	uint64_t t = 0, now = 0;
	struct visit_outcome o;
	struct frontier_url u;
	static const int prio[4] = { -2, 1, 3, 0 };
	static const int want[4] = { 2, 1, 3, 0 };

	setup(&x, 1);
	for (int i = 0; i < 4; i++) {
		char k[32];
		snprintf(k, sizeof k, "http://g%d.test", i);
		hs[i] = add_tier_host(&x, k, prio[i]);
		ck_assert_int_eq(set_ip4(x.p, hs[i], 0x7f000005), POLITENESS_OK);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(politeness_pop_ready(x.p, now, &h, &t), POLITENESS_OK);
		ck_assert_uint_eq(h, hs[want[i]]);
		ck_assert_int_eq(frontier_pop(x.f, h, &u), FRONTIER_OK);
		o = ok_at(now);
		ck_assert_int_eq(politeness_release(x.p, h, &o, now), POLITENESS_OK);
		if (i < 3) {
			ck_assert_int_eq(politeness_pop_ready(x.p, now, &h, &t),
			                 POLITENESS_NOT_READY);
			ck_assert_uint_eq(t, now + 1 * S);
		}
		now += 1 * S;
	}
	ck_assert_int_eq(politeness_pop_ready(x.p, now, &h, &t), POLITENESS_EMPTY);
	teardown(&x);
}
END_TEST

START_TEST(host_tokens)
{
	struct fx x;
	uint32_t a, b, h, h2;
	uint64_t t = 0;
	struct visit_outcome o;
	struct frontier_url u;

	setup(&x, 1);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_EMPTY);
	a = add_host(&x, "http://a.test", 3);
	b = add_host(&x, "http://b.test", 1);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h2, &t), POLITENESS_OK);
	ck_assert_uint_ne(h, h2);
	ck_assert(politeness_host_held(x.p, a) && politeness_host_held(x.p, b));
	/* both held: nothing else to hand out */
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_EMPTY);
	ck_assert_int_eq(frontier_pop(x.f, a, &u), FRONTIER_OK);
	ck_assert_int_eq(frontier_pop(x.f, b, &u), FRONTIER_OK);
	o = ok_at(5 * S);
	ck_assert_int_eq(politeness_release(x.p, a, &o, 6 * S), POLITENESS_OK);
	ck_assert_int_eq(politeness_release(x.p, b, &o, 6 * S), POLITENESS_OK);
	ck_assert_int_eq(politeness_release(x.p, b, &o, 6 * S), POLITENESS_ERR_STATE);
	/* a waits host_delay from the end of its visit; b has no URL: parked */
	ck_assert_int_eq(politeness_pop_ready(x.p, 6 * S, &h, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 8 * S);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 8 * S);
	ck_assert_int_eq(politeness_pop_ready(x.p, 8 * S - 1, &h, &t), POLITENESS_NOT_READY);
	ck_assert_int_eq(politeness_pop_ready(x.p, 8 * S, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, a);
	{
		struct politeness_stats st;
		politeness_stats(x.p, &st);
		ck_assert_uint_eq(st.hosts_held, 1);
		ck_assert_uint_eq(st.hosts_parked, 1);
		ck_assert_uint_eq(st.hosts_in_heap, 0);
	}
	/* a URL for parked b wakes it */
	ck_assert_int_eq(frontier_push(x.f, b, "http://b.test/x", 15, NULL, 0, 0), FRONTIER_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 7 * S, &h, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 8 * S);
	ck_assert_int_eq(politeness_pop_ready(x.p, 8 * S, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, b);
	teardown(&x);
}
END_TEST

START_TEST(ip_tokens)
{
	struct fx x;
	uint32_t a, b, c, h, h2;
	uint64_t t = 0;
	struct visit_outcome o;
	struct frontier_url u;

	setup(&x, 1);
	a = add_host(&x, "http://a.test", 2);
	b = add_host(&x, "http://b.test", 2);
	c = add_host(&x, "http://c.test", 2);
	ck_assert_int_eq(set_ip4(x.p, a, 0x7f000001), POLITENESS_OK);
	ck_assert_int_eq(set_ip4(x.p, b, 0x7f000001), POLITENESS_OK);
	ck_assert_int_eq(set_ip4(x.p, c, 0x7f000002), POLITENESS_OK);
	{
		struct ip_addr ip, want;
		ip_addr_from_v4(&want, 0x7f000001);
		ck_assert(politeness_host_ip(x.p, b, &ip));
		ck_assert(ip_addr_equal(&ip, &want));
	}
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h2, &t), POLITENESS_OK);
	/* one of a/b and c; the other of a/b shares the held IP */
	ck_assert((h == c) != (h2 == c));
	{
		uint32_t h3;
		ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h3, &t), POLITENESS_EMPTY);
	}
	if (h == c) {
		uint32_t tmp = h;
		h = h2;
		h2 = tmp;
	}
	/* h is on 127.0.0.1 */
	ck_assert_int_eq(frontier_pop(x.f, h, &u), FRONTIER_OK);
	o = ok_at(0);
	ck_assert_int_eq(politeness_release(x.p, h, &o, 10 * S), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_ip_next(x.p, h), 11 * S);
	/* the other host on that IP is ready itself but waits for the IP */
	ck_assert_int_eq(politeness_pop_ready(x.p, 10 * S, &h2, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 11 * S);
	ck_assert_int_eq(politeness_pop_ready(x.p, 11 * S, &h2, &t), POLITENESS_OK);
	ck_assert(h2 == a || h2 == b);
	ck_assert_uint_ne(h2, h);
	teardown(&x);
}
END_TEST

/* Another agent holds the IP's lease: the held host's group rests until
 * the time given, even after a visit that made no request, and every host
 * of the group waits for it; a host not held is left alone. */
START_TEST(ip_busy)
{
	struct fx x;
	uint32_t a, b, h, h2;
	uint64_t t = 0;
	struct visit_outcome none = { VISIT_NONE, 0, 0, 0 };

	setup(&x, 1);
	two_hosts_one_ip(&x, &a, &b, 0x7f000001);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	politeness_ip_busy(x.p, h == a ? b : a, 50 * S); /* not held: nothing */
	politeness_ip_busy(x.p, h, 3 * S);
	politeness_ip_busy(x.p, h, 2 * S); /* never shortened */
	ck_assert_int_eq(politeness_release(x.p, h, &none, 1 * S), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_ip_next(x.p, h), 3 * S);
	ck_assert_int_eq(politeness_pop_ready(x.p, 1 * S, &h2, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 3 * S);
	ck_assert_int_eq(politeness_pop_ready(x.p, 3 * S, &h2, &t), POLITENESS_OK);
	teardown(&x);
}
END_TEST

/* IPv6 addresses share a token per /64: two addresses of one /64 are one
 * IP for politeness, another /64 is another IP; an IPv4 address whose bytes
 * start like the /64 is yet another. A held host may move to another
 * address (the crawl's family fallback): the token it holds is the one
 * released. */
static enum politeness_err set_ip_text(struct politeness *p, uint32_t host, const char *ip)
{
	struct ip_addr a;
	ck_assert_int_eq(ip_addr_parse(ip, strlen(ip), &a), 0);
	return politeness_host_set_ip(p, host, &a);
}

START_TEST(ipv6_groups_per_64)
{
	struct fx x;
	uint32_t a, b, c, d, h[4];
	uint64_t t = 0;
	struct frontier_url u;
	struct politeness_stats st;

	setup(&x, 1);
	a = add_host(&x, "http://a.test", 2);
	b = add_host(&x, "http://b.test", 2);
	c = add_host(&x, "http://c.test", 2);
	d = add_host(&x, "http://d.test", 2);
	ck_assert_int_eq(set_ip_text(x.p, a, "2001:db8:0:1::a"), POLITENESS_OK);
	ck_assert_int_eq(set_ip_text(x.p, b, "2001:db8:0:1:ffff::b"), POLITENESS_OK);
	ck_assert_int_eq(set_ip_text(x.p, c, "2001:db8:0:2::a"), POLITENESS_OK);
	ck_assert_int_eq(set_ip_text(x.p, d, "32.1.13.184"), POLITENESS_OK); /* 2001:db8 */
	politeness_stats(x.p, &st);
	ck_assert_uint_eq(st.ip_groups, 3);
	{
		struct ip_addr ip;
		char text[IP_ADDR_STRLEN];
		ck_assert(politeness_host_ip(x.p, b, &ip));
		ck_assert_str_eq(ip_addr_format(&ip, text, sizeof text), "2001:db8:0:1:ffff::b");
	}
	/* Three tokens: one of a/b, c and d; the other of a/b waits. */
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h[i], &t), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h[3], &t), POLITENESS_EMPTY);
	ck_assert((h[0] == a || h[1] == a || h[2] == a) != (h[0] == b || h[1] == b || h[2] == b));
	/* c, held, moves to the /64 of a and b: its release frees its old
	 * token, and its next visit waits for the new group's. */
	ck_assert_int_eq(set_ip_text(x.p, c, "2001:db8:0:1::c"), POLITENESS_OK);
	for (int i = 0; i < 3; i++) {
		struct visit_outcome o = ok_at(0);
		ck_assert_int_eq(frontier_pop(x.f, h[i], &u), FRONTIER_OK);
		ck_assert_int_eq(politeness_release(x.p, h[i], &o, 10 * S), POLITENESS_OK);
	}
	/* At 11 s (ip delay 1 s): d, and one of the /64's three hosts. */
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(politeness_pop_ready(x.p, 12 * S, &h[i], &t), POLITENESS_OK);
	ck_assert_int_ne(politeness_pop_ready(x.p, 12 * S, &h[2], &t), POLITENESS_OK);
	ck_assert(h[0] == d || h[1] == d);
	teardown(&x);
}
END_TEST

START_TEST(ip_off)
{
	struct fx x;
	uint32_t a, b, h, h2;
	uint64_t t = 0;

	setup(&x, 0);
	two_hosts_one_ip(&x, &a, &b, 1);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h2, &t), POLITENESS_OK);
	ck_assert_uint_ne(h, h2);
	teardown(&x);
}
END_TEST

/* Pop a host with unknown IP, resolve, set_ip, release VISIT_NONE: it comes
 * back at once, now under its IP's token. */
START_TEST(dns_protocol)
{
	struct fx x;
	uint32_t a, b, h;
	uint64_t t = 0;
	struct visit_outcome none = { VISIT_NONE, 0, 0, 0 };
	struct visit_outcome o;
	struct frontier_url u;

	setup(&x, 1);
	a = add_host(&x, "http://a.test", 2);
	b = add_host(&x, "http://b.test", 2);
	ck_assert_int_eq(set_ip4(x.p, b, 42), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	if (h == b) { /* visit b for real first */
		ck_assert_int_eq(frontier_pop(x.f, b, &u), FRONTIER_OK);
		o = ok_at(0);
		ck_assert_int_eq(politeness_release(x.p, b, &o, 1 * S), POLITENESS_OK);
		ck_assert_int_eq(politeness_pop_ready(x.p, 1 * S, &h, &t), POLITENESS_OK);
	}
	ck_assert_uint_eq(h, a);
	ck_assert(!politeness_host_ip(x.p, a, NULL));
	ck_assert_int_eq(set_ip4(x.p, a, 42), POLITENESS_OK);
	ck_assert_int_eq(politeness_release(x.p, a, &none, 1 * S), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 1 * S);
	/* now a and b share IP 42: only one at a time */
	ck_assert_int_eq(politeness_pop_ready(x.p, 100 * S, &h, &t), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 100 * S, &h, &t), POLITENESS_EMPTY);
	teardown(&x);
}
END_TEST

START_TEST(backoff_and_retire)
{
	struct fx x;
	uint32_t a, h;
	uint64_t t = 0, now = 0;
	struct visit_outcome err = { VISIT_ERROR, 0, 1, 0 };
	struct politeness_stats st;
	struct frontier_stats fs;

	setup(&x, 1);
	a = add_host(&x, "http://a.test", 10);
	ck_assert_int_eq(politeness_pop_ready(x.p, now, &h, &t), POLITENESS_OK);
	err.start_us = now;
	now += S;
	ck_assert_int_eq(politeness_release(x.p, a, &err, now), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_errors(x.p, a), 1);
	ck_assert_uint_eq(politeness_host_next(x.p, a), now + 10 * S);
	now += 10 * S;
	ck_assert_int_eq(politeness_pop_ready(x.p, now, &h, &t), POLITENESS_OK);
	now += S;
	ck_assert_int_eq(politeness_release(x.p, a, &err, now), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(x.p, a), now + 20 * S);
	/* a success resets the count */
	now += 20 * S;
	ck_assert_int_eq(politeness_pop_ready(x.p, now, &h, &t), POLITENESS_OK);
	{
		struct visit_outcome o = ok_at(now);
		now += S;
		ck_assert_int_eq(politeness_release(x.p, a, &o, now), POLITENESS_OK);
	}
	ck_assert_uint_eq(politeness_host_errors(x.p, a), 0);
	for (int i = 0; i < 3; i++) {
		enum politeness_err want = i < 2 ? POLITENESS_OK : POLITENESS_RETIRED;
		ck_assert_int_eq(politeness_pop_ready(x.p, now + 1000 * S, &h, &t), POLITENESS_OK);
		now += 1000 * S;
		ck_assert_int_eq(politeness_release(x.p, a, &err, now), want);
	}
	ck_assert_uint_eq(x.dropped, 10);
	politeness_stats(x.p, &st);
	ck_assert_uint_eq(st.hosts_retired, 1);
	ck_assert_uint_eq(st.dropped_urls, 10);
	ck_assert_uint_eq(st.errors, 5);
	frontier_stats(x.f, &fs);
	ck_assert_uint_eq(fs.dropped_retired, 10);
	ck_assert_uint_eq(fs.urls_queued, 0);
	ck_assert(frontier_host_is_retired(x.f, a));
	/* a retired host never comes back */
	ck_assert_int_eq(frontier_push(x.f, a, "http://a.test/z", 15, NULL, 0, 0),
	                 FRONTIER_ERR_RETIRED);
	ck_assert_int_eq(politeness_pop_ready(x.p, UINT64_MAX, &h, &t), POLITENESS_EMPTY);
	teardown(&x);
}
END_TEST

START_TEST(crawl_delay_and_retry_after)
{
	struct fx x;
	uint32_t a, h;
	uint64_t t = 0;
	struct visit_outcome o = { VISIT_RETRY_LATER, 0, 1, 500 * S };
	uint32_t mu = 0;
	uint64_t mt = 0;

	setup(&x, 1);
	a = add_host(&x, "http://a.test", 5);
	ck_assert_int_eq(politeness_host_set_crawl_delay(x.p, a, 7 * S), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	politeness_visit_budget(x.p, a, &mu, &mt);
	ck_assert_uint_eq(mu, 1);
	ck_assert_uint_eq(mt, UINT64_MAX);
	ck_assert_int_eq(politeness_release(x.p, a, &o, 10 * S), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 500 * S);
	ck_assert_uint_eq(politeness_host_errors(x.p, a), 0);
	ck_assert_int_eq(politeness_pop_ready(x.p, 500 * S, &h, &t), POLITENESS_OK);
	o = ok_at(500 * S);
	ck_assert_int_eq(politeness_release(x.p, a, &o, 501 * S), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 508 * S);
	teardown(&x);
}
END_TEST

/* Visits want at now (another ready host first, other, ends at once), ending at end. */
static void pop_visit(struct fx *x, uint32_t want, uint32_t other, uint64_t now, uint64_t end)
{
	uint32_t h;
	uint64_t t = 0;
	struct visit_outcome o = ok_at(now);
	ck_assert_int_eq(politeness_pop_ready(x->p, now, &h, &t), POLITENESS_OK);
	if (h == other) {
		ck_assert_int_eq(politeness_release(x->p, other, &o, now), POLITENESS_OK);
		ck_assert_int_eq(politeness_pop_ready(x->p, now, &h, &t), POLITENESS_OK);
	}
	ck_assert_uint_eq(h, want);
	ck_assert_int_eq(politeness_release(x->p, want, &o, end), POLITENESS_OK);
}

/* A steered delay replaces the policy's wait for its host only (ratio
 * policy here: one URL a visit instead of its budget), Crawl-delay still
 * lengthens it, 0 gives the host back to the policy, and many steered
 * hosts keep each their own. */
START_TEST(steered_delay)
{
	struct fx x;
	uint32_t a, b, h, hosts[40];
	uint64_t t = 0, mt = 0;
	uint32_t mu = 0;
	struct visit_outcome o;

	setup_policy(&x, 0, DELAY_POLICY_RATIO);
	a = add_host(&x, "http://a.test", 5);
	b = add_host(&x, "http://b.test", 5);
	ck_assert_int_eq(politeness_host_set_delay(x.p, a, 30000), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_delay(x.p, a), 30000);
	ck_assert_uint_eq(politeness_host_delay(x.p, b), 0);
	politeness_visit_budget(x.p, a, &mu, &mt);
	ck_assert_uint_eq(mu, 1);
	ck_assert_uint_eq(mt, UINT64_MAX);
	politeness_visit_budget(x.p, b, &mu, &mt);
	ck_assert_uint_gt(mu, 1);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
		o = ok_at(0);
		ck_assert_int_eq(politeness_release(x.p, h, &o, 1 * S), POLITENESS_OK);
	}
	ck_assert_uint_eq(politeness_host_next(x.p, a), 31 * S);
	ck_assert_uint_lt(politeness_host_next(x.p, b), 31 * S);
	/* a shorter Crawl-delay does not shorten it; a longer one lengthens it */
	ck_assert_int_eq(politeness_host_set_crawl_delay(x.p, a, 20 * S), POLITENESS_OK);
	pop_visit(&x, a, b, 31 * S, 32 * S);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 62 * S);
	ck_assert_int_eq(politeness_host_set_delay(x.p, a, 5000), POLITENESS_OK);
	pop_visit(&x, a, b, 62 * S, 63 * S);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 83 * S);
	ck_assert_int_eq(politeness_host_set_delay(x.p, a, 0), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_delay(x.p, a), 0);
	politeness_visit_budget(x.p, a, &mu, &mt);
	ck_assert_uint_gt(mu, 1);
	for (int i = 0; i < 40; i++) {
		char key[32];
		snprintf(key, sizeof key, "http://h%d.test", 39 - i);
		hosts[i] = add_host(&x, key, 1);
		ck_assert_int_eq(politeness_host_set_delay(x.p, hosts[i], 100u + (uint32_t)i),
		                 POLITENESS_OK);
	}
	for (int i = 0; i < 40; i++)
		ck_assert_uint_eq(politeness_host_delay(x.p, hosts[i]), 100u + (uint32_t)i);
	ck_assert_uint_eq(politeness_host_delay(x.p, a), 0);
	ck_assert_int_eq(politeness_host_set_delay(x.p, 1000000, 5), POLITENESS_ERR_INVALID);
	teardown(&x);
}
END_TEST

/* Saved host states carry over to a new politeness (a resumed crawl): each
 * host and IP waits at least one delay from the restore, or its saved wait
 * when longer; errors, crawl-delay and IP come back. */
START_TEST(save_and_restore)
{
	struct fx x, y;
	uint32_t a, b, c, h;
	uint64_t t = 0;
	struct politeness_host_saved sa, sb, sc;
	struct visit_outcome err = { VISIT_ERROR, 9 * S, 1, 0 };
	struct frontier_url u;

	setup(&x, 1);
	a = add_host(&x, "http://a.test", 3);
	b = add_host(&x, "http://b.test", 3);
	c = add_host(&x, "http://c.test", 3);
	ck_assert_int_eq(set_ip4(x.p, a, 1), POLITENESS_OK);
	ck_assert_int_eq(set_ip4(x.p, b, 1), POLITENESS_OK);
	ck_assert_int_eq(set_ip4(x.p, c, 2), POLITENESS_OK);
	ck_assert_int_eq(politeness_host_set_crawl_delay(x.p, b, 5 * S), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(x.p, 9 * S, &h, &t), POLITENESS_OK);
	ck_assert_int_eq(frontier_pop(x.f, h, &u), FRONTIER_OK);
	ck_assert_int_eq(politeness_release(x.p, h, &err, 10 * S), POLITENESS_OK);
	ck_assert_uint_eq(h, a); /* first of the group; backoff: next = 10 + 10 */
	ck_assert_uint_eq(politeness_host_next(x.p, a), 20 * S);
	politeness_host_save(x.p, a, 11 * S, &sa);
	politeness_host_save(x.p, b, 11 * S, &sb);
	politeness_host_save(x.p, c, 11 * S, &sc);
	ck_assert_uint_eq(sa.wait_us, 9 * S);
	ck_assert_uint_eq(sa.errors, 1);
	ck_assert_uint_eq(sb.crawl_delay_us, 5 * S);
	ck_assert(sa.has_ip && sa.addr.family == IP_V4 && sa.addr.b[3] == 1 && sc.addr.b[3] == 2);

	setup(&y, 1);
	ck_assert_uint_eq(add_host(&y, "http://a.test", 2), a);
	ck_assert_uint_eq(add_host(&y, "http://b.test", 3), b);
	ck_assert_uint_eq(add_host(&y, "http://c.test", 3), c);
	ck_assert_int_eq(politeness_host_restore(y.p, a, &sa, 100 * S), POLITENESS_OK);
	ck_assert_int_eq(politeness_host_restore(y.p, b, &sb, 100 * S), POLITENESS_OK);
	ck_assert_int_eq(politeness_host_restore(y.p, c, &sc, 100 * S), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(y.p, a), 109 * S); /* saved wait > delay */
	ck_assert_uint_eq(politeness_host_next(y.p, b), 105 * S); /* crawl-delay > delay */
	ck_assert_uint_eq(politeness_host_next(y.p, c), 102 * S); /* host delay from now */
	ck_assert_uint_eq(politeness_host_ip_next(y.p, a), 101 * S);
	ck_assert_uint_eq(politeness_host_errors(y.p, a), 1);
	{
		struct ip_addr ip;
		ck_assert_int_eq(politeness_host_ip(y.p, b, &ip), 1);
		ck_assert(ip.family == IP_V4 && ip.b[0] == 0 && ip.b[3] == 1);
	}
	/* nothing before the first allowed time, then in time order */
	ck_assert_int_eq(politeness_pop_ready(y.p, 101 * S, &h, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 102 * S);
	ck_assert_int_eq(politeness_pop_ready(y.p, 102 * S, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, c);
	ck_assert_int_eq(politeness_pop_ready(y.p, 104 * S, &h, &t), POLITENESS_NOT_READY);
	ck_assert_uint_eq(t, 105 * S);
	ck_assert_int_eq(politeness_pop_ready(y.p, 105 * S, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, b);
	/* a held host cannot be restored */
	ck_assert_int_eq(politeness_host_restore(y.p, b, &sb, 105 * S), POLITENESS_ERR_STATE);
	teardown(&x);
	teardown(&y);
}
END_TEST

START_TEST(picks_up_existing_hosts)
{
	struct frontier_config fc;
	struct politeness_config pc;
	struct frontier *f = NULL;
	struct politeness *p = NULL;
	uint32_t a, h;
	uint64_t t;

	frontier_config_default(&fc);
	ck_assert_int_eq(frontier_create(&fc, &f), FRONTIER_OK);
	ck_assert_int_eq(frontier_host_get(f, "k", 1, 1, &a), FRONTIER_OK);
	ck_assert_int_eq(frontier_push(f, a, "u", 1, NULL, 0, 0), FRONTIER_OK);
	politeness_config_default(&pc);
	pc.ratio = 2.0;
	ck_assert_int_eq(politeness_create(f, &pc, NULL, NULL, &p), POLITENESS_ERR_INVALID);
	ck_assert_ptr_null(p);
	pc.ratio = 0.5;
	ck_assert_int_eq(politeness_create(f, &pc, NULL, NULL, &p), POLITENESS_OK);
	ck_assert_int_eq(politeness_pop_ready(p, 0, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, a);
	politeness_destroy(p);
	politeness_destroy(NULL);
	frontier_destroy(f);
}
END_TEST

/* The adaptive policy's estimate lives with the host: each release feeds
 * it, and the host's next time follows it (defaults: factor 5, min 0.5 s). */
START_TEST(adaptive_estimate_per_host)
{
	struct fx x;
	uint32_t a, b, h;
	uint64_t t;
	struct delay_estimate e;
	struct visit_outcome o;

	setup_policy(&x, 0, DELAY_POLICY_ADAPTIVE);
	a = add_host(&x, "http://slow.test", 3);
	b = add_host(&x, "http://fast.test", 3);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, a);
	o = ok_at(0);
	ck_assert_int_eq(politeness_release(x.p, a, &o, 400000), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 400000 + 2 * S);
	politeness_host_estimate(x.p, a, &e);
	ck_assert_uint_eq(e.ewma_us, 400000);
	ck_assert_uint_eq(politeness_host_wait(x.p, a), 2 * S);
	ck_assert_uint_eq(politeness_host_wait(x.p, b), 0); /* no visit yet */
	ck_assert_int_eq(politeness_pop_ready(x.p, 400000, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, b);
	o = ok_at(400000);
	ck_assert_int_eq(politeness_release(x.p, b, &o, 410000), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(x.p, b), 410000 + S / 2);
	politeness_host_estimate(x.p, b, &e);
	ck_assert_uint_eq(e.ewma_us, 10000);
	/* a 429 doubles the fast host's wait and leaves the slow host alone */
	ck_assert_int_eq(politeness_pop_ready(x.p, 910000, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, b);
	o.kind = VISIT_RETRY_LATER;
	o.start_us = 910000;
	ck_assert_int_eq(politeness_release(x.p, b, &o, 920000), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_next(x.p, b), 920000 + S);
	politeness_host_estimate(x.p, b, &e);
	ck_assert_uint_eq(e.level, 1);
	ck_assert_uint_eq(e.ewma_us, 10000);
	ck_assert_uint_eq(politeness_host_wait(x.p, b), S);
	/* a visit without requests (DNS only) keeps the wait and the estimate */
	ck_assert_int_eq(politeness_pop_ready(x.p, 1920000, &h, &t), POLITENESS_OK);
	ck_assert_uint_eq(h, b);
	o.kind = VISIT_NONE;
	ck_assert_int_eq(politeness_release(x.p, b, &o, 1930000), POLITENESS_OK);
	ck_assert_uint_eq(politeness_host_wait(x.p, b), S);
	ck_assert_uint_eq(politeness_host_next(x.p, b), 1930000);
	politeness_host_estimate(x.p, b, &e);
	ck_assert_uint_eq(e.level, 1);
	politeness_host_estimate(x.p, a, &e);
	ck_assert_uint_eq(e.level, 0);
	politeness_host_estimate(x.p, 999, &e);
	ck_assert_uint_eq(e.ewma_us, 0);
	teardown(&x);

	/* the other policies keep no estimate */
	setup(&x, 0);
	a = add_host(&x, "http://slow.test", 2);
	ck_assert_int_eq(politeness_pop_ready(x.p, 0, &h, &t), POLITENESS_OK);
	o = ok_at(0);
	ck_assert_int_eq(politeness_release(x.p, a, &o, 400000), POLITENESS_OK);
	politeness_host_estimate(x.p, a, &e);
	ck_assert_uint_eq(e.ewma_us, 0);
	ck_assert_uint_eq(politeness_host_next(x.p, a), 400000 + 2 * S);
	teardown(&x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("politeness");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, host_tokens);
	tcase_add_test(tc, ip_tokens);
	tcase_add_test(tc, ip_off);
	tcase_add_test(tc, ip_busy);
	tcase_add_test(tc, ipv6_groups_per_64);
	tcase_add_test(tc, dns_protocol);
	tcase_add_test(tc, backoff_and_retire);
	tcase_add_test(tc, crawl_delay_and_retry_after);
	tcase_add_test(tc, steered_delay);
	tcase_add_test(tc, picks_up_existing_hosts);
	tcase_add_test(tc, save_and_restore);
	tcase_add_test(tc, adaptive_estimate_per_host);
	tcase_add_test(tc, memory_account);
	tcase_add_test(tc, precedence);
	tcase_add_test(tc, precedence_in_group);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
