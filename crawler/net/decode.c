/* decode.c: Content-Encoding decoding with an output cap (see decode.h). */
#include "crawler/net/decode.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <brotli/decode.h>
#include <zlib.h>

#define DECODE_DEFAULT_CAP (4u << 20)
#define DECODE_MAX_LAYERS 4

const char *decode_strerror(enum decode_error err)
{
	static const char *const text[] = { [DECODE_OK] = "ok",
		                            [DECODE_ERR_NOMEM] = "out of memory",
		                            [DECODE_ERR_UNSUPPORTED] =
		                                    "unsupported content-encoding",
		                            [DECODE_ERR_CORRUPT] = "corrupt compressed data",
		                            [DECODE_ERR_INVALID] = "invalid argument" };
	if ((size_t)err < sizeof text / sizeof text[0])
		return text[err];
	return "unknown error";
}

enum coding { COD_IDENTITY, COD_GZIP, COD_DEFLATE, COD_BR, COD_UNKNOWN };

static enum coding coding_of(const char *s, size_t n)
{
	if (n == 0 || (n == 8 && strncasecmp(s, "identity", 8) == 0))
		return COD_IDENTITY;
	if ((n == 4 && strncasecmp(s, "gzip", 4) == 0) ||
	    (n == 6 && strncasecmp(s, "x-gzip", 6) == 0))
		return COD_GZIP;
	if (n == 7 && strncasecmp(s, "deflate", 7) == 0)
		return COD_DEFLATE;
	if (n == 2 && strncasecmp(s, "br", 2) == 0)
		return COD_BR;
	return COD_UNKNOWN;
}

/* Growable output bounded by cap (+1 for the NUL). */
struct obuf {
	uint8_t *data;
	size_t len, alloc, cap;
};

static int obuf_room(struct obuf *o, size_t want)
{
	if (o->alloc - o->len >= want)
		return 0;
	size_t na = o->alloc ? o->alloc : 16384;
	while (na - o->len < want)
		na *= 2;
	if (na > o->cap + 1)
		na = o->cap + 1;
	uint8_t *p = realloc(o->data, na);
	if (p == NULL)
		return -1;
	o->data = p;
	o->alloc = na;
	return 0;
}

/* Room for the next chunk of output: 1 with *want bytes free at
 * o->data + o->len; 0 when the output cap is reached (*truncated) or out
 * of memory (*rc = DECODE_ERR_NOMEM). */
static int obuf_next(struct obuf *o, bool *truncated, size_t *want, enum decode_error *rc)
{
	if (o->len >= o->cap) {
		*truncated = true;
		return 0;
	}
	*want = o->cap - o->len;
	if (*want > 65536)
		*want = 65536;
	if (obuf_room(o, *want) != 0) {
		*rc = DECODE_ERR_NOMEM;
		return 0;
	}
	return 1;
}

/* zlib: windowBits 15+32 autodetects gzip/zlib; raw deflate when raw. */
static enum decode_error inflate_one(const uint8_t *in, size_t len, int raw, struct obuf *o,
                                     bool *truncated)
{
	z_stream zs;
	enum decode_error rc = DECODE_OK;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, raw ? -15 : 15 + 32) != Z_OK)
		return DECODE_ERR_NOMEM;
	const uint8_t *p = in;
	size_t left = len;
	for (;;) {
		size_t want;
		if (!obuf_next(o, truncated, &want, &rc))
			break;
		uInt chunk_in = left > (1u << 30) ? (1u << 30) : (uInt)left;
		zs.next_in = (Bytef *)(uintptr_t)p;
		zs.avail_in = chunk_in;
		zs.next_out = o->data + o->len;
		zs.avail_out = (uInt)want;
		int z = inflate(&zs, Z_NO_FLUSH);
		size_t used = chunk_in - zs.avail_in;
		p += used;
		left -= used;
		o->len += want - zs.avail_out;
		if (z == Z_STREAM_END) {
			/* A second gzip member may follow (concatenated gzip). */
			if (!raw && left > 0 && p[0] == 0x1f) {
				if (inflateReset(&zs) != Z_OK) {
					rc = DECODE_ERR_CORRUPT;
					break;
				}
				continue;
			}
			break;
		}
		if (z == Z_BUF_ERROR && left == 0) {
			/* Input ended before the stream did: a cut body. */
			*truncated = true;
			break;
		}
		if (z != Z_OK && z != Z_BUF_ERROR) {
			rc = DECODE_ERR_CORRUPT;
			break;
		}
		if (left == 0 && zs.avail_out != 0) {
			*truncated = true;
			break;
		}
	}
	inflateEnd(&zs);
	return rc;
}

static enum decode_error do_inflate(const uint8_t *in, size_t len, struct obuf *o, bool *truncated,
                                    int deflate)
{
	enum decode_error rc = inflate_one(in, len, 0, o, truncated);
	if (rc == DECODE_ERR_CORRUPT && deflate && o->len == 0) {
		/* "deflate" is often sent raw, without the zlib wrapper. */
		*truncated = false;
		rc = inflate_one(in, len, 1, o, truncated);
	}
	return rc;
}

static enum decode_error do_brotli(const uint8_t *in, size_t len, struct obuf *o, bool *truncated)
{
	enum decode_error rc = DECODE_OK;
	BrotliDecoderState *st = BrotliDecoderCreateInstance(NULL, NULL, NULL);
	if (st == NULL)
		return DECODE_ERR_NOMEM;
	size_t avail_in = len;
	const uint8_t *next_in = in;
	for (;;) {
		size_t want;
		if (!obuf_next(o, truncated, &want, &rc))
			break;
		size_t avail_out = want;
		uint8_t *next_out = o->data + o->len;
		BrotliDecoderResult r = BrotliDecoderDecompressStream(st, &avail_in, &next_in,
		                                                      &avail_out, &next_out, NULL);
		o->len += want - avail_out;
		if (r == BROTLI_DECODER_RESULT_SUCCESS)
			break;
		if (r == BROTLI_DECODER_RESULT_ERROR) {
			rc = DECODE_ERR_CORRUPT;
			break;
		}
		if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
			*truncated = true;
			break;
		}
	}
	BrotliDecoderDestroyInstance(st);
	return rc;
}

enum decode_error decode_body(const char *encoding, const void *in, size_t len, size_t cap,
                              struct decode_output *out)
{
	enum decode_error rc = DECODE_OK;
	enum coding layers[DECODE_MAX_LAYERS];
	size_t nlayers = 0;
	uint8_t *cur = NULL; /* owned intermediate */
	size_t cur_len = 0;
	bool truncated = false;

	if (out == NULL || (in == NULL && len > 0))
		return DECODE_ERR_INVALID;
	memset(out, 0, sizeof(*out));
	if (cap == 0)
		cap = DECODE_DEFAULT_CAP;
	const char *s = encoding ? encoding : "";
	while (*s) {
		while (*s == ',' || isspace((unsigned char)*s))
			s++;
		const char *start = s;
		while (*s && *s != ',' && !isspace((unsigned char)*s))
			s++;
		if (s == start)
			continue;
		enum coding c = coding_of(start, (size_t)(s - start));
		if (c == COD_UNKNOWN)
			return DECODE_ERR_UNSUPPORTED;
		if (c == COD_IDENTITY)
			continue;
		if (nlayers == DECODE_MAX_LAYERS)
			return DECODE_ERR_UNSUPPORTED;
		layers[nlayers++] = c;
	}
	const uint8_t *src = in;
	size_t src_len = len;
	/* Codings were applied left to right: undo them right to left. */
	for (size_t i = nlayers; i-- > 0;) {
		struct obuf o = { .cap = cap };
		bool t = false;
		if (layers[i] == COD_BR)
			rc = do_brotli(src, src_len, &o, &t);
		else
			rc = do_inflate(src, src_len, &o, &t, layers[i] == COD_DEFLATE);
		free(cur);
		cur = NULL;
		if (rc != DECODE_OK) {
			free(o.data);
			goto out;
		}
		truncated = truncated || t;
		cur = o.data;
		cur_len = o.len;
		src = cur;
		src_len = cur_len;
	}
	if (cur == NULL) {
		size_t n = len > cap ? cap : len;
		truncated = len > cap;
		cur = malloc(n + 1);
		if (cur == NULL) {
			rc = DECODE_ERR_NOMEM;
			goto out;
		}
		if (n > 0)
			memcpy(cur, in, n);
		cur_len = n;
	} else {
		/* Shrink to fit, with room for the NUL. */
		uint8_t *p = realloc(cur, cur_len + 1);
		if (p == NULL) {
			rc = DECODE_ERR_NOMEM;
			goto out;
		}
		cur = p;
	}
	cur[cur_len] = '\0';
	out->data = cur;
	out->len = cur_len;
	out->truncated = truncated;
	cur = NULL;
out:
	free(cur);
	return rc;
}
