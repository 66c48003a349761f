/*
 * sieve_path.c: crawl keys -> side table + sieve -> emit queue -> the loop
 * (see sieve_path.h).
 */
#include "crawler/sieve_path.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "crawler/crawl_source.h"
#include "crawler/store/io_stall.h"
#include "frontier/base/bqueue.h"
#include "frontier/base/clock.h"
#include "frontier/frontier.h"
#include "frontier/url.h"

#define BATCH_URLS 128       /* links handed to the sieve per sieve_add_batch */
#define NO_TICKET UINT64_MAX /* the side-table entry is not the batch's */
#define FEED_SLACK 16        /* feed queue room beyond one item per transfer */
#define INBOUND_SLACK 64     /* cluster: feed queue room for inbox entries */
#define EMIT_QUEUE 65536
/* Least time between two flushes asked for while every queued host waits. */
#define NONE_READY_GAP_US 500000
#define EARLY_FLUSH_RATIO 64 /* see sieve_path_dry */

/* A URL emitted by the sieve, on its way to the frontier. */
struct emit {
	uint32_t depth;
	uint32_t url_len;
	uint32_t via_len;
	char data[]; /* url NUL via NUL */
};

enum feed_kind {
	FEED_URL = 0,   /* a redirect target (crawl key) */
	FEED_FLUSH = 1, /* a forced flush request */
	FEED_LINES = 2, /* cluster: an inbox entry's lines "URL \t VIA \t DEPTH \n" */
};

/* Work for the feeder thread: data holds the URL or the lines. */
struct feed {
	int flush; /* enum feed_kind */
	uint64_t seq;
	uint32_t depth;
	uint32_t url_len;
	uint32_t via_len;
	char data[]; /* url NUL via NUL */
};

/* A link batch of the sieve's (crawl_source.h). */
struct sieve_batch {
	struct link_batch base;
	struct sieve_path *sp;
	const char *urls[BATCH_URLS];
	size_t lens[BATCH_URLS];
	uint64_t sigs[BATCH_URLS];
	uint64_t tickets[BATCH_URLS]; /* NO_TICKET: the side-table entry is not ours */
	size_t n;
	uint64_t flushes; /* the sieve's completed flushes, as last read */
	size_t arena_cap, arena_len;
	char arena[]; /* the keys, back to back */
};

/* Counted by any thread (stats.json's names in sieve_path.h). */
struct sieve_path_counters {
	atomic_uint_fast64_t keys_added, emits_pushed, emit_dropped, seeds_invalid, sieve_errors;
	atomic_uint_fast64_t keys_raised; /* of keys_added: a rule priority above 0 */
	atomic_uint_fast64_t meta_present, meta_dropped, meta_missing, meta_flushes;
};

struct sieve_path {
	struct sieve_path_parts p;
	struct sieve_path_counters ac;
	sieve_t *sieve;
	struct link_meta *meta;
	struct bqueue *emitq, *feedq;
	pthread_t feeder;
	int feeder_started;
	char *const *seeds; /* the feeder adds them */
	size_t n_seeds;
	atomic_int stop_adding; /* teardown: threads add nothing more to the sieve */
	atomic_int seeded;      /* the feeder has added every seed */
	atomic_int failed;      /* a sieve call failed: the crawl stops */
	pthread_mutex_t error_mu;
	char error[512]; /* first sieve failure (written once, under error_mu) */
	atomic_uint_fast64_t flush_done_seq;
	struct link_batch *found;           /* the feeder's: where seeds and redirect targets go */
	uint64_t lines_fed, flush_lines_at; /* inbox entries fed (loop thread) */
	/* forced flushes (loop thread) */
	int flush_pending, flush_idle;
	uint64_t flush_seq, flush_emits_before, flush_keys_at, flush_raised_at;
	uint64_t flush_asked_us, flush_done_us, flush_took_us; /* monotonic */
	uint64_t waited_flush_us; /* sieve_path_none_ready's last request; 0: none yet */
	uint64_t forced_flushes, early_flushes; /* asked for: idle, and early */
	struct emit *pending_emit;              /* a URL the frontier could not take yet */
	struct sieve_stats sst;                 /* saved before the sieve is closed */
	struct link_meta_stats mst;
};

/* A sieve call failed: the sieve is unusable (SIEVE_ECLOSED after) and URLs
 * would be lost silently, so the crawl stops; the loop reports it. */
static void sieve_failure(struct sieve_path *sp, int rc, const char *what)
{
	atomic_fetch_add(&sp->ac.sieve_errors, 1);
	pthread_mutex_lock(&sp->error_mu);
	if (!atomic_load(&sp->failed)) {
		snprintf(sp->error, sizeof sp->error, "%s: %s (%s)", what, sieve_strerror(rc),
		         sieve_last_error(sp->sieve));
		atomic_store(&sp->failed, 1);
	}
	pthread_mutex_unlock(&sp->error_mu);
	sp->p.hooks.wake(sp->p.hooks.ctx);
}

int sieve_path_failed(struct sieve_path *sp, char *msg, size_t cap)
{
	if (!atomic_load(&sp->failed))
		return 0;
	pthread_mutex_lock(&sp->error_mu);
	snprintf(msg, cap, "%s", sp->error);
	pthread_mutex_unlock(&sp->error_mu);
	return 1;
}

/* ---- link batches ---- */

static const struct link_batch_ops sieve_batch_ops;

static struct sieve_batch *sieve_batch(struct link_batch *b)
{
	return (struct sieve_batch *)(void *)b;
}

static struct sieve_batch *sieve_batch_create(struct sieve_path *sp)
{
	size_t cap = 16u * ((size_t)sp->p.cfg.max_url_len + 1);
	struct sieve_batch *b = malloc(sizeof *b + cap);
	if (b) {
		memset(b, 0, sizeof *b);
		b->base.ops = &sieve_batch_ops;
		b->sp = sp;
		b->arena_cap = cap;
	}
	return b;
}

struct link_batch *sieve_path_batch_create(struct sieve_path *sp)
{
	struct sieve_batch *b = sieve_batch_create(sp);
	return b ? &b->base : NULL;
}

static void batch_destroy(struct link_batch *b)
{
	free(b);
}

static uint64_t sieve_flushes(struct sieve_path *sp)
{
	struct sieve_stats ss;
	sieve_stats_get(sp->sieve, &ss);
	return ss.flushes;
}

/* Hands the batch to the sieve, then marks its side-table entries done
 * with the flush count read after the add returned (link_meta.h). May
 * block while the sieve's buffers are both full: never on the loop. */
static void batch_flush(struct link_batch *lb)
{
	struct sieve_batch *b = sieve_batch(lb);
	struct sieve_path *sp = b->sp;
	if (b->n == 0)
		return;
	int rc = sieve_add_batch(sp->sieve, b->urls, b->lens, b->n);
	if (rc != SIEVE_OK)
		sieve_failure(sp, rc, "sieve add");
	b->flushes = sieve_flushes(sp);
	for (size_t i = 0; i < b->n; i++)
		if (b->tickets[i] != NO_TICKET)
			link_meta_done(sp->meta, b->sigs[i], b->tickets[i], b->flushes);
	atomic_fetch_add(&sp->ac.keys_added, b->n);
	b->n = 0;
	b->arena_len = 0;
}

/* A forced flush: when it returns, every URL added before the call has been
 * delivered to on_sieve_emit (sieve.h), so its new URLs are in the emit
 * queue. A failure stops the crawl (sieve_failure). */
static int sieve_flush_delivered(struct sieve_path *sp)
{
	int rc = sieve_flush(sp->sieve);
	if (rc != SIEVE_OK)
		sieve_failure(sp, rc, "sieve flush");
	return rc;
}

/* The side table is full: a forced flush processes every URL added so far
 * (the calling thread waits: back-pressure), then its stale entries go. */
static void meta_make_room(struct sieve_batch *b)
{
	struct sieve_path *sp = b->sp;
	uint64_t before = link_meta_clock(sp->meta);
	sieve_flush_delivered(sp);
	b->flushes = sieve_flushes(sp);
	link_meta_sweep(sp->meta, b->flushes, before);
	atomic_fetch_add(&sp->ac.meta_flushes, 1);
}

static char *batch_slot(struct link_batch *lb, size_t *room)
{
	struct sieve_batch *b = sieve_batch(lb);
	if (b->arena_cap - b->arena_len < (size_t)b->sp->p.cfg.max_url_len + 1)
		batch_flush(lb);
	*room = b->arena_cap - b->arena_len;
	return b->arena + b->arena_len;
}

static void batch_add(struct link_batch *lb, size_t klen, uint32_t depth, struct link_meta_via *via)
{
	struct sieve_batch *b = sieve_batch(lb);
	struct sieve_path *sp = b->sp;
	char *key = b->arena + b->arena_len;
	uint64_t sig = XXH3_64bits(key, klen), ticket = NO_TICKET;
	enum link_meta_result mr = link_meta_put(sp->meta, sig, depth, via, b->flushes, 0, &ticket);
	if (mr == LINK_META_FULL) {
		/* The batch's own entries are in progress (not sweepable): add
		 * them first, keeping this key at the arena's start. */
		char tmp[FRONTIER_URL_MAX];
		if (klen > sizeof tmp)
			return;
		memcpy(tmp, key, klen);
		batch_flush(lb);
		memcpy(b->arena, tmp, klen);
		key = b->arena;
		meta_make_room(b);
		mr = link_meta_put(sp->meta, sig, depth, via, b->flushes, 1, &ticket);
		if (mr == LINK_META_FULL) {
			atomic_fetch_add(&sp->ac.meta_dropped, 1);
			return;
		}
	}
	if (mr == LINK_META_PRESENT) {
		atomic_fetch_add(&sp->ac.meta_present, 1);
		return;
	}
	if (frontier_priority_of(depth) > 0)
		atomic_fetch_add(&sp->ac.keys_raised, 1);
	b->urls[b->n] = key;
	b->lens[b->n] = klen;
	b->sigs[b->n] = sig;
	b->tickets[b->n] = ticket;
	b->n++;
	b->arena_len += klen;
	if (b->n == BATCH_URLS)
		batch_flush(lb);
}

static const struct link_batch_ops sieve_batch_ops = {
	.slot = batch_slot, .add = batch_add, .flush = batch_flush, .destroy = batch_destroy
};

struct link_meta_via *sieve_path_via(struct sieve_path *sp, const char *s, size_t len)
{
	return link_meta_via_new(sp->meta, s, len);
}

void sieve_path_via_release(struct sieve_path *sp, struct link_meta_via *via)
{
	link_meta_via_release(sp->meta, via);
}

int sieve_path_adding_stopped(const struct sieve_path *sp)
{
	return atomic_load(&sp->stop_adding);
}

/* ---- the sieve's side: emits ---- */

/* The sieve's emit callback (its flush thread): the URL is new. Its
 * metadata comes out of the side table; the URL goes to the loop through
 * the bounded emit queue, waiting for room when the queue is full (the
 * flush thread may wait, the loop drains it without waiting). After
 * teardown closes the queue, emits are dropped: the crawl is over. */
static void on_sieve_emit(void *ctx, const char *url, size_t len)
{
	struct sieve_path *sp = ctx;
	uint32_t depth = 0;
	struct link_meta_via *via = NULL;
	const char *vs = "";
	size_t vlen = 0;
	if (link_meta_take(sp->meta, XXH3_64bits(url, len), &depth, &via) != LINK_META_PRESENT)
		atomic_fetch_add(&sp->ac.meta_missing, 1);
	else
		vs = link_meta_via_str(via, &vlen);
	struct emit *e = malloc(sizeof *e + len + vlen + 2);
	if (!e) {
		link_meta_via_release(sp->meta, via);
		atomic_fetch_add(&sp->ac.emit_dropped, 1);
		return;
	}
	e->depth = depth;
	e->url_len = (uint32_t)len;
	e->via_len = (uint32_t)vlen;
	memcpy(e->data, url, len);
	e->data[len] = '\0';
	memcpy(e->data + len + 1, vs, vlen);
	e->data[len + 1 + vlen] = '\0';
	link_meta_via_release(sp->meta, via);
	if (bqueue_push(sp->emitq, e) != BQUEUE_OK) {
		atomic_fetch_add(&sp->ac.emit_dropped, 1);
		free(e);
		return;
	}
	atomic_fetch_add(&sp->ac.emits_pushed, 1);
	sp->p.hooks.wake(sp->p.hooks.ctx);
}

/* The sieve's writes that fail on a full disk wait it out (sieve.h). */
static int on_sieve_write_error(void *ctx, const char *dir, int err)
{
	struct sieve_path *sp = ctx;
	if (err == 0) {
		io_stall_resolved(sp->p.io, dir);
		return 0;
	}
	return io_stall_retryable(err) && io_stall_wait(sp->p.io, dir, err);
}

/* One emitted URL to the frontier; kept aside when it cannot take it yet
 * (a full disk): then 0, and the emit queue waits behind it (the sieve's
 * flush thread, then the adders, wait in turn). */
static int take_emit(struct sieve_path *sp, struct emit *e)
{
	if (sp->p.hooks.take(sp->p.hooks.ctx, e->data, e->url_len, e->data + e->url_len + 1,
	                     e->via_len, e->depth) < 0) {
		sp->pending_emit = e;
		return 0;
	}
	free(e);
	return 1;
}

int sieve_path_drain(struct sieve_path *sp, int all)
{
	void *item;
	/* At most one queue's worth unless all, so a fast sieve flush cannot
	 * starve the loop's other work; each emit also wakes the loop again. */
	size_t budget = bqueue_cap(sp->emitq);
	if (sp->pending_emit) {
		struct emit *e = sp->pending_emit;
		sp->pending_emit = NULL;
		if (!take_emit(sp, e))
			return 0;
	}
	while ((all || budget-- > 0) && bqueue_try_pop(sp->emitq, &item) == BQUEUE_OK)
		if (!take_emit(sp, item))
			return 0;
	return 1;
}

/* ---- the feeder thread: seeds, redirect targets, forced flushes ---- */

/* Adds the seeds, straight from the array (a million seeds need no queue). */
static void feed_seeds(struct sieve_path *sp, struct link_batch *b, struct url *u,
                       struct link_meta_via *none)
{
	for (size_t i = 0; i < sp->n_seeds && !atomic_load(&sp->stop_adding); i++) {
		size_t room, klen;
		char *key = link_batch_slot(b, &room);
		const char *seed = sp->seeds[i];
		enum url_error ue = url_normalize(u, NULL, seed, strlen(seed), key, room, &klen);
		if (ue != URL_OK) {
			atomic_fetch_add(&sp->ac.seeds_invalid, 1);
			fprintf(stderr, "crawler crawl: seed '%s' skipped: %s\n", seed,
			        url_strerror(ue));
			continue;
		}
		link_batch_add(b, klen, 0, none);
	}
	link_batch_flush(b);
}

/* Cluster: an inbox entry's URLs into the sieve, through the feeder's own batch. */
static void feed_lines(struct sieve_path *sp, struct link_batch *in, const char *lines)
{
	for (const char *line = lines, *next; *line; line = next) {
		char *nl = strchr(line, '\n');
		next = nl ? nl + 1 : line + strlen(line);
		char *via = strchr(line, '\t');
		char *depth = via ? strchr(via + 1, '\t') : NULL;
		if (!depth || (nl && depth > nl) || (size_t)(via - line) > sp->p.cfg.max_url_len)
			continue;
		struct link_meta_via *v =
		        link_meta_via_new(sp->meta, via + 1, (size_t)(depth - via - 1));
		size_t room;
		char *key = batch_slot(in, &room);
		if (v && (size_t)(via - line) < room) {
			memcpy(key, line, (size_t)(via - line));
			batch_add(in, (size_t)(via - line), (uint32_t)strtoul(depth + 1, NULL, 10),
			          v);
		} else {
			atomic_fetch_add(&sp->ac.meta_dropped, 1);
		}
		link_meta_via_release(sp->meta, v);
	}
	batch_flush(in);
}

static void feed_one(struct sieve_path *sp, struct link_batch *b, struct link_batch *in,
                     struct feed *f)
{
	if (f->flush == FEED_LINES) {
		feed_lines(sp, in, f->data);
		return;
	}
	if (f->flush) {
		sieve_flush_delivered(sp);
		atomic_store(&sp->flush_done_seq, f->seq);
		sp->p.hooks.wake(sp->p.hooks.ctx);
		return;
	}
	struct link_meta_via *via =
	        link_meta_via_new(sp->meta, f->data + f->url_len + 1, f->via_len);
	size_t room;
	char *key = link_batch_slot(b, &room);
	if (via && f->url_len < room) {
		memcpy(key, f->data, f->url_len);
		link_batch_add(b, f->url_len, f->depth, via);
		link_batch_flush(b);
	} else {
		atomic_fetch_add(&sp->ac.meta_dropped, 1);
	}
	link_meta_via_release(sp->meta, via);
}

static void *feeder_main(void *arg)
{
	struct sieve_path *sp = arg;
	struct url *u = url_create(sp->p.cfg.url);
	struct link_meta_via *none = link_meta_via_new(sp->meta, "", 0);
	struct link_batch *b = sp->found;
	struct link_batch *in = sieve_path_batch_create(sp);
	int ok = u && none && b && in;
	void *item;
	if (!ok)
		sieve_failure(sp, SIEVE_ENOMEM, "feeder");
	else
		feed_seeds(sp, b, u, none);
	atomic_store(&sp->seeded, 1);
	sp->p.hooks.wake(sp->p.hooks.ctx);
	while (bqueue_pop(sp->feedq, &item) == BQUEUE_OK) {
		if (ok && !atomic_load(&sp->stop_adding)) /* else teardown: drop */
			feed_one(sp, b, in, item);
		free(item);
	}
	link_batch_destroy(in);
	link_meta_via_release(sp->meta, none);
	url_destroy(u);
	return NULL;
}

int sieve_path_start_feeder(struct sieve_path *sp, char *const *seeds, size_t n,
                            struct link_batch *found)
{
	sp->found = found;
	sp->seeds = seeds;
	sp->n_seeds = n;
	if (pthread_create(&sp->feeder, NULL, feeder_main, sp) != 0)
		return -1;
	sp->feeder_started = 1;
	return 0;
}

/* Loop thread: queues a feed item without waiting (room is guaranteed by
 * sieve_path_has_room; a failure is counted by the caller). */
static int feed_push(struct sieve_path *sp, int flush, uint64_t seq, const char *url, size_t len,
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
	if (bqueue_try_push(sp->feedq, f) != BQUEUE_OK) {
		free(f);
		return -1;
	}
	return 0;
}

int sieve_path_feed_redirect(struct sieve_path *sp, const char *url, size_t len, const char *via,
                             size_t via_len, uint32_t depth)
{
	return feed_push(sp, 0, 0, url, len, via, via_len, depth);
}

int sieve_path_feed_lines(struct sieve_path *sp, const char *lines, size_t len)
{
	if (feed_push(sp, FEED_LINES, 0, lines, len, NULL, 0, 0) != 0)
		return -1;
	sp->lines_fed++;
	return 0;
}

int sieve_path_inbound_room(const struct sieve_path *sp)
{
	return bqueue_size(sp->feedq) + sp->p.cfg.max_transfers + FEED_SLACK <
	       bqueue_cap(sp->feedq);
}

int sieve_path_has_room(const struct sieve_path *sp, size_t in_flight)
{
	/* each transfer may end in one redirect target, plus one flush request */
	return bqueue_size(sp->feedq) + in_flight + 2 <= bqueue_cap(sp->feedq);
}

/* ---- forced flushes (loop thread) ---- */

/* Asks the feeder for a forced sieve flush (at most one pending). idle:
 * requested with nothing in flight, parsing or queued; only such a flush
 * can end the crawl. */
static void request_flush(struct sieve_path *sp, int idle)
{
	uint64_t emits = atomic_load(&sp->ac.emits_pushed);
	if (feed_push(sp, 1, sp->flush_seq + 1, NULL, 0, NULL, 0, 0) != 0)
		return; /* no room (cannot happen: has_room keeps one slot); next pump retries */
	sp->flush_seq++;
	sp->flush_pending = 1;
	sp->flush_asked_us = monotonic_us();
	sp->flush_idle = idle;
	sp->flush_emits_before = emits;
	sp->flush_keys_at = atomic_load(&sp->ac.keys_added);
	sp->flush_raised_at = atomic_load(&sp->ac.keys_raised);
	sp->flush_lines_at = sp->lines_fed;
	if (idle)
		sp->forced_flushes++;
	else
		sp->early_flushes++;
}

/* 1 if the pending forced flush has completed (it is then no longer
 * pending). */
static int flush_completed(struct sieve_path *sp)
{
	if (!sp->flush_pending || atomic_load(&sp->flush_done_seq) != sp->flush_seq)
		return 0;
	sp->flush_pending = 0;
	sp->flush_done_us = monotonic_us();
	sp->flush_took_us = sp->flush_done_us - sp->flush_asked_us;
	return 1;
}

/* Nothing to fetch while pages are still fetched or parsed, or only hosts
 * that wait: delivers the links found so far now instead of after the
 * whole wave has drained (fetching would stall meanwhile). A flush reads
 * and rewrites the sieve's whole signature file (one entry per URL emitted
 * so far), so one is asked for only once the keys added since the last one
 * are a fair share of that file: flush work stays within
 * EARLY_FLUSH_RATIO entries per key, however big the crawl. */
static void early_flush(struct sieve_path *sp)
{
	const struct sieve_path_counters *ac = &sp->ac;
	if (bqueue_size(sp->emitq) == 0 &&
	    atomic_load(&ac->keys_added) - sp->flush_keys_at >
	            atomic_load(&ac->emits_pushed) / EARLY_FLUSH_RATIO)
		request_flush(sp, 0);
}

int sieve_path_dry(struct sieve_path *sp, int loop_idle)
{
	const struct sieve_path_counters *ac = &sp->ac;
	int idle = loop_idle && bqueue_size(sp->emitq) == 0 && bqueue_size(sp->feedq) == 0;
	/* URLs may still wait in the sieve's buffer (it flushes by itself only
	 * when full): a forced flush, run by the feeder thread, delivers them.
	 * The end: a flush requested with nothing in flight, parsing or queued
	 * emitted nothing. emits_pushed unchanged means the frontier stayed dry
	 * since the request, so no transfer, parse or redirect could have added
	 * anything after it; no inbox entry fed since the request (the feeder
 * takes them in order) means none waits in the sieve's buffer. */
	if (flush_completed(sp) && sp->flush_idle &&
	    atomic_load(&ac->emits_pushed) == sp->flush_emits_before && idle &&
	    sp->flush_lines_at == sp->lines_fed)
		return 1;
	if (sp->flush_pending || !atomic_load(&sp->seeded))
		return 0;
	if (idle)
		request_flush(sp, 1);
	else
		early_flush(sp);
	return 0;
}

void sieve_path_raised(struct sieve_path *sp)
{
	flush_completed(sp);
	if (sp->flush_pending || !atomic_load(&sp->seeded) ||
	    atomic_load(&sp->ac.keys_raised) == sp->flush_raised_at)
		return;
	early_flush(sp);
}

uint64_t sieve_path_none_ready(struct sieve_path *sp, int loop_idle, uint64_t now_us)
{
	flush_completed(sp);
	if (sp->flush_pending || !atomic_load(&sp->seeded))
		return 0;
	if (!loop_idle || bqueue_size(sp->emitq) != 0 || bqueue_size(sp->feedq) != 0 ||
	    atomic_load(&sp->ac.keys_added) == sp->flush_keys_at)
		return 0; /* what is under way will ask again when it ends */
	/* Flushing takes at most a tenth of the time so spent waiting, counted
	 * from the last such flush: the other flushes (the seeds', those of
	 * hosts running dry) were not asked for by a wait. The crawl's first
	 * wait (a few hosts retrying robots.txt while the rest have no URL
	 * yet) so gets its flush at once. */
	uint64_t gap = 10 * sp->flush_took_us;
	uint64_t at = sp->waited_flush_us + (gap > NONE_READY_GAP_US ? gap : NONE_READY_GAP_US);
	if (sp->waited_flush_us && now_us < at)
		return at;
	sp->waited_flush_us = now_us;
	request_flush(sp, 0);
	return 0;
}

int sieve_path_quiet(struct sieve_path *sp)
{
	/* a forced flush of the end-of-crawl logic, now done */
	flush_completed(sp);
	return atomic_load(&sp->seeded) && !sp->flush_pending && bqueue_size(sp->feedq) == 0;
}

int sieve_path_push_flush(struct sieve_path *sp, uint64_t *seq)
{
	if (feed_push(sp, 1, sp->flush_seq + 1, NULL, 0, NULL, 0, 0) != 0)
		return -1;
	*seq = ++sp->flush_seq;
	return 0;
}

int sieve_path_flushed(const struct sieve_path *sp, uint64_t seq)
{
	return atomic_load(&sp->flush_done_seq) >= seq;
}

int sieve_path_checkpoint(struct sieve_path *sp, const char *path, char *err, size_t errlen)
{
	int rc = sieve_checkpoint(sp->sieve, path);
	if (rc != SIEVE_OK)
		snprintf(err, errlen, "sieve: %s (%s)", sieve_strerror(rc),
		         sieve_last_error(sp->sieve));
	return rc;
}

/* ---- set-up and teardown ---- */

int sieve_path_create(const struct sieve_path_parts *parts, struct sieve_path **out)
{
	const struct sieve_path_config *cfg = &parts->cfg;
	struct sieve_path *sp = calloc(1, sizeof *sp);
	*out = NULL;
	if (!sp)
		return -1;
	sp->p = *parts;
	pthread_mutex_init(&sp->error_mu, NULL);
	sp->emitq = bqueue_create(EMIT_QUEUE);
	sp->feedq =
	        bqueue_create(cfg->max_transfers + FEED_SLACK + (cfg->inbound ? INBOUND_SLACK : 0));
	sp->meta = link_meta_create(cfg->meta_memory);
	if (!sp->emitq || !sp->feedq || !sp->meta) {
		sieve_path_destroy(sp);
		return -1;
	}
	*out = sp;
	return 0;
}

int sieve_path_open_sieve(struct sieve_path *sp, struct sieve_config *svc, const char *ckpt,
                          char *err, size_t errlen)
{
	char src[4300];
	err[0] = '\0';
	if (ckpt) {
		snprintf(src, sizeof src, "%s/sieve", ckpt);
		int rc = sieve_restore(src, svc->dir, err, errlen);
		if (rc != SIEVE_OK)
			return rc;
	} else if (sieve_path_clear_dir(svc->dir) != 0) {
		snprintf(err, errlen, "cannot clear %s: %s", svc->dir,
		         errno == EBUSY ? "in use by another crawl" : strerror(errno));
		return SIEVE_EIO;
	}
	svc->on_write_error = on_sieve_write_error;
	svc->write_error_ctx = sp;
	return sieve_open(svc, on_sieve_emit, sp, &sp->sieve, err, errlen);
}

int sieve_path_clear_dir(const char *dir)
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

void sieve_path_stop_adding(struct sieve_path *sp)
{
	if (sp)
		atomic_store(&sp->stop_adding, 1);
}

void sieve_path_stop_feeder(struct sieve_path *sp)
{
	if (!sp)
		return;
	if (sp->emitq)
		bqueue_close(sp->emitq);
	if (sp->feeder_started) {
		bqueue_close(sp->feedq);
		pthread_join(sp->feeder, NULL);
		sp->feeder_started = 0;
	}
}

void sieve_path_close_sieve(struct sieve_path *sp)
{
	if (!sp || !sp->sieve)
		return;
	sieve_stats_get(sp->sieve, &sp->sst);
	link_meta_stats(sp->meta, &sp->mst);
	int rc = sieve_close(sp->sieve);
	sp->sieve = NULL;
	if (rc != SIEVE_OK && rc != SIEVE_ECLOSED)
		fprintf(stderr, "crawler crawl: closing the sieve: %s\n", sieve_strerror(rc));
}

void sieve_path_stats(const struct sieve_path *sp, struct sieve_path_stats *out)
{
	out->sieve = sp->sst;
	out->meta = sp->mst;
	if (sp->sieve && sp->meta) /* live: the side table's figures are atomic reads */
		link_meta_stats(sp->meta, &out->meta);
	out->forced_flushes = sp->forced_flushes;
	out->early_flushes = sp->early_flushes;
	out->keys_added = atomic_load(&sp->ac.keys_added);
	out->emits_pushed = atomic_load(&sp->ac.emits_pushed);
	out->emit_dropped = atomic_load(&sp->ac.emit_dropped);
	out->seeds_invalid = atomic_load(&sp->ac.seeds_invalid);
	out->sieve_errors = atomic_load(&sp->ac.sieve_errors);
	out->meta_present = atomic_load(&sp->ac.meta_present);
	out->meta_dropped = atomic_load(&sp->ac.meta_dropped);
	out->meta_missing = atomic_load(&sp->ac.meta_missing);
	out->meta_flushes = atomic_load(&sp->ac.meta_flushes);
}

static void free_items(struct bqueue *q)
{
	void *item;
	if (!q)
		return;
	while (bqueue_try_pop(q, &item) == BQUEUE_OK)
		free(item);
	bqueue_destroy(q);
}

void sieve_path_destroy(struct sieve_path *sp)
{
	if (!sp)
		return;
	sieve_path_stop_adding(sp);
	sieve_path_stop_feeder(sp);
	sieve_path_close_sieve(sp);
	free_items(sp->emitq);
	free_items(sp->feedq);
	link_meta_destroy(sp->meta);
	free(sp->pending_emit);
	link_batch_destroy(sp->found);
	pthread_mutex_destroy(&sp->error_mu);
	free(sp);
}
