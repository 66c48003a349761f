/*
 * fuzz_warc_reader.c: reads arbitrary bytes as a WARC file, with a record
 * cap of 4 KiB for inputs of odd size (records past it stream through)
 * and 1 MiB for the others (the record buffer grows), and checks the
 * reader's contract: every result is a known
 * one; a record's member lies inside the file, right after the previous
 * one; a whole record's block, HTTP header block and payload lie inside
 * its inflated size; a bad member ends the reading at its offset, and the
 * next call says so again; a record read again by its offset
 * (warc_reader_seek) is the same record.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "crawler/store/warc_reader.h"

#define MAX_RECORDS 64

static void check_record(const struct warc_record *rec, size_t size, size_t cap)
{
	if (rec->offset >= size || rec->length == 0 || rec->length > size - rec->offset ||
	    rec->problem)
		abort();
	if (!rec->block)
		return; /* over the cap: fields only */
	if (rec->block_len != rec->content_length || rec->record_size > cap ||
	    rec->block_len + 4 > rec->record_size)
		abort();
	const uint8_t *end = rec->block + rec->block_len;
	if (rec->http_headers && ((const uint8_t *)rec->http_headers != rec->block ||
	                          rec->http_headers_len > rec->block_len))
		abort();
	if (rec->payload && (rec->payload < rec->block || rec->payload + rec->payload_len != end))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("warc", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	struct warc_reader *r = NULL;
	size_t cap = size % 2 ? 4096u : 1u << 20;
	if (warc_reader_open_fd(fd, 0, cap, &r) != 0) {
		close(fd);
		return 0;
	}
	uint64_t offsets[MAX_RECORDS], next = 0;
	char ids[MAX_RECORDS][64];
	size_t n = 0;
	struct warc_record rec;
	enum warc_read got;
	while ((got = warc_reader_next(r, &rec)) == WARC_READ_RECORD ||
	       got == WARC_READ_TOO_LARGE) {
		char id[64];
		check_record(&rec, size, cap);
		snprintf(id, sizeof id, "%s", rec.record_id ? rec.record_id : "");
		if (rec.offset != next || (got == WARC_READ_TOO_LARGE && rec.block))
			abort();
		next = rec.offset + rec.length;
		if (n < MAX_RECORDS) {
			offsets[n] = rec.offset;
			memcpy(ids[n++], id, sizeof id);
		}
		struct warc_record copy = rec;
		warc_record_unchunk(&copy);
		if (copy.payload_len > rec.payload_len)
			abort();
	}
	switch (got) {
	case WARC_READ_END:
		if (next != size || rec.problem)
			abort();
		break;
	case WARC_READ_TORN:
	case WARC_READ_CORRUPT:
	case WARC_READ_NOT_RECORD: {
		uint64_t at = rec.offset;
		if (at != next || at >= size || !rec.problem)
			abort();
		if (warc_reader_next(r, &rec) != got || rec.offset != at)
			abort();
		break;
	}
	case WARC_READ_ERR_IO:
	case WARC_READ_ERR_NOMEM: break;
	default: abort();
	}
	for (size_t i = n; i-- > 0;) {
		char id[64];
		warc_reader_seek(r, offsets[i]);
		got = warc_reader_next(r, &rec);
		snprintf(id, sizeof id, "%s", rec.record_id ? rec.record_id : "");
		if ((got != WARC_READ_RECORD && got != WARC_READ_TOO_LARGE) ||
		    rec.offset != offsets[i] || strcmp(id, ids[i]) != 0)
			abort();
	}
	warc_reader_close(r);
	close(fd);
	return 0;
}
