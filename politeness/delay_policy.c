/*
 * delay_policy.c: the delay arithmetic of delay_policy.h and the HTTP-date /
 * Retry-After parsers. Pure functions of their arguments: no clock, no state.
 */
#include "politeness/delay_policy.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#define SEC 1000000ull

void politeness_config_default(struct politeness_config *c)
{
	memset(c, 0, sizeof *c);
	c->policy = DELAY_POLICY_FIXED;
	c->host_delay_us = 2 * SEC;
	c->ip_delay_us = SEC / 2;
	c->ip_politeness = 1;
	c->ratio = 0.1;
	c->visit_budget_us = SEC;
	c->min_delay_us = SEC / 2;
	c->max_delay_us = 60 * SEC;
	c->max_urls_per_visit = 0;
	c->crawl_delay_cap_us = 30 * SEC;
	c->backoff_base_us = 10 * SEC;
	c->backoff_max_us = 3600 * SEC;
	c->max_consecutive_errors = 8;
	c->retry_after_cap_us = 3600 * SEC;
}

int politeness_config_check(const struct politeness_config *c)
{
	if (c == NULL)
		return -1;
	if (c->policy != DELAY_POLICY_FIXED && c->policy != DELAY_POLICY_RATIO)
		return -1;
	if (!(c->ratio > 0.0 && c->ratio <= 1.0))
		return -1;
	if (c->min_delay_us > c->max_delay_us)
		return -1;
	return 0;
}

static uint64_t ratio_wait(const struct politeness_config *c, uint64_t start, uint64_t end)
{
	uint64_t spent = end > start ? end - start : 0;
	double w = (double)spent / c->ratio;
	uint64_t wait = w >= 1.8e19 ? UINT64_MAX : (uint64_t)w;

	if (wait < c->min_delay_us)
		wait = c->min_delay_us;
	if (wait > c->max_delay_us)
		wait = c->max_delay_us;
	return wait;
}

uint64_t delay_policy_host_wait(const struct politeness_config *c, uint64_t start_us,
                                uint64_t end_us)
{
	if (c->policy == DELAY_POLICY_RATIO)
		return ratio_wait(c, start_us, end_us);
	return c->host_delay_us;
}

uint64_t delay_policy_ip_wait(const struct politeness_config *c, uint64_t start_us, uint64_t end_us)
{
	if (c->policy == DELAY_POLICY_RATIO) {
		uint64_t w = ratio_wait(c, start_us, end_us);
		return w > c->ip_delay_us ? w : c->ip_delay_us;
	}
	return c->ip_delay_us;
}

uint64_t delay_policy_backoff(const struct politeness_config *c, uint32_t k)
{
	uint64_t d;

	if (k == 0)
		return 0;
	d = c->backoff_base_us;
	while (--k > 0 && d < c->backoff_max_us) {
		if (d > UINT64_MAX / 2) {
			d = UINT64_MAX;
			break;
		}
		d *= 2;
	}
	return d > c->backoff_max_us ? c->backoff_max_us : d;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t delay_policy_next_time(const struct politeness_config *c, const struct visit_outcome *o,
                                uint64_t end_us, uint64_t crawl_delay_us, uint32_t errors)
{
	uint64_t wait, next;

	if (o->kind == VISIT_NONE)
		return end_us;
	wait = delay_policy_host_wait(c, o->start_us, end_us);
	if (crawl_delay_us > 0) {
		uint64_t cd = crawl_delay_us < c->crawl_delay_cap_us ? crawl_delay_us
		                                                     : c->crawl_delay_cap_us;
		if (cd > wait)
			wait = cd;
	}
	if (errors > 0) {
		uint64_t b = delay_policy_backoff(c, errors);
		if (b > wait)
			wait = b;
	}
	next = sat_add(end_us, wait);
	if (o->retry_after_us > next) {
		uint64_t cap = sat_add(end_us, c->retry_after_cap_us);
		next = o->retry_after_us < cap ? o->retry_after_us : cap;
	}
	return next;
}

/* ----- HTTP-date (RFC 9110 5.6.7) ----- */

static const char *const months[12] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
static const char *const wdays[7] = { "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun" };
static const char *const wdays_long[7] = { "Monday", "Tuesday",  "Wednesday", "Thursday",
	                                   "Friday", "Saturday", "Sunday" };

/* Reads exactly n digits. */
static int digits(const char **p, int n, int *v)
{
	int i, x = 0;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		x = x * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*v = x;
	return 0;
}

static int lit(const char **p, const char *s)
{
	size_t n = strlen(s);

	if (strncmp(*p, s, n) != 0)
		return -1;
	*p += n;
	return 0;
}

static int month(const char **p, int *m)
{
	int i;

	for (i = 0; i < 12; i++) {
		if (strncmp(*p, months[i], 3) == 0) {
			*p += 3;
			*m = i + 1;
			return 0;
		}
	}
	return -1;
}

static int wday(const char **p, const char *const *names)
{
	int i;

	for (i = 0; i < 7; i++) {
		size_t n = strlen(names[i]);
		if (strncmp(*p, names[i], n) == 0) {
			*p += n;
			return 0;
		}
	}
	return -1;
}

static int hms(const char **p, int *h, int *mi, int *s)
{
	if (digits(p, 2, h) || lit(p, ":") || digits(p, 2, mi) || lit(p, ":") || digits(p, 2, s))
		return -1;
	return *h <= 23 && *mi <= 59 && *s <= 60 ? 0 : -1;
}

/* Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

int politeness_parse_http_date(const char *s, int64_t *unix_seconds)
{
	const char *p = s;
	int y = 0, m = 0, d = 0, h = 0, mi = 0, sec = 0;

	if (s == NULL || unix_seconds == NULL)
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (wday(&p, wdays_long) == 0) {
		/* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
		if (lit(&p, ", ") || digits(&p, 2, &d) || lit(&p, "-") || month(&p, &m) ||
		    lit(&p, "-") || digits(&p, 2, &y) || lit(&p, " ") || hms(&p, &h, &mi, &sec) ||
		    lit(&p, " GMT"))
			return -1;
		/* RFC 9110: a two-digit year more than 50 years in the future is in the past
		 * century; we take 70..99 as 19xx and 00..69 as 20xx. */
		y += y >= 70 ? 1900 : 2000;
	} else if (wday(&p, wdays) == 0) {
		if (*p == ',') {
			/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
			if (lit(&p, ", ") || digits(&p, 2, &d) || lit(&p, " ") || month(&p, &m) ||
			    lit(&p, " ") || digits(&p, 4, &y) || lit(&p, " ") ||
			    hms(&p, &h, &mi, &sec) || lit(&p, " GMT"))
				return -1;
		} else {
			/* asctime: Sun Nov  6 08:49:37 1994 */
			if (lit(&p, " ") || month(&p, &m) || lit(&p, " "))
				return -1;
			if (*p == ' ') {
				p++;
				if (digits(&p, 1, &d))
					return -1;
			} else if (digits(&p, 2, &d)) {
				return -1;
			}
			if (lit(&p, " ") || hms(&p, &h, &mi, &sec) || lit(&p, " ") ||
			    digits(&p, 4, &y))
				return -1;
		}
	} else {
		return -1;
	}
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (*p != '\0' || d < 1 || d > days_in_month(y, m))
		return -1;
	*unix_seconds = days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + sec;
	return 0;
}

int politeness_parse_retry_after(const char *value, uint64_t now_us, int64_t now_unix_s,
                                 uint64_t *at_us)
{
	const char *p = value;

	if (value == NULL || at_us == NULL)
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (isdigit((unsigned char)*p)) {
		uint64_t secs = 0;
		while (isdigit((unsigned char)*p)) {
			if (secs > (UINT64_MAX / SEC - 9) / 10)
				secs = UINT64_MAX /
				       SEC; /* absurd: saturate, the cap applies later */
			else
				secs = secs * 10 + (uint64_t)(*p - '0');
			p++;
		}
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (*p != '\0')
			return -1;
		*at_us = sat_add(now_us, secs * SEC);
		return 0;
	} else {
		int64_t t;
		if (politeness_parse_http_date(p, &t) != 0)
			return -1;
		if (t <= now_unix_s)
			*at_us = now_us;
		else
			*at_us = sat_add(now_us, (uint64_t)(t - now_unix_s) * SEC);
		return 0;
	}
}
