/*
 * rules_bench.c: what URL rules cost per discovered URL, beside the work a
 * parse thread does for the same URLs today, in one run (tests/bench/rules.sh).
 *
 *   rules_bench --web DIR --rules FILE [--rounds R]
 *
 * DIR is `testweb --dump`'s folder (urls.txt and the pages). Each page's
 * links are extracted with parse/links.h (the HTML tokenizer, resolution
 * and crawl keys: a parse thread's work per page before the sieve), timed;
 * then every extracted key, repeats included as a parse thread meets them,
 * is decided by the rules of FILE with the prefilter on and off, and the
 * regex rules alone are run with POSIX regexec (glibc) in rule order to
 * the first match. Each figure is the best of R rounds (CPU time of this
 * thread). Printed as "figure NAME VALUE UNIT" lines.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frontier/base/array.h"
#include "frontier/base/fileio.h"
#include "frontier/url_rules.h"
#include "parse/links.h"

struct page {
	char *url, *body;
	size_t len;
};

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The dumped file of url ("http://HOST:PORT/PATH" -> DIR/HOST/PATH, a
 * folder's "index.html"), read; -1 when it is not there. */
static int load_page(const char *dir, const char *url, struct page *p)
{
	const char *h = strstr(url, "://");
	if (!h || strchr(url, '?'))
		return -1;
	h += 3;
	const char *path = strchr(h, '/');
	const char *colon = memchr(h, ':', path ? (size_t)(path - h) : strlen(h));
	size_t hl = colon ? (size_t)(colon - h) : (path ? (size_t)(path - h) : strlen(h));
	char file[8192];
	snprintf(file, sizeof file, "%s/%.*s%s%s", dir, (int)hl, h, path ? path : "/",
	         !path || path[strlen(path) - 1] == '/' ? "index.html" : "");
	p->body = fileio_read_path(file, 64u << 20, &p->len);
	if (!p->body)
		return -1;
	p->url = strdup(url);
	return p->url ? 0 : -1;
}

/* The regex rules of FILE, compiled by POSIX regcomp (ERE); how many. */
static size_t posix_regexes(const char *path, regex_t *re, size_t max)
{
	size_t len, n = 0;
	char *text = fileio_read_path(path, 64u << 20, &len);
	char *str = text ? realloc(text, len + 1) : NULL; /* strtok wants a string */
	if (str)
		str[len] = '\0';
	else
		free(text);
	text = str;
	for (char *line = text ? strtok(text, "\n") : NULL; line && n < max;
	     line = strtok(NULL, "\n")) {
		char act[16], kind[16], pat[4096];
		if (sscanf(line, "%15s %15s %4095s", act, kind, pat) == 3 &&
		    strcmp(kind, "regex") == 0 &&
		    regcomp(&re[n], pat, REG_EXTENDED | REG_NOSUB) == 0)
			n++;
	}
	free(text);
	return n;
}

struct keys {
	char **v;
	size_t n, cap;
};

int main(int argc, char **argv)
{
	const char *web = NULL, *rules_path = NULL;
	int rounds = 3;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--web") == 0)
			web = argv[i + 1];
		else if (strcmp(argv[i], "--rules") == 0)
			rules_path = argv[i + 1];
		else if (strcmp(argv[i], "--rounds") == 0)
			rounds = atoi(argv[i + 1]);
	}
	if (!web || !rules_path || rounds < 1) {
		fprintf(stderr, "usage: rules_bench --web DIR --rules FILE [--rounds R]\n");
		return 2;
	}
	char path[4096], line[8192], err[1024];
	snprintf(path, sizeof path, "%s/urls.txt", web);
	FILE *f = fopen(path, "r");
	struct page *pages = NULL;
	size_t npages = 0, pcap = 0;
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		pages = array_grow(pages, &pcap, npages, sizeof *pages, 256);
		if (pages && load_page(web, line, &pages[npages]) == 0)
			npages++;
	}
	if (f)
		fclose(f);
	if (npages == 0) {
		fprintf(stderr, "rules_bench: no page read from %s\n", path);
		return 1;
	}

	/* A parse thread's link work per page: extraction to crawl keys. */
	struct links_config lc = { 0 };
	struct links_extractor *ex = NULL;
	struct keys keys = { 0 };
	if (links_extractor_create(&lc, &ex) != LINKS_OK)
		return 1;
	double best_extract = 1e30;
	for (int r = 0; r < rounds; r++) {
		double t0 = cpu_now();
		for (size_t i = 0; i < npages; i++) {
			size_t n = 0;
			links_extract(ex, pages[i].url, NULL, pages[i].body, pages[i].len);
			const struct link *l = links_result(ex, &n);
			for (size_t k = 0; r == 0 && k < n; k++) {
				keys.v =
				        array_grow(keys.v, &keys.cap, keys.n, sizeof *keys.v, 1024);
				if (!keys.v || !(keys.v[keys.n++] = strdup(l[k].url)))
					return 1;
			}
		}
		double t = cpu_now() - t0;
		best_extract = t < best_extract ? t : best_extract;
	}

	double best[2] = { 1e30, 1e30 };
	uint64_t outcome[3] = { 0 };
	for (int pf = 1; pf >= 0; pf--) {
		struct url_rules *rules = url_rules_create(NULL);
		url_rules_set_prefilter(rules, pf);
		if (url_rules_add_file(rules, rules_path, err, sizeof err) != URL_RULES_OK ||
		    url_rules_seal(rules, err, sizeof err) != URL_RULES_OK) {
			fprintf(stderr, "rules_bench: %s\n", err);
			return 1;
		}
		for (int r = 0; r < rounds; r++) {
			double t0 = cpu_now();
			for (size_t i = 0; i < keys.n; i++) {
				struct url_rules_decision d;
				url_rules_decide(rules, keys.v[i], strlen(keys.v[i]), 2, &d);
				if (r == 0 && pf)
					outcome[d.action]++;
			}
			double t = cpu_now() - t0;
			best[pf] = t < best[pf] ? t : best[pf];
		}
		if (pf)
			printf("figure rules %zu rules\n", url_rules_size(rules));
		url_rules_destroy(rules);
	}

	static regex_t posix[4096];
	size_t nposix = posix_regexes(rules_path, posix, 4096);
	double best_posix = 1e30;
	for (int r = 0; r < (rounds > 1 ? 2 : 1); r++) {
		double t0 = cpu_now();
		for (size_t i = 0; i < keys.n; i++)
			for (size_t k = 0; k < nposix; k++)
				if (regexec(&posix[k], keys.v[i], 0, NULL, 0) == 0)
					break;
		double t = cpu_now() - t0;
		best_posix = t < best_posix ? t : best_posix;
	}

	double per_page = (double)keys.n / (double)npages;
	printf("figure pages %zu pages\n", npages);
	printf("figure links %zu links\n", keys.n);
	printf("figure links_per_page %.2f links\n", per_page);
	printf("figure extract_per_page %.2f us\n", best_extract * 1e6 / (double)npages);
	printf("figure extract_per_link %.1f ns\n", best_extract * 1e9 / (double)keys.n);
	printf("figure rules_per_url %.1f ns\n", best[1] * 1e9 / (double)keys.n);
	printf("figure rules_per_page %.2f us\n", best[1] * 1e6 / (double)npages);
	printf("figure rules_noprefilter_per_url %.1f ns\n", best[0] * 1e9 / (double)keys.n);
	printf("figure posix_regexes %zu regexes\n", nposix);
	printf("figure posix_per_url %.1f ns\n", best_posix * 1e9 / (double)keys.n);
	printf("figure rules_vs_extract %.4f ratio\n", best[1] / best_extract);
	printf("figure decisions %llu no-match, %llu accept, %llu reject\n",
	       (unsigned long long)outcome[0], (unsigned long long)outcome[1],
	       (unsigned long long)outcome[2]);
	for (size_t k = 0; k < nposix; k++)
		regfree(&posix[k]);
	for (size_t i = 0; i < keys.n; i++)
		free(keys.v[i]);
	free(keys.v);
	for (size_t i = 0; i < npages; i++) {
		free(pages[i].url);
		free(pages[i].body);
	}
	free(pages);
	links_extractor_destroy(ex);
	return 0;
}
