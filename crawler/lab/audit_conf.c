/*
 * audit_conf.c: the audit's two side inputs. crawl.conf's [politeness]
 * section (read here with a small INI reader rather than the crawler's own
 * configuration code: the audit judges a crawl folder, possibly written by
 * an older crawler, and needs seven keys), and stats.json's top-level
 * figures (a scanner that tracks nesting and strings, not a JSON parser:
 * the file is the crawler's own, and only cross-checks the log).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/audit_int.h"
#include "crawler/config/config.h"
#include "frontier/base/ascii.h"

void audit_config_default(struct audit_config *c)
{
	memset(c, 0, sizeof *c);
	c->policy = DELAY_POLICY_FIXED;
	c->host_delay_ms = 2000;
	c->min_delay_ms = 500;
	c->ip_delay_ms = 500;
	c->ip_politeness = 1;
	c->ratio = 0.1;
	c->max_urls_per_visit = 0;
}

static int parse_ms(const char *v, int64_t *out)
{
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < 0)
		return -1;
	*out = x;
	return 0;
}

/* Applies one [politeness] key; unknown keys are ignored (0), a bad value
 * of a known one is -1. */
static int set_key(struct audit_config *c, const char *k, const char *v)
{
	if (strcmp(k, "policy") == 0)
		return delay_policy_from_name(v, &c->policy);
	if (strcmp(k, "host_delay_ms") == 0)
		return parse_ms(v, &c->host_delay_ms);
	if (strcmp(k, "min_delay_ms") == 0)
		return parse_ms(v, &c->min_delay_ms);
	if (strcmp(k, "ip_delay_ms") == 0)
		return parse_ms(v, &c->ip_delay_ms);
	if (strcmp(k, "ip_politeness") == 0)
		return crawl_config_parse_bool(v, &c->ip_politeness);
	if (strcmp(k, "ratio") == 0) {
		char *end;
		double r = strtod(v, &end);
		if (end == v || *end || !(r > 0 && r <= 1))
			return -1;
		c->ratio = r;
		return 0;
	}
	if (strcmp(k, "max_urls_per_visit") == 0) {
		int64_t n;
		if (parse_ms(v, &n) != 0 || n > UINT32_MAX)
			return -1;
		c->max_urls_per_visit = (uint32_t)n;
	}
	return 0;
}

enum audit_error audit_config_load(struct audit_config *c, const char *path, char *err,
                                   size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return AUDIT_ERR_IO;
	}
	struct audit_config tmp = *c;
	char buf[4096];
	int in_pol = 0;
	unsigned lineno = 0;
	enum audit_error rc = AUDIT_OK;
	while (fgets(buf, sizeof buf, f)) {
		lineno++;
		char *s = ascii_trim_cstr(buf);
		if (*s == '#' || *s == ';' || *s == '\0')
			continue;
		if (*s == '[') {
			in_pol = strcmp(s, "[politeness]") == 0;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!in_pol || !eq)
			continue;
		*eq = '\0';
		char *k = ascii_trim_cstr(s), *v = ascii_trim_cstr(eq + 1);
		if (set_key(&tmp, k, v) != 0) {
			snprintf(err, errlen, "%s:%u: politeness.%s: bad value '%s'", path, lineno,
			         k, v);
			rc = AUDIT_ERR_CONF;
			break;
		}
	}
	if (rc == AUDIT_OK && ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		rc = AUDIT_ERR_IO;
	}
	fclose(f);
	if (rc == AUDIT_OK) {
		tmp.from_file = 1;
		*c = tmp;
	}
	return rc;
}

/* The number after "key": at nesting depth 1 of a JSON text, or -1. */
static int top_number(const char *s, const char *key, double *out)
{
	int depth = 0;
	size_t klen = strlen(key);
	for (const char *p = s; *p; p++) {
		if (*p == '{' || *p == '[') {
			depth++;
		} else if (*p == '}' || *p == ']') {
			depth--;
		} else if (*p == '"') {
			const char *q = p + 1;
			while (*q && *q != '"')
				q += q[0] == '\\' && q[1] ? 2 : 1;
			if (!*q)
				return -1;
			int match = depth == 1 && (size_t)(q - p - 1) == klen &&
			            memcmp(p + 1, key, klen) == 0;
			p = q;
			if (!match)
				continue;
			while (ascii_is_space((unsigned char)p[1]))
				p++;
			if (p[1] != ':')
				continue;
			char *end;
			double v = strtod(p + 2, &end);
			if (end == p + 2)
				return -1;
			*out = v;
			return 0;
		}
	}
	return -1;
}

void audit_stats_read(struct audit *a, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char *buf = malloc(1u << 20);
	size_t n = buf ? fread(buf, 1, (1u << 20) - 1, f) : 0;
	fclose(f);
	if (!buf)
		return;
	buf[n] = '\0';
	double pages, requests, robots = 0, elapsed = 0;
	if (top_number(buf, "pages", &pages) == 0 && top_number(buf, "requests", &requests) == 0) {
		top_number(buf, "robots_fetches", &robots);
		top_number(buf, "elapsed_s", &elapsed);
		a->sum.have_stats = 1;
		a->sum.stats_pages = (uint64_t)pages;
		a->sum.stats_requests = (uint64_t)requests;
		a->sum.stats_robots = (uint64_t)robots;
		a->sum.stats_elapsed_s = elapsed;
	}
	free(buf);
}
