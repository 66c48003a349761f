/*
 * frontier.c: the host table and the public calls on the per-host FIFO
 * queues (see frontier.h for the data structure and its invariants). The
 * disk part of the queues is in frontier_spill.c, checkpoints in
 * frontier_ckpt.c, the structures they share in frontier_internal.h.
 */
#include "frontier/frontier_internal.h"
#include "frontier/url.h"
#include "frontier/base/array.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* ----- host table ----- */

uint32_t frontier__key_hash(const char *k, size_t n)
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
	f->st.mem_hosts += (uint64_t)(cap - f->index_cap) * sizeof *n;
	free(f->index);
	f->index = n;
	f->index_cap = cap;
	return FRONTIER_OK;
}

/* Stores key and, right after it, the host name (both NUL-terminated) in
 * the key arena; returns the key. */
static char *key_store(struct frontier *f, const char *key, size_t n, const char *name,
                       size_t name_len)
{
	struct key_chunk *c = f->keys;
	size_t need = n + 1 + name_len + 1;
	char *p;

	if (c == NULL || c->used + need > KEY_ARENA_CHUNK) {
		c = malloc(sizeof *c + KEY_ARENA_CHUNK);
		if (c == NULL)
			return NULL;
		c->next = f->keys;
		c->used = 0;
		f->keys = c;
		f->st.mem_bytes += mem_alloc_cost(sizeof *c + KEY_ARENA_CHUNK);
		f->st.mem_hosts += mem_alloc_cost(sizeof *c + KEY_ARENA_CHUNK);
	}
	p = c->data + c->used;
	memcpy(p, key, n);
	p[n] = '\0';
	memcpy(p + n + 1, name, name_len);
	p[n + 1 + name_len] = '\0';
	c->used += need;
	return p;
}

enum frontier_err frontier__host_add(struct frontier *f, const char *key, size_t n, uint32_t hash,
                                     uint32_t *out)
{
	uint32_t id = f->nhosts;
	struct fr_host *h;
	uint32_t s;
	size_t authority_len, name_off, name_len;

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
			f->st.mem_hosts += (uint64_t)(cap - f->pages_cap) * sizeof *np;
			f->pages = np;
			f->pages_cap = cap;
		}
		page = calloc(HOST_PAGE, sizeof *page);
		if (page == NULL)
			return FRONTIER_ERR_NOMEM;
		f->pages[f->npages++] = page;
		f->st.mem_bytes += mem_alloc_cost(HOST_PAGE * sizeof *page);
		f->st.mem_hosts += mem_alloc_cost(HOST_PAGE * sizeof *page);
	}
	if (url_key_split(key, n, &authority_len, &name_off, &name_len) != 0)
		name_off = name_len = 0; /* not a crawl key: no name */
	h = host_at(f, id);
	memset(h, 0, sizeof *h);
	h->key = key_store(f, key, n, key + name_off, name_len);
	if (h->key == NULL)
		return FRONTIER_ERR_NOMEM;
	h->key_len = (uint32_t)n;
	h->name_len = (uint16_t)name_len;
	h->hash = hash;
	s = hash & (f->index_cap - 1);
	while (f->index[s] != 0)
		s = (s + 1) & (f->index_cap - 1);
	f->index[s] = id + 1;
	f->nhosts++;
	f->st.hosts++;
	*out = id;
	return FRONTIER_OK;
}

static struct fr_queue *queue_new(struct frontier *f, uint32_t tier)
{
	struct fr_queue *q = calloc(1, sizeof *q);

	if (q == NULL)
		return NULL;
	q->ext_head = q->ext_tail = q->ext_next.pos = POS_NONE;
	q->tier = tier;
	f->st.mem_bytes += mem_alloc_cost(sizeof *q);
	f->st.mem_queues += mem_alloc_cost(sizeof *q);
	return q;
}

static uint64_t tiers_cost(uint32_t cap)
{
	return mem_alloc_cost(sizeof(struct fr_tiers) + cap * sizeof(struct fr_queue *));
}

/* Where a queue of this tier is, or goes, in t (best tier first). */
static uint32_t tiers_find(const struct fr_tiers *t, uint32_t tier)
{
	size_t lo = 0;
	ARRAY_LOWER_BOUND(lo, t->n, mid, t->q[mid]->tier > tier);
	return (uint32_t)lo;
}

/* Inserts q at slot i of h's tier table, growing it: -1 when out of memory. */
static int tiers_insert(struct frontier *f, struct fr_host *h, uint32_t i, struct fr_queue *q)
{
	struct fr_tiers *t = h->tiers;

	if (t->n == t->cap) {
		uint32_t cap = t->cap * 2;
		struct fr_tiers *n = realloc(t, sizeof *t + cap * sizeof *t->q);
		if (n == NULL)
			return -1;
		f->st.mem_bytes += tiers_cost(cap) - tiers_cost(n->cap);
		f->st.mem_queues += tiers_cost(cap) - tiers_cost(n->cap);
		n->cap = cap;
		h->tiers = t = n;
	}
	memmove(&t->q[i + 1], &t->q[i], (t->n - i) * sizeof *t->q);
	t->q[i] = q;
	t->n++;
	return 0;
}

/* Gives h, whose one queue is of another tier, a tier table holding it. */
static int tiers_make(struct frontier *f, struct fr_host *h)
{
	struct fr_tiers *t = malloc(sizeof *t + 4 * sizeof *t->q);

	if (t == NULL)
		return -1;
	t->n = 1;
	t->cap = 4;
	t->q[0] = h->q;
	f->st.mem_bytes += tiers_cost(t->cap);
	f->st.mem_queues += tiers_cost(t->cap);
	h->tiers = t;
	h->tiered = 1;
	return 0;
}

struct fr_queue *frontier__queue_get(struct frontier *f, struct fr_host *h, uint32_t tier)
{
	struct fr_queue *q;
	uint32_t i;

	if (!h->tiered) {
		if (h->q == NULL) {
			h->q = queue_new(f, tier);
			return h->q;
		}
		if (h->q->tier == tier)
			return h->q;
		if (tiers_make(f, h) != 0)
			return NULL;
	}
	i = tiers_find(h->tiers, tier);
	if (i < h->tiers->n && h->tiers->q[i]->tier == tier)
		return h->tiers->q[i];
	q = queue_new(f, tier);
	if (q != NULL && tiers_insert(f, h, i, q) != 0) {
		f->st.mem_bytes -= mem_alloc_cost(sizeof *q);
		f->st.mem_queues -= mem_alloc_cost(sizeof *q);
		free(q);
		q = NULL;
	}
	if (q == NULL && h->tiers->n == 1) { /* back to one queue */
		struct fr_tiers *t = h->tiers;
		f->st.mem_bytes -= tiers_cost(t->cap);
		f->st.mem_queues -= tiers_cost(t->cap);
		h->tiered = 0;
		h->q = t->q[0];
		free(t);
	}
	return q;
}

void frontier__queue_put(struct frontier *f, struct fr_host *h, struct fr_queue *q)
{
	struct fr_tiers *t;
	uint32_t i;

	if (q == NULL || q->mcount != 0 || q->dcount != 0)
		return;
	f->st.mem_bytes -= mem_alloc_cost(sizeof *q);
	f->st.mem_queues -= mem_alloc_cost(sizeof *q);
	if (!h->tiered) {
		free(q);
		h->q = NULL;
		return;
	}
	t = h->tiers;
	for (i = 0; i < t->n && t->q[i] != q; i++)
		;
	free(q);
	memmove(&t->q[i], &t->q[i + 1], (t->n - i - 1) * sizeof *t->q);
	t->n--;
	if (t->n <= 1) { /* one tier left (or none): the host needs no table */
		f->st.mem_bytes -= tiers_cost(t->cap);
		f->st.mem_queues -= tiers_cost(t->cap);
		h->tiered = 0;
		h->q = t->n == 1 ? t->q[0] : NULL;
		free(t);
	}
}

void frontier__host_mark_dirty(struct frontier *f, uint32_t id, struct fr_host *h)
{
	if (h->dirty)
		return;
	h->dirty = 1;
	h->dirty_next = f->dirty_head;
	f->dirty_head = id;
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

static size_t align16(size_t n)
{
	return (n + 15) & ~(size_t)15;
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
	/* The fixed buffers live as long as the frontier: one block, each part
	 * starting 16-byte aligned. */
	f->out_size = f->cfg.write_buffer < OUT_CHUNK ? (uint32_t)f->cfg.write_buffer : OUT_CHUNK;
	size_t out_at = align16(f->cfg.write_buffer), rbuf_at = out_at + align16(f->out_size);
	size_t scratch_at = rbuf_at + align16(READ_CHUNK + sizeof(struct ext_hdr));
	f->wbuf = malloc(scratch_at + 2 * (size_t)FRONTIER_URL_MAX + 2);
	if (f->wbuf == NULL)
		goto out;
	f->out = f->wbuf + out_at;
	f->rbuf = f->wbuf + rbuf_at;
	f->scratch = f->wbuf + scratch_at;
	f->st.mem_bytes = sizeof *f + f->cfg.write_buffer + f->out_size + READ_CHUNK +
	                  sizeof(struct ext_hdr) + 2 * (uint64_t)FRONTIER_URL_MAX + 2;
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

/* Frees the host table: every host's memory part, the host pages, the key
 * arena and the hash index. */
static void host_table_free(struct frontier *f)
{
	for (uint32_t i = 0; i < f->nhosts; i++) {
		struct fr_host *h = host_at(f, i);
		for (uint32_t k = 0; k < host_nqueues(h); k++) {
			struct fr_queue *q = host_queue(h, k);
			struct mnode *n = q->mhead;
			while (n != NULL) {
				struct mnode *next = n->next;
				free(n);
				n = next;
			}
			free(q);
		}
		if (h->tiered)
			free(h->tiers);
	}
	ARRAY_FREE_EACH(f->pages, f->npages);
	while (f->keys != NULL) {
		struct key_chunk *c = f->keys;
		f->keys = c->next;
		free(c);
	}
	free(f->index);
}

void frontier_destroy(struct frontier *f)
{
	if (f == NULL)
		return;
	host_table_free(f);
	frontier__spill_free(f);
	free(f->wbuf);
	free(f);
}

enum frontier_err frontier_host_get(struct frontier *f, const char *key, size_t key_len, int create,
                                    uint32_t *host)
{
	uint32_t hash, s;

	if (f == NULL || key == NULL || host == NULL || key_len == 0 || key_len > FRONTIER_KEY_MAX)
		return FRONTIER_ERR_INVALID;
	hash = frontier__key_hash(key, key_len);
	for (s = hash & (f->index_cap - 1); f->index[s] != 0; s = (s + 1) & (f->index_cap - 1)) {
		struct fr_host *h = host_at(f, f->index[s] - 1);
		if (h->hash == hash && h->key_len == key_len && memcmp(h->key, key, key_len) == 0) {
			*host = f->index[s] - 1;
			return FRONTIER_OK;
		}
	}
	if (!create)
		return FRONTIER_ERR_NOT_FOUND;
	return frontier__host_add(f, key, key_len, hash, host);
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

const char *frontier_host_name(const struct frontier *f, uint32_t host, size_t *len)
{
	const struct fr_host *h = host_ok(f, host);

	if (h == NULL)
		return NULL;
	if (len != NULL)
		*len = h->name_len;
	return h->key + h->key_len + 1;
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

enum frontier_err frontier_push(struct frontier *f, uint32_t host, const char *url, size_t url_len,
                                const char *via, size_t via_len, uint32_t depth)
{
	struct fr_host *h;
	struct fr_queue *q;
	uint64_t cost;
	uint32_t tier;
	int was_empty, rises;
	enum frontier_err e = queue_target(f, host, url, url_len, via, via_len, &h);

	if (e != FRONTIER_OK)
		return e;
	if (f->cfg.max_depth != 0 && frontier_depth_of(depth) > f->cfg.max_depth) {
		f->st.rejected_depth++;
		return FRONTIER_ERR_DEPTH;
	}
	if (f->cfg.max_urls_per_host != 0 && h->urls_ever >= f->cfg.max_urls_per_host) {
		f->st.rejected_budget++;
		return FRONTIER_ERR_BUDGET;
	}
	was_empty = h->q == NULL;
	tier = frontier_tier(depth, f->cfg.order);
	rises = !was_empty && tier > host_queue(h, 0)->tier;
	q = frontier__queue_get(f, h, tier);
	if (q == NULL)
		return FRONTIER_ERR_NOMEM;
	cost = node_cost(url_len, via_len);
	if (q->dcount == 0 && f->st.mem_bytes + cost + f->reserve <= f->cfg.mem_budget) {
		struct mnode *n = node_new(url, (uint16_t)url_len, via, (uint16_t)via_len, depth);
		if (n == NULL) {
			frontier__queue_put(f, h, q);
			return FRONTIER_ERR_NOMEM;
		}
		mem_append(f, q, n);
	} else {
		uint32_t need = BUF_REC_HDR + (uint32_t)url_len + (uint32_t)via_len;
		uint32_t off, link;
		uint16_t ul = (uint16_t)url_len, vl = (uint16_t)via_len;
		char *rec;
		if (f->wbuf_used + need > f->cfg.write_buffer) {
			/* the flush frees no queue: q stays */
			enum frontier_err e = frontier__wbuf_flush(f);
			if (e != FRONTIER_OK) {
				frontier__queue_put(f, h, q);
				return e;
			}
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
		if (q->buf_tail != 0) {
			link = off + 1;
			memcpy(f->wbuf + (q->buf_tail - 1), &link, 4);
		} else {
			q->buf_head = off + 1;
		}
		q->buf_tail = off + 1;
		q->buf_count++;
		q->buf_bytes += DISK_REC_HDR + (uint32_t)url_len + (uint32_t)via_len;
		f->hosts_on_disk += q->dcount == 0;
		q->dcount++;
		f->st.urls_on_disk++;
		frontier__host_mark_dirty(f, host, h);
	}
	h->urls_ever++;
	f->st.pushed++;
	f->st.urls_queued++;
	if ((was_empty || rises) && f->nonempty != NULL)
		f->nonempty(f->nonempty_ctx, host);
	return FRONTIER_OK;
}

enum frontier_err frontier_pop(struct frontier *f, uint32_t host, struct frontier_url *u)
{
	struct fr_host *h = host_ok(f, host);
	struct fr_queue *q;
	struct mnode *n;

	if (h == NULL || u == NULL)
		return FRONTIER_ERR_INVALID;
	q = host_nqueues(h) > 0 ? host_queue(h, 0) : NULL;
	if (q == NULL)
		return FRONTIER_ERR_EMPTY;
	if (q->mcount == 0 && q->dcount > 0) {
		enum frontier_err e = frontier__queue_refill(f, host, q);
		if (e != FRONTIER_OK)
			return e;
	}
	if (q->mcount == 0)
		return FRONTIER_ERR_EMPTY;
	n = q->mhead;
	q->mhead = n->next;
	if (q->mhead == NULL)
		q->mtail = NULL;
	q->mcount--;
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
	frontier__queue_put(f, h, q);
	return FRONTIER_OK;
}

uint64_t frontier_host_queued(const struct frontier *f, uint32_t host)
{
	const struct fr_host *h = host_ok(f, host);
	uint64_t n = 0;

	for (uint32_t i = 0; h != NULL && i < host_nqueues(h); i++)
		n += host_queue(h, i)->mcount + host_queue(h, i)->dcount;
	return n;
}

uint32_t frontier_host_best_tier(const struct frontier *f, uint32_t host)
{
	const struct fr_host *h = host_ok(f, host);

	return h != NULL && host_nqueues(h) > 0 ? host_queue(h, 0)->tier : 0;
}

enum frontier_err frontier_host_retire(struct frontier *f, uint32_t host, frontier_drain_fn cb,
                                       void *ctx, uint64_t *n)
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

void frontier_host_account(struct frontier *f, uint32_t host, uint64_t pages, uint64_t bytes)
{
	struct fr_host *h = host_ok(f, host);

	if (h == NULL)
		return;
	h->pages += pages;
	h->bytes += bytes;
}

void frontier_host_counts(const struct frontier *f, uint32_t host, uint64_t *pages, uint64_t *bytes,
                          uint64_t *urls_ever)
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

enum frontier_err frontier_unpop(struct frontier *f, uint32_t host, const char *url, size_t url_len,
                                 const char *via, size_t via_len, uint32_t depth)
{
	struct fr_host *h;
	struct fr_queue *q;
	struct mnode *n;
	int was_empty;
	enum frontier_err e = queue_target(f, host, url, url_len, via, via_len, &h);

	if (e != FRONTIER_OK)
		return e;
	was_empty = h->q == NULL;
	q = frontier__queue_get(f, h, frontier_tier(depth, f->cfg.order));
	n = q != NULL ? node_new(url, (uint16_t)url_len, via, (uint16_t)via_len, depth) : NULL;
	if (n == NULL) {
		frontier__queue_put(f, h, q);
		return FRONTIER_ERR_NOMEM;
	}
	n->next = q->mhead;
	q->mhead = n;
	if (q->mtail == NULL)
		q->mtail = n;
	q->mcount++;
	f->st.mem_bytes += node_cost(url_len, via_len);
	f->st.urls_in_memory++;
	f->st.urls_queued++;
	if (f->st.popped > 0)
		f->st.popped--;
	if (was_empty && f->nonempty != NULL)
		f->nonempty(f->nonempty_ctx, host);
	return FRONTIER_OK;
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
