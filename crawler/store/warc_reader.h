/*
 * warc_reader.h: the records of a WARC file as warc.h writes it, read in
 * order from any record's offset.
 *
 * Such a file is a concatenation of gzip members, one record per member.
 * A reader inflates one member per call (streaming) and checks that it
 * holds exactly one record: a "WARC/1.x" header block, at most
 * WARC_READER_HEADER_MAX bytes, whose Content-Length plus the header block
 * plus the closing CRLF CRLF is the member's inflated size. It gives the
 * record's place (its member's offset and compressed length: what an index
 * line names), its WARC header fields, and for a request, response or
 * revisit record the HTTP message of its block: status, header block,
 * payload.
 *
 * Memory, whatever the file: a read buffer (256 KiB), one inflated record
 * of at most max(max_record, WARC_READER_HEADER_MAX) bytes and a copy of
 * its header block (64 KiB), and for a record larger than that a 256 KiB
 * buffer its rest streams through. A
 * record that inflates past max_record is still read to its end and
 * checked (so the next member is found), but only its header block is
 * kept: it comes back as WARC_READ_TOO_LARGE, with its fields and place.
 *
 * A file cut short (a crash while a member was written), bytes that are
 * not gzip, or a member that is not one whole record end the reading: the
 * call says which and where, and every later call says it again; what
 * follows such a member cannot be told from its bytes. A reader belongs
 * to one thread.
 */
#ifndef CRAWLER_STORE_WARC_READER_H
#define CRAWLER_STORE_WARC_READER_H

#include <stddef.h>
#include <stdint.h>

/* A longer WARC header block is not one a writer of this format makes. */
#define WARC_READER_HEADER_MAX (64u * 1024u)

enum warc_read {
	WARC_READ_RECORD = 0,     /* a whole record: *rec filled */
	WARC_READ_TOO_LARGE = 1,  /* a whole record past max_record: its place and
	                             WARC fields in *rec, no block */
	WARC_READ_END = 2,        /* the file ends after a whole member: no more */
	WARC_READ_TORN = 3,       /* the file ends inside a member (rec->offset) */
	WARC_READ_CORRUPT = 4,    /* bytes at rec->offset are not a gzip member, or
	                             do not inflate */
	WARC_READ_NOT_RECORD = 5, /* the member at rec->offset is not one whole WARC
	                             record (rec->problem says how) */
	WARC_READ_ERR_IO = -1,    /* a read failed (errno kept); may be retried */
	WARC_READ_ERR_NOMEM = -2, /* memory is short; may be retried */
};

/* What res means, in a few words (static text). */
const char *warc_read_strerror(enum warc_read res);

/*
 * One record. Strings are NUL-terminated, their spaces around trimmed;
 * NULL when the record has no such field. Everything points into the
 * reader and is valid until its next call.
 */
struct warc_record {
	uint64_t offset; /* of its gzip member in the file */
	uint64_t length; /* the member's compressed size; 0 if not read to its end */
	/* its inflated size (header block, block, CRLF CRLF: what max_record
	 * caps); 0 if not read to its end */
	uint64_t record_size;
	const char *problem; /* why it is not a whole record (static text), or NULL */

	/* WARC header fields */
	const char *type;                 /* WARC-Type: "response", "revisit", ... */
	const char *record_id;            /* WARC-Record-ID, "<urn:uuid:...>" */
	const char *date;                 /* WARC-Date, "2026-01-02T03:04:05.678Z" */
	const char *target_uri;           /* WARC-Target-URI */
	const char *content_type;         /* Content-Type of the block */
	const char *ip_address;           /* WARC-IP-Address */
	const char *concurrent_to;        /* WARC-Concurrent-To */
	const char *protocol;             /* WARC-Protocol: "h2", "http/1.1" */
	const char *block_digest;         /* WARC-Block-Digest, "sha1:..." */
	const char *payload_digest;       /* WARC-Payload-Digest */
	const char *truncated;            /* WARC-Truncated: "length", ... */
	const char *profile;              /* WARC-Profile of a revisit */
	const char *refers_to;            /* WARC-Refers-To */
	const char *refers_to_target_uri; /* WARC-Refers-To-Target-URI */
	const char *refers_to_date;       /* WARC-Refers-To-Date */
	/* the crawler's own (warc.h): the fetch's depth, via, log flags and
	 * followed redirect */
	const char *crawler_depth;
	const char *crawler_via;
	const char *crawler_flags;
	const char *crawler_redirect;
	uint64_t content_length; /* the block's size */

	/* The block, as stored; NULL for WARC_READ_TOO_LARGE. */
	const uint8_t *block;
	size_t block_len;

	/*
	 * The block's HTTP message, for a request, response or revisit
	 * record: its header block (the request or status line, the header
	 * lines and the blank line after them) and its payload, the bytes
	 * after that blank line. A block with no blank line: a revisit's is
	 * all header block (it stores headers only) with no payload; any
	 * other has neither. http_status: the status line's code, 0 when
	 * there is none.
	 */
	int http_status;
	const char *http_headers;
	size_t http_headers_len;
	const uint8_t *payload;
	size_t payload_len;
	int chunked; /* the HTTP headers name a chunked transfer coding */
};

struct warc_reader;

/*
 * A reader of path from the member at offset (0: the file's start; a
 * record's offset: that record). max_record caps the inflated size of a
 * record read whole. 0, or -1 with errno set (open failed; ENOMEM).
 */
int warc_reader_open(const char *path, uint64_t offset, size_t max_record,
                     struct warc_reader **out);
/* The same on an open file, which the reader reads with pread and never
 * closes: fd must stay open until warc_reader_close. */
int warc_reader_open_fd(int fd, uint64_t offset, size_t max_record, struct warc_reader **out);

/* The next record into *rec (see enum warc_read). */
enum warc_read warc_reader_next(struct warc_reader *r, struct warc_record *rec);

/* Goes to the member at offset, as if opened there: the next call reads
 * the record that starts at offset (one record of an index, read again). */
void warc_reader_seek(struct warc_reader *r, uint64_t offset);

/*
 * Undoes a chunked transfer coding of rec's payload in place, when
 * rec->chunked says there is one and the payload is a whole chunked body;
 * payload_len shrinks to the entity body. Our writer stores bodies with
 * the coding removed (warc.h); other writers may not. The block's bytes
 * change with it.
 */
void warc_record_unchunk(struct warc_record *rec);

/* Closes the file if the reader opened it. NULL is a no-op. */
void warc_reader_close(struct warc_reader *r);

#endif
