/*
 * linesort.h: lines sorted byte by byte (as `LC_ALL=C sort` orders them)
 * in bounded memory, for the merged index and the page list.
 *
 * Lines are gathered in one buffer of at most `memory` bytes (their text
 * and a 16-byte entry each); a full buffer is sorted and written to a run
 * file in the temporary folder. At the end the runs are merged, at most
 * LINESORT_FANIN at a time (more runs: merged in passes into longer
 * runs), and each line is handed to a callback in order; with no run
 * written the buffer is sorted and handed over directly.
 *
 * Memory: up to twice `memory` bytes (the buffers grow by doubling), plus
 * a line buffer per run being merged. Disk:
 * the lines once per pass. Lines must not hold '\n'; equal lines are all
 * kept. One thread.
 */
#ifndef CRAWLER_ARCHIVE_LINESORT_H
#define CRAWLER_ARCHIVE_LINESORT_H

#include <stddef.h>

#define LINESORT_FANIN 64

struct linesort;

/* A sorter whose runs go to tmpdir (created if missing, and removed with
 * what it holds by linesort_destroy). NULL when out of memory. memory: 0
 * -> 64 MiB, at least 4 KiB. */
struct linesort *linesort_create(const char *tmpdir, size_t memory);

/* Adds a line (len bytes, no '\n'; copied). 0, or -1 (memory, or a run
 * that could not be written: errno). */
int linesort_add(struct linesort *ls, const char *line, size_t len);

/* Hands every line added, in order, to emit (which returns 0 to go on).
 * 0, -1 (errno), or what emit returned when not 0. Once only. */
int linesort_finish(struct linesort *ls, int (*emit)(void *ctx, const char *line, size_t len),
                    void *ctx);

/* Removes the runs and frees. NULL is a no-op. */
void linesort_destroy(struct linesort *ls);

#endif
