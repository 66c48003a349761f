/*
 * harness.c: what the sieve tests share (see harness.h).
 */
#include "harness.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/base/fileio.h"

static char base_dir[128];

void slist_init(struct slist *l)
{
	memset(l, 0, sizeof *l);
	pthread_mutex_init(&l->mu, NULL);
}

void slist_push(struct slist *l, const char *s, size_t len)
{
	pthread_mutex_lock(&l->mu);
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof *l->v);
		ck_assert_ptr_nonnull(l->v);
	}
	l->v[l->n] = strndup(s, len);
	ck_assert_ptr_nonnull(l->v[l->n]);
	l->n++;
	pthread_mutex_unlock(&l->mu);
}

void slist_free(struct slist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	pthread_mutex_destroy(&l->mu);
}

size_t slist_count(struct slist *l)
{
	size_t n;

	pthread_mutex_lock(&l->mu);
	n = l->n;
	pthread_mutex_unlock(&l->mu);
	return n;
}

void emit_cb(void *ctx, const char *url, size_t len)
{
	slist_push(ctx, url, len);
}

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

void sset_init(struct sset *s, size_t n)
{
	s->cap = n * 2 + 16;
	s->t = calloc(s->cap, sizeof *s->t);
	ck_assert_ptr_nonnull(s->t);
}

/* The slot of k: where it is, or the empty one where it would go. */
static size_t sset_slot(const struct sset *s, const char *k)
{
	size_t i = fnv(k) % s->cap;
	while (s->t[i] != NULL && strcmp(s->t[i], k) != 0)
		i = (i + 1) % s->cap;
	return i;
}

int sset_add(struct sset *s, const char *k)
{
	size_t i = sset_slot(s, k);
	if (s->t[i] != NULL)
		return 0;
	s->t[i] = (char *)k;
	return 1;
}

int sset_has(const struct sset *s, const char *k)
{
	return s->t[sset_slot(s, k)] != NULL;
}

void sset_free(struct sset *s)
{
	free(s->t);
}

void first_order(char *const *strs, size_t n, char **order, size_t *first_pos, size_t *nref)
{
	struct sset ref;

	*nref = 0;
	sset_init(&ref, n);
	for (size_t i = 0; i < n; i++) {
		if (!sset_add(&ref, strs[i]))
			continue;
		if (first_pos != NULL)
			first_pos[*nref] = i;
		order[(*nref)++] = strs[i];
	}
	sset_free(&ref);
}

void url_of(char *out, size_t len, unsigned v)
{
	snprintf(out, len, "https://h%u.example.com/path/%u?q=%u", v % 97, v, v * 7919u);
}

char **strs_of(const unsigned *seq, size_t n)
{
	char **strs = calloc(n + 1, sizeof *strs), u[128];

	ck_assert_ptr_nonnull(strs);
	for (size_t i = 0; i < n; i++) {
		url_of(u, sizeof u, seq[i]);
		strs[i] = strdup(u);
		ck_assert_ptr_nonnull(strs[i]);
	}
	return strs;
}

void strs_free(char **strs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(strs[i]);
	free(strs);
}

void make_dir(char *out, size_t len, const char *tag)
{
	static int seq;
	snprintf(out, len, "%s/sieve-%s-%d-%d", base_dir, tag, (int)getpid(), seq++);
}

void rm_tree(const char *dir)
{
	fileio_remove_tree(dir);
}

void cfg_for(struct sieve_config *c, const char *impl, const char *dir, size_t bufn)
{
	memset(c, 0, sizeof *c);
	c->impl = impl;
	c->dir = dir;
	c->memory = 1 << 20;
	c->buffer_urls = bufn;
	c->no_fsync = 1;
	c->expected_urls = 100000;
	c->fp_rate = 1e-9;
}

void for_sizes(unsigned seed, void (*each)(const unsigned *seq, size_t n))
{
	static const size_t sizes[] = { 1, 2, 3, 1000 };

	srand(seed);
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		size_t n = sizes[k];
		unsigned *seq = malloc(n * sizeof *seq);
		ck_assert_ptr_nonnull(seq);
		for (size_t i = 0; i < n; i++)
			seq[i] = (unsigned)rand() % (unsigned)(n / 2 + 1);
		each(seq, n);
		free(seq);
	}
}

unsigned *boundary_seq(size_t n, size_t bufn, unsigned range)
{
	unsigned *seq = malloc(n * sizeof *seq);

	ck_assert_ptr_nonnull(seq);
	for (size_t i = 0; i < n; i++) {
		if (i % bufn == 0 && i > 0)
			seq[i] = seq[i - 1];
		else if (i % bufn == 1 && i > bufn)
			seq[i] = seq[i - bufn - 1];
		else
			seq[i] = (unsigned)(i * 2654435761u % range);
	}
	return seq;
}

/* Adds strs[i..i+k) in one call (k <= 64), or one by one when k is 1. */
static void add_some(sieve_t *s, char *const *strs, size_t i, size_t k)
{
	size_t lens[64];

	if (k == 1) {
		ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
		return;
	}
	ck_assert_uint_le(k, 64);
	for (size_t j = 0; j < k; j++)
		lens[j] = strlen(strs[i + j]);
	ck_assert_int_eq(sieve_add_batch(s, (const char *const *)strs + i, lens, k), SIEVE_OK);
}

/* The list must be order[0..nref) exactly. */
static void expect_list(const struct ref_run *r, const char *what, const struct slist *l,
                        char *const *order, size_t nref)
{
	ck_assert_msg(l->n == nref, "%s %s bufn=%zu reopen=%zu: %zu emitted, want %zu", r->impl,
	              what, r->bufn, r->reopen_every, l->n, nref);
	for (size_t i = 0; i < nref; i++)
		ck_assert_msg(strcmp(l->v[i], order[i]) == 0, "%s %s: [%zu] = %s, want %s", r->impl,
		              what, i, l->v[i], order[i]);
}

void run_reference(const struct ref_run *r, char *const *strs, size_t n)
{
	char dir[256], err[256];
	struct sieve_config c;
	struct slist got;
	char **order = calloc(n + 1, sizeof *order);
	size_t nref;
	sieve_t *s = NULL;

	ck_assert_ptr_nonnull(order);
	make_dir(dir, sizeof dir, r->impl);
	cfg_for(&c, r->impl, dir, r->bufn);
	c.emit_log = r->emit_log;
	c.no_fsync = !r->fsync;
	c.seal_min_urls = r->seal_min;
	slist_init(&got);
	first_order(strs, n, order, NULL, &nref);
	ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK,
	              "%s: open: %s", r->impl, err);
	for (size_t i = 0; i < n;) {
		size_t k = r->batch > 1 ? r->batch : 1;
		if (k > n - i)
			k = n - i;
		if (r->reopen_every && k > r->reopen_every - i % r->reopen_every)
			k = r->reopen_every - i % r->reopen_every;
		add_some(s, strs, i, k);
		i += k;
		if (r->flush_every && i % r->flush_every == 0)
			ck_assert_int_eq(sieve_flush(s), SIEVE_OK);
		if (r->reopen_every && i % r->reopen_every == 0) {
			ck_assert_int_eq(sieve_close(s), SIEVE_OK);
			ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) ==
			                      SIEVE_OK,
			              "%s: reopen: %s", r->impl, err);
		}
	}
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	expect_list(r, "emitted", &got, order, nref);
	if (r->emit_log) {
		/* the durable log holds the same list */
		struct slist log;
		slist_init(&log);
		ck_assert_int_eq(sieve_log_read(dir, emit_cb, &log, err, sizeof err), SIEVE_OK);
		expect_list(r, "log", &log, order, nref);
		slist_free(&log);
	}
	free(order);
	slist_free(&got);
	rm_tree(dir);
}

void run_reference_seq(const struct ref_run *r, const unsigned *seq, size_t n)
{
	char **strs = strs_of(seq, n);

	run_reference(r, strs, n);
	strs_free(strs, n);
}

struct thr_arg {
	sieve_t *s;
	unsigned from, count;
};

static void *adder(void *p)
{
	struct thr_arg *a = p;
	const char *urls[8];
	size_t lens[8];
	char store[8][128];

	for (unsigned i = 0; i < a->count; i += 8) {
		unsigned k = 0;
		for (; k < 8 && i + k < a->count; k++) {
			url_of(store[k], sizeof store[k], (a->from + i + k) % 3000);
			urls[k] = store[k];
			lens[k] = strlen(store[k]);
		}
		if (i % 16 == 0) {
			for (unsigned j = 0; j < k; j++)
				ck_assert_int_eq(sieve_add(a->s, urls[j], lens[j]), SIEVE_OK);
		} else {
			ck_assert_int_eq(sieve_add_batch(a->s, urls, lens, k), SIEVE_OK);
		}
	}
	return NULL;
}

struct flusher_arg {
	sieve_t *s;
	int stop; /* set by the main thread, read by the flusher: atomic */
};

static void *flusher(void *p)
{
	struct flusher_arg *f = p;
	do {
		ck_assert_int_eq(sieve_flush(f->s), SIEVE_OK);
	} while (!__atomic_load_n(&f->stop, __ATOMIC_ACQUIRE));
	return NULL;
}

void run_threads(const struct sieve_config *c, int flushing)
{
	char err[256];
	struct slist got;
	struct sset seen;
	sieve_t *s = NULL;
	pthread_t t[4], ft;
	struct thr_arg a[4];
	struct flusher_arg fa = { 0 };

	slist_init(&got);
	ck_assert_msg(sieve_open(c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "%s: open: %s",
	              c->impl, err);
	fa.s = s;
	if (flushing)
		ck_assert_int_eq(pthread_create(&ft, NULL, flusher, &fa), 0);
	for (int i = 0; i < 4; i++) {
		a[i].s = s;
		a[i].from = (unsigned)i * 700;
		a[i].count = 2000;
		ck_assert_int_eq(pthread_create(&t[i], NULL, adder, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (flushing) {
		__atomic_store_n(&fa.stop, 1, __ATOMIC_RELEASE);
		pthread_join(ft, NULL);
	}
	ck_assert_int_eq(sieve_close(s), SIEVE_OK);
	ck_assert_uint_eq(got.n, 3000); /* the union of the four ranges mod 3000 */
	sset_init(&seen, got.n);
	for (size_t i = 0; i < got.n; i++)
		ck_assert_int_eq(sset_add(&seen, got.v[i]), 1);
	sset_free(&seen);
	slist_free(&got);
}

void run_add_flush(sieve_t *s, struct slist *got, int deferred)
{
	struct sieve_stats st;
	char u[128];
	size_t before = slist_count(got);

	for (unsigned i = 0; i < 50; i++) {
		url_of(u, sizeof u, i % 20);
		ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
	}
	if (deferred)
		ck_assert_uint_eq(slist_count(got), before);
	ck_assert_int_eq(sieve_flush(s), SIEVE_OK);
	ck_assert_uint_eq(slist_count(got), before + 20);
	ck_assert_int_eq(sieve_flush(s), SIEVE_OK); /* nothing new: no-op */
	ck_assert_uint_eq(slist_count(got), before + 20);
	sieve_stats_get(s, &st);
	ck_assert_uint_eq(st.added, 50);
	ck_assert_uint_eq(st.emitted, 20);
	ck_assert_uint_ge(st.flushes, 1);
}

void flip_byte(const char *path, long off)
{
	int fd = open(path, O_RDWR);
	unsigned char b;
	struct stat sb;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	if (off < 0)
		off += sb.st_size;
	ck_assert_int_eq(pread(fd, &b, 1, off), 1);
	b ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &b, 1, off), 1);
	close(fd);
}

void cut_file(const char *path, long keep_num, long den)
{
	struct stat sb;

	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(truncate(path, sb.st_size * keep_num / den), 0);
}

int open_add_flush(const struct sieve_config *c, char *err, size_t errlen)
{
	sieve_t *s = NULL;
	int rc = sieve_open(c, NULL, NULL, &s, err, errlen);

	if (rc != SIEVE_OK)
		return rc;
	ck_assert_int_eq(sieve_add(s, "http://new.example/", 19), SIEVE_OK);
	rc = sieve_flush(s);
	snprintf(err, errlen, "%s", sieve_last_error(s));
	sieve_close(s);
	return rc;
}

void pipe_emit(void *ctx, const char *url, size_t len)
{
	int fd = *(int *)ctx;
	char line[256];
	int n = snprintf(line, sizeof line, "%.*s\n", (int)len, url);

	if (write(fd, line, (size_t)n) != n)
		_exit(9);
}

void child_adds(sieve_t *s, int fd, char *const *strs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char line[32];
		int k;
		if (sieve_add(s, strs[i], strlen(strs[i])) != SIEVE_OK)
			_exit(4);
		if (i % 7 != 6)
			continue;
		if (sieve_sync(s) != SIEVE_OK)
			_exit(5);
		k = snprintf(line, sizeof line, "#%zu\n", i + 1);
		if (write(fd, line, (size_t)k) != k)
			_exit(6);
	}
}

void read_child(int fd, struct slist *got, size_t *synced)
{
	static char buf[1 << 17];
	size_t have = 0;

	for (;;) {
		ssize_t g = read(fd, buf + have, sizeof buf - 1 - have);
		ck_assert_int_ge(g, 0);
		if (g == 0)
			break;
		have += (size_t)g;
	}
	buf[have] = '\0';
	for (char *line = buf, *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		if (line[0] == '#')
			*synced = strtoul(line + 1, NULL, 10);
		else
			slist_push(got, line, strlen(line));
	}
}

void check_emissions(const char *what, long point, const struct slist *got, char *const *order,
                     const size_t *first_pos, size_t nref, size_t synced, int may_lose)
{
	struct sset seen;
	size_t at = 0;

	if (may_lose)
		synced = 0;
	sset_init(&seen, got->n);
	for (size_t i = 0; i < got->n; i++) {
		ck_assert_msg(sset_add(&seen, got->v[i]) == 1, "%s %ld: %s emitted twice", what,
		              point, got->v[i]);
		while (at < nref && strcmp(order[at], got->v[i]) != 0) {
			ck_assert_msg(first_pos[at] >= synced, "%s %ld: synced URL %s lost", what,
			              point, order[at]);
			at++;
		}
		ck_assert_msg(at < nref, "%s %ld: %s out of order", what, point, got->v[i]);
		at++;
	}
	for (; at < nref; at++)
		ck_assert_msg(first_pos[at] >= synced, "%s %ld: synced URL %s lost", what, point,
		              order[at]);
	sset_free(&seen);
}

void harness_scratch(void)
{
	struct stat sb;
	const char *base = stat("/dev/shm", &sb) == 0
	                           ? "/dev/shm"
	                           : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");

	snprintf(base_dir, sizeof base_dir, "%s", base);
}

TCase *harness_case(Suite *s, const char *name, int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

int harness_main(Suite *s, int argc, char **argv)
{
	SRunner *sr;
	int failed, ran;

	harness_scratch();
	sr = srunner_create(s);
	srunner_run(sr, NULL, argc > 1 ? argv[1] : NULL, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	ran = srunner_ntests_run(sr);
	srunner_free(sr);
	if (ran == 0) {
		fprintf(stderr, "no test case %s\n", argc > 1 ? argv[1] : "");
		return 1;
	}
	return failed == 0 ? 0 : 1;
}
