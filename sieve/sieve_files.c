/*
 * sieve_files.c: folder lock and atomic file replacement for the sieves
 * (see sieve_files.h).
 */
#include "sieve/sieve_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sieve/sieve.h"

int sieve_dir_lock(const char *dir, int *lock_fd, char *err, size_t errlen)
{
    char p[4096];
    int fd;

    *lock_fd = -1;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
        return SIEVE_EIO;
    }
    if (snprintf(p, sizeof p, "%s/LOCK", dir) >= (int)sizeof p) {
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

int sieve_write_full(int fd, const void *p, size_t n)
{
    const uint8_t *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int sieve_dir_fsync(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc;
    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

int sieve_file_replace(const char *dir, const char *name, const void *hdr, size_t hlen, const void *body,
                       size_t blen, int no_fsync)
{
    char tmp[4096], fin[4096];
    int fd = -1, rc = -1, saved;

    if (snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name) >= (int)sizeof tmp ||
        snprintf(fin, sizeof fin, "%s/%s", dir, name) >= (int)sizeof fin) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto out;
    if (sieve_write_full(fd, hdr, hlen) != 0 || (blen > 0 && sieve_write_full(fd, body, blen) != 0))
        goto out;
    if (!no_fsync && fdatasync(fd) != 0)
        goto out;
    if (close(fd) != 0) {
        fd = -1;
        goto out;
    }
    fd = -1;
    if (rename(tmp, fin) != 0)
        goto out;
    if (!no_fsync && sieve_dir_fsync(dir) != 0)
        goto out;
    rc = 0;
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    int rc = 0;

    if (fd < 0)
        return errno == ENOENT ? 1 : -2;
    while (got < len) {
        ssize_t g = pread(fd, (uint8_t *)buf + got, len - got, (off_t)(off + got));
        if (g < 0) {
            if (errno == EINTR)
                continue;
            rc = -2;
            break;
        }
        if (g == 0) {
            rc = -1;
            break;
        }
        got += (size_t)g;
    }
    close(fd);
    return rc;
}

/* Copies up to len bytes of src into a new dst (fsynced). */
static int copy_file(const char *src, const char *dst, uint64_t len)
{
    uint8_t buf[64 * 1024];
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
            if (len != SIEVE_WHOLE_FILE) { /* shorter than the state it should hold */
                errno = EIO;
                goto out;
            }
            break;
        }
        if (sieve_write_full(out, buf, (size_t)k) != 0)
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

int sieve_checkpoint_file(const char *src, const char *dst, uint64_t len)
{
    if (len == SIEVE_WHOLE_FILE) {
        if (link(src, dst) == 0)
            return 0;
        if (errno != EXDEV && errno != EPERM && errno != EMLINK)
            return -1;
    }
    return copy_file(src, dst, len);
}

int sieve_copy_tree(const char *src, const char *dst)
{
    char s[4096], d[4096];
    DIR *dir;
    struct dirent *e;
    int rc = 0;

    if (mkdir(dst, 0755) != 0 && errno != EEXIST)
        return -1;
    dir = opendir(src);
    if (dir == NULL)
        return -1;
    while (rc == 0 && (e = readdir(dir)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (snprintf(s, sizeof s, "%s/%s", src, e->d_name) >= (int)sizeof s ||
            snprintf(d, sizeof d, "%s/%s", dst, e->d_name) >= (int)sizeof d) {
            errno = ENAMETOOLONG;
            rc = -1;
        } else if (lstat(s, &st) != 0) {
            rc = -1;
        } else if (S_ISDIR(st.st_mode)) {
            rc = sieve_copy_tree(s, d);
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(s, d, SIEVE_WHOLE_FILE);
        }
    }
    closedir(dir);
    if (rc == 0)
        rc = sieve_dir_fsync(dst);
    return rc;
}

int sieve_empty_dir(const char *dir, const char *keep)
{
    char p[4096];
    DIR *d = opendir(dir);
    struct dirent *e;
    int rc = 0;

    if (d == NULL)
        return errno == ENOENT ? 0 : -1;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            (keep != NULL && strcmp(e->d_name, keep) == 0))
            continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) {
            errno = ENAMETOOLONG;
            rc = -1;
            continue;
        }
        if (lstat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (sieve_empty_dir(p, NULL) != 0 || rmdir(p) != 0)
                rc = -1;
        } else if (unlink(p) != 0 && errno != ENOENT) {
            rc = -1;
        }
    }
    closedir(d);
    return rc;
}
