/* warc_reader.c: see warc_reader.h. */
#include "crawler/store/warc_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <zlib.h>

#include "crawler/store/warc.h"
#include "frontier/base/ascii.h"
#include "frontier/base/header_field.h"

#define READ_CHUNK (256u * 1024u)
/* What the rest of a record past max_record inflates into, a step at a time. */
#define STREAM_CHUNK (256u * 1024u)
/* The record buffer's first size; it doubles up to its cap. */
#define RECORD_FIRST_CAP (256u * 1024u)

struct warc_reader {
	int fd;
	bool own_fd;
	size_t record_cap; /* max(max_record, WARC_READER_HEADER_MAX) */
	size_t max_record;
	z_stream z;
	bool zinit;
	uint64_t in_off;      /* the file offset of in[0] */
	size_t in_len;        /* bytes in in */
	uint64_t next_member; /* where the next call starts */
	uint8_t *rec;         /* the record inflated, up to record_cap */
	size_t rec_cap;
	uint8_t *stream; /* STREAM_CHUNK bytes, made on the first record past record_cap */
	/* what ended the reading (WARC_READ_RECORD: nothing has) */
	enum warc_read stop;
	uint64_t stop_offset;
	const char *stop_problem;
	unsigned char in[READ_CHUNK]; /* bytes read from the file */
	/* a copy of the record's header block, which its fields point into:
	 * rec moves as it grows */
	char header[WARC_READER_HEADER_MAX];
};

/* One member being inflated. */
struct member {
	uint64_t start;
	size_t fill;       /* bytes in r->rec */
	uint64_t total;    /* bytes inflated */
	size_t scanned;    /* of rec, searched for the header block's end */
	size_t header_len; /* 0 until that end is found */
	bool streaming;    /* past record_cap: the rest goes through r->stream */
};

const char *warc_read_strerror(enum warc_read res)
{
	switch (res) {
	case WARC_READ_RECORD: return "a whole record";
	case WARC_READ_TOO_LARGE: return "a record over the size cap";
	case WARC_READ_END: return "the end of the file";
	case WARC_READ_TORN: return "a member cut off by the end of the file";
	case WARC_READ_CORRUPT: return "bytes that are not a gzip member";
	case WARC_READ_NOT_RECORD: return "a gzip member that is not one WARC record";
	case WARC_READ_ERR_IO: return "read error";
	case WARC_READ_ERR_NOMEM: return "out of memory";
	}
	return "unknown WARC read result";
}

/* ---- opening ---- */

int warc_reader_open_fd(int fd, uint64_t offset, size_t max_record, struct warc_reader **out)
{
	struct warc_reader *r = calloc(1, sizeof *r);
	*out = NULL;
	if (!r || inflateInit2(&r->z, 16 + MAX_WBITS) != Z_OK) {
		warc_reader_close(r);
		errno = ENOMEM;
		return -1;
	}
	r->zinit = true;
	r->fd = fd;
	r->max_record = max_record;
	r->record_cap = max_record > WARC_READER_HEADER_MAX ? max_record : WARC_READER_HEADER_MAX;
	r->next_member = offset;
	r->in_off = offset;
	r->stop = WARC_READ_RECORD;
	*out = r;
	return 0;
}

int warc_reader_open(const char *path, uint64_t offset, size_t max_record, struct warc_reader **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	*out = NULL;
	if (fd < 0)
		return -1;
	if (warc_reader_open_fd(fd, offset, max_record, out) != 0) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	(*out)->own_fd = true;
	return 0;
}

void warc_reader_seek(struct warc_reader *r, uint64_t offset)
{
	r->next_member = offset;
	r->stop = WARC_READ_RECORD;
}

void warc_reader_close(struct warc_reader *r)
{
	if (!r)
		return;
	if (r->zinit)
		inflateEnd(&r->z);
	if (r->own_fd)
		close(r->fd);
	free(r->rec);
	free(r->stream);
	free(r);
}

/* ---- the WARC header block ---- */

/* The fields kept, by name. */
#define FIELD(name, member)                                                                        \
	{                                                                                          \
		name, sizeof name - 1, offsetof(struct warc_record, member)                        \
	}
static const struct {
	const char *name;
	size_t len;
	size_t offset;
} FIELDS[] = {
	FIELD("WARC-Type", type),
	FIELD("WARC-Record-ID", record_id),
	FIELD("WARC-Date", date),
	FIELD("WARC-Target-URI", target_uri),
	FIELD("Content-Type", content_type),
	FIELD("WARC-IP-Address", ip_address),
	FIELD("WARC-Concurrent-To", concurrent_to),
	FIELD("WARC-Protocol", protocol),
	FIELD("WARC-Block-Digest", block_digest),
	FIELD("WARC-Payload-Digest", payload_digest),
	FIELD("WARC-Truncated", truncated),
	FIELD("WARC-Profile", profile),
	FIELD("WARC-Refers-To", refers_to),
	FIELD("WARC-Refers-To-Target-URI", refers_to_target_uri),
	FIELD("WARC-Refers-To-Date", refers_to_date),
	FIELD(WARC_CRAWLER_DEPTH, crawler_depth),
	FIELD(WARC_CRAWLER_VIA, crawler_via),
	FIELD(WARC_CRAWLER_FLAGS, crawler_flags),
	FIELD(WARC_CRAWLER_REDIRECT, crawler_redirect),
};
#undef FIELD

/* The offset just past the first CRLF CRLF in [p, p + n), or 0 if none. */
static size_t blank_line_end(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n, *q = p;
	while (end - q >= 4 && (q = memchr(q, '\r', (size_t)(end - q - 3))) != NULL) {
		if (q[1] == '\n' && q[2] == '\r' && q[3] == '\n')
			return (size_t)(q - p) + 4;
		q++;
	}
	return 0;
}

/* Content-Length's value: at most 19 digits, so it cannot overflow. */
static bool parse_length(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	size_t i = 0;
	for (; i < n && i < 19 && ascii_is_digit((unsigned char)v[i]); i++)
		x = x * 10 + (uint64_t)(v[i] - '0');
	*out = x;
	return i > 0;
}

/* Stores the field of the line [p, eol) that is one of FIELDS, its value
 * NUL-terminated in place; the first line of a field named twice counts.
 * The Content-Length line: false when its value is not a number. */
static bool take_field(char *p, char *eol, struct warc_record *rec, bool *have_length)
{
	size_t name_len, n;
	const char *v;
	if (!header_field_split(p, eol, &name_len, &v, &n))
		return true;
	if (name_len == 14 && !*have_length && strncasecmp(p, "Content-Length", 14) == 0) {
		*have_length = true;
		return parse_length(v, n, &rec->content_length);
	}
	for (size_t i = 0; i < sizeof FIELDS / sizeof FIELDS[0]; i++) {
		if (FIELDS[i].len != name_len || strncasecmp(p, FIELDS[i].name, name_len) != 0)
			continue;
		const char **slot = (const char **)((char *)rec + FIELDS[i].offset);
		if (!*slot) {
			((char *)v)[n] = '\0'; /* v points into p */
			*slot = v;
		}
		break;
	}
	return true;
}

/* Reads the fields of the header block h (len bytes, ending in CRLF CRLF)
 * into rec. NULL, or why it is not a record's header. */
static const char *parse_header(char *h, size_t len, struct warc_record *rec)
{
	char *end = h + len;
	bool have_length = false;
	if (len < 8 || memcmp(h, "WARC/1.", 7) != 0)
		return "member does not start with a WARC/1.x header";
	for (char *p = (char *)memchr(h, '\n', len) + 1; p < end;) {
		char *eol = memchr(p, '\n', (size_t)(end - p)); /* the block ends in LF */
		if (!take_field(p, eol, rec, &have_length))
			return "bad Content-Length in WARC header";
		p = eol + 1;
	}
	return have_length ? NULL : "WARC header without Content-Length";
}

/* ---- the HTTP message of the block ---- */

static bool span_has(const char *s, size_t n, const char *word)
{
	size_t w = strlen(word);
	for (size_t i = 0; i + w <= n; i++)
		if (strncasecmp(s + i, word, w) == 0)
			return true;
	return false;
}

static void parse_http(struct warc_record *rec)
{
	const uint8_t *b = rec->block;
	size_t n = rec->block_len;
	bool revisit = strcmp(rec->type, "revisit") == 0;
	if (!revisit && strcmp(rec->type, "response") != 0 && strcmp(rec->type, "request") != 0)
		return;
	size_t blank = blank_line_end(b, n);
	if (blank) {
		rec->http_headers_len = blank;
		rec->payload = b + rec->http_headers_len;
		rec->payload_len = n - rec->http_headers_len;
	} else if (revisit) {
		rec->http_headers_len = n;
	} else {
		return;
	}
	rec->http_headers = (const char *)b;
	const char *h = rec->http_headers, *end = h + rec->http_headers_len, *v;
	size_t vn;
	if (rec->http_headers_len > 9 && memcmp(h, "HTTP/", 5) == 0) {
		const char *sp = memchr(h, ' ', rec->http_headers_len);
		if (sp && end - sp > 3 && ascii_is_digit((unsigned char)sp[1]) &&
		    ascii_is_digit((unsigned char)sp[2]) && ascii_is_digit((unsigned char)sp[3]))
			rec->http_status = (sp[1] - '0') * 100 + (sp[2] - '0') * 10 + (sp[3] - '0');
	}
	const char *at = h;
	rec->chunked = header_field_next(&at, end, "Transfer-Encoding", &v, &vn) &&
	               span_has(v, vn, "chunked");
}

/* The decoded length of the chunked body b (decoded in place), or SIZE_MAX
 * when its bytes are not a whole chunked body. */
static size_t dechunk(uint8_t *b, size_t len)
{
	size_t in = 0, out = 0;
	for (;;) {
		uint64_t size = 0;
		int digits = 0;
		while (in < len && digits < 16 && ascii_is_hex(b[in])) {
			size = size * 16 + (uint64_t)ascii_hex_value(b[in]);
			in++;
			digits++;
		}
		const uint8_t *eol = in < len ? memchr(b + in, '\n', len - in) : NULL;
		if (!digits || !eol)
			return SIZE_MAX;
		in = (size_t)(eol - b) + 1;
		if (size == 0)
			return out;
		if (size > len - in || len - in - size < 2 || b[in + size] != '\r' ||
		    b[in + size + 1] != '\n')
			return SIZE_MAX;
		memmove(b + out, b + in, size);
		out += size;
		in += size + 2;
	}
}

void warc_record_unchunk(struct warc_record *rec)
{
	if (!rec->chunked || !rec->payload)
		return;
	size_t n = dechunk((uint8_t *)rec->payload, rec->payload_len);
	if (n != SIZE_MAX) {
		rec->payload_len = n;
		rec->chunked = 0;
	}
}

/* ---- inflating a member ---- */

/* Ends the reading at the member m with result res. */
static enum warc_read stop(struct warc_reader *r, const struct member *m, enum warc_read res,
                           const char *problem, struct warc_record *rec)
{
	r->stop = res;
	r->stop_offset = m->start;
	r->stop_problem = problem;
	rec->offset = m->start;
	rec->problem = problem;
	return res;
}

/* The file offset of the next byte inflate takes. */
static uint64_t position(const struct warc_reader *r)
{
	return r->in_off + (uint64_t)(r->z.next_in - r->in);
}

/* Sets inflate's input at the member's start, from the buffer when it
 * holds it. */
static void input_at(struct warc_reader *r, uint64_t off)
{
	if (off >= r->in_off && off - r->in_off <= r->in_len) {
		r->z.next_in = r->in + (off - r->in_off);
		r->z.avail_in = (uInt)(r->in_len - (off - r->in_off));
	} else {
		r->in_off = off;
		r->in_len = 0;
		r->z.next_in = r->in;
		r->z.avail_in = 0;
	}
}

/* Reads the file's next bytes: their count, 0 at its end, -1 (errno). */
static ssize_t refill(struct warc_reader *r)
{
	ssize_t n;
	r->in_off += r->in_len;
	r->in_len = 0;
	r->z.next_in = r->in;
	r->z.avail_in = 0;
	do
		n = pread(r->fd, r->in, READ_CHUNK, (off_t)r->in_off);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		r->in_len = (size_t)n;
		r->z.avail_in = (uInt)n;
	}
	return n;
}

/* Where the next inflated bytes go: the record buffer (grown as needed),
 * or past record_cap the stream buffer. 0, or -1 out of memory. */
static int output_room(struct warc_reader *r, struct member *m)
{
	if (!m->streaming && m->fill == r->rec_cap) {
		if (r->rec_cap < r->record_cap) {
			size_t cap = r->rec_cap ? 2 * r->rec_cap : RECORD_FIRST_CAP;
			if (cap > r->record_cap || cap < r->rec_cap)
				cap = r->record_cap;
			uint8_t *grown = realloc(r->rec, cap);
			if (!grown)
				return -1;
			r->rec = grown;
			r->rec_cap = cap;
		} else {
			if (!r->stream && !(r->stream = malloc(STREAM_CHUNK)))
				return -1;
			m->streaming = true;
		}
	}
	if (m->streaming) {
		r->z.next_out = r->stream;
		r->z.avail_out = STREAM_CHUNK;
	} else {
		size_t room = r->rec_cap - m->fill;
		r->z.next_out = r->rec + m->fill;
		r->z.avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
	}
	return 0;
}

/* Looks for the end of the header block in what was inflated since the
 * last look, and reads the block once found. NULL, or why the member is
 * not a record. */
static const char *find_header(struct warc_reader *r, struct member *m, struct warc_record *rec)
{
	size_t upto = m->fill < WARC_READER_HEADER_MAX ? m->fill : WARC_READER_HEADER_MAX;
	size_t from = m->scanned >= 3 ? m->scanned - 3 : 0;
	if (m->header_len || upto < from + 4) {
		m->scanned = upto > m->scanned ? upto : m->scanned;
		return NULL;
	}
	size_t blank = blank_line_end(r->rec + from, upto - from);
	m->scanned = upto;
	if (blank) {
		m->header_len = from + blank;
		memcpy(r->header, r->rec, m->header_len);
		return parse_header(r->header, m->header_len, rec);
	}
	return upto == WARC_READER_HEADER_MAX ? "WARC header block too long" : NULL;
}

/* The member inflated whole: is it one record, and is it kept? */
static enum warc_read finish(struct warc_reader *r, const struct member *m, struct warc_record *rec)
{
	r->next_member = position(r);
	rec->length = r->next_member - m->start;
	rec->record_size = m->total;
	if (!m->header_len)
		return stop(r, m, WARC_READ_NOT_RECORD, "member ends inside the WARC header", rec);
	if (m->total != m->header_len + rec->content_length + 4)
		return stop(r, m, WARC_READ_NOT_RECORD,
		            "record length disagrees with its Content-Length", rec);
	if (m->total > r->max_record)
		return WARC_READ_TOO_LARGE;
	rec->block = r->rec + m->header_len;
	rec->block_len = (size_t)rec->content_length;
	if (rec->type)
		parse_http(rec);
	return WARC_READ_RECORD;
}

enum warc_read warc_reader_next(struct warc_reader *r, struct warc_record *rec)
{
	struct member m = { .start = r->next_member };
	memset(rec, 0, sizeof *rec);
	rec->offset = m.start;
	if (r->stop != WARC_READ_RECORD) {
		rec->offset = r->stop_offset;
		rec->problem = r->stop_problem;
		return r->stop;
	}
	inflateReset(&r->z);
	input_at(r, m.start);
	for (;;) {
		if (r->z.avail_in == 0) {
			ssize_t n = refill(r);
			if (n < 0)
				return WARC_READ_ERR_IO;
			if (n == 0 && position(r) == m.start)
				return stop(r, &m, WARC_READ_END, NULL, rec);
			if (n == 0)
				return stop(r, &m, WARC_READ_TORN, "torn last record", rec);
		}
		if (output_room(r, &m) != 0)
			return WARC_READ_ERR_NOMEM;
		uInt room = r->z.avail_out;
		int ret = inflate(&r->z, Z_NO_FLUSH);
		m.total += room - r->z.avail_out;
		if (!m.streaming)
			m.fill += room - r->z.avail_out;
		const char *bad = find_header(r, &m, rec);
		if (bad)
			return stop(r, &m, WARC_READ_NOT_RECORD, bad, rec);
		if (ret == Z_STREAM_END)
			return finish(r, &m, rec);
		if (ret == Z_MEM_ERROR)
			return WARC_READ_ERR_NOMEM;
		if ((ret != Z_OK && ret != Z_BUF_ERROR) ||
		    (ret == Z_BUF_ERROR && r->z.avail_in > 0))
			return stop(r, &m, WARC_READ_CORRUPT, "corrupt gzip member", rec);
	}
}
