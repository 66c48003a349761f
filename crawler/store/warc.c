/* warc.c: WARC 1.1 writer, one gzip member per record (see warc.h). */
#include "crawler/store/warc.h"

#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <libdeflate.h>

#include "crawler/store/cdxj.h"
#include "crawler/store/history.h"
#include "frontier/base/array.h"
#include "frontier/base/clock.h"
#include "frontier/base/header_field.h"

#define WARC_DEFAULT_MAX_FILE 1000000000ull
#define WARC_DEFAULT_DIGESTS 65536u
/* A record's WARC header block: room for three URLs of the longest a crawl
 * allows (max_url_len: target, via and a revisit's original) and the rest. */
#define WARC_HDR_CAP (32u * 1024u)
/* stdio's buffer of a WARC file: a fetch's records in one write */
#define WARC_STDIO_BUF (64u * 1024u)

/* ---------- SHA-1 through libcrypto ----------
 * Every record gets a block digest and every response body a payload digest
 * too, so the writer hashes each body twice: SHA-1 is the writer thread's
 * largest cost. OpenSSL's libcrypto (linked by libcurl anyway) uses the
 * CPU's SHA extensions when it has them; a portable C SHA-1 cannot. */

void warc_sha1(const void *data, size_t len, uint8_t out[20])
{
	unsigned int n = 0;
	if (EVP_Digest(len > 0 ? data : "", len, out, &n, EVP_sha1(), NULL) != 1 || n != 20)
		memset(out, 0, 20);
}

void warc_sha1_label(const uint8_t digest[20], char out[38])
{
	static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
	memcpy(out, "sha1:", 5);
	/* 160 bits = 32 base32 characters exactly, no padding. */
	size_t o = 5;
	for (int i = 0; i < 20; i += 5) {
		uint64_t v = 0;
		for (int j = 0; j < 5; j++)
			v = v << 8 | digest[i + j];
		for (int j = 7; j >= 0; j--)
			out[o++] = alphabet[(v >> (5 * j)) & 31];
	}
	out[o] = '\0';
}

/* ---------- digest table for revisits ---------- */

struct digest_entry {
	uint8_t digest[20];
	int32_t next; /* bucket chain, -1 ends */
	int used;
	char id[48]; /* <urn:uuid:...> */
	char date[32];
	char *url;
	uint32_t file_no; /* the record's file (warc_writer.names) */
	uint64_t offset;  /* and gzip member */
};

struct warc_writer {
	/* The configuration's strings, copied into `strings` at the end of the
	 * writer's own block; operator_info and user_agent may be NULL. */
	char *dir;
	char *prefix;
	char *software;
	char *operator_info;
	char *user_agent;
	uint64_t max_file_bytes;
	int level;
	bool no_revisits;

	FILE *f;
	char file[256];
	char **names; /* every file opened, by number (digest_entry.file_no) */
	size_t n_names, names_cap;
	uint64_t file_bytes;
	uint64_t file_records;
	unsigned serial;
	int first_error_errno;

	struct digest_entry *entries;
	size_t nentries;
	size_t ring_pos;
	int32_t *buckets;
	size_t nbuckets; /* power of two */

	struct warc_stats stats;

	/* libdeflate compresses whole buffers, about twice as fast as zlib at
	 * level 1 (the writer's largest CPU cost): a member is gathered at the
	 * start of `member` and compressed into the rest, grown to the largest
	 * record seen (bounded by the body limit). One compressor per level
	 * used. */
	struct libdeflate_compressor *packer; /* at `level` */
	struct libdeflate_compressor *storer; /* level 0: stored blocks */
	uint8_t *member;
	size_t member_cap;

	/* SHA-1, fetched once (an implicit fetch per digest costs a lookup). */
	EVP_MD *sha1;
	EVP_MD_CTX *md;

	uint8_t random[256]; /* for record ids; the last random_left unused */
	size_t random_left;

	/* The CDXJ index beside the current file (NULL: none, or cut short
	 * by a failed write); ix is NULL when indexing is off. */
	struct cdxj_indexer *ix;
	FILE *idx;
	/* The history beside the current file (NULL: none, or cut short). */
	bool history;
	FILE *hist;
	struct cdxj_text hline; /* the fetch's history line, until it is written */
	char strings[];
};

const char *warc_strerror(enum warc_error err)
{
	switch (err) {
	case WARC_OK: return "ok";
	case WARC_ERR_NOMEM: return "out of memory";
	case WARC_ERR_INVALID: return "invalid argument";
	case WARC_ERR_IO: return "i/o error";
	case WARC_ERR_ZLIB: return "compression error";
	}
	return "unknown error";
}

static size_t bucket_of(const struct warc_writer *w, const uint8_t d[20])
{
	uint64_t v;
	memcpy(&v, d, sizeof(v));
	return (size_t)(v & (w->nbuckets - 1));
}

static struct digest_entry *digest_find(struct warc_writer *w, const uint8_t d[20])
{
	for (int32_t i = w->buckets[bucket_of(w, d)]; i >= 0; i = w->entries[i].next)
		if (memcmp(w->entries[i].digest, d, 20) == 0)
			return &w->entries[i];
	return NULL;
}

static void digest_insert(struct warc_writer *w, const uint8_t d[20], const char *id,
                          const char *date, const char *url, uint64_t offset)
{
	struct digest_entry *e = &w->entries[w->ring_pos];
	int32_t idx = (int32_t)w->ring_pos;
	if (e->used) {
		/* Oldest entry: unlink it from its chain. */
		int32_t *pp = &w->buckets[bucket_of(w, e->digest)];
		while (*pp >= 0 && *pp != idx)
			pp = &w->entries[*pp].next;
		if (*pp == idx)
			*pp = e->next;
		free(e->url);
		e->url = NULL;
		e->used = 0;
	}
	size_t ul = strlen(url);
	if (ul > WARC_URL_KEEP)
		return; /* never referred to by a cut URL: its repeats go whole */
	e->url = malloc(ul + 1);
	if (e->url == NULL)
		return; /* best effort: no revisit for this one */
	memcpy(e->url, url, ul);
	e->url[ul] = '\0';
	memcpy(e->digest, d, 20);
	snprintf(e->id, sizeof(e->id), "%s", id);
	snprintf(e->date, sizeof(e->date), "%s", date);
	e->file_no = (uint32_t)(w->n_names - 1);
	e->offset = offset;
	e->used = 1;
	size_t b = bucket_of(w, d);
	e->next = w->buckets[b];
	w->buckets[b] = idx;
	w->ring_pos = (w->ring_pos + 1) % w->nentries;
}

/* ---------- records ---------- */

/* Random bytes for record ids, drawn from the kernel a block at a time
 * (one getrandom() per 16 records, not one per record). */
static void random_bytes(struct warc_writer *w, uint8_t *u, size_t len)
{
	if (w->random_left < len) {
		size_t got = 0;
		while (got < sizeof(w->random)) {
			ssize_t n = getrandom(w->random + got, sizeof(w->random) - got, 0);
			if (n <= 0) {
				/* Fall back to rand(): ids stay unique enough for one crawl. */
				for (; got < sizeof(w->random); got++)
					w->random[got] = (uint8_t)rand();
				break;
			}
			got += (size_t)n;
		}
		w->random_left = sizeof(w->random);
	}
	memcpy(u, w->random + sizeof(w->random) - w->random_left, len);
	w->random_left -= len;
}

static void make_uuid(struct warc_writer *w, char out[48])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t u[16];
	random_bytes(w, u, sizeof(u));
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
	/* <urn:uuid:8-4-4-4-12 hex digits>, without printf (two per response). */
	char *o = out;
	memcpy(o, "<urn:uuid:", 10);
	o += 10;
	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*o++ = '-';
		*o++ = hex[u[i] >> 4];
		*o++ = hex[u[i] & 0x0f];
	}
	*o++ = '>';
	*o = '\0';
}

struct piece {
	const void *data;
	size_t len;
};

/* Makes *buf hold at least need bytes (growing by doubling). */
static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 64 * 1024;
	uint8_t *b;
	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	b = realloc(*buf, c);
	if (b == NULL)
		return -1;
	*buf = b;
	*cap = c;
	return 0;
}

/* Writes one gzip member holding header + pieces + "\r\n\r\n". */
static enum warc_error write_member(struct warc_writer *w, int level, const char *hdr,
                                    size_t hdr_len, const struct piece *pieces, size_t npieces)
{
	struct libdeflate_compressor *c = level == 0 ? w->storer : w->packer;
	struct piece all[6];
	size_t n = 0, total = 0, k;
	enum warc_error rc = WARC_OK;
	all[n++] = (struct piece){ hdr, hdr_len };
	for (size_t i = 0; i < npieces && n < 5; i++)
		all[n++] = pieces[i];
	all[n++] = (struct piece){ "\r\n\r\n", 4 };
	for (size_t i = 0; i < n; i++)
		total += all[i].len;
	size_t bound = libdeflate_gzip_compress_bound(c, total);
	if (grow(&w->member, &w->member_cap, total + bound) != 0)
		return WARC_ERR_NOMEM;
	uint8_t *in = w->member, *out = w->member + total;
	total = 0;
	for (size_t i = 0; i < n; i++) {
		if (all[i].len > 0)
			memcpy(in + total, all[i].data, all[i].len);
		total += all[i].len;
	}
	k = libdeflate_gzip_compress(c, in, total, out, w->member_cap - total);
	if (k == 0)
		return WARC_ERR_ZLIB;
	if (fwrite(out, 1, k, w->f) != k) {
		w->first_error_errno = errno;
		rc = WARC_ERR_IO;
	} else {
		w->file_bytes += k;
		w->stats.bytes += k;
	}
	if (rc == WARC_OK) {
		w->file_records++;
		w->stats.records++;
	}
	return rc;
}

static enum warc_error write_warcinfo(struct warc_writer *w)
{
	char fields[2048];
	char hdr[4096];
	char id[48], date[32];
	int fl = snprintf(fields, sizeof(fields),
	                  "software: %s\r\nformat: WARC File Format 1.1\r\n"
	                  "conformsTo: http://iipc.github.io/warc-specifications/"
	                  "specifications/warc-format/warc-1.1/\r\n%s%s%s%s%s%s",
	                  w->software, w->operator_info ? "operator: " : "",
	                  w->operator_info ? w->operator_info : "", w->operator_info ? "\r\n" : "",
	                  w->user_agent ? "http-header-user-agent: " : "",
	                  w->user_agent ? w->user_agent : "", w->user_agent ? "\r\n" : "");
	if (fl < 0 || (size_t)fl >= sizeof(fields))
		return WARC_ERR_INVALID;
	make_uuid(w, id);
	wall_clock_text(wall_clock_unix_ms(), date);
	int hl = snprintf(hdr, sizeof(hdr),
	                  "WARC/1.1\r\nWARC-Type: warcinfo\r\nWARC-Record-ID: %s\r\n"
	                  "WARC-Date: %s\r\nWARC-Filename: %s\r\n"
	                  "Content-Type: application/warc-fields\r\n"
	                  "Content-Length: %d\r\n\r\n",
	                  id, date, w->file, fl);
	if (hl < 0 || (size_t)hl >= sizeof(hdr))
		return WARC_ERR_INVALID;
	struct piece p = { fields, (size_t)fl };
	return write_member(w, w->level, hdr, (size_t)hl, &p, 1);
}

/* Ends one of the current file's side files (the index, the history): a
 * write that fails only cuts it short (the index tools complete it from
 * the records), counted in *errors. */
static void side_close(FILE **fp, bool failed, uint64_t *errors)
{
	FILE *f = *fp;
	if (f == NULL)
		return;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		failed = true;
	if (fclose(f) != 0)
		failed = true;
	*fp = NULL;
	if (failed)
		(*errors)++;
}

static void index_close(struct warc_writer *w, bool failed)
{
	side_close(&w->idx, failed, &w->stats.index_errors);
}

static void history_close(struct warc_writer *w, bool failed)
{
	side_close(&w->hist, failed, &w->stats.history_errors);
}

/* Opens a side file of the file just opened: its name with suffix for
 * ".warc.gz". NULL (counted in *errors) when it cannot be. */
static FILE *side_open(struct warc_writer *w, const char *suffix, uint64_t *errors)
{
	char path[4096];
	size_t n = strlen(w->file);
	FILE *f = NULL;
	if (n < 8 || strcmp(w->file + n - 8, ".warc.gz") != 0 ||
	    snprintf(path, sizeof path, "%s/%.*s%s", w->dir, (int)(n - 8), w->file, suffix) >=
	            (int)sizeof path ||
	    (f = fopen(path, "w")) == NULL) {
		(*errors)++;
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, WARC_STDIO_BUF);
	return f;
}

static enum warc_error close_file(struct warc_writer *w)
{
	enum warc_error rc = WARC_OK;
	index_close(w, false);
	history_close(w, false);
	if (w->f == NULL)
		return WARC_OK;
	if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0)
		rc = WARC_ERR_IO;
	if (fclose(w->f) != 0)
		rc = WARC_ERR_IO;
	w->f = NULL;
	return rc;
}

/* Forgets everything written since the file was start bytes long: stdio's
 * buffer is dropped and the file cut back, so a fetch is in the file whole
 * or not at all (a full disk mid-record leaves no torn record). */
static void rollback(struct warc_writer *w, uint64_t start)
{
	int e = errno;
	__fpurge(w->f);
	if (ftruncate(fileno(w->f), (off_t)start) != 0 || fseeko(w->f, (off_t)start, SEEK_SET) != 0)
		clearerr(w->f);
	clearerr(w->f);
	w->stats.bytes -= w->file_bytes - start;
	w->file_bytes = start;
	errno = e;
}

static enum warc_error open_file(struct warc_writer *w)
{
	char stamp[32];
	char path[4096];
	time_t t = time(NULL);
	struct tm tm;
	char **names = array_grow(w->names, &w->names_cap, w->n_names, sizeof *names, 16);
	if (names == NULL)
		return WARC_ERR_NOMEM;
	w->names = names;
	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	/* The serial keeps names unique even within one second; on a clash
	 * with an existing file (a restart), move on to the next serial. */
	for (int tries = 0; tries < 100000; tries++) {
		int n = snprintf(w->file, sizeof(w->file), "%s-%s-%05u.warc.gz", w->prefix, stamp,
		                 w->serial);
		if (n < 0 || (size_t)n >= sizeof(w->file))
			return WARC_ERR_INVALID;
		n = snprintf(path, sizeof(path), "%s/%s", w->dir, w->file);
		if (n < 0 || (size_t)n >= sizeof(path))
			return WARC_ERR_INVALID;
		w->serial++;
		w->f = fopen(path, "wbx");
		if (w->f != NULL)
			break;
		if (errno != EEXIST) {
			w->first_error_errno = errno;
			return WARC_ERR_IO;
		}
	}
	if (w->f == NULL)
		return WARC_ERR_IO;
	/* A fetch's records (a page's are ~10 KB deflated) leave in the one
	 * write of its fflush, not in stdio's 4 KB pieces. */
	setvbuf(w->f, NULL, _IOFBF, WARC_STDIO_BUF);
	w->file_bytes = 0;
	w->file_records = 0;
	w->stats.files++;
	enum warc_error rc = write_warcinfo(w);
	if (rc == WARC_OK && fflush(w->f) != 0) {
		w->first_error_errno = errno;
		rc = WARC_ERR_IO;
	}
	if (rc == WARC_OK && (w->names[w->n_names] = strdup(w->file)) == NULL)
		rc = WARC_ERR_NOMEM;
	if (rc != WARC_OK) {
		/* no file without its warcinfo: the next write opens a new one */
		int e = w->first_error_errno;
		fclose(w->f);
		w->f = NULL;
		unlink(path);
		w->stats.files--;
		w->stats.bytes -= w->file_bytes;
		errno = e;
		return rc;
	}
	w->n_names++;
	if (w->ix != NULL)
		w->idx = side_open(w, ".cdxj", &w->stats.index_errors);
	if (w->history)
		w->hist = side_open(w, ".history", &w->stats.history_errors);
	return rc;
}

/* The writer with the configuration's strings (defaults for the prefix and
 * software) copied after it, in one block; NULL when out of memory. */
static struct warc_writer *writer_alloc(const struct warc_config *c)
{
	const char *src[] = { c->dir, c->prefix ? c->prefix : "crawl",
		              c->software ? c->software : "crawler/0.1", c->operator_info,
		              c->user_agent };
	size_t total = 0;
	for (size_t k = 0; k < 5; k++)
		total += src[k] ? strlen(src[k]) + 1 : 0;
	struct warc_writer *w = calloc(1, sizeof *w + total);
	if (w == NULL)
		return NULL;
	char **dst[] = { &w->dir, &w->prefix, &w->software, &w->operator_info, &w->user_agent };
	char *p = w->strings;
	for (size_t k = 0; k < 5; k++) {
		if (src[k] == NULL)
			continue;
		size_t n = strlen(src[k]) + 1;
		memcpy(p, src[k], n);
		*dst[k] = p;
		p += n;
	}
	return w;
}

enum warc_error warc_writer_open(const struct warc_config *config, struct warc_writer **out)
{
	enum warc_error rc = WARC_OK;
	struct warc_writer *w = NULL;
	if (out == NULL || config == NULL || config->dir == NULL)
		return WARC_ERR_INVALID;
	*out = NULL;
	if (config->prefix != NULL && (config->prefix[0] == '\0' || strchr(config->prefix, '/')))
		return WARC_ERR_INVALID;
	w = writer_alloc(config);
	if (w == NULL)
		return WARC_ERR_NOMEM;
	w->max_file_bytes = config->max_file_bytes ? config->max_file_bytes : WARC_DEFAULT_MAX_FILE;
	w->level = config->compression_level > 0 && config->compression_level <= 9
	                   ? config->compression_level
	                   : 6;
	w->no_revisits = config->no_revisits;
	w->history = config->history;
	w->nentries = config->digest_entries ? config->digest_entries : WARC_DEFAULT_DIGESTS;
	w->nbuckets = 1;
	while (w->nbuckets < w->nentries)
		w->nbuckets <<= 1;
	/* the ring and its hash buckets: one block */
	w->entries =
	        calloc(1, w->nentries * sizeof(*w->entries) + w->nbuckets * sizeof(*w->buckets));
	if (w->entries == NULL) {
		rc = WARC_ERR_NOMEM;
		goto out;
	}
	w->buckets = (int32_t *)(w->entries + w->nentries);
	for (size_t i = 0; i < w->nbuckets; i++)
		w->buckets[i] = -1;
	w->packer = libdeflate_alloc_compressor(w->level);
	w->storer = libdeflate_alloc_compressor(0);
	if (w->packer == NULL || w->storer == NULL) {
		rc = WARC_ERR_NOMEM;
		goto out;
	}
	if (config->cdxj && (w->ix = cdxj_indexer_create(config->max_url_len)) == NULL) {
		rc = WARC_ERR_NOMEM;
		goto out;
	}
	w->sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
	w->md = EVP_MD_CTX_new();
	if (w->sha1 == NULL || w->md == NULL) {
		rc = WARC_ERR_NOMEM;
		goto out;
	}
	rc = open_file(w);
	if (rc != WARC_OK)
		goto out;
	*out = w;
	w = NULL;
out:
	if (w != NULL)
		warc_writer_close(w);
	return rc;
}

/* Appends "Name: value\r\n" to hdr, failing when it does not fit. */
static int hdr_add(char *hdr, size_t cap, size_t *len, const char *name, const char *value)
{
	/* Values come from the web (URLs): strip CR/LF so a header cannot be
	 * injected. */
	size_t n = strlen(name);
	if (n + 2 >= cap - *len)
		return -1;
	memcpy(hdr + *len, name, n);
	memcpy(hdr + *len + n, ": ", 2);
	*len += n + 2;
	size_t vlen = strlen(value);
	if (*len + vlen + 3 > cap) /* the value, CR LF and NUL */
		return -1;
	char *d = hdr + *len;
	memcpy(d, value, vlen);
	for (char *q = memchr(d, '\r', vlen); q != NULL;
	     q = memchr(q, '\r', (size_t)(d + vlen - q)))
		*q = ' ';
	for (char *q = memchr(d, '\n', vlen); q != NULL;
	     q = memchr(q, '\n', (size_t)(d + vlen - q)))
		*q = ' ';
	*len += vlen;
	hdr[(*len)++] = '\r';
	hdr[(*len)++] = '\n';
	hdr[*len] = '\0';
	return 0;
}

/* SHA-1 of the concatenated pieces into d. */
static enum warc_error digest_pieces(struct warc_writer *w, const struct piece *pieces,
                                     size_t npieces, uint8_t d[20])
{
	if (EVP_DigestInit_ex(w->md, w->sha1, NULL) != 1)
		return WARC_ERR_NOMEM;
	for (size_t i = 0; i < npieces; i++)
		if (pieces[i].len > 0 &&
		    EVP_DigestUpdate(w->md, pieces[i].data, pieces[i].len) != 1)
			return WARC_ERR_NOMEM;
	if (EVP_DigestFinal_ex(w->md, d, NULL) != 1)
		return WARC_ERR_NOMEM;
	return WARC_OK;
}

static enum warc_error write_record(struct warc_writer *w, const char *type, const char *id,
                                    const char *date, const struct warc_fetch *f,
                                    const char *extra_names[], const char *extra_values[],
                                    size_t nextra, const char *content_type, int level,
                                    const struct piece *pieces, size_t npieces)
{
	char hdr[WARC_HDR_CAP];
	size_t len = 0;
	uint8_t d[20];
	char label[38];
	char num[32];
	uint64_t total = 0;

	for (size_t i = 0; i < npieces; i++)
		total += pieces[i].len;
	enum warc_error drc = digest_pieces(w, pieces, npieces, d);
	if (drc != WARC_OK)
		return drc;
	warc_sha1_label(d, label);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)total);
	hdr[0] = '\0';
	int bad = 0;
	len = (size_t)snprintf(hdr, sizeof(hdr), "WARC/1.1\r\n");
	bad |= hdr_add(hdr, sizeof(hdr), &len, "WARC-Type", type);
	bad |= hdr_add(hdr, sizeof(hdr), &len, "WARC-Record-ID", id);
	bad |= hdr_add(hdr, sizeof(hdr), &len, "WARC-Date", date);
	bad |= hdr_add(hdr, sizeof(hdr), &len, "WARC-Target-URI", f->url);
	if (f->ip != NULL && f->ip[0] != '\0')
		bad |= hdr_add(hdr, sizeof(hdr), &len, "WARC-IP-Address", f->ip);
	bad |= hdr_add(hdr, sizeof(hdr), &len, "WARC-Protocol", f->http2 ? "h2" : "http/1.1");
	for (size_t i = 0; i < nextra; i++)
		bad |= hdr_add(hdr, sizeof(hdr), &len, extra_names[i], extra_values[i]);
	for (size_t i = 0; f->fields && i < f->nfields; i++)
		bad |= hdr_add(hdr, sizeof(hdr), &len, f->fields[i].name, f->fields[i].value);
	bad |= hdr_add(hdr, sizeof(hdr), &len, "Content-Type", content_type);
	bad |= hdr_add(hdr, sizeof(hdr), &len, "WARC-Block-Digest", label);
	bad |= hdr_add(hdr, sizeof(hdr), &len, "Content-Length", num);
	if (bad || len + 3 > sizeof(hdr))
		return WARC_ERR_INVALID;
	hdr[len++] = '\r';
	hdr[len++] = '\n';
	hdr[len] = '\0';
	return write_member(w, level, hdr, len, pieces, npieces);
}

/* An HTTP/2 header block as HTTP/1.1: the version token of its first
 * line ("HTTP/2 200 ..." of a response, "GET /p HTTP/2" of a request)
 * becomes HTTP/1.1, the rest is kept byte for byte. *out is a new buffer
 * the caller frees, or NULL when the block needs no change. */
static enum warc_error h2_block_as_http11(const uint8_t *h, size_t len, uint8_t **out,
                                          size_t *out_len)
{
	static const char v2[] = "HTTP/2", v11[] = "HTTP/1.1";
	const size_t n2 = sizeof(v2) - 1, n11 = sizeof(v11) - 1;
	size_t at;
	*out = NULL;
	const uint8_t *eol = h != NULL ? memchr(h, '\n', len) : NULL;
	if (eol == NULL)
		return WARC_OK;
	size_t line = (size_t)(eol - h);
	if (line > 0 && h[line - 1] == '\r')
		line--;
	if (line > n2 && memcmp(h, v2, n2) == 0 && h[n2] == ' ')
		at = 0; /* status line */
	else if (line > n2 && memcmp(h + line - n2, v2, n2) == 0 && h[line - n2 - 1] == ' ')
		at = line - n2; /* request line */
	else
		return WARC_OK;
	*out_len = len - n2 + n11;
	*out = malloc(*out_len);
	if (*out == NULL)
		return WARC_ERR_NOMEM;
	memcpy(*out, h, at);
	memcpy(*out + at, v11, n11);
	memcpy(*out + at + n11, h + at + n2, len - at - n2);
	return WARC_OK;
}

/* A response header block that describes the body as stored. libcurl
 * removes the chunked transfer coding, so a block that said
 * "Transfer-Encoding: chunked" would make a reader de-chunk bytes that are
 * not chunked. Each Transfer-Encoding line is kept renamed
 * X-Crawler-Transfer-Encoding, a Content-Length beside it (which HTTP says
 * to ignore then) X-Crawler-Content-Length, and "Content-Length: body_len"
 * goes before the blank line. *out is a new buffer the caller frees, or
 * NULL when the block has no Transfer-Encoding. */
static enum warc_error block_as_stored(const uint8_t *h, size_t len, uint64_t body_len,
                                       uint8_t **out, size_t *out_len)
{
	static const char pfx[] = "X-Crawler-";
	const size_t np = sizeof(pfx) - 1;
	const uint8_t *end = h != NULL ? h + len : NULL;
	size_t te = 0, cl = 0, at = 0;
	char add[48];
	*out = NULL;
	for (const uint8_t *l = h; l != NULL && l < end;) {
		const uint8_t *nl = memchr(l, '\n', (size_t)(end - l));
		const uint8_t *le = nl != NULL ? nl + 1 : end;
		te += header_field_is((const char *)l, (const char *)le, "Transfer-Encoding");
		cl += header_field_is((const char *)l, (const char *)le, "Content-Length");
		l = le;
	}
	if (te == 0)
		return WARC_OK;
	int an = snprintf(add, sizeof(add), "Content-Length: %llu\r\n",
	                  (unsigned long long)body_len);
	*out_len = len + (te + cl) * np + (size_t)an;
	*out = malloc(*out_len);
	if (*out == NULL)
		return WARC_ERR_NOMEM;
	for (const uint8_t *l = h; l < end;) {
		const uint8_t *nl = memchr(l, '\n', (size_t)(end - l));
		const uint8_t *le = nl != NULL ? nl + 1 : end;
		int blank = le - l <= 2 && (l[0] == '\r' || l[0] == '\n');
		if (blank) {
			memcpy(*out + at, add, (size_t)an);
			at += (size_t)an;
		} else if (header_field_is((const char *)l, (const char *)le,
		                           "Transfer-Encoding") ||
		           header_field_is((const char *)l, (const char *)le, "Content-Length")) {
			memcpy(*out + at, pfx, np);
			at += np;
		}
		memcpy(*out + at, l, (size_t)(le - l));
		at += (size_t)(le - l);
		l = le;
	}
	*out_len = at; /* a block cut before its blank line gets no Content-Length */
	return WARC_OK;
}

/* What one fetch's records turned out to be, for its index and history
 * lines and for the digest table. */
enum fetch_kind {
	FETCH_RESPONSE,        /* a response record */
	FETCH_REVISIT_CRAWL,   /* a revisit of a payload this crawl wrote */
	FETCH_REVISIT_EARLIER, /* a revisit of the URL's earlier capture, same payload */
	FETCH_NOT_MODIFIED,    /* a 304 to the earlier capture's validators */
};

struct fetch_out {
	enum fetch_kind kind;
	int status;                      /* the response's HTTP status, 0 if none */
	uint64_t resp_at;                /* the response (or revisit) record's offset */
	char resp_id[48];                /* its WARC-Record-ID */
	char date[32];                   /* the fetch's WARC-Date */
	uint8_t pd[20];                  /* the payload's SHA-1 */
	char plabel[38];                 /* as WARC-Payload-Digest */
	bool remember;                   /* a new payload for the digest table */
	const struct digest_entry *prev; /* FETCH_REVISIT_CRAWL's original */
};

/* The status code of an HTTP header block's first line, 0 if none. */
static int http_status(const void *h, size_t len)
{
	const char *p = h, *end = p != NULL ? p + len : NULL;
	int v = 0, digits = 0;
	if (p == NULL || len < 5 || memcmp(p, "HTTP/", 5) != 0)
		return 0;
	while (p < end && *p != ' ' && *p != '\n')
		p++;
	while (p < end && *p == ' ')
		p++;
	for (; p < end && *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
		v = v * 10 + (*p - '0');
	return digits == 3 ? v : 0;
}

/* The record holding a fetch's payload: its own response, or the
 * original a revisit names. */
struct original {
	const char *id, *date, *digest, *file, *uri;
	uint64_t offset; /* its gzip member in file */
};

static void original_of(const struct warc_writer *w, const struct warc_fetch *f,
                        const struct fetch_out *o, struct original *g)
{
	const struct warc_refer *r = f->refer;
	const struct digest_entry *e = o->prev;
	switch (o->kind) {
	case FETCH_RESPONSE:
		*g =
		        (struct original){ o->resp_id, o->date, o->plabel,
			                   w->file,    f->url,  o->resp_at };
		break;
	case FETCH_NOT_MODIFIED:
	case FETCH_REVISIT_EARLIER: /* the same digest: kind_of compared them */
		*g = (struct original){ r->record_id, r->date,       r->digest,
			                r->file,      r->target_uri, r->offset };
		break;
	case FETCH_REVISIT_CRAWL:
		*g = (struct original){ e->id,  e->date,  o->plabel, w->names[e->file_no],
			                e->url, e->offset };
		break;
	}
}

/* The revisit record of a fetch: its header block only, naming its
 * original g (profile: the last part of the WARC-Profile URL). */
static enum warc_error write_revisit(struct warc_writer *w, const struct warc_fetch *f,
                                     const struct fetch_out *o, const char *req_id,
                                     const char *profile, const struct original *g)
{
	char container[4200], prof[96];
	if (history_container(g->file, g->offset, container, sizeof container) != 0)
		return WARC_ERR_INVALID;
	snprintf(prof, sizeof prof, "http://netpreserve.org/warc/1.1/revisit/%s", profile);
	const char *names[] = {
		"WARC-Concurrent-To",      "WARC-Payload-Digest",       "WARC-Profile",
		"WARC-Refers-To",          "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date",
		"WARC-Refers-To-Container"
	};
	const char *values[] = { req_id, g->digest, prof, g->id, g->uri, g->date, container };
	size_t skip = (f->request_headers && f->request_len) ? 0 : 1;
	struct piece head = { f->response_headers, f->response_headers_len };
	/* The profile says the payload is elsewhere: the HTTP headers only. */
	return write_record(w, "revisit", o->resp_id, o->date, f, names + skip, values + skip,
	                    7 - skip, "application/http; msgtype=response", w->level, &head, 1);
}

/* What the fetch is to be written as (see enum fetch_kind). */
static enum fetch_kind kind_of(struct warc_writer *w, const struct warc_fetch *f,
                               struct fetch_out *o)
{
	bool whole = f->body_len > 0 && !f->truncated;
	const struct warc_refer *r = f->refer;
	o->prev = NULL;
	/* a revisit's header block must fit (WARC_HDR_CAP), as the
	 * digest table's URLs do: else the fetch is written whole */
	if (r != NULL && r->record_id && r->date && r->target_uri && r->digest && r->file &&
	    strlen(r->target_uri) <= WARC_URL_KEEP && strlen(r->file) <= WARC_URL_KEEP) {
		if (o->status == 304)
			return FETCH_NOT_MODIFIED;
		if (o->status == 200 && whole && strcmp(r->digest, o->plabel) == 0)
			return FETCH_REVISIT_EARLIER;
	}
	if (!w->no_revisits && whole)
		o->prev = digest_find(w, o->pd);
	return o->prev != NULL ? FETCH_REVISIT_CRAWL : FETCH_RESPONSE;
}

/* The response record of a fetch (its payload new to the crawl). */
static enum warc_error write_response(struct warc_writer *w, const struct warc_fetch *f,
                                      struct fetch_out *o, const char *req_id)
{
	const char *nm[3], *vl[3];
	size_t k = 0;
	if (f->request_headers && f->request_len) {
		nm[k] = "WARC-Concurrent-To";
		vl[k++] = req_id;
	}
	nm[k] = "WARC-Payload-Digest";
	vl[k++] = o->plabel;
	if (f->truncated) {
		nm[k] = "WARC-Truncated";
		vl[k++] = "length";
	}
	struct piece pieces[2] = { { f->response_headers, f->response_headers_len },
		                   { f->body, f->body_len } };
	/* A payload compressed already would cost a deflate pass for nothing:
	 * its member is stored (level 0: still a gzip member, any reader reads it). */
	enum warc_error rc = write_record(w, "response", o->resp_id, o->date, f, nm, vl, k,
	                                  "application/http; msgtype=response",
	                                  f->incompressible ? 0 : w->level, pieces, 2);
	if (rc == WARC_OK) {
		w->stats.responses++;
		o->remember = !w->no_revisits && f->body_len > 0 && !f->truncated;
	}
	return rc;
}

/* The records of one fetch (warc_writer_write_fetch makes it all or
 * nothing). A response to remember for revisits is said in o->remember;
 * the caller enters it once the fetch is safely in the file. */
static enum warc_error write_fetch_records(struct warc_writer *w, const struct warc_fetch *f,
                                           struct fetch_out *o)
{
	enum warc_error rc = WARC_OK;
	char req_id[48];

	o->remember = false;
	make_uuid(w, req_id);
	make_uuid(w, o->resp_id);
	wall_clock_text(f->date_unix_ms, o->date);
	struct piece body = { f->body, f->body_len };
	rc = digest_pieces(w, &body, 1, o->pd);
	if (rc != WARC_OK)
		return rc;
	warc_sha1_label(o->pd, o->plabel);
	o->status = http_status(f->response_headers, f->response_headers_len);

	if (f->request_headers != NULL && f->request_len > 0) {
		const char *names[] = { "WARC-Concurrent-To" };
		const char *values[] = { o->resp_id };
		struct piece p = { f->request_headers, f->request_len };
		struct warc_fetch req = *f;
		req.fields = NULL; /* the caller's fields go with the response */
		rc = write_record(w, "request", req_id, o->date, &req, names, values, 1,
		                  "application/http; msgtype=request", w->level, &p, 1);
		if (rc != WARC_OK)
			return rc;
	}
	o->resp_at = w->file_bytes;
	o->kind = kind_of(w, f, o);
	if (o->kind == FETCH_RESPONSE)
		return write_response(w, f, o, req_id);
	struct original g;
	original_of(w, f, o, &g);
	rc = write_revisit(w, f, o, req_id,
	                   o->kind == FETCH_NOT_MODIFIED ? "server-not-modified"
	                                                 : "identical-payload-digest",
	                   &g);
	if (rc == WARC_OK) {
		w->stats.revisits++;
		w->stats.revisits_not_modified += o->kind == FETCH_NOT_MODIFIED;
		w->stats.revisits_earlier += o->kind == FETCH_REVISIT_EARLIER;
	}
	return rc;
}

/* The index line of the fetch's response (or revisit) record, which runs
 * from o->resp_at to the end of the file; NULL when the file has no index
 * or the line cannot be made (the index is then cut short). */
static const char *index_line(struct warc_writer *w, const struct warc_fetch *f,
                              const struct fetch_out *o, size_t *len)
{
	const char *line = NULL;
	bool revisit = o->kind != FETCH_RESPONSE;
	const char *digest = o->kind == FETCH_NOT_MODIFIED ? f->refer->digest : o->plabel;
	if (w->idx == NULL)
		return NULL;
	struct cdxj_record r = {
		.type = revisit ? "revisit" : "response",
		.type_len = revisit ? 7 : 8,
		.url = f->url,
		.url_len = strlen(f->url),
		.date = o->date,
		.date_len = strlen(o->date),
		.payload_digest = digest,
		.payload_digest_len = strlen(digest),
		.content_type = "application/http; msgtype=response",
		.content_type_len = 34,
		.block = f->response_headers,
		.block_len = f->response_headers_len,
		.block2 = revisit ? NULL : f->body,
		.block2_len = revisit ? 0 : f->body_len,
		.offset = o->resp_at,
		.length = w->file_bytes - o->resp_at,
		.filename = w->file,
	};
	if (cdxj_indexer_line(w->ix, &r, &line, len) != CDXJ_OK)
		index_close(w, true);
	return line;
}

/* The fetch's history line into w->hline ("" when it gets none: not a
 * page's capture, or no history beside the file). */
static void history_line_make(struct warc_writer *w, const struct warc_fetch *f,
                              const struct fetch_out *o)
{
	char etag[HISTORY_VALIDATOR_MAX + 1], lm[HISTORY_VALIDATOR_MAX + 1];
	const struct warc_refer *r = f->refer;
	w->hline.len = 0;
	/* a page's capture: a 200 (written whole or as a revisit), or a 304
	 * to the earlier capture's validators */
	if (w->hist == NULL || !f->history || !history_wanted(f->url) ||
	    o->status != (o->kind == FETCH_NOT_MODIFIED ? 304 : 200))
		return;
	history_validators(f->response_headers, f->response_headers_len, etag, lm);
	if (o->kind == FETCH_NOT_MODIFIED && !etag[0] && !lm[0]) {
		snprintf(etag, sizeof etag, "%s", r->etag ? r->etag : "");
		snprintf(lm, sizeof lm, "%s", r->last_modified ? r->last_modified : "");
	}
	struct history_entry h = {
		.sig = history_sig(f->url, strlen(f->url)),
		.date = o->date,
		.file = w->file,
		.offset = o->resp_at,
		.length = w->file_bytes - o->resp_at,
		.depth = f->depth,
		.has_depth = true,
		.etag = etag,
		.last_modified = lm,
		.url = f->url,
	};
	struct original g;
	original_of(w, f, o, &g);
	h.ref_id = g.id;
	h.ref_date = g.date;
	h.ref_digest = g.digest;
	h.ref_file = g.file;
	h.ref_offset = g.offset;
	h.ref_uri = g.uri;
	if (history_line(&w->hline, &h) < 0)
		history_close(w, true);
}

/* Appends a line made for the fetch to its side file once the fetch's
 * records are in the file; a write that fails cuts the side file short. */
static void side_append(FILE **fp, const char *line, size_t len, uint64_t *lines, uint64_t *errors)
{
	if (line == NULL || len == 0 || *fp == NULL)
		return;
	if (fwrite(line, 1, len, *fp) != len)
		side_close(fp, true, errors);
	else
		(*lines)++;
}

enum warc_error warc_writer_write_fetch(struct warc_writer *w, const struct warc_fetch *f,
                                        struct warc_position *where, bool *revisit)
{
	enum warc_error rc = WARC_OK;
	struct fetch_out o = { 0 };
	const char *line = NULL;
	size_t line_len = 0;

	if (revisit != NULL)
		*revisit = false;
	if (w == NULL || f == NULL || f->url == NULL || f->url[0] == '\0')
		return WARC_ERR_INVALID;
	if (w->f != NULL && w->file_bytes >= w->max_file_bytes && w->file_records > 1) {
		rc = close_file(w);
		if (rc != WARC_OK)
			return rc;
	}
	if (w->f == NULL) {
		rc = open_file(w);
		if (rc != WARC_OK)
			return rc;
	}
	/* All or nothing (see rollback): where this fetch's records start. */
	uint64_t start = w->file_bytes;
	struct warc_stats saved = w->stats;
	uint64_t saved_records = w->file_records;
	struct warc_fetch f11 = *f;
	uint8_t *req11 = NULL, *resp11 = NULL;
	if (f->http2) {
		rc = h2_block_as_http11(f->request_headers, f->request_len, &req11,
		                        &f11.request_len);
		if (rc == WARC_OK)
			rc = h2_block_as_http11(f->response_headers, f->response_headers_len,
			                        &resp11, &f11.response_headers_len);
		if (req11 != NULL)
			f11.request_headers = req11;
		if (resp11 != NULL)
			f11.response_headers = resp11;
	}
	uint8_t *stored = NULL;
	if (rc == WARC_OK)
		rc = block_as_stored(f11.response_headers, f11.response_headers_len, f11.body_len,
		                     &stored, &f11.response_headers_len);
	if (stored != NULL)
		f11.response_headers = stored;
	if (rc == WARC_OK)
		rc = write_fetch_records(w, &f11, &o);
	if (rc == WARC_OK) {
		line = index_line(w, &f11, &o, &line_len);
		history_line_make(w, &f11, &o);
	}
	free(req11);
	free(resp11);
	free(stored);
	if (rc == WARC_OK && fflush(w->f) != 0) {
		w->first_error_errno = errno;
		rc = WARC_ERR_IO;
	}
	if (rc != WARC_OK) {
		rollback(w, start);
		w->stats = saved;
		w->file_records = saved_records;
		errno = w->first_error_errno;
		return rc;
	}
	if (where != NULL) {
		snprintf(where->file, sizeof(where->file), "%s", w->file);
		where->offset = o.resp_at;
	}
	if (revisit != NULL)
		*revisit = o.kind != FETCH_RESPONSE;
	/* the lines only once their records are in the file */
	side_append(&w->idx, line, line_len, &w->stats.index_lines, &w->stats.index_errors);
	side_append(&w->hist, w->hline.p, w->hline.len, &w->stats.history_lines,
	            &w->stats.history_errors);
	/* only now: a rolled-back record must not be referred to by revisits */
	if (o.remember)
		digest_insert(w, o.pd, o.resp_id, o.date, f->url, o.resp_at);
	return rc;
}

enum warc_error warc_writer_sync(struct warc_writer *w)
{
	if (w == NULL)
		return WARC_ERR_INVALID;
	if (w->f == NULL) /* between files: everything written was synced at close */
		return WARC_OK;
	if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0)
		return WARC_ERR_IO;
	if (w->idx != NULL && fflush(w->idx) != 0)
		index_close(w, true);
	if (w->hist != NULL && fflush(w->hist) != 0)
		history_close(w, true);
	return WARC_OK;
}

void warc_writer_position(const struct warc_writer *w, struct warc_position *out)
{
	snprintf(out->file, sizeof(out->file), "%s", w->file);
	out->offset = w->file_bytes;
}

void warc_writer_stats(const struct warc_writer *w, struct warc_stats *out)
{
	*out = w->stats;
}

enum warc_error warc_writer_close(struct warc_writer *w)
{
	if (w == NULL)
		return WARC_OK;
	enum warc_error rc = close_file(w);
	libdeflate_free_compressor(w->packer);
	libdeflate_free_compressor(w->storer);
	free(w->member);
	EVP_MD_CTX_free(w->md);
	EVP_MD_free(w->sha1);
	cdxj_indexer_destroy(w->ix);
	if (w->entries != NULL)
		for (size_t i = 0; i < w->nentries; i++)
			free(w->entries[i].url);
	ARRAY_FREE_EACH(w->names, w->n_names);
	cdxj_text_free(&w->hline);
	free(w->entries); /* and the buckets */
	free(w);
	return rc;
}
