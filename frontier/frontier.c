/*
 * frontier.c: host table and per-host FIFO queues with disk spill. See
 * frontier.h for the data structure and its invariants.
 *
 * On-disk layout. Segment files "seg-NNNNNNNN" in a private directory, written
 * append-only by flushes of the shared write buffer. A flush writes, for each
 * host with buffered records, one extent:
 *     struct ext_hdr { magic, host, count, bytes, next } then `count` records
 *     { u16 url_len, u16 via_len, u32 depth, url bytes, via bytes }.
 * `next` is the position (segment << 32 | offset), record count and size of
 * the host's following extent, patched in place when that extent is written;
 * the host keeps the positions of its head and tail extents. The head
 * extent's `next` is kept in memory (patched there instead of on disk), so a
 * pwrite happens only for hosts with three or more extents, and moving to the
 * next extent costs no read: its header is read with its first records. A segment counts its live bytes and is
 * unlinked when they reach zero after it stopped growing.
 *
 * In the write buffer, records of one host are chained by offset ({u32 next,
 * u16 url_len, u16 via_len, u32 depth} headers), so a flush walks host by host
 * and a host whose disk part is only in the buffer refills from it directly.
 */
#include "frontier/frontier.h"
#include "frontier/fileio.h"
#include "frontier/recfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define POS_NONE UINT64_MAX
#define EXT_MAGIC 0x46525831u /* "FRX1" */
#define HOST_PAGE_BITS 8
#define HOST_PAGE (1u << HOST_PAGE_BITS)
#define KEY_ARENA_CHUNK (64u * 1024u)
#define READ_CHUNK (64u * 1024u)
#define OUT_CHUNK (1024u * 1024u)
#define MAX_SEGMENTS 16384u
#define DISK_REC_HDR 8u
#define BUF_REC_HDR 12u
#define MIN_WRITE_BUFFER (64u * 1024u)

/* Where a host's next extent is and how big it is, so moving to it needs no
 * extra read: its own header is read with its first records. */
struct ext_link {
	uint64_t pos;
	uint32_t count;
	uint32_t bytes;
};

struct ext_hdr {
	uint32_t magic;
	uint32_t host;
	uint32_t count;
	uint32_t bytes; /* payload bytes after the header */
	struct ext_link next;
};

struct mnode {
	struct mnode *next;
	uint16_t url_len;
	uint16_t via_len;
	uint32_t depth;
	char data[];
};

struct fr_host {
	char *key;
	uint32_t key_len;
	uint32_t hash;
	struct mnode *mhead, *mtail;
	uint32_t mcount;
	uint8_t retired;
	uint8_t dirty;
	uint8_t robots_state;
	uint8_t ext_need_hdr; /* head extent's header not read yet */
	uint64_t dcount;   /* records in the disk part: extents + write buffer */
	uint64_t ext_head; /* position of the head extent, POS_NONE if none */
	struct ext_link ext_next; /* next link of the head extent */
	uint64_t ext_tail;
	uint32_t ext_left; /* records left in the head extent */
	uint32_t ext_off;  /* payload offset of the next record in it */
	uint32_t ext_bytes;
	uint32_t buf_head; /* write-buffer offset + 1 of the first buffered record */
	uint32_t buf_tail;
	uint32_t buf_count;
	uint32_t buf_bytes; /* disk-format bytes of the buffered records */
	uint32_t dirty_next;
	void *robots;
	uint64_t robots_exp;
	uint64_t pages, bytes, urls_ever;
};

struct segment {
	int fd;
	uint8_t closed; /* no longer appended to */
	uint64_t size;
	uint64_t live;
};

struct key_chunk {
	struct key_chunk *next;
	size_t used;
	char data[];
};

struct frontier {
	struct frontier_config cfg;
	char *dir;
	struct fr_host **pages;
	uint32_t npages, pages_cap;
	uint32_t nhosts;
	uint32_t *index; /* host id + 1, 0 = empty; open addressing */
	uint32_t index_cap;
	struct key_chunk *keys;
	char *wbuf;
	uint32_t wbuf_used;
	uint32_t dirty_head; /* first dirty host, FRONTIER_HOST_NONE if none */
	char *out;           /* flush output chunk */
	uint32_t out_size;
	char *rbuf;          /* refill read chunk */
	char *scratch;       /* last popped record */
	struct segment *segs;
	uint32_t nsegs, segs_cap;
	uint32_t cur_seg; /* segment being appended, UINT32_MAX if none */
	uint64_t reserve;       /* budget bytes pushes leave to refills */
	uint64_t hosts_on_disk; /* hosts with a non-empty disk part */
	frontier_nonempty_fn nonempty;
	void *nonempty_ctx;
	struct frontier_stats st;
};

/* ----- helpers ----- */

static struct fr_host *host_at(const struct frontier *f, uint32_t id)
{
	return &f->pages[id >> HOST_PAGE_BITS][id & (HOST_PAGE - 1)];
}

static struct fr_host *host_ok(const struct frontier *f, uint32_t id)
{
	if (f == NULL || id >= f->nhosts)
		return NULL;
	return host_at(f, id);
}

/* Accounted size of a heap block: glibc rounds to 16 with 8 bytes of header,
 * 32 bytes minimum. */
static uint64_t alloc_cost(size_t n)
{
	size_t c = (n + 8 + 15) & ~(size_t)15;
	return c < 32 ? 32 : c;
}

static uint64_t node_cost(size_t url_len, size_t via_len)
{
	return alloc_cost(sizeof(struct mnode) + url_len + via_len);
}

static uint64_t make_pos(uint32_t seg, uint32_t off)
{
	return ((uint64_t)seg << 32) | off;
}

static uint32_t pos_seg(uint64_t pos)
{
	return (uint32_t)(pos >> 32);
}

static uint32_t pos_off(uint64_t pos)
{
	return (uint32_t)pos;
}

static void seg_path(const struct frontier *f, uint32_t seg, char *buf, size_t n)
{
	snprintf(buf, n, "%s/seg-%08u", f->dir, seg);
}

/* Deletes a segment that stopped growing and holds no live extent. */
static void seg_maybe_reclaim(struct frontier *f, uint32_t s)
{
	struct segment *sg = &f->segs[s];
	char path[PATH_MAX];

	if (!sg->closed || sg->live != 0 || sg->fd < 0)
		return;
	close(sg->fd);
	sg->fd = -1;
	seg_path(f, s, path, sizeof path);
	unlink(path);
	f->st.disk_bytes -= sg->size;
	f->st.segments--;
}

static enum frontier_err seg_open_new(struct frontier *f)
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
	seg_path(f, f->nsegs, path, sizeof path);
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

/* Links a freshly written extent at pos to the end of host h's chain. */
static enum frontier_err host_link_extent(struct frontier *f, struct fr_host *h, uint64_t pos,
                                          uint32_t count, uint32_t bytes)
{
	struct ext_link link = { pos, count, bytes };

	if (h->ext_head == POS_NONE) {
		h->ext_head = pos;
		h->ext_tail = pos;
		h->ext_next.pos = POS_NONE;
		h->ext_need_hdr = 0;
		h->ext_left = count;
		h->ext_off = 0;
		h->ext_bytes = bytes;
		return FRONTIER_OK;
	}
	if (h->ext_tail == h->ext_head) {
		h->ext_next = link;
	} else {
		struct segment *ts = &f->segs[pos_seg(h->ext_tail)];
		uint64_t off = (uint64_t)pos_off(h->ext_tail) + offsetof(struct ext_hdr, next);
		if (fileio_pwrite_all(ts->fd, (const char *)&link, sizeof link, off) != 0)
			return FRONTIER_ERR_IO;
	}
	h->ext_tail = pos;
	return FRONTIER_OK;
}

/* Writes the buffered records of every dirty host as one extent each, then
 * links the extents into their hosts' chains. Failure-atomic: the bytes are
 * all written before anything is linked, and a failed write (a full disk)
 * cuts the segment back to its size before the flush, so an error leaves
 * the write buffer, the dirty list and every chain as they were: the push
 * that needed room can be retried. */
static enum frontier_err wbuf_flush(struct frontier *f)
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
		err = seg_open_new(f);
		if (err != FRONTIER_OK)
			return err;
	}
	o.sg = &f->segs[f->cur_seg];
	base = o.sg->size;
	/* 1: write every extent. */
	pos = base;
	for (id = f->dirty_head; id != FRONTIER_HOST_NONE; id = host_at(f, id)->dirty_next) {
		struct fr_host *h = host_at(f, id);
		struct ext_hdr hdr;
		uint32_t r;

		if (h->buf_count == 0)
			continue;
		/* An extent must be addressable by a 32-bit offset. */
		if (pos + sizeof hdr + h->buf_bytes > UINT32_MAX) {
			errno = EFBIG;
			err = FRONTIER_ERR_IO;
			goto undo;
		}
		hdr.magic = EXT_MAGIC;
		hdr.host = id;
		hdr.count = h->buf_count;
		hdr.bytes = h->buf_bytes;
		hdr.next.pos = POS_NONE;
		hdr.next.count = 0;
		hdr.next.bytes = 0;
		if (out_put(&o, &hdr, sizeof hdr) != 0) {
			err = FRONTIER_ERR_IO;
			goto undo;
		}
		for (r = h->buf_head; r != 0;) {
			const char *rec = f->wbuf + (r - 1);
			uint32_t next;
			uint16_t ul, vl;
			memcpy(&next, rec, 4);
			memcpy(&ul, rec + 4, 2);
			memcpy(&vl, rec + 6, 2);
			/* The disk record is the buffer record minus its chain link. */
			if (out_put(&o, rec + 4, DISK_REC_HDR + (size_t)ul + vl) != 0) {
				err = FRONTIER_ERR_IO;
				goto undo;
			}
			r = next;
		}
		pos += sizeof hdr + h->buf_bytes;
	}
	if (o.used > 0 && fileio_write_all(o.sg->fd, f->out, o.used) != 0) {
		err = FRONTIER_ERR_IO;
		goto undo;
	}
	/* 2: every byte landed: link the extents, in the same order. */
	pos = base;
	while ((id = f->dirty_head) != FRONTIER_HOST_NONE) {
		struct fr_host *h = host_at(f, id);
		uint32_t bytes = h->buf_bytes;

		f->dirty_head = h->dirty_next;
		h->dirty = 0;
		h->dirty_next = FRONTIER_HOST_NONE;
		if (h->buf_count == 0)
			continue;
		err = host_link_extent(f, h, make_pos(f->cur_seg, (uint32_t)pos), h->buf_count, bytes);
		if (err != FRONTIER_OK)
			return err; /* an in-place patch of an allocated block failed: the disk is failing */
		o.sg->live += sizeof(struct ext_hdr) + bytes;
		h->buf_head = h->buf_tail = 0;
		h->buf_count = 0;
		h->buf_bytes = 0;
		pos += sizeof(struct ext_hdr) + bytes;
	}
	f->wbuf_used = 0;
	f->st.flushes++;
	f->st.disk_bytes += pos - o.sg->size;
	o.sg->size = pos;
	if (o.sg->size >= f->cfg.segment_bytes) {
		uint32_t s = f->cur_seg;
		f->segs[s].closed = 1;
		f->cur_seg = UINT32_MAX;
		seg_maybe_reclaim(f, s);
	}
	return FRONTIER_OK;
undo: {
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

/* ----- memory part ----- */

static void mem_append(struct frontier *f, struct fr_host *h, struct mnode *n)
{
	n->next = NULL;
	if (h->mtail != NULL)
		h->mtail->next = n;
	else
		h->mhead = n;
	h->mtail = n;
	h->mcount++;
	f->st.mem_bytes += node_cost(n->url_len, n->via_len);
	f->st.urls_in_memory++;
}

static struct mnode *node_new(const char *url, uint16_t ul, const char *via, uint16_t vl,
                              uint32_t depth)
{
	struct mnode *n = malloc(sizeof *n + (size_t)ul + vl);

	if (n == NULL)
		return NULL;
	n->url_len = ul;
	n->via_len = vl;
	n->depth = depth;
	memcpy(n->data, url, ul);
	if (vl > 0)
		memcpy(n->data + ul, via, vl);
	return n;
}

/* Room in the budget for one more record of this cost? */
static int budget_allows(const struct frontier *f, uint64_t cost)
{
	return f->st.mem_bytes + cost <= f->cfg.mem_budget;
}

/* Refills h's memory part from the front of its disk part: at least one
 * record, more while the budget allows and the read chunk lasts. */
static enum frontier_err host_refill(struct frontier *f, uint32_t id, struct fr_host *h)
{
	uint32_t taken = 0;

	if (h->ext_head != POS_NONE) {
		struct segment *sg = &f->segs[pos_seg(h->ext_head)];
		uint32_t avail = h->ext_bytes - h->ext_off;
		uint32_t want = avail < READ_CHUNK ? avail : READ_CHUNK;
		uint32_t p = 0, hdr_len = h->ext_need_hdr ? (uint32_t)sizeof(struct ext_hdr) : 0;
		uint64_t off = (uint64_t)pos_off(h->ext_head) + sizeof(struct ext_hdr) + h->ext_off;
		uint64_t room = f->cfg.mem_budget > f->st.mem_bytes
		                        ? f->cfg.mem_budget - f->st.mem_bytes : 0;
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
			if (DISK_REC_HDR + (uint32_t)ul + vl > want) { /* first record cut: read it all */
				want = avail < READ_CHUNK ? avail : READ_CHUNK;
				if (fileio_pread_all(sg->fd, f->rbuf, hdr_len + want, off - hdr_len) != 0)
					return FRONTIER_ERR_IO;
			}
		}
		if (hdr_len > 0) {
			struct ext_hdr hdr;
			memcpy(&hdr, f->rbuf, sizeof hdr);
			if (hdr.magic != EXT_MAGIC || hdr.host != id || hdr.count != h->ext_left ||
			    hdr.bytes != h->ext_bytes)
				return FRONTIER_ERR_IO;
			h->ext_next = hdr.next;
			h->ext_need_hdr = 0;
		}
		while (h->ext_left > 0 && p + DISK_REC_HDR <= want) {
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
			n = node_new(data + p + DISK_REC_HDR, ul, data + p + DISK_REC_HDR + ul, vl, depth);
			if (n == NULL) {
				if (taken == 0)
					return FRONTIER_ERR_NOMEM;
				break;
			}
			mem_append(f, h, n);
			p += DISK_REC_HDR + ul + vl;
			h->ext_left--;
			h->dcount--;
			f->hosts_on_disk -= h->dcount == 0;
			f->st.urls_on_disk--;
			taken++;
		}
		if (taken == 0) /* a record larger than the chunk cannot happen */
			return FRONTIER_ERR_IO;
		h->ext_off += p;
		if (h->ext_left == 0) {
			uint32_t s = pos_seg(h->ext_head);
			f->segs[s].live -= sizeof(struct ext_hdr) + h->ext_bytes;
			seg_maybe_reclaim(f, s);
			if (h->ext_next.pos == POS_NONE) {
				h->ext_head = h->ext_tail = POS_NONE;
			} else {
				/* Its header holds its own next link only if it is not the
				 * tail; the tail's link, when it comes, is patched here. */
				h->ext_head = h->ext_next.pos;
				h->ext_left = h->ext_next.count;
				h->ext_bytes = h->ext_next.bytes;
				h->ext_off = 0;
				h->ext_need_hdr = h->ext_head != h->ext_tail;
				h->ext_next.pos = POS_NONE;
			}
		}
		f->st.refills++;
		return FRONTIER_OK;
	}
	/* The disk part lives only in the write buffer: take from its chain. */
	while (h->buf_head != 0) {
		const char *rec = f->wbuf + (h->buf_head - 1);
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
		mem_append(f, h, n);
		h->buf_head = next;
		h->buf_count--;
		h->buf_bytes -= DISK_REC_HDR + ul + vl;
		h->dcount--;
		f->hosts_on_disk -= h->dcount == 0;
		f->st.urls_on_disk--;
		taken++;
	}
	if (h->buf_head == 0)
		h->buf_tail = 0;
	f->st.refills++;
	return FRONTIER_OK;
}

/* ----- host table ----- */

static uint32_t key_hash(const char *k, size_t n)
{
	return (uint32_t)XXH3_64bits(k, n);
}

static enum frontier_err index_grow(struct frontier *f)
{
	uint32_t cap = f->index_cap ? f->index_cap * 2 : 1024;
	uint32_t *n = calloc(cap, sizeof *n);
	uint32_t i;

	if (n == NULL)
		return FRONTIER_ERR_NOMEM;
	for (i = 0; i < f->nhosts; i++) {
		uint32_t s = host_at(f, i)->hash & (cap - 1);
		while (n[s] != 0)
			s = (s + 1) & (cap - 1);
		n[s] = i + 1;
	}
	f->st.mem_bytes += (uint64_t)(cap - f->index_cap) * sizeof *n;
	free(f->index);
	f->index = n;
	f->index_cap = cap;
	return FRONTIER_OK;
}

static char *key_store(struct frontier *f, const char *key, size_t n)
{
	struct key_chunk *c = f->keys;
	char *p;

	if (c == NULL || c->used + n + 1 > KEY_ARENA_CHUNK) {
		c = malloc(sizeof *c + KEY_ARENA_CHUNK);
		if (c == NULL)
			return NULL;
		c->next = f->keys;
		c->used = 0;
		f->keys = c;
		f->st.mem_bytes += alloc_cost(sizeof *c + KEY_ARENA_CHUNK);
	}
	p = c->data + c->used;
	memcpy(p, key, n);
	p[n] = '\0';
	c->used += n + 1;
	return p;
}

static enum frontier_err host_add(struct frontier *f, const char *key, size_t n, uint32_t hash,
                                  uint32_t *out)
{
	uint32_t id = f->nhosts;
	struct fr_host *h;
	uint32_t s;

	if (f->cfg.max_hosts != 0 && id >= f->cfg.max_hosts)
		return FRONTIER_ERR_FULL;
	if (id >= (1u << 31))
		return FRONTIER_ERR_FULL;
	if ((uint64_t)(id + 1) * 2 > f->index_cap && index_grow(f) != FRONTIER_OK)
		return FRONTIER_ERR_NOMEM;
	if ((id >> HOST_PAGE_BITS) >= f->npages) {
		struct fr_host *page;
		if (f->npages == f->pages_cap) {
			uint32_t cap = f->pages_cap ? f->pages_cap * 2 : 16;
			struct fr_host **np = realloc(f->pages, cap * sizeof *np);
			if (np == NULL)
				return FRONTIER_ERR_NOMEM;
			f->st.mem_bytes += (uint64_t)(cap - f->pages_cap) * sizeof *np;
			f->pages = np;
			f->pages_cap = cap;
		}
		page = calloc(HOST_PAGE, sizeof *page);
		if (page == NULL)
			return FRONTIER_ERR_NOMEM;
		f->pages[f->npages++] = page;
		f->st.mem_bytes += alloc_cost(HOST_PAGE * sizeof *page);
	}
	h = host_at(f, id);
	memset(h, 0, sizeof *h);
	h->key = key_store(f, key, n);
	if (h->key == NULL)
		return FRONTIER_ERR_NOMEM;
	h->key_len = (uint32_t)n;
	h->hash = hash;
	h->ext_head = h->ext_tail = h->ext_next.pos = POS_NONE;
	h->dirty_next = FRONTIER_HOST_NONE;
	s = hash & (f->index_cap - 1);
	while (f->index[s] != 0)
		s = (s + 1) & (f->index_cap - 1);
	f->index[s] = id + 1;
	f->nhosts++;
	f->st.hosts++;
	*out = id;
	return FRONTIER_OK;
}

/* ----- public API ----- */

void frontier_config_default(struct frontier_config *c)
{
	memset(c, 0, sizeof *c);
	c->spill_dir = "/tmp";
	c->mem_budget = 256ull << 20;
	c->write_buffer = 0;
	c->segment_bytes = 64ull << 20;
}

enum frontier_err frontier_create(const struct frontier_config *c, struct frontier **out)
{
	enum frontier_err err = FRONTIER_ERR_NOMEM;
	struct frontier *f = NULL;
	const char *sd;
	size_t sdl;

	if (out == NULL)
		return FRONTIER_ERR_INVALID;
	*out = NULL;
	if (c == NULL || c->mem_budget == 0)
		return FRONTIER_ERR_INVALID;
	f = calloc(1, sizeof *f);
	if (f == NULL)
		return FRONTIER_ERR_NOMEM;
	f->cfg = *c;
	f->cur_seg = UINT32_MAX;
	f->dirty_head = FRONTIER_HOST_NONE;
	if (f->cfg.segment_bytes == 0)
		f->cfg.segment_bytes = 64ull << 20;
	if (f->cfg.write_buffer == 0) {
		uint64_t wb = f->cfg.mem_budget / 8;
		f->cfg.write_buffer = wb > (32ull << 20) ? (32ull << 20) : wb;
	}
	if (f->cfg.write_buffer < MIN_WRITE_BUFFER)
		f->cfg.write_buffer = MIN_WRITE_BUFFER;
	/* Extents are addressed by 32-bit offsets: a segment stops growing past
	 * segment_bytes, so it stays under 1 GiB + one flush (buffer + extent
	 * headers, at most 3 x 512 MiB) < 4 GiB. */
	if (f->cfg.write_buffer > (512ull << 20))
		f->cfg.write_buffer = 512ull << 20;
	if (f->cfg.segment_bytes > (1ull << 30))
		f->cfg.segment_bytes = 1ull << 30;
	sd = c->spill_dir != NULL ? c->spill_dir : "/tmp";
	sdl = strlen(sd);
	f->dir = malloc(sdl + 32);
	if (f->dir == NULL)
		goto out;
	snprintf(f->dir, sdl + 32, "%s/frontier-XXXXXX", sd);
	if (mkdtemp(f->dir) == NULL) {
		free(f->dir);
		f->dir = NULL;
		err = FRONTIER_ERR_IO;
		goto out;
	}
	f->wbuf = malloc(f->cfg.write_buffer);
	f->out_size = f->cfg.write_buffer < OUT_CHUNK ? (uint32_t)f->cfg.write_buffer : OUT_CHUNK;
	f->out = malloc(f->out_size);
	f->rbuf = malloc(READ_CHUNK + sizeof(struct ext_hdr));
	f->scratch = malloc(2 * (size_t)FRONTIER_URL_MAX + 2);
	if (f->wbuf == NULL || f->out == NULL || f->rbuf == NULL || f->scratch == NULL)
		goto out;
	f->st.mem_bytes = sizeof *f + f->cfg.write_buffer + f->out_size + READ_CHUNK + sizeof(struct ext_hdr) +
	                  2 * (uint64_t)FRONTIER_URL_MAX + 2;
	if (index_grow(f) != FRONTIER_OK)
		goto out;
	/* A quarter of what is left after the fixed buffers is kept for
	 * refills; pushes fill the rest. */
	if (f->cfg.mem_budget > f->st.mem_bytes)
		f->reserve = (f->cfg.mem_budget - f->st.mem_bytes) / 4;
	*out = f;
	f = NULL;
	err = FRONTIER_OK;
out:
	frontier_destroy(f);
	return err;
}

void frontier_destroy(struct frontier *f)
{
	uint32_t i;
	char path[PATH_MAX];

	if (f == NULL)
		return;
	for (i = 0; i < f->nhosts; i++) {
		struct fr_host *h = host_at(f, i);
		struct mnode *n = h->mhead;
		while (n != NULL) {
			struct mnode *next = n->next;
			free(n);
			n = next;
		}
		if (h->robots != NULL && f->cfg.robots_free != NULL)
			f->cfg.robots_free(h->robots);
	}
	for (i = 0; i < f->npages; i++)
		free(f->pages[i]);
	free(f->pages);
	for (i = 0; i < f->nsegs; i++) {
		if (f->segs[i].fd >= 0) {
			close(f->segs[i].fd);
			seg_path(f, i, path, sizeof path);
			unlink(path);
		}
	}
	free(f->segs);
	while (f->keys != NULL) {
		struct key_chunk *c = f->keys;
		f->keys = c->next;
		free(c);
	}
	if (f->dir != NULL)
		rmdir(f->dir);
	free(f->dir);
	free(f->index);
	free(f->wbuf);
	free(f->out);
	free(f->rbuf);
	free(f->scratch);
	free(f);
}

enum frontier_err frontier_host_get(struct frontier *f, const char *key, size_t key_len,
                                    int create, uint32_t *host)
{
	uint32_t hash, s;

	if (f == NULL || key == NULL || host == NULL || key_len == 0 ||
	    key_len > FRONTIER_KEY_MAX)
		return FRONTIER_ERR_INVALID;
	hash = key_hash(key, key_len);
	for (s = hash & (f->index_cap - 1); f->index[s] != 0; s = (s + 1) & (f->index_cap - 1)) {
		struct fr_host *h = host_at(f, f->index[s] - 1);
		if (h->hash == hash && h->key_len == key_len && memcmp(h->key, key, key_len) == 0) {
			*host = f->index[s] - 1;
			return FRONTIER_OK;
		}
	}
	if (!create)
		return FRONTIER_ERR_NOT_FOUND;
	return host_add(f, key, key_len, hash, host);
}

const char *frontier_host_key(const struct frontier *f, uint32_t host, size_t *len)
{
	const struct fr_host *h = host_ok(f, host);

	if (h == NULL)
		return NULL;
	if (len != NULL)
		*len = h->key_len;
	return h->key;
}

uint32_t frontier_host_count(const struct frontier *f)
{
	return f != NULL ? f->nhosts : 0;
}

/* The checks push and unpop share: the arguments, and a retired host
 * (counted as dropped). */
static enum frontier_err queue_target(struct frontier *f, uint32_t host, const char *url,
                                      size_t url_len, const char *via, size_t via_len,
                                      struct fr_host **out)
{
	struct fr_host *h = host_ok(f, host);

	if (h == NULL || url == NULL || url_len == 0 || url_len > FRONTIER_URL_MAX ||
	    via_len > FRONTIER_URL_MAX || (via == NULL && via_len != 0))
		return FRONTIER_ERR_INVALID;
	if (h->retired) {
		f->st.dropped_retired++;
		return FRONTIER_ERR_RETIRED;
	}
	*out = h;
	return FRONTIER_OK;
}

enum frontier_err frontier_push(struct frontier *f, uint32_t host, const char *url,
                                size_t url_len, const char *via, size_t via_len,
                                uint32_t depth)
{
	struct fr_host *h;
	uint64_t cost;
	int was_empty;
	enum frontier_err e = queue_target(f, host, url, url_len, via, via_len, &h);

	if (e != FRONTIER_OK)
		return e;
	if (f->cfg.max_depth != 0 && depth > f->cfg.max_depth) {
		f->st.rejected_depth++;
		return FRONTIER_ERR_DEPTH;
	}
	if (f->cfg.max_urls_per_host != 0 && h->urls_ever >= f->cfg.max_urls_per_host) {
		f->st.rejected_budget++;
		return FRONTIER_ERR_BUDGET;
	}
	was_empty = h->mcount == 0 && h->dcount == 0;
	cost = node_cost(url_len, via_len);
	if (h->dcount == 0 && f->st.mem_bytes + cost + f->reserve <= f->cfg.mem_budget) {
		struct mnode *n = node_new(url, (uint16_t)url_len, via, (uint16_t)via_len, depth);
		if (n == NULL)
			return FRONTIER_ERR_NOMEM;
		mem_append(f, h, n);
	} else {
		uint32_t need = BUF_REC_HDR + (uint32_t)url_len + (uint32_t)via_len;
		uint32_t off, link;
		uint16_t ul = (uint16_t)url_len, vl = (uint16_t)via_len;
		char *rec;
		if (f->wbuf_used + need > f->cfg.write_buffer) {
			enum frontier_err e = wbuf_flush(f);
			if (e != FRONTIER_OK)
				return e;
		}
		off = f->wbuf_used;
		rec = f->wbuf + off;
		link = 0;
		memcpy(rec, &link, 4);
		memcpy(rec + 4, &ul, 2);
		memcpy(rec + 6, &vl, 2);
		memcpy(rec + 8, &depth, 4);
		memcpy(rec + BUF_REC_HDR, url, url_len);
		if (via_len > 0)
			memcpy(rec + BUF_REC_HDR + url_len, via, via_len);
		f->wbuf_used += need;
		if (h->buf_tail != 0) {
			link = off + 1;
			memcpy(f->wbuf + (h->buf_tail - 1), &link, 4);
		} else {
			h->buf_head = off + 1;
		}
		h->buf_tail = off + 1;
		h->buf_count++;
		h->buf_bytes += DISK_REC_HDR + (uint32_t)url_len + (uint32_t)via_len;
		f->hosts_on_disk += h->dcount == 0;
		h->dcount++;
		f->st.urls_on_disk++;
		if (!h->dirty) {
			h->dirty = 1;
			h->dirty_next = f->dirty_head;
			f->dirty_head = host;
		}
	}
	h->urls_ever++;
	f->st.pushed++;
	f->st.urls_queued++;
	if (was_empty && f->nonempty != NULL)
		f->nonempty(f->nonempty_ctx, host);
	return FRONTIER_OK;
}

enum frontier_err frontier_pop(struct frontier *f, uint32_t host, struct frontier_url *u)
{
	struct fr_host *h = host_ok(f, host);
	struct mnode *n;

	if (h == NULL || u == NULL)
		return FRONTIER_ERR_INVALID;
	if (h->mcount == 0 && h->dcount > 0) {
		enum frontier_err e = host_refill(f, host, h);
		if (e != FRONTIER_OK)
			return e;
	}
	if (h->mcount == 0)
		return FRONTIER_ERR_EMPTY;
	n = h->mhead;
	h->mhead = n->next;
	if (h->mhead == NULL)
		h->mtail = NULL;
	h->mcount--;
	memcpy(f->scratch, n->data, n->url_len);
	f->scratch[n->url_len] = '\0';
	memcpy(f->scratch + n->url_len + 1, n->data + n->url_len, n->via_len);
	f->scratch[n->url_len + 1 + n->via_len] = '\0';
	u->url = f->scratch;
	u->url_len = n->url_len;
	u->via = f->scratch + n->url_len + 1;
	u->via_len = n->via_len;
	u->depth = n->depth;
	f->st.mem_bytes -= node_cost(n->url_len, n->via_len);
	f->st.urls_in_memory--;
	f->st.urls_queued--;
	f->st.popped++;
	free(n);
	return FRONTIER_OK;
}

uint64_t frontier_host_queued(const struct frontier *f, uint32_t host)
{
	const struct fr_host *h = host_ok(f, host);

	return h != NULL ? h->mcount + h->dcount : 0;
}

enum frontier_err frontier_host_retire(struct frontier *f, uint32_t host,
                                       frontier_drain_fn cb, void *ctx, uint64_t *n)
{
	struct fr_host *h = host_ok(f, host);
	struct frontier_url u;
	uint64_t k = 0;
	enum frontier_err e = FRONTIER_OK;

	if (n != NULL)
		*n = 0;
	if (h == NULL)
		return FRONTIER_ERR_INVALID;
	h->retired = 1;
	while ((e = frontier_pop(f, host, &u)) == FRONTIER_OK) {
		f->st.popped--; /* drained, not handed out for a fetch */
		f->st.dropped_retired++;
		k++;
		if (cb != NULL)
			cb(ctx, host, &u);
	}
	if (n != NULL)
		*n = k;
	return e == FRONTIER_ERR_EMPTY ? FRONTIER_OK : e;
}

int frontier_host_is_retired(const struct frontier *f, uint32_t host)
{
	const struct fr_host *h = host_ok(f, host);

	return h != NULL && h->retired;
}

enum frontier_err frontier_host_robots(const struct frontier *f, uint32_t host,
                                       enum frontier_robots_state *state, void **robots,
                                       uint64_t *expires_us)
{
	const struct fr_host *h = host_ok(f, host);

	if (h == NULL)
		return FRONTIER_ERR_INVALID;
	if (state != NULL)
		*state = (enum frontier_robots_state)h->robots_state;
	if (robots != NULL)
		*robots = h->robots;
	if (expires_us != NULL)
		*expires_us = h->robots_exp;
	return FRONTIER_OK;
}

enum frontier_err frontier_host_set_robots(struct frontier *f, uint32_t host,
                                           enum frontier_robots_state state, void *robots,
                                           uint64_t expires_us)
{
	struct fr_host *h = host_ok(f, host);

	if (h == NULL || state > FRONTIER_ROBOTS_KNOWN)
		return FRONTIER_ERR_INVALID;
	if (h->robots != NULL && h->robots != robots && f->cfg.robots_free != NULL)
		f->cfg.robots_free(h->robots);
	h->robots_state = (uint8_t)state;
	h->robots = robots;
	h->robots_exp = expires_us;
	return FRONTIER_OK;
}

void frontier_host_account(struct frontier *f, uint32_t host, uint64_t pages, uint64_t bytes)
{
	struct fr_host *h = host_ok(f, host);

	if (h == NULL)
		return;
	h->pages += pages;
	h->bytes += bytes;
}

void frontier_host_counts(const struct frontier *f, uint32_t host, uint64_t *pages,
                          uint64_t *bytes, uint64_t *urls_ever)
{
	const struct fr_host *h = host_ok(f, host);

	if (pages != NULL)
		*pages = h != NULL ? h->pages : 0;
	if (bytes != NULL)
		*bytes = h != NULL ? h->bytes : 0;
	if (urls_ever != NULL)
		*urls_ever = h != NULL ? h->urls_ever : 0;
}

void frontier_set_nonempty_cb(struct frontier *f, frontier_nonempty_fn fn, void *ctx)
{
	if (f == NULL)
		return;
	f->nonempty = fn;
	f->nonempty_ctx = ctx;
}

void frontier_stats(const struct frontier *f, struct frontier_stats *s)
{
	if (f == NULL || s == NULL)
		return;
	*s = f->st;
}

enum frontier_err frontier_unpop(struct frontier *f, uint32_t host, const char *url,
                                 size_t url_len, const char *via, size_t via_len,
                                 uint32_t depth)
{
	struct fr_host *h;
	struct mnode *n;
	int was_empty;
	enum frontier_err e = queue_target(f, host, url, url_len, via, via_len, &h);

	if (e != FRONTIER_OK)
		return e;
	n = node_new(url, (uint16_t)url_len, via, (uint16_t)via_len, depth);
	if (n == NULL)
		return FRONTIER_ERR_NOMEM;
	was_empty = h->mcount == 0 && h->dcount == 0;
	n->next = h->mhead;
	h->mhead = n;
	if (h->mtail == NULL)
		h->mtail = n;
	h->mcount++;
	f->st.mem_bytes += node_cost(url_len, via_len);
	f->st.urls_in_memory++;
	f->st.urls_queued++;
	if (f->st.popped > 0)
		f->st.popped--;
	if (was_empty && f->nonempty != NULL)
		f->nonempty(f->nonempty_ctx, host);
	return FRONTIER_OK;
}

/* ----- checkpoints ----- */

#define CKPT_MAGIC "FRQUEUE1"
#define CKPT_FILE "queues"
#define CKPT_BLOB_MAX (64u << 20) /* a saved robots blob (rules of one robots.txt) */

static void ckpt_put_link(struct recfile_writer *w, const struct ext_link *l)
{
	recfile_put_u64(w, l->pos);
	recfile_put_u32(w, l->count);
	recfile_put_u32(w, l->bytes);
}

enum frontier_err frontier_checkpoint(struct frontier *f, const char *dir, uint64_t now_us)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct recfile_writer *w = NULL;
	enum frontier_err err;
	uint32_t i;

	if (f == NULL || dir == NULL)
		return FRONTIER_ERR_INVALID;
	err = wbuf_flush(f);
	if (err != FRONTIER_OK)
		return err;
	for (i = 0; i < f->nsegs; i++) {
		if (f->segs[i].fd < 0)
			continue;
		seg_path(f, i, src, sizeof src);
		snprintf(dst, sizeof dst, "%s/seg-%08u", dir, i);
		if (fileio_link_or_copy(src, dst) != 0)
			return FRONTIER_ERR_IO;
	}
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
		uint8_t rstate = FRONTIER_ROBOTS_UNKNOWN;
		char *blob = NULL;
		size_t blen = 0;
		const struct mnode *n;

		/* A robots.txt fetch in flight is fetched again after a restore. */
		if (h->robots_state == FRONTIER_ROBOTS_KNOWN) {
			if (h->robots == NULL) {
				rstate = FRONTIER_ROBOTS_KNOWN;
			} else if (f->cfg.robots_encode != NULL && f->cfg.robots_decode != NULL &&
			           f->cfg.robots_encode(h->robots, &blob, &blen) == 0) {
				if (blob != NULL && blen <= CKPT_BLOB_MAX) {
					rstate = FRONTIER_ROBOTS_KNOWN;
				} else {
					free(blob);
					blob = NULL;
				}
			}
		}
		recfile_put_bytes(w, h->key, h->key_len);
		recfile_put_u8(w, h->retired);
		recfile_put_u8(w, rstate);
		recfile_put_u8(w, blob != NULL);
		recfile_put_bytes(w, blob, blob != NULL ? (uint32_t)blen : 0);
		free(blob);
		/* 0 = no expiry; otherwise at least 1 so it stays "set". */
		recfile_put_u64(w, h->robots_exp == 0 ? 0
		                   : h->robots_exp > now_us ? h->robots_exp - now_us : 1);
		recfile_put_u64(w, h->pages);
		recfile_put_u64(w, h->bytes);
		recfile_put_u64(w, h->urls_ever);
		recfile_put_u32(w, h->mcount);
		for (n = h->mhead; n != NULL; n = n->next) {
			recfile_put_bytes(w, n->data, n->url_len);
			recfile_put_bytes(w, n->data + n->url_len, n->via_len);
			recfile_put_u32(w, n->depth);
		}
		/* After the flush above the disk part is all in extents. */
		recfile_put_u64(w, h->dcount);
		if (h->dcount > 0) {
			recfile_put_u64(w, h->ext_head);
			recfile_put_u64(w, h->ext_tail);
			ckpt_put_link(w, &h->ext_next);
			recfile_put_u32(w, h->ext_left);
			recfile_put_u32(w, h->ext_off);
			recfile_put_u32(w, h->ext_bytes);
			recfile_put_u8(w, h->ext_need_hdr);
		}
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

static enum frontier_err ckpt_read_host(struct frontier *f, struct recfile_reader *r,
                                        uint32_t want_id, uint64_t now_us, char *buf)
{
	uint32_t klen, id, len, vlen, mcount, depth;
	uint8_t retired, rstate, has_blob;
	uint64_t exp;
	char *blob = NULL;
	struct fr_host *h;
	enum frontier_err err;
	enum recfile_err re;

	re = recfile_get_bytes(r, buf, FRONTIER_KEY_MAX, &klen);
	if (re != RECFILE_OK)
		return ckpt_err(re);
	if (klen == 0)
		return FRONTIER_ERR_CORRUPT;
	err = host_add(f, buf, klen, key_hash(buf, klen), &id);
	if (err != FRONTIER_OK)
		return err;
	if (id != want_id) /* a key saved twice */
		return FRONTIER_ERR_CORRUPT;
	h = host_at(f, id);
	if ((re = recfile_get_u8(r, &retired)) != RECFILE_OK ||
	    (re = recfile_get_u8(r, &rstate)) != RECFILE_OK ||
	    (re = recfile_get_u8(r, &has_blob)) != RECFILE_OK ||
	    (re = recfile_get_bytes_alloc(r, CKPT_BLOB_MAX, &blob, &len)) != RECFILE_OK)
		return ckpt_err(re);
	if (rstate != FRONTIER_ROBOTS_UNKNOWN && rstate != FRONTIER_ROBOTS_KNOWN) {
		free(blob);
		return FRONTIER_ERR_CORRUPT;
	}
	h->retired = retired != 0;
	h->robots_state = rstate;
	if (has_blob) {
		h->robots = f->cfg.robots_decode != NULL && blob != NULL
		                    ? f->cfg.robots_decode(blob, len) : NULL;
		if (h->robots == NULL) /* fetch it again rather than allow everything */
			h->robots_state = FRONTIER_ROBOTS_UNKNOWN;
	}
	free(blob);
	if ((re = recfile_get_u64(r, &exp)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &h->pages)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &h->bytes)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &h->urls_ever)) != RECFILE_OK ||
	    (re = recfile_get_u32(r, &mcount)) != RECFILE_OK)
		return ckpt_err(re);
	h->robots_exp = exp == 0 ? 0 : now_us + exp;
	for (uint32_t k = 0; k < mcount; k++) {
		struct mnode *n;
		if ((re = recfile_get_bytes(r, buf, FRONTIER_URL_MAX, &len)) != RECFILE_OK ||
		    (re = recfile_get_bytes(r, buf + FRONTIER_URL_MAX + 1, FRONTIER_URL_MAX, &vlen)) !=
		            RECFILE_OK ||
		    (re = recfile_get_u32(r, &depth)) != RECFILE_OK)
			return ckpt_err(re);
		if (len == 0)
			return FRONTIER_ERR_CORRUPT;
		n = node_new(buf, (uint16_t)len, buf + FRONTIER_URL_MAX + 1, (uint16_t)vlen, depth);
		if (n == NULL)
			return FRONTIER_ERR_NOMEM;
		mem_append(f, h, n);
	}
	if ((re = recfile_get_u64(r, &h->dcount)) != RECFILE_OK)
		return ckpt_err(re);
	if (h->dcount > 0) {
		uint8_t need_hdr;
		if ((re = recfile_get_u64(r, &h->ext_head)) != RECFILE_OK ||
		    (re = recfile_get_u64(r, &h->ext_tail)) != RECFILE_OK ||
		    (re = recfile_get_u64(r, &h->ext_next.pos)) != RECFILE_OK ||
		    (re = recfile_get_u32(r, &h->ext_next.count)) != RECFILE_OK ||
		    (re = recfile_get_u32(r, &h->ext_next.bytes)) != RECFILE_OK ||
		    (re = recfile_get_u32(r, &h->ext_left)) != RECFILE_OK ||
		    (re = recfile_get_u32(r, &h->ext_off)) != RECFILE_OK ||
		    (re = recfile_get_u32(r, &h->ext_bytes)) != RECFILE_OK ||
		    (re = recfile_get_u8(r, &need_hdr)) != RECFILE_OK)
			return ckpt_err(re);
		h->ext_need_hdr = need_hdr != 0;
		if (!ckpt_pos_ok(f, h->ext_head) || !ckpt_pos_ok(f, h->ext_tail) ||
		    (h->ext_next.pos != POS_NONE && !ckpt_pos_ok(f, h->ext_next.pos)) ||
		    h->ext_left == 0 || h->ext_off > h->ext_bytes || h->ext_left > h->dcount)
			return FRONTIER_ERR_CORRUPT;
		f->hosts_on_disk++;
		f->st.urls_on_disk += h->dcount;
	}
	f->st.urls_queued += h->mcount + h->dcount;
	return FRONTIER_OK;
}

enum frontier_err frontier_restore(const struct frontier_config *c, const char *dir,
                                   uint64_t now_us, struct frontier **out)
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
		seg_path(f, i, dst, sizeof dst);
		if (fileio_link_or_copy(path, dst) != 0) {
			err = FRONTIER_ERR_IO;
			goto out;
		}
		sg->fd = open(dst, O_RDWR | O_CLOEXEC);
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
		err = ckpt_read_host(f, r, i, now_us, buf);
		if (err != FRONTIER_OK)
			goto out;
	}
	if (!recfile_reader_at_end(r)) {
		err = FRONTIER_ERR_CORRUPT;
		goto out;
	}
	for (i = 0; i < f->nsegs; i++)
		seg_maybe_reclaim(f, i);
	*out = f;
	f = NULL;
	err = FRONTIER_OK;
out:
	free(buf);
	recfile_reader_close(r);
	frontier_destroy(f);
	return err;
}

const char *frontier_strerror(enum frontier_err e)
{
	switch (e) {
	case FRONTIER_OK: return "ok";
	case FRONTIER_ERR_NOMEM: return "out of memory";
	case FRONTIER_ERR_IO: return "spill file I/O error";
	case FRONTIER_ERR_INVALID: return "invalid argument";
	case FRONTIER_ERR_EMPTY: return "queue empty";
	case FRONTIER_ERR_NOT_FOUND: return "unknown host";
	case FRONTIER_ERR_RETIRED: return "host retired";
	case FRONTIER_ERR_BUDGET: return "host URL budget reached";
	case FRONTIER_ERR_DEPTH: return "depth limit exceeded";
	case FRONTIER_ERR_FULL: return "host table full";
	case FRONTIER_ERR_CORRUPT: return "checkpoint truncated or corrupt";
	}
	return "unknown error";
}
