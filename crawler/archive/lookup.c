/* lookup.c: see lookup.h. */
#include "crawler/archive/lookup.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crawler/store/cdxj.h"
#include "crawler/store/warc_reader.h"

struct archive_lookup {
	FILE *index;
	uint64_t size;
	char dir[4096];
	size_t max_record;
	struct cdxj_indexer *ix;
	char *line; /* the line read last, cut at line_cap - 1 bytes */
	size_t line_cap;
	char *key; /* "URLKEY TIMESTAMP " of the record looked for */
	size_t key_cap;
	struct warc_reader *wr; /* on file, or NULL */
	char file[256];
	char bufs[]; /* line, then key: line_cap + key_cap bytes */
};

int archive_lookup_open(const char *dir, size_t max_url_len, size_t max_record,
                        struct archive_lookup **out)
{
	char path[4200];
	struct stat st;
	size_t cap = 8 * (max_url_len ? max_url_len : 65536) + 4096;
	struct archive_lookup *l = calloc(1, sizeof *l + 2 * cap);
	*out = NULL;
	if (!l)
		goto nomem;
	snprintf(l->dir, sizeof l->dir, "%s", dir);
	snprintf(path, sizeof path, "%s/index.cdxj", dir);
	l->max_record = max_record;
	l->line_cap = cap;
	l->key_cap = cap;
	l->line = l->bufs;
	l->key = l->bufs + cap;
	l->ix = cdxj_indexer_create(max_url_len);
	if (!l->ix)
		goto nomem;
	l->index = fopen(path, "r");
	if (!l->index || fstat(fileno(l->index), &st) != 0) {
		int e = errno;
		archive_lookup_close(l);
		errno = e;
		return -1;
	}
	l->size = (uint64_t)st.st_size;
	*out = l;
	return 0;
nomem:
	archive_lookup_close(l);
	errno = ENOMEM;
	return -1;
}

void archive_lookup_close(struct archive_lookup *l)
{
	if (!l)
		return;
	if (l->index)
		fclose(l->index);
	warc_reader_close(l->wr);
	cdxj_indexer_destroy(l->ix);
	free(l);
}

/* One line of the index. */
struct line {
	uint64_t start, next; /* where it starts, and the byte after its newline */
	size_t len;           /* bytes in l->line */
	int whole;            /* not cut */
};

/* The first line that starts at or after from: 1 and *ln, 0 when none does
 * (the end of the file), -1 on a read error. */
static int line_at(struct archive_lookup *l, uint64_t from, struct line *ln)
{
	uint64_t pos = from ? from - 1 : 0;
	size_t n = 0;
	int c = 0;
	if (fseeko(l->index, (off_t)pos, SEEK_SET) != 0)
		return -1;
	/* from - 1 is a newline when a line starts at from */
	while (from > 0 && (c = getc(l->index)) != EOF && (pos++, c != '\n'))
		;
	if (c == EOF)
		return ferror(l->index) ? -1 : 0;
	ln->start = pos;
	while ((c = getc(l->index)) != EOF && c != '\n') {
		if (n + 1 < l->line_cap)
			l->line[n] = (char)c;
		n++;
	}
	if (ferror(l->index))
		return -1;
	if (n == 0 && c == EOF)
		return 0;
	ln->next = pos + n + (c == '\n');
	ln->whole = n + 1 <= l->line_cap;
	ln->len = ln->whole ? n : l->line_cap - 1;
	l->line[ln->len] = '\0';
	return 1;
}

/* The line against the key, as the sort orders them, a line that starts
 * with the key counting as equal. */
static int key_cmp(const struct archive_lookup *l, const struct line *ln, size_t klen)
{
	int r = memcmp(l->line, l->key, ln->len < klen ? ln->len : klen);
	return r ? r : ln->len < klen ? -1 : 0;
}

/* "URLKEY TIMESTAMP " (or "URLKEY " without a date) into l->key: its
 * length, or 0 when url has no key (or it does not fit), -1 out of memory. */
static long make_key(struct archive_lookup *l, const char *url, const char *date)
{
	const char *k;
	size_t kl, n = 0;
	enum cdxj_error e = cdxj_indexer_urlkey(l->ix, url, strlen(url), &k, &kl);
	if (e == CDXJ_ERR_NOMEM)
		return -1;
	if (e != CDXJ_OK || kl + 18 > l->key_cap)
		return 0;
	memcpy(l->key, k, kl);
	n = kl;
	l->key[n++] = ' ';
	/* the timestamp as cdxj.h makes it: the date less '-', ':' and 'T' */
	size_t ts = 0;
	for (const char *d = date; d && *d && ts < 14; d++)
		if (*d != '-' && *d != ':' && *d != 'T') {
			l->key[n++] = *d;
			ts++;
		}
	if (date)
		l->key[n++] = ' ';
	return (long)n;
}

/* The first line not below the key: where it starts (l->size when none).
 * The predicate "the first line at or after p is not below the key, or
 * there is none" grows with p: its first true p is searched, each probe
 * reading one line. */
static int search(struct archive_lookup *l, size_t klen, uint64_t *at)
{
	uint64_t lo = 0, hi = l->size;
	struct line ln;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int r = line_at(l, mid, &ln);
		if (r < 0)
			return -1;
		if (r == 1 && key_cmp(l, &ln, klen) < 0)
			lo = ln.start + 1; /* every p up to that line's start maps below */
		else
			hi = mid;
	}
	*at = lo;
	return 0;
}

/* The record a line names, if it is the response with that id: 1, 0, or -1
 * out of memory. */
static int take_candidate(struct archive_lookup *l, const struct line *ln, const char *id,
                          struct warc_record *rec)
{
	struct cdxj_location loc;
	char path[4400];
	if (!ln->whole || strstr(l->line, "\"mime\":\"warc/revisit\"") != NULL ||
	    cdxj_line_location(l->line, ln->len, &loc) != CDXJ_OK ||
	    loc.filename_len >= sizeof l->file || memchr(loc.filename, '/', loc.filename_len))
		return 0;
	if (!l->wr || strlen(l->file) != loc.filename_len ||
	    memcmp(l->file, loc.filename, loc.filename_len) != 0) {
		warc_reader_close(l->wr);
		l->wr = NULL;
		memcpy(l->file, loc.filename, loc.filename_len);
		l->file[loc.filename_len] = '\0';
		snprintf(path, sizeof path, "%s/%s", l->dir, l->file);
		if (warc_reader_open(path, loc.offset, l->max_record, &l->wr) != 0)
			return errno == ENOMEM ? -1 : 0;
	} else {
		warc_reader_seek(l->wr, loc.offset);
	}
	enum warc_read got = warc_reader_next(l->wr, rec);
	if (got == WARC_READ_ERR_NOMEM)
		return -1;
	return got == WARC_READ_RECORD && rec->offset == loc.offset && rec->type &&
	       strcmp(rec->type, "response") == 0 && rec->record_id &&
	       strcmp(rec->record_id, id) == 0;
}

int archive_lookup_record(struct archive_lookup *l, const char *url, const char *date,
                          const char *id, struct warc_record *rec)
{
	struct line ln;
	uint64_t at;
	long klen = make_key(l, url, date);
	if (klen <= 0)
		return (int)klen;
	if (search(l, (size_t)klen, &at) != 0)
		return -1;
	for (int k = 0; k < ARCHIVE_LOOKUP_CANDIDATES; k++) {
		int r = line_at(l, at, &ln);
		if (r <= 0)
			return r;
		if (ln.len < (size_t)klen || memcmp(l->line, l->key, (size_t)klen) != 0)
			return 0; /* past the run */
		at = ln.next;
		if ((r = take_candidate(l, &ln, id, rec)) != 0)
			return r;
	}
	return 0;
}
