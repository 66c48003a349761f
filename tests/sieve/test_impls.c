/*
 * test_impls.c: what one sieve other than Mercator promises beyond the
 * contract (test_contract.c): bloom's loss against the rate its analysis
 * predicts and its sizing; offline's behaviour when killed at each of its
 * crash points.
 *
 * `test_impls NAME` runs one test case: "bloom" or "offline_crash".
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* ---- bloom: loss against the analysis ---- */

/* Adds URLs [from, from + n) (all distinct) and returns how many were lost. */
static uint64_t bloom_feed(sieve_t *s, unsigned from, unsigned n)
{
	struct sieve_stats a, b;
	sieve_stats_get(s, &a);
	for (unsigned i = from; i < from + n; i++) {
		char u[96];
		int l = snprintf(u, sizeof u, "https://bloom%u.example.net/p/%u", i % 1009, i);
		ck_assert_int_eq(sieve_add(s, u, (size_t)l), SIEVE_OK);
	}
	sieve_stats_get(s, &b);
	return n - (b.emitted - a.emitted);
}

/* The expected losses over n more distinct URLs after k distinct URLs: the
 * next one is lost with probability phi(k) = (1 - e^{-dk/m})^d (the notes'
 * 2.2.1). A lost URL's bits were all set already, so the fill grows as if
 * every distinct URL had been inserted: k counts them all. */
static double bloom_expected_loss(double m, double d, double *k, unsigned n)
{
	double e = 0;
	for (unsigned i = 0; i < n; i++) {
		e += pow(1 - exp(-d * *k / m), d);
		*k += 1;
	}
	return e;
}

/* A bloom sieve in a new folder dir (tag), sized for n URLs at rate p. */
static sieve_t *bloom_for(struct sieve_config *c, char *dir, size_t dlen, const char *tag,
                          unsigned n, double p, int blocked)
{
	char err[256];
	sieve_t *s = NULL;

	make_dir(dir, dlen, tag);
	cfg_for(c, "bloom", dir, 0);
	c->expected_urls = n;
	c->fp_rate = p;
	c->bloom_blocked = blocked;
	ck_assert_msg(sieve_open(c, NULL, NULL, &s, err, sizeof err) == SIEVE_OK, "bloom: %s", err);
	return s;
}

START_TEST(test_bloom_loss_rate)
{
	const unsigned n = 200000, extra = 20000;
	const double p = 0.01;
	char dir[256], err[256];
	struct sieve_config c;
	struct sieve_stats st;
	sieve_t *s = bloom_for(&c, dir, sizeof dir, "bloomrate", n, p, 0);
	double k = 0, e1, e2, rate2, sd;
	uint64_t l1, l2;

	sieve_stats_get(s, &st);
	/* the notes' sizing: m = n ln(1/p) / ln^2 2, d = m ln2 / n */
	ck_assert_double_eq_tol((double)st.filter_bits, n * -log(p) / (M_LN2 * M_LN2), 512);
	ck_assert_uint_eq(st.filter_hashes, 7);
	/* phase 1: fill to the design load */
	l1 = bloom_feed(s, 0, n);
	e1 = bloom_expected_loss((double)st.filter_bits, (double)st.filter_hashes, &k, n);
	sd = sqrt(e1);
	ck_assert_msg(fabs((double)l1 - e1) <= 4 * sd + 2, "fill: lost %llu, expected %.1f +- %.1f",
	              (unsigned long long)l1, e1, 4 * sd);
	sieve_stats_get(s, &st);
	ck_assert_msg(fabs(st.filter_fp_estimate - p) < 0.15 * p,
	              "estimate at design load %g, target %g", st.filter_fp_estimate, p);
	/* phase 2: new URLs at the design load are lost at about the target */
	l2 = bloom_feed(s, n, extra);
	e2 = bloom_expected_loss((double)st.filter_bits, (double)st.filter_hashes, &k, extra);
	rate2 = (double)l2 / extra;
	sd = sqrt(e2);
	ck_assert_msg(fabs((double)l2 - e2) <= 4 * sd + 2,
	              "at load: lost %llu, expected %.1f +- %.1f", (unsigned long long)l2, e2,
	              4 * sd);
	ck_assert_msg(rate2 > 0.7 * p && rate2 < 1.6 * p, "loss rate at load %g, target %g", rate2,
	              p);
	fprintf(stderr,
	        "bloom: filling to n=%u lost %llu (expected %.1f); %u more lost %llu (expected "
	        "%.1f, rate %.4f)\n",
	        n, (unsigned long long)l1, e1, extra, (unsigned long long)l2, e2, rate2);
	/* nothing seen before is ever emitted again */
	ck_assert_uint_eq(bloom_feed(s, 0, 1000), 1000);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	/* reopen keeps the bits */
	ck_assert_int_eq(sieve_open(&c, NULL, NULL, &s, err, sizeof err), SIEVE_OK);
	ck_assert_uint_eq(bloom_feed(s, 1000, 5000), 5000);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	rm_tree(dir);
}
END_TEST

START_TEST(test_bloom_blocked_and_memory_sizing)
{
	const double p = 0.01;
	const unsigned n = 100000, extra = 20000;
	double rate;
	char dir[256], err[256];
	struct sieve_config c;
	struct sieve_stats st;
	sieve_t *s = bloom_for(&c, dir, sizeof dir, "bloomblk", n, p, 1);

	bloom_feed(s, 0, n);
	rate = (double)bloom_feed(s, n, extra) / extra;
	/* blocks of one cache line cost some accuracy (the notes, [Sin10]) */
	ck_assert_msg(rate > 0.5 * p && rate < 4 * p, "blocked loss rate %g, target %g", rate, p);
	ck_assert_uint_eq(bloom_feed(s, 0, 1000), 1000);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	rm_tree(dir);

	/* sized from memory: m = 8 memory bits, d = log2(1/p) */
	make_dir(dir, sizeof dir, "bloommem");
	memset(&c, 0, sizeof c);
	c.impl = "bloom";
	c.dir = dir;
	c.memory = 1 << 20;
	c.no_fsync = 1;
	ck_assert_int_eq(sieve_open(&c, NULL, NULL, &s, err, sizeof err), SIEVE_OK);
	sieve_stats_get(s, &st);
	ck_assert_uint_eq(st.filter_bits, (uint64_t)8 << 20);
	ck_assert_uint_eq(st.filter_hashes, 7);
	ck_assert_double_eq_tol(st.filter_fp_target, 0.01, 1e-12);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	rm_tree(dir);
	c.fp_rate = 0.9;
	ck_assert_int_eq(sieve_open(&c, NULL, NULL, &s, err, sizeof err), SIEVE_EINVAL);
	rm_tree(dir);
}
END_TEST

/* offline: SIGKILL at each internal crash point (SIEVE_CRASH_POINT: run
 * written, A drained, Z' written, committed, each emission, A emptied),
 * then a second kill during the reopen's merge, then a clean reopen. Never
 * twice, never out of order; a kill between a merge's commit and the end of
 * its emissions loses those deliveries but not the URLs: every synced URL
 * is known afterwards (adding them again emits nothing). */
static void crash_child(const char *dir, long point, int wfd, char *const *strs, size_t n)
{
	struct sieve_config c;
	sieve_t *s = NULL;
	char err[256], pt[32];

	snprintf(pt, sizeof pt, "%ld", point);
	setenv("SIEVE_CRASH_POINT", pt, 1);
	cfg_for(&c, "offline", dir, 5);
	c.no_fsync = 0;
	if (sieve_open(&c, pipe_emit, &wfd, &s, err, sizeof err) != SIEVE_OK)
		_exit(3);
	child_adds(s, wfd, strs, n);
	_exit(sieve_close(s) == SIEVE_OK ? 0 : 7);
}

#define CR_N 120

START_TEST(test_offline_crash_points)
{
	char **strs, *order[CR_N];
	unsigned seq[CR_N], rs = 99;
	size_t first_pos[CR_N], nref;
	int kills = 0, clean = 0;

	for (size_t i = 0; i < CR_N; i++) {
		rs = rs * 1103515245u + 12345u;
		seq[i] = (rs >> 8) % 70;
	}
	strs = strs_of(seq, CR_N);
	first_order(strs, CR_N, order, first_pos, &nref);
	for (long point = 1; point <= 400 && clean < 3; point++) {
		char dir[256], err[256];
		struct sieve_config c;
		struct slist got;
		sieve_t *s = NULL;
		size_t synced = 0, none = 0;
		int p[2], st;
		pid_t pid;

		make_dir(dir, sizeof dir, "ocrash");
		slist_init(&got);
		ck_assert_int_eq(pipe(p), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(p[0]);
			crash_child(dir, point, p[1], strs, CR_N);
		}
		close(p[1]);
		read_child(p[0], &got, &synced);
		close(p[0]);
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		if (WIFSIGNALED(st)) {
			ck_assert_int_eq(WTERMSIG(st), SIGKILL);
			kills++;
			/* a second kill, during the reopen's merge of the A left over */
			ck_assert_int_eq(pipe(p), 0);
			pid = fork();
			ck_assert_int_ge(pid, 0);
			if (pid == 0) {
				close(p[0]);
				crash_child(dir, 1 + point % 5, p[1], strs, 0);
			}
			close(p[1]);
			read_child(p[0], &got, &none);
			close(p[0]);
			ck_assert_int_eq(waitpid(pid, &st, 0), pid);
			ck_assert(WIFSIGNALED(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 0));
		} else {
			ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: %d",
			              st);
			synced = CR_N;
			clean++;
		}
		cfg_for(&c, "offline", dir, 5);
		ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK,
		              "reopen after kill %ld: %s", point, err);
		ck_assert_int_eq(sieve_close(s), SIEVE_OK);
		check_emissions("offline kill", point, &got, order, first_pos, nref, synced,
		                synced < CR_N);
		if (synced == CR_N) {
			ck_assert_uint_eq(got.n, nref);
		} else {
			size_t before = got.n;
			ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err),
			                 SIEVE_OK);
			for (size_t i = 0; i < synced; i++)
				ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
			ck_assert_int_eq(sieve_close(s), SIEVE_OK);
			ck_assert_msg(got.n == before, "kill %ld: %zu synced URLs were not known",
			              point, got.n - before);
		}
		slist_free(&got);
		rm_tree(dir);
	}
	ck_assert_int_ge(kills, 50);
	ck_assert_int_eq(clean, 3);
	strs_free(strs, CR_N);
}
END_TEST

static Suite *impls_suite(void)
{
	Suite *s = suite_create("impls");
	TCase *bloom = harness_case(s, "bloom", 200),
	      *offline = harness_case(s, "offline_crash", 200);

	tcase_add_test(offline, test_offline_crash_points);
	tcase_add_test(bloom, test_bloom_loss_rate);
	tcase_add_test(bloom, test_bloom_blocked_and_memory_sizing);
	return s;
}

int main(int argc, char **argv)
{
	return harness_main(impls_suite(), argc, argv);
}
