/*
 * fuzz_url: arbitrary bytes as a URL reference, parsed alone and against a
 * few bases (http, https with IPv6 host, file, non-special). Invariants,
 * abort() when broken:
 *  - an http(s) href (within the length limit) reparses, without base, to
 *    the same href;
 *  - a crawl key (default options, and all canonicalizations on) reparses
 *    and yields the same crawl key (idempotence), and is <= max_len bytes;
 *  - accessor spans lie inside the href.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/url.h"

static struct url *u, *v, *bases[4], *ucanon, *vcanon;
static const char *const base_str[4] = { "http://example.com/a/b?c#d", "https://[::1]:8080/x/",
	                                 "file:///C:/dir/f", "sc://h/p/q" };

static void init(void)
{
	struct url_options o;
	url_options_init(&o);
	u = url_create(&o);
	v = url_create(&o);
	for (int i = 0; i < 4; i++) {
		bases[i] = url_create(&o);
		if (!bases[i] ||
		    url_parse(bases[i], base_str[i], strlen(base_str[i]), NULL) != URL_OK)
			abort();
	}
	o.flags = ~0u;
	ucanon = url_create(&o);
	vcanon = url_create(&o);
	if (!u || !v || !ucanon || !vcanon)
		abort();
}

static void check_key(struct url *a, struct url *b)
{
	static char k1[8192], k2[8192];
	size_t n1, n2;
	if (url_crawl_key(a, k1, sizeof k1, &n1) != URL_OK)
		return;
	if (n1 > URL_DEFAULT_MAX_LEN || strlen(k1) != n1)
		abort();
	if (url_parse(b, k1, n1, NULL) != URL_OK) {
		fprintf(stderr, "crawl key does not reparse: %s\n", k1);
		abort();
	}
	if (url_crawl_key(b, k2, sizeof k2, &n2) != URL_OK || n1 != n2 || memcmp(k1, k2, n1) != 0) {
		fprintf(stderr, "crawl key not idempotent: %s -> %s\n", k1, k2);
		abort();
	}
}

static void check(struct url *a, struct url *b)
{
	size_t hn, n;
	const char *h = url_href(a, &hn);
	const char *parts[] = { url_scheme(a, &n), url_host(a, &n), url_path(a, &n) };
	(void)parts;
	const char *p = url_request_target(a, &n);
	if (p < h || p + n > h + hn)
		abort();
	p = url_host(a, &n);
	if (p < h || p + n > h + hn)
		abort();
	/* an href longer than the input limit cannot be reparsed (TOO_LONG) */
	if (url_is_http(a) && hn <= URL_DEFAULT_MAX_LEN) {
		static char copy[16384];
		if (hn >= sizeof copy)
			abort();
		memcpy(copy, h, hn);
		if (url_parse(b, copy, hn, NULL) != URL_OK) {
			fprintf(stderr, "href does not reparse: %.*s\n", (int)hn, copy);
			abort();
		}
		size_t hn2;
		const char *h2 = url_href(b, &hn2);
		if (hn2 != hn || memcmp(copy, h2, hn) != 0) {
			fprintf(stderr, "href not idempotent: %.*s -> %s\n", (int)hn, copy, h2);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!u)
		init();
	for (int i = -1; i < 4; i++) {
		const struct url *base = i < 0 ? NULL : bases[i];
		if (url_parse(u, (const char *)data, size, base) == URL_OK) {
			check(u, v);
			check_key(u, v);
		}
		if (url_parse(ucanon, (const char *)data, size, base) == URL_OK)
			check_key(ucanon, vcanon);
	}
	return 0;
}
