/* parse_pool.c: a bounded job queue (frontier/base/bqueue.h) + N worker threads
 * (see parse_pool.h). */
#include "parse/parse_pool.h"
#include "frontier/base/bqueue.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct parse_pool {
	struct parse_pool_ops ops;
	void *ctx;
	struct bqueue_workers workers; /* the job queue and its threads */
	atomic_uint_fast64_t outstanding;
};

static void *worker(void *arg)
{
	struct parse_pool *p = arg;
	/* A NULL state (init failed) still runs work, which must cope: every
	 * job has to reach work once (see the header). */
	void *state = p->ops.init ? p->ops.init(p->ctx) : NULL;
	void *job;
	/* pop returns BQUEUE_CLOSED only once the queue is closed and drained */
	while (bqueue_pop(p->workers.q, &job) == BQUEUE_OK) {
		p->ops.work(p->ctx, state, job);
		atomic_fetch_sub(&p->outstanding, 1);
	}
	if (p->ops.fini && state)
		p->ops.fini(p->ctx, state);
	return NULL;
}

enum parse_pool_err parse_pool_create(unsigned n_threads, size_t queue_cap,
                                      const struct parse_pool_ops *ops, void *ctx,
                                      struct parse_pool **out)
{
	struct parse_pool *p = NULL;
	*out = NULL;
	if (!ops || !ops->work || queue_cap == 0 || queue_cap > ((size_t)1 << 26))
		return PARSE_POOL_ERR_INVALID;
	if (n_threads == 0) {
		/* The fetch loop and the WARC writer keep a core busy between
		 * them: a parse thread per core would make the threads take turns
		 * on the cores and add wake-up latency to every page. */
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = n > 1 ? (unsigned)(n - 1) : 1;
	}
	if (n_threads > 1024)
		return PARSE_POOL_ERR_INVALID;
	p = calloc(1, sizeof *p);
	if (!p)
		return PARSE_POOL_ERR_NOMEM;
	p->ops = *ops;
	p->ctx = ctx;
	atomic_init(&p->outstanding, 0);
	if (bqueue_workers_start(&p->workers, queue_cap, n_threads, worker, p) != BQUEUE_OK) {
		free(p);
		return PARSE_POOL_ERR_THREAD;
	}
	*out = p;
	return PARSE_POOL_OK;
}

void parse_pool_destroy(struct parse_pool *p)
{
	if (!p)
		return;
	bqueue_workers_stop(&p->workers, NULL);
	free(p);
}

enum parse_pool_err parse_pool_try_submit(struct parse_pool *p, void *job)
{
	/* Counted before the push, so a worker's decrement never comes first;
	 * only the submitting thread can see the count of a refused job. */
	atomic_fetch_add(&p->outstanding, 1);
	enum bqueue_result r = bqueue_try_push(p->workers.q, job);
	if (r == BQUEUE_OK)
		return PARSE_POOL_OK;
	atomic_fetch_sub(&p->outstanding, 1);
	return r == BQUEUE_FULL ? PARSE_POOL_ERR_FULL : PARSE_POOL_ERR_INVALID;
}

size_t parse_pool_queued(struct parse_pool *p)
{
	return bqueue_size(p->workers.q);
}

uint64_t parse_pool_outstanding(struct parse_pool *p)
{
	return atomic_load(&p->outstanding);
}

size_t parse_pool_capacity(const struct parse_pool *p)
{
	return bqueue_cap(p->workers.q);
}

unsigned parse_pool_threads(const struct parse_pool *p)
{
	return p->workers.n;
}

const char *parse_pool_strerror(enum parse_pool_err e)
{
	switch (e) {
	case PARSE_POOL_OK: return "ok";
	case PARSE_POOL_ERR_FULL: return "queue full";
	case PARSE_POOL_ERR_NOMEM: return "out of memory";
	case PARSE_POOL_ERR_THREAD: return "cannot start a thread";
	case PARSE_POOL_ERR_INVALID: return "invalid argument";
	}
	return "unknown error";
}
