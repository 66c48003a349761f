/*
 * embed_urls.h: the URLs written inside two kinds of attribute and text
 * that name a page's embedded resources (its requisites): an HTML
 * `srcset` value and CSS (a stylesheet, a `<style>` element, a `style`
 * attribute).
 *
 * srcset: the HTML Standard's "parse a srcset attribute" (4.8.4.3.10):
 * candidates are split at commas that end a URL or follow its descriptors
 * (a comma inside parentheses in a descriptor does not split); a URL is a
 * run of non-space characters whose trailing commas are dropped. A
 * candidate whose descriptors are invalid (two width or density
 * descriptors, a width or height that is not a positive integer, a
 * density that is no non-negative number, an unknown descriptor, a height
 * without a width) is dropped, as a browser drops it.
 *
 * CSS: the `url()` tokens (quoted or not: `url(a.png)`, `url( "a.png" )`)
 * and the string after `@import` (`@import "a.css"`; `@import url(a.css)`
 * is a url() token), found by a scan that follows the CSS Syntax tokenizer
 * where it decides what is a URL: comments and strings are skipped (a
 * `url(` inside them is none), an identifier must be exactly `url` (any
 * case) and not the tail of a longer one, escapes (`\` + up to six hex
 * digits + one optional space, `\` + any other character) are decoded, a
 * newline escaped inside a string is dropped, and an unquoted URL holding
 * a quote, a `(` or a control character is a bad-url token (no URL).
 * Strings inside `image-set()` are not followed (browsers do; rare).
 *
 * Data structure: none kept; each call scans its input once (linear, no
 * allocation) and hands each URL to the callback as bytes (not
 * NUL-terminated, valid during the call). Decoded URLs longer than
 * EMBED_URL_MAX bytes are not handed over but counted in the return value.
 * Thread-safe (no state).
 */
#ifndef PARSE_EMBED_URLS_H
#define PARSE_EMBED_URLS_H

#include <stddef.h>

#define EMBED_URL_MAX 8192

/* Receives one URL (as written, escapes decoded; len may be 0). */
typedef void (*embed_url_fn)(void *ctx, const char *url, size_t len);

/* The image candidate URLs of a srcset value s[0, len), in order. Returns
 * how many candidates were dropped (invalid descriptors, too long). */
size_t embed_srcset_urls(const char *s, size_t len, embed_url_fn fn, void *ctx);

/* The url()s and @import strings of CSS text css[0, len), in order.
 * Returns how many were dropped (too long after decoding). */
size_t embed_css_urls(const char *css, size_t len, embed_url_fn fn, void *ctx);

#endif
