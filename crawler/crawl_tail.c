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
#include <time.h>
#include <unistd.h>

#include "crawler/archive/lookup.h"
#include "crawler/config/config.h"
#include "crawler/crawl_outdir.h"
#include "crawler/crawl_writer.h"
#include "crawler/net/fetch.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/done_set.h"
#include "crawler/store/warc_reader.h"
#include "frontier/base/array.h"
#include "frontier/base/header_field.h"

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
	uint64_t first_offset;  /* where to start in files[0] */
	struct warc_reader *wr; /* of the current file */
	size_t max_record;
	struct archive_lookup *lookup; /* index.cdxj, or NULL */
	/* the next response/revisit record, read (into wr) and not yet matched */
	int pending, warc_done, pending_revisit;
	struct warc_record pending_rec; /* its fields, valid until wr's next read */
	/* the log: read to its end (the records left are recovered), or ended
	 * by a line it cannot take (the tail ends there) */
	int log_done, log_broken;
	const char *pending_uri;
	const uint8_t *pending_body;
	size_t pending_body_len;
	char encoding[512]; /* of its HTTP header block, joined */
	/* lines skipped as over CRAWL_TAIL_LINE_MAX, all told and since the
	 * last line matched against the WARC (their records are passed over) */
	uint64_t lines_skipped;
	size_t unmatched_skips;
	struct cached_payload cache[PAYLOAD_CACHE_SLOTS]; /* a ring, oldest at cache_next */
	size_t cache_next, cache_bytes;
	struct crawl_tail_entry e;
};

/* ---- the WARC side ---- */

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
		qsort(t->files, t->nfiles, sizeof *t->files, array_strcmp);
	if (rc == 0 && (!t->nfiles || strcmp(t->files[0], from) != 0))
		t->first_offset = 0; /* the checkpoint's file is gone: from the next one */
	return rc;
}

/* Opens the next WARC file at its start (or the checkpoint's offset). 1,
 * 0 when there is none, -1 out of memory. */
static int open_next_file(struct crawl_tail *t)
{
	char path[4400];
	while (t->next_file < t->nfiles) {
		size_t i = t->next_file++;
		snprintf(path, sizeof path, "%s/%s", t->dir, t->files[i]);
		if (warc_reader_open(path, i == 0 ? t->first_offset : 0, t->max_record, &t->wr) ==
		    0)
			return 1;
		if (errno == ENOMEM)
			return -1;
	}
	return 0;
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

/* A revisit's payload that the cache does not hold: the response it
 * refers to, read through the index (pointing into the lookup's reader,
 * valid until its next call: the next record taken). */
static void lookup_payload(struct crawl_tail *t, const struct warc_record *rev)
{
	struct warc_record rec;
	if (!t->lookup || !rev->refers_to || !rev->refers_to_target_uri ||
	    archive_lookup_record(t->lookup, rev->refers_to_target_uri, rev->refers_to_date,
	                          rev->refers_to, &rec) != 1 ||
	    !rec.payload)
		return;
	warc_record_unchunk(&rec);
	t->pending_body = rec.payload;
	t->pending_body_len = rec.payload_len;
	cache_put(t, rev->payload_digest);
}

/* Joins every Content-Encoding line of the record's HTTP header block, in
 * order, with ", " (as the fetch engine reports them) into t->encoding. */
static void join_encodings(struct crawl_tail *t, const struct warc_record *rec)
{
	const char *at = rec->http_headers, *v;
	const char *end = at ? at + rec->http_headers_len : NULL;
	size_t len = 0, n;
	t->encoding[0] = '\0';
	while (at && header_field_next(&at, end, "Content-Encoding", &v, &n)) {
		size_t sep = len ? 2 : 0;
		if (len + sep + n >= sizeof t->encoding)
			break;
		memcpy(t->encoding + len, ", ", sep);
		memcpy(t->encoding + len + sep, v, n);
		len += sep + n;
		t->encoding[len] = '\0';
	}
}

/* Takes a record of the WARC: 1 when it is a response or revisit record
 * (then pending is set), 0 for any other record, -1 when it has no
 * WARC-Type (not a record we wrote: its file ends there). */
static int take_record(struct crawl_tail *t, struct warc_record *rec)
{
	if (!rec->type)
		return -1;
	if (!rec->target_uri ||
	    (strcmp(rec->type, "response") != 0 && strcmp(rec->type, "revisit") != 0))
		return 0;
	t->pending = 1;
	t->pending_uri = rec->target_uri;
	t->pending_revisit = strcmp(rec->type, "revisit") == 0;
	t->pending_body = NULL;
	t->pending_rec = *rec;
	join_encodings(t, rec);
	if (t->pending_revisit) {
		cache_get(t, rec->payload_digest); /* the payload of the same digest */
		if (!t->pending_body)
			lookup_payload(t, rec);
	} else if (rec->payload) {
		warc_record_unchunk(rec);
		t->pending_body = rec->payload;
		t->pending_body_len = rec->payload_len;
		cache_put(t, rec->payload_digest);
	}
	return 1;
}

/* Reads up to the next response or revisit record (pending), across
 * files; at the end of the WARC output, warc_done. 0, or -1 out of memory. */
static int next_fetch_record(struct crawl_tail *t)
{
	while (!t->pending && !t->warc_done) {
		struct warc_record rec;
		int opened = t->wr ? 1 : open_next_file(t);
		if (opened < 0)
			return -1;
		if (opened == 0) {
			t->warc_done = 1;
			break;
		}
		enum warc_read got = warc_reader_next(t->wr, &rec);
		if (got == WARC_READ_ERR_NOMEM)
			return -1;
		if (got != WARC_READ_RECORD || take_record(t, &rec) < 0) {
			/* this file ends (or is torn, or holds what we did not
			 * write) here: on to the next */
			warc_reader_close(t->wr);
			t->wr = NULL;
		}
	}
	return 0;
}

/* ---- the log side ---- */

/* Passes over the rest of a line: 0, or -1 when the log ends first. */
static int skip_rest(FILE *f)
{
	int c;
	while ((c = getc(f)) != EOF && c != '\n')
		;
	return c == '\n' ? 0 : -1;
}

/* Reads one line into t->line. 1, 0 at the end (a last line without its
 * newline, torn by the crash, ends the tail: log_broken). A line over
 * CRAWL_TAIL_LINE_MAX (a server's field the writer did not cap) is
 * skipped, counted: what was logged after it is still read. */
static int read_line(struct crawl_tail *t, size_t *len)
{
	for (;;) {
		if (!fgets(t->line, CRAWL_TAIL_LINE_MAX + 1, t->log))
			return 0;
		*len = strlen(t->line);
		if (*len > 0 && t->line[*len - 1] == '\n') {
			t->line[--*len] = '\0';
			return 1;
		}
		if (*len < CRAWL_TAIL_LINE_MAX || skip_rest(t->log) != 0) {
			t->log_broken = 1;
			return 0;
		}
		t->lines_skipped++;
		t->unmatched_skips++;
	}
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
	e->flags = crawl_log_flags_parse(f[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS]);
	e->robots = (e->flags & CRAWL_LOG_ROBOTS) != 0;
	e->requeued = (e->flags & CRAWL_LOG_REQUEUED) != 0;
	if (!(e->url = field(f, fl, CRAWL_LOG_F_URL, &p)) ||
	    !(e->via = field(f, fl, CRAWL_LOG_F_VIA, &p)) ||
	    !(e->content_type = field(f, fl, CRAWL_LOG_F_CTYPE, &p)) ||
	    !(e->ip = field(f, fl, CRAWL_LOG_F_IP, &p)) ||
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
	    !(t->scratch = malloc(CRAWL_TAIL_LINE_MAX + 1))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
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

/* Takes the pending record's payload into the entry. */
static void take_pending(struct crawl_tail *t)
{
	struct crawl_tail_entry *e = &t->e;
	t->pending = 0;
	e->revisit = t->pending_revisit;
	e->body = t->pending_body;
	e->body_len = t->pending_body_len;
	e->content_encoding = t->encoding[0] ? t->encoding : NULL;
}

/* The line's record, if the next one is: its payload into the entry. */
static int match_record(struct crawl_tail *t)
{
	struct crawl_tail_entry *e = &t->e;
	if (!t->warc || e->status <= 0)
		return 0;
	for (;;) {
		if (next_fetch_record(t) != 0)
			return -1;
		if (t->pending && strcmp(t->pending_uri, e->url) == 0)
			break;
		if (!t->pending || t->unmatched_skips == 0) {
			t->unmatched_skips = 0;
			return 0;
		}
		/* the record of a line skipped as too long */
		t->pending = 0;
		t->unmatched_skips--;
	}
	t->unmatched_skips = 0;
	take_pending(t);
	return 0;
}

/* A WARC-Date ("2026-01-02T03:04:05.678Z", the fraction optional) in ms
 * since the epoch; 0 when it is not one. */
static uint64_t warc_date_ms(const char *d)
{
	struct tm tm = { 0 };
	int n = 0;
	if (!d || sscanf(d, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	                 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t secs = timegm(&tm);
	if (secs < 0)
		return 0;
	uint64_t ms = (uint64_t)secs * 1000;
	if (d[n] == '.')
		for (int i = 1, scale = 100; i <= 3 && d[n + i] >= '0' && d[n + i] <= '9'; i++) {
			ms += (uint64_t)(d[n + i] - '0') * (uint64_t)scale;
			scale /= 10;
		}
	return ms;
}

/* The pending record as a fetch whose line was lost (crawl_tail.h): 1,
 * or 0 when it does not carry the crawler's fields (skipped). */
static int recover_entry(struct crawl_tail *t)
{
	const struct warc_record *rec = &t->pending_rec;
	struct crawl_tail_entry *e = &t->e;
	char *end;
	const char *at = rec->http_headers, *v;
	size_t n;
	if (!rec->crawler_depth)
		return 0;
	unsigned long long depth = strtoull(rec->crawler_depth, &end, 10);
	if (*end || depth > UINT32_MAX)
		return 0;
	memset(e, 0, sizeof *e);
	e->recovered = 1;
	e->url = t->pending_uri;
	e->via = rec->crawler_via ? rec->crawler_via : "";
	e->redirect = rec->crawler_redirect ? rec->crawler_redirect : "";
	e->ip = rec->ip_address ? rec->ip_address : "";
	e->depth = (uint32_t)depth;
	e->status = rec->http_status;
	e->start_unix_ms = warc_date_ms(rec->date);
	e->flags = rec->crawler_flags
	                   ? crawl_log_flags_parse(rec->crawler_flags, strlen(rec->crawler_flags))
	                   : 0;
	e->robots = (e->flags & CRAWL_LOG_ROBOTS) != 0;
	e->requeued = (e->flags & CRAWL_LOG_REQUEUED) != 0;
	/* the content type as the fetch engine reports it: the header's value */
	t->scratch[0] = '\0';
	if (at && header_field_next(&at, at + rec->http_headers_len, "Content-Type", &v, &n)) {
		n = n < CRAWL_TAIL_LINE_MAX ? n : CRAWL_TAIL_LINE_MAX;
		memcpy(t->scratch, v, n);
		t->scratch[n] = '\0';
	}
	e->content_type = t->scratch;
	return 1;
}

/* The next record after the log's last line, recovered: 1, 0 at the end,
 * -1 out of memory. */
static int next_recovered(struct crawl_tail *t)
{
	while (t->warc && !t->log_broken) {
		if (next_fetch_record(t) != 0)
			return -1;
		if (!t->pending)
			return 0;
		if (t->unmatched_skips > 0) {
			/* the record of a last line skipped as too long: it has
			 * its line */
			t->unmatched_skips--;
		} else if (recover_entry(t)) {
			take_pending(t);
			t->e.bytes = t->e.body ? t->e.body_len : 0;
			if (t->e.revisit)
				t->e.flags |= CRAWL_LOG_REVISIT;
			return 1;
		}
		t->pending = 0;
	}
	return 0;
}

int crawl_tail_next(struct crawl_tail *t, const struct crawl_tail_entry **e, char *err,
                    size_t errlen)
{
	size_t len;
	int r;
	while (!t->log_done) {
		if (!read_line(t, &len)) {
			t->log_done = 1;
			break;
		}
		if (t->line[0] == '#')
			continue; /* a header line */
		if (parse_line(t, len) != 0) {
			t->log_done = t->log_broken = 1;
			return 0;
		}
		if (match_record(t) != 0)
			goto nomem;
		*e = &t->e;
		return 1;
	}
	if ((r = next_recovered(t)) < 0)
		goto nomem;
	*e = r ? &t->e : NULL;
	return r;
nomem:
	snprintf(err, errlen, "out of memory reading the WARC tail");
	return -1;
}

int crawl_tail_use_index(struct crawl_tail *t, size_t max_url_len)
{
	archive_lookup_close(t->lookup);
	t->lookup = NULL;
	return archive_lookup_open(t->dir, max_url_len, t->max_record, &t->lookup);
}

uint64_t crawl_tail_lines_skipped(const struct crawl_tail *t)
{
	return t ? t->lines_skipped : 0;
}

void crawl_tail_close(struct crawl_tail *t)
{
	if (!t)
		return;
	archive_lookup_close(t->lookup); /* opened last, by crawl_tail_use_index */
	warc_reader_close(t->wr);
	if (t->log)
		fclose(t->log);
	ARRAY_FREE_EACH(t->files, t->nfiles);
	for (size_t i = 0; i < PAYLOAD_CACHE_SLOTS; i++)
		free(t->cache[i].data);
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

/* A recovered fetch's line, appended to crawl.log (opened on the first):
 * 0, or -1 with the message in err. */
static int log_recovered(const struct crawl_tail_replay_parts *p, struct crawl_log **log,
                         const struct crawl_tail_entry *e, char *err, size_t errlen)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/crawl.log", p->output->dir);
	struct crawl_log_entry le = {
		.timestamp_unix_ms = (int64_t)e->start_unix_ms,
		.status = e->status,
		.bytes = e->bytes,
		.url = e->url,
		.via = *e->via ? e->via : NULL,
		.depth = (int)e->depth,
		.content_type = *e->content_type ? e->content_type : NULL,
		.ip = *e->ip ? e->ip : NULL,
		.redirect = *e->redirect ? e->redirect : NULL,
		.flags = e->flags | CRAWL_LOG_RECOVERED,
	};
	if ((!*log && crawl_log_open(path, log) != CRAWL_LOG_OK) ||
	    crawl_log_write(*log, &le) != CRAWL_LOG_OK) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int crawl_tail_replay(const struct crawl_tail_replay_parts *p, const struct crawl_tail_pos *pos,
                      struct crawl_tail_stats *out)
{
	struct crawl_tail *t = NULL;
	struct crawl_log *log = NULL;
	const struct crawl_tail_entry *e;
	char err[4600];
	size_t max_record = (size_t)p->fetch->max_body_bytes + RECORD_SLACK;
	int rc = crawl_tail_open(p->output->dir, pos, p->output->warc, max_record, &t, err,
	                         sizeof err);
	if (rc == 1)
		return 0;
	/* without the index, revisits of responses before the tail's cache
	 * are fetched again */
	if (rc == 0 && p->warc && p->warc->cdxj && p->output->warc)
		crawl_tail_use_index(t, p->warc->max_url_len);
	while (rc == 0 && (rc = crawl_tail_next(t, &e, err, sizeof err)) == 1) {
		rc = e->recovered ? log_recovered(p, &log, e, err, sizeof err) : 0;
		int r = rc == 0 ? replay_one(p, e) : 0;
		if (r < 0) {
			snprintf(err, sizeof err, "out of memory");
			rc = -1;
		}
		if (rc < 0)
			break;
		out->replayed += r == 1;
		out->again += r == 0;
		out->recovered += e->recovered;
	}
	out->lines_skipped += crawl_tail_lines_skipped(t);
	crawl_tail_close(t);
	if (crawl_log_close(log) != CRAWL_LOG_OK && rc == 0) {
		snprintf(err, sizeof err, "%s/crawl.log: %s", p->output->dir, strerror(errno));
		rc = -1;
	}
	if (rc < 0) {
		fprintf(stderr, "crawler crawl: resume: the tail after the checkpoint: %s\n", err);
		return -1;
	}
	if (!p->crawl->quiet)
		fprintf(stderr,
		        "crawler crawl: resume: %" PRIu64
		        " fetches after the checkpoint taken from "
		        "the WARC and crawl.log (%" PRIu64 " of them rebuilt from their "
		        "WARC records, their log lines lost), %" PRIu64 " to fetch again\n",
		        out->replayed, out->recovered, out->again);
	return 0;
}
