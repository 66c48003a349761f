/*
 * test_writer.c: the writer (crawler/crawl_writer.h) opened directly: a
 * job's WARC record reaches the kernel before its crawl.log line, so that
 * the line is the commit point a resume trusts (crawl_tail.h). The test
 * watches every write(2) the process makes: each time crawl.log is written,
 * every line in that write must already have its response record, whole,
 * in the WARC files on disk (read back independently, loop_rig.h).
 * And a job to parse has its record on disk before the parse threads get
 * it (the `recorded` hook), and the lines come out in record order
 * whatever order the parse threads hand the jobs back in.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "crawler/crawl_writer.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/io_stall.h"
#include "frontier/base/clock.h"
#include "loop_rig.h"

/* What the watch saw (the writer thread writes, the test reads after). */
static struct {
	atomic_int armed;
	dev_t dev;
	ino_t ino;
	char dir[256];
	atomic_uint lines, bad;
	char first_bad[512];
} watch;

/* The body of url's response: a marker only its response record holds. */
static void body_of(const char *url, char *out, size_t cap)
{
	snprintf(out, cap, "<p>the body of %s, stored whole</p>\n", url);
}

/* One crawl.log line about to reach the kernel: its record must be there. */
static void check_line(const char *line, size_t len)
{
	const char *f[CRAWL_LOG_FIELDS];
	size_t fl[CRAWL_LOG_FIELDS];
	char url[400], body[600];
	if (len == 0 || line[0] == '#' || crawl_log_split(line, len, f, fl) != CRAWL_LOG_FIELDS ||
	    f[CRAWL_LOG_F_STATUS][0] == '-')
		return; /* a header, or a fetch without a response (no record) */
	snprintf(url, sizeof url, "%.*s", (int)fl[CRAWL_LOG_F_URL], f[CRAWL_LOG_F_URL]);
	body_of(url, body, sizeof body);
	size_t n;
	char *text = rig_warc_text(watch.dir, &n);
	int ok = memmem(text, n, body, strlen(body)) != NULL;
	free(text);
	atomic_fetch_add(&watch.lines, 1);
	if (!ok && atomic_fetch_add(&watch.bad, 1) == 0)
		snprintf(watch.first_bad, sizeof watch.first_bad, "%s", url);
}

/* Every write(2) of the process comes here first (the test binary's own
 * definition takes the place of libc's). */
ssize_t write(int fd, const void *buf, size_t n)
{
	struct stat st;
	if (atomic_load(&watch.armed) && fstat(fd, &st) == 0 && st.st_dev == watch.dev &&
	    st.st_ino == watch.ino) {
		const char *p = buf, *end = p + n;
		while (p < end) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
			check_line(p, l);
			p += l + 1;
		}
	}
	return syscall(SYS_write, fd, buf, n);
}

/* A fetch of url as the loop hands it over (status 0: a failed connect). */
static struct crawl_job *job(const char *url, long status)
{
	char body[600];
	struct crawl_job *j = calloc(1, sizeof *j);
	struct fetch_result *res = calloc(1, sizeof *res);
	ck_assert(j && res);
	j->res = res;
	j->via = strdup("http://a.test/");
	j->depth = 1;
	res->url = strdup(url);
	snprintf(res->ip, sizeof res->ip, "127.0.0.2");
	res->start_unix_ms = res->end_unix_ms = 1700000000000;
	if (status == 0) {
		res->error = FETCH_ERR_CONNECT;
		return j;
	}
	res->status = status;
	body_of(url, body, sizeof body);
	rig_set_buf(&res->request_headers, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
	rig_set_buf(&res->response_headers, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n");
	rig_set_buf(&res->body, body);
	res->content_type = strdup("text/html");
	return j;
}

static void noop_wake(void *ctx)
{
	(void)ctx;
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* A writer on a fresh folder, its crawl.log watched. */
struct writer_rig {
	char dir[256], log[400];
	struct crawl_config cfg;
	struct warc_config wc;
	struct io_stall *io;
	struct crawl_writer *w;
};

static void writer_rig_open(struct writer_rig *r, int (*recorded)(void *, struct crawl_job *))
{
	struct stat st;
	rig_tempdir(r->dir, sizeof r->dir);
	snprintf(watch.dir, sizeof watch.dir, "%s", r->dir);
	snprintf(r->log, sizeof r->log, "%s/crawl.log", r->dir);
	ck_assert_int_eq(crawl_config_default(&r->cfg), 0);
	free(r->cfg.output.dir);
	r->cfg.output.dir = strdup(r->dir);
	r->wc = r->cfg.warc;
	r->wc.dir = r->dir;
	r->io = io_stall_create(100);
	ck_assert_ptr_nonnull(r->io);
	struct crawl_writer_parts parts = {
		.output = &r->cfg.output,
		.warc_config = &r->wc,
		.queue_cap = 64,
		.io = r->io,
		.wake = noop_wake,
		.recorded = recorded,
	};
	ck_assert_int_eq(crawl_writer_open(&parts, &r->w), 0);
	ck_assert_int_eq(stat(r->log, &st), 0);
	watch.dev = st.st_dev;
	watch.ino = st.st_ino;
	atomic_store(&watch.lines, 0);
	atomic_store(&watch.bad, 0);
	atomic_store(&watch.armed, 1);
}

/* A checkpoint's barrier: everything before it written, no error; the
 * crawl log's size it reports. */
static uint64_t writer_rig_sync(struct writer_rig *r)
{
	struct warc_position pos;
	struct crawl_writer_stats ws;
	uint64_t log_size, end = monotonic_us() + 10000000u;
	int rc;
	ck_assert_int_eq(crawl_writer_request_sync(r->w, 1), 0);
	while (!crawl_writer_synced(r->w, 1, &rc, &pos, &log_size)) {
		ck_assert_msg(monotonic_us() < end, "the barrier was never reached");
		usleep(1000);
	}
	ck_assert_int_eq(rc, 0);
	crawl_writer_stats(r->w, &ws);
	ck_assert_uint_eq(ws.errors, 0);
	return log_size;
}

/* Closes the writer: no crawl.log write came before its record. */
static void writer_rig_close(struct writer_rig *r)
{
	crawl_writer_close(r->w);
	crawl_writer_destroy(r->w);
	atomic_store(&watch.armed, 0);
	ck_assert_msg(atomic_load(&watch.bad) == 0,
	              "%u lines on disk before their record, first %s", atomic_load(&watch.bad),
	              watch.first_bad);
	io_stall_destroy(r->io);
}

static void writer_rig_free(struct writer_rig *r)
{
	crawl_config_free(&r->cfg);
	rig_rmtree(r->dir);
}

START_TEST(writer_record_before_line)
{
	char url[64];
	struct writer_rig r;
	writer_rig_open(&r, NULL);
	/* one at a time, each written out as the queue runs empty */
	unsigned want = 0;
	for (int i = 0; i < 12; i++) {
		uint64_t before = file_size(r.log), end = monotonic_us() + 10000000u;
		snprintf(url, sizeof url, "http://a.test/one/%d", i);
		crawl_writer_push(r.w, job(url, i == 5 ? 0 : 200));
		want += i != 5;
		while (file_size(r.log) == before) {
			ck_assert_msg(monotonic_us() < end, "no crawl.log line for %s", url);
			usleep(1000);
		}
	}
	/* a burst: lines buffered, written in runs */
	for (int i = 0; i < 40; i++, want++) {
		snprintf(url, sizeof url, "http://a.test/burst/%d", i);
		crawl_writer_push(r.w, job(url, 200));
	}
	ck_assert_uint_eq(writer_rig_sync(&r), file_size(r.log));
	writer_rig_close(&r);
	ck_assert_uint_eq(atomic_load(&watch.lines), want);
	writer_rig_free(&r);
}
END_TEST

/* The `recorded` hook as the parse threads' stand-in: each job to parse
 * must have its record on disk by now; it is kept (taken), to be handed
 * back later, out of order. */
static struct {
	pthread_mutex_t mu;
	struct crawl_job *held[64];
	int n, unrecorded;
} parse_stand_in = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int hold_for_parse(void *ctx, struct crawl_job *j)
{
	char body[600];
	size_t n;
	(void)ctx;
	if (!j->parse)
		return -1;
	body_of(j->res->url, body, sizeof body);
	char *text = rig_warc_text(watch.dir, &n);
	int on_disk = memmem(text, n, body, strlen(body)) != NULL;
	free(text);
	pthread_mutex_lock(&parse_stand_in.mu);
	parse_stand_in.unrecorded += !on_disk || !j->recorded;
	parse_stand_in.held[parse_stand_in.n++] = j;
	pthread_mutex_unlock(&parse_stand_in.mu);
	return 0;
}

static int held_count(void)
{
	pthread_mutex_lock(&parse_stand_in.mu);
	int n = parse_stand_in.n;
	pthread_mutex_unlock(&parse_stand_in.mu);
	return n;
}

/* The URLs of crawl.log's lines, in order, one per line in out. */
static void log_urls(const char *log, char *out, size_t cap)
{
	FILE *f = fopen(log, "r");
	char line[2048];
	const char *fl[CRAWL_LOG_FIELDS];
	size_t fll[CRAWL_LOG_FIELDS], used = 0;
	ck_assert_ptr_nonnull(f);
	out[0] = 0;
	while (fgets(line, sizeof line, f))
		if (line[0] != '#' &&
		    crawl_log_split(line, strcspn(line, "\n"), fl, fll) == CRAWL_LOG_FIELDS)
			used += (size_t)snprintf(out + used, cap - used, "%.*s\n",
			                         (int)fll[CRAWL_LOG_F_URL], fl[CRAWL_LOG_F_URL]);
	fclose(f);
}

START_TEST(writer_record_before_parse)
{
	char url[64], want[4096], got[4096];
	struct writer_rig r;
	writer_rig_open(&r, hold_for_parse);
	/* pages to parse and images (line at once) mixed; one page is lost in
	 * its parse (a teardown's): the lines after it go at the barrier */
	size_t used = 0;
	int to_parse = 0;
	for (int i = 0; i < 20; i++) {
		snprintf(url, sizeof url, "http://a.test/mixed/%d", i);
		struct crawl_job *j = job(url, 200);
		j->parse = i % 3 != 2;
		to_parse += j->parse;
		if (i != 4)
			used += (size_t)snprintf(want + used, sizeof want - used, "%s\n", url);
		crawl_writer_push(r.w, j);
	}
	uint64_t end = monotonic_us() + 10000000u;
	while (held_count() < to_parse) {
		ck_assert_msg(monotonic_us() < end, "the hook had %d of %d jobs", held_count(),
		              to_parse);
		usleep(1000);
	}
	/* no line can go before the first page's parse ends */
	unsigned early = atomic_load(&watch.lines);
	ck_assert_msg(early == 0, "%u lines before the first page's parse ended", early);
	ck_assert_msg(parse_stand_in.unrecorded == 0, "%d jobs to parse before their record",
	              parse_stand_in.unrecorded);
	/* handed back last first; the page of /mixed/4 (held 4th) never */
	for (int i = to_parse - 1; i >= 0; i--)
		if (i == 3)
			crawl_job_free(parse_stand_in.held[i]);
		else
			crawl_writer_push(r.w, parse_stand_in.held[i]);
	writer_rig_sync(&r);
	writer_rig_close(&r);
	log_urls(r.log, got, sizeof got);
	ck_assert_str_eq(got, want);
	writer_rig_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("loop_writer");
	TCase *tc = tcase_create("writer");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, writer_record_before_line);
	tcase_add_test(tc, writer_record_before_parse);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
