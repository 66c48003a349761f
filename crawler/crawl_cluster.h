/*
 * crawl_cluster.h: a crawl as one agent of several (crawler crawl
 * --cluster), on the fetch loop: the glue between the Redis layer
 * (crawler/cluster/cluster.h) and the crawl's frontier and sieve path,
 * as the crawl's source (crawl_source.h: crawl_source_open picks it when
 * [cluster] redis is set; the loop knows only that interface).
 *
 * Where URLs go. Every URL this agent finds (seeds, links, redirect
 * targets) leaves through the adding thread's link batch into the outbox
 * (lines "URL \t VIA \t DEPTH \n" under a mutex; the pump takes them) and
 * is sent to the inbox of its host's owner in the current view, this agent
 * included; only what comes out of this agent's own inbox enters its
 * sieve, so its sieve and frontier hold only URLs that are also in an
 * inbox entry it has not acked. Whoever can write to Redis can write an
 * entry, so each URL of one is judged again as if found here
 * (parse_jobs_inbound: the same crawl key, the URL rules, the scope and
 * its traps; the depth word clamped), else dropped and counted
 * (stats.json errors.inbox-rejected). A host popped for a visit that another
 * agent owns now (the view changed) is handed over: its queued URLs are
 * sent to the owner. This agent's sieve has seen them, so if one comes
 * back (the host returns when that owner dies, its unacked entries
 * re-routed) it goes straight to the frontier: the agent keeps the 64-bit
 * hashes of the URLs it handed over, and takes each such URL once that
 * way.
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
 * A graceful stop (SIGINT, --max-time) hands everything over first: once
 * the loop is idle (nothing in flight, held or parsed), reads stop, the
 * sieve is flushed, every URL queued, waiting in the inbox or found goes
 * to its owner among the other agents, and once Redis holds them all the
 * entries taken are acked and the lease deleted (at once when no other
 * agent is live). So no URL this agent fetched is fetched again. It takes
 * at most CRAWL_CLUSTER_LEAVE_MS: past that the agent ends as if it had
 * crashed (its heir gets what it had not acked).
 *
 * Politeness across agents. One owner per host at a time (a host the heap
 * hands out that another agent owns now is handed over: its queued URLs
 * go to the owner); an agent that gains hosts (it joined, or an agent
 * left) sends no request for one view poll (lease / 3) plus one host
 * delay, so the old owner has both noticed and rested. Fenced (the lease
 * may lapse): no request until it is live again.
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
 * every agent ends by itself. The progress line shows the agents alive
 * and the pages of all agents.
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
 * reserved and a read made then still finds it spent, or when it is
 * idle. A graceful stop gives back what it reserved and did not start,
 * and the others take it up (spent is read again once a second, and
 * before ending on it). A resumed agent counts the pages of its
 * earlier run (its checkpoint's and the replayed tail's) as reserved by
 * that run; a page in flight at the crash is started again on a new
 * reservation. So the pages started crawl-wide, repeats included, never
 * exceed max_pages; they fall short of it by what agents reserved and
 * never started: the quota of an agent that ended idle or crashed, a
 * reservation whose reply was lost with the connection, and what a
 * graceful stop gave back after the others had ended.
 *
 * The time limit. crawl.max_time_ms is the whole crawl's too: the first
 * agent to join sets {P}:deadline that long after (cluster_deadline),
 * every agent reads it once live and stops gracefully there (its source's
 * time_up), as well as at its own max_time_ms: agents that join late or
 * resume stop with the others. Give every agent the same.
 *
 * Steered rules. Rules steered into this agent (steer.h: POST /rules, an
 * action file), checked and applied here, are appended to the crawl's
 * shared rules ({P}:rules, cluster.h), one push in flight at a time, sent
 * again until Redis answers (a rule Redis took twice decides as once);
 * a graceful stop waits for them. From its pump, at most every
 * SHARED_RULES_POLL_MS, the agent reads the entries from the first it
 * has not applied (one LRANGE of at most CLUSTER_RULES_READ; at once
 * again when that many came) and applies each as if steered here
 * (steer_shared_apply: the same checks; a bad entry is refused and
 * counted), passing its own (the indexes its pushes were given). The
 * position is the steering's ("shared N" in steering.log, beside the
 * rules.txt it goes with, both kept for --resume whatever the
 * checkpoint), so a resumed agent goes on from there and one joining
 * later applies every entry. A crash between rules.txt and the log line
 * applies that entry again on resume: the same rules once more on top
 * decide as before. Rules steered into two agents within one poll may
 * stand in another order on those two than in Redis; a rule applied here
 * and not yet taken by Redis when the agent dies stays this agent's.
 * Pause, resume and host delays stay per agent.
 *
 * Memory: the rules steered here not yet in Redis, the indexes of its own
 * entries not yet read back (8 bytes each), the hashes of the URLs
 * handed over (8 bytes each), the outbox
 * lines not taken yet and those that could not be sent yet (Redis away, or cluster max_unsent
 * reached) and the inbox entries waiting for room in the feed queue (at
 * most window URLs).
 */
#ifndef CRAWLER_CRAWL_CLUSTER_H
#define CRAWLER_CRAWL_CLUSTER_H

#include "crawler/crawl_source.h"

/* The agent's operations (crawl_source_open opens them). */
extern const struct crawl_source_ops crawl_cluster_ops;

/* A graceful stop's longest hand-over. */
#define CRAWL_CLUSTER_LEAVE_MS 30000

#endif
