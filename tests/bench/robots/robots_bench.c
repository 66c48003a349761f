/*
 * robots_bench: nanoseconds per robots_allowed() check, per robots.txt and
 * per path, best of N rounds, and each file's worst path as a ratio to the
 * worst path of a plain small robots.txt timed in the same run.
 *
 * Files (all generated, deterministic):
 *   small      ten ordinary rules (directories, a "*.pdf$", an Allow)
 *   wild       wildcard rules "Disallow: /{*}PIECE{*}PIECE" ({*}: a star) up to the 500 KiB
 *              parse limit (about 23,000): every rule's literal prefix is
 *              "/", so every path meets all of them
 *   wild-cap   the same with --cap rules: the most one path may meet
 *   plain      plain rules "Disallow: /aaaa.../N" up to the parse limit,
 *              all sharing their first bytes with the long path
 * Paths: "/", a short page, a 2,000-byte path no rule matches.
 *
 * usage: robots_bench [--rounds N] [--cap N] [--path-len N]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "politeness/robots.h"

#define UA "benchbot/1.0"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state = 42;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((rng_state >> 33) % n);
}

struct text {
	char *p;
	size_t len, cap;
};

static void add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 1 > t->cap) {
		t->cap = (t->len + n + 1) * 2;
		t->p = realloc(t->p, t->cap);
		if (!t->p) {
			perror("robots_bench");
			exit(1);
		}
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static void piece(char *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = (char)('a' + rnd(26));
	out[n] = '\0';
}

/* Wildcard rules up to max_rules or the parse limit, whichever first. */
static void gen_wild(struct text *t, size_t max_rules)
{
	add(t, "User-agent: *\n", 14);
	for (size_t i = 0; i < max_rules; i++) {
		char a[16], b[8], line[64];
		piece(a, 9);
		piece(b, 4);
		int n = snprintf(line, sizeof line, "Disallow: /*%s*%s\n", a, b);
		if (t->len + (size_t)n > ROBOTS_PARSE_LIMIT)
			break;
		add(t, line, (size_t)n);
	}
}

static void gen_plain(struct text *t, size_t max_rules)
{
	add(t, "User-agent: *\n", 14);
	for (size_t i = 0; i < max_rules; i++) {
		char line[64];
		int n = snprintf(line, sizeof line, "Disallow: /aaaaaaaa/%zu\n", i);
		if (t->len + (size_t)n > ROBOTS_PARSE_LIMIT)
			break;
		add(t, line, (size_t)n);
	}
}

static const char small_file[] = "User-agent: *\n"
                                 "Disallow: /private/\n"
                                 "Disallow: /tmp/\n"
                                 "Disallow: /cgi-bin/\n"
                                 "Disallow: /*.pdf$\n"
                                 "Disallow: /*?sessionid=\n"
                                 "Allow: /private/public/\n"
                                 "Disallow: /search\n"
                                 "Disallow: /cart/\n"
                                 "Disallow: /account/\n"
                                 "Allow: /account/help\n";

/* Best of rounds, ns per check of path on r. */
static double time_checks(const struct robots *r, const char *path, int rounds, unsigned *verdicts)
{
	size_t len = strlen(path);
	/* enough checks for about 20 ms on the slowest files */
	unsigned n = 1;
	for (;;) {
		uint64_t t0 = now_ns();
		for (unsigned i = 0; i < n; i++)
			*verdicts += robots_allowed(r, path, len);
		if (now_ns() - t0 > 20000000u || n >= (1u << 24))
			break;
		n *= 2;
	}
	double best = 1e30;
	for (int k = 0; k < rounds; k++) {
		uint64_t t0 = now_ns();
		for (unsigned i = 0; i < n; i++)
			*verdicts += robots_allowed(r, path, len);
		double per = (double)(now_ns() - t0) / n;
		if (per < best)
			best = per;
	}
	return best;
}

int main(int argc, char **argv)
{
	int rounds = 5;
#ifdef ROBOTS_WILDCARD_CAP_DEFAULT
	size_t cap = ROBOTS_WILDCARD_CAP_DEFAULT;
#else
	size_t cap = 500; /* a tree without the cap */
#endif
	size_t path_len = 2000;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (strcmp(argv[i], "--cap") == 0 && i + 1 < argc)
			cap = (size_t)strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--path-len") == 0 && i + 1 < argc)
			path_len = (size_t)strtoull(argv[++i], NULL, 10);
		else {
			fprintf(stderr,
			        "usage: robots_bench [--rounds N] [--cap N] [--path-len N]\n");
			return 2;
		}
	}
	if (rounds < 1 || path_len < 2)
		return 2;
	char *long_path = malloc(path_len + 1);
	long_path[0] = '/';
	/* "aaaaaaaa/" first: the plain rules share it; then letters and '/' */
	for (size_t i = 1; i < path_len; i++)
		long_path[i] = i <= 8        ? 'a'
		               : i == 9      ? '/'
		               : rnd(8) == 0 ? '/'
		                             : (char)('a' + rnd(26));
	long_path[path_len] = '\0';
	const char *paths[] = { "/", "/shop/item-1234.html?color=red", long_path };
	enum { NPATHS = 3 };

	struct text files[4] = { { 0 } };
	add(&files[0], small_file, sizeof small_file - 1);
	gen_wild(&files[1], SIZE_MAX);
	gen_wild(&files[2], cap);
	gen_plain(&files[3], SIZE_MAX);
	const char *names[] = { "small", "wild", "wild-cap", "plain" };

	unsigned verdicts = 0;
	double worst_small = 0;
	printf("%-9s %7s %8s  %10s %10s %10s  %10s %8s\n", "file", "KiB", "rules", "root ns",
	       "short ns", "long ns", "worst ns", "x small");
	for (int f = 0; f < 4; f++) {
		struct robots *r = NULL;
		if (robots_parse(files[f].p, files[f].len, UA, &r) != ROBOTS_OK) {
			fprintf(stderr, "robots_bench: cannot parse %s\n", names[f]);
			return 1;
		}
		double ns[NPATHS], worst = 0;
		for (int p = 0; p < NPATHS; p++) {
			ns[p] = time_checks(r, paths[p], rounds, &verdicts);
			if (ns[p] > worst)
				worst = ns[p];
		}
		if (f == 0)
			worst_small = worst;
		printf("%-9s %7.1f %8zu  %10.1f %10.1f %10.1f  %10.1f %8.1f\n", names[f],
		       (double)files[f].len / 1024.0, robots_rule_count(r), ns[0], ns[1], ns[2],
		       worst, worst / worst_small);
		robots_destroy(r);
		free(files[f].p);
	}
	printf("verdicts %u\n", verdicts);
	free(long_path);
	return 0;
}
