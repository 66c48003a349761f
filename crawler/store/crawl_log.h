/*
 * crawl_log.h: the crawl log, one tab-separated line per fetch.
 *
 * Columns (the first line of a new file is this header, starting with '#'):
 *   #timestamp status bytes url via depth content_type duration_ms ip
 *   error redirect flags wait_ms
 * timestamp: ISO 8601 UTC with milliseconds (2026-11-22T23:59:01.123Z);
 * status: HTTP status, or a negative error code when no response;
 * via: the URL the fetched one was discovered from, or "-";
 * error: a reason word, or "-"; redirect: the Location target or "-";
 * flags: comma-separated names (truncated, redirect, near-dup, revisit,
 * robots, embed: a page requisite, Heritrix's 'E' hop, requeued,
 * recovered), then, for an HTML page a focused crawl scored, focus=S (S
 * its score, parse/focus.h, with 4 decimals: focus=0.0625), or "-"
 * (readers of the flags ignore a name they do not know); wait_ms: the rest the politeness required of the host
 * before this request, counted from the end of its previous visit (the
 * policy's wait with Crawl-delay, back-off and Retry-After applied; 0 for
 * a host's first visit and for requests after the first of a visit).
 * Readers also take lines of 12 fields, without wait_ms, so that they read
 * the logs of crawlers that did not write it.
 * Field escaping: '\\' -> "\\\\", TAB -> "\\t", LF -> "\\n", CR -> "\\r",
 * other control bytes -> "\\xHH"; an empty or NULL field is "-" (and a field
 * that is literally "-" stays "-"). So every record is exactly one line of
 * exactly 13 fields. A text field is capped once escaped: url, via and
 * redirect at CRAWL_LOG_URL_MAX bytes (twice the longest URL [frontier]
 * max_url_len allows, so a URL is never cut), content_type, ip and error at
 * CRAWL_LOG_TEXT_MAX (a server's Content-Type may be any length); a field
 * past its cap is cut and ends with "...". So no line is longer than
 * CRAWL_LOG_LINE_MAX, the most a reader of the log needs to hold.
 *
 * Thread-confined and synchronous (the writer thread owns it). Buffered
 * (64 KiB); flush/sync on demand. A write or flush that fails (ENOSPC...)
 * returns CRAWL_LOG_ERR_IO with errno set and loses nothing: a line
 * refused by crawl_log_write was not taken (write it again), and bytes a
 * flush could not write stay buffered for the next one, so the file only
 * ever holds whole lines in order once a flush succeeds.
 */
#ifndef CRAWLER_STORE_CRAWL_LOG_H
#define CRAWLER_STORE_CRAWL_LOG_H

#include <stddef.h>
#include <stdint.h>

#define CRAWL_LOG_URL_MAX (16u * 1024u)  /* url, via, redirect, escaped */
#define CRAWL_LOG_TEXT_MAX 1024u         /* content_type, ip, error, escaped */
#define CRAWL_LOG_LINE_MAX (64u * 1024u) /* a line, newline included */

enum crawl_log_error {
	CRAWL_LOG_OK = 0,          /* done */
	CRAWL_LOG_ERR_NOMEM = 1,   /* allocation failed */
	CRAWL_LOG_ERR_INVALID = 2, /* bad argument */
	CRAWL_LOG_ERR_IO = 3,      /* open/write/fsync failed */
};

const char *crawl_log_strerror(enum crawl_log_error err);

#define CRAWL_LOG_TRUNCATED 0x01u
#define CRAWL_LOG_REDIRECT 0x02u
#define CRAWL_LOG_NEAR_DUP 0x04u
#define CRAWL_LOG_REVISIT 0x08u
#define CRAWL_LOG_ROBOTS 0x10u
#define CRAWL_LOG_EMBED 0x20u
/* The request goes again later (a connect that failed over to the host's
 * other address family, a reused connection closed unanswered): the line
 * records an attempt, not the URL's fetch, and a resume replays no such
 * line. */
#define CRAWL_LOG_REQUEUED 0x40u
/* A line a resume rebuilt from the fetch's WARC record, the crashed crawl
 * having lost the line itself (crawl_tail.h): its duration and wait_ms are
 * not known (0), its timestamp is the fetch's start (WARC-Date). */
#define CRAWL_LOG_RECOVERED 0x80u
/* The flags' names, comma-separated, NUL included: the longest list. */
#define CRAWL_LOG_FLAGS_MAX 72u
/* ",focus=" and a score: the most a focus score adds to the flags. */
#define CRAWL_LOG_FOCUS_MAX 24u

/* One line. Strings borrowed for the call; NULL prints "-". */
struct crawl_log_entry {
	int64_t timestamp_unix_ms;
	long status;
	uint64_t bytes;
	const char *url;
	const char *via;
	int depth;
	const char *content_type;
	uint64_t duration_ms;
	const char *ip;
	const char *error;
	const char *redirect;
	unsigned flags;   /* CRAWL_LOG_* */
	uint64_t wait_ms; /* rest required before the request (see above) */
	int has_focus;    /* the page was scored: focus (FOCUS_SCORE_ONE units) */
	uint32_t focus;
};

struct crawl_log;

/* Opens path for appending ("-" is stdout); writes the header line if the
 * file is empty. On error *out is NULL. */
enum crawl_log_error crawl_log_open(const char *path, struct crawl_log **out);

enum crawl_log_error crawl_log_write(struct crawl_log *log, const struct crawl_log_entry *e);

/* Formats one entry (no trailing newline needed by caller: one is added)
 * into buf; returns the length it needs (like snprintf), so a return >= cap
 * means truncated. For tests and other sinks. */
size_t crawl_log_format(const struct crawl_log_entry *e, char *buf, size_t cap);

/* fflush (+ fsync when sync is nonzero). */
enum crawl_log_error crawl_log_flush(struct crawl_log *log, int sync);

/* The file's size once flushed: where a checkpoint's cut falls in it (0
 * for stdout). */
uint64_t crawl_log_size(struct crawl_log *log);

/* ---- reading lines back (the audit, a resume's tail) ---- */

#define CRAWL_LOG_FIELDS 13 /* a log before wait_ms has one fewer */

enum crawl_log_field {
	CRAWL_LOG_F_TIME = 0,
	CRAWL_LOG_F_STATUS,
	CRAWL_LOG_F_BYTES,
	CRAWL_LOG_F_URL,
	CRAWL_LOG_F_VIA,
	CRAWL_LOG_F_DEPTH,
	CRAWL_LOG_F_CTYPE,
	CRAWL_LOG_F_DURATION,
	CRAWL_LOG_F_IP,
	CRAWL_LOG_F_ERROR,
	CRAWL_LOG_F_REDIRECT,
	CRAWL_LOG_F_FLAGS,
	CRAWL_LOG_F_WAIT,
};

/* Splits a line (len bytes, no newline) at its tabs into f[i] (fl[i]
 * bytes, escaped), both of CRAWL_LOG_FIELDS entries. Returns the number of
 * fields, or -1 when there are more than CRAWL_LOG_FIELDS. */
int crawl_log_split(const char *line, size_t len, const char **f, size_t *fl);
/* Undoes a field's escaping into out (room for len + 1 bytes,
 * NUL-terminated); "-" becomes "". Returns the end of out (past its NUL),
 * or NULL on a bad escape or a NUL byte. */
char *crawl_log_unescape(const char *s, size_t len, char *out);
/* A decimal integer, optionally negative, of at most 18 digits. 0 or -1. */
int crawl_log_parse_i64(const char *s, size_t len, int64_t *out);
/* 1 if the flags field (len bytes) names flag name. */
int crawl_log_has_flag(const char *s, size_t len, const char *name);
/* The names of flags (CRAWL_LOG_*), comma-separated, into buf (NUL-
 * terminated; CRAWL_LOG_FLAGS_MAX holds any); "" for none. Returns the
 * length. */
size_t crawl_log_flags_text(unsigned flags, char *buf, size_t cap);
/* The focus score a flags field (len bytes) holds: 1 and *score, or 0. */
int crawl_log_focus_of(const char *s, size_t len, uint32_t *score);
/* The flags a comma-separated list of names sets (unknown names ignored). */
unsigned crawl_log_flags_parse(const char *s, size_t len);

/* Flushes and closes. NULL is a no-op. */
enum crawl_log_error crawl_log_close(struct crawl_log *log);

#endif
