/*
 * frontier_ckpt.c: checkpoints of a frontier (frontier_checkpoint) and
 * frontier_restore; see frontier.h for what they keep and cost.
 */
#include "frontier/base/fileio.h"
#include "frontier/frontier_internal.h"
#include "frontier/base/recfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* ----- checkpoints ----- */

#define CKPT_MAGIC "FRQUEUE2"
#define CKPT_FILE "queues"

static void ckpt_put_link(struct recfile_writer *w, const struct ext_link *l)
{
	recfile_put_u64(w, l->pos);
	recfile_put_u32(w, l->count);
	recfile_put_u32(w, l->bytes);
}

/* One tier of a host's queue, best first: its tier, its memory part, and
 * where its disk part is. */
static void ckpt_put_queue(struct recfile_writer *w, const struct fr_queue *q)
{
	recfile_put_u32(w, q->tier);
	recfile_put_u32(w, q->mcount);
	for (const struct mnode *n = q->mhead; n != NULL; n = n->next) {
		recfile_put_bytes(w, n->data, n->url_len);
		recfile_put_bytes(w, n->data + n->url_len, n->via_len);
		recfile_put_u32(w, n->depth);
	}
	/* After the flush the disk part is all in extents. */
	recfile_put_u64(w, q->dcount);
	if (q->dcount > 0) {
		recfile_put_u64(w, q->ext_head);
		recfile_put_u64(w, q->ext_tail);
		ckpt_put_link(w, &q->ext_next);
		recfile_put_u32(w, q->ext_left);
		recfile_put_u32(w, q->ext_off);
		recfile_put_u32(w, q->ext_bytes);
		recfile_put_u8(w, q->ext_need_hdr);
	}
}

enum frontier_err frontier_checkpoint_segments(struct frontier *f, const char *dir)
{
	char src[PATH_MAX], dst[PATH_MAX];
	enum frontier_err err;

	if (f == NULL || dir == NULL)
		return FRONTIER_ERR_INVALID;
	err = frontier__wbuf_flush(f);
	if (err != FRONTIER_OK)
		return err;
	for (uint32_t i = 0; i < f->nsegs; i++) {
		if (f->segs[i].fd < 0)
			continue;
		frontier__seg_path(f, i, src, sizeof src);
		snprintf(dst, sizeof dst, "%s/seg-%08u", dir, i);
		if (fileio_link_or_copy(src, dst) != 0)
			return FRONTIER_ERR_IO;
	}
	return FRONTIER_OK;
}

enum frontier_err frontier_checkpoint(struct frontier *f, const char *dir)
{
	enum frontier_err err = frontier_checkpoint_segments(f, dir);
	return err != FRONTIER_OK ? err : frontier_checkpoint_queues(f, dir);
}

enum frontier_err frontier_checkpoint_queues(const struct frontier *f, const char *dir)
{
	char dst[PATH_MAX];
	struct recfile_writer *w = NULL;
	uint32_t i;

	if (f == NULL || dir == NULL)
		return FRONTIER_ERR_INVALID;
	snprintf(dst, sizeof dst, "%s/%s", dir, CKPT_FILE);
	if (recfile_writer_create(dst, CKPT_MAGIC, &w) != RECFILE_OK)
		return FRONTIER_ERR_IO;
	recfile_put_u32(w, f->nhosts);
	recfile_put_u32(w, f->nsegs);
	for (i = 0; i < f->nsegs; i++) {
		recfile_put_u8(w, f->segs[i].fd >= 0);
		recfile_put_u64(w, f->segs[i].size);
		recfile_put_u64(w, f->segs[i].live);
	}
	recfile_put_u64(w, f->st.pushed);
	recfile_put_u64(w, f->st.popped);
	recfile_put_u64(w, f->st.dropped_retired);
	recfile_put_u64(w, f->st.rejected_budget);
	recfile_put_u64(w, f->st.rejected_depth);
	recfile_put_u64(w, f->st.flushes);
	recfile_put_u64(w, f->st.refills);
	for (i = 0; i < f->nhosts; i++) {
		const struct fr_host *h = host_at(f, i);

		recfile_put_bytes(w, h->key, h->key_len);
		recfile_put_u8(w, h->retired);
		recfile_put_u64(w, h->pages);
		recfile_put_u64(w, h->bytes);
		recfile_put_u64(w, h->urls_ever);
		recfile_put_u32(w, host_nqueues(h));
		for (uint32_t k = 0; k < host_nqueues(h); k++)
			ckpt_put_queue(w, host_queue(h, k));
	}
	if (recfile_writer_close(w, 0) != RECFILE_OK)
		return FRONTIER_ERR_IO;
	return FRONTIER_OK;
}

/* Maps a recfile error to a frontier error. */
static enum frontier_err ckpt_err(enum recfile_err e)
{
	switch (e) {
	case RECFILE_OK: return FRONTIER_OK;
	case RECFILE_ERR_NOMEM: return FRONTIER_ERR_NOMEM;
	case RECFILE_ERR_IO: return FRONTIER_ERR_IO;
	case RECFILE_ERR_CORRUPT: break;
	}
	return FRONTIER_ERR_CORRUPT;
}

/* A saved extent position must name a segment the checkpoint holds. */
static int ckpt_pos_ok(const struct frontier *f, uint64_t pos)
{
	return pos_seg(pos) < f->nsegs && f->segs[pos_seg(pos)].fd >= 0 &&
	       (uint64_t)pos_off(pos) + sizeof(struct ext_hdr) <= f->segs[pos_seg(pos)].size;
}

/* One fixed-width field of a checkpoint record: the tables below read a
 * record's fields in order instead of a chain of recfile_get calls. */
struct ckpt_field {
	enum { CKPT_U8, CKPT_U32, CKPT_U64 } width;
	union {
		uint8_t *u8;
		uint32_t *u32;
		uint64_t *u64;
	} to;
};

/* Reads the n fields in order; the first error stops the reading. */
static enum recfile_err ckpt_get_fields(struct recfile_reader *r, const struct ckpt_field *fl,
                                        size_t n)
{
	enum recfile_err re = RECFILE_OK;
	for (size_t i = 0; i < n && re == RECFILE_OK; i++) {
		switch (fl[i].width) {
		case CKPT_U8: re = recfile_get_u8(r, fl[i].to.u8); break;
		case CKPT_U32: re = recfile_get_u32(r, fl[i].to.u32); break;
		case CKPT_U64: re = recfile_get_u64(r, fl[i].to.u64); break;
		}
	}
	return re;
}

/* Reads one saved queue of host h (id), whose tier must rank below *prev
 * (the tier before it; UINT64_MAX for the first). */
static enum frontier_err ckpt_read_queue(struct frontier *f, struct recfile_reader *r,
                                         struct fr_host *h, uint64_t *prev, char *buf)
{
	uint32_t tier, len, vlen, mcount, depth;
	uint64_t dcount;
	struct fr_queue *q;
	enum recfile_err re;

	if ((re = recfile_get_u32(r, &tier)) != RECFILE_OK ||
	    (re = recfile_get_u32(r, &mcount)) != RECFILE_OK)
		return ckpt_err(re);
	if (tier >= *prev)
		return FRONTIER_ERR_CORRUPT;
	*prev = tier;
	if ((q = frontier__queue_get(f, h, tier)) == NULL)
		return FRONTIER_ERR_NOMEM;
	for (uint32_t k = 0; k < mcount; k++) {
		struct mnode *n;
		if ((re = recfile_get_bytes(r, buf, FRONTIER_URL_MAX, &len)) != RECFILE_OK ||
		    (re = recfile_get_bytes(r, buf + FRONTIER_URL_MAX + 1, FRONTIER_URL_MAX,
		                            &vlen)) != RECFILE_OK ||
		    (re = recfile_get_u32(r, &depth)) != RECFILE_OK)
			return ckpt_err(re);
		if (len == 0)
			return FRONTIER_ERR_CORRUPT;
		n = node_new(buf, (uint16_t)len, buf + FRONTIER_URL_MAX + 1, (uint16_t)vlen, depth);
		if (n == NULL)
			return FRONTIER_ERR_NOMEM;
		mem_append(f, q, n);
	}
	if ((re = recfile_get_u64(r, &dcount)) != RECFILE_OK)
		return ckpt_err(re);
	if (mcount == 0 && dcount == 0) /* a saved queue holds URLs */
		return FRONTIER_ERR_CORRUPT;
	if (dcount > 0) {
		uint8_t need_hdr;
		q->dcount = dcount;
		const struct ckpt_field ext_fields[] = {
			{ CKPT_U64, { .u64 = &q->ext_head } },
			{ CKPT_U64, { .u64 = &q->ext_tail } },
			{ CKPT_U64, { .u64 = &q->ext_next.pos } },
			{ CKPT_U32, { .u32 = &q->ext_next.count } },
			{ CKPT_U32, { .u32 = &q->ext_next.bytes } },
			{ CKPT_U32, { .u32 = &q->ext_left } },
			{ CKPT_U32, { .u32 = &q->ext_off } },
			{ CKPT_U32, { .u32 = &q->ext_bytes } },
			{ CKPT_U8, { .u8 = &need_hdr } },
		};
		re = ckpt_get_fields(r, ext_fields, sizeof ext_fields / sizeof *ext_fields);
		if (re != RECFILE_OK)
			return ckpt_err(re);
		q->ext_need_hdr = need_hdr != 0;
		if (!ckpt_pos_ok(f, q->ext_head) || !ckpt_pos_ok(f, q->ext_tail) ||
		    (q->ext_next.pos != POS_NONE && !ckpt_pos_ok(f, q->ext_next.pos)) ||
		    q->ext_left == 0 || q->ext_off > q->ext_bytes || q->ext_left > q->dcount)
			return FRONTIER_ERR_CORRUPT;
		f->hosts_on_disk++;
		f->st.urls_on_disk += q->dcount;
	}
	f->st.urls_queued += mcount + dcount;
	return FRONTIER_OK;
}

static enum frontier_err ckpt_read_host(struct frontier *f, struct recfile_reader *r,
                                        uint32_t want_id, char *buf)
{
	uint32_t klen, id, nqueues;
	uint64_t prev = UINT64_MAX;
	uint8_t retired;
	struct fr_host *h;
	enum frontier_err err;
	enum recfile_err re;

	re = recfile_get_bytes(r, buf, FRONTIER_KEY_MAX, &klen);
	if (re != RECFILE_OK)
		return ckpt_err(re);
	if (klen == 0)
		return FRONTIER_ERR_CORRUPT;
	err = frontier__host_add(f, buf, klen, frontier__key_hash(buf, klen), &id);
	if (err != FRONTIER_OK)
		return err;
	if (id != want_id) /* a key saved twice */
		return FRONTIER_ERR_CORRUPT;
	h = host_at(f, id);
	const struct ckpt_field host_fields[] = {
		{ CKPT_U8, { .u8 = &retired } },    { CKPT_U64, { .u64 = &h->pages } },
		{ CKPT_U64, { .u64 = &h->bytes } }, { CKPT_U64, { .u64 = &h->urls_ever } },
		{ CKPT_U32, { .u32 = &nqueues } },
	};
	re = ckpt_get_fields(r, host_fields, sizeof host_fields / sizeof *host_fields);
	if (re != RECFILE_OK)
		return ckpt_err(re);
	h->retired = retired != 0;
	for (uint32_t k = 0; k < nqueues && err == FRONTIER_OK; k++)
		err = ckpt_read_queue(f, r, h, &prev, buf);
	return err;
}

enum frontier_err frontier_restore(const struct frontier_config *c, const char *dir,
                                   struct frontier **out)
{
	struct frontier *f = NULL;
	struct recfile_reader *r = NULL;
	char path[PATH_MAX], dst[PATH_MAX];
	char *buf = NULL;
	uint32_t nhosts, nsegs, i;
	enum frontier_err err;
	enum recfile_err re;

	if (out == NULL || dir == NULL)
		return FRONTIER_ERR_INVALID;
	*out = NULL;
	err = frontier_create(c, &f);
	if (err != FRONTIER_OK)
		return err;
	snprintf(path, sizeof path, "%s/%s", dir, CKPT_FILE);
	re = recfile_reader_open(path, CKPT_MAGIC, &r);
	if (re != RECFILE_OK) {
		err = ckpt_err(re);
		goto out;
	}
	buf = malloc(2 * (size_t)FRONTIER_URL_MAX + 2);
	if (buf == NULL) {
		err = FRONTIER_ERR_NOMEM;
		goto out;
	}
	if ((re = recfile_get_u32(r, &nhosts)) != RECFILE_OK ||
	    (re = recfile_get_u32(r, &nsegs)) != RECFILE_OK) {
		err = ckpt_err(re);
		goto out;
	}
	err = FRONTIER_ERR_CORRUPT;
	if (nsegs > MAX_SEGMENTS || (c->max_hosts != 0 && nhosts > c->max_hosts))
		goto out;
	if (nsegs > 0) {
		f->segs = calloc(nsegs, sizeof *f->segs);
		if (f->segs == NULL) {
			err = FRONTIER_ERR_NOMEM;
			goto out;
		}
		f->segs_cap = nsegs;
		f->st.mem_bytes += (uint64_t)nsegs * sizeof *f->segs;
	}
	/* Old segments are read, never appended: new flushes start a new one. */
	for (i = 0; i < nsegs; i++) {
		struct segment *sg = &f->segs[i];
		uint8_t present;
		sg->fd = -1;
		sg->closed = 1;
		f->nsegs = i + 1;
		if ((re = recfile_get_u8(r, &present)) != RECFILE_OK ||
		    (re = recfile_get_u64(r, &sg->size)) != RECFILE_OK ||
		    (re = recfile_get_u64(r, &sg->live)) != RECFILE_OK) {
			err = ckpt_err(re);
			goto out;
		}
		if (!present)
			continue;
		snprintf(path, sizeof path, "%s/seg-%08u", dir, i);
		frontier__seg_path(f, i, dst, sizeof dst);
		sg->fd = fileio_link_or_copy(path, dst) == 0 ? open(dst, O_RDWR | O_CLOEXEC) : -1;
		if (sg->fd < 0) {
			err = FRONTIER_ERR_IO;
			goto out;
		}
		f->st.segments++;
		f->st.disk_bytes += sg->size;
	}
	if ((re = recfile_get_u64(r, &f->st.pushed)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &f->st.popped)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &f->st.dropped_retired)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &f->st.rejected_budget)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &f->st.rejected_depth)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &f->st.flushes)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &f->st.refills)) != RECFILE_OK) {
		err = ckpt_err(re);
		goto out;
	}
	for (i = 0; i < nhosts; i++) {
		err = ckpt_read_host(f, r, i, buf);
		if (err != FRONTIER_OK)
			goto out;
	}
	if (!recfile_reader_at_end(r)) {
		err = FRONTIER_ERR_CORRUPT;
		goto out;
	}
	for (i = 0; i < f->nsegs; i++)
		frontier__seg_maybe_reclaim(f, i);
	*out = f;
	f = NULL;
	err = FRONTIER_OK;
out:
	free(buf);
	recfile_reader_close(r);
	frontier_destroy(f);
	return err;
}
