/*
 * charref.h: the HTML Standard's character references (13.2.5.72-80, the
 * "character reference" states of the tokenizer), decoded to UTF-8, for the
 * attribute values a link extractor reads.
 *
 * What is decoded, as the Standard's tokenizer does it:
 *  - Named references, case-sensitive, from the Standard's full table
 *    (2,231 names, parse/charref_table.c). The longest name that matches is
 *    taken, so "&notin;" is U+2209 and "&notit;" is "¬" + "it;" in text.
 *    A name may lack its ';' only if the table lists it so (the 106 legacy
 *    names: "&amp", "&copy", "&not"...). In an attribute value, a match that
 *    does not end with ';' and is followed by '=' or an ASCII letter or
 *    digit is left as written ("for historical reasons": "?a=1&copy=2"
 *    stays a query, and "&notit;" stays "&notit;").
 *  - Numeric references, "&#" decimal digits or "&#x"/"&#X" hex digits, the
 *    ';' optional. 0, beyond 0x10FFFF and surrogates become U+FFFD;
 *    0x80-0x9F become windows-1252's character where it has one (0x80 is
 *    U+20AC); other controls and noncharacters are kept. "&#;" and "&#x;"
 *    (no digits) are not references and stay as written.
 *  - Anything else ('&' alone, unknown names) stays as written.
 * Why not libxml2's HTML parser (2.9, as Debian 12 ships it): it decodes
 * attribute values by HTML 4's 253 names, always wants the ';' ("a&copy"
 * stays), keeps 0x80-0x9F as C1 controls, and drops the rest of a value
 * after a numeric reference it rejects ("/a&#;b" and "/a&#0;b" become
 * "/a"): other links than the ones a browser follows.
 * Only references: the tokenizer's other rewriting (CR LF to LF, NUL to
 * U+FFFD, ending a value at its quote) is the caller's, and bytes that are
 * not part of a reference are copied unchanged, valid UTF-8 or not. The
 * output is UTF-8, so decode after the page is converted to UTF-8: a
 * reference names a code point, not a byte of the page's charset.
 *
 * Data structure. The table is an array of the names sorted by bytes,
 * each with its replacement already in UTF-8, and an index of where each
 * first letter starts (parse/charref_table.h). A named reference is matched
 * one character at a time by narrowing the range of names that share the
 * prefix read so far (two binary searches per character, within the range
 * of the previous one); because a name sorts right before its extensions,
 * the range's first entry says whether the prefix is itself a name, which
 * gives the longest match in one left-to-right pass of at most 32 characters
 * (the longest name). No allocation, no state: every function here is
 * reentrant and thread-safe.
 *
 * Workload: most attribute values have no '&' at all; charref_decode_attribute
 * looks for one with memchr and otherwise copies the value with memcpy.
 *
 * Limits: a decoded value is at most CHARREF_DECODED_CAP(len) bytes, since
 * no reference is more than 6/5 as long decoded as written ("&nGt;" and
 * "&nLt;", five bytes, are six; every other reference shrinks or keeps its
 * length), so a buffer of len + len / 5 bytes always suffices. Decoding in
 * place is therefore not possible.
 */
#ifndef PARSE_CHARREF_H
#define PARSE_CHARREF_H

#include <stdbool.h>
#include <stddef.h>

/* Longest UTF-8 output of one reference ("&nGt;": two code points). */
#define CHARREF_ONE_MAX 6
/* A buffer this large holds any decoding of `len` input bytes. */
#define CHARREF_DECODED_CAP(len) ((len) + (len) / 5)

/*
 * Decodes the character references of one attribute value, `in` (len
 * bytes, as written between its quotes), into `out` (cap bytes; must not
 * overlap `in`; not NUL-terminated). Returns the length of the whole
 * decoded value; when that exceeds cap, only its first cap bytes were
 * written (possibly ending inside a UTF-8 sequence), as snprintf does. With
 * cap >= CHARREF_DECODED_CAP(len) the result always fits. Never fails.
 */
size_t charref_decode_attribute(const char *in, size_t len, char *out, size_t cap);

/*
 * Decodes the one reference that starts at in[0] (which must be '&'), the
 * input ending at in[len]; `in_attribute` applies the attribute rule for
 * legacy names followed by '=' or an alphanumeric. On a reference: writes
 * its UTF-8 into out (*out_len bytes, 1 to CHARREF_ONE_MAX) and returns the
 * number of input bytes it spans, '&' and ';' included. Returns 0 when in[0]
 * does not start a reference (or len is 0): the caller keeps the '&' as
 * written and goes on at in[1]; the bytes after it cannot start a reference
 * before the next '&'.
 */
size_t charref_decode_one(const char *in, size_t len, bool in_attribute, char out[CHARREF_ONE_MAX],
                          size_t *out_len);

#endif
