/* test_server.c: see test_server.h. */
#include "test_server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>
#include <zlib.h>

const char test_server_text[] =
        "<html><body>Compressed page. The quick brown fox jumps over the lazy dog. "
        "The quick brown fox jumps over the lazy dog.</body></html>\n";

struct test_server {
	uv_loop_t loop;
	uv_tcp_t listener;
	uv_async_t stop;
	pthread_t thread;
	int port;
	atomic_long requests;
	atomic_long connections;
	unsigned char *gz, *zl, *bomb, *gz_zl;
	size_t gz_len, zl_len, bomb_len, gz_zl_len;
};

struct conn {
	uv_tcp_t tcp;
	struct test_server *s;
	char *buf;
	size_t len, cap;
};

static size_t compress_with(const void *in, size_t len, int wbits, unsigned char **out)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	deflateInit2(&zs, 9, Z_DEFLATED, wbits, 9, Z_DEFAULT_STRATEGY);
	size_t cap = deflateBound(&zs, len) + 64;
	*out = malloc(cap);
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	zs.next_out = *out;
	zs.avail_out = (uInt)cap;
	deflate(&zs, Z_FINISH);
	size_t n = cap - zs.avail_out;
	deflateEnd(&zs);
	return n;
}

static void on_write(uv_write_t *w, int status)
{
	(void)status;
	free(w->data);
	free(w);
}

static void send_bytes(struct conn *c, const void *data, size_t len)
{
	uv_write_t *w = malloc(sizeof(*w));
	char *copy = malloc(len ? len : 1);
	memcpy(copy, data, len);
	w->data = copy;
	uv_buf_t b = uv_buf_init(copy, (unsigned)len);
	if (uv_write(w, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
		free(copy);
		free(w);
	}
}

static void send_response(struct conn *c, const char *status, const char *extra, const void *body,
                          size_t body_len)
{
	char head[1024];
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Length: %zu\r\n%s\r\n", status,
	                 body_len, extra);
	send_bytes(c, head, (size_t)n);
	if (body_len > 0)
		send_bytes(c, body, body_len);
}

/* The value of the request's Accept-Encoding header (head: the request line
 * and headers, NUL-terminated), copied into out; "(none)" without one. */
static void accept_encoding_of(const char *head, char *out, size_t cap)
{
	const char *h = strcasestr(head, "\r\nAccept-Encoding:");
	snprintf(out, cap, "(none)");
	if (h == NULL)
		return;
	h += strlen("\r\nAccept-Encoding:");
	while (*h == ' ')
		h++;
	size_t n = strcspn(h, "\r");
	snprintf(out, cap, "%.*s", (int)n, h);
}

static void handle(struct conn *c, const char *path, const char *head)
{
	struct test_server *s = c->s;
	atomic_fetch_add(&s->requests, 1);
	if (strncmp(path, "/page/", 6) == 0) {
		char body[1024];
		size_t n = 0;
		for (int i = 0; i < 10; i++)
			n += (size_t)snprintf(body + n, sizeof(body) - n, "page %s\n", path + 6);
		send_response(c, "200 OK", "Content-Type: text/html\r\n", body, n);
	} else if (strcmp(path, "/big") == 0) {
		size_t n = 1u << 20;
		char *body = malloc(n);
		memset(body, 'a', n);
		send_response(c, "200 OK", "Content-Type: text/plain\r\n", body, n);
		free(body);
	} else if (strcmp(path, "/hugeheaders") == 0) {
		size_t cap = 210000, n = 0;
		char *h = malloc(cap);
		n += (size_t)snprintf(h, cap, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n");
		for (int i = 0; n + 200 < cap - 100 && i < 4000; i++)
			n += (size_t)snprintf(h + n, cap - n, "X-Filler-%d: %0100d\r\n", i, i);
		n += (size_t)snprintf(h + n, cap - n, "\r\nok");
		send_bytes(c, h, n);
		free(h);
	} else if (strcmp(path, "/hugeline") == 0) {
		size_t n = 2u << 20;
		char *h = malloc(n + 128);
		int k = snprintf(h, 128, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Huge: ");
		memset(h + k, 'a', n);
		memcpy(h + k + n, "\r\n\r\nok", 6);
		send_bytes(c, h, (size_t)k + n + 6);
		free(h);
	} else if (strcmp(path, "/two-encodings") == 0) {
		send_response(c, "200 OK",
		              "Content-Type: text/html\r\nContent-Encoding: gzip\r\n"
		              "Content-Encoding: deflate\r\n",
		              s->gz_zl, s->gz_zl_len);
	} else if (strcmp(path, "/status999") == 0) {
		send_response(c, "999 Odd", "Content-Type: text/plain\r\n", "odd", 3);
	} else if (strcmp(path, "/redirect") == 0) {
		send_response(c, "302 Found", "Location: /page/1\r\n", "", 0);
	} else if (strcmp(path, "/gzip") == 0) {
		send_response(c, "200 OK", "Content-Type: text/html\r\nContent-Encoding: gzip\r\n",
		              s->gz, s->gz_len);
	} else if (strcmp(path, "/deflate") == 0) {
		send_response(c, "200 OK",
		              "Content-Type: text/html\r\nContent-Encoding: deflate\r\n", s->zl,
		              s->zl_len);
	} else if (strcmp(path, "/bomb") == 0) {
		send_response(c, "200 OK", "Content-Type: text/html\r\nContent-Encoding: gzip\r\n",
		              s->bomb, s->bomb_len);
	} else if (strcmp(path, "/slow") == 0) {
		const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nabc";
		send_bytes(c, h, strlen(h));
	} else if (strcmp(path, "/accept-encoding") == 0) {
		char value[256];
		accept_encoding_of(head, value, sizeof(value));
		send_response(c, "200 OK", "Content-Type: text/plain\r\n", value, strlen(value));
	} else if (strcmp(path, "/trailers") == 0) {
		/* chunked, then trailers: a field, and a line that reads as a
		 * status line (libcurl passes on only lines with a colon), and a Content-Type */
		const char *r = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		                "Transfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
		                "6\r\nhello \r\n7\r\ntrailer\r\n0\r\nX-Checksum: 42\r\n"
		                "HTTP/1.1 500 Oops: x\r\nContent-Type: evil/x\r\n\r\n";
		send_bytes(c, r, strlen(r));
	} else if (strcmp(path, "/early-trailers") == 0) {
		/* a 103 block first, then an empty chunked body with a trailer */
		const char *r = "HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
		                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
		                "Transfer-Encoding: chunked\r\n\r\n"
		                "0\r\nHTTP/1.1 204 No: x\r\n\r\n";
		send_bytes(c, r, strlen(r));
	} else if (strcmp(path, "/retry") == 0) {
		send_response(c, "503 Service Unavailable", "Retry-After: 7\r\n", "busy", 4);
	} else {
		send_response(c, "404 Not Found", "Content-Type: text/plain\r\n", "nope", 4);
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	buf->base = malloc(suggested);
	buf->len = suggested;
}

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	free(c->buf);
	free(c);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = st->data;
	if (nread < 0) {
		free(buf->base);
		if (!uv_is_closing((uv_handle_t *)st))
			uv_close((uv_handle_t *)st, on_conn_closed);
		return;
	}
	if (c->len + (size_t)nread + 1 > c->cap) {
		c->cap = (c->len + (size_t)nread + 1) * 2;
		c->buf = realloc(c->buf, c->cap);
	}
	memcpy(c->buf + c->len, buf->base, (size_t)nread);
	c->len += (size_t)nread;
	c->buf[c->len] = '\0';
	free(buf->base);
	for (;;) {
		char *end = strstr(c->buf, "\r\n\r\n");
		if (end == NULL)
			break;
		char path[512] = "/";
		char *sp = strchr(c->buf, ' ');
		if (sp != NULL) {
			char *sp2 = strchr(sp + 1, ' ');
			size_t n = sp2 ? (size_t)(sp2 - sp - 1) : 0;
			if (n > 0 && n < sizeof(path)) {
				memcpy(path, sp + 1, n);
				path[n] = '\0';
			}
		}
		end[2] = '\0'; /* the head ends with its last header's CRLF */
		handle(c, path, c->buf);
		size_t used = (size_t)(end + 4 - c->buf);
		memmove(c->buf, c->buf + used, c->len - used + 1);
		c->len -= used;
	}
}

static void on_connection(uv_stream_t *server, int status)
{
	struct test_server *s = server->data;
	if (status < 0)
		return;
	struct conn *c = calloc(1, sizeof(*c));
	c->s = s;
	uv_tcp_init(&s->loop, &c->tcp);
	c->tcp.data = c;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
		return;
	}
	atomic_fetch_add(&s->connections, 1);
	uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void close_any(uv_handle_t *h, void *arg)
{
	struct test_server *s = arg;
	if (uv_is_closing(h))
		return;
	if (h == (uv_handle_t *)&s->listener || h == (uv_handle_t *)&s->stop)
		uv_close(h, NULL);
	else
		uv_close(h, on_conn_closed);
}

static void on_stop(uv_async_t *a)
{
	struct test_server *s = a->data;
	uv_walk(&s->loop, close_any, s);
}

static void *run(void *arg)
{
	struct test_server *s = arg;
	uv_run(&s->loop, UV_RUN_DEFAULT);
	return NULL;
}

struct test_server *test_server_start(void)
{
	struct test_server *s = calloc(1, sizeof(*s));
	struct sockaddr_in addr;
	struct sockaddr_storage name;
	int namelen = sizeof(name);
	uv_loop_init(&s->loop);
	uv_tcp_init(&s->loop, &s->listener);
	s->listener.data = s;
	uv_ip4_addr("127.0.0.1", 0, &addr);
	if (uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0) != 0 ||
	    uv_listen((uv_stream_t *)&s->listener, 4096, on_connection) != 0)
		return NULL;
	uv_tcp_getsockname(&s->listener, (struct sockaddr *)&name, &namelen);
	s->port = ntohs(((struct sockaddr_in *)&name)->sin_port);
	uv_async_init(&s->loop, &s->stop, on_stop);
	s->stop.data = s;
	s->gz_len = compress_with(test_server_text, strlen(test_server_text), 31, &s->gz);
	s->zl_len = compress_with(test_server_text, strlen(test_server_text), 15, &s->zl);
	s->gz_zl_len = compress_with(s->gz, s->gz_len, 15, &s->gz_zl);
	size_t bn = 64u << 20;
	char *zeros = calloc(1, bn);
	s->bomb_len = compress_with(zeros, bn, 31, &s->bomb);
	free(zeros);
	pthread_create(&s->thread, NULL, run, s);
	return s;
}

int test_server_port(const struct test_server *s)
{
	return s->port;
}
long test_server_requests(const struct test_server *s)
{
	return atomic_load(&s->requests);
}
long test_server_connections(const struct test_server *s)
{
	return atomic_load(&s->connections);
}

void test_server_stop(struct test_server *s)
{
	if (s == NULL)
		return;
	uv_async_send(&s->stop);
	pthread_join(s->thread, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	uv_loop_close(&s->loop);
	free(s->gz);
	free(s->zl);
	free(s->gz_zl);
	free(s->bomb);
	free(s);
}
