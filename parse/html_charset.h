/*
 * html_charset.h: a page's bytes to UTF-8 for the link extractor's
 * tokenizer, the encoding chosen as the HTML Standard's "encoding sniffing
 * algorithm" does, reduced to what a crawler has: a BOM (UTF-8, UTF-16LE,
 * UTF-16BE) wins; then the Content-Type charset the caller passes; then a
 * prescan of the first 1024 bytes for `<meta charset=...>` or
 * `<meta ... content="...; charset=...">` (a declared UTF-16 means UTF-8,
 * as the Standard says); then UTF-8 when the bytes are valid UTF-8, else
 * windows-1252 (the Standard's default for most locales). Labels are
 * mapped as the Encoding Standard does where glibc's names differ (the
 * Latin-1 and ASCII labels are windows-1252, Shift_JIS is CP932, GB2312
 * is GBK); a label neither knows is ignored and the next step decides.
 *
 * Data structure. A `struct html_decoder` caches one iconv descriptor (the
 * last encoding used: a crawl meets a few encodings, mostly the same one
 * again) and one output buffer that grows to the largest page seen (3
 * bytes out per byte in at most; pages are capped by the fetcher). A page
 * already in UTF-8 is not copied. Bytes invalid in the encoding become
 * U+FFFD, one per byte, and decoding goes on.
 *
 * One decoder per thread (iconv descriptors are not shared).
 */
#ifndef PARSE_HTML_CHARSET_H
#define PARSE_HTML_CHARSET_H

#include <stddef.h>

struct html_decoder;

/* New decoder, or NULL when out of memory. */
struct html_decoder *html_decoder_create(void);
/* NULL is a no-op. */
void html_decoder_destroy(struct html_decoder *d);

/*
 * Decodes body (len bytes) to UTF-8; `charset` is the Content-Type label or
 * NULL. Returns 0 with *out (borrowed: the body itself, past a UTF-8 BOM,
 * or the decoder's buffer, valid until the next call) and *out_len; -1 when
 * out of memory.
 */
int html_decoder_run(struct html_decoder *d, const char *charset, const char *body, size_t len,
                     const char **out, size_t *out_len);

#endif
