/* link_meta.c: striped chained hash tables over fixed entry pools (see link_meta.h). */
#include "crawler/link_meta.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 64
#define NIL UINT32_MAX
#define IN_PROGRESS (UINT64_C(1) << 63)
#define ENTRY_COST 48 /* bytes budgeted per entry: the entry and its bucket, rounded */

struct link_meta_via {
	atomic_uint_fast32_t refs;
	uint32_t len;
	char s[];
};

struct entry {
	uint64_t sig;
	struct link_meta_via *via; /* NULL: free */
	uint64_t tag;              /* IN_PROGRESS | ticket, or the done sequence */
	uint64_t epoch;            /* done: the sieve's completed flushes after the add */
	uint32_t depth;
	uint32_t next; /* chain, or the free list */
};

struct stripe {
	pthread_mutex_t mu;
	uint32_t *bucket; /* heads, n_buckets of them */
	uint32_t n_buckets;
	struct entry *pool;
	uint32_t cap, used, free_head;
	uint32_t fresh; /* entries [fresh, cap) never used: the pool is not
	                   touched (nor paged in) before it is needed */
};

struct link_meta {
	struct stripe st[STRIPES];
	uint64_t via_budget;
	atomic_uint_fast64_t via_bytes, tickets, clock, entries, peak, swept, full;
	uint64_t capacity;
};

static struct stripe *stripe_of(struct link_meta *m, uint64_t sig)
{
	return &m->st[(sig >> 58) % STRIPES];
}

static uint32_t bucket_of(const struct stripe *s, uint64_t sig)
{
	return (uint32_t)(sig % s->n_buckets);
}

struct link_meta *link_meta_create(size_t memory)
{
	if (memory < 64u * 1024u)
		return NULL;
	struct link_meta *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	size_t per = memory / 2 / ENTRY_COST / STRIPES;
	if (per < 4)
		per = 4;
	if (per > UINT32_MAX / 2)
		per = UINT32_MAX / 2;
	m->via_budget = memory / 2;
	m->capacity = (uint64_t)per * STRIPES;
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &m->st[i];
		pthread_mutex_init(&s->mu, NULL);
		s->cap = (uint32_t)per;
		s->n_buckets = (uint32_t)per;
		s->pool = malloc(per * sizeof *s->pool);
		s->bucket = malloc(per * sizeof *s->bucket);
		if (!s->pool || !s->bucket) {
			link_meta_destroy(m);
			return NULL;
		}
		for (uint32_t k = 0; k < s->n_buckets; k++)
			s->bucket[k] = NIL;
		s->free_head = NIL;
		s->fresh = 0;
	}
	return m;
}

void link_meta_destroy(struct link_meta *m)
{
	if (!m)
		return;
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &m->st[i];
		if (s->pool)
			for (uint32_t k = 0; k < s->fresh; k++)
				if (s->pool[k].via)
					link_meta_via_release(m, s->pool[k].via);
		free(s->pool);
		free(s->bucket);
		pthread_mutex_destroy(&s->mu);
	}
	free(m);
}

struct link_meta_via *link_meta_via_new(struct link_meta *m, const char *via, size_t len)
{
	if (len > UINT32_MAX - 1)
		return NULL;
	struct link_meta_via *v = malloc(sizeof *v + len + 1);
	if (!v)
		return NULL;
	atomic_init(&v->refs, 1);
	v->len = (uint32_t)len;
	if (len)
		memcpy(v->s, via, len);
	v->s[len] = '\0';
	atomic_fetch_add(&m->via_bytes, sizeof *v + len + 1);
	return v;
}

void link_meta_via_release(struct link_meta *m, struct link_meta_via *v)
{
	if (!v)
		return;
	if (atomic_fetch_sub(&v->refs, 1) == 1) {
		atomic_fetch_sub(&m->via_bytes, sizeof *v + v->len + 1);
		free(v);
	}
}

const char *link_meta_via_str(const struct link_meta_via *v, size_t *len)
{
	if (len)
		*len = v->len;
	return v->s;
}

/* Unlinks entry e (reached through *link) and returns it to the free list.
 * Its via reference is handed back (not released) so callers drop it
 * outside the stripe lock. Caller holds s->mu. */
static struct link_meta_via *entry_remove(struct stripe *s, uint32_t *link, uint32_t e)
{
	struct entry *en = &s->pool[e];
	struct link_meta_via *v = en->via;
	*link = en->next;
	en->via = NULL;
	en->next = s->free_head;
	s->free_head = e;
	s->used--;
	return v;
}

static int stale(const struct entry *en, uint64_t flushes, uint64_t done_before)
{
	if (en->tag & IN_PROGRESS)
		return 0;
	return en->epoch + 3 <= flushes || en->tag < done_before;
}

/* Sweeps one stripe; caller holds s->mu (releasing a via is a free at most). */
static uint64_t stripe_sweep(struct link_meta *m, struct stripe *s, uint64_t flushes,
                             uint64_t done_before)
{
	uint64_t n = 0;
	for (uint32_t b = 0; b < s->n_buckets; b++) {
		uint32_t *link = &s->bucket[b];
		while (*link != NIL) {
			uint32_t e = *link;
			if (stale(&s->pool[e], flushes, done_before)) {
				link_meta_via_release(m, entry_remove(s, link, e));
				n++;
			} else {
				link = &s->pool[e].next;
			}
		}
	}
	return n;
}

/* An unused entry of the stripe: a freed one first, then one never used,
 * then one the sweep frees; NIL when the sweep frees none. */
static uint32_t entry_take(struct link_meta *m, struct stripe *s, uint64_t flushes)
{
	if (s->free_head == NIL && s->fresh < s->cap)
		return s->fresh++;
	if (s->free_head == NIL) {
		uint64_t n = stripe_sweep(m, s, flushes, 0);
		atomic_fetch_add(&m->swept, n);
		atomic_fetch_sub(&m->entries, n);
		if (s->free_head == NIL)
			return NIL;
	}
	uint32_t e = s->free_head;
	s->free_head = s->pool[e].next;
	return e;
}

enum link_meta_result link_meta_put(struct link_meta *m, uint64_t sig, uint32_t depth,
                                    struct link_meta_via *via, uint64_t flushes, int force,
                                    uint64_t *ticket)
{
	struct stripe *s = stripe_of(m, sig);
	enum link_meta_result rc;
	pthread_mutex_lock(&s->mu);
	uint32_t b = bucket_of(s, sig);
	for (uint32_t e = s->bucket[b]; e != NIL; e = s->pool[e].next)
		if (s->pool[e].sig == sig) {
			rc = LINK_META_PRESENT;
			goto out;
		}
	if (!force && atomic_load(&m->via_bytes) > m->via_budget) {
		atomic_fetch_add(&m->full, 1);
		rc = LINK_META_FULL;
		goto out;
	}
	uint32_t e = entry_take(m, s, flushes);
	if (e == NIL) {
		atomic_fetch_add(&m->full, 1);
		rc = LINK_META_FULL;
		goto out;
	}
	struct entry *en = &s->pool[e];
	s->used++;
	en->sig = sig;
	en->via = via;
	atomic_fetch_add(&via->refs, 1);
	en->depth = depth;
	en->epoch = 0;
	*ticket = atomic_fetch_add(&m->tickets, 1) & ~IN_PROGRESS;
	en->tag = IN_PROGRESS | *ticket;
	en->next = s->bucket[b];
	s->bucket[b] = e;
	uint64_t now = atomic_fetch_add(&m->entries, 1) + 1;
	uint64_t peak = atomic_load(&m->peak);
	while (now > peak && !atomic_compare_exchange_weak(&m->peak, &peak, now))
		;
	rc = LINK_META_ADDED;
out:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

void link_meta_done(struct link_meta *m, uint64_t sig, uint64_t ticket, uint64_t flushes)
{
	struct stripe *s = stripe_of(m, sig);
	pthread_mutex_lock(&s->mu);
	for (uint32_t e = s->bucket[bucket_of(s, sig)]; e != NIL; e = s->pool[e].next) {
		struct entry *en = &s->pool[e];
		if (en->sig == sig) {
			if (en->tag == (IN_PROGRESS | ticket)) {
				en->epoch = flushes;
				en->tag = atomic_fetch_add(&m->clock, 1);
			}
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

enum link_meta_result link_meta_take(struct link_meta *m, uint64_t sig, uint32_t *depth,
                                     struct link_meta_via **via)
{
	struct stripe *s = stripe_of(m, sig);
	enum link_meta_result rc = LINK_META_MISSING;
	pthread_mutex_lock(&s->mu);
	uint32_t *link = &s->bucket[bucket_of(s, sig)];
	while (*link != NIL) {
		uint32_t e = *link;
		if (s->pool[e].sig == sig) {
			*depth = s->pool[e].depth;
			*via = entry_remove(s, link, e);
			atomic_fetch_sub(&m->entries, 1);
			rc = LINK_META_PRESENT;
			break;
		}
		link = &s->pool[e].next;
	}
	pthread_mutex_unlock(&s->mu);
	return rc;
}

uint64_t link_meta_clock(struct link_meta *m)
{
	return atomic_load(&m->clock);
}

uint64_t link_meta_sweep(struct link_meta *m, uint64_t flushes, uint64_t done_before)
{
	uint64_t total = 0;
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &m->st[i];
		pthread_mutex_lock(&s->mu);
		total += stripe_sweep(m, s, flushes, done_before);
		pthread_mutex_unlock(&s->mu);
	}
	atomic_fetch_add(&m->swept, total);
	atomic_fetch_sub(&m->entries, total);
	return total;
}

void link_meta_stats(struct link_meta *m, struct link_meta_stats *out)
{
	out->capacity = m->capacity;
	out->entries = atomic_load(&m->entries);
	out->peak_entries = atomic_load(&m->peak);
	out->via_bytes = atomic_load(&m->via_bytes);
	out->swept = atomic_load(&m->swept);
	out->full = atomic_load(&m->full);
	out->mem_bytes = m->capacity * (sizeof m->st[0].pool[0] + sizeof m->st[0].bucket[0]) +
	                 out->via_bytes;
}
