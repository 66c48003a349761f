/*
 * The testweb server: one libuv loop, one thread. An HTTP/1.1 listener on
 * the same port on each of the K host addresses 127.0.1.1..127.0.1.K, a UDP
 * DNS responder on 127.0.0.1, a request log, and the per-host fault modes.
 *
 * Connections are capped (max_conns); each owns a fixed request buffer of
 * max_request bytes, parses requests one at a time (pipelining-safe: bytes
 * after a request stay in the buffer until its response is written) and
 * writes responses with one uv_write of [headers, body] whose body is a
 * refcounted entry of a bounded response cache (cache_bytes budget).
 *
 * With server models (so->models), each request of a host of the web is
 * counted on arrival (tw_models_arrive): beyond the host's capacity it is
 * answered at once with 429/503 and Retry-After; otherwise its response
 * waits out the sampled latency on the connection's uv timer and is then
 * written in chunks paced by the same timer (bandwidth), never blocking
 * the loop. Fault responses are counted but not shaped. The log gains
 * three columns: in_flight, rate_1s, service_us. Without models the
 * request path only tests so->models.
 *
 * Validators: a 200 entry keeps its ETag and Last-Modified; a request
 * whose If-None-Match or If-Modified-Since matches them gets 304 (see
 * testweb.c). The log's last column says which of the two it sent.
 */
#ifndef TESTS_TESTWEB_SERVER_H
#define TESTS_TESTWEB_SERVER_H

#include <stddef.h>

#include "tests/testweb/gen.h"
#include "tests/testweb/models.h"

struct tw_server_options {
	int dns_port;           /* 0 = ephemeral, -1 = no DNS */
	unsigned ttl;           /* DNS TTL, seconds */
	const char *ready_file; /* borrowed; NULL = none */
	const char *log_file;   /* borrowed; NULL = no log */
	const char *conns_file; /* borrowed; NULL = none: at exit, per address
	                           the most connections open at once */
	unsigned latency_ms;
	unsigned max_conns;
	size_t max_request;
	unsigned idle_ms;
	size_t cache_bytes;
	struct tw_models *models; /* borrowed, bound; NULL = no models, and
				   * the log has its 8 columns and cond */
};

void tw_server_options_defaults(struct tw_server_options *so);

/* Serve until SIGTERM/SIGINT. cfg->http_port 0 is replaced by the bound
 * port (cfg is modified for that reason). Returns 0 on a clean stop, -1 if
 * setup failed (message on stderr). */
int tw_server_run(struct tw_config *cfg, const struct tw_server_options *so);

#endif
