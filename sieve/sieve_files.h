/*
 * sieve_files.h: the file helpers the sieve implementations share (internal
 * to the module): the folder lock, atomic snapshots, writes that wait out a
 * full disk, the copies of checkpoints and restores, and the test hook that
 * kills the process at a crash point.
 *
 * A sieve folder is owned by one open sieve at a time: sieve_dir_lock creates
 * the folder if missing and takes an exclusive flock on its LOCK file.
 * Snapshots (the memory and bloom sieves' state files, offline's STATE) are
 * replaced atomically: written to NAME.tmp, fsynced, renamed over NAME,
 * folder fsynced, so a reader sees either the old or the new file, never a
 * torn one; each snapshot also carries its own checksum (checked by its
 * reader).
 */
#ifndef SIEVE_SIEVE_FILES_H
#define SIEVE_SIEVE_FILES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "frontier/base/byteorder.h"
#include "sieve/sieve.h"

/* Creates dir if needed and locks dir/LOCK. On success *lock_fd is the open
 * lock (close it to release). Returns SIEVE_OK, SIEVE_EIO or SIEVE_ELOCKED
 * with a message in err. */
int sieve_dir_lock(const char *dir, int *lock_fd, char *err, size_t errlen);

/* out = dir/name (name may be a printf format with its arguments). 0, or -1
 * when it does not fit len. */
int sieve_path(char *out, size_t len, const char *dir, const char *name, ...)
        __attribute__((format(printf, 4, 5)));

/* Writes hdr then body to dir/name atomically (see above); skips the fsyncs
 * when no_fsync. Returns 0, or -1 with errno set. */
int sieve_file_replace(const char *dir, const char *name, const void *hdr, size_t hlen,
                       const void *body, size_t blen, int no_fsync);

/* Reads exactly len bytes at offset off of path into buf. Returns 0, 1 if the
 * file is absent, -1 on a short file (corrupt), -2 on an I/O error. */
int sieve_file_read_at(const char *path, void *buf, size_t len, uint64_t off);

/* Writes all n bytes at off. When a write fails with ENOSPC, EDQUOT or EIO
 * and cfg->on_write_error (cfg may be NULL) asks for a retry, the whole
 * write is made again at the same offset (rewriting what went through:
 * nothing is torn or doubled); the callback hears err 0 once it went
 * through. 0 or -1 with errno set. */
int sieve_write_at(const struct sieve_config *cfg, int fd, const void *p, size_t n, uint64_t off);

/* fdatasync of fd, or nothing when cfg->no_fsync. 0 or -1. */
int sieve_datasync(const struct sieve_config *cfg, int fd);

/* Checkpoints: copies the file name of from_dir into to_dir. A file that is
 * never modified once written (replaced by rename, or written once) is
 * hard-linked (len SIEVE_WHOLE_FILE; copied across file systems); a file
 * that is appended to is copied up to len bytes (its state at the
 * checkpoint). 0, or -1 with errno set (a missing file is an error). */
#define SIEVE_WHOLE_FILE UINT64_MAX
int sieve_checkpoint_file(const char *from_dir, const char *to_dir, const char *name, uint64_t len);
/* Copies every regular file of src (recursively) into dst, created if
 * missing, fsyncing files and folders. 0 or -1 with errno set. */
int sieve_copy_tree(const char *src, const char *dst);
/* Removes everything in dir (recursively) but a top-level file named keep
 * (may be NULL). 0 or -1 with errno set. */
int sieve_empty_dir(const char *dir, const char *keep);
/* Calls fn(arg, path, name) for each entry of dir but . and .. (path is
 * dir/name); stops at the first nonzero return and returns it. -1 with
 * errno set when dir cannot be read or a path is too long. */
int sieve_dir_each(const char *dir, int (*fn)(void *arg, const char *path, const char *name),
                   void *arg);

/* Test hook: with SIEVE_CRASH_POINT=N in the environment when a sieve opens
 * (sieve_crash_arm), the Nth call of sieve_crash_point raises SIGKILL. */
void sieve_crash_arm(void);
void sieve_crash_point(void);

/* The fields v[0..n) of a header, little-endian, from p on. */
static inline void le_put64s(uint8_t *p, const uint64_t *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		le_put64(p + 8 * i, v[i]);
}

#endif
