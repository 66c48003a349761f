/*
 * parse_pool.h: the parse threads. N threads take jobs (finished responses)
 * from one BOUNDED queue and run the caller's work function on each.
 *
 * Data structure: a bounded queue (frontier/base/bqueue.h) of `queue_cap` job
 * pointers, and N threads; each thread owns a private state made
 * by the caller's init function (e.g. a links extractor, a decode buffer),
 * so work never shares a parser between threads.
 *
 * Invariants: at most queue_cap jobs wait; parse_pool_try_submit never
 * blocks (the fetch loop uses it and starts no new transfers while the pool
 * is full: back-pressure); parse_pool_outstanding() counts jobs submitted
 * and not yet finished by work, so "0" means every submitted job is done.
 * Every submitted job reaches work exactly once, even at destroy (the queue
 * is drained before the threads exit).
 *
 * Workload: a few thousand pages per second, each 10-500 KiB of HTML; work
 * dominates, the queue costs a lock per job.
 */
#ifndef PARSE_PARSE_POOL_H
#define PARSE_PARSE_POOL_H

#include <stddef.h>
#include <stdint.h>

enum parse_pool_err {
	PARSE_POOL_OK = 0,
	PARSE_POOL_ERR_FULL = 1,    /* try_submit: queue full (not an error: back-pressure) */
	PARSE_POOL_ERR_NOMEM = 2,   /* allocation failed */
	PARSE_POOL_ERR_THREAD = 3,  /* the queue or a thread could not be started */
	PARSE_POOL_ERR_INVALID = 4, /* bad argument, or submit after shutdown */
};

struct parse_pool_ops {
	/* Makes a thread's private state; runs on that thread. NULL means it
	 * failed: work is then called with a NULL state and must cope (e.g.
	 * skip parsing), so no job is ever lost. init may itself be NULL. */
	void *(*init)(void *ctx);
	/* Processes one job; owns it from now on (frees it). */
	void (*work)(void *ctx, void *thread_state, void *job);
	/* Frees the thread's state; runs on that thread at shutdown. */
	void (*fini)(void *ctx, void *thread_state);
};

struct parse_pool;

/* Starts n_threads (0 = one fewer than the online CPUs, at least one)
 * threads. ops is copied; ctx is borrowed and must outlive the pool. On
 * error *out is NULL and no thread is left running. */
enum parse_pool_err parse_pool_create(unsigned n_threads, size_t queue_cap,
                                      const struct parse_pool_ops *ops, void *ctx,
                                      struct parse_pool **out);
/* Finishes every queued job, joins the threads, frees. NULL is a no-op. */
void parse_pool_destroy(struct parse_pool *p);

/* Queues a job without waiting; on PARSE_POOL_ERR_FULL the caller keeps it. */
enum parse_pool_err parse_pool_try_submit(struct parse_pool *p, void *job);
/* Jobs waiting in the queue. */
size_t parse_pool_queued(struct parse_pool *p);
/* Jobs submitted and not yet finished (queued + running). */
uint64_t parse_pool_outstanding(struct parse_pool *p);
size_t parse_pool_capacity(const struct parse_pool *p);
unsigned parse_pool_threads(const struct parse_pool *p);
const char *parse_pool_strerror(enum parse_pool_err e);

#endif
