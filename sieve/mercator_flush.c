/*
 * mercator_flush.c: a flush of the Mercator sieve (see mercator.h): the
 * segment's layout, the parts' merges on their threads, the output log,
 * the commit of a new generation (the Z parts renamed, MANIFEST
 * replaced), the emission; and MANIFEST itself.
 */
#include "sieve/mercator.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/base/byteorder.h"
#include "frontier/base/clock.h"
#include "frontier/base/fileio.h"

int merc_z_path(const struct merc *m, char *out, size_t len, uint64_t gen, unsigned j, bool tmp)
{
	if (tmp)
		return sieve_path(out, len, m->base.dir, "Z.tmp.%u", j);
	return sieve_path(out, len, m->base.dir, "Z.%llu.%u", (unsigned long long)gen, j);
}

/* MANIFEST: {magic "MSIEVEM4", u64 gen, z_count, z_bytes, first_seg,
 * log_len, sync_seg, sync_len, nruns, runs[Z_RUNS_MAX] (the first nruns
 * used, the rest 0), XXH64 of the bytes before}. Written to MANIFEST.tmp,
 * synced, renamed, the folder synced. */
int merc_manifest_write(struct merc *m, const struct mstate *s)
{
	char tmp[4096], fin[4096];
	uint8_t b[M_SIZE];
	int fd = -1, rc = -1;

	if (sieve_path(tmp, sizeof tmp, m->base.dir, "MANIFEST.tmp") ||
	    sieve_path(fin, sizeof fin, m->base.dir, "MANIFEST"))
		return -1;
	memset(b, 0, sizeof b);
	memcpy(b, M_MAGIC, 8);
	le_put64(b + 8, s->gen);
	le_put64(b + 16, s->z_count);
	le_put64(b + 24, s->z_bytes);
	le_put64(b + 32, s->first_seg);
	le_put64(b + 40, s->log_len);
	le_put64(b + 48, s->sync_seg);
	le_put64(b + 56, s->sync_len);
	le_put64(b + 64, s->nruns);
	for (unsigned i = 0; i < s->nruns; i++)
		le_put64(b + 72 + 8 * i, s->runs[i]);
	le_put64(b + M_SIZE - 8, XXH64(b, M_SIZE - 8, 0));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	if (sieve_write_at(&m->base.cfg, fd, b, sizeof b, 0) != 0 ||
	    sieve_datasync(&m->base.cfg, fd) != 0)
		goto out;
	close(fd);
	fd = -1;
	sieve_crash_point();
	if (rename(tmp, fin) != 0)
		goto out;
	sieve_crash_point();
	if (!m->base.cfg.no_fsync && fileio_fsync_dir(m->base.dir) != 0)
		goto out;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* The runs of a manifest read: ascending generations, none past gen, at
 * least one once a flush committed (each writes one). */
static bool runs_valid(const struct mstate *s)
{
	if (s->nruns > Z_RUNS_MAX || (s->gen > 0) != (s->nruns > 0))
		return false;
	for (unsigned i = 0; i < s->nruns; i++)
		if (s->runs[i] == 0 || s->runs[i] > s->gen ||
		    (i > 0 && s->runs[i] <= s->runs[i - 1]))
			return false;
	return true;
}

/* (A manifest "MSIEVEM3", 72 bytes, names a Z in one run, Z.<gen>.*.) */
int merc_manifest_read(const char *dir, struct mstate *s)
{
	char fin[4096];
	uint8_t b[M_SIZE + 1];
	int fd;
	ssize_t g;
	bool one_run;

	if (sieve_path(fin, sizeof fin, dir, "MANIFEST"))
		return -2;
	fd = open(fin, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 1 : -2;
	g = read(fd, b, sizeof b);
	close(fd);
	if (g < 0)
		return -2;
	one_run = g == M_SIZE_ONE_RUN && memcmp(b, M_MAGIC_ONE_RUN, 8) == 0;
	if (!one_run && (g != M_SIZE || memcmp(b, M_MAGIC, 8) != 0 ||
	                 le_get64(b + M_SIZE - 8) != XXH64(b, M_SIZE - 8, 0)))
		return -1;
	if (one_run && le_get64(b + 64) != XXH64(b, 64, 0))
		return -1;
	memset(s, 0, sizeof *s);
	s->gen = le_get64(b + 8);
	s->z_count = le_get64(b + 16);
	s->z_bytes = le_get64(b + 24);
	s->first_seg = le_get64(b + 32);
	s->log_len = le_get64(b + 40);
	s->sync_seg = le_get64(b + 48);
	s->sync_len = le_get64(b + 56);
	if (one_run) {
		s->nruns = s->gen > 0;
		s->runs[0] = s->gen;
	} else {
		uint64_t n = le_get64(b + 64);
		if (n > Z_RUNS_MAX)
			return -1;
		s->nruns = (unsigned)n;
		for (unsigned i = 0; i < s->nruns; i++)
			s->runs[i] = le_get64(b + 72 + 8 * i);
	}
	return runs_valid(s) ? 0 : -1;
}

/* Opens part j of the run of generation gen (the file Z.<gen>.<j>) and
 * checks its header. The caller checks the parts against the manifest's
 * totals (merc_z_open_all). */
static int z_open(struct merc *m, uint64_t gen, unsigned j, struct zhead *zh)
{
	char p[4096];
	uint8_t h[Z_HDR];
	struct stat sb;

	memset(zh, 0, sizeof *zh);
	zh->fd = -1;
	if (merc_z_path(m, p, sizeof p, gen, j, false) != 0)
		return sieve_fatal(&m->base, SIEVE_EINVAL, "%s: path too long", m->base.dir);
	zh->fd = open(p, O_RDONLY | O_CLOEXEC);
	if (zh->fd < 0)
		return sieve_fatal(&m->base, errno == ENOENT ? SIEVE_ECORRUPT : SIEVE_EIO,
		                   "%s: cannot open: %s", p, strerror(errno));
	if (fstat(zh->fd, &sb) != 0 || pread(zh->fd, h, Z_HDR, 0) != Z_HDR)
		goto bad;
	if (memcmp(h, Z_MAGIC, 8) != 0)
		goto bad;
	zh->count = le_get64(h + 8);
	zh->lbits = le_get32(h + 16);
	zh->plen = le_get64(h + 24);
	zh->psum = le_get64(h + 32);
	/* each signature takes at least its L low bits and one high bit */
	if (zh->lbits > Z_LMAX || zh->lbits % 8 != 0 || le_get32(h + 20) != Z_BLOCK ||
	    le_get32(h + 40) != j || le_get32(h + 44) != Z_PARTS ||
	    (uint64_t)sb.st_size != Z_HDR + zh->plen || zh->count > zh->plen * 8 ||
	    zh->plen / (zh->lbits + 1) < zh->count / 8)
		goto bad;
	if (lseek(zh->fd, Z_HDR, SEEK_SET) != Z_HDR)
		goto bad;
	return SIEVE_OK;
bad:
	close(zh->fd);
	zh->fd = -1;
	return sieve_fatal(&m->base, SIEVE_ECORRUPT,
	                   "%s: truncated or corrupt signature file (bad header or size)", p);
}

void merc_z_close_all(struct zhead *zh)
{
	for (unsigned i = 0; i < Z_RUNS_MAX * Z_PARTS; i++) {
		if (zh[i].fd >= 0)
			close(zh[i].fd);
		zh[i].fd = -1;
	}
}

/* (A part of another run would not add up.) */
int merc_z_open_all(struct merc *m, const struct mstate *s, struct zhead *zh)
{
	uint64_t count = 0, bytes = 0;
	int rc = SIEVE_OK;

	for (unsigned i = 0; i < Z_RUNS_MAX * Z_PARTS; i++)
		zh[i].fd = -1;
	for (unsigned x = 0; x < s->nruns && rc == SIEVE_OK; x++)
		for (unsigned j = 0; j < Z_PARTS && rc == SIEVE_OK; j++) {
			struct zhead *h = &zh[x * Z_PARTS + j];
			rc = z_open(m, s->runs[x], j, h);
			count += h->count;
			bytes += h->fd >= 0 ? Z_HDR + h->plen : 0;
		}
	if (rc == SIEVE_OK && (count != s->z_count || bytes != s->z_bytes))
		rc = sieve_fatal(&m->base, SIEVE_ECORRUPT,
		                 "%s/Z.*: the runs' signature files hold %llu signatures in %llu "
		                 "bytes, the manifest says %llu in %llu",
		                 m->base.dir, (unsigned long long)count, (unsigned long long)bytes,
		                 (unsigned long long)s->z_count, (unsigned long long)s->z_bytes);
	if (rc != SIEVE_OK)
		merc_z_close_all(zh);
	return rc;
}

/* The binary counter's rule: the newest run goes in while it holds at most
 * what the new run holds so far (so runs of like sizes meet once, and a
 * signature is rewritten about log2(flushes) times), and while the count
 * would pass Z_RUNS_MAX. */
unsigned merc_runs_to_merge(const uint64_t *count, unsigned nruns, uint64_t n)
{
	uint64_t acc = n;
	unsigned k = 0;

	while (k < nruns && (count[nruns - 1 - k] <= acc || nruns - k + 1 > Z_RUNS_MAX)) {
		acc += count[nruns - 1 - k];
		k++;
	}
	return k;
}

/* A scan of a segment's records in order, picking the marked ones. */
struct scan {
	struct merc *m;
	uint32_t *bnext;
	const uint64_t *marks;
	int lfd;           /* EMITTED, or -1: the emit callback */
	uint64_t *log_len; /* (lfd >= 0) EMITTED's length, updated */
	uint64_t *emitted; /* (lfd < 0) counted */
	size_t lb;         /* bytes in m->log_buf */
	size_t idx;        /* records taken */
};

/* A record read ahead: its mark's word is being fetched. */
struct ahead {
	const char *u;
	size_t ul;
	uint64_t sig;
};

#define SCAN_AHEAD 16 /* records read ahead of their marks (a power of 2) */

/* The record's position (its bucket's next), its mark, and its pick. */
static int scan_take(struct scan *sc, const struct ahead *a)
{
	struct merc *m = sc->m;
	uint32_t pos;

	if (!layout_next(m->bstart, sc->bnext, m->pbits, a->sig, &pos))
		return -1; /* more records of a bucket than its signatures counted */
	sc->idx++;
	if (!(sc->marks[pos / 64] >> (pos % 64) & 1))
		return 0;
	if (sc->lfd >= 0) {
		if (sc->lb + REC_HDR + a->ul > m->io) {
			if (sieve_write_at(&m->base.cfg, sc->lfd, m->log_buf, sc->lb,
			                   *sc->log_len) != 0)
				return -2;
			*sc->log_len += sc->lb;
			sc->lb = 0;
		}
		sc->lb += rec_put(m->log_buf + sc->lb, a->u, a->ul, a->sig, 0);
	} else {
		if (m->base.emit != NULL)
			m->base.emit(m->base.emit_ctx, a->u, a->ul);
		(*sc->emitted)++;
		sieve_crash_point();
	}
	return 0;
}

/* Scans the n records of A.<seg> (afd, named ap) in order and emits the
 * marked ones: each record's signature gives its bucket, the bucket's
 * count of records so far its position in the segment's layout, and that
 * position's mark says whether it is the first record of a fresh
 * signature (the merge set the marks, and resolved the late ones: see
 * slice_late). Picked URLs go to EMITTED (lfd >= 0, appended at
 * *log_len) or to the emit callback (lfd < 0). The marks of 2^pbits
 * buckets, read at random, mostly miss the caches: records whole in the
 * reader's buffer are read SCAN_AHEAD ahead of their marks, whose words
 * are fetched meanwhile (a bucket's next position can only have moved on
 * by the records between, rarely out of the word); the buffer is refilled
 * only with none ahead (the refill moves its bytes). The records are not
 * hashed again (an eighth of the flush thread's time): this process wrote
 * them, or its replay checked them, just before; one out of place still
 * fails its bucket's count or the segment's. */
static int a_scan(struct merc *m, int afd, const char *ap, uint64_t mask, size_t n, int lfd,
                  uint64_t *log_len, uint64_t *emitted)
{
	const unsigned p = m->pbits;
	const size_t maxlen = m->base.cfg.max_url_len;
	struct scan sc = { m, m->bnext, m->marks, lfd, log_len, emitted, 0, 0 };
	struct ahead ring[SCAN_AHEAD];
	size_t head = 0, tail = 0, read = 0; /* ring[tail..head) ahead */
	struct rd r;
	int g = 1, t = 0;

	if (lseek(afd, 0, SEEK_SET) != 0)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s: %s", ap, strerror(errno));
	memcpy(sc.bnext, m->bstart, ((size_t)1 << p) * sizeof *sc.bnext);
	rd_init(&r, afd, m->scan_buf, m->io);
	while (t == 0 && (read < n || head != tail)) {
		struct ahead *a = &ring[head % SCAN_AHEAD];
		if (read < n && rec_take_whole(&r, maxlen, mask, false, &a->u, &a->ul, &a->sig)) {
			uint32_t at = sc.bnext[a->sig >> (64 - p)];
			__builtin_prefetch(&sc.marks[at / 64]);
			head++;
			read++;
			if (head - tail == SCAN_AHEAD)
				t = scan_take(&sc, &ring[tail++ % SCAN_AHEAD]);
		} else if (head != tail) {
			t = scan_take(&sc, &ring[tail++ % SCAN_AHEAD]);
		} else {
			g = rec_next(&r, maxlen, mask, &a->u, &a->ul, &a->sig);
			if (g != 1)
				break;
			read++;
			t = scan_take(&sc, a);
		}
	}
	if (t == -2)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s/EMITTED: write failed: %s", m->base.dir,
		                   strerror(errno));
	if (g == -2)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s: read failed: %s", ap, strerror(errno));
	if (lfd >= 0) {
		if (sieve_write_at(&m->base.cfg, lfd, m->log_buf, sc.lb, *log_len) != 0)
			return sieve_fatal(&m->base, SIEVE_EIO, "%s/EMITTED: write failed: %s",
			                   m->base.dir, strerror(errno));
		*log_len += sc.lb;
	}
	if (t == -1 || sc.idx != n)
		return sieve_fatal(&m->base, SIEVE_ECORRUPT,
		                   "%s: truncated or corrupt URL segment (%zu of %zu records)", ap,
		                   sc.idx, n);
	return SIEVE_OK;
}

/* The segment's layout from its histogram, which must agree with the
 * slices' counts, each within its share of the array (A must hold exactly
 * the n URLs: its records are checked by the scans). */
static int flush_layout(struct merc *m, const struct segment *sg, const char *ap)
{
	if (layout_starts(sg->top, m->pbits, m->bstart) != sg->n)
		return sieve_fatal(&m->base, SIEVE_ECORRUPT,
		                   "%s: %zu records, histogram of the segment differs", ap, sg->n);
	for (unsigned r = 0; r < SLICES; r++) {
		size_t d0 = (size_t)r << (m->pbits - SLICE_BITS), d1 = (size_t)(r + 1)
		                                                       << (m->pbits - SLICE_BITS);
		if (m->bstart[d1] - m->bstart[d0] != sg->s_count[r] ||
		    sg->s_count[r] > m->slice_cap)
			return sieve_fatal(
			        &m->base, SIEVE_ECORRUPT,
			        "%s: slice %u holds %u records, histogram of the segment differs",
			        ap, r, sg->s_count[r]);
	}
	return SIEVE_OK;
}

/* Each part's slices sorted and merged with Z into Z', the parts in
 * parallel (the first on this thread); the first record of each fresh
 * signature marked. Adds the parts' results to *out (fresh, ocount and
 * obytes). */
static int flush_parts(struct merc *m, const struct segment *sg, const char *ap,
                       const struct mstate *s, unsigned nmerge, const struct zhead *zh,
                       struct zpart *out)
{
	struct zpart zp[Z_PARTS];
	bool started[Z_PARTS] = { false };
	int rc = SIEVE_OK;

	memset(m->marks, 0, ((sg->n + 63) / 64) * 8);
	for (unsigned j = 0; j < Z_PARTS; j++) {
		size_t d0 = (size_t)j << (m->pbits - Z_PART_BITS), d1 = (size_t)(j + 1)
		                                                        << (m->pbits - Z_PART_BITS);
		memset(&zp[j], 0, sizeof zp[j]);
		zp[j].m = m;
		zp[j].sg = sg;
		zp[j].ap = ap;
		zp[j].j = j;
		zp[j].nruns = s->nruns;
		zp[j].nmerge = nmerge;
		zp[j].runs = s->runs;
		for (unsigned x = 0; x < s->nruns; x++)
			zp[j].in[x] = zh[x * Z_PARTS + j];
		zp[j].region = m->keys + j * m->slice_cap;
		zp[j].used = m->late_used + j * ((m->slice_cap + 63) / 64);
		zp[j].wlo = m->bstart[d0] / 64;
		zp[j].whi = (m->bstart[d1] + 63) / 64 - 1;
	}
	for (unsigned j = 1; j < Z_PARTS; j++)
		started[j] = pthread_create(&zp[j].thr, NULL, merc_part_merge, &zp[j]) == 0;
	merc_part_merge(&zp[0]);
	for (unsigned j = 1; j < Z_PARTS; j++) {
		if (started[j])
			pthread_join(zp[j].thr, NULL);
		else
			merc_part_merge(&zp[j]); /* no thread: here, after the first */
	}
	for (unsigned j = 0; j < Z_PARTS; j++) {
		if (zp[j].rc != SIEVE_OK && rc == SIEVE_OK)
			rc = sieve_fatal(&m->base, zp[j].rc, "%s", zp[j].msg);
		out->fresh += zp[j].fresh;
		out->ocount += zp[j].ocount;
		out->obytes += zp[j].obytes;
	}
	return rc;
}

/* The durable output log: the segment's fresh URLs appended to EMITTED
 * (from *log_len, updated), synced, before the commit (a reopen cuts what
 * no commit counted). */
static int flush_log(struct merc *m, const struct segment *sg, int afd, const char *ap,
                     uint64_t *log_len)
{
	char lp[4096];
	int lfd, rc;

	if (sieve_path(lp, sizeof lp, m->base.dir, "EMITTED") != 0)
		return sieve_fatal(&m->base, SIEVE_EINVAL, "%s: path too long", m->base.dir);
	lfd = open(lp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (lfd < 0)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s: %s", lp, strerror(errno));
	rc = a_scan(m, afd, ap, sg->mask, sg->n, lfd, log_len, NULL);
	if (rc == SIEVE_OK &&
	    (ftruncate(lfd, (off_t)*log_len) != 0 || sieve_datasync(&m->base.cfg, lfd) != 0))
		rc = sieve_fatal(&m->base, SIEVE_EIO, "%s: %s", lp, strerror(errno));
	close(lfd);
	return rc;
}

/* The commit: the new run's parts become Z.<gen>.<j> (ns->gen), then the
 * manifest names it among the runs (a crash between leaves files of a run
 * no manifest names, removed at reopen), then the files of the runs it
 * merged are removed (a checkpoint's links keep theirs). */
static int flush_commit(struct merc *m, const struct mstate *s, struct mstate *ns, uint64_t seg)
{
	char zt[4096], zn[4096];

	for (unsigned j = 0; j < Z_PARTS; j++) {
		if (merc_z_path(m, zt, sizeof zt, 0, j, true) != 0 ||
		    merc_z_path(m, zn, sizeof zn, ns->gen, j, false) != 0 || rename(zt, zn) != 0)
			return sieve_fatal(&m->base, SIEVE_EIO, "%s: rename failed: %s", zt,
			                   strerror(errno));
		sieve_crash_point();
	}
	pthread_mutex_lock(&m->mmu);
	ns->sync_seg = m->ms.sync_seg;
	ns->sync_len = m->ms.sync_len;
	if (ns->sync_seg <= seg) {
		ns->sync_seg = seg + 1;
		ns->sync_len = 0;
	}
	if (merc_manifest_write(m, ns) != 0) {
		pthread_mutex_unlock(&m->mmu);
		return sieve_fatal(&m->base, SIEVE_EIO, "%s/MANIFEST: write failed: %s",
		                   m->base.dir, strerror(errno));
	}
	m->ms = *ns;
	pthread_mutex_unlock(&m->mmu);
	sieve_crash_point();
	for (unsigned x = ns->nruns - 1; x < s->nruns; x++)
		for (unsigned j = 0; j < Z_PARTS; j++)
			if (merc_z_path(m, zn, sizeof zn, s->runs[x], j, false) == 0)
				unlink(zn);
	return SIEVE_OK;
}

/* Flushes segment sg: A.<id> holds its sg->n URLs in the order added,
 * each record carrying its signature; sg->top is their histogram by
 * bucket, sg->s_count by slice. Commits a new run, then emits. */
static int flush_run(struct merc *m, const struct segment *sg, int afd, const char *ap,
                     uint64_t *emitted)
{
	struct mstate s, ns;
	struct zhead zh[Z_RUNS_MAX * Z_PARTS];
	uint64_t count[Z_RUNS_MAX] = { 0 };
	struct zpart sum;
	unsigned nmerge;
	int rc;

	pthread_mutex_lock(&m->mmu);
	s = m->ms;
	pthread_mutex_unlock(&m->mmu);
	memset(&sum, 0, sizeof sum);
	rc = flush_layout(m, sg, ap);
	if (rc == SIEVE_OK)
		rc = merc_z_open_all(m, &s, zh);
	if (rc != SIEVE_OK)
		return rc;
	for (unsigned x = 0; x < s.nruns; x++)
		for (unsigned j = 0; j < Z_PARTS; j++)
			count[x] += zh[x * Z_PARTS + j].count;
	nmerge = merc_runs_to_merge(count, s.nruns, sg->n);
	rc = flush_parts(m, sg, ap, &s, nmerge, zh, &sum);
	merc_z_close_all(zh);
	if (rc != SIEVE_OK)
		return rc;
	sieve_crash_point();
	ns = s;
	ns.gen = s.gen + 1;
	ns.nruns = s.nruns - nmerge + 1;
	ns.runs[ns.nruns - 1] = ns.gen;
	ns.z_count = sum.ocount;
	ns.z_bytes = sum.obytes;
	for (unsigned x = 0; x + 1 < ns.nruns; x++)
		for (unsigned j = 0; j < Z_PARTS; j++) {
			ns.z_count += zh[x * Z_PARTS + j].count;
			ns.z_bytes += Z_HDR + zh[x * Z_PARTS + j].plen;
		}
	ns.first_seg = sg->id + 1;
	if (m->base.cfg.emit_log && sum.fresh > 0)
		rc = flush_log(m, sg, afd, ap, &ns.log_len);
	if (rc == SIEVE_OK)
		rc = flush_commit(m, &s, &ns, sg->id);
	/* scan A in order, emit the first URL of each fresh signature */
	if (rc == SIEVE_OK && sum.fresh > 0)
		rc = a_scan(m, afd, ap, sg->mask, sg->n, -1, NULL, emitted);
	return rc;
}

int merc_flush_segment(struct merc *m, const struct segment *sg)
{
	char ap[4096];
	int afd = -1, rc = SIEVE_OK;
	uint64_t t0 = monotonic_us(), emitted = 0;

	if (seg_path(m->base.dir, ap, sizeof ap, "A", sg->id, -1) != 0)
		rc = sieve_fatal(&m->base, SIEVE_EINVAL, "%s: path too long", m->base.dir);
	if (rc == SIEVE_OK && sg->n > 0 && (afd = open(ap, O_RDONLY | O_CLOEXEC)) < 0)
		rc = sieve_fatal(&m->base, SIEVE_EIO, "%s: %s", ap, strerror(errno));
	if (rc == SIEVE_OK)
		rc = flush_run(m, sg, afd, ap, &emitted);
	if (rc == SIEVE_OK)
		seg_done(m->base.dir, sg->id, m->recycle); /* (see "Segment files" in mercator.h) */
	if (afd >= 0)
		close(afd);
	uint64_t dt = (monotonic_us() - t0) * 1000;
	pthread_mutex_lock(&m->base.mu);
	m->base.st.emitted += emitted;
	if (rc == SIEVE_OK) {
		m->base.st.flushes++;
		m->base.st.flush_ns_total += dt;
		if (dt > m->base.st.flush_ns_max)
			m->base.st.flush_ns_max = dt;
	}
	pthread_mutex_unlock(&m->base.mu);
	return rc;
}
