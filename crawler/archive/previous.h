/*
 * previous.h: an earlier crawl's history (store/history.h), what a
 * recrawl (`crawler crawl --previous DIR`) asks the web with.
 *
 * The table: open addressing on the URL's signature, one slot of 16 bytes
 * (the signature, and where its line lies: the history file's number and
 * the line's offset), at most half full: 16 to 32 bytes of memory per URL
 * of the earlier crawl, whatever its URLs' lengths; the lines stay on disk
 * (DIR/NAME.history, one descriptor each, kept open) and a lookup reads
 * one back (one pread of a few hundred bytes, from the page cache as a
 * rule: the files were just read through).
 *
 * Load: every DIR/NAME.history in name order (the WARC files' order:
 * their names start with the time they were opened), so a URL's last
 * capture wins. A line that is not whole or not of the form is skipped
 * and counted (bad_lines); a file that cannot be read is an error. A
 * folder without any history is an error too (nothing to recrawl
 * against: an earlier crawl made with [output] history = false, or not a
 * crawl's folder).
 *
 * Threads: loading and iterating are single-threaded (set-up); lookups may
 * run on any thread at once (pread, nothing mutable).
 */
#ifndef CRAWLER_ARCHIVE_PREVIOUS_H
#define CRAWLER_ARCHIVE_PREVIOUS_H

#include <stddef.h>
#include <stdint.h>

#include "crawler/store/history.h"

struct previous;

struct previous_stats {
	uint64_t files;     /* history files read */
	uint64_t lines;     /* lines read */
	uint64_t bad_lines; /* lines skipped: not whole, or not of the form */
	uint64_t urls;      /* URLs in the table */
};

/* Loads DIR's history. 0, or -1 with a message in err. */
int previous_open(const char *dir, struct previous **out, char *err, size_t errlen);
void previous_destroy(struct previous *p);
void previous_stats(const struct previous *p, struct previous_stats *out);

/* One URL's earlier capture: e's strings point into the hit; ref_path is
 * the payload record's WARC file as a path (DIR's files made absolute).
 * Freed with free(). */
struct previous_hit {
	struct history_entry e;
	const char *ref_path;
	char buf[]; /* the line, then ref_path */
};

/* The earlier capture of a URL (a crawl key), or NULL (none, unreadable,
 * out of memory). */
struct previous_hit *previous_lookup(const struct previous *p, const char *url, size_t len);

/* Calls fn with each URL of the table (in no order); stops at its first
 * nonzero return, which it returns. 0 when all were seen; -1 when a line
 * could not be read again. */
int previous_each_url(const struct previous *p, int (*fn)(void *ctx, const char *url), void *ctx);

#endif
