/*
 * clock.h: the monotonic clock every module measures time on (delays,
 * timeouts, durations), so times taken in different modules compare; and
 * the wall clock, for what is written down with a date (WARC records, log
 * lines), never for measuring.
 */
#ifndef FRONTIER_BASE_CLOCK_H
#define FRONTIER_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline uint64_t monotonic_ms(void)
{
	return monotonic_us() / 1000u;
}

static inline double monotonic_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Milliseconds since the Unix epoch, UTC (CLOCK_REALTIME: it may step). */
static inline int64_t wall_clock_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
