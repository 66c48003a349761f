/* judge.c: a crawl judged from the test web's request log (see judge.h). */
#include "tests/testweb/judge.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define JUDGE_LINE_MAX 65536
#define JUDGE_FIELDS 8

struct judge_host {
	int64_t last_us; /* 0: no request yet */
	uint32_t robots; /* robots.txt requests */
};

struct judge {
	const struct tw_config *cfg;
	const struct tw_judge_options *o;
	struct tw_judge_result *r;
	char tok[TW_NAME_MAX + 1];
	struct judge_host *hosts;
	long nhosts;
	uint8_t *variants; /* 2 bits per page: the variants answered 200 */
	uint64_t npages;
};

/* Splits line into n tab-separated fields (cut in place); the count found. */
static int split(char *line, char **f, int n)
{
	int k = 0;
	for (char *p = line; k < n;) {
		f[k++] = p;
		p = strchr(p, '\t');
		if (p == NULL)
			break;
		*p++ = '\0';
	}
	return k;
}

static void judge_variant(struct judge *j, long host, const char *path, int status)
{
	long page = 0;
	int q = tw_variant_of(j->cfg, path, strlen(path), &page);
	if (q == 0 || status != 200 || j->variants == NULL)
		return;
	uint64_t i = (uint64_t)host * (uint64_t)j->cfg->pages + (uint64_t)page;
	uint8_t bit = (uint8_t)(1u << (q - 1) << (i % 4 * 2));
	uint8_t *b = &j->variants[i / 4];
	uint8_t pair = (uint8_t)(3u << (i % 4 * 2));
	if ((*b & bit) == 0 && ((*b | bit) & pair) == pair)
		j->r->near_dup_pairs++;
	*b |= bit;
}

static void judge_line(struct judge *j, char *line)
{
	char *f[JUDGE_FIELDS];
	long host;
	line[strcspn(line, "\n")] = '\0';
	if (split(line, f, JUDGE_FIELDS) < JUDGE_FIELDS || f[0][0] < '0' || f[0][0] > '9')
		return;
	struct tw_judge_result *r = j->r;
	int64_t t = strtoll(f[0], NULL, 10);
	const char *path = f[5];
	int status = atoi(f[6]);
	r->requests++;
	if (r->first_us == 0 || t < r->first_us)
		r->first_us = t;
	if (t > r->last_us)
		r->last_us = t;
	if (t >= j->o->after_us && (r->first_after_us < 0 || t < r->first_after_us))
		r->first_after_us = t;
	if (tw_host_parse(j->cfg, f[2], strlen(f[2]), &host) != 0 || host >= j->nhosts) {
		r->outside++;
		return;
	}
	struct judge_host *h = &j->hosts[host];
	if (h->last_us == 0 && h->robots == 0)
		r->hosts++;
	int64_t delay = (int64_t)j->o->host_delay_ms * 1000;
	if (delay > 0 && h->last_us != 0 && t - h->last_us + (int64_t)j->o->slack_us < delay)
		r->politeness_violations++;
	h->last_us = t;
	if (strcmp(path, "/robots.txt") == 0) {
		r->robots_requests++;
		if (h->robots > 0)
			r->robots_repeats++;
		if (h->robots == 1)
			r->hosts_robots_repeated++;
		h->robots++;
		return;
	}
	if (strncmp(path, "/rr/", 4) == 0) /* a hop of another host's robots.txt */
		return;
	if (h->robots == 0 || !tw_robots_allowed(j->cfg, host, j->tok, path))
		r->robots_violations++;
	judge_variant(j, host, path, status);
}

int tw_judge_log(const struct tw_config *cfg, const struct tw_judge_options *o, FILE *log,
                 struct tw_judge_result *r)
{
	struct judge j = { .cfg = cfg, .o = o, .r = r };
	char *line = malloc(JUDGE_LINE_MAX);
	int rc = -1;
	size_t tl = strcspn(o->agent, "/ ");
	memset(r, 0, sizeof *r);
	r->first_after_us = -1;
	if (tl > TW_NAME_MAX)
		tl = TW_NAME_MAX;
	memcpy(j.tok, o->agent, tl);
	j.tok[tl] = '\0';
	j.nhosts = cfg->hosts + (cfg->requisites ? TW_REQ_CDN_HOSTS : 0);
	j.npages = (uint64_t)cfg->hosts * (uint64_t)cfg->pages;
	j.hosts = calloc((size_t)j.nhosts, sizeof *j.hosts);
	j.variants = calloc((size_t)(j.npages / 4 + 1), 1);
	if (line == NULL || j.hosts == NULL || j.variants == NULL) {
		fprintf(stderr, "testweb: --judge: out of memory\n");
		goto out;
	}
	while (fgets(line, JUDGE_LINE_MAX, log) != NULL)
		judge_line(&j, line);
	rc = ferror(log) ? -1 : 0;
	if (rc != 0)
		fprintf(stderr, "testweb: --judge: read error\n");
out:
	free(line);
	free(j.hosts);
	free(j.variants);
	return rc;
}

void tw_judge_write(const struct tw_judge_result *r, FILE *out)
{
	fprintf(out,
	        "requests %" PRIu64 "\noutside %" PRIu64 "\nhosts %" PRIu64
	        "\nrobots_requests %" PRIu64 "\nrobots_repeats %" PRIu64
	        "\nhosts_robots_repeated %" PRIu64 "\nrobots_violations %" PRIu64
	        "\npoliteness_violations %" PRIu64 "\nnear_dup_pairs %" PRIu64 "\nfirst_us %" PRId64
	        "\nlast_us %" PRId64 "\nfirst_after_us %" PRId64 "\n",
	        r->requests, r->outside, r->hosts, r->robots_requests, r->robots_repeats,
	        r->hosts_robots_repeated, r->robots_violations, r->politeness_violations,
	        r->near_dup_pairs, r->first_us, r->last_us, r->first_after_us);
}
