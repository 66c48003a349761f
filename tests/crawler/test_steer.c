/*
 * test_steer.c: steering (crawler/control/steer.h) on a real frontier,
 * politeness and rule list, without a loop: requests checked whole (a bad
 * one changes nothing and names its line), seeds fed through the hook as
 * room allows, pause, host delays, the action directory's files moved to
 * done/ or failed/ with a reason, steering.log replayed by a resumed
 * steer, and the crawl's shared rules (an agent's) applied once each.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/control/steer.h"
#include "frontier/frontier.h"
#include "frontier/url.h"
#include "frontier/url_rules_live.h"
#include "politeness/politeness.h"

struct fx {
	char dir[64];
	struct url_options opt;
	struct frontier *f;
	struct politeness *p;
	struct url_rules_live *rules;
	struct steer *s;
	int room; /* seeds the feed hook takes before it says "no room" */
	char fed[4096];
	int nfed, wakes;
	char shared[1024]; /* what the share hook got: "SOURCE|TEXT" each */
};

static void share(void *ctx, const char *text, size_t len, const char *source)
{
	struct fx *x = ctx;
	size_t n = strlen(x->shared);
	snprintf(x->shared + n, sizeof x->shared - n, "%s|%.*s", source, (int)len, text);
}

static int feed(void *ctx, const char *key, size_t len)
{
	struct fx *x = ctx;
	if (x->room <= 0)
		return -1;
	x->room--;
	x->nfed++;
	strncat(x->fed, key, len);
	strcat(x->fed, "\n");
	return 0;
}

static void wake(void *ctx)
{
	((struct fx *)ctx)->wakes++;
}

static void start(struct fx *x, int resume)
{
	char err[1200];
	const struct steer_parts parts = {
		.out_dir = x->dir,
		.url = &x->opt,
		.rules = x->rules,
		.frontier = x->f,
		.pol = x->p,
		.ctx = x,
		.feed = feed,
		.wake = wake,
		.share = share,
	};
	ck_assert_msg(steer_create(&parts, resume, &x->s, err, sizeof err) == 0, "%s", err);
}

static void setup(struct fx *x)
{
	struct frontier_config fc;
	struct politeness_config pc;
	struct url_rules *r = NULL;
	char err[256];
	memset(x, 0, sizeof *x);
	strcpy(x->dir, "/tmp/test_steer.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(x->dir));
	url_options_init(&x->opt);
	frontier_config_default(&fc);
	fc.mem_budget = 1 << 20;
	ck_assert_int_eq(frontier_create(&fc, &x->f), FRONTIER_OK);
	politeness_config_default(&pc);
	ck_assert_int_eq(politeness_create(x->f, &pc, NULL, NULL, &x->p), POLITENESS_OK);
	ck_assert_int_eq(
	        url_rules_live_parse("reject ext gif\n", 15, "test", &x->opt, &r, err, sizeof err),
	        URL_RULES_OK);
	ck_assert_ptr_nonnull(x->rules = url_rules_live_create(r, 0));
	x->room = 1000;
	start(x, 0);
}

static void teardown(struct fx *x)
{
	char cmd[128];
	steer_destroy(x->s);
	url_rules_live_destroy(x->rules);
	politeness_destroy(x->p);
	frontier_destroy(x->f);
	snprintf(cmd, sizeof cmd, "rm -rf %s", x->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* One request: its status, its body in out. */
static int ask(struct fx *x, const char *method, const char *target, const char *body, char *out,
               size_t cap)
{
	char *text = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&text, &n);
	int code = steer_http(x->s, method, target, body, strlen(body), f);
	fclose(f);
	snprintf(out, cap, "%s", text);
	free(text);
	return code;
}

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	return f ? buf : NULL;
}

START_TEST(bad_requests_change_nothing)
{
	struct fx x;
	char out[2048];
	struct steer_stats st;
	setup(&x);
	ck_assert_int_eq(
	        ask(&x, "POST", "/seeds", "http://a.test/\n\nmailto:x@y\n", out, sizeof out), 400);
	ck_assert_ptr_nonnull(strstr(out, "POST /seeds:3:"));
	ck_assert_int_eq(
	        ask(&x, "POST", "/rules", "reject path /a/\nreject bogus x\n", out, sizeof out),
	        400);
	ck_assert_ptr_nonnull(strstr(out, "POST /rules:2:"));
	ck_assert_int_eq(ask(&x, "POST", "/hosts/a.test/delay?ms=-5", "", out, sizeof out), 400);
	ck_assert_int_eq(ask(&x, "POST", "/hosts/a.test/delay?ms=99999999", "", out, sizeof out),
	                 400);
	ck_assert_int_eq(ask(&x, "POST", "/hosts/a.test/delay", "", out, sizeof out), 400);
	ck_assert_int_eq(ask(&x, "GET", "/pause", "", out, sizeof out), 405);
	ck_assert_int_eq(ask(&x, "POST", "/elsewhere", "", out, sizeof out), 404);
	ck_assert_int_eq(ask(&x, "GET", "/hosts/a.test", "", out, sizeof out), 404);
	steer_pump(x.s);
	ck_assert_int_eq(x.nfed, 0);
	ck_assert_int_eq(steer_paused(x.s), 0);
	ck_assert_uint_eq(url_rules_live_added(x.rules), 0);
	steer_stats(x.s, &st);
	ck_assert_uint_eq(st.refused, 5);
	ck_assert_uint_eq(st.applied, 0);
	teardown(&x);
}
END_TEST

START_TEST(actions_apply_and_replay)
{
	struct fx x;
	char out[2048], path[128];
	uint32_t h;
	setup(&x);
	x.room = 1;
	ck_assert_int_eq(ask(&x, "POST", "/seeds", "# two\nHTTP://A.test/x\nhttp://b.test/y#f\n",
	                     out, sizeof out),
	                 200);
	ck_assert_int_eq(steer_busy(x.s), 1);
	steer_pump(x.s); /* room for one */
	ck_assert_int_eq(x.nfed, 1);
	ck_assert_int_eq(steer_busy(x.s), 1);
	x.room = 5;
	steer_pump(x.s);
	ck_assert_str_eq(x.fed, "http://a.test/x\nhttp://b.test/y\n");
	ck_assert_int_eq(steer_busy(x.s), 0);
	ck_assert_int_eq(ask(&x, "POST", "/rules", "reject path /private/\n", out, sizeof out),
	                 200);
	ck_assert_uint_eq(url_rules_live_added(x.rules), 1);
	ck_assert_int_eq(ask(&x, "POST", "/pause", "", out, sizeof out), 200);
	ck_assert_int_eq(steer_paused(x.s), 1);
	ck_assert_int_eq(ask(&x, "POST", "/hosts/A.test/delay?ms=2500", "", out, sizeof out), 200);
	ck_assert_int_eq(frontier_host_get(x.f, "http://a.test", 13, 0, &h), FRONTIER_OK);
	ck_assert_uint_eq(politeness_host_delay(x.p, h), 2500);
	ck_assert_int_eq(ask(&x, "GET", "/hosts/a.test", "", out, sizeof out), 200);
	ck_assert_ptr_nonnull(strstr(out, "\"steered_delay_ms\": 2500"));
	ck_assert_ptr_nonnull(strstr(out, "\"paused\": true"));
	snprintf(path, sizeof path, "%s/steering.log", x.dir);
	ck_assert_str_eq(slurp(path), "seed http://a.test/x\nseed http://b.test/y\npause\n"
	                              "delay A.test 2500\n");
	/* a resumed steer: paused, the delay set, the seeds fed again */
	steer_destroy(x.s);
	politeness_host_set_delay(x.p, h, 0);
	x.fed[0] = '\0';
	x.nfed = 0;
	start(&x, 1);
	ck_assert_int_eq(steer_paused(x.s), 1);
	ck_assert_uint_eq(politeness_host_delay(x.p, h), 2500);
	steer_pump(x.s);
	ck_assert_str_eq(x.fed, "http://a.test/x\nhttp://b.test/y\n");
	ck_assert_int_eq(ask(&x, "POST", "/resume", "", out, sizeof out), 200);
	ck_assert_int_eq(steer_paused(x.s), 0);
	/* the replay wrote nothing twice */
	ck_assert_str_eq(slurp(path), "seed http://a.test/x\nseed http://b.test/y\npause\n"
	                              "delay A.test 2500\nresume\n");
	teardown(&x);
}
END_TEST

/* The crawl's shared rules: rules steered here go to the share hook
 * (a bad one does not); an entry from another agent is applied as rules
 * steered here but not shared again, a bad one refused and counted, this
 * agent's own passed; the next index is logged and read back by a
 * resumed steer. */
START_TEST(shared_rules)
{
	struct fx x;
	char out[2048], path[128];
	struct steer_stats st;
	setup(&x);
	ck_assert_uint_eq(steer_shared_next(x.s), 0);
	ck_assert_int_eq(ask(&x, "POST", "/rules", "reject path /a/\n", out, sizeof out), 200);
	ck_assert_int_eq(ask(&x, "POST", "/rules", "reject bogus\n", out, sizeof out), 400);
	ck_assert_str_eq(x.shared, "POST /rules|reject path /a/\n");
	ck_assert_uint_eq(url_rules_live_added(x.rules), 1);
	ck_assert_int_eq(steer_shared_apply(x.s, 0, NULL, 0, NULL), 0); /* our own */
	ck_assert_int_eq(
	        steer_shared_apply(x.s, 1, "reject path /b/\n", 16, "agent b: POST /rules"), 0);
	ck_assert_int_eq(steer_shared_apply(x.s, 2, "reject nothing\n", 15, "agent c: x.rules"),
	                 -1);
	ck_assert_uint_eq(steer_shared_next(x.s), 3);
	ck_assert_uint_eq(url_rules_live_added(x.rules), 2);
	ck_assert_str_eq(x.shared, "POST /rules|reject path /a/\n"); /* nothing shared again */
	steer_stats(x.s, &st);
	ck_assert_uint_eq(st.applied, 2);
	ck_assert_uint_eq(st.refused, 2);
	struct url_rules *r = url_rules_live_get(x.rules);
	struct url_rules_decision d;
	url_rules_decide(r, "http://a.test/b/x", 17, 0, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	ck_assert_int_eq(d.rule, 0);
	url_rules_live_put(x.rules, r);
	snprintf(path, sizeof path, "%s/rules.txt", x.dir);
	ck_assert_ptr_nonnull(strstr(slurp(path),
	                             "reject path /b/\t# added from agent b: POST /rules:1\n"
	                             "reject path /a/\t# added from POST /rules:1\n"));
	snprintf(path, sizeof path, "%s/steering.log", x.dir);
	ck_assert_str_eq(slurp(path), "shared 1\nshared 2\nshared 3\n");
	steer_destroy(x.s);
	start(&x, 1);
	ck_assert_uint_eq(steer_shared_next(x.s), 3);
	teardown(&x);
}
END_TEST

/* Writes dir/action/name (through a rename, as a script should). */
static void drop(struct fx *x, const char *name, const char *text)
{
	char tmp[256], to[256];
	snprintf(tmp, sizeof tmp, "%s/.%s", x->dir, name);
	snprintf(to, sizeof to, "%s/action/%s", x->dir, name);
	FILE *f = fopen(tmp, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(rename(tmp, to), 0);
}

START_TEST(action_directory)
{
	struct fx x;
	char path[256];
	setup(&x);
	drop(&x, "1.seeds", "http://c.test/\n");
	drop(&x, "2.pause", "");
	drop(&x, "3.delay", "c.test 700\nc.test soon\n");
	drop(&x, "4.txt", "what\n");
	snprintf(path, sizeof path, "%s/action/failed/4.txt.reason", x.dir);
	for (int i = 0; i < 200 && access(path, F_OK) != 0; i++)
		usleep(20000);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/action/failed/3.delay.reason", x.dir);
	ck_assert_ptr_nonnull(strstr(slurp(path), "3.delay:2:"));
	snprintf(path, sizeof path, "%s/action/done/1.seeds", x.dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	snprintf(path, sizeof path, "%s/action/done/2.pause", x.dir);
	ck_assert_int_eq(access(path, F_OK), 0);
	ck_assert_int_gt(x.wakes, 0);
	steer_pump(x.s);
	ck_assert_str_eq(x.fed, "http://c.test/\n");
	ck_assert_int_eq(steer_paused(x.s), 1);
	teardown(&x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("steer");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, bad_requests_change_nothing);
	tcase_add_test(tc, actions_apply_and_replay);
	tcase_add_test(tc, action_directory);
	tcase_add_test(tc, shared_rules);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
