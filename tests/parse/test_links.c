/*
 * test_links.c: Check suite for parse/links.h.
 *
 * test_pages: every pages/NAME.html is extracted and its set of links
 * ("URL<TAB>kind[<TAB>nofollow]", duplicates merged) compared with
 * pages/NAME.expected, which also gives the page URL ("@url"), the charset
 * the caller passes ("@charset") and page-level results ("@noindex",
 * "@nofollow", "@base URL", "@canonical URL", "@dropped_scheme N"). The
 * expected sets were written with an HTML5 parser (html5lib) as the oracle.
 * test_whatwg_http_cases runs the WHATWG URL tests an href can meet.
 *
 * The tokenizer (parse/html_tokenizer.h) against the html5lib-tests
 * tokenizer suite (CONFORMANCE_DIR/html5lib-tokenizer):
 * test_html5lib_tokenizer_tags takes every Data-state case whose expected
 * tokens hold a start tag with attributes and asserts the tokenizer sees
 * the same start and end tags, in order, with the same attribute names and
 * values (references, NUL, duplicates, self-closing flag);
 * test_html5lib_tokenizer_all runs every case in each of its initial states
 * (RCDATA, RAWTEXT, script data, PLAINTEXT, CDATA section too) and
 * compares tags and text (text unless the input has a CR or NUL, which page
 * text keeps). Skipped: cases where a start tag (title, script, svg...)
 * would switch the extractor's tokenizer, as a tree builder does, and the
 * suite's not, and names past the tokenizer's limits. Both assert no
 * failure and a floor of cases passed.
 * Then one test per HTML5 rule that decides a link: '/' between
 * attributes, comment forms, text elements, script escapes, tags after
 * </html> and CDATA, references in attribute values, NUL in an href, the
 * encoding sniffing, and the tokenizer's limits.
 * The other tests check caps, reuse, bad input, and that the page's SimHash
 * ignores markup, scripts and styles.
 */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/url.h"
#include "parse/embed_urls.h"
#include "parse/links.h"
#include "parse/html_tokenizer.h"
#include "parse/simhash.h"

#include "html5lib_suite.h"

#if !defined(PAGES_DIR) || !defined(CONFORMANCE_DIR)
#error "PAGES_DIR and CONFORMANCE_DIR must be defined"
#endif

/* Cases of the html5lib suite with start tags with attributes that
 * test_html5lib_tokenizer_tags must run and pass. */
#define HTML5LIB_TAG_CASES_FLOOR 350
/* The same for every case, in each of its initial states, with its text;
 * and of those, the ones starting in RCDATA, RAWTEXT, script data,
 * PLAINTEXT or a CDATA section. */
#define HTML5LIB_ALL_CASES_FLOOR 7000
#define HTML5LIB_TEXT_STATE_CASES_FLOOR 320

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts and removes duplicates; returns the new count. */
static size_t uniq(char **v, size_t n)
{
	qsort(v, n, sizeof *v, cmpstr);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (o > 0 && strcmp(v[o - 1], v[i]) == 0) {
			free(v[i]);
			continue;
		}
		v[o++] = v[i];
	}
	return o;
}

/* Returns the number of mismatches (printed). ex_req extracts requisites
 * too: it parses the pages whose expected file says "@requisites". */
static int check_page(struct links_extractor *ex, struct links_extractor *ex_req, const char *name)
{
	char path[1024];
	size_t hlen = 0, elen = 0;
	snprintf(path, sizeof path, "%s/%s.html", PAGES_DIR, name);
	char *html = slurp(path, &hlen);
	snprintf(path, sizeof path, "%s/%s.expected", PAGES_DIR, name);
	char *exp = slurp(path, &elen);
	ck_assert_msg(html && exp, "missing files for %s", name);

	char url[1024] = "", charset[64] = "", base[1024] = "", canonical[1024] = "";
	bool noindex = false, nofollow = false;
	long dropped_scheme = -1;
	char **want = calloc(elen + 1, sizeof *want);
	size_t nwant = 0;
	ck_assert_ptr_nonnull(want);
	char *cursor = exp;
	while (*cursor) {
		char *nl = strchr(cursor, '\n');
		if (nl)
			*nl = '\0';
		if (cursor[0] == '@') {
			if (strncmp(cursor, "@url ", 5) == 0)
				snprintf(url, sizeof url, "%s", cursor + 5);
			else if (strncmp(cursor, "@charset ", 9) == 0)
				snprintf(charset, sizeof charset, "%s", cursor + 9);
			else if (strncmp(cursor, "@base ", 6) == 0)
				snprintf(base, sizeof base, "%s", cursor + 6);
			else if (strncmp(cursor, "@canonical ", 11) == 0)
				snprintf(canonical, sizeof canonical, "%s", cursor + 11);
			else if (strcmp(cursor, "@noindex") == 0)
				noindex = true;
			else if (strcmp(cursor, "@nofollow") == 0)
				nofollow = true;
			else if (strcmp(cursor, "@requisites") == 0)
				ex = ex_req;
			else if (strncmp(cursor, "@dropped_scheme ", 16) == 0)
				dropped_scheme = strtol(cursor + 16, NULL, 10);
		} else if (cursor[0] != '\0' && cursor[0] != '#') {
			want[nwant] = strdup(cursor);
			ck_assert_ptr_nonnull(want[nwant]);
			nwant++;
		}
		if (!nl)
			break;
		cursor = nl + 1;
	}
	ck_assert_msg(url[0], "%s.expected has no @url", name);

	int rc = links_extract(ex, url, charset[0] ? charset : NULL, html, hlen);
	ck_assert_int_eq(rc, LINKS_OK);
	size_t n = 0;
	const struct link *l = links_result(ex, &n);
	char **got = calloc(n + 1, sizeof *got);
	ck_assert_ptr_nonnull(got);
	for (size_t i = 0; i < n; i++) {
		char buf[9000];
		snprintf(buf, sizeof buf, "%s\t%s%s", l[i].url, link_kind_name(l[i].kind),
		         l[i].nofollow ? "\tnofollow" : "");
		got[i] = strdup(buf);
		ck_assert_ptr_nonnull(got[i]);
	}
	size_t ng = uniq(got, n);
	nwant = uniq(want, nwant);

	int bad = 0;
	size_t i = 0, j = 0;
	while (i < ng || j < nwant) {
		int c = i == ng ? 1 : j == nwant ? -1 : strcmp(got[i], want[j]);
		if (c < 0) {
			printf("%s: unexpected link: %s\n", name, got[i++]);
			bad++;
		} else if (c > 0) {
			printf("%s: missing link:    %s\n", name, want[j++]);
			bad++;
		} else {
			i++;
			j++;
		}
	}
	const struct links_page *p = links_page_info(ex);
	if (p->noindex != noindex || p->nofollow != nofollow) {
		printf("%s: meta robots noindex=%d nofollow=%d, expected %d %d\n", name, p->noindex,
		       p->nofollow, noindex, nofollow);
		bad++;
	}
	if (base[0] && strcmp(p->base, base) != 0) {
		printf("%s: base %s, expected %s\n", name, p->base, base);
		bad++;
	}
	if (canonical[0] ? !p->canonical || strcmp(p->canonical, canonical) != 0
	                 : p->canonical != NULL) {
		printf("%s: canonical %s, expected %s\n", name,
		       p->canonical ? p->canonical : "(none)", canonical[0] ? canonical : "(none)");
		bad++;
	}
	if (dropped_scheme >= 0 && (long)p->dropped_scheme != dropped_scheme) {
		printf("%s: dropped_scheme %zu, expected %ld\n", name, p->dropped_scheme,
		       dropped_scheme);
		bad++;
	}
	printf("%s: %zu links, %s\n", name, ng, bad ? "MISMATCH" : "ok");
	for (size_t k = 0; k < ng; k++)
		free(got[k]);
	for (size_t k = 0; k < nwant; k++)
		free(want[k]);
	free(got);
	free(want);
	free(html);
	free(exp);
	return bad;
}

START_TEST(test_pages)
{
	struct links_extractor *ex = NULL, *ex_req = NULL;
	struct links_config req = { .requisites = true };
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	ck_assert_int_eq(links_extractor_create(&req, &ex_req), LINKS_OK);
	DIR *d = opendir(PAGES_DIR);
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	int pages = 0, bad = 0;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".html") != 0)
			continue;
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
		bad += check_page(ex, ex_req, name);
		pages++;
	}
	closedir(d);
	links_extractor_destroy(ex);
	links_extractor_destroy(ex_req);
	ck_assert_int_ge(pages, 13);
	ck_assert_msg(bad == 0, "%d mismatches (see output)", bad);
}
END_TEST

START_TEST(test_caps)
{
	struct links_config cfg = { .max_links = 10, .max_bytes = 0 };
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(&cfg, &ex), LINKS_OK);
	char page[8192];
	size_t o = 0;
	for (int i = 0; i < 50; i++)
		o += (size_t)snprintf(page + o, sizeof page - o, "<a href=/p%d>x</a>", i);
	ck_assert_int_eq(links_extract(ex, "http://h.example/", NULL, page, o), LINKS_OK);
	size_t n;
	const struct link *l = links_result(ex, &n);
	ck_assert_uint_eq(n, 10);
	ck_assert_str_eq(l[0].url, "http://h.example/p0");
	ck_assert_str_eq(l[9].url, "http://h.example/p9");
	ck_assert_uint_eq(links_page_info(ex)->truncated, 40);
	links_extractor_destroy(ex);

	cfg.max_links = 0;
	cfg.max_bytes = 200;
	ck_assert_int_eq(links_extractor_create(&cfg, &ex), LINKS_OK);
	ck_assert_int_eq(links_extract(ex, "http://h.example/", NULL, page, o), LINKS_OK);
	l = links_result(ex, &n);
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += l[i].len + 1;
	ck_assert_uint_le(bytes, 200);
	ck_assert_uint_gt(n, 3);
	ck_assert_uint_gt(links_page_info(ex)->truncated, 0);
	links_extractor_destroy(ex);
}
END_TEST

START_TEST(test_reuse_and_bad_input)
{
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	const char *p1 = "<meta name=robots content=noindex><base href=/b/><a href=x>1</a>"
	                 "<link rel=canonical href=/c>";
	ck_assert_int_eq(links_extract(ex, "http://one.example/", NULL, p1, strlen(p1)), LINKS_OK);
	size_t n;
	links_result(ex, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert(links_page_info(ex)->noindex);
	ck_assert_str_eq(links_page_info(ex)->base, "http://one.example/b/");
	ck_assert_str_eq(links_page_info(ex)->canonical, "http://one.example/c");

	/* The next page starts clean. */
	const char *p2 = "<p>no links</p>";
	ck_assert_int_eq(links_extract(ex, "http://two.example/d/", NULL, p2, strlen(p2)),
	                 LINKS_OK);
	links_result(ex, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert(!links_page_info(ex)->noindex);
	ck_assert_ptr_null(links_page_info(ex)->canonical);
	ck_assert_str_eq(links_page_info(ex)->base, "http://two.example/d/");

	/* Empty and binary bodies are fine; a bad page URL is not. */
	ck_assert_int_eq(links_extract(ex, "http://two.example/", NULL, NULL, 0), LINKS_OK);
	const char bin[] = "\0\xff\xfe<a href=\0x>\x01\x02<<<>>>&#0;&#xD800;<a href='/ok'>";
	ck_assert_int_eq(links_extract(ex, "http://two.example/", "utf-8", bin, sizeof bin - 1),
	                 LINKS_OK);
	ck_assert_int_eq(links_extract(ex, "not a url", NULL, p1, strlen(p1)), LINKS_EINVAL);
	ck_assert_int_eq(links_extract(ex, "mailto:x@example.com", NULL, p1, strlen(p1)),
	                 LINKS_EINVAL);
	ck_assert_int_eq(links_extract(NULL, "http://x/", NULL, p1, strlen(p1)), LINKS_EINVAL);
	/* An unknown charset label is ignored. */
	ck_assert_int_eq(
	        links_extract(ex, "http://two.example/", "no-such-charset", p1, strlen(p1)),
	        LINKS_OK);
	links_result(ex, &n);
	ck_assert_uint_eq(n, 2);
	links_extractor_destroy(ex);
	links_extractor_destroy(NULL);
	ck_assert_str_eq(link_kind_name(LINK_META_REFRESH), "meta-refresh");
	ck_assert_str_eq(links_strerror(LINKS_ENOMEM), "out of memory");
}
END_TEST

/* A <base href> that parses but whose crawl key is over the length cap is
 * no base: the page URL stays the base and the page's links still come out. */
START_TEST(test_base_key_too_long)
{
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	static char page[512];
	/* Each NUL becomes U+FFFD, percent-encoded as 9 bytes in the key. */
	size_t o = (size_t)snprintf(page, sizeof page, "<base href=\"/");
	while (o < 300) /* 2,700 bytes in the key, over the default cap of 2,048 */
		page[o++] = '\0';
	o += (size_t)snprintf(page + o, sizeof page - o, "\"><a href=x>1</a>");
	ck_assert_int_eq(links_extract(ex, "http://one.example/d/", NULL, page, o), LINKS_OK);
	ck_assert_str_eq(links_page_info(ex)->base, "http://one.example/d/");
	size_t n;
	const struct link *l = links_result(ex, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(l[0].url, "http://one.example/d/x");
	links_extractor_destroy(ex);
}
END_TEST

START_TEST(test_page_simhash)
{
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	const char *a = "<html><head><title>Weather</title><script>var t = 'ignore me "
	                "entirely please';</script><style>p { color: red }</style></head>"
	                "<body><p>The weather today is <b>sunny</b> with light winds from the "
	                "north and a chance of rain in the evening.</p></body></html>";
	const char *b = "<html><head><title>Weather</title><script>completely different "
	                "script text here</script></head><body><div>The weather today is "
	                "sunny with light winds from the north and a chance of rain in the "
	                "evening.</div><!-- other comment --></body></html>";
	const char *text = "Weather The weather today is sunny with light winds from the north "
	                   "and a chance of rain in the evening.";
	ck_assert_int_eq(links_extract(ex, "http://h.example/", NULL, a, strlen(a)), LINKS_OK);
	uint64_t ha = links_page_info(ex)->simhash;
	ck_assert_int_eq(links_extract(ex, "http://h.example/", NULL, b, strlen(b)), LINKS_OK);
	uint64_t hb = links_page_info(ex)->simhash;
	ck_assert_uint_eq(ha, hb);
	ck_assert_uint_eq(ha, simhash_text(text, strlen(text)));
	links_extractor_destroy(ex);
}
END_TEST

/* Decodes the TSV escapes (\\ \t \n \r \xHH). */
static size_t tsv_unescape(const char *s, char *o, size_t cap)
{
	size_t n = 0;
	for (; *s && n + 1 < cap; s++) {
		if (*s != '\\') {
			o[n++] = *s;
			continue;
		}
		s++;
		if (*s == 't')
			o[n++] = '\t';
		else if (*s == 'n')
			o[n++] = '\n';
		else if (*s == 'r')
			o[n++] = '\r';
		else if (*s == 'x' && s[1] && s[2]) {
			char h[3] = { s[1], s[2], 0 };
			o[n++] = (char)strtol(h, NULL, 16);
			s += 2;
		} else if (*s)
			o[n++] = *s;
		else
			break;
	}
	o[n] = '\0';
	return n;
}

/*
 * Every WHATWG urltestdata case that a crawler meets in an href of an http(s)
 * page (base http/https; expected an http(s) URL, or a failure), written
 * into `<a href="...">` with HTML escaping and resolved by links_extract: the link must equal the crawl key of the expected href
 * (frontier/url.h: fragment dropped, percent-encoding normalized), or be
 * dropped when the case must fail. Inputs with NUL or CR are skipped
 * (the HTML parser rewrites them before the URL parser sees them).
 */
START_TEST(test_whatwg_http_cases)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/urltests.tsv", CONFORMANCE_DIR);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "missing %s", path);
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	static char line[65536], in[16384], base[16384], exp[16384], key[16384], page[70000];
	struct url *expu = url_create(NULL);
	ck_assert_ptr_nonnull(expu);
	int checked = 0, bad = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *t1 = strchr(line, '\t');
		char *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		if (!t2)
			continue;
		*t1 = *t2 = '\0';
		size_t il = tsv_unescape(line, in, sizeof in);
		tsv_unescape(t1 + 1, base, sizeof base);
		tsv_unescape(t2 + 1, exp, sizeof exp);
		bool fail = strcmp(exp, "FAIL") == 0;
		if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0)
			continue;
		if (!fail && strncmp(exp, "http://", 7) != 0 && strncmp(exp, "https://", 8) != 0)
			continue;
		if (memchr(in, '\0', il) != NULL || strlen(in) != il || strchr(in, '\r'))
			continue;
		if (!fail) {
			/* The expected link: the crawl key of the expected href. */
			size_t kl = 0;
			ck_assert_int_eq(
			        url_normalize(expu, NULL, exp, strlen(exp), key, sizeof key, &kl),
			        URL_OK);
			memcpy(exp, key, kl + 1);
		}
		size_t o = (size_t)snprintf(page, sizeof page, "<a href=\"");
		for (size_t i = 0; i < il && o + 8 < sizeof page; i++) {
			const char *e = in[i] == '&' ? "&amp;" : in[i] == '"' ? "&quot;" : NULL;
			if (e) {
				memcpy(page + o, e, strlen(e));
				o += strlen(e);
			} else {
				page[o++] = in[i];
			}
		}
		o += (size_t)snprintf(page + o, sizeof page - o, "\">x</a>");
		if (links_extract(ex, base, "utf-8", page, o) != LINKS_OK)
			continue; /* a base the extractor refuses is not a link case */
		size_t n;
		const struct link *l = links_result(ex, &n);
		checked++;
		if (fail ? n != 0 : (n != 1 || strcmp(l[0].url, exp) != 0)) {
			bad++;
			printf("whatwg: input [%s] base [%s]: expected %s, got %s\n", line, t1 + 1,
			       fail ? "no link" : exp, n ? l[0].url : "no link");
		}
	}
	fclose(f);
	url_destroy(expu);
	links_extractor_destroy(ex);
	printf("whatwg http(s) cases: %d checked, %d mismatches\n", checked, bad);
	ck_assert_int_gt(checked, 100);
	ck_assert_int_eq(bad, 0);
}
END_TEST

/* Links are crawl keys under the URL options the extractor was given:
 * percent-encoding normalized, opt-in canonicalizations applied, keys over
 * the length limit dropped as invalid. */
START_TEST(test_url_options)
{
	const char *page = "<a href='/%7e%2fx?utm_source=mail&b=1#frag'>1</a>"
	                   "<a href='/0123456789012345678901234567890123456789'>2</a>"
	                   "<a href='HTTP://Example.COM:80/a/./b/../c'>3</a>";
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	ck_assert_int_eq(links_extract(ex, "http://h.example/", NULL, page, strlen(page)),
	                 LINKS_OK);
	size_t n;
	const struct link *l = links_result(ex, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(l[0].url, "http://h.example/~%2Fx?utm_source=mail&b=1");
	ck_assert_str_eq(l[2].url, "http://example.com/a/c");
	links_extractor_destroy(ex);

	struct url_options opt;
	url_options_init(&opt);
	ck_assert_int_eq(url_options_set(&opt, "strip_tracking_params", "true"), URL_OK);
	ck_assert_int_eq(url_options_set(&opt, "max_url_length", "40"), URL_OK);
	struct links_config cfg = { .url_options = &opt };
	ck_assert_int_eq(links_extractor_create(&cfg, &ex), LINKS_OK);
	ck_assert_int_eq(links_extract(ex, "http://h.example/", NULL, page, strlen(page)),
	                 LINKS_OK);
	l = links_result(ex, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(l[0].url, "http://h.example/~%2Fx?b=1");
	ck_assert_str_eq(l[1].url, "http://example.com/a/c");
	ck_assert_uint_eq(links_page_info(ex)->dropped_invalid, 1);
	links_extractor_destroy(ex);
}
END_TEST

/* ---- the tokenizer against the html5lib suite ---- */

/* Tags serialized one after another: 'S' or 'E', the name, each attribute
 * as US name '=' value, '/' when self-closing, then RS. */
struct tag_log {
	char *s;
	size_t len, cap;
	bool cut;     /* an attribute value was cut: not comparable */
	bool in_text; /* a text entry ('T', text, RS) is open */
};

static void log_put(struct tag_log *lg, const char *s, size_t n)
{
	if (lg->len + n + 1 > lg->cap) {
		lg->cap = (lg->len + n + 1) * 2;
		lg->s = realloc(lg->s, lg->cap);
		ck_assert_ptr_nonnull(lg->s);
	}
	memcpy(lg->s + lg->len, s, n);
	lg->len += n;
	lg->s[lg->len] = '\0';
}

static void log_text_end(struct tag_log *lg)
{
	if (lg->in_text)
		log_put(lg, "\x1e", 1);
	lg->in_text = false;
}

/* Text and raw text as one entry until the next tag, as the suite's
 * Character tokens run together once comments are left out. */
static void log_text(void *ctx, const char *s, size_t n)
{
	struct tag_log *lg = ctx;
	if (!lg->in_text)
		log_put(lg, "T", 1);
	lg->in_text = true;
	log_put(lg, s, n);
}

static void log_tag(void *ctx, const struct html_tag *tag)
{
	struct tag_log *lg = ctx;
	log_text_end(lg);
	log_put(lg, tag->end ? "E" : "S", 1);
	log_put(lg, tag->name, tag->name_len);
	for (size_t i = 0; !tag->end && i < tag->nattrs; i++) {
		const struct html_attr *a = &tag->attrs[i];
		log_put(lg, "\x1f", 1);
		log_put(lg, a->name, a->name_len);
		log_put(lg, "=", 1);
		log_put(lg, a->value, a->value_len);
		lg->cut |= a->value_cut;
	}
	if (!tag->end && tag->self_closing)
		log_put(lg, "/", 1);
	log_put(lg, "\x1e", 1);
}

/* Start tags after which the tree builder changes the tokenizer's state,
 * which the suite (a tokenizer alone) does not do. */
static bool changes_state(const char *name)
{
	static const char *const names[] = { "title",     "textarea", "style",    "xmp",
		                             "iframe",    "noembed",  "noframes", "script",
		                             "plaintext", "svg",      "math",     NULL };
	for (size_t i = 0; names[i]; i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

enum case_outcome { CASE_SKIPPED, CASE_PASSED, CASE_FAILED };

/* Every token of one case but comments and DOCTYPEs into lg, text only
 * when with_text, *nattrs counting the attributes; false when a start tag
 * would change the tokenizer's state in the extractor and not in the
 * suite, or passes a limit. */
static bool expected_tokens(const struct jval *out, bool with_text, struct tag_log *lg,
                            size_t *nattrs)
{
	for (size_t i = 0; i < out->n; i++) {
		const struct jval *tok = out->v[i];
		if (tok->type != J_ARR || tok->n < 2 || tok->v[0]->type != J_STR)
			continue;
		const char *type = tok->v[0]->s;
		if (strcmp(type, "Character") == 0 && with_text) {
			log_text(lg, tok->v[1]->s, tok->v[1]->s_len);
			continue;
		}
		bool start = strcmp(type, "StartTag") == 0;
		if (!start && strcmp(type, "EndTag") != 0)
			continue;
		log_text_end(lg);
		const struct jval *name = tok->v[1];
		if (name->s_len > HTML_TOKENIZER_MAX_NAME || (start && changes_state(name->s)))
			return false;
		log_put(lg, start ? "S" : "E", 1);
		log_put(lg, name->s, name->s_len);
		const struct jval *attrs = start && tok->n >= 3 ? tok->v[2] : NULL;
		if (attrs && attrs->type == J_OBJ && attrs->n / 2 > HTML_TOKENIZER_MAX_ATTRS)
			return false;
		for (size_t k = 0; attrs && attrs->type == J_OBJ && k + 1 < attrs->n; k += 2) {
			if (attrs->v[k]->s_len > HTML_TOKENIZER_MAX_NAME)
				return false;
			log_put(lg, "\x1f", 1);
			log_put(lg, attrs->v[k]->s, attrs->v[k]->s_len);
			log_put(lg, "=", 1);
			log_put(lg, attrs->v[k + 1]->s, attrs->v[k + 1]->s_len);
			(*nattrs)++;
		}
		if (start && tok->n >= 4 && tok->v[3]->type == J_BOOL && tok->v[3]->b)
			log_put(lg, "/", 1);
		log_put(lg, "\x1e", 1);
	}
	log_text_end(lg);
	return true;
}

/* Passed when the tokenizer's log is the suite's (printed when not). */
static enum case_outcome compare_logs(const char *file, const struct jval *t, const char *state,
                                      const struct tag_log *want, const struct tag_log *got)
{
	if (!got->cut && got->len == want->len && memcmp(got->s, want->s, want->len) == 0)
		return CASE_PASSED;
	fprintf(stderr, "%s: %s (%s):\n  want %s\n  got  %s\n", file, case_name(t), state,
	        want->s ? want->s : "", got->s ? got->s : "");
	return CASE_FAILED;
}

static enum case_outcome tokenizer_case(struct html_tokenizer *tok, const char *file,
                                        const struct jval *t, size_t *attr_count)
{
	const struct jval *in = jget(t, "input"), *out = jget(t, "output");
	if (!data_state_case(t) || !in || in->type != J_STR || !out || out->type != J_ARR)
		return CASE_SKIPPED;
	struct tag_log want = { 0 }, got = { 0 };
	enum case_outcome rc = CASE_SKIPPED;
	size_t want_attrs = 0;
	if (!expected_tokens(out, false, &want, &want_attrs) || want_attrs == 0)
		goto out;
	const struct html_tokenizer_callbacks cb = { .tag = log_tag };
	html_tokenize(tok, in->s, in->s_len, &cb, &got, NULL);
	rc = compare_logs(file, t, "Data state", &want, &got);
	*attr_count += want_attrs;
out:
	free(want.s);
	free(got.s);
	return rc;
}

START_TEST(test_html5lib_tokenizer_tags)
{
	struct html_tokenizer *tok = html_tokenizer_create();
	ck_assert_ptr_nonnull(tok);
	size_t counts[3] = { 0 }, attrs = 0;
	for (size_t f = 0; f < suite_file_count; f++) {
		struct jval *root = load_suite(suite_files[f]);
		const struct jval *tests = suite_tests(root);
		for (size_t i = 0; i < tests->n; i++)
			counts[tokenizer_case(tok, suite_files[f], tests->v[i], &attrs)]++;
		jfree(root);
	}
	printf("html5lib tokenizer, tags with attributes: %zu cases passed (%zu attributes), "
	       "%zu failed, %zu skipped\n",
	       counts[CASE_PASSED], attrs, counts[CASE_FAILED], counts[CASE_SKIPPED]);
	ck_assert_uint_eq(counts[CASE_FAILED], 0);
	ck_assert_uint_ge(counts[CASE_PASSED], HTML5LIB_TAG_CASES_FLOOR);
	html_tokenizer_destroy(tok);
}
END_TEST

static bool start_state(const char *name, enum html_tokenizer_start *start)
{
	static const struct {
		const char *name;
		enum html_tokenizer_start start;
	} states[] = {
		{ "Data state", HTML_START_DATA },
		{ "RCDATA state", HTML_START_RCDATA },
		{ "RAWTEXT state", HTML_START_RAWTEXT },
		{ "Script data state", HTML_START_SCRIPT },
		{ "PLAINTEXT state", HTML_START_PLAINTEXT },
		{ "CDATA section state", HTML_START_CDATA },
	};
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		if (strcmp(name, states[i].name) == 0) {
			*start = states[i].start;
			return true;
		}
	}
	return false;
}

/* One case in one initial state; *with_text says whether text was compared
 * (not when the input has a CR or NUL: the extractor's text keeps them, as
 * page text needs no more). */
static enum case_outcome all_tokens_case(struct html_tokenizer *tok, const char *file,
                                         const struct jval *t, const char *state, bool *with_text)
{
	const struct jval *in = jget(t, "input"), *out = jget(t, "output");
	const struct jval *de = jget(t, "doubleEscaped"), *last = jget(t, "lastStartTag");
	enum html_tokenizer_start start;
	if (!in || in->type != J_STR || !out || out->type != J_ARR || !start_state(state, &start) ||
	    (de && de->type == J_BOOL && de->b))
		return CASE_SKIPPED;
	*with_text = !memchr(in->s, '\r', in->s_len) && !memchr(in->s, '\0', in->s_len);
	struct tag_log want = { 0 }, got = { 0 };
	log_put(&want, "", 0);
	log_put(&got, "", 0);
	enum case_outcome rc = CASE_SKIPPED;
	size_t nattrs = 0;
	if (!expected_tokens(out, *with_text, &want, &nattrs))
		goto out;
	const struct html_tokenizer_callbacks cb = {
		.tag = log_tag,
		.text = *with_text ? log_text : NULL,
		.raw_text = *with_text ? log_text : NULL,
	};
	html_tokenize_from(tok, in->s, in->s_len, start,
	                   last && last->type == J_STR ? last->s : NULL, &cb, &got, NULL);
	log_text_end(&got);
	rc = compare_logs(file, t, state, &want, &got);
out:
	free(want.s);
	free(got.s);
	return rc;
}

START_TEST(test_html5lib_tokenizer_all)
{
	struct html_tokenizer *tok = html_tokenizer_create();
	ck_assert_ptr_nonnull(tok);
	size_t counts[3] = { 0 }, with_text = 0, text_states = 0;
	for (size_t f = 0; f < suite_file_count; f++) {
		struct jval *root = load_suite(suite_files[f]);
		const struct jval *tests = suite_tests(root);
		for (size_t i = 0; i < tests->n; i++) {
			const struct jval *st = jget(tests->v[i], "initialStates");
			size_t nstates = st && st->type == J_ARR ? st->n : 1;
			for (size_t k = 0; k < nstates; k++) {
				const char *state =
				        st && st->type == J_ARR && st->v[k]->type == J_STR
				                ? st->v[k]->s
				                : "Data state";
				bool text = false;
				enum case_outcome o = all_tokens_case(tok, suite_files[f],
				                                      tests->v[i], state, &text);
				counts[o]++;
				with_text += o == CASE_PASSED && text;
				text_states += o == CASE_PASSED && strcmp(state, "Data state") != 0;
			}
		}
		jfree(root);
	}
	printf("html5lib tokenizer, all tokens: %zu (case, state) pairs passed (%zu with their "
	       "text, %zu in a text state), %zu failed, %zu skipped\n",
	       counts[CASE_PASSED], with_text, text_states, counts[CASE_FAILED],
	       counts[CASE_SKIPPED]);
	ck_assert_uint_eq(counts[CASE_FAILED], 0);
	ck_assert_uint_ge(counts[CASE_PASSED], HTML5LIB_ALL_CASES_FLOOR);
	ck_assert_uint_ge(text_states, HTML5LIB_TEXT_STATE_CASES_FLOOR);
	html_tokenizer_destroy(tok);
}
END_TEST

/* ---- what the Standard's tokenizer changes for links ---- */

/* The links of one page (page URL http://h.example/d/p), as "URL\n"... */
static char *links_of(const char *html, size_t len)
{
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	ck_assert_int_eq(links_extract(ex, "http://h.example/d/p", NULL, html, len), LINKS_OK);
	size_t n = 0;
	const struct link *l = links_result(ex, &n);
	struct tag_log all = { 0 };
	log_put(&all, "", 0);
	for (size_t i = 0; i < n; i++) {
		log_put(&all, l[i].url, l[i].len);
		log_put(&all, "\n", 1);
	}
	links_extractor_destroy(ex);
	return all.s;
}

static void check_links(const char *html, const char *want)
{
	char *got = links_of(html, strlen(html));
	ck_assert_msg(strcmp(got, want) == 0, "%s:\n  want %s\n  got  %s", html, want, got);
	free(got);
}

START_TEST(test_slash_between_attributes)
{
	check_links("<a/href=/x>", "http://h.example/x\n");
	check_links("<a href=/x/rel=nofollow>", "http://h.example/x/rel=nofollow\n");
	check_links("<a id=\"1\"/href=/y/>", "http://h.example/y/\n");
	/* In an unquoted value '/' is part of the value. */
	check_links("<a id=1/href=/y/>", "");
	check_links("<a href=/first href=/second>", "http://h.example/first\n");
}
END_TEST

START_TEST(test_comments)
{
	check_links("<!--><a href=/after-empty>", "http://h.example/after-empty\n");
	check_links("<!---><a href=/after-dash>", "http://h.example/after-dash\n");
	check_links("<!-- <a href=/in> --!><a href=/after-bang>", "http://h.example/after-bang\n");
	check_links("<!-- <a href=/in> --!-- <a href=/still-in> --><a href=/out>",
	            "http://h.example/out\n");
	check_links("<!-- <!-- <a href=/in> --><a href=/out>", "http://h.example/out\n");
	check_links("<? <a href=/bogus> <a href=/out>", "http://h.example/out\n");
	check_links("<!-- never closed <a href=/in>", "");
}
END_TEST

START_TEST(test_text_elements)
{
	check_links("<title><a href=/no></title><a href=/yes>", "http://h.example/yes\n");
	check_links("<textarea><a href=/no></textarea ><a href=/yes>", "http://h.example/yes\n");
	check_links("<TEXTAREA><a href=/no></TextArea><a href=/yes>", "http://h.example/yes\n");
	check_links("<title></titlex><a href=/no></title><a href=/yes>", "http://h.example/yes\n");
	check_links("<xmp><a href=/no></xmp><noembed><a href=/no></noembed>"
	            "<noframes><a href=/no></noframes><style><a href=/no></style><a href=/yes>",
	            "http://h.example/yes\n");
	check_links("<iframe src=/frame><a href=/no></iframe><a href=/yes>",
	            "http://h.example/frame\nhttp://h.example/yes\n");
	check_links("<plaintext><a href=/no></plaintext><a href=/no2>", "");
	check_links("<noscript><a href=/yes></noscript>", "http://h.example/yes\n");
	/* In SVG a title is an element with markup in it. */
	check_links("<svg><title><a href=/yes></title></svg>", "http://h.example/yes\n");
}
END_TEST

START_TEST(test_script_escapes)
{
	check_links("<script>x = '<a href=/no>';</script><a href=/yes>", "http://h.example/yes\n");
	/* Inside "<!--" a "<script>" opens the double-escaped state, where
	 * "</script>" only leaves it: the next one ends the element. */
	check_links("<script><!--<script></script><a href=/no></script><a href=/yes>",
	            "http://h.example/yes\n");
	/* "-->" ends the escape, so the first "</script>" is the end. */
	check_links("<script><!--<script>--></script><a href=/yes>", "http://h.example/yes\n");
	check_links("<script><!-- x </script><a href=/yes>", "http://h.example/yes\n");
	check_links("<script><!--></script><a href=/yes>", "http://h.example/yes\n");
	check_links("<script></scripty><a href=/no>", "");
}
END_TEST

START_TEST(test_after_html_and_cdata)
{
	check_links("<html><body></body></html><a href=/after>", "http://h.example/after\n");
	/* Outside foreign content <![CDATA[ is a bogus comment: it ends at the
	 * first '>'. */
	check_links("<![CDATA[<a href=/no>]]><a href=/yes>", "http://h.example/yes\n");
	check_links("<![CDATA[ 1 > 0 <a href=/yes> ]]>", "http://h.example/yes\n");
	check_links("<svg><![CDATA[ 1 > 0 <a href=/no> ]]></svg><a href=/yes>",
	            "http://h.example/yes\n");
	/* A breakout tag ends foreign content: CDATA is a comment again. */
	check_links("<svg><p><![CDATA[ 1 > 0 <a href=/yes> ]]>", "http://h.example/yes\n");
}
END_TEST

START_TEST(test_attribute_references)
{
	check_links("<a href=\"/?a=1&AMP;b=2\">", "http://h.example/?a=1&b=2\n");
	check_links("<a href=\"/?a=1&amp;b=2\">", "http://h.example/?a=1&b=2\n");
	/* Legacy name without ';': decoded at the end, kept before '=' or a letter. */
	check_links("<a href=\"/?x=&amp\">", "http://h.example/?x=&\n");
	check_links("<a href=\"/?x=1&ampy=2\">", "http://h.example/?x=1&ampy=2\n");
	check_links("<a href=\"/?x=1&copy=2\">", "http://h.example/?x=1&copy=2\n");
	check_links("<a href=/?x=1&lt=2>", "http://h.example/?x=1&lt=2\n");
	check_links("<a href=\"/a&#0;b\">", "http://h.example/a%EF%BF%BDb\n");
	/* "&#;" is no reference: the value stays "/a&#;b" ("#;b" is its fragment,
	 * which the crawl key drops), where libxml2 cut it to "/a". */
	check_links("<a href=\"/a&#;b\">", "http://h.example/a&\n");
	check_links("<a href=\"/a&#x80;\">", "http://h.example/a%E2%82%AC\n");
	check_links("<a href=\"/a&nGt;\">", "http://h.example/a%E2%89%AB%E2%83%92\n");
	check_links("<a href='/a\r\nb'>", "http://h.example/ab\n");
}
END_TEST

START_TEST(test_nul_in_href)
{
	static const char page[] = "<a href=\"/a\0b\">x</a><a href=/c\0d>";
	char *got = links_of(page, sizeof page - 1);
	ck_assert_str_eq(got, "http://h.example/a%EF%BF%BDb\nhttp://h.example/c%EF%BF%BDd\n");
	free(got);
}
END_TEST

/* The encoding sniffing of parse/html_charset.h where the pages/ tests do
 * not reach: the default, a declared UTF-16, bytes invalid in the encoding. */
START_TEST(test_charset_sniffing)
{
	/* Not UTF-8 and undeclared: windows-1252 (0xE9 e-acute, 0x80 euro). */
	check_links("<a href=/caf\xE9\x80>", "http://h.example/caf%C3%A9%E2%82%AC\n");
	/* Valid UTF-8 and undeclared: UTF-8. */
	check_links("<a href=/caf\xC3\xA9>", "http://h.example/caf%C3%A9\n");
	/* A page that says UTF-16 in a meta is read as UTF-8. */
	check_links("<meta charset=utf-16><a href=/caf\xC3\xA9>", "http://h.example/caf%C3%A9\n");
	/* A byte Shift_JIS cannot decode is U+FFFD, and decoding goes on. */
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	static const char sjis[] = "<a href=/a\xFF\x62><a href=/\x83\x65>";
	ck_assert_int_eq(links_extract(ex, "http://h.example/", "shift_jis", sjis, sizeof sjis - 1),
	                 LINKS_OK);
	size_t n = 0;
	const struct link *l = links_result(ex, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(l[0].url, "http://h.example/a%EF%BF%BDb");
	ck_assert_str_eq(l[1].url, "http://h.example/%E3%83%86");
	links_extractor_destroy(ex);
}
END_TEST

/* Tags, comments and text states at the page's end, and sizes past the
 * tokenizer's limits: the tag is dropped or cut as the contract says. */
START_TEST(test_tokenizer_limits)
{
	check_links("<a href=/x", "");
	check_links("<a href=\"/x", "");
	check_links("<a href=/x/", "");
	check_links("<a href=/x></", "http://h.example/x\n");
	struct tag_log page = { 0 };
	log_put(&page, "<a", 2);
	for (int i = 0; i < HTML_TOKENIZER_MAX_ATTRS; i++) {
		char a[32];
		int n = snprintf(a, sizeof a, " x%d=1", i);
		log_put(&page, a, (size_t)n);
	}
	log_put(&page, " href=/late><a href=/ok>", 24);
	struct html_tokenizer *tok = html_tokenizer_create();
	ck_assert_ptr_nonnull(tok);
	struct tag_log got = { 0 };
	const struct html_tokenizer_callbacks cb = { .tag = log_tag };
	struct html_tokenizer_stats stats;
	html_tokenize(tok, page.s, page.len, &cb, &got, &stats);
	ck_assert_uint_eq(stats.dropped_attrs, 1);
	ck_assert_ptr_null(strstr(got.s, "href=/late"));
	ck_assert_ptr_nonnull(strstr(got.s, "Sa\x1fhref=/ok\x1e"));
	free(got.s);
	free(page.s);
	/* A value that needs rewriting and is larger than the scratch is cut. */
	size_t big = HTML_TOKENIZER_SCRATCH + 16;
	char *huge = malloc(big + 16);
	ck_assert_ptr_nonnull(huge);
	memcpy(huge, "<a href='", 9);
	memset(huge + 9, '&', big - 9);
	memcpy(huge + big, "'>", 3);
	got = (struct tag_log){ 0 };
	html_tokenize(tok, huge, big + 2, &cb, &got, &stats);
	ck_assert_uint_eq(stats.cut_values, 1);
	ck_assert(got.cut);
	free(got.s);
	free(huge);
	html_tokenizer_destroy(tok);
}
END_TEST

/* ---- requisites: srcset, CSS, the table off ---- */

struct url_list {
	char buf[4096];
	size_t len;
};

static void list_url(void *ctx, const char *url, size_t len)
{
	struct url_list *l = ctx;
	int n = snprintf(l->buf + l->len, sizeof l->buf - l->len, "%.*s|", (int)len, url);
	ck_assert(n > 0 && (size_t)n < sizeof l->buf - l->len);
	l->len += (size_t)n;
}

static void check_srcset(const char *value, const char *want, size_t want_dropped)
{
	struct url_list l = { "", 0 };
	size_t dropped = embed_srcset_urls(value, strlen(value), list_url, &l);
	ck_assert_msg(strcmp(l.buf, want) == 0, "srcset \"%s\": want %s got %s", value, want,
	              l.buf);
	ck_assert_msg(dropped == want_dropped, "srcset \"%s\": dropped %zu, want %zu", value,
	              dropped, want_dropped);
}

START_TEST(test_srcset)
{
	check_srcset("", "", 0);
	check_srcset("  ,, ", "", 0);
	check_srcset("a.png", "a.png|", 0);
	check_srcset("a.png 1x, b.png 2x", "a.png|b.png|", 0);
	check_srcset("a.png 1x,b.png 2x", "a.png|b.png|", 0);
	/* Commas end a URL only at its end: inside it they are the URL's. */
	check_srcset("a,b.png 100w, c.png,, d.png", "a,b.png|c.png|d.png|", 0);
	check_srcset("data:image/png;base64,iVBOR= 1x", "data:image/png;base64,iVBOR=|", 0);
	/* A comma inside parentheses does not end the descriptors. */
	check_srcset("a.png 100w (x, y), b.png", "b.png|", 1);
	/* Invalid descriptors drop the candidate, not the rest. */
	check_srcset("a.png 1x 2x, b.png 0w, c.png 10h, d.png -1x, e.png 1.5x", "e.png|", 4);
	check_srcset("a.png 100w 50h, b.png 2.0e1x, c.png 1q, d.png .5x", "a.png|b.png|d.png|", 1);
	check_srcset("a.png 1.x, b.png 01w", "b.png|", 1);
	check_srcset("a.png\t1x\n,\fb.png", "a.png|b.png|", 0);
}
END_TEST

static void check_css(const char *css, const char *want)
{
	struct url_list l = { "", 0 };
	embed_css_urls(css, strlen(css), list_url, &l);
	ck_assert_msg(strcmp(l.buf, want) == 0, "css \"%s\": want %s got %s", css, want, l.buf);
}

START_TEST(test_css_urls)
{
	check_css("a{background:url(x.png)}", "x.png|");
	check_css("a{background:url(  x.png  )}", "x.png|");
	check_css("a{background:URL(\"x y.png\")}", "x y.png|");
	check_css("a{b:url('x\\'s.png')}", "x's.png|");
	check_css("@import 'a.css'; @IMPORT \"b.css\" screen; @import url(c.css);",
	          "a.css|b.css|c.css|");
	check_css("@importx 'no.css'; @import/**/'yes.css';", "yes.css|");
	check_css("/* url(no.png) */ a{} /* open url(no2.png)", "");
	check_css("a{content:'url(no.png)'} b{content:\"url(no2.png)\"}", "");
	check_css("a{b:myurl(no.png) url-x(no2.png) url(yes.png)}", "yes.png|");
	/* Escapes: hex with one optional space, any other character itself. */
	check_css("a{b:url(\\61 b\\2e png)}", "ab.png|");
	check_css("a{b:url(a\\(1\\).png)}", "a(1).png|");
	check_css("a{b:url(\"a\\\nb.png\")}", "ab.png|");
	check_css("a{b:url(\\0 x)}", "\xEF\xBF\xBDx|");
	/* Bad urls: a quote, a '(' or a space inside an unquoted one. */
	check_css("a{b:url(a\"b.png) c:url(a(b.png) d:url(a b.png) e:url(ok.png)}", "ok.png|");
	/* An unclosed string or url ends at the newline / the end. */
	check_css("a{b:url(\"x.png\n)} c{d:url(e.png", "e.png|");
	check_css("a{b:url()} c{d:url('')}", "");
}
END_TEST

START_TEST(test_requisites_off)
{
	char path[1024];
	size_t len = 0;
	snprintf(path, sizeof path, "%s/embeds.html", PAGES_DIR);
	char *html = slurp(path, &len);
	ck_assert_ptr_nonnull(html);
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	ck_assert_int_eq(links_extract(ex, "http://example.com/dir/page.html", NULL, html, len),
	                 LINKS_OK);
	size_t n = 0;
	const struct link *l = links_result(ex, &n);
	ck_assert_uint_eq(n, 3); /* link rel=next, the iframe, the a */
	for (size_t i = 0; i < n; i++)
		ck_assert(!link_kind_is_embed(l[i].kind));
	links_extractor_destroy(ex);
	free(html);
}
END_TEST

START_TEST(test_extract_css)
{
	struct links_extractor *ex = NULL;
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	const char *css = "@import 'print.css';\n"
	                  "body{background:url(../img/bg.png)}\n"
	                  "@font-face{src:url(https://fonts.example/f.woff2) format('woff2'),"
	                  "url(data:font/woff2;base64,AAAA)}\n"
	                  "i{background:url(/a.png#frag)}";
	ck_assert_int_eq(links_extract_css(ex, "http://example.com/css/main.css", css, strlen(css)),
	                 LINKS_OK);
	size_t n = 0;
	const struct link *l = links_result(ex, &n);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(l[0].url, "http://example.com/css/print.css");
	ck_assert_str_eq(l[1].url, "http://example.com/img/bg.png");
	ck_assert_str_eq(l[2].url, "https://fonts.example/f.woff2");
	ck_assert_str_eq(l[3].url, "http://example.com/a.png");
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(l[i].kind, LINK_CSS_URL);
	ck_assert_uint_eq(links_page_info(ex)->dropped_scheme, 1);
	ck_assert_int_eq(links_extract_css(ex, "not a url", css, strlen(css)), LINKS_EINVAL);
	ck_assert_str_eq(link_kind_name(LINK_CSS_URL), "css-url");
	ck_assert_str_eq(link_kind_name(LINK_REL), "link");
	links_extractor_destroy(ex);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("links");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_pages);
	tcase_add_test(tc, test_caps);
	tcase_add_test(tc, test_reuse_and_bad_input);
	tcase_add_test(tc, test_base_key_too_long);
	tcase_add_test(tc, test_page_simhash);
	tcase_add_test(tc, test_whatwg_http_cases);
	tcase_add_test(tc, test_url_options);
	tcase_add_test(tc, test_html5lib_tokenizer_tags);
	tcase_add_test(tc, test_html5lib_tokenizer_all);
	tcase_add_test(tc, test_slash_between_attributes);
	tcase_add_test(tc, test_comments);
	tcase_add_test(tc, test_text_elements);
	tcase_add_test(tc, test_script_escapes);
	tcase_add_test(tc, test_after_html_and_cdata);
	tcase_add_test(tc, test_attribute_references);
	tcase_add_test(tc, test_nul_in_href);
	tcase_add_test(tc, test_charset_sniffing);
	tcase_add_test(tc, test_tokenizer_limits);
	tcase_add_test(tc, test_srcset);
	tcase_add_test(tc, test_css_urls);
	tcase_add_test(tc, test_requisites_off);
	tcase_add_test(tc, test_extract_css);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
