/*
 * config.c: a table of keys (section, name, type, offset, range) drives both
 * the INI reader and the command-line overrides, so each key is validated
 * in exactly one place.
 */
#include "crawler/config.h"

#include <errno.h>
#include <ini.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "sieve/sieve.h"

#define DEFAULT_UA "crawler/0.1 (+mailto:CONTACT-ME@example.invalid)"

enum key_type { T_U64, T_U32, T_BOOL, T_STR, T_DOUBLE, T_POLICY, T_DOMAINS, T_SIZE, T_SIEVE_IMPL };

struct key_def {
	const char *section;
	const char *name;
	enum key_type type;
	size_t offset;
	double min, max;
};

#define OFF(f) offsetof(struct crawl_config, f)
static const struct key_def keys[] = {
	{"crawl", "max_pages", T_U64, OFF(max_pages), 0, 1e15},
	{"crawl", "max_time_ms", T_U64, OFF(max_time_ms), 0, 1e12},
	{"crawl", "max_depth", T_U32, OFF(max_depth), 0, 1e6},
	{"crawl", "user_agent", T_STR, OFF(user_agent), 1, 512},
	{"crawl", "domains", T_DOMAINS, OFF(domains), 0, 0},
	{"crawl", "any_domain", T_BOOL, OFF(any_domain), 0, 1},
	{"crawl", "quiet", T_BOOL, OFF(quiet), 0, 1},
	{"politeness", "policy", T_POLICY, OFF(policy), 0, 1},
	{"politeness", "host_delay_ms", T_U64, OFF(host_delay_ms), 0, 3.6e6},
	{"politeness", "ip_delay_ms", T_U64, OFF(ip_delay_ms), 0, 3.6e6},
	{"politeness", "ip_politeness", T_BOOL, OFF(ip_politeness), 0, 1},
	{"politeness", "ratio", T_DOUBLE, OFF(ratio), 1e-6, 1},
	{"politeness", "visit_budget_ms", T_U64, OFF(visit_budget_ms), 1, 3.6e6},
	{"politeness", "min_delay_ms", T_U64, OFF(min_delay_ms), 0, 3.6e6},
	{"politeness", "max_delay_ms", T_U64, OFF(max_delay_ms), 0, 8.64e7},
	{"politeness", "max_urls_per_visit", T_U32, OFF(max_urls_per_visit), 0, 1e6},
	{"politeness", "crawl_delay_cap_ms", T_U64, OFF(crawl_delay_cap_ms), 0, 8.64e7},
	{"politeness", "backoff_base_ms", T_U64, OFF(backoff_base_ms), 0, 8.64e7},
	{"politeness", "backoff_max_ms", T_U64, OFF(backoff_max_ms), 0, 8.64e7},
	{"politeness", "max_consecutive_errors", T_U32, OFF(max_consecutive_errors), 0, 1e6},
	{"politeness", "retry_after_cap_ms", T_U64, OFF(retry_after_cap_ms), 0, 8.64e7},
	{"politeness", "obey_robots", T_BOOL, OFF(obey_robots), 0, 1},
	{"fetch", "max_connections", T_U32, OFF(max_connections), 1, 15000},
	{"fetch", "timeout_ms", T_U64, OFF(timeout_ms), 100, 3.6e6},
	{"fetch", "connect_timeout_ms", T_U64, OFF(connect_timeout_ms), 100, 3.6e6},
	{"fetch", "low_speed_bytes", T_U64, OFF(low_speed_bytes), 0, 1e9},
	{"fetch", "low_speed_time_s", T_U64, OFF(low_speed_time_s), 0, 3600},
	{"fetch", "max_body_bytes", T_U64, OFF(max_body_bytes), 1024, 1e10},
	{"fetch", "max_header_bytes", T_U64, OFF(max_header_bytes), 1024, 1e8},
	{"fetch", "allow_private_networks", T_BOOL, OFF(allow_private_networks), 0, 1},
	{"fetch", "accept_encoding", T_BOOL, OFF(accept_encoding), 0, 1},
	{"dns", "server", T_STR, OFF(dns_server), 0, 300},
	{"dns", "cache_ttl_s", T_U64, OFF(dns_cache_ttl_s), 0, 8.64e5},
	{"dns", "timeout_ms", T_U64, OFF(dns_timeout_ms), 10, 600000},
	{"dns", "max_pending", T_U32, OFF(dns_max_pending), 1, 65536},
	{"dns", "negative_ttl_s", T_U32, OFF(dns_negative_ttl_s), 1, 86400},
	{"frontier", "mem_mb", T_U64, OFF(frontier_mem_mb), 1, 1e6},
	{"frontier", "spill_dir", T_STR, OFF(spill_dir), 0, 4096},
	{"frontier", "max_urls_per_host", T_U64, OFF(max_urls_per_host), 0, 1e15},
	{"frontier", "max_hosts", T_U32, OFF(max_hosts), 0, 2147483647.0},
	{"frontier", "max_url_len", T_U32, OFF(max_url_len), 16, 8192},
	{"frontier", "max_path_segments", T_U32, OFF(max_path_segments), 1, 10000},
	{"frontier", "max_segment_repeats", T_U32, OFF(max_segment_repeats), 0, 10000},
	{"sieve", "impl", T_SIEVE_IMPL, OFF(sieve_impl), 1, 64},
	{"sieve", "memory", T_SIZE, OFF(sieve_memory), 512.0 * 1024, 1024.0 * 1024 * 1024 * 1024},
	{"sieve", "buffer_urls", T_U64, OFF(sieve_buffer_urls), 0, 4294967295.0},
	{"sieve", "meta_memory", T_SIZE, OFF(sieve_meta_memory), 64.0 * 1024, 1024.0 * 1024 * 1024 * 1024},
	{"parse", "threads", T_U32, OFF(parse_threads), 0, 1024},
	{"parse", "queue", T_U32, OFF(parse_queue), 1, 1000000},
	{"parse", "max_links", T_U32, OFF(max_links), 1, 1000000},
	{"parse", "near_dup", T_BOOL, OFF(near_dup), 0, 1},
	{"output", "dir", T_STR, OFF(output_dir), 0, 4096},
	{"output", "warc", T_BOOL, OFF(warc), 0, 1},
	{"output", "warc_max_mb", T_U64, OFF(warc_max_mb), 1, 1e6},
	{"output", "warc_level", T_U32, OFF(warc_level), 1, 9},
	{"output", "stats_interval_s", T_U32, OFF(stats_interval_s), 1, 3600},
	{"output", "checkpoint_interval_s", T_U32, OFF(checkpoint_interval_s), 0, 86400},
};

int crawl_config_default(struct crawl_config *c)
{
	memset(c, 0, sizeof *c);
	c->user_agent = strdup(DEFAULT_UA);
	c->spill_dir = strdup("");
	c->output_dir = strdup("crawl-out");
	c->dns_server = strdup("");
	c->sieve_impl = strdup("mercator");
	if (!c->user_agent || !c->spill_dir || !c->output_dir || !c->dns_server || !c->sieve_impl) {
		crawl_config_free(c);
		return -1;
	}
	c->policy = 0;
	c->host_delay_ms = 2000;
	c->ip_delay_ms = 500;
	c->ip_politeness = 1;
	c->ratio = 0.1;
	c->visit_budget_ms = 1000;
	c->min_delay_ms = 500;
	c->max_delay_ms = 60000;
	c->crawl_delay_cap_ms = 30000;
	c->backoff_base_ms = 10000;
	c->backoff_max_ms = 3600000;
	c->max_consecutive_errors = 8;
	c->retry_after_cap_ms = 3600000;
	c->obey_robots = 1;
	c->max_connections = 256;
	c->timeout_ms = 30000;
	c->connect_timeout_ms = 10000;
	c->low_speed_bytes = 100;
	c->low_speed_time_s = 10;
	c->max_body_bytes = 10u * 1024 * 1024;
	c->max_header_bytes = 256u * 1024;
	c->accept_encoding = 1;
	c->dns_cache_ttl_s = 3600;
	c->dns_timeout_ms = 5000;
	c->dns_max_pending = 256;
	c->dns_negative_ttl_s = 60;
	c->frontier_mem_mb = 256;
	c->max_url_len = 2048;
	c->max_path_segments = 32;
	c->max_segment_repeats = 3;
	c->sieve_memory = 64u * 1024 * 1024;
	c->sieve_meta_memory = 16u * 1024 * 1024;
	c->parse_queue = 1024;
	c->max_links = 10000;
	c->near_dup = 1;
	c->warc = 1;
	c->warc_max_mb = 1024;
	c->warc_level = 1;
	c->stats_interval_s = 10;
	c->checkpoint_interval_s = 60;
	return 0;
}

void crawl_config_free(struct crawl_config *c)
{
	if (!c)
		return;
	free(c->user_agent);
	free(c->spill_dir);
	free(c->output_dir);
	free(c->dns_server);
	free(c->sieve_impl);
	for (size_t i = 0; i < c->n_domains; i++)
		free(c->domains[i]);
	memset(c, 0, sizeof *c);
}

static int parse_number(const char *v, double min, double max, double *out)
{
	char *end;
	errno = 0;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v == '\0' || *v == '-')
		return min < 0 ? 0 : -1;
	double d = strtod(v, &end);
	while (*end == ' ' || *end == '\t')
		end++;
	if (errno || *end != '\0' || d != d || d < min || d > max)
		return -1;
	*out = d;
	return 0;
}

static int parse_bool(const char *v, int *out)
{
	static const char *yes[] = {"1", "true", "yes", "on"};
	static const char *no[] = {"0", "false", "no", "off"};
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/* "64M", "256K", "1G", "1048576": bytes with an optional binary suffix
 * (K, M, G, T; KB/KiB... accepted), within [min, max]. */
static int parse_size(const char *v, double min, double max, double *out)
{
	char *end;
	errno = 0;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v < '0' || *v > '9')
		return -1;
	double d = strtod(v, &end);
	if (errno || end == v)
		return -1;
	double mult = 1;
	switch (*end) {
	case 'k': case 'K': mult = 1024.0; end++; break;
	case 'm': case 'M': mult = 1024.0 * 1024; end++; break;
	case 'g': case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (mult > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (mult > 1 && (*end == 'b' || *end == 'B'))
		end++;
	while (*end == ' ' || *end == '\t')
		end++;
	d *= mult;
	if (*end != '\0' || d != d || d < min || d > max || d != (double)(uint64_t)d)
		return -1;
	*out = d;
	return 0;
}

/* 1 if the sieve module has an implementation called name. Asks the
 * sieve's own registry rather than keeping a second list here:
 * sieve_open refuses an unknown name with SIEVE_ENOTSUP before doing
 * anything; a known one is asked to open with no folder, which is refused
 * (SIEVE_EINVAL) by an implementation that needs a folder, and closed at
 * once by one that does not. */
static int sieve_impl_known(const char *name)
{
	struct sieve_config sc = {.impl = name, .dir = NULL, .memory = 64u * 1024 * 1024};
	sieve_t *s = NULL;
	int rc = sieve_open(&sc, NULL, NULL, &s, NULL, 0);
	if (rc == SIEVE_OK)
		sieve_close(s);
	return rc != SIEVE_ENOTSUP;
}

/* Splits a comma/space separated list of lowercase host suffixes. */
static enum crawl_config_err set_domains(struct crawl_config *c, const char *v, char *err,
                                         size_t errlen)
{
	char *tmp[CRAWL_CONFIG_MAX_DOMAINS];
	size_t n = 0;
	const char *p = v;
	while (*p) {
		while (*p == ',' || *p == ' ' || *p == '\t')
			p++;
		const char *s = p;
		while (*p && *p != ',' && *p != ' ' && *p != '\t')
			p++;
		if (p == s)
			continue;
		if (n == CRAWL_CONFIG_MAX_DOMAINS || (size_t)(p - s) > 253) {
			snprintf(err, errlen, "domains: too many or too long (max %d)",
			         CRAWL_CONFIG_MAX_DOMAINS);
			goto fail;
		}
		tmp[n] = strndup(s, (size_t)(p - s));
		if (!tmp[n])
			goto fail;
		for (char *q = tmp[n]; *q; q++)
			if (*q >= 'A' && *q <= 'Z')
				*q = (char)(*q - 'A' + 'a');
		if (tmp[n][0] == '.')
			memmove(tmp[n], tmp[n] + 1, strlen(tmp[n]));
		n++;
	}
	for (size_t i = 0; i < c->n_domains; i++)
		free(c->domains[i]);
	memcpy(c->domains, tmp, n * sizeof tmp[0]);
	c->n_domains = n;
	return CRAWL_CONFIG_OK;
fail:
	for (size_t i = 0; i < n; i++)
		free(tmp[i]);
	return CRAWL_CONFIG_ERR_BAD_VALUE;
}

enum crawl_config_err crawl_config_set(struct crawl_config *c, const char *section,
                                       const char *key, const char *value, char *err,
                                       size_t errlen)
{
	const struct key_def *k = NULL;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, key) == 0) {
			k = &keys[i];
			break;
		}
	if (!k) {
		snprintf(err, errlen, "unknown key '%s' in section [%s]", key, section);
		return CRAWL_CONFIG_ERR_UNKNOWN_KEY;
	}
	char *base = (char *)c;
	double d;
	int b;
	switch (k->type) {
	case T_U64:
	case T_U32:
		if (parse_number(value, k->min, k->max, &d) < 0 || d != (double)(uint64_t)d)
			goto bad;
		if (k->type == T_U64)
			*(uint64_t *)(void *)(base + k->offset) = (uint64_t)d;
		else
			*(uint32_t *)(void *)(base + k->offset) = (uint32_t)d;
		return CRAWL_CONFIG_OK;
	case T_DOUBLE:
		if (parse_number(value, k->min, k->max, &d) < 0)
			goto bad;
		*(double *)(void *)(base + k->offset) = d;
		return CRAWL_CONFIG_OK;
	case T_BOOL:
		if (parse_bool(value, &b) < 0)
			goto bad;
		*(int *)(void *)(base + k->offset) = b;
		return CRAWL_CONFIG_OK;
	case T_POLICY:
		if (strcmp(value, "fixed") == 0)
			c->policy = 0;
		else if (strcmp(value, "ratio") == 0)
			c->policy = 1;
		else
			goto bad;
		return CRAWL_CONFIG_OK;
	case T_STR: {
		size_t len = strlen(value);
		if (len < (size_t)k->min || len > (size_t)k->max)
			goto bad;
		char *s = strdup(value);
		if (!s)
			return CRAWL_CONFIG_ERR_NOMEM;
		char **slot = (char **)(void *)(base + k->offset);
		free(*slot);
		*slot = s;
		return CRAWL_CONFIG_OK;
	}
	case T_DOMAINS:
		return set_domains(c, value, err, errlen);
	case T_SIZE:
		if (parse_size(value, k->min, k->max, &d) < 0)
			goto bad;
		*(uint64_t *)(void *)(base + k->offset) = (uint64_t)d;
		return CRAWL_CONFIG_OK;
	case T_SIEVE_IMPL: {
		size_t len = strlen(value);
		if (len < (size_t)k->min || len > (size_t)k->max || !sieve_impl_known(value))
			goto bad;
		char *s = strdup(value);
		if (!s)
			return CRAWL_CONFIG_ERR_NOMEM;
		free(c->sieve_impl);
		c->sieve_impl = s;
		return CRAWL_CONFIG_OK;
	}
	}
bad:
	if (k->type == T_BOOL)
		snprintf(err, errlen, "%s: bad value '%s' (expected true/false)", key, value);
	else if (k->type == T_POLICY)
		snprintf(err, errlen, "%s: bad value '%s' (expected fixed or ratio)", key, value);
	else if (k->type == T_SIZE)
		snprintf(err, errlen,
		         "%s: bad value '%s' (expected a size such as 64M: bytes with an optional"
		         " K/M/G/T suffix, at least %.0fK)",
		         key, value, k->min / 1024);
	else if (k->type == T_SIEVE_IMPL)
		snprintf(err, errlen, "%s: bad value '%s' (no sieve implementation of that name;"
		         " the default is mercator)",
		         key, value);
	else if (k->type == T_STR)
		snprintf(err, errlen, "%s: bad value (length must be %g..%g)", key, k->min, k->max);
	else
		snprintf(err, errlen, "%s: bad value '%s' (expected a number in %g..%g)", key, value,
		         k->min, k->max);
	return CRAWL_CONFIG_ERR_BAD_VALUE;
}

struct load_ctx {
	struct crawl_config *c;
	const char *path;
	char *err;
	size_t errlen;
	enum crawl_config_err rc;
	int line;
};

static int on_ini(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *lc = user;
	char msg[CRAWL_CONFIG_ERR_MAX];
	lc->line++;
	enum crawl_config_err e = crawl_config_set(lc->c, section, name, value, msg, sizeof msg);
	if (e != CRAWL_CONFIG_OK) {
		if (lc->rc != CRAWL_CONFIG_OK)
			return 0; /* keep the first error, the one ini_parse reports */
		snprintf(lc->err, lc->errlen, "[%s] %s", section, msg);
		lc->rc = e;
		return 0;
	}
	return 1;
}

enum crawl_config_err crawl_config_load(struct crawl_config *c, const char *path, char *err,
                                        size_t errlen)
{
	struct load_ctx lc = {c, path, err, errlen, CRAWL_CONFIG_OK, 0};
	char msg[CRAWL_CONFIG_ERR_MAX] = "";
	lc.err = msg;
	lc.errlen = sizeof msg;
	int r = ini_parse(path, on_ini, &lc);
	if (r == -1) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return CRAWL_CONFIG_ERR_IO;
	}
	if (r == -2) {
		snprintf(err, errlen, "%s: out of memory", path);
		return CRAWL_CONFIG_ERR_NOMEM;
	}
	if (r > 0) {
		if (lc.rc == CRAWL_CONFIG_OK) {
			snprintf(err, errlen, "%s:%d: syntax error", path, r);
			return CRAWL_CONFIG_ERR_BAD_VALUE;
		}
		snprintf(err, errlen, "%s:%d: %s", path, r, msg);
		return lc.rc;
	}
	return CRAWL_CONFIG_OK;
}

int crawl_config_write(const struct crawl_config *c, const char *path)
{
	FILE *f = fopen(path, "w");
	const char *section = "";
	const char *base = (const char *)c;
	int rc;

	if (!f)
		return -1;
	fprintf(f, "# The configuration of this crawl as it started (crawler crawl --resume\n"
	           "# reads it back; flags given with --resume override it).\n");
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct key_def *k = &keys[i];
		const void *v = base + k->offset;
		if (strcmp(section, k->section) != 0) {
			section = k->section;
			fprintf(f, "\n[%s]\n", section);
		}
		fprintf(f, "%s = ", k->name);
		switch (k->type) {
		case T_U64:
		case T_SIZE: fprintf(f, "%llu\n", (unsigned long long)*(const uint64_t *)v); break;
		case T_U32: fprintf(f, "%u\n", *(const uint32_t *)v); break;
		case T_BOOL: fprintf(f, "%s\n", *(const int *)v ? "true" : "false"); break;
		case T_DOUBLE: fprintf(f, "%.17g\n", *(const double *)v); break;
		case T_POLICY: fprintf(f, "%s\n", c->policy ? "ratio" : "fixed"); break;
		case T_STR:
		case T_SIEVE_IMPL: fprintf(f, "%s\n", *(char *const *)v); break;
		case T_DOMAINS:
			for (size_t d = 0; d < c->n_domains; d++)
				fprintf(f, "%s%s", d ? "," : "", c->domains[d]);
			fputc('\n', f);
			break;
		}
	}
	rc = ferror(f) ? -1 : 0;
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

const char *crawl_config_strerror(enum crawl_config_err e)
{
	switch (e) {
	case CRAWL_CONFIG_OK: return "ok";
	case CRAWL_CONFIG_ERR_UNKNOWN_KEY: return "unknown key";
	case CRAWL_CONFIG_ERR_BAD_VALUE: return "bad value";
	case CRAWL_CONFIG_ERR_IO: return "cannot read file";
	case CRAWL_CONFIG_ERR_NOMEM: return "out of memory";
	}
	return "unknown error";
}
