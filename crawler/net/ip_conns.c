/* ip_conns.c: open connections per peer address (see ip_conns.h). */
#include "crawler/net/ip_conns.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/chain.h"
#include "frontier/base/mem_cost.h"

struct sock_rec {
	struct sock_rec *prev, *next; /* the address's sockets, newest first */
	struct addr_rec *addr;
	int fd;
	bool shut;
};

struct addr_rec {
	struct addr_rec *chain; /* bucket chain */
	uint8_t key[16];
	size_t count; /* sockets not shut down */
	struct sock_rec *socks;
};

struct ip_conns {
	struct addr_rec **buckets;
	size_t nbuckets; /* a power of two */
	size_t naddrs;
	size_t nsocks; /* sockets recorded */
	struct sock_rec **by_fd;
	size_t fd_cap;
	unsigned long long shut_total;
};

struct ip_conns *ip_conns_create(void)
{
	struct ip_conns *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->nbuckets = 64;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (c->buckets == NULL) {
		free(c);
		return NULL;
	}
	return c;
}

void ip_conns_destroy(struct ip_conns *c)
{
	if (c == NULL)
		return;
	for (size_t fd = 0; fd < c->fd_cap; fd++)
		free(c->by_fd[fd]);
	for (size_t b = 0; b < c->nbuckets; b++) {
		while (c->buckets[b] != NULL) {
			struct addr_rec *a = c->buckets[b];
			c->buckets[b] = a->chain;
			free(a);
		}
	}
	free(c->buckets);
	free(c->by_fd);
	free(c);
}

static size_t key_hash(const uint8_t key[16])
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < 16; i++)
		h = (h ^ key[i]) * 1099511628211ull;
	return (size_t)(h ^ (h >> 29));
}

/* The 16-byte key of an IPv4 or IPv6 literal; false if it is neither. */
static bool key_of_literal(const char *ip, uint8_t key[16])
{
	struct in_addr a4;
	memset(key, 0, 16);
	if (inet_pton(AF_INET, ip, &a4) == 1) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &a4, 4);
		return true;
	}
	return inet_pton(AF_INET6, ip, key) == 1;
}

static bool key_of_sockaddr(const struct sockaddr *sa, uint8_t key[16])
{
	memset(key, 0, 16);
	if (sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		return true;
	}
	return false;
}

static struct addr_rec **addr_slot(const struct ip_conns *c, const uint8_t key[16])
{
	struct addr_rec **p = &c->buckets[key_hash(key) & (c->nbuckets - 1)];
	while (*p != NULL && memcmp((*p)->key, key, 16) != 0)
		p = &(*p)->chain;
	return p;
}

/* Doubles the bucket array when addresses outnumber buckets (kept as is
 * when out of memory: chains grow longer, nothing is lost). */
static void buckets_grow(struct ip_conns *c)
{
	size_t n = c->nbuckets * 2;
	struct addr_rec **nb = calloc(n, sizeof(*nb));
	if (nb == NULL)
		return;
	for (size_t b = 0; b < c->nbuckets; b++) {
		while (c->buckets[b] != NULL) {
			struct addr_rec *a = c->buckets[b];
			c->buckets[b] = a->chain;
			size_t h = key_hash(a->key) & (n - 1);
			a->chain = nb[h];
			nb[h] = a;
		}
	}
	free(c->buckets);
	c->buckets = nb;
	c->nbuckets = n;
}

static int fd_room(struct ip_conns *c, int fd)
{
	if ((size_t)fd < c->fd_cap)
		return 0;
	size_t n = c->fd_cap ? c->fd_cap : 1024;
	while (n <= (size_t)fd)
		n *= 2;
	struct sock_rec **p = realloc(c->by_fd, n * sizeof(*p));
	if (p == NULL)
		return -1;
	memset(p + c->fd_cap, 0, (n - c->fd_cap) * sizeof(*p));
	c->by_fd = p;
	c->fd_cap = n;
	return 0;
}

int ip_conns_opened(struct ip_conns *c, int fd, const struct sockaddr *sa)
{
	uint8_t key[16];
	if (c == NULL || fd < 0 || !key_of_sockaddr(sa, key) || fd_room(c, fd) != 0)
		return -1;
	ip_conns_closed(c, fd); /* a descriptor reused without our close */
	struct sock_rec *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -1;
	struct addr_rec **slot = addr_slot(c, key);
	struct addr_rec *a = *slot;
	if (a == NULL) {
		a = calloc(1, sizeof(*a));
		if (a == NULL) {
			free(s);
			return -1;
		}
		memcpy(a->key, key, 16);
		*slot = a;
		if (++c->naddrs > c->nbuckets)
			buckets_grow(c);
	}
	s->fd = fd;
	s->addr = a;
	DLIST_PUSH(a->socks, s);
	a->count++;
	c->nsocks++;
	c->by_fd[fd] = s;
	return 0;
}

void ip_conns_closed(struct ip_conns *c, int fd)
{
	if (c == NULL || fd < 0 || (size_t)fd >= c->fd_cap || c->by_fd[fd] == NULL)
		return;
	struct sock_rec *s = c->by_fd[fd];
	struct addr_rec *a = s->addr;
	c->by_fd[fd] = NULL;
	if (!s->shut)
		a->count--;
	DLIST_UNLINK(a->socks, s);
	free(s);
	c->nsocks--;
	if (a->socks == NULL) {
		struct addr_rec **slot = addr_slot(c, a->key);
		*slot = a->chain;
		c->naddrs--;
		free(a);
	}
}

uint64_t ip_conns_bytes(const struct ip_conns *c)
{
	if (c == NULL)
		return 0;
	return mem_alloc_cost(sizeof *c) + (uint64_t)c->nbuckets * sizeof *c->buckets +
	       (uint64_t)c->fd_cap * sizeof *c->by_fd +
	       (uint64_t)c->naddrs * mem_alloc_cost(sizeof(struct addr_rec)) +
	       (uint64_t)c->nsocks * mem_alloc_cost(sizeof(struct sock_rec));
}

size_t ip_conns_count(const struct ip_conns *c, const char *ip)
{
	uint8_t key[16];
	if (c == NULL || ip == NULL || !key_of_literal(ip, key))
		return 0;
	struct addr_rec *a = *addr_slot(c, key);
	return a != NULL ? a->count : 0;
}

bool ip_conns_shut_idle(struct ip_conns *c, const char *ip, ip_conns_busy_fn busy, void *ctx)
{
	uint8_t key[16];
	if (c == NULL || ip == NULL || !key_of_literal(ip, key))
		return false;
	struct addr_rec *a = *addr_slot(c, key);
	for (struct sock_rec *s = a != NULL ? a->socks : NULL; s != NULL; s = s->next) {
		if (s->shut || busy(ctx, s->fd))
			continue;
		shutdown(s->fd, SHUT_RDWR);
		s->shut = true;
		a->count--;
		c->shut_total++;
		return true;
	}
	return false;
}

unsigned long long ip_conns_shut_total(const struct ip_conns *c)
{
	return c != NULL ? c->shut_total : 0;
}
