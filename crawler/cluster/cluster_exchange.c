/*
 * cluster_exchange.c: URL batches to other agents (XADD) behind the sent
 * cache, this agent's inbox (XREADGROUP, XAUTOCLAIM of its earlier
 * incarnations' entries), the deduplication of what it reads against the
 * crawl's seen set (SADD per URL to its bucket), and the acks. See
 * cluster.h for the protocol and cluster_int.h for the invariants.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "crawler/cluster/cluster_int.h"
#include "frontier/base/ascii.h"
#include "frontier/base/chain.h"

/* Entries per read or claim. */
#define READ_COUNT 64

static void list_push(struct cl_list *l, struct cl_batch *b)
{
	CHAIN_APPEND(l->head, l->tail, b);
}

static struct cl_batch *list_pop(struct cl_list *l)
{
	struct cl_batch *b = l->head;
	if (b != NULL) {
		l->head = b->next;
		if (l->head == NULL)
			l->tail = NULL;
	}
	return b;
}

static void list_push_front(struct cl_list *l, struct cl_batch *b)
{
	b->next = l->head;
	l->head = b;
	if (l->tail == NULL)
		l->tail = b;
}

static void batch_free(struct cl_batch *b)
{
	if (b != NULL)
		free(b->buf);
	free(b);
}

/* ---- sending ---- */

static void send_waiting(struct cluster *c);

static void on_xadd(void *priv, const redisReply *r)
{
	struct cl_batch *b = priv;
	struct cluster *c = b->c;
	c->ninflight--;
	if (c->destroying) {
		batch_free(b);
		return;
	}
	if (r != NULL && r->type == REDIS_REPLY_STRING) {
		c->unsent -= b->nurls;
		batch_free(b);
		send_waiting(c);
		return;
	}
	cl_fail(c, "XADD", r);
	list_push(&c->retry, b); /* sent again at the next tick */
}

static int send_batch(struct cluster *c, struct cl_batch *b)
{
	char key[CL_KEY_MAX];
	unsigned slot = cl_key(c, "a", b->dest, ":inbox", key);
	return router_sendf(c->rt, slot, ROUTER_DURABLE, on_xadd, b, "XADD %s * %s %b", key,
	                    b->raw ? "r" : "u", b->buf, b->len);
}

/* Sends the batches waiting: the retried ones first, to keep their order. */
static void send_waiting(struct cluster *c)
{
	while (!c->destroying && c->ninflight < CL_INFLIGHT_MAX &&
	       (c->retry.head != NULL || c->queued.head != NULL)) {
		struct cl_list *from = c->retry.head != NULL ? &c->retry : &c->queued;
		struct cl_batch *b = list_pop(from);
		if (send_batch(c, b) != ROUTER_OK) {
			list_push_front(from, b);
			return;
		}
		c->ninflight++;
	}
}

static struct cl_dest *dest_find(struct cluster *c, const char *name, bool raw)
{
	for (size_t i = 0; i < c->ndests; i++)
		if (c->dests[i].raw == raw && strcmp(c->dests[i].name, name) == 0)
			return &c->dests[i];
	struct cl_dest *d = realloc(c->dests, (c->ndests + 1) * sizeof *d);
	if (d == NULL)
		return NULL;
	c->dests = d;
	d = &c->dests[c->ndests];
	*d = (struct cl_dest){ .name = strdup(name), .raw = raw };
	if (d->name == NULL)
		return NULL;
	c->ndests++;
	return d;
}

static void dest_close(struct cluster *c, struct cl_dest *d)
{
	if (d->open == NULL)
		return;
	list_push(&c->queued, d->open);
	d->open = NULL;
}

void cluster_flush(struct cluster *c)
{
	for (size_t i = 0; i < c->ndests; i++)
		dest_close(c, &c->dests[i]);
	uv_timer_stop(&c->flush);
	send_waiting(c);
}

void cl_flush_timer_cb(uv_timer_t *t)
{
	cluster_flush(t->data);
}

int cl_batch_append(struct cl_batch *b, const char *url, const char *via, unsigned depth)
{
	size_t need = strlen(url) + strlen(via) + 16;
	if (b->len + need > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + need)
			cap *= 2;
		char *buf = realloc(b->buf, cap);
		if (buf == NULL)
			return CLUSTER_ENOMEM;
		b->buf = buf;
		b->cap = cap;
	}
	b->len +=
	        (size_t)snprintf(b->buf + b->len, b->cap - b->len, "%s\t%s\t%u\n", url, via, depth);
	b->nurls++;
	return CLUSTER_OK;
}

static int send_url(struct cluster *c, const char *owner, const char *url, const char *via,
                    unsigned depth, bool raw)
{
	if (via == NULL)
		via = "";
	if (owner == NULL || url == NULL || *url == '\0' || strpbrk(url, "\t\n") != NULL ||
	    strpbrk(via, "\t\n") != NULL)
		return CLUSTER_EINVAL;
	/* a hash of 0 would match an empty cache slot: the low bit is set */
	uint64_t h = XXH3_64bits(url, strlen(url)) | 1;
	if (!raw && c->dedup && c->sent[h & c->sent_mask] == h) {
		c->st.sent_cached++;
		return CLUSTER_OK; /* sent before: in the seen set, or on its way */
	}
	if (c->unsent >= c->max_unsent)
		return CLUSTER_FULL;
	struct cl_dest *d = dest_find(c, owner, raw || !c->dedup);
	if (d == NULL)
		return CLUSTER_ENOMEM;
	if (d->open == NULL) {
		d->open = calloc(1, sizeof *d->open);
		if (d->open == NULL)
			return CLUSTER_ENOMEM;
		d->open->c = c;
		d->open->dest = d->name;
		d->open->raw = d->raw;
		if (!uv_is_active((uv_handle_t *)&c->flush))
			uv_timer_start(&c->flush, cl_flush_timer_cb, c->flush_delay_ms, 0);
	}
	int rc = cl_batch_append(d->open, url, via, depth);
	if (rc != CLUSTER_OK)
		return rc;
	if (!raw && c->dedup)
		c->sent[h & c->sent_mask] = h;
	c->unsent++;
	c->st.sent++;
	if (d->open->nurls >= CLUSTER_BATCH_URLS) {
		dest_close(c, d);
		send_waiting(c);
	}
	return CLUSTER_OK;
}

int cluster_send(struct cluster *c, const char *owner, const char *url, const char *via,
                 unsigned depth)
{
	return send_url(c, owner, url, via, depth, false);
}

int cluster_send_raw(struct cluster *c, const char *owner, const char *url, const char *via,
                     unsigned depth)
{
	return send_url(c, owner, url, via, depth, true);
}

size_t cluster_unsent(const struct cluster *c)
{
	return c->unsent;
}

size_t cluster_unacked(const struct cluster *c)
{
	return c->unacked;
}

/* ---- entries ---- */

const redisReply *cl_entry_lines(const redisReply *e, bool *raw)
{
	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
	    e->element[1]->type != REDIS_REPLY_ARRAY)
		return NULL;
	const redisReply *f = e->element[1];
	for (size_t i = 0; i + 1 < f->elements; i += 2)
		if (f->element[i]->len == 1 &&
		    (f->element[i]->str[0] == 'u' || f->element[i]->str[0] == 'r') &&
		    f->element[i + 1]->type == REDIS_REPLY_STRING) {
			*raw = f->element[i]->str[0] == 'r';
			return f->element[i + 1];
		}
	return NULL;
}

long cl_lines_parse(struct cluster *c, char *text)
{
	size_t n = 0;
	for (char *line = text, *next; *line != '\0'; line = next) {
		char *nl = strchr(line, '\n');
		next = nl ? nl + 1 : line + strlen(line);
		if (nl)
			*nl = '\0';
		char *via = strchr(line, '\t');
		char *depth = via ? strchr(via + 1, '\t') : NULL;
		if (depth == NULL) {
			c->lines_malformed += *line != '\0'; /* not ours: skipped */
			continue;
		}
		*via++ = '\0';
		*depth++ = '\0';
		char *end;
		errno = 0;
		unsigned long word = strtoul(depth, &end, 10);
		if (!ascii_is_digit((unsigned char)*depth) || *end || errno || word > UINT32_MAX) {
			c->lines_malformed++; /* a depth word no agent writes: skipped */
			continue;
		}
		if (n == c->urls_cap) {
			size_t cap = c->urls_cap ? 2 * c->urls_cap : CLUSTER_BATCH_URLS;
			struct cluster_url *u = realloc(c->urls, cap * sizeof *u);
			if (u == NULL)
				return -1;
			c->urls = u;
			c->urls_cap = cap;
		}
		c->urls[n++] = (struct cluster_url){ line, via, (unsigned)word };
	}
	return (long)n;
}

static int ack_push(struct cluster *c, const char *id)
{
	if (c->nacks == c->acks_cap) {
		size_t cap = c->acks_cap ? 2 * c->acks_cap : 64;
		char(*a)[CL_ID_MAX] = realloc(c->acks, cap * sizeof *a);
		if (a == NULL)
			return CLUSTER_ENOMEM;
		c->acks = a;
		c->acks_cap = cap;
	}
	snprintf(c->acks[c->nacks++], CL_ID_MAX, "%s", id);
	return CLUSTER_OK;
}

static void entry_free(struct cl_entry *e)
{
	free(e->text);
	free(e->fresh);
	free(e);
}

/* Hands e's URLs new to the crawl to on_urls; its ID will be acked. */
static void entry_deliver(struct cluster *c, struct cl_entry *e)
{
	if (ack_push(c, e->id) != CLUSTER_OK)
		return; /* not acked: it comes again */
	long n = cl_lines_parse(c, e->text);
	size_t k = 0;
	for (long i = 0; i < n; i++) {
		if (e->fresh != NULL && (size_t)i < e->nurls && !e->fresh[i]) {
			c->st.seen_dropped++;
			continue;
		}
		c->urls[k++] = c->urls[i];
	}
	/* an entry whose URLs were all seen counts one: it waits for its ack */
	c->unacked += k > 0 ? k : 1;
	if (k > 0) {
		c->st.received += k;
		c->cb.on_urls(c, c->urls, k, c->cb.arg);
	}
}

static void read_again(struct cluster *c, unsigned ms);

/* Hands out, in order, the entries whose deduplication is done. */
static void entries_deliver(struct cluster *c)
{
	bool any = false;
	while (c->in_head != NULL && c->in_head->waiting == 0) {
		struct cl_entry *e = c->in_head;
		c->in_head = e->next;
		if (c->in_head == NULL)
			c->in_tail = NULL;
		c->filtering -= e->nurls;
		if (!e->dropped && !c->destroying && c->state == CL_LIVE)
			entry_deliver(c, e);
		entry_free(e);
		any = true;
	}
	if (any && !c->destroying && !uv_is_active((uv_handle_t *)&c->read) && !c->read_busy)
		read_again(c, 0); /* room again */
}

/* The answer to the SADD of URL i of an entry: 0, it was seen. */
struct cl_seen_ref {
	struct cl_entry *e;
	size_t i;
};

static void on_seen(void *priv, const redisReply *r)
{
	struct cl_seen_ref *ref = priv;
	struct cl_entry *e = ref->e;
	if (r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 0)
		e->fresh[ref->i] = 0;
	free(ref);
	if (--e->waiting == 0)
		entries_deliver(e->c);
}

/* Whether line (up to its newline) is "URL \t VIA \t DEPTH", as
 * cl_lines_parse() takes it; *ulen the URL's length, *next the next line. */
static bool line_split(const char *line, size_t *ulen, const char **next)
{
	const char *nl = strchr(line, '\n');
	*next = nl ? nl + 1 : line + strlen(line);
	size_t len = (size_t)(*next - line);
	const char *tab = memchr(line, '\t', len);
	const char *tab2 = tab ? memchr(tab + 1, '\t', len - (size_t)(tab + 1 - line)) : NULL;
	*ulen = tab ? (size_t)(tab - line) : 0;
	return tab2 != NULL;
}

/* SADDs every URL of e to its seen bucket (a URL whose SADD cannot be
 * sent counts as new). */
static void entry_dedup(struct cluster *c, struct cl_entry *e)
{
	e->fresh = malloc(e->nurls ? e->nurls : 1);
	if (e->fresh == NULL)
		return; /* all go as new */
	memset(e->fresh, 1, e->nurls);
	size_t i = 0, ulen;
	for (const char *line = e->text, *next; *line != '\0' && i < e->nurls; line = next) {
		if (!line_split(line, &ulen, &next))
			continue;
		char bucket[24], key[CL_KEY_MAX];
		snprintf(bucket, sizeof bucket, "%u",
		         (unsigned)(XXH3_64bits(line, ulen) % CLUSTER_SEEN_BUCKETS));
		unsigned slot = cl_key(c, "s", bucket, "", key);
		struct cl_seen_ref *ref = malloc(sizeof *ref);
		if (ref != NULL) {
			*ref = (struct cl_seen_ref){ e, i };
			e->waiting++;
			if (router_sendf(c->rt, slot, 0, on_seen, ref, "SADD %s %b", key, line,
			                 ulen) != ROUTER_OK) {
				e->waiting--;
				free(ref);
			}
		}
		i++;
	}
}

/* Counts the URL lines of text. */
static size_t lines_count(const char *text)
{
	size_t n = 0, ulen;
	for (const char *line = text, *next; *line != '\0'; line = next)
		n += line_split(line, &ulen, &next);
	return n;
}

/* Queues the entries of a read (raw: claimed again, never deduplicated). */
static size_t entries_take(struct cluster *c, const redisReply *entries, bool claimed)
{
	size_t n = 0;
	for (size_t i = 0; i < entries->elements && c->state == CL_LIVE && !c->destroying; i++) {
		const redisReply *er = entries->element[i];
		if (er->type != REDIS_REPLY_ARRAY || er->elements < 1 ||
		    er->element[0]->type != REDIS_REPLY_STRING)
			continue;
		struct cl_entry *e = calloc(1, sizeof *e);
		if (e == NULL)
			continue; /* pending: claimed again later */
		bool raw = true;
		const redisReply *lines = cl_entry_lines(er, &raw);
		e->c = c;
		snprintf(e->id, sizeof e->id, "%.*s", (int)er->element[0]->len,
		         er->element[0]->str);
		e->text = lines ? strndup(lines->str, lines->len) : strdup("");
		if (e->text == NULL) {
			free(e);
			continue;
		}
		e->nurls = lines_count(e->text);
		c->filtering += e->nurls;
		CHAIN_APPEND(c->in_head, c->in_tail, e);
		n++;
		if (!raw && !claimed)
			entry_dedup(c, e);
	}
	entries_deliver(c);
	return n;
}

/* ---- reading ---- */

static void read_again(struct cluster *c, unsigned ms)
{
	if (!c->destroying)
		uv_timer_start(&c->read, cl_read_timer_cb, ms, 0);
}

static void create_group(struct cluster *c)
{
	router_sendf(c->rt, c->inbox_slot, 0, NULL, NULL, "XGROUP CREATE %s g 0 MKSTREAM",
	             c->inbox);
}

static void on_read(void *priv, const redisReply *r)
{
	struct cluster *c = priv;
	c->read_busy = false;
	if (c->destroying || c->state != CL_LIVE)
		return;
	if (r == NULL) {
		c->claim_own = true; /* what that read took is pending: claimed again */
		snprintf(c->claim_cursor, CL_ID_MAX, "0-0");
		read_again(c, c->poll_ms);
		return;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		if (strncmp(r->str, "NOGROUP", 7) == 0)
			create_group(c); /* the stream was lost: start it anew */
		else
			cl_fail(c, "inbox read", r);
		read_again(c, c->poll_ms);
		return;
	}
	size_t n = 0;
	bool claiming = c->claim_own;
	if (claiming && r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
		snprintf(c->claim_cursor, CL_ID_MAX, "%.*s", (int)r->element[0]->len,
		         r->element[0]->str);
		c->claim_own = strcmp(c->claim_cursor, "0-0") != 0;
		n = entries_take(c, r->element[1], true);
	} else if (!claiming && r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	           r->element[0]->elements == 2) {
		n = entries_take(c, r->element[0]->element[1], false);
	}
	/* an empty inbox is polled less and less often, down to one in
	 * CLUSTER_POLL_IDLE_MAX polls: an idle agent costs Redis little */
	if (n > 0 || c->claim_own)
		c->poll_idle_ms = 0;
	else
		c->poll_idle_ms = c->poll_idle_ms == 0 ? c->poll_ms
		                  : c->poll_idle_ms < c->poll_ms * CLUSTER_POLL_IDLE_MAX
		                          ? 2 * c->poll_idle_ms
		                          : c->poll_ms * CLUSTER_POLL_IDLE_MAX;
	if (!uv_is_active((uv_handle_t *)&c->read))
		read_again(c, c->poll_idle_ms);
}

void cl_read_timer_cb(uv_timer_t *t)
{
	struct cluster *c = t->data;
	size_t taken = c->unacked + c->filtering;
	if (c->state != CL_LIVE || c->read_busy || c->no_reads || taken >= c->max_unacked ||
	    c->destroying)
		return; /* the next tick, delivery or ack starts reading again */
	/* Entries hold up to CLUSTER_BATCH_URLS URLs: read no more than the room left. */
	size_t room = (c->max_unacked - taken) / CLUSTER_BATCH_URLS;
	int count = room < 1 ? 1 : room > READ_COUNT ? READ_COUNT : (int)room;
	int rc;
	if (c->claim_own)
		rc = router_sendf(c->rt, c->inbox_slot, 0, on_read, c,
		                  "XAUTOCLAIM %s g %s 0 %s COUNT %d", c->inbox, c->consumer,
		                  c->claim_cursor, count);
	else /* durable: its URLs go into the seen set only once a replica holds
	      * the read, else a failover would hand them out again as unread,
	      * and as seen (lost) if this agent was fenced before delivering */
		rc = router_sendf(c->rt, c->inbox_slot, ROUTER_DURABLE, on_read, c,
		                  "XREADGROUP GROUP g %s COUNT %d STREAMS %s >", c->consumer, count,
		                  c->inbox);
	c->read_busy = rc == ROUTER_OK;
}

/* ---- acks ---- */

/* 1 if stream ID a ("ms-seq") is above b. */
static int id_above(const char *a, const char *b)
{
	unsigned long long ams = strtoull(a, NULL, 10), bms = strtoull(b, NULL, 10);
	const char *ad = strchr(a, '-'), *bd = strchr(b, '-');
	if (ams != bms)
		return ams > bms;
	return strtoull(ad ? ad + 1 : "0", NULL, 10) > strtoull(bd ? bd + 1 : "0", NULL, 10);
}

/* The IDs of one cluster_ack(), acked once the epoch has moved. */
struct ack_req {
	struct cluster *c;
	size_t n;
	char last[CL_ID_MAX];
	char (*ids)[CL_ID_MAX];
};

static void on_xack(void *priv, const redisReply *r)
{
	struct cluster *c = priv;
	if (r == NULL && !c->destroying) {
		c->claim_own = true; /* pending still: they come again */
		snprintf(c->claim_cursor, CL_ID_MAX, "0-0");
	}
}

static void on_epoch(void *priv, const redisReply *r)
{
	struct ack_req *q = priv;
	struct cluster *c = q->c;
	const char **argv = calloc(q->n + 3, sizeof *argv);
	size_t *argl = calloc(q->n + 3, sizeof *argl);
	bool sent = false;
	if (!c->destroying && r != NULL && r->type == REDIS_REPLY_INTEGER && argv && argl) {
		argv[0] = "XACK";
		argv[1] = c->inbox;
		argv[2] = "g";
		for (size_t i = 0; i < q->n; i++)
			argv[i + 3] = q->ids[i];
		for (size_t i = 0; i < q->n + 3; i++)
			argl[i] = strlen(argv[i]);
		sent = router_send(c->rt, c->inbox_slot, 0, on_xack, c, (int)q->n + 3, argv,
		                   argl) == ROUTER_OK;
		const char *targs[3] = { "1", c->inbox, q->last };
		if (sent)
			cl_eval(c, CL_S_TRIM, c->inbox_slot, 0, NULL, NULL, 3, targs);
	}
	if (!sent && !c->destroying) {
		c->claim_own = true;
		snprintf(c->claim_cursor, CL_ID_MAX, "0-0");
	}
	free(argv);
	free(argl);
	free(q->ids);
	free(q);
}

void cluster_ack(struct cluster *c)
{
	if (c->nacks == 0 || !cl_crawl_up(c))
		return;
	struct ack_req *q = calloc(1, sizeof *q);
	if (q == NULL)
		return;
	q->c = c;
	q->n = c->nacks;
	q->ids = c->acks; /* taken: a new array fills from here */
	c->acks = NULL;
	c->acks_cap = 0;
	const char *last = q->ids[0];
	for (size_t i = 1; i < q->n; i++)
		if (id_above(q->ids[i], last))
			last = q->ids[i];
	snprintf(q->last, sizeof q->last, "%s", last);
	char key[CL_KEY_MAX];
	snprintf(key, sizeof key, "%s:epoch", c->base);
	/* the epoch moves before the XACK: the census (cluster.h) */
	if (router_sendf(c->rt, c->crawl_slot, 0, on_epoch, q, "INCR %s", key) != ROUTER_OK) {
		c->acks = q->ids; /* kept for the next call */
		c->acks_cap = q->n;
		free(q);
		return;
	}
	c->nacks = 0;
	c->unacked = 0;
	if (!uv_is_active((uv_handle_t *)&c->read) && !c->read_busy)
		read_again(c, 0);
}

/* ---- driven by cluster.c ---- */

void cl_exchange_on_join(struct cluster *c)
{
	create_group(c);
	c->nacks = 0;
	c->unacked = 0;
	c->claim_own = true;
	snprintf(c->claim_cursor, CL_ID_MAX, "0-0");
	read_again(c, 0);
}

void cl_exchange_on_fence(struct cluster *c)
{
	uv_timer_stop(&c->read);
	c->nacks = 0; /* the heir or the next incarnation gets them */
	c->unacked = 0;
	for (struct cl_entry *e = c->in_head; e != NULL; e = e->next)
		e->dropped = true;
	entries_deliver(c);
}

void cl_exchange_tick(struct cluster *c)
{
	send_waiting(c);
	if (!uv_is_active((uv_handle_t *)&c->read) && !c->read_busy)
		read_again(c, 0);
}

void cl_exchange_free(struct cluster *c)
{
	struct cl_list *lists[] = { &c->queued, &c->retry };
	for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
		for (struct cl_batch *b; (b = list_pop(lists[i])) != NULL;)
			batch_free(b);
	for (size_t i = 0; i < c->ndests; i++) {
		batch_free(c->dests[i].open);
		free(c->dests[i].name);
	}
	free(c->dests);
	while (c->in_head != NULL) {
		struct cl_entry *e = c->in_head;
		c->in_head = e->next;
		entry_free(e);
	}
	free(c->acks);
	free(c->urls);
}

void cluster_stop_reading(struct cluster *c)
{
	c->no_reads = true;
	uv_timer_stop(&c->read);
}

const char *cluster_url_host(const char *url, size_t *len)
{
	const char *h = strstr(url, "://");
	h = h ? h + 3 : url;
	size_t n = strcspn(h, "/?#");
	const char *at = memchr(h, '@', n);
	if (at != NULL) {
		n -= (size_t)(at + 1 - h);
		h = at + 1;
	}
	const char *colon = h[0] == '[' ? memchr(h, ']', n) : h;
	colon = colon ? memchr(colon, ':', n - (size_t)(colon - h)) : NULL;
	*len = colon ? (size_t)(colon - h) : n;
	return h;
}
