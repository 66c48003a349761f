/*
 * audit_html.c: the audit as one self-contained HTML page: inline CSS and
 * inline SVG plots, no script, font, image or style loaded from anywhere,
 * so it reads offline in any browser. Plots: throughput over time, hosts
 * busy/waiting/idle over time, the crawl-wide gap histogram, gap histograms
 * of the worst hosts, the load timeline of the busiest hosts; then tables
 * (worst hosts, violations, IPs).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/audit_int.h"
#include "crawler/lab/svg_plot.h"

#define W SVG_W
#define H SVG_H
#define ML SVG_ML
#define MB SVG_MB
#define MT SVG_MT
#define HTML_HOST_HISTS 6
#define HTML_VIOLATIONS 200
#define HTML_HOSTS 50

static void plot_throughput(const struct audit *a, FILE *f)
{
	const struct audit_series *se = &a->series;
	double ymax = svg_max_of(se->pages_per_s, se->n) * 1.1;
	svg_open(f, "Throughput: pages per second over time", H);
	svg_y_axis(f, ymax, H, " /s");
	svg_x_time_axis(f, (double)(se->n * (size_t)se->interval_s), H);
	svg_area(f, se->pages_per_s, NULL, se->n, ymax, H, "#4a7fb0");
	fputs("</svg>\n", f);
}

static void plot_hosts_state(const struct audit *a, FILE *f)
{
	const struct audit_series *se = &a->series;
	double ymax = (double)(a->hosts.n ? a->hosts.n : 1);
	double *base = calloc(se->n ? se->n : 1, sizeof *base);
	if (!base)
		return;
	svg_open(f,
	         "Hosts over time: busy (blue: a request in flight), waiting (orange: between "
	         "requests) and idle (grey: before the first or after the last)",
	         H);
	svg_y_axis(f, ymax, H, " hosts");
	svg_x_time_axis(f, (double)(se->n * (size_t)se->interval_s), H);
	svg_area(f, se->busy, NULL, se->n, ymax, H, "#4a7fb0");
	for (size_t i = 0; i < se->n; i++)
		base[i] = se->busy[i];
	svg_area(f, se->waiting, base, se->n, ymax, H, "#e8a33d");
	for (size_t i = 0; i < se->n; i++)
		base[i] += se->waiting[i];
	svg_area(f, se->idle, base, se->n, ymax, H, "#d0d0d0");
	fputs("</svg>\n", f);
	free(base);
}

/* Bars of a gap histogram; the bin holding the required gap is marked. */
static void plot_hist(const struct audit *a, FILE *f, const char *title, const uint64_t *count,
                      int h)
{
	double ymax = 1;
	for (unsigned b = 0; b < AUDIT_DISPLAY_BINS; b++)
		ymax = (double)count[b] > ymax ? (double)count[b] : ymax;
	svg_open(f, title, h);
	svg_y_axis(f, ymax * 1.1, h, "");
	double pw = W - 10 - ML, ph = h - MT - MB, bw = pw / AUDIT_DISPLAY_BINS;
	unsigned req = a->host_required > 0 ? audit_display_bin(a->host_required) : UINT32_MAX;
	for (unsigned b = 0; b < AUDIT_DISPLAY_BINS; b++) {
		double bh = ph * (double)count[b] / (ymax * 1.1);
		const char *color = b == 0 ? "#c0392b" : b == req ? "#2e8b57" : "#4a7fb0";
		fprintf(f,
		        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
		        "<title>%s ms: %" PRIu64 "</title></rect>"
		        "<text x=\"%.1f\" y=\"%d\" class=\"xl\">%s</text>\n",
		        ML + bw * b + 1, h - MB - bh, bw - 2, bh, color, audit_display_labels[b],
		        count[b], ML + bw * (b + 0.5), h - MB + 14, audit_display_labels[b]);
	}
	fputs("</svg>\n", f);
}

static void plot_load(const struct audit *a, FILE *f)
{
	const struct audit_series *se = &a->series;
	int row = 22, h = MT + MB + row * (int)(a->ntop_hosts ? a->ntop_hosts : 1);
	double pw = W - 10 - 240, cw = pw / (double)(se->n ? se->n : 1);
	svg_open(f,
	         "Load of the busiest hosts over time (share of each bin with a request in "
	         "flight)",
	         h);
	for (size_t i = 0; i < a->ntop_hosts; i++) {
		const struct audit_entity *e = &a->hosts.v[a->top_hosts[i]];
		int y = MT + row * (int)i;
		fprintf(f, "<text x=\"4\" y=\"%d\" class=\"rl\">", y + 15);
		svg_html_str(f, e->name);
		fputs("</text>\n", f);
		for (size_t b = 0; e->load && b < se->n; b++) {
			double share = (double)e->load[b] / (double)(se->interval_s * 1000);
			if (share <= 0)
				continue;
			fprintf(f,
			        "<rect x=\"%.1f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
			        "fill=\"#4a7fb0\" fill-opacity=\"%.3f\"/>",
			        240 + cw * (double)b, y + 2, cw, row - 4,
			        share > 1 ? 1 : 0.1 + 0.9 * share);
		}
		fputc('\n', f);
	}
	int hh = h;
	for (int i = 0; i <= 5; i++)
		fprintf(f, "<text x=\"%.0f\" y=\"%d\" class=\"xl\">%.3g s</text>\n",
		        240 + pw * i / 5, hh - MB + 16,
		        (double)(se->n * (size_t)se->interval_s) * i / 5);
	fputs("</svg>\n", f);
}

static void table_hosts(const struct audit *a, FILE *f, int ip)
{
	size_t n = ip ? a->ips.n : a->hosts.n;
	fprintf(f,
	        "<table><tr><th>%s</th><th>%s</th><th>requests</th><th>bytes</th>"
	        "<th>min gap</th><th>median gap</th><th>busy</th><th>overlaps</th>"
	        "<th>violations</th></tr>\n",
	        ip ? "IP" : "host", ip ? "hosts" : "IP");
	for (size_t i = 0; i < n && i < HTML_HOSTS; i++) {
		struct audit_entity_row r;
		audit_entity_row(a, ip, i, &r);
		const struct audit_entity_view *v = &r.v;
		fprintf(f, "<tr%s><td>", v->violations ? " class=\"bad\"" : "");
		svg_html_str(f, v->name);
		fputs("</td><td>", f);
		if (ip)
			fprintf(f, "%" PRIu64, v->hosts);
		else
			svg_html_str(f, v->ip);
		fprintf(f,
		        "</td><td>%" PRIu64 "</td><td>%s</td><td>%s</td><td>%s</td><td>%.1f%%</td>"
		        "<td>%" PRIu64 "</td><td>%" PRIu64 "</td></tr>\n",
		        v->requests, r.bytes, r.min_gap, r.median_gap, 100 * v->busy_share,
		        v->overlaps, v->violations);
	}
	fputs("</table>\n", f);
	if (n > HTML_HOSTS)
		fprintf(f, "<p>... %zu more (see --json)</p>\n", n - HTML_HOSTS);
}

static void table_violations(const struct audit *a, FILE *f)
{
	if (!a->nviol) {
		fputs("<p>No violation.</p>\n", f);
		return;
	}
	fputs("<table><tr><th>at</th><th>rule</th><th>host or IP</th><th>gap</th><th>required</th>"
	      "<th>crawl.log lines</th><th>URLs</th></tr>\n",
	      f);
	for (size_t i = 0; i < a->nviol && i < HTML_VIOLATIONS; i++) {
		const struct audit_violation *v = &a->viol[i];
		char ts[40];
		audit_fmt_time(ts, sizeof ts, v->at_ms);
		fprintf(f, "<tr><td>%s</td><td>%s</td><td>", ts, v->ip ? "ip" : "host");
		svg_html_str(f, (v->ip ? &a->ips : &a->hosts)->v[v->entity].name);
		fprintf(f,
		        "</td><td>%" PRId64 " ms</td><td>%" PRId64 " ms</td><td>%" PRIu64
		        " &rarr; %" PRIu64 "</td><td>",
		        v->gap, v->required, v->line_prev, v->line_next);
		svg_html_str(f, v->url_prev);
		fputs(" &rarr; ", f);
		svg_html_str(f, v->url_next);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	if (a->sum.violations > HTML_VIOLATIONS)
		fprintf(f, "<p>... %" PRIu64 " more (see --json)</p>\n",
		        a->sum.violations - HTML_VIOLATIONS);
}

static void summary(const struct audit *a, FILE *f)
{
	const struct audit_summary *s = &a->sum;
	const struct audit_config *c = &a->cfg;
	double d = s->requests ? (double)(s->end_ms - s->start_ms) / 1000 : 0;
	char b[32];
	audit_fmt_bytes(b, sizeof b, (double)s->bytes);
	fputs("<h1>Politeness audit of ", f);
	svg_html_str(f, a->dir);
	fprintf(f,
	        "</h1>\n<ul><li>%" PRIu64 " pages, %" PRIu64 " requests (%" PRIu64
	        " robots.txt), %s, %" PRIu64 " hosts on %" PRIu64 " IPs, in %.1f s (%.1f pages/s)"
	        "</li>\n<li>50%% of the pages after %.1f s, 90%% after %.1f s, 99%% after %.1f s"
	        "</li>\n<li>judged against %s: policy %s, host delay %" PRId64
	        " ms, IP delay %" PRId64
	        " ms, IP politeness %s; tolerance %d ms (the log's resolution is 1 ms)</li>\n"
	        "<li class=\"%s\">violations: %" PRIu64 " (host %" PRIu64 ", IP %" PRIu64 ")</li>\n"
	        "<li>%" PRIu64 " malformed lines skipped, %" PRIu64 " late lines</li>\n"
	        "<li>not judged one by one, %s: robots.txt Crawl-delay, Retry-After, error "
	        "back-off; visit boundaries not in the log</li></ul>\n",
	        s->pages, s->requests, s->robots, b, s->hosts, s->ips, d, d > 0 ? s->pages / d : 0,
	        s->time_to_pct_s[0], s->time_to_pct_s[1], s->time_to_pct_s[2],
	        c->from_file ? "crawl.conf" : "the crawler's defaults",
	        delay_policy_name(c->policy), c->host_delay_ms, c->ip_delay_ms,
	        c->ip_politeness ? "on" : "off", AUDIT_TOLERANCE_MS, s->violations ? "bad" : "ok",
	        s->violations, s->host_violations, s->ip_violations, s->malformed, s->late,
	        s->wait_lines ? "only in sum (each request's wait_ms)" : "not in the log");
}

int audit_report_html(const struct audit *a, FILE *f)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<title>crawl politeness audit</title>\n",
	      f);
	fputs(svg_page_style, f);
	fputs("</head><body>\n", f);
	summary(a, f);
	fputs("<h2>Over time</h2>\n", f);
	plot_throughput(a, f);
	plot_hosts_state(a, f);
	plot_load(a, f);
	fputs("<h2>Gaps between consecutive requests (end of one to start of the next)</h2>\n"
	      "<p>Red: overlapping requests; green: the bin of the required host gap.</p>\n",
	      f);
	plot_hist(a, f, "Gap histogram, all hosts (ms)", a->disp_host, H);
	for (size_t i = 0; i < a->hosts.n && i < HTML_HOST_HISTS; i++) {
		const struct audit_entity *e = &a->hosts.v[a->hosts.order[i]];
		uint64_t c[AUDIT_DISPLAY_BINS];
		char title[600];
		for (unsigned b = 0; b < AUDIT_DISPLAY_BINS; b++)
			c[b] = e->disp[b];
		snprintf(title, sizeof title, "Gap histogram of %s (worst host %zu) (ms)", e->name,
		         i + 1);
		plot_hist(a, f, title, c, 180);
	}
	fputs("<h2>Worst hosts</h2>\n", f);
	table_hosts(a, f, 0);
	fputs("<h2>Violations</h2>\n", f);
	table_violations(a, f);
	fputs("<h2>IPs</h2>\n", f);
	table_hosts(a, f, 1);
	fputs("</body></html>\n", f);
	return ferror(f) ? -1 : 0;
}
