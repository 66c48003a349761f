/* warc_repair.c: see warc_repair.h. */
#include "crawler/store/warc_repair.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crawler/store/warc_reader.h"

/* Only the records' header blocks matter here: a record past this is
 * streamed through, checked, not kept. */
#define REPAIR_MAX_RECORD 0

enum warc_repair_error warc_repair_tail(const char *path, int dry_run,
                                        struct warc_repair_result *out, char *err, size_t errlen)
{
	enum warc_repair_error res = WARC_REPAIR_ERR_IO;
	struct warc_reader *reader = NULL;
	struct warc_record rec;
	struct stat st;
	uint64_t good_end = 0; /* end of the last whole record */
	enum warc_read got;

	memset(out, 0, sizeof *out);
	int fd = open(path, (dry_run ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (err)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto done;
	}
	if (warc_reader_open_fd(fd, 0, REPAIR_MAX_RECORD, &reader) != 0) {
		res = WARC_REPAIR_ERR_NOMEM;
		if (err)
			snprintf(err, errlen, "%s: out of memory", path);
		goto done;
	}
	while ((got = warc_reader_next(reader, &rec)) == WARC_READ_RECORD ||
	       got == WARC_READ_TOO_LARGE) {
		out->records++;
		good_end = rec.offset + rec.length;
	}
	if (got == WARC_READ_ERR_IO || got == WARC_READ_ERR_NOMEM) {
		res = got == WARC_READ_ERR_IO ? WARC_REPAIR_ERR_IO : WARC_REPAIR_ERR_NOMEM;
		if (err)
			snprintf(err, errlen, "%s: %s%s%s", path, warc_read_strerror(got),
			         got == WARC_READ_ERR_IO ? ": " : "",
			         got == WARC_READ_ERR_IO ? strerror(errno) : "");
		goto done;
	}
	out->kept_bytes = good_end;
	out->cut_bytes = (uint64_t)st.st_size - good_end;
	out->reason = rec.problem;
	if (out->cut_bytes > 0 && !dry_run) {
		if (ftruncate(fd, (off_t)good_end) != 0 || fsync(fd) != 0) {
			if (err)
				snprintf(err, errlen, "%s: truncate to %llu: %s", path,
				         (unsigned long long)good_end, strerror(errno));
			goto done;
		}
	}
	res = WARC_REPAIR_OK;
done:
	warc_reader_close(reader);
	if (fd >= 0)
		close(fd);
	return res;
}
