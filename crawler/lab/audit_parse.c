/*
 * audit_parse.c: one crawl.log line into the fields the audit needs (see
 * crawl_log.h for the format). Only the fields the audit uses are checked:
 * timestamp, status, bytes, url, duration_ms, ip, flags and wait_ms when
 * present (a log may have 12 fields, without it); the others need only
 * exist.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/audit_int.h"
#include "crawler/store/crawl_log.h"

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const char *s, int n, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	*out = v;
	return 0;
}

int audit_parse_time(const char *s, size_t len, int64_t *ms)
{
	unsigned y, mo, d, h, mi, se, milli;
	if (len != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':' || s[19] != '.' || s[23] != 'Z')
		return -1;
	if (digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) ||
	    digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) || digits(s + 17, 2, &se) ||
	    digits(s + 20, 3, &milli))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
		return -1;
	int64_t days = days_from_civil(y, mo, d);
	*ms = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 + milli;
	return 0;
}

/* Splits url into the display name and the origin, written at *out. */
static const char *url_host(struct audit_rec *r, char *out)
{
	const char *u = r->url;
	const char *sep = strstr(u, "://");
	if (!sep || sep == u)
		return "url without scheme://";
	size_t slen = (size_t)(sep - u);
	const char *auth = sep + 3;
	size_t alen = strcspn(auth, "/?#");
	const char *at = memrchr(auth, '@', alen);
	if (at) {
		alen -= (size_t)(at + 1 - auth);
		auth = at + 1;
	}
	size_t hlen = alen;
	const char *port = NULL;
	if (alen > 0 && auth[0] == '[') {
		const char *close = memchr(auth, ']', alen);
		if (!close)
			return "url with a bad IPv6 host";
		hlen = (size_t)(close + 1 - auth);
	} else {
		const char *colon = memchr(auth, ':', alen);
		if (colon)
			hlen = (size_t)(colon - auth);
	}
	if (hlen == 0)
		return "url without host";
	if (hlen < alen) {
		if (auth[hlen] != ':' || hlen + 1 == alen)
			return "url with a bad port";
		port = auth + hlen + 1;
		for (size_t i = hlen + 1; i < alen; i++)
			if (auth[i] < '0' || auth[i] > '9')
				return "url with a bad port";
	}
	char *name = out;
	for (size_t i = 0; i < alen; i++)
		name[i] = i < hlen && auth[i] >= 'A' && auth[i] <= 'Z' ? (char)(auth[i] + 32)
		                                                       : auth[i];
	name[alen] = '\0';
	char *origin = name + alen + 1;
	size_t o = 0;
	for (size_t i = 0; i < slen; i++)
		origin[o++] = u[i] >= 'A' && u[i] <= 'Z' ? (char)(u[i] + 32) : u[i];
	memcpy(origin + o, "://", 3);
	o += 3;
	memcpy(origin + o, name, hlen);
	o += hlen;
	origin[o++] = ':';
	if (port) {
		size_t plen = alen - hlen - 1;
		memcpy(origin + o, port, plen);
		o += plen;
	} else {
		const char *def = slen == 5 && strncmp(origin, "https", 5) == 0 ? "443" : "80";
		memcpy(origin + o, def, strlen(def));
		o += strlen(def);
	}
	origin[o] = '\0';
	r->name = name;
	r->origin = origin;
	return NULL;
}

const char *audit_parse_line(const char *line, size_t len, struct audit_rec *r, char *scratch,
                             size_t cap)
{
	const char *f[CRAWL_LOG_FIELDS];
	size_t fl[CRAWL_LOG_FIELDS];
	if (cap < 3 * len + 64)
		return "line too long";
	int nf = crawl_log_split(line, len, f, fl);
	if (nf < 0)
		return "more than 13 tab-separated fields";
	if (nf < CRAWL_LOG_FIELDS - 1)
		return "fewer than 12 tab-separated fields";
	int64_t dur, bytes, status, wait = -1;
	if (audit_parse_time(f[CRAWL_LOG_F_TIME], fl[CRAWL_LOG_F_TIME], &r->end_ms) != 0)
		return "bad timestamp (want 2026-11-22T23:59:01.123Z)";
	if (crawl_log_parse_i64(f[CRAWL_LOG_F_STATUS], fl[CRAWL_LOG_F_STATUS], &status) != 0)
		return "bad status";
	if (crawl_log_parse_i64(f[CRAWL_LOG_F_BYTES], fl[CRAWL_LOG_F_BYTES], &bytes) != 0 ||
	    bytes < 0)
		return "bad bytes";
	if (crawl_log_parse_i64(f[CRAWL_LOG_F_DURATION], fl[CRAWL_LOG_F_DURATION], &dur) != 0 ||
	    dur < 0)
		return "bad duration_ms";
	if (nf == CRAWL_LOG_FIELDS &&
	    (crawl_log_parse_i64(f[CRAWL_LOG_F_WAIT], fl[CRAWL_LOG_F_WAIT], &wait) != 0 ||
	     wait < 0))
		return "bad wait_ms";
	r->wait_ms = wait;
	r->status = (long)status;
	r->bytes = (uint64_t)bytes;
	r->start_ms = r->end_ms - dur;
	r->robots = crawl_log_has_flag(f[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS], "robots");
	char *p = scratch;
	r->url = p;
	p = crawl_log_unescape(f[CRAWL_LOG_F_URL], fl[CRAWL_LOG_F_URL], p);
	if (!p)
		return "bad escape in url";
	const char *ip = p;
	p = crawl_log_unescape(f[CRAWL_LOG_F_IP], fl[CRAWL_LOG_F_IP], p);
	if (!p)
		return "bad escape in ip";
	r->ip = *ip ? ip : NULL;
	if (!*r->url)
		return "no url";
	return url_host(r, p);
}
