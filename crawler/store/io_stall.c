/* io_stall.c: see io_stall.h. */
#include "crawler/store/io_stall.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontier/base/clock.h"

#define MAX_STALLED 16 /* distinct outputs stalled at once (more share the last slot) */

struct io_stall {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned retry_ms;
	atomic_int active;
	int aborted;
	char what[MAX_STALLED][256]; /* the outputs stalled now */
	int nwhat;
	char msg[512];  /* the first of this stall */
	double since_s; /* monotonic start of this stall */
	uint64_t stalls;
	double seconds;
};

struct io_stall *io_stall_create(unsigned retry_ms)
{
	struct io_stall *s = calloc(1, sizeof *s);
	pthread_condattr_t ca;
	if (!s)
		return NULL;
	s->retry_ms = retry_ms ? retry_ms : 1000;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	return s;
}

void io_stall_destroy(struct io_stall *s)
{
	if (s) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
	}
	free(s);
}

int io_stall_retryable(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EIO;
}

/* Records `what` as stalled (caller holds mu); reports a new stall. */
static void note_locked(struct io_stall *s, const char *what, int err)
{
	for (int i = 0; i < s->nwhat; i++)
		if (strcmp(s->what[i], what) == 0)
			return;
	if (s->nwhat < MAX_STALLED)
		snprintf(s->what[s->nwhat++], sizeof s->what[0], "%s", what);
	if (s->nwhat == 1) {
		s->stalls++;
		s->since_s = monotonic_s();
		snprintf(s->msg, sizeof s->msg, "%s: %s", what, strerror(err));
		atomic_store(&s->active, 1);
		fprintf(stderr, "\ncrawler crawl: %s: fetching paused, retrying every %.1f s\n",
		        s->msg, s->retry_ms / 1000.0);
	}
}

int io_stall_wait(struct io_stall *s, const char *what, int err)
{
	/* the condition variable waits on CLOCK_MONOTONIC (io_stall_create) */
	uint64_t t = monotonic_us() + (uint64_t)s->retry_ms * 1000u;
	struct timespec until = { (time_t)(t / 1000000u), (long)(t % 1000000u) * 1000L };
	int go;
	pthread_mutex_lock(&s->mu);
	note_locked(s, what, err);
	while (!s->aborted && pthread_cond_timedwait(&s->cv, &s->mu, &until) != ETIMEDOUT)
		;
	go = !s->aborted;
	pthread_mutex_unlock(&s->mu);
	return go;
}

void io_stall_note(struct io_stall *s, const char *what, int err)
{
	pthread_mutex_lock(&s->mu);
	note_locked(s, what, err);
	pthread_mutex_unlock(&s->mu);
}

void io_stall_resolved(struct io_stall *s, const char *what)
{
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nwhat; i++)
		if (strcmp(s->what[i], what) == 0) {
			memmove(s->what[i], s->what[i + 1],
			        (size_t)(s->nwhat - i - 1) * sizeof s->what[0]);
			s->nwhat--;
			if (s->nwhat == 0) {
				double d = monotonic_s() - s->since_s;
				s->seconds += d;
				atomic_store(&s->active, 0);
				fprintf(stderr,
				        "\ncrawler crawl: %s: written again after %.1f s: fetching "
				        "goes on\n",
				        what, d);
			}
			break;
		}
	pthread_mutex_unlock(&s->mu);
}

void io_stall_abort(struct io_stall *s)
{
	pthread_mutex_lock(&s->mu);
	s->aborted = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

int io_stall_active(struct io_stall *s, char *msg, size_t cap)
{
	if (!atomic_load_explicit(&s->active, memory_order_relaxed))
		return 0;
	if (msg) {
		pthread_mutex_lock(&s->mu);
		snprintf(msg, cap, "%s", s->msg);
		pthread_mutex_unlock(&s->mu);
	}
	return 1;
}

void io_stall_stats(struct io_stall *s, uint64_t *stalls, double *seconds)
{
	pthread_mutex_lock(&s->mu);
	*stalls = s->stalls;
	*seconds = s->seconds + (s->nwhat ? monotonic_s() - s->since_s : 0);
	pthread_mutex_unlock(&s->mu);
}
