/*
 * cluster.h: the Redis coordination layer of a distributed crawl: which
 * agents are alive, and the URLs they hand each other.
 *
 * A crawl is named by a key prefix P in one Redis server; its agents share
 * nothing else. Keys (NAME an agent's name, INC an incarnation number):
 *   P:config        string, the assignment method ("consistent"), SET NX by
 *                   the first agent; an agent with another method is refused
 *   P:incarnation   counter; INCR gives each (re)join a new incarnation
 *   P:members       hash NAME -> INC of its latest incarnation (never
 *                   shrinks: a dead agent stays, for cluster-status)
 *   P:lease:NAME    string INC with a PX TTL of the lease period, renewed
 *                   every period / 3 with SET XX GET (a renewal that finds
 *                   no key, or another incarnation's, fails); an agent is
 *                   alive exactly while its lease key exists
 *   P:inbox:NAME    stream of URL batches for NAME; consumer group "g",
 *                   consumer INC; an entry has one field "u" holding lines
 *                   "URL \t VIA \t DEPTH \n"
 *   P:stats:NAME    hash pages, requests, bytes, incarnation, lease_ms
 *   P:ip:ADDR       string NAME with a PX TTL: the per-IP politeness lease
 *   P:seen          set of every URL sent with dedup on: a batch is sent by
 *                   a script that SADDs each URL and XADDs only the new
 *                   ones, atomically, so a URL enters one inbox once for the
 *                   whole crawl, whoever owns its host then
 *   P:budget        counter of pages reserved crawl-wide (crawl.max_pages):
 *                   never above the limit the reservations name
 *
 * Membership. The view is the set of agents whose lease key exists; it is
 * read every period / 3 (HGETALL members, then MGET of their leases) and
 * kept as an assign_view (crawler/cluster/assign.h) of the crawl's method:
 * cluster_owner() answers from it. on_view runs when the set changes.
 *
 * Fencing. An agent counts its lease from the moment it SENT its last
 * successful renewal (the key's TTL started no earlier), on its own
 * monotonic clock, and fences itself (on_fenced; no more deliveries) once
 * TTL - TTL / 4 have passed without one: before Redis can expire the key,
 * hence before anyone else can see it dead and take its hosts. A fenced
 * agent rejoins as a new incarnation as soon as its old key is gone.
 * Clock rates must agree within 25% over one TTL, which they do.
 *
 * URL exchange. cluster_send() appends a URL to the batch of its owner;
 * a batch is XADDed when it holds CLUSTER_BATCH_URLS URLs or
 * flush_delay_ms after its first URL. A batch stays in memory until Redis
 * answers its XADD; when the connection fails it is sent again, in order,
 * after reconnecting (so a Redis restart loses nothing once its AOF holds
 * the entry). An agent reads its inbox with XREADGROUP (polled: at once
 * after a non-empty read, every poll_ms otherwise), hands each entry to
 * on_urls and remembers its ID; cluster_ack() XACKs every entry handed
 * out so far. Bound on re-delivery: the entries handed out since the last
 * cluster_ack() (at most max_unacked URLs: reads stop there) come again,
 * to this agent's next incarnation or to its heir, if it dies or fences
 * itself before acking. Order: per (sender, receiver) entries arrive in
 * sending order, except across a re-delivery.
 *
 * A dead agent's inbox. The heir of a dead agent D is
 * assign_view_owner(view, D's name) among the live agents (every agent
 * computes the same). While D is dead, its heir drains P:inbox:D each view
 * poll: XAUTOCLAIM entries idle for over one lease period (those D read
 * but never acked: D fenced itself before its lease lapsed, so it no
 * longer handles them), then XREADGROUP the unread ones, and re-routes
 * each URL to its owner in the current view (the heir itself included) in
 * one MULTI { XADD to each owner's inbox; XACK on D's inbox } EXEC, so an
 * entry is moved exactly once. When D rejoins it first XAUTOCLAIMs its own
 * pending entries (min idle 0) from its earlier incarnations.
 *
 * Delivery is at least once: a URL comes twice when an XADD's reply or
 * an XACK is lost with the connection (the batch is sent again; entries
 * handed out are claimed again on reconnecting), or when a dead agent
 * rejoins while its heir drains its inbox; the receiver's sieve drops the
 * copies. Nothing is lost as long as Redis keeps what it acknowledged:
 * run it with appendonly yes and appendfsync always (with everysec Redis
 * may postpone the AOF write of acknowledged entries while an fsync is
 * slow, and a crash of Redis then loses them).
 *
 * Per-IP politeness. P:ip:ADDR names the one agent that may contact ADDR
 * (an IP politeness group's key, ipaddr.h) until the key expires.
 * cluster_ip_lease() takes it in one script (one round trip, atomic) when
 * it is free or already this agent's, raising its TTL to the one asked;
 * else it answers the holder's time left. cluster_ip_release() shortens
 * this agent's lease to the delay that must follow a request (fire and
 * forget; nothing if another agent holds the key by then). A holder that
 * dies keeps the IP for the rest of the TTL it last set, and no longer:
 * the caller's TTL is the bound.
 *
 * Threads: everything runs on the loop given to cluster_create(), from its
 * thread only, and never blocks: every Redis call is asynchronous (hiredis
 * with its libuv adapter, one connection). Redis unreachable: commands
 * wait in memory and the connection is retried every CLUSTER_RETRY_MS;
 * nothing is dropped, and the lease runs out only if the outage outlasts
 * the fencing deadline.
 *
 * Memory: the unsent batches (capped by max_unsent URLs: cluster_send()
 * answers CLUSTER_FULL beyond), the IDs handed out and not acked, and one
 * reply being parsed.
 */
#ifndef CRAWLER_CLUSTER_CLUSTER_H
#define CRAWLER_CLUSTER_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "crawler/cluster/assign.h"

/* URLs per XADDed batch. */
#define CLUSTER_BATCH_URLS 256
/* Delay between two attempts to connect to Redis. */
#define CLUSTER_RETRY_MS 100
/* Longest crawl prefix, in bytes. */
#define CLUSTER_PREFIX_MAX 200

enum cluster_err {
	CLUSTER_OK = 0,      /* success */
	CLUSTER_ENOMEM = 1,  /* allocation failed */
	CLUSTER_EINVAL = 2,  /* bad argument: URL, name, prefix, period, or a URL
	                      * holding a tab or a newline */
	CLUSTER_ECONFIG = 3, /* the crawl exists with another assignment method */
	CLUSTER_EREDIS = 4,  /* Redis answered with an error */
	CLUSTER_FULL = 5,    /* not an error: max_unsent URLs are waiting to
	                      * be sent; retry after the exchange drains */
	CLUSTER_EDOWN = 6,   /* not an error: not connected to Redis now */
	CLUSTER_EUV = 7,     /* a libuv call failed */
};

/* Static description of a cluster_err value. */
const char *cluster_strerror(int err);

/* A URL received from another agent; the strings live until on_urls returns. */
struct cluster_url {
	const char *url;
	const char *via;
	unsigned depth;
};

struct cluster;

struct cluster_callbacks {
	/* The set of live agents changed: re-evaluate which hosts are ours. */
	void (*on_view)(struct cluster *c, void *arg);
	/* n URLs from one inbox entry; call cluster_ack() once they are taken. */
	void (*on_urls)(struct cluster *c, const struct cluster_url *urls, size_t n, void *arg);
	/* The lease may lapse: stop fetching now. The agent rejoins by itself
	 * (on_view follows with it live again). */
	void (*on_fenced)(struct cluster *c, void *arg);
	/* A fatal error (CLUSTER_ECONFIG): the agent stopped and will not rejoin. */
	void (*on_error)(struct cluster *c, int err, void *arg);
	void *arg;
};

struct cluster_options {
	const char *url;           /* redis://HOST:PORT[/PREFIX] (prefix "crawl") */
	const char *name;          /* this agent's name (assign.h's rules) */
	enum assign_method method; /* refused if the crawl has another one */
	unsigned lease_ms;         /* lease TTL, at least 30 */
	unsigned flush_delay_ms;   /* a batch waits at most this; 0: 10 */
	unsigned poll_ms;          /* idle inbox poll; 0: 20 */
	size_t max_unsent;         /* cap of URLs not yet in Redis; 0: 100000 */
	size_t max_unacked;        /* cap of URLs handed out, not acked; 0: 10000 */
	bool dedup;                /* cluster_send() drops URLs sent before (P:seen) */
};

/* Parses redis://HOST:PORT[/PREFIX] into host (size hostsz), *port and
 * prefix (CLUSTER_PREFIX_MAX + 1 bytes): CLUSTER_OK or CLUSTER_EINVAL. */
int cluster_url_parse(const char *url, char *host, size_t hostsz, int *port, char *prefix);

/*
 * Creates the agent on loop and starts joining (connecting is asynchronous:
 * failures to reach Redis are retried, never reported). Copies the options'
 * strings. *out is NULL on error: CLUSTER_EINVAL, CLUSTER_ENOMEM, CLUSTER_EUV.
 */
int cluster_create(uv_loop_t *loop, const struct cluster_options *opt,
                   const struct cluster_callbacks *cb, struct cluster **out);
/*
 * Stops the agent without leaving: its lease runs out as if it had
 * crashed. Unsent batches are dropped. No callback runs after this; the
 * memory is freed once the loop has run the handles' close callbacks.
 * NULL is a no-op.
 */
void cluster_destroy(struct cluster *c);

/* This agent's name, and its incarnation (0 before the first join). */
const char *cluster_name(const struct cluster *c);
/* Lines of inbox entries (this agent's, or a dead one's it re-routed)
 * skipped as no agent writes them: no two tabs, or a depth word that is
 * not a 32-bit decimal number. */
uint64_t cluster_lines_malformed(const struct cluster *c);
uint64_t cluster_incarnation(const struct cluster *c);
/* True while the agent holds its lease (joined, not fenced). */
bool cluster_is_live(const struct cluster *c);
/* Live agents in the last view read, and the view itself (valid until the
 * next on_view). */
size_t cluster_view_size(const struct cluster *c);
const struct assign_view *cluster_view(const struct cluster *c);
/* The owner of a host in the current view (assign_view_owner), or NULL. */
const char *cluster_owner(const struct cluster *c, const char *host, size_t len);

/*
 * Queues a URL for agent owner (url and via copied; neither may hold a tab
 * or a newline). CLUSTER_OK, CLUSTER_FULL (max_unsent reached: not queued),
 * CLUSTER_EINVAL or CLUSTER_ENOMEM.
 */
int cluster_send(struct cluster *c, const char *owner, const char *url, const char *via,
                 unsigned depth);
/* The same, never deduplicated: a URL handed over to a new owner (it is
 * in P:seen already). */
int cluster_send_raw(struct cluster *c, const char *owner, const char *url, const char *via,
                     unsigned depth);
/* Sends every partial batch now. */
void cluster_flush(struct cluster *c);
/* URLs queued by cluster_send() that Redis has not yet stored: a checkpoint
 * that must not lose discovered URLs waits for 0 (after cluster_flush()). */
size_t cluster_unsent(const struct cluster *c);
/* XACKs every entry handed to on_urls so far: call once the URLs are
 * durably taken. If nothing is pending then, the inbox is trimmed below
 * the last entry acked (XTRIM MINID): it holds what is queued. */
void cluster_ack(struct cluster *c);
/* URLs handed to on_urls and not acked yet. */
size_t cluster_unacked(const struct cluster *c);
/* Reads no more of the inbox (a graceful stop): what is unread stays for
 * the heir. */
void cluster_stop_reading(struct cluster *c);
/* A graceful stop: reads stop, the lease key is deleted (the others see
 * this agent gone at their next view poll; its heir drains what is left in
 * its inbox) and the agent never rejoins. done runs once Redis has done it
 * (and every command sent before, acks included). CLUSTER_OK, or
 * CLUSTER_EDOWN (not live or not connected) / CLUSTER_ENOMEM. */
int cluster_leave(struct cluster *c, void (*done)(void *arg), void *arg);

/* Publishes this agent's counters to P:stats:NAME (fire and forget). */
void cluster_publish_stats(struct cluster *c, uint64_t pages, uint64_t requests, uint64_t bytes);
/* Publishes whether this agent holds no work (field idle of P:stats:NAME):
 * nothing queued, in flight or unsent, and every entry read acked. */
void cluster_publish_idle(struct cluster *c, bool idle);

/* The whole crawl as one script reads it, atomically: busy counts the live
 * agents not idle plus the inboxes (of live and dead agents) holding
 * unread or pending entries; pages sums every agent's published pages. */
struct cluster_census {
	uint64_t busy, pages, alive;
};
/*
 * Reads the census; done runs later, once, with ok false if Redis did not
 * answer. CLUSTER_OK, or CLUSTER_EDOWN / CLUSTER_ENOMEM and then done never
 * runs. The crawl is over when busy is 0: every URL not yet fetched is in
 * an entry unread or not acked (acks follow fetches), or in the unsent
 * memory of an agent that is not idle.
 */
int cluster_census(struct cluster *c,
                   void (*done)(void *arg, bool ok, const struct cluster_census *s), void *arg);

/*
 * Reserves up to want pages of a crawl-wide budget of max pages (P:budget,
 * want 0: only reads it). done runs later, once: ok false if Redis did not
 * answer (a reservation whose reply is lost with the connection may have
 * been made: those pages are lost to the crawl), else granted (want, or
 * what is left below max) and reserved, the pages reserved crawl-wide
 * after this grant (max: the budget is spent). CLUSTER_OK, or
 * CLUSTER_EDOWN / CLUSTER_ENOMEM / CLUSTER_EINVAL (max 0) and then done
 * never runs.
 */
int cluster_budget_reserve(struct cluster *c, uint64_t max, uint64_t want,
                           void (*done)(void *arg, bool ok, uint64_t granted, uint64_t reserved),
                           void *arg);
/* Gives n reserved pages that will not be started back to P:budget (fire
 * and forget: Redis runs it before any later command of this agent).
 * CLUSTER_OK or CLUSTER_EDOWN. */
int cluster_budget_give_back(struct cluster *c, uint64_t n);

/* The live agents' names of the last view read, sorted (valid until the
 * next on_view). */
const char *const *cluster_live_names(const struct cluster *c, size_t *n);
/* The host part of URL url (after the scheme and any userinfo, up to the
 * port or path): *len bytes at the returned address. */
const char *cluster_url_host(const char *url, size_t *len);

/*
 * Asks for the lease of IP address addr (text: an IP group's key) for
 * delay_ms: granted when no agent holds it or this one does (the TTL is
 * then at least delay_ms from now). done runs later, once, with granted
 * and wait_ms: 0 when granted; when refused, the time left on the holder's
 * lease (>= 0);
 * -1 when Redis did not answer (the connection failed, or an error).
 * Returns CLUSTER_OK, or CLUSTER_EDOWN / CLUSTER_ENOMEM / CLUSTER_EINVAL
 * and then done never runs.
 */
int cluster_ip_lease(struct cluster *c, const char *addr, unsigned delay_ms,
                     void (*done)(void *arg, bool granted, long wait_ms), void *arg);
/*
 * Sets the TTL of addr's lease to delay_ms from now if this agent holds it
 * (the delay after a request ended). Fire and forget: CLUSTER_OK (sent),
 * CLUSTER_EDOWN or CLUSTER_EINVAL.
 */
int cluster_ip_release(struct cluster *c, const char *addr, unsigned delay_ms);

#endif
