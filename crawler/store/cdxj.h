/*
 * cdxj.h: CDXJ index lines, as warcio.js's `cdx-index` writes them.
 *
 * A CDXJ line names where one capture lies in a WARC file:
 *
 *   URLKEY TIMESTAMP {"url":...,"mime":...,"status":...,"digest":...,
 *                     "length":...,"offset":...,"filename":...}
 *
 * The replay tools (pywb, ReplayWeb.page) look captures up by URLKEY, the
 * SURT form of the URL ("http://www.Example.com/a?b=1&a=2" ->
 * "com,example)/a?a=2&b=1": scheme and a leading "www<digits>." dropped,
 * lower-cased, host labels reversed, query arguments sorted), in a file
 * sorted by whole lines, byte by byte. One line per record but requests,
 * warcinfo records, and metadata and resource records of type
 * application/warc-fields (the crawler writes responses and revisits); a
 * revisit's mime is "warc/revisit", a record's but a response's its
 * Content-Type. Offset and length are the record's gzip member in the
 * file, compressed bytes.
 *
 * The fields are computed as warcio.js computes them, so that the index
 * holds the same lines as that independent indexer run over the same
 * files (a test compares them): the HTTP status is the second
 * space-separated word of the status line read as a JavaScript number
 * ("200"; "" when the line has one word), mime is the Content-Type header
 * (every such header, joined ", ") up to its first ';', trimmed, the
 * header block is the bytes after the status line up to the first CR LF CR
 * LF (which may lie in the body when the server ended its header lines
 * with bare LF), decoded as UTF-8 with U+FFFD replacements, a value with
 * code points past U+00FF stored as its UTF-8 bytes read as Latin-1, a
 * value holding NUL, CR or LF dropped; strings are escaped as
 * JSON.stringify does. Known difference: a URL that is not WHATWG-
 * serialized and holds non-ASCII capitals gets them percent-encoded before
 * lower-casing (warcio lower-cases first); the crawler writes serialized
 * URLs only.
 *
 * Data structure: a `struct cdxj_indexer` owns a URL parser (frontier/url.h)
 * and scratch buffers that grow to the largest record header block seen;
 * the line it returns lives in it until the next call. No other state:
 * lines do not depend on each other. One indexer per thread.
 *
 * Workload: one line per fetch on the WARC writer's thread, a few hundred
 * bytes each; the work is linear in the record's HTTP header block.
 */
#ifndef CRAWLER_STORE_CDXJ_H
#define CRAWLER_STORE_CDXJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cdxj_error {
	CDXJ_OK = 0,
	CDXJ_SKIP = 1,        /* not an error: a record type that gets no line */
	CDXJ_ERR_NOMEM = 2,   /* allocation failed */
	CDXJ_ERR_INVALID = 3, /* bad argument, or a line that is not one of ours */
};

const char *cdxj_strerror(enum cdxj_error err);

/* One record to index. Strings are WARC header values as stored (not
 * NUL-terminated; NULL with length 0 when the header is absent); all
 * borrowed for the call. */
struct cdxj_record {
	const char *type; /* WARC-Type */
	size_t type_len;
	const char *url; /* WARC-Target-URI */
	size_t url_len;
	const char *date; /* WARC-Date */
	size_t date_len;
	const char *payload_digest; /* WARC-Payload-Digest */
	size_t payload_digest_len;
	const char *content_type; /* the record's Content-Type */
	size_t content_type_len;
	/* The record block (the HTTP message), in up to two pieces (headers,
	 * then body); the second may be NULL. Only a response or revisit's
	 * block is read. */
	const uint8_t *block;
	size_t block_len;
	const uint8_t *block2;
	size_t block2_len;
	uint64_t offset;      /* the record's gzip member: where it starts... */
	uint64_t length;      /* ...and its compressed size */
	const char *filename; /* the WARC file's base name, NUL-terminated */
};

struct cdxj_indexer;

/* NULL when out of memory. max_url_len bounds the URLs whose SURT is
 * computed by parsing (longer ones keep their text, as when a URL does
 * not parse); 0 -> 65536. */
struct cdxj_indexer *cdxj_indexer_create(size_t max_url_len);
void cdxj_indexer_destroy(struct cdxj_indexer *ix);

/* The line of record r, '\n' included, in *line (owned by ix, valid until
 * the next call) and *len. CDXJ_SKIP for a record that is not indexed. */
enum cdxj_error cdxj_indexer_line(struct cdxj_indexer *ix, const struct cdxj_record *r,
                                  const char **line, size_t *len);

/* The SURT urlkey of url (as warcio.js's getSurt), NUL-terminated in
 * *key (owned by ix, valid until the next call). */
enum cdxj_error cdxj_indexer_urlkey(struct cdxj_indexer *ix, const char *url, size_t len,
                                    const char **key, size_t *key_len);

/* What a line of ours says about where its record lies. */
struct cdxj_location {
	uint64_t offset;
	uint64_t length;
	const char *filename; /* inside the line, not NUL-terminated */
	size_t filename_len;
};

/* Reads back a line written by cdxj_indexer_line (without its '\n'):
 * 0 and *loc, or CDXJ_ERR_INVALID when it is not a whole line of that
 * form (a torn or corrupt line). */
enum cdxj_error cdxj_line_location(const char *line, size_t len, struct cdxj_location *loc);

/* Any CDXJ line's capture, read in place (cdxj_line_read): the urlkey,
 * the timestamp and the JSON object's string fields, each NUL-terminated
 * and unescaped; NULL when absent. Numbers: 0 when absent. */
struct cdxj_fields {
	const char *urlkey, *timestamp;
	const char *url, *mime, *status, *digest, *filename;
	uint64_t offset, length;
	bool has_offset, has_length;
};

/* Reads a CDXJ line (without its '\n') of any writer (pywb, warcio.js,
 * this crawler): URLKEY TIMESTAMP {JSON object}. The object's values may
 * be strings or bare numbers, with or without spaces around ':' and ','
 * (pywb writes ", "); string escapes are undone in place (the line
 * changes), unknown fields ignored. 0, or CDXJ_ERR_INVALID when the line
 * is not whole or not of that form (a torn line, bad JSON, an offset or
 * length that is not a decimal number). */
enum cdxj_error cdxj_line_read(char *line, size_t len, struct cdxj_fields *out);

/* A growable text buffer (owner: the caller; cdxj_text_free frees it). */
struct cdxj_text {
	char *p;
	size_t len, cap;
};

/* Frees t's text and leaves t empty, ready to be added to again. */
void cdxj_text_free(struct cdxj_text *t);

/* Appends s[0..len) (valid UTF-8) to t as a JSON string, quotes included,
 * escaped as JSON.stringify does. 0, or -1 when out of memory. */
int cdxj_json_string(struct cdxj_text *t, const char *s, size_t len);

/* Appends s[0..len) to t. 0, or -1 when out of memory. */
int cdxj_text_add(struct cdxj_text *t, const char *s, size_t len);

/* Replaces every invalid UTF-8 sequence of s[0..len) by U+FFFD as the
 * WHATWG decoder does, appending the result to t. 0, or -1 (memory). */
int cdxj_utf8_sanitize(struct cdxj_text *t, const uint8_t *s, size_t len);

#endif
