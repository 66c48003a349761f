/*
 * utf8.h: a code point written as UTF-8, what the decoders of escapes
 * (HTML character references, CSS escapes, JSON \u escapes) each end
 * with. Header only, no state.
 */
#ifndef FRONTIER_BASE_UTF8_H
#define FRONTIER_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The longest code point's UTF-8. */
#define UTF8_MAX_BYTES 4

/* UTF-8 of code point cp (at most 0x10FFFF; the caller replaces
 * surrogates and what it refuses) into out; its length. */
static inline size_t utf8_put(uint32_t cp, char out[UTF8_MAX_BYTES])
{
	unsigned char *o = (unsigned char *)out;
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xC0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xE0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (unsigned char)(0xF0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

#endif
