/*
 * index.h: a crawl's CDXJ index, index.cdxj: the lines of every WARC
 * file's own index (NAME.cdxj beside NAME.warc.gz, written as records go
 * out: store/warc.h), completed from the records where a crash or a
 * failed write cut them short, merged and sorted byte by byte.
 *
 * A file's own index is trusted only as far as it agrees with its WARC:
 * its lines are read in order while each is whole, names the file, starts
 * at or after the end of the record before it and ends within the file;
 * the first line that is not is cut off with all after it (counted), and
 * the records from the end of the last good line on are read back
 * (store/warc_reader.h) and their lines appended (counted). So after a
 * crash and the WARC repair of a resume, the index holds each record's
 * line once: none lost with a torn tail, none twice. Records that cannot
 * be read (a torn or corrupt member in a WARC not repaired) end that
 * file's index with a message and a count; the files after it are still
 * indexed.
 *
 * index.cdxj is written as index.cdxj.tmp, synced and renamed over the
 * old one, so a reader sees the old index or the new one. Sorting keeps
 * to `memory` bytes (linesort.h) with runs in DIR/.index-tmp/.
 *
 * The caller owns the folder: a crawl while it runs (at its end, at a
 * resume) or the `crawler index` tool, which takes the crawl's lock
 * first; nothing else may write its WARC files meanwhile.
 */
#ifndef CRAWLER_ARCHIVE_INDEX_H
#define CRAWLER_ARCHIVE_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct archive_index_options {
	size_t memory;      /* sort buffer, bytes; 0 -> 64 MiB */
	size_t max_record;  /* largest record read back whole; 0 -> 64 MiB */
	size_t max_url_len; /* as the crawl's (cdxj.h); 0 -> 65536 */
	FILE *messages;     /* what was cut or re-read, one line each; NULL: quiet */
	const char *who;    /* prefix of those lines ("crawler index") */
};

struct archive_index_report {
	uint64_t files;       /* WARC files indexed */
	uint64_t lines;       /* lines in index.cdxj */
	uint64_t reindexed;   /* lines made again from records */
	uint64_t cut_lines;   /* torn or wrong lines cut from the files' own indexes */
	uint64_t bad_records; /* records that could not be read: their file's tail unindexed */
};

/* Completes the own index of every *.warc.gz in dir and writes
 * dir/index.cdxj. 0, or -1 with err set. */
int archive_index_write(const char *dir, const struct archive_index_options *o,
                        struct archive_index_report *rep, char *err, size_t errlen);

/* The WARC files of dir (*.warc.gz), sorted by name: *names (each and the
 * array freed by the caller) and *n. 0, or -1 with errno. */
int archive_warc_files(const char *dir, char ***names, size_t *n);

/* The own index's path of a WARC file: its name with ".cdxj" for
 * ".warc.gz". 0, or -1 when path does not end ".warc.gz" or out is short. */
int archive_index_path(const char *warc_path, char *out, size_t cap);

#endif
