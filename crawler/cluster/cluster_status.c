/*
 * cluster_status.c: `crawler cluster-status redis://HOST:PORT[/PREFIX]`,
 * the state of a distributed crawl read from its keys (cluster.h): one line
 * per agent ever joined (alive or dead, incarnation, lease age, counters,
 * inbox length and pending entries), then the totals, the pages reserved
 * of the crawl's page budget ({P}:budget) and where the keys live (one
 * Redis, or the masters of a Redis Cluster). A command-line tool: it runs
 * its own loop and waits for each answer (the router, router.h, routes
 * the commands).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/cluster.h"
#include "crawler/cluster/router.h"
#include "frontier/base/clock.h"
#include "frontier/base/tools.h"

#define STATUS_WAIT_MS 5000

struct status {
	uv_loop_t loop;
	struct router *rt;
	char base[CLUSTER_PREFIX_MAX + 3]; /* "{P}" */
	char prefix[CLUSTER_PREFIX_MAX + 1];
};

struct answer {
	bool done;
	redisReply *r;
};

static void on_answer(void *priv, const redisReply *r)
{
	struct answer *a = priv;
	a->done = true;
	a->r = r ? router_reply_copy(r) : NULL;
}

static void wake(uv_timer_t *t)
{
	(void)t;
}

static bool mapped(struct status *s)
{
	struct router_stats st;
	router_stats(s->rt, &st);
	return st.mapped;
}

/* Runs the loop until *flag (or cond) holds or the wait is over. */
static bool run_until(struct status *s, const bool *flag, bool (*cond)(struct status *))
{
	uv_timer_t t;
	uv_timer_init(&s->loop, &t);
	uv_timer_start(&t, wake, 10, 10);
	uint64_t end = monotonic_ms() + STATUS_WAIT_MS;
	while (!(flag ? *flag : cond(s)) && monotonic_ms() < end)
		uv_run(&s->loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&s->loop, UV_RUN_NOWAIT);
	return flag ? *flag : cond(s);
}

/* A command for key's slot: its reply (the caller frees it), or NULL
 * with a line on stderr. */
static redisReply *query(struct status *s, const char *key, const char *fmt, ...)
{
	struct answer a = { 0 };
	unsigned slot = router_key_slot(key, strlen(key));
	uint64_t end = monotonic_ms() + STATUS_WAIT_MS;
	int rc;
	do { /* a node's connection may still be opening */
		va_list ap;
		va_start(ap, fmt);
		rc = router_vsendf(s->rt, slot, 0, on_answer, &a, fmt, ap);
		va_end(ap);
		if (rc == ROUTER_EDOWN)
			uv_run(&s->loop, UV_RUN_ONCE);
	} while (rc == ROUTER_EDOWN && monotonic_ms() < end);
	if (rc != ROUTER_OK || !run_until(s, &a.done, NULL) || a.r == NULL) {
		fprintf(stderr, "cluster-status: no answer from Redis for %s\n", key);
		return NULL;
	}
	if (a.r->type == REDIS_REPLY_ERROR) {
		fprintf(stderr, "cluster-status: %s: %s\n", key, a.r->str);
		freeReplyObject(a.r);
		return NULL;
	}
	return a.r;
}

struct agent_row {
	unsigned long long pages, requests, bytes, lease_ms, len, pending;
	long long lease_end; /* Redis time, ms; 0 when never joined */
};

static unsigned long long hash_field(const redisReply *h, const char *field)
{
	for (size_t i = 0; h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
		if (strcmp(h->element[i]->str, field) == 0)
			return strtoull(h->element[i + 1]->str, NULL, 10);
	return 0;
}

/* Reads one agent's row: 0, or -1 when Redis did not answer. */
static int agent_read(struct status *s, const char *name, struct agent_row *row)
{
	char alive[CLUSTER_PREFIX_MAX + 16], stats[600], inbox[600];
	snprintf(alive, sizeof alive, "%s:alive", s->base);
	snprintf(stats, sizeof stats, "%s:stats:%s", s->base, name);
	snprintf(inbox, sizeof inbox, "{%s:a:%s}:inbox", s->prefix, name);
	redisReply *end = query(s, alive, "ZSCORE %s %s", alive, name);
	redisReply *st = query(s, stats, "HGETALL %s", stats);
	redisReply *len = query(s, inbox, "XLEN %s", inbox);
	redisReply *pend = query(s, inbox, "EXISTS %s", inbox);
	int rc = end && st && len && pend ? 0 : -1;
	if (rc == 0 && pend->integer == 1) {
		freeReplyObject(pend);
		pend = query(s, inbox, "XPENDING %s g", inbox);
		rc = pend ? 0 : -1;
	}
	if (rc == 0) {
		row->lease_end = end->type == REDIS_REPLY_STRING ? strtoll(end->str, NULL, 10) : 0;
		row->pages = hash_field(st, "pages");
		row->requests = hash_field(st, "requests");
		row->bytes = hash_field(st, "bytes");
		row->lease_ms = hash_field(st, "lease_ms");
		row->len = len->type == REDIS_REPLY_INTEGER ? (unsigned long long)len->integer : 0;
		row->pending = pend->type == REDIS_REPLY_ARRAY && pend->elements > 0 &&
		                               pend->element[0]->type == REDIS_REPLY_INTEGER
		                       ? (unsigned long long)pend->element[0]->integer
		                       : 0;
	}
	freeReplyObject(end);
	freeReplyObject(st);
	freeReplyObject(len);
	freeReplyObject(pend);
	return rc;
}

/* Redis's clock, in ms (lease ends are on it). */
static long long redis_now(struct status *s)
{
	redisReply *t = query(s, s->base, "TIME");
	long long now = -1;
	if (t != NULL && t->type == REDIS_REPLY_ARRAY && t->elements == 2)
		now = strtoll(t->element[0]->str, NULL, 10) * 1000 +
		      strtoll(t->element[1]->str, NULL, 10) / 1000;
	freeReplyObject(t);
	return now;
}

/* The pages the agents reserved under --max-pages, and the masters. */
static int print_footer(struct status *s)
{
	char key[CLUSTER_PREFIX_MAX + 16];
	snprintf(key, sizeof key, "%s:budget", s->base);
	redisReply *budget = query(s, key, "GET %s", key);
	if (budget == NULL)
		return 1;
	if (budget->type == REDIS_REPLY_STRING)
		printf("page budget (--max-pages): %s pages reserved\n", budget->str);
	freeReplyObject(budget);
	struct router_stats st;
	router_stats(s->rt, &st);
	if (st.cluster)
		printf("Redis Cluster: %zu masters\n", st.nodes);
	return 0;
}

static int print_status(struct status *s)
{
	char cfg_key[CLUSTER_PREFIX_MAX + 16], mem_key[CLUSTER_PREFIX_MAX + 16];
	snprintf(cfg_key, sizeof cfg_key, "%s:config", s->base);
	snprintf(mem_key, sizeof mem_key, "%s:members", s->base);
	redisReply *cfg = query(s, cfg_key, "GET %s", cfg_key);
	redisReply *m = cfg ? query(s, mem_key, "HGETALL %s", mem_key) : NULL;
	long long now = m ? redis_now(s) : -1;
	int ret = 1;
	struct agent_row tot = { 0 };
	size_t alive = 0;
	if (cfg == NULL || m == NULL || m->type != REDIS_REPLY_ARRAY || now < 0)
		goto out;
	printf("crawl %s: assign %s, %zu agents\n", s->prefix,
	       cfg->type == REDIS_REPLY_STRING ? cfg->str : "(none)", m->elements / 2);
	printf("%-20s %-5s %6s %9s %10s %10s %14s %9s %9s\n", "agent", "state", "inc", "lease_age",
	       "pages", "requests", "bytes", "inbox", "pending");
	for (size_t i = 0; i + 1 < m->elements; i += 2) {
		const char *name = m->element[i]->str;
		struct agent_row row = { 0 };
		if (agent_read(s, name, &row) != 0)
			goto out;
		bool live = row.lease_end > now;
		char age[24] = "-";
		if (live)
			snprintf(age, sizeof age, "%lldms",
			         (long long)row.lease_ms - (row.lease_end - now));
		printf("%-20s %-5s %6s %9s %10llu %10llu %14llu %9llu %9llu\n", name,
		       live ? "alive" : "dead", m->element[i + 1]->str, age, row.pages,
		       row.requests, row.bytes, row.len, row.pending);
		alive += live;
		tot.pages += row.pages;
		tot.requests += row.requests;
		tot.bytes += row.bytes;
		tot.len += row.len;
		tot.pending += row.pending;
	}
	printf("%-20s %-5zu %6s %9s %10llu %10llu %14llu %9llu %9llu\n", "total", alive, "", "",
	       tot.pages, tot.requests, tot.bytes, tot.len, tot.pending);
	ret = print_footer(s);
out:
	freeReplyObject(cfg);
	freeReplyObject(m);
	return ret;
}

static int status_run(const char *url)
{
	struct status s = { 0 };
	char host[256];
	int port, ret = 1;
	if (cluster_url_parse(url, host, sizeof host, &port, s.prefix) != 0) {
		fprintf(stderr, "usage: crawler cluster-status redis://HOST:PORT[/PREFIX]\n");
		return 2;
	}
	snprintf(s.base, sizeof s.base, "{%s}", s.prefix);
	if (uv_loop_init(&s.loop) != 0)
		return 1;
	struct router_options o = { .host = host, .port = port, .stuck_ms = STATUS_WAIT_MS };
	if (router_create(&s.loop, &o, &s.rt) != ROUTER_OK)
		goto out;
	if (!run_until(&s, NULL, mapped)) {
		fprintf(stderr, "cluster-status: cannot reach Redis at %s:%d\n", host, port);
		goto out;
	}
	ret = print_status(&s);
out:
	router_destroy(s.rt);
	uv_run(&s.loop, UV_RUN_DEFAULT);
	uv_loop_close(&s.loop);
	return ret;
}

int cluster_status_tool_main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: crawler cluster-status redis://HOST:PORT[/PREFIX]\n");
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: crawler cluster-status redis://HOST:PORT[/PREFIX]\n");
		return 2;
	}
	return status_run(argv[1]);
}
