/*
 * fuzz_links.c: extracts links from arbitrary bytes as an HTML page fetched
 * from a fixed URL, with the charset taken from the first input byte (none,
 * UTF-8, windows-1252, Shift_JIS, KOI8-R, an unknown label) and, by the
 * same byte's bit 4, with page requisites on (the embed table, srcset and
 * CSS; the bytes are then also extracted as a stylesheet), and checks the
 * results' invariants: every link is NUL-terminated with the length given
 * and starts with http:// or https://, and the caps hold.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse/links.h"

static struct links_extractor *ex[2]; /* requisites off, on */

static void check_links(struct links_extractor *e, int rc)
{
	if (rc != LINKS_OK && rc != LINKS_ENOMEM)
		abort();
	size_t n = 0;
	const struct link *l = links_result(e, &n);
	if (n > 500)
		abort();
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		if (strlen(l[i].url) != l[i].len)
			abort();
		if (strncmp(l[i].url, "http://", 7) != 0 && strncmp(l[i].url, "https://", 8) != 0)
			abort();
		if ((unsigned)l[i].kind >= LINK_KIND_COUNT)
			abort();
		bytes += l[i].len + 1;
	}
	if (bytes > 64 * 1024)
		abort();
	const struct links_page *p = links_page_info(e);
	if (!p || !p->base)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const charsets[] = { NULL,        "utf-8",  "iso-8859-1",
		                                "shift_jis", "koi8-r", "x-no-such-charset" };
	for (int k = 0; k < 2 && !ex[k]; k++) {
		struct links_config cfg = { .max_links = 500,
			                    .max_bytes = 64 * 1024,
			                    .requisites = k == 1 };
		if (links_extractor_create(&cfg, &ex[k]) != LINKS_OK)
			abort();
	}
	const char *charset = NULL;
	int requisites = 0;
	if (size > 0) {
		charset = charsets[(data[0] & 0x0f) % 6];
		requisites = (data[0] >> 4) & 1;
		data++;
		size--;
	}
	const char *url = "http://example.com/dir/page.html?q=1";
	struct links_extractor *e = ex[requisites];
	check_links(e, links_extract(e, url, charset, (const char *)data, size));
	if (requisites)
		check_links(e, links_extract_css(e, url, (const char *)data, size));
	return 0;
}
