/*
 * test_sieves.c: the other sieves (memory, bloom, lsm, offline) against a
 * naive reference model (a string set and the first-appearance list): sizes
 * 1, 2, 3, 1000 with repeats, repeats across run and merge boundaries,
 * reopen, threads, a process dying without close, damaged state files, and
 * for bloom the measured loss against the rate its analysis predicts.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sieve/sieve.h"

static const char *const impls[] = {"memory", "bloom", "lsm", "offline"};
#define NIMPLS (sizeof impls / sizeof impls[0])

/* ---- emitted list and a naive string set ---- */
struct slist {
    char **v;
    size_t n, cap;
    pthread_mutex_t mu;
};

static void slist_init(struct slist *l)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
}

static void slist_push(struct slist *l, const char *s, size_t len)
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

static void slist_free(struct slist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    pthread_mutex_destroy(&l->mu);
}

static void emit_cb(void *ctx, const char *url, size_t len)
{
    slist_push(ctx, url, len);
}

struct sset {
    char **t;
    size_t cap;
};

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void sset_init(struct sset *s, size_t n)
{
    s->cap = n * 2 + 16;
    s->t = calloc(s->cap, sizeof *s->t);
    ck_assert_ptr_nonnull(s->t);
}

/* 1 if k was not in the set (now it is); k is borrowed */
static int sset_add(struct sset *s, const char *k)
{
    size_t i = fnv(k) % s->cap;
    while (s->t[i] != NULL) {
        if (strcmp(s->t[i], k) == 0)
            return 0;
        i = (i + 1) % s->cap;
    }
    s->t[i] = (char *)k;
    return 1;
}

static void sset_free(struct sset *s)
{
    free(s->t);
}

/* ---- folders ---- */
static char base_dir[128];

static void make_dir(char *out, size_t len, const char *tag)
{
    static int seq;
    snprintf(out, len, "%s/sieves-%s-%d-%d", base_dir, tag, (int)getpid(), seq++);
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[1024];
    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        struct stat sb;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void url_of(char *out, size_t len, unsigned v)
{
    snprintf(out, len, "https://h%u.example.com/path/%u?q=%u", v % 97, v, v * 7919u);
}

/* bufn: offline's run size (a merge every 8 runs); bloom is sized so that a
 * false positive among these tests' few thousand URLs is ~1e-6 likely. */
static void cfg_for(struct sieve_config *c, const char *impl, const char *dir, size_t bufn)
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

/* Feeds seq (reopening every reopen_every adds, never if 0; forcing a flush
 * every flush_every adds, never if 0; adds in batches of `batch` if > 1) and
 * checks the emitted list is exactly the first-appearance order. */
static void run_reference(const char *impl, const unsigned *seq, size_t n, size_t bufn, size_t reopen_every,
                          size_t flush_every, size_t batch)
{
    char dir[256], err[256];
    struct sieve_config c;
    struct slist got;
    struct sset ref;
    char **strs = calloc(n + 1, sizeof *strs);
    char **order = calloc(n + 1, sizeof *order);
    size_t nref = 0;
    sieve_t *s = NULL;

    ck_assert_ptr_nonnull(strs);
    ck_assert_ptr_nonnull(order);
    make_dir(dir, sizeof dir, impl);
    cfg_for(&c, impl, dir, bufn);
    slist_init(&got);
    sset_init(&ref, n);
    ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "%s: open: %s", impl, err);
    for (size_t i = 0; i < n; i++) {
        char u[128];
        url_of(u, sizeof u, seq[i]);
        strs[i] = strdup(u);
        if (sset_add(&ref, strs[i]))
            order[nref++] = strs[i];
    }
    for (size_t i = 0; i < n;) {
        size_t k = batch > 1 ? batch : 1;
        if (k > n - i)
            k = n - i;
        if (reopen_every && k > reopen_every - i % reopen_every)
            k = reopen_every - i % reopen_every;
        if (k == 1) {
            ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
        } else {
            size_t lens[64];
            ck_assert_uint_le(k, 64);
            for (size_t j = 0; j < k; j++)
                lens[j] = strlen(strs[i + j]);
            ck_assert_int_eq(sieve_add_batch(s, (const char *const *)strs + i, lens, k), SIEVE_OK);
        }
        i += k;
        if (flush_every && i % flush_every == 0)
            ck_assert_int_eq(sieve_flush(s), SIEVE_OK);
        if (reopen_every && i % reopen_every == 0) {
            ck_assert_int_eq(sieve_close(s), SIEVE_OK);
            ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "%s: reopen: %s", impl,
                          err);
        }
    }
    ck_assert_int_eq(sieve_close(s), SIEVE_OK);
    ck_assert_msg(got.n == nref, "%s n=%zu bufn=%zu reopen=%zu: %zu emitted, want %zu", impl, n, bufn, reopen_every,
                  got.n, nref);
    for (size_t i = 0; i < nref; i++)
        ck_assert_msg(strcmp(got.v[i], order[i]) == 0, "%s: emitted[%zu] = %s, want %s", impl, i, got.v[i],
                      order[i]);
    for (size_t i = 0; i < n; i++)
        free(strs[i]);
    free(strs);
    free(order);
    sset_free(&ref);
    slist_free(&got);
    rm_tree(dir);
}

START_TEST(test_reference_sizes)
{
    static const size_t sizes[] = {1, 2, 3, 1000};
    const char *impl = impls[_i];
    srand(4242);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned *seq = malloc(n * sizeof *seq);
        for (size_t i = 0; i < n; i++)
            seq[i] = (unsigned)rand() % (unsigned)(n / 2 + 1);
        run_reference(impl, seq, n, 7, 0, 0, 1);
        run_reference(impl, seq, n, 64, 0, 0, 13);
        run_reference(impl, seq, n, 7, 5, 0, 1);
        run_reference(impl, seq, n, 5, 0, 11, 3);
        run_reference(impl, seq, n, 100000, 0, 0, 1);
        free(seq);
    }
}
END_TEST

/* Repeats at run boundaries (every bufn adds) and merge boundaries (every
 * 8 bufn, offline), with and without reopen and batches across them. */
START_TEST(test_boundary_repeats)
{
    const char *impl = impls[_i];
    const size_t bufn = 10, n = 500;
    unsigned *seq = malloc(n * sizeof *seq);
    for (size_t i = 0; i < n; i++) {
        if (i % bufn == 0 && i > 0)
            seq[i] = seq[i - 1];
        else if (i % bufn == 1 && i > bufn)
            seq[i] = seq[i - bufn - 1];
        else
            seq[i] = (unsigned)(i * 2654435761u % 180);
    }
    run_reference(impl, seq, n, bufn, 0, 0, 1);
    run_reference(impl, seq, n, bufn, 0, 0, 7);
    run_reference(impl, seq, n, bufn, bufn, 0, 1);
    run_reference(impl, seq, n, bufn, 8 * bufn, 0, 3);
    run_reference(impl, seq, n, bufn, 33, 17, 1);
    free(seq);
}
END_TEST

START_TEST(test_flush_stats_lock)
{
    const char *impl = impls[_i];
    char dir[256], u[128], err[256];
    struct sieve_config c;
    struct slist got;
    struct sieve_stats st;
    sieve_t *s = NULL, *s2 = NULL;
    char big[70000];

    make_dir(dir, sizeof dir, impl);
    cfg_for(&c, impl, dir, 1000);
    slist_init(&got);
    ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
    for (unsigned i = 0; i < 50; i++) {
        url_of(u, sizeof u, i % 20);
        ck_assert_int_eq(sieve_add(s, u, strlen(u)), SIEVE_OK);
    }
    ck_assert_int_eq(sieve_flush(s), SIEVE_OK);
    ck_assert_uint_eq(got.n, 20);
    ck_assert_int_eq(sieve_flush(s), SIEVE_OK);
    ck_assert_uint_eq(got.n, 20);
    sieve_stats_get(s, &st);
    ck_assert_uint_eq(st.added, 50);
    ck_assert_uint_eq(st.emitted, 20);
    ck_assert_uint_ge(st.flushes, 1);
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

START_TEST(test_threads)
{
    const char *impl = impls[_i];
    char dir[256], err[256];
    struct sieve_config c;
    struct slist got;
    struct sset seen;
    sieve_t *s = NULL;
    pthread_t t[4];
    struct thr_arg a[4];

    make_dir(dir, sizeof dir, impl);
    cfg_for(&c, impl, dir, 50);
    slist_init(&got);
    ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
    for (int i = 0; i < 4; i++) {
        a[i].s = s;
        a[i].from = (unsigned)i * 700;
        a[i].count = 2000;
        ck_assert_int_eq(pthread_create(&t[i], NULL, adder, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    ck_assert_int_eq(sieve_close(s), SIEVE_OK);
    ck_assert_uint_eq(got.n, 3000); /* the union of the four ranges mod 3000 */
    sset_init(&seen, got.n);
    for (size_t i = 0; i < got.n; i++)
        ck_assert_int_eq(sset_add(&seen, got.v[i]), 1);
    sset_free(&seen);
    slist_free(&got);
    rm_tree(dir);
}
END_TEST

/* ---- a process that dies without close ---- */

static void pipe_emit(void *ctx, const char *url, size_t len)
{
    int fd = *(int *)ctx;
    char line[256];
    int n = snprintf(line, sizeof line, "%.*s\n", (int)len, url);
    if (write(fd, line, (size_t)n) != n)
        _exit(9);
}

#define DIE_N 300

/* Reads a child's report (emitted URLs, "#k" = k adds synced) until EOF. */
static void read_child(int fd, struct slist *got, size_t *synced)
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

/* got must be a duplicate-free subsequence of order[0..nref) holding every
 * URL whose first appearance (first_pos) is before `synced` adds; with
 * may_lose, synced URLs may be missing (checked elsewhere to be known). */
static void check_emissions(const char *what, long point, const struct slist *got, char *const *order,
                            const size_t *first_pos, size_t nref, size_t synced, int may_lose)
{
    struct sset seen;
    size_t at = 0;

    if (may_lose)
        synced = 0;
    sset_init(&seen, got->n);
    for (size_t i = 0; i < got->n; i++) {
        ck_assert_msg(sset_add(&seen, got->v[i]) == 1, "%s %ld: %s emitted twice", what, point, got->v[i]);
        while (at < nref && strcmp(order[at], got->v[i]) != 0) {
            ck_assert_msg(first_pos[at] >= synced, "%s %ld: synced URL %s lost", what, point, order[at]);
            at++;
        }
        ck_assert_msg(at < nref, "%s %ld: %s out of order", what, point, got->v[i]);
        at++;
    }
    for (; at < nref; at++)
        ck_assert_msg(first_pos[at] >= synced, "%s %ld: synced URL %s lost", what, point, order[at]);
    sset_free(&seen);
}

/* The child adds seq[0..stop) (syncing every 7 adds), reporting its
 * emissions and the synced count through the pipe, then _exits without
 * close; the parent reopens and closes. Emissions before and after must
 * together be a duplicate-free subsequence of the first-appearance order
 * that covers every URL first seen before the last sync. */
START_TEST(test_die_without_close)
{
    const char *impl = impls[_i];
    unsigned seq[DIE_N];
    char *order[DIE_N], *strs[DIE_N];
    size_t first_pos[DIE_N], nref = 0;
    struct sset ref;
    unsigned rs = 7;

    for (size_t i = 0; i < DIE_N; i++) {
        char u[128];
        rs = rs * 1103515245u + 12345u;
        seq[i] = (rs >> 8) % 150;
        url_of(u, sizeof u, seq[i]);
        strs[i] = strdup(u);
    }
    sset_init(&ref, DIE_N);
    for (size_t i = 0; i < DIE_N; i++)
        if (sset_add(&ref, strs[i])) {
            first_pos[nref] = i;
            order[nref++] = strs[i];
        }
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
        ck_assert_int_eq(pipe(p), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            close(p[0]);
            if (sieve_open(&c, pipe_emit, &p[1], &s, err, sizeof err) != SIEVE_OK)
                _exit(3);
            for (size_t i = 0; i < stop; i++) {
                if (sieve_add(s, strs[i], strlen(strs[i])) != SIEVE_OK)
                    _exit(4);
                if (i % 7 == 6) {
                    char line[32];
                    int n;
                    if (sieve_sync(s) != SIEVE_OK)
                        _exit(5);
                    n = snprintf(line, sizeof line, "#%zu\n", i + 1);
                    if (write(p[1], line, (size_t)n) != n)
                        _exit(6);
                }
            }
            _exit(0); /* no close */
        }
        close(p[1]);
        slist_init(&got);
        read_child(p[0], &got, &synced);
        close(p[0]);
        ck_assert_int_eq(waitpid(pid, &st, 0), pid);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: child failed: %d", impl, st);
        ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "%s: reopen: %s", impl, err);
        ck_assert_int_eq(sieve_close(s), SIEVE_OK);
        check_emissions(impl, (long)stop, &got, order, first_pos, nref, synced, 0);
        slist_free(&got);
        rm_tree(dir);
    }
    for (size_t i = 0; i < DIE_N; i++)
        free(strs[i]);
    sset_free(&ref);
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
    for (size_t i = 0; i < n; i++) {
        if (sieve_add(s, strs[i], strlen(strs[i])) != SIEVE_OK)
            _exit(4);
        if (i % 7 == 6) {
            char line[32];
            int k;
            if (sieve_sync(s) != SIEVE_OK)
                _exit(5);
            k = snprintf(line, sizeof line, "#%zu\n", i + 1);
            if (write(wfd, line, (size_t)k) != k)
                _exit(6);
        }
    }
    _exit(sieve_close(s) == SIEVE_OK ? 0 : 7);
}

#define CR_N 120

START_TEST(test_offline_crash_points)
{
    char *strs[CR_N], *order[CR_N];
    size_t first_pos[CR_N], nref = 0;
    struct sset ref;
    unsigned rs = 99;
    int kills = 0, clean = 0;

    for (size_t i = 0; i < CR_N; i++) {
        char u[128];
        rs = rs * 1103515245u + 12345u;
        url_of(u, sizeof u, (rs >> 8) % 70);
        strs[i] = strdup(u);
    }
    sset_init(&ref, CR_N);
    for (size_t i = 0; i < CR_N; i++)
        if (sset_add(&ref, strs[i])) {
            first_pos[nref] = i;
            order[nref++] = strs[i];
        }
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
            ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed: %d", st);
            synced = CR_N;
            clean++;
        }
        cfg_for(&c, "offline", dir, 5);
        ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "reopen after kill %ld: %s",
                      point, err);
        ck_assert_int_eq(sieve_close(s), SIEVE_OK);
        check_emissions("offline kill", point, &got, order, first_pos, nref, synced, synced < CR_N);
        if (synced == CR_N) {
            ck_assert_uint_eq(got.n, nref);
        } else {
            size_t before = got.n;
            ck_assert_int_eq(sieve_open(&c, emit_cb, &got, &s, err, sizeof err), SIEVE_OK);
            for (size_t i = 0; i < synced; i++)
                ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
            ck_assert_int_eq(sieve_close(s), SIEVE_OK);
            ck_assert_msg(got.n == before, "kill %ld: %zu synced URLs were not known", point, got.n - before);
        }
        slist_free(&got);
        rm_tree(dir);
    }
    ck_assert_int_ge(kills, 50);
    ck_assert_int_eq(clean, 3);
    for (size_t i = 0; i < CR_N; i++)
        free(strs[i]);
    sset_free(&ref);
}
END_TEST

/* ---- damaged state files ---- */

static void flip_byte(const char *path, long off)
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

/* memory's MEMSET, bloom's BLOOM, offline's Z and STATE: a flipped byte
 * is reported as SIEVE_ECORRUPT naming the file (at open or next merge). */
START_TEST(test_corruption)
{
    static const struct {
        const char *impl, *file;
        long off;
    } cases[] = {
        {"memory", "MEMSET", -5}, {"memory", "MEMSET", 12}, {"bloom", "BLOOM", -3},
        {"bloom", "BLOOM", 10},   {"offline", "Z.1", -4},   {"offline", "STATE", 9},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char dir[256], f[512], u[128], err[600];
        struct sieve_config c;
        sieve_t *s = NULL;
        int rc;

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
        rc = sieve_open(&c, NULL, NULL, &s, err, sizeof err);
        if (rc == SIEVE_OK) {
            ck_assert_int_eq(sieve_add(s, "http://new.example/", 19), SIEVE_OK);
            rc = sieve_flush(s);
            snprintf(err, sizeof err, "%s", sieve_last_error(s));
            sieve_close(s);
        }
        ck_assert_msg(rc == SIEVE_ECORRUPT, "%s %s: want ECORRUPT, got %d (%s)", cases[k].impl, cases[k].file, rc,
                      err);
        ck_assert_msg(strstr(err, cases[k].file) != NULL, "error '%s' does not name %s", err, cases[k].file);
        rm_tree(dir);
    }
}
END_TEST

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

START_TEST(test_bloom_loss_rate)
{
    const unsigned n = 200000, extra = 20000;
    const double p = 0.01;
    char dir[256], err[256];
    struct sieve_config c;
    struct sieve_stats st;
    sieve_t *s = NULL;
    double k = 0, e1, e2, rate2, sd;
    uint64_t l1, l2;

    make_dir(dir, sizeof dir, "bloomrate");
    cfg_for(&c, "bloom", dir, 0);
    c.expected_urls = n;
    c.fp_rate = p;
    ck_assert_int_eq(sieve_open(&c, NULL, NULL, &s, err, sizeof err), SIEVE_OK);
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
    ck_assert_msg(fabs(st.filter_fp_estimate - p) < 0.15 * p, "estimate at design load %g, target %g",
                  st.filter_fp_estimate, p);
    /* phase 2: new URLs at the design load are lost at about the target */
    l2 = bloom_feed(s, n, extra);
    e2 = bloom_expected_loss((double)st.filter_bits, (double)st.filter_hashes, &k, extra);
    rate2 = (double)l2 / extra;
    sd = sqrt(e2);
    ck_assert_msg(fabs((double)l2 - e2) <= 4 * sd + 2, "at load: lost %llu, expected %.1f +- %.1f",
                  (unsigned long long)l2, e2, 4 * sd);
    ck_assert_msg(rate2 > 0.7 * p && rate2 < 1.6 * p, "loss rate at load %g, target %g", rate2, p);
    fprintf(stderr, "bloom: filling to n=%u lost %llu (expected %.1f); %u more lost %llu (expected %.1f, rate %.4f)\n",
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
    const unsigned n = 100000, extra = 20000;
    const double p = 0.01;
    char dir[256], err[256];
    struct sieve_config c;
    struct sieve_stats st;
    sieve_t *s = NULL;
    double rate;

    make_dir(dir, sizeof dir, "bloomblk");
    cfg_for(&c, "bloom", dir, 0);
    c.expected_urls = n;
    c.fp_rate = p;
    c.bloom_blocked = 1;
    ck_assert_int_eq(sieve_open(&c, NULL, NULL, &s, err, sizeof err), SIEVE_OK);
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

/* sieve_checkpoint / sieve_restore, for every sieve (Mercator too): the
 * checkpoint holds exactly what was added before it (all of it delivered by
 * then); the live sieve going on after it (more flushes, Z replaced) does
 * not change it; a sieve restored from it (twice) emits, of the URLs added
 * after, exactly the ones the checkpoint had not seen, in order. */
static const char *const ckpt_impls[] = {"mercator", "memory", "bloom", "lsm", "offline"};

START_TEST(test_checkpoint_restore)
{
    const char *impl = ckpt_impls[_i];
    char dir[256], ck[256], dir2[256], err[256], u[128];
    const size_t n = 3000, half = 1500;
    struct sieve_config c;
    struct slist got;
    struct sset seen1, seen2;
    sieve_t *s = NULL;
    char **strs = calloc(n, sizeof *strs);
    char **want1 = calloc(n, sizeof *want1), **want2 = calloc(n, sizeof *want2);
    size_t n1 = 0, n2 = 0;

    ck_assert_ptr_nonnull(strs);
    make_dir(dir, sizeof dir, impl);
    make_dir(ck, sizeof ck, "ckpt");
    sset_init(&seen1, n);
    sset_init(&seen2, n);
    for (size_t i = 0; i < n; i++) {
        url_of(u, sizeof u, (unsigned)(i * 2654435761u % 2000));
        strs[i] = strdup(u);
        if (i < half && sset_add(&seen1, strs[i]))
            want1[n1++] = strs[i];
    }
    /* after the checkpoint: new = not seen in the first half, first time */
    for (size_t i = half; i < n; i++) {
        size_t k = fnv(strs[i]) % seen1.cap;
        int old = 0;
        while (seen1.t[k] != NULL) {
            if (strcmp(seen1.t[k], strs[i]) == 0) {
                old = 1;
                break;
            }
            k = (k + 1) % seen1.cap;
        }
        if (!old && sset_add(&seen2, strs[i]))
            want2[n2++] = strs[i];
    }
    ck_assert_uint_gt(n2, 100); /* the test means something */
    cfg_for(&c, impl, dir, 7);
    slist_init(&got);
    ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "%s: %s", impl, err);
    for (size_t i = 0; i < half; i++)
        ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
    ck_assert_msg(sieve_checkpoint(s, ck) == SIEVE_OK, "%s: checkpoint: %s", impl, sieve_last_error(s));
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

    for (int rep = 0; rep < 2; rep++) {
        make_dir(dir2, sizeof dir2, impl);
        ck_assert_msg(sieve_restore(ck, dir2, err, sizeof err) == SIEVE_OK, "%s: restore: %s", impl, err);
        cfg_for(&c, impl, dir2, 7);
        slist_init(&got);
        ck_assert_msg(sieve_open(&c, emit_cb, &got, &s, err, sizeof err) == SIEVE_OK, "%s: reopen: %s", impl, err);
        ck_assert_uint_eq(got.n, 0); /* nothing pending in the checkpoint */
        for (size_t i = half; i < n; i++)
            ck_assert_int_eq(sieve_add(s, strs[i], strlen(strs[i])), SIEVE_OK);
        ck_assert_int_eq(sieve_close(s), SIEVE_OK);
        ck_assert_msg(got.n == n2, "%s rep %d: %zu emitted after restore, want %zu", impl, rep, got.n, n2);
        for (size_t i = 0; i < n2; i++)
            ck_assert_str_eq(got.v[i], want2[i]);
        slist_free(&got);
        rm_tree(dir2);
    }
    for (size_t i = 0; i < n; i++)
        free(strs[i]);
    free(strs);
    free(want1);
    free(want2);
    sset_free(&seen1);
    sset_free(&seen2);
    rm_tree(dir);
    rm_tree(ck);
}
END_TEST

static Suite *sieves_suite(void)
{
    Suite *s = suite_create("sieves");
    TCase *tc = tcase_create("contract");
    TCase *tb = tcase_create("bloom");
    tcase_set_timeout(tc, 200);
    tcase_set_timeout(tb, 200);
    tcase_add_loop_test(tc, test_reference_sizes, 0, NIMPLS);
    tcase_add_loop_test(tc, test_boundary_repeats, 0, NIMPLS);
    tcase_add_loop_test(tc, test_flush_stats_lock, 0, NIMPLS);
    tcase_add_loop_test(tc, test_threads, 0, NIMPLS);
    tcase_add_loop_test(tc, test_die_without_close, 0, NIMPLS);
    tcase_add_loop_test(tc, test_checkpoint_restore, 0, sizeof ckpt_impls / sizeof ckpt_impls[0]);
    tcase_add_test(tc, test_corruption);
    tcase_add_test(tc, test_offline_crash_points);
    tcase_add_test(tb, test_bloom_loss_rate);
    tcase_add_test(tb, test_bloom_blocked_and_memory_sizing);
    suite_add_tcase(s, tc);
    suite_add_tcase(s, tb);
    return s;
}

int main(void)
{
    struct stat sb;
    const char *base = stat("/dev/shm", &sb) == 0 ? "/dev/shm" : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    SRunner *sr;
    int failed;

    snprintf(base_dir, sizeof base_dir, "%s", base);
    sr = srunner_create(sieves_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
