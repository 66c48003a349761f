/* test_fetch.c: the fetch engine against an in-test loopback server. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "crawler/net/decode.h"
#include "crawler/net/fetch.h"
#include "crawler/store/warc.h"
#include "test_server.h"

#ifndef WARC_CHECK_SCRIPT
#error "WARC_CHECK_SCRIPT must be defined"
#endif

static struct test_server *server;

struct collect {
	struct fetch_result **res;
	size_t n, cap;
};

static void on_done(void *ctx, struct fetch_result *r)
{
	struct collect *c = ctx;
	ck_assert_uint_lt(c->n, c->cap);
	c->res[c->n++] = r;
}

/* Fetches paths[i] (ip 127.0.0.1) and returns the results in c. */
static void run_fetches(const struct fetch_config *cfg, const char *const *paths, size_t n,
                        const char *host, struct collect *c)
{
	uv_loop_t loop;
	struct fetch_engine *e = NULL;
	char url[256];
	uv_loop_init(&loop);
	c->res = calloc(n, sizeof(*c->res));
	c->cap = n;
	c->n = 0;
	ck_assert_int_eq(fetch_engine_create(&loop, cfg, on_done, c, &e), FETCH_OK);
	for (size_t i = 0; i < n; i++) {
		snprintf(url, sizeof(url), "http://%s:%d%s", host, test_server_port(server),
		         paths[i]);
		struct fetch_request req = { .url = url,
			                     .ip = "127.0.0.1",
			                     .user = (void *)(uintptr_t)i };
		ck_assert_int_eq(fetch_engine_start(e, &req), FETCH_OK);
	}
	ck_assert_uint_eq(fetch_engine_in_flight(e), n);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_uint_eq(c->n, n);
	ck_assert_uint_eq(fetch_engine_in_flight(e), 0);
	fetch_engine_destroy(e);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}

static void free_collect(struct collect *c)
{
	for (size_t i = 0; i < c->n; i++)
		fetch_result_free(c->res[i]);
	free(c->res);
}

static struct fetch_result *by_user(struct collect *c, size_t i)
{
	for (size_t k = 0; k < c->n; k++)
		if ((uintptr_t)c->res[k]->user == i)
			return c->res[k];
	return NULL;
}

static void setup(void)
{
	server = test_server_start();
	ck_assert_ptr_nonnull(server);
}
static void teardown(void)
{
	test_server_stop(server);
	server = NULL;
}

START_TEST(concurrent_pages)
{
	/* 600 transfers at once, through a name curl could not resolve: the
	 * pinned address must be used. */
	size_t n = 600;
	struct fetch_config cfg = { .allow_private_networks = true,
		                    .max_connections = 1000,
		                    .user_agent = "testbot/1.0" };
	char **paths = calloc(n, sizeof(*paths));
	for (size_t i = 0; i < n; i++) {
		paths[i] = malloc(32);
		snprintf(paths[i], 32, "/page/%zu", i);
	}
	struct collect c;
	run_fetches(&cfg, (const char *const *)paths, n, "no-such-host.invalid", &c);
	for (size_t i = 0; i < n; i++) {
		struct fetch_result *r = by_user(&c, i);
		char expect[64];
		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(r->error, FETCH_OK);
		ck_assert_int_eq(r->status, 200);
		snprintf(expect, sizeof(expect), "page %zu\n", i);
		ck_assert_uint_eq(r->body.len, strlen(expect) * 10);
		ck_assert(memcmp(r->body.data, expect, strlen(expect)) == 0);
		ck_assert_str_eq(r->content_type, "text/html");
		ck_assert_str_eq(r->ip, "127.0.0.1");
		ck_assert(!r->truncated);
		ck_assert_ptr_nonnull(r->request_headers.data);
		ck_assert(memmem(r->request_headers.data, r->request_headers.len,
		                 "User-Agent: testbot/1.0", 23) != NULL);
		ck_assert(memmem(r->request_headers.data, r->request_headers.len,
		                 "Accept-Encoding: gzip, deflate, br", 34) != NULL);
		ck_assert(r->response_headers.len > 12 &&
		          memcmp(r->response_headers.data, "HTTP/1.1 200", 12) == 0);
		ck_assert(r->end_unix_ms >= r->start_unix_ms);
		free(paths[i]);
	}
	free(paths);
	free_collect(&c);
	ck_assert_int_eq(test_server_requests(server), (long)n);
}
END_TEST

START_TEST(keepalive_reuse)
{
	/* Sequential-ish fetches share connections: fewer connects than fetches. */
	struct fetch_config cfg = { .allow_private_networks = true, .max_host_connections = 2 };
	const char *paths[20];
	for (int i = 0; i < 20; i++)
		paths[i] = "/page/7";
	struct collect c;
	run_fetches(&cfg, paths, 20, "a.test", &c);
	for (size_t i = 0; i < c.n; i++)
		ck_assert_int_eq(c.res[i]->status, 200);
	free_collect(&c);
	ck_assert_int_le(test_server_connections(server), 2);
}
END_TEST

START_TEST(limits_and_redirects)
{
	struct fetch_config cfg = { .allow_private_networks = true,
		                    .max_body_bytes = 65536,
		                    .max_header_bytes = 16384 };
	const char *paths[] = { "/big", "/hugeheaders", "/redirect", "/retry", "/missing" };
	struct collect c;
	run_fetches(&cfg, paths, 5, "b.test", &c);
	struct fetch_result *big = by_user(&c, 0), *hh = by_user(&c, 1), *rd = by_user(&c, 2),
	                    *rt = by_user(&c, 3), *nf = by_user(&c, 4);
	ck_assert_int_eq(big->error, FETCH_OK);
	ck_assert(big->truncated);
	ck_assert_uint_eq(big->body.len, 65536);
	ck_assert_int_eq(hh->error, FETCH_ERR_HEADER_TOO_LARGE);
	ck_assert_str_eq(fetch_strerror(hh->error), "header-too-large");
	ck_assert_int_eq(rd->error, FETCH_OK);
	ck_assert_int_eq(rd->status, 302);
	ck_assert_str_eq(rd->location, "/page/1");
	ck_assert_int_eq(rt->status, 503);
	ck_assert_int_eq(rt->retry_after_s, 7);
	ck_assert_int_eq(nf->status, 404);
	ck_assert_int_eq(nf->retry_after_s, -1);
	free_collect(&c);
	/* The redirect target was not fetched: 5 requests, not 6. */
	ck_assert_int_eq(test_server_requests(server), 5);
}
END_TEST

START_TEST(compressed_bodies)
{
	struct fetch_config cfg = { .allow_private_networks = true, .max_body_bytes = 1u << 20 };
	const char *paths[] = { "/gzip", "/deflate", "/bomb" };
	struct collect c;
	run_fetches(&cfg, paths, 3, "c.test", &c);
	for (size_t i = 0; i < 2; i++) {
		struct fetch_result *r = by_user(&c, i);
		struct decode_output out;
		ck_assert_int_eq(r->error, FETCH_OK);
		ck_assert_ptr_nonnull(r->content_encoding);
		/* Kept as received: not the plain text. */
		ck_assert(r->body.len != strlen(test_server_text) ||
		          memcmp(r->body.data, test_server_text, r->body.len) != 0);
		ck_assert_int_eq(
		        decode_body(r->content_encoding, r->body.data, r->body.len, 0, &out),
		        DECODE_OK);
		ck_assert_uint_eq(out.len, strlen(test_server_text));
		ck_assert(memcmp(out.data, test_server_text, out.len) == 0);
		ck_assert(!out.truncated);
		free(out.data);
	}
	struct fetch_result *b = by_user(&c, 2);
	struct decode_output out;
	ck_assert_int_eq(b->error, FETCH_OK);
	ck_assert(!b->truncated); /* ~64 KiB on the wire */
	ck_assert_int_eq(decode_body("gzip", b->body.data, b->body.len, 1u << 20, &out), DECODE_OK);
	ck_assert(out.truncated);
	ck_assert_uint_eq(out.len, 1u << 20);
	free(out.data);
	free_collect(&c);
}
END_TEST

/* Hostile answers get their own reasons: a header line longer than curl's
 * own per-line cap is header-too-large (curl 7.x calls it out of memory),
 * whatever max_header_bytes says; two Content-Encoding lines are one list
 * in order (gzip applied first, then deflate), so decoding gives the text
 * back; a status outside every class is reported as it came. */
START_TEST(hostile_headers)
{
	size_t caps[] = { 16384, 100u << 20 };
	for (size_t k = 0; k < 2; k++) {
		struct fetch_config cfg = { .allow_private_networks = true,
			                    .max_header_bytes = caps[k] };
		const char *paths[] = { "/hugeline", "/two-encodings", "/status999" };
		struct collect c;
		run_fetches(&cfg, paths, 3, "h.test", &c);
		struct fetch_result *hl = by_user(&c, 0), *ce = by_user(&c, 1),
		                    *st = by_user(&c, 2);
		ck_assert_str_eq(fetch_strerror(hl->error), "header-too-large");
		ck_assert_int_eq(ce->error, FETCH_OK);
		ck_assert_str_eq(ce->content_encoding, "gzip, deflate");
		struct decode_output out;
		ck_assert_int_eq(
		        decode_body(ce->content_encoding, ce->body.data, ce->body.len, 0, &out),
		        DECODE_OK);
		ck_assert_uint_eq(out.len, strlen(test_server_text));
		ck_assert(memcmp(out.data, test_server_text, out.len) == 0);
		free(out.data);
		ck_assert_int_eq(st->error, FETCH_OK);
		ck_assert_int_eq(st->status, 999);
		free_collect(&c);
	}
}
END_TEST

static int closed_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001) };
	socklen_t len = sizeof(a);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &len);
	close(fd);
	return ntohs(a.sin_port);
}

/* The header the server receives: gzip, deflate, br by default; none at all
 * with no_accept_encoding (and the request as sent agrees). */
START_TEST(accept_encoding_on_and_off)
{
	static const struct {
		bool off;
		const char *received;
	} cases[] = { { false, "gzip, deflate, br" }, { true, "(none)" } };
	for (size_t i = 0; i < 2; i++) {
		struct fetch_config cfg = { .allow_private_networks = true,
			                    .no_accept_encoding = cases[i].off };
		const char *paths[] = { "/accept-encoding" };
		struct collect c;
		run_fetches(&cfg, paths, 1, "a.test", &c);
		struct fetch_result *r = c.res[0];
		ck_assert_int_eq(r->error, FETCH_OK);
		ck_assert_int_eq(r->status, 200);
		ck_assert_uint_eq(r->body.len, strlen(cases[i].received));
		ck_assert(memcmp(r->body.data, cases[i].received, r->body.len) == 0);
		ck_assert_int_eq(memmem(r->request_headers.data, r->request_headers.len,
		                        "Accept-Encoding", 15) == NULL,
		                 cases[i].off);
		free_collect(&c);
	}
}
END_TEST

START_TEST(errors)
{
	uv_loop_t loop;
	struct fetch_engine *e = NULL;
	struct collect c = { .res = calloc(4, sizeof(struct fetch_result *)), .cap = 4 };
	char url[128];
	struct fetch_config cfg = { .allow_private_networks = true,
		                    .total_timeout_ms = 700,
		                    .connect_timeout_ms = 500 };
	uv_loop_init(&loop);
	ck_assert_int_eq(fetch_engine_create(&loop, &cfg, on_done, &c, &e), FETCH_OK);
	snprintf(url, sizeof(url), "http://d.test:%d/", closed_port());
	struct fetch_request r1 = { .url = url, .ip = "127.0.0.1", .user = (void *)1 };
	ck_assert_int_eq(fetch_engine_start(e, &r1), FETCH_OK);
	snprintf(url, sizeof(url), "http://d.test:%d/slow", test_server_port(server));
	struct fetch_request r2 = { .url = url, .ip = "127.0.0.1", .user = (void *)2 };
	ck_assert_int_eq(fetch_engine_start(e, &r2), FETCH_OK);
	/* Refused synchronously, done never called. */
	struct fetch_request bad1 = { .url = "ftp://x.test/", .ip = "127.0.0.1" };
	ck_assert_int_eq(fetch_engine_start(e, &bad1), FETCH_ERR_PROTOCOL);
	struct fetch_request bad2 = { .url = "http://x.test/", .ip = "not-an-ip" };
	ck_assert_int_eq(fetch_engine_start(e, &bad2), FETCH_ERR_INVALID);
	struct fetch_request bad3 = { .url = "http://x.test/", .ip = "[::1]" };
	ck_assert_int_eq(fetch_engine_start(e, &bad3), FETCH_ERR_INVALID);
	/* An IPv6 address, and an IPv6 literal URL: refused by ::1 too. */
	snprintf(url, sizeof(url), "http://[::1]:%d/", closed_port());
	struct fetch_request r3 = { .url = url, .ip = "::1", .user = (void *)3 };
	ck_assert_int_eq(fetch_engine_start(e, &r3), FETCH_OK);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_uint_eq(c.n, 3);
	struct fetch_result *conn = by_user(&c, 1), *slow = by_user(&c, 2);
	ck_assert_int_eq(conn->error, FETCH_ERR_CONNECT);
	ck_assert_str_ne(conn->error_detail, "");
	/* Nothing went out: what the crawl's family fallback looks for. */
	ck_assert_uint_eq(conn->request_headers.len, 0);
	ck_assert_uint_gt(slow->request_headers.len, 0);
	ck_assert_int_eq(by_user(&c, 3)->error, FETCH_ERR_CONNECT);
	ck_assert_uint_eq(by_user(&c, 3)->request_headers.len, 0);
	ck_assert_int_eq(slow->error, FETCH_ERR_TIMEOUT);
	ck_assert_int_eq(slow->status, 200);
	ck_assert_uint_ge(slow->total_ms, 600);
	fetch_engine_destroy(e);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	free_collect(&c);
}
END_TEST

START_TEST(private_refused)
{
	uv_loop_t loop;
	struct fetch_engine *e = NULL;
	struct collect c = { .res = calloc(4, sizeof(struct fetch_result *)), .cap = 4 };
	char url[128];
	struct fetch_config cfg = { 0 };
	uv_loop_init(&loop);
	ck_assert_int_eq(fetch_engine_create(&loop, &cfg, on_done, &c, &e), FETCH_OK);
	snprintf(url, sizeof(url), "http://e.test:%d/page/1", test_server_port(server));
	const char *ips[] = { "127.0.0.1",   "10.1.2.3",   "192.168.0.1", "172.20.0.1",
		              "169.254.1.1", "100.64.0.1", "0.0.0.0",     "224.0.0.1" };
	for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++) {
		struct fetch_request r = { .url = url, .ip = ips[i] };
		ck_assert_int_eq(fetch_engine_start(e, &r), FETCH_ERR_PRIVATE_ADDR);
	}
	ck_assert_uint_eq(fetch_engine_in_flight(e), 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_uint_eq(c.n, 0);
	ck_assert_int_eq(test_server_requests(server), 0);
	fetch_engine_destroy(e);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	free_collect(&c);
	ck_assert(fetch_addr_is_private("::1"));
	ck_assert(fetch_addr_is_private("fc00::1"));
	ck_assert(fetch_addr_is_private("fe80::1"));
	ck_assert(fetch_addr_is_private("::ffff:10.0.0.1"));
	ck_assert(fetch_addr_is_private("garbage"));
	ck_assert(!fetch_addr_is_private("93.184.216.34"));
	ck_assert(!fetch_addr_is_private("2606:2800:220:1::1"));
	ck_assert(!fetch_addr_is_private("172.32.0.1"));
	/* The IPv6 table: refused blocks, and forms carrying a private IPv4. */
	static const char *const refused[] = {
		"::",
		"::1",
		"100::1",
		"fc00::1",
		"fdff:ffff::1",
		"fe80::1",
		"febf::1",
		"fec0::1",
		"ff02::1",
		"2001:db8::1",
		"3fff::1",
		"2001:2::1",
		"2001:20::1",
		"64:ff9b:1::1",
		"::10.0.0.1",
		"::ffff:127.0.0.1",
		"::ffff:10.0.0.1",
		"::ffff:192.168.1.1",
		"::ffff:0:10.1.2.3",
		"::ffff:0:169.254.0.1",
		"64:ff9b::10.0.0.1",
		"64:ff9b::7f00:1",
		"2002:c0a8:101::1",                     /* 6to4 of 192.168.1.1 */
		"2002:7f00:1::1",                       /* 6to4 of 127.0.0.1 */
		"2001:0:4136:e378:8000:63bf:f5ff:fffe", /* Teredo, client 10.0.0.1 */
		"1.2.3",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		ck_assert_msg(fetch_addr_is_private(refused[i]), "%s", refused[i]);
	static const char *const allowed[] = {
		"2606:2800:220:1::1",
		"2a00:1450:4001::1",
		"::ffff:93.184.216.34",
		"64:ff9b::5db8:d822",
		"2002:5db8:d822::1",
		"::ffff:0:8.8.8.8",
		"2001:0:4136:e378:8000:63bf:a247:27dd", /* Teredo, client 93.184.216.34 */
		"fe00::1",
	};
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		ck_assert_msg(!fetch_addr_is_private(allowed[i]), "%s", allowed[i]);
}
END_TEST

/* Whether the header block holds a line that is exactly line (no CRLF). */
static bool has_line(const struct fetch_buf *h, const char *line)
{
	const char *p = (const char *)h->data, *end = p + h->len;
	size_t n = strlen(line);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		size_t len = (size_t)(le - p) - (le > p && le[-1] == '\r');
		if (len == n && memcmp(p, line, n) == 0)
			return true;
		p = le + 1;
	}
	return false;
}

/* Chunked responses with trailers (one of them a line "HTTP/1.1 500 ..."):
 * the header block is the response's own, its fields unchanged, the
 * trailers kept after them as X-Crawler-Trailer lines; the body is whole;
 * and the WARC records written from them read back with the strict reader,
 * payload digests verified. */
START_TEST(trailers_kept_apart)
{
	struct fetch_config cfg = { .allow_private_networks = true };
	const char *paths[] = { "/trailers", "/early-trailers", "/page/3" };
	struct collect c;
	run_fetches(&cfg, paths, 3, "h.test", &c);
	struct fetch_result *tr = by_user(&c, 0), *early = by_user(&c, 1), *plain = by_user(&c, 2);
	ck_assert_msg(tr->error == FETCH_OK, "%s: %s", fetch_strerror(tr->error), tr->error_detail);
	ck_assert_int_eq(tr->status, 200);
	ck_assert_uint_eq(tr->body.len, 13);
	ck_assert(memcmp(tr->body.data, "hello trailer", 13) == 0);
	ck_assert_uint_ge(tr->response_headers.len, 17);
	ck_assert(memcmp(tr->response_headers.data, "HTTP/1.1 200 OK\r\n", 17) == 0);
	ck_assert_str_eq(tr->content_type, "text/plain");
	ck_assert(has_line(&tr->response_headers, "Transfer-Encoding: chunked"));
	ck_assert(has_line(&tr->response_headers, "X-Crawler-Trailer: X-Checksum: 42"));
	ck_assert(has_line(&tr->response_headers, "X-Crawler-Trailer: HTTP/1.1 500 Oops: x"));
	ck_assert(has_line(&tr->response_headers, "X-Crawler-Trailer: Content-Type: evil/x"));
	ck_assert(!has_line(&tr->response_headers, "X-Checksum: 42"));
	ck_assert(memcmp(tr->response_headers.data + tr->response_headers.len - 4, "\r\n\r\n", 4) ==
	          0);
	/* the 103 block is dropped, the trailer kept apart, the body empty */
	ck_assert_int_eq(early->error, FETCH_OK);
	ck_assert_int_eq(early->status, 200);
	ck_assert_uint_eq(early->body.len, 0);
	ck_assert(memcmp(early->response_headers.data, "HTTP/1.1 200 OK\r\n", 17) == 0);
	ck_assert(has_line(&early->response_headers, "X-Crawler-Trailer: HTTP/1.1 204 No: x"));
	ck_assert(!has_line(&early->response_headers, "Link: </s.css>; rel=preload"));
	ck_assert_int_eq(plain->error, FETCH_OK);

	char dir[] = "/tmp/test_fetch_warc.XXXXXX", cmd[1024], line[512] = "";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct warc_config wc = { .dir = dir, .prefix = "t", .user_agent = "testbot/1.0" };
	struct warc_writer *w = NULL;
	ck_assert_int_eq(warc_writer_open(&wc, &w), WARC_OK);
	for (size_t i = 0; i < c.n; i++) {
		struct fetch_result *r = c.res[i];
		struct warc_fetch f = { .url = r->url,
			                .ip = r->ip,
			                .date_unix_ms = r->start_unix_ms,
			                .request_headers = r->request_headers.data,
			                .request_len = r->request_headers.len,
			                .response_headers = r->response_headers.data,
			                .response_headers_len = r->response_headers.len,
			                .body = r->body.data,
			                .body_len = r->body.len };
		ck_assert_int_eq(warc_writer_write_fetch(w, &f, NULL, NULL), WARC_OK);
	}
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
	snprintf(cmd, sizeof cmd, "%s %s %s 2>&1; rm -rf %s", PYTHON3, WARC_CHECK_SCRIPT, dir, dir);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
	ck_assert_msg(pclose(p) == 0, "the strict reader refuses the WARC: %s", line);
	ck_assert_ptr_nonnull(strstr(line, "response=3"));
	free_collect(&c);
}
END_TEST

START_TEST(busy_and_cancel)
{
	uv_loop_t loop;
	struct fetch_engine *e = NULL;
	struct collect c = { .res = calloc(4, sizeof(struct fetch_result *)), .cap = 4 };
	char url[128];
	struct fetch_config cfg = { .allow_private_networks = true, .max_connections = 2 };
	uv_loop_init(&loop);
	ck_assert_int_eq(fetch_engine_create(&loop, &cfg, on_done, &c, &e), FETCH_OK);
	snprintf(url, sizeof(url), "http://f.test:%d/slow", test_server_port(server));
	struct fetch_request r = { .url = url, .ip = "127.0.0.1" };
	ck_assert_int_eq(fetch_engine_start(e, &r), FETCH_OK);
	ck_assert_int_eq(fetch_engine_start(e, &r), FETCH_OK);
	ck_assert_int_eq(fetch_engine_start(e, &r), FETCH_ERR_BUSY);
	uv_run(&loop, UV_RUN_NOWAIT);
	fetch_engine_destroy(e);
	ck_assert_uint_eq(c.n, 2);
	ck_assert_int_eq(c.res[0]->error, FETCH_ERR_CANCELLED);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	free_collect(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fetch");
	TCase *tc = tcase_create("engine");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, concurrent_pages);
	tcase_add_test(tc, keepalive_reuse);
	tcase_add_test(tc, limits_and_redirects);
	tcase_add_test(tc, compressed_bodies);
	tcase_add_test(tc, hostile_headers);
	tcase_add_test(tc, accept_encoding_on_and_off);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, private_refused);
	tcase_add_test(tc, busy_and_cancel);
	tcase_add_test(tc, trailers_kept_apart);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
