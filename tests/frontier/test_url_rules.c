/*
 * Check suite for frontier/url_rules.h: every matcher, the first match
 * winning across the set table and the scan list, depth and priority,
 * SURT forms, wget's flags against the wget manual's own examples,
 * malformed rules named by file and line, counters, and two reference
 * models: each decision against the rules tried one by one, and the regex
 * prefilter against plain PCRE2 on random regexes and URLs.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier/url.h"
#include "frontier/url_rules.h"
#include "frontier/url_rules_internal.h"

/* A sealed list of the rules in text (lines), or NULL with err set. */
static struct url_rules *try_build(const char *text, const struct url_options *opt, char *err,
                                   size_t errlen)
{
	struct url_rules *r = url_rules_create(opt);
	uint32_t line = 0;
	ck_assert_ptr_nonnull(r);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (url_rules_add_line(r, p, n, "t.rules", ++line, err, errlen) != URL_RULES_OK) {
			url_rules_destroy(r);
			return NULL;
		}
		p += n + (nl != NULL);
	}
	ck_assert_int_eq(url_rules_seal(r, err, errlen), URL_RULES_OK);
	return r;
}

static struct url_rules *build(const char *text)
{
	char err[512] = "";
	struct url_rules *r = try_build(text, NULL, err, sizeof err);
	ck_assert_msg(r != NULL, "%s", err);
	return r;
}

/* FLAG: the line dec_at gives a rule made from a wget flag. */
#define FLAG 999
/* The deciding rule's line for url (normalized first) at depth: +line for
 * accept, -line for reject (FLAG for a flag's rule), 0 for no match. */
static int dec_at(struct url_rules *r, const char *url, uint32_t depth)
{
	char key[4096];
	size_t kl;
	struct url *u = url_create(NULL);
	struct url_rules_decision d;
	struct url_rule_info info;
	ck_assert_int_eq(url_normalize(u, NULL, url, strlen(url), key, sizeof key, &kl), URL_OK);
	url_destroy(u);
	url_rules_decide(r, key, kl, depth, &d);
	if (d.action == URL_RULES_NO_MATCH) {
		ck_assert_int_eq(d.rule, -1);
		return 0;
	}
	ck_assert_int_eq(url_rules_rule(r, (size_t)d.rule, &info), 0);
	int line = info.line ? (int)info.line : FLAG;
	return d.action == URL_RULES_ACCEPT ? line : -line;
}

static int dec(struct url_rules *r, const char *url)
{
	return dec_at(r, url, 1);
}

/* The error of the rules in text ("" when they load). */
static const char *load_error(const char *text)
{
	static char err[512];
	err[0] = '\0';
	struct url_rules *r = try_build(text, NULL, err, sizeof err);
	url_rules_destroy(r);
	return err;
}

START_TEST(host_rules)
{
	struct url_rules *r = build("reject host ads.example.org\n"
	                            "accept host .Example.ORG,bücher.de\n"
	                            "reject !host other.org\n");
	ck_assert_int_eq(dec(r, "http://ads.example.org/x"), -1);
	ck_assert_int_eq(dec(r, "http://x.ads.example.org/"), 2); /* exact only */
	ck_assert_int_eq(dec(r, "http://example.org:8080/"), 2);
	ck_assert_int_eq(dec(r, "http://a.b.example.org/"), 2);
	ck_assert_int_eq(dec(r, "http://xexample.org/"), -3);
	ck_assert_int_eq(dec(r, "http://xn--bcher-kva.de/"), 2); /* IDNA of the pattern */
	ck_assert_int_eq(dec(r, "http://www.bücher.de/"), -3);   /* no dot: exact */
	ck_assert_int_eq(dec(r, "http://other.org/"), 0);
	ck_assert_int_eq(dec(r, "http://user:pw@other.org:81/"), 0);
	url_rules_destroy(r);
}
END_TEST

START_TEST(domain_rules)
{
	struct url_rules *r = build("accept domain example.co.uk,web.test\n"
	                            "reject domain amazonaws.com\n"
	                            "reject !domain example.org\n");
	ck_assert_int_eq(dec(r, "http://example.co.uk/"), 1);
	ck_assert_int_eq(dec(r, "http://a.b.example.co.uk/"), 1);
	ck_assert_int_eq(dec(r, "http://h7.web.test:8080/"), 1);
	ck_assert_int_eq(dec(r, "http://amazonaws.com/"), -2);
	/* s3.amazonaws.com is a public suffix: the bucket is its own domain */
	ck_assert_int_eq(dec(r, "http://bucket.s3.amazonaws.com/"), -3);
	ck_assert_int_eq(dec(r, "http://www.example.org/"), 0);
	ck_assert_int_eq(dec(r, "http://127.0.0.1/"), -3);
	url_rules_destroy(r);
	ck_assert_ptr_nonnull(strstr(load_error("accept domain co.uk"), "public suffix"));
	ck_assert_ptr_nonnull(
	        strstr(load_error("accept domain a.example.org"), "write host .a.example.org"));
}
END_TEST

START_TEST(prefix_path_rules)
{
	struct url_rules *r = build("accept prefix HTTP://Example.ORG:80/docs/%7euser/\n"
	                            "reject prefix https://example.org\n"
	                            "reject path /search?q=\n"
	                            "accept path /A%2fb/\n");
	ck_assert_int_eq(dec(r, "http://example.org/docs/~user/a"), 1);
	ck_assert_int_eq(dec(r, "http://example.org/docs/%7Euser/a"), 1);
	ck_assert_int_eq(dec(r, "http://example.org/docs/"), 0);
	ck_assert_int_eq(dec(r, "https://example.org/"), -2);
	ck_assert_int_eq(dec(r, "https://example.org:8443/"), 0); /* "...org/" */
	ck_assert_int_eq(dec(r, "http://x/search?q=a"), -3);
	ck_assert_int_eq(dec(r, "http://x/search?r=a"), 0);
	ck_assert_int_eq(dec(r, "http://x/A%2Fb/c"), 4);
	url_rules_destroy(r);
	ck_assert_ptr_nonnull(strstr(load_error("accept prefix ftp://x/"), "not an http(s) URL"));
	ck_assert_ptr_nonnull(strstr(load_error("accept path docs/"), "no path"));
}
END_TEST

START_TEST(regex_rules)
{
	struct url_rules *r = build("reject regex [?&](sessionid|sid)=\n"
	                            "accept regex ^https://[^/]+/secure/\n"
	                            "reject regex (?i)\\.PDF$\n"
	                            "reject !regex ^http\n");
	ck_assert_int_eq(dec(r, "http://x/a?sid=1"), -1);
	ck_assert_int_eq(dec(r, "http://x/a?b=2&sessionid=1"), -1);
	ck_assert_int_eq(dec(r, "http://x/a?xsid=1"), 0);
	ck_assert_int_eq(dec(r, "https://x/secure/a"), 2);
	ck_assert_int_eq(dec(r, "http://x/secure/a"), 0);
	ck_assert_int_eq(dec(r, "http://x/a.pdf"), -3);
	ck_assert_int_eq(dec(r, "http://x/a.PdF"), -3);
	url_rules_destroy(r);
	ck_assert_ptr_nonnull(strstr(load_error("reject regex a(b"), "t.rules:1: regex:"));
}
END_TEST

START_TEST(ext_rules)
{
	struct url_rules *r = build("reject ext jpg,.PNG,gif\n"
	                            "accept !ext html,htm\n");
	ck_assert_int_eq(dec(r, "http://x/a/b.JPG"), -1);
	ck_assert_int_eq(dec(r, "http://x/a/b.png?x=1.html"), -1);
	ck_assert_int_eq(dec(r, "http://x/a.jpg/b"), 2); /* not the last segment */
	ck_assert_int_eq(dec(r, "http://x/a/b.html"), 0);
	ck_assert_int_eq(dec(r, "http://x/a/"), 2); /* no extension */
	ck_assert_int_eq(dec(r, "http://x/a/jpg"), 2);
	url_rules_destroy(r);
	ck_assert_ptr_nonnull(strstr(load_error("reject ext tar.gz"), "no extension"));
}
END_TEST

START_TEST(surt_form)
{
	char out[256];
	const char *k = "http://user:pw@www.Example.org:8080/a?b";
	ck_assert_uint_gt(url_rules_surt(k, strlen(k), out, sizeof out), 0);
	ck_assert_str_eq(out, "http://(org,Example,www,:8080@user:pw)/a?b");
	k = "https://127.0.0.1/x";
	ck_assert_uint_gt(url_rules_surt(k, strlen(k), out, sizeof out), 0);
	ck_assert_str_eq(out, "https://(127.0.0.1,)/x");
	ck_assert_uint_eq(url_rules_surt(k, strlen(k), out, 10), 0);
	ck_assert_uint_eq(url_rules_surt("nope", 4, out, sizeof out), 0);
	struct url_rules *r = build("accept surt http://(org,example,www,)/docs/\n"
	                            "reject surt (ORG,Example,\n"
	                            "accept surt http://Example.NET\n"
	                            "accept surt https://www.example.com/a/\n");
	ck_assert_int_eq(dec(r, "http://www.example.org/docs/x"), 1);
	ck_assert_int_eq(dec(r, "https://www.example.org/docs/x"), -2); /* scheme */
	ck_assert_int_eq(dec(r, "http://a.example.org:81/"), -2);
	ck_assert_int_eq(dec(r, "http://example.org/"), -2);
	ck_assert_int_eq(dec(r, "http://xexample.org/"), 0);
	ck_assert_int_eq(dec(r, "http://www.example.net:8080/"), 3); /* no path: open */
	ck_assert_int_eq(dec(r, "https://www.example.com/a/b"), 4);
	ck_assert_int_eq(dec(r, "https://x.www.example.com/a/b"), 0);
	url_rules_destroy(r);
}
END_TEST

/* wget's -A/-R: the manual's "Types of Files" examples. */
START_TEST(wget_types_of_files)
{
	char err[512];
	struct url_rules *r = url_rules_create(NULL);
	/* wget -A gif,jpg: only files ending in gif or jpg */
	ck_assert_int_eq(url_rules_add_wget(r, URL_RULES_WGET_ACCEPT, "gif,jpg", err, sizeof err),
	                 URL_RULES_OK);
	ck_assert_int_eq(url_rules_seal(r, err, sizeof err), URL_RULES_OK);
	ck_assert_int_eq(dec(r, "http://h/a.gif"), 0);
	ck_assert_int_eq(dec(r, "http://h/b/c.jpg"), 0);
	ck_assert_int_eq(dec(r, "http://h/cjpg"), 0); /* a suffix, not an extension */
	ck_assert_int_eq(dec(r, "http://h/a.ps"), -FLAG);
	struct url_rules_decision d;
	url_rules_decide(r, "http://h/a.ps", 13, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	/* query strings are not part of the file name */
	url_rules_decide(r, "http://h/a.gif?x=1.ps", 21, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	/* -A and -R do not affect HTML files (.htm, .html) nor directories */
	url_rules_decide(r, "http://h/index.HTML", 19, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://h/p.shtml", 16, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://h/docs/", 14, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://h/p.php", 14, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_destroy(r);

	/* -A "zelazny*196[0-9]*": names beginning with zelazny and holding
	 * 1960..1969 */
	struct url_rules_config c = { 0 };
	c.wget[URL_RULES_WGET_ACCEPT] = "zelazny*196[0-9]*";
	ck_assert_int_eq(url_rules_from_config(&c, NULL, &r, err, sizeof err), URL_RULES_OK);
	ck_assert_int_eq(dec(r, "http://h/zelazny-lord-1967.txt"), 0);
	ck_assert_int_eq(dec(r, "http://h/a/zelazny%201969"), 0); /* decoded, as wget */
	url_rules_decide(r, "http://h/zelazny-1975.txt", 25, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://h/roger-zelazny-1965", 27, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_destroy(r);

	/* -R mpg,mpeg,au: all but those; -R "bjork*": all but names beginning
	 * with bjork */
	c.wget[URL_RULES_WGET_ACCEPT] = NULL;
	c.wget[URL_RULES_WGET_REJECT] = "mpg,mpeg,au,bjork*";
	ck_assert_int_eq(url_rules_from_config(&c, NULL, &r, err, sizeof err), URL_RULES_OK);
	url_rules_decide(r, "http://h/v.mpeg", 15, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://h/s.au", 13, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://h/bjork-live.mp3", 23, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://h/the-bjork.mp3", 22, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://h/a.mp4", 14, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_destroy(r);

	/* -A "*zelazny*" -R .ps: names holding zelazny, but no PostScript */
	c.wget[URL_RULES_WGET_ACCEPT] = "*zelazny*";
	c.wget[URL_RULES_WGET_REJECT] = ".ps";
	ck_assert_int_eq(url_rules_from_config(&c, NULL, &r, err, sizeof err), URL_RULES_OK);
	url_rules_decide(r, "http://h/amber-zelazny.pdf", 26, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://h/amber-zelazny.ps", 25, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://h/amber.pdf", 18, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_destroy(r);
}
END_TEST

/* wget's -I/-X: the manual's "Directory-Based Limits" examples. */
START_TEST(wget_directories)
{
	char err[512];
	struct url_rules *r;
	struct url_rules_config c = { 0 };
	/* wget -I /people,/cgi-bin http://host/people/bozo/ */
	c.wget[URL_RULES_WGET_INCLUDE_DIRS] = "/people,/cgi-bin";
	ck_assert_int_eq(url_rules_from_config(&c, NULL, &r, err, sizeof err), URL_RULES_OK);
	ck_assert_int_eq(dec(r, "http://host/people/bozo/"), 0);
	ck_assert_int_eq(dec(r, "http://host/people/alice/index.html"), 0);
	ck_assert_int_eq(dec(r, "http://host/cgi-bin/bogus.cgi"), 0);
	ck_assert_int_eq(dec(r, "http://host/peoplex/a.html"), -FLAG);
	struct url_rules_decision d;
	url_rules_decide(r, "http://host/peoplex/a.html", 26, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://host/other/a", 19, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://host/people", 18, 1, &d); /* a file in / */
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_destroy(r);
	/* -X /cgi-bin; and -I/pub -X/pub/worthless */
	c.wget[URL_RULES_WGET_INCLUDE_DIRS] = "/pub";
	c.wget[URL_RULES_WGET_EXCLUDE_DIRS] = "/pub/worthless,/cgi-bin";
	ck_assert_int_eq(url_rules_from_config(&c, NULL, &r, err, sizeof err), URL_RULES_OK);
	url_rules_decide(r, "http://host/pub/a/b.txt", 23, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://host/pub/worthless/b.txt", 31, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_decide(r, "http://host/pub/worthlessly/b", 29, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://host/cgi-bin/x", 21, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_destroy(r);
	/* wildcards: a glob over the whole directory, '*' not crossing '/' */
	r = build("reject dir /~*\naccept !dir /a/*/c");
	ck_assert_int_eq(dec(r, "http://h/~nobody/x"), -1);
	ck_assert_int_eq(dec(r, "http://h/~nobody/sub/x"), 2);
	ck_assert_int_eq(dec(r, "http://h/a/b/c/x"), 0);
	ck_assert_int_eq(dec(r, "http://h/a/b/d/c/x"), 2);
	url_rules_destroy(r);
}
END_TEST

START_TEST(wget_regex_and_joins)
{
	char err[512];
	struct url_rules *r;
	struct url_rules_config c = { 0 };
	char *acc = url_rules_wget_join(URL_RULES_WGET_ACCEPT_REGEX, NULL, "/docs/");
	char *acc2 = url_rules_wget_join(URL_RULES_WGET_ACCEPT_REGEX, acc, "\\.pdf$");
	ck_assert_str_eq(acc2, "(?:/docs/)|(?:\\.pdf$)");
	char *l1 = url_rules_wget_join(URL_RULES_WGET_ACCEPT, "gif", "jpg");
	ck_assert_str_eq(l1, "gif,jpg");
	char *l2 = url_rules_wget_join(URL_RULES_WGET_ACCEPT, l1, "");
	ck_assert_str_eq(l2, "");
	c.wget[URL_RULES_WGET_ACCEPT_REGEX] = acc2;
	c.wget[URL_RULES_WGET_REJECT_REGEX] = "[?&]sid=";
	ck_assert_int_eq(url_rules_from_config(&c, NULL, &r, err, sizeof err), URL_RULES_OK);
	struct url_rules_decision d;
	url_rules_decide(r, "http://h/docs/a", 15, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://h/x/a.pdf", 16, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://h/docs/a?sid=1", 21, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	struct url_rule_info info;
	ck_assert_int_eq(url_rules_rule(r, (size_t)d.rule, &info), 0);
	ck_assert_str_eq(info.source, "--reject-regex");
	ck_assert_str_eq(info.text, "reject regex [?&]sid=");
	url_rules_decide(r, "http://h/x/a", 12, 1, &d); /* the whole URL, not a part */
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	ck_assert_int_eq(url_rules_rule(r, (size_t)d.rule, &info), 0);
	ck_assert_str_eq(info.source, "--accept-regex");
	url_rules_destroy(r);
	free(acc);
	free(acc2);
	free(l1);
	free(l2);
}
END_TEST

/* The first rule that matches wins, whichever structure holds it. */
START_TEST(first_match_order)
{
	struct url_rules *r = build("# comment line\n"
	                            "   \n"
	                            "reject regex /private/   # trailing comment\n"
	                            "accept host a.test\n"
	                            "reject ext pdf\n"
	                            "accept prefix http://a.test/\n"
	                            "reject host a.test\n"
	                            "accept ext pdf\n");
	ck_assert_int_eq(dec(r, "http://a.test/private/x"), -3);
	ck_assert_int_eq(dec(r, "http://a.test/x.pdf"), 4);
	ck_assert_int_eq(dec(r, "http://b.test/x.pdf"), -5);
	ck_assert_int_eq(dec(r, "http://b.test/x"), 0);
	ck_assert_uint_eq(url_rules_size(r), 6);
	struct url_rule_info info;
	ck_assert_int_eq(url_rules_rule(r, 0, &info), 0);
	ck_assert_str_eq(info.text, "reject regex /private/");
	ck_assert_str_eq(info.source, "t.rules");
	ck_assert_uint_eq(info.line, 3);
	ck_assert_int_eq(url_rules_rule(r, 6, &info), -1);
	url_rules_destroy(r);
}
END_TEST

START_TEST(depth_and_priority)
{
	struct url_rules *r = build("accept prefix http://a.test/docs/ depth=2 priority=3\n"
	                            "accept host a.test priority=-2\n"
	                            "accept host b.test\n");
	struct url_rules_decision d;
	const char *k = "http://a.test/docs/x";
	url_rules_decide(r, k, strlen(k), 2, &d);
	ck_assert_int_eq(d.action, URL_RULES_ACCEPT);
	ck_assert_int_eq(d.priority, 3);
	ck_assert_uint_eq(d.depth, 2);
	ck_assert(!d.too_deep);
	url_rules_decide(r, k, strlen(k), 3, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT); /* not the next rule */
	ck_assert(d.too_deep);
	ck_assert_int_eq(d.rule, 0);
	k = "http://a.test/y";
	url_rules_decide(r, k, strlen(k), 99, &d);
	ck_assert_int_eq(d.action, URL_RULES_ACCEPT);
	ck_assert_int_eq(d.priority, -2);
	ck_assert_uint_eq(d.depth, 0);
	k = "http://b.test/y";
	url_rules_decide(r, k, strlen(k), 1, &d);
	ck_assert_int_eq(d.priority, 0);
	k = "http://c.test/y";
	url_rules_decide(r, k, strlen(k), 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	ck_assert_int_eq(d.priority, 0);
	/* counted per rule: accepted, rejected (too deep), no match */
	uint64_t a, j;
	url_rules_counts(r, 0, &a, &j);
	ck_assert_uint_eq(a, 1);
	ck_assert_uint_eq(j, 1);
	url_rules_counts(r, 3, &a, &j);
	ck_assert_uint_eq(a, 1);
	url_rules_counts_add(r, 1, 5, 0);
	url_rules_counts(r, 1, &a, &j);
	ck_assert_uint_eq(a, 6);
	url_rules_destroy(r);
}
END_TEST

START_TEST(malformed_rules)
{
	const struct {
		const char *text, *want;
	} cases[] = {
		{ "accept host a\nacept host b\n",
		  "t.rules:2: 'acept': expected accept or reject" },
		{ "reject hots a", "t.rules:1: 'hots': expected a matcher" },
		{ "reject host", "t.rules:1: expected ACTION MATCHER PATTERN" },
		{ "reject host a depth=2", "t.rules:1: depth= applies to accept rules only" },
		{ "accept host a depth=0", "t.rules:1: depth=0: expected a number of links" },
		{ "accept host a depth=x", "t.rules:1: depth=x" },
		{ "accept host a priority=4", "t.rules:1: priority=4: expected -3..3" },
		{ "accept host a priority=1 priority=2", "t.rules:1: priority given twice" },
		{ "accept host a b", "t.rules:1: 'b' after the pattern" },
		{ "accept host a/b", "t.rules:1: host: 'a/b' is not a host name" },
		{ "accept host a..b", "t.rules:1: host: 'a..b' is not a host name" },
		{ "reject ext ,", "t.rules:1: ext: an empty list" },
		{ "\n\n\nreject regex a)", "t.rules:4: regex: " },
		{ "reject surt ftp://x", "t.rules:1: surt:" },
		{ "reject host a b c d e f g h i", "t.rules:1: too many words" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *e = load_error(cases[i].text);
		ck_assert_msg(strncmp(e, cases[i].want, strlen(cases[i].want)) == 0,
		              "case %zu: got '%s'", i, e);
	}
	/* a file: named with its line; unreadable; and nothing added after sealing */
	char path[] = "/tmp/test_url_rules_XXXXXX", err[512];
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	const char *text = "accept host a.test\r\n# x\nreject regex (\n";
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct url_rules *r = url_rules_create(NULL);
	ck_assert_int_eq(url_rules_add_file(r, path, err, sizeof err), URL_RULES_ERR_SYNTAX);
	ck_assert_msg(strstr(err, ":3: regex: missing closing parenthesis"), "%s", err);
	ck_assert_uint_eq(url_rules_size(r), 1);
	ck_assert_int_eq(url_rules_seal(r, err, sizeof err), URL_RULES_OK);
	ck_assert_int_eq(url_rules_add_line(r, "accept host b", 13, "x", 1, err, sizeof err),
	                 URL_RULES_ERR_STATE);
	url_rules_destroy(r);
	unlink(path);
	r = url_rules_create(NULL);
	ck_assert_int_eq(url_rules_add_file(r, path, err, sizeof err), URL_RULES_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, path));
	url_rules_destroy(r);
	url_rules_destroy(NULL);
}
END_TEST

/* Patterns take the crawl keys' front options: strip_www and lowercase_path. */
START_TEST(key_options)
{
	struct url_options o;
	char err[512];
	url_options_init(&o);
	ck_assert_int_eq(url_options_set(&o, "strip_www", "true"), URL_OK);
	ck_assert_int_eq(url_options_set(&o, "lowercase_path", "true"), URL_OK);
	ck_assert_int_eq(url_options_set(&o, "strip_index", "true"), URL_OK);
	struct url_rules *r = try_build("accept host www.a.test\n"
	                                "reject prefix http://b.test/Docs/index.html\n",
	                                &o, err, sizeof err);
	ck_assert_ptr_nonnull(r);
	struct url_rules_decision d;
	url_rules_decide(r, "http://a.test/", 14, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_ACCEPT);
	/* strip_index acts on a URL's end: not applied to a prefix */
	url_rules_decide(r, "http://b.test/docs/", 19, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_NO_MATCH);
	url_rules_decide(r, "http://b.test/docs/index.html", 29, 1, &d);
	ck_assert_int_eq(d.action, URL_RULES_REJECT);
	url_rules_destroy(r);
}
END_TEST

/* ---- Reference models ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static const char *pick(const char *const *v, size_t n)
{
	return v[rnd((uint32_t)n)];
}
#define PICK(v) pick(v, sizeof v / sizeof v[0])

/* A random regex over a small alphabet, with the constructs the prefilter
 * reads and those it must not be fooled by. */
static void random_regex(char *out, size_t cap)
{
	static const char *const atoms[] = {
		"a",    "b",     "ab",      "/",       "\\.",     "=",        "x",     "[ab]",
		"\\d",  ".",     "(a|bc)",  "(?:x|y)", "(ab)",    "(?=a)",    "(?!b)", "\\b",
		"[^a]", "(a|b)", "(?:ab)*", "(?<=a)b", "(?i:ab)", "[]a]",     "\\w",   "q",
		"\\?",  "(?:)",  "^",       "$",       "(a(b)c)", "[a-c]{2}", "a{1,}", "1",
	};
	static const char *const quants[] = { "",  "",      "",    "",   "*",  "+",
		                              "?", "{0,2}", "{2}", "??", "+?", "{1}" };
	size_t o = 0;
	int parts = 1 + (int)rnd(5);
	out[0] = '\0';
	for (int i = 0; i < parts; i++) {
		const char *a = PICK(atoms), *q = PICK(quants);
		if ((strcmp(a, "^") == 0 || strcmp(a, "$") == 0 || strncmp(a, "(?=", 3) == 0 ||
		     strncmp(a, "(?!", 3) == 0 || strncmp(a, "(?<", 3) == 0 ||
		     strcmp(a, "\\b") == 0))
			q = "";
		o += (size_t)snprintf(out + o, cap - o, "%s%s", a, q);
	}
	if (rnd(10) == 0)
		o += (size_t)snprintf(out + o, cap - o, "|%s", PICK(atoms));
	(void)o;
}

static void random_url(char *out, size_t cap)
{
	static const char alphabet[] = "ab/.=x?1qAB";
	size_t o = (size_t)snprintf(out, cap, "http://%s/", rnd(2) ? "h.test" : "ab.test");
	int n = (int)rnd(14);
	for (int i = 0; i < n && o + 1 < cap; i++)
		out[o++] = alphabet[rnd(sizeof alphabet - 1)];
	out[o] = '\0';
}

/* With and without the prefilter, every decision is the same: the
 * literals it reads off a regex are in every match. */
START_TEST(prefilter_reference)
{
	char re[256], line[300], url[64], err[512];
	int used = 0;
	for (int round = 0; round < 400; round++) {
		struct url_rules *with = url_rules_create(NULL), *without = url_rules_create(NULL);
		int nrules = 1 + (int)rnd(6);
		for (int k = 0; k < nrules; k++) {
			random_regex(re, sizeof re);
			snprintf(line, sizeof line, "%s regex %s", rnd(2) ? "accept" : "reject",
			         re);
			if (rnd(5) == 0)
				snprintf(line, sizeof line, "reject !regex %s", re);
			enum url_rules_err e1 = url_rules_add_line(with, line, strlen(line), "r", 1,
			                                           err, sizeof err);
			enum url_rules_err e2 = url_rules_add_line(without, line, strlen(line), "r",
			                                           1, err, sizeof err);
			ck_assert_int_eq(e1, e2);
		}
		url_rules_set_prefilter(without, false);
		ck_assert_int_eq(url_rules_seal(with, err, sizeof err), URL_RULES_OK);
		ck_assert_int_eq(url_rules_seal(without, err, sizeof err), URL_RULES_OK);
		used += with->pf != NULL;
		for (int u = 0; u < 60; u++) {
			struct url_rules_decision a, b;
			random_url(url, sizeof url);
			url_rules_decide(with, url, strlen(url), 1, &a);
			url_rules_decide(without, url, strlen(url), 1, &b);
			ck_assert_msg(a.action == b.action && a.rule == b.rule,
			              "url %s: %d/%d vs %d/%d (rules of round %d)", url, a.action,
			              a.rule, b.action, b.rule, round);
		}
		url_rules_destroy(with);
		url_rules_destroy(without);
	}
	ck_assert_int_gt(used, 200); /* the prefilter was in play */
}
END_TEST

START_TEST(prefilter_literals)
{
	const struct {
		const char *re;
		const char *lits; /* '|'-separated; "" none */
	} cases[] = {
		{ "/archive/\\d{4}/\\d{2}/", "/archive/" },
		{ "\\.(pri|pr2)(\\?|$)", "pri|pr2" },
		{ "^https?://[^/]*\\blogin3\\.", "login3." },
		{ "[?&]utm_chec6=", "utm_chec6=" },
		{ "ab?cd", "cd" },
		{ "x{0,2}yz", "yz" },
		{ "ab+c", "ab" },
		{ "a|bcd", "" },
		{ "(?i)abc", "" },
		{ "\\Qa(b\\E", "" },
		{ "(abc)?d", "d" },
		{ "(?=abc)d", "d" },
		{ "\\x41bc", "" },
		{ "(a)\\1", "" },
		{ "...", "" },
		{ "ab{,2}cd", "cd" }, /* {,2}: a quantifier from PCRE2 10.43 on */
		{ "ab{x}", "ab{x}" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char buf[256], got[256] = "";
		const char *lits[16];
		size_t lens[16], n = 0, o = 0;
		url_rules_pf_literals(cases[i].re, strlen(cases[i].re), buf, sizeof buf, lits, lens,
		                      16, &n);
		for (size_t k = 0; k < n; k++)
			o += (size_t)snprintf(got + o, sizeof got - o, "%s%.*s", k ? "|" : "",
			                      (int)lens[k], lits[k]);
		ck_assert_msg(strcmp(got, cases[i].lits) == 0, "%s: got '%s', want '%s'",
		              cases[i].re, got, cases[i].lits);
	}
}
END_TEST

/* Random lists of every kind: each decision is the first rule that,
 * alone in a list, matches. */
START_TEST(first_match_reference)
{
	static const char *const rules[] = {
		"accept host a.test",
		"reject host .test",
		"accept domain ab.test",
		"reject ext x,q",
		"accept !ext a",
		"reject prefix http://h.test/a",
		"accept path /b",
		"reject surt (test,ab,)/a",
		"accept surt http://(test,",
		"reject regex [ab]=",
		"accept regex ^http://h",
		"reject !regex /a",
		"reject file *a*",
		"accept !file ab",
		"reject dir /a",
		"accept !dir /b",
		"reject !host h.test",
		"accept !domain ab.test",
	};
	char err[512], url[64];
	for (int round = 0; round < 300; round++) {
		struct url_rules *r = url_rules_create(NULL);
		int nrules = 1 + (int)rnd(8);
		struct url_rules *single[8];
		for (int k = 0; k < nrules; k++) {
			const char *t = PICK(rules);
			single[k] = url_rules_create(NULL);
			ck_assert_int_eq(url_rules_add_line(r, t, strlen(t), "r", (uint32_t)k + 1,
			                                    err, sizeof err),
			                 URL_RULES_OK);
			ck_assert_int_eq(url_rules_add_line(single[k], t, strlen(t), "r", 1, err,
			                                    sizeof err),
			                 URL_RULES_OK);
			ck_assert_int_eq(url_rules_seal(single[k], err, sizeof err), URL_RULES_OK);
		}
		ck_assert_int_eq(url_rules_seal(r, err, sizeof err), URL_RULES_OK);
		for (int u = 0; u < 40; u++) {
			struct url_rules_decision d, s;
			random_url(url, sizeof url);
			url_rules_decide(r, url, strlen(url), 1, &d);
			int want = -1;
			enum url_rules_action act = URL_RULES_NO_MATCH;
			for (int k = 0; k < nrules && want < 0; k++) {
				url_rules_decide(single[k], url, strlen(url), 1, &s);
				if (s.action != URL_RULES_NO_MATCH) {
					want = k;
					act = s.action;
				}
			}
			ck_assert_msg(d.rule == want && d.action == act, "%s: rule %d, want %d",
			              url, d.rule, want);
		}
		for (int k = 0; k < nrules; k++)
			url_rules_destroy(single[k]);
		url_rules_destroy(r);
	}
}
END_TEST

struct thread_arg {
	struct url_rules *r;
	int mismatches;
};

static const char *const thread_urls[] = {
	"http://a.test/x?sid=1", "http://b.test/a.pdf", "http://c.test/docs/",
	"http://d.test/q",       "http://a.test/x",
};

static void *decide_many(void *p)
{
	struct thread_arg *a = p;
	static const int want[] = { -1, 2, 0, 0, 3 };
	for (int i = 0; i < 20000; i++) {
		const char *u = thread_urls[i % 5];
		struct url_rules_decision d;
		url_rules_decide(a->r, u, strlen(u), 1, &d);
		int got = d.action == URL_RULES_NO_MATCH
		                  ? 0
		                  : (d.action == URL_RULES_ACCEPT ? d.rule + 1 : -(d.rule + 1));
		a->mismatches += got != want[i % 5];
	}
	return NULL;
}

/* Decisions from several threads at once, counted exactly. */
START_TEST(threads)
{
	struct url_rules *r = build("reject regex [?&]sid=\n"
	                            "accept ext pdf\n"
	                            "accept host a.test\n");
	struct thread_arg args[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ r, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, decide_many, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(args[i].mismatches, 0);
	}
	uint64_t a, j;
	url_rules_counts(r, 0, &a, &j);
	ck_assert_uint_eq(j, 4 * 4000);
	url_rules_counts(r, 3, &a, &j);
	ck_assert_uint_eq(a, 4 * 8000);
	url_rules_destroy(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("url_rules");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, host_rules);
	tcase_add_test(tc, domain_rules);
	tcase_add_test(tc, prefix_path_rules);
	tcase_add_test(tc, regex_rules);
	tcase_add_test(tc, ext_rules);
	tcase_add_test(tc, surt_form);
	tcase_add_test(tc, wget_types_of_files);
	tcase_add_test(tc, wget_directories);
	tcase_add_test(tc, wget_regex_and_joins);
	tcase_add_test(tc, first_match_order);
	tcase_add_test(tc, depth_and_priority);
	tcase_add_test(tc, malformed_rules);
	tcase_add_test(tc, key_options);
	tcase_add_test(tc, prefilter_literals);
	tcase_add_test(tc, prefilter_reference);
	tcase_add_test(tc, first_match_reference);
	tcase_add_test(tc, threads);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
