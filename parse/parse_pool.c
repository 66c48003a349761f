/* parse_pool.c: bounded job ring + N worker threads (see parse_pool.h). */
#include "parse/parse_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

struct parse_pool {
	pthread_mutex_t mu;
	pthread_cond_t not_empty;
	struct parse_pool_ops ops;
	void *ctx;
	void **ring;
	size_t cap, head, count;
	int stopping;
	atomic_uint_fast64_t outstanding;
	unsigned n_threads;
	pthread_t *threads;
};

static void *worker(void *arg)
{
	struct parse_pool *p = arg;
	/* A NULL state (init failed) still runs work, which must cope: every
	 * job has to reach work once (see the header). */
	void *state = p->ops.init ? p->ops.init(p->ctx) : NULL;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->count == 0 && !p->stopping)
			pthread_cond_wait(&p->not_empty, &p->mu);
		if (p->count == 0) { /* stopping and drained */
			pthread_mutex_unlock(&p->mu);
			break;
		}
		void *job = p->ring[p->head];
		p->head = (p->head + 1) % p->cap;
		p->count--;
		pthread_mutex_unlock(&p->mu);
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
	enum parse_pool_err rc = PARSE_POOL_OK;
	struct parse_pool *p = NULL;
	*out = NULL;
	if (!ops || !ops->work || queue_cap == 0 || queue_cap > ((size_t)1 << 26))
		return PARSE_POOL_ERR_INVALID;
	if (n_threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		n_threads = n > 0 ? (unsigned)n : 1;
	}
	if (n_threads > 1024)
		return PARSE_POOL_ERR_INVALID;
	p = calloc(1, sizeof *p);
	if (!p)
		return PARSE_POOL_ERR_NOMEM;
	p->ring = calloc(queue_cap, sizeof *p->ring);
	p->threads = calloc(n_threads, sizeof *p->threads);
	if (!p->ring || !p->threads) {
		free(p->ring);
		free(p->threads);
		free(p);
		return PARSE_POOL_ERR_NOMEM;
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->not_empty, NULL);
	p->ops = *ops;
	p->ctx = ctx;
	p->cap = queue_cap;
	atomic_init(&p->outstanding, 0);
	for (unsigned i = 0; i < n_threads; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
			rc = PARSE_POOL_ERR_THREAD;
			break;
		}
		p->n_threads++;
	}
	if (rc != PARSE_POOL_OK) {
		parse_pool_destroy(p);
		return rc;
	}
	*out = p;
	return PARSE_POOL_OK;
}

void parse_pool_destroy(struct parse_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = 1;
	pthread_cond_broadcast(&p->not_empty);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->not_empty);
	free(p->ring);
	free(p->threads);
	free(p);
}

enum parse_pool_err parse_pool_try_submit(struct parse_pool *p, void *job)
{
	enum parse_pool_err rc = PARSE_POOL_OK;
	pthread_mutex_lock(&p->mu);
	if (p->stopping)
		rc = PARSE_POOL_ERR_INVALID;
	else if (p->count == p->cap)
		rc = PARSE_POOL_ERR_FULL;
	else {
		p->ring[(p->head + p->count) % p->cap] = job;
		p->count++;
		atomic_fetch_add(&p->outstanding, 1);
		pthread_cond_signal(&p->not_empty);
	}
	pthread_mutex_unlock(&p->mu);
	return rc;
}

size_t parse_pool_queued(struct parse_pool *p)
{
	pthread_mutex_lock(&p->mu);
	size_t n = p->count;
	pthread_mutex_unlock(&p->mu);
	return n;
}

uint64_t parse_pool_outstanding(struct parse_pool *p)
{
	return atomic_load(&p->outstanding);
}

size_t parse_pool_capacity(const struct parse_pool *p)
{
	return p->cap;
}

unsigned parse_pool_threads(const struct parse_pool *p)
{
	return p->n_threads;
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
