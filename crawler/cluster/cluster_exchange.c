/*
 * cluster_exchange.c: URL batches to other agents (XADD), this agent's
 * inbox (XREADGROUP, XAUTOCLAIM of its earlier incarnations' entries,
 * XACK), and the re-routing of a dead agent's inbox by its heir. See
 * cluster.h for the protocol and cluster_int.h for the invariants.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/cluster_int.h"
#include "frontier/base/ascii.h"
#include "frontier/base/chain.h"
#include "frontier/base/clock.h"

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

static void batch_free(struct cl_batch *b)
{
	if (b != NULL)
		free(b->buf);
	free(b);
}

static void send_waiting(struct cluster *c);

static void on_xadd(redisAsyncContext *ac, void *reply, void *priv)
{
	struct cluster *c = priv;
	redisReply *r = reply;
	(void)ac;
	struct cl_batch *b = list_pop(&c->inflight);
	c->ninflight--;
	if (b == NULL || c->destroying) {
		batch_free(b);
		return;
	}
	if (r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_INTEGER)) {
		c->unsent -= b->nurls;
		batch_free(b);
		send_waiting(c);
		return;
	}
	cl_fail(c, "XADD", r);
	list_push(&c->retry, b); /* sent again once connected (next tick at the latest) */
}

/* A batch with dedup: only the URLs not in P:seen go to the inbox, and
 * they join P:seen, in one atomic step. Returns how many were new. */
static const char dedup_script[] =
        "local p, dest, text = ARGV[1], ARGV[2], ARGV[3]\n"
        "local out = {}\n"
        "for line in string.gmatch(text, '[^\\n]+') do\n"
        "  local url = string.match(line, '^[^\\t]*')\n"
        "  if redis.call('SADD', p .. ':seen', url) == 1 then out[#out + 1] = line end\n"
        "end\n"
        "if #out > 0 then\n"
        "  redis.call('XADD', p .. ':inbox:' .. dest, '*', 'u', table.concat(out, '\\n') .. "
        "'\\n')\n"
        "end\n"
        "return #out\n";

static int send_batch(struct cluster *c, redisAsyncContext *ac, struct cl_batch *b)
{
	if (c->dedup && !b->raw)
		return redisAsyncCommand(ac, on_xadd, c, "EVAL %s 0 %s %s %b", dedup_script,
		                         c->prefix, b->dest, b->buf, b->len);
	return redisAsyncCommand(ac, on_xadd, c, "XADD %s:inbox:%s * u %b", c->prefix, b->dest,
	                         b->buf, b->len);
}

/* Sends the batches waiting: the retried ones first, to keep their order. */
static void send_waiting(struct cluster *c)
{
	redisAsyncContext *ac;
	while ((ac = cl_conn(c)) != NULL && c->ninflight < CL_INFLIGHT_MAX &&
	       (c->retry.head != NULL || c->queued.head != NULL)) {
		struct cl_list *from = c->retry.head != NULL ? &c->retry : &c->queued;
		struct cl_batch *b = list_pop(from);
		if (send_batch(c, ac, b) != REDIS_OK) {
			b->next = from->head; /* put back in front */
			from->head = b;
			if (from->tail == NULL)
				from->tail = b;
			return;
		}
		list_push(&c->inflight, b);
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

static int batch_append(struct cl_batch *b, const char *url, const char *via, unsigned depth)
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
	if (c->unsent >= c->max_unsent)
		return CLUSTER_FULL;
	struct cl_dest *d = dest_find(c, owner, raw);
	if (d == NULL)
		return CLUSTER_ENOMEM;
	if (d->open == NULL) {
		d->open = calloc(1, sizeof *d->open);
		if (d->open == NULL)
			return CLUSTER_ENOMEM;
		d->open->dest = d->name;
		d->open->raw = raw;
		if (!uv_is_active((uv_handle_t *)&c->flush))
			uv_timer_start(&c->flush, cl_flush_timer_cb, c->flush_delay_ms, 0);
	}
	int rc = batch_append(d->open, url, via, depth);
	if (rc != CLUSTER_OK)
		return rc;
	c->unsent++;
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

/* The field "u" of an entry [id, [field, value, ...]], or NULL (deleted entry). */
static const redisReply *entry_lines(const redisReply *e)
{
	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
	    e->element[1]->type != REDIS_REPLY_ARRAY)
		return NULL;
	const redisReply *f = e->element[1];
	for (size_t i = 0; i + 1 < f->elements; i += 2)
		if (f->element[i]->len == 1 && f->element[i]->str[0] == 'u' &&
		    f->element[i + 1]->type == REDIS_REPLY_STRING)
			return f->element[i + 1];
	return NULL;
}

/* Splits an entry's lines into c->urls (pointing into c->text): the count, or -1. */
static long entry_parse(struct cluster *c, const redisReply *lines)
{
	if (lines->len + 1 > c->text_cap) {
		char *t = realloc(c->text, lines->len + 1);
		if (t == NULL)
			return -1;
		c->text = t;
		c->text_cap = lines->len + 1;
	}
	memcpy(c->text, lines->str, lines->len);
	c->text[lines->len] = '\0';
	size_t n = 0;
	for (char *line = c->text, *next; *line != '\0'; line = next) {
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

static int ack_push(struct cluster *c, const redisReply *id)
{
	if (c->nacks == c->acks_cap) {
		size_t cap = c->acks_cap ? 2 * c->acks_cap : 64;
		char(*a)[CL_ID_MAX] = realloc(c->acks, cap * sizeof *a);
		if (a == NULL)
			return CLUSTER_ENOMEM;
		c->acks = a;
		c->acks_cap = cap;
	}
	snprintf(c->acks[c->nacks++], CL_ID_MAX, "%.*s", (int)id->len, id->str);
	return CLUSTER_OK;
}

/* Hands the entries of a read or claim to on_urls: how many there were. */
static size_t deliver(struct cluster *c, const redisReply *entries)
{
	size_t n = 0;
	for (size_t i = 0; i < entries->elements && c->state == CL_LIVE && !c->destroying; i++) {
		const redisReply *e = entries->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 1 ||
		    e->element[0]->type != REDIS_REPLY_STRING || ack_push(c, e->element[0]) != 0)
			continue;
		n++;
		const redisReply *lines = entry_lines(e);
		long k = lines ? entry_parse(c, lines) : 0;
		if (k > 0) {
			c->unacked += (size_t)k;
			c->cb.on_urls(c, c->urls, (size_t)k, c->cb.arg);
		}
	}
	return n;
}

static void read_again(struct cluster *c, unsigned ms)
{
	if (!c->destroying)
		uv_timer_start(&c->read, cl_read_timer_cb, ms, 0);
}

static void create_group(struct cluster *c, const char *owner)
{
	redisAsyncContext *ac = cl_conn(c);
	if (ac != NULL)
		redisAsyncCommand(ac, NULL, NULL, "XGROUP CREATE %s:inbox:%s g 0 MKSTREAM",
		                  c->prefix, owner);
}

static void on_read(redisAsyncContext *ac, void *reply, void *priv)
{
	struct cluster *c = priv;
	redisReply *r = reply;
	(void)ac;
	c->read_busy = false;
	if (c->destroying || r == NULL || c->state != CL_LIVE)
		return;
	if (r->type == REDIS_REPLY_ERROR) {
		if (strncmp(r->str, "NOGROUP", 7) == 0)
			create_group(c, c->name); /* the stream was lost: start it anew */
		else
			cl_fail(c, "inbox read", r);
		read_again(c, c->poll_ms);
		return;
	}
	size_t n = 0;
	if (c->claim_own && r->type == REDIS_REPLY_ARRAY && r->elements >= 2) {
		snprintf(c->claim_cursor, CL_ID_MAX, "%.*s", (int)r->element[0]->len,
		         r->element[0]->str);
		c->claim_own = strcmp(c->claim_cursor, "0-0") != 0;
		n = deliver(c, r->element[1]);
	} else if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
	           r->element[0]->elements == 2) {
		n = deliver(c, r->element[0]->element[1]);
	}
	read_again(c, n > 0 || c->claim_own ? 0 : c->poll_ms);
}

void cl_read_timer_cb(uv_timer_t *t)
{
	struct cluster *c = t->data;
	redisAsyncContext *ac = cl_conn(c);
	if (ac == NULL || c->state != CL_LIVE || c->read_busy || c->no_reads ||
	    c->unacked >= c->max_unacked)
		return; /* the next tick, connection or ack starts reading again */
	/* Entries hold up to CLUSTER_BATCH_URLS URLs: read no more than the room left. */
	size_t room = (c->max_unacked - c->unacked) / CLUSTER_BATCH_URLS;
	int count = room < 1 ? 1 : room > READ_COUNT ? READ_COUNT : (int)room;
	int rc;
	if (c->claim_own)
		rc = redisAsyncCommand(ac, on_read, c, "XAUTOCLAIM %s:inbox:%s g %s 0 %s COUNT %d",
		                       c->prefix, c->name, c->consumer, c->claim_cursor, count);
	else
		rc = redisAsyncCommand(ac, on_read, c,
		                       "XREADGROUP GROUP g %s COUNT %d STREAMS %s:inbox:%s >",
		                       c->consumer, count, c->prefix, c->name);
	c->read_busy = rc == REDIS_OK;
}

/* 1 if stream ID a ("ms-seq") is above b. */
static int id_above(const char *a, const char *b)
{
	unsigned long long ams = strtoull(a, NULL, 10), bms = strtoull(b, NULL, 10);
	const char *ad = strchr(a, '-'), *bd = strchr(b, '-');
	if (ams != bms)
		return ams > bms;
	return strtoull(ad ? ad + 1 : "0", NULL, 10) > strtoull(bd ? bd + 1 : "0", NULL, 10);
}

/* Once nothing is pending in the inbox, the entries below the last one
 * acked are done: trimmed, so the inbox holds what is queued, not the whole
 * crawl's history. */
static const char trim_script[] =
        "local key, group = ARGV[1], 'g'\n"
        "local p = redis.call('XPENDING', key, group)\n"
        "if p[1] == 0 then redis.call('XTRIM', key, 'MINID', ARGV[2]) end\n"
        "return p[1]\n";

void cluster_ack(struct cluster *c)
{
	redisAsyncContext *ac = cl_conn(c);
	if (c->nacks == 0 || ac == NULL)
		return;
	size_t argc = c->nacks + 3;
	const char **argv = calloc(argc, sizeof *argv);
	size_t *argl = calloc(argc, sizeof *argl);
	char key[CLUSTER_PREFIX_MAX + ASSIGN_NAME_MAX + 16];
	if (argv == NULL || argl == NULL)
		goto out;
	argv[0] = "XACK";
	argv[1] = key;
	argv[2] = "g";
	snprintf(key, sizeof key, "%s:inbox:%s", c->prefix, c->name);
	for (size_t i = 0; i < c->nacks; i++)
		argv[i + 3] = c->acks[i];
	for (size_t i = 0; i < argc; i++)
		argl[i] = strlen(argv[i]);
	const char *last = c->acks[0];
	for (size_t i = 1; i < c->nacks; i++)
		if (id_above(c->acks[i], last))
			last = c->acks[i];
	if (redisAsyncCommandArgv(ac, NULL, NULL, (int)argc, argv, argl) == REDIS_OK) {
		redisAsyncCommand(ac, NULL, NULL, "EVAL %s 0 %s %s", trim_script, key, last);
		c->nacks = 0;
		c->unacked = 0;
		if (!uv_is_active((uv_handle_t *)&c->read))
			read_again(c, 0);
	}
out:
	free(argv);
	free(argl);
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

struct drain {
	struct cluster *c;
	char dead[ASSIGN_NAME_MAX + 1];
};

static void drain_dead(struct cluster *c);

static void on_drained(redisAsyncContext *ac, void *reply, void *priv)
{
	struct cluster *c = priv;
	(void)ac;
	if (reply == NULL || ((redisReply *)reply)->type != REDIS_REPLY_ARRAY)
		c->drain_found = false; /* EXEC failed: the entries stay for the next pass */
	if (--c->drains == 0 && c->drain_found && !c->destroying)
		drain_dead(c); /* this pass moved entries: more may wait */
}

/*
 * Re-routes the entries of dead agent d's inbox to their owners in the
 * current view: one MULTI of an XADD per owner and the XACK of the entries
 * on d's inbox, so each entry moves once.
 */
static void reroute(struct cluster *c, const char *dead, const redisReply *entries)
{
	redisAsyncContext *ac = cl_conn(c);
	size_t nown = c->nlive, nids = 0;
	struct cl_batch *out = calloc(nown, sizeof *out);
	const char **argv = calloc(entries->elements + 3, sizeof *argv);
	size_t *argl = calloc(entries->elements + 3, sizeof *argl);
	char key[CLUSTER_PREFIX_MAX + ASSIGN_NAME_MAX + 16];
	if (ac == NULL || out == NULL || argv == NULL || argl == NULL || c->view == NULL)
		goto out;
	snprintf(key, sizeof key, "%s:inbox:%s", c->prefix, dead);
	for (size_t i = 0; i < entries->elements; i++) {
		const redisReply *e = entries->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->element[0]->type != REDIS_REPLY_STRING)
			continue;
		argv[3 + nids] = e->element[0]->str;
		argl[3 + nids++] = e->element[0]->len;
		const redisReply *lines = entry_lines(e);
		long k = lines ? entry_parse(c, lines) : 0;
		for (long j = 0; j < k; j++) {
			size_t hl;
			const char *h = cluster_url_host(c->urls[j].url, &hl);
			const char *owner = assign_view_owner(c->view, h, hl);
			size_t o = 0;
			while (o < nown && strcmp(c->live[o], owner) != 0)
				o++;
			if (o == nown ||
			    batch_append(&out[o], c->urls[j].url, c->urls[j].via, c->urls[j].depth))
				goto out; /* nothing sent: the entries stay for the next pass */
		}
	}
	redisAsyncCommand(ac, NULL, NULL, "MULTI");
	for (size_t o = 0; o < nown; o++)
		if (out[o].nurls > 0)
			redisAsyncCommand(ac, NULL, NULL, "XADD %s:inbox:%s * u %b", c->prefix,
			                  c->live[o], out[o].buf, out[o].len);
	argv[0] = "XACK";
	argv[1] = key;
	argv[2] = "g";
	argl[0] = 4;
	argl[1] = strlen(key);
	argl[2] = 1;
	redisAsyncCommandArgv(ac, NULL, NULL, (int)(nids + 3), argv, argl);
	if (redisAsyncCommand(ac, on_drained, c, "EXEC") == REDIS_OK)
		c->drains++;
out:
	for (size_t o = 0; out != NULL && o < nown; o++)
		free(out[o].buf);
	free(out);
	free(argv);
	free(argl);
}

/* A claim ([cursor, entries, deleted]) or a read ([[stream, entries]]) of a dead inbox. */
static void on_dead_read(redisAsyncContext *ac, void *reply, void *priv)
{
	struct drain *d = priv;
	struct cluster *c = d->c;
	redisReply *r = reply;
	(void)ac;
	c->drains--;
	const redisReply *entries = NULL;
	if (c->destroying || r == NULL || r->type != REDIS_REPLY_ARRAY || c->state != CL_LIVE)
		entries = NULL;
	else if (r->elements >= 2 && r->element[1]->type == REDIS_REPLY_ARRAY)
		entries = r->element[1];
	else if (r->elements == 1 && r->element[0]->elements == 2)
		entries = r->element[0]->element[1];
	if (entries != NULL && entries->elements > 0) {
		c->drain_found = true;
		reroute(c, d->dead, entries);
	}
	free(d);
}

/* The first dead agent whose heir is this agent, or NULL. */
static const char *dead_to_drain(struct cluster *c)
{
	for (size_t i = 0; c->view != NULL && i < c->ndead; i++) {
		const char *heir = assign_view_owner(c->view, c->dead[i], strlen(c->dead[i]));
		if (heir != NULL && strcmp(heir, c->name) == 0 && strcmp(c->dead[i], c->name) != 0)
			return c->dead[i];
	}
	return NULL;
}

/* One pass over a dead inbox: entries idle for a lease period, then unread ones. */
static void drain_dead(struct cluster *c)
{
	redisAsyncContext *ac = cl_conn(c);
	const char *dead = dead_to_drain(c);
	if (ac == NULL || dead == NULL || c->drains > 0 || c->state != CL_LIVE)
		return;
	c->drain_found = false;
	for (int step = 0; step < 2; step++) {
		struct drain *d = calloc(1, sizeof *d);
		if (d == NULL)
			return;
		d->c = c;
		snprintf(d->dead, sizeof d->dead, "%s", dead);
		int rc = step == 0
		                 ? redisAsyncCommand(ac, on_dead_read, d,
		                                     "XAUTOCLAIM %s:inbox:%s g %s %u 0-0 COUNT %d",
		                                     c->prefix, dead, c->consumer, c->lease_ms,
		                                     READ_COUNT)
		                 : redisAsyncCommand(
		                           ac, on_dead_read, d,
		                           "XREADGROUP GROUP g %s COUNT %d STREAMS %s:inbox:%s >",
		                           c->consumer, READ_COUNT, c->prefix, dead);
		if (rc != REDIS_OK) {
			free(d);
			return;
		}
		c->drains++;
	}
}

void cl_exchange_on_connect(struct cluster *c)
{
	/* Entries handed out but not acked may have missed their XACK: claim
	 * them again (re-delivery, bounded by max_unacked). */
	c->nacks = 0;
	c->unacked = 0;
	c->claim_own = true;
	snprintf(c->claim_cursor, CL_ID_MAX, "0-0");
	send_waiting(c);
}

void cl_exchange_on_join(struct cluster *c)
{
	create_group(c, c->name);
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
}

void cl_exchange_tick(struct cluster *c)
{
	send_waiting(c);
	drain_dead(c);
	if (!uv_is_active((uv_handle_t *)&c->read) && !c->read_busy)
		read_again(c, 0);
}

void cl_exchange_free(struct cluster *c)
{
	struct cl_list *lists[] = { &c->queued, &c->retry, &c->inflight };
	for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
		for (struct cl_batch *b; (b = list_pop(lists[i])) != NULL;)
			batch_free(b);
	for (size_t i = 0; i < c->ndests; i++) {
		batch_free(c->dests[i].open);
		free(c->dests[i].name);
	}
	free(c->dests);
	free(c->acks);
	free(c->urls);
	free(c->text);
}

void cluster_stop_reading(struct cluster *c)
{
	c->no_reads = true;
	uv_timer_stop(&c->read);
}
