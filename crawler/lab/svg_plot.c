/*
 * svg_plot.c: the pieces of a self-contained HTML report with inline SVG
 * plots (svg_plot.h), shared by the audit (audit_html.c) and the lab
 * (lab_report.c).
 */
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/svg_plot.h"

#define W SVG_W
#define ML SVG_ML
#define MB SVG_MB
#define MT SVG_MT

/* Writes s HTML-escaped; bytes that are not UTF-8 become U+FFFD. */
void svg_html_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	while (*p) {
		unsigned c = *p;
		size_t n = c < 0x80                ? 1
		           : c >= 0xf0 && c < 0xf5 ? 4
		           : c >= 0xe0             ? 3
		           : c >= 0xc2             ? 2
		                                   : 0;
		size_t k = 1;
		while (n > 1 && k < n && (p[k] & 0xc0) == 0x80)
			k++;
		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\'')
			fputs("&#39;", f);
		else if (c < 0x20 || c == 0x7f)
			fputs("&#xfffd;", f);
		else if (n && k == n)
			fwrite(p, 1, n, f);
		else
			fputs("&#xfffd;", f);
		p += n && k == n ? n : 1;
	}
}

void svg_open(FILE *f, const char *title, int h)
{
	fprintf(f,
	        "<svg width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" role=\"img\"><title>",
	        W, h, W, h);
	svg_html_str(f, title);
	fprintf(f,
	        "</title><rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>"
	        "<text x=\"%d\" y=\"18\" class=\"t\">",
	        W, h, ML);
	svg_html_str(f, title);
	fputs("</text>\n", f);
}

void svg_y_axis(FILE *f, double ymax, int h, const char *unit)
{
	int plot_h = h - MT - MB;
	for (int i = 0; i <= 4; i++) {
		double v = ymax * i / 4;
		int y = h - MB - plot_h * i / 4;
		fprintf(f,
		        "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" class=\"g\"/>"
		        "<text x=\"%d\" y=\"%d\" class=\"yl\">%.3g%s</text>\n",
		        ML, W - 10, y, y, ML - 4, y + 4, v, i == 4 ? unit : "");
	}
}

void svg_x_time_axis(FILE *f, double total_s, int h)
{
	for (int i = 0; i <= 5; i++) {
		int x = ML + (W - 10 - ML) * i / 5;
		fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"xl\">%.3g s</text>\n", x, h - MB + 16,
		        total_s * i / 5);
	}
}

double svg_max_of(const double *v, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m > 0 ? m : 1;
}

/* Filled area under v (on top of base, if any), over the series bins. */
void svg_area(FILE *f, const double *v, const double *base, size_t n, double ymax, int h,
              const char *color)
{
	double pw = W - 10 - ML, ph = h - MT - MB;
	fprintf(f, "<polygon fill=\"%s\" stroke=\"none\" points=\"", color);
	for (size_t i = 0; i < n; i++) {
		double y0 = base ? base[i] : 0;
		double x = ML + pw * ((double)i + 0.5) / (double)n;
		fprintf(f, "%.1f,%.1f ", x, h - MB - ph * (y0 + v[i]) / ymax);
	}
	for (size_t i = n; i-- > 0;) {
		double y0 = base ? base[i] : 0;
		double x = ML + pw * ((double)i + 0.5) / (double)n;
		fprintf(f, "%.1f,%.1f ", x, h - MB - ph * y0 / ymax);
	}
	fputs("\"/>\n", f);
}

const char svg_page_style[] =
        "<style>body{font:14px sans-serif;margin:1em 2em;color:#222}"
        "svg{display:block;margin:1em 0;border:1px solid #ddd}"
        ".t{font:bold 13px sans-serif}.yl{font:11px sans-serif;text-anchor:end}"
        ".xl{font:10px sans-serif;text-anchor:middle}.rl{font:11px monospace}"
        ".g{stroke:#eee}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font:12px monospace;text-align:right}"
        "td:first-child{text-align:left}.bad{color:#c0392b}.ok{color:#2e8b57}</style>\n";
