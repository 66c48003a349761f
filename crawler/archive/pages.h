/*
 * pages.h: the page list of a crawl's WACZ, pages/pages.jsonl.
 *
 * A page is an HTML response (text/html or application/xhtml+xml) with
 * status 200 that crawl.log lists (robots.txt and page requisites are not
 * pages), or a revisit of one. Its title is its document's first <title>
 * element, whitespace collapsed as document.title does, read from its
 * WARC record (content coding and charset undone: net/decode.h,
 * parse/html_charset.h, parse/html_tokenizer.h); a revisit takes the
 * title of the earlier response whose payload it names, when that one is
 * among the last PAGES_TITLE_CACHE read. Its depth comes from crawl.log
 * (0: a seed, "seed": true); a page the log does not list comes last.
 *
 * The file is the WACZ header line, then one JSON object a page:
 *   {"id":..., "url":..., "ts": WARC-Date, "title":..., "depth":N[, "seed":true]}
 * in order of depth, then date, then URL.
 *
 * How: log lines and records are joined by URL, then ordered by depth,
 * each through a line sort (linesort.h) of `memory` bytes in tmpdir; one
 * record of at most max_record bytes is held at a time.
 */
#ifndef CRAWLER_ARCHIVE_PAGES_H
#define CRAWLER_ARCHIVE_PAGES_H

#include <stddef.h>
#include <stdint.h>

#define PAGES_TITLE_CACHE 1024
#define PAGES_TITLE_MAX 1024 /* bytes of a title kept */

struct pages_report {
	uint64_t pages;
	uint64_t titles; /* pages with a title */
	uint64_t bad_log_lines;
	uint64_t bad_records; /* records that could not be read: their file's rest skipped */
};

/* Writes the page list of the crawl in dir to out_path. 0, or -1 with
 * err set. */
int pages_write(const char *dir, const char *tmpdir, size_t memory, size_t max_record,
                const char *out_path, struct pages_report *rep, char *err, size_t errlen);

#endif
