/*
 * Check suite for the running testweb server: DNS answers (c-ares asking
 * only the test DNS), HTTP/1.1 keep-alive and pipelining, absolute-form
 * (proxy) targets, request limits, connection cap, gzip, every fault mode,
 * and the request log after SIGTERM (test case "net"); server models as
 * the client and the log see them (test case "models"). The server binary
 * is argv[1]; each test starts the server it needs (ephemeral ports, ready
 * file).
 */
#include <arpa/inet.h>
#include <ares.h>
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/testweb/gen.h"

static const char *testweb_bin;

struct srv {
	pid_t pid;
	int http_port;
	int dns_port;
	char dir[64];
	char log[128];
};

/* Common generation options for the fault server. */
static const char *const fault_args[] = { "--hosts", "20",
	                                  "--pages", "20",
	                                  "--ips",   "4",
	                                  "--ttl",   "77",
	                                  "--fault", "h11=slow",
	                                  "--fault", "h12=endless",
	                                  "--fault", "h13=hugeheaders",
	                                  "--fault", "h14=gzipbomb",
	                                  "--fault", "h15=badchunk",
	                                  "--fault", "h16=reset",
	                                  "--fault", "h17=trap",
	                                  "--fault", "h18=429",
	                                  NULL };

static void srv_start(struct srv *s, const char *const *extra)
{
	const char *argv[64];
	int n = 0;
	memset(s, 0, sizeof *s);
	snprintf(s->dir, sizeof s->dir, "/tmp/testweb_net_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(s->dir));
	char ready[128];
	snprintf(ready, sizeof ready, "%s/ready", s->dir);
	snprintf(s->log, sizeof s->log, "%s/log.tsv", s->dir);
	argv[n++] = testweb_bin;
	argv[n++] = "--ready-file";
	argv[n++] = ready;
	argv[n++] = "--log";
	argv[n++] = s->log;
	for (int k = 0; extra && extra[k] && n < 62; k++)
		argv[n++] = extra[k];
	argv[n] = NULL;
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* A failed check must not leave the server running. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(testweb_bin, (char *const *)argv);
		_exit(127);
	}
	s->pid = pid;
	for (int tries = 0; tries < 1000; tries++) {
		FILE *f = fopen(ready, "r");
		if (f != NULL) {
			int ok = fscanf(f, "http_port=%d\ndns_port=%d\n", &s->http_port,
			                &s->dns_port);
			fclose(f);
			ck_assert_int_eq(ok, 2);
			ck_assert_int_gt(s->http_port, 0);
			return;
		}
		int st;
		ck_assert_int_eq(waitpid(pid, &st, WNOHANG), 0);
		usleep(10000);
	}
	ck_abort_msg("testweb did not write its ready file");
}

/* SIGTERM, wait, assert exit status 0. */
static void srv_stop(struct srv *s)
{
	int st = 0;
	kill(s->pid, SIGTERM);
	ck_assert_int_eq(waitpid(s->pid, &st, 0), s->pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
}

static void srv_cleanup(struct srv *s)
{
	char p[160];
	snprintf(p, sizeof p, "%s/ready", s->dir);
	unlink(p);
	unlink(s->log);
	rmdir(s->dir);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------- DNS through c-ares ---------- */

struct qres {
	int done;
	int status;
	unsigned char buf[1024];
	int len;
};

static void qcb(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
	struct qres *r = arg;
	(void)timeouts;
	r->done = 1;
	r->status = status;
	if (abuf != NULL && alen > 0 && alen <= (int)sizeof r->buf) {
		memcpy(r->buf, abuf, (size_t)alen);
		r->len = alen;
	}
}

static void dns_query(int port, const char *name, int type, struct qres *r)
{
	ares_channel ch;
	struct ares_options o;
	memset(&o, 0, sizeof o);
	o.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES | ARES_FLAG_NOCHECKRESP;
	o.timeout = 2000;
	o.tries = 2;
	o.ndots = 0;
	ck_assert_int_eq(ares_init_options(&ch, &o,
	                                   ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
	                                           ARES_OPT_NDOTS),
	                 ARES_SUCCESS);
	char csv[64];
	snprintf(csv, sizeof csv, "127.0.0.1:%d", port);
	ck_assert_int_eq(ares_set_servers_ports_csv(ch, csv), ARES_SUCCESS);
	memset(r, 0, sizeof *r);
	ares_query(ch, name, 1 /* C_IN */, type, qcb, r);
	for (int k = 0; k < 200 && !r->done; k++) {
		fd_set rf, wf;
		FD_ZERO(&rf);
		FD_ZERO(&wf);
		int nfds = ares_fds(ch, &rf, &wf);
		struct timeval tv = { 0, 50000 };
		select(nfds, &rf, &wf, NULL, &tv);
		ares_process(ch, &rf, &wf);
	}
	ares_destroy(ch);
	ck_assert(r->done);
}

START_TEST(dns_answers)
{
	struct srv s;
	srv_start(&s, fault_args);
	ck_assert_int_gt(s.dns_port, 0);
	struct qres r;
	/* Known hosts: A = 127.0.1.(1 + i % 4), TTL as configured. */
	const long hosts[] = { 0, 5, 7, 19, 13 };
	for (size_t k = 0; k < sizeof hosts / sizeof *hosts; k++) {
		char name[64];
		snprintf(name, sizeof name, k == 1 ? "H%ld.Web.Test" : "h%ld.web.test", hosts[k]);
		dns_query(s.dns_port, name, 1 /* A */, &r);
		ck_assert_int_eq(r.status, ARES_SUCCESS);
		struct hostent *he = NULL;
		struct ares_addrttl at[4];
		int nat = 4;
		ck_assert_int_eq(ares_parse_a_reply(r.buf, r.len, &he, at, &nat), ARES_SUCCESS);
		ck_assert_int_eq(nat, 1);
		char ip[32], want[32];
		inet_ntop(AF_INET, &at[0].ipaddr, ip, sizeof ip);
		snprintf(want, sizeof want, "127.0.1.%ld", 1 + hosts[k] % 4);
		ck_assert_str_eq(ip, want);
		ck_assert_int_eq(at[0].ttl, 77);
		ares_free_hostent(he);
	}
	/* Unknown names: NXDOMAIN. */
	const char *const unknown[] = { "h20.web.test", "h999.web.test", "nx3.web.test",
		                        "web.test",     "h01.web.test",  "h1.web.test.example" };
	for (size_t k = 0; k < sizeof unknown / sizeof *unknown; k++) {
		dns_query(s.dns_port, unknown[k], 1, &r);
		ck_assert_msg(r.status == ARES_ENOTFOUND, "%s: %s", unknown[k],
		              ares_strerror(r.status));
		ck_assert_int_eq(r.buf[3] & 0xf, 3);
	}
	/* AAAA of a known name: NOERROR with no records. */
	dns_query(s.dns_port, "h2.web.test", 28 /* AAAA */, &r);
	ck_assert_int_eq(r.status, ARES_ENODATA);
	ck_assert_int_eq(r.buf[3] & 0xf, 0);
	ck_assert_int_eq(r.buf[6] << 8 | r.buf[7], 0);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

/* Raw UDP garbage never crashes the responder; answers are FORMERR or none. */
START_TEST(dns_malformed)
{
	struct srv s;
	srv_start(&s, fault_args);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s.dns_port) };
	sa.sin_addr.s_addr = htonl(0x7f000001);
	struct timeval tv = { 0, 200000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	unsigned char pk[600];
	unsigned seedv = 12345;
	for (int k = 0; k < 300; k++) {
		size_t n = (size_t)(rand_r(&seedv) % 64);
		for (size_t j = 0; j < n; j++)
			pk[j] = (unsigned char)rand_r(&seedv);
		if (n >= 12 && k % 3 == 0) {
			pk[2] = 0x01; /* query, RD */
			pk[4] = 0;
			pk[5] = 1;
		}
		sendto(fd, pk, n, 0, (struct sockaddr *)&sa, sizeof sa);
	}
	/* A compression pointer in the question: FORMERR. */
	unsigned char cp[] = { 0x12, 0x34, 0x01, 0x00, 0,    1, 0, 0, 0,
		               0,    0,    0,    0xc0, 0x0c, 0, 1, 0, 1 };
	for (;;) { /* drain */
		unsigned char junk[600];
		if (recv(fd, junk, sizeof junk, 0) < 0)
			break;
	}
	sendto(fd, cp, sizeof cp, 0, (struct sockaddr *)&sa, sizeof sa);
	ssize_t got = 0;
	for (int k = 0; k < 10; k++) {
		got = recv(fd, pk, sizeof pk, 0);
		if (got >= 12 && pk[0] == 0x12 && pk[1] == 0x34)
			break;
	}
	ck_assert_int_ge(got, 12);
	ck_assert_int_eq(pk[3] & 0xf, 1);
	close(fd);
	struct qres r;
	dns_query(s.dns_port, "h1.web.test", 1, &r);
	ck_assert_int_eq(r.status, ARES_SUCCESS);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

/* ---------- raw HTTP helpers ---------- */

static int tcp_connect(uint32_t ip, int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(ip);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	struct timeval tv = { 10, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		ck_assert_int_gt(w, 0);
		s += w;
		n -= (size_t)w;
	}
}

/* Reads one response with Content-Length; returns status, body length in *bl. */
static int read_response(int fd, char *buf, size_t cap, size_t *have, size_t *bl, char *hdrs,
                         size_t hcap)
{
	char *end = NULL;
	for (;;) {
		buf[*have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end != NULL)
			break;
		ck_assert(*have < cap - 1);
		ssize_t r = recv(fd, buf + *have, cap - 1 - *have, 0);
		ck_assert_int_gt(r, 0);
		*have += (size_t)r;
	}
	size_t hl = (size_t)(end - buf) + 4;
	if (hdrs != NULL) {
		size_t m = hl < hcap - 1 ? hl : hcap - 1;
		memcpy(hdrs, buf, m);
		hdrs[m] = '\0';
	}
	int status = 0;
	ck_assert_int_eq(sscanf(buf, "HTTP/1.1 %d", &status), 1);
	char *cl = strcasestr(buf, "Content-Length:");
	ck_assert(cl != NULL && cl < end);
	size_t len = strtoul(cl + 15, NULL, 10);
	while (*have < hl + len) {
		ck_assert(*have < cap - 1);
		ssize_t r = recv(fd, buf + *have, cap - 1 - *have, 0);
		ck_assert_int_gt(r, 0);
		*have += (size_t)r;
	}
	memmove(buf, buf + hl + len, *have - hl - len);
	*have -= hl + len;
	*bl = len;
	return status;
}

START_TEST(http_keepalive_pipelining)
{
	struct srv s;
	struct tw_config cfg;
	tw_config_defaults(&cfg);
	srv_start(&s, fault_args);
	cfg.hosts = 20;
	cfg.http_port = s.http_port;
	int fd = tcp_connect(0x7f000102, s.http_port); /* h1 and h5 live on 127.0.1.2 */
	static char buf[1 << 20];
	size_t have = 0, bl = 0;
	char req[2048];
	int n = snprintf(req, sizeof req,
	                 "GET / HTTP/1.1\r\nHost: h1.web.test:%d\r\n\r\n"
	                 "GET /s2/p2.html HTTP/1.1\r\nHost: H5.WEB.TEST\r\nUser-Agent: t\r\n\r\n"
	                 "HEAD /img/i3.png HTTP/1.1\r\nHost: h5.web.test\r\n\r\n"
	                 "GET /gone/x.html HTTP/1.1\r\nHost: h5.web.test\r\n\r\n"
	                 "GET http://h9.web.test:%d/r/3 HTTP/1.1\r\nHost: ignored\r\n\r\n"
	                 "GET / HTTP/1.1\r\nHost: nx1.web.test\r\nConnection: close\r\n\r\n",
	                 s.http_port, s.http_port);
	/* Send in small pieces to exercise partial parsing. */
	for (int k = 0; k < n; k += 7)
		send_all(fd, req + k, (size_t)(n - k < 7 ? n - k : 7));
	const struct {
		long host;
		const char *path;
		int status;
	} want[] = { { 1, "/", 200 },          { 5, "/s2/p2.html", 200 },
		     { 5, "/img/i3.png", -1 }, { 5, "/gone/x.html", 404 },
		     { 9, "/r/3", 301 },       { -1, "/", 404 } };
	for (size_t k = 0; k < 6; k++) {
		char hdrs[2048];
		if (want[k].status == -1) {
			/* HEAD: headers only, Content-Length of the real body. */
			buf[have] = '\0';
			while (strstr(buf, "\r\n\r\n") == NULL) {
				ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
				ck_assert_int_gt(r, 0);
				have += (size_t)r;
				buf[have] = '\0';
			}
			ck_assert_ptr_nonnull(strstr(buf, "Content-Type: image/png"));
			char *e = strstr(buf, "\r\n\r\n") + 4;
			memmove(buf, e, have - (size_t)(e - buf));
			have -= (size_t)(e - buf);
			continue;
		}
		int st = read_response(fd, buf, sizeof buf, &have, &bl, hdrs, sizeof hdrs);
		ck_assert_int_eq(st, want[k].status);
		if (want[k].host >= 0) {
			struct tw_resource r;
			ck_assert_int_eq(tw_resource_get(&cfg, want[k].host, want[k].path,
			                                 strlen(want[k].path), &r, NULL, 0, NULL),
			                 0);
			ck_assert_uint_eq(bl, r.body_len);
			if (st == 301)
				ck_assert_ptr_nonnull(
				        strstr(hdrs, "Location: http://h9.web.test:"));
			tw_resource_clear(&r);
		}
	}
	/* Connection: close honoured. */
	ck_assert_int_eq(recv(fd, buf, sizeof buf, 0), 0);
	close(fd);

	/* Oversized request: 431 then close. */
	fd = tcp_connect(0x7f000101, s.http_port);
	memset(buf, 'a', 40000);
	memcpy(buf, "GET / HTTP/1.1\r\nX-Big: ", 23);
	send(fd, buf, 40000, MSG_NOSIGNAL);
	have = 0;
	ck_assert_int_eq(read_response(fd, buf, sizeof buf, &have, &bl, NULL, 0), 431);
	close(fd);
	/* Half-close after two pipelined requests: both answered, then EOF. */
	fd = tcp_connect(0x7f000101, s.http_port);
	const char *two = "GET /robots.txt HTTP/1.1\r\nHost: h1.web.test\r\n\r\n"
	                  "GET /robots.txt HTTP/1.1\r\nHost: h2.web.test\r\n\r\n";
	send_all(fd, two, strlen(two));
	shutdown(fd, SHUT_WR);
	have = 0;
	ck_assert_int_eq(read_response(fd, buf, sizeof buf, &have, &bl, NULL, 0), 200);
	ck_assert_int_eq(read_response(fd, buf, sizeof buf, &have, &bl, NULL, 0), 200);
	ck_assert_uint_eq(have, 0);
	ck_assert_int_eq(recv(fd, buf, sizeof buf, 0), 0);
	close(fd);
	/* Garbage request line: 400. */
	fd = tcp_connect(0x7f000101, s.http_port);
	send_all(fd, "BLAH\r\n\r\n", 8);
	have = 0;
	ck_assert_int_eq(read_response(fd, buf, sizeof buf, &have, &bl, NULL, 0), 400);
	close(fd);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(connection_cap)
{
	struct srv s;
	const char *const args[] = { "--max-conns", "5",    "--dns-port", "-1",
		                     "--idle-ms",   "1500", NULL };
	srv_start(&s, args);
	int fds[10];
	for (int k = 0; k < 10; k++) {
		fds[k] = tcp_connect(0x7f000101, s.http_port);
		usleep(20000);
	}
	int served = 0, refused = 0;
	for (int k = 0; k < 10; k++) {
		char buf[65536];
		size_t have = 0, bl = 0;
		const char *req = "GET /robots.txt HTTP/1.1\r\nHost: h0.web.test\r\n\r\n";
		send(fds[k], req, strlen(req), MSG_NOSIGNAL);
		struct pollfd p = { .fd = fds[k], .events = POLLIN };
		ck_assert_int_eq(poll(&p, 1, 5000), 1);
		char c;
		ssize_t r = recv(fds[k], &c, 1, MSG_PEEK);
		if (r <= 0) {
			refused++;
		} else {
			ck_assert_int_eq(
			        read_response(fds[k], buf, sizeof buf, &have, &bl, NULL, 0), 200);
			served++;
		}
	}
	ck_assert_int_eq(served, 5);
	ck_assert_int_eq(refused, 5);
	for (int k = 0; k < 10; k++)
		close(fds[k]);
	/* Idle keep-alive connections are closed after --idle-ms. */
	usleep(100000);
	int fd = tcp_connect(0x7f000101, s.http_port);
	double t0 = now_s();
	char c;
	ck_assert_int_eq(recv(fd, &c, 1, 0), 0);
	double dt = now_s() - t0;
	ck_assert_msg(dt > 1.0 && dt < 5.0, "idle close after %.2f s", dt);
	close(fd);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

/* Random and truncated requests never crash the server (run under ASan in
 * CI); it keeps answering afterwards. */
START_TEST(http_garbage)
{
	struct srv s;
	const char *const args[] = { "--dns-port", "-1", "--max-request", "1024", NULL };
	srv_start(&s, args);
	static const char *const frags[] = { "GET ",
		                             "HEAD ",
		                             "POST ",
		                             "/",
		                             "http://",
		                             "h1.web.test",
		                             ":",
		                             "80",
		                             " HTTP/1.1",
		                             " HTTP/1.0",
		                             " HTTP/2",
		                             "\r\n",
		                             "\r\n\r\n",
		                             "Host: ",
		                             "Connection: close",
		                             "Content-Length: 5",
		                             "Transfer-Encoding: chunked",
		                             "\n",
		                             " ",
		                             "\t",
		                             "?q=1",
		                             "%00",
		                             "Accept-Encoding: gzip",
		                             "\xff\xfe",
		                             "H1.WEB.TEST",
		                             "/robots.txt",
		                             "/cal/2026/1/" };
	unsigned seed = 7;
	char req[4096], buf[65536];
	for (int k = 0; k < 300; k++) {
		size_t n = 0;
		int parts = 1 + rand_r(&seed) % 30;
		for (int p = 0; p < parts; p++) {
			const char *f = frags[rand_r(&seed) % (sizeof frags / sizeof *frags)];
			size_t fl = strlen(f);
			if (n + fl >= sizeof req)
				break;
			memcpy(req + n, f, fl);
			n += fl;
		}
		if (k % 5 == 0)
			for (size_t j = 0; j < n; j++)
				if (rand_r(&seed) % 10 == 0)
					req[j] = (char)rand_r(&seed);
		int fd = tcp_connect(0x7f000101 + (uint32_t)(k % 4), s.http_port);
		send(fd, req, n, MSG_NOSIGNAL);
		if (k % 2 == 0)
			shutdown(fd, SHUT_WR);
		struct timeval tv = { 0, 20000 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		while (recv(fd, buf, sizeof buf, 0) > 0)
			;
		close(fd);
	}
	int fd = tcp_connect(0x7f000101, s.http_port);
	const char *ok = "GET / HTTP/1.1\r\nHost: h0.web.test\r\n\r\n";
	send_all(fd, ok, strlen(ok));
	size_t have = 0, bl = 0;
	ck_assert_int_eq(read_response(fd, buf, sizeof buf, &have, &bl, NULL, 0), 200);
	close(fd);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

/* 1500 simultaneous keep-alive connections, two requests each. */
START_TEST(many_connections)
{
	enum { NC = 1500 };
	struct srv s;
	const char *const args[] = { "--dns-port", "-1", "--hosts", "30", NULL };
	srv_start(&s, args);
	static int fds[NC];
	static char buf[1 << 17];
	for (int k = 0; k < NC; k++)
		fds[k] = tcp_connect(0x7f000101 + (uint32_t)(k % 4), s.http_port);
	for (int round = 0; round < 2; round++) {
		for (int k = 0; k < NC; k++) {
			char req[128];
			int n = snprintf(req, sizeof req,
			                 "GET /img/i%d.png HTTP/1.1\r\nHost: h%d.web.test\r\n\r\n",
			                 k % 20, k % 30);
			send_all(fds[k], req, (size_t)n);
		}
		for (int k = 0; k < NC; k++) {
			size_t have = 0, bl = 0;
			ck_assert_int_eq(
			        read_response(fds[k], buf, sizeof buf, &have, &bl, NULL, 0), 200);
			ck_assert_uint_ge(bl, 1000);
		}
	}
	for (int k = 0; k < NC; k++)
		close(fds[k]);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

/* ---------- libcurl helpers ---------- */

struct sink {
	size_t bytes;
	size_t cap;     /* abort when bytes > cap (0 = never) */
	size_t first_n; /* stop after this many bytes (0 = never) */
	double t_start, t_first, t_n;
	char head[4096];
	size_t head_len;
	char hdrs[8192];
	size_t hdrs_len;
};

static size_t sink_write(char *p, size_t sz, size_t n, void *ud)
{
	struct sink *s = ud;
	size_t len = sz * n;
	if (s->bytes == 0)
		s->t_first = now_s();
	size_t room = sizeof s->head - 1 - s->head_len;
	size_t c = len < room ? len : room;
	memcpy(s->head + s->head_len, p, c);
	s->head_len += c;
	s->head[s->head_len] = '\0';
	s->bytes += len;
	if (s->first_n && s->bytes >= s->first_n) {
		s->t_n = now_s();
		return 0;
	}
	if (s->cap && s->bytes > s->cap)
		return 0;
	return len;
}

static size_t sink_header(char *p, size_t sz, size_t n, void *ud)
{
	struct sink *s = ud;
	size_t len = sz * n;
	size_t room = sizeof s->hdrs - 1 - s->hdrs_len;
	size_t c = len < room ? len : room;
	memcpy(s->hdrs + s->hdrs_len, p, c);
	s->hdrs_len += c;
	s->hdrs[s->hdrs_len] = '\0';
	return len;
}

/* GET http://h<host>.web.test:PORT<path> connecting to the host's address. */
static CURLcode fetch(const struct srv *srv, long host, const char *path, struct sink *s,
                      const char *enc, long *code, long timeout_ms)
{
	char url[256], conn[128];
	uint32_t ip = (127u << 24) | (1u << 8) | (uint32_t)(1 + host % 4);
	snprintf(url, sizeof url, "http://h%ld.web.test:%d%s", host, srv->http_port, path);
	snprintf(conn, sizeof conn, "h%ld.web.test:%d:127.0.1.%u:%d", host, srv->http_port,
	         ip & 255, srv->http_port);
	struct curl_slist *ct = curl_slist_append(NULL, conn);
	CURL *c = curl_easy_init();
	s->t_start = now_s();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CONNECT_TO, ct);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sink_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	if (enc != NULL)
		curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, enc);
	CURLcode rc = curl_easy_perform(c);
	*code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, code);
	curl_easy_cleanup(c);
	curl_slist_free_all(ct);
	return rc;
}

START_TEST(gzip_share)
{
	struct srv s;
	struct tw_config cfg;
	tw_config_defaults(&cfg);
	cfg.hosts = 20;
	srv_start(&s, fault_args);
	cfg.http_port = s.http_port;
	int gz_pages = 0;
	for (long j = 1; j < 20 && gz_pages < 3; j++) {
		char p[64];
		if (j % 10 == 7)
			snprintf(p, sizeof p, "/private/p%ld.html", j);
		else
			snprintf(p, sizeof p, "/s%ld/p%ld.html", j % 5, j);
		struct tw_resource r;
		ck_assert_int_eq(tw_resource_get(&cfg, 2, p, strlen(p), &r, NULL, 0, NULL), 0);
		if (!r.gzip_ok) {
			tw_resource_clear(&r);
			continue;
		}
		gz_pages++;
		struct sink sk = { 0 };
		long code;
		ck_assert_int_eq(fetch(&s, 2, p, &sk, "gzip", &code, 10000), CURLE_OK);
		ck_assert_int_eq(code, 200);
		ck_assert_ptr_nonnull(strcasestr(sk.hdrs, "Content-Encoding: gzip"));
		ck_assert_uint_eq(sk.bytes, r.body_len);
		ck_assert(memcmp(sk.head, r.body, sk.head_len) == 0);
		/* Without Accept-Encoding: identity. */
		struct sink si = { 0 };
		ck_assert_int_eq(fetch(&s, 2, p, &si, NULL, &code, 10000), CURLE_OK);
		ck_assert_ptr_null(strcasestr(si.hdrs, "Content-Encoding"));
		ck_assert_uint_eq(si.bytes, r.body_len);
		tw_resource_clear(&r);
	}
	ck_assert_int_gt(gz_pages, 0);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_slow)
{
	struct srv s;
	srv_start(&s, fault_args);
	struct sink sk = { .first_n = 3 };
	long code;
	CURLcode rc = fetch(&s, 11, "/s1/p1.html", &sk, NULL, &code, 20000);
	ck_assert_int_eq(rc, CURLE_WRITE_ERROR); /* we stopped after 3 bytes */
	ck_assert_int_eq(code, 200);
	ck_assert_ptr_nonnull(strcasestr(sk.hdrs, "Content-Length: 1000"));
	double dt = sk.t_n - sk.t_start;
	ck_assert_msg(dt >= 1.8 && dt < 10, "3 bytes took %.2f s", dt);
	/* robots.txt of a fault host is served normally. */
	struct sink r = { 0 };
	ck_assert_int_eq(fetch(&s, 11, "/robots.txt", &r, NULL, &code, 5000), CURLE_OK);
	ck_assert_int_eq(code, 200);
	ck_assert_ptr_nonnull(strstr(r.head, "Disallow:"));
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_endless)
{
	struct srv s;
	srv_start(&s, fault_args);
	struct sink sk = { .cap = 8u << 20 };
	long code;
	CURLcode rc = fetch(&s, 12, "/", &sk, NULL, &code, 30000);
	ck_assert_int_eq(rc, CURLE_WRITE_ERROR); /* hit our cap: never ended */
	ck_assert_int_eq(code, 200);
	ck_assert(sk.bytes > (8u << 20));
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_hugeheaders)
{
	struct srv s;
	srv_start(&s, fault_args);
	int fd = tcp_connect(0x7f000102, s.http_port); /* h13 -> 127.0.1.2 */
	const char *req = "GET / HTTP/1.1\r\nHost: h13.web.test\r\n\r\n";
	send_all(fd, req, strlen(req));
	size_t cap = 4u << 20, have = 0;
	char *buf = malloc(cap);
	char *end = NULL;
	while (end == NULL && have < cap - 1) {
		ssize_t r = recv(fd, buf + have, cap - 1 - have, 0);
		ck_assert_int_gt(r, 0);
		size_t from = have > 3 ? have - 3 : 0;
		have += (size_t)r;
		buf[have] = '\0';
		end = memmem(buf + from, have - from, "\r\n\r\n", 4);
	}
	ck_assert_ptr_nonnull(end);
	ck_assert_uint_ge((size_t)(end - buf), 1u << 20);
	ck_assert(strncmp(buf, "HTTP/1.1 200", 12) == 0);
	free(buf);
	close(fd);
	/* And curl refuses it. */
	struct sink sk = { 0 };
	long code;
	ck_assert_int_ne(fetch(&s, 13, "/", &sk, NULL, &code, 10000), CURLE_OK);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_gzipbomb)
{
	struct srv s;
	srv_start(&s, fault_args);
	struct sink sk = { .cap = 64u << 20 };
	long code;
	CURLcode rc = fetch(&s, 14, "/", &sk, "gzip", &code, 30000);
	ck_assert_int_eq(rc, CURLE_WRITE_ERROR); /* decoded past our 64 MiB cap */
	ck_assert(sk.bytes > (64u << 20));
	char *cl = strcasestr(sk.hdrs, "Content-Length:");
	ck_assert_ptr_nonnull(cl);
	unsigned long wire = strtoul(cl + 15, NULL, 10);
	ck_assert(wire < (4u << 20));
	ck_assert_ptr_nonnull(strcasestr(sk.hdrs, "Content-Encoding: gzip"));
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_badchunk)
{
	struct srv s;
	srv_start(&s, fault_args);
	struct sink sk = { 0 };
	long code;
	CURLcode rc = fetch(&s, 15, "/", &sk, NULL, &code, 10000);
	ck_assert_msg(rc == CURLE_RECV_ERROR, "curl said %s", curl_easy_strerror(rc));
	ck_assert_uint_eq(sk.bytes, 0);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_reset)
{
	struct srv s;
	srv_start(&s, fault_args);
	int fd = tcp_connect(0x7f000101, s.http_port); /* h16 -> 127.0.1.1 */
	const char *req = "GET /s1/p1.html HTTP/1.1\r\nHost: h16.web.test\r\n\r\n";
	send_all(fd, req, strlen(req));
	char buf[65536];
	size_t total = 0;
	ssize_t r;
	while ((r = recv(fd, buf, sizeof buf, 0)) > 0)
		total += (size_t)r;
	ck_assert_int_lt(r, 0);
	ck_assert_int_eq(errno, ECONNRESET);
	ck_assert(total > 1000 && total < 100000);
	close(fd);
	struct sink sk = { 0 };
	long code;
	CURLcode rc = fetch(&s, 16, "/", &sk, NULL, &code, 10000);
	ck_assert_msg(rc == CURLE_RECV_ERROR, "curl said %s", curl_easy_strerror(rc));
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_trap)
{
	struct srv s;
	srv_start(&s, fault_args);
	struct sink sk = { 0 };
	long code;
	ck_assert_int_eq(fetch(&s, 17, "/", &sk, NULL, &code, 10000), CURLE_OK);
	ck_assert_int_eq(code, 200);
	char path[128] = "/cal/2026/11/";
	long y = 2026, m = 11;
	for (int k = 0; k < 40; k++) {
		struct sink c = { 0 };
		ck_assert_int_eq(fetch(&s, 17, path, &c, NULL, &code, 10000), CURLE_OK);
		ck_assert_int_eq(code, 200);
		char *a = strstr(c.head, "<a href=\"/cal/");
		ck_assert_ptr_nonnull(a);
		long ny = 0, nm = 0;
		ck_assert_int_eq(sscanf(a, "<a href=\"/cal/%ld/%ld/\"", &ny, &nm), 2);
		ck_assert(ny * 12 + nm == y * 12 + m + 1);
		y = ny;
		m = nm;
		snprintf(path, sizeof path, "/cal/%ld/%ld/", y, m);
	}
	ck_assert_int_ge(y, 2029);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(fault_429)
{
	struct srv s;
	srv_start(&s, fault_args);
	struct sink sk = { 0 };
	long code;
	ck_assert_int_eq(fetch(&s, 18, "/s1/p1.html", &sk, NULL, &code, 10000), CURLE_OK);
	ck_assert_int_eq(code, 429);
	ck_assert_ptr_nonnull(strcasestr(sk.hdrs, "Retry-After: 30"));
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

START_TEST(log_after_sigterm)
{
	struct srv s;
	const char *const args[] = { "--hosts", "8", "--latency-ms", "30", NULL };
	srv_start(&s, args);
	struct sink a = { 0 }, b = { 0 }, c = { 0 };
	long code;
	double t0 = now_s();
	ck_assert_int_eq(fetch(&s, 3, "/", &a, NULL, &code, 5000), CURLE_OK);
	ck_assert(now_s() - t0 >= 0.025); /* latency applied */
	ck_assert_int_eq(fetch(&s, 6, "/gone/x1.html?a=b", &b, NULL, &code, 5000), CURLE_OK);
	ck_assert_int_eq(code, 404);
	ck_assert_int_eq(fetch(&s, 7, "/r2/4", &c, NULL, &code, 5000), CURLE_OK);
	srv_stop(&s);
	FILE *f = fopen(s.log, "r");
	ck_assert_ptr_nonnull(f);
	char line[1024];
	int n = 0;
	unsigned long long prev_t = 0;
	const char *want_host[] = { "h3.web.test", "h6.web.test", "h7.web.test" };
	const char *want_ip[] = { "127.0.1.4", "127.0.1.3", "127.0.1.4" };
	const char *want_path[] = { "/", "/gone/x1.html?a=b", "/r2/4" };
	const int want_status[] = { 200, 404, 302 };
	const size_t want_bytes[] = { a.bytes, b.bytes, c.bytes };
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long long t, id, bytes;
		char host[64], ip[32], method[16], path[256];
		int st;
		ck_assert_int_lt(n, 3);
		int tabs = 0;
		for (const char *p = line; *p; p++)
			tabs += *p == '\t';
		ck_assert_int_eq(tabs, 8); /* without --models: the 8 columns and cond */
		ck_assert_int_eq(
		        sscanf(line,
		               "%llu\t%llu\t%63[^\t]\t%31[^\t]\t%15[^\t]\t%255[^\t]\t%d\t%llu", &t,
		               &id, host, ip, method, path, &st, &bytes),
		        8);
		ck_assert(strcmp(strrchr(line, '\t'), "\t-\n") == 0);
		ck_assert(t >= prev_t && t > 1600000000000000ull);
		prev_t = t;
		ck_assert_str_eq(host, want_host[n]);
		ck_assert_str_eq(ip, want_ip[n]);
		ck_assert_str_eq(method, "GET");
		ck_assert_str_eq(path, want_path[n]);
		ck_assert_int_eq(st, want_status[n]);
		ck_assert_uint_eq(bytes, want_bytes[n]);
		n++;
	}
	fclose(f);
	ck_assert_int_eq(n, 3);
	srv_cleanup(&s);
}
END_TEST

/* ---------- validators and conditional requests ---------- */

/* GET path of host with one extra request header (or none); the status,
 * and the response's ETag into etag. */
static long conditional_get(const struct srv *s, long host, const char *path, const char *header,
                            char *etag, size_t cap)
{
	char url[256], conn[128];
	struct sink sk = { 0 };
	long code = 0;
	snprintf(url, sizeof url, "http://h%ld.web.test:%d%s", host, s->http_port, path);
	snprintf(conn, sizeof conn, "h%ld.web.test:%d:127.0.1.%ld:%d", host, s->http_port,
	         1 + host % 4, s->http_port);
	struct curl_slist *ct = curl_slist_append(NULL, conn);
	struct curl_slist *hs = header ? curl_slist_append(NULL, header) : NULL;
	CURL *c = curl_easy_init();
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CONNECT_TO, ct);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hs);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &sk);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, sink_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &sk);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	ck_assert_int_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	curl_slist_free_all(ct);
	curl_slist_free_all(hs);
	etag[0] = '\0';
	const char *e = strcasestr(sk.hdrs, "\nETag: ");
	if (e != NULL)
		sscanf(e + 7, "%63[^\r\n]", etag);
	(void)cap;
	if (code == 304)
		ck_assert_uint_eq(sk.bytes, 0);
	return code;
}

START_TEST(conditional_requests)
{
	struct srv s;
	const char *const e0[] = { "--hosts", "4", "--pages", "30", NULL };
	const char *const e1[] = { "--hosts", "4", "--pages", "30", "--epoch", "1", NULL };
	char etag0[64], etag1[64], etag[64], hdr[128];
	struct tw_config cfg;
	tw_config_defaults(&cfg);
	/* a page that changes at step 1, one that does not */
	long changed = -1, same = -1;
	for (long j = 1; j < 30 && (changed < 0 || same < 0); j++) {
		if (j % 10 == 7)
			continue;
		if (tw_page_version(&cfg, 1, j, 1) == 1)
			changed = changed < 0 ? j : changed;
		else
			same = same < 0 ? j : same;
	}
	ck_assert(changed > 0 && same > 0);
	char pc[64], ps[64];
	snprintf(pc, sizeof pc, "/s%ld/p%ld.html", changed % 5, changed);
	snprintf(ps, sizeof ps, "/s%ld/p%ld.html", same % 5, same);

	srv_start(&s, e0);
	ck_assert_int_eq(conditional_get(&s, 1, pc, NULL, etag0, sizeof etag0), 200);
	ck_assert(strncmp(etag0, "W/\"", 3) == 0);
	/* the same tag, a tag among others, "*": 304; another tag: 200 */
	snprintf(hdr, sizeof hdr, "If-None-Match: %s", etag0);
	ck_assert_int_eq(conditional_get(&s, 1, pc, hdr, etag, sizeof etag), 304);
	ck_assert_str_eq(etag, etag0);
	snprintf(hdr, sizeof hdr, "If-None-Match: \"x\", %s", etag0 + 2);
	ck_assert_int_eq(conditional_get(&s, 1, pc, hdr, etag, sizeof etag), 304);
	ck_assert_int_eq(conditional_get(&s, 1, pc, "If-None-Match: *", etag, sizeof etag), 304);
	ck_assert_int_eq(conditional_get(&s, 1, pc, "If-None-Match: W/\"nope\"", etag, sizeof etag),
	                 200);
	/* Last-Modified of version 0: 2024-01-01 */
	ck_assert_int_eq(conditional_get(&s, 1, pc,
	                                 "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT", etag,
	                                 sizeof etag),
	                 304);
	ck_assert_int_eq(conditional_get(&s, 1, pc,
	                                 "If-Modified-Since: Sun, 31 Dec 2023 23:59:59 GMT", etag,
	                                 sizeof etag),
	                 200);
	ck_assert_int_eq(
	        conditional_get(&s, 1, pc, "If-Modified-Since: yesterday", etag, sizeof etag), 200);
	/* a 404 has no validators */
	ck_assert_int_eq(
	        conditional_get(&s, 1, "/gone/x1.html", "If-None-Match: *", etag, sizeof etag),
	        404);
	ck_assert_str_eq(etag, "");
	srv_stop(&s);
	FILE *f = fopen(s.log, "r");
	char line[1024];
	int n = 0, inm = 0, ims = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		n++;
		inm += strstr(line, "\tinm\n") != NULL;
		ims += strstr(line, "\tims\n") != NULL;
	}
	fclose(f);
	ck_assert_int_eq(n, 9);
	ck_assert_int_eq(inm, 5);
	ck_assert_int_eq(ims, 3);
	srv_cleanup(&s);

	/* at epoch 1 the changed page has a new tag and date, the other not */
	srv_start(&s, e1);
	snprintf(hdr, sizeof hdr, "If-None-Match: %s", etag0);
	ck_assert_int_eq(conditional_get(&s, 1, pc, hdr, etag1, sizeof etag1), 200);
	ck_assert_str_ne(etag1, etag0);
	ck_assert_int_eq(conditional_get(&s, 1, pc,
	                                 "If-Modified-Since: Mon, 01 Jan 2024 00:00:00 GMT", etag,
	                                 sizeof etag),
	                 200);
	ck_assert_int_eq(conditional_get(&s, 1, pc,
	                                 "If-Modified-Since: Tue, 02 Jan 2024 00:00:00 GMT", etag,
	                                 sizeof etag),
	                 304);
	ck_assert_int_eq(conditional_get(&s, 1, ps, NULL, etag, sizeof etag), 200);
	snprintf(hdr, sizeof hdr, "If-None-Match: %s", etag);
	ck_assert_int_eq(conditional_get(&s, 1, ps, hdr, etag1, sizeof etag1), 304);
	srv_stop(&s);
	srv_cleanup(&s);
}
END_TEST

/* ---------- server models (--models, --model) ---------- */

/* Writes text to a fresh file under /tmp; path receives its name. */
static void models_file(char *path, size_t cap, const char *text)
{
	snprintf(path, cap, "/tmp/testweb_models_XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Starts a server of 8 hosts without DNS whose models are text; the
 * models file is named in mf (removed by model_srv_end). */
static void model_srv_start(struct srv *s, char *mf, size_t cap, const char *text)
{
	models_file(mf, cap, text);
	const char *const args[] = { "--hosts", "8", "--dns-port", "-1", "--models", mf, NULL };
	srv_start(s, args);
}

static void model_srv_end(struct srv *s, const char *mf)
{
	unlink(mf);
	srv_cleanup(s);
}

/* One request-log line with the three model columns. */
struct logrow {
	char host[64];
	char path[256];
	int status;
	unsigned long long bytes;
	long in_flight; /* -1 for '-' */
	long rate_1s;
	unsigned long long service_us;
};

/* Reads the log (11 columns and cond a line); returns the rows of host, in
 * order. */
static int log_rows(const char *log, const char *host, struct logrow *rows, int max)
{
	FILE *f = fopen(log, "r");
	ck_assert_ptr_nonnull(f);
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		struct logrow r;
		char inf[16], rate[16];
		int tabs = 0;
		for (const char *p = line; *p; p++)
			tabs += *p == '\t';
		ck_assert_msg(tabs == 11, "log line with %d columns: %s", tabs + 1, line);
		ck_assert_int_eq(
		        sscanf(line,
		               "%*u\t%*u\t%63[^\t]\t%*[^\t]\t%*[^\t]\t%255[^\t]\t%d\t%llu\t"
		               "%15[^\t]\t%15[^\t]\t%llu",
		               r.host, r.path, &r.status, &r.bytes, inf, rate, &r.service_us),
		        7);
		r.in_flight = strcmp(inf, "-") == 0 ? -1 : atol(inf);
		r.rate_1s = strcmp(rate, "-") == 0 ? -1 : atol(rate);
		if (strcmp(r.host, host) == 0 && n < max)
			rows[n++] = r;
	}
	fclose(f);
	return n;
}

/* GET path of hI.web.test on fd (keep-alive); returns the seconds from
 * sending to the last byte; *status set. */
static double timed_get(int fd, long host, const char *path, int *status)
{
	char req[256];
	size_t cap = 256u << 10, have = 0, bl = 0;
	char *buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: h%ld.web.test\r\n\r\n", path, host);
	double t0 = now_s();
	send_all(fd, req, strlen(req));
	*status = read_response(fd, buf, cap, &have, &bl, NULL, 0);
	double dt = now_s() - t0;
	free(buf);
	return dt;
}

/* A 50 ms host answers in 50 ms and more, as the client's clock and the
 * log's service time both say; an unmodelled host is logged with its
 * counts too. */
START_TEST(model_latency)
{
	char mf[64];
	struct srv s;
	model_srv_start(&s, mf, sizeof mf, "# a 50 ms host\nh0 latency fixed 50ms\n");
	int fd = tcp_connect(0x7f000101, s.http_port); /* h0 and h4 */
	int st = 0;
	double dt[3];
	for (int k = 0; k < 3; k++) {
		dt[k] = timed_get(fd, 0, "/robots.txt", &st);
		ck_assert_int_eq(st, 200);
		ck_assert_msg(dt[k] >= 0.050 && dt[k] < 2.0, "h0 answered in %.4f s", dt[k]);
	}
	(void)timed_get(fd, 4, "/robots.txt", &st);
	ck_assert_int_eq(st, 200);
	close(fd);
	srv_stop(&s);
	struct logrow r[4];
	ck_assert_int_eq(log_rows(s.log, "h0.web.test", r, 4), 3);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(r[k].status, 200);
		ck_assert_int_eq(r[k].in_flight, 0);
		ck_assert(r[k].rate_1s >= 1 && r[k].rate_1s <= k + 1);
		ck_assert_msg(r[k].service_us >= 50000 && r[k].service_us < 2000000,
		              "service %llu us", r[k].service_us);
		/* The server's write callback may run after the client read. */
		ck_assert(r[k].service_us <= (unsigned long long)(dt[k] * 1e6) + 100000);
	}
	ck_assert_int_eq(r[0].rate_1s, 1);
	/* The unmodelled host is counted too. */
	ck_assert_int_eq(log_rows(s.log, "h4.web.test", r, 4), 1);
	ck_assert_int_eq(r[0].in_flight, 0);
	ck_assert_int_eq(r[0].rate_1s, 1);
	model_srv_end(&s, mf);
}
END_TEST

/* Sends GET / for host on n fresh connections at once; counts statuses. */
static void concurrent_gets(const struct srv *s, long host, int n, int *fds)
{
	uint32_t ip = (127u << 24) | (1u << 8) | (uint32_t)(1 + host % 4);
	char req[128];
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: h%ld.web.test\r\n\r\n", host);
	for (int k = 0; k < n; k++)
		fds[k] = tcp_connect(ip, s->http_port);
	for (int k = 0; k < n; k++)
		send_all(fds[k], req, strlen(req));
}

/* Reads the n responses; counts 200s and refusals carrying want_retry. */
static void count_answers(int *fds, int n, int refusal, const char *want_retry, int *ok,
                          int *refused)
{
	size_t cap = 256u << 10;
	char *buf = malloc(cap);
	char hdrs[2048];
	ck_assert_ptr_nonnull(buf);
	*ok = *refused = 0;
	for (int k = 0; k < n; k++) {
		size_t have = 0, bl = 0;
		int st = read_response(fds[k], buf, cap, &have, &bl, hdrs, sizeof hdrs);
		if (st == 200) {
			(*ok)++;
		} else {
			ck_assert_int_eq(st, refusal);
			ck_assert_msg(strcasestr(hdrs, want_retry) != NULL, "%s", hdrs);
			(*refused)++;
		}
		close(fds[k]);
	}
	free(buf);
}

/* Capacity 2 and five concurrent requests: exactly three 429s with the
 * configured Retry-After, sent at once; capacity 1 with 503 likewise. */
START_TEST(model_capacity)
{
	char mf[64];
	struct srv s;
	model_srv_start(&s, mf, sizeof mf,
	                "h1 capacity 2 retry-after 7 latency fixed 1s\n"
	                "h2 capacity 1 over 503 retry-after 3\n"
	                "h2 latency fixed 1s\n");
	int f1[5], f2[3], ok = 0, refused = 0;
	concurrent_gets(&s, 1, 5, f1);
	concurrent_gets(&s, 2, 3, f2);
	count_answers(f1, 5, 429, "Retry-After: 7\r\n", &ok, &refused);
	ck_assert_int_eq(ok, 2);
	ck_assert_int_eq(refused, 3);
	count_answers(f2, 3, 503, "Retry-After: 3\r\n", &ok, &refused);
	ck_assert_int_eq(ok, 1);
	ck_assert_int_eq(refused, 2);
	srv_stop(&s);
	struct logrow r[8];
	ck_assert_int_eq(log_rows(s.log, "h1.web.test", r, 8), 5);
	int seen429 = 0, admitted_flight = 0;
	for (int k = 0; k < 5; k++) {
		if (r[k].status == 429) {
			seen429++;
			ck_assert_int_eq(r[k].in_flight, 2);
			ck_assert_msg(r[k].service_us < 500000, "429 after %llu us",
			              r[k].service_us);
		} else {
			ck_assert_int_eq(r[k].status, 200);
			ck_assert(r[k].service_us >= 1000000);
			admitted_flight += (int)r[k].in_flight;
		}
		ck_assert(r[k].rate_1s >= 1 && r[k].rate_1s <= 5);
	}
	ck_assert_int_eq(seen429, 3);
	ck_assert_int_eq(admitted_flight, 0 + 1);
	ck_assert_int_eq(log_rows(s.log, "h2.web.test", r, 8), 3);
	model_srv_end(&s, mf);
}
END_TEST

/* A 50 KB/s host delivers a page of >= 40 KB no faster than its rate,
 * and paced (the first bytes come early, not all at the end). */
START_TEST(model_bandwidth)
{
	char mf[64];
	struct srv s;
	model_srv_start(&s, mf, sizeof mf, "h3 bandwidth 50KB/s\n");
	struct tw_config cfg;
	tw_config_defaults(&cfg);
	cfg.hosts = 8;
	cfg.http_port = s.http_port; /* pages embed the port */
	char page[64] = "";
	size_t body = 0;
	for (long j = 1; j < cfg.pages && body < 40000; j++) {
		struct tw_resource res;
		if (j % 10 == 7)
			snprintf(page, sizeof page, "/private/p%ld.html", j);
		else
			snprintf(page, sizeof page, "/s%ld/p%ld.html", j % 5, j);
		ck_assert_int_eq(tw_resource_get(&cfg, 3, page, strlen(page), &res, NULL, 0, NULL),
		                 0);
		body = res.status == 200 ? res.body_len : 0;
		tw_resource_clear(&res);
	}
	ck_assert_uint_ge(body, 40000);
	struct sink sk = { 0 };
	long code;
	ck_assert_int_eq(fetch(&s, 3, page, &sk, NULL, &code, 20000), CURLE_OK);
	double dt = now_s() - sk.t_start, min = (double)body / 50000.0;
	ck_assert_int_eq(code, 200);
	ck_assert_uint_eq(sk.bytes, body);
	ck_assert_msg(dt >= min && dt < min + 3.0, "%zu bytes in %.3f s", body, dt);
	ck_assert_msg(sk.t_first - sk.t_start < dt * 0.6, "first bytes after %.3f of %.3f s",
	              sk.t_first - sk.t_start, dt);
	srv_stop(&s);
	struct logrow r[2];
	ck_assert_int_eq(log_rows(s.log, "h3.web.test", r, 2), 1);
	ck_assert_uint_eq(r[0].bytes, body);
	ck_assert(r[0].service_us >= (unsigned long long)(min * 1e6));
	model_srv_end(&s, mf);
}
END_TEST

/* 'after 1s latency ...': the host's latency changes 1 s after its first
 * request, in what the client sees and in the log (the phases are far
 * apart so that a loaded machine cannot blur them). */
START_TEST(model_latency_change)
{
	char mf[64];
	struct srv s;
	model_srv_start(&s, mf, sizeof mf,
	                "h5 latency fixed 20ms\nh5 after 1s latency fixed 600ms\n");
	int fd = tcp_connect(0x7f000102, s.http_port); /* h5 */
	int st = 0;
	double t0 = now_s();
	double before = timed_get(fd, 5, "/robots.txt", &st);
	ck_assert_msg(before >= 0.020 && before < 0.600, "before: %.4f s", before);
	double wait = t0 + 1.5 - now_s();
	if (wait > 0)
		usleep((useconds_t)(wait * 1e6));
	double after = timed_get(fd, 5, "/robots.txt", &st);
	ck_assert_msg(after >= 0.600 && after < 3.0, "after: %.4f s", after);
	close(fd);
	srv_stop(&s);
	struct logrow r[3];
	ck_assert_int_eq(log_rows(s.log, "h5.web.test", r, 3), 2);
	ck_assert(r[0].service_us >= 20000 && r[0].service_us < 600000);
	ck_assert(r[1].service_us >= 600000);
	model_srv_end(&s, mf);
}
END_TEST

/* Runs testweb with args (a shell word list); returns its exit status and
 * its stderr in out. */
static int run_testweb(const char *args, char *out, size_t cap)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "'%s' %s 2>&1 >/dev/null", testweb_bin, args);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = '\0';
	int st = pclose(p);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/* A bad models file or --model line stops testweb with its line number. */
START_TEST(model_errors)
{
	char mf[64], args[256], out[1024], want[128];
	models_file(mf, sizeof mf, "* latency fixed 10ms\n\nh2 capacity two\n");
	snprintf(args, sizeof args, "--hosts 8 --models %s", mf);
	ck_assert_int_eq(run_testweb(args, out, sizeof out), 2);
	snprintf(want, sizeof want, "testweb: models: %s:3: bad capacity 'two'", mf);
	ck_assert_msg(strstr(out, want) == out, "%s", out);
	ck_assert_int_eq(run_testweb("--hosts 8 --model 'h1 latency fixed 1ms' --model 'h9 "
	                             "capacity 1'",
	                             out, sizeof out),
	                 2);
	ck_assert_msg(strstr(out, "testweb: models: --model:2: host h9 beyond --hosts 8") == out,
	              "%s", out);
	unlink(mf);
}
END_TEST

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_testweb_net PATH/TO/testweb\n");
		return 2;
	}
	testweb_bin = argv[1];
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ares_library_init(ARES_LIB_INIT_ALL);
	Suite *s = suite_create("testweb_net");
	TCase *tc = tcase_create("net");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, dns_answers);
	tcase_add_test(tc, dns_malformed);
	tcase_add_test(tc, http_keepalive_pipelining);
	tcase_add_test(tc, connection_cap);
	tcase_add_test(tc, many_connections);
	tcase_add_test(tc, http_garbage);
	tcase_add_test(tc, gzip_share);
	tcase_add_test(tc, fault_slow);
	tcase_add_test(tc, fault_endless);
	tcase_add_test(tc, fault_hugeheaders);
	tcase_add_test(tc, fault_gzipbomb);
	tcase_add_test(tc, fault_badchunk);
	tcase_add_test(tc, fault_reset);
	tcase_add_test(tc, fault_trap);
	tcase_add_test(tc, fault_429);
	tcase_add_test(tc, log_after_sigterm);
	tcase_add_test(tc, conditional_requests);
	suite_add_tcase(s, tc);
	/* The server models: its own ctest (CK_RUN_CASE=models), run in parallel. */
	TCase *tm = tcase_create("models");
	tcase_set_timeout(tm, 60);
	tcase_add_test(tm, model_latency);
	tcase_add_test(tm, model_capacity);
	tcase_add_test(tm, model_bandwidth);
	tcase_add_test(tm, model_latency_change);
	tcase_add_test(tm, model_errors);
	suite_add_tcase(s, tm);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	ares_library_cleanup();
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
