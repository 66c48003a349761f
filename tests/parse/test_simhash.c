/*
 * test_simhash.c: Check suite for parse/simhash.h on generated text.
 *  - a page and the same page with another date or visit counter are
 *    near-duplicates (distance <= 3; with a month name that changes, 90%
 *    within 3 and a mean <= 2 bits);
 *  - unrelated pages are about 32 bits apart (mean over many pairs in
 *    [24, 40]), and no unrelated pair is within 3 bits;
 *  - the fingerprint ignores case, punctuation and how the text is split
 *    into calls; breaks act as spaces.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/simhash.h"

#define PAGE_WORDS 1500
#define VOCAB 3000

static unsigned rng_state;

static unsigned rnd(void)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return (rng_state >> 8) & 0xFFFFFF;
}

static char vocab[VOCAB][12];

static void make_vocab(void)
{
	static const char *syl[] = { "ka", "to", "ri",  "mel", "sa", "no", "ven", "li",
		                     "qu", "as", "der", "po",  "un", "ta", "ge",  "mo" };
	rng_state = 7;
	for (int i = 0; i < VOCAB; i++) {
		int n = 1 + (int)(rnd() % 3);
		vocab[i][0] = '\0';
		for (int k = 0; k < n; k++)
			strncat(vocab[i], syl[rnd() % 16], sizeof vocab[i] - strlen(vocab[i]) - 1);
	}
}

/* A page of PAGE_WORDS words from a skewed distribution, seeded by `page`,
 * with a header line carrying `date` and a footer carrying `counter`. */
static size_t make_page(char *buf, size_t cap, unsigned page, const char *date, unsigned counter)
{
	rng_state = 1000003u * page + 17;
	size_t o = (size_t)snprintf(buf, cap, "News of the day. Updated on %s. ", date);
	for (int w = 0; w < PAGE_WORDS && o + 32 < cap; w++) {
		unsigned r = rnd() % VOCAB;
		unsigned idx = (r * r) / VOCAB; /* skewed toward common words */
		o += (size_t)snprintf(buf + o, cap - o, "%s%s", vocab[idx],
		                      (w % 13 == 12) ? ". " : " ");
	}
	o += (size_t)snprintf(buf + o, cap - o, " This page was visited %u times.", counter);
	return o;
}

/* Distances between each page and its variant (other date, other counter). */
static void near_dup_stats(const char *date_a, const char *date_b, int pages, double *mean,
                           int *worst, int *within3)
{
	static char a[65536], b[65536];
	int total = 0;
	*worst = 0;
	*within3 = 0;
	for (int p = 0; p < pages; p++) {
		size_t la = make_page(a, sizeof a, (unsigned)p, date_a, 1234);
		size_t lb = make_page(b, sizeof b, (unsigned)p, date_b, 1235 + 7 * (unsigned)p);
		ck_assert(la != lb || memcmp(a, b, la) != 0);
		int d = simhash_distance(simhash_text(a, la), simhash_text(b, lb));
		total += d;
		if (d > *worst)
			*worst = d;
		if (d <= 3)
			(*within3)++;
	}
	*mean = (double)total / pages;
}

START_TEST(test_near_duplicates)
{
	make_vocab();
	const int pages = 60;
	double mean;
	int worst, within3;
	/* Numeric dates and counters: numbers are normalized away, so every
     * variant is within 3 bits. */
	near_dup_stats("2024-03-12 10:31", "2025-04-03 08:02", pages, &mean, &worst, &within3);
	printf("numeric date + counter: mean distance %.2f, worst %d\n", mean, worst);
	ck_assert_int_le(worst, 3);
	/* A month name changes too: 4 of ~1500 shingles differ, which flips a
     * bit with probability ~2%, so ~1.4 bits on average (a Poisson tail
     * above 3 remains): assert the bulk. */
	near_dup_stats("12 March 2024", "3 April 2025", pages, &mean, &worst, &within3);
	printf("worded date + counter: mean distance %.2f, worst %d, %d/%d within 3\n", mean, worst,
	       within3, pages);
	ck_assert(mean <= 2.0);
	ck_assert_int_ge(within3, pages * 9 / 10);
	ck_assert_int_le(worst, 8);
}
END_TEST

START_TEST(test_unrelated_pages)
{
	make_vocab();
	static char a[65536], b[65536];
	const int pairs = 200;
	long total = 0;
	int closest = 64;
	for (int p = 0; p < pairs; p++) {
		size_t la = make_page(a, sizeof a, (unsigned)(2 * p + 1000), "1 May 2020", 1);
		size_t lb = make_page(b, sizeof b, (unsigned)(2 * p + 1001), "1 May 2020", 1);
		int d = simhash_distance(simhash_text(a, la), simhash_text(b, lb));
		total += d;
		if (d < closest)
			closest = d;
	}
	double mean = (double)total / pairs;
	printf("unrelated: mean distance %.2f, closest %d\n", mean, closest);
	ck_assert(mean >= 24.0 && mean <= 40.0);
	ck_assert_int_gt(closest, 3);
}
END_TEST

START_TEST(test_normalization_and_streaming)
{
	const char *t1 = "The quick brown fox jumps over the lazy dog, again and again!";
	const char *t2 = "the QUICK brown -- fox; jumps over\nthe lazy   dog again AND again";
	ck_assert_uint_eq(simhash_text(t1, strlen(t1)), simhash_text(t2, strlen(t2)));
	ck_assert_uint_ne(simhash_text(t1, strlen(t1)), simhash_text("the quick brown fox", 19));

	/* Split anywhere: same value. */
	struct simhash_builder *b = simhash_builder_create();
	ck_assert_ptr_nonnull(b);
	size_t n = strlen(t1);
	uint64_t whole = simhash_text(t1, n);
	for (size_t cut = 0; cut <= n; cut++) {
		simhash_builder_reset(b);
		simhash_builder_add(b, t1, cut);
		simhash_builder_add(b, t1 + cut, n - cut);
		ck_assert_uint_eq(simhash_builder_value(b), whole);
	}
	/* A break separates words like a space; value() does not end the page. */
	simhash_builder_reset(b);
	simhash_builder_add(b, "the quick", 9);
	simhash_builder_break(b);
	simhash_builder_add(b, "brown fox", 9);
	ck_assert_uint_eq(simhash_builder_value(b), simhash_text("the quick brown fox", 19));
	ck_assert_uint_ne(simhash_builder_value(b), simhash_text("the quickbrown fox", 18));
	simhash_builder_add(b, " jumps", 6);
	ck_assert_uint_eq(simhash_builder_value(b), simhash_text("the quick brown fox jumps", 25));
	simhash_builder_destroy(b);
	simhash_builder_destroy(NULL);

	ck_assert_uint_eq(simhash_text("", 0), 0);
	ck_assert_uint_eq(simhash_text(" ,;. ", 5), 0);
	ck_assert_uint_ne(simhash_text("word", 4), 0);
	ck_assert_int_eq(simhash_distance(0, ~(uint64_t)0), 64);
	ck_assert_int_eq(simhash_distance(5, 6), 2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("simhash");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_near_duplicates);
	tcase_add_test(tc, test_unrelated_pages);
	tcase_add_test(tc, test_normalization_and_streaming);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
