/*
 * warc.h: WARC 1.1 writer.
 *
 * Files are DIR/PREFIX-YYYYMMDDhhmmss-NNNNN.warc.gz (UTC time the file was
 * opened, NNNNN a serial from 00000). Every record is its own gzip member, so
 * a file is a concatenation of members and any record can be read from its
 * offset. Each file opens with a `warcinfo` record. Per fetch: a `request`
 * record (the request headers as sent) and a `response` record
 * (application/http; msgtype=response: status line + headers + raw body as
 * received), linked by WARC-Concurrent-To; both carry WARC-Block-Digest and
 * the response WARC-Payload-Digest ("sha1:" + base32 SHA-1). A response whose
 * payload digest was already written in this crawl becomes a `revisit`
 * record (WARC-Profile identical-payload-digest, headers only, WARC-Refers-To
 * the earlier record id, WARC-Refers-To-Target-URI/-Date). The caller may
 * add fields of its own to the response or revisit record
 * (warc_fetch.fields: the crawler's WARC-Crawler-*, crawl_writer.h). Every request,
 * response and revisit record names its protocol in WARC-Protocol ("h2" or
 * "http/1.1"); an HTTP/2 exchange is written as an HTTP/1.1 message (the
 * version of its request and status lines rewritten, nothing else), as
 * other WARC writers do, so HTTP/1.1 readers replay it.
 *
 * The response block's headers describe the body stored: libcurl removes
 * the chunked transfer coding (the body stored is the entity body, still
 * content-encoded), so a "Transfer-Encoding" line is stored renamed
 * "X-Crawler-Transfer-Encoding", a Content-Length beside it
 * "X-Crawler-Content-Length", and "Content-Length: <stored bytes>" is
 * added; a strict reader then reads the message as stored. The
 * WARC-Payload-Digest is over that entity body (WARC 1.1: transfer coding
 * removed, content coding kept).
 *
 * Index: with `cdxj` set, each file PREFIX-...-NNNNN.warc.gz gets a CDXJ
 * index beside it, PREFIX-...-NNNNN.cdxj (cdxj.h): one line per response
 * or revisit record, appended once the fetch's records are in the file. It
 * is written through a buffer and synced with the file at
 * warc_writer_sync and at rotation, so after a crash it is a prefix of the
 * file's index (perhaps with a torn last line); the index tools complete
 * it from the records (archive/index.h). A write that fails ends that
 * file's index there (counted in index_errors), the WARC goes on.
 *
 * Invariants: a file is rotated before a record would start past
 * max_file_bytes (a record is never split; a file always holds at least one
 * record after its warcinfo); the digest table is bounded (digest_entries;
 * oldest forgotten first, each with its URL: at most WARC_URL_KEEP bytes
 * of URL an entry), so revisit detection is best effort past it. A
 * revisit's WARC-Refers-To-Target-URI is always its original's whole
 * WARC-Target-URI: a payload first written under a URL longer than
 * WARC_URL_KEEP is not remembered (a repeat of it is written whole).
 *
 * Thread-confined, synchronous: the crawler's writer thread owns the
 * writer. Workload: one request+response pair per fetch, bodies up to a few
 * MiB.
 */
#ifndef CRAWLER_STORE_WARC_H
#define CRAWLER_STORE_WARC_H

/* The longest original URL a revisit may refer to (the memory of a digest
 * table entry); the crawl's URLs are this long by default (max_url_len). */
#define WARC_URL_KEEP 2048u

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum warc_error {
	WARC_OK = 0,          /* done */
	WARC_ERR_NOMEM = 1,   /* allocation failed */
	WARC_ERR_INVALID = 2, /* bad argument (missing URL, bad prefix) */
	WARC_ERR_IO = 3,      /* open/write/fsync failed (errno kept) */
	WARC_ERR_ZLIB = 4,    /* compression failed */
};

const char *warc_strerror(enum warc_error err);

struct warc_config {
	const char *dir;           /* output directory, must exist; copied */
	const char *prefix;        /* file name prefix, no '/'; NULL -> "crawl" */
	uint64_t max_file_bytes;   /* rotate at this compressed size; 0 -> 1e9 */
	size_t digest_entries;     /* revisit table size; 0 -> 65536 */
	bool no_revisits;          /* never write revisit records */
	const char *software;      /* warcinfo "software:"; NULL -> "crawler/0.1" */
	const char *operator_info; /* warcinfo "operator:", or NULL */
	const char *user_agent;    /* warcinfo "http-header-user-agent:", or NULL */
	int compression_level;     /* zlib level; 0 -> 6 */
	bool cdxj;                 /* write a CDXJ index beside each file */
	size_t max_url_len;        /* longest URL indexed by its parts (cdxj.h); 0 -> 65536 */
};

/* The crawler's own fields of a response or revisit record: what its
 * crawl.log line holds and the HTTP message does not (crawl_writer.h). */
#define WARC_CRAWLER_DEPTH "WARC-Crawler-Depth"
#define WARC_CRAWLER_VIA "WARC-Crawler-Via"
#define WARC_CRAWLER_FLAGS "WARC-Crawler-Flags"
#define WARC_CRAWLER_REDIRECT "WARC-Crawler-Redirect"

/* A WARC header field of the writer's caller, added to a fetch's response
 * or revisit record (the crawler's own: crawl_writer.h). */
struct warc_field {
	const char *name;  /* a token; a field of the standard is not one */
	const char *value; /* CR and LF become spaces */
};

/* One fetch to record. All pointers borrowed for the call. */
struct warc_fetch {
	const char *url;             /* WARC-Target-URI (required) */
	const char *ip;              /* WARC-IP-Address, or NULL/"" */
	int64_t date_unix_ms;        /* WARC-Date (fetch start), UTC */
	const void *request_headers; /* as sent; NULL/0 -> no request record */
	size_t request_len;
	const void *response_headers; /* status line + headers, as received */
	size_t response_headers_len;
	const void *body; /* raw body as received */
	size_t body_len;
	bool truncated;                  /* adds WARC-Truncated: length */
	bool http2;                      /* the exchange was HTTP/2: header blocks in curl's
	                        rendering ("GET / HTTP/2", "HTTP/2 200") */
	bool incompressible;             /* payload compressed already (Content-Encoding,
	                                     images, archives): its response member is
	                                     stored, not deflated again */
	const struct warc_field *fields; /* more fields of the response or revisit
	                                    record, or NULL */
	size_t nfields;
};

/* Where a record landed, for checkpoints and indexes. */
struct warc_position {
	char file[256];  /* base name of the current file */
	uint64_t offset; /* byte offset of the record's gzip member */
};

struct warc_writer;

/* Opens a writer and its first file (with warcinfo). On error *out NULL. */
enum warc_error warc_writer_open(const struct warc_config *config, struct warc_writer **out);

/*
 * Writes the request and response (or revisit) records of one fetch.
 * where (optional) receives the response record's position; revisit
 * (optional) is set true when a revisit record was written. All or
 * nothing: the records are flushed to the file before it returns, and on
 * WARC_ERR_IO (errno set: ENOSPC...) the file is cut back to where it was,
 * so the same fetch can be written again later. A rotation that failed is
 * retried by the next call.
 */
enum warc_error warc_writer_write_fetch(struct warc_writer *w, const struct warc_fetch *f,
                                        struct warc_position *where, bool *revisit);

/* fflush + fsync of the current file. */
enum warc_error warc_writer_sync(struct warc_writer *w);

/* The current file's base name and the offset the next record will get. */
void warc_writer_position(const struct warc_writer *w, struct warc_position *out);

/* Counters. */
struct warc_stats {
	uint64_t records; /* all records, warcinfo included */
	uint64_t responses;
	uint64_t revisits;
	uint64_t files;        /* files opened */
	uint64_t bytes;        /* compressed bytes written, all files */
	uint64_t index_lines;  /* CDXJ lines written */
	uint64_t index_errors; /* CDXJ indexes cut short by a failed write */
};
void warc_writer_stats(const struct warc_writer *w, struct warc_stats *out);

/* Flushes, fsyncs and closes. NULL is a no-op. Returns the first error of
 * the final flush (the writer is freed regardless). */
enum warc_error warc_writer_close(struct warc_writer *w);

/* Helpers, exposed for tests and other writers. */
/* SHA-1 of data; out gets 20 bytes. */
void warc_sha1(const void *data, size_t len, uint8_t out[20]);
/* "sha1:" + RFC 4648 base32 of a 20-byte digest: writes 37 chars + NUL. */
void warc_sha1_label(const uint8_t digest[20], char out[38]);

#endif
