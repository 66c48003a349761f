/*
 * scope.c: scope and trap rules; see scope.h. The config's strings are
 * copied into one allocation each; counters are relaxed atomics because only
 * their totals matter.
 */
#include "frontier/scope.h"
#include "frontier/url.h"
#include "frontier/base/array.h"

#include <ctype.h>
#include <libpsl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SCOPE_SEGMENTS_HARD_MAX 256u

struct scope {
	char **domains;
	size_t *domain_lens;
	size_t n_domains;
	char **prefixes;
	size_t *prefix_lens;
	size_t n_prefixes;
	uint32_t max_depth;
	uint32_t max_url_len;
	uint32_t max_path_segments;
	uint32_t max_segment_repeats;
	uint32_t max_query_params;
	uint64_t counts[SCOPE_VERDICT_COUNT];
};

void scope_config_default(struct scope_config *c)
{
	memset(c, 0, sizeof *c);
	c->max_url_len = 2048;
	c->max_path_segments = 32;
	c->max_segment_repeats = 3;
	c->max_query_params = 10;
}

static void free_list(char **l, size_t n)
{
	if (l == NULL)
		return;
	ARRAY_FREE_EACH(l, n);
}

void scope_destroy(struct scope *s)
{
	if (s == NULL)
		return;
	free_list(s->domains, s->n_domains);
	free_list(s->prefixes, s->n_prefixes);
	free(s->domain_lens);
	free(s->prefix_lens);
	free(s);
}

static enum scope_err copy_list(const char *const *in, size_t n, char ***out, size_t **lens)
{
	size_t i;

	*out = NULL;
	*lens = NULL;
	if (n == 0)
		return SCOPE_ERR_OK;
	if (in == NULL)
		return SCOPE_ERR_INVALID;
	*out = calloc(n, sizeof **out);
	*lens = calloc(n, sizeof **lens);
	if (*out == NULL || *lens == NULL)
		return SCOPE_ERR_NOMEM;
	for (i = 0; i < n; i++) {
		size_t l;
		if (in[i] == NULL || in[i][0] == '\0')
			return SCOPE_ERR_INVALID;
		l = strlen(in[i]);
		(*out)[i] = malloc(l + 1);
		if ((*out)[i] == NULL)
			return SCOPE_ERR_NOMEM;
		memcpy((*out)[i], in[i], l + 1);
		(*lens)[i] = l;
	}
	return SCOPE_ERR_OK;
}

enum scope_err scope_create(const struct scope_config *c, struct scope **out)
{
	enum scope_err err;
	struct scope *s;

	if (out == NULL)
		return SCOPE_ERR_INVALID;
	*out = NULL;
	if (c == NULL)
		return SCOPE_ERR_INVALID;
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return SCOPE_ERR_NOMEM;
	s->n_domains = c->n_domains;
	s->n_prefixes = c->n_prefixes;
	err = copy_list(c->domains, c->n_domains, &s->domains, &s->domain_lens);
	if (err != SCOPE_ERR_OK)
		goto out;
	err = copy_list(c->prefixes, c->n_prefixes, &s->prefixes, &s->prefix_lens);
	if (err != SCOPE_ERR_OK)
		goto out;
	s->max_depth = c->max_depth;
	s->max_url_len = c->max_url_len;
	s->max_path_segments = c->max_path_segments;
	s->max_segment_repeats = c->max_segment_repeats;
	s->max_query_params = c->max_query_params;
	*out = s;
	s = NULL;
out:
	if (s != NULL) {
		/* copy_list may have left a partial list: free what was set. */
		scope_destroy(s);
	}
	return err;
}

/* Does `host` equal `dom` or end with "." + dom (ASCII case-insensitive)? */
static int domain_match(const char *host, size_t hl, const char *dom, size_t dl)
{
	if (hl < dl || strncasecmp(host + hl - dl, dom, dl) != 0)
		return 0;
	return hl == dl || host[hl - dl - 1] == '.';
}

struct seg {
	const char *p;
	size_t n;
};

/* The port written after the host, between host_end and authority_end
 * (none: ""), is 1..65535. */
static int port_ok(const char *url, size_t host_end, size_t authority_end)
{
	uint32_t port = 0;
	size_t i;

	if (host_end >= authority_end || url[host_end] != ':' || host_end + 1 == authority_end)
		return 1;
	for (i = host_end + 1; i < authority_end; i++) {
		if (url[i] < '0' || url[i] > '9')
			return 0;
		port = port * 10 + (uint32_t)(url[i] - '0');
		if (port > 65535)
			return 0;
	}
	return port != 0;
}

/* Whether the query starting at url[q] ('?', or q == len: none) and
 * ending at '#' or len holds more than max non-empty '&'-separated
 * parameters. */
static int url_params_over(const char *url, size_t q, size_t len, uint32_t max)
{
	uint32_t n = 0;
	int in_param = 0;
	if (q >= len || url[q] != '?')
		return 0;
	for (size_t i = q + 1; i < len && url[i] != '#'; i++) {
		if (url[i] == '&') {
			in_param = 0;
		} else if (!in_param) {
			in_param = 1;
			if (++n > max)
				return 1;
		}
	}
	return 0;
}

static enum scope_verdict verdict(struct scope *s, enum scope_verdict v)
{
	__atomic_add_fetch(&s->counts[v], 1, __ATOMIC_RELAXED);
	return v;
}

/* The rules of scope.h, rule 3 with max_depth; rule 4 only sets
 * *off_domain when allow_off_domain. */
static enum scope_verdict check(struct scope *s, const char *url, size_t len, uint32_t depth,
                                uint32_t max_depth, int allow_off_domain, int *off_domain)
{
	struct seg segs[SCOPE_SEGMENTS_HARD_MAX];
	size_t i, nseg = 0, hs, hl, ps, pe;

	if (s == NULL)
		return SCOPE_BAD_URL;
	if (url == NULL || len == 0)
		return verdict(s, SCOPE_BAD_URL);
	/* a crawl key: a scheme, "://" and a host */
	if (url[0] == ':' || url_key_split(url, len, &ps, &hs, &hl) < 0)
		return verdict(s, SCOPE_BAD_URL);
	if (url[hs] != '[' && !url_host_is_dns_name(url + hs, hl))
		return verdict(s, SCOPE_INVALID_HOST);
	if (!port_ok(url, hs + hl, ps))
		return verdict(s, SCOPE_BAD_PORT);
	if (s->max_url_len != 0 && len > s->max_url_len)
		return verdict(s, SCOPE_TOO_LONG);
	if (max_depth != 0 && depth > max_depth)
		return verdict(s, SCOPE_TOO_DEEP);
	if (s->n_domains > 0 || s->n_prefixes > 0) {
		int ok = 0;
		for (i = 0; !ok && i < s->n_domains; i++)
			ok = domain_match(url + hs, hl, s->domains[i], s->domain_lens[i]);
		for (i = 0; !ok && i < s->n_prefixes; i++)
			ok = len >= s->prefix_lens[i] &&
			     memcmp(url, s->prefixes[i], s->prefix_lens[i]) == 0;
		*off_domain = !ok;
		if (!ok && !allow_off_domain)
			return verdict(s, SCOPE_OFF_DOMAIN);
	}
	for (pe = ps; pe < len && url[pe] != '?' && url[pe] != '#'; pe++)
		;
	/* Split the path into its segments (empty ones are skipped). */
	for (i = ps; i < pe;) {
		size_t j;
		while (i < pe && url[i] == '/')
			i++;
		if (i >= pe)
			break;
		for (j = i; j < pe && url[j] != '/'; j++)
			;
		if (nseg == SCOPE_SEGMENTS_HARD_MAX ||
		    (s->max_path_segments != 0 && nseg >= s->max_path_segments))
			return verdict(s, SCOPE_TOO_MANY_SEGMENTS);
		segs[nseg].p = url + i;
		segs[nseg].n = j - i;
		nseg++;
		i = j;
	}
	if (s->max_query_params != 0 && url_params_over(url, pe, len, s->max_query_params))
		return verdict(s, SCOPE_TOO_MANY_PARAMS);
	if (s->max_segment_repeats >= 2) {
		for (i = 0; i < nseg; i++) {
			uint32_t seen = 1;
			size_t j;
			for (j = i + 1; j < nseg; j++) {
				if (segs[j].n == segs[i].n &&
				    memcmp(segs[j].p, segs[i].p, segs[i].n) == 0)
					seen++;
			}
			if (seen >= s->max_segment_repeats)
				return verdict(s, SCOPE_REPEATED_SEGMENT);
		}
	}
	return verdict(s, SCOPE_OK);
}

enum scope_verdict scope_check(struct scope *s, const char *url, size_t len, uint32_t depth)
{
	int off_domain = 0;
	return check(s, url, len, depth, s ? s->max_depth : 0, 0, &off_domain);
}

enum scope_verdict scope_check_embed(struct scope *s, const char *url, size_t len, uint32_t depth,
                                     int allow_off_domain, int *off_domain)
{
	*off_domain = 0;
	return check(s, url, len, depth, s ? s->max_depth : 0, allow_off_domain, off_domain);
}

enum scope_verdict scope_check_accepted(struct scope *s, const char *url, size_t len,
                                        uint32_t depth, uint32_t max_depth, int *off_domain)
{
	*off_domain = 0;
	return check(s, url, len, depth,
	             max_depth ? max_depth
	             : s       ? s->max_depth
	                       : 0,
	             1, off_domain);
}

void scope_count_add(struct scope *s, enum scope_verdict v, uint64_t n)
{
	if (s != NULL && (unsigned)v < SCOPE_VERDICT_COUNT)
		__atomic_add_fetch(&s->counts[v], n, __ATOMIC_RELAXED);
}

uint64_t scope_count(const struct scope *s, enum scope_verdict v)
{
	if (s == NULL || (unsigned)v >= SCOPE_VERDICT_COUNT)
		return 0;
	return __atomic_load_n(&s->counts[v], __ATOMIC_RELAXED);
}

const char *scope_verdict_name(enum scope_verdict v)
{
	switch (v) {
	case SCOPE_OK: return "ok";
	case SCOPE_BAD_URL: return "bad-url";
	case SCOPE_TOO_LONG: return "too-long";
	case SCOPE_TOO_DEEP: return "too-deep";
	case SCOPE_OFF_DOMAIN: return "off-domain";
	case SCOPE_TOO_MANY_SEGMENTS: return "too-many-segments";
	case SCOPE_REPEATED_SEGMENT: return "repeated-segment";
	case SCOPE_INVALID_HOST: return "invalid-host";
	case SCOPE_BAD_PORT: return "bad-port";
	case SCOPE_TOO_MANY_PARAMS: return "too-many-params";
	case SCOPE_VERDICT_COUNT: break;
	}
	return "unknown";
}

const char *scope_strerror(enum scope_err e)
{
	switch (e) {
	case SCOPE_ERR_OK: return "ok";
	case SCOPE_ERR_NOMEM: return "out of memory";
	case SCOPE_ERR_INVALID: return "invalid argument";
	}
	return "unknown error";
}

int scope_registrable_domains(char *const *urls, size_t n, char ***out, size_t *nout)
{
	const psl_ctx_t *psl = psl_builtin();
	char **d = calloc(n ? n : 1, sizeof *d);
	size_t k = 0;
	if (!d)
		return -1;
	for (size_t i = 0; i < n; i++) {
		size_t kl, h, hl;
		char host[512];
		if (url_key_split(urls[i], strlen(urls[i]), &kl, &h, &hl) < 0 || hl >= sizeof host)
			continue;
		for (size_t c = 0; c < hl; c++)
			host[c] = (char)tolower((unsigned char)urls[i][h + c]);
		host[hl] = '\0';
		const char *reg = psl ? psl_registrable_domain(psl, host) : NULL;
		const char *dom = reg ? reg : host;
		int dup = 0;
		for (size_t j = 0; j < k; j++)
			if (strcmp(d[j], dom) == 0)
				dup = 1;
		if (!dup) {
			d[k] = strdup(dom);
			if (d[k])
				k++;
		}
	}
	*out = d;
	*nout = k;
	return 0;
}
