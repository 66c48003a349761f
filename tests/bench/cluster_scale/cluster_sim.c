/*
 * cluster_sim.c: many simulated agents of one crawl, in one process, each
 * a real agent of the Redis layer (crawler/cluster/cluster.h) on one loop,
 * driving a Redis or a Redis Cluster at a set page rate per agent, for
 * tests/bench/cluster_scale.sh. No HTTP: a page is a URL taken from the
 * agent's queue (what its inbox brought), an IP lease around a simulated
 * fetch, and the links the page would hold sent to their owners.
 *
 * The web: hosts h0..h(H-1), pages p0..p(P-1) each; host h sits on IP group
 * h mod I. Page K of a host links to pages K+1..K+L of the same host (so a
 * page is linked L times, and new URLs come at about one a page, as on a
 * site) and to the roots of C random hosts. Agent 0 sends every root as a
 * seed. An agent starts at most R pages a second (a token bucket), holds
 * each page's IP lease for fetch_ms, releases it to the IP delay, acks its
 * inbox every 200 ms, publishes its counters and reads the census once a
 * second (as crawl_cluster.c does).
 *
 * Measured, over the window after the warm-up: pages, leases granted and
 * refused, URLs sent, sent-cache drops, SADD drops, and the CPU of each
 * process named by --pids (Redis's, from /proc) per page; with --rate 0,
 * the CPU per agent-second of idle agents (membership, view, polls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "crawler/cluster/cluster.h"
#include "frontier/base/clock.h"

#define MAX_PIDS 32
#define TICK_MS 5
#define ACK_MS 200
#define MAX_INFLIGHT 256

struct opts {
	const char *redis;
	unsigned agents, rate, seconds, warmup, hosts, pages, links, cross, ips;
	unsigned ip_delay, fetch_ms, batch_ms, flush_ms;
	bool leases;
	int pids[MAX_PIDS];
	int npids;
};

struct page {
	struct page *next;
	struct agent *a;
	char *url;
	char ip[32];
	uint64_t due_ms;
};

struct agent {
	struct sim *sim;
	struct cluster *c;
	char name[16];
	char **q; /* FIFO ring of URLs */
	size_t qhead, qlen, qcap;
	uint64_t started, done, tokens_ms;
	unsigned inflight;
	struct page *fetch_head, *fetch_tail; /* fetching, in due order */
	struct page *asking;                  /* waiting for their IP lease */
	bool idle, census_busy;
};

struct sim {
	struct opts o;
	uv_loop_t *loop;
	struct agent *agents;
	bool seeded, measuring;
	uint64_t start_ms, pages, leases, refused, errors;
	uint64_t last_ack_ms, last_sec_ms;
	unsigned long long rnd;
};

static unsigned rnd(struct sim *s, unsigned n)
{
	s->rnd = s->rnd * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((s->rnd >> 33) % n);
}

static void q_push(struct agent *a, char *url)
{
	if (a->qlen == a->qcap) {
		size_t cap = a->qcap ? 2 * a->qcap : 1024;
		char **nq = malloc(cap * sizeof *nq);
		if (nq == NULL) {
			free(url);
			return;
		}
		for (size_t i = 0; i < a->qlen; i++)
			nq[i] = a->q[(a->qhead + i) % a->qcap];
		free(a->q);
		a->q = nq;
		a->qcap = cap;
		a->qhead = 0;
	}
	a->q[(a->qhead + a->qlen++) % a->qcap] = url;
}

static char *q_pop(struct agent *a)
{
	if (a->qlen == 0)
		return NULL;
	char *u = a->q[a->qhead];
	a->qhead = (a->qhead + 1) % a->qcap;
	a->qlen--;
	return u;
}

static void on_urls(struct cluster *c, const struct cluster_url *urls, size_t n, void *arg)
{
	struct agent *a = arg;
	(void)c;
	for (size_t i = 0; i < n; i++) {
		char *u = strdup(urls[i].url);
		if (u != NULL)
			q_push(a, u);
	}
}

static void on_view(struct cluster *c, void *arg)
{
	(void)c;
	(void)arg;
}

static void on_fenced(struct cluster *c, void *arg)
{
	(void)arg;
	fprintf(stderr, "cluster_sim: agent %s fenced\n", cluster_name(c));
}

static void on_error(struct cluster *c, int err, void *arg)
{
	(void)arg;
	fprintf(stderr, "cluster_sim: agent %s: %s\n", cluster_name(c), cluster_strerror(err));
	exit(1);
}

/* Sends url to the owner of host h. */
static void send_link(struct agent *a, unsigned h, unsigned k, unsigned depth)
{
	char url[64], host[24];
	snprintf(host, sizeof host, "h%u.sim", h);
	snprintf(url, sizeof url, "http://%s/p%u", host, k);
	const char *owner = cluster_owner(a->c, host, strlen(host));
	if (owner != NULL)
		cluster_send(a->c, owner, url, "", depth);
}

static void page_done(struct page *p)
{
	struct agent *a = p->a;
	struct sim *s = a->sim;
	unsigned h = 0, k = 0;
	sscanf(p->url, "http://h%u.sim/p%u", &h, &k);
	for (unsigned j = 1; j <= s->o.links && k + j < s->o.pages; j++)
		send_link(a, h, k + j, 1);
	for (unsigned j = 0; j < s->o.cross; j++)
		send_link(a, rnd(s, s->o.hosts), 0, 1);
	if (s->o.leases)
		cluster_ip_release(a->c, p->ip, s->o.ip_delay);
	a->done++;
	a->inflight--;
	if (s->measuring)
		s->pages++;
	free(p->url);
	free(p);
}

static void fetch_start(struct page *p)
{
	struct agent *a = p->a;
	p->due_ms = monotonic_ms() + a->sim->o.fetch_ms;
	p->next = NULL;
	if (a->fetch_tail)
		a->fetch_tail->next = p;
	else
		a->fetch_head = p;
	a->fetch_tail = p;
}

/* Takes p off its agent's list of pages waiting for a lease. */
static void asking_remove(struct page *p)
{
	struct page **pp = &p->a->asking;
	while (*pp != NULL && *pp != p)
		pp = &(*pp)->next;
	if (*pp == p)
		*pp = p->next;
}

static void on_lease(void *arg, bool granted, long wait_ms)
{
	struct page *p = arg;
	struct agent *a = p->a;
	struct sim *s = a->sim;
	asking_remove(p);
	if (granted) {
		if (s->measuring)
			s->leases++;
		fetch_start(p);
		return;
	}
	if (s->measuring) {
		s->refused += wait_ms >= 0;
		s->errors += wait_ms < 0;
	}
	q_push(a, p->url); /* another page first; this one later (its slot is spent) */
	a->inflight--;
	free(p);
}

static void page_start(struct agent *a, char *url)
{
	struct sim *s = a->sim;
	struct page *p = calloc(1, sizeof *p);
	if (p == NULL) {
		q_push(a, url);
		return;
	}
	p->a = a;
	p->url = url;
	a->started++;
	a->inflight++;
	unsigned h = 0;
	sscanf(url, "http://h%u.sim/", &h);
	unsigned ip = h % s->o.ips;
	snprintf(p->ip, sizeof p->ip, "10.%u.%u.%u", ip >> 16 & 255, ip >> 8 & 255, ip & 255);
	if (!s->o.leases) {
		fetch_start(p);
		return;
	}
	unsigned ttl = s->o.fetch_ms + s->o.ip_delay + 200;
	p->next = a->asking;
	a->asking = p; /* freed at the end if the answer never comes */
	if (cluster_ip_lease(a->c, p->ip, ttl, on_lease, p) != CLUSTER_OK)
		on_lease(p, false, -1);
}

static void on_census(void *arg, bool ok, const struct cluster_census *st)
{
	struct agent *a = arg;
	(void)ok;
	(void)st;
	a->census_busy = false;
}

static void agent_tick(struct agent *a, uint64_t now, bool second, bool ack)
{
	struct sim *s = a->sim;
	while (a->fetch_head != NULL && a->fetch_head->due_ms <= now) {
		struct page *p = a->fetch_head;
		a->fetch_head = p->next;
		if (a->fetch_head == NULL)
			a->fetch_tail = NULL;
		page_done(p);
	}
	/* the token bucket: rate pages a second */
	uint64_t allowed = (now - s->start_ms) * s->o.rate / 1000;
	while (cluster_is_live(a->c) && a->started < allowed && a->qlen > 0 &&
	       a->inflight < MAX_INFLIGHT)
		page_start(a, q_pop(a));
	if (a->started < allowed && a->qlen == 0)
		a->started = allowed; /* no backlog of credit while idle */
	if (ack)
		cluster_ack(a->c);
	bool idle = a->qlen == 0 && a->inflight == 0 && cluster_unsent(a->c) == 0 &&
	            cluster_unacked(a->c) == 0;
	if (idle != a->idle) {
		a->idle = idle;
		cluster_publish_idle(a->c, idle);
	}
	if (second) {
		cluster_publish_stats(a->c, a->done, a->done, a->done * 20000);
		if (!a->census_busy && cluster_census(a->c, on_census, a) == CLUSTER_OK)
			a->census_busy = true;
	}
}

static bool all_live(struct sim *s)
{
	for (unsigned i = 0; i < s->o.agents; i++)
		if (!cluster_is_live(s->agents[i].c) ||
		    cluster_view_size(s->agents[i].c) != s->o.agents)
			return false;
	return true;
}

static void seed(struct sim *s)
{
	struct agent *a = &s->agents[0];
	for (unsigned h = 0; h < s->o.hosts; h++)
		send_link(a, h, 0, 0);
	cluster_flush(a->c);
	s->seeded = true;
}

static void tick_cb(uv_timer_t *t)
{
	struct sim *s = t->data;
	uint64_t now = monotonic_ms();
	if (!s->seeded) {
		if (all_live(s)) {
			seed(s);
			s->start_ms = s->last_ack_ms = s->last_sec_ms = now;
			for (unsigned i = 0; i < s->o.agents; i++)
				s->agents[i].started = 0;
		}
		return;
	}
	bool second = now - s->last_sec_ms >= 1000, ack = now - s->last_ack_ms >= ACK_MS;
	if (second)
		s->last_sec_ms = now;
	if (ack)
		s->last_ack_ms = now;
	for (unsigned i = 0; i < s->o.agents; i++)
		agent_tick(&s->agents[i], now, second, ack);
}

/* user + system CPU seconds of a process, from /proc. */
static double proc_cpu(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / 100.0;
}

static void cpu_all(const struct opts *o, double *out)
{
	for (int i = 0; i < o->npids; i++)
		out[i] = proc_cpu(o->pids[i]);
}

static void run_for(uv_loop_t *loop, unsigned ms)
{
	uint64_t end = monotonic_ms() + ms;
	while (monotonic_ms() < end)
		uv_run(loop, UV_RUN_ONCE);
}

static int usage(void)
{
	fprintf(stderr, "usage: cluster_sim --redis redis://HOST:PORT/PREFIX --agents N --rate R\n"
	                "  [--seconds S] [--warmup S] [--hosts H] [--pages P] [--links L]\n"
	                "  [--cross C] [--ips I] [--ip-delay MS] [--fetch-ms MS]\n"
	                "  [--batch-ms MS] [--flush-ms MS] [--no-leases] [--pids PID,...]\n");
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){ .agents = 10,
		            .rate = 100,
		            .seconds = 10,
		            .warmup = 3,
		            .hosts = 2000,
		            .pages = 100000,
		            .links = 10,
		            .cross = 2,
		            .ips = 500,
		            .ip_delay = 10,
		            .fetch_ms = 20,
		            .leases = true };
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned *u = strcmp(k, "--agents") == 0     ? &o->agents
		              : strcmp(k, "--rate") == 0     ? &o->rate
		              : strcmp(k, "--seconds") == 0  ? &o->seconds
		              : strcmp(k, "--warmup") == 0   ? &o->warmup
		              : strcmp(k, "--hosts") == 0    ? &o->hosts
		              : strcmp(k, "--pages") == 0    ? &o->pages
		              : strcmp(k, "--links") == 0    ? &o->links
		              : strcmp(k, "--cross") == 0    ? &o->cross
		              : strcmp(k, "--ips") == 0      ? &o->ips
		              : strcmp(k, "--ip-delay") == 0 ? &o->ip_delay
		              : strcmp(k, "--fetch-ms") == 0 ? &o->fetch_ms
		              : strcmp(k, "--batch-ms") == 0 ? &o->batch_ms
		              : strcmp(k, "--flush-ms") == 0 ? &o->flush_ms
		                                             : NULL;
		if (strcmp(k, "--no-leases") == 0) {
			o->leases = false;
		} else if (strcmp(k, "--redis") == 0 && v) {
			o->redis = v;
			i++;
		} else if (strcmp(k, "--pids") == 0 && v) {
			for (char *p = (char *)v; *p && o->npids < MAX_PIDS; p++) {
				o->pids[o->npids++] = (int)strtol(p, &p, 10);
				if (*p != ',')
					break;
			}
			i++;
		} else if (u != NULL && v) {
			*u = (unsigned)strtoul(v, NULL, 10);
			i++;
		} else {
			return -1;
		}
	}
	return o->redis && o->agents > 0 && o->hosts > 0 && o->ips > 0 && o->ip_delay > 0 ? 0 : -1;
}

static void report(struct sim *s, const double *cpu0, const double *cpu1, double secs)
{
	uint64_t sent = 0, cached = 0, seen = 0, received = 0;
	for (unsigned i = 0; i < s->o.agents; i++) {
		struct cluster_stats st;
		cluster_stats(s->agents[i].c, &st);
		sent += st.sent;
		cached += st.sent_cached;
		seen += st.seen_dropped;
		received += st.received;
	}
	printf("agents=%u rate=%u seconds=%.2f pages=%llu pages_per_s=%.1f\n", s->o.agents,
	       s->o.rate, secs, (unsigned long long)s->pages, (double)s->pages / secs);
	printf("leases=%llu refused=%llu errors=%llu sent=%llu sent_cached=%llu "
	       "seen_dropped=%llu received=%llu\n",
	       (unsigned long long)s->leases, (unsigned long long)s->refused,
	       (unsigned long long)s->errors, (unsigned long long)sent, (unsigned long long)cached,
	       (unsigned long long)seen, (unsigned long long)received);
	for (int i = 0; i < s->o.npids; i++) {
		double cpu = cpu1[i] - cpu0[i];
		printf("pid=%d cpu_s=%.3f cpu_ms_per_page=%.4f cpu_ms_per_agent_s=%.4f\n",
		       s->o.pids[i], cpu, s->pages ? cpu * 1000 / (double)s->pages : 0,
		       cpu * 1000 / (secs * s->o.agents));
	}
}

int main(int argc, char **argv)
{
	struct sim s = { .rnd = 42 };
	if (parse(argc, argv, &s.o) != 0)
		return usage();
	uv_loop_t loop;
	uv_loop_init(&loop);
	s.loop = &loop;
	s.agents = calloc(s.o.agents, sizeof *s.agents);
	if (s.agents == NULL)
		return 1;
	for (unsigned i = 0; i < s.o.agents; i++) {
		struct agent *a = &s.agents[i];
		a->sim = &s;
		snprintf(a->name, sizeof a->name, "sim%u", i);
		struct cluster_options co = { .url = s.o.redis,
			                      .name = a->name,
			                      .method = ASSIGN_CONSISTENT,
			                      .lease_ms = 3000,
			                      .dedup = true,
			                      .batch_ms = s.o.batch_ms,
			                      .flush_delay_ms = s.o.flush_ms,
			                      .ip_patience_ms = s.o.ip_delay + 1 };
		struct cluster_callbacks cb = { on_view, on_urls, on_fenced, on_error, a };
		if (cluster_create(&loop, &co, &cb, &a->c) != CLUSTER_OK) {
			fprintf(stderr, "cluster_sim: cannot create agent %u\n", i);
			return 1;
		}
	}
	uv_timer_t tick;
	uv_timer_init(&loop, &tick);
	tick.data = &s;
	uv_timer_start(&tick, tick_cb, TICK_MS, TICK_MS);
	uint64_t t0 = monotonic_ms();
	while (!s.seeded && monotonic_ms() - t0 < 60000)
		uv_run(&loop, UV_RUN_ONCE);
	if (!s.seeded) {
		fprintf(stderr, "cluster_sim: the agents did not all join\n");
		return 1;
	}
	run_for(&loop, s.o.warmup * 1000);
	double cpu0[MAX_PIDS], cpu1[MAX_PIDS];
	cpu_all(&s.o, cpu0);
	uint64_t m0 = monotonic_ms();
	s.measuring = true;
	run_for(&loop, s.o.seconds * 1000);
	s.measuring = false;
	cpu_all(&s.o, cpu1);
	report(&s, cpu0, cpu1, (double)(monotonic_ms() - m0) / 1000.0);
	fflush(stdout);
	uv_timer_stop(&tick);
	uv_close((uv_handle_t *)&tick, NULL);
	for (unsigned i = 0; i < s.o.agents; i++) {
		struct agent *a = &s.agents[i];
		cluster_destroy(a->c);
		while (a->qlen > 0)
			free(q_pop(a));
		free(a->q);
		struct page *lists[2] = { a->fetch_head, a->asking };
		for (int l = 0; l < 2; l++)
			while (lists[l] != NULL) {
				struct page *p = lists[l];
				lists[l] = p->next;
				free(p->url);
				free(p);
			}
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	free(s.agents);
	return 0;
}
