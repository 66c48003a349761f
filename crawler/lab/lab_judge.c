/*
 * lab_judge.c: one lab run judged from the test web's request log alone
 * (the rules are in lab.h). The log is read whole: a run's log is small
 * (one line per request), its lines are in completion order, not arrival
 * order, so requests are sorted by host and arrival before judging.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/lab.h"
#include "frontier/base/array.h"

/* One request of a host of the web, as the server logged it. */
struct req {
	int64_t start, end; /* us since the epoch */
	char *host;         /* owned */
	uint64_t in_flight, rate_1s;
	int robots;
};

struct judge {
	struct req *v;
	size_t n, cap;
	char **expected; /* sorted URLs */
	size_t nexp, capexp;
	int64_t *first_us; /* per expected URL, INT64_MAX until requested */
};

static void judge_free(struct judge *j)
{
	for (size_t i = 0; i < j->n; i++)
		free(j->v[i].host);
	free(j->v);
	ARRAY_FREE_EACH(j->expected, j->nexp);
	free(j->first_us);
}

void lab_result_clear(struct lab_result *r)
{
	free(r->cover_s);
	r->cover_s = NULL;
	r->ncover = 0;
}

static int cmp_req(const void *a, const void *b)
{
	const struct req *x = a, *y = b;
	int c = strcmp(x->host, y->host);
	if (c != 0)
		return c;
	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Reads the URLs (first column) of testweb --expected, sorted. */
static enum lab_error read_expected(struct judge *j, const char *path)
{
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return LAB_ERR_IO;
	enum lab_error rc = LAB_OK;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while ((len = getline(&line, &lcap, f)) > 0) {
		size_t n = strcspn(line, "\t\n");
		if (n == 0)
			continue;
		if (array_push_strndup(&j->expected, &j->nexp, &j->capexp, line, n, 64) != 0) {
			rc = LAB_ERR_NOMEM;
			break;
		}
	}
	if (rc == LAB_OK && ferror(f))
		rc = LAB_ERR_IO;
	free(line);
	fclose(f);
	if (rc == LAB_OK && j->nexp > 0)
		qsort(j->expected, j->nexp, sizeof *j->expected, array_strcmp);
	return rc;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*out = x;
	return 0;
}

/* Marks the expected URL http://HOST:PORT+PATH as requested at t. */
static void cover(struct judge *j, const char *host, long port, const char *path, int64_t t)
{
	char url[8192];
	if (j->nexp == 0)
		return;
	int n = snprintf(url, sizeof url, "http://%s:%ld%s", host, port, path);
	if (n < 0 || (size_t)n >= sizeof url)
		return;
	const char *key = url;
	char **hit = bsearch(&key, j->expected, j->nexp, sizeof *j->expected, array_strcmp);
	if (hit != NULL) {
		size_t i = (size_t)(hit - j->expected);
		if (t < j->first_us[i])
			j->first_us[i] = t;
	}
}

/* One log line (no newline): a request of a host of the web is kept.
 * 1 kept or skipped, 0 a line without model columns, -1 no memory. */
static int take_line(struct judge *j, char *line, long port)
{
	char *f[12];
	size_t nf = 0;
	for (char *s = line; nf < 12;) {
		f[nf++] = s;
		char *t = strchr(s, '\t');
		if (t == NULL)
			break;
		*t = '\0';
		s = t + 1;
	}
	uint64_t start, service, inf, rate;
	if (nf < 8 || parse_u64(f[0], &start) != 0)
		return 1; /* not a request line */
	if (nf < 11)
		return 0;
	if (strcmp(f[2], "-") == 0 || parse_u64(f[8], &inf) != 0 || parse_u64(f[9], &rate) != 0 ||
	    parse_u64(f[10], &service) != 0)
		return 1; /* not a host of the web */
	struct req *nv = array_grow(j->v, &j->cap, j->n, sizeof *nv, 256);
	if (nv == NULL)
		return -1;
	j->v = nv;
	struct req *r = &j->v[j->n];
	if ((r->host = strdup(f[2])) == NULL)
		return -1;
	r->start = (int64_t)start;
	r->end = (int64_t)(start + service);
	r->in_flight = inf;
	r->rate_1s = rate;
	r->robots = strcmp(f[5], "/robots.txt") == 0;
	j->n++;
	cover(j, f[2], port, f[5], r->start);
	return 1;
}

static enum lab_error read_log(struct judge *j, const char *path, long port, char *err,
                               size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return LAB_ERR_IO;
	}
	enum lab_error rc = LAB_OK;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	while (rc == LAB_OK && (len = getline(&line, &lcap, f)) > 0) {
		if (line[len - 1] == '\n')
			line[len - 1] = '\0';
		int k = take_line(j, line, port);
		if (k < 0)
			rc = LAB_ERR_NOMEM;
		else if (k == 0) {
			snprintf(err, errlen,
			         "%s: a line without in_flight/rate_1s/service_us "
			         "(test web run without models?)",
			         path);
			rc = LAB_ERR_LOG;
		}
	}
	if (rc == LAB_OK && ferror(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = LAB_ERR_IO;
	}
	free(line);
	fclose(f);
	return rc;
}

/* Intervals, gaps, loads and counts over the requests sorted by host and
 * start (the rules are in lab.h). */
static void judge_hosts(const struct judge *j, struct lab_result *r, int64_t tol_ms)
{
	int64_t need = (r->delay_ms - tol_ms) * 1000;
	double rate_sum = 0;
	int64_t max_end = 0; /* latest end of the host's requests so far */
	r->min_gap_us = r->min_interval_us = INT64_MAX;
	for (size_t i = 0; i < j->n; i++) {
		const struct req *q = &j->v[i];
		int first = i == 0 || strcmp(q->host, j->v[i - 1].host) != 0;
		r->requests++;
		r->robots += q->robots != 0;
		r->pages += q->robots == 0;
		rate_sum += (double)q->rate_1s;
		if (q->in_flight + 1 > r->peak_in_flight)
			r->peak_in_flight = q->in_flight + 1;
		if (q->rate_1s > r->peak_rate_1s)
			r->peak_rate_1s = q->rate_1s;
		if (first) {
			r->hosts++;
			max_end = q->end;
			continue;
		}
		int64_t gap = q->start - max_end, interval = q->start - j->v[i - 1].start;
		if (gap < r->min_gap_us)
			r->min_gap_us = gap;
		if (interval < r->min_interval_us)
			r->min_interval_us = interval;
		if (gap < 0)
			r->overlaps++;
		if (gap < 0 || interval < need)
			r->violations++;
		if (q->end > max_end)
			max_end = q->end;
	}
	r->mean_rate = r->requests ? rate_sum / (double)r->requests : 0;
}

/* Duration, pages/s, coverage and time to 90%. */
static enum lab_error judge_time(const struct judge *j, struct lab_result *r)
{
	int64_t t0 = INT64_MAX, t1 = INT64_MIN;
	for (size_t i = 0; i < j->n; i++) {
		t0 = j->v[i].start < t0 ? j->v[i].start : t0;
		t1 = j->v[i].end > t1 ? j->v[i].end : t1;
	}
	r->expected = j->nexp;
	r->t90_s = -1;
	if (j->n == 0)
		return LAB_OK;
	r->duration_s = (double)(t1 - t0) / 1e6;
	r->pages_per_s = r->duration_s > 0 ? (double)r->pages / r->duration_s : 0;
	int64_t *t = malloc((j->nexp ? j->nexp : 1) * sizeof *t);
	double *cs = malloc((j->nexp ? j->nexp : 1) * sizeof *cs);
	if (t == NULL || cs == NULL) {
		free(t);
		free(cs);
		return LAB_ERR_NOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; i < j->nexp; i++)
		if (j->first_us[i] != INT64_MAX)
			t[n++] = j->first_us[i];
	qsort(t, n, sizeof *t, cmp_i64);
	for (size_t i = 0; i < n; i++)
		cs[i] = (double)(t[i] - t0) / 1e6;
	r->covered = n;
	r->coverage = j->nexp ? (double)n / (double)j->nexp : 0;
	size_t target = (j->nexp * 9 + 9) / 10; /* ceil(0.9 * expected) */
	if (target > 0 && n >= target)
		r->t90_s = cs[target - 1];
	r->cover_s = cs;
	r->ncover = n;
	free(t);
	return LAB_OK;
}

enum lab_error lab_judge(const struct lab_judge_in *in, struct lab_result *r, char *err,
                         size_t errlen)
{
	struct judge j = { 0 };
	int status = r->crawl_status;
	memset(r, 0, sizeof *r);
	r->crawl_status = status;
	r->delay_ms = in->delay_ms;
	r->t90_s = -1;
	r->min_gap_us = r->min_interval_us = INT64_MAX;
	enum lab_error rc = read_expected(&j, in->expected_path);
	if (rc != LAB_OK) {
		snprintf(err, errlen, "%s: %s", in->expected_path,
		         rc == LAB_ERR_IO ? strerror(errno) : lab_strerror(rc));
		goto out;
	}
	j.first_us = malloc((j.nexp ? j.nexp : 1) * sizeof *j.first_us);
	if (j.first_us == NULL) {
		rc = LAB_ERR_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < j.nexp; i++)
		j.first_us[i] = INT64_MAX;
	rc = read_log(&j, in->log_path, in->http_port, err, errlen);
	if (rc != LAB_OK)
		goto out;
	if (j.n > 0) /* qsort wants a non-NULL array even when empty */
		qsort(j.v, j.n, sizeof *j.v, cmp_req);
	judge_hosts(&j, r, in->tolerance_ms);
	rc = judge_time(&j, r);
out:
	if (rc == LAB_ERR_NOMEM)
		snprintf(err, errlen, "%s", lab_strerror(rc));
	judge_free(&j);
	return rc;
}
