/*
 * clock.h: the monotonic clock every module measures time on (delays,
 * timeouts, durations), so times taken in different modules compare.
 * Wall-clock time (WARC dates, log lines) is taken where it is written.
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

#endif
