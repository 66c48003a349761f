/*
 * audit_int.h: the audit's structures, shared by audit*.c only (audit.h is
 * the interface).
 *
 * An audit holds two entity tables (hosts, IPs): a vector of entities and
 * an open-addressing index (power-of-two slots, each the key's hash tag and
 * entity index + 1, 0 free; load <= 1/2) keyed by the host's origin or the IP. Each entity keeps a
 * window of its latest requests sorted by start (see audit.h); requests
 * leave the window in start order to be judged, so for every entity the
 * judged requests form a sequence sorted by start, and max_end is the latest
 * end among them.
 *
 * The timeline has one cell per wall-clock second, from base_sec, grown on
 * either side as lines arrive (at most AUDIT_TL_MAX_SECS; lines beyond are
 * clamped to its ends and counted). An interval is added as a partial
 * amount for its first and last second and +1/-1 in a difference array for
 * the whole seconds between, so a host active for days costs O(1).
 */
#ifndef CRAWLER_LAB_AUDIT_INT_H
#define CRAWLER_LAB_AUDIT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "crawler/lab/audit.h"

#define AUDIT_FINE_BUCKETS (64 + 25 * 32) /* gaps up to 2^31 ms */
#define AUDIT_DISPLAY_BINS 17
#define AUDIT_TL_MAX_SECS (1L << 25) /* ~388 days */
#define AUDIT_PLOT_BINS 200          /* target bins of the plotted series */

/* Display histogram edges (ms): bin 0 is < 0 (overlap), bin i covers
 * [edge[i-1], edge[i]), the last is >= 60 s. */
extern const int64_t audit_display_edges[AUDIT_DISPLAY_BINS - 1];
extern const char *const audit_display_labels[AUDIT_DISPLAY_BINS];
unsigned audit_display_bin(int64_t gap_ms);

/* One parsed log line. Strings point into the parser's scratch buffer. */
struct audit_rec {
	int64_t end_ms, start_ms;
	int64_t wait_ms; /* rest required before the request; -1: not in the log */
	long status;
	uint64_t bytes;
	int robots;
	const char *url;
	const char *ip;     /* NULL when the field is "-" */
	const char *name;   /* host[:port] as written, host lowercased */
	const char *origin; /* scheme://host:port */
};

/* Parses line (len bytes) into r using scratch (cap >= 3 * len + 64).
 * Returns NULL, or a static reason when the line is malformed. */
const char *audit_parse_line(const char *line, size_t len, struct audit_rec *r, char *scratch,
                             size_t cap);

/* Parses 2026-11-22T23:59:01.123Z into unix ms; -1 if malformed. */
int audit_parse_time(const char *s, size_t len, int64_t *ms);

struct audit_span {
	int64_t start, end;
	uint64_t line;
	uint32_t host; /* host entity index */
	uint8_t retry; /* the response was a 429 or 503 */
	int64_t wait;  /* the line's wait_ms, -1: none */
};

/* Gaps for the median: an exact list until AUDIT_EXACT_GAPS, then the fine
 * histogram (exact becomes NULL). Histogram mode keeps negative gaps as a
 * count and a sum (the median among them is reported as their mean). */
struct audit_gaps {
	uint64_t n;
	int32_t *exact;
	uint32_t cap;
	uint32_t *hist;
	uint64_t neg;
	int64_t neg_sum;
};

struct audit_entity {
	char *name;
	char *origin; /* hosts: the table key; IPs: NULL (the key is name) */
	uint32_t ip;  /* hosts: first IP entity, UINT32_MAX if none */
	uint64_t requests, robots, bytes, late, gaps, overlaps, violations, hosts;
	uint64_t retry_statuses;
	int64_t first_start, last_end, busy_ms;
	int64_t max_end;    /* latest end of the judged requests */
	int64_t last_start; /* start of the last judged request */
	uint64_t max_end_line;
	uint32_t max_end_host;
	uint8_t max_end_retry, judged_any;
	int64_t min_gap, after_retry_min_gap; /* after_retry: INT64_MAX none */
	uint64_t min_gap_line;
	double median;
	struct audit_span *win;
	uint32_t nwin, wcap;
	struct audit_gaps g;
	uint32_t disp[AUDIT_DISPLAY_BINS];
	uint64_t *load; /* pass 2, top entities: busy ms per plot bin */
};

struct audit_table {
	struct audit_entity *v;
	size_t n, cap;
	uint64_t *slots;
	size_t nslots;
	uint32_t window;
	uint32_t *order; /* report order of v, built by audit_finish */
};

struct audit_violation {
	uint8_t ip;         /* 0 host rule, 1 IP rule */
	uint32_t entity;    /* in hosts or ips */
	uint32_t host_next; /* host of the later request */
	int64_t gap, required, at_ms;
	uint64_t line_prev, line_next;
	char *url_prev, *url_next; /* pass 2 */
};

struct audit_tl_sec {
	uint32_t pages, requests;
	uint64_t bytes;
	int64_t busy_part, busy_diff, active_part, active_diff;
};

/* Series per plot bin, built by audit_finish. */
struct audit_series {
	size_t n;
	int64_t interval_s;
	int64_t start_ms; /* bin 0 starts here (a whole second) */
	/* n bins each, in one allocation owned by pages_per_s */
	double *pages_per_s, *bytes_per_s, *busy, *waiting, *idle;
};

struct audit {
	struct audit_config cfg;
	struct audit_table hosts, ips;
	struct audit_summary sum;
	uint64_t messages;
	int finished;
	char *scratch;
	size_t scratch_cap;
	/* timeline */
	struct audit_tl_sec *tl;
	int64_t tl_base;
	size_t tl_len;
	uint64_t tl_clamped;
	uint64_t tl_outside; /* lines not within the timeline (not plotted) */
	struct audit_series series;
	/* crawl-wide gap display histograms */
	uint64_t disp_host[AUDIT_DISPLAY_BINS], disp_ip[AUDIT_DISPLAY_BINS];
	/* violations */
	struct audit_violation *viol;
	size_t nviol, capviol;
	/* pass 2: (line << 1 | next) sorted, and the cursor */
	uint64_t *want_lines;
	size_t nwant, want_pos;
	/* time to 50/90/99% of the pages: the second holding each target page,
	 * its rank among that second's pages (1-based), and pass 2's end times
	 * of that second's pages (exact once all pct_cap are in) */
	int64_t pct_sec[3];
	uint64_t pct_rank[3];
	int64_t *pct_ends[3];
	uint32_t pct_n[3], pct_cap[3];
	/* most requests first */
	uint32_t top_hosts[AUDIT_TOP], top_ips[AUDIT_TOP];
	size_t ntop_hosts, ntop_ips;
	int64_t host_required, ip_required; /* -1: not judged */
	char dir[512];
};

/* audit.c internals used by audit_finish.c */
uint32_t audit_table_find(const struct audit_table *t, const char *key);
double audit_fine_mid(unsigned bucket);
size_t audit_tl_index(struct audit *a, int64_t ms);
/* Adds [from, to) ms to the busy (active 0) or active (1) time. */
void audit_tl_span(struct audit *a, int active, int64_t from, int64_t to);
int audit_flush_windows(struct audit *a);
void audit_malformed(struct audit *a, uint64_t lineno, const char *why, FILE *errs);

/* audit_conf.c: stats.json's top-level figures into a->sum. */
void audit_stats_read(struct audit *a, const char *path);

/* audit_report.c helpers shared with audit_html.c */
void audit_json_str(FILE *f, const char *s);
void audit_fmt_ms(char *buf, size_t cap, double ms);
void audit_fmt_bytes(char *buf, size_t cap, double bytes);
void audit_fmt_time(char *buf, size_t cap, int64_t unix_ms);
void audit_view(const struct audit *a, const struct audit_table *t, uint32_t idx,
                struct audit_entity_view *v);
/* A row of the host (ip 0) or IP (ip 1) table as both reports show it:
 * entity i in report order, its bytes, minimum gap and median gap formatted
 * (the gaps "-" when it has none). */
struct audit_entity_row {
	struct audit_entity_view v;
	char bytes[32], min_gap[32], median_gap[32];
};
void audit_entity_row(const struct audit *a, int ip, size_t i, struct audit_entity_row *r);

#endif
