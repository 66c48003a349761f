/*
 * sitemap_registry.c: the table of sitemap URLs waiting for their
 * responses (see sitemap_registry.h).
 */
#include "crawler/sitemap_registry.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define BUCKETS 4096 /* a few sitemaps per site: chains stay short */

struct entry {
	struct entry *next;
	unsigned level;
	char *scope_url; /* NULL: the sitemap URL itself */
	size_t len;
	char url[]; /* NUL-terminated */
};

struct sitemap_registry {
	pthread_mutex_t mu;
	size_t n, cap;
	struct entry *bucket[BUCKETS];
};

struct sitemap_registry *sitemap_registry_create(size_t cap)
{
	struct sitemap_registry *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	r->cap = cap;
	return r;
}

static void entry_free(struct entry *e)
{
	free(e->scope_url);
	free(e);
}

void sitemap_registry_destroy(struct sitemap_registry *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < BUCKETS; i++)
		for (struct entry *e = r->bucket[i], *next; e; e = next) {
			next = e->next;
			entry_free(e);
		}
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* The link to url's entry in its chain (to the chain's NULL if none). */
static struct entry **find(struct sitemap_registry *r, const char *url, size_t len)
{
	struct entry **pe = &r->bucket[XXH3_64bits(url, len) % BUCKETS];
	while (*pe && ((*pe)->len != len || memcmp((*pe)->url, url, len) != 0))
		pe = &(*pe)->next;
	return pe;
}

int sitemap_registry_add(struct sitemap_registry *r, const char *url, size_t len, unsigned level,
                         const char *scope_url)
{
	int rc = -1;
	pthread_mutex_lock(&r->mu);
	struct entry **pe = find(r, url, len);
	if (*pe) {
		rc = 1;
	} else if (r->n < r->cap) {
		struct entry *e = malloc(sizeof *e + len + 1);
		char *scope = scope_url ? strdup(scope_url) : NULL;
		if (e && (scope || !scope_url)) {
			memcpy(e->url, url, len);
			e->url[len] = '\0';
			e->len = len;
			e->level = level;
			e->scope_url = scope;
			e->next = NULL;
			*pe = e;
			r->n++;
			rc = 0;
		} else {
			free(e);
			free(scope);
		}
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

int sitemap_registry_take(struct sitemap_registry *r, const char *url, unsigned *level,
                          char **scope_url)
{
	pthread_mutex_lock(&r->mu);
	struct entry **pe = find(r, url, strlen(url));
	struct entry *e = *pe;
	if (e) {
		*pe = e->next;
		r->n--;
	}
	pthread_mutex_unlock(&r->mu);
	if (!e)
		return 0;
	*level = e->level;
	*scope_url = e->scope_url;
	free(e);
	return 1;
}
