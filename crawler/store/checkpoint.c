/* checkpoint.c: see checkpoint.h. */
#include "crawler/store/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/base/fileio.h"

#define CKPT_DIR "checkpoint"
#define NAME_FMT "ckpt-%08" PRIu64

static int ckpt_path(char *out, size_t cap, const char *base, uint64_t seq, const char *suffix)
{
	int n = snprintf(out, cap, "%s/" CKPT_DIR "/" NAME_FMT "%s", base, seq, suffix);
	if (n < 0 || (size_t)n >= cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int checkpoint_prepare(const char *out, uint64_t seq, char *path, size_t cap, char *err,
                       size_t errlen)
{
	char top[4200];
	snprintf(top, sizeof top, "%s/" CKPT_DIR, out);
	if (mkdir(top, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: %s", top, strerror(errno));
		return -1;
	}
	if (ckpt_path(path, cap, out, seq, ".tmp") != 0) {
		snprintf(err, errlen, "%s: path too long", out);
		return -1;
	}
	fileio_remove_tree(path);
	if (mkdir(path, 0755) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

void checkpoint_discard(const char *out, uint64_t seq)
{
	char p[4200];
	if (ckpt_path(p, sizeof p, out, seq, ".tmp") == 0)
		fileio_remove_tree(p);
}

/* Removes every entry of OUT/checkpoint but ckpt-SEQ and CURRENT. */
static void remove_others(const char *out, uint64_t seq)
{
	char top[4200], keep[64], p[4600];
	DIR *d;
	struct dirent *e;

	snprintf(top, sizeof top, "%s/" CKPT_DIR, out);
	snprintf(keep, sizeof keep, NAME_FMT, seq);
	d = opendir(top);
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, keep) == 0 || strcmp(e->d_name, "CURRENT") == 0)
			continue;
		if (snprintf(p, sizeof p, "%s/%s", top, e->d_name) >= (int)sizeof p)
			continue;
		fileio_remove_tree(p);
		unlink(p);
	}
	closedir(d);
}

int checkpoint_commit(const char *out, uint64_t seq, char *err, size_t errlen)
{
	char tmp[4200], fin[4200], top[4200], cur[4300], curtmp[4300], line[64];
	int fd, n;

	if (ckpt_path(tmp, sizeof tmp, out, seq, ".tmp") != 0 ||
	    ckpt_path(fin, sizeof fin, out, seq, "") != 0) {
		snprintf(err, errlen, "%s: path too long", out);
		return -1;
	}
	snprintf(top, sizeof top, "%s/" CKPT_DIR, out);
	snprintf(cur, sizeof cur, "%s/CURRENT", top);
	snprintf(curtmp, sizeof curtmp, "%s/CURRENT.tmp", top);
	if (fileio_fsync_tree(tmp) != 0) {
		snprintf(err, errlen, "fsync of %s: %s", tmp, strerror(errno));
		return -1;
	}
	fileio_remove_tree(fin);
	if (rename(tmp, fin) != 0 || fileio_fsync_dir(top) != 0) {
		snprintf(err, errlen, "%s: %s", fin, strerror(errno));
		return -1;
	}
	n = snprintf(line, sizeof line, NAME_FMT "\n", seq);
	fd = open(curtmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, line, (size_t)n) != n || fsync(fd) != 0) {
		snprintf(err, errlen, "%s: %s", curtmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(curtmp);
		return -1;
	}
	close(fd);
	if (rename(curtmp, cur) != 0 || fileio_fsync_dir(top) != 0) {
		snprintf(err, errlen, "%s: %s", cur, strerror(errno));
		return -1;
	}
	remove_others(out, seq);
	return 0;
}

int checkpoint_find(const char *out, char *path, size_t cap, uint64_t *seq, char *err,
                    size_t errlen)
{
	char cur[4200], line[64], name[64];
	struct stat st;
	FILE *f;
	uint64_t n;

	snprintf(cur, sizeof cur, "%s/" CKPT_DIR "/CURRENT", out);
	f = fopen(cur, "r");
	if (f == NULL) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "%s: %s", cur, strerror(errno));
		return -1;
	}
	if (fgets(line, sizeof line, f) == NULL || sscanf(line, "ckpt-%" SCNu64, &n) != 1) {
		fclose(f);
		snprintf(err, errlen, "%s: malformed", cur);
		return -1;
	}
	fclose(f);
	snprintf(name, sizeof name, NAME_FMT "\n", n);
	if (strcmp(name, line) != 0) {
		snprintf(err, errlen, "%s: malformed", cur);
		return -1;
	}
	if (ckpt_path(path, cap, out, n, "") != 0 || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s names %s, which is missing", cur, path);
		return -1;
	}
	*seq = n;
	return 0;
}

int checkpoint_repair_log(const char *path, uint64_t *cut)
{
	char buf[4096];
	int fd = open(path, O_RDWR | O_CLOEXEC);
	off_t end, pos;
	int rc = -1;

	*cut = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		goto out;
	/* Scan back for the last newline. */
	pos = end;
	while (pos > 0) {
		size_t n = pos > (off_t)sizeof buf ? sizeof buf : (size_t)pos;
		ssize_t k = pread(fd, buf, n, pos - (off_t)n);
		if (k != (ssize_t)n)
			goto out;
		char *nl = memrchr(buf, '\n', n);
		if (nl != NULL) {
			pos = pos - (off_t)n + (nl - buf) + 1;
			break;
		}
		pos -= (off_t)n;
	}
	if (pos < end) {
		if (ftruncate(fd, pos) != 0 || fsync(fd) != 0)
			goto out;
		*cut = (uint64_t)(end - pos);
	}
	rc = 0;
out : {
	int e = errno;
	close(fd);
	errno = e;
	return rc;
}
}
