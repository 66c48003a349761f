/* previous.c: earlier crawls' histories and indexes, loaded for a recrawl
 * (see previous.h). */
#include "crawler/archive/previous.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crawler/store/cdxj.h"
#include "crawler/store/warc_reader.h"
#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/url.h"

/* A slot's location word: the file's number above LOC_FILE_SHIFT, the
 * line's offset + 1 below (0: an empty slot). */
#define LOC_FILE_SHIFT 40
#define LOC_OFFSET_MASK ((UINT64_C(1) << LOC_FILE_SHIFT) - 1)
#define MAX_FILES (1u << 20)
/* The longest line read back: a URL (cdxj.h's 64 KiB at most), two WARC
 * paths, two validators and the rest. */
#define LINE_MAX_BYTES (80u * 1024)
#define LINE_FIRST_READ 1024u
/* The index a folder without history may hold (the crawl's own name). */
#define INDEX_NAME "index.cdxj"
/* A CDXJ digest without its algorithm's name (warcio.js and pywb drop it)
 * is the crawler's: SHA-1. */
#define DIGEST_DEFAULT_ALGO "sha1:"

struct slot {
	uint64_t sig;
	uint64_t loc;
};

/* One file of lines: a history, or a CDXJ index. */
struct prev_file {
	int fd;
	uint32_t dir; /* its folder, in dirs: where its file names resolve */
	bool cdxj;
};

struct previous {
	char **dirs; /* absolute */
	size_t ndirs, dirs_cap;
	struct prev_file *files; /* by number */
	size_t nfiles, files_cap;
	struct slot *slots;
	size_t cap; /* a power of two */
	/* a CDXJ line's URL to its crawl key: shared by lookups, so locked */
	struct url *url;
	pthread_mutex_t url_lock;
	size_t key_cap; /* the longest crawl key + 1 */
	char *key;      /* a key being loaded (key_cap bytes) */
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

/* The crawl key of a CDXJ line's URL into key (cap bytes). 0, or -1 (not
 * an http(s) URL, too long). */
static int crawl_key(const struct previous *p, const char *url, char *key, size_t cap)
{
	struct previous *m = (struct previous *)p; /* the lock only */
	pthread_mutex_lock(&m->url_lock);
	enum url_error e = url_normalize(m->url, NULL, url, strlen(url), key, cap, NULL);
	pthread_mutex_unlock(&m->url_lock);
	return e == URL_OK ? 0 : -1;
}

/* The signature a CDXJ line files its capture under, or 0 and skipped (a
 * revisit, another status, robots.txt: counted) or -1 (bad: counted). */
static int cdxj_sig(struct previous *p, char *line, size_t len, uint64_t *sig)
{
	struct cdxj_fields c;
	if (cdxj_line_read(line, len, &c) != CDXJ_OK || c.url == NULL || c.filename == NULL ||
	    c.digest == NULL || !c.has_offset || !c.has_length || strlen(c.timestamp) < 14)
		return -1;
	if ((c.mime && strcmp(c.mime, "warc/revisit") == 0) || c.status == NULL ||
	    strcmp(c.status, "200") != 0 || !history_wanted(c.url)) {
		p->st.cdxj_skipped++;
		return 1;
	}
	if (crawl_key(p, c.url, p->key, p->key_cap) != 0)
		return -1;
	*sig = history_sig(p->key, strlen(p->key));
	return 0;
}

/* The signature a whole line (without its '\n') files its capture
 * under: 0; 1 when skipped (an index's line of no page); -1 when bad. */
static int line_sig(struct previous *p, bool cdxj, char *line, size_t len, uint64_t *sig)
{
	struct history_entry e;
	if (cdxj)
		return cdxj_sig(p, line, len, sig);
	if (history_parse(line, len, &e) != 0)
		return -1;
	*sig = e.sig;
	return 0;
}

/* Reads one file (number n) into the table. 0, or -1 (err). */
static int load_file(struct previous *p, const char *path, uint64_t n, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t at = 0, used = 0, lines = 0;
	bool cdxj = p->files[n].cdxj;
	int rc = -1;
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		uint64_t here = at, sig = 0;
		at += (uint64_t)len;
		lines++;
		/* a line cut short by a crash has no '\n': skipped */
		bool whole = line[len - 1] == '\n' && (size_t)len <= LINE_MAX_BYTES &&
		             here < LOC_OFFSET_MASK;
		int k = whole ? line_sig(p, cdxj, line, (size_t)len - 1, &sig) : -1;
		if (k < 0)
			p->st.bad_lines++;
		if (k != 0)
			continue;
		if (put(p, sig, n << LOC_FILE_SHIFT | (here + 1)) != 0) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto out;
		}
		used++;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		goto out;
	}
	p->st.lines += lines;
	if (cdxj && used == 0) {
		snprintf(err, errlen,
		         "%s: no capture of a page to recrawl against (%" PRIu64 " lines)", path,
		         lines);
		goto out;
	}
	rc = 0;
out:
	free(line);
	fclose(f);
	return rc;
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
		if (array_push_strndup(names, n, &cap, de->d_name, l, 16) != 0) {
			closedir(d);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	closedir(d);
	if (*n > 1)
		qsort(*names, *n, sizeof **names, array_strcmp);
	return 0;
}

/* Opens and loads one file of folder dir (its number in dirs). 0, or -1. */
static int add_file(struct previous *p, uint32_t dir, const char *name, bool cdxj, char *err,
                    size_t errlen)
{
	char path[PATH_MAX + 64];
	if (p->nfiles == MAX_FILES) {
		snprintf(err, errlen, "more than %u history files", MAX_FILES);
		return -1;
	}
	struct prev_file *g = array_grow(p->files, &p->files_cap, p->nfiles, sizeof *g, 16);
	if (g == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->files = g;
	if (name[0] == '/')
		snprintf(path, sizeof path, "%s", name);
	else
		snprintf(path, sizeof path, "%s/%s", p->dirs[dir], name);
	struct prev_file *f = &p->files[p->nfiles];
	*f = (struct prev_file){ .fd = open(path, O_RDONLY | O_CLOEXEC), .dir = dir, .cdxj = cdxj };
	if (f->fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	p->nfiles++;
	if (load_file(p, path, p->nfiles - 1, err, errlen) != 0)
		return -1;
	p->st.files++;
	if (cdxj)
		p->st.indexes++;
	return 0;
}

/* Enters folder dir (absolute, taken) into dirs: its number, or -1. */
static int add_dir(struct previous *p, char *dir, char *err, size_t errlen)
{
	char **g = array_grow(p->dirs, &p->dirs_cap, p->ndirs, sizeof *g, 4);
	if (g == NULL) {
		free(dir);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->dirs = g;
	p->dirs[p->ndirs] = dir;
	return (int)p->ndirs++;
}

/* Loads one earlier crawl: a folder (its histories, else its index), or
 * an index (its folder's histories when it has any). 0, or -1 (err). */
static int load_path(struct previous *p, const char *path, char *err, size_t errlen)
{
	struct stat sb;
	char **names = NULL, *real = realpath(path, NULL);
	size_t n = 0;
	int rc = -1;
	if (real == NULL || stat(real, &sb) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(real);
		return -1;
	}
	bool is_dir = S_ISDIR(sb.st_mode);
	const char *index = is_dir ? INDEX_NAME : strrchr(real, '/') + 1;
	char *dir = is_dir ? real : strndup(real, (size_t)(index - 1 - real));
	if (dir == NULL)
		snprintf(err, errlen, "out of memory");
	int d = dir ? add_dir(p, dir, err, errlen) : -1;
	if (d < 0 || list_histories(p->dirs[d], &names, &n, err, errlen) != 0)
		goto out;
	if (n > 0 && !is_dir)
		p->st.indexes_by_history++;
	for (size_t i = 0; i < n; i++)
		if (add_file(p, (uint32_t)d, names[i], false, err, errlen) != 0)
			goto out;
	if (n == 0 && is_dir) {
		char ip[PATH_MAX + 16];
		snprintf(ip, sizeof ip, "%s/%s", p->dirs[d], INDEX_NAME);
		if (access(ip, R_OK) != 0) {
			snprintf(err, errlen, "%s: no history (*.history) or %s to recrawl against",
			         path, INDEX_NAME);
			goto out;
		}
	}
	if (n == 0 && add_file(p, (uint32_t)d, index, true, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	if (!is_dir)
		free(real);
	ARRAY_FREE_EACH(names, n);
	return rc;
}

/* previous_open, refusing a path whose folder is own (absolute; NULL:
 * none). */
static int open_paths(const char *const *paths, size_t n, const struct url_options *url,
                      const char *own, struct previous **out, char *err, size_t errlen)
{
	struct previous *p = calloc(1, sizeof *p);
	*out = NULL;
	if (p != NULL)
		p->key_cap = (url && url->max_len ? url->max_len : URL_DEFAULT_MAX_LEN) + 1;
	if (p == NULL || (p->key = malloc(p->key_cap)) == NULL ||
	    (p->url = url_create(url)) == NULL) {
		snprintf(err, errlen, "out of memory");
		previous_destroy(p);
		return -1;
	}
	pthread_mutex_init(&p->url_lock, NULL);
	if (n == 0)
		snprintf(err, errlen, "no earlier crawl named");
	for (size_t i = 0; i < n; i++) {
		if (load_path(p, paths[i], err, errlen) != 0)
			n = 0;
		else if (own != NULL && strcmp(p->dirs[p->ndirs - 1], own) == 0) {
			snprintf(err, errlen, "%s is this crawl's own folder", paths[i]);
			n = 0;
		}
	}
	if (n == 0) {
		previous_destroy(p);
		return -1;
	}
	*out = p;
	return 0;
}

int previous_open(const char *const *paths, size_t n, const struct url_options *url,
                  struct previous **out, char *err, size_t errlen)
{
	return open_paths(paths, n, url, NULL, out, err, errlen);
}

int previous_open_list(const char *list, const struct url_options *url, const char *own_dir,
                       struct previous **out, char *err, size_t errlen)
{
	char *copy = strdup(list), *own = own_dir ? realpath(own_dir, NULL) : NULL;
	char *paths[PREVIOUS_MAX_PATHS];
	size_t n = copy ? previous_split(copy, paths, PREVIOUS_MAX_PATHS) : 0;
	int rc = -1;
	*out = NULL;
	if (copy == NULL)
		snprintf(err, errlen, "out of memory");
	else if (n > PREVIOUS_MAX_PATHS)
		snprintf(err, errlen, "more than %d earlier crawls", PREVIOUS_MAX_PATHS);
	else
		rc = open_paths((const char *const *)paths, n, url, own, out, err, errlen);
	free(copy);
	free(own);
	return rc;
}

void previous_destroy(struct previous *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nfiles; i++)
		close(p->files[i].fd);
	free(p->files);
	ARRAY_FREE_EACH(p->dirs, p->ndirs);
	free(p->slots);
	free(p->key);
	if (p->url != NULL) {
		url_destroy(p->url);
		pthread_mutex_destroy(&p->url_lock);
	}
	free(p);
}

void previous_stats(const struct previous *p, struct previous_stats *out)
{
	*out = p->st;
}

size_t previous_split(char *list, char **paths, size_t max)
{
	size_t n = 0;
	for (char *save = NULL, *s = strtok_r(list, PREVIOUS_SEPARATOR, &save); s != NULL;
	     s = strtok_r(NULL, PREVIOUS_SEPARATOR, &save)) {
		s = ascii_trim_cstr(s);
		if (s[0] == '\0')
			continue;
		if (n == max)
			return max + 1;
		paths[n++] = s;
	}
	return n;
}

/* The line at loc, read back into a new hit with room for extra bytes
 * after it; its length in *len. NULL if unreadable. */
static struct previous_hit *read_line(const struct previous *p, uint64_t loc, size_t extra,
                                      size_t *len)
{
	int fd = p->files[loc >> LOC_FILE_SHIFT].fd;
	off_t at = (off_t)((loc & LOC_OFFSET_MASK) - 1);
	size_t want = LINE_FIRST_READ;
	for (;;) {
		struct previous_hit *h = malloc(sizeof *h + want + extra + 1);
		ssize_t got = h ? pread(fd, h->buf, want, at) : -1;
		char *nl = got > 0 ? memchr(h->buf, '\n', (size_t)got) : NULL;
		if (nl != NULL) {
			*len = (size_t)(nl - h->buf);
			h->ref_id_buf[0] = '\0';
			return h;
		}
		free(h);
		if (got < (ssize_t)want || want >= LINE_MAX_BYTES)
			return NULL;
		want = LINE_MAX_BYTES;
	}
}

/* A capture of a CDXJ line (read into h->buf, len bytes) into h->e: the
 * crawl key after the line's room (at key, cap bytes), the date made from
 * the timestamp; no validators, no record id yet (previous_hit_complete).
 * 0, or -1 when it is not one. */
static int cdxj_entry(const struct previous *p, struct previous_hit *h, size_t len, char *key,
                      size_t cap)
{
	struct cdxj_fields c;
	const char *t;
	if (cdxj_line_read(h->buf, len, &c) != CDXJ_OK || c.url == NULL || c.filename == NULL ||
	    c.digest == NULL || strlen(c.timestamp) < 14 || crawl_key(p, c.url, key, cap) != 0)
		return -1;
	t = c.timestamp;
	snprintf(h->date_buf, sizeof h->date_buf, "%.4s-%.2s-%.2sT%.2s:%.2s:%.2sZ", t, t + 4, t + 6,
	         t + 8, t + 10, t + 12);
	if (strchr(c.digest, ':') == NULL)
		snprintf(h->digest_buf, sizeof h->digest_buf, "%s%s", DIGEST_DEFAULT_ALGO,
		         c.digest);
	else
		snprintf(h->digest_buf, sizeof h->digest_buf, "%s", c.digest);
	h->e = (struct history_entry){
		.sig = history_sig(key, strlen(key)),
		.date = h->date_buf,
		.file = c.filename,
		.offset = c.offset,
		.length = c.length,
		.ref_date = h->date_buf,
		.ref_digest = h->digest_buf,
		.ref_file = c.filename,
		.ref_offset = c.offset,
		.ref_uri = c.url,
		.url = key,
	};
	return 0;
}

/* The hit at loc, parsed; NULL if unreadable. */
static struct previous_hit *hit_at(const struct previous *p, uint64_t loc)
{
	size_t len;
	const struct prev_file *f = &p->files[loc >> LOC_FILE_SHIFT];
	const char *dir = p->dirs[f->dir];
	size_t dl = strlen(dir), key_cap = f->cdxj ? p->key_cap : 0;
	/* the payload file's path (DIR/NAME, or as written when absolute),
	 * then a CDXJ line's crawl key */
	struct previous_hit *h = read_line(p, loc, dl + 1 + PATH_MAX + key_cap, &len);
	char *path = h ? h->buf + len + 1 : NULL;
	if (h == NULL || (f->cdxj ? cdxj_entry(p, h, len, path + dl + 1 + PATH_MAX, key_cap)
	                          : history_parse(h->buf, len, &h->e)) != 0) {
		free(h);
		return NULL;
	}
	if (h->e.ref_file[0] == '/')
		snprintf(path, PATH_MAX, "%s", h->e.ref_file);
	else
		snprintf(path, dl + 1 + PATH_MAX, "%s/%s", dir, h->e.ref_file);
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

int previous_hit_complete(struct previous_hit *h)
{
	struct warc_reader *r = NULL;
	struct warc_record rec;
	int rc = -1;
	if (h->e.ref_id != NULL)
		return 0;
	if (warc_reader_open(h->ref_path, h->e.ref_offset, WARC_READER_HEADER_MAX, &r) != 0)
		return -1;
	warc_reader_read_size(r, LINE_MAX_BYTES);
	enum warc_read res = warc_reader_next(r, &rec);
	/* the capture the index names: a response of the URL, at that place */
	if ((res == WARC_READ_RECORD || res == WARC_READ_TOO_LARGE) && rec.type != NULL &&
	    strcmp(rec.type, "response") == 0 && rec.target_uri != NULL &&
	    strcmp(rec.target_uri, h->e.ref_uri) == 0 && rec.record_id != NULL &&
	    rec.date != NULL && strlen(rec.record_id) < sizeof h->ref_id_buf &&
	    strlen(rec.date) < sizeof h->date_buf) {
		memcpy(h->ref_id_buf, rec.record_id, strlen(rec.record_id) + 1);
		memcpy(h->date_buf, rec.date, strlen(rec.date) + 1);
		h->e.ref_id = h->ref_id_buf;
		rc = 0;
	}
	warc_reader_close(r);
	return rc;
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
