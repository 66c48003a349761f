/*
 * crawl_writer.c: the writer thread (see crawl_writer.h).
 */
#include "crawler/crawl_writer.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/archive/previous.h"
#include "crawler/config/config.h"
#include "crawler/net/fetch.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/io_stall.h"
#include "crawler/store/warc.h"
#include "frontier/base/array.h"
#include "frontier/base/bqueue.h"

struct crawl_writer {
	struct crawl_writer_parts p;
	struct bqueue_workers thread; /* the job queue and the writer thread */
	struct warc_writer *warc;
	struct crawl_log *log;
	char log_path[4200];
	/* the last barrier: written by the thread before `synced` */
	int sync_rc;
	struct warc_position sync_pos;
	uint64_t sync_log_size;
	atomic_uint_fast64_t synced;
	atomic_int wake_after_job; /* set by the loop: wake it after the next job */
	/* the reorder ring (writer thread): the jobs recorded and not yet
	 * logged, at line_seq % ring_cap; line_next is the next line to write,
	 * seq_next the next record's number */
	struct crawl_job **ring;
	size_t ring_cap;
	uint64_t line_next, seq_next;
	atomic_size_t ring_held; /* jobs in the ring: the loop's room check reads it */
	/* see struct crawl_writer_stats */
	atomic_uint_fast64_t errors, revisits, index_records_unreadable;
};

void crawl_job_free(struct crawl_job *j)
{
	if (!j)
		return;
	fetch_result_free(j->res);
	free(j->via);
	free(j->redirect);
	ARRAY_FREE_EACH(j->sitemaps, j->nsitemaps);
	free(j->sitemap_scope);
	free(j->earlier);
	free(j);
}

/* 1 if deflating the payload again would gain next to nothing: it has a
 * Content-Encoding, or its type is a compressed format. */
static int payload_compressed(const struct fetch_result *res)
{
	static const char *const types[] = {
		"image/jpeg",       "image/png",          "image/gif",
		"image/webp",       "image/avif",         "audio/",
		"video/",           "application/pdf",    "application/zip",
		"application/gzip", "application/x-gzip", "application/x-bzip2",
		"application/x-xz", "font/woff",
	};
	const char *ce = res->content_encoding, *ct = res->content_type;
	if (ce && *ce && strcasecmp(ce, "identity") != 0)
		return 1;
	if (!ct)
		return 0;
	while (*ct == ' ')
		ct++;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strncasecmp(ct, types[i], strlen(types[i])) == 0)
			return 1;
	return 0;
}

/* The path of the WARC file being written (for reports). */
static void warc_label(struct crawl_writer *w, char *buf, size_t cap)
{
	struct warc_position pos;
	warc_writer_position(w->warc, &pos);
	snprintf(buf, cap, "%s/%s", w->p.output->dir, pos.file);
}

/* A write failed: on a full disk (or quota, or EIO) wait and say to retry
 * (fetching pauses meanwhile: io_stall); otherwise 0. */
static int writer_retry(struct crawl_writer *w, const char *what, int err, int *stalled)
{
	if (!io_stall_retryable(err))
		return 0;
	*stalled = 1;
	return io_stall_wait(w->p.io, what, err);
}

/* Writes one record pair; 1 if the fetch was a WARC revisit. */
static int write_warc(struct crawl_writer *w, const struct crawl_job *j)
{
	const struct fetch_result *res = j->res;
	/* an index's capture names its record once that record is read; one
	 * that cannot be is no original: the page is stored whole */
	const struct history_entry *pe = j->earlier ? &j->earlier->e : NULL;
	if (pe != NULL && previous_hit_complete(j->earlier) != 0) {
		atomic_fetch_add(&w->index_records_unreadable, 1);
		pe = NULL;
	}
	struct warc_refer refer = { 0 };
	if (pe != NULL)
		refer = (struct warc_refer){
			.record_id = pe->ref_id,
			.date = pe->ref_date,
			.target_uri = pe->ref_uri,
			.digest = pe->ref_digest,
			.file = j->earlier->ref_path,
			.offset = pe->ref_offset,
			.etag = pe->etag,
			.last_modified = pe->last_modified,
		};
	bool revisit = false;
	char what[4400], depth[24], flags[CRAWL_LOG_FLAGS_MAX];
	int stalled = 0;
	/* what a resume needs to rebuild the fetch's log line (crawl_writer.h) */
	struct warc_field fields[4];
	size_t nfields = 0;
	snprintf(depth, sizeof depth, "%" PRIu32, j->depth);
	fields[nfields++] = (struct warc_field){ WARC_CRAWLER_DEPTH, depth };
	if (j->via && j->via[0])
		fields[nfields++] = (struct warc_field){ WARC_CRAWLER_VIA, j->via };
	if (crawl_log_flags_text(j->flags, flags, sizeof flags) > 0)
		fields[nfields++] = (struct warc_field){ WARC_CRAWLER_FLAGS, flags };
	if (j->redirect)
		fields[nfields++] = (struct warc_field){ WARC_CRAWLER_REDIRECT, j->redirect };
	struct warc_fetch wf = {
		.url = res->url,
		.ip = res->ip,
		.date_unix_ms = res->start_unix_ms,
		.request_headers = res->request_headers.data,
		.request_len = res->request_headers.len,
		.response_headers = res->response_headers.data,
		.response_headers_len = res->response_headers.len,
		.body = res->body.data,
		.body_len = res->body.len,
		.truncated = res->truncated,
		.http2 = res->http2,
		.incompressible = payload_compressed(res),
		.refer = pe ? &refer : NULL,
		.history = !j->robots && !j->embed && !j->sitemap_level,
		.depth = j->depth,
		.fields = fields,
		.nfields = nfields,
	};
	enum warc_error we;
	warc_label(w, what, sizeof what);
	/* all or nothing (warc.h): the same fetch is written again */
	while ((we = warc_writer_write_fetch(w->warc, &wf, NULL, &revisit)) == WARC_ERR_IO &&
	       writer_retry(w, what, errno, &stalled))
		;
	if (stalled && we == WARC_OK)
		io_stall_resolved(w->p.io, what);
	if (we != WARC_OK)
		atomic_fetch_add(&w->errors, 1);
	if (revisit)
		atomic_fetch_add(&w->revisits, 1);
	return revisit;
}

/* Runs a crawl log call until it goes through or the disk is given up on;
 * flush: crawl_log_flush(log, 1), else crawl_log_write(log, e). */
static enum crawl_log_error log_retry(struct crawl_writer *w, const struct crawl_log_entry *e)
{
	enum crawl_log_error le;
	int stalled = 0;
	/* a refused line was not taken (crawl_log.h): write it again */
	while ((le = e ? crawl_log_write(w->log, e) : crawl_log_flush(w->log, 1)) ==
	               CRAWL_LOG_ERR_IO &&
	       writer_retry(w, w->log_path, errno, &stalled))
		;
	if (stalled && le == CRAWL_LOG_OK)
		io_stall_resolved(w->p.io, w->log_path);
	return le;
}

/* Writes j's records (when it has a response and WARC output is on). */
static void write_record(struct crawl_writer *w, struct crawl_job *j)
{
	if (w->warc && j->res->status > 0 && write_warc(w, j))
		j->flags |= CRAWL_LOG_REVISIT;
	if (j->res->truncated)
		j->flags |= CRAWL_LOG_TRUNCATED;
	j->recorded = 1;
	j->line_seq = w->seq_next++;
}

static void write_line(struct crawl_writer *w, const struct crawl_job *j)
{
	const struct fetch_result *res = j->res;
	struct crawl_log_entry e = {
		.timestamp_unix_ms = res->end_unix_ms,
		.status = res->error == FETCH_OK ? res->status : -(long)res->error,
		.bytes = res->body.len,
		.url = res->url,
		.via = j->via && j->via[0] ? j->via : NULL,
		.depth = (int)j->depth,
		.content_type = res->content_type,
		.duration_ms = res->total_ms,
		.ip = res->ip[0] ? res->ip : NULL,
		.error = res->error != FETCH_OK ? fetch_strerror(res->error) : j->error,
		.redirect = j->redirect,
		.flags = j->flags,
		.wait_ms = j->wait_us / 1000,
		.has_focus = j->has_focus,
		.focus = j->focus,
	};
	if (log_retry(w, &e) != CRAWL_LOG_OK)
		atomic_fetch_add(&w->errors, 1);
}

/* Room in the ring for line number seq: doubles it, re-placing what it
 * holds. 0, or -1 out of memory. */
static int ring_reserve(struct crawl_writer *w, uint64_t seq)
{
	if (seq - w->line_next < w->ring_cap)
		return 0;
	size_t cap = w->ring_cap;
	while (seq - w->line_next >= cap)
		cap *= 2;
	struct crawl_job **ring = calloc(cap, sizeof *ring);
	if (!ring)
		return -1;
	for (uint64_t n = w->line_next; n < w->line_next + w->ring_cap; n++)
		ring[n % cap] = w->ring[n % w->ring_cap];
	free(w->ring);
	w->ring = ring;
	w->ring_cap = cap;
	return 0;
}

static void line_free(struct crawl_writer *w, struct crawl_job *j)
{
	write_line(w, j);
	crawl_job_free(j);
}

/* Writes the lines that may go now, in record order, up to line number
 * `upto` (excluded) past lines that have not come back: a barrier or the
 * end passes all (a job lost in a teardown), an out-of-memory those
 * before the line it cannot hold; they are written when they come. */
static void ring_write(struct crawl_writer *w, uint64_t upto)
{
	for (; w->line_next < w->seq_next; w->line_next++) {
		struct crawl_job **slot = &w->ring[w->line_next % w->ring_cap];
		if (!*slot && w->line_next >= upto)
			break;
		if (*slot) {
			line_free(w, *slot);
			*slot = NULL;
			atomic_fetch_sub(&w->ring_held, 1);
		}
	}
}

/* j, recorded, waits in the ring for the lines before its own, its
 * messages dropped meanwhile (the line needs their sizes only). */
static void line_hold(struct crawl_writer *w, struct crawl_job *j)
{
	if (j->line_seq < w->line_next) { /* passed over by an out-of-memory */
		atomic_fetch_add(&w->errors, 1);
		line_free(w, j);
		return;
	}
	if (ring_reserve(w, j->line_seq) != 0) {
		ring_write(w, j->line_seq);
		atomic_fetch_add(&w->errors, 1);
		line_free(w, j);
		w->line_next = j->line_seq + 1;
		return;
	}
	uint64_t seq = j->line_seq;
	w->ring[seq % w->ring_cap] = j;
	atomic_fetch_add(&w->ring_held, 1);
	ring_write(w, 0);
	if (w->line_next <= seq) /* j waits */
		fetch_result_drop_messages(j->res);
}

/* A fetch from the loop (records first, then the parse, then its line) or
 * back from the parse threads (its line). */
static void write_job(struct crawl_writer *w, struct crawl_job *j)
{
	if (!j->recorded) {
		write_record(w, j);
		if (w->p.recorded && w->p.recorded(w->p.ctx, j) == 0)
			return;
	}
	line_hold(w, j);
}

/* A checkpoint's barrier: every job queued before it is written; make it
 * durable and say where the WARC stands. */
static void writer_barrier(struct crawl_writer *w, uint64_t seq)
{
	int rc = 0;
	ring_write(w, UINT64_MAX);
	if (w->warc) {
		if (warc_writer_sync(w->warc) != WARC_OK)
			rc = -1;
		warc_writer_position(w->warc, &w->sync_pos);
	}
	if (log_retry(w, NULL) != CRAWL_LOG_OK)
		rc = -1;
	w->sync_log_size = crawl_log_size(w->log);
	w->sync_rc = rc;
	atomic_store(&w->synced, seq);
}

static void *writer_main(void *arg)
{
	struct crawl_writer *w = arg;
	void *item;
	while (bqueue_pop(w->thread.q, &item) == BQUEUE_OK) {
		struct crawl_job *j = item;
		if (j->barrier) {
			writer_barrier(w, j->barrier);
			w->p.wake(w->p.ctx);
			crawl_job_free(j);
		} else if (!j->replayed) {
			write_job(w, j); /* takes j */
		} else {
			crawl_job_free(j);
		}
		if (atomic_load_explicit(&w->wake_after_job, memory_order_relaxed) &&
		    atomic_exchange(&w->wake_after_job, 0))
			w->p.wake(w->p.ctx);
		/* The lines go to the kernel after their WARC records (see the
		 * order in crawl_writer.h), in one write once the queue runs
		 * empty (or the log's buffer fills); what a full disk refuses
		 * stays buffered for the next write, whose failure stalls. */
		if (bqueue_size(w->thread.q) == 0)
			crawl_log_flush(w->log, 0);
	}
	ring_write(w, UINT64_MAX);
	return NULL;
}

int crawl_writer_open(const struct crawl_writer_parts *parts, struct crawl_writer **out)
{
	const struct warc_config *wc = parts->warc_config;
	struct crawl_writer *w = calloc(1, sizeof *w);
	*out = NULL;
	if (!w)
		return -1;
	w->p = *parts;
	snprintf(w->log_path, sizeof w->log_path, "%s/crawl.log", parts->output->dir);
	w->ring_cap = 64; /* grown as lines wait (ring_reserve) */
	w->ring = calloc(w->ring_cap, sizeof *w->ring);
	if (!w->ring)
		goto fail;
	if (wc) {
		enum warc_error we = warc_writer_open(wc, &w->warc);
		if (we != WARC_OK) {
			fprintf(stderr, "crawler crawl: WARC: %s\n", warc_strerror(we));
			goto fail;
		}
	}
	if (crawl_log_open(w->log_path, &w->log) != CRAWL_LOG_OK) {
		fprintf(stderr, "crawler crawl: cannot open %s\n", w->log_path);
		goto fail;
	}
	if (bqueue_workers_start(&w->thread, parts->queue_cap, 1, writer_main, w) != BQUEUE_OK)
		goto fail;
	*out = w;
	return 0;
fail:
	crawl_writer_destroy(w);
	return -1;
}

int crawl_writer_has_room(const struct crawl_writer *w, size_t in_flight)
{
	/* the ring's jobs hold no messages, but are bounded all the same */
	size_t half = bqueue_cap(w->thread.q) / 2;
	return bqueue_size(w->thread.q) + in_flight + 1 <= half &&
	       atomic_load_explicit(&w->ring_held, memory_order_relaxed) + in_flight + 1 <= half;
}

size_t crawl_writer_queued(const struct crawl_writer *w)
{
	return bqueue_size(w->thread.q);
}

void crawl_writer_wake_after_next(struct crawl_writer *w)
{
	atomic_store(&w->wake_after_job, 1);
}

int crawl_writer_try_push(struct crawl_writer *w, struct crawl_job *j)
{
	return bqueue_try_push(w->thread.q, j) == BQUEUE_OK ? 0 : -1;
}

void crawl_writer_push(struct crawl_writer *w, struct crawl_job *j)
{
	if (bqueue_push(w->thread.q, j) != BQUEUE_OK)
		crawl_job_free(j);
}

int crawl_writer_request_sync(struct crawl_writer *w, uint64_t seq)
{
	struct crawl_job *j = calloc(1, sizeof *j);
	if (!j)
		return -1;
	j->barrier = seq;
	if (bqueue_try_push(w->thread.q, j) != BQUEUE_OK) {
		free(j);
		return -1;
	}
	return 0;
}

int crawl_writer_synced(struct crawl_writer *w, uint64_t seq, int *rc, struct warc_position *pos,
                        uint64_t *log_size)
{
	if (atomic_load(&w->synced) < seq)
		return 0;
	*rc = w->sync_rc;
	*pos = w->sync_pos;
	*log_size = w->sync_log_size;
	return 1;
}

static void drop_job(void *item)
{
	crawl_job_free(item);
}

void crawl_writer_close(struct crawl_writer *w)
{
	if (!w)
		return;
	bqueue_workers_stop(&w->thread, drop_job);
	warc_writer_close(w->warc);
	w->warc = NULL;
	crawl_log_close(w->log);
	w->log = NULL;
}

void crawl_writer_destroy(struct crawl_writer *w)
{
	crawl_writer_close(w);
	if (w)
		free(w->ring);
	free(w);
}

void crawl_writer_stats(const struct crawl_writer *w, struct crawl_writer_stats *out)
{
	out->errors = atomic_load(&w->errors);
	out->revisits = atomic_load(&w->revisits);
	out->index_records_unreadable = atomic_load(&w->index_records_unreadable);
}
