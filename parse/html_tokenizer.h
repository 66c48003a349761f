/*
 * html_tokenizer.h: the part of the HTML Standard's tokenizer (13.2.5) that
 * decides where tags, attributes, comments, raw text and CDATA begin and
 * end, over a page already converted to UTF-8, for the link extractor.
 *
 * What it implements, as the Standard does: the data state; tag open, end
 * tag open, tag name; before/after attribute name, attribute name, the three
 * attribute value states, after attribute value (quoted), self-closing start
 * tag (so `<a/href=x>` has an href); markup declaration open; the comment
 * states (`<!-->` and `<!--->` end at once, `--!>` ends a comment, EOF ends
 * it); bogus comments (`<?`, `</` + non-letter, `<!` + anything but `--`,
 * DOCTYPE, and `<![CDATA[` outside foreign content); and the text states
 * the tree builder switches it into after a start tag: RCDATA (`title`,
 * `textarea`), RAWTEXT (`style`, `xmp`, `iframe`, `noembed`, `noframes`;
 * not `noscript`: a crawler runs no scripts), script data with its escaped
 * and double-escaped states, and PLAINTEXT. Attribute values get the
 * tokenizer's rewriting: character references (charref.h), NUL to U+FFFD,
 * CR LF and CR to LF. Names are ASCII-lowercased, NUL in them is U+FFFD. A
 * later attribute with the name of an earlier one is dropped.
 *
 * What it approximates of tree construction (the only state it keeps
 * across tags): "in foreign content" is a count of open `svg` and `math`
 * elements (their start tags not self-closing, less their end tags), reset
 * by the HTML breakout start tags (`b`, `div`, `p`, ...). In foreign
 * content a start tag switches to no text state and `<![CDATA[` opens a
 * CDATA section that ends at `]]>`. Everything else the tree builder does
 * (implied elements, content after `</html>`, which is tokenized as any
 * other) does not change where a tag is.
 *
 * Data structure. A `struct html_tokenizer` owns a fixed array of attribute
 * slots (HTML_TOKENIZER_MAX_ATTRS; later attributes of a tag are dropped
 * and counted) and a fixed scratch buffer (HTML_TOKENIZER_SCRATCH bytes)
 * for the names and values that the rewriting changes. A value that needs
 * no rewriting (no '&', NUL or CR: nearly all) points into the page itself;
 * one that does not fit the scratch left for its tag is cut and flagged.
 * Names longer than HTML_TOKENIZER_MAX_NAME bytes are kept as their prefix
 * of that length (no name the extractor looks for is that long). Tokens
 * are handed to callbacks; their strings are valid only during the call.
 *
 * Invariants: linear in the page (every state advances, the searches for
 * an end tag or a comment's end restart after what they skipped); no
 * allocation during a pass; one tokenizer per thread.
 */
#ifndef PARSE_HTML_TOKENIZER_H
#define PARSE_HTML_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>

#define HTML_TOKENIZER_MAX_ATTRS 64
#define HTML_TOKENIZER_MAX_NAME 32
#define HTML_TOKENIZER_SCRATCH (256u * 1024u)

struct html_attr {
	const char *name; /* lowercased, not NUL-terminated */
	size_t name_len;
	const char *value; /* rewritten as the Standard's tokenizer does */
	size_t value_len;
	bool value_cut; /* the value did not fit the scratch: do not use it */
};

struct html_tag {
	const char *name; /* lowercased */
	size_t name_len;
	bool end;          /* an end tag (its attributes are still reported) */
	bool self_closing; /* "/>" */
	const struct html_attr *attrs;
	size_t nattrs;
};

struct html_tokenizer_callbacks {
	/* A start or end tag that was closed by '>' (one cut by the end of the
	 * page is no tag, as the Standard says). */
	void (*tag)(void *ctx, const struct html_tag *tag);
	/* Text of the data and RCDATA states (character references decoded),
	 * of PLAINTEXT and of CDATA sections; NULL to skip. */
	void (*text)(void *ctx, const char *s, size_t len);
	/* Content of RAWTEXT elements and scripts, which is not page text;
	 * NULL to skip (the tests compare it with the html5lib suite). */
	void (*raw_text)(void *ctx, const char *s, size_t len);
};

/* Counters of what a pass dropped (web-controlled sizes past a limit). */
struct html_tokenizer_stats {
	size_t dropped_attrs; /* attributes past HTML_TOKENIZER_MAX_ATTRS */
	size_t cut_values;    /* values that did not fit the scratch */
};

struct html_tokenizer;

/* New tokenizer, or NULL when out of memory. */
struct html_tokenizer *html_tokenizer_create(void);
/* NULL is a no-op. */
void html_tokenizer_destroy(struct html_tokenizer *t);

/* Tokenizes page[0, len) (UTF-8; invalid bytes pass through), calling cb
 * with ctx in document order; `stats` (may be NULL) receives the pass's
 * counters. Cannot fail. */
void html_tokenize(struct html_tokenizer *t, const char *page, size_t len,
                   const struct html_tokenizer_callbacks *cb, void *ctx,
                   struct html_tokenizer_stats *stats);

/* The tokenizer states a pass can start in: the Standard's states that the
 * html5lib suite starts its cases in. */
enum html_tokenizer_start {
	HTML_START_DATA,
	HTML_START_RCDATA,
	HTML_START_RAWTEXT,
	HTML_START_SCRIPT,
	HTML_START_PLAINTEXT,
	HTML_START_CDATA,
};

/* html_tokenize starting in `start`, with `last_start_tag` (NULL: none)
 * the name an end tag must have to end RCDATA, RAWTEXT or script data. */
void html_tokenize_from(struct html_tokenizer *t, const char *page, size_t len,
                        enum html_tokenizer_start start, const char *last_start_tag,
                        const struct html_tokenizer_callbacks *cb, void *ctx,
                        struct html_tokenizer_stats *stats);

#endif
