/*
 * fuzz_sitemap.c: parses arbitrary bytes as a sitemap with small limits
 * (100 locs, 64 KiB uncompressed, depth 8, URLs of 256 bytes), the first
 * input byte choosing the scope rule, whether the rest is gzip-compressed
 * first (so the fuzzer's XML also goes through the inflate path) and the
 * size of the pieces it is fed in; the parser is reused input after input.
 * Checks the invariants: every entry a NUL-terminated http(s) crawl key of
 * the length given and within the URL limit, of the document's kind; the
 * counts and the uncompressed size within their caps; a message exactly
 * when there is a problem.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "frontier/url.h"
#include "parse/sitemap.h"

#define FUZZ_MAX_LOCS 100
#define FUZZ_MAX_BYTES (64 * 1024)
#define FUZZ_MAX_URL 256

static struct sitemap_parser *parsers[3]; /* one per scope rule */
static size_t emitted;

static int check_entry(const struct sitemap_entry *e, void *arg)
{
	(void)arg;
	if (strlen(e->url) != e->len || e->len > FUZZ_MAX_URL)
		abort();
	if (strncmp(e->url, "http://", 7) != 0 && strncmp(e->url, "https://", 8) != 0)
		abort();
	if (e->kind != SITEMAP_KIND_URLSET && e->kind != SITEMAP_KIND_INDEX)
		abort();
	if (e->lastmod && strlen(e->lastmod) > SITEMAP_LASTMOD_MAX)
		abort();
	emitted++;
	return 0;
}

/* gzip of data, malloc'd (NULL when out of memory). */
static unsigned char *gzip_of(const uint8_t *data, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	if (deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	size_t cap = deflateBound(&z, len);
	unsigned char *out = malloc(cap);
	if (out) {
		z.next_in = (unsigned char *)data;
		z.avail_in = (uInt)len;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END)
			abort();
		*out_len = z.total_out;
	}
	deflateEnd(&z);
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!parsers[0]) {
		static struct url_options uo = { .max_len = FUZZ_MAX_URL };
		for (int i = 0; i < 3; i++) {
			struct sitemap_config cfg = { .max_locs = FUZZ_MAX_LOCS,
				                      .max_bytes = FUZZ_MAX_BYTES,
				                      .max_depth = 8,
				                      .scope = (enum sitemap_scope)i,
				                      .url_options = &uo };
			if (sitemap_parser_create(&cfg, &parsers[i]) != SITEMAP_OK)
				abort();
		}
	}
	unsigned mode = size > 0 ? data[0] : 0;
	if (size > 0) {
		data++;
		size--;
	}
	struct sitemap_parser *p = parsers[mode % 3];
	const uint8_t *body = data;
	size_t len = size;
	unsigned char *gz = NULL;
	if (mode & 0x04) {
		gz = gzip_of(data, size, &len);
		if (!gz)
			return 0;
		body = gz;
	}
	size_t piece = (mode >> 3) ? (size_t)(mode >> 3) : len; /* 1..31 bytes, or whole */
	emitted = 0;
	if (sitemap_begin(p, "http://example.com/dir/sitemap.xml", NULL, check_entry, NULL) !=
	    SITEMAP_OK)
		abort();
	for (size_t off = 0; off < len; off += piece) {
		size_t n = len - off < piece ? len - off : piece;
		int rc = sitemap_feed(p, (const char *)body + off, n);
		if (rc != SITEMAP_OK && rc != SITEMAP_ENOMEM)
			abort();
	}
	struct sitemap_result r;
	int rc = sitemap_finish(p, &r);
	if (rc != SITEMAP_OK && rc != SITEMAP_ENOMEM)
		abort();
	if (r.locs != emitted || r.locs > FUZZ_MAX_LOCS || r.bytes > FUZZ_MAX_BYTES)
		abort();
	if (r.dropped_over_limit > 0 &&
	    r.locs + r.too_long + r.invalid + r.out_of_scope != FUZZ_MAX_LOCS)
		abort();
	if ((r.problem == SITEMAP_FINE) != (r.message[0] == '\0'))
		abort();
	if ((mode & 0x04) && !r.gzip)
		abort();
	free(gz);
	return 0;
}
