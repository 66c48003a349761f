/*
 * audit_report.c: the text report (a summary and the worst hosts) and the
 * JSON one (everything, machine-readable). Both read a finished audit.
 *
 * The JSON object (times in ms unless the key says _s; *_s times inside
 * entities count from the crawl's first start):
 *   dir, config {source, policy, host_delay_ms, min_delay_ms, ip_delay_ms,
 *   ip_politeness, ratio, max_urls_per_visit}, resolution_ms, tolerance_ms,
 *   host_required_gap_ms, ip_required_gap_ms (-1: not judged),
 *   timeline_outside_lines, lines, malformed_lines, late_lines, pages,
 *   requests, robots_fetches, bytes, host_count, ip_count, start (ISO),
 *   duration_s, pages_per_s, time_to_pages_s {50, 90, 99}, stats_json
 *   {pages, requests, robots_fetches, elapsed_s} or null, violations,
 *   host_violations, ip_violations, wait_lines, not_judged {crawl_delay,
 *   retry_after, backoff, visits}, violations_listed [{rule, host|ip, at, gap_ms,
 *   required_ms, line_prev, line_next, url_prev, url_next}], gap_histogram
 *   {labels_ms, hosts, ips}, timeline {interval_s, bins, pages_per_s,
 *   bytes_per_s, hosts_busy, hosts_waiting, hosts_idle},
 *   hosts [{host, origin, ip, requests, robots, bytes, gaps, min_gap_ms,
 *   median_gap_ms (null without gaps), median_exact, min_gap_after_429_503_ms
 *   (if any), retry_statuses, overlaps, busy_share, required_gap_ms,
 *   violations, late, first_start_s, last_end_s, gap_histogram, load (the
 *   AUDIT_TOP busiest: busy share per timeline bin)}] worst first,
 *   ips [{ip, hosts, ... the same}] worst first.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "crawler/lab/audit_int.h"
#include "frontier/base/clock.h"

#define TEXT_VIOLATIONS 20
#define TEXT_HOSTS 15
#define TEXT_IPS 10

void audit_fmt_ms(char *buf, size_t cap, double ms)
{
	if (ms > -10000 && ms < 10000)
		snprintf(buf, cap, "%.0f ms", ms);
	else if (ms > -600000 && ms < 600000)
		snprintf(buf, cap, "%.2f s", ms / 1000);
	else
		snprintf(buf, cap, "%.1f min", ms / 60000);
}

void audit_fmt_bytes(char *buf, size_t cap, double b)
{
	if (b < 1e3)
		snprintf(buf, cap, "%.0f B", b);
	else if (b < 1e6)
		snprintf(buf, cap, "%.1f kB", b / 1e3);
	else if (b < 1e9)
		snprintf(buf, cap, "%.1f MB", b / 1e6);
	else
		snprintf(buf, cap, "%.2f GB", b / 1e9);
}

void audit_fmt_time(char *buf, size_t cap, int64_t ms)
{
	char text[WALL_CLOCK_TEXT_MAX];
	wall_clock_text(ms, text);
	snprintf(buf, cap, "%s", text);
}

static double duration_s(const struct audit_summary *s)
{
	return s->requests ? (double)(s->end_ms - s->start_ms) / 1000 : 0;
}

static void rule_text(const struct audit *a, char *buf, size_t cap)
{
	char h[64], i[64];
	if (a->cfg.policy == DELAY_POLICY_RATIO || a->cfg.max_urls_per_visit > 1)
		snprintf(h, sizeof h, "no overlap (visits hold several requests)");
	else
		snprintf(h, sizeof h, "gap >= %" PRId64 " ms", a->host_required);
	if (a->ip_required < 0)
		snprintf(i, sizeof i, "not judged (ip politeness off)");
	else
		snprintf(i, sizeof i, "gap >= %" PRId64 " ms between hosts", a->ip_required);
	snprintf(buf, cap, "host: %s%s; ip: %s; tolerance %d ms (the log's resolution is 1 ms)", h,
	         a->sum.wait_lines ? ", and >= the line's wait_ms" : "", i, AUDIT_TOLERANCE_MS);
}

static void text_summary(const struct audit *a, FILE *f)
{
	const struct audit_summary *s = &a->sum;
	const struct audit_config *c = &a->cfg;
	char b1[32], rule[256];
	audit_fmt_bytes(b1, sizeof b1, (double)s->bytes);
	fprintf(f, "crawl audit of %s\n", a->dir[0] ? a->dir : "(lines fed)");
	fprintf(f,
	        "log: %" PRIu64 " lines (%" PRIu64 " malformed, skipped), %" PRIu64
	        " requests (%" PRIu64 " robots.txt) to %" PRIu64 " hosts on %" PRIu64 " IPs, %s\n",
	        s->lines, s->malformed, s->requests, s->robots, s->hosts, s->ips, b1);
	if (s->have_stats)
		fprintf(f, "stats.json: %" PRIu64 " pages, %" PRIu64 " requests, %.1f s%s\n",
		        s->stats_pages, s->stats_requests, s->stats_elapsed_s,
		        s->stats_pages == s->pages && s->stats_requests == s->requests
		                ? " (agrees with the log)"
		                : " (differs from the log)");
	else
		fprintf(f, "stats.json: not found or unreadable\n");
	double d = duration_s(s);
	fprintf(f,
	        "crawl: %" PRIu64 " pages in %.1f s, %.1f pages/s; 50%% of the pages after %.1f s, "
	        "90%% after %.1f s, 99%% after %.1f s\n",
	        s->pages, d, d > 0 ? (double)s->pages / d : 0, s->time_to_pct_s[0],
	        s->time_to_pct_s[1], s->time_to_pct_s[2]);
	fprintf(f,
	        "judged against %s: policy %s, host delay %" PRId64 " ms, ip delay %" PRId64
	        " ms, ip politeness %s",
	        c->from_file ? "crawl.conf" : "the crawler's defaults (no crawl.conf)",
	        delay_policy_name(c->policy), c->host_delay_ms, c->ip_delay_ms,
	        c->ip_politeness ? "on" : "off");
	if (c->policy == DELAY_POLICY_ADAPTIVE)
		fprintf(f, ", min delay %" PRId64 " ms", c->min_delay_ms);
	if (c->policy == DELAY_POLICY_RATIO)
		fprintf(f, ", ratio %.3g", c->ratio);
	rule_text(a, rule, sizeof rule);
	fprintf(f, "\nrules: %s\n", rule);
	fprintf(f, "violations: %" PRIu64 " (host %" PRIu64 ", ip %" PRIu64 ")\n", s->violations,
	        s->host_violations, s->ip_violations);
}

static void text_violations(const struct audit *a, FILE *f)
{
	for (size_t i = 0; i < a->nviol && i < TEXT_VIOLATIONS; i++) {
		const struct audit_violation *v = &a->viol[i];
		const struct audit_table *t = v->ip ? &a->ips : &a->hosts;
		char ts[40];
		audit_fmt_time(ts, sizeof ts, v->at_ms);
		fprintf(f,
		        "  %s %s %s: %" PRId64 " ms after the previous request (required %" PRId64
		        " ms), crawl.log lines %" PRIu64 " -> %" PRIu64 "%s%s%s%s\n",
		        ts, v->ip ? "ip" : "host", t->v[v->entity].name, v->gap, v->required,
		        v->line_prev, v->line_next, v->url_prev ? ": " : "",
		        v->url_prev ? v->url_prev : "", v->url_next ? " -> " : "",
		        v->url_next ? v->url_next : "");
	}
	if (a->sum.violations > TEXT_VIOLATIONS)
		fprintf(f, "  ... %" PRIu64 " more (--json lists up to %d)\n",
		        a->sum.violations - TEXT_VIOLATIONS, AUDIT_MAX_VIOLATIONS);
}

static void text_not_judged(const struct audit *a, FILE *f)
{
	uint64_t retry = 0;
	int64_t after = INT64_MAX;
	for (size_t i = 0; i < a->hosts.n; i++) {
		retry += a->hosts.v[i].retry_statuses;
		if (a->hosts.v[i].after_retry_min_gap < after)
			after = a->hosts.v[i].after_retry_min_gap;
	}
	fprintf(f,
	        "not judged one by one, %s: robots.txt Crawl-delay per host; Retry-After "
	        "(%" PRIu64 " 429/503 responses",
	        a->sum.wait_lines ? "only in sum through wait_ms" : "not in the log", retry);
	if (after != INT64_MAX)
		fprintf(f, ", shortest gap after one %" PRId64 " ms", after);
	fprintf(f, "); error back-off; visit boundaries\n");
	if (a->tl_outside)
		fprintf(f,
		        "lines beyond the timeline (timestamps over %ld days from the first line; "
		        "counted, not plotted): %" PRIu64 "\n",
		        AUDIT_TL_MAX_SECS / 86400, a->tl_outside);
	if (a->sum.late)
		fprintf(f,
		        "late lines (out of order beyond the %d-request window, gaps not judged): "
		        "%" PRIu64 "\n",
		        AUDIT_HOST_WINDOW, a->sum.late);
	double busy = 0, peak = 0, wait = 0;
	for (size_t b = 0; b < a->series.n; b++) {
		busy += a->series.busy[b];
		wait += a->series.waiting[b];
		peak = a->series.busy[b] > peak ? a->series.busy[b] : peak;
	}
	if (a->series.n)
		fprintf(f,
		        "hosts: %" PRIu64 "; on average %.1f busy and %.1f waiting (peak %.1f busy "
		        "in a %" PRId64 " s bin)\n",
		        a->sum.hosts, busy / (double)a->series.n, wait / (double)a->series.n, peak,
		        a->series.interval_s);
}

void audit_entity_row(const struct audit *a, int ip, size_t i, struct audit_entity_row *r)
{
	if (ip)
		audit_ip_get(a, i, &r->v);
	else
		audit_host_get(a, i, &r->v);
	audit_fmt_bytes(r->bytes, sizeof r->bytes, (double)r->v.bytes);
	snprintf(r->min_gap, sizeof r->min_gap, "-");
	snprintf(r->median_gap, sizeof r->median_gap, "-");
	if (r->v.gaps) {
		audit_fmt_ms(r->min_gap, sizeof r->min_gap, (double)r->v.min_gap_ms);
		audit_fmt_ms(r->median_gap, sizeof r->median_gap, r->v.median_gap_ms);
	}
}

static void text_table(const struct audit *a, FILE *f, int ip)
{
	size_t n = ip ? a->ips.n : a->hosts.n, lim = ip ? TEXT_IPS : TEXT_HOSTS;
	fprintf(f, "\n%s\n%-32s %-15s %8s %10s %9s %9s %6s %5s\n",
	        ip ? "IPs (worst first):" : "worst hosts (most violations, then smallest margin):",
	        ip ? "ip" : "host", ip ? "hosts" : "ip", "requests", "bytes", "min gap", "median",
	        "busy", "viol");
	for (size_t i = 0; i < n && i < lim; i++) {
		struct audit_entity_row r;
		char hosts[32];
		audit_entity_row(a, ip, i, &r);
		snprintf(hosts, sizeof hosts, "%" PRIu64, r.v.hosts);
		fprintf(f, "%-32s %-15s %8" PRIu64 " %10s %9s %9s %5.1f%% %5" PRIu64 "\n", r.v.name,
		        ip ? hosts : r.v.ip, r.v.requests, r.bytes, r.min_gap, r.median_gap,
		        100 * r.v.busy_share, r.v.violations);
	}
	if (n > lim)
		fprintf(f, "... %zu more\n", n - lim);
}

int audit_report_text(const struct audit *a, FILE *f)
{
	text_summary(a, f);
	text_violations(a, f);
	text_not_judged(a, f);
	text_table(a, f, 0);
	text_table(a, f, 1);
	return ferror(f) ? -1 : 0;
}

/* ---- JSON ---- */

/* Writes s as a JSON string; bytes that are not UTF-8 become U+FFFD. */
void audit_json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	fputc('"', f);
	while (*p) {
		unsigned c = *p;
		if (c == '"' || c == '\\') {
			fprintf(f, "\\%c", c);
			p++;
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			p++;
		} else if (c < 0x80) {
			fputc((int)c, f);
			p++;
		} else {
			size_t n = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
			size_t k = 1;
			while (n && k < n && (p[k] & 0xc0) == 0x80)
				k++;
			if (n && k == n) {
				fwrite(p, 1, n, f);
				p += n;
			} else {
				fputs("\\ufffd", f);
				p++;
			}
		}
	}
	fputc('"', f);
}

static void json_doubles(FILE *f, const char *key, const double *v, size_t n)
{
	fprintf(f, "\"%s\": [", key);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%.3f", i ? ", " : "", v[i]);
	fputs("]", f);
}

static void json_entity(const struct audit *a, FILE *f, int ip, size_t i)
{
	const struct audit_table *t = ip ? &a->ips : &a->hosts;
	uint32_t k = ip ? a->ips.order[i] : a->hosts.order[i];
	const struct audit_entity *e = &t->v[k];
	struct audit_entity_view v;
	audit_view(a, t, k, &v);
	fputs("    {", f);
	if (!ip) {
		fputs("\"host\": ", f);
		audit_json_str(f, v.name);
		fputs(", \"origin\": ", f);
		audit_json_str(f, v.origin);
		fputs(", ", f);
	}
	fputs("\"ip\": ", f);
	audit_json_str(f, v.ip);
	if (ip)
		fprintf(f, ", \"hosts\": %" PRIu64, v.hosts);
	fprintf(f,
	        ", \"requests\": %" PRIu64 ", \"robots\": %" PRIu64 ", \"bytes\": %" PRIu64
	        ", \"gaps\": %" PRIu64,
	        v.requests, v.robots, v.bytes, v.gaps);
	if (v.gaps)
		fprintf(f, ", \"min_gap_ms\": %" PRId64 ", \"median_gap_ms\": %.1f", v.min_gap_ms,
		        v.median_gap_ms);
	else
		fputs(", \"min_gap_ms\": null, \"median_gap_ms\": null", f);
	fprintf(f, ", \"median_exact\": %s", e->g.hist ? "false" : "true");
	if (!ip && e->after_retry_min_gap != INT64_MAX)
		fprintf(f, ", \"min_gap_after_429_503_ms\": %" PRId64, e->after_retry_min_gap);
	fprintf(f,
	        ", \"retry_statuses\": %" PRIu64 ", \"overlaps\": %" PRIu64
	        ", \"busy_share\": %.4f, \"required_gap_ms\": %" PRId64 ", \"violations\": %" PRIu64
	        ", \"late\": %" PRIu64 ", \"first_start_s\": %.3f, \"last_end_s\": %.3f",
	        e->retry_statuses, v.overlaps, v.busy_share, v.required_gap_ms, v.violations,
	        v.late, (double)(v.first_start_ms - a->sum.start_ms) / 1000,
	        (double)(v.last_end_ms - a->sum.start_ms) / 1000);
	fputs(", \"gap_histogram\": [", f);
	for (unsigned b = 0; b < AUDIT_DISPLAY_BINS; b++)
		fprintf(f, "%s%u", b ? ", " : "", e->disp[b]);
	fputs("]", f);
	if (e->load) {
		fputs(", \"load\": [", f);
		for (size_t b = 0; b < a->series.n; b++)
			fprintf(f, "%s%.3f", b ? ", " : "",
			        (double)e->load[b] / (double)(a->series.interval_s * 1000));
		fputs("]", f);
	}
	fputs("}", f);
}

static void json_violations(const struct audit *a, FILE *f)
{
	fputs("  \"violations_listed\": [", f);
	for (size_t i = 0; i < a->nviol; i++) {
		const struct audit_violation *v = &a->viol[i];
		char ts[40];
		audit_fmt_time(ts, sizeof ts, v->at_ms);
		fprintf(f, "%s\n    {\"rule\": \"%s\", \"%s\": ", i ? "," : "",
		        v->ip ? "ip" : "host", v->ip ? "ip" : "host");
		audit_json_str(f, (v->ip ? &a->ips : &a->hosts)->v[v->entity].name);
		if (v->ip) {
			fputs(", \"host\": ", f);
			audit_json_str(f, a->hosts.v[v->host_next].name);
		}
		fprintf(f,
		        ", \"at\": \"%s\", \"gap_ms\": %" PRId64 ", \"required_ms\": %" PRId64
		        ", \"line_prev\": %" PRIu64 ", \"line_next\": %" PRIu64 ", \"url_prev\": ",
		        ts, v->gap, v->required, v->line_prev, v->line_next);
		audit_json_str(f, v->url_prev);
		fputs(", \"url_next\": ", f);
		audit_json_str(f, v->url_next);
		fputs("}", f);
	}
	fputs("\n  ],\n", f);
}

static void json_head(const struct audit *a, FILE *f)
{
	const struct audit_summary *s = &a->sum;
	const struct audit_config *c = &a->cfg;
	char ts[40];
	fputs("{\n  \"dir\": ", f);
	audit_json_str(f, a->dir);
	fprintf(f,
	        ",\n  \"config\": {\"source\": \"%s\", \"policy\": \"%s\", \"host_delay_ms\": "
	        "%" PRId64 ", \"min_delay_ms\": %" PRId64 ", \"ip_delay_ms\": %" PRId64
	        ", \"ip_politeness\": %s, \"ratio\": %g, \"max_urls_per_visit\": %u},\n",
	        c->from_file ? "crawl.conf" : "defaults", delay_policy_name(c->policy),
	        c->host_delay_ms, c->min_delay_ms, c->ip_delay_ms,
	        c->ip_politeness ? "true" : "false", c->ratio, c->max_urls_per_visit);
	fprintf(f,
	        "  \"resolution_ms\": 1, \"tolerance_ms\": %d, \"host_required_gap_ms\": %" PRId64
	        ", \"ip_required_gap_ms\": %" PRId64 ",\n",
	        AUDIT_TOLERANCE_MS, a->host_required, a->ip_required);
	fprintf(f, "  \"timeline_outside_lines\": %" PRIu64 ",\n", a->tl_outside);
	fprintf(f,
	        "  \"lines\": %" PRIu64 ", \"malformed_lines\": %" PRIu64
	        ", \"late_lines\": %" PRIu64 ",\n  \"pages\": %" PRIu64 ", \"requests\": %" PRIu64
	        ", \"robots_fetches\": %" PRIu64 ", \"bytes\": %" PRIu64
	        ", \"host_count\": %" PRIu64 ", \"ip_count\": %" PRIu64 ",\n",
	        s->lines, s->malformed, s->late, s->pages, s->requests, s->robots, s->bytes,
	        s->hosts, s->ips);
	audit_fmt_time(ts, sizeof ts, s->requests ? s->start_ms : 0);
	double d = duration_s(s);
	fprintf(f, "  \"start\": \"%s\", \"duration_s\": %.3f, \"pages_per_s\": %.2f,\n", ts, d,
	        d > 0 ? (double)s->pages / d : 0);
	fprintf(f, "  \"time_to_pages_s\": {\"50\": %.3f, \"90\": %.3f, \"99\": %.3f},\n",
	        s->time_to_pct_s[0], s->time_to_pct_s[1], s->time_to_pct_s[2]);
	if (s->have_stats)
		fprintf(f,
		        "  \"stats_json\": {\"pages\": %" PRIu64 ", \"requests\": %" PRIu64
		        ", \"robots_fetches\": %" PRIu64 ", \"elapsed_s\": %.3f},\n",
		        s->stats_pages, s->stats_requests, s->stats_robots, s->stats_elapsed_s);
	else
		fputs("  \"stats_json\": null,\n", f);
	fprintf(f,
	        "  \"violations\": %" PRIu64 ", \"host_violations\": %" PRIu64
	        ", \"ip_violations\": %" PRIu64 ",\n",
	        s->violations, s->host_violations, s->ip_violations);
	const char *nj = s->wait_lines ? "in sum through wait_ms" : "not in the log";
	fprintf(f,
	        "  \"wait_lines\": %" PRIu64 ",\n  \"not_judged\": {\"crawl_delay\": \"%s\", "
	        "\"retry_after\": \"%s\", \"backoff\": \"%s\", \"visits\": \"not in the log\"},\n",
	        s->wait_lines, nj, nj, nj);
}

static void json_series(const struct audit *a, FILE *f)
{
	const struct audit_series *se = &a->series;
	fputs("  \"gap_histogram\": {\"labels_ms\": [", f);
	for (unsigned b = 0; b < AUDIT_DISPLAY_BINS; b++)
		fprintf(f, "%s\"%s\"", b ? ", " : "", audit_display_labels[b]);
	fputs("], \"hosts\": [", f);
	for (unsigned b = 0; b < AUDIT_DISPLAY_BINS; b++)
		fprintf(f, "%s%" PRIu64, b ? ", " : "", a->disp_host[b]);
	fputs("], \"ips\": [", f);
	for (unsigned b = 0; b < AUDIT_DISPLAY_BINS; b++)
		fprintf(f, "%s%" PRIu64, b ? ", " : "", a->disp_ip[b]);
	fprintf(f, "]},\n  \"timeline\": {\"interval_s\": %" PRId64 ", \"bins\": %zu,\n    ",
	        se->interval_s, se->n);
	json_doubles(f, "pages_per_s", se->pages_per_s, se->n);
	fputs(",\n    ", f);
	json_doubles(f, "bytes_per_s", se->bytes_per_s, se->n);
	fputs(",\n    ", f);
	json_doubles(f, "hosts_busy", se->busy, se->n);
	fputs(",\n    ", f);
	json_doubles(f, "hosts_waiting", se->waiting, se->n);
	fputs(",\n    ", f);
	json_doubles(f, "hosts_idle", se->idle, se->n);
	fputs("},\n", f);
}

int audit_report_json(const struct audit *a, FILE *f)
{
	json_head(a, f);
	json_violations(a, f);
	json_series(a, f);
	fputs("  \"hosts\": [\n", f);
	for (size_t i = 0; i < a->hosts.n; i++) {
		json_entity(a, f, 0, i);
		fputs(i + 1 < a->hosts.n ? ",\n" : "\n", f);
	}
	fputs("  ],\n  \"ips\": [\n", f);
	for (size_t i = 0; i < a->ips.n; i++) {
		json_entity(a, f, 1, i);
		fputs(i + 1 < a->ips.n ? ",\n" : "\n", f);
	}
	fputs("  ]\n}\n", f);
	return ferror(f) ? -1 : 0;
}
