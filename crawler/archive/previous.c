/* previous.c: an earlier crawl's history, loaded for a recrawl (see
 * previous.h). */
#include "crawler/archive/previous.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontier/base/array.h"

/* A slot's location word: the file's number above LOC_FILE_SHIFT, the
 * line's offset + 1 below (0: an empty slot). */
#define LOC_FILE_SHIFT 40
#define LOC_OFFSET_MASK ((UINT64_C(1) << LOC_FILE_SHIFT) - 1)
#define MAX_FILES (1u << 20)
/* The longest line read back: a URL (cdxj.h's 64 KiB at most), two WARC
 * paths, two validators and the rest. */
#define LINE_MAX_BYTES (80u * 1024)
#define LINE_FIRST_READ 1024u

struct slot {
	uint64_t sig;
	uint64_t loc;
};

struct previous {
	char *dir; /* absolute */
	int *fds;  /* the history files, by number */
	size_t nfiles, fds_cap;
	struct slot *slots;
	size_t cap; /* a power of two */
	struct previous_stats st;
};

static int grow(struct previous *p)
{
	size_t cap = p->cap ? p->cap * 2 : 1024;
	struct slot *s = calloc(cap, sizeof *s);
	if (s == NULL)
		return -1;
	for (size_t i = 0; i < p->cap; i++) {
		if (p->slots[i].loc == 0)
			continue;
		size_t k = (size_t)p->slots[i].sig & (cap - 1);
		while (s[k].loc != 0)
			k = (k + 1) & (cap - 1);
		s[k] = p->slots[i];
	}
	free(p->slots);
	p->slots = s;
	p->cap = cap;
	return 0;
}

/* Enters (or replaces: a later capture) sig's line. 0, or -1. */
static int put(struct previous *p, uint64_t sig, uint64_t loc)
{
	if ((p->st.urls + 1) * 2 > p->cap && grow(p) != 0)
		return -1;
	size_t k = (size_t)sig & (p->cap - 1);
	while (p->slots[k].loc != 0 && p->slots[k].sig != sig)
		k = (k + 1) & (p->cap - 1);
	if (p->slots[k].loc == 0)
		p->st.urls++;
	p->slots[k].sig = sig;
	p->slots[k].loc = loc;
	return 0;
}

/* Reads one history file (number n) into the table. 0, or -1 (err). */
static int load_file(struct previous *p, const char *path, uint64_t n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t at = 0;
	int rc = -1;
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		struct history_entry e;
		uint64_t here = at;
		at += (uint64_t)len;
		p->st.lines++;
		/* a line cut short by a crash has no '\n': skipped */
		if (line[len - 1] != '\n' || (size_t)len > LINE_MAX_BYTES ||
		    history_parse(line, (size_t)len - 1, &e) != 0 || here >= LOC_OFFSET_MASK) {
			p->st.bad_lines++;
			continue;
		}
		if (put(p, e.sig, n << LOC_FILE_SHIFT | (here + 1)) != 0) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto out;
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	rc = 0;
out:
	free(line);
	fclose(f);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of dir's history files, sorted. 0, or -1 (err). */
static int list_histories(const char *dir, char ***names, size_t *n, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;
	*names = NULL;
	*n = 0;
	if (d == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		if (l <= 8 || strcmp(de->d_name + l - 8, ".history") != 0)
			continue;
		char **g = array_grow(*names, &cap, *n, sizeof *g, 16);
		if (g == NULL || (g[*n] = strdup(de->d_name)) == NULL) {
			if (g != NULL)
				*names = g;
			closedir(d);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		*names = g;
		(*n)++;
	}
	closedir(d);
	if (*n > 1)
		qsort(*names, *n, sizeof **names, by_name);
	return 0;
}

/* Opens and loads each named file. 0, or -1 (err). */
static int load_all(struct previous *p, char **names, size_t n, char *err, size_t errlen)
{
	char path[PATH_MAX + 64];
	if (n == 0) {
		snprintf(err, errlen, "%s: no history (*.history) to recrawl against", p->dir);
		return -1;
	}
	if (n > MAX_FILES) {
		snprintf(err, errlen, "%s: more than %u history files", p->dir, MAX_FILES);
		return -1;
	}
	p->fds = calloc(n, sizeof *p->fds);
	if (p->fds == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		p->fds[i] = -1;
	p->nfiles = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", p->dir, names[i]);
		p->fds[i] = open(path, O_RDONLY | O_CLOEXEC);
		if (p->fds[i] < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return -1;
		}
		if (load_file(p, path, i, err, errlen) != 0)
			return -1;
		p->st.files++;
	}
	return 0;
}

int previous_open(const char *dir, struct previous **out, char *err, size_t errlen)
{
	char **names = NULL;
	size_t n = 0;
	int rc = -1;
	struct previous *p = calloc(1, sizeof *p);
	*out = NULL;
	if (p == NULL || (p->dir = realpath(dir, NULL)) == NULL) {
		snprintf(err, errlen, "%s: %s", dir, p ? strerror(errno) : "out of memory");
		goto out;
	}
	if (list_histories(p->dir, &names, &n, err, errlen) != 0 ||
	    load_all(p, names, n, err, errlen) != 0)
		goto out;
	*out = p;
	p = NULL;
	rc = 0;
out:
	ARRAY_FREE_EACH(names, n);
	previous_destroy(p);
	return rc;
}

void previous_destroy(struct previous *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nfiles; i++)
		if (p->fds[i] >= 0)
			close(p->fds[i]);
	free(p->fds);
	free(p->slots);
	free(p->dir);
	free(p);
}

void previous_stats(const struct previous *p, struct previous_stats *out)
{
	*out = p->st;
}

/* The line at loc, read back into a new hit with room for a path of
 * extra bytes after it; its length in *len. NULL if unreadable. */
static struct previous_hit *read_line(const struct previous *p, uint64_t loc, size_t extra,
                                      size_t *len)
{
	int fd = p->fds[loc >> LOC_FILE_SHIFT];
	off_t at = (off_t)((loc & LOC_OFFSET_MASK) - 1);
	size_t want = LINE_FIRST_READ;
	for (;;) {
		struct previous_hit *h = malloc(sizeof *h + want + extra + 1);
		ssize_t got = h ? pread(fd, h->buf, want, at) : -1;
		char *nl = got > 0 ? memchr(h->buf, '\n', (size_t)got) : NULL;
		if (nl != NULL) {
			*len = (size_t)(nl - h->buf);
			return h;
		}
		free(h);
		if (got < (ssize_t)want || want >= LINE_MAX_BYTES)
			return NULL;
		want = LINE_MAX_BYTES;
	}
}

/* The hit at loc, parsed; NULL if unreadable. */
static struct previous_hit *hit_at(const struct previous *p, uint64_t loc)
{
	size_t len, dl = strlen(p->dir);
	/* the payload file's path: DIR/NAME, or as written when absolute */
	struct previous_hit *h = read_line(p, loc, dl + 1 + PATH_MAX, &len);
	if (h == NULL || history_parse(h->buf, len, &h->e) != 0) {
		free(h);
		return NULL;
	}
	char *path = h->buf + len + 1;
	if (h->e.ref_file[0] == '/')
		snprintf(path, PATH_MAX, "%s", h->e.ref_file);
	else
		snprintf(path, dl + 1 + PATH_MAX, "%s/%s", p->dir, h->e.ref_file);
	h->ref_path = path;
	return h;
}

struct previous_hit *previous_lookup(const struct previous *p, const char *url, size_t len)
{
	uint64_t sig = history_sig(url, len);
	if (p == NULL || p->cap == 0)
		return NULL;
	size_t k = (size_t)sig & (p->cap - 1);
	for (; p->slots[k].loc != 0; k = (k + 1) & (p->cap - 1)) {
		if (p->slots[k].sig != sig)
			continue;
		struct previous_hit *h = hit_at(p, p->slots[k].loc);
		if (h != NULL && (strlen(h->e.url) != len || memcmp(h->e.url, url, len) != 0)) {
			free(h); /* another URL of the same signature */
			h = NULL;
		}
		return h;
	}
	return NULL;
}

int previous_each_url(const struct previous *p, int (*fn)(void *ctx, const char *url), void *ctx)
{
	for (size_t i = 0; i < p->cap; i++) {
		if (p->slots[i].loc == 0)
			continue;
		struct previous_hit *h = hit_at(p, p->slots[i].loc);
		if (h == NULL)
			return -1;
		int rc = fn(ctx, h->e.url);
		free(h);
		if (rc != 0)
			return rc;
	}
	return 0;
}
