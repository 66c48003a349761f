/*
 * test_ipaddr.c: addresses of both families (frontier/base/ipaddr.h): parsing
 * (bare, bracketed as URL hosts carry them, refused forms), text form,
 * the per-IP politeness group (an IPv4 address alone, an IPv6 /64), and
 * IPv6 literal URLs from the parser to the host name the crawl resolves.
 */
#include <check.h>
#include <string.h>

#include "frontier/base/ipaddr.h"
#include "frontier/url.h"

static struct ip_addr parsed(const char *s)
{
	struct ip_addr a;
	ck_assert_msg(ip_addr_parse(s, strlen(s), &a) == 0, "%s does not parse", s);
	return a;
}

static const char *text(const struct ip_addr *a)
{
	static char buf[IP_ADDR_STRLEN];
	return ip_addr_format(a, buf, sizeof buf);
}

START_TEST(parse_and_format)
{
	struct ip_addr a = parsed("192.0.2.7");
	ck_assert_int_eq(a.family, IP_V4);
	ck_assert_str_eq(text(&a), "192.0.2.7");
	a = parsed("2001:DB8:0:0:0:0:0:1");
	ck_assert_int_eq(a.family, IP_V6);
	ck_assert_str_eq(text(&a), "2001:db8::1");
	a = parsed("[::1]");
	ck_assert_int_eq(a.family, IP_V6);
	ck_assert_str_eq(text(&a), "::1");
	a = parsed("::ffff:10.0.0.1");
	ck_assert_int_eq(a.family, IP_V6);
	ck_assert_str_eq(text(&a), "::ffff:10.0.0.1");
	/* Only len bytes count. */
	ck_assert_int_eq(ip_addr_parse("10.0.0.1junk", 8, &a), 0);
	ck_assert_str_eq(text(&a), "10.0.0.1");
	const char *bad[] = { "",          "[]",       "[10.0.0.1]", "[::1",
		              "::1]",      "1.2.3",    "1.2.3.4.5",  "2001:db8::1::2",
		              "host.test", "[::1]:80", "::1%eth0" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(ip_addr_parse(bad[i], strlen(bad[i]), &a) == -1, "%s", bad[i]);
		ck_assert_int_eq(a.family, IP_NONE);
	}
	ck_assert_int_eq(ip_addr_parse(NULL, 0, &a), -1);
	ip_addr_from_v4(&a, 0x7f000102);
	ck_assert_str_eq(text(&a), "127.0.1.2");
	struct ip_addr none = { 0 };
	ck_assert_str_eq(text(&none), "");
}
END_TEST

/* Same group: equal keys (and hashes); another group: different keys. */
static void same_group(const char *x, const char *y, int same)
{
	struct ip_addr a = parsed(x), b = parsed(y), ga, gb;
	ip_addr_group(&a, &ga);
	ip_addr_group(&b, &gb);
	ck_assert_msg(ip_addr_equal(&ga, &gb) == (same != 0), "%s %s", x, y);
	if (same)
		ck_assert_uint_eq(ip_addr_hash(&ga), ip_addr_hash(&gb));
}

START_TEST(group_per_64)
{
	/* IPv6: one group per /64, whatever the interface identifier. */
	same_group("2001:db8:1:2::1", "2001:db8:1:2::2", 1);
	same_group("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", 1);
	same_group("2001:db8:1:2::1", "2001:db8:1:3::1", 0);
	same_group("2001:db8:1:2::1", "2001:db8:1:2:0:0:0:1", 1);
	same_group("::1", "::2", 1);
	/* IPv4: one group per address. */
	same_group("10.0.0.1", "10.0.0.1", 1);
	same_group("10.0.0.1", "10.0.0.2", 0);
	/* The families never share a group, even where the bytes agree. */
	same_group("10.0.0.1", "a00:1::", 0);
	same_group("0.0.0.0", "::", 0);
	struct ip_addr a = parsed("2001:db8:aa:bb:1:2:3:4"), g;
	ip_addr_group(&a, &g);
	ck_assert_str_eq(text(&g), "2001:db8:aa:bb::");
	a = parsed("10.1.2.3");
	ip_addr_group(&a, &g);
	ck_assert(ip_addr_equal(&a, &g));
}
END_TEST

/* An IPv6 address that carries an IPv4 one reaches that IPv4 machine: one
 * group with it (and with every other form of it), whatever else the IPv6
 * address holds; the deprecated IPv4-compatible form is an ordinary /64. */
START_TEST(group_embedded_v4)
{
	static const char *const forms[] = {
		"::ffff:93.184.216.34",         /* IPv4-mapped */
		"::ffff:0:93.184.216.34",       /* IPv4-translated */
		"64:ff9b::93.184.216.34",       /* NAT64 (RFC 6052) */
		"2002:5db8:d822::1",            /* 6to4 */
		"2002:5db8:d822:ffff:1:2:3:4",  /* 6to4, another subnet and host */
		"2001:0:102:304:0:0:a247:27dd", /* Teredo, client inverted */
		"2001:0:506:708:ffff:ffff:a247:27dd",
	};
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		same_group(forms[i], "93.184.216.34", 1);
		same_group(forms[i], "93.184.216.35", 0);
		struct ip_addr a = parsed(forms[i]), g;
		ip_addr_group(&a, &g);
		ck_assert_str_eq(text(&g), "93.184.216.34");
	}
	/* the deprecated ::a.b.c.d, and ::1, keep their /64 */
	same_group("::93.184.216.34", "93.184.216.34", 0);
	same_group("::93.184.216.34", "::1", 1);
	/* near misses: another prefix is a plain /64 */
	same_group("64:ff9c::93.184.216.34", "93.184.216.34", 0);
	same_group("2003:5db8:d822::1", "93.184.216.34", 0);
	/* the helper the private-range check shares: Teredo gives both */
	uint32_t v4[2];
	struct ip_addr t = parsed("2001:0:102:304:0:0:a247:27dd");
	ck_assert_uint_eq(ip_v6_embedded_v4(t.b, false, v4), 2);
	ck_assert_uint_eq(v4[0], 0x5db8d822u);
	ck_assert_uint_eq(v4[1], 0x01020304u);
	struct ip_addr c = parsed("::10.0.0.1");
	ck_assert_uint_eq(ip_v6_embedded_v4(c.b, false, v4), 0);
	ck_assert_uint_eq(ip_v6_embedded_v4(c.b, true, v4), 1);
	ck_assert_uint_eq(v4[0], 0x0a000001u);
}
END_TEST

/* A URL with an IPv6 literal host keeps it through normalization, and the
 * crawl key's host (what the frontier names the host and the crawl hands
 * the resolver) parses as the address, with no DNS query needed. */
START_TEST(literal_urls)
{
	struct url *u = url_create(NULL);
	char key[256];
	size_t len, al, ho, hl;
	const char *in[] = { "http://[0:0:0:0:0:0:0:1]:8080/a?b", "HTTP://[2001:DB8::0:1]/x",
		             "https://[::ffff:192.0.2.1]:443/" };
	const char *keys[] = { "http://[::1]:8080/a?b", "http://[2001:db8::1]/x",
		               "https://[::ffff:c000:201]/" };
	const char *addrs[] = { "::1", "2001:db8::1", "::ffff:192.0.2.1" };
	ck_assert_ptr_nonnull(u);
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
		ck_assert_int_eq(
		        url_normalize(u, NULL, in[i], strlen(in[i]), key, sizeof key, &len),
		        URL_OK);
		ck_assert_str_eq(key, keys[i]);
		ck_assert_int_eq(url_key_split(key, len, &al, &ho, &hl), 0);
		ck_assert_int_eq(key[ho], '[');
		struct ip_addr a;
		ck_assert_int_eq(ip_addr_parse(key + ho, hl, &a), 0);
		ck_assert_int_eq(a.family, IP_V6);
		ck_assert_str_eq(text(&a), addrs[i]);
	}
	ck_assert_int_ne(url_normalize(u, NULL, "http://[::1::2]/", 16, key, sizeof key, &len),
	                 URL_OK);
	url_destroy(u);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ipaddr");
	TCase *tc = tcase_create("ipaddr");
	tcase_add_test(tc, parse_and_format);
	tcase_add_test(tc, group_per_64);
	tcase_add_test(tc, group_embedded_v4);
	tcase_add_test(tc, literal_urls);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
