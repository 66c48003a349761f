/*
 * test_server.h: a tiny libuv HTTP/1.1 server for the fetch engine tests,
 * running its own loop on its own thread, bound to 127.0.0.1 on an
 * ephemeral port. Keep-alive; paths:
 *   /page/N         200 text/html, body "page N\n" repeated 10 times
 *   /big            200, 1 MiB of 'a'
 *   /hugeheaders    200, ~200 KiB of header lines, small body
 *   /hugeline       200, one 2 MiB header line, small body
 *   /two-encodings  200, two Content-Encoding lines (gzip, then deflate)
 *                   over test_server_text gzipped then deflated
 *   /status999      status 999 (outside every class), small body
 *   /redirect       302, Location: /page/1
 *   /gzip /deflate  200, Content-Encoding gzip / deflate of test_server_text
 *   /bomb           200, Content-Encoding gzip, 64 MiB of zeros compressed
 *   /slow           headers (Content-Length 1000), then nothing
 *   /retry          503 with Retry-After: 7
 *   /accept-encoding  200 text/plain, body: the request's Accept-Encoding
 *                   value, or "(none)"
 *   /trailers       200 chunked, body "hello trailer", then trailers
 *                   "X-Checksum: 42", "HTTP/1.1 500 Oops: x", "Content-Type: evil/x"
 *   /early-trailers 103 Early Hints, then 200 chunked with an empty body
 *                   and the trailer "HTTP/1.1 204 No: x"
 */
#ifndef TESTS_CRAWLER_TEST_SERVER_H
#define TESTS_CRAWLER_TEST_SERVER_H

#include <stddef.h>

struct test_server;

/* Starts the server; returns NULL on failure. */
struct test_server *test_server_start(void);
int test_server_port(const struct test_server *s);
/* Requests served so far (thread-safe read). */
long test_server_requests(const struct test_server *s);
/* Connections accepted so far. */
long test_server_connections(const struct test_server *s);
void test_server_stop(struct test_server *s);

/* The uncompressed text behind /gzip and /deflate. */
extern const char test_server_text[];

#endif
