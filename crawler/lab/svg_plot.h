/*
 * svg_plot.h: building blocks of a self-contained HTML report (the audit's
 * and the lab's): HTML escaping, one inline CSS block, and SVG plots of a
 * fixed width SVG_W with a title, a y axis of 5 grid lines and an x axis.
 *
 * A plot is drawn between svg_open and "</svg>": its plotting area spans
 * x from SVG_ML to SVG_W - 10 and y from SVG_MT to h - SVG_MB (h the height
 * given to svg_open), the origin at the bottom left. Nothing is loaded from
 * anywhere: no script, font, image or external style, so a page reads
 * offline in any browser. Every function writes to f and ignores errors;
 * the caller checks ferror/fclose at the end.
 */
#ifndef CRAWLER_LAB_SVG_PLOT_H
#define CRAWLER_LAB_SVG_PLOT_H

#include <stddef.h>
#include <stdio.h>

#define SVG_W 860
#define SVG_H 240
#define SVG_ML 60 /* left margin: y labels */
#define SVG_MB 30 /* bottom margin: x labels */
#define SVG_MT 28 /* top margin: title */

/* <style>...</style> for a report page (classes t, yl, xl, rl, g, bad, ok). */
extern const char svg_page_style[];

/* Writes s HTML-escaped (NULL as ""); bytes that are not UTF-8 become U+FFFD. */
void svg_html_str(FILE *f, const char *s);

/* Opens an <svg> of height h with title (a tooltip and a heading). */
void svg_open(FILE *f, const char *title, int h);

/* Grid lines and labels 0..ymax in 4 steps, unit after the top label. */
void svg_y_axis(FILE *f, double ymax, int h, const char *unit);

/* Labels 0..total_s seconds in 5 steps under the plotting area. */
void svg_x_time_axis(FILE *f, double total_s, int h);

/* The largest of v[0..n), or 1 when none is above 0 (a safe axis top). */
double svg_max_of(const double *v, size_t n);

/* Filled area under v (on top of base, if any), n bins across the plot. */
void svg_area(FILE *f, const double *v, const double *base, size_t n, double ymax, int h,
              const char *color);

#endif
