/* Tests of the output-folder lock (outdir_lock.h), WARC tail repair
 * (warc_repair.h), the tail reader (crawl_tail.h) and the done set
 * (done_set.h): the pieces a resumed crawl stands on. */
#include "crawler/crawl_tail.h"
#include "crawler/store/done_set.h"
#include "crawler/store/outdir_lock.h"
#include "crawler/store/warc.h"
#include "crawler/store/warc_repair.h"
#include "frontier/base/recfile.h"

#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static char *make_tmpdir(void)
{
	char *d = strdup("/tmp/resume-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	struct dirent *e;
	char p[4096];
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

/* A child that takes the lock, reports on a pipe, then waits to be killed
 * (or releases and exits when release is set). */
static pid_t spawn_holder(const char *dir, int release)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		struct outdir_lock *lock;
		pid_t owner;
		enum outdir_lock_result r = outdir_lock_acquire(dir, &lock, &owner, NULL, 0);
		char c = r == OUTDIR_LOCK_OK ? 'y' : 'n';
		if (write(fds[1], &c, 1) != 1)
			_exit(2);
		if (release) {
			outdir_lock_release(lock);
			_exit(0);
		}
		for (;;)
			pause();
	}
	close(fds[1]);
	char c = 0;
	ck_assert_int_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	ck_assert_int_eq(c, 'y');
	return pid;
}

START_TEST(lock_excludes_live_owner_and_takes_over_dead_one)
{
	char *dir = make_tmpdir();
	pid_t child = spawn_holder(dir, 0);
	struct outdir_lock *lock = NULL;
	pid_t owner = 0;
	char err[512];

	ck_assert_int_eq(outdir_lock_acquire(dir, &lock, &owner, err, sizeof err),
	                 OUTDIR_LOCK_BUSY);
	ck_assert_ptr_null(lock);
	ck_assert_int_eq(owner, child);
	ck_assert_ptr_nonnull(strstr(err, "in use by process"));

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	ck_assert_int_eq(outdir_lock_acquire(dir, &lock, &owner, err, sizeof err),
	                 OUTDIR_LOCK_STALE);
	ck_assert_ptr_nonnull(lock);
	ck_assert_int_eq(owner, child);
	ck_assert_ptr_nonnull(strstr(err, "taking over"));

	/* While we hold it, a second acquire in another process fails. */
	pid_t probe = fork();
	if (probe == 0) {
		struct outdir_lock *l2;
		pid_t o2;
		_exit(outdir_lock_acquire(dir, &l2, &o2, NULL, 0) == OUTDIR_LOCK_BUSY &&
		                      o2 == getppid()
		              ? 0
		              : 1);
	}
	int status;
	waitpid(probe, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	outdir_lock_release(lock);
	remove_tree(dir);
	free(dir);
}
END_TEST

START_TEST(lock_released_cleanly_is_not_stale)
{
	char *dir = make_tmpdir();
	pid_t child = spawn_holder(dir, 1);
	waitpid(child, NULL, 0);
	struct outdir_lock *lock = NULL;
	pid_t owner = 0;
	ck_assert_int_eq(outdir_lock_acquire(dir, &lock, &owner, NULL, 0), OUTDIR_LOCK_OK);
	ck_assert_int_eq(owner, 0);
	outdir_lock_release(lock);
	char p[4096];
	snprintf(p, sizeof p, "%s/crawl.lock", dir);
	ck_assert_int_ne(access(p, F_OK), 0);
	remove_tree(dir);
	free(dir);
}
END_TEST

/* Writes a WARC of n fetches with the real writer; returns its path and
 * the offsets where each response record ended (after its member). */
static char *write_warc(const char *dir, int n)
{
	struct warc_config cfg = { .dir = dir, .prefix = "t", .no_revisits = true };
	struct warc_writer *w;
	ck_assert_int_eq(warc_writer_open(&cfg, &w), WARC_OK);
	for (int i = 0; i < n; i++) {
		char url[64], body[3000];
		snprintf(url, sizeof url, "http://h.test/page%d", i);
		for (size_t j = 0; j < sizeof body; j++)
			body[j] = (char)('a' + (j * 7 + (size_t)i) % 26);
		static const char req[] = "GET / HTTP/1.1\r\nHost: h.test\r\n\r\n";
		static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
		struct warc_fetch f = { .url = url,
			                .ip = "127.0.0.1",
			                .date_unix_ms = 1700000000000 + i,
			                .request_headers = req,
			                .request_len = sizeof req - 1,
			                .response_headers = resp,
			                .response_headers_len = sizeof resp - 1,
			                .body = body,
			                .body_len = (size_t)(i * 97) % sizeof body };
		ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
	}
	struct warc_position pos;
	warc_writer_position(w, &pos);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	size_t len = strlen(dir) + strlen(pos.file) + 2;
	char *path = malloc(len);
	snprintf(path, len, "%s/%s", dir, pos.file);
	return path;
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

START_TEST(repair_keeps_a_whole_file)
{
	char *dir = make_tmpdir();
	char *path = write_warc(dir, 20);
	uint64_t size = file_size(path);
	struct warc_repair_result r;
	ck_assert_int_eq(warc_repair_tail(path, 0, &r, NULL, 0), WARC_REPAIR_OK);
	ck_assert_uint_eq(r.records, 1 + 2 * 20); /* warcinfo + request/response pairs */
	ck_assert_uint_eq(r.cut_bytes, 0);
	ck_assert_uint_eq(r.kept_bytes, size);
	ck_assert_ptr_null(r.reason);
	ck_assert_uint_eq(file_size(path), size);
	free(path);
	remove_tree(dir);
	free(dir);
}
END_TEST

/* Truncating the file at every few bytes: the repair cuts back to a record
 * boundary, never past one, and a second repair finds nothing to cut. */
START_TEST(repair_cuts_any_torn_tail_to_a_record_boundary)
{
	char *dir = make_tmpdir();
	char *path = write_warc(dir, 12);
	uint64_t size = file_size(path);
	/* Record boundaries, from the whole file's repair of successive cuts. */
	FILE *f = fopen(path, "rb");
	unsigned char *orig = malloc(size);
	ck_assert_uint_eq(fread(orig, 1, size, f), size);
	fclose(f);

	uint64_t prev_kept = 0, prev_records = 0;
	for (uint64_t cut = 0; cut <= size; cut = cut + 37 > size && cut < size ? size : cut + 37) {
		f = fopen(path, "wb");
		ck_assert_uint_eq(fwrite(orig, 1, cut, f), cut);
		fclose(f);
		struct warc_repair_result r;
		ck_assert_int_eq(warc_repair_tail(path, 0, &r, NULL, 0), WARC_REPAIR_OK);
		ck_assert_uint_le(r.kept_bytes, cut);
		ck_assert_uint_eq(file_size(path), r.kept_bytes);
		ck_assert_uint_eq(r.kept_bytes + r.cut_bytes, cut);
		ck_assert_uint_ge(r.kept_bytes, prev_kept); /* monotone in the cut */
		ck_assert_uint_ge(r.records, prev_records);
		prev_kept = r.kept_bytes;
		prev_records = r.records;
		struct warc_repair_result again;
		ck_assert_int_eq(warc_repair_tail(path, 0, &again, NULL, 0), WARC_REPAIR_OK);
		ck_assert_uint_eq(again.cut_bytes, 0);
		ck_assert_uint_eq(again.records, r.records);
	}
	ck_assert_uint_eq(prev_records, 1 + 2 * 12); /* the last cut is the whole file */
	ck_assert_uint_eq(prev_kept, size);
	free(orig);
	free(path);
	remove_tree(dir);
	free(dir);
}
END_TEST

static void append_gzip_member(const char *path, const char *text, size_t keep)
{
	unsigned char out[4096];
	z_stream z;
	memset(&z, 0, sizeof z);
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	z.next_in = (unsigned char *)(uintptr_t)text;
	z.avail_in = (uInt)strlen(text);
	z.next_out = out;
	z.avail_out = sizeof out;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t n = sizeof out - z.avail_out;
	deflateEnd(&z);
	FILE *f = fopen(path, "ab");
	ck_assert_uint_eq(fwrite(out, 1, keep < n ? keep : n, f), keep < n ? keep : n);
	fclose(f);
}

START_TEST(repair_rejects_members_that_are_not_whole_records)
{
	char *dir = make_tmpdir();
	char *path = write_warc(dir, 3);
	uint64_t size = file_size(path);
	struct warc_repair_result r;

	/* A gzip member whose record is shorter than its Content-Length. */
	append_gzip_member(path, "WARC/1.1\r\nContent-Length: 100\r\n\r\nshort\r\n\r\n",
	                   (size_t)-1);
	ck_assert_int_eq(warc_repair_tail(path, 1, &r, NULL, 0), WARC_REPAIR_OK);
	ck_assert_uint_eq(r.kept_bytes, size);
	ck_assert_ptr_nonnull(r.reason);
	ck_assert_ptr_nonnull(strstr(r.reason, "Content-Length"));
	ck_assert_uint_gt(file_size(path), size); /* dry run: untouched */
	ck_assert_int_eq(warc_repair_tail(path, 0, &r, NULL, 0), WARC_REPAIR_OK);
	ck_assert_uint_eq(file_size(path), size);

	/* A member that is not a WARC record at all. */
	append_gzip_member(path, "hello, not a record", (size_t)-1);
	ck_assert_int_eq(warc_repair_tail(path, 0, &r, NULL, 0), WARC_REPAIR_OK);
	ck_assert_uint_eq(file_size(path), size);
	ck_assert_uint_eq(r.records, 1 + 2 * 3);

	/* Garbage that is not gzip. */
	FILE *f = fopen(path, "ab");
	fputs("garbage garbage garbage", f);
	fclose(f);
	ck_assert_int_eq(warc_repair_tail(path, 0, &r, NULL, 0), WARC_REPAIR_OK);
	ck_assert_uint_eq(file_size(path), size);
	ck_assert_str_eq(r.reason, "corrupt gzip member");

	char err[256];
	ck_assert_int_eq(warc_repair_tail("/nonexistent/x.warc.gz", 0, &r, err, sizeof err),
	                 WARC_REPAIR_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.warc.gz"));
	free(path);
	remove_tree(dir);
	free(dir);
}
END_TEST

/* ---- the tail reader, on a hand-made WARC and log ---- */

/* One WARC record as its own gzip member, cut to keep bytes; digest: its
 * WARC-Payload-Digest, or NULL. */
static void append_record(const char *path, const char *type, const char *uri, const char *digest,
                          const char *block, size_t keep)
{
	char text[3000], fields[512] = "";
	if (uri)
		snprintf(fields, sizeof fields, "WARC-Target-URI: %s\r\n", uri);
	if (digest)
		snprintf(fields + strlen(fields), sizeof fields - strlen(fields),
		         "WARC-Payload-Digest: %s\r\n", digest);
	int n = snprintf(text, sizeof text,
	                 "WARC/1.1\r\nWARC-Type: %s\r\n%sContent-Length: %zu\r\n\r\n%s\r\n\r\n",
	                 type, fields, strlen(block), block);
	ck_assert_int_lt(n, (int)sizeof text);
	append_gzip_member(path, text, keep);
}

/* A response, or with http NULL a revisit (request record first, as the
 * writer does). */
static void append_fetch(const char *path, const char *uri, const char *http, const char *digest,
                         size_t keep)
{
	append_record(path, "request", uri, NULL, "GET / HTTP/1.1\r\nHost: h.test\r\n\r\n",
	              (size_t)-1);
	append_record(path, http ? "response" : "revisit", uri, digest,
	              http ? http : "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n", keep);
}

static void append_line(const char *path, const char *status, const char *url, const char *ct,
                        const char *redirect, const char *flags, int newline)
{
	FILE *f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
	        "2026-11-27T04:00:00.000Z\t%s\t10\t%s\thttp://h.test/\\tvia\t2\t%s\t5\t127.0.0.1\t-"
	        "\t%s\t%s\t0%s",
	        status, url, ct, redirect, flags, newline ? "\n" : "");
	fclose(f);
}

static const char PAGE_B[] = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                             "Content-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
                             "content-encoding:  br \r\n\r\n"
                             "5\r\n<a hr\r\n8;ext=1\r\nef=/x>b<\r\n0\r\n\r\n";

/* What the writer would have left after a crash: a checkpoint's cut in
 * the first WARC file and the log; after it, lines with and without
 * records, an attempt requeued, a revisit, a robots.txt answer in the next file, a record torn
 * at the end and a log line torn after it. Fills pos. */
static void write_tail(const char *dir, struct crawl_tail_pos *pos)
{
	char w1[4200], w2[4200], log[4200];
	snprintf(w1, sizeof w1, "%s/crawl-20261127040000-00000.warc.gz", dir);
	snprintf(w2, sizeof w2, "%s/crawl-20261127040001-00000.warc.gz", dir);
	snprintf(log, sizeof log, "%s/crawl.log", dir);
	append_record(w1, "warcinfo", NULL, NULL, "software: test", (size_t)-1);
	append_fetch(w1, "http://h.test/a", "HTTP/1.1 200 OK\r\n\r\nA", "sha1:A", (size_t)-1);
	append_line(log, "200", "http://h.test/a", "text/html", "-", "-", 1);
	memset(pos, 0, sizeof *pos);
	snprintf(pos->warc_file, sizeof pos->warc_file, "crawl-20261127040000-00000.warc.gz");
	pos->warc_offset = file_size(w1);
	pos->log_offset = file_size(log);
	pos->known = 1;
	/* after the cut */
	append_fetch(w1, "http://h.test/b", PAGE_B, "sha1:B", (size_t)-1);
	append_line(log, "200", "http://h.test/b", "text/html", "-", "-", 1);
	append_line(log, "-28", "http://h.test/timeout", "-", "-", "-", 1);      /* no response */
	append_line(log, "-7", "http://h.test/again", "-", "-", "requeued", 1);  /* an attempt */
	append_line(log, "200", "http://h.test/lost", "text/html", "-", "-", 1); /* record lost */
	append_fetch(w1, "http://h.test/c", NULL, "sha1:B", (size_t)-1);         /* as b's */
	append_line(log, "200", "http://h.test/c", "text/html", "-", "revisit", 1);
	append_fetch(w1, "http://h.test/c2", NULL, "sha1:A", (size_t)-1); /* before the cut */
	append_line(log, "200", "http://h.test/c2", "text/html", "-", "revisit", 1);
	append_fetch(w1, "http://h.test/r", "HTTP/1.1 301 Moved\r\nLocation: /b\r\n\r\n", NULL,
	             (size_t)-1);
	append_line(log, "301", "http://h.test/r", "-", "http://h.test/b", "redirect", 1);
	append_record(w2, "warcinfo", NULL, NULL, "software: test", (size_t)-1);
	append_fetch(w2, "http://h.test/robots.txt", "HTTP/1.1 200 OK\r\n\r\nUser-agent: *\n", NULL,
	             (size_t)-1);
	append_line(log, "200", "http://h.test/robots.txt", "text/plain", "-", "robots", 1);
	append_fetch(w2, "http://h.test/e", "HTTP/1.1 200 OK\r\n\r\n<html>e</html>", NULL,
	             40); /* torn */
	append_line(log, "200", "http://h.test/e", "text/html", "-", "-", 1);
	append_line(log, "200", "http://h.test/f", "text/html", "-", "-", 0); /* torn line */
}

static const struct crawl_tail_entry *tail_next(struct crawl_tail *t)
{
	const struct crawl_tail_entry *e = NULL;
	char err[256];
	ck_assert_int_eq(crawl_tail_next(t, &e, err, sizeof err), 1);
	return e;
}

START_TEST(tail_pairs_log_lines_with_their_records)
{
	char *dir = make_tmpdir();
	struct crawl_tail_pos pos;
	struct crawl_tail *t = NULL;
	char err[256];
	write_tail(dir, &pos);
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 1 << 20, &t, err, sizeof err), 0);
	const struct crawl_tail_entry *e = tail_next(t);
	/* chunked undone, Content-Encoding lines joined in order */
	ck_assert_str_eq(e->url, "http://h.test/b");
	ck_assert_str_eq(e->via, "http://h.test/\tvia");
	ck_assert_str_eq(e->content_type, "text/html");
	ck_assert_int_eq(e->status, 200);
	ck_assert_uint_eq(e->depth, 2);
	ck_assert_ptr_nonnull(e->body);
	ck_assert_uint_eq(e->body_len, 13);
	ck_assert_int_eq(memcmp(e->body, "<a href=/x>b<", 13), 0);
	ck_assert_str_eq(e->content_encoding, "gzip, br");
	e = tail_next(t);
	ck_assert_str_eq(e->url, "http://h.test/timeout");
	ck_assert_int_eq(e->status, -28);
	ck_assert_ptr_null(e->body);
	ck_assert_int_eq(e->requeued, 0);
	e = tail_next(t); /* an attempt whose request went again: never replayed */
	ck_assert_str_eq(e->url, "http://h.test/again");
	ck_assert_int_eq(e->requeued, 1);
	ck_assert_ptr_null(e->body);
	e = tail_next(t); /* its record is missing: the next one is not its */
	ck_assert_str_eq(e->url, "http://h.test/lost");
	ck_assert_ptr_null(e->body);
	e = tail_next(t); /* a revisit of b's payload, earlier in the tail */
	ck_assert_str_eq(e->url, "http://h.test/c");
	ck_assert_int_eq(e->revisit, 1);
	ck_assert_ptr_nonnull(e->body);
	ck_assert_uint_eq(e->body_len, 13);
	ck_assert_int_eq(memcmp(e->body, "<a href=/x>b<", 13), 0);
	ck_assert_ptr_null(e->content_encoding);
	e = tail_next(t); /* of a payload from before the cut: none */
	ck_assert_str_eq(e->url, "http://h.test/c2");
	ck_assert_int_eq(e->revisit, 1);
	ck_assert_ptr_null(e->body);
	e = tail_next(t);
	ck_assert_str_eq(e->url, "http://h.test/r");
	ck_assert_str_eq(e->redirect, "http://h.test/b");
	ck_assert_ptr_nonnull(e->body);
	ck_assert_uint_eq(e->body_len, 0);
	e = tail_next(t); /* in the next file */
	ck_assert_int_eq(e->robots, 1);
	ck_assert_uint_eq(e->body_len, 14);
	ck_assert_int_eq(memcmp(e->body, "User-agent: *\n", 14), 0);
	ck_assert_ptr_null(e->content_encoding);
	e = tail_next(t); /* its record is torn: no payload */
	ck_assert_str_eq(e->url, "http://h.test/e");
	ck_assert_ptr_null(e->body);
	/* the torn last line is not in the tail */
	ck_assert_int_eq(crawl_tail_next(t, &e, err, sizeof err), 0);
	crawl_tail_close(t);
	remove_tree(dir);
	free(dir);
}
END_TEST

START_TEST(tail_without_records_or_position)
{
	char *dir = make_tmpdir();
	struct crawl_tail_pos pos;
	struct crawl_tail *t = NULL;
	const struct crawl_tail_entry *e;
	char err[256];
	write_tail(dir, &pos);
	/* WARC output off: lines only */
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 0, 1 << 20, &t, err, sizeof err), 0);
	e = tail_next(t);
	ck_assert_str_eq(e->url, "http://h.test/b");
	ck_assert_ptr_null(e->body);
	crawl_tail_close(t);
	/* a record larger than the cap ends the WARC side, not the lines */
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 64, &t, err, sizeof err), 0);
	e = tail_next(t);
	ck_assert_str_eq(e->url, "http://h.test/b");
	ck_assert_ptr_null(e->body);
	crawl_tail_close(t);
	/* a checkpoint that did not say where the log stood, or a log shorter
	 * than the cut: no tail */
	pos.known = 0;
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 1 << 20, &t, err, sizeof err), 1);
	pos.known = 1;
	pos.log_offset = 1u << 30;
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 1 << 20, &t, err, sizeof err), 1);
	/* no checkpoint: everything is the tail, from the first line */
	memset(&pos, 0, sizeof pos);
	pos.known = 1;
	ck_assert_int_eq(crawl_tail_open(dir, &pos, 1, 1 << 20, &t, err, sizeof err), 0);
	e = tail_next(t);
	ck_assert_str_eq(e->url, "http://h.test/a");
	ck_assert_uint_eq(e->body_len, 1);
	ck_assert_int_eq(memcmp(e->body, "A", 1), 0);
	crawl_tail_close(t);
	remove_tree(dir);
	free(dir);
}
END_TEST

/* ---- the done set, against a reference list ---- */

START_TEST(done_set_matches_a_reference_and_round_trips)
{
	enum { N = 5000 };
	static char url[N][32];
	static int in[N];
	struct done_set *s = done_set_create();
	ck_assert_ptr_nonnull(s);
	unsigned x = 12345;
	size_t count = 0;
	for (int i = 0; i < N; i++)
		snprintf(url[i], sizeof url[i], "http://h%d.test/%d", i % 37, i);
	for (int step = 0; step < 40000; step++) {
		x = x * 1103515245u + 12345u;
		int i = (int)((x >> 8) % N);
		if ((x >> 4) & 1) {
			ck_assert_int_eq(done_set_add(s, url[i], strlen(url[i])), 0);
			count += !in[i];
			in[i] = 1;
		} else {
			ck_assert_int_eq(done_set_take(s, url[i], strlen(url[i])), in[i]);
			count -= in[i];
			in[i] = 0;
		}
		ck_assert_uint_eq(done_set_count(s), count);
	}
	char *dir = make_tmpdir(), path[4200];
	snprintf(path, sizeof path, "%s/set", dir);
	struct recfile_writer *w;
	ck_assert_int_eq(recfile_writer_create(path, "DONESET1", &w), RECFILE_OK);
	done_set_save(s, w);
	ck_assert_int_eq(recfile_writer_close(w, 0), RECFILE_OK);
	struct done_set *r = done_set_create();
	struct recfile_reader *rd;
	ck_assert_int_eq(recfile_reader_open(path, "DONESET1", &rd), RECFILE_OK);
	ck_assert_int_eq(done_set_load(r, rd), 0);
	ck_assert(recfile_reader_at_end(rd));
	recfile_reader_close(rd);
	ck_assert_uint_eq(done_set_count(r), count);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(done_set_take(r, url[i], strlen(url[i])), in[i]);
	ck_assert_uint_eq(done_set_count(r), 0);
	ck_assert_int_eq(done_set_take(NULL, "x", 1), 0);
	done_set_destroy(s);
	done_set_destroy(r);
	remove_tree(dir);
	free(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("resume_parts");
	TCase *tc = tcase_create("all");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lock_excludes_live_owner_and_takes_over_dead_one);
	tcase_add_test(tc, lock_released_cleanly_is_not_stale);
	tcase_add_test(tc, repair_keeps_a_whole_file);
	tcase_add_test(tc, repair_cuts_any_torn_tail_to_a_record_boundary);
	tcase_add_test(tc, repair_rejects_members_that_are_not_whole_records);
	tcase_add_test(tc, tail_pairs_log_lines_with_their_records);
	tcase_add_test(tc, tail_without_records_or_position);
	tcase_add_test(tc, done_set_matches_a_reference_and_round_trips);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
