/*
 * delay_policy.h: how long a host (and its IP) must rest after a visit.
 *
 * The policies count from the END of the previous visit (course notes 2.7):
 *   - fixed: wait host_delay (IP: ip_delay) after each visit; a visit fetches
 *     up to max_urls_per_visit URLs (default 1).
 *   - ratio: a keep-alive visit fetches URLs of one host on one connection
 *     until the time budget visit_budget (s) is used, actual time s'; then
 *     the host waits s'/ratio (ratio = p, the fraction of time spent
 *     downloading: Heritrix's delay factor is 1/p), clamped to
 *     [min_delay, max_delay]. The IP waits max(ip_delay, that same wait).
 *   - adaptive: the wait follows the server's response time. Each host keeps
 *     a struct delay_estimate (owned by its politeness state): an EWMA of
 *     its response times (one sample a visit: the visit's time over its
 *     requests; weight adaptive_smoothing, 1 = the last fetch only, which
 *     is Heritrix's delay factor) and a back-off level L. The host waits
 *     max(min_delay, adaptive_factor * EWMA) * 2^L, at most max_delay.
 *     L rises by one on a 429/503 or error visit, or on a visit whose
 *     sample exceeds adaptive_slowdown times the EWMA (a sharp slowdown),
 *     and only while the wait is below max_delay; every other visit lowers
 *     it by one (gradual recovery). The IP waits ip_delay; visits fetch
 *     max_urls_per_visit URLs (default 1) as under the fixed policy.
 * Adjustments, applied to the policy delay in this order:
 *   - robots.txt Crawl-delay raises the host delay, capped at crawl_delay_cap;
 *   - consecutive errors (connect failures, timeouts, 5xx) raise it to at
 *     least backoff_base * 2^(k-1), capped at backoff_max, k = errors so far;
 *     after max_consecutive_errors the host is retired;
 *   - Retry-After (429/503) pushes the next time to at least the given
 *     instant, capped at end + retry_after_cap (the cap bounds what the
 *     server asks, never shortens the wait set above).
 * All times are microseconds on the caller's clock (the functions never read
 * a clock), so the policy can be tested exactly.
 */
#ifndef POLITENESS_DELAY_POLICY_H
#define POLITENESS_DELAY_POLICY_H

#include <stddef.h>
#include <stdint.h>

enum delay_policy_kind {
	DELAY_POLICY_FIXED = 0,
	DELAY_POLICY_RATIO = 1,
	DELAY_POLICY_ADAPTIVE = 2,
};

struct politeness_config {
	enum delay_policy_kind policy;   /* default FIXED */
	uint64_t host_delay_us;          /* fixed policy, per host; default 2 s */
	uint64_t ip_delay_us;            /* per IP (both policies); default 0.5 s */
	int ip_politeness;               /* 1 (default): per-IP token and delay; 0: off */
	double ratio;                    /* ratio policy p in (0,1]; default 0.1 (wait 10x) */
	uint64_t visit_budget_us;        /* ratio policy s; default 1 s */
	uint64_t min_delay_us;           /* ratio and adaptive clamp; default 0.5 s */
	uint64_t max_delay_us;           /* ratio and adaptive clamp; default 60 s */
	double adaptive_factor;          /* adaptive: wait = factor * EWMA; default 5, > 0 */
	double adaptive_smoothing;       /* adaptive: EWMA weight of a sample, (0,1]; default 0.3 */
	double adaptive_slowdown;        /* adaptive: back off when a sample > this * EWMA; >= 1,
					  * default 3 */
	uint32_t max_urls_per_visit;     /* 0 (default) = policy default: fixed 1, ratio 100 */
	uint64_t crawl_delay_cap_us;     /* cap for robots Crawl-delay; default 30 s */
	uint64_t backoff_base_us;        /* first error backoff; default 10 s */
	uint64_t backoff_max_us;         /* default 1 h */
	uint32_t max_consecutive_errors; /* retire after this many; default 8; 0 = never */
	uint64_t retry_after_cap_us;     /* default 1 h */
	/* robots.txt cache (politeness.h): how long a fetched robots.txt is
	 * used (RFC 9309 2.4: 24 h at most, the default), and the bytes of
	 * parsed rules kept for all hosts (default 64 MiB; 0 = no bound) */
	uint64_t robots_expiry_us;
	uint64_t robots_cache_bytes;
	uint32_t robots_max_wildcard_rules; /* robots.txt wildcard rules one check may
	                                     * meet (robots_wildcard_cap_set); default
	                                     * ROBOTS_WILDCARD_CAP_DEFAULT; 0 = no cap */
};

/* What happened during a visit (given to politeness_release). */
enum visit_kind {
	VISIT_OK = 0,    /* requests made, no host-level failure (4xx pages count as ok) */
	VISIT_ERROR = 1, /* connect failure, timeout, DNS failure, 5xx: counts toward retirement */
	VISIT_RETRY_LATER =
	        2,      /* 429 (or 503 judged transient): honour retry_after_us, no error count */
	VISIT_NONE = 3, /* no request was made (e.g. only DNS resolved): no delay, no count */
};

struct visit_outcome {
	enum visit_kind kind;
	uint64_t start_us;       /* when the visit began (for the ratio policy's s') */
	uint32_t requests;       /* requests made (0 with VISIT_NONE) */
	uint64_t retry_after_us; /* absolute time from Retry-After, 0 = none */
};

/* The adaptive policy's per-host state: all zero before the first visit. */
struct delay_estimate {
	uint64_t ewma_us; /* smoothed response time; 0 = no sample yet */
	uint32_t level;   /* back-off: the wait is doubled level times */
};
#define DELAY_ADAPTIVE_MAX_LEVEL 32

/* The policy's name: "fixed", "ratio", "adaptive" ("?" for another value). */
const char *delay_policy_name(enum delay_policy_kind k);
/* The policy named s (exactly, as above): 0 with *k set, or -1. */
int delay_policy_from_name(const char *s, enum delay_policy_kind *k);

/* Fills *c with the defaults above. */
void politeness_config_default(struct politeness_config *c);
/* Checks a config: returns 0 if usable, -1 otherwise (ratio out of (0,1],
 * min_delay > max_delay, unknown policy, adaptive_factor not > 0,
 * adaptive_smoothing out of (0,1], adaptive_slowdown below 1). */
int politeness_config_check(const struct politeness_config *c);

/* The host delay after a visit that ran from start_us to end_us, before
 * crawl-delay, backoff and Retry-After. Pure function. The adaptive policy
 * without an estimate takes the visit's whole time as its only sample. */
uint64_t delay_policy_host_wait(const struct politeness_config *c, uint64_t start_us,
                                uint64_t end_us);
/* The IP delay after such a visit. Pure function. */
uint64_t delay_policy_ip_wait(const struct politeness_config *c, uint64_t start_us,
                              uint64_t end_us);
/* Backoff after k >= 1 consecutive errors: base * 2^(k-1), capped. 0 for k == 0. */
uint64_t delay_policy_backoff(const struct politeness_config *c, uint32_t k);
/* Full next-allowed time of a host after a visit ending at end_us, given its
 * crawl-delay (0 = none) and its consecutive errors after this visit. */
uint64_t delay_policy_next_time(const struct politeness_config *c, const struct visit_outcome *o,
                                uint64_t end_us, uint64_t crawl_delay_us, uint32_t errors);

/* The estimate after a visit that ran from o->start_us to end_us (see the
 * adaptive policy above): VISIT_NONE leaves it; VISIT_ERROR and
 * VISIT_RETRY_LATER raise the level and add no sample; VISIT_OK adds the
 * sample (end - start) / max(requests, 1), raising the level if it exceeds
 * adaptive_slowdown times the old EWMA, else lowering it. Pure function. */
struct delay_estimate delay_estimate_update(const struct politeness_config *c,
                                            struct delay_estimate e, const struct visit_outcome *o,
                                            uint64_t end_us);
/* The adaptive wait the estimate gives: max(min_delay, factor * EWMA) *
 * 2^level, at most max_delay, saturating. Pure function. */
uint64_t delay_estimate_wait(const struct politeness_config *c, const struct delay_estimate *e);
/* delay_policy_next_time with the host's estimate (already updated with
 * this visit): under the adaptive policy the host delay is
 * delay_estimate_wait(c, e); NULL e, or another policy, is
 * delay_policy_next_time. */
uint64_t delay_policy_next_time_est(const struct politeness_config *c,
                                    const struct visit_outcome *o, uint64_t end_us,
                                    uint64_t crawl_delay_us, uint32_t errors,
                                    const struct delay_estimate *e);

/* now_us + seconds s, saturating at UINT64_MAX instead of wrapping: a
 * huge delay a server asks for stays huge until a cap applies. */
uint64_t delay_policy_after_seconds(uint64_t now_us, uint64_t s);

/* Parses a number of seconds a server sent (robots.txt Crawl-delay, the
 * delay-seconds of Retry-After) at the start of s[len]: an optional '+',
 * digits with an optional fraction and exponent ("2.5", ".5", "2e13"), or
 * "inf" / "infinity" (any case). *us receives the value in microseconds,
 * rounded up and saturating at UINT64_MAX, so any number too large for the
 * clock means "as long as the cap allows", never a wrapped small one; *used
 * the bytes read (the caller judges what follows). Returns 0, or -1 when s
 * starts with no such number ('-', "nan", empty: nothing a delay can be). */
int delay_policy_parse_seconds(const char *s, size_t len, uint64_t *us, size_t *used);

/* Parses an HTTP-date (RFC 9110 5.6.7: IMF-fixdate "Sun, 06 Nov 1994
 * 08:49:37 GMT", obsolete RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT", asctime
 * "Sun Nov  6 08:49:37 1994") into Unix seconds. Returns 0 or -1. */
int politeness_parse_http_date(const char *s, int64_t *unix_seconds);
/* Parses a Retry-After value: delay-seconds (read leniently by
 * delay_policy_parse_seconds, so "1.5" and "2e13" count, saturating) or an
 * HTTP-date. now_us is the current time on the caller's clock and now_unix_s
 * the same instant in Unix seconds (to turn a date into the caller's clock);
 * *at_us receives the absolute time on the caller's clock (a past date gives
 * now_us; a time beyond the clock gives UINT64_MAX, for the cap to clamp).
 * Returns 0 or -1 on a malformed value. */
int politeness_parse_retry_after(const char *value, uint64_t now_us, int64_t now_unix_s,
                                 uint64_t *at_us);

#endif
