/*
 * Check suite for the robots.txt cache of politeness/politeness.h: a host's
 * state, rules and expiry; rules owned by the cache (a replacement frees the
 * former ones, destroy frees what is left); checkpoints that keep known
 * rules across a restore (expiry rebased, a fetch in flight made again) and
 * refuse a torn file; a cache bounded in bytes that forgets the rules of
 * hosts not visited lately, never a held host's nor those being set, and
 * keeps rules that allow everything as no rules (known, costing nothing).
 *
 * robots_destroy is wrapped at link time (-Wl,--wrap=robots_destroy) so the
 * suite counts what the cache frees.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "politeness/politeness.h"
#include "politeness/robots.h"

static int robots_freed;

void __real_robots_destroy(struct robots *r);
void __wrap_robots_destroy(struct robots *r);
void __wrap_robots_destroy(struct robots *r)
{
	if (r != NULL)
		robots_freed++;
	__real_robots_destroy(r);
}

struct fx {
	struct frontier *f;
	struct politeness *p;
};

static void setup(struct fx *x)
{
	struct frontier_config fc;
	struct politeness_config pc;

	frontier_config_default(&fc);
	fc.mem_budget = 4 << 20;
	ck_assert_int_eq(frontier_create(&fc, &x->f), FRONTIER_OK);
	politeness_config_default(&pc);
	ck_assert_int_eq(politeness_create(x->f, &pc, NULL, NULL, &x->p), POLITENESS_OK);
}

static uint32_t host(struct fx *x, const char *key)
{
	uint32_t h;
	ck_assert_int_eq(frontier_host_get(x->f, key, strlen(key), 1, &h), FRONTIER_OK);
	return h;
}

static struct robots *rules(const char *body)
{
	struct robots *r = NULL;
	ck_assert_int_eq(robots_parse(body, strlen(body), "testbot/1.0", &r), ROBOTS_OK);
	return r;
}

START_TEST(robots_state)
{
	struct fx x;
	enum politeness_robots_state s;
	const struct robots *ptr = NULL;
	uint64_t exp = 0;
	uint32_t a;

	setup(&x);
	a = host(&x, "http://a.test");
	ck_assert_int_eq(politeness_robots_state(x.p, a, &s, &ptr, &exp), POLITENESS_OK);
	ck_assert_int_eq(s, POLITENESS_ROBOTS_UNKNOWN);
	ck_assert_ptr_null(ptr);
	ck_assert_int_eq(politeness_robots_state(x.p, a + 1, &s, &ptr, &exp),
	                 POLITENESS_ERR_INVALID);
	ck_assert_int_eq(politeness_robots_set(x.p, a, POLITENESS_ROBOTS_FETCHING, NULL, 0),
	                 POLITENESS_OK);
	ck_assert_int_eq(politeness_robots_state(x.p, a, &s, NULL, NULL), POLITENESS_OK);
	ck_assert_int_eq(s, POLITENESS_ROBOTS_FETCHING);
	ck_assert_int_eq(politeness_robots_set(x.p, a, POLITENESS_ROBOTS_KNOWN,
	                                       rules("User-agent: *\nDisallow: /x\n"), 77),
	                 POLITENESS_OK);
	ck_assert_int_eq(politeness_robots_state(x.p, a, &s, &ptr, &exp), POLITENESS_OK);
	ck_assert_int_eq(s, POLITENESS_ROBOTS_KNOWN);
	ck_assert_ptr_nonnull(ptr);
	ck_assert(!robots_allowed(ptr, "/x", 2));
	ck_assert_uint_eq(exp, 77);
	robots_freed = 0;
	/* replacing frees the old rules */
	ck_assert_int_eq(politeness_robots_set(x.p, a, POLITENESS_ROBOTS_KNOWN,
	                                       rules("User-agent: *\nDisallow: /y\n"), 99),
	                 POLITENESS_OK);
	ck_assert_int_eq(robots_freed, 1);
	/* a bad host id: the rules are taken all the same */
	ck_assert_int_eq(politeness_robots_set(x.p, a + 7, POLITENESS_ROBOTS_KNOWN,
	                                       rules("User-agent: *\nDisallow: /\n"), 0),
	                 POLITENESS_ERR_INVALID);
	ck_assert_int_eq(robots_freed, 2);
	politeness_destroy(x.p);
	ck_assert_int_eq(robots_freed, 3);
	frontier_destroy(x.f);
}
END_TEST

/* The cache gives each file the configured wildcard cap and counts the
 * files that have a path past it. */
START_TEST(robots_wildcard_cap)
{
	struct fx x;
	struct politeness_stats st;
	struct politeness_config pc;
	const struct robots *ptr = NULL;
	enum politeness_robots_state s;
	char body[512];
	size_t o = (size_t)snprintf(body, sizeof body, "User-agent: *\n");
	for (int i = 0; i < 5; i++)
		o += (size_t)snprintf(body + o, sizeof body - o, "Disallow: /*x%d*y\n", i);

	setup(&x);
	politeness_destroy(x.p);
	politeness_config_default(&pc);
	pc.robots_max_wildcard_rules = 4;
	ck_assert_int_eq(politeness_create(x.f, &pc, NULL, NULL, &x.p), POLITENESS_OK);
	uint32_t a = host(&x, "http://a.test"), b = host(&x, "http://b.test");
	ck_assert_int_eq(politeness_robots_set(x.p, a, POLITENESS_ROBOTS_KNOWN, rules(body), 1),
	                 POLITENESS_OK);
	ck_assert_int_eq(politeness_robots_set(x.p, b, POLITENESS_ROBOTS_KNOWN,
	                                       rules("User-agent: *\nDisallow: /*x*y\n"), 1),
	                 POLITENESS_OK);
	politeness_stats(x.p, &st);
	ck_assert_uint_eq(st.robots_capped, 1);
	/* a's file: five wildcard rules for every path, the cap is four */
	ck_assert_int_eq(politeness_robots_state(x.p, a, &s, &ptr, NULL), POLITENESS_OK);
	ck_assert(!robots_allowed(ptr, "/page", 5));
	ck_assert_int_eq(politeness_robots_state(x.p, b, &s, &ptr, NULL), POLITENESS_OK);
	ck_assert(robots_allowed(ptr, "/page", 5));
	ck_assert(!robots_allowed(ptr, "/x/y", 4));
	politeness_destroy(x.p);
	frontier_destroy(x.f);
}
END_TEST

static char *tmpfile_path(void)
{
	static char dir[] = "/tmp/test_politeness_robots.XXXXXX";
	char *path = malloc(sizeof dir + 16);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof dir + 16, "%s/robots", dir);
	return path;
}

START_TEST(checkpoint_keeps_rules)
{
	struct fx x, y;
	char *path = tmpfile_path();
	enum politeness_robots_state st;
	const struct robots *rob;
	uint64_t exp;

	setup(&x);
	for (int i = 0; i < 8; i++) {
		char key[64];
		snprintf(key, sizeof key, "http://h%d.test:80", i);
		host(&x, key);
	}
	politeness_robots_set(x.p, 3, POLITENESS_ROBOTS_KNOWN,
	                      rules("User-agent: *\nDisallow: /private\nCrawl-delay: 2\n"), 5000);
	politeness_robots_set(x.p, 4, POLITENESS_ROBOTS_KNOWN, NULL, 0);
	politeness_robots_set(x.p, 5, POLITENESS_ROBOTS_FETCHING, NULL, 0);
	politeness_robots_set(x.p, 6, POLITENESS_ROBOTS_KNOWN, rules("User-agent: *\n"), 500);
	ck_assert_int_eq(politeness_robots_checkpoint(x.p, path, 1000), POLITENESS_OK);
	politeness_destroy(x.p);

	/* Restored twice from the same file: the same caches each time. */
	for (int rep = 0; rep < 2; rep++) {
		y.f = x.f;
		struct politeness_config pc;
		politeness_config_default(&pc);
		ck_assert_int_eq(politeness_create(y.f, &pc, NULL, NULL, &y.p), POLITENESS_OK);
		ck_assert_int_eq(politeness_robots_restore(y.p, path, 100000), POLITENESS_OK);
		politeness_robots_state(y.p, 3, &st, &rob, &exp);
		ck_assert_int_eq(st, POLITENESS_ROBOTS_KNOWN);
		ck_assert_ptr_nonnull(rob);
		ck_assert(!robots_allowed(rob, "/private/a", 10));
		ck_assert(robots_allowed(rob, "/public", 7));
		ck_assert(robots_crawl_delay(rob) == 2.0);
		ck_assert_uint_eq(exp, 100000 + 4000); /* relative expiry rebased */
		politeness_robots_state(y.p, 4, &st, &rob, &exp);
		ck_assert_int_eq(st, POLITENESS_ROBOTS_KNOWN);
		ck_assert_ptr_null(rob);
		ck_assert_uint_eq(exp, 0);
		politeness_robots_state(y.p, 5, &st, &rob, &exp);
		ck_assert_int_eq(st, POLITENESS_ROBOTS_UNKNOWN); /* in flight: fetched again */
		politeness_robots_state(y.p, 6, &st, &rob, &exp);
		ck_assert_int_eq(st, POLITENESS_ROBOTS_KNOWN);
		ck_assert_uint_eq(exp, 100000 + 1); /* expired: stays set, due at once */
		politeness_robots_state(y.p, 7, &st, &rob, &exp);
		ck_assert_int_eq(st, POLITENESS_ROBOTS_UNKNOWN);
		politeness_destroy(y.p);
	}
	frontier_destroy(x.f);
	unlink(path);
	free(path);
}
END_TEST

static void flip_byte(const char *path, long off)
{
	FILE *fp = fopen(path, "r+b");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fseek(fp, off, SEEK_SET), 0);
	int c = fgetc(fp);
	ck_assert_int_ne(c, EOF);
	ck_assert_int_eq(fseek(fp, off, SEEK_SET), 0);
	fputc(c ^ 0x40, fp);
	fclose(fp);
}

START_TEST(corrupt_checkpoint_is_refused)
{
	struct fx x;
	char *path = tmpfile_path();
	struct stat sb;
	struct frontier_config fc;
	struct frontier *small;
	struct politeness_config pc;
	struct politeness *q;

	setup(&x);
	host(&x, "http://a.test");
	host(&x, "http://b.test");
	politeness_robots_set(x.p, 1, POLITENESS_ROBOTS_KNOWN, rules("User-agent: *\n"), 9);
	ck_assert_int_eq(politeness_robots_checkpoint(x.p, path, 0), POLITENESS_OK);
	ck_assert_int_eq(stat(path, &sb), 0);
	/* a flipped byte anywhere in the middle */
	flip_byte(path, sb.st_size / 2);
	ck_assert_int_eq(politeness_robots_restore(x.p, path, 0), POLITENESS_ERR_CORRUPT);
	flip_byte(path, sb.st_size / 2);
	ck_assert_int_eq(politeness_robots_restore(x.p, path, 0), POLITENESS_OK);
	/* a host the frontier does not have */
	frontier_config_default(&fc);
	ck_assert_int_eq(frontier_create(&fc, &small), FRONTIER_OK);
	politeness_config_default(&pc);
	ck_assert_int_eq(politeness_create(small, &pc, NULL, NULL, &q), POLITENESS_OK);
	ck_assert_int_eq(politeness_robots_restore(q, path, 0), POLITENESS_ERR_CORRUPT);
	politeness_destroy(q);
	frontier_destroy(small);
	/* a truncated file */
	ck_assert_int_eq(truncate(path, sb.st_size - 5), 0);
	ck_assert_int_eq(politeness_robots_restore(x.p, path, 0), POLITENESS_ERR_CORRUPT);
	/* no file at all */
	unlink(path);
	ck_assert_int_eq(politeness_robots_restore(x.p, path, 0), POLITENESS_ERR_IO);
	politeness_destroy(x.p);
	frontier_destroy(x.f);
	free(path);
}
END_TEST

static void setup_bound(struct fx *x, uint64_t cache_bytes)
{
	struct frontier_config fc;
	struct politeness_config pc;

	frontier_config_default(&fc);
	fc.mem_budget = 4 << 20;
	ck_assert_int_eq(frontier_create(&fc, &x->f), FRONTIER_OK);
	politeness_config_default(&pc);
	pc.robots_cache_bytes = cache_bytes;
	ck_assert_int_eq(politeness_create(x->f, &pc, NULL, NULL, &x->p), POLITENESS_OK);
}

static const char rich[] = "User-agent: *\nDisallow: /private/\nDisallow: /tmp/\n"
                           "Allow: /private/ok.html\nSitemap: http://a.test/sitemap.xml\n";

static enum politeness_robots_state state_of(struct fx *x, uint32_t h)
{
	enum politeness_robots_state s;
	ck_assert_int_eq(politeness_robots_state(x->p, h, &s, NULL, NULL), POLITENESS_OK);
	return s;
}

/* The host visited (popped and released) at now_us; it has a URL queued. */
static void visit(struct fx *x, uint32_t h, uint64_t *now_us)
{
	struct visit_outcome o = { VISIT_OK, *now_us, 1, 0 };
	uint32_t got;
	*now_us += 10000000; /* past every delay */
	ck_assert_int_eq(politeness_pop_ready(x->p, *now_us, &got, NULL), POLITENESS_OK);
	ck_assert_uint_eq(got, h);
	ck_assert_int_eq(politeness_release(x->p, h, &o, *now_us), POLITENESS_OK);
}

START_TEST(cache_is_bounded)
{
	struct fx x;
	struct politeness_stats st;
	char key[64];
	struct robots *r1 = rules(rich), *r0 = rules("");
	size_t one = robots_mem_bytes(r1);
	uint64_t budget = 10 * one, now = 0;

	ck_assert_uint_gt(one, robots_mem_bytes(r0));
	ck_assert_uint_eq(robots_mem_bytes(NULL), 0);
	robots_destroy(r1);
	robots_destroy(r0);
	setup_bound(&x, budget);
	/* a host visited between every set keeps its rules; a held one too */
	uint32_t hot = host(&x, "http://hot.test"), held = host(&x, "http://held.test");
	ck_assert_int_eq(frontier_push(x.f, hot, "http://hot.test/", 16, NULL, 0, 0), FRONTIER_OK);
	ck_assert_int_eq(politeness_robots_set(x.p, hot, POLITENESS_ROBOTS_KNOWN, rules(rich), 0),
	                 POLITENESS_OK);
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof key, "http://h%d.test", i);
		uint32_t h = host(&x, key);
		ck_assert_int_eq(
		        politeness_robots_set(x.p, h, POLITENESS_ROBOTS_KNOWN, rules(rich), 0),
		        POLITENESS_OK);
		ck_assert_int_eq(state_of(&x, h), POLITENESS_ROBOTS_KNOWN); /* never itself */
		politeness_stats(x.p, &st);
		ck_assert_uint_le(st.robots_bytes, budget);
		ck_assert_uint_eq(st.robots_bytes, st.robots_hosts * one);
		if (i == 5) {
			uint32_t got;
			ck_assert_int_eq(
			        frontier_push(x.f, held, "http://held.test/", 17, NULL, 0, 0),
			        FRONTIER_OK);
			ck_assert_int_eq(politeness_robots_set(x.p, held, POLITENESS_ROBOTS_KNOWN,
			                                       rules(rich), 0),
			                 POLITENESS_OK);
			now += 10000000;
			ck_assert_int_eq(politeness_pop_ready(x.p, now, &got, NULL), POLITENESS_OK);
			if (got == hot) { /* the other one: hot goes back */
				struct visit_outcome o = { VISIT_OK, now, 1, 0 };
				ck_assert_int_eq(politeness_release(x.p, hot, &o, now),
				                 POLITENESS_OK);
				ck_assert_int_eq(
				        politeness_pop_ready(x.p, now + 10000000, &got, NULL),
				        POLITENESS_OK);
				now += 10000000;
			}
			ck_assert_uint_eq(got, held);
		}
		if (i > 5)
			visit(&x, hot, &now);
	}
	politeness_stats(x.p, &st);
	ck_assert_uint_ge(st.robots_evicted, 190);
	ck_assert_uint_eq(st.robots_hosts, 10);
	ck_assert_int_eq(state_of(&x, hot), POLITENESS_ROBOTS_KNOWN);
	ck_assert_int_eq(state_of(&x, held), POLITENESS_ROBOTS_KNOWN);
	snprintf(key, sizeof key, "http://h%d.test", 0);
	ck_assert_int_eq(state_of(&x, host(&x, key)), POLITENESS_ROBOTS_UNKNOWN);
	politeness_destroy(x.p);
	frontier_destroy(x.f);
}
END_TEST

START_TEST(allow_all_stays_known)
{
	struct fx x;
	struct politeness_stats st;
	char key[64];
	struct robots *r0 = rules("Sitemap: http://a.test/s.xml\n");
	uint64_t budget = 10 * robots_mem_bytes(r0);

	ck_assert(robots_allows_all(r0));
	ck_assert(robots_allows_all(NULL));
	robots_destroy(r0);
	r0 = rules(rich);
	ck_assert(!robots_allows_all(r0));
	robots_destroy(r0);
	setup_bound(&x, budget);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "http://h%d.test", i);
		ck_assert_int_eq(politeness_robots_set(x.p, host(&x, key), POLITENESS_ROBOTS_KNOWN,
		                                       rules("Sitemap: http://a.test/s.xml\n"), 7),
		                 POLITENESS_OK);
		politeness_stats(x.p, &st);
		ck_assert_uint_le(st.robots_bytes, budget);
	}
	/* made NULL (allow all) for room, still known: no fetch again */
	ck_assert_uint_eq(st.robots_evicted, 0);
	ck_assert_uint_ge(st.robots_compacted, 90);
	for (int i = 0; i < 100; i++) {
		enum politeness_robots_state s;
		uint64_t exp;
		snprintf(key, sizeof key, "http://h%d.test", i);
		ck_assert_int_eq(politeness_robots_state(x.p, host(&x, key), &s, NULL, &exp),
		                 POLITENESS_OK);
		ck_assert_int_eq(s, POLITENESS_ROBOTS_KNOWN);
		ck_assert_uint_eq(exp, 7);
	}
	politeness_destroy(x.p);
	frontier_destroy(x.f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("politeness_robots");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, robots_state);
	tcase_add_test(tc, robots_wildcard_cap);
	tcase_add_test(tc, checkpoint_keeps_rules);
	tcase_add_test(tc, corrupt_checkpoint_is_refused);
	tcase_add_test(tc, cache_is_bounded);
	tcase_add_test(tc, allow_all_stays_known);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
