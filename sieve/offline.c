/*
 * offline.c: the "offline" sieve (sieve.h; the notes' 2.4): sorted files
 * only, constant memory, emission in batches.
 *
 * Files in cfg->dir:
 *   A        the URLs added since the last merge, in discovery order, as
 *            URL records (segment.h, mask 0); a URL's position is its
 *            record's ordinal in A.
 *   R.<k>    sorted runs: every r adds (r = cfg->buffer_urls, or from
 *            cfg->memory) the (signature, position) pairs of the last r URLs
 *            are sorted by (signature, position), deduplicated (the first
 *            position kept) and written (16-byte host-order records).
 *   Z.<gen>  the sorted distinct XXH3-64 signatures of every URL ever merged:
 *            32-byte header {magic "MSIEVEOZ", u64 count, u64 XXH64(payload),
 *            u64 XXH64(header so far)} then count u64 little-endian.
 *   STATE    the committed generation: {magic "MSIEVEO1", u64 gen, u64
 *            count, u64 XXH64 of the 24 bytes before}; replaced atomically.
 *
 * Merge (when A holds RUNS_PER_MERGE runs, or at sieve_flush / sieve_close):
 * the last partial run is written; the runs are merged (k-way, smallest
 * (signature, position) first, so the first copy of a signature carries its
 * first position) and that sorted, deduplicated stream A' is merged
 * sequentially with Z into Z.<gen+1>: signatures of A' absent from Z are
 * written to Z' and their positions marked in a bitmap over A's positions
 * (the notes' "list of positions", kept sorted for free). Z' is fsynced,
 * STATE commits it, then A is scanned in order and the marked URLs are
 * emitted: the original discovery order restored. A and the runs are then
 * emptied and the old Z removed.
 *
 * Crashes: the emit runs only after the commit. An A found at open (a crash
 * before or after a commit) is merged again at once: runs are rebuilt from
 * A; URLs whose signatures a commit already put in Z are not emitted again.
 * A damaged or torn record ends A (the tail from it is cut). sieve_sync
 * makes A durable (write + fdatasync). Tests: SIEVE_CRASH_POINT=N in the
 * environment at open raises SIGKILL at the Nth crash point (as Mercator).
 *
 * Memory: r pairs of 16 bytes, a bitmap of RUNS_PER_MERGE * r bits, and
 * RUNS_PER_MERGE + 4 I/O buffers, all inside cfg->memory.
 */
#include "sieve/sieve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "frontier/base/byteorder.h"
#include "frontier/base/clock.h"
#include "frontier/base/fileio.h"
#include "sieve/segment.h"
#include "sieve/sieve_base.h"
#include "sieve/sieve_files.h"

#define RUNS_PER_MERGE 8
#define Z_MAGIC "MSIEVEOZ"
#define M_MAGIC "MSIEVEO1"
#define Z_HDR 32
#define M_SIZE 32

struct pair {
	uint64_t sig;
	uint64_t pos;
};

struct offline {
	struct sieve_base base; /* first: the generic operations reach it */
	size_t io;              /* bytes per I/O buffer */
	size_t run_cap;         /* r */
	uint64_t a_max;         /* URLs in A that trigger a merge */
	/* A */
	int a_fd;
	uint8_t *abuf; /* write buffer of A */
	size_t alen;
	uint64_t a_count; /* records in A (written or buffered) */
	/* runs */
	struct pair *run;
	size_t run_n;
	unsigned nruns;
	/* committed state */
	uint64_t gen, z_count, z_bytes;
	/* merge work memory */
	uint64_t *marks;
	uint8_t *bufs;                                  /* the I/O buffers, io bytes each: */
	uint8_t *rbuf[RUNS_PER_MERGE + 1], *zin, *zout; /* the runs' (A's: the first), Z's, Z''s */
};

/* dir/NAME, or dir/NAME.<num> when num >= 0. */
static int path_of(const struct offline *o, char *out, size_t len, const char *name, long long num)
{
	if (num >= 0)
		return sieve_path(out, len, o->base.dir, "%s.%lld", name, num);
	return sieve_path(out, len, o->base.dir, "%s", name);
}

/* ---------------- A and the runs ---------------- */

static int a_drain(struct offline *o)
{
	if (o->alen > 0 && fileio_write_all(o->a_fd, o->abuf, o->alen) != 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: write: %s", o->base.dir,
		                  strerror(errno));
	o->alen = 0;
	sieve_crash_point();
	return SIEVE_OK;
}

static int pair_cmp(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;
	if (a->sig != b->sig)
		return a->sig < b->sig ? -1 : 1;
	return a->pos < b->pos ? -1 : (a->pos > b->pos);
}

/* Sorts the in-memory run, keeps the first position per signature, writes R.<nruns>. */
static int run_write(struct offline *o)
{
	char p[4096];
	size_t k = 0;
	int fd, rc = SIEVE_OK;

	if (o->run_n == 0)
		return SIEVE_OK;
	qsort(o->run, o->run_n, sizeof *o->run, pair_cmp);
	for (size_t i = 0; i < o->run_n; i++)
		if (k == 0 || o->run[i].sig != o->run[k - 1].sig)
			o->run[k++] = o->run[i];
	if (path_of(o, p, sizeof p, "R", o->nruns))
		return sieve_fail(&o->base, SIEVE_EINVAL, "%s: path too long", o->base.dir);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s: %s", p, strerror(errno));
	if (fileio_write_all(fd, o->run, k * sizeof *o->run) != 0)
		rc = sieve_fail(&o->base, SIEVE_EIO, "%s: write: %s", p, strerror(errno));
	close(fd);
	o->run_n = 0;
	o->nruns++;
	sieve_crash_point();
	return rc;
}

/* Appends the pair of the URL of signature sig at position pos (already in
 * A) to the runs. */
static int run_push(struct offline *o, uint64_t sig, uint64_t pos)
{
	o->run[o->run_n].sig = sig;
	o->run[o->run_n].pos = pos;
	o->run_n++;
	return o->run_n == o->run_cap ? run_write(o) : SIEVE_OK;
}

/* ---------------- the merge ---------------- */

static int state_write(struct offline *o, uint64_t gen, uint64_t count)
{
	uint8_t b[M_SIZE];

	le_put64(b + 8, gen);
	le_put64(b + 16, count);
	return sieve_snapshot_write(&o->base, "STATE", M_MAGIC, b, sizeof b, NULL, 0);
}

/* The runs being merged: each run's reader and its smallest pair not yet
 * taken. */
struct runs {
	unsigned n;
	int fd[RUNS_PER_MERGE + 1];
	struct rd rd[RUNS_PER_MERGE + 1];
	struct pair head[RUNS_PER_MERGE + 1];
	bool live[RUNS_PER_MERGE + 1];
};

/* Reads run i's next pair into its head; false at its end (or a read
 * error: rd.eof unset). */
static bool runs_advance(struct runs *rs, unsigned i)
{
	struct rd *r = &rs->rd[i];

	if (rd_need(r, sizeof(struct pair)) < (ssize_t)sizeof(struct pair))
		return rs->live[i] = false;
	memcpy(&rs->head[i], r->buf + r->pos, sizeof rs->head[i]);
	r->pos += sizeof(struct pair);
	return rs->live[i] = true;
}

static int runs_open(struct offline *o, struct runs *rs)
{
	char p[4096];

	rs->n = o->nruns;
	for (unsigned i = 0; i < rs->n; i++)
		rs->fd[i] = -1;
	for (unsigned i = 0; i < rs->n; i++) {
		if (path_of(o, p, sizeof p, "R", i))
			return sieve_fail(&o->base, SIEVE_EINVAL, "%s: path too long", o->base.dir);
		rs->fd[i] = open(p, O_RDONLY | O_CLOEXEC);
		if (rs->fd[i] < 0)
			return sieve_fail(&o->base, SIEVE_EIO, "%s: %s", p, strerror(errno));
		rd_init(&rs->rd[i], rs->fd[i], o->rbuf[i], o->io);
		runs_advance(rs, i);
	}
	return SIEVE_OK;
}

static void runs_close(struct runs *rs)
{
	for (unsigned i = 0; i < rs->n; i++)
		if (rs->fd[i] >= 0)
			close(rs->fd[i]);
}

/* Takes the smallest (signature, position) of the runs into *cur: 1, 0 at
 * their end, or an error. */
static int runs_next(struct offline *o, struct runs *rs, struct pair *cur)
{
	int best = -1;

	for (unsigned i = 0; i < rs->n; i++)
		if (rs->live[i] && (best < 0 || pair_cmp(&rs->head[i], &rs->head[best]) < 0))
			best = (int)i;
	if (best < 0)
		return 0;
	*cur = rs->head[best];
	if (!runs_advance(rs, (unsigned)best) && !rs->rd[best].eof)
		return -sieve_fail(&o->base, SIEVE_EIO, "%s/R.%d: read error", o->base.dir, best);
	return 1;
}

/* Z.<gen> read in order, its payload hashed. */
struct zin {
	int fd;
	struct rd rd;
	uint64_t left, sum, cur;
	XXH64_state_t *xs;
	bool have;
};

/* Opens Z.<gen> and checks its header; z->fd = -1 when gen is 0 (no Z yet). */
static int zin_open(struct offline *o, struct zin *z)
{
	char p[4096];
	uint8_t h[Z_HDR];

	z->fd = -1;
	z->left = o->z_count;
	if (o->gen == 0)
		return SIEVE_OK;
	if (path_of(o, p, sizeof p, "Z", (long long)o->gen))
		return sieve_fail(&o->base, SIEVE_EINVAL, "%s: path too long", o->base.dir);
	z->fd = open(p, O_RDONLY | O_CLOEXEC);
	if (z->fd < 0)
		return sieve_fail(&o->base, SIEVE_ECORRUPT,
		                  "%s: committed signature file missing: %s", p, strerror(errno));
	if (read(z->fd, h, sizeof h) != Z_HDR || memcmp(h, Z_MAGIC, 8) != 0 ||
	    le_get64(h + 24) != XXH64(h, 24, 0) || le_get64(h + 8) != o->z_count)
		return sieve_fail(&o->base, SIEVE_ECORRUPT, "%s: truncated or corrupt header", p);
	z->sum = le_get64(h + 16);
	rd_init(&z->rd, z->fd, o->zin, o->io);
	return SIEVE_OK;
}

/* Reads Z's next signature into z->cur (z->have false at its end). */
static void zin_next(struct zin *z)
{
	z->have = false;
	if (z->fd >= 0 && z->left > 0 && rd_need(&z->rd, 8) >= 8) {
		XXH64_update(z->xs, z->rd.buf + z->rd.pos, 8);
		z->cur = le_get64(z->rd.buf + z->rd.pos);
		z->rd.pos += 8;
		z->left--;
		z->have = true;
	}
}

/* Z' being written: its payload buffered, hashed as drained. */
struct zout {
	int fd;
	uint8_t *buf;
	size_t cap, len;
	XXH64_state_t *xs;
	uint64_t count;
	bool ioerr;
};

static void zout_drain(struct zout *w)
{
	XXH64_update(w->xs, w->buf, w->len);
	if (fileio_write_all(w->fd, w->buf, w->len) != 0)
		w->ioerr = true;
	w->len = 0;
}

static void zout_put(struct zout *w, uint64_t sig)
{
	if (w->len + 8 > w->cap)
		zout_drain(w);
	le_put64(w->buf + w->len, sig);
	w->len += 8;
	w->count++;
}

/* The merge proper: the runs' distinct signatures against Z into Z',
 * marking the positions of those not in Z. */
static int merge_streams(struct offline *o, struct runs *rs, struct zin *z, struct zout *w)
{
	struct pair cur;
	uint64_t last = 0;
	bool have_last = false;
	int g;

	zin_next(z);
	while ((g = runs_next(o, rs, &cur)) == 1) {
		if (have_last && cur.sig == last)
			continue; /* a later copy: the first position came first */
		have_last = true;
		last = cur.sig;
		while (z->have && z->cur < cur.sig) {
			zout_put(w, z->cur);
			zin_next(z);
		}
		if (z->have && z->cur == cur.sig)
			continue; /* seen in an earlier merge */
		if (cur.pos >= o->a_count)
			return sieve_fail(&o->base, SIEVE_ECORRUPT, "%s/R.*: position out of range",
			                  o->base.dir);
		o->marks[cur.pos >> 6] |= 1ull << (cur.pos & 63);
		zout_put(w, cur.sig);
	}
	if (g < 0)
		return -g;
	while (z->have) {
		zout_put(w, z->cur);
		zin_next(z);
	}
	if (z->fd >= 0 && (z->left != 0 || XXH64_digest(z->xs) != z->sum))
		return sieve_fail(&o->base, SIEVE_ECORRUPT, "%s/Z.%llu: truncated or corrupt",
		                  o->base.dir, (unsigned long long)o->gen);
	return SIEVE_OK;
}

/* Finishes Z' (payload, header, sync) and commits it: STATE names it, the
 * old Z goes. */
static int merge_finish(struct offline *o, struct zout *w, const char *zp)
{
	char p[4096];
	uint8_t h[Z_HDR];
	int rc;

	zout_drain(w);
	memcpy(h, Z_MAGIC, 8);
	le_put64(h + 8, w->count);
	le_put64(h + 16, XXH64_digest(w->xs));
	le_put64(h + 24, XXH64(h, 24, 0));
	if (w->ioerr || fileio_pwrite_all(w->fd, h, sizeof h, 0) != 0 ||
	    sieve_datasync(&o->base.cfg, w->fd) != 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s: write: %s", zp, strerror(errno));
	sieve_crash_point();
	rc = state_write(o, o->gen + 1, w->count);
	if (rc != SIEVE_OK)
		return rc;
	sieve_crash_point();
	if (o->gen > 0 && path_of(o, p, sizeof p, "Z", (long long)o->gen) == 0)
		unlink(p);
	o->gen++;
	o->z_count = w->count;
	o->z_bytes = Z_HDR + 8 * w->count;
	return SIEVE_OK;
}

/* Merges the runs with Z into Z.<gen+1>, marking the new positions; commits. */
static int merge_commit(struct offline *o)
{
	struct runs rs;
	struct zin z = { .fd = -1 };
	struct zout w = { .fd = -1, .buf = o->zout, .cap = o->io };
	char zp[4096] = "";
	uint8_t h[Z_HDR];
	int rc;

	memset(o->marks, 0, (size_t)((o->a_max + 63) / 64) * 8);
	rs.n = 0;
	w.xs = XXH64_createState();
	z.xs = XXH64_createState();
	if (w.xs == NULL || z.xs == NULL) {
		rc = sieve_fail(&o->base, SIEVE_ENOMEM, "out of memory");
		goto out;
	}
	XXH64_reset(w.xs, 0);
	XXH64_reset(z.xs, 0);
	rc = runs_open(o, &rs);
	if (rc == SIEVE_OK)
		rc = zin_open(o, &z);
	if (rc == SIEVE_OK && path_of(o, zp, sizeof zp, "Z", (long long)(o->gen + 1)))
		rc = sieve_fail(&o->base, SIEVE_EINVAL, "%s: path too long", o->base.dir);
	if (rc != SIEVE_OK)
		goto out;
	w.fd = open(zp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	memset(h, 0, sizeof h);
	if (w.fd < 0 || fileio_write_all(w.fd, h, sizeof h) != 0) {
		rc = sieve_fail(&o->base, SIEVE_EIO, "%s: %s", zp, strerror(errno));
		goto out;
	}
	rc = merge_streams(o, &rs, &z, &w);
	if (rc == SIEVE_OK)
		rc = merge_finish(o, &w, zp);
out:
	runs_close(&rs);
	if (z.fd >= 0)
		close(z.fd);
	if (w.fd >= 0)
		close(w.fd);
	if (rc != SIEVE_OK && zp[0] != '\0')
		unlink(zp);
	XXH64_freeState(w.xs);
	XXH64_freeState(z.xs);
	return rc;
}

/* Reads A from its start, calling fn(o, pos, url, len, sig) for each of
 * its first limit records; a torn or damaged record ends A. *count: the
 * records read, *good: the bytes of whole records. SIEVE_OK, fn's error,
 * or SIEVE_EIO (a read error). */
static int a_read(struct offline *o, uint64_t limit,
                  int (*fn)(struct offline *o, uint64_t pos, const char *url, size_t len,
                            uint64_t sig),
                  uint64_t *count, uint64_t *good)
{
	struct rd r;
	const char *u;
	size_t ul;
	uint64_t sig;
	int g = 1, rc = SIEVE_OK;

	*count = *good = 0;
	if (lseek(o->a_fd, 0, SEEK_SET) < 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: seek: %s", o->base.dir,
		                  strerror(errno));
	rd_init(&r, o->a_fd, o->rbuf[0], o->io);
	while (rc == SIEVE_OK && *count < limit &&
	       (g = rec_take(&r, o->base.cfg.max_url_len, 0, &u, &ul, &sig)) == 1) {
		rc = fn != NULL ? fn(o, *count, u, ul, sig) : SIEVE_OK;
		*count += rc == SIEVE_OK;
	}
	*good = r.off;
	if (g == -2)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: read error", o->base.dir);
	return rc;
}

static int emit_one(struct offline *o, uint64_t pos, const char *url, size_t len, uint64_t sig)
{
	(void)sig;
	if (o->marks[pos >> 6] >> (pos & 63) & 1) {
		sieve_crash_point();
		sieve_emit(&o->base, url, len);
	}
	return SIEVE_OK;
}

/* Scans A in order and emits the marked records; then empties A and the runs. */
static int emit_marked(struct offline *o)
{
	char p[4096];
	uint64_t n, good;
	int rc = a_read(o, o->a_count, emit_one, &n, &good);

	if (rc != SIEVE_OK)
		return rc;
	if (n != o->a_count)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: cannot read back record %llu",
		                  o->base.dir, (unsigned long long)n);
	sieve_crash_point();
	if (ftruncate(o->a_fd, 0) != 0 || lseek(o->a_fd, 0, SEEK_SET) < 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: truncate: %s", o->base.dir,
		                  strerror(errno));
	sieve_crash_point();
	for (unsigned i = 0; i < o->nruns; i++)
		if (path_of(o, p, sizeof p, "R", i) == 0)
			unlink(p);
	o->nruns = 0;
	o->a_count = 0;
	return SIEVE_OK;
}

/* The merge of 2.4: runs + Z -> Z', commit, emit in discovery order (the
 * flush hook). */
static int merge_locked(struct sieve_base *b)
{
	struct offline *o = (struct offline *)b;
	uint64_t t0 = monotonic_us(), dt;
	int rc;

	if (o->a_count == 0)
		return SIEVE_OK;
	rc = a_drain(o);
	if (rc == SIEVE_OK)
		rc = run_write(o);
	if (rc == SIEVE_OK)
		rc = merge_commit(o);
	if (rc == SIEVE_OK)
		rc = emit_marked(o);
	if (rc != SIEVE_OK) {
		if (b->err == 0)
			b->err = rc;
		return rc;
	}
	dt = (monotonic_us() - t0) * 1000;
	b->st.flushes++;
	b->st.flush_ns_total += dt;
	if (dt > b->st.flush_ns_max)
		b->st.flush_ns_max = dt;
	return SIEVE_OK;
}

/* ---------------- operations ---------------- */

static int off_add_locked(struct sieve_base *b, const char *url, size_t len)
{
	struct offline *o = (struct offline *)b;
	uint64_t sig = XXH3_64bits(url, len);
	int rc = SIEVE_OK;

	b->st.added++;
	if (o->alen + REC_HDR + len > o->io)
		rc = a_drain(o);
	if (rc == SIEVE_OK) {
		o->alen += rec_put(o->abuf + o->alen, url, len, sig, 0);
		rc = run_push(o, sig, o->a_count);
		o->a_count++;
	}
	if (rc != SIEVE_OK) {
		if (b->err == 0)
			b->err = rc;
		return rc;
	}
	if (o->a_count == o->a_max)
		return merge_locked(b);
	return SIEVE_OK;
}

/* Makes A durable (the sync hook). */
static int off_sync_locked(struct sieve_base *b)
{
	struct offline *o = (struct offline *)b;
	int rc = a_drain(o);

	if (rc == SIEVE_OK && sieve_datasync(&b->cfg, o->a_fd) != 0)
		rc = sieve_fail(b, SIEVE_EIO, "%s/A: fdatasync: %s", b->dir, strerror(errno));
	return rc;
}

/* After a merge A is empty and the runs gone: the state is STATE (replaced
 * by rename) and Z.<gen> (written once, removed when superseded), both
 * linkable. */
static int off_checkpoint(void *impl, const char *dir)
{
	struct offline *o = impl;
	struct sieve_base *b = &o->base;
	char name[64];
	int rc;

	pthread_mutex_lock(&b->mu);
	rc = b->err != 0 ? SIEVE_ECLOSED : merge_locked(b);
	if (rc == SIEVE_OK)
		rc = sieve_base_sync_locked(b);
	snprintf(name, sizeof name, "Z.%llu", (unsigned long long)o->gen);
	if (rc == SIEVE_OK && o->gen > 0 &&
	    (sieve_checkpoint_file(b->dir, dir, "STATE", SIEVE_WHOLE_FILE) != 0 ||
	     sieve_checkpoint_file(b->dir, dir, name, SIEVE_WHOLE_FILE) != 0))
		rc = sieve_fail(b, SIEVE_EIO, "checkpoint of %s into %s: %s", b->dir, dir,
		                strerror(errno));
	pthread_mutex_unlock(&b->mu);
	return rc;
}

static void off_destroy(struct sieve_base *b)
{
	struct offline *o = (struct offline *)b;

	if (o->a_fd >= 0)
		close(o->a_fd);
	sieve_base_release(b);
	free(o->bufs);
	free(o->run);
	free(o->marks);
	free(o);
}

static int off_close_locked(struct sieve_base *b)
{
	return b->err != 0 ? b->err : merge_locked(b);
}

static void off_stats_locked(struct sieve_base *b, struct sieve_stats *out)
{
	struct offline *o = (struct offline *)b;

	out->z_count = o->z_count;
	out->z_bytes = o->z_bytes;
	out->buffer_urls = o->run_cap;
}

/* Removes a run, or a Z not committed (want: the committed one's name). */
static int leftover_remove(void *want, const char *path, const char *name)
{
	if ((strncmp(name, "R.", 2) == 0 || strncmp(name, "Z.", 2) == 0) && strcmp(name, want) != 0)
		unlink(path);
	return 0;
}

/* Reads STATE; removes files a crash may have left (runs, uncommitted Z). */
static int state_load(struct offline *o)
{
	char want[64];
	uint8_t b[M_SIZE];
	bool present;
	int rc = sieve_snapshot_read(&o->base, "STATE", M_MAGIC, b, sizeof b, &present);

	if (rc != SIEVE_OK)
		return rc;
	if (present) {
		o->gen = le_get64(b + 8);
		o->z_count = le_get64(b + 16);
		o->z_bytes = o->gen > 0 ? Z_HDR + 8 * o->z_count : 0;
	}
	snprintf(want, sizeof want, "Z.%llu", (unsigned long long)o->gen);
	if (sieve_dir_each(o->base.dir, leftover_remove, want) != 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s: %s", o->base.dir, strerror(errno));
	return SIEVE_OK;
}

static int push_one(struct offline *o, uint64_t pos, const char *url, size_t len, uint64_t sig)
{
	int rc = run_push(o, sig, pos);

	(void)url;
	(void)len;
	o->a_count = pos + 1;
	return rc;
}

/* Makes room for the runs and bitmap of an A of count records: one
 * written under a smaller configuration may hold more than a_max. */
static int a_room(struct offline *o, uint64_t count)
{
	size_t cap = (size_t)((count + RUNS_PER_MERGE - 1) / RUNS_PER_MERGE);
	struct pair *run;
	uint64_t *marks;

	if (count <= o->a_max)
		return SIEVE_OK;
	run = realloc(o->run, cap * sizeof *run);
	if (run == NULL)
		return sieve_fail(&o->base, SIEVE_ENOMEM, "out of memory recovering %s/A",
		                  o->base.dir);
	o->run = run;
	marks = realloc(o->marks, (size_t)((count + 63) / 64) * 8);
	if (marks == NULL)
		return sieve_fail(&o->base, SIEVE_ENOMEM, "out of memory recovering %s/A",
		                  o->base.dir);
	o->marks = marks;
	o->run_cap = cap;
	o->a_max = (uint64_t)cap * RUNS_PER_MERGE;
	return SIEVE_OK;
}

/* Re-reads an A left by a crash, cutting a torn tail, and rebuilds its
 * runs (the runs and the bitmap enlarged for this one merge if needed). */
static int a_recover(struct offline *o)
{
	uint64_t count, good, n;
	int rc = a_read(o, UINT64_MAX, NULL, &count, &good);

	if (rc != SIEVE_OK)
		return rc;
	if (ftruncate(o->a_fd, (off_t)good) != 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: %s", o->base.dir, strerror(errno));
	rc = a_room(o, count);
	if (rc == SIEVE_OK)
		rc = a_read(o, count, push_one, &n, &good);
	if (rc != SIEVE_OK)
		return rc;
	if (n != count)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: changed while recovering",
		                  o->base.dir);
	if (lseek(o->a_fd, 0, SEEK_END) < 0)
		return sieve_fail(&o->base, SIEVE_EIO, "%s/A: %s", o->base.dir, strerror(errno));
	return SIEVE_OK;
}

/* Sizes the buffers from the budget and allocates them. */
static int off_alloc(struct offline *o)
{
	const struct sieve_config *cfg = &o->base.cfg;
	size_t mem = cfg->memory ? cfg->memory : (size_t)64 << 20, fixed;

	o->io = mem / 64;
	if (o->io > ((size_t)1 << 20))
		o->io = (size_t)1 << 20;
	if (o->io < ((size_t)16 << 10))
		o->io = (size_t)16 << 10;
	if (o->io < cfg->max_url_len + 2 * REC_HDR)
		o->io = cfg->max_url_len + 2 * REC_HDR;
	fixed = (RUNS_PER_MERGE + 4) * o->io;
	if (fixed + 64 * 17 > mem)
		return sieve_fail(&o->base, SIEVE_EINVAL,
		                  "memory %zu too small (needs at least %zu for I/O buffers)", mem,
		                  fixed + 64 * 17);
	/* per run slot: a 16-byte pair, and RUNS_PER_MERGE bits of the bitmap */
	o->run_cap = (mem - fixed) / (16 + RUNS_PER_MERGE / 8);
	if (cfg->buffer_urls > 0)
		o->run_cap = cfg->buffer_urls;
	o->a_max = (uint64_t)o->run_cap * RUNS_PER_MERGE;
	o->run = malloc(o->run_cap * sizeof *o->run);
	o->marks = malloc((size_t)((o->a_max + 63) / 64) * 8);
	o->bufs = malloc((RUNS_PER_MERGE + 4) * o->io);
	if (o->run == NULL || o->marks == NULL || o->bufs == NULL)
		return sieve_fail(&o->base, SIEVE_ENOMEM, "out of memory");
	for (int i = 0; i <= RUNS_PER_MERGE; i++)
		o->rbuf[i] = o->bufs + i * o->io;
	o->abuf = o->bufs + (RUNS_PER_MERGE + 1) * o->io;
	o->zin = o->abuf + o->io;
	o->zout = o->zin + o->io;
	return SIEVE_OK;
}

/* Allocates, locks, loads STATE and merges an A left by a crash. */
static int off_start(struct sieve_base *b)
{
	struct offline *o = (struct offline *)b;
	char p[4096];
	size_t cap;
	uint64_t amax;
	int rc;

	o->a_fd = -1;
	sieve_crash_arm();
	if (b->cfg.max_url_len > (1u << 30))
		return sieve_fail(b, SIEVE_EINVAL, "max_url_len too large");
	rc = off_alloc(o);
	if (rc == SIEVE_OK)
		rc = sieve_base_lock(b);
	if (rc == SIEVE_OK)
		rc = state_load(o);
	if (rc == SIEVE_OK && path_of(o, p, sizeof p, "A", -1))
		rc = sieve_fail(b, SIEVE_EINVAL, "%s: path too long", b->dir);
	if (rc != SIEVE_OK)
		return rc;
	o->a_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (o->a_fd < 0 || (!b->cfg.no_fsync && fileio_fsync_dir(b->dir) != 0))
		return sieve_fail(b, SIEVE_EIO, "%s: %s", p, strerror(errno));
	cap = o->run_cap;
	amax = o->a_max;
	rc = a_recover(o);
	if (rc == SIEVE_OK)
		rc = merge_locked(b);
	o->run_cap = cap; /* the arrays may stay larger */
	o->a_max = amax;
	return rc;
}

/* URLs are decided by the merges: when A is full, at a flush, at close. */
SIEVE_BASE_OPS(sieve_offline_ops, "offline", struct offline, off_checkpoint, .start = off_start,
               .destroy = off_destroy, .add_locked = off_add_locked, .flush_locked = merge_locked,
               .sync_locked = off_sync_locked, .close_locked = off_close_locked,
               .stats_locked = off_stats_locked);
