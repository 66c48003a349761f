/*
 * crawl_run.c: the fetch loop and its hand-offs (see crawl_run.h).
 *
 * A visit is a small state machine per held host: RESOLVE (DNS, when the
 * host has no IP yet: ends with a VISIT_NONE release so the host comes back
 * under its IP's token), ROBOTS (robots.txt first for each new host), then
 * one URL after another while the politeness visit budget allows; exactly
 * one request of a host is in flight at a time. The visit ends with
 * politeness_release carrying the outcome (status class, Retry-After,
 * duration).
 */
#include "crawler/crawl_run.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libpsl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <uv.h>
#include <xxhash.h>

#include "frontier/bqueue.h"
#include "crawler/checkpoint.h"
#include "crawler/crawl_log.h"
#include "crawler/decode.h"
#include "crawler/dns.h"
#include "crawler/fetch.h"
#include "crawler/io_stall.h"
#include "crawler/link_meta.h"
#include "crawler/outdir_lock.h"
#include "crawler/warc.h"
#include "crawler/warc_repair.h"
#include "frontier/frontier.h"
#include "frontier/recfile.h"
#include "frontier/scope.h"
#include "frontier/url.h"
#include "parse/links.h"
#include "parse/parse_pool.h"
#include "parse/simhash.h"
#include "politeness/delay_policy.h"
#include "politeness/politeness.h"
#include "politeness/robots.h"
#include "sieve/sieve.h"

#define NEAR_DUP_STRIPES 64
#define NEAR_DUP_PER_HOST 4096 /* fingerprints kept per host (oldest dropped) */
#define MAX_SAMPLES 8640
#define STATUS_MAX 600
#define HOST_BLOCK_BITS 12
#define BATCH_URLS 128          /* links handed to the sieve per sieve_add_batch */
#define NO_TICKET UINT64_MAX
#define FEED_SLACK 16           /* feed queue room beyond one item per transfer */
#define EARLY_FLUSH_RATIO 64    /* see crawl_is_done */

enum dns_state { HDNS_NONE = 0, HDNS_PENDING, HDNS_OK, HDNS_FAILED };

/* Per host id, loop thread only. */
struct host_state {
	uint8_t dns;
	uint8_t in_visit;
	uint8_t visit_kind;      /* enum visit_kind so far */
	uint32_t visit_requests;
	uint32_t visit_max_urls;
	uint64_t visit_start_us;
	uint64_t visit_max_us;
	uint64_t retry_after_us;
};

/* One request in flight (fetch_request.user), on the run's list of live
 * requests from start_fetch until its result is processed: what a
 * checkpoint puts back in the frontier. */
struct req {
	uint32_t host;
	uint32_t depth;
	int robots;       /* robots.txt fetch */
	int redirects;    /* robots redirects followed so far */
	char *url;
	char *via;        /* "" if none */
	struct req *prev, *next;
};

/* Checkpoint phases (crawl_run.h; ckpt_step). While not idle, no transfer
 * starts and finished transfers are parked unprocessed: the links of every
 * processed page reach the sieve, the sieve delivers every new URL to the
 * frontier, the writer syncs, then sieve, frontier and the crawl's state
 * are written as one consistent cut. */
enum ckpt_phase {
	CKPT_IDLE = 0,
	CKPT_DRAIN,   /* waiting for the parse threads and the feeder to be idle */
	CKPT_FLUSH,   /* waiting for a forced sieve flush to deliver everything */
	CKPT_WRITER,  /* waiting for the writer thread to sync WARC and log */
	CKPT_COMMIT,  /* a worker copies the sieve and fsyncs; then the switch */
};

/* A URL emitted by the sieve, on its way to the frontier. */
struct emit {
	uint32_t depth;
	uint32_t url_len;
	uint32_t via_len;
	char data[]; /* url NUL via NUL */
};

/* Work for the parse pool and then the writer thread. */
struct job {
	struct fetch_result *res;
	uint32_t host;
	uint32_t depth;
	int robots;
	unsigned flags;   /* CRAWL_LOG_* */
	char *via;
	char *redirect;   /* resolved Location, or NULL */
	const char *error; /* static reason word, or NULL */
	int parse;        /* parse it (HTML 2xx page) */
	uint64_t barrier; /* nonzero: no fetch; the writer syncs for checkpoint #barrier */
};

/* Work for the feeder thread: a redirect target (crawl key) to add to the
 * sieve, or a forced flush request (flush != 0). */
struct feed {
	int flush;
	uint64_t seq;
	uint32_t depth;
	uint32_t url_len;
	uint32_t via_len;
	char data[]; /* url NUL via NUL */
};

/* Crawl keys on their way into the sieve: one per adding thread. Keys are
 * written straight into the arena by url_crawl_key. */
struct link_batch {
	const char *urls[BATCH_URLS];
	size_t lens[BATCH_URLS];
	uint64_t sigs[BATCH_URLS];
	uint64_t tickets[BATCH_URLS]; /* NO_TICKET: the side-table entry is not ours */
	size_t n;
	char *arena;
	size_t arena_cap, arena_len;
	uint64_t flushes; /* the sieve's completed flushes, as last read */
};

struct near_dup_host {
	uint32_t host;
	uint32_t n, next;
	uint64_t fp[NEAR_DUP_PER_HOST];
	struct near_dup_host *chain;
};

struct near_dup_stripe {
	pthread_mutex_t mu;
	struct near_dup_host *hosts;
};

struct counters_atomic {
	atomic_uint_fast64_t parsed, links, scope_rejected, nofollow, near_dups,
		decode_errors, emit_dropped, writer_errors, warc_revisits;
	/* the sieve path */
	atomic_int seeding_done_flag; /* the feeder has added every seed */
	atomic_uint_fast64_t url_invalid, seeds_invalid, meta_present, meta_dropped, meta_missing,
		meta_flushes, sieve_errors, emits_pushed, flush_done_seq, keys_added;
};

struct run {
	const struct crawl_config *cfg;
	uv_loop_t loop;
	uv_timer_t wake, tick, abandon;
	uv_async_t async;
	uv_signal_t sigint;
	int handles_open;
	struct fetch_engine *fetch;
	struct dns_resolver *dns;
	struct frontier *frontier;
	struct politeness *pol;
	struct scope *scope;
	struct parse_pool *pool;
	sieve_t *sieve;
	struct link_meta *meta;
	struct sieve_stats sst;     /* saved before the sieve is closed */
	struct link_meta_stats mst;
	int sieve_stats_saved;
	struct bqueue *emitq, *writeq, *feedq;
	pthread_t writer, feeder;
	int writer_started, feeder_started;
	char *const *seeds;         /* the feeder adds them */
	size_t n_seeds;
	atomic_int stop_adding;     /* teardown: threads add nothing more to the sieve */
	atomic_int sieve_failed;    /* a sieve call failed: the crawl stops */
	char sieve_error[512];      /* first sieve failure (written once, under wake_mu) */
	/* forced flushes: see sieve_flush_delivered */
	pthread_mutex_t wake_mu;    /* guards wake_ok against uv_close of async */
	int wake_ok;
	struct url *url_base, *url_target; /* loop thread: resolving Locations */
	/* forced flushes (loop thread) */
	int flush_pending, flush_idle;
	uint64_t flush_seq, flush_emits_before, flush_keys_at, forced_flushes, early_flushes;
	uint64_t redirect_dropped;
	struct warc_writer *warc;
	struct crawl_log *log;
	struct host_state **blocks; /* see host_state() */
	size_t n_blocks;
	int in_dns_call;            /* inside dns_resolve: its callback must not pump */
	struct near_dup_stripe nd[NEAR_DUP_STRIPES];
	struct counters_atomic ac;
	/* loop-thread counters */
	uint64_t t0_us, t0_ms_wall;
	uint64_t pages_started, pages_done, requests, bytes, robots_fetches;
	uint64_t robots_disallowed, redirects, dns_errors[16], fetch_errors[16];
	uint64_t status[STATUS_MAX];
	uint64_t private_refused, parse_full, writer_full, hosts_dns_failed;
	uint64_t samples[MAX_SAMPLES];
	size_t n_samples;
	uint64_t last_sample_pages, tick_count;
	int stopping, finished, sigints;
	int progress;
	int exit_code;
	struct fetch_stats fst; /* saved before the engine is destroyed */
	struct dns_stats dst;
	/* checkpoints (loop thread unless said otherwise) */
	struct outdir_lock *lock;
	struct req *live;           /* requests in flight or parked (struct req list) */
	struct fetch_result **parked; /* results held while a checkpoint is taken */
	size_t n_parked, parked_cap;
	int ckpt_phase, ckpt_final, ckpt_rc;
	uint64_t ckpt_seq;          /* number of the checkpoint being / last written */
	uint64_t ckpt_flush_seq;    /* the forced flush it waits for */
	uint64_t ckpt_t0_us, ckpt_last_us, ckpt_count, ckpt_failures, ckpt_us_total, ckpt_us_max;
	atomic_uint_fast64_t ckpt_synced; /* writer thread: barrier reached */
	int ckpt_writer_rc;         /* writer thread, before ckpt_synced */
	struct warc_position ckpt_warc; /* writer thread, before ckpt_synced */
	uv_work_t ckpt_work;
	char ckpt_dir[4200];
	char ckpt_err[4800];        /* worker thread, before its after-callback */
	uint64_t elapsed_before_us; /* crawl time of the runs before a resume */
	int resumed;
	uint64_t start_after_us;    /* resume: no request before (see crawl_run) */
	/* outputs that cannot be written (a full disk): fetching pauses */
	struct io_stall *io;
	struct emit *pending_emit;  /* loop: a URL the frontier could not spill yet */
	uint32_t *dns_wait;         /* held hosts waiting for the resolver (FIFO) */
	size_t dns_wait_head, dns_wait_n, dns_wait_cap;
	char spill_label[4200], log_path[4200];
};


static uint64_t now_us(void)
{
	return uv_hrtime() / 1000u;
}

/* ---- URL helpers (URLs here are absolute and normalized) ---- */

/* Resolves a Location against the URL that answered with it (loop thread:
 * uses the loop's two parse objects). Returns a malloc'd string, NULL when
 * it does not resolve: the crawl key when the target is http(s) (*crawlable
 * = 1), else the resolved href (*crawlable = 0: logged, not followed). */
static char *resolve_location(struct run *r, const char *base, const char *loc, int *crawlable)
{
	*crawlable = 0;
	if (url_parse(r->url_base, base, strlen(base), NULL) != URL_OK)
		return NULL;
	if (url_parse(r->url_target, loc, strlen(loc), r->url_base) != URL_OK)
		return NULL;
	size_t cap = url_href_cap(r->url_target) + 2, len;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	if (url_crawl_key(r->url_target, out, cap, &len) == URL_OK) {
		*crawlable = 1;
		return out;
	}
	const char *href = url_href(r->url_target, &len);
	if (len >= cap) {
		free(out);
		return NULL;
	}
	memcpy(out, href, len + 1);
	return out;
}

static int is_html(const char *ct)
{
	if (!ct)
		return 0;
	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, "text/html", 9) == 0 ||
	       strncasecmp(ct, "application/xhtml+xml", 21) == 0;
}

/* The charset parameter of a Content-Type, copied into buf, or NULL. */
static const char *charset_of(const char *ct, char *buf, size_t cap)
{
	if (!ct)
		return NULL;
	const char *p = strcasestr(ct, "charset=");
	if (!p)
		return NULL;
	p += 8;
	if (*p == '"')
		p++;
	size_t n = 0;
	while (p[n] && p[n] != ';' && p[n] != '"' && p[n] != ' ' && n + 1 < cap) {
		buf[n] = p[n];
		n++;
	}
	buf[n] = '\0';
	return n ? buf : NULL;
}

/* ---- host state ---- */

/* Host states live in fixed blocks that never move, so a pointer to one
 * stays valid while the table grows (callbacks nest: a redirect can add a
 * host while a visit holds its host's state). */
static struct host_state *host_state(struct run *r, uint32_t host)
{
	size_t b = host >> HOST_BLOCK_BITS;
	if (b >= r->n_blocks) {
		size_t n = r->n_blocks ? r->n_blocks : 16;
		while (n <= b)
			n *= 2;
		struct host_state **nb = realloc(r->blocks, n * sizeof *nb);
		if (!nb)
			return NULL;
		memset(nb + r->n_blocks, 0, (n - r->n_blocks) * sizeof *nb);
		r->blocks = nb;
		r->n_blocks = n;
	}
	if (!r->blocks[b]) {
		r->blocks[b] = calloc((size_t)1 << HOST_BLOCK_BITS, sizeof **r->blocks);
		if (!r->blocks[b])
			return NULL;
	}
	return &r->blocks[b][host & ((1u << HOST_BLOCK_BITS) - 1)];
}

/* Inserts a URL the loop owns into the frontier (creating its host).
 * Returns -1 when it must be tried again later (its spill file could not be
 * written: a full disk; the frontier is unchanged), else 0 (added, or
 * refused for a reason the frontier counts). */
static int frontier_add(struct run *r, const char *url, size_t len, const char *via,
                        size_t via_len, uint32_t depth)
{
	size_t kl, hs, hl;
	uint32_t host;
	if (url_key_split(url, len, &kl, &hs, &hl) < 0)
		return 0;
	if (frontier_host_get(r->frontier, url, kl, 1, &host) != FRONTIER_OK)
		return 0;
	if (!host_state(r, host))
		return 0;
	if (frontier_push(r->frontier, host, url, len, via, via_len, depth) == FRONTIER_ERR_IO) {
		if (io_stall_retryable(errno)) {
			io_stall_note(r->io, r->spill_label, errno);
			return -1;
		}
		fprintf(stderr, "\ncrawler crawl: frontier spill %s: %s: URL dropped\n", r->spill_label,
		        strerror(errno));
	}
	return 0;
}

/* ---- writer thread ---- */

/* 1 if deflating the payload again would gain next to nothing: it has a
 * Content-Encoding, or its type is a compressed format. */
static int payload_compressed(const struct fetch_result *res)
{
	static const char *const types[] = {
		"image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "audio/",
		"video/", "application/pdf", "application/zip", "application/gzip",
		"application/x-gzip", "application/x-bzip2", "application/x-xz", "font/woff",
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

static void job_free(struct job *j)
{
	if (!j)
		return;
	fetch_result_free(j->res);
	free(j->via);
	free(j->redirect);
	free(j);
}

/* The path of the WARC file being written (for reports). */
static void warc_label(struct run *r, char *buf, size_t cap)
{
	struct warc_position pos;
	warc_writer_position(r->warc, &pos);
	snprintf(buf, cap, "%s/%s", r->cfg->output_dir, pos.file);
}

/* A write of the writer thread failed: on a full disk (or quota, or EIO)
 * wait and say to retry (fetching pauses meanwhile: io_stall); otherwise 0. */
static int writer_retry(struct run *r, const char *what, int err, int *stalled)
{
	if (!io_stall_retryable(err))
		return 0;
	*stalled = 1;
	return io_stall_wait(r->io, what, err);
}

static void write_job(struct run *r, struct job *j)
{
	struct fetch_result *res = j->res;
	bool revisit = false;
	char what[4400];
	int stalled = 0;
	if (r->warc && res->status > 0) {
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
			.incompressible = payload_compressed(res),
		};
		enum warc_error we;
		warc_label(r, what, sizeof what);
		/* all or nothing (warc.h): the same fetch is written again */
		while ((we = warc_writer_write_fetch(r->warc, &wf, NULL, &revisit)) == WARC_ERR_IO &&
		       writer_retry(r, what, errno, &stalled))
			;
		if (stalled && we == WARC_OK)
			io_stall_resolved(r->io, what);
		if (we != WARC_OK)
			atomic_fetch_add(&r->ac.writer_errors, 1);
		if (revisit)
			atomic_fetch_add(&r->ac.warc_revisits, 1);
	}
	if (r->log) {
		unsigned flags = j->flags;
		if (revisit)
			flags |= CRAWL_LOG_REVISIT;
		if (res->truncated)
			flags |= CRAWL_LOG_TRUNCATED;
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
			.flags = flags,
		};
		enum crawl_log_error le;
		stalled = 0;
		/* a refused line was not taken (crawl_log.h): write it again */
		while ((le = crawl_log_write(r->log, &e)) == CRAWL_LOG_ERR_IO &&
		       writer_retry(r, r->log_path, errno, &stalled))
			;
		if (stalled && le == CRAWL_LOG_OK)
			io_stall_resolved(r->io, r->log_path);
		if (le != CRAWL_LOG_OK)
			atomic_fetch_add(&r->ac.writer_errors, 1);
	}
}

/* A checkpoint's barrier: every job queued before it is written; make it
 * durable and say where the WARC stands. */
static void writer_barrier(struct run *r, uint64_t seq)
{
	int rc = 0, stalled = 0;
	char what[4400];
	if (r->warc) {
		if (warc_writer_sync(r->warc) != WARC_OK)
			rc = -1;
		warc_writer_position(r->warc, &r->ckpt_warc);
	}
	if (r->log) {
		enum crawl_log_error le;
		snprintf(what, sizeof what, "%s", r->log_path);
		while ((le = crawl_log_flush(r->log, 1)) == CRAWL_LOG_ERR_IO &&
		       writer_retry(r, what, errno, &stalled))
			;
		if (stalled && le == CRAWL_LOG_OK)
			io_stall_resolved(r->io, what);
		if (le != CRAWL_LOG_OK)
			rc = -1;
	}
	r->ckpt_writer_rc = rc;
	atomic_store(&r->ckpt_synced, seq);
}

static void wake_loop(struct run *r);

static void *writer_main(void *arg)
{
	struct run *r = arg;
	void *item;
	while (bqueue_pop(r->writeq, &item) == BQUEUE_OK) {
		struct job *j = item;
		if (j->barrier) {
			writer_barrier(r, j->barrier);
			wake_loop(r);
		} else {
			write_job(r, j);
		}
		job_free(j);
	}
	return NULL;
}

/* ---- waking the loop from other threads ---- */

/* uv_async_send is the one libuv call other threads may make, and only
 * while the handle is open: teardown clears wake_ok under wake_mu before
 * closing it. */
static void wake_loop(struct run *r)
{
	pthread_mutex_lock(&r->wake_mu);
	if (r->wake_ok)
		uv_async_send(&r->async);
	pthread_mutex_unlock(&r->wake_mu);
}

/* ---- the sieve path: crawl keys -> side table + sieve -> emit queue ---- */

/* A sieve call failed: the sieve is unusable (SIEVE_ECLOSED after) and URLs
 * would be lost silently, so the crawl stops; the loop reports it. */
static void sieve_failure(struct run *r, int rc, const char *what)
{
	atomic_fetch_add(&r->ac.sieve_errors, 1);
	pthread_mutex_lock(&r->wake_mu);
	if (!atomic_load(&r->sieve_failed)) {
		snprintf(r->sieve_error, sizeof r->sieve_error, "%s: %s (%s)", what,
		         sieve_strerror(rc), sieve_last_error(r->sieve));
		atomic_store(&r->sieve_failed, 1);
	}
	if (r->wake_ok)
		uv_async_send(&r->async);
	pthread_mutex_unlock(&r->wake_mu);
}

static int batch_init(struct run *r, struct link_batch *b)
{
	memset(b, 0, sizeof *b);
	b->arena_cap = 16u * ((size_t)r->cfg->max_url_len + 1);
	b->arena = malloc(b->arena_cap);
	return b->arena ? 0 : -1;
}

static void batch_fini(struct link_batch *b)
{
	free(b->arena);
	b->arena = NULL;
}

static uint64_t sieve_flushes(struct run *r)
{
	struct sieve_stats ss;
	sieve_stats_get(r->sieve, &ss);
	return ss.flushes;
}

/* Hands the batch to the sieve, then marks its side-table entries done
 * with the flush count read after the add returned (link_meta.h). May
 * block while the sieve's buffers are both full: never on the loop. */
static void batch_flush(struct run *r, struct link_batch *b)
{
	if (b->n == 0)
		return;
	int rc = sieve_add_batch(r->sieve, b->urls, b->lens, b->n);
	if (rc != SIEVE_OK)
		sieve_failure(r, rc, "sieve add");
	b->flushes = sieve_flushes(r);
	for (size_t i = 0; i < b->n; i++)
		if (b->tickets[i] != NO_TICKET)
			link_meta_done(r->meta, b->sigs[i], b->tickets[i], b->flushes);
	atomic_fetch_add(&r->ac.keys_added, b->n);
	b->n = 0;
	b->arena_len = 0;
}

/* A forced flush: when it returns, every URL added before the call has been
 * delivered to on_sieve_emit (sieve.h), so its new URLs are in the emit
 * queue. A failure stops the crawl (sieve_failure). */
static int sieve_flush_delivered(struct run *r)
{
	int rc = sieve_flush(r->sieve);
	if (rc != SIEVE_OK)
		sieve_failure(r, rc, "sieve flush");
	return rc;
}

/* The side table is full: a forced flush processes every URL added so far
 * (the calling thread waits: back-pressure), then its stale entries go. */
static void meta_make_room(struct run *r, struct link_batch *b)
{
	uint64_t before = link_meta_clock(r->meta);
	sieve_flush_delivered(r);
	b->flushes = sieve_flushes(r);
	link_meta_sweep(r->meta, b->flushes, before);
	atomic_fetch_add(&r->ac.meta_flushes, 1);
}

/* Room for one more crawl key in the arena (keys are at most max_url_len). */
static char *batch_slot(struct run *r, struct link_batch *b, size_t *room)
{
	if (b->arena_cap - b->arena_len < (size_t)r->cfg->max_url_len + 1)
		batch_flush(r, b);
	*room = b->arena_cap - b->arena_len;
	return b->arena + b->arena_len;
}

/* Queues the crawl key just written at batch_slot (klen bytes) for the
 * sieve with its metadata. A key whose signature already has a side-table
 * entry is already on its way through the sieve (or was dropped by it as
 * seen): adding it again would change nothing, so it is skipped. */
static void batch_add(struct run *r, struct link_batch *b, size_t klen, uint32_t depth,
                      struct link_meta_via *via)
{
	char *key = b->arena + b->arena_len;
	uint64_t sig = XXH3_64bits(key, klen), ticket = NO_TICKET;
	enum link_meta_result mr = link_meta_put(r->meta, sig, depth, via, b->flushes, 0, &ticket);
	if (mr == LINK_META_FULL) {
		/* The batch's own entries are in progress (not sweepable): add
		 * them first, keeping this key at the arena's start. */
		char tmp[FRONTIER_URL_MAX];
		if (klen > sizeof tmp)
			return;
		memcpy(tmp, key, klen);
		batch_flush(r, b);
		memcpy(b->arena, tmp, klen);
		key = b->arena;
		meta_make_room(r, b);
		mr = link_meta_put(r->meta, sig, depth, via, b->flushes, 1, &ticket);
		if (mr == LINK_META_FULL) {
			atomic_fetch_add(&r->ac.meta_dropped, 1);
			return;
		}
	}
	if (mr == LINK_META_PRESENT) {
		atomic_fetch_add(&r->ac.meta_present, 1);
		return;
	}
	b->urls[b->n] = key;
	b->lens[b->n] = klen;
	b->sigs[b->n] = sig;
	b->tickets[b->n] = ticket;
	b->n++;
	b->arena_len += klen;
	if (b->n == BATCH_URLS)
		batch_flush(r, b);
}

/* The sieve's emit callback (its flush thread): the URL is new. Its
 * metadata comes out of the side table; the URL goes to the loop through
 * the bounded emit queue, waiting for room when the queue is full (the
 * flush thread may wait, the loop drains it without waiting). After
 * teardown closes the queue, emits are dropped: the crawl is over. */
static void on_sieve_emit(void *ctx, const char *url, size_t len)
{
	struct run *r = ctx;
	uint32_t depth = 0;
	struct link_meta_via *via = NULL;
	const char *vs = "";
	size_t vlen = 0;
	if (link_meta_take(r->meta, XXH3_64bits(url, len), &depth, &via) != LINK_META_PRESENT)
		atomic_fetch_add(&r->ac.meta_missing, 1);
	else
		vs = link_meta_via_str(via, &vlen);
	struct emit *e = malloc(sizeof *e + len + vlen + 2);
	if (!e) {
		link_meta_via_release(r->meta, via);
		atomic_fetch_add(&r->ac.emit_dropped, 1);
		return;
	}
	e->depth = depth;
	e->url_len = (uint32_t)len;
	e->via_len = (uint32_t)vlen;
	memcpy(e->data, url, len);
	e->data[len] = '\0';
	memcpy(e->data + len + 1, vs, vlen);
	e->data[len + 1 + vlen] = '\0';
	link_meta_via_release(r->meta, via);
	if (bqueue_push(r->emitq, e) != BQUEUE_OK) {
		atomic_fetch_add(&r->ac.emit_dropped, 1);
		free(e);
		return;
	}
	atomic_fetch_add(&r->ac.emits_pushed, 1);
	wake_loop(r);
}

/* ---- the feeder thread: seeds, redirect targets, forced flushes ----
 *
 * The loop must never wait, and sieve_add / sieve_flush can. So what the
 * loop (or the thread that starts it) would hand to the sieve goes through
 * this one thread instead: first the seeds (straight from the array, so a
 * million seeds need no queue), then the feed queue: redirect targets the
 * loop has resolved and scope-checked, and forced flush requests. The feed
 * queue cannot overflow: the loop starts no transfer unless it has room for
 * one item per transfer in flight plus a flush request (can_start). One
 * thread keeps them in order: a flush requested after a redirect covers it.
 */
static void *feeder_main(void *arg)
{
	struct run *r = arg;
	struct link_batch b;
	struct url_options uo;
	url_options_init(&uo);
	uo.max_len = r->cfg->max_url_len;
	struct url *u = url_create(&uo);
	struct link_meta_via *none = link_meta_via_new(r->meta, "", 0);
	int ok = u && none && batch_init(r, &b) == 0;
	if (!ok)
		sieve_failure(r, SIEVE_ENOMEM, "feeder");
	for (size_t i = 0; ok && i < r->n_seeds && !atomic_load(&r->stop_adding); i++) {
		size_t room, klen;
		char *key = batch_slot(r, &b, &room);
		const char *seed = r->seeds[i];
		enum url_error ue = url_normalize(u, NULL, seed, strlen(seed), key, room, &klen);
		if (ue != URL_OK) {
			atomic_fetch_add(&r->ac.seeds_invalid, 1);
			fprintf(stderr, "crawler crawl: seed '%s' skipped: %s\n", seed, url_strerror(ue));
			continue;
		}
		batch_add(r, &b, klen, 0, none);
	}
	if (ok)
		batch_flush(r, &b);
	atomic_store(&r->ac.seeding_done_flag, 1);
	wake_loop(r);
	void *item;
	while (bqueue_pop(r->feedq, &item) == BQUEUE_OK) {
		struct feed *f = item;
		if (!ok || atomic_load(&r->stop_adding)) {
			/* teardown: drop */
		} else if (f->flush) {
			sieve_flush_delivered(r);
			atomic_store(&r->ac.flush_done_seq, f->seq);
			wake_loop(r);
		} else {
			struct link_meta_via *via =
				link_meta_via_new(r->meta, f->data + f->url_len + 1, f->via_len);
			size_t room;
			char *key = batch_slot(r, &b, &room);
			if (via && f->url_len < room) {
				memcpy(key, f->data, f->url_len);
				batch_add(r, &b, f->url_len, f->depth, via);
				batch_flush(r, &b);
			} else {
				atomic_fetch_add(&r->ac.meta_dropped, 1);
			}
			link_meta_via_release(r->meta, via);
		}
		free(f);
	}
	if (ok)
		batch_fini(&b);
	link_meta_via_release(r->meta, none);
	url_destroy(u);
	return NULL;
}

/* Loop thread: queues a feed item without waiting (room is guaranteed by
 * can_start; a failure is counted). */
static int feed_push(struct run *r, int flush, uint64_t seq, const char *url, size_t len,
                     const char *via, size_t via_len, uint32_t depth)
{
	struct feed *f = malloc(sizeof *f + len + via_len + 2);
	if (!f)
		return -1;
	f->flush = flush;
	f->seq = seq;
	f->depth = depth;
	f->url_len = (uint32_t)len;
	f->via_len = (uint32_t)via_len;
	if (len)
		memcpy(f->data, url, len);
	f->data[len] = '\0';
	if (via_len)
		memcpy(f->data + len + 1, via, via_len);
	f->data[len + 1 + via_len] = '\0';
	if (bqueue_try_push(r->feedq, f) != BQUEUE_OK) {
		free(f);
		return -1;
	}
	return 0;
}

/* ---- parse threads ---- */

struct parse_state {
	struct links_extractor *ex;
	struct url *u;
	struct link_batch batch;
	int batch_ok;
};

static void *parse_init(void *ctx)
{
	struct run *r = ctx;
	struct parse_state *ps = calloc(1, sizeof *ps);
	if (!ps)
		return NULL;
	struct links_config lc = {.max_links = r->cfg->max_links};
	struct url_options uo;
	url_options_init(&uo);
	uo.max_len = r->cfg->max_url_len;
	ps->u = url_create(&uo);
	ps->batch_ok = batch_init(r, &ps->batch) == 0;
	if (!ps->u || !ps->batch_ok || links_extractor_create(&lc, &ps->ex) != LINKS_OK) {
		url_destroy(ps->u);
		if (ps->batch_ok)
			batch_fini(&ps->batch);
		free(ps);
		return NULL;
	}
	return ps;
}

static void parse_fini(void *ctx, void *state)
{
	(void)ctx;
	struct parse_state *ps = state;
	if (!ps)
		return;
	links_extractor_destroy(ps->ex);
	url_destroy(ps->u);
	batch_fini(&ps->batch);
	free(ps);
}

/* 1 if fp is within distance 3 of a page already seen on host; records fp. */
static int near_dup_check(struct run *r, uint32_t host, uint64_t fp)
{
	struct near_dup_stripe *s = &r->nd[host % NEAR_DUP_STRIPES];
	int dup = 0;
	pthread_mutex_lock(&s->mu);
	struct near_dup_host *h = s->hosts;
	while (h && h->host != host)
		h = h->chain;
	if (!h) {
		h = calloc(1, sizeof *h);
		if (!h)
			goto out;
		h->host = host;
		h->chain = s->hosts;
		s->hosts = h;
	}
	for (uint32_t i = 0; i < h->n; i++)
		if (simhash_distance(h->fp[i], fp) <= 3) {
			dup = 1;
			break;
		}
	if (!dup) {
		h->fp[h->next] = fp;
		h->next = (h->next + 1) % NEAR_DUP_PER_HOST;
		if (h->n < NEAR_DUP_PER_HOST)
			h->n++;
	}
out:
	pthread_mutex_unlock(&s->mu);
	return dup;
}

static void parse_page(struct run *r, struct parse_state *ps, struct job *j)
{
	struct fetch_result *res = j->res;
	struct decode_output d = {0};
	struct link_meta_via *via = NULL;
	char csbuf[64];
	if (decode_body(res->content_encoding, res->body.data, res->body.len,
	                r->cfg->max_body_bytes, &d) != DECODE_OK) {
		atomic_fetch_add(&r->ac.decode_errors, 1);
		j->error = "decode";
		return;
	}
	const char *cs = charset_of(res->content_type, csbuf, sizeof csbuf);
	if (links_extract(ps->ex, res->url, cs, (const char *)d.data, d.len) != LINKS_OK)
		goto out;
	atomic_fetch_add(&r->ac.parsed, 1);
	const struct links_page *pg = links_page_info(ps->ex);
	if (r->cfg->near_dup && near_dup_check(r, j->host, pg->simhash)) {
		j->flags |= CRAWL_LOG_NEAR_DUP;
		atomic_fetch_add(&r->ac.near_dups, 1);
	}
	if (pg->nofollow) {
		atomic_fetch_add(&r->ac.nofollow, 1);
		goto out;
	}
	size_t n;
	const struct link *l = links_result(ps->ex, &n);
	if (n == 0 || atomic_load(&r->stop_adding))
		goto out;
	/* One via string per page, shared by the side-table entries of its links. */
	via = link_meta_via_new(r->meta, res->url, strlen(res->url));
	if (!via) {
		atomic_fetch_add(&r->ac.emit_dropped, n);
		goto out;
	}
	struct link_batch *b = &ps->batch;
	for (size_t i = 0; i < n; i++) {
		atomic_fetch_add(&r->ac.links, 1);
		if (l[i].nofollow) {
			atomic_fetch_add(&r->ac.nofollow, 1);
			continue;
		}
		size_t room, klen;
		char *key = batch_slot(r, b, &room);
		if (url_normalize(ps->u, NULL, l[i].url, l[i].len, key, room, &klen) != URL_OK) {
			atomic_fetch_add(&r->ac.url_invalid, 1);
			continue;
		}
		if (scope_check(r->scope, key, klen, j->depth + 1) != SCOPE_OK) {
			atomic_fetch_add(&r->ac.scope_rejected, 1);
			continue;
		}
		batch_add(r, b, klen, j->depth + 1, via);
	}
	/* Before the job counts as finished: "no parse job outstanding" then
	 * means every link found so far is in the sieve. */
	batch_flush(r, b);
out:
	link_meta_via_release(r->meta, via);
	free(d.data);
}

static void parse_work(void *ctx, void *state, void *item)
{
	struct run *r = ctx;
	struct job *j = item;
	if (j->parse && state)
		parse_page(r, state, j);
	if (bqueue_push(r->writeq, j) != BQUEUE_OK)
		job_free(j);
	wake_loop(r);
}

/* ---- the visit state machine (loop thread) ---- */

static void pump(struct run *r);
static void visit_next(struct run *r, uint32_t host);

static void visit_end(struct run *r, uint32_t host)
{
	struct host_state *hs = host_state(r, host);
	struct visit_outcome o = {
		.kind = hs->visit_requests ? (enum visit_kind)hs->visit_kind : VISIT_NONE,
		.start_us = hs->visit_start_us,
		.requests = hs->visit_requests,
		.retry_after_us = hs->retry_after_us,
	};
	hs->in_visit = 0;
	politeness_release(r->pol, host, &o, now_us());
}

/* Room to start one more transfer without any hand-off ever blocking. */
static int can_start(struct run *r)
{
	if (r->ckpt_phase != CKPT_IDLE || io_stall_active(r->io, NULL, 0))
		return 0;
	size_t inflight = fetch_engine_in_flight(r->fetch);
	if (inflight >= r->cfg->max_connections)
		return 0;
	if (parse_pool_queued(r->pool) + inflight + 1 > parse_pool_capacity(r->pool))
		return 0;
	if (bqueue_size(r->writeq) + inflight + 1 > bqueue_cap(r->writeq) / 2)
		return 0;
	/* each transfer may end in one redirect target, plus one flush request */
	if (bqueue_size(r->feedq) + inflight + 2 > bqueue_cap(r->feedq))
		return 0;
	return 1;
}

static void req_release(struct run *r, struct req *q)
{
	if (q->prev)
		q->prev->next = q->next;
	else if (r->live == q)
		r->live = q->next;
	if (q->next)
		q->next->prev = q->prev;
	free(q->url);
	free(q->via);
	free(q);
}

static int start_fetch(struct run *r, uint32_t host, const char *url, uint32_t depth,
                       const char *via, int robots, int redirects)
{
	struct host_state *hs = host_state(r, host);
	struct req *q = calloc(1, sizeof *q);
	if (!q)
		return -1;
	q->host = host;
	q->depth = depth;
	q->robots = robots;
	q->redirects = redirects;
	q->via = strdup(via ? via : "");
	q->url = strdup(url);
	q->next = r->live;
	if (r->live)
		r->live->prev = q;
	r->live = q;
	if (!q->via || !q->url) {
		req_release(r, q);
		return -1;
	}
	char ip[INET_ADDRSTRLEN] = "";
	uint32_t ipv4;
	if (politeness_host_ip(r->pol, host, &ipv4)) {
		struct in_addr a = {htonl(ipv4)};
		inet_ntop(AF_INET, &a, ip, sizeof ip);
	}
	struct fetch_request fr = {.url = url, .ip = ip, .user = q,
	                           .flags = robots ? FETCH_FLAG_ROBOTS : 0};
	enum fetch_error e = fetch_engine_start(r->fetch, &fr);
	if (e != FETCH_OK) {
		if ((size_t)e < 16)
			r->fetch_errors[e]++;
		req_release(r, q);
		return -1;
	}
	hs->visit_requests++;
	r->requests++;
	return 0;
}

static void start_robots(struct run *r, uint32_t host)
{
	size_t kl;
	const char *key = frontier_host_key(r->frontier, host, &kl);
	char url[FRONTIER_KEY_MAX + 16];
	snprintf(url, sizeof url, "%s/robots.txt", key);
	politeness_robots_set(r->pol, host, POLITENESS_ROBOTS_FETCHING, NULL, 0);
	r->robots_fetches++;
	if (start_fetch(r, host, url, 0, NULL, 1, 0) < 0) {
		/* Could not even start: treat as unreachable (disallow, retry later). */
		struct robots_policy pol;
		if (robots_policy_from_fetch(-1, NULL, 0, r->cfg->user_agent,
		                             (int64_t)(now_us() / 1000), &pol) == ROBOTS_OK)
			politeness_robots_set(r->pol, host, POLITENESS_ROBOTS_KNOWN, pol.robots,
			                      (uint64_t)pol.expires_ms * 1000u);
		visit_end(r, host);
	}
}

static void dns_done(void *ctx, enum dns_error err, const char *name,
                     const struct in_addr *addrs, size_t naddrs);
static void dns_start_waiting(struct run *r);

struct dns_wait {
	struct run *r;
	uint32_t host;
};

static void retire_host(struct run *r, uint32_t host)
{
	uint64_t n = 0;
	frontier_host_retire(r->frontier, host, NULL, NULL, &n);
}

/* Held host (its token) waiting for the resolver to have room for one
 * more lookup: started, in order, as lookups end (dns_start_waiting). */
static int dns_wait_push(struct run *r, uint32_t host)
{
	if (r->dns_wait_n == r->dns_wait_cap) {
		if (r->dns_wait_head > 0) {
			memmove(r->dns_wait, r->dns_wait + r->dns_wait_head,
			        (r->dns_wait_n - r->dns_wait_head) * sizeof *r->dns_wait);
			r->dns_wait_n -= r->dns_wait_head;
			r->dns_wait_head = 0;
		}
		if (r->dns_wait_n == r->dns_wait_cap) {
			size_t cap = r->dns_wait_cap ? 2 * r->dns_wait_cap : 256;
			uint32_t *q = realloc(r->dns_wait, cap * sizeof *q);
			if (!q)
				return -1;
			r->dns_wait = q;
			r->dns_wait_cap = cap;
		}
	}
	r->dns_wait[r->dns_wait_n++] = host;
	return 0;
}

/* Starts the lookup of a held host's name; the visit goes on in dns_done.
 * Returns 0, or -1 when the resolver is at max_pending (the host was put
 * in line, still held). */
static int resolve_host(struct run *r, uint32_t host)
{
	struct host_state *hs = host_state(r, host);
	size_t hl;
	const char *name = frontier_host_name(r->frontier, host, &hl);
	if (hs->dns == HDNS_FAILED || name == NULL || hl == 0) {
		retire_host(r, host);
		visit_end(r, host);
		return 0;
	}
	if (name[0] == '[') { /* IPv6 literal: the engine is IPv4 only */
		hs->dns = HDNS_FAILED;
		retire_host(r, host);
		visit_end(r, host);
		return 0;
	}
	struct dns_wait *w = malloc(sizeof *w);
	if (!w) {
		visit_end(r, host);
		return 0;
	}
	w->r = r;
	w->host = host;
	hs->dns = HDNS_PENDING;
	r->in_dns_call++;
	enum dns_error e = dns_resolve(r->dns, name, dns_done, w, uv_now(&r->loop));
	r->in_dns_call--;
	if (e == DNS_OK)
		return 0;
	free(w);
	if (e == DNS_ERR_BUSY && dns_wait_push(r, host) == 0)
		return -1; /* HDNS_PENDING: in line */
	hs->dns = HDNS_NONE;
	r->dns_errors[e < 16 ? e : 15]++;
	hs->visit_kind = VISIT_RETRY_LATER;
	hs->visit_requests = 1; /* so the retry delay applies */
	hs->retry_after_us = now_us() + 1000000u;
	visit_end(r, host);
	return 0;
}

/* A lookup ended: hosts in line start theirs while the resolver has room. */
static void dns_start_waiting(struct run *r)
{
	while (r->dns_wait_head < r->dns_wait_n && !r->finished) {
		uint32_t host = r->dns_wait[r->dns_wait_head++];
		if (resolve_host(r, host) < 0) {
			r->dns_wait_n--; /* put back in front: it was pushed last */
			r->dns_wait[--r->dns_wait_head] = host;
			break;
		}
	}
	if (r->dns_wait_head == r->dns_wait_n)
		r->dns_wait_head = r->dns_wait_n = 0;
}

static void visit_begin(struct run *r, uint32_t host)
{
	struct host_state *hs = host_state(r, host);
	if (!hs)
		return;
	hs->in_visit = 1;
	hs->visit_requests = 0;
	hs->visit_kind = VISIT_OK;
	hs->retry_after_us = 0;
	hs->visit_start_us = now_us();
	politeness_visit_budget(r->pol, host, &hs->visit_max_urls, &hs->visit_max_us);
	if (hs->dns != HDNS_OK) {
		resolve_host(r, host);
		return;
	}
	enum politeness_robots_state st;
	const struct robots *rob;
	uint64_t exp;
	politeness_robots_state(r->pol, host, &st, &rob, &exp);
	if (r->cfg->obey_robots &&
	    (st == POLITENESS_ROBOTS_UNKNOWN ||
	     (st == POLITENESS_ROBOTS_KNOWN && exp && exp < now_us()))) {
		start_robots(r, host);
		return;
	}
	visit_next(r, host);
}

static void dns_answered(void *ctx, enum dns_error err, const char *name,
                         const struct in_addr *addrs, size_t naddrs)
{
	(void)name;
	struct dns_wait *w = ctx;
	struct run *r = w->r;
	uint32_t host = w->host;
	free(w);
	struct host_state *hs = host_state(r, host);
	if (r->finished) {
		hs->dns = HDNS_NONE;
		return;
	}
	if (err != DNS_OK || naddrs == 0) {
		r->dns_errors[err < 16 ? err : 15]++;
		if (err == DNS_ERR_TIMEOUT || err == DNS_ERR_SERVFAIL || err == DNS_ERR_BUSY) {
			/* Transient: the host backs off as after a failed visit and
			 * is retired only after max_consecutive_errors of them. */
			hs->dns = HDNS_NONE;
			hs->visit_kind = VISIT_ERROR;
			hs->visit_requests = 1;
		} else {
			r->hosts_dns_failed++;
			hs->dns = HDNS_FAILED;
			retire_host(r, host);
		}
		visit_end(r, host);
		if (!r->in_dns_call)
			pump(r);
		return;
	}
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &addrs[0], ip, sizeof ip);
	if (!r->cfg->allow_private_networks && fetch_addr_is_private(ip)) {
		r->private_refused++;
		hs->dns = HDNS_FAILED;
		retire_host(r, host);
		visit_end(r, host);
		if (!r->in_dns_call)
			pump(r);
		return;
	}
	hs->dns = HDNS_OK;
	politeness_host_set_ip(r->pol, host, ntohl(addrs[0].s_addr));
	visit_end(r, host); /* VISIT_NONE: back under the IP's token */
	if (!r->in_dns_call) /* a synchronous answer: the caller's pump goes on */
		pump(r);
}

/* The resolver's callback: the host's visit goes on, then hosts waiting in
 * line for the resolver take the room this lookup left. */
static void dns_done(void *ctx, enum dns_error err, const char *name,
                     const struct in_addr *addrs, size_t naddrs)
{
	struct run *r = ((struct dns_wait *)ctx)->r;
	dns_answered(ctx, err, name, addrs, naddrs);
	if (!r->in_dns_call)
		dns_start_waiting(r);
}

static void visit_next(struct run *r, uint32_t host)
{
	struct host_state *hs = host_state(r, host);
	for (;;) {
		if (r->stopping || hs->visit_kind != VISIT_OK ||
		    hs->visit_requests >= hs->visit_max_urls ||
		    (hs->visit_requests && now_us() - hs->visit_start_us >= hs->visit_max_us) ||
		    (r->cfg->max_pages && r->pages_started >= r->cfg->max_pages) || !can_start(r)) {
			visit_end(r, host);
			return;
		}
		struct frontier_url fu;
		if (frontier_pop(r->frontier, host, &fu) != FRONTIER_OK) {
			visit_end(r, host);
			return;
		}
		if (r->cfg->obey_robots) {
			enum politeness_robots_state st;
			const struct robots *rob = NULL;
			uint64_t exp;
			politeness_robots_state(r->pol, host, &st, &rob, &exp);
			char path[FRONTIER_URL_MAX + 8];
			if (rob &&
			    (robots_path_from_url(fu.url, fu.url_len, path, sizeof path) != ROBOTS_OK ||
			     !robots_allowed(rob, path, strlen(path)))) {
				r->robots_disallowed++;
				continue;
			}
		}
		char *url = strndup(fu.url, fu.url_len);
		char *via = strndup(fu.via, fu.via_len);
		uint32_t depth = fu.depth;
		int rc = (url && via) ? start_fetch(r, host, url, depth, via, 0, 0) : -1;
		free(url);
		free(via);
		if (rc == 0) {
			r->pages_started++;
			return; /* one request per host in flight; on_fetch_done goes on */
		}
	}
}

static void handle_robots(struct run *r, struct req *q, struct fetch_result *res,
                          struct job *j)
{
	uint32_t host = q->host;
	long st = res->error == FETCH_OK ? res->status : -1;
	if (st >= 300 && st < 400 && res->location && q->redirects < ROBOTS_MAX_REDIRECTS) {
		int crawlable;
		char *to = resolve_location(r, res->url, res->location, &crawlable);
		size_t kl, h, hl, bkl;
		const char *key = frontier_host_key(r->frontier, host, &bkl);
		/* Only same-origin redirects: another host has no resolved IP here. */
		if (to && crawlable && url_key_split(to, strlen(to), &kl, &h, &hl) == 0 && kl == bkl &&
		    memcmp(to, key, kl) == 0 && !r->stopping && can_start(r)) {
			j->redirect = to;
			if (start_fetch(r, host, to, 0, NULL, 1, q->redirects + 1) == 0)
				return;
		} else {
			free(to);
		}
	}
	struct decode_output d = {0};
	const char *body = NULL;
	size_t blen = 0;
	if (st >= 200 && st < 300 &&
	    decode_body(res->content_encoding, res->body.data, res->body.len, ROBOTS_PARSE_LIMIT,
	                &d) == DECODE_OK) {
		body = (const char *)d.data;
		blen = d.len;
	}
	struct robots_policy pol;
	if (robots_policy_from_fetch((int)st, body, blen, r->cfg->user_agent,
	                             (int64_t)(now_us() / 1000), &pol) == ROBOTS_OK) {
		politeness_robots_set(r->pol, host, POLITENESS_ROBOTS_KNOWN, pol.robots,
		                      (uint64_t)pol.expires_ms * 1000u);
		double cd = robots_crawl_delay(pol.robots);
		if (cd > 0)
			politeness_host_set_crawl_delay(r->pol, host, (uint64_t)(cd * 1e6));
	}
	free(d.data);
}

static void fetch_done(struct run *r, struct fetch_result *res)
{
	struct req *q = res->user;
	uint32_t host = q->host;
	struct host_state *hs = host_state(r, host);
	struct job *j = calloc(1, sizeof *j);
	if (!j) {
		fetch_result_free(res);
		req_release(r, q);
		return;
	}
	j->res = res;
	j->host = host;
	j->depth = q->depth;
	j->robots = q->robots;
	j->via = q->via;
	q->via = NULL;
	if (res->error != FETCH_OK) {
		if ((size_t)res->error < 16)
			r->fetch_errors[res->error]++;
		if (res->error != FETCH_ERR_CANCELLED)
			hs->visit_kind = VISIT_ERROR;
	} else {
		if (res->status >= 0 && res->status < STATUS_MAX)
			r->status[res->status]++;
		r->bytes += res->body.len;
		if (res->status == 429 || (res->status == 503 && res->retry_after_s >= 0)) {
			hs->visit_kind = VISIT_RETRY_LATER;
			uint64_t ra = res->retry_after_s >= 0 ? (uint64_t)res->retry_after_s : 60u;
			hs->retry_after_us = now_us() + ra * 1000000u;
		} else if (res->status >= 500) {
			hs->visit_kind = VISIT_ERROR;
		}
	}
	if (q->robots) {
		j->flags |= CRAWL_LOG_ROBOTS;
		if (!r->finished)
			handle_robots(r, q, res, j);
	} else {
		r->pages_done++;
		frontier_host_account(r->frontier, host, 1, res->body.len);
		if (res->error == FETCH_OK && res->status >= 300 && res->status < 400 &&
		    res->location) {
			int crawlable;
			j->flags |= CRAWL_LOG_REDIRECT;
			j->redirect = resolve_location(r, res->url, res->location, &crawlable);
			r->redirects++;
			/* To the sieve through the feeder (sieve_add may wait; the
			 * loop never does). */
			if (j->redirect && crawlable && !r->finished &&
			    scope_check(r->scope, j->redirect, strlen(j->redirect), q->depth) ==
			            SCOPE_OK &&
			    feed_push(r, 0, 0, j->redirect, strlen(j->redirect), res->url,
			              strlen(res->url), q->depth) != 0)
				r->redirect_dropped++;
		}
		j->parse = res->error == FETCH_OK && res->status >= 200 && res->status < 300 &&
		           is_html(res->content_type) && res->body.len > 0;
	}
	req_release(r, q);
	/* Hand off: parse (or straight to the writer). */
	if (!j->robots) {
		if (parse_pool_try_submit(r->pool, j) != PARSE_POOL_OK) {
			r->parse_full++;
			j->parse = 0;
			if (bqueue_try_push(r->writeq, j) != BQUEUE_OK) {
				r->writer_full++;
				job_free(j);
			}
		}
	} else if (bqueue_try_push(r->writeq, j) != BQUEUE_OK) {
		r->writer_full++;
		job_free(j);
	}
	if (r->finished)
		return;
	/* Continue the visit unless a robots redirect is already in flight. */
	if (hs->in_visit) {
		enum politeness_robots_state st;
		const struct robots *rob;
		uint64_t exp;
		politeness_robots_state(r->pol, host, &st, &rob, &exp);
		if (st != POLITENESS_ROBOTS_FETCHING)
			visit_next(r, host);
	}
	pump(r);
}

/* The fetch engine's callback. While a checkpoint is taken a finished
 * transfer is parked unprocessed (its URL counts as in flight), so nothing
 * reaches the parse threads, the sieve or the writer during the cut. */
static void on_fetch_done(void *ctx, struct fetch_result *res)
{
	struct run *r = ctx;
	if (r->ckpt_phase != CKPT_IDLE && !r->finished) {
		if (r->n_parked == r->parked_cap) {
			size_t cap = r->parked_cap ? 2 * r->parked_cap : 64;
			struct fetch_result **p = realloc(r->parked, cap * sizeof *p);
			if (p) {
				r->parked = p;
				r->parked_cap = cap;
			}
		}
		if (r->n_parked < r->parked_cap) {
			r->parked[r->n_parked++] = res;
			return;
		}
	}
	fetch_done(r, res);
}

/* ---- loop plumbing ---- */

/* One emitted URL into the frontier; kept aside when the frontier cannot
 * take it yet (a full disk): then 0, and the emit queue waits behind it
 * (the sieve's flush thread, then the adders, wait in turn). */
static int take_emit(struct run *r, struct emit *e)
{
	if (frontier_add(r, e->data, e->url_len, e->data + e->url_len + 1, e->via_len, e->depth) < 0) {
		r->pending_emit = e;
		return 0;
	}
	free(e);
	return 1;
}

/* Moves emitted URLs into the frontier: up to `budget`, or all of them
 * when budget is 0. Returns 0 if one had to stay pending. */
static int drain_emits_upto(struct run *r, size_t budget)
{
	void *item;
	int all = budget == 0;
	if (r->pending_emit) {
		struct emit *e = r->pending_emit;
		r->pending_emit = NULL;
		if (!take_emit(r, e))
			return 0;
		io_stall_resolved(r->io, r->spill_label);
	}
	while ((all || budget-- > 0) && bqueue_try_pop(r->emitq, &item) == BQUEUE_OK)
		if (!take_emit(r, item))
			return 0;
	return 1;
}

static void drain_emits(struct run *r)
{
	/* At most one queue's worth per pump, so a fast sieve flush cannot
	 * starve the loop's other work; each emit also wakes the loop again. */
	drain_emits_upto(r, bqueue_cap(r->emitq));
}

static void finish(struct run *r);
static void on_abandon(uv_timer_t *t);
static void ckpt_start(struct run *r, int final);
static void ckpt_step(struct run *r);

/* Asks the feeder for a forced sieve flush (at most one pending). idle:
 * requested with nothing in flight, parsing or queued; only such a flush
 * can end the crawl. */
static void request_flush(struct run *r, int idle)
{
	uint64_t emits = atomic_load(&r->ac.emits_pushed);
	if (feed_push(r, 1, r->flush_seq + 1, NULL, 0, NULL, 0, 0) != 0)
		return; /* no room (cannot happen: can_start keeps one slot); next pump retries */
	r->flush_seq++;
	r->flush_pending = 1;
	r->flush_idle = idle;
	r->flush_emits_before = emits;
	r->flush_keys_at = atomic_load(&r->ac.keys_added);
	if (idle)
		r->forced_flushes++;
	else
		r->early_flushes++;
}

static int crawl_is_done(struct run *r)
{
	size_t inflight = fetch_engine_in_flight(r->fetch);
	uint64_t outstanding = parse_pool_outstanding(r->pool);
	struct politeness_stats ps;
	politeness_stats(r->pol, &ps);
	if (r->stopping)
		return inflight == 0 && ps.hosts_held == 0 && (outstanding == 0 || r->sigints > 0);
	if (r->cfg->max_pages && r->pages_started >= r->cfg->max_pages)
		return inflight == 0 && ps.hosts_held == 0 && outstanding == 0;
	if (ps.hosts_in_heap > 0)
		return 0;
	/* The frontier is dry. URLs may still wait in the sieve's buffer (it
	 * flushes by itself only when full): a forced flush, run by the feeder
	 * thread, delivers them. */
	if (r->flush_pending && atomic_load(&r->ac.flush_done_seq) == r->flush_seq) {
		r->flush_pending = 0;
		/* The end: a flush requested with nothing in flight, parsing or
		 * queued emitted nothing. emits_pushed unchanged means the
		 * frontier stayed dry since the request, so no transfer, parse or
		 * redirect could have added anything after it. */
		if (r->flush_idle && atomic_load(&r->ac.emits_pushed) == r->flush_emits_before &&
		    inflight == 0 && ps.hosts_held == 0 && outstanding == 0 &&
		    bqueue_size(r->emitq) == 0 && bqueue_size(r->feedq) == 0)
			return 1;
	}
	if (r->flush_pending || !atomic_load(&r->ac.seeding_done_flag))
		return 0;
	int idle = inflight == 0 && ps.hosts_held == 0 && outstanding == 0 &&
	           bqueue_size(r->emitq) == 0 && bqueue_size(r->feedq) == 0;
	if (idle)
		request_flush(r, 1);
	else if (bqueue_size(r->emitq) == 0 &&
	         atomic_load(&r->ac.keys_added) - r->flush_keys_at >
	                 atomic_load(&r->ac.emits_pushed) / EARLY_FLUSH_RATIO)
		/* Dry while pages are still fetched or parsed: deliver the links
		 * found so far now instead of after the whole wave has drained
		 * (fetching would stall meanwhile). A flush reads and rewrites the
		 * sieve's whole signature file (one entry per URL emitted so far),
		 * so one is asked for only once the keys added since the last one
		 * are a fair share of that file: flush work stays within
		 * EARLY_FLUSH_RATIO entries per key, however big the crawl. */
		request_flush(r, 0);
	return 0;
}

static void on_wake(uv_timer_t *t)
{
	pump(t->data);
}

static void pump(struct run *r)
{
	if (r->finished)
		return;
	if (atomic_load(&r->sieve_failed) && !r->stopping) {
		pthread_mutex_lock(&r->wake_mu);
		fprintf(stderr, "\ncrawler crawl: %s: stopping\n", r->sieve_error);
		pthread_mutex_unlock(&r->wake_mu);
		r->exit_code = CRAWL_EXIT_FAILURE;
		r->stopping = 1;
		uv_timer_start(&r->abandon, on_abandon, 3000, 0);
	}
	drain_emits(r);
	if (r->dns_wait_head < r->dns_wait_n && !r->in_dns_call)
		dns_start_waiting(r);
	if (r->ckpt_phase != CKPT_IDLE) {
		ckpt_step(r);
		return;
	}
	while (!r->stopping && can_start(r) &&
	       !(r->cfg->max_pages && r->pages_started >= r->cfg->max_pages)) {
		uint32_t host;
		uint64_t at;
		uint64_t now = now_us();
		if (now < r->start_after_us) {
			uv_timer_start(&r->wake, on_wake, (r->start_after_us - now + 999) / 1000, 0);
			break;
		}
		enum politeness_err e = politeness_pop_ready(r->pol, now, &host, &at);
		if (e == POLITENESS_OK) {
			visit_begin(r, host);
			continue;
		}
		if (e == POLITENESS_NOT_READY) {
			uint64_t ms = at > now ? (at - now + 999) / 1000 : 0;
			uv_timer_start(&r->wake, on_wake, ms, 0);
		}
		break;
	}
	if (crawl_is_done(r))
		ckpt_start(r, 1); /* the last checkpoint, then the end */
}

static void on_async(uv_async_t *a)
{
	pump(a->data);
}

static void print_progress(struct run *r, int final)
{
	struct frontier_stats fs;
	struct politeness_stats ps;
	struct dns_stats ds;
	frontier_stats(r->frontier, &fs);
	politeness_stats(r->pol, &ps);
	dns_resolver_stats(r->dns, &ds);
	double el = (double)(now_us() - r->t0_us) / 1e6;
	uint64_t errs = 0;
	for (int i = 1; i < 16; i++)
		errs += r->fetch_errors[i];
	char stall[600] = "";
	if (io_stall_active(r->io, stall + 10, sizeof stall - 10))
		memcpy(stall, "  PAUSED: ", 10);
	fprintf(stderr,
	        "\r%" PRIu64 " pages  %.0f p/s  %.2f MB/s  in flight %zu  hosts %" PRIu64
	        " waiting/%" PRIu64 "  frontier %" PRIu64 "  dns %zu  errors %" PRIu64 "%s   %s",
	        r->pages_done, el > 0 ? (double)r->pages_done / el : 0.0,
	        el > 0 ? (double)r->bytes / el / 1e6 : 0.0, fetch_engine_in_flight(r->fetch),
	        ps.hosts_in_heap, fs.hosts, fs.urls_queued, ds.pending, errs, stall,
	        final ? "\n" : "");
}

/* In-flight transfers had their few seconds: a last checkpoint records them
 * as not done, and the crawl ends. */
static void on_abandon(uv_timer_t *t)
{
	struct run *r = t->data;
	ckpt_start(r, 1);
	pump(r);
}

static void on_tick(uv_timer_t *t)
{
	struct run *r = t->data;
	r->tick_count++;
	uint64_t el_ms = (now_us() - r->t0_us) / 1000u;
	if (r->cfg->max_time_ms && el_ms >= r->cfg->max_time_ms && !r->stopping) {
		r->stopping = 1;
		uv_timer_start(&r->abandon, on_abandon, 3000, 0);
	}
	if (r->cfg->checkpoint_interval_s && !r->stopping &&
	    now_us() - r->ckpt_last_us >= (uint64_t)r->cfg->checkpoint_interval_s * 1000000u)
		ckpt_start(r, 0);
	if (r->tick_count % 10 == 0) {
		if (r->progress)
			print_progress(r, 0);
		uint64_t per = r->cfg->stats_interval_s * 10u;
		if (per && r->tick_count % per == 0 && r->n_samples < MAX_SAMPLES) {
			r->samples[r->n_samples++] = r->pages_done - r->last_sample_pages;
			r->last_sample_pages = r->pages_done;
		}
	}
	pump(r);
}

static void on_sigint(uv_signal_t *s, int sig)
{
	(void)sig;
	struct run *r = s->data;
	r->sigints++;
	if (r->sigints >= 2) {
		fprintf(stderr, "\ncrawler crawl: second SIGINT, stopping at once\n");
		_exit(CRAWL_EXIT_ABORTED);
	}
	fprintf(stderr, "\ncrawler crawl: SIGINT, finishing (again to stop at once)\n");
	r->stopping = 1;
	uv_timer_start(&r->abandon, on_abandon, 3000, 0);
	pump(r);
}

static void finish(struct run *r)
{
	if (r->finished)
		return;
	r->finished = 1;
	uv_timer_stop(&r->wake);
	uv_timer_stop(&r->tick);
	uv_timer_stop(&r->abandon);
	uv_stop(&r->loop);
}

/* ---- checkpoints (see enum ckpt_phase and checkpoint.h) ---- */

/* The crawl's counters a checkpoint carries: loop-thread fields of struct
 * run, and atomics of r->ac. Saved by name, so a later version can add or
 * drop one and still read an older state. */
struct saved_counter {
	const char *name;
	size_t off;
	int atomic;
};
#define RUN_COUNTER(f) {#f, offsetof(struct run, f), 0}
#define ATOMIC_COUNTER(f) {"ac." #f, offsetof(struct run, ac.f), 1}
static const struct saved_counter saved_counters[] = {
	RUN_COUNTER(pages_done), RUN_COUNTER(requests), RUN_COUNTER(bytes),
	RUN_COUNTER(robots_fetches), RUN_COUNTER(robots_disallowed), RUN_COUNTER(redirects),
	RUN_COUNTER(private_refused), RUN_COUNTER(parse_full), RUN_COUNTER(writer_full),
	RUN_COUNTER(hosts_dns_failed), RUN_COUNTER(redirect_dropped), RUN_COUNTER(forced_flushes),
	RUN_COUNTER(early_flushes), RUN_COUNTER(ckpt_count), RUN_COUNTER(ckpt_failures),
	RUN_COUNTER(ckpt_us_total), RUN_COUNTER(ckpt_us_max),
	ATOMIC_COUNTER(parsed), ATOMIC_COUNTER(links), ATOMIC_COUNTER(scope_rejected),
	ATOMIC_COUNTER(nofollow), ATOMIC_COUNTER(near_dups), ATOMIC_COUNTER(decode_errors),
	ATOMIC_COUNTER(emit_dropped), ATOMIC_COUNTER(writer_errors), ATOMIC_COUNTER(warc_revisits),
	ATOMIC_COUNTER(url_invalid), ATOMIC_COUNTER(seeds_invalid), ATOMIC_COUNTER(meta_present),
	ATOMIC_COUNTER(meta_dropped), ATOMIC_COUNTER(meta_missing), ATOMIC_COUNTER(meta_flushes),
	ATOMIC_COUNTER(sieve_errors), ATOMIC_COUNTER(emits_pushed), ATOMIC_COUNTER(keys_added),
};
#define STATE_MAGIC "CRSTATE1"

static void put_array(struct recfile_writer *w, const uint64_t *v, uint32_t n)
{
	recfile_put_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		recfile_put_u64(w, v[i]);
}

/* Writes the crawl's own state: counters, per-host crawl and politeness
 * state, the URLs taken from the frontier and not done (in flight or
 * parked: put back at the front of their queues on resume), and where the
 * WARC stood. */
static int state_save(struct run *r, const char *path)
{
	struct recfile_writer *w;
	uint64_t now = now_us();
	uint32_t nhosts = frontier_host_count(r->frontier), n = 0;
	uint64_t scope[SCOPE_VERDICT_COUNT];

	if (recfile_writer_create(path, STATE_MAGIC, &w) != RECFILE_OK)
		return -1;
	recfile_put_u64(w, now - r->t0_us);
	recfile_put_u32(w, (uint32_t)(sizeof saved_counters / sizeof saved_counters[0]));
	for (size_t i = 0; i < sizeof saved_counters / sizeof saved_counters[0]; i++) {
		const struct saved_counter *c = &saved_counters[i];
		const char *p = (const char *)r + c->off;
		uint64_t v = c->atomic ? atomic_load((atomic_uint_fast64_t *)(void *)p)
		                       : *(const uint64_t *)(const void *)p;
		recfile_put_bytes(w, c->name, (uint32_t)strlen(c->name));
		recfile_put_u64(w, v);
	}
	put_array(w, r->status, STATUS_MAX);
	put_array(w, r->dns_errors, 16);
	put_array(w, r->fetch_errors, 16);
	put_array(w, r->samples, (uint32_t)r->n_samples);
	for (int v = 0; v < SCOPE_VERDICT_COUNT; v++)
		scope[v] = scope_count(r->scope, (enum scope_verdict)v);
	put_array(w, scope, SCOPE_VERDICT_COUNT);
	recfile_put_bytes(w, r->ckpt_warc.file, (uint32_t)strlen(r->ckpt_warc.file));
	recfile_put_u64(w, r->ckpt_warc.offset);
	recfile_put_u32(w, nhosts);
	for (uint32_t h = 0; h < nhosts; h++) {
		struct politeness_host_saved ps;
		const struct host_state *hs = h >> HOST_BLOCK_BITS < r->n_blocks &&
		                                              r->blocks[h >> HOST_BLOCK_BITS]
		                                      ? host_state(r, h) : NULL;
		politeness_host_save(r->pol, h, now, &ps);
		/* a lookup in progress is made again */
		recfile_put_u8(w, hs && (hs->dns == HDNS_OK || hs->dns == HDNS_FAILED) ? hs->dns
		                                                                     : HDNS_NONE);
		recfile_put_u64(w, ps.wait_us);
		recfile_put_u64(w, ps.ip_wait_us);
		recfile_put_u64(w, ps.crawl_delay_us);
		recfile_put_u32(w, ps.errors);
		recfile_put_u32(w, ps.ipv4);
		recfile_put_u8(w, ps.has_ip);
	}
	for (const struct req *q = r->live; q; q = q->next)
		n += !q->robots;
	recfile_put_u32(w, n);
	for (const struct req *q = r->live; q; q = q->next) {
		if (q->robots)
			continue;
		recfile_put_u32(w, q->host);
		recfile_put_u32(w, q->depth);
		recfile_put_bytes(w, q->url, (uint32_t)strlen(q->url));
		recfile_put_bytes(w, q->via, (uint32_t)strlen(q->via));
	}
	if (recfile_writer_close(w, 0) != RECFILE_OK)
		return -1;
	return 0;
}

static int get_array(struct recfile_reader *rd, uint64_t *v, uint32_t cap, uint32_t *n)
{
	uint32_t k;
	if (recfile_get_u32(rd, &k) != RECFILE_OK || k > cap)
		return -1;
	for (uint32_t i = 0; i < k; i++)
		if (recfile_get_u64(rd, &v[i]) != RECFILE_OK)
			return -1;
	if (n)
		*n = k;
	return 0;
}

/* Reads the state saved by state_save into a run whose frontier and
 * politeness were just restored from the same checkpoint. warc_file gets
 * the name of the WARC file the checkpoint wrote last. 0, or -1 (corrupt
 * or inconsistent: the message in err). */
static int state_load(struct run *r, const char *path, char *warc_file, size_t wcap, char *err,
                      size_t errlen)
{
	struct recfile_reader *rd = NULL;
	enum recfile_err re = recfile_reader_open(path, STATE_MAGIC, &rd);
	uint64_t now = now_us(), elapsed, scope[SCOPE_VERDICT_COUNT];
	uint32_t n, nsamples, nscope, nhosts;
	char name[128], url[FRONTIER_URL_MAX + 1], via[FRONTIER_URL_MAX + 1];
	int rc = -1;

	if (re != RECFILE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		         re == RECFILE_ERR_IO ? strerror(errno) : recfile_strerror(re));
		return -1;
	}
	if (recfile_get_u64(rd, &elapsed) != RECFILE_OK || recfile_get_u32(rd, &n) != RECFILE_OK)
		goto bad;
	r->elapsed_before_us = elapsed;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len;
		uint64_t v;
		if (recfile_get_bytes(rd, name, sizeof name, &len) != RECFILE_OK ||
		    recfile_get_u64(rd, &v) != RECFILE_OK)
			goto bad;
		for (size_t k = 0; k < sizeof saved_counters / sizeof saved_counters[0]; k++) {
			const struct saved_counter *c = &saved_counters[k];
			if (strcmp(c->name, name) != 0)
				continue;
			char *p = (char *)r + c->off;
			if (c->atomic)
				atomic_store((atomic_uint_fast64_t *)(void *)p, v);
			else
				*(uint64_t *)(void *)p = v;
		}
	}
	r->pages_started = r->pages_done; /* what was in flight is queued again */
	if (get_array(rd, r->status, STATUS_MAX, NULL) || get_array(rd, r->dns_errors, 16, NULL) ||
	    get_array(rd, r->fetch_errors, 16, NULL) ||
	    get_array(rd, r->samples, MAX_SAMPLES, &nsamples) ||
	    get_array(rd, scope, SCOPE_VERDICT_COUNT, &nscope))
		goto bad;
	r->n_samples = nsamples;
	r->last_sample_pages = r->pages_done;
	for (uint32_t v = 0; v < nscope; v++)
		scope_count_add(r->scope, (enum scope_verdict)v, scope[v]);
	{
		uint32_t len;
		uint64_t off;
		if (recfile_get_bytes(rd, warc_file, (uint32_t)wcap - 1, &len) != RECFILE_OK ||
		    recfile_get_u64(rd, &off) != RECFILE_OK)
			goto bad;
		warc_file[len] = '\0';
	}
	if (recfile_get_u32(rd, &nhosts) != RECFILE_OK || nhosts != frontier_host_count(r->frontier))
		goto bad;
	for (uint32_t h = 0; h < nhosts; h++) {
		struct politeness_host_saved ps;
		uint8_t dns;
		struct host_state *hs = host_state(r, h);
		if (!hs || recfile_get_u8(rd, &dns) != RECFILE_OK ||
		    recfile_get_u64(rd, &ps.wait_us) != RECFILE_OK ||
		    recfile_get_u64(rd, &ps.ip_wait_us) != RECFILE_OK ||
		    recfile_get_u64(rd, &ps.crawl_delay_us) != RECFILE_OK ||
		    recfile_get_u32(rd, &ps.errors) != RECFILE_OK ||
		    recfile_get_u32(rd, &ps.ipv4) != RECFILE_OK ||
		    recfile_get_u8(rd, &ps.has_ip) != RECFILE_OK)
			goto bad;
		hs->dns = dns == HDNS_OK && ps.has_ip ? HDNS_OK : dns == HDNS_FAILED ? HDNS_FAILED : HDNS_NONE;
		if (politeness_host_restore(r->pol, h, &ps, now) == POLITENESS_ERR_NOMEM)
			goto bad;
	}
	if (recfile_get_u32(rd, &n) != RECFILE_OK)
		goto bad;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t host, depth, ulen, vlen;
		if (recfile_get_u32(rd, &host) != RECFILE_OK || recfile_get_u32(rd, &depth) != RECFILE_OK ||
		    recfile_get_bytes(rd, url, sizeof url, &ulen) != RECFILE_OK ||
		    recfile_get_bytes(rd, via, sizeof via, &vlen) != RECFILE_OK || host >= nhosts)
			goto bad;
		/* a retired host counts it as dropped */
		frontier_unpop(r->frontier, host, url, ulen, via, vlen, depth);
	}
	if (!recfile_reader_at_end(rd))
		goto bad;
	rc = 0;
	goto out;
bad:
	snprintf(err, errlen, "%s: truncated or inconsistent crawl state", path);
out:
	recfile_reader_close(rd);
	return rc;
}

/* Begins a checkpoint (or, final, the last one, after which the crawl
 * ends). A failed sieve cannot be checkpointed: the previous one stands. */
static void ckpt_start(struct run *r, int final)
{
	if (r->finished)
		return;
	if (r->ckpt_phase != CKPT_IDLE) {
		r->ckpt_final |= final;
		return;
	}
	if (atomic_load(&r->sieve_failed)) {
		if (final)
			finish(r);
		return;
	}
	r->ckpt_phase = CKPT_DRAIN;
	r->ckpt_final = final;
	r->ckpt_t0_us = now_us();
	r->ckpt_seq++;
	r->ckpt_err[0] = '\0';
}

static void ckpt_end(struct run *r, int ok)
{
	uint64_t dt = now_us() - r->ckpt_t0_us;
	size_t n = r->n_parked;
	if (ok) {
		r->ckpt_count++;
		r->ckpt_us_total += dt;
		if (dt > r->ckpt_us_max)
			r->ckpt_us_max = dt;
	} else {
		r->ckpt_failures++;
		fprintf(stderr, "\ncrawler crawl: checkpoint %" PRIu64 " failed: %s; the previous one stands\n",
		        r->ckpt_seq, r->ckpt_err[0] ? r->ckpt_err : "unknown error");
		checkpoint_discard(r->cfg->output_dir, r->ckpt_seq);
	}
	r->ckpt_phase = CKPT_IDLE;
	r->ckpt_last_us = now_us();
	if (r->ckpt_final)
		finish(r);
	/* Parked results go on as if they had just arrived (after a final
	 * checkpoint they are still written: the checkpoint counts them as in
	 * flight, so a resume fetches them again). */
	r->n_parked = 0;
	for (size_t i = 0; i < n; i++)
		fetch_done(r, r->parked[i]);
	if (!r->finished)
		pump(r);
}

/* Worker thread: the sieve's copy (it may link and copy files) and the
 * commit (every fsync); the loop goes on meanwhile, starting nothing. */
static void ckpt_work(uv_work_t *w)
{
	struct run *r = w->data;
	char path[4300];
	snprintf(path, sizeof path, "%s/sieve", r->ckpt_dir);
	int rc = sieve_checkpoint(r->sieve, path);
	if (rc != SIEVE_OK) {
		snprintf(r->ckpt_err, sizeof r->ckpt_err, "sieve: %s (%s)", sieve_strerror(rc),
		         sieve_last_error(r->sieve));
		r->ckpt_rc = -1;
		return;
	}
	r->ckpt_rc = checkpoint_commit(r->cfg->output_dir, r->ckpt_seq, r->ckpt_err,
	                               sizeof r->ckpt_err);
}

static void ckpt_work_done(uv_work_t *w, int status)
{
	struct run *r = w->data;
	ckpt_end(r, status == 0 && r->ckpt_rc == 0);
}

/* The loop's part of the files: the frontier (its segments linked) and the
 * crawl's state, into ckpt-N.tmp. */
static int ckpt_write_local(struct run *r)
{
	char path[4300];
	enum frontier_err fe;
	enum politeness_err pe;
	if (checkpoint_prepare(r->cfg->output_dir, r->ckpt_seq, r->ckpt_dir, sizeof r->ckpt_dir,
	                       r->ckpt_err, sizeof r->ckpt_err) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/frontier", r->ckpt_dir);
	if (mkdir(path, 0755) != 0) {
		snprintf(r->ckpt_err, sizeof r->ckpt_err, "%s: %s", path, strerror(errno));
		return -1;
	}
	fe = frontier_checkpoint(r->frontier, path);
	if (fe != FRONTIER_OK) {
		snprintf(r->ckpt_err, sizeof r->ckpt_err, "frontier into %s: %s (%s)", path,
		         frontier_strerror(fe), strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/robots", r->ckpt_dir);
	pe = politeness_robots_checkpoint(r->pol, path, now_us());
	if (pe != POLITENESS_OK) {
		snprintf(r->ckpt_err, sizeof r->ckpt_err, "robots.txt cache into %s: %s (%s)", path,
		         politeness_strerror(pe), strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/state", r->ckpt_dir);
	if (state_save(r, path) != 0) {
		snprintf(r->ckpt_err, sizeof r->ckpt_err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Moves the checkpoint on as far as it can now; the loop calls it again
 * (from pump) whenever something it waits for may have happened. */
static void ckpt_step(struct run *r)
{
	switch (r->ckpt_phase) {
	case CKPT_DRAIN:
		/* a forced flush of the end-of-crawl logic, now done */
		if (r->flush_pending && atomic_load(&r->ac.flush_done_seq) == r->flush_seq)
			r->flush_pending = 0;
		if (!atomic_load(&r->ac.seeding_done_flag) || r->flush_pending ||
		    parse_pool_outstanding(r->pool) > 0 || bqueue_size(r->feedq) > 0)
			return;
		/* every processed page's links are in the sieve: deliver them */
		if (feed_push(r, 1, r->flush_seq + 1, NULL, 0, NULL, 0, 0) != 0)
			return;
		r->flush_seq++;
		r->ckpt_flush_seq = r->flush_seq;
		r->ckpt_phase = CKPT_FLUSH;
		/* fall through */
	case CKPT_FLUSH: {
		if (atomic_load(&r->ac.flush_done_seq) < r->ckpt_flush_seq)
			return;
		/* every URL the sieve emitted must be in the frontier's copy */
		if (!drain_emits_upto(r, 0)) {
			snprintf(r->ckpt_err, sizeof r->ckpt_err, "frontier spill %s: %s", r->spill_label,
			         strerror(errno));
			ckpt_end(r, 0);
			return;
		}
		struct job *j = calloc(1, sizeof *j);
		if (!j)
			return;
		j->barrier = r->ckpt_seq;
		if (bqueue_try_push(r->writeq, j) != BQUEUE_OK) {
			free(j);
			return;
		}
		r->ckpt_phase = CKPT_WRITER;
	}
		/* fall through */
	case CKPT_WRITER:
		if (atomic_load(&r->ckpt_synced) < r->ckpt_seq)
			return;
		if (r->ckpt_writer_rc != 0) {
			snprintf(r->ckpt_err, sizeof r->ckpt_err, "the WARC or crawl log cannot be synced");
			ckpt_end(r, 0);
			return;
		}
		if (ckpt_write_local(r) != 0) {
			ckpt_end(r, 0);
			return;
		}
		r->ckpt_work.data = r;
		if (uv_queue_work(&r->loop, &r->ckpt_work, ckpt_work, ckpt_work_done) != 0) {
			snprintf(r->ckpt_err, sizeof r->ckpt_err, "cannot start the checkpoint worker");
			ckpt_end(r, 0);
			return;
		}
		r->ckpt_phase = CKPT_COMMIT;
		return;
	default:
		return;
	}
}

/* ---- stats ---- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static long peak_rss_kb(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return ru.ru_maxrss;
}

static const char *cfg_sieve_impl(const struct run *r)
{
	return r->cfg->sieve_impl ? r->cfg->sieve_impl : "mercator";
}

static int write_stats(struct run *r, const char *path, double elapsed)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	struct frontier_stats fs;
	struct politeness_stats ps;
	const struct dns_stats ds = r->dst;
	const struct fetch_stats fst = r->fst;
	frontier_stats(r->frontier, &fs);
	politeness_stats(r->pol, &ps);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	             (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	fprintf(f, "{\n  \"pages\": %" PRIu64 ",\n  \"requests\": %" PRIu64
	           ",\n  \"robots_fetches\": %" PRIu64 ",\n  \"bytes\": %" PRIu64
	           ",\n  \"elapsed_s\": %.3f,\n  \"pages_per_s\": %.2f,\n  \"cpu_s\": %.3f,\n"
	           "  \"peak_rss_kb\": %ld,\n",
	        r->pages_done, r->requests, r->robots_fetches, r->bytes, elapsed,
	        elapsed > 0 ? (double)r->pages_done / elapsed : 0.0, cpu, peak_rss_kb());
	fprintf(f, "  \"status\": {");
	int first = 1;
	for (int i = 0; i < STATUS_MAX; i++)
		if (r->status[i]) {
			fprintf(f, "%s\"%d\": %" PRIu64, first ? "" : ", ", i, r->status[i]);
			first = 0;
		}
	fprintf(f, "},\n  \"errors\": {");
	first = 1;
	for (int i = 1; i < 16; i++)
		if (r->fetch_errors[i]) {
			fprintf(f, "%s", first ? "" : ", ");
			json_str(f, fetch_strerror((enum fetch_error)i));
			fprintf(f, ": %" PRIu64, r->fetch_errors[i]);
			first = 0;
		}
	for (int i = 1; i < 16; i++)
		if (r->dns_errors[i]) {
			char name[64];
			snprintf(name, sizeof name, "dns-%s", dns_strerror((enum dns_error)i));
			if (strncmp(dns_strerror((enum dns_error)i), "dns", 3) == 0)
				snprintf(name, sizeof name, "%s", dns_strerror((enum dns_error)i));
			fprintf(f, "%s", first ? "" : ", ");
			json_str(f, name);
			fprintf(f, ": %" PRIu64, r->dns_errors[i]);
			first = 0;
		}
	struct {
		const char *name;
		uint64_t v;
	} extra[] = {
		{"robots-disallowed", r->robots_disallowed},
		{"private-address", r->private_refused},
		{"decode", atomic_load(&r->ac.decode_errors)},
		{"truncated", fst.truncated},
		{"retry-later", ps.retry_laters},
		{"parse-queue-full", r->parse_full},
		{"writer-queue-full", r->writer_full},
		{"writer-io", atomic_load(&r->ac.writer_errors)},
		{"url-invalid", atomic_load(&r->ac.url_invalid)},
		{"seed-invalid", atomic_load(&r->ac.seeds_invalid)},
		{"sieve", atomic_load(&r->ac.sieve_errors)},
		{"sieve-meta-missing", atomic_load(&r->ac.meta_missing)},
		{"sieve-meta-dropped", atomic_load(&r->ac.meta_dropped)},
		{"redirect-dropped", r->redirect_dropped},
		{"emit-dropped", atomic_load(&r->ac.emit_dropped)},
	};
	for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
		if (extra[i].v) {
			fprintf(f, "%s", first ? "" : ", ");
			json_str(f, extra[i].name);
			fprintf(f, ": %" PRIu64, extra[i].v);
			first = 0;
		}
	fprintf(f, "},\n  \"scope_rejected\": {");
	first = 1;
	for (int v = 1; v < SCOPE_VERDICT_COUNT; v++) {
		fprintf(f, "%s", first ? "" : ", ");
		json_str(f, scope_verdict_name((enum scope_verdict)v));
		fprintf(f, ": %" PRIu64, scope_count(r->scope, (enum scope_verdict)v));
		first = 0;
	}
	fprintf(f,
	        "},\n  \"redirects\": %" PRIu64 ",\n  \"near_duplicates\": %" PRIu64
	        ",\n  \"parsed\": %" PRIu64 ",\n  \"links\": %" PRIu64 ",\n  \"links_new\": %" PRIu64
	        ",\n  \"nofollow\": %" PRIu64 ",\n  \"warc_revisits\": %" PRIu64 ",\n",
	        r->redirects, (uint64_t)atomic_load(&r->ac.near_dups),
	        (uint64_t)atomic_load(&r->ac.parsed), (uint64_t)atomic_load(&r->ac.links),
	        (uint64_t)atomic_load(&r->ac.emits_pushed), (uint64_t)atomic_load(&r->ac.nofollow),
	        (uint64_t)atomic_load(&r->ac.warc_revisits));
	fprintf(f,
	        "  \"hosts\": {\"total\": %" PRIu64 ", \"retired\": %" PRIu64
	        ", \"dns_failed\": %" PRIu64 ", \"dropped_urls\": %" PRIu64 "},\n",
	        fs.hosts, ps.hosts_retired, r->hosts_dns_failed, fs.dropped_retired);
	fprintf(f,
	        "  \"frontier\": {\"pushed\": %" PRIu64 ", \"popped\": %" PRIu64
	        ", \"left\": %" PRIu64 ", \"disk_bytes\": %" PRIu64 ", \"refills\": %" PRIu64
	        "},\n",
	        fs.pushed, fs.popped, fs.urls_queued, fs.disk_bytes, fs.refills);
	const struct sieve_stats *ss = &r->sst;
	const struct link_meta_stats *ms = &r->mst;
	fprintf(f,
	        "  \"sieve\": {\"impl\": ");
	json_str(f, cfg_sieve_impl(r));
	fprintf(f,
	        ", \"added\": %" PRIu64 ", \"emitted\": %" PRIu64 ", \"cache_drops\": %" PRIu64
	        ", \"flushes\": %" PRIu64 ", \"forced_flushes\": %" PRIu64
	        ", \"early_flushes\": %" PRIu64
	        ", \"meta_full_flushes\": %" PRIu64 ", \"flush_s_total\": %.6f"
	        ", \"flush_s_max\": %.6f, \"add_waits\": %" PRIu64 ", \"buffer_urls\": %" PRIu64
	        ", \"z_count\": %" PRIu64 ", \"z_bytes\": %" PRIu64
	        ", \"z_bytes_per_signature\": %.3f,\n"
	        "            \"skipped_present\": %" PRIu64 ", \"meta_capacity\": %" PRIu64
	        ", \"meta_peak_entries\": %" PRIu64 ", \"meta_entries_left\": %" PRIu64
	        ", \"meta_swept\": %" PRIu64 ", \"meta_full\": %" PRIu64 "},\n",
	        ss->added, ss->emitted, ss->cache_drops, ss->flushes, r->forced_flushes,
	        r->early_flushes,
	        (uint64_t)atomic_load(&r->ac.meta_flushes), (double)ss->flush_ns_total / 1e9,
	        (double)ss->flush_ns_max / 1e9, ss->add_waits, ss->buffer_urls, ss->z_count,
	        ss->z_bytes, ss->z_count ? (double)ss->z_bytes / (double)ss->z_count : 0.0,
	        (uint64_t)atomic_load(&r->ac.meta_present), ms->capacity, ms->peak_entries,
	        ms->entries, ms->swept, ms->full);
	fprintf(f,
	        "  \"dns\": {\"lookups\": %" PRIu64 ", \"queries\": %" PRIu64
	        ", \"cache_hits\": %" PRIu64 ", \"coalesced\": %" PRIu64 ", \"failures\": %" PRIu64
	        "},\n",
	        ds.lookups, ds.queries, ds.cache_hits, ds.coalesced, ds.failures);
	fprintf(f,
	        "  \"checkpoints\": {\"written\": %" PRIu64 ", \"failed\": %" PRIu64
	        ", \"seconds_total\": %.3f, \"seconds_max\": %.3f, \"resumed\": %s},\n",
	        r->ckpt_count, r->ckpt_failures, (double)r->ckpt_us_total / 1e6,
	        (double)r->ckpt_us_max / 1e6, r->resumed ? "true" : "false");
	{
		uint64_t stalls;
		double secs;
		io_stall_stats(r->io, &stalls, &secs);
		fprintf(f, "  \"output_stalls\": {\"count\": %" PRIu64 ", \"seconds\": %.3f},\n", stalls,
		        secs);
	}
	fprintf(f, "  \"pages_per_s_interval_s\": %u,\n  \"pages_per_s_series\": [",
	        r->cfg->stats_interval_s);
	for (size_t i = 0; i < r->n_samples; i++)
		fprintf(f, "%s%.2f", i ? ", " : "", (double)r->samples[i] / r->cfg->stats_interval_s);
	fprintf(f, "]\n}\n");
	int rc = ferror(f) ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static void print_summary(struct run *r, double elapsed)
{
	printf("crawl finished: %" PRIu64 " pages, %" PRIu64 " requests (%" PRIu64
	       " robots.txt), %.2f MB in %.1f s, %.1f pages/s\n",
	       r->pages_done, r->requests, r->robots_fetches, (double)r->bytes / 1e6, elapsed,
	       elapsed > 0 ? (double)r->pages_done / elapsed : 0.0);
	printf("errors:");
	int any = 0;
	for (int i = 1; i < 16; i++)
		if (r->fetch_errors[i]) {
			printf(" %s=%" PRIu64, fetch_strerror((enum fetch_error)i), r->fetch_errors[i]);
			any = 1;
		}
	for (int i = 1; i < 16; i++)
		if (r->dns_errors[i]) {
			printf(" %s=%" PRIu64, dns_strerror((enum dns_error)i), r->dns_errors[i]);
			any = 1;
		}
	if (r->robots_disallowed) {
		printf(" robots-disallowed=%" PRIu64, r->robots_disallowed);
		any = 1;
	}
	printf("%s\n", any ? "" : " none");
	printf("output: %s/crawl.log %s/stats.json%s\n", r->cfg->output_dir, r->cfg->output_dir,
	       r->cfg->warc ? " and WARC files crawl-*.warc.gz" : "");
}

/* ---- setup ---- */

static int mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++)
		if (buf[i] == '/' || buf[i] == '\0') {
			char c = buf[i];
			buf[i] = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST)
				return -1;
			buf[i] = c;
		}
	return 0;
}

/* Empties the sieve folder for a new crawl (one that is not a resume: a
 * sieve that remembered an earlier crawl's URLs would emit nothing). Refuses (-1, EBUSY) when a live sieve
 * holds the folder's LOCK (another crawl writing into this output folder).
 * The LOCK file itself stays (the sieve reopens it). */
static int sieve_dir_clear(const char *dir)
{
	char p[4200];
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return -1;
	int n = snprintf(p, sizeof p, "%s/LOCK", dir);
	if (n < 0 || (size_t)n >= sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		close(fd);
		errno = EBUSY;
		return -1;
	}
	DIR *d = opendir(dir);
	int rc = d ? 0 : -1;
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, "LOCK") == 0)
			continue;
		n = snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		if (n < 0 || (size_t)n >= sizeof p || (unlink(p) != 0 && errno != ENOENT))
			rc = -1;
	}
	if (d)
		closedir(d);
	close(fd); /* drops the flock: sieve_open takes it next */
	return rc;
}

/* Stops the threads around the loop, in an order where nothing waits on a
 * thread already gone: the emit queue closes first (the sieve's flush
 * thread then drops instead of waiting), the feeder drains its queue, the
 * parse pool finishes its jobs (adding nothing more), the sieve closes
 * (its figures saved first: what the crawl saw, not the final flush), the
 * writer drains. Safe to call twice and on a partial setup. */
static void stop_threads(struct run *r)
{
	atomic_store(&r->stop_adding, 1);
	/* After the last checkpoint: a write still waiting for disk space gives
	 * up (what it holds is in that checkpoint as not done), so the threads
	 * can end. */
	if (r->io)
		io_stall_abort(r->io);
	if (r->emitq)
		bqueue_close(r->emitq);
	if (r->feeder_started) {
		bqueue_close(r->feedq);
		pthread_join(r->feeder, NULL);
		r->feeder_started = 0;
	}
	if (r->pool) {
		parse_pool_destroy(r->pool);
		r->pool = NULL;
	}
	if (r->sieve) {
		sieve_stats_get(r->sieve, &r->sst);
		if (r->meta)
			link_meta_stats(r->meta, &r->mst);
		r->sieve_stats_saved = 1;
		int rc = sieve_close(r->sieve);
		r->sieve = NULL;
		if (rc != SIEVE_OK && rc != SIEVE_ECLOSED)
			fprintf(stderr, "crawler crawl: closing the sieve: %s\n", sieve_strerror(rc));
	}
	if (r->writer_started) {
		bqueue_close(r->writeq);
		pthread_join(r->writer, NULL);
		r->writer_started = 0;
	}
}

/* The sieve's writes that fail on a full disk wait it out (sieve.h). */
static int on_sieve_write_error(void *ctx, const char *dir, int err)
{
	struct run *r = ctx;
	if (err == 0) {
		io_stall_resolved(r->io, dir);
		return 0;
	}
	return io_stall_retryable(err) && io_stall_wait(r->io, dir, err);
}

/* A new crawl's seeds and configuration, kept in the output folder so that
 * --resume needs neither again. */
static int save_crawl_inputs(const struct crawl_config *cfg, char *const *seeds, size_t n)
{
	char path[4200];
	FILE *f;
	int rc;
	snprintf(path, sizeof path, "%s/crawl.conf", cfg->output_dir);
	if (crawl_config_write(cfg, path) != 0) {
		fprintf(stderr, "crawler crawl: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/seeds.txt", cfg->output_dir);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "crawler crawl: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", seeds[i]);
	rc = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	if (rc != 0)
		fprintf(stderr, "crawler crawl: cannot write %s: %s\n", path, strerror(errno));
	return rc;
}

/* Resume: cuts what a crash tore off the WARC files (those from `from` on,
 * by name, i.e. by time; all when from is empty) and the crawl log. */
static int repair_outputs(const struct crawl_config *cfg, const char *from)
{
	char path[4400], err[512];
	DIR *d = opendir(cfg->output_dir);
	struct dirent *e;
	uint64_t cut = 0;
	int rc = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		struct warc_repair_result res;
		if (strncmp(e->d_name, "crawl-", 6) != 0 || n < 8 ||
		    strcmp(e->d_name + n - 8, ".warc.gz") != 0 || strcmp(e->d_name, from) < 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", cfg->output_dir, e->d_name);
		if (warc_repair_tail(path, 0, &res, err, sizeof err) != WARC_REPAIR_OK) {
			fprintf(stderr, "crawler crawl: resume: %s\n", err);
			rc = -1;
		} else if (res.cut_bytes > 0) {
			fprintf(stderr, "crawler crawl: resume: %s: removed %" PRIu64
			                " bytes of a record cut off by the crash (%s)\n",
			        path, res.cut_bytes, res.reason ? res.reason : "torn");
		}
	}
	closedir(d);
	snprintf(path, sizeof path, "%s/crawl.log", cfg->output_dir);
	if (checkpoint_repair_log(path, &cut) != 0) {
		fprintf(stderr, "crawler crawl: resume: %s: %s\n", path, strerror(errno));
		rc = -1;
	} else if (cut > 0) {
		fprintf(stderr, "crawler crawl: resume: %s: removed a line cut off by the crash (%" PRIu64
		                " bytes)\n", path, cut);
	}
	return rc;
}

/* Spill folders of a frontier killed with its crawl (frontier-XXXXXX in the
 * output folder; never touched when spill_dir is elsewhere: it may be shared). */
static void remove_stale_spill(const struct crawl_config *cfg)
{
	char path[4400];
	DIR *d;
	struct dirent *e;
	if (cfg->spill_dir[0] && strcmp(cfg->spill_dir, cfg->output_dir) != 0)
		return;
	d = opendir(cfg->output_dir);
	if (!d)
		return;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "frontier-", 9) == 0) {
			snprintf(path, sizeof path, "%s/%s", cfg->output_dir, e->d_name);
			checkpoint_remove_tree(path);
		}
	closedir(d);
}

/* Registrable domains of the seeds (libpsl's built-in list). */
static int seed_domains(char *const *seeds, size_t n, char ***out, size_t *nout)
{
	const psl_ctx_t *psl = psl_builtin();
	char **d = calloc(n ? n : 1, sizeof *d);
	size_t k = 0;
	if (!d)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t kl, h, hl;
		if (url_key_split(seeds[i], strlen(seeds[i]), &kl, &h, &hl) < 0)
			continue;
		char host[512];
		if (hl >= sizeof host)
			continue;
		for (size_t c = 0; c < hl; c++)
			host[c] = (char)tolower((unsigned char)seeds[i][h + c]);
		host[hl] = '\0';
		const char *reg = psl ? psl_registrable_domain(psl, host) : NULL;
		const char *dom = reg ? reg : host;
		int dup = 0;
		for (size_t j = 0; j < k; j++)
			if (strcmp(d[j], dom) == 0)
				dup = 1;
		if (!dup) {
			d[k] = strdup(dom);
			if (d[k])
				k++;
		}
	}
	*out = d;
	*nout = k;
	return 0;
}

int crawl_run(const struct crawl_config *cfg, char *const *seeds, size_t nseeds, int resume)
{
	int rc = CRAWL_EXIT_FAILURE;
	struct run *r = calloc(1, sizeof *r);
	char **doms = NULL;
	size_t ndoms = 0;
	char path[4400], ckpt[4200], err[4800], warc_from[256] = "";
	uint64_t ckpt_seq = 0;
	int loop_ok = 0, from_ckpt = 0;
	if (!r) {
		fprintf(stderr, "crawler crawl: out of memory\n");
		return CRAWL_EXIT_FAILURE;
	}
	r->cfg = cfg;
	r->seeds = seeds;
	r->n_seeds = nseeds;
	pthread_mutex_init(&r->wake_mu, NULL);
	/* Response bodies and per-record compressor state are large, short-lived
	 * blocks: keep glibc from mapping and unmapping (and trimming) them on
	 * every fetch, which costs more in page faults than the work itself. */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
	for (int i = 0; i < NEAR_DUP_STRIPES; i++)
		pthread_mutex_init(&r->nd[i].mu, NULL);
	if (mkdir_p(cfg->output_dir) != 0) {
		fprintf(stderr, "crawler crawl: cannot create %s: %s\n", cfg->output_dir,
		        strerror(errno));
		goto out;
	}
	/* One crawl per output folder. */
	{
		pid_t owner = 0;
		enum outdir_lock_result lr =
			outdir_lock_acquire(cfg->output_dir, &r->lock, &owner, err, sizeof err);
		if (lr == OUTDIR_LOCK_BUSY) {
			fprintf(stderr, "crawler crawl: %s is in use by another crawl (pid %ld)\n",
			        cfg->output_dir, (long)owner);
			rc = CRAWL_EXIT_USAGE;
			goto out;
		}
		if (lr == OUTDIR_LOCK_STALE)
			fprintf(stderr, "crawler crawl: %s: taking over the lock of crawl %ld, which is"
			                " no longer running\n", cfg->output_dir, (long)owner);
		else if (lr != OUTDIR_LOCK_OK) {
			fprintf(stderr, "crawler crawl: %s\n", err);
			goto out;
		}
	}
	{
		int f = checkpoint_find(cfg->output_dir, ckpt, sizeof ckpt, &ckpt_seq, err, sizeof err);
		if (f < 0) {
			fprintf(stderr, "crawler crawl: %s\n", err);
			goto out;
		}
		if (f == 0 && !resume) {
			fprintf(stderr, "crawler crawl: %s holds a crawl (%s): continue it with --resume,"
			                " or choose another output folder\n", cfg->output_dir, ckpt);
			rc = CRAWL_EXIT_USAGE;
			goto out;
		}
		from_ckpt = f == 0;
	}
	r->resumed = resume;
	r->ckpt_seq = ckpt_seq;
	if (!resume && save_crawl_inputs(cfg, seeds, nseeds) != 0)
		goto out;
	remove_stale_spill(cfg);
	r->io = io_stall_create(1000);
	if (!r->io)
		goto out;
	snprintf(r->spill_label, sizeof r->spill_label, "%s (frontier spill)",
	         cfg->spill_dir[0] ? cfg->spill_dir : cfg->output_dir);
	snprintf(r->log_path, sizeof r->log_path, "%s/crawl.log", cfg->output_dir);
	if (uv_loop_init(&r->loop) != 0)
		goto out;
	loop_ok = 1;
	/* Frontier + politeness. */
	struct frontier_config fc;
	frontier_config_default(&fc);
	fc.spill_dir = cfg->spill_dir[0] ? cfg->spill_dir : cfg->output_dir;
	fc.mem_budget = cfg->frontier_mem_mb * 1024u * 1024u;
	fc.max_urls_per_host = cfg->max_urls_per_host;
	fc.max_depth = cfg->max_depth;
	fc.max_hosts = cfg->max_hosts;
	enum frontier_err fe;
	if (from_ckpt) {
		snprintf(path, sizeof path, "%s/frontier", ckpt);
		fe = frontier_restore(&fc, path, &r->frontier);
	} else {
		fe = frontier_create(&fc, &r->frontier);
	}
	if (fe != FRONTIER_OK) {
		fprintf(stderr, "crawler crawl: frontier%s%s: %s\n", from_ckpt ? " of " : "",
		        from_ckpt ? path : "", frontier_strerror(fe));
		goto out;
	}
	struct politeness_config pc;
	politeness_config_default(&pc);
	pc.policy = (enum delay_policy_kind)cfg->policy;
	pc.host_delay_us = cfg->host_delay_ms * 1000u;
	pc.ip_delay_us = cfg->ip_delay_ms * 1000u;
	pc.ip_politeness = cfg->ip_politeness;
	pc.ratio = cfg->ratio;
	pc.visit_budget_us = cfg->visit_budget_ms * 1000u;
	pc.min_delay_us = cfg->min_delay_ms * 1000u;
	pc.max_delay_us = cfg->max_delay_ms * 1000u;
	pc.max_urls_per_visit = cfg->max_urls_per_visit;
	pc.crawl_delay_cap_us = cfg->crawl_delay_cap_ms * 1000u;
	pc.backoff_base_us = cfg->backoff_base_ms * 1000u;
	pc.backoff_max_us = cfg->backoff_max_ms * 1000u;
	pc.max_consecutive_errors = cfg->max_consecutive_errors;
	pc.retry_after_cap_us = cfg->retry_after_cap_ms * 1000u;
	if (politeness_config_check(&pc) != 0) {
		fprintf(stderr, "crawler crawl: inconsistent politeness settings\n");
		rc = CRAWL_EXIT_USAGE;
		goto out;
	}
	if (politeness_create(r->frontier, &pc, NULL, NULL, &r->pol) != POLITENESS_OK)
		goto out;
	if (from_ckpt) {
		snprintf(path, sizeof path, "%s/robots", ckpt);
		enum politeness_err pe = politeness_robots_restore(r->pol, path, now_us());
		if (pe != POLITENESS_OK) {
			fprintf(stderr, "crawler crawl: robots.txt cache of %s: %s\n", path,
			        politeness_strerror(pe));
			goto out;
		}
	}
	/* Scope. */
	struct scope_config sc;
	scope_config_default(&sc);
	if (!cfg->any_domain) {
		if (cfg->n_domains) {
			sc.domains = (const char *const *)cfg->domains;
			sc.n_domains = cfg->n_domains;
		} else {
			if (seed_domains(seeds, nseeds, &doms, &ndoms) < 0)
				goto out;
			sc.domains = (const char *const *)doms;
			sc.n_domains = ndoms;
		}
	}
	sc.max_depth = cfg->max_depth;
	sc.max_url_len = cfg->max_url_len;
	sc.max_path_segments = cfg->max_path_segments;
	sc.max_segment_repeats = cfg->max_segment_repeats;
	if (scope_create(&sc, &r->scope) != SCOPE_ERR_OK)
		goto out;
	size_t wcap = (size_t)cfg->parse_queue + 2u * cfg->max_connections + 1024u;
	r->emitq = bqueue_create(65536);
	r->writeq = bqueue_create(2 * wcap);
	r->feedq = bqueue_create((size_t)cfg->max_connections + FEED_SLACK);
	r->meta = link_meta_create(cfg->sieve_meta_memory);
	struct url_options uo;
	url_options_init(&uo);
	uo.max_len = cfg->max_url_len;
	r->url_base = url_create(&uo);
	r->url_target = url_create(&uo);
	if (!r->emitq || !r->writeq || !r->feedq || !r->meta || !r->url_base || !r->url_target)
		goto out;
	/* The sieve, in OUTPUT_DIR/sieve: the checkpoint's copy on resume. */
	snprintf(path, sizeof path, "%s/sieve", cfg->output_dir);
	if (from_ckpt) {
		char src[4300];
		snprintf(src, sizeof src, "%s/sieve", ckpt);
		if (sieve_restore(src, path, err, sizeof err) != SIEVE_OK) {
			fprintf(stderr, "crawler crawl: sieve: %s\n", err);
			goto out;
		}
	} else if (sieve_dir_clear(path) != 0) {
		fprintf(stderr, "crawler crawl: cannot clear %s: %s\n", path,
		        errno == EBUSY ? "in use by another crawl" : strerror(errno));
		goto out;
	}
	/* A crashed crawl resumes from its checkpoint's copy of the sieve, never
	 * from this live folder, and a checkpoint fsyncs what it links: the
	 * live sieve's own fsyncs (three per flush) would buy nothing. */
	struct sieve_config svc = {
		.impl = cfg->sieve_impl,
		.dir = path,
		.memory = cfg->sieve_memory,
		.buffer_urls = cfg->sieve_buffer_urls,
		.max_url_len = cfg->max_url_len,
		.no_fsync = 1,
		.on_write_error = on_sieve_write_error,
		.write_error_ctx = r,
	};
	char serr[512];
	int sierr = sieve_open(&svc, on_sieve_emit, r, &r->sieve, serr, sizeof serr);
	if (sierr != SIEVE_OK) {
		fprintf(stderr, "crawler crawl: sieve ([sieve] impl = %s, memory = %" PRIu64 "): %s\n",
		        cfg->sieve_impl, cfg->sieve_memory, serr[0] ? serr : sieve_strerror(sierr));
		rc = sierr == SIEVE_EINVAL || sierr == SIEVE_ENOTSUP ? CRAWL_EXIT_USAGE
		                                                      : CRAWL_EXIT_FAILURE;
		goto out;
	}
	/* Fetch engine + DNS. */
	struct fetch_config fcfg = {
		.max_connections = cfg->max_connections,
		.connect_timeout_ms = (long)cfg->connect_timeout_ms,
		.total_timeout_ms = (long)cfg->timeout_ms,
		.low_speed_limit = (long)cfg->low_speed_bytes,
		.low_speed_time_s = (long)cfg->low_speed_time_s,
		.max_body_bytes = cfg->max_body_bytes,
		.max_header_bytes = cfg->max_header_bytes,
		.user_agent = cfg->user_agent,
		.allow_private_networks = cfg->allow_private_networks,
	};
	enum fetch_error fetche = fetch_engine_create(&r->loop, &fcfg, on_fetch_done, r, &r->fetch);
	if (fetche != FETCH_OK) {
		fprintf(stderr, "crawler crawl: fetch engine: %s\n", fetch_strerror(fetche));
		goto out;
	}
	struct dns_config dc = {
		.server = cfg->dns_server,
		.max_ttl_s = (unsigned)cfg->dns_cache_ttl_s,
		.timeout_ms = (unsigned)cfg->dns_timeout_ms,
		.max_pending = cfg->dns_max_pending,
		.negative_ttl_s = cfg->dns_negative_ttl_s,
	};
	enum dns_error de = dns_resolver_create(&r->loop, &dc, &r->dns);
	if (de != DNS_OK) {
		fprintf(stderr, "crawler crawl: DNS resolver (%s): %s\n", cfg->dns_server,
		        dns_strerror(de));
		rc = de == DNS_ERR_INVALID ? CRAWL_EXIT_USAGE : CRAWL_EXIT_FAILURE;
		goto out;
	}
	/* Resume: the crawl's own state, then repair of what the crash cut. */
	if (from_ckpt) {
		snprintf(path, sizeof path, "%s/state", ckpt);
		if (state_load(r, path, warc_from, sizeof warc_from, err, sizeof err) != 0) {
			fprintf(stderr, "crawler crawl: %s\n", err);
			goto out;
		}
		r->n_seeds = 0; /* the checkpoint's sieve has seen them */
	}
	if (resume) {
		if (repair_outputs(cfg, warc_from) != 0)
			goto out;
		if (!cfg->quiet)
			fprintf(stderr, "crawler crawl: resuming %s from %s\n", cfg->output_dir,
			        from_ckpt ? ckpt : "its seeds (no checkpoint was written)");
	}
	/* Writer: WARC + crawl log. */
	if (cfg->warc) {
		struct warc_config wc = {
			.dir = cfg->output_dir,
			.prefix = "crawl",
			.max_file_bytes = cfg->warc_max_mb * 1024u * 1024u,
			.user_agent = cfg->user_agent,
			.compression_level = (int)cfg->warc_level,
		};
		enum warc_error we = warc_writer_open(&wc, &r->warc);
		if (we != WARC_OK) {
			fprintf(stderr, "crawler crawl: WARC: %s\n", warc_strerror(we));
			goto out;
		}
	}
	snprintf(path, sizeof path, "%s/crawl.log", cfg->output_dir);
	if (crawl_log_open(path, &r->log) != CRAWL_LOG_OK) {
		fprintf(stderr, "crawler crawl: cannot open %s\n", path);
		goto out;
	}
	if (pthread_create(&r->writer, NULL, writer_main, r) != 0)
		goto out;
	r->writer_started = 1;
	struct parse_pool_ops ops = {parse_init, parse_work, parse_fini};
	if (parse_pool_create(cfg->parse_threads, cfg->parse_queue + cfg->max_connections, &ops,
	                      r, &r->pool) != PARSE_POOL_OK) {
		fprintf(stderr, "crawler crawl: cannot start parse threads\n");
		goto out;
	}
	/* Handles. */
	uv_timer_init(&r->loop, &r->wake);
	uv_timer_init(&r->loop, &r->tick);
	uv_timer_init(&r->loop, &r->abandon);
	uv_async_init(&r->loop, &r->async, on_async);
	uv_signal_init(&r->loop, &r->sigint);
	r->wake.data = r->tick.data = r->abandon.data = r->async.data = r->sigint.data = r;
	r->handles_open = 1;
	pthread_mutex_lock(&r->wake_mu);
	r->wake_ok = 1;
	pthread_mutex_unlock(&r->wake_mu);
	uv_signal_start(&r->sigint, on_sigint, SIGINT);
	r->progress = !cfg->quiet && isatty(STDERR_FILENO);
	r->t0_us = now_us() - r->elapsed_before_us;
	r->ckpt_last_us = now_us();
	/* The crashed run may have contacted any host or IP just before it died,
	 * hosts it found after its last checkpoint too (unknown here): no
	 * request before one policy delay has passed. */
	if (resume) {
		uint64_t d = cfg->policy == DELAY_POLICY_RATIO ? cfg->min_delay_ms : cfg->host_delay_ms;
		if (cfg->ip_politeness && cfg->ip_delay_ms > d)
			d = cfg->ip_delay_ms;
		r->start_after_us = now_us() + d * 1000u;
	}
	/* Seeds: through the sieve, added by the feeder thread. */
	if (pthread_create(&r->feeder, NULL, feeder_main, r) != 0)
		goto out;
	r->feeder_started = 1;
	uv_timer_start(&r->tick, on_tick, 100, 100);
	pump(r);
	if (!r->finished)
		uv_run(&r->loop, UV_RUN_DEFAULT);
	double elapsed = (double)(now_us() - r->t0_us) / 1e6;
	if (r->progress)
		print_progress(r, 1);
	/* Tear down in order: fetch engine (cancels in-flight transfers, whose
	 * results still go to the writer), handles, parse pool, writer. */
	r->finished = 1;
	fetch_engine_stats(r->fetch, &r->fst);
	fetch_engine_destroy(r->fetch);
	r->fetch = NULL;
	dns_resolver_stats(r->dns, &r->dst);
	dns_resolver_destroy(r->dns);
	r->dns = NULL;
	pthread_mutex_lock(&r->wake_mu);
	r->wake_ok = 0;
	pthread_mutex_unlock(&r->wake_mu);
	uv_close((uv_handle_t *)&r->wake, NULL);
	uv_close((uv_handle_t *)&r->tick, NULL);
	uv_close((uv_handle_t *)&r->abandon, NULL);
	uv_close((uv_handle_t *)&r->async, NULL);
	uv_close((uv_handle_t *)&r->sigint, NULL);
	r->handles_open = 0;
	uv_run(&r->loop, UV_RUN_DEFAULT);
	stop_threads(r);
	snprintf(path, sizeof path, "%s/stats.json", cfg->output_dir);
	if (write_stats(r, path, elapsed) != 0)
		fprintf(stderr, "crawler crawl: cannot write %s\n", path);
	if (!cfg->quiet)
		print_summary(r, elapsed);
	rc = r->exit_code;
out:
	pthread_mutex_lock(&r->wake_mu);
	r->wake_ok = 0;
	pthread_mutex_unlock(&r->wake_mu);
	stop_threads(r);
	if (r->fetch)
		fetch_engine_destroy(r->fetch);
	if (r->dns)
		dns_resolver_destroy(r->dns);
	if (r->handles_open) {
		uv_close((uv_handle_t *)&r->wake, NULL);
		uv_close((uv_handle_t *)&r->tick, NULL);
		uv_close((uv_handle_t *)&r->abandon, NULL);
		uv_close((uv_handle_t *)&r->async, NULL);
		uv_close((uv_handle_t *)&r->sigint, NULL);
	}
	if (loop_ok) {
		uv_run(&r->loop, UV_RUN_DEFAULT);
		uv_loop_close(&r->loop);
	}
	if (r->emitq) {
		void *item;
		while (bqueue_try_pop(r->emitq, &item) == BQUEUE_OK)
			free(item);
	}
	if (r->writeq) {
		void *item;
		while (bqueue_try_pop(r->writeq, &item) == BQUEUE_OK)
			job_free(item);
	}
	if (r->feedq) {
		void *item;
		while (bqueue_try_pop(r->feedq, &item) == BQUEUE_OK)
			free(item);
	}
	bqueue_destroy(r->emitq);
	bqueue_destroy(r->writeq);
	bqueue_destroy(r->feedq);
	link_meta_destroy(r->meta);
	url_destroy(r->url_base);
	url_destroy(r->url_target);
	warc_writer_close(r->warc);
	crawl_log_close(r->log);
	scope_destroy(r->scope);
	politeness_destroy(r->pol);
	frontier_destroy(r->frontier);
	for (size_t i = 0; i < ndoms; i++)
		free(doms[i]);
	free(doms);
	for (int i = 0; i < NEAR_DUP_STRIPES; i++) {
		struct near_dup_host *h = r->nd[i].hosts;
		while (h) {
			struct near_dup_host *n = h->chain;
			free(h);
			h = n;
		}
		pthread_mutex_destroy(&r->nd[i].mu);
	}
	for (size_t i = 0; i < r->n_blocks; i++)
		free(r->blocks[i]);
	free(r->blocks);
	for (size_t i = 0; i < r->n_parked; i++)
		fetch_result_free(r->parked[i]);
	free(r->parked);
	while (r->live)
		req_release(r, r->live);
	free(r->pending_emit);
	free(r->dns_wait);
	io_stall_destroy(r->io);
	outdir_lock_release(r->lock);
	pthread_mutex_destroy(&r->wake_mu);
	free(r);
	return rc;
}
