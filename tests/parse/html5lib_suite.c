/*
 * html5lib_suite.c: see html5lib_suite.h.
 */
#include "html5lib_suite.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CONFORMANCE_DIR
#error "CONFORMANCE_DIR must be defined"
#endif
#define TOKENIZER_DIR CONFORMANCE_DIR "/html5lib-tokenizer/tokenizer"

struct jparser {
	const char *p, *end;
	bool bad;
};

void jfree(struct jval *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->n; i++)
		jfree(j->v[i]);
	free(j->v);
	free(j->s);
	free(j);
}

static void jskip(struct jparser *jp)
{
	while (jp->p < jp->end &&
	       (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
		jp->p++;
}

static void jpush(struct jval *j, struct jval *item)
{
	if (j->n == j->cap) {
		j->cap = j->cap ? 2 * j->cap : 4;
		j->v = realloc(j->v, j->cap * sizeof *j->v);
		ck_assert_ptr_nonnull(j->v);
	}
	j->v[j->n++] = item;
}

static int jhex4(struct jparser *jp)
{
	if (jp->end - jp->p < 4) {
		jp->bad = true;
		return 0;
	}
	int v = 0;
	for (int i = 0; i < 4; i++) {
		char c = *jp->p++;
		v = v * 16 + (c >= '0' && c <= '9'   ? c - '0'
		              : c >= 'a' && c <= 'f' ? c - 'a' + 10
		              : c >= 'A' && c <= 'F' ? c - 'A' + 10
		                                     : (jp->bad = true, 0));
	}
	return v;
}

size_t put_utf8(uint32_t cp, char *o)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

static struct jval *jparse(struct jparser *jp);

static struct jval *jstring(struct jparser *jp)
{
	struct jval *j = calloc(1, sizeof *j);
	ck_assert_ptr_nonnull(j);
	j->type = J_STR;
	jp->p++; /* '"' */
	const char *q = jp->p;
	while (q < jp->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	j->s = malloc((size_t)(q - jp->p) + 1);
	ck_assert_ptr_nonnull(j->s);
	size_t o = 0;
	while (jp->p < jp->end && *jp->p != '"') {
		char c = *jp->p++;
		if (c != '\\') {
			j->s[o++] = c;
			continue;
		}
		if (jp->p >= jp->end)
			break;
		c = *jp->p++;
		switch (c) {
		case 'b': j->s[o++] = '\b'; break;
		case 'f': j->s[o++] = '\f'; break;
		case 'n': j->s[o++] = '\n'; break;
		case 'r': j->s[o++] = '\r'; break;
		case 't': j->s[o++] = '\t'; break;
		case 'u': {
			uint32_t cp = (uint32_t)jhex4(jp);
			if (cp >= 0xD800 && cp <= 0xDBFF && jp->end - jp->p >= 6 &&
			    jp->p[0] == '\\' && jp->p[1] == 'u') {
				struct jparser save = *jp;
				jp->p += 2;
				uint32_t lo = (uint32_t)jhex4(jp);
				if (lo >= 0xDC00 && lo <= 0xDFFF)
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				else
					*jp = save;
			}
			o += put_utf8(cp, j->s + o); /* 6 escaped bytes hold its 4 */
			break;
		}
		default: j->s[o++] = c; break;
		}
	}
	if (jp->p >= jp->end)
		jp->bad = true;
	else
		jp->p++;
	j->s[o] = '\0';
	j->s_len = o;
	return j;
}

static struct jval *jparse(struct jparser *jp)
{
	jskip(jp);
	if (jp->bad || jp->p >= jp->end) {
		jp->bad = true;
		return NULL;
	}
	char c = *jp->p;
	if (c == '"')
		return jstring(jp);
	struct jval *j = calloc(1, sizeof *j);
	ck_assert_ptr_nonnull(j);
	if (c == '[' || c == '{') {
		char close = c == '[' ? ']' : '}';
		j->type = c == '[' ? J_ARR : J_OBJ;
		jp->p++;
		jskip(jp);
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			return j;
		}
		for (;;) {
			struct jval *item = jparse(jp);
			if (!item)
				break;
			jpush(j, item);
			jskip(jp);
			if (j->type == J_OBJ) {
				if (item->type != J_STR || jp->p >= jp->end || *jp->p != ':') {
					jp->bad = true;
					break;
				}
				jp->p++;
				struct jval *val = jparse(jp);
				if (!val)
					break;
				jpush(j, val);
				jskip(jp);
			}
			if (jp->p < jp->end && *jp->p == ',') {
				jp->p++;
				continue;
			}
			if (jp->p < jp->end && *jp->p == close) {
				jp->p++;
				return j;
			}
			jp->bad = true;
			break;
		}
		jfree(j);
		return NULL;
	}
	if (strncmp(jp->p, "true", 4) == 0 || strncmp(jp->p, "false", 5) == 0) {
		j->type = J_BOOL;
		j->b = c == 't';
		jp->p += j->b ? 4 : 5;
	} else if (strncmp(jp->p, "null", 4) == 0) {
		j->type = J_NULL;
		jp->p += 4;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		j->type = J_NUM;
		while (jp->p < jp->end && strchr("+-.eE0123456789", *jp->p))
			jp->p++;
	} else {
		jp->bad = true;
		jfree(j);
		return NULL;
	}
	return j;
}

/* Member `key` of object j, or NULL. */
const struct jval *jget(const struct jval *j, const char *key)
{
	if (!j || j->type != J_OBJ)
		return NULL;
	for (size_t i = 0; i + 1 < j->n; i += 2)
		if (strcmp(j->v[i]->s, key) == 0)
			return j->v[i + 1];
	return NULL;
}

char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	if (fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) {
			buf = malloc((size_t)n + 1);
			if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
				buf[n] = '\0';
				*len = (size_t)n;
			} else {
				free(buf);
				buf = NULL;
			}
		}
	}
	fclose(f);
	return buf;
}

/* The "tests" (or "xmlViolationTests") array of one suite file. */
struct jval *load_suite(const char *file)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", TOKENIZER_DIR, file);
	size_t len = 0;
	char *text = slurp(path, &len);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	struct jparser jp = { text, text + len, false };
	struct jval *root = jparse(&jp);
	ck_assert_msg(root && !jp.bad, "%s: not JSON this reader understands", path);
	free(text);
	return root;
}

const struct jval *suite_tests(const struct jval *root)
{
	const struct jval *t = jget(root, "tests");
	if (!t)
		t = jget(root, "xmlViolationTests");
	ck_assert(t && t->type == J_ARR);
	return t;
}

const char *const suite_files[] = {
	"contentModelFlags.test",
	"domjs.test",
	"entities.test",
	"escapeFlag.test",
	"namedEntities.test",
	"numericEntities.test",
	"pendingSpecChanges.test",
	"test1.test",
	"test2.test",
	"test3.test",
	"test4.test",
	"unicodeChars.test",
	"unicodeCharsProblematic.test",
	/* Not xmlViolation.test: it expects the XML infoset coercion. */
};
const size_t suite_file_count = sizeof suite_files / sizeof suite_files[0];

/* Does the case run in the Data state, without a second round of escapes? */
bool data_state_case(const struct jval *t)
{
	const struct jval *de = jget(t, "doubleEscaped");
	if (de && de->type == J_BOOL && de->b)
		return false;
	const struct jval *st = jget(t, "initialStates");
	if (!st)
		return true;
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i]->type == J_STR && strcmp(st->v[i]->s, "Data state") == 0)
			return true;
	return false;
}

const char *case_name(const struct jval *t)
{
	const struct jval *d = jget(t, "description");
	return d && d->type == J_STR ? d->s : "?";
}
