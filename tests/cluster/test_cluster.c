/*
 * test_cluster.c: Check suite for crawler/cluster/cluster.h against a redis-server
 * of its own (127.0.0.1, a free port, --save '' --appendonly yes in a
 * temporary folder), started and killed by each test (and killed with the
 * test process if it dies: PR_SET_PDEATHSIG):
 *  - membership: two agents join and each sees both;
 *  - death and fencing: an agent cut off from Redis (its connection runs
 *    through a proxy process that the test stops with SIGSTOP) fences
 *    itself while its lease key still exists, and the other agent sees it
 *    dead within three lease periods; an agent destroyed without leaving
 *    is seen dead likewise;
 *  - cluster-status lists both agents alive and sums their counters;
 *  - a third agent with another --assign method is refused and never
 *    joins the view;
 *  - per-IP lease: granted to A, refused to B with the time left, granted
 *    to B once that time has passed;
 *  - per-IP release: A asking again is granted with a longer TTL (a
 *    shorter one leaves it); B's release leaves A's lease alone, A's own
 *    shortens it to the delay given, and B gets the lease once that delay
 *    has passed;
 *  - exchange: URLs sent from A to B arrive in order, in batches, each
 *    once, with their via and depth; once acked nothing is pending and
 *    nothing comes again;
 *  - a dead agent's inbox: B reads part of its inbox and never acks, then
 *    dies; A, its heir, gets every URL exactly once (XAUTOCLAIM of the
 *    read ones, XREADGROUP of the unread ones, re-routed to A's inbox);
 *  - two dead agents with one heir: B and C read part of their inboxes
 *    and die; A, the heir of both, gets every URL of both exactly once;
 *  - Redis killed (SIGKILL) and restarted on its AOF (appendfsync always)
 *    mid-exchange: every URL arrives, at B or, if B was seen dead
 *    meanwhile, at its heir A;
 *  - page budget: A and B reserving 7 pages at a time, interleaved, of a
 *    budget of 100 get 100 between them, no more; a give-back goes to the
 *    next reservation; cluster-status shows the pages reserved;
 *  - cost: Redis CPU (INFO cpu) and agents' CPU (getrusage) per 1,000 URLs
 *    over a 100,000-URL exchange, printed; Redis below 0.05 ms per URL;
 *  - IP lease turns: a holder asking again while another agent waits is
 *    refused, the waiter gets the lease once free; a waiter that does not
 *    come back in time loses its turn; three agents take turns in order;
 *  - the census: busy while an agent has not said idle, while an inbox
 *    holds an unread or a pending entry; 0 once all is idle and acked,
 *    for the leader (which scans the inboxes) and the others (which read
 *    its count);
 *  - deduplication: the same URLs sent to B by A and by B itself reach B
 *    once each (the seen set), and a URL sent twice by one agent is sent
 *    once (the sent cache);
 *  - the shared rules: entries pushed by two agents are named 0, 1, 2 in
 *    the order Redis took them and read back from any index in that
 *    order; a rule entry decodes to what was encoded, and what encode
 *    never writes is refused.
 * And against a Redis Cluster of 3 masters with a replica each, started by
 * redis_cluster.py (serve mode) on loopback:
 *  - the router's key slots agree with CLUSTER KEYSLOT; two agents join,
 *    exchange deduplicated URLs, take IP leases and a page budget, and the
 *    crawl's keys are on every master;
 *  - the master holding B's inbox and the crawl's membership killed
 *    (SIGKILL) mid-exchange, its replica stopped (SIGSTOP) for longer than
 *    a WAIT just before: A's batches waited for the replica before the
 *    kill, its replica takes over, the agents pause and go on, and every
 *    URL arrives (at B or at its heir A).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "crawler/cluster/cluster.h"
#include "crawler/cluster/router.h"
#include "frontier/base/tools.h"
#include "frontier/base/clock.h"
#include "tests/cluster/loop_run.h"

#define LEASE_MS 300

struct redis {
	pid_t pid;
	int port;
	char dir[64];
};

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
	close(s);
	return ntohs(a.sin_port);
}

static redisContext *redis_connect(int port)
{
	struct timeval tv = { 2, 0 };
	redisContext *rc = redisConnectWithTimeout("127.0.0.1", port, tv);
	ck_assert_msg(rc != NULL && !rc->err, "cannot connect to the test's redis");
	redisSetTimeout(rc, tv);
	return rc;
}

/* Starts redis-server on r->port and r->dir (AOF on), waits until it answers PING. */
static void redis_run(struct redis *r)
{
	char port[16], log[96];
	snprintf(port, sizeof port, "%d", r->port);
	snprintf(log, sizeof log, "%s/redis.log", r->dir);
	r->pid = fork();
	ck_assert_int_ge(r->pid, 0);
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
		       "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--dir",
		       r->dir, "--logfile", log, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500; i++) {
		int st;
		ck_assert_msg(
		        waitpid(r->pid, &st, WNOHANG) == 0,
		        "redis-server missing or failed to start: run crawler/install-deps.sh");
		struct timeval tv = { 0, 200000 };
		redisContext *rc = redisConnectWithTimeout("127.0.0.1", r->port, tv);
		redisReply *rep = rc && !rc->err ? redisCommand(rc, "PING") : NULL;
		bool up = rep && rep->type == REDIS_REPLY_STATUS;
		freeReplyObject(rep);
		redisFree(rc);
		if (up)
			return;
		usleep(10000);
	}
	ck_abort_msg("redis-server did not answer in 5 s");
}

static void redis_start(struct redis *r)
{
	snprintf(r->dir, sizeof r->dir, "/tmp/test_cluster.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(r->dir));
	r->port = free_port();
	redis_run(r);
}

static void redis_kill(struct redis *r)
{
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
}

static void redis_stop(struct redis *r)
{
	char cmd[128];
	redis_kill(r);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static long long redis_int(int port, const char *fmt, const char *arg)
{
	redisContext *rc = redis_connect(port);
	redisReply *rep = redisCommand(rc, fmt, arg);
	ck_assert_ptr_nonnull(rep);
	long long v = rep->type == REDIS_REPLY_INTEGER ? rep->integer
	              : rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 &&
	                              rep->element[0]->type == REDIS_REPLY_INTEGER
	                      ? rep->element[0]->integer
	                      : -1000;
	freeReplyObject(rep);
	redisFree(rc);
	return v;
}

/* Redis's CPU time so far (user + sys), in ms. */
static double redis_cpu_ms(int port)
{
	redisContext *rc = redis_connect(port);
	redisReply *rep = redisCommand(rc, "INFO cpu");
	ck_assert(rep && rep->type == REDIS_REPLY_STRING);
	const char *u = strstr(rep->str, "used_cpu_user:"), *s = strstr(rep->str, "used_cpu_sys:");
	ck_assert(u && s);
	double ms = 1000 * (strtod(u + 14, NULL) + strtod(s + 13, NULL));
	freeReplyObject(rep);
	redisFree(rc);
	return ms;
}

static double self_cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 + ru.ru_stime.tv_sec * 1e3 +
	       ru.ru_stime.tv_usec / 1e3;
}

/* A TCP proxy process to 127.0.0.1:to, on a port of its own: stopping it
 * (SIGSTOP) cuts its clients off Redis without closing anything. */
static pid_t proxy_start(int to, int *port)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(ls, 8), 0);
	getsockname(ls, (struct sockaddr *)&a, &len);
	*port = ntohs(a.sin_port);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid > 0) {
		close(ls);
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct pollfd fds[17] = { { .fd = ls, .events = POLLIN } };
	int n = 1;
	char buf[65536];
	for (;;) {
		poll(fds, (nfds_t)n, -1);
		if ((fds[0].revents & POLLIN) && n + 2 <= 17) {
			int cl = accept(ls, NULL, NULL);
			int up = socket(AF_INET, SOCK_STREAM, 0);
			struct sockaddr_in r = { .sin_family = AF_INET,
				                 .sin_port = htons((uint16_t)to),
				                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
			if (connect(up, (struct sockaddr *)&r, sizeof r) != 0)
				_exit(1);
			fds[n++] = (struct pollfd){ .fd = cl, .events = POLLIN };
			fds[n++] = (struct pollfd){ .fd = up, .events = POLLIN };
		}
		for (int i = 1; i < n; i++) {
			if (!(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			int peer = fds[i % 2 ? i + 1 : i - 1].fd;
			ssize_t k = read(fds[i].fd, buf, sizeof buf);
			if (k <= 0 || write(peer, buf, (size_t)k) != k)
				_exit(0);
		}
	}
}

struct agent {
	struct cluster *c;
	int views, err;
	bool fenced, ack_each, dedup;
	unsigned patience; /* ip_patience_ms; 0: 50 */
	long long lease_pttl_at_fence;
	uint64_t fenced_ms;
	int redis_port;
	char **got;
	size_t ngot, gotcap, batches;
	unsigned char seen[100000]; /* by the index of url_of() */
	size_t distinct;
};

static void on_view(struct cluster *c, void *arg)
{
	struct agent *a = arg;
	(void)c;
	a->views++;
}

static void on_urls(struct cluster *c, const struct cluster_url *urls, size_t n, void *arg)
{
	struct agent *a = arg;
	a->batches++;
	for (size_t i = 0; i < n; i++) {
		if (a->ngot == a->gotcap) {
			a->gotcap = a->gotcap ? 2 * a->gotcap : 1024;
			a->got = realloc(a->got, a->gotcap * sizeof *a->got);
			ck_assert_ptr_nonnull(a->got);
		}
		char line[512];
		snprintf(line, sizeof line, "%s %s %u", urls[i].url, urls[i].via, urls[i].depth);
		a->got[a->ngot++] = strdup(line);
		const char *idx = strrchr(urls[i].url, 'p');
		size_t k = idx ? strtoul(idx + 1, NULL, 10) : 0;
		if (k < sizeof a->seen && !a->seen[k]++)
			a->distinct++;
	}
	if (a->ack_each)
		cluster_ack(c);
}

/* The time left on an agent's lease, in ms (Redis's clock): -2 if it has
 * none, -3 if Redis did not answer. */
static long long lease_left(redisContext *rc, const char *name)
{
	redisReply *end = redisCommand(rc, "ZSCORE {t}:alive %s", name);
	redisReply *t = redisCommand(rc, "TIME");
	long long left = -3;
	if (end && t && t->type == REDIS_REPLY_ARRAY && t->elements == 2) {
		long long now = strtoll(t->element[0]->str, NULL, 10) * 1000 +
		                strtoll(t->element[1]->str, NULL, 10) / 1000;
		left = end->type == REDIS_REPLY_STRING ? strtoll(end->str, NULL, 10) - now : -2;
	}
	freeReplyObject(end);
	freeReplyObject(t);
	return left;
}

static void on_fenced(struct cluster *c, void *arg)
{
	struct agent *a = arg;
	char key[64];
	a->fenced = true;
	a->fenced_ms = monotonic_ms();
	snprintf(key, sizeof key, "%s", cluster_name(c));
	/* Redis may be down (the restart test): then -3. */
	struct timeval tv = { 1, 0 };
	redisContext *rc = redisConnectWithTimeout("127.0.0.1", a->redis_port, tv);
	a->lease_pttl_at_fence = rc && !rc->err ? lease_left(rc, key) : -3;
	redisFree(rc);
}

static void on_error(struct cluster *c, int err, void *arg)
{
	struct agent *a = arg;
	(void)c;
	a->err = err;
}

static const char *prefix = "t"; /* the crawl's prefix in the tests */

static void agent_start(struct agent *a, int port, const char *name, enum assign_method m,
                        unsigned lease_ms, size_t max_unacked)
{
	char url[64];
	snprintf(url, sizeof url, "redis://127.0.0.1:%d/%s", port, prefix);
	struct cluster_options o = { .url = url,
		                     .name = name,
		                     .method = m,
		                     .lease_ms = lease_ms,
		                     .max_unacked = max_unacked,
		                     .dedup = a->dedup,
		                     .ip_patience_ms = a->patience ? a->patience : 50 };
	struct cluster_callbacks cb = { on_view, on_urls, on_fenced, on_error, a };
	if (a->redis_port == 0)
		a->redis_port = port;
	ck_assert_int_eq(cluster_create(&loop, &o, &cb, &a->c), CLUSTER_OK);
}

static void agent_free(struct agent *a)
{
	cluster_destroy(a->c);
	a->c = NULL;
	for (size_t i = 0; i < a->ngot; i++)
		free(a->got[i]);
	free(a->got);
}

static void setup(void)
{
	ck_assert_int_eq(uv_loop_init(&loop), 0);
}

/* Every handle closed: a leaked one fails the test. */
static void loop_finish(void)
{
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}

struct pair {
	struct agent *a, *b;
	size_t n;
};

static bool both_see_two(void *arg)
{
	struct pair *p = arg;
	return cluster_view_size(p->a->c) == 2 && cluster_view_size(p->b->c) == 2 &&
	       cluster_is_live(p->a->c) && cluster_is_live(p->b->c);
}

static bool a_sees_one(void *arg)
{
	struct pair *p = arg;
	return cluster_view_size(p->a->c) == 1;
}

/* A redis-server and agents a and b on it (lease lease_ms; B reads at
 * most b_unacked URLs ahead of its acks, 0 for the default), both live
 * and seeing each other. */
static void two_agents_start(struct redis *r, struct agent *a, struct agent *b, unsigned lease_ms,
                             size_t b_unacked)
{
	redis_start(r);
	agent_start(a, r->port, "a", ASSIGN_CONSISTENT, lease_ms, 0);
	agent_start(b, r->port, "b", ASSIGN_CONSISTENT, lease_ms, b_unacked);
	struct pair p = { a, b, 0 };
	ck_assert_msg(run_until(both_see_two, &p, 3000), "agents did not see each other");
}

/* Destroys the agents still there, checks the loop closes, stops Redis. */
static void two_agents_stop(struct redis *r, struct agent *a, struct agent *b)
{
	if (a != NULL)
		agent_free(a);
	if (b != NULL)
		agent_free(b);
	loop_finish();
	redis_stop(r);
}

/* `crawler cluster-status` on the test's crawl, its output into out. */
static void run_status(int port, char *out, size_t size)
{
	char url[64], path[] = "/tmp/test_cluster_status.XXXXXX";
	snprintf(url, sizeof url, "redis://127.0.0.1:%d/t", port);
	int fd = mkstemp(path), saved = dup(1);
	ck_assert(fd >= 0 && saved >= 0);
	fflush(stdout);
	dup2(fd, 1);
	char *argv[] = { "cluster-status", url, NULL };
	int rc = cluster_status_tool_main(2, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	ssize_t n = pread(fd, out, size - 1, 0);
	close(fd);
	unlink(path);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_gt(n, 0);
	out[n] = '\0';
	printf("%s", out);
}

START_TEST(test_membership)
{
	struct redis r;
	struct agent a = { 0 }, b = { 0 };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	ck_assert(cluster_incarnation(a.c) != cluster_incarnation(b.c));
	const char *o = cluster_owner(a.c, "www.example.com", 15);
	ck_assert_str_eq(o, cluster_owner(b.c, "www.example.com", 15));
	ck_assert(a.views >= 1 && b.views >= 1);
	cluster_publish_stats(a.c, 10, 12, 1000);
	cluster_publish_stats(b.c, 5, 6, 500);
	cluster_send(a.c, "b", "http://x.example/", "", 1);
	cluster_flush(a.c);
	run_until(never, NULL, 100);
	char status[4096];
	run_status(r.port, status, sizeof status);
	ck_assert_msg(strstr(status, "assign consistent, 2 agents") != NULL, "%s", status);
	ck_assert_msg(strstr(status, "\na ") && strstr(status, "\nb "), "%s", status);
	ck_assert_msg(strstr(status, "alive") != NULL, "%s", status);
	/* pages, requests and bytes summed; B's inbox holds the entry sent */
	ck_assert_msg(strstr(status, " 15 ") && strstr(status, " 18 ") && strstr(status, " 1500 "),
	              "%s", status);
	two_agents_stop(&r, &a, &b);
}
END_TEST

static bool b_fenced_a_sees_one(void *arg)
{
	struct pair *p = arg;
	return p->b->fenced && cluster_view_size(p->a->c) == 1;
}

START_TEST(test_death_and_fencing)
{
	struct redis r;
	struct agent a = { 0 }, b = { 0 };
	int pport;
	redis_start(&r);
	pid_t proxy = proxy_start(r.port, &pport);
	agent_start(&a, r.port, "a", ASSIGN_CONSISTENT, LEASE_MS, 0);
	agent_start(&b, pport, "b", ASSIGN_CONSISTENT, LEASE_MS, 0);
	b.redis_port = r.port;
	struct pair p = { &a, &b, 0 };
	ck_assert_msg(run_until(both_see_two, &p, 3000), "agents did not see each other");
	/* B cut off: it fences itself while its key lives, then A sees it dead. */
	kill(proxy, SIGSTOP);
	uint64_t cut = monotonic_ms();
	ck_assert_msg(run_until(b_fenced_a_sees_one, &p, 3 * LEASE_MS + 200),
	              "fenced %d, A's view %zu, %llu ms after the cut", b.fenced,
	              cluster_view_size(a.c), (unsigned long long)(monotonic_ms() - cut));
	ck_assert_msg(b.lease_pttl_at_fence > 0, "B fenced when its lease had %lld ms left",
	              b.lease_pttl_at_fence);
	ck_assert(!cluster_is_live(b.c));
	printf("fenced %llu ms after the cut with %lld ms of lease left; seen dead by %llu ms\n",
	       (unsigned long long)(b.fenced_ms - cut), b.lease_pttl_at_fence,
	       (unsigned long long)(monotonic_ms() - cut));
	kill(proxy, SIGKILL);
	waitpid(proxy, NULL, 0);
	agent_free(&b);
	/* Rejoined (a new incarnation) through Redis directly, then destroyed
	 * without leaving: seen dead within three lease periods. */
	struct agent b2 = { 0 };
	agent_start(&b2, r.port, "b", ASSIGN_CONSISTENT, LEASE_MS, 0);
	p.b = &b2;
	ck_assert_msg(run_until(both_see_two, &p, 3000), "b did not rejoin");
	agent_free(&b2);
	uint64_t t0 = monotonic_ms();
	ck_assert_msg(run_until(a_sees_one, &p, 3 * LEASE_MS), "A still sees B after %llu ms",
	              (unsigned long long)(monotonic_ms() - t0));
	agent_free(&a);
	loop_finish();
	redis_stop(&r);
}
END_TEST

static bool refused(void *arg)
{
	return ((struct agent *)arg)->err != 0;
}

START_TEST(test_method_refused)
{
	struct redis r;
	struct agent a = { 0 }, c = { 0 };
	redis_start(&r);
	agent_start(&a, r.port, "a", ASSIGN_CONSISTENT, LEASE_MS, 0);
	agent_start(&c, r.port, "c", ASSIGN_PERM, LEASE_MS, 0);
	ck_assert_msg(run_until(refused, &c, 3000), "a perm agent joined a consistent crawl");
	ck_assert_int_eq(c.err, CLUSTER_ECONFIG);
	run_until(never, NULL, LEASE_MS);
	ck_assert_uint_eq(cluster_view_size(a.c), 1);
	ck_assert(!cluster_is_live(c.c));
	agent_free(&a);
	agent_free(&c);
	loop_finish();
	redis_stop(&r);
}
END_TEST

struct ip_result {
	int n;
	bool granted;
	long wait_ms;
};

static void ip_done(void *arg, bool granted, long wait_ms)
{
	struct ip_result *res = arg;
	res->n++;
	res->granted = granted;
	res->wait_ms = wait_ms;
}

static bool ip_answered(void *arg)
{
	return ((struct ip_result *)arg)->n > 0;
}

/* One holder of an IP's lease at a time, across agents, for the delay. */
START_TEST(test_ip_lease)
{
	struct redis r;
	struct agent a = { 0 }, b = { 0 };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	struct ip_result ra = { 0 }, rb = { 0 }, rb2 = { 0 };
	ck_assert_int_eq(cluster_ip_lease(a.c, "192.0.2.7", 400, ip_done, &ra), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &ra, 2000));
	ck_assert(ra.granted);
	ck_assert_int_eq(cluster_ip_lease(b.c, "192.0.2.7", 400, ip_done, &rb), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &rb, 2000));
	ck_assert(!rb.granted);
	ck_assert_msg(rb.wait_ms > 0 && rb.wait_ms <= 400, "wait %ld ms", rb.wait_ms);
	run_until(never, NULL, (unsigned)rb.wait_ms + 20);
	ck_assert_int_eq(cluster_ip_lease(b.c, "192.0.2.7", 400, ip_done, &rb2), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &rb2, 2000));
	ck_assert(rb2.granted);
	ck_assert_int_eq(ra.n + rb.n + rb2.n, 3);
	ck_assert_int_eq(cluster_ip_lease(a.c, "", 400, ip_done, &ra), CLUSTER_EINVAL);
	two_agents_stop(&r, &a, &b);
}
END_TEST

/* The holder asks again: granted, its TTL raised, never lowered. A release
 * by another agent leaves the lease alone; the holder's own shortens it to
 * the delay after its request, after which the other agent gets it. */
START_TEST(test_ip_release)
{
	struct redis r;
	struct agent a = { 0 }, b = { 0 };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	struct ip_result ra = { 0 }, ra2 = { 0 }, rb = { 0 }, rb2 = { 0 };
	ck_assert_int_eq(cluster_ip_lease(a.c, "2001:db8::", 100, ip_done, &ra), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &ra, 2000));
	ck_assert(ra.granted);
	ck_assert_int_eq(cluster_ip_lease(a.c, "2001:db8::", 60000, ip_done, &ra2), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &ra2, 2000));
	ck_assert(ra2.granted);
	long long pttl = redis_int(r.port, "PTTL %s", "{t:ip:2001:db8::}");
	ck_assert_msg(pttl > 50000 && pttl <= 60000, "TTL %lld ms after the second grant", pttl);
	memset(&ra2, 0, sizeof ra2);
	ck_assert_int_eq(cluster_ip_lease(a.c, "2001:db8::", 100, ip_done, &ra2), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &ra2, 2000));
	ck_assert(ra2.granted);
	pttl = redis_int(r.port, "PTTL %s", "{t:ip:2001:db8::}");
	ck_assert_msg(pttl > 50000, "TTL %lld ms: a shorter grant lowered it", pttl);
	ck_assert_int_eq(cluster_ip_release(b.c, "2001:db8::", 1), CLUSTER_OK);
	ck_assert_int_eq(cluster_ip_lease(b.c, "2001:db8::", 100, ip_done, &rb), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &rb, 2000));
	ck_assert(!rb.granted);
	ck_assert_msg(rb.wait_ms > 50000, "wait %ld ms after another's release", rb.wait_ms);
	ck_assert_int_eq(cluster_ip_release(a.c, "2001:db8::", 150), CLUSTER_OK);
	uint64_t t0 = monotonic_ms();
	run_until(never, NULL, 20); /* A's connection sends it */
	pttl = redis_int(r.port, "PTTL %s", "{t:ip:2001:db8::}");
	ck_assert_msg(pttl > 0 && pttl <= 150, "TTL %lld ms after the holder's release", pttl);
	memset(&rb, 0, sizeof rb);
	ck_assert_int_eq(cluster_ip_lease(b.c, "2001:db8::", 100, ip_done, &rb), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &rb, 2000));
	ck_assert(!rb.granted);
	ck_assert_msg(rb.wait_ms > 0 && rb.wait_ms <= 150, "wait %ld ms after the release",
	              rb.wait_ms);
	run_until(never, NULL, (unsigned)rb.wait_ms + 20);
	ck_assert_int_eq(cluster_ip_lease(b.c, "2001:db8::", 100, ip_done, &rb2), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &rb2, 2000));
	ck_assert(rb2.granted);
	ck_assert_uint_ge(monotonic_ms() - t0, 150);
	ck_assert_int_eq(cluster_ip_release(a.c, "", 10), CLUSTER_EINVAL);
	two_agents_stop(&r, &a, &b);
}
END_TEST

static bool got_n(void *arg)
{
	struct pair *p = arg;
	return p->b->distinct >= p->n && cluster_unsent(p->a->c) == 0;
}

static void url_of(char *buf, size_t size, size_t i)
{
	snprintf(buf, size, "http://h%zu.example.com/p%zu", i % 977, i);
}

/* Sends URLs [from, to) from A to B, as cluster_send() lets it: the next. */
static size_t send_range(struct agent *a, size_t from, size_t to)
{
	char url[128];
	for (size_t i = from; i < to; i++) {
		url_of(url, sizeof url, i);
		int rc = cluster_send(a->c, "b", url, "http://via.example/", (unsigned)(i % 7));
		if (rc == CLUSTER_FULL)
			return i;
		ck_assert_int_eq(rc, CLUSTER_OK);
	}
	return to;
}

START_TEST(test_exchange_order)
{
	enum { N = 3000 };
	struct redis r;
	struct agent a = { 0 }, b = { .ack_each = true };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	struct pair p = { &a, &b, N };
	ck_assert_uint_eq(send_range(&a, 0, N), N);
	ck_assert_msg(run_until(got_n, &p, 5000), "B got %zu of %d", b.ngot, N);
	run_until(never, NULL, 2 * LEASE_MS); /* anything more would come now */
	ck_assert_uint_eq(b.ngot, N);
	for (size_t i = 0; i < N; i++) {
		char url[128], want[256];
		url_of(url, sizeof url, i);
		snprintf(want, sizeof want, "%s http://via.example/ %zu", url, i % 7);
		ck_assert_str_eq(b.got[i], want);
	}
	ck_assert_msg(b.batches <= N / CLUSTER_BATCH_URLS + 2, "%zu batches", b.batches);
	ck_assert_int_eq(redis_int(r.port, "XPENDING {t:a:%s}:inbox g", "b"), 0);
	ck_assert_uint_eq(cluster_unacked(b.c), 0);
	two_agents_stop(&r, &a, &b);
}
END_TEST

static bool b_stalled(void *arg)
{
	struct pair *p = arg;
	return p->b->ngot >= 300 && cluster_unsent(p->a->c) == 0;
}

static bool a_got_n(void *arg)
{
	struct pair *p = arg;
	return p->a->ngot >= p->n;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

START_TEST(test_dead_inbox)
{
	enum { N = 2000 };
	struct redis r;
	struct agent a = { .ack_each = true }, b = { 0 };
	two_agents_start(&r, &a, &b, LEASE_MS, 300);
	struct pair p = { &a, &b, N };
	ck_assert_uint_eq(send_range(&a, 0, N), N);
	ck_assert_msg(run_until(b_stalled, &p, 3000), "B read %zu", b.ngot);
	ck_assert_uint_lt(b.ngot, N); /* part read and not acked, part unread */
	agent_free(&b);
	ck_assert_msg(run_until(a_got_n, &p, 10 * LEASE_MS), "A got %zu of %d", a.ngot, N);
	run_until(never, NULL, 2 * LEASE_MS);
	ck_assert_uint_eq(a.ngot, N);
	qsort(a.got, a.ngot, sizeof *a.got, cmp_str);
	for (size_t i = 1; i < a.ngot; i++)
		ck_assert_str_ne(a.got[i - 1], a.got[i]);
	ck_assert_int_eq(redis_int(r.port, "XPENDING {t:a:%s}:inbox g", "b"), 0);
	two_agents_stop(&r, &a, NULL);
}
END_TEST

struct trio {
	struct agent *a, *b, *c;
	size_t n;
};

static bool trio_live(void *arg)
{
	struct trio *t = arg;
	return cluster_view_size(t->a->c) == 3 && cluster_view_size(t->b->c) == 3 &&
	       cluster_view_size(t->c->c) == 3;
}

static bool trio_stalled(void *arg)
{
	struct trio *t = arg;
	return t->b->ngot >= 300 && t->c->ngot >= 300 && cluster_unsent(t->a->c) == 0;
}

static bool trio_a_got_n(void *arg)
{
	struct trio *t = arg;
	return t->a->ngot >= t->n;
}

/* Sends URLs [from, to) from A to owner (all fit: below max_unsent). */
static void send_to(struct agent *a, const char *owner, size_t from, size_t to)
{
	char url[128];
	for (size_t i = from; i < to; i++) {
		url_of(url, sizeof url, i);
		ck_assert_int_eq(cluster_send(a->c, owner, url, "http://via.example/", 0),
		                 CLUSTER_OK);
	}
}

START_TEST(test_dead_inboxes_one_heir)
{
	enum { N = 1000 };
	struct redis r;
	struct agent a = { .ack_each = true }, b = { 0 }, c = { 0 };
	redis_start(&r);
	agent_start(&a, r.port, "a", ASSIGN_CONSISTENT, LEASE_MS, 0);
	agent_start(&b, r.port, "b", ASSIGN_CONSISTENT, LEASE_MS, 300);
	agent_start(&c, r.port, "c", ASSIGN_CONSISTENT, LEASE_MS, 300);
	struct trio t = { &a, &b, &c, 2 * N };
	ck_assert_msg(run_until(trio_live, &t, 3000), "the agents did not see each other");
	send_to(&a, "b", 0, N);
	send_to(&a, "c", N, 2 * N);
	ck_assert_msg(run_until(trio_stalled, &t, 3000), "B read %zu, C %zu", b.ngot, c.ngot);
	agent_free(&b);
	agent_free(&c);
	ck_assert_msg(run_until(trio_a_got_n, &t, 10 * LEASE_MS), "A got %zu of %d", a.ngot, 2 * N);
	run_until(never, NULL, 2 * LEASE_MS);
	ck_assert_uint_eq(a.ngot, 2 * N);
	qsort(a.got, a.ngot, sizeof *a.got, cmp_str);
	for (size_t i = 1; i < a.ngot; i++)
		ck_assert_str_ne(a.got[i - 1], a.got[i]);
	two_agents_stop(&r, &a, NULL);
}
END_TEST

struct restart {
	struct pair p;
	struct redis *r;
	size_t sent;
	bool killed, restarted;
	uint64_t kill_ms;
};

static void restart_feed(uv_timer_t *t)
{
	struct restart *s = t->data;
	s->sent = send_range(s->p.a, s->sent, s->sent + 500 < s->p.n ? s->sent + 500 : s->p.n);
	if (!s->killed && s->sent >= s->p.n / 2) {
		redis_kill(s->r);
		s->killed = true;
		s->kill_ms = monotonic_ms();
	}
	if (s->killed && !s->restarted && monotonic_ms() - s->kill_ms >= 300) {
		redis_run(s->r);
		s->restarted = true;
	}
	if (s->sent == s->p.n && s->restarted)
		uv_timer_stop(t);
}

/* URLs of [0, n) received by A or B: while both were fenced B may have
 * been seen dead, and its inbox moved to its heir A. */
static size_t union_distinct(const struct agent *a, const struct agent *b, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += a->seen[i] || b->seen[i];
	return k;
}

static bool restart_done(void *arg)
{
	struct restart *s = arg;
	return s->restarted && s->sent == s->p.n && cluster_unsent(s->p.a->c) == 0 &&
	       union_distinct(s->p.a, s->p.b, s->p.n) == s->p.n;
}

START_TEST(test_redis_restart)
{
	enum { N = 20000 };
	struct redis r;
	static struct agent a, b;
	a.ack_each = b.ack_each = true;
	two_agents_start(&r, &a, &b, 1000, 0);
	struct restart s = { .p = { &a, &b, N }, .r = &r };
	uv_timer_t feed;
	uv_timer_init(&loop, &feed);
	feed.data = &s;
	uv_timer_start(&feed, restart_feed, 5, 5);
	bool done = run_until(restart_done, &s, 15000);
	uv_close((uv_handle_t *)&feed, NULL);
	ck_assert_msg(done, "sent %zu, A and B got %zu distinct of %d, restarted %d", s.sent,
	              union_distinct(&a, &b, N), N, s.restarted);
	printf("redis restart: B received %zu URLs, A %zu (B's inbox moved to A while B was seen "
	       "dead); %zu distinct of %d; fenced: a %d, b %d\n",
	       b.ngot, a.ngot, union_distinct(&a, &b, N), N, a.fenced, b.fenced);
	two_agents_stop(&r, &a, &b);
}
END_TEST

struct budget_result {
	int n, ok, expect;
	uint64_t granted, reserved_max;
};

static void budget_done(void *arg, bool ok, uint64_t granted, uint64_t reserved)
{
	struct budget_result *res = arg;
	res->n++;
	res->ok += ok;
	res->granted += granted;
	if (reserved > res->reserved_max)
		res->reserved_max = reserved;
}

static bool budgets_answered(void *arg)
{
	struct budget_result *res = arg;
	return res[0].n >= res[0].expect && res[1].n >= res[1].expect;
}

/* Reserves want pages of 100 n times from each of a and b (pipelined, so
 * their scripts interleave in Redis) into res[0] and res[1]. */
static void reserve_both(struct agent *a, struct agent *b, int n, uint64_t want,
                         struct budget_result *res)
{
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(cluster_budget_reserve(a->c, 100, want, budget_done, &res[0]),
		                 CLUSTER_OK);
		ck_assert_int_eq(cluster_budget_reserve(b->c, 100, want, budget_done, &res[1]),
		                 CLUSTER_OK);
	}
	res[0].expect += n;
	res[1].expect += n;
	ck_assert(run_until(budgets_answered, res, 3000));
}

/* The page budget: two agents reserving 7 pages at a time of 100 get 100
 * between them, never more, the last grant in part; a give-back goes to
 * the next reservation. */
START_TEST(test_page_budget)
{
	struct redis r;
	struct agent a = { 0 }, b = { 0 };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	struct budget_result res[2] = { { 0 }, { 0 } };
	reserve_both(&a, &b, 10, 7, res);
	ck_assert_int_eq(res[0].ok + res[1].ok, 20);
	ck_assert_int_eq(res[0].granted + res[1].granted, 100);
	ck_assert_int_eq(res[0].reserved_max > res[1].reserved_max ? res[0].reserved_max
	                                                           : res[1].reserved_max,
	                 100);
	reserve_both(&a, &b, 1, 0, res); /* a probe: spent, nothing granted */
	ck_assert_int_eq(res[0].granted + res[1].granted, 100);
	ck_assert_int_eq(cluster_budget_give_back(a.c, 10), CLUSTER_OK);
	reserve_both(&a, &b, 1, 16, res);
	ck_assert_int_eq(res[0].granted + res[1].granted, 110);
	ck_assert_int_eq(redis_int(r.port, "INCRBY %s 0", "{t}:budget"), 100);
	char out[4096];
	run_status(r.port, out, sizeof out);
	ck_assert_ptr_nonnull(strstr(out, "page budget (--max-pages): 100 pages reserved\n"));
	ck_assert_int_eq(cluster_budget_reserve(a.c, 0, 1, budget_done, &res[0]), CLUSTER_EINVAL);
	two_agents_stop(&r, &a, &b);
}
END_TEST

/* A shared rules entry: what encode writes, decode gives back whole;
 * what encode refuses to write, decode refuses to read. */
START_TEST(test_rule_entry)
{
	const char *text = "reject path /s3/\naccept regex [?&]a=\tb\n";
	size_t len;
	char *e = cluster_rule_entry_encode("a1", "POST /rules", text, strlen(text), &len);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e, "rules 1\ta1\tPOST /rules\nreject path /s3/\naccept regex [?&]a=\tb\n");
	ck_assert_uint_eq(len, strlen(e));
	struct cluster_rule_entry d;
	ck_assert_int_eq(cluster_rule_entry_decode(e, len, &d), CLUSTER_OK);
	ck_assert_uint_eq(d.origin_len, 2);
	ck_assert_int_eq(memcmp(d.origin, "a1", 2), 0);
	ck_assert_uint_eq(d.source_len, 11);
	ck_assert_int_eq(memcmp(d.source, "POST /rules", 11), 0);
	ck_assert_uint_eq(d.text_len, strlen(text));
	ck_assert_int_eq(memcmp(d.text, text, d.text_len), 0);
	/* every cut of a good entry short of its text is refused */
	for (size_t cut = 0; cut < len - strlen(text) + 1; cut++)
		ck_assert_int_eq(cluster_rule_entry_decode(e, cut, &d), CLUSTER_EINVAL);
	free(e);
	/* what no agent writes */
	static const char *const bad[] = {
		"rules 2\ta1\tPOST /rules\nreject ext gif\n", /* another version */
		"rules 1\t\tPOST /rules\nreject ext gif\n",   /* no origin */
		"rules 1\ta1\t\nreject ext gif\n",            /* no source */
		"rules 1\ta1\tPO\x01ST\nreject ext gif\n",    /* a control character */
		"rules 1\ta1 POST /rules\nreject ext gif\n",  /* no tab */
		"rules 1\ta1\tPOST /rules\n",                 /* no text */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		ck_assert_msg(cluster_rule_entry_decode(bad[i], strlen(bad[i]), &d) ==
		                      CLUSTER_EINVAL,
		              "bad entry %zu taken", i);
	ck_assert_int_eq(cluster_rule_entry_decode("rules 1\ta\tb\nx\0y", 15, &d), CLUSTER_EINVAL);
	char big[ASSIGN_NAME_MAX + 2];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert_ptr_null(cluster_rule_entry_encode(big, "POST /rules", "x", 1, &len));
	ck_assert_ptr_null(cluster_rule_entry_encode("a1", "", "x", 1, &len));
	ck_assert_ptr_null(cluster_rule_entry_encode("a1", "a\nb", "x", 1, &len));
	ck_assert_ptr_null(cluster_rule_entry_encode("a1", "POST /rules", "", 0, &len));
}
END_TEST

struct rules_push {
	int done;
	uint64_t index;
};

static void rules_pushed(void *arg, bool ok, uint64_t index)
{
	struct rules_push *p = arg;
	ck_assert(ok);
	p->done = 1;
	p->index = index;
}

static bool rules_pushed2(void *arg)
{
	const struct rules_push *p = arg;
	return p[0].done && p[1].done;
}

struct rules_result {
	int answered;
	uint64_t from;
	size_t n;
	char text[4][64];
};

static void rules_read(void *arg, bool ok, uint64_t from, const struct cluster_rule_text *e,
                       size_t n)
{
	struct rules_result *r = arg;
	ck_assert(ok);
	r->answered = 1;
	r->from = from;
	r->n = n;
	for (size_t i = 0; i < n && i < 4; i++)
		snprintf(r->text[i], sizeof r->text[i], "%.*s", (int)e[i].len, e[i].s);
}

static bool rules_answered(void *arg)
{
	return ((struct rules_result *)arg)->answered;
}

/* The shared rules: entries pushed by A and B get the indexes 0, 1, 2 in
 * the order Redis took them; B reads them back from any index, in that
 * order, and nothing past the end. */
START_TEST(test_shared_rules)
{
	struct redis r;
	struct agent a = { 0 }, b = { 0 };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	struct rules_push p[3] = { { 0 } };
	ck_assert_int_eq(cluster_rules_push(a.c, "e0", 2, rules_pushed, &p[0]), CLUSTER_OK);
	ck_assert_int_eq(cluster_rules_push(b.c, "e1", 2, rules_pushed, &p[1]), CLUSTER_OK);
	ck_assert(run_until(rules_pushed2, p, 3000));
	ck_assert_int_eq(cluster_rules_push(a.c, "e2", 2, rules_pushed, &p[2]), CLUSTER_OK);
	ck_assert(run_until(rules_pushed2, p + 1, 3000));
	ck_assert_uint_eq(p[0].index + p[1].index, 1);
	ck_assert_uint_eq(p[2].index, 2);
	const char *at[3];
	for (int i = 0; i < 3; i++)
		at[p[i].index] = i == 0 ? "e0" : i == 1 ? "e1" : "e2";
	for (uint64_t from = 0; from <= 3; from++) {
		struct rules_result rd = { 0 };
		ck_assert_int_eq(cluster_rules_read(b.c, from, rules_read, &rd), CLUSTER_OK);
		ck_assert(run_until(rules_answered, &rd, 3000));
		ck_assert_uint_eq(rd.from, from);
		ck_assert_uint_eq(rd.n, 3 - from);
		for (size_t i = 0; i < rd.n; i++)
			ck_assert_str_eq(rd.text[i], at[from + i]);
	}
	ck_assert_int_eq(redis_int(r.port, "LLEN %s", "{t}:rules"), 3);
	ck_assert_int_eq(cluster_rules_read(a.c, 0, NULL, NULL), CLUSTER_EINVAL);
	two_agents_stop(&r, &a, &b);
}
END_TEST

START_TEST(test_cost)
{
	enum { N = 100000 };
	struct redis r;
	struct agent a = { 0 }, b = { .ack_each = true };
	/* A long lease: this test measures, fencing is tested above. */
	two_agents_start(&r, &a, &b, 5000, 0);
	struct pair p = { &a, &b, N };
	double redis0 = redis_cpu_ms(r.port), self0 = self_cpu_ms();
	uint64_t t0 = monotonic_ms();
	size_t sent = 0;
	while (sent < N) {
		sent = send_range(&a, sent, N);
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	ck_assert_msg(run_until(got_n, &p, 20000), "B got %zu of %d", b.ngot, N);
	double redis_ms = redis_cpu_ms(r.port) - redis0, self_ms = self_cpu_ms() - self0;
	printf("exchange of %d URLs in %llu ms: Redis CPU %.3f ms per 1000 URLs, agents (sender "
	       "+ receiver) %.3f ms per 1000 URLs; fenced: a %d, b %d\n",
	       N, (unsigned long long)(monotonic_ms() - t0), redis_ms * 1000 / N,
	       self_ms * 1000 / N, a.fenced, b.fenced);
	ck_assert_uint_eq(b.distinct, N);
	ck_assert_msg(redis_ms / N < 0.05, "Redis %.4f ms per URL", redis_ms / N);
	agent_free(&a);
	agent_free(&b);
	loop_finish();
	redis_stop(&r);
}
END_TEST

/* ---- IP lease turns ---- */

/* Asks a's lease of addr for ttl ms, runs until answered. */
static struct ip_result ip_ask(struct agent *a, const char *addr, unsigned ttl)
{
	struct ip_result res = { 0 };
	ck_assert_int_eq(cluster_ip_lease(a->c, addr, ttl, ip_done, &res), CLUSTER_OK);
	ck_assert(run_until(ip_answered, &res, 3000));
	return res;
}

static void ip_release_sent(struct agent *a, const char *addr, unsigned delay)
{
	ck_assert_int_eq(cluster_ip_release(a->c, addr, delay), CLUSTER_OK);
	run_until(never, NULL, 20); /* sent */
}

static bool live_c(void *arg)
{
	return cluster_is_live(((struct agent *)arg)->c);
}

/* The holder yields to a waiter; waiters take the lease in the order they
 * first asked; a waiter that does not ask again in time (its patience,
 * TURN_PATIENCE_MS here, + CLUSTER_IP_GRACE_MS) loses its turn. */
#define TURN_PATIENCE_MS 400
START_TEST(test_ip_turns)
{
	struct redis r;
	struct agent a = { .patience = TURN_PATIENCE_MS }, b = { .patience = TURN_PATIENCE_MS },
	             c = { .patience = TURN_PATIENCE_MS };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	agent_start(&c, r.port, "c", ASSIGN_CONSISTENT, LEASE_MS, 0);
	struct pair p = { &a, &c, 0 };
	ck_assert(run_until(both_see_two, &p, 3000) || cluster_is_live(c.c));
	ck_assert(run_until(live_c, &c, 3000));
	const char *ip = "198.51.100.7";
	ck_assert(ip_ask(&a, ip, 2000).granted);
	struct ip_result rb = ip_ask(&b, ip, 2000);
	ck_assert(!rb.granted);
	ck_assert_msg(rb.wait_ms > 1000 && rb.wait_ms <= 2000, "B told %ld ms", rb.wait_ms);
	/* B asks again within its patience while A's request runs */
	run_until(never, NULL, 30);
	ck_assert(!ip_ask(&b, ip, 2000).granted);
	run_until(never, NULL, 10);
	ck_assert(!ip_ask(&c, ip, 2000).granted); /* C second in line */
	ip_release_sent(&a, ip, 1);
	run_until(never, NULL, 5);
	/* free now, but B and C wait: A, C refused; B granted */
	ck_assert(!ip_ask(&a, ip, 2000).granted);
	ck_assert(!ip_ask(&c, ip, 2000).granted);
	ck_assert(ip_ask(&b, ip, 2000).granted);
	/* B holds; its next request waits for C (first now), then A */
	ip_release_sent(&b, ip, 1);
	run_until(never, NULL, 5);
	ck_assert(!ip_ask(&b, ip, 2000).granted);
	ck_assert(!ip_ask(&a, ip, 2000).granted);
	ck_assert(ip_ask(&c, ip, 2000).granted);
	ip_release_sent(&c, ip, 1);
	run_until(never, NULL, 5);
	ck_assert(!ip_ask(&b, ip, 2000).granted);
	ck_assert(ip_ask(&a, ip, 2000).granted);
	/* B and C wait no more: past their patience + grace, A keeps it */
	ip_release_sent(&a, ip, 1);
	run_until(never, NULL, TURN_PATIENCE_MS + CLUSTER_IP_GRACE_MS + 200);
	ck_assert(ip_ask(&a, ip, 2000).granted);
	ck_assert(ip_ask(&a, ip, 2000).granted);
	agent_free(&c);
	two_agents_stop(&r, &a, &b);
}
END_TEST

/* ---- the census ---- */

struct census_result {
	int n;
	bool ok;
	struct cluster_census s;
};

static void census_done(void *arg, bool ok, const struct cluster_census *s)
{
	struct census_result *res = arg;
	res->n++;
	res->ok = ok;
	res->s = *s;
}

static bool census_answered(void *arg)
{
	return ((struct census_result *)arg)->n > 0;
}

static struct cluster_census census_of(struct agent *a)
{
	struct census_result res = { 0 };
	ck_assert_int_eq(cluster_census(a->c, census_done, &res), CLUSTER_OK);
	ck_assert(run_until(census_answered, &res, 3000));
	ck_assert(res.ok);
	return res.s;
}

static bool b_got_one(void *arg)
{
	return ((struct agent *)arg)->ngot > 0;
}

static bool b_nothing_pending(void *arg)
{
	return redis_int(((struct redis *)arg)->port, "XPENDING {t:a:%s}:inbox g", "b") == 0;
}

/* Busy until every agent said idle and every inbox is read and acked; the
 * leader (A) scans the inboxes, B reads its count. */
START_TEST(test_census)
{
	struct redis r;
	struct agent a = { 0 }, b = { 0 };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	cluster_publish_stats(a.c, 7, 7, 70);
	cluster_publish_stats(b.c, 5, 5, 50);
	run_until(never, NULL, 20);
	struct cluster_census s = census_of(&a);
	ck_assert_uint_eq(s.alive, 2);
	ck_assert_uint_eq(s.pages, 12);
	ck_assert_uint_ge(s.busy, 2); /* nobody said idle */
	cluster_publish_idle(a.c, true);
	cluster_publish_idle(b.c, true);
	run_until(never, NULL, 20);
	ck_assert_uint_eq(census_of(&a).busy, 0);
	ck_assert_uint_eq(census_of(&b).busy, 0);
	/* A sends B a URL: B reads it, and holds it unacked */
	ck_assert_int_eq(cluster_send(a.c, "b", "http://c.example/", "", 0), CLUSTER_OK);
	cluster_flush(a.c);
	ck_assert(run_until(b_got_one, &b, 3000));
	ck_assert_uint_ge(census_of(&a).busy, 1); /* B's entry is pending */
	ck_assert_uint_ge(census_of(&b).busy, 1);
	cluster_publish_idle(b.c, false);
	run_until(never, NULL, 20);
	ck_assert_uint_ge(census_of(&b).busy, 1);
	cluster_ack(b.c);
	ck_assert(run_until(b_nothing_pending, &r, 3000));
	ck_assert_uint_ge(census_of(&a).busy, 1); /* B is busy */
	cluster_publish_idle(b.c, true);
	run_until(never, NULL, 20);
	ck_assert_uint_eq(census_of(&a).busy, 0);
	ck_assert_uint_eq(census_of(&b).busy, 0);
	two_agents_stop(&r, &a, &b);
}
END_TEST

/* ---- deduplication ---- */

START_TEST(test_dedup)
{
	enum { N = 2000 };
	struct redis r;
	struct agent a = { .dedup = true }, b = { .dedup = true, .ack_each = true };
	two_agents_start(&r, &a, &b, LEASE_MS, 0);
	struct pair p = { &a, &b, N };
	ck_assert_uint_eq(send_range(&a, 0, N), N);
	ck_assert_uint_eq(send_range(&b, 0, N), N); /* the same URLs, from B */
	ck_assert_uint_eq(send_range(&a, 0, N), N); /* again from A: not sent */
	ck_assert_msg(run_until(got_n, &p, 10000), "B got %zu of %d", b.distinct, N);
	run_until(never, NULL, 2 * LEASE_MS);
	ck_assert_uint_eq(b.ngot, N);
	struct cluster_stats sa, sb;
	cluster_stats(a.c, &sa);
	cluster_stats(b.c, &sb);
	/* the cache is direct-mapped: a URL whose slot another took is sent again */
	ck_assert_uint_eq(sa.sent + sa.sent_cached, 2 * N);
	ck_assert_uint_ge(sa.sent_cached, N - N / 20);
	ck_assert_uint_eq(sb.sent, N);
	ck_assert_uint_eq(sb.received, N);
	ck_assert_uint_eq(sb.seen_dropped, sa.sent + sb.sent - N);
	long long seen = 0;
	for (int k = 0; k < CLUSTER_SEEN_BUCKETS; k++) {
		char key[32];
		snprintf(key, sizeof key, "{t:s:%d}", k);
		seen += redis_int(r.port, "SCARD %s", key);
	}
	ck_assert_int_eq(seen, N);
	two_agents_stop(&r, &a, &b);
}
END_TEST

/* ---- against a Redis Cluster ---- */

#ifndef REDIS_CLUSTER_PY
#error "REDIS_CLUSTER_PY: the path of tests/cluster/redis_cluster.py"
#endif

/* redis_cluster.py serve, talked to through pipes. */
struct rcluster {
	pid_t pid;
	int to, from; /* its stdin, its stdout (non-blocking) */
	char dir[64];
	char line[256], buf[1024];
	size_t len;
	int ports[3];
};

/* A line from the harness into k->line, within ms: whether one came. */
static bool rcluster_line(struct rcluster *k, unsigned ms)
{
	uint64_t end = monotonic_ms() + ms;
	for (;;) {
		char *nl = memchr(k->buf, '\n', k->len);
		if (nl != NULL) {
			size_t n = (size_t)(nl - k->buf);
			snprintf(k->line, sizeof k->line, "%.*s", (int)n, k->buf);
			memmove(k->buf, nl + 1, k->len - n - 1);
			k->len -= n + 1;
			return true;
		}
		ssize_t got = read(k->from, k->buf + k->len, sizeof k->buf - k->len - 1);
		if (got > 0) {
			k->len += (size_t)got;
			continue;
		}
		if (monotonic_ms() >= end)
			return false;
		if (ms > 0)
			usleep(5000);
	}
}

static void rcluster_start(struct rcluster *k)
{
	int in[2], out[2];
	snprintf(k->dir, sizeof k->dir, "/tmp/test_cluster.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(k->dir));
	ck_assert(pipe(in) == 0 && pipe(out) == 0);
	k->pid = fork();
	ck_assert_int_ge(k->pid, 0);
	if (k->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execlp("python3", "python3", REDIS_CLUSTER_PY, "serve", k->dir, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	k->to = in[1];
	k->from = out[0];
	fcntl(k->from, F_SETFL, O_NONBLOCK);
	ck_assert_msg(rcluster_line(k, 60000), "redis_cluster.py did not answer");
	ck_assert_msg(sscanf(k->line, "ready %d %d %d", &k->ports[0], &k->ports[1], &k->ports[2]) ==
	                      3,
	              "redis_cluster.py: %s", k->line);
}

static void rcluster_send(struct rcluster *k, const char *line)
{
	ck_assert(write(k->to, line, strlen(line)) == (ssize_t)strlen(line));
}

static void rcluster_stop(struct rcluster *k)
{
	char cmd[128];
	close(k->to); /* EOF: it stops every node */
	waitpid(k->pid, NULL, 0);
	close(k->from);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", k->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A command about key, to the master serving it (following MOVED). */
static redisReply *rcluster_cmd(struct rcluster *k, const char *fmt, const char *key)
{
	int port = k->ports[0];
	for (int i = 0; i < 5; i++) {
		redisContext *rc = redis_connect(port);
		redisReply *rep = redisCommand(rc, fmt, key);
		redisFree(rc);
		ck_assert_ptr_nonnull(rep);
		if (rep->type != REDIS_REPLY_ERROR || strncmp(rep->str, "MOVED", 5) != 0)
			return rep;
		const char *colon = strrchr(rep->str, ':');
		port = (int)strtol(colon + 1, NULL, 10);
		freeReplyObject(rep);
	}
	ck_abort_msg("MOVED too many times for %s", key);
	return NULL;
}

static bool both_see_two_live(void *arg)
{
	return both_see_two(arg);
}

START_TEST(test_cluster_layer)
{
	enum { N = 2000 };
	struct rcluster k = { 0 };
	rcluster_start(&k);
	const char *keys[] = { "foo",   "{t}:ver", "{t:a:b}:inbox",    "{t:s:17}",
		               "x{y}z", "{}a",     "{t:ip:2001:db8::}" };
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		long long slot = redis_int(k.ports[0], "CLUSTER KEYSLOT %s", keys[i]);
		ck_assert_int_eq(slot, router_key_slot(keys[i], strlen(keys[i])));
	}
	struct agent a = { .dedup = true }, b = { .dedup = true, .ack_each = true };
	agent_start(&a, k.ports[0], "a", ASSIGN_CONSISTENT, LEASE_MS, 0);
	agent_start(&b, k.ports[1], "b", ASSIGN_CONSISTENT, LEASE_MS, 0);
	struct pair p = { &a, &b, N };
	ck_assert_msg(run_until(both_see_two_live, &p, 10000), "agents did not see each other");
	ck_assert_uint_eq(send_range(&a, 0, N), N);
	ck_assert_uint_eq(send_range(&b, 0, N), N);
	ck_assert_msg(run_until(got_n, &p, 10000), "B got %zu of %d", b.distinct, N);
	run_until(never, NULL, 2 * LEASE_MS);
	ck_assert_uint_eq(b.ngot, N);
	ck_assert(ip_ask(&a, "192.0.2.9", 500).granted);
	ck_assert(!ip_ask(&b, "192.0.2.9", 500).granted);
	struct budget_result res[2] = { { 0 }, { 0 } };
	reserve_both(&a, &b, 10, 7, res);
	ck_assert_int_eq(res[0].granted + res[1].granted, 100);
	struct cluster_stats st;
	cluster_stats(a.c, &st);
	ck_assert(st.cluster);
	ck_assert_uint_eq(st.nodes, 3);
	for (int i = 0; i < 3; i++) {
		long long n = redis_int(k.ports[i], "DBSIZE%s", "");
		ck_assert_msg(n > 100, "master %d holds %lld keys", k.ports[i], n);
	}
	cluster_ack(b.c); /* entries whose URLs were all seen: no on_urls */
	run_until(never, NULL, 100);
	redisReply *rep = rcluster_cmd(&k, "XPENDING %s g", "{t:a:b}:inbox");
	ck_assert(rep->type == REDIS_REPLY_ARRAY && rep->element[0]->integer == 0);
	freeReplyObject(rep);
	agent_free(&a);
	agent_free(&b);
	loop_finish();
	rcluster_stop(&k);
}
END_TEST

/* The failover test's replica is stopped this long before its master's
 * kill: longer than a WAIT (half the lease), shorter than the cluster's
 * node timeout (1 s), so writes wait for a replica that is online but
 * behind when its master dies. */
#define FAILOVER_STALL_MS 800

struct failover {
	struct pair p;
	struct rcluster *k;
	size_t sent;
	bool asked, done_kill;
	char victim[64];
	uint64_t kill_ms, back_ms;
	uint64_t waits; /* A's WAITs before the kill */
};

static void failover_feed(uv_timer_t *t)
{
	struct failover *f = t->data;
	f->sent = send_range(f->p.a, f->sent, f->sent + 200 < f->p.n ? f->sent + 200 : f->p.n);
	if (!f->asked && f->sent >= f->p.n / 3) {
		char line[128];
		snprintf(line, sizeof line, "kill-master %s %u\n", f->victim, FAILOVER_STALL_MS);
		rcluster_send(f->k, line);
		f->asked = true;
		f->kill_ms = monotonic_ms();
		struct cluster_stats st;
		cluster_stats(f->p.a->c, &st);
		f->waits = st.waits;
	}
	if (f->asked && !f->done_kill && rcluster_line(f->k, 0)) {
		ck_assert_msg(strncmp(f->k->line, "ok ", 3) == 0, "harness: %s", f->k->line);
		f->done_kill = true;
		f->back_ms = monotonic_ms();
	}
}

static bool failover_done(void *arg)
{
	struct failover *f = arg;
	return f->done_kill && f->sent == f->p.n && cluster_unsent(f->p.a->c) == 0 &&
	       union_distinct(f->p.a, f->p.b, f->p.n) == f->p.n && cluster_is_live(f->p.a->c) &&
	       cluster_is_live(f->p.b->c);
}

/* A prefix whose crawl slot and B's inbox are on one master (of three
 * equal ranges): killing it takes both away. */
static void pick_prefix(char *out, size_t size)
{
	for (int i = 0; i < 1000; i++) {
		char crawl[32], inbox[48];
		snprintf(out, size, "f%d", i);
		snprintf(crawl, sizeof crawl, "{%s}", out);
		snprintf(inbox, sizeof inbox, "{%s:a:b}:inbox", out);
		unsigned s1 = router_key_slot(crawl, strlen(crawl)) * 3 / ROUTER_SLOTS;
		unsigned s2 = router_key_slot(inbox, strlen(inbox)) * 3 / ROUTER_SLOTS;
		if (s1 == s2)
			return;
	}
	ck_abort_msg("no prefix");
}

START_TEST(test_cluster_failover)
{
	enum { N = 20000 };
	struct rcluster k = { 0 };
	char pre[16];
	pick_prefix(pre, sizeof pre);
	prefix = pre;
	rcluster_start(&k);
	static struct agent a, b;
	a.dedup = b.dedup = true;
	a.ack_each = b.ack_each = true;
	agent_start(&a, k.ports[0], "a", ASSIGN_CONSISTENT, 1000, 0);
	agent_start(&b, k.ports[0], "b", ASSIGN_CONSISTENT, 1000, 0);
	struct failover f = { .p = { &a, &b, N }, .k = &k };
	snprintf(f.victim, sizeof f.victim, "{%s:a:b}:inbox", pre);
	ck_assert_msg(run_until(both_see_two_live, &f.p, 10000), "agents did not see each other");
	uv_timer_t feed;
	uv_timer_init(&loop, &feed);
	feed.data = &f;
	uv_timer_start(&feed, failover_feed, 5, 5);
	bool done = run_until(failover_done, &f, 40000);
	uv_close((uv_handle_t *)&feed, NULL);
	struct cluster_stats sa, sb;
	cluster_stats(a.c, &sa);
	cluster_stats(b.c, &sb);
	printf("failover: replica serving %llu ms after the kill; B received %zu URLs, A %zu; "
	       "%zu distinct of %d; fenced: a %d, b %d; map reads %llu + %llu, dropped "
	       "connections %llu + %llu, WAITs before the kill %llu, WAIT timeouts %llu + %llu, "
	       "seen dropped %llu + %llu, "
	       "rerouted %llu + %llu\n",
	       (unsigned long long)(f.back_ms - f.kill_ms), b.ngot, a.ngot,
	       union_distinct(&a, &b, N), N, a.fenced, b.fenced, (unsigned long long)sa.refreshes,
	       (unsigned long long)sb.refreshes, (unsigned long long)sa.dropped,
	       (unsigned long long)sb.dropped, (unsigned long long)f.waits,
	       (unsigned long long)sa.wait_timeouts, (unsigned long long)sb.wait_timeouts,
	       (unsigned long long)sa.seen_dropped, (unsigned long long)sb.seen_dropped,
	       (unsigned long long)sa.rerouted, (unsigned long long)sb.rerouted);
	/* A's batches waited for the replica before the kill (once, CLUSTER
	 * SLOTS, which lists no replica in a cluster's first seconds, made
	 * them go unreplicated, and a kill lost them) */
	ck_assert_msg(f.waits > 0, "no WAIT before the kill");
	ck_assert_msg(done, "sent %zu, got %zu distinct of %d, killed %d, a live %d, b live %d",
	              f.sent, union_distinct(&a, &b, N), N, f.done_kill, cluster_is_live(a.c),
	              cluster_is_live(b.c));
	agent_free(&a);
	agent_free(&b);
	loop_finish();
	rcluster_stop(&k);
	prefix = "t";
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("redis");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 40);
	tcase_add_test(tc, test_membership);
	tcase_add_test(tc, test_death_and_fencing);
	tcase_add_test(tc, test_method_refused);
	tcase_add_test(tc, test_ip_lease);
	tcase_add_test(tc, test_ip_release);
	tcase_add_test(tc, test_exchange_order);
	tcase_add_test(tc, test_dead_inbox);
	tcase_add_test(tc, test_dead_inboxes_one_heir);
	tcase_add_test(tc, test_redis_restart);
	tcase_add_test(tc, test_page_budget);
	tcase_add_test(tc, test_cost);
	tcase_add_test(tc, test_ip_turns);
	tcase_add_test(tc, test_census);
	tcase_add_test(tc, test_dedup);
	tcase_add_test(tc, test_shared_rules);
	suite_add_tcase(s, tc);
	TCase *te = tcase_create("entries");
	tcase_add_test(te, test_rule_entry);
	suite_add_tcase(s, te);
	TCase *tk = tcase_create("redis cluster");
	tcase_add_checked_fixture(tk, setup, NULL);
	tcase_set_timeout(tk, 90);
	tcase_add_test(tk, test_cluster_layer);
	tcase_add_test(tk, test_cluster_failover);
	suite_add_tcase(s, tk);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
