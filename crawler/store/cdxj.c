/* cdxj.c: CDXJ lines as warcio.js writes them (see cdxj.h). */
#include "crawler/store/cdxj.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/base/utf8.h"
#include "frontier/url.h"

#define CDXJ_DEFAULT_URL_MAX 65536u

struct cdxj_indexer {
	struct url *url;
	size_t max_url_len;
	struct cdxj_text line;
	struct cdxj_text key;   /* urlkey */
	struct cdxj_text work;  /* the URL being keyed, then query arguments */
	struct cdxj_text head;  /* the decoded header block */
	struct cdxj_text value; /* one header value being gathered */
	struct cdxj_text mime;  /* Content-Type values joined */
	const char **args;      /* query arguments, for sorting */
	size_t args_cap;
};

const char *cdxj_strerror(enum cdxj_error err)
{
	switch (err) {
	case CDXJ_OK: return "ok";
	case CDXJ_SKIP: return "record not indexed";
	case CDXJ_ERR_NOMEM: return "out of memory";
	case CDXJ_ERR_INVALID: return "not a CDXJ line of this crawler";
	}
	return "unknown error";
}

/* ---------- text ---------- */

int cdxj_text_add(struct cdxj_text *t, const char *s, size_t len)
{
	char *p = array_room(t->p, &t->cap, t->len + len + 1, 256);
	if (p == NULL)
		return -1;
	t->p = p;
	if (len > 0)
		memcpy(t->p + t->len, s, len);
	t->len += len;
	t->p[t->len] = '\0';
	return 0;
}

void cdxj_text_free(struct cdxj_text *t)
{
	free(t->p);
	*t = (struct cdxj_text){ 0 };
}

static int text_char(struct cdxj_text *t, char c)
{
	return cdxj_text_add(t, &c, 1);
}

int cdxj_json_string(struct cdxj_text *t, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t run = 0;
	if (text_char(t, '"') != 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		size_t n = 0;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		if (cdxj_text_add(t, s + run, i - run) != 0)
			return -1;
		run = i + 1;
		esc[n++] = '\\';
		switch (c) {
		case '"': esc[n++] = '"'; break;
		case '\\': esc[n++] = '\\'; break;
		case '\b': esc[n++] = 'b'; break;
		case '\f': esc[n++] = 'f'; break;
		case '\n': esc[n++] = 'n'; break;
		case '\r': esc[n++] = 'r'; break;
		case '\t': esc[n++] = 't'; break;
		default:
			memcpy(esc + n, "u00", 3);
			n += 3;
			esc[n++] = hex[c >> 4];
			esc[n++] = hex[c & 15];
		}
		if (cdxj_text_add(t, esc, n) != 0)
			return -1;
	}
	if (cdxj_text_add(t, s + run, len - run) != 0)
		return -1;
	return text_char(t, '"');
}

int cdxj_utf8_sanitize(struct cdxj_text *t, const uint8_t *s, size_t len)
{
	static const char fffd[] = "\xEF\xBF\xBD";
	size_t i = 0, run = 0;
	while (i < len) {
		uint8_t c = s[i];
		size_t need = 0;
		uint8_t lo = 0x80, hi = 0xBF;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			need = 1;
		} else if (c >= 0xE0 && c <= 0xEF) {
			need = 2;
			lo = c == 0xE0 ? 0xA0 : 0x80;
			hi = c == 0xED ? 0x9F : 0xBF;
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3;
			lo = c == 0xF0 ? 0x90 : 0x80;
			hi = c == 0xF4 ? 0x8F : 0xBF;
		}
		size_t k = 1;
		while (need > 0 && k <= need && i + k < len && s[i + k] >= lo && s[i + k] <= hi) {
			lo = 0x80;
			hi = 0xBF;
			k++;
		}
		if (need > 0 && k == need + 1) {
			i += k;
			continue;
		}
		/* an invalid byte, or a sequence cut short: its valid part is
		 * one U+FFFD, and decoding goes on at the byte that broke it */
		if (cdxj_text_add(t, (const char *)s + run, i - run) != 0 ||
		    cdxj_text_add(t, fffd, 3) != 0)
			return -1;
		i += k;
		run = i;
	}
	return cdxj_text_add(t, (const char *)s + run, len - run);
}

/* ---------- JavaScript's string trimming ---------- */

/* The code point at s (valid UTF-8: the text was sanitized) and its
 * length in *cl. */
static uint32_t utf8_at(const char *s, size_t n, size_t *cl)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t len = u[0] < 0x80 ? 1 : u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3 : 4;
	uint32_t c = len == 1 ? u[0] : u[0] & (0x7Fu >> len);
	if (len > n)
		len = n;
	for (size_t i = 1; i < len; i++)
		c = c << 6 | (u[i] & 0x3F);
	*cl = len;
	return c;
}

/* ECMAScript WhiteSpace and LineTerminator: what String.prototype.trim
 * removes. */
static bool js_space(uint32_t c)
{
	return c == 0x09 || c == 0x0A || c == 0x0B || c == 0x0C || c == 0x0D || c == 0x20 ||
	       c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
	       c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000 || c == 0xFEFF;
}

static void trim_start(const char **s, size_t *n)
{
	size_t cl;
	while (*n > 0 && js_space(utf8_at(*s, *n, &cl))) {
		*s += cl;
		*n -= cl;
	}
}

static void trim_end(const char *s, size_t *n)
{
	while (*n > 0) {
		size_t b = *n - 1, cl;
		while (b > 0 && ((uint8_t)s[b] & 0xC0) == 0x80)
			b--;
		if (!js_space(utf8_at(s + b, *n - b, &cl)))
			return;
		*n = b;
	}
}

/* ---------- the urlkey (warcio.js getSurt) ---------- */

static int key_add_host(struct cdxj_text *k, const char *h, size_t hl)
{
	/* labels reversed, joined by ',' */
	size_t end = hl;
	for (size_t i = hl; i-- > 0;) {
		if (h[i] != '.')
			continue;
		if (cdxj_text_add(k, h + i + 1, end - i - 1) != 0 || text_char(k, ',') != 0)
			return -1;
		end = i;
	}
	return cdxj_text_add(k, h, end);
}

static int cmp_arg(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "?" and the query's '&'-separated arguments sorted (by UTF-16 code
 * units in JavaScript: bytes here, the serialized query being ASCII). */
static int key_add_query(struct cdxj_indexer *ix, const char *q, size_t ql)
{
	size_t n = 0;
	ix->work.len = 0;
	if (cdxj_text_add(&ix->work, q, ql) != 0)
		return -1;
	for (char *p = ix->work.p; p != NULL; n++) {
		const char **a = array_grow(ix->args, &ix->args_cap, n, sizeof *a, 16);
		if (a == NULL)
			return -1;
		ix->args = a;
		a[n] = strsep(&p, "&");
	}
	qsort(ix->args, n, sizeof *ix->args, cmp_arg);
	for (size_t i = 0; i < n; i++)
		if (text_char(&ix->key, i == 0 ? '?' : '&') != 0 ||
		    cdxj_text_add(&ix->key, ix->args[i], strlen(ix->args[i])) != 0)
			return -1;
	return 0;
}

/* The scheme and a leading "www<digits>." dropped from the text (as the
 * regular expression /^(https?:\/\/)www\d*\./ does, case-sensitive). */
static size_t www_prefix(const char *u, size_t n, size_t scheme)
{
	size_t i = scheme;
	if (n < i + 3 || memcmp(u + i, "www", 3) != 0)
		return 0;
	i += 3;
	while (i < n && ascii_is_digit((unsigned char)u[i]))
		i++;
	return i < n && u[i] == '.' ? i + 1 - scheme : 0;
}

enum cdxj_error cdxj_indexer_urlkey(struct cdxj_indexer *ix, const char *url, size_t len,
                                    const char **key, size_t *key_len)
{
	size_t scheme = len >= 7 && memcmp(url, "http://", 7) == 0    ? 7
	                : len >= 8 && memcmp(url, "https://", 8) == 0 ? 8
	                                                              : 0;
	bool http = scheme > 0 || (len >= 5 && memcmp(url, "http:", 5) == 0) ||
	            (len >= 6 && memcmp(url, "https:", 6) == 0);
	ix->key.len = 0;
	if (!http)
		goto as_is;
	size_t www = scheme > 0 ? www_prefix(url, len, scheme) : 0;
	/* the URL less its www label, lower-cased, parsed */
	ix->work.len = 0;
	if (cdxj_text_add(&ix->work, url, scheme) != 0 ||
	    cdxj_text_add(&ix->work, url + scheme + www, len - scheme - www) != 0)
		return CDXJ_ERR_NOMEM;
	for (size_t i = 0; i < ix->work.len; i++)
		if (ix->work.p[i] >= 'A' && ix->work.p[i] <= 'Z')
			ix->work.p[i] = (char)(ix->work.p[i] + 32);
	if (ix->work.len > ix->max_url_len ||
	    url_parse(ix->url, ix->work.p, ix->work.len, NULL) != URL_OK || !url_is_http(ix->url)) {
		/* unparsable: warcio keeps the text, less its www label */
		if (cdxj_text_add(&ix->key, url, scheme) != 0 ||
		    cdxj_text_add(&ix->key, url + scheme + www, len - scheme - www) != 0)
			return CDXJ_ERR_NOMEM;
		goto done;
	}
	size_t hl, pl, ql;
	const char *h = url_host(ix->url, &hl), *p = url_path(ix->url, &pl);
	const char *q = url_query(ix->url, &ql);
	char port[16];
	int pn = url_port(ix->url);
	if (key_add_host(&ix->key, h, hl) != 0)
		return CDXJ_ERR_NOMEM;
	if (pn >= 0) {
		int n = snprintf(port, sizeof port, ":%d", pn);
		if (cdxj_text_add(&ix->key, port, (size_t)n) != 0)
			return CDXJ_ERR_NOMEM;
	}
	if (text_char(&ix->key, ')') != 0 || cdxj_text_add(&ix->key, p, pl) != 0)
		return CDXJ_ERR_NOMEM;
	if (ql > 0 && key_add_query(ix, q, ql) != 0)
		return CDXJ_ERR_NOMEM;
	goto done;
as_is:
	if (cdxj_text_add(&ix->key, url, len) != 0)
		return CDXJ_ERR_NOMEM;
done:
	*key = ix->key.p;
	*key_len = ix->key.len;
	return CDXJ_OK;
}

/* ---------- the HTTP header block ---------- */

/* The token characters of RFC 9110, which a header name must consist of. */
static bool is_tchar(unsigned char c)
{
	return ascii_is_alnum(c) || (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A Content-Type value as the Headers class of the fetch standard keeps
 * it: with a code point past U+00FF its UTF-8 bytes become Latin-1 code
 * points (warcio's retry after the class refused it); with NUL, CR or LF
 * it is refused. Appended to ix->mime (", " between values). */
static int take_content_type(struct cdxj_indexer *ix, const char *v, size_t n)
{
	bool wide = false;
	for (size_t i = 0; i < n;) {
		size_t cl;
		uint32_t c = utf8_at(v + i, n - i, &cl);
		if (c == 0 || c == '\r' || c == '\n')
			return 0;
		wide |= c > 0xFF;
		i += cl;
	}
	if (ix->mime.len > 0 && cdxj_text_add(&ix->mime, ", ", 2) != 0)
		return -1;
	if (!wide)
		return cdxj_text_add(&ix->mime, v, n);
	for (size_t i = 0; i < n; i++) {
		uint8_t b = (uint8_t)v[i];
		char two[2] = { (char)(0xC0 | b >> 6), (char)(0x80 | (b & 0x3F)) };
		if (b < 0x80 ? text_char(&ix->mime, (char)b) != 0
		             : cdxj_text_add(&ix->mime, two, 2) != 0)
			return -1;
	}
	return 0;
}

static int set_header(struct cdxj_indexer *ix, const char *name, size_t nl)
{
	if (nl != 12 || strncasecmp(name, "content-type", 12) != 0)
		return 0;
	for (size_t i = 0; i < nl; i++)
		if (!is_tchar((unsigned char)name[i]))
			return 0;
	return take_content_type(ix, ix->value.p, ix->value.len);
}

/* warcio's StatusAndHeadersParser over the decoded header block h (the
 * lines after the status line): a line starting with a space or tab
 * continues the value before it (when that value is not empty); another
 * line is NAME ':' VALUE, the name trimmed at its start, the value at both
 * ends; a line without ':' (or whose first ':' lies on a later line) sets
 * nothing. Only Content-Type is kept. */
static int parse_header_lines(struct cdxj_indexer *ix, const char *h, size_t n)
{
	const char *name = NULL;
	size_t nl = 0, start = 0;
	bool have = false; /* a non-empty value is pending */
	ix->mime.len = 0;
	while (start < n) {
		const char *eol = memchr(h + start, '\n', n - start);
		size_t end = eol != NULL ? (size_t)(eol - h) : n;
		if (have && (h[start] == ' ' || h[start] == '\t')) {
			size_t cl = end - start;
			trim_end(h + start, &cl);
			if (cdxj_text_add(&ix->value, h + start, cl) != 0)
				return -1;
		} else {
			if (have && set_header(ix, name, nl) != 0)
				return -1;
			have = false;
			const char *colon = memchr(h + start, ':', n - start);
			if (eol != NULL && colon != NULL && colon < eol) {
				name = h + start;
				nl = (size_t)(colon - name);
				trim_start(&name, &nl);
				const char *v = colon + 1;
				size_t vl = (size_t)(eol - v);
				trim_start(&v, &vl);
				trim_end(v, &vl);
				ix->value.len = 0;
				if (cdxj_text_add(&ix->value, v, vl) != 0)
					return -1;
				have = vl > 0;
			}
		}
		if (eol == NULL)
			break;
		start = end + 1;
	}
	if (have && set_header(ix, name, nl) != 0)
		return -1;
	return 0;
}

/* Byte i of the block (two pieces, then the record's closing CR LF CR LF). */
static uint8_t block_byte(const struct cdxj_record *r, size_t i)
{
	if (i < r->block_len)
		return r->block[i];
	i -= r->block_len;
	if (i < r->block2_len)
		return r->block2[i];
	return (i - r->block2_len) % 2 == 0 ? '\r' : '\n';
}

/* Copies block bytes [from, to) into t. */
static int block_copy(struct cdxj_text *t, const struct cdxj_record *r, size_t from, size_t to)
{
	size_t a = from < r->block_len ? from : r->block_len;
	size_t b = to < r->block_len ? to : r->block_len;
	if (a < b && cdxj_text_add(t, (const char *)r->block + a, b - a) != 0)
		return -1;
	for (size_t i = from > r->block_len ? from : r->block_len; i < to; i++)
		if (text_char(t, (char)block_byte(r, i)) != 0)
			return -1;
	return 0;
}

/* Where the first CR LF CR LF at or after from ends, searching the block
 * and its closing CR LF CR LF (so there always is one). */
static size_t double_crlf_end(const struct cdxj_record *r, size_t from)
{
	size_t total = r->block_len + r->block2_len + 4;
	for (size_t i = from; i + 4 <= total; i++) {
		/* skip to the next CR of the piece i is in */
		const uint8_t *piece = i < r->block_len ? r->block : r->block2;
		size_t at = i < r->block_len ? i : i - r->block_len;
		size_t plen = i < r->block_len ? r->block_len : r->block2_len;
		if (at < plen) {
			const uint8_t *cr = memchr(piece + at, '\r', plen - at);
			if (cr == NULL) {
				i += plen - at - 1;
				continue;
			}
			i += (size_t)(cr - (piece + at));
		}
		if (block_byte(r, i) == '\r' && block_byte(r, i + 1) == '\n' &&
		    block_byte(r, i + 2) == '\r' && block_byte(r, i + 3) == '\n')
			return i + 4;
	}
	return total;
}

/* A JavaScript number's string form (Number.prototype.toString): the
 * shortest digits that read back as v, placed as ECMAScript's
 * Number::toString places them. */
static void js_number_format(double v, char *out, size_t cap)
{
	char e[40], digits[24], zeros[24];
	if (isnan(v) || isinf(v) || v == 0) {
		snprintf(out, cap, "%s",
		         isnan(v) ? "NaN"
		         : v == 0 ? "0"
		         : v < 0  ? "-Infinity"
		                  : "Infinity");
		return;
	}
	const char *sign = v < 0 ? "-" : "";
	double a = fabs(v);
	for (int p = 1; p <= 17; p++) {
		snprintf(e, sizeof e, "%.*e", p - 1, a);
		if (strtod(e, NULL) == a)
			break;
	}
	/* e is "d.ddde+XX": k digits, n = exponent + 1 */
	int k = 0;
	for (const char *c = e; *c && *c != 'e'; c++)
		if (ascii_is_digit((unsigned char)*c))
			digits[k++] = *c;
	digits[k] = '\0';
	/* the exponent of a finite double: within -324..308 */
	int n = (int)strtol(strchr(e, 'e') + 1, NULL, 10) + 1;
	int z = k <= n ? n - k : n <= 0 ? -n : 0;
	memset(zeros, '0', (size_t)(z < 23 ? z : 23));
	zeros[z < 23 ? z : 23] = '\0';
	if (k <= n && n <= 21)
		snprintf(out, cap, "%s%s%s", sign, digits, zeros);
	else if (0 < n && n <= 21)
		snprintf(out, cap, "%s%.*s.%s", sign, n, digits, digits + n);
	else if (-6 < n && n <= 0)
		snprintf(out, cap, "%s0.%s%s", sign, zeros, digits);
	else
		snprintf(out, cap, "%s%c%s%se%c%d", sign, digits[0], k > 1 ? "." : "", digits + 1,
		         n - 1 >= 0 ? '+' : '-', abs(n - 1));
}

/* Number(s) of JavaScript (StringToNumber) for the status word, as text. */
static void js_number(const char *s, size_t n, char *out, size_t cap)
{
	char buf[64];
	double v = NAN;
	trim_start(&s, &n);
	trim_end(s, &n);
	if (n == 0) {
		snprintf(out, cap, "0");
		return;
	}
	if (n >= sizeof buf)
		goto done; /* a long word: only a long run of digits would be a number */
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (n > 2 && buf[0] == '0' && strchr("xXoObB", buf[1]) != NULL) {
		int base = buf[1] == 'x' || buf[1] == 'X'   ? 16
		           : buf[1] == 'o' || buf[1] == 'O' ? 8
		                                            : 2;
		double acc = 0;
		for (size_t i = 2; i < n; i++) {
			int d = ascii_hex_value((unsigned char)buf[i]);
			if (d < 0 || d >= base)
				goto done;
			acc = acc * base + d;
		}
		v = acc;
		goto done;
	}
	const char *p = buf;
	if (*p == '+' || *p == '-')
		p++;
	if (strcmp(p, "Infinity") == 0) {
		v = buf[0] == '-' ? -INFINITY : INFINITY;
		goto done;
	}
	size_t digits = 0;
	while (ascii_is_digit((unsigned char)*p))
		p++, digits++;
	if (*p == '.')
		for (p++; ascii_is_digit((unsigned char)*p); p++)
			digits++;
	if (digits == 0)
		goto done;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!ascii_is_digit((unsigned char)*p))
			goto done;
		while (ascii_is_digit((unsigned char)*p))
			p++;
	}
	if (*p == '\0')
		v = strtod(buf, NULL);
done:
	if (isnan(v) && n >= sizeof buf) {
		/* all digits: a (huge) number all the same */
		bool all = true;
		for (size_t i = 0; i < n && all; i++)
			all = ascii_is_digit((unsigned char)s[i]);
		if (all) {
			char *big = strndup(s, n);
			if (big != NULL)
				v = strtod(big, NULL);
			free(big);
		}
	}
	js_number_format(v, out, cap);
}

/* The status and mime of a response or revisit block, as warcio reads
 * them. *has_http false when the block has no status line. */
static int http_fields(struct cdxj_indexer *ix, const struct cdxj_record *r, bool *has_http,
                       char *status, size_t status_cap, bool *has_status)
{
	size_t total = r->block_len + r->block2_len;
	size_t eol = 0;
	*has_http = false;
	*has_status = false;
	ix->mime.len = 0;
	if (total == 0)
		return 0;
	while (eol < total && block_byte(r, eol) != '\n')
		eol++;
	size_t line_end = eol < total ? eol + 1 : total;
	ix->work.len = 0;
	ix->head.len = 0;
	if (block_copy(&ix->work, r, 0, line_end) != 0 ||
	    cdxj_utf8_sanitize(&ix->head, (const uint8_t *)ix->work.p, ix->work.len) != 0)
		return -1;
	size_t sl = ix->head.len;
	trim_end(ix->head.p, &sl);
	if (sl == 0)
		return 0;
	*has_http = true;
	/* the second ' '-separated word */
	const char *sp = memchr(ix->head.p, ' ', sl);
	if (sp != NULL) {
		const char *w = sp + 1;
		const char *sp2 = memchr(w, ' ', (size_t)(ix->head.p + sl - w));
		size_t wl = sp2 ? (size_t)(sp2 - w) : (size_t)(ix->head.p + sl - w);
		js_number(w, wl, status, status_cap);
		*has_status = true;
	} else {
		status[0] = '\0';
		*has_status = true;
	}
	size_t hend = double_crlf_end(r, line_end);
	ix->work.len = 0;
	ix->head.len = 0;
	if (block_copy(&ix->work, r, line_end, hend) != 0 ||
	    cdxj_utf8_sanitize(&ix->head, (const uint8_t *)ix->work.p, ix->work.len) != 0)
		return -1;
	return parse_header_lines(ix, ix->head.p, ix->head.len);
}

/* ---------- the line ---------- */

static bool is(const char *s, size_t n, const char *word)
{
	return s != NULL && n == strlen(word) && memcmp(s, word, n) == 0;
}

/* A WARC header value as warcio sees it: decoded, trimmed; code points
 * past U+00FF turned into the Latin-1 reading of their bytes. */
static int warc_value(struct cdxj_indexer *ix, struct cdxj_text *t, const char *v, size_t n)
{
	t->len = 0;
	ix->work.len = 0;
	if (cdxj_utf8_sanitize(&ix->work, (const uint8_t *)v, n) != 0)
		return -1;
	const char *s = ix->work.p;
	size_t sl = ix->work.len;
	trim_start(&s, &sl);
	trim_end(s, &sl);
	ix->mime.len = 0;
	if (take_content_type(ix, s, sl) != 0)
		return -1;
	return cdxj_text_add(t, ix->mime.p ? ix->mime.p : "", ix->mime.len);
}

static int add_field(struct cdxj_text *t, const char *name, const char *v, size_t n, bool *first)
{
	if (cdxj_text_add(t, *first ? "{\"" : ",\"", 2) != 0 ||
	    cdxj_text_add(t, name, strlen(name)) != 0 || cdxj_text_add(t, "\":", 2) != 0 ||
	    cdxj_json_string(t, v, n) != 0)
		return -1;
	*first = false;
	return 0;
}

/* Whether warcio's cdx-index (without --all) indexes the record. */
static bool indexed(const struct cdxj_record *r)
{
	if (is(r->type, r->type_len, "request") || is(r->type, r->type_len, "warcinfo"))
		return false;
	if (is(r->type, r->type_len, "metadata") || is(r->type, r->type_len, "resource"))
		return !is(r->content_type, r->content_type_len, "application/warc-fields");
	return true;
}

static enum cdxj_error build_line(struct cdxj_indexer *ix, const struct cdxj_record *r)
{
	struct cdxj_text *l = &ix->line;
	struct cdxj_text url = { 0 }, digest = { 0 }, ctype = { 0 };
	char status[64], num[24];
	bool has_http = false, has_status = false, first = true;
	bool revisit = is(r->type, r->type_len, "revisit");
	bool http = revisit || is(r->type, r->type_len, "response");
	enum cdxj_error rc = CDXJ_ERR_NOMEM;
	const char *key = "undefined"; /* as warcio writes a record without a URL */
	size_t kl = 9;

	if (warc_value(ix, &url, r->url, r->url_len) != 0 ||
	    warc_value(ix, &digest, r->payload_digest, r->payload_digest_len) != 0 ||
	    warc_value(ix, &ctype, r->content_type, r->content_type_len) != 0 ||
	    (url.len > 0 && cdxj_indexer_urlkey(ix, url.p, url.len, &key, &kl) != CDXJ_OK))
		goto out;
	l->len = 0;
	/* urlkey and timestamp: the date less '-', ':' and 'T', 14 characters */
	if (cdxj_text_add(l, key, kl) != 0 || text_char(l, ' ') != 0)
		goto out;
	size_t ts = 0;
	for (size_t i = 0; i < r->date_len && ts < 14; i++)
		if (r->date[i] != '-' && r->date[i] != ':' && r->date[i] != 'T') {
			if (text_char(l, r->date[i]) != 0)
				goto out;
			ts++;
		}
	if (text_char(l, ' ') != 0)
		goto out;
	if (http && http_fields(ix, r, &has_http, status, sizeof status, &has_status) != 0)
		goto out;
	if (url.len > 0 && add_field(l, "url", url.p, url.len, &first) != 0)
		goto out;
	if (revisit) {
		if (add_field(l, "mime", "warc/revisit", 12, &first) != 0)
			goto out;
	} else if (!http) {
		if (ctype.len > 0 && add_field(l, "mime", ctype.p, ctype.len, &first) != 0)
			goto out;
	} else if (has_http && ix->mime.len > 0) {
		/* up to the first ';', trimmed */
		const char *m = ix->mime.p;
		const char *semi = memchr(m, ';', ix->mime.len);
		size_t ml = semi ? (size_t)(semi - m) : ix->mime.len;
		trim_start(&m, &ml);
		trim_end(m, &ml);
		if (add_field(l, "mime", m, ml, &first) != 0)
			goto out;
	}
	if (has_http && has_status && add_field(l, "status", status, strlen(status), &first) != 0)
		goto out;
	const char *colon = digest.len ? memchr(digest.p, ':', digest.len) : NULL;
	if (colon != NULL) {
		const char *d = colon + 1;
		const char *c2 = memchr(d, ':', (size_t)(digest.p + digest.len - d));
		size_t dl = c2 ? (size_t)(c2 - d) : (size_t)(digest.p + digest.len - d);
		if (add_field(l, "digest", d, dl, &first) != 0)
			goto out;
	}
	snprintf(num, sizeof num, "%" PRIu64, r->length);
	if (add_field(l, "length", num, strlen(num), &first) != 0)
		goto out;
	snprintf(num, sizeof num, "%" PRIu64, r->offset);
	if (add_field(l, "offset", num, strlen(num), &first) != 0 ||
	    add_field(l, "filename", r->filename, strlen(r->filename), &first) != 0 ||
	    cdxj_text_add(l, "}\n", 2) != 0)
		goto out;
	rc = CDXJ_OK;
out:
	cdxj_text_free(&url);
	cdxj_text_free(&digest);
	cdxj_text_free(&ctype);
	return rc;
}

enum cdxj_error cdxj_indexer_line(struct cdxj_indexer *ix, const struct cdxj_record *r,
                                  const char **line, size_t *len)
{
	if (ix == NULL || r == NULL || r->filename == NULL)
		return CDXJ_ERR_INVALID;
	if (!indexed(r))
		return CDXJ_SKIP;
	enum cdxj_error rc = build_line(ix, r);
	if (rc != CDXJ_OK)
		return rc;
	*line = ix->line.p;
	*len = ix->line.len;
	return CDXJ_OK;
}

/* ---------- reading lines back ---------- */

/* The decimal in "NAME":"DIGITS" at *p (advanced past it). */
static int take_number(const char **p, const char *end, const char *name, uint64_t *v)
{
	size_t n = strlen(name);
	const char *s = *p;
	if ((size_t)(end - s) < n || memcmp(s, name, n) != 0)
		return -1;
	s += n;
	uint64_t x = 0;
	int digits = 0;
	while (s < end && ascii_is_digit((unsigned char)*s) && digits < 19) {
		x = x * 10 + (uint64_t)(*s++ - '0');
		digits++;
	}
	if (digits == 0 || s >= end || *s != '"')
		return -1;
	*v = x;
	*p = s + 1;
	return 0;
}

enum cdxj_error cdxj_line_location(const char *line, size_t len, struct cdxj_location *loc)
{
	static const char tail[] = ",\"length\":\"";
	const char *end = line + len;
	/* URLKEY TIMESTAMP {...}: the key of a URL that does not parse may hold
	 * spaces, and an odd WARC-Date gives a short timestamp, so only the
	 * JSON object's start and its end, written last, are checked */
	const char *brace = len > 2 ? memmem(line, len, " {\"", 3) : NULL;
	if (brace == NULL || brace == line || end[-1] != '}')
		return CDXJ_ERR_INVALID;
	/* the line ends ,"length":"N","offset":"N","filename":"NAME"} */
	const char *p = NULL;
	for (const char *s = end - 1; s > brace; s--)
		if (*s == ',' && (size_t)(end - s) > sizeof tail - 1 &&
		    memcmp(s, tail, sizeof tail - 1) == 0) {
			p = s + 1;
			break;
		}
	if (p == NULL || take_number(&p, end, "\"length\":\"", &loc->length) != 0 ||
	    take_number(&p, end, ",\"offset\":\"", &loc->offset) != 0)
		return CDXJ_ERR_INVALID;
	static const char fn[] = ",\"filename\":\"";
	if ((size_t)(end - p) < sizeof fn + 1 || memcmp(p, fn, sizeof fn - 1) != 0)
		return CDXJ_ERR_INVALID;
	p += sizeof fn - 1;
	loc->filename = p;
	loc->filename_len = (size_t)(end - 2 - p);
	if (end[-2] != '"' || loc->filename_len == 0 || memchr(p, '"', loc->filename_len) != NULL ||
	    memchr(p, '\\', loc->filename_len) != NULL)
		return CDXJ_ERR_INVALID;
	return CDXJ_OK;
}

/* ---------- any writer's lines, read back ---------- */

static char *skip_json_space(char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p;
}

/* Four hex digits at p as a number, or -1. */
static long hex4(const char *p, const char *end)
{
	long v = 0;
	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		if (!ascii_is_hex((unsigned char)p[i]))
			return -1;
		v = v << 4 | ascii_hex_value((unsigned char)p[i]);
	}
	return v;
}

/* A \u escape at r (just past the backslash and 'u'), a surrogate pair's
 * second half included: its code point (a lone surrogate: U+FFFD) and
 * *r past it; -1 when not four hex digits. */
static long json_u_escape(char **r, const char *end)
{
	long c = hex4(*r, end);
	if (c < 0)
		return -1;
	*r += 4;
	if (c >= 0xd800 && c <= 0xdbff && end - *r >= 6 && (*r)[0] == '\\' && (*r)[1] == 'u') {
		long lo = hex4(*r + 2, end);
		if (lo >= 0xdc00 && lo <= 0xdfff) {
			*r += 6;
			return 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
		}
	}
	return c >= 0xd800 && c <= 0xdfff ? 0xfffd : c;
}

/* The JSON string whose opening quote is at *p, unescaped in place from
 * that quote on and NUL-terminated: *out. 0 and *p past its closing quote;
 * -1 when it is not one (unclosed, a raw control byte, a bad escape, or
 * an escaped NUL, which no field may hold). */
static int json_string_in_place(char **p, const char *end, char **out)
{
	char *w = *p, *r = *p + 1;
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	*out = w;
	while (r < end && *r != '"') {
		if ((unsigned char)*r < 0x20)
			return -1;
		if (*r != '\\') {
			*w++ = *r++;
			continue;
		}
		if (++r >= end)
			return -1;
		const char *k = *r ? strchr(from, *r) : NULL;
		if (k != NULL) {
			*w++ = to[k - from];
			r++;
			continue;
		}
		if (*r++ != 'u')
			return -1;
		long c = json_u_escape(&r, end);
		if (c <= 0)
			return -1;
		w += utf8_put((uint32_t)c, w);
	}
	if (r >= end)
		return -1;
	*w = '\0';
	*p = r + 1;
	return 0;
}

/* A bare JSON value at *p (a number, true, false, null): its bytes up to
 * the next ',', '}' or space; their length, 0 when none. */
static size_t json_bare_len(const char *p, const char *end)
{
	size_t n = 0;
	while (p + n < end &&
	       (ascii_is_alnum((unsigned char)p[n]) || p[n] == '-' || p[n] == '+' || p[n] == '.'))
		n++;
	return n;
}

/* A whole decimal number (at most LONG_MAX / 10: any offset or length):
 * 0, or -1. */
static int decimal_u64(const char *s, uint64_t *v)
{
	size_t n = strlen(s);
	long x = ascii_decimal_prefix(s, n, LONG_MAX / 10);
	if (x < 0 || strspn(s, "0123456789") != n)
		return -1;
	*v = (uint64_t)x;
	return 0;
}

/* Files one field of the object into out. 0, or -1 (a bad number). */
static int take_field(const char *key, char *value, struct cdxj_fields *out)
{
	static const char *const names[] = { "url", "mime", "status", "digest", "filename" };
	const char **slots[] = { &out->url, &out->mime, &out->status, &out->digest,
		                 &out->filename };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(key, names[i]) == 0) {
			*slots[i] = value;
			return 0;
		}
	if (strcmp(key, "offset") == 0) {
		out->has_offset = true;
		return decimal_u64(value, &out->offset);
	}
	if (strcmp(key, "length") == 0) {
		out->has_length = true;
		return decimal_u64(value, &out->length);
	}
	return 0;
}

/* The JSON object from its '{' at p to end (the line's end, spaces
 * allowed), its fields into out. 0, or -1. */
static int read_object(char *p, const char *end, struct cdxj_fields *out)
{
	p = skip_json_space(p + 1, end);
	if (p < end && *p == '}')
		return skip_json_space(p + 1, end) == end ? 0 : -1;
	for (;;) {
		char *key, *value;
		if (p >= end || *p != '"' || json_string_in_place(&p, end, &key) != 0)
			return -1;
		p = skip_json_space(p, end);
		if (p >= end || *p != ':')
			return -1;
		p = skip_json_space(p + 1, end);
		char *bare_end = NULL;
		if (p < end && *p == '"') {
			if (json_string_in_place(&p, end, &value) != 0)
				return -1;
		} else {
			size_t n = json_bare_len(p, end);
			if (n == 0)
				return -1;
			value = p;
			p += n;
			bare_end = p;
		}
		p = skip_json_space(p, end);
		if (p >= end || (*p != ',' && *p != '}'))
			return -1;
		char sep = *p++;
		if (bare_end != NULL)
			*bare_end = '\0'; /* the separator, space or ',' or '}', read */
		if (take_field(key, value, out) != 0)
			return -1;
		if (sep == '}')
			return skip_json_space(p, end) == end ? 0 : -1;
		p = skip_json_space(p, end);
	}
}

enum cdxj_error cdxj_line_read(char *line, size_t len, struct cdxj_fields *out)
{
	memset(out, 0, sizeof *out);
	if (len == 0 || memchr(line, '\0', len) != NULL || memchr(line, '\n', len) != NULL)
		return CDXJ_ERR_INVALID;
	/* URLKEY TIMESTAMP {: a key that did not parse as a URL may hold
	 * spaces, so the timestamp is the word before the object */
	char *brace = memmem(line, len, " {", 2);
	if (brace == NULL)
		return CDXJ_ERR_INVALID;
	char *ts = brace;
	while (ts > line && ts[-1] != ' ')
		ts--;
	if (ts == brace || ts == line)
		return CDXJ_ERR_INVALID;
	for (const char *d = ts; d < brace; d++)
		if (!ascii_is_digit((unsigned char)*d))
			return CDXJ_ERR_INVALID;
	if (read_object(brace + 1, line + len, out) != 0)
		return CDXJ_ERR_INVALID;
	ts[-1] = '\0';
	*brace = '\0';
	out->urlkey = line;
	out->timestamp = ts;
	return CDXJ_OK;
}

/* ---------- lifecycle ---------- */

struct cdxj_indexer *cdxj_indexer_create(size_t max_url_len)
{
	struct cdxj_indexer *ix = calloc(1, sizeof *ix);
	struct url_options o;
	if (ix == NULL)
		return NULL;
	url_options_init(&o);
	ix->max_url_len = max_url_len ? max_url_len : CDXJ_DEFAULT_URL_MAX;
	o.max_len = ix->max_url_len;
	ix->url = url_create(&o);
	if (ix->url != NULL)
		return ix;
	cdxj_indexer_destroy(ix);
	return NULL;
}

void cdxj_indexer_destroy(struct cdxj_indexer *ix)
{
	if (ix == NULL)
		return;
	struct cdxj_text *texts[] = { &ix->line, &ix->key,   &ix->work,
		                      &ix->head, &ix->value, &ix->mime };
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		cdxj_text_free(texts[i]);
	url_destroy(ix->url);
	free(ix->args);
	free(ix);
}
