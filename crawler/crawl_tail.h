/*
 * crawl_tail.h: the tail of a crashed crawl (what it fetched after its
 * last checkpoint), read back from crawl.log and the WARC files, and its
 * replay into the resumed crawl so that none of it is fetched again.
 *
 * Where it is: the writer (crawl_writer.h) writes per fetch its WARC
 * records, then its crawl.log line, each handed to the kernel before the
 * next fetch; a checkpoint records where the WARC and the log stood
 * (struct crawl_tail_pos). A resume first cuts torn records and lines
 * (warc_repair.h, checkpoint_repair_log); what stands after those
 * positions is the tail: log lines, and for each line with a response
 * (status > 0, WARC output on) its response or revisit record, in the same
 * order, in the checkpoint's WARC file from its offset and in every later
 * file (names sort by time).
 *
 * The reader walks both in step: a line's record is the next response or
 * revisit record whose WARC-Target-URI is the line's URL; a line without
 * one (WARC off, a record lost to a power cut, a torn file) has no
 * payload. A revisit record's payload is the earlier response's of the
 * same WARC-Payload-Digest: one of the tail's last responses (a bounded
 * cache), else the record it refers to, read back through the crawl's
 * index.cdxj (archive/lookup.h; crawl_tail_use_index), which a resume
 * writes before its replay; else it has none.
 *
 * Records after the last line are fetches whose lines the crash lost (the
 * writer writes a fetch's records before its parse and its line after it,
 * the lines in record order and in batches, crawl_writer.h):
 * each is an entry of its own, rebuilt from the record and the crawler's
 * fields on it (WARC-Crawler-*), marked recovered; the replay appends its
 * line to crawl.log, so that the log again holds a line for every record
 * before the next run's. A record without those fields (not written by
 * this crawler) is skipped. A line over CRAWL_TAIL_LINE_MAX is skipped
 * (counted), and the records before the next line's match with it: its
 * fetch alone is made again. A malformed line, or a last one torn, ends
 * the tail there, recovered records included, and a malformed record, or
 * one over max_record, its file: what follows is treated as never fetched.
 *
 * Memory: one log line (at most CRAWL_TAIL_LINE_MAX bytes), one WARC
 * reader (warc_reader.h: a record of at most max_record bytes, and its
 * fixed buffers), the revisits' cache (8 MiB) and, with the index, a
 * lookup (archive/lookup.h: a second reader and a line of the index) at a
 * time.
 */
#ifndef CRAWLER_CRAWL_TAIL_H
#define CRAWLER_CRAWL_TAIL_H

#include <stddef.h>
#include <stdint.h>

struct crawl_output;
struct crawl_limits;
struct fetch_config;
struct warc_config;

#define CRAWL_TAIL_LINE_MAX (64u * 1024u)

/* Where a checkpoint's cut falls in the outputs. */
struct crawl_tail_pos {
	char warc_file[256];  /* base name of the WARC file being written ("": none) */
	uint64_t warc_offset; /* where its next record went */
	uint64_t log_offset;  /* crawl.log's size */
	int known;            /* 0: the checkpoint does not say (its crawler did
	                         not save these) */
};

/* One fetch of the tail; strings NUL-terminated, "" for the log's "-".
 * Valid until the next crawl_tail_next. */
struct crawl_tail_entry {
	const char *url;
	const char *via;
	const char *content_type;
	const char *redirect; /* the resolved Location, if any */
	long status;          /* HTTP status, or -(enum fetch_error) */
	uint64_t bytes;
	uint32_t depth;
	int robots;                   /* a robots.txt fetch */
	int revisit;                  /* its record is a revisit */
	int requeued;                 /* an attempt whose request went again */
	int recovered;                /* no log line: rebuilt from its record */
	unsigned flags;               /* its line's CRAWL_LOG_* */
	const char *ip;               /* the server's address, "" if not known */
	uint64_t start_unix_ms;       /* a recovered fetch's start (WARC-Date) */
	const char *content_encoding; /* of the record's HTTP headers, or NULL */
	const uint8_t *body;          /* the record's payload as received (content-
	                                 encoded); NULL: no response record */
	size_t body_len;
};

struct crawl_tail;

/* Opens the tail of the crawl in dir after pos: warc says whether WARC
 * files were written. 0, 1 when there is no tail to read (pos unknown, or
 * past the log's end), or -1 with a message in err. */
int crawl_tail_open(const char *dir, const struct crawl_tail_pos *pos, int warc, size_t max_record,
                    struct crawl_tail **out, char *err, size_t errlen);
/* Revisits of records before the tail are read through dir/index.cdxj
 * (archive/lookup.h; max_url_len as the crawl's). 0, or -1 when the index
 * cannot be opened (those revisits then have no payload). */
int crawl_tail_use_index(struct crawl_tail *t, size_t max_url_len);
/* The next fetch: 1 with *e set, 0 at the end of the tail, -1 out of
 * memory or a read error (err gets the message). */
int crawl_tail_next(struct crawl_tail *t, const struct crawl_tail_entry **e, char *err,
                    size_t errlen);
/* Lines passed over so far as longer than CRAWL_TAIL_LINE_MAX (0 for NULL). */
uint64_t crawl_tail_lines_skipped(const struct crawl_tail *t);
/* NULL is a no-op. */
void crawl_tail_close(struct crawl_tail *t);

struct crawl_job;

/* How the replay reaches the crawl (the loop's; fetch loop thread). */
struct crawl_tail_hooks {
	void *ctx;
	/* e counted as just fetched (the visit's counters, its host's budget;
	 * a robots.txt answer sets the host's rules), its frontier host in
	 * *host: 0, or -1 when it cannot stand for a fetch (nothing done) */
	int (*count)(void *ctx, const struct crawl_tail_entry *e, uint32_t *host);
	/* j to the parse threads, without waiting: 0, or -1 (no room; j not
	 * taken) */
	int (*submit)(void *ctx, struct crawl_job *j);
	/* while they have no room: what the sieve emitted goes to the
	 * frontier, so that its flush thread never waits on a full emit queue
	 * (the loop is not running yet) */
	void (*drain)(void *ctx);
};

/* What the replay uses, all borrowed. */
struct done_set;
struct crawl_tail_replay_parts {
	const struct crawl_output *output; /* [output] dir, warc */
	const struct crawl_limits *crawl;  /* [crawl] sitemaps, quiet */
	const struct fetch_config *fetch;  /* [fetch] max_body_bytes: a record's bound */
	const struct warc_config *warc;    /* [warc] cdxj, max_url_len: revisits read
	                                      through index.cdxj; NULL: not */
	struct done_set *done;
	struct crawl_tail_hooks hooks;
};

/* What a replay did. */
struct crawl_tail_stats {
	uint64_t replayed;      /* fetches counted as done, not fetched again */
	uint64_t again;         /* fetches left to be made again */
	uint64_t recovered;     /* of both, those whose lines the crash lost */
	uint64_t lines_skipped; /* crawl.log lines over CRAWL_TAIL_LINE_MAX passed over */
};

/*
 * Replay, on the fetch loop thread before its first request: each fetch of
 * the tail is counted as done (hooks.count: the visit's counters, its
 * host's budget) and its URL goes into the done set, so the frontier and
 * the sieve never hand it out again (*out counts the fetches replayed and
 * those left); its URL (so the sieve knows it), its redirect target and,
 * for an HTML page, the links of its stored payload go to the sieve
 * through the parse threads (hooks.submit), as on a live crawl (the job is
 * not written again; a recovered fetch's line is appended to crawl.log
 * here, before the loop's first fetch, while the writer has nothing to
 * write). Not replayed, so fetched again: a fetch cancelled at a stop, an
 * HTML page whose payload the tail does not hold (a lost record, a
 * revisit whose response neither the tail nor the index holds), a robots.txt redirect or
 * unreachable answer (the host asks again, after its delay), and with
 * sitemaps on robots.txt and any 2xx response but HTML (it may be a
 * sitemap, whose registry is not checkpointed). The politeness state is
 * untouched: the first request after a resume waits a delay as before. 0,
 * or -1 (a message on stderr; nothing is lost: what was not replayed is
 * fetched again).
 */
int crawl_tail_replay(const struct crawl_tail_replay_parts *p, const struct crawl_tail_pos *pos,
                      struct crawl_tail_stats *out);

#endif
