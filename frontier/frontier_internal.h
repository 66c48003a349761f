/*
 * frontier_internal.h: what the frontier's own files share (frontier.c: the
 * host table and the public calls; frontier_spill.c: the disk part of the
 * queues; frontier_ckpt.c: checkpoints). Only those files include it; the
 * module's contract is frontier.h.
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
 * next extent costs no read: its header is read with its first records. A
 * segment counts its live bytes and is unlinked when they reach zero after it
 * stopped growing.
 *
 * In the write buffer, records of one host are chained by offset ({u32 next,
 * u16 url_len, u16 via_len, u32 depth} headers), so a flush walks host by host
 * and a host whose disk part is only in the buffer refills from it directly.
 */
#ifndef FRONTIER_FRONTIER_INTERNAL_H
#define FRONTIER_FRONTIER_INTERNAL_H

#include "frontier/base/chain.h"
#include "frontier/base/mem_cost.h"
#include "frontier/frontier.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* One tier of a host's queue: its memory and disk parts. Allocated when
 * the tier goes from empty to non-empty, freed as soon as it is empty
 * again (counted in mem_bytes while it lives): a queue that exists holds
 * at least one URL. */
struct fr_queue {
	struct mnode *mhead, *mtail;
	uint32_t mcount;
	uint8_t ext_need_hdr;     /* head extent's header not read yet */
	uint64_t dcount;          /* records in the disk part: extents + write buffer */
	uint64_t ext_head;        /* position of the head extent, POS_NONE if none */
	struct ext_link ext_next; /* next link of the head extent */
	uint64_t ext_tail;
	uint32_t ext_left; /* records left in the head extent */
	uint32_t ext_off;  /* payload offset of the next record in it */
	uint32_t ext_bytes;
	uint32_t buf_head; /* write-buffer offset + 1 of the first buffered record */
	uint32_t buf_tail;
	uint32_t buf_count;
	uint32_t buf_bytes; /* disk-format bytes of the buffered records */
	uint32_t tier;      /* frontier_tier() of every URL in it */
};

/* The tiers of a host whose queued URLs are of two tiers or more: its
 * queues, best (highest) tier first, each non-empty. */
struct fr_tiers {
	uint32_t n, cap;
	struct fr_queue *q[];
};

/* Every host, for the crawl's life: what it keeps with nothing queued.
 * Its queued URLs are in one queue (q, while they are all of one tier) or
 * in a tier table (tiers, with tiered set); both NULL while it has none. */
struct fr_host {
	char *key;
	union {
		struct fr_queue *q;     /* !tiered */
		struct fr_tiers *tiers; /* tiered */
	};
	uint32_t key_len;
	uint32_t hash;
	uint16_t name_len; /* the host name follows the key's NUL in the key arena */
	uint8_t retired : 1;
	uint8_t tiered : 1;
	uint8_t dirty : 1;   /* on the dirty list (records in the write buffer) */
	uint32_t dirty_next; /* next host on the dirty list */
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
	char *wbuf; /* one block: wbuf, then out, rbuf and scratch */
	uint32_t wbuf_used;
	uint32_t dirty_head; /* first dirty host, FRONTIER_HOST_NONE if none */
	char *out;           /* flush output chunk */
	uint32_t out_size;
	char *rbuf;    /* refill read chunk */
	char *scratch; /* last popped record */
	struct segment *segs;
	uint32_t nsegs, segs_cap;
	uint32_t cur_seg;       /* segment being appended, UINT32_MAX if none */
	uint64_t reserve;       /* budget bytes pushes leave to refills */
	uint64_t hosts_on_disk; /* queues (host tiers) with a non-empty disk part */
	frontier_nonempty_fn nonempty;
	void *nonempty_ctx;
	struct frontier_stats st;
};

/* ----- helpers ----- */

static inline struct fr_host *host_at(const struct frontier *f, uint32_t id)
{
	return &f->pages[id >> HOST_PAGE_BITS][id & (HOST_PAGE - 1)];
}

static inline struct fr_host *host_ok(const struct frontier *f, uint32_t id)
{
	if (f == NULL || id >= f->nhosts)
		return NULL;
	return host_at(f, id);
}

/* How many queues (tiers) h has, and the i-th, best tier first. */
static inline uint32_t host_nqueues(const struct fr_host *h)
{
	if (h->tiered)
		return h->tiers->n;
	return h->q != NULL;
}

static inline struct fr_queue *host_queue(const struct fr_host *h, uint32_t i)
{
	return h->tiered ? h->tiers->q[i] : h->q;
}

static inline uint64_t node_cost(size_t url_len, size_t via_len)
{
	return mem_alloc_cost(sizeof(struct mnode) + url_len + via_len);
}

static inline uint64_t make_pos(uint32_t seg, uint32_t off)
{
	return ((uint64_t)seg << 32) | off;
}

static inline uint32_t pos_seg(uint64_t pos)
{
	return (uint32_t)(pos >> 32);
}

static inline uint32_t pos_off(uint64_t pos)
{
	return (uint32_t)pos;
}

/* ----- memory part ----- */

static inline void mem_append(struct frontier *f, struct fr_queue *q, struct mnode *n)
{
	CHAIN_APPEND(q->mhead, q->mtail, n);
	q->mcount++;
	f->st.mem_bytes += node_cost(n->url_len, n->via_len);
	f->st.urls_in_memory++;
}

static inline struct mnode *node_new(const char *url, uint16_t ul, const char *via, uint16_t vl,
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
static inline int budget_allows(const struct frontier *f, uint64_t cost)
{
	return f->st.mem_bytes + cost <= f->cfg.mem_budget;
}

/* ----- across the frontier's files ----- */

/* frontier_spill.c: the disk part. */
void frontier__seg_path(const struct frontier *f, uint32_t seg, char *buf, size_t n);
/* Deletes a segment that stopped growing and holds no live extent. */
void frontier__seg_maybe_reclaim(struct frontier *f, uint32_t s);
enum frontier_err frontier__seg_open_new(struct frontier *f);
/* Closes and deletes every segment and the private folder, and frees the
 * spill's buffers (write buffer, flush chunk, read chunk). */
void frontier__spill_free(struct frontier *f);
/* Writes the write buffer out as one extent per host with buffered records. */
enum frontier_err frontier__wbuf_flush(struct frontier *f);
/* Refills q's memory part (q a queue of host id) from the front of its
 * disk part: at least one record, more while the budget allows and the
 * read chunk lasts. */
enum frontier_err frontier__queue_refill(struct frontier *f, uint32_t id, struct fr_queue *q);

/* frontier.c: the host table. */
/* h's queue of the given tier, made (empty) if it has none, in its place
 * among h's tiers: NULL when out of memory. The caller fills it or puts it
 * back (frontier__queue_put). */
struct fr_queue *frontier__queue_get(struct frontier *f, struct fr_host *h, uint32_t tier);
/* Frees q, one of h's queues, if it holds nothing, and takes it out of h's
 * tiers (h is idle, without any queue, once its last one goes). */
void frontier__queue_put(struct frontier *f, struct fr_host *h, struct fr_queue *q);
/* Puts h on the dirty list unless it is on it. */
void frontier__host_mark_dirty(struct frontier *f, uint32_t id, struct fr_host *h);
uint32_t frontier__key_hash(const char *k, size_t n);
/* Adds a host (key not yet in the table) and gives its id. */
enum frontier_err frontier__host_add(struct frontier *f, const char *key, size_t n, uint32_t hash,
                                     uint32_t *out);

#endif
