/*
 * fuzz_cdxj.c: arbitrary bytes as a WARC record to index (store/cdxj.h):
 * the first byte picks the record type, the bytes up to the first LF are
 * its WARC-Target-URI, the rest its block (an HTTP message from the web).
 * Beyond "no crash", it aborts when
 *  - a response or revisit gets no line, or a request one;
 *  - the line holds a line break before its end, or is not valid UTF-8;
 *  - the line does not read back (cdxj_line_location, and cdxj_line_read
 *    when the URL holds no space or NUL) to the offset, length and file
 *    name it was made with;
 * and the input itself, read as a line, must not crash either reader.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/store/cdxj.h"

static int valid_utf8(const char *s, size_t n)
{
	struct cdxj_text t = { 0 };
	int ok = cdxj_utf8_sanitize(&t, (const uint8_t *)s, n) == 0 && t.len == n &&
	         (n == 0 || memcmp(t.p, s, n) == 0);
	free(t.p);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cdxj_indexer *ix;
	static const char *const types[] = { "response", "revisit", "resource", "request" };
	struct cdxj_location loc;
	if (ix == NULL && (ix = cdxj_indexer_create(4096)) == NULL)
		abort();
	cdxj_line_location((const char *)data, size, &loc);
	char *copy = malloc(size + 1);
	struct cdxj_fields f;
	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	cdxj_line_read(copy, size, &f);
	if (size == 0) {
		free(copy);
		return 0;
	}
	const char *type = types[data[0] % 4];
	const uint8_t *rest = data + 1, *nl = memchr(rest, '\n', size - 1);
	size_t ul = nl ? (size_t)(nl - rest) : size - 1;
	const uint8_t *block = nl ? nl + 1 : data + size;
	struct cdxj_record r = {
		.type = type,
		.type_len = strlen(type),
		.url = (const char *)rest,
		.url_len = ul,
		.date = "2024-05-06T07:08:09.123Z",
		.date_len = 24,
		.payload_digest = "sha1:ABC",
		.payload_digest_len = 8,
		.content_type = "application/http; msgtype=response",
		.content_type_len = 34,
		.block = block,
		.block_len = (size_t)(data + size - block),
		.offset = size * 3,
		.length = size + 1,
		.filename = "f.warc.gz",
	};
	const char *line;
	size_t len;
	enum cdxj_error rc = cdxj_indexer_line(ix, &r, &line, &len);
	if (data[0] % 4 == 3) {
		if (rc != CDXJ_SKIP)
			abort();
		free(copy);
		return 0;
	}
	if (rc != CDXJ_OK || len == 0 || line[len - 1] != '\n' || memchr(line, '\n', len - 1) ||
	    !valid_utf8(line, len))
		abort();
	if (cdxj_line_location(line, len - 1, &loc) != CDXJ_OK || loc.offset != size * 3 ||
	    loc.length != size + 1 || loc.filename_len != 9 || memcmp(loc.filename, "f.warc.gz", 9))
		abort();
	/* the reader of any writer's lines: its URL key has no space, so the
	 * timestamp is the word before the first " {" */
	free(copy);
	if ((copy = malloc(len)) == NULL)
		abort();
	memcpy(copy, line, len - 1);
	if (!memchr(rest, ' ', ul) && !memchr(rest, '\0', ul) &&
	    (cdxj_line_read(copy, len - 1, &f) != CDXJ_OK || !f.has_offset ||
	     f.offset != size * 3 || f.length != size + 1 || strcmp(f.filename, "f.warc.gz") != 0 ||
	     strcmp(f.timestamp, "20240506070809") != 0))
		abort();
	free(copy);
	return 0;
}
