/*
 * cluster_rules.c: the crawl's shared URL rules {P}:rules (cluster.h): a
 * list that only grows (RPUSH, a durable write), each entry a rule entry
 * (cluster_rule_entry_encode); an entry's index in it is its name, so an
 * agent reads from the first index it has not applied (LRANGE).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/cluster_int.h"

/* An entry begins with this, then "ORIGIN \t SOURCE \n", then the text. */
static const char entry_magic[] = "rules 1\t";

/* A name or source of an entry: not empty, no control character. */
static int entry_word_ok(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

char *cluster_rule_entry_encode(const char *origin, const char *source, const char *text,
                                size_t len, size_t *out_len)
{
	size_t ol = strlen(origin), sl = strlen(source), ml = sizeof entry_magic - 1;
	if (!entry_word_ok(origin, ol, ASSIGN_NAME_MAX) ||
	    !entry_word_ok(source, sl, CLUSTER_RULE_SOURCE_MAX) || len == 0 ||
	    len > CLUSTER_RULE_TEXT_MAX || memchr(text, '\0', len))
		return NULL;
	size_t n = ml + ol + 1 + sl + 1 + len;
	char *e = malloc(n + 1);
	if (!e)
		return NULL;
	memcpy(e, entry_magic, ml);
	memcpy(e + ml, origin, ol);
	e[ml + ol] = '\t';
	memcpy(e + ml + ol + 1, source, sl);
	e[ml + ol + 1 + sl] = '\n';
	memcpy(e + ml + ol + sl + 2, text, len);
	e[n] = '\0';
	*out_len = n;
	return e;
}

int cluster_rule_entry_decode(const char *e, size_t len, struct cluster_rule_entry *out)
{
	size_t ml = sizeof entry_magic - 1;
	if (len < ml || memcmp(e, entry_magic, ml) != 0 || memchr(e, '\0', len))
		return CLUSTER_EINVAL;
	const char *origin = e + ml, *end = e + len;
	const char *tab = memchr(origin, '\t', (size_t)(end - origin));
	const char *nl = tab ? memchr(tab + 1, '\n', (size_t)(end - tab - 1)) : NULL;
	if (!nl || !entry_word_ok(origin, (size_t)(tab - origin), ASSIGN_NAME_MAX) ||
	    !entry_word_ok(tab + 1, (size_t)(nl - tab - 1), CLUSTER_RULE_SOURCE_MAX) ||
	    end - nl - 1 <= 0 || (size_t)(end - nl - 1) > CLUSTER_RULE_TEXT_MAX)
		return CLUSTER_EINVAL;
	*out = (struct cluster_rule_entry){ .origin = origin,
		                            .origin_len = (size_t)(tab - origin),
		                            .source = tab + 1,
		                            .source_len = (size_t)(nl - tab - 1),
		                            .text = nl + 1,
		                            .text_len = (size_t)(end - nl - 1) };
	return CLUSTER_OK;
}

struct rules_req {
	struct cluster *c;
	uint64_t from;
	void (*pushed)(void *arg, bool ok, uint64_t index);
	void (*read)(void *arg, bool ok, uint64_t from, const struct cluster_rule_text *e,
	             size_t n);
	void *arg;
};

static void on_pushed(void *priv, const redisReply *r)
{
	struct rules_req *q = priv;
	bool ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
	if (!ok)
		cl_fail(q->c, "shared rules", r);
	if (!q->c->destroying)
		q->pushed(q->arg, ok, ok ? (uint64_t)r->integer - 1 : 0);
	free(q);
}

/* Sends argv (argv[1] set here: the key {P}:rules) with a copy of tmpl as
 * the reply's state. A cluster_err. */
static int rules_send(struct cluster *c, const struct rules_req *tmpl, unsigned flags,
                      router_reply_fn *fn, int argc, const char **argv, size_t *argl)
{
	if (!cl_crawl_up(c))
		return CLUSTER_EDOWN;
	struct rules_req *q = malloc(sizeof *q);
	if (q == NULL)
		return CLUSTER_ENOMEM;
	*q = *tmpl;
	char key[CL_KEY_MAX];
	argl[1] = (size_t)snprintf(key, sizeof key, "%s:rules", c->base);
	argv[1] = key;
	if (router_send(c->rt, c->crawl_slot, flags, fn, q, argc, argv, argl) != ROUTER_OK) {
		free(q);
		return CLUSTER_EDOWN;
	}
	return CLUSTER_OK;
}

int cluster_rules_push(struct cluster *c, const char *entry, size_t len,
                       void (*done)(void *arg, bool ok, uint64_t index), void *arg)
{
	if (done == NULL || len == 0)
		return CLUSTER_EINVAL;
	const struct rules_req q = { .c = c, .pushed = done, .arg = arg };
	const char *argv[3] = { "RPUSH", NULL, entry };
	size_t argl[3] = { 5, 0, len };
	return rules_send(c, &q, ROUTER_DURABLE, on_pushed, 3, argv, argl);
}

static void on_read(void *priv, const redisReply *r)
{
	struct rules_req *q = priv;
	bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements <= CLUSTER_RULES_READ;
	for (size_t i = 0; ok && i < r->elements; i++)
		ok = r->element[i]->type == REDIS_REPLY_STRING;
	if (!ok)
		cl_fail(q->c, "shared rules", r);
	struct cluster_rule_text e[CLUSTER_RULES_READ];
	size_t n = ok ? r->elements : 0;
	for (size_t i = 0; i < n; i++)
		e[i] = (struct cluster_rule_text){ r->element[i]->str, r->element[i]->len };
	if (!q->c->destroying)
		q->read(q->arg, ok, q->from, e, n);
	free(q);
}

int cluster_rules_read(struct cluster *c, uint64_t from,
                       void (*done)(void *arg, bool ok, uint64_t from,
                                    const struct cluster_rule_text *e, size_t n),
                       void *arg)
{
	if (done == NULL || from > INT64_MAX - CLUSTER_RULES_READ)
		return CLUSTER_EINVAL;
	const struct rules_req q = { .c = c, .from = from, .read = done, .arg = arg };
	char first[24], last[24];
	const char *argv[4] = { "LRANGE", NULL, first, last };
	size_t argl[4] = { 6, 0, (size_t)snprintf(first, sizeof first, "%" PRIu64, from),
		           (size_t)snprintf(last, sizeof last, "%" PRIu64,
		                            from + CLUSTER_RULES_READ - 1) };
	return rules_send(c, &q, 0, on_read, 4, argv, argl);
}
