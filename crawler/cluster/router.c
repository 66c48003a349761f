/*
 * router.c: commands routed by slot to one Redis or the masters of a Redis
 * Cluster. See router.h.
 */
#include "crawler/cluster/router.h"
#include "frontier/base/ascii.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <openssl/evp.h>

#include "frontier/base/array.h"
#include "frontier/base/chain.h"
#include "frontier/base/clock.h"

#define NO_NODE 0xffffu
#define ROUTER_HANDLES 3

/* The durable commands of one batch to one node, answered when its WAIT is. */
struct rt_wait {
	struct rt_cmd **cmds; /* NULL where a command was redirected meanwhile */
	size_t n, cap;
};

struct rt_cmd {
	struct rt_cmd *next;
	struct router *r;
	router_reply_fn *fn;
	void *priv;
	char *buf; /* the formatted command */
	size_t len;
	const struct router_script *script; /* reloaded on NOSCRIPT */
	unsigned slot, flags;
	int redirects, retries;
	bool reload;          /* SCRIPT LOAD goes before it */
	bool reloaded;        /* it was, once: a second NOSCRIPT is the reply */
	struct rt_node *ask;  /* ASKING, then it, to this node: once */
	uint64_t due_ms;      /* when a back-off ends */
	struct rt_wait *wait; /* the WAIT that answers it, if durable */
	size_t widx;
	bool final;       /* its own reply is in (held until the WAIT's) */
	redisReply *held; /* that reply, copied */
};

struct rt_node {
	struct router *r;
	char host[256];
	int port;
	redisAsyncContext *ac;
	bool connected;
	uint64_t connect_ms;          /* last attempt */
	uint64_t progress_ms;         /* last reply, or when the first pending went out */
	size_t inflight;              /* commands handed to hiredis, unanswered */
	unsigned replicas;            /* online, per its last ROLE */
	bool role_known;              /* a ROLE answered on this connection */
	bool in_map;                  /* the map names it (or it is the seed, before a map) */
	struct rt_cmd *qhead, *qtail; /* waiting for the next batch */
};

struct router {
	uv_loop_t *loop;
	struct router_options opt;
	char seed_host[256];
	struct rt_node **nodes; /* every node ever named; never shrinks */
	size_t nnodes, nodes_cap;
	uint16_t map[ROUTER_SLOTS]; /* slot -> index in nodes, or NO_NODE */
	bool mapped, cluster, stale, refresh_busy, destroying;
	uint64_t refresh_ms;
	size_t next_ask;
	struct rt_cmd *backoff; /* unsorted; the timer is armed for the earliest */
	uv_timer_t tick, flush, retry;
	int open_handles;
	struct router_stats st;
};

/* ---- slots ---- */

uint16_t router_crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;
	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = crc & 0x8000 ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned router_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len);
	if (open != NULL) {
		size_t rest = len - (size_t)(open + 1 - key);
		const char *close = memchr(open + 1, '}', rest);
		if (close != NULL && close > open + 1)
			return router_crc16(open + 1, (size_t)(close - open - 1)) % ROUTER_SLOTS;
	}
	return router_crc16(key, len) % ROUTER_SLOTS;
}

void router_script_init(struct router_script *s)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	s->sha[0] = '\0';
	if (EVP_Digest(s->body, strlen(s->body), d, &n, EVP_sha1(), NULL) != 1 || n != 20)
		return;
	for (unsigned i = 0; i < n; i++)
		snprintf(s->sha + 2 * i, 3, "%02x", d[i]);
}

/* ---- replies ---- */

redisReply *router_reply_copy(const redisReply *r)
{
	redisReply *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	c->type = r->type;
	c->integer = r->integer;
	if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
	    r->type == REDIS_REPLY_ERROR) {
		c->str = malloc(r->len + 1);
		if (c->str == NULL) {
			free(c);
			return NULL;
		}
		memcpy(c->str, r->str, r->len);
		c->str[r->len] = '\0';
		c->len = r->len;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
		c->element = calloc(r->elements, sizeof *c->element);
		c->elements = r->elements;
		for (size_t i = 0; c->element != NULL && i < r->elements; i++)
			if ((c->element[i] = router_reply_copy(r->element[i])) == NULL)
				break;
		if (c->element == NULL || c->element[r->elements - 1] == NULL) {
			freeReplyObject(c);
			return NULL;
		}
	}
	return c;
}

static void cmd_free(struct rt_cmd *q)
{
	if (q->held != NULL)
		freeReplyObject(q->held);
	free(q->buf);
	free(q);
}

/* Gives q's answer to its caller and frees q. */
static void cmd_finish(struct rt_cmd *q, const redisReply *reply)
{
	if (q->fn != NULL)
		q->fn(q->priv, reply);
	cmd_free(q);
}

static bool error_is(const redisReply *r, const char *word)
{
	size_t n = strlen(word);
	return r->len >= n && memcmp(r->str, word, n) == 0 && (r->len == n || r->str[n] == ' ');
}

/* ---- nodes ---- */

static void node_ask_role(struct rt_node *n);

static void on_connect(const redisAsyncContext *ac, int status)
{
	struct rt_node *n = ac->data;
	if (n->ac != ac)
		return;
	if (status != REDIS_OK) {
		n->ac = NULL; /* hiredis frees it */
		n->connected = false;
		n->r->stale = true;
		return;
	}
	n->connected = true;
	node_ask_role(n);
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
	struct rt_node *n = ac->data;
	(void)status;
	if (n->ac != ac)
		return;
	n->ac = NULL;
	n->connected = false;
	n->role_known = false;
	n->inflight = 0;
	n->r->stale = true; /* a failover, maybe: where do its slots go now? */
}

static void node_connect(struct rt_node *n)
{
	uint64_t now = monotonic_ms();
	if (n->ac != NULL || n->r->destroying || now - n->connect_ms < ROUTER_RETRY_MS)
		return;
	n->connect_ms = now;
	redisAsyncContext *ac = redisAsyncConnect(n->host, n->port);
	if (ac == NULL)
		return;
	if (ac->err || redisLibuvAttach(ac, n->r->loop) != REDIS_OK) {
		redisAsyncFree(ac);
		return;
	}
	ac->data = n;
	redisAsyncSetConnectCallback(ac, on_connect);
	redisAsyncSetDisconnectCallback(ac, on_disconnect);
	n->ac = ac;
	n->progress_ms = now;
}

/* Drops n's connection: its pending commands get NULL (hiredis calls them). */
static void node_drop(struct rt_node *n)
{
	redisAsyncContext *ac = n->ac;
	if (ac == NULL)
		return;
	n->ac = NULL;
	n->connected = false;
	n->role_known = false;
	n->inflight = 0;
	n->r->stale = true;
	n->r->st.dropped++;
	redisAsyncFree(ac);
}

/* The node at host:port, created if new; NULL when out of memory. */
static struct rt_node *node_get(struct router *r, const char *host, size_t hlen, int port)
{
	for (size_t i = 0; i < r->nnodes; i++)
		if (r->nodes[i]->port == port && strlen(r->nodes[i]->host) == hlen &&
		    memcmp(r->nodes[i]->host, host, hlen) == 0)
			return r->nodes[i];
	if (hlen >= sizeof r->nodes[0]->host || r->nnodes >= NO_NODE)
		return NULL;
	struct rt_node **nv = array_grow(r->nodes, &r->nodes_cap, r->nnodes, sizeof *nv, 8);
	if (nv == NULL)
		return NULL;
	r->nodes = nv;
	struct rt_node *n = calloc(1, sizeof *n);
	if (n == NULL)
		return NULL;
	n->r = r;
	memcpy(n->host, host, hlen);
	n->host[hlen] = '\0';
	n->port = port;
	n->in_map = r->nnodes == 0; /* the seed, until a map says otherwise */
	r->nodes[r->nnodes++] = n;
	return n;
}

static size_t node_index(const struct router *r, const struct rt_node *n)
{
	size_t i = 0;
	while (i < r->nnodes && r->nodes[i] != n)
		i++;
	return i;
}

/* "host:port" (the last colon splits: IPv6 hosts hold colons); an empty
 * host is the answering node's. */
static struct rt_node *node_of_addr(struct router *r, const struct rt_node *from, const char *addr,
                                    size_t len)
{
	const char *colon = NULL;
	for (size_t i = 0; i < len; i++)
		if (addr[i] == ':')
			colon = addr + i;
	if (colon == NULL)
		return NULL;
	long port = ascii_decimal_prefix(colon + 1, len - (size_t)(colon + 1 - addr), 65535);
	if (port <= 0)
		return NULL;
	if (colon == addr)
		return node_get(r, from->host, strlen(from->host), port);
	return node_get(r, addr, (size_t)(colon - addr), port);
}

/* ---- sending ---- */

static void on_reply(redisAsyncContext *ac, void *reply, void *priv);

static void flush_timer_cb(uv_timer_t *t);

static void node_enqueue(struct rt_node *n, struct rt_cmd *q)
{
	struct router *r = n->r;
	CHAIN_APPEND(n->qhead, n->qtail, q);
	if (!uv_is_active((uv_handle_t *)&r->flush))
		uv_timer_start(&r->flush, flush_timer_cb, r->opt.batch_ms, 0);
}

/* Sends q where it goes now (its ASK node, else its slot's master), or
 * answers NULL when that node is not connected. */
static void cmd_dispatch(struct rt_cmd *q)
{
	struct router *r = q->r;
	struct rt_node *n = q->ask;
	if (n == NULL && r->mapped && r->map[q->slot] != NO_NODE)
		n = r->nodes[r->map[q->slot]];
	if (n == NULL || n->ac == NULL || r->destroying) {
		if (n != NULL)
			r->stale = true;
		cmd_finish(q, NULL);
		return;
	}
	node_enqueue(n, q);
}

/* The node of ac, one of whose commands was just answered. */
static struct rt_node *node_answered(const redisAsyncContext *ac)
{
	struct rt_node *n = ac->data;
	if (n->inflight > 0)
		n->inflight--;
	n->progress_ms = monotonic_ms();
	return n;
}

static void on_aux(redisAsyncContext *ac, void *reply, void *priv)
{
	(void)reply;
	(void)priv;
	node_answered(ac);
}

/* The replicas online per a ROLE reply of a master:
 * ["master", offset, [[host, port, offset], ...]]; -1 if not one. */
static long role_replicas(const redisReply *rep)
{
	if (rep == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements < 3 ||
	    rep->element[0]->type != REDIS_REPLY_STRING ||
	    strcmp(rep->element[0]->str, "master") != 0 ||
	    rep->element[2]->type != REDIS_REPLY_ARRAY)
		return -1;
	return (long)rep->element[2]->elements;
}

/* Answers w's commands with their held replies, or with NULL when lost:
 * the master went away before its WAIT was answered, so a write it
 * acknowledged may not be on the replica that takes over (the caller
 * sends it again). */
static void wait_release(struct rt_wait *w, bool lost)
{
	for (size_t i = 0; i < w->n; i++) {
		struct rt_cmd *q = w->cmds[i];
		if (q == NULL)
			continue;
		q->wait = NULL;
		if (!q->final)
			continue; /* cannot be: its reply comes first on the connection */
		redisReply *held = q->held;
		q->held = NULL;
		cmd_finish(q, lost ? NULL : held);
		if (held != NULL)
			freeReplyObject(held);
	}
	free(w->cmds);
	free(w);
}

static void on_wait(redisAsyncContext *ac, void *reply, void *priv);

/* Sends on n, for w, a command whose answer goes to fn: false if it
 * cannot be (the connection is going away). */
static bool wait_send(struct rt_node *n, redisCallbackFn *fn, struct rt_wait *w, const char *cmd)
{
	if (n->ac == NULL || n->r->destroying)
		return false;
	if (redisAsyncCommand(n->ac, fn, w, cmd) != REDIS_OK)
		return false;
	n->inflight++;
	return true;
}

static bool wait_again(struct rt_node *n, struct rt_wait *w)
{
	/* within half of stuck_ms: a WAIT is progress, not a stuck connection */
	unsigned ms = ROUTER_WAIT_MS;
	if (n->r->opt.stuck_ms > 0 && n->r->opt.stuck_ms / 2 < ms)
		ms = n->r->opt.stuck_ms / 2 > 0 ? n->r->opt.stuck_ms / 2 : 1;
	char cmd[32];
	snprintf(cmd, sizeof cmd, "WAIT 1 %u", ms);
	n->r->st.waits++;
	return wait_send(n, on_wait, w, cmd);
}

/*
 * ROLE after a WAIT that timed out: the master's own list of the replicas
 * online. One still there may yet acknowledge: WAIT again (a WAIT covers
 * every write sent before it on the connection). None: the writes are
 * answered, not replicated (counted). Not a master any more (demoted by a
 * failover), or no answer: its writes may be gone, answered NULL.
 */
static void on_wait_role(redisAsyncContext *ac, void *reply, void *priv)
{
	struct rt_node *n = node_answered(ac);
	struct rt_wait *w = priv;
	long replicas = role_replicas(reply);
	if (replicas < 0) {
		wait_release(w, true);
		return;
	}
	n->replicas = (unsigned)replicas;
	n->role_known = true;
	if (n->replicas > 0) {
		if (!wait_again(n, w))
			wait_release(w, true);
		return;
	}
	for (size_t i = 0; i < w->n; i++)
		n->r->st.unreplicated += w->cmds[i] != NULL;
	wait_release(w, false);
}

static void on_wait(redisAsyncContext *ac, void *reply, void *priv)
{
	struct rt_node *n = node_answered(ac);
	redisReply *r = reply;
	if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer < 1) {
		n->r->st.wait_timeouts++;
		if (!wait_send(n, on_wait_role, priv, "ROLE"))
			wait_release(priv, true);
		return;
	}
	/* an error (WAIT refused) leaves the writes as they are: answered */
	wait_release(priv, r == NULL);
}

static int wait_add(struct rt_wait **wp, struct rt_cmd *q)
{
	if (*wp == NULL && (*wp = calloc(1, sizeof **wp)) == NULL)
		return -1;
	struct rt_wait *w = *wp;
	struct rt_cmd **v = array_grow(w->cmds, &w->cap, w->n, sizeof *v, 8);
	if (v == NULL)
		return -1;
	w->cmds = v;
	q->wait = w;
	q->widx = w->n;
	w->cmds[w->n++] = q;
	return 0;
}

/* Hands n's queue to hiredis: one write on the next loop iteration. */
static void node_flush(struct rt_node *n)
{
	struct rt_wait *w = NULL;
	uint64_t now = monotonic_ms();
	while (n->qhead != NULL) {
		struct rt_cmd *q = n->qhead;
		n->qhead = q->next;
		if (n->qhead == NULL)
			n->qtail = NULL;
		redisAsyncContext *ac = n->ac;
		if (ac == NULL) {
			cmd_finish(q, NULL);
			continue;
		}
		if (n->inflight == 0)
			n->progress_ms = now;
		if (q->ask == n && redisAsyncCommand(ac, on_aux, NULL, "ASKING") == REDIS_OK)
			n->inflight++;
		q->ask = NULL;
		if (q->reload && redisAsyncCommand(ac, on_aux, NULL, "SCRIPT LOAD %s",
		                                   q->script->body) == REDIS_OK)
			n->inflight++;
		q->reload = false;
		if (redisAsyncFormattedCommand(ac, on_reply, q, q->buf, q->len) != REDIS_OK) {
			cmd_finish(q, NULL);
			continue;
		}
		n->inflight++;
		/* a node whose ROLE is not known yet may have replicas: WAIT */
		bool waits = n->replicas > 0 || !n->role_known;
		if ((q->flags & ROUTER_DURABLE) && waits && wait_add(&w, q) != 0)
			q->flags &= ~ROUTER_DURABLE; /* out of memory: answered at once */
	}
	if (w != NULL && !wait_again(n, w))
		wait_release(w, false); /* answered as they are (none may be yet: detached) */
}

static void flush_timer_cb(uv_timer_t *t)
{
	struct router *r = t->data;
	for (size_t i = 0; i < r->nnodes; i++)
		node_flush(r->nodes[i]);
}

static void retry_timer_cb(uv_timer_t *t);

static void backoff_arm(struct router *r)
{
	uint64_t due = UINT64_MAX, now = monotonic_ms();
	for (struct rt_cmd *q = r->backoff; q != NULL; q = q->next)
		if (q->due_ms < due)
			due = q->due_ms;
	if (due != UINT64_MAX)
		uv_timer_start(&r->retry, retry_timer_cb, due > now ? due - now : 0, 0);
}

static void retry_timer_cb(uv_timer_t *t)
{
	struct router *r = t->data;
	uint64_t now = monotonic_ms();
	struct rt_cmd *due = NULL, **pp = &r->backoff;
	while (*pp != NULL) {
		struct rt_cmd *q = *pp;
		if (q->due_ms <= now) {
			*pp = q->next;
			q->next = due;
			due = q;
		} else {
			pp = &q->next;
		}
	}
	while (due != NULL) {
		struct rt_cmd *q = due;
		due = q->next;
		cmd_dispatch(q);
	}
	backoff_arm(r);
}

/* The command leaves the WAIT it was sent under (it goes elsewhere). */
static void wait_leave(struct rt_cmd *q)
{
	if (q->wait != NULL)
		q->wait->cmds[q->widx] = NULL;
	q->wait = NULL;
}

/* Follows a redirect or retries: true if q was taken care of. */
static bool cmd_redirect(struct rt_node *from, struct rt_cmd *q, const redisReply *e)
{
	struct router *r = q->r;
	if (error_is(e, "MOVED") || error_is(e, "ASK")) {
		bool ask = error_is(e, "ASK");
		const char *sp = memchr(e->str, ' ', e->len);
		const char *addr =
		        sp ? memchr(sp + 1, ' ', e->len - (size_t)(sp + 1 - e->str)) : NULL;
		struct rt_node *to =
		        addr ? node_of_addr(r, from, addr + 1, e->len - (size_t)(addr + 1 - e->str))
		             : NULL;
		long sl = sp ? ascii_decimal_prefix(sp + 1, e->len - (size_t)(sp + 1 - e->str),
		                                    ROUTER_SLOTS)
		             : -1;
		unsigned slot = sl < 0 ? ROUTER_SLOTS : (unsigned)sl;
		if (to == NULL || slot >= ROUTER_SLOTS || ++q->redirects > ROUTER_REDIRECTS)
			return false;
		node_connect(to);
		wait_leave(q);
		if (ask) {
			r->st.asked++;
			q->ask = to;
		} else {
			r->st.moved++;
			r->map[slot] = (uint16_t)node_index(r, to);
			r->stale = true;
		}
		cmd_dispatch(q);
		return true;
	}
	if (error_is(e, "NOSCRIPT") && q->script != NULL && !q->reloaded) {
		r->st.noscript++;
		q->reload = q->reloaded = true;
		wait_leave(q);
		cmd_dispatch(q);
		return true;
	}
	if (error_is(e, "TRYAGAIN") || error_is(e, "CLUSTERDOWN") || error_is(e, "LOADING")) {
		if (++q->retries > ROUTER_RETRIES)
			return false;
		r->st.retried++;
		if (!error_is(e, "TRYAGAIN"))
			r->stale = true;
		wait_leave(q);
		q->due_ms = monotonic_ms() + ((uint64_t)ROUTER_BACKOFF_MS << (q->retries - 1));
		q->next = r->backoff;
		r->backoff = q;
		backoff_arm(r);
		return true;
	}
	return false;
}

static void on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	struct rt_node *n = node_answered(ac);
	struct rt_cmd *q = priv;
	redisReply *rep = reply;
	if (rep != NULL && rep->type == REDIS_REPLY_ERROR && !q->r->destroying &&
	    cmd_redirect(n, q, rep))
		return;
	if (q->wait != NULL) {
		q->final = true;
		q->held = rep ? router_reply_copy(rep) : NULL;
		return; /* answered with the WAIT */
	}
	cmd_finish(q, rep);
}

static int cmd_submit(struct router *r, unsigned slot, unsigned flags, router_reply_fn *fn,
                      void *priv, const struct router_script *script, char *buf, int len)
{
	if (len < 0)
		return ROUTER_ENOMEM;
	struct rt_cmd *q = calloc(1, sizeof *q);
	if (q == NULL) {
		free(buf);
		return ROUTER_ENOMEM;
	}
	*q = (struct rt_cmd){ .r = r,
		              .fn = fn,
		              .priv = priv,
		              .buf = buf,
		              .len = (size_t)len,
		              .script = script,
		              .slot = slot,
		              .flags = flags };
	node_enqueue(r->nodes[r->map[slot]], q);
	return ROUTER_OK;
}

static int send_check(const struct router *r, unsigned slot)
{
	if (slot >= ROUTER_SLOTS)
		return ROUTER_EINVAL;
	if (r->destroying || !r->mapped || r->map[slot] == NO_NODE ||
	    r->nodes[r->map[slot]]->ac == NULL)
		return ROUTER_EDOWN;
	return ROUTER_OK;
}

int router_send(struct router *r, unsigned slot, unsigned flags, router_reply_fn *fn, void *priv,
                int argc, const char **argv, const size_t *argl)
{
	int rc = argc < 1 ? ROUTER_EINVAL : send_check(r, slot);
	if (rc != ROUTER_OK)
		return rc;
	char *buf = NULL;
	int len = redisFormatCommandArgv(&buf, argc, argv, argl);
	return cmd_submit(r, slot, flags, fn, priv, NULL, buf, len);
}

int router_vsendf(struct router *r, unsigned slot, unsigned flags, router_reply_fn *fn, void *priv,
                  const char *fmt, va_list ap)
{
	int rc = send_check(r, slot);
	if (rc != ROUTER_OK)
		return rc;
	char *buf = NULL;
	int len = redisvFormatCommand(&buf, fmt, ap);
	return cmd_submit(r, slot, flags, fn, priv, NULL, buf, len);
}

int router_sendf(struct router *r, unsigned slot, unsigned flags, router_reply_fn *fn, void *priv,
                 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = router_vsendf(r, slot, flags, fn, priv, fmt, ap);
	va_end(ap);
	return rc;
}

int router_eval(struct router *r, const struct router_script *s, unsigned slot, unsigned flags,
                router_reply_fn *fn, void *priv, int argc, const char **argv, const size_t *argl)
{
	int rc = argc < 1 || s->sha[0] == '\0' ? ROUTER_EINVAL : send_check(r, slot);
	if (rc != ROUTER_OK)
		return rc;
	const char **av = malloc(((size_t)argc + 2) * sizeof *av);
	size_t *al = malloc(((size_t)argc + 2) * sizeof *al);
	char *buf = NULL;
	int len = -1;
	if (av != NULL && al != NULL) {
		av[0] = "EVALSHA";
		al[0] = 7;
		av[1] = s->sha;
		al[1] = 40;
		memcpy(av + 2, argv, (size_t)argc * sizeof *av);
		memcpy(al + 2, argl, (size_t)argc * sizeof *al);
		len = redisFormatCommandArgv(&buf, argc + 2, av, al);
	}
	free(av);
	free(al);
	return cmd_submit(r, slot, flags, fn, priv, s, buf, len);
}

/* ---- the map ---- */

/* Installs a map from CLUSTER SLOTS ([start, end, [host, port, ...],
 * replicas...] per range): false if the reply is not one. */
static bool map_install(struct router *r, const struct rt_node *from, const redisReply *rep)
{
	uint16_t map[ROUTER_SLOTS];
	if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0)
		return false;
	for (size_t s = 0; s < ROUTER_SLOTS; s++)
		map[s] = NO_NODE;
	for (size_t i = 0; i < rep->elements; i++) {
		const redisReply *e = rep->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER ||
		    e->element[2]->type != REDIS_REPLY_ARRAY || e->element[2]->elements < 2)
			return false;
		const redisReply *m = e->element[2];
		long long lo = e->element[0]->integer, hi = e->element[1]->integer;
		if (m->element[0]->type != REDIS_REPLY_STRING ||
		    m->element[1]->type != REDIS_REPLY_INTEGER || lo < 0 || hi >= ROUTER_SLOTS ||
		    lo > hi)
			return false;
		bool same = m->element[0]->len == 0 || strcmp(m->element[0]->str, "?") == 0;
		struct rt_node *n = same ? node_get(r, from->host, strlen(from->host),
		                                    (int)m->element[1]->integer)
		                         : node_get(r, m->element[0]->str, m->element[0]->len,
		                                    (int)m->element[1]->integer);
		if (n == NULL)
			return false;
		uint16_t idx = (uint16_t)node_index(r, n);
		for (long long s = lo; s <= hi; s++)
			map[s] = idx;
	}
	memcpy(r->map, map, sizeof map);
	for (size_t i = 0; i < r->nnodes; i++)
		r->nodes[i]->in_map = false;
	for (size_t s = 0; s < ROUTER_SLOTS; s++)
		if (map[s] != NO_NODE)
			r->nodes[map[s]]->in_map = true;
	return true;
}

static void map_single(struct router *r, struct rt_node *seed)
{
	uint16_t idx = (uint16_t)node_index(r, seed);
	for (size_t s = 0; s < ROUTER_SLOTS; s++)
		r->map[s] = idx;
	for (size_t i = 0; i < r->nnodes; i++)
		r->nodes[i]->in_map = r->nodes[i] == seed;
}

/*
 * ROLE of a master: its replicas online. This, not CLUSTER SLOTS, says
 * whether durable writes wait: CLUSTER SLOTS leaves out a replica until
 * the cluster bus has told of a replication offset above 0, seconds after
 * it is in sync.
 */
static void on_role(redisAsyncContext *ac, void *reply, void *priv)
{
	struct rt_node *n = node_answered(ac);
	long replicas = role_replicas(reply);
	(void)priv;
	if (replicas >= 0) {
		n->replicas = (unsigned)replicas;
		n->role_known = true;
	}
}

static void node_ask_role(struct rt_node *n)
{
	if (n->ac != NULL && !n->r->destroying &&
	    redisAsyncCommand(n->ac, on_role, NULL, "ROLE") == REDIS_OK)
		n->inflight++;
}

static void on_slots(redisAsyncContext *ac, void *reply, void *priv)
{
	struct rt_node *n = node_answered(ac);
	struct router *r = n->r;
	redisReply *rep = reply;
	(void)priv;
	r->refresh_busy = false;
	if (rep == NULL || r->destroying)
		return;
	r->st.refreshes++;
	if (rep->type == REDIS_REPLY_ERROR && strstr(rep->str, "cluster support disabled")) {
		map_single(r, n);
		r->cluster = false;
		r->mapped = true;
		r->stale = false;
	} else if (map_install(r, n, rep)) {
		r->cluster = true;
		r->mapped = true;
		r->stale = false;
		for (size_t s = 0; s < ROUTER_SLOTS; s++)
			if (r->map[s] == NO_NODE)
				r->stale = true; /* slots not served yet: read again */
	} else {
		fprintf(stderr, "redis router: CLUSTER SLOTS from %s:%d: %s\n", n->host, n->port,
		        rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
	}
	for (size_t i = 0; i < r->nnodes; i++) {
		struct rt_node *m = r->nodes[i];
		if (!m->in_map)
			continue;
		node_connect(m);
		if (m->connected)
			node_ask_role(m); /* its replicas come and go */
	}
}

/* Asks a connected node (round robin over the known ones) for the map. */
static void map_refresh(struct router *r)
{
	if (r->refresh_busy || r->destroying)
		return;
	for (size_t k = 0; k < r->nnodes; k++) {
		struct rt_node *n = r->nodes[(r->next_ask + k) % r->nnodes];
		if (n->ac == NULL || !n->connected)
			continue;
		r->next_ask = (r->next_ask + k + 1) % r->nnodes;
		if (redisAsyncCommand(n->ac, on_slots, NULL, "CLUSTER SLOTS") == REDIS_OK) {
			n->inflight++;
			r->refresh_busy = true;
			r->refresh_ms = monotonic_ms();
		}
		return;
	}
}

static void tick_cb(uv_timer_t *t)
{
	struct router *r = t->data;
	uint64_t now = monotonic_ms();
	for (size_t i = 0; i < r->nnodes; i++) {
		struct rt_node *n = r->nodes[i];
		bool stuck = n->connected ? r->opt.stuck_ms > 0 && n->inflight > 0 &&
		                                    now - n->progress_ms > r->opt.stuck_ms
		                          : now - n->connect_ms > ROUTER_CONNECT_MS;
		if (n->ac != NULL && stuck)
			node_drop(n);
		if (n->in_map && n->ac == NULL) {
			r->stale = r->stale || r->mapped;
			node_connect(n);
		}
	}
	if (!r->mapped || r->stale || now - r->refresh_ms >= ROUTER_REFRESH_MS)
		map_refresh(r);
}

void router_refresh(struct router *r)
{
	r->stale = true;
}

/* ---- life ---- */

int router_create(uv_loop_t *loop, const struct router_options *opt, struct router **out)
{
	*out = NULL;
	if (opt->host == NULL || strlen(opt->host) >= sizeof((struct rt_node *)0)->host ||
	    opt->port <= 0 || opt->port > 65535)
		return ROUTER_EINVAL;
	struct router *r = calloc(1, sizeof *r);
	if (r == NULL)
		return ROUTER_ENOMEM;
	r->loop = loop;
	r->opt = *opt;
	snprintf(r->seed_host, sizeof r->seed_host, "%s", opt->host);
	r->opt.host = r->seed_host;
	if (node_get(r, opt->host, strlen(opt->host), opt->port) == NULL) {
		free(r);
		return ROUTER_ENOMEM;
	}
	uv_timer_t *timers[ROUTER_HANDLES] = { &r->tick, &r->flush, &r->retry };
	for (int i = 0; i < ROUTER_HANDLES; i++) {
		uv_timer_init(loop, timers[i]);
		timers[i]->data = r;
	}
	r->open_handles = ROUTER_HANDLES;
	node_connect(r->nodes[0]);
	if (uv_timer_start(&r->tick, tick_cb, 0, ROUTER_RETRY_MS) != 0) {
		router_destroy(r);
		return ROUTER_EUV;
	}
	*out = r;
	return ROUTER_OK;
}

static void on_closed(uv_handle_t *h)
{
	struct router *r = h->data;
	if (--r->open_handles > 0)
		return;
	for (size_t i = 0; i < r->nnodes; i++)
		free(r->nodes[i]);
	free(r->nodes);
	free(r);
}

void router_destroy(struct router *r)
{
	if (r == NULL || r->destroying)
		return;
	r->destroying = true;
	for (size_t i = 0; i < r->nnodes; i++) {
		struct rt_node *n = r->nodes[i];
		while (n->qhead != NULL) {
			struct rt_cmd *q = n->qhead;
			n->qhead = q->next;
			cmd_finish(q, NULL);
		}
		n->qtail = NULL;
		redisAsyncContext *ac = n->ac;
		n->ac = NULL;
		if (ac != NULL)
			redisAsyncFree(ac); /* runs the pending callbacks with NULL */
	}
	while (r->backoff != NULL) {
		struct rt_cmd *q = r->backoff;
		r->backoff = q->next;
		cmd_finish(q, NULL);
	}
	uv_timer_t *timers[ROUTER_HANDLES] = { &r->tick, &r->flush, &r->retry };
	for (int i = 0; i < ROUTER_HANDLES; i++)
		uv_close((uv_handle_t *)timers[i], on_closed);
}

/* ---- state ---- */

bool router_up(const struct router *r, unsigned slot)
{
	if (slot >= ROUTER_SLOTS || r->destroying || !r->mapped || r->map[slot] == NO_NODE)
		return false;
	const struct rt_node *n = r->nodes[r->map[slot]];
	return n->ac != NULL && n->connected;
}

bool router_slot_node(const struct router *r, unsigned slot, char *addr)
{
	if (slot >= ROUTER_SLOTS || !r->mapped || r->map[slot] == NO_NODE)
		return false;
	const struct rt_node *n = r->nodes[r->map[slot]];
	snprintf(addr, ROUTER_ADDR_MAX, "%s:%d", n->host, n->port);
	return true;
}

void router_stats(const struct router *r, struct router_stats *out)
{
	*out = r->st;
	out->cluster = r->cluster;
	out->mapped = r->mapped;
	out->nodes = 0;
	for (size_t i = 0; r->mapped && i < r->nnodes; i++)
		out->nodes += r->nodes[i]->in_map;
}
