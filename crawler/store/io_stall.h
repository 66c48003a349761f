/*
 * io_stall.h: outputs the crawl cannot write right now (a full disk, an
 * exceeded quota, an I/O error), and the pause they impose.
 *
 * A writer that meets ENOSPC, EDQUOT or EIO keeps what it was writing and
 * asks again later: on a thread that may wait (the writer thread, the
 * sieve's threads) through io_stall_wait, which records the stall, reports
 * it once on stderr, sleeps one retry period and says whether to retry; on
 * the fetch loop, which never waits, through io_stall_note. A write that
 * goes through after that calls io_stall_resolved, which ends the stall
 * when no other writer is stalled and reports how long it lasted.
 *
 * Invariant: io_stall_active is 1 from the first failed write of a stall
 * until the last stalled writer succeeded; the fetch loop starts no
 * transfer meanwhile (fetching pauses; what is in flight ends into bounded
 * queues). Nothing is dropped: every writer retries the same bytes.
 *
 * Threads: every call is thread-safe (one mutex). Workload: nothing at all
 * while the disk is fine (io_stall_active is one relaxed load).
 */
#ifndef CRAWLER_STORE_IO_STALL_H
#define CRAWLER_STORE_IO_STALL_H

#include <stddef.h>
#include <stdint.h>

struct io_stall;

/* retry_ms: how long io_stall_wait sleeps. NULL if out of memory. */
struct io_stall *io_stall_create(unsigned retry_ms);
void io_stall_destroy(struct io_stall *s);

/* 1 if err is a condition worth waiting out (ENOSPC, EDQUOT, EIO). */
int io_stall_retryable(int err);

/* A write to `what` (a path, for the report) failed with err: records and
 * reports the stall, sleeps retry_ms, returns 1 (retry) or 0 (the crawl
 * gave up: io_stall_abort was called; fail the write). */
int io_stall_wait(struct io_stall *s, const char *what, int err);
/* The same without sleeping, for the fetch loop: it retries on its own. */
void io_stall_note(struct io_stall *s, const char *what, int err);
/* A write that had failed went through. */
void io_stall_resolved(struct io_stall *s, const char *what);
/* Waiters stop waiting: io_stall_wait returns 0 from now on. */
void io_stall_abort(struct io_stall *s);

/* 1 while stalled; msg (if non-NULL) gets "PATH: reason". */
int io_stall_active(struct io_stall *s, char *msg, size_t cap);
/* Stalls so far and their total duration. */
void io_stall_stats(struct io_stall *s, uint64_t *stalls, double *seconds);

#endif
