/*
 * fuzz_robots.c: parses arbitrary bytes as robots.txt for a fixed agent and
 * checks a few paths, plus a path taken from the input itself (its last
 * line), so the matcher sees hostile patterns against hostile paths. Also
 * feeds the input to the URL-to-path and normalization helpers. The
 * wildcard cap is taken from the first byte (0 to 3).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "politeness/robots.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {
		"/", "/a", "/robots.txt", "/x/y.html?q=1", "/%E3%83%84", "/\xE3\x83\x84/*$", ""
	};
	const char *body = (const char *)data;
	struct robots *r = NULL;
	if (robots_parse(body, size, "FooBot/1.0 (+http://x)", &r) == ROBOTS_OK) {
		/* small wildcard caps too, so that refusals are reached */
		robots_wildcard_cap_set(r, size > 0 ? data[0] % 4 : 0);
		for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
			(void)robots_allowed(r, paths[i], strlen(paths[i]));
		/* The input's last line as a path, capped to keep runs fast. */
		size_t start = size;
		while (start > 0 && data[start - 1] != '\n')
			start--;
		size_t n = size - start;
		if (n > 4096)
			n = 4096;
		(void)robots_allowed(r, body + start, n);
		(void)robots_crawl_delay(r);
		for (size_t i = 0; i < robots_sitemap_count(r); i++)
			(void)strlen(robots_sitemap(r, i));
		robots_destroy(r);
	}
	size_t cap = 3 * (size < 4096 ? size : 4096) + 2;
	char *out = malloc(cap);
	if (out) {
		size_t n = size < 4096 ? size : 4096;
		(void)robots_path_from_url(body, n, out, cap);
		(void)robots_path_normalize(body, n, out, cap, NULL);
		free(out);
	}
	return 0;
}
