/*
 * crawl_cluster.h: a crawl as one agent of several (crawler crawl
 * --cluster), on the fetch loop: the glue between the Redis layer
 * (crawler/cluster/cluster.h) and the crawl's frontier and sieve path.
 *
 * Where URLs go. Every URL this agent finds (seeds, links, redirect
 * targets) leaves through the sieve path's outbox and is sent to the inbox
 * of its host's owner in the current view, this agent included; only what
 * comes out of this agent's own inbox enters its sieve, so its sieve and
 * frontier hold only URLs that are also in an inbox entry it has not acked.
 * A host popped for a visit that another agent owns now (the view changed)
 * is handed over: its queued URLs are sent to the owner. This agent's sieve
 * has seen them, so if one comes back (the host returns when that owner
 * dies, its unacked entries re-routed) it goes straight to the frontier:
 * the agent keeps the 64-bit hashes of the URLs it handed over, and takes
 * each such URL once that way.
 *
 * Acks and what a crash loses. Inbox entries are acked only when this
 * agent is idle: its frontier empty, nothing in flight or parsed, the
 * sieve flushed with nothing new, nothing in the outbox or unsent (so the
 * XADDs of everything found went before the XACK on the one connection).
 * Reads stop once cluster.window URLs are unacked, so an agent works in
 * rounds of at most window URLs. A killed agent's unacked entries go to
 * its heir, which re-routes them to their owners: nothing it had taken and
 * not fetched is lost, and at most the window (plus what was in flight) is
 * fetched again from them.
 *
 * A graceful stop (SIGINT, --max-time) hands everything over first
 * (crawl_cluster_leave).
 *
 * Politeness across agents. One owner per host at a time; an agent that
 * gains hosts (it joined, or an agent left) sends no request for one view
 * poll (lease / 3) plus one host delay, so the old owner has both noticed
 * and rested. Fenced (the lease may lapse): no request until it is live
 * again.
 * Per IP, when the policy's IP delay is above 0: a request goes only
 * under its address's lease in Redis (P:ip:ADDR, cluster.h), taken for
 * the IP delay + [fetch] timeout_ms + VISIT_LEASE_MARGIN_MS and shortened
 * to the IP delay once the response is in (visit.h). So no two agents'
 * requests to one IP (an IPv6 /64) come closer than the IP delay, and an
 * agent that dies holding a lease blocks that IP for at most that TTL.
 *
 * The end. Each agent publishes idle (above) and pages; once a second it
 * reads the census (cluster_census): when no agent is busy and no inbox
 * holds an unread or pending entry, twice in a row, the crawl is over and
 * every agent ends by itself.
 *
 * The page budget. crawl.max_pages is the whole crawl's: P:budget counts
 * the pages reserved crawl-wide, and an agent starts a page (a request
 * pages_started counts, as in a single crawl) only within its quota, the
 * pages it reserved. It reserves a chunk (a tenth of a second of its own
 * page rate, 8 to 64 pages) by a script that grants what is left below
 * the limit (its own max_pages: give every agent the same),
 * asynchronously, as soon as it has hosts waiting and half a chunk or
 * less left, so it holds at most a chunk and a half (96 pages) unused;
 * an agent with nothing to fetch asks for nothing, and reads the counter
 * once a second. Once the counter is at the limit (spent), an agent ends
 * as a single crawl ends on max_pages (exit 0) when it has started all it
 * reserved, or when it is idle. A graceful stop gives back what it
 * reserved and did not start. A resumed agent counts the pages of its
 * earlier run (its checkpoint's and the replayed tail's) as reserved by
 * that run; a page in flight at the crash is started again on a new
 * reservation. So the pages started crawl-wide, repeats included, never
 * exceed max_pages; they fall short of it by what agents reserved and
 * never started: the quota of an agent that ended idle or crashed, a
 * reservation whose reply was lost with the connection, and what a
 * graceful stop gave back after the others had ended.
 *
 * Memory: the hashes of the URLs handed over (8 bytes each), the outbox
 * lines that could not be sent yet (Redis away, or cluster max_unsent
 * reached) and the inbox entries waiting for room in the feed queue (at
 * most window URLs).
 */
#ifndef CRAWLER_CRAWL_CLUSTER_H
#define CRAWLER_CRAWL_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "crawler/visit.h"

struct crawl_cluster_config;
struct politeness_config;
struct frontier;
struct politeness;
struct sieve_path;
struct crawl_stats_pages;

struct crawl_cluster;

struct crawl_cluster_parts {
	const struct crawl_cluster_config *cluster; /* [cluster] */
	const struct politeness_config *politeness; /* its delays: the wait after gaining hosts */
	uint64_t max_pages;                         /* [crawl] max_pages: the crawl-wide budget */
	uv_loop_t *loop;
	struct frontier *frontier;
	struct politeness *pol;
	struct sieve_path *sp;
	void *ctx;
	/* the pages the crawl has started, its earlier runs' included */
	uint64_t (*pages_started)(void *ctx);
	void (*pump)(void *ctx);                /* work for the loop arrived */
	void (*fail)(void *ctx, int exit_code); /* the agent cannot go on */
	/* a URL straight into the frontier (crawl_run's take of an emit): 0,
	 * or -1 not now */
	int (*take)(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
	            uint32_t depth);
};

/* Joins the crawl of parts->cluster (joining goes on in the
 * background). A crawl exit code; *out NULL on error. */
int crawl_cluster_create(const struct crawl_cluster_parts *parts, struct crawl_cluster **out);
/* Stops without leaving (the lease lapses). NULL is a no-op. */
void crawl_cluster_destroy(struct crawl_cluster *g);

/* 1 if requests may start now: live, and past the wait after gaining
 * hosts. */
int crawl_cluster_ready(struct crawl_cluster *g);
/* 1 if one more page may start: no page budget, or some of what this
 * agent reserved is left (the visit's page_allowed hook). */
int crawl_cluster_page_allowed(const struct crawl_cluster *g);
/* A host popped for a visit: 1 if it is ours; else its URLs went to its
 * owner and the host was given back (0), or some could not be sent yet
 * and stay queued (-1: pop no more hosts in this pump). */
int crawl_cluster_keep_host(struct crawl_cluster *g, uint32_t host);
/* Sends the outbox to the owners and feeds waiting inbox entries to the
 * sieve: every pump. */
void crawl_cluster_pump(struct crawl_cluster *g);
/* The end check: dry is sieve_path_dry's answer (1: the loop is idle and
 * a flush found nothing new). Acks and publishes idle when idle; 1 once
 * the whole crawl is over. */
int crawl_cluster_done(struct crawl_cluster *g, int dry);
/* A graceful stop, called while stopping: once the loop is idle (nothing
 * in flight, held or parsed), reads stop, the sieve is flushed, every URL
 * queued, waiting in the inbox or found goes to its owner among the other
 * agents, and once Redis holds them all the entries taken are acked and
 * the lease deleted; 1 then (or at once when no other agent is live). So
 * no URL this agent fetched is fetched again. */
int crawl_cluster_leave(struct crawl_cluster *g, int loop_idle);
/* 1 while a graceful stop hands over (nothing in flight then), for at most
 * CRAWL_CLUSTER_LEAVE_MS: past that the agent ends as if it had crashed
 * (its heir gets what it had not acked). */
int crawl_cluster_leaving(struct crawl_cluster *g);
#define CRAWL_CLUSTER_LEAVE_MS 30000
/* The visit's per-IP lease hooks (visit.h) for a crawl of cfg: none when
 * it is no cluster crawl; else cluster_ip_lease and cluster_ip_release on
 * the agent *slot holds, once it is created (until then every lease is
 * refused as unconnected). */
struct visit_lease_hooks crawl_cluster_lease_hooks(const struct crawl_cluster_config *cfg,
                                                   struct crawl_cluster **slot);
/* Once a second: publishes the counters, reads the census, sizes the
 * page budget's chunk. */
void crawl_cluster_tick(struct crawl_cluster *g, const struct crawl_stats_pages *pages);
/* 1 once crawl.max_pages is reached crawl-wide: the budget is spent and
 * this agent has started every page it reserved (the crawl then ends
 * here as a single crawl ends on max_pages). */
int crawl_cluster_budget_over(const struct crawl_cluster *g);
/* The progress line's part: agents alive, pages of all agents. */
void crawl_cluster_progress(const struct crawl_cluster *g, char *buf, size_t cap);

#endif
