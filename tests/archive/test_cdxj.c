/*
 * Check suite for CDXJ lines (store/cdxj.h). The expected values are what
 * warcio.js 2.4.11's cdx-index printed for the same records (the
 * end-to-end test, archive_e2e.py, compares whole files with it again).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/store/cdxj.h"

static struct cdxj_indexer *ix;

static void setup(void)
{
	ix = cdxj_indexer_create(0);
	ck_assert_ptr_nonnull(ix);
}

static void teardown(void)
{
	cdxj_indexer_destroy(ix);
}

static const char *key_of(const char *url)
{
	const char *k;
	size_t n;
	ck_assert_int_eq(cdxj_indexer_urlkey(ix, url, strlen(url), &k, &n), CDXJ_OK);
	ck_assert_uint_eq(strlen(k), n);
	return k;
}

START_TEST(urlkeys_as_warcio)
{
	ck_assert_str_eq(key_of("http://www.Example.com/A/b?z=1&a=2"), "com,example)/a/b?a=2&z=1");
	ck_assert_str_eq(key_of("https://www2.example.com:8443/x?b&a&"),
	                 "com,example:8443)/x?&a&b");
	ck_assert_str_eq(key_of("http://WWW.example.com/"), "com,example,www)/");
	ck_assert_str_eq(key_of("http://127.0.0.1:8080/p"), "1,0,0,127:8080)/p");
	ck_assert_str_eq(key_of("http://[::1]/x"), "[::1])/x");
	ck_assert_str_eq(key_of("ftp://x/y"), "ftp://x/y");
	ck_assert_str_eq(key_of("http://www.example.com/?"), "com,example)/");
	ck_assert_str_eq(key_of("http://user:pw@example.com/a"), "com,example)/a");
	ck_assert_str_eq(key_of("http://exa mple.com/"), "http://exa mple.com/");
	ck_assert_str_eq(key_of("http://example.com/a?c=3&b=2&a=1&B=0"),
	                 "com,example)/a?a=1&b=0&b=2&c=3");
	ck_assert_str_eq(key_of("http://www12.example.com:80/%7Euser/%2e%2E/x"), "com,example)/x");
}
END_TEST

/* The line of a response (or revisit) record with this HTTP block. */
static const char *line_of(const char *type, const char *url, const char *block, size_t len,
                           const char *digest)
{
	const char *line;
	size_t n;
	struct cdxj_record r = {
		.type = type,
		.type_len = strlen(type),
		.url = url,
		.url_len = url ? strlen(url) : 0,
		.date = "2024-05-06T07:08:09.123Z",
		.date_len = 24,
		.payload_digest = digest,
		.payload_digest_len = digest ? strlen(digest) : 0,
		.content_type = "application/http; msgtype=response",
		.content_type_len = 34,
		.block = (const uint8_t *)block,
		.block_len = len,
		.offset = 5,
		.length = 7,
		.filename = "f.warc.gz",
	};
	enum cdxj_error rc = cdxj_indexer_line(ix, &r, &line, &n);
	if (rc == CDXJ_SKIP)
		return NULL;
	ck_assert_int_eq(rc, CDXJ_OK);
	ck_assert_uint_eq(strlen(line), n);
	ck_assert(line[n - 1] == '\n');
	return line;
}

#define B(s) s, sizeof s - 1

START_TEST(fields_as_warcio)
{
	ck_assert_str_eq(
	        line_of("response", "http://www.Example.com/A/b?z=1&a=2",
	                B("HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\nbody"),
	                "sha1:ABCDEF"),
	        "com,example)/a/b?a=2&z=1 20240506070809 "
	        "{\"url\":\"http://www.Example.com/A/b?z=1&a=2\",\"mime\":\"text/html\","
	        "\"status\":\"200\",\"digest\":\"ABCDEF\",\"length\":\"7\",\"offset\":\"5\","
	        "\"filename\":\"f.warc.gz\"}\n");
	/* several Content-Types joined; a status word read as a number */
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.1 200\r\nContent-Type: a/b\r\nContent-Type: "
	                                       "c/d;x\r\n\r\n"),
	                                     "sha1:X"),
	                             "\"mime\":\"a/b, c/d\",\"status\":\"200\""));
	ck_assert_ptr_nonnull(strstr(
	        line_of("response", "http://a/", B("HTTP/1.1  200 OK\r\n\r\n"), "sha1:ABC:DEF"),
	        "\"status\":\"0\",\"digest\":\"ABC\""));
	ck_assert_ptr_nonnull(
	        strstr(line_of("response", "http://a/", B("HTTP/1.1 abc OK\r\n\r\n"), "nocolon"),
	               "\"status\":\"NaN\",\"length\""));
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/", B("HTTP/1.1\r\n\r\n"), NULL),
	                             "\"status\":\"\",\"length\""));
	const char *nums[][2] = {
		{ "1e3", "1000" },  { "0x1F", "31" },
		{ "-0", "0" },      { ".5e-7", "5e-8" },
		{ "0302", "302" },  { "99999999999999999999999", "1e+23" },
		{ "1.25", "1.25" }, { "123456789012345678", "123456789012345680" },
		{ "+7", "7" },      { "Infinity", "Infinity" }
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		char block[128], want[64];
		int n = snprintf(block, sizeof block, "HTTP/1.1 %s OK\r\n\r\n", nums[i][0]);
		snprintf(want, sizeof want, "\"status\":\"%s\"", nums[i][1]);
		ck_assert_msg(
		        strstr(line_of("response", "http://a/", block, (size_t)n, NULL), want),
		        "%s", nums[i][0]);
	}
	/* header lines ended by bare LF: the block runs to the first CRLF CRLF */
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.0 0302 Found\nContent-Type: text/css\nX: "
	                                       "y\n\nbody\r\n\r\nmore"),
	                                     NULL),
	                             "\"mime\":\"text/css\",\"status\":\"302\""));
	/* non-ASCII, invalid UTF-8, NUL, folding, controls, names with spaces */
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.1 200 OK\r\nContent-Type: text/"
	                                       "h\xc3\xa9ml\r\n\r\n"),
	                                     NULL),
	                             "\"mime\":\"text/h\xc3\xa9ml\""));
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.1 200 OK\r\nContent-Type: "
	                                       "text/\xe2\x82\xacuro\r\n\r\n"),
	                                     NULL),
	                             "\"mime\":\"text/\xc3\xa2\xc2\x82\xc2\xacuro\""));
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.1 200 OK\r\nContent-Type: "
	                                       "te\xffxt/x\r\n\r\n"),
	                                     NULL),
	                             "\"mime\":\"te\xc3\xaf\xc2\xbf\xc2\xbdxt/x\""));
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.1 200 OK\r\nContent-Type: a\0b\r\nContent-"
	                                       "Type: c/d\r\n\r\n"),
	                                     NULL),
	                             "\"mime\":\"c/d\""));
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.1 200 OK\r\nContent-Type: text/\r\n  html "
	                                       ";q\r\n\r\n"),
	                                     NULL),
	                             "\"mime\":\"text/  html\""));
	ck_assert_ptr_nonnull(strstr(line_of("response", "http://a/",
	                                     B("HTTP/1.1 200 OK\r\nContent-Type: "
	                                       "a\x01\"\\b\r\n\r\n"),
	                                     NULL),
	                             "\"mime\":\"a\\u0001\\\"\\\\b\""));
	ck_assert_ptr_null(
	        strstr(line_of("response", "http://a/",
	                       B("HTTP/1.1 200 OK\r\nContent-Type : text/html\r\n\r\n"), NULL),
	               "mime"));
	/* revisits, other records, a record without a URL */
	ck_assert_ptr_nonnull(strstr(line_of("revisit", "http://a/r",
	                                     B("HTTP/1.1 304 Not Modified\r\nContent-Type: "
	                                       "text/html\r\n\r\n"),
	                                     "sha1:X"),
	                             "\"mime\":\"warc/revisit\",\"status\":\"304\""));
	ck_assert_ptr_nonnull(strstr(line_of("revisit", "http://a/r", "", 0, "sha1:X"),
	                             "\"mime\":\"warc/revisit\",\"digest\""));
	ck_assert_ptr_nonnull(strstr(line_of("resource", "http://a/", B("hi"), NULL),
	                             "\"mime\":\"application/http; msgtype=response\",\"length\""));
	ck_assert_ptr_null(line_of("request", "http://a/", B("GET / HTTP/1.1\r\n\r\n"), NULL));
	ck_assert_ptr_null(line_of("warcinfo", "http://a/", B("x: y\r\n"), NULL));
	ck_assert(strncmp(line_of("response", NULL, B("HTTP/1.1 200 OK\r\n\r\n"), NULL),
	                  "undefined 20240506070809 {\"status\":\"200\"", 40) == 0);
}
END_TEST

START_TEST(locations_read_back)
{
	const char *line = line_of("response", "http://a/\"b", B("HTTP/1.1 200 OK\r\n\r\n"), "s:d");
	struct cdxj_location loc;
	size_t n = strlen(line) - 1;
	ck_assert_int_eq(cdxj_line_location(line, n, &loc), CDXJ_OK);
	ck_assert_uint_eq(loc.offset, 5);
	ck_assert_uint_eq(loc.length, 7);
	ck_assert_uint_eq(loc.filename_len, 9);
	ck_assert(memcmp(loc.filename, "f.warc.gz", 9) == 0);
	/* every cut of the line is refused */
	for (size_t k = 0; k < n; k++)
		ck_assert_int_eq(cdxj_line_location(line, k, &loc), CDXJ_ERR_INVALID);
	char bad[512];
	snprintf(bad, sizeof bad, "%s", line);
	bad[strlen(bad) - 4] = '"';
	ck_assert_int_eq(cdxj_line_location(bad, n, &loc), CDXJ_ERR_INVALID);
	const char *garbage = "com,example)/ 20200101000000 {\"url\":\"x\"}";
	ck_assert_int_eq(cdxj_line_location(garbage, strlen(garbage), &loc), CDXJ_ERR_INVALID);
}
END_TEST

START_TEST(json_and_utf8)
{
	struct cdxj_text t = { 0 };
	ck_assert_int_eq(cdxj_json_string(&t, "a\"\\\b\f\n\r\t\x1f\x7f\xc3\xa9", 12), 0);
	ck_assert_str_eq(t.p, "\"a\\\"\\\\\\b\\f\\n\\r\\t\\u001f\x7f\xc3\xa9\"");
	t.len = 0;
	/* the WHATWG decoder's replacements: one U+FFFD per maximal subpart */
	const char in[] = "a\xe2\x82"
	                  "b\xed\xa0\x80"
	                  "c\xf0\x9f\x98\x80\xc3";
	ck_assert_int_eq(cdxj_utf8_sanitize(&t, (const uint8_t *)in, sizeof in - 1), 0);
	ck_assert_str_eq(t.p, "a\xef\xbf\xbd"
	                      "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
	                      "c\xf0\x9f\x98\x80\xef\xbf\xbd");
	free(t.p);
}
END_TEST

/* Any writer's lines read back: spacing, bare numbers, escapes undone;
 * torn and malformed ones refused. */
START_TEST(lines_of_any_writer)
{
	struct cdxj_fields c;
	char a[] = "com,example)/a%20b 20260102030405 { \"url\" : \"http://example.com/a b\\u00e9"
	           "\\ud83d\\ude00\\\"\", \"mime\": \"text/html\", \"status\": 200, "
	           "\"digest\": \"sha1:X\", \"length\": \"12\", \"offset\": 345, \"filename\": "
	           "\"d\\/x.warc.gz\", \"extra\": [1] }";
	/* an array value is not one this reader knows: refused */
	ck_assert_int_eq(cdxj_line_read(a, strlen(a), &c), CDXJ_ERR_INVALID);
	char b[] = "com,example)/a%20b 20260102030405 { \"url\" : \"http://example.com/a b\\u00e9"
	           "\\ud83d\\ude00\\\"\", \"mime\": \"text/html\", \"status\": 200, "
	           "\"digest\": \"sha1:X\", \"length\": \"12\", \"offset\": 345, \"filename\": "
	           "\"d\\/x.warc.gz\", \"extra\": true }";
	ck_assert_int_eq(cdxj_line_read(b, strlen(b), &c), CDXJ_OK);
	ck_assert_str_eq(c.urlkey, "com,example)/a%20b");
	ck_assert_str_eq(c.timestamp, "20260102030405");
	ck_assert_str_eq(c.url, "http://example.com/a b\xc3\xa9\xf0\x9f\x98\x80\"");
	ck_assert_str_eq(c.mime, "text/html");
	ck_assert_str_eq(c.status, "200");
	ck_assert_str_eq(c.digest, "sha1:X");
	ck_assert_str_eq(c.filename, "d/x.warc.gz");
	ck_assert(c.has_offset && c.has_length);
	ck_assert_uint_eq(c.offset, 345);
	ck_assert_uint_eq(c.length, 12);
	const char *bad[] = {
		"k 2026 {\"url\":\"http://x/\"",    /* torn */
		"k 2026 {\"url\":\"http://x/\"} x", /* after the object */
		"k 2026 {\"url\":\"a\\u0000b\"}",   /* an escaped NUL */
		"k 2026 {\"url\":\"a\tb\"}",        /* a raw control byte */
		"k 2026 {\"url\":\"a\\qb\"}",       /* an unknown escape */
		"k 2026 {\"offset\":\"-1\"}",       /* not a decimal number */
		"k 20x6 {\"url\":\"http://x/\"}",   /* not a timestamp */
		"{\"url\":\"http://x/\"}",          /* no key or timestamp */
		"k 2026 {\"url\" \"http://x/\"}",   /* no ':' */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char line[128];
		snprintf(line, sizeof line, "%s", bad[i]);
		ck_assert_msg(cdxj_line_read(line, strlen(line), &c) == CDXJ_ERR_INVALID, "%s",
		              bad[i]);
	}
	/* a lone surrogate becomes U+FFFD, as a JSON decoder makes it */
	char d[] = "k 2026 {\"url\":\"a\\ud800b\"}";
	ck_assert_int_eq(cdxj_line_read(d, strlen(d), &c), CDXJ_OK);
	ck_assert_str_eq(c.url, "a\xef\xbf\xbd"
	                        "b");
	ck_assert(!c.has_offset);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cdxj");
	TCase *tc = tcase_create("lines");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, urlkeys_as_warcio);
	tcase_add_test(tc, fields_as_warcio);
	tcase_add_test(tc, locations_read_back);
	tcase_add_test(tc, json_and_utf8);
	tcase_add_test(tc, lines_of_any_writer);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
