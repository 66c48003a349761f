/*
 * test_robots.c: Check suite for politeness/robots.h beyond the conformance
 * cases: crawl-delay, sitemaps, the 500 KiB limit, line ends and BOM, group
 * merging, percent-normalization, wildcards, fetch semantics and expiry, and
 * a comparison of the matcher against a naive reference on random rules.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "politeness/robots.h"

#define UA "FooBot/2.1 (+http://example.com/bot)"

static struct robots *parse(const char *txt)
{
	struct robots *r = NULL;
	ck_assert_int_eq(robots_parse(txt, strlen(txt), UA, &r), ROBOTS_OK);
	ck_assert_ptr_nonnull(r);
	return r;
}

static bool ok(const struct robots *r, const char *path)
{
	return robots_allowed(r, path, strlen(path));
}

START_TEST(test_agent_token_and_groups)
{
	/* Our token is "FooBot": the group naming it wins over '*', groups for
     * it are merged, matching is case-insensitive. */
	struct robots *r = parse("User-agent: *\nDisallow: /\n\n"
	                         "User-agent: foobot\nDisallow: /a\n\n"
	                         "User-agent: Other\nDisallow: /b\n\n"
	                         "User-agent: FOOBOT/3.0\nDisallow: /c\n");
	ck_assert(!ok(r, "/a"));
	ck_assert(ok(r, "/b"));
	ck_assert(!ok(r, "/c/d"));
	ck_assert(ok(r, "/d"));
	ck_assert_uint_eq(robots_rule_count(r), 2);
	robots_destroy(r);

	/* FooBotX is another agent: fall back to '*'. */
	r = parse("User-agent: FooBotX\nDisallow: /\nUser-agent: *\nDisallow: /x\n");
	ck_assert(ok(r, "/y"));
	ck_assert(!ok(r, "/x"));
	robots_destroy(r);

	/* No group at all for us or '*': allow. */
	r = parse("User-agent: Other\nDisallow: /\n");
	ck_assert(ok(r, "/"));
	robots_destroy(r);
}
END_TEST

START_TEST(test_crawl_delay)
{
	struct robots *r = parse("User-agent: *\nCrawl-delay: 7\n\n"
	                         "User-agent: FooBot\nCrawl-delay: 2.5\nDisallow: /x\n");
	ck_assert_double_eq_tol(robots_crawl_delay(r), 2.5, 1e-9);
	robots_destroy(r);
	r = parse("User-agent: Other\nCrawl-delay: 9\n\nUser-agent: *\nCrawl-delay: 7\n");
	ck_assert_double_eq_tol(robots_crawl_delay(r), 7.0, 1e-9);
	robots_destroy(r);
	r = parse("User-agent: FooBot\nCrawl-delay: soon\nCrawl-delay: -3\n");
	ck_assert(robots_crawl_delay(r) < 0);
	robots_destroy(r);
	/* Two merged groups: the larger (politer) delay. */
	r = parse("User-agent: FooBot\nCrawl-delay: 1\n\nUser-agent: FooBot\nCrawl-delay: 4\n");
	ck_assert_double_eq_tol(robots_crawl_delay(r), 4.0, 1e-9);
	robots_destroy(r);
	/* A crawl-delay line ends the agent list like a rule does. */
	r = parse("User-agent: Other\nCrawl-delay: 3\nUser-agent: FooBot\nDisallow: /z\n");
	ck_assert(robots_crawl_delay(r) < 0);
	ck_assert(!ok(r, "/z"));
	robots_destroy(r);
}
END_TEST

/* Hostile Crawl-delay values: huge, infinite and overflowing ones read as
 * ROBOTS_CRAWL_DELAY_MAX_S (so delay * 10^6 fits 64 bits), signs and NaN as
 * no delay; a checkpointed value past the limit is clamped on decoding. */
START_TEST(test_crawl_delay_hostile)
{
	static const char *const huge[] = { "1e300",
		                            "2e13",
		                            "1e400",
		                            "inf",
		                            "INFINITY",
		                            "18446744073710",
		                            "1e99999999999999999999" };
	char txt[128];
	for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
		snprintf(txt, sizeof txt, "User-agent: *\nCrawl-delay: %s\n", huge[i]);
		struct robots *r = parse(txt);
		ck_assert_msg(robots_crawl_delay(r) == ROBOTS_CRAWL_DELAY_MAX_S, "%s", huge[i]);
		robots_destroy(r);
	}
	struct robots *r = parse("User-agent: *\nCrawl-delay: nan\nCrawl-delay: -1e300\n");
	ck_assert(robots_crawl_delay(r) < 0);
	robots_destroy(r);
	r = parse("User-agent: *\nCrawl-delay: 10 seconds\n");
	ck_assert_double_eq_tol(robots_crawl_delay(r), 10.0, 1e-9);
	char *enc = NULL;
	size_t len = 0;
	ck_assert_int_eq(robots_encode(r, &enc, &len), ROBOTS_OK);
	double big = 1e300;
	uint64_t bits;
	memcpy(&bits, &big, sizeof bits);
	for (unsigned i = 0; i < 8; i++) /* "RB1", deny-all byte, then the f64 LE */
		enc[4 + i] = (char)(bits >> (8 * i));
	struct robots *d = robots_decode(enc, len);
	ck_assert_ptr_nonnull(d);
	ck_assert(robots_crawl_delay(d) == ROBOTS_CRAWL_DELAY_MAX_S);
	robots_destroy(d);
	free(enc);
	robots_destroy(r);
}
END_TEST

START_TEST(test_sitemaps)
{
	struct robots *r = parse("Sitemap: http://a.example/s1.xml\n"
	                         "User-agent: Other\nSitemap: http://a.example/s2.xml # c\n"
	                         "Disallow: /\nSITEMAP:http://b.example/s3.xml\n");
	ck_assert_uint_eq(robots_sitemap_count(r), 3);
	ck_assert_str_eq(robots_sitemap(r, 0), "http://a.example/s1.xml");
	ck_assert_str_eq(robots_sitemap(r, 1), "http://a.example/s2.xml");
	ck_assert_str_eq(robots_sitemap(r, 2), "http://b.example/s3.xml");
	ck_assert_ptr_null(robots_sitemap(r, 3));
	robots_destroy(r);
}
END_TEST

START_TEST(test_parse_limit)
{
	/* A rule placed after the first 500 KiB is not read; one before it is. */
	size_t pad = ROBOTS_PARSE_LIMIT + 100;
	const char *head = "User-agent: FooBot\nDisallow: /early\n";
	const char *tail = "\nDisallow: /late\n";
	size_t n = strlen(head) + pad + strlen(tail);
	char *buf = malloc(n + 1);
	ck_assert_ptr_nonnull(buf);
	memcpy(buf, head, strlen(head));
	for (size_t i = 0; i < pad; i++)
		buf[strlen(head) + i] = (i % 64 == 63) ? '\n' : '#';
	memcpy(buf + strlen(head) + pad, tail, strlen(tail));
	struct robots *r = NULL;
	ck_assert_int_eq(robots_parse(buf, n, UA, &r), ROBOTS_OK);
	ck_assert(!ok(r, "/early"));
	ck_assert(ok(r, "/late"));
	robots_destroy(r);

	/* A line cut by the limit is dropped: "Allow: /" cut from "Allow: /x"
     * must not allow everything. */
	size_t prefix = ROBOTS_PARSE_LIMIT - strlen("Allow: /");
	const char *h2 = "User-agent: FooBot\nDisallow: /\n";
	char *b2 = malloc(ROBOTS_PARSE_LIMIT + 64);
	ck_assert_ptr_nonnull(b2);
	memcpy(b2, h2, strlen(h2));
	for (size_t i = strlen(h2); i < prefix; i++)
		b2[i] = (i % 64 == 0) ? '\n' : '#';
	b2[prefix - 1] = '\n';
	memcpy(b2 + prefix, "Allow: /x\n", 10);
	ck_assert_int_eq(robots_parse(b2, prefix + 10, UA, &r), ROBOTS_OK);
	ck_assert(!ok(r, "/y"));
	robots_destroy(r);
	free(b2);
	free(buf);
}
END_TEST

START_TEST(test_line_ends_bom_comments)
{
	const char *variants[] = {
		"\xEF\xBB\xBFUser-agent: FooBot\nDisallow: /a # comment\nAllow: /a/b\n",
		"User-agent: FooBot\r\nDisallow: /a\r\nAllow: /a/b\r\n",
		"User-agent: FooBot\rDisallow: /a\rAllow: /a/b",
		"  user-AGENT :FooBot  \n\tdisallow\t:\t/a\t\nALLOW:/a/b\n#x\n",
		"garbage line\n<html>\nUser-agent: FooBot\n:::\nDisallow: /a\nAllow: /a/b\n",
	};
	for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
		struct robots *r = parse(variants[i]);
		ck_assert_msg(!ok(r, "/a/c"), "variant %zu", i);
		ck_assert_msg(ok(r, "/a/b/c"), "variant %zu", i);
		ck_assert_msg(ok(r, "/b"), "variant %zu", i);
		robots_destroy(r);
	}
}
END_TEST

START_TEST(test_percent_normalization)
{
	struct robots *r = parse("User-agent: FooBot\nDisallow: /%7euser/\nDisallow: /caf\xC3\xA9\n"
	                         "Disallow: /q%3fx\n");
	ck_assert(!ok(r, "/~user/page"));
	ck_assert(!ok(r, "/%7Euser/page"));
	ck_assert(!ok(r, "/caf%c3%a9"));
	ck_assert(!ok(r, "/caf\xC3\xA9/menu"));
	/* %3F is reserved: it stays encoded and does not equal a real '?'. */
	ck_assert(!ok(r, "/q%3Fx"));
	ck_assert(ok(r, "/q?x"));
	robots_destroy(r);

	char out[64];
	size_t n;
	ck_assert_int_eq(robots_path_normalize("/a%2f%41\xFF", 9, out, sizeof out, &n), ROBOTS_OK);
	ck_assert_str_eq(out, "/a%2FA%FF");
	ck_assert_uint_eq(n, 9);
	ck_assert_int_eq(robots_path_normalize("\xFF\xFF", 2, out, 4, &n), ROBOTS_ETOOLONG);
}
END_TEST

START_TEST(test_wildcards_and_robots_txt)
{
	struct robots *r = parse("User-agent: *\nDisallow: /\nAllow: /*.html$\nAllow: /a*b*c\n");
	ck_assert(ok(r, "/x/y.html"));
	ck_assert(!ok(r, "/x/y.html?q"));
	ck_assert(ok(r, "/a-b-c-d"));
	ck_assert(!ok(r, "/a-c-b"));
	ck_assert(ok(r, "/robots.txt"));
	ck_assert(!ok(r, "/robots.txt2"));
	ck_assert(!ok(r, ""));
	robots_destroy(r);

	struct robots *d = robots_create_disallow_all();
	struct robots *a = robots_create_allow_all();
	ck_assert(!ok(d, "/x"));
	ck_assert(ok(d, "/robots.txt"));
	ck_assert(ok(a, "/x"));
	robots_destroy(d);
	robots_destroy(a);
	robots_destroy(NULL);
}
END_TEST

START_TEST(test_fetch_semantics)
{
	struct robots_policy p;
	const char *body = "User-agent: *\nDisallow: /private\n";
	ck_assert_int_eq(robots_policy_from_fetch(200, body, strlen(body), UA, 1000, &p),
	                 ROBOTS_OK);
	ck_assert_int_eq(p.source, ROBOTS_SRC_PARSED);
	ck_assert(p.expires_ms == 1000 + ROBOTS_TTL_MS);
	ck_assert(!ok(p.robots, "/private/x"));
	ck_assert(ok(p.robots, "/public"));
	robots_destroy(p.robots);

	int unavailable[] = { 400, 401, 403, 404, 410, 451, 399 };
	for (size_t i = 0; i < sizeof unavailable / sizeof unavailable[0]; i++) {
		ck_assert_int_eq(
		        robots_policy_from_fetch(unavailable[i], body, strlen(body), UA, 5, &p),
		        ROBOTS_OK);
		ck_assert_int_eq(p.source, ROBOTS_SRC_UNAVAILABLE);
		ck_assert(ok(p.robots, "/private/x"));
		ck_assert(p.expires_ms == 5 + ROBOTS_TTL_MS);
		robots_destroy(p.robots);
	}
	int unreachable[] = { 500, 502, 503, 599, 429, -1, -28, 0, 100, 600 };
	for (size_t i = 0; i < sizeof unreachable / sizeof unreachable[0]; i++) {
		ck_assert_int_eq(
		        robots_policy_from_fetch(unreachable[i], body, strlen(body), UA, 5, &p),
		        ROBOTS_OK);
		ck_assert_int_eq(p.source, ROBOTS_SRC_UNREACHABLE);
		ck_assert(!ok(p.robots, "/public"));
		ck_assert(ok(p.robots, "/robots.txt"));
		ck_assert(p.expires_ms == 5 + ROBOTS_RETRY_MS);
		ck_assert(ROBOTS_RETRY_MS < ROBOTS_TTL_MS);
		robots_destroy(p.robots);
	}
	/* 2xx with an empty body: allow all. */
	ck_assert_int_eq(robots_policy_from_fetch(204, NULL, 0, UA, 0, &p), ROBOTS_OK);
	ck_assert(ok(p.robots, "/anything"));
	robots_destroy(p.robots);
	ck_assert_int_eq(ROBOTS_MAX_REDIRECTS, 5);
}
END_TEST

START_TEST(test_path_from_url)
{
	char out[64];
	ck_assert_int_eq(robots_path_from_url("http://h/a?b#c", 14, out, sizeof out), ROBOTS_OK);
	ck_assert_str_eq(out, "/a?b");
	ck_assert_int_eq(robots_path_from_url("http://h/abcdef", 15, out, 4), ROBOTS_ETOOLONG);
}
END_TEST

/* Naive reference: every rule tested with a recursive glob, longest wins,
 * allow wins ties. */
static bool ref_match(const char *p, const char *s)
{
	if (*p == '\0')
		return true;
	if (*p == '$' && p[1] == '\0')
		return *s == '\0';
	if (*p == '*')
		return ref_match(p + 1, s) || (*s && ref_match(p, s + 1));
	return *s && *p == *s && ref_match(p + 1, s + 1);
}

START_TEST(test_against_reference)
{
	const char alphabet[] = "ab/*";
	unsigned seed = 12345;
	for (int iter = 0; iter < 3000; iter++) {
		char txt[512];
		char pats[6][8];
		bool allows[6];
		int nr = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 6;
		size_t o = (size_t)snprintf(txt, sizeof txt, "User-agent: FooBot\n");
		for (int i = 0; i < nr; i++) {
			int len = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 5;
			pats[i][0] = '/';
			for (int k = 1; k < len; k++)
				pats[i][k] =
				        alphabet[((seed = seed * 1103515245u + 12345u) >> 16) % 4];
			pats[i][len] = '\0';
			if (((seed = seed * 1103515245u + 12345u) >> 16) % 4 == 0) {
				pats[i][len] = '$';
				pats[i][len + 1] = '\0';
			}
			allows[i] = ((seed = seed * 1103515245u + 12345u) >> 16) % 2;
			o += (size_t)snprintf(txt + o, sizeof txt - o, "%s: %s\n",
			                      allows[i] ? "Allow" : "Disallow", pats[i]);
		}
		struct robots *r = parse(txt);
		for (int q = 0; q < 20; q++) {
			char path[8];
			int len = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 6;
			path[0] = '/';
			for (int k = 1; k < len; k++)
				path[k] = "ab/"[((seed = seed * 1103515245u + 12345u) >> 16) % 3];
			path[len] = '\0';
			int best = -1;
			bool verdict = true;
			for (int i = 0; i < nr; i++) {
				int plen = (int)strlen(pats[i]);
				if (ref_match(pats[i], path) &&
				    (plen > best || (plen == best && allows[i]))) {
					best = plen;
					verdict = allows[i];
				}
			}
			ck_assert_msg(ok(r, path) == verdict, "robots:\n%spath %s", txt, path);
		}
		robots_destroy(r);
	}
}
END_TEST

/* Reference of a check with the wildcard cap: the naive longest match
 * (allow on ties) of the rules pats[0..nr) (repeats counted once), unless
 * more than cap distinct wildcard rules (a literal piece after a '*'),
 * whose text before the '*' starts the path, outrank the best rule without
 * such a piece that matches: then refused. cap 0: no cap. */
static bool is_wild(const char *p)
{
	const char *star = strchr(p, '*');
	if (!star)
		return false;
	for (; *star; star++)
		if (*star != '*' && !(*star == '$' && star[1] == '\0'))
			return true;
	return false;
}

static bool ref_verdict(char pats[][16], const bool *allows, int nr, const char *path, unsigned cap)
{
	int best = -1, certain = -1;
	bool verdict = true, certain_allow = true;
	for (int i = 0; i < nr; i++) {
		int plen = (int)strlen(pats[i]);
		if (!ref_match(pats[i], path))
			continue;
		if (plen > best || (plen == best && allows[i])) {
			best = plen;
			verdict = allows[i];
		}
		if (!is_wild(pats[i]) && (plen > certain || (plen == certain && allows[i]))) {
			certain = plen;
			certain_allow = allows[i];
		}
	}
	unsigned met = 0;
	for (int i = 0; i < nr; i++) {
		bool repeat = false;
		for (int k = 0; k < i; k++)
			repeat |= allows[k] == allows[i] && strcmp(pats[k], pats[i]) == 0;
		size_t lit = strcspn(pats[i], "*");
		int plen = (int)strlen(pats[i]);
		if (repeat || !is_wild(pats[i]) || strncmp(pats[i], path, lit) != 0 ||
		    lit > strlen(path))
			continue;
		if (plen > certain || (plen == certain && allows[i] && !certain_allow))
			met++;
	}
	return cap != 0 && met > cap ? false : verdict;
}

/* Files of 1 to 80 random rules over a small alphabet, so that both the
 * rule-by-rule check (fewer than ROBOTS_INDEX_MIN_RULES rules) and the
 * index are used, with repeats and rules sharing literal prefixes; each
 * checked with no cap and with small caps against the reference. */
START_TEST(test_index_against_reference)
{
	unsigned seed = 777;
#define RND(n) ((int)(((seed = seed * 1103515245u + 12345u) >> 16) % (unsigned)(n)))
	static char pats[80][16];
	static bool allows[80];
	int indexed = 0, capped = 0;
	for (int iter = 0; iter < 600; iter++) {
		char txt[4096];
		int nr = 1 + RND(80);
		size_t o = (size_t)snprintf(txt, sizeof txt, "User-agent: FooBot\n");
		for (int i = 0; i < nr; i++) {
			int len = 1 + RND(6);
			pats[i][0] = RND(8) ? '/' : '*';
			for (int k = 1; k < len; k++)
				pats[i][k] = "ab/*"[RND(4)];
			pats[i][len] = '\0';
			if (RND(4) == 0)
				strcat(pats[i], "$");
			allows[i] = RND(2);
			o += (size_t)snprintf(txt + o, sizeof txt - o, "%s: %s\n",
			                      allows[i] ? "Allow" : "Disallow", pats[i]);
		}
		struct robots *r = parse(txt);
		indexed += robots_rule_count(r) >= ROBOTS_INDEX_MIN_RULES;
		for (unsigned cap = 0; cap < 4; cap++) {
			robots_wildcard_cap_set(r, cap);
			for (int q = 0; q < 12; q++) {
				char path[12];
				int len = 1 + RND(10);
				path[0] = '/';
				for (int k = 1; k < len; k++)
					path[k] = "ab/"[RND(3)];
				path[len] = '\0';
				bool want = ref_verdict(pats, allows, nr, path, cap);
				capped += want != ref_verdict(pats, allows, nr, path, 0);
				ck_assert_msg(ok(r, path) == want, "robots (cap %u):\n%spath %s",
				              cap, txt, path);
			}
		}
		robots_destroy(r);
	}
#undef RND
	/* both checks and the cap's refusals were exercised */
	ck_assert_int_gt(indexed, 100);
	ck_assert_int_gt(capped, 100);
}
END_TEST

/* A file of thousands of wildcard rules that every path meets (issue: 11 ms
 * a check): a path that meets more than the cap is refused without being
 * searched, one decided by an outranking rule is not, and a cap lifted
 * restores the RFC's answer. */
START_TEST(test_wildcard_cap)
{
	enum { RULES = 4000 };
	size_t cap = 64 + (size_t)RULES * 40, o = 0;
	char *txt = malloc(cap), *path = malloc(2101);
	ck_assert_ptr_nonnull(txt);
	ck_assert_ptr_nonnull(path);
	o += (size_t)snprintf(txt + o, cap - o, "User-agent: *\nAllow: /open/to-everyone/\n");
	for (unsigned i = 0; i < RULES; i++)
		o += (size_t)snprintf(txt + o, cap - o, "Disallow: /*q%05u*z%u\n", i, i % 7);
	struct robots *r = parse(txt);
	ck_assert_uint_eq(robots_rule_count(r), RULES + 1);
	ck_assert_uint_eq(robots_wildcard_max(r), RULES);
	/* a long path no rule matches: past the default cap, refused */
	path[0] = '/';
	for (int i = 1; i < 2100; i++)
		path[i] = (char)('a' + i % 26);
	path[2100] = '\0';
	ck_assert(!ok(r, path));
	ck_assert(!ok(r, "/x"));
	ck_assert(ok(r, "/robots.txt"));
	/* the Allow is longer than every wildcard rule: it decides alone */
	ck_assert(ok(r, "/open/to-everyone/x"));
	ck_assert(!ok(r, "/open/"));
	/* no cap: the RFC's answer, the path matches no rule */
	ck_assert_uint_eq(robots_wildcard_cap_set(r, 0), RULES);
	ck_assert(ok(r, path));
	ck_assert(!ok(r, "/q00012-z5"));
	ck_assert(ok(r, "/q00012-z4"));
	/* a cap at the file's own maximum is never hit */
	robots_wildcard_cap_set(r, RULES);
	ck_assert(ok(r, path));
	ck_assert(!ok(r, "/q00012-z5"));
	robots_destroy(r);
	/* a small file with the same rules under the cap: checked */
	r = parse("User-agent: *\nDisallow: /*q1*z1\nDisallow: /*q2*z2\n");
	ck_assert_uint_eq(robots_wildcard_max(r), 2);
	ck_assert(ok(r, path));
	ck_assert(!ok(r, "/q2/z2"));
	robots_destroy(r);
	free(path);
	free(txt);
}
END_TEST

/* Rules repeated are kept once; literal prefixes of one chain are counted. */
START_TEST(test_rule_repeats_and_chains)
{
	struct robots *r = parse("User-agent: *\nDisallow: /a\nDisallow: /a\nAllow: /a\n"
	                         "Disallow: /a*b\nDisallow: /a*b\nDisallow: /ab*c\n"
	                         "Disallow: /x*y\nDisallow: /*z\n");
	ck_assert_uint_eq(robots_rule_count(r), 6);
	/* "/ab..." meets the rules of literal prefix "/", "/a" and "/ab"; "/x..." two */
	ck_assert_uint_eq(robots_wildcard_max(r), 3);
	ck_assert(ok(r, "/a"));
	ck_assert(!ok(r, "/ab/c"));
	robots_wildcard_cap_set(r, 2);
	ck_assert(ok(r, "/a"));      /* the plain Allow outranks them all */
	ck_assert(!ok(r, "/abc/d")); /* 3 wildcard rules outrank "/a" there */
	ck_assert(!ok(r, "/x/y"));   /* 2: checked, and it matches /x*y */
	ck_assert(ok(r, "/x/q"));    /* 2: checked, no match */
	robots_destroy(r);
}
END_TEST

/* robots_encode / robots_decode: the decoded object answers every path as
 * the original does, keeps delay and sitemaps; any truncation or a bad
 * header is refused. */
START_TEST(test_encode_roundtrip)
{
	static const char *const files[] = {
		("User-agent: *\nDisallow: /private/\nAllow: /private/ok\nDisallow: /*.pdf$\n"
		 "Crawl-delay: 2.5\nSitemap: http://x.test/s1.xml\nSitemap: "
		 "http://x.test/s2.xml\n"),
		"User-agent: crawler\nDisallow: /\nAllow: /dir/index.html\n",
		"User-agent: other\nDisallow: /\n",
		"",
	};
	static const char *const paths[] = { "/",          "/private/", "/private/ok",
		                             "/private/x", "/a.pdf",    "/a.pdf?x",
		                             "/dir/",      "/dir/x",    "/robots.txt",
		                             "/%7Euser",   "/caf%C3%A9" };
	for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
		struct robots *r = NULL, *d;
		char *enc = NULL;
		size_t len = 0;
		ck_assert_int_eq(robots_parse(files[f], strlen(files[f]), "crawler/1.0", &r),
		                 ROBOTS_OK);
		ck_assert_int_eq(robots_encode(r, &enc, &len), ROBOTS_OK);
		d = robots_decode(enc, len);
		ck_assert_ptr_nonnull(d);
		ck_assert_uint_eq(robots_rule_count(d), robots_rule_count(r));
		ck_assert(robots_crawl_delay(d) == robots_crawl_delay(r));
		ck_assert_uint_eq(robots_sitemap_count(d), robots_sitemap_count(r));
		for (size_t i = 0; i < robots_sitemap_count(r); i++)
			ck_assert_str_eq(robots_sitemap(d, i), robots_sitemap(r, i));
		for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
			ck_assert_int_eq(robots_allowed(d, paths[i], strlen(paths[i])),
			                 robots_allowed(r, paths[i], strlen(paths[i])));
		for (size_t cut = 0; cut < len; cut++)
			ck_assert_ptr_null(robots_decode(enc, cut));
		enc[0] = 'X';
		ck_assert_ptr_null(robots_decode(enc, len));
		free(enc);
		robots_destroy(d);
		robots_destroy(r);
	}
	/* deny-all survives (it is not a rule) */
	struct robots *deny = robots_create_disallow_all(), *d;
	char *enc;
	size_t len;
	ck_assert_int_eq(robots_encode(deny, &enc, &len), ROBOTS_OK);
	d = robots_decode(enc, len);
	ck_assert_ptr_nonnull(d);
	ck_assert(!robots_allowed(d, "/x", 2));
	ck_assert(robots_allowed(d, "/robots.txt", 11));
	free(enc);
	robots_destroy(d);
	robots_destroy(deny);
}
END_TEST

START_TEST(test_bad_input)
{
	struct robots *r = NULL;
	ck_assert_int_eq(robots_parse(NULL, 5, UA, &r), ROBOTS_EINVAL);
	ck_assert_int_eq(robots_parse("", 0, UA, NULL), ROBOTS_EINVAL);
	ck_assert_int_eq(robots_parse(NULL, 0, NULL, &r), ROBOTS_OK);
	ck_assert(ok(r, "/"));
	robots_destroy(r);
	/* NUL bytes and binary garbage are just bad lines. */
	const char bin[] = "User-agent: FooBot\n\0\xff\xfe\nDisallow: /x\n";
	ck_assert_int_eq(robots_parse(bin, sizeof bin - 1, UA, &r), ROBOTS_OK);
	ck_assert(!ok(r, "/x"));
	robots_destroy(r);
	ck_assert_str_eq(robots_strerror(ROBOTS_ENOMEM), "out of memory");
}
END_TEST

static Suite *robots_suite(void)
{
	Suite *s = suite_create("robots");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_agent_token_and_groups);
	tcase_add_test(tc, test_crawl_delay);
	tcase_add_test(tc, test_crawl_delay_hostile);
	tcase_add_test(tc, test_sitemaps);
	tcase_add_test(tc, test_parse_limit);
	tcase_add_test(tc, test_line_ends_bom_comments);
	tcase_add_test(tc, test_percent_normalization);
	tcase_add_test(tc, test_wildcards_and_robots_txt);
	tcase_add_test(tc, test_fetch_semantics);
	tcase_add_test(tc, test_path_from_url);
	tcase_add_test(tc, test_against_reference);
	tcase_add_test(tc, test_index_against_reference);
	tcase_add_test(tc, test_wildcard_cap);
	tcase_add_test(tc, test_rule_repeats_and_chains);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_encode_roundtrip);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(robots_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
