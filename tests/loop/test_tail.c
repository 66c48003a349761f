/*
 * test_tail.c: the tail of a crashed crawl (crawler/crawl_tail.h). The test
 * writes a small crawl's WARC file and crawl.log itself (warc.h and
 * crawl_log.h, as the writer does: a fetch's records, then its line), with
 * a checkpoint's position after the first fetch, then reads the tail back
 * entry by entry, and replays it into a visit driven with fakes
 * (loop_rig.h): what the tail holds is not fetched again.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crawler/crawl_source.h"
#include "crawler/crawl_tail.h"
#include "crawler/crawl_writer.h"
#include "crawler/parse_jobs.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/done_set.h"
#include "crawler/store/warc.h"
#include "frontier/scope.h"
#include "loop_rig.h"

#define HOME_HTML "<html><body><a href=\"/linked\">a link</a></body></html>"
#define ROBOTS_TXT "User-agent: *\nDisallow: /private\n"
#define OLD_BODY "<p>fetched before the checkpoint</p>"

/* The outputs being written. */
struct out {
	struct warc_writer *warc;
	struct crawl_log *log;
	struct warc_position last; /* the last response record written */
};

/* A fetch's WARC records (request and response, or revisit): whether
 * it was stored as a revisit. */
static bool write_records(struct out *o, const char *url, long status, const char *ctype,
                          const char *body)
{
	char resp[256];
	bool revisit = false;
	snprintf(resp, sizeof resp, "HTTP/1.1 %ld X\r\nContent-Type: %s\r\n\r\n", status, ctype);
	const char *req = "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
	struct warc_fetch wf = {
		.url = url,
		.ip = "127.0.0.2",
		.date_unix_ms = 1700000000000,
		.request_headers = req,
		.request_len = strlen(req),
		.response_headers = resp,
		.response_headers_len = strlen(resp),
		.body = body,
		.body_len = strlen(body),
	};
	ck_assert_int_eq(warc_writer_write_fetch(o->warc, &wf, &o->last, &revisit), WARC_OK);
	return revisit;
}

/* One fetch: its WARC records (when warc and status > 0), then its line. */
static void fetch(struct out *o, const char *url, long status, const char *ctype, const char *body,
                  unsigned flags, const char *redirect, int warc)
{
	bool revisit = warc && status > 0 && write_records(o, url, status, ctype, body);
	struct crawl_log_entry e = {
		.timestamp_unix_ms = 1700000000000,
		.status = status,
		.bytes = status > 0 ? strlen(body) : 0,
		.url = url,
		.via = strstr(url, "/robots.txt") || strcmp(url, "http://a.test/") == 0
		               ? NULL
		               : "http://a.test/",
		.depth = strcmp(url, "http://a.test/") == 0 ? 0 : 1,
		.content_type = status > 0 ? ctype : NULL,
		.ip = "127.0.0.2",
		.redirect = redirect,
		.flags = flags | (revisit ? CRAWL_LOG_REVISIT : 0),
	};
	ck_assert_int_eq(crawl_log_write(o->log, &e), CRAWL_LOG_OK);
}

/* The crawl's WARC writer and crawl.log in dir. */
static void open_outputs(const char *dir, const struct crawl_config *cfg, struct out *o)
{
	char path[400];
	struct warc_config wc = cfg->warc;
	wc.dir = dir;
	snprintf(path, sizeof path, "%s/crawl.log", dir);
	ck_assert_int_eq(warc_writer_open(&wc, &o->warc), WARC_OK);
	ck_assert_int_eq(crawl_log_open(path, &o->log), CRAWL_LOG_OK);
}

/* A checkpoint's position of the outputs as they stand. */
static void checkpoint(struct out *o, struct crawl_tail_pos *pos)
{
	struct warc_position wp;
	ck_assert_int_eq(warc_writer_sync(o->warc), WARC_OK);
	warc_writer_position(o->warc, &wp);
	ck_assert_int_eq(crawl_log_flush(o->log, 1), CRAWL_LOG_OK);
	memset(pos, 0, sizeof *pos);
	snprintf(pos->warc_file, sizeof pos->warc_file, "%s", wp.file);
	pos->warc_offset = wp.offset;
	pos->log_offset = crawl_log_size(o->log);
	pos->known = 1;
}

/* The crawl in dir: one fetch, the checkpoint (*pos), then the tail,
 * whose last record is cut in two as a crash would leave it. */
static void write_crawl(const char *dir, const struct crawl_config *cfg, struct crawl_tail_pos *pos)
{
	char path[400];
	struct out o;
	open_outputs(dir, cfg, &o);
	fetch(&o, "http://a.test/old", 200, "text/html", OLD_BODY, 0, NULL, 1);
	checkpoint(&o, pos);
	/* the tail */
	fetch(&o, "http://a.test/robots.txt", 200, "text/plain", ROBOTS_TXT, CRAWL_LOG_ROBOTS, NULL,
	      1);
	fetch(&o, "http://a.test/", 200, "text/html", HOME_HTML, 0, NULL, 1);
	fetch(&o, "http://a.test/copy", 200, "text/html", HOME_HTML, 0, NULL, 1);
	fetch(&o, "http://a.test/missing", 404, "text/html", "not here", 0, NULL, 1);
	fetch(&o, "http://a.test/moved", 301, "text/html", "", CRAWL_LOG_REDIRECT,
	      "http://a.test/target", 1);
	fetch(&o, "http://a.test/down", -(long)FETCH_ERR_CONNECT, NULL, "", 0, NULL, 1);
	fetch(&o, "http://a.test/lost", 200, "text/html", "<p>lost</p>", 0, NULL, 0);
	fetch(&o, "http://a.test/after", 200, "text/plain", "after the lost one", 0, NULL, 1);
	fetch(&o, "http://a.test/old-copy", 200, "text/html", OLD_BODY, 0, NULL, 1);
	fetch(&o, "http://a.test/torn", 200, "text/html", "<p>torn by the crash</p>", 0, NULL, 1);
	struct warc_position torn = o.last;
	ck_assert_int_eq(crawl_log_close(o.log), CRAWL_LOG_OK);
	ck_assert_int_eq(warc_writer_close(o.warc), WARC_OK);
	struct stat st;
	snprintf(path, sizeof path, "%s/%s", dir, torn.file);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(
	        truncate(path, (off_t)(torn.offset + ((uint64_t)st.st_size - torn.offset) / 2)), 0);
}

static const struct crawl_tail_entry *next(struct crawl_tail *t, const char *url)
{
	const struct crawl_tail_entry *e;
	char err[256];
	ck_assert_int_eq(crawl_tail_next(t, &e, err, sizeof err), 1);
	ck_assert_str_eq(e->url, url);
	return e;
}

static void body_is(const struct crawl_tail_entry *e, const char *body)
{
	ck_assert_ptr_nonnull(e->body);
	ck_assert_uint_eq(e->body_len, strlen(body));
	ck_assert_int_eq(memcmp(e->body, body, e->body_len), 0);
}

START_TEST(tail_entries)
{
	char dir[256], err[256];
	struct crawl_config cfg;
	struct crawl_tail_pos pos;
	struct crawl_tail *t;
	const struct crawl_tail_entry *e;
	rig_tempdir(dir, sizeof dir);
	ck_assert_int_eq(crawl_config_default(&cfg), 0);
	write_crawl(dir, &cfg, &pos);
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 1u << 20, &t, err, sizeof err), 0);
	/* from the checkpoint on: /old is not in the tail */
	e = next(t, "http://a.test/robots.txt");
	ck_assert_int_eq(e->status, 200);
	ck_assert(e->robots);
	ck_assert(!e->revisit);
	body_is(e, ROBOTS_TXT);
	e = next(t, "http://a.test/");
	ck_assert_int_eq(e->status, 200);
	ck_assert(!e->robots);
	ck_assert_str_eq(e->content_type, "text/html");
	ck_assert_str_eq(e->via, "");
	ck_assert_uint_eq(e->depth, 0);
	ck_assert_uint_eq(e->bytes, strlen(HOME_HTML));
	body_is(e, HOME_HTML);
	/* a revisit of a response in the tail: that response's payload */
	e = next(t, "http://a.test/copy");
	ck_assert(e->revisit);
	ck_assert_str_eq(e->via, "http://a.test/");
	ck_assert_uint_eq(e->depth, 1);
	body_is(e, HOME_HTML);
	e = next(t, "http://a.test/missing");
	ck_assert_int_eq(e->status, 404);
	body_is(e, "not here");
	e = next(t, "http://a.test/moved");
	ck_assert_int_eq(e->status, 301);
	ck_assert_str_eq(e->redirect, "http://a.test/target");
	e = next(t, "http://a.test/down");
	ck_assert_int_eq(e->status, -(long)FETCH_ERR_CONNECT);
	ck_assert_ptr_null(e->body);
	/* a line whose record was lost: no payload, and the next record is
	 * still the next line's */
	e = next(t, "http://a.test/lost");
	ck_assert_int_eq(e->status, 200);
	ck_assert_ptr_null(e->body);
	e = next(t, "http://a.test/after");
	body_is(e, "after the lost one");
	/* a revisit of a response before the checkpoint: no payload */
	e = next(t, "http://a.test/old-copy");
	ck_assert(e->revisit);
	ck_assert_ptr_null(e->body);
	/* the torn last record: its line stands, without a payload */
	e = next(t, "http://a.test/torn");
	ck_assert_int_eq(e->status, 200);
	ck_assert_ptr_null(e->body);
	ck_assert_int_eq(crawl_tail_next(t, &e, err, sizeof err), 0);
	crawl_tail_close(t);
	/* a position past the log's end: no tail */
	pos.log_offset += 1u << 20;
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 1u << 20, &t, err, sizeof err), 1);
	crawl_config_free(&cfg);
	rig_rmtree(dir);
}
END_TEST

/* A crawl.log line over CRAWL_TAIL_LINE_MAX (written behind the log's
 * back: its writer caps the fields a server sends), raw, after what the
 * log holds (o->log NULL: closed); ended by a newline when whole. */
static void overlong_line(struct out *o, const char *dir, const char *url, int whole)
{
	char path[400];
	if (o->log)
		ck_assert_int_eq(crawl_log_flush(o->log, 1), CRAWL_LOG_OK);
	snprintf(path, sizeof path, "%s/crawl.log", dir);
	FILE *f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "2023-11-14T22:13:20.000Z 200 12 %s - 1 text/", url);
	for (size_t i = 0; i < CRAWL_TAIL_LINE_MAX + 4096; i++)
		fputc('x', f);
	fputs(" 127.0.0.2 -", f);
	if (whole)
		fputc('\n', f);
	ck_assert_int_eq(fclose(f), 0);
}

/* An overlong line is passed over, counted, with its record: the lines
 * after it are still the tail's (issue 30), up to a last line torn by the
 * crash. */
START_TEST(tail_long_line)
{
	char dir[256], err[256];
	struct crawl_config cfg;
	struct crawl_tail_pos pos;
	struct crawl_tail *t;
	const struct crawl_tail_entry *e;
	struct out o;
	rig_tempdir(dir, sizeof dir);
	ck_assert_int_eq(crawl_config_default(&cfg), 0);
	open_outputs(dir, &cfg, &o);
	checkpoint(&o, &pos);
	fetch(&o, "http://a.test/a", 200, "text/plain", "the first", 0, NULL, 1);
	write_records(&o, "http://a.test/long", 200, "text/plain", "long, stored");
	overlong_line(&o, dir, "http://a.test/long", 1);
	fetch(&o, "http://a.test/b", 200, "text/plain", "after a long one", 0, NULL, 1);
	overlong_line(&o, dir, "http://a.test/no-record", 1); /* a line without a record */
	fetch(&o, "http://a.test/c", 200, "text/plain", "after another", 0, NULL, 1);
	ck_assert_int_eq(crawl_log_close(o.log), CRAWL_LOG_OK);
	ck_assert_int_eq(warc_writer_close(o.warc), WARC_OK);
	o.log = NULL;
	overlong_line(&o, dir, "http://a.test/torn", 0);
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 1u << 20, &t, err, sizeof err), 0);
	body_is(next(t, "http://a.test/a"), "the first");
	ck_assert_uint_eq(crawl_tail_lines_skipped(t), 0);
	e = next(t, "http://a.test/b");
	body_is(e, "after a long one");
	ck_assert_uint_eq(crawl_tail_lines_skipped(t), 1);
	body_is(next(t, "http://a.test/c"), "after another");
	ck_assert_uint_eq(crawl_tail_lines_skipped(t), 2);
	ck_assert_int_eq(crawl_tail_next(t, &e, err, sizeof err), 0);
	ck_assert_uint_eq(crawl_tail_lines_skipped(t), 2);
	crawl_tail_close(t);
	crawl_config_free(&cfg);
	rig_rmtree(dir);
}
END_TEST

/* The replay's hooks, as crawl_setup.c wires them. */
struct replay_ctx {
	struct rig *r;
	struct rig_sieve *rs;
	struct parse_jobs *pj;
};

static int tail_count(void *ctx, const struct crawl_tail_entry *e, uint32_t *host)
{
	struct replay_ctx *c = ctx;
	if (visit_host_get(c->r->visit, e->url, strlen(e->url), host) != 0)
		return -1;
	return visit_replayed(c->r->visit, *host, e);
}

static int tail_submit(void *ctx, struct crawl_job *j)
{
	struct replay_ctx *c = ctx;
	return parse_jobs_try_submit(c->pj, j);
}

static void tail_drain(void *ctx)
{
	struct replay_ctx *c = ctx;
	sieve_path_drain(c->rs->sp, 0);
}

static uint64_t no_pages(void *ctx)
{
	(void)ctx;
	return 0;
}

static void no_pump(void *ctx)
{
	(void)ctx;
}

static void no_fail(void *ctx, int exit_code)
{
	(void)ctx;
	ck_abort_msg("the source failed: %d", exit_code);
}

static int no_take(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
                   uint32_t depth)
{
	(void)ctx;
	(void)via;
	(void)via_len;
	(void)depth;
	ck_abort_msg("a URL taken past the sieve path: %.*s", (int)len, url);
	return 0;
}

START_TEST(tail_replay_into_visit)
{
	struct rig r;
	struct rig_sieve rs;
	struct crawl_tail_pos pos;
	struct crawl_tail_stats ts;
	struct crawl_writer *w;
	struct crawl_source *source;
	struct parse_jobs *pj;
	struct scope *scope;
	static const char *const domains[] = { "a.test" };
	rig_config(&r);
	free(r.cfg.output.dir);
	r.cfg.output.dir = strdup(r.dir);
	r.cfg.crawl.quiet = 1;
	r.cfg.parse.threads = 1;
	r.cfg.link_meta_memory = 64u * 1024u;
	r.cfg.scope.domains = domains;
	r.cfg.scope.n_domains = 1;
	write_crawl(r.dir, &r.cfg, &pos);
	rig_open(&r, 0);
	/* what the checkpoint's frontier held of them */
	uint32_t a = rig_add(&r, "http://a.test/");
	rig_add(&r, "http://a.test/old-copy");
	rig_add(&r, "http://a.test/new");
	/* the pieces the replay feeds, as crawl_setup.c opens them */
	rig_sieve_open_in(&rs, r.dir, &r.cfg);
	ck_assert_int_eq(scope_create(&r.cfg.scope, &scope), SCOPE_ERR_OK);
	struct crawl_writer_parts wp = {
		.output = &r.cfg.output, .queue_cap = 64, .io = rs.io, .wake = no_pump
	};
	ck_assert_int_eq(crawl_writer_open(&wp, &w), 0);
	struct crawl_source_config sc = {
		.cluster = &r.cfg.cluster,
		.politeness = &r.cfg.politeness,
		.max_url_len = r.cfg.scope.max_url_len,
	};
	struct crawl_source_parts sps = {
		.frontier = r.frontier,
		.pol = r.pol,
		.sp = rs.sp,
		.pages_started = no_pages,
		.pump = no_pump,
		.wake = no_pump,
		.fail = no_fail,
		.take = no_take,
	};
	ck_assert_int_eq(crawl_source_open(&sc, &sps, &source), 0);
	struct parse_jobs_parts pp = { .parse = &r.cfg.parse,
		                       .links = &r.cfg.links,
		                       .url = &r.cfg.url,
		                       .crawl = &r.cfg.crawl,
		                       .fetch = &r.cfg.fetch,
		                       .scope = scope,
		                       .source = source,
		                       .sp = rs.sp,
		                       .writer = w,
		                       .wake = no_pump };
	ck_assert_int_eq(parse_jobs_create(&pp, &pj), 0);
	struct replay_ctx rc = { .r = &r, .rs = &rs, .pj = pj };
	struct crawl_tail_replay_parts rp = {
		.output = &r.cfg.output,
		.crawl = &r.cfg.crawl,
		.fetch = &r.cfg.fetch,
		.done = r.done,
		.hooks = { .ctx = &rc,
		           .count = tail_count,
		           .submit = tail_submit,
		           .drain = tail_drain },
	};
	ck_assert_int_eq(crawl_tail_replay(&rp, &pos, &ts), 0);
	/* replayed: robots.txt, /, /copy, /missing, /moved, /down, /after;
	 * to fetch again: the HTML pages without a payload (/lost,
	 * /old-copy, /torn) */
	ck_assert_uint_eq(ts.replayed, 7);
	ck_assert_uint_eq(ts.again, 3);
	ck_assert_uint_eq(done_set_count(r.done), 6);
	ck_assert_uint_eq(rig_stats(&r)->requests, 7);
	ck_assert_uint_eq(rig_stats(&r)->status[404], 1);
	ck_assert_uint_eq(rig_stats(&r)->fetch_errors[FETCH_ERR_CONNECT], 1);
	/* the links of the replayed page and the redirect's target reach the
	 * sieve as on a live crawl */
	parse_jobs_destroy(pj);
	rig_sieve_flush(&rs);
	ck_assert(rig_sieve_got(&rs, "http://a.test/linked"));
	ck_assert(rig_sieve_got(&rs, "http://a.test/target"));
	/* the visit: robots.txt known from the tail, / fetched already */
	rig_first_visit(&r, a, "127.0.0.2", NULL);
	ck_assert_uint_eq(r.nfetch, 1);
	ck_assert_str_eq(r.fetch[0].url, "http://a.test/old-copy");
	ck_assert_uint_eq(rig_stats(&r)->tail_skipped, 1);
	rig_answer(&r, 0, 200, "text/html", OLD_BODY, -1, NULL);
	ck_assert_uint_eq(r.nfetch, 2);
	ck_assert_str_eq(r.fetch[1].url, "http://a.test/new");
	rig_answer(&r, 1, 200, "text/html", "<p>new</p>", -1, NULL);
	ck_assert_uint_eq(r.nfetch, 2);
	crawl_writer_close(w);
	crawl_writer_destroy(w);
	rig_sieve_close(&rs);
	crawl_source_close(source);
	scope_destroy(scope);
	r.cfg.scope.domains = NULL;
	r.cfg.scope.n_domains = 0;
	rig_close(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loop_tail");
	TCase *tc = tcase_create("tail");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, tail_entries);
	tcase_add_test(tc, tail_long_line);
	tcase_add_test(tc, tail_replay_into_visit);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
