/*
 * cluster.c: the agent's life (router, timers), membership (config,
 * incarnation, lease, fencing), the view, stats and the census. See
 * cluster.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/cluster_int.h"
#include "frontier/base/array.h"
#include "frontier/base/clock.h"

#define CLUSTER_HANDLES 4

const char *cluster_strerror(int err)
{
	switch (err) {
	case CLUSTER_OK: return "success";
	case CLUSTER_ENOMEM: return "out of memory";
	case CLUSTER_EINVAL: return "invalid argument";
	case CLUSTER_ECONFIG: return "the crawl exists with another assignment method";
	case CLUSTER_EREDIS: return "Redis answered with an error";
	case CLUSTER_FULL: return "too many URLs waiting to be sent";
	case CLUSTER_EDOWN: return "not connected to Redis";
	case CLUSTER_EUV: return "libuv call failed";
	default: return "unknown cluster error";
	}
}

int cluster_url_parse(const char *url, char *host, size_t hostsz, int *port, char *prefix)
{
	static const char scheme[] = "redis://";
	if (url == NULL || strncmp(url, scheme, sizeof scheme - 1) != 0)
		return CLUSTER_EINVAL;
	const char *h = url + sizeof scheme - 1;
	const char *colon = strchr(h, ':');
	if (colon == NULL || colon == h || (size_t)(colon - h) >= hostsz)
		return CLUSTER_EINVAL;
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || p <= 0 || p > 65535 || (*end != '\0' && *end != '/'))
		return CLUSTER_EINVAL;
	const char *pre = *end == '/' && end[1] != '\0' ? end + 1 : "crawl";
	if (strlen(pre) > CLUSTER_PREFIX_MAX)
		return CLUSTER_EINVAL;
	for (const char *s = pre; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f || *s == '{' || *s == '}')
			return CLUSTER_EINVAL;
	memcpy(host, h, (size_t)(colon - h));
	host[colon - h] = '\0';
	*port = (int)p;
	snprintf(prefix, CLUSTER_PREFIX_MAX + 1, "%s", pre);
	return CLUSTER_OK;
}

/* ---- helpers shared by the layer's files ---- */

int cl_eval(struct cluster *c, enum cl_script_id id, unsigned slot, unsigned flags,
            router_reply_fn *fn, void *priv, int argc, const char **argv)
{
	size_t argl[16];
	if (argc > 16 || c->destroying)
		return ROUTER_EINVAL;
	for (int i = 0; i < argc; i++)
		argl[i] = strlen(argv[i]);
	return router_eval(c->rt, cl_script(id), slot, flags, fn, priv, argc, argv, argl);
}

int cl_eval_copy(struct cluster *c, enum cl_script_id id, unsigned slot, unsigned flags,
                 router_reply_fn *fn, const void *req, size_t size, int argc, const char **argv)
{
	void *q = malloc(size);
	if (q == NULL)
		return CLUSTER_ENOMEM;
	memcpy(q, req, size);
	if (cl_eval(c, id, slot, flags, fn, q, argc, argv) != ROUTER_OK) {
		free(q);
		return CLUSTER_EDOWN;
	}
	return CLUSTER_OK;
}

unsigned cl_key(const struct cluster *c, const char *kind, const char *what, const char *suffix,
                char *key)
{
	int n = snprintf(key, CL_KEY_MAX, "{%s:%s:%s}%s", c->prefix, kind, what, suffix);
	return router_key_slot(key, n < CL_KEY_MAX ? (size_t)n : CL_KEY_MAX - 1);
}

bool cl_crawl_up(const struct cluster *c)
{
	return !c->destroying && router_up(c->rt, c->crawl_slot);
}

/* Redis refused a command: worth a line, since it means a bug or a server
 * not ready yet; the command is retried. */
void cl_fail(struct cluster *c, const char *what, const redisReply *r)
{
	if (r != NULL && r->type == REDIS_REPLY_ERROR)
		fprintf(stderr, "cluster %s: %s: %s\n", c->name, what, r->str);
}

bool cl_reply_ints(const redisReply *r, size_t n, long long min)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < min)
			return false;
	return true;
}

static bool reply_is_str(const redisReply *r, const char *s)
{
	return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
	       r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

static bool reply_is_int(const redisReply *r, long long v)
{
	return r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == v;
}

static void free_names(char **names, size_t n)
{
	ARRAY_FREE_EACH(names, n);
}

/* ---- membership ---- */

static void fence_timer_cb(uv_timer_t *t)
{
	struct cluster *c = t->data;
	if (c->state != CL_LIVE)
		return;
	c->state = CL_JOIN_INCR;
	cl_exchange_on_fence(c);
	if (c->cb.on_fenced)
		c->cb.on_fenced(c, c->cb.arg);
}

/* Counts the lease from when its renewal was sent, and arms the fence. */
static void lease_renewed(struct cluster *c)
{
	c->renew_ok_ms = c->renew_sent_ms;
	uint64_t deadline = c->renew_ok_ms + c->lease_ms - c->lease_ms / 4;
	uint64_t now = monotonic_ms();
	uv_timer_start(&c->fence, fence_timer_cb, deadline > now ? deadline - now : 0, 0);
}

static void fence_now(struct cluster *c)
{
	uv_timer_stop(&c->fence);
	fence_timer_cb(&c->fence);
}

static void member_step(struct cluster *c);
static void view_poll(struct cluster *c);

static void on_member_reply(void *priv, const redisReply *r)
{
	struct cluster *c = priv;
	c->member_busy = false;
	if (c->destroying || r == NULL)
		return;
	if (r->type == REDIS_REPLY_ERROR) {
		cl_fail(c, "membership", r);
		return;
	}
	switch (c->state) {
	case CL_JOIN_CONFIG:
		if (r->type == REDIS_REPLY_NIL || reply_is_str(r, assign_method_name(c->method))) {
			c->state = CL_JOIN_INCR;
		} else {
			c->state = CL_REFUSED;
			if (c->cb.on_error)
				c->cb.on_error(c, CLUSTER_ECONFIG, c->cb.arg);
		}
		break;
	case CL_JOIN_INCR:
		if (r->type == REDIS_REPLY_INTEGER) {
			c->inc = (uint64_t)r->integer;
			snprintf(c->consumer, sizeof c->consumer, "%llu",
			         (unsigned long long)c->inc);
			c->state = CL_JOIN_LEASE;
		}
		break;
	case CL_JOIN_LEASE:
		if (reply_is_int(r, 1)) {
			lease_renewed(c);
			c->state = CL_LIVE;
			c->view_ver = -1; /* read the view whole */
			cl_exchange_on_join(c);
		}
		break;
	case CL_LIVE:
		if (reply_is_int(r, 1))
			lease_renewed(c);
		else
			fence_now(c); /* lapsed, or taken by another incarnation */
		break;
	case CL_REFUSED: break;
	}
	if (c->state == CL_JOIN_INCR || c->state == CL_JOIN_LEASE)
		member_step(c); /* joining goes on at once; a running lease waits a tick */
	if (c->state == CL_LIVE && !c->view_busy)
		view_poll(c);
}

/* One membership step: the command of the current state, if none is in flight. */
static void member_step(struct cluster *c)
{
	if (c->member_busy || c->state == CL_REFUSED || c->destroying)
		return;
	char key[CL_KEY_MAX], ttl[24];
	snprintf(ttl, sizeof ttl, "%u", c->lease_ms);
	const char *args[6] = { "1", c->crawl_key, c->base, c->name, c->consumer, ttl };
	int rc = ROUTER_EDOWN;
	c->renew_sent_ms = monotonic_ms();
	switch (c->state) {
	case CL_JOIN_CONFIG:
		snprintf(key, sizeof key, "%s:config", c->base);
		rc = router_sendf(c->rt, c->crawl_slot, 0, on_member_reply, c, "SET %s %s NX GET",
		                  key, assign_method_name(c->method));
		break;
	case CL_JOIN_INCR:
		snprintf(key, sizeof key, "%s:incarnation", c->base);
		rc = router_sendf(c->rt, c->crawl_slot, ROUTER_DURABLE, on_member_reply, c,
		                  "INCR %s", key);
		break;
	case CL_JOIN_LEASE:
		rc = cl_eval(c, CL_S_JOIN, c->crawl_slot, 0, on_member_reply, c, 6, args);
		break;
	case CL_LIVE:
		rc = cl_eval(c, CL_S_RENEW, c->crawl_slot, 0, on_member_reply, c, 6, args);
		break;
	case CL_REFUSED: break;
	}
	c->member_busy = rc == ROUTER_OK;
}

static bool names_equal(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/* Installs the live and dead names read (taking them); on_view if the live set changed. */
static void view_install(struct cluster *c, char **live, size_t nlive, char **dead, size_t ndead)
{
	qsort(live, nlive, sizeof *live, array_strcmp);
	qsort(dead, ndead, sizeof *dead, array_strcmp);
	free_names(c->dead, c->ndead);
	c->dead = dead;
	c->ndead = ndead;
	if (c->view != NULL && names_equal(live, nlive, c->live, c->nlive)) {
		free_names(live, nlive);
		return;
	}
	struct assign_view *v;
	if (assign_view_create(c->method, (const char *const *)live, nlive, &v) != ASSIGN_OK) {
		free_names(live, nlive);
		c->view_ver = -1; /* read it whole again */
		return;
	}
	assign_view_destroy(c->view);
	free_names(c->live, c->nlive);
	c->view = v;
	c->live = live;
	c->nlive = nlive;
	if (c->cb.on_view)
		c->cb.on_view(c, c->cb.arg);
}

/* {ver, now} or {ver, now, #live, live..., dead...} (CL_S_VIEW). */
static void on_view_reply(void *priv, const redisReply *r)
{
	struct cluster *c = priv;
	c->view_busy = false;
	if (c->destroying || r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER ||
	    r->element[1]->type != REDIS_REPLY_INTEGER) {
		cl_fail(c, "view", r);
		return;
	}
	c->view_ver = r->element[0]->integer;
	c->view_now = r->element[1]->integer;
	if (r->elements == 2 || r->element[2]->type != REDIS_REPLY_INTEGER)
		return;
	size_t n = r->elements - 3, nlive = (size_t)r->element[2]->integer;
	char **live = calloc(n + 1, sizeof *live), **dead = calloc(n + 1, sizeof *dead);
	size_t k = 0;
	bool ok = live != NULL && dead != NULL && nlive <= n;
	for (size_t i = 0; ok && i < n; i++, k++) {
		const redisReply *e = r->element[3 + i];
		char *name = e->type == REDIS_REPLY_STRING ? strndup(e->str, e->len) : NULL;
		ok = name != NULL;
		if (i < nlive)
			live[i] = name;
		else
			dead[i - nlive] = name;
	}
	if (!ok) {
		free_names(live, k < nlive ? k : nlive);
		free_names(dead, k > nlive ? k - nlive : 0);
		c->view_ver = -1;
		return;
	}
	view_install(c, live, nlive, dead, n - nlive);
}

static void view_poll(struct cluster *c)
{
	if (c->view_busy || c->state == CL_REFUSED || c->state == CL_JOIN_CONFIG)
		return;
	char ver[24], now[24];
	snprintf(ver, sizeof ver, "%lld", c->view_ver);
	snprintf(now, sizeof now, "%lld", c->view_now);
	const char *args[5] = { "1", c->crawl_key, c->base, ver, now };
	c->view_busy =
	        cl_eval(c, CL_S_VIEW, c->crawl_slot, 0, on_view_reply, c, 5, args) == ROUTER_OK;
}

static void tick_cb(uv_timer_t *t)
{
	struct cluster *c = t->data;
	member_step(c);
	view_poll(c);
	cl_exchange_tick(c);
	cl_drain_dead(c);
}

/* ---- life ---- */

static void on_handle_closed(uv_handle_t *h)
{
	struct cluster *c = h->data;
	if (--c->open_handles > 0)
		return;
	cl_exchange_free(c);
	assign_view_destroy(c->view);
	free_names(c->live, c->nlive);
	free_names(c->dead, c->ndead);
	free(c->sent);
	free(c);
}

static int copy_options(struct cluster *c, const struct cluster_options *opt, char *host, int *port)
{
	if (opt->name == NULL || strlen(opt->name) > ASSIGN_NAME_MAX || opt->lease_ms < 30 ||
	    cluster_url_parse(opt->url, host, 256, port, c->prefix) != 0)
		return CLUSTER_EINVAL;
	struct assign_view *probe;
	const char *names[1] = { opt->name };
	if (assign_view_create(opt->method, names, 1, &probe) != ASSIGN_OK)
		return CLUSTER_EINVAL;
	assign_view_destroy(probe);
	size_t cache = opt->sent_cache ? opt->sent_cache : (size_t)1 << 18;
	if ((cache & (cache - 1)) != 0)
		return CLUSTER_EINVAL;
	snprintf(c->name, sizeof c->name, "%s", opt->name);
	c->method = opt->method;
	c->lease_ms = opt->lease_ms;
	c->flush_delay_ms = opt->flush_delay_ms ? opt->flush_delay_ms : 50;
	c->poll_ms = opt->poll_ms ? opt->poll_ms : 20;
	c->ip_patience_ms = opt->ip_patience_ms ? opt->ip_patience_ms : 1000;
	c->max_unsent = opt->max_unsent ? opt->max_unsent : 100000;
	c->max_unacked = opt->max_unacked ? opt->max_unacked : 10000;
	c->dedup = opt->dedup;
	c->sent = calloc(cache, sizeof *c->sent);
	c->sent_mask = cache - 1;
	snprintf(c->base, sizeof c->base, "{%s}", c->prefix);
	snprintf(c->crawl_key, sizeof c->crawl_key, "%s:ver", c->base);
	c->crawl_slot = router_key_slot(c->base, strlen(c->base));
	c->inbox_slot = cl_key(c, "a", c->name, ":inbox", c->inbox);
	c->view_ver = -1;
	return c->sent != NULL ? CLUSTER_OK : CLUSTER_ENOMEM;
}

int cluster_create(uv_loop_t *loop, const struct cluster_options *opt,
                   const struct cluster_callbacks *cb, struct cluster **out)
{
	*out = NULL;
	struct cluster *c = calloc(1, sizeof *c);
	if (c == NULL)
		return CLUSTER_ENOMEM;
	char host[256];
	int port;
	int rc = copy_options(c, opt, host, &port);
	struct router_options ro = { .host = host,
		                     .port = port,
		                     .batch_ms = opt->batch_ms ? opt->batch_ms : 5,
		                     .stuck_ms = c->lease_ms };
	if (rc == CLUSTER_OK)
		rc = router_create(loop, &ro, &c->rt) == ROUTER_OK ? CLUSTER_OK : CLUSTER_ENOMEM;
	if (rc != CLUSTER_OK) {
		free(c->sent);
		free(c);
		return rc;
	}
	c->loop = loop;
	c->cb = *cb;
	c->state = CL_JOIN_CONFIG;
	uv_timer_t *timers[CLUSTER_HANDLES] = { &c->tick, &c->fence, &c->flush, &c->read };
	for (int i = 0; i < CLUSTER_HANDLES; i++) {
		uv_timer_init(loop, timers[i]); /* cannot fail for a timer */
		timers[i]->data = c;
	}
	c->open_handles = CLUSTER_HANDLES;
	if (uv_timer_start(&c->tick, tick_cb, 0, c->lease_ms / 3) != 0) {
		cluster_destroy(c);
		return CLUSTER_EUV;
	}
	*out = c;
	return CLUSTER_OK;
}

void cluster_destroy(struct cluster *c)
{
	if (c == NULL || c->destroying)
		return;
	c->destroying = true;
	router_destroy(c->rt); /* runs the pending callbacks with no reply */
	c->rt = NULL;
	uv_timer_t *timers[CLUSTER_HANDLES] = { &c->tick, &c->fence, &c->flush, &c->read };
	for (int i = 0; i < CLUSTER_HANDLES; i++)
		uv_close((uv_handle_t *)timers[i], on_handle_closed);
}

uint64_t cluster_lines_malformed(const struct cluster *c)
{
	return c->lines_malformed;
}

const char *cluster_name(const struct cluster *c)
{
	return c->name;
}

uint64_t cluster_incarnation(const struct cluster *c)
{
	return c->inc;
}

bool cluster_is_live(const struct cluster *c)
{
	return c->state == CL_LIVE;
}

size_t cluster_view_size(const struct cluster *c)
{
	return c->nlive;
}

const struct assign_view *cluster_view(const struct cluster *c)
{
	return c->view;
}

const char *cluster_owner(const struct cluster *c, const char *host, size_t len)
{
	return c->view ? assign_view_owner(c->view, host, len) : NULL;
}

const char *const *cluster_live_names(const struct cluster *c, size_t *n)
{
	*n = c->nlive;
	return (const char *const *)c->live;
}

void cluster_stats(const struct cluster *c, struct cluster_stats *out)
{
	*out = c->st;
	struct router_stats rs = { 0 };
	if (c->rt != NULL)
		router_stats(c->rt, &rs);
	out->moved = rs.moved;
	out->asked = rs.asked;
	out->retried = rs.retried;
	out->refreshes = rs.refreshes;
	out->dropped = rs.dropped;
	out->waits = rs.waits;
	out->wait_timeouts = rs.wait_timeouts;
	out->unreplicated = rs.unreplicated;
	out->nodes = rs.nodes;
	out->cluster = rs.cluster;
}

/* ---- stats ---- */

void cluster_publish_stats(struct cluster *c, uint64_t pages, uint64_t requests, uint64_t bytes)
{
	char p[24], q[24], b[24];
	snprintf(p, sizeof p, "%llu", (unsigned long long)pages);
	snprintf(q, sizeof q, "%llu", (unsigned long long)requests);
	snprintf(b, sizeof b, "%llu", (unsigned long long)bytes);
	const char *args[7] = { "1", c->crawl_key, c->base, c->name, p, q, b };
	cl_eval(c, CL_S_STATS, c->crawl_slot, 0, NULL, NULL, 7, args);
}

void cluster_publish_idle(struct cluster *c, bool idle)
{
	const char *args[5] = { "1", c->crawl_key, c->base, c->name, idle ? "1" : "0" };
	cl_eval(c, CL_S_IDLE, c->crawl_slot, 0, NULL, NULL, 5, args);
}

/* ---- the census ---- */

struct census_req {
	struct cluster *c;
	void (*done)(void *arg, bool ok, const struct cluster_census *s);
	void *arg;
	struct cluster_census s;
	long long epoch;
	uint64_t agents_busy, inboxes_busy;
	size_t waiting; /* inbox reads not answered */
	bool failed;    /* one was not answered */
};

static void census_end(struct census_req *q, bool ok)
{
	if (!q->c->destroying)
		q->done(q->arg, ok, &q->s);
	free(q);
}

static void on_census_stored(void *priv, const redisReply *r)
{
	struct census_req *q = priv;
	/* not kept (the epoch moved during the scan): still busy */
	uint64_t inboxes = reply_is_int(r, 1) || q->inboxes_busy > 0 ? q->inboxes_busy : 1;
	q->s.busy = q->agents_busy + inboxes;
	census_end(q, true);
}

/* Every inbox read answered: the count is kept if the epoch stood still. */
static void census_scanned(struct census_req *q)
{
	char epoch[24], busy[24];
	snprintf(epoch, sizeof epoch, "%lld", q->epoch);
	snprintf(busy, sizeof busy, "%llu", (unsigned long long)q->inboxes_busy);
	const char *args[5] = { "1", q->c->crawl_key, q->c->base, epoch, busy };
	if (q->failed || q->c->destroying ||
	    cl_eval(q->c, CL_S_CENSUS_STORE, q->c->crawl_slot, 0, on_census_stored, q, 5, args) !=
	            ROUTER_OK) {
		q->s.busy = q->agents_busy + q->inboxes_busy + 1;
		census_end(q, !q->failed && !q->c->destroying);
	}
}

static void on_inbox_busy(void *priv, const redisReply *r)
{
	struct census_req *q = priv;
	if (r != NULL && r->type == REDIS_REPLY_INTEGER)
		q->inboxes_busy += r->integer != 0;
	else
		q->failed = true;
	if (--q->waiting == 0)
		census_scanned(q);
}

/* The leader reads every inbox (the live and the dead agents'). */
static void census_scan(struct census_req *q)
{
	struct cluster *c = q->c;
	for (size_t i = 0; i < c->nlive + c->ndead; i++) {
		const char *name = i < c->nlive ? c->live[i] : c->dead[i - c->nlive];
		char key[CL_KEY_MAX];
		unsigned slot = cl_key(c, "a", name, ":inbox", key);
		const char *args[2] = { "1", key };
		if (cl_eval(c, CL_S_INBOX_BUSY, slot, 0, on_inbox_busy, q, 2, args) == ROUTER_OK)
			q->waiting++;
		else
			q->failed = true;
	}
	if (q->waiting == 0)
		census_scanned(q);
}

/* {agents busy, inboxes busy or -1, pages, alive, epoch} (CL_S_CENSUS). */
static void on_census(void *priv, const redisReply *r)
{
	struct census_req *q = priv;
	struct cluster *c = q->c;
	if (c->destroying || !cl_reply_ints(r, 5, -1)) {
		cl_fail(c, "census", r);
		census_end(q, false);
		return;
	}
	q->agents_busy = (uint64_t)(r->element[0]->integer > 0 ? r->element[0]->integer : 0);
	long long inboxes = r->element[1]->integer;
	q->s.pages = (uint64_t)(r->element[2]->integer > 0 ? r->element[2]->integer : 0);
	q->s.alive = (uint64_t)r->element[3]->integer;
	q->epoch = r->element[4]->integer;
	bool leader = c->nlive > 0 && strcmp(c->live[0], c->name) == 0 && c->state == CL_LIVE;
	if (leader) {
		census_scan(q);
		return;
	}
	q->s.busy = q->agents_busy + (inboxes >= 0 ? (uint64_t)inboxes : 1);
	census_end(q, true);
}

int cluster_census(struct cluster *c,
                   void (*done)(void *arg, bool ok, const struct cluster_census *s), void *arg)
{
	if (!cl_crawl_up(c))
		return CLUSTER_EDOWN;
	const struct census_req q = { .c = c, .done = done, .arg = arg };
	const char *args[3] = { "1", c->crawl_key, c->base };
	return cl_eval_copy(c, CL_S_CENSUS, c->crawl_slot, 0, on_census, &q, sizeof q, 3, args);
}

/* ---- leaving ---- */

struct leave_req {
	struct cluster *c;
	void (*done)(void *arg);
	void *arg;
};

static void on_left(void *priv, const redisReply *r)
{
	struct leave_req *q = priv;
	(void)r;
	if (!q->c->destroying)
		q->done(q->arg);
	free(q);
}

int cluster_leave(struct cluster *c, void (*done)(void *arg), void *arg)
{
	if (!cl_crawl_up(c) || c->state != CL_LIVE)
		return CLUSTER_EDOWN;
	const struct leave_req q = { c, done, arg };
	const char *args[5] = { "1", c->crawl_key, c->base, c->name, c->consumer };
	int rc = cl_eval_copy(c, CL_S_LEAVE, c->crawl_slot, 0, on_left, &q, sizeof q, 5, args);
	if (rc != CLUSTER_OK)
		return rc;
	c->state = CL_REFUSED;
	uv_timer_stop(&c->fence);
	cluster_stop_reading(c);
	return CLUSTER_OK;
}
