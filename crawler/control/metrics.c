/*
 * metrics.c: the live-figures HTTP endpoint (see metrics.h).
 */
#include "crawler/control/metrics.h"

#include <stdlib.h>
#include <string.h>

#include "frontier/base/chain.h"

struct client {
	uv_tcp_t tcp;
	uv_timer_t idle;
	uv_write_t wr;
	struct metrics_server *m;
	struct client *prev, *next;
	int handles; /* open handles: freed when 0 */
	int closing;
	size_t len;
	size_t head_len; /* the head's bytes with its blank line; 0: not all read */
	char *body;      /* malloc'd: Content-Length bytes, head_len onwards */
	size_t body_len, body_need;
	char *resp; /* malloc'd (open_memstream) */
	size_t resp_len;
	char req[METRICS_REQUEST_MAX];
};

struct metrics_server {
	uv_tcp_t listener;
	uv_loop_t *loop;
	metrics_render_fn render;
	void *ctx;
	metrics_control_fn control;
	void *control_ctx;
	struct client *clients;
	int nclients;
	int listener_open, stopping, port;
};

static void maybe_free(struct metrics_server *m)
{
	if (m->stopping && !m->listener_open && !m->clients)
		free(m);
}

static void on_client_closed(uv_handle_t *h)
{
	struct client *c = h->data;
	struct metrics_server *m = c->m;
	if (--c->handles > 0)
		return;
	DLIST_UNLINK(m->clients, c);
	m->nclients--;
	free(c->resp);
	free(c->body);
	free(c);
	maybe_free(m);
}

static void client_close(struct client *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	uv_close((uv_handle_t *)&c->tcp, on_client_closed);
	uv_close((uv_handle_t *)&c->idle, on_client_closed);
}

static void on_written(uv_write_t *wr, int status)
{
	(void)status;
	client_close(wr->data);
}

/* The response to the request head in c->req: status line, headers, body. */
static void respond(struct client *c, int code, const char *type, const char *body, size_t n)
{
	const char *reason = code == 200   ? "OK"
	                     : code == 404 ? "Not Found"
	                     : code == 400 ? "Bad Request"
	                     : code == 405 ? "Method Not Allowed"
	                     : code == 413 ? "Content Too Large"
	                     : code == 503 ? "Service Unavailable"
	                                   : "Internal Server Error";
	FILE *f = open_memstream(&c->resp, &c->resp_len);
	if (!f) {
		client_close(c);
		return;
	}
	fprintf(f,
	        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	        "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
	        code, reason, type, n);
	fwrite(body, 1, n, f);
	if (fclose(f) != 0) {
		client_close(c);
		return;
	}
	uv_buf_t b = uv_buf_init(c->resp, (unsigned)c->resp_len);
	c->wr.data = c;
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0)
		client_close(c);
}

/* A request the metrics pages are not: the control callback's, else 404. */
static void serve_control(struct client *c)
{
	static const char not_found[] = "not found: GET /metrics or /status\n";
	char method[16], target[2048];
	if (sscanf(c->req, "%15s %2047s", method, target) != 2 || !c->m->control) {
		respond(c, 404, "text/plain", not_found, sizeof not_found - 1);
		return;
	}
	char *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	int code = f ? c->m->control(c->m->control_ctx, method, target, c->body ? c->body : "",
	                             c->body_len, f)
	             : 500;
	if (f && fclose(f) != 0)
		code = 500;
	if (code == 500)
		respond(c, 500, "text/plain", "cannot answer\n", 14);
	else
		respond(c, code,
		        strncmp(target, "/hosts/", 7) == 0 && code == 200 ? "application/json"
		                                                          : "text/plain",
		        out, n);
	free(out);
}

/* Renders the page named by the request line into a response. */
static void serve(struct client *c)
{
	enum metrics_page page;
	const char *type;
	if (strncmp(c->req, "GET /metrics ", 13) == 0) {
		page = METRICS_PROMETHEUS;
		type = "text/plain; version=0.0.4";
	} else if (strncmp(c->req, "GET /status ", 12) == 0) {
		page = METRICS_STATUS;
		type = "application/json";
	} else {
		serve_control(c);
		return;
	}
	char *body = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&body, &n);
	int rc = f ? c->m->render(c->m->ctx, page, f) : -1;
	if (f && fclose(f) != 0)
		rc = -1;
	if (rc == 0)
		respond(c, 200, type, body, n);
	else
		respond(c, 500, "text/plain", "cannot render\n", 14);
	free(body);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct client *c = h->data;
	(void)suggested;
	if (c->head_len)
		*b = uv_buf_init(c->body + c->body_len, (unsigned)(c->body_need - c->body_len));
	else
		*b = uv_buf_init(c->req + c->len, (unsigned)(sizeof c->req - 1 - c->len));
}

/* The head is in: its Content-Length, and the body's bytes read with it
 * moved to a buffer of that size. 0, or an HTTP error code. */
static int head_read(struct client *c, const char *end)
{
	c->head_len = (size_t)(end - c->req);
	const char *cl = strcasestr(c->req, "\ncontent-length:");
	size_t need = 0;
	if (cl && cl < end) {
		char *e;
		unsigned long long v = strtoull(cl + 16, &e, 10);
		if (e == cl + 16 || v > METRICS_BODY_MAX)
			return e == cl + 16 ? 400 : 413;
		need = (size_t)v;
	}
	c->body_need = need;
	c->body = malloc(need + 1);
	if (!c->body)
		return 500;
	size_t have = c->len - c->head_len;
	if (have > need)
		have = need;
	memcpy(c->body, c->req + c->head_len, have);
	c->body_len = have;
	c->req[c->head_len] = '\0';
	return 0;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
	struct client *c = s->data;
	(void)b;
	if (nread < 0) {
		client_close(c);
		return;
	}
	if (c->head_len) {
		c->body_len += (size_t)nread;
	} else {
		c->len += (size_t)nread;
		c->req[c->len] = '\0';
		char *end = strstr(c->req, "\r\n\r\n");
		char *end2 = strstr(c->req, "\n\n");
		if (end)
			end += 4;
		else if (end2)
			end = end2 + 2;
		if (!end) {
			if (c->len + 1 >= sizeof c->req) {
				uv_read_stop(s);
				respond(c, 400, "text/plain", "request too large\n", 18);
			}
			return;
		}
		int code = head_read(c, end);
		if (code) {
			uv_read_stop(s);
			respond(c, code, "text/plain", "bad or too large a body\n", 24);
			return;
		}
	}
	if (c->body_len < c->body_need)
		return;
	c->body[c->body_len] = '\0';
	uv_read_stop(s);
	uv_timer_stop(&c->idle);
	serve(c);
}

static void on_idle(uv_timer_t *t)
{
	client_close(t->data);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct metrics_server *m = server->data;
	if (status < 0)
		return;
	struct client *c = calloc(1, sizeof *c);
	if (!c)
		return;
	c->m = m;
	uv_tcp_init(m->loop, &c->tcp);
	uv_timer_init(m->loop, &c->idle);
	c->tcp.data = c->idle.data = c;
	c->handles = 2;
	DLIST_PUSH(m->clients, c);
	m->nclients++;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 || m->nclients > METRICS_CLIENTS ||
	    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
		client_close(c);
		return;
	}
	uv_timer_start(&c->idle, on_idle, METRICS_IDLE_MS, 0);
}

/* "PORT", "ADDR:PORT" or "[IPV6]:PORT" into sa; 0 or -1. */
static int parse_addr(const char *addr, struct sockaddr_storage *sa)
{
	char host[64] = "127.0.0.1";
	const char *colon = strrchr(addr, ':'), *port_s = colon ? colon + 1 : addr;
	char *end;
	long port = strtol(port_s, &end, 10);
	if (*port_s == '\0' || *end != '\0' || port < 0 || port > 65535)
		return -1;
	if (colon) {
		const char *h = addr;
		size_t n = (size_t)(colon - addr);
		if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
			h++;
			n -= 2;
		}
		if (n == 0 || n >= sizeof host)
			return -1;
		memcpy(host, h, n);
		host[n] = '\0';
	}
	if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)sa) == 0)
		return 0;
	return uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)sa) == 0 ? 0 : -1;
}

int metrics_server_start(uv_loop_t *loop, const char *addr, metrics_render_fn render, void *ctx,
                         struct metrics_server **out, char *err, size_t errlen)
{
	struct sockaddr_storage sa;
	*out = NULL;
	if (parse_addr(addr, &sa) != 0) {
		snprintf(err, errlen, "metrics: bad address '%s' (PORT, ADDR:PORT or [IPV6]:PORT)",
		         addr);
		return -1;
	}
	struct metrics_server *m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "metrics: out of memory");
		return -1;
	}
	m->loop = loop;
	m->render = render;
	m->ctx = ctx;
	uv_tcp_init(loop, &m->listener);
	m->listener.data = m;
	m->listener_open = 1;
	int rc = uv_tcp_bind(&m->listener, (const struct sockaddr *)&sa, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&m->listener, 64, on_connection);
	if (rc != 0) {
		snprintf(err, errlen, "metrics: cannot listen on %s: %s", addr, uv_strerror(rc));
		metrics_server_stop(m);
		return -1;
	}
	struct sockaddr_storage bound;
	int len = sizeof bound;
	if (uv_tcp_getsockname(&m->listener, (struct sockaddr *)&bound, &len) == 0)
		m->port = ntohs(bound.ss_family == AF_INET6
		                        ? ((struct sockaddr_in6 *)&bound)->sin6_port
		                        : ((struct sockaddr_in *)&bound)->sin_port);
	*out = m;
	return 0;
}

void metrics_server_set_control(struct metrics_server *m, metrics_control_fn control, void *ctx)
{
	m->control = control;
	m->control_ctx = ctx;
}

int metrics_server_port(const struct metrics_server *m)
{
	return m ? m->port : 0;
}

static void on_listener_closed(uv_handle_t *h)
{
	struct metrics_server *m = h->data;
	m->listener_open = 0;
	maybe_free(m);
}

void metrics_server_stop(struct metrics_server *m)
{
	if (!m || m->stopping)
		return;
	m->stopping = 1;
	for (struct client *c = m->clients; c; c = c->next)
		client_close(c);
	uv_close((uv_handle_t *)&m->listener, on_listener_closed);
}
