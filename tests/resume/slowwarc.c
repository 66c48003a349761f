/*
 * slowwarc.c: an LD_PRELOAD shim for the resume tests: each WARC record the
 * crawler compresses (libdeflate_gzip_compress, called by its WARC writer
 * alone) first waits $SLOWWARC_US microseconds, as on a slow disk. The
 * writer's queue then fills, so that a kill finds answers received and not
 * yet stored, as many as the crawl lets wait ([parse] queue).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

struct libdeflate_compressor;

size_t libdeflate_gzip_compress(struct libdeflate_compressor *c, const void *in, size_t in_len,
                                void *out, size_t out_cap)
{
	static size_t (*real)(struct libdeflate_compressor *, const void *, size_t, void *, size_t);
	if (real == NULL)
		real = (size_t(*)(struct libdeflate_compressor *, const void *, size_t, void *,
		                  size_t))dlsym(RTLD_NEXT, "libdeflate_gzip_compress");
	const char *us = getenv("SLOWWARC_US");
	long n = us ? atol(us) : 0;
	if (n > 0) {
		struct timespec ts = { n / 1000000, (n % 1000000) * 1000 };
		nanosleep(&ts, NULL);
	}
	return real(c, in, in_len, out, out_cap);
}
