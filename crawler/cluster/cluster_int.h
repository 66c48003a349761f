/*
 * cluster_int.h: the state shared by cluster.c (life, membership, view,
 * fencing, stats, census), cluster_exchange.c (batches, the sent cache,
 * this agent's inbox and its deduplication, acks), cluster_drain.c (dead
 * agents' inboxes), cluster_lease.c (IP leases and the page budget) and
 * cluster_scripts.c (the Lua side). Not a public header: see cluster.h.
 *
 * Invariants: at most one membership command is in flight (member_busy)
 * and one view read (view_busy); retry then queued hold, in order, the
 * batches to send; ninflight counts the batches XADDed and not answered;
 * unsent counts the URLs of all batches (open, queued, retry, inflight).
 * The entries read from the inbox wait in order (in_head) until every SADD
 * of their URLs is answered; filtering counts their URLs, unacked the URLs
 * handed to on_urls whose entry is not acked: reads stop when the two
 * reach max_unacked.
 */
#ifndef CRAWLER_CLUSTER_CLUSTER_INT_H
#define CRAWLER_CLUSTER_CLUSTER_INT_H

#include "crawler/cluster/cluster.h"
#include "crawler/cluster/router.h"

/* XADDs in flight at most: a lease renewal never waits behind more. */
#define CL_INFLIGHT_MAX 8
/* A stream entry ID as text ("ms-seq"). */
#define CL_ID_MAX 48
/* Longest key: a tag, a name or an address, a suffix. */
#define CL_KEY_MAX (CLUSTER_PREFIX_MAX + ASSIGN_NAME_MAX + 32)

enum cl_state {
	CL_JOIN_CONFIG, /* checking {P}:config */
	CL_JOIN_INCR,   /* taking a new incarnation */
	CL_JOIN_LEASE,  /* waiting for an earlier incarnation's lease to lapse */
	CL_LIVE,        /* holding the lease, renewing it */
	CL_REFUSED,     /* {P}:config disagrees, or left: stopped for good */
};

enum cl_script_id {
	CL_S_JOIN,
	CL_S_RENEW,
	CL_S_LEAVE,
	CL_S_VIEW,
	CL_S_STATS,
	CL_S_IDLE,
	CL_S_CENSUS,
	CL_S_CENSUS_STORE,
	CL_S_INBOX_BUSY,
	CL_S_TRIM,
	CL_S_RESERVE,
	CL_S_DEADLINE,
	CL_S_IP_LEASE,
	CL_S_IP_RELEASE,
	CL_SCRIPTS
};

struct cl_batch {
	struct cl_batch *next;
	struct cluster *c;
	bool raw;   /* field "r": never deduplicated */
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
};

/* An inbox entry read, on its way to on_urls. */
struct cl_entry {
	struct cl_entry *next;
	struct cluster *c;
	char id[CL_ID_MAX];
	char *text; /* its lines, NUL-terminated */
	size_t len, nurls;
	unsigned char *fresh; /* per URL, 1 unless its SADD said seen; NULL: raw */
	size_t waiting;       /* SADDs not answered yet */
	bool dropped;         /* fenced meanwhile: handed to nobody */
};

struct cluster {
	uv_loop_t *loop;
	struct cluster_callbacks cb;
	char prefix[CLUSTER_PREFIX_MAX + 1];
	char base[CLUSTER_PREFIX_MAX + 3];      /* "{P}" */
	char crawl_key[CLUSTER_PREFIX_MAX + 8]; /* "{P}:ver", a key of the crawl's slot */
	char inbox[CL_KEY_MAX];                 /* this agent's inbox key */
	unsigned crawl_slot, inbox_slot;
	char name[ASSIGN_NAME_MAX + 1];
	char consumer[24]; /* the incarnation as text */
	enum assign_method method;
	unsigned lease_ms, flush_delay_ms, poll_ms, ip_patience_ms;
	size_t max_unsent, max_unacked;
	bool dedup;

	struct router *rt;
	uv_timer_t tick, fence, flush, read;
	int open_handles;
	bool destroying;

	enum cl_state state;
	bool member_busy, view_busy;
	uint64_t inc, renew_sent_ms, renew_ok_ms;
	long long view_ver, view_now; /* the last view read: version, Redis time */
	struct assign_view *view;
	char **live, **dead; /* sorted names of the last view read */
	size_t nlive, ndead;

	uint64_t *sent; /* the sent cache: hashes, direct-mapped */
	size_t sent_mask;
	struct cl_dest *dests;
	size_t ndests;
	struct cl_list queued, retry;
	size_t ninflight;
	size_t unsent;

	bool read_busy, claim_own, no_reads;
	unsigned poll_idle_ms; /* the next idle poll's delay (0: read at once) */
	char claim_cursor[CL_ID_MAX];
	struct cl_entry *in_head, *in_tail;
	size_t filtering;
	char (*acks)[CL_ID_MAX];
	size_t nacks, acks_cap, unacked;
	struct cluster_url *urls; /* scratch of a delivery */
	size_t urls_cap;
	int drains; /* dead-inbox commands in flight */
	bool drain_found;
	uint64_t lines_malformed; /* entry lines no agent writes, skipped */

	struct cluster_stats st;
};

/* The script's hash and body (cluster_scripts.c). */
const struct router_script *cl_script(enum cl_script_id id);
/* EVALSHA of script id for slot: argv are NUL-terminated strings
 * (numkeys, keys, args). A router_err. */
int cl_eval(struct cluster *c, enum cl_script_id id, unsigned slot, unsigned flags,
            router_reply_fn *fn, void *priv, int argc, const char **argv);
/* cl_eval with a heap copy of req[0..size) as the reply's state, which fn
 * frees; freed here when the send fails. A cluster_err. */
int cl_eval_copy(struct cluster *c, enum cl_script_id id, unsigned slot, unsigned flags,
                 router_reply_fn *fn, const void *req, size_t size, int argc, const char **argv);
/* The key "{P:KIND:WHAT}SUFFIX" into key (CL_KEY_MAX bytes): its slot. */
unsigned cl_key(const struct cluster *c, const char *kind, const char *what, const char *suffix,
                char *key);
/* The crawl's slot can take a command now. */
bool cl_crawl_up(const struct cluster *c);
void cl_fail(struct cluster *c, const char *what, const redisReply *r);
/* r is an array of exactly n integers, each at least min. */
bool cl_reply_ints(const redisReply *r, size_t n, long long min);
/* The field "u" or "r" of an entry [id, [field, value, ...]], or NULL;
 * *raw tells which. */
const redisReply *cl_entry_lines(const redisReply *e, bool *raw);
/* Splits NUL-terminated lines into c->urls (pointing into text): the
 * count, or -1 when out of memory. */
long cl_lines_parse(struct cluster *c, char *text);
/* Appends a line to b: CLUSTER_OK or CLUSTER_ENOMEM. */
int cl_batch_append(struct cl_batch *b, const char *url, const char *via, unsigned depth);

/* cluster_exchange.c, driven by cluster.c. */
void cl_exchange_on_join(struct cluster *c);
void cl_exchange_on_fence(struct cluster *c);
void cl_exchange_tick(struct cluster *c);
void cl_exchange_free(struct cluster *c);
void cl_read_timer_cb(uv_timer_t *t);
void cl_flush_timer_cb(uv_timer_t *t);
/* cluster_drain.c: one pass over a dead agent's inbox whose heir this is. */
void cl_drain_dead(struct cluster *c);

#endif
