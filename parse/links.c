/*
 * links.c: SAX pass over an HTML page collecting raw link attributes and
 * text, then resolution of the raw links against the document base (see
 * links.h for the contract).
 *
 * Two phases because HTML5 resolves every link against the document's base
 * URL, and `<base href>` may come after the first links: the pass stores raw
 * values in `raw` (an arena bounded by max_bytes), the second phase resolves
 * them into `out` (bounded likewise) and only then points the `struct link`
 * entries into it, since the arena may move while it grows.
 */
#include "parse/links.h"

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/xmlerror.h>

#include "frontier/url.h"
#include "parse/simhash.h"

/* ---- URL resolution: frontier/url.h ----
 * Every link is parsed by the project's WHATWG URL parser against the
 * document base and written as its crawl key (url_crawl_key), the form the
 * sieve and the frontier key URLs by, so the crawler has one URL semantics.
 * The resolver holds three parse objects: the page URL, the `<base href>`
 * resolved against it, and a scratch one for each link. */
enum { LINK_RESOLVE_OK, LINK_RESOLVE_SCHEME, LINK_RESOLVE_INVALID };

struct link_resolver {
	struct url *page;       /* the page URL (http or https) */
	struct url *base_url;   /* the <base href>, when it is usable */
	struct url *link;       /* scratch: the link being resolved */
	const struct url *base; /* page or base_url: what links resolve against */
	char *key;              /* last crawl key, key_cap bytes */
	size_t key_cap;
};

static void link_resolver_destroy(struct link_resolver *r)
{
	if (!r)
		return;
	url_destroy(r->page);
	url_destroy(r->base_url);
	url_destroy(r->link);
	free(r->key);
	free(r);
}

/* A resolver with the URL options `opt` (NULL = url.h's defaults); NULL when
 * out of memory. */
static struct link_resolver *link_resolver_create(const struct url_options *opt)
{
	struct link_resolver *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->page = url_create(opt);
	r->base_url = url_create(opt);
	r->link = url_create(opt);
	if (!r->page || !r->base_url || !r->link)
		goto fail;
	/* A crawl key is at most max_len bytes (longer ones are refused) and
     * never longer than the href it comes from. */
	size_t max_len = opt && opt->max_len ? opt->max_len : URL_DEFAULT_MAX_LEN;
	size_t href_cap = url_href_cap(r->link);
	r->key_cap = (max_len > href_cap ? max_len : href_cap) + 1;
	r->key = malloc(r->key_cap);
	if (!r->key)
		goto fail;
	return r;
fail:
	link_resolver_destroy(r);
	return NULL;
}

/* Parses the page URL (NUL-terminated) and makes it the base; it must be an
 * absolute http(s) URL. */
static int link_resolver_set_page(struct link_resolver *r, const char *page_url)
{
	r->base = NULL;
	if (url_parse(r->page, page_url, strlen(page_url), NULL) != URL_OK || !url_is_http(r->page))
		return LINK_RESOLVE_INVALID;
	r->base = r->page;
	return LINK_RESOLVE_OK;
}

/* Resolves `<base href>` (raw, len bytes) against the page URL and makes it
 * the base when it is an http(s) URL; otherwise the page URL stays the base
 * (and the result says why). */
static int link_resolver_set_base(struct link_resolver *r, const char *raw, size_t len)
{
	if (url_parse(r->base_url, raw, len, r->page) != URL_OK)
		return LINK_RESOLVE_INVALID;
	if (!url_is_http(r->base_url))
		return LINK_RESOLVE_SCHEME;
	r->base = r->base_url;
	return LINK_RESOLVE_OK;
}

/* Crawl key of `u` into r->key: *out points into the resolver (valid until
 * the next call), *olen its length. */
static int link_resolver_key(struct link_resolver *r, const struct url *u, const char **out,
                             size_t *olen)
{
	if (url_crawl_key(u, r->key, r->key_cap, olen) != URL_OK)
		return LINK_RESOLVE_INVALID;
	*out = r->key;
	return LINK_RESOLVE_OK;
}

/* Resolves raw (len bytes, as written in the attribute) against the base:
 * LINK_RESOLVE_SCHEME for a valid URL that is not http(s), INVALID for one
 * that does not parse or whose key is too long. */
static int link_resolve(struct link_resolver *r, const char *raw, size_t len, const char **out,
                        size_t *olen)
{
	if (url_parse(r->link, raw, len, r->base) != URL_OK)
		return LINK_RESOLVE_INVALID;
	if (!url_is_http(r->link))
		return LINK_RESOLVE_SCHEME;
	return link_resolver_key(r, r->link, out, olen);
}

struct raw_link {
	size_t off, len; /* in ex->raw */
	enum link_kind kind;
	bool nofollow;
};

struct out_link {
	size_t off, len; /* in ex->out */
	enum link_kind kind;
	bool nofollow;
};

struct links_extractor {
	struct links_config cfg;
	htmlSAXHandler sax;
	struct simhash_builder *sh;

	/* pass 1 */
	char *raw;
	size_t raw_len, raw_cap;
	struct raw_link *rl;
	size_t nrl, rl_cap;
	bool have_base;
	size_t base_off, base_len;
	const char *suppress; /* element whose content HTML5 keeps as text */
	int suppress_depth;
	bool oom;

	/* pass 2 */
	char *out;
	size_t out_len, out_cap;
	struct out_link *ol;
	size_t nol, ol_cap;
	struct link *links;
	size_t links_cap;
	size_t nlinks;
	struct links_page page;
	char *base_str; /* malloc'd resolved base */
	size_t canonical_off;
	bool have_canonical;
	struct link_resolver *resolver;
};

const char *links_strerror(int err)
{
	switch (err) {
	case LINKS_OK:
		return "success";
	case LINKS_ENOMEM:
		return "out of memory";
	case LINKS_EINVAL:
		return "invalid argument or page URL";
	case LINKS_EPARSER:
		return "cannot create the HTML parser";
	default:
		return "unknown links error";
	}
}

const char *link_kind_name(enum link_kind kind)
{
	static const char *const names[LINK_KIND_COUNT] = {
		"a",         "area",  "link-canonical", "link-alternate", "link-next",
		"link-prev", "frame", "iframe",         "meta-refresh",
	};
	return (unsigned)kind < LINK_KIND_COUNT ? names[kind] : "unknown";
}

/* ---- helpers ---- */

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static const char *attr(const xmlChar **atts, const char *name)
{
	if (!atts)
		return NULL;
	for (size_t i = 0; atts[i]; i += 2) {
		if (strcmp((const char *)atts[i], name) == 0)
			return atts[i + 1] ? (const char *)atts[i + 1] : "";
	}
	return NULL;
}

/* Does the space- (or comma-) separated list `list` hold `tok`
 * (ASCII case-insensitive)? */
static bool has_token(const char *list, const char *tok, bool commas)
{
	size_t tl = strlen(tok);
	const char *p = list;
	while (*p) {
		while (*p && (is_ws((unsigned char)*p) || (commas && *p == ',')))
			p++;
		const char *s = p;
		while (*p && !is_ws((unsigned char)*p) && !(commas && *p == ','))
			p++;
		if ((size_t)(p - s) == tl && strncasecmp(s, tok, tl) == 0)
			return true;
	}
	return false;
}

/* Appends s[0, n) and a NUL to one of the extractor's string arenas (buf,
 * its length and capacity; first_cap is its first size), *off receiving
 * where it starts. false when the page's max_bytes would be passed
 * (counted as truncated) or memory runs out (ex->oom). */
static bool arena_put(struct links_extractor *ex, char **buf, size_t *used, size_t *cap,
                      size_t first_cap, const char *s, size_t n, size_t *off)
{
	if (*used + n + 1 > ex->cfg.max_bytes) {
		ex->page.truncated++;
		return false;
	}
	if (*used + n + 1 > *cap) {
		size_t ncap = *cap ? *cap : first_cap;
		while (ncap < *used + n + 1)
			ncap *= 2;
		char *nb = realloc(*buf, ncap);
		if (!nb) {
			ex->oom = true;
			return false;
		}
		*buf = nb;
		*cap = ncap;
	}
	memcpy(*buf + *used, s, n);
	(*buf)[*used + n] = '\0';
	*off = *used;
	*used += n + 1;
	return true;
}

/* Stores a raw value in the arena; false if a cap is hit (counted). */
static bool raw_store(struct links_extractor *ex, const char *val, size_t *off, size_t *len)
{
	size_t n = strlen(val);
	if (n > LINKS_MAX_URL_LEN) {
		ex->page.dropped_invalid++;
		return false;
	}
	if (!arena_put(ex, &ex->raw, &ex->raw_len, &ex->raw_cap, 4096, val, n, off))
		return false;
	*len = n;
	return true;
}

static void add_raw(struct links_extractor *ex, const char *val, enum link_kind kind, bool nofollow)
{
	if (ex->nrl >= ex->cfg.max_links) {
		ex->page.truncated++;
		return;
	}
	if (ex->nrl == ex->rl_cap) {
		size_t ncap = ex->rl_cap ? ex->rl_cap * 2 : 64;
		struct raw_link *n = realloc(ex->rl, ncap * sizeof *n);
		if (!n) {
			ex->oom = true;
			return;
		}
		ex->rl = n;
		ex->rl_cap = ncap;
	}
	struct raw_link *r = &ex->rl[ex->nrl];
	if (!raw_store(ex, val, &r->off, &r->len))
		return;
	r->kind = kind;
	r->nofollow = nofollow;
	ex->nrl++;
}

/* The URL of `<meta http-equiv=refresh content=...>` (HTML5 "shared
 * declarative refresh steps", simplified): "N; url=X", "N,X", "N; 'X'".
 * Returns a pointer into content and sets *len, or NULL for none. */
static const char *refresh_url(const char *c, size_t *len)
{
	const char *p = c;
	while (is_ws((unsigned char)*p))
		p++;
	if (!((*p >= '0' && *p <= '9') || *p == '.'))
		return NULL;
	while ((*p >= '0' && *p <= '9') || *p == '.')
		p++;
	while (is_ws((unsigned char)*p))
		p++;
	if (*p == ';' || *p == ',')
		p++;
	while (is_ws((unsigned char)*p))
		p++;
	if (strncasecmp(p, "url", 3) == 0) {
		const char *q = p + 3;
		while (is_ws((unsigned char)*q))
			q++;
		if (*q == '=') {
			q++;
			while (is_ws((unsigned char)*q))
				q++;
			p = q;
		}
	}
	const char *end;
	if (*p == '"' || *p == '\'') {
		char quote = *p++;
		end = strchr(p, quote);
		if (!end)
			end = p + strlen(p);
	} else {
		end = p + strlen(p);
	}
	while (end > p && is_ws((unsigned char)end[-1]))
		end--;
	if (end == p)
		return NULL;
	*len = (size_t)(end - p);
	return p;
}

/* ---- SAX callbacks ---- */

static const char *const text_elements[] = {
	/* HTML5 parses their content as text; libxml2 builds elements. */
	"textarea", "title", "xmp", "noembed", "noframes", "plaintext", "iframe", NULL,
};

static void on_start(void *ctx, const xmlChar *xname, const xmlChar **atts)
{
	struct links_extractor *ex = ctx;
	const char *name = (const char *)xname;
	if (ex->sh)
		simhash_builder_break(ex->sh);
	if (ex->suppress) {
		if (strcmp(name, ex->suppress) == 0)
			ex->suppress_depth++;
		return;
	}
	switch (name[0]) {
	case 'a':
		if (name[1] == '\0' || strcmp(name, "area") == 0) {
			const char *href = attr(atts, "href");
			if (href) {
				const char *rel = attr(atts, "rel");
				add_raw(ex, href, name[1] ? LINK_AREA : LINK_A,
				        rel && has_token(rel, "nofollow", false));
			}
		}
		break;
	case 'b':
		if (strcmp(name, "base") == 0 && !ex->have_base) {
			const char *href = attr(atts, "href");
			if (href && raw_store(ex, href, &ex->base_off, &ex->base_len))
				ex->have_base = true;
		}
		break;
	case 'f':
	case 'i': {
		bool frame = strcmp(name, "frame") == 0;
		const char *src = frame || strcmp(name, "iframe") == 0 ? attr(atts, "src") : NULL;
		if (src)
			add_raw(ex, src, frame ? LINK_FRAME : LINK_IFRAME, false);
		break;
	}
	case 'l':
		if (strcmp(name, "link") == 0) {
			const char *rel = attr(atts, "rel"), *href = attr(atts, "href");
			if (!rel || !href || has_token(rel, "stylesheet", false) ||
			    has_token(rel, "icon", false))
				break;
			bool nofollow = has_token(rel, "nofollow", false);
			if (has_token(rel, "canonical", false))
				add_raw(ex, href, LINK_CANONICAL, nofollow);
			else if (has_token(rel, "next", false))
				add_raw(ex, href, LINK_NEXT, nofollow);
			else if (has_token(rel, "prev", false) || has_token(rel, "previous", false))
				add_raw(ex, href, LINK_PREV, nofollow);
			else if (has_token(rel, "alternate", false))
				add_raw(ex, href, LINK_ALTERNATE, nofollow);
		}
		break;
	case 'm':
		if (strcmp(name, "meta") == 0) {
			const char *content = attr(atts, "content");
			if (!content)
				break;
			const char *equiv = attr(atts, "http-equiv"), *mname = attr(atts, "name");
			if (equiv && strcasecmp(equiv, "refresh") == 0) {
				size_t ulen;
				const char *u = refresh_url(content, &ulen);
				if (u && ulen <= LINKS_MAX_URL_LEN) {
					char buf[LINKS_MAX_URL_LEN + 1];
					memcpy(buf, u, ulen);
					buf[ulen] = '\0';
					add_raw(ex, buf, LINK_META_REFRESH, false);
				}
			} else if (mname && strcasecmp(mname, "robots") == 0) {
				if (has_token(content, "noindex", true) ||
				    has_token(content, "none", true))
					ex->page.noindex = true;
				if (has_token(content, "nofollow", true) ||
				    has_token(content, "none", true))
					ex->page.nofollow = true;
			}
		}
		break;
	default:
		break;
	}
	for (size_t i = 0; text_elements[i]; i++) {
		if (name[0] == text_elements[i][0] && strcmp(name, text_elements[i]) == 0) {
			ex->suppress = text_elements[i];
			ex->suppress_depth = 1;
			break;
		}
	}
}

static void on_end(void *ctx, const xmlChar *xname)
{
	struct links_extractor *ex = ctx;
	if (ex->sh)
		simhash_builder_break(ex->sh);
	if (ex->suppress && strcmp((const char *)xname, ex->suppress) == 0 &&
	    --ex->suppress_depth == 0)
		ex->suppress = NULL;
}

static void on_text(void *ctx, const xmlChar *s, int len)
{
	struct links_extractor *ex = ctx;
	if (ex->sh && len > 0)
		simhash_builder_add(ex->sh, (const char *)s, (size_t)len);
}

static void on_break(void *ctx, const xmlChar *s, int len)
{
	struct links_extractor *ex = ctx;
	(void)s;
	(void)len;
	if (ex->sh)
		simhash_builder_break(ex->sh);
}

/* script and style content: not text, not markup. */
static void on_cdata(void *ctx, const xmlChar *s, int len)
{
	on_break(ctx, s, len);
}

/* ---- lifecycle ---- */

int links_extractor_create(const struct links_config *config, struct links_extractor **out)
{
	if (!out)
		return LINKS_EINVAL;
	*out = NULL;
	xmlInitParser();
	struct links_extractor *ex = calloc(1, sizeof *ex);
	if (!ex)
		return LINKS_ENOMEM;
	if (config)
		ex->cfg = *config;
	if (ex->cfg.max_links == 0)
		ex->cfg.max_links = LINKS_DEFAULT_MAX_LINKS;
	if (ex->cfg.max_bytes == 0)
		ex->cfg.max_bytes = LINKS_DEFAULT_MAX_BYTES;
	if (!ex->cfg.no_simhash) {
		ex->sh = simhash_builder_create();
		if (!ex->sh)
			goto fail;
	}
	ex->resolver = link_resolver_create(ex->cfg.url_options);
	if (!ex->resolver)
		goto fail;
	ex->sax.startElement = on_start;
	ex->sax.endElement = on_end;
	ex->sax.characters = on_text;
	ex->sax.ignorableWhitespace = on_break;
	ex->sax.cdataBlock = on_cdata;
	*out = ex;
	return LINKS_OK;
fail:
	links_extractor_destroy(ex);
	return LINKS_ENOMEM;
}

void links_extractor_destroy(struct links_extractor *ex)
{
	if (!ex)
		return;
	simhash_builder_destroy(ex->sh);
	link_resolver_destroy(ex->resolver);
	free(ex->raw);
	free(ex->rl);
	free(ex->out);
	free(ex->ol);
	free(ex->links);
	free(ex->base_str);
	free(ex);
}

static void reset(struct links_extractor *ex)
{
	ex->raw_len = 0;
	ex->nrl = 0;
	ex->have_base = false;
	ex->suppress = NULL;
	ex->suppress_depth = 0;
	ex->oom = false;
	ex->out_len = 0;
	ex->nol = 0;
	ex->nlinks = 0;
	ex->have_canonical = false;
	free(ex->base_str);
	ex->base_str = NULL;
	memset(&ex->page, 0, sizeof ex->page);
	if (ex->sh)
		simhash_builder_reset(ex->sh);
}

/* Maps a Content-Type charset label to the encoding we ask libxml2 for.
 * HTML5 decodes the Latin-1 and ASCII labels as windows-1252. */
static const char *charset_name(const char *label)
{
	static const char *const as1252[] = { "iso-8859-1", "iso8859-1",  "latin1",      "l1",
		                              "us-ascii",   "ascii",      "iso_8859-1",  "cp819",
		                              "ibm819",     "iso-ir-100", "csisolatin1", NULL };
	for (size_t i = 0; as1252[i]; i++)
		if (strcasecmp(label, as1252[i]) == 0)
			return "windows-1252";
	return label;
}

static bool is_label_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '-' ||
	       c == '_' || c == '.' || c == ':';
}

/* HTML5's prescan, reduced to what libxml2 gets wrong: a `<meta>` in the
 * first 1024 bytes declaring a Latin-1 label (charset=... or content="...;
 * charset=...") means windows-1252, while libxml2 would decode ISO-8859-1
 * (0x80-0x9F as C1 controls instead of the euro sign, quotes, dashes).
 * Returns "windows-1252" or NULL (then libxml2's own detection applies). */
static const char *prescan_latin1(const char *body, size_t len)
{
	size_t n = len < 1024 ? len : 1024;
	for (size_t i = 0; i + 5 < n; i++) {
		if (body[i] != '<' || strncasecmp(body + i + 1, "meta", 4) != 0)
			continue;
		const char *end = memchr(body + i, '>', n - i);
		size_t tl = end ? (size_t)(end - (body + i)) : n - i;
		for (size_t k = i + 5; k + 7 < i + tl; k++) {
			if (strncasecmp(body + k, "charset", 7) != 0)
				continue;
			size_t p = k + 7;
			while (p < i + tl && is_ws((unsigned char)body[p]))
				p++;
			if (p >= i + tl || body[p] != '=')
				continue;
			p++;
			while (p < i + tl &&
			       (is_ws((unsigned char)body[p]) || body[p] == '"' || body[p] == '\''))
				p++;
			char label[32];
			size_t ll = 0;
			while (p < i + tl && ll + 1 < sizeof label &&
			       (is_label_char((unsigned char)body[p])))
				label[ll++] = body[p++];
			label[ll] = '\0';
			const char *mapped = charset_name(label);
			return strcmp(mapped, "windows-1252") == 0 && strcasecmp(label, mapped) != 0
			               ? mapped
			               : NULL;
		}
	}
	return NULL;
}

/* Swallows libxml2's context-free messages (encoding errors). */
static void quiet(void *ctx, const char *msg, ...)
{
	(void)ctx;
	(void)msg;
}

static int parse_pass(struct links_extractor *ex, const char *charset, const char *body, size_t len)
{
	int rc = LINKS_OK;
	const char *enc = NULL;
	/* A BOM wins over the Content-Type charset (HTML5 "BOM sniffing"). */
	if (len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0) {
		enc = "UTF-8";
		body += 3;
		len -= 3;
	} else if (len >= 2 && memcmp(body, "\xFF\xFE", 2) == 0) {
		enc = "UTF-16LE";
		body += 2;
		len -= 2;
	} else if (len >= 2 && memcmp(body, "\xFE\xFF", 2) == 0) {
		enc = "UTF-16BE";
		body += 2;
		len -= 2;
	} else if (charset && *charset) {
		enc = charset_name(charset);
	} else {
		enc = prescan_latin1(body, len);
	}
	/* Errors raised without a parser context (the encoders') go to libxml2's
     * generic handler, which is per thread: silence it for this parse only. */
	xmlGenericErrorFunc saved_err = xmlGenericError;
	void *saved_ctx = xmlGenericErrorContext;
	xmlSetGenericErrorFunc(NULL, quiet);
	htmlParserCtxtPtr ctxt =
	        htmlCreatePushParserCtxt(&ex->sax, ex, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
	if (!ctxt) {
		xmlSetGenericErrorFunc(saved_ctx, saved_err);
		return LINKS_EPARSER;
	}
	htmlCtxtUseOptions(ctxt, HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR |
	                                 HTML_PARSE_NOWARNING | HTML_PARSE_COMPACT);
	if (enc) {
		xmlCharEncodingHandlerPtr h = xmlFindCharEncodingHandler(enc);
		/* An unknown label is ignored: the page's own declaration or the
         * default applies. libxml2 frees the handler with the context. */
		if (h)
			xmlSwitchToEncoding(ctxt, h);
	}
	const size_t chunk = (size_t)INT_MAX / 2;
	while (len > chunk) {
		htmlParseChunk(ctxt, body, (int)chunk, 0);
		body += chunk;
		len -= chunk;
	}
	htmlParseChunk(ctxt, body, (int)len, 1);
	htmlFreeParserCtxt(ctxt);
	xmlSetGenericErrorFunc(saved_ctx, saved_err);
	if (ex->oom)
		rc = LINKS_ENOMEM;
	return rc;
}

/* Appends a resolved URL to `out`; false if a cap is hit. */
static bool out_store(struct links_extractor *ex, const char *url, size_t n, size_t *off)
{
	return arena_put(ex, &ex->out, &ex->out_len, &ex->out_cap, 8192, url, n, off);
}

static int resolve_pass(struct links_extractor *ex)
{
	if (ex->nrl > ex->ol_cap) {
		struct out_link *n = realloc(ex->ol, ex->nrl * sizeof *n);
		if (!n)
			return LINKS_ENOMEM;
		ex->ol = n;
		ex->ol_cap = ex->nrl;
	}
	/* The document base: the first <base href> resolved against the page
     * when it is an http(s) URL, else the page URL. */
	if (ex->have_base)
		(void)link_resolver_set_base(ex->resolver, ex->raw + ex->base_off, ex->base_len);
	const char *b = NULL;
	size_t blen = 0;
	if (link_resolver_key(ex->resolver, ex->resolver->base, &b, &blen) != LINK_RESOLVE_OK)
		return LINKS_EINVAL;
	ex->base_str = strndup(b, blen);
	if (!ex->base_str)
		return LINKS_ENOMEM;
	ex->page.base = ex->base_str;
	for (size_t i = 0; i < ex->nrl; i++) {
		const struct raw_link *r = &ex->rl[i];
		const char *u = NULL;
		size_t ulen = 0;
		int v = link_resolve(ex->resolver, ex->raw + r->off, r->len, &u, &ulen);
		if (v == LINK_RESOLVE_SCHEME) {
			ex->page.dropped_scheme++;
			continue;
		}
		if (v != LINK_RESOLVE_OK) {
			ex->page.dropped_invalid++;
			continue;
		}
		struct out_link *o = &ex->ol[ex->nol];
		if (!out_store(ex, u, ulen, &o->off)) {
			if (ex->oom)
				return LINKS_ENOMEM;
			continue;
		}
		o->len = ulen;
		o->kind = r->kind;
		o->nofollow = r->nofollow;
		if (r->kind == LINK_CANONICAL && !ex->have_canonical) {
			ex->have_canonical = true;
			ex->canonical_off = o->off;
		}
		ex->nol++;
	}
	if (ex->nol > ex->links_cap) {
		struct link *n = realloc(ex->links, ex->nol * sizeof *n);
		if (!n)
			return LINKS_ENOMEM;
		ex->links = n;
		ex->links_cap = ex->nol;
	}
	for (size_t i = 0; i < ex->nol; i++) {
		ex->links[i].url = ex->out + ex->ol[i].off;
		ex->links[i].len = ex->ol[i].len;
		ex->links[i].kind = ex->ol[i].kind;
		ex->links[i].nofollow = ex->ol[i].nofollow;
	}
	ex->nlinks = ex->nol;
	if (ex->have_canonical)
		ex->page.canonical = ex->out + ex->canonical_off;
	return LINKS_OK;
}

int links_extract(struct links_extractor *ex, const char *page_url, const char *charset,
                  const char *body, size_t len)
{
	if (!ex || !page_url || (!body && len > 0))
		return LINKS_EINVAL;
	reset(ex);
	if (link_resolver_set_page(ex->resolver, page_url) != LINK_RESOLVE_OK)
		return LINKS_EINVAL;
	int rc = parse_pass(ex, charset, body ? body : "", len);
	if (rc != LINKS_OK && rc != LINKS_ENOMEM)
		return rc;
	int rc2 = resolve_pass(ex);
	if (ex->sh)
		ex->page.simhash = simhash_builder_value(ex->sh);
	return rc != LINKS_OK ? rc : rc2;
}

const struct link *links_result(const struct links_extractor *ex, size_t *count)
{
	if (count)
		*count = ex ? ex->nlinks : 0;
	return ex ? ex->links : NULL;
}

const struct links_page *links_page_info(const struct links_extractor *ex)
{
	return ex ? &ex->page : NULL;
}
