/* test_io.c: WARC writer (read back by an independent Python reader), SHA-1
 * and base32, crawl log format, body decoding. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <brotli/encode.h>
#include <zlib.h>

#include "crawler/store/crawl_log.h"
#include "crawler/net/decode.h"
#include "crawler/store/warc.h"

#ifndef WARC_CHECK_SCRIPT
#error "WARC_CHECK_SCRIPT must be defined"
#endif
#ifndef PYTHON3
#define PYTHON3 "python3"
#endif

static char tmpdir[256];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/crawler-io-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	char path[600];
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmpdir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(tmpdir);
}

/* Runs the reader; returns its summary line (static) or fails. */
static const char *check_dir(void)
{
	static char line[512];
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s %s", PYTHON3, WARC_CHECK_SCRIPT, tmpdir);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	line[0] = '\0';
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	int rc = pclose(p);
	ck_assert_msg(rc == 0, "reader failed: %s", line);
	return line;
}

static long field(const char *line, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), "%s=", name);
	const char *p = strstr(line, key);
	ck_assert_ptr_nonnull(p);
	return strtol(p + strlen(key), NULL, 10);
}

START_TEST(sha1_vectors)
{
	uint8_t d[20];
	char label[38];
	warc_sha1("abc", 3, d);
	ck_assert_uint_eq(d[0], 0xa9);
	ck_assert_uint_eq(d[1], 0x99);
	ck_assert_uint_eq(d[19], 0x9d);
	warc_sha1("", 0, d);
	warc_sha1_label(d, label);
	ck_assert_str_eq(label, "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
	/* Multi-block input, 1,000,000 'a' (FIPS 180 test vector). */
	char *m = malloc(1000000);
	memset(m, 'a', 1000000);
	warc_sha1(m, 1000000, d);
	free(m);
	warc_sha1_label(d, label);
	/* 34aa973cd4c4daa4f61eeb2bdbad27316534016f in base32 */
	ck_assert_str_eq(label, "sha1:GSVJOPGUYTNKJ5Q65MV5XLJHGFSTIALP");
}
END_TEST

START_TEST(warc_roundtrip)
{
	struct warc_writer *w = NULL;
	struct warc_config cfg = {
		.dir = tmpdir, .prefix = "test", .max_file_bytes = 4096, .user_agent = "testbot/1.0"
	};
	ck_assert_int_eq(warc_writer_open(&cfg, &w), WARC_OK);
	char url[128], req[256], hdr[256], body[2048];
	int revisits = 0;
	for (int i = 0; i < 40; i++) {
		/* Every 4th body repeats body 0: a revisit. */
		int k = (i % 4 == 3) ? 0 : i;
		int bl = snprintf(body, sizeof(body), "<html>page %d %0300d</html>", k, k);
		snprintf(url, sizeof(url), "http://h%d.test/p\r\nX-Injected: 1/%d", i % 3, i);
		int rl = snprintf(
		        req, sizeof(req),
		        "GET /p/%d HTTP/1.1\r\nHost: h.test\r\nUser-Agent: testbot/1.0\r\n\r\n", i);
		int hl = snprintf(
		        hdr, sizeof(hdr),
		        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n",
		        bl);
		struct warc_fetch f = { .url = url,
			                .ip = "127.0.1.2",
			                .date_unix_ms = 1700000000123 + i,
			                .request_headers = req,
			                .request_len = (size_t)rl,
			                .response_headers = hdr,
			                .response_headers_len = (size_t)hl,
			                .body = body,
			                .body_len = (size_t)bl,
			                .truncated = (i == 5) };
		struct warc_position pos;
		bool rv = false;
		ck_assert_int_eq(warc_writer_write_fetch(w, &f, &pos, &rv), WARC_OK);
		ck_assert_str_ne(pos.file, "");
		ck_assert_uint_gt(pos.offset, 0);
		if (rv)
			revisits++;
		ck_assert_int_eq(rv, i % 4 == 3);
	}
	ck_assert_int_eq(warc_writer_sync(w), WARC_OK);
	struct warc_stats st;
	warc_writer_stats(w, &st);
	ck_assert_uint_gt(st.files, 2);
	ck_assert_uint_eq(st.revisits, 10);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	const char *line = check_dir();
	ck_assert_int_eq(field(line, "files"), (long)st.files);
	ck_assert_int_eq(field(line, "warcinfo"), (long)st.files);
	ck_assert_int_eq(field(line, "request"), 40);
	ck_assert_int_eq(field(line, "response"), 30);
	ck_assert_int_eq(field(line, "revisit"), revisits);
	ck_assert_int_eq(field(line, "truncated"), 1);
	/* Rotation: every file but the last is at least max_file_bytes... and
	 * no file grew past it by more than one fetch's records. */
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	int nfiles = 0;
	while ((de = readdir(d)) != NULL) {
		char path[600];
		struct stat sb;
		if (de->d_name[0] == '.')
			continue;
		ck_assert(strncmp(de->d_name, "test-", 5) == 0);
		ck_assert_ptr_nonnull(strstr(de->d_name, ".warc.gz"));
		ck_assert_uint_eq(strlen(de->d_name), strlen("test-20261122235959-00000.warc.gz"));
		snprintf(path, sizeof(path), "%s/%s", tmpdir, de->d_name);
		ck_assert_int_eq(stat(path, &sb), 0);
		ck_assert_int_lt(sb.st_size, 4096 + 2048);
		nfiles++;
	}
	closedir(d);
	ck_assert_int_eq(nfiles, (int)st.files);
}
END_TEST

/* A revisit names its original's URL whole: a URL of WARC_URL_KEEP bytes
 * is referred to as it is (the strict reader checks each revisit's
 * WARC-Refers-To-Target-URI against its original's WARC-Target-URI), and a
 * payload first written under a longer one is not remembered, so its
 * repeat is a response of its own. */
START_TEST(warc_revisit_long_url)
{
	struct warc_writer *w = NULL;
	struct warc_config cfg = { .dir = tmpdir, .prefix = "long", .user_agent = "testbot/1.0" };
	ck_assert_int_eq(warc_writer_open(&cfg, &w), WARC_OK);
	const size_t lens[] = { WARC_URL_KEEP, WARC_URL_KEEP + 1, 3000 };
	const bool want_revisit[] = { true, false, false };
	char *url = malloc(4000), *again = malloc(4000);
	for (size_t k = 0; k < 3; k++) {
		char body[64], hdr[128];
		int bl = snprintf(body, sizeof body, "<html>payload %zu</html>", k);
		int hl = snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n",
		                  bl);
		int ul = snprintf(url, 4000, "http://h.test/%zu/", k);
		memset(url + ul, 'x', lens[k] - (size_t)ul);
		url[lens[k]] = '\0';
		snprintf(again, 4000, "http://h.test/again/%zu", k);
		const char *urls[] = { url, again };
		for (int i = 0; i < 2; i++) {
			struct warc_fetch f = { .url = urls[i],
				                .date_unix_ms = 1700000000000 + (int64_t)k * 10 + i,
				                .response_headers = hdr,
				                .response_headers_len = (size_t)hl,
				                .body = body,
				                .body_len = (size_t)bl };
			bool rv = false;
			ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, &rv), WARC_OK);
			ck_assert_int_eq(rv, i == 1 && want_revisit[k]);
		}
	}
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	const char *line = check_dir();
	ck_assert_int_eq(field(line, "revisit"), 1);
	ck_assert_int_eq(field(line, "response"), 5);
	free(url);
	free(again);
}
END_TEST

/* The uncompressed text of the files PREFIX-*.warc.gz (NUL-terminated). */
static void warc_text(const char *prefix, char *text, size_t cap)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "zcat %s/%s-*.warc.gz", tmpdir, prefix);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(text, 1, cap - 1, p);
	text[n] = '\0';
	pclose(p);
}

START_TEST(warc_transfer_encoding)
{
	/* libcurl de-chunks: the stored headers say what the stored body is.
	 * Transfer-Encoding (and a Content-Length beside it) are kept under
	 * X-Crawler- names and Content-Length gives the stored length; the
	 * payload digest is over the entity body. */
	struct warc_writer *w = NULL;
	struct warc_config cfg = { .dir = tmpdir, .prefix = "te", .no_revisits = true };
	ck_assert_int_eq(warc_writer_open(&cfg, &w), WARC_OK);
	const char req[] = "GET /a HTTP/1.1\r\nHost: h.test\r\n\r\n";
	const char hdr[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	                   "Content-Length: 5\r\nContent-Type: text/html\r\n\r\n";
	const char plain[] = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n";
	struct warc_fetch f = { .url = "http://h.test/a",
		                .date_unix_ms = 1700000000000,
		                .request_headers = req,
		                .request_len = sizeof(req) - 1,
		                .response_headers = hdr,
		                .response_headers_len = sizeof(hdr) - 1,
		                .body = "hello world",
		                .body_len = 11 };
	ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
	f.url = "http://h.test/b";
	f.response_headers = plain;
	f.response_headers_len = sizeof(plain) - 1;
	ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	const char *line = check_dir();
	ck_assert_int_eq(field(line, "response"), 2);
	ck_assert_int_eq(field(line, "x-transfer-encoding"), 1);
	ck_assert_int_eq(field(line, "chunked"), 0);
	char text[8192];
	warc_text("te", text, sizeof(text));
	ck_assert_ptr_nonnull(strstr(text, "\r\n\r\nHTTP/1.1 200 OK\r\n"
	                                   "X-Crawler-Transfer-Encoding: chunked\r\n"
	                                   "X-Crawler-Content-Length: 5\r\n"
	                                   "Content-Type: text/html\r\n"
	                                   "Content-Length: 11\r\n\r\nhello world"));
	/* A block without Transfer-Encoding is stored byte for byte. */
	ck_assert_ptr_nonnull(strstr(text, "\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"
	                                   "hello world"));
}
END_TEST

START_TEST(warc_http2_as_http11)
{
	/* An HTTP/2 exchange in curl's rendering is written as HTTP/1.1 with
	 * WARC-Protocol: h2; an HTTP/1.1 one says http/1.1. */
	struct warc_writer *w = NULL;
	struct warc_config cfg = { .dir = tmpdir, .prefix = "h2", .compression_level = 1 };
	ck_assert_int_eq(warc_writer_open(&cfg, &w), WARC_OK);
	const char req2[] = "GET /a HTTP/2\r\nHost: h.test\r\naccept: */*\r\n\r\n";
	const char hdr2[] = "HTTP/2 200 \r\ncontent-type: text/html\r\n\r\n";
	const char req1[] = "GET /b HTTP/1.1\r\nHost: h.test\r\n\r\n";
	const char hdr1[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\n";
	struct warc_fetch f = { .url = "https://h.test/a",
		                .date_unix_ms = 1700000000000,
		                .request_headers = req2,
		                .request_len = sizeof(req2) - 1,
		                .response_headers = hdr2,
		                .response_headers_len = sizeof(hdr2) - 1,
		                .body = "<p>a</p>",
		                .body_len = 8,
		                .http2 = true };
	ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
	f = (struct warc_fetch){ .url = "https://h.test/b",
		                 .date_unix_ms = 1700000000001,
		                 .request_headers = req1,
		                 .request_len = sizeof(req1) - 1,
		                 .response_headers = hdr1,
		                 .response_headers_len = sizeof(hdr1) - 1,
		                 .body = "x",
		                 .body_len = 1 };
	ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	const char *line = check_dir();
	ck_assert_int_eq(field(line, "request"), 2);
	ck_assert_int_eq(field(line, "response"), 2);
	ck_assert_int_eq(field(line, "h2"), 2);
	/* The rewritten lines, byte for byte. */
	char text[8192];
	warc_text("h2", text, sizeof(text));
	ck_assert_ptr_nonnull(strstr(text, "WARC-Protocol: h2\r\n"));
	ck_assert_ptr_nonnull(strstr(text, "WARC-Protocol: http/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(text, "\r\n\r\nGET /a HTTP/1.1\r\nHost: h.test\r\n"));
	ck_assert_ptr_nonnull(strstr(text, "\r\n\r\nHTTP/1.1 200 \r\ncontent-type: text/html"));
	ck_assert_ptr_null(strstr(text, "HTTP/2"));
}
END_TEST

START_TEST(warc_reader_detects_corruption)
{
	/* The reader must fail on a bad digest, proving it checks. */
	struct warc_writer *w = NULL;
	struct warc_config cfg = { .dir = tmpdir, .compression_level = 1 };
	ck_assert_int_eq(warc_writer_open(&cfg, &w), WARC_OK);
	const char *hdr = "HTTP/1.1 200 OK\r\n\r\n";
	struct warc_fetch f = { .url = "http://x.test/",
		                .response_headers = hdr,
		                .response_headers_len = strlen(hdr),
		                .body = "hello",
		                .body_len = 5 };
	ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
	struct warc_position pos;
	warc_writer_position(w, &pos);
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	/* Rewrite the file's last member with a changed body. */
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, pos.file);
	FILE *fp = fopen(path, "rb");
	ck_assert_ptr_nonnull(fp);
	static unsigned char raw[65536], plain[65536];
	size_t n = fread(raw, 1, sizeof(raw), fp);
	fclose(fp);
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	inflateInit2(&zs, 31);
	/* skip the warcinfo member */
	zs.next_in = raw;
	zs.avail_in = (uInt)n;
	zs.next_out = plain;
	zs.avail_out = sizeof(plain);
	ck_assert_int_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
	size_t first = n - zs.avail_in;
	inflateReset(&zs);
	zs.next_out = plain;
	zs.avail_out = sizeof(plain);
	ck_assert_int_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
	size_t plen = sizeof(plain) - zs.avail_out;
	inflateEnd(&zs);
	unsigned char *h = memmem(plain, plen, "hello", 5);
	ck_assert_ptr_nonnull(h);
	h[0] = 'j';
	fp = fopen(path, "wb");
	fwrite(raw, 1, first, fp);
	gzFile gz = gzdopen(dup(fileno(fp)), "ab");
	fflush(fp);
	gzwrite(gz, plain, (unsigned)plen);
	gzclose(gz);
	fclose(fp);
	char cmd[1024], line[512] = "";
	snprintf(cmd, sizeof(cmd), "%s %s %s", PYTHON3, WARC_CHECK_SCRIPT, tmpdir);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), p));
	ck_assert_int_ne(pclose(p), 0);
	ck_assert_ptr_nonnull(strstr(line, "digest"));
}
END_TEST

START_TEST(crawl_log_lines)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/crawl.log", tmpdir);
	struct crawl_log *log = NULL;
	ck_assert_int_eq(crawl_log_open(path, &log), CRAWL_LOG_OK);
	struct crawl_log_entry e = { .timestamp_unix_ms = 1700000000123,
		                     .status = 200,
		                     .bytes = 1234,
		                     .url = "http://a.test/x\ty\nz\\w",
		                     .via = NULL,
		                     .depth = 2,
		                     .content_type = "text/html",
		                     .duration_ms = 42,
		                     .ip = "127.0.1.1",
		                     .error = NULL,
		                     .redirect = "",
		                     .flags = CRAWL_LOG_TRUNCATED | CRAWL_LOG_NEAR_DUP,
		                     .wait_ms = 1500 };
	ck_assert_int_eq(crawl_log_write(log, &e), CRAWL_LOG_OK);
	struct crawl_log_entry e2 = { .timestamp_unix_ms = 1700000000999,
		                      .status = -7,
		                      .url = "http://b.test/\x01",
		                      .via = "http://a.test/",
		                      .error = "timeout",
		                      .redirect = "http://c.test/" };
	ck_assert_int_eq(crawl_log_write(log, &e2), CRAWL_LOG_OK);
	ck_assert_int_eq(crawl_log_close(log), CRAWL_LOG_OK);
	/* Reopen: appends without a second header. */
	ck_assert_int_eq(crawl_log_open(path, &log), CRAWL_LOG_OK);
	ck_assert_int_eq(crawl_log_write(log, &e2), CRAWL_LOG_OK);
	ck_assert_int_eq(crawl_log_flush(log, 1), CRAWL_LOG_OK);
	ck_assert_int_eq(crawl_log_close(log), CRAWL_LOG_OK);
	FILE *f = fopen(path, "r");
	char line[4096];
	int nlines = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		int tabs = 0;
		for (char *p = line; *p; p++)
			tabs += *p == '\t';
		ck_assert_int_eq(tabs, 12);
		if (nlines == 0) {
			ck_assert(strncmp(line, "#timestamp\tstatus\tbytes\turl\tvia\tdepth", 37) ==
			          0);
			ck_assert_ptr_nonnull(strstr(line, "\tflags\twait_ms\n"));
		}
		if (nlines == 1)
			ck_assert_str_eq(
			        line,
			        "2023-11-14T22:13:20.123Z\t200\t1234\thttp://a.test/"
			        "x\\ty\\nz\\\\w\t-\t2"
			        "\ttext/html\t42\t127.0.1.1\t-\t-\ttruncated,near-dup\t1500\n");
		if (nlines == 2)
			ck_assert_str_eq(line, "2023-11-14T22:13:20.999Z\t-7\t0\thttp://b.test/"
			                       "\\x01\thttp://a.test/"
			                       "\t0\t-\t0\t-\ttimeout\thttp://c.test/\t-\t0\n");
		nlines++;
	}
	fclose(f);
	ck_assert_int_eq(nlines, 4);
	/* Formatting into a short buffer reports the needed length. */
	char small[8];
	size_t need = crawl_log_format(&e, small, sizeof(small));
	ck_assert_uint_gt(need, sizeof(small));
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
}
END_TEST

/* A focused crawl's score rides in the flags field as focus=S: after the
 * flags, or alone; the flags read back as before, and the score too. */
START_TEST(crawl_log_focus)
{
	char line[1024];
	struct crawl_log_entry e = { .timestamp_unix_ms = 1700000000123,
		                     .status = 200,
		                     .url = "http://a.test/",
		                     .flags = CRAWL_LOG_NEAR_DUP,
		                     .has_focus = 1,
		                     .focus = 625 };
	crawl_log_format(&e, line, sizeof line);
	ck_assert_ptr_nonnull(strstr(line, "\tnear-dup,focus=0.0625\t0\n"));
	const char *f[CRAWL_LOG_FIELDS];
	size_t fl[CRAWL_LOG_FIELDS];
	ck_assert_int_eq(crawl_log_split(line, strlen(line) - 1, f, fl), CRAWL_LOG_FIELDS);
	ck_assert_uint_eq(crawl_log_flags_parse(f[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS]),
	                  CRAWL_LOG_NEAR_DUP);
	uint32_t score = 0;
	ck_assert_int_eq(crawl_log_focus_of(f[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS], &score),
	                 1);
	ck_assert_uint_eq(score, 625);
	e.flags = 0;
	e.focus = 123456;
	crawl_log_format(&e, line, sizeof line);
	ck_assert_ptr_nonnull(strstr(line, "\t-\tfocus=12.3456\t0\n"));
	ck_assert_int_eq(crawl_log_focus_of("focus=12.3456", 13, &score), 1);
	ck_assert_uint_eq(score, 123456);
	ck_assert_int_eq(crawl_log_focus_of("robots,focus=1", 14, &score), 1);
	ck_assert_uint_eq(score, 10000);
	/* no score, or a malformed one */
	ck_assert_int_eq(crawl_log_focus_of("-", 1, &score), 0);
	ck_assert_int_eq(crawl_log_focus_of("xfocus=1", 8, &score), 0);
	ck_assert_int_eq(crawl_log_focus_of("focus=", 6, &score), 0);
	ck_assert_int_eq(crawl_log_focus_of("focus=1.2.3", 11, &score), 0);
	e.has_focus = 0;
	crawl_log_format(&e, line, sizeof line);
	ck_assert_ptr_nonnull(strstr(line, "\t-\t-\t0\n"));
}
END_TEST

/* The field f (0-based) of a formatted line, copied into out (cap). */
static size_t line_field(const char *line, int f, char *out, size_t cap)
{
	const char *fs[CRAWL_LOG_FIELDS];
	size_t fl[CRAWL_LOG_FIELDS];
	ck_assert_int_eq(crawl_log_split(line, strlen(line) - 1, fs, fl), CRAWL_LOG_FIELDS);
	ck_assert_uint_lt(fl[f], cap);
	memcpy(out, fs[f], fl[f]);
	out[fl[f]] = '\0';
	return fl[f];
}

/* Every field a server controls is capped: a 70 KB Content-Type (the
 * issue's) and a long redirect make a line the log's readers hold whole,
 * each cut field ending "...", never inside an escape or a UTF-8
 * character; a URL of the longest length allowed is kept whole. */
START_TEST(crawl_log_caps)
{
	size_t big = 70000;
	char *ct = malloc(big + 1), *redirect = malloc(40001), *url = malloc(8193);
	char *line = malloc(CRAWL_LOG_LINE_MAX * 2), *field = malloc(CRAWL_LOG_LINE_MAX);
	memset(ct, 'c', big);
	ct[big] = '\0';
	memcpy(ct, "text/html; x=", 13);
	memcpy(redirect, "http://r.test/", 14);
	memset(redirect + 14, 'r', 40000 - 14);
	redirect[40000] = '\0';
	memcpy(url, "http://u.test/", 14);
	memset(url + 14, 'u', 8192 - 14);
	url[8192] = '\0';
	struct crawl_log_entry e = { .timestamp_unix_ms = 1700000000123,
		                     .status = 301,
		                     .url = url,
		                     .via = url,
		                     .content_type = ct,
		                     .ip = "127.0.1.1",
		                     .redirect = redirect,
		                     .flags = CRAWL_LOG_REDIRECT };
	size_t n = crawl_log_format(&e, line, CRAWL_LOG_LINE_MAX * 2);
	ck_assert_uint_le(n, CRAWL_LOG_LINE_MAX);
	ck_assert_uint_eq(n, strlen(line));
	ck_assert_uint_eq(line_field(line, CRAWL_LOG_F_URL, field, CRAWL_LOG_LINE_MAX), 8192);
	ck_assert_str_eq(field, url);
	ck_assert_uint_eq(line_field(line, CRAWL_LOG_F_CTYPE, field, CRAWL_LOG_LINE_MAX),
	                  CRAWL_LOG_TEXT_MAX);
	ck_assert(strncmp(field, "text/html; x=ccc", 16) == 0);
	ck_assert_str_eq(field + CRAWL_LOG_TEXT_MAX - 4, "c...");
	ck_assert_uint_eq(line_field(line, CRAWL_LOG_F_REDIRECT, field, CRAWL_LOG_LINE_MAX),
	                  CRAWL_LOG_URL_MAX);
	ck_assert_str_eq(field + CRAWL_LOG_URL_MAX - 3, "...");

	/* exactly at the cap: whole; one byte more: cut */
	ct[CRAWL_LOG_TEXT_MAX] = '\0';
	crawl_log_format(&e, line, CRAWL_LOG_LINE_MAX * 2);
	line_field(line, CRAWL_LOG_F_CTYPE, field, CRAWL_LOG_LINE_MAX);
	ck_assert_str_eq(field, ct);
	ct[CRAWL_LOG_TEXT_MAX] = 'c';
	ct[CRAWL_LOG_TEXT_MAX + 1] = '\0';
	crawl_log_format(&e, line, CRAWL_LOG_LINE_MAX * 2);
	ck_assert_uint_eq(line_field(line, CRAWL_LOG_F_CTYPE, field, CRAWL_LOG_LINE_MAX),
	                  CRAWL_LOG_TEXT_MAX);

	/* escapes and UTF-8 at the cut: dropped whole, the field still reads back */
	for (size_t i = 0; i < big; i++)
		ct[i] = i % 3 == 0 ? '\x01' : i % 3 == 1 ? '\xc3' : '\xa9';
	ct[big] = '\0';
	crawl_log_format(&e, line, CRAWL_LOG_LINE_MAX * 2);
	size_t fl = line_field(line, CRAWL_LOG_F_CTYPE, field, CRAWL_LOG_LINE_MAX);
	ck_assert_uint_le(fl, CRAWL_LOG_TEXT_MAX);
	ck_assert_uint_gt(fl, CRAWL_LOG_TEXT_MAX - 8);
	ck_assert_str_eq(field + fl - 9, "\\x01\xc3\xa9...");
	char *plain = malloc(fl + 1);
	ck_assert_ptr_nonnull(crawl_log_unescape(field, fl, plain));
	free(plain);

	/* and written: the file's line is the formatted one */
	char path[600];
	snprintf(path, sizeof(path), "%s/crawl.log", tmpdir);
	unlink(path);
	struct crawl_log *log = NULL;
	ck_assert_int_eq(crawl_log_open(path, &log), CRAWL_LOG_OK);
	ck_assert_int_eq(crawl_log_write(log, &e), CRAWL_LOG_OK);
	ck_assert_int_eq(crawl_log_close(log), CRAWL_LOG_OK);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(fgets(field, CRAWL_LOG_LINE_MAX, f)); /* the header */
	ck_assert_ptr_nonnull(fgets(field, CRAWL_LOG_LINE_MAX, f));
	ck_assert_str_eq(field, line);
	fclose(f);
	unlink(path);
	free(ct);
	free(redirect);
	free(url);
	free(line);
	free(field);
}
END_TEST

static size_t gz(const void *in, size_t len, int wbits, unsigned char **out)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	deflateInit2(&zs, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY);
	size_t cap = deflateBound(&zs, len) + 64;
	*out = malloc(cap);
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	zs.next_out = *out;
	zs.avail_out = (uInt)cap;
	deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	return cap - zs.avail_out;
}

START_TEST(decode_codings)
{
	const char *text = "Hello hello hello hello, decoded world!";
	size_t tl = strlen(text);
	struct decode_output out;
	unsigned char *c;
	const int wbits[] = { 31, 15, -15 };
	const char *names[] = { "gzip", "deflate", "deflate" };
	for (int i = 0; i < 3; i++) {
		size_t cl = gz(text, tl, wbits[i], &c);
		ck_assert_int_eq(decode_body(names[i], c, cl, 0, &out), DECODE_OK);
		ck_assert_uint_eq(out.len, tl);
		ck_assert(memcmp(out.data, text, tl) == 0);
		ck_assert(!out.truncated);
		free(out.data);
		/* Cut input: truncated, not an error. */
		ck_assert_int_eq(decode_body(names[i], c, cl / 2, 0, &out), DECODE_OK);
		ck_assert(out.truncated);
		free(out.data);
		free(c);
	}
	/* Brotli, and a stack "gzip, br" (br applied last, decoded first). */
	uint8_t br[256];
	size_t bl = sizeof(br);
	ck_assert(
	        BrotliEncoderCompress(5, 22, BROTLI_MODE_TEXT, tl, (const uint8_t *)text, &bl, br));
	ck_assert_int_eq(decode_body("br", br, bl, 0, &out), DECODE_OK);
	ck_assert_uint_eq(out.len, tl);
	ck_assert(memcmp(out.data, text, tl) == 0);
	free(out.data);
	size_t cl = gz(text, tl, 31, &c);
	uint8_t br2[512];
	size_t bl2 = sizeof(br2);
	ck_assert(BrotliEncoderCompress(5, 22, BROTLI_MODE_GENERIC, cl, c, &bl2, br2));
	ck_assert_int_eq(decode_body("gzip, br", br2, bl2, 0, &out), DECODE_OK);
	ck_assert_uint_eq(out.len, tl);
	ck_assert(memcmp(out.data, text, tl) == 0);
	free(out.data);
	free(c);
	/* Identity copies, capped. */
	ck_assert_int_eq(decode_body(NULL, text, tl, 5, &out), DECODE_OK);
	ck_assert_uint_eq(out.len, 5);
	ck_assert(out.truncated);
	ck_assert_str_eq((char *)out.data, "Hello");
	free(out.data);
	/* Errors. */
	ck_assert_int_eq(decode_body("compress", text, tl, 0, &out), DECODE_ERR_UNSUPPORTED);
	ck_assert_ptr_null(out.data);
	ck_assert_int_eq(decode_body("gzip", text, tl, 0, &out), DECODE_ERR_CORRUPT);
	ck_assert_int_eq(decode_body("br", text, tl, 0, &out), DECODE_ERR_CORRUPT);
}
END_TEST

START_TEST(decode_bomb)
{
	/* 256 MiB of zeros in ~256 KiB: stops at the cap. */
	size_t n = 256u << 20;
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	deflateInit2(&zs, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY);
	unsigned char zeros[65536] = { 0 };
	size_t cap = 1u << 20, len = 0;
	unsigned char *c = malloc(cap);
	for (size_t done = 0; done < n; done += sizeof(zeros)) {
		zs.next_in = zeros;
		zs.avail_in = sizeof(zeros);
		int flush = done + sizeof(zeros) >= n ? Z_FINISH : Z_NO_FLUSH;
		do {
			zs.next_out = c + len;
			zs.avail_out = (uInt)(cap - len);
			deflate(&zs, flush);
			len = cap - zs.avail_out;
		} while (zs.avail_in > 0);
	}
	deflateEnd(&zs);
	struct decode_output out;
	ck_assert_int_eq(decode_body("x-gzip", c, len, 2u << 20, &out), DECODE_OK);
	ck_assert(out.truncated);
	ck_assert_uint_eq(out.len, 2u << 20);
	free(out.data);
	free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("io");
	TCase *tc = tcase_create("io");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sha1_vectors);
	tcase_add_test(tc, warc_roundtrip);
	tcase_add_test(tc, warc_transfer_encoding);
	tcase_add_test(tc, warc_http2_as_http11);
	tcase_add_test(tc, warc_reader_detects_corruption);
	tcase_add_test(tc, crawl_log_lines);
	tcase_add_test(tc, crawl_log_caps);
	tcase_add_test(tc, crawl_log_focus);
	tcase_add_test(tc, warc_revisit_long_url);
	tcase_add_test(tc, decode_codings);
	tcase_add_test(tc, decode_bomb);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
