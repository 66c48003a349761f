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

#include "crawler/lab/lab.h"
#include "crawler/lab/svg_plot.h"

/*
 * The figures of a row, in the tables' column order after entry and rep:
 * X(index, column name, cell format, value from a struct lab_result *r).
 * The enum, the column table and run_row all expand this one list.
 */
#define FIGURES(X)                                                                                 \
	X(F_EXIT, "exit", "%.3g", r->crawl_status)                                                 \
	X(F_PAGES, "pages", "%.6g", (double)r->pages)                                              \
	X(F_REQUESTS, "requests", "%.6g", (double)r->requests)                                     \
	X(F_PAGES_PER_S, "pages_per_s", "%.2f", r->pages_per_s)                                    \
	X(F_T90_S, "t90_s", "%.3f", r->t90_s)                                                      \
	X(F_COVERAGE, "coverage", "%.3f", r->coverage)                                             \
	X(F_DURATION_S, "duration_s", "%.3f", r->duration_s)                                       \
	X(F_PEAK_IN_FLIGHT, "peak_in_flight", "%.3g", (double)r->peak_in_flight)                   \
	X(F_PEAK_RATE_1S, "peak_rate_1s", "%.3g", (double)r->peak_rate_1s)                         \
	X(F_MEAN_RATE_1S, "mean_rate_1s", "%.2f", r->mean_rate)                                    \
	X(F_DELAY_MS, "delay_ms", "%.6g", (double)r->delay_ms)                                     \
	X(F_VIOLATIONS, "violations", "%.6g", (double)r->violations)                               \
	X(F_OVERLAPS, "overlaps", "%.6g", (double)r->overlaps)

#define FIGURE_INDEX(id, name, format, value) id,
#define FIGURE_COLUMN(id, name, format, value) [id] = { name, format },
#define FIGURE_VALUE(id, name, format, value) [id] = value,

enum figure { FIGURES(FIGURE_INDEX) NFIGURES };

static const struct {
	const char *name, *format;
} figures[NFIGURES] = { FIGURES(FIGURE_COLUMN) };

/* One row, of a run or of an entry's mean. t90_s < 0: 90% never reached. */
struct row {
	const char *entry;
	char rep[16];
	double v[NFIGURES];
};

#define NCOLUMNS (2 + NFIGURES) /* entry, rep, the figures */

static const char *column_name(size_t i)
{
	return i == 0 ? "entry" : i == 1 ? "rep" : figures[i - 2].name;
}

static const struct lab_result *run_at(const struct lab_report *rep, size_t e, unsigned k)
{
	return &rep->runs[e * rep->plan->repetitions + k];
}

static void run_row(const struct lab_report *rep, size_t e, unsigned k, struct row *w)
{
	const struct lab_result *r = run_at(rep, e, k);
	w->entry = rep->plan->entries[e].name;
	snprintf(w->rep, sizeof w->rep, "%u", k + 1);
	const double v[NFIGURES] = { FIGURES(FIGURE_VALUE) };
	memcpy(w->v, v, sizeof v);
}

/* The mean of the entry's runs (t90_s: over the runs that reached it). */
static void mean_row(const struct lab_report *rep, size_t e, struct row *m)
{
	unsigned reps = rep->plan->repetitions, t90n = 0;
	double t90 = 0;
	struct row w;
	memset(m, 0, sizeof *m);
	for (unsigned k = 0; k < reps; k++) {
		run_row(rep, e, k, &w);
		for (size_t i = 0; i < NFIGURES; i++)
			m->v[i] += w.v[i] / reps;
		if (w.v[F_T90_S] >= 0) {
			t90 += w.v[F_T90_S];
			t90n++;
		}
	}
	m->entry = rep->plan->entries[e].name;
	snprintf(m->rep, sizeof m->rep, "mean");
	m->v[F_T90_S] = t90n ? t90 / t90n : -1;
}

/* The row's cells as text, in column order. */
static void cells(const struct row *w, char c[NCOLUMNS][32])
{
	snprintf(c[0], 32, "%.31s", w->entry);
	snprintf(c[1], 32, "%s", w->rep);
	for (size_t i = 0; i < NFIGURES; i++) {
		if (i == F_T90_S && w->v[i] < 0)
			snprintf(c[2 + i], 32, "-");
		else
			snprintf(c[2 + i], 32, figures[i].format, w->v[i]);
	}
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
		fprintf(f, "%s%c", column_name(i), i + 1 < NCOLUMNS ? '\t' : '\n');
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
		if (i == 2 + F_T90_S && strcmp(c[i], "-") == 0)
			fprintf(js->f, "%s\"%s\": null", i ? ", " : "", column_name(i));
		else if (text)
			fprintf(js->f, "%s\"%s\": \"%s\"", i ? ", " : "", column_name(i), c[i]);
		else
			fprintf(js->f, "%s\"%s\": %s", i ? ", " : "", column_name(i), c[i]);
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
static void plot_bars(const struct lab_report *rep, FILE *f, const char *title, enum figure fig)
{
	size_t n = rep->plan->n;
	double ymax = 0;
	struct row w;
	for (size_t e = 0; e < n; e++)
		for (unsigned k = 0; k < rep->plan->repetitions; k++) {
			run_row(rep, e, k, &w);
			ymax = w.v[fig] > ymax ? w.v[fig] : ymax;
		}
	ymax = ymax > 0 ? ymax * 1.1 : 1;
	svg_open(f, title, SVG_H);
	svg_y_axis(f, ymax, SVG_H, "");
	double pw = SVG_W - 10 - SVG_ML, ph = SVG_H - SVG_MT - SVG_MB, bw = pw / (double)n;
	for (size_t e = 0; e < n; e++) {
		mean_row(rep, e, &w);
		double v = w.v[fig] > 0 ? w.v[fig] : 0, bh = ph * v / ymax;
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
			double rv = w.v[fig] > 0 ? w.v[fig] : 0;
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#222\"/>",
			        SVG_ML + bw * ((double)e + 0.5), SVG_H - SVG_MB - ph * rv / ymax);
		}
		fputc('\n', f);
	}
	fputs("</svg>\n", f);
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
	plot_bars(rep, f, "Pages per second (server's first arrival to last response)",
	          F_PAGES_PER_S);
	plot_bars(rep, f, "Time to 90% of the expected set (s)", F_T90_S);
	plot_coverage(rep, f);
	plot_bars(rep, f, "Peak load per host: most arrivals within one second", F_PEAK_RATE_1S);
	plot_bars(rep, f, "Mean load per host: arrivals in the last second, mean over requests",
	          F_MEAN_RATE_1S);
	plot_bars(rep, f,
	          "Politeness violations (requests of a host closer than the judged delay, "
	          "or overlapping)",
	          F_VIOLATIONS);
	fputs("<h2>Runs</h2>\n<table><tr>", f);
	for (size_t i = 0; i < NCOLUMNS; i++)
		fprintf(f, "<th>%s</th>", column_name(i));
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
