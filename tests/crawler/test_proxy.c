/*
 * test_proxy.c: Check suite for crawler/net/proxy.h: which hosts bypass the
 * proxy (the no_proxy rules, the environment's list when the key is
 * empty) and which transfers keep the crawler's address pinned.
 */
#include <check.h>
#include <stdlib.h>

#include "crawler/net/proxy.h"

/* The proxy host goes through ("" when direct), and the pin verdict. */
static const char *route(const struct proxy *p, const char *host, bool *pin)
{
	const char *via = proxy_for(p, host, pin);
	return via ? via : "";
}

START_TEST(test_no_proxy_rules)
{
	struct proxy *p = NULL;
	bool pin = false;
	ck_assert_int_eq(proxy_create("http://127.0.0.1:3128",
	                              ".Example.org, h1.web.test,,"
	                              "[::1] 10.0.0.0/8 127.0.1.2",
	                              &p),
	                 0);
	ck_assert_str_eq(route(p, "example.org", &pin), "");
	ck_assert(pin);
	ck_assert_str_eq(route(p, "WWW.example.ORG", &pin), "");
	ck_assert_str_eq(route(p, "badexample.org", &pin), "http://127.0.0.1:3128");
	ck_assert(!pin); /* an HTTP proxy resolves names itself */
	ck_assert_str_eq(route(p, "h1.web.test", &pin), "");
	ck_assert_str_eq(route(p, "h11.web.test", &pin), "http://127.0.0.1:3128");
	ck_assert_str_eq(route(p, "[::1]", &pin), "");
	ck_assert_str_eq(route(p, "127.0.1.2", &pin), "");
	ck_assert_str_eq(route(p, "127.0.1.3", &pin), "http://127.0.0.1:3128");
	/* CIDR is not read: 10.1.2.3 goes through the proxy. */
	ck_assert_str_eq(route(p, "10.1.2.3", &pin), "http://127.0.0.1:3128");
	proxy_destroy(p);

	ck_assert_int_eq(proxy_create("socks5h://127.0.0.1:1080", " * ", &p), 0);
	ck_assert_str_eq(route(p, "anything.example", &pin), "");
	proxy_destroy(p);
}
END_TEST

START_TEST(test_schemes_and_pinning)
{
	struct proxy *p = NULL;
	bool pin = false;
	ck_assert_int_eq(proxy_create("", "x", &p), 0);
	ck_assert_ptr_null(p);
	ck_assert_str_eq(route(NULL, "example.org", &pin), "");
	ck_assert(pin);
	static const struct {
		const char *url;
		bool pin;
	} cases[] = {
		{ "http://p:3128", false },    { "HTTPS://p:3129", false },
		{ "p:3128", false },           { "socks5h://p:1080", false },
		{ "socks4a://p:1080", false }, { "socks5://p:1080", true },
		{ "socks4://p:1080", true },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ck_assert_int_eq(proxy_create(cases[i].url, "none.example", &p), 0);
		ck_assert_str_eq(route(p, "example.org", &pin), cases[i].url);
		ck_assert_msg(pin == cases[i].pin, "%s", cases[i].url);
		proxy_destroy(p);
	}
	ck_assert_int_eq(proxy_create("ftp://p:21", NULL, &p), -1);
	ck_assert_ptr_null(p);
	proxy_destroy(NULL);
}
END_TEST

START_TEST(test_environment_list)
{
	struct proxy *p = NULL;
	bool pin;
	unsetenv("no_proxy");
	setenv("NO_PROXY", "upper.example", 1);
	ck_assert_int_eq(proxy_create("http://p:3128", NULL, &p), 0);
	ck_assert_str_eq(route(p, "upper.example", &pin), "");
	proxy_destroy(p);
	setenv("no_proxy", "lower.example", 1);
	ck_assert_int_eq(proxy_create("http://p:3128", "", &p), 0);
	ck_assert_str_eq(route(p, "lower.example", &pin), "");
	ck_assert_str_eq(route(p, "upper.example", &pin), "http://p:3128");
	proxy_destroy(p);
	/* The key wins over the environment. */
	ck_assert_int_eq(proxy_create("http://p:3128", "key.example", &p), 0);
	ck_assert_str_eq(route(p, "lower.example", &pin), "http://p:3128");
	ck_assert_str_eq(route(p, "key.example", &pin), "");
	proxy_destroy(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proxy");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_no_proxy_rules);
	tcase_add_test(tc, test_schemes_and_pinning);
	tcase_add_test(tc, test_environment_list);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
