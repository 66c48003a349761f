/*
 * floors.c (bench_floors): the CPU per page of each piece of work a crawl
 * cannot avoid, each measured alone on the same requests the crawler made,
 * for tests/bench/floors.sh to set beside the crawler's own CPU per page.
 *
 *   bench_floors --port P --hosts-info FILE --requests FILE
 *                [--max-connections N] [--warc-level L] [--batch-mb M]
 *                [--rounds R] [--user-agent UA]
 *
 * --hosts-info is `testweb --hosts-info` (name TAB ip ...); --requests holds
 * one `host TAB path` a line (the crawler's requests, from the test web's
 * log). The floors:
 *
 *   fetch    a minimal libcurl multi client (socket API on one epoll set):
 *            each request once, one transfer at a time per host on a
 *            kept-alive connection (the crawler's politeness, delays at 0),
 *            up to --max-connections hosts at once, the crawler's request
 *            options (HTTP/1.1, Accept-Encoding, no decoding); bodies and
 *            headers are only counted. CPU of the whole pass.
 *   parse    libxml2's HTML push parser with no callbacks (parse/links.c's
 *            options and charset switch) over each 2xx HTML body, decoded.
 *   inflate  zlib (as crawler/net/decode.c) of the HTML bodies sent with a
 *            Content-Encoding: the crawler decodes them to parse them.
 *   deflate  libdeflate gzip at --warc-level of the two WARC records of each
 *            response, as crawler/store/warc.c writes them: the request record
 *            (WARC header + request headers) and the response record (WARC
 *            header + response headers + body), stored at level 0 when the
 *            payload is compressed already (crawl_run.c's rule).
 *   sha1     OpenSSL SHA-1, the three digests warc.c takes per response:
 *            the payload digest (body), the response record's block digest
 *            (headers + body) and the request record's block digest.
 *
 * The compute floors need the bodies: a second, untimed pass fetches the
 * requests again in batches of about --batch-mb of bodies, keeping them;
 * each batch is timed floor by floor (best of --rounds) and freed. Only the
 * library call is timed: gathering a record into one buffer, formatting
 * its WARC header and copying bodies are left out. Revisit records (a
 * payload seen before, headers only) are not modelled: every response is
 * compressed whole, which can only raise the deflate floor.
 *
 * CPU is getrusage(RUSAGE_SELF) user + sys; figures per page divide by the
 * 200 responses of the fetch pass (the crawler's figure divides by its
 * distinct 200 pages). The program is single-threaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <curl/curl.h>
#include <errno.h>
#include <libdeflate.h>
#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zlib.h>

#define USER_AGENT "crawler/0.1 (+mailto:CONTACT-ME@example.invalid)"
#define ACCEPT_ENCODING "gzip, deflate, br"

struct buf {
	char *p;
	size_t len, cap;
};

/* One request of the list; the fetch pass fills status and bytes. */
struct request {
	char *url;
	uint32_t host;
	int32_t next; /* next request of the same host in the current run, or -1 */
	long status;
	uint64_t body_bytes;
};

/* The kept response of a request in the current batch (second pass). */
struct response {
	struct buf head, body;
	struct buf decoded;    /* the parser's input when the body was encoded */
	struct buf req_record; /* WARC request record: header + request headers */
	struct buf resp_record;
	size_t req_headers_off, req_headers_len; /* inside req_record */
	bool html, encoded, incompressible;
	char charset[32];
};

struct client;

/* A host and its lane: one easy handle reused for its requests in turn. */
struct host {
	char *name;
	char ip[64];
	int32_t head, tail, cur;
	CURL *easy;
	struct curl_slist *resolve;
	struct client *cl;
};

struct bench {
	int port;
	long max_connections;
	int warc_level, rounds;
	size_t batch_bytes;
	const char *user_agent;
	struct host *hosts;
	size_t nhosts;
	uint32_t *slots; /* open-addressing table of host names: index + 1 */
	size_t nslots;
	struct request *reqs;
	size_t nreqs;
};

struct client {
	struct bench *b;
	CURLM *multi;
	int epfd;
	long timeout_ms;
	struct response *kept; /* second pass: indexed by request - first */
	size_t first;
	uint32_t *waiting; /* hosts with requests, not yet given a lane */
	size_t nwaiting, next_waiting, busy;
	uint64_t counted; /* first pass: header and body bytes seen */
	size_t failed;
};

/* CPU seconds of this process so far, user + sys; the sys part in *sys
 * when not NULL. */
static double cpu_seconds_sys(double *sys)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double s = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	if (sys)
		*sys = s;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + s;
}

static double cpu_seconds(void)
{
	return cpu_seconds_sys(NULL);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "bench_floors: out of memory\n");
		exit(1);
	}
	return p;
}

static void buf_add(struct buf *b, const void *data, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			fprintf(stderr, "bench_floors: out of memory\n");
			exit(1);
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void buf_free(struct buf *b)
{
	free(b->p);
	*b = (struct buf){ 0 };
}

/* ---------- hosts and requests ---------- */

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The index of host `name`, or -1. */
static long host_find(const struct bench *b, const char *name)
{
	for (size_t i = name_hash(name) & (b->nslots - 1);; i = (i + 1) & (b->nslots - 1)) {
		if (b->slots[i] == 0)
			return -1;
		if (strcmp(b->hosts[b->slots[i] - 1].name, name) == 0)
			return (long)b->slots[i] - 1;
	}
}

static int hosts_load(struct bench *b, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	size_t cap = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		char *save = NULL, *name = strtok_r(line, "\t\n", &save),
		     *ip = strtok_r(NULL, "\t\n", &save);
		if (!name || !ip)
			continue;
		if (b->nhosts == cap) {
			cap = cap ? cap * 2 : 1024;
			b->hosts = realloc(b->hosts, cap * sizeof *b->hosts);
			if (!b->hosts)
				exit(1);
		}
		struct host *h = &b->hosts[b->nhosts++];
		*h = (struct host){ .name = strdup(name), .head = -1, .tail = -1, .cur = -1 };
		snprintf(h->ip, sizeof h->ip, "%s", ip);
	}
	fclose(f);
	for (b->nslots = 16; b->nslots < 2 * b->nhosts; b->nslots *= 2)
		;
	b->slots = calloc(b->nslots, sizeof *b->slots);
	for (size_t k = 0; k < b->nhosts; k++) {
		size_t i = name_hash(b->hosts[k].name) & (b->nslots - 1);
		while (b->slots[i] != 0)
			i = (i + 1) & (b->nslots - 1);
		b->slots[i] = (uint32_t)k + 1;
	}
	return b->nhosts > 0 ? 0 : -1;
}

/* Requests on hosts missing from the host table are skipped (counted). */
static int requests_load(struct bench *b, const char *path, size_t *skipped)
{
	FILE *f = fopen(path, "r");
	char line[16384];
	size_t cap = 0;
	if (!f)
		return -1;
	*skipped = 0;
	while (fgets(line, sizeof line, f)) {
		char *save = NULL, *host = strtok_r(line, "\t\n", &save),
		     *target = strtok_r(NULL, "\t\n", &save);
		long h = host && target ? host_find(b, host) : -1;
		if (h < 0) {
			*skipped += host != NULL;
			continue;
		}
		if (b->nreqs == cap) {
			cap = cap ? cap * 2 : 65536;
			b->reqs = realloc(b->reqs, cap * sizeof *b->reqs);
			if (!b->reqs)
				exit(1);
		}
		size_t n = strlen(host) + strlen(target) + 32;
		struct request *r = &b->reqs[b->nreqs++];
		*r = (struct request){ .url = xmalloc(n), .host = (uint32_t)h, .next = -1 };
		snprintf(r->url, n, "http://%s:%d%s", host, b->port, target);
	}
	fclose(f);
	return b->nreqs > 0 ? 0 : -1;
}

/* ---------- the minimal client ---------- */

static size_t count_bytes(char *data, size_t size, size_t n, void *userp)
{
	struct host *h = userp;
	(void)data;
	h->cl->counted += size * n;
	return size * n;
}

static size_t keep_body(char *data, size_t size, size_t n, void *userp)
{
	struct host *h = userp;
	buf_add(&h->cl->kept[(size_t)h->cur - h->cl->first].body, data, size * n);
	return size * n;
}

static size_t keep_header(char *data, size_t size, size_t n, void *userp)
{
	struct host *h = userp;
	buf_add(&h->cl->kept[(size_t)h->cur - h->cl->first].head, data, size * n);
	return size * n;
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *clp, void *sockp)
{
	struct client *cl = clp;
	struct epoll_event ev = { 0 };
	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		/* the socket may be closed already, which removed it */
		epoll_ctl(cl->epfd, EPOLL_CTL_DEL, s, NULL);
		curl_multi_assign(cl->multi, s, NULL);
		return 0;
	}
	ev.data.fd = s;
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (sockp == NULL) {
		epoll_ctl(cl->epfd, EPOLL_CTL_ADD, s, &ev);
		curl_multi_assign(cl->multi, s, cl);
	} else {
		epoll_ctl(cl->epfd, EPOLL_CTL_MOD, s, &ev);
	}
	return 0;
}

static int on_timer(CURLM *multi, long timeout_ms, void *clp)
{
	struct client *cl = clp;
	(void)multi;
	cl->timeout_ms = timeout_ms;
	return 0;
}

/* Starts the host's current request on its easy handle. */
static void host_start(struct host *h)
{
	curl_easy_setopt(h->easy, CURLOPT_URL, h->cl->b->reqs[h->cur].url);
	curl_multi_add_handle(h->cl->multi, h->easy);
}

/* Gives the next waiting host a lane: an easy handle set up once. */
static void lane_open(struct client *cl)
{
	struct bench *b = cl->b;
	struct host *h = &b->hosts[cl->waiting[cl->next_waiting++]];
	char entry[512];
	bool keep = cl->kept != NULL;
	snprintf(entry, sizeof entry, "%s:%d:%s", h->name, b->port, h->ip);
	h->cl = cl;
	h->resolve = curl_slist_append(NULL, entry);
	h->easy = curl_easy_init();
	if (!h->easy || !h->resolve) {
		fprintf(stderr, "bench_floors: out of memory\n");
		exit(1);
	}
	CURL *c = h->easy;
	curl_easy_setopt(c, CURLOPT_PRIVATE, h);
	curl_easy_setopt(c, CURLOPT_RESOLVE, h->resolve);
	curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, ACCEPT_ENCODING);
	curl_easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, b->user_agent);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep ? keep_body : count_bytes);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, keep ? keep_header : count_bytes);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	h->cur = h->head;
	cl->busy++;
	host_start(h);
}

/* A transfer ended: the host's next request, or its lane to another host. */
static void transfer_done(struct client *cl, CURL *easy, CURLcode result)
{
	struct host *h;
	struct request *r;
	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&h);
	r = &cl->b->reqs[h->cur];
	if (result != CURLE_OK)
		cl->failed++;
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &r->status);
	curl_multi_remove_handle(cl->multi, easy);
	if (cl->kept == NULL) {
		curl_off_t n = 0;
		curl_easy_getinfo(easy, CURLINFO_SIZE_DOWNLOAD_T, &n);
		r->body_bytes = (uint64_t)n;
	}
	h->cur = r->next;
	if (h->cur >= 0) {
		host_start(h);
		return;
	}
	curl_easy_cleanup(h->easy);
	curl_slist_free_all(h->resolve);
	h->easy = NULL;
	h->resolve = NULL;
	h->head = h->tail = -1;
	cl->busy--;
	if (cl->next_waiting < cl->nwaiting)
		lane_open(cl);
}

static void event_loop(struct client *cl)
{
	struct epoll_event ev[256];
	int running;
	while (cl->busy > 0) {
		long t = cl->timeout_ms < 0 || cl->timeout_ms > 1000 ? 1000 : cl->timeout_ms;
		int n = epoll_wait(cl->epfd, ev, 256, (int)t);
		if (n < 0 && errno != EINTR) {
			perror("epoll_wait");
			exit(1);
		}
		if (n <= 0)
			curl_multi_socket_action(cl->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		for (int i = 0; i < n; i++) {
			int flags = (ev[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
			            (ev[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
			            (ev[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(cl->multi, ev[i].data.fd, flags, &running);
		}
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(cl->multi, &left)) != NULL)
			if (m->msg == CURLMSG_DONE)
				transfer_done(cl, m->easy_handle, m->data.result);
	}
}

/* Fetches requests [first, end) once; keeps the responses in `kept` when
 * not NULL (indexed by request - first), else only counts bytes. */
static void client_run(struct bench *b, size_t first, size_t end, struct response *kept,
                       uint64_t *counted, size_t *failed)
{
	struct client cl = { .b = b, .kept = kept, .first = first, .timeout_ms = -1 };
	cl.multi = curl_multi_init();
	cl.epfd = epoll_create1(EPOLL_CLOEXEC);
	cl.waiting = xmalloc(b->nhosts * sizeof *cl.waiting);
	if (!cl.multi || cl.epfd < 0) {
		fprintf(stderr, "bench_floors: cannot set up the client\n");
		exit(1);
	}
	curl_multi_setopt(cl.multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(cl.multi, CURLMOPT_SOCKETDATA, &cl);
	curl_multi_setopt(cl.multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(cl.multi, CURLMOPT_TIMERDATA, &cl);
	curl_multi_setopt(cl.multi, CURLMOPT_MAXCONNECTS, b->max_connections);
	curl_multi_setopt(cl.multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, b->max_connections);
	/* each host's requests in list order, hosts in order of first request */
	for (size_t i = first; i < end; i++) {
		struct host *h = &b->hosts[b->reqs[i].host];
		b->reqs[i].next = -1;
		if (h->head < 0) {
			h->head = (int32_t)i;
			cl.waiting[cl.nwaiting++] = b->reqs[i].host;
		} else {
			b->reqs[h->tail].next = (int32_t)i;
		}
		h->tail = (int32_t)i;
	}
	while (cl.next_waiting < cl.nwaiting && cl.busy < (size_t)b->max_connections)
		lane_open(&cl);
	event_loop(&cl);
	curl_multi_cleanup(cl.multi);
	close(cl.epfd);
	free(cl.waiting);
	*counted = cl.counted;
	*failed = cl.failed;
}

/* ---------- the responses as the crawler holds them ---------- */

/* Copies the value of header `name` of a response head into out ("" if
 * absent). */
static void header_value(const struct buf *head, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);
	const char *p = head->p, *end = head->p + head->len;
	out[0] = '\0';
	while (p && p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		if ((size_t)(line_end - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (v < line_end && (*v == ' ' || *v == '\t'))
				v++;
			size_t n = (size_t)(line_end - v);
			while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == ' '))
				n--;
			if (n >= cap)
				n = cap - 1;
			memcpy(out, v, n);
			out[n] = '\0';
			return;
		}
		p = eol ? eol + 1 : NULL;
	}
}

/* crawl_run.c's payload_compressed: such payloads are stored, not deflated. */
static bool payload_compressed(const char *ce, const char *ct)
{
	static const char *const types[] = {
		"image/jpeg",       "image/png",          "image/gif",
		"image/webp",       "image/avif",         "audio/",
		"video/",           "application/pdf",    "application/zip",
		"application/gzip", "application/x-gzip", "application/x-bzip2",
		"application/x-xz", "font/woff",
	};
	if (*ce && strcasecmp(ce, "identity") != 0)
		return true;
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strncasecmp(ct, types[i], strlen(types[i])) == 0)
			return true;
	return false;
}

/* zlib's inflate of a gzip or zlib body (decode.c's call) into out,
 * emptied first; false on a corrupt body. */
static bool inflate_body(const struct buf *in, struct buf *out)
{
	z_stream zs = { 0 };
	int z = Z_OK;
	out->len = 0;
	if (inflateInit2(&zs, 15 + 32) != Z_OK)
		return false;
	zs.next_in = (Bytef *)in->p;
	zs.avail_in = (uInt)in->len;
	while (z == Z_OK) {
		if (out->cap - out->len < 65536) {
			size_t cap = out->cap ? out->cap * 2 : 262144;
			char *p = realloc(out->p, cap);
			if (!p)
				exit(1);
			out->p = p;
			out->cap = cap;
		}
		zs.next_out = (Bytef *)out->p + out->len;
		zs.avail_out = (uInt)(out->cap - out->len);
		z = inflate(&zs, Z_NO_FLUSH);
		out->len = out->cap - zs.avail_out;
	}
	inflateEnd(&zs);
	return z == Z_STREAM_END;
}

/* Builds the WARC records of request r around its kept response k, the
 * way warc.c lays them out (header fields of the same lengths). */
static void records_build(const struct bench *b, const struct request *r, struct response *k)
{
	const char *path = strchr(r->url + 7, '/');
	const struct host *h = &b->hosts[r->host];
	const char *uuid = "<urn:uuid:00000000-0000-4000-8000-000000000000>";
	const char *sha = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
	char req[8192], hdr[4096];
	int rl = snprintf(req, sizeof req,
	                  "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: %s\r\nAccept: */*\r\n"
	                  "Accept-Encoding: %s\r\n\r\n",
	                  path, h->name, b->port, b->user_agent, ACCEPT_ENCODING);
	if (rl < 0 || (size_t)rl >= sizeof req)
		rl = 0;
	int hl = snprintf(hdr, sizeof hdr,
	                  "WARC/1.1\r\nWARC-Type: request\r\nWARC-Record-ID: %s\r\n"
	                  "WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: %s\r\n"
	                  "WARC-IP-Address: %s\r\nWARC-Concurrent-To: %s\r\n"
	                  "Content-Type: application/http; msgtype=request\r\n"
	                  "WARC-Block-Digest: %s\r\nContent-Length: %d\r\n\r\n",
	                  uuid, r->url, h->ip, uuid, sha, rl);
	buf_add(&k->req_record, hdr, (size_t)hl);
	k->req_headers_off = k->req_record.len;
	k->req_headers_len = (size_t)rl;
	buf_add(&k->req_record, req, (size_t)rl);
	buf_add(&k->req_record, "\r\n\r\n", 4);
	hl = snprintf(hdr, sizeof hdr,
	              "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: %s\r\n"
	              "WARC-Date: 2026-01-01T00:00:00Z\r\nWARC-Target-URI: %s\r\n"
	              "WARC-IP-Address: %s\r\nWARC-Concurrent-To: %s\r\n"
	              "WARC-Payload-Digest: %s\r\n"
	              "Content-Type: application/http; msgtype=response\r\n"
	              "WARC-Block-Digest: %s\r\nContent-Length: %zu\r\n\r\n",
	              uuid, r->url, h->ip, uuid, sha, sha, k->head.len + k->body.len);
	buf_add(&k->resp_record, hdr, (size_t)hl);
	buf_add(&k->resp_record, k->head.p, k->head.len);
	buf_add(&k->resp_record, k->body.p, k->body.len);
	buf_add(&k->resp_record, "\r\n\r\n", 4);
}

/* Classifies a kept response and builds what each floor reads. */
static void response_prepare(const struct bench *b, const struct request *r, struct response *k)
{
	char ct[256], ce[64];
	header_value(&k->head, "Content-Type", ct, sizeof ct);
	header_value(&k->head, "Content-Encoding", ce, sizeof ce);
	const char *t = ct;
	while (*t == ' ')
		t++;
	k->incompressible = payload_compressed(ce, t);
	k->html = r->status >= 200 && r->status < 300 && k->body.len > 0 &&
	          (strncasecmp(t, "text/html", 9) == 0 ||
	           strncasecmp(t, "application/xhtml+xml", 21) == 0);
	k->encoded = *ce && strcasecmp(ce, "identity") != 0;
	if (k->html && k->encoded && !inflate_body(&k->body, &k->decoded))
		k->html = false; /* not decodable by zlib (br): not parsed */
	const char *cs = strcasestr(ct, "charset=");
	if (cs) {
		cs += 8;
		size_t n = strcspn(cs, "; \"");
		if (n >= sizeof k->charset)
			n = sizeof k->charset - 1;
		memcpy(k->charset, cs, n);
		k->charset[n] = '\0';
	}
	records_build(b, r, k);
}

static void response_free(struct response *k)
{
	buf_free(&k->head);
	buf_free(&k->body);
	buf_free(&k->decoded);
	buf_free(&k->req_record);
	buf_free(&k->resp_record);
}

/* ---------- the compute floors, each over one batch ---------- */

struct floors {
	struct libdeflate_compressor *packer, *storer;
	EVP_MD *sha1;
	EVP_MD_CTX *md;
	struct buf out; /* deflate's output and inflate's, reused */
	int level;
};

static void floor_parse(struct floors *fl, struct response *kept, size_t n)
{
	(void)fl;
	for (size_t i = 0; i < n; i++) {
		struct response *k = &kept[i];
		if (!k->html)
			continue;
		const struct buf *in = k->encoded ? &k->decoded : &k->body;
		htmlSAXHandler sax;
		memset(&sax, 0, sizeof sax);
		htmlParserCtxtPtr ctxt =
		        htmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
		if (!ctxt)
			exit(1);
		htmlCtxtUseOptions(ctxt, HTML_PARSE_RECOVER | HTML_PARSE_NONET |
		                                 HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
		                                 HTML_PARSE_COMPACT);
		if (k->charset[0]) {
			xmlCharEncodingHandlerPtr h = xmlFindCharEncodingHandler(k->charset);
			if (h)
				xmlSwitchToEncoding(ctxt, h);
		}
		htmlParseChunk(ctxt, in->p, (int)in->len, 1);
		htmlFreeParserCtxt(ctxt);
	}
}

static void floor_inflate(struct floors *fl, struct response *kept, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kept[i].html && kept[i].encoded)
			inflate_body(&kept[i].body, &fl->out);
}

static void floor_deflate(struct floors *fl, struct response *kept, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct response *k = &kept[i];
		struct libdeflate_compressor *c = k->incompressible ? fl->storer : fl->packer;
		if (libdeflate_gzip_compress(fl->packer, k->req_record.p, k->req_record.len,
		                             fl->out.p, fl->out.cap) == 0 ||
		    libdeflate_gzip_compress(c, k->resp_record.p, k->resp_record.len, fl->out.p,
		                             fl->out.cap) == 0) {
			fprintf(stderr, "bench_floors: libdeflate failed\n");
			exit(1);
		}
	}
}

static void sha1_pieces(struct floors *fl, const void *a, size_t an, const void *b, size_t bn)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	if (EVP_DigestInit_ex(fl->md, fl->sha1, NULL) != 1 ||
	    (an > 0 && EVP_DigestUpdate(fl->md, a, an) != 1) ||
	    (bn > 0 && EVP_DigestUpdate(fl->md, b, bn) != 1) ||
	    EVP_DigestFinal_ex(fl->md, d, NULL) != 1) {
		fprintf(stderr, "bench_floors: SHA-1 failed\n");
		exit(1);
	}
}

static void floor_sha1(struct floors *fl, struct response *kept, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct response *k = &kept[i];
		sha1_pieces(fl, k->body.p, k->body.len, NULL, 0);                /* payload */
		sha1_pieces(fl, k->head.p, k->head.len, k->body.p, k->body.len); /* block */
		sha1_pieces(fl, k->req_record.p + k->req_headers_off,
		            k->req_headers_len, /* request */
		            NULL, 0);
	}
}

typedef void floor_fn(struct floors *fl, struct response *kept, size_t n);

static const struct {
	const char *name;
	floor_fn *run;
	const char *what;
} FLOORS[] = {
	{ "parse", floor_parse, "libxml2 HTML push parser, no callbacks, 2xx HTML bodies" },
	{ "inflate", floor_inflate, "zlib inflate of the HTML bodies sent gzipped" },
	{ "deflate", floor_deflate, "libdeflate gzip, WARC request + response records" },
	{ "sha1", floor_sha1, "OpenSSL SHA-1: payload + 2 block digests per response" },
};
#define NFLOORS (sizeof FLOORS / sizeof FLOORS[0])

/* Times each compute floor over kept[0..n) (best of `rounds`) into cpu[]. */
static void floors_time(struct floors *fl, struct response *kept, size_t n, int rounds,
                        double cpu[NFLOORS])
{
	size_t biggest = 0;
	for (size_t i = 0; i < n; i++) {
		if (kept[i].resp_record.len > biggest)
			biggest = kept[i].resp_record.len;
		if (kept[i].req_record.len > biggest)
			biggest = kept[i].req_record.len;
	}
	size_t bound = libdeflate_gzip_compress_bound(fl->storer, biggest) +
	               libdeflate_gzip_compress_bound(fl->packer, biggest);
	if (fl->out.cap < bound) {
		free(fl->out.p);
		fl->out.p = xmalloc(bound);
		fl->out.cap = bound;
	}
	for (size_t f = 0; f < NFLOORS; f++) {
		double best = -1;
		for (int r = 0; r < rounds; r++) {
			double t0 = cpu_seconds();
			FLOORS[f].run(fl, kept, n);
			double t = cpu_seconds() - t0;
			if (best < 0 || t < best)
				best = t;
		}
		cpu[f] += best;
	}
}

/* The second pass: fetches the requests again in batches of about
 * b->batch_bytes of bodies, keeps them and times the compute floors on
 * each batch. Counts the parsed and the encoded HTML bodies. */
static void compute_floors(struct bench *b, double cpu[NFLOORS], size_t *parsed, size_t *encoded)
{
	struct floors fl = { .level = b->warc_level };
	fl.packer = libdeflate_alloc_compressor(b->warc_level);
	fl.storer = libdeflate_alloc_compressor(0);
	fl.sha1 = EVP_MD_fetch(NULL, "SHA1", NULL);
	fl.md = EVP_MD_CTX_new();
	if (!fl.packer || !fl.storer || !fl.sha1 || !fl.md) {
		fprintf(stderr, "bench_floors: cannot set up libdeflate or SHA-1\n");
		exit(1);
	}
	for (size_t first = 0; first < b->nreqs;) {
		size_t end = first, bytes = 0;
		while (end < b->nreqs &&
		       (end == first || bytes + b->reqs[end].body_bytes <= b->batch_bytes))
			bytes += b->reqs[end++].body_bytes;
		struct response *kept = calloc(end - first, sizeof *kept);
		uint64_t counted;
		size_t failed;
		if (!kept)
			exit(1);
		client_run(b, first, end, kept, &counted, &failed);
		for (size_t i = first; i < end; i++) {
			response_prepare(b, &b->reqs[i], &kept[i - first]);
			*parsed += kept[i - first].html;
			*encoded += kept[i - first].html && kept[i - first].encoded;
		}
		floors_time(&fl, kept, end - first, b->rounds, cpu);
		for (size_t i = 0; i < end - first; i++)
			response_free(&kept[i]);
		free(kept);
		first = end;
	}
	buf_free(&fl.out);
	EVP_MD_CTX_free(fl.md);
	EVP_MD_free(fl.sha1);
	libdeflate_free_compressor(fl.packer);
	libdeflate_free_compressor(fl.storer);
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_floors --port P --hosts-info FILE --requests FILE\n"
	                "       [--max-connections N] [--warc-level L] [--batch-mb M]\n"
	                "       [--rounds R] [--user-agent UA]\n");
	exit(2);
}

/* A decimal option value in [lo, hi]; anything else is a usage error. */
static long num_arg(const char *v, long lo, long hi)
{
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || n < lo || n > hi)
		usage();
	return n;
}

static void args_parse(int argc, char **argv, struct bench *b, const char **hosts_path,
                       const char **requests_path)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage();
		const char *v = argv[++i];
		if (strcmp(a, "--port") == 0)
			b->port = (int)num_arg(v, 1, 65535);
		else if (strcmp(a, "--hosts-info") == 0)
			*hosts_path = v;
		else if (strcmp(a, "--requests") == 0)
			*requests_path = v;
		else if (strcmp(a, "--max-connections") == 0)
			b->max_connections = num_arg(v, 1, 65536);
		else if (strcmp(a, "--warc-level") == 0)
			b->warc_level = (int)num_arg(v, 0, 12);
		else if (strcmp(a, "--batch-mb") == 0)
			b->batch_bytes = (size_t)num_arg(v, 1, 1 << 20) << 20;
		else if (strcmp(a, "--rounds") == 0)
			b->rounds = (int)num_arg(v, 1, 1000);
		else if (strcmp(a, "--user-agent") == 0)
			b->user_agent = v;
		else
			usage();
	}
	if (b->port <= 0 || !*hosts_path || !*requests_path || b->max_connections < 1 ||
	    b->warc_level < 0 || b->warc_level > 12 || b->rounds < 1 || b->batch_bytes == 0)
		usage();
}

int main(int argc, char **argv)
{
	struct bench b = { .max_connections = 1024,
		           .warc_level = 1,
		           .rounds = 1,
		           .batch_bytes = (size_t)256 << 20,
		           .user_agent = USER_AGENT };
	const char *hosts_path = NULL, *requests_path = NULL;
	size_t skipped = 0, failed = 0, pages = 0, parsed = 0, encoded = 0;
	uint64_t counted = 0, bodies = 0;
	double cpu[NFLOORS] = { 0 };

	args_parse(argc, argv, &b, &hosts_path, &requests_path);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	xmlInitParser();
	if (hosts_load(&b, hosts_path) != 0 || requests_load(&b, requests_path, &skipped) != 0) {
		fprintf(stderr, "bench_floors: cannot read %s or %s (or nothing in them)\n",
		        hosts_path, requests_path);
		return 1;
	}
	double sys0, sys1;
	double fetch0 = cpu_seconds_sys(&sys0);
	client_run(&b, 0, b.nreqs, NULL, &counted, &failed);
	double fetch_cpu = cpu_seconds_sys(&sys1) - fetch0;
	for (size_t i = 0; i < b.nreqs; i++) {
		pages += b.reqs[i].status == 200;
		bodies += b.reqs[i].body_bytes;
	}
	compute_floors(&b, cpu, &parsed, &encoded);

	printf("requests %zu (skipped %zu), responses 200: %zu, failed %zu, %.1f MB received "
	       "(%.1f MB bodies); parsed %zu HTML (%zu gzipped)\n",
	       b.nreqs, skipped, pages, failed, counted / 1e6, bodies / 1e6, parsed, encoded);
	if (pages == 0) {
		fprintf(stderr, "bench_floors: no 200 response\n");
		return 1;
	}
	double sum = fetch_cpu;
	printf("floor %-8s %8.4f ms/page %8.2f s CPU  libcurl multi + epoll, keep-alive, one "
	       "transfer per host, %ld connections (sys %.0f%%)\n",
	       "fetch", fetch_cpu * 1e3 / pages, fetch_cpu, b.max_connections,
	       fetch_cpu > 0 ? 100 * (sys1 - sys0) / fetch_cpu : 0.0);
	for (size_t f = 0; f < NFLOORS; f++) {
		printf("floor %-8s %8.4f ms/page %8.2f s CPU  %s%s\n", FLOORS[f].name,
		       cpu[f] * 1e3 / pages, cpu[f], FLOORS[f].what,
		       strcmp(FLOORS[f].name, "deflate") == 0 ? " (level in --warc-level)" : "");
		sum += cpu[f];
	}
	printf("floors_sum     %8.4f ms/page %8.2f s CPU\n", sum * 1e3 / pages, sum);
	for (size_t i = 0; i < b.nreqs; i++)
		free(b.reqs[i].url);
	free(b.reqs);
	for (size_t i = 0; i < b.nhosts; i++)
		free(b.hosts[i].name);
	free(b.hosts);
	free(b.slots);
	xmlCleanupParser();
	curl_global_cleanup();
	return failed == b.nreqs ? 1 : 0;
}
