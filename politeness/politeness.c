/*
 * politeness.c: the two-level politeness heap of politeness.h.
 *
 * Heaps are indexed 4-ary min-heaps of {key, id} entries; every id knows its
 * slot (struct phost.slot or struct ipgroup.slot) so a host or group can be
 * removed or re-keyed in O(log n). Ids in the top heap are host ids (solo
 * hosts) or GROUP_BIT | group index; ids in a group's heap are host ids.
 *
 * Precedence: the top heap and each group's heap are pairs (struct pheap)
 * of a waiting heap keyed by the time an entry is allowed, and a ready
 * heap keyed by its tier (frontier_host_best_tier: the best first) and
 * then by the order entries became ready. A pop first moves the entries
 * whose time has come from waiting to ready (a group's tier is its best
 * ready host's), then takes the ready top: among the hosts that may be
 * visited now, the one whose next URL has the highest tier, whatever the
 * order they became allowed in. Anything that changes a ready entry (a
 * rekey, a host joining or leaving a group, a host's tier rising) sends it
 * back to waiting, so its tier is read afresh at the next pop. Both heaps
 * of a pair keep room for every entry of the pair, so moving an entry
 * between them never allocates. The slot of an entry in a ready heap
 * carries READY_BIT.
 */
#include "politeness/politeness.h"
#include "politeness/robots.h"
#include "frontier/base/array.h"
#include "frontier/base/recfile.h"

#include <stdlib.h>
#include <string.h>

#define GROUP_BIT 0x80000000u
#define READY_BIT 0x80000000u
#define NONE32 UINT32_MAX
/* A ready heap's key: the tier's complement above, the ready sequence
 * below (2^40 moves before it wraps). */
#define READY_SEQ_BITS 40
#define READY_TIER_MAX ((1u << (64 - READY_SEQ_BITS)) - 1)

enum host_state {
	HS_PARKED = 0, /* not in a heap: empty queue */
	HS_HEAP = 1,   /* in the top heap (solo) or in its group's heap */
	HS_HELD = 2,   /* popped, visit in progress */
	HS_RETIRED = 3,
};

enum group_state {
	GS_IDLE = 0, /* no host waiting: not in the top heap */
	GS_TOP = 1,  /* in the top heap */
	GS_HELD = 2, /* one of its hosts is being visited */
};

struct hent {
	uint64_t key;
	uint32_t id;
};

struct heap {
	struct hent *a;
	uint32_t n, cap;
	uint8_t ready; /* a ready heap: its slots carry READY_BIT */
};

/* Entries waiting for their time, and entries whose time came, by tier. */
struct pheap {
	struct heap wait, ready;
};

struct phost {
	uint64_t next;
	uint64_t crawl_delay;
	struct delay_estimate est; /* adaptive policy: response time and back-off */
	uint64_t wait;             /* next - end of the last visit that made requests */
	struct robots *robots;     /* owned; NULL: none (allow all when KNOWN) */
	uint64_t robots_exp;       /* 0: never expires */
	uint32_t slot;
	uint32_t group;      /* IP group, NONE32 = solo */
	uint32_t held_group; /* group whose token the held host carries, NONE32 = solo */
	uint32_t errors;
	struct ip_addr addr; /* with has_ip */
	uint8_t state;
	uint8_t has_ip;
	uint8_t robots_state; /* enum politeness_robots_state */
	uint8_t robots_ref;   /* robots cache clock: visited since the hand passed */
	uint8_t robots_ring;  /* listed in the robots cache's ring */
	uint8_t steered;      /* has a steered delay (struct politeness's steered) */
};

/* A steered host delay: few (set by hand), kept apart, sorted by host. */
struct steered_delay {
	uint32_t host, ms;
};

struct ipgroup {
	uint64_t next;
	struct pheap hosts;
	struct ip_addr key; /* ip_addr_group of its hosts' addresses */
	uint32_t slot;
	uint8_t state;
};

struct politeness {
	struct frontier *f;
	struct politeness_config cfg;
	frontier_drain_fn on_drop;
	void *drop_ctx;
	struct phost *hosts;
	uint32_t nhosts; /* capacity of hosts[] */
	uint32_t known;  /* hosts[0..known) are initialized and counted */
	struct ipgroup *groups;
	uint32_t ngroups, groups_cap;
	uint32_t *ipmap; /* group index + 1, open addressing on the group key */
	uint32_t ipmap_cap;
	struct pheap top;
	uint64_t ready_seq; /* entries moved to a ready heap, ever */
	/* robots.txt cache: the hosts that had rules (entries of hosts whose
	 * rules went are dropped when the clock hand reaches them) */
	uint32_t *rring;
	uint32_t rring_n, rring_cap, rhand;
	struct steered_delay *steered;
	size_t nsteered, steered_cap;
	uint64_t heap_slots; /* entries allocated in every heap (the top and the groups') */
	struct politeness_stats st;
};

/* ----- indexed 4-ary heap ----- */

static void set_slot(struct politeness *p, uint32_t id, uint32_t slot)
{
	if (id & GROUP_BIT)
		p->groups[id & ~GROUP_BIT].slot = slot;
	else
		p->hosts[id].slot = slot;
}

/* Puts entry e in slot i and tells its owner where it is. */
static void heap_place(struct politeness *p, struct heap *h, uint32_t i, struct hent e)
{
	h->a[i] = e;
	set_slot(p, e.id, h->ready ? i | READY_BIT : i);
}

static void heap_up(struct politeness *p, struct heap *h, uint32_t i)
{
	struct hent e = h->a[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 4;
		if (h->a[parent].key <= e.key)
			break;
		heap_place(p, h, i, h->a[parent]);
		i = parent;
	}
	heap_place(p, h, i, e);
}

static void heap_down(struct politeness *p, struct heap *h, uint32_t i)
{
	struct hent e = h->a[i];

	for (;;) {
		uint32_t c = 4 * i + 1, best, k, end;
		if (c >= h->n)
			break;
		best = c;
		end = c + 4 < h->n ? c + 4 : h->n;
		for (k = c + 1; k < end; k++) {
			if (h->a[k].key < h->a[best].key)
				best = k;
		}
		if (h->a[best].key >= e.key)
			break;
		heap_place(p, h, i, h->a[best]);
		i = best;
	}
	heap_place(p, h, i, e);
}

/* Makes room for n entries in h (counted in p->heap_slots). */
static int heap_reserve(struct politeness *p, struct heap *h, uint32_t n)
{
	if (n > h->cap) {
		uint32_t cap = h->cap ? h->cap * 2 : 4;
		struct hent *a;
		while (cap < n)
			cap *= 2;
		a = realloc(h->a, cap * sizeof *a);
		if (a == NULL)
			return -1;
		p->heap_slots += cap - h->cap;
		h->a = a;
		h->cap = cap;
	}
	return 0;
}

static int heap_insert(struct politeness *p, struct heap *h, uint32_t id, uint64_t key)
{
	if (heap_reserve(p, h, h->n + 1) != 0)
		return -1;
	h->a[h->n].key = key;
	h->a[h->n].id = id;
	h->n++;
	heap_up(p, h, h->n - 1);
	return 0;
}

static void heap_remove(struct politeness *p, struct heap *h, uint32_t i)
{
	uint64_t old;

	h->n--;
	if (i == h->n)
		return;
	old = h->a[i].key;
	h->a[i] = h->a[h->n];
	if (h->a[i].key < old)
		heap_up(p, h, i);
	else
		heap_down(p, h, i);
}

static void heap_rekey(struct politeness *p, struct heap *h, uint32_t i, uint64_t key)
{
	uint64_t old = h->a[i].key;

	h->a[i].key = key;
	if (key < old)
		heap_up(p, h, i);
	else if (key > old)
		heap_down(p, h, i);
}

/* ----- waiting and ready heaps ----- */

static uint32_t pheap_n(const struct pheap *ph)
{
	return ph->wait.n + ph->ready.n;
}

/* Adds an entry to the waiting heap, with room in both for every entry. */
static int pheap_insert(struct politeness *p, struct pheap *ph, uint32_t id, uint64_t key)
{
	uint32_t n = pheap_n(ph) + 1;

	ph->ready.ready = 1;
	if (heap_reserve(p, &ph->wait, n) != 0 || heap_reserve(p, &ph->ready, n) != 0)
		return -1;
	return heap_insert(p, &ph->wait, id, key);
}

static void pheap_remove(struct politeness *p, struct pheap *ph, uint32_t slot)
{
	if (slot & READY_BIT)
		heap_remove(p, &ph->ready, slot & ~READY_BIT);
	else
		heap_remove(p, &ph->wait, slot);
}

/* A new time for an entry; a ready one goes back to waiting. */
static void pheap_rekey(struct politeness *p, struct pheap *ph, uint32_t slot, uint64_t key)
{
	if (slot & READY_BIT) {
		uint32_t id = ph->ready.a[slot & ~READY_BIT].id;
		heap_remove(p, &ph->ready, slot & ~READY_BIT);
		(void)heap_insert(p, &ph->wait, id, key); /* room kept by pheap_insert */
	} else {
		heap_rekey(p, &ph->wait, slot, key);
	}
}

static uint32_t entry_tier(struct politeness *p, uint32_t id, uint64_t now_us);

/* Moves the entries whose time has come to the ready heap, by tier. */
static void pheap_promote(struct politeness *p, struct pheap *ph, uint64_t now_us)
{
	while (ph->wait.n > 0 && ph->wait.a[0].key <= now_us) {
		uint32_t id = ph->wait.a[0].id, tier = entry_tier(p, id, now_us);
		uint64_t seq = p->ready_seq++ & ((1ull << READY_SEQ_BITS) - 1);
		heap_remove(p, &ph->wait, 0);
		if (tier > READY_TIER_MAX)
			tier = READY_TIER_MAX;
		(void)heap_insert(p, &ph->ready, id,
		                  (uint64_t)(READY_TIER_MAX - tier) << READY_SEQ_BITS | seq);
	}
}

/* ----- hosts and groups ----- */

static int hosts_ensure(struct politeness *p, uint32_t host)
{
	uint32_t cap, i;
	struct phost *n;

	if (host < p->nhosts)
		return 0;
	cap = p->nhosts ? p->nhosts : 64;
	while (cap <= host)
		cap *= 2;
	n = realloc(p->hosts, (size_t)cap * sizeof *n);
	if (n == NULL)
		return -1;
	for (i = p->nhosts; i < cap; i++) {
		memset(&n[i], 0, sizeof n[i]);
		n[i].slot = NONE32;
		n[i].group = NONE32;
		n[i].held_group = NONE32;
	}
	p->hosts = n;
	p->nhosts = cap;
	return 0;
}

/* When the group may be visited: its IP's time, and a host's. */
static uint64_t group_key(const struct ipgroup *g)
{
	uint64_t k = g->hosts.ready.n > 0 ? 0 : g->hosts.wait.a[0].key;

	return k > g->next ? k : g->next;
}

/* The tier a heap entry competes with: a host's best URL's; a group's
 * best ready host's (its hosts ready by now_us promoted first). */
static uint32_t entry_tier(struct politeness *p, uint32_t id, uint64_t now_us)
{
	if (id & GROUP_BIT) {
		struct pheap *hosts = &p->groups[id & ~GROUP_BIT].hosts;
		pheap_promote(p, hosts, now_us);
		if (hosts->ready.n == 0)
			return 0;
		id = hosts->ready.a[0].id;
	}
	return frontier_host_best_tier(p->f, id);
}

/* Puts group g where it belongs in the top heap after a change. */
static int group_refresh(struct politeness *p, uint32_t gi)
{
	struct ipgroup *g = &p->groups[gi];

	if (g->state == GS_HELD)
		return 0;
	if (pheap_n(&g->hosts) == 0) {
		if (g->state == GS_TOP)
			pheap_remove(p, &p->top, g->slot);
		g->state = GS_IDLE;
		return 0;
	}
	if (g->state == GS_TOP) {
		pheap_rekey(p, &p->top, g->slot, group_key(g));
		return 0;
	}
	if (pheap_insert(p, &p->top, gi | GROUP_BIT, group_key(g)) != 0)
		return -1;
	g->state = GS_TOP;
	return 0;
}

/* Puts a host with URLs (parked or just released) into its heap. */
static int host_schedule(struct politeness *p, uint32_t host)
{
	struct phost *h = &p->hosts[host];

	if (h->group == NONE32) {
		if (pheap_insert(p, &p->top, host, h->next) != 0)
			return -1;
	} else {
		if (pheap_insert(p, &p->groups[h->group].hosts, host, h->next) != 0)
			return -1;
		if (group_refresh(p, h->group) != 0) {
			pheap_remove(p, &p->groups[h->group].hosts, h->slot);
			return -1;
		}
	}
	h->state = HS_HEAP;
	p->st.hosts_in_heap++;
	p->st.hosts_parked--;
	return 0;
}

/* Takes a waiting host out of its heap (state becomes parked). */
static void host_unschedule(struct politeness *p, uint32_t host)
{
	struct phost *h = &p->hosts[host];

	if (h->state != HS_HEAP)
		return;
	if (h->group == NONE32) {
		pheap_remove(p, &p->top, h->slot);
	} else {
		pheap_remove(p, &p->groups[h->group].hosts, h->slot);
		(void)group_refresh(p, h->group); /* removal or rekey: no allocation */
	}
	h->state = HS_PARKED;
	p->st.hosts_in_heap--;
	p->st.hosts_parked++;
}

/* Takes a waiting host out of its heap before its key or group changes;
 * 1 if it was waiting (the caller schedules it again), else 0. */
static int host_take_out(struct politeness *p, uint32_t host)
{
	if (p->hosts[host].state != HS_HEAP)
		return 0;
	host_unschedule(p, host);
	return 1;
}

/* The group of addr (its /64 for IPv6, see ipaddr.h), created if new. */
static int group_find(struct politeness *p, const struct ip_addr *addr, uint32_t *out)
{
	uint32_t s, mask;
	struct ip_addr key;

	if ((uint64_t)(p->ngroups + 1) * 2 > p->ipmap_cap) {
		uint32_t cap = p->ipmap_cap ? p->ipmap_cap * 2 : 256, i;
		uint32_t *m = calloc(cap, sizeof *m);
		if (m == NULL)
			return -1;
		for (i = 0; i < p->ngroups; i++) {
			uint32_t k = ip_addr_hash(&p->groups[i].key) & (cap - 1);
			while (m[k] != 0)
				k = (k + 1) & (cap - 1);
			m[k] = i + 1;
		}
		free(p->ipmap);
		p->ipmap = m;
		p->ipmap_cap = cap;
	}
	mask = p->ipmap_cap - 1;
	ip_addr_group(addr, &key);
	for (s = ip_addr_hash(&key) & mask; p->ipmap[s] != 0; s = (s + 1) & mask) {
		if (ip_addr_equal(&p->groups[p->ipmap[s] - 1].key, &key)) {
			*out = p->ipmap[s] - 1;
			return 0;
		}
	}
	if (p->ngroups >= GROUP_BIT - 1)
		return -1;
	if (p->ngroups == p->groups_cap) {
		uint32_t cap = p->groups_cap ? p->groups_cap * 2 : 64;
		struct ipgroup *g = realloc(p->groups, (size_t)cap * sizeof *g);
		if (g == NULL)
			return -1;
		p->groups = g;
		p->groups_cap = cap;
	}
	memset(&p->groups[p->ngroups], 0, sizeof p->groups[0]);
	p->groups[p->ngroups].key = key;
	p->groups[p->ngroups].slot = NONE32;
	p->ipmap[s] = p->ngroups + 1;
	*out = p->ngroups++;
	p->st.ip_groups++;
	return 0;
}

/* Makes sure per-host state exists for every host id up to `host`; newly
 * known hosts start parked. */
static int sync_hosts(struct politeness *p, uint32_t host)
{
	if (host < p->known)
		return 0;
	if (hosts_ensure(p, host) != 0)
		return -1;
	p->st.hosts_parked += host + 1 - p->known;
	p->known = host + 1;
	return 0;
}

static void on_nonempty(void *ctx, uint32_t host)
{
	struct politeness *p = ctx;

	if (sync_hosts(p, host) != 0)
		return; /* out of memory: the host stays parked until its next push */
	if (p->hosts[host].state == HS_PARKED) {
		(void)host_schedule(p, host);
	} else if (p->hosts[host].state == HS_HEAP && (p->hosts[host].slot & READY_BIT)) {
		/* its tier rose while it was ready: back to waiting, ranked
		 * afresh at the next pop (no allocation: the room is kept) */
		host_unschedule(p, host);
		(void)host_schedule(p, host);
	}
}

/* ----- public API ----- */

enum politeness_err politeness_create(struct frontier *f, const struct politeness_config *c,
                                      frontier_drain_fn on_drop, void *drop_ctx,
                                      struct politeness **out)
{
	struct politeness *p;
	uint32_t i, n;

	if (out == NULL)
		return POLITENESS_ERR_INVALID;
	*out = NULL;
	if (f == NULL || c == NULL || politeness_config_check(c) != 0)
		return POLITENESS_ERR_INVALID;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return POLITENESS_ERR_NOMEM;
	p->f = f;
	p->cfg = *c;
	if (p->cfg.max_urls_per_visit == 0)
		p->cfg.max_urls_per_visit = c->policy == DELAY_POLICY_RATIO ? 100 : 1;
	p->on_drop = on_drop;
	p->drop_ctx = drop_ctx;
	n = frontier_host_count(f);
	if (n > 0 && sync_hosts(p, n - 1) != 0)
		goto fail;
	for (i = 0; i < n; i++) {
		if (frontier_host_is_retired(f, i)) {
			p->hosts[i].state = HS_RETIRED;
			p->st.hosts_parked--;
			p->st.hosts_retired++;
		} else if (frontier_host_queued(f, i) > 0 && host_schedule(p, i) != 0) {
			goto fail;
		}
	}
	frontier_set_nonempty_cb(f, on_nonempty, p);
	*out = p;
	return POLITENESS_OK;
fail:
	politeness_destroy(p);
	return POLITENESS_ERR_NOMEM;
}

void politeness_destroy(struct politeness *p)
{
	uint32_t i;

	if (p == NULL)
		return;
	if (p->f != NULL)
		frontier_set_nonempty_cb(p->f, NULL, NULL);
	for (i = 0; i < p->known; i++)
		robots_destroy(p->hosts[i].robots);
	for (i = 0; i < p->ngroups; i++) {
		free(p->groups[i].hosts.wait.a);
		free(p->groups[i].hosts.ready.a);
	}
	free(p->groups);
	free(p->rring);
	free(p->steered);
	free(p->ipmap);
	free(p->hosts);
	free(p->top.wait.a);
	free(p->top.ready.a);
	free(p);
}

enum politeness_err politeness_pop_ready(struct politeness *p, uint64_t now_us, uint32_t *host,
                                         uint64_t *ready_at_us)
{
	struct hent top;
	uint32_t hid;

	if (p == NULL || host == NULL)
		return POLITENESS_ERR_INVALID;
	*host = FRONTIER_HOST_NONE;
	if (pheap_n(&p->top) == 0)
		return POLITENESS_EMPTY;
	pheap_promote(p, &p->top, now_us);
	if (p->top.ready.n == 0) {
		if (ready_at_us != NULL)
			*ready_at_us = p->top.wait.a[0].key;
		return POLITENESS_NOT_READY;
	}
	top = p->top.ready.a[0];
	heap_remove(p, &p->top.ready, 0);
	if (top.id & GROUP_BIT) {
		uint32_t gi = top.id & ~GROUP_BIT;
		struct ipgroup *g = &p->groups[gi];
		/* a group is ready only with a host ready: promoted when it was */
		pheap_promote(p, &g->hosts, now_us);
		hid = g->hosts.ready.a[0].id;
		heap_remove(p, &g->hosts.ready, 0);
		g->state = GS_HELD;
		p->hosts[hid].held_group = gi;
	} else {
		hid = top.id;
		p->hosts[hid].held_group = NONE32;
	}
	p->hosts[hid].state = HS_HELD;
	p->hosts[hid].slot = NONE32;
	p->hosts[hid].robots_ref = 1;
	p->st.hosts_in_heap--;
	p->st.hosts_held++;
	p->st.pops++;
	*host = hid;
	return POLITENESS_OK;
}

enum politeness_err politeness_release(struct politeness *p, uint32_t host,
                                       const struct visit_outcome *o, uint64_t now_us)
{
	struct phost *h;
	uint32_t g0;
	int retire = 0;
	enum politeness_err ret = POLITENESS_OK;

	if (p == NULL || o == NULL || host >= p->known)
		return POLITENESS_ERR_INVALID;
	h = &p->hosts[host];
	if (h->state != HS_HELD)
		return POLITENESS_ERR_STATE;
	switch (o->kind) {
	case VISIT_OK: h->errors = 0; break;
	case VISIT_ERROR:
		h->errors++;
		p->st.errors++;
		retire = p->cfg.max_consecutive_errors != 0 &&
		         h->errors >= p->cfg.max_consecutive_errors;
		break;
	case VISIT_RETRY_LATER: p->st.retry_laters++; break;
	case VISIT_NONE: break;
	}
	if (p->cfg.policy == DELAY_POLICY_ADAPTIVE)
		h->est = delay_estimate_update(&p->cfg, h->est, o, now_us);
	if (h->steered) {
		/* a steered delay: the fixed policy's wait, at that delay */
		struct politeness_config fixed = p->cfg;
		fixed.policy = DELAY_POLICY_FIXED;
		fixed.host_delay_us = (uint64_t)politeness_host_delay(p, host) * 1000u;
		h->next = delay_policy_next_time_est(&fixed, o, now_us, h->crawl_delay,
		                                     o->kind == VISIT_ERROR ? h->errors : 0, NULL);
	} else {
		h->next =
		        delay_policy_next_time_est(&p->cfg, o, now_us, h->crawl_delay,
		                                   o->kind == VISIT_ERROR ? h->errors : 0, &h->est);
	}
	if (o->kind != VISIT_NONE)
		h->wait = h->next - now_us; /* next >= now_us: a wait is never negative */
	g0 = h->held_group;
	h->held_group = NONE32;
	if (o->kind != VISIT_NONE) {
		uint64_t ipn = now_us + delay_policy_ip_wait(&p->cfg, o->start_us, now_us);
		/* The group whose token was held, or the group the host joined while held. */
		uint32_t gi = g0 != NONE32 ? g0 : h->group;
		if (gi != NONE32 && p->groups[gi].next < ipn) {
			p->groups[gi].next = ipn;
			if (gi != g0 && group_refresh(p, gi) != 0)
				ret = POLITENESS_ERR_NOMEM;
		}
	}
	if (g0 != NONE32)
		p->groups[g0].state = GS_IDLE;
	p->st.hosts_held--;
	p->st.releases++;
	if (retire) {
		uint64_t n = 0;
		h->state = HS_RETIRED;
		p->st.hosts_retired++;
		(void)frontier_host_retire(p->f, host, p->on_drop, p->drop_ctx, &n);
		p->st.dropped_urls += n;
		ret = POLITENESS_RETIRED;
	} else {
		h->state = HS_PARKED;
		p->st.hosts_parked++;
		if (frontier_host_queued(p->f, host) > 0 && host_schedule(p, host) != 0)
			ret = POLITENESS_ERR_NOMEM;
	}
	if (g0 != NONE32 && group_refresh(p, g0) != 0)
		ret = POLITENESS_ERR_NOMEM;
	return ret;
}

void politeness_ip_busy(struct politeness *p, uint32_t host, uint64_t until_us)
{
	uint32_t gi;

	if (p == NULL || host >= p->known || p->hosts[host].state != HS_HELD)
		return;
	gi = p->hosts[host].held_group;
	/* held: the group is out of the top heap until the release re-keys it */
	if (gi != NONE32 && p->groups[gi].next < until_us)
		p->groups[gi].next = until_us;
}

void politeness_visit_budget(const struct politeness *p, uint32_t host, uint32_t *max_urls,
                             uint64_t *max_us)
{
	if (p == NULL)
		return;
	/* a steered delay holds between every two requests: one URL a visit */
	int steered = host < p->known && p->hosts[host].steered;
	if (max_urls != NULL)
		*max_urls = steered ? 1 : p->cfg.max_urls_per_visit;
	if (max_us != NULL)
		*max_us = p->cfg.policy == DELAY_POLICY_RATIO && !steered ? p->cfg.visit_budget_us
		                                                          : UINT64_MAX;
}

/* The index of host's steered delay, or where it would go. */
static size_t steered_find(const struct politeness *p, uint32_t host)
{
	size_t lo = 0;
	ARRAY_LOWER_BOUND(lo, p->nsteered, mid, p->steered[mid].host < host);
	return lo;
}

enum politeness_err politeness_host_set_delay(struct politeness *p, uint32_t host, uint32_t ms)
{
	if (p == NULL || host >= frontier_host_count(p->f))
		return POLITENESS_ERR_INVALID;
	if (sync_hosts(p, host) != 0)
		return POLITENESS_ERR_NOMEM;
	size_t i = steered_find(p, host);
	int found = i < p->nsteered && p->steered[i].host == host;
	if (!ms) {
		if (found)
			memmove(&p->steered[i], &p->steered[i + 1],
			        (p->nsteered-- - i - 1) * sizeof *p->steered);
		p->hosts[host].steered = 0;
		return POLITENESS_OK;
	}
	if (!found) {
		struct steered_delay *n =
		        array_grow(p->steered, &p->steered_cap, p->nsteered, sizeof *n, 8);
		if (!n)
			return POLITENESS_ERR_NOMEM;
		p->steered = n;
		memmove(&n[i + 1], &n[i], (p->nsteered++ - i) * sizeof *n);
		n[i].host = host;
	}
	p->steered[i].ms = ms;
	p->hosts[host].steered = 1;
	return POLITENESS_OK;
}

uint32_t politeness_host_delay(const struct politeness *p, uint32_t host)
{
	if (p == NULL || host >= p->known || !p->hosts[host].steered)
		return 0;
	return p->steered[steered_find(p, host)].ms;
}

enum politeness_err politeness_host_set_ip(struct politeness *p, uint32_t host,
                                           const struct ip_addr *addr)
{
	struct phost *h;
	uint32_t gi;
	int was_waiting;

	if (p == NULL || addr == NULL || addr->family == IP_NONE ||
	    host >= frontier_host_count(p->f))
		return POLITENESS_ERR_INVALID;
	if (sync_hosts(p, host) != 0)
		return POLITENESS_ERR_NOMEM;
	h = &p->hosts[host];
	h->addr = *addr;
	h->has_ip = 1;
	if (!p->cfg.ip_politeness)
		return POLITENESS_OK;
	if (group_find(p, addr, &gi) != 0)
		return POLITENESS_ERR_NOMEM;
	if (h->group == gi)
		return POLITENESS_OK;
	was_waiting = host_take_out(p, host);
	h->group = gi;
	if (was_waiting && host_schedule(p, host) != 0)
		return POLITENESS_ERR_NOMEM;
	return POLITENESS_OK;
}

int politeness_host_ip(const struct politeness *p, uint32_t host, struct ip_addr *addr)
{
	if (p == NULL || host >= p->known || !p->hosts[host].has_ip)
		return 0;
	if (addr != NULL)
		*addr = p->hosts[host].addr;
	return 1;
}

enum politeness_err politeness_host_set_crawl_delay(struct politeness *p, uint32_t host,
                                                    uint64_t delay_us)
{
	if (p == NULL || host >= frontier_host_count(p->f))
		return POLITENESS_ERR_INVALID;
	if (sync_hosts(p, host) != 0)
		return POLITENESS_ERR_NOMEM;
	p->hosts[host].crawl_delay =
	        delay_us < p->cfg.crawl_delay_cap_us ? delay_us : p->cfg.crawl_delay_cap_us;
	return POLITENESS_OK;
}

uint64_t politeness_host_next(const struct politeness *p, uint32_t host)
{
	return p != NULL && host < p->known ? p->hosts[host].next : 0;
}

uint64_t politeness_host_ip_next(const struct politeness *p, uint32_t host)
{
	if (p == NULL || host >= p->known || p->hosts[host].group == NONE32)
		return 0;
	return p->groups[p->hosts[host].group].next;
}

uint64_t politeness_host_wait(const struct politeness *p, uint32_t host)
{
	return p != NULL && host < p->known ? p->hosts[host].wait : 0;
}

void politeness_host_estimate(const struct politeness *p, uint32_t host, struct delay_estimate *out)
{
	static const struct delay_estimate none = { 0, 0 };

	*out = p != NULL && host < p->known ? p->hosts[host].est : none;
}

uint32_t politeness_host_errors(const struct politeness *p, uint32_t host)
{
	return p != NULL && host < p->known ? p->hosts[host].errors : 0;
}

int politeness_host_held(const struct politeness *p, uint32_t host)
{
	return p != NULL && host < p->known && p->hosts[host].state == HS_HELD;
}

void politeness_host_save(const struct politeness *p, uint32_t host, uint64_t now_us,
                          struct politeness_host_saved *out)
{
	const struct phost *h;
	uint32_t gi;

	memset(out, 0, sizeof *out);
	if (p == NULL || host >= p->known)
		return;
	h = &p->hosts[host];
	out->wait_us = h->next > now_us ? h->next - now_us : 0;
	gi = h->held_group != NONE32 ? h->held_group : h->group;
	if (gi != NONE32 && p->groups[gi].next > now_us)
		out->ip_wait_us = p->groups[gi].next - now_us;
	out->crawl_delay_us = h->crawl_delay;
	out->errors = h->errors;
	out->addr = h->addr;
	out->has_ip = h->has_ip;
}

enum politeness_err politeness_host_restore(struct politeness *p, uint32_t host,
                                            const struct politeness_host_saved *s, uint64_t now_us)
{
	struct visit_outcome o = { VISIT_OK, now_us, 1, 0 };
	struct phost *h;
	uint64_t next, ipn;
	int was_waiting;

	if (p == NULL || s == NULL || host >= frontier_host_count(p->f))
		return POLITENESS_ERR_INVALID;
	if (sync_hosts(p, host) != 0)
		return POLITENESS_ERR_NOMEM;
	h = &p->hosts[host];
	if (h->state == HS_HELD)
		return POLITENESS_ERR_STATE;
	if (h->state == HS_RETIRED)
		return POLITENESS_OK;
	was_waiting = host_take_out(p, host);
	h->crawl_delay = s->crawl_delay_us < p->cfg.crawl_delay_cap_us ? s->crawl_delay_us
	                                                               : p->cfg.crawl_delay_cap_us;
	h->errors = s->errors;
	next = delay_policy_next_time(&p->cfg, &o, now_us, h->crawl_delay, 0);
	h->next = now_us + s->wait_us > next ? now_us + s->wait_us : next;
	h->wait = h->next - now_us;
	if (s->has_ip && s->addr.family != IP_NONE) {
		h->addr = s->addr;
		h->has_ip = 1;
		if (p->cfg.ip_politeness) {
			uint32_t gi;
			if (group_find(p, &s->addr, &gi) != 0)
				return POLITENESS_ERR_NOMEM; /* parked until its next push */
			h->group = gi;
			ipn = now_us + delay_policy_ip_wait(&p->cfg, now_us, now_us);
			if (now_us + s->ip_wait_us > ipn)
				ipn = now_us + s->ip_wait_us;
			if (p->groups[gi].next < ipn)
				p->groups[gi].next = ipn;
			if (group_refresh(p, gi) != 0) /* its key in the top heap */
				return POLITENESS_ERR_NOMEM;
		}
	}
	if ((was_waiting || frontier_host_queued(p->f, host) > 0) && host_schedule(p, host) != 0)
		return POLITENESS_ERR_NOMEM;
	return POLITENESS_OK;
}

enum politeness_err politeness_robots_state(const struct politeness *p, uint32_t host,
                                            enum politeness_robots_state *state,
                                            const struct robots **rules, uint64_t *expires_us)
{
	const struct phost *h;

	if (p == NULL || host >= frontier_host_count(p->f))
		return POLITENESS_ERR_INVALID;
	h = host < p->known ? &p->hosts[host] : NULL; /* not known yet: unknown */
	if (state != NULL)
		*state = h ? (enum politeness_robots_state)h->robots_state
		           : POLITENESS_ROBOTS_UNKNOWN;
	if (rules != NULL)
		*rules = h ? h->robots : NULL;
	if (expires_us != NULL)
		*expires_us = h ? h->robots_exp : 0;
	return POLITENESS_OK;
}

/* Takes ring entry i out (the last one moves in). */
static void rring_drop(struct politeness *p, uint32_t i)
{
	p->hosts[p->rring[i]].robots_ring = 0;
	p->rring[i] = p->rring[--p->rring_n];
}

/* Hosts with URLs waiting the hand passes over, looking for an idle one,
 * before it forgets the first of them. */
#define ROBOTS_EVICT_LOOK 16

/* Forgets a host's rules: it is unknown again; but rules that allow
 * everything become no rules (NULL: allow all, still known until they
 * expire), which cost nothing and need no fetch. */
static void robots_forget(struct politeness *p, uint32_t ring_slot)
{
	struct phost *h = &p->hosts[p->rring[ring_slot]];
	p->st.robots_bytes -= robots_mem_bytes(h->robots);
	p->st.robots_hosts--;
	if (robots_allows_all(h->robots)) {
		p->st.robots_compacted++;
	} else {
		p->st.robots_evicted++;
		h->robots_state = POLITENESS_ROBOTS_UNKNOWN;
		h->robots_exp = 0;
	}
	robots_destroy(h->robots);
	h->robots = NULL;
	rring_drop(p, ring_slot);
}

/* While the cached rules pass the budget, the clock hand forgets the rules
 * of a host not visited since it last passed (robots_ref), an idle one
 * (nothing queued) rather than one with URLs waiting when one is among the
 * next ROBOTS_EVICT_LOOK it meets; never those of keep or of a held host:
 * the host is unknown again, its robots.txt fetched before its next URL. */
static void robots_evict(struct politeness *p, uint32_t keep)
{
	uint64_t steps = 2 * (uint64_t)p->rring_n + 1;
	uint32_t waiting = NONE32, looked = 0;
	while (p->cfg.robots_cache_bytes != 0 && p->st.robots_bytes > p->cfg.robots_cache_bytes &&
	       p->rring_n > 0 && steps-- > 0) {
		if (p->rhand >= p->rring_n)
			p->rhand = 0;
		uint32_t id = p->rring[p->rhand];
		struct phost *h = &p->hosts[id];
		if (h->robots == NULL) {
			if (waiting == p->rring_n - 1)
				waiting = p->rhand; /* the last entry moves into this slot */
			rring_drop(p, p->rhand);
		} else if (id == keep || h->state == HS_HELD) {
			p->rhand++;
		} else if (h->robots_ref) {
			h->robots_ref = 0;
			p->rhand++;
		} else if (h->state == HS_HEAP && looked++ < ROBOTS_EVICT_LOOK) {
			if (waiting == NONE32)
				waiting = p->rhand;
			p->rhand++;
		} else {
			robots_forget(p, looked > ROBOTS_EVICT_LOOK && waiting != NONE32
			                         ? waiting
			                         : p->rhand);
			waiting = NONE32;
			looked = 0;
			steps = 2 * (uint64_t)p->rring_n + 1; /* the next one, from here */
		}
	}
}

enum politeness_err politeness_robots_set(struct politeness *p, uint32_t host,
                                          enum politeness_robots_state state, struct robots *rules,
                                          uint64_t expires_us)
{
	struct phost *h;

	if (p == NULL || host >= frontier_host_count(p->f) || sync_hosts(p, host) != 0) {
		robots_destroy(rules); /* taken in every case: the caller holds nothing */
		return p == NULL || host >= frontier_host_count(p->f) ? POLITENESS_ERR_INVALID
		                                                      : POLITENESS_ERR_NOMEM;
	}
	h = &p->hosts[host];
	if (rules != NULL && h->robots != rules) {
		uint32_t cap = p->cfg.robots_max_wildcard_rules;
		if (robots_wildcard_cap_set(rules, cap) > cap && cap != 0)
			p->st.robots_capped++;
	}
	if (h->robots != rules) {
		p->st.robots_bytes -= robots_mem_bytes(h->robots);
		robots_destroy(h->robots);
		p->st.robots_bytes += robots_mem_bytes(rules);
		p->st.robots_hosts += (rules != NULL) - (h->robots != NULL);
	}
	h->robots_state = (uint8_t)state;
	h->robots = rules;
	h->robots_exp = expires_us;
	if (rules != NULL && !h->robots_ring) {
		if (p->rring_n == p->rring_cap) {
			uint32_t cap = p->rring_cap ? p->rring_cap * 2 : 64;
			uint32_t *r = realloc(p->rring, (size_t)cap * sizeof *r);
			if (r == NULL)
				return POLITENESS_OK; /* not evictable: kept, as without a bound */
			p->rring = r;
			p->rring_cap = cap;
		}
		p->rring[p->rring_n++] = host;
		h->robots_ring = 1;
	}
	robots_evict(p, host);
	return POLITENESS_OK;
}

/* ----- robots.txt cache checkpoints ----- */

#define ROBOTS_CKPT_MAGIC "PLROBOT1"
#define ROBOTS_CKPT_BLOB_MAX (64u << 20) /* the encoded rules of one robots.txt */

/* The encoded rules of a known host, or NULL with *len 0 when it has none
 * (allow all). -1 when they cannot be encoded: the host is saved unknown. */
static int robots_blob(const struct phost *h, char **blob, size_t *len)
{
	*blob = NULL;
	*len = 0;
	if (h->robots == NULL)
		return 0;
	if (robots_encode(h->robots, blob, len) != ROBOTS_OK)
		return -1;
	if (*blob == NULL || *len > ROBOTS_CKPT_BLOB_MAX) {
		free(*blob);
		return -1;
	}
	return 0;
}

enum politeness_err politeness_robots_checkpoint(const struct politeness *p, const char *path,
                                                 uint64_t now_us)
{
	struct recfile_writer *w;
	uint32_t i, n = 0;

	if (p == NULL || path == NULL)
		return POLITENESS_ERR_INVALID;
	for (i = 0; i < p->known; i++)
		n += p->hosts[i].robots_state == POLITENESS_ROBOTS_KNOWN;
	if (recfile_writer_create(path, ROBOTS_CKPT_MAGIC, &w) != RECFILE_OK)
		return POLITENESS_ERR_IO;
	recfile_put_u32(w, n);
	for (i = 0; i < p->known; i++) {
		const struct phost *h = &p->hosts[i];
		char *blob;
		size_t len;
		if (h->robots_state != POLITENESS_ROBOTS_KNOWN)
			continue; /* a fetch in flight is made again */
		int ok = robots_blob(h, &blob, &len) == 0;
		recfile_put_u32(w, i);
		recfile_put_u8(w, ok);
		recfile_put_u8(w, blob != NULL);
		recfile_put_bytes(w, blob, (uint32_t)len);
		free(blob);
		/* 0 = no expiry; otherwise at least 1 so it stays "set". */
		recfile_put_u64(w, h->robots_exp == 0       ? 0
		                   : h->robots_exp > now_us ? h->robots_exp - now_us
		                                            : 1);
	}
	return recfile_writer_close(w, 0) == RECFILE_OK ? POLITENESS_OK : POLITENESS_ERR_IO;
}

static enum politeness_err robots_ckpt_err(enum recfile_err e)
{
	if (e == RECFILE_OK || e == RECFILE_ERR_NOMEM)
		return e == RECFILE_OK ? POLITENESS_OK : POLITENESS_ERR_NOMEM;
	return e == RECFILE_ERR_IO ? POLITENESS_ERR_IO : POLITENESS_ERR_CORRUPT;
}

/* Reads one saved host and gives it its robots.txt cache. */
static enum politeness_err robots_read_host(struct politeness *p, struct recfile_reader *r,
                                            uint64_t now_us)
{
	uint32_t host, len;
	uint8_t known, has_rules;
	uint64_t exp;
	char *blob = NULL;
	struct robots *rules = NULL;
	enum recfile_err re;

	if ((re = recfile_get_u32(r, &host)) != RECFILE_OK ||
	    (re = recfile_get_u8(r, &known)) != RECFILE_OK ||
	    (re = recfile_get_u8(r, &has_rules)) != RECFILE_OK ||
	    (re = recfile_get_bytes_alloc(r, ROBOTS_CKPT_BLOB_MAX, &blob, &len)) != RECFILE_OK ||
	    (re = recfile_get_u64(r, &exp)) != RECFILE_OK) {
		free(blob);
		return robots_ckpt_err(re);
	}
	if (host >= frontier_host_count(p->f)) {
		free(blob);
		return POLITENESS_ERR_CORRUPT;
	}
	if (known && has_rules) {
		rules = blob != NULL ? robots_decode(blob, len) : NULL;
		known = rules != NULL; /* fetch it again rather than allow everything */
	}
	free(blob);
	return politeness_robots_set(p, host,
	                             known ? POLITENESS_ROBOTS_KNOWN : POLITENESS_ROBOTS_UNKNOWN,
	                             rules, exp == 0 ? 0 : now_us + exp);
}

enum politeness_err politeness_robots_restore(struct politeness *p, const char *path,
                                              uint64_t now_us)
{
	struct recfile_reader *r;
	enum recfile_err re;
	enum politeness_err err;
	uint32_t n;

	if (p == NULL || path == NULL)
		return POLITENESS_ERR_INVALID;
	re = recfile_reader_open(path, ROBOTS_CKPT_MAGIC, &r);
	if (re != RECFILE_OK)
		return robots_ckpt_err(re);
	err = robots_ckpt_err(recfile_get_u32(r, &n));
	for (uint32_t i = 0; err == POLITENESS_OK && i < n; i++)
		err = robots_read_host(p, r, now_us);
	if (err == POLITENESS_OK && !recfile_reader_at_end(r))
		err = POLITENESS_ERR_CORRUPT;
	recfile_reader_close(r);
	return err;
}

void politeness_stats(const struct politeness *p, struct politeness_stats *s)
{
	if (p == NULL || s == NULL)
		return;
	*s = p->st;
	s->mem_hosts = (uint64_t)p->nhosts * sizeof *p->hosts +
	               (uint64_t)p->rring_cap * sizeof *p->rring +
	               (uint64_t)p->steered_cap * sizeof *p->steered;
	s->mem_heaps = p->heap_slots * sizeof(struct hent);
	s->mem_ip_groups = (uint64_t)p->groups_cap * sizeof *p->groups +
	                   (uint64_t)p->ipmap_cap * sizeof *p->ipmap;
}

const char *politeness_strerror(enum politeness_err e)
{
	switch (e) {
	case POLITENESS_OK: return "ok";
	case POLITENESS_NOT_READY: return "no host ready yet";
	case POLITENESS_EMPTY: return "no host waiting";
	case POLITENESS_RETIRED: return "host retired";
	case POLITENESS_ERR_NOMEM: return "out of memory";
	case POLITENESS_ERR_INVALID: return "invalid argument";
	case POLITENESS_ERR_STATE: return "host is not held";
	case POLITENESS_ERR_IO: return "checkpoint file I/O error";
	case POLITENESS_ERR_CORRUPT: return "checkpoint file torn or inconsistent";
	}
	return "unknown error";
}
