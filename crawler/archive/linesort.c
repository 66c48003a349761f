/* linesort.c: external sort of lines (see linesort.h). */
#include "crawler/archive/linesort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/base/fileio.h"

#define LINESORT_DEFAULT_MEMORY (64u << 20)

struct entry {
	size_t at, len; /* in text */
};

struct linesort {
	char *dir;
	size_t memory;
	char *text; /* the lines of the current run, back to back */
	size_t text_len, text_cap;
	struct entry *e;
	size_t n, e_cap;
	size_t runs;   /* run files written: run-0 .. run-(runs-1) */
	size_t merged; /* run files merged away (removed) */
	int dir_made;
};

static int cmp_entry(const void *x, const void *y, void *text)
{
	const struct entry *a = x, *b = y;
	const char *t = text;
	return ascii_bytes_cmp(t + a->at, a->len, t + b->at, b->len);
}

static void run_path(const struct linesort *ls, size_t k, char *out, size_t cap)
{
	snprintf(out, cap, "%s/run-%zu", ls->dir, k);
}

static void sort_buffer(struct linesort *ls)
{
	if (ls->n > 1)
		qsort_r(ls->e, ls->n, sizeof *ls->e, cmp_entry, ls->text);
}

/* Sorts the buffer into a new run file and empties it. */
static int write_run(struct linesort *ls)
{
	char path[4200];
	if (!ls->dir_made) {
		if (fileio_mkdir_p(ls->dir) != 0)
			return -1;
		ls->dir_made = 1;
	}
	sort_buffer(ls);
	run_path(ls, ls->runs, path, sizeof path);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	for (size_t i = 0; i < ls->n; i++) {
		fwrite(ls->text + ls->e[i].at, 1, ls->e[i].len, f);
		putc('\n', f);
	}
	int rc = ferror(f) ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	if (rc != 0)
		return -1;
	ls->runs++;
	ls->n = 0;
	ls->text_len = 0;
	return 0;
}

int linesort_add(struct linesort *ls, const char *line, size_t len)
{
	if (ls->n > 0 && ls->text_len + len + (ls->n + 1) * sizeof *ls->e > ls->memory &&
	    write_run(ls) != 0)
		return -1;
	char *t = array_room(ls->text, &ls->text_cap, ls->text_len + len + 1, 64 * 1024);
	if (t == NULL)
		return -1;
	ls->text = t;
	struct entry *e = array_grow(ls->e, &ls->e_cap, ls->n, sizeof *e, 1024);
	if (e == NULL)
		return -1;
	ls->e = e;
	memcpy(ls->text + ls->text_len, line, len);
	ls->e[ls->n++] = (struct entry){ ls->text_len, len };
	ls->text_len += len;
	return 0;
}

/* ---------- merging ---------- */

struct source {
	FILE *f;
	char *line;
	size_t cap;
	ssize_t len; /* of the current line, -1 when done */
};

static int source_next(struct source *s)
{
	s->len = getline(&s->line, &s->cap, s->f);
	if (s->len < 0)
		return ferror(s->f) ? -1 : 0;
	if (s->len > 0 && s->line[s->len - 1] == '\n')
		s->len--;
	return 0;
}

static int source_less(const struct source *a, const struct source *b)
{
	return ascii_bytes_cmp(a->line, (size_t)a->len, b->line, (size_t)b->len) < 0;
}

/* Restores the heap order of h[0..n) below k. */
static void sift(struct source **h, size_t n, size_t k)
{
	for (;;) {
		size_t m = k, l = 2 * k + 1, r = l + 1;
		if (l < n && source_less(h[l], h[m]))
			m = l;
		if (r < n && source_less(h[r], h[m]))
			m = r;
		if (m == k)
			return;
		struct source *t = h[k];
		h[k] = h[m];
		h[m] = t;
		k = m;
	}
}

/* Merges runs [first, first + count) into emit; each is removed after. */
static int merge(struct linesort *ls, size_t first, size_t count,
                 int (*emit)(void *ctx, const char *line, size_t len), void *ctx)
{
	struct source src[LINESORT_FANIN], *heap[LINESORT_FANIN];
	char path[4200];
	size_t n = 0;
	int rc = 0;
	memset(src, 0, sizeof src);
	for (size_t k = 0; k < count; k++) {
		run_path(ls, first + k, path, sizeof path);
		src[k].f = fopen(path, "r");
		if (src[k].f == NULL || source_next(&src[k]) != 0) {
			rc = -1;
			goto out;
		}
		if (src[k].len >= 0)
			heap[n++] = &src[k];
	}
	for (size_t k = n / 2; k-- > 0;)
		sift(heap, n, k);
	while (n > 0) {
		rc = emit(ctx, heap[0]->line, (size_t)heap[0]->len);
		if (rc != 0 || (rc = source_next(heap[0])) != 0)
			goto out;
		if (heap[0]->len < 0)
			heap[0] = heap[--n];
		sift(heap, n, 0);
	}
out:
	for (size_t k = 0; k < count; k++) {
		if (src[k].f != NULL)
			fclose(src[k].f);
		free(src[k].line);
		run_path(ls, first + k, path, sizeof path);
		remove(path);
	}
	ls->merged += count;
	return rc;
}

/* emit for an intermediate pass: the line into the run file ctx. */
static int to_file(void *ctx, const char *line, size_t len)
{
	FILE *f = ctx;
	fwrite(line, 1, len, f);
	return putc('\n', f) == EOF ? -1 : 0;
}

int linesort_finish(struct linesort *ls, int (*emit)(void *ctx, const char *line, size_t len),
                    void *ctx)
{
	char path[4200];
	if (ls->runs == 0) {
		sort_buffer(ls);
		for (size_t i = 0; i < ls->n; i++) {
			int rc = emit(ctx, ls->text + ls->e[i].at, ls->e[i].len);
			if (rc != 0)
				return rc;
		}
		return 0;
	}
	if (ls->n > 0 && write_run(ls) != 0)
		return -1;
	/* runs merged[..runs) remain; merge them LINESORT_FANIN at a time into
	 * new runs until one pass is enough */
	while (ls->runs - ls->merged > LINESORT_FANIN) {
		size_t count = LINESORT_FANIN;
		run_path(ls, ls->runs, path, sizeof path);
		FILE *f = fopen(path, "w");
		if (f == NULL)
			return -1;
		int rc = merge(ls, ls->merged, count, to_file, f);
		if (fclose(f) != 0 && rc == 0)
			rc = -1;
		if (rc != 0)
			return rc;
		ls->runs++;
	}
	return merge(ls, ls->merged, ls->runs - ls->merged, emit, ctx);
}

struct linesort *linesort_create(const char *tmpdir, size_t memory)
{
	struct linesort *ls = calloc(1, sizeof *ls);
	if (ls == NULL || (ls->dir = strdup(tmpdir)) == NULL) {
		free(ls);
		return NULL;
	}
	ls->memory = memory ? memory : LINESORT_DEFAULT_MEMORY;
	if (ls->memory < 4096)
		ls->memory = 4096;
	return ls;
}

void linesort_destroy(struct linesort *ls)
{
	if (ls == NULL)
		return;
	if (ls->dir_made)
		fileio_remove_tree(ls->dir);
	free(ls->dir);
	free(ls->text);
	free(ls->e);
	free(ls);
}
