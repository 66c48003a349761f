/*
 * crawl_cluster.c: one agent of a shared crawl on the fetch loop. See
 * crawl_cluster.h.
 */
#include "crawler/crawl_cluster.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "crawler/cluster/cluster.h"
#include "crawler/config/config.h"
#include "crawler/crawl_exit.h"
#include "crawler/crawl_source.h"
#include "crawler/crawl_stats.h"
#include "crawler/link_meta.h"
#include "crawler/sieve_path.h"
#include "crawler/visit.h"
#include "frontier/base/array.h"
#include "frontier/base/chain.h"
#include "frontier/base/clock.h"
#include "frontier/frontier.h"
#include "politeness/politeness.h"

/* Census reads in a row that must find nothing busy before the end. */
#define END_STREAK 2
/* Margin on the wait after gaining hosts, for the old owner's clock. */
#define GAIN_MARGIN_US 100000
/* Pages reserved at a time: a tenth of a second of this agent's pages,
 * within these bounds. */
#define BUDGET_CHUNK_MIN 8
#define BUDGET_CHUNK_MAX 64
/* The crawl's shared rules are read at most this often. */
#define SHARED_RULES_POLL_MS 500u

/* A graceful stop's steps (agent_leave). */
enum leave_step {
	LEAVE_NONE,  /* not leaving */
	LEAVE_FLUSH, /* the sieve delivers what it holds */
	LEAVE_SEND,  /* everything queued goes to the owners without us */
	LEAVE_ACK,   /* waiting until Redis holds all of it, then ack and leave */
	LEAVE_WAIT,  /* the lease's deletion is under way */
	LEAVE_DONE,
};

/* The crawl's page budget (crawl.max_pages) as this agent holds it. */
struct page_budget {
	uint64_t quota;     /* pages_started may reach this: the pages
	                     * started before this run (a resume's, reserved by
	                     * its earlier run) plus every grant */
	uint64_t chunk;     /* pages asked at a time */
	uint64_t rate_mark; /* pages_started at the last tick */
	int based;          /* quota holds that base */
	int asking;         /* a reservation is in flight */
	int failed;         /* the last one failed: the next waits for a tick */
	int spent;          /* every page of the budget is reserved crawl-wide */
	int asked_out;      /* the read in flight was sent with no quota left */
	int confirmed;      /* spent, as read with no quota left */
};

/* An inbox entry's lines waiting for room in the feed queue. */
struct inbound {
	struct inbound *next;
	size_t len;
	char lines[];
};

/* Rules steered into this agent, waiting to be pushed to the crawl's
 * shared rules (an encoded entry each). */
struct rules_out {
	struct rules_out *next;
	size_t len;
	char entry[];
};

/* The crawl's shared rules ({P}:rules) as this agent follows them. */
struct shared_rules {
	uint64_t next;    /* the first entry not applied nor passed */
	int known;        /* next read from the steering */
	int reading;      /* a read in flight */
	uint64_t read_us; /* when the last read went (monotonic) */
	struct rules_out *head, *tail;
	int pushing;
	uint64_t push_after_us; /* a failed push is sent again from then */
	uint64_t *own;          /* indexes of this agent's entries not passed yet */
	size_t nown, own_cap;
};

/* The whole crawl's deadline (crawl.max_time_ms) as this agent knows it. */
struct crawl_deadline {
	uint64_t max_ms;  /* the crawl's length; 0: none */
	uint64_t stop_us; /* on the monotonic clock, once known */
	int known, asking;
};

struct crawl_cluster {
	struct crawl_source_parts p;
	uint64_t max_pages; /* the crawl-wide budget; 0: none */
	struct crawl_deadline deadline;
	uint32_t max_url_len; /* a found URL's room in a batch */
	struct cluster *c;    /* NULL once stopped */
	/* every URL found here, as lines "URL \t VIA \t DEPTH \n" for their
	 * owners: appended by the adding threads' batches, taken by the pump */
	pthread_mutex_t out_mu;
	char *out_buf;
	size_t out_len, out_cap;
	atomic_uint_fast64_t links_dropped; /* lines lost: no memory */
	uint64_t inbox_rejected;            /* loop thread: see on_urls */
	uint64_t malformed_before;          /* cluster_lines_malformed when c went */
	uint64_t gain_wait_us, hold_until_us;
	int was_live, idle_published, census_busy, ended;
	unsigned end_streak;
	struct cluster_census census;
	struct page_budget budget;
	struct shared_rules rules;
	char **names; /* the live agents of the last view */
	size_t nnames;
	char *rest; /* outbox lines not sent yet */
	size_t rest_len, rest_cap;
	struct inbound *in_head, *in_tail;
	enum leave_step leave;
	struct assign_view *leave_view; /* the live agents but this one */
	uint64_t leave_seq;             /* the sieve flush asked for */
	uint64_t leave_start_us;
	uint64_t *handed; /* hashes of URLs handed over, sorted up to nsorted */
	size_t nhanded, nsorted, handed_cap;
};

static int has_name(char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return 1;
	return 0;
}

static void set_idle(struct crawl_cluster *g, int idle)
{
	if (g->idle_published == idle)
		return;
	g->idle_published = idle;
	cluster_publish_idle(g->c, idle);
}

/* ---- callbacks of the Redis layer ---- */

static void on_view(struct cluster *c, void *arg)
{
	struct crawl_cluster *g = arg;
	size_t n;
	const char *const *live = cluster_live_names(c, &n);
	const char *self = cluster_name(c);
	int gained = !has_name(g->names, g->nnames, self);
	for (size_t i = 0; i < g->nnames && !gained; i++)
		gained = !has_name((char *const *)live, n, g->names[i]);
	if (gained && has_name((char *const *)live, n, self)) {
		uint64_t until = monotonic_us() + g->gain_wait_us;
		if (until > g->hold_until_us)
			g->hold_until_us = until;
	}
	ARRAY_FREE_EACH(g->names, g->nnames);
	g->nnames = 0;
	g->names = calloc(n + 1, sizeof *g->names);
	for (size_t i = 0; g->names && i < n; i++)
		if ((g->names[g->nnames] = strdup(live[i])) != NULL)
			g->nnames++;
	g->p.pump(g->p.ctx);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void handed_add(struct crawl_cluster *g, const char *url)
{
	uint64_t *h = array_grow(g->handed, &g->handed_cap, g->nhanded, sizeof *h, 1024);
	if (!h)
		return; /* out of memory: the URL may come back and be taken as seen */
	g->handed = h;
	g->handed[g->nhanded++] = XXH3_64bits(url, strlen(url));
}

/* 1 (and forgets it) if this agent handed url over: its sieve has seen it,
 * it was never fetched here. */
static int handed_take(struct crawl_cluster *g, const char *url)
{
	if (g->nhanded == 0)
		return 0;
	if (g->nsorted != g->nhanded) {
		qsort(g->handed, g->nhanded, sizeof *g->handed, cmp_u64);
		g->nsorted = g->nhanded;
	}
	uint64_t key = XXH3_64bits(url, strlen(url));
	uint64_t *at = bsearch(&key, g->handed, g->nhanded, sizeof key, cmp_u64);
	if (!at)
		return 0;
	memmove(at, at + 1, (size_t)(g->handed + g->nhanded - at - 1) * sizeof key);
	g->nhanded--;
	g->nsorted--;
	return 1;
}

static void on_urls(struct cluster *c, const struct cluster_url *urls, size_t n, void *arg)
{
	struct crawl_cluster *g = arg;
	(void)c;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += strlen(urls[i].url) + strlen(urls[i].via) + 16;
	struct inbound *in = malloc(sizeof *in + len + 1);
	if (!in) {
		fprintf(stderr,
		        "\ncrawler crawl: out of memory: an inbox entry waits for the heir\n");
		return;
	}
	in->len = 0;
	for (size_t i = 0; i < n; i++) {
		/* taken as written by whoever can write to the stream: only
		 * what this crawl would have found itself goes on */
		const char *url = urls[i].url, *via = urls[i].via;
		size_t ulen = strlen(url), vlen = strlen(via);
		uint32_t word;
		if (!g->p.inbound(g->p.ctx, url, ulen, urls[i].depth, &word)) {
			g->inbox_rejected++;
			continue;
		}
		if (vlen > g->max_url_len)
			via = "", vlen = 0; /* too long to be a via of ours: none */
		/* leaving: every URL goes on to its owner (hand_inbound), none
		 * into a frontier already handed over */
		if (g->leave != LEAVE_NONE || !handed_take(g, url) ||
		    g->p.take(g->p.ctx, url, ulen, via, vlen, word) != 0)
			in->len += (size_t)snprintf(in->lines + in->len, len + 1 - in->len,
			                            "%s\t%s\t%u\n", url, via, word);
	}
	if (in->len)
		CHAIN_APPEND(g->in_head, g->in_tail, in);
	else
		free(in); /* every URL went straight to the frontier */
	set_idle(g, 0);
	g->p.pump(g->p.ctx);
}

static void on_fenced(struct cluster *c, void *arg)
{
	struct crawl_cluster *g = arg;
	(void)c;
	fprintf(stderr, "\ncrawler crawl: cluster lease may lapse: fetching paused\n");
	g->was_live = 0;
	/* the rejoin takes this agent out of the idle set: said again then */
	g->idle_published = 0;
}

static void on_error(struct cluster *c, int err, void *arg)
{
	struct crawl_cluster *g = arg;
	(void)c;
	fprintf(stderr, "\ncrawler crawl: cluster: %s\n", cluster_strerror(err));
	g->p.fail(g->p.ctx, CRAWL_EXIT_USAGE);
}

/* ---- set-up ---- */

static int agent_open(const struct crawl_source_config *cfg, const struct crawl_source_parts *parts,
                      void **impl)
{
	const struct crawl_cluster_config *cc = cfg->cluster;
	const struct politeness_config *pc = cfg->politeness;
	struct cluster_options opt = { .url = cc->redis,
		                       .name = cc->agent,
		                       .lease_ms = cc->lease_ms,
		                       .max_unacked = cc->window,
		                       .ip_patience_ms = (unsigned)(pc->ip_delay_us / 1000) + 1,
		                       .dedup = true };
	*impl = NULL;
	if (assign_method_parse(cc->assign, &opt.method) != ASSIGN_OK) {
		fprintf(stderr,
		        "crawler crawl: --assign: '%s' is not perm, minhash or consistent\n",
		        cc->assign);
		return CRAWL_EXIT_USAGE;
	}
	struct crawl_cluster *g = calloc(1, sizeof *g);
	if (!g)
		return CRAWL_EXIT_FAILURE;
	g->p = *parts;
	g->max_pages = cfg->max_pages;
	g->deadline.max_ms = cfg->max_time_ms;
	g->max_url_len = cfg->max_url_len;
	pthread_mutex_init(&g->out_mu, NULL);
	uint64_t delay =
	        pc->host_delay_us > pc->min_delay_us ? pc->host_delay_us : pc->min_delay_us;
	if (pc->ip_delay_us > delay)
		delay = pc->ip_delay_us;
	g->gain_wait_us = (uint64_t)cc->lease_ms / 3 * 1000 + delay + GAIN_MARGIN_US;
	struct cluster_callbacks cb = { .on_view = on_view,
		                        .on_urls = on_urls,
		                        .on_fenced = on_fenced,
		                        .on_error = on_error,
		                        .arg = g };
	int rc = cluster_create(parts->loop, &opt, &cb, &g->c);
	if (rc != CLUSTER_OK) {
		fprintf(stderr, "crawler crawl: --cluster %s --agent '%s': %s\n", cc->redis,
		        cc->agent, cluster_strerror(rc));
		pthread_mutex_destroy(&g->out_mu);
		free(g);
		return rc == CLUSTER_EINVAL ? CRAWL_EXIT_USAGE : CRAWL_EXIT_FAILURE;
	}
	*impl = g;
	return CRAWL_EXIT_OK;
}

/* Leaves the loop: the Redis layer goes (the lease lapses); the batches
 * stay usable until agent_close. */
static void agent_stop(void *impl)
{
	struct crawl_cluster *g = impl;
	if (g->c)
		g->malformed_before = cluster_lines_malformed(g->c);
	cluster_destroy(g->c);
	g->c = NULL;
}

static void agent_close(void *impl)
{
	struct crawl_cluster *g = impl;
	agent_stop(g);
	for (struct inbound *in = g->in_head, *next; in; in = next) {
		next = in->next;
		free(in);
	}
	for (struct rules_out *o = g->rules.head, *next; o; o = next) {
		next = o->next;
		free(o);
	}
	free(g->rules.own);
	ARRAY_FREE_EACH(g->names, g->nnames);
	assign_view_destroy(g->leave_view);
	free(g->handed);
	free(g->rest);
	free(g->out_buf);
	pthread_mutex_destroy(&g->out_mu);
	free(g);
}

/* ---- the page budget ---- */

static int budget_on(const struct crawl_cluster *g)
{
	return g->max_pages != 0;
}

/* Pages this agent may still start. */
static uint64_t budget_left(const struct crawl_cluster *g)
{
	uint64_t started = g->p.pages_started(g->p.ctx);
	return g->budget.quota > started ? g->budget.quota - started : 0;
}

static void on_budget(void *arg, bool ok, uint64_t granted, uint64_t reserved)
{
	struct crawl_cluster *g = arg;
	g->budget.asking = 0;
	g->budget.failed = !ok;
	if (ok) {
		g->budget.quota += granted;
		g->budget.spent = reserved >= g->max_pages;
		g->budget.confirmed = g->budget.spent && g->budget.asked_out && budget_left(g) == 0;
	}
	g->p.pump(g->p.ctx);
}

/* Reserves a chunk once this agent has hosts to visit and half a chunk
 * left, so fetching does not wait for the answer; probe: asks for nothing
 * when it has no such need, to learn whether the budget is spent. Spent
 * is read again once a second (pages a graceful stop gave back are taken
 * up), and once more when this agent's quota has run out: it ends on the
 * budget only on that read. */
static void budget_ask(struct crawl_cluster *g, int probe)
{
	struct page_budget *b = &g->budget;
	if (!b->based) {
		b->quota = b->rate_mark = g->p.pages_started(g->p.ctx);
		b->chunk = BUDGET_CHUNK_MIN;
		b->based = 1;
	}
	int out = budget_left(g) == 0;
	if (!budget_on(g) || (b->spent && !probe && !(out && !b->confirmed)) || b->asking ||
	    (b->failed && !probe) || g->leave != LEAVE_NONE)
		return;
	struct politeness_stats ps;
	politeness_stats(g->p.pol, &ps);
	int short_of =
	        (ps.hosts_in_heap > 0 || ps.hosts_held > 0) && budget_left(g) <= b->chunk / 2;
	if ((short_of || probe || (b->spent && out)) &&
	    cluster_budget_reserve(g->c, g->max_pages, short_of ? b->chunk : 0, on_budget, g) ==
	            CLUSTER_OK) {
		b->asking = 1;
		b->asked_out = out;
	}
}

/* Once a second: the chunk follows this agent's page rate. */
static void budget_tick(struct crawl_cluster *g)
{
	struct page_budget *b = &g->budget;
	uint64_t started = g->p.pages_started(g->p.ctx);
	uint64_t chunk = started > b->rate_mark ? (started - b->rate_mark) / 10 : 0;
	b->rate_mark = started;
	b->chunk = chunk < BUDGET_CHUNK_MIN   ? BUDGET_CHUNK_MIN
	           : chunk > BUDGET_CHUNK_MAX ? BUDGET_CHUNK_MAX
	                                      : chunk;
	b->failed = 0;
	budget_ask(g, 1);
}

static int agent_budget_over(void *impl)
{
	const struct crawl_cluster *g = impl;
	return budget_on(g) && g->budget.confirmed && budget_left(g) == 0;
}

/* ---- the whole crawl's deadline ---- */

static void on_deadline(void *arg, bool ok, int64_t left_ms)
{
	struct crawl_cluster *g = arg;
	g->deadline.asking = 0;
	if (!ok)
		return; /* asked again at the next pump */
	g->deadline.known = 1;
	g->deadline.stop_us = monotonic_us() + (left_ms > 0 ? (uint64_t)left_ms * 1000u : 0);
	g->p.pump(g->p.ctx);
}

/* Asks once live: the first agent's answer sets the deadline for all. */
static void deadline_ask(struct crawl_cluster *g)
{
	struct crawl_deadline *d = &g->deadline;
	if (d->max_ms && !d->known && !d->asking && cluster_is_live(g->c) &&
	    cluster_deadline(g->c, d->max_ms, on_deadline, g) == CLUSTER_OK)
		d->asking = 1;
}

static int agent_time_up(void *impl)
{
	const struct crawl_cluster *g = impl;
	return g->deadline.known && monotonic_us() >= g->deadline.stop_us;
}

/* ---- the crawl's shared rules ---- */

static void rules_poll(struct crawl_cluster *g);

static void on_rules_pushed(void *arg, bool ok, uint64_t index)
{
	struct crawl_cluster *g = arg;
	struct shared_rules *sr = &g->rules;
	sr->pushing = 0;
	if (!ok) {
		sr->push_after_us = monotonic_us() + SHARED_RULES_POLL_MS * 1000u;
		return; /* sent again: Redis may hold it twice, which decides as once */
	}
	struct rules_out *o = sr->head;
	sr->head = o->next;
	if (!sr->head)
		sr->tail = NULL;
	free(o);
	if (index < sr->next) {
		rules_poll(g);
		return; /* read back before this answer (a redirect): applied twice */
	}
	uint64_t *own = array_grow(sr->own, &sr->own_cap, sr->nown, sizeof *own, 16);
	if (own) {
		sr->own = own;
		sr->own[sr->nown++] = index;
	} /* else applied here twice: the same rules again on top decide as once */
	rules_poll(g);
}

/* 1 (and forgets it) if entry index is one this agent pushed. */
static int rules_own_take(struct shared_rules *sr, uint64_t index)
{
	for (size_t i = 0; i < sr->nown; i++)
		if (sr->own[i] == index) {
			sr->own[i] = sr->own[--sr->nown];
			return 1;
		}
	return 0;
}

static void on_rules_read(void *arg, bool ok, uint64_t from, const struct cluster_rule_text *e,
                          size_t n)
{
	struct crawl_cluster *g = arg;
	struct shared_rules *sr = &g->rules;
	sr->reading = 0;
	if (!ok || from != sr->next)
		return;
	for (size_t i = 0; i < n; i++) {
		uint64_t index = from + i;
		struct cluster_rule_entry d;
		char source[CLUSTER_RULE_SOURCE_MAX + 64];
		if (rules_own_take(sr, index)) {
			g->p.shared_apply(g->p.ctx, index, NULL, 0, NULL);
		} else if (cluster_rule_entry_decode(e[i].s, e[i].len, &d) != CLUSTER_OK) {
			/* not an agent's: refused as an empty text is */
			snprintf(source, sizeof source,
			         "shared rules entry %" PRIu64 " (malformed)", index);
			g->p.shared_apply(g->p.ctx, index, "", 0, source);
		} else {
			snprintf(source, sizeof source, "agent %.*s: %.*s",
			         (int)(d.origin_len < 40 ? d.origin_len : 40), d.origin,
			         (int)d.source_len, d.source);
			g->p.shared_apply(g->p.ctx, index, d.text, d.text_len, source);
		}
	}
	sr->next = from + n;
	if (n == CLUSTER_RULES_READ)
		sr->read_us = 0; /* more may follow: read again at once */
	g->p.pump(g->p.ctx);
}

/* Pushes what was steered here, and reads the entries not applied yet at
 * most every SHARED_RULES_POLL_MS (one LRANGE). */
static void rules_poll(struct crawl_cluster *g)
{
	struct shared_rules *sr = &g->rules;
	uint64_t now = monotonic_us();
	if (!g->c)
		return;
	if (!sr->known && g->p.shared_next(g->p.ctx, &sr->next) == 0)
		sr->known = 1;
	if (sr->head && !sr->pushing && now >= sr->push_after_us &&
	    cluster_rules_push(g->c, sr->head->entry, sr->head->len, on_rules_pushed, g) ==
	            CLUSTER_OK)
		sr->pushing = 1;
	if (sr->known && !sr->reading && !sr->pushing &&
	    (sr->read_us == 0 || now - sr->read_us >= SHARED_RULES_POLL_MS * 1000u) &&
	    cluster_rules_read(g->c, sr->next, on_rules_read, g) == CLUSTER_OK) {
		sr->reading = 1;
		sr->read_us = now;
	}
}

/* Rules steered here: queued for {P}:rules, as "agent NAME: SOURCE". */
static void agent_share_rules(void *impl, const char *text, size_t len, const char *source)
{
	struct crawl_cluster *g = impl;
	char src[CLUSTER_RULE_SOURCE_MAX + 1];
	snprintf(src, sizeof src, "%s", source);
	for (char *p = src; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	size_t elen;
	char *e =
	        g->c ? cluster_rule_entry_encode(cluster_name(g->c), src, text, len, &elen) : NULL;
	struct rules_out *o = e ? malloc(sizeof *o + elen) : NULL;
	if (!o) {
		fprintf(stderr, "\ncrawler crawl: %s: rules kept by this agent only (%s)\n", source,
		        e      ? "out of memory"
		        : g->c ? "too long, or out of memory"
		               : "stopping");
		free(e);
		return;
	}
	o->len = elen;
	memcpy(o->entry, e, elen);
	free(e);
	CHAIN_APPEND(g->rules.head, g->rules.tail, o);
	rules_poll(g);
}

/* ---- fetching ---- */

static int agent_ready(void *impl)
{
	struct crawl_cluster *g = impl;
	int live = cluster_is_live(g->c) && has_name(g->names, g->nnames, cluster_name(g->c));
	uint64_t now = monotonic_us();
	if (live && !g->was_live && now + g->gain_wait_us > g->hold_until_us)
		g->hold_until_us = now + g->gain_wait_us; /* (re)joined: hosts gained */
	g->was_live = live;
	return live && now >= g->hold_until_us;
}

static int agent_page_allowed(void *impl)
{
	const struct crawl_cluster *g = impl;
	return !budget_on(g) || budget_left(g) > 0;
}

/* The owner of a URL's host in the current view (without this agent when
 * it leaves), or NULL. */
static const char *owner_of(struct crawl_cluster *g, const char *url)
{
	size_t hl;
	const char *h = cluster_url_host(url, &hl);
	if (g->leave_view)
		return assign_view_owner(g->leave_view, h, hl);
	return cluster_owner(g->c, h, hl);
}

/* Sends a host's queued URLs to owner, never deduplicated (they are in
 * P:seen already). 0, or -1 when some could not be sent yet (still queued). */
static int hand_host(struct crawl_cluster *g, uint32_t host, const char *owner)
{
	int rc = 0;
	struct frontier_url fu;
	while (rc == 0 && frontier_pop(g->p.frontier, host, &fu) == FRONTIER_OK) {
		char *url = strndup(fu.url, fu.url_len);
		char *via = strndup(fu.via ? fu.via : "", fu.via ? fu.via_len : 0);
		int e = url && via ? cluster_send_raw(g->c, owner, url, via, fu.depth)
		                   : CLUSTER_ENOMEM;
		if (e == CLUSTER_OK)
			handed_add(g, url);
		if (e == CLUSTER_FULL || e == CLUSTER_ENOMEM) {
			frontier_unpop(g->p.frontier, host, fu.url, fu.url_len, fu.via, fu.via_len,
			               fu.depth);
			rc = -1;
		}
		free(url);
		free(via);
	}
	return rc;
}

static int agent_keep_host(void *impl, uint32_t host)
{
	struct crawl_cluster *g = impl;
	size_t kl;
	const char *key = frontier_host_key(g->p.frontier, host, &kl);
	const char *owner = key ? owner_of(g, key) : NULL;
	if (!owner || strcmp(owner, cluster_name(g->c)) == 0)
		return 1;
	int rc = hand_host(g, host, owner);
	struct visit_outcome o = { .kind = VISIT_NONE };
	politeness_release(g->p.pol, host, &o, monotonic_us());
	return rc;
}

/* ---- the exchange ---- */

static int rest_append(struct crawl_cluster *g, const char *s, size_t len)
{
	char *nb = array_room(g->rest, &g->rest_cap, g->rest_len + len, 65536);
	if (!nb)
		return -1;
	g->rest = nb;
	memcpy(g->rest + g->rest_len, s, len);
	g->rest_len += len;
	return 0;
}

/* One line "URL \t VIA \t DEPTH" (its newline cut) to its owner: an
 * outbox line deduplicated, an inbound one raw (its URL is in P:seen
 * already; with no owner known, dropped). 0 sent or dropped (malformed),
 * -1 to try again later. */
static int send_line(struct crawl_cluster *g, char *line, int raw)
{
	char *via = strchr(line, '\t');
	char *depth = via ? strchr(via + 1, '\t') : NULL;
	if (!depth)
		return 0;
	*via = *depth = '\0';
	const char *owner = owner_of(g, line);
	unsigned word = (unsigned)strtoul(depth + 1, NULL, 10);
	int e = !owner ? (raw ? CLUSTER_OK : CLUSTER_EDOWN)
	        : raw  ? cluster_send_raw(g->c, owner, line, via + 1, word)
	               : cluster_send(g->c, owner, line, via + 1, word);
	*via = *depth = '\t';
	return e == CLUSTER_FULL || e == CLUSTER_ENOMEM || e == CLUSTER_EDOWN ? -1 : 0;
}

/* The outbox's lines (the caller frees them), or NULL if empty; *len
 * their length. */
static char *outbox_take(struct crawl_cluster *g, size_t *len)
{
	pthread_mutex_lock(&g->out_mu);
	char *buf = g->out_len ? g->out_buf : NULL;
	*len = g->out_len;
	if (buf) {
		g->out_buf = NULL;
		g->out_len = g->out_cap = 0;
	}
	pthread_mutex_unlock(&g->out_mu);
	return buf;
}

static size_t outbox_len(struct crawl_cluster *g)
{
	pthread_mutex_lock(&g->out_mu);
	size_t n = g->out_len;
	pthread_mutex_unlock(&g->out_mu);
	return n;
}

static void send_outbox(struct crawl_cluster *g)
{
	size_t len;
	char *buf = outbox_take(g, &len);
	if (buf) {
		if (rest_append(g, buf, len) != 0)
			fprintf(stderr, "\ncrawler crawl: out of memory: %zu bytes of links lost\n",
			        len);
		free(buf);
	}
	size_t off = 0;
	while (off < g->rest_len && cluster_view(g->c)) {
		char *line = g->rest + off;
		char *nl = memchr(line, '\n', g->rest_len - off);
		if (!nl)
			break;
		*nl = '\0';
		int rc = send_line(g, line, 0);
		*nl = '\n';
		if (rc != 0)
			break;
		off = (size_t)(nl - g->rest) + 1;
	}
	if (off) {
		memmove(g->rest, g->rest + off, g->rest_len - off);
		g->rest_len -= off;
	}
}

static void feed_inbound(struct crawl_cluster *g)
{
	if (g->leave != LEAVE_NONE)
		return; /* handed to the owners instead (hand_inbound) */
	while (g->in_head && sieve_path_inbound_room(g->p.sp)) {
		struct inbound *in = g->in_head;
		if (sieve_path_feed_lines(g->p.sp, in->lines, in->len) != 0)
			return;
		g->in_head = in->next;
		if (!g->in_head)
			g->in_tail = NULL;
		free(in);
	}
}

static void agent_pump(void *impl)
{
	struct crawl_cluster *g = impl;
	send_outbox(g);
	feed_inbound(g);
	budget_ask(g, 0);
	deadline_ask(g);
	rules_poll(g);
}

/* ---- the end ---- */

static int agent_done(void *impl, int dry)
{
	struct crawl_cluster *g = impl;
	int idle = dry && !g->in_head && g->rest_len == 0 && outbox_len(g) == 0 &&
	           cluster_unsent(g->c) == 0 && cluster_is_live(g->c);
	if (idle && cluster_unacked(g->c) > 0)
		cluster_ack(g->c); /* after every XADD of what these URLs led to */
	if (idle && cluster_unacked(g->c) == 0)
		set_idle(g, 1);
	/* nothing to fetch here, and nothing more to reserve for it */
	if (idle && budget_on(g) && g->budget.spent)
		g->ended = 1;
	return g->ended;
}

static void on_census(void *arg, bool ok, const struct cluster_census *s)
{
	struct crawl_cluster *g = arg;
	g->census_busy = 0;
	if (!ok)
		return;
	g->census = *s;
	if (s->busy == 0 && g->idle_published && cluster_is_live(g->c))
		g->end_streak++;
	else
		g->end_streak = 0;
	if (g->end_streak >= END_STREAK && !g->ended) {
		g->ended = 1;
		g->p.pump(g->p.ctx);
	}
}

static void agent_tick(void *impl, const struct crawl_stats_pages *pages)
{
	struct crawl_cluster *g = impl;
	cluster_publish_stats(g->c, pages->done, pages->requests, pages->bytes);
	if (!g->census_busy && cluster_census(g->c, on_census, g) == CLUSTER_OK)
		g->census_busy = 1;
	budget_tick(g);
	rules_poll(g);
}

static int agent_progress(void *impl, char *buf, size_t cap)
{
	const struct crawl_cluster *g = impl;
	snprintf(buf, cap, "cluster %s: %" PRIu64 " agents, %" PRIu64 " pages%s",
	         cluster_name(g->c), g->census.alive, g->census.pages,
	         cluster_is_live(g->c) ? "" : " (not live)");
	return 1;
}

/* ---- a graceful stop ---- */

/* The view without this agent; -1 when no other agent is live (nobody to
 * hand over to: the stop is then like a crash). */
static int leave_view_make(struct crawl_cluster *g)
{
	size_t n, k = 0;
	const char *const *live = cluster_live_names(g->c, &n);
	const char **others = calloc(n + 1, sizeof *others);
	for (size_t i = 0; others && i < n; i++)
		if (strcmp(live[i], cluster_name(g->c)) != 0)
			others[k++] = live[i];
	int rc = k && cluster_is_live(g->c) &&
	                         assign_view_create(assign_view_method(cluster_view(g->c)), others,
	                                            k, &g->leave_view) == ASSIGN_OK
	                 ? 0
	                 : -1;
	free(others);
	return rc;
}

/* Inbox entries not fed to the sieve go straight to their owners: 0 once
 * all went, -1 when some wait for room (kept, in order). */
static int hand_inbound(struct crawl_cluster *g)
{
	while (g->in_head) {
		struct inbound *in = g->in_head;
		size_t off = 0;
		while (off < in->len) {
			char *line = in->lines + off;
			char *nl = memchr(line, '\n', in->len - off);
			if (!nl)
				break;
			*nl = '\0';
			int rc = send_line(g, line, 1);
			*nl = '\n';
			if (rc != 0) {
				memmove(in->lines, line, in->len - off);
				in->len -= off;
				in->lines[in->len] = '\0';
				return -1;
			}
			off = (size_t)(nl - in->lines) + 1;
		}
		g->in_head = in->next;
		free(in);
	}
	g->in_tail = NULL;
	return 0;
}

/* Every queued host to its owner without us: 0 once all went. */
static int hand_all_hosts(struct crawl_cluster *g)
{
	uint32_t n = frontier_host_count(g->p.frontier);
	for (uint32_t h = 0; h < n; h++) {
		size_t kl;
		const char *key = frontier_host_key(g->p.frontier, h, &kl);
		const char *owner =
		        key && frontier_host_queued(g->p.frontier, h) ? owner_of(g, key) : NULL;
		if (owner && hand_host(g, h, owner) != 0)
			return -1;
	}
	return 0;
}

static void on_left(void *arg)
{
	struct crawl_cluster *g = arg;
	g->leave = LEAVE_DONE;
	g->p.pump(g->p.ctx);
}

static int agent_leave(void *impl, int loop_idle)
{
	struct crawl_cluster *g = impl;
	switch (g->leave) {
	case LEAVE_NONE:
		if (!loop_idle)
			return 0;
		if (leave_view_make(g) != 0)
			return 1;
		cluster_stop_reading(g->c);
		g->leave = LEAVE_FLUSH;
		g->leave_start_us = monotonic_us();
		(void)hand_inbound(g); /* what must wait goes in LEAVE_SEND */
		if (sieve_path_push_flush(g->p.sp, &g->leave_seq) != 0)
			g->leave_seq = 0; /* asked again below */
		return 0;
	case LEAVE_FLUSH:
		if (!g->leave_seq && sieve_path_push_flush(g->p.sp, &g->leave_seq) != 0)
			return 0;
		if (!sieve_path_flushed(g->p.sp, g->leave_seq) || !sieve_path_drain(g->p.sp, 1))
			return 0;
		g->leave = LEAVE_SEND;
		/* fall through */
	case LEAVE_SEND:
		send_outbox(g);
		if (hand_inbound(g) != 0 || hand_all_hosts(g) != 0 || g->rest_len)
			return 0;
		cluster_flush(g->c);
		g->leave = LEAVE_ACK;
		return 0;
	case LEAVE_ACK:
		if (g->in_head) {
			g->leave = LEAVE_SEND; /* entries read before the stop, delivered since */
			return 0;
		}
		if (cluster_unsent(g->c) > 0 || g->budget.asking || g->rules.head)
			return 0;
		/* before the lease's deletion: the others may use them */
		cluster_budget_give_back(g->c, budget_left(g));
		g->budget.quota -= budget_left(g);
		cluster_ack(g->c);
		if (cluster_leave(g->c, on_left, g) == CLUSTER_OK)
			g->leave = LEAVE_WAIT;
		return 0;
	case LEAVE_WAIT: return 0;
	case LEAVE_DONE: return 1;
	}
	return 1;
}

static int agent_leaving(void *impl)
{
	const struct crawl_cluster *g = impl;
	return g->leave != LEAVE_NONE && g->leave != LEAVE_DONE &&
	       monotonic_us() - g->leave_start_us < CRAWL_CLUSTER_LEAVE_MS * 1000ull;
}

/* ---- per-IP leases ---- */

static int ip_lease(void *ctx, const char *key, unsigned ttl_ms, visit_lease_done_fn *done,
                    void *arg)
{
	struct crawl_cluster *g = ctx; /* its Redis layer gone (teardown): refused */
	return g->c && cluster_ip_lease(g->c, key, ttl_ms, done, arg) == CLUSTER_OK ? 0 : -1;
}

static void ip_release(void *ctx, const char *key, unsigned ttl_ms)
{
	struct crawl_cluster *g = ctx;
	if (g->c)
		cluster_ip_release(g->c, key, ttl_ms);
}

static void agent_leases(void *impl, struct visit_lease_hooks *out)
{
	*out = (struct visit_lease_hooks){ .ctx = impl,
		                           .acquire = ip_lease,
		                           .release = ip_release };
}

/* ---- where found URLs go: the outbox ---- */

/* A link batch of the outbox's (crawl_source.h): one key at a time, each
 * appended as a line at once (under the outbox's mutex). */
struct outbox_batch {
	struct link_batch base;
	struct crawl_cluster *g;
	size_t cap;
	char key[];
};

static char *outbox_slot(struct link_batch *lb, size_t *room)
{
	struct outbox_batch *b = (struct outbox_batch *)(void *)lb;
	*room = b->cap;
	return b->key;
}

static void outbox_add(struct link_batch *lb, size_t klen, uint32_t depth,
                       struct link_meta_via *via)
{
	struct outbox_batch *b = (struct outbox_batch *)(void *)lb;
	struct crawl_cluster *g = b->g;
	size_t vlen = 0;
	const char *v = via ? link_meta_via_str(via, &vlen) : "";
	pthread_mutex_lock(&g->out_mu);
	char *nb = array_room(g->out_buf, &g->out_cap, g->out_len + klen + vlen + 16, 65536);
	if (!nb) {
		pthread_mutex_unlock(&g->out_mu);
		atomic_fetch_add(&g->links_dropped, 1);
		return;
	}
	g->out_buf = nb;
	g->out_len += (size_t)snprintf(g->out_buf + g->out_len, g->out_cap - g->out_len,
	                               "%.*s\t%.*s\t%" PRIu32 "\n", (int)klen, b->key, (int)vlen, v,
	                               depth);
	pthread_mutex_unlock(&g->out_mu);
}

/* The loop sends what the outbox holds at its next pump. */
static void outbox_flush(struct link_batch *lb)
{
	struct outbox_batch *b = (struct outbox_batch *)(void *)lb;
	b->g->p.wake(b->g->p.ctx);
}

static void outbox_destroy(struct link_batch *lb)
{
	free(lb);
}

static const struct link_batch_ops outbox_batch_ops = {
	.slot = outbox_slot, .add = outbox_add, .flush = outbox_flush, .destroy = outbox_destroy
};

static struct link_batch *agent_batch(void *impl)
{
	struct crawl_cluster *g = impl;
	size_t cap = (size_t)g->max_url_len + 1;
	struct outbox_batch *b = malloc(sizeof *b + cap);
	if (!b)
		return NULL;
	b->base.ops = &outbox_batch_ops;
	b->g = g;
	b->cap = cap;
	return &b->base;
}

static void agent_stats(void *impl, struct crawl_source_stats *out)
{
	struct crawl_cluster *g = impl;
	out->links_dropped = atomic_load(&g->links_dropped);
	out->inbox_rejected =
	        g->inbox_rejected + (g->c ? cluster_lines_malformed(g->c) : g->malformed_before);
}

const struct crawl_source_ops crawl_cluster_ops = {
	.open = agent_open,
	.stop = agent_stop,
	.close = agent_close,
	.ready = agent_ready,
	.page_allowed = agent_page_allowed,
	.budget_over = agent_budget_over,
	.keep_host = agent_keep_host,
	.pump = agent_pump,
	.done = agent_done,
	.leave = agent_leave,
	.leaving = agent_leaving,
	.time_up = agent_time_up,
	.tick = agent_tick,
	.progress = agent_progress,
	.leases = agent_leases,
	.batch_create = agent_batch,
	.stats = agent_stats,
	.share_rules = agent_share_rules,
};
