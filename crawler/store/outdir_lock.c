/* outdir_lock.c: see outdir_lock.h. */
#include "crawler/store/outdir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct outdir_lock {
	int fd;
	char *path;
};

static int lock_whole_file(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
	return fcntl(fd, F_OFD_SETLK, &fl);
}

static pid_t read_pid(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	long v = strtol(buf, &end, 10);
	return v > 0 && (*end == '\n' || *end == '\0') ? (pid_t)v : 0;
}

/* The lock must be on the file the path names now: a releasing owner
 * unlinks the file before closing it, and a newcomer that opened the old
 * file in between would otherwise lock an orphan. */
static int still_linked(int fd, const char *path)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

void outdir_lock_release(struct outdir_lock *lock)
{
	if (lock == NULL)
		return;
	/* Unlink while still locked, so nobody can take the old file over. */
	unlink(lock->path);
	close(lock->fd);
	free(lock->path);
	free(lock);
}

enum outdir_lock_result outdir_lock_acquire(const char *dir, struct outdir_lock **out, pid_t *owner,
                                            char *err, size_t errlen)
{
	enum outdir_lock_result res = OUTDIR_LOCK_ERR_IO;
	struct outdir_lock *lock = NULL;
	char *path = NULL;
	int fd = -1;

	*out = NULL;
	*owner = 0;
	size_t plen = strlen(dir) + sizeof "/crawl.lock";
	path = malloc(plen);
	if (path == NULL) {
		res = OUTDIR_LOCK_ERR_NOMEM;
		goto done;
	}
	snprintf(path, plen, "%s/crawl.lock", dir);

	for (int attempt = 0; attempt < 8; attempt++) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0) {
			if (err)
				snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto done;
		}
		if (lock_whole_file(fd) != 0) {
			if (errno == EAGAIN || errno == EACCES) {
				*owner = read_pid(fd);
				if (err)
					snprintf(err, errlen,
					         "%s: the folder is in use by process %ld", path,
					         (long)*owner);
				res = OUTDIR_LOCK_BUSY;
			} else if (err) {
				snprintf(err, errlen, "%s: cannot lock: %s", path, strerror(errno));
			}
			goto done;
		}
		if (still_linked(fd, path))
			break;
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		if (err)
			snprintf(err, errlen, "%s: the lock file keeps being replaced", path);
		goto done;
	}

	/* Locked: a PID left in the file belongs to an owner that died holding
	 * the folder (a clean release removes the file). */
	*owner = read_pid(fd);
	char pidtext[32];
	int n = snprintf(pidtext, sizeof pidtext, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pidtext, (size_t)n, 0) != n) {
		if (err)
			snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
		goto done;
	}
	lock = malloc(sizeof *lock);
	if (lock == NULL) {
		res = OUTDIR_LOCK_ERR_NOMEM;
		goto done;
	}
	lock->fd = fd;
	lock->path = path;
	fd = -1;
	path = NULL;
	*out = lock;
	res = *owner != 0 ? OUTDIR_LOCK_STALE : OUTDIR_LOCK_OK;
	if (res == OUTDIR_LOCK_STALE && err)
		snprintf(err, errlen, "%s: taking over the lock of process %ld, which is gone",
		         lock->path, (long)*owner);
done:
	if (res == OUTDIR_LOCK_ERR_NOMEM && err)
		snprintf(err, errlen, "out of memory locking %s", dir);
	if (fd >= 0)
		close(fd);
	free(path);
	return res;
}
