/*
 * links.c: a tokenizer pass over an HTML page collecting raw link
 * attributes and text, then resolution of the raw links against the document base (see
 * links.h for the contract).
 *
 * Two phases because HTML5 resolves every link against the document's base
 * URL, and `<base href>` may come after the first links: the pass stores raw
 * values in `raw` (an arena bounded by max_bytes), the second phase resolves
 * them into `out` (bounded likewise) and only then points the `struct link`
 * entries into it, since the arena may move while it grows.
 */
#include "parse/links.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/url.h"
#include "parse/embed_urls.h"
#include "parse/html_charset.h"
#include "parse/html_tokenizer.h"
#include "parse/focus.h"
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

/* Frees what the resolver holds (not r itself); r may be partly set up. */
static void link_resolver_fini(struct link_resolver *r)
{
	url_destroy(r->page);
	url_destroy(r->base_url);
	url_destroy(r->link);
	free(r->key);
}

/* Sets up the resolver r (zeroed, inside its extractor) with the URL options
 * `opt` (NULL = url.h's defaults). -1 when out of memory: then what r
 * holds is for link_resolver_fini. */
static int link_resolver_init(struct link_resolver *r, const struct url_options *opt)
{
	r->page = url_create(opt);
	r->base_url = url_create(opt);
	r->link = url_create(opt);
	if (!r->page || !r->base_url || !r->link)
		return -1;
	/* A crawl key is at most max_len bytes (longer ones are refused) and
     * never longer than the href it comes from. */
	size_t max_len = opt && opt->max_len ? opt->max_len : URL_DEFAULT_MAX_LEN;
	size_t href_cap = url_href_cap(r->link);
	r->key_cap = (max_len > href_cap ? max_len : href_cap) + 1;
	r->key = malloc(r->key_cap);
	return r->key ? 0 : -1;
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

/* Strings stored back to back, each NUL-terminated, found by offset (the
 * buffer moves as it grows). */
struct string_arena {
	char *bytes;
	size_t len, cap;
};

struct links_extractor {
	struct links_config cfg;
	struct html_decoder *decoder;
	struct html_tokenizer *tokenizer;
	struct html_tokenizer_callbacks callbacks;
	struct simhash_builder *sh;

	/* pass 1 */
	struct string_arena raw;
	struct raw_link *rl;
	size_t nrl, rl_cap;
	bool have_base;
	size_t base_off, base_len;
	bool oom;
	bool in_style; /* the last tag was a <style> start tag: raw text is CSS */

	/* pass 2 */
	struct string_arena out;
	struct out_link *ol;
	size_t nol, ol_cap;
	struct link *links;
	size_t links_cap;
	size_t nlinks;
	struct links_page page;
	char *base_str; /* malloc'd resolved base */
	size_t canonical_off;
	bool have_canonical;
	struct link_resolver resolver;
};

const char *links_strerror(int err)
{
	switch (err) {
	case LINKS_OK: return "success";
	case LINKS_ENOMEM: return "out of memory";
	case LINKS_EINVAL: return "invalid argument or page URL";
	case LINKS_EPARSER: return "cannot create the HTML parser";
	default: return "unknown links error";
	}
}

const char *link_kind_name(enum link_kind kind)
{
	static const char *const names[LINK_KIND_COUNT] = {
		"a",         "area",   "link-canonical", "link-alternate", "link-next",
		"link-prev", "frame",  "iframe",         "meta-refresh",   "link",
		"img",       "script", "stylesheet",     "link-embed",     "object",
		"embed",     "media",  "poster",         "css-url",
	};
	return (unsigned)kind < LINK_KIND_COUNT ? names[kind] : "unknown";
}

bool link_kind_is_embed(enum link_kind kind)
{
	return kind >= LINK_IMG && kind < LINK_KIND_COUNT;
}

/* ---- helpers ---- */

/* The attribute `name` of the tag, or NULL. */
static const struct html_attr *attr(const struct html_tag *tag, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < tag->nattrs; i++) {
		const struct html_attr *a = &tag->attrs[i];
		if (a->name_len == n && memcmp(a->name, name, n) == 0)
			return a;
	}
	return NULL;
}

static bool attr_equals_nocase(const struct html_attr *a, const char *want)
{
	size_t n = strlen(want);
	return a && a->value_len == n && strncasecmp(a->value, want, n) == 0;
}

/* Does the space- (or comma-) separated list `list` (len bytes) hold `tok`
 * (ASCII case-insensitive)? */
static bool has_token(const char *list, size_t len, const char *tok, bool commas)
{
	size_t tl = strlen(tok);
	const char *p = list, *end = list + len;
	while (p < end) {
		while (p < end && (ascii_is_html_space((unsigned char)*p) || (commas && *p == ',')))
			p++;
		const char *s = p;
		while (p < end && !ascii_is_html_space((unsigned char)*p) && !(commas && *p == ','))
			p++;
		if ((size_t)(p - s) == tl && strncasecmp(s, tok, tl) == 0)
			return true;
	}
	return false;
}

static bool attr_has_token(const struct html_attr *a, const char *tok, bool commas)
{
	return a && has_token(a->value, a->value_len, tok, commas);
}

/* Appends s[0, n) and a NUL to arena a (first_cap its first size), *off
 * receiving where it starts. false when the page's max_bytes would be
 * passed (counted as truncated) or memory runs out (ex->oom). */
static bool arena_put(struct links_extractor *ex, struct string_arena *a, size_t first_cap,
                      const char *s, size_t n, size_t *off)
{
	if (a->len + n + 1 > ex->cfg.max_bytes) {
		ex->page.truncated++;
		return false;
	}
	char *grown = array_room(a->bytes, &a->cap, a->len + n + 1, first_cap);
	if (!grown) {
		ex->oom = true;
		return false;
	}
	a->bytes = grown;
	memcpy(a->bytes + a->len, s, n);
	a->bytes[a->len + n] = '\0';
	*off = a->len;
	a->len += n + 1;
	return true;
}

/* Stores a raw value (n bytes) in the arena; false if a cap is hit (counted). */
static bool raw_store(struct links_extractor *ex, const char *val, size_t n, size_t *off,
                      size_t *len)
{
	if (n > LINKS_MAX_URL_LEN) {
		ex->page.dropped_invalid++;
		return false;
	}
	if (!arena_put(ex, &ex->raw, 4096, val, n, off))
		return false;
	*len = n;
	return true;
}

static void add_raw(struct links_extractor *ex, const char *val, size_t n, enum link_kind kind,
                    bool nofollow)
{
	if (ex->nrl >= ex->cfg.max_links) {
		ex->page.truncated++;
		return;
	}
	struct raw_link *grown = array_grow(ex->rl, &ex->rl_cap, ex->nrl, sizeof *grown, 64);
	if (!grown) {
		ex->oom = true;
		return;
	}
	ex->rl = grown;
	struct raw_link *r = &ex->rl[ex->nrl];
	if (!raw_store(ex, val, n, &r->off, &r->len))
		return;
	r->kind = kind;
	r->nofollow = nofollow;
	ex->nrl++;
}

/* add_raw for an attribute's value; one cut by the tokenizer is invalid. */
static void add_attr_link(struct links_extractor *ex, const struct html_attr *a,
                          enum link_kind kind, bool nofollow)
{
	if (a->value_cut) {
		ex->page.dropped_invalid++;
		return;
	}
	add_raw(ex, a->value, a->value_len, kind, nofollow);
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && ascii_is_html_space((unsigned char)*p))
		p++;
	return p;
}

/* The URL of `<meta http-equiv=refresh content=...>` (HTML5 "shared
 * declarative refresh steps", simplified): "N; url=X", "N,X", "N; 'X'".
 * Returns a pointer into c (len bytes) and sets *ulen, or NULL for none. */
static const char *refresh_url(const char *c, size_t len, size_t *ulen)
{
	const char *end = c + len, *p = skip_ws(c, end);
	if (p == end || !((*p >= '0' && *p <= '9') || *p == '.'))
		return NULL;
	while (p < end && ((*p >= '0' && *p <= '9') || *p == '.'))
		p++;
	p = skip_ws(p, end);
	if (p < end && (*p == ';' || *p == ','))
		p++;
	p = skip_ws(p, end);
	if (end - p >= 3 && strncasecmp(p, "url", 3) == 0) {
		const char *q = skip_ws(p + 3, end);
		if (q < end && *q == '=')
			p = skip_ws(q + 1, end);
	}
	const char *stop = end;
	if (p < end && (*p == '"' || *p == '\'')) {
		char quote = *p++;
		const char *close = memchr(p, quote, (size_t)(end - p));
		if (close)
			stop = close;
	}
	while (stop > p && ascii_is_html_space((unsigned char)stop[-1]))
		stop--;
	if (stop == p)
		return NULL;
	*ulen = (size_t)(stop - p);
	return p;
}

/* ---- what a start tag gives ---- */

/* What a <link rel> token makes of the element. */
enum rel_role {
	REL_NONE,      /* no effect here (nofollow, dns-prefetch, unknown...) */
	REL_HYPERLINK, /* a link type that creates a hyperlink */
	REL_RESOURCE,  /* an external resource the crawler does not fetch */
	REL_EMBED,     /* an external resource that is a page requisite */
	REL_STYLESHEET,
};

struct rel_type {
	const char *name;
	enum rel_role role;
	enum link_kind kind; /* REL_HYPERLINK: the link's kind */
};

/* The HTML Standard's link types (4.6.6) and the microformats registry's
 * navigation types that make a hyperlink on <link>, and the external
 * resource types. Tokens ending in "icon" (apple-touch-icon, mask-icon)
 * are icons too (rel_role). */
static const struct rel_type link_rel_types[] = {
	{ "canonical", REL_HYPERLINK, LINK_CANONICAL },
	{ "next", REL_HYPERLINK, LINK_NEXT },
	{ "prev", REL_HYPERLINK, LINK_PREV },
	{ "previous", REL_HYPERLINK, LINK_PREV },
	{ "alternate", REL_HYPERLINK, LINK_ALTERNATE },
	{ "author", REL_HYPERLINK, LINK_REL },
	{ "bookmark", REL_HYPERLINK, LINK_REL },
	{ "help", REL_HYPERLINK, LINK_REL },
	{ "license", REL_HYPERLINK, LINK_REL },
	{ "search", REL_HYPERLINK, LINK_REL },
	{ "index", REL_HYPERLINK, LINK_REL },
	{ "first", REL_HYPERLINK, LINK_REL },
	{ "last", REL_HYPERLINK, LINK_REL },
	{ "up", REL_HYPERLINK, LINK_REL },
	{ "start", REL_HYPERLINK, LINK_REL },
	{ "contents", REL_HYPERLINK, LINK_REL },
	{ "home", REL_HYPERLINK, LINK_REL },
	{ "tag", REL_HYPERLINK, LINK_REL },
	{ "archives", REL_HYPERLINK, LINK_REL },
	{ "amphtml", REL_HYPERLINK, LINK_REL },
	{ "shortlink", REL_HYPERLINK, LINK_REL },
	{ "stylesheet", REL_STYLESHEET, LINK_STYLESHEET },
	{ "preload", REL_EMBED, LINK_LINK_EMBED },
	{ "modulepreload", REL_EMBED, LINK_LINK_EMBED },
	{ "manifest", REL_EMBED, LINK_LINK_EMBED },
	{ "prefetch", REL_RESOURCE, LINK_REL },
	{ "prerender", REL_RESOURCE, LINK_REL },
	{ "dns-prefetch", REL_RESOURCE, LINK_REL },
	{ "preconnect", REL_RESOURCE, LINK_REL },
	{ "pingback", REL_RESOURCE, LINK_REL },
	{ "expect", REL_RESOURCE, LINK_REL },
	{ "serviceworker", REL_RESOURCE, LINK_REL },
};

/* The row of one rel token t[0, n) (ASCII case-insensitive), or NULL. */
static const struct rel_type *rel_type_of(const char *t, size_t n)
{
	static const struct rel_type icon = { "icon", REL_EMBED, LINK_LINK_EMBED };
	if (n >= 4 && strncasecmp(t + n - 4, "icon", 4) == 0)
		return &icon;
	for (size_t i = 0; i < sizeof link_rel_types / sizeof link_rel_types[0]; i++) {
		const struct rel_type *r = &link_rel_types[i];
		if (strlen(r->name) == n && strncasecmp(t, r->name, n) == 0)
			return r;
	}
	return NULL;
}

/* What a rel value makes of a <link>: the strongest role of its tokens
 * (a stylesheet over any resource over a hyperlink), and for a hyperlink
 * the first kind in link_rel_types order. */
struct rel_verdict {
	enum rel_role role;
	enum link_kind kind;
	bool nofollow;
};

static struct rel_verdict rel_judge(const struct html_attr *rel)
{
	struct rel_verdict v = { REL_NONE, LINK_REL, false };
	const struct rel_type *best = NULL;
	const char *p = rel->value, *end = rel->value + rel->value_len;
	while (p < end) {
		while (p < end && ascii_is_html_space((unsigned char)*p))
			p++;
		const char *s = p;
		while (p < end && !ascii_is_html_space((unsigned char)*p))
			p++;
		if (p == s)
			break;
		if (p - s == 8 && strncasecmp(s, "nofollow", 8) == 0)
			v.nofollow = true;
		const struct rel_type *r = rel_type_of(s, (size_t)(p - s));
		if (r && (!best || r->role > best->role ||
		          (r->role == best->role && r < best && r->role == REL_HYPERLINK)))
			best = r;
	}
	if (best) {
		v.role = best->role;
		v.kind = best->kind;
	}
	return v;
}

struct embed_sink {
	struct links_extractor *ex;
	enum link_kind kind;
};

static void on_embed_url(void *ctx, const char *url, size_t len)
{
	struct embed_sink *sink = ctx;
	add_raw(sink->ex, url, len, sink->kind, false);
}

/* The candidates of a srcset attribute as embeds of `kind`. */
static void add_srcset(struct links_extractor *ex, const struct html_attr *a, enum link_kind kind)
{
	struct embed_sink sink = { ex, kind };
	if (a->value_cut)
		ex->page.dropped_invalid++;
	else
		ex->page.dropped_invalid +=
		        embed_srcset_urls(a->value, a->value_len, on_embed_url, &sink);
}

static void add_css(struct links_extractor *ex, const char *css, size_t len)
{
	struct embed_sink sink = { ex, LINK_CSS_URL };
	ex->page.dropped_invalid += embed_css_urls(css, len, on_embed_url, &sink);
}

static void on_link_element(struct links_extractor *ex, const struct html_tag *tag)
{
	const struct html_attr *rel = attr(tag, "rel"), *href = attr(tag, "href");
	if (!rel)
		return;
	struct rel_verdict v = rel_judge(rel);
	if (v.role == REL_HYPERLINK && href) {
		add_attr_link(ex, href, v.kind, v.nofollow);
	} else if ((v.role == REL_EMBED || v.role == REL_STYLESHEET) && ex->cfg.requisites) {
		if (href)
			add_attr_link(ex, href, v.kind, false);
		const struct html_attr *set = attr(tag, "imagesrcset");
		if (set)
			add_srcset(ex, set, v.kind);
	}
}

/* ---- requisites: what elements embed ---- */

enum embed_value { EMBED_URL, EMBED_SRCSET };

struct embed_attr {
	const char *tag;
	const char *attr;
	enum link_kind kind;
	enum embed_value value;
};

/* The elements and attributes whose values a page embeds (the HTML
 * Standard's, with the legacy background attribute wget also follows).
 * <link> is judged by its rel (on_link_element). */
static const struct embed_attr embed_attrs[] = {
	{ "img", "src", LINK_IMG, EMBED_URL },
	{ "img", "srcset", LINK_IMG, EMBED_SRCSET },
	{ "source", "src", LINK_MEDIA, EMBED_URL },
	{ "source", "srcset", LINK_IMG, EMBED_SRCSET },
	{ "script", "src", LINK_SCRIPT, EMBED_URL },
	{ "object", "data", LINK_OBJECT, EMBED_URL },
	{ "embed", "src", LINK_EMBED, EMBED_URL },
	{ "video", "src", LINK_MEDIA, EMBED_URL },
	{ "video", "poster", LINK_POSTER, EMBED_URL },
	{ "audio", "src", LINK_MEDIA, EMBED_URL },
	{ "track", "src", LINK_MEDIA, EMBED_URL },
	{ "body", "background", LINK_IMG, EMBED_URL },
	{ "table", "background", LINK_IMG, EMBED_URL },
	{ "td", "background", LINK_IMG, EMBED_URL },
	{ "th", "background", LINK_IMG, EMBED_URL },
};

static bool tag_is(const struct html_tag *tag, const char *name)
{
	return tag->name_len == strlen(name) && memcmp(tag->name, name, tag->name_len) == 0;
}

/* The embeds of a start tag: its rows of embed_attrs, an image input's
 * src, and the url()s of its style attribute. */
static void on_embed_tag(struct links_extractor *ex, const struct html_tag *tag)
{
	for (size_t i = 0; i < sizeof embed_attrs / sizeof embed_attrs[0]; i++) {
		const struct embed_attr *e = &embed_attrs[i];
		const struct html_attr *a;
		if (!tag_is(tag, e->tag) || !(a = attr(tag, e->attr)))
			continue;
		if (e->value == EMBED_SRCSET)
			add_srcset(ex, a, e->kind);
		else
			add_attr_link(ex, a, e->kind, false);
	}
	const struct html_attr *a;
	if (tag_is(tag, "input") && attr_equals_nocase(attr(tag, "type"), "image") &&
	    (a = attr(tag, "src")))
		add_attr_link(ex, a, LINK_IMG, false);
	if ((a = attr(tag, "style")) && !a->value_cut)
		add_css(ex, a->value, a->value_len);
}

static void on_meta(struct links_extractor *ex, const struct html_tag *tag)
{
	const struct html_attr *content = attr(tag, "content");
	if (!content || content->value_cut)
		return;
	if (attr_equals_nocase(attr(tag, "http-equiv"), "refresh")) {
		size_t ulen = 0;
		const char *u = refresh_url(content->value, content->value_len, &ulen);
		if (u)
			add_raw(ex, u, ulen, LINK_META_REFRESH, false);
	} else if (attr_equals_nocase(attr(tag, "name"), "robots")) {
		if (attr_has_token(content, "noindex", true) ||
		    attr_has_token(content, "none", true))
			ex->page.noindex = true;
		if (attr_has_token(content, "nofollow", true) ||
		    attr_has_token(content, "none", true))
			ex->page.nofollow = true;
	}
}

static void on_tag(void *ctx, const struct html_tag *tag)
{
	struct links_extractor *ex = ctx;
	if (ex->sh)
		simhash_builder_break(ex->sh);
	ex->in_style = false;
	if (tag->end)
		return;
	if (ex->cfg.requisites) {
		ex->in_style = tag_is(tag, "style");
		on_embed_tag(ex, tag);
	}
	if (tag_is(tag, "a") || tag_is(tag, "area")) {
		const struct html_attr *href = attr(tag, "href");
		if (href)
			add_attr_link(ex, href, tag->name_len == 1 ? LINK_A : LINK_AREA,
			              attr_has_token(attr(tag, "rel"), "nofollow", false));
	} else if (tag_is(tag, "base")) {
		const struct html_attr *href = attr(tag, "href");
		if (href && !ex->have_base && !href->value_cut &&
		    raw_store(ex, href->value, href->value_len, &ex->base_off, &ex->base_len))
			ex->have_base = true;
	} else if (tag_is(tag, "frame") || tag_is(tag, "iframe")) {
		const struct html_attr *src = attr(tag, "src");
		if (src)
			add_attr_link(ex, src, tag->name[0] == 'f' ? LINK_FRAME : LINK_IFRAME,
			              false);
	} else if (tag_is(tag, "link")) {
		on_link_element(ex, tag);
	} else if (tag_is(tag, "meta")) {
		on_meta(ex, tag);
	}
}

static void on_text(void *ctx, const char *s, size_t len)
{
	struct links_extractor *ex = ctx;
	simhash_builder_add(ex->sh, s, len);
}

/* Raw text: a <style> element's is CSS (a script's is not looked at). */
static void on_raw_text(void *ctx, const char *s, size_t len)
{
	struct links_extractor *ex = ctx;
	if (ex->in_style)
		add_css(ex, s, len);
}

/* ---- lifecycle ---- */

int links_extractor_create(const struct links_config *config, struct links_extractor **out)
{
	if (!out)
		return LINKS_EINVAL;
	*out = NULL;
	struct links_extractor *ex = calloc(1, sizeof *ex);
	if (!ex)
		return LINKS_ENOMEM;
	if (config)
		ex->cfg = *config;
	if (ex->cfg.max_links == 0)
		ex->cfg.max_links = LINKS_DEFAULT_MAX_LINKS;
	if (ex->cfg.max_bytes == 0)
		ex->cfg.max_bytes = LINKS_DEFAULT_MAX_BYTES;
	if (!ex->cfg.no_simhash || ex->cfg.focus) {
		ex->sh = simhash_builder_create();
		if (!ex->sh)
			goto fail;
		simhash_builder_set_terms(ex->sh, ex->cfg.focus);
	}
	int resolver_rc = link_resolver_init(&ex->resolver, ex->cfg.url_options);
	ex->tokenizer = html_tokenizer_create();
	ex->decoder = html_decoder_create();
	if (resolver_rc != 0 || !ex->tokenizer || !ex->decoder)
		goto fail;
	ex->callbacks.tag = on_tag;
	ex->callbacks.text = ex->sh ? on_text : NULL;
	ex->callbacks.raw_text = ex->cfg.requisites ? on_raw_text : NULL;
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
	link_resolver_fini(&ex->resolver);
	html_tokenizer_destroy(ex->tokenizer);
	html_decoder_destroy(ex->decoder);
	free(ex->raw.bytes);
	free(ex->rl);
	free(ex->out.bytes);
	free(ex->ol);
	free(ex->links);
	free(ex->base_str);
	free(ex);
}

static void reset(struct links_extractor *ex)
{
	ex->raw.len = 0;
	ex->nrl = 0;
	ex->have_base = false;
	ex->oom = false;
	ex->in_style = false;
	ex->out.len = 0;
	ex->nol = 0;
	ex->nlinks = 0;
	ex->have_canonical = false;
	free(ex->base_str);
	ex->base_str = NULL;
	memset(&ex->page, 0, sizeof ex->page);
	ex->page.focus = FOCUS_SCORE_NONE;
	if (ex->sh)
		simhash_builder_reset(ex->sh);
}

/* Pass 1: the page to UTF-8, then tokenized; raw links land in ex->rl. */
static int parse_pass(struct links_extractor *ex, const char *charset, const char *body, size_t len)
{
	const char *page = NULL;
	size_t page_len = 0;
	if (html_decoder_run(ex->decoder, charset, body, len, &page, &page_len) != 0)
		return LINKS_ENOMEM;
	struct html_tokenizer_stats stats;
	html_tokenize(ex->tokenizer, page, page_len, &ex->callbacks, ex, &stats);
	ex->page.dropped_invalid += stats.cut_values;
	return ex->oom ? LINKS_ENOMEM : LINKS_OK;
}

/* Appends a resolved URL to `out`; false if a cap is hit. */
static bool out_store(struct links_extractor *ex, const char *url, size_t n, size_t *off)
{
	return arena_put(ex, &ex->out, 8192, url, n, off);
}

static int resolve_pass(struct links_extractor *ex)
{
	struct out_link *ol = array_reserve(ex->ol, &ex->ol_cap, ex->nrl, sizeof *ol);
	if (!ol)
		return LINKS_ENOMEM;
	ex->ol = ol;
	/* The document base: the first <base href> resolved against the page
     * when it is an http(s) URL, else the page URL. */
	if (ex->have_base)
		(void)link_resolver_set_base(&ex->resolver, ex->raw.bytes + ex->base_off,
		                             ex->base_len);
	const char *b = NULL;
	size_t blen = 0;
	/* A base whose crawl key is too long is no base: the page URL is. */
	if (link_resolver_key(&ex->resolver, ex->resolver.base, &b, &blen) != LINK_RESOLVE_OK) {
		ex->resolver.base = ex->resolver.page;
		if (link_resolver_key(&ex->resolver, ex->resolver.base, &b, &blen) !=
		    LINK_RESOLVE_OK)
			return LINKS_EINVAL;
	}
	ex->base_str = strndup(b, blen);
	if (!ex->base_str)
		return LINKS_ENOMEM;
	ex->page.base = ex->base_str;
	for (size_t i = 0; i < ex->nrl; i++) {
		const struct raw_link *r = &ex->rl[i];
		const char *u = NULL;
		size_t ulen = 0;
		int v = link_resolve(&ex->resolver, ex->raw.bytes + r->off, r->len, &u, &ulen);
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
	struct link *links = array_reserve(ex->links, &ex->links_cap, ex->nol, sizeof *links);
	if (!links)
		return LINKS_ENOMEM;
	ex->links = links;
	for (size_t i = 0; i < ex->nol; i++) {
		ex->links[i].url = ex->out.bytes + ex->ol[i].off;
		ex->links[i].len = ex->ol[i].len;
		ex->links[i].kind = ex->ol[i].kind;
		ex->links[i].nofollow = ex->ol[i].nofollow;
	}
	ex->nlinks = ex->nol;
	if (ex->have_canonical)
		ex->page.canonical = ex->out.bytes + ex->canonical_off;
	return LINKS_OK;
}

int links_extract(struct links_extractor *ex, const char *page_url, const char *charset,
                  const char *body, size_t len)
{
	if (!ex || !page_url || (!body && len > 0))
		return LINKS_EINVAL;
	reset(ex);
	if (link_resolver_set_page(&ex->resolver, page_url) != LINK_RESOLVE_OK)
		return LINKS_EINVAL;
	int rc = parse_pass(ex, charset, body ? body : "", len);
	if (rc != LINKS_OK && rc != LINKS_ENOMEM)
		return rc;
	int rc2 = resolve_pass(ex);
	if (ex->sh && !ex->cfg.no_simhash)
		ex->page.simhash = simhash_builder_value(ex->sh);
	if (ex->cfg.focus) {
		double sum;
		uint64_t words;
		simhash_builder_focus(ex->sh, &sum, &words);
		ex->page.focus = focus_score(sum, words);
	}
	return rc != LINKS_OK ? rc : rc2;
}

int links_extract_css(struct links_extractor *ex, const char *css_url, const char *body, size_t len)
{
	if (!ex || !css_url || (!body && len > 0))
		return LINKS_EINVAL;
	reset(ex);
	if (link_resolver_set_page(&ex->resolver, css_url) != LINK_RESOLVE_OK)
		return LINKS_EINVAL;
	add_css(ex, body ? body : "", len);
	int rc = resolve_pass(ex);
	return ex->oom ? LINKS_ENOMEM : rc;
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
