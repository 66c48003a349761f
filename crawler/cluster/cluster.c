/*
 * cluster.c: the connection to Redis, membership (config, incarnation,
 * lease, fencing), the view, stats and per-IP leases. See cluster.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libuv.h>

#include "crawler/cluster/cluster_int.h"
#include "frontier/base/clock.h"
#include "frontier/base/array.h"

#define CLUSTER_HANDLES 4
/* A connection attempt pending this long is abandoned. */
#define CLUSTER_CONNECT_MS 1000

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
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return CLUSTER_EINVAL;
	memcpy(host, h, (size_t)(colon - h));
	host[colon - h] = '\0';
	*port = (int)p;
	snprintf(prefix, CLUSTER_PREFIX_MAX + 1, "%s", pre);
	return CLUSTER_OK;
}

redisAsyncContext *cl_conn(struct cluster *c)
{
	return c->destroying ? NULL : c->ac;
}

/* Redis refused a command: worth a line, since it means a bug or a server
 * not ready yet (LOADING after a restart); the command is retried. */
void cl_fail(struct cluster *c, const char *what, const redisReply *r)
{
	if (r != NULL && r->type == REDIS_REPLY_ERROR)
		fprintf(stderr, "cluster %s: %s: %s\n", c->name, what, r->str);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct cluster *c = ac->data;
	(void)status;
	if (c->ac == ac) {
		c->ac = NULL;
		c->connected = false;
	}
}

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct cluster *c = ac->data;
	if (status != REDIS_OK) {
		if (c->ac == ac)
			c->ac = NULL; /* hiredis frees it */
		return;
	}
	if (c->ac == ac)
		c->connected = true;
	if (!c->destroying)
		cl_exchange_on_connect(c);
}

/*
 * Drops a connection that cannot be trusted to answer: a connection attempt
 * pending for CLUSTER_CONNECT_MS (hiredis's libuv adapter ignores a
 * poll error, so a refused attempt can hang), or a lease command unanswered
 * for a lease period (a partition without a reset). The pending commands
 * fail; batches are sent again.
 */
static void drop_stuck(struct cluster *c, uint64_t now)
{
	bool stuck = c->connected ? c->member_busy && now - c->renew_sent_ms > c->lease_ms
	                          : now - c->connect_ms > CLUSTER_CONNECT_MS;
	if (c->ac == NULL || !stuck)
		return;
	redisAsyncContext *ac = c->ac;
	c->ac = NULL;
	c->connected = false;
	redisAsyncFree(ac);
}

static void connect_redis(struct cluster *c)
{
	uint64_t now = monotonic_ms();
	drop_stuck(c, now);
	if (c->ac != NULL || now - c->connect_ms < CLUSTER_RETRY_MS)
		return;
	c->connect_ms = now;
	redisAsyncContext *ac = redisAsyncConnect(c->host, c->port);
	if (ac == NULL)
		return;
	if (ac->err || redisLibuvAttach(ac, c->loop) != REDIS_OK) {
		redisAsyncFree(ac);
		return;
	}
	ac->data = c;
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	c->ac = ac;
}

static void free_names(char **names, size_t n)
{
	ARRAY_FREE_EACH(names, n);
}

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

static void joined(struct cluster *c)
{
	redisAsyncContext *ac = cl_conn(c);
	lease_renewed(c);
	c->state = CL_LIVE;
	redisAsyncCommand(ac, NULL, NULL, "HSET %s:members %s %s", c->prefix, c->name, c->consumer);
	redisAsyncCommand(ac, NULL, NULL, "HSET %s:stats:%s incarnation %s lease_ms %u", c->prefix,
	                  c->name, c->consumer, c->lease_ms);
	cl_exchange_on_join(c);
}

static bool reply_is_str(const redisReply *r, const char *s)
{
	return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
	       r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
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

static void member_step(struct cluster *c);
static void view_poll(struct cluster *c);

static void on_member_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	struct cluster *c = priv;
	redisReply *r = reply;
	(void)ac;
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
		if (reply_is_str(r, "OK"))
			joined(c);
		break;
	case CL_LIVE:
		if (reply_is_str(r, c->consumer))
			lease_renewed(c);
		else
			fence_now(c); /* lapsed, or taken by another incarnation */
		break;
	case CL_REFUSED: break;
	}
	if (c->state == CL_JOIN_INCR || c->state == CL_JOIN_LEASE)
		member_step(c); /* joining goes on at once; a taken lease waits a tick */
	if (c->state == CL_LIVE && !c->view_busy)
		view_poll(c);
}

/* One membership step: the command of the current state, if none is in flight. */
static void member_step(struct cluster *c)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac == NULL || c->member_busy || c->state == CL_REFUSED)
		return;
	const char *p = c->prefix;
	int rc = REDIS_ERR;
	c->renew_sent_ms = monotonic_ms();
	switch (c->state) {
	case CL_JOIN_CONFIG:
		rc = redisAsyncCommand(ac, on_member_reply, c, "SET %s:config %s NX GET", p,
		                       assign_method_name(c->method));
		break;
	case CL_JOIN_INCR:
		rc = redisAsyncCommand(ac, on_member_reply, c, "INCR %s:incarnation", p);
		break;
	case CL_JOIN_LEASE:
		rc = redisAsyncCommand(ac, on_member_reply, c, "SET %s:lease:%s %s PX %u NX", p,
		                       c->name, c->consumer, c->lease_ms);
		break;
	case CL_LIVE:
		rc = redisAsyncCommand(ac, on_member_reply, c, "SET %s:lease:%s %s PX %u XX GET", p,
		                       c->name, c->consumer, c->lease_ms);
		break;
	case CL_REFUSED: break;
	}
	c->member_busy = rc == REDIS_OK;
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

struct view_read {
	struct cluster *c;
	char **names;
	size_t n;
};

static void on_leases(redisAsyncContext *ac, void *reply, void *priv)
{
	struct view_read *vr = priv;
	struct cluster *c = vr->c;
	redisReply *r = reply;
	(void)ac;
	c->view_busy = false;
	char **live = calloc(vr->n + 1, sizeof *live), **dead = calloc(vr->n + 1, sizeof *dead);
	size_t nlive = 0, ndead = 0;
	if (c->destroying || r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != vr->n ||
	    live == NULL || dead == NULL) {
		free(live);
		free(dead);
		free_names(vr->names, vr->n);
		free(vr);
		return;
	}
	for (size_t i = 0; i < vr->n; i++) {
		if (r->element[i]->type == REDIS_REPLY_STRING)
			live[nlive++] = vr->names[i];
		else
			dead[ndead++] = vr->names[i];
	}
	free(vr->names);
	free(vr);
	view_install(c, live, nlive, dead, ndead);
}

static void on_members(redisAsyncContext *ac, void *reply, void *priv)
{
	struct cluster *c = priv;
	redisReply *r = reply;
	if (c->destroying || r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
	    cl_conn(c) == NULL) {
		c->view_busy = false;
		return;
	}
	size_t n = r->elements / 2;
	struct view_read *vr = calloc(1, sizeof *vr);
	const char **argv = calloc(n + 1, sizeof *argv);
	size_t *argl = calloc(n + 1, sizeof *argl);
	if (vr != NULL) {
		vr->c = c;
		vr->names = calloc(n, sizeof *vr->names);
	}
	bool ok = vr != NULL && vr->names != NULL && argv != NULL && argl != NULL;
	for (size_t i = 0; ok && i < n; i++) {
		const redisReply *name = r->element[2 * i];
		size_t len = strlen(c->prefix) + name->len + 8;
		char *key = malloc(len);
		vr->names[i] = strndup(name->str, name->len);
		ok = key != NULL && vr->names[i] != NULL;
		if (key != NULL)
			argl[i + 1] =
			        (size_t)snprintf(key, len, "%s:lease:%s", c->prefix, vr->names[i]);
		argv[i + 1] = key;
		vr->n = i + 1;
	}
	argv[0] = "MGET";
	argl[0] = 4;
	if (ok && redisAsyncCommandArgv(ac, on_leases, vr, (int)n + 1, argv, argl) == REDIS_OK)
		vr = NULL;
	else
		c->view_busy = false;
	for (size_t i = 1; argv != NULL && i <= n; i++)
		free((char *)argv[i]);
	free(argv);
	free(argl);
	if (vr != NULL)
		free_names(vr->names, vr->n);
	free(vr);
}

static void view_poll(struct cluster *c)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac == NULL || c->view_busy || c->state == CL_REFUSED || c->state == CL_JOIN_CONFIG)
		return;
	c->view_busy =
	        redisAsyncCommand(ac, on_members, c, "HGETALL %s:members", c->prefix) == REDIS_OK;
}

static void tick_cb(uv_timer_t *t)
{
	struct cluster *c = t->data;
	connect_redis(c);
	member_step(c);
	view_poll(c);
	cl_exchange_tick(c);
}

static void on_handle_closed(uv_handle_t *h)
{
	struct cluster *c = h->data;
	if (--c->open_handles > 0)
		return;
	cl_exchange_free(c);
	assign_view_destroy(c->view);
	free_names(c->live, c->nlive);
	free_names(c->dead, c->ndead);
	free(c);
}

static int copy_options(struct cluster *c, const struct cluster_options *opt)
{
	if (opt->name == NULL || strlen(opt->name) > ASSIGN_NAME_MAX || opt->lease_ms < 30 ||
	    cluster_url_parse(opt->url, c->host, sizeof c->host, &c->port, c->prefix) != 0)
		return CLUSTER_EINVAL;
	struct assign_view *probe;
	const char *names[1] = { opt->name };
	if (assign_view_create(opt->method, names, 1, &probe) != ASSIGN_OK)
		return CLUSTER_EINVAL;
	assign_view_destroy(probe);
	snprintf(c->name, sizeof c->name, "%s", opt->name);
	c->method = opt->method;
	c->lease_ms = opt->lease_ms;
	c->flush_delay_ms = opt->flush_delay_ms ? opt->flush_delay_ms : 10;
	c->poll_ms = opt->poll_ms ? opt->poll_ms : 20;
	c->max_unsent = opt->max_unsent ? opt->max_unsent : 100000;
	c->max_unacked = opt->max_unacked ? opt->max_unacked : 10000;
	c->dedup = opt->dedup;
	return CLUSTER_OK;
}

int cluster_create(uv_loop_t *loop, const struct cluster_options *opt,
                   const struct cluster_callbacks *cb, struct cluster **out)
{
	*out = NULL;
	struct cluster *c = calloc(1, sizeof *c);
	if (c == NULL)
		return CLUSTER_ENOMEM;
	int rc = copy_options(c, opt);
	if (rc != CLUSTER_OK) {
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
	unsigned period = c->lease_ms / 3;
	if (uv_timer_start(&c->tick, tick_cb, 0, period) != 0) {
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
	if (c->ac != NULL) {
		redisAsyncContext *ac = c->ac;
		c->ac = NULL;
		redisAsyncFree(ac); /* runs the pending callbacks with no reply */
	}
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

void cluster_publish_stats(struct cluster *c, uint64_t pages, uint64_t requests, uint64_t bytes)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac == NULL)
		return;
	redisAsyncCommand(ac, NULL, NULL, "HSET %s:stats:%s pages %llu requests %llu bytes %llu",
	                  c->prefix, c->name, (unsigned long long)pages,
	                  (unsigned long long)requests, (unsigned long long)bytes);
}

/* The per-IP lease (cluster.h): granted when the key is free or already
 * this agent's (its TTL then raised to the one asked, never lowered: it may
 * still cover the delay after an earlier request), else the holder's time
 * left. */
static const char ip_lease_script[] = "local v = redis.call('GET', KEYS[1])\n"
                                      "if v == false then\n"
                                      "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                                      "  return {1, 0}\n"
                                      "end\n"
                                      "if v == ARGV[1] then\n"
                                      "  if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then\n"
                                      "    redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                      "  end\n"
                                      "  return {1, 0}\n"
                                      "end\n"
                                      "return {0, redis.call('PTTL', KEYS[1])}\n";

/* Shortens this agent's lease, if it still holds it. */
static const char ip_release_script[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
                                        "  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                        "end\n"
                                        "return 0\n";

struct ip_lease {
	struct cluster *c;
	void (*done)(void *arg, bool granted, long wait_ms);
	void *arg;
};

static void on_ip_lease(redisAsyncContext *ac, void *reply, void *priv)
{
	struct ip_lease *l = priv;
	redisReply *r = reply;
	(void)ac;
	/* {granted, the holder's PTTL}: -1 or -2 when it has none */
	bool ok = cl_reply_ints(r, 2, -2);
	if (!ok)
		cl_fail(l->c, "ip lease", r);
	if (!l->c->destroying) {
		bool granted = ok && r->element[0]->integer == 1;
		long left = ok && r->element[1]->integer > 0 ? (long)r->element[1]->integer : 0;
		l->done(l->arg, granted, ok ? left : -1);
	}
	free(l);
}

int cluster_ip_lease(struct cluster *c, const char *addr, unsigned delay_ms,
                     void (*done)(void *arg, bool granted, long wait_ms), void *arg)
{
	redisAsyncContext *ac = cl_conn(c);
	if (addr == NULL || *addr == '\0' || done == NULL || delay_ms == 0)
		return CLUSTER_EINVAL;
	if (ac == NULL)
		return CLUSTER_EDOWN;
	struct ip_lease *l = malloc(sizeof *l);
	if (l == NULL)
		return CLUSTER_ENOMEM;
	*l = (struct ip_lease){ .c = c, .done = done, .arg = arg };
	if (redisAsyncCommand(ac, on_ip_lease, l, "EVAL %s 1 %s:ip:%s %s %u", ip_lease_script,
	                      c->prefix, addr, c->name, delay_ms) != REDIS_OK) {
		free(l);
		return CLUSTER_EDOWN;
	}
	return CLUSTER_OK;
}

int cluster_ip_release(struct cluster *c, const char *addr, unsigned delay_ms)
{
	redisAsyncContext *ac = cl_conn(c);
	if (addr == NULL || *addr == '\0' || delay_ms == 0)
		return CLUSTER_EINVAL;
	if (ac == NULL ||
	    redisAsyncCommand(ac, NULL, NULL, "EVAL %s 1 %s:ip:%s %s %u", ip_release_script,
	                      c->prefix, addr, c->name, delay_ms) != REDIS_OK)
		return CLUSTER_EDOWN;
	return CLUSTER_OK;
}

void cluster_publish_idle(struct cluster *c, bool idle)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac != NULL)
		redisAsyncCommand(ac, NULL, NULL, "HSET %s:stats:%s idle %d", c->prefix, c->name,
		                  idle ? 1 : 0);
}

const char *const *cluster_live_names(const struct cluster *c, size_t *n)
{
	*n = c->nlive;
	return (const char *const *)c->live;
}

/* The census (cluster.h). An inbox has unread entries when its group's
 * last delivered ID is not the stream's last ID. */
static const char census_script[] =
        "local p = ARGV[1]\n"
        "local busy, pages, alive = 0, 0, 0\n"
        "for _, m in ipairs(redis.call('HKEYS', p .. ':members')) do\n"
        "  local st = redis.call('HMGET', p .. ':stats:' .. m, 'pages', 'idle')\n"
        "  pages = pages + (tonumber(st[1]) or 0)\n"
        "  if redis.call('EXISTS', p .. ':lease:' .. m) == 1 then\n"
        "    alive = alive + 1\n"
        "    if st[2] ~= '1' then busy = busy + 1 end\n"
        "  end\n"
        "  local key = p .. ':inbox:' .. m\n"
        "  local last = redis.call('XREVRANGE', key, '+', '-', 'COUNT', 1)\n"
        "  if #last > 0 then\n"
        "    local groups = redis.call('XINFO', 'GROUPS', key)\n"
        "    if #groups == 0 then busy = busy + 1 end\n"
        "    for _, g in ipairs(groups) do\n"
        "      local f = {}\n"
        "      for i = 1, #g, 2 do f[g[i]] = g[i + 1] end\n"
        "      if f['pending'] > 0 or f['last-delivered-id'] ~= last[1][1] then\n"
        "        busy = busy + 1\n"
        "      end\n"
        "    end\n"
        "  end\n"
        "end\n"
        "return {busy, pages, alive}\n";

struct census_req {
	struct cluster *c;
	void (*done)(void *arg, bool ok, const struct cluster_census *s);
	void *arg;
};

static void on_census(redisAsyncContext *ac, void *reply, void *priv)
{
	struct census_req *q = priv;
	redisReply *r = reply;
	(void)ac;
	struct cluster_census s = { 0, 0, 0 };
	bool ok = cl_reply_ints(r, 3, 0);
	if (ok) {
		s.busy = (uint64_t)r->element[0]->integer;
		s.pages = (uint64_t)r->element[1]->integer;
		s.alive = (uint64_t)r->element[2]->integer;
	} else {
		cl_fail(q->c, "census", r);
	}
	if (!q->c->destroying)
		q->done(q->arg, ok, &s);
	free(q);
}

int cluster_census(struct cluster *c,
                   void (*done)(void *arg, bool ok, const struct cluster_census *s), void *arg)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac == NULL || !c->connected)
		return CLUSTER_EDOWN;
	struct census_req *q = malloc(sizeof *q);
	if (q == NULL)
		return CLUSTER_ENOMEM;
	*q = (struct census_req){ c, done, arg };
	if (redisAsyncCommand(ac, on_census, q, "EVAL %s 0 %s", census_script, c->prefix) !=
	    REDIS_OK) {
		free(q);
		return CLUSTER_EDOWN;
	}
	return CLUSTER_OK;
}

struct leave_req {
	struct cluster *c;
	void (*done)(void *arg);
	void *arg;
};

static void on_left(redisAsyncContext *ac, void *reply, void *priv)
{
	struct leave_req *q = priv;
	(void)ac;
	(void)reply;
	if (!q->c->destroying)
		q->done(q->arg);
	free(q);
}

int cluster_leave(struct cluster *c, void (*done)(void *arg), void *arg)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac == NULL || !c->connected || c->state != CL_LIVE)
		return CLUSTER_EDOWN;
	struct leave_req *q = malloc(sizeof *q);
	if (q == NULL)
		return CLUSTER_ENOMEM;
	*q = (struct leave_req){ c, done, arg };
	if (redisAsyncCommand(ac, on_left, q, "DEL %s:lease:%s", c->prefix, c->name) != REDIS_OK) {
		free(q);
		return CLUSTER_EDOWN;
	}
	c->state = CL_REFUSED;
	uv_timer_stop(&c->fence);
	cluster_stop_reading(c);
	return CLUSTER_OK;
}
