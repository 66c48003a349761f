/*
 * loop_run.h: the cluster tests' way of running their libuv loop until a
 * condition holds: the loop turns at least every 5 ms (a timer) so that
 * conditions on the clock are seen; nothing is kept between calls but
 * the loop itself, the including test's one loop.
 */
#ifndef TESTS_CLUSTER_LOOP_RUN_H
#define TESTS_CLUSTER_LOOP_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "frontier/base/clock.h"

static uv_loop_t loop;

static void loop_run_wake(uv_timer_t *t)
{
	(void)t;
}

/* Runs the loop until cond(arg) holds or ms pass: whether it held. */
static bool run_until(bool (*cond)(void *), void *arg, unsigned ms)
{
	uv_timer_t t;
	uv_timer_init(&loop, &t);
	uv_timer_start(&t, loop_run_wake, 5, 5);
	uint64_t end = monotonic_ms() + ms;
	bool ok;
	while (!(ok = cond(arg)) && monotonic_ms() < end)
		uv_run(&loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&loop, UV_RUN_NOWAIT);
	return ok;
}

/* A condition that never holds: run_until(never, NULL, ms) runs ms. */
static bool never(void *arg)
{
	(void)arg;
	return false;
}

#endif
