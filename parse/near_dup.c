/* near_dup.c: the near-duplicate store (see near_dup.h). */
#include "parse/near_dup.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/mem_cost.h"
#include "parse/simhash.h"

#define NONE32 UINT32_MAX

struct nd_host {
	union {
		uint64_t one; /* cap 1: the fingerprint itself */
		uint64_t *v;  /* cap > 1: cap of them */
	} fp;                 /* n of them set */
	uint32_t host;        /* NONE32 when free */
	uint16_t n;           /* fingerprints held */
	uint16_t cap;
	uint16_t ring;  /* the ring's oldest, once n == cap == NEAR_DUP_HOST_MAX */
	uint32_t older; /* LRU list (when free: the next free record) */
	uint32_t newer;
};

struct stripe {
	pthread_mutex_t mu;
	struct nd_host *recs;
	uint32_t nrecs, recs_cap; /* records used (live or free), allocated */
	uint32_t free;            /* first free record, NONE32: none */
	uint32_t live;            /* hosts held */
	uint32_t *slots;          /* record + 1; 0 = empty */
	uint32_t nslots;          /* a power of two, or 0 */
	uint32_t newest, oldest;  /* LRU list ends, NONE32 when empty */
	uint64_t budget, bytes;
	uint64_t fingerprints, checks, found, evicted, overwritten;
} __attribute__((aligned(64)));

struct near_dup {
	uint64_t budget;
	struct stripe s[NEAR_DUP_STRIPES];
};

static uint32_t slot_home(const struct stripe *s, uint32_t host)
{
	return (host * 2654435761u) & (s->nslots - 1);
}

/* The slot holding host's record, or the empty slot where it would go. */
static uint32_t slot_find(const struct stripe *s, uint32_t host)
{
	uint32_t mask = s->nslots - 1, i = slot_home(s, host);
	while (s->slots[i] != 0 && s->recs[s->slots[i] - 1].host != host)
		i = (i + 1) & mask;
	return i;
}

/* Empties slot i, moving later entries of its probe run back (linear
 * probing needs no tombstones). */
static void slot_remove(struct stripe *s, uint32_t i)
{
	uint32_t mask = s->nslots - 1, j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (s->slots[j] == 0)
			break;
		uint32_t k = slot_home(s, s->recs[s->slots[j] - 1].host);
		/* the entry at j may move to i if its home is not in (i, j] */
		int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (stays)
			continue;
		s->slots[i] = s->slots[j];
		i = j;
	}
	s->slots[i] = 0;
}

/* Doubles the records and the index (rehashing every live record). 0, or
 * -1 (nothing changed). */
static int recs_grow(struct stripe *s)
{
	uint32_t cap = s->recs_cap ? s->recs_cap * 2 : 16, n = cap * 2;
	uint32_t *a = calloc(n, sizeof *a), *old = s->slots, oldn = s->nslots;
	struct nd_host *r = a ? realloc(s->recs, (size_t)cap * sizeof *r) : NULL;
	if (r == NULL) {
		free(a);
		return -1;
	}
	s->recs = r;
	s->slots = a;
	s->nslots = n;
	for (uint32_t i = 0; i < oldn; i++)
		if (old[i] != 0)
			a[slot_find(s, s->recs[old[i] - 1].host)] = old[i];
	free(old);
	s->bytes += (uint64_t)(cap - s->recs_cap) * sizeof *r + (uint64_t)(n - oldn) * sizeof *a;
	s->recs_cap = cap;
	return 0;
}

static void lru_unlink(struct stripe *s, uint32_t r)
{
	struct nd_host *h = &s->recs[r];
	if (h->older != NONE32)
		s->recs[h->older].newer = h->newer;
	else
		s->oldest = h->newer;
	if (h->newer != NONE32)
		s->recs[h->newer].older = h->older;
	else
		s->newest = h->older;
}

static void lru_push_newest(struct stripe *s, uint32_t r)
{
	struct nd_host *h = &s->recs[r];
	h->older = s->newest;
	h->newer = NONE32;
	if (s->newest != NONE32)
		s->recs[s->newest].newer = r;
	else
		s->oldest = r;
	s->newest = r;
}

/* The bytes of cap fingerprints: the first one lives in the record. */
static uint64_t fp_cost(uint32_t cap)
{
	return cap > 1 ? mem_alloc_cost((size_t)cap * sizeof(uint64_t)) : 0;
}

static uint64_t *fps_of(struct nd_host *h)
{
	return h->cap > 1 ? h->fp.v : &h->fp.one;
}

static void host_evict(struct stripe *s, uint32_t r)
{
	struct nd_host *h = &s->recs[r];
	slot_remove(s, slot_find(s, h->host));
	lru_unlink(s, r);
	s->bytes -= fp_cost(h->cap);
	s->fingerprints -= h->n;
	if (h->cap > 1)
		free(h->fp.v);
	h->host = NONE32;
	h->older = s->free;
	s->free = r;
	s->live--;
	s->evicted++;
}

/* Evicts the least recently checked host, never record keep: 1, or 0 when
 * there is no other host. */
static int lru_evict(struct stripe *s, uint32_t keep)
{
	uint32_t r = s->oldest;
	if (r == keep && r != NONE32)
		r = s->recs[r].newer;
	if (r == NONE32)
		return 0;
	host_evict(s, r);
	return 1;
}

/* Evicts hosts until need more bytes fit the stripe's budget: 1 if they
 * do, 0 if nothing but keep is left. */
static int make_room(struct stripe *s, uint64_t need, uint32_t keep)
{
	while (s->bytes + need > s->budget)
		if (!lru_evict(s, keep))
			return 0;
	return 1;
}

/* A free record, the records grown while they stay within three quarters
 * of the stripe's budget, else the least recently checked host's. 0, or
 * -1. */
static int record_room(struct stripe *s)
{
	if (s->free != NONE32 || s->nrecs < s->recs_cap)
		return 0;
	uint64_t grown = (uint64_t)(s->recs_cap ? s->recs_cap * 2 : 16) *
	                 (sizeof *s->recs + 2 * sizeof *s->slots);
	if (s->recs_cap == 0 || grown <= s->budget / 4 * 3) {
		uint64_t more =
		        grown - (uint64_t)s->recs_cap * (sizeof *s->recs + 2 * sizeof *s->slots);
		if (make_room(s, more, NONE32) && recs_grow(s) == 0)
			return 0;
		if (s->free != NONE32)
			return 0;
	}
	return lru_evict(s, NONE32) ? 0 : -1;
}

/* A new record for host (room for one fingerprint, in it), or NONE32. */
static uint32_t host_add(struct stripe *s, uint32_t host)
{
	if (record_room(s) != 0)
		return NONE32;
	uint32_t r;
	if (s->free != NONE32) {
		r = s->free;
		s->free = s->recs[r].older;
	} else {
		r = s->nrecs++;
	}
	s->recs[r] = (struct nd_host){ .host = host, .cap = 1 };
	lru_push_newest(s, r);
	s->slots[slot_find(s, host)] = r + 1;
	s->live++;
	return r;
}

/* Grows record r's fingerprints, from the one in the record to
 * NEAR_DUP_HOST_MIN, then doubling, when the budget allows. 0, or -1. */
static int host_grow(struct stripe *s, uint32_t r)
{
	struct nd_host *h = &s->recs[r];
	uint32_t cap = h->cap > 1 ? h->cap * 2u : NEAR_DUP_HOST_MIN;
	uint64_t more = fp_cost(cap) - fp_cost(h->cap);
	if (!make_room(s, more, r))
		return -1;
	uint64_t *fp = realloc(h->cap > 1 ? h->fp.v : NULL, (size_t)cap * sizeof *fp);
	if (fp == NULL)
		return -1;
	if (h->cap == 1)
		fp[0] = h->fp.one;
	h->fp.v = fp;
	h->cap = (uint16_t)cap;
	s->bytes += more;
	return 0;
}

static void host_record(struct stripe *s, uint32_t r, uint64_t fp)
{
	struct nd_host *h = &s->recs[r];
	if (h->n == h->cap && h->cap < NEAR_DUP_HOST_MAX)
		(void)host_grow(s, r);
	if (h->n < h->cap) {
		fps_of(h)[h->n++] = fp;
		s->fingerprints++;
		return;
	}
	fps_of(h)[h->ring] = fp;
	h->ring = (uint16_t)((h->ring + 1u) % h->cap);
	s->overwritten++;
}

int near_dup_check(struct near_dup *nd, uint32_t host, uint64_t fp)
{
	struct stripe *s = &nd->s[host % NEAR_DUP_STRIPES];
	int dup = 0;
	pthread_mutex_lock(&s->mu);
	s->checks++;
	uint32_t r = s->nslots != 0 ? s->slots[slot_find(s, host)] : 0;
	if (r-- != 0) {
		struct nd_host *h = &s->recs[r];
		const uint64_t *v = fps_of(h);
		if (s->newest != r) {
			lru_unlink(s, r);
			lru_push_newest(s, r);
		}
		for (uint32_t i = 0; i < h->n; i++)
			if (simhash_distance(v[i], fp) <= NEAR_DUP_DISTANCE) {
				dup = 1;
				break;
			}
	} else {
		r = host_add(s, host);
	}
	if (dup)
		s->found++;
	else if (r != NONE32)
		host_record(s, r, fp);
	pthread_mutex_unlock(&s->mu);
	return dup;
}

enum near_dup_err near_dup_create(const struct near_dup_config *c, struct near_dup **out)
{
	*out = NULL;
	if (c == NULL || c->memory < NEAR_DUP_MEMORY_MIN)
		return NEAR_DUP_ERR_INVALID;
	struct near_dup *nd = aligned_alloc(64, sizeof *nd);
	if (nd == NULL)
		return NEAR_DUP_ERR_NOMEM;
	memset(nd, 0, sizeof *nd);
	nd->budget = c->memory;
	for (int i = 0; i < NEAR_DUP_STRIPES; i++) {
		pthread_mutex_init(&nd->s[i].mu, NULL);
		nd->s[i].budget = c->memory / NEAR_DUP_STRIPES;
		nd->s[i].free = nd->s[i].newest = nd->s[i].oldest = NONE32;
	}
	*out = nd;
	return NEAR_DUP_OK;
}

void near_dup_destroy(struct near_dup *nd)
{
	if (nd == NULL)
		return;
	for (int i = 0; i < NEAR_DUP_STRIPES; i++) {
		struct stripe *s = &nd->s[i];
		for (uint32_t r = 0; r < s->nrecs; r++)
			if (s->recs[r].host != NONE32 && s->recs[r].cap > 1)
				free(s->recs[r].fp.v);
		free(s->recs);
		free(s->slots);
		pthread_mutex_destroy(&s->mu);
	}
	free(nd);
}

void near_dup_stats(struct near_dup *nd, struct near_dup_stats *out)
{
	memset(out, 0, sizeof *out);
	out->budget = nd->budget;
	for (int i = 0; i < NEAR_DUP_STRIPES; i++) {
		struct stripe *s = &nd->s[i];
		pthread_mutex_lock(&s->mu);
		out->bytes += s->bytes;
		out->hosts += s->live;
		out->fingerprints += s->fingerprints;
		out->checks += s->checks;
		out->found += s->found;
		out->hosts_evicted += s->evicted;
		out->overwritten += s->overwritten;
		pthread_mutex_unlock(&s->mu);
	}
}
