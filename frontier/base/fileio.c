/*
 * fileio.c: the shared file-system helpers (see fileio.h).
 */
#include "frontier/base/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_CHUNK (64 * 1024)
#define READ_FIRST_CHUNK (64 * 1024) /* a stream's buffer starts here and doubles */
#define PATH_CAP 4200

/* Writes all n bytes, at the file offset (at_off 0) or at off. */
static int write_loop(int fd, const char *c, size_t n, int at_off, uint64_t off)
{
	while (n > 0) {
		ssize_t w = at_off ? pwrite(fd, c, n, (off_t)off) : write(fd, c, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int fileio_write_all(int fd, const void *p, size_t n)
{
	return write_loop(fd, p, n, 0, 0);
}

int fileio_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	return write_loop(fd, p, n, 1, off);
}

int fileio_pread_all(int fd, void *p, size_t n, uint64_t off)
{
	char *c = p;
	while (n > 0) {
		ssize_t r = pread(fd, c, n, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		c += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int fsync_open(const char *path, int flags)
{
	int fd = open(path, flags | O_RDONLY | O_CLOEXEC);
	int rc, e;
	if (fd < 0)
		return -1;
	rc = fsync(fd);
	e = errno;
	close(fd);
	errno = e;
	return rc;
}

char *fileio_read_stream(FILE *f, size_t max, size_t *len)
{
	size_t cap = READ_FIRST_CHUNK < max ? READ_FIRST_CHUNK : max, n = 0;
	char *buf = malloc(cap ? cap : 1);
	if (buf == NULL)
		return NULL;
	while (n < max) {
		if (n == cap) {
			size_t grown = cap * 2 < max ? cap * 2 : max;
			char *nb = realloc(buf, grown);
			if (nb == NULL)
				goto fail;
			buf = nb;
			cap = grown;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f))
				goto fail;
			break;
		}
	}
	*len = n;
	return buf;
fail : {
	int e = errno;
	free(buf);
	errno = e ? e : EIO;
	return NULL;
}
}

char *fileio_read_path(const char *path, size_t max, size_t *len)
{
	int stdio = strcmp(path, "-") == 0;
	FILE *f = stdio ? stdin : fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *buf = fileio_read_stream(f, max, len);
	int e = errno;
	if (!stdio)
		fclose(f);
	errno = e;
	return buf;
}

/* Calls fn with the path and lstat of each entry of dir but "." and "..".
 * Stops at the first failure, or with keep_going goes on (skipping entries
 * that vanish) and fails with the last error. 0, or -1 (errno). */
static int each_entry(const char *dir, int keep_going,
                      int (*fn)(const char *path, const struct stat *st))
{
	char p[PATH_CAP];
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = 0, saved = 0;

	if (d == NULL)
		return -1;
	while ((rc == 0 || keep_going) && (e = readdir(d)) != NULL) {
		struct stat st;
		int r = 0;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) {
			errno = ENAMETOOLONG;
			r = -1;
		} else if (lstat(p, &st) != 0) {
			r = keep_going ? 0 : -1;
		} else {
			r = fn(p, &st);
		}
		if (r != 0) {
			saved = errno;
			rc = -1;
		}
	}
	closedir(d);
	errno = saved;
	return rc;
}

/* fsync of a tree's entry: folders recursively, regular files; links and
 * the rest are not followed. */
static int fsync_entry(const char *path, const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return fileio_fsync_tree(path);
	return S_ISREG(st->st_mode) ? fileio_fsync_path(path) : 0;
}

static int remove_entry(const char *path, const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return fileio_remove_tree(path);
	return unlink(path) != 0 && errno != ENOENT ? -1 : 0;
}

int fileio_fsync_path(const char *path)
{
	return fsync_open(path, 0);
}

int fileio_fsync_dir(const char *dir)
{
	return fsync_open(dir, O_DIRECTORY);
}

int fileio_fsync_tree(const char *dir)
{
	return each_entry(dir, 0, fsync_entry) == 0 ? fileio_fsync_dir(dir) : -1;
}

int fileio_replace(const char *path, const void *p, size_t n)
{
	char tmp[4200], dir[4200];
	int fd, saved;
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (fileio_write_all(fd, p, n) != 0 || fsync(fd) != 0) {
		saved = errno;
		close(fd);
		unlink(tmp);
		errno = saved;
		return -1;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		saved = errno;
		unlink(tmp);
		errno = saved;
		return -1;
	}
	snprintf(dir, sizeof dir, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof dir, ".");
	return fileio_fsync_dir(dir);
}

int fileio_copy_file(const char *src, const char *dst, uint64_t len)
{
	char buf[COPY_CHUNK];
	int in, out = -1, rc = -1, saved;
	uint64_t done = 0;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		goto out;
	while (done < len) {
		size_t want = len - done < sizeof buf ? (size_t)(len - done) : sizeof buf;
		ssize_t k = read(in, buf, want);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			goto out;
		if (k == 0) {
			if (len != FILEIO_WHOLE_FILE) {
				errno = EIO;
				goto out;
			}
			break;
		}
		if (fileio_write_all(out, buf, (size_t)k) != 0)
			goto out;
		done += (uint64_t)k;
	}
	if (fsync(out) != 0)
		goto out;
	rc = 0;
out:
	saved = errno;
	close(in);
	if (out >= 0 && close(out) != 0 && rc == 0) {
		saved = errno;
		rc = -1;
	}
	errno = saved;
	return rc;
}

int fileio_link_or_copy(const char *src, const char *dst)
{
	if (link(src, dst) == 0)
		return 0;
	if (errno != EXDEV && errno != EPERM && errno != EMLINK)
		return -1;
	return fileio_copy_file(src, dst, FILEIO_WHOLE_FILE);
}

int fileio_mkdir_p(const char *path)
{
	char buf[PATH_CAP];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf) {
		errno = n ? ENAMETOOLONG : ENOENT;
		return -1;
	}
	memcpy(buf, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -1;
		buf[i] = c;
	}
	return 0;
}

int fileio_remove_tree(const char *dir)
{
	int rc = each_entry(dir, 1, remove_entry), saved = errno;

	if (rc != 0 && saved == ENOENT)
		return 0; /* no dir: nothing to remove (entries that vanish are skipped) */
	if (rmdir(dir) != 0 && errno != ENOENT)
		return -1;
	errno = saved;
	return rc;
}
