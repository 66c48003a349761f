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
 */
#ifndef TESTWEB_SERVER_H
#define TESTWEB_SERVER_H

#include <stddef.h>

#include "tests/testweb/gen.h"

struct tw_server_options {
	int dns_port;            /* 0 = ephemeral, -1 = no DNS */
	unsigned ttl;            /* DNS TTL, seconds */
	const char *ready_file;  /* borrowed; NULL = none */
	const char *log_file;    /* borrowed; NULL = no log */
	unsigned latency_ms;
	unsigned max_conns;
	size_t max_request;
	unsigned idle_ms;
	size_t cache_bytes;
};

void tw_server_options_defaults(struct tw_server_options *so);

/* Serve until SIGTERM/SIGINT. cfg->http_port 0 is replaced by the bound
 * port (cfg is modified for that reason). Returns 0 on a clean stop, -1 if
 * setup failed (message on stderr). */
int tw_server_run(struct tw_config *cfg, const struct tw_server_options *so);

#endif
