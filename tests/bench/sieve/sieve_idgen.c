/*
 * sieve_idgen.c: the billion-URL sieve benchmark's corpus and its check,
 * faster than the sieve so that a pipe from it measures the sieve.
 *
 * usage: sieve_idgen N [--seed S] [--expect FILE]   N lines on stdout
 *        sieve_idgen --check FILE                    checks stdin
 *
 * Distinct URL number id is a pure function of (id, seed), with id, in base
 * 36, as its first path segment: https://www.news-tech3f2a.com/4kq0z/...
 * Ids are numbered in order of first appearance: line i is a new URL (the
 * next id) with probability 1/2, else a repeat: a far one (probability 1/4,
 * an id drawn over all earlier ones with density skewed to the earliest,
 * id = D u^4 for D ids so far) or a near one (1/4, one of the last 2000,
 * skewed to the newest). So a sieve's exact output is the URLs of ids 0,
 * 1, 2, ... in that order, each once: --expect writes their count and the
 * XXH3-64 of their bytes (newlines included), and --check reads a sieve's
 * output, checks that line k holds id k, and compares count and hash,
 * without a second copy of the output. Hosts: max(1000, N/100), Zipf
 * popularity (s = 1) from a quantile table. Lines of 50-110 bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#define OUT_CAP ((size_t)1 << 20)
#define URL_MAX 256
#define QUANTILES 4096  /* a table that stays in the L1 cache */
#define HOSTS_KEPT 4096 /* the most popular hosts' URL prefixes, made once (~half the URLs) */
#define HOST_SLOT 64

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A uniform double in [0, 1) from the state s (advanced). */
static double unit(uint64_t *s)
{
	*s = mix(*s);
	return (double)(*s >> 11) * (1.0 / 9007199254740992.0);
}

static const char *const words[32] = {
	"news",   "article", "products", "category", "blog",  "2023",    "2024",   "sports",
	"world",  "tech",    "archive",  "tag",      "users", "profile", "search", "item",
	"detail", "page",    "docs",     "wiki",     "en",    "it",      "de",     "static",
	"media",  "forum",   "thread",   "help",     "shop",  "events",  "video",  "store",
};
static const char *const tlds[8] = { "com", "org", "net", "it", "de", "co.uk", "io", "edu" };
static const char *const exts[8] = { ".html", ".php", "", "/", ".htm", ".aspx", ".html", "" };
/* the strings above in 16-byte slots: a constant-size copy each (the
 * output buffers have room for its overhang) */
static char wpad[32][16], tpad[8][16], epad[8][16];
static size_t wlen[32], tlen[8], elen[8];

/* The generator's parameters. */
struct gen {
	uint64_t seed, hosts;
	uint32_t q[QUANTILES + 1]; /* host index at each quantile of the Zipf law */
	char (*kept)[HOST_SLOT]; /* host h < HOSTS_KEPT: its prefix, its length in the last byte */
};

static void gen_init(struct gen *g, uint64_t n, uint64_t seed)
{
	g->seed = seed;
	g->hosts = n / 100 > 1000 ? n / 100 : 1000;
	/* Zipf (s = 1): P(index < k) ~ ln(k + 1) / ln(H + 1) */
	for (size_t j = 0; j <= QUANTILES; j++) {
		double k = exp((double)j / QUANTILES * log((double)g->hosts + 1)) - 1;
		g->q[j] = (uint32_t)(k < (double)g->hosts ? k : (double)(g->hosts - 1));
	}
	for (size_t i = 0; i < 32; i++) {
		wlen[i] = strlen(words[i]);
		memcpy(wpad[i], words[i], wlen[i]);
	}
	for (size_t i = 0; i < 8; i++) {
		tlen[i] = strlen(tlds[i]);
		elen[i] = strlen(exts[i]);
		memcpy(tpad[i], tlds[i], tlen[i]);
		memcpy(epad[i], exts[i], elen[i]);
	}
}

static inline char *put(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

static inline char *put16(char *p, const char *slot, size_t n)
{
	memcpy(p, slot, 16);
	return p + n;
}

static inline char *put_word(char *p, uint64_t bits)
{
	return put16(p, wpad[bits & 31], wlen[bits & 31]);
}

/* Writes v in base 36 (lowercase) at p; the end. */
static inline char *put36(char *p, uint64_t v)
{
	char d[16];
	int k = 0;

	do {
		d[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
		v /= 36;
	} while (v > 0);
	while (k > 0)
		*p++ = d[--k];
	return p;
}

static inline char *put_hex(char *p, uint64_t v)
{
	char d[16];
	int k = 0;

	do {
		d[k++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v > 0);
	while (k > 0)
		*p++ = d[--k];
	return p;
}

/* Host h's URL prefix ("https://www.news-tech3f2a.com/") at p; the end. */
static char *put_host(const struct gen *g, char *p, uint64_t h)
{
	uint64_t hs = mix(h ^ (g->seed * 31));

	if (h < HOSTS_KEPT && g->kept != NULL) {
		memcpy(p, g->kept[h], HOST_SLOT);
		return p + (unsigned char)g->kept[h][HOST_SLOT - 1];
	}
	p = put(p, (hs & 1) ? "https://" : "http://", (hs & 1) ? 8 : 7);
	if (hs & 2)
		p = put(p, "www.", 4);
	p = put_word(p, hs >> 8);
	*p++ = '-';
	p = put_word(p, hs >> 16);
	p = put_hex(p, h);
	*p++ = '.';
	p = put16(p, tpad[(hs >> 24) & 7], tlen[(hs >> 24) & 7]);
	*p++ = '/';
	return p;
}

/* URL number id, with its newline, at out; its length. */
static size_t url_of(const struct gen *g, uint64_t id, char *out)
{
	uint64_t s = mix(id ^ g->seed), t = mix(s);
	size_t j = (size_t)(s >> 52);
	uint64_t lo = g->q[j], hi = g->q[j + 1];
	uint64_t h = lo + ((((s >> 16) & 0xffffffffu) * (hi - lo)) >> 32);
	char *p = put_host(g, out, h);

	p = put36(p, id);
	*p++ = '/';
	for (unsigned d = 0, depth = 1 + (unsigned)(t & 1); d < depth; d++) {
		p = put_word(p, t >> (8 + 5 * d));
		*p++ = '/';
	}
	p = put_word(p, t >> 20);
	*p++ = '-';
	p = put_word(p, t >> 25);
	p = put16(p, epad[(t >> 30) & 7], elen[(t >> 30) & 7]);
	if ((t >> 33) % 5 < 3) {
		p = put(p, "?ref=", 5);
		p = put_word(p, t >> 36);
		p = put(p, "&n=", 3);
		p = put36(p, (t >> 41) % 100000);
	}
	*p++ = '\n';
	return (size_t)(p - out);
}

/* The popular hosts' prefixes (put_host makes them the same way). */
static void gen_keep_hosts(struct gen *g)
{
	g->kept = NULL;
	char(*kept)[HOST_SLOT] = calloc(HOSTS_KEPT, HOST_SLOT);
	if (kept == NULL)
		return; /* (each made when used) */
	for (uint64_t h = 0; h < HOSTS_KEPT; h++) {
		char tmp[2 * HOST_SLOT];
		size_t n = (size_t)(put_host(g, tmp, h) - tmp);
		memcpy(kept[h], tmp, n);
		kept[h][HOST_SLOT - 1] = (char)n;
	}
	g->kept = kept;
}

/* Enlarges a pipe's buffer (fewer system calls a byte); not a pipe: no-op. */
static void pipe_grow(int fd)
{
#ifdef F_SETPIPE_SZ
	(void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#else
	(void)fd;
#endif
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int generate(uint64_t n, uint64_t seed, const char *expect)
{
	static struct gen g;
	static char out[OUT_CAP + URL_MAX], exp_buf[OUT_CAP + URL_MAX];
	size_t olen = 0, elen_ = 0;
	uint64_t st = mix(seed), distinct = 0, exp_bytes = 0;
	XXH3_state_t *xs = XXH3_createState();
	FILE *f;

	if (xs == NULL)
		return 1;
	XXH3_64bits_reset(xs);
	gen_init(&g, n, seed);
	gen_keep_hosts(&g);
	pipe_grow(STDOUT_FILENO);
	for (uint64_t i = 0; i < n; i++) {
		double r = unit(&st);
		bool fresh = distinct == 0 || r < 0.5;
		uint64_t id;
		size_t l;
		if (fresh) {
			id = distinct++;
		} else if (r < 0.75) {
			double u = unit(&st);
			id = (uint64_t)((double)distinct * (u * u * u * u));
		} else {
			double u = unit(&st);
			uint64_t back = (uint64_t)(2000.0 * u * u);
			id = back < distinct ? distinct - 1 - back : 0;
		}
		l = url_of(&g, id, out + olen);
		if (fresh) {
			memcpy(exp_buf + elen_, out + olen, l);
			elen_ += l;
			if (elen_ >= OUT_CAP) {
				XXH3_64bits_update(xs, exp_buf, elen_);
				exp_bytes += elen_;
				elen_ = 0;
			}
		}
		olen += l;
		if (olen >= OUT_CAP) {
			if (write_all(STDOUT_FILENO, out, olen) != 0) {
				perror("sieve_idgen: write");
				return 1;
			}
			olen = 0;
		}
	}
	if (write_all(STDOUT_FILENO, out, olen) != 0) {
		perror("sieve_idgen: write");
		return 1;
	}
	XXH3_64bits_update(xs, exp_buf, elen_);
	exp_bytes += elen_;
	if (expect != NULL) {
		f = fopen(expect, "w");
		if (f == NULL ||
		    fprintf(f, "%llu %llu %016llx\n", (unsigned long long)distinct,
		            (unsigned long long)exp_bytes,
		            (unsigned long long)XXH3_64bits_digest(xs)) < 0 ||
		    fclose(f) != 0) {
			perror(expect);
			return 1;
		}
	}
	XXH3_freeState(xs);
	return 0;
}

/* The id of line p (up to the newline at end): the base-36 first path
 * segment; UINT64_MAX when the line has none. */
static uint64_t line_id(const char *p, const char *end)
{
	const char *s = memchr(p, ':', (size_t)(end - p));
	uint64_t v = 0;
	int digits = 0;

	if (s == NULL || end - s < 3)
		return UINT64_MAX;
	s = memchr(s + 3, '/', (size_t)(end - s - 3));
	if (s == NULL)
		return UINT64_MAX;
	for (s++; s < end && *s != '/'; s++, digits++) {
		int c = *s;
		if (c >= '0' && c <= '9')
			v = v * 36 + (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'z')
			v = v * 36 + (uint64_t)(c - 'a' + 10);
		else
			return UINT64_MAX;
	}
	return digits > 0 && digits <= 12 ? v : UINT64_MAX;
}

static int check(const char *expect)
{
	static char buf[(size_t)4 << 20];
	unsigned long long want_n, want_bytes, want_h;
	uint64_t lines = 0, bytes = 0, bad = 0;
	size_t len = 0;
	XXH3_state_t *xs = XXH3_createState();
	FILE *f;
	int eof = 0;

	if (xs == NULL)
		return 2;
	XXH3_64bits_reset(xs);
	pipe_grow(STDIN_FILENO);
	while (!eof) {
		ssize_t g = read(STDIN_FILENO, buf + len, sizeof buf - len);
		size_t start = 0;
		if (g < 0 && errno == EINTR)
			continue;
		if (g < 0) {
			perror("sieve_idgen: read");
			return 2;
		}
		if (g == 0)
			eof = 1;
		XXH3_64bits_update(xs, buf + len, (size_t)g);
		bytes += (uint64_t)g;
		len += (size_t)g;
		for (;;) {
			char *nl = memchr(buf + start, '\n', len - start);
			uint64_t id;
			if (nl == NULL)
				break;
			id = line_id(buf + start, nl);
			if (id != lines && bad++ < 5)
				fprintf(stderr, "check: line %llu holds id %lld, want %llu\n",
				        (unsigned long long)lines + 1,
				        id == UINT64_MAX ? -1 : (long long)id,
				        (unsigned long long)lines);
			lines++;
			start = (size_t)(nl - buf) + 1;
		}
		if (eof && start < len) {
			fprintf(stderr, "check: last line without its newline\n");
			bad++;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		if (len == sizeof buf) {
			fprintf(stderr, "check: line longer than %zu bytes\n", sizeof buf);
			return 1;
		}
	}
	uint64_t h = XXH3_64bits_digest(xs);
	XXH3_freeState(xs);
	/* (read last: the generator writes it at its end) */
	f = fopen(expect, "r");
	if (f == NULL || fscanf(f, "%llu %llu %llx", &want_n, &want_bytes, &want_h) != 3) {
		fprintf(stderr, "sieve_idgen: cannot read %s\n", expect);
		return 2;
	}
	fclose(f);
	printf("check: %llu lines (want %llu), %llu bytes (want %llu), ids %s, hash %s: %s\n",
	       (unsigned long long)lines, want_n, (unsigned long long)bytes, want_bytes,
	       bad == 0 ? "0, 1, 2, ... in order" : "out of order",
	       h == want_h ? "equal" : "differs",
	       bad == 0 && lines == want_n && bytes == want_bytes && h == want_h ? "PASS" : "FAIL");
	return bad == 0 && lines == want_n && bytes == want_bytes && h == want_h ? 0 : 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: sieve_idgen N [--seed S] [--expect FILE]\n"
	                "       sieve_idgen --check FILE < output\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *expect = NULL;
	unsigned long long n = 0, seed = 1;
	char *end;

	if (argc == 3 && strcmp(argv[1], "--check") == 0)
		return check(argv[2]);
	if (argc < 2)
		return usage();
	n = strtoull(argv[1], &end, 10);
	if (*end != '\0' || n == 0)
		return usage();
	for (int i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--seed") == 0) {
			seed = strtoull(argv[i + 1], &end, 10);
			if (*end != '\0')
				return usage();
		} else if (strcmp(argv[i], "--expect") == 0) {
			expect = argv[i + 1];
		} else {
			return usage();
		}
	}
	if (argc % 2 != 0)
		return usage();
	return generate(n, seed, expect);
}
