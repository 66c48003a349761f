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

	if (xs == NULL || seg_path(m->base.dir, sp, sizeof sp, "S", zp->sg->id, (int)r, false) != 0)
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

/* Part j of Z, read a block at a time. */
struct zsrc {
	struct zr in;
	unsigned lbits;
	uint64_t left;  /* signatures not yet decoded */
	uint64_t hprev; /* high part of the last one decoded */
};

/* Reads the next block of Z (Z_BLOCK signatures, fewer for the last)
 * into v; its count, 0 at Z's end or at damage (then in's bad or ioerr
 * says which). */
static size_t zsrc_block(struct zsrc *src, uint64_t *v)
{
	size_t c = src->left < Z_BLOCK ? (size_t)src->left : Z_BLOCK;

	if (c == 0 || !zr_block(&src->in, src->lbits, &src->hprev, v, c))
		return 0;
	src->left -= c;
	return c;
}

/* Where the merge is: the block of Z being merged (zv, its next zi of zn)
 * and the block of Z' being gathered (ov, on values). Kept by value in the
 * merge loop, so that the compiler keeps it in registers. */
struct zcursor {
	uint64_t *zv, *ov;
	size_t zi, zn, on;
	bool zdone; /* Z is all merged */
};

static inline void cur_fill(struct zcursor *c, struct zsrc *src)
{
	c->zn = zsrc_block(src, c->zv);
	c->zi = 0;
	c->zdone = c->zn == 0;
}

/* Appends the run v[0..cnt) to the block of Z' being gathered in ov (on
 * values in it) and encodes every block it completes; returns the new
 * count. Most of a merge is such runs of Z between two of S's signatures:
 * a copy, or none when a whole block of the run can be encoded where it
 * is. */
static size_t z_put_run(struct zw *w, uint64_t *ov, size_t on, const uint64_t *v, size_t cnt)
{
	while (cnt > 0) {
		size_t k;
		if (on == 0 && cnt >= Z_BLOCK) {
			zw_block(w, v, Z_BLOCK);
			v += Z_BLOCK;
			cnt -= Z_BLOCK;
			continue;
		}
		k = Z_BLOCK - on < cnt ? Z_BLOCK - on : cnt;
		memcpy(ov + on, v, k * sizeof *v);
		on += k;
		v += k;
		cnt -= k;
		if (on == Z_BLOCK) {
			zw_block(w, ov, on);
			on = 0;
		}
	}
	return on;
}

static inline void cur_put(struct zcursor *c, struct zw *out, uint64_t v)
{
	c->ov[c->on++] = v;
	if (c->on == Z_BLOCK) {
		zw_block(out, c->ov, c->on);
		c->on = 0;
	}
}

/* Copies Z's signatures below k into Z'; true when Z holds k (then taken
 * too: the caller writes it). */
static inline bool cur_merge_to(struct zcursor *c, struct zsrc *src, struct zw *out, uint64_t k)
{
	while (!c->zdone) {
		size_t e = c->zi;
		while (e < c->zn && c->zv[e] < k)
			e++;
		c->on = z_put_run(out, c->ov, c->on, c->zv + c->zi, e - c->zi);
		c->zi = e;
		if (c->zi < c->zn)
			break;
		cur_fill(c, src);
	}
	if (!c->zdone && c->zv[c->zi] == k) {
		c->zi++;
		return true;
	}
	return false;
}

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

/* Merges sorted slice r with Z (from where cur is) into Z': marks the
 * first record of each fresh signature, or lists it at the region's front
 * when its rank is lost (a late one); returns how many are late. */
static size_t slice_merge(struct zpart *zp, unsigned r, struct zsrc *src, struct zw *out,
                          struct zcursor *cur)
{
	const struct merc *m = zp->m;
	const unsigned pb = m->pbits;
	const uint32_t lim = ((uint32_t)1 << pb) - 1, *bstart = m->bstart;
	const uint64_t base = (uint64_t)zp->j << (64 - Z_PART_BITS);
	const size_t dpart = (size_t)zp->j << (pb - Z_PART_BITS); /* the part's first bucket */
	uint64_t *region = zp->region;
	struct zcursor c = *cur;
	size_t d0, d1, nlate = 0;

	slice_buckets(m, r, &d0, &d1);
	const uint32_t sbase = bstart[d0];
	for (size_t d = d0; d < d1; d++) {
		const uint64_t top = (uint64_t)(d - dpart) << (64 - pb); /* relative to base */
		uint64_t prev = 0;
		for (size_t i = bstart[d]; i < bstart[d + 1]; i++) {
			uint64_t key = region[i - sbase], k = top | key >> pb;
			uint32_t rank = (uint32_t)(key & lim);
			if (i > bstart[d] && k == prev)
				continue; /* a later record of the same signature */
			prev = k;
			if (!cur_merge_to(&c, src, out, k)) {
				zp->fresh++;
				/* a late one goes to region[nlate], never past i - sbase:
				 * it never overwrites what is still to read */
				if (rank < lim)
					mark_set(zp, bstart[d] + rank);
				else
					region[nlate++] = base + k;
			}
			cur_put(&c, out, k);
		}
	}
	*cur = c;
	return nlate;
}

/* One slice of the part: sorted, merged, its late ones resolved. */
static int part_slice(struct zpart *zp, unsigned s, struct zsrc *src, struct zw *out,
                      struct zcursor *cur)
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
		/* L from an estimate of |Z'|'s part: Z's, plus the part's records
		 * times the first slice's share of distinct ones (the slices are
		 * alike: hash ranges of the same records); at most one bit below
		 * the best, when many of them are in Z; the part's share of the
		 * signatures' range is 2^-Z_PART_BITS */
		uint64_t part_records = 0, est;
		for (unsigned k = 0; k < SLICES_PER_PART; k++)
			part_records += zp->sg->s_count[zp->j * SLICES_PER_PART + k];
		est = part_records;
		if (zp->sg->s_count[r] > 0)
			est = (uint64_t)((double)part_records * (double)distinct /
			                 (double)zp->sg->s_count[r]) +
			      1;
		out->L = z_low_bits((zp->in.count + (est < part_records ? est : part_records))
		                    << Z_PART_BITS);
	}
	nlate = slice_merge(zp, r, src, out, cur);
	if (nlate > 0) {
		zw_drain(out);
		if (slice_late(zp, r, nlate, zp->m->pb[zp->j].zout, zp->m->io) != SIEVE_OK)
			return zp->rc;
	}
	return SIEVE_OK;
}

/* Checks that Z's part was read whole and right, and writes Z''s header
 * and length, synced. */
static void part_finish(struct zpart *zp, const struct zsrc *src, struct zw *out, int zofd,
                        const char *zt)
{
	struct merc *m = zp->m;
	uint8_t hdr[Z_HDR];

	zp->ocount = out->count;
	zp->obytes = Z_HDR + out->total;
	if (src->in.ioerr != 0) {
		part_fail(zp, SIEVE_EIO, "%s/Z.*.%u: read failed: %s", m->base.dir, zp->j,
		          strerror(src->in.ioerr));
		return;
	}
	/* every payload byte read and hashed, none left over */
	if ((zp->in.fd >= 0 &&
	     (src->in.bad || src->left != 0 || src->in.left != 0 || src->in.pos != src->in.len ||
	      XXH3_64bits_digest(src->in.xs) != zp->in.psum)) ||
	    out->unsorted) {
		part_fail(zp, SIEVE_ECORRUPT,
		          "%s/Z.%llu.%u: truncated or corrupt signature file (checksum or count "
		          "mismatch)",
		          m->base.dir, (unsigned long long)zp->gen, zp->j);
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

/* One thread reads and decodes its part of Z a block at a time, merges,
 * and encodes and writes Z' a block at a time, so the values stay in the
 * caches; the slices of the part, in ascending order, each sorted in the
 * region when its turn comes, continue one merge. */
void *merc_part_merge(void *arg)
{
	struct zpart *zp = arg;
	struct merc *m = zp->m;
	struct part_bufs *pb = &m->pb[zp->j];
	struct zsrc src;
	struct zw out;
	struct zcursor cur = { pb->zvals, pb->ovals, 0, 0, 0, true };
	char zt[4096];
	int zofd = -1;
	XXH3_state_t *xin = XXH3_createState(), *xout = XXH3_createState();

	memset(&src, 0, sizeof src);
	memset(&out, 0, sizeof out);
	if (merc_z_path(m, zt, sizeof zt, 0, zp->j, true) != 0) {
		part_fail(zp, SIEVE_EINVAL, "%s: path too long", m->base.dir);
		goto out;
	}
	if (xin == NULL || xout == NULL) {
		part_fail(zp, SIEVE_ENOMEM, "out of memory");
		goto out;
	}
	XXH3_64bits_reset(xin);
	XXH3_64bits_reset(xout);
	/* Z.tmp.<j> is usually the previous generation's part, renamed after
	 * its last use: overwriting its pages costs less than a new file (the
	 * stale tail is cut at the end, before the fsync); the header is
	 * written last */
	zofd = open(zt, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (zofd < 0) {
		part_fail(zp, SIEVE_EIO, "%s: %s", zt, strerror(errno));
		goto out;
	}
	src.in = (struct zr){
		.fd = zp->in.fd, .buf = pb->zin, .cap = m->io, .left = zp->in.plen, .xs = xin
	};
	src.lbits = zp->in.lbits;
	src.left = zp->in.count;
	out = (struct zw){ .cfg = &m->base.cfg,
		           .fd = zofd,
		           .base = Z_HDR,
		           .buf = pb->zout,
		           .cap = m->io,
		           .xs = xout };
	if (src.left > 0)
		cur_fill(&cur, &src);
	for (unsigned s = 0; s < SLICES_PER_PART; s++)
		if (part_slice(zp, s, &src, &out, &cur) != SIEVE_OK)
			goto out;
	while (!cur.zdone) {
		cur.on = z_put_run(&out, cur.ov, cur.on, cur.zv + cur.zi, cur.zn - cur.zi);
		cur_fill(&cur, &src);
	}
	zw_block(&out, cur.ov, cur.on);
	zw_drain(&out);
	part_finish(zp, &src, &out, zofd, zt);
out:
	if (zofd >= 0)
		close(zofd);
	XXH3_freeState(xin);
	XXH3_freeState(xout);
	return NULL;
}
