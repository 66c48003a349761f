/*
 * previous.h: earlier crawls' histories (store/history.h) or indexes
 * (store/cdxj.h), what a recrawl (`crawler crawl --previous PATH`, given
 * once or more) asks the web with.
 *
 * The table: open addressing on the URL's signature, one slot of 16 bytes
 * (the signature, and where its line lies: the file's number and the
 * line's offset), at most half full: 16 to 32 bytes of memory per URL of
 * the earlier crawls, whatever its URLs' lengths; the lines stay on disk
 * (one descriptor per file, kept open) and a lookup reads one back (one
 * pread of a few hundred bytes, from the page cache as a rule: the files
 * were just read through).
 *
 * Load, path by path in the order given, so that when a URL is in several
 * the capture of the path given last wins:
 * - a folder: its *.history in name order (the WARC files' order: their
 *   names start with the time they were opened), so a URL's last capture
 *   wins; a folder without history: its index.cdxj;
 * - a CDXJ file (a crawl's index.cdxj, or any CDXJ whose filename fields
 *   name WARC files in its folder): its folder's *.history when there are
 *   any (they carry the validators, which CDXJ lacks: indexes_by_history
 *   counts these), else its lines: a 200 response's url, timestamp (as
 *   the WARC-Date), digest, filename, offset, length. No validators, so no
 *   conditional request; revisits and other statuses are skipped and
 *   counted (cdxj_skipped). Its URLs are keyed as crawl keys under the
 *   crawl's [url] options, as history lines are.
 * Each file's names of WARC files resolve against its own folder. A line
 * that is not whole or not of the form is skipped and counted
 * (bad_lines); a file that cannot be read, an index without one usable
 * line, and a folder with neither history nor index are errors.
 *
 * Threads: loading and iterating are single-threaded (set-up); lookups may
 * run on any thread at once (pread; the URL parser of a CDXJ line under
 * a lock).
 */
#ifndef CRAWLER_ARCHIVE_PREVIOUS_H
#define CRAWLER_ARCHIVE_PREVIOUS_H

#include <stddef.h>
#include <stdint.h>

#include "crawler/store/history.h"

struct previous;
struct url_options;

struct previous_stats {
	uint64_t files;              /* history and index files read */
	uint64_t indexes;            /* of which CDXJ indexes */
	uint64_t indexes_by_history; /* indexes named, read as their folders' history */
	uint64_t lines;              /* lines read */
	uint64_t bad_lines;          /* lines skipped: not whole, or not of the form */
	uint64_t cdxj_skipped;       /* index lines of no page's 200 (revisits, ...) */
	uint64_t urls;               /* URLs in the table */
};

/* The separator of several paths in one value ([output] previous). */
#define PREVIOUS_SEPARATOR ","

/* Splits list (changed in place) at PREVIOUS_SEPARATOR into paths
 * (trimmed, empty ones dropped): their number, max + 1 when there are
 * more than max. */
size_t previous_split(char *list, char **paths, size_t max);

/* The most paths given. */
#define PREVIOUS_MAX_PATHS 64

/* Loads the earlier crawls at paths[0..n) (folders or CDXJ files, see
 * above); url: the options crawl keys are made under (NULL: defaults).
 * 0, or -1 with a message in err. */
int previous_open(const char *const *paths, size_t n, const struct url_options *url,
                  struct previous **out, char *err, size_t errlen);
/* previous_open of a list of paths separated by PREVIOUS_SEPARATOR
 * (the config key's value), refusing a path that is own_dir's (the
 * crawl's own folder; NULL or a folder not made yet: none). */
int previous_open_list(const char *list, const struct url_options *url, const char *own_dir,
                       struct previous **out, char *err, size_t errlen);
void previous_destroy(struct previous *p);
void previous_stats(const struct previous *p, struct previous_stats *out);

/* One URL's earlier capture: e's strings point into the hit; ref_path is
 * the payload record's WARC file as a path (a folder's files made
 * absolute). Of a CDXJ line, e.ref_id is NULL until previous_hit_complete.
 * Freed with free(). */
struct previous_hit {
	struct history_entry e;
	const char *ref_path;
	char ref_id_buf[128];
	char date_buf[64];
	char digest_buf[128];
	char buf[]; /* the line, then ref_path (then a CDXJ line's crawl key) */
};

/* The earlier capture of a URL (a crawl key), or NULL (none, unreadable,
 * out of memory). */
struct previous_hit *previous_lookup(const struct previous *p, const char *url, size_t len);

/* Reads what a CDXJ line lacks from the record it names (its
 * WARC-Record-ID and exact WARC-Date: a revisit names them): 0 when h has
 * them (now or already), -1 when that record cannot be read or is not a
 * response of the URL. Blocking I/O (one gzip member read): for the WARC
 * writer's thread, not the fetch loop's. */
int previous_hit_complete(struct previous_hit *h);

/* Calls fn with each URL of the table (in no order); stops at its first
 * nonzero return, which it returns. 0 when all were seen; -1 when a line
 * could not be read again. */
int previous_each_url(const struct previous *p, int (*fn)(void *ctx, const char *url), void *ctx);

#endif
