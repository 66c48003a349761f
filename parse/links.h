/*
 * links.h: link extraction from an HTML page by the HTML Standard's
 * tokenizer rules.
 *
 * Design. The page is decoded to UTF-8 (parse/html_charset.h) and run
 * through a tokenizer of our own (parse/html_tokenizer.h) that implements
 * the states which decide where tags, attributes, comments, raw text and
 * CDATA begin and end, as the Standard does, and hands over each tag with
 * its attribute values rewritten as the Standard says (character
 * references by charref.h, NUL to U+FFFD, CR LF to LF). Why not an HTML
 * parser library: the one Debian 12 ships, libxml2 2.9's, is no HTML5
 * tokenizer (it decodes attribute values by HTML 4's rules and cuts
 * "/a&#0;b" to "/a", ends a value at a NUL, reads `<a/href=x>`, `<!-->`,
 * `--!>`, script escapes and `<![CDATA[` otherwise, and stops at
 * `</html>`), so it would find other links than a browser follows; and a
 * tokenizer pass builds no tree and looks at text only to find the next
 * '<', several times less work (tests/bench/links.sh compares the two).
 *
 * Data structure. A `struct links_extractor` owns the decoder and the
 * tokenizer, an arena that holds the raw attribute values seen during the
 * pass, the array of resolved links, and a SimHash builder fed with the
 * page's text (data and RCDATA text, references decoded, broken at every
 * tag) in the same pass; with focus terms (links_config.focus) the
 * builder also scores that text against them (parse/focus.h). After the pass
 * every raw link is resolved against the document's base URL (the first
 * `<base href>`, itself resolved against the page URL, wherever it appears,
 * as HTML5 does) by the project's WHATWG URL parser (frontier/url.h,
 * url_parse with the base) and written as its crawl key (url_crawl_key:
 * fragment dropped, percent-encoding normalized, the configured opt-in
 * canonicalizations applied), the same form the sieve and the frontier use,
 * so a link and the URL it is fetched and de-duplicated as are one string.
 * Links whose scheme is not http or https are dropped and counted, and so
 * are links that do not parse or whose key exceeds the URL length limit.
 * Userinfo (user:pass@) is dropped, as the crawl key drops it.
 *
 * What counts as a link: `a` and `area` href; `link` href when rel holds a
 * link type that makes a hyperlink (the HTML Standard's alternate, author,
 * help, license, next, prev, search, with bookmark, canonical, index and
 * the other navigation types of the microformats registry: see
 * link_rel_types in links.c) and no external-resource type (stylesheet,
 * icon, preload, modulepreload, prefetch, manifest...: `alternate
 * stylesheet` is a stylesheet); `frame` and `iframe` src;
 * `<meta http-equiv=refresh content="N; url=...">`.
 * Page-level: `<meta name=robots>` noindex / nofollow / none, the first
 * canonical, the base. Per link: rel=nofollow. Tags after `</html>` count,
 * as an HTML5 parser moves them into the body.
 *
 * Requisites (links_config.requisites; off: none of this runs): also what
 * the page embeds, marked by their kinds (link_kind_is_embed): the
 * element/attribute table embed_attrs in links.c (img src and srcset,
 * source src and srcset, input type=image src, script src, object data,
 * embed src, video, audio and track src, video poster, the background
 * attribute), `link` href with rel stylesheet, icon (or any `*-icon`),
 * preload, modulepreload or manifest (and imagesrcset), and the url()s and
 * @imports of `<style>` elements and `style` attributes (embed_urls.h).
 * links_extract_css gives a stylesheet's url()s and @imports.
 * What does not: anything inside comments and bogus comments, `script`
 * (with its escaped states: `<!--<script>` hides a `</script>`), `style`,
 * and the elements whose content HTML5 parses as text (`textarea`, `title`,
 * `xmp`, `noembed`, `noframes`, `iframe`, and everything after
 * `<plaintext>`), and CDATA sections in SVG and MathML. `noscript`
 * content IS parsed: a crawler runs no scripts, and an HTML5 parser with
 * scripting off builds those elements.
 *
 * Charset: the caller passes the Content-Type charset (or NULL); a BOM wins
 * over it, and it wins over `<meta charset>`, which wins over the default
 * (html_charset.h). The URL module percent-encodes non-ASCII octets as
 * UTF-8. The WHATWG rule that encodes the query of a link on a non-UTF-8
 * page in the page's own encoding is NOT implemented: queries are always
 * encoded as UTF-8.
 *
 * Invariants: at most `max_links` links and `max_bytes` bytes of URLs per
 * page (the rest is counted in `truncated`); attribute values past the
 * tokenizer's limits are counted in `dropped_invalid`. The extractor is
 * reused page after page by one thread (not thread-safe; one extractor per
 * parse thread). No global state.
 *
 * Workload: one page after another, 10-500 KiB each, hundreds of links; the
 * cost must stay at least 0.8x libxml2's own bare parse (see
 * tests/bench/links.sh).
 */
#ifndef PARSE_LINKS_H
#define PARSE_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LINKS_DEFAULT_MAX_LINKS 10000
#define LINKS_DEFAULT_MAX_BYTES (4u * 1024u * 1024u)
/* Raw attribute values longer than this are ignored (counted as invalid). */
#define LINKS_MAX_URL_LEN 8192

enum links_err {
	LINKS_OK = 0,     /* success (a malformed page is still a success) */
	LINKS_ENOMEM = 1, /* allocation failed; results of the page are partial */
	LINKS_EINVAL = 2, /* NULL argument, or the page URL is not an absolute
                          http(s) URL */
	/* never returned: the value keeps its number, so codes stay the same
	 * across versions (as curl keeps its retired codes) */
	LINKS_EPARSER = 3
};

const char *links_strerror(int err);

enum link_kind {
	LINK_A = 0,
	LINK_AREA,
	LINK_CANONICAL, /* <link rel=canonical> */
	LINK_ALTERNATE, /* <link rel=alternate> */
	LINK_NEXT,      /* <link rel=next> */
	LINK_PREV,      /* <link rel=prev> or previous */
	LINK_FRAME,
	LINK_IFRAME,
	LINK_META_REFRESH,
	LINK_REL, /* <link> with another hyperlink rel (author, search...) */
	/* Embeds (requisites), only with links_config.requisites: */
	LINK_IMG,        /* img/input src, srcset candidates, background */
	LINK_SCRIPT,     /* script src */
	LINK_STYLESHEET, /* <link rel=stylesheet> */
	LINK_LINK_EMBED, /* <link rel=icon / preload / modulepreload / manifest> */
	LINK_OBJECT,     /* object data */
	LINK_EMBED,      /* embed src */
	LINK_MEDIA,      /* video, audio, source, track src */
	LINK_POSTER,     /* video poster */
	LINK_CSS_URL,    /* url() or @import in CSS (style element or attribute, stylesheet) */
	LINK_KIND_COUNT
};

/* "a", "area", "link-canonical", "link-alternate", "link-next",
 * "link-prev", "frame", "iframe", "meta-refresh", "link", "img",
 * "script", "stylesheet", "link-embed", "object", "embed", "media",
 * "poster", "css-url". */
const char *link_kind_name(enum link_kind kind);

/* true for the kinds of embedded resources (LINK_IMG and after). */
bool link_kind_is_embed(enum link_kind kind);

struct link {
	const char *url; /* absolute, normalized, NUL-terminated */
	size_t len;
	enum link_kind kind;
	bool nofollow; /* rel=nofollow on this element */
};

/* Page-level results of the last links_extract(). Strings are borrowed from
 * the extractor (valid until the next extract/reset/destroy), NULL if absent. */
struct links_page {
	bool noindex;           /* meta robots noindex or none */
	bool nofollow;          /* meta robots nofollow or none */
	const char *base;       /* resolved <base href>, or the page URL */
	const char *canonical;  /* first resolved rel=canonical */
	uint64_t simhash;       /* SimHash of the page's text (simhash.h) */
	uint32_t focus;         /* its focus score (focus.h), or FOCUS_SCORE_NONE */
	size_t dropped_scheme;  /* links with a non-http(s) scheme */
	size_t dropped_invalid; /* links that did not parse / resolve */
	size_t truncated;       /* links beyond max_links / max_bytes */
};

struct url_options;
struct focus_terms;

struct links_config {
	size_t max_links; /* 0 = LINKS_DEFAULT_MAX_LINKS */
	size_t max_bytes; /* 0 = LINKS_DEFAULT_MAX_BYTES */
	bool no_simhash;  /* skip the text pass (faster) */
	bool requisites;  /* also extract embeds (see the top comment) */
	/* Focus terms (parse/focus.h), borrowed for the extractor's life: the
	 * text pass also scores the page (links_page.focus); NULL: none. */
	const struct focus_terms *focus;
	/* URL length limit and canonicalizations for the links' crawl keys
     * (frontier/url.h); borrowed during links_extractor_create only (copied);
     * NULL = url.h's defaults. */
	const struct url_options *url_options;
};

struct links_extractor;

/* New extractor (config may be NULL for the defaults). On error *out = NULL. */
int links_extractor_create(const struct links_config *config, struct links_extractor **out);
/* Frees everything; NULL is a no-op. */
void links_extractor_destroy(struct links_extractor *ex);

/*
 * Parses one page: `body` (len bytes) fetched from `page_url` (NUL-terminated
 * absolute http(s) URL), `charset` the Content-Type charset label or NULL.
 * Replaces the previous page's results. Returns LINKS_OK even for garbage.
 */
int links_extract(struct links_extractor *ex, const char *page_url, const char *charset,
                  const char *body, size_t len);

/*
 * Parses one stylesheet: `body` (len bytes) fetched from `css_url`, whose
 * url()s and @import strings become links of kind LINK_CSS_URL resolved
 * against css_url (CSS has no base element), whatever the requisites
 * setting. The body is taken as UTF-8 (URLs are nearly always ASCII; an
 * @charset is not read). Replaces the previous results.
 */
int links_extract_css(struct links_extractor *ex, const char *css_url, const char *body,
                      size_t len);

/* Links of the last page in document order (borrowed, valid until the next
 * links_extract or destroy); *count gets their number. */
const struct link *links_result(const struct links_extractor *ex, size_t *count);

/* Page-level results of the last page (borrowed). */
const struct links_page *links_page_info(const struct links_extractor *ex);

#endif
