/*
 * sitemap_registry.h: which URLs waiting to be fetched are sitemaps.
 *
 * A sitemap URL travels through the sieve and the frontier like any link,
 * and those carry no kind; this table says, when its response arrives,
 * that it is a sitemap, at which index level (0: listed by robots.txt, 1:
 * listed by an index, ...), and which URL its entries are judged against
 * (the robots.txt URL that listed it, or the sitemap URL itself: the
 * parse/sitemap.h scope URL, inherited by an index's children).
 *
 * Data structure: a chained hash table of entries keyed by the crawl key,
 * under one mutex (parse threads add the children of indexes, the fetch
 * loop adds nothing and takes entries out as their responses arrive). An
 * entry is removed when taken, so each sitemap is parsed once; one whose
 * URL the sieve had already seen (a page linked it) is never fetched as a
 * sitemap and stays until the end. At most `cap` entries: beyond, adds are
 * refused (the caller counts them).
 */
#ifndef CRAWLER_SITEMAP_REGISTRY_H
#define CRAWLER_SITEMAP_REGISTRY_H

#include <stddef.h>

struct sitemap_registry;

/* NULL if out of memory. */
struct sitemap_registry *sitemap_registry_create(size_t cap);
/* NULL is a no-op. */
void sitemap_registry_destroy(struct sitemap_registry *r);

/* Registers url[0, len) at index level `level` with its scope URL (NULL:
 * the sitemap URL itself; copied). 0 added, 1 already there (unchanged),
 * -1 full or out of memory. Any thread. */
int sitemap_registry_add(struct sitemap_registry *r, const char *url, size_t len, unsigned level,
                         const char *scope_url);

/* Takes url's entry out: 1 with *level and *scope_url (malloc'd, the
 * caller frees; NULL for the sitemap URL itself), 0 when url is not a
 * registered sitemap. Any thread. */
int sitemap_registry_take(struct sitemap_registry *r, const char *url, unsigned *level,
                          char **scope_url);

#endif
