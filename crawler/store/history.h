/*
 * history.h: a crawl's history, what a later recrawl (`crawler crawl
 * --previous DIR`) asks the web with: per URL fetched with a 200, or found
 * unchanged, its validators and where its payload lies.
 *
 * One text line per capture, 15 fields separated by tabs:
 *
 *   SIG DATE FILE OFFSET LENGTH DEPTH ETAG LAST-MODIFIED
 *   REF-ID REF-DATE REF-DIGEST REF-FILE REF-OFFSET REF-URI URL
 *
 *   SIG            16 lower-case hex digits of the URL's signature, XXH3-64
 *                  of its crawl key (as the sieve's): lines sorted byte by
 *                  byte are sorted by signature
 *   DATE           the capture's WARC-Date
 *   FILE OFFSET LENGTH  the capture's record: its WARC file and gzip member
 *   DEPTH          the depth word the URL was fetched at (frontier.h); '-'
 *                  when unknown (a line made again from a record)
 *   ETAG LAST-MODIFIED  the response's validators, '-' when none
 *   REF-...        the record holding the payload: WARC-Record-ID,
 *                  WARC-Date, WARC-Payload-Digest, file, offset,
 *                  WARC-Target-URI. A response is its own ('=' in REF-DATE,
 *                  REF-FILE and REF-URI: DATE, FILE and URL); a revisit
 *                  names its original's
 *   URL            the crawl key
 *
 * A file name is relative to the folder of the file that holds the line
 * (a crawl's own WARC files), or an absolute path (an earlier crawl's). No
 * field holds a tab, CR or LF: a validator that would, or is longer than
 * HISTORY_VALIDATOR_MAX bytes, or holds a control byte, is dropped ('-'),
 * and a URL or file name that would makes no line.
 *
 * Captures (history_wanted): a response with a 200, and a revisit (of
 * identical payload, or server-not-modified) that names its original's
 * record; never robots.txt (the crawl fetches it itself).
 *
 * A revisit names where its original lies in WARC-Refers-To-Container:
 * "warcfile:FILE#OFFSET" (the warcfile URI scheme: FILE as above, OFFSET
 * its gzip member), beside WARC-Refers-To, -Target-URI and -Date.
 *
 * Cost: about 250 bytes of disk per URL (a 40-byte URL); nothing in
 * memory but what the reader of the file keeps (archive/previous.h).
 * Work: one line per page written, a few hundred bytes of formatting.
 */
#ifndef CRAWLER_STORE_HISTORY_H
#define CRAWLER_STORE_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HISTORY_FIELDS 15
/* The longest ETag or Last-Modified value kept. */
#define HISTORY_VALIDATOR_MAX 256u
/* The value of WARC-Refers-To-Container: "warcfile:" FILE "#" OFFSET. */
#define HISTORY_CONTAINER_SCHEME "warcfile:"

struct cdxj_text;
struct warc_record;

/* One capture. Strings are NUL-terminated; NULL for an absent validator. */
struct history_entry {
	uint64_t sig;
	const char *date;
	const char *file;
	uint64_t offset, length;
	uint32_t depth;
	bool has_depth;
	const char *etag, *last_modified;
	const char *ref_id, *ref_date, *ref_digest, *ref_file;
	uint64_t ref_offset;
	const char *ref_uri;
	const char *url;
};

/* The signature of a crawl key. */
uint64_t history_sig(const char *url, size_t len);

/* Whether a URL's capture is kept (robots.txt is not). */
bool history_wanted(const char *url);

/* Appends e's line ('\n' included) to t. 0; 1 when e cannot make a line
 * (a URL, file or record field holding a tab, CR or LF, or missing): t
 * unchanged; -1 out of memory. */
int history_line(struct cdxj_text *t, const struct history_entry *e);

/* Reads a line (without its '\n') in place: its tabs become NULs, e's
 * strings point into it, '=' resolved. 0, or -1 when it is not a whole
 * line of this form. */
int history_parse(char *line, size_t len, struct history_entry *e);

/* The ETag and Last-Modified of an HTTP header block (the first of each),
 * trimmed, into etag and lm ("" when absent or dropped, see above). */
void history_validators(const char *block, size_t len, char etag[HISTORY_VALIDATOR_MAX + 1],
                        char lm[HISTORY_VALIDATOR_MAX + 1]);

/* The line of a record read back (its depth unknown), file naming its WARC
 * file as lines do. 0 and the line appended to t; 1 when the record is no
 * capture (history_wanted); -1 out of memory. */
int history_of_record(struct cdxj_text *t, const struct warc_record *rec, const char *file);

/* WARC-Refers-To-Container's value for FILE and OFFSET into out. 0, or -1
 * when it does not fit. */
int history_container(const char *file, uint64_t offset, char *out, size_t cap);
/* Reads a WARC-Refers-To-Container value: the file name (copied into
 * file, cap bytes) and offset. 0, or -1 when it is not of that form. */
int history_container_parse(const char *value, char *file, size_t cap, uint64_t *offset);

#endif
