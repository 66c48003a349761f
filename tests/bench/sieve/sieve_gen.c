/*
 * sieve_gen.c: deterministic URL corpus for the sieve benchmark.
 *
 * usage: sieve_gen N [SEED]  -> N lines on stdout.
 * Distinct URL number i is a pure function of (i, seed): a host drawn with
 * Zipf popularity (s = 1) from H = max(1000, N/100) hosts, then path words,
 * the id in base 36 and a query: 60-100 bytes, realistic shapes. About half
 * the lines repeat an earlier URL, picked with a Zipf-like skew towards the
 * earliest (popular) ones and the most recent ones (navigation links).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static double unit(uint64_t *s)
{
	*s = mix(*s);
	return (double)(*s >> 11) * (1.0 / 9007199254740992.0);
}

static const char *const words[] = {
	"news",   "article", "products", "category", "blog",  "2023",    "2024",   "sports",
	"world",  "tech",    "archive",  "tag",      "users", "profile", "search", "item",
	"detail", "page",    "docs",     "wiki",     "en",    "it",      "de",     "static",
	"media",  "forum",   "thread",   "help",     "shop",  "events",
};
static const char *const tlds[] = { "com", "org", "net", "it", "de", "co.uk", "io", "edu" };
static const char *const exts[] = { ".html", ".php", "", "/", ".htm", ".aspx" };

static double *cdf;
static size_t nhosts;

static size_t zipf_host(double u)
{
	size_t lo = 0, hi = nhosts - 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int url_of(uint64_t id, uint64_t seed, char *out, size_t len)
{
	uint64_t s = mix(id ^ seed);
	size_t h = zipf_host(unit(&s));
	uint64_t hs = mix(h ^ (seed * 31));
	char id36[16];
	int k = 0;
	uint64_t v = id;
	do {
		id36[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v > 0 && k < 15);
	id36[k] = '\0';
	int depth = 2 + (int)(unit(&s) * 3);
	int n = snprintf(out, len, "%s://%s%s-%s%zx.%s/", (hs & 1) ? "https" : "http",
	                 (hs & 2) ? "www." : "", words[hs % 30], words[(hs >> 16) % 30], h,
	                 tlds[(hs >> 8) % 8]);
	for (int d = 0; d < depth && n < (int)len; d++)
		n += snprintf(out + n, len - (size_t)n, "%s/", words[(size_t)(unit(&s) * 30)]);
	if (n < (int)len)
		n += snprintf(out + n, len - (size_t)n, "%s-%s%s", id36,
		              words[(size_t)(unit(&s) * 30)], exts[(size_t)(unit(&s) * 6)]);
	if (unit(&s) < 0.6 && n < (int)len)
		n += snprintf(out + n, len - (size_t)n, "?id=%llu&ref=%s",
		              (unsigned long long)(mix(id) % 100000),
		              words[(size_t)(unit(&s) * 30)]);
	return n;
}

int main(int argc, char **argv)
{
	char *end;
	unsigned long long n, seed = 1;
	uint64_t st, distinct = 0;
	static char obuf[1 << 20];
	char u[256];

	if (argc < 2) {
		fprintf(stderr, "usage: sieve_gen N [SEED]\n");
		return 2;
	}
	n = strtoull(argv[1], &end, 10);
	if (*end != '\0' || n == 0)
		return 2;
	if (argc > 2) {
		seed = strtoull(argv[2], &end, 10);
		if (*end != '\0')
			return 2;
	}
	nhosts = n / 100 > 1000 ? (size_t)(n / 100) : 1000;
	cdf = malloc(nhosts * sizeof *cdf);
	if (cdf == NULL)
		return 1;
	double sum = 0;
	for (size_t i = 0; i < nhosts; i++)
		sum += 1.0 / (double)(i + 1);
	double acc = 0;
	for (size_t i = 0; i < nhosts; i++) {
		acc += 1.0 / (double)(i + 1) / sum;
		cdf[i] = acc;
	}
	cdf[nhosts - 1] = 1.0;
	setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
	st = mix(seed);
	for (unsigned long long i = 0; i < n; i++) {
		uint64_t id;
		double r = unit(&st);
		if (distinct == 0 || r < 0.5) {
			id = distinct++;
		} else if (r < 0.75) {
			/* popular: Zipf-like skew to the earliest URLs */
			id = (uint64_t)((double)distinct * pow(unit(&st), 4.0));
		} else {
			/* local: recent URLs, skewed towards the newest */
			uint64_t back = (uint64_t)(2000.0 * pow(unit(&st), 2.0));
			id = back < distinct ? distinct - 1 - back : 0;
		}
		int l = url_of(id, seed, u, sizeof u);
		fwrite(u, 1, (size_t)l, stdout);
		putchar('\n');
	}
	free(cdf);
	return fflush(stdout) == 0 ? 0 : 1;
}
