/*
 * fetch.c: the fetch engine (see fetch.h). libcurl's multi socket API glued
 * to libuv: curl tells us which sockets to watch (socket callback) and when
 * to call it back (timer callback); uv_poll_t events and the uv_timer_t feed
 * curl_multi_socket_action. A per-socket context lives from the first
 * CURL_POLL_IN/OUT to CURL_POLL_REMOVE and is freed in its uv_close callback.
 */
#include "crawler/net/fetch.h"
#include "crawler/net/proxy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "crawler/net/ip_conns.h"
#include "frontier/base/array.h"
#include "frontier/base/chain.h"
#include "frontier/base/clock.h"
#include "frontier/base/header_field.h"
#include "frontier/base/ipaddr.h"

#define FETCH_DEFAULT_MAX_CONN 1024
#define FETCH_REQ_HDR_CAP 65536u
/* A body buffer is sized from Content-Length up to this much at once: the
 * web controls that header, so a larger claim grows as bytes arrive. */
#define FETCH_BODY_RESERVE_MAX (256u * 1024u)

struct sock_ctx {
	uv_poll_t poll;
	curl_socket_t fd;
	struct fetch_engine *engine;
	struct sock_ctx *prev, *next; /* engine's list of open polls */
};

struct transfer {
	struct transfer *prev, *next; /* engine's in-flight list */
	struct fetch_engine *engine;
	CURL *easy;
	struct curl_slist *resolve;
	struct curl_slist *headers; /* a conditional request's, or NULL */
	struct fetch_result *res;
	size_t req_alloc, hdr_alloc, body_alloc;
	size_t header_total; /* all header bytes, 1xx blocks and trailers included */
	bool header_too_big;
	bool header_ended; /* the blank line closing the last block came */
	/* Header blocks: a status line opens one, a blank line closes it. The
	 * block answering the request (not 1xx, not a proxy's CONNECT) is the
	 * final one; what comes after its blank line is trailers (chunked or
	 * HTTP/2), kept as "X-Crawler-Trailer: LINE" before that blank line. */
	int block_status;  /* status code of the block being read (0: none) */
	bool connect_sent; /* the last request out was a CONNECT */
	bool in_trailers;  /* the final block has closed */
	uint8_t blank_len; /* its blank line's bytes: 2 (CRLF) or 1 (LF) */
	bool refused_private;
	bool proxied;            /* connects to the proxy, not to the host */
	uint64_t start_hr;       /* uv_hrtime at start */
	bool request_sent;       /* a request went out (a later connect is a re-send) */
	curl_socket_t opened_fd; /* the last socket this transfer opened */
	char ip[48];             /* the address the request goes to */
	char errbuf[CURL_ERROR_SIZE];
};

struct fetch_engine {
	uv_loop_t *loop;
	CURLM *multi;
	uv_timer_t timer;
	fetch_done_fn done;
	void *ctx;
	struct fetch_config cfg;
	char *user_agent;
	char *ca_file; /* NULL: the system's store */
	struct proxy *proxy;
	struct transfer *head;
	struct sock_ctx *socks; /* polls open (not yet uv_close'd) */
	struct ip_conns *conns; /* open sockets per address */
	size_t in_flight;
	size_t open_handles; /* timer + socket polls not yet closed */
	bool destroying;
	struct fetch_stats stats;
	/* Easy handles of finished transfers, reset and reused: creating and
	 * destroying one per transfer cost more than the reset. */
	CURL **spare_easy;
	size_t nspare_easy, spare_easy_cap;
};

static int curl_users; /* engines alive: curl_global_init is done once */

const char *fetch_strerror(enum fetch_error err)
{
	static const char *const names[] = {
		[FETCH_OK] = "ok",
		[FETCH_ERR_NOMEM] = "nomem",
		[FETCH_ERR_INVALID] = "invalid",
		[FETCH_ERR_PRIVATE_ADDR] = "private-address",
		[FETCH_ERR_BUSY] = "busy",
		[FETCH_ERR_PROTOCOL] = "protocol",
		[FETCH_ERR_CONNECT] = "connect",
		[FETCH_ERR_TIMEOUT] = "timeout",
		[FETCH_ERR_TOO_SLOW] = "too-slow",
		[FETCH_ERR_HEADER_TOO_LARGE] = "header-too-large",
		[FETCH_ERR_TLS] = "tls",
		[FETCH_ERR_RECV] = "recv",
		[FETCH_ERR_BAD_RESPONSE] = "bad-response",
		[FETCH_ERR_EMPTY_REPLY] = "empty-reply",
		[FETCH_ERR_CURL] = "curl",
		[FETCH_ERR_CANCELLED] = "cancelled",
		[FETCH_ERR_TLS_CERT] = "tls-cert",
	};
	if ((size_t)err < sizeof(names) / sizeof(names[0]) && names[err] != NULL)
		return names[err];
	return "unknown";
}

/* ---------- buffers ---------- */

static int buf_append(struct fetch_buf *b, size_t *alloc, const void *data, size_t n, size_t cap)
{
	if (n == 0)
		return 0;
	if (b->len + n > *alloc) {
		size_t na = *alloc ? *alloc : 4096;
		while (na < b->len + n)
			na *= 2;
		if (na > cap && cap >= b->len + n)
			na = cap;
		uint8_t *p = realloc(b->data, na);
		if (p == NULL)
			return -1;
		b->data = p;
		*alloc = na;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
	return 0;
}

int fetch_type_is_html(const char *ct)
{
	if (!ct)
		return 0;
	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, "text/html", 9) == 0 ||
	       strncasecmp(ct, "application/xhtml+xml", 21) == 0;
}

/* The header values a result holds copies of (fetch_headers_read). */
static void header_values_free(struct fetch_result *r)
{
	free(r->content_type);
	free(r->content_encoding);
	free(r->location);
}

void fetch_result_free(struct fetch_result *res)
{
	if (res == NULL)
		return;
	free(res->url);
	free(res->request_headers.data);
	free(res->response_headers.data);
	free(res->body.data);
	header_values_free(res);
	free(res);
}

void fetch_result_drop_messages(struct fetch_result *res)
{
	struct fetch_buf *b[] = { &res->request_headers, &res->response_headers, &res->body };
	for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
		free(b[i]->data);
		b[i]->data = NULL;
	}
}

/* A header of the response, copied (header_field_dup). */
static char *response_field(const struct fetch_buf *h, const char *name, bool all)
{
	return header_field_dup((const char *)h->data, h->len, name, all);
}

void fetch_headers_read(struct fetch_result *r, time_t now)
{
	header_values_free(r);
	r->content_type = response_field(&r->response_headers, "Content-Type", false);
	r->content_encoding = response_field(&r->response_headers, "Content-Encoding", true);
	r->location = response_field(&r->response_headers, "Location", false);
	char *ra = response_field(&r->response_headers, "Retry-After", false);
	r->retry_after_s = -1;
	if (ra != NULL) {
		char *end = NULL;
		long v = strtol(ra, &end, 10); /* LONG_MAX past it: saturated */
		if (end != ra && *end == '\0' && v >= 0) {
			r->retry_after_s = v;
		} else {
			time_t when = curl_getdate(ra, NULL);
			if (when != (time_t)-1)
				r->retry_after_s = when > now ? (long)(when - now) : 0;
		}
		free(ra);
	}
}

/* ---------- curl callbacks ---------- */

/* Before the first body bytes: room for the whole body when the response
 * gives its length, so the buffer is not copied as it doubles. */
static void body_reserve(struct transfer *t, size_t cap)
{
	curl_off_t cl = -1;
	if (curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) != CURLE_OK ||
	    cl <= 0 || (uint64_t)cl > FETCH_BODY_RESERVE_MAX || (uint64_t)cl > cap)
		return;
	uint8_t *p = malloc((size_t)cl);
	if (p == NULL)
		return; /* buf_append tries again, and reports */
	t->res->body.data = p;
	t->body_alloc = (size_t)cl;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userp)
{
	struct transfer *t = userp;
	size_t n = size * nmemb;
	size_t cap = t->engine->cfg.max_body_bytes;
	if (t->body_alloc == 0)
		body_reserve(t, cap);
	struct fetch_result *r = t->res;
	if (r->body.len + n > cap) {
		size_t keep = cap - r->body.len;
		if (buf_append(&r->body, &t->body_alloc, data, keep, cap) != 0)
			return 0;
		r->truncated = true;
		return 0; /* abort: the rest is not wanted */
	}
	if (buf_append(&r->body, &t->body_alloc, data, n, cap) != 0)
		return 0;
	return n;
}

/* The code of a status line ("HTTP/1.1 204 ...", "HTTP/2 200"), 0 if it
 * has none. */
static int status_code_of(const char *line, size_t n)
{
	size_t i = 5; /* after "HTTP/" */
	int code = 0;
	while (i < n && line[i] != ' ')
		i++;
	if (n < i + 4)
		return 0;
	for (size_t k = i + 1; k < i + 4; k++) {
		if (line[k] < '0' || line[k] > '9')
			return 0;
		code = code * 10 + (line[k] - '0');
	}
	return code;
}

/* A trailer line: into the final block as "X-Crawler-Trailer: LINE", before
 * its blank line, so that no trailer reads as one of the response's fields
 * (nor, beginning "HTTP/", as a new block). The blank line ending the
 * trailers is dropped. 0, or -1 when out of memory or past the cap. */
static int trailer_keep(struct transfer *t, const char *data, size_t n)
{
	static const char name[] = "X-Crawler-Trailer: ";
	struct fetch_buf *h = &t->res->response_headers;
	while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r'))
		n--;
	if (n == 0)
		return 0;
	t->header_total += sizeof name - 1;
	if (t->header_total > t->engine->cfg.max_header_bytes) {
		t->header_too_big = true;
		return -1;
	}
	h->len -= h->len >= t->blank_len ? t->blank_len : h->len;
	if (buf_append(h, &t->hdr_alloc, name, sizeof name - 1, SIZE_MAX) != 0 ||
	    buf_append(h, &t->hdr_alloc, data, n, SIZE_MAX) != 0 ||
	    buf_append(h, &t->hdr_alloc, "\r\n", 2, SIZE_MAX) != 0)
		return -1;
	return buf_append(h, &t->hdr_alloc, "\r\n", t->blank_len, SIZE_MAX);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp)
{
	struct transfer *t = userp;
	size_t n = size * nmemb;
	struct fetch_result *r = t->res;
	t->header_total += n;
	if (t->header_total > t->engine->cfg.max_header_bytes) {
		t->header_too_big = true;
		return 0;
	}
	if (t->in_trailers)
		return trailer_keep(t, data, n) == 0 ? n : 0;
	/* A new status line starts a new block: drop 1xx (and CONNECT) ones. */
	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		r->response_headers.len = 0;
		t->block_status = status_code_of(data, n);
	}
	t->header_ended = (n == 2 && data[0] == '\r') || (n == 1 && data[0] == '\n');
	if (buf_append(&r->response_headers, &t->hdr_alloc, data, n, SIZE_MAX) != 0)
		return 0;
	if (t->header_ended && t->block_status >= 200) {
		/* a CONNECT's answer is followed by the response's own block */
		t->in_trailers = !t->connect_sent;
		t->connect_sent = false;
		t->blank_len = (uint8_t)n;
	}
	return n;
}

static int on_debug(CURL *easy, curl_infotype type, char *data, size_t size, void *userp)
{
	(void)easy;
	struct transfer *t = userp;
	if (type == CURLINFO_HEADER_OUT) {
		struct fetch_result *r = t->res;
		t->request_sent = true;
		t->connect_sent = size >= 8 && memcmp(data, "CONNECT ", 8) == 0;
		if (r->request_headers.len + size <= FETCH_REQ_HDR_CAP)
			buf_append(&r->request_headers, &t->req_alloc, data, size,
			           FETCH_REQ_HDR_CAP);
	}
	return 0;
}

static curl_socket_t on_opensocket(void *userp, curlsocktype purpose, struct curl_sockaddr *address)
{
	struct transfer *t = userp;
	(void)purpose;
	if (!t->engine->cfg.allow_private_networks && !t->proxied &&
	    fetch_sockaddr_is_private(&address->addr)) {
		t->refused_private = true;
		return CURL_SOCKET_BAD;
	}
	if (t->request_sent) {
		/* libcurl re-sending on a new connection: not inside the delay */
		t->res->reuse_dropped = true;
		return CURL_SOCKET_BAD;
	}
	curl_socket_t fd =
	        socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
	if (fd != CURL_SOCKET_BAD) {
		ip_conns_opened(t->engine->conns, fd, &address->addr);
		t->opened_fd = fd;
	}
	return fd;
}

/* CURLOPT_CLOSESOCKETFUNCTION: its data is the engine (a connection
 * outlives the transfer that opened it). */
static int on_closesocket(void *userp, curl_socket_t fd)
{
	struct fetch_engine *e = userp;
	ip_conns_closed(e->conns, fd);
	return close(fd);
}

/* The sockets of the transfers in flight to one address: each carries
 * (or is being connected for) a transfer, so it is not idle. */
#define BUSY_MAX 64
struct busy_set {
	size_t n;
	curl_socket_t fd[BUSY_MAX];
};

static bool socket_busy(void *ctx, int fd)
{
	const struct busy_set *b = ctx;
	for (size_t i = 0; i < b->n; i++)
		if (b->fd[i] == fd)
			return true;
	return false;
}

/* Fills b; false when more transfers to ip are in flight than it holds. */
static bool busy_collect(const struct fetch_engine *e, const char *ip, struct busy_set *b)
{
	b->n = 0;
	for (const struct transfer *t = e->head; t != NULL; t = t->next) {
		curl_socket_t active = CURL_SOCKET_BAD;
		if (strcmp(t->ip, ip) != 0)
			continue;
		if (b->n + 2 > BUSY_MAX)
			return false;
		b->fd[b->n++] = t->opened_fd;
		if (curl_easy_getinfo(t->easy, CURLINFO_ACTIVESOCKET, &active) == CURLE_OK)
			b->fd[b->n++] = active;
	}
	return true;
}

/* Keeps the address of a new transfer under max_ip_connections: shuts
 * one of its idle connections, or returns true when the transfer must
 * close its own after use (every connection busy). */
static bool ip_at_cap(struct fetch_engine *e, const char *ip)
{
	struct busy_set busy;
	if (e->cfg.max_ip_connections <= 0 ||
	    ip_conns_count(e->conns, ip) < (size_t)e->cfg.max_ip_connections)
		return false;
	if (busy_collect(e, ip, &busy) && ip_conns_shut_idle(e->conns, ip, socket_busy, &busy)) {
		e->stats.idle_conns_shut++;
		return false;
	}
	return true;
}

static void check_multi_info(struct fetch_engine *e);

static void sock_unlink(struct fetch_engine *e, struct sock_ctx *sc)
{
	DLIST_UNLINK(e->socks, sc);
}

static void on_poll_closed(uv_handle_t *h)
{
	struct sock_ctx *sc = h->data;
	struct fetch_engine *e = sc->engine;
	free(sc);
	e->open_handles--;
	if (e->destroying && e->open_handles == 0)
		free(e);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	struct sock_ctx *sc = p->data;
	struct fetch_engine *e = sc->engine;
	int flags = 0;
	int running = 0;
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(e->multi, sc->fd, flags, &running);
	check_multi_info(e);
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct fetch_engine *e = userp;
	struct sock_ctx *sc = socketp;
	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (sc != NULL) {
			uv_poll_stop(&sc->poll);
			curl_multi_assign(e->multi, s, NULL);
			sock_unlink(e, sc);
			uv_close((uv_handle_t *)&sc->poll, on_poll_closed);
		}
		return 0;
	}
	if (sc == NULL) {
		sc = calloc(1, sizeof(*sc));
		if (sc == NULL)
			return -1;
		sc->fd = s;
		sc->engine = e;
		if (uv_poll_init_socket(e->loop, &sc->poll, s) != 0) {
			free(sc);
			return -1;
		}
		sc->poll.data = sc;
		e->open_handles++;
		DLIST_PUSH(e->socks, sc);
		curl_multi_assign(e->multi, s, sc);
	}
	int events = 0;
	if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
		events |= UV_READABLE;
	if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
		events |= UV_WRITABLE;
	uv_poll_start(&sc->poll, events, on_poll);
	return 0;
}

static void on_timeout(uv_timer_t *timer)
{
	struct fetch_engine *e = timer->data;
	int running = 0;
	curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_multi_info(e);
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct fetch_engine *e = userp;
	(void)multi;
	if (e->destroying)
		return 0;
	if (timeout_ms < 0) {
		uv_timer_stop(&e->timer);
	} else {
		/* 0 means "now", but calling back from inside curl is not allowed:
		 * let the loop do it in 1 ms. */
		if (timeout_ms == 0)
			timeout_ms = 1;
		uv_timer_start(&e->timer, on_timeout, (uint64_t)timeout_ms, 0);
	}
	return 0;
}

/* ---------- transfers ---------- */

/* libcurl results that mean one fetch error whatever the transfer saw. */
static const struct {
	CURLcode code;
	enum fetch_error error;
} curl_errors[] = {
	{ CURLE_UNSUPPORTED_PROTOCOL, FETCH_ERR_PROTOCOL },
	{ CURLE_SSL_CONNECT_ERROR, FETCH_ERR_TLS },
	{ CURLE_PEER_FAILED_VERIFICATION, FETCH_ERR_TLS_CERT },
	{ CURLE_SSL_CERTPROBLEM, FETCH_ERR_TLS },
	{ CURLE_SSL_CIPHER, FETCH_ERR_TLS },
	{ CURLE_SSL_CACERT_BADFILE, FETCH_ERR_TLS },
	{ CURLE_SSL_ENGINE_NOTFOUND, FETCH_ERR_TLS },
	{ CURLE_SSL_ENGINE_SETFAILED, FETCH_ERR_TLS },
	{ CURLE_SSL_ISSUER_ERROR, FETCH_ERR_TLS_CERT },
	{ CURLE_SSL_PINNEDPUBKEYNOTMATCH, FETCH_ERR_TLS },
	{ CURLE_SSL_INVALIDCERTSTATUS, FETCH_ERR_TLS },
	{ CURLE_USE_SSL_FAILED, FETCH_ERR_TLS },
	{ CURLE_GOT_NOTHING, FETCH_ERR_EMPTY_REPLY },
	{ CURLE_WEIRD_SERVER_REPLY, FETCH_ERR_BAD_RESPONSE },
	{ CURLE_BAD_CONTENT_ENCODING, FETCH_ERR_BAD_RESPONSE },
	{ CURLE_HTTP2, FETCH_ERR_BAD_RESPONSE },
	{ CURLE_HTTP2_STREAM, FETCH_ERR_BAD_RESPONSE },
};

static enum fetch_error map_curl_error(struct transfer *t, CURLcode cc)
{
	switch (cc) {
	case CURLE_OK: return FETCH_OK;
	case CURLE_WRITE_ERROR:
		if (t->header_too_big)
			return FETCH_ERR_HEADER_TOO_LARGE;
		if (t->res->truncated)
			return FETCH_OK;
		return FETCH_ERR_NOMEM;
	case CURLE_OUT_OF_MEMORY:
		/* curl (7.x) refuses a header line over its own cap (100 KiB)
		 * as out of memory; before the header block ended that is the
		 * likely cause, whatever max_header_bytes allows. */
		return t->header_ended ? FETCH_ERR_NOMEM : FETCH_ERR_HEADER_TOO_LARGE;
	case CURLE_COULDNT_CONNECT:
		if (t->res->reuse_dropped)
			return FETCH_ERR_EMPTY_REPLY;
		return t->refused_private ? FETCH_ERR_PRIVATE_ADDR : FETCH_ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		if (strstr(t->errbuf, "too slow") != NULL)
			return FETCH_ERR_TOO_SLOW;
		return FETCH_ERR_TIMEOUT;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
		if (strstr(t->errbuf, "chunk") != NULL)
			return FETCH_ERR_BAD_RESPONSE;
		/* curl's own cap on a whole header block (300 KiB) */
		if (strstr(t->errbuf, "Too large response headers") != NULL)
			return FETCH_ERR_HEADER_TOO_LARGE;
		return FETCH_ERR_RECV;
	default: break;
	}
	for (size_t i = 0; i < sizeof(curl_errors) / sizeof(curl_errors[0]); i++)
		if (curl_errors[i].code == cc)
			return curl_errors[i].error;
	return FETCH_ERR_CURL;
}

static void transfer_unlink(struct fetch_engine *e, struct transfer *t)
{
	DLIST_UNLINK(e->head, t);
}

/* A handle in its default state: a spare one reset, else a new one. */
static CURL *easy_take(struct fetch_engine *e)
{
	if (e->nspare_easy == 0)
		return curl_easy_init();
	CURL *c = e->spare_easy[--e->nspare_easy];
	curl_easy_reset(c);
	return c;
}

/* Keeps a handle removed from the multi for the next transfer. */
static void easy_give(struct fetch_engine *e, CURL *c)
{
	CURL **grown = e->destroying ? NULL
	                             : array_grow(e->spare_easy, &e->spare_easy_cap, e->nspare_easy,
	                                          sizeof(*grown), 64);
	if (grown == NULL) {
		curl_easy_cleanup(c);
		return;
	}
	e->spare_easy = grown;
	e->spare_easy[e->nspare_easy++] = c;
}

static void transfer_free(struct transfer *t)
{
	if (t == NULL)
		return;
	curl_easy_cleanup(t->easy); /* NULL: returns at once (libcurl) */
	curl_slist_free_all(t->resolve);
	curl_slist_free_all(t->headers);
	fetch_result_free(t->res);
	free(t);
}

/* Fills the result, detaches the transfer and hands the result over. */
static void transfer_finish(struct fetch_engine *e, struct transfer *t, CURLcode cc, bool cancelled)
{
	struct fetch_result *r = t->res;
	char *ip = NULL;
	r->error = cancelled ? FETCH_ERR_CANCELLED : map_curl_error(t, cc);
	if (cc != CURLE_OK && r->error != FETCH_OK)
		snprintf(r->error_detail, sizeof(r->error_detail), "%s",
		         t->errbuf[0] ? t->errbuf : curl_easy_strerror(cc));
	curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &r->status);
	long version = 0;
	if (curl_easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &version) == CURLE_OK)
		r->http2 = version == CURL_HTTP_VERSION_2_0;
	if (curl_easy_getinfo(t->easy, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip != NULL)
		snprintf(r->ip, sizeof(r->ip), "%s", ip);
	fetch_headers_read(r, time(NULL));
	r->end_unix_ms = wall_clock_unix_ms();
	r->total_ms = (uv_hrtime() - t->start_hr) / 1000000u;
	if (r->error == FETCH_OK)
		e->stats.completed++;
	else
		e->stats.failed++;
	if (r->truncated)
		e->stats.truncated++;
	e->stats.bytes += r->body.len;

	curl_multi_remove_handle(e->multi, t->easy);
	easy_give(e, t->easy);
	t->easy = NULL;
	transfer_unlink(e, t);
	e->in_flight--;
	t->res = NULL;
	transfer_free(t);
	e->done(e->ctx, r);
}

static void check_multi_info(struct fetch_engine *e)
{
	CURLMsg *msg;
	int pending;
	while ((msg = curl_multi_info_read(e->multi, &pending)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		char *pv = NULL;
		CURL *easy = msg->easy_handle;
		CURLcode cc = msg->data.result;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, &pv);
		struct transfer *t = (struct transfer *)(void *)pv;
		if (t != NULL)
			transfer_finish(e, t, cc, false);
	}
}

/* Whether the engine takes req now: its address (parsed into addr) is one
 * it may connect to, and a connection is free. */
static enum fetch_error admit(const struct fetch_engine *e, const struct fetch_request *req,
                              struct ip_addr *addr)
{
	if (req->ip[0] == '[' || ip_addr_parse(req->ip, strlen(req->ip), addr) != 0)
		return FETCH_ERR_INVALID;
	if (!e->cfg.allow_private_networks && fetch_addr_is_private(req->ip))
		return FETCH_ERR_PRIVATE_ADDR;
	if (e->in_flight >= e->cfg.max_connections)
		return FETCH_ERR_BUSY;
	return FETCH_OK;
}

/* The URL's host (curl_free it), when the URL is one curl parses and its
 * scheme http or https. */
static enum fetch_error url_host(const char *url, char **host)
{
	enum fetch_error rc = FETCH_OK;
	char *scheme = NULL, *port = NULL;
	CURLU *u = curl_url();
	*host = NULL;
	if (u == NULL)
		return FETCH_ERR_NOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK)
		rc = FETCH_ERR_INVALID;
	else if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)
		rc = FETCH_ERR_PROTOCOL;
	if (rc != FETCH_OK) {
		curl_free(*host);
		*host = NULL;
	}
	curl_free(scheme);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

/* Appends "name: value" to *list unless value is NULL, empty or holds a
 * control byte (it would split the request). 0, or -1 out of memory. */
static int header_add(struct curl_slist **list, const char *name, const char *value)
{
	char line[512];
	if (value == NULL || value[0] == '\0')
		return 0;
	for (const unsigned char *p = (const unsigned char *)value; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	int n = snprintf(line, sizeof line, "%s: %s", name, value);
	if (n < 0 || (size_t)n >= sizeof line)
		return 0;
	struct curl_slist *l = curl_slist_append(*list, line);
	if (l == NULL)
		return -1;
	*list = l;
	return 0;
}

/* A transfer of req, with its result and an easy handle, not started.
 * CONNECT_TO "::IP:" ("::[IP]:" for IPv6) sends it, whatever its host and
 * port, to IP at the URL's port: curl only ever sees an address literal,
 * so it never resolves, and nothing accumulates in its DNS cache (as
 * permanent CURLOPT_RESOLVE entries would, one per host). One address,
 * not curl's happy eyeballs over both families: the caller holds that
 * address's politeness token. */
static enum fetch_error transfer_new(struct fetch_engine *e, const struct fetch_request *req,
                                     bool v6, struct transfer **out)
{
	char entry[512];
	struct transfer *t;
	*out = NULL;
	int n = snprintf(entry, sizeof(entry), v6 ? "::[%s]:" : "::%s:", req->ip);
	if (n < 0 || (size_t)n >= sizeof(entry))
		return FETCH_ERR_INVALID;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return FETCH_ERR_NOMEM;
	*out = t; /* the caller frees it, half made or whole */
	t->engine = e;
	t->res = calloc(1, sizeof(*t->res));
	t->easy = easy_take(e);
	t->resolve = curl_slist_append(NULL, entry);
	if (t->res == NULL || t->easy == NULL || t->resolve == NULL ||
	    header_add(&t->headers, "If-None-Match", req->if_none_match) != 0 ||
	    header_add(&t->headers, "If-Modified-Since", req->if_modified_since) != 0)
		return FETCH_ERR_NOMEM;
	t->res->url = strdup(req->url);
	if (t->res->url == NULL)
		return FETCH_ERR_NOMEM;
	t->res->user = req->user;
	t->res->flags = req->flags;
	t->opened_fd = CURL_SOCKET_BAD;
	snprintf(t->ip, sizeof(t->ip), "%s", req->ip);
	t->res->retry_after_s = -1;
	return FETCH_OK;
}

/* Sets t's easy handle up for req (host: the URL's, for the proxy rules). */
static CURLcode transfer_setopts(struct transfer *t, const struct fetch_request *req,
                                 const char *host, bool v6)
{
	struct fetch_engine *e = t->engine;
	CURL *c = t->easy;
	CURLcode cc = CURLE_OK;
	cc |= curl_easy_setopt(c, CURLOPT_URL, req->url);
	cc |= curl_easy_setopt(c, CURLOPT_PRIVATE, t);
	bool pin;
	const char *proxy = proxy_for(e->proxy, host, &pin);
	t->proxied = proxy != NULL;
	cc |= curl_easy_setopt(c, CURLOPT_CONNECT_TO, pin ? t->resolve : NULL);
	cc |= curl_easy_setopt(c, CURLOPT_PROXY, proxy ? proxy : "");
	cc |= curl_easy_setopt(c, CURLOPT_NOPROXY, "");
	/* Pinned, curl connects to our address's family; else to the proxy. */
	cc |= curl_easy_setopt(c, CURLOPT_IPRESOLVE,
	                       (long)(!pin ? CURL_IPRESOLVE_WHATEVER
	                              : v6 ? CURL_IPRESOLVE_V6
	                                   : CURL_IPRESOLVE_V4));
	cc |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cc |= curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	cc |= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	/* HTTP/2 when the server offers it by ALPN, else HTTP/1.1; plain
	 * http stays HTTP/1.1 (no h2c upgrade). */
	cc |= curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (!e->cfg.no_accept_encoding)
		cc |= curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip, deflate, br");
	cc |= curl_easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	cc |= curl_easy_setopt(c, CURLOPT_USERAGENT, e->user_agent);
	cc |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, t->headers);
	cc |= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, e->cfg.connect_timeout_ms);
	cc |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, e->cfg.total_timeout_ms);
	cc |= curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, e->cfg.low_speed_limit);
	cc |= curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, e->cfg.low_speed_time_s);
	cc |= curl_easy_setopt(c, CURLOPT_MAXAGE_CONN, e->cfg.max_conn_age_s);
	cc |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cc |= curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	cc |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	cc |= curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
	cc |= curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	cc |= curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
	cc |= curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, on_debug);
	cc |= curl_easy_setopt(c, CURLOPT_DEBUGDATA, t);
	cc |= curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
	cc |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, t->errbuf);
	cc |= curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, on_opensocket);
	cc |= curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, t);
	cc |= curl_easy_setopt(c, CURLOPT_CLOSESOCKETFUNCTION, on_closesocket);
	cc |= curl_easy_setopt(c, CURLOPT_CLOSESOCKETDATA, e);
	cc |= curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, e->cfg.verify_tls ? 1L : 0L);
	cc |= curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, e->cfg.verify_tls ? 2L : 0L);
	if (e->ca_file != NULL)
		cc |= curl_easy_setopt(c, CURLOPT_CAINFO, e->ca_file);
	if (req->flags & FETCH_FLAG_FRESH)
		cc |= curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
	if ((req->flags & FETCH_FLAG_NO_REUSE) || ip_at_cap(e, req->ip))
		cc |= curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
	return cc;
}

enum fetch_error fetch_engine_start(struct fetch_engine *e, const struct fetch_request *req)
{
	enum fetch_error rc;
	struct transfer *t = NULL;
	char *host = NULL;
	struct ip_addr addr;

	if (e == NULL || req == NULL || req->url == NULL || req->ip == NULL || e->destroying)
		return FETCH_ERR_INVALID;
	if ((rc = admit(e, req, &addr)) != FETCH_OK ||
	    (rc = url_host(req->url, &host)) != FETCH_OK ||
	    (rc = transfer_new(e, req, addr.family == IP_V6, &t)) != FETCH_OK)
		goto out;
	if (transfer_setopts(t, req, host, addr.family == IP_V6) != CURLE_OK) {
		rc = FETCH_ERR_INVALID;
		goto out;
	}
	t->start_hr = uv_hrtime();
	t->res->start_unix_ms = wall_clock_unix_ms();
	if (curl_multi_add_handle(e->multi, t->easy) != CURLM_OK) {
		rc = FETCH_ERR_NOMEM;
		goto out;
	}
	DLIST_PUSH(e->head, t);
	e->in_flight++;
	e->stats.started++;
	t = NULL;
out:
	if (rc != FETCH_OK)
		e->stats.refused++;
	transfer_free(t);
	curl_free(host);
	return rc;
}

size_t fetch_engine_in_flight(const struct fetch_engine *e)
{
	return e ? e->in_flight : 0;
}

void fetch_engine_stats(const struct fetch_engine *e, struct fetch_stats *out)
{
	*out = e->stats;
	out->conns_bytes = ip_conns_bytes(e->conns);
}

/* Fills in the defaults of the settings left at zero. */
static void engine_config_settle(struct fetch_config *c)
{
	if (c->max_connections == 0)
		c->max_connections = FETCH_DEFAULT_MAX_CONN;
	if (c->connect_timeout_ms <= 0)
		c->connect_timeout_ms = 10000;
	if (c->total_timeout_ms <= 0)
		c->total_timeout_ms = 60000;
	if (c->low_speed_limit <= 0)
		c->low_speed_limit = 64;
	if (c->low_speed_time_s <= 0)
		c->low_speed_time_s = 20;
	if (c->max_body_bytes == 0)
		c->max_body_bytes = 4u << 20;
	if (c->max_header_bytes == 0)
		c->max_header_bytes = 64u << 10;
	if (c->max_conn_age_s <= 0)
		c->max_conn_age_s = 118;
}

/* Hands curl's sockets and timer to the engine and sets the connection caps. */
static enum fetch_error engine_multi_setup(struct fetch_engine *e)
{
	CURLMcode mc = CURLM_OK;
	mc |= curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	mc |= curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	mc |= curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	mc |= curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	mc |= curl_multi_setopt(e->multi, CURLMOPT_MAXCONNECTS, (long)e->cfg.max_connections);
	/* HTTP/2 connections are reused, never multiplexed: one request at a
	 * time per connection, as over HTTP/1.1. */
	mc |= curl_multi_setopt(e->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
	mc |= curl_multi_setopt(e->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
	                        (long)e->cfg.max_connections);
	if (e->cfg.max_host_connections > 0)
		mc |= curl_multi_setopt(e->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
		                        e->cfg.max_host_connections);
	return mc == CURLM_OK ? FETCH_OK : FETCH_ERR_INVALID;
}

enum fetch_error fetch_engine_create(uv_loop_t *loop, const struct fetch_config *config,
                                     fetch_done_fn done, void *ctx, struct fetch_engine **out)
{
	enum fetch_error rc = FETCH_ERR_NOMEM;
	struct fetch_engine *e = NULL;

	if (out == NULL)
		return FETCH_ERR_INVALID;
	*out = NULL;
	if (loop == NULL || done == NULL)
		return FETCH_ERR_INVALID;
	if (curl_users == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return FETCH_ERR_NOMEM;
	curl_users++;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		goto out;
	e->loop = loop;
	e->done = done;
	e->ctx = ctx;
	if (config != NULL)
		e->cfg = *config;
	engine_config_settle(&e->cfg);
	e->user_agent = strdup(e->cfg.user_agent ? e->cfg.user_agent : "crawler/0.1");
	e->cfg.user_agent = NULL;
	if (e->cfg.ca_file != NULL && e->cfg.ca_file[0] != '\0') {
		e->ca_file = strdup(e->cfg.ca_file);
		if (e->ca_file == NULL)
			goto out;
	}
	e->cfg.ca_file = NULL;
	if (proxy_create(e->cfg.proxy, e->cfg.no_proxy, &e->proxy) != 0) {
		rc = FETCH_ERR_INVALID;
		goto out;
	}
	e->cfg.proxy = e->cfg.no_proxy = NULL;
	e->multi = curl_multi_init();
	e->conns = ip_conns_create();
	if (e->user_agent == NULL || e->multi == NULL || e->conns == NULL)
		goto out;
	rc = engine_multi_setup(e);
	if (rc == FETCH_OK && uv_timer_init(loop, &e->timer) != 0)
		rc = FETCH_ERR_NOMEM;
	if (rc == FETCH_OK) {
		e->timer.data = e;
		e->open_handles = 1;
		*out = e;
	}
out:
	if (rc != FETCH_OK) {
		if (e != NULL && e->multi != NULL)
			curl_multi_cleanup(e->multi);
		if (e != NULL) {
			ip_conns_destroy(e->conns);
			free(e->user_agent);
			free(e->ca_file);
			proxy_destroy(e->proxy);
		}
		free(e);
		if (--curl_users == 0)
			curl_global_cleanup();
	}
	return rc;
}

static void on_timer_closed(uv_handle_t *h)
{
	struct fetch_engine *e = h->data;
	e->open_handles--;
	if (e->open_handles == 0)
		free(e);
}

void fetch_engine_destroy(struct fetch_engine *e)
{
	if (e == NULL || e->destroying)
		return;
	/* destroying first: done callbacks of the cancelled transfers cannot
	 * start new ones (fetch_engine_start refuses), so the loop ends. */
	e->destroying = true;
	while (e->head != NULL)
		transfer_finish(e, e->head, CURLE_OK, true);
	uv_timer_stop(&e->timer);
	while (e->nspare_easy > 0)
		curl_easy_cleanup(e->spare_easy[--e->nspare_easy]);
	free(e->spare_easy);
	e->spare_easy = NULL;
	curl_multi_cleanup(e->multi);
	e->multi = NULL;
	ip_conns_destroy(e->conns); /* after curl closed its cached connections */
	e->conns = NULL;
	/* Sockets curl did not report removed before going away. */
	while (e->socks != NULL) {
		struct sock_ctx *sc = e->socks;
		sock_unlink(e, sc);
		uv_poll_stop(&sc->poll);
		uv_close((uv_handle_t *)&sc->poll, on_poll_closed);
	}
	free(e->user_agent);
	e->user_agent = NULL;
	free(e->ca_file);
	e->ca_file = NULL;
	proxy_destroy(e->proxy);
	e->proxy = NULL;
	if (--curl_users == 0)
		curl_global_cleanup();
	uv_close((uv_handle_t *)&e->timer, on_timer_closed);
}
