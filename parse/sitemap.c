/*
 * sitemap.c: the sitemap parser (see sitemap.h). Three layers, each feeding
 * the next: the body (gzip detection and bounded inflating), libxml2's push
 * parser with SAX2 callbacks tracking where in the document we are, and the
 * entry (loc trimming, limits, URL parse, scope, crawl key, callback).
 */
#include "parse/sitemap.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <zlib.h>

#include "frontier/url.h"

#define SITEMAP_NS "http://www.sitemaps.org/schemas/sitemap/0.9"

/* Where the tag guard is in the markup (see "tag guard" below). */
enum guard_state {
	GUARD_START = 0,  /* before the first '<' (match: UTF-8 BOM bytes seen) */
	GUARD_TEXT,       /* character data: markup starts at '<' */
	GUARD_LT,         /* after '<' */
	GUARD_BANG,       /* after "<!" */
	GUARD_BANG_DASH,  /* after "<!-" */
	GUARD_CDATA_OPEN, /* within "<![CDATA[" (match: its bytes seen) */
	GUARD_COMMENT,    /* in a comment (match: '-' just seen, up to 2) */
	GUARD_CDATA,      /* in a CDATA section (match: ']' just seen) */
	GUARD_PI,         /* in a processing instruction (match: '?' just seen) */
	GUARD_DECL,       /* in another "<!" declaration (DOCTYPE...) */
	GUARD_TAG         /* in a start or end tag */
};

struct tag_guard {
	enum guard_state state;
	unsigned char quote; /* the quote of the value the guard is in, or 0 */
	unsigned match;
	size_t bytes;    /* of the current markup, from its '<' */
	size_t attrs;    /* '=' outside quotes in the current tag */
	size_t brackets; /* '[' not yet closed in a declaration */
};

/* What the text callbacks are collecting. */
enum capture { CAPTURE_NONE = 0, CAPTURE_LOC, CAPTURE_LASTMOD, CAPTURE_PRIORITY };

/* A trimmed text of at most `cap` bytes: leading white space skipped,
 * trailing white space left out by `content_end`, which counts every byte
 * after the leading space even when the buffer is full, so an overlong text
 * is known as such. */
struct trimmed_text {
	char *buf; /* cap + 1 bytes */
	size_t cap;
	size_t total;       /* bytes after the leading white space */
	size_t content_end; /* total up to the last non-space byte */
};

struct sitemap_parser {
	size_t max_locs, max_bytes, max_tag_bytes, max_attributes;
	unsigned max_depth;
	enum sitemap_scope scope_rule;

	struct url *loc_url, *scope_url;
	char *key; /* crawl key of the current loc */
	size_t key_cap;
	struct trimmed_text loc, lastmod, priority;
	char priority_buf[SITEMAP_PRIORITY_MAX + 1];

	xmlSAXHandler sax;
	xmlParserCtxtPtr ctxt;
	z_stream z;
	bool z_ready; /* inflateInit2 done (kept across documents) */
	unsigned char *zout;

	/* The document being parsed. */
	bool begun;
	bool stopped; /* a problem ended it: later input is ignored */
	bool nomem;
	bool started_body; /* first bytes seen: gzip decided */
	bool gzip, gzip_ended;
	unsigned char magic[2];
	size_t magic_len;
	struct tag_guard guard;
	unsigned depth;
	bool in_entry, entry_has_loc;
	enum capture capture;
	size_t entries;
	sitemap_entry_fn fn;
	void *arg;
	struct sitemap_result res;
};

const char *sitemap_strerror(int err)
{
	switch (err) {
	case SITEMAP_OK: return "success";
	case SITEMAP_ENOMEM: return "out of memory";
	case SITEMAP_EINVAL: return "invalid argument";
	case SITEMAP_EPARSER: return "could not create a parser";
	default: return "unknown error";
	}
}

const char *sitemap_kind_name(enum sitemap_kind kind)
{
	switch (kind) {
	case SITEMAP_KIND_URLSET: return "urlset";
	case SITEMAP_KIND_INDEX: return "sitemapindex";
	default: return "unknown";
	}
}

const char *sitemap_problem_name(enum sitemap_problem problem)
{
	switch (problem) {
	case SITEMAP_FINE: return "fine";
	case SITEMAP_MALFORMED: return "malformed";
	case SITEMAP_NOT_SITEMAP: return "not-sitemap";
	case SITEMAP_TOO_DEEP: return "too-deep";
	case SITEMAP_TRUNCATED: return "truncated";
	case SITEMAP_BAD_GZIP: return "bad-gzip";
	case SITEMAP_STOPPED: return "stopped";
	default: return "unknown";
	}
}

/* ---- trimmed text ---- */

static bool is_xml_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void text_reset(struct trimmed_text *t)
{
	t->total = 0;
	t->content_end = 0;
}

static void text_append(struct trimmed_text *t, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool space = is_xml_space(c);
		if (space && t->total == 0)
			continue;
		if (t->total < t->cap)
			t->buf[t->total] = (char)c;
		t->total++;
		if (!space)
			t->content_end = t->total;
	}
}

/* The trimmed text, NUL-terminated, or NULL when longer than the cap. */
static const char *text_get(struct trimmed_text *t, size_t *len)
{
	if (t->content_end > t->cap)
		return NULL;
	t->buf[t->content_end] = '\0';
	*len = t->content_end;
	return t->buf;
}

/* ---- problems ---- */

/* Records the document's first problem and stops it. */
static void stop_with(struct sitemap_parser *p, enum sitemap_problem problem, const char *message)
{
	if (p->res.problem == SITEMAP_FINE) {
		p->res.problem = problem;
		snprintf(p->res.message, sizeof p->res.message, "%s", message);
	}
	p->stopped = true;
	if (p->ctxt)
		xmlStopParser(p->ctxt);
}

/* libxml2's structured error handler: the first error of the document, as
 * "line N: message" (warnings, such as an undeclared entity in a document
 * with a DTD, are ignored). */
static void on_xml_error(void *arg, xmlErrorPtr err)
{
	struct sitemap_parser *p = arg;
	if (!err || err->level < XML_ERR_ERROR || p->stopped)
		return;
	if (err->code == XML_ERR_NO_MEMORY)
		p->nomem = true;
	char msg[sizeof p->res.message];
	const char *text = err->message ? err->message : "XML error";
	size_t tlen = strlen(text);
	while (tlen > 0 && is_xml_space((unsigned char)text[tlen - 1]))
		tlen--; /* libxml2's messages end with a newline */
	snprintf(msg, sizeof msg, "line %d: %.*s", err->line, (int)tlen, text);
	stop_with(p, SITEMAP_MALFORMED, msg);
}

/* ---- entries ---- */

static bool host_equal(const struct url *a, const struct url *b)
{
	size_t alen, blen;
	const char *ah = url_host(a, &alen), *bh = url_host(b, &blen);
	return alen == blen && memcmp(ah, bh, alen) == 0;
}

/* The scope rule: is the parsed loc one this sitemap may list? */
static bool loc_in_scope(const struct sitemap_parser *p)
{
	const struct url *loc = p->loc_url, *scope = p->scope_url;
	if (p->scope_rule == SITEMAP_SCOPE_ANY)
		return true;
	if (!host_equal(loc, scope))
		return false;
	if (p->scope_rule == SITEMAP_SCOPE_HOST)
		return true;
	size_t ls, ss, lp, sp;
	const char *lscheme = url_scheme(loc, &ls), *sscheme = url_scheme(scope, &ss);
	if (ls != ss || memcmp(lscheme, sscheme, ls) != 0 ||
	    url_port_effective(loc) != url_port_effective(scope))
		return false;
	const char *lpath = url_path(loc, &lp), *spath = url_path(scope, &sp);
	while (sp > 0 && spath[sp - 1] != '/')
		sp--; /* the scope URL's directory, with its final '/' */
	return lp >= sp && memcmp(lpath, spath, sp) == 0;
}

/* The entry's <priority>, 0.0..1.0, or -1 (none, or no such number). */
static double entry_priority(struct sitemap_parser *p)
{
	size_t len;
	const char *s = p->priority.total > 0 ? text_get(&p->priority, &len) : NULL;
	if (!s || p->res.kind != SITEMAP_KIND_URLSET)
		return -1;
	char *end;
	double v = strtod(s, &end);
	return end == s + len && v >= 0 && v <= 1 ? v : -1;
}

int sitemap_priority_tier(double priority)
{
	if (priority < 0)
		return 0;
	double t = (priority - 0.5) * 6;
	return (int)(t < 0 ? t - 0.5 : t + 0.5);
}

/* The end of an entry element: counts it, checks its loc and emits it. */
static void entry_end(struct sitemap_parser *p)
{
	size_t raw_len = 0, key_len = 0, lm_len = 0;
	if (!p->entry_has_loc || p->loc.total == 0) {
		p->res.empty++;
		return;
	}
	if (++p->entries > p->max_locs) {
		p->res.dropped_over_limit++;
		return;
	}
	const char *raw = text_get(&p->loc, &raw_len);
	if (!raw) {
		p->res.too_long++;
		return;
	}
	enum url_error e = url_parse(p->loc_url, raw, raw_len, NULL);
	if (e == URL_OK && !url_is_http(p->loc_url))
		e = URL_ERR_NOT_HTTP;
	if (e == URL_OK && !loc_in_scope(p)) {
		p->res.out_of_scope++;
		return;
	}
	if (e == URL_OK)
		e = url_crawl_key(p->loc_url, p->key, p->key_cap, &key_len);
	if (e != URL_OK) {
		if (e == URL_ERR_TOO_LONG)
			p->res.too_long++;
		else
			p->res.invalid++;
		return;
	}
	struct sitemap_entry entry = {
		.url = p->key,
		.len = key_len,
		.kind = p->res.kind,
		.lastmod = p->lastmod.total > 0 ? text_get(&p->lastmod, &lm_len) : NULL,
		.priority = entry_priority(p),
	};
	p->res.locs++;
	if (p->fn && p->fn(&entry, p->arg) != 0)
		stop_with(p, SITEMAP_STOPPED, "stopped by the caller");
}

/* ---- SAX callbacks ---- */

static bool name_is(const xmlChar *name, const char *want)
{
	return strcmp((const char *)name, want) == 0;
}

static void on_root(struct sitemap_parser *p, const xmlChar *name, const xmlChar *uri)
{
	if (name_is(name, "urlset")) {
		p->res.kind = SITEMAP_KIND_URLSET;
	} else if (name_is(name, "sitemapindex")) {
		p->res.kind = SITEMAP_KIND_INDEX;
	} else {
		char msg[sizeof p->res.message];
		snprintf(msg, sizeof msg, "root element <%.64s> is neither urlset nor sitemapindex",
		         (const char *)name);
		stop_with(p, SITEMAP_NOT_SITEMAP, msg);
		return;
	}
	p->res.foreign_namespace = !uri || !name_is(uri, SITEMAP_NS);
}

static void on_start(void *arg, const xmlChar *name, const xmlChar *prefix, const xmlChar *uri,
                     int nb_namespaces, const xmlChar **namespaces, int nb_attributes,
                     int nb_defaulted, const xmlChar **attributes)
{
	(void)prefix, (void)nb_namespaces, (void)namespaces, (void)nb_attributes;
	(void)nb_defaulted, (void)attributes;
	struct sitemap_parser *p = arg;
	if (p->stopped)
		return;
	p->depth++;
	if (p->depth > p->max_depth) {
		stop_with(p, SITEMAP_TOO_DEEP, "elements nested too deep");
		return;
	}
	const char *entry_name = p->res.kind == SITEMAP_KIND_INDEX ? "sitemap" : "url";
	if (p->depth == 1) {
		on_root(p, name, uri);
	} else if (p->depth == 2 && name_is(name, entry_name)) {
		p->in_entry = true;
		p->entry_has_loc = false;
		text_reset(&p->loc);
		text_reset(&p->lastmod);
		text_reset(&p->priority);
	} else if (p->depth == 3 && p->in_entry && name_is(name, "loc") && !p->entry_has_loc) {
		p->capture = CAPTURE_LOC;
		p->entry_has_loc = true;
	} else if (p->depth == 3 && p->in_entry && name_is(name, "lastmod")) {
		p->capture = CAPTURE_LASTMOD;
		text_reset(&p->lastmod);
	} else if (p->depth == 3 && p->in_entry && name_is(name, "priority")) {
		p->capture = CAPTURE_PRIORITY;
		text_reset(&p->priority);
	}
}

static void on_end(void *arg, const xmlChar *name, const xmlChar *prefix, const xmlChar *uri)
{
	(void)name, (void)prefix, (void)uri;
	struct sitemap_parser *p = arg;
	if (p->stopped || p->depth == 0)
		return;
	if (p->depth == 3)
		p->capture = CAPTURE_NONE;
	if (p->depth == 2 && p->in_entry) {
		p->in_entry = false;
		entry_end(p);
	}
	p->depth--;
}

static void on_text(void *arg, const xmlChar *text, int len)
{
	struct sitemap_parser *p = arg;
	if (p->stopped || len <= 0)
		return;
	if (p->capture == CAPTURE_LOC)
		text_append(&p->loc, (const char *)text, (size_t)len);
	else if (p->capture == CAPTURE_LASTMOD)
		text_append(&p->lastmod, (const char *)text, (size_t)len);
	else if (p->capture == CAPTURE_PRIORITY)
		text_append(&p->priority, (const char *)text, (size_t)len);
}

/* Entity references resolve to the five predefined entities only: every
 * other one is undeclared, whatever a DTD says, so nothing expands. */
static xmlEntityPtr on_get_entity(void *arg, const xmlChar *name)
{
	(void)arg;
	return xmlGetPredefinedEntity(name);
}

/* ---- lifecycle ---- */

/* Frees the document's libxml2 context, and the scratch document libxml2
 * builds (for expat compatibility) to record a DTD's entity declarations
 * in SAX mode: the context does not free it. */
static void context_free(struct sitemap_parser *p)
{
	if (!p->ctxt)
		return;
	if (p->ctxt->myDoc)
		xmlFreeDoc(p->ctxt->myDoc);
	p->ctxt->myDoc = NULL;
	xmlFreeParserCtxt(p->ctxt);
	p->ctxt = NULL;
}

void sitemap_parser_destroy(struct sitemap_parser *p)
{
	if (!p)
		return;
	context_free(p);
	if (p->z_ready)
		inflateEnd(&p->z);
	url_destroy(p->loc_url);
	url_destroy(p->scope_url);
	free(p->key);
	free(p->loc.buf);
	free(p->lastmod.buf);
	free(p->zout);
	free(p);
}

int sitemap_parser_create(const struct sitemap_config *config, struct sitemap_parser **out)
{
	if (!out)
		return SITEMAP_EINVAL;
	*out = NULL;
	struct sitemap_config defaults = { 0 };
	const struct sitemap_config *cfg = config ? config : &defaults;
	xmlInitParser();
	struct sitemap_parser *p = calloc(1, sizeof *p);
	if (!p)
		return SITEMAP_ENOMEM;
	p->max_locs = cfg->max_locs ? cfg->max_locs : SITEMAP_MAX_LOCS;
	p->max_bytes = cfg->max_bytes ? cfg->max_bytes : SITEMAP_MAX_BYTES;
	p->max_depth = cfg->max_depth ? cfg->max_depth : SITEMAP_DEFAULT_MAX_DEPTH;
	p->max_tag_bytes = cfg->max_tag_bytes ? cfg->max_tag_bytes : SITEMAP_MAX_TAG_BYTES;
	p->max_attributes = cfg->max_attributes ? cfg->max_attributes : SITEMAP_MAX_ATTRIBUTES;
	p->scope_rule = cfg->scope;
	const struct url_options *uo = cfg->url_options;
	size_t max_len = uo && uo->max_len ? uo->max_len : URL_DEFAULT_MAX_LEN;
	p->loc_url = url_create(uo);
	p->scope_url = url_create(uo);
	/* A crawl key is at most max_len bytes and never longer than its href. */
	size_t href_cap = p->loc_url ? url_href_cap(p->loc_url) : 0;
	p->key_cap = (max_len > href_cap ? max_len : href_cap) + 1;
	p->key = malloc(p->key_cap);
	p->loc.cap = max_len;
	p->loc.buf = malloc(max_len + 1);
	p->lastmod.cap = SITEMAP_LASTMOD_MAX;
	p->priority.cap = SITEMAP_PRIORITY_MAX;
	p->priority.buf = p->priority_buf;
	p->lastmod.buf = malloc(SITEMAP_LASTMOD_MAX + 1);
	p->zout = malloc(SITEMAP_INFLATE_CHUNK);
	if (!p->loc_url || !p->scope_url || !p->key || !p->loc.buf || !p->lastmod.buf || !p->zout) {
		sitemap_parser_destroy(p);
		return SITEMAP_ENOMEM;
	}
	/* Only what we need: no entity but the predefined ones (getEntity), no
	 * DTD (internalSubset, externalSubset, resolveEntity), so nothing expands
	 * and nothing is loaded. */
	p->sax.initialized = XML_SAX2_MAGIC;
	p->sax.startElementNs = on_start;
	p->sax.endElementNs = on_end;
	p->sax.characters = on_text;
	p->sax.cdataBlock = on_text;
	p->sax.getEntity = on_get_entity;
	p->sax.serror = on_xml_error;
	*out = p;
	return SITEMAP_OK;
}

/* Drops the previous document's state (not the buffers). */
static void document_reset(struct sitemap_parser *p)
{
	context_free(p);
	p->begun = p->stopped = p->nomem = false;
	p->started_body = p->gzip = p->gzip_ended = false;
	p->magic_len = 0;
	memset(&p->guard, 0, sizeof p->guard);
	p->depth = 0;
	p->in_entry = p->entry_has_loc = false;
	p->capture = CAPTURE_NONE;
	p->entries = 0;
	p->fn = NULL;
	p->arg = NULL;
	memset(&p->res, 0, sizeof p->res);
}

int sitemap_begin(struct sitemap_parser *p, const char *sitemap_url, const char *scope_url,
                  sitemap_entry_fn fn, void *arg)
{
	if (!p || !sitemap_url)
		return SITEMAP_EINVAL;
	document_reset(p);
	const char *scope = scope_url ? scope_url : sitemap_url;
	if (url_parse(p->scope_url, sitemap_url, strlen(sitemap_url), NULL) != URL_OK ||
	    !url_is_http(p->scope_url))
		return SITEMAP_EINVAL;
	if (url_parse(p->scope_url, scope, strlen(scope), NULL) != URL_OK ||
	    !url_is_http(p->scope_url))
		return SITEMAP_EINVAL;
	p->ctxt = xmlCreatePushParserCtxt(&p->sax, p, NULL, 0, sitemap_url);
	if (!p->ctxt)
		return SITEMAP_EPARSER;
	/* UTF-8 whatever the document declares (the protocol's encoding, and
	 * the one the tag guard reads) */
	xmlCtxtUseOptions(p->ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING |
	                                   XML_PARSE_IGNORE_ENC);
	p->fn = fn;
	p->arg = arg;
	p->begun = true;
	return SITEMAP_OK;
}

/* ---- tag guard ----
 *
 * libxml2's check for repeated attributes is quadratic in their number: a
 * <urlset> of 160,000 attributes (1.6 MB) took 9.5 s. So the bytes are
 * scanned before libxml2 sees them, and a start or end tag, processing
 * instruction or declaration (<!DOCTYPE...) longer than max_tag_bytes, or
 * a tag of more than max_attributes attributes ('=' outside quoted values),
 * makes the document malformed at its '<': what came before is parsed
 * (its entries emitted), the rest is not. Comments and CDATA sections are
 * passed over whatever their length: each ends at a fixed sequence. Text
 * goes by memchr to the next '<'; markup, a few bytes a tag, byte by byte.
 * Bytes are bytes of UTF-8 (the protocol's encoding; libxml2 is told to
 * ignore an encoding declaration): a document that does not begin, after
 * an optional BOM and white space, with '<' and a byte other than NUL
 * (UTF-16, UTF-32, EBCDIC, whose markup the guard would not see) is
 * malformed at once.
 */

static void guard_value_byte(struct tag_guard *g, unsigned char c)
{
	if (g->quote != 0) {
		if (c == g->quote)
			g->quote = 0;
	} else if (c == '"' || c == '\'') {
		g->quote = c;
	} else if (g->state == GUARD_TAG) {
		if (c == '=')
			g->attrs++;
		else if (c == '>')
			g->state = GUARD_TEXT;
	} else if (c == '[') {
		g->brackets++;
	} else if (c == ']' && g->brackets > 0) {
		g->brackets--;
	} else if (c == '>' && g->brackets == 0) {
		g->state = GUARD_TEXT;
	}
}

/* A byte of markup after "<" (not a comment's or CDATA's content). */
static void guard_markup_byte(struct tag_guard *g, unsigned char c)
{
	static const char cdata[] = "[CDATA[";
	switch (g->state) {
	case GUARD_LT:
		if (c == '!' || c == '?') {
			g->state = c == '!' ? GUARD_BANG : GUARD_PI;
			return;
		}
		g->state = GUARD_TAG;
		break;
	case GUARD_BANG:
		if (c == '-' || c == '[') {
			g->state = c == '-' ? GUARD_BANG_DASH : GUARD_CDATA_OPEN;
			g->match = 1;
			return;
		}
		g->state = GUARD_DECL;
		break;
	case GUARD_BANG_DASH:
		g->state = c == '-' ? GUARD_COMMENT : GUARD_DECL;
		g->match = 0;
		if (c == '-')
			return;
		break;
	case GUARD_CDATA_OPEN:
		if (c == (unsigned char)cdata[g->match]) {
			if (++g->match == sizeof cdata - 1) {
				g->state = GUARD_CDATA;
				g->match = 0;
			}
			return;
		}
		g->state = GUARD_DECL;
		break;
	case GUARD_PI:
		if (c == '>' && g->match)
			g->state = GUARD_TEXT;
		g->match = c == '?';
		return;
	default: break;
	}
	guard_value_byte(g, c);
}

/* In a tag: the bytes up to the next one that matters (a quote, '=' or
 * '>' outside a value; the closing quote in one), at most one past the
 * tag limit, counted into g->bytes. Returns how many. */
static size_t guard_tag_run(struct tag_guard *g, const char *data, size_t len, size_t max)
{
	size_t room = g->bytes < max ? max - g->bytes : 0, n = len < room ? len : room, k = 0;
	if (g->quote != 0) {
		const char *q = memchr(data, g->quote, n);
		k = q ? (size_t)(q - data) : n;
	} else {
		while (k < n && data[k] != '"' && data[k] != '\'' && data[k] != '=' &&
		       data[k] != '>')
			k++;
	}
	g->bytes += k;
	return k;
}

/* Scans data[len]: len when all its markup is within the limits, else
 * the offset to cut the document at (the '<' of the markup past a limit,
 * 0 when that began in an earlier call), with *why set. */
static size_t guard_scan(struct sitemap_parser *p, const char *data, size_t len, const char **why)
{
	static const char bom[] = "\xEF\xBB\xBF";
	struct tag_guard *g = &p->guard;
	size_t start = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)data[i];
		if (g->state == GUARD_START && c != '<') {
			if (g->match < 3 && c == (unsigned char)bom[g->match]) {
				g->match++;
				continue;
			}
			if (g->match % 3 == 0 && is_xml_space(c))
				continue;
			*why = "not an XML document in UTF-8";
			return start;
		}
		if (g->state == GUARD_LT && c == 0) {
			*why = "not an XML document in UTF-8";
			return start;
		}
		if (g->state == GUARD_TEXT || g->state == GUARD_START) {
			const char *lt = memchr(data + i, '<', len - i);
			if (!lt)
				return len;
			start = i = (size_t)(lt - data);
			memset(g, 0, sizeof *g);
			g->state = GUARD_LT;
			g->bytes = 1;
			continue;
		}
		if (g->state == GUARD_COMMENT || g->state == GUARD_CDATA) {
			unsigned char closing = g->state == GUARD_COMMENT ? '-' : ']';
			if (c == '>' && g->match >= 2)
				g->state = GUARD_TEXT;
			g->match = c == closing ? g->match + (g->match < 2) : 0;
			continue;
		}
		if (g->state == GUARD_TAG) {
			i += guard_tag_run(g, data + i, len - i, p->max_tag_bytes);
			if (i == len)
				break;
			c = (unsigned char)data[i];
		}
		guard_markup_byte(g, c);
		if (++g->bytes > p->max_tag_bytes) {
			*why = "markup longer than the tag limit";
			return start;
		}
		if (g->attrs > p->max_attributes) {
			*why = "a tag with more attributes than the limit";
			return start;
		}
	}
	return len;
}

/* ---- body layer ---- */

/* Hands uncompressed bytes to libxml2, up to max_bytes in all, each window
 * through the tag guard first. */
static void feed_xml(struct sitemap_parser *p, const char *data, size_t len)
{
	while (len > 0 && !p->stopped) {
		size_t room = p->max_bytes - p->res.bytes;
		if (room == 0) {
			stop_with(p, SITEMAP_TRUNCATED, "uncompressed size limit reached");
			return;
		}
		size_t n = len < room ? len : room;
		if (n > SITEMAP_INFLATE_CHUNK)
			n = SITEMAP_INFLATE_CHUNK; /* libxml2 copies its input: keep it a window */
		const char *why = NULL;
		size_t ok = guard_scan(p, data, n, &why);
		p->res.bytes += ok;
		if (ok > 0)
			xmlParseChunk(p->ctxt, data, (int)ok, 0);
		if (why != NULL) {
			stop_with(p, SITEMAP_MALFORMED, why);
			return;
		}
		data += n;
		len -= n;
		if (p->res.bytes == p->max_bytes && !p->stopped && len > 0)
			stop_with(p, SITEMAP_TRUNCATED, "uncompressed size limit reached");
	}
}

static int gzip_start(struct sitemap_parser *p)
{
	int zrc = p->z_ready ? inflateReset2(&p->z, 16 + MAX_WBITS)
	                     : inflateInit2(&p->z, 16 + MAX_WBITS);
	if (zrc == Z_MEM_ERROR)
		return SITEMAP_ENOMEM;
	if (zrc != Z_OK)
		return SITEMAP_EPARSER;
	p->z_ready = true;
	p->gzip = p->res.gzip = true;
	return SITEMAP_OK;
}

/* Inflates `len` bytes and feeds the output to libxml2; a member that ends
 * followed by another gzip member goes on (concatenated gzip is one file);
 * anything else after the last member is ignored. */
static int feed_gzip(struct sitemap_parser *p, const unsigned char *data, size_t len)
{
	while (!p->stopped && !p->gzip_ended) {
		uInt in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
		p->z.next_in = (unsigned char *)data;
		p->z.avail_in = in;
		p->z.next_out = p->zout;
		p->z.avail_out = SITEMAP_INFLATE_CHUNK;
		int zrc = inflate(&p->z, Z_NO_FLUSH);
		size_t used = in - p->z.avail_in;
		data += used;
		len -= used;
		size_t produced = SITEMAP_INFLATE_CHUNK - p->z.avail_out;
		feed_xml(p, (const char *)p->zout, produced);
		if (zrc == Z_STREAM_END) {
			if (len >= 2 && data[0] == 0x1f && data[1] == 0x8b)
				inflateReset(&p->z);
			else
				p->gzip_ended = true;
		} else if (zrc == Z_MEM_ERROR) {
			p->nomem = true;
			stop_with(p, SITEMAP_BAD_GZIP, "out of memory while inflating");
			return SITEMAP_ENOMEM;
		} else if (zrc != Z_OK && zrc != Z_BUF_ERROR) {
			stop_with(p, SITEMAP_BAD_GZIP, p->z.msg ? p->z.msg : "corrupt gzip stream");
		} else if ((len == 0 && p->z.avail_out > 0) || (used == 0 && produced == 0)) {
			break; /* all input taken and no output pending: needs more input */
		}
	}
	return SITEMAP_OK;
}

/* Decides gzip or not from the first two bytes (which may come apart),
 * then feeds the bytes seen so far. */
static int feed_start(struct sitemap_parser *p, const char **data, size_t *len)
{
	while (p->magic_len < 2 && *len > 0) {
		p->magic[p->magic_len++] = (unsigned char)**data;
		(*data)++;
		(*len)--;
	}
	if (p->magic_len < 2 && *len == 0)
		return SITEMAP_OK; /* not decided yet (or sitemap_finish decides) */
	p->started_body = true;
	if (p->magic_len == 2 && p->magic[0] == 0x1f && p->magic[1] == 0x8b) {
		int rc = gzip_start(p);
		if (rc != SITEMAP_OK)
			return rc;
		return feed_gzip(p, p->magic, p->magic_len);
	}
	feed_xml(p, (const char *)p->magic, p->magic_len);
	return SITEMAP_OK;
}

int sitemap_feed(struct sitemap_parser *p, const char *data, size_t len)
{
	if (!p || !p->begun || (!data && len > 0))
		return SITEMAP_EINVAL;
	if (!p->started_body) {
		int rc = feed_start(p, &data, &len);
		if (rc != SITEMAP_OK || !p->started_body)
			return rc;
	}
	if (p->stopped || len == 0)
		return SITEMAP_OK;
	if (p->gzip)
		return feed_gzip(p, (const unsigned char *)data, len);
	feed_xml(p, data, len);
	return SITEMAP_OK;
}

int sitemap_finish(struct sitemap_parser *p, struct sitemap_result *result)
{
	if (!p || !p->begun || !result)
		return SITEMAP_EINVAL;
	if (!p->started_body && p->magic_len > 0) {
		p->started_body = true; /* a one-byte body */
		feed_xml(p, (const char *)p->magic, p->magic_len);
	}
	if (p->gzip && !p->gzip_ended && !p->stopped)
		stop_with(p, SITEMAP_BAD_GZIP, "gzip stream cut short");
	if (!p->stopped)
		xmlParseChunk(p->ctxt, NULL, 0, 1); /* end of document: reports what is missing */
	if (!p->stopped && p->res.kind == SITEMAP_KIND_UNKNOWN)
		stop_with(p, SITEMAP_MALFORMED, "no root element");
	*result = p->res;
	bool nomem = p->nomem;
	context_free(p);
	p->begun = false;
	return nomem ? SITEMAP_ENOMEM : SITEMAP_OK;
}

int sitemap_parse(struct sitemap_parser *p, const char *sitemap_url, const char *scope_url,
                  const char *body, size_t len, sitemap_entry_fn fn, void *arg,
                  struct sitemap_result *result)
{
	if (!result)
		return SITEMAP_EINVAL;
	int rc = sitemap_begin(p, sitemap_url, scope_url, fn, arg);
	if (rc != SITEMAP_OK)
		return rc;
	rc = sitemap_feed(p, body, len);
	int frc = sitemap_finish(p, result);
	return rc != SITEMAP_OK ? rc : frc;
}
