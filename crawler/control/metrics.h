/*
 * metrics.h: the crawl's live figures over HTTP, from the fetch loop:
 * GET /metrics answers Prometheus text, GET /status JSON (the figures of
 * stats.json, as they stand); any other request goes to the control
 * callback when one is set (steer.h: POST /seeds...), else 404.
 *
 * Data structure: a listening libuv TCP handle and a list of client
 * connections, each with a fixed request buffer. A connection reads until
 * the end of its request head (at most METRICS_REQUEST_MAX bytes, else
 * 400), gets one response rendered at once by the owner's callback into
 * memory, and is closed once it is written (a request with a body reads
 * its Content-Length bytes first, at most METRICS_BODY_MAX, into a buffer
 * of that size): the loop never waits on a
 * client, and a client that sends nothing is dropped after
 * METRICS_IDLE_MS. At most METRICS_CLIENTS connections at once (more are
 * closed on accept).
 *
 * Threads: everything runs on the loop's thread.
 */
#ifndef CRAWLER_CONTROL_METRICS_H
#define CRAWLER_CONTROL_METRICS_H

#include <stdio.h>

#include <uv.h>

#define METRICS_REQUEST_MAX 4096
#define METRICS_IDLE_MS 5000
#define METRICS_CLIENTS 16
#define METRICS_BODY_MAX (1024u * 1024u)

enum metrics_page { METRICS_PROMETHEUS, METRICS_STATUS };

/* Writes the page's body to f (a memory stream); 0, or -1 (answered 500). */
typedef int (*metrics_render_fn)(void *ctx, enum metrics_page page, FILE *f);

/* Any other request (method, target: path and query, the body): its
 * response body into f; returns the status code (500: f is dropped). */
typedef int (*metrics_control_fn)(void *ctx, const char *method, const char *target,
                                  const char *body, size_t len, FILE *f);

struct metrics_server;

/*
 * Listens on addr: "PORT" (on 127.0.0.1), "ADDR:PORT" or "[IPV6]:PORT".
 * 0, or -1 with a message in err (bad address, cannot bind).
 */
int metrics_server_start(uv_loop_t *loop, const char *addr, metrics_render_fn render, void *ctx,
                         struct metrics_server **out, char *err, size_t errlen);

/* Requests other than the two pages go to control(ctx, ...). */
void metrics_server_set_control(struct metrics_server *m, metrics_control_fn control, void *ctx);

/* The port listened on (useful with port 0). */
int metrics_server_port(const struct metrics_server *m);

/* Closes the listener and every connection; the memory goes with the
 * handles' close callbacks (run the loop after this). NULL is a no-op. */
void metrics_server_stop(struct metrics_server *m);

#endif
