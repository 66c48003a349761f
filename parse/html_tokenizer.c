/*
 * html_tokenizer.c: the tokenizer states of html_tokenizer.h.
 *
 * The states are not a table: each group of states whose only exits are a
 * few bytes is one function that finds those bytes (memchr/memmem where the
 * state ignores everything else, which is what keeps the pass close to
 * memory speed on text), and returns where the data state resumes. The
 * attribute states of a tag share one loop in scan_tag, since every one of
 * them leads back to "before attribute name" on the same three bytes.
 */
#include "parse/html_tokenizer.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontier/base/ascii.h"
#include "parse/charref.h"

static const char replacement_char[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* The text state the tree builder puts the tokenizer in after a start tag. */
enum text_state { TEXT_NONE, TEXT_RCDATA, TEXT_RAWTEXT, TEXT_SCRIPT, TEXT_PLAINTEXT };

struct html_tokenizer {
	const char *end; /* of the page */
	const struct html_tokenizer_callbacks *cb;
	void *ctx;
	struct html_tokenizer_stats stats;
	int foreign_depth;                     /* open svg/math elements */
	enum text_state pending;               /* set by a start tag, run by the main loop */
	char raw_end[HTML_TOKENIZER_MAX_NAME]; /* the pending text's end tag */
	size_t raw_end_len;

	char tag_name[HTML_TOKENIZER_MAX_NAME];
	size_t tag_name_len;
	/* one more than attrs: where the names of dropped attributes go */
	char names[HTML_TOKENIZER_MAX_ATTRS + 1][HTML_TOKENIZER_MAX_NAME];
	struct html_attr attrs[HTML_TOKENIZER_MAX_ATTRS];
	size_t nattrs;
	size_t scratch_used;
	char scratch[HTML_TOKENIZER_SCRATCH]; /* last: the tokenizer is one allocation */
};

struct html_tokenizer *html_tokenizer_create(void)
{
	return calloc(1, sizeof(struct html_tokenizer));
}

void html_tokenizer_destroy(struct html_tokenizer *t)
{
	free(t);
}

/* Appends one name character, lowercased, NUL as U+FFFD; past the cap the
 * name keeps its prefix. */
static void name_put(char *name, size_t *len, unsigned char c)
{
	if (c == '\0') {
		if (*len + 3 <= HTML_TOKENIZER_MAX_NAME) {
			memcpy(name + *len, replacement_char, 3);
			*len += 3;
		}
		return;
	}
	if (*len < HTML_TOKENIZER_MAX_NAME)
		name[(*len)++] = (char)ascii_to_lower(c);
}

static bool name_is(const char *name, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(name, want, len) == 0;
}

/* Text of the data or RCDATA state, [s, e), its references decoded. */
static void emit_text(struct html_tokenizer *t, const char *s, const char *e)
{
	if (!t->cb->text)
		return;
	while (s < e) {
		const char *amp = memchr(s, '&', (size_t)(e - s));
		if (!amp) {
			t->cb->text(t->ctx, s, (size_t)(e - s));
			return;
		}
		if (amp > s)
			t->cb->text(t->ctx, s, (size_t)(amp - s));
		char one[CHARREF_ONE_MAX];
		size_t one_len = 0;
		size_t used = charref_decode_one(amp, (size_t)(e - amp), false, one, &one_len);
		if (used) {
			t->cb->text(t->ctx, one, one_len);
			s = amp + used;
		} else {
			t->cb->text(t->ctx, amp, 1);
			s = amp + 1;
		}
	}
}

static void emit_raw_text(struct html_tokenizer *t, const char *s, const char *e)
{
	if (t->cb->raw_text && e > s)
		t->cb->raw_text(t->ctx, s, (size_t)(e - s));
}

/* Does the value need the tokenizer's rewriting (references, NUL, CR)? */
static bool value_needs_rewrite(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '&' || c == '\0' || c == '\r')
			return true;
	}
	return false;
}

/* Rewrites a value into the tag's scratch; a->value_cut when it does not fit. */
static void value_rewrite(struct html_tokenizer *t, struct html_attr *a, const char *s, size_t n)
{
	char *o = t->scratch + t->scratch_used;
	size_t room = HTML_TOKENIZER_SCRATCH - t->scratch_used, w = 0;
	for (size_t i = 0; i < n;) {
		char one[CHARREF_ONE_MAX];
		size_t one_len = 1, used = 1;
		one[0] = s[i];
		if (s[i] == '&') {
			size_t ref = charref_decode_one(s + i, n - i, true, one, &one_len);
			if (ref)
				used = ref;
			else
				one_len = 1;
		} else if (s[i] == '\0') {
			memcpy(one, replacement_char, 3);
			one_len = 3;
		} else if (s[i] == '\r') {
			one[0] = '\n';
			if (i + 1 < n && s[i + 1] == '\n')
				used = 2;
		}
		if (w + one_len > room) {
			a->value_cut = true;
			t->stats.cut_values++;
			break;
		}
		memcpy(o + w, one, one_len);
		w += one_len;
		i += used;
	}
	a->value = o;
	a->value_len = w;
	t->scratch_used += w;
}

/* Ends the attribute being named in names[nattrs] with the value [s, s+n):
 * kept unless a previous attribute has its name or the slots are full. */
static void attr_finish(struct html_tokenizer *t, size_t name_len, const char *s, size_t n)
{
	if (t->nattrs == HTML_TOKENIZER_MAX_ATTRS) {
		t->stats.dropped_attrs++;
		return;
	}
	const char *name = t->names[t->nattrs];
	for (size_t i = 0; i < t->nattrs; i++)
		if (t->attrs[i].name_len == name_len &&
		    memcmp(t->attrs[i].name, name, name_len) == 0)
			return;
	struct html_attr *a = &t->attrs[t->nattrs++];
	a->name = name;
	a->name_len = name_len;
	a->value_cut = false;
	if (value_needs_rewrite(s, n)) {
		value_rewrite(t, a, s, n);
	} else {
		a->value = s;
		a->value_len = n;
	}
}

/* Start tags that end foreign content (13.2.6.5). */
static bool is_breakout(const struct html_tag *tag)
{
	static const char *const names[] = {
		"b",       "big",   "blockquote", "body",   "br",     "center", "code", "dd",
		"div",     "dl",    "dt",         "em",     "embed",  "h1",     "h2",   "h3",
		"h4",      "h5",    "h6",         "head",   "hr",     "i",      "img",  "li",
		"listing", "menu",  "meta",       "nobr",   "ol",     "p",      "pre",  "ruby",
		"s",       "small", "span",       "strong", "strike", "sub",    "sup",  "table",
		"tt",      "u",     "ul",         "var",    NULL,
	};
	for (size_t i = 0; names[i]; i++)
		if (name_is(tag->name, tag->name_len, names[i]))
			return true;
	if (!name_is(tag->name, tag->name_len, "font"))
		return false;
	for (size_t i = 0; i < tag->nattrs; i++) {
		const struct html_attr *a = &tag->attrs[i];
		if (name_is(a->name, a->name_len, "color") ||
		    name_is(a->name, a->name_len, "face") || name_is(a->name, a->name_len, "size"))
			return true;
	}
	return false;
}

/* What the tree builder does with a tag, reduced to the tokenizer state it
 * sets next and whether foreign content opens or closes. */
static void after_tag(struct html_tokenizer *t, const struct html_tag *tag)
{
	bool foreign_root = name_is(tag->name, tag->name_len, "svg") ||
	                    name_is(tag->name, tag->name_len, "math");
	if (tag->end) {
		if (foreign_root && t->foreign_depth > 0)
			t->foreign_depth--;
		return;
	}
	if (t->foreign_depth > 0 && is_breakout(tag))
		t->foreign_depth = 0;
	if (foreign_root && !tag->self_closing)
		t->foreign_depth++;
	if (t->foreign_depth > 0)
		return;
	static const struct {
		const char *name;
		enum text_state state;
	} text_elements[] = {
		{ "title", TEXT_RCDATA },        { "textarea", TEXT_RCDATA },
		{ "style", TEXT_RAWTEXT },       { "xmp", TEXT_RAWTEXT },
		{ "iframe", TEXT_RAWTEXT },      { "noembed", TEXT_RAWTEXT },
		{ "noframes", TEXT_RAWTEXT },    { "script", TEXT_SCRIPT },
		{ "plaintext", TEXT_PLAINTEXT },
	};
	for (size_t i = 0; i < sizeof text_elements / sizeof text_elements[0]; i++) {
		if (name_is(tag->name, tag->name_len, text_elements[i].name)) {
			t->pending = text_elements[i].state;
			memcpy(t->raw_end, tag->name, tag->name_len);
			t->raw_end_len = tag->name_len;
			return;
		}
	}
}

static void emit_tag(struct html_tokenizer *t, bool end, bool self_closing)
{
	struct html_tag tag = {
		.name = t->tag_name,
		.name_len = t->tag_name_len,
		.end = end,
		.self_closing = self_closing,
		.attrs = t->attrs,
		.nattrs = t->nattrs,
	};
	t->cb->tag(t->ctx, &tag);
	after_tag(t, &tag);
}

/* From the tag name state (p at the name's first character) to the tag's
 * '>': returns where the data state resumes; a tag cut by the end of the
 * page is not emitted. */
static const char *scan_tag(struct html_tokenizer *t, const char *p, bool end_tag)
{
	const char *e = t->end;
	t->tag_name_len = 0;
	t->nattrs = 0;
	t->scratch_used = 0;
	while (p < e && !ascii_is_html_space((unsigned char)*p) && *p != '/' && *p != '>')
		name_put(t->tag_name, &t->tag_name_len, (unsigned char)*p++);
	for (;;) {
		/* before attribute name; also after attribute value (quoted) and
		 * self-closing start tag, which lead here on all but '>' */
		while (p < e && (ascii_is_html_space((unsigned char)*p) ||
		                 (*p == '/' && (p + 1 == e || p[1] != '>'))))
			p++;
		if (p == e)
			return e;
		if (*p == '/') {
			emit_tag(t, end_tag, true);
			return p + 2;
		}
		if (*p == '>') {
			emit_tag(t, end_tag, false);
			return p + 1;
		}
		/* attribute name: the first character is taken even if it is '=' */
		char *name = t->names[t->nattrs];
		size_t name_len = 0;
		name_put(name, &name_len, (unsigned char)*p++);
		while (p < e && !ascii_is_html_space((unsigned char)*p) && *p != '/' && *p != '>' &&
		       *p != '=')
			name_put(name, &name_len, (unsigned char)*p++);
		/* after attribute name */
		while (p < e && ascii_is_html_space((unsigned char)*p))
			p++;
		if (p == e || *p != '=') {
			attr_finish(t, name_len, p, 0);
			continue;
		}
		p++;
		/* before attribute value */
		while (p < e && ascii_is_html_space((unsigned char)*p))
			p++;
		if (p == e)
			return e;
		if (*p == '"' || *p == '\'') {
			const char *close = memchr(p + 1, *p, (size_t)(e - p - 1));
			if (!close)
				return e;
			attr_finish(t, name_len, p + 1, (size_t)(close - p - 1));
			p = close + 1;
			continue;
		}
		const char *v = p;
		while (p < e && !ascii_is_html_space((unsigned char)*p) && *p != '>')
			p++;
		attr_finish(t, name_len, v, (size_t)(p - v));
	}
}

/* Comment start through comment end states, p after "<!--". */
static const char *scan_comment(const char *p, const char *e)
{
	if (p < e && *p == '>')
		return p + 1; /* <!--> */
	if (e - p >= 2 && p[0] == '-' && p[1] == '>')
		return p + 2; /* <!---> */
	for (;;) {
		const char *dashes = memmem(p, (size_t)(e - p), "--", 2);
		if (!dashes)
			return e;
		p = dashes + 2;
		while (p < e && *p == '-')
			p++;
		if (p == e)
			return e;
		if (*p == '>')
			return p + 1;
		if (*p == '!' && p + 1 < e && p[1] == '>')
			return p + 2; /* --!> */
	}
}

static const char *scan_bogus_comment(const char *p, const char *e)
{
	const char *gt = memchr(p, '>', (size_t)(e - p));
	return gt ? gt + 1 : e;
}

/* CDATA section, p after "<![CDATA[". */
static const char *scan_cdata(struct html_tokenizer *t, const char *p)
{
	const char *close = memmem(p, (size_t)(t->end - p), "]]>", 3);
	const char *stop = close ? close : t->end;
	if (t->cb->text && stop > p)
		t->cb->text(t->ctx, p, (size_t)(stop - p));
	return close ? close + 3 : t->end;
}

/* Markup declaration open, p after "<!". */
static const char *scan_markup_declaration(struct html_tokenizer *t, const char *p)
{
	const char *e = t->end;
	size_t left = (size_t)(e - p);
	if (left >= 2 && p[0] == '-' && p[1] == '-')
		return scan_comment(p + 2, e);
	if (left >= 7 && memcmp(p, "[CDATA[", 7) == 0 && t->foreign_depth > 0)
		return scan_cdata(t, p + 7);
	/* DOCTYPE ends at its first '>' in every one of its states. */
	return scan_bogus_comment(p, e);
}

/* Is q ('<') an appropriate end tag: "</" + the pending name + a delimiter? */
static bool at_end_tag(const struct html_tokenizer *t, const char *q)
{
	size_t n = t->raw_end_len;
	if (n == 0 || (size_t)(t->end - q) < n + 3 || q[1] != '/' ||
	    strncasecmp(q + 2, t->raw_end, n) != 0)
		return false;
	unsigned char d = (unsigned char)q[2 + n];
	return ascii_is_html_space(d) || d == '/' || d == '>';
}

/* RCDATA or RAWTEXT from p: up to the appropriate end tag, scanned as a tag. */
static const char *scan_raw_text(struct html_tokenizer *t, const char *p, bool rcdata)
{
	const char *e = t->end;
	for (const char *q = p; q < e; q++) {
		q = memchr(q, '<', (size_t)(e - q));
		if (!q)
			break;
		if (at_end_tag(t, q)) {
			if (rcdata)
				emit_text(t, p, q);
			else
				emit_raw_text(t, p, q);
			return scan_tag(t, q + 2, true);
		}
	}
	if (rcdata)
		emit_text(t, p, e);
	else
		emit_raw_text(t, p, e);
	return e;
}

/* "<script" + delimiter at q: the double escape start (and end, after '/'). */
static bool at_script_word(const char *q, const char *e)
{
	if (e - q < 7 || strncasecmp(q, "script", 6) != 0)
		return false;
	unsigned char d = (unsigned char)q[6];
	return ascii_is_html_space(d) || d == '/' || d == '>';
}

enum script_state { SD, ESC, ESC_DASH, ESC_DASH_DASH, DESC, DESC_DASH, DESC_DASH_DASH };

/* Script data with its escaped and double escaped states (13.2.5.4,
 * 13.2.5.15-32): where a `</script>` inside `<!-- <script>` does not end it. */
static const char *scan_script_end(struct html_tokenizer *t, const char *p);

static const char *scan_script(struct html_tokenizer *t, const char *p)
{
	const char *q = scan_script_end(t, p);
	emit_raw_text(t, p, q);
	return q == t->end ? q : scan_tag(t, q + 2, true);
}

/* Where the script's end tag starts, or the end of the page. */
static const char *scan_script_end(struct html_tokenizer *t, const char *p)
{
	const char *e = t->end;
	enum script_state st = SD;
	while (p < e) {
		if (st == SD) {
			p = memchr(p, '<', (size_t)(e - p));
			if (!p)
				return e;
			if (at_end_tag(t, p))
				return p;
			if (e - p >= 4 && memcmp(p, "<!--", 4) == 0) {
				st = ESC_DASH_DASH;
				p += 4;
			} else {
				p++;
			}
			continue;
		}
		char c = *p;
		bool escaped = st == ESC || st == ESC_DASH || st == ESC_DASH_DASH;
		if (c == '-') {
			st = st == ESC    ? ESC_DASH
			     : st == DESC ? DESC_DASH
			     : escaped    ? ESC_DASH_DASH
			                  : DESC_DASH_DASH;
			p++;
		} else if (c == '>' && (st == ESC_DASH_DASH || st == DESC_DASH_DASH)) {
			st = SD;
			p++;
		} else if (c == '<' && escaped) {
			if (at_end_tag(t, p))
				return p;
			st = at_script_word(p + 1, e) ? DESC : ESC;
			p += st == DESC ? 8 : 1;
		} else if (c == '<' && p + 1 < e && p[1] == '/' && at_script_word(p + 2, e)) {
			st = ESC;
			p += 9;
		} else {
			st = escaped ? ESC : DESC;
			p++;
		}
	}
	return e;
}

/* Runs the text state a start tag left pending, from p. */
static const char *scan_pending_text(struct html_tokenizer *t, const char *p)
{
	enum text_state st = t->pending;
	t->pending = TEXT_NONE;
	switch (st) {
	case TEXT_RCDATA: return scan_raw_text(t, p, true);
	case TEXT_RAWTEXT: return scan_raw_text(t, p, false);
	case TEXT_SCRIPT: return scan_script(t, p);
	case TEXT_PLAINTEXT:
		if (t->cb->text && p < t->end)
			t->cb->text(t->ctx, p, (size_t)(t->end - p));
		return t->end;
	case TEXT_NONE: break;
	}
	return p;
}

/* Tag open state, lt at '<': returns where the data state resumes. */
static const char *scan_tag_open(struct html_tokenizer *t, const char *lt)
{
	const char *e = t->end, *q = lt + 1;
	if (q == e) {
		emit_text(t, lt, e);
		return e;
	}
	if (ascii_is_alpha((unsigned char)*q))
		return scan_tag(t, q, false);
	if (*q == '!')
		return scan_markup_declaration(t, q + 1);
	if (*q == '?')
		return scan_bogus_comment(q, e);
	if (*q != '/') {
		emit_text(t, lt, q); /* '<' is text; reconsume in data */
		return q;
	}
	/* end tag open */
	if (q + 1 == e) {
		emit_text(t, lt, e);
		return e;
	}
	if (ascii_is_alpha((unsigned char)q[1]))
		return scan_tag(t, q + 1, true);
	if (q[1] == '>')
		return q + 2;
	return scan_bogus_comment(q + 1, e);
}

void html_tokenize_from(struct html_tokenizer *t, const char *page, size_t len,
                        enum html_tokenizer_start start, const char *last_start_tag,
                        const struct html_tokenizer_callbacks *cb, void *ctx,
                        struct html_tokenizer_stats *stats)
{
	static const enum text_state pending[] = {
		[HTML_START_DATA] = TEXT_NONE,           [HTML_START_RCDATA] = TEXT_RCDATA,
		[HTML_START_RAWTEXT] = TEXT_RAWTEXT,     [HTML_START_SCRIPT] = TEXT_SCRIPT,
		[HTML_START_PLAINTEXT] = TEXT_PLAINTEXT, [HTML_START_CDATA] = TEXT_NONE,
	};
	memset(&t->stats, 0, sizeof t->stats);
	t->end = page + len;
	t->cb = cb;
	t->ctx = ctx;
	t->foreign_depth = 0;
	t->pending = pending[start];
	t->raw_end_len = 0;
	if (last_start_tag && strlen(last_start_tag) <= HTML_TOKENIZER_MAX_NAME) {
		t->raw_end_len = strlen(last_start_tag);
		memcpy(t->raw_end, last_start_tag, t->raw_end_len);
	}
	const char *p = start == HTML_START_CDATA ? scan_cdata(t, page) : page;
	p = scan_pending_text(t, p);
	while (p < t->end) {
		const char *lt = memchr(p, '<', (size_t)(t->end - p));
		if (!lt) {
			emit_text(t, p, t->end);
			break;
		}
		emit_text(t, p, lt);
		p = scan_tag_open(t, lt);
		if (t->pending != TEXT_NONE)
			p = scan_pending_text(t, p);
	}
	if (stats)
		*stats = t->stats;
}

void html_tokenize(struct html_tokenizer *t, const char *page, size_t len,
                   const struct html_tokenizer_callbacks *cb, void *ctx,
                   struct html_tokenizer_stats *stats)
{
	html_tokenize_from(t, page, len, HTML_START_DATA, NULL, cb, ctx, stats);
}
