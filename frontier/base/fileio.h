/*
 * fileio.h: the file-system helpers every module shares (the sieves, the
 * frontier's spill and checkpoint files, the crawl's checkpoints and outputs).
 *
 * Each call either does all of its work or fails with -1 and errno set from
 * the first failing system call; none prints. Short writes and EINTR are
 * retried; a read that meets the end of the file early fails with EIO, since
 * every caller reads back what it wrote itself and a short file is damage.
 *
 * Durability: a file is durable after fsync(file), a create, rename or link
 * inside a folder after fsync(folder); fileio_fsync_tree does both for a
 * whole tree, leaves first, so a reader that finds the top folder finds what
 * it holds.
 */
#ifndef FRONTIER_BASE_FILEIO_H
#define FRONTIER_BASE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Writes all n bytes at the file offset / at off. 0 or -1. */
int fileio_write_all(int fd, const void *p, size_t n);
int fileio_pwrite_all(int fd, const void *p, size_t n, uint64_t off);
/* Reads exactly n bytes at off: 0, or -1 (EIO when the file is shorter). */
int fileio_pread_all(int fd, void *p, size_t n, uint64_t off);

/* fsync of a file or a folder by path. */
int fileio_fsync_path(const char *path);
int fileio_fsync_dir(const char *dir);
/* fsyncs every regular file and folder under dir, dir last. */
int fileio_fsync_tree(const char *dir);

/* Replaces the file at path by the n bytes at p, durably and at once: a
 * reader finds the old or the new whole (written to path.tmp, fsynced,
 * renamed over path, the folder fsynced). 0 or -1. */
int fileio_replace(const char *path, const void *p, size_t n);

/* Copies the first len bytes of src into dst (created or truncated, mode
 * 0644) and fsyncs dst. FILEIO_WHOLE_FILE copies to the end; any other len
 * fails with EIO when src is shorter (it no longer holds the state to copy). */
#define FILEIO_WHOLE_FILE UINT64_MAX
int fileio_copy_file(const char *src, const char *dst, uint64_t len);
/* Hard-links src as dst; copies it (fileio_copy_file) where the file system
 * cannot link (another file system, no hard links, too many links). Only for
 * files never modified in place once written: a link shares later writes. */
int fileio_link_or_copy(const char *src, const char *dst);

/* Reads a stream to its end, or its first max bytes when it is longer (the
 * rest is left unread). Returns a buffer the caller frees, its length in
 * *len; NULL (errno) on a read error or when memory runs out. */
char *fileio_read_stream(FILE *f, size_t max, size_t *len);
/* fileio_read_stream of the file at path, or of stdin when path is "-". */
char *fileio_read_path(const char *path, size_t max, size_t *len);

/* Creates path and its missing parents (mode 0755). */
int fileio_mkdir_p(const char *path);
/* Removes dir and everything under it; a missing dir is not an error. */
int fileio_remove_tree(const char *dir);

#endif
