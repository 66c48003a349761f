/*
 * libuv HTTP/1.1 server, DNS responder, fault modes and request log of the
 * test web (see server.h). Single thread; every handle belongs to the loop.
 */
#include "tests/testweb/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#include <zlib.h>

#include <brotli/encode.h>

#define PATH_MAX_LEN 2048
#define HOST_MAX_LEN 256
#define CACHE_SLOTS (1u << 16)
#define ENDLESS_CHUNK 16384
#define SLOW_LEN 1000
#define RESET_TOTAL 100000
#define RESET_SENT 1000
#define PACE_TICKS_PER_S 100 /* a paced response is written in 10 ms chunks */

void tw_server_options_defaults(struct tw_server_options *so)
{
	memset(so, 0, sizeof *so);
	so->dns_port = 0;
	so->ttl = 60;
	so->latency_ms = 0;
	so->max_conns = 10000;
	so->max_request = 16384;
	so->idle_ms = 30000;
	so->cache_bytes = (size_t)256 << 20;
}

/* ---------- response cache ---------- */

/* One cached response. data = keep-alive headers followed by the body;
 * common_len = the header lines before the Connection line. Freed when the
 * last reference goes (the table holds one while the entry is cached).
 * The table chains colliding keys in their bucket (a direct-mapped table
 * made two pages sharing a slot evict each other on every visit, so a
 * share of a benchmark's requests regenerated their page); bytes never
 * exceed budget: a new entry that does not fit evicts its bucket's entries,
 * and is served uncached if it still does not fit. */
struct centry {
	struct centry *next; /* bucket chain, while cached */
	uint64_t hash;
	unsigned refs;
	long host;
	int gz;
	int status;
	char *path;
	char *data;
	size_t ka_len;     /* keep-alive header length */
	size_t common_len; /* header prefix shared with the close variant */
	size_t body_len;
	size_t cost;
	char etag[32]; /* validators of a 200 ("": none) */
	int64_t last_modified;
};

struct cache {
	struct centry *slot[CACHE_SLOTS];
	size_t bytes, budget;
};

static void centry_unref(struct centry *e)
{
	if (e == NULL || --e->refs > 0)
		return;
	free(e->path);
	free(e->data);
	free(e);
}

static uint64_t hash_key(long host, int gz, const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)(host * 2 + gz);
	for (size_t k = 0; k < n; k++)
		h = (h ^ (unsigned char)p[k]) * 1099511628211ULL;
	return h ^ (h >> 29);
}

/* ---------- server state ---------- */

struct listener {
	uv_tcp_t tcp;
	struct server *srv;
	char ip[16];
	unsigned open, max_open; /* connections open now, and at most at once */
};

struct conn;

struct server {
	uv_loop_t *loop;
	struct tw_config *cfg;
	const struct tw_server_options *so;
	struct listener *lis;
	int nlis;
	uv_udp_t dns[2]; /* 127.0.0.1, and ::1 with --ipv6 */
	int dns_open;    /* of dns[] initialized */
	int dns_port;
	uv_signal_t sigterm, sigint;
	uv_timer_t flush_timer;
	FILE *log;
	char *logbuf;
	unsigned nconns;
	uint64_t next_id;
	struct conn *conns;
	struct cache *cache;
	int stopping;
	char *endless_chunk; /* "4000\r\n" + 16 KiB + "\r\n" */
	size_t endless_len;
	char *huge_hdr;
	size_t huge_len;
	unsigned robots_flaky[TW_MAX_FAULTS]; /* robots.txt requests, per fault slot */
};

enum stream { ST_NONE, ST_SLOW, ST_ENDLESS, ST_RESET, ST_PACED };
enum tmode { TM_NONE, TM_IDLE, TM_LATENCY, TM_SLOW, TM_RESET, TM_SHAPE };

/* The server model's view of a connection's current request (models only). */
struct conn_model {
	int seen;              /* counted by tw_models_arrive: log its figures */
	int shaped;            /* admitted and shaped: latency, bandwidth */
	long admitted_host;    /* host to depart when the response ends, or -1 */
	struct tw_arrival arr; /* what the server saw and decided */
	uint64_t arrive_ns;    /* uv_hrtime when the request was parsed */
	uint64_t start_ns;     /* first byte allowed (arrival + latency) */
	size_t total, done;    /* bytes of c->out to write, written */
	size_t hdr_len;        /* leading bytes of c->out that are not body */
	uv_buf_t chunk[2];
};

struct conn {
	uv_tcp_t tcp;
	uv_timer_t timer;
	struct server *srv;
	struct conn *prev, *next;
	struct listener *lis;
	uint64_t id;
	int open_handles;
	int closing;
	int reading;
	int busy;
	int writing;
	int close_after;
	int eof;         /* client half-closed: answer what is buffered, then close */
	unsigned served; /* requests answered on this connection */
	enum stream stream;
	enum tmode tmode;
	char *buf;
	size_t len;
	size_t consumed;
	/* current request */
	char method[8];
	char host[HOST_MAX_LEN];
	char path[PATH_MAX_LEN + 1];
	int status;
	uint64_t t_us;
	uint64_t body_sent;
	uint64_t body_pending;
	struct centry *entry;
	uv_write_t wr;
	uv_buf_t out[2];
	unsigned nout;
	char hdr[1024];
	char byte;
	struct conn_model model;
	const char *cond; /* the request's conditional headers, for the log */
};

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void conn_close(struct conn *c);
static void conn_next(struct conn *c);
static void send_out(struct conn *c);

/* ---------- log ---------- */

/* Ends the request's model accounting; writes the three model columns. */
static void log_model_columns(struct conn *c)
{
	struct conn_model *cm = &c->model;
	struct server *s = c->srv;
	if (cm->admitted_host >= 0)
		tw_models_depart(s->so->models, cm->admitted_host);
	cm->admitted_host = -1;
	if (s->log == NULL)
		return;
	unsigned long long service_us = (uv_hrtime() - cm->arrive_ns) / 1000u;
	if (cm->seen)
		fprintf(s->log, "\t%u\t%u\t%llu", cm->arr.in_flight, cm->arr.rate_1s, service_us);
	else
		fprintf(s->log, "\t-\t-\t%llu", service_us);
}

/* Called once per request, when its response ended or was cut short. */
static void log_response(struct conn *c)
{
	struct server *s = c->srv;
	if (s->log != NULL)
		fprintf(s->log, "%llu\t%llu\t%s\t%s\t%s\t%s\t%d\t%llu", (unsigned long long)c->t_us,
		        (unsigned long long)c->id, c->host[0] ? c->host : "-", c->lis->ip,
		        c->method[0] ? c->method : "-", c->path[0] ? c->path : "-", c->status,
		        (unsigned long long)c->body_sent);
	if (s->so->models != NULL)
		log_model_columns(c);
	if (s->log != NULL)
		fprintf(s->log, "\t%s\n", c->cond ? c->cond : "-");
}

static void on_flush_timer(uv_timer_t *t)
{
	struct server *s = t->data;
	if (s->log != NULL)
		fflush(s->log);
}

/* ---------- connection lifecycle ---------- */

static void on_conn_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (--c->open_handles > 0)
		return;
	centry_unref(c->entry);
	free(c->buf);
	free(c);
}

static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->busy) {
		log_response(c);
		c->busy = 0;
	}
	struct server *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	c->lis->open--;
	uv_close((uv_handle_t *)&c->timer, on_conn_closed);
	uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void conn_reset(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	if (c->busy) {
		log_response(c);
		c->busy = 0;
	}
	struct server *s = c->srv;
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	c->lis->open--;
	uv_close((uv_handle_t *)&c->timer, on_conn_closed);
	if (uv_tcp_close_reset(&c->tcp, on_conn_closed) != 0)
		uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_timer(uv_timer_t *t);

static void timer_set(struct conn *c, enum tmode m, uint64_t ms, uint64_t repeat)
{
	c->tmode = m;
	uv_timer_start(&c->timer, on_timer, ms, repeat);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct conn *c = h->data;
	(void)suggested;
	size_t cap = c->srv->so->max_request;
	b->base = c->buf + c->len;
	b->len = cap - c->len;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
	struct conn *c = st->data;
	(void)b;
	if (n == UV_EOF && !c->closing) {
		/* Half-close: finish the buffered requests, then close. */
		c->eof = 1;
		uv_read_stop(st);
		c->reading = 0;
		if (!c->busy)
			conn_next(c);
		return;
	}
	if (n < 0) {
		conn_close(c);
		return;
	}
	if (n == 0)
		return;
	c->len += (size_t)n;
	if (c->len == c->srv->so->max_request) {
		uv_read_stop((uv_stream_t *)&c->tcp);
		c->reading = 0;
	}
	if (!c->busy)
		conn_next(c);
}

static void read_resume(struct conn *c)
{
	if (!c->reading && !c->closing && !c->eof && c->len < c->srv->so->max_request) {
		if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, on_read) == 0)
			c->reading = 1;
	}
}

/* ---------- responses ---------- */

static const char *reason(int st)
{
	switch (st) {
	case 200: return "OK";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 414: return "URI Too Long";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

/* A short text/plain response "ST REASON\n" built in c->hdr as c->out;
 * retry_after 0 = no Retry-After header. */
static void plain_build(struct conn *c, int st, unsigned retry_after)
{
	char retry[48] = "";
	if (retry_after > 0)
		snprintf(retry, sizeof retry, "Retry-After: %u\r\n", retry_after);
	size_t blen = strlen(reason(st)) + 5;
	int n = snprintf(c->hdr, sizeof c->hdr,
	                 "HTTP/1.1 %d %s\r\nServer: testweb\r\nContent-Type: text/plain\r\n"
	                 "%sContent-Length: %zu\r\nConnection: %s\r\n\r\n%d %s\n",
	                 st, reason(st), retry, blen, c->close_after ? "close" : "keep-alive", st,
	                 reason(st));
	c->status = st;
	c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
	c->nout = 1;
	c->body_pending = strcmp(c->method, "HEAD") == 0 ? 0 : blen;
	if (c->body_pending == 0)
		c->out[0].len -= (unsigned)blen;
}

/* An error response, connection closes. */
static void send_error(struct conn *c, int st)
{
	c->close_after = 1;
	plain_build(c, st, 0);
	send_out(c);
}

/* Level 1, nginx's default (gzip_comp_level): the test web shares the
 * client's cores, and level 6 made it spend more CPU compressing the
 * pages a crawler asks gzip for than serving all of them. */
static int gzip_buf(const char *in, size_t n, char **out, size_t *out_len)
{
	z_stream zs;
	memset(&zs, 0, sizeof zs);
	if (deflateInit2(&zs, 1, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	size_t cap = deflateBound(&zs, (uLong)n) + 32;
	char *o = malloc(cap);
	if (o == NULL) {
		deflateEnd(&zs);
		return -1;
	}
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)n;
	zs.next_out = (unsigned char *)o;
	zs.avail_out = (uInt)cap;
	int zr = deflate(&zs, Z_FINISH);
	*out_len = cap - zs.avail_out;
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(o);
		return -1;
	}
	*out = o;
	return 0;
}

static int br_buf(const char *in, size_t n, char **out, size_t *out_len)
{
	size_t cap = BrotliEncoderMaxCompressedSize(n);
	char *o = malloc(cap ? cap : 16);
	if (o == NULL)
		return -1;
	*out_len = cap ? cap : 16;
	if (!BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_TEXT, n,
	                           (const uint8_t *)in, out_len, (uint8_t *)o)) {
		free(o);
		return -1;
	}
	*out = o;
	return 0;
}

/* The chunked framing of in[0..n): chunks of at most 4096 bytes, then the
 * last chunk. */
static int chunk_buf(const char *in, size_t n, char **out, size_t *out_len)
{
	size_t cap = n + (n / 4096 + 1) * 16 + 8, at = 0;
	char *o = malloc(cap);
	if (o == NULL)
		return -1;
	for (size_t k = 0; k < n; k += 4096) {
		size_t len = n - k < 4096 ? n - k : 4096;
		at += (size_t)snprintf(o + at, cap - at, "%zx\r\n", len);
		memcpy(o + at, in + k, len);
		at += len;
		memcpy(o + at, "\r\n", 2);
		at += 2;
	}
	memcpy(o + at, "0\r\n\r\n", 5);
	*out = o;
	*out_len = at + 5;
	return 0;
}

/* Request Accept-Encoding bits (the cache key's gz). */
#define ENC_GZIP 1
#define ENC_BR 2

/* The coded body of a resource for the host's mode and the request's
 * Accept-Encoding bits: *coded (heap, or NULL when the body is sent as
 * is), its Content-Encoding name (or NULL) and whether it is chunked. */
static int body_code(const struct tw_resource *res, enum tw_fault f, int enc, char **coded,
                     size_t *len, const char **coding, int *chunked)
{
	char *tmp = NULL;
	size_t tlen = 0;
	*coded = NULL;
	*coding = NULL;
	*chunked = f == TW_FAULT_CHUNKED || (f == TW_FAULT_BR && res->gzip_ok);
	if (f == TW_FAULT_BR && (enc & ENC_BR) && res->status == 200) {
		if (br_buf(res->body, res->body_len, &tmp, &tlen) != 0)
			return -1;
		*coding = "br";
	} else if ((enc & ENC_GZIP) && res->gzip_ok && res->status == 200) {
		if (gzip_buf(res->body, res->body_len, &tmp, &tlen) != 0)
			return -1;
		*coding = "gzip";
	}
	if (*chunked) {
		int rc = chunk_buf(tmp ? tmp : res->body, tmp ? tlen : res->body_len, coded, len);
		free(tmp);
		return rc;
	}
	*coded = tmp;
	*len = tlen;
	return 0;
}

/* An IMF-fixdate ("Mon, 01 Jan 2024 00:00:00 GMT") of unix time t. */
static void http_date(int64_t t, char *out, size_t cap)
{
	static const char days[] = "SunMonTueWedThuFriSat", months[] = "JanFebMarAprMayJunJulAugSep"
	                                                               "OctNovDec";
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	snprintf(out, cap, "%.3s, %02d %.3s %04d %02d:%02d:%02d GMT", days + 3 * tm.tm_wday,
	         tm.tm_mday, months + 3 * tm.tm_mon, tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
	         tm.tm_sec);
}

/* An IMF-fixdate as unix time; -1 when it is not one. */
static int64_t http_date_parse(const char *v, size_t n)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char mon[4];
	int d, y, h, mi, sec, used = 0;
	char buf[64];
	if (n >= sizeof buf)
		return -1;
	memcpy(buf, v, n);
	buf[n] = '\0';
	if (sscanf(buf, "%*3s, %2d %3s %4d %2d:%2d:%2d GMT%n", &d, mon, &y, &h, &mi, &sec, &used) !=
	            6 ||
	    used != (int)n)
		return -1;
	const char *m = strstr(months, mon);
	if (m == NULL || (m - months) % 3 != 0)
		return -1;
	struct tm tm = { .tm_sec = sec,
		         .tm_min = mi,
		         .tm_hour = h,
		         .tm_mday = d,
		         .tm_mon = (int)((m - months) / 3),
		         .tm_year = y - 1900 };
	return (int64_t)timegm(&tm);
}

/* Builds a cache entry for (host, path, enc); NULL on allocation failure. */
static struct centry *entry_build(struct server *s, long host, const char *path, int want_gz)
{
	struct tw_resource res;
	struct centry *e = NULL;
	char hdr[1024], framing[48], validators[128] = "";
	char *gzbody = NULL;
	size_t gzlen = 0;
	const char *coding = NULL;
	int chunked = 0;
	if (tw_resource_get(s->cfg, host, path, strlen(path), &res, NULL, 0, NULL) != 0)
		return NULL;
	enum tw_fault f = host >= 0 ? tw_host_fault(s->cfg, host) : TW_FAULT_NONE;
	if (body_code(&res, f, want_gz, &gzbody, &gzlen, &coding, &chunked) != 0)
		goto out;
	const char *body = gzbody ? gzbody : res.body;
	size_t blen = gzbody ? gzlen : res.body_len;
	if (chunked)
		snprintf(framing, sizeof framing, "Transfer-Encoding: chunked\r\n");
	else
		snprintf(framing, sizeof framing, "Content-Length: %zu\r\n", blen);
	if (res.etag[0] != '\0') {
		char lm[40];
		http_date(res.last_modified, lm, sizeof lm);
		snprintf(validators, sizeof validators, "ETag: %s\r\nLast-Modified: %s\r\n",
		         res.etag, lm);
	}
	int n = snprintf(hdr, sizeof hdr,
	                 "HTTP/1.1 %d %s\r\nServer: testweb\r\nContent-Type: %s\r\n"
	                 "%s%s%s%s%s%s%s%s%s",
	                 res.status, reason(res.status), res.content_type, validators, framing,
	                 coding ? "Content-Encoding: " : "", coding ? coding : "",
	                 coding ? "\r\n" : "", res.gzip_ok ? "Vary: Accept-Encoding\r\n" : "",
	                 res.location[0] ? "Location: " : "", res.location,
	                 res.location[0] ? "\r\n" : "");
	if (n < 0 || (size_t)n + 32 >= sizeof hdr)
		goto out;
	size_t common = (size_t)n;
	static const char ka[] = "Connection: keep-alive\r\n\r\n";
	e = calloc(1, sizeof *e);
	if (e == NULL)
		goto out;
	e->path = strdup(path);
	e->data = malloc(common + sizeof ka - 1 + blen);
	if (e->path == NULL || e->data == NULL) {
		free(e->path);
		free(e->data);
		free(e);
		e = NULL;
		goto out;
	}
	memcpy(e->data, hdr, common);
	memcpy(e->data + common, ka, sizeof ka - 1);
	memcpy(e->data + common + sizeof ka - 1, body, blen);
	e->refs = 1;
	e->host = host;
	e->gz = want_gz;
	e->status = res.status;
	e->common_len = common;
	e->ka_len = common + sizeof ka - 1;
	e->body_len = blen;
	e->cost = e->ka_len + blen + strlen(path) + sizeof *e;
	snprintf(e->etag, sizeof e->etag, "%s", res.etag);
	e->last_modified = res.last_modified;
out:
	free(gzbody);
	tw_resource_clear(&res);
	return e;
}

/* Returns a referenced entry (caller unrefs) or NULL. */
static struct centry *cache_get(struct server *s, long host, const char *path, int gz)
{
	struct cache *ca = s->cache;
	size_t pl = strlen(path);
	uint64_t h = hash_key(host, gz, path, pl);
	struct centry **bucket = &ca->slot[h & (CACHE_SLOTS - 1)];
	for (struct centry *e = *bucket; e != NULL; e = e->next) {
		if (e->hash == h && e->host == host && e->gz == gz && strcmp(e->path, path) == 0) {
			e->refs++;
			return e;
		}
	}
	struct centry *e = entry_build(s, host, path, gz);
	if (e == NULL)
		return NULL;
	e->hash = h;
	while (ca->bytes + e->cost > ca->budget && *bucket != NULL) {
		struct centry *old = *bucket;
		*bucket = old->next;
		ca->bytes -= old->cost;
		centry_unref(old);
	}
	if (ca->bytes + e->cost <= ca->budget) {
		e->next = *bucket;
		*bucket = e;
		ca->bytes += e->cost;
		e->refs++;
	}
	return e;
}

static void send_entry(struct conn *c, struct centry *e, int head)
{
	c->entry = e;
	c->status = e->status;
	if (!c->close_after && !head) {
		c->out[0] = uv_buf_init(e->data, (unsigned)(e->ka_len + e->body_len));
		c->nout = 1;
		c->body_pending = e->body_len;
	} else {
		size_t cl = e->common_len;
		if (cl > sizeof c->hdr - 64)
			cl = sizeof c->hdr - 64;
		memcpy(c->hdr, e->data, cl);
		int n = snprintf(c->hdr + cl, sizeof c->hdr - cl, "Connection: %s\r\n\r\n",
		                 c->close_after ? "close" : "keep-alive");
		c->out[0] = uv_buf_init(c->hdr, (unsigned)(cl + (size_t)n));
		c->nout = 1;
		c->body_pending = 0;
		if (!head) {
			c->out[1] = uv_buf_init(e->data + e->ka_len, (unsigned)e->body_len);
			c->nout = 2;
			c->body_pending = e->body_len;
		}
	}
	send_out(c);
}

static void on_write(uv_write_t *w, int status);

static void write_bufs(struct conn *c, uv_buf_t *bufs, unsigned n)
{
	c->writing = 1;
	if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs, n, on_write) != 0) {
		c->writing = 0;
		conn_close(c);
	}
}

static void write_now(struct conn *c)
{
	write_bufs(c, c->out, c->nout);
}

/* ---------- server models: admission, latency, bandwidth ---------- */

/* Arms the connection's timer to fire at due_ns or just after: the loop's
 * clock is refreshed first, and the shaping step re-arms if it fired a
 * millisecond early, so a response never leaves before its time. */
static void shape_wait(struct conn *c, uint64_t due_ns, uint64_t now_ns)
{
	uv_update_time(c->srv->loop);
	timer_set(c, TM_SHAPE, (due_ns - now_ns + 999999u) / 1000000u, 0);
}

/* Writes the next chunk of c->out when its time has come: with bandwidth
 * B, the chunk ending at byte k leaves at start + k / B, so the response
 * is never faster than B; without, everything leaves at start. */
static void shape_step(struct conn *c)
{
	struct conn_model *cm = &c->model;
	uint64_t bw = cm->arr.bandwidth;
	size_t left = cm->total - cm->done;
	size_t n = left;
	uint64_t due = cm->start_ns;
	if (bw > 0) {
		size_t chunk = (size_t)(bw / PACE_TICKS_PER_S);
		n = chunk == 0 ? 1 : chunk < left ? chunk : left;
		due += (uint64_t)((double)(cm->done + n) * 1e9 / (double)bw);
	}
	uint64_t now = uv_hrtime();
	if (now < due) {
		shape_wait(c, due, now);
		return;
	}
	if (bw == 0) {
		cm->done = cm->total;
		write_now(c);
		return;
	}
	/* The chunk [done, done + n) of the bytes of c->out. */
	unsigned nb = 0;
	size_t off = cm->done, want = n;
	for (unsigned k = 0; k < c->nout && want > 0; k++) {
		if (off >= c->out[k].len) {
			off -= c->out[k].len;
			continue;
		}
		size_t take = c->out[k].len - off < want ? c->out[k].len - off : want;
		cm->chunk[nb++] = uv_buf_init(c->out[k].base + off, (unsigned)take);
		want -= take;
		off = 0;
	}
	size_t body_from = cm->done > cm->hdr_len ? cm->done : cm->hdr_len;
	c->body_pending = cm->done + n > body_from ? cm->done + n - body_from : 0;
	cm->done += n;
	write_bufs(c, cm->chunk, nb);
}

/* Starts an admitted response: c->out ready, body_pending its body bytes. */
static void shape_start(struct conn *c)
{
	struct conn_model *cm = &c->model;
	uint64_t delay_us = cm->arr.delay_us + (uint64_t)c->srv->so->latency_ms * 1000u;
	cm->total = 0;
	for (unsigned k = 0; k < c->nout; k++)
		cm->total += c->out[k].len;
	cm->done = 0;
	cm->hdr_len = cm->total - (size_t)c->body_pending;
	cm->start_ns = cm->arrive_ns + delay_us * 1000u;
	if (cm->arr.bandwidth > 0)
		c->stream = ST_PACED;
	shape_step(c);
}

/* Counts a request of host idx; 0 = go on answering it, 1 = answered
 * already (beyond capacity, or out of memory). */
static int model_arrive(struct conn *c, long idx, int observe_only)
{
	struct conn_model *cm = &c->model;
	struct tw_models *m = c->srv->so->models;
	if (tw_models_arrive(m, idx, cm->arrive_ns / 1000u, observe_only, &cm->arr) != 0) {
		send_error(c, 503);
		return 1;
	}
	cm->seen = 1;
	if (cm->arr.reject_status != 0) {
		plain_build(c, cm->arr.reject_status, cm->arr.retry_after);
		write_now(c);
		return 1;
	}
	cm->admitted_host = idx;
	cm->shaped = !observe_only;
	return 0;
}

/* Send c->out, after the configured latency if any. */
static void send_out(struct conn *c)
{
	if (c->model.shaped) {
		shape_start(c);
		return;
	}
	unsigned lat = c->srv->so->latency_ms;
	if (lat > 0)
		timer_set(c, TM_LATENCY, lat, 0);
	else
		write_now(c);
}

static void finish_response(struct conn *c)
{
	log_response(c);
	c->busy = 0;
	c->stream = ST_NONE;
	centry_unref(c->entry);
	c->entry = NULL;
	if (c->close_after) {
		conn_close(c);
		return;
	}
	memmove(c->buf, c->buf + c->consumed, c->len - c->consumed);
	c->len -= c->consumed;
	c->consumed = 0;
	read_resume(c);
	conn_next(c);
}

static void endless_next(struct conn *c)
{
	struct server *s = c->srv;
	c->out[0] = uv_buf_init(s->endless_chunk, (unsigned)s->endless_len);
	c->nout = 1;
	c->body_pending = s->endless_len;
	write_now(c);
}

static void slow_tick(struct conn *c)
{
	if (c->writing)
		return;
	if (c->body_sent >= SLOW_LEN) {
		uv_timer_stop(&c->timer);
		finish_response(c);
		return;
	}
	tw_filler(c->body_sent, &c->byte, 1);
	c->out[0] = uv_buf_init(&c->byte, 1);
	c->nout = 1;
	c->body_pending = 1;
	write_now(c);
}

static void on_write(uv_write_t *w, int status)
{
	struct conn *c = w->data;
	c->writing = 0;
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c);
		return;
	}
	c->body_sent += c->body_pending;
	c->body_pending = 0;
	switch (c->stream) {
	case ST_ENDLESS: endless_next(c); return;
	case ST_SLOW:
		if (c->tmode != TM_SLOW)
			timer_set(c, TM_SLOW, 1000, 1000);
		if (c->body_sent >= SLOW_LEN) {
			uv_timer_stop(&c->timer);
			finish_response(c);
		}
		return;
	case ST_RESET: timer_set(c, TM_RESET, 50, 0); return;
	case ST_PACED:
		if (c->model.done < c->model.total)
			shape_step(c);
		else
			finish_response(c);
		return;
	case ST_NONE: finish_response(c); return;
	}
}

static void on_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	enum tmode m = c->tmode;
	if (m != TM_SLOW)
		c->tmode = TM_NONE;
	switch (m) {
	case TM_IDLE: conn_close(c); break;
	case TM_LATENCY: write_now(c); break;
	case TM_SLOW: slow_tick(c); break;
	case TM_RESET:
		log_response(c);
		c->busy = 0;
		conn_reset(c);
		break;
	case TM_SHAPE: shape_step(c); break;
	case TM_NONE: break;
	}
}

/* ---------- faults ---------- */

static void send_fault(struct conn *c, enum tw_fault f)
{
	struct server *s = c->srv;
	int n;
	c->close_after = 1;
	switch (f) {
	case TW_FAULT_SLOW:
		n = snprintf(c->hdr, sizeof c->hdr,
		             "HTTP/1.1 200 OK\r\nServer: testweb\r\nContent-Type: text/html\r\n"
		             "Content-Length: %d\r\nConnection: close\r\n\r\n",
		             SLOW_LEN);
		c->status = 200;
		c->stream = ST_SLOW;
		c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
		c->nout = 1;
		break;
	case TW_FAULT_ENDLESS:
		n = snprintf(c->hdr, sizeof c->hdr,
		             "HTTP/1.1 200 OK\r\nServer: testweb\r\nContent-Type: text/html\r\n"
		             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
		c->status = 200;
		c->stream = ST_ENDLESS;
		c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
		c->out[1] = uv_buf_init(s->endless_chunk, (unsigned)s->endless_len);
		c->nout = 2;
		c->body_pending = s->endless_len;
		break;
	case TW_FAULT_HUGEHEADERS:
		c->status = 200;
		c->out[0] = uv_buf_init(s->huge_hdr, (unsigned)s->huge_len);
		n = snprintf(c->hdr, sizeof c->hdr, "<html><body>huge headers</body></html>\n");
		c->out[1] = uv_buf_init(c->hdr, (unsigned)n);
		c->nout = 2;
		c->body_pending = (uint64_t)n;
		break;
	case TW_FAULT_GZIPBOMB: {
		size_t blen = 0;
		uint64_t infl = 0;
		const unsigned char *b = tw_gzip_bomb(&blen, &infl);
		if (b == NULL) {
			send_error(c, 503);
			return;
		}
		n = snprintf(c->hdr, sizeof c->hdr,
		             "HTTP/1.1 200 OK\r\nServer: testweb\r\nContent-Type: text/html\r\n"
		             "Content-Encoding: gzip\r\nContent-Length: %zu\r\nConnection: "
		             "close\r\n\r\n",
		             blen);
		c->status = 200;
		c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
		c->out[1] = uv_buf_init((char *)b, (unsigned)blen);
		c->nout = 2;
		c->body_pending = blen;
		break;
	}
	case TW_FAULT_BADCHUNK:
		n = snprintf(c->hdr, sizeof c->hdr,
		             "HTTP/1.1 200 OK\r\nServer: testweb\r\nContent-Type: text/html\r\n"
		             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
		             "zz\r\nhello\r\n0\r\n\r\n");
		c->status = 200;
		c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
		c->nout = 1;
		c->body_pending = 16;
		break;
	case TW_FAULT_RESET: {
		n = snprintf(c->hdr, sizeof c->hdr,
		             "HTTP/1.1 200 OK\r\nServer: testweb\r\nContent-Type: text/html\r\n"
		             "Content-Length: %d\r\nConnection: close\r\n\r\n",
		             RESET_TOTAL);
		c->status = 200;
		c->stream = ST_RESET;
		c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
		c->out[1] = uv_buf_init(s->endless_chunk + 6, RESET_SENT);
		c->nout = 2;
		c->body_pending = RESET_SENT;
		break;
	}
	case TW_FAULT_429:
		c->close_after = 0;
		n = snprintf(c->hdr, sizeof c->hdr,
		             "HTTP/1.1 429 Too Many Requests\r\nServer: testweb\r\n"
		             "Content-Type: text/plain\r\nRetry-After: 30\r\nContent-Length: 18\r\n"
		             "Connection: keep-alive\r\n\r\n429 slow down now\n");
		c->status = 429;
		c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
		c->nout = 1;
		c->body_pending = 18;
		break;
	default: send_error(c, 500); return;
	}
	send_out(c);
}

/* ---------- request parsing ---------- */

static int is_tchar_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

/* Trim spaces; returns the value start and sets *vl. */
static const char *hdr_value(const char *v, const char *end, size_t *vl)
{
	while (v < end && is_tchar_space(*v))
		v++;
	while (end > v && is_tchar_space(end[-1]))
		end--;
	*vl = (size_t)(end - v);
	return v;
}

static int contains_token(const char *v, size_t vl, const char *tok)
{
	size_t tl = strlen(tok);
	for (size_t k = 0; k + tl <= vl; k++)
		if (strncasecmp(v + k, tok, tl) == 0)
			return 1;
	return 0;
}

static void set_host(struct conn *c, const char *h, size_t hl)
{
	/* Strip the port; lowercase. An IPv6 literal keeps its brackets. */
	const char *rb = hl > 0 && h[0] == '[' ? memchr(h, ']', hl) : NULL;
	const char *colon = memchr(h, ':', hl);
	if (rb != NULL)
		hl = (size_t)(rb - h) + 1;
	else if (colon != NULL)
		hl = (size_t)(colon - h);
	if (hl >= sizeof c->host)
		hl = sizeof c->host - 1;
	for (size_t k = 0; k < hl; k++) {
		char ch = h[k];
		c->host[k] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
		if ((unsigned char)ch < 0x21 || ch == '\t')
			c->host[k] = '_';
	}
	c->host[hl] = '\0';
}

static void set_path(struct conn *c, const char *p, size_t pl)
{
	for (size_t k = 0; k < pl; k++) {
		char ch = p[k];
		c->path[k] = ((unsigned char)ch < 0x21 || ch == 0x7f) ? '_' : ch;
	}
	c->path[pl] = '\0';
}

/* What the request's headers say. */
struct req_headers {
	int keep_alive_req, close_req, gz, has_body; /* gz: ENC_* bits */
	const char *inm, *ims; /* If-None-Match, If-Modified-Since values, or NULL */
	size_t inm_len, ims_len;
	int auth; /* an Authorization header: credentials a crawler must not send */
};

/* Reads the header lines from p to end (the blank line); the first Host
 * header sets c->host unless the target named it. -1 on a malformed line. */
static int parse_headers(struct conn *c, char *p, char *end, struct req_headers *h)
{
	int host_seen = 0;
	memset(h, 0, sizeof *h);
	while (p < end) {
		char *le = memchr(p, '\r', (size_t)(end - p) + 1);
		if (le == NULL)
			le = end;
		char *colon = memchr(p, ':', (size_t)(le - p));
		if (colon == NULL || colon == p)
			return -1;
		size_t nl = (size_t)(colon - p), vl = 0;
		const char *v = hdr_value(colon + 1, le, &vl);
		if (nl == 4 && strncasecmp(p, "host", 4) == 0) {
			if (!host_seen && c->host[0] == '\0')
				set_host(c, v, vl);
			host_seen = 1;
		} else if (nl == 10 && strncasecmp(p, "connection", 10) == 0) {
			if (contains_token(v, vl, "close"))
				h->close_req = 1;
			if (contains_token(v, vl, "keep-alive"))
				h->keep_alive_req = 1;
		} else if (nl == 15 && strncasecmp(p, "accept-encoding", 15) == 0) {
			h->gz = (contains_token(v, vl, "gzip") ? ENC_GZIP : 0) |
			        (contains_token(v, vl, "br") ? ENC_BR : 0);
		} else if (nl == 14 && strncasecmp(p, "content-length", 14) == 0) {
			if (!(vl == 1 && v[0] == '0'))
				h->has_body = 1;
		} else if (nl == 17 && strncasecmp(p, "transfer-encoding", 17) == 0) {
			h->has_body = 1;
		} else if (nl == 13 && strncasecmp(p, "if-none-match", 13) == 0) {
			h->inm = v;
			h->inm_len = vl;
		} else if (nl == 17 && strncasecmp(p, "if-modified-since", 17) == 0) {
			h->ims = v;
			h->ims_len = vl;
		} else if (nl == 13 && strncasecmp(p, "authorization", 13) == 0) {
			h->auth = 1;
		}
		p = le + 2;
	}
	return 0;
}

static void answer_request(struct conn *c, const struct req_headers *h, int head);

/* Parse and answer the next complete request in the buffer, if any. */
static void conn_next(struct conn *c)
{
	struct server *s = c->srv;
	if (c->busy || c->closing)
		return;
	uv_timer_stop(&c->timer);
	c->tmode = TM_NONE;
	if (s->stopping) {
		conn_close(c);
		return;
	}
	char *b = c->buf;
	size_t len = c->len;
	/* Tolerate empty lines between pipelined requests (RFC 9112 2.2). */
	size_t skip = 0;
	while (skip < len && (b[skip] == '\r' || b[skip] == '\n'))
		skip++;
	if (skip > 0) {
		memmove(b, b + skip, len - skip);
		c->len = len = len - skip;
	}
	char *end = NULL;
	for (size_t k = 0; k + 3 < len; k++) {
		if (b[k] == '\r' && b[k + 1] == '\n' && b[k + 2] == '\r' && b[k + 3] == '\n') {
			end = b + k;
			break;
		}
	}
	c->busy = 1;
	c->t_us = now_us();
	if (s->so->models != NULL) {
		memset(&c->model, 0, sizeof c->model);
		c->model.admitted_host = -1;
		c->model.arrive_ns = uv_hrtime();
	}
	c->method[0] = c->host[0] = c->path[0] = '\0';
	c->body_sent = 0;
	c->body_pending = 0;
	c->status = 0;
	c->stream = ST_NONE;
	c->cond = NULL;
	if (end == NULL) {
		c->busy = 0;
		if (len >= s->so->max_request) {
			c->busy = 1;
			c->consumed = len;
			send_error(c, 431);
			return;
		}
		if (c->eof) {
			conn_close(c);
			return;
		}
		read_resume(c);
		timer_set(c, TM_IDLE, s->so->idle_ms, 0);
		return;
	}
	c->consumed = (size_t)(end - b) + 4;
	c->close_after = 0;

	/* Request line. */
	char *line_end = memchr(b, '\r', (size_t)(end - b) + 1);
	char *sp1 = memchr(b, ' ', (size_t)(line_end - b));
	char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
	if (sp1 == NULL || sp2 == NULL || sp1 == b || sp2 == sp1 + 1) {
		send_error(c, 400);
		return;
	}
	size_t ml = (size_t)(sp1 - b);
	if (ml >= sizeof c->method)
		ml = sizeof c->method - 1;
	memcpy(c->method, b, ml);
	c->method[ml] = '\0';
	for (size_t k = 0; k < ml; k++)
		if ((unsigned char)c->method[k] < 0x21)
			c->method[k] = '_';
	const char *ver = sp2 + 1;
	size_t verl = (size_t)(line_end - ver);
	int http10;
	if (verl == 8 && memcmp(ver, "HTTP/1.1", 8) == 0)
		http10 = 0;
	else if (verl == 8 && memcmp(ver, "HTTP/1.0", 8) == 0)
		http10 = 1;
	else {
		send_error(c, 400);
		return;
	}
	const char *tgt = sp1 + 1;
	size_t tl = (size_t)(sp2 - tgt);
	if (tl > 7 && strncasecmp(tgt, "http://", 7) == 0) {
		const char *h = tgt + 7;
		const char *slash = memchr(h, '/', tl - 7);
		size_t hl = slash ? (size_t)(slash - h) : tl - 7;
		set_host(c, h, hl);
		tgt = slash ? slash : "/";
		tl = slash ? (size_t)(sp2 - slash) : 1;
	} else if (tl == 0 || tgt[0] != '/') {
		send_error(c, 400);
		return;
	}
	if (tl > PATH_MAX_LEN) {
		set_path(c, tgt, PATH_MAX_LEN);
		send_error(c, 414);
		return;
	}
	set_path(c, tgt, tl);

	struct req_headers h;
	if (parse_headers(c, line_end + 2, end, &h) != 0) {
		send_error(c, 400);
		return;
	}
	c->close_after = h.close_req || (http10 && !h.keep_alive_req);
	if (h.has_body) {
		send_error(c, 400);
		return;
	}
	if (h.auth) { /* no page of the test web asks for credentials */
		send_error(c, 401);
		return;
	}
	int head = strcmp(c->method, "HEAD") == 0;
	if (!head && strcmp(c->method, "GET") != 0) {
		send_error(c, 405);
		return;
	}
	c->cond = h.inm && h.ims ? "inm,ims" : h.inm ? "inm" : h.ims ? "ims" : NULL;
	answer_request(c, &h, head);
}

/* robotsflaky: whether this request of host idx's robots.txt fails (the
 * first TW_FLAKY_ROBOTS_FAILS do). */
static int robots_flaky_fails(struct server *s, long idx)
{
	for (int k = 0; k < s->cfg->nfaults; k++)
		if (s->cfg->fault_host[k] == idx)
			return s->robots_flaky[k]++ < TW_FLAKY_ROBOTS_FAILS;
	return 0;
}

/* The robots.txt of a host whose robots.txt cannot be had (robotszstd,
 * robotsbadgzip, robotsutf8, robots429, robotsnx): 1 when answered. */
static int send_robots_fault(struct conn *c, enum tw_fault f)
{
	static const char zstd[] = "\x28\xb5\x2f\xfd garbage, not a frame";
	static const char badgz[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not deflate";
	static const char text[] = "User-agent: *\nDisallow: /\n";
	const char *coding, *body;
	size_t blen;
	switch (f) {
	case TW_FAULT_ROBOTSZSTD: coding = "zstd", body = zstd, blen = sizeof zstd - 1; break;
	case TW_FAULT_ROBOTSBADGZIP: coding = "gzip", body = badgz, blen = sizeof badgz - 1; break;
	case TW_FAULT_ROBOTSUTF8: coding = "utf-8", body = text, blen = sizeof text - 1; break;
	case TW_FAULT_ROBOTS429:
		c->close_after = 0;
		plain_build(c, 429, 1);
		send_out(c);
		return 1;
	case TW_FAULT_ROBOTSNX: {
		/* nx.hI.D: a name the DNS answers NXDOMAIN */
		int n = snprintf(c->hdr, sizeof c->hdr,
		                 "HTTP/1.1 301 Moved Permanently\r\nServer: testweb\r\n"
		                 "Location: http://nx.%s/robots.txt\r\nContent-Length: 0\r\n"
		                 "Connection: keep-alive\r\n\r\n",
		                 c->host);
		c->close_after = 0;
		c->status = 301;
		c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
		c->nout = 1;
		c->body_pending = 0;
		send_out(c);
		return 1;
	}
	default: return 0;
	}
	int n = snprintf(c->hdr, sizeof c->hdr,
	                 "HTTP/1.1 200 OK\r\nServer: testweb\r\nContent-Type: text/plain\r\n"
	                 "Content-Encoding: %s\r\nContent-Length: %zu\r\n"
	                 "Connection: keep-alive\r\n\r\n",
	                 coding, blen);
	memcpy(c->hdr + n, body, blen);
	c->close_after = 0;
	c->status = 200;
	c->out[0] = uv_buf_init(c->hdr, (unsigned)(n + (int)blen));
	c->nout = 1;
	c->body_pending = blen;
	if (strcmp(c->method, "HEAD") == 0) {
		c->out[0].len -= (unsigned)blen;
		c->body_pending = 0;
	}
	send_out(c);
	return 1;
}

/* Whether the request's validators match entry e (RFC 9110 13.1.2 and
 * 13.1.3): If-None-Match, when sent, decides alone (weak comparison, "*"
 * matches); else If-Modified-Since, when it is a date, at or after e's
 * Last-Modified. */
static int not_modified(const struct req_headers *h, const struct centry *e)
{
	if (e->status != 200 || e->etag[0] == '\0')
		return 0;
	if (h->inm != NULL) {
		const char *tag = strncmp(e->etag, "W/", 2) == 0 ? e->etag + 2 : e->etag;
		size_t tl = strlen(tag);
		const char *p = h->inm, *end = h->inm + h->inm_len;
		while (p < end) {
			while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
				p++;
			const char *q = p;
			while (q < end && *q != ',')
				q++;
			size_t n = (size_t)(q - p);
			while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
				n--;
			if (n >= 2 && p[0] == 'W' && p[1] == '/')
				p += 2, n -= 2;
			if ((n == 1 && p[0] == '*') || (n == tl && memcmp(p, tag, tl) == 0))
				return 1;
			p = q;
		}
		return 0;
	}
	if (h->ims != NULL) {
		int64_t t = http_date_parse(h->ims, h->ims_len);
		return t >= 0 && e->last_modified <= t;
	}
	return 0;
}

/* 304 Not Modified for entry e (taken): its validators, no body. */
static void send_not_modified(struct conn *c, struct centry *e)
{
	char lm[40];
	http_date(e->last_modified, lm, sizeof lm);
	c->entry = e;
	c->status = 304;
	int n = snprintf(c->hdr, sizeof c->hdr,
	                 "HTTP/1.1 304 Not Modified\r\nServer: testweb\r\nETag: %s\r\n"
	                 "Last-Modified: %s\r\nConnection: %s\r\n\r\n",
	                 e->etag, lm, c->close_after ? "close" : "keep-alive");
	c->out[0] = uv_buf_init(c->hdr, (unsigned)n);
	c->nout = 1;
	c->body_pending = 0;
	send_out(c);
}

/* Whether a host of fault f answers its pages (not robots.txt) as the
 * generator makes them, its fault lying elsewhere. */
static int fault_pages_normal(enum tw_fault f)
{
	switch (f) {
	case TW_FAULT_SLOW:
	case TW_FAULT_ENDLESS:
	case TW_FAULT_HUGEHEADERS:
	case TW_FAULT_GZIPBOMB:
	case TW_FAULT_BADCHUNK:
	case TW_FAULT_RESET:
	case TW_FAULT_429: return 0;
	default: return 1;
	}
}

/* Answers a parsed GET or HEAD: model, fault or the generated resource. */
static void answer_request(struct conn *c, const struct req_headers *h, int head)
{
	int gz = h->gz;
	struct server *s = c->srv;
	if (c->host[0] == '\0') {
		send_error(c, 400);
		return;
	}
	long idx = -1;
	if (tw_host_parse(s->cfg, c->host, strlen(c->host), &idx) != 0)
		idx = -1;
	if (idx >= 0) {
		enum tw_fault f = tw_host_fault(s->cfg, idx);
		int robots = strcmp(c->path, "/robots.txt") == 0;
		int fault = !fault_pages_normal(f) && !robots;
		if (f == TW_FAULT_KACLOSE && c->served > 0) {
			conn_close(c); /* logged with status 0 */
			return;
		}
		if (f == TW_FAULT_ROBOTSFLAKY && robots && robots_flaky_fails(s, idx)) {
			send_error(c, 503);
			return;
		}
		if (robots && send_robots_fault(c, f))
			return;
		if (s->so->models != NULL && model_arrive(c, idx, fault) != 0)
			return;
		if (fault) {
			send_fault(c, f);
			return;
		}
	}
	c->served++;
	struct centry *e = cache_get(s, idx, c->path, gz);
	if (e == NULL) {
		send_error(c, 503);
		return;
	}
	if (not_modified(h, e)) {
		send_not_modified(c, e);
		return;
	}
	send_entry(c, e, head);
}

/* ---------- accept ---------- */

static void on_reject_closed(uv_handle_t *h)
{
	free(h);
}

static void on_connection(uv_stream_t *ls, int status)
{
	struct listener *l = ls->data;
	struct server *s = l->srv;
	if (status < 0)
		return;
	if (s->nconns >= s->so->max_conns || s->stopping) {
		uv_tcp_t *t = malloc(sizeof *t);
		if (t == NULL)
			return;
		uv_tcp_init(s->loop, t);
		if (uv_accept(ls, (uv_stream_t *)t) != 0) {
			uv_close((uv_handle_t *)t, on_reject_closed);
			return;
		}
		uv_close((uv_handle_t *)t, on_reject_closed);
		return;
	}
	struct conn *c = calloc(1, sizeof *c);
	if (c == NULL)
		return;
	c->buf = malloc(s->so->max_request);
	if (c->buf == NULL) {
		free(c);
		return;
	}
	c->srv = s;
	c->lis = l;
	c->id = ++s->next_id;
	uv_tcp_init(s->loop, &c->tcp);
	uv_timer_init(s->loop, &c->timer);
	c->tcp.data = c;
	c->timer.data = c;
	c->wr.data = c;
	c->open_handles = 2;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	if (++l->open > l->max_open)
		l->max_open = l->open;
	if (uv_accept(ls, (uv_stream_t *)&c->tcp) != 0) {
		conn_close(c);
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	read_resume(c);
	timer_set(c, TM_IDLE, s->so->idle_ms, 0);
}

/* ---------- DNS ---------- */

static void on_dns_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	static char buf[2048];
	(void)h;
	(void)suggested;
	b->base = buf;
	b->len = sizeof buf;
}

/* An answer record for the question's name (a pointer to it) of type (1:
 * A, 28: AAAA) holding addr (len bytes); returns its length. */
static size_t dns_put_rr(unsigned char *p, unsigned type, uint32_t ttl, const unsigned char *addr,
                         size_t len)
{
	unsigned char head[12] = { 0xc0,
		                   0x0c,
		                   0,
		                   (unsigned char)type,
		                   0,
		                   1,
		                   (unsigned char)(ttl >> 24),
		                   (unsigned char)(ttl >> 16),
		                   (unsigned char)(ttl >> 8),
		                   (unsigned char)ttl,
		                   0,
		                   (unsigned char)len };
	memcpy(p, head, sizeof head);
	memcpy(p + sizeof head, addr, len);
	return sizeof head + len;
}

/* Builds the answer to query q (n bytes) in out (cap >= 600); returns its
 * length or 0 to drop the packet. */
static size_t dns_answer(struct server *s, const unsigned char *q, size_t n, unsigned char *out,
                         size_t cap)
{
	if (n < 12 || (q[2] & 0x80))
		return 0; /* too short, or a response */
	unsigned opcode = (q[2] >> 3) & 0xf;
	unsigned qd = (unsigned)(q[4] << 8 | q[5]);
	int rcode = 0;
	size_t pos = 12, qend = 0;
	char name[256];
	size_t nl = 0;
	unsigned qtype = 0, qclass = 0;
	if (opcode != 0) {
		rcode = 4; /* NOTIMP */
	} else if (qd != 1) {
		rcode = 1; /* FORMERR */
	} else {
		for (;;) {
			if (pos >= n) {
				rcode = 1;
				break;
			}
			unsigned ll = q[pos];
			if (ll == 0) {
				pos++;
				break;
			}
			if ((ll & 0xc0) != 0 || pos + 1 + ll > n || nl + ll + 1 >= sizeof name) {
				rcode = 1;
				break;
			}
			if (nl > 0)
				name[nl++] = '.';
			memcpy(name + nl, q + pos + 1, ll);
			nl += ll;
			pos += 1 + ll;
		}
		if (rcode == 0 && pos + 4 > n)
			rcode = 1;
		if (rcode == 0) {
			qtype = (unsigned)(q[pos] << 8 | q[pos + 1]);
			qclass = (unsigned)(q[pos + 2] << 8 | q[pos + 3]);
			qend = pos + 4;
		}
	}
	name[nl] = '\0';
	if (cap < 12 + (qend - 12) + 16)
		return 0;
	memcpy(out, q, 2);
	out[2] = (unsigned char)(0x80 | (q[2] & 0x79) | 0x04); /* QR, opcode, AA, RD */
	out[3] = 0;
	memset(out + 4, 0, 8);
	size_t o = 12;
	if (rcode != 0) {
		out[3] = (unsigned char)rcode;
		return o;
	}
	out[5] = 1;
	memcpy(out + 12, q + 12, qend - 12);
	o = qend;
	long idx = -1;
	if (tw_host_parse(s->cfg, name, nl, &idx) != 0) {
		out[3] = 3; /* NXDOMAIN */
		return o;
	}
	uint32_t a = tw_host_addr(s->cfg, idx);
	if (qclass == 1 && (qtype == 1 || qtype == 255) && a != 0) {
		unsigned char v4[4] = { (unsigned char)(a >> 24), (unsigned char)(a >> 16),
			                (unsigned char)(a >> 8), (unsigned char)a };
		o += dns_put_rr(out + o, 1, s->so->ttl, v4, sizeof v4);
		out[7]++;
	}
	if (qclass == 1 && (qtype == 28 || qtype == 255) &&
	    tw_host_stack(s->cfg, idx) != TW_STACK_V4) {
		unsigned char v6[16] = { [15] = 1 }; /* ::1 */
		o += dns_put_rr(out + o, 28, s->so->ttl, v6, sizeof v6);
		out[7]++;
	}
	return o;
}

static void on_dns_recv(uv_udp_t *h, ssize_t n, const uv_buf_t *b, const struct sockaddr *addr,
                        unsigned flags)
{
	struct server *s = h->data;
	unsigned char out[2048];
	(void)flags;
	if (n <= 0 || addr == NULL)
		return;
	size_t ol = dns_answer(s, (const unsigned char *)b->base, (size_t)n, out, sizeof out);
	if (ol == 0)
		return;
	uv_buf_t ob = uv_buf_init((char *)out, (unsigned)ol);
	(void)uv_udp_try_send(h, &ob, 1, addr);
}

/* ---------- setup and shutdown ---------- */

static void on_handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void on_signal(uv_signal_t *sig, int signum)
{
	struct server *s = sig->data;
	(void)signum;
	if (s->stopping)
		return;
	s->stopping = 1;
	for (int k = 0; k < s->nlis; k++)
		uv_close((uv_handle_t *)&s->lis[k].tcp, on_handle_closed);
	for (int k = 0; k < s->dns_open; k++)
		uv_close((uv_handle_t *)&s->dns[k], on_handle_closed);
	uv_close((uv_handle_t *)&s->sigterm, on_handle_closed);
	uv_close((uv_handle_t *)&s->sigint, on_handle_closed);
	uv_close((uv_handle_t *)&s->flush_timer, on_handle_closed);
	while (s->conns != NULL)
		conn_close(s->conns);
}

/* ip:port (an IPv4 or IPv6 literal) as a socket address; its length. */
static socklen_t sockaddr_of(const char *ip, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (strchr(ip, ':') != NULL) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, ip, &a6->sin6_addr);
		return sizeof *a6;
	}
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	a4->sin_family = AF_INET;
	a4->sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &a4->sin_addr);
	return sizeof *a4;
}

/* Bind a listening socket on ip:port; returns fd or -errno. */
static int bind_tcp(const char *ip, int port)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(ip, port, &ss);
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 4096) != 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Address of listener k (text, into buf of size bytes): the K host
 * addresses, then 127.0.0.1 (proxy use), then ::1 (--ipv6). */
static const char *listener_addr(int ips, int k, char *buf, size_t size)
{
	if (k == ips)
		snprintf(buf, size, "127.0.0.1");
	else if (k == ips + 1)
		snprintf(buf, size, "::1");
	else
		snprintf(buf, size, "127.0.1.%d", (1 + k) & 255);
	return buf;
}

/* Binds the same port on all n addresses; fds[] filled; returns port or -1. */
static int bind_all(int ips, int n, int port, int *fds)
{
	for (int attempt = 0; attempt < 50; attempt++) {
		int p = port, k;
		for (k = 0; k < n; k++) {
			char ip[16];
			int fd = bind_tcp(listener_addr(ips, k, ip, sizeof ip), p);
			if (fd < 0)
				break;
			fds[k] = fd;
			if (p == 0) {
				struct sockaddr_storage ss;
				socklen_t sl = sizeof ss;
				getsockname(fd, (struct sockaddr *)&ss, &sl);
				p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
			}
		}
		if (k == n)
			return p;
		for (int j = 0; j < k; j++)
			close(fds[j]);
		if (port != 0)
			break;
	}
	return -1;
}

/* The DNS responder on 127.0.0.1:port (0: ephemeral), and with --ipv6 on
 * [::1] at the same port; sets s->dns_port. 0, or -1 (said on stderr). */
static int dns_listen(struct server *s, uv_loop_t *loop, int port)
{
	const char *ips[2] = { "127.0.0.1", "::1" };
	int n = s->cfg->ipv6 ? 2 : 1;
	for (int k = 0; k < n; k++) {
		struct sockaddr_storage ss;
		sockaddr_of(ips[k], port, &ss);
		uv_udp_init(loop, &s->dns[k]);
		s->dns[k].data = s;
		s->dns_open++;
		if (uv_udp_bind(&s->dns[k], (struct sockaddr *)&ss, 0) != 0 ||
		    uv_udp_recv_start(&s->dns[k], on_dns_alloc, on_dns_recv) != 0) {
			fprintf(stderr, "testweb: cannot bind DNS on %s port %d\n", ips[k], port);
			return -1;
		}
		int sl = sizeof ss;
		uv_udp_getsockname(&s->dns[k], (struct sockaddr *)&ss, &sl);
		port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	s->dns_port = port;
	return 0;
}

static int write_ready(const char *file, int http_port, int dns_port)
{
	char tmp[4096];
	int n = snprintf(tmp, sizeof tmp, "%s.tmp", file);
	if (n < 0 || (size_t)n >= sizeof tmp)
		return -1;
	FILE *f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "http_port=%d\ndns_port=%d\npid=%ld\n", http_port, dns_port, (long)getpid());
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, file);
}

static int build_static(struct server *s)
{
	/* Endless chunk: "4000\r\n" + 16 KiB filler + "\r\n". */
	s->endless_len = 6 + ENDLESS_CHUNK + 2;
	s->endless_chunk = malloc(s->endless_len);
	if (s->endless_chunk == NULL)
		return -1;
	memcpy(s->endless_chunk, "4000\r\n", 6);
	tw_filler(42, s->endless_chunk + 6, ENDLESS_CHUNK);
	memcpy(s->endless_chunk + 6 + ENDLESS_CHUNK, "\r\n", 2);
	/* Huge headers: ~1 MiB of X-Filler lines. */
	size_t cap = (1u << 20) + 4096, pos = 0;
	s->huge_hdr = malloc(cap);
	if (s->huge_hdr == NULL)
		return -1;
	pos += (size_t)snprintf(s->huge_hdr, cap,
	                        "HTTP/1.1 200 OK\r\nServer: testweb\r\n"
	                        "Content-Type: text/html\r\n");
	char val[101];
	tw_filler(7, val, 100);
	for (size_t k = 0; k < 100; k++)
		if (val[k] == '\n')
			val[k] = ' ';
	val[100] = '\0';
	for (int k = 0; pos < (1u << 20); k++)
		pos += (size_t)snprintf(s->huge_hdr + pos, cap - pos, "X-Filler-%05d: %s\r\n", k,
		                        val);
	pos += (size_t)snprintf(s->huge_hdr + pos, cap - pos,
	                        "Content-Length: 39\r\nConnection: close\r\n\r\n");
	s->huge_len = pos;
	return 0;
}

/* The most connections each address had open at once (idle ones
 * included), for tests that bound them. */
static int conns_write(const char *file, const struct server *s)
{
	FILE *f = fopen(file, "w");
	if (f == NULL)
		return -1;
	for (int k = 0; k < s->nlis; k++)
		fprintf(f, "%s %u\n", s->lis[k].ip, s->lis[k].max_open);
	return fclose(f) == 0 ? 0 : -1;
}

int tw_server_run(struct tw_config *cfg, const struct tw_server_options *so)
{
	struct server s;
	uv_loop_t loop;
	int fds[252];
	int nl = cfg->ips + 1 + (cfg->ipv6 != 0);
	int rc = -1, loop_ok = 0;
	memset(&s, 0, sizeof s);
	s.cfg = cfg;
	s.so = so;
	s.loop = &loop;
	signal(SIGPIPE, SIG_IGN);

	s.cache = calloc(1, sizeof *s.cache);
	s.lis = calloc((size_t)nl, sizeof *s.lis);
	if (s.cache == NULL || s.lis == NULL || build_static(&s) != 0) {
		fprintf(stderr, "testweb: out of memory\n");
		goto out;
	}
	s.cache->budget = so->cache_bytes;
	if (so->log_file != NULL) {
		s.log = fopen(so->log_file, "w");
		if (s.log == NULL) {
			fprintf(stderr, "testweb: cannot open log %s: %s\n", so->log_file,
			        strerror(errno));
			goto out;
		}
		s.logbuf = malloc(1u << 20);
		if (s.logbuf != NULL)
			setvbuf(s.log, s.logbuf, _IOFBF, 1u << 20);
	}
	int port = bind_all(cfg->ips, nl, cfg->http_port, fds);
	if (port < 0) {
		fprintf(stderr,
		        "testweb: cannot bind port %d on 127.0.1.1-%d and 127.0.0.1%s: %s\n",
		        cfg->http_port, cfg->ips, cfg->ipv6 ? " and ::1" : "", strerror(errno));
		goto out;
	}
	cfg->http_port = port;
	if (uv_loop_init(&loop) != 0)
		goto out;
	loop_ok = 1;
	for (int k = 0; k < nl; k++) {
		struct listener *l = &s.lis[k];
		l->srv = &s;
		listener_addr(cfg->ips, k, l->ip, sizeof l->ip);
		uv_tcp_init(&loop, &l->tcp);
		l->tcp.data = l;
		s.nlis++;
		if (uv_tcp_open(&l->tcp, fds[k]) != 0 ||
		    uv_listen((uv_stream_t *)&l->tcp, 4096, on_connection) != 0) {
			fprintf(stderr, "testweb: cannot listen on %s\n", l->ip);
			for (int j = k + 1; j < nl; j++)
				close(fds[j]);
			goto out_close;
		}
	}
	s.dns_port = -1;
	if (so->dns_port >= 0 && dns_listen(&s, &loop, so->dns_port) != 0)
		goto out_close;
	uv_signal_init(&loop, &s.sigterm);
	uv_signal_init(&loop, &s.sigint);
	uv_timer_init(&loop, &s.flush_timer);
	s.sigterm.data = s.sigint.data = s.flush_timer.data = &s;
	uv_signal_start(&s.sigterm, on_signal, SIGTERM);
	uv_signal_start(&s.sigint, on_signal, SIGINT);
	uv_timer_start(&s.flush_timer, on_flush_timer, 100, 100);
	if (so->ready_file != NULL && write_ready(so->ready_file, port, s.dns_port) != 0) {
		fprintf(stderr, "testweb: cannot write %s\n", so->ready_file);
		on_signal(&s.sigterm, SIGTERM);
		uv_run(&loop, UV_RUN_DEFAULT);
		goto out;
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	rc = 0;
	goto out;
out_close:
	for (int k = 0; k < s.nlis; k++)
		uv_close((uv_handle_t *)&s.lis[k].tcp, on_handle_closed);
	for (int k = 0; k < s.dns_open; k++)
		uv_close((uv_handle_t *)&s.dns[k], on_handle_closed);
	uv_run(&loop, UV_RUN_DEFAULT);
out:
	if (so->conns_file != NULL && conns_write(so->conns_file, &s) != 0)
		rc = -1;
	if (loop_ok && uv_loop_close(&loop) != 0) {
		fprintf(stderr, "testweb: loop did not close cleanly\n");
		rc = -1;
	}
	if (s.log != NULL && fclose(s.log) != 0)
		rc = -1;
	free(s.logbuf);
	if (s.cache != NULL) {
		for (size_t k = 0; k < CACHE_SLOTS; k++) {
			while (s.cache->slot[k] != NULL) {
				struct centry *e = s.cache->slot[k];
				s.cache->slot[k] = e->next;
				centry_unref(e);
			}
		}
		free(s.cache);
	}
	free(s.lis);
	free(s.endless_chunk);
	free(s.huge_hdr);
	return rc;
}
