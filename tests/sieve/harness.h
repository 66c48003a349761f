/*
 * harness.h: what the sieve tests share: the reference model (a list of
 * emitted URLs, a naive string set, the first-appearance order), scratch
 * folders, the runs every suite makes (a reference run, adds from threads,
 * a forced flush), damaged files, children reporting through a pipe, and
 * main.
 */
#ifndef TESTS_SIEVE_HARNESS_H
#define TESTS_SIEVE_HARNESS_H

#include <check.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "sieve/sieve.h"

/* ---- emitted URLs and a naive string set ---- */
struct slist {
	char **v;
	size_t n, cap;
	pthread_mutex_t mu;
};

void slist_init(struct slist *l);
void slist_push(struct slist *l, const char *s, size_t len);
void slist_free(struct slist *l);
/* How many URLs l holds now (the callback may be adding). */
size_t slist_count(struct slist *l);
/* An emit callback appending to the struct slist ctx. */
void emit_cb(void *ctx, const char *url, size_t len);

struct sset {
	char **t;
	size_t cap;
};

void sset_init(struct sset *s, size_t n);
/* 1 if k was not in the set (now it is); k is borrowed. */
int sset_add(struct sset *s, const char *k);
int sset_has(const struct sset *s, const char *k);
void sset_free(struct sset *s);

/* The first appearances of strs[0..n): order[0..*nref) and where each
 * first appears (first_pos, may be NULL); order's strings are strs'. */
void first_order(char *const *strs, size_t n, char **order, size_t *first_pos, size_t *nref);

/* ---- URLs, folders, configurations ---- */
/* URL number v of the tests' universe. */
void url_of(char *out, size_t len, unsigned v);
/* The strings url_of(seq[i]), to free with strs_free. */
char **strs_of(const unsigned *seq, size_t n);
void strs_free(char **strs, size_t n);
/* A new scratch folder's path (not created). */
void make_dir(char *out, size_t len, const char *tag);
void rm_tree(const char *dir);
/* A sieve of impl in dir: 1 MiB, bufn URLs a segment (offline: a run), no
 * fsync; bloom sized so that a false positive among these tests' few
 * thousand URLs is ~1e-6 likely. */
void cfg_for(struct sieve_config *c, const char *impl, const char *dir, size_t bufn);

/* ---- the inputs ---- */
/* For sizes 1, 2, 3 and 1000, n URLs of n / 2 + 1 at random (seeded):
 * calls each(seq, n). */
void for_sizes(unsigned seed, void (*each)(const unsigned *seq, size_t n));
/* n URLs out of range with repeats placed across segment boundaries: the
 * first of each bufn repeats the one before it, the second the second of
 * the segment before. */
unsigned *boundary_seq(size_t n, size_t bufn, unsigned range);

/* ---- the runs ---- */
/* A reference run: strs through a sieve, reopening every reopen_every
 * adds, forcing a flush every flush_every adds (never if 0), adding in
 * batches of batch (if > 1); the emitted list must be the first-appearance
 * order, and so must the durable log with emit_log. */
struct ref_run {
	const char *impl;
	size_t bufn, reopen_every, flush_every, batch;
	int emit_log;
	int fsync;       /* fsyncs on (the configuration's no_fsync off) */
	size_t seal_min; /* Mercator's seal_min_urls (0: the default) */
};

void run_reference(const struct ref_run *r, char *const *strs, size_t n);
/* The same for the URLs numbered by seq (url_of). */
void run_reference_seq(const struct ref_run *r, const unsigned *seq, size_t n);
/* Four threads add overlapping ranges of 2000 of 3000 URLs, by single adds
 * and batches (while a fifth forces flushes all the time, if flushing):
 * each of the 3000 is emitted once. */
void run_threads(const struct sieve_config *c, int flushing);
/* Adds 50 URLs, 20 distinct (none delivered before the flush, if
 * deferred): after a forced flush all 20 are delivered, a second flush
 * delivers nothing, and the counters say so. */
void run_add_flush(sieve_t *s, struct slist *got, int deferred);

/* ---- damaged files ---- */
void flip_byte(const char *path, long off);
void cut_file(const char *path, long keep_num, long den);
/* Opens the sieve c, adds one new URL and flushes: the first error, its
 * message in err (damage is found at open or at the flush). */
int open_add_flush(const struct sieve_config *c, char *err, size_t errlen);

/* ---- children reporting through a pipe ---- */
/* An emit callback writing "URL\n" to the fd *ctx. */
void pipe_emit(void *ctx, const char *url, size_t len);
/* In a child: adds strs[0..n), syncing every 7 adds and reporting "#k\n"
 * (k adds synced) to fd; _exits on an error. */
void child_adds(sieve_t *s, int fd, char *const *strs, size_t n);
/* Reads a child's report (emitted URLs, "#k" = k adds synced) until EOF. */
void read_child(int fd, struct slist *got, size_t *synced);
/* got must be a duplicate-free subsequence of order[0..nref) holding every
 * URL whose first appearance (first_pos) is before `synced` adds; with
 * may_lose, synced URLs may be missing. */
void check_emissions(const char *what, long point, const struct slist *got, char *const *order,
                     const size_t *first_pos, size_t nref, size_t synced, int may_lose);

/* ---- main ---- */
/* Runs suite s (only its test case argv[1] when given: one ctest test per
 * case), in scratch folders under /dev/shm (else TMPDIR, /tmp). */
int harness_main(Suite *s, int argc, char **argv);
/* Chooses the scratch folders' place (harness_main does it). */
void harness_scratch(void);
/* A test case of s named name, timeout in seconds. */
TCase *harness_case(Suite *s, const char *name, int timeout);

#endif
