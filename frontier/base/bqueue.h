/*
 * bqueue.h: a bounded multi-producer multi-consumer FIFO of pointers.
 *
 * Data structure: a ring of `cap` slots under one mutex with two condition
 * variables (not empty, not full). Blocking and non-blocking push/pop, and a
 * close that wakes every waiter: after close, push fails and pop drains what
 * is left then returns "closed".
 *
 * Invariants: never more than cap items; items come out in push order; the
 * queue never owns what the pointers point to.
 *
 * Workload: hand-offs between the crawler's threads (sieve flush thread ->
 * fetch loop, fetch loop -> writer thread): thousands of items per second,
 * the fetch loop side only ever uses the non-blocking calls.
 */
#ifndef FRONTIER_BASE_BQUEUE_H
#define FRONTIER_BASE_BQUEUE_H

#include <pthread.h>
#include <stddef.h>

enum bqueue_result {
	BQUEUE_OK = 0,     /* item pushed / popped */
	BQUEUE_FULL = 1,   /* try_push: no room (not an error) */
	BQUEUE_EMPTY = 2,  /* try_pop: nothing queued (not an error) */
	BQUEUE_CLOSED = 3, /* push after close; pop on a closed, drained queue */
};

struct bqueue;

/* New queue holding at most cap (>= 1) pointers; NULL on failure. */
struct bqueue *bqueue_create(size_t cap);
/* Frees the queue (not the items). NULL is a no-op. */
void bqueue_destroy(struct bqueue *q);

enum bqueue_result bqueue_push(struct bqueue *q, void *item); /* waits for room */
enum bqueue_result bqueue_try_push(struct bqueue *q, void *item);
enum bqueue_result bqueue_pop(struct bqueue *q, void **item); /* waits for an item */
enum bqueue_result bqueue_try_pop(struct bqueue *q, void **item);
/* Wakes all waiters; later pushes return BQUEUE_CLOSED. */
void bqueue_close(struct bqueue *q);
size_t bqueue_size(struct bqueue *q);
size_t bqueue_cap(const struct bqueue *q);

/*
 * A queue with the threads that serve it, started and stopped together, so
 * no thread outlives its queue. Start: creates the queue (cap slots) and
 * then n threads running fn(arg), each popping until the queue is closed
 * and drained; fn reaches the queue as w->q, set before any thread runs.
 * Stop: closes the queue, joins every thread, hands each item still
 * queued to drop (NULL: none expected), destroys the queue. A start that
 * fails stops what it had started and returns BQUEUE_CLOSED; *w is then
 * empty, and stopping an empty (zeroed) one is a no-op.
 */
struct bqueue_workers {
	struct bqueue *q;
	pthread_t *threads;
	unsigned n;
};

enum bqueue_result bqueue_workers_start(struct bqueue_workers *w, size_t cap, unsigned n,
                                        void *(*fn)(void *), void *arg);
void bqueue_workers_stop(struct bqueue_workers *w, void (*drop)(void *item));

#endif
