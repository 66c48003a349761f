/*
 * test_mercator.c: what the Mercator sieve promises beyond the contract
 * (test_contract.c), against the reference model: its durable output log
 * (EMITTED) equal to the emissions; crowded buckets of the flush's layout;
 * a Z of many blocks; forced flushes while threads add; early seals;
 * slices; Z's runs and the manifest of a Z in one run; SIGKILL at each of its crash points (SIEVE_CRASH_POINT), also
 * during the replay; damaged Z, A, MANIFEST and EMITTED files.
 *
 * `test_mercator NAME` runs one test case: "core", "crowd", "large_z",
 * "crash" or "corruption".
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "harness.h"
#include "sieve/mercator.h"

static int count_files(const char *dir, const char *prefix, char *out, size_t len);

/* Mercator in dir, bufn URLs a segment, fsyncs on, with the durable log. */
static void cfg_small(struct sieve_config *c, const char *dir, size_t bufn)
{
	cfg_for(c, "mercator", dir, bufn);
	c->no_fsync = 0;
	c->emit_log = 1;
}

/* A reference run with the durable log (reopening every reopen_every adds,
 * never if 0), early seals from seal_min records (0: the default, larger
 * than these buffers: none). */
static void run_logged(const unsigned *seq, size_t n, size_t bufn, size_t reopen_every,
                       size_t seal_min)
{
	struct ref_run r = { .impl = "mercator",
		             .bufn = bufn,
		             .reopen_every = reopen_every,
		             .emit_log = 1,
		             .fsync = 1,
		             .seal_min = seal_min };

	run_reference_seq(&r, seq, n);
}

static void sizes_run(const unsigned *seq, size_t n)
{
	run_logged(seq, n, 7, 0, 0);
	run_logged(seq, n, 64, 0, 0);
	run_logged(seq, n, 7, 5, 0);
	run_logged(seq, n, 100000, 0, 0);
}

START_TEST(test_reference_sizes)
{
	for_sizes(12345, sizes_run);
}
END_TEST

/* A Z (~44000 signatures) of many blocks and larger than an I/O buffer,
 * whose low-bit count L changes between flushes, with repeats inside a
 * segment and against Z, across a reopen. */
START_TEST(test_large_z)
{
	const size_t n = 80000;
	unsigned *seq = malloc(n * sizeof *seq);
	srand(777);
	for (size_t i = 0; i < n; i++)
		seq[i] = (unsigned)rand() % 60000u;
	run_logged(seq, n, 8000, 0, 0);
	run_logged(seq, n, 7999, 50000, 0);
	/* early seals: segments of 500 records and more, whenever the flush
	 * thread is idle */
	run_logged(seq, n, 8000, 0, 500);
	run_logged(seq, n, 8000, 30000, 500);
	free(seq);
}
END_TEST

/* A URL "https://crowd.example/<tag>/<k>" for the smallest k >= *from
 * whose signature's top 16 bits are top16 and whose low 16 bits are low16
 * (when low16 >= 0); *from is set past it. */
static char *crowd_url(const char *tag, unsigned top16, long low16, unsigned long *from)
{
	char u[128];
	for (unsigned long k = *from;; k++) {
		int len = snprintf(u, sizeof u, "https://crowd.example/%s/%lu", tag, k);
		uint64_t h = XXH3_64bits(u, (size_t)len);
		if ((top16 > 0xffff || h >> 48 == top16) &&
		    (low16 < 0 || (long)(h & 0xffff) == low16)) {
			*from = k + 1;
			return strdup(u);
		}
	}
}

/* A bucket of the flush's layout crowded past its rank limit (the sieve
 * packs a record's rank in its bucket below the signature, saturating at
 * 2^bits - 1, bits >= 8; see sieve/flush_sort.h): 600 URLs sharing the top
 * 16 bits of their signatures, so one bucket whatever the bucket bits (up
 * to 16), in a buffer of 4000. The first 40 and the last 40 are added
 * again and again, each time after a partner URL with the same low 16 bits
 * (the cache's index bits) so the recent-signature cache cannot drop the
 * repeats: repeats past the limit of a first record before it, and of a
 * first record past it too, some a hundred times in a buffer. Other URLs
 * around them; across flushes and a reopen, with and without the durable
 * log. */
START_TEST(test_crowded_bucket)
{
	enum { CROWD = 600, HOT = 40, ROUNDS = 8 };
	char *crowd[CROWD], *partner[2 * HOT], *seq[CROWD + 4 * HOT * (ROUNDS + 1) + 800 + 1000];
	char u[128];
	size_t n = 0, other = 0;
	unsigned long from = 0, pfrom = 0;
	unsigned top16;

	top16 = (unsigned)(XXH3_64bits("https://crowd.example/seed", 26) >> 48);
	for (size_t i = 0; i < CROWD; i++)
		crowd[i] = crowd_url("c", top16, -1, &from);
		/* hot j: crowd[j] for j < HOT, else crowd[CROWD - 2 HOT + j] */
#define HOT_URL(j) crowd[(j) < HOT ? (j) : CROWD - 2 * HOT + (j)]
	for (size_t j = 0; j < 2 * HOT; j++) {
		uint64_t h = XXH3_64bits(HOT_URL(j), strlen(HOT_URL(j)));
		pfrom = 0;
		partner[j] = crowd_url("p", 0x10000, (long)(h & 0xffff), &pfrom);
	}
	/* the crowd, each hot one twice (the early ones' first records are
	 * under the limit), among ordinary URLs */
	for (size_t i = 0; i < CROWD; i++) {
		seq[n++] = crowd[i];
		if (i < HOT || i >= CROWD - HOT) {
			size_t j = i < HOT ? i : i - (CROWD - 2 * HOT);
			seq[n++] = partner[j];
			seq[n++] = crowd[i];
		}
		if (i % 3 == 0) {
			snprintf(u, sizeof u, "https://other.example/%zu", other++);
			seq[n++] = strdup(u);
		}
	}
	/* then, past the limit, all hot ones again and again, and four of
	 * them (two of each kind) a hundred times more */
	for (int r = 0; r < ROUNDS; r++)
		for (size_t j = 0; j < 2 * HOT; j++) {
			seq[n++] = partner[j];
			seq[n++] = HOT_URL(j);
		}
	for (int r = 0; r < 100; r++)
		for (size_t j = HOT - 2; j < HOT + 2; j++) {
			seq[n++] = partner[j];
			seq[n++] = HOT_URL(j);
		}
#undef HOT_URL
	ck_assert_uint_le(n, sizeof seq / sizeof seq[0]);
	run_reference(
	        &(struct ref_run){ .impl = "mercator", .bufn = 4000, .emit_log = 1, .fsync = 1 },
	        seq, n);
	run_reference(&(struct ref_run){ .impl = "mercator", .bufn = 4000, .fsync = 1 }, seq, n);
	/* reopen, flush mid-crowd */
	run_reference(&(struct ref_run){ .impl = "mercator",
	                                 .bufn = 4000,
	                                 .reopen_every = 700,
	                                 .emit_log = 1,
	                                 .fsync = 1 },
	              seq, n);
	run_reference(&(struct ref_run){ .impl = "mercator", .bufn = 700, .fsync = 1 }, seq, n);
	for (size_t i = 0; i < n; i++)
		if (strncmp(seq[i], "https://other.", 14) == 0)
			free(seq[i]);
	for (size_t i = 0; i < CROWD; i++)
		free(crowd[i]);
	for (size_t j = 0; j < 2 * HOT; j++)
		free(partner[j]);
}
END_TEST

/* Repeats placed exactly across flush boundaries: with n slots the copy at
 * position n (first of the next segment) repeats the one at n-1, and so on. */
START_TEST(test_boundary_repeats)
{
	const size_t bufn = 10, n = 400;
	unsigned *seq = boundary_seq(n, bufn, 150);

	run_logged(seq, n, bufn, 0, 0);
	run_logged(seq, n, bufn, bufn, 0);
	run_logged(seq, n, bufn, 33, 0);
	free(seq);
}
END_TEST

START_TEST(test_forced_flush_and_stats)
{
	char dir[256], err[256];
	struct sieve_config c;
	struct slist got;
	struct sieve_stats st;
	sieve_t *s = NULL, *s2 = NULL;
	char big[70000];

	make_dir(dir, sizeof dir, "flush");
	cfg_small(&c, dir, 1000);
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	run_add_flush(s, &got, 1); /* nothing delivered before the flush */
	sieve_stats_get(s, &st);
	ck_assert_uint_eq(st.z_count, 20);
	ck_assert_int_eq(sieve_add(s, "x", 1), SIEVE_OK);
	ck_assert_int_eq(sieve_sync(s), SIEVE_OK);
	memset(big, 'a', sizeof big);
	ck_assert_int_eq(sieve_add(s, big, sizeof big), SIEVE_ETOOLONG);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 21);
	/* a clean close leaves no URL segment and no signature list */
	ck_assert_int_eq(count_files(dir, "A.", NULL, 0), 0);
	ck_assert_int_eq(count_files(dir, "S.", NULL, 0), 0);
	/* the folder is locked while open */
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s2, err, sizeof err), SIEVE_ELOCKED);
	ck_assert_ptr_null(s2);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_int_eq(sieve_close(NULL), SIEVE_OK);
	c.impl = "no-such-sieve";
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_ENOTSUP);
	slist_free(&got);
	rm_tree(dir);
}
END_TEST

/* Z's runs: flushes of equal size (100 new URLs each) follow the binary
 * counter, so after k flushes the runs are popcount(k), never more than
 * Z_RUNS_MAX; a reopen finds every URL of every run, and only the new
 * ones come out. */
START_TEST(test_runs)
{
	char dir[256], u[128], err[256];
	struct sieve_config c;
	struct slist got;
	sieve_t *s = NULL;
	unsigned next = 0;

	make_dir(dir, sizeof dir, "runs");
	cfg_small(&c, dir, 100000);
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	for (unsigned k = 1; k <= 40; k++) {
		for (unsigned i = 0; i < 100; i++) {
			url_of(u, sizeof u, next++);
			ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
		}
		ck_assert_int_eq(sieve_flush(s), SIEVE_OK);
		ck_assert_int_eq(count_files(dir, "Z.", NULL, 0),
		                 2 * __builtin_popcount(k)); /* two parts a run */
	}
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 4000);
	slist_free(&got);
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	for (unsigned i = 0; i < 4050; i++) {
		url_of(u, sizeof u, i);
		ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
	}
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 50);
	for (unsigned i = 0; i < 50; i++) {
		url_of(u, sizeof u, 4000 + i);
		ck_assert_str_eq(got.v[i], u);
	}
	slist_free(&got);
	rm_tree(dir);
}
END_TEST

/* The rule that picks the runs a flush merges into its new one: the
 * newest while at most as large as what the new one holds so far, or
 * while there would be more than Z_RUNS_MAX. */
START_TEST(test_runs_to_merge)
{
	const uint64_t a[] = { 800, 400, 200, 100 };
	const uint64_t many[Z_RUNS_MAX] = { 9000, 8000, 7000, 6000, 5000, 4000, 3000, 2000 };

	ck_assert_uint_eq(merc_runs_to_merge(a, 0, 10), 0);
	ck_assert_uint_eq(merc_runs_to_merge(a, 4, 99), 0);
	ck_assert_uint_eq(merc_runs_to_merge(a, 4, 100), 4); /* 100, 200, 400, 800 in turn */
	ck_assert_uint_eq(merc_runs_to_merge(a, 4, 150), 4);
	ck_assert_uint_eq(merc_runs_to_merge(a, 3, 150), 0); /* 200 > 150: kept */
	ck_assert_uint_eq(merc_runs_to_merge(a, 3, 200), 3);
	ck_assert_uint_eq(merc_runs_to_merge(many, Z_RUNS_MAX, 1), 1); /* the cap */
	ck_assert_uint_eq(merc_runs_to_merge(many, Z_RUNS_MAX - 1, 1), 0);
}
END_TEST

/* A folder whose MANIFEST names its Z in one run (the 72-byte "MSIEVEM3"
 * format, before runs) opens and goes on from that state. */
START_TEST(test_one_run_manifest)
{
	char dir[256], p[512], u[128], err[256];
	uint8_t mb[M_SIZE + 8];
	struct sieve_config c;
	struct slist got;
	sieve_t *s = NULL;
	uint64_t v;
	int fd;

	make_dir(dir, sizeof dir, "m3");
	cfg_small(&c, dir, 100000);
	c.emit_log = 0;
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	for (unsigned i = 0; i < 300; i++) {
		url_of(u, sizeof u, i);
		ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
	}
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 300);
	/* one flush: one run, of generation 1 = gen; rewrite the manifest */
	snprintf(p, sizeof p, "%s/MANIFEST", dir);
	fd = open(p, O_RDONLY);
	ck_assert_int_eq(read(fd, mb, sizeof mb), M_SIZE);
	close(fd);
	ck_assert_uint_eq(mb[64], 1);     /* nruns */
	ck_assert_uint_eq(mb[72], mb[8]); /* runs[0] = gen */
	memcpy(mb, M_MAGIC_ONE_RUN, 8);
	v = XXH64(mb, 64, 0);
	memcpy(mb + 64, &v, 8);
	fd = open(p, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, mb, M_SIZE_ONE_RUN), M_SIZE_ONE_RUN);
	close(fd);
	slist_free(&got);
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	for (unsigned i = 0; i < 320; i++) {
		url_of(u, sizeof u, i);
		ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
	}
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 20);
	for (unsigned i = 0; i < 20; i++) {
		url_of(u, sizeof u, 300 + i);
		ck_assert_str_eq(got.v[i], u);
	}
	slist_free(&got);
	rm_tree(dir);
}
END_TEST

/* Threads adding to segments of bufn URLs (while another forces flushes,
 * if flushing). */
static void threads_round(const char *tag, size_t bufn, int flushing)
{
	char dir[256];
	struct sieve_config c;

	make_dir(dir, sizeof dir, tag);
	cfg_small(&c, dir, bufn);
	run_threads(&c, flushing);
	rm_tree(dir);
}

START_TEST(test_threads)
{
	threads_round("thr", 50, 0);
}
END_TEST

/* Adds from four threads while a fifth forces flushes all the time: a
 * forced flush seals a segment that is not full, sometimes while the other
 * segment is still being flushed; no add may slip into it meanwhile. Every
 * URL exactly once. */
START_TEST(test_threads_with_forced_flushes)
{
	for (int round = 0; round < 10; round++)
		threads_round("thrflush", 200, 1);
}
END_TEST

/* Slices (see sieve/mercator.h): a segment holds up to 8 slices of the
 * signatures' top 3 bits, each flushed in a part's half of the array, so
 * a segment is sealed when any slice is full. Here every URL falls in
 * slice 5: with the budget's own sizes (no buffer_urls), the slice fills
 * at an eighth of a segment, again and again; every URL still comes out
 * once, in order (a slice past its share of the array would fail the
 * flush). */
START_TEST(test_slice_full)
{
	enum { N = 120000 };
	char dir[256], err[256], u[128];
	struct sieve_config c;
	struct slist got;
	struct sieve_stats st;
	sieve_t *s = NULL;
	char **urls = calloc(N, sizeof *urls);
	unsigned long k = 0;

	ck_assert_ptr_nonnull(urls);
	for (size_t i = 0; i < N; i++) {
		for (;; k++) {
			int len = snprintf(u, sizeof u, "https://slice.example/%lu", k);
			if (XXH3_64bits(u, (size_t)len) >> 61 == 5)
				break;
		}
		k++;
		urls[i] = strdup(u);
		ck_assert_ptr_nonnull(urls[i]);
	}
	make_dir(dir, sizeof dir, "slice");
	cfg_small(&c, dir, 0);
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	sieve_stats_get(s, &st);
	ck_assert_uint_lt(st.buffer_urls / 8 * 4, N); /* N fills slice 5 four times and more */
	for (size_t i = 0; i < N; i++) {
		ck_assert_int_eq(sieve_add(s, urls[i], strlen(urls[i])), SIEVE_OK);
		if (i % 3 == 2) /* a repeat of an older one, past the cache */
			ck_assert_int_eq(sieve_add(s, urls[i / 2], strlen(urls[i / 2])), SIEVE_OK);
	}
	ck_assert_int_eq(sieve_flush(s), SIEVE_OK);
	sieve_stats_get(s, &st);
	ck_assert_uint_ge(st.flushes, 4);
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, N);
	for (size_t i = 0; i < N; i++)
		ck_assert_str_eq(got.v[i], urls[i]);
	for (size_t i = 0; i < N; i++)
		free(urls[i]);
	free(urls);
	slist_free(&got);
	rm_tree(dir);
}
END_TEST

/* Waits (up to 20 s) until the callback has delivered at least want URLs;
 * how many it has. */
static size_t wait_emitted(struct slist *l, size_t want)
{
	size_t n = 0;
	for (int i = 0; i < 20000 && (n = slist_count(l)) < want; i++)
		usleep(1000);
	return n;
}

/* Adds k URLs never added before (url_of(*next), ...). */
static void add_new(sieve_t *s, unsigned *next, unsigned k)
{
	char u[128];

	for (unsigned i = 0; i < k; i++) {
		url_of(u, sizeof u, (*next)++);
		ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
	}
}

/* Adds k new URLs to a segment that holds none, into which the k-th and no
 * earlier one seals: after k - 1 nothing is flushed (looked at 100 ms
 * later), after the k-th the flush delivers them all. */
static void expect_seal_at(sieve_t *s, struct slist *got, unsigned *next, unsigned k)
{
	size_t before = wait_emitted(got, 0);

	add_new(s, next, k - 1);
	usleep(100000);
	ck_assert_uint_eq(wait_emitted(got, 0), before);
	add_new(s, next, 1);
	ck_assert_uint_eq(wait_emitted(got, before + k), before + k);
}

/* Early seals (cfg.seal_min_urls): a segment that is not full goes to the
 * flush thread, when that is idle, as soon as it holds seal_min URLs and
 * an eighth as many as Z's signatures (SEAL_Z_RATIO); no sieve_flush is
 * called here, and the buffer (100,000 slots) never fills. */
START_TEST(test_early_seal)
{
	char dir[256], u[128], err[256];
	struct sieve_config c;
	struct slist got;
	sieve_t *s = NULL;
	unsigned next = 0;

	make_dir(dir, sizeof dir, "early");
	cfg_small(&c, dir, 100000);
	c.seal_min_urls = 100;
	slist_init(&got);
	ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
	for (int i = 0; i < 9; i++)
		expect_seal_at(s, &got, &next, 100); /* Z = 0 .. 800: seal_min binds */
	expect_seal_at(s, &got, &next, 112);         /* Z = 900: an eighth of Z binds */
	add_new(s, &next, 10);                       /* Z = 1012: these wait for the close */
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 1022);
	for (unsigned i = 0; i < got.n; i++) {
		url_of(u, sizeof u, i);
		ck_assert_str_eq(got.v[i], u);
	}
	slist_free(&got);
	rm_tree(dir);
}
END_TEST

/* ---- crash safety ---- */

#define CR_N 120

static void crash_child(const char *dir, long point, int wfd, const unsigned *seq, size_t n,
                        int replay_only)
{
	struct sieve_config c;
	sieve_t *s = NULL;
	char u[128], err[256];
	char pt[32];

	snprintf(pt, sizeof pt, "%ld", point);
	setenv("SIEVE_CRASH_POINT", pt, 1);
	cfg_small(&c, dir, 9);
	if (point % 2 == 1)
		c.seal_min_urls = 3; /* early seals too (while Z < 6) */
	if (sieve_open(&c, NULL, NULL, &s, err, sizeof err) != SIEVE_OK) {
		fprintf(stderr, "crash child (point %ld): open: %s\n", point, err);
		_exit(3);
	}
	if (!replay_only) {
		for (size_t i = 0; i < n; i++) {
			url_of(u, sizeof u, seq[i]);
			if (sieve_add(s, u, strlen(u)) != SIEVE_OK)
				_exit(4);
			if (i % 7 == 6) {
				uint32_t k = (uint32_t)(i + 1);
				if (sieve_sync(s) != SIEVE_OK)
					_exit(5);
				if (write(wfd, &k, sizeof k) != sizeof k)
					_exit(6);
			}
		}
	}
	if (sieve_close(s) != SIEVE_OK)
		_exit(7);
	_exit(0);
}

START_TEST(test_crash_points)
{
	unsigned seq[CR_N];
	int kills = 0;
	unsigned rs = 99;

	for (size_t i = 0; i < CR_N; i++) {
		rs = rs * 1103515245u + 12345u;
		seq[i] = (rs >> 8) % 70;
	}
	/* first-appearance reference */
	char *order[CR_N], **strs = strs_of(seq, CR_N);
	size_t first_pos[CR_N], nref;
	first_order(strs, CR_N, order, first_pos, &nref);

	for (long point = 1; point <= 260; point++) {
		char dir[256], err[256];
		int p[2];
		uint32_t synced = 0, k;
		pid_t pid;
		int st;

		make_dir(dir, sizeof dir, "crash");
		ck_assert_int_eq(pipe(p), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(p[0]);
			crash_child(dir, point, p[1], seq, CR_N, 0);
		}
		close(p[1]);
		while (read(p[0], &k, sizeof k) == sizeof k)
			synced = k;
		close(p[0]);
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		if (WIFSIGNALED(st)) {
			ck_assert_int_eq(WTERMSIG(st), SIGKILL);
			kills++;
			/* a second crash, during the replay of the reopen */
			pid = fork();
			if (pid == 0)
				crash_child(dir, 1 + point % 7, -1, seq, 0, 1);
			ck_assert_int_eq(waitpid(pid, &st, 0), pid);
			if (WIFSIGNALED(st))
				kills++;
			else
				ck_assert_int_eq(WEXITSTATUS(st), 0);
		} else {
			ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: %d",
			              st);
			synced = CR_N;
		}
		/* reopen cleanly: replays what is left, then read the durable log */
		struct sieve_config c;
		struct slist got, log;
		sieve_t *s = NULL;
		slist_init(&got);
		slist_init(&log);
		cfg_small(&c, dir, 9);
		ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK,
		              "reopen after kill %ld: %s", point, err);
		ck_assert_int_eq(sieve_close(s), SIEVE_OK);
		ck_assert_int_eq(sieve_log_read(dir, emit_cb, &log, err, sizeof err), SIEVE_OK);
		/* the log is a prefix of the first-appearance order (no duplicate,
		 * no reordering) that covers every URL first seen before the sync */
		ck_assert_uint_le(log.n, nref);
		for (size_t i = 0; i < log.n; i++)
			ck_assert_msg(strcmp(log.v[i], order[i]) == 0,
			              "kill %ld: log[%zu] = %s, want %s", point, i, log.v[i],
			              order[i]);
		for (size_t i = 0; i < nref; i++)
			if (first_pos[i] < synced)
				ck_assert_msg(i < log.n, "kill %ld: synced URL %s lost (log %zu)",
				              point, order[i], log.n);
		/* whatever the parent's reopen delivered is the log's tail */
		ck_assert_uint_le(got.n, log.n);
		for (size_t i = 0; i < got.n; i++)
			ck_assert_str_eq(got.v[i], log.v[log.n - got.n + i]);
		slist_free(&got);
		slist_free(&log);
		rm_tree(dir);
	}
	ck_assert_int_ge(kills, 200);
	strs_free(strs, CR_N);
}
END_TEST

/* ---- corruption ---- */

static void build_sieve(const char *dir, unsigned n, int leave_open_a)
{
	struct sieve_config c;
	sieve_t *s = NULL;
	char u[128], err[256];
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		cfg_small(&c, dir, leave_open_a ? 100000 : 16);
		if (sieve_open(&c, NULL, NULL, &s, err, sizeof err) != SIEVE_OK)
			_exit(3);
		for (unsigned i = 0; i < n; i++) {
			url_of(u, sizeof u, i);
			if (sieve_add(s, u, strlen(u)) != SIEVE_OK)
				_exit(4);
		}
		if (leave_open_a) {
			if (sieve_sync(s) != SIEVE_OK)
				_exit(5);
			_exit(0); /* no close: A stays for the replay */
		}
		_exit(sieve_close(s) == SIEVE_OK ? 0 : 6);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
}

/* How many files of dir begin with prefix (leaving a "tmp" one aside); out
 * (if not NULL) names the last. */
static int count_files(const char *dir, const char *prefix, char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 ||
		    strstr(e->d_name, "tmp") != NULL)
			continue;
		n++;
		if (out != NULL)
			snprintf(out, len, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	return n;
}

static void find_file(const char *dir, const char *prefix, char *out, size_t len)
{
	ck_assert_msg(count_files(dir, prefix, out, len) > 0, "no %s in %s", prefix, dir);
}

/* Opens dir, adds one more URL and flushes; expects SIEVE_ECORRUPT with
 * the file named in the message (at open or at the flush). */
static void expect_corrupt(const char *dir, const char *name)
{
	struct sieve_config c;
	char err[600];
	int rc;

	cfg_small(&c, dir, 100000);
	rc = open_add_flush(&c, err, sizeof err);
	ck_assert_msg(rc == SIEVE_ECORRUPT, "want ECORRUPT for %s, got %d (%s)", name, rc, err);
	ck_assert_msg(strstr(err, name) != NULL, "error '%s' does not name %s", err, name);
}

START_TEST(test_corruption)
{
	char dir[256], f[1024];

	/* Z: a flipped payload byte, a flipped header byte, truncation */
	for (int mode = 0; mode < 3; mode++) {
		make_dir(dir, sizeof dir, "cz");
		build_sieve(dir, 500, 0);
		find_file(dir, "Z.", f, sizeof f);
		if (mode == 0)
			flip_byte(f, -10);
		else if (mode == 1)
			flip_byte(f, 9);
		else
			cut_file(f, 1, 2);
		expect_corrupt(dir, strrchr(f, '/') + 1);
		rm_tree(dir);
	}
	/* A: a flipped byte inside the synced part, truncation of the synced part */
	for (int mode = 0; mode < 2; mode++) {
		make_dir(dir, sizeof dir, "ca");
		build_sieve(dir, 300, 1);
		find_file(dir, "A.", f, sizeof f);
		if (mode == 0)
			flip_byte(f, 100);
		else
			cut_file(f, 1, 2);
		expect_corrupt(dir, strrchr(f, '/') + 1);
		rm_tree(dir);
	}
	/* MANIFEST and the output log */
	make_dir(dir, sizeof dir, "cm");
	build_sieve(dir, 300, 0);
	snprintf(f, sizeof f, "%s/MANIFEST", dir);
	flip_byte(f, 20);
	expect_corrupt(dir, "MANIFEST");
	rm_tree(dir);
	make_dir(dir, sizeof dir, "ce");
	build_sieve(dir, 300, 0);
	snprintf(f, sizeof f, "%s/EMITTED", dir);
	cut_file(f, 1, 3);
	expect_corrupt(dir, "EMITTED");
	rm_tree(dir);
}
END_TEST

/* A folder whose MANIFEST has another magic (a format this build does not
 * write) is refused as corrupt, naming its manifest, and left as it was. */
START_TEST(test_foreign_manifest)
{
	char dir[256], p[512], err[512];
	uint8_t mb[72], back[72];
	struct sieve_config c;
	sieve_t *s = NULL;
	uint64_t v;
	int fd;

	make_dir(dir, sizeof dir, "m2");
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	memset(mb, 0, sizeof mb);
	memcpy(mb, "MSIEVEM2", 8);
	v = XXH64(mb, 64, 0);
	memcpy(mb + 64, &v, 8);
	snprintf(p, sizeof p, "%s/MANIFEST", dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, mb, sizeof mb), (ssize_t)sizeof mb);
	close(fd);
	cfg_small(&c, dir, 5);
	ck_assert_int_eq(sieve_open(&c, NULL, NULL, &s, err, sizeof err), SIEVE_ECORRUPT);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err, "MANIFEST") != NULL, "message: %s", err);
	fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, back, sizeof back), (ssize_t)sizeof back);
	close(fd);
	ck_assert(memcmp(mb, back, sizeof mb) == 0);
	rm_tree(dir);
}
END_TEST

static Suite *mercator_suite(void)
{
	Suite *s = suite_create("mercator");
	TCase *tc = harness_case(s, "core", 100);
	TCase *td = harness_case(s, "corruption", 100);

	tcase_add_test(tc, test_reference_sizes);
	tcase_add_test(tc, test_boundary_repeats);
	tcase_add_test(tc, test_forced_flush_and_stats);
	tcase_add_test(tc, test_threads);
	tcase_add_test(tc, test_threads_with_forced_flushes);
	tcase_add_test(tc, test_early_seal);
	tcase_add_test(tc, test_slice_full);
	tcase_add_test(tc, test_runs);
	tcase_add_test(tc, test_runs_to_merge);
	tcase_add_test(tc, test_one_run_manifest);
	tcase_add_test(harness_case(s, "crowd", 100), test_crowded_bucket);
	tcase_add_test(harness_case(s, "large_z", 100), test_large_z);
	tcase_add_test(harness_case(s, "crash", 250), test_crash_points);
	tcase_add_test(td, test_corruption);
	tcase_add_test(td, test_foreign_manifest);
	return s;
}

int main(int argc, char **argv)
{
	return harness_main(mercator_suite(), argc, argv);
}
