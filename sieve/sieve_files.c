/*
 * sieve_files.c: the sieves' shared file helpers (see sieve_files.h).
 */
#include "sieve/sieve_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/base/fileio.h"

int sieve_dir_lock(const char *dir, int *lock_fd, char *err, size_t errlen)
{
	char p[4096];
	int fd;

	*lock_fd = -1;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
		return SIEVE_EIO;
	}
	if (sieve_path(p, sizeof p, dir, "LOCK") != 0) {
		snprintf(err, errlen, "%s: path too long", dir);
		return SIEVE_EINVAL;
	}
	fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", p, strerror(errno));
		return SIEVE_EIO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		snprintf(err, errlen, "%s: folder in use by another sieve", dir);
		close(fd);
		return SIEVE_ELOCKED;
	}
	*lock_fd = fd;
	return SIEVE_OK;
}

int sieve_path(char *out, size_t len, const char *dir, const char *name, ...)
{
	va_list ap;
	int k = snprintf(out, len, "%s/", dir), r;

	if (k < 0 || (size_t)k >= len)
		return -1;
	va_start(ap, name);
	r = vsnprintf(out + k, len - (size_t)k, name, ap);
	va_end(ap);
	return (r < 0 || (size_t)r >= len - (size_t)k) ? -1 : 0;
}

int sieve_file_replace(const char *dir, const char *name, const void *hdr, size_t hlen,
                       const void *body, size_t blen, int no_fsync)
{
	char tmp[4096], fin[4096];
	int fd = -1, rc = -1, saved;

	if (sieve_path(tmp, sizeof tmp, dir, "%s.tmp", name) != 0 ||
	    sieve_path(fin, sizeof fin, dir, "%s", name) != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto out;
	if (fileio_write_all(fd, hdr, hlen) != 0 ||
	    (blen > 0 && fileio_write_all(fd, body, blen) != 0))
		goto out;
	if (!no_fsync && fdatasync(fd) != 0)
		goto out;
	rc = close(fd);
	fd = -1;
	if (rc != 0 || rename(tmp, fin) != 0 || (!no_fsync && fileio_fsync_dir(dir) != 0))
		rc = -1;
out:
	saved = errno;
	if (fd >= 0)
		close(fd);
	if (rc != 0)
		unlink(tmp);
	errno = saved;
	return rc;
}

int sieve_file_read_at(const char *path, void *buf, size_t len, uint64_t off)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return errno == ENOENT ? 1 : -2;
	if (fileio_pread_all(fd, buf, len, off) != 0)
		rc = errno == EIO ? -1 : -2; /* fileio reports a short file as EIO */
	close(fd);
	return rc;
}

int sieve_write_at(const struct sieve_config *cfg, int fd, const void *p, size_t n, uint64_t off)
{
	bool waited = false;

	while (fileio_pwrite_all(fd, p, n, off) != 0) {
		int err = errno;
		if ((err != ENOSPC && err != EDQUOT && err != EIO) || cfg == NULL ||
		    cfg->on_write_error == NULL)
			return -1;
		if (cfg->on_write_error(cfg->write_error_ctx, cfg->dir, err) == 0) {
			errno = err;
			return -1;
		}
		waited = true;
	}
	if (waited)
		cfg->on_write_error(cfg->write_error_ctx, cfg->dir, 0);
	return 0;
}

int sieve_datasync(const struct sieve_config *cfg, int fd)
{
	return cfg->no_fsync ? 0 : fdatasync(fd);
}

int sieve_checkpoint_file(const char *from_dir, const char *to_dir, const char *name, uint64_t len)
{
	char src[4096], dst[4096];

	if (sieve_path(src, sizeof src, from_dir, "%s", name) != 0 ||
	    sieve_path(dst, sizeof dst, to_dir, "%s", name) != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (len == SIEVE_WHOLE_FILE)
		return fileio_link_or_copy(src, dst);
	return fileio_copy_file(src, dst, len);
}

int sieve_dir_each(const char *dir, int (*fn)(void *arg, const char *path, const char *name),
                   void *arg)
{
	char p[4096];
	DIR *d = opendir(dir);
	const struct dirent *e;
	int rc = 0;

	if (d == NULL)
		return -1;
	for (e = readdir(d); e != NULL && rc == 0; e = readdir(d)) {
		const char *n = e->d_name;
		bool dots = n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
		if (dots)
			continue;
		if (sieve_path(p, sizeof p, dir, "%s", n) == 0)
			rc = fn(arg, p, n);
		else
			rc = -1, errno = ENAMETOOLONG;
	}
	closedir(d);
	return rc;
}

struct copy_to {
	const char *dst;
};

static int copy_entry(void *arg, const char *path, const char *name)
{
	const struct copy_to *c = arg;
	char d[4096];
	struct stat st;

	if (sieve_path(d, sizeof d, c->dst, "%s", name) != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (lstat(path, &st) != 0)
		return -1;
	if (S_ISDIR(st.st_mode))
		return sieve_copy_tree(path, d);
	return S_ISREG(st.st_mode) ? fileio_copy_file(path, d, FILEIO_WHOLE_FILE) : 0;
}

int sieve_copy_tree(const char *src, const char *dst)
{
	struct copy_to c = { dst };

	if (mkdir(dst, 0755) != 0 && errno != EEXIST)
		return -1;
	if (sieve_dir_each(src, copy_entry, &c) != 0)
		return -1;
	return fileio_fsync_dir(dst);
}

struct empty_ctx {
	const char *keep;
	int rc;
};

static int empty_entry(void *arg, const char *path, const char *name)
{
	struct empty_ctx *c = arg;
	struct stat st;

	if ((c->keep != NULL && strcmp(name, c->keep) == 0) || lstat(path, &st) != 0)
		return 0;
	if (S_ISDIR(st.st_mode) ? fileio_remove_tree(path) != 0
	                        : (unlink(path) != 0 && errno != ENOENT))
		c->rc = -1; /* go on with the others */
	return 0;
}

int sieve_empty_dir(const char *dir, const char *keep)
{
	struct empty_ctx c = { keep, 0 };

	if (sieve_dir_each(dir, empty_entry, &c) != 0)
		return errno == ENOENT ? 0 : -1;
	return c.rc;
}

static long crash_at = -1;
static long crash_n;

void sieve_crash_arm(void)
{
	const char *env = getenv("SIEVE_CRASH_POINT");
	char *end;
	long v;

	if (env == NULL)
		return;
	v = strtol(env, &end, 10);
	if (*end == '\0' && v > 0) {
		crash_at = v;
		crash_n = 0;
	}
}

void sieve_crash_point(void)
{
	if (crash_at > 0 && __atomic_add_fetch(&crash_n, 1, __ATOMIC_SEQ_CST) == crash_at)
		raise(SIGKILL);
}
