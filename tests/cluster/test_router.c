/*
 * test_router.c: Check suite for crawler/cluster/router.h against fake
 * Redis nodes (RESP servers on free loopback ports, on the test's own
 * loop, whose answers each test scripts):
 *  - CRC16-XMODEM against Redis's test vector ("123456789" -> 0x31C3) and
 *    key slots against the values Redis documents, hash tags included;
 *  - one Redis (CLUSTER SLOTS answers "cluster support disabled"): every
 *    slot goes to it;
 *  - MOVED: the command is sent again to the node named, the map's entry
 *    changes, the next command for the slot goes there at once;
 *  - ASK: ASKING then the command to the node named, once; the map keeps
 *    the slot where it was;
 *  - TRYAGAIN and CLUSTERDOWN: sent again after a growing back-off;
 *    given up after ROUTER_RETRIES with the error as the reply;
 *  - a node down: its commands get no reply (NULL); the map read again
 *    from another node once that node names the replica that took over
 *    (a failover), and commands for the slots go there;
 *  - NOSCRIPT: SCRIPT LOAD, then the same EVALSHA; the script's hash is
 *    SHA-1 of its body;
 *  - a durable write to a master with a replica (a cluster's map, or ROLE
 *    of one Redis) is answered only after the WAIT that follows it;
 *  - a WAIT that times out: WAIT again while ROLE lists a replica online;
 *    answered NULL if ROLE says the node is a replica now; answered and
 *    counted as not replicated if no replica is online;
 *  - a command never answered drops its connection after stuck_ms.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/router.h"
#include "frontier/base/clock.h"
#include "tests/cluster/loop_run.h"

/* ---- a fake node ---- */

#define FAKE_CLIENTS 8
#define FAKE_LOG 64

struct fake;
/* The RESP answer to a command (argv[0..argc)), NULL: none now. */
typedef const char *fake_handler(struct fake *f, int argc, char **argv);

struct fake_client {
	uv_tcp_t tcp;
	struct fake *f;
	char buf[65536];
	size_t len;
	bool open;
};

struct fake {
	uv_tcp_t server;
	int port;
	fake_handler *handle;
	char slots[1024]; /* the CLUSTER SLOTS answer */
	struct fake_client *clients[FAKE_CLIENTS];
	char log[FAKE_LOG][128]; /* commands received, "ARG0 ARG1" */
	int nlog;
	int counter;              /* for the handlers */
	struct fake_client *held; /* a client waiting for an answer */
	bool down;
};

static void fake_log(struct fake *f, int argc, char **argv)
{
	if (f->nlog >= FAKE_LOG)
		return;
	snprintf(f->log[f->nlog++], sizeof f->log[0], "%s%s%s", argv[0], argc > 1 ? " " : "",
	         argc > 1 ? argv[1] : "");
}

static int fake_count(const struct fake *f, const char *entry)
{
	int n = 0;
	for (int i = 0; i < f->nlog; i++)
		n += strcmp(f->log[i], entry) == 0;
	return n;
}

static void on_written(uv_write_t *w, int status)
{
	(void)status;
	free(w->data);
	free(w);
}

static void fake_write(struct fake_client *c, const char *s)
{
	if (!c->open)
		return;
	uv_write_t *w = malloc(sizeof *w);
	char *copy = strdup(s);
	ck_assert(w && copy);
	w->data = copy;
	uv_buf_t b = uv_buf_init(copy, (unsigned)strlen(copy));
	ck_assert_int_eq(uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_written), 0);
}

/* One whole command at the start of c->buf: its length, 0 if incomplete. */
static size_t fake_parse(struct fake_client *c, int *argc, char **argv, int max)
{
	char *p = c->buf, *end = c->buf + c->len;
	if (p == end || *p != '*')
		return 0;
	char *nl = memchr(p, '\n', (size_t)(end - p));
	if (nl == NULL)
		return 0;
	int n = (int)strtol(p + 1, NULL, 10);
	ck_assert(n > 0 && n <= max);
	p = nl + 1;
	for (int i = 0; i < n; i++) {
		nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;
		if (nl == NULL)
			return 0;
		long len = strtol(p + 1, NULL, 10);
		if (len < 0 || (size_t)(end - (nl + 1)) < (size_t)len + 2)
			return 0;
		argv[i] = nl + 1;
		p = nl + 1 + (size_t)len + 2;
	}
	/* terminate the arguments now that the command is whole */
	for (int i = 0; i < n; i++) {
		char *a = argv[i];
		char *hdr = a - 2;
		while (*hdr != '$')
			hdr--;
		a[strtol(hdr + 1, NULL, 10)] = '\0';
	}
	*argc = n;
	return (size_t)(p - c->buf);
}

static void fake_alloc(uv_handle_t *h, size_t size, uv_buf_t *b)
{
	struct fake_client *c = h->data;
	(void)size;
	*b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof c->buf - c->len - 1));
}

static void fake_client_closed(uv_handle_t *h)
{
	free(h->data);
}

static void fake_client_close(struct fake_client *c)
{
	if (!c->open)
		return;
	c->open = false;
	for (int i = 0; i < FAKE_CLIENTS; i++)
		if (c->f->clients[i] == c)
			c->f->clients[i] = NULL;
	uv_close((uv_handle_t *)&c->tcp, fake_client_closed);
}

static void fake_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	struct fake_client *c = s->data;
	(void)b;
	if (nread < 0) {
		fake_client_close(c);
		return;
	}
	c->len += (size_t)nread;
	int argc;
	char *argv[32];
	size_t used;
	while ((used = fake_parse(c, &argc, argv, 32)) > 0) {
		struct fake *f = c->f;
		fake_log(f, argc, argv);
		const char *out;
		if (argc == 2 && strcasecmp(argv[0], "CLUSTER") == 0)
			out = f->slots;
		else
			out = f->handle(f, argc, argv);
		if (out != NULL)
			fake_write(c, out);
		else
			f->held = c;
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
	}
}

static void fake_accept(uv_stream_t *server, int status)
{
	struct fake *f = server->data;
	ck_assert_int_eq(status, 0);
	struct fake_client *c = calloc(1, sizeof *c);
	ck_assert_ptr_nonnull(c);
	c->f = f;
	uv_tcp_init(&loop, &c->tcp);
	c->tcp.data = c;
	ck_assert_int_eq(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
	c->open = true;
	for (int i = 0; i < FAKE_CLIENTS; i++)
		if (f->clients[i] == NULL) {
			f->clients[i] = c;
			break;
		}
	uv_read_start((uv_stream_t *)&c->tcp, fake_alloc, fake_read);
}

static void fake_start(struct fake *f, fake_handler *h)
{
	memset(f, 0, sizeof *f);
	f->handle = h;
	snprintf(f->slots, sizeof f->slots, "-ERR This instance has cluster support disabled\r\n");
	struct sockaddr_in a;
	uv_ip4_addr("127.0.0.1", 0, &a);
	uv_tcp_init(&loop, &f->server);
	f->server.data = f;
	ck_assert_int_eq(uv_tcp_bind(&f->server, (struct sockaddr *)&a, 0), 0);
	ck_assert_int_eq(uv_listen((uv_stream_t *)&f->server, 16, fake_accept), 0);
	int len = sizeof a;
	uv_tcp_getsockname(&f->server, (struct sockaddr *)&a, &len);
	f->port = ntohs(a.sin_port);
}

/* The node dies: its port refuses, its connections close. */
static void fake_stop(struct fake *f)
{
	if (f->down)
		return;
	f->down = true;
	for (int i = 0; i < FAKE_CLIENTS; i++)
		if (f->clients[i] != NULL)
			fake_client_close(f->clients[i]);
	uv_close((uv_handle_t *)&f->server, NULL);
}

/* CLUSTER SLOTS: ranges [lo, hi] served by ports, replicas each. */
static void fake_slots(struct fake *f, int n, const int *lo, const int *hi, const int *port,
                       int replicas)
{
	size_t len = (size_t)snprintf(f->slots, sizeof f->slots, "*%d\r\n", n);
	for (int i = 0; i < n; i++) {
		len += (size_t)snprintf(
		        f->slots + len, sizeof f->slots - len,
		        "*%d\r\n:%d\r\n:%d\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$2\r\nid\r\n",
		        3 + replicas, lo[i], hi[i], port[i]);
		for (int k = 0; k < replicas; k++)
			len += (size_t)snprintf(f->slots + len, sizeof f->slots - len,
			                        "*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$2\r\nrp\r\n",
			                        port[i] + 1000);
	}
}

static void fake_all_slots(struct fake *f, int port, int replicas)
{
	int lo = 0, hi = ROUTER_SLOTS - 1;
	fake_slots(f, 1, &lo, &hi, &port, replicas);
}

/* ---- running ---- */

struct answer {
	int n;
	int type;
	long long integer;
	char str[128];
	uint64_t at_ms;
};

static void on_answer(void *priv, const redisReply *r)
{
	struct answer *a = priv;
	a->n++;
	a->at_ms = monotonic_ms();
	a->type = r ? r->type : -1;
	a->integer = r ? r->integer : 0;
	snprintf(a->str, sizeof a->str, "%s", r && r->str ? r->str : "");
}

static bool answered(void *arg)
{
	return ((struct answer *)arg)->n > 0;
}

static bool mapped(void *arg)
{
	struct router_stats st;
	router_stats(arg, &st);
	return st.mapped;
}

static struct router *router_on(int port, unsigned stuck_ms)
{
	struct router_options o = { .host = "127.0.0.1", .port = port, .stuck_ms = stuck_ms };
	struct router *r;
	ck_assert_int_eq(router_create(&loop, &o, &r), ROUTER_OK);
	ck_assert_msg(run_until(mapped, r, 3000), "no map");
	return r;
}

/* GET key through r, run until answered. */
static void get(struct router *r, const char *key, struct answer *a)
{
	memset(a, 0, sizeof *a);
	unsigned slot = router_key_slot(key, strlen(key));
	ck_assert_int_eq(router_sendf(r, slot, 0, on_answer, a, "GET %s", key), ROUTER_OK);
	ck_assert_msg(run_until(answered, a, 3000), "GET %s not answered", key);
}

static void finish(struct router *r, struct fake *f, int n)
{
	router_destroy(r);
	for (int i = 0; i < n; i++)
		fake_stop(&f[i]);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}

static void setup(void)
{
	ck_assert_int_eq(uv_loop_init(&loop), 0);
}

/* ---- tests ---- */

START_TEST(test_crc16_and_slots)
{
	ck_assert_uint_eq(router_crc16("123456789", 9), 0x31C3);
	ck_assert_uint_eq(router_key_slot("foo", 3), 12182);
	ck_assert_uint_eq(router_key_slot("bar", 3), 5061);
	ck_assert_uint_eq(router_key_slot("hello", 5), 866);
	const char *a = "{user1000}.following", *b = "{user1000}.followers";
	ck_assert_uint_eq(router_key_slot(a, strlen(a)), router_key_slot(b, strlen(b)));
	ck_assert_uint_eq(router_key_slot(a, strlen(a)), router_key_slot("user1000", 8));
	/* empty tag: the whole key; only the first {...} counts */
	ck_assert_uint_eq(router_key_slot("foo{}{bar}", 10),
	                  router_crc16("foo{}{bar}", 10) % 16384);
	ck_assert_uint_eq(router_key_slot("foo{{bar}}zap", 13), router_key_slot("{bar", 4));
	ck_assert_uint_eq(router_key_slot("foo{bar}{zap}", 13), router_key_slot("bar", 3));
	ck_assert_uint_eq(router_key_slot("foo{bar", 7), router_crc16("foo{bar", 7) % 16384);
}
END_TEST

static const char *echo_handler(struct fake *f, int argc, char **argv)
{
	static char out[256];
	snprintf(out, sizeof out, "+%d:%s\r\n", f->port, argc > 1 ? argv[1] : "");
	return out;
}

START_TEST(test_single)
{
	struct fake f;
	fake_start(&f, echo_handler);
	struct router *r = router_on(f.port, 0);
	struct router_stats st;
	router_stats(r, &st);
	ck_assert(!st.cluster);
	ck_assert_uint_eq(st.nodes, 1);
	struct answer a;
	for (int i = 0; i < 20; i++) {
		char key[16];
		snprintf(key, sizeof key, "k%d", i);
		get(r, key, &a);
		char want[64];
		snprintf(want, sizeof want, "%d:%s", f.port, key);
		ck_assert_str_eq(a.str, want);
	}
	finish(r, &f, 1);
}
END_TEST

static struct fake *fakes; /* the test's nodes, for the handlers */

/* Node 0 sends "moved" to node 1 (and names node 1 for its slot in its
 * map from then on); node 1 answers. */
static const char *moved_handler(struct fake *f, int argc, char **argv)
{
	static char out[128];
	if (f == &fakes[0] && argc == 2 && strcmp(argv[1], "moved") == 0) {
		int slot = (int)router_key_slot("moved", 5);
		int lo[3] = { 0, slot, slot + 1 }, hi[3] = { slot - 1, slot, ROUTER_SLOTS - 1 };
		int port[3] = { fakes[0].port, fakes[1].port, fakes[0].port };
		fake_slots(&fakes[0], 3, lo, hi, port, 0);
		snprintf(out, sizeof out, "-MOVED %d 127.0.0.1:%d\r\n", slot, fakes[1].port);
		return out;
	}
	return echo_handler(f, argc, argv);
}

START_TEST(test_moved)
{
	struct fake f[2];
	fakes = f;
	fake_start(&f[0], moved_handler);
	fake_start(&f[1], moved_handler);
	fake_all_slots(&f[0], f[0].port, 0);
	struct router *r = router_on(f[0].port, 0);
	struct router_stats st;
	router_stats(r, &st);
	ck_assert(st.cluster);
	struct answer a;
	get(r, "moved", &a);
	char want[64], addr[ROUTER_ADDR_MAX];
	snprintf(want, sizeof want, "%d:moved", f[1].port);
	ck_assert_str_eq(a.str, want);
	router_stats(r, &st);
	ck_assert_uint_eq(st.moved, 1);
	ck_assert(router_slot_node(r, router_key_slot("moved", 5), addr));
	snprintf(want, sizeof want, "127.0.0.1:%d", f[1].port);
	ck_assert_str_eq(addr, want);
	get(r, "moved", &a); /* straight to node 1 now */
	ck_assert_int_eq(fake_count(&f[0], "GET moved"), 1);
	ck_assert_int_eq(fake_count(&f[1], "GET moved"), 2);
	get(r, "other", &a); /* another slot stays on node 0 */
	snprintf(want, sizeof want, "%d:other", f[0].port);
	ck_assert_str_eq(a.str, want);
	finish(r, f, 2);
}
END_TEST

/* Node 0 sends "asked" to node 1 with ASK; node 1 answers it only after
 * ASKING (else MOVED back to node 0). */
static const char *ask_handler(struct fake *f, int argc, char **argv)
{
	static char out[128];
	int slot = (int)router_key_slot("asked", 5);
	if (argc == 1 && strcmp(argv[0], "ASKING") == 0) {
		f->counter = 1;
		return "+OK\r\n";
	}
	if (argc == 2 && strcmp(argv[1], "asked") == 0) {
		if (f == &fakes[0])
			snprintf(out, sizeof out, "-ASK %d 127.0.0.1:%d\r\n", slot, fakes[1].port);
		else if (f->counter == 1)
			snprintf(out, sizeof out, "+imported\r\n");
		else
			snprintf(out, sizeof out, "-MOVED %d 127.0.0.1:%d\r\n", slot,
			         fakes[0].port);
		f->counter = 0;
		return out;
	}
	f->counter = 0;
	return echo_handler(f, argc, argv);
}

START_TEST(test_ask)
{
	struct fake f[2];
	fakes = f;
	fake_start(&f[0], ask_handler);
	fake_start(&f[1], ask_handler);
	fake_all_slots(&f[0], f[0].port, 0);
	struct router *r = router_on(f[0].port, 0);
	struct answer a;
	get(r, "asked", &a);
	ck_assert_str_eq(a.str, "imported");
	struct router_stats st;
	router_stats(r, &st);
	ck_assert_uint_eq(st.asked, 1);
	ck_assert_uint_eq(st.moved, 0);
	ck_assert_int_eq(fake_count(&f[1], "ASKING"), 1);
	char addr[ROUTER_ADDR_MAX], want[64];
	ck_assert(router_slot_node(r, router_key_slot("asked", 5), addr));
	snprintf(want, sizeof want, "127.0.0.1:%d", f[0].port);
	ck_assert_str_eq(addr, want); /* the map is unchanged */
	get(r, "asked", &a);          /* asks node 0 again, is sent on again */
	ck_assert_str_eq(a.str, "imported");
	ck_assert_int_eq(fake_count(&f[0], "GET asked"), 2);
	ck_assert_int_eq(fake_count(&f[1], "ASKING"), 2);
	finish(r, f, 2);
}
END_TEST

/* "busy N": TRYAGAIN N times, then OK; "down": CLUSTERDOWN always. */
static const char *retry_handler(struct fake *f, int argc, char **argv)
{
	if (argc == 2 && strncmp(argv[1], "busy", 4) == 0) {
		if (f->counter++ < strtol(argv[1] + 4, NULL, 10))
			return "-TRYAGAIN Multiple keys request during rehashing of slot\r\n";
		return "+OK\r\n";
	}
	if (argc == 2 && strcmp(argv[1], "down") == 0)
		return "-CLUSTERDOWN The cluster is down\r\n";
	return echo_handler(f, argc, argv);
}

START_TEST(test_tryagain_clusterdown)
{
	struct fake f;
	fake_start(&f, retry_handler);
	fake_all_slots(&f, f.port, 0);
	struct router *r = router_on(f.port, 0);
	struct answer a;
	uint64_t t0 = monotonic_ms();
	get(r, "busy3", &a);
	ck_assert_str_eq(a.str, "OK");
	ck_assert_int_eq(fake_count(&f, "GET busy3"), 4);
	/* back-offs of 20, 40 and 80 ms */
	ck_assert_uint_ge(a.at_ms - t0, 140);
	struct router_stats st;
	router_stats(r, &st);
	ck_assert_uint_eq(st.retried, 3);
	uint64_t refreshes = st.refreshes;
	get(r, "down", &a);
	ck_assert_int_eq(a.type, REDIS_REPLY_ERROR);
	ck_assert(strncmp(a.str, "CLUSTERDOWN", 11) == 0);
	ck_assert_int_eq(fake_count(&f, "GET down"), ROUTER_RETRIES + 1);
	router_stats(r, &st);
	ck_assert_uint_gt(st.refreshes, refreshes); /* the map was read again */
	finish(r, &f, 1);
}
END_TEST

static bool slot_on(void *arg)
{
	void **p = arg;
	char addr[ROUTER_ADDR_MAX];
	return router_slot_node(p[0], *(unsigned *)p[2], addr) && strcmp(addr, p[1]) == 0;
}

static bool up(void *arg)
{
	void **p = arg;
	return router_up(p[0], *(unsigned *)p[2]);
}

START_TEST(test_node_down_failover)
{
	struct fake f[3];
	fakes = f;
	for (int i = 0; i < 3; i++)
		fake_start(&f[i], echo_handler);
	int lo[2] = { 0, 8192 }, hi[2] = { 8191, ROUTER_SLOTS - 1 };
	int port[2] = { f[0].port, f[1].port };
	fake_slots(&f[0], 2, lo, hi, port, 1);
	fake_slots(&f[1], 2, lo, hi, port, 1);
	struct router *r = router_on(f[0].port, 0);
	struct router_stats st;
	router_stats(r, &st);
	ck_assert_uint_eq(st.nodes, 2);
	const char *key = "hello"; /* slot 866 */
	const char *high = "foo";  /* slot 12182 */
	struct answer a;
	get(r, key, &a);
	char want[64];
	snprintf(want, sizeof want, "%d:%s", f[0].port, key);
	ck_assert_str_eq(a.str, want);
	get(r, high, &a);
	snprintf(want, sizeof want, "%d:%s", f[1].port, high);
	ck_assert_str_eq(a.str, want);
	/* node 1 dies: a command sent to it gets no answer */
	fake_stop(&f[1]);
	memset(&a, 0, sizeof a);
	unsigned slot = router_key_slot(high, strlen(high));
	for (int i = 0; i < 5; i++) {
		/* refused (not connected) or answered NULL (a reconnection failed) */
		memset(&a, 0, sizeof a);
		int rc = router_sendf(r, slot, 0, on_answer, &a, "GET %s", high);
		ck_assert(rc == ROUTER_OK || rc == ROUTER_EDOWN);
		if (rc == ROUTER_OK) {
			ck_assert(run_until(answered, &a, 3000));
			ck_assert_int_eq(a.type, -1);
		}
		ck_assert(!router_up(r, slot));
		run_until(never, NULL, 60);
	}
	/* its replica (node 2) takes over: node 0's map says so */
	port[1] = f[2].port;
	fake_slots(&f[0], 2, lo, hi, port, 0);
	char addr[ROUTER_ADDR_MAX];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", f[2].port);
	void *args[3] = { r, addr, &slot };
	ck_assert_msg(run_until(slot_on, args, 3000), "the map did not follow the failover");
	ck_assert(run_until(up, args, 3000));
	get(r, high, &a);
	snprintf(want, sizeof want, "%d:%s", f[2].port, high);
	ck_assert_str_eq(a.str, want);
	finish(r, f, 3);
}
END_TEST

/* EVALSHA: NOSCRIPT until SCRIPT LOAD of the body has come. */
static const char *script_handler(struct fake *f, int argc, char **argv)
{
	if (strcmp(argv[0], "SCRIPT") == 0) {
		ck_assert_int_eq(argc, 3);
		ck_assert_str_eq(argv[2], "return 1");
		f->counter = 1;
		return "$40\r\ne0e1f9fabfc9d4800c877a703b823ac0578ff8db\r\n";
	}
	if (strcmp(argv[0], "EVALSHA") == 0) {
		ck_assert_str_eq(argv[1], "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
		return f->counter ? ":42\r\n"
		                  : "-NOSCRIPT No matching script. Please use EVAL.\r\n";
	}
	return echo_handler(f, argc, argv);
}

START_TEST(test_noscript)
{
	struct router_script s = { .body = "return 1" };
	router_script_init(&s);
	ck_assert_str_eq(s.sha, "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
	struct fake f;
	fake_start(&f, script_handler);
	fake_all_slots(&f, f.port, 0);
	struct router *r = router_on(f.port, 0);
	for (int i = 0; i < 2; i++) {
		struct answer a = { 0 };
		const char *argv[2] = { "1", "k" };
		size_t argl[2] = { 1, 1 };
		ck_assert_int_eq(router_eval(r, &s, router_key_slot("k", 1), 0, on_answer, &a, 2,
		                             argv, argl),
		                 ROUTER_OK);
		ck_assert(run_until(answered, &a, 3000));
		ck_assert_int_eq(a.type, REDIS_REPLY_INTEGER);
		ck_assert_int_eq(a.integer, 42);
	}
	struct router_stats st;
	router_stats(r, &st);
	ck_assert_uint_eq(st.noscript, 1);
	ck_assert_int_eq(fake_count(&f, "EVALSHA e0e1f9fabfc9d4800c877a703b823ac0578ff8db"), 3);
	finish(r, &f, 1);
}
END_TEST

/* SET answers at once; WAIT is held until the test answers it. */
static const char *wait_handler(struct fake *f, int argc, char **argv)
{
	if (strcmp(argv[0], "WAIT") == 0)
		return NULL;
	if (strcmp(argv[0], "SET") == 0)
		return "+OK\r\n";
	return echo_handler(f, argc, argv);
}

static bool wait_seen(void *arg)
{
	return ((struct fake *)arg)->held != NULL;
}

START_TEST(test_durable)
{
	struct fake f;
	fake_start(&f, wait_handler);
	fake_all_slots(&f, f.port, 1);
	struct router *r = router_on(f.port, 0);
	struct answer a = { 0 }, b = { 0 };
	unsigned slot = router_key_slot("k", 1);
	ck_assert_int_eq(router_sendf(r, slot, ROUTER_DURABLE, on_answer, &a, "SET k v"),
	                 ROUTER_OK);
	ck_assert_int_eq(router_sendf(r, slot, ROUTER_DURABLE, on_answer, &b, "SET k w"),
	                 ROUTER_OK);
	ck_assert(run_until(wait_seen, &f, 3000));
	run_until(never, NULL, 50);
	ck_assert_int_eq(a.n + b.n, 0);                /* not before a replica holds them */
	ck_assert_int_eq(fake_count(&f, "WAIT 1"), 1); /* one WAIT for the batch */
	fake_write(f.held, ":1\r\n");
	ck_assert(run_until(answered, &b, 3000));
	ck_assert_int_eq(a.n, 1);
	ck_assert_str_eq(a.str, "OK");
	ck_assert_str_eq(b.str, "OK");
	finish(r, &f, 1);
}
END_TEST

/* ROLE of a master with f->counter replicas online, or of a replica when
 * f->counter is negative; WAIT is held, SET answers. */
static const char *role_handler(struct fake *f, int argc, char **argv)
{
	if (strcmp(argv[0], "ROLE") == 0) {
		if (f->counter < 0)
			return "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:6380\r\n$9\r\n"
			       "connected\r\n:0\r\n";
		return f->counter > 0 ? "*3\r\n$6\r\nmaster\r\n:0\r\n*1\r\n*3\r\n$9\r\n"
		                        "127.0.0.1\r\n$4\r\n6380\r\n$1\r\n0\r\n"
		                      : "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";
	}
	return wait_handler(f, argc, argv);
}

/* A durable SET whose WAIT the fake answers with ":0" (timed out). */
static void set_timed_out(struct router *r, struct fake *f, struct answer *a)
{
	memset(a, 0, sizeof *a);
	f->held = NULL;
	ck_assert_int_eq(
	        router_sendf(r, router_key_slot("k", 1), ROUTER_DURABLE, on_answer, a, "SET k v"),
	        ROUTER_OK);
	ck_assert(run_until(wait_seen, f, 3000));
	struct fake_client *c = f->held;
	f->held = NULL;
	fake_write(c, ":0\r\n");
}

START_TEST(test_wait_timeout)
{
	struct fake f;
	fake_start(&f, role_handler);
	fake_all_slots(&f, f.port, 0); /* as CLUSTER SLOTS does at first */
	f.counter = 1;                 /* but ROLE lists a replica online */
	struct router *r = router_on(f.port, 0);
	struct answer a;
	struct router_stats st;
	/* the master still lists a replica online: WAIT again, not answered
	 * until a replica holds the write */
	int roles = fake_count(&f, "ROLE");
	set_timed_out(r, &f, &a);
	ck_assert(run_until(wait_seen, &f, 3000));
	run_until(never, NULL, 50);
	ck_assert_int_eq(a.n, 0);
	ck_assert_int_gt(fake_count(&f, "ROLE"), roles);
	ck_assert_int_eq(fake_count(&f, "WAIT 1"), 2);
	fake_write(f.held, ":1\r\n");
	ck_assert(run_until(answered, &a, 3000));
	ck_assert_str_eq(a.str, "OK");
	router_stats(r, &st);
	ck_assert_uint_eq(st.wait_timeouts, 1);
	ck_assert_uint_eq(st.unreplicated, 0);
	/* demoted by a failover: what it acknowledged may be gone, no reply */
	f.counter = -1;
	set_timed_out(r, &f, &a);
	ck_assert(run_until(answered, &a, 3000));
	ck_assert_int_eq(a.type, -1);
	/* no replica online: answered, not replicated, counted; the next
	 * durable write does not wait */
	f.counter = 0;
	set_timed_out(r, &f, &a);
	ck_assert(run_until(answered, &a, 3000));
	ck_assert_str_eq(a.str, "OK");
	router_stats(r, &st);
	ck_assert_uint_eq(st.wait_timeouts, 3);
	ck_assert_uint_eq(st.unreplicated, 1);
	int waits = fake_count(&f, "WAIT 1");
	memset(&a, 0, sizeof a);
	ck_assert_int_eq(
	        router_sendf(r, router_key_slot("k", 1), ROUTER_DURABLE, on_answer, &a, "SET k w"),
	        ROUTER_OK);
	ck_assert(run_until(answered, &a, 3000));
	ck_assert_str_eq(a.str, "OK");
	ck_assert_int_eq(fake_count(&f, "WAIT 1"), waits);
	finish(r, &f, 1);
}
END_TEST

/* One Redis with a replica (ROLE names it): SET answers, WAIT is held. */
static const char *replica_handler(struct fake *f, int argc, char **argv)
{
	if (strcmp(argv[0], "ROLE") == 0)
		return "*3\r\n$6\r\nmaster\r\n:0\r\n*1\r\n*3\r\n$9\r\n127.0.0.1\r\n$4\r\n6380"
		       "\r\n$1\r\n0\r\n";
	return wait_handler(f, argc, argv);
}

static bool role_seen(void *arg)
{
	return fake_count(arg, "ROLE") > 0;
}

START_TEST(test_single_replica)
{
	struct fake f;
	fake_start(&f, replica_handler);
	struct router *r = router_on(f.port, 0);
	ck_assert(run_until(role_seen, &f, 3000));
	run_until(never, NULL, 50);
	struct answer a = { 0 };
	ck_assert_int_eq(
	        router_sendf(r, router_key_slot("k", 1), ROUTER_DURABLE, on_answer, &a, "SET k v"),
	        ROUTER_OK);
	ck_assert(run_until(wait_seen, &f, 3000));
	run_until(never, NULL, 50);
	ck_assert_int_eq(a.n, 0);
	fake_write(f.held, ":1\r\n");
	ck_assert(run_until(answered, &a, 3000));
	ck_assert_str_eq(a.str, "OK");
	finish(r, &f, 1);
}
END_TEST

/* "hang" is never answered. */
static const char *hang_handler(struct fake *f, int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "hang") == 0)
		return NULL;
	return echo_handler(f, argc, argv);
}

START_TEST(test_stuck)
{
	struct fake f;
	fake_start(&f, hang_handler);
	struct router *r = router_on(f.port, 200);
	struct answer a = { 0 };
	uint64_t t0 = monotonic_ms();
	ck_assert_int_eq(router_sendf(r, router_key_slot("hang", 4), 0, on_answer, &a, "GET hang"),
	                 ROUTER_OK);
	ck_assert(run_until(answered, &a, 3000));
	ck_assert_int_eq(a.type, -1);
	ck_assert_uint_ge(a.at_ms - t0, 200);
	struct router_stats st;
	router_stats(r, &st);
	ck_assert_uint_eq(st.dropped, 1);
	/* it connects again */
	get(r, "back", &a);
	char want[64];
	snprintf(want, sizeof want, "%d:back", f.port);
	ck_assert_str_eq(a.str, want);
	finish(r, &f, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("router");
	TCase *tc = tcase_create("fake nodes");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_crc16_and_slots);
	tcase_add_test(tc, test_single);
	tcase_add_test(tc, test_moved);
	tcase_add_test(tc, test_ask);
	tcase_add_test(tc, test_tryagain_clusterdown);
	tcase_add_test(tc, test_node_down_failover);
	tcase_add_test(tc, test_noscript);
	tcase_add_test(tc, test_durable);
	tcase_add_test(tc, test_wait_timeout);
	tcase_add_test(tc, test_single_replica);
	tcase_add_test(tc, test_stuck);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
