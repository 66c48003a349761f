/* test_dns.c: the c-ares resolver and its cache against an in-test UDP
 * DNS responder on 127.0.0.1 (a thread answering A and AAAA queries):
 *   nx-*      NXDOMAIN
 *   nodata-*  NOERROR with no answer (NODATA)
 *   sf-*      SERVFAIL
 *   drop-*    no answer at all (the query times out)
 *   ttl1-*    one A record, TTL 1
 *   multi-*   two A records (TTL 300 and 100)
 *   v6-*      AAAA 2001:db8::<name length> (TTL 200), no A record
 *   dual-*    both: A as below (TTL 300), AAAA as v6-* (TTL 200)
 *   v6sf-*    AAAA 2001:db8::1, SERVFAIL to A
 *   many-*    25 A records 10.0.0.1..25 (more than DNS_MAX_ADDRS)
 *   lieid-*   an answer to another query (the transaction ID changed)
 *   liename-* an answer to another name (the question's first letter changed)
 *   anything else: one A record 127.0.1.<name length>, TTL 300, no AAAA
 * It counts A queries per name so coalescing and caching can be checked
 * (a lookup asks A and AAAA together), and AAAA queries apart. */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crawler/net/dns.h"

struct responder {
	int fd;
	int port;
	pthread_t thread;
	atomic_int stop;
	atomic_long queries;
	atomic_long aaaa_queries;
	char last[256];
	pthread_mutex_t mu;
	char names[64][256];
	long counts[64];
	int nnames;
};

static void count_name(struct responder *r, const char *name)
{
	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < r->nnames; i++)
		if (strcmp(r->names[i], name) == 0) {
			r->counts[i]++;
			pthread_mutex_unlock(&r->mu);
			return;
		}
	if (r->nnames < 64) {
		snprintf(r->names[r->nnames], sizeof(r->names[0]), "%s", name);
		r->counts[r->nnames++] = 1;
	}
	pthread_mutex_unlock(&r->mu);
}

static long name_count(struct responder *r, const char *name)
{
	long n = 0;
	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < r->nnames; i++)
		if (strcmp(r->names[i], name) == 0)
			n = r->counts[i];
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* A record of type (1: A, 28: AAAA) with the address ip (4 or 16 bytes). */
static size_t put_rr(unsigned char *p, unsigned type, uint32_t ttl, const unsigned char *ip)
{
	size_t n = 0, len = type == 28 ? 16 : 4;
	p[n++] = 0xc0;
	p[n++] = 12; /* name: pointer to question */
	p[n++] = 0;
	p[n++] = (unsigned char)type;
	p[n++] = 0;
	p[n++] = 1; /* IN */
	p[n++] = (unsigned char)(ttl >> 24);
	p[n++] = (unsigned char)(ttl >> 16);
	p[n++] = (unsigned char)(ttl >> 8);
	p[n++] = (unsigned char)ttl;
	p[n++] = 0;
	p[n++] = (unsigned char)len;
	memcpy(p + n, ip, len);
	return n + len;
}

static size_t put_a(unsigned char *p, uint32_t ttl, const unsigned char ip[4])
{
	return put_rr(p, 1, ttl, ip);
}

/* The answer records of an AAAA query for name (nl bytes); their count in
 * *count. */
static size_t put_aaaa_answer(unsigned char *p, const char *name, size_t nl, unsigned char *count)
{
	unsigned char ip6[16] = { 0x20, 0x01, 0x0d, 0xb8 };
	ip6[15] = (unsigned char)nl;
	if (strncmp(name, "v6sf-", 5) == 0)
		ip6[15] = 1;
	else if (strncmp(name, "v6-", 3) != 0 && strncmp(name, "dual-", 5) != 0)
		return 0;
	*count = 1;
	return put_rr(p, 28, 200, ip6);
}

static void *responder_run(void *arg)
{
	struct responder *r = arg;
	unsigned char q[512], a[1024];
	while (!atomic_load(&r->stop)) {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
		if (poll(&pfd, 1, 20) <= 0)
			continue;
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(r->fd, q, sizeof(q), 0, (struct sockaddr *)&from, &fl);
		if (n < 17)
			continue;
		/* Question name to dotted text. */
		char name[256];
		size_t pos = 12, nl = 0;
		while (pos < (size_t)n && q[pos] != 0 && nl < 200) {
			size_t l = q[pos++];
			if (nl)
				name[nl++] = '.';
			memcpy(name + nl, q + pos, l);
			nl += l;
			pos += l;
		}
		name[nl] = '\0';
		size_t qend = pos + 5; /* zero byte + type + class */
		int aaaa = qend <= (size_t)n && q[pos + 1] == 0 && q[pos + 2] == 28;
		atomic_fetch_add(&r->queries, 1);
		if (aaaa)
			atomic_fetch_add(&r->aaaa_queries, 1);
		else
			count_name(r, name);
		memcpy(a, q, qend);
		a[2] = 0x81 | (q[2] & 0x01); /* QR, RD copied */
		a[3] = 0x80;                 /* RA */
		a[6] = a[7] = a[8] = a[9] = a[10] = a[11] = 0;
		size_t len = qend;
		if (strncmp(name, "drop-", 5) == 0)
			continue;
		if (strncmp(name, "nx-", 3) == 0) {
			a[3] |= 3;
		} else if (strncmp(name, "sf-", 3) == 0) {
			a[3] |= 2;
		} else if (strncmp(name, "nodata-", 7) == 0) {
			/* no answer records */
		} else if (aaaa) {
			len += put_aaaa_answer(a + len, name, nl, &a[7]);
		} else if (strncmp(name, "v6sf-", 5) == 0) {
			a[3] |= 2;
		} else if (strncmp(name, "v6-", 3) == 0) {
			/* no A record */
		} else if (strncmp(name, "many-", 5) == 0) {
			a[7] = 25;
			for (unsigned char i = 1; i <= 25; i++)
				len += put_a(a + len, 300, (unsigned char[4]){ 10, 0, 0, i });
		} else if (strncmp(name, "multi-", 6) == 0) {
			unsigned char ip1[4] = { 10, 9, 8, 7 }, ip2[4] = { 10, 9, 8, 6 };
			a[7] = 2;
			len += put_a(a + len, 300, ip1);
			len += put_a(a + len, 100, ip2);
		} else {
			unsigned char ip[4] = { 127, 0, 1, (unsigned char)nl };
			a[7] = 1;
			len += put_a(a + len, strncmp(name, "ttl1-", 5) == 0 ? 1 : 300, ip);
		}
		if (strncmp(name, "lieid-", 6) == 0)
			a[1] ^= 0x5a;
		if (strncmp(name, "liename-", 8) == 0)
			a[13] ^= 0x01; /* 'l' -> 'm' */
		sendto(r->fd, a, len, 0, (struct sockaddr *)&from, fl);
	}
	return NULL;
}

/* A responder on addr:port (host order; port 0: any), or NULL when that
 * cannot be bound (port 53 needs privileges). */
static struct responder *responder_start_at(uint32_t addr, int port)
{
	struct responder *r = calloc(1, sizeof(*r));
	struct sockaddr_in a = { .sin_family = AF_INET,
		                 .sin_addr.s_addr = htonl(addr),
		                 .sin_port = htons((uint16_t)port) };
	socklen_t len = sizeof(a);
	r->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (bind(r->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(r->fd);
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->mu, NULL);
	getsockname(r->fd, (struct sockaddr *)&a, &len);
	r->port = ntohs(a.sin_port);
	pthread_create(&r->thread, NULL, responder_run, r);
	return r;
}

static struct responder *responder_start(void)
{
	struct responder *r = responder_start_at(0x7f000001, 0);
	ck_assert_ptr_nonnull(r);
	return r;
}

static void responder_stop(struct responder *r)
{
	atomic_store(&r->stop, 1);
	pthread_join(r->thread, NULL);
	close(r->fd);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

struct answer {
	int calls;
	enum dns_error err;
	struct ip_addr addrs[DNS_MAX_ADDRS];
	size_t n;
	char host[256];
};

/* The text form of answer a's address i. */
static const char *addr_text(const struct answer *a, size_t i)
{
	static char buf[IP_ADDR_STRLEN];
	return ip_addr_format(&a->addrs[i], buf, sizeof buf);
}

static void on_dns(void *ctx, enum dns_error err, const char *host, const struct ip_addr *addrs,
                   size_t n)
{
	struct answer *a = ctx;
	a->calls++;
	a->err = err;
	a->n = n;
	if (n > 0)
		memcpy(a->addrs, addrs, n * sizeof(*addrs));
	snprintf(a->host, sizeof(a->host), "%s", host);
}

static struct responder *resp;
static uv_loop_t loop;
static struct dns_resolver *res;

static void make_resolver(const char *server, unsigned neg_ttl)
{
	char addr[64];
	if (server == NULL) {
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", resp->port);
		server = addr;
	}
	struct dns_config cfg = { .server = server,
		                  .negative_ttl_s = neg_ttl,
		                  .timeout_ms = 1000,
		                  .tries = 1,
		                  .cache_entries = 4 };
	ck_assert_int_eq(dns_resolver_create(&loop, &cfg, &res), DNS_OK);
}

static void setup(void)
{
	resp = responder_start();
	uv_loop_init(&loop);
	res = NULL;
}

static void teardown(void)
{
	dns_resolver_destroy(res);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	responder_stop(resp);
}

static void resolve_run(const char *host, uint64_t now, struct answer *a)
{
	memset(a, 0, sizeof(*a));
	ck_assert_int_eq(dns_resolve(res, host, on_dns, a, now), DNS_OK);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(a->calls, 1);
}

START_TEST(a_records_and_cache)
{
	struct answer a;
	struct dns_stats st;
	make_resolver(NULL, 5);
	resolve_run("Host1.Web.Test.", 1000, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_str_eq(addr_text(&a, 0), "127.0.1.14"); /* strlen("host1.web.test") */
	ck_assert_str_eq(a.host, "host1.web.test");
	/* Cached: answered synchronously, no new query. */
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(dns_resolve(res, "host1.web.test", on_dns, &a, 2000), DNS_OK);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_int_eq(name_count(resp, "host1.web.test"), 1);
	/* Two addresses; the TTL is the smaller one (100 s). */
	resolve_run("multi-a.test", 1000, &a);
	ck_assert_uint_eq(a.n, 2);
	resolve_run("multi-a.test", 1000 + 99999, &a);
	ck_assert_int_eq(name_count(resp, "multi-a.test"), 1);
	resolve_run("multi-a.test", 1000 + 100000, &a);
	ck_assert_int_eq(name_count(resp, "multi-a.test"), 2);
	/* IP literals never query. */
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(dns_resolve(res, "127.0.0.9", on_dns, &a, 0), DNS_OK);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_str_eq(addr_text(&a, 0), "127.0.0.9");
	dns_resolver_stats(res, &st);
	ck_assert_uint_eq(st.queries, 3);
	ck_assert_uint_eq(st.cache_hits, 2);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_int_eq(dns_resolve(res, "", on_dns, &a, 0), DNS_ERR_INVALID);
	ck_assert_int_eq(dns_resolve(res, "bad name", on_dns, &a, 0), DNS_ERR_INVALID);
	/* a label past 63 bytes, or an empty one, names nothing: refused unasked */
	char label[80];
	memset(label, 'a', 64);
	snprintf(label + 64, sizeof label - 64, ".test");
	ck_assert_int_eq(dns_resolve(res, label, on_dns, &a, 0), DNS_ERR_INVALID);
	ck_assert_int_eq(dns_resolve(res, "a..test", on_dns, &a, 0), DNS_ERR_INVALID);
	ck_assert_int_eq(dns_resolve(res, ".test", on_dns, &a, 0), DNS_ERR_INVALID);
	ck_assert_int_eq(a.calls, 1);
	resolve_run(label + 1, 1000, &a); /* 63 bytes: asked */
	dns_resolver_stats(res, &st);
	ck_assert_uint_eq(st.queries, 3 + 1);
}
END_TEST

/* Every lookup asks A and AAAA; the answer lists the preferred family
 * first, keeps both, and holds for the smaller TTL of the two. */
START_TEST(aaaa_records)
{
	struct answer a;
	struct dns_stats st;
	make_resolver(NULL, 5);
	resolve_run("v6-a.test", 0, &a); /* 9 bytes */
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_str_eq(addr_text(&a, 0), "2001:db8::9");
	resolve_run("dual-a.test", 0, &a); /* 11 bytes */
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_uint_eq(a.n, 2);
	ck_assert_str_eq(addr_text(&a, 0), "127.0.1.11");
	ck_assert_str_eq(addr_text(&a, 1), "2001:db8::b");
	resolve_run("dual-a.test", 199999, &a);
	ck_assert_int_eq(name_count(resp, "dual-a.test"), 1);
	resolve_run("dual-a.test", 200000, &a); /* AAAA's TTL, 200 s */
	ck_assert_int_eq(name_count(resp, "dual-a.test"), 2);
	/* AAAA answered, A failed: the address is the answer. */
	resolve_run("v6sf-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_uint_eq(a.n, 1);
	ck_assert_str_eq(addr_text(&a, 0), "2001:db8::1");
	/* Neither: NODATA for both is NOTFOUND. */
	resolve_run("nodata-b.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_NOTFOUND);
	dns_resolver_stats(res, &st);
	ck_assert_uint_eq(st.queries, 5);
	ck_assert_int_eq(atomic_load(&resp->aaaa_queries), 5);
	/* IPv6 literals, bare or in brackets as URL hosts carry them. */
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(dns_resolve(res, "[::1]", on_dns, &a, 0), DNS_OK);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_str_eq(addr_text(&a, 0), "::1");
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(dns_resolve(res, "2001:DB8::5", on_dns, &a, 0), DNS_OK);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_str_eq(addr_text(&a, 0), "2001:db8::5");
	ck_assert_int_eq(atomic_load(&resp->aaaa_queries), 5);
}
END_TEST

/* prefer = IP_V6 puts a dual-stack name's AAAA first. */
START_TEST(prefer_ipv6)
{
	struct answer a;
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", resp->port);
	struct dns_config cfg = { .server = addr, .timeout_ms = 1000, .tries = 1, .prefer = IP_V6 };
	ck_assert_int_eq(dns_resolver_create(&loop, &cfg, &res), DNS_OK);
	resolve_run("dual-b.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_uint_eq(a.n, 2);
	ck_assert_str_eq(addr_text(&a, 0), "2001:db8::b");
	ck_assert_str_eq(addr_text(&a, 1), "127.0.1.11");
}
END_TEST

START_TEST(ttl_expiry)
{
	struct answer a;
	make_resolver(NULL, 5);
	resolve_run("ttl1-x.test", 50000, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	resolve_run("ttl1-x.test", 50999, &a);
	ck_assert_int_eq(name_count(resp, "ttl1-x.test"), 1);
	resolve_run("ttl1-x.test", 51000, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_int_eq(name_count(resp, "ttl1-x.test"), 2);
}
END_TEST

START_TEST(negative_cache)
{
	struct answer a;
	struct dns_stats st;
	make_resolver(NULL, 5);
	resolve_run("nx-gone.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_NOTFOUND);
	ck_assert_uint_eq(a.n, 0);
	resolve_run("nx-gone.test", 4999, &a);
	ck_assert_int_eq(a.err, DNS_ERR_NOTFOUND);
	ck_assert_int_eq(name_count(resp, "nx-gone.test"), 1);
	resolve_run("nx-gone.test", 5000, &a);
	ck_assert_int_eq(a.err, DNS_ERR_NOTFOUND);
	ck_assert_int_eq(name_count(resp, "nx-gone.test"), 2);
	dns_resolver_stats(res, &st);
	ck_assert_uint_eq(st.failures, 2);
}
END_TEST

/* NXDOMAIN and NODATA are held for negative_ttl; a timeout or SERVFAIL
 * only for the retry back-off (1 s, then 2 s, 4 s ... up to negative_ttl),
 * so the name is asked again long before a negative entry would expire. */
START_TEST(transient_failures_back_off)
{
	struct answer a;
	make_resolver(NULL, 60);
	resolve_run("nx-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_NOTFOUND);
	resolve_run("nodata-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_NOTFOUND);
	resolve_run("sf-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_SERVFAIL);
	resolve_run("drop-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_TIMEOUT);
	/* Within the first back-off all four are served from the cache. */
	resolve_run("sf-a.test", 999, &a);
	ck_assert_int_eq(a.err, DNS_ERR_SERVFAIL);
	resolve_run("drop-a.test", 999, &a);
	ck_assert_int_eq(a.err, DNS_ERR_TIMEOUT);
	ck_assert_int_eq(name_count(resp, "sf-a.test"), 1);
	ck_assert_int_eq(name_count(resp, "drop-a.test"), 1);
	/* After 1 s the transient failures are asked again; the negative
	 * answers are still cached. */
	resolve_run("nx-a.test", 1000, &a);
	resolve_run("nodata-a.test", 1000, &a);
	resolve_run("sf-a.test", 1000, &a);
	ck_assert_int_eq(a.err, DNS_ERR_SERVFAIL);
	resolve_run("drop-a.test", 1000, &a);
	ck_assert_int_eq(a.err, DNS_ERR_TIMEOUT);
	ck_assert_int_eq(name_count(resp, "nx-a.test"), 1);
	ck_assert_int_eq(name_count(resp, "nodata-a.test"), 1);
	ck_assert_int_eq(name_count(resp, "sf-a.test"), 2);
	ck_assert_int_eq(name_count(resp, "drop-a.test"), 2);
	/* Second failure in a row: 2 s. */
	resolve_run("sf-a.test", 2999, &a);
	ck_assert_int_eq(name_count(resp, "sf-a.test"), 2);
	resolve_run("sf-a.test", 3000, &a);
	ck_assert_int_eq(name_count(resp, "sf-a.test"), 3);
	/* The negative answers expire at negative_ttl. */
	resolve_run("nx-a.test", 59999, &a);
	ck_assert_int_eq(name_count(resp, "nx-a.test"), 1);
	resolve_run("nx-a.test", 60000, &a);
	ck_assert_int_eq(name_count(resp, "nx-a.test"), 2);
}
END_TEST

/* Answers the web controls: more records than a lookup keeps (the first
 * DNS_MAX_ADDRS are kept, in order), and answers that lie about what they
 * answer, which count as no answer at all. */
START_TEST(oversized_and_lying_answers)
{
	struct answer a;
	char want[32];
	make_resolver(NULL, 60);
	resolve_run("many-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_uint_eq(a.n, DNS_MAX_ADDRS);
	for (size_t i = 0; i < a.n; i++) {
		snprintf(want, sizeof want, "10.0.0.%zu", i + 1);
		ck_assert_str_eq(addr_text(&a, i), want);
	}
	resolve_run("lieid-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_TIMEOUT);
	ck_assert_uint_eq(a.n, 0);
	resolve_run("liename-a.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_ERR_TIMEOUT);
	ck_assert_uint_eq(a.n, 0);
	ck_assert_int_eq(name_count(resp, "lieid-a.test"), 1);
	ck_assert_int_eq(name_count(resp, "liename-a.test"), 1);
}
END_TEST

START_TEST(coalescing_and_eviction)
{
	struct answer a[10];
	struct dns_stats st;
	make_resolver(NULL, 5);
	memset(a, 0, sizeof(a));
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(dns_resolve(res, "same.test", on_dns, &a[i], 0), DNS_OK);
	dns_resolver_stats(res, &st);
	ck_assert_uint_eq(st.pending, 1);
	ck_assert_uint_eq(st.coalesced, 9);
	uv_run(&loop, UV_RUN_DEFAULT);
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(a[i].calls, 1);
		ck_assert_int_eq(a[i].err, DNS_OK);
	}
	ck_assert_int_eq(name_count(resp, "same.test"), 1);
	/* The cache holds 4 entries: 6 more names evict same.test (LRU). */
	char name[32];
	for (int i = 0; i < 6; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		resolve_run(name, 0, &a[0]);
	}
	dns_resolver_stats(res, &st);
	ck_assert_uint_le(st.cached, 4);
	ck_assert_uint_ge(st.evictions, 3);
	resolve_run("same.test", 0, &a[0]);
	ck_assert_int_eq(name_count(resp, "same.test"), 2);
}
END_TEST

START_TEST(cache_is_bounded)
{
	/* 300 names, answers and failures, through a cache of 4: its entries
	 * and bytes stay those of 4 names, and a name asked between every
	 * other stays in (least recently used go first). */
	struct answer a;
	struct dns_stats st;
	char name[64];
	make_resolver(NULL, 5);
	dns_resolver_stats(res, &st);
	uint64_t table = st.bytes;
	ck_assert_uint_gt(table, 0);
	resolve_run("hot.test", 0, &a);
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), i % 3 ? "name-%d.example.test" : "nx-%d.test", i);
		resolve_run(name, 0, &a);
		resolve_run("hot.test", 0, &a);
		ck_assert_int_eq(a.err, DNS_OK);
		dns_resolver_stats(res, &st);
		ck_assert_uint_le(st.cached, 4);
		/* an entry: its struct and a name of at most 24 bytes, malloc'd */
		ck_assert_uint_le(st.bytes, table + 4 * 512);
	}
	ck_assert_uint_ge(st.evictions, 296);
	ck_assert_int_eq(name_count(resp, "hot.test"), 1);
	ck_assert_uint_eq(st.pending, 0);
}
END_TEST

START_TEST(only_configured_server)
{
	/* A configured server that does not answer: "localhost" must fail, not
	 * come from /etc/hosts or the system's resolvers. */
	struct answer a;
	char dead[64];
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t len = sizeof(sa);
	bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	getsockname(fd, (struct sockaddr *)&sa, &len);
	snprintf(dead, sizeof(dead), "127.0.0.1:%d", ntohs(sa.sin_port));
	make_resolver(dead, 5); /* fd bound and silent: queries time out */
	resolve_run("localhost", 0, &a);
	ck_assert_int_ne(a.err, DNS_OK);
	ck_assert_uint_eq(a.n, 0);
	/* The socket did receive the query: it went to the configured server. */
	char buf[512];
	ck_assert_int_gt(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	close(fd);
	/* And our responder saw nothing. */
	ck_assert_int_eq(atomic_load(&resp->queries), 0);
}
END_TEST

START_TEST(destroy_cancels)
{
	struct answer a;
	make_resolver(NULL, 5);
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(dns_resolve(res, "pending.test", on_dns, &a, 0), DNS_OK);
	dns_resolver_destroy(res);
	res = NULL;
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.err, DNS_ERR_CANCELLED);
	struct dns_config bad = { .server = "not-an-ip:53" };
	struct dns_resolver *r2 = (void *)1;
	ck_assert_int_eq(dns_resolver_create(&loop, &bad, &r2), DNS_ERR_INVALID);
	ck_assert_ptr_null(r2);
}
END_TEST

/* A bound UDP socket on 127.0.0.1 that never answers; its port in *port. */
static int silent_socket(int *port)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t len = sizeof(sa);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	*port = ntohs(sa.sin_port);
	return fd;
}

static enum dns_error try_config(const char *servers, const char *resolv_conf, char *got,
                                 size_t cap)
{
	struct dns_config cfg = { .server = servers, .resolv_conf = resolv_conf };
	struct dns_resolver *r = NULL;
	enum dns_error e = dns_resolver_create(&loop, &cfg, &r);
	got[0] = '\0';
	if (e == DNS_OK) {
		ck_assert_int_eq(dns_resolver_servers(r, got, cap), DNS_OK);
		dns_resolver_destroy(r);
		uv_run(&loop, UV_RUN_DEFAULT);
	} else {
		ck_assert_ptr_null(r);
	}
	return e;
}

START_TEST(server_list)
{
	/* Two servers, the first silent: the query moves on to the second. */
	struct answer a;
	char list[128], got[256];
	int dead_port;
	int fd = silent_socket(&dead_port);
	snprintf(list, sizeof(list), "127.0.0.1:%d,127.0.0.1:%d", dead_port, resp->port);
	struct dns_config cfg = { .server = list, .timeout_ms = 1000, .tries = 1 };
	ck_assert_int_eq(dns_resolver_create(&loop, &cfg, &res), DNS_OK);
	ck_assert_int_eq(dns_resolver_servers(res, got, sizeof(got)), DNS_OK);
	ck_assert_str_eq(got, list);
	resolve_run("second.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_int_eq(name_count(resp, "second.test"), 1);
	char buf[512];
	ck_assert_int_gt(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	close(fd);
	/* Every spelling, in order, port 53 by default. */
	ck_assert_int_eq(try_config("[::1]:5300, ::1,127.0.0.2", NULL, got, sizeof(got)), DNS_OK);
	ck_assert_str_eq(got, "[::1]:5300,[::1]:53,127.0.0.2:53");
	static const char *const bad[] = {
		"127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:", "127.0.0.1:x", "[::1",
		"[::1]x",      "[127.0.0.1]:53",  "host.test",  "::1::2",      ",",
		"1.2.3.4,nope"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(try_config(bad[i], NULL, got, sizeof(got)) == DNS_ERR_INVALID, "%s",
		              bad[i]);
}
END_TEST

/* Writes text to a fresh temporary file; its path in path (64 bytes). */
static void temp_file(char *path, const char *text)
{
	snprintf(path, 64, "/tmp/test_dns_resolv.XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

START_TEST(resolv_conf_file)
{
	char path[64], got[256];
	/* c-ares 1.18 takes the address-only nameserver lines, in order, and
	 * skips "ADDR:PORT" ones: no port can be given in the file. */
	temp_file(path, "# test\nsearch example.test\nnameserver 127.0.0.1:5353\n"
	                "nameserver 127.0.0.7\nnameserver ::1\noptions ndots:3\n");
	ck_assert_int_eq(try_config(NULL, path, got, sizeof(got)), DNS_OK);
	ck_assert_str_eq(got, "127.0.0.7:53,[::1]:53");
	/* The list wins over the file. */
	ck_assert_int_eq(try_config("127.0.0.9:99", path, got, sizeof(got)), DNS_OK);
	ck_assert_str_eq(got, "127.0.0.9:99");
	unlink(path);
	/* No usable server (c-ares would ask 127.0.0.1:53): refused. */
	temp_file(path, "nameserver 127.0.0.1:5353\nsearch x.test\n");
	ck_assert_int_eq(try_config(NULL, path, got, sizeof(got)), DNS_ERR_INVALID);
	unlink(path);
	ck_assert_int_eq(try_config(NULL, path, got, sizeof(got)), DNS_ERR_INVALID);
}
END_TEST

START_TEST(resolv_conf_resolves)
{
	/* A whole lookup through a resolv.conf file needs a server on port 53:
	 * a loopback address of its own, when the test may bind it. */
	struct responder *r53 = responder_start_at(0x7f4d0001, 53); /* 127.77.0.1 */
	if (r53 == NULL)
		return; /* unprivileged: resolv_conf_file covers the parsing */
	char path[64];
	struct answer a;
	temp_file(path, "nameserver 127.77.0.1\n");
	struct dns_config cfg = { .resolv_conf = path, .timeout_ms = 1000, .tries = 1 };
	ck_assert_int_eq(dns_resolver_create(&loop, &cfg, &res), DNS_OK);
	resolve_run("via-file.test", 0, &a);
	ck_assert_int_eq(a.err, DNS_OK);
	ck_assert_int_eq(name_count(r53, "via-file.test"), 1);
	ck_assert_int_eq(atomic_load(&resp->queries), 0);
	unlink(path);
	responder_stop(r53);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dns");
	TCase *tc = tcase_create("resolver");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_records_and_cache);
	tcase_add_test(tc, ttl_expiry);
	tcase_add_test(tc, aaaa_records);
	tcase_add_test(tc, prefer_ipv6);
	tcase_add_test(tc, negative_cache);
	tcase_add_test(tc, transient_failures_back_off);
	tcase_add_test(tc, oversized_and_lying_answers);
	tcase_add_test(tc, coalescing_and_eviction);
	tcase_add_test(tc, cache_is_bounded);
	tcase_add_test(tc, only_configured_server);
	tcase_add_test(tc, destroy_cancels);
	tcase_add_test(tc, server_list);
	tcase_add_test(tc, resolv_conf_file);
	tcase_add_test(tc, resolv_conf_resolves);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
