/*
 * assign.c: the three assignment methods of assign.h behind one table of
 * operations (struct assign_ops). The view keeps the live agents in an
 * array (each agent one allocation, so names stay put while others come and
 * go); each method adds its own index: the slot table (perm), nothing
 * (minhash), the sorted ring (consistent).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "crawler/cluster/assign.h"
#include "frontier/base/array.h"

#define PERM_MASK (ASSIGN_PERM_SLOTS - 1)

_Static_assert((ASSIGN_PERM_SLOTS & PERM_MASK) == 0, "ASSIGN_PERM_SLOTS is a power of two");
_Static_assert(ASSIGN_PERM_SLOTS <= 65536, "perm positions are 16-bit");

struct assign_agent {
	uint64_t hash; /* XXH3-64 of the name */
	uint32_t slot; /* ASSIGN_PERM: the slot held */
	char name[];
};

/* A replica on the consistent-hashing ring. */
struct ring_point {
	uint64_t pos;
	struct assign_agent *agent;
};

struct assign_ops {
	/* Indexes a (already in v->agents): ASSIGN_OK, ASSIGN_EFULL or
	 * ASSIGN_ENOMEM, with the index unchanged on error. */
	int (*add)(struct assign_view *v, struct assign_agent *a);
	/* Drops a from the index (a is still in v->agents). */
	void (*remove)(struct assign_view *v, struct assign_agent *a);
	/* The names of the first min(k, v->n) agents for the key hash hk. */
	size_t (*choices)(const struct assign_view *v, uint64_t hk, const char **out, size_t k);
};

struct assign_view {
	enum assign_method method;
	const struct assign_ops *ops;
	struct assign_agent **agents; /* the live agents, in no order */
	size_t n, cap;
	/* ASSIGN_PERM: the agent holding each slot, or NULL. */
	struct assign_agent **slots;
	/* ASSIGN_CONSISTENT: n * ASSIGN_REPLICAS points sorted by ring_cmp. */
	struct ring_point *ring;
	size_t ring_n, ring_cap;
};

const char *assign_strerror(int err)
{
	switch (err) {
	case ASSIGN_OK: return "success";
	case ASSIGN_ENOMEM: return "out of memory";
	case ASSIGN_EINVAL: return "invalid argument (method or agent name)";
	case ASSIGN_EEXIST: return "agent already in the view";
	case ASSIGN_ENOENT: return "agent not in the view";
	case ASSIGN_EFULL: return "every permutation slot is taken";
	}
	return "unknown assign error";
}

static const char *const method_names[] = {
	[ASSIGN_PERM] = "perm",
	[ASSIGN_MINHASH] = "minhash",
	[ASSIGN_CONSISTENT] = "consistent",
};

#define N_METHODS (sizeof method_names / sizeof method_names[0])

const char *assign_method_name(enum assign_method m)
{
	return (unsigned)m < N_METHODS ? method_names[m] : "?";
}

int assign_method_parse(const char *name, enum assign_method *out)
{
	if (!name || !out)
		return ASSIGN_EINVAL;
	for (size_t i = 0; i < N_METHODS; i++) {
		if (strcmp(name, method_names[i]) == 0) {
			*out = (enum assign_method)i;
			return ASSIGN_OK;
		}
	}
	return ASSIGN_EINVAL;
}

/* splitmix64 (Steele, Lea, Flood): the PRNG of the perm shuffle and of the
 * ring's replicas. */
static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n >= 1, without bias (Lemire's multiply and reject). */
static uint32_t uniform(uint64_t *state, uint32_t n)
{
	unsigned __int128 m = (unsigned __int128)splitmix64(state) * n;
	uint64_t low = (uint64_t)m;
	if (low < n) {
		uint64_t threshold = -(uint64_t)n % n;
		while (low < threshold) {
			m = (unsigned __int128)splitmix64(state) * n;
			low = (uint64_t)m;
		}
	}
	return (uint32_t)(m >> 64);
}

/* Orders agents by (hash, name): the canonical order of a created view. */
static int agent_cmp(const void *pa, const void *pb)
{
	const struct assign_agent *a = *(struct assign_agent *const *)pa;
	const struct assign_agent *b = *(struct assign_agent *const *)pb;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* ---- ASSIGN_PERM ---- */

static int perm_add(struct assign_view *v, struct assign_agent *a)
{
	for (uint32_t i = 0; i < ASSIGN_PERM_SLOTS; i++) {
		uint32_t s = (uint32_t)(a->hash + i) & PERM_MASK;
		if (!v->slots[s]) {
			v->slots[s] = a;
			a->slot = s;
			return ASSIGN_OK;
		}
	}
	return ASSIGN_EFULL;
}

static void perm_remove(struct assign_view *v, struct assign_agent *a)
{
	v->slots[a->slot] = NULL;
}

/*
 * Lazy Fisher-Yates (notes, Algorithm 2) over the slot universe, seeded by
 * hk: step i swaps position i with a uniform position in [i, |P|); the slot
 * landing at position i is final, and if it is live it is the next choice.
 * The slot at position p is p ^ d[p]: the zeroed d is the identity, and
 * one memset (2 KiB) is cheaper than a loop writing p at each p (no
 * vectorization in a debug build) or branches on a bitmap of the touched
 * positions. A position below i is never read again, so a step writes only
 * position j.
 */
static size_t perm_choices(const struct assign_view *v, uint64_t hk, const char **out, size_t k)
{
	uint16_t d[ASSIGN_PERM_SLOTS];
	uint64_t state = hk;
	size_t found = 0;

	if (k > v->n)
		k = v->n;
	memset(d, 0, sizeof d);
	for (uint32_t i = 0; i < ASSIGN_PERM_SLOTS && found < k; i++) {
		uint32_t j = i + uniform(&state, ASSIGN_PERM_SLOTS - i);
		uint32_t at_i = i ^ d[i], at_j = j ^ d[j];
		d[j] = (uint16_t)(at_i ^ j);
		if (v->slots[at_j])
			out[found++] = v->slots[at_j]->name;
	}
	return found;
}

static const struct assign_ops perm_ops = { perm_add, perm_remove, perm_choices };

/* ---- ASSIGN_MINHASH ---- */

static int minhash_add(struct assign_view *v, struct assign_agent *a)
{
	(void)v;
	(void)a;
	return ASSIGN_OK;
}

static void minhash_remove(struct assign_view *v, struct assign_agent *a)
{
	(void)v;
	(void)a;
}

/* h(a, key): XXH3-64 of hk's little-endian bytes, seeded with the agent's
 * hash (the same on every machine whatever its byte order). */
static uint64_t minhash_h(uint64_t hk, const struct assign_agent *a)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(hk >> (8 * i));
	return XXH3_64bits_withSeed(b, sizeof b, a->hash);
}

/* (h, name) below (h2, name2)? */
static bool minhash_less(uint64_t h, const char *name, uint64_t h2, const char *name2)
{
	return h < h2 || (h == h2 && strcmp(name, name2) < 0);
}

/*
 * The k least (h, name) pairs: for k <= MINHASH_SORTED by insertion into the
 * sorted list out[] (|A| hashes); beyond, one pass per choice for the least
 * pair above the previous one (k |A| hashes, no memory).
 */
#define MINHASH_SORTED 64

static size_t minhash_choices(const struct assign_view *v, uint64_t hk, const char **out, size_t k)
{
	uint64_t hv[MINHASH_SORTED];
	size_t found = 0;

	if (k > v->n)
		k = v->n;
	if (k > MINHASH_SORTED) {
		uint64_t prev_h = 0;
		const char *prev = NULL;
		for (found = 0; found < k; found++) {
			uint64_t best_h = 0;
			const char *best = NULL;
			for (size_t i = 0; i < v->n; i++) {
				const struct assign_agent *a = v->agents[i];
				uint64_t h = minhash_h(hk, a);
				if (prev && !minhash_less(prev_h, prev, h, a->name))
					continue;
				if (!best || minhash_less(h, a->name, best_h, best)) {
					best_h = h;
					best = a->name;
				}
			}
			out[found] = best;
			prev_h = best_h;
			prev = best;
		}
		return found;
	}
	for (size_t i = 0; i < v->n && k > 0; i++) {
		const struct assign_agent *a = v->agents[i];
		uint64_t h = minhash_h(hk, a);
		size_t p = found;
		while (p > 0 && minhash_less(h, a->name, hv[p - 1], out[p - 1]))
			p--;
		if (p == k)
			continue;
		size_t last = found < k ? found : k - 1;
		memmove(hv + p + 1, hv + p, (last - p) * sizeof hv[0]);
		memmove(out + p + 1, out + p, (last - p) * sizeof out[0]);
		hv[p] = h;
		out[p] = a->name;
		if (found < k)
			found++;
	}
	return found;
}

static const struct assign_ops minhash_ops = { minhash_add, minhash_remove, minhash_choices };

/* ---- ASSIGN_CONSISTENT ---- */

static int ring_cmp(const void *pa, const void *pb)
{
	const struct ring_point *a = pa, *b = pb;
	if (a->pos != b->pos)
		return a->pos < b->pos ? -1 : 1;
	if (a->agent == b->agent)
		return 0;
	return strcmp(a->agent->name, b->agent->name);
}

/* The agent's ASSIGN_REPLICAS points, unsorted, into pts. */
static void ring_points(const struct assign_agent *a, struct ring_point *pts)
{
	uint64_t state = a->hash;
	for (size_t r = 0; r < ASSIGN_REPLICAS; r++) {
		pts[r].pos = splitmix64(&state);
		pts[r].agent = (struct assign_agent *)a;
	}
}

/* Sorts the agent's points and merges them, from the back, into the ring. */
static int consistent_add(struct assign_view *v, struct assign_agent *a)
{
	size_t need = v->ring_n + ASSIGN_REPLICAS;
	if (need > v->ring_cap) {
		size_t cap = v->ring_cap ? v->ring_cap : ASSIGN_REPLICAS;
		while (cap < need)
			cap *= 2;
		struct ring_point *r = realloc(v->ring, cap * sizeof *r);
		if (!r)
			return ASSIGN_ENOMEM;
		v->ring = r;
		v->ring_cap = cap;
	}
	struct ring_point pts[ASSIGN_REPLICAS];
	ring_points(a, pts);
	qsort(pts, ASSIGN_REPLICAS, sizeof pts[0], ring_cmp);
	size_t i = v->ring_n, j = ASSIGN_REPLICAS, o = need;
	while (j > 0) {
		if (i > 0 && ring_cmp(&v->ring[i - 1], &pts[j - 1]) > 0)
			v->ring[--o] = v->ring[--i];
		else
			v->ring[--o] = pts[--j];
	}
	v->ring_n = need;
	return ASSIGN_OK;
}

static void consistent_remove(struct assign_view *v, struct assign_agent *a)
{
	size_t o = 0;
	for (size_t i = 0; i < v->ring_n; i++)
		if (v->ring[i].agent != a)
			v->ring[o++] = v->ring[i];
	v->ring_n = o;
}

/* From the first point at or after hk, clockwise, the first k distinct
 * agents. */
static size_t consistent_choices(const struct assign_view *v, uint64_t hk, const char **out,
                                 size_t k)
{
	size_t lo = 0, found = 0;

	if (k > v->n)
		k = v->n;
	ARRAY_LOWER_BOUND(lo, v->ring_n, mid, v->ring[mid].pos < hk);
	for (size_t step = 0; step < v->ring_n && found < k; step++) {
		const char *name = v->ring[(lo + step) % v->ring_n].agent->name;
		size_t f = 0;
		while (f < found && out[f] != name) /* one name string per agent */
			f++;
		if (f == found)
			out[found++] = name;
	}
	return found;
}

static const struct assign_ops consistent_ops = { consistent_add, consistent_remove,
	                                          consistent_choices };

/* ---- the view ---- */

static bool name_valid(const char *name)
{
	if (!name)
		return false;
	size_t len = strlen(name);
	if (len == 0 || len > ASSIGN_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];
		if (c < 0x20 || c == 0x7f)
			return false;
	}
	return true;
}

static struct assign_agent *agent_new(const char *name)
{
	size_t len = strlen(name);
	struct assign_agent *a = malloc(sizeof *a + len + 1);
	if (!a)
		return NULL;
	a->hash = XXH3_64bits(name, len);
	a->slot = 0;
	memcpy(a->name, name, len + 1);
	return a;
}

static ptrdiff_t agent_find(const struct assign_view *v, const char *name)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->agents[i]->name, name) == 0)
			return (ptrdiff_t)i;
	return -1;
}

static int agents_reserve(struct assign_view *v, size_t need)
{
	if (need <= v->cap)
		return ASSIGN_OK;
	size_t cap = v->cap ? v->cap : 8;
	while (cap < need)
		cap *= 2;
	struct assign_agent **p = realloc(v->agents, cap * sizeof *p);
	if (!p)
		return ASSIGN_ENOMEM;
	v->agents = p;
	v->cap = cap;
	return ASSIGN_OK;
}

int assign_view_create(enum assign_method m, const char *const *names, size_t n,
                       struct assign_view **out)
{
	struct assign_view *v = NULL;
	int rc;

	if (!out)
		return ASSIGN_EINVAL;
	*out = NULL;
	if ((unsigned)m >= N_METHODS || (n > 0 && !names))
		return ASSIGN_EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!name_valid(names[i]))
			return ASSIGN_EINVAL;
	if (m == ASSIGN_PERM && n > ASSIGN_PERM_SLOTS)
		return ASSIGN_EFULL;
	rc = ASSIGN_ENOMEM;
	v = calloc(1, sizeof *v);
	if (!v)
		goto out;
	v->method = m;
	v->ops = m == ASSIGN_PERM      ? &perm_ops
	         : m == ASSIGN_MINHASH ? &minhash_ops
	                               : &consistent_ops;
	if (m == ASSIGN_PERM) {
		v->slots = calloc(ASSIGN_PERM_SLOTS, sizeof *v->slots);
		if (!v->slots)
			goto out;
	}
	if (agents_reserve(v, n) != ASSIGN_OK)
		goto out;
	for (size_t i = 0; i < n; i++) {
		v->agents[i] = agent_new(names[i]);
		if (!v->agents[i])
			goto out;
		v->n = i + 1;
	}
	/* The canonical order: perm slots and the ring do not depend on the
	 * order of names[]; equal neighbours are a name given twice. */
	if (n > 1)
		qsort(v->agents, n, sizeof v->agents[0], agent_cmp);
	rc = ASSIGN_EEXIST;
	for (size_t i = 1; i < n; i++)
		if (agent_cmp(&v->agents[i - 1], &v->agents[i]) == 0)
			goto out;
	if (m == ASSIGN_CONSISTENT && n > 0) {
		rc = ASSIGN_ENOMEM;
		v->ring = malloc(n * ASSIGN_REPLICAS * sizeof *v->ring);
		if (!v->ring)
			goto out;
		v->ring_cap = v->ring_n = n * ASSIGN_REPLICAS;
		for (size_t i = 0; i < n; i++)
			ring_points(v->agents[i], v->ring + i * ASSIGN_REPLICAS);
		qsort(v->ring, v->ring_n, sizeof v->ring[0], ring_cmp);
	} else {
		for (size_t i = 0; i < n; i++) {
			rc = v->ops->add(v, v->agents[i]);
			if (rc != ASSIGN_OK)
				goto out;
		}
	}
	*out = v;
	return ASSIGN_OK;
out:
	assign_view_destroy(v);
	return rc;
}

void assign_view_destroy(struct assign_view *v)
{
	if (!v)
		return;
	ARRAY_FREE_EACH(v->agents, v->n);
	free(v->slots);
	free(v->ring);
	free(v);
}

int assign_view_add(struct assign_view *v, const char *name)
{
	if (!v || !name_valid(name))
		return ASSIGN_EINVAL;
	if (agent_find(v, name) >= 0)
		return ASSIGN_EEXIST;
	if (v->method == ASSIGN_PERM && v->n >= ASSIGN_PERM_SLOTS)
		return ASSIGN_EFULL;
	if (agents_reserve(v, v->n + 1) != ASSIGN_OK)
		return ASSIGN_ENOMEM;
	struct assign_agent *a = agent_new(name);
	if (!a)
		return ASSIGN_ENOMEM;
	int rc = v->ops->add(v, a);
	if (rc != ASSIGN_OK) {
		free(a);
		return rc;
	}
	v->agents[v->n++] = a;
	return ASSIGN_OK;
}

int assign_view_remove(struct assign_view *v, const char *name)
{
	if (!v || !name)
		return ASSIGN_EINVAL;
	ptrdiff_t i = agent_find(v, name);
	if (i < 0)
		return ASSIGN_ENOENT;
	struct assign_agent *a = v->agents[i];
	v->ops->remove(v, a);
	v->agents[i] = v->agents[--v->n];
	free(a);
	return ASSIGN_OK;
}

enum assign_method assign_view_method(const struct assign_view *v)
{
	return v->method;
}

size_t assign_view_size(const struct assign_view *v)
{
	return v->n;
}

const char *assign_view_owner(const struct assign_view *v, const char *key, size_t len)
{
	const char *name;
	if (v->ops->choices(v, XXH3_64bits(key, len), &name, 1) == 0)
		return NULL;
	return name;
}

size_t assign_view_choices(const struct assign_view *v, const char *key, size_t len,
                           const char **out, size_t k)
{
	return v->ops->choices(v, XXH3_64bits(key, len), out, k);
}
