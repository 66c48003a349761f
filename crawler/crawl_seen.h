/*
 * crawl_seen.h: the set of URLs already discovered, used by the crawl until
 * the Mercator sieve (sieve/sieve.h) is wired in: an open-addressing hash
 * set of 64-bit XXH3 signatures of crawl keys, under one mutex.
 *
 * Invariants: crawl_seen_add returns 1 exactly once per distinct signature
 * (a 64-bit collision makes a URL look seen: probability ~n^2/2^65); the
 * table doubles at 50% load, so memory is 16-32 bytes per URL: bounded by
 * the crawl's size, not by configuration (the sieve's disk-backed design is
 * what removes this limit).
 *
 * Workload: one add per extracted link from many parse threads (a lock and a
 * probe each) and per redirect target from the fetch loop.
 */
#ifndef CRAWLER_CRAWL_SEEN_H
#define CRAWLER_CRAWL_SEEN_H

#include <stddef.h>
#include <stdint.h>

struct crawl_seen;

/* New empty set; NULL when out of memory. */
struct crawl_seen *crawl_seen_create(void);
/* Frees it; NULL is a no-op. */
void crawl_seen_destroy(struct crawl_seen *s);
/* 1 if url (len bytes) is new (and now recorded), 0 if seen before,
 * -1 when out of memory (the URL is then treated as seen). Thread-safe. */
int crawl_seen_add(struct crawl_seen *s, const char *url, size_t len);
/* Distinct URLs recorded. */
uint64_t crawl_seen_count(struct crawl_seen *s);

#endif
