/*
 * sieve_files.h: file helpers shared by the sieve implementations (internal
 * to the module): the folder lock and atomic snapshots of the memory, bloom,
 * lsm and offline sieves, and the copies every sieve's checkpoint makes.
 *
 * A sieve folder is owned by one open sieve at a time: sieve_dir_lock creates
 * the folder if missing and takes an exclusive flock on its LOCK file.
 * Snapshots (the memory and bloom sieves' state files) are replaced
 * atomically: written to NAME.tmp, fsynced, renamed over NAME, folder fsynced,
 * so a reader sees either the old or the new file, never a torn one; each
 * snapshot also carries its own checksum (checked by its reader).
 */
#ifndef CRAWLER_SIEVE_FILES_H
#define CRAWLER_SIEVE_FILES_H

#include <stddef.h>
#include <stdint.h>

/* Creates dir if needed and locks dir/LOCK. On success *lock_fd is the open
 * lock (close it to release). Returns SIEVE_OK, SIEVE_EIO or SIEVE_ELOCKED
 * with a message in err. */
int sieve_dir_lock(const char *dir, int *lock_fd, char *err, size_t errlen);

/* Writes hdr then body to dir/name atomically (see above); skips the fsyncs
 * when no_fsync. Returns 0, or -1 with errno set. */
int sieve_file_replace(const char *dir, const char *name, const void *hdr, size_t hlen, const void *body,
                       size_t blen, int no_fsync);

/* Reads exactly len bytes at offset off of path into buf. Returns 0, 1 if the
 * file is absent, -1 on a short file (corrupt), -2 on an I/O error. */
int sieve_file_read_at(const char *path, void *buf, size_t len, uint64_t off);

/* write() of all n bytes, retrying on EINTR; 0 or -1 with errno set. */
int sieve_write_full(int fd, const void *p, size_t n);

/* fsyncs the folder (a rename or create inside it becomes durable). */
int sieve_dir_fsync(const char *dir);

/* Checkpoints. A file that is never modified once written (replaced by
 * rename, or written once) is hard-linked: sieve_checkpoint_file(src, dst,
 * SIEVE_WHOLE_FILE); across file systems it is copied. A file that is
 * appended to is copied up to len bytes (its state at the checkpoint).
 * Returns 0, or -1 with errno set (a missing src is an error). */
#define SIEVE_WHOLE_FILE UINT64_MAX
int sieve_checkpoint_file(const char *src, const char *dst, uint64_t len);
/* Copies every regular file of src (recursively) into dst, created if
 * missing, fsyncing files and folders. 0 or -1 with errno set. */
int sieve_copy_tree(const char *src, const char *dst);
/* Removes everything in dir (recursively) but a top-level file named keep
 * (may be NULL). 0 or -1 with errno set. */
int sieve_empty_dir(const char *dir, const char *keep);

static inline void sieve_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t sieve_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

static inline void sieve_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint32_t sieve_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
