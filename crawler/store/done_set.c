/*
 * done_set.c: see done_set.h. Linear probing over a power-of-two table;
 * 0 marks an empty slot (a signature of 0 is stored as 1), and a removal
 * shifts the rest of its run back, so no tombstones build up.
 */
#include "crawler/store/done_set.h"

#include <stdlib.h>

#include <xxhash.h>

#include "frontier/base/recfile.h"

#define MIN_SLOTS 1024u

struct done_set {
	uint64_t *slot;
	size_t mask; /* slots - 1 */
	size_t n;
};

static uint64_t signature(const char *url, size_t len)
{
	uint64_t h = XXH3_64bits(url, len);
	return h ? h : 1;
}

struct done_set *done_set_create(void)
{
	struct done_set *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->slot = calloc(MIN_SLOTS, sizeof *s->slot);
	if (!s->slot) {
		free(s);
		return NULL;
	}
	s->mask = MIN_SLOTS - 1;
	return s;
}

void done_set_destroy(struct done_set *s)
{
	if (!s)
		return;
	free(s->slot);
	free(s);
}

/* The slot holding sig, or the empty slot where it would go. */
static size_t find(const struct done_set *s, uint64_t sig)
{
	size_t i = (size_t)sig & s->mask;
	while (s->slot[i] && s->slot[i] != sig)
		i = (i + 1) & s->mask;
	return i;
}

static int grow(struct done_set *s)
{
	size_t cap = 2 * (s->mask + 1);
	uint64_t *old = s->slot;
	size_t old_cap = s->mask + 1;
	uint64_t *slot = calloc(cap, sizeof *slot);
	if (!slot)
		return -1;
	s->slot = slot;
	s->mask = cap - 1;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i])
			s->slot[find(s, old[i])] = old[i];
	free(old);
	return 0;
}

static int add_sig(struct done_set *s, uint64_t sig)
{
	if (2 * (s->n + 1) > s->mask + 1 && grow(s) != 0)
		return -1;
	size_t i = find(s, sig);
	if (!s->slot[i]) {
		s->slot[i] = sig;
		s->n++;
	}
	return 0;
}

int done_set_add(struct done_set *s, const char *url, size_t len)
{
	return add_sig(s, signature(url, len));
}

int done_set_take(struct done_set *s, const char *url, size_t len)
{
	if (!s || s->n == 0)
		return 0;
	size_t i = find(s, signature(url, len));
	if (!s->slot[i])
		return 0;
	/* backward shift: move up every later entry of the run that may sit
	 * at or before the hole */
	size_t hole = i, j = i;
	for (;;) {
		j = (j + 1) & s->mask;
		if (!s->slot[j])
			break;
		size_t home = (size_t)s->slot[j] & s->mask;
		if (((j - home) & s->mask) >= ((j - hole) & s->mask)) {
			s->slot[hole] = s->slot[j];
			hole = j;
		}
	}
	s->slot[hole] = 0;
	s->n--;
	return 1;
}

size_t done_set_count(const struct done_set *s)
{
	return s ? s->n : 0;
}

void done_set_save(const struct done_set *s, struct recfile_writer *w)
{
	recfile_put_u64(w, s->n);
	for (size_t i = 0; i <= s->mask; i++)
		if (s->slot[i])
			recfile_put_u64(w, s->slot[i]);
}

int done_set_load(struct done_set *s, struct recfile_reader *rd)
{
	uint64_t n, sig;
	if (recfile_get_u64(rd, &n) != RECFILE_OK)
		return -1;
	for (uint64_t k = 0; k < n; k++)
		if (recfile_get_u64(rd, &sig) != RECFILE_OK || sig == 0 || add_sig(s, sig) != 0)
			return -1;
	return 0;
}
