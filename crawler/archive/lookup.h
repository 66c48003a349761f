/*
 * lookup.h: a capture found through a crawl's index.cdxj and read back from
 * its WARC file: the response record a revisit record refers to.
 *
 * index.cdxj is sorted byte by byte (index.h), so the lines of one URL key
 * and 14-digit time form one run, found by a binary search over the file's
 * bytes: about log2(size) reads of one line each. Each line of the run
 * (at most ARCHIVE_LOOKUP_CANDIDATES of them) names a WARC file and an
 * offset; the record there is read (store/warc_reader.h) and taken only if
 * it is a response whose WARC-Record-ID is the one asked for, so an index
 * that is stale, or not of these files, can only miss, never give another
 * record.
 *
 * Memory: a line buffer (8 x max_url_len + 4 KiB: a longer line, which no
 * writer of ours makes, is compared by its start and never taken), a URL
 * key's scratch (store/cdxj.h) and one WARC reader (a record of at most
 * max_record bytes) on the file read last. The index and that file stay
 * open. One lookup belongs to one thread.
 */
#ifndef CRAWLER_ARCHIVE_LOOKUP_H
#define CRAWLER_ARCHIVE_LOOKUP_H

#include <stddef.h>

#define ARCHIVE_LOOKUP_CANDIDATES 16

struct archive_lookup;
struct warc_record;

/* A lookup in dir/index.cdxj; max_url_len as the crawl's (store/cdxj.h; 0
 * -> 65536), max_record caps a record read (store/warc_reader.h). 0 and
 * *out, or -1 with errno (ENOENT: no index). */
int archive_lookup_open(const char *dir, size_t max_url_len, size_t max_record,
                        struct archive_lookup **out);

/*
 * The response record with WARC-Record-ID id, a capture of url at date (a
 * WARC-Date; NULL: any time): a revisit's WARC-Refers-To, -Target-URI and
 * -Date. 1 and *rec (valid until the next call; its payload as stored), 0
 * when the index names no such record or it cannot be read, -1 out of
 * memory or a read error of the index.
 */
int archive_lookup_record(struct archive_lookup *l, const char *url, const char *date,
                          const char *id, struct warc_record *rec);

/* NULL is a no-op. */
void archive_lookup_close(struct archive_lookup *l);

#endif
