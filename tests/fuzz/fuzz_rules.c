/*
 * fuzz_rules.c: arbitrary bytes as a URL rules file (frontier/url_rules.h),
 * one rule a line, bad lines skipped; the list is sealed twice, with the
 * regex prefilter and without, and both decide a few keys and the input's
 * last line as a key: any difference aborts (a literal the prefilter read
 * off a regex that a match need not contain).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/url_rules.h"

static void add_all(struct url_rules *r, const char *text, size_t size)
{
	char err[512];
	uint32_t line = 0;
	for (size_t at = 0; at < size;) {
		const char *nl = memchr(text + at, '\n', size - at);
		size_t end = nl ? (size_t)(nl - text) : size;
		(void)url_rules_add_line(r, text + at, end - at, "fuzz", ++line, err, sizeof err);
		at = end + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = {
		"http://a.example.org/docs/x.pdf?sid=1",
		"https://www.b.test:8080/a/b/c.html",
		"http://127.0.0.1/",
		"http://user:pw@h.test/~x/%7Ey?q=a&b=c",
		"http://x/",
	};
	const char *text = (const char *)data;
	char err[512];
	if (size > 1 << 16)
		return 0;
	struct url_rules *with = url_rules_create(NULL), *without = url_rules_create(NULL);
	if (!with || !without)
		goto out;
	add_all(with, text, size);
	add_all(without, text, size);
	url_rules_set_prefilter(without, false);
	if (url_rules_seal(with, err, sizeof err) != URL_RULES_OK ||
	    url_rules_seal(without, err, sizeof err) != URL_RULES_OK)
		goto out;
	size_t start = size;
	while (start > 0 && data[start - 1] != '\n')
		start--;
	for (size_t i = 0; i <= sizeof keys / sizeof keys[0]; i++) {
		const char *k = i < sizeof keys / sizeof keys[0] ? keys[i] : text + start;
		size_t n = i < sizeof keys / sizeof keys[0] ? strlen(k) : size - start;
		struct url_rules_decision a, b;
		url_rules_decide(with, k, n, 3, &a);
		url_rules_decide(without, k, n, 3, &b);
		if ((a.action != b.action || a.rule != b.rule) && !a.regex_failed &&
		    !b.regex_failed)
			abort();
	}
out:
	url_rules_destroy(with);
	url_rules_destroy(without);
	return 0;
}
