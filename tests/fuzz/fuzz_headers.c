/*
 * fuzz_headers.c: arbitrary bytes as a response header block, read the way
 * the crawler reads one (fetch_headers_read: Content-Type, Location,
 * Content-Encoding, Retry-After), then handed to what consumes each field:
 * the decoder (Content-Encoding), URL resolution (Location), the
 * politeness clock (Retry-After). Beyond "no crash", it aborts when
 *  - a field is read though no line names it, or missed though one does;
 *  - a value keeps a line break, or spaces or tabs at its start;
 *  - Content-Encoding does not start with its first line's value;
 *  - Retry-After is below -1, differs from a saturating decimal parse of
 *    an all-digit value, or moves the politeness clock backwards;
 *  - the decoder returns an unknown code.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/net/decode.h"
#include "crawler/net/fetch.h"
#include "frontier/url.h"
#include "politeness/delay_policy.h"

#define NOW 1700000000 /* a fixed "now" for HTTP dates */

/* Lines of block[0..n) whose field name is name (case-insensitive); the
 * value of the first in first[], trimmed as the crawler trims. */
static size_t lines_named(const uint8_t *b, size_t n, const char *name, const uint8_t **v,
                          size_t *vl)
{
	size_t nl = strlen(name), count = 0;
	for (size_t at = 0; at < n;) {
		const uint8_t *e = memchr(b + at, '\n', n - at);
		size_t end = e ? (size_t)(e - b) : n;
		if (end - at > nl && b[at + nl] == ':' &&
		    strncasecmp((const char *)b + at, name, nl) == 0) {
			if (count++ == 0) {
				size_t s = at + nl + 1, t = end;
				while (s < t && (b[s] == ' ' || b[s] == '\t'))
					s++;
				while (t > s &&
				       (b[t - 1] == '\r' || b[t - 1] == ' ' || b[t - 1] == '\t'))
					t--;
				*v = b + s;
				*vl = t - s;
			}
		}
		at = end + 1;
	}
	return count;
}

/* The first line's value of a single-valued field, as the reference says. */
static void check_first(const char *got, const uint8_t *b, size_t n, const char *name)
{
	const uint8_t *v = NULL;
	size_t vl = 0;
	size_t count = lines_named(b, n, name, &v, &vl);
	if ((count == 0) != (got == NULL))
		abort();
	if (got != NULL && memcmp(got, v, vl) != 0)
		abort();
}

static void check_value(const char *s)
{
	if (s == NULL)
		return;
	if (strchr(s, '\n') != NULL || s[0] == ' ' || s[0] == '\t')
		abort();
}

static void check_retry_after(const struct fetch_result *r, const uint8_t *b, size_t n)
{
	const uint8_t *v = NULL;
	size_t vl = 0;
	size_t count = lines_named(b, n, "Retry-After", &v, &vl);
	if (r->retry_after_s < -1 || (count == 0 && r->retry_after_s != -1))
		abort();
	int digits = count > 0 && vl > 0 && memchr(v, '\0', vl) == NULL;
	for (size_t i = 0; digits && i < vl; i++)
		digits = v[i] >= '0' && v[i] <= '9';
	if (digits) {
		long want = 0;
		for (size_t i = 0; i < vl; i++)
			want = want > (LONG_MAX - (v[i] - '0')) / 10 ? LONG_MAX
			                                             : want * 10 + (v[i] - '0');
		if (r->retry_after_s != want)
			abort();
	}
	if (r->retry_after_s >= 0) {
		uint64_t now_us = (uint64_t)NOW * 1000000u;
		if (delay_policy_after_seconds(now_us, (uint64_t)r->retry_after_s) < now_us)
			abort();
	}
}

static void consume(const struct fetch_result *r)
{
	struct decode_output out;
	switch (decode_body(r->content_encoding, "<html></html>", 13, 4096, &out)) {
	case DECODE_OK: free(out.data); break;
	case DECODE_ERR_NOMEM:
	case DECODE_ERR_UNSUPPORTED:
	case DECODE_ERR_CORRUPT:
	case DECODE_ERR_INVALID: break;
	default: abort();
	}
	if (r->location != NULL) {
		struct url *base = url_create(NULL), *u = url_create(NULL);
		if (base != NULL && u != NULL &&
		    url_parse(base, "http://h.test/a/b?q", 19, NULL) == URL_OK)
			(void)url_parse(u, r->location, strlen(r->location), base);
		url_destroy(u);
		url_destroy(base);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fetch_result *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return 0;
	r->response_headers.data = malloc(size ? size : 1);
	if (r->response_headers.data == NULL) {
		free(r);
		return 0;
	}
	memcpy(r->response_headers.data, data, size);
	r->response_headers.len = size;
	fetch_headers_read(r, NOW);
	check_first(r->content_type, data, size, "Content-Type");
	check_first(r->location, data, size, "Location");
	check_value(r->content_type);
	check_value(r->location);
	check_value(r->content_encoding);
	const uint8_t *v;
	size_t vl;
	size_t lines = lines_named(data, size, "Content-Encoding", &v, &vl);
	if ((lines == 0) != (r->content_encoding == NULL))
		abort();
	if (r->content_encoding != NULL && memcmp(r->content_encoding, v, vl) != 0)
		abort();
	check_retry_after(r, data, size);
	consume(r);
	fetch_result_free(r);
	return 0;
}
