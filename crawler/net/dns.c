/*
 * dns.c: c-ares A and AAAA lookups on the libuv loop with a TTL cache (see
 * dns.h).
 *
 * c-ares tells us which sockets it wants watched through the socket state
 * callback; each gets a uv_poll_t (a short list: c-ares uses a few sockets
 * per server). One uv_timer_t is re-armed from ares_timeout after every
 * event so retransmissions and timeouts happen without polling.
 */
#include "crawler/net/dns.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <ares.h>

#include "frontier/base/mem_cost.h"

#define DNS_NAME_MAX 253
#define DNS_LABEL_MAX 63

enum entry_state { ENTRY_PENDING, ENTRY_RESOLVED, ENTRY_NEGATIVE };

struct waiter {
	struct waiter *next;
	dns_done_fn cb;
	void *ctx;
};

struct entry;

/* One family's answer while the entry is PENDING (its query's context). */
struct family_answer {
	struct entry *e;
	int type; /* T_A or T_AAAA */
	struct ip_addr addrs[DNS_MAX_ADDRS];
	size_t n;
	enum dns_error err;
	unsigned ttl; /* smallest TTL of its records */
};

/* The two queries of a PENDING entry (freed when both answered). */
struct pending {
	struct family_answer v4, v6;
	int left; /* queries not answered yet */
};

struct entry {
	struct entry *hnext;         /* hash chain */
	struct entry *lprev, *lnext; /* LRU list (resolved/negative only) */
	struct dns_resolver *r;
	enum entry_state state;
	enum dns_error err; /* for NEGATIVE */
	struct ip_addr addrs[DNS_MAX_ADDRS];
	size_t naddrs;
	struct pending *pend; /* PENDING only */
	uint64_t req_now;     /* now of the request that queried */
	uint64_t expires;
	unsigned fail_streak;   /* transient failures in a row (back-off) */
	struct waiter *waiters; /* PENDING only */
	size_t hash;
	char name[];
};

struct dns_poll {
	uv_poll_t poll;
	ares_socket_t fd;
	struct dns_resolver *r;
	struct dns_poll *next;
};

struct dns_resolver {
	uv_loop_t *loop;
	ares_channel channel;
	bool channel_ok;
	uv_timer_t timer;
	struct dns_config cfg;
	struct entry **buckets;
	size_t nbuckets; /* power of two */
	struct entry *lru_head, *lru_tail;
	struct dns_poll *polls;
	size_t open_handles;
	bool destroying;
	struct dns_stats stats;
};

const char *dns_strerror(enum dns_error err)
{
	switch (err) {
	case DNS_OK: return "ok";
	case DNS_ERR_NOMEM: return "nomem";
	case DNS_ERR_INVALID: return "invalid";
	case DNS_ERR_NOTFOUND: return "dns-notfound";
	case DNS_ERR_TIMEOUT: return "dns-timeout";
	case DNS_ERR_SERVFAIL: return "dns-servfail";
	case DNS_ERR_BUSY: return "dns-busy";
	case DNS_ERR_CANCELLED: return "dns-cancelled";
	case DNS_ERR_ARES: return "dns-error";
	}
	return "unknown";
}

static size_t name_hash(const char *s)
{
	size_t h = 1469598103934665603ull & SIZE_MAX;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= (size_t)1099511628211ull;
	}
	return h;
}

/* What an entry of name length len costs (dns_stats.bytes). */
static uint64_t entry_cost(size_t len)
{
	return mem_alloc_cost(sizeof(struct entry) + len + 1);
}

static void entry_free(struct dns_resolver *r, struct entry *e)
{
	r->stats.bytes -= entry_cost(strlen(e->name));
	free(e);
}

static void lru_unlink(struct dns_resolver *r, struct entry *e)
{
	if (e->lprev)
		e->lprev->lnext = e->lnext;
	else
		r->lru_head = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else
		r->lru_tail = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void lru_push_front(struct dns_resolver *r, struct entry *e)
{
	e->lprev = NULL;
	e->lnext = r->lru_head;
	if (r->lru_head)
		r->lru_head->lprev = e;
	r->lru_head = e;
	if (r->lru_tail == NULL)
		r->lru_tail = e;
}

static void hash_remove(struct dns_resolver *r, struct entry *e)
{
	struct entry **pp = &r->buckets[e->hash & (r->nbuckets - 1)];
	while (*pp != NULL && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp == e)
		*pp = e->hnext;
}

static struct entry *hash_find(struct dns_resolver *r, const char *name, size_t h)
{
	for (struct entry *e = r->buckets[h & (r->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == h && strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* Drops least recently used resolved/negative entries beyond the cap. */
static void evict(struct dns_resolver *r)
{
	while (r->stats.cached > r->cfg.cache_entries && r->lru_tail != NULL) {
		struct entry *e = r->lru_tail;
		lru_unlink(r, e);
		hash_remove(r, e);
		r->stats.cached--;
		r->stats.evictions++;
		entry_free(r, e);
	}
}

/* ---------- libuv glue ---------- */

static void on_handle_closed(uv_handle_t *h);

static void rearm_timer(struct dns_resolver *r);

static void on_timer(uv_timer_t *t)
{
	struct dns_resolver *r = t->data;
	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	rearm_timer(r);
}

static void rearm_timer(struct dns_resolver *r)
{
	struct timeval tv;
	if (r->destroying || !r->channel_ok)
		return;
	if (ares_timeout(r->channel, NULL, &tv) == NULL) {
		uv_timer_stop(&r->timer);
		return;
	}
	uint64_t ms = (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
	if (ms == 0)
		ms = 1;
	uv_timer_start(&r->timer, on_timer, ms, 0);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct dns_poll *dp = p->data;
	struct dns_resolver *r = dp->r;
	ares_socket_t rfd = ARES_SOCKET_BAD, wfd = ARES_SOCKET_BAD;
	if (status < 0 || (events & UV_READABLE))
		rfd = dp->fd;
	if (status < 0 || (events & UV_WRITABLE))
		wfd = dp->fd;
	ares_process_fd(r->channel, rfd, wfd);
	rearm_timer(r);
}

static void on_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct dns_resolver *r = data;
	struct dns_poll **pp = &r->polls;
	while (*pp != NULL && (*pp)->fd != fd)
		pp = &(*pp)->next;
	struct dns_poll *dp = *pp;
	if (!readable && !writable) {
		if (dp != NULL) {
			*pp = dp->next;
			uv_poll_stop(&dp->poll);
			uv_close((uv_handle_t *)&dp->poll, on_handle_closed);
		}
		return;
	}
	if (dp == NULL) {
		dp = calloc(1, sizeof(*dp));
		if (dp == NULL)
			return; /* the query times out instead */
		if (uv_poll_init_socket(r->loop, &dp->poll, fd) != 0) {
			free(dp);
			return;
		}
		dp->fd = fd;
		dp->r = r;
		dp->poll.data = dp;
		dp->next = r->polls;
		r->polls = dp;
		r->open_handles++;
	}
	uv_poll_start(&dp->poll, (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0),
	              on_poll);
}

/* ---------- answers ---------- */

static enum dns_error map_status(int status)
{
	switch (status) {
	case ARES_SUCCESS: return DNS_OK;
	case ARES_ENODATA:
	case ARES_ENOTFOUND:
	case ARES_ENONAME: return DNS_ERR_NOTFOUND;
	case ARES_ETIMEOUT: return DNS_ERR_TIMEOUT;
	case ARES_ESERVFAIL:
	case ARES_EREFUSED:
	case ARES_EBADRESP:
	case ARES_EFORMERR:
	case ARES_ECONNREFUSED:
	case ARES_ENOTIMP: return DNS_ERR_SERVFAIL;
	case ARES_ENOMEM: return DNS_ERR_NOMEM;
	case ARES_ECANCELLED:
	case ARES_EDESTRUCTION: return DNS_ERR_CANCELLED;
	default: return DNS_ERR_ARES;
	}
}

/* How long a failure is served from the cache. The name does not exist
 * (NXDOMAIN, or no A record): negative_ttl. The server did not say
 * (timeout, SERVFAIL, refused, garbage): retry_backoff_ms, doubled per
 * failure in a row, capped at negative_ttl, so an overloaded resolver
 * costs a host seconds, not the whole negative TTL. */
static uint64_t failure_hold_ms(struct dns_resolver *r, struct entry *e, enum dns_error err)
{
	uint64_t cap = (uint64_t)r->cfg.negative_ttl_s * 1000;
	if (err == DNS_ERR_NOTFOUND) {
		e->fail_streak = 0;
		return cap;
	}
	unsigned shift = e->fail_streak < 16 ? e->fail_streak : 16;
	e->fail_streak++;
	uint64_t hold = (uint64_t)r->cfg.retry_backoff_ms << shift;
	return hold < cap ? hold : cap;
}

/* Adds one record (its address bytes and TTL) to a family's answer. */
static void family_add(struct family_answer *fa, enum ip_family family, const void *bytes, int ttl)
{
	unsigned t = ttl < 0 ? 0u : (unsigned)ttl;
	if (t < fa->ttl)
		fa->ttl = t;
	if (fa->n < DNS_MAX_ADDRS)
		ip_addr_set(&fa->addrs[fa->n++], family, bytes);
}

/* One query's answer (A or AAAA as fa->type says) into fa. */
static void family_parse(struct family_answer *fa, int status, unsigned char *abuf, int alen)
{
	int pr = status, n = DNS_MAX_ADDRS * 4;
	fa->n = 0;
	fa->ttl = UINT32_MAX;
	if (status == ARES_SUCCESS && fa->type == T_A) {
		struct ares_addrttl t[DNS_MAX_ADDRS * 4];
		pr = ares_parse_a_reply(abuf, alen, NULL, t, &n);
		for (int i = 0; pr == ARES_SUCCESS && i < n; i++)
			family_add(fa, IP_V4, &t[i].ipaddr, t[i].ttl);
	} else if (status == ARES_SUCCESS) {
		struct ares_addr6ttl t[DNS_MAX_ADDRS * 4];
		pr = ares_parse_aaaa_reply(abuf, alen, NULL, t, &n);
		for (int i = 0; pr == ARES_SUCCESS && i < n; i++)
			family_add(fa, IP_V6, &t[i].ip6addr, t[i].ttl);
	}
	fa->err = map_status(pr);
	if (fa->err == DNS_OK && fa->n == 0)
		fa->err = DNS_ERR_NOTFOUND;
}

/* Both families' answers as one: the addresses, the preferred family's
 * first (half of DNS_MAX_ADDRS each when both answered, so the other
 * family is there to fall back to) and their smallest TTL; or, with none,
 * the failure that says most (a transient one over NOTFOUND: see dns.h). */
static enum dns_error answers_merge(const struct pending *pd, enum ip_family prefer,
                                    struct ip_addr *addrs, size_t *naddrs, unsigned *ttl)
{
	const struct family_answer *f[2] = { &pd->v4, &pd->v6 };
	if (prefer == IP_V6) {
		f[0] = &pd->v6;
		f[1] = &pd->v4;
	}
	size_t each = pd->v4.n > 0 && pd->v6.n > 0 ? DNS_MAX_ADDRS / 2 : DNS_MAX_ADDRS, n = 0;
	*ttl = UINT32_MAX;
	*naddrs = 0;
	if (pd->v4.err == DNS_ERR_CANCELLED || pd->v6.err == DNS_ERR_CANCELLED)
		return DNS_ERR_CANCELLED;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < f[k]->n && i < each; i++)
			addrs[n++] = f[k]->addrs[i];
		if (f[k]->n > 0 && f[k]->ttl < *ttl)
			*ttl = f[k]->ttl;
	}
	*naddrs = n;
	if (n > 0)
		return DNS_OK;
	return pd->v4.err != DNS_ERR_NOTFOUND ? pd->v4.err : pd->v6.err;
}

/* Both queries answered: the entry becomes RESOLVED or NEGATIVE (or goes,
 * when cancelled) and its waiters hear the answer. */
static void entry_answered(struct entry *e)
{
	struct dns_resolver *r = e->r;
	struct ip_addr addrs[DNS_MAX_ADDRS];
	size_t naddrs = 0;
	unsigned ttl;
	enum dns_error err = answers_merge(e->pend, r->cfg.prefer, addrs, &naddrs, &ttl);
	free(e->pend);
	e->pend = NULL;
	r->stats.pending--;
	struct waiter *w = e->waiters;
	e->waiters = NULL;
	char name[DNS_NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s", e->name);

	if (err == DNS_ERR_CANCELLED) {
		/* Only on destruction: the entry goes away with the channel. */
		hash_remove(r, e);
		entry_free(r, e);
	} else if (err == DNS_OK) {
		if (ttl < r->cfg.min_ttl_s)
			ttl = r->cfg.min_ttl_s;
		if (ttl > r->cfg.max_ttl_s)
			ttl = r->cfg.max_ttl_s;
		e->state = ENTRY_RESOLVED;
		e->fail_streak = 0;
		memcpy(e->addrs, addrs, naddrs * sizeof(addrs[0]));
		e->naddrs = naddrs;
		e->expires = e->req_now + (uint64_t)ttl * 1000;
		lru_push_front(r, e);
		r->stats.cached++;
	} else {
		r->stats.failures++;
		e->state = ENTRY_NEGATIVE;
		e->err = err;
		e->naddrs = 0;
		e->expires = e->req_now + failure_hold_ms(r, e, err);
		lru_push_front(r, e);
		r->stats.cached++;
	}
	/* Evict before the callbacks: e may be evicted too, but the waiters
	 * have their own copies of the answer. */
	if (err != DNS_ERR_CANCELLED)
		evict(r);
	while (w != NULL) {
		struct waiter *next = w->next;
		w->cb(w->ctx, err, name, err == DNS_OK ? addrs : NULL, err == DNS_OK ? naddrs : 0);
		free(w);
		w = next;
	}
}

/* A query's answer (arg: its family_answer); the entry is answered when
 * both of its queries were. */
static void on_answer(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	struct family_answer *fa = arg;
	struct entry *e = fa->e;
	(void)timeouts;
	family_parse(fa, status, abuf, alen);
	if (--e->pend->left == 0)
		entry_answered(e);
}

enum dns_error dns_resolve(struct dns_resolver *r, const char *host, dns_done_fn cb, void *ctx,
                           uint64_t now_ms)
{
	char name[DNS_NAME_MAX + 2];
	struct ip_addr lit;

	if (r == NULL || host == NULL || cb == NULL || r->destroying)
		return DNS_ERR_INVALID;
	size_t len = strlen(host);
	if (len > 0 && host[len - 1] == '.')
		len--;
	if (len == 0 || len > DNS_NAME_MAX)
		return DNS_ERR_INVALID;
	/* a label is 1 to 63 bytes (RFC 1035 2.3.4): no name has a longer one */
	for (size_t i = 0, label = 0; i < len; i++) {
		unsigned char c = (unsigned char)host[i];
		if (c <= ' ' || c >= 0x7f)
			return DNS_ERR_INVALID;
		label = c == '.' ? 0 : label + 1;
		if (label > DNS_LABEL_MAX || (c == '.' && (i == 0 || host[i - 1] == '.')))
			return DNS_ERR_INVALID;
		name[i] = (char)tolower(c);
	}
	name[len] = '\0';
	r->stats.lookups++;
	if (ip_addr_parse(name, len, &lit) == 0) {
		cb(ctx, DNS_OK, name, &lit, 1);
		return DNS_OK;
	}
	size_t h = name_hash(name);
	struct entry *e = hash_find(r, name, h);
	if (e != NULL && e->state != ENTRY_PENDING && now_ms >= e->expires) {
		/* Expired: reuse the entry as the pending one. */
		lru_unlink(r, e);
		r->stats.cached--;
		e->state = ENTRY_PENDING;
		e->naddrs = 0;
		if (r->stats.pending >= r->cfg.max_pending) {
			hash_remove(r, e);
			entry_free(r, e);
			r->stats.lookups--;
			return DNS_ERR_BUSY;
		}
		goto query;
	}
	if (e != NULL && e->state == ENTRY_RESOLVED) {
		struct ip_addr addrs[DNS_MAX_ADDRS];
		size_t n = e->naddrs;
		memcpy(addrs, e->addrs, n * sizeof(addrs[0]));
		lru_unlink(r, e);
		lru_push_front(r, e);
		r->stats.cache_hits++;
		cb(ctx, DNS_OK, name, addrs, n);
		return DNS_OK;
	}
	if (e != NULL && e->state == ENTRY_NEGATIVE) {
		enum dns_error err = e->err;
		lru_unlink(r, e);
		lru_push_front(r, e);
		r->stats.cache_hits++;
		cb(ctx, err, name, NULL, 0);
		return DNS_OK;
	}
	if (e != NULL) {
		struct waiter *w = calloc(1, sizeof(*w));
		if (w == NULL) {
			r->stats.lookups--;
			return DNS_ERR_NOMEM;
		}
		w->cb = cb;
		w->ctx = ctx;
		w->next = e->waiters;
		e->waiters = w;
		r->stats.coalesced++;
		return DNS_OK;
	}
	if (r->stats.pending >= r->cfg.max_pending) {
		r->stats.lookups--;
		return DNS_ERR_BUSY;
	}
	e = calloc(1, sizeof(*e) + len + 1);
	if (e == NULL) {
		r->stats.lookups--;
		return DNS_ERR_NOMEM;
	}
	memcpy(e->name, name, len + 1);
	r->stats.bytes += entry_cost(len);
	e->r = r;
	e->hash = h;
	e->state = ENTRY_PENDING;
	e->hnext = r->buckets[h & (r->nbuckets - 1)];
	r->buckets[h & (r->nbuckets - 1)] = e;
query:;
	struct waiter *w = calloc(1, sizeof(*w));
	e->pend = calloc(1, sizeof(*e->pend));
	if (w == NULL || e->pend == NULL) {
		free(w);
		free(e->pend);
		hash_remove(r, e);
		entry_free(r, e);
		r->stats.lookups--;
		return DNS_ERR_NOMEM;
	}
	w->cb = cb;
	w->ctx = ctx;
	e->waiters = w;
	e->req_now = now_ms;
	e->pend->left = 2;
	e->pend->v4 = (struct family_answer){ .e = e, .type = T_A };
	e->pend->v6 = (struct family_answer){ .e = e, .type = T_AAAA };
	r->stats.pending++;
	r->stats.queries++;
	/* Either may answer synchronously (e.g. no servers); the entry is
	 * answered when both did. */
	ares_query(r->channel, e->name, C_IN, T_A, on_answer, &e->pend->v4);
	ares_query(r->channel, e->name, C_IN, T_AAAA, on_answer, &e->pend->v6);
	rearm_timer(r);
	return DNS_OK;
}

void dns_resolver_stats(const struct dns_resolver *r, struct dns_stats *out)
{
	*out = r->stats;
}

static void free_resolver(struct dns_resolver *r)
{
	for (size_t i = 0; r->buckets && i < r->nbuckets; i++) {
		struct entry *e = r->buckets[i];
		while (e != NULL) {
			struct entry *next = e->hnext;
			struct waiter *w = e->waiters;
			while (w != NULL) {
				struct waiter *wn = w->next;
				free(w);
				w = wn;
			}
			free(e->pend);
			free(e);
			e = next;
		}
	}
	free(r->buckets);
	free(r);
	ares_library_cleanup();
}

static void on_handle_closed(uv_handle_t *h)
{
	struct dns_resolver *r;
	if (h->type == UV_TIMER) {
		r = h->data;
	} else {
		struct dns_poll *dp = h->data;
		r = dp->r;
		free(dp);
	}
	r->open_handles--;
	if (r->destroying && r->open_handles == 0)
		free_resolver(r);
}

/* One server of a list, "ADDR", "ADDR:PORT", "IPV6" or "[IPV6]:PORT"
 * (len bytes at s), appended to csv in the form c-ares takes with the
 * port always given ("a.b.c.d:53", "[v6]:53"). DNS_ERR_INVALID when it is
 * not one. */
static enum dns_error server_append(const char *s, size_t len, char *csv, size_t cap)
{
	char addr[INET6_ADDRSTRLEN];
	unsigned char bin[sizeof(struct in6_addr)];
	const char *end = s + len;
	const char *a = s, *a_end = end, *port = NULL;
	int family = AF_INET;

	if (s[0] == '[') {
		const char *close = memchr(s, ']', len);
		if (close == NULL || (close + 1 < end && close[1] != ':'))
			return DNS_ERR_INVALID;
		a = s + 1;
		a_end = close;
		port = close + 1 < end ? close + 2 : NULL;
		family = AF_INET6;
	} else {
		const char *colon = memchr(s, ':', len);
		if (colon != NULL && memchr(colon + 1, ':', (size_t)(end - colon - 1)) != NULL) {
			family = AF_INET6; /* bare IPv6: no port */
		} else if (colon != NULL) {
			a_end = colon;
			port = colon + 1;
		}
	}
	size_t alen = (size_t)(a_end - a);
	if (alen == 0 || alen >= sizeof(addr))
		return DNS_ERR_INVALID;
	memcpy(addr, a, alen);
	addr[alen] = '\0';
	if (inet_pton(family, addr, bin) != 1)
		return DNS_ERR_INVALID;
	long pnum = 53;
	if (port != NULL) {
		pnum = 0;
		if (port == end || end - port > 5)
			return DNS_ERR_INVALID;
		for (const char *q = port; q < end; q++) {
			if (*q < '0' || *q > '9')
				return DNS_ERR_INVALID;
			pnum = pnum * 10 + (*q - '0');
		}
		if (pnum == 0 || pnum > 65535)
			return DNS_ERR_INVALID;
	}
	size_t used = strlen(csv);
	int n = snprintf(csv + used, cap - used, "%s%s%s%s:%ld", used ? "," : "",
	                 family == AF_INET6 ? "[" : "", addr, family == AF_INET6 ? "]" : "", pnum);
	if (n < 0 || (size_t)n >= cap - used)
		return DNS_ERR_INVALID;
	return DNS_OK;
}

/* Makes the comma-separated list the channel's servers, in order;
 * DNS_ERR_INVALID when an entry is not a server. */
static enum dns_error channel_set_servers(ares_channel channel, const char *list)
{
	size_t cap = strlen(list) * 3 + 64; /* "::" -> "[::]:53" */
	char *csv = calloc(1, cap);
	enum dns_error rc = DNS_OK;
	size_t count = 0;
	if (csv == NULL)
		return DNS_ERR_NOMEM;
	for (const char *p = list; *p != '\0';) {
		while (*p == ',' || *p == ' ')
			p++;
		const char *s = p;
		while (*p != '\0' && *p != ',' && *p != ' ')
			p++;
		if (p == s)
			continue;
		rc = server_append(s, (size_t)(p - s), csv, cap);
		if (rc != DNS_OK)
			goto out;
		count++;
	}
	if (count == 0 || ares_set_servers_ports_csv(channel, csv) != ARES_SUCCESS)
		rc = DNS_ERR_INVALID;
out:
	free(csv);
	return rc;
}

/* Whether path can be read and has a nameserver line whose address c-ares
 * 1.18 takes (an IPv4 or IPv6 literal alone: "ADDR:PORT" is skipped by
 * it). Without one, c-ares would quietly ask 127.0.0.1:53. */
static bool resolv_conf_usable(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	bool found = false;
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		char key[16], addr[INET6_ADDRSTRLEN + 1];
		unsigned char bin[sizeof(struct in6_addr)];
		if (sscanf(line, " %15s %46s", key, addr) != 2 || strcmp(key, "nameserver") != 0)
			continue;
		found = inet_pton(AF_INET, addr, bin) == 1 || inet_pton(AF_INET6, addr, bin) == 1;
	}
	fclose(f);
	return found;
}

enum dns_error dns_resolver_servers(const struct dns_resolver *r, char *buf, size_t cap)
{
	struct ares_addr_port_node *servers = NULL;
	size_t used = 0;
	if (cap == 0)
		return DNS_ERR_INVALID;
	buf[0] = '\0';
	if (ares_get_servers_ports(r->channel, &servers) != ARES_SUCCESS)
		return DNS_ERR_NOMEM;
	for (struct ares_addr_port_node *s = servers; s != NULL && used < cap; s = s->next) {
		char addr[INET6_ADDRSTRLEN];
		inet_ntop(s->family, &s->addr, addr, sizeof(addr));
		int port = s->udp_port ? s->udp_port : 53;
		int n = snprintf(buf + used, cap - used, "%s%s%s%s:%d", used ? "," : "",
		                 s->family == AF_INET6 ? "[" : "", addr,
		                 s->family == AF_INET6 ? "]" : "", port);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	ares_free_data(servers);
	return DNS_OK;
}

/* Creates r's channel: its servers from the list, else from the
 * resolv.conf file, else from the system's (see dns.h). Sets channel_ok. */
static enum dns_error channel_open(struct dns_resolver *r, const char *servers,
                                   const char *resolv_conf)
{
	struct ares_options opts;
	bool have_list = servers != NULL && servers[0] != '\0';
	bool have_file = !have_list && resolv_conf != NULL && resolv_conf[0] != '\0';

	if (have_file && !resolv_conf_usable(resolv_conf))
		return DNS_ERR_INVALID;
	memset(&opts, 0, sizeof(opts));
	int mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_LOOKUPS |
	           ARES_OPT_SOCK_STATE_CB;
	opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
	opts.timeout = (int)r->cfg.timeout_ms;
	opts.tries = (int)r->cfg.tries;
	opts.lookups = (char *)"b";
	opts.sock_state_cb = on_sock_state;
	opts.sock_state_cb_data = r;
	if (have_list) {
		/* No resolv.conf servers, even briefly: start empty, then set. */
		mask |= ARES_OPT_SERVERS;
		opts.servers = NULL;
		opts.nservers = 0;
	} else if (have_file) {
		mask |= ARES_OPT_RESOLVCONF;
		opts.resolvconf_path = (char *)resolv_conf;
	}
	if (ares_init_options(&r->channel, &opts, mask) != ARES_SUCCESS)
		return DNS_ERR_ARES;
	r->channel_ok = true;
	return have_list ? channel_set_servers(r->channel, servers) : DNS_OK;
}

enum dns_error dns_resolver_create(uv_loop_t *loop, const struct dns_config *config,
                                   struct dns_resolver **out)
{
	enum dns_error rc = DNS_OK;
	struct dns_resolver *r = NULL;
	bool lib = false;

	if (out == NULL)
		return DNS_ERR_INVALID;
	*out = NULL;
	if (loop == NULL)
		return DNS_ERR_INVALID;
	if (ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
		return DNS_ERR_NOMEM;
	lib = true;
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		rc = DNS_ERR_NOMEM;
		goto out;
	}
	r->loop = loop;
	if (config != NULL)
		r->cfg = *config;
	/* The server settings are used below, not kept. */
	r->cfg.server = NULL;
	r->cfg.resolv_conf = NULL;
	if (r->cfg.cache_entries == 0)
		r->cfg.cache_entries = 65536;
	if (r->cfg.max_ttl_s == 0)
		r->cfg.max_ttl_s = 86400;
	if (r->cfg.min_ttl_s > r->cfg.max_ttl_s)
		r->cfg.min_ttl_s = r->cfg.max_ttl_s;
	if (r->cfg.negative_ttl_s == 0)
		r->cfg.negative_ttl_s = 60;
	if (r->cfg.retry_backoff_ms == 0)
		r->cfg.retry_backoff_ms = 1000;
	if (r->cfg.timeout_ms == 0)
		r->cfg.timeout_ms = 2000;
	if (r->cfg.tries == 0)
		r->cfg.tries = 2;
	if (r->cfg.max_pending == 0)
		r->cfg.max_pending = 4096;
	if (r->cfg.prefer != IP_V6)
		r->cfg.prefer = IP_V4;
	r->nbuckets = 16;
	while (r->nbuckets < r->cfg.cache_entries + r->cfg.max_pending && r->nbuckets < (1u << 24))
		r->nbuckets <<= 1;
	r->buckets = calloc(r->nbuckets, sizeof(*r->buckets));
	if (r->buckets == NULL) {
		rc = DNS_ERR_NOMEM;
		goto out;
	}
	r->stats.bytes = mem_alloc_cost(r->nbuckets * sizeof(*r->buckets));
	rc = channel_open(r, config != NULL ? config->server : NULL,
	                  config != NULL ? config->resolv_conf : NULL);
	if (rc != DNS_OK)
		goto out;
	if (uv_timer_init(loop, &r->timer) != 0) {
		rc = DNS_ERR_NOMEM;
		goto out;
	}
	r->timer.data = r;
	r->open_handles = 1;
	*out = r;
	r = NULL;
	lib = false;
out:
	if (r != NULL) {
		if (r->channel_ok)
			ares_destroy(r->channel);
		free(r->buckets);
		free(r);
	}
	if (lib)
		ares_library_cleanup();
	return rc;
}

void dns_resolver_destroy(struct dns_resolver *r)
{
	if (r == NULL || r->destroying)
		return;
	/* Waiters hear DNS_ERR_CANCELLED from on_answer, called by ares_destroy;
	 * destroying is set first so they cannot start new lookups. */
	r->destroying = true;
	ares_destroy(r->channel);
	r->channel_ok = false;
	uv_timer_stop(&r->timer);
	while (r->polls != NULL) {
		struct dns_poll *dp = r->polls;
		r->polls = dp->next;
		uv_poll_stop(&dp->poll);
		uv_close((uv_handle_t *)&dp->poll, on_handle_closed);
	}
	uv_close((uv_handle_t *)&r->timer, on_handle_closed);
}
