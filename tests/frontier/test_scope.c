/*
 * Check suite for frontier/scope.h: each rule accepts what it should, rejects
 * what it should with the right reason, and counts it; hosts no resolver can
 * look up and port 0 are refused as "invalid-host" and "bad-port".
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "frontier/scope.h"
#include "frontier/url.h"

static enum scope_verdict chk(struct scope *s, const char *url, uint32_t depth)
{
	return scope_check(s, url, strlen(url), depth);
}

START_TEST(domains_and_prefixes)
{
	const char *doms[] = { "web.test", "Example.ORG" };
	const char *pres[] = { "https://other.test/docs/" };
	struct scope_config c;
	struct scope *s = NULL;

	scope_config_default(&c);
	c.domains = doms;
	c.n_domains = 2;
	c.prefixes = pres;
	c.n_prefixes = 1;
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	ck_assert_int_eq(chk(s, "http://web.test/", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://h1.web.test:8080/a", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://user:pw@h1.web.test/a", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://H1.WEB.TEST/a", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://www.example.org", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://xweb.test/", 0), SCOPE_OFF_DOMAIN);
	ck_assert_int_eq(chk(s, "http://web.test.evil/", 0), SCOPE_OFF_DOMAIN);
	ck_assert_int_eq(chk(s, "http://evil/?q=web.test", 0), SCOPE_OFF_DOMAIN);
	ck_assert_int_eq(chk(s, "https://other.test/docs/x", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "https://other.test/doc", 0), SCOPE_OFF_DOMAIN);
	ck_assert_uint_eq(scope_count(s, SCOPE_OK), 6);
	ck_assert_uint_eq(scope_count(s, SCOPE_OFF_DOMAIN), 4);
	scope_destroy(s);
	scope_destroy(NULL);
}
END_TEST

/* A URL a rule accepted: off the domains is fine, the rule's depth
 * replaces max_depth, and the trap limits still hold. */
START_TEST(accepted_by_rule)
{
	const char *doms[] = { "web.test" };
	struct scope_config c;
	struct scope *s = NULL;
	int off = -1;

	scope_config_default(&c);
	c.domains = doms;
	c.n_domains = 1;
	c.max_depth = 2;
	c.max_path_segments = 3;
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
#define ACC(u, d, md) scope_check_accepted(s, u, strlen(u), d, md, &off)
	ck_assert_int_eq(ACC("http://other.test/a", 1, 0), SCOPE_OK);
	ck_assert_int_eq(off, 1);
	ck_assert_int_eq(ACC("http://h1.web.test/a", 1, 0), SCOPE_OK);
	ck_assert_int_eq(off, 0);
	ck_assert_int_eq(ACC("http://other.test/a", 3, 0), SCOPE_TOO_DEEP);
	ck_assert_int_eq(ACC("http://other.test/a", 3, 5), SCOPE_OK);
	ck_assert_int_eq(ACC("http://other.test/a", 6, 5), SCOPE_TOO_DEEP);
	ck_assert_int_eq(ACC("http://other.test/a/b/c/d", 1, 0), SCOPE_TOO_MANY_SEGMENTS);
	ck_assert_int_eq(chk(s, "http://other.test/a", 1), SCOPE_OFF_DOMAIN);
	ck_assert_int_eq(chk(s, "http://h1.web.test/a", 3), SCOPE_TOO_DEEP);
#undef ACC
	ck_assert_uint_eq(scope_count(s, SCOPE_OK), 3);
	ck_assert_uint_eq(scope_count(s, SCOPE_TOO_DEEP), 3);
	scope_destroy(s);
}
END_TEST

START_TEST(no_restriction)
{
	struct scope_config c;
	struct scope *s = NULL;

	scope_config_default(&c);
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	ck_assert_int_eq(chk(s, "http://anything.example/", 1000), SCOPE_OK);
	ck_assert_int_eq(chk(s, "not a url", 0), SCOPE_BAD_URL);
	ck_assert_int_eq(chk(s, "http://", 0), SCOPE_BAD_URL);
	ck_assert_int_eq(chk(s, "http:///path", 0), SCOPE_BAD_URL);
	ck_assert_int_eq(chk(s, "http://[::1/", 0), SCOPE_BAD_URL);
	ck_assert_int_eq(chk(s, "http://[::1]:80/", 0), SCOPE_OK);
	ck_assert_int_eq(scope_check(s, NULL, 0, 0), SCOPE_BAD_URL);
	ck_assert_uint_eq(scope_count(s, SCOPE_BAD_URL), 5);
	scope_destroy(s);
}
END_TEST

START_TEST(limits)
{
	struct scope_config c;
	struct scope *s = NULL;
	char longurl[3000];

	scope_config_default(&c);
	c.max_depth = 3;
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	ck_assert_int_eq(chk(s, "http://a.test/", 3), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://a.test/", 4), SCOPE_TOO_DEEP);
	memcpy(longurl, "http://a.test/", 14);
	memset(longurl + 14, 'x', sizeof longurl - 15);
	longurl[sizeof longurl - 1] = '\0';
	ck_assert_int_eq(chk(s, longurl, 0), SCOPE_TOO_LONG);
	longurl[2048] = '\0';
	ck_assert_int_eq(chk(s, longurl, 0), SCOPE_OK);
	ck_assert_uint_eq(scope_count(s, SCOPE_TOO_DEEP), 1);
	ck_assert_uint_eq(scope_count(s, SCOPE_TOO_LONG), 1);
	scope_destroy(s);
}
END_TEST

START_TEST(traps)
{
	struct scope_config c;
	struct scope *s = NULL;
	char url[1024];
	size_t n;

	scope_config_default(&c);
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	ck_assert_int_eq(chk(s, "http://a.test/a/b/a/c", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://a.test/a/a/a", 0), SCOPE_REPEATED_SEGMENT);
	ck_assert_int_eq(chk(s, "http://a.test/cal/2020/x/2020/y/2020/", 0),
	                 SCOPE_REPEATED_SEGMENT);
	/* repeats in the query do not count; empty segments do not count */
	ck_assert_int_eq(chk(s, "http://a.test/a/b?x=/a/a/a", 0), SCOPE_OK);
	ck_assert_int_eq(chk(s, "http://a.test/a///b//", 0), SCOPE_OK);
	/* 32 distinct segments pass, 33 fail */
	n = (size_t)snprintf(url, sizeof url, "http://a.test");
	for (int i = 0; i < 32; i++)
		n += (size_t)snprintf(url + n, sizeof url - n, "/s%d", i);
	ck_assert_int_eq(chk(s, url, 0), SCOPE_OK);
	snprintf(url + n, sizeof url - n, "/s32");
	ck_assert_int_eq(chk(s, url, 0), SCOPE_TOO_MANY_SEGMENTS);
	ck_assert_uint_eq(scope_count(s, SCOPE_REPEATED_SEGMENT), 2);
	ck_assert_uint_eq(scope_count(s, SCOPE_TOO_MANY_SEGMENTS), 1);
	ck_assert_str_eq(scope_verdict_name(SCOPE_REPEATED_SEGMENT), "repeated-segment");
	scope_destroy(s);

	/* the rule can be turned off */
	c.max_segment_repeats = 0;
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	ck_assert_int_eq(chk(s, "http://a.test/a/a/a/a", 0), SCOPE_OK);
	scope_destroy(s);
}
END_TEST

/* The query-parameter rule, on by default (10): parameters are counted
 * between '&'s, empty ones skipped, the fragment not counted. */
START_TEST(query_params)
{
	static const struct {
		const char *url;
		enum scope_verdict v;
	} cases[] = {
		{ "http://h.test/p?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10", SCOPE_OK },
		{ "http://h.test/p?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11",
		  SCOPE_TOO_MANY_PARAMS },
		{ "http://h.test/p?a&a&a&a&a&a&a&a&a&a&a", SCOPE_TOO_MANY_PARAMS },
		{ "http://h.test/p?a=1&&&&&&&&&&&&&&&&b=2", SCOPE_OK },
		{ "http://h.test/p?a=1&b=2#&c&d&e&f&g&h&i&j&k&l", SCOPE_OK },
		{ "http://h.test/p#?a&b&c&d&e&f&g&h&i&j&k&l", SCOPE_OK },
		{ "http://h.test/p?", SCOPE_OK },
	};
	struct scope_config c;
	struct scope *s = NULL;

	scope_config_default(&c);
	ck_assert_uint_eq(c.max_query_params, 10);
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(chk(s, cases[i].url, 0) == cases[i].v, "%s", cases[i].url);
	ck_assert_uint_eq(scope_count(s, SCOPE_TOO_MANY_PARAMS), 2);
	ck_assert_str_eq(scope_verdict_name(SCOPE_TOO_MANY_PARAMS), "too-many-params");
	scope_destroy(s);
	c.max_query_params = 0; /* off */
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	ck_assert_int_eq(chk(s, cases[1].url, 0), SCOPE_OK);
	scope_destroy(s);
}
END_TEST

/* A URL whose host can never resolve, or whose port is 0, is refused once
 * here and counted, instead of being queued and retried for ever. */
START_TEST(invalid_hosts_and_ports)
{
	static const struct {
		const char *url;
		enum scope_verdict v;
	} cases[] = {
		{ "http://a..b/", SCOPE_INVALID_HOST },
		{ "http://.a.test/", SCOPE_INVALID_HOST },
		{ "http://a.test../", SCOPE_INVALID_HOST },
		{ "http://a!b.test/", SCOPE_INVALID_HOST },
		{ "http://a*b.test/", SCOPE_INVALID_HOST },
		{ "http://a%20b.test/", SCOPE_INVALID_HOST },
		{ "http://a.test./", SCOPE_OK },
		{ "http://a_b.test/", SCOPE_OK },
		{ "http://-a-.test/", SCOPE_OK },
		{ "http://10.0.0.1/", SCOPE_OK },
		{ "http://[::1]/", SCOPE_OK },
		{ "http://h.test:0/", SCOPE_BAD_PORT },
		{ "http://h.test:00/", SCOPE_BAD_PORT },
		{ "http://[::1]:0/", SCOPE_BAD_PORT },
		{ "http://u:p@h.test:0/", SCOPE_BAD_PORT },
		{ "http://h.test:65536/", SCOPE_BAD_PORT },
		{ "http://h.test:8x/", SCOPE_BAD_PORT },
		{ "http://h.test:1/", SCOPE_OK },
		{ "http://h.test:65535/", SCOPE_OK },
		{ "http://h.test:/", SCOPE_OK },
		{ "http://u:0@h.test/", SCOPE_OK }, /* a password, not a port */
	};
	char label[64], url[600];
	struct scope_config c;
	struct scope *s = NULL;
	size_t n;

	scope_config_default(&c);
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(chk(s, cases[i].url, 0) == cases[i].v, "%s", cases[i].url);
	ck_assert_uint_eq(scope_count(s, SCOPE_INVALID_HOST), 6);
	ck_assert_uint_eq(scope_count(s, SCOPE_BAD_PORT), 6);

	/* labels of 63 octets pass, 64 fail */
	memset(label, 'a', 63);
	label[63] = '\0';
	snprintf(url, sizeof url, "http://%s.test/", label);
	ck_assert_int_eq(chk(s, url, 0), SCOPE_OK);
	snprintf(url, sizeof url, "http://%sa.test/", label);
	ck_assert_int_eq(chk(s, url, 0), SCOPE_INVALID_HOST);
	/* names of 253 octets pass (254 with the root's dot), 254 fail */
	n = (size_t)snprintf(url, sizeof url, "http://");
	for (int i = 0; i < 3; i++)
		n += (size_t)snprintf(url + n, sizeof url - n, "%s.", label);
	n += (size_t)snprintf(url + n, sizeof url - n, "%.61s", label); /* 3 * 64 + 61 = 253 */
	snprintf(url + n, sizeof url - n, "/");
	ck_assert_int_eq(chk(s, url, 0), SCOPE_OK);
	snprintf(url + n, sizeof url - n, "./");
	ck_assert_int_eq(chk(s, url, 0), SCOPE_OK);
	snprintf(url + n, sizeof url - n, "b/");
	ck_assert_int_eq(chk(s, url, 0), SCOPE_INVALID_HOST);
	ck_assert_uint_eq(scope_count(s, SCOPE_INVALID_HOST), 8);
	ck_assert_str_eq(scope_verdict_name(SCOPE_INVALID_HOST), "invalid-host");
	ck_assert_str_eq(scope_verdict_name(SCOPE_BAD_PORT), "bad-port");
	scope_destroy(s);
}
END_TEST

/* The same refusals for crawl keys made by the URL parser, which keeps
 * port 0 and such hosts as the URL Standard says. */
START_TEST(crawl_keys_refused)
{
	static const struct {
		const char *ref;
		enum scope_verdict v;
	} cases[] = {
		{ "http://example.com:0/", SCOPE_BAD_PORT },
		{ "https://example.com:000/x", SCOPE_BAD_PORT },
		{ "http://a..example.com/", SCOPE_INVALID_HOST },
		{ "http://a$b.example.com/", SCOPE_INVALID_HOST },
		{ "http://ex%C2%ADample.com/", SCOPE_OK },
	};
	struct url *u = url_create(NULL);
	struct scope_config c;
	struct scope *s = NULL;
	char key[256];
	size_t klen;

	ck_assert_ptr_nonnull(u);
	scope_config_default(&c);
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_OK);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *r = cases[i].ref;
		ck_assert_int_eq(url_normalize(u, NULL, r, strlen(r), key, sizeof key, &klen),
		                 URL_OK);
		ck_assert_msg(scope_check(s, key, klen, 0) == cases[i].v, "%s -> %s", r, key);
	}
	scope_destroy(s);
	url_destroy(u);
}
END_TEST

START_TEST(bad_config)
{
	const char *doms[] = { "" };
	struct scope_config c;
	struct scope *s = (struct scope *)&c;

	scope_config_default(&c);
	c.domains = doms;
	c.n_domains = 1;
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_INVALID);
	ck_assert_ptr_null(s);
	c.domains = NULL;
	ck_assert_int_eq(scope_create(&c, &s), SCOPE_ERR_INVALID);
	ck_assert_int_eq(scope_create(NULL, &s), SCOPE_ERR_INVALID);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scope");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, domains_and_prefixes);
	tcase_add_test(tc, no_restriction);
	tcase_add_test(tc, accepted_by_rule);
	tcase_add_test(tc, limits);
	tcase_add_test(tc, query_params);
	tcase_add_test(tc, traps);
	tcase_add_test(tc, invalid_hosts_and_ports);
	tcase_add_test(tc, crawl_keys_refused);
	tcase_add_test(tc, bad_config);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
