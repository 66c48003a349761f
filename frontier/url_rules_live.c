/*
 * url_rules_live.c: the crawl's current rules list, replaced whole when
 * rules are added at its top; the copy in the output folder; the counts a
 * checkpoint carries (see url_rules_live.h).
 */
#include "frontier/url_rules_live.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/fileio.h"
#include "frontier/base/recfile.h"

/* One list, current or replaced and still held. */
struct gen {
	struct url_rules *r;
	size_t added; /* rules added at the top when it was made */
	unsigned refs;
	struct gen *next; /* replaced lists still held */
};

struct url_rules_live {
	pthread_mutex_t mu;
	struct gen *cur;
	struct gen *old;
};

static const char ADDED_MARK[] = "\t# added from ";
static const char FROM_MARK[] = "\t# from ";

static struct gen *gen_new(struct url_rules *r, size_t added)
{
	struct gen *g = calloc(1, sizeof *g);
	if (!g)
		return NULL;
	g->r = r;
	g->added = added;
	g->refs = 1; /* being current */
	return g;
}

static void gen_free(struct gen *g)
{
	url_rules_destroy(g->r);
	free(g);
}

struct url_rules_live *url_rules_live_create(struct url_rules *rules, size_t added)
{
	struct url_rules_live *l = calloc(1, sizeof *l);
	if (l)
		l->cur = gen_new(rules, added);
	if (!l || !l->cur) {
		free(l);
		url_rules_destroy(rules);
		return NULL;
	}
	pthread_mutex_init(&l->mu, NULL);
	return l;
}

void url_rules_live_destroy(struct url_rules_live *l)
{
	if (!l)
		return;
	while (l->old) {
		struct gen *g = l->old;
		l->old = g->next;
		gen_free(g);
	}
	gen_free(l->cur);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

struct url_rules *url_rules_live_get(struct url_rules_live *l)
{
	if (!l)
		return NULL;
	pthread_mutex_lock(&l->mu);
	struct gen *g = l->cur;
	g->refs++;
	pthread_mutex_unlock(&l->mu);
	return g->r;
}

/* A replaced list no thread holds any more: its counts into the current
 * list (rule i is rule i + shift there), then freed. Under l->mu. */
static void gen_retire(struct url_rules_live *l, struct gen *g)
{
	size_t n = url_rules_size(g->r), shift = l->cur->added - g->added;
	uint64_t a, r;
	for (size_t i = 0; i < n; i++) {
		url_rules_counts(g->r, i, &a, &r);
		if (a || r)
			url_rules_counts_add(l->cur->r, i + shift, a, r);
	}
	url_rules_counts(g->r, n, &a, &r);
	url_rules_counts_add(l->cur->r, url_rules_size(l->cur->r), a, r);
	gen_free(g);
}

/* Drops one reference of g (under l->mu). */
static void gen_release(struct url_rules_live *l, struct gen *g)
{
	if (--g->refs > 0 || g == l->cur)
		return;
	for (struct gen **p = &l->old; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			break;
		}
	gen_retire(l, g);
}

void url_rules_live_put(struct url_rules_live *l, struct url_rules *r)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	struct gen *g = l->cur;
	if (g->r != r)
		for (g = l->old; g && g->r != r; g = g->next)
			;
	if (g)
		gen_release(l, g);
	pthread_mutex_unlock(&l->mu);
}

/* Appends the rules of text[len] to r, each line numbered from 1. */
static enum url_rules_err add_lines(struct url_rules *r, const char *text, size_t len,
                                    const char *source, char *err, size_t errlen)
{
	size_t at = 0;
	uint32_t line = 0;
	enum url_rules_err e = URL_RULES_OK;
	while (e == URL_RULES_OK && at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len;
		e = url_rules_add_line(r, text + at, end - at, source, ++line, err, errlen);
		at = end + 1;
	}
	return e;
}

/* A sealed list of the rules of text[len], then (below, when given) a
 * copy of every rule of below, with below's URL options (else opt's). */
static enum url_rules_err build(const char *text, size_t len, const char *source,
                                const struct url_options *opt, const struct url_rules *below,
                                struct url_rules **out, size_t *n, char *err, size_t errlen)
{
	enum url_rules_err e;
	struct url_rules *r = below ? url_rules_create_like(below) : url_rules_create(opt);
	*out = NULL;
	if (!r) {
		snprintf(err, errlen, "%s: out of memory", source);
		return URL_RULES_ERR_NOMEM;
	}
	if (len > URL_RULES_LIVE_ADD_MAX) {
		snprintf(err, errlen, "%s: more than %u bytes of rules", source,
		         URL_RULES_LIVE_ADD_MAX);
		e = URL_RULES_ERR_LIMIT;
	} else if (memchr(text, '\0', len)) {
		snprintf(err, errlen, "%s: a NUL byte in the rules", source);
		e = URL_RULES_ERR_SYNTAX;
	} else {
		e = add_lines(r, text, len, source, err, errlen);
	}
	*n = url_rules_size(r);
	if (e == URL_RULES_OK && *n == 0) {
		snprintf(err, errlen, "%s: no rule (expected ACTION MATCHER PATTERN lines)",
		         source);
		e = URL_RULES_ERR_SYNTAX;
	}
	if (e == URL_RULES_OK && below)
		e = url_rules_add_copy(r, below, err, errlen);
	return url_rules_seal_into(r, e, out, err, errlen);
}

enum url_rules_err url_rules_live_parse(const char *text, size_t len, const char *source,
                                        const struct url_options *opt, struct url_rules **out,
                                        char *err, size_t errlen)
{
	size_t n;
	return build(text, len, source, opt, NULL, out, &n, err, errlen);
}

enum url_rules_err url_rules_live_add(struct url_rules_live *l, const char *text, size_t len,
                                      const char *source, size_t *added, char *err, size_t errlen)
{
	struct url_rules *r;
	size_t n;
	*added = 0;
	enum url_rules_err e = build(text, len, source, NULL, l->cur->r, &r, &n, err, errlen);
	if (e != URL_RULES_OK)
		return e;
	struct gen *g = gen_new(r, l->cur->added + n);
	if (!g) {
		snprintf(err, errlen, "%s: out of memory", source);
		url_rules_destroy(r);
		return URL_RULES_ERR_NOMEM;
	}
	pthread_mutex_lock(&l->mu);
	struct gen *old = l->cur;
	l->cur = g;
	old->next = l->old;
	l->old = old;
	gen_release(l, old); /* the reference of being current */
	pthread_mutex_unlock(&l->mu);
	*added = n;
	return URL_RULES_OK;
}

size_t url_rules_live_added(const struct url_rules_live *l)
{
	return l->cur->added;
}

/* ---- the copy in the output folder ---- */

int url_rules_live_write(struct url_rules_live *l, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -1;
	struct url_rules *r = l->cur->r;
	size_t added = l->cur->added;
	fprintf(f, "# The URL rules of this crawl, first match wins (url_rules.h's form);\n"
	           "# those added while it ran on top. crawler crawl --resume reads them\n"
	           "# here; the comment after each rule says where it came from.\n");
	for (size_t i = 0; i < url_rules_size(r); i++) {
		struct url_rule_info in;
		url_rules_rule(r, i, &in);
		fprintf(f, "%s%s%s", in.text, i < added ? ADDED_MARK : FROM_MARK, in.source);
		if (in.line)
			fprintf(f, ":%u", in.line);
		fputc('\n', f);
	}
	int rc = ferror(f) ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	if (rc == 0)
		rc = fileio_replace(path, buf, len);
	free(buf);
	return rc;
}

/* One line of the copy: the rule's text, and where it came from. */
static enum url_rules_err read_line(struct url_rules *r, char *line, size_t len, const char *path,
                                    uint32_t lineno, size_t *added, char *err, size_t errlen)
{
	char *mark = strstr(line, ADDED_MARK);
	size_t ml = sizeof ADDED_MARK - 1;
	if (mark) {
		(*added)++;
	} else if ((mark = strstr(line, FROM_MARK))) {
		ml = sizeof FROM_MARK - 1;
	} else {
		return url_rules_add_line(r, line, len, path, lineno, err, errlen);
	}
	char *source = mark + ml, *colon = strrchr(source, ':');
	uint32_t n = 0;
	if (colon && colon[1]) {
		char *end;
		unsigned long v = strtoul(colon + 1, &end, 10);
		if (*end == '\0' && v <= UINT32_MAX) {
			n = (uint32_t)v;
			*colon = '\0';
		}
	}
	return url_rules_add_line(r, line, (size_t)(mark - line), source, n, err, errlen);
}

enum url_rules_err url_rules_live_read(const char *path, const struct url_options *opt,
                                       struct url_rules **out, size_t *added, char *err,
                                       size_t errlen)
{
	size_t len, at = 0;
	uint32_t lineno = 0;
	enum url_rules_err e = URL_RULES_OK;
	struct url_rules *r = url_rules_create(opt);
	*out = NULL;
	*added = 0;
	char *text = r ? fileio_read_path(path, URL_RULES_FILE_MAX + 1, &len) : NULL;
	if (!text) {
		snprintf(err, errlen, "%s: cannot read: %s", path,
		         r ? strerror(errno) : "no memory");
		url_rules_destroy(r);
		return !r || errno == ENOMEM ? URL_RULES_ERR_NOMEM : URL_RULES_ERR_IO;
	}
	if (len > URL_RULES_FILE_MAX) {
		snprintf(err, errlen, "%s: larger than %u MiB", path, URL_RULES_FILE_MAX >> 20);
		e = URL_RULES_ERR_LIMIT;
	}
	while (e == URL_RULES_OK && at < len) {
		char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len;
		text[end] = '\0';
		e = read_line(r, text + at, end - at, path, ++lineno, added, err, errlen);
		at = end + 1;
	}
	free(text);
	return url_rules_seal_into(r, e, out, err, errlen);
}

/* ---- a checkpoint's counts ---- */

void url_rules_live_save_counts(struct url_rules_live *l, struct recfile_writer *w)
{
	struct url_rules *r = url_rules_live_get(l);
	size_t n = url_rules_size(r);
	uint64_t a, j;
	recfile_put_u32(w, (uint32_t)n);
	for (size_t i = 0; i < n; i++) {
		struct url_rule_info in;
		url_rules_rule(r, i, &in);
		url_rules_counts(r, i, &a, &j);
		recfile_put_bytes(w, in.text, (uint32_t)strlen(in.text));
		recfile_put_u64(w, a);
		recfile_put_u64(w, j);
	}
	url_rules_counts(r, n, &a, &j);
	recfile_put_u64(w, a);
	url_rules_live_put(l, r);
}

int url_rules_live_load_counts(struct url_rules_live *l, struct recfile_reader *rd)
{
	struct url_rules *r = url_rules_live_get(l);
	size_t n = url_rules_size(r), next = 0;
	uint32_t saved, len;
	uint64_t a, j;
	char *text = NULL;
	int rc = -1;
	if (recfile_get_u32(rd, &saved) != RECFILE_OK)
		goto out;
	for (uint32_t k = 0; k < saved; k++) {
		if (recfile_get_bytes_alloc(rd, URL_RULES_FILE_MAX, &text, &len) != RECFILE_OK ||
		    recfile_get_u64(rd, &a) != RECFILE_OK || recfile_get_u64(rd, &j) != RECFILE_OK)
			goto out;
		for (size_t i = next; i < n; i++) {
			struct url_rule_info in;
			url_rules_rule(r, i, &in);
			if (text && strlen(in.text) == len && memcmp(in.text, text, len) == 0) {
				url_rules_counts_add(r, i, a, j);
				next = i + 1;
				break;
			}
		}
		free(text);
		text = NULL;
	}
	if (recfile_get_u64(rd, &a) != RECFILE_OK)
		goto out;
	url_rules_counts_add(r, n, a, 0);
	rc = 0;
out:
	free(text);
	url_rules_live_put(l, r);
	return rc;
}
