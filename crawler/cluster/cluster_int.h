/*
 * cluster_int.h: the state shared by cluster.c (connection, membership,
 * view, fencing, stats, IP leases), cluster_exchange.c (batches, inbox,
 * acks, dead inboxes) and cluster_budget.c (the page budget). Not a public
 * header: see cluster.h.
 *
 * Invariants: ac is NULL or a context attached to loop whose callbacks get
 * c as ac->data; at most one membership command is in flight (member_busy)
 * and one view read (view_busy); inflight holds, in sending order, the
 * batches XADDed and not yet answered (replies come in that order); retry
 * then queued hold, in order, the batches to send once connected; unsent
 * counts the URLs of all batches (open, queued, retry, inflight).
 */
#ifndef CRAWLER_CLUSTER_CLUSTER_INT_H
#define CRAWLER_CLUSTER_CLUSTER_INT_H

#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "crawler/cluster/cluster.h"

/* XADDs in flight at most: a lease renewal never waits behind more. */
#define CL_INFLIGHT_MAX 8
/* A stream entry ID as text ("ms-seq"). */
#define CL_ID_MAX 48

enum cl_state {
	CL_JOIN_CONFIG, /* checking P:config */
	CL_JOIN_INCR,   /* taking a new incarnation */
	CL_JOIN_LEASE,  /* waiting for P:lease:NAME to be free, then taking it */
	CL_LIVE,        /* holding the lease, renewing it */
	CL_REFUSED,     /* P:config disagrees, or left: stopped for good */
};

struct cl_batch {
	struct cl_batch *next;
	bool raw;   /* sent as it is, even with dedup on */
	char *dest; /* agent name, borrowed from its cl_dest */
	char *buf;  /* "url\tvia\tdepth\n" lines */
	size_t len, cap, nurls;
};

struct cl_list {
	struct cl_batch *head, *tail;
};

struct cl_dest {
	char *name;
	bool raw;
	struct cl_batch *open; /* NULL or the batch being filled */
	uint64_t open_ms;      /* when open got its first URL */
};

struct cluster {
	uv_loop_t *loop;
	struct cluster_callbacks cb;
	char host[256];
	int port;
	char prefix[CLUSTER_PREFIX_MAX + 1];
	char name[ASSIGN_NAME_MAX + 1];
	char consumer[24]; /* the incarnation as text */
	enum assign_method method;
	unsigned lease_ms, flush_delay_ms, poll_ms;
	size_t max_unsent, max_unacked;
	bool dedup;

	redisAsyncContext *ac;
	bool connected;      /* ac's connection is established */
	uint64_t connect_ms; /* last connection attempt */
	uv_timer_t tick, fence, flush, read;
	int open_handles;
	bool destroying;

	enum cl_state state;
	bool member_busy, view_busy;
	uint64_t inc, renew_sent_ms, renew_ok_ms;
	struct assign_view *view;
	char **live, **dead; /* sorted names of the last view read */
	size_t nlive, ndead;

	struct cl_dest *dests;
	size_t ndests;
	struct cl_list queued, retry, inflight;
	size_t ninflight;
	size_t unsent;

	bool read_busy, claim_own, no_reads;
	char claim_cursor[CL_ID_MAX];
	char (*acks)[CL_ID_MAX];
	size_t nacks, acks_cap, unacked;
	struct cluster_url *urls; /* scratch of a delivery */
	size_t urls_cap;
	char *text; /* scratch copy of an entry's lines */
	size_t text_cap;
	int drains; /* dead-inbox commands in flight */
	bool drain_found;
	uint64_t lines_malformed; /* entry lines no agent writes, skipped */
};

/* The connection, if usable for a new command. */
redisAsyncContext *cl_conn(struct cluster *c);
void cl_fail(struct cluster *c, const char *what, const redisReply *r);
/* r is an array of exactly n integers, each at least min. */
bool cl_reply_ints(const redisReply *r, size_t n, long long min);

/* cluster_exchange.c, driven by cluster.c. */
void cl_exchange_on_connect(struct cluster *c);
void cl_exchange_on_join(struct cluster *c);
void cl_exchange_on_fence(struct cluster *c);
void cl_exchange_tick(struct cluster *c);
void cl_exchange_free(struct cluster *c);
void cl_read_timer_cb(uv_timer_t *t);
void cl_flush_timer_cb(uv_timer_t *t);

#endif
