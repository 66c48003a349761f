/* bqueue.c: ring buffer + mutex + two condition variables (see bqueue.h). */
#include "frontier/base/bqueue.h"

#include <pthread.h>
#include <stdlib.h>

struct bqueue {
	pthread_mutex_t mu;
	pthread_cond_t not_empty, not_full;
	size_t cap, head, count;
	int closed;
	void *slots[];
};

struct bqueue *bqueue_create(size_t cap)
{
	if (cap == 0 || cap > ((size_t)1 << 28))
		return NULL;
	struct bqueue *q = calloc(1, sizeof *q + cap * sizeof(void *));
	if (!q)
		return NULL;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	q->cap = cap;
	return q;
}

void bqueue_destroy(struct bqueue *q)
{
	if (!q)
		return;
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->not_empty);
	pthread_cond_destroy(&q->not_full);
	free(q);
}

static enum bqueue_result push_locked(struct bqueue *q, void *item, int wait)
{
	while (!q->closed && q->count == q->cap) {
		if (!wait)
			return BQUEUE_FULL;
		pthread_cond_wait(&q->not_full, &q->mu);
	}
	if (q->closed)
		return BQUEUE_CLOSED;
	q->slots[(q->head + q->count) % q->cap] = item;
	q->count++;
	pthread_cond_signal(&q->not_empty);
	return BQUEUE_OK;
}

static enum bqueue_result pop_locked(struct bqueue *q, void **item, int wait)
{
	while (q->count == 0) {
		if (q->closed)
			return BQUEUE_CLOSED;
		if (!wait)
			return BQUEUE_EMPTY;
		pthread_cond_wait(&q->not_empty, &q->mu);
	}
	*item = q->slots[q->head];
	q->head = (q->head + 1) % q->cap;
	q->count--;
	pthread_cond_signal(&q->not_full);
	return BQUEUE_OK;
}

enum bqueue_result bqueue_push(struct bqueue *q, void *item)
{
	pthread_mutex_lock(&q->mu);
	enum bqueue_result r = push_locked(q, item, 1);
	pthread_mutex_unlock(&q->mu);
	return r;
}

enum bqueue_result bqueue_try_push(struct bqueue *q, void *item)
{
	pthread_mutex_lock(&q->mu);
	enum bqueue_result r = push_locked(q, item, 0);
	pthread_mutex_unlock(&q->mu);
	return r;
}

enum bqueue_result bqueue_pop(struct bqueue *q, void **item)
{
	pthread_mutex_lock(&q->mu);
	enum bqueue_result r = pop_locked(q, item, 1);
	pthread_mutex_unlock(&q->mu);
	return r;
}

enum bqueue_result bqueue_try_pop(struct bqueue *q, void **item)
{
	pthread_mutex_lock(&q->mu);
	enum bqueue_result r = pop_locked(q, item, 0);
	pthread_mutex_unlock(&q->mu);
	return r;
}

void bqueue_close(struct bqueue *q)
{
	pthread_mutex_lock(&q->mu);
	q->closed = 1;
	pthread_cond_broadcast(&q->not_empty);
	pthread_cond_broadcast(&q->not_full);
	pthread_mutex_unlock(&q->mu);
}

size_t bqueue_size(struct bqueue *q)
{
	pthread_mutex_lock(&q->mu);
	size_t n = q->count;
	pthread_mutex_unlock(&q->mu);
	return n;
}

size_t bqueue_cap(const struct bqueue *q)
{
	return q->cap;
}

enum bqueue_result bqueue_workers_start(struct bqueue_workers *w, size_t cap, unsigned n,
                                        void *(*fn)(void *), void *arg)
{
	*w = (struct bqueue_workers){ bqueue_create(cap), calloc(n ? n : 1, sizeof(pthread_t)), 0 };
	while (w->q && w->threads && w->n < n &&
	       pthread_create(&w->threads[w->n], NULL, fn, arg) == 0)
		w->n++;
	if (w->n == n && w->q && w->threads)
		return BQUEUE_OK;
	bqueue_workers_stop(w, NULL);
	return BQUEUE_CLOSED;
}

void bqueue_workers_stop(struct bqueue_workers *w, void (*drop)(void *item))
{
	void *item;
	if (w->q) {
		bqueue_close(w->q);
		for (unsigned i = 0; i < w->n; i++)
			pthread_join(w->threads[i], NULL);
		while (bqueue_try_pop(w->q, &item) == BQUEUE_OK)
			if (drop)
				drop(item);
		bqueue_destroy(w->q);
	}
	free(w->threads);
	*w = (struct bqueue_workers){ 0 };
}
