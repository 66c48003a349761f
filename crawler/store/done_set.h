/*
 * done_set.h: the URLs a resumed crawl found already fetched in the tail
 * of its WARC and crawl log (crawl_tail.h), as a set of 64-bit signatures
 * (XXH3-64 of the crawl key), so that they are not fetched again.
 *
 * Such a URL may still wait somewhere the checkpoint put it: in its host's
 * queue of the frontier, among the requests the checkpoint re-queued as in
 * flight, or not yet in the checkpoint's sieve at all (found after it, so
 * the sieve emits it once more when the tail replay adds it). Each of
 * these meets the set exactly once: when the frontier hands it out, or
 * when the sieve emits it. done_set_take then removes it, so the set only
 * holds URLs still to be met.
 *
 * Invariant: a signature is in the set at most once. The set is saved with
 * every checkpoint (its URLs may still sit in the saved frontier) and read
 * back on resume, so a later crash does not forget it.
 *
 * Memory: open addressing, 8 bytes a slot, load at most 1/2; it holds at
 * most the fetches of one checkpoint interval per crash, fewer as they are
 * met. A 64-bit signature collision would skip one URL, as in the sieve.
 *
 * Fetch loop thread only.
 */
#ifndef CRAWLER_STORE_DONE_SET_H
#define CRAWLER_STORE_DONE_SET_H

#include <stddef.h>
#include <stdint.h>

struct done_set;
struct recfile_writer;
struct recfile_reader;

/* An empty set; NULL if out of memory. */
struct done_set *done_set_create(void);
/* NULL is a no-op. */
void done_set_destroy(struct done_set *s);

/* Adds the crawl key url (len bytes). 0, or -1 (out of memory). */
int done_set_add(struct done_set *s, const char *url, size_t len);
/* 1 if url was in the set (it is removed), else 0. NULL s: 0. */
int done_set_take(struct done_set *s, const char *url, size_t len);
/* URLs in the set. */
size_t done_set_count(const struct done_set *s);

/* Checkpoint: the count, then each signature. */
void done_set_save(const struct done_set *s, struct recfile_writer *w);
/* Resume: adds what done_set_save wrote. 0, or -1 (corrupt, no memory). */
int done_set_load(struct done_set *s, struct recfile_reader *rd);

#endif
