/*
 * slowstage.c: an LD_PRELOAD shim for the resume tests that slows one
 * stage of the crawler, as a slow disk or a costly page would:
 *   SLOWWARC_US: each WARC record the crawler compresses
 *     (libdeflate_gzip_compress, called by its WARC writer alone) first
 *     waits that many microseconds: the writer's queue fills;
 *   SLOWPARSE_US: each gzip body the parse threads decode (zlib's
 *     inflateInit2_ on any thread but the main one, where the fetch loop
 *     decodes a gzip robots.txt and a resume reads its WARC files) first
 *     waits that many: the parse threads' queue fills.
 * A kill then finds answers received and waiting in that stage, as many
 * as the crawl lets wait ([parse] queue).
 */

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void wait_us(const char *var)
{
	const char *us = getenv(var);
	long n = us ? strtol(us, NULL, 10) : 0;
	if (n > 0) {
		struct timespec ts = { n / 1000000, (n % 1000000) * 1000 };
		nanosleep(&ts, NULL);
	}
}

struct libdeflate_compressor;

size_t libdeflate_gzip_compress(struct libdeflate_compressor *c, const void *in, size_t in_len,
                                void *out, size_t out_cap)
{
	static size_t (*real)(struct libdeflate_compressor *, const void *, size_t, void *, size_t);
	if (real == NULL)
		real = (size_t(*)(struct libdeflate_compressor *, const void *, size_t, void *,
		                  size_t))dlsym(RTLD_NEXT, "libdeflate_gzip_compress");
	wait_us("SLOWWARC_US");
	return real(c, in, in_len, out, out_cap);
}

int inflateInit2_(void *strm, int window_bits, const char *version, int stream_size)
{
	static int (*real)(void *, int, const char *, int);
	if (real == NULL)
		real = (int (*)(void *, int, const char *, int))dlsym(RTLD_NEXT, "inflateInit2_");
	if (gettid() != getpid())
		wait_us("SLOWPARSE_US");
	return real(strm, window_bits, version, stream_size);
}
