/*
 * warc_repair.h: cut a WARC file back to its last whole record.
 *
 * Our WARC files are concatenations of gzip members, one record per member
 * (warc.h). A crash can leave the last member torn (the process died while
 * writing it, or the page cache lost what was not fsynced). Resuming appends
 * after whole records only, so before reopening a file the tail is checked:
 * the file is read from its start with warc_reader.h (streaming, bounded
 * memory, each member checked to hold exactly one whole record), and
 * truncated at the start of the first member that is torn, corrupt or not
 * a record; the truncation is fsynced. A record is never cut for its size.
 *
 * Invariant after a successful repair: the file is a sequence of whole,
 * valid records; nothing before the first bad member is touched.
 */
#ifndef CRAWLER_STORE_WARC_REPAIR_H
#define CRAWLER_STORE_WARC_REPAIR_H

#include <stddef.h>
#include <stdint.h>

enum warc_repair_error {
	WARC_REPAIR_OK = 0,
	WARC_REPAIR_ERR_IO = 1, /* open/read/truncate/fsync failed */
	WARC_REPAIR_ERR_NOMEM = 2,
};

struct warc_repair_result {
	uint64_t records;    /* whole records kept */
	uint64_t kept_bytes; /* the file's length after repair */
	uint64_t cut_bytes;  /* bytes removed from the tail (0: file was whole) */
	const char *reason;  /* why the tail was cut (static text), or NULL */
};

/* Checks path and truncates a torn or invalid tail. With dry_run nonzero
 * only reports. err (if non-NULL) names the file on error. */
enum warc_repair_error warc_repair_tail(const char *path, int dry_run,
                                        struct warc_repair_result *out, char *err, size_t errlen);

#endif
