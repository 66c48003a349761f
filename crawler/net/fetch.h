/*
 * fetch.h: the fetch engine. One libuv loop thread drives libcurl's multi
 * interface through its socket API (CURLMOPT_SOCKETFUNCTION on uv_poll_t,
 * CURLMOPT_TIMERFUNCTION on one uv_timer_t, curl_multi_socket_action).
 *
 * Data structure: an engine owns one CURLM, one uv_timer_t and one uv_poll_t
 * context per socket curl watches; each transfer is a CURL easy handle plus a
 * heap record accumulating the request headers as sent, the raw response
 * header block and the raw (still content-encoded) body.
 *
 * Invariants:
 *  - curl never resolves a name: every request carries the one address
 *    (IPv4 or IPv6) the caller resolved (dns.h), pinned with
 *    CURLOPT_CONNECT_TO "::IP:" / "::[IP6]:" (any host/port goes to IP);
 *    through a proxy that takes names (proxy.h) the proxy resolves it
 *    instead. Falling back to the other family is the caller's (visit.c),
 *    which holds the politeness token of the address it chose.
 *  - addresses in private, loopback, link-local, CGNAT, multicast and
 *    reserved ranges are refused unless allow_private_networks (checked before
 *    starting, and again in CURLOPT_OPENSOCKETFUNCTION); for IPv6 also
 *    unique-local, site-local, discard, documentation, ORCHID, and every form
 *    that carries an IPv4 address (compatible, mapped, translated, NAT64,
 *    6to4, Teredo) judged by that address.
 *  - at most max_connections transfers are in flight; start returns
 *    FETCH_ERR_BUSY beyond that (back-pressure, not growth).
 *  - redirects are never followed; Location is reported.
 *  - at most max_ip_connections connections to one address stay open,
 *    idle keep-alive ones included (ip_conns.h): a transfer to an address
 *    at the cap first shuts down one of its idle connections, or when all
 *    are busy closes its own after use (CURLOPT_FORBID_REUSE). So the open
 *    connections of an address number at most max(cap, transfers to it in
 *    flight + 1).
 *  - a request is sent once per transfer: libcurl re-sends a request on a
 *    new connection at once when a reused one closed before answering;
 *    that connect is refused, and the result is FETCH_ERR_EMPTY_REPLY with
 *    reuse_dropped set, for the caller to retry after its politeness delay.
 *  - body capped at max_body_bytes (the transfer is cut and marked truncated,
 *    not failed); header block capped at max_header_bytes (failure), and
 *    curl's own caps (a 100 KiB line, a 300 KiB block) fail the same way:
 *    FETCH_ERR_HEADER_TOO_LARGE.
 *  - a header sent on several lines is reported as one list: the values
 *    joined by ", " in order (RFC 9110 5.3), so two Content-Encoding lines
 *    give "gzip, br", decoded right to left (decode.h).
 *  - only http and https; HTTP/2 when a TLS server offers it by ALPN, else
 *    HTTP/1.1; one request at a time per connection (no multiplexing);
 *    curl does not decode Content-Encoding
 *    (the body is kept as received, for the WARC; decode.h decodes it).
 *    Requests carry "Accept-Encoding: gzip, deflate, br" unless
 *    no_accept_encoding, and then no Accept-Encoding at all.
 *  - the engine never blocks and never parses bodies.
 *
 * Workload: thousands of concurrent transfers (10,000 must work, given the
 * file descriptor limit), mostly small HTML pages over keep-alive
 * connections. All functions must be called on the loop's thread.
 */
#ifndef CRAWLER_NET_FETCH_H
#define CRAWLER_NET_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <uv.h>

enum fetch_error {
	FETCH_OK = 0,                   /* transfer completed (any HTTP status) */
	FETCH_ERR_NOMEM = 1,            /* allocation failed */
	FETCH_ERR_INVALID = 2,          /* bad argument: URL, IP literal, config */
	FETCH_ERR_PRIVATE_ADDR = 3,     /* address in a refused range */
	FETCH_ERR_BUSY = 4,             /* max_connections already in flight */
	FETCH_ERR_PROTOCOL = 5,         /* scheme other than http/https */
	FETCH_ERR_CONNECT = 6,          /* could not connect (refused, unreachable) */
	FETCH_ERR_TIMEOUT = 7,          /* connect or total timeout */
	FETCH_ERR_TOO_SLOW = 8,         /* below the low-speed limit for too long */
	FETCH_ERR_HEADER_TOO_LARGE = 9, /* response headers above max_header_bytes */
	FETCH_ERR_TLS = 10,             /* TLS handshake or certificate failure */
	FETCH_ERR_RECV = 11,            /* connection reset / receive or send error */
	FETCH_ERR_BAD_RESPONSE = 12,    /* malformed HTTP (bad chunk, bad status line) */
	FETCH_ERR_EMPTY_REPLY = 13,     /* server closed without answering */
	FETCH_ERR_CURL = 14,            /* other libcurl failure (see error_detail) */
	FETCH_ERR_CANCELLED = 15,       /* engine destroyed while in flight */
	FETCH_ERR_TLS_CERT = 16,        /* the peer's certificate did not verify
	                                   (untrusted issuer, expired, wrong name) */
};

/* A static English name for an error ("timeout", "connect", ...), for logs. */
const char *fetch_strerror(enum fetch_error err);

struct fetch_config {
	size_t max_connections;      /* transfers in flight; 0 -> 1024 */
	long connect_timeout_ms;     /* 0 -> 10000 */
	long total_timeout_ms;       /* 0 -> 60000 */
	long low_speed_limit;        /* bytes/s; 0 -> 64 */
	long low_speed_time_s;       /* seconds below the limit; 0 -> 20 */
	size_t max_body_bytes;       /* 0 -> 4 MiB; more is truncated */
	size_t max_header_bytes;     /* 0 -> 64 KiB; more fails the fetch */
	long max_conn_age_s;         /* keep-alive reuse window; 0 -> 118 */
	long max_host_connections;   /* CURLMOPT_MAX_HOST_CONNECTIONS; 0 = no cap */
	long max_ip_connections;     /* open connections per address, idle
	                                included; 0 = no cap */
	const char *user_agent;      /* copied; NULL -> "crawler/0.1" */
	bool allow_private_networks; /* tests and local crawls set it */
	bool verify_tls;             /* verify peer certificates and host names
	                                (a failure is FETCH_ERR_TLS_CERT); false
	                                accepts any certificate (archival crawls
	                                that keep what a browser would refuse).
	                                The zeroed struct's false is the engine's
	                                default; the crawl's is true. */
	const char *ca_file;         /* PEM bundle of trusted CAs, copied;
	                                NULL/"" -> the system's store */
	bool no_accept_encoding;     /* send no Accept-Encoding (servers then answer
	                                uncompressed); default: gzip, deflate, br */
	const char *proxy;           /* proxy URL (proxy.h), copied; NULL/"": none
	                                (the environment's http_proxy is not read) */
	const char *no_proxy;        /* hosts that bypass it, copied; NULL/"": the
	                                environment's no_proxy / NO_PROXY */
};

/* fetch_request.flags */
#define FETCH_FLAG_ROBOTS 0x1u   /* robots.txt fetch (reported back as is) */
#define FETCH_FLAG_FRESH 0x2u    /* open a new connection (no reuse) */
#define FETCH_FLAG_NO_REUSE 0x4u /* close the connection after this fetch */

struct fetch_request {
	const char *url; /* borrowed for the call only; absolute http(s) URL */
	const char *ip;  /* borrowed for the call; the address the host resolves
	                    to: dotted IPv4 or IPv6 (no brackets) */
	void *user;      /* returned in the result untouched */
	unsigned flags;  /* FETCH_FLAG_* */
	/* A conditional request's validators (borrowed for the call; NULL:
	 * none): sent as If-None-Match and If-Modified-Since. A value holding
	 * a control byte is not sent. */
	const char *if_none_match, *if_modified_since;
};

/* A byte buffer owned by a fetch_result; data may be NULL when len == 0. */
struct fetch_buf {
	uint8_t *data;
	size_t len;
};

struct fetch_result {
	void *user;                        /* from the request */
	unsigned flags;                    /* from the request */
	char *url;                         /* copy of the request URL */
	char ip[48];                       /* the address connected to ("" if none) */
	enum fetch_error error;            /* FETCH_OK or the reason it failed */
	char error_detail[256];            /* libcurl's message, "" if none */
	long status;                       /* HTTP status, 0 if none received */
	bool http2;                        /* the response came over HTTP/2: the
	                                      header blocks are curl's rendering
	                                      ("HTTP/2 200", "GET / HTTP/2") */
	bool truncated;                    /* body cut at max_body_bytes */
	bool reuse_dropped;                /* a reused connection closed before
	                                      answering and libcurl's immediate
	                                      re-send was refused (error
	                                      EMPTY_REPLY): retry after a delay */
	struct fetch_buf request_headers;  /* request line + headers as sent */
	struct fetch_buf response_headers; /* status line + headers, raw; with
	                                      1xx (and CONNECT) blocks dropped;
	                                      trailers (chunked, HTTP/2) as
	                                      "X-Crawler-Trailer: LINE" lines
	                                      before the blank line */
	struct fetch_buf body;             /* raw body as received (content-encoded) */
	char *content_type;                /* header value or NULL */
	char *content_encoding;            /* every line's value, ", "-joined, or NULL */
	char *location;                    /* header value (unresolved) or NULL */
	long retry_after_s;                /* Retry-After in seconds, -1 if absent */
	int64_t start_unix_ms;             /* wall clock when the transfer started */
	int64_t end_unix_ms;               /* wall clock when it finished */
	uint64_t total_ms;                 /* duration measured on a monotonic clock */
};

/*
 * Called on the loop thread once per started transfer (never for a start
 * that failed). The callback TAKES OWNERSHIP of res and frees it with
 * fetch_result_free, possibly later on another thread (the result shares
 * nothing with the engine). It may call fetch_engine_start again, but not
 * fetch_engine_destroy.
 */
typedef void (*fetch_done_fn)(void *ctx, struct fetch_result *res);

struct fetch_engine;

/*
 * Creates an engine on loop (borrowed; must outlive the engine). config is
 * copied. Initializes libcurl globally on first use (curl_global_init is
 * reference counted here). On error *out is NULL and nothing is allocated.
 */
enum fetch_error fetch_engine_create(uv_loop_t *loop, const struct fetch_config *config,
                                     fetch_done_fn done, void *ctx, struct fetch_engine **out);

/*
 * Starts one transfer. Returns FETCH_OK and later calls done exactly once,
 * or returns an error (INVALID, PRIVATE_ADDR, BUSY, PROTOCOL, NOMEM) and
 * never calls done for this request.
 */
enum fetch_error fetch_engine_start(struct fetch_engine *engine, const struct fetch_request *req);

/* Transfers started and not yet reported. */
size_t fetch_engine_in_flight(const struct fetch_engine *engine);

/* Counters since creation. */
struct fetch_stats {
	uint64_t started;
	uint64_t completed; /* done called with FETCH_OK */
	uint64_t failed;    /* done called with an error */
	uint64_t refused;   /* starts refused (private address, busy, ...) */
	uint64_t truncated;
	uint64_t bytes;           /* body bytes received */
	uint64_t idle_conns_shut; /* idle connections shut at an address's cap */
	uint64_t conns_bytes;     /* the per-address table of open sockets (ip_conns.h) now */
};
void fetch_engine_stats(const struct fetch_engine *engine, struct fetch_stats *out);

/*
 * Aborts every transfer in flight (their done callbacks run with
 * FETCH_ERR_CANCELLED, from inside this call; fetch_engine_start called from
 * them returns FETCH_ERR_INVALID), releases curl, and closes the
 * libuv handles. The handles finish closing on the next loop iteration: run
 * the loop (uv_run) after this call before closing it; the engine's memory is
 * freed by the last close callback. NULL is a no-op.
 */
void fetch_engine_destroy(struct fetch_engine *engine);

/*
 * Reads the header fields the crawler acts on from r->response_headers
 * (a raw block: status line, then "Name: value" lines; any bytes):
 * content_type, location (the first line's value), content_encoding (every
 * line's, ", "-joined), retry_after_s (delay-seconds, saturated at
 * LONG_MAX, or an HTTP-date as seconds after now, 0 if past; -1 if absent
 * or neither). Values are trimmed of spaces, tabs and a final CR; what r
 * held in those fields is freed first. A field out of memory reads as
 * absent.
 */
void fetch_headers_read(struct fetch_result *r, time_t now);

/* 1 if a Content-Type (NULL: none) names an HTML page. */
int fetch_type_is_html(const char *content_type);

/* Frees a result and its buffers. NULL is a no-op. */
void fetch_result_free(struct fetch_result *res);
/* Frees the request and response header blocks and the body, keeping
 * their lengths (data NULL): what a log line of the result needs. */
void fetch_result_drop_messages(struct fetch_result *res);

/*
 * Whether an IPv4 or IPv6 literal lies in a range refused without
 * allow_private_networks. Returns true for unparsable input too.
 */
bool fetch_addr_is_private(const char *ip);
/* The same for a socket address (AF_INET or AF_INET6; others: true). */
struct sockaddr;
bool fetch_sockaddr_is_private(const struct sockaddr *sa);

#endif
