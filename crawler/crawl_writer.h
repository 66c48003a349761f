/*
 * crawl_writer.h: the writer thread and its queue: every fetch result,
 * parsed or not, ends here as one WARC record pair (when WARC output is
 * on) and one crawl.log line.
 *
 * A job (struct crawl_job) is made by the fetch loop for each finished
 * transfer and comes here first: its records are written, then it goes
 * through the parse pool when it has something to parse, and comes back
 * for its log line, after which the writer frees it. The queue is bounded (queue_cap): the
 * fetch loop only try-pushes, and starts no transfer unless
 * crawl_writer_has_room says every transfer in flight would still find a
 * slot (back-pressure), so its pushes never fail for lack of room; parse
 * threads push and may wait (the writer never waits on them: the
 * `recorded` hook only tries). Memory: the reorder ring holds a pointer a
 * job whose line waits (at most the jobs alive, which the loop's room
 * checks bound), grown by doubling.
 *
 * A write that fails on a full disk waits it out (io_stall.h) and writes
 * the same record again: nothing is dropped, fetching pauses meanwhile.
 *
 * Order: a fetch's WARC records are written when the loop hands it over,
 * before any parse (so a kill during the parse finds the answer stored);
 * then, if it has something to parse, the parse threads have it (the
 * `recorded` hook) and hand it back for its crawl.log line, which takes
 * what they found (the near-duplicate flag, the focus score). Lines are
 * written in the order of the records, whatever order the parse threads
 * end in (a job whose line may not go yet waits in the writer's reorder
 * ring), and each after its records went to the kernel; the buffered
 * lines go to the kernel in one write once the queue runs empty (or the
 * log's buffer fills). So a crash leaves crawl.log a prefix, in order, of
 * the fetches whose records the WARC holds: the tail a resume replays
 * (crawl_tail.h). Lines not yet written at a kill are lost; the resume
 * rebuilds them from their records, which carry what the line holds and
 * the HTTP message does not, in fields of their own (names in warc.h):
 *   WARC-Crawler-Depth: the link depth (hops from a seed);
 *   WARC-Crawler-Via: the URL the fetched one was found on (none for a
 *     seed);
 *   WARC-Crawler-Flags: the line's flags known before the parse
 *     (crawl_log.h's names: redirect, robots, embed, requeued), when there
 *     are any: a rebuilt line has no near-dup flag and no focus score;
 *   WARC-Crawler-Redirect: a redirect's resolved Location, when it is one
 *     the crawl follows.
 * A fetch without records (an error, WARC output off) whose line is lost
 * is made again.
 *
 * Checkpoints: a barrier job (crawl_writer_request_sync) makes everything
 * queued before it durable; crawl_writer_synced then says so and where the
 * WARC and the crawl log stood.
 *
 * Threads: the writer thread alone touches the WARC writer and the crawl
 * log, and bumps the writer's counters (atomics: crawl_writer_stats); every
 * function here is for the fetch loop unless said otherwise.
 */
#ifndef CRAWLER_CRAWL_WRITER_H
#define CRAWLER_CRAWL_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct crawl_output;
struct previous_hit;
struct fetch_result;
struct io_stall;
struct warc_config;
struct warc_position;

/* One finished transfer on its way to the parse pool and the writer. */
#define CRAWL_PARSE_CSS 2 /* crawl_job.parse: a stylesheet's url()s */

struct crawl_job {
	struct fetch_result *res; /* owned */
	uint32_t host;
	uint32_t depth;     /* link depth */
	uint32_t redirects; /* redirects that led here (+1 for j->redirect) */
	uint32_t embed;     /* embed code (frontier.h): 0 for a page */
	int robots;
	unsigned flags; /* CRAWL_LOG_* */
	int has_focus;  /* the parse thread scored the page: focus (parse/focus.h) */
	uint32_t focus;
	char *via;         /* owned */
	char *redirect;    /* owned: resolved Location, or NULL */
	const char *error; /* static reason word, or NULL */
	uint64_t wait_us;  /* rest the politeness required before the request */
	int parse; /* parse it (HTML 2xx page, sitemap, robots.txt's sitemaps; CRAWL_PARSE_CSS:
	              a stylesheet, with page requisites) */
	char **sitemaps; /* owned: robots.txt's Sitemap URLs, for the sieve */
	size_t nsitemaps;
	unsigned sitemap_level; /* 0: not a sitemap; else its index level + 1 */
	char *sitemap_scope;    /* owned: the URL its entries are judged against */
	uint64_t barrier;       /* nonzero: no fetch; the writer syncs for checkpoint #barrier */
	int replayed;           /* from a crashed crawl's tail (crawl_tail.h): in the WARC and
	                 log already, so parsed but not written again */
	struct previous_hit *earlier; /* owned: the URL's capture in the crawl recrawled
	                              against (archive/previous.h), or NULL */
	int recorded;                 /* the writer wrote its records; its line comes next */
	uint64_t line_seq;            /* the writer's: where its line falls in crawl.log's order */
};

/* Frees the job and what it owns; NULL is a no-op. */
void crawl_job_free(struct crawl_job *j);

struct crawl_writer;

/* What the writer uses, all borrowed (warc_config during the open only). */
struct crawl_writer_parts {
	const struct crawl_output *output;     /* [output] dir: crawl.log's */
	const struct warc_config *warc_config; /* NULL: no WARC output */
	size_t queue_cap;
	struct io_stall *io;
	/* writer thread: a barrier was reached, or a job written after
	 * crawl_writer_wake_after_next */
	void (*wake)(void *ctx);
	/* writer thread: j's records are written (j->recorded); 0 if the hook
	 * took j, which then comes back through crawl_writer_push for its log
	 * line (the parse threads'), -1 if its line follows now. NULL: every
	 * line follows its records at once. Must not wait. */
	int (*recorded)(void *ctx, struct crawl_job *j);
	void *ctx;
};

/* Opens the WARC output and crawl.log in output->dir and starts the
 * writer thread. 0, or -1 (a message on stderr). */
int crawl_writer_open(const struct crawl_writer_parts *parts, struct crawl_writer **out);

/* Loop thread: 1 if the queue keeps room for in_flight + 1 more jobs. */
int crawl_writer_has_room(const struct crawl_writer *w, size_t in_flight);

/* Any thread: the jobs waiting for the writer thread (barriers included). */
size_t crawl_writer_queued(const struct crawl_writer *w);
/* Loop thread: the writer calls wake once it has written its next job
 * (the loop waits for the answers not yet stored to fall). */
void crawl_writer_wake_after_next(struct crawl_writer *w);

/* Loop thread: queues j without waiting (takes it). 0, or -1 when full
 * (j not taken). */
int crawl_writer_try_push(struct crawl_writer *w, struct crawl_job *j);

/* Parse threads: queues j (recorded: for its log line), waiting for room;
 * after crawl_writer_close (teardown) j is freed. Takes j. */
void crawl_writer_push(struct crawl_writer *w, struct crawl_job *j);

/* Queues the barrier of checkpoint seq. 0, or -1 (try again later). */
int crawl_writer_request_sync(struct crawl_writer *w, uint64_t seq);

/* 1 once the barrier of checkpoint seq was reached: then *rc is 0 if the
 * WARC and log are durable, *pos where the WARC stood and *log_size the
 * crawl log's size. */
int crawl_writer_synced(struct crawl_writer *w, uint64_t seq, int *rc, struct warc_position *pos,
                        uint64_t *log_size);

/* Drains the queue, stops the thread, closes the WARC and the log (the
 * figures stay readable until crawl_writer_destroy). NULL is a no-op. */
void crawl_writer_close(struct crawl_writer *w);
/* Closes it if not closed, and frees it. NULL is a no-op. */
void crawl_writer_destroy(struct crawl_writer *w);

/* The writer thread's counters. */
struct crawl_writer_stats {
	uint64_t errors;   /* records or log lines that could not be written (or a line
	                    written out of order: no memory to hold it) */
	uint64_t revisits; /* fetches written as WARC revisit records */
	/* an index's captures (archive/previous.h) whose record could not be
	 * read back: no original, the page stored whole */
	uint64_t index_records_unreadable;
};
void crawl_writer_stats(const struct crawl_writer *w, struct crawl_writer_stats *out);

#endif
