/*
 * lab_report.c: the lab's comparison (lab.h) as a text table, TSV, JSON
 * and one self-contained HTML page with inline SVG plots (svg_plot.h).
 * Every format has the same rows: one per run, then one per entry with the
 * mean over its repetitions (time to 90% averaged over the runs that
 * reached it; "-" when none did).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab.h"
#include "crawler/svg_plot.h"

/* One row's figures, of a run or of an entry's mean. */
struct row {
	const char *entry;
	char rep[16];
	double status, pages, requests, pages_per_s, t90_s, coverage, duration_s;
	double peak_in_flight, peak_rate_1s, mean_rate, delay_ms, violations, overlaps;
};

static const struct lab_result *run_at(const struct lab_report *rep, size_t e, unsigned k)
{
	return &rep->runs[e * rep->plan->repetitions + k];
}

static void run_row(const struct lab_report *rep, size_t e, unsigned k, struct row *w)
{
	const struct lab_result *r = run_at(rep, e, k);
	memset(w, 0, sizeof *w);
	w->entry = rep->plan->entries[e].name;
	snprintf(w->rep, sizeof w->rep, "%u", k + 1);
	w->status = r->crawl_status;
	w->pages = (double)r->pages;
	w->requests = (double)r->requests;
	w->pages_per_s = r->pages_per_s;
	w->t90_s = r->t90_s;
	w->coverage = r->coverage;
	w->duration_s = r->duration_s;
	w->peak_in_flight = (double)r->peak_in_flight;
	w->peak_rate_1s = (double)r->peak_rate_1s;
	w->mean_rate = r->mean_rate;
	w->delay_ms = (double)r->delay_ms;
	w->violations = (double)r->violations;
	w->overlaps = (double)r->overlaps;
}

static void mean_row(const struct lab_report *rep, size_t e, struct row *m)
{
	unsigned reps = rep->plan->repetitions, t90n = 0;
	double t90 = 0;
	struct row w;
	memset(m, 0, sizeof *m);
	for (unsigned k = 0; k < reps; k++) {
		run_row(rep, e, k, &w);
		m->status += w.status / reps;
		m->pages += w.pages / reps;
		m->requests += w.requests / reps;
		m->pages_per_s += w.pages_per_s / reps;
		m->coverage += w.coverage / reps;
		m->duration_s += w.duration_s / reps;
		m->peak_in_flight += w.peak_in_flight / reps;
		m->peak_rate_1s += w.peak_rate_1s / reps;
		m->mean_rate += w.mean_rate / reps;
		m->delay_ms += w.delay_ms / reps;
		m->violations += w.violations / reps;
		m->overlaps += w.overlaps / reps;
		if (w.t90_s >= 0) {
			t90 += w.t90_s;
			t90n++;
		}
	}
	m->entry = rep->plan->entries[e].name;
	snprintf(m->rep, sizeof m->rep, "mean");
	m->t90_s = t90n ? t90 / t90n : -1;
}

static const char *const columns[] = {
	"entry",        "rep",          "exit",     "pages",      "requests",
	"pages_per_s",  "t90_s",        "coverage", "duration_s", "peak_in_flight",
	"peak_rate_1s", "mean_rate_1s", "delay_ms", "violations", "overlaps",
};
#define NCOLUMNS (sizeof columns / sizeof columns[0])

/* The row's cells as text, in columns' order. */
static void cells(const struct row *w, char c[NCOLUMNS][32])
{
	snprintf(c[0], 32, "%.31s", w->entry);
	snprintf(c[1], 32, "%s", w->rep);
	snprintf(c[2], 32, "%.3g", w->status);
	snprintf(c[3], 32, "%.6g", w->pages);
	snprintf(c[4], 32, "%.6g", w->requests);
	snprintf(c[5], 32, "%.2f", w->pages_per_s);
	if (w->t90_s >= 0)
		snprintf(c[6], 32, "%.3f", w->t90_s);
	else
		snprintf(c[6], 32, "-");
	snprintf(c[7], 32, "%.3f", w->coverage);
	snprintf(c[8], 32, "%.3f", w->duration_s);
	snprintf(c[9], 32, "%.3g", w->peak_in_flight);
	snprintf(c[10], 32, "%.3g", w->peak_rate_1s);
	snprintf(c[11], 32, "%.2f", w->mean_rate);
	snprintf(c[12], 32, "%.6g", w->delay_ms);
	snprintf(c[13], 32, "%.6g", w->violations);
	snprintf(c[14], 32, "%.6g", w->overlaps);
}

/* Calls fn on every row: runs of entry 0, its mean, runs of entry 1, ... */
static void each_row(const struct lab_report *rep, void (*fn)(const struct row *, void *),
                     void *arg)
{
	struct row w;
	for (size_t e = 0; e < rep->plan->n; e++) {
		for (unsigned k = 0; k < rep->plan->repetitions; k++) {
			run_row(rep, e, k, &w);
			fn(&w, arg);
		}
		mean_row(rep, e, &w);
		fn(&w, arg);
	}
}

static void text_row(const struct row *w, void *arg)
{
	char c[NCOLUMNS][32];
	cells(w, c);
	fprintf(arg, "%-14s %-4s %4s %6s %12s %8s %8s %10s %8s %8s %10s %10s\n", c[0], c[1], c[2],
	        c[3], c[5], c[6], c[7], c[9], c[10], c[11], c[13], c[14]);
}

int lab_report_text(const struct lab_report *rep, FILE *f)
{
	fprintf(f, "%-14s %-4s %4s %6s %12s %8s %8s %10s %8s %8s %10s %10s\n", "entry", "rep",
	        "exit", "pages", "pages/s", "t90_s", "coverage", "peak_infl", "peak_r1s",
	        "mean_r1s", "violations", "overlaps");
	each_row(rep, text_row, f);
	fputs("(judged from the test web's request log: pages/s over the server's first\n"
	      " arrival to last response; t90_s: time to 90% of the expected set; load per\n"
	      " host: peak requests in service at once, peak and mean arrivals in the last\n"
	      " second; violations: requests of a host closer than the judged delay,\n"
	      " arrival to arrival, or overlapping; overlaps also apart)\n",
	      f);
	return ferror(f) ? -1 : 0;
}

static void tsv_row(const struct row *w, void *arg)
{
	char c[NCOLUMNS][32];
	cells(w, c);
	for (size_t i = 0; i < NCOLUMNS; i++)
		fprintf(arg, "%s%c", c[i], i + 1 < NCOLUMNS ? '\t' : '\n');
}

int lab_report_tsv(const struct lab_report *rep, FILE *f)
{
	for (size_t i = 0; i < NCOLUMNS; i++)
		fprintf(f, "%s%c", columns[i], i + 1 < NCOLUMNS ? '\t' : '\n');
	each_row(rep, tsv_row, f);
	return ferror(f) ? -1 : 0;
}

struct json_state {
	FILE *f;
	int n;
};

static void json_row(const struct row *w, void *arg)
{
	struct json_state *js = arg;
	char c[NCOLUMNS][32];
	cells(w, c);
	fprintf(js->f, "%s\n  {", js->n++ ? "," : "");
	for (size_t i = 0; i < NCOLUMNS; i++) {
		int text = i < 2 || strcmp(c[i], "-") == 0;
		if (i == 6 && strcmp(c[i], "-") == 0)
			fprintf(js->f, "%s\"%s\": null", i ? ", " : "", columns[i]);
		else if (text)
			fprintf(js->f, "%s\"%s\": \"%s\"", i ? ", " : "", columns[i], c[i]);
		else
			fprintf(js->f, "%s\"%s\": %s", i ? ", " : "", columns[i], c[i]);
	}
	fputc('}', js->f);
}

int lab_report_json(const struct lab_report *rep, FILE *f)
{
	struct json_state js = { f, 0 };
	fprintf(f, "{\"repetitions\": %u, \"tolerance_ms\": %u, \"rows\": [",
	        rep->plan->repetitions, rep->plan->tolerance_ms);
	each_row(rep, json_row, &js);
	fputs("\n]}\n", f);
	return ferror(f) ? -1 : 0;
}

static const char *const colors[] = { "#4a7fb0", "#e8a33d", "#2e8b57", "#c0392b",
	                              "#8e44ad", "#7f8c8d", "#d35400", "#16a085" };
#define NCOLORS (sizeof colors / sizeof colors[0])

/* Bars of one figure: the mean of each entry, with each run as a dot. */
static void plot_bars(const struct lab_report *rep, FILE *f, const char *title,
                      double (*get)(const struct row *))
{
	size_t n = rep->plan->n;
	double ymax = 0;
	struct row w;
	for (size_t e = 0; e < n; e++)
		for (unsigned k = 0; k < rep->plan->repetitions; k++) {
			run_row(rep, e, k, &w);
			ymax = get(&w) > ymax ? get(&w) : ymax;
		}
	ymax = ymax > 0 ? ymax * 1.1 : 1;
	svg_open(f, title, SVG_H);
	svg_y_axis(f, ymax, SVG_H, "");
	double pw = SVG_W - 10 - SVG_ML, ph = SVG_H - SVG_MT - SVG_MB, bw = pw / (double)n;
	for (size_t e = 0; e < n; e++) {
		mean_row(rep, e, &w);
		double v = get(&w) > 0 ? get(&w) : 0, bh = ph * v / ymax;
		fprintf(f,
		        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
		        "<title>%.4g</title></rect><text x=\"%.1f\" y=\"%d\" class=\"xl\">",
		        SVG_ML + bw * (double)e + bw * 0.15, SVG_H - SVG_MB - bh, bw * 0.7, bh,
		        colors[e % NCOLORS], v, SVG_ML + bw * ((double)e + 0.5),
		        SVG_H - SVG_MB + 14);
		svg_html_str(f, w.entry);
		fputs("</text>\n", f);
		for (unsigned k = 0; k < rep->plan->repetitions; k++) {
			run_row(rep, e, k, &w);
			double rv = get(&w) > 0 ? get(&w) : 0;
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#222\"/>",
			        SVG_ML + bw * ((double)e + 0.5), SVG_H - SVG_MB - ph * rv / ymax);
		}
		fputc('\n', f);
	}
	fputs("</svg>\n", f);
}

static double get_pps(const struct row *w)
{
	return w->pages_per_s;
}
static double get_t90(const struct row *w)
{
	return w->t90_s;
}
static double get_peak_rate(const struct row *w)
{
	return w->peak_rate_1s;
}
static double get_mean_rate(const struct row *w)
{
	return w->mean_rate;
}
static double get_violations(const struct row *w)
{
	return w->violations;
}

/* Coverage of the expected set over time: one line per run. */
static void plot_coverage(const struct lab_report *rep, FILE *f)
{
	double tmax = 0;
	size_t nruns = rep->plan->n * rep->plan->repetitions;
	for (size_t i = 0; i < nruns; i++)
		if (rep->runs[i].ncover > 0 && rep->runs[i].cover_s[rep->runs[i].ncover - 1] > tmax)
			tmax = rep->runs[i].cover_s[rep->runs[i].ncover - 1];
	tmax = tmax > 0 ? tmax : 1;
	svg_open(f, "Coverage of the expected set over time (share requested; one line per run)",
	         SVG_H);
	svg_y_axis(f, 1, SVG_H, "");
	svg_x_time_axis(f, tmax, SVG_H);
	double pw = SVG_W - 10 - SVG_ML, ph = SVG_H - SVG_MT - SVG_MB;
	for (size_t i = 0; i < nruns; i++) {
		const struct lab_result *r = &rep->runs[i];
		size_t e = i / rep->plan->repetitions;
		fprintf(f,
		        "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
		        "points=\"%.1f,%d ",
		        colors[e % NCOLORS], (double)SVG_ML, SVG_H - SVG_MB);
		for (size_t k = 0; k < r->ncover; k++)
			fprintf(f, "%.1f,%.1f ", SVG_ML + pw * r->cover_s[k] / tmax,
			        SVG_H - SVG_MB - ph * (double)(k + 1) / (double)r->expected);
		fputs("\"><title>", f);
		svg_html_str(f, rep->plan->entries[e].name);
		fputs("</title></polyline>\n", f);
	}
	for (size_t e = 0; e < rep->plan->n; e++) {
		fprintf(f, "<text x=\"%.0f\" y=\"%d\" fill=\"%s\" class=\"rl\">", SVG_W - 200.0,
		        SVG_MT + 30 + 14 * (int)e, colors[e % NCOLORS]);
		svg_html_str(f, rep->plan->entries[e].name);
		fputs("</text>\n", f);
	}
	fputs("</svg>\n", f);
}

static void html_row(const struct row *w, void *arg)
{
	char c[NCOLUMNS][32];
	cells(w, c);
	fputs(strcmp(w->rep, "mean") == 0 ? "<tr style=\"font-weight:bold\">" : "<tr>",
	      (FILE *)arg);
	for (size_t i = 0; i < NCOLUMNS; i++) {
		fputs("<td>", arg);
		svg_html_str(arg, c[i]);
		fputs("</td>", arg);
	}
	fputs("</tr>\n", arg);
}

int lab_report_html(const struct lab_report *rep, FILE *f)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<title>crawler lab: politeness policies compared</title>\n",
	      f);
	fputs(svg_page_style, f);
	fprintf(f,
	        "</head><body>\n<h1>Politeness policies compared</h1>\n"
	        "<p>%zu entries, %u repetition(s) each, every run against a fresh test web and "
	        "judged from the test web's own request log. Bars: mean over repetitions; "
	        "dots: each run.</p>\n",
	        rep->plan->n, rep->plan->repetitions);
	plot_bars(rep, f, "Pages per second (server's first arrival to last response)", get_pps);
	plot_bars(rep, f, "Time to 90% of the expected set (s)", get_t90);
	plot_coverage(rep, f);
	plot_bars(rep, f, "Peak load per host: most arrivals within one second", get_peak_rate);
	plot_bars(rep, f, "Mean load per host: arrivals in the last second, mean over requests",
	          get_mean_rate);
	plot_bars(rep, f,
	          "Politeness violations (requests of a host closer than the judged delay, "
	          "or overlapping)",
	          get_violations);
	fputs("<h2>Runs</h2>\n<table><tr>", f);
	for (size_t i = 0; i < NCOLUMNS; i++)
		fprintf(f, "<th>%s</th>", columns[i]);
	fputs("</tr>\n", f);
	each_row(rep, html_row, f);
	fputs("</table>\n<h2>Entries</h2>\n", f);
	for (size_t e = 0; e < rep->plan->n; e++) {
		const struct lab_entry *en = &rep->plan->entries[e];
		fputs("<p><b>", f);
		svg_html_str(f, en->name);
		fputs("</b>: crawl", f);
		for (size_t i = 0; i < en->args.n; i++) {
			fputc(' ', f);
			svg_html_str(f, en->args.v[i]);
		}
		fprintf(f, "; test web --hosts %ld --pages %ld --ips %ld --seed %ld", en->web.hosts,
		        en->web.pages, en->web.ips, en->web.seed);
		for (size_t i = 0; i < en->models.n; i++) {
			fputs("; model ", f);
			svg_html_str(f, en->models.v[i]);
		}
		fputs("</p>\n", f);
	}
	fputs("</body></html>\n", f);
	return ferror(f) ? -1 : 0;
}
