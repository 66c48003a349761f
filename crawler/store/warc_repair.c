/* warc_repair.c: see warc_repair.h. */
#include "crawler/store/warc_repair.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define READ_CHUNK (256u * 1024u)
#define INFLATE_CHUNK (256u * 1024u)
/* A WARC header block longer than this is not one we wrote. */
#define MAX_HEADER_BLOCK (64u * 1024u)

/* Checks one member's inflated bytes as they stream by. */
struct record_check {
	char header[MAX_HEADER_BLOCK];
	size_t header_fill;
	int header_done;     /* the CRLF CRLF ending the header block was seen */
	uint64_t header_len; /* bytes up to and including that CRLF CRLF */
	uint64_t content_length;
	uint64_t total;  /* inflated bytes of the member so far */
	const char *bad; /* why the record is invalid, or NULL */
};

static void check_reset(struct record_check *c)
{
	c->header_fill = 0;
	c->header_done = 0;
	c->header_len = 0;
	c->content_length = 0;
	c->total = 0;
	c->bad = NULL;
}

static void check_parse_header(struct record_check *c)
{
	if (c->header_len < 8 || memcmp(c->header, "WARC/1.", 7) != 0) {
		c->bad = "member does not start with a WARC/1.x header";
		return;
	}
	const char *p = c->header;
	const char *end = c->header + c->header_len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			break;
		static const char key[] = "Content-Length:";
		if ((size_t)(eol - p) > sizeof key - 1 &&
		    strncasecmp(p, key, sizeof key - 1) == 0) {
			const char *v = p + sizeof key - 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			uint64_t n = 0;
			int digits = 0;
			while (v < eol && *v >= '0' && *v <= '9' && digits < 19) {
				n = n * 10 + (uint64_t)(*v - '0');
				v++;
				digits++;
			}
			if (digits == 0) {
				c->bad = "bad Content-Length in WARC header";
				return;
			}
			c->content_length = n;
			return;
		}
		p = eol + 1;
	}
	c->bad = "WARC header without Content-Length";
}

static void check_feed(struct record_check *c, const unsigned char *data, size_t len)
{
	c->total += len;
	if (c->header_done || c->bad != NULL)
		return;
	size_t room = sizeof c->header - c->header_fill;
	size_t take = len < room ? len : room;
	/* Rescan from 3 bytes back so a terminator split across feeds is found. */
	size_t from = c->header_fill >= 3 ? c->header_fill - 3 : 0;
	memcpy(c->header + c->header_fill, data, take);
	c->header_fill += take;
	for (size_t i = from; i + 4 <= c->header_fill; i++) {
		if (memcmp(c->header + i, "\r\n\r\n", 4) == 0) {
			c->header_done = 1;
			c->header_len = i + 4;
			check_parse_header(c);
			return;
		}
	}
	if (c->header_fill == sizeof c->header)
		c->bad = "WARC header block too long";
}

static const char *check_finish(const struct record_check *c)
{
	if (c->bad != NULL)
		return c->bad;
	if (!c->header_done)
		return "member ends inside the WARC header";
	if (c->total != c->header_len + c->content_length + 4)
		return "record length disagrees with its Content-Length";
	return NULL;
}

enum warc_repair_error warc_repair_tail(const char *path, int dry_run,
                                        struct warc_repair_result *out, char *err, size_t errlen)
{
	enum warc_repair_error res = WARC_REPAIR_ERR_IO;
	unsigned char *in = NULL, *inflated = NULL;
	struct record_check *check = NULL;
	int fd = -1, zinit = 0;
	z_stream z;
	struct stat st;

	memset(out, 0, sizeof *out);
	memset(&z, 0, sizeof z);
	fd = open(path, (dry_run ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (err)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto done;
	}
	in = malloc(READ_CHUNK);
	inflated = malloc(INFLATE_CHUNK);
	check = malloc(sizeof *check);
	if (in == NULL || inflated == NULL || check == NULL) {
		res = WARC_REPAIR_ERR_NOMEM;
		if (err)
			snprintf(err, errlen, "%s: out of memory", path);
		goto done;
	}
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		res = WARC_REPAIR_ERR_NOMEM;
		if (err)
			snprintf(err, errlen, "%s: inflateInit2 failed", path);
		goto done;
	}
	zinit = 1;
	check_reset(check);

	uint64_t file_size = (uint64_t)st.st_size;
	uint64_t good_end = 0; /* end of the last whole record */
	uint64_t offset = 0;   /* file offset of in[0] */
	const char *reason = NULL;
	while (reason == NULL && offset < file_size) {
		ssize_t n = pread(fd, in, READ_CHUNK, (off_t)offset);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (err)
				snprintf(err, errlen, "%s: read: %s", path, strerror(errno));
			goto done;
		}
		if (n == 0)
			break;
		z.next_in = in;
		z.avail_in = (uInt)n;
		while (reason == NULL && z.avail_in > 0) {
			z.next_out = inflated;
			z.avail_out = INFLATE_CHUNK;
			int ret = inflate(&z, Z_NO_FLUSH);
			check_feed(check, inflated, INFLATE_CHUNK - z.avail_out);
			if (ret == Z_STREAM_END) {
				reason = check_finish(check);
				if (reason == NULL) {
					good_end = offset + (uint64_t)n - z.avail_in;
					out->records++;
					check_reset(check);
					inflateReset(&z);
				}
			} else if (ret == Z_BUF_ERROR) {
				break; /* needs more input */
			} else if (ret != Z_OK) {
				reason = "corrupt gzip member";
			} else if (check->bad != NULL) {
				reason = check->bad;
			}
		}
		offset += (uint64_t)n;
	}
	if (reason == NULL && good_end < file_size)
		reason = "torn last record";

	out->kept_bytes = good_end;
	out->cut_bytes = file_size - good_end;
	out->reason = reason;
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
	if (zinit)
		inflateEnd(&z);
	if (fd >= 0)
		close(fd);
	free(in);
	free(inflated);
	free(check);
	return res;
}
