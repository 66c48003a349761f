/*
 * url_conformance: runs the WHATWG URL test data (web-platform-tests
 * urltestdata.json) through frontier/url.h.
 *
 * The http(s) subset, which must pass at >= 99%: a case whose base is given
 * and parses as an http or https URL, or whose base is null and whose input
 * (after the standard's stripping of C0/space and removal of tab/newline)
 * starts with the scheme "http:" or "https:" (any case). A case with
 * `failure: true` must be rejected (a case whose base fails to parse counts
 * as rejected); otherwise href, hostname, pathname, search and hash must
 * match. The rate over all cases is printed for information.
 *
 * The file is read with a small JSON reader for its shape: an array of
 * strings (comments) and flat objects whose values are strings, null, bools
 * (or numbers, skipped). \uXXXX escapes, surrogate pairs included, become
 * UTF-8; a lone surrogate becomes U+FFFD, as a JavaScript string does when
 * encoded as UTF-8.
 *
 * Usage: url_conformance PATH/urltestdata.json. A missing file fails.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontier/url.h"

#define MAX_FIELDS 24

struct jstr {
	char *p;
	size_t n;
	bool null;
	bool present;
};

struct jcase {
	struct jstr input, base, href, hostname, pathname, search, hash;
	bool failure;
};

struct reader {
	const char *s;
	size_t n, i;
	bool err;
};

static void ws(struct reader *r)
{
	while (r->i < r->n && isspace((unsigned char)r->s[r->i]))
		r->i++;
}

static void put_utf8(char *o, size_t *k, unsigned cp)
{
	if (cp < 0x80) {
		o[(*k)++] = (char)cp;
	} else if (cp < 0x800) {
		o[(*k)++] = (char)(0xc0 | (cp >> 6));
		o[(*k)++] = (char)(0x80 | (cp & 63));
	} else if (cp < 0x10000) {
		o[(*k)++] = (char)(0xe0 | (cp >> 12));
		o[(*k)++] = (char)(0x80 | ((cp >> 6) & 63));
		o[(*k)++] = (char)(0x80 | (cp & 63));
	} else {
		o[(*k)++] = (char)(0xf0 | (cp >> 18));
		o[(*k)++] = (char)(0x80 | ((cp >> 12) & 63));
		o[(*k)++] = (char)(0x80 | ((cp >> 6) & 63));
		o[(*k)++] = (char)(0x80 | (cp & 63));
	}
}

static int hex4(struct reader *r, unsigned *v)
{
	if (r->i + 4 > r->n)
		return -1;
	*v = 0;
	for (int k = 0; k < 4; k++) {
		char c = r->s[r->i + (size_t)k];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		*v = *v * 16 + d;
	}
	r->i += 4;
	return 0;
}

/* Reads a JSON string at r->i (which is at '"'); returns a malloc'ed copy. */
static char *jstring(struct reader *r, size_t *len)
{
	if (r->i >= r->n || r->s[r->i] != '"') {
		r->err = true;
		return NULL;
	}
	r->i++;
	/* The decoded string is never longer than its escaped text (\uXXXX
	 * gives at most 3 bytes, a surrogate pair 4): size the copy by the text
	 * up to the closing quote. Sizing it by the rest of the file would cost
	 * a file-sized allocation per string, slow under AddressSanitizer. */
	size_t end = r->i;
	while (end < r->n && r->s[end] != '"')
		end += r->s[end] == '\\' ? 2 : 1;
	char *o = malloc((end < r->n ? end : r->n) - r->i + 1);
	size_t k = 0;
	if (!o) {
		r->err = true;
		return NULL;
	}
	while (r->i < r->n && r->s[r->i] != '"') {
		char c = r->s[r->i++];
		if (c != '\\') {
			o[k++] = c;
			continue;
		}
		if (r->i >= r->n)
			break;
		c = r->s[r->i++];
		switch (c) {
		case 'n': o[k++] = '\n'; break;
		case 't': o[k++] = '\t'; break;
		case 'r': o[k++] = '\r'; break;
		case 'b': o[k++] = '\b'; break;
		case 'f': o[k++] = '\f'; break;
		case 'u': {
			unsigned v;
			if (hex4(r, &v)) {
				r->err = true;
				free(o);
				return NULL;
			}
			if (v >= 0xd800 && v <= 0xdbff && r->i + 6 <= r->n && r->s[r->i] == '\\' &&
			    r->s[r->i + 1] == 'u') {
				size_t save = r->i;
				unsigned lo;
				r->i += 2;
				if (hex4(r, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
					v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
				} else {
					r->i = save;
					v = 0xfffd;
				}
			} else if (v >= 0xd800 && v <= 0xdfff) {
				v = 0xfffd;
			}
			put_utf8(o, &k, v);
			break;
		}
		default: o[k++] = c; break;
		}
	}
	if (r->i >= r->n) {
		r->err = true;
		free(o);
		return NULL;
	}
	r->i++;
	o[k] = '\0';
	*len = k;
	return o;
}

static void skip_scalar(struct reader *r)
{
	while (r->i < r->n && r->s[r->i] != ',' && r->s[r->i] != '}' && r->s[r->i] != ']')
		r->i++;
}

static void skip_value(struct reader *r);

static void skip_compound(struct reader *r, char open, char close)
{
	(void)open;
	r->i++;
	ws(r);
	while (r->i < r->n && r->s[r->i] != close) {
		if (close == '}') {
			size_t l;
			free(jstring(r, &l));
			ws(r);
			if (r->i < r->n && r->s[r->i] == ':')
				r->i++;
			ws(r);
		}
		skip_value(r);
		ws(r);
		if (r->i < r->n && r->s[r->i] == ',')
			r->i++;
		ws(r);
		if (r->err)
			return;
	}
	r->i++;
}

static void skip_value(struct reader *r)
{
	ws(r);
	if (r->i >= r->n) {
		r->err = true;
		return;
	}
	char c = r->s[r->i];
	if (c == '"') {
		size_t l;
		free(jstring(r, &l));
	} else if (c == '{') {
		skip_compound(r, '{', '}');
	} else if (c == '[') {
		skip_compound(r, '[', ']');
	} else {
		skip_scalar(r);
	}
}

static void jfree(struct jcase *c)
{
	struct jstr *f[] = { &c->input,    &c->base,   &c->href, &c->hostname,
		             &c->pathname, &c->search, &c->hash };
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		free(f[i]->p);
	memset(c, 0, sizeof *c);
}

/* Parses one object at r->i into c. */
static void jobject(struct reader *r, struct jcase *c)
{
	memset(c, 0, sizeof *c);
	r->i++; /* '{' */
	ws(r);
	while (!r->err && r->i < r->n && r->s[r->i] != '}') {
		size_t kl;
		char *key = jstring(r, &kl);
		if (!key)
			return;
		ws(r);
		if (r->i >= r->n || r->s[r->i] != ':') {
			r->err = true;
			free(key);
			return;
		}
		r->i++;
		ws(r);
		struct jstr *dst = NULL;
		if (!strcmp(key, "input"))
			dst = &c->input;
		else if (!strcmp(key, "base"))
			dst = &c->base;
		else if (!strcmp(key, "href"))
			dst = &c->href;
		else if (!strcmp(key, "hostname"))
			dst = &c->hostname;
		else if (!strcmp(key, "pathname"))
			dst = &c->pathname;
		else if (!strcmp(key, "search"))
			dst = &c->search;
		else if (!strcmp(key, "hash"))
			dst = &c->hash;
		if (!strcmp(key, "failure")) {
			c->failure = r->i + 4 <= r->n && !strncmp(r->s + r->i, "true", 4);
			skip_scalar(r);
		} else if (dst && r->s[r->i] == '"') {
			dst->p = jstring(r, &dst->n);
			dst->present = true;
		} else if (dst && !strncmp(r->s + r->i, "null", 4)) {
			dst->null = true;
			dst->present = true;
			skip_scalar(r);
		} else {
			skip_value(r);
		}
		free(key);
		ws(r);
		if (r->i < r->n && r->s[r->i] == ',')
			r->i++;
		ws(r);
	}
	r->i++;
}

static bool scheme_is_http(const char *s, size_t n)
{
	size_t a = 0;
	while (a < n && (unsigned char)s[a] <= 0x20)
		a++;
	char sch[8];
	size_t k = 0;
	for (size_t i = a; i < n && k < sizeof sch - 1; i++) {
		if (s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
			continue;
		sch[k++] = s[i];
		if (s[i] == ':')
			break;
	}
	sch[k] = '\0';
	return !strcasecmp(sch, "http:") || !strcasecmp(sch, "https:");
}

static bool eq(const char *a, size_t an, const struct jstr *b)
{
	if (!b->present)
		return true;
	return b->p && an == b->n && memcmp(a, b->p, an) == 0;
}

/* Returns true when the case passes; *subset tells whether it is http(s). */
static bool run_case(struct url *u, struct url *base, const struct jcase *c, bool *subset,
                     char *why, size_t whylen)
{
	const struct url *bp = NULL;
	*subset = false;
	why[0] = '\0';
	if (c->base.present && !c->base.null) {
		if (url_parse(base, c->base.p, c->base.n, NULL) != URL_OK) {
			snprintf(why, whylen, "base rejected");
			return c->failure;
		}
		bp = base;
		*subset = url_is_http(base);
	} else {
		*subset = scheme_is_http(c->input.p, c->input.n);
	}
	enum url_error e = url_parse(u, c->input.p, c->input.n, bp);
	if (c->failure) {
		if (e == URL_OK) {
			size_t n;
			const char *h = url_href(u, &n);
			snprintf(why, whylen, "accepted as %.*s", (int)n, h);
			return false;
		}
		return true;
	}
	if (e != URL_OK) {
		snprintf(why, whylen, "rejected: %s", url_strerror(e));
		return false;
	}
	size_t n;
	const char *h = url_href(u, &n);
	if (!eq(h, n, &c->href)) {
		snprintf(why, whylen, "href %.*s", (int)n, h);
		return false;
	}
	const char *p = url_host(u, &n);
	if (!eq(p, n, &c->hostname)) {
		snprintf(why, whylen, "hostname %.*s", (int)n, p);
		return false;
	}
	p = url_path(u, &n);
	if (!eq(p, n, &c->pathname)) {
		snprintf(why, whylen, "pathname %.*s", (int)n, p);
		return false;
	}
	char tmp[8192];
	p = url_query(u, &n);
	int k = (p && n) ? snprintf(tmp, sizeof tmp, "?%.*s", (int)n, p) : 0;
	tmp[k < 0 ? 0 : k] = '\0';
	if (!eq(tmp, strlen(tmp), &c->search)) {
		snprintf(why, whylen, "search %.*s", (int)(whylen / 2), tmp);
		return false;
	}
	p = url_fragment(u, &n);
	k = (p && n) ? snprintf(tmp, sizeof tmp, "#%.*s", (int)n, p) : 0;
	tmp[k < 0 ? 0 : k] = '\0';
	if (!eq(tmp, strlen(tmp), &c->hash)) {
		snprintf(why, whylen, "hash %.*s", (int)(whylen / 2), tmp);
		return false;
	}
	return true;
}

static void print_escaped(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f || c == '\\')
			printf("\\x%02X", c);
		else
			putchar(c);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: url_conformance urltestdata.json\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		printf("0 passed, 1 failed\n");
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)sz + 1);
	if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
		fprintf(stderr, "cannot read %s\n", argv[1]);
		fclose(f);
		free(buf);
		return 1;
	}
	fclose(f);
	struct url_options opt;
	url_options_init(&opt);
	opt.max_len = 1 << 16;
	struct url *u = url_create(&opt), *base = url_create(&opt);
	struct reader r = { buf, (size_t)sz, 0, false };
	size_t sub_pass = 0, sub_fail = 0, all_pass = 0, all_fail = 0;
	ws(&r);
	if (r.i < r.n && r.s[r.i] == '[')
		r.i++;
	while (!r.err && u && base) {
		ws(&r);
		if (r.i >= r.n || r.s[r.i] == ']')
			break;
		if (r.s[r.i] == '{') {
			struct jcase c;
			jobject(&r, &c);
			if (!r.err && c.input.p) {
				bool subset;
				char why[8192];
				bool ok = run_case(u, base, &c, &subset, why, sizeof why);
				if (ok)
					all_pass++;
				else
					all_fail++;
				if (subset) {
					if (ok) {
						sub_pass++;
					} else {
						sub_fail++;
						printf("FAIL input=\"");
						print_escaped(c.input.p, c.input.n);
						printf("\" base=\"");
						if (c.base.p)
							print_escaped(c.base.p, c.base.n);
						printf("\" expected=\"");
						if (c.failure)
							printf("failure");
						else if (c.href.p)
							print_escaped(c.href.p, c.href.n);
						printf("\" got: ");
						print_escaped(why, strlen(why));
						printf("\n");
					}
				}
			}
			jfree(&c);
		} else {
			skip_value(&r);
		}
		ws(&r);
		if (r.i < r.n && r.s[r.i] == ',')
			r.i++;
	}
	url_destroy(u);
	url_destroy(base);
	free(buf);
	if (r.err) {
		fprintf(stderr, "JSON syntax error near byte %zu\n", r.i);
		printf("0 passed, 1 failed\n");
		return 1;
	}
	printf("all cases (informative): %zu passed, %zu failed (%.1f%%)\n", all_pass, all_fail,
	       all_pass + all_fail ? 100.0 * (double)all_pass / (double)(all_pass + all_fail)
	                           : 0.0);
	printf("http(s) subset:\n%zu passed, %zu failed\n", sub_pass, sub_fail);
	if (sub_pass + sub_fail < 100) {
		printf("too few http(s) cases read: the file is not the expected one\n");
		return 1;
	}
	return (double)sub_pass >= 0.99 * (double)(sub_pass + sub_fail) ? 0 : 1;
}
