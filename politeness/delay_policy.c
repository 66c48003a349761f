/*
 * delay_policy.c: the delay arithmetic of delay_policy.h and the HTTP-date /
 * Retry-After parsers. Pure functions of their arguments: no clock, no state.
 */
#include "politeness/delay_policy.h"
#include "politeness/robots.h"

#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#define SEC 1000000ull

static const char *const policy_names[] = { [DELAY_POLICY_FIXED] = "fixed",
	                                    [DELAY_POLICY_RATIO] = "ratio",
	                                    [DELAY_POLICY_ADAPTIVE] = "adaptive" };
#define N_POLICIES (sizeof policy_names / sizeof policy_names[0])

const char *delay_policy_name(enum delay_policy_kind k)
{
	return (size_t)k < N_POLICIES ? policy_names[k] : "?";
}

int delay_policy_from_name(const char *s, enum delay_policy_kind *k)
{
	for (size_t i = 0; s != NULL && i < N_POLICIES; i++) {
		if (strcmp(s, policy_names[i]) == 0) {
			*k = (enum delay_policy_kind)i;
			return 0;
		}
	}
	return -1;
}

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
	c->adaptive_factor = 5.0;
	c->adaptive_smoothing = 0.3;
	c->adaptive_slowdown = 3.0;
	c->max_urls_per_visit = 0;
	c->crawl_delay_cap_us = 30 * SEC;
	c->backoff_base_us = 10 * SEC;
	c->backoff_max_us = 3600 * SEC;
	c->max_consecutive_errors = 8;
	c->retry_after_cap_us = 3600 * SEC;
	c->robots_expiry_us = 24 * 3600 * SEC;
	c->robots_cache_bytes = 64u << 20;
	c->robots_max_wildcard_rules = ROBOTS_WILDCARD_CAP_DEFAULT;
}

int politeness_config_check(const struct politeness_config *c)
{
	if (c == NULL)
		return -1;
	if (c->policy != DELAY_POLICY_FIXED && c->policy != DELAY_POLICY_RATIO &&
	    c->policy != DELAY_POLICY_ADAPTIVE)
		return -1;
	if (!(c->ratio > 0.0 && c->ratio <= 1.0))
		return -1;
	if (!(c->adaptive_factor > 0.0 && c->adaptive_factor < 1e300) ||
	    !(c->adaptive_smoothing > 0.0 && c->adaptive_smoothing <= 1.0) ||
	    !(c->adaptive_slowdown >= 1.0 && c->adaptive_slowdown < 1e300))
		return -1;
	if (c->min_delay_us > c->max_delay_us)
		return -1;
	return 0;
}

/* A non-negative real number of microseconds as a wait, saturating. */
static uint64_t us_of_double(double w)
{
	if (!(w > 0.0))
		return 0;
	return w >= 1.8e19 ? UINT64_MAX : (uint64_t)w;
}

static uint64_t clamp_wait(const struct politeness_config *c, uint64_t wait)
{
	if (wait < c->min_delay_us)
		wait = c->min_delay_us;
	if (wait > c->max_delay_us)
		wait = c->max_delay_us;
	return wait;
}

static uint64_t ratio_wait(const struct politeness_config *c, uint64_t start, uint64_t end)
{
	uint64_t spent = end > start ? end - start : 0;

	return clamp_wait(c, us_of_double((double)spent / c->ratio));
}

/* ----- adaptive policy ----- */

uint64_t delay_estimate_wait(const struct politeness_config *c, const struct delay_estimate *e)
{
	uint64_t w = us_of_double(c->adaptive_factor * (double)e->ewma_us);
	uint32_t k;

	if (w < c->min_delay_us)
		w = c->min_delay_us;
	for (k = 0; k < e->level && w < c->max_delay_us; k++)
		w = w > UINT64_MAX / 2 ? UINT64_MAX : w * 2;
	return w > c->max_delay_us ? c->max_delay_us : w;
}

/* One more level of back-off, unless the wait is already at its cap. */
static void estimate_raise(const struct politeness_config *c, struct delay_estimate *e)
{
	if (e->level < DELAY_ADAPTIVE_MAX_LEVEL && delay_estimate_wait(c, e) < c->max_delay_us)
		e->level++;
}

struct delay_estimate delay_estimate_update(const struct politeness_config *c,
                                            struct delay_estimate e, const struct visit_outcome *o,
                                            uint64_t end_us)
{
	uint64_t sample;
	double ewma;

	if (o->kind == VISIT_NONE)
		return e;
	if (o->kind != VISIT_OK) {
		estimate_raise(c, &e);
		return e;
	}
	sample =
	        (end_us > o->start_us ? end_us - o->start_us : 0) / (o->requests ? o->requests : 1);
	if (e.ewma_us > 0 && (double)sample > c->adaptive_slowdown * (double)e.ewma_us)
		estimate_raise(c, &e);
	else if (e.level > 0)
		e.level--;
	if (e.ewma_us == 0) {
		e.ewma_us = sample;
		return e;
	}
	/* ewma + a * (sample - ewma), in doubles: both terms are below 2^64 */
	ewma = (double)e.ewma_us + c->adaptive_smoothing * ((double)sample - (double)e.ewma_us);
	e.ewma_us = us_of_double(ewma + 0.5);
	return e;
}

uint64_t delay_policy_host_wait(const struct politeness_config *c, uint64_t start_us,
                                uint64_t end_us)
{
	if (c->policy == DELAY_POLICY_RATIO)
		return ratio_wait(c, start_us, end_us);
	if (c->policy == DELAY_POLICY_ADAPTIVE) {
		struct delay_estimate e = { end_us > start_us ? end_us - start_us : 0, 0 };
		return delay_estimate_wait(c, &e);
	}
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
	return delay_policy_next_time_est(c, o, end_us, crawl_delay_us, errors, NULL);
}

uint64_t delay_policy_next_time_est(const struct politeness_config *c,
                                    const struct visit_outcome *o, uint64_t end_us,
                                    uint64_t crawl_delay_us, uint32_t errors,
                                    const struct delay_estimate *e)
{
	uint64_t wait, next;

	if (o->kind == VISIT_NONE)
		return end_us;
	if (c->policy == DELAY_POLICY_ADAPTIVE && e != NULL)
		wait = delay_estimate_wait(c, e);
	else
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
		/* the capped Retry-After only ever lengthens the policy's wait */
		uint64_t cap = sat_add(end_us, c->retry_after_cap_us);
		uint64_t ra = o->retry_after_us < cap ? o->retry_after_us : cap;
		if (ra > next)
			next = ra;
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

uint64_t delay_policy_after_seconds(uint64_t now_us, uint64_t s)
{
	return sat_add(now_us, s > UINT64_MAX / SEC ? UINT64_MAX : s * SEC);
}

/* A decimal number 0.d1d2d3... x 10^point: its first significant digits,
 * enough to tell every value below 2^64 exactly (20 integer digits) and
 * whether it has a fraction to round up. */
struct decimal {
	unsigned char digit[24];
	size_t n;      /* digits kept */
	bool more;     /* a nonzero digit past the kept ones */
	int64_t point; /* the integer part is digit[0 .. point) */
};

static void decimal_push(struct decimal *d, int c)
{
	if (d->n < sizeof d->digit)
		d->digit[d->n++] = (unsigned char)c;
	else if (c != 0)
		d->more = true;
}

/* Reads an exponent "e[+-]digits" at s[*i] into d->point (magnitudes past
 * EXP_MAX saturate there: such values are 0 or UINT64_MAX anyway). An 'e'
 * without digits is not part of the number. */
static void parse_exponent(const char *s, size_t len, size_t *i, struct decimal *d)
{
	enum { EXP_MAX = 100000 };
	size_t j = *i + 1;
	int64_t e = 0;
	int neg = 0;

	if (*i >= len || (s[*i] != 'e' && s[*i] != 'E'))
		return;
	if (j < len && (s[j] == '+' || s[j] == '-'))
		neg = s[j++] == '-';
	if (j >= len || !isdigit((unsigned char)s[j]))
		return;
	for (; j < len && isdigit((unsigned char)s[j]); j++)
		if (e < EXP_MAX)
			e = e * 10 + (s[j] - '0');
	d->point += neg ? -e : e;
	*i = j;
}

/* The integer value of d rounded up, saturating at UINT64_MAX. */
static uint64_t decimal_ceil(const struct decimal *d)
{
	uint64_t v = 0;
	bool frac = d->more;

	if (d->n == 0)
		return 0;
	if (d->point > 20) /* 10^20 > UINT64_MAX */
		return UINT64_MAX;
	for (int64_t k = 0; k < d->point; k++) {
		unsigned c = (size_t)k < d->n ? d->digit[k] : 0;
		if (v > (UINT64_MAX - c) / 10)
			return UINT64_MAX;
		v = v * 10 + c;
	}
	for (size_t k = d->point > 0 ? (size_t)d->point : 0; k < d->n; k++)
		frac = frac || d->digit[k] != 0;
	return frac && v < UINT64_MAX ? v + 1 : v;
}

int delay_policy_parse_seconds(const char *s, size_t len, uint64_t *us, size_t *used)
{
	struct decimal d = { .n = 0 };
	size_t i = 0, ndigits = 0;

	if (s == NULL || us == NULL || used == NULL)
		return -1;
	if (i < len && s[i] == '+')
		i++;
	if (len - i >= 3 && strncasecmp(s + i, "inf", 3) == 0) {
		*us = UINT64_MAX;
		*used = i + (len - i >= 8 && strncasecmp(s + i, "infinity", 8) == 0 ? 8 : 3);
		return 0;
	}
	for (; i < len && isdigit((unsigned char)s[i]); i++, ndigits++) {
		if (d.n > 0 || s[i] != '0') {
			decimal_push(&d, s[i] - '0');
			d.point++;
		}
	}
	if (i < len && s[i] == '.') {
		for (i++; i < len && isdigit((unsigned char)s[i]); i++, ndigits++) {
			if (d.n > 0 || s[i] != '0')
				decimal_push(&d, s[i] - '0');
			else
				d.point--; /* a leading zero of the fraction */
		}
	}
	if (ndigits == 0)
		return -1;
	parse_exponent(s, len, &i, &d);
	d.point += 6; /* seconds to microseconds */
	*us = decimal_ceil(&d);
	*used = i;
	return 0;
}

int politeness_parse_retry_after(const char *value, uint64_t now_us, int64_t now_unix_s,
                                 uint64_t *at_us)
{
	const char *p = value;
	uint64_t us;
	size_t used;
	int64_t t;

	if (value == NULL || at_us == NULL)
		return -1;
	while (*p == ' ' || *p == '\t')
		p++;
	if (delay_policy_parse_seconds(p, strlen(p), &us, &used) == 0) {
		p += used;
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (*p != '\0')
			return -1;
		*at_us = sat_add(now_us, us);
		return 0;
	}
	if (politeness_parse_http_date(p, &t) != 0)
		return -1;
	/* t > now_unix_s: the difference fits in 64 unsigned bits however far
	 * apart the two are, where a signed subtraction could overflow. */
	*at_us = t <= now_unix_s
	                 ? now_us
	                 : delay_policy_after_seconds(now_us, (uint64_t)t - (uint64_t)now_unix_s);
	return 0;
}
