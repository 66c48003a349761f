/*
 * test_sitemap.c: Check suite for parse/sitemap.h.
 *  - urlset and sitemapindex: every entry's loc as a crawl key, its kind and
 *    lastmod, extensions' image:loc left out, entries without loc counted;
 *  - gzip: the same entries from a gzip body, fed whole or byte by byte,
 *    and from two concatenated members; a corrupt stream is "bad-gzip";
 *  - a gzip bomb (under 1 MB compressed, > 50 MB uncompressed) stops at
 *    exactly 50 MB, "truncated", its first entry kept, memory bounded;
 *  - 50,001 entries: the first 50,000 emitted, the last dropped and counted;
 *  - malformed XML (a cut tag, a mismatched end tag): the entries before it
 *    kept, "malformed" with libxml2's line and message;
 *  - a DTD declaring an external entity (a file that exists) and a
 *    billion-laughs entity: no entity recorded, so the references are
 *    undeclared ("malformed", named), nothing expanded or read; an external
 *    DTD is not loaded and an unused internal one is harmless;
 *  - white space around a loc, a CDATA loc, entities in a loc;
 *  - no namespace or the old Google one: read, flagged foreign; a root of
 *    another kind (RSS): "not-sitemap", nothing emitted;
 *  - a loc over the URL length limit, relative and non-http locs, nesting
 *    over the depth limit, the callback stopping the document;
 *  - scope rules: same host, the protocol's directory rule, and the
 *    cross-submission scope URL;
 *  - bad calls: a relative or non-http sitemap or scope URL, feed or finish
 *    without a document;
 *  - the tag guard: a root of 160,000 attributes, an entry tag of 40, a
 *    5,000-byte tag: malformed before libxml2 parses them, the entries
 *    before kept; quotes and '>' in comments, CDATA and a DTD, a BOM and
 *    an encoding declaration pass; UTF-16 and EBCDIC are refused.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <zlib.h>

#include "frontier/url.h"
#include "parse/sitemap.h"

#define NS "http://www.sitemaps.org/schemas/sitemap/0.9"
#define SITEMAP_URL "http://example.com/sitemap.xml"
#define MAX_KEPT 64

/* What the callback saw: every entry counted, the first MAX_KEPT kept. */
struct seen {
	size_t count;
	char *url[MAX_KEPT];
	char *lastmod[MAX_KEPT];
	double priority[MAX_KEPT];
	enum sitemap_kind kind[MAX_KEPT];
	char last_url[256];
	size_t stop_after; /* 0: never stop */
};

static int collect(const struct sitemap_entry *e, void *arg)
{
	struct seen *s = arg;
	ck_assert_uint_eq(strlen(e->url), e->len);
	if (s->count < MAX_KEPT) {
		s->url[s->count] = strdup(e->url);
		s->lastmod[s->count] = e->lastmod ? strdup(e->lastmod) : NULL;
		s->kind[s->count] = e->kind;
		s->priority[s->count] = e->priority;
	}
	snprintf(s->last_url, sizeof s->last_url, "%s", e->url);
	s->count++;
	return s->stop_after && s->count >= s->stop_after;
}

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->count && i < MAX_KEPT; i++) {
		free(s->url[i]);
		free(s->lastmod[i]);
	}
	memset(s, 0, sizeof *s);
}

/* Parses `doc` (NUL-terminated) from SITEMAP_URL with `cfg` (NULL: defaults). */
static struct sitemap_result parse_doc(const struct sitemap_config *cfg, const char *doc,
                                       struct seen *s)
{
	struct sitemap_parser *p = NULL;
	ck_assert_int_eq(sitemap_parser_create(cfg, &p), SITEMAP_OK);
	struct sitemap_result r;
	ck_assert_int_eq(sitemap_parse(p, SITEMAP_URL, NULL, doc, strlen(doc), collect, s, &r),
	                 SITEMAP_OK);
	sitemap_parser_destroy(p);
	ck_assert_uint_eq(r.locs, s->count);
	return r;
}

/* gzip of data (one member), malloc'd; *out_len its length. */
static unsigned char *gzip_of(const char *data, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	ck_assert_int_eq(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	size_t cap = deflateBound(&z, len);
	unsigned char *out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	z.next_in = (unsigned char *)data;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static const char urlset_doc[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<urlset xmlns=\"" NS
        "\" xmlns:image=\"http://www.google.com/schemas/sitemap-image/1.1\">\n"
        "  <url><loc>http://example.com/</loc><lastmod>2024-01-02</lastmod>"
        "<changefreq>daily</changefreq><priority>0.8</priority></url>\n"
        "  <url><lastmod> 2024-03-04T05:06:07+00:00 </lastmod>"
        "<loc>http://EXAMPLE.com/a/../b?x=%7e#frag</loc>"
        "<image:image><image:loc>http://example.com/img.png</image:loc></image:image></url>\n"
        "  <url><changefreq>never</changefreq></url>\n"
        "  <url><loc>http://example.com/c</loc><loc>http://example.com/second</loc></url>\n"
        "</urlset>\n";

START_TEST(test_urlset)
{
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, urlset_doc, &s);
	ck_assert_int_eq(r.kind, SITEMAP_KIND_URLSET);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_str_eq(r.message, "");
	ck_assert(!r.foreign_namespace && !r.gzip);
	ck_assert_uint_eq(r.locs, 3);
	ck_assert_uint_eq(r.empty, 1);
	ck_assert_str_eq(s.url[0], "http://example.com/");
	ck_assert_str_eq(s.lastmod[0], "2024-01-02");
	ck_assert_str_eq(s.url[1], "http://example.com/b?x=~"); /* the crawl key */
	ck_assert_str_eq(s.lastmod[1], "2024-03-04T05:06:07+00:00");
	ck_assert_str_eq(s.url[2], "http://example.com/c"); /* the first loc only */
	ck_assert_ptr_null(s.lastmod[2]);
	ck_assert_int_eq(s.kind[0], SITEMAP_KIND_URLSET);
	ck_assert_uint_eq(r.bytes, strlen(urlset_doc));
	seen_free(&s);
}
END_TEST

/* <priority>: a number in 0.0..1.0 (blanks trimmed), else -1; its tier. */
START_TEST(test_priority)
{
	static const char doc[] =
	        "<urlset xmlns=\"" NS "\">\n"
	        "<url><loc>http://example.com/a</loc><priority>0.8</priority></url>\n"
	        "<url><priority> 1.0 </priority><loc>http://example.com/b</loc></url>\n"
	        "<url><loc>http://example.com/c</loc></url>\n"
	        "<url><loc>http://example.com/d</loc><priority>1.5</priority></url>\n"
	        "<url><loc>http://example.com/e</loc><priority>high</priority></url>\n"
	        "<url><loc>http://example.com/f</loc><priority>0</priority></url>\n"
	        "<url><loc>http://example.com/g</loc><priority>0.50000000000000000001</priority>"
	        "</url>\n"
	        "<url><loc>http://example.com/h</loc><priority>0.3</priority></url>\n"
	        "</urlset>\n";
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, doc, &s);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(s.count, 8);
	static const double want[] = { 0.8, 1.0, -1, -1, -1, 0, -1, 0.3 };
	static const int tier[] = { 2, 3, 0, 0, 0, -3, 0, -1 };
	for (size_t i = 0; i < 8; i++) {
		ck_assert_msg(s.priority[i] == want[i], "%zu: %g", i, s.priority[i]);
		ck_assert_int_eq(sitemap_priority_tier(s.priority[i]), tier[i]);
	}
	seen_free(&s);
	ck_assert_int_eq(sitemap_priority_tier(0.5), 0);
	ck_assert_int_eq(sitemap_priority_tier(0.6), 1);
	ck_assert_int_eq(sitemap_priority_tier(0.4), -1);
	/* an index's entries have none */
	static const char index[] = "<sitemapindex xmlns=\"" NS "\"><sitemap><loc>"
	                            "http://example.com/s.xml</loc><priority>1.0</priority>"
	                            "</sitemap></sitemapindex>";
	r = parse_doc(NULL, index, &s);
	ck_assert_uint_eq(s.count, 1);
	ck_assert(s.priority[0] == -1);
	seen_free(&s);
}
END_TEST

START_TEST(test_sitemapindex)
{
	static const char doc[] =
	        "<?xml version=\"1.0\"?><sitemapindex xmlns=\"" NS "\">"
	        "<sitemap><loc>http://example.com/sitemap1.xml.gz</loc>"
	        "<lastmod>2004-10-01T18:23:17+00:00</lastmod></sitemap>"
	        "<sitemap><loc>http://example.com/sitemap2.xml</loc></sitemap>"
	        "<url><loc>http://example.com/not-an-entry-of-an-index</loc></url>"
	        "</sitemapindex>";
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, doc, &s);
	ck_assert_int_eq(r.kind, SITEMAP_KIND_INDEX);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(r.locs, 2);
	ck_assert_int_eq(s.kind[0], SITEMAP_KIND_INDEX);
	ck_assert_str_eq(s.url[0], "http://example.com/sitemap1.xml.gz");
	ck_assert_str_eq(s.lastmod[0], "2004-10-01T18:23:17+00:00");
	ck_assert_str_eq(s.url[1], "http://example.com/sitemap2.xml");
	ck_assert_str_eq(sitemap_kind_name(r.kind), "sitemapindex");
	seen_free(&s);
}
END_TEST

START_TEST(test_gzip)
{
	size_t glen;
	unsigned char *gz = gzip_of(urlset_doc, strlen(urlset_doc), &glen);
	struct sitemap_parser *p = NULL;
	ck_assert_int_eq(sitemap_parser_create(NULL, &p), SITEMAP_OK);
	struct sitemap_result r;
	struct seen whole = { 0 }, bytewise = { 0 }, twice = { 0 };
	ck_assert_int_eq(sitemap_parse(p, SITEMAP_URL, NULL, (char *)gz, glen, collect, &whole, &r),
	                 SITEMAP_OK);
	ck_assert(r.gzip);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(r.locs, 3);
	ck_assert_uint_eq(r.bytes, strlen(urlset_doc));
	ck_assert_str_eq(whole.url[1], "http://example.com/b?x=~");

	/* The same parser again, one byte at a time: the magic comes apart. */
	ck_assert_int_eq(sitemap_begin(p, SITEMAP_URL, NULL, collect, &bytewise), SITEMAP_OK);
	for (size_t i = 0; i < glen; i++)
		ck_assert_int_eq(sitemap_feed(p, (char *)gz + i, 1), SITEMAP_OK);
	ck_assert_int_eq(sitemap_finish(p, &r), SITEMAP_OK);
	ck_assert(r.gzip);
	ck_assert_uint_eq(bytewise.count, 3);
	for (size_t i = 0; i < 3; i++)
		ck_assert_str_eq(bytewise.url[i], whole.url[i]);

	/* Two members (the document split in two, each compressed). */
	size_t half = strlen(urlset_doc) / 2, l1, l2;
	unsigned char *g1 = gzip_of(urlset_doc, half, &l1);
	unsigned char *g2 = gzip_of(urlset_doc + half, strlen(urlset_doc) - half, &l2);
	unsigned char *both = malloc(l1 + l2);
	memcpy(both, g1, l1);
	memcpy(both + l1, g2, l2);
	ck_assert_int_eq(
	        sitemap_parse(p, SITEMAP_URL, NULL, (char *)both, l1 + l2, collect, &twice, &r),
	        SITEMAP_OK);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(twice.count, 3);

	/* Corrupt: the deflate data damaged; and cut short. */
	struct seen none = { 0 };
	gz[12] ^= 0xff;
	gz[13] ^= 0xff;
	ck_assert_int_eq(sitemap_parse(p, SITEMAP_URL, NULL, (char *)gz, glen, collect, &none, &r),
	                 SITEMAP_OK);
	ck_assert_int_eq(r.problem, SITEMAP_BAD_GZIP);
	ck_assert_int_eq(
	        sitemap_parse(p, SITEMAP_URL, NULL, (char *)g1, l1 / 2, collect, &none, &r),
	        SITEMAP_OK);
	ck_assert_int_eq(r.problem, SITEMAP_BAD_GZIP);
	ck_assert_str_eq(sitemap_problem_name(r.problem), "bad-gzip");
	free(gz);
	free(g1);
	free(g2);
	free(both);
	seen_free(&whole);
	seen_free(&bytewise);
	seen_free(&twice);
	seen_free(&none);
	sitemap_parser_destroy(p);
}
END_TEST

/* A valid start, then white space inside the urlset without end: 60 MiB
 * uncompressed, gzip-compressed piece by piece (so the test never holds the
 * uncompressed bomb). *out_len gets the compressed size. */
static unsigned char *make_gzip_bomb(size_t *out_len)
{
	static const char head[] = "<?xml version=\"1.0\"?><urlset xmlns=\"" NS "\">"
	                           "<url><loc>http://example.com/first</loc></url>";
	static char spaces[1 << 20];
	memset(spaces, ' ', sizeof spaces);
	z_stream z = { 0 };
	ck_assert_int_eq(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	size_t cap = 1 << 20;
	unsigned char *out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	z.next_out = out;
	z.avail_out = (uInt)cap;
	z.next_in = (unsigned char *)head;
	z.avail_in = sizeof head - 1;
	ck_assert_int_eq(deflate(&z, Z_NO_FLUSH), Z_OK);
	for (int i = 0; i < 60; i++) {
		z.next_in = (unsigned char *)spaces;
		z.avail_in = sizeof spaces;
		ck_assert_int_eq(deflate(&z, i == 59 ? Z_FINISH : Z_NO_FLUSH),
		                 i == 59 ? Z_STREAM_END : Z_OK);
		ck_assert_uint_eq(z.avail_in, 0);
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static long max_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

START_TEST(test_gzip_bomb)
{
	size_t glen;
	unsigned char *bomb = make_gzip_bomb(&glen);
	ck_assert_uint_lt(glen, 1024 * 1024);
	long rss_before = max_rss_kb();
	struct sitemap_parser *p = NULL;
	ck_assert_int_eq(sitemap_parser_create(NULL, &p), SITEMAP_OK);
	struct seen s = { 0 };
	struct sitemap_result r;
	ck_assert_int_eq(sitemap_parse(p, SITEMAP_URL, NULL, (char *)bomb, glen, collect, &s, &r),
	                 SITEMAP_OK);
	ck_assert_int_eq(r.problem, SITEMAP_TRUNCATED);
	ck_assert_str_eq(sitemap_problem_name(r.problem), "truncated");
	ck_assert_uint_eq(r.bytes, SITEMAP_MAX_BYTES);
	ck_assert(r.gzip);
	ck_assert_uint_eq(s.count, 1);
	ck_assert_str_eq(s.url[0], "http://example.com/first");
	sitemap_parser_destroy(p);
#if !defined(__SANITIZE_ADDRESS__)
	/* libxml2 keeps a window of its input, not the 50 MB. */
	ck_assert_int_lt(max_rss_kb() - rss_before, 24 * 1024);
#else
	(void)rss_before; /* ASan's quarantine holds freed memory: RSS says nothing */
#endif
	free(bomb);
	seen_free(&s);
}
END_TEST

/* A urlset of n entries http://example.com/p/<i>; malloc'd. */
static char *make_urlset(size_t n)
{
	size_t cap = 128 + n * 64;
	char *doc = malloc(cap);
	ck_assert_ptr_nonnull(doc);
	size_t o =
	        (size_t)snprintf(doc, cap, "<?xml version=\"1.0\"?>\n<urlset xmlns=\"" NS "\">\n");
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(doc + o, cap - o,
		                      "<url><loc>http://example.com/p/%zu</loc></url>\n", i);
	snprintf(doc + o, cap - o, "</urlset>\n");
	return doc;
}

START_TEST(test_max_locs)
{
	char *doc = make_urlset(SITEMAP_MAX_LOCS + 1);
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, doc, &s);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(r.locs, SITEMAP_MAX_LOCS);
	ck_assert_uint_eq(r.dropped_over_limit, 1);
	ck_assert_str_eq(s.last_url, "http://example.com/p/49999");
	seen_free(&s);

	/* A lower configured limit. */
	struct sitemap_config cfg = { .max_locs = 10 };
	r = parse_doc(&cfg, doc, &s);
	ck_assert_uint_eq(r.locs, 10);
	ck_assert_uint_eq(r.dropped_over_limit, SITEMAP_MAX_LOCS + 1 - 10);
	seen_free(&s);
	free(doc);
}
END_TEST

START_TEST(test_malformed)
{
	static const char cut[] = "<urlset xmlns=\"" NS "\">"
	                          "<url><loc>http://example.com/1</loc></url>\n"
	                          "<url><loc>http://example.com/2</loc></url>\n"
	                          "<url><loc>http://example.com/3</lo";
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, cut, &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_uint_eq(r.locs, 2);
	ck_assert_str_eq(s.url[1], "http://example.com/2");
	ck_assert_ptr_nonnull(strstr(r.message, "line 3: "));
	seen_free(&s);

	static const char mismatched[] = "<urlset>\n<url><loc>http://example.com/1</loc></url>\n"
	                                 "<url><loc>http://example.com/2</loc></uurl>\n"
	                                 "<url><loc>http://example.com/3</loc></url></urlset>";
	r = parse_doc(NULL, mismatched, &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_uint_eq(r.locs, 1);
	ck_assert_ptr_nonnull(strstr(r.message, "line 3: "));
	seen_free(&s);

	static const char *const garbage[] = { "", " ", "x", "not xml at all", "<", "\x1f" };
	for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
		r = parse_doc(NULL, garbage[i], &s);
		ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
		ck_assert_int_eq(r.kind, SITEMAP_KIND_UNKNOWN);
		ck_assert_uint_eq(r.locs, 0);
		ck_assert_str_ne(r.message, "");
	}
}
END_TEST

START_TEST(test_entities_not_expanded)
{
	/* The test's own source file exists and is readable: were the external
	 * entity read, its text would show in a loc. */
	char xxe[1024];
	snprintf(xxe, sizeof xxe,
	         "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset [\n"
	         "<!ENTITY xxe SYSTEM \"file://%s\">\n]>\n"
	         "<urlset xmlns=\"" NS "\"><url><loc>http://example.com/x?&xxe;</loc></url>"
	         "<url><loc>http://example.com/after</loc></url></urlset>",
	         __FILE__);
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, xxe, &s);
	/* No entity of the DTD is recorded: the reference is undeclared, the
	 * document malformed there, nothing read. */
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_ptr_nonnull(strstr(r.message, "Entity 'xxe' not defined"));
	ck_assert_uint_eq(r.locs, 0);
	seen_free(&s);

	/* An external DTD is not loaded; a DTD nobody refers to is harmless. */
	snprintf(xxe, sizeof xxe,
	         "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset SYSTEM \"file://%s\" [\n"
	         "<!ENTITY unused \"x\">\n]>\n"
	         "<urlset xmlns=\"" NS "\"><url><loc>http://example.com/1</loc></url>"
	         "<url><loc>http://example.com/2</loc></url></urlset>",
	         __FILE__);
	r = parse_doc(NULL, xxe, &s);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(r.locs, 2);
	seen_free(&s);

	static const char laughs[] =
	        "<?xml version=\"1.0\"?>\n<!DOCTYPE urlset [\n"
	        "<!ENTITY lol \"lol\">\n"
	        "<!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
	        "<!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
	        "<!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
	        "<!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">\n"
	        "<!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">\n"
	        "<!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">\n"
	        "<!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">\n"
	        "<!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">\n"
	        "<!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">\n"
	        "]>\n<urlset xmlns=\"" NS "\"><url><loc>http://example.com/&lol9;</loc></url>"
	        "<url><loc>http://example.com/after</loc></url></urlset>";
	r = parse_doc(NULL, laughs, &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_ptr_nonnull(strstr(r.message, "Entity 'lol9' not defined"));
	ck_assert_uint_eq(r.locs, 0);
	ck_assert_uint_eq(r.bytes, sizeof laughs - 1);
	seen_free(&s);
}
END_TEST

START_TEST(test_loc_text)
{
	static const char doc[] =
	        "<urlset xmlns=\"" NS "\">"
	        "<url><loc>\n\t   http://example.com/ws  \r\n </loc></url>"
	        "<url><loc><![CDATA[http://example.com/cdata?a=1&b=2]]></loc></url>"
	        "<url><loc>  <![CDATA[http://example.com/]]>mixed</loc></url>"
	        "<url><loc>http://example.com/ent?a=1&amp;b=&#50;</loc></url>"
	        "<url><loc>   </loc></url>"
	        "<url><loc>/relative</loc></url>"
	        "<url><loc>ftp://example.com/file</loc></url>"
	        "<url><loc>http://exa mple.com/</loc></url>"
	        "</urlset>";
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, doc, &s);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(r.locs, 4);
	ck_assert_str_eq(s.url[0], "http://example.com/ws");
	ck_assert_str_eq(s.url[1], "http://example.com/cdata?a=1&b=2");
	ck_assert_str_eq(s.url[2], "http://example.com/mixed");
	ck_assert_str_eq(s.url[3], "http://example.com/ent?a=1&b=2");
	ck_assert_uint_eq(r.empty, 1);
	ck_assert_uint_eq(r.invalid, 3);
	seen_free(&s);
}
END_TEST

START_TEST(test_namespaces)
{
	static const char none[] = "<urlset><url><loc>http://example.com/a</loc></url></urlset>";
	static const char google[] = "<urlset xmlns=\"http://www.google.com/schemas/sitemap/0.84\">"
	                             "<url><loc>http://example.com/b</loc></url></urlset>";
	static const char prefixed[] =
	        "<sm:urlset xmlns:sm=\"" NS "\"><sm:url><sm:loc>http://example.com/c</sm:loc>"
	        "</sm:url></sm:urlset>";
	static const char rss[] = "<rss version=\"2.0\"><channel><item><link>http://example.com/"
	                          "</link></item></channel></rss>";
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(NULL, none, &s);
	ck_assert(r.foreign_namespace);
	ck_assert_uint_eq(r.locs, 1);
	seen_free(&s);
	r = parse_doc(NULL, google, &s);
	ck_assert(r.foreign_namespace);
	ck_assert_uint_eq(r.locs, 1);
	seen_free(&s);
	r = parse_doc(NULL, prefixed, &s);
	ck_assert(!r.foreign_namespace);
	ck_assert_str_eq(s.url[0], "http://example.com/c");
	seen_free(&s);
	r = parse_doc(NULL, rss, &s);
	ck_assert_int_eq(r.problem, SITEMAP_NOT_SITEMAP);
	ck_assert_int_eq(r.kind, SITEMAP_KIND_UNKNOWN);
	ck_assert_ptr_nonnull(strstr(r.message, "<rss>"));
	ck_assert_uint_eq(r.locs, 0);
	seen_free(&s);
}
END_TEST

START_TEST(test_limits)
{
	/* A loc over the URL length limit (64 here), one at the limit with
	 * trailing white space beyond it, and the default limit (2048). */
	struct url_options uo;
	url_options_init(&uo);
	uo.max_len = 64;
	struct sitemap_config cfg = { .url_options = &uo };
	char doc[8192];
	char path[3000];
	memset(path, 'a', sizeof path - 1);
	path[sizeof path - 1] = '\0';
	snprintf(doc, sizeof doc,
	         "<urlset><url><loc>http://example.com/%.50s</loc></url>"
	         "<url><loc>http://example.com/%.45s                   </loc></url>"
	         "<url><loc>http://example.com/%s</loc></url></urlset>",
	         path, path, path);
	struct seen s = { 0 };
	struct sitemap_result r = parse_doc(&cfg, doc, &s);
	ck_assert_uint_eq(r.too_long, 2);
	ck_assert_uint_eq(r.locs, 1);
	ck_assert_uint_eq(strlen(s.url[0]), 64);
	seen_free(&s);
	r = parse_doc(NULL, doc, &s);
	ck_assert_uint_eq(r.too_long, 1);
	ck_assert_uint_eq(r.locs, 2);
	seen_free(&s);

	/* Nesting beyond max_depth stops the document. */
	struct sitemap_config shallow = { .max_depth = 4 };
	static const char deep[] = "<urlset><url><loc>http://example.com/1</loc></url>"
	                           "<url><a><b><c>x</c></b></a></url>"
	                           "<url><loc>http://example.com/2</loc></url></urlset>";
	r = parse_doc(&shallow, deep, &s);
	ck_assert_int_eq(r.problem, SITEMAP_TOO_DEEP);
	ck_assert_uint_eq(r.locs, 1);
	seen_free(&s);
	r = parse_doc(NULL, deep, &s);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	ck_assert_uint_eq(r.locs, 2);
	seen_free(&s);

	/* The callback stops the document. */
	char *big = make_urlset(100);
	s.stop_after = 5;
	r = parse_doc(NULL, big, &s);
	ck_assert_int_eq(r.problem, SITEMAP_STOPPED);
	ck_assert_uint_eq(r.locs, 5);
	seen_free(&s);
	free(big);
}
END_TEST

static const char scope_doc[] = "<urlset>"
                                "<url><loc>http://example.com/catalog/a</loc></url>"
                                "<url><loc>https://example.com/catalog/b</loc></url>"
                                "<url><loc>http://example.com/images/c</loc></url>"
                                "<url><loc>http://other.example/catalog/d</loc></url>"
                                "<url><loc>http://example.com:8080/catalog/e</loc></url>"
                                "</urlset>";

/* scope_doc from http://example.com/catalog/sitemap.xml under `rule`,
 * compared with `scope_url` (NULL: the sitemap's). */
static struct sitemap_result parse_scoped(enum sitemap_scope rule, const char *scope_url,
                                          struct seen *s)
{
	struct sitemap_config cfg = { .scope = rule };
	struct sitemap_parser *p = NULL;
	struct sitemap_result r;
	ck_assert_int_eq(sitemap_parser_create(&cfg, &p), SITEMAP_OK);
	ck_assert_int_eq(sitemap_parse(p, "http://example.com/catalog/sitemap.xml", scope_url,
	                               scope_doc, strlen(scope_doc), collect, s, &r),
	                 SITEMAP_OK);
	sitemap_parser_destroy(p);
	ck_assert_uint_eq(r.locs + r.out_of_scope, 5);
	return r;
}

START_TEST(test_scope)
{
	struct seen s = { 0 };
	struct sitemap_result r = parse_scoped(SITEMAP_SCOPE_ANY, NULL, &s);
	ck_assert_uint_eq(r.locs, 5);
	seen_free(&s);

	/* Same host: scheme and port may differ. */
	r = parse_scoped(SITEMAP_SCOPE_HOST, NULL, &s);
	ck_assert_uint_eq(r.locs, 4);
	ck_assert_str_eq(s.url[3], "http://example.com:8080/catalog/e");
	seen_free(&s);

	/* Cross-submission: other.example's robots.txt listed this sitemap. */
	r = parse_scoped(SITEMAP_SCOPE_HOST, "http://other.example/robots.txt", &s);
	ck_assert_uint_eq(r.locs, 1);
	ck_assert_str_eq(s.url[0], "http://other.example/catalog/d");
	seen_free(&s);

	/* The protocol's rule: under http://example.com/catalog/ only. */
	r = parse_scoped(SITEMAP_SCOPE_DIRECTORY, NULL, &s);
	ck_assert_uint_eq(r.locs, 1);
	ck_assert_str_eq(s.url[0], "http://example.com/catalog/a");
	seen_free(&s);
}
END_TEST

/* doc parsed whole, then fed one byte at a time: the same result. */
static struct sitemap_result parse_both_ways(const char *doc, struct seen *s)
{
	struct sitemap_result whole = parse_doc(NULL, doc, s), bytewise;
	struct seen again = { 0 };
	struct sitemap_parser *p = NULL;
	ck_assert_int_eq(sitemap_parser_create(NULL, &p), SITEMAP_OK);
	ck_assert_int_eq(sitemap_begin(p, SITEMAP_URL, NULL, collect, &again), SITEMAP_OK);
	for (size_t i = 0, n = strlen(doc); i < n; i++)
		ck_assert_int_eq(sitemap_feed(p, doc + i, 1), SITEMAP_OK);
	ck_assert_int_eq(sitemap_finish(p, &bytewise), SITEMAP_OK);
	sitemap_parser_destroy(p);
	ck_assert_int_eq(bytewise.problem, whole.problem);
	ck_assert_str_eq(bytewise.message, whole.message);
	ck_assert_uint_eq(bytewise.locs, whole.locs);
	ck_assert_uint_eq(again.count, s->count);
	seen_free(&again);
	return whole;
}

/* "<TAG" + n attributes " aK=\"K\"" + ">" + tail, malloc'd. */
static char *with_attributes(const char *head, const char *tag, size_t n, const char *tail)
{
	size_t cap = strlen(head) + strlen(tag) + 16 * n + strlen(tail) + 8, o = 0;
	char *doc = malloc(cap);
	ck_assert_ptr_nonnull(doc);
	o += (size_t)snprintf(doc + o, cap - o, "%s<%s", head, tag);
	for (size_t i = 0; i < n; i++)
		o += (size_t)snprintf(doc + o, cap - o, " a%zu=\"%zu\"", i, i);
	snprintf(doc + o, cap - o, ">%s", tail);
	return doc;
}

#define TWO_ENTRIES                                                                                \
	"<url><loc>http://example.com/1</loc></url><url><loc>http://example.com/2</loc></url>"

/* Tags libxml2 would take quadratic time over (its check for repeated
 * attributes): refused before it sees them, as malformed, the entries
 * before them kept; what a real sitemap holds goes through. */
START_TEST(test_tag_guard)
{
	struct seen s = { 0 };
	/* the input: a <urlset> of 160,000 attributes (1.6 MB), then
	 * entries that would otherwise be read */
	char *doc = with_attributes("", "urlset xmlns=\"" NS "\"", 160000, TWO_ENTRIES "</urlset>");
	ck_assert_uint_gt(strlen(doc), 1500000);
	struct sitemap_result r = parse_doc(NULL, doc, &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_ptr_nonnull(strstr(r.message, "attributes"));
	ck_assert_uint_eq(r.locs, 0);
	ck_assert_uint_lt(r.bytes, 4096);
	seen_free(&s);
	free(doc);

	/* entries, then an entry tag of 40 attributes: the two kept */
	doc = with_attributes("<urlset xmlns=\"" NS "\">" TWO_ENTRIES, "url", 40,
	                      "<loc>http://example.com/3</loc></url></urlset>");
	r = parse_both_ways(doc, &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_uint_eq(r.locs, 2);
	ck_assert_str_eq(s.url[1], "http://example.com/2");
	seen_free(&s);
	free(doc);

	/* a tag of 5,000 bytes (one long value), and a long processing
	 * instruction: longer than the limit */
	char *big = malloc(6000);
	snprintf(big, 6000, "<urlset xmlns=\"" NS "\">" TWO_ENTRIES "<url x=\"%05000d\">", 0);
	r = parse_both_ways(big, &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_ptr_nonnull(strstr(r.message, "longer"));
	ck_assert_uint_eq(r.locs, 2);
	seen_free(&s);
	snprintf(big, 6000, "<?xml version=\"1.0\" x=\"%05000d\"?><urlset/>", 0);
	r = parse_doc(NULL, big, &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_ptr_nonnull(strstr(r.message, "longer"));
	free(big);

	/* a real root: BOM, declaration, comments and CDATA holding quotes and
	 * '>', ten namespaces and a long schemaLocation; an encoding
	 * declaration is ignored (the protocol says UTF-8) */
	doc = with_attributes("\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"IBM037\"?>\n"
	                      "<!-- a \"quoted\" ' > note - -->\n"
	                      "<!DOCTYPE urlset [ <!ATTLIST urlset x CDATA \"'>\"> ]>\n",
	                      "urlset xmlns=\"" NS "\"", 24,
	                      "<url><loc><![CDATA[http://example.com/a?q=\">'<]]></loc></url>"
	                      "<!-- <url a1='1' a2='2'> -->" TWO_ENTRIES "</urlset>");
	r = parse_both_ways(doc, &s);
	ck_assert_msg(r.problem == SITEMAP_FINE, "%s", r.message);
	ck_assert_uint_eq(r.locs, 3);
	ck_assert_str_eq(s.url[0], "http://example.com/a?q=%22%3E%27%3C");
	seen_free(&s);
	free(doc);

	/* not UTF-8: UTF-16 with and without a BOM, EBCDIC */
	static const char u16[] = "<\0u\0r\0l\0s\0e\0t\0/\0>\0";
	const char *others[] = { "\xFF\xFE<\0", "\x4C\x6F\xA7\x94", "\0<\0u" };
	struct sitemap_parser *p = NULL;
	ck_assert_int_eq(sitemap_parser_create(NULL, &p), SITEMAP_OK);
	ck_assert_int_eq(sitemap_parse(p, SITEMAP_URL, NULL, u16, sizeof u16 - 1, collect, &s, &r),
	                 SITEMAP_OK);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	ck_assert_ptr_nonnull(strstr(r.message, "UTF-8"));
	for (size_t i = 0; i < 3; i++) {
		ck_assert_int_eq(sitemap_parse(p, SITEMAP_URL, NULL, others[i], 4, collect, &s, &r),
		                 SITEMAP_OK);
		ck_assert_ptr_nonnull(strstr(r.message, "UTF-8"));
	}
	sitemap_parser_destroy(p);

	/* the limits are the caller's (and white space may lead) */
	struct sitemap_config cfg = { .max_attributes = 2, .max_tag_bytes = 64 };
	r = parse_doc(&cfg, "<urlset a='1' b='2' c='3'/>", &s);
	ck_assert_int_eq(r.problem, SITEMAP_MALFORMED);
	r = parse_doc(&cfg,
	              "<urlset a='1' b='2'><url><loc>http://example.com/</loc></url></urlset>", &s);
	ck_assert_int_eq(r.problem, SITEMAP_FINE);
	seen_free(&s);
}
END_TEST

START_TEST(test_bad_calls)
{
	struct sitemap_parser *p = NULL;
	struct sitemap_result r;
	struct seen s = { 0 };
	ck_assert_int_eq(sitemap_parser_create(NULL, &p), SITEMAP_OK);
	ck_assert_int_eq(sitemap_parse(p, "/relative.xml", NULL, "<", 1, collect, &s, &r),
	                 SITEMAP_EINVAL);
	ck_assert_int_eq(sitemap_parse(p, "ftp://example.com/s.xml", NULL, "<", 1, collect, &s, &r),
	                 SITEMAP_EINVAL);
	ck_assert_int_eq(
	        sitemap_parse(p, SITEMAP_URL, "mailto:x@example.com", "<", 1, collect, &s, &r),
	        SITEMAP_EINVAL);
	ck_assert_int_eq(sitemap_feed(p, "x", 1), SITEMAP_EINVAL); /* no document begun */
	ck_assert_int_eq(sitemap_finish(p, &r), SITEMAP_EINVAL);
	ck_assert_uint_eq(s.count, 0);
	sitemap_parser_destroy(p);
	sitemap_parser_destroy(NULL);
	ck_assert_int_eq(sitemap_parser_create(NULL, NULL), SITEMAP_EINVAL);
	ck_assert_str_eq(sitemap_strerror(SITEMAP_EINVAL), "invalid argument");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sitemap");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_urlset);
	tcase_add_test(tc, test_priority);
	tcase_add_test(tc, test_sitemapindex);
	tcase_add_test(tc, test_gzip);
	tcase_add_test(tc, test_gzip_bomb);
	tcase_add_test(tc, test_max_locs);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_entities_not_expanded);
	tcase_add_test(tc, test_loc_text);
	tcase_add_test(tc, test_namespaces);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_scope);
	tcase_add_test(tc, test_bad_calls);
	tcase_add_test(tc, test_tag_guard);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
