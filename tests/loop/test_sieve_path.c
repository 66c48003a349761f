/*
 * test_sieve_path.c: the sieve path (crawler/sieve_path.h) created
 * directly over a small Mercator sieve in a temporary folder, the test
 * thread standing for the parse threads and the loop: a URL reaches the
 * frontier once, with the depth and via of the side table; seeds are
 * emitted; a wait of every host asks a flush, at most so often; and the
 * idle flush that emits nothing ends the crawl.
 */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/crawl_source.h"
#include "frontier/base/clock.h"
#include "loop_rig.h"

/* A link found by a parse thread: key with its depth word and via. */
static void add_link(struct rig_sieve *r, struct link_batch *b, const char *key, uint32_t depth,
                     const char *via)
{
	size_t room, klen = strlen(key);
	char *slot = link_batch_slot(b, &room);
	ck_assert_uint_lt(klen, room);
	memcpy(slot, key, klen);
	struct link_meta_via *v = sieve_path_via(r->sp, via, strlen(via));
	ck_assert_ptr_nonnull(v);
	link_batch_add(b, klen, depth, v);
	sieve_path_via_release(r->sp, v);
}

START_TEST(sieve_path_once_with_meta)
{
	struct rig_sieve r;
	rig_sieve_open(&r, NULL, 0);
	struct link_batch *b = sieve_path_batch_create(r.sp);
	ck_assert_ptr_nonnull(b);
	/* twice on its way: the side table holds the first one's metadata */
	add_link(&r, b, "http://a.test/x", 3, "http://a.test/from");
	add_link(&r, b, "http://a.test/x", 5, "http://a.test/other");
	add_link(&r, b, "http://a.test/y", 4, "http://a.test/from");
	link_batch_flush(b);
	rig_sieve_flush(&r);
	ck_assert_uint_eq(r.ngot, 2);
	ck_assert_str_eq(r.got[0].url, "http://a.test/x");
	ck_assert_uint_eq(r.got[0].depth, 3);
	ck_assert_str_eq(r.got[0].via, "http://a.test/from");
	ck_assert_str_eq(r.got[1].url, "http://a.test/y");
	ck_assert_uint_eq(r.got[1].depth, 4);
	/* found again after it was emitted: the sieve has seen it */
	add_link(&r, b, "http://a.test/x", 6, "http://a.test/later");
	add_link(&r, b, "http://a.test/z", 7, "http://a.test/later");
	link_batch_flush(b);
	rig_sieve_flush(&r);
	ck_assert_uint_eq(r.ngot, 3);
	ck_assert_str_eq(r.got[2].url, "http://a.test/z");
	ck_assert_uint_eq(r.got[2].depth, 7);
	ck_assert_str_eq(r.got[2].via, "http://a.test/later");
	ck_assert_uint_eq(rig_sieve_stats(&r)->meta_missing, 0);
	link_batch_destroy(b);
	rig_sieve_close(&r);
}
END_TEST

START_TEST(sieve_path_seeds)
{
	char *seeds[] = { "HTTP://Seed.Test:80/a", "not a url", "http://seed.test/b" };
	struct rig_sieve r;
	rig_sieve_open(&r, seeds, 3);
	rig_sieve_quiet(&r);
	ck_assert_uint_eq(rig_sieve_stats(&r)->seeds_invalid, 1);
	rig_sieve_flush(&r);
	ck_assert_uint_eq(r.ngot, 2);
	ck_assert_str_eq(r.got[0].url, "http://seed.test/a");
	ck_assert_uint_eq(r.got[0].depth, 0);
	ck_assert_str_eq(r.got[0].via, "");
	ck_assert_str_eq(r.got[1].url, "http://seed.test/b");
	/* a redirect target the loop feeds, with its via and depth word */
	ck_assert_int_eq(sieve_path_feed_redirect(r.sp, "http://seed.test/c", 18,
	                                          "http://seed.test/a", 18, 9),
	                 0);
	rig_sieve_flush(&r);
	ck_assert_uint_eq(r.ngot, 3);
	ck_assert_str_eq(r.got[2].url, "http://seed.test/c");
	ck_assert_str_eq(r.got[2].via, "http://seed.test/a");
	ck_assert_uint_eq(r.got[2].depth, 9);
	rig_sieve_close(&r);
}
END_TEST

START_TEST(sieve_path_flush_on_wait)
{
	struct rig_sieve r;
	rig_sieve_open(&r, NULL, 0);
	rig_sieve_quiet(&r);
	struct link_batch *b = sieve_path_batch_create(r.sp);
	ck_assert_ptr_nonnull(b);
	add_link(&r, b, "http://a.test/1", 1, "http://a.test/");
	link_batch_flush(b);
	/* every queued host waits: the links found so far are flushed at once */
	uint64_t now = monotonic_us();
	ck_assert_uint_eq(sieve_path_none_ready(r.sp, 0, now), 0); /* busy: not asked */
	ck_assert_uint_eq(rig_sieve_stats(&r)->early_flushes, 0);
	ck_assert_uint_eq(sieve_path_none_ready(r.sp, 1, now), 0);
	ck_assert_uint_eq(rig_sieve_stats(&r)->early_flushes, 1);
	rig_sieve_drain_until(&r, 1);
	ck_assert_str_eq(r.got[0].url, "http://a.test/1");
	rig_sieve_quiet(&r);
	/* the next such flush waits its gap */
	add_link(&r, b, "http://a.test/2", 1, "http://a.test/");
	link_batch_flush(b);
	uint64_t at = sieve_path_none_ready(r.sp, 1, now + 1000);
	ck_assert_uint_ge(at, now + 500000u);
	ck_assert_uint_eq(rig_sieve_stats(&r)->early_flushes, 1);
	ck_assert_uint_eq(sieve_path_none_ready(r.sp, 1, at), 0);
	ck_assert_uint_eq(rig_sieve_stats(&r)->early_flushes, 2);
	rig_sieve_drain_until(&r, 2);
	ck_assert_str_eq(r.got[1].url, "http://a.test/2");
	rig_sieve_quiet(&r);
	/* nothing added since: no flush */
	ck_assert_uint_eq(sieve_path_none_ready(r.sp, 1, at + 10000000u), 0);
	ck_assert_uint_eq(rig_sieve_stats(&r)->early_flushes, 2);
	link_batch_destroy(b);
	rig_sieve_close(&r);
}
END_TEST

START_TEST(sieve_path_dry_ends)
{
	struct rig_sieve r;
	rig_sieve_open(&r, NULL, 0);
	rig_sieve_quiet(&r);
	struct link_batch *b = sieve_path_batch_create(r.sp);
	ck_assert_ptr_nonnull(b);
	add_link(&r, b, "http://a.test/1", 1, "http://a.test/");
	link_batch_flush(b);
	/* the frontier ran dry, all idle: an idle flush delivers the link */
	ck_assert_int_eq(sieve_path_dry(r.sp, 1), 0);
	ck_assert_uint_eq(rig_sieve_stats(&r)->forced_flushes, 1);
	rig_sieve_drain_until(&r, 1);
	/* it emitted, so it is not the end: the loop asks again (as each pump
	 * does) until an idle flush emitted nothing */
	uint64_t end = monotonic_us() + 10000000u;
	while (!sieve_path_dry(r.sp, 1)) {
		ck_assert_msg(monotonic_us() < end, "the crawl never ended");
		ck_assert_int_eq(sieve_path_drain(r.sp, 1), 1);
		usleep(1000);
	}
	ck_assert_uint_eq(rig_sieve_stats(&r)->forced_flushes, 2);
	ck_assert_uint_eq(r.ngot, 1);
	link_batch_destroy(b);
	rig_sieve_close(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loop_sieve_path");
	TCase *tc = tcase_create("sieve_path");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sieve_path_once_with_meta);
	tcase_add_test(tc, sieve_path_seeds);
	tcase_add_test(tc, sieve_path_flush_on_wait);
	tcase_add_test(tc, sieve_path_dry_ends);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
