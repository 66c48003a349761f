/*
 * steer.h: steering a running crawl: seeds and URL rules added, fetching
 * paused and resumed, a host's delay set, a host looked at; asked over the
 * --metrics HTTP server or by files dropped into OUTPUT_DIR/action/, and
 * recorded so that a resumed crawl is steered as the crawl was.
 *
 * The actions (HTTP; the action file that does the same):
 *   POST /seeds                  URLs, one a line, for the sieve as seeds
 *                                (exempt from the rules)       NAME.seeds
 *   POST /rules                  rules (url_rules.h's form) added at the
 *                                top, above every rule there is NAME.rules
 *   POST /pause, POST /resume    no transfer starts while paused; those in
 *                                flight finish          NAME.pause, .resume
 *   POST /hosts/HOST/delay?ms=N  the host's delay (politeness.h's steered
 *                                delay; 0: the policy's again)
 *                                                NAME.delay: "HOST MS" lines
 *   GET /hosts/HOST              the host's queue length, state, delay and
 *                                its last fetches (JSON)
 * A request or file is checked whole before anything is applied: a bad
 * one changes nothing and gets a 4xx (a file: moved to action/failed/ with
 * NAME.reason beside it) with a message naming the line. Action files are
 * taken in name order every STEER_POLL_MS; write one elsewhere and rename
 * it into action/ (names starting with '.' are left alone); applied ones
 * go to action/done/.
 *
 * Data structure: a bounded queue (bqueue) of checked actions from the
 * action-directory thread to the fetch loop, which applies them (woken);
 * the seeds waiting for room in the sieve's feed (a byte buffer of keys,
 * at most STEER_PENDING_MAX bytes taken from requests); the paused flag;
 * a ring of the crawl's last STEER_RING fetches (host, status, time, URL
 * cut at STEER_URL_MAX) for GET /hosts/HOST; OUTPUT_DIR/steering.log, one
 * applied action a line ("seed KEY", "pause", "resume", "delay HOST MS",
 * and an agent's "shared N": the crawl's shared rules before index N are
 * applied),
 * replayed at --resume (the rules added are kept by url_rules_live.h in
 * OUTPUT_DIR/rules.txt; seeds fed again meet the sieve, which drops those
 * it has seen).
 *
 * Memory: the ring (about 70 KiB), the pending seeds (at most
 * STEER_PENDING_MAX from requests, the whole log's at a resume), at most
 * STEER_QUEUE actions of at most STEER_BODY_MAX bytes each.
 *
 * Threads: the action-directory thread reads, checks, queues and moves
 * files; everything else is the fetch loop's (the HTTP server runs on it:
 * its I/O never blocks, and the pages it answers read the loop's state).
 */
#ifndef CRAWLER_CONTROL_STEER_H
#define CRAWLER_CONTROL_STEER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define STEER_BODY_MAX (1024u * 1024u) /* the largest request body or action file */
#define STEER_PENDING_MAX (4u * STEER_BODY_MAX)
#define STEER_QUEUE 16
#define STEER_RING 256
#define STEER_URL_MAX 256
#define STEER_POLL_MS 200
#define STEER_DELAY_MAX_MS 3600000u /* an hour */

struct url_options;
struct url_rules_live;
struct frontier;
struct politeness;

struct steer_parts {
	const char *out_dir; /* action/ and steering.log in it */
	const struct url_options *url;
	struct url_rules_live *rules; /* NULL: POST /rules is refused */
	struct frontier *frontier;
	struct politeness *pol;
	void *ctx;
	/* Loop thread: a seed's crawl key for the sieve; 0, or -1 (no room
	 * now: asked again at the next steer_pump). */
	int (*feed)(void *ctx, const char *key, size_t len);
	/* Any thread: wakes the loop (it calls steer_pump). */
	void (*wake)(void *ctx);
	/* Loop thread: rules applied here from a request or an action file,
	 * for the crawl's other agents (NULL: a crawl of this process alone). */
	void (*share)(void *ctx, const char *text, size_t len, const char *source);
};

struct steer;

/* Creates action/, action/done/ and action/failed/, opens steering.log
 * (replayed first when resume), starts the action-directory thread. 0, or
 * -1 with a message in err. */
int steer_create(const struct steer_parts *parts, int resume, struct steer **out, char *err,
                 size_t errlen);
/* Stops the action-directory thread (files left in action/ stay there
 * for the next run). NULL is a no-op. */
void steer_stop(struct steer *s);
/* Stops the thread and frees everything. NULL is a no-op. */
void steer_destroy(struct steer *s);

/* Loop thread: applies the queued actions, feeds pending seeds. */
void steer_pump(struct steer *s);
/* 1 while paused (no transfer may start). NULL: 0. */
int steer_paused(const struct steer *s);
/* 1 while seeds wait for the sieve or actions for the loop. NULL: 0. */
int steer_busy(const struct steer *s);
/* A fetch's outcome, for GET /hosts/HOST. */
void steer_note_fetch(struct steer *s, uint32_t host, const char *url, long status);
/* An HTTP request (target: path and query) the metrics pages are not: the
 * response body into f; returns the status code. */
int steer_http(struct steer *s, const char *method, const char *target, const char *body,
               size_t len, FILE *f);

/* The crawl's shared rules (an agent's: crawl_cluster.h): the index of
 * the first entry this crawl has not applied or passed (steering.log's
 * last "shared N" line: it survives --resume). */
uint64_t steer_shared_next(const struct steer *s);
/* Loop thread: the shared rules' entry index: its text[len] applied as
 * rules steered here (checked the same way, not shared again; source
 * names them), or, text NULL, passed (rules of this agent's, applied when
 * steered). The next index is then index + 1, logged. 0, or -1 refused
 * (counted; a message on stderr). */
int steer_shared_apply(struct steer *s, uint64_t index, const char *text, size_t len,
                       const char *source);

/* Counts: actions applied, requests and files refused. */
struct steer_stats {
	uint64_t applied, refused, seeds;
};
void steer_stats(const struct steer *s, struct steer_stats *out);

#endif
