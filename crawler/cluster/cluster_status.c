/*
 * cluster_status.c: `crawler cluster-status redis://HOST:PORT[/PREFIX]`,
 * the state of a distributed crawl read from its keys (cluster.h): one line
 * per agent ever joined (alive or dead, incarnation, lease age, counters,
 * inbox length and pending entries), then the totals and the pages
 * reserved of the crawl's page budget (P:budget). Blocking Redis calls:
 * a command-line tool, not the fetch loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "crawler/cluster/cluster.h"
#include "frontier/base/tools.h"

struct agent_row {
	unsigned long long pages, requests, bytes, lease_ms, len, pending;
	long long pttl;
};

static redisReply *query(redisContext *rc, const char *fmt, const char *prefix, const char *name)
{
	redisReply *r = redisCommand(rc, fmt, prefix, name);
	if (r == NULL)
		fprintf(stderr, "cluster-status: %s\n", rc->errstr);
	return r;
}

static unsigned long long hash_field(const redisReply *h, const char *field)
{
	for (size_t i = 0; h->type == REDIS_REPLY_ARRAY && i + 1 < h->elements; i += 2)
		if (strcmp(h->element[i]->str, field) == 0)
			return strtoull(h->element[i + 1]->str, NULL, 10);
	return 0;
}

/* Reads one agent's row: 0, or -1 when the connection failed. */
static int agent_read(redisContext *rc, const char *p, const char *name, struct agent_row *row)
{
	redisReply *ttl = query(rc, "PTTL %s:lease:%s", p, name);
	redisReply *st = query(rc, "HGETALL %s:stats:%s", p, name);
	redisReply *len = query(rc, "XLEN %s:inbox:%s", p, name);
	redisReply *pend = query(rc, "XPENDING %s:inbox:%s g", p, name);
	int rc_ = ttl && st && len && pend ? 0 : -1;
	if (rc_ == 0) {
		row->pttl = ttl->type == REDIS_REPLY_INTEGER ? ttl->integer : -2;
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
	freeReplyObject(ttl);
	freeReplyObject(st);
	freeReplyObject(len);
	freeReplyObject(pend);
	return rc_;
}

/* The pages the agents reserved under --max-pages, when it is set. */
static int print_budget(redisContext *rc, const char *p)
{
	redisReply *budget = query(rc, "GET %s:budget", p, "");
	if (budget == NULL)
		return 1;
	if (budget->type == REDIS_REPLY_STRING)
		printf("page budget (--max-pages): %s pages reserved\n", budget->str);
	freeReplyObject(budget);
	return 0;
}

static int print_status(redisContext *rc, const char *p)
{
	redisReply *cfg = query(rc, "GET %s:config", p, "");
	redisReply *m = query(rc, "HGETALL %s:members", p, "");
	int ret = 1;
	struct agent_row tot = { 0 };
	size_t alive = 0;
	if (cfg == NULL || m == NULL || m->type != REDIS_REPLY_ARRAY)
		goto out;
	printf("crawl %s: assign %s, %zu agents\n", p,
	       cfg->type == REDIS_REPLY_STRING ? cfg->str : "(none)", m->elements / 2);
	printf("%-20s %-5s %6s %9s %10s %10s %14s %9s %9s\n", "agent", "state", "inc", "lease_age",
	       "pages", "requests", "bytes", "inbox", "pending");
	for (size_t i = 0; i + 1 < m->elements; i += 2) {
		const char *name = m->element[i]->str;
		struct agent_row row = { 0 };
		if (agent_read(rc, p, name, &row) != 0)
			goto out;
		bool live = row.pttl >= 0;
		char age[24] = "-";
		if (live)
			snprintf(age, sizeof age, "%lldms", (long long)row.lease_ms - row.pttl);
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
	ret = print_budget(rc, p);
out:
	freeReplyObject(cfg);
	freeReplyObject(m);
	return ret;
}

int cluster_status_tool_main(int argc, char **argv)
{
	char host[256], prefix[CLUSTER_PREFIX_MAX + 1];
	int port;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: crawler cluster-status redis://HOST:PORT[/PREFIX]\n");
		return 0;
	}
	if (argc != 2 || cluster_url_parse(argv[1], host, sizeof host, &port, prefix) != 0) {
		fprintf(stderr, "usage: crawler cluster-status redis://HOST:PORT[/PREFIX]\n");
		return 2;
	}
	struct timeval tv = { 5, 0 };
	redisContext *rc = redisConnectWithTimeout(host, port, tv);
	if (rc == NULL || rc->err) {
		fprintf(stderr, "cluster-status: cannot connect to %s:%d: %s\n", host, port,
		        rc ? rc->errstr : "out of memory");
		redisFree(rc);
		return 1;
	}
	redisSetTimeout(rc, tv);
	int ret = print_status(rc, prefix);
	redisFree(rc);
	return ret;
}
