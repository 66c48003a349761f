/* warc_scan.c: see warc_scan.h. */
#include "crawler/archive/warc_scan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "frontier/base/array.h"
#include "frontier/base/ascii.h"

#define SCAN_CHUNK (256u * 1024u)

struct warc_scan {
	int fd;
	z_stream z;
	bool z_ok;
	size_t max_record;
	uint64_t pos;  /* file offset of in[0] */
	size_t in_len; /* bytes in `in` */
	size_t in_at;  /* first byte not yet given to zlib */
	uint8_t *in, *spill;
	char *rec; /* the inflated record, at most max_record bytes */
	size_t rec_len, rec_cap;
	size_t header_len; /* of the WARC header block, CRLF CRLF included */
};

/* Reads more of the file into `in` (what is left moved to its start).
 * >0 bytes read, 0 at the end of the file, -1 on error. */
static ssize_t fill(struct warc_scan *s)
{
	if (s->in_at > 0) {
		memmove(s->in, s->in + s->in_at, s->in_len - s->in_at);
		s->pos += s->in_at;
		s->in_len -= s->in_at;
		s->in_at = 0;
	}
	for (;;) {
		ssize_t n = pread(s->fd, s->in + s->in_len, SCAN_CHUNK - s->in_len,
		                  (off_t)(s->pos + s->in_len));
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			s->in_len += (size_t)n;
		return n;
	}
}

/* Keeps what inflated, up to max_record. */
static int keep(struct warc_scan *s, const uint8_t *p, size_t n)
{
	size_t room = s->max_record - s->rec_len;
	if (n > room)
		n = room;
	if (n == 0)
		return 0;
	char *r = array_room(s->rec, &s->rec_cap, s->rec_len + n, 64 * 1024);
	if (r == NULL)
		return -1;
	s->rec = r;
	memcpy(s->rec + s->rec_len, p, n);
	s->rec_len += n;
	return 0;
}

/* Inflates one member from `in` into rec; its total inflated size in
 * *total. */
static enum warc_scan_result inflate_member(struct warc_scan *s, uint64_t *total)
{
	*total = 0;
	s->rec_len = 0;
	inflateReset(&s->z);
	for (;;) {
		if (s->in_at == s->in_len) {
			ssize_t n = fill(s);
			if (n < 0)
				return WARC_SCAN_ERR_IO;
			if (n == 0)
				return WARC_SCAN_TORN;
		}
		s->z.next_in = s->in + s->in_at;
		s->z.avail_in = (uInt)(s->in_len - s->in_at);
		s->z.next_out = s->spill;
		s->z.avail_out = SCAN_CHUNK;
		int ret = inflate(&s->z, Z_NO_FLUSH);
		size_t used = (size_t)(s->in_len - s->in_at) - s->z.avail_in;
		size_t got = SCAN_CHUNK - s->z.avail_out;
		s->in_at += used;
		*total += got;
		if (keep(s, s->spill, got) != 0)
			return WARC_SCAN_ERR_NOMEM;
		if (ret == Z_STREAM_END)
			return WARC_SCAN_RECORD;
		if (ret == Z_BUF_ERROR && s->in_at == s->in_len)
			continue; /* needs more input */
		if (ret != Z_OK && ret != Z_BUF_ERROR)
			return ret == Z_MEM_ERROR ? WARC_SCAN_ERR_NOMEM : WARC_SCAN_CORRUPT;
	}
}

struct warc_scan_field warc_scan_get(const struct warc_scan *s, const char *name)
{
	size_t nl = strlen(name);
	const char *p = s->rec, *end = s->rec + s->header_len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *le = eol ? eol : end;
		if ((size_t)(le - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1;
			size_t vl = (size_t)(le - v);
			while (vl > 0 && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl > 0 &&
			       (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
				vl--;
			return (struct warc_scan_field){ v, vl };
		}
		p = le + 1;
	}
	return (struct warc_scan_field){ NULL, 0 };
}

/* The header block's end and Content-Length; the problem, or NULL. */
static const char *parse_header(struct warc_scan *s, uint64_t *content_length)
{
	size_t lim = s->rec_len < WARC_SCAN_HEADER_MAX ? s->rec_len : WARC_SCAN_HEADER_MAX;
	const char *end = memmem(s->rec, lim, "\r\n\r\n", 4);
	if (lim < 8 || memcmp(s->rec, "WARC/1.", 7) != 0)
		return "member does not start with a WARC/1.x header";
	if (end == NULL)
		return "WARC header block without its end";
	s->header_len = (size_t)(end - s->rec) + 4;
	struct warc_scan_field cl = warc_scan_get(s, "Content-Length");
	uint64_t n = 0;
	if (cl.len == 0 || cl.len > 19)
		return "bad Content-Length in WARC header";
	for (size_t i = 0; i < cl.len; i++) {
		if (!ascii_is_digit((unsigned char)cl.p[i]))
			return "bad Content-Length in WARC header";
		n = n * 10 + (uint64_t)(cl.p[i] - '0');
	}
	*content_length = n;
	return NULL;
}

enum warc_scan_result warc_scan_next(struct warc_scan *s, struct warc_scan_record *rec)
{
	uint64_t total, cl = 0;
	memset(rec, 0, sizeof *rec);
	s->header_len = 0;
	if (s->in_at == s->in_len) {
		ssize_t n = fill(s);
		if (n < 0)
			return WARC_SCAN_ERR_IO;
		if (n == 0)
			return WARC_SCAN_END;
	}
	rec->offset = s->pos + s->in_at;
	enum warc_scan_result r = inflate_member(s, &total);
	if (r != WARC_SCAN_RECORD)
		return r;
	rec->length = s->pos + s->in_at - rec->offset;
	rec->problem = parse_header(s, &cl);
	if (rec->problem == NULL && total != s->header_len + cl + 4)
		rec->problem = "record length disagrees with its Content-Length";
	if (rec->problem != NULL) {
		s->header_len = 0;
		return WARC_SCAN_NOT_RECORD;
	}
	rec->type = warc_scan_get(s, "WARC-Type");
	rec->date = warc_scan_get(s, "WARC-Date");
	rec->target_uri = warc_scan_get(s, "WARC-Target-URI");
	rec->payload_digest = warc_scan_get(s, "WARC-Payload-Digest");
	rec->content_type = warc_scan_get(s, "Content-Type");
	rec->block = (const uint8_t *)s->rec + s->header_len;
	size_t kept = s->rec_len - s->header_len;
	rec->block_len = kept < cl ? kept : (size_t)cl;
	rec->block_cut = kept < cl;
	return WARC_SCAN_RECORD;
}

int warc_scan_open(const char *path, uint64_t offset, size_t max_record, struct warc_scan **out)
{
	struct warc_scan *s = calloc(1, sizeof *s);
	*out = NULL;
	if (s == NULL)
		return -1;
	s->fd = -1;
	s->max_record = max_record > WARC_SCAN_HEADER_MAX ? max_record : WARC_SCAN_HEADER_MAX;
	s->pos = offset;
	s->in = malloc(SCAN_CHUNK);
	s->spill = malloc(SCAN_CHUNK);
	if (s->in == NULL || s->spill == NULL || inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) {
		warc_scan_close(s);
		errno = ENOMEM;
		return -1;
	}
	s->z_ok = true;
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		int e = errno;
		warc_scan_close(s);
		errno = e;
		return -1;
	}
	*out = s;
	return 0;
}

void warc_scan_close(struct warc_scan *s)
{
	if (s == NULL)
		return;
	if (s->z_ok)
		inflateEnd(&s->z);
	if (s->fd >= 0)
		close(s->fd);
	free(s->in);
	free(s->spill);
	free(s->rec);
	free(s);
}
