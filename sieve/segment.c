/*
 * segment.c: the record reader and Mercator's segment files (see
 * segment.h).
 */
#include "sieve/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "frontier/base/fileio.h"

void rd_init(struct rd *r, int fd, uint8_t *buf, size_t cap)
{
	r->fd = fd;
	r->buf = buf;
	r->cap = cap;
	r->pos = r->len = 0;
	r->off = 0;
	r->eof = false;
}

ssize_t rd_need(struct rd *r, size_t k)
{
	if (r->len - r->pos >= k)
		return (ssize_t)(r->len - r->pos);
	if (r->pos > 0) {
		memmove(r->buf, r->buf + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	while (r->len < k && !r->eof) {
		ssize_t g = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (g < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (g == 0)
			r->eof = true;
		r->len += (size_t)g;
	}
	return (ssize_t)(r->len - r->pos);
}

int rec_next(struct rd *r, size_t maxlen, uint64_t mask, const char **url, size_t *len,
             uint64_t *sig)
{
	ssize_t have = rd_need(r, REC_HDR);
	uint32_t l;
	uint64_t h;

	if (have < 0)
		return -2;
	if (have == 0)
		return 0;
	if (have < REC_HDR)
		return -1;
	l = le_get32(r->buf + r->pos);
	h = le_get64(r->buf + r->pos + 4) ^ mask;
	if (l > maxlen || l + REC_HDR > r->cap)
		return -1;
	have = rd_need(r, REC_HDR + l);
	if (have < 0)
		return -2;
	if ((size_t)have < REC_HDR + l || XXH3_64bits(r->buf + r->pos + REC_HDR, l) != h)
		return -1;
	*url = (const char *)r->buf + r->pos + REC_HDR;
	*len = l;
	*sig = h;
	r->pos += REC_HDR + l;
	r->off += REC_HDR + l;
	return 1;
}

int seg_path(const char *dir, char *out, size_t len, const char *name, uint64_t seg, int slice)
{
	if (slice >= 0)
		return sieve_path(out, len, dir, "%s.%llu.%d", name, (unsigned long long)seg,
		                  slice);
	return sieve_path(out, len, dir, "%s.%llu", name, (unsigned long long)seg);
}

/* The spare of NAME (A, or S's slice when slice >= 0). */
static int spare_path(const char *dir, char *out, size_t len, const char *name, int slice)
{
	if (slice >= 0)
		return sieve_path(out, len, dir, "%s.spare.%d", name, slice);
	return sieve_path(out, len, dir, "%s.spare", name);
}

/* Writing over a file's cached pages costs about half as much as filling
 * new ones, and nobody has to free them: hence the spares (seg_done). */
int seg_open(const char *dir, const char *name, uint64_t seg, int slice, char *p, size_t plen)
{
	char spare[4096];
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC;

	if (seg_path(dir, p, plen, name, seg, slice) != 0 ||
	    spare_path(dir, spare, sizeof spare, name, slice) != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (rename(spare, p) != 0)
		flags |= O_TRUNC;
	return open(p, flags, 0644);
}

/* Makes NAME.<seg> the spare, or removes it. */
static void file_done(const char *dir, const char *name, uint64_t seg, int slice, bool recycle)
{
	char p[4096], spare[4096];

	if (seg_path(dir, p, sizeof p, name, seg, slice) != 0)
		return;
	if (!recycle || spare_path(dir, spare, sizeof spare, name, slice) != 0 ||
	    rename(p, spare) != 0)
		unlink(p);
}

void seg_done(const char *dir, uint64_t seg, bool recycle)
{
	file_done(dir, "A", seg, -1, recycle);
	for (unsigned r = 0; r < SLICES; r++)
		file_done(dir, "S", seg, (int)r, recycle);
}

void seg_spares_remove(const char *dir)
{
	char p[4096];

	if (spare_path(dir, p, sizeof p, "A", -1) == 0)
		unlink(p);
	for (unsigned r = 0; r < SLICES; r++)
		if (spare_path(dir, p, sizeof p, "S", (int)r) == 0)
			unlink(p);
}

void s_files_remove(const char *dir, uint64_t seg)
{
	char p[4096];

	for (unsigned r = 0; r < SLICES; r++)
		if (seg_path(dir, p, sizeof p, "S", seg, (int)r) == 0)
			unlink(p);
}

void s_files_open(struct s_writer *w, struct s_files *f, const char *dir, uint64_t seg)
{
	char p[4096];

	for (unsigned r = 0; r < SLICES; r++) {
		w->len[r] = 0;
		f->fd[r] = seg_open(dir, "S", seg, (int)r, p, sizeof p);
		f->ok[r] = f->fd[r] >= 0;
		XXH3_64bits_reset(w->xs[r]);
	}
}

void s_files_drain(struct s_writer *w, struct s_files *f, unsigned r)
{
	const uint8_t *p = w->buf + r * w->cap;
	size_t len = w->len[r];

	if (f->ok[r] && len > 0) {
		XXH3_64bits_update(w->xs[r], p, len);
		f->ok[r] = fileio_write_all(f->fd[r], p, len) == 0;
	}
	w->len[r] = 0;
}

void s_files_seal(struct s_writer *w, struct s_files *f)
{
	for (unsigned r = 0; r < SLICES; r++) {
		s_files_drain(w, f, r);
		f->sum[r] = XXH3_64bits_digest(w->xs[r]);
		if (f->fd[r] >= 0)
			close(f->fd[r]);
		f->fd[r] = -1;
	}
}
