/*
 * links_bench.c: throughput of parse/links.h against its floor, libxml2's
 * HTML push parser run over the same pages with an empty SAX handler (no
 * tree, no callbacks: what any extractor built on libxml2 must pay).
 *
 * Usage: links_bench [--rounds N] [--no-simhash] [--requisites] LIST
 *   LIST: a file with one HTML file path per line. Every page is loaded into
 *   memory first; each round runs, page by page, the floor then the
 *   extractor; each page keeps its best time of each over the rounds, and
 *   the sums are reported (the machine is shared: the best is the least
 *   disturbed, and back-to-back runs see the same load).
 * Output (stdout):
 *   pages N bytes B links L
 *   floor_mbps X
 *   links_mbps Y
 *   ratio R        (links / floor; 1.0 = no overhead)
 */
#include <libxml/HTMLparser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parse/links.h"

struct page {
	char *body;
	size_t len;
	char url[512];
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load(const char *path, struct page *p)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	int rc = -1;
	if (fseek(f, 0, SEEK_END) != 0)
		goto out;
	long n = ftell(f);
	if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	p->body = malloc((size_t)n + 1);
	if (!p->body || fread(p->body, 1, (size_t)n, f) != (size_t)n)
		goto out;
	p->len = (size_t)n;
	snprintf(p->url, sizeof p->url, "http://bench.example%s%s", path[0] == '/' ? "" : "/",
	         path);
	rc = 0;
out:
	fclose(f);
	return rc;
}

static void floor_parse(const struct page *p)
{
	htmlSAXHandler sax;
	memset(&sax, 0, sizeof sax);
	htmlParserCtxtPtr ctxt =
	        htmlCreatePushParserCtxt(&sax, NULL, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
	if (!ctxt)
		abort();
	htmlCtxtUseOptions(ctxt, HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR |
	                                 HTML_PARSE_NOWARNING | HTML_PARSE_COMPACT);
	htmlParseChunk(ctxt, p->body, (int)p->len, 1);
	htmlFreeParserCtxt(ctxt);
}

int main(int argc, char **argv)
{
	int rounds = 5;
	struct links_config cfg = { 0 };
	const char *list = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 1000) {
				fprintf(stderr, "bad --rounds\n");
				return 2;
			}
			rounds = (int)v;
		} else if (strcmp(argv[i], "--no-simhash") == 0) {
			cfg.no_simhash = true;
		} else if (strcmp(argv[i], "--requisites") == 0) {
			cfg.requisites = true;
		} else {
			list = argv[i];
		}
	}
	if (!list) {
		fprintf(stderr,
		        "usage: links_bench [--rounds N] [--no-simhash] [--requisites] LIST\n");
		return 2;
	}
	FILE *lf = fopen(list, "r");
	if (!lf) {
		perror(list);
		return 1;
	}
	size_t n = 0, cap = 1024;
	struct page *pages = calloc(cap, sizeof *pages);
	char *line = NULL;
	size_t linecap = 0;
	ssize_t got;
	size_t bytes = 0;
	while (pages && (got = getline(&line, &linecap, lf)) > 0) {
		if (line[got - 1] == '\n')
			line[got - 1] = '\0';
		if (!line[0])
			continue;
		if (n == cap) {
			struct page *np = realloc(pages, 2 * cap * sizeof *np);
			if (!np)
				break;
			pages = np;
			cap *= 2;
		}
		if (load(line, &pages[n]) == 0 && pages[n].len < (size_t)1 << 30) {
			bytes += pages[n].len;
			n++;
		}
	}
	free(line);
	fclose(lf);
	if (!pages || n == 0) {
		fprintf(stderr, "links_bench: no pages loaded\n");
		return 1;
	}
	xmlInitParser();
	struct links_extractor *ex = NULL;
	if (links_extractor_create(&cfg, &ex) != LINKS_OK)
		return 1;
	/* Per page, the floor and the extractor run back to back and each keeps
     * its best time over the rounds: bursts of load from other processes
     * hit both alike or are filtered out. */
	double *tf = malloc(n * sizeof *tf), *tl = malloc(n * sizeof *tl);
	if (!tf || !tl)
		return 1;
	for (size_t i = 0; i < n; i++)
		tf[i] = tl[i] = 1e30;
	size_t links = 0;
	for (int r = 0; r < rounds; r++) {
		size_t l = 0;
		for (size_t i = 0; i < n; i++) {
			double t0 = now_s();
			floor_parse(&pages[i]);
			double t1 = now_s();
			if (links_extract(ex, pages[i].url, NULL, pages[i].body, pages[i].len) !=
			    LINKS_OK) {
				fprintf(stderr, "links_bench: extraction failed on %s\n",
				        pages[i].url);
				return 1;
			}
			double t2 = now_s();
			size_t c;
			links_result(ex, &c);
			l += c;
			if (t1 - t0 < tf[i])
				tf[i] = t1 - t0;
			if (t2 - t1 < tl[i])
				tl[i] = t2 - t1;
		}
		links = l;
	}
	double best_floor = 0, best_links = 0;
	for (size_t i = 0; i < n; i++) {
		best_floor += tf[i];
		best_links += tl[i];
	}
	free(tf);
	free(tl);
	double mb = (double)bytes / 1e6;
	printf("pages %zu bytes %zu links %zu\n", n, bytes, links);
	printf("floor_mbps %.1f\n", mb / best_floor);
	printf("links_mbps %.1f\n", mb / best_links);
	printf("ratio %.3f\n", best_floor / best_links);
	links_extractor_destroy(ex);
	for (size_t i = 0; i < n; i++)
		free(pages[i].body);
	free(pages);
	return 0;
}
