/*
 * mercator.c: the Mercator sieve itself (see mercator.h for its parts and
 * sieve.h for the contract and the files): the adds into the current
 * segment, the seals that hand a segment to the flush thread, the flush
 * thread, the operations, and the open with its replay of the segments a
 * crash left.
 */
#include "sieve/sieve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/base/byteorder.h"
#include "sieve/mercator.h"
#include "sieve/sieve_files.h"

/* ---------------- the flush thread ---------------- */

static void *flush_main(void *arg)
{
	struct merc *m = arg;

	pthread_mutex_lock(&m->base.mu);
	for (;;) {
		while (m->pending < 0 && !m->stop)
			pthread_cond_wait(&m->cv_work, &m->base.mu);
		if (m->pending < 0)
			break;
		struct segment *sg = &m->segs[m->pending];
		int rc = SIEVE_OK;
		pthread_mutex_unlock(&m->base.mu);
		if (m->base.err == 0)
			rc = merc_flush_segment(m, sg);
		pthread_mutex_lock(&m->base.mu);
		int afd = sg->a_fd;
		sg->a_fd = -1;
		pthread_mutex_unlock(&m->base.mu);
		/* the last link of a flushed A: freeing its pages takes
		 * milliseconds, so not under the lock the adds wait for */
		if (afd >= 0)
			close(afd);
		pthread_mutex_lock(&m->base.mu);
		if (rc != SIEVE_OK && m->base.err == 0)
			m->base.err = rc;
		sg->n = 0;
		if (rc == SIEVE_OK) {
			m->done_upto = sg->id + 1;
			pthread_mutex_lock(&m->mmu);
			m->z_known = m->ms.z_count;
			pthread_mutex_unlock(&m->mmu);
		}
		m->pending = -1;
		pthread_cond_broadcast(&m->cv_free);
		pthread_cond_broadcast(&m->cv_done);
	}
	pthread_mutex_unlock(&m->base.mu);
	return NULL;
}

/* ---------------- the current segment ---------------- */

/* Writes A's buffered bytes to the current segment (after the cur_len -
 * a_wlen bytes written so far). Caller holds mu. */
static int a_drain(struct merc *m)
{
	struct segment *sg = &m->segs[m->cur];

	if (m->a_wlen == 0)
		return SIEVE_OK;
	if (sieve_write_at(&m->base.cfg, sg->a_fd, m->a_wbuf, m->a_wlen, m->cur_len - m->a_wlen) !=
	    0)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s/A.%llu: write failed: %s", m->base.dir,
		                   (unsigned long long)sg->id, strerror(errno));
	m->a_wlen = 0;
	return SIEVE_OK;
}

/* Opens the segment files for the current segment. Caller holds mu. */
static int seg_start(struct merc *m)
{
	char p[4096];
	struct segment *sg = &m->segs[m->cur];

	sg->id = m->next_seg++;
	sg->n = 0;
	m->cur_len = 0;
	sg->mask = seg_mask(sg->id);
	sg->a_fd = seg_open(m->base.dir, "A", sg->id, -1, p, sizeof p);
	if (sg->a_fd < 0)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s/A.%llu: %s", m->base.dir,
		                   (unsigned long long)sg->id, strerror(errno));
	memset(sg->top, 0, ((size_t)1 << m->pbits) * sizeof *sg->top);
	memset(sg->s_count, 0, sizeof sg->s_count);
	s_files_open(&m->s_w, &sg->s, m->base.dir, sg->id);
	return SIEVE_OK;
}

/* Hands the current segment to the flush thread (waiting for the previous
 * flush) and starts a new one. Caller holds mu. */
static int seal_locked(struct merc *m)
{
	struct segment *sg = &m->segs[m->cur];
	int rc;

	if (m->sealing) {
		/* another thread is sealing this segment: wait; the caller re-checks */
		while (m->sealing && m->base.err == 0)
			pthread_cond_wait(&m->cv_free, &m->base.mu);
		return m->base.err != 0 ? SIEVE_ECLOSED : SIEVE_OK;
	}
	m->sealing = true;
	if (m->pending >= 0)
		m->base.st.add_waits++;
	while (m->pending >= 0 && m->base.err == 0)
		pthread_cond_wait(&m->cv_free, &m->base.mu);
	rc = m->base.err != 0 ? SIEVE_ECLOSED : a_drain(m);
	/* a sealed segment is whole to its end (the replay takes damage in a
	 * synced one for corruption): cut a recycled file's stale tail */
	if (rc == SIEVE_OK && ftruncate(sg->a_fd, (off_t)m->cur_len) != 0)
		rc = sieve_fatal(&m->base, SIEVE_EIO, "%s/A.%llu: truncate failed: %s", m->base.dir,
		                 (unsigned long long)sg->id, strerror(errno));
	if (rc == SIEVE_OK) {
		s_files_seal(&m->s_w, &sg->s);
		m->pending = m->cur;
		m->sealed_upto = sg->id + 1;
		m->cur ^= 1;
		rc = seg_start(m);
		pthread_cond_signal(&m->cv_work);
	}
	m->sealing = false;
	pthread_cond_broadcast(&m->cv_free);
	return rc;
}

/* Whether to hand the current segment to the flush thread before it is
 * full: when the flush thread is idle, the segment holds at least
 * seal_min records and at least Z's signatures / SEAL_Z_RATIO. Without it a
 * large budget's full segment is flushed alone, after the adds that filled
 * it (at the end of the input: all of it, with nothing to overlap); the
 * bound by Z keeps the flushes' rewrites of Z linear in the records (a
 * flush costs O(|Z| + n) = O(n) for n >= |Z| / SEAL_Z_RATIO). Caller holds
 * mu. */
static inline bool seal_early(const struct merc *m, const struct segment *sg)
{
	return m->pending < 0 && !m->sealing && sg->n >= m->seal_min &&
	       sg->n >= m->z_known / SEAL_Z_RATIO;
}

/* Whether segment sg has no room for a record of signature h: it is full,
 * or h's slice is (each slice of a segment must fit a part's share of the
 * flush's array). */
static inline bool seg_full(const struct merc *m, const struct segment *sg, uint64_t h)
{
	return sg->n == m->seg_cap || sg->s_count[slice_of(h)] == m->slice_cap;
}

/* Counts a record of signature h in segment sg (its bucket, its slice) and
 * lists h in the slice's S file. */
static inline void seg_count(struct merc *m, struct segment *sg, uint64_t h)
{
	sg->n++;
	sg->top[h >> (64 - m->pbits)]++;
	sg->s_count[slice_of(h)]++;
	s_files_put(&m->s_w, &sg->s, h);
}

/* ---------------- the operations ---------------- */

/* The cache line of signature h: CACHE_WAYS signatures, most recent first. */
static inline uint64_t *cache_line(const struct merc *m, uint64_t h)
{
	return m->cache + (h & m->cache_mask) * CACHE_WAYS;
}

/* Whether h is in the cache of recent signatures; either way it becomes
 * its line's most recent (a hit moves up, a miss pushes the least recent
 * out). 0 is never cached (it marks an empty way). A line's ways are one
 * cache line: a probe costs the one miss a direct-mapped cache costs, and
 * a signature seen often stays however many others pass through. */
static inline bool cache_seen(struct merc *m, uint64_t h)
{
	uint64_t *c = cache_line(m, h);
	unsigned w = 0;
	bool hit;

	if (h == 0)
		return false;
	while (w < CACHE_WAYS && c[w] != h)
		w++;
	hit = w < CACHE_WAYS;
	if (!hit)
		w = CACHE_WAYS - 1;
	memmove(c + 1, c, w * sizeof *c);
	c[0] = h;
	return hit;
}

/* (Inlined into the batch's loop: the call a URL, with its register saves,
 * was 2% of the sieve's instructions.) */
static inline __attribute__((always_inline)) int add_locked(struct merc *m, const char *url,
                                                            size_t len, uint64_t h)
{
	struct segment *sg;
	int rc;

	/* (A seal waiting for the flush thread leaves the lock: adds made
	 * meanwhile join the segment it seals, as if made before it.) */
	if (m->base.err != 0)
		return SIEVE_ECLOSED;
	m->base.st.added++;
	if (cache_seen(m, h)) {
		m->base.st.cache_drops++;
		return SIEVE_OK;
	}
	/* (a_cap only bounds the disk and the page cache: a replay may read a
	 * longer segment, seg_full is what the flush needs) */
	while (seg_full(m, &m->segs[m->cur], h) || m->cur_len >= m->a_cap) {
		rc = seal_locked(m);
		if (rc != SIEVE_OK)
			return rc;
	}
	sg = &m->segs[m->cur];
	if (m->a_wlen + REC_HDR + len > m->io) {
		rc = a_drain(m);
		if (rc != SIEVE_OK)
			return rc;
	}
	m->a_wlen += rec_put(m->a_wbuf + m->a_wlen, url, len, h, sg->mask);
	m->cur_len += REC_HDR + len;
	seg_count(m, sg, h);
	sieve_crash_point();
	if (seal_early(m, sg))
		return seal_locked(m); /* (the flush thread is idle: no wait) */
	return SIEVE_OK;
}

static int merc_add(void *impl, const char *url, size_t len)
{
	struct merc *m = impl;
	uint64_t h;
	int rc;

	if (len > m->base.cfg.max_url_len)
		return SIEVE_ETOOLONG;
	h = XXH3_64bits(url, len);
	pthread_mutex_lock(&m->base.mu);
	rc = add_locked(m, url, len, h);
	pthread_mutex_unlock(&m->base.mu);
	return rc;
}

static int merc_add_batch(void *impl, const char *const *urls, const size_t *lens, size_t n)
{
	struct merc *m = impl;
	uint64_t hs[64];
	int rc = SIEVE_OK;

	for (size_t i = 0; i < n && rc == SIEVE_OK;) {
		size_t k = n - i < 64 ? n - i : 64;
		for (size_t j = 0; j < k; j++) {
			if (lens[i + j] > m->base.cfg.max_url_len) {
				k = j;
				rc = SIEVE_ETOOLONG;
				break;
			}
			hs[j] = XXH3_64bits(urls[i + j], lens[i + j]);
			/* the cache probe is a random access: start it early (the
			 * array and its mask never change after open) */
			__builtin_prefetch(cache_line(m, hs[j]), 1);
		}
		pthread_mutex_lock(&m->base.mu);
		for (size_t j = 0; j < k; j++) {
			int r = add_locked(m, urls[i + j], lens[i + j], hs[j]);
			if (r != SIEVE_OK) {
				rc = r;
				break;
			}
		}
		pthread_mutex_unlock(&m->base.mu);
		i += k;
	}
	return rc;
}

static int merc_flush(void *impl)
{
	struct merc *m = impl;
	int rc = SIEVE_OK;
	uint64_t target, need;

	pthread_mutex_lock(&m->base.mu);
	need = m->segs[m->cur].n > 0 ? m->segs[m->cur].id + 1 : 0;
	while (rc == SIEVE_OK && m->base.err == 0 && m->sealed_upto < need)
		rc = seal_locked(m);
	target = m->sealed_upto;
	/* Wait for the flush to end, not for its commit: a flush commits
	 * (MANIFEST) before it emits, and the contract is "delivered". */
	while (rc == SIEVE_OK && m->base.err == 0 && m->done_upto < target)
		pthread_cond_wait(&m->cv_done, &m->base.mu);
	if (m->base.err != 0)
		rc = m->base.err;
	pthread_mutex_unlock(&m->base.mu);
	return rc;
}

static int sync_locked(struct merc *m)
{
	const struct segment *cur = &m->segs[m->cur],
	                     *pending = m->pending >= 0 ? &m->segs[m->pending] : NULL;
	struct mstate ns;
	int rc;

	if (m->base.err != 0)
		return SIEVE_ECLOSED;
	rc = a_drain(m);
	if (rc != SIEVE_OK)
		return rc;
	/* (fsync, not fdatasync, for a sealed segment: the seal cut its length) */
	if (sieve_datasync(&m->base.cfg, cur->a_fd) != 0 ||
	    (pending != NULL && pending->a_fd >= 0 && !m->base.cfg.no_fsync &&
	     fsync(pending->a_fd) != 0))
		return sieve_fatal(&m->base, SIEVE_EIO, "%s: fsync of A failed: %s", m->base.dir,
		                   strerror(errno));
	pthread_mutex_lock(&m->mmu);
	ns = m->ms;
	ns.sync_seg = cur->id;
	ns.sync_len = m->cur_len;
	if (merc_manifest_write(m, &ns) != 0)
		rc = sieve_fatal(&m->base, SIEVE_EIO, "%s/MANIFEST: write failed: %s", m->base.dir,
		                 strerror(errno));
	else
		m->ms = ns;
	pthread_mutex_unlock(&m->mmu);
	return rc;
}

static int merc_sync(void *impl)
{
	struct merc *m = impl;
	int rc;

	pthread_mutex_lock(&m->base.mu);
	rc = sync_locked(m);
	pthread_mutex_unlock(&m->base.mu);
	return rc;
}

/* The files of a checkpoint (after a flush and a sync): MANIFEST is
 * replaced by rename and a run's files Z.<g>.<j> are never rewritten: both
 * are linked; the unflushed URL segments, appended to, are copied as they
 * stand. Caller holds both locks. */
static int checkpoint_locked(struct merc *m, const char *dir)
{
	const struct mstate *s = &m->ms;
	const struct segment *cur = &m->segs[m->cur];
	char name[64];

	if (sieve_checkpoint_file(m->base.dir, dir, "MANIFEST", SIEVE_WHOLE_FILE) != 0)
		return sieve_fail(&m->base, SIEVE_EIO, "checkpoint of %s/MANIFEST into %s: %s",
		                  m->base.dir, dir, strerror(errno));
	for (unsigned x = 0; x < s->nruns; x++)
		for (unsigned j = 0; j < Z_PARTS; j++) {
			snprintf(name, sizeof name, "Z.%llu.%u", (unsigned long long)s->runs[x], j);
			if (sieve_checkpoint_file(m->base.dir, dir, name, SIEVE_WHOLE_FILE) != 0)
				return sieve_fail(&m->base, SIEVE_EIO,
				                  "checkpoint of %s/%s into %s: %s", m->base.dir,
				                  name, dir, strerror(errno));
		}
	for (uint64_t seg = s->first_seg; seg <= cur->id; seg++) {
		char src[4096];
		struct stat st;
		snprintf(name, sizeof name, "A.%llu", (unsigned long long)seg);
		if (sieve_path(src, sizeof src, m->base.dir, "%s", name) != 0)
			return sieve_fail(&m->base, SIEVE_EINVAL, "%s: path too long", m->base.dir);
		if (stat(src, &st) != 0)
			continue;
		if (sieve_checkpoint_file(m->base.dir, dir, name,
		                          seg == cur->id ? m->cur_len : (uint64_t)st.st_size) != 0)
			return sieve_fail(&m->base, SIEVE_EIO, "checkpoint of %s into %s: %s", src,
			                  dir, strerror(errno));
	}
	if (m->base.cfg.emit_log && s->log_len > 0 &&
	    sieve_checkpoint_file(m->base.dir, dir, "EMITTED", s->log_len) != 0)
		return sieve_fail(&m->base, SIEVE_EIO, "checkpoint of %s/EMITTED into %s: %s",
		                  m->base.dir, dir, strerror(errno));
	return SIEVE_OK;
}

static int merc_checkpoint(void *impl, const char *dir)
{
	struct merc *m = impl;
	int rc = merc_flush(m);

	if (rc == SIEVE_OK)
		rc = merc_sync(m); /* the manifest now names the current segment's length */
	if (rc != SIEVE_OK)
		return rc;
	pthread_mutex_lock(&m->base.mu);
	pthread_mutex_lock(&m->mmu);
	rc = checkpoint_locked(m, dir);
	pthread_mutex_unlock(&m->mmu);
	pthread_mutex_unlock(&m->base.mu);
	return rc;
}

static void merc_free(struct merc *m)
{
	if (m == NULL)
		return;
	for (int i = 0; i < 2; i++) {
		if (m->segs[i].a_fd >= 0)
			close(m->segs[i].a_fd);
		for (unsigned r = 0; r < SLICES; r++)
			if (m->segs[i].s.fd[r] >= 0)
				close(m->segs[i].s.fd[r]);
		free(m->segs[i].top);
	}
	free(m->keys);
	free(m->bstart);
	free(m->bnext);
	free(m->s_w.buf);
	for (unsigned r = 0; r < SLICES; r++)
		XXH3_freeState(m->s_w.xs[r]);
	free(m->a_wbuf);
	free(m->cache);
	free(m->marks);
	free(m->late_used);
	free(m->scan_buf);
	for (unsigned j = 0; j < Z_PARTS; j++) {
		for (unsigned x = 0; x < Z_RUNS_MAX; x++)
			free(m->pb[j].zin[x]);
		free(m->pb[j].zout);
	}
	free(m->log_buf);
	sieve_base_release(&m->base);
	pthread_mutex_destroy(&m->mmu);
	pthread_cond_destroy(&m->cv_work);
	pthread_cond_destroy(&m->cv_free);
	pthread_cond_destroy(&m->cv_done);
	free(m);
}

static int merc_close(void *impl)
{
	struct merc *m = impl;
	int rc = SIEVE_OK, r;

	if (m->thr_started) {
		const struct segment *cur;
		char p[4096];
		rc = merc_flush(m);
		r = merc_sync(m);
		if (rc == SIEVE_OK)
			rc = r;
		pthread_mutex_lock(&m->base.mu);
		m->stop = true;
		pthread_cond_broadcast(&m->cv_work);
		pthread_mutex_unlock(&m->base.mu);
		pthread_join(m->thr, NULL);
		cur = &m->segs[m->cur]; /* (the flush sealed the one current before) */
		/* the empty current segment is not needed any more, nor its list
		 * of signatures (a reopen replays A, not S) */
		if (cur->n == 0 && m->base.err == 0 &&
		    seg_path(m->base.dir, p, sizeof p, "A", cur->id, -1) == 0)
			unlink(p);
		s_files_remove(m->base.dir, cur->id);
		seg_spares_remove(m->base.dir);
	}
	merc_free(m);
	return rc;
}

static void merc_stats(void *impl, struct sieve_stats *out)
{
	struct merc *m = impl;

	pthread_mutex_lock(&m->base.mu);
	*out = m->base.st;
	pthread_mutex_unlock(&m->base.mu);
	pthread_mutex_lock(&m->mmu);
	out->z_count = m->ms.z_count;
	out->z_bytes = m->ms.z_bytes;
	pthread_mutex_unlock(&m->mmu);
}

/* ---------------- open and replay ---------------- */

/* Reads A.<seg> (fd, named p) into the segment rb, rebuilding its
 * histograms and S files; a torn or damaged tail past the synced length s
 * says is cut (*torn), one before it is corruption. */
static int replay_read(struct merc *m, int fd, const char *p, struct segment *rb, bool *torn)
{
	const struct mstate *s = &m->ms;
	struct rd r;
	const char *u;
	size_t ul;
	uint64_t good = 0, sig;
	int g;

	/* the slices' lists, rebuilt as A is read */
	s_files_open(&m->s_w, &rb->s, m->base.dir, rb->id);
	rd_init(&r, fd, m->scan_buf, m->io);
	while ((g = rec_next(&r, m->base.cfg.max_url_len, rb->mask, &u, &ul, &sig)) == 1) {
		if (seg_full(m, rb, sig))
			break;
		seg_count(m, rb, sig);
		good = r.off;
	}
	s_files_seal(&m->s_w, &rb->s);
	if (g == -2)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s: read failed: %s", p, strerror(errno));
	if (g == 1)
		return sieve_fatal(
		        &m->base, SIEVE_EINVAL,
		        "%s: segment holds more URLs than a buffer (memory reduced across reopen?)",
		        p);
	*torn = g == -1;
	if (g == -1 && (rb->id < s->sync_seg || (rb->id == s->sync_seg && good < s->sync_len)))
		return sieve_fatal(&m->base, SIEVE_ECORRUPT,
		                   "%s: truncated or corrupt URL record at offset %llu (before the "
		                   "synced length)",
		                   p, (unsigned long long)good);
	if (g == -1 && ftruncate(fd, (off_t)good) != 0)
		return sieve_fatal(&m->base, SIEVE_EIO, "%s: %s", p, strerror(errno));
	if (g == 0 && rb->id == s->sync_seg && good < s->sync_len)
		return sieve_fatal(&m->base, SIEVE_ECORRUPT,
		                   "%s: truncated URL segment (%llu bytes, %llu synced)", p,
		                   (unsigned long long)good, (unsigned long long)s->sync_len);
	return SIEVE_OK;
}

/* Replays the A segments left unflushed by a crash, in order. */
static int replay(struct merc *m)
{
	const uint64_t first = m->ms.first_seg;
	uint64_t seg = first;
	char p[4096];
	bool stop = false;

	for (;; seg++) {
		struct segment rb; /* the segment as the flush wants it */
		int fd, rc;

		if (seg_path(m->base.dir, p, sizeof p, "A", seg, -1) != 0)
			return sieve_fatal(&m->base, SIEVE_EINVAL, "%s: path too long",
			                   m->base.dir);
		fd = open(p, stop ? O_RDONLY : O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				break;
			return sieve_fatal(&m->base, SIEVE_EIO, "%s: %s", p, strerror(errno));
		}
		if (stop) {
			/* after a torn segment nothing later was ever synced */
			close(fd);
			unlink(p);
			continue;
		}
		memset(&rb, 0, sizeof rb);
		rb.id = seg;
		rb.mask = seg_mask(seg);
		rb.top = m->segs[0].top;
		memset(rb.top, 0, ((size_t)1 << m->pbits) * sizeof *rb.top);
		rc = replay_read(m, fd, p, &rb, &stop);
		close(fd);
		if (rc != SIEVE_OK)
			return rc;
		if (rb.n == 0) {
			unlink(p);
			s_files_remove(m->base.dir, seg);
			if (stop)
				continue;
			break;
		}
		rc = merc_flush_segment(m, &rb);
		if (rc != SIEVE_OK)
			return rc;
	}
	if (seg == first && m->ms.sync_seg > seg) {
		/* the synced segment vanished */
		seg_path(m->base.dir, p, sizeof p, "A", seg, -1);
		return sieve_fatal(&m->base, SIEVE_ECORRUPT, "%s: synced URL segment missing", p);
	}
	return SIEVE_OK;
}

/* Divides the budget: I/O buffers (A's, EMITTED's and the emitting scan's,
 * each part's reader of each run and new run's writer, S's buffer of each
 * slice), the merge's blocks (in struct merc), the layout's histograms and
 * bucket starts (4 arrays of 2^pbits), the flush's array (8 bytes per
 * slot: the adds keep no signature in memory, the flush loads them from S
 * or A and sorts them in place) and two bitmaps, the marks (a bit per
 * record of a segment, SLICES_PER_PART per slot) and the late ones' (a bit
 * per slot), and a cache of recent signatures: 1/16 of the budget, and
 * for a large budget (twice it past A_CAP_MIN) whatever the array does not
 * need. There the array needs no more slots than the records of a segment
 * whose URL file is cut at a_cap bytes, at most a_cap / SEG_RECORD_MIN; a
 * larger one would go unused, and a cache drops more repeats, every one a
 * record less to write and read back. (A small budget's unused slots are
 * never touched: the crawl's sieve keeps its resident size.)
 * *cache_entries: the cache's. */
static int merc_size(struct merc *m, size_t *cache_entries)
{
	const size_t mem = m->base.cfg.memory ? m->base.cfg.memory : (size_t)64 << 20;
	const size_t slot_bits = 65 + SLICES_PER_PART;
	size_t rest, ce = CACHE_WAYS, fixed, slots, need;

	m->io = mem / 64;
	if (m->io > ((size_t)1 << 20))
		m->io = (size_t)1 << 20;
	if (m->io < ((size_t)64 << 10))
		m->io = (size_t)64 << 10;
	if (m->io < m->base.cfg.max_url_len + 2 * REC_HDR)
		m->io = m->base.cfg.max_url_len + 2 * REC_HDR;
	while (ce * 2 * sizeof(uint64_t) <= mem / 8)
		ce *= 2;
	m->zr_io = m->io / 8 > Z_READ_MIN ? m->io / 8 : Z_READ_MIN;
	m->a_cap = (uint64_t)mem * A_CAP_BUDGETS;
	m->recycle = m->a_cap <= A_CAP_MIN;
	if (m->a_cap < A_CAP_MIN)
		m->a_cap = A_CAP_MIN;
	m->s_w.cap = m->io / 2 / SLICES / 8 * 8;
	if (m->s_w.cap < 4096)
		m->s_w.cap = 4096;
	fixed = (3 + (size_t)Z_PARTS) * m->io + Z_PARTS * Z_RUNS_MAX * (m->zr_io + Z_SLACK) +
	        SLICES * m->s_w.cap + ce * 8 + sizeof *m + LAYOUT_BYTES(8);
	if (fixed + 64 * 80 > mem)
		return sieve_fail(
		        &m->base, SIEVE_EINVAL,
		        "memory %zu too small (needs at least %zu for I/O buffers and cache)", mem,
		        fixed + 64 * 80);
	rest = mem - fixed + LAYOUT_BYTES(8);
	/* the slots (slot_bits / 8 bytes each), then the layout's arrays for a
	 * segment of them out of the same rest (fewer slots never need more
	 * bucket bits) */
	slots = rest * 8 / slot_bits;
	m->pbits = layout_bits(slots * SLICES_PER_PART);
	if (rest > LAYOUT_BYTES(m->pbits) + 64 * 80)
		slots = (rest - LAYOUT_BYTES(m->pbits)) * 8 / slot_bits;
	need = (size_t)(m->a_cap / SEG_RECORD_MIN / SLICES_PER_PART) + 1;
	if (slots > need && !m->recycle) {
		size_t spare = (slots - need) * slot_bits / 8;
		while (ce * sizeof(uint64_t) <= spare) {
			spare -= ce * sizeof(uint64_t);
			ce *= 2;
		}
		slots = need;
	}
	m->slice_cap = slots / Z_PARTS;
	m->seg_cap = m->slice_cap * SLICES;
	if (m->base.cfg.buffer_urls > 0) {
		/* (tests) segments of buffer_urls records; any slice may hold them all */
		m->seg_cap = m->base.cfg.buffer_urls;
		m->slice_cap = m->base.cfg.buffer_urls;
	}
	if (m->seg_cap > UINT32_MAX / 2)
		m->seg_cap = UINT32_MAX / 2;
	if (m->slice_cap > m->seg_cap)
		m->slice_cap = m->seg_cap;
	m->pbits = layout_bits(m->seg_cap);
	m->seal_min = m->base.cfg.seal_min_urls > 0 ? m->base.cfg.seal_min_urls : SEAL_MIN_DEFAULT;
	m->cache_mask = ce / CACHE_WAYS - 1;
	m->base.st.buffer_urls = m->seg_cap;
	m->base.st.cache_entries = ce;
	*cache_entries = ce;
	return SIEVE_OK;
}

/* Allocates the buffers merc_size sized. */
static int merc_alloc(struct merc *m, size_t ce)
{
	const size_t buckets = (size_t)1 << m->pbits;
	bool ok = true;

	m->keys = sieve_alloc_random(Z_PARTS * m->slice_cap * sizeof(uint64_t));
	m->segs[0].top = malloc(buckets * sizeof(uint32_t));
	m->segs[1].top = malloc(buckets * sizeof(uint32_t));
	m->bstart = malloc((buckets + 1) * sizeof(uint32_t));
	m->bnext = malloc(buckets * sizeof(uint32_t));
	m->late_used = malloc(Z_PARTS * ((m->slice_cap + 63) / 64) * 8);
	m->marks = sieve_alloc_random(((m->seg_cap + 63) / 64) * 8);
	m->cache = sieve_alloc_random(ce * sizeof(uint64_t));
	if (m->cache != NULL)
		memset(m->cache, 0, ce * sizeof(uint64_t));
	m->a_wbuf = malloc(m->io);
	m->s_w.buf = malloc(SLICES * m->s_w.cap);
	for (unsigned r = 0; r < SLICES; r++) {
		m->s_w.xs[r] = XXH3_createState();
		ok &= m->s_w.xs[r] != NULL;
	}
	m->scan_buf = malloc(m->io);
	m->log_buf = malloc(m->io);
	for (unsigned j = 0; j < Z_PARTS; j++) {
		/* zeroed: the slack is read, never used */
		for (unsigned x = 0; x < Z_RUNS_MAX; x++) {
			m->pb[j].zin[x] = calloc(1, m->zr_io + Z_SLACK);
			ok &= m->pb[j].zin[x] != NULL;
		}
		m->pb[j].zout = malloc(m->io);
		ok &= m->pb[j].zout != NULL;
	}
	if (!ok || !m->keys || !m->segs[0].top || !m->segs[1].top || !m->bstart || !m->bnext ||
	    !m->s_w.buf || !m->late_used || !m->marks || !m->cache || !m->a_wbuf || !m->scan_buf ||
	    !m->log_buf)
		return sieve_fail(&m->base, SIEVE_ENOMEM, "out of memory");
	return SIEVE_OK;
}

/* Whether name is PREFIX<digits>SEP<digits> (SEP a character). */
static bool name_is(const char *name, const char *prefix, char sep, uint64_t *first)
{
	size_t pl = strlen(prefix), k;
	const char *t;

	if (strncmp(name, prefix, pl) != 0)
		return false;
	k = strspn(name + pl, "0123456789");
	t = name + pl + k;
	if (k == 0 || k > 19 || t[0] != sep || t[1] == '\0' ||
	    strspn(t + 1, "0123456789") != strlen(t + 1))
		return false;
	*first = strtoull(name + pl, NULL, 10);
	return true;
}

/* Removes what the committed state does not name: the signature lists
 * S.<seg>.<r> (caches, rebuilt from A by the replay), the parts of runs
 * not in the manifest (a run never committed, or merged into a later one)
 * and Z.tmp.<j>, and the spare segment files A.spare and S.spare.<r>. */
static int leftover_remove(void *arg, const char *path, const char *name)
{
	const struct mstate *s = arg;
	uint64_t g;
	bool live = false;

	if (name_is(name, "S.", '.', &g) || strncmp(name, "Z.tmp.", 6) == 0 ||
	    strcmp(name, "A.spare") == 0 || strncmp(name, "S.spare.", 8) == 0) {
		unlink(path);
	} else if (name_is(name, "Z.", '.', &g)) {
		for (unsigned x = 0; x < s->nruns; x++)
			live |= s->runs[x] == g;
		if (!live)
			unlink(path);
	}
	return 0;
}

/* The committed state: MANIFEST read, Z checked against it, leftovers of a
 * crash removed (leftover_remove), EMITTED cut back to its committed
 * length. */
static int merc_load(struct merc *m)
{
	char p[4096];
	struct stat sb;
	int mr = merc_manifest_read(m->base.dir, &m->ms);

	if (mr == -1)
		return sieve_fail(&m->base, SIEVE_ECORRUPT, "%s/MANIFEST: truncated or corrupt",
		                  m->base.dir);
	if (mr == -2)
		return sieve_fail(&m->base, SIEVE_EIO, "%s/MANIFEST: %s", m->base.dir,
		                  strerror(errno));
	if (mr == 1) {
		memset(&m->ms, 0, sizeof m->ms);
	} else if (m->ms.gen > 0) {
		struct zhead zh[Z_RUNS_MAX * Z_PARTS];
		int rc = merc_z_open_all(m, &m->ms, zh);
		merc_z_close_all(zh);
		if (rc != SIEVE_OK)
			return rc;
	}
	sieve_dir_each(m->base.dir, leftover_remove, &m->ms);
	if (!m->base.cfg.emit_log)
		return SIEVE_OK;
	if (sieve_path(p, sizeof p, m->base.dir, "EMITTED") != 0)
		return sieve_fail(&m->base, SIEVE_EINVAL, "%s: path too long", m->base.dir);
	if (stat(p, &sb) != 0)
		return m->ms.log_len > 0
		               ? sieve_fail(&m->base, SIEVE_ECORRUPT, "%s: output log missing", p)
		               : SIEVE_OK;
	if ((uint64_t)sb.st_size < m->ms.log_len)
		return sieve_fail(&m->base, SIEVE_ECORRUPT,
		                  "%s: truncated output log (%lld bytes, %llu committed)", p,
		                  (long long)sb.st_size, (unsigned long long)m->ms.log_len);
	if ((uint64_t)sb.st_size > m->ms.log_len && truncate(p, (off_t)m->ms.log_len) != 0)
		return sieve_fail(&m->base, SIEVE_EIO, "%s: %s", p, strerror(errno));
	return SIEVE_OK;
}

/* Sizes, locks, loads, replays, and starts the first segment and the
 * flush thread. */
static int merc_start(struct merc *m)
{
	size_t ce = 0;
	int rc = SIEVE_OK;

	if (m->base.cfg.max_url_len > (1u << 30))
		return sieve_fail(&m->base, SIEVE_EINVAL, "max_url_len too large");
	rc = merc_size(m, &ce);
	if (rc == SIEVE_OK)
		rc = sieve_base_lock(&m->base);
	if (rc == SIEVE_OK)
		rc = merc_alloc(m, ce);
	if (rc == SIEVE_OK)
		rc = merc_load(m);
	if (rc == SIEVE_OK)
		rc = replay(m);
	if (rc != SIEVE_OK)
		return rc;
	m->next_seg = m->ms.first_seg;
	m->sealed_upto = m->ms.first_seg;
	m->done_upto = m->ms.first_seg;
	m->z_known = m->ms.z_count;
	m->cur = 0;
	rc = seg_start(m);
	if (rc != SIEVE_OK)
		return rc;
	if (pthread_create(&m->thr, NULL, flush_main, m) != 0)
		return sieve_fail(&m->base, SIEVE_ENOMEM, "cannot start the flush thread");
	m->thr_started = true;
	return SIEVE_OK;
}

static int merc_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx,
                     void **impl, char *err, size_t errlen)
{
	struct merc *m = calloc(1, sizeof *m);
	int rc;

	*impl = NULL;
	if (m == NULL)
		return SIEVE_ENOMEM;
	m->segs[0].a_fd = m->segs[1].a_fd = -1;
	for (unsigned r = 0; r < SLICES; r++)
		m->segs[0].s.fd[r] = m->segs[1].s.fd[r] = -1;
	m->pending = -1;
	pthread_mutex_init(&m->mmu, NULL);
	pthread_cond_init(&m->cv_work, NULL);
	pthread_cond_init(&m->cv_free, NULL);
	pthread_cond_init(&m->cv_done, NULL);
	sieve_crash_arm();
	rc = sieve_base_init(&m->base, cfg, emit, emit_ctx, err, errlen);
	if (rc == SIEVE_OK)
		rc = sieve_base_opened(&m->base, merc_start(m), err, errlen);
	if (rc != SIEVE_OK) {
		merc_free(m);
		return rc;
	}
	*impl = m;
	return SIEVE_OK;
}

int sieve_log_read(const char *dir, sieve_emit_fn fn, void *ctx, char *errbuf, size_t errlen)
{
	char p[4096], dummy[8];
	struct mstate s;
	struct rd r;
	const size_t cap = ((size_t)1 << 20) + 64;
	uint8_t *buf;
	const char *u;
	size_t ul;
	uint64_t sig;
	int fd, rc = SIEVE_OK, mr;

	if (errbuf == NULL || errlen == 0) {
		errbuf = dummy;
		errlen = sizeof dummy;
	}
	errbuf[0] = '\0';
	mr = merc_manifest_read(dir, &s);
	if (mr < 0) {
		snprintf(errbuf, errlen, "%s/MANIFEST: truncated or corrupt or unreadable", dir);
		return mr == -1 ? SIEVE_ECORRUPT : SIEVE_EIO;
	}
	if (mr == 1 || s.log_len == 0)
		return SIEVE_OK;
	snprintf(p, sizeof p, "%s/EMITTED", dir);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(errbuf, errlen, "%s: %s", p, strerror(errno));
		return SIEVE_ECORRUPT;
	}
	buf = malloc(cap);
	if (buf == NULL) {
		close(fd);
		return SIEVE_ENOMEM;
	}
	rd_init(&r, fd, buf, cap);
	while (r.off < s.log_len && rec_next(&r, cap - 64, 0, &u, &ul, &sig) == 1)
		fn(ctx, u, ul);
	if (r.off != s.log_len) {
		snprintf(errbuf, errlen, "%s: truncated or corrupt output log at offset %llu", p,
		         (unsigned long long)r.off);
		rc = SIEVE_ECORRUPT;
	}
	free(buf);
	close(fd);
	return rc;
}

const struct sieve_ops sieve_mercator_ops = {
	.name = "mercator",
	.open = merc_open,
	.add = merc_add,
	.add_batch = merc_add_batch,
	.flush = merc_flush,
	.sync = merc_sync,
	.close = merc_close,
	.stats = merc_stats,
	.last_error = sieve_base_last_error,
	.checkpoint = merc_checkpoint,
};
