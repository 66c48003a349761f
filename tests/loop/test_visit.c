/*
 * test_visit.c: the visit (crawler/visit.h) driven directly, its engine and
 * resolver faked (loop_rig.h): robots.txt first, the visit budget, a
 * Retry-After, the fallback to the other address family, a refused IP
 * lease, the trace of its state changes, and a visit giving its turn back.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier/base/clock.h"
#include "loop_rig.h"

#define SEC 1000000u

/* Every fetch error counted by the visit. */
static uint64_t fetch_errors(struct rig *r)
{
	const struct visit_stats *st = rig_stats(r);
	uint64_t n = 0;
	for (size_t i = 0; i < VISIT_ERRORS; i++)
		n += st->fetch_errors[i];
	return n;
}

static uint64_t pol_errors(const struct rig *r)
{
	struct politeness_stats ps;
	politeness_stats(r->pol, &ps);
	return ps.errors;
}

static uint64_t pol_retry_laters(const struct rig *r)
{
	struct politeness_stats ps;
	politeness_stats(r->pol, &ps);
	return ps.retry_laters;
}

START_TEST(visit_robots_first)
{
	struct rig r;
	rig_config(&r);
	rig_open(&r, 0);
	uint32_t a = rig_add(&r, "http://a.test/1");
	rig_add(&r, "http://a.test/2");
	rig_add(&r, "http://a.test/private/3");
	/* a new host: its name first, nothing fetched */
	ck_assert_int_eq(rig_pop(&r, rig_later()), 1);
	ck_assert_uint_eq(r.nlookup, 1);
	ck_assert_str_eq(r.lookup[0].name, "a.test");
	ck_assert_uint_eq(r.nfetch, 0);
	rig_resolve(&r, 0, "127.0.0.2", NULL);
	ck_assert_int_eq(r.pumps, 1); /* an answer after the call: the loop pumps */
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(r.nfetch, 0);
	/* back under its IP's token: robots.txt, and nothing else */
	ck_assert_int_eq(rig_pop(&r, rig_later()), 1);
	ck_assert_uint_eq(r.nfetch, 1);
	ck_assert_str_eq(r.fetch[0].url, "http://a.test/robots.txt");
	ck_assert_str_eq(r.fetch[0].ip, "127.0.0.2");
	ck_assert_uint_eq(r.fetch[0].flags & FETCH_FLAG_ROBOTS, FETCH_FLAG_ROBOTS);
	visit_continue(r.visit, a); /* as the loop may: the visit still waits */
	ck_assert_int_eq(rig_pop(&r, rig_later()), 0);
	ck_assert_uint_eq(r.nfetch, 1);
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 3);
	rig_answer(&r, 0, 200, "text/plain", "User-agent: *\nDisallow: /private\n", -1, NULL);
	/* then the pages robots.txt allows, one at a time */
	ck_assert_uint_eq(r.nfetch, 2);
	ck_assert_str_eq(r.fetch[1].url, "http://a.test/1");
	ck_assert_uint_eq(r.fetch[1].flags & FETCH_FLAG_ROBOTS, 0);
	rig_answer(&r, 1, 200, "text/html", "<p>one</p>", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert_str_eq(r.fetch[2].url, "http://a.test/2");
	rig_answer(&r, 2, 200, "text/html", "<p>two</p>", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert_uint_eq(rig_stats(&r)->robots_disallowed, 1);
	ck_assert_uint_eq(rig_stats(&r)->robots_fetches, 1);
	ck_assert_uint_eq(rig_stats(&r)->requests, 3);
	ck_assert(!politeness_host_held(r.pol, a));
	rig_close(&r);
}
END_TEST

/* Answers the requests of the current visit from `from` on with 200 until
 * none is left: how many. */
static size_t answer_all(struct rig *r, size_t from)
{
	size_t n = 0;
	for (size_t i = from; i < r->nfetch; i++, n++)
		rig_answer(r, i, 200, "text/html", "<p>page</p>", -1, NULL);
	return n;
}

/* The visit's memory account moves with the hosts it has seen: a block
 * of 4,096 hosts' states (48 bytes each, as malloc rounds the block) once
 * a host id reaches it, nothing more for the hosts within it. */
START_TEST(visit_memory_account)
{
	struct rig r;
	char url[64];
	rig_config(&r);
	rig_open(&r, 0);
	rig_add(&r, "http://a.test/1");
	uint64_t m0 = rig_stats(&r)->mem_bytes;
	uint64_t block = ((48u << 12) + 8 + 15) & ~(uint64_t)15;
	for (int i = 1; i < 3 * 4096; i++) {
		snprintf(url, sizeof url, "http://h%d.test/", i);
		rig_add(&r, url);
	}
	uint64_t m1 = rig_stats(&r)->mem_bytes;
	ck_assert_uint_eq(m1 - m0, 2 * block);
	rig_add(&r, "http://h1.test/again");
	ck_assert_uint_eq(rig_stats(&r)->mem_bytes, m1);
	rig_close(&r);
}
END_TEST

START_TEST(visit_budget)
{
	struct rig r;
	rig_config(&r);
	r.cfg.politeness.max_urls_per_visit = 3;
	rig_open(&r, 0);
	uint32_t a = 0;
	char url[64];
	for (int i = 1; i <= 8; i++) {
		snprintf(url, sizeof url, "http://a.test/%d", i);
		a = rig_add(&r, url);
	}
	rig_first_visit(&r, a, "127.0.0.2", NULL);
	/* robots.txt is one of the visit's three requests */
	rig_answer(&r, 0, 404, "text/plain", "", -1, NULL);
	uint64_t t0 = monotonic_us();
	ck_assert_uint_eq(answer_all(&r, 1), 2);
	uint64_t t1 = monotonic_us();
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 6);
	/* released as a good visit: the policy's delay, no error */
	ck_assert_uint_ge(politeness_host_next(r.pol, a), t0 + r.cfg.politeness.host_delay_us);
	ck_assert_uint_le(politeness_host_next(r.pol, a), t1 + r.cfg.politeness.host_delay_us);
	ck_assert_uint_eq(politeness_host_errors(r.pol, a), 0);
	/* the next visit: three pages, then over */
	ck_assert_int_eq(rig_pop(&r, rig_later()), 1);
	ck_assert_uint_eq(answer_all(&r, 3), 3);
	ck_assert_uint_eq(r.nfetch, 6);
	ck_assert_str_eq(r.fetch[3].url, "http://a.test/3");
	ck_assert_str_eq(r.fetch[5].url, "http://a.test/5");
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 3);
	/* a 5xx ends a visit at once, released as an error */
	ck_assert_int_eq(rig_pop(&r, rig_later()), 1);
	ck_assert_uint_eq(r.nfetch, 7);
	t0 = monotonic_us();
	rig_answer(&r, 6, 500, "text/html", "oops", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 7);
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 2);
	ck_assert_uint_eq(politeness_host_errors(r.pol, a), 1);
	ck_assert_uint_eq(pol_errors(&r), 1);
	ck_assert_uint_ge(politeness_host_next(r.pol, a), t0 + r.cfg.politeness.backoff_base_us);
	rig_close(&r);
}
END_TEST

START_TEST(visit_budget_time)
{
	struct rig r;
	rig_config(&r);
	r.cfg.politeness.policy = DELAY_POLICY_RATIO;
	r.cfg.politeness.visit_budget_us = 50000;
	r.cfg.politeness.max_urls_per_visit = 100;
	rig_open(&r, 0);
	uint32_t a = rig_add(&r, "http://a.test/1");
	rig_add(&r, "http://a.test/2");
	rig_add(&r, "http://a.test/3");
	rig_first_visit(&r, a, "127.0.0.2", NULL);
	rig_answer(&r, 0, 404, "text/plain", "", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 2);
	rig_answer(&r, 1, 200, "text/html", "<p>1</p>", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 3); /* within its time */
	usleep(60000);
	rig_answer(&r, 2, 200, "text/html", "<p>2</p>", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 3); /* past it: over, /3 left */
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 1);
	rig_close(&r);
}
END_TEST

START_TEST(visit_retry_after)
{
	struct rig r;
	rig_config(&r);
	rig_open(&r, 0);
	uint32_t a = rig_add(&r, "http://a.test/1");
	rig_add(&r, "http://a.test/2");
	rig_add(&r, "http://a.test/3");
	rig_first_visit(&r, a, "127.0.0.2", NULL);
	rig_answer(&r, 0, 404, "text/plain", "", -1, NULL);
	rig_answer(&r, 1, 200, "text/html", "<p>1</p>", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 3);
	/* a page's 429: the visit ends at once, though its budget and URLs
	 * allow more, and the host waits the Retry-After, no error counted */
	uint64_t t0 = monotonic_us();
	rig_answer(&r, 2, 429, "text/plain", "slow down", 30, NULL);
	uint64_t t1 = monotonic_us();
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 1);
	ck_assert_uint_ge(politeness_host_next(r.pol, a), t0 + 30 * SEC);
	ck_assert_uint_le(politeness_host_next(r.pol, a), t1 + 30 * SEC);
	ck_assert_uint_eq(politeness_host_errors(r.pol, a), 0);
	ck_assert_uint_eq(pol_retry_laters(&r), 1);

	/* robots.txt's 503 with a Retry-After: its rules go back to unknown,
	 * the host's URLs stay, the host waits, and robots.txt comes first
	 * again at its next visit */
	uint32_t b = rig_add(&r, "http://b.test/1");
	rig_add(&r, "http://b.test/2");
	rig_first_visit(&r, b, "127.0.0.3", NULL);
	ck_assert_uint_eq(r.nfetch, 4);
	ck_assert_str_eq(r.fetch[3].url, "http://b.test/robots.txt");
	t0 = monotonic_us();
	rig_answer(&r, 3, 503, "text/plain", "busy", 20, NULL);
	t1 = monotonic_us();
	ck_assert_uint_eq(r.nfetch, 4);
	ck_assert(!politeness_host_held(r.pol, b));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, b), 2);
	ck_assert_uint_eq(rig_stats(&r)->robots_unreachable, 1);
	ck_assert_uint_ge(politeness_host_next(r.pol, b), t0 + 20 * SEC);
	ck_assert_uint_le(politeness_host_next(r.pol, b), t1 + 20 * SEC);
	ck_assert_uint_eq(politeness_host_errors(r.pol, b), 0);
	enum politeness_robots_state st;
	const struct robots *rules;
	uint64_t exp;
	politeness_robots_state(r.pol, b, &st, &rules, &exp);
	ck_assert_int_eq(st, POLITENESS_ROBOTS_UNKNOWN);
	ck_assert_int_eq(rig_pop(&r, rig_later()), 2); /* both hosts, their waits over */
	ck_assert_uint_eq(r.nfetch, 6);
	ck_assert(strcmp(r.fetch[4].url, "http://b.test/robots.txt") == 0 ||
	          strcmp(r.fetch[5].url, "http://b.test/robots.txt") == 0);
	rig_close(&r);
}
END_TEST

START_TEST(visit_family_fallback)
{
	struct rig r;
	rig_config(&r);
	r.cfg.politeness.max_urls_per_visit = 2;
	rig_open(&r, 0);
	uint32_t a = rig_add(&r, "http://a.test/1");
	rig_add(&r, "http://a.test/2");
	rig_add(&r, "http://a.test/3");
	rig_first_visit(&r, a, "127.0.0.2", "::1");
	rig_answer(&r, 0, 404, "text/plain", "", -1, NULL);
	rig_answer(&r, 1, 200, "text/html", "<p>1</p>", -1, NULL);
	ck_assert(!politeness_host_held(r.pol, a));
	/* the next visit's first request cannot connect over IPv4 */
	ck_assert_int_eq(rig_pop(&r, rig_later()), 1);
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert_str_eq(r.fetch[2].url, "http://a.test/2");
	ck_assert_str_eq(r.fetch[2].ip, "127.0.0.2");
	uint64_t t0 = monotonic_us();
	rig_fail(&r, 2, FETCH_ERR_CONNECT);
	/* put back, the visit over as a good one: no error anywhere */
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 2);
	ck_assert_uint_eq(rig_stats(&r)->family_fallbacks, 1);
	ck_assert_uint_eq(fetch_errors(&r), 0);
	ck_assert_uint_eq(politeness_host_errors(r.pol, a), 0);
	ck_assert_uint_eq(pol_errors(&r), 0);
	ck_assert_uint_ge(politeness_host_next(r.pol, a), t0 + r.cfg.politeness.host_delay_us);
	/* resolved again, it comes back on IPv6 with the same URL first */
	rig_first_visit(&r, a, "127.0.0.2", "::1");
	ck_assert_uint_eq(r.nlookup, 2);
	ck_assert_uint_eq(r.nfetch, 4);
	ck_assert_str_eq(r.fetch[3].url, "http://a.test/2");
	ck_assert_str_eq(r.fetch[3].ip, "::1");
	rig_answer(&r, 3, 200, "text/html", "<p>2</p>", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 5);
	ck_assert_str_eq(r.fetch[4].ip, "::1");
	rig_close(&r);
}
END_TEST

START_TEST(visit_lease_refused)
{
	struct rig r;
	rig_config(&r);
	r.cfg.politeness.max_urls_per_visit = 2;
	r.cfg.politeness.ip_delay_us = 100000;
	rig_open(&r, 1);
	uint32_t a = rig_add(&r, "http://a.test/1");
	rig_add(&r, "http://a.test/2");
	rig_add(&r, "http://a.test/3");
	rig_first_visit(&r, a, "127.0.0.2", NULL);
	/* every request waits for its IP's lease, asked for its time bound
	 * and the IP delay after it */
	ck_assert_uint_eq(r.nfetch, 0);
	ck_assert_uint_eq(r.nlease, 1);
	ck_assert_str_eq(r.lease[0].key, "127.0.0.2");
	ck_assert_uint_ge(r.lease[0].ttl_ms,
	                  r.cfg.fetch.total_timeout_ms + 100 + VISIT_LEASE_MARGIN_MS);
	r.lease[0].done(r.lease[0].arg, true, 0);
	ck_assert_uint_eq(r.nfetch, 1);
	rig_answer(&r, 0, 404, "text/plain", "", -1, NULL);
	ck_assert_uint_eq(r.nreleased, 1); /* shortened once answered */
	ck_assert_uint_eq(r.nlease, 2);
	r.lease[1].done(r.lease[1].arg, true, 0);
	rig_answer(&r, 1, 200, "text/html", "<p>1</p>", -1, NULL);
	ck_assert(!politeness_host_held(r.pol, a));
	/* the next visit, once the IP's own rest is over: its lease is
	 * refused (another agent holds the IP, 80 ms left) */
	usleep(150000);
	ck_assert_int_eq(rig_pop(&r, rig_later()), 1);
	ck_assert_uint_eq(r.nlease, 3);
	ck_assert_uint_lt(politeness_host_ip_next(r.pol, a), monotonic_us());
	uint64_t t0 = monotonic_us();
	r.lease[2].done(r.lease[2].arg, false, 80);
	uint64_t t1 = monotonic_us();
	ck_assert_uint_eq(r.nfetch, 2);
	ck_assert_uint_eq(rig_stats(&r)->ip_lease_refused, 1);
	ck_assert_uint_eq(fetch_errors(&r), 0);
	ck_assert(!politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 2);
	/* the IP group rests the holder's time left */
	ck_assert_uint_ge(politeness_host_ip_next(r.pol, a), t0 + 80000u);
	ck_assert_uint_le(politeness_host_ip_next(r.pol, a), t1 + 80000u);
	/* then the same URL goes first */
	ck_assert_int_eq(rig_pop(&r, rig_later()), 1);
	ck_assert_uint_eq(r.nlease, 4);
	r.lease[3].done(r.lease[3].arg, true, 0);
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert_str_eq(r.fetch[2].url, "http://a.test/2");
	rig_close(&r);
}
END_TEST

/* A host's first visits (lookup, robots.txt, one page) with trace_visits
 * as given; what they wrote on stderr (malloc'd). */
static char *small_visit_stderr(int trace)
{
	struct rig r;
	char path[300];
	rig_config(&r);
	r.cfg.crawl.trace_visits = trace;
	snprintf(path, sizeof path, "%s/stderr", r.dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	rig_open(&r, 0);
	uint32_t a = rig_add(&r, "http://a.test/1");
	rig_first_visit(&r, a, "127.0.0.2", NULL);
	rig_answer(&r, 0, 404, "text/plain", "", -1, NULL);
	rig_answer(&r, 1, 200, "text/html", "<p>1</p>", -1, NULL);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	off_t n = lseek(fd, 0, SEEK_END);
	char *text = calloc(1, (size_t)n + 1);
	ck_assert_int_eq(pread(fd, text, (size_t)n, 0), n);
	close(fd);
	rig_close(&r);
	return text;
}

START_TEST(visit_trace)
{
	static const char *const want[] = {
		"http://a.test: state IDLE -> RESOLVE (no address yet)",
		"http://a.test: dns NONE -> PENDING (lookup)",
		"http://a.test: dns PENDING -> OK (answered)",
		"http://a.test: state RESOLVE -> IDLE (resolved; released NONE, 0 requests)",
		"http://a.test: state IDLE -> FETCH (visit begins)",
		"http://a.test: state FETCH -> ROBOTS (robots.txt unknown or expired)",
		"http://a.test: state ROBOTS -> FETCH (robots.txt answered)",
		"http://a.test: state FETCH -> IDLE (queue empty; released OK, 2 requests)",
	};
	char *text = small_visit_stderr(1);
	const char *at = text;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const char *hit = strstr(at, want[i]);
		ck_assert_msg(hit != NULL, "trace line '%s' missing or out of order in:\n%s",
		              want[i], text);
		at = hit + strlen(want[i]);
	}
	ck_assert_int_eq(strncmp(text, "visit ", 6), 0);
	free(text);
	text = small_visit_stderr(0);
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

/* A visit that drops max_disallowed_per_turn URLs as robots-disallowed
 * gives the loop back (issue 30): another host is served meanwhile, and
 * the visit goes on where it stopped at the loop's next turn. */
START_TEST(visit_disallowed_yield)
{
	struct rig r;
	char url[64];
	rig_config(&r);
	r.cfg.crawl.max_disallowed_per_turn = 3;
	rig_open(&r, 0);
	uint32_t a = 0;
	for (int i = 1; i <= 7; i++) {
		snprintf(url, sizeof url, "http://a.test/private/%d", i);
		a = rig_add(&r, url);
	}
	rig_add(&r, "http://a.test/ok");
	rig_first_visit(&r, a, "127.0.0.2", NULL);
	ck_assert_uint_eq(r.nfetch, 1);
	rig_answer(&r, 0, 200, "text/plain", "User-agent: *\nDisallow: /private\n", -1, NULL);
	/* three dropped, then the turn is given back: nothing fetched, the
	 * host still held, a pump asked for */
	ck_assert_uint_eq(r.nfetch, 1);
	ck_assert_uint_eq(rig_stats(&r)->robots_disallowed, 3);
	ck_assert_uint_eq(rig_stats(&r)->disallowed_yields, 1);
	ck_assert_int_eq(r.soon_pumps, 1);
	ck_assert(politeness_host_held(r.pol, a));
	ck_assert_uint_eq(frontier_host_queued(r.frontier, a), 5);
	visit_continue(r.visit, a); /* as the loop may: the host waits its turn */
	ck_assert_uint_eq(rig_stats(&r)->robots_disallowed, 3);
	/* meanwhile another host is served */
	uint32_t b = rig_add(&r, "http://b.test/1");
	rig_first_visit(&r, b, "127.0.0.3", NULL);
	ck_assert_uint_eq(r.nfetch, 2);
	ck_assert_str_eq(r.fetch[1].url, "http://b.test/robots.txt");
	/* the next turns: three more dropped, then the last one and /ok */
	visit_yielded_run(r.visit);
	ck_assert_uint_eq(r.nfetch, 2);
	ck_assert_uint_eq(rig_stats(&r)->robots_disallowed, 6);
	ck_assert_uint_eq(rig_stats(&r)->disallowed_yields, 2);
	ck_assert_int_eq(r.soon_pumps, 2);
	visit_yielded_run(r.visit);
	ck_assert_uint_eq(r.nfetch, 3);
	ck_assert_str_eq(r.fetch[2].url, "http://a.test/ok");
	ck_assert_uint_eq(rig_stats(&r)->robots_disallowed, 7);
	ck_assert_uint_eq(rig_stats(&r)->disallowed_yields, 2);
	visit_yielded_run(r.visit); /* nobody waits: nothing happens */
	ck_assert_uint_eq(r.nfetch, 3);
	rig_answer(&r, 2, 200, "text/html", "<p>ok</p>", -1, NULL);
	ck_assert(!politeness_host_held(r.pol, a));
	rig_close(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loop_visit");
	TCase *tc = tcase_create("visit");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, visit_robots_first);
	tcase_add_test(tc, visit_budget);
	tcase_add_test(tc, visit_budget_time);
	tcase_add_test(tc, visit_retry_after);
	tcase_add_test(tc, visit_family_fallback);
	tcase_add_test(tc, visit_lease_refused);
	tcase_add_test(tc, visit_trace);
	tcase_add_test(tc, visit_memory_account);
	tcase_add_test(tc, visit_disallowed_yield);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
