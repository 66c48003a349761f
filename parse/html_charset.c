/*
 * html_charset.c: encoding sniffing and iconv decoding (see html_charset.h).
 */
#include "parse/html_charset.h"

#include <errno.h>
#include <iconv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontier/base/ascii.h"

#define LABEL_MAX 40

struct html_decoder {
	iconv_t cd; /* (iconv_t)-1 when none is open */
	char cd_label[LABEL_MAX];
	char *buf;
	size_t cap;
};

struct html_decoder *html_decoder_create(void)
{
	struct html_decoder *d = calloc(1, sizeof *d);
	if (d)
		d->cd = (iconv_t)-1;
	return d;
}

void html_decoder_destroy(struct html_decoder *d)
{
	if (!d)
		return;
	if (d->cd != (iconv_t)-1)
		iconv_close(d->cd);
	free(d->buf);
	free(d);
}

static bool in_list(const char *label, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcasecmp(label, list[i]) == 0)
			return true;
	return false;
}

/* The iconv name for an Encoding Standard label; "UTF-8" for the UTF-8
 * labels (and, from a meta prescan, the UTF-16 ones). */
static const char *iconv_name(const char *label, bool from_meta)
{
	static const char *const utf8[] = { "utf-8", "utf8", "unicode-1-1-utf-8", NULL };
	static const char *const utf16[] = { "utf-16", "utf-16le", "utf-16be", NULL };
	static const char *const as1252[] = { "iso-8859-1", "iso8859-1",   "latin1",
		                              "l1",         "us-ascii",    "ascii",
		                              "iso_8859-1", "cp819",       "ibm819",
		                              "iso-ir-100", "csisolatin1", "windows-1252",
		                              "cp1252",     "x-cp1252",    NULL };
	static const char *const sjis[] = { "shift_jis",  "shift-jis",   "sjis",   "ms_kanji",
		                            "csshiftjis", "windows-31j", "x-sjis", NULL };
	static const char *const gbk[] = { "gb2312", "gbk", "chinese", "csgb2312", "x-gbk", NULL };
	if (in_list(label, utf8) || (from_meta && in_list(label, utf16)))
		return "UTF-8";
	if (in_list(label, as1252))
		return "CP1252";
	if (in_list(label, sjis))
		return "CP932";
	if (in_list(label, gbk))
		return "GBK";
	return label;
}

static bool is_label_char(unsigned char c)
{
	return ascii_is_alnum(c) || c == '-' || c == '_' || c == '.' || c == ':';
}

/* The charset label of a `<meta>` in the first 1024 bytes, copied into
 * label (LABEL_MAX bytes); false when there is none. */
static bool prescan_meta(const char *body, size_t len, char *label)
{
	size_t n = len < 1024 ? len : 1024;
	for (size_t i = 0; i + 5 < n; i++) {
		if (body[i] != '<' || strncasecmp(body + i + 1, "meta", 4) != 0)
			continue;
		const char *end = memchr(body + i, '>', n - i);
		size_t tag_end = end ? (size_t)(end - body) : n;
		for (size_t k = i + 5; k + 7 < tag_end; k++) {
			if (strncasecmp(body + k, "charset", 7) != 0)
				continue;
			size_t p = k + 7;
			while (p < tag_end && ascii_is_html_space((unsigned char)body[p]))
				p++;
			if (p >= tag_end || body[p] != '=')
				continue;
			p++;
			while (p < tag_end && (ascii_is_html_space((unsigned char)body[p]) ||
			                       body[p] == '"' || body[p] == '\''))
				p++;
			size_t ll = 0;
			while (p < tag_end && ll + 1 < LABEL_MAX &&
			       is_label_char((unsigned char)body[p]))
				label[ll++] = body[p++];
			label[ll] = '\0';
			return ll > 0;
		}
	}
	return false;
}

static bool valid_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + len;
	while (p < e) {
		if (*p < 0x80) {
			p++;
			continue;
		}
		size_t n = *p >= 0xF0 && *p <= 0xF4 ? 4 : *p >= 0xE0 ? 3 : *p >= 0xC2 ? 2 : 0;
		if (n == 0 || *p > 0xF4 || (size_t)(e - p) < n)
			return false;
		for (size_t i = 1; i < n; i++)
			if ((p[i] & 0xC0) != 0x80)
				return false;
		p += n;
	}
	return true;
}

/* Opens (or reuses) the descriptor for `name`; false when iconv does not
 * know it. */
static bool decoder_open(struct html_decoder *d, const char *name)
{
	if (d->cd != (iconv_t)-1 && strcasecmp(d->cd_label, name) == 0)
		return iconv(d->cd, NULL, NULL, NULL, NULL) != (size_t)-1;
	if (strlen(name) >= LABEL_MAX)
		return false;
	iconv_t cd = iconv_open("UTF-8", name);
	if (cd == (iconv_t)-1)
		return false;
	if (d->cd != (iconv_t)-1)
		iconv_close(d->cd);
	d->cd = cd;
	snprintf(d->cd_label, sizeof d->cd_label, "%s", name);
	return true;
}

/* Converts with the open descriptor; invalid bytes become U+FFFD. */
static int decoder_convert(struct html_decoder *d, const char *body, size_t len, size_t *out_len)
{
	if (len > (SIZE_MAX - 16) / 3)
		return -1;
	size_t need = 3 * len + 16;
	if (need > d->cap) {
		char *nb = realloc(d->buf, need);
		if (!nb)
			return -1;
		d->buf = nb;
		d->cap = need;
	}
	char *in = (char *)body, *out = d->buf;
	size_t in_left = len, out_left = d->cap;
	while (in_left > 0) {
		if (iconv(d->cd, &in, &in_left, &out, &out_left) != (size_t)-1)
			break;
		if ((errno != EILSEQ && errno != EINVAL) || out_left < 3)
			break; /* E2BIG cannot happen with 3 bytes out per byte in */
		memcpy(out, "\xEF\xBF\xBD", 3);
		out += 3;
		out_left -= 3;
		in++;
		in_left--;
	}
	*out_len = (size_t)(out - d->buf);
	return 0;
}

/* Decodes with `name` (an iconv name, or "UTF-8" for no copy): 1 when iconv
 * does not know it, else html_decoder_run's result. */
static int decode_as(struct html_decoder *d, const char *name, const char *body, size_t len,
                     const char **out, size_t *out_len)
{
	if (strcmp(name, "UTF-8") == 0) {
		*out = body;
		*out_len = len;
		return 0;
	}
	if (!decoder_open(d, name))
		return 1;
	if (decoder_convert(d, body, len, out_len) != 0)
		return -1;
	*out = d->buf;
	return 0;
}

int html_decoder_run(struct html_decoder *d, const char *charset, const char *body, size_t len,
                     const char **out, size_t *out_len)
{
	if (len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0)
		return decode_as(d, "UTF-8", body + 3, len - 3, out, out_len);
	if (len >= 2 && memcmp(body, "\xFF\xFE", 2) == 0)
		return decode_as(d, "UTF-16LE", body + 2, len - 2, out, out_len) < 0 ? -1 : 0;
	if (len >= 2 && memcmp(body, "\xFE\xFF", 2) == 0)
		return decode_as(d, "UTF-16BE", body + 2, len - 2, out, out_len) < 0 ? -1 : 0;
	int rc = 1;
	if (charset && *charset)
		rc = decode_as(d, iconv_name(charset, false), body, len, out, out_len);
	char label[LABEL_MAX];
	if (rc == 1 && prescan_meta(body, len, label))
		rc = decode_as(d, iconv_name(label, true), body, len, out, out_len);
	if (rc == 1)
		rc = decode_as(d, valid_utf8(body, len) ? "UTF-8" : "CP1252", body, len, out,
		               out_len);
	if (rc == 1) { /* no CP1252 in this iconv: the bytes as they are */
		*out = body;
		*out_len = len;
		rc = 0;
	}
	return rc < 0 ? -1 : 0;
}
