/*
 * crawl_tail.c: reading and replaying the tail of a crashed crawl (see
 * crawl_tail.h).
 */
#include "crawler/crawl_tail.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <zlib.h>

#include "crawler/config/config.h"
#include "crawler/crawl_outdir.h"
#include "crawler/crawl_writer.h"
#include "crawler/net/fetch.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/done_set.h"
#include "frontier/base/array.h"

#define READ_CHUNK (64u * 1024u)
#define WARC_HEADER_MAX (64u * 1024u) /* longer is not a record we wrote */
/* The payloads of the tail's last responses, for its revisit records
 * (whose payload is an earlier response's): at most this many, and bytes. */
#define PAYLOAD_CACHE_SLOTS 64u
#define PAYLOAD_CACHE_BYTES (8u * 1024u * 1024u)

struct cached_payload {
	char digest[64]; /* WARC-Payload-Digest; "" for an empty slot */
	uint8_t *data;
	size_t len;
};

struct crawl_tail {
	FILE *log;
	char *line;    /* the current line, CRAWL_TAIL_LINE_MAX + 1 bytes */
	char *scratch; /* its unescaped fields */
	/* WARC files from the checkpoint's on, by name */
	int warc;
	char dir[4096];
	char **files;
	size_t nfiles, next_file;
	uint64_t first_offset; /* where to start in files[0] */
	FILE *wf;
	z_stream z;
	int zinit;
	unsigned char in[READ_CHUNK];
	unsigned char *rec; /* one inflated record */
	size_t rec_len, rec_cap, max_record;
	/* the next response/revisit record, read and not yet matched */
	int pending, warc_done, pending_revisit;
	const char *pending_uri;
	const uint8_t *pending_body;
	size_t pending_body_len;
	char encoding[512];
	struct cached_payload cache[PAYLOAD_CACHE_SLOTS]; /* a ring, oldest at cache_next */
	size_t cache_next, cache_bytes;
	struct crawl_tail_entry e;
};

/* ---- the WARC side ---- */

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The crawl's WARC files named from `from` on, sorted (the names carry
 * the time they were opened). 0 or -1. */
static int list_warcs(struct crawl_tail *t, const char *from)
{
	DIR *d = opendir(t->dir);
	struct dirent *de;
	size_t cap = 0;
	int rc = 0;
	if (!d)
		return -1;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (!crawl_outdir_warc_from(de->d_name, from))
			continue;
		char **f = array_reserve(t->files, &cap, t->nfiles + 1, sizeof *f);
		char *name = strdup(de->d_name);
		if (!f || !name) {
			free(name);
			rc = -1;
			break;
		}
		t->files = f;
		t->files[t->nfiles++] = name;
	}
	closedir(d);
	if (rc == 0 && t->nfiles)
		qsort(t->files, t->nfiles, sizeof *t->files, by_name);
	if (rc == 0 && (!t->nfiles || strcmp(t->files[0], from) != 0))
		t->first_offset = 0; /* the checkpoint's file is gone: from the next one */
	return rc;
}

/* Opens the next WARC file at its start (or the checkpoint's offset). 1,
 * or 0 when there is none. */
static int open_next_file(struct crawl_tail *t)
{
	char path[4400];
	while (t->next_file < t->nfiles) {
		size_t i = t->next_file++;
		snprintf(path, sizeof path, "%s/%s", t->dir, t->files[i]);
		t->wf = fopen(path, "rb");
		if (!t->wf)
			continue;
		if (i == 0 && t->first_offset &&
		    fseeko(t->wf, (off_t)t->first_offset, SEEK_SET) != 0) {
			fclose(t->wf);
			t->wf = NULL;
			continue;
		}
		inflateReset(&t->z);
		t->z.avail_in = 0;
		return 1;
	}
	return 0;
}

/* Inflates the next gzip member of the current file into rec. 1, 0 at the
 * file's end or at a member that is torn, corrupt or too large, -1 out of
 * memory. */
static int read_member(struct crawl_tail *t)
{
	t->rec_len = 0;
	inflateReset(&t->z);
	for (;;) {
		if (t->z.avail_in == 0) {
			size_t n = fread(t->in, 1, sizeof t->in, t->wf);
			if (n == 0)
				return 0;
			t->z.next_in = t->in;
			t->z.avail_in = (uInt)n;
		}
		if (t->rec_len == t->rec_cap) {
			size_t cap = t->rec_cap ? 2 * t->rec_cap : 256u * 1024u;
			if (t->rec_cap >= t->max_record)
				return 0;
			if (cap > t->max_record)
				cap = t->max_record;
			unsigned char *r = realloc(t->rec, cap);
			if (!r)
				return -1;
			t->rec = r;
			t->rec_cap = cap;
		}
		t->z.next_out = t->rec + t->rec_len;
		t->z.avail_out = (uInt)(t->rec_cap - t->rec_len);
		int ret = inflate(&t->z, Z_NO_FLUSH);
		t->rec_len = t->rec_cap - t->z.avail_out;
		if (ret == Z_STREAM_END)
			return 1;
		if (ret != Z_OK && ret != Z_BUF_ERROR)
			return 0;
	}
}

/* The value of header name in the block [p, end) of lines, trimmed and
 * NUL-terminated in place (over its CR: the writer's WARC headers end
 * their lines in CRLF; a bare LF line loses its LF, so only the last call
 * on an HTTP block may meet one); NULL if absent. */
static char *header_value(char *p, char *end, const char *name)
{
	size_t n = strlen(name);
	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return NULL;
		if ((size_t)(eol - p) > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
			char *v = p + n + 1, *e = eol;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
				e--;
			*e = '\0';
			return v;
		}
		p = eol + 1;
	}
	return NULL;
}

/* Joins every Content-Encoding line of the HTTP header block, in order,
 * with ", " (as the fetch engine reports them) into t->encoding. */
static void join_encodings(struct crawl_tail *t, const char *p, const char *end)
{
	size_t len = 0;
	t->encoding[0] = '\0';
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		if (eol - p > 17 && strncasecmp(p, "Content-Encoding:", 17) == 0) {
			const char *v = p + 17, *e = eol;
			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
				e--;
			int k = snprintf(t->encoding + len, sizeof t->encoding - len, "%s%.*s",
			                 len ? ", " : "", (int)(e - v), v);
			if (k > 0 && (size_t)k < sizeof t->encoding - len)
				len += (size_t)k;
		}
		p = eol + 1;
	}
}

/* Undoes a chunked transfer coding in place: the decoded length, or
 * SIZE_MAX when the bytes are not a whole chunked body (then they are
 * taken as they are: the transfer coding was already removed). */
static size_t dechunk(uint8_t *b, size_t len)
{
	size_t in = 0, out = 0;
	for (;;) {
		uint64_t size = 0;
		int digits = 0;
		while (in < len && digits < 16 &&
		       ((b[in] >= '0' && b[in] <= '9') ||
		        ((b[in] | 0x20) >= 'a' && (b[in] | 0x20) <= 'f'))) {
			int c = b[in] | 0x20;
			size = size * 16 + (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
			in++;
			digits++;
		}
		const uint8_t *eol = in < len ? memchr(b + in, '\n', len - in) : NULL;
		if (!digits || !eol)
			return SIZE_MAX;
		in = (size_t)(eol - b) + 1;
		if (size == 0)
			return out;
		if (size > len - in || len - in - size < 2 || b[in + size] != '\r' ||
		    b[in + size + 1] != '\n')
			return SIZE_MAX;
		memmove(b + out, b + in, size);
		out += size;
		in += size + 2;
	}
}

/* The HTTP message of a response record: its payload and encoding. */
static void take_http(struct crawl_tail *t, uint8_t *block, size_t len)
{
	uint8_t *end = NULL;
	for (size_t i = 0; i + 4 <= len; i++)
		if (memcmp(block + i, "\r\n\r\n", 4) == 0) {
			end = block + i + 4;
			break;
		}
	if (!end) {
		t->pending_body = NULL;
		return;
	}
	join_encodings(t, (const char *)block, (const char *)end);
	t->pending_body = end;
	t->pending_body_len = len - (size_t)(end - block);
	char *te = header_value((char *)block, (char *)end, "Transfer-Encoding");
	if (te && strcasestr(te, "chunked")) {
		size_t n = dechunk(end, t->pending_body_len);
		if (n != SIZE_MAX)
			t->pending_body_len = n;
	}
}

static void cache_evict(struct crawl_tail *t, struct cached_payload *c)
{
	t->cache_bytes -= c->len;
	free(c->data);
	memset(c, 0, sizeof *c);
}

/* Keeps a copy of the pending response's payload under its digest (when
 * it fits; the oldest go first). */
static void cache_put(struct crawl_tail *t, const char *digest)
{
	size_t len = t->pending_body_len;
	if (!digest || !t->pending_body || strlen(digest) >= sizeof t->cache[0].digest ||
	    len > PAYLOAD_CACHE_BYTES / 4)
		return;
	struct cached_payload *c = &t->cache[t->cache_next];
	cache_evict(t, c);
	for (size_t k = 1; t->cache_bytes + len > PAYLOAD_CACHE_BYTES; k++)
		cache_evict(t, &t->cache[(t->cache_next + k) % PAYLOAD_CACHE_SLOTS]);
	if (!(c->data = malloc(len ? len : 1)))
		return;
	memcpy(c->data, t->pending_body, len);
	c->len = len;
	snprintf(c->digest, sizeof c->digest, "%s", digest);
	t->cache_bytes += len;
	t->cache_next = (t->cache_next + 1) % PAYLOAD_CACHE_SLOTS;
}

/* A revisit's payload: the cached one of its digest, if any. */
static void cache_get(struct crawl_tail *t, const char *digest)
{
	for (size_t i = 0; digest && i < PAYLOAD_CACHE_SLOTS; i++)
		if (t->cache[i].data && strcmp(t->cache[i].digest, digest) == 0) {
			t->pending_body = t->cache[i].data;
			t->pending_body_len = t->cache[i].len;
			return;
		}
}

/* Parses rec as a WARC record: 1 when it is a response or revisit record
 * (then pending is set), 0 for any other record, -1 when it is not a whole
 * record. */
static int take_record(struct crawl_tail *t)
{
	char *h = (char *)t->rec, *end = NULL;
	size_t lim = t->rec_len < WARC_HEADER_MAX ? t->rec_len : WARC_HEADER_MAX;
	for (size_t i = 0; i + 4 <= lim; i++)
		if (memcmp(h + i, "\r\n\r\n", 4) == 0) {
			end = h + i + 4;
			break;
		}
	if (!end || memcmp(h, "WARC/1.", 7) != 0)
		return -1;
	size_t hlen = (size_t)(end - h);
	char *type = header_value(h, end, "WARC-Type");
	char *uri = header_value(h, end, "WARC-Target-URI");
	char *cl = header_value(h, end, "Content-Length");
	char *stop = NULL;
	unsigned long long n = cl ? strtoull(cl, &stop, 10) : 0;
	if (!type || !cl || stop == cl || n > t->rec_len - hlen)
		return -1;
	if (!uri || (strcmp(type, "response") != 0 && strcmp(type, "revisit") != 0))
		return 0;
	t->pending = 1;
	t->pending_uri = uri;
	t->pending_revisit = strcmp(type, "revisit") == 0;
	t->pending_body = NULL;
	t->encoding[0] = '\0';
	char *digest = header_value(h, end, "WARC-Payload-Digest");
	if (t->pending_revisit) {
		/* headers only: its encoding, and the payload of the same digest */
		join_encodings(t, end, end + n);
		cache_get(t, digest);
	} else {
		take_http(t, (uint8_t *)end, (size_t)n);
		cache_put(t, digest);
	}
	return 1;
}

/* Reads up to the next response or revisit record (pending), across
 * files; at the end of the WARC output, warc_done. 0, or -1 out of memory. */
static int next_fetch_record(struct crawl_tail *t)
{
	while (!t->pending && !t->warc_done) {
		if (!t->wf && !open_next_file(t)) {
			t->warc_done = 1;
			break;
		}
		int r = read_member(t);
		if (r < 0)
			return -1;
		if (r == 0 || take_record(t) < 0) {
			/* this file ends (or is torn) here: on to the next */
			fclose(t->wf);
			t->wf = NULL;
		}
	}
	return 0;
}

/* ---- the log side ---- */

/* Reads one line into t->line. 1, 0 at the end (a last line without its
 * newline, or one too long, ends the tail). */
static int read_line(struct crawl_tail *t, size_t *len)
{
	if (!fgets(t->line, CRAWL_TAIL_LINE_MAX + 1, t->log))
		return 0;
	*len = strlen(t->line);
	if (*len == 0 || t->line[*len - 1] != '\n')
		return 0;
	t->line[--*len] = '\0';
	return 1;
}

static const char *field(const char **f, const size_t *fl, enum crawl_log_field i, char **p)
{
	const char *s = *p;
	*p = crawl_log_unescape(f[i], fl[i], *p);
	return *p ? s : NULL;
}

/* The line's fields into t->e; 0, or -1 when malformed. */
static int parse_line(struct crawl_tail *t, size_t len)
{
	const char *f[CRAWL_LOG_FIELDS];
	size_t fl[CRAWL_LOG_FIELDS];
	int64_t status, bytes, depth;
	char *p = t->scratch;
	struct crawl_tail_entry *e = &t->e;
	int nf = crawl_log_split(t->line, len, f, fl);
	if (nf < CRAWL_LOG_FIELDS - 1 ||
	    crawl_log_parse_i64(f[CRAWL_LOG_F_STATUS], fl[CRAWL_LOG_F_STATUS], &status) != 0 ||
	    crawl_log_parse_i64(f[CRAWL_LOG_F_BYTES], fl[CRAWL_LOG_F_BYTES], &bytes) != 0 ||
	    crawl_log_parse_i64(f[CRAWL_LOG_F_DEPTH], fl[CRAWL_LOG_F_DEPTH], &depth) != 0 ||
	    bytes < 0 || depth < 0 || depth > UINT32_MAX)
		return -1;
	memset(e, 0, sizeof *e);
	e->status = (long)status;
	e->bytes = (uint64_t)bytes;
	e->depth = (uint32_t)depth;
	e->robots = crawl_log_has_flag(f[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS], "robots");
	e->requeued = crawl_log_has_flag(f[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS], "requeued");
	if (!(e->url = field(f, fl, CRAWL_LOG_F_URL, &p)) ||
	    !(e->via = field(f, fl, CRAWL_LOG_F_VIA, &p)) ||
	    !(e->content_type = field(f, fl, CRAWL_LOG_F_CTYPE, &p)) ||
	    !(e->redirect = field(f, fl, CRAWL_LOG_F_REDIRECT, &p)) || !*e->url)
		return -1;
	return 0;
}

/* ---- the reader ---- */

int crawl_tail_open(const char *dir, const struct crawl_tail_pos *pos, int warc, size_t max_record,
                    struct crawl_tail **out, char *err, size_t errlen)
{
	char path[4400];
	struct crawl_tail *t;
	*out = NULL;
	if (!pos->known)
		return 1;
	snprintf(path, sizeof path, "%s/crawl.log", dir);
	t = calloc(1, sizeof *t);
	if (!t || !(t->line = malloc(CRAWL_TAIL_LINE_MAX + 1)) ||
	    !(t->scratch = malloc(CRAWL_TAIL_LINE_MAX + 1)) ||
	    inflateInit2(&t->z, 16 + MAX_WBITS) != Z_OK) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	t->zinit = 1;
	t->max_record = max_record;
	t->warc = warc;
	snprintf(t->dir, sizeof t->dir, "%s", dir);
	t->first_offset = pos->warc_offset;
	t->log = fopen(path, "r");
	if (!t->log || fseeko(t->log, 0, SEEK_END) != 0 ||
	    ftello(t->log) < (off_t)pos->log_offset) {
		crawl_tail_close(t);
		return 1; /* no log, or it ends before the cut: no tail */
	}
	if (fseeko(t->log, (off_t)pos->log_offset, SEEK_SET) != 0 ||
	    (t->warc && list_warcs(t, pos->warc_file) != 0)) {
		snprintf(err, errlen, "%s: %s", t->warc ? dir : path, strerror(errno));
		goto fail;
	}
	*out = t;
	return 0;
fail:
	crawl_tail_close(t);
	return -1;
}

/* The line's record, if the next one is: its payload into the entry. */
static int match_record(struct crawl_tail *t)
{
	struct crawl_tail_entry *e = &t->e;
	if (!t->warc || e->status <= 0)
		return 0;
	if (next_fetch_record(t) != 0)
		return -1;
	if (!t->pending || strcmp(t->pending_uri, e->url) != 0)
		return 0;
	t->pending = 0;
	e->revisit = t->pending_revisit;
	e->body = t->pending_body;
	e->body_len = t->pending_body_len;
	e->content_encoding = t->encoding[0] ? t->encoding : NULL;
	return 0;
}

int crawl_tail_next(struct crawl_tail *t, const struct crawl_tail_entry **e, char *err,
                    size_t errlen)
{
	size_t len;
	for (;;) {
		if (!read_line(t, &len))
			return 0;
		if (t->line[0] == '#')
			continue; /* a header line */
		if (parse_line(t, len) != 0)
			return 0;
		break;
	}
	if (match_record(t) != 0) {
		snprintf(err, errlen, "out of memory reading the WARC tail");
		return -1;
	}
	*e = &t->e;
	return 1;
}

void crawl_tail_close(struct crawl_tail *t)
{
	if (!t)
		return;
	if (t->log)
		fclose(t->log);
	if (t->wf)
		fclose(t->wf);
	if (t->zinit)
		inflateEnd(&t->z);
	ARRAY_FREE_EACH(t->files, t->nfiles);
	for (size_t i = 0; i < PAYLOAD_CACHE_SLOTS; i++)
		free(t->cache[i].data);
	free(t->rec);
	free(t->line);
	free(t->scratch);
	free(t);
}

/* ---- the replay ---- */

/* A WARC response record holds at most the body cap, the headers and the
 * record's own header block. */
#define RECORD_SLACK (4u * 1024u * 1024u)

static char *dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

/* The job of a replayed fetch: its URL, via and redirect for the sieve,
 * and, when parse, its payload. NULL if out of memory. */
static struct crawl_job *replay_job(const struct crawl_tail_entry *e, uint32_t host, int parse)
{
	struct crawl_job *j = calloc(1, sizeof *j);
	struct fetch_result *res = calloc(1, sizeof *res);
	if (!j || !res) {
		free(res);
		free(j);
		return NULL;
	}
	j->res = res;
	j->replayed = 1;
	j->host = host;
	j->depth = e->depth;
	j->parse = parse;
	j->via = strdup(e->via);
	res->url = strdup(e->url);
	res->status = e->status > 0 ? e->status : 0;
	res->content_type = dup_or_null(e->content_type);
	if (e->status >= 300 && e->status < 400)
		j->redirect = dup_or_null(e->redirect);
	if (parse) {
		res->content_encoding = dup_or_null(e->content_encoding);
		res->body.data = malloc(e->body_len ? e->body_len : 1);
		if (res->body.data) {
			memcpy(res->body.data, e->body, e->body_len);
			res->body.len = e->body_len;
		}
	}
	if (!j->via || !res->url || (parse && !res->body.data)) {
		crawl_job_free(j);
		return NULL;
	}
	return j;
}

/* One fetch of the tail: 1 replayed, 0 left to be fetched again, -1 out
 * of memory. */
static int replay_one(const struct crawl_tail_replay_parts *p, const struct crawl_tail_entry *e)
{
	const struct crawl_tail_hooks *h = &p->hooks;
	uint32_t host;
	int ok = !e->robots && e->status >= 200 && e->status < 300 && e->bytes > 0;
	int html = ok && fetch_type_is_html(e->content_type);
	if (e->status == -(long)FETCH_ERR_CANCELLED || e->requeued || (html && !e->body) ||
	    (ok && !html && p->crawl->sitemaps))
		return 0;
	if (h->count(h->ctx, e, &host) != 0)
		return 0;
	if (e->robots)
		return 1; /* not a frontier URL: its rules are all it leaves */
	if (done_set_add(p->done, e->url, strlen(e->url)) != 0)
		return -1;
	struct crawl_job *j = replay_job(e, host, html);
	if (!j)
		return -1;
	/* the loop is not running yet: what the sieve emits meanwhile is taken
	 * here, so its flush thread never waits on a full emit queue */
	while (h->submit(h->ctx, j) != 0) {
		h->drain(h->ctx);
		usleep(1000);
	}
	return 1;
}

int crawl_tail_replay(const struct crawl_tail_replay_parts *p, const struct crawl_tail_pos *pos,
                      struct crawl_tail_stats *out)
{
	struct crawl_tail *t = NULL;
	const struct crawl_tail_entry *e;
	char err[4600];
	size_t max_record = (size_t)p->fetch->max_body_bytes + RECORD_SLACK;
	int rc = crawl_tail_open(p->output->dir, pos, p->output->warc, max_record, &t, err,
	                         sizeof err);
	if (rc == 1)
		return 0;
	while (rc == 0 && (rc = crawl_tail_next(t, &e, err, sizeof err)) == 1) {
		int r = replay_one(p, e);
		if (r < 0) {
			snprintf(err, sizeof err, "out of memory");
			rc = -1;
			break;
		}
		out->replayed += r == 1;
		out->again += r == 0;
		rc = 0;
	}
	crawl_tail_close(t);
	if (rc < 0) {
		fprintf(stderr, "crawler crawl: resume: the tail after the checkpoint: %s\n", err);
		return -1;
	}
	if (!p->crawl->quiet)
		fprintf(stderr,
		        "crawler crawl: resume: %" PRIu64
		        " fetches after the checkpoint taken from "
		        "the WARC and crawl.log, %" PRIu64 " to fetch again\n",
		        out->replayed, out->again);
	return 0;
}
