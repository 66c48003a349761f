/*
 * recfile.h: checksummed files of little-endian integers and length-prefixed
 * byte strings: the format of every checkpoint file (the frontier's queues,
 * the crawl's state).
 *
 * Layout: an 8-byte magic naming the format, the fields in the order they
 * were put, then a 16-byte trailer {u64 payload length, u64 XXH3-64 of the
 * magic and the payload}. A byte string is a u32 length then the bytes.
 *
 * Invariant: a reader hands out no field before it has verified the whole
 * file against its trailer, so a torn, truncated or corrupt file is refused
 * whole (RECFILE_ERR_CORRUPT), never half-used. The file carries no field
 * names: the writer and the reader of one magic agree on the order.
 *
 * Memory: one 64 KiB buffer per open writer or reader, whatever the file's
 * size; a reader streams the file twice (verify, then read).
 * Errors are sticky: after the first failure every put is a no-op and
 * recfile_writer_close reports it; every get after a failure fails too.
 */
#ifndef FRONTIER_BASE_RECFILE_H
#define FRONTIER_BASE_RECFILE_H

#include <stddef.h>
#include <stdint.h>

enum recfile_err {
	RECFILE_OK = 0,
	RECFILE_ERR_IO = 1,      /* open/read/write/fsync failed: errno is kept */
	RECFILE_ERR_CORRUPT = 2, /* wrong magic, bad trailer, a field past the end or too long */
	RECFILE_ERR_NOMEM = 3,
};

struct recfile_writer;
struct recfile_reader;

/* Creates (truncates) path and writes the magic. */
enum recfile_err recfile_writer_create(const char *path, const char magic[8],
                                       struct recfile_writer **out);
void recfile_put_u8(struct recfile_writer *w, uint8_t v);
void recfile_put_u32(struct recfile_writer *w, uint32_t v);
void recfile_put_u64(struct recfile_writer *w, uint64_t v);
/* A u32 length then the bytes (p may be NULL when len is 0). */
void recfile_put_bytes(struct recfile_writer *w, const void *p, uint32_t len);
/* Writes the trailer, fsyncs when do_fsync, closes and frees. Returns the
 * first error met since create (errno set for RECFILE_ERR_IO). NULL: OK. */
enum recfile_err recfile_writer_close(struct recfile_writer *w, int do_fsync);
/* Closes and frees without a trailer and removes the file (an abandoned write). */
void recfile_writer_abort(struct recfile_writer *w);

/* Opens path, checks its magic and trailer. RECFILE_ERR_IO with errno
 * ENOENT when the file does not exist. */
enum recfile_err recfile_reader_open(const char *path, const char magic[8],
                                     struct recfile_reader **out);
enum recfile_err recfile_get_u8(struct recfile_reader *r, uint8_t *v);
enum recfile_err recfile_get_u32(struct recfile_reader *r, uint32_t *v);
enum recfile_err recfile_get_u64(struct recfile_reader *r, uint64_t *v);
/* Reads a byte string into buf (cap bytes; a NUL is added when room is
 * left); *len gets its length. RECFILE_ERR_CORRUPT if it is longer than cap. */
enum recfile_err recfile_get_bytes(struct recfile_reader *r, void *buf, uint32_t cap,
                                   uint32_t *len);
/* Reads a byte string of at most max bytes into a new buffer (*out, the
 * caller frees it; NUL-terminated; NULL when the string is empty). */
enum recfile_err recfile_get_bytes_alloc(struct recfile_reader *r, uint32_t max, char **out,
                                         uint32_t *len);
/* 1 when every field has been read. */
int recfile_reader_at_end(const struct recfile_reader *r);
void recfile_reader_close(struct recfile_reader *r);

const char *recfile_strerror(enum recfile_err e);

#endif
