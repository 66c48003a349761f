/*
 * test_focus.c: focus terms (parse/focus.h) and the score a page gets
 * from its visible text in the link extractor's pass (parse/links.h).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse/focus.h"
#include "parse/links.h"
#include "parse/simhash.h"

static struct focus_terms *terms(const char *text)
{
	char err[256];
	struct focus_terms *t = NULL;
	ck_assert_msg(focus_terms_parse(text, strlen(text), "t", &t, err, sizeof err) == 0, "%s",
	              err);
	return t;
}

static void bad(const char *text, const char *want)
{
	char err[256] = "";
	struct focus_terms *t = NULL;
	ck_assert_int_eq(focus_terms_parse(text, strlen(text), "f.txt", &t, err, sizeof err), -1);
	ck_assert_ptr_null(t);
	ck_assert_msg(strstr(err, want) != NULL, "'%s' lacks '%s'", err, want);
}

START_TEST(test_parse)
{
	struct focus_terms *t = terms("# topic\n\nComet\n  galaxy 2.5 \r\nnebula\t0.5\n");
	ck_assert_uint_eq(focus_terms_count(t), 3);
	ck_assert(focus_terms_weight(t, simhash_token_hash("comet", 5)) == 1.0);
	ck_assert(focus_terms_weight(t, simhash_token_hash("GALAXY", 6)) == 2.5);
	ck_assert(focus_terms_weight(t, simhash_token_hash("nebula", 6)) == 0.5);
	ck_assert(focus_terms_weight(t, simhash_token_hash("planet", 6)) == 0.0);
	/* a long term (XXH3 path) matches as the tokenizer hashes it */
	focus_terms_destroy(t);
	t = terms("spectrophotometrically\n");
	ck_assert(focus_terms_weight(t, simhash_token_hash("SpectroPhotometrically", 22)) == 1.0);
	focus_terms_destroy(t);

	bad("", "no focus term");
	bad("# only\n", "no focus term");
	bad("comet\ncomet 2\n", "f.txt:2: \"comet\" is listed twice");
	bad("comet 0\n", "f.txt:1: bad weight");
	bad("comet -1\n", "bad weight");
	bad("comet 1001\n", "bad weight");
	bad("comet x\n", "bad weight");
	bad("two words here\n", "bad weight");
	bad("1999\n", "a term is one word");
	bad("co-met\n", "a term is one word");
	focus_terms_destroy(NULL);
}
END_TEST

START_TEST(test_score_and_tier)
{
	ck_assert_uint_eq(focus_score(0, 1000), 0);
	ck_assert_uint_eq(focus_score(10, 100), FOCUS_SCORE_ONE / 10);
	/* fewer words than FOCUS_MIN_WORDS count as that many */
	ck_assert_uint_eq(focus_score(1, 3), FOCUS_SCORE_ONE / FOCUS_MIN_WORDS);
	ck_assert_uint_eq(focus_score(1e12, 1), FOCUS_SCORE_NONE - 1);
	uint32_t th = 200;
	ck_assert_int_eq(focus_tier(0, th), -1);
	ck_assert_int_eq(focus_tier(1, th), 0);
	ck_assert_int_eq(focus_tier(199, th), 0);
	ck_assert_int_eq(focus_tier(200, th), 1);
	ck_assert_int_eq(focus_tier(400, th), 2);
	ck_assert_int_eq(focus_tier(799, th), 2);
	ck_assert_int_eq(focus_tier(800, th), 3);
}
END_TEST

static uint32_t page_score(struct links_extractor *ex, const char *html)
{
	ck_assert_int_eq(links_extract(ex, "http://a.test/", NULL, html, strlen(html)), LINKS_OK);
	return links_page_info(ex)->focus;
}

/* 100 words of text around the markup under test. */
static char *page(const char *middle, int comets)
{
	size_t cap = 4096 + strlen(middle);
	char *s = malloc(cap);
	size_t n = (size_t)snprintf(s, cap, "<html><body><p>");
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s ", i < comets ? "Comet" : "lorem");
	snprintf(s + n, cap - n, "</p>%s</body></html>", middle);
	return s;
}

START_TEST(test_visible_text)
{
	struct focus_terms *t = terms("comet\ngalaxy 3\n");
	struct links_config c = { .focus = t };
	struct links_extractor *ex;
	ck_assert_int_eq(links_extractor_create(&c, &ex), LINKS_OK);
	char *p = page("", 10);
	ck_assert_uint_eq(page_score(ex, p), FOCUS_SCORE_ONE / 10); /* 10 of 100 words */
	free(p);
	/* script, style, markup and attributes are no text; a comment neither */
	p = page("<script>comet comet comet</script><style>.comet{}</style>"
	         "<a href='/comet' title='comet'>x</a><!-- comet -->",
	         10);
	ck_assert_uint_eq(page_score(ex, p), (10 * FOCUS_SCORE_ONE + 50) / 101); /* + "x" */
	free(p);
	/* weights; a word cut by a tag is two words; references decoded */
	p = page("<b>gal</b>axy galaxy &#99;omet", 0);
	ck_assert_uint_eq(page_score(ex, p), (4 * FOCUS_SCORE_ONE + 52) / 104); /* rounded */
	free(p);
	p = page("", 0);
	ck_assert_uint_eq(page_score(ex, p), 0);
	free(p);
	links_extractor_destroy(ex);
	/* without focus terms: no score */
	ck_assert_int_eq(links_extractor_create(NULL, &ex), LINKS_OK);
	p = page("", 10);
	ck_assert_uint_eq(page_score(ex, p), FOCUS_SCORE_NONE);
	free(p);
	links_extractor_destroy(ex);
	/* the focus alone (no SimHash wanted) still runs the text pass */
	c.no_simhash = true;
	ck_assert_int_eq(links_extractor_create(&c, &ex), LINKS_OK);
	p = page("", 20);
	ck_assert_uint_eq(page_score(ex, p), FOCUS_SCORE_ONE / 5);
	ck_assert_uint_eq(links_page_info(ex)->simhash, 0);
	free(p);
	links_extractor_destroy(ex);
	focus_terms_destroy(t);
}
END_TEST

START_TEST(test_load)
{
	char path[] = "/tmp/test_focus_XXXXXX", err[512];
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "orbit 2\n", 8), 8);
	close(fd);
	struct focus_terms *t = NULL;
	ck_assert_int_eq(focus_terms_load(path, &t, err, sizeof err), 0);
	ck_assert(focus_terms_weight(t, simhash_token_hash("orbit", 5)) == 2.0);
	focus_terms_destroy(t);
	unlink(path);
	ck_assert_int_eq(focus_terms_load(path, &t, err, sizeof err), -1);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(err, "cannot read the focus file"));
}
END_TEST

int main(void)
{
	Suite *su = suite_create("focus");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_score_and_tier);
	tcase_add_test(tc, test_visible_text);
	tcase_add_test(tc, test_load);
	suite_add_tcase(su, tc);
	SRunner *sr = srunner_create(su);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
