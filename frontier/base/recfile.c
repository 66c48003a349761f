/* recfile.c: see recfile.h. */
#include "frontier/base/recfile.h"
#include "frontier/base/byteorder.h"
#include "frontier/base/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#define RECFILE_BUF (64u * 1024u)
#define MAGIC_LEN 8u
#define TRAILER_LEN 16u

struct recfile_writer {
	int fd;
	enum recfile_err err;
	int saved_errno;
	uint64_t payload; /* bytes put so far, magic excluded */
	XXH3_state_t *xs;
	uint32_t used;
	uint32_t hashed; /* buf[0..hashed) is in xs: the buffer is hashed at
	                    each drain, a call per 64 KiB, not one per put */
	char *path;
	uint8_t buf[RECFILE_BUF];
};

struct recfile_reader {
	int fd;
	enum recfile_err err;
	uint64_t left; /* payload bytes not yet handed out */
	uint32_t pos, fill;
	uint8_t buf[RECFILE_BUF];
};

static void w_fail(struct recfile_writer *w, enum recfile_err e)
{
	if (w->err == RECFILE_OK) {
		w->err = e;
		w->saved_errno = errno;
	}
}

static void w_hash(struct recfile_writer *w)
{
	if (w->used > w->hashed)
		XXH3_64bits_update(w->xs, w->buf + w->hashed, w->used - w->hashed);
	w->hashed = w->used;
}

static void w_drain(struct recfile_writer *w)
{
	w_hash(w);
	if (w->err == RECFILE_OK && w->used > 0 && fileio_write_all(w->fd, w->buf, w->used) != 0)
		w_fail(w, RECFILE_ERR_IO);
	w->used = w->hashed = 0;
}

static void w_put(struct recfile_writer *w, const void *p, size_t n)
{
	const uint8_t *c = p;
	if (w->err != RECFILE_OK)
		return;
	w->payload += n;
	while (n > 0) {
		size_t room = RECFILE_BUF - w->used;
		size_t k = n < room ? n : room;
		memcpy(w->buf + w->used, c, k);
		w->used += (uint32_t)k;
		c += k;
		n -= k;
		if (w->used == RECFILE_BUF)
			w_drain(w);
	}
}

enum recfile_err recfile_writer_create(const char *path, const char magic[8],
                                       struct recfile_writer **out)
{
	struct recfile_writer *w = calloc(1, sizeof *w);
	*out = NULL;
	if (w == NULL)
		return RECFILE_ERR_NOMEM;
	w->path = strdup(path);
	w->xs = XXH3_createState();
	if (w->path == NULL || w->xs == NULL) {
		XXH3_freeState(w->xs);
		free(w->path);
		free(w);
		return RECFILE_ERR_NOMEM;
	}
	XXH3_64bits_reset(w->xs);
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		int e = errno;
		XXH3_freeState(w->xs);
		free(w->path);
		free(w);
		errno = e;
		return RECFILE_ERR_IO;
	}
	memcpy(w->buf, magic, MAGIC_LEN); /* hashed with the payload */
	w->used = MAGIC_LEN;
	*out = w;
	return RECFILE_OK;
}

void recfile_put_u8(struct recfile_writer *w, uint8_t v)
{
	w_put(w, &v, 1);
}

void recfile_put_u32(struct recfile_writer *w, uint32_t v)
{
	uint8_t b[4];
	le_put32(b, v);
	w_put(w, b, 4);
}

void recfile_put_u64(struct recfile_writer *w, uint64_t v)
{
	uint8_t b[8];
	le_put64(b, v);
	w_put(w, b, 8);
}

void recfile_put_bytes(struct recfile_writer *w, const void *p, uint32_t len)
{
	recfile_put_u32(w, len);
	if (len > 0)
		w_put(w, p, len);
}

static void writer_free(struct recfile_writer *w)
{
	XXH3_freeState(w->xs);
	free(w->path);
	free(w);
}

enum recfile_err recfile_writer_close(struct recfile_writer *w, int do_fsync)
{
	enum recfile_err rc;
	int e;
	if (w == NULL)
		return RECFILE_OK;
	if (w->err == RECFILE_OK) {
		uint8_t t[TRAILER_LEN];
		w_hash(w);
		le_put64(t, w->payload);
		le_put64(t + 8, XXH3_64bits_digest(w->xs));
		/* the trailer is not part of the checksummed bytes */
		if (w->used + TRAILER_LEN > RECFILE_BUF)
			w_drain(w);
		memcpy(w->buf + w->used, t, TRAILER_LEN);
		w->used += TRAILER_LEN;
		w->hashed = w->used;
		w_drain(w);
	}
	if (w->err == RECFILE_OK && do_fsync && fsync(w->fd) != 0)
		w_fail(w, RECFILE_ERR_IO);
	if (close(w->fd) != 0)
		w_fail(w, RECFILE_ERR_IO);
	rc = w->err;
	e = w->saved_errno;
	writer_free(w);
	errno = e;
	return rc;
}

void recfile_writer_abort(struct recfile_writer *w)
{
	if (w == NULL)
		return;
	close(w->fd);
	unlink(w->path);
	writer_free(w);
}

/* Refills the buffer from the payload; 0 or -1 (sets r->err). */
static int r_fill(struct recfile_reader *r)
{
	uint32_t want = r->left < RECFILE_BUF ? (uint32_t)r->left : RECFILE_BUF;
	ssize_t k;
	do
		k = read(r->fd, r->buf, want);
	while (k < 0 && errno == EINTR);
	if (k < 0) {
		r->err = RECFILE_ERR_IO;
		return -1;
	}
	if ((uint32_t)k != want) { /* the file shrank under us */
		r->err = RECFILE_ERR_CORRUPT;
		return -1;
	}
	r->pos = 0;
	r->fill = (uint32_t)k;
	return 0;
}

static enum recfile_err r_get(struct recfile_reader *r, void *p, size_t n)
{
	uint8_t *c = p;
	if (r->err != RECFILE_OK)
		return r->err;
	while (n > 0) {
		if (r->pos == r->fill) {
			if (r->left == 0) {
				r->err = RECFILE_ERR_CORRUPT;
				return r->err;
			}
			if (r_fill(r) != 0)
				return r->err;
		}
		size_t k = r->fill - r->pos;
		if (k > n)
			k = n;
		memcpy(c, r->buf + r->pos, k);
		r->pos += (uint32_t)k;
		r->left -= k;
		c += k;
		n -= k;
	}
	return RECFILE_OK;
}

enum recfile_err recfile_reader_open(const char *path, const char magic[8],
                                     struct recfile_reader **out)
{
	struct recfile_reader *r = calloc(1, sizeof *r);
	XXH3_state_t *xs = XXH3_createState();
	enum recfile_err rc = RECFILE_ERR_CORRUPT;
	uint8_t t[TRAILER_LEN];
	uint64_t size, payload, off;
	off_t end;

	*out = NULL;
	if (r != NULL)
		r->fd = -1;
	if (r == NULL || xs == NULL) {
		rc = RECFILE_ERR_NOMEM;
		goto fail;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		rc = RECFILE_ERR_IO;
		goto fail;
	}
	end = lseek(r->fd, 0, SEEK_END);
	if (end < 0) {
		rc = RECFILE_ERR_IO;
		goto fail;
	}
	size = (uint64_t)end;
	if (size < MAGIC_LEN + TRAILER_LEN)
		goto fail;
	if (fileio_pread_all(r->fd, r->buf, MAGIC_LEN, 0) != 0 ||
	    memcmp(r->buf, magic, MAGIC_LEN) != 0)
		goto fail;
	if (fileio_pread_all(r->fd, t, TRAILER_LEN, size - TRAILER_LEN) != 0)
		goto fail;
	payload = le_get64(t);
	if (payload != size - MAGIC_LEN - TRAILER_LEN)
		goto fail;
	/* Pass 1: verify the whole file before any field is used. */
	XXH3_64bits_reset(xs);
	XXH3_64bits_update(xs, magic, MAGIC_LEN);
	for (off = MAGIC_LEN; off < MAGIC_LEN + payload;) {
		uint64_t left = MAGIC_LEN + payload - off;
		size_t n = left < RECFILE_BUF ? (size_t)left : RECFILE_BUF;
		if (fileio_pread_all(r->fd, r->buf, n, off) != 0) {
			/* the size was measured: a short read is the file changing under us */
			rc = RECFILE_ERR_IO;
			goto fail;
		}
		XXH3_64bits_update(xs, r->buf, n);
		off += n;
	}
	if (XXH3_64bits_digest(xs) != le_get64(t + 8))
		goto fail;
	/* Pass 2 reads sequentially from just after the magic. */
	if (lseek(r->fd, MAGIC_LEN, SEEK_SET) < 0) {
		rc = RECFILE_ERR_IO;
		goto fail;
	}
	r->left = payload;
	XXH3_freeState(xs);
	*out = r;
	return RECFILE_OK;
fail : {
	int e = errno;
	XXH3_freeState(xs);
	if (r != NULL && r->fd >= 0)
		close(r->fd);
	free(r);
	if (rc == RECFILE_ERR_CORRUPT)
		e = EINVAL;
	errno = e;
	return rc;
}
}

enum recfile_err recfile_get_u8(struct recfile_reader *r, uint8_t *v)
{
	return r_get(r, v, 1);
}

enum recfile_err recfile_get_u32(struct recfile_reader *r, uint32_t *v)
{
	uint8_t b[4];
	enum recfile_err e = r_get(r, b, 4);
	*v = e == RECFILE_OK ? le_get32(b) : 0;
	return e;
}

enum recfile_err recfile_get_u64(struct recfile_reader *r, uint64_t *v)
{
	uint8_t b[8];
	enum recfile_err e = r_get(r, b, 8);
	*v = e == RECFILE_OK ? le_get64(b) : 0;
	return e;
}

/* Reads a length prefix; a length over max is damage. */
static enum recfile_err get_len(struct recfile_reader *r, uint32_t max, uint32_t *n)
{
	enum recfile_err e = recfile_get_u32(r, n);
	if (e == RECFILE_OK && *n > max) {
		r->err = RECFILE_ERR_CORRUPT;
		e = r->err;
	}
	return e;
}

enum recfile_err recfile_get_bytes(struct recfile_reader *r, void *buf, uint32_t cap, uint32_t *len)
{
	uint32_t n;
	enum recfile_err e = get_len(r, cap, &n);
	*len = 0;
	if (e != RECFILE_OK)
		return e;
	e = r_get(r, buf, n);
	if (e != RECFILE_OK)
		return e;
	if (n < cap)
		((char *)buf)[n] = '\0';
	*len = n;
	return RECFILE_OK;
}

enum recfile_err recfile_get_bytes_alloc(struct recfile_reader *r, uint32_t max, char **out,
                                         uint32_t *len)
{
	uint32_t n;
	enum recfile_err e = get_len(r, max, &n);
	*out = NULL;
	*len = 0;
	if (e != RECFILE_OK || n == 0)
		return e;
	char *b = malloc((size_t)n + 1);
	if (b == NULL)
		return RECFILE_ERR_NOMEM;
	e = r_get(r, b, n);
	if (e != RECFILE_OK) {
		free(b);
		return e;
	}
	b[n] = '\0';
	*out = b;
	*len = n;
	return RECFILE_OK;
}

int recfile_reader_at_end(const struct recfile_reader *r)
{
	return r->err == RECFILE_OK && r->left == 0 && r->pos == r->fill;
}

void recfile_reader_close(struct recfile_reader *r)
{
	if (r == NULL)
		return;
	close(r->fd);
	free(r);
}

const char *recfile_strerror(enum recfile_err e)
{
	switch (e) {
	case RECFILE_OK: return "ok";
	case RECFILE_ERR_IO: return "I/O error";
	case RECFILE_ERR_CORRUPT: return "truncated or corrupt (magic, length or checksum)";
	case RECFILE_ERR_NOMEM: return "out of memory";
	}
	return "unknown error";
}
