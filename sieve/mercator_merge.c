/*
 * mercator_merge.c: a flush's merge of one part of Z (see mercator.h): the
 * part's slices loaded into its share of the flush's array, sorted, and
 * merged with the part of Z into Z.tmp.<j>, the first record of each fresh
 * signature marked. Values are merged and coded relative to the part's
 * base (its first signature), so that a part's codes start at 0.
 */
#include "sieve/mercator.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "frontier/base/byteorder.h"

static int part_fail(struct zpart *zp, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(zp->msg, sizeof zp->msg, fmt, ap);
	va_end(ap);
	zp->rc = code;
	return code;
}

/* The buckets of slice r: d0 .. d1 - 1. */
static inline void slice_buckets(const struct merc *m, unsigned r, size_t *d0, size_t *d1)
{
	*d0 = (size_t)r << (m->pbits - SLICE_BITS);
	*d1 = (size_t)(r + 1) << (m->pbits - SLICE_BITS);
}

/* The position of slice r's first record in the segment's layout. */
static inline uint32_t slice_base(const struct merc *m, unsigned r)
{
	size_t d0, d1;

	slice_buckets(m, r, &d0, &d1);
	return m->bstart[d0];
}

/* Places signature v, the next record of its bucket, in a slice's part of
 * the layout: region holds the positions from base on. */
static inline bool layout_put(const struct merc *m, uint64_t *region, uint32_t base, uint64_t v)
{
	const unsigned p = m->pbits;
	const uint32_t lim = ((uint32_t)1 << p) - 1;
	uint32_t pos, rank;

	if (!layout_next(m->bstart, m->bnext, p, v, &pos))
		return false;
	rank = pos - m->bstart[v >> (64 - p)];
	region[pos - base] = v << p | (rank < lim ? rank : lim);
	return true;
}

/* Restarts the position count of slice r's buckets. */
static void slice_restart(const struct merc *m, unsigned r)
{
	size_t d0, d1;

	slice_buckets(m, r, &d0, &d1);
	memcpy(m->bnext + d0, m->bstart + d0, (d1 - d0) * sizeof *m->bnext);
}

/* (S is only a cache of A's signatures, 8 bytes a record instead of ~80.) */
int merc_slice_load_s(struct zpart *zp, unsigned r, uint8_t *buf, size_t cap)
{
	struct merc *m = zp->m;
	const size_t n = zp->sg->s_count[r];
	const uint32_t base = slice_base(m, r);
	size_t got = 0, have = 0;
	char sp[4096];
	int fd = -1, rc = -1;
	XXH3_state_t *xs = XXH3_createState();

	if (xs == NULL || seg_path(m->base.dir, sp, sizeof sp, "S", zp->sg->id, (int)r) != 0)
		goto out;
	fd = open(sp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	XXH3_64bits_reset(xs);
	slice_restart(m, r);
	while (got < n) {
		size_t want = (n - got) * 8 - have;
		ssize_t g;
		if (want > cap - have)
			want = cap - have;
		g = read(fd, buf + have, want);
		if (g < 0 && errno == EINTR)
			continue;
		if (g <= 0)
			goto out;
		XXH3_64bits_update(xs, buf + have, (size_t)g);
		have += (size_t)g;
		for (size_t o = 0; o + 8 <= have; o += 8) {
			uint64_t v = le_get64(buf + o);
			if (slice_of(v) != r || !layout_put(m, zp->region, base, v))
				goto out; /* not what the adds wrote */
		}
		got += have / 8;
		memmove(buf, buf + have / 8 * 8, have % 8);
		have %= 8;
	}
	if (XXH3_64bits_digest(xs) == zp->sg->s.sum[r])
		rc = 0; /* (a recycled file's stale tail may follow) */
out:
	if (fd >= 0)
		close(fd);
	XXH3_freeState(xs);
	return rc;
}

/* Reads the n records of A.<seg> in order, each checked (its XXH3), and
 * calls take(zp, r, sig, arg) with those of slice r. buf: cap bytes of
 * scratch. */
static int slice_scan_a(struct zpart *zp, unsigned r, uint8_t *buf, size_t cap,
                        bool (*take)(struct zpart *, uint64_t, void *), void *arg)
{
	struct merc *m = zp->m;
	const size_t n = zp->sg->n;
	struct rd rd;
	size_t idx = 0;
	int g = 1, fd = open(zp->ap, O_RDONLY | O_CLOEXEC);
	bool ok = true;

	if (fd < 0)
		return part_fail(zp, SIEVE_EIO, "%s: %s", zp->ap, strerror(errno));
	rd_init(&rd, fd, buf, cap);
	while (idx < n) {
		const char *u;
		size_t ul;
		uint64_t h;
		g = rec_take(&rd, m->base.cfg.max_url_len, zp->sg->mask, &u, &ul, &h);
		if (g != 1)
			break;
		if (slice_of(h) == r && !take(zp, h, arg)) {
			ok = false;
			break;
		}
		idx++;
	}
	close(fd);
	if (g == -2)
		return part_fail(zp, SIEVE_EIO, "%s: read failed: %s", zp->ap, strerror(errno));
	if (idx != n || !ok)
		return part_fail(zp, SIEVE_ECORRUPT,
		                 "%s: truncated or corrupt URL segment (%zu of %zu records)",
		                 zp->ap, idx, n);
	return SIEVE_OK;
}

static bool take_put(struct zpart *zp, uint64_t h, void *arg)
{
	return layout_put(zp->m, zp->region, *(const uint32_t *)arg, h);
}

/* Loads slice r's keys into zp->region from A.<seg> (when its S file is
 * missing or wrong). */
static int slice_load_a(struct zpart *zp, unsigned r, uint8_t *buf, size_t cap)
{
	uint32_t base = slice_base(zp->m, r);

	slice_restart(zp->m, r);
	return slice_scan_a(zp, r, buf, cap, take_put, &base);
}

/* Sets the mark of position pos (atomically at the part's edge words, which
 * the neighbouring part's thread may set at the same time). */
static inline void mark_set(struct zpart *zp, size_t pos)
{
	size_t w = pos / 64;
	uint64_t bit = (uint64_t)1 << (pos % 64);

	if (w == zp->wlo || w == zp->whi)
		__atomic_fetch_or(&zp->m->marks[w], bit, __ATOMIC_RELAXED);
	else
		zp->m->marks[w] |= bit;
}

/* Position of k in the sorted late[0..n), or -1 (a branch-free binary
 * search: the list is short, and read only for records past lim). */
static long late_find(const uint64_t *late, size_t n, uint64_t k)
{
	const uint64_t *b = late;
	size_t len = n;

	if (n == 0)
		return -1;
	while (len > 1) {
		size_t h = len >> 1;
		b = b[h] <= k ? b + h : b;
		len -= h;
	}
	return *b == k ? (long)(b - late) : -1;
}

struct late_ctx {
	size_t nlate; /* the slice's late fresh signatures, sorted, at zp->region's front */
};

static bool take_late(struct zpart *zp, uint64_t h, void *arg)
{
	const struct late_ctx *lc = arg;
	const struct merc *m = zp->m;
	const uint32_t lim = ((uint32_t)1 << m->pbits) - 1;
	uint32_t pos;
	long j;

	if (!layout_next(m->bstart, m->bnext, m->pbits, h, &pos))
		return false;
	if (pos - m->bstart[h >> (64 - m->pbits)] < lim)
		return true; /* its order is known: the merge marked it or not */
	j = late_find(zp->region, lc->nlate, h);
	if (j >= 0 && !(zp->used[j / 64] >> (j % 64) & 1)) {
		zp->used[j / 64] |= (uint64_t)1 << (j % 64);
		mark_set(zp, pos);
	}
	return true;
}

/* Marks the first record of each of slice r's late fresh signatures (see
 * "the flush's array"; the merge listed them, sorted, at the region's
 * front): a scan of A, counting the slice's positions, looking up the
 * records past their bucket's rank limit. Rare: only crowded buckets have
 * such records. */
static int slice_late(struct zpart *zp, unsigned r, size_t nlate, uint8_t *buf, size_t cap)
{
	struct late_ctx lc = { nlate };

	memset(zp->used, 0, ((nlate + 63) / 64) * 8);
	slice_restart(zp->m, r);
	return slice_scan_a(zp, r, buf, cap, take_late, &lc);
}

/* A run of part j of Z, read a block at a time: v[i..n) is what is left
 * of its block being merged. */
struct zrun {
	struct zr in;
	unsigned lbits;
	uint64_t left;  /* signatures not yet decoded */
	uint64_t hprev; /* high part of the last one decoded */
	uint64_t *v;
	size_t i, n;
	bool done; /* every signature taken */
};

/* Decodes the run's next block (Z_BLOCK signatures, fewer for the last);
 * at its end, or at damage (then in's bad or ioerr says which), done. */
static void run_fill(struct zrun *r)
{
	size_t c = r->left < Z_BLOCK ? (size_t)r->left : Z_BLOCK;

	r->i = 0;
	r->n = 0;
	if (c > 0 && zr_block(&r->in, r->lbits, &r->hprev, r->v, c)) {
		r->left -= c;
		r->n = c;
	}
	r->done = r->n == 0;
}

/* The block of the new run being gathered. */
struct zblock {
	uint64_t *ov;
	size_t on;
};

/* Appends the run v[0..cnt) to the block being gathered and encodes every
 * block it completes. Most of a merge is such runs of Z between two of
 * S's signatures: a copy, or none when a whole block of the run can be
 * encoded where it is. */
static void z_put_run(struct zw *w, struct zblock *b, const uint64_t *v, size_t cnt)
{
	while (cnt > 0) {
		size_t k;
		if (b->on == 0 && cnt >= Z_BLOCK) {
			zw_block(w, v, Z_BLOCK);
			v += Z_BLOCK;
			cnt -= Z_BLOCK;
			continue;
		}
		k = Z_BLOCK - b->on < cnt ? Z_BLOCK - b->on : cnt;
		memcpy(b->ov + b->on, v, k * sizeof *v);
		b->on += k;
		v += k;
		cnt -= k;
		if (b->on == Z_BLOCK) {
			zw_block(w, b->ov, b->on);
			b->on = 0;
		}
	}
}

static inline void z_put(struct zw *w, struct zblock *b, uint64_t v)
{
	b->ov[b->on++] = v;
	if (b->on == Z_BLOCK) {
		zw_block(w, b->ov, b->on);
		b->on = 0;
	}
}

/* The first index from e on of the ascending v[0..n) whose value is not
 * below k, or n: eight values compared at a time without a branch (the
 * merge passes tens of a run's values per signature of a segment; a loop
 * that stops at the first would mispredict its exit each time). */
static inline size_t first_not_below(const uint64_t *v, size_t e, size_t n, uint64_t k)
{
	while (e + 8 <= n) {
		unsigned c = 0;
		for (unsigned q = 0; q < 8; q++)
			c += v[e + q] < k;
		e += c;
		if (c < 8)
			return e;
	}
	while (e < n && v[e] < k)
		e++;
	return e;
}

/* Copies the signatures below k of the runs merged into the new run (mr[0..nm),
 * disjoint) into it, in order; true when one of them holds k (then taken
 * too: the caller writes it). */
static bool merged_to(struct zrun *mr, unsigned nm, struct zw *out, struct zblock *b, uint64_t k)
{
	if (nm == 1) {
		/* one run: its values below k copied a stretch at a time */
		while (!mr->done) {
			size_t e = first_not_below(mr->v, mr->i, mr->n, k);
			z_put_run(out, b, mr->v + mr->i, e - mr->i);
			mr->i = e;
			if (e < mr->n)
				break;
			run_fill(mr);
		}
		if (mr->done || mr->v[mr->i] != k)
			return false;
		if (++mr->i == mr->n)
			run_fill(mr);
		return true;
	}
	for (;;) {
		struct zrun *a = NULL; /* the run with the smallest head */
		uint64_t bound = k;    /* the other runs' smallest head, or k */
		size_t e;
		for (unsigned x = 0; x < nm; x++) {
			struct zrun *r = &mr[x];
			if (r->done)
				continue;
			if (a == NULL || r->v[r->i] < a->v[a->i]) {
				if (a != NULL && a->v[a->i] < bound)
					bound = a->v[a->i];
				a = r;
			} else if (r->v[r->i] < bound) {
				bound = r->v[r->i];
			}
		}
		if (a == NULL || a->v[a->i] >= k) {
			if (a == NULL || a->v[a->i] != k)
				return false;
			if (++a->i == a->n)
				run_fill(a);
			return true;
		}
		e = first_not_below(a->v, a->i, a->n, bound);
		z_put_run(out, b, a->v + a->i, e - a->i);
		a->i = e;
		if (a->i == a->n)
			run_fill(a);
	}
}

/* Whether run r (only read: its signatures stay where they are) holds k;
 * its signatures below k are passed. */
static inline bool run_holds(struct zrun *r, uint64_t k)
{
	while (!r->done) {
		size_t e = first_not_below(r->v, r->i, r->n, k);
		r->i = e;
		if (e < r->n)
			return r->v[e] == k;
		run_fill(r);
	}
	return false;
}

/* The part's runs as the merge reads them: kept[0..nkeep) are only read,
 * the newest nmerge, merged[], go into the new run. */
struct zruns {
	struct zrun r[Z_RUNS_MAX];
	struct zrun *kept, *merged;
	unsigned nkeep, nmerge;
};

/* Loads slice r into the part's region (from S, else A), sorts each of
 * its buckets in place (by signature, then rank: the first record of a
 * signature first) and counts its distinct signatures. The writer's
 * buffer is the scratch of the load and the sort: it must be empty. */
static int slice_sort(struct zpart *zp, unsigned r, uint64_t *distinct)
{
	struct merc *m = zp->m;
	struct part_bufs *pb = &m->pb[zp->j];
	const unsigned p = m->pbits;
	const uint32_t *bstart = m->bstart;
	size_t d0, d1;

	if (zp->sg->s_count[r] > 0 &&
	    (!zp->sg->s.ok[r] || merc_slice_load_s(zp, r, pb->zout, m->io) != 0) &&
	    slice_load_a(zp, r, pb->zout, m->io) != SIEVE_OK)
		return zp->rc;
	slice_buckets(m, r, &d0, &d1);
	*distinct = 0;
	for (size_t d = d0; d < d1; d++) {
		uint64_t *a = zp->region + (bstart[d] - bstart[d0]);
		size_t c = bstart[d + 1] - bstart[d];
		if (c > 1)
			bucket_sort(a, c, (uint64_t *)(void *)pb->zout, m->io / sizeof(uint64_t));
		for (size_t i = 0; i < c; i++)
			*distinct += i == 0 || (a[i] >> p) != (a[i - 1] >> p);
	}
	return SIEVE_OK;
}

/* Merges sorted slice r with the runs (from where they are) into the new
 * run: marks the first record of each fresh signature, or lists it at the
 * region's front when its rank is lost (a late one); returns how many are
 * late. */
static size_t slice_merge(struct zpart *zp, unsigned r, struct zruns *zr, struct zw *out,
                          struct zblock *b)
{
	const struct merc *m = zp->m;
	const unsigned pb = m->pbits;
	const uint32_t lim = ((uint32_t)1 << pb) - 1, *bstart = m->bstart;
	const uint64_t base = (uint64_t)zp->j << (64 - Z_PART_BITS);
	const size_t dpart = (size_t)zp->j << (pb - Z_PART_BITS); /* the part's first bucket */
	uint64_t *region = zp->region;
	size_t d0, d1, nlate = 0;

	slice_buckets(m, r, &d0, &d1);
	const uint32_t sbase = bstart[d0];
	for (size_t d = d0; d < d1; d++) {
		const uint64_t top = (uint64_t)(d - dpart) << (64 - pb); /* relative to base */
		uint64_t prev = 0;
		for (size_t i = bstart[d]; i < bstart[d + 1]; i++) {
			uint64_t key = region[i - sbase], k = top | key >> pb;
			uint32_t rank = (uint32_t)(key & lim);
			bool known = false;
			if (i > bstart[d] && k == prev)
				continue; /* a later record of the same signature */
			prev = k;
			if (zr->nmerge > 0 && merged_to(zr->merged, zr->nmerge, out, b, k)) {
				z_put(out, b, k);
				continue;
			}
			for (unsigned x = 0; x < zr->nkeep && !known; x++)
				known = run_holds(&zr->kept[x], k);
			if (known)
				continue;
			zp->fresh++;
			/* a late one goes to region[nlate], never past i - sbase:
			 * it never overwrites what is still to read */
			if (rank < lim)
				mark_set(zp, bstart[d] + rank);
			else
				region[nlate++] = base + k;
			z_put(out, b, k);
		}
	}
	return nlate;
}

/* One slice of the part: sorted, merged, its late ones resolved. */
static int part_slice(struct zpart *zp, unsigned s, struct zruns *zr, struct zw *out,
                      struct zblock *b)
{
	const unsigned r = zp->j * SLICES_PER_PART + s;
	uint64_t distinct = 0;
	size_t nlate;

	/* the writer's buffer is the scratch of the slice's load and sort
	 * (and of the late ones' scan): empty it first */
	zw_drain(out);
	if (slice_sort(zp, r, &distinct) != SIEVE_OK)
		return zp->rc;
	zp->distinct += distinct;
	if (s == 0) {
		/* L from an estimate of the new run's part: the merged runs',
		 * plus the part's records times the first slice's share of
		 * distinct ones (the slices are alike: hash ranges of the same
		 * records); at most one bit below the best, when many of them
		 * are in Z; the part's share of the signatures' range is
		 * 2^-Z_PART_BITS */
		uint64_t part_records = 0, merged = 0, est;
		for (unsigned k = 0; k < SLICES_PER_PART; k++)
			part_records += zp->sg->s_count[zp->j * SLICES_PER_PART + k];
		for (unsigned x = 0; x < zr->nmerge; x++)
			merged += zp->in[zr->nkeep + x].count;
		est = part_records;
		if (zp->sg->s_count[r] > 0)
			est = (uint64_t)((double)part_records * (double)distinct /
			                 (double)zp->sg->s_count[r]) +
			      1;
		out->L = z_low_bits((merged + (est < part_records ? est : part_records))
		                    << Z_PART_BITS);
	}
	nlate = slice_merge(zp, r, zr, out, b);
	if (nlate > 0) {
		zw_drain(out);
		if (slice_late(zp, r, nlate, zp->m->pb[zp->j].zout, zp->m->io) != SIEVE_OK)
			return zp->rc;
	}
	return SIEVE_OK;
}

/* Checks that every run's part was read whole and right, and writes the
 * new run's header and length, synced. */
static void part_finish(struct zpart *zp, const struct zruns *zr, struct zw *out, int zofd,
                        const char *zt)
{
	struct merc *m = zp->m;
	uint8_t hdr[Z_HDR];

	zp->ocount = out->count;
	zp->obytes = Z_HDR + out->total;
	for (unsigned x = 0; x < zp->nruns; x++) {
		const struct zrun *r = &zr->r[x];
		if (r->in.ioerr != 0) {
			part_fail(zp, SIEVE_EIO, "%s/Z.%llu.%u: read failed: %s", m->base.dir,
			          (unsigned long long)zp->runs[x], zp->j, strerror(r->in.ioerr));
			return;
		}
		/* every payload byte read and hashed, none left over */
		if (r->in.bad || r->left != 0 || r->in.left != 0 || r->in.pos != r->in.len ||
		    XXH3_64bits_digest(r->in.xs) != zp->in[x].psum) {
			part_fail(zp, SIEVE_ECORRUPT,
			          "%s/Z.%llu.%u: truncated or corrupt signature file (checksum or "
			          "count mismatch)",
			          m->base.dir, (unsigned long long)zp->runs[x], zp->j);
			return;
		}
	}
	if (out->unsorted) {
		part_fail(zp, SIEVE_ECORRUPT, "%s: signatures out of order (a corrupt run)", zt);
		return;
	}
	memcpy(hdr, Z_MAGIC, 8);
	le_put64(hdr + 8, out->count);
	le_put32(hdr + 16, out->L);
	le_put32(hdr + 20, Z_BLOCK);
	le_put64(hdr + 24, out->total);
	le_put64(hdr + 32, XXH3_64bits_digest(out->xs));
	le_put32(hdr + 40, zp->j);
	le_put32(hdr + 44, Z_PARTS);
	if (out->ioerr || ftruncate(zofd, (off_t)(Z_HDR + out->total)) != 0 ||
	    sieve_write_at(&m->base.cfg, zofd, hdr, Z_HDR, 0) != 0 ||
	    sieve_datasync(&m->base.cfg, zofd) != 0)
		part_fail(zp, SIEVE_EIO, "%s: write failed: %s", zt, strerror(errno));
}

/* Sets up the readers of the part's runs (their block's first decoded);
 * false when out of memory. */
static bool runs_start(struct zpart *zp, struct zruns *zr)
{
	struct merc *m = zp->m;
	struct part_bufs *pb = &m->pb[zp->j];

	memset(zr, 0, sizeof *zr);
	zr->nkeep = zp->nruns - zp->nmerge;
	zr->nmerge = zp->nmerge;
	zr->kept = zr->r;
	zr->merged = zr->r + zr->nkeep;
	for (unsigned x = 0; x < zp->nruns; x++) {
		struct zrun *r = &zr->r[x];
		XXH3_state_t *xs = XXH3_createState();
		if (xs == NULL)
			return false;
		XXH3_64bits_reset(xs);
		r->in = (struct zr){ .fd = zp->in[x].fd,
			             .buf = pb->zin[x],
			             .cap = m->zr_io,
			             .left = zp->in[x].plen,
			             .xs = xs };
		r->lbits = zp->in[x].lbits;
		r->left = zp->in[x].count;
		r->v = pb->zvals[x];
		run_fill(r);
	}
	return true;
}

static void runs_end(struct zpart *zp, struct zruns *zr)
{
	for (unsigned x = 0; x < zp->nruns; x++)
		XXH3_freeState(zr->r[x].in.xs);
}

/* One thread reads and decodes each run of its part of Z a block at a
 * time, merges, and encodes and writes the new run a block at a time, so
 * the values stay in the caches; the slices of the part, in ascending
 * order, each sorted in the region when its turn comes, continue one
 * merge. */
void *merc_part_merge(void *arg)
{
	struct zpart *zp = arg;
	struct merc *m = zp->m;
	struct part_bufs *pb = &m->pb[zp->j];
	struct zruns zr;
	struct zw out;
	struct zblock b = { pb->ovals, 0 };
	char zt[4096];
	int zofd = -1;
	XXH3_state_t *xout = XXH3_createState();
	bool ok = runs_start(zp, &zr);

	memset(&out, 0, sizeof out);
	if (merc_z_path(m, zt, sizeof zt, 0, zp->j, true) != 0) {
		part_fail(zp, SIEVE_EINVAL, "%s: path too long", m->base.dir);
		goto out;
	}
	if (!ok || xout == NULL) {
		part_fail(zp, SIEVE_ENOMEM, "out of memory");
		goto out;
	}
	XXH3_64bits_reset(xout);
	/* the header is written last */
	zofd = open(zt, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (zofd < 0) {
		part_fail(zp, SIEVE_EIO, "%s: %s", zt, strerror(errno));
		goto out;
	}
	out = (struct zw){ .cfg = &m->base.cfg,
		           .fd = zofd,
		           .base = Z_HDR,
		           .buf = pb->zout,
		           .cap = m->io,
		           .xs = xout };
	for (unsigned s = 0; s < SLICES_PER_PART; s++)
		if (part_slice(zp, s, &zr, &out, &b) != SIEVE_OK)
			goto out;
	/* the rest of the merged runs; the kept ones read to their ends (their
	 * checksums) */
	merged_to(zr.merged, zr.nmerge, &out, &b, UINT64_MAX);
	for (unsigned x = 0; x < zr.nkeep; x++)
		while (!zr.kept[x].done)
			run_fill(&zr.kept[x]);
	zw_block(&out, b.ov, b.on);
	zw_drain(&out);
	part_finish(zp, &zr, &out, zofd, zt);
out:
	if (zofd >= 0)
		close(zofd);
	runs_end(zp, &zr);
	XXH3_freeState(xout);
	return NULL;
}
