/* Check suite for frontier/url.h: crawl keys, opt-in canonicalizations,
 * length limits, error codes, accessors, relative resolution (RFC 3986
 * section 5.4 examples, which the WHATWG parser agrees with for http). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/url.h"

/* Crawl key of `ref` (against `base` if not NULL) under flags; "ERR:<code>". */
static const char *key_of(const char *base, const char *ref, unsigned flags)
{
	static char out[8192];
	struct url_options opt;
	url_options_init(&opt);
	opt.flags = flags;
	struct url *u = url_create(&opt), *b = url_create(&opt);
	ck_assert_ptr_nonnull(u);
	ck_assert_ptr_nonnull(b);
	const struct url *bp = NULL;
	if (base) {
		ck_assert_int_eq(url_parse(b, base, strlen(base), NULL), URL_OK);
		bp = b;
	}
	size_t n = 0;
	enum url_error e = url_normalize(u, bp, ref, strlen(ref), out, sizeof out, &n);
	if (e != URL_OK)
		snprintf(out, sizeof out, "ERR:%d", (int)e);
	else
		ck_assert_uint_eq(n, strlen(out));
	url_destroy(u);
	url_destroy(b);
	return out;
}

static enum url_error err_of(const char *ref)
{
	struct url *u = url_create(NULL);
	enum url_error e = url_parse(u, ref, strlen(ref), NULL);
	url_destroy(u);
	return e;
}

START_TEST(test_crawl_key_basic)
{
	ck_assert_str_eq(key_of(NULL, "HTTP://Example.COM:80/a/./b/../c?%7euser#frag", 0),
	                 "http://example.com/a/c?~user");
	ck_assert_str_eq(key_of(NULL, "https://example.com:443", 0), "https://example.com/");
	ck_assert_str_eq(key_of(NULL, "https://example.com:8443/x", 0),
	                 "https://example.com:8443/x");
	ck_assert_str_eq(key_of(NULL, "http://x/%7e%41%2f%3a%2d%5F", 0), "http://x/~A%2F%3A-_");
	ck_assert_str_eq(key_of(NULL, "http://x/a b?c d#e f", 0), "http://x/a%20b?c%20d");
	ck_assert_str_eq(key_of(NULL, "http://x/%2e%2E/y/%2e/z", 0), "http://x/y/z");
	ck_assert_str_eq(key_of(NULL, "  http://x/\t\ny\n ", 0), "http://x/y");
	ck_assert_str_eq(key_of(NULL, "http:\\\\x\\a\\b", 0), "http://x/a/b");
	ck_assert_str_eq(key_of(NULL, "http://0x7f.1/", 0), "http://127.0.0.1/");
	ck_assert_str_eq(key_of(NULL, "http://[0:0:0:0:0:0:0:1]:80/", 0), "http://[::1]/");
	ck_assert_str_eq(key_of(NULL, "http://[2001:db8:0:0:1:0:0:1]/", 0),
	                 "http://[2001:db8::1:0:0:1]/");
	ck_assert_str_eq(key_of(NULL, "http://BÜcher.de/", 0), "http://xn--bcher-kva.de/");
	ck_assert_str_eq(key_of(NULL, "http://%41.com/", 0), "http://a.com/");
	ck_assert_str_eq(key_of(NULL, "http://x/é", 0), "http://x/%C3%A9");
}
END_TEST

START_TEST(test_not_http)
{
	char buf[64];
	ck_assert_str_eq(key_of(NULL, "ftp://x/", 0), "ERR:11");
	ck_assert_int_eq(URL_ERR_NOT_HTTP, 11);
	ck_assert_str_eq(key_of(NULL, "mailto:a@b.c", 0), "ERR:11");
	ck_assert_str_eq(key_of(NULL, "javascript:alert(1)", 0), "ERR:11");
	ck_assert_str_eq(key_of("http://a/", "javascript:void(0)", 0), "ERR:11");
	struct url *u = url_create(NULL);
	ck_assert_int_eq(url_parse(u, "file:///C|/x", 12, NULL), URL_OK);
	ck_assert_str_eq(url_href(u, NULL), "file:///C:/x");
	ck_assert(!url_is_http(u));
	ck_assert_int_eq(url_crawl_key(u, buf, sizeof buf, NULL), URL_ERR_NOT_HTTP);
	ck_assert_int_eq(url_parse(u, "data:text/plain,hi#x", 20, NULL), URL_OK);
	ck_assert_str_eq(url_href(u, NULL), "data:text/plain,hi#x");
	url_destroy(u);
}
END_TEST

START_TEST(test_errors)
{
	ck_assert_int_eq(err_of("foo/bar"), URL_ERR_NO_SCHEME_NO_BASE);
	ck_assert_int_eq(err_of(""), URL_ERR_NO_SCHEME_NO_BASE);
	ck_assert_int_eq(err_of("http://a:99999/"), URL_ERR_INVALID_PORT);
	ck_assert_int_eq(err_of("http://a:8x/"), URL_ERR_INVALID_PORT);
	ck_assert_int_eq(err_of("http://1.2.3.256/"), URL_ERR_INVALID_IPV4);
	ck_assert_int_eq(err_of("http://foo.09/"), URL_ERR_INVALID_IPV4);
	ck_assert_int_eq(err_of("http://[1::2::3]/"), URL_ERR_INVALID_IPV6);
	ck_assert_int_eq(err_of("http://[1:2/"), URL_ERR_INVALID_IPV6);
	ck_assert_int_eq(err_of("http://a b/"), URL_ERR_INVALID_HOST);
	ck_assert_int_eq(err_of("http://a%25b/"), URL_ERR_INVALID_HOST);
	ck_assert_int_eq(err_of("http://"), URL_ERR_MISSING_HOST);
	ck_assert_int_eq(err_of("http://:80/"), URL_ERR_MISSING_HOST);
	ck_assert_int_eq(err_of("http://u:p@/"), URL_ERR_CREDENTIALS_NO_HOST);
	ck_assert_int_eq(err_of("http://\xff\xfe.com/"), URL_ERR_IDNA);
	struct url *u = url_create(NULL);
	ck_assert_int_eq(url_parse(u, "http://a/", 9, u), URL_ERR_INVALID_ARG);
	ck_assert_int_eq(url_parse(u, "http://a:99999/", 15, NULL), URL_ERR_INVALID_PORT);
	/* a failed parse leaves nothing behind */
	ck_assert_str_eq(url_href(u, NULL), "");
	ck_assert(!url_is_http(u));
	url_destroy(u);
	for (int e = URL_OK; e <= URL_ERR_NOMEM; e++)
		ck_assert(strlen(url_strerror((enum url_error)e)) > 0);
	ck_assert_str_eq(url_strerror(URL_ERR_TOO_LONG), "URL too long");
}
END_TEST

/* A-labels that are no valid Punycode, or decode to what UTS #46 never
 * produces (controls, characters it maps to nothing such as U+00AD, plain
 * ASCII), are refused: they would go to DNS as names no user sees. */
START_TEST(test_idna_alabels)
{
	static const char *const refused[] = {
		"http://xn--a.com/",         /* U+0080, a C1 control */
		"http://xn--abc.com/",       /* U+0080..U+0082 */
		"http://xn--ab-5da.com/",    /* "a" U+00AD "b": a soft hyphen */
		"http://XN--AB-5DA.com/",    /* the same, upper case */
		"http://xn--b-vca9u.com/",   /* U+00FC "b" U+00AD */
		"http://xn--ab-g1t.com/",    /* "a" U+200B "b": zero-width space */
		"http://xn--ab-372n.com/",   /* "a" U+FE0F "b": variation selector */
		"http://xn--ab-.com/",       /* decodes to plain "ab" */
		"http://a.xn--zz!.com/",     /* not Punycode */
		"http://a.xn--99999999999/", /* Punycode overflow */
		"http://m\xc3\xbcnchen.xn--ab-5da.de/",
	};
	static const char *const kept[][2] = {
		{ "http://xn--n3h.com/", "http://xn--n3h.com/" }, /* U+2603: UTS #46 valid */
		{ "http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/" },
		{ "http://XN--ls8h.la/", "http://xn--ls8h.la/" },
		{ "http://xn--zca.com/", "http://xn--zca.com/" },
		{ "http://xn--.com/", "http://xn--.com/" },
		{ "http://a.b.c.xn--pokxncvks/", "http://a.b.c.xn--pokxncvks/" },
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		ck_assert_msg(err_of(refused[i]) == URL_ERR_IDNA, "%s", refused[i]);
	for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
		ck_assert_str_eq(key_of(NULL, kept[i][0], 0), kept[i][1]);
}
END_TEST

/* Code points UTS #46 maps to nothing vanish from the ASCII host. */
START_TEST(test_idna_ignored)
{
	static const char *const ignored[] = { "\xc2\xad",     "%C2%AD",       "\xcd\x8f",
		                               "\xe1\xa0\x8b", "\xe2\x80\x8b", "\xe2\x81\xa0",
		                               "\xef\xb8\x8f", "\xef\xbb\xbf", "\xf3\xa0\x84\x80" };
	char url[64];
	for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) {
		snprintf(url, sizeof url, "http://exa%smple.com/", ignored[i]);
		ck_assert_str_eq(key_of(NULL, url, 0), "http://example.com/");
		snprintf(url, sizeof url, "http://m\xc3\xbcn%schen.de/", ignored[i]);
		ck_assert_str_eq(key_of(NULL, url, 0), "http://xn--mnchen-3ya.de/");
	}
	ck_assert_int_eq(err_of("http://\xc2\xad/"), URL_ERR_IDNA);
}
END_TEST

START_TEST(test_length_limit)
{
	char *in = malloc(4096);
	memcpy(in, "http://x/", 9);
	memset(in + 9, 'a', 4096 - 9);
	struct url *u = url_create(NULL);
	char out[4096];
	size_t n;
	ck_assert_int_eq(url_parse(u, in, URL_DEFAULT_MAX_LEN + 1, NULL), URL_ERR_TOO_LONG);
	ck_assert_int_eq(url_parse(u, in, URL_DEFAULT_MAX_LEN, NULL), URL_OK);
	ck_assert_int_eq(url_crawl_key(u, out, sizeof out, &n), URL_OK);
	ck_assert_uint_eq(n, URL_DEFAULT_MAX_LEN);
	/* the key may not grow past the limit through percent-encoding */
	for (size_t i = 9; i + 1 < 1500; i += 2) {
		in[i] = (char)0xc3;
		in[i + 1] = (char)0xa9;
	}
	ck_assert_int_eq(url_parse(u, in, 1500, NULL), URL_OK);
	ck_assert_int_eq(url_crawl_key(u, out, sizeof out, &n), URL_ERR_TOO_LONG);
	/* caller's buffer too small */
	ck_assert_int_eq(url_parse(u, "http://x/abcdef", 15, NULL), URL_OK);
	ck_assert_int_eq(url_crawl_key(u, out, 8, &n), URL_ERR_NO_SPACE);
	url_destroy(u);
	/* configurable */
	struct url_options opt;
	url_options_init(&opt);
	ck_assert_int_eq(url_options_set(&opt, "max_url_length", "100"), URL_OK);
	u = url_create(&opt);
	ck_assert_int_eq(url_parse(u, in, 101, NULL), URL_ERR_TOO_LONG);
	ck_assert_int_eq(url_parse(u, "http://x/", 9, NULL), URL_OK);
	url_destroy(u);
	free(in);
}
END_TEST

START_TEST(test_canonicalizations)
{
	const char *q = "http://www.x.com/a/index.html?b=2&utm_source=s&a=1&fbclid=f&a=0#f";
	ck_assert_str_eq(key_of(NULL, q, 0),
	                 "http://www.x.com/a/index.html?b=2&utm_source=s&a=1&fbclid=f&a=0");
	ck_assert_str_eq(key_of(NULL, q, URL_CANON_STRIP_TRACKING),
	                 "http://www.x.com/a/index.html?b=2&a=1&a=0");
	ck_assert_str_eq(key_of(NULL, q, URL_CANON_STRIP_TRACKING | URL_CANON_SORT_QUERY),
	                 "http://www.x.com/a/index.html?a=1&a=0&b=2");
	ck_assert_str_eq(
	        key_of(NULL, q,
	               URL_CANON_STRIP_WWW | URL_CANON_STRIP_INDEX | URL_CANON_STRIP_TRACKING),
	        "http://x.com/a/?b=2&a=1&a=0");
	ck_assert_str_eq(key_of(NULL, "http://x/a?utm_medium=m&gclid=1", URL_CANON_STRIP_TRACKING),
	                 "http://x/a");
	ck_assert_str_eq(key_of(NULL, "http://x/a/b/", URL_CANON_STRIP_TRAILING_SLASH),
	                 "http://x/a/b");
	ck_assert_str_eq(key_of(NULL, "http://x/", URL_CANON_STRIP_TRAILING_SLASH), "http://x/");
	ck_assert_str_eq(key_of(NULL, "http://x/A/B%2fC", URL_CANON_LOWERCASE_PATH),
	                 "http://x/a/b%2Fc");
	ck_assert_str_eq(key_of(NULL, "http://x/a?", URL_CANON_DROP_EMPTY_QUERY), "http://x/a");
	ck_assert_str_eq(key_of(NULL, "http://x/a?", 0), "http://x/a?");
	ck_assert_str_eq(key_of(NULL, "https://x/a", URL_CANON_SCHEME_FOLD), "http://x/a");
	ck_assert_str_eq(key_of(NULL, "http://www./", URL_CANON_STRIP_WWW), "http://www/");
	ck_assert_str_eq(key_of(NULL, "http://www.www.x/", URL_CANON_STRIP_WWW), "http://x/");
	ck_assert_str_eq(key_of(NULL, "https://x:80/", URL_CANON_SCHEME_FOLD), "https://x:80/");
	ck_assert_str_eq(key_of(NULL, "https://x:81/", URL_CANON_SCHEME_FOLD), "http://x:81/");
	ck_assert_str_eq(key_of(NULL, "http://x/?utm_a=1&", URL_CANON_STRIP_TRACKING), "http://x/");
	ck_assert_str_eq(key_of(NULL, "http://x/?", URL_CANON_STRIP_TRACKING), "http://x/?");
	ck_assert_str_eq(key_of(NULL, "http://x/a/index.html/",
	                        URL_CANON_STRIP_INDEX | URL_CANON_STRIP_TRAILING_SLASH),
	                 "http://x/a");
	ck_assert_str_eq(key_of(NULL, "http://x/%%36C%", 0), "http://x/%256C%25");
	ck_assert_str_eq(key_of(NULL, "http://[::1]/", URL_CANON_STRIP_WWW), "http://[::1]/");
	struct url_options opt;
	url_options_init(&opt);
	ck_assert_int_eq(url_options_set(&opt, "strip_www", "true"), URL_OK);
	ck_assert_int_eq(url_options_set(&opt, "sort_query_params", "yes"), URL_OK);
	ck_assert_uint_eq(opt.flags, URL_CANON_STRIP_WWW | URL_CANON_SORT_QUERY);
	ck_assert_int_eq(url_options_set(&opt, "strip_www", "off"), URL_OK);
	ck_assert_uint_eq(opt.flags, URL_CANON_SORT_QUERY);
	ck_assert_int_eq(url_options_set(&opt, "no_such_option", "1"), URL_ERR_INVALID_ARG);
	ck_assert_int_eq(url_options_set(&opt, "strip_www", "maybe"), URL_ERR_INVALID_ARG);
	ck_assert_int_eq(url_options_set(&opt, "max_url_length", "12x"), URL_ERR_INVALID_ARG);
	ck_assert_uint_eq(opt.flags, URL_CANON_SORT_QUERY);
}
END_TEST

START_TEST(test_resolution)
{
	/* RFC 3986 5.4.1 and 5.4.2, as hrefs */
	static const char *cases[][2] = {
		{ "g", "http://a/b/c/g" },
		{ "./g", "http://a/b/c/g" },
		{ "g/", "http://a/b/c/g/" },
		{ "/g", "http://a/g" },
		{ "//g", "http://g/" },
		{ "?y", "http://a/b/c/d;p?y" },
		{ "g?y", "http://a/b/c/g?y" },
		{ "#s", "http://a/b/c/d;p?q#s" },
		{ "g#s", "http://a/b/c/g#s" },
		{ ";x", "http://a/b/c/;x" },
		{ "", "http://a/b/c/d;p?q" },
		{ ".", "http://a/b/c/" },
		{ "..", "http://a/b/" },
		{ "../g", "http://a/b/g" },
		{ "../..", "http://a/" },
		{ "../../../g", "http://a/g" },
		{ "/./g", "http://a/g" },
		{ "g.", "http://a/b/c/g." },
		{ "..g", "http://a/b/c/..g" },
		{ "./../g", "http://a/b/g" },
		{ "g;x=1/../y", "http://a/b/c/y" },
		{ "http:g", "http://a/b/c/g" },
		{ "https:g", "https://g/" },
		{ "\\\\h\\p", "http://h/p" },
	};
	struct url *u = url_create(NULL), *b = url_create(NULL);
	ck_assert_int_eq(url_parse(b, "http://a/b/c/d;p?q", 18, NULL), URL_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ck_assert_int_eq(url_parse(u, cases[i][0], strlen(cases[i][0]), b), URL_OK);
		ck_assert_str_eq(url_href(u, NULL), cases[i][1]);
	}
	url_destroy(u);
	url_destroy(b);
}
END_TEST

START_TEST(test_accessors)
{
	struct url *u = url_create(NULL);
	const char *in = "https://user:pw@Host.example:8443/p/q?x=1#frag";
	ck_assert_int_eq(url_parse(u, in, strlen(in), NULL), URL_OK);
	size_t n;
	const char *s = url_scheme(u, &n);
	ck_assert_int_eq((int)n, 5);
	ck_assert(!memcmp(s, "https", 5));
	s = url_username(u, &n);
	ck_assert(n == 4 && !memcmp(s, "user", 4));
	s = url_password(u, &n);
	ck_assert(n == 2 && !memcmp(s, "pw", 2));
	s = url_host(u, &n);
	ck_assert(n == 12 && !memcmp(s, "host.example", 12));
	ck_assert_int_eq(url_port(u), 8443);
	ck_assert_int_eq(url_port_effective(u), 8443);
	s = url_path(u, &n);
	ck_assert(n == 4 && !memcmp(s, "/p/q", 4));
	s = url_query(u, &n);
	ck_assert(n == 3 && !memcmp(s, "x=1", 3));
	s = url_fragment(u, &n);
	ck_assert(n == 4 && !memcmp(s, "frag", 4));
	s = url_request_target(u, &n);
	ck_assert(n == 8 && !memcmp(s, "/p/q?x=1", 8));
	char ok[64];
	ck_assert_int_eq(url_origin_key(u, ok, sizeof ok, &n), URL_OK);
	ck_assert_str_eq(ok, "https://host.example:8443");
	ck_assert_int_eq(url_origin_key(u, ok, 10, &n), URL_ERR_NO_SPACE);
	ck_assert_int_eq(url_parse(u, "http://h", 8, NULL), URL_OK);
	ck_assert_int_eq(url_port(u), -1);
	ck_assert_int_eq(url_port_effective(u), 80);
	ck_assert_ptr_null(url_query(u, &n));
	ck_assert_ptr_null(url_fragment(u, &n));
	s = url_request_target(u, &n);
	ck_assert(n == 1 && s[0] == '/');
	ck_assert_int_eq(url_origin_key(u, ok, sizeof ok, &n), URL_OK);
	ck_assert_str_eq(ok, "http://h:80");
	ck_assert_int_eq(url_parse(u, "http://h/?#", 11, NULL), URL_OK);
	ck_assert_ptr_nonnull(url_query(u, &n));
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_nonnull(url_fragment(u, &n));
	url_destroy(u);
	url_destroy(NULL);
}
END_TEST

START_TEST(test_idempotent)
{
	static const char *inputs[] = {
		"http://x/%7e%7E%2f%2F/a?%41=%62&b=%zz#f",
		"HTTP://WWW.EX.com:80/A/./B/../%2e%2E/c?q",
		"http://x/a%2e/%2E%2e%2e",
		"https://[::ffff:1.2.3.4]:443/?a=b&&c",
		"http://x/é?é#é",
		"http://xn--bcher-kva.de/%c3%a9",
		"http://x/ %20%41/",
	};
	unsigned flag_sets[] = { 0,
		                 URL_CANON_STRIP_TRACKING | URL_CANON_SORT_QUERY |
		                         URL_CANON_STRIP_WWW,
		                 URL_CANON_LOWERCASE_PATH | URL_CANON_STRIP_TRAILING_SLASH |
		                         URL_CANON_STRIP_INDEX | URL_CANON_DROP_EMPTY_QUERY };
	for (size_t f = 0; f < 3; f++) {
		for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
			char k1[4096];
			snprintf(k1, sizeof k1, "%s", key_of(NULL, inputs[i], flag_sets[f]));
			ck_assert_msg(strncmp(k1, "ERR", 3) != 0, "%s: %s", inputs[i], k1);
			ck_assert_str_eq(key_of(NULL, k1, flag_sets[f]), k1);
		}
	}
}
END_TEST

/* url_key_split: the host key and the host name of a crawl key. */
static void check_split(const char *key, int rc, size_t alen, const char *host)
{
	size_t a = 0, ho = 0, hl = 0;
	ck_assert_int_eq(url_key_split(key, strlen(key), &a, &ho, &hl), rc);
	if (rc != 0)
		return;
	ck_assert_uint_eq(a, alen);
	ck_assert_uint_eq(hl, strlen(host));
	ck_assert(memcmp(key + ho, host, hl) == 0);
}

START_TEST(test_key_split)
{
	check_split("http://example.com/a/b?q#f", 0, 18, "example.com");
	check_split("http://example.com", 0, 18, "example.com");
	check_split("https://h.test:8443/x", 0, 19, "h.test");
	check_split("http://u:p@h.test:81/", 0, 20, "h.test");
	check_split("http://a@b@h.test/", 0, 17, "h.test");
	check_split("http://[::1]:8080/x", 0, 17, "[::1]");
	check_split("http://h.test?q", 0, 13, "h.test");
	check_split("http://h.test#f", 0, 13, "h.test");
	check_split("http:/h.test/", -1, 0, NULL);
	check_split("h.test/a", -1, 0, NULL);
	check_split("http://", -1, 0, NULL);
	check_split("http://:80/", -1, 0, NULL);
	check_split("http://u@/", -1, 0, NULL);
	check_split("http://[::1/", -1, 0, NULL);
	/* only len bytes count: the key need not end with a NUL */
	size_t a, ho, hl;
	ck_assert_int_eq(url_key_split("http://h.test/path", 13, &a, &ho, &hl), 0);
	ck_assert_uint_eq(a, 13);
	ck_assert_uint_eq(hl, 6);
}
END_TEST

/* The host key (the part of the crawl key url_key_split names) of ref. */
static const char *host_key_of(const char *base, const char *ref, unsigned flags)
{
	static char hk[256];
	const char *key = key_of(base, ref, flags);
	size_t a = 0, ho, hl;
	ck_assert_int_eq(url_key_split(key, strlen(key), &a, &ho, &hl), 0);
	ck_assert_uint_lt(a, sizeof hk);
	memcpy(hk, key, a);
	hk[a] = '\0';
	return hk;
}

/* One server is one host: scheme, host and port make the host key; the
 * userinfo a page writes and a domain's final dot do not. */
START_TEST(test_host_key_server)
{
	static const char *const same[] = {
		"http://victim.test/p",      "http://u0@victim.test/p0", "http://u19@victim.test/x",
		"http://u:pw@victim.test/",  "http://:pw@victim.test/",  "http://victim.test./p",
		"http://u@VICTIM.test.:80/", "http://victim.test../",    "http://a@b@victim.test/",
		"http://%75@victim.test/",   "HTTP://victim.test.:/q",
	};
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
		ck_assert_str_eq(host_key_of(NULL, same[i], 0), "http://victim.test");
	/* the page's base carries userinfo: relative links inherit none of it */
	ck_assert_str_eq(key_of("http://u:p@victim.test/a/", "b?c", 0), "http://victim.test/a/b?c");
	ck_assert_str_eq(key_of(NULL, "http://u0@victim.test./p0#f", 0), "http://victim.test/p0");
	/* scheme and port still tell servers apart */
	ck_assert_str_eq(host_key_of(NULL, "https://u@victim.test./", 0), "https://victim.test");
	ck_assert_str_eq(host_key_of(NULL, "http://u@victim.test.:8080/", 0),
	                 "http://victim.test:8080");
	ck_assert_str_eq(host_key_of(NULL, "http://u@[::1]:81/", 0), "http://[::1]:81");
	ck_assert_str_eq(host_key_of(NULL, "http://u@10.0.0.1./", 0), "http://10.0.0.1");
	/* with the canonicalizations on, and for hosts made of dots */
	ck_assert_str_eq(host_key_of(NULL, "http://u@www.victim.test./", URL_CANON_STRIP_WWW),
	                 "http://victim.test");
	ck_assert_str_eq(host_key_of(NULL, "http://www./", URL_CANON_STRIP_WWW), "http://www");
	ck_assert_str_eq(host_key_of(NULL, "http://www../", URL_CANON_STRIP_WWW), "http://.");
	ck_assert_str_eq(host_key_of(NULL, "http://../", 0), "http://.");
	ck_assert_str_eq(host_key_of(NULL, "https://u:p@victim.test./", URL_CANON_SCHEME_FOLD),
	                 "http://victim.test");
	/* the URL module still reads the userinfo; only the key leaves it out */
	struct url *u = url_create(NULL);
	const char *in = "http://u7:pw@victim.test./";
	size_t n;
	ck_assert_int_eq(url_parse(u, in, strlen(in), NULL), URL_OK);
	ck_assert(url_username(u, &n) != NULL && n == 2);
	ck_assert_str_eq(url_href(u, NULL), "http://u7:pw@victim.test./");
	url_destroy(u);
}
END_TEST

/* Host names a resolver can look up; the length limits are in test_scope. */
START_TEST(test_host_is_dns_name)
{
	static const char *const good[] = { "example.com", "EXAMPLE.com.", "a",  "xn--bcher-kva.de",
		                            "a_b-c.d",     "1.2.3.4",      "-a-" };
	static const char *const bad[] = { "",      ".",    "..",         "a..b", ".a",
		                           "a.b..", "a b",  "a!b",        "a*b",  "a/b",
		                           "[::1]", "a%41", "\xc3\xbc.de" };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		ck_assert_msg(url_host_is_dns_name(good[i], strlen(good[i])), "%s", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!url_host_is_dns_name(bad[i], strlen(bad[i])), "%s", bad[i]);
	ck_assert(!url_host_is_dns_name(NULL, 0));
	ck_assert(url_host_is_dns_name("ab.c", 2)); /* only len bytes count */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("url");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_crawl_key_basic);
	tcase_add_test(tc, test_not_http);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_length_limit);
	tcase_add_test(tc, test_canonicalizations);
	tcase_add_test(tc, test_resolution);
	tcase_add_test(tc, test_accessors);
	tcase_add_test(tc, test_idempotent);
	tcase_add_test(tc, test_key_split);
	tcase_add_test(tc, test_host_key_server);
	tcase_add_test(tc, test_host_is_dns_name);
	tcase_add_test(tc, test_idna_alabels);
	tcase_add_test(tc, test_idna_ignored);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
