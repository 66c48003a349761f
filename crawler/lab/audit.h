/*
 * audit.h: the politeness audit of a finished crawl (`crawler audit DIR`).
 *
 * What it reads. DIR/crawl.log (crawl_log.h), DIR/crawl.conf (the crawl's
 * effective configuration, written at its start: only [politeness] policy,
 * host_delay_ms, min_delay_ms, ip_delay_ms, ip_politeness, ratio,
 * max_urls_per_visit are
 * used; missing keys keep the crawler's defaults) and DIR/stats.json (pages,
 * requests, robots_fetches, elapsed_s, only to cross-check). A crawl resumed
 * with overriding flags is judged against the first run's crawl.conf.
 *
 * What it assumes about the log.
 *   - One line per request that was started, 13 tab-separated fields (12
 *     in logs written before wait_ms); lines
 *     starting with '#' are headers. Any other line (wrong field count, bad
 *     number, timestamp or escape, a URL without host, over 1 MiB, a last
 *     line without newline) is malformed: counted, named on stderr (the
 *     first AUDIT_MAX_MESSAGES) and skipped; the audit goes on.
 *   - timestamp is the END of the request (wall clock, truncated to the
 *     millisecond); duration_ms is measured on a monotonic clock and
 *     truncated. So start = end - duration, and the resolution is 1 ms: an
 *     estimated gap lies within (-1, +2) ms of the true one, and a gap is a
 *     violation only below the required delay minus AUDIT_TOLERANCE_MS.
 *   - The host is the URL's authority: the key is scheme://host:port (port
 *     filled in from the scheme), as the crawler's politeness keys hosts;
 *     reports show host[:port] as written in the URL. robots.txt fetches
 *     (flag `robots`) are requests to their host like any other.
 *   - The ip field names the address contacted; a line without one ("-") is
 *     counted for its host but belongs to no IP.
 *   - Lines are roughly, not strictly, in time order (parse threads finish
 *     out of order): each host keeps its last AUDIT_HOST_WINDOW requests and
 *     each IP its last AUDIT_IP_WINDOW sorted by start before judging the
 *     oldest. A request older than one already judged is counted as "late"
 *     (its gap is lost; its request, bytes and busy time count) and doubles
 *     its entity's window, up to 32 times the first size.
 *
 * Gaps. For requests of one host (or IP) sorted by start, the gap before a
 * request is its start minus the latest end of the requests before it
 * (negative: they overlap). Minimum: exact. Median: exact for the first
 * AUDIT_EXACT_GAPS gaps of an entity (4 bytes each); beyond, a log-linear
 * histogram (1 ms buckets below 64 ms, then 32 buckets per octave: a
 * median within 1.6%, 3.4 KiB per entity) replaces the list. Why: most
 * hosts of a big crawl have few requests and get exact figures for 4 bytes
 * a gap; a host with millions of requests costs 3.4 KiB, not 4 MiB. Memory
 * is so at most ~4 bytes per log line plus ~600 bytes per host and ~1.4
 * KiB per IP (names, state and the window), plus 48 bytes per second of
 * the crawl's timeline.
 *
 * Rules judged (AUDIT_TOLERANCE_MS below each):
 *   - host: fixed policy with one URL per visit: each gap >= max(host delay,
 *     ip delay if ip_politeness); adaptive policy with one URL per visit:
 *     each gap >= max(min delay, that ip delay) (the wait the estimate set
 *     is not in the log). Otherwise (ratio policy, several URLs per
 *     visit: the log does not mark where a visit ends) only overlaps, since
 *     a host is never visited twice at once.
 *   - host, every policy: a line with wait_ms (the rest the politeness
 *     required after the host's previous visit: policy wait, Crawl-delay,
 *     back-off and Retry-After together) needs a gap >= wait_ms, so those
 *     are judged in sum, not one by one.
 *   - ip (ip_politeness on): a gap between requests of two different hosts
 *     on one IP >= ip delay. Off: IPs are reported, not judged.
 * Not judged one by one (the log has only their sum, wait_ms; logs before
 * it not at all): robots.txt Crawl-delay per host, Retry-After values,
 * error back-off, where visits begin and end. For the
 * audit to judge them the log would need, per line: the start time in
 * microseconds (start and end on one clock, instead of a wall-clock end
 * and a monotonic duration, both truncated to ms); a visit number and the
 * request's place in it; the delay the politeness owed the host when the
 * request started (policy wait, with the Crawl-delay, back-off or
 * Retry-After that set it, each named); and the Retry-After value on
 * 429/503 lines. Until then a 429/503 is only counted, with the shortest
 * gap after one (min_gap_after_429_503_ms in the JSON).
 *
 * Crawl-wide: pages (non-robots lines) per second by end time; time to
 * 50/90/99% of the pages (the end of the k-th page to finish: its second
 * from pass 1, the exact ms from pass 2; interpolated in its second without
 * pass 2); hosts busy (a request in flight), waiting (between their first
 * start and last end, not busy) and idle, as averages per plot bin (1 s or
 * more, about 200 bins).
 *
 * Threads: none; an audit is used by one thread. Workload: millions of
 * lines streamed twice (the second pass only fills the load timelines of
 * the busiest hosts and IPs, the URLs of listed violations and the exact
 * times to 50/90/99% of the pages).
 */
#ifndef CRAWLER_LAB_AUDIT_H
#define CRAWLER_LAB_AUDIT_H

#include <stdint.h>
#include <stdio.h>

#include "politeness/delay_policy.h"

#define AUDIT_TOLERANCE_MS 2
#define AUDIT_HOST_WINDOW 8
#define AUDIT_IP_WINDOW 32
#define AUDIT_EXACT_GAPS 512
#define AUDIT_MAX_VIOLATIONS 10000 /* listed; all are counted */
#define AUDIT_MAX_MESSAGES 10      /* malformed lines named on stderr */
#define AUDIT_MAX_LINE (1u << 20)
#define AUDIT_TOP 10 /* hosts and IPs in the load timelines */

enum audit_error {
	AUDIT_OK = 0,
	AUDIT_ERR_NOMEM = 1, /* allocation failed */
	AUDIT_ERR_IO = 2,    /* crawl.log could not be opened or read (errno set) */
	AUDIT_ERR_CONF = 3,  /* crawl.conf has a bad politeness value */
};

const char *audit_strerror(enum audit_error err);

/* The politeness settings judged against (crawl.conf's [politeness]). */
struct audit_config {
	enum delay_policy_kind policy;
	int64_t host_delay_ms;
	int64_t min_delay_ms; /* the adaptive policy's floor */
	int64_t ip_delay_ms;
	int ip_politeness;
	double ratio;
	uint32_t max_urls_per_visit; /* 0: the policy's default */
	int from_file;               /* 1 if read from crawl.conf */
};

/* The crawler's defaults (README, [politeness]). */
void audit_config_default(struct audit_config *c);

/* Reads [politeness] from an INI file over *c. A missing file leaves *c
 * and returns AUDIT_ERR_IO; a bad value returns AUDIT_ERR_CONF with err
 * naming the line. */
enum audit_error audit_config_load(struct audit_config *c, const char *path, char *err,
                                   size_t errlen);

/* Per host or per IP, after audit_finish. Strings borrowed from the audit. */
struct audit_entity_view {
	const char *name;   /* host[:port] as in the URL, or the IP */
	const char *origin; /* scheme://host:port (hosts), NULL for IPs */
	const char *ip;     /* hosts: the first IP seen ("-" none); IPs: the IP */
	uint64_t requests, robots, bytes, late, hosts; /* hosts: IPs only */
	uint64_t gaps, overlaps, violations;
	int64_t min_gap_ms;      /* valid when gaps > 0 */
	double median_gap_ms;    /* valid when gaps > 0 */
	int64_t required_gap_ms; /* -1: not judged */
	double busy_share;       /* busy time / (last end - first start); 0 if that is 0 */
	int64_t first_start_ms, last_end_ms; /* unix ms */
};

struct audit_summary {
	uint64_t lines, malformed, requests, robots, pages, bytes, late;
	uint64_t wait_lines; /* lines carrying wait_ms (judged against it) */
	uint64_t hosts, ips, violations, host_violations, ip_violations;
	int64_t start_ms, end_ms; /* first start, last end (unix ms) */
	double time_to_pct_s[3];  /* 50, 90, 99% of the pages, since start */
	int have_stats;           /* stats.json read */
	uint64_t stats_pages, stats_requests, stats_robots;
	double stats_elapsed_s;
};

struct audit;

/* Creates an empty audit judging against cfg (copied). NULL on no memory. */
struct audit *audit_create(const struct audit_config *cfg);

/* Frees everything. NULL is a no-op. */
void audit_destroy(struct audit *a);

/* Feeds one line (without its newline; len bytes, NUL not needed) numbered
 * lineno (1-based). A malformed line is counted and described on errs (if
 * non-NULL, up to AUDIT_MAX_MESSAGES). AUDIT_ERR_NOMEM is the only error. */
enum audit_error audit_feed(struct audit *a, const char *line, size_t len, uint64_t lineno,
                            FILE *errs);

/* Ends pass 1: flushes the windows, computes medians and the timeline.
 * After it, audit_feed2 may run the same lines again (pass 2). */
enum audit_error audit_finish(struct audit *a);

/* Pass 2 over the same lines: fills the top hosts' and IPs' load timelines
 * and the URLs of the listed violations. Optional. */
void audit_feed2(struct audit *a, const char *line, size_t len, uint64_t lineno);

/* Reads DIR/crawl.conf (defaults if absent), streams DIR/crawl.log twice
 * and reads DIR/stats.json; *out gets the finished audit (caller destroys).
 * Messages (malformed lines, a missing crawl.conf) go to errs. */
enum audit_error audit_load_dir(const char *dir, struct audit **out, FILE *errs);

void audit_summary_get(const struct audit *a, struct audit_summary *s);
const struct audit_config *audit_config_get(const struct audit *a);

/* Hosts and IPs in report order: most violations first, then the smallest
 * margin (min gap - required), then most requests. i < count. */
size_t audit_host_count(const struct audit *a);
size_t audit_ip_count(const struct audit *a);
void audit_host_get(const struct audit *a, size_t i, struct audit_entity_view *v);
void audit_ip_get(const struct audit *a, size_t i, struct audit_entity_view *v);
/* Index of a host by name (host[:port] as in the URL) or -1. */
long audit_host_find(const struct audit *a, const char *name);

/* Reports. Each returns 0, or -1 if writing failed. */
int audit_report_text(const struct audit *a, FILE *f);
int audit_report_json(const struct audit *a, FILE *f);
int audit_report_html(const struct audit *a, FILE *f);

#endif
