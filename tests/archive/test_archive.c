/*
 * Check suite for the archive room: the line sort against qsort (runs and
 * merge passes forced by a tiny buffer), a WARC file's own index completed
 * from its records after each kind of damage (compared with the index the
 * writer made as the records went out), and a WACZ read back with libzip.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "crawler/archive/index.h"
#include "crawler/archive/linesort.h"
#include "crawler/archive/wacz.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/warc.h"
#include "frontier/base/fileio.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/test-archive-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	fileio_remove_tree(dir);
}

/* ---------- the line sort ---------- */

struct collected {
	char **v;
	size_t n;
};

static int collect(void *ctx, const char *line, size_t len)
{
	struct collected *c = ctx;
	c->v[c->n++] = strndup(line, len);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

START_TEST(linesort_matches_qsort)
{
	enum { N = 20000 };
	char tmp[128];
	snprintf(tmp, sizeof tmp, "%s/runs", dir);
	/* 4 KiB of memory: hundreds of runs, so merges in passes of 64 */
	struct linesort *ls = linesort_create(tmp, 4096);
	char **ref = calloc(N, sizeof *ref);
	struct collected got = { calloc(N, sizeof(char *)), 0 };
	unsigned seed = 7;
	for (int i = 0; i < N; i++) {
		char line[64];
		int len = snprintf(line, sizeof line, "com,x)/%u %u", rand_r(&seed) % 500,
		                   rand_r(&seed) % 3);
		if (i % 7 == 0)
			len = snprintf(line, sizeof line, "com,x)/%u",
			               rand_r(&seed) % 500); /* a prefix */
		ref[i] = strdup(line);
		ck_assert_int_eq(linesort_add(ls, line, (size_t)len), 0);
	}
	ck_assert_int_eq(linesort_finish(ls, collect, &got), 0);
	qsort(ref, N, sizeof *ref, cmp_str);
	ck_assert_uint_eq(got.n, N);
	for (int i = 0; i < N; i++)
		ck_assert_str_eq(got.v[i], ref[i]);
	linesort_destroy(ls);
	struct stat st;
	ck_assert_int_ne(stat(tmp, &st), 0); /* the runs are gone */
	/* nothing to sort, and a folder with no WARC file: an empty index */
	struct collected none = { NULL, 0 };
	ls = linesort_create(tmp, 0);
	ck_assert_int_eq(linesort_finish(ls, collect, &none), 0);
	ck_assert_uint_eq(none.n, 0);
	linesort_destroy(ls);
	struct archive_index_options o = { 0 };
	struct archive_index_report rep = { 0 };
	char err[256], path[128];
	ck_assert_int_eq(archive_index_write(dir, &o, &rep, err, sizeof err), 0);
	snprintf(path, sizeof path, "%s/index.cdxj", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	for (int i = 0; i < N; i++) {
		free(ref[i]);
		free(got.v[i]);
	}
	free(ref);
	free(got.v);
}
END_TEST

/* ---------- a crawl-like folder ---------- */

#define FETCHES 40

/* Writes FETCHES fetches (HTML pages with titles, a repeated body: a
 * revisit) into dir with the writer's own index, and a crawl.log; the
 * WARC file's name into warc. */
static void write_folder(char *warc, size_t cap)
{
	struct warc_config wc = { .dir = dir, .cdxj = true };
	struct warc_writer *w = NULL;
	struct crawl_log *log = NULL;
	char path[256];
	ck_assert_int_eq(warc_writer_open(&wc, &w), WARC_OK);
	snprintf(path, sizeof path, "%s/crawl.log", dir);
	ck_assert_int_eq(crawl_log_open(path, &log), CRAWL_LOG_OK);
	for (int i = 0; i < FETCHES; i++) {
		char url[64], body[256], hdr[256];
		snprintf(url, sizeof url, "http://h%d.test/p%d.html", i % 3, i);
		int bl = i == FETCHES - 1
		                 ? snprintf(body, sizeof body, "same")
		                 : snprintf(body, sizeof body,
		                            "<html><head><title> Page\n  %d </title></head>", i);
		int hl = snprintf(hdr, sizeof hdr,
		                  "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
		                  "%d\r\n\r\n",
		                  bl);
		struct warc_fetch f = { .url = url,
			                .date_unix_ms = 1700000000000 + i,
			                .request_headers = "GET / HTTP/1.1\r\n\r\n",
			                .request_len = 18,
			                .response_headers = hdr,
			                .response_headers_len = (size_t)hl,
			                .body = body,
			                .body_len = (size_t)bl };
		ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
		if (i == FETCHES - 2) /* the same body again: a revisit */
			ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
		struct crawl_log_entry e = { .timestamp_unix_ms = 1700000000000 + i,
			                     .status = 200,
			                     .url = url,
			                     .depth = i % 4,
			                     .content_type = "text/html" };
		ck_assert_int_eq(crawl_log_write(log, &e), CRAWL_LOG_OK);
	}
	struct warc_position pos;
	warc_writer_position(w, &pos);
	snprintf(warc, cap, "%s", pos.file);
	struct warc_stats st;
	warc_writer_stats(w, &st);
	ck_assert_uint_eq(st.index_lines, FETCHES + 1);
	ck_assert_uint_eq(st.revisits, 1);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	ck_assert_int_eq(crawl_log_close(log), CRAWL_LOG_OK);
}

/* The file as a string (fileio's buffer is not NUL-terminated). */
static char *slurp(const char *path, size_t *len)
{
	char *s = fileio_read_path(path, 1 << 24, len);
	ck_assert_ptr_nonnull(s);
	s = realloc(s, *len + 1);
	ck_assert_ptr_nonnull(s);
	s[*len] = '\0';
	return s;
}

static void index_dir(struct archive_index_report *rep)
{
	struct archive_index_options o = { .memory = 4096 };
	char err[512];
	memset(rep, 0, sizeof *rep);
	ck_assert_msg(archive_index_write(dir, &o, rep, err, sizeof err) == 0, "%s", err);
}

START_TEST(own_index_completed)
{
	char warc[256], wpath[512], side[512], path[512];
	struct archive_index_report rep;
	size_t len, l2;
	write_folder(warc, sizeof warc);
	snprintf(wpath, sizeof wpath, "%s/%s", dir, warc);
	ck_assert_int_eq(archive_index_path(wpath, side, sizeof side), 0);
	char *orig = slurp(side, &len);
	/* whole: nothing to do */
	index_dir(&rep);
	ck_assert_uint_eq(rep.lines, FETCHES + 1);
	ck_assert_uint_eq(rep.reindexed + rep.cut_lines + rep.bad_records, 0);
	/* index.cdxj: the same lines, sorted */
	snprintf(path, sizeof path, "%s/index.cdxj", dir);
	char *merged = slurp(path, &l2);
	ck_assert_uint_eq(l2, len);
	const char *prev = "";
	for (char *p = merged, *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		*nl = '\0';
		ck_assert_ptr_nonnull(strstr(orig, p));
		ck_assert_int_lt(strcmp(prev, p), 0);
		prev = p;
	}
	free(merged);
	/* lost: made again from the records */
	unlink(side);
	index_dir(&rep);
	ck_assert_uint_eq(rep.reindexed, FETCHES + 1);
	char *again = slurp(side, &l2);
	ck_assert_uint_eq(l2, len);
	ck_assert(memcmp(again, orig, len) == 0);
	free(again);
	/* torn in its 10th line: that line and the rest made again */
	const char *p = orig;
	for (int k = 0; k < 9; k++)
		p = strchr(p, '\n') + 1;
	ck_assert_int_eq(truncate(side, (off_t)(p - orig) + 20), 0);
	index_dir(&rep);
	ck_assert_uint_eq(rep.cut_lines, 1);
	ck_assert_uint_eq(rep.reindexed, FETCHES + 1 - 9);
	again = slurp(side, &l2);
	ck_assert(l2 == len && memcmp(again, orig, len) == 0);
	free(again);
	/* the WARC file cut inside its last record: that line cut, the record
	 * counted as unreadable */
	struct stat st;
	ck_assert_int_eq(stat(wpath, &st), 0);
	ck_assert_int_eq(truncate(wpath, st.st_size - 10), 0);
	index_dir(&rep);
	ck_assert_uint_eq(rep.cut_lines, 1);
	ck_assert_uint_eq(rep.bad_records, 1);
	ck_assert_uint_eq(rep.lines, FETCHES);
	again = slurp(side, &l2);
	ck_assert(l2 < len && memcmp(again, orig, l2) == 0);
	free(again);
	free(orig);
}
END_TEST

/* ---------- the package ---------- */

static char *zip_text(zip_t *z, const char *name, zip_uint16_t *method)
{
	zip_stat_t st;
	ck_assert_msg(zip_stat(z, name, 0, &st) == 0, "no %s", name);
	*method = st.comp_method;
	zip_file_t *f = zip_fopen(z, name, 0);
	char *buf = calloc(1, st.size + 1);
	ck_assert(zip_fread(f, buf, st.size) == (zip_int64_t)st.size);
	zip_fclose(f);
	return buf;
}

START_TEST(wacz_read_back)
{
	char warc[256], path[512], entry[300], err[512];
	write_folder(warc, sizeof warc);
	struct wacz_options o = { .memory = 4096, .zipnum_lines = 10 };
	struct wacz_report rep = { 0 };
	ck_assert_msg(wacz_write(dir, &o, &rep, err, sizeof err) == 0, "%s", err);
	ck_assert_int_eq(rep.zipnum, 1);
	ck_assert_uint_eq(rep.pages, FETCHES);
	ck_assert_uint_eq(rep.titles, FETCHES - 1); /* "same" has none, nor its revisit */
	snprintf(path, sizeof path, "%s/crawl.wacz", dir);
	int zerr;
	zip_t *z = zip_open(path, ZIP_RDONLY, &zerr);
	ck_assert_ptr_nonnull(z);
	zip_uint16_t m;
	snprintf(entry, sizeof entry, "archive/%s", warc);
	const char *names[] = { entry,
		                "indexes/index.cdx.gz",
		                "indexes/index.idx",
		                "pages/pages.jsonl",
		                "datapackage.json",
		                "datapackage-digest.json" };
	for (size_t i = 0; i < 6; i++) {
		free(zip_text(z, names[i], &m));
		ck_assert_int_eq(m, ZIP_CM_STORE);
	}
	ck_assert_int_eq(zip_get_num_entries(z, 0), 6);
	char *pages = zip_text(z, "pages/pages.jsonl", &m);
	ck_assert_ptr_nonnull(strstr(pages, "\"url\":\"http://h0.test/p0.html\","
	                                    "\"ts\":\"2023-11-14T22:13:20.000Z\","
	                                    "\"title\":\"Page 0\",\"depth\":0,\"seed\":true}"));
	/* in order of depth */
	int last = -1;
	for (const char *p = strstr(pages, "\"depth\":"); p; p = strstr(p + 1, "\"depth\":")) {
		int d = (int)strtol(p + 8, NULL, 10);
		ck_assert_int_ge(d, last);
		last = d;
	}
	free(pages);
	char *dp = zip_text(z, "datapackage.json", &m);
	ck_assert_ptr_nonnull(strstr(dp, "\"wacz_version\":\"1.1.1\""));
	ck_assert_ptr_nonnull(strstr(dp, "\"path\":\"indexes/index.idx\",\"hash\":\"sha256:"));
	free(dp);
	zip_close(z);
	/* nothing left behind */
	struct stat st;
	snprintf(path, sizeof path, "%s/crawl.wacz.tmp", dir);
	ck_assert_int_ne(stat(path, &st), 0);
	snprintf(path, sizeof path, "%s/.wacz-tmp", dir);
	ck_assert_int_ne(stat(path, &st), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("archive");
	TCase *tc = tcase_create("archive");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, linesort_matches_qsort);
	tcase_add_test(tc, own_index_completed);
	tcase_add_test(tc, wacz_read_back);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
