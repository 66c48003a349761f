/*
 * embed_urls.c: srcset candidates and CSS url()s (see embed_urls.h).
 *
 * The CSS scan decodes each URL into a buffer of EMBED_URL_MAX bytes on
 * the stack, since escapes make a URL differ from its bytes in the text.
 */
#include "parse/embed_urls.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "frontier/base/ascii.h"
#include "frontier/base/utf8.h"

/* ---- srcset ---- */

/* A valid non-negative integer (digits only) that is above zero. */
static bool positive_integer(const char *s, size_t n)
{
	bool nonzero = false;
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!ascii_is_digit((unsigned char)s[i]))
			return false;
		nonzero |= s[i] != '0';
	}
	return nonzero;
}

/* Digits from *i; how many. */
static size_t digits(const char *s, size_t n, size_t *i)
{
	size_t start = *i;
	while (*i < n && ascii_is_digit((unsigned char)s[*i]))
		(*i)++;
	return *i - start;
}

/* A valid floating-point number (2.3.4.3) that is not negative. */
static bool non_negative_float(const char *s, size_t n)
{
	size_t i = 0;
	bool negative = n > 0 && s[0] == '-';
	i += negative;
	size_t whole = digits(s, n, &i), frac = 0;
	if (i < n && s[i] == '.') {
		i++;
		frac = digits(s, n, &i);
		if (frac == 0)
			return false;
	}
	if (whole == 0 && frac == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		if (digits(s, n, &i) == 0)
			return false;
	}
	if (i != n)
		return false;
	/* "-0", "-0.0": zero, which is allowed */
	for (size_t k = negative; negative && k < n && s[k] != 'e' && s[k] != 'E'; k++)
		if (s[k] >= '1' && s[k] <= '9')
			return false;
	return true;
}

struct srcset_descriptors {
	bool width, density, height, error;
};

/* Judges one descriptor d[0, n) (non-empty) into what the candidate has. */
static void srcset_descriptor(struct srcset_descriptors *sd, const char *d, size_t n)
{
	char last = d[n - 1];
	if (last == 'w' && !sd->width && !sd->density && positive_integer(d, n - 1))
		sd->width = true;
	else if (last == 'x' && !sd->width && !sd->density && !sd->height &&
	         non_negative_float(d, n - 1))
		sd->density = true;
	else if (last == 'h' && !sd->height && !sd->density && positive_integer(d, n - 1))
		sd->height = true;
	else
		sd->error = true;
}

/* The descriptors after a candidate's URL, from *pos to the comma that
 * ends them (consumed) or the end, by the Standard's descriptor tokenizer
 * (a descriptor is contiguous: it runs from its first character to a
 * space or comma outside parentheses); false when they are invalid. */
static bool srcset_parse_descriptors(const char *s, size_t len, size_t *pos)
{
	struct srcset_descriptors sd = { 0 };
	enum { IN_DESCRIPTOR, IN_PARENS, AFTER_DESCRIPTOR } state = IN_DESCRIPTOR;
	size_t i = *pos;
	while (i < len && ascii_is_html_space((unsigned char)s[i]))
		i++;
	size_t start = i;
	bool at_comma = false;
	for (; i < len && !at_comma; i++) {
		unsigned char c = (unsigned char)s[i];
		if (state == IN_PARENS) {
			if (c == ')')
				state = IN_DESCRIPTOR;
		} else if (state == AFTER_DESCRIPTOR) {
			if (!ascii_is_html_space(c)) {
				state = IN_DESCRIPTOR;
				start = i;
				i--; /* reconsume */
			}
		} else if (ascii_is_html_space(c) || c == ',') {
			if (i > start)
				srcset_descriptor(&sd, s + start, i - start);
			at_comma = c == ',';
			state = AFTER_DESCRIPTOR;
		} else if (c == '(') {
			state = IN_PARENS;
		}
	}
	if (!at_comma && state != AFTER_DESCRIPTOR && len > start)
		srcset_descriptor(&sd, s + start, len - start);
	*pos = i;
	return !sd.error && !(sd.height && !sd.width);
}

size_t embed_srcset_urls(const char *s, size_t len, embed_url_fn fn, void *ctx)
{
	size_t pos = 0, dropped = 0;
	for (;;) {
		while (pos < len && (ascii_is_html_space((unsigned char)s[pos]) || s[pos] == ','))
			pos++;
		if (pos >= len)
			break;
		size_t url = pos;
		while (pos < len && !ascii_is_html_space((unsigned char)s[pos]))
			pos++;
		size_t url_len = pos - url;
		bool ok = true;
		if (s[pos - 1] == ',') {
			while (url_len > 0 && s[url + url_len - 1] == ',')
				url_len--;
		} else {
			ok = srcset_parse_descriptors(s, len, &pos);
		}
		if (ok && url_len <= EMBED_URL_MAX)
			fn(ctx, s + url, url_len);
		else
			dropped++;
	}
	return dropped;
}

/* ---- CSS ---- */

struct url_buf {
	size_t n;
	bool over;
	char b[EMBED_URL_MAX];
};

static void ub_put(struct url_buf *ub, const char *s, size_t n)
{
	if (ub->n + n > sizeof ub->b) {
		ub->over = true;
		return;
	}
	memcpy(ub->b + ub->n, s, n);
	ub->n += n;
}

static bool is_css_newline(unsigned char c)
{
	return c == '\n' || c == '\r' || c == '\f';
}

static void ub_put_code_point(struct url_buf *ub, unsigned long cp)
{
	char u[UTF8_MAX_BYTES];
	if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		cp = 0xFFFD;
	ub_put(ub, u, utf8_put((uint32_t)cp, u));
}

/* "Consume an escaped code point" from p (just after a '\' that starts a
 * valid escape, p < end) into ub; returns what follows it. */
static const char *css_escape(const char *p, const char *end, struct url_buf *ub)
{
	if (ascii_hex_value((unsigned char)*p) < 0) {
		ub_put(ub, p, 1);
		return p + 1;
	}
	unsigned long cp = 0;
	for (int k = 0; k < 6 && p < end && ascii_hex_value((unsigned char)*p) >= 0; k++)
		cp = cp * 16 + (unsigned long)ascii_hex_value((unsigned char)*p++);
	if (p < end && (ascii_is_html_space((unsigned char)*p))) {
		if (*p == '\r' && p + 1 < end && p[1] == '\n')
			p++;
		p++;
	}
	ub_put_code_point(ub, cp);
	return p;
}

/* A string token from p (just after its opening quote) into ub; returns
 * what follows it. *bad: a newline ended it (a bad-string token). */
static const char *css_string(const char *p, const char *end, char quote, struct url_buf *ub,
                              bool *bad)
{
	*bad = false;
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		if (c == (unsigned char)quote)
			return p + 1;
		if (is_css_newline(c)) {
			*bad = true;
			return p;
		}
		if (c == '\\') {
			p++;
			if (p == end)
				break;
			if (*p == '\r' && p + 1 < end && p[1] == '\n')
				p += 2;
			else if (is_css_newline((unsigned char)*p))
				p++;
			else
				p = css_escape(p, end, ub);
			continue;
		}
		ub_put(ub, p, 1);
		p++;
	}
	return p;
}

static bool css_nonprintable(unsigned char c)
{
	return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F;
}

/* The rest of a bad url: up to and with the ')' (escapes skipped). */
static const char *css_bad_url_rest(const char *p, const char *end)
{
	while (p < end && *p != ')')
		p += (*p == '\\' && p + 1 < end) ? 2 : 1;
	return p < end ? p + 1 : p;
}

/* An unquoted url token's value from p (after "url(" and spaces) into ub;
 * returns what follows it; *bad for a bad-url token. */
static const char *css_unquoted_url(const char *p, const char *end, struct url_buf *ub, bool *bad)
{
	*bad = false;
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		if (c == ')')
			return p + 1;
		if (ascii_is_html_space(c)) {
			while (p < end && ascii_is_html_space((unsigned char)*p))
				p++;
			if (p == end || *p == ')')
				return p < end ? p + 1 : p;
			*bad = true;
			return css_bad_url_rest(p, end);
		}
		if (c == '"' || c == '\'' || c == '(' || css_nonprintable(c) ||
		    (c == '\\' && (p + 1 == end || is_css_newline((unsigned char)p[1])))) {
			*bad = true;
			return css_bad_url_rest(p, end);
		}
		if (c == '\\') {
			p = css_escape(p + 1, end, ub);
			continue;
		}
		ub_put(ub, p, 1);
		p++;
	}
	return p;
}

static bool is_ident_char(unsigned char c)
{
	return ascii_is_alnum(c) || c == '-' || c == '_' || c >= 0x80;
}

static const char *skip_ws_and_comments(const char *p, const char *end)
{
	for (;;) {
		while (p < end && ascii_is_html_space((unsigned char)*p))
			p++;
		if (end - p < 2 || p[0] != '/' || p[1] != '*')
			return p;
		const char *close = memmem(p + 2, (size_t)(end - p - 2), "*/", 2);
		p = close ? close + 2 : end;
	}
}

struct css_scan {
	embed_url_fn fn;
	void *ctx;
	size_t dropped;
	struct url_buf ub;
};

static void css_emit(struct css_scan *cs, bool bad)
{
	if (cs->ub.over)
		cs->dropped++;
	else if (!bad && cs->ub.n > 0)
		cs->fn(cs->ctx, cs->ub.b, cs->ub.n);
	cs->ub.n = 0;
	cs->ub.over = false;
}

/* After "url(": a quoted or unquoted URL; returns what follows. */
static const char *css_url_function(struct css_scan *cs, const char *p, const char *end)
{
	bool bad = false;
	while (p < end && ascii_is_html_space((unsigned char)*p))
		p++;
	if (p < end && (*p == '"' || *p == '\''))
		p = css_string(p + 1, end, *p, &cs->ub, &bad);
	else
		p = css_unquoted_url(p, end, &cs->ub, &bad);
	css_emit(cs, bad);
	return p;
}

/* After "@import": its string, if it has one (a url() is found anyway). */
static const char *css_import(struct css_scan *cs, const char *p, const char *end)
{
	bool bad = false;
	p = skip_ws_and_comments(p, end);
	if (p < end && (*p == '"' || *p == '\'')) {
		p = css_string(p + 1, end, *p, &cs->ub, &bad);
		css_emit(cs, bad);
	}
	return p;
}

size_t embed_css_urls(const char *css, size_t len, embed_url_fn fn, void *ctx)
{
	struct css_scan cs = { .fn = fn, .ctx = ctx };
	const char *p = css, *end = css + len;
	bool bad;
	while (p < end) {
		unsigned char c = (unsigned char)*p;
		if (c == '/' && p + 1 < end && p[1] == '*') {
			const char *close = memmem(p + 2, (size_t)(end - p - 2), "*/", 2);
			p = close ? close + 2 : end;
		} else if (c == '"' || c == '\'') {
			p = css_string(p + 1, end, (char)c, &cs.ub, &bad);
			cs.ub.n = 0;
			cs.ub.over = false;
		} else if (c == '@' && end - p > 7 && strncasecmp(p + 1, "import", 6) == 0 &&
		           !is_ident_char((unsigned char)p[7])) {
			p = css_import(&cs, p + 7, end);
		} else if (c == '\\') {
			p += p + 1 < end ? 2 : 1;
		} else if (is_ident_char(c)) {
			const char *s = p;
			while (p < end && is_ident_char((unsigned char)*p))
				p++;
			if (p - s == 3 && p < end && *p == '(' && strncasecmp(s, "url", 3) == 0)
				p = css_url_function(&cs, p + 1, end);
		} else {
			p++;
		}
	}
	return cs.dropped;
}
