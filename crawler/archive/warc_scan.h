/*
 * warc_scan.h: the records of a WARC file as warc.h writes it (one gzip
 * member per record), read in order from a member's offset, for the
 * index and the package.
 *
 * Each call inflates one member (streaming) and checks that it holds one
 * record: a "WARC/1.x" header block of at most WARC_SCAN_HEADER_MAX bytes
 * whose Content-Length, plus the header block and the closing CRLF CRLF,
 * is the member's inflated size. It gives the member's offset and
 * compressed length (what an index line names), the WARC fields the index
 * and the package read, and the block; a record larger than max_record
 * keeps its first max_record bytes (the HTTP header block is what is read
 * of it) and says so.
 *
 * A file cut inside a member, bytes that are not gzip, or a member that is
 * not one whole record end the scan: the call says which and where.
 *
 * Memory: a 256 KiB read buffer, a 256 KiB inflate buffer and one record
 * of at most max_record bytes. A scan belongs to one thread.
 *
 * (The store's WARC reader, store/warc_reader.h, is to replace this one.)
 */
#ifndef CRAWLER_ARCHIVE_WARC_SCAN_H
#define CRAWLER_ARCHIVE_WARC_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WARC_SCAN_HEADER_MAX (64u * 1024u)

enum warc_scan_result {
	WARC_SCAN_RECORD = 0,     /* a record: *rec filled */
	WARC_SCAN_END = 1,        /* the file ends after a whole member */
	WARC_SCAN_TORN = 2,       /* the file ends inside the member at rec->offset */
	WARC_SCAN_CORRUPT = 3,    /* the bytes at rec->offset do not inflate */
	WARC_SCAN_NOT_RECORD = 4, /* the member at rec->offset is not one record
	                             (rec->problem says how) */
	WARC_SCAN_ERR_IO = -1,    /* a read failed (errno kept) */
	WARC_SCAN_ERR_NOMEM = -2,
};

/* A WARC header field's value: a span of the record, trimmed; NULL, 0
 * when absent. */
struct warc_scan_field {
	const char *p;
	size_t len;
};

struct warc_scan_record {
	uint64_t offset;     /* of its gzip member in the file */
	uint64_t length;     /* the member's compressed size */
	const char *problem; /* with WARC_SCAN_NOT_RECORD: why (static text) */
	struct warc_scan_field type, date, target_uri, payload_digest, content_type;
	const uint8_t *block; /* the block, at most max_record bytes of it */
	size_t block_len;
	bool block_cut; /* the block is longer: only its first block_len bytes kept */
};

struct warc_scan;

/* A scan of path from the member at offset. 0, or -1 with errno set. */
int warc_scan_open(const char *path, uint64_t offset, size_t max_record, struct warc_scan **out);

/* The next record (see enum warc_scan_result); *rec valid until the next
 * call. */
enum warc_scan_result warc_scan_next(struct warc_scan *s, struct warc_scan_record *rec);

/* A field of the record just read (name matched whatever its case). */
struct warc_scan_field warc_scan_get(const struct warc_scan *s, const char *name);

/* NULL is a no-op. */
void warc_scan_close(struct warc_scan *s);

#endif
