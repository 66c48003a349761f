/*
 * test_base_text.c: the text helpers of the base tier. ascii.h's classes
 * against <ctype.h> in the "C" locale for every byte, its trims; and
 * header_field.h on header blocks as HTTP and WARC write them (any case,
 * spaces around values, CRLF or bare LF, a last line without its LF, a
 * field sent on several lines); clock.h's date text against printf;
 * ascii_bytes_cmp against strcmp; array.h's string array against what was
 * pushed, and its binary search against a scan.
 */
#include <check.h>
#include <ctype.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/base/clock.h"
#include "frontier/base/header_field.h"

START_TEST(ascii_classes_match_the_c_locale)
{
	ck_assert_ptr_nonnull(setlocale(LC_CTYPE, "C"));
	for (int c = 0; c < 256; c++) {
		unsigned char b = (unsigned char)c;
		ck_assert_int_eq(ascii_is_digit(b), isdigit(c) != 0);
		ck_assert_int_eq(ascii_is_alpha(b), isalpha(c) != 0);
		ck_assert_int_eq(ascii_is_alnum(b), isalnum(c) != 0);
		ck_assert_int_eq(ascii_is_hex(b), isxdigit(c) != 0);
		ck_assert_int_eq(ascii_hex_value(b) >= 0, isxdigit(c) != 0);
		ck_assert_int_eq(ascii_to_lower(b), tolower(c));
		ck_assert_int_eq(ascii_is_space(b), isspace(c) != 0);
		ck_assert_int_eq(ascii_is_html_space(b), isspace(c) != 0 && c != '\v');
	}
	ck_assert_int_eq(ascii_hex_value('f'), 15);
	ck_assert_int_eq(ascii_hex_value('A'), 10);
	ck_assert_int_eq(ascii_hex_value('7'), 7);
}
END_TEST

START_TEST(ascii_trims)
{
	char s[] = " \t\v key = v \f\r\n";
	ck_assert_str_eq(ascii_trim_cstr(s), "key = v");
	char blank[] = " \r\n";
	ck_assert_str_eq(ascii_trim_cstr(blank), "");
	const char *p = "\n  a b\t";
	size_t n = strlen(p);
	ascii_trim(&p, &n);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(memcmp(p, "a b", 3), 0);
	p = "   ";
	n = 3;
	ascii_trim(&p, &n);
	ck_assert_uint_eq(n, 0);
}
END_TEST

static const char BLOCK[] = "HTTP/1.1 200 OK\r\n"
                            "content-encoding:  gzip \r\n"
                            "Content-Type: text/html\r\n"
                            "X-Content-Encoding: no\r\n"
                            "Content-Encoding-X: no\r\n"
                            "Content-Encoding:br\n"
                            "Empty:\r\n"
                            "Location: /x";

START_TEST(header_fields_in_place)
{
	const char *at = BLOCK, *end = BLOCK + strlen(BLOCK), *v;
	size_t len;
	ck_assert(header_field_next(&at, end, "Content-Encoding", &v, &len));
	ck_assert_uint_eq(len, 4);
	ck_assert_int_eq(memcmp(v, "gzip", 4), 0);
	ck_assert(header_field_next(&at, end, "Content-Encoding", &v, &len));
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(memcmp(v, "br", 2), 0);
	const char *stop = at;
	ck_assert(!header_field_next(&at, end, "Content-Encoding", &v, &len));
	ck_assert_ptr_eq(at, stop);
	at = BLOCK;
	ck_assert(header_field_next(&at, end, "empty", &v, &len));
	ck_assert_uint_eq(len, 0);
	at = BLOCK;
	ck_assert(header_field_next(&at, end, "Location", &v, &len)); /* no LF */
	ck_assert_uint_eq(len, 2);
	ck_assert_ptr_eq(at, end);
	size_t name_len;
	const char *split = "WARC-Date:\t 2026 \r";
	ck_assert(header_field_split(split, split + strlen(split), &name_len, &v, &len));
	ck_assert_uint_eq(name_len, 9);
	ck_assert_uint_eq(len, 4);
	ck_assert_int_eq(memcmp(v, "2026", 4), 0);
	ck_assert(!header_field_split(split, split + 9, &name_len, &v, &len)); /* no ':' */
	const char *line = "Content-Type: x";
	ck_assert(header_field_is(line, line + strlen(line), "content-type"));
	ck_assert(!header_field_is(line, line + 12, "Content-Type")); /* cut before ':' */
	ck_assert(!header_field_is(line, line + strlen(line), "Content"));
}
END_TEST

START_TEST(header_field_copies)
{
	size_t n = strlen(BLOCK);
	char *s = header_field_dup(BLOCK, n, "Content-Encoding", true);
	ck_assert_str_eq(s, "gzip, br");
	free(s);
	s = header_field_dup(BLOCK, n, "Content-Encoding", false);
	ck_assert_str_eq(s, "gzip");
	free(s);
	s = header_field_dup(BLOCK, n, "Empty", true);
	ck_assert_str_eq(s, "");
	free(s);
	ck_assert_ptr_null(header_field_dup(BLOCK, n, "Retry-After", true));
	ck_assert_ptr_null(header_field_dup(NULL, 0, "Location", false));
	/* only len bytes count */
	ck_assert_ptr_null(header_field_dup(BLOCK, 20, "Content-Type", false));
}
END_TEST

/* Against gmtime_r and printf, the way a reader would write it. */
START_TEST(wall_clock_text_as_printf_writes_it)
{
	const int64_t when[] = { 0,
		                 1,
		                 -1,
		                 -999,
		                 -1000,
		                 -1001,
		                 1700000000123,
		                 951782400000,    /* 2000-02-29 */
		                 -62135596800000, /* 0001-01-01 */
		                 253402300799999, /* 9999-12-31T23:59:59.999 */
		                 253402300800000, /* year 10000 */
		                 -62198755200000, /* year -1 */
		                 wall_clock_unix_ms() };
	for (size_t i = 0; i < sizeof when / sizeof when[0]; i++) {
		int64_t ms = when[i];
		time_t secs = (time_t)(ms / 1000 - (ms % 1000 < 0));
		struct tm tm;
		ck_assert_ptr_nonnull(gmtime_r(&secs, &tm));
		char want[64], got[WALL_CLOCK_TEXT_MAX];
		snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		         tm.tm_sec, (int)(ms - (int64_t)secs * 1000));
		ck_assert_uint_eq(wall_clock_text(ms, got), strlen(want));
		ck_assert_str_eq(got, want);
	}
	char t[WALL_CLOCK_TEXT_MAX];
	wall_clock_text(1700000000123, t);
	ck_assert_str_eq(t, "2023-11-14T22:13:20.123Z");
	wall_clock_text(-1, t);
	ck_assert_str_eq(t, "1969-12-31T23:59:59.999Z");
}
END_TEST

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

/* Every pair of a set of strings with shared prefixes, bytes above 0x7f
 * and the empty string orders as strcmp orders them. */
START_TEST(bytes_cmp_orders_as_strcmp)
{
	const char *s[] = { "", "a", "ab", "abc", "abd", "b", "\xff", "\xff\x01", "a\x80", "A" };
	size_t n = sizeof s / sizeof s[0];
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			ck_assert_int_eq(
			        sign(ascii_bytes_cmp(s[i], strlen(s[i]), s[j], strlen(s[j]))),
			        sign(strcmp(s[i], s[j])));
}
END_TEST

START_TEST(string_array_pushes_copies)
{
	char **v = NULL;
	size_t n = 0, cap = 0;
	char text[] = "alpha\tbeta";
	for (int k = 0; k < 100; k++)
		ck_assert_int_eq(array_push_strndup(&v, &n, &cap, text, k % 2 ? 5 : 11, 4), 0);
	text[0] = 'X'; /* copies, not the caller's bytes */
	ck_assert_uint_eq(n, 100);
	ck_assert_uint_ge(cap, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(v[i], i % 2 ? "alpha" : "alpha\tbeta");
	ARRAY_FREE_EACH(v, n);
}
END_TEST

/* The first index not below the key, on sorted arrays with runs of equal
 * values, against a scan: every key from below the first to past the last. */
START_TEST(lower_bound_matches_a_scan)
{
	unsigned v[64];
	srand(7);
	for (size_t len = 0; len <= 64; len++) {
		for (size_t i = 0; i < len; i++)
			v[i] = (i ? v[i - 1] : 0) + (unsigned)(rand() % 3);
		for (unsigned key = 0; key <= (len ? v[len - 1] + 1 : 1); key++) {
			size_t want = 0;
			while (want < len && v[want] < key)
				want++;
			size_t lo = 0;
			ARRAY_LOWER_BOUND(lo, len, mid, v[mid] < key);
			ck_assert_uint_eq(lo, want);
			if (want > 0) { /* a range that starts past 0 */
				lo = want - 1;
				ARRAY_LOWER_BOUND(lo, len, mid, v[mid] < key);
				ck_assert_uint_eq(lo, want);
			}
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("base_text");
	TCase *tc = tcase_create("base_text");
	tcase_add_test(tc, ascii_classes_match_the_c_locale);
	tcase_add_test(tc, ascii_trims);
	tcase_add_test(tc, header_fields_in_place);
	tcase_add_test(tc, header_field_copies);
	tcase_add_test(tc, wall_clock_text_as_printf_writes_it);
	tcase_add_test(tc, bytes_cmp_orders_as_strcmp);
	tcase_add_test(tc, string_array_pushes_copies);
	tcase_add_test(tc, lower_bound_matches_a_scan);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
