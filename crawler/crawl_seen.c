/* crawl_seen.c: linear-probing set of XXH3-64 signatures (see crawl_seen.h). */
#include "crawler/crawl_seen.h"

#include <pthread.h>
#include <stdlib.h>
#include <xxhash.h>

struct crawl_seen {
	pthread_mutex_t mu;
	uint64_t *slots; /* 0 = empty; signature 0 is stored as 1 */
	size_t cap;      /* power of two */
	size_t count;
};

struct crawl_seen *crawl_seen_create(void)
{
	struct crawl_seen *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->cap = 1u << 16;
	s->slots = calloc(s->cap, sizeof *s->slots);
	if (!s->slots) {
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

void crawl_seen_destroy(struct crawl_seen *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->mu);
	free(s->slots);
	free(s);
}

static void insert(uint64_t *slots, size_t cap, uint64_t sig)
{
	size_t i = (size_t)(sig ^ (sig >> 29)) & (cap - 1);
	while (slots[i] != 0)
		i = (i + 1) & (cap - 1);
	slots[i] = sig;
}

static int grow(struct crawl_seen *s)
{
	size_t cap = s->cap * 2;
	uint64_t *slots = calloc(cap, sizeof *slots);
	if (!slots)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			insert(slots, cap, s->slots[i]);
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

int crawl_seen_add(struct crawl_seen *s, const char *url, size_t len)
{
	uint64_t sig = XXH3_64bits(url, len);
	if (sig == 0)
		sig = 1;
	int rc = 1;
	pthread_mutex_lock(&s->mu);
	size_t i = (size_t)(sig ^ (sig >> 29)) & (s->cap - 1);
	while (s->slots[i] != 0) {
		if (s->slots[i] == sig) {
			rc = 0;
			goto out;
		}
		i = (i + 1) & (s->cap - 1);
	}
	if ((s->count + 1) * 2 > s->cap) {
		if (grow(s) < 0) {
			rc = -1;
			goto out;
		}
		insert(s->slots, s->cap, sig);
	} else {
		s->slots[i] = sig;
	}
	s->count++;
out:
	pthread_mutex_unlock(&s->mu);
	return rc;
}

uint64_t crawl_seen_count(struct crawl_seen *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t n = s->count;
	pthread_mutex_unlock(&s->mu);
	return n;
}
