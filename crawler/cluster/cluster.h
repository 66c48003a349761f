/*
 * cluster.h: the Redis coordination layer of a distributed crawl: which
 * agents are alive, the URLs they hand each other, per-IP leases, the
 * page budget and the URL rules steered into any agent.
 *
 * A crawl is named by a key prefix P on one Redis server or one Redis
 * Cluster (router.h routes every command by its key's hash slot; one
 * Redis is a cluster of one node to this layer). Its agents share nothing
 * else. Keys, by hash tag (every script touches keys of one slot only):
 *   {P}: the crawl's slot, membership and totals (small)
 *     {P}:config       string, the assignment method ("consistent"), SET
 *                      NX by the first agent; an agent with another
 *                      method is refused
 *     {P}:incarnation  counter; INCR gives each (re)join a new incarnation
 *     {P}:members      hash NAME -> INC of its latest incarnation (never
 *                      shrinks: a dead agent stays, for cluster-status)
 *     {P}:alive        zset NAME -> when its lease ends (Redis time, ms),
 *                      renewed every lease period / 3 by a script that
 *                      checks the incarnation; an agent is alive exactly
 *                      while that time is ahead
 *     {P}:idle         zset of the live agents holding no work, same
 *                      scores
 *     {P}:ver          counter moved by every join and leave
 *     {P}:epoch        counter moved by every ack, idle change, join and
 *                      leave (the census, below)
 *     {P}:census       "EPOCH BUSY", the leader's last scan of the inboxes
 *     {P}:stats:NAME   hash pages, requests, bytes, incarnation, lease_ms,
 *                      idle
 *     {P}:pages        the sum of the agents' pages
 *     {P}:budget       counter of pages reserved crawl-wide
 *                      (crawl.max_pages): never above the limit the
 *                      reservations name
 *     {P}:deadline     when the crawl ends (Redis time, ms;
 *                      crawl.max_time_ms), set by the first agent that
 *                      asks and kept: agents joining later, resumed ones
 *                      included, stop at the same time
 *     {P}:rules        list of the URL rules steered into any agent
 *                      (cluster_rules_push), in the order Redis took
 *                      them; only ever grows: an entry's index names it
 *   {P:a:NAME}:inbox   stream of URL batches for NAME; consumer group "g",
 *                      consumer INC; an entry has one field, "u" (to be
 *                      deduplicated) or "r" (raw), holding lines
 *                      "URL \t VIA \t DEPTH \n"
 *   {P:s:B}            set of the URLs seen whose XXH3-64 is B mod
 *                      CLUSTER_SEEN_BUCKETS: the crawl-wide seen set, in
 *                      buckets spread over the masters
 *   {P:ip:ADDR}        string NAME with a PX TTL: the per-IP politeness
 *                      lease; with {P:ip:ADDR}:q and :d, its waiters
 * So the load spreads by agent (inboxes), by URL (seen) and by IP (leases)
 * over every master; the crawl's slot carries membership only.
 *
 * Membership. The view is the set of agents whose lease runs. A script
 * reads it every period / 3 and answers in O(log n) when nothing changed
 * (no join, no leave, no lease lapsed since the last read), else the live
 * and dead names; it is kept as an assign_view (crawler/cluster/assign.h)
 * of the crawl's method: cluster_owner() answers from it. on_view runs
 * when the set changes.
 *
 * Fencing. An agent counts its lease from the moment it SENT its last
 * successful renewal (Redis set the end no earlier), on its own monotonic
 * clock, and fences itself (on_fenced; no more deliveries) once TTL - TTL
 * / 4 have passed without one: before Redis can let the lease lapse, hence
 * before anyone else can see it dead and take its hosts. A fenced agent
 * rejoins as a new incarnation as soon as its old lease has lapsed. Clock
 * rates must agree within 25% over one TTL, which they do.
 *
 * URL exchange. cluster_send() drops a URL this agent sent before (a
 * direct-mapped table of sent_cache 64-bit hashes: what Redis has seen
 * already) and appends the others to the batch of their owner; a batch is
 * XADDed when it holds CLUSTER_BATCH_URLS URLs or flush_delay_ms after its
 * first URL, as a durable write (router.h: answered once a replica holds
 * it). A batch stays in memory until Redis answers its XADD; when the
 * connection fails it is sent again, in order. An agent reads its inbox
 * with a durable XREADGROUP (its URLs reach the seen set only once a
 * replica holds the read: a failover that forgot the read would hand the
 * entries out again as unread, their URLs already seen), polled: at once
 * after a non-empty read; after an empty one poll_ms, doubled at each
 * empty read up to CLUSTER_POLL_IDLE_MAX times poll_ms. Each URL of a "u"
 * entry is SADDed to its seen bucket, and only those new to the crawl
 * are handed to on_urls (a URL whose SADD got no answer counts as new);
 * "r" entries, and every entry claimed again (below), go whole. Entries
 * are handed out in the order read. Deduplicating at the receiver keeps
 * the check and the delivery safe apart: a URL in the seen set is in an
 * entry that stays pending until acked, and a pending entry comes again
 * raw. cluster_ack() XACKs every entry handed out so far,
 * after moving the epoch. Bound on re-delivery: the entries handed out
 * since the last cluster_ack() (at most max_unacked URLs: reads stop there)
 * come again, to this agent's next incarnation or to its heir, if it dies
 * or fences itself before acking. Order: per (sender, receiver) entries
 * arrive in sending order, except across a re-delivery.
 *
 * A dead agent's inbox. The heir of a dead agent D is
 * assign_view_owner(view, D's name) among the live agents (every agent
 * computes the same). While D is dead, its heir drains D's inbox each view
 * poll: XAUTOCLAIM entries idle for over one lease period (those D read
 * but never acked: D fenced itself before its lease lapsed, so it no
 * longer handles them; they go on raw), then XREADGROUP the unread ones
 * (they keep their field), and re-routes each URL to its owner in the
 * current view (the heir itself included): durable XADDs to the owners'
 * inboxes, then the epoch moves, then the XACK on D's inbox; a failure
 * before the XACK leaves the entries to the next pass (moved twice: the
 * receivers' sieves drop the copies). When D rejoins it first XAUTOCLAIMs
 * its own pending entries (min idle 0) from its earlier incarnations; it
 * does so again after any inbox command got no answer.
 *
 * Delivery is at least once: a URL comes twice when an XADD's reply or an
 * XACK is lost with the connection (the batch is sent again; entries
 * handed out are claimed again), or when a dead agent rejoins while its
 * heir drains its inbox; the receiver's sieve drops the copies. Nothing is
 * lost as long as Redis keeps what it acknowledged: with a replica
 * online, a master killed loses no XADD and no read (durable commands;
 * a master with none online takes them alone, router.h); one Redis alone
 * must run with appendonly yes and appendfsync always (with everysec
 * Redis may postpone the AOF write of acknowledged entries while an
 * fsync is slow, and a crash of Redis then loses them).
 *
 * The census (the crawl's end). The crawl is over when no live agent is
 * busy and no inbox (of a live or a dead agent) holds an unread or pending
 * entry. Inboxes live on many masters, so no script reads them at once;
 * instead, the leader (the first live name) scans them one by one and
 * keeps the count if the epoch did not move during the scan: work moves
 * between inboxes only through an entry acked after the epoch moved (its
 * consequences XADDed before), and an agent's idle flag moves the epoch
 * too, so a scan during which the epoch stood still saw every piece of
 * work somewhere. The others read the leader's count, valid while the
 * epoch still stands, in O(log n).
 *
 * Per-IP politeness. {P:ip:ADDR} names the one agent that may contact ADDR
 * (an IP politeness group's key, ipaddr.h) until it expires.
 * cluster_ip_lease() takes it in one script when it is free or already
 * this agent's, raising its TTL to the one asked; else it answers the
 * holder's time left. Agents take turns: an agent refused becomes a waiter
 * (as long as it asks again in time: within the wait told or
 * ip_patience_ms, + CLUSTER_IP_GRACE_MS); while another agent waits the
 * holder is refused too, and the first waiter in order of asking is
 * granted the lease once free. cluster_ip_release()
 * shortens this agent's lease to the delay that must follow a request
 * (fire and forget; nothing if another agent holds it by then). A holder
 * that dies keeps the IP for the rest of the TTL it last set, and no
 * longer: the caller's TTL is the bound.
 *
 * Threads: everything runs on the loop given to cluster_create(), from its
 * thread only, and never blocks: every Redis call is asynchronous
 * (router.h). Redis unreachable: commands are refused or answered with
 * nothing, and retried; nothing is dropped, and the lease runs out only if
 * the outage outlasts the fencing deadline.
 *
 * Memory: the unsent batches (capped by max_unsent URLs: cluster_send()
 * answers CLUSTER_FULL beyond), the sent cache (8 bytes an entry), the
 * entries read and not yet handed out, the IDs handed out and not acked
 * (both within max_unacked URLs), and one reply being parsed. In Redis: a
 * URL seen costs about 90 bytes in its seen bucket; a queued URL about its
 * line's length in its inbox (tests/bench/cluster_scale.sh).
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
/* Buckets of the crawl-wide seen set. */
#define CLUSTER_SEEN_BUCKETS 1024
/* An empty inbox is polled at most every this many poll_ms. */
#define CLUSTER_POLL_IDLE_MAX 8
/* A refused agent stays first in line this long after the lease ends. */
#define CLUSTER_IP_GRACE_MS 100
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
	unsigned flush_delay_ms;   /* a batch waits at most this; 0: 50 */
	unsigned poll_ms;          /* idle inbox poll; 0: 20 */
	size_t max_unsent;         /* cap of URLs not yet in Redis; 0: 100000 */
	size_t max_unacked;        /* cap of URLs handed out, not acked; 0: 10000 */
	bool dedup;                /* cluster_send() drops URLs sent before (seen) */
	size_t sent_cache;         /* entries of the sent cache (a power of two);
	                            * 0: 262144 (2 MiB) */
	unsigned batch_ms;         /* Redis commands wait at most this to share a
	                            * write (router.h); 0: 5 */
	unsigned ip_patience_ms;   /* refused an IP lease, the caller asks again
	                            * within this (its IP delay); 0: 1000 */
};

/* Counters of this agent's Redis layer. */
struct cluster_stats {
	uint64_t sent;         /* URLs queued for an inbox */
	uint64_t sent_cached;  /* URLs cluster_send() dropped: sent before */
	uint64_t received;     /* URLs handed to on_urls */
	uint64_t seen_dropped; /* URLs of "u" entries the seen set knew */
	uint64_t rerouted;     /* URLs moved from dead agents' inboxes */
	/* the router's (router.h) */
	uint64_t moved, asked, retried, refreshes, dropped, waits, wait_timeouts, unreplicated;
	size_t nodes; /* masters in the map */
	bool cluster; /* a Redis Cluster (else one Redis) */
};

/* Parses redis://HOST:PORT[/PREFIX] into host (size hostsz), *port and
 * prefix (CLUSTER_PREFIX_MAX + 1 bytes; no space, control character or
 * brace: braces are hash tags): CLUSTER_OK or CLUSTER_EINVAL. */
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
 * in the seen set already). */
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
/* URLs handed to on_urls and not acked yet (an entry read whose URLs were
 * all seen before counts one). */
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

/* Publishes this agent's counters to {P}:stats:NAME (fire and forget). */
void cluster_publish_stats(struct cluster *c, uint64_t pages, uint64_t requests, uint64_t bytes);
/* Publishes whether this agent holds no work ({P}:idle):
 * nothing queued, in flight or unsent, and every entry read acked. */
void cluster_publish_idle(struct cluster *c, bool idle);

/* The whole crawl as the census reads it (above): busy counts the live
 * agents not idle plus the inboxes (of live and dead agents) holding
 * unread or pending entries (at least 1 while the leader has no valid
 * count); pages sums every agent's published pages. */
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
 * Reserves up to want pages of a crawl-wide budget of max pages ({P}:budget,
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
/* Gives n reserved pages that will not be started back to {P}:budget (fire
 * and forget: Redis runs it before any later command of this agent).
 * CLUSTER_OK or CLUSTER_EDOWN. */
int cluster_budget_give_back(struct cluster *c, uint64_t n);

/*
 * The crawl's deadline: the first call crawl-wide sets it max_ms from now
 * (Redis's clock), later ones read it. done runs later, once: ok false if
 * Redis did not answer, else left_ms, the time left (negative: past).
 * CLUSTER_OK, or CLUSTER_EDOWN / CLUSTER_ENOMEM / CLUSTER_EINVAL (max_ms 0)
 * and then done never runs.
 */
int cluster_deadline(struct cluster *c, uint64_t max_ms,
                     void (*done)(void *arg, bool ok, int64_t left_ms), void *arg);

/*
 * The crawl's shared URL rules ({P}:rules). An entry is the text
 * "rules 1 \t ORIGIN \t SOURCE \n" and then the rules' lines: who steered
 * them in (an agent's name) and how ("POST /rules", an action file's
 * name), for each agent's messages and rules.txt. Whoever can write to
 * Redis can write one, so a reader decodes each (and checks the rules as
 * if steered in itself).
 */
#define CLUSTER_RULE_TEXT_MAX (1024u * 1024u) /* an entry's rules, at most */
#define CLUSTER_RULE_SOURCE_MAX 100           /* its SOURCE, at most */
#define CLUSTER_RULES_READ 8                  /* entries read at a time */

struct cluster_rule_entry {
	const char *origin, *source, *text; /* in the entry, not NUL-terminated */
	size_t origin_len, source_len, text_len;
};
/* The entry (malloc'ed, NUL-terminated; *out_len its length) of text[len]
 * from origin and source, or NULL: out of memory, an empty or too long
 * text (or one holding a NUL), an origin or source empty, too long, or
 * holding a control character. */
char *cluster_rule_entry_encode(const char *origin, const char *source, const char *text,
                                size_t len, size_t *out_len);
/* Its parts (pointing into e): CLUSTER_OK, or CLUSTER_EINVAL for anything
 * encode does not write. */
int cluster_rule_entry_decode(const char *e, size_t len, struct cluster_rule_entry *out);

/* Appends an entry (a durable write); done runs later, once: ok false if
 * Redis did not answer (it may have taken it), else index, the entry's.
 * CLUSTER_OK, or CLUSTER_EDOWN / CLUSTER_ENOMEM / CLUSTER_EINVAL and then
 * done never runs. */
int cluster_rules_push(struct cluster *c, const char *entry, size_t len,
                       void (*done)(void *arg, bool ok, uint64_t index), void *arg);
/* An entry as read: len bytes at s, valid while done runs. */
struct cluster_rule_text {
	const char *s;
	size_t len;
};
/* Reads the entries from index from on, at most CLUSTER_RULES_READ: done
 * runs later, once, with ok false if Redis did not answer, else the n
 * entries (none: nothing new). Return values as cluster_rules_push. */
int cluster_rules_read(struct cluster *c, uint64_t from,
                       void (*done)(void *arg, bool ok, uint64_t from,
                                    const struct cluster_rule_text *e, size_t n),
                       void *arg);

/* This agent's counters so far. */
void cluster_stats(const struct cluster *c, struct cluster_stats *out);

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
