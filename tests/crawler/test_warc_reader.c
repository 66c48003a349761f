/*
 * test_warc_reader.c: the WARC reader (crawler/store/warc_reader.h) on
 * files the writer (warc.h) made and on hand-made members: a whole file
 * read back field by field, offsets and lengths equal to what the writer
 * reports and to what zlib inflates on its own, a record over the cap, a
 * file torn at many places, bytes that are not gzip, members that are not
 * records, seeking, and a chunked payload undone.
 */
#include "crawler/store/warc.h"
#include "crawler/store/warc_reader.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define FETCHES 8
#define BIG_FETCH 4       /* its body is BIG_BODY bytes */
#define BIG_BODY 300000u  /* past the cap of the over-cap test */
#define REVISIT_FETCH 6   /* the same body as fetch 1 */
#define HTTP2_FETCH 7     /* an HTTP/2 exchange */
#define TRUNCATED_FETCH 3 /* its body was cut at the size cap */

static char dir[64];
static char path[600];
/* what the writer reported, per fetch */
static uint64_t response_offset[FETCHES]; /* warc_writer_write_fetch's where */
static uint64_t fetch_end[FETCHES];       /* warc_writer_position after it */
static uint8_t *bodies[FETCHES];
static size_t body_len[FETCHES];

static void remove_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[700];
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static void fill_body(int i)
{
	size_t n = i == BIG_FETCH ? BIG_BODY : 100 + (size_t)i * 977;
	uint32_t x = 2463534242u + (uint32_t)i;
	bodies[i] = malloc(n);
	for (size_t k = 0; k < n; k++) {
		x ^= x << 13; /* xorshift: bytes that do not compress away */
		x ^= x >> 17;
		x ^= x << 5;
		bodies[i][k] = i == BIG_FETCH ? (uint8_t)x : (uint8_t)('a' + x % 26);
	}
	body_len[i] = n;
}

/* Writes FETCHES fetches into one file, keeping what the writer says. */
static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/warc-reader-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct warc_config cfg = { .dir = dir, .prefix = "t" };
	struct warc_writer *w = NULL;
	ck_assert_int_eq(warc_writer_open(&cfg, &w), WARC_OK);
	for (int i = 0; i < FETCHES; i++) {
		char url[64], req[128];
		snprintf(url, sizeof url, "http://h.test/p%d", i);
		snprintf(req, sizeof req, "GET /p%d HTTP/%s\r\nHost: h.test\r\n\r\n", i,
		         i == HTTP2_FETCH ? "2" : "1.1");
		const char *resp = i == HTTP2_FETCH
		                           ? "HTTP/2 200\r\ncontent-type: text/html\r\n\r\n"
		                   : i == 2 ? "HTTP/1.1 404 Not Found\r\n\r\n"
		                            : "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
		                              "Content-Encoding: identity\r\n\r\n";
		if (i == REVISIT_FETCH) {
			bodies[i] = malloc(body_len[1]);
			memcpy(bodies[i], bodies[1], body_len[1]);
			body_len[i] = body_len[1];
		} else {
			fill_body(i);
		}
		struct warc_fetch f = { .url = url,
			                .ip = "127.0.0.1",
			                .date_unix_ms = 1700000000000 + i,
			                .request_headers = req,
			                .request_len = strlen(req),
			                .response_headers = resp,
			                .response_headers_len = strlen(resp),
			                .body = bodies[i],
			                .body_len = body_len[i],
			                .truncated = i == TRUNCATED_FETCH,
			                .http2 = i == HTTP2_FETCH };
		struct warc_position where, after;
		bool revisit = false;
		ck_assert_int_eq(warc_writer_write_fetch(w, &f, &where, &revisit), WARC_OK);
		ck_assert_int_eq(revisit, i == REVISIT_FETCH);
		warc_writer_position(w, &after);
		ck_assert_str_eq(where.file, after.file);
		response_offset[i] = where.offset;
		fetch_end[i] = after.offset;
		snprintf(path, sizeof path, "%s/%s", dir, after.file);
	}
	ck_assert_int_eq(warc_writer_close(w), WARC_OK);
}

static void teardown(void)
{
	for (int i = 0; i < FETCHES; i++)
		free(bodies[i]);
	remove_dir();
}

static uint64_t file_size(const char *p)
{
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	return (uint64_t)st.st_size;
}

static uint8_t *slurp(const char *p, size_t *n)
{
	*n = file_size(p);
	uint8_t *b = malloc(*n ? *n : 1);
	FILE *f = fopen(p, "rb");
	ck_assert_uint_eq(fread(b, 1, *n, f), *n);
	fclose(f);
	return b;
}

static void write_file(const char *p, const uint8_t *b, size_t n)
{
	FILE *f = fopen(p, "wb");
	ck_assert_uint_eq(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* zlib on its own: the bytes [offset, offset + length) of the file are
 * exactly one gzip member; its inflated size. */
static size_t inflate_member(const uint8_t *file, uint64_t offset, uint64_t length)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	ck_assert_int_eq(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	z.next_in = (uint8_t *)(uintptr_t)(file + offset);
	z.avail_in = (uInt)length;
	uint8_t out[65536];
	size_t total = 0;
	int ret;
	do {
		z.next_out = out;
		z.avail_out = sizeof out;
		ret = inflate(&z, Z_NO_FLUSH);
		total += sizeof out - z.avail_out;
	} while (ret == Z_OK);
	ck_assert_int_eq(ret, Z_STREAM_END);
	ck_assert_uint_eq(z.avail_in, 0);
	inflateEnd(&z);
	return total;
}

static void label_of(const void *data, size_t n, char label[38])
{
	uint8_t d[20];
	warc_sha1(data, n, d);
	warc_sha1_label(d, label);
}

/* One request/response (or revisit) pair of fetch i, as the writer wrote
 * it; earlier_id: the record id of fetch 1's response, which the revisit
 * refers to. Its response's record id into resp_id. */
static void check_fetch(struct warc_reader *r, const uint8_t *file, int i, const char *earlier_id,
                        char resp_id[64])
{
	struct warc_record rec;
	char url[64], label[38];
	snprintf(url, sizeof url, "http://h.test/p%d", i);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_str_eq(rec.type, "request");
	ck_assert_str_eq(rec.target_uri, url);
	ck_assert_int_eq(rec.http_status, 0);
	ck_assert_ptr_nonnull(rec.http_headers);
	ck_assert_int_eq(memcmp(rec.http_headers, "GET /p", 6), 0);
	ck_assert_uint_eq(rec.offset + rec.length, response_offset[i]);
	ck_assert_uint_eq(inflate_member(file, rec.offset, rec.length), rec.record_size);
	char concurrent[64];
	snprintf(concurrent, sizeof concurrent, "%s", rec.concurrent_to);

	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_uint_eq(rec.offset, response_offset[i]);
	ck_assert_uint_eq(rec.offset + rec.length, fetch_end[i]);
	ck_assert_str_eq(rec.type, i == REVISIT_FETCH ? "revisit" : "response");
	ck_assert_str_eq(rec.record_id, concurrent);
	ck_assert_str_eq(rec.target_uri, url);
	ck_assert_str_eq(rec.ip_address, "127.0.0.1");
	char date[32];
	snprintf(date, sizeof date, "2023-11-14T22:13:20.%03dZ", i);
	ck_assert_str_eq(rec.date, date);
	ck_assert_uint_eq(inflate_member(file, rec.offset, rec.length), rec.record_size);
	ck_assert_str_eq(rec.protocol, i == HTTP2_FETCH ? "h2" : "http/1.1");
	ck_assert_str_eq(rec.content_type, "application/http; msgtype=response");
	ck_assert_uint_eq(rec.content_length, rec.block_len);
	label_of(rec.block, rec.block_len, label);
	ck_assert_str_eq(rec.block_digest, label);
	label_of(bodies[i], body_len[i], label);
	ck_assert_str_eq(rec.payload_digest, label);
	ck_assert_int_eq(rec.http_status, i == 2 ? 404 : 200);
	ck_assert_ptr_nonnull(rec.payload);
	if (i == REVISIT_FETCH) {
		ck_assert_uint_eq(rec.payload_len, 0);
		ck_assert_str_eq(rec.refers_to, earlier_id);
		ck_assert_str_eq(rec.refers_to_target_uri, "http://h.test/p1");
		ck_assert_ptr_nonnull(rec.refers_to_date);
		ck_assert_ptr_nonnull(strstr(rec.profile, "identical-payload-digest"));
	} else {
		ck_assert_uint_eq(rec.payload_len, body_len[i]);
		ck_assert_int_eq(memcmp(rec.payload, bodies[i], body_len[i]), 0);
		ck_assert_ptr_null(rec.refers_to);
		ck_assert_ptr_null(rec.profile);
	}
	if (i == HTTP2_FETCH)
		ck_assert_int_eq(memcmp(rec.http_headers, "HTTP/1.1 200", 12), 0);
	if (i == TRUNCATED_FETCH)
		ck_assert_str_eq(rec.truncated, "length");
	else
		ck_assert_ptr_null(rec.truncated);
	ck_assert_int_eq(rec.chunked, 0);
	ck_assert_ptr_null(rec.problem);
	snprintf(resp_id, 64, "%s", rec.record_id);
}

/* The warcinfo record the writer opens every file with. */
static void check_warcinfo(struct warc_reader *r)
{
	struct warc_record rec;
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_uint_eq(rec.offset, 0);
	ck_assert_str_eq(rec.type, "warcinfo");
	ck_assert_str_eq(rec.content_type, "application/warc-fields");
	ck_assert_ptr_null(rec.target_uri);
	ck_assert_ptr_null(rec.http_headers);
	ck_assert_ptr_null(rec.payload);
	ck_assert_ptr_nonnull(memmem(rec.block, rec.block_len, "software: ", 10));
}

START_TEST(whole_file_as_the_writer_wrote_it)
{
	size_t n;
	uint8_t *file = slurp(path, &n);
	struct warc_reader *r = NULL;
	struct warc_record rec;
	char first_id[64] = "";
	ck_assert_int_eq(warc_reader_open(path, 0, 1u << 20, &r), 0);
	check_warcinfo(r);
	for (int i = 0; i < FETCHES; i++) {
		char id[64];
		check_fetch(r, file, i, first_id, id);
		if (i == 1)
			snprintf(first_id, sizeof first_id, "%s", id);
	}
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_END);
	ck_assert_uint_eq(rec.offset, n);
	ck_assert_ptr_null(rec.problem);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_END);
	ck_assert_uint_eq(fetch_end[FETCHES - 1], n);
	warc_reader_close(r);
	free(file);
}
END_TEST

/* An index names a record by its offset: seek there, or open there. */
START_TEST(seek_and_open_at_a_record)
{
	struct warc_reader *r = NULL;
	struct warc_record rec;
	ck_assert_int_eq(warc_reader_open(path, response_offset[5], 1u << 20, &r), 0);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_str_eq(rec.target_uri, "http://h.test/p5");
	ck_assert_uint_eq(rec.offset, response_offset[5]);
	for (int k = 0; k < 2 * FETCHES; k++) {
		int i = (k * 5) % FETCHES; /* backwards and forwards */
		char url[64];
		snprintf(url, sizeof url, "http://h.test/p%d", i);
		warc_reader_seek(r, response_offset[i]);
		ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
		ck_assert_str_eq(rec.target_uri, url);
		ck_assert_str_ne(rec.type, "request");
		ck_assert_uint_eq(rec.offset + rec.length, fetch_end[i]);
	}
	/* past the end, then back: the end does not stick after a seek */
	warc_reader_seek(r, fetch_end[FETCHES - 1]);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_END);
	warc_reader_seek(r, 0);
	check_warcinfo(r);
	warc_reader_close(r);

	/* a borrowed descriptor stays open */
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(warc_reader_open_fd(fd, response_offset[2], 1u << 20, &r), 0);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_int_eq(rec.http_status, 404);
	warc_reader_close(r);
	ck_assert_int_eq(close(fd), 0);

	for (int res = WARC_READ_ERR_NOMEM; res <= WARC_READ_NOT_RECORD; res++)
		ck_assert_str_ne(warc_read_strerror((enum warc_read)res),
		                 "unknown WARC read result");
	ck_assert_str_eq(warc_read_strerror(WARC_READ_TORN),
	                 "a member cut off by the end of the file");
	errno = 0;
	ck_assert_int_eq(warc_reader_open("/nonexistent/x.warc.gz", 0, 0, &r), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(r);
}
END_TEST

/* A record past the cap is read to its end and reported with its place
 * and fields, not its block; the next record reads as ever. */
START_TEST(record_over_the_cap)
{
	size_t n;
	uint8_t *file = slurp(path, &n);
	uint64_t off = response_offset[BIG_FETCH];
	size_t size = inflate_member(file, off, fetch_end[BIG_FETCH] - off);
	ck_assert_uint_gt(size, BIG_BODY);
	char label[38];
	label_of(bodies[BIG_FETCH], BIG_BODY, label);
	size_t caps[] = { 0, 64u * 1024u, size - 1, size };
	for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
		struct warc_reader *r = NULL;
		struct warc_record rec;
		ck_assert_int_eq(warc_reader_open(path, off, caps[c], &r), 0);
		enum warc_read got = warc_reader_next(r, &rec);
		ck_assert_int_eq(got, caps[c] >= size ? WARC_READ_RECORD : WARC_READ_TOO_LARGE);
		ck_assert_uint_eq(rec.offset, off);
		ck_assert_uint_eq(rec.offset + rec.length, fetch_end[BIG_FETCH]);
		ck_assert_uint_eq(rec.record_size, size);
		ck_assert_str_eq(rec.type, "response");
		ck_assert_str_eq(rec.target_uri, "http://h.test/p4");
		ck_assert_str_eq(rec.payload_digest, label);
		ck_assert_ptr_null(rec.problem);
		if (got == WARC_READ_TOO_LARGE) {
			ck_assert_ptr_null(rec.block);
			ck_assert_ptr_null(rec.payload);
			ck_assert_ptr_null(rec.http_headers);
		} else {
			ck_assert_uint_eq(rec.payload_len, BIG_BODY);
			ck_assert_int_eq(memcmp(rec.payload, bodies[BIG_FETCH], BIG_BODY), 0);
		}
		got = warc_reader_next(r, &rec); /* a small record, under or over the cap */
		ck_assert_int_eq(got, caps[c] >= rec.record_size ? WARC_READ_RECORD
		                                                 : WARC_READ_TOO_LARGE);
		ck_assert_uint_lt(rec.record_size, 1024);
		ck_assert_uint_eq(rec.block != NULL, got == WARC_READ_RECORD);
		ck_assert_str_eq(rec.type, "request");
		ck_assert_str_eq(rec.target_uri, "http://h.test/p5");
		warc_reader_close(r);
	}
	free(file);
}
END_TEST

/* Reads records from the start until one that is not whole; the count of
 * whole ones. */
static int read_until_bad(const char *p, enum warc_read *bad, struct warc_record *rec)
{
	struct warc_reader *r = NULL;
	int whole = 0;
	ck_assert_int_eq(warc_reader_open(p, 0, 1u << 20, &r), 0);
	while ((*bad = warc_reader_next(r, rec)) == WARC_READ_RECORD)
		whole++;
	/* an end or a bad member stays so */
	struct warc_record again;
	ck_assert_int_eq(warc_reader_next(r, &again), *bad);
	ck_assert_uint_eq(again.offset, rec->offset);
	ck_assert_ptr_eq(again.problem, rec->problem);
	warc_reader_close(r);
	return whole;
}

/* Cut at member boundaries and inside members, the first and last among
 * them: whole records up to the cut, then the end or a torn member. */
START_TEST(torn_member)
{
	size_t n;
	uint8_t *file = slurp(path, &n);
	/* member starts, from a whole read */
	uint64_t starts[2 * FETCHES + 2];
	int members = 0;
	struct warc_reader *r = NULL;
	struct warc_record rec;
	ck_assert_int_eq(warc_reader_open(path, 0, 1u << 20, &r), 0);
	while (warc_reader_next(r, &rec) == WARC_READ_RECORD)
		starts[members++] = rec.offset;
	warc_reader_close(r);
	ck_assert_int_eq(members, 1 + 2 * FETCHES);
	starts[members] = n;
	char torn[700];
	snprintf(torn, sizeof torn, "%s/torn.warc.gz", dir);
	for (int m = 0; m <= members; m++) {
		uint64_t len = m < members ? starts[m + 1] - starts[m] : 0;
		uint64_t cuts[] = { 0, 1, 9, len / 2, len - 1 };
		for (size_t c = 0; c < (m < members ? 5u : 1u); c++) {
			uint64_t cut = starts[m] + cuts[c];
			enum warc_read bad;
			write_file(torn, file, (size_t)cut);
			ck_assert_int_eq(read_until_bad(torn, &bad, &rec), m);
			ck_assert_uint_eq(rec.offset, starts[m]);
			if (cuts[c] == 0) {
				ck_assert_int_eq(bad, WARC_READ_END);
				ck_assert_ptr_null(rec.problem);
			} else {
				ck_assert_int_eq(bad, WARC_READ_TORN);
				ck_assert_str_eq(rec.problem, "torn last record");
			}
		}
	}
	free(file);
}
END_TEST

/* text as one gzip member, appended to p. */
static void append_member(const char *p, const void *text, size_t len)
{
	uLong bound = compressBound((uLong)len) + 64;
	uint8_t *out = malloc(bound);
	z_stream z;
	memset(&z, 0, sizeof z);
	ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	z.next_in = (uint8_t *)(uintptr_t)text;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)bound;
	ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t n = bound - z.avail_out;
	deflateEnd(&z);
	FILE *f = fopen(p, "ab");
	ck_assert_uint_eq(fwrite(out, 1, n, f), n);
	fclose(f);
	free(out);
}

/* After the writer's whole records, what p gets appended ends the
 * reading there, as bad with problem (or any problem when NULL). */
static void expect_bad_after(const uint8_t *file, size_t n, const char *p, enum warc_read want,
                             const char *problem)
{
	enum warc_read bad;
	struct warc_record rec;
	ck_assert_int_eq(read_until_bad(p, &bad, &rec), 1 + 2 * FETCHES);
	ck_assert_int_eq(bad, want);
	ck_assert_uint_eq(rec.offset, n);
	ck_assert_ptr_nonnull(rec.problem);
	if (problem)
		ck_assert_str_eq(rec.problem, problem);
	write_file(p, file, n); /* back to whole */
}

START_TEST(bytes_that_are_not_gzip)
{
	size_t n;
	uint8_t *file = slurp(path, &n);
	FILE *f = fopen(path, "ab");
	fputs("garbage garbage garbage", f);
	fclose(f);
	expect_bad_after(file, n, path, WARC_READ_CORRUPT, "corrupt gzip member");
	/* what a power cut leaves: the size grew, the bytes never came */
	static const uint8_t zeros[4096];
	f = fopen(path, "ab");
	ck_assert_uint_eq(fwrite(zeros, 1, sizeof zeros, f), sizeof zeros);
	fclose(f);
	expect_bad_after(file, n, path, WARC_READ_CORRUPT, "corrupt gzip member");
	/* a member whose deflate data is damaged after a good start */
	char rec[2000];
	int len = snprintf(rec, sizeof rec,
	                   "WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 1000\r\n\r\n%01000d"
	                   "\r\n\r\n",
	                   7);
	char scratch[700];
	snprintf(scratch, sizeof scratch, "%s/one.gz", dir);
	append_member(scratch, rec, (size_t)len);
	size_t mn;
	uint8_t *member = slurp(scratch, &mn);
	member[mn / 2] ^= 0x55;
	member[mn / 2 + 1] ^= 0xaa;
	f = fopen(path, "ab");
	ck_assert_uint_eq(fwrite(member, 1, mn, f), mn);
	fclose(f);
	expect_bad_after(file, n, path, WARC_READ_CORRUPT, "corrupt gzip member");
	free(member);
	free(file);
}
END_TEST

START_TEST(members_that_are_not_records)
{
	size_t n;
	uint8_t *file = slurp(path, &n);
	static const struct {
		const char *text;
		const char *problem;
	} cases[] = {
		{ "hello, not a record", "member ends inside the WARC header" },
		{ "HTTP/1.1 200 OK\r\n\r\nbody", "member does not start with a WARC/1.x header" },
		{ "WARC/1.1\r\nWARC-Type: resource\r\n\r\n\r\n\r\n",
		  "WARC header without Content-Length" },
		{ "WARC/1.1\r\nContent-Length: x\r\n\r\n\r\n\r\n",
		  "bad Content-Length in WARC header" },
		{ "WARC/1.1\r\nContent-Length: 100\r\n\r\nshort\r\n\r\n",
		  "record length disagrees with its Content-Length" },
		{ "WARC/1.1\r\nContent-Length: 2\r\n\r\nlonger\r\n\r\n",
		  "record length disagrees with its Content-Length" },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		append_member(path, cases[c].text, strlen(cases[c].text));
		expect_bad_after(file, n, path, WARC_READ_NOT_RECORD, cases[c].problem);
	}
	/* a header block past its cap, found before the member ends */
	size_t big = WARC_READER_HEADER_MAX + 1000;
	char *text = malloc(big);
	memset(text, 'a', big);
	memcpy(text, "WARC/1.1\r\nX-Pad: ", 17);
	append_member(path, text, big);
	expect_bad_after(file, n, path, WARC_READ_NOT_RECORD, "WARC header block too long");
	free(text);
	/* a member that is whole but not a record: its length is known */
	append_member(path, cases[4].text, strlen(cases[4].text));
	struct warc_reader *r = NULL;
	struct warc_record rec;
	ck_assert_int_eq(warc_reader_open(path, n, 0, &r), 0);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_NOT_RECORD);
	ck_assert_uint_eq(rec.offset, n);
	ck_assert_uint_eq(rec.length, file_size(path) - n);
	warc_reader_close(r);
	free(file);
}
END_TEST

/* Another writer may keep the chunked transfer coding in the record. */
START_TEST(chunked_payload_undone)
{
	char p[700];
	snprintf(p, sizeof p, "%s/chunked.warc.gz", dir);
	static const char *const blocks[] = {
		("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n"
		 "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n"),
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", /* not whole */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	};
	for (size_t b = 0; b < 3; b++) {
		char text[512];
		int len =
		        snprintf(text, sizeof text,
		                 "WARC/1.1\r\nWARC-Type: response\r\nContent-Length: %zu\r\n\r\n%s"
		                 "\r\n\r\n",
		                 strlen(blocks[b]), blocks[b]);
		append_member(p, text, (size_t)len);
	}
	struct warc_reader *r = NULL;
	struct warc_record rec;
	ck_assert_int_eq(warc_reader_open(p, 0, 4096, &r), 0);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_int_eq(rec.chunked, 1);
	warc_record_unchunk(&rec);
	ck_assert_int_eq(rec.chunked, 0);
	ck_assert_uint_eq(rec.payload_len, 11);
	ck_assert_int_eq(memcmp(rec.payload, "hello world", 11), 0);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_int_eq(rec.chunked, 1);
	size_t len = rec.payload_len;
	warc_record_unchunk(&rec); /* not a whole chunked body: kept as it is */
	ck_assert_uint_eq(rec.payload_len, len);
	ck_assert_int_eq(memcmp(rec.payload, "5\r\nhel", 6), 0);
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_RECORD);
	ck_assert_int_eq(rec.chunked, 0);
	warc_record_unchunk(&rec);
	ck_assert_uint_eq(rec.payload_len, strlen("5\r\nhello\r\n0\r\n\r\n"));
	ck_assert_int_eq(warc_reader_next(r, &rec), WARC_READ_END);
	warc_reader_close(r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("warc_reader");
	TCase *tc = tcase_create("warc_reader");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, whole_file_as_the_writer_wrote_it);
	tcase_add_test(tc, seek_and_open_at_a_record);
	tcase_add_test(tc, record_over_the_cap);
	tcase_add_test(tc, torn_member);
	tcase_add_test(tc, bytes_that_are_not_gzip);
	tcase_add_test(tc, members_that_are_not_records);
	tcase_add_test(tc, chunked_payload_undone);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
