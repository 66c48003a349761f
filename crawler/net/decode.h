/*
 * decode.h: Content-Encoding decoding of a response body for parsing.
 *
 * The fetch engine keeps bodies as received (the WARC stores those bytes);
 * parse threads call decode_body to get the bytes to parse. Supports gzip /
 * x-gzip and deflate (zlib-wrapped or raw, detected: zlib inflate with
 * windowBits 15+32, raw deflate as a fallback), br (libbrotlidec), identity,
 * and comma-separated stacks of them (decoded right to left, at most 4).
 *
 * Invariant: the output never exceeds cap bytes; a body that inflates past
 * the cap (a gzip bomb) stops there and is marked truncated, using O(cap)
 * memory whatever the compression ratio. Stateless and thread-safe.
 */
#ifndef CRAWLER_NET_DECODE_H
#define CRAWLER_NET_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum decode_error {
	DECODE_OK = 0,              /* decoded (maybe truncated, see flag) */
	DECODE_ERR_NOMEM = 1,       /* allocation failed */
	DECODE_ERR_UNSUPPORTED = 2, /* unknown coding (e.g. "compress", "zstd") */
	DECODE_ERR_CORRUPT = 3,     /* malformed compressed data */
	DECODE_ERR_INVALID = 4,     /* bad argument */
};

const char *decode_strerror(enum decode_error err);

struct decode_output {
	uint8_t *data; /* malloc'd, NUL-terminated (not counted in len); caller frees */
	size_t len;
	bool truncated; /* output reached cap, or the compressed stream ended
	                    early (input was cut) */
};

/*
 * Decodes in[0..len) per encoding (the Content-Encoding value; NULL, "" or
 * "identity" copy the input). cap bounds the output (0 = 4 MiB). On success
 * out->data is a new buffer the caller frees with free(); on error out is
 * zeroed. in is borrowed.
 */
enum decode_error decode_body(const char *encoding, const void *in, size_t len, size_t cap,
                              struct decode_output *out);

#endif
