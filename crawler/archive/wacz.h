/*
 * wacz.h: a crawl packaged as one WACZ 1.1.1 file, which ReplayWeb.page
 * and pywb open as they are.
 *
 * The package is a zip (ZIP64 past 4 GiB) whose every entry is STORED, so
 * that a reader can reach any record by its offset:
 *
 *   archive/NAME.warc.gz      the crawl's WARC files, as they are
 *   indexes/index.cdx         index.cdxj (index.h), brought up to date first;
 *                             past zipnum_lines lines instead ZipNum:
 *   indexes/index.cdx.gz      the lines in gzip members of WACZ_ZIPNUM_BLOCK
 *   indexes/index.idx         lines, and one line per member: its first
 *                             line's "URLKEY TIMESTAMP" and
 *                             {"offset":..,"length":..}, after a
 *                             "!meta 0 {...}" line naming the format
 *   pages/pages.jsonl         the pages (pages.h)
 *   datapackage.json          each file's path, size and SHA-256, the WACZ
 *                             version, the software, the date, the first
 *                             seed as the main page
 *   datapackage-digest.json   the SHA-256 of datapackage.json
 *
 * It is built in DIR/.wacz-tmp (the page list, the ZipNum files, the two
 * JSON files), written as FILE.tmp and renamed to FILE when whole, so a
 * FILE that exists is complete. The WARC files are read three times: for
 * the page titles, for their digests and into the zip.
 *
 * The caller owns the folder, as for index.h.
 */
#ifndef CRAWLER_ARCHIVE_WACZ_H
#define CRAWLER_ARCHIVE_WACZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WACZ_ZIPNUM_LINES 100000 /* a plain index up to this many lines */
#define WACZ_ZIPNUM_BLOCK 3000   /* index lines per gzip member of a ZipNum index */

struct wacz_options {
	const char *path;      /* the package; NULL -> DIR/crawl.wacz */
	size_t memory;         /* sort buffers, bytes; 0 -> 64 MiB */
	size_t max_record;     /* largest record read whole; 0 -> 64 MiB */
	size_t max_url_len;    /* as the crawl's (cdxj.h); 0 -> 65536 */
	uint64_t zipnum_lines; /* 0 -> WACZ_ZIPNUM_LINES */
	const char *software;  /* datapackage.json "software"; NULL -> "crawler" */
	FILE *messages;        /* the index's messages (index.h); NULL: quiet */
	const char *who;
};

struct wacz_report {
	char path[4200];
	uint64_t warcs;
	uint64_t index_lines;
	int zipnum; /* the index went in as ZipNum */
	uint64_t pages;
	uint64_t titles;
	uint64_t bytes; /* of the package */
};

/* Packages the crawl in dir. 0, or -1 with err set (nothing is left at
 * the package's path then, but an older package there stays). */
int wacz_write(const char *dir, const struct wacz_options *o, struct wacz_report *rep, char *err,
               size_t errlen);

#endif
