/*
 * Check suite for a crawl's history (store/history.h), the revisits of an
 * earlier capture the WARC writer makes from it (store/warc.h), and its
 * loading for a recrawl (archive/previous.h).
 */
#include <check.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/archive/previous.h"
#include "crawler/store/cdxj.h"
#include "crawler/store/history.h"
#include "crawler/store/warc.h"
#include "crawler/store/warc_reader.h"
#include "frontier/base/fileio.h"

static char tmp[64];

static void setup(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/test_history-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	fileio_remove_tree(tmp);
}

static struct history_entry entry(const char *url, const char *etag)
{
	return (struct history_entry){
		.sig = history_sig(url, strlen(url)),
		.date = "2026-01-02T03:04:05.678Z",
		.file = "crawl-1.warc.gz",
		.offset = 1234,
		.length = 567,
		.depth = 3,
		.has_depth = true,
		.etag = etag,
		.last_modified = "Mon, 01 Jan 2024 00:00:00 GMT",
		.ref_id = "<urn:uuid:1>",
		.ref_date = "2026-01-02T03:04:05.678Z",
		.ref_digest = "sha1:AAAA",
		.ref_file = "crawl-1.warc.gz",
		.ref_offset = 1234,
		.ref_uri = url,
		.url = url,
	};
}

START_TEST(line_round_trip)
{
	struct cdxj_text t = { 0 };
	struct history_entry e = entry("http://a.test/x", "\"v1\""), back;
	ck_assert_int_eq(history_line(&t, &e), 0);
	ck_assert_uint_eq(t.p[t.len - 1], '\n');
	/* a response is its own original: '=' stands for DATE, FILE and URL */
	ck_assert_ptr_nonnull(strstr(t.p, "\t=\tsha1:AAAA\t=\t1234\t=\thttp://a.test/x\n"));
	ck_assert_int_eq(history_parse(t.p, t.len - 1, &back), 0);
	ck_assert_uint_eq(back.sig, e.sig);
	ck_assert_str_eq(back.etag, "\"v1\"");
	ck_assert_str_eq(back.last_modified, e.last_modified);
	ck_assert_str_eq(back.ref_uri, "http://a.test/x");
	ck_assert_str_eq(back.ref_file, "crawl-1.warc.gz");
	ck_assert_str_eq(back.ref_date, e.date);
	ck_assert_uint_eq(back.offset, 1234);
	ck_assert_uint_eq(back.length, 567);
	ck_assert(back.has_depth);
	ck_assert_uint_eq(back.depth, 3);
	free(t.p);
}
END_TEST

START_TEST(unfit_fields)
{
	struct cdxj_text t = { 0 };
	struct history_entry e = entry("http://a.test/\tx", "v");
	struct history_entry back;
	/* a URL with a tab makes no line */
	ck_assert_int_eq(history_line(&t, &e), 1);
	ck_assert_uint_eq(t.len, 0);
	/* a validator with a control byte is dropped, the line kept */
	e = entry("http://a.test/y", "bad\x01tag");
	e.last_modified = NULL;
	ck_assert_int_eq(history_line(&t, &e), 0);
	ck_assert_int_eq(history_parse(t.p, t.len - 1, &back), 0);
	ck_assert_ptr_null(back.etag);
	ck_assert_ptr_null(back.last_modified);
	free(t.p);
}
END_TEST

START_TEST(parse_rejects)
{
	struct history_entry e = entry("http://a.test/z", "v"), back;
	struct cdxj_text t = { 0 };
	ck_assert_int_eq(history_line(&t, &e), 0);
	char *line = strndup(t.p, t.len - 1);
	/* the URL no longer matches its signature */
	line[strlen(line) - 1] = 'q';
	ck_assert_int_eq(history_parse(line, strlen(line), &back), -1);
	char few[] = "0123456789abcdef\tx\ty";
	ck_assert_int_eq(history_parse(few, strlen(few), &back), -1);
	/* a non-numeric offset */
	free(line);
	line = strndup(t.p, t.len - 1);
	char *off = strstr(line, "\t1234\t");
	off[1] = 'x';
	ck_assert_int_eq(history_parse(line, strlen(line), &back), -1);
	free(line);
	free(t.p);
}
END_TEST

START_TEST(container_round_trip)
{
	char v[128], file[64];
	uint64_t off;
	ck_assert_int_eq(history_container("/a/b.warc.gz", 42, v, sizeof v), 0);
	ck_assert_str_eq(v, "warcfile:/a/b.warc.gz#42");
	ck_assert_int_eq(history_container_parse(v, file, sizeof file, &off), 0);
	ck_assert_str_eq(file, "/a/b.warc.gz");
	ck_assert_uint_eq(off, 42);
	ck_assert_int_eq(history_container_parse("warcfile:#1", file, sizeof file, &off), -1);
	ck_assert_int_eq(history_container_parse("file:/x#1", file, sizeof file, &off), -1);
	ck_assert_int_eq(history_container_parse("warcfile:/x#1a", file, sizeof file, &off), -1);
	ck_assert_int_eq(history_container("/a", 1, v, 5), -1);
}
END_TEST

static const char page_headers[] = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
                                   "ETag: \"e1\"\r\nLast-Modified: Mon, 01 Jan 2024 00:00:00 "
                                   "GMT\r\nContent-Length: 13\r\n\r\n";
static const char body[] = "<p>hello</p>\n";

/* The only file of dir ending in suffix, as a path into out. */
static void file_of(const char *dir, const char *suffix, char *out, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name), s = strlen(suffix);
		if (l > s && strcmp(de->d_name + l - s, suffix) == 0) {
			snprintf(out, cap, "%s/%s", dir, de->d_name);
			n++;
		}
	}
	closedir(d);
	ck_assert_int_eq(n, 1);
}

/* The page of http://a.test/, fetched at unix_ms. */
static struct warc_fetch page_fetch(int64_t unix_ms)
{
	return (struct warc_fetch){
		.url = "http://a.test/",
		.date_unix_ms = unix_ms,
		.response_headers = page_headers,
		.response_headers_len = strlen(page_headers),
		.body = body,
		.body_len = strlen(body),
		.history = true,
	};
}

/* Writes f alone under c: into its own WARC file. */
static void write_one(const struct warc_config *c, const struct warc_fetch *f, bool *revisit)
{
	struct warc_writer *w;
	ck_assert_int_eq(warc_writer_open(c, &w), WARC_OK);
	ck_assert_int_eq(warc_writer_write_fetch(w, f, NULL, revisit), WARC_OK);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
}

/* A first crawl's page, then a recrawl's 304 and unchanged 200 against it:
 * revisits naming it, history lines carrying it on. */
START_TEST(writer_revisits_earlier)
{
	char d1[128], d2[128], warc1[256], hist1[256], warc2[256], err[256];
	snprintf(d1, sizeof d1, "%s/c1", tmp);
	snprintf(d2, sizeof d2, "%s/c2", tmp);
	ck_assert_int_eq(fileio_mkdir_p(d1), 0);
	ck_assert_int_eq(fileio_mkdir_p(d2), 0);
	struct warc_config c = { .dir = d1, .history = true };
	struct warc_writer *w;
	struct warc_fetch f = page_fetch(1700000000000);
	write_one(&c, &f, NULL);
	file_of(d1, ".warc.gz", warc1, sizeof warc1);
	file_of(d1, ".history", hist1, sizeof hist1);

	struct previous *p;
	ck_assert_int_eq(previous_open_list(d1, NULL, NULL, &p, err, sizeof err), 0);
	struct previous_hit *h = previous_lookup(p, f.url, strlen(f.url));
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->e.etag, "\"e1\"");
	ck_assert_ptr_null(previous_lookup(p, "http://a.test/x", 15));
	char *real = realpath(warc1, NULL);
	ck_assert_str_eq(h->ref_path, real);
	struct warc_refer r = { .record_id = h->e.ref_id,
		                .date = h->e.ref_date,
		                .target_uri = h->e.ref_uri,
		                .digest = h->e.ref_digest,
		                .file = h->ref_path,
		                .offset = h->e.ref_offset,
		                .etag = h->e.etag,
		                .last_modified = h->e.last_modified };
	static const char nm[] = "HTTP/1.1 304 Not Modified\r\nETag: \"e1\"\r\n\r\n";
	struct warc_fetch f304 = f;
	f304.response_headers = nm;
	f304.response_headers_len = strlen(nm);
	f304.body = NULL;
	f304.body_len = 0;
	f304.refer = &r;
	struct warc_fetch same = f;
	same.url = "http://a.test/"; /* the same payload again, answered 200 */
	same.refer = &r;
	c.dir = d2;
	bool revisit = false;
	ck_assert_int_eq(warc_writer_open(&c, &w), WARC_OK);
	ck_assert_int_eq(warc_writer_write_fetch(w, &f304, NULL, &revisit), WARC_OK);
	ck_assert(revisit);
	ck_assert_int_eq(warc_writer_write_fetch(w, &same, NULL, &revisit), WARC_OK);
	ck_assert(revisit);
	struct warc_stats st;
	warc_writer_stats(w, &st);
	ck_assert_uint_eq(st.revisits_not_modified, 1);
	ck_assert_uint_eq(st.revisits_earlier, 1);
	ck_assert_uint_eq(st.history_lines, 2);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	file_of(d2, ".warc.gz", warc2, sizeof warc2);

	struct warc_reader *rd;
	struct warc_record rec;
	const char *profiles[] = { "server-not-modified", "identical-payload-digest" };
	int seen = 0;
	ck_assert_int_eq(warc_reader_open(warc2, 0, 1 << 20, &rd), 0);
	for (enum warc_read rr; (rr = warc_reader_next(rd, &rec)) == WARC_READ_RECORD;) {
		if (strcmp(rec.type, "revisit") != 0)
			continue;
		char file[512], want[600];
		uint64_t off;
		ck_assert_ptr_nonnull(strstr(rec.profile, profiles[seen]));
		ck_assert_str_eq(rec.refers_to, h->e.ref_id);
		ck_assert_str_eq(rec.refers_to_target_uri, "http://a.test/");
		ck_assert_str_eq(rec.payload_digest, h->e.ref_digest);
		ck_assert_int_eq(
		        history_container_parse(rec.refers_to_container, file, sizeof file, &off),
		        0);
		ck_assert_str_eq(file, real);
		ck_assert_uint_eq(off, h->e.ref_offset);
		/* what a history rebuilt from the record says is what was written */
		struct cdxj_text t = { 0 };
		ck_assert_int_eq(history_of_record(&t, &rec, "x.warc.gz"), 0);
		snprintf(want, sizeof want, "\t%s\t%s\t%" PRIu64 "\t", h->e.ref_digest, real, off);
		ck_assert_ptr_nonnull(strstr(t.p, want));
		free(t.p);
		seen++;
	}
	ck_assert_int_eq(seen, 2);
	warc_reader_close(rd);
	free(h);
	previous_destroy(p);

	/* the recrawl's history: both lines name the first crawl's record */
	ck_assert_int_eq(previous_open_list(d2, NULL, NULL, &p, err, sizeof err), 0);
	h = previous_lookup(p, f.url, strlen(f.url));
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->ref_path, real);
	ck_assert_str_eq(h->e.etag, "\"e1\"");
	free(h);
	previous_destroy(p);
	free(real);
}
END_TEST

static void write_text(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(s, f);
	fclose(f);
}

static int count_url(void *ctx, const char *url)
{
	(void)url;
	(*(int *)ctx)++;
	return 0;
}

/* Opens the earlier crawls of list, which must load; their figures. */
static struct previous *open_ok(const char *list, struct previous_stats *st)
{
	char err[256];
	struct previous *p;
	ck_assert_msg(previous_open_list(list, NULL, NULL, &p, err, sizeof err) == 0, "%s", err);
	previous_stats(p, st);
	return p;
}

/* p's capture of url has that ETag. */
static void expect_etag(const struct previous *p, const char *url, const char *etag)
{
	struct previous_hit *h = previous_lookup(p, url, strlen(url));
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->e.etag, etag);
	ck_assert_ptr_nonnull(h->e.ref_id);
	free(h);
}

/* Later files win; bad lines are skipped and counted; no history is an
 * error. */
START_TEST(previous_load)
{
	char path[256], err[256];
	struct cdxj_text a = { 0 }, b = { 0 };
	struct history_entry e1 = entry("http://a.test/1", "old"),
	                     e2 = entry("http://a.test/2", "x");
	ck_assert_int_eq(history_line(&a, &e1), 0);
	ck_assert_int_eq(history_line(&a, &e2), 0);
	ck_assert_int_eq(cdxj_text_add(&a, "garbage\n", 8), 0);
	e1.etag = "new";
	ck_assert_int_eq(history_line(&b, &e1), 0);
	ck_assert_int_eq(cdxj_text_add(&b, "torn", 4), 0);
	ck_assert_int_eq(cdxj_text_add(&a, "", 0), 0);
	a.p[a.len] = '\0';
	b.p[b.len] = '\0';
	snprintf(path, sizeof path, "%s/crawl-1.history", tmp);
	write_text(path, a.p);
	snprintf(path, sizeof path, "%s/crawl-2.history", tmp);
	write_text(path, b.p);
	struct previous_stats st;
	struct previous *p = open_ok(tmp, &st);
	ck_assert_uint_eq(st.files, 2);
	ck_assert_uint_eq(st.urls, 2);
	ck_assert_uint_eq(st.bad_lines, 2);
	expect_etag(p, "http://a.test/1", "new");
	int n = 0;
	ck_assert_int_eq(previous_each_url(p, count_url, &n), 0);
	ck_assert_int_eq(n, 2);
	previous_destroy(p);
	free(a.p);
	free(b.p);

	snprintf(path, sizeof path, "%s/empty", tmp);
	ck_assert_int_eq(fileio_mkdir_p(path), 0);
	ck_assert_int_eq(previous_open_list(path, NULL, NULL, &p, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "no history"));
	ck_assert_int_eq(previous_open_list("/nonexistent/x", NULL, NULL, &p, err, sizeof err), -1);
	previous_destroy(NULL);
}
END_TEST

/* A folder of history lines (each text a line's url and etag) under
 * tmp/name; its absolute path into out. */
static void history_folder(const char *name, const char *const *urls, const char *const *etags,
                           size_t n, char *out, size_t cap)
{
	char path[300];
	struct cdxj_text t = { 0 };
	snprintf(path, sizeof path, "%s/%s", tmp, name);
	ck_assert_int_eq(fileio_mkdir_p(path), 0);
	for (size_t i = 0; i < n; i++) {
		struct history_entry e = entry(urls[i], etags[i]);
		ck_assert_int_eq(history_line(&t, &e), 0);
	}
	char *real = realpath(path, NULL);
	ck_assert_ptr_nonnull(real);
	snprintf(out, cap, "%s", real);
	free(real);
	snprintf(path, sizeof path, "%s/crawl-1.history", out);
	write_text(path, t.p);
	free(t.p);
}

/* Several folders: the one given last wins a URL they share; a URL of one
 * only is found; WARC names resolve against each line's own folder. */
START_TEST(previous_several)
{
	char a[256], b[256], list[600], want[300], err[256];
	const char *ua[] = { "http://a.test/1", "http://a.test/only-a" }, *ea[] = { "a1", "x" };
	const char *ub[] = { "http://a.test/1" }, *eb[] = { "b1" };
	history_folder("A", ua, ea, 2, a, sizeof a);
	history_folder("B", ub, eb, 1, b, sizeof b);
	struct previous_stats st;
	snprintf(list, sizeof list, "%s,%s", a, b);
	struct previous *p = open_ok(list, &st);
	ck_assert_uint_eq(st.files, 2);
	ck_assert_uint_eq(st.urls, 2);
	struct previous_hit *h = previous_lookup(p, "http://a.test/1", 15);
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->e.etag, "b1");
	snprintf(want, sizeof want, "%s/crawl-1.warc.gz", b);
	ck_assert_str_eq(h->ref_path, want);
	free(h);
	h = previous_lookup(p, "http://a.test/only-a", 20);
	ck_assert_ptr_nonnull(h);
	snprintf(want, sizeof want, "%s/crawl-1.warc.gz", a);
	ck_assert_str_eq(h->ref_path, want);
	free(h);
	previous_destroy(p);

	/* the other order, spaces around the separator */
	snprintf(list, sizeof list, " %s , %s ,", b, a);
	ck_assert_int_eq(previous_open_list(list, NULL, NULL, &p, err, sizeof err), 0);
	expect_etag(p, "http://a.test/1", "a1");
	previous_destroy(p);

	/* the crawl's own folder is refused, wherever it is in the list */
	snprintf(list, sizeof list, "%s,%s", a, b);
	ck_assert_int_eq(previous_open_list(list, NULL, b, &p, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "own folder"));
	ck_assert_int_eq(previous_open_list(" , ", NULL, NULL, &p, err, sizeof err), -1);
}
END_TEST

/* A first crawl's page written with its CDXJ (no history) into tmp/name:
 * the WARC file's path and the CDXJ's text. */
static char *crawl_with_index(const char *name, bool history, char *warc, size_t cap)
{
	char dir[256], cdxj[300];
	snprintf(dir, sizeof dir, "%s/%s", tmp, name);
	ck_assert_int_eq(fileio_mkdir_p(dir), 0);
	struct warc_config c = { .dir = dir, .history = history, .cdxj = true };
	struct warc_fetch f = page_fetch(1700000000000);
	write_one(&c, &f, NULL);
	file_of(dir, ".warc.gz", warc, cap);
	file_of(dir, ".cdxj", cdxj, sizeof cdxj);
	size_t len;
	char *text = fileio_read_path(cdxj, 1 << 20, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(unlink(cdxj), 0);
	/* fileio_read_path's buffer is not a string: the callers take strlen */
	char *str = realloc(text, len + 1);
	ck_assert_ptr_nonnull(str);
	str[len] = '\0';
	return str;
}

/* The response record's id in a WARC file. */
static void response_id(const char *warc, char *out, size_t cap)
{
	struct warc_reader *rd;
	struct warc_record rec;
	out[0] = '\0';
	ck_assert_int_eq(warc_reader_open(warc, 0, 1 << 20, &rd), 0);
	while (warc_reader_next(rd, &rec) == WARC_READ_RECORD)
		if (strcmp(rec.type, "response") == 0)
			snprintf(out, cap, "%s", rec.record_id);
	warc_reader_close(rd);
	ck_assert(out[0] != '\0');
}

/* A folder with an index and no history: pages of its 200s only, keyed as
 * crawl keys, no validators; the record id read back from the WARC; a
 * 200 of the same payload stored as a revisit of it. */
START_TEST(previous_cdxj_only)
{
	char warc[256], path[300], id[128];
	char *text = crawl_with_index("C", false, warc, sizeof warc);
	char *real = realpath(warc, NULL);
	struct cdxj_text t = { 0 };
	ck_assert_int_eq(cdxj_text_add(&t, text, strlen(text)), 0);
	/* another writer's spelling (spaces, a bare number), a URL that is
	 * not a crawl key yet, a revisit and a 404 */
	static const char more[] =
	        "test,a)/p 20260102030405 {\"url\": \"http://a.test/p\", \"mime\": \"text/html\", "
	        "\"status\": \"200\", \"digest\": \"XYZ\", \"length\": \"10\", \"offset\": 0, "
	        "\"filename\": \"gone.warc.gz\"}\n"
	        "test,a)/q 20260102030405 {\"url\":\"HTTP://A.test:80/q\",\"status\":\"200\","
	        "\"digest\":\"sha256:Q\",\"length\":\"1\",\"offset\":\"7\",\"filename\":\"q.warc."
	        "gz\"}\n"
	        "test,a)/r 20260102030405 {\"url\":\"http://a.test/r\",\"mime\":\"warc/revisit\","
	        "\"status\":\"200\",\"digest\":\"R\",\"length\":\"1\",\"offset\":\"0\","
	        "\"filename\":\"r.warc.gz\"}\n"
	        "test,a)/s 20260102030405 {\"url\":\"http://a.test/s\",\"status\":\"404\","
	        "\"digest\":\"S\",\"length\":\"1\",\"offset\":\"0\",\"filename\":\"s.warc.gz\"}\n";
	ck_assert_int_eq(cdxj_text_add(&t, more, strlen(more)), 0);
	snprintf(path, sizeof path, "%s/C/index.cdxj", tmp);
	write_text(path, t.p);
	free(t.p);
	free(text);

	struct previous *p;
	struct previous_stats st;
	snprintf(path, sizeof path, "%s/C", tmp);
	for (int by_file = 0; by_file < 2; by_file++) {
		if (by_file)
			snprintf(path, sizeof path, "%s/C/index.cdxj", tmp);
		p = open_ok(path, &st);
		ck_assert_uint_eq(st.indexes, 1);
		ck_assert_uint_eq(st.indexes_by_history, 0);
		ck_assert_uint_eq(st.urls, 3);
		ck_assert_uint_eq(st.cdxj_skipped, 2);
		ck_assert_uint_eq(st.bad_lines, 0);
		if (!by_file)
			previous_destroy(p);
	}
	struct previous_hit *h = previous_lookup(p, "http://a.test/q", 15);
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->e.ref_digest, "sha256:Q");
	ck_assert_str_eq(h->e.ref_uri, "HTTP://A.test:80/q");
	ck_assert_uint_eq(h->e.ref_offset, 7);
	ck_assert_int_eq(previous_hit_complete(h), -1); /* no such file */
	free(h);
	h = previous_lookup(p, "http://a.test/p", 15);
	ck_assert_ptr_nonnull(h);
	ck_assert_str_eq(h->e.ref_digest, "sha1:XYZ");
	ck_assert_str_eq(h->e.ref_date, "2026-01-02T03:04:05Z");
	free(h);
	h = previous_lookup(p, "http://a.test/", 14);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_null(h->e.etag);
	ck_assert_ptr_null(h->e.last_modified);
	ck_assert_ptr_null(h->e.ref_id);
	ck_assert_str_eq(h->ref_path, real);
	ck_assert_int_eq(previous_hit_complete(h), 0);
	response_id(warc, id, sizeof id);
	ck_assert_str_eq(h->e.ref_id, id);
	ck_assert_ptr_nonnull(strstr(h->e.ref_date, "2023-11-14T22:13:20"));
	ck_assert_ptr_null(previous_lookup(p, "http://a.test/r", 15));
	ck_assert_ptr_null(previous_lookup(p, "http://a.test/s", 15));

	/* the same payload again: a revisit of the indexed record */
	struct warc_refer r = { .record_id = h->e.ref_id,
		                .date = h->e.ref_date,
		                .target_uri = h->e.ref_uri,
		                .digest = h->e.ref_digest,
		                .file = h->ref_path,
		                .offset = h->e.ref_offset };
	snprintf(path, sizeof path, "%s/D", tmp);
	ck_assert_int_eq(fileio_mkdir_p(path), 0);
	struct warc_config c = { .dir = path };
	struct warc_fetch f = page_fetch(1800000000000);
	f.refer = &r;
	bool revisit = false;
	write_one(&c, &f, &revisit);
	ck_assert(revisit);
	free(h);
	free(real);
	previous_destroy(p);
}
END_TEST

/* Torn and malformed index lines are skipped and counted; an index with
 * no usable line is refused. */
START_TEST(previous_cdxj_bad)
{
	char path[300], err[256];
	static const char lines[] =
	        "test,a)/1 20260102030405 {\"url\":\"http://a.test/1\",\"status\":\"200\","
	        "\"digest\":\"A\",\"length\":\"1\",\"offset\":\"0\",\"filename\":\"a.warc.gz\"}\n"
	        "garbage\n"
	        "test,a)/2 20260102030405 {\"url\":\"http://a.test/2\",\"status\":\"200\","
	        "\"digest\":\"A\",\"length\":\"x\",\"offset\":\"0\",\"filename\":\"a.warc.gz\"}\n"
	        "test,a)/3 2026 {\"url\":\"http://a.test/3\",\"status\":\"200\","
	        "\"digest\":\"A\",\"length\":\"1\",\"offset\":\"0\",\"filename\":\"a.warc.gz\"}\n"
	        "test,a)/4 20260102030405 {\"url\":\"http://a.test/4\",\"status\":\"200\","
	        "\"digest\":\"A\",\"length\":\"1\",\"offset\":\"0\",\"filename\":\"a.warc.gz\"}\n"
	        "test,a)/5 20260102030405 {\"url\":\"http://a.test/5\",\"status\":\"200\","
	        "\"digest\":\"A\",\"length\":\"1\",\"offset\":\"0\",\"filen";
	snprintf(path, sizeof path, "%s/index.cdxj", tmp);
	write_text(path, lines);
	struct previous_stats st;
	struct previous *p = open_ok(path, &st);
	ck_assert_uint_eq(st.lines, 6);
	ck_assert_uint_eq(st.bad_lines, 4);
	ck_assert_uint_eq(st.urls, 2);
	struct previous_hit *h = previous_lookup(p, "http://a.test/4", 15);
	ck_assert_ptr_nonnull(h);
	free(h);
	ck_assert_ptr_null(previous_lookup(p, "http://a.test/5", 15));
	previous_destroy(p);

	write_text(path, "garbage\nmore garbage {\"url\":\n");
	ck_assert_int_eq(previous_open_list(path, NULL, NULL, &p, err, sizeof err), -1);
	ck_assert_ptr_nonnull(strstr(err, "no capture"));
	write_text(path, "");
	ck_assert_int_eq(previous_open_list(tmp, NULL, NULL, &p, err, sizeof err), -1);
}
END_TEST

/* An index beside a history: the history is read (it has the validators). */
START_TEST(previous_cdxj_beside_history)
{
	char warc[256], path[300];
	char *text = crawl_with_index("E", true, warc, sizeof warc);
	snprintf(path, sizeof path, "%s/E/index.cdxj", tmp);
	write_text(path, text);
	free(text);
	struct previous_stats st;
	struct previous *p = open_ok(path, &st);
	ck_assert_uint_eq(st.indexes, 0);
	ck_assert_uint_eq(st.indexes_by_history, 1);
	ck_assert_uint_eq(st.urls, 1);
	expect_etag(p, "http://a.test/", "\"e1\"");
	previous_destroy(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("history");
	TCase *tc = tcase_create("all");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, line_round_trip);
	tcase_add_test(tc, unfit_fields);
	tcase_add_test(tc, parse_rejects);
	tcase_add_test(tc, container_round_trip);
	tcase_add_test(tc, writer_revisits_earlier);
	tcase_add_test(tc, previous_load);
	tcase_add_test(tc, previous_several);
	tcase_add_test(tc, previous_cdxj_only);
	tcase_add_test(tc, previous_cdxj_bad);
	tcase_add_test(tc, previous_cdxj_beside_history);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
