/* index.c: a crawl's merged CDXJ index (see index.h). */
#include "crawler/archive/index.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crawler/archive/linesort.h"
#include "crawler/store/cdxj.h"
#include "crawler/store/warc_reader.h"
#include "frontier/base/array.h"
#include "frontier/base/fileio.h"

#define DEFAULT_MAX_RECORD (64u << 20)
/* A line longer than this is not one of ours. */
#define MAX_LINE (1u << 20)

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && strcmp(s + n - t, tail) == 0;
}

int archive_index_path(const char *warc_path, char *out, size_t cap)
{
	size_t n = strlen(warc_path);
	if (!ends_with(warc_path, ".warc.gz") || n - 8 + 6 > cap)
		return -1;
	snprintf(out, cap, "%.*s.cdxj", (int)(n - 8), warc_path);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int archive_warc_files(const char *dir, char ***names, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **v = NULL;
	size_t cap = 0;
	*names = NULL;
	*n = 0;
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || !ends_with(e->d_name, ".warc.gz"))
			continue;
		if (array_push_strndup(&v, n, &cap, e->d_name, strlen(e->d_name), 16) != 0) {
			closedir(d);
			ARRAY_FREE_EACH(v, *n);
			*n = 0;
			errno = ENOMEM;
			return -1;
		}
	}
	closedir(d);
	if (*n > 1)
		qsort(v, *n, sizeof *v, by_name);
	*names = v;
	return 0;
}

/* ---------- one file ---------- */

struct one {
	const struct archive_index_options *o;
	struct archive_index_report *rep;
	struct cdxj_indexer *ix;
	struct linesort *ls; /* where the file's lines go too, or NULL */
	const char *path;
	const char *base; /* the WARC's name, as lines give it */
	uint64_t warc_size;
	char *err;
	size_t errlen;
};

/* One message line about the file: "WHO: NAME: ...". */
__attribute__((format(printf, 2, 3))) static void say(const struct one *c, const char *fmt, ...)
{
	va_list ap;
	if (c->o->messages == NULL)
		return;
	fprintf(c->o->messages, "%s: %s: ", c->o->who ? c->o->who : "crawler index", c->base);
	va_start(ap, fmt);
	vfprintf(c->o->messages, fmt, ap);
	va_end(ap);
	fputc('\n', c->o->messages);
}

static int to_sorter(const struct one *c, const char *line, size_t len)
{
	if (c->ls == NULL)
		return 0;
	if (linesort_add(c->ls, line, len) != 0) {
		snprintf(c->err, c->errlen, "sorting the index: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Reads the own index f while its lines hold: *good bytes of it are kept
 * lines, *end where the last of them ends in the WARC; *cut lines after. */
static int read_good(const struct one *c, FILE *f, uint64_t *good, uint64_t *end, uint64_t *cut,
                     uint64_t *kept)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	bool bad = false;
	*good = *end = *cut = *kept = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		struct cdxj_location loc;
		if (bad) {
			(*cut)++;
			continue;
		}
		bad = line[n - 1] != '\n' || (size_t)n > MAX_LINE ||
		      cdxj_line_location(line, (size_t)n - 1, &loc) != CDXJ_OK ||
		      loc.filename_len != strlen(c->base) ||
		      memcmp(loc.filename, c->base, loc.filename_len) != 0 || loc.offset < *end ||
		      loc.length == 0 || loc.offset + loc.length > c->warc_size;
		if (bad) {
			(*cut)++;
			continue;
		}
		*good += (uint64_t)n;
		*end = loc.offset + loc.length;
		(*kept)++;
	}
	free(line);
	if (ferror(f)) {
		snprintf(c->err, c->errlen, "%s: read: %s", c->path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The first good bytes of the own index f, line by line, to the sorter. */
static int feed(const struct one *c, FILE *f, uint64_t good)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	uint64_t at = 0;
	int rc = 0;
	if (c->ls == NULL)
		return 0;
	rewind(f);
	while (rc == 0 && at < good && (n = getline(&line, &cap, f)) > 0) {
		rc = to_sorter(c, line, (size_t)n - 1);
		at += (uint64_t)n;
	}
	free(line);
	return rc;
}

static const char *scan_problem(enum warc_read r, const struct warc_record *rec)
{
	switch (r) {
	case WARC_READ_TORN: return "the file ends inside this record";
	case WARC_READ_CORRUPT: return "not a gzip member";
	case WARC_READ_NOT_RECORD: return rec->problem ? rec->problem : "not one record";
	default: return "unreadable";
	}
}

static size_t len_of(const char *s)
{
	return s ? strlen(s) : 0;
}

/* Appends to fd the lines of the records from offset from on. A record
 * past max_record keeps no block: its line has no status and no mime. */
static int index_records(const struct one *c, int fd, uint64_t from)
{
	struct warc_reader *s = NULL;
	struct warc_record rec;
	enum warc_read r;
	uint64_t made = 0;
	int rc = -1;
	if (warc_reader_open(c->path, from,
	                     c->o->max_record ? c->o->max_record : DEFAULT_MAX_RECORD, &s) != 0) {
		snprintf(c->err, c->errlen, "%s: %s", c->path, strerror(errno));
		return -1;
	}
	while ((r = warc_reader_next(s, &rec)) == WARC_READ_RECORD || r == WARC_READ_TOO_LARGE) {
		const char *line;
		size_t len;
		struct cdxj_record cr = {
			.type = rec.type,
			.type_len = len_of(rec.type),
			.url = rec.target_uri,
			.url_len = len_of(rec.target_uri),
			.date = rec.date,
			.date_len = len_of(rec.date),
			.payload_digest = rec.payload_digest,
			.payload_digest_len = len_of(rec.payload_digest),
			.content_type = rec.content_type,
			.content_type_len = len_of(rec.content_type),
			.block = rec.block,
			.block_len = rec.block ? rec.block_len : 0,
			.offset = rec.offset,
			.length = rec.length,
			.filename = c->base,
		};
		enum cdxj_error ce = cdxj_indexer_line(c->ix, &cr, &line, &len);
		if (ce == CDXJ_SKIP)
			continue;
		if (ce != CDXJ_OK) {
			snprintf(c->err, c->errlen, "%s: %s", c->path, cdxj_strerror(ce));
			goto out;
		}
		if (fileio_write_all(fd, line, len) != 0) {
			snprintf(c->err, c->errlen, "%s: write: %s", c->path, strerror(errno));
			goto out;
		}
		if (to_sorter(c, line, len - 1) != 0)
			goto out;
		made++;
	}
	if (r == WARC_READ_ERR_IO || r == WARC_READ_ERR_NOMEM) {
		snprintf(c->err, c->errlen, "%s: %s", c->path,
		         r == WARC_READ_ERR_NOMEM ? "out of memory" : strerror(errno));
		goto out;
	}
	if (r != WARC_READ_END) {
		c->rep->bad_records++;
		say(c, "offset %" PRIu64 ": %s: its records from there on are not indexed",
		    rec.offset, scan_problem(r, &rec));
	}
	if (made > 0)
		say(c, "%" PRIu64 " lines made again from its records", made);
	c->rep->reindexed += made;
	rc = 0;
out:
	warc_reader_close(s);
	return rc;
}

/* 1 if a gzip member starts at offset in the WARC. */
static int member_at(const char *path, uint64_t offset)
{
	uint8_t magic[2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ok = fd >= 0 && fileio_pread_all(fd, magic, 2, offset) == 0 && magic[0] == 0x1f &&
	         magic[1] == 0x8b;
	if (fd >= 0)
		close(fd);
	return ok;
}

static int complete_one(struct one *c)
{
	char ipath[4200];
	struct stat st;
	uint64_t good, end, cut, kept;
	int fd = -1, rc = -1;
	FILE *f = NULL;
	const char *slash = strrchr(c->path, '/');
	c->base = slash ? slash + 1 : c->path;
	if (stat(c->path, &st) != 0 || archive_index_path(c->path, ipath, sizeof ipath) != 0) {
		snprintf(c->err, c->errlen, "%s: %s", c->path,
		         errno ? strerror(errno) : "not a .warc.gz");
		return -1;
	}
	c->warc_size = (uint64_t)st.st_size;
	fd = open(ipath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || (f = fdopen(dup(fd), "r")) == NULL) {
		snprintf(c->err, c->errlen, "%s: %s", ipath, strerror(errno));
		goto out;
	}
	if (read_good(c, f, &good, &end, &cut, &kept) != 0)
		goto out;
	if (end < c->warc_size && end > 0 && !member_at(c->path, end)) {
		/* the lines name places that are no records: trust none */
		cut += kept;
		good = end = 0;
	}
	if (feed(c, f, good) != 0)
		goto out;
	if (cut > 0) {
		say(c, "%" PRIu64 " torn or wrong lines cut from its index", cut);
		c->rep->cut_lines += cut;
	}
	if (ftruncate(fd, (off_t)good) != 0 || lseek(fd, (off_t)good, SEEK_SET) < 0) {
		snprintf(c->err, c->errlen, "%s: truncate: %s", ipath, strerror(errno));
		goto out;
	}
	if (end < c->warc_size && index_records(c, fd, end) != 0)
		goto out;
	if (fsync(fd) != 0) {
		snprintf(c->err, c->errlen, "%s: fsync: %s", ipath, strerror(errno));
		goto out;
	}
	c->rep->files++;
	rc = 0;
out:
	if (f != NULL)
		fclose(f);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* ---------- the merged index ---------- */

struct sink {
	FILE *f;
	uint64_t lines;
};

static int write_line(void *ctx, const char *line, size_t len)
{
	struct sink *s = ctx;
	fwrite(line, 1, len, s->f);
	s->lines++;
	return putc('\n', s->f) == EOF ? -1 : 0;
}

/* Sorts what ls holds into dir/index.cdxj (through a synced temporary). */
static int write_sorted(const char *dir, struct linesort *ls, uint64_t *lines, char *err,
                        size_t errlen)
{
	char tmp[4200], path[4200];
	snprintf(tmp, sizeof tmp, "%s/index.cdxj.tmp", dir);
	snprintf(path, sizeof path, "%s/index.cdxj", dir);
	FILE *f = fopen(tmp, "w");
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	struct sink sink = { f, 0 };
	int rc = linesort_finish(ls, write_line, &sink);
	*lines = sink.lines;
	if (rc == 0 && (fflush(f) != 0 || fsync(fileno(f)) != 0))
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -1;
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		remove(tmp);
		return -1;
	}
	fileio_fsync_dir(dir);
	return 0;
}

int archive_index_write(const char *dir, const struct archive_index_options *o,
                        struct archive_index_report *rep, char *err, size_t errlen)
{
	char tmpdir[4200], path[4200];
	char **names = NULL;
	size_t n = 0;
	int rc = -1;
	struct one c = { .o = o, .rep = rep, .err = err, .errlen = errlen };
	snprintf(tmpdir, sizeof tmpdir, "%s/.index-tmp", dir);
	fileio_remove_tree(tmpdir); /* a killed run's */
	if (archive_warc_files(dir, &names, &n) != 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	c.ix = cdxj_indexer_create(o->max_url_len);
	c.ls = linesort_create(tmpdir, o->memory);
	if (c.ix == NULL || c.ls == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		c.path = path;
		if (complete_one(&c) != 0)
			goto out;
	}
	rc = write_sorted(dir, c.ls, &rep->lines, err, errlen);
out:
	linesort_destroy(c.ls);
	cdxj_indexer_destroy(c.ix);
	ARRAY_FREE_EACH(names, n);
	return rc;
}
