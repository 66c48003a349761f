/*
 * clock.h: the monotonic clock every module measures time on (delays,
 * timeouts, durations), so times taken in different modules compare; and
 * the wall clock, for what is written down with a date (WARC records, log
 * lines), never for measuring.
 */
#ifndef FRONTIER_BASE_CLOCK_H
#define FRONTIER_BASE_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Room for wall_clock_text's longest text and its NUL. */
#define WALL_CLOCK_TEXT_MAX 32

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

/* CPU time the calling thread has used, us: what a piece of work costs
 * whatever else the machine runs. */
static inline uint64_t thread_cpu_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Milliseconds since the Unix epoch, UTC (CLOCK_REALTIME: it may step). */
static inline int64_t wall_clock_unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* unix_ms as ISO 8601 UTC with milliseconds, "2026-11-22T23:59:01.123Z"
 * (what printf's "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" makes of its
 * fields), NUL-terminated; returns its length. Digits by hand: the crawl
 * log writes one per fetch. */
size_t wall_clock_text(int64_t unix_ms, char out[WALL_CLOCK_TEXT_MAX]);

#endif
