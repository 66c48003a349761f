/*
 * router.h: Redis commands routed by hash slot to the master serving the
 * slot, whether the server named is one Redis or a node of a Redis Cluster
 * (hiredis 0.14 has no cluster support: this is the small layer it lacks).
 *
 * Slots. A key's slot is CRC16 (XMODEM: polynomial 0x1021, initial 0) of
 * the key mod 16384, or of its hash tag: the bytes between the first '{'
 * and the first '}' after it, when there are any. Keys that must be touched
 * together (one script) share a tag; keys that need not are spread by
 * giving them different tags.
 *
 * The slot map. On creation the router connects to the node it was given
 * (the seed) and asks CLUSTER SLOTS: each range of slots and its master.
 * A server without cluster support answers an error: the map then sends
 * every slot to the seed (one code path for one Redis and for a cluster;
 * the caller cannot tell them apart). ROLE, asked of each master when
 * connected and with each read of the map, tells how many replicas it has
 * online (CLUSTER SLOTS leaves a replica out until the cluster bus has
 * told of its replication offset, seconds after it is in sync). The map is
 * read again, from any node connected, whenever a node's connection fails
 * (a failover moves its slots to a replica; the old map stays until the
 * cluster has promoted it), on MOVED and CLUSTERDOWN, and every
 * ROUTER_REFRESH_MS.
 *
 * Redirects and retries, per command:
 *   MOVED slot host:port   the slot lives there now: the map's entry is
 *                          changed at once, the command sent again there
 *                          (at most ROUTER_REDIRECTS times);
 *   ASK slot host:port     the slot is migrating: ASKING then the command
 *                          to that node, once; the map is not changed;
 *   TRYAGAIN, CLUSTERDOWN, LOADING
 *                          sent again after ROUTER_BACKOFF_MS, doubled per
 *                          attempt, at most ROUTER_RETRIES times, then the
 *                          error is the reply;
 *   NOSCRIPT               (router_eval) SCRIPT LOAD, then the EVALSHA again.
 * A command whose node's connection fails gets no reply (NULL): the caller
 * decides whether to send it again (at-least-once is the caller's rule).
 *
 * Batching. A command waits in its node's queue and the queue goes to
 * hiredis every batch_ms (0: on the next loop iteration), so what the
 * caller issues within that time reaches Redis in one write: Redis spends
 * most of a small command's CPU on the read and write system calls, which
 * a pipeline shares.
 *
 * Durable writes. A command sent with ROUTER_DURABLE to a master that has
 * replicas, or whose ROLE is not known yet, is answered only once WAIT 1
 * says a replica holds it (one WAIT per node per batch, after its
 * commands): a master killed after the answer loses none of it when its
 * replica takes over. A WAIT that no replica acknowledges within
 * ROUTER_WAIT_MS, or half of stuck_ms if shorter (so a WAIT never looks
 * stuck), is counted in wait_timeouts (a replica busy or far behind) and
 * followed by ROLE: while the master
 * lists a replica online, WAIT again, for as long as it takes; with none
 * online the replies are given, not replicated (counted in unreplicated:
 * there is no replica to fail over to, and a master killed then loses
 * them); a node that is no longer a master (demoted by a failover), or a
 * master lost before its WAIT is answered, answers its durable commands
 * with NULL, as failed: what it acknowledged may be missing on the
 * replica that took over, so the caller sends it again. A command that
 * reads and writes (XREADGROUP moves a consumer group) may be durable
 * too: its caller acts on what it read only once a replica holds the move.
 *
 * Connections: one asynchronous hiredis connection per master (libuv
 * adapter), opened when the map names it, retried every ROUTER_RETRY_MS
 * while down; a connection attempt pending for ROUTER_CONNECT_MS, or with
 * a command unanswered for stuck_ms, is dropped (its commands get NULL).
 *
 * Threads: the loop's thread only; nothing blocks. Memory: the map (16384
 * 2-byte entries), one struct per node, and every command until its reply
 * has been given (its formatted text, about its arguments' size).
 */
#ifndef CRAWLER_CLUSTER_ROUTER_H
#define CRAWLER_CLUSTER_ROUTER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#define ROUTER_SLOTS 16384
/* Longest "host:port" of a node, with its NUL. */
#define ROUTER_ADDR_MAX 300
#define ROUTER_REDIRECTS 5
#define ROUTER_RETRIES 6
#define ROUTER_BACKOFF_MS 20
#define ROUTER_RETRY_MS 100
#define ROUTER_CONNECT_MS 1000
#define ROUTER_REFRESH_MS 2000
#define ROUTER_WAIT_MS 1000

enum router_err {
	ROUTER_OK = 0,
	ROUTER_ENOMEM = 1, /* allocation failed */
	ROUTER_EDOWN = 2,  /* not an error: no map yet, or the slot's node is not
	                    * connected; try again later */
	ROUTER_EINVAL = 3, /* bad argument (slot out of range, no command) */
	ROUTER_EUV = 4,    /* a libuv call failed */
};

/* Command flags. */
#define ROUTER_DURABLE 1u /* answered once a replica holds it (above) */

struct router;

/* A command's answer: reply NULL when none came (the connection failed,
 * or the router is being destroyed). The reply is freed after the call. */
typedef void router_reply_fn(void *priv, const redisReply *reply);

/* A Lua script called by hash: body static, sha filled by
 * router_script_init(). */
struct router_script {
	const char *body;
	char sha[41];
};

struct router_options {
	const char *host; /* the seed node */
	int port;
	unsigned batch_ms; /* commands wait at most this for a common write */
	unsigned stuck_ms; /* a command unanswered this long drops its
	                    * connection; 0: never */
};

struct router_stats {
	uint64_t moved, asked, retried, noscript, refreshes, wait_timeouts, dropped;
	uint64_t unreplicated; /* durable commands answered with no replica online */
	uint64_t waits;        /* WAITs sent */
	size_t nodes;          /* masters in the map (1 for one Redis) */
	bool cluster;          /* the seed answered CLUSTER SLOTS */
	bool mapped;           /* a map is known */
};

/* CRC16-XMODEM of buf, and the slot of a key (its hash tag, if any). */
uint16_t router_crc16(const char *buf, size_t len);
unsigned router_key_slot(const char *key, size_t len);

/* Fills s->sha from s->body. */
void router_script_init(struct router_script *s);

/*
 * Creates the router on loop and starts connecting to the seed (failures
 * are retried, never reported). Copies opt->host. *out NULL on error:
 * ROUTER_EINVAL, ROUTER_ENOMEM, ROUTER_EUV.
 */
int router_create(uv_loop_t *loop, const struct router_options *opt, struct router **out);
/* Closes every connection: each command not answered yet gets NULL, now.
 * The memory is freed once the loop has run the close callbacks. NULL is
 * a no-op. */
void router_destroy(struct router *r);

/*
 * Sends a command for slot: ROUTER_OK and fn runs later, exactly once; or
 * ROUTER_EDOWN / ROUTER_ENOMEM / ROUTER_EINVAL and fn never runs. fn may
 * be NULL (fire and forget). The arguments are copied.
 */
int router_send(struct router *r, unsigned slot, unsigned flags, router_reply_fn *fn, void *priv,
                int argc, const char **argv, const size_t *argl);
/* The same from a hiredis format string ("%s", "%b", "%llu" ...). */
int router_sendf(struct router *r, unsigned slot, unsigned flags, router_reply_fn *fn, void *priv,
                 const char *fmt, ...);
int router_vsendf(struct router *r, unsigned slot, unsigned flags, router_reply_fn *fn, void *priv,
                  const char *fmt, va_list ap);
/* EVALSHA of s with argv = numkeys, keys, args (as EVAL takes them after
 * the script), for slot (the slot of its keys). */
int router_eval(struct router *r, const struct router_script *s, unsigned slot, unsigned flags,
                router_reply_fn *fn, void *priv, int argc, const char **argv, const size_t *argl);

/* A deep copy of a reply (freeReplyObject frees it), or NULL. */
redisReply *router_reply_copy(const redisReply *r);

/* True if a command for slot would be sent now (mapped, node connected). */
bool router_up(const struct router *r, unsigned slot);
/* The node serving slot as "host:port" (ROUTER_ADDR_MAX bytes), false if
 * none is known. */
bool router_slot_node(const struct router *r, unsigned slot, char *addr);
/* Reads the map again soon (e.g. the caller saw a node fail). */
void router_refresh(struct router *r);
void router_stats(const struct router *r, struct router_stats *out);

#endif
