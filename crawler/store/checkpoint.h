/*
 * checkpoint.h: the checkpoint folders of a crawl's output folder, and the
 * repairs a resumed crawl makes to the files a crash may have cut.
 *
 * Layout, in OUT/checkpoint/:
 *   ckpt-NNNNNNNN/   one complete checkpoint (N counts up): sieve/ (the
 *                    sieve's state, sieve_checkpoint), frontier/ (the
 *                    frontier's, frontier_checkpoint), robots (every
 *                    host's robots.txt rules, politeness_robots_checkpoint),
 *                    state (the crawl's: counters, host states, URLs in
 *                    flight, output positions)
 *   CURRENT          "ckpt-NNNNNNNN\n": the newest complete checkpoint
 *
 * Invariant: CURRENT names a complete, fsynced checkpoint, or is absent
 * (before the first). A checkpoint is written into ckpt-N.tmp; commit
 * fsyncs every file and folder in it, renames it to ckpt-N, fsyncs the
 * folder, then replaces CURRENT atomically (CURRENT.tmp, fsync, rename,
 * fsync); only then are older checkpoints and leftovers removed. A crash at
 * any moment leaves the previous CURRENT and its folder intact.
 *
 * Workload: one checkpoint every checkpoint_interval (60 s), written by the
 * crawl: prepare and the crawl's own files on the fetch loop, the sieve's
 * copy and commit (all the fsyncs) on a worker thread.
 */
#ifndef CRAWLER_STORE_CHECKPOINT_H
#define CRAWLER_STORE_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

/* Creates an empty OUT/checkpoint/ckpt-SEQ.tmp (removing a leftover of that
 * name) and writes its path into path. 0, or -1 with a message in err. */
int checkpoint_prepare(const char *out, uint64_t seq, char *path, size_t cap, char *err,
                       size_t errlen);

/* Makes ckpt-SEQ.tmp the current checkpoint (see the invariant), then
 * removes every other checkpoint folder. 0, or -1 with a message in err
 * (the previous checkpoint is then still current). */
int checkpoint_commit(const char *out, uint64_t seq, char *err, size_t errlen);

/* Removes ckpt-SEQ.tmp (a checkpoint given up). */
void checkpoint_discard(const char *out, uint64_t seq);

/* The current checkpoint: 0 with its folder in path and its number in *seq;
 * 1 when there is none; -1 on error (message in err: unreadable or
 * malformed CURRENT, or a CURRENT naming a missing folder). */
int checkpoint_find(const char *out, char *path, size_t cap, uint64_t *seq, char *err,
                    size_t errlen);

/* Cuts a text log (crawl.log) after its last newline: a line torn by a
 * crash is dropped. *cut gets the bytes removed. 0, or -1 with errno set;
 * a missing file is fine (0). */
int checkpoint_repair_log(const char *path, uint64_t *cut);

#endif
