/*
 * html5lib_suite.h: a minimal JSON reader, enough for the html5lib-tests
 * tokenizer suite (CONFORMANCE_DIR/html5lib-tokenizer), and the suite's
 * files, shared by the parse tests that check themselves against it.
 * Allocation failures and unreadable files fail the running Check test.
 */
#ifndef TESTS_PARSE_HTML5LIB_SUITE_H
#define TESTS_PARSE_HTML5LIB_SUITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	bool b;
	char *s; /* J_STR: UTF-8 (lone surrogates as 3 bytes), s_len bytes */
	size_t s_len;
	struct jval **v; /* J_ARR: n items; J_OBJ: n/2 key, value pairs */
	size_t n, cap;
};

void jfree(struct jval *j);
/* Member `key` of object j, or NULL. */
const struct jval *jget(const struct jval *j, const char *key);
/* Writes code point cp as UTF-8 into o (4 bytes room); returns its length. */
size_t put_utf8(uint32_t cp, char *o);

/* The whole file at path, NUL-terminated (*len bytes before the NUL), or
 * NULL; the caller frees it. */
char *slurp(const char *path, size_t *len);

/* The suite files read (every one but xmlViolation.test). */
extern const char *const suite_files[];
extern const size_t suite_file_count;
/* The parsed JSON of one suite file (free with jfree). */
struct jval *load_suite(const char *file);
/* Its "tests" (or "xmlViolationTests") array. */
const struct jval *suite_tests(const struct jval *root);
/* Does the case run in the Data state, without a second round of escapes? */
bool data_state_case(const struct jval *t);
/* Its description. */
const char *case_name(const struct jval *t);

#endif
