/*
 * frontier_spill.c: the disk part of the frontier's queues: segment files,
 * the flush of the shared write buffer into extents, and refills of a
 * host's memory part from the front of its disk part. Layout in
 * frontier_internal.h; contract in frontier.h.
 */
#include "frontier/base/fileio.h"
#include "frontier/frontier_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

void frontier__seg_path(const struct frontier *f, uint32_t seg, char *buf, size_t n)
{
	snprintf(buf, n, "%s/seg-%08u", f->dir, seg);
}

void frontier__seg_maybe_reclaim(struct frontier *f, uint32_t s)
{
	struct segment *sg = &f->segs[s];
	char path[PATH_MAX];

	if (!sg->closed || sg->live != 0 || sg->fd < 0)
		return;
	close(sg->fd);
	sg->fd = -1;
	frontier__seg_path(f, s, path, sizeof path);
	unlink(path);
	f->st.disk_bytes -= sg->size;
	f->st.segments--;
}

void frontier__spill_free(struct frontier *f)
{
	char path[PATH_MAX];

	for (uint32_t i = 0; i < f->nsegs; i++) {
		if (f->segs[i].fd >= 0) {
			close(f->segs[i].fd);
			frontier__seg_path(f, i, path, sizeof path);
			unlink(path);
		}
	}
	free(f->segs);
	if (f->dir != NULL)
		rmdir(f->dir);
	free(f->dir);
}

enum frontier_err frontier__seg_open_new(struct frontier *f)
{
	char path[PATH_MAX];
	struct segment *sg;

	if (f->nsegs >= MAX_SEGMENTS)
		return FRONTIER_ERR_IO;
	if (f->nsegs == f->segs_cap) {
		uint32_t cap = f->segs_cap ? f->segs_cap * 2 : 16;
		struct segment *n = realloc(f->segs, cap * sizeof *n);
		if (n == NULL)
			return FRONTIER_ERR_NOMEM;
		f->st.mem_bytes += (uint64_t)(cap - f->segs_cap) * sizeof *n;
		f->segs = n;
		f->segs_cap = cap;
	}
	frontier__seg_path(f, f->nsegs, path, sizeof path);
	sg = &f->segs[f->nsegs];
	sg->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (sg->fd < 0)
		return FRONTIER_ERR_IO;
	sg->closed = 0;
	sg->size = 0;
	sg->live = 0;
	f->cur_seg = f->nsegs++;
	f->st.segments++;
	return FRONTIER_OK;
}

/* ----- flush of the write buffer ----- */

struct outbuf {
	struct frontier *f;
	struct segment *sg;
	uint32_t used;
	uint64_t flushed; /* bytes of this flush already written to the segment */
};

static int out_put(struct outbuf *o, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		size_t room = o->f->out_size - o->used;
		size_t k = n < room ? n : room;
		memcpy(o->f->out + o->used, c, k);
		o->used += (uint32_t)k;
		c += k;
		n -= k;
		if (o->used == o->f->out_size) {
			if (fileio_write_all(o->sg->fd, o->f->out, o->used) != 0)
				return -1;
			o->flushed += o->used;
			o->used = 0;
		}
	}
	return 0;
}

/* Links a freshly written extent at pos to the end of queue q's chain. */
static enum frontier_err host_link_extent(struct frontier *f, struct fr_queue *q, uint64_t pos,
                                          uint32_t count, uint32_t bytes)
{
	struct ext_link link = { pos, count, bytes };

	if (q->ext_head == POS_NONE) {
		q->ext_head = pos;
		q->ext_tail = pos;
		q->ext_next.pos = POS_NONE;
		q->ext_need_hdr = 0;
		q->ext_left = count;
		q->ext_off = 0;
		q->ext_bytes = bytes;
		return FRONTIER_OK;
	}
	if (q->ext_tail == q->ext_head) {
		q->ext_next = link;
	} else {
		struct segment *ts = &f->segs[pos_seg(q->ext_tail)];
		uint64_t off = (uint64_t)pos_off(q->ext_tail) + offsetof(struct ext_hdr, next);
		if (fileio_pwrite_all(ts->fd, (const char *)&link, sizeof link, off) != 0)
			return FRONTIER_ERR_IO;
	}
	q->ext_tail = pos;
	return FRONTIER_OK;
}

/* Writes the buffered records of q (a queue of host id) as one extent
 * into o at pos, which it advances. */
static enum frontier_err extent_write(struct frontier *f, struct outbuf *o, uint32_t id,
                                      const struct fr_queue *q, uint64_t *pos)
{
	struct ext_hdr hdr;

	/* An extent must be addressable by a 32-bit offset. */
	if (*pos + sizeof hdr + q->buf_bytes > UINT32_MAX) {
		errno = EFBIG;
		return FRONTIER_ERR_IO;
	}
	hdr.magic = EXT_MAGIC;
	hdr.host = id;
	hdr.count = q->buf_count;
	hdr.bytes = q->buf_bytes;
	hdr.next.pos = POS_NONE;
	hdr.next.count = 0;
	hdr.next.bytes = 0;
	if (out_put(o, &hdr, sizeof hdr) != 0)
		return FRONTIER_ERR_IO;
	for (uint32_t r = q->buf_head; r != 0;) {
		const char *rec = f->wbuf + (r - 1);
		uint32_t next;
		uint16_t ul, vl;
		memcpy(&next, rec, 4);
		memcpy(&ul, rec + 4, 2);
		memcpy(&vl, rec + 6, 2);
		/* The disk record is the buffer record minus its chain link. */
		if (out_put(o, rec + 4, DISK_REC_HDR + (size_t)ul + vl) != 0)
			return FRONTIER_ERR_IO;
		r = next;
	}
	*pos += sizeof hdr + q->buf_bytes;
	return FRONTIER_OK;
}

/* Writes the buffered records of every queue of every dirty host as one
 * extent each, then links the extents into their queues' chains.
 * Failure-atomic: the bytes are all written before anything is linked,
 * and a failed write (a full disk) cuts the segment back to its size
 * before the flush, so an error leaves the write buffer, the dirty list
 * and every chain as they were: the push that needed room can be
 * retried. */
enum frontier_err frontier__wbuf_flush(struct frontier *f)
{
	enum frontier_err err = FRONTIER_OK;
	struct outbuf o = { f, NULL, 0, 0 };
	uint32_t id;
	uint64_t base, pos;

	if (f->dirty_head == FRONTIER_HOST_NONE) {
		f->wbuf_used = 0;
		return FRONTIER_OK;
	}
	if (f->cur_seg == UINT32_MAX) {
		err = frontier__seg_open_new(f);
		if (err != FRONTIER_OK)
			return err;
	}
	o.sg = &f->segs[f->cur_seg];
	base = o.sg->size;
	/* 1: write every extent. */
	pos = base;
	for (id = f->dirty_head; id != FRONTIER_HOST_NONE; id = host_at(f, id)->dirty_next) {
		const struct fr_host *h = host_at(f, id);
		for (uint32_t k = 0; k < host_nqueues(h); k++) {
			const struct fr_queue *q = host_queue(h, k);
			if (q->buf_count == 0)
				continue;
			err = extent_write(f, &o, id, q, &pos);
			if (err != FRONTIER_OK)
				goto undo;
		}
	}
	if (o.used > 0 && fileio_write_all(o.sg->fd, f->out, o.used) != 0) {
		err = FRONTIER_ERR_IO;
		goto undo;
	}
	/* 2: every byte landed: link the extents, in the same order. */
	pos = base;
	while ((id = f->dirty_head) != FRONTIER_HOST_NONE) {
		struct fr_host *h = host_at(f, id);

		f->dirty_head = h->dirty_next;
		h->dirty = 0;
		h->dirty_next = FRONTIER_HOST_NONE;
		for (uint32_t k = 0; k < host_nqueues(h); k++) {
			struct fr_queue *q = host_queue(h, k);
			uint32_t bytes = q->buf_bytes;
			if (q->buf_count == 0)
				continue;
			err = host_link_extent(f, q, make_pos(f->cur_seg, (uint32_t)pos),
			                       q->buf_count, bytes);
			if (err != FRONTIER_OK)
				return err; /* an in-place patch of an allocated block failed: the disk is failing */
			o.sg->live += sizeof(struct ext_hdr) + bytes;
			q->buf_head = q->buf_tail = 0;
			q->buf_count = 0;
			q->buf_bytes = 0;
			pos += sizeof(struct ext_hdr) + bytes;
		}
	}
	f->wbuf_used = 0;
	f->st.flushes++;
	f->st.disk_bytes += pos - o.sg->size;
	o.sg->size = pos;
	if (o.sg->size >= f->cfg.segment_bytes) {
		uint32_t s = f->cur_seg;
		f->segs[s].closed = 1;
		f->cur_seg = UINT32_MAX;
		frontier__seg_maybe_reclaim(f, s);
	}
	return FRONTIER_OK;
undo : {
	int e = errno;
	if (ftruncate(o.sg->fd, (off_t)base) != 0 || lseek(o.sg->fd, (off_t)base, SEEK_SET) < 0) {
		/* cannot even cut back: leave the segment to be reclaimed, write elsewhere */
		o.sg->closed = 1;
		f->cur_seg = UINT32_MAX;
	}
	errno = e;
	return err;
}
}

enum frontier_err frontier__queue_refill(struct frontier *f, uint32_t id, struct fr_queue *q)
{
	uint32_t taken = 0;

	if (q->ext_head != POS_NONE) {
		struct segment *sg = &f->segs[pos_seg(q->ext_head)];
		uint32_t avail = q->ext_bytes - q->ext_off;
		uint32_t want = avail < READ_CHUNK ? avail : READ_CHUNK;
		uint32_t p = 0, hdr_len = q->ext_need_hdr ? (uint32_t)sizeof(struct ext_hdr) : 0;
		uint64_t off = (uint64_t)pos_off(q->ext_head) + sizeof(struct ext_hdr) + q->ext_off;
		uint64_t room = f->cfg.mem_budget > f->st.mem_bytes
		                        ? f->cfg.mem_budget - f->st.mem_bytes
		                        : 0;
		uint64_t share = f->reserve / (f->hosts_on_disk ? f->hosts_on_disk : 1);
		const char *data = f->rbuf + hdr_len;

		/* Read about what this host may keep: its share of the refill
		 * reserve (so every host with spilled URLs can hold a batch at
		 * once, instead of the first ones taking it all and the others
		 * one record per read), and no more than the budget has room for.
		 * Reading 64 KiB to keep one record would dominate the cost. */
		if (room > share)
			room = share;
		if (room < 512)
			room = 512;
		if (want > room)
			want = (uint32_t)room;
		if (fileio_pread_all(sg->fd, f->rbuf, hdr_len + want, off - hdr_len) != 0)
			return FRONTIER_ERR_IO;
		if (want < avail && want < READ_CHUNK) {
			uint16_t ul, vl;
			memcpy(&ul, data, 2);
			memcpy(&vl, data + 2, 2);
			if (DISK_REC_HDR + (uint32_t)ul + vl >
			    want) { /* first record cut: read it all */
				want = avail < READ_CHUNK ? avail : READ_CHUNK;
				if (fileio_pread_all(sg->fd, f->rbuf, hdr_len + want,
				                     off - hdr_len) != 0)
					return FRONTIER_ERR_IO;
			}
		}
		if (hdr_len > 0) {
			struct ext_hdr hdr;
			memcpy(&hdr, f->rbuf, sizeof hdr);
			if (hdr.magic != EXT_MAGIC || hdr.host != id || hdr.count != q->ext_left ||
			    hdr.bytes != q->ext_bytes)
				return FRONTIER_ERR_IO;
			q->ext_next = hdr.next;
			q->ext_need_hdr = 0;
		}
		while (q->ext_left > 0 && p + DISK_REC_HDR <= want) {
			uint16_t ul, vl;
			uint32_t depth;
			struct mnode *n;
			memcpy(&ul, data + p, 2);
			memcpy(&vl, data + p + 2, 2);
			memcpy(&depth, data + p + 4, 4);
			if (p + DISK_REC_HDR + ul + vl > want)
				break;
			if (taken > 0 && (!budget_allows(f, node_cost(ul, vl)) || p >= room))
				break;
			n = node_new(data + p + DISK_REC_HDR, ul, data + p + DISK_REC_HDR + ul, vl,
			             depth);
			if (n == NULL) {
				if (taken == 0)
					return FRONTIER_ERR_NOMEM;
				break;
			}
			mem_append(f, q, n);
			p += DISK_REC_HDR + ul + vl;
			q->ext_left--;
			q->dcount--;
			f->hosts_on_disk -= q->dcount == 0;
			f->st.urls_on_disk--;
			taken++;
		}
		if (taken == 0) /* a record larger than the chunk cannot happen */
			return FRONTIER_ERR_IO;
		q->ext_off += p;
		if (q->ext_left == 0) {
			uint32_t s = pos_seg(q->ext_head);
			f->segs[s].live -= sizeof(struct ext_hdr) + q->ext_bytes;
			frontier__seg_maybe_reclaim(f, s);
			if (q->ext_next.pos == POS_NONE) {
				q->ext_head = q->ext_tail = POS_NONE;
			} else {
				/* Its header holds its own next link only if it is not the
				 * tail; the tail's link, when it comes, is patched here. */
				q->ext_head = q->ext_next.pos;
				q->ext_left = q->ext_next.count;
				q->ext_bytes = q->ext_next.bytes;
				q->ext_off = 0;
				q->ext_need_hdr = q->ext_head != q->ext_tail;
				q->ext_next.pos = POS_NONE;
			}
		}
		f->st.refills++;
		return FRONTIER_OK;
	}
	/* The disk part lives only in the write buffer: take from its chain. */
	while (q->buf_head != 0) {
		const char *rec = f->wbuf + (q->buf_head - 1);
		uint32_t next, depth;
		uint16_t ul, vl;
		struct mnode *n;
		memcpy(&next, rec, 4);
		memcpy(&ul, rec + 4, 2);
		memcpy(&vl, rec + 6, 2);
		memcpy(&depth, rec + 8, 4);
		if (taken > 0 && (!budget_allows(f, node_cost(ul, vl)) || taken >= 256))
			break;
		n = node_new(rec + BUF_REC_HDR, ul, rec + BUF_REC_HDR + ul, vl, depth);
		if (n == NULL)
			return taken > 0 ? FRONTIER_OK : FRONTIER_ERR_NOMEM;
		mem_append(f, q, n);
		q->buf_head = next;
		q->buf_count--;
		q->buf_bytes -= DISK_REC_HDR + ul + vl;
		q->dcount--;
		f->hosts_on_disk -= q->dcount == 0;
		f->st.urls_on_disk--;
		taken++;
	}
	if (q->buf_head == 0)
		q->buf_tail = 0;
	f->st.refills++;
	return FRONTIER_OK;
}
