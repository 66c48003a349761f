/*
 * test_contract.c: the contract of sieve.h, for every sieve (mercator,
 * memory, bloom, lsm, offline; a test case each, named by the sieve),
 * against a naive reference model (a string set and the first-appearance
 * list): sizes 1, 2, 3, 1000 with repeats, repeats across segment, run and
 * merge boundaries, forced flushes, counters, the folder lock, threads, a
 * process dying without close, checkpoint and restore, damaged state
 * files.
 *
 * `test_contract NAME` runs the test case of one sieve.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static const char *const impls[] = { "mercator", "memory", "bloom", "lsm", "offline" };
#define NIMPLS (sizeof impls / sizeof impls[0])

/* The sieve of the running test (the loop index of its case). */
static const char *cur_impl;

static void sizes_run(const unsigned *seq, size_t n)
{
	run_reference_seq(&(struct ref_run){ .impl = cur_impl, .bufn = 7 }, seq, n);
	run_reference_seq(&(struct ref_run){ .impl = cur_impl, .bufn = 64, .batch = 13 }, seq, n);
	run_reference_seq(&(struct ref_run){ .impl = cur_impl, .bufn = 7, .reopen_every = 5 }, seq,
	                  n);
	run_reference_seq(
	        &(struct ref_run){ .impl = cur_impl, .bufn = 5, .flush_every = 11, .batch = 3 },
	        seq, n);
	run_reference_seq(&(struct ref_run){ .impl = cur_impl, .bufn = 100000 }, seq, n);
}

START_TEST(test_reference_sizes)
{
	cur_impl = impls[_i];
	for_sizes(4242, sizes_run);
}
END_TEST

/* Repeats at segment and run boundaries (every bufn adds) and merge
 * boundaries (every 8 bufn, offline), with and without reopen and batches
 * across them. */
START_TEST(test_boundary_repeats)
{
	const char *impl = impls[_i];
	const size_t bufn = 10, n = 500;
	unsigned *seq = boundary_seq(n, bufn, 180);

	run_reference_seq(&(struct ref_run){ .impl = impl, .bufn = bufn }, seq, n);
	run_reference_seq(&(struct ref_run){ .impl = impl, .bufn = bufn, .batch = 7 }, seq, n);
	run_reference_seq(&(struct ref_run){ .impl = impl, .bufn = bufn, .reopen_every = bufn },
	                  seq, n);
	run_reference_seq(
	        &(struct ref_run){
	                .impl = impl, .bufn = bufn, .reopen_every = 8 * bufn, .batch = 3 },
	        seq, n);
	run_reference_seq(
	        &(struct ref_run){
	                .impl = impl, .bufn = bufn, .reopen_every = 33, .flush_every = 17 },
	        seq, n);
	free(seq);
}
END_TEST

START_TEST(test_flush_stats_lock)
{
	const char *impl = impls[_i];
	char dir[256], err[256];
	struct sieve_config c;
	struct slist got;
	sieve_t *s = NULL, *s2 = NULL;
	char big[70000];

	make_dir(dir, sizeof dir, impl);
	cfg_for(&c, impl, dir, 1000);
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	run_add_flush(s, &got, 0);
	memset(big, 'a', sizeof big);
	ck_assert_int_eq(sieve_add(s, big, sizeof big), SIEVE_ETOOLONG);
	ck_assert_int_eq(sieve_sync(s), SIEVE_OK);
	/* the folder is locked while open */
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s2, err, sizeof err), SIEVE_ELOCKED);
	ck_assert_ptr_null(s2);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 20);
	slist_free(&got);
	rm_tree(dir);
}
END_TEST

START_TEST(test_threads)
{
	const char *impl = impls[_i];
	char dir[256];
	struct sieve_config c;

	make_dir(dir, sizeof dir, impl);
	cfg_for(&c, impl, dir, 50);
	run_threads(&c, 0);
	rm_tree(dir);
}
END_TEST

/* ---- a process that dies without close ---- */

#define DIE_N 300

/* The child adds strs[0..stop) (syncing every 7 adds), reporting its
 * emissions and the synced count through fd, then _exits without close. */
static void die_child(const struct sieve_config *c, int fd, char *const *strs, size_t stop)
{
	sieve_t *s = NULL;
	char err[256];

	if (sieve_open(c, pipe_emit, &fd, &s, err, sizeof err) != SIEVE_OK)
		_exit(3);
	child_adds(s, fd, strs, stop);
	_exit(0); /* no close */
}

/* The parent reopens and closes. Emissions before and after must together
 * be a duplicate-free subsequence of the first-appearance order that
 * covers every URL first seen before the last sync. Mercator's flush
 * thread may die between a flush's commit and the end of its emissions,
 * losing those deliveries, not the URLs: its durable log must cover them. */
START_TEST(test_die_without_close)
{
	const char *impl = impls[_i];
	const int merc = strcmp(impl, "mercator") == 0;
	unsigned seq[DIE_N], rs = 7;
	char *order[DIE_N], **strs;
	size_t first_pos[DIE_N], nref;

	for (size_t i = 0; i < DIE_N; i++) {
		rs = rs * 1103515245u + 12345u;
		seq[i] = (rs >> 8) % 150;
	}
	strs = strs_of(seq, DIE_N);
	first_order(strs, DIE_N, order, first_pos, &nref);
	for (size_t stop = 1; stop <= DIE_N; stop += 37) {
		char dir[256], err[256];
		struct sieve_config c;
		struct slist got;
		sieve_t *s = NULL;
		int p[2], st;
		size_t synced = 0;
		pid_t pid;

		make_dir(dir, sizeof dir, impl);
		cfg_for(&c, impl, dir, 16);
		c.no_fsync = 0;
		c.emit_log = merc;
		ck_assert_int_eq(pipe(p), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(p[0]);
			die_child(&c, p[1], strs, stop);
		}
		close(p[1]);
		slist_init(&got);
		read_child(p[0], &got, &synced);
		close(p[0]);
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child failed: %d", impl,
		              st);
		ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK,
		              "%s: reopen: %s", impl, err);
		ck_assert_int_eq(sieve_close(s), SIEVE_OK);
		check_emissions(impl, (long)stop, &got, order, first_pos, nref, synced, merc);
		if (merc) {
			struct slist log;
			slist_init(&log);
			ck_assert_int_eq(sieve_log_read(dir, emit_cb, &log, err, sizeof err),
			                 SIEVE_OK);
			check_emissions("mercator log", (long)stop, &log, order, first_pos, nref,
			                synced, 0);
			slist_free(&log);
		}
		slist_free(&got);
		rm_tree(dir);
	}
	strs_free(strs, DIE_N);
}
END_TEST

/* sieve_checkpoint / sieve_restore: the checkpoint holds exactly what was
 * added before it (all of it delivered by then); the live sieve going on
 * after it (more flushes, Z replaced) does not change it; a sieve restored
 * from it (twice) emits, of the URLs added after, exactly the ones the
 * checkpoint had not seen, in order. */
static void restore_and_check(const char *impl, const char *ck, char *const *strs, size_t from,
                              size_t n, char *const *want, size_t nwant)
{
	char dir[256], err[256];
	struct sieve_config c;
	struct slist got;
	sieve_t *s = NULL;

	make_dir(dir, sizeof dir, impl);
	ck_assert_msg(sieve_restore(ck, dir, err, sizeof err) == SIEVE_OK, "%s: restore: %s", impl,
	              err);
	cfg_for(&c, impl, dir, 7);
	slist_init(&got);
	ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK,
	              "%s: reopen: %s", impl, err);
	ck_assert_uint_eq(got.n, 0); /* nothing pending in the checkpoint */
	for (size_t i = from; i < n; i++)
		ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_msg(got.n == nwant, "%s: %zu emitted after restore, want %zu", impl, got.n,
	              nwant);
	for (size_t i = 0; i < nwant; i++)
		ck_assert_str_eq(got.v[i], want[i]);
	slist_free(&got);
	rm_tree(dir);
}

START_TEST(test_checkpoint_restore)
{
	const char *impl = impls[_i];
	char dir[256], ck[256], err[256];
	const size_t n = 3000, half = 1500;
	struct sieve_config c;
	struct slist got;
	struct sset seen1, seen2;
	sieve_t *s = NULL;
	unsigned *seq = malloc(n * sizeof *seq);
	char **strs, **want1 = calloc(n, sizeof *want1), **want2 = calloc(n, sizeof *want2);
	size_t n1 = 0, n2 = 0;

	ck_assert_ptr_nonnull(seq);
	for (size_t i = 0; i < n; i++)
		seq[i] = (unsigned)(i * 2654435761u % 2000);
	strs = strs_of(seq, n);
	make_dir(dir, sizeof dir, impl);
	make_dir(ck, sizeof ck, "ckpt");
	sset_init(&seen1, n);
	sset_init(&seen2, n);
	for (size_t i = 0; i < half; i++)
		if (sset_add(&seen1, strs[i]))
			want1[n1++] = strs[i];
	/* after the checkpoint: new = not seen in the first half, first time */
	for (size_t i = half; i < n; i++)
		if (!sset_has(&seen1, strs[i]) && sset_add(&seen2, strs[i]))
			want2[n2++] = strs[i];
	ck_assert_uint_gt(n2, 100); /* the test means something */
	cfg_for(&c, impl, dir, 7);
	slist_init(&got);
	ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "%s: %s",
	              impl, err);
	for (size_t i = 0; i < half; i++)
		ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
	ck_assert_msg(sieve_checkpoint(s, ck) == SIEVE_OK, "%s: checkpoint: %s", impl,
	              sieve_last_error(s));
	/* everything added before the checkpoint was delivered by then */
	ck_assert_uint_eq(got.n, n1);
	for (size_t i = 0; i < n1; i++)
		ck_assert_str_eq(got.v[i], want1[i]);
	/* the live sieve goes on: many more flushes after the checkpoint */
	for (size_t i = half; i < n; i++)
		ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, n1 + n2);
	slist_free(&got);
	for (int rep = 0; rep < 2; rep++)
		restore_and_check(impl, ck, strs, half, n, want2, n2);
	strs_free(strs, n);
	free(seq);
	free(want1);
	free(want2);
	sset_free(&seen1);
	sset_free(&seen2);
	rm_tree(dir);
	rm_tree(ck);
}
END_TEST

/* ---- damaged state files ---- */

/* Mercator's MANIFEST and a part of Z, memory's MEMSET, bloom's BLOOM,
 * offline's Z and STATE: a flipped byte is reported as SIEVE_ECORRUPT
 * naming the file (at open or at the next flush). */
START_TEST(test_corruption)
{
	static const struct {
		const char *impl, *file;
		long off;
	} cases[] = {
		{ "mercator", "MANIFEST", 20 }, { "mercator", "Z.1.0", -4 },
		{ "memory", "MEMSET", -5 },     { "memory", "MEMSET", 12 },
		{ "bloom", "BLOOM", -3 },       { "bloom", "BLOOM", 10 },
		{ "offline", "Z.1", -4 },       { "offline", "STATE", 9 },
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char dir[256], f[512], u[128], err[600];
		struct sieve_config c;
		sieve_t *s = NULL;
		int rc;

		if (strcmp(cases[k].impl, impls[_i]) != 0)
			continue;
		make_dir(dir, sizeof dir, "corrupt");
		cfg_for(&c, cases[k].impl, dir, 1000);
		ck_assert_int_eq(sieve_open(&c, NULL, NULL, &s, err, sizeof err), SIEVE_OK);
		for (unsigned i = 0; i < 300; i++) {
			url_of(u, sizeof u, i);
			ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
		}
		ck_assert_int_eq(sieve_close(s), SIEVE_OK);
		snprintf(f, sizeof f, "%s/%s", dir, cases[k].file);
		flip_byte(f, cases[k].off);
		rc = open_add_flush(&c, err, sizeof err);
		ck_assert_msg(rc == SIEVE_ECORRUPT, "%s %s: want ECORRUPT, got %d (%s)",
		              cases[k].impl, cases[k].file, rc, err);
		ck_assert_msg(strstr(err, cases[k].file) != NULL, "error '%s' does not name %s",
		              err, cases[k].file);
		rm_tree(dir);
	}
}
END_TEST

static Suite *contract_suite(void)
{
	Suite *s = suite_create("contract");

	for (int i = 0; i < (int)NIMPLS; i++) {
		TCase *tc = harness_case(s, impls[i], 300);
		tcase_add_loop_test(tc, test_reference_sizes, i, i + 1);
		tcase_add_loop_test(tc, test_boundary_repeats, i, i + 1);
		tcase_add_loop_test(tc, test_flush_stats_lock, i, i + 1);
		tcase_add_loop_test(tc, test_threads, i, i + 1);
		tcase_add_loop_test(tc, test_die_without_close, i, i + 1);
		tcase_add_loop_test(tc, test_checkpoint_restore, i, i + 1);
		tcase_add_loop_test(tc, test_corruption, i, i + 1);
	}
	return s;
}

int main(int argc, char **argv)
{
	return harness_main(contract_suite(), argc, argv);
}
