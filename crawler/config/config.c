/*
 * config.c: a table of keys (section, name, type, field, unit, range) drives
 * the INI reader, the command-line overrides and the file a resumed crawl
 * reads back, so each key is validated, converted and written in exactly
 * one place.
 */
#include "crawler/config/config.h"
#include "crawler/config/ini_file.h"
#include "crawler/net/proxy.h"
#include "frontier/base/ascii.h"
#include "parse/sitemap.h"
#include "parse/near_dup.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define DEFAULT_UA "crawler/0.1 (+mailto:CONTACT-ME@example.invalid)"

enum key_type {
	T_UINT,       /* a whole number */
	T_MS,         /* a whole number of milliseconds, stored in microseconds */
	T_S,          /* a whole number of seconds, stored in microseconds */
	T_MIB,        /* a whole number of MiB, stored in bytes */
	T_SIZE,       /* bytes, with an optional K/M/G/T suffix */
	T_BOOL,       /* true/false, yes/no, on/off, 1/0 */
	T_NOT_BOOL,   /* the same, stored negated (a module field named no_...) */
	T_DOUBLE,     /* a real number */
	T_POLICY,     /* fixed, ratio or adaptive: enum delay_policy_kind */
	T_FAMILY,     /* ipv4 or ipv6: enum ip_family */
	T_ORDER,      /* bfs, depth or focused: enum frontier_order */
	T_STR,        /* an owned string; min..max is its length */
	T_SIEVE_IMPL, /* an owned string naming a sieve implementation */
	T_PROXY,      /* an owned string: a proxy URL (proxy.h) or "" */
	T_DOMAINS,    /* a list of host suffixes into crawl.domains */
	T_WGET,       /* an owned string, one of crawl.rules_wget: a wget flag's value,
	                 joined to the one before (url_rules_wget_join) */
};

struct key_def {
	const char *section;
	const char *name;
	enum key_type type;
	size_t offset;   /* the field the key fills in struct crawl_config */
	size_t size;     /* its size: integers of 1, 4 or 8 bytes, a double, a pointer */
	uint64_t unit;   /* field = value * unit: 1000 for T_MS, 10^6 for T_S, 2^20 for T_MIB,
	                    else 1 */
	double min, max; /* range of the value, in the key's own unit */
};

/* The words a choice key takes, by its type, and the value each stores;
 * a type's words stand in the order its bad-value message names them. The
 * parse, the message and the written file all read this one table (the
 * policies' words are delay_policy_name's: test_config checks they agree). */
static const struct choice {
	enum key_type type;
	const char *word;
	uint64_t value;
} choices[] = {
	{ T_POLICY, "fixed", DELAY_POLICY_FIXED },
	{ T_POLICY, "ratio", DELAY_POLICY_RATIO },
	{ T_POLICY, "adaptive", DELAY_POLICY_ADAPTIVE },
	{ T_FAMILY, "ipv4", IP_V4 },
	{ T_FAMILY, "ipv6", IP_V6 },
	{ T_ORDER, "bfs", FRONTIER_ORDER_BFS },
	{ T_ORDER, "depth", FRONTIER_ORDER_DEPTH },
	{ T_ORDER, "focused", FRONTIER_ORDER_FOCUSED },
};
#define N_CHOICES (sizeof choices / sizeof choices[0])

/* The choice of type t whose word (when word is set) or value matches. */
static const struct choice *choice_find(enum key_type t, const char *word, uint64_t value)
{
	for (size_t i = 0; i < N_CHOICES; i++)
		if (choices[i].type == t &&
		    (word ? strcmp(word, choices[i].word) == 0 : value == choices[i].value))
			return &choices[i];
	return NULL;
}

#define FIELD(m) offsetof(struct crawl_config, m), sizeof(((struct crawl_config *)0)->m)
#define KIB 1024.0
#define TIB (1024.0 * 1024 * 1024 * 1024)
#define MS_TO_US 1000u
#define MIB_TO_BYTES (1024u * 1024u)
#define S_TO_US 1000000u
#define UNIT_OF(type)                                                                              \
	((type) == T_MS ? MS_TO_US : (type) == T_S ? S_TO_US : (type) == T_MIB ? MIB_TO_BYTES : 1u)
#define KEY(section, name, type, field, min, max)                                                  \
	{                                                                                          \
		section, name, type, FIELD(field), UNIT_OF(type), min, max                         \
	}

static const struct key_def keys[] = {
	KEY("crawl", "max_pages", T_UINT, crawl.max_pages, 0, 1e15),
	KEY("crawl", "max_time_ms", T_UINT, crawl.max_time_ms, 0, 1e12),
	KEY("crawl", "max_depth", T_UINT, scope.max_depth, 0, 1e6),
	KEY("crawl", "user_agent", T_STR, crawl.user_agent, 1, 512),
	KEY("crawl", "domains", T_DOMAINS, crawl.domains, 0, 0),
	KEY("crawl", "any_domain", T_BOOL, crawl.any_domain, 0, 1),
	KEY("crawl", "rules", T_STR, crawl.rules, 0, 4096),
	KEY("crawl", "order", T_ORDER, frontier.order, 0, 0),
	KEY("crawl", "focus", T_STR, crawl.focus, 0, 4096),
	KEY("crawl", "focus_threshold", T_DOUBLE, crawl.focus_threshold, 0.0001, 1000),
	KEY("crawl", "accept", T_WGET, crawl.rules_wget[URL_RULES_WGET_ACCEPT], 0, 65536),
	KEY("crawl", "reject", T_WGET, crawl.rules_wget[URL_RULES_WGET_REJECT], 0, 65536),
	KEY("crawl", "accept_regex", T_WGET, crawl.rules_wget[URL_RULES_WGET_ACCEPT_REGEX], 0,
	    65536),
	KEY("crawl", "reject_regex", T_WGET, crawl.rules_wget[URL_RULES_WGET_REJECT_REGEX], 0,
	    65536),
	KEY("crawl", "include_directories", T_WGET, crawl.rules_wget[URL_RULES_WGET_INCLUDE_DIRS],
	    0, 65536),
	KEY("crawl", "exclude_directories", T_WGET, crawl.rules_wget[URL_RULES_WGET_EXCLUDE_DIRS],
	    0, 65536),
	KEY("crawl", "sitemaps", T_BOOL, crawl.sitemaps, 0, 1),
	KEY("crawl", "sitemap_priority", T_BOOL, crawl.sitemap_priority, 0, 1),
	KEY("crawl", "sitemap_max_urls", T_UINT, crawl.sitemap_max_urls, 1, 1e8),
	KEY("crawl", "sitemap_max_bytes", T_SIZE, crawl.sitemap_max_bytes, KIB, 1024 * 1024 * KIB),
	KEY("crawl", "sitemap_max_tag_bytes", T_SIZE, crawl.sitemap_max_tag_bytes, 256, 1024 * KIB),
	KEY("crawl", "sitemap_max_attributes", T_UINT, crawl.sitemap_max_attributes, 1, 1e5),
	KEY("crawl", "page_requisites", T_BOOL, crawl.page_requisites, 0, 1),
	KEY("crawl", "requisites_hops", T_UINT, crawl.requisites_hops, 0, FRONTIER_EMBED_HOPS_MAX),
	KEY("crawl", "quiet", T_BOOL, crawl.quiet, 0, 1),
	KEY("crawl", "trace_visits", T_BOOL, crawl.trace_visits, 0, 1),
	KEY("politeness", "policy", T_POLICY, politeness.policy, 0, 2),
	KEY("politeness", "host_delay_ms", T_MS, politeness.host_delay_us, 0, 3.6e6),
	KEY("politeness", "ip_delay_ms", T_MS, politeness.ip_delay_us, 0, 3.6e6),
	KEY("politeness", "ip_politeness", T_BOOL, politeness.ip_politeness, 0, 1),
	KEY("politeness", "ratio", T_DOUBLE, politeness.ratio, 0.000001, 1),
	KEY("politeness", "visit_budget_ms", T_MS, politeness.visit_budget_us, 1, 3.6e6),
	KEY("politeness", "min_delay_ms", T_MS, politeness.min_delay_us, 0, 3.6e6),
	KEY("politeness", "max_delay_ms", T_MS, politeness.max_delay_us, 0, 8.64e7),
	KEY("politeness", "adaptive_factor", T_DOUBLE, politeness.adaptive_factor, 0.001, 1e6),
	KEY("politeness", "adaptive_smoothing", T_DOUBLE, politeness.adaptive_smoothing, 0.001, 1),
	KEY("politeness", "adaptive_slowdown", T_DOUBLE, politeness.adaptive_slowdown, 1, 1e6),
	KEY("politeness", "max_urls_per_visit", T_UINT, politeness.max_urls_per_visit, 0, 1e6),
	KEY("politeness", "crawl_delay_cap_ms", T_MS, politeness.crawl_delay_cap_us, 0, 8.64e7),
	KEY("politeness", "backoff_base_ms", T_MS, politeness.backoff_base_us, 0, 8.64e7),
	KEY("politeness", "backoff_max_ms", T_MS, politeness.backoff_max_us, 0, 8.64e7),
	KEY("politeness", "max_consecutive_errors", T_UINT, politeness.max_consecutive_errors, 0,
	    1e6),
	KEY("politeness", "retry_after_cap_ms", T_MS, politeness.retry_after_cap_us, 0, 8.64e7),
	KEY("politeness", "obey_robots", T_BOOL, crawl.obey_robots, 0, 1),
	KEY("politeness", "robots_expiry_s", T_S, politeness.robots_expiry_us, 1, 8.64e6),
	KEY("politeness", "robots_cache_memory", T_SIZE, politeness.robots_cache_bytes, 64 * KIB,
	    TIB),
	KEY("politeness", "robots_max_attempts", T_UINT, crawl.robots_max_attempts, 0, 255),
	KEY("politeness", "max_disallowed_per_turn", T_UINT, crawl.max_disallowed_per_turn, 0, 1e9),
	KEY("politeness", "robots_max_wildcard_rules", T_UINT, politeness.robots_max_wildcard_rules,
	    0, 1e6),
	KEY("fetch", "max_connections", T_UINT, fetch.max_connections, 1, 15000),
	KEY("fetch", "timeout_ms", T_UINT, fetch.total_timeout_ms, 100, 3.6e6),
	KEY("fetch", "connect_timeout_ms", T_UINT, fetch.connect_timeout_ms, 100, 3.6e6),
	KEY("fetch", "low_speed_bytes", T_UINT, fetch.low_speed_limit, 0, 1e9),
	KEY("fetch", "low_speed_time_s", T_UINT, fetch.low_speed_time_s, 0, 3600),
	KEY("fetch", "max_body_bytes", T_UINT, fetch.max_body_bytes, 1024, 1e10),
	KEY("fetch", "max_header_bytes", T_UINT, fetch.max_header_bytes, 1024, 1e8),
	KEY("fetch", "allow_private_networks", T_BOOL, fetch.allow_private_networks, 0, 1),
	KEY("fetch", "accept_encoding", T_NOT_BOOL, fetch.no_accept_encoding, 0, 1),
	KEY("fetch", "tls_verify", T_BOOL, fetch.verify_tls, 0, 1),
	KEY("fetch", "ca_file", T_STR, fetch.ca_file, 0, 4096),
	KEY("fetch", "proxy", T_PROXY, fetch.proxy, 0, 4096),
	KEY("fetch", "no_proxy", T_STR, fetch.no_proxy, 0, 4096),
	KEY("dns", "server", T_STR, dns.server, 0, 1024),
	KEY("dns", "resolv_conf", T_STR, dns.resolv_conf, 0, 4096),
	KEY("fetch", "max_redirects", T_UINT, crawl.max_redirects, 0, 31),
	KEY("fetch", "max_ip_connections", T_UINT, fetch.max_ip_connections, 0, 100000),
	KEY("dns", "cache_ttl_s", T_UINT, dns.max_ttl_s, 0, 8.64e5),
	KEY("dns", "timeout_ms", T_UINT, dns.timeout_ms, 10, 600000),
	KEY("dns", "max_pending", T_UINT, dns.max_pending, 1, 65536),
	KEY("dns", "negative_ttl_s", T_UINT, dns.negative_ttl_s, 1, 86400),
	KEY("dns", "cache_entries", T_UINT, dns.cache_entries, 16, 1e8),
	KEY("dns", "prefer", T_FAMILY, dns.prefer, 0, 0),
	KEY("frontier", "mem_mb", T_MIB, frontier.mem_budget, 1, 1e6),
	KEY("frontier", "spill_dir", T_STR, frontier.spill_dir, 0, 4096),
	KEY("frontier", "max_urls_per_host", T_UINT, frontier.max_urls_per_host, 0, 1e15),
	KEY("frontier", "max_hosts", T_UINT, frontier.max_hosts, 0, 2147483647.0),
	KEY("frontier", "max_url_len", T_UINT, scope.max_url_len, 16, 8192),
	KEY("frontier", "max_path_segments", T_UINT, scope.max_path_segments, 1, 10000),
	KEY("frontier", "max_segment_repeats", T_UINT, scope.max_segment_repeats, 0, 10000),
	KEY("frontier", "max_query_params", T_UINT, scope.max_query_params, 0, 10000),
	KEY("sieve", "impl", T_SIEVE_IMPL, sieve.impl, 1, 64),
	KEY("sieve", "memory", T_SIZE, sieve.memory, 512 * KIB, TIB),
	KEY("sieve", "buffer_urls", T_UINT, sieve.buffer_urls, 0, 4294967295.0),
	KEY("sieve", "meta_memory", T_SIZE, link_meta_memory, 64 * KIB, TIB),
	KEY("parse", "threads", T_UINT, parse.threads, 0, 1024),
	KEY("parse", "queue", T_UINT, parse.queue, 1, 1000000),
	KEY("parse", "max_links", T_UINT, links.max_links, 1, 1000000),
	KEY("parse", "near_dup", T_BOOL, parse.near_dup, 0, 1),
	KEY("parse", "near_dup_memory", T_SIZE, parse.near_dup_memory, NEAR_DUP_MEMORY_MIN, TIB),
	KEY("output", "dir", T_STR, output.dir, 0, 4096),
	KEY("output", "warc", T_BOOL, output.warc, 0, 1),
	KEY("output", "warc_max_mb", T_MIB, warc.max_file_bytes, 1, 1e6),
	KEY("output", "warc_level", T_UINT, warc.compression_level, 1, 9),
	KEY("output", "cdxj", T_BOOL, warc.cdxj, 0, 1),
	KEY("output", "wacz", T_BOOL, output.wacz, 0, 1),
	KEY("output", "history", T_BOOL, warc.history, 0, 1),
	KEY("output", "previous", T_STR, output.previous, 0, 4096),
	KEY("output", "stats_interval_s", T_UINT, output.stats_interval_s, 1, 3600),
	KEY("output", "checkpoint_interval_s", T_UINT, output.checkpoint_interval_s, 0, 86400),
	KEY("output", "checkpoint_fork", T_BOOL, output.checkpoint_fork, 0, 1),
	KEY("output", "metrics", T_STR, output.metrics, 0, 300),
	KEY("cluster", "redis", T_STR, cluster.redis, 0, 300),
	KEY("cluster", "agent", T_STR, cluster.agent, 0, 64),
	KEY("cluster", "assign", T_STR, cluster.assign, 1, 16),
	KEY("cluster", "lease_ms", T_UINT, cluster.lease_ms, 300, 600000),
	KEY("cluster", "window", T_UINT, cluster.window, 1, 100000000),
};
#define N_KEYS (sizeof keys / sizeof keys[0])

/* Integer fields of any width the table names, through memcpy (the fields
 * are size_t, long, unsigned, enums, int and bool flags). */
static void field_store(void *field, size_t size, uint64_t v)
{
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;
	switch (size) {
	case 1: memcpy(field, &v8, 1); break;
	case 2: memcpy(field, &v16, 2); break;
	case 4: memcpy(field, &v32, 4); break;
	default: memcpy(field, &v, 8); break;
	}
}

static uint64_t field_load(const void *field, size_t size)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v;
	switch (size) {
	case 1: memcpy(&v8, field, 1); return v8;
	case 2: memcpy(&v16, field, 2); return v16;
	case 4: memcpy(&v32, field, 4); return v32;
	default: memcpy(&v, field, 8); return v;
	}
}

static char *field_string(const void *field)
{
	char *s;
	memcpy(&s, field, sizeof s);
	return s;
}

/* Frees the string a field holds and puts s there (s may be NULL). */
static void field_string_replace(void *field, char *s)
{
	free(field_string(field));
	memcpy(field, &s, sizeof s);
}

/* Copies the settings several modules read from the one field their key
 * fills (see config.h) and points the module structs at the strings. */
static void share_settings(struct crawl_config *c)
{
	int restricted = !c->crawl.any_domain && c->crawl.n_domains > 0;
	c->frontier.max_depth = c->scope.max_depth;
	c->url.max_len = c->scope.max_url_len;
	c->sieve.max_url_len = c->scope.max_url_len;
	c->warc.max_url_len = c->scope.max_url_len;
	c->links.url_options = &c->url;
	c->links.requisites = c->crawl.page_requisites;
	c->fetch.user_agent = c->crawl.user_agent;
	c->warc.user_agent = c->crawl.user_agent;
	c->warc.dir = c->output.dir;
	c->scope.domains = restricted ? (const char *const *)c->crawl.domains : NULL;
	c->scope.n_domains = restricted ? c->crawl.n_domains : 0;
	c->rules.file = c->crawl.rules;
	for (size_t i = 0; i < URL_RULES_WGET_COUNT; i++)
		c->rules.wget[i] = c->crawl.rules_wget[i];
}

int crawl_config_default(struct crawl_config *c)
{
	memset(c, 0, sizeof *c);
	politeness_config_default(&c->politeness);
	frontier_config_default(&c->frontier);
	scope_config_default(&c->scope);
	/* Traps (calendars, session IDs) end at a host's budget by default. */
	c->frontier.max_urls_per_host = 100000;
	url_options_init(&c->url);
	c->crawl.user_agent = strdup(DEFAULT_UA);
	c->frontier.spill_dir = strdup(""); /* "": the output folder */
	c->output.dir = strdup("crawl-out");
	c->dns.server = strdup("");
	c->dns.resolv_conf = strdup("");
	c->fetch.ca_file = strdup("");
	c->fetch.proxy = strdup("");
	c->fetch.no_proxy = strdup("");
	c->output.metrics = strdup("");
	c->output.previous = strdup("");
	c->sieve.impl = strdup("mercator");
	c->crawl.rules = strdup("");
	c->crawl.focus = strdup("");
	c->crawl.focus_threshold = 0.02;
	for (size_t i = 0; i < URL_RULES_WGET_COUNT; i++)
		c->crawl.rules_wget[i] = strdup("");
	c->cluster.redis = strdup("");
	c->cluster.agent = strdup("");
	c->cluster.assign = strdup("consistent");
	c->cluster.lease_ms = 3000;
	c->cluster.window = 10000;
	if (!c->cluster.redis || !c->cluster.agent || !c->cluster.assign || !c->crawl.user_agent ||
	    !c->crawl.focus || !c->frontier.spill_dir || !c->output.dir || !c->dns.server ||
	    !c->dns.resolv_conf || !c->fetch.ca_file || !c->fetch.proxy || !c->fetch.no_proxy ||
	    !c->output.metrics || !c->output.previous || !c->sieve.impl || !c->crawl.rules ||
	    !c->crawl.rules_wget[0] || !c->crawl.rules_wget[1] || !c->crawl.rules_wget[2] ||
	    !c->crawl.rules_wget[3] || !c->crawl.rules_wget[4] || !c->crawl.rules_wget[5]) {
		crawl_config_free(c);
		return -1;
	}
	c->crawl.obey_robots = 1;
	c->crawl.robots_max_attempts = 8;
	c->crawl.max_disallowed_per_turn = 100;
	c->fetch.max_connections = 256;
	c->fetch.max_ip_connections = 8;
	c->fetch.total_timeout_ms = 30000;
	c->fetch.connect_timeout_ms = 10000;
	c->fetch.low_speed_limit = 100;
	c->fetch.low_speed_time_s = 10;
	c->fetch.max_body_bytes = 10u * 1024 * 1024;
	c->fetch.max_header_bytes = 256u * 1024;
	c->fetch.verify_tls = true;
	c->crawl.max_redirects = 20; /* wget's --max-redirect default */
	c->crawl.requisites_hops = 1;
	c->crawl.sitemap_max_urls = SITEMAP_MAX_LOCS;
	c->crawl.sitemap_max_bytes = SITEMAP_MAX_BYTES;
	c->crawl.sitemap_max_tag_bytes = SITEMAP_MAX_TAG_BYTES;
	c->crawl.sitemap_max_attributes = SITEMAP_MAX_ATTRIBUTES;
	c->dns.max_ttl_s = 3600;
	c->dns.timeout_ms = 5000;
	c->dns.max_pending = 256;
	c->dns.negative_ttl_s = 60;
	c->dns.cache_entries = 65536;
	c->dns.prefer = IP_V4;
	c->frontier.mem_budget = 256u * MIB_TO_BYTES;
	c->sieve.memory = 64u * 1024 * 1024;
	c->link_meta_memory = 16u * 1024 * 1024;
	c->parse.queue = 64;
	c->parse.near_dup_memory = 64u << 20;
	c->parse.near_dup = 1;
	c->links.max_links = LINKS_DEFAULT_MAX_LINKS;
	c->output.warc = 1;
	c->output.stats_interval_s = 10;
	c->output.checkpoint_interval_s = 60;
	c->output.checkpoint_fork = 1;
	c->warc.prefix = "crawl";
	c->warc.max_file_bytes = 1024u * MIB_TO_BYTES;
	c->warc.compression_level = 1;
	c->warc.cdxj = true;
	c->warc.history = true;
	share_settings(c);
	return 0;
}

void crawl_config_free(struct crawl_config *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < N_KEYS; i++)
		if (keys[i].type == T_STR || keys[i].type == T_SIEVE_IMPL ||
		    keys[i].type == T_PROXY || keys[i].type == T_WGET)
			field_string_replace((char *)c + keys[i].offset, NULL);
	for (size_t i = 0; i < c->crawl.n_domains; i++)
		free(c->crawl.domains[i]);
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

int crawl_config_parse_bool(const char *v, int *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };
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
	case 'k':
	case 'K':
		mult = 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
	case 'T':
		mult = TIB;
		end++;
		break;
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
	struct sieve_config sc = { .impl = name, .dir = NULL, .memory = 64u * 1024 * 1024 };
	sieve_t *s = NULL;
	int rc = sieve_open(&sc, NULL, NULL, &s, NULL, 0);
	if (rc == SIEVE_OK)
		sieve_close(s);
	return rc != SIEVE_ENOTSUP;
}

/* A string the configuration file can carry back: a value that starts
 * with ';' or '#', holds one after a space (an inline comment, ini_file.h) or
 * has space at either end would be read back otherwise. */
static bool ini_value_ok(const char *v)
{
	size_t n = strlen(v);
	if (n > 0 && (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1])))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((v[i] == ';' || v[i] == '#') && (i == 0 || isspace((unsigned char)v[i - 1])))
			return false;
	return true;
}

/* A host suffix is labels joined by single dots, none empty, spelled as
 * host names are (the letters, digits, '-' and '_' of ASCII, and the
 * bytes of UTF-8): an empty suffix would let every host in. */
static bool host_suffix_ok(const char *d)
{
	size_t label = 0;
	for (const unsigned char *q = (const unsigned char *)d; *q; q++) {
		if (*q == '.') {
			if (label == 0)
				return false;
			label = 0;
		} else if (*q < 0x80 && !ascii_is_alnum(*q) && *q != '-' && *q != '_') {
			return false;
		} else {
			label++;
		}
	}
	return label > 0;
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
		size_t dlen = strlen(tmp[n]);
		if (dlen > 0 && tmp[n][dlen - 1] == '.') /* a fully qualified name */
			tmp[n][dlen - 1] = '\0';
		if (!host_suffix_ok(tmp[n])) {
			snprintf(err, errlen, "domains: '%.*s' is not a host suffix", (int)(p - s),
			         s);
			n++;
			goto fail;
		}
		n++;
	}
	for (size_t i = 0; i < c->crawl.n_domains; i++)
		free(c->crawl.domains[i]);
	memcpy(c->crawl.domains, tmp, n * sizeof tmp[0]);
	c->crawl.n_domains = n;
	return CRAWL_CONFIG_OK;
fail:
	for (size_t i = 0; i < n; i++)
		free(tmp[i]);
	return CRAWL_CONFIG_ERR_BAD_VALUE;
}

/* A wget flag's joined value checked as the rule it makes (a regex
 * compiles), in a rule set made for the check alone. */
static enum crawl_config_err wget_rule_check(const struct key_def *k, enum url_rules_wget flag,
                                             const char *joined, char *err, size_t errlen)
{
	if (strlen(joined) > (size_t)k->max || !ini_value_ok(joined)) {
		snprintf(err, errlen,
		         "%s: bad value (at most %g bytes, no space at either end, no ';' or '#'"
		         " first or after a space: the file's comments)",
		         k->name, k->max);
		return CRAWL_CONFIG_ERR_BAD_VALUE;
	}
	struct url_rules *r = url_rules_create(NULL);
	if (!r)
		return CRAWL_CONFIG_ERR_NOMEM;
	char msg[CRAWL_CONFIG_ERR_MAX];
	enum url_rules_err e = url_rules_add_wget(r, flag, joined, msg, sizeof msg);
	url_rules_destroy(r);
	if (e == URL_RULES_OK)
		return CRAWL_CONFIG_OK;
	snprintf(err, errlen, "%s: %s", k->name, msg);
	return e == URL_RULES_ERR_NOMEM ? CRAWL_CONFIG_ERR_NOMEM : CRAWL_CONFIG_ERR_BAD_VALUE;
}

/* A wget flag's value joined to the one the key holds, kept if it checks. */
static enum crawl_config_err set_wget(struct crawl_config *c, const struct key_def *k,
                                      const char *value, char *err, size_t errlen)
{
	void *field = (char *)c + k->offset;
	enum url_rules_wget flag = (enum url_rules_wget)(
	        (k->offset - offsetof(struct crawl_config, crawl.rules_wget)) / sizeof(char *));
	char *joined = url_rules_wget_join(flag, field_string(field), value);
	if (!joined)
		return CRAWL_CONFIG_ERR_NOMEM;
	enum crawl_config_err rc = wget_rule_check(k, flag, joined, err, errlen);
	if (rc == CRAWL_CONFIG_OK)
		field_string_replace(field, joined);
	else
		free(joined);
	return rc;
}

/* The message for a value the key refuses. */
static void bad_value_message(const struct key_def *k, const char *value, char *err, size_t errlen)
{
	const char *key = k->name;
	switch (k->type) {
	case T_BOOL:
	case T_NOT_BOOL:
		snprintf(err, errlen, "%s: bad value '%s' (expected true/false)", key, value);
		break;
	case T_POLICY:
	case T_FAMILY:
	case T_ORDER: {
		char words[128] = "";
		size_t at = 0;
		for (size_t i = 0; i < N_CHOICES; i++) {
			if (choices[i].type != k->type)
				continue;
			if (at >= sizeof words)
				break;
			bool last = i + 1 == N_CHOICES || choices[i + 1].type != k->type;
			at += (size_t)snprintf(words + at, sizeof words - at, "%s%s",
			                       at == 0 ? ""
			                       : last  ? " or "
			                               : ", ",
			                       choices[i].word);
		}
		snprintf(err, errlen, "%s: bad value '%s' (expected %s)", key, value, words);
		break;
	}
	case T_SIZE:
		snprintf(err, errlen,
		         "%s: bad value '%s' (expected a size such as 64M: bytes with an optional"
		         " K/M/G/T suffix, at least %.0fK)",
		         key, value, k->min / 1024);
		break;
	case T_SIEVE_IMPL:
		snprintf(err, errlen,
		         "%s: bad value '%s' (no sieve implementation of that name;"
		         " the default is mercator)",
		         key, value);
		break;
	case T_PROXY:
		snprintf(err, errlen,
		         "%s: bad value '%s' (expected a proxy URL: http://HOST:PORT, https://,"
		         " socks4://, socks4a://, socks5:// or socks5h://; empty for none)",
		         key, value);
		break;
	case T_STR:
		snprintf(err, errlen,
		         "%s: bad value (length must be %g..%g, no space at either end, no ';'"
		         " or '#' first or after a space: the file's comments)",
		         key, k->min, k->max);
		break;
	default:
		snprintf(err, errlen, "%s: bad value '%s' (expected a number in %g..%g)", key,
		         value, k->min, k->max);
		break;
	}
}

/* Parses value as key k and stores it; BAD_VALUE leaves the field as it was. */
static enum crawl_config_err key_set(struct crawl_config *c, const struct key_def *k,
                                     const char *value, char *err, size_t errlen)
{
	void *field = (char *)c + k->offset;
	size_t len = strlen(value);
	double d;
	int b;
	switch (k->type) {
	case T_UINT:
	case T_MS:
	case T_S:
	case T_MIB:
		if (parse_number(value, k->min, k->max, &d) < 0 || d != (double)(uint64_t)d)
			return CRAWL_CONFIG_ERR_BAD_VALUE;
		field_store(field, k->size, (uint64_t)d * k->unit);
		return CRAWL_CONFIG_OK;
	case T_SIZE:
		if (parse_size(value, k->min, k->max, &d) < 0)
			return CRAWL_CONFIG_ERR_BAD_VALUE;
		field_store(field, k->size, (uint64_t)d * k->unit);
		return CRAWL_CONFIG_OK;
	case T_BOOL:
	case T_NOT_BOOL:
		if (crawl_config_parse_bool(value, &b) < 0)
			return CRAWL_CONFIG_ERR_BAD_VALUE;
		field_store(field, k->size, (uint64_t)(k->type == T_NOT_BOOL ? !b : b));
		return CRAWL_CONFIG_OK;
	case T_DOUBLE:
		if (parse_number(value, k->min, k->max, &d) < 0)
			return CRAWL_CONFIG_ERR_BAD_VALUE;
		memcpy(field, &d, sizeof d);
		return CRAWL_CONFIG_OK;
	case T_POLICY:
	case T_FAMILY:
	case T_ORDER: {
		const struct choice *ch = choice_find(k->type, value, 0);
		if (!ch)
			return CRAWL_CONFIG_ERR_BAD_VALUE;
		field_store(field, k->size, ch->value);
		return CRAWL_CONFIG_OK;
	}
	case T_STR:
	case T_SIEVE_IMPL:
	case T_PROXY: {
		if (len < (size_t)k->min || len > (size_t)k->max || !ini_value_ok(value) ||
		    (k->type == T_SIEVE_IMPL && !sieve_impl_known(value)) ||
		    (k->type == T_PROXY && !proxy_url_known(value)))
			return CRAWL_CONFIG_ERR_BAD_VALUE;
		char *copy = strdup(value);
		if (!copy)
			return CRAWL_CONFIG_ERR_NOMEM;
		field_string_replace(field, copy);
		return CRAWL_CONFIG_OK;
	}
	case T_DOMAINS: return set_domains(c, value, err, errlen);
	case T_WGET: return set_wget(c, k, value, err, errlen);
	}
	return CRAWL_CONFIG_ERR_BAD_VALUE;
}

enum crawl_config_err crawl_config_set(struct crawl_config *c, const char *section, const char *key,
                                       const char *value, char *err, size_t errlen)
{
	const struct key_def *k = NULL;
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].section, section) == 0 && strcmp(keys[i].name, key) == 0) {
			k = &keys[i];
			break;
		}
	if (!k) {
		snprintf(err, errlen, "unknown key '%s' in section [%s]", key, section);
		return CRAWL_CONFIG_ERR_UNKNOWN_KEY;
	}
	enum crawl_config_err rc = key_set(c, k, value, err, errlen);
	if (rc == CRAWL_CONFIG_ERR_BAD_VALUE && k->type != T_DOMAINS && k->type != T_WGET)
		bad_value_message(k, value, err, errlen);
	share_settings(c);
	return rc;
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
			return 0; /* keep the first error, the one ini_file_parse reports */
		snprintf(lc->err, lc->errlen, "[%s] %s", section, msg);
		lc->rc = e;
		return 0;
	}
	return 1;
}

enum crawl_config_err crawl_config_load(struct crawl_config *c, const char *path, char *err,
                                        size_t errlen)
{
	struct load_ctx lc = { c, path, err, errlen, CRAWL_CONFIG_OK, 0 };
	char msg[CRAWL_CONFIG_ERR_MAX] = "";
	lc.err = msg;
	lc.errlen = sizeof msg;
	int r = ini_file_parse(path, on_ini, &lc);
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

/* One "key = value" line, the value in the key's own unit. */
static void key_write(FILE *f, const struct crawl_config *c, const struct key_def *k)
{
	const void *field = (const char *)c + k->offset;
	fprintf(f, "%s = ", k->name);
	switch (k->type) {
	case T_UINT:
	case T_MS:
	case T_S:
	case T_MIB:
	case T_SIZE:
		fprintf(f, "%llu\n", (unsigned long long)(field_load(field, k->size) / k->unit));
		break;
	case T_BOOL:
	case T_NOT_BOOL:
		fprintf(f, "%s\n",
		        (field_load(field, k->size) != 0) != (k->type == T_NOT_BOOL) ? "true"
		                                                                     : "false");
		break;
	case T_DOUBLE: {
		double d;
		memcpy(&d, field, sizeof d);
		fprintf(f, "%.17g\n", d);
		break;
	}
	case T_POLICY:
	case T_FAMILY:
	case T_ORDER: {
		const struct choice *ch = choice_find(k->type, NULL, field_load(field, k->size));
		fprintf(f, "%s\n", ch ? ch->word : "");
		break;
	}
	case T_STR:
	case T_SIEVE_IMPL:
	case T_PROXY:
	case T_WGET: fprintf(f, "%s\n", field_string(field)); break;
	case T_DOMAINS:
		for (size_t d = 0; d < c->crawl.n_domains; d++)
			fprintf(f, "%s%s", d ? "," : "", c->crawl.domains[d]);
		fputc('\n', f);
		break;
	}
}

int crawl_config_write(const struct crawl_config *c, const char *path)
{
	FILE *f = fopen(path, "w");
	const char *section = "";
	int rc;

	if (!f)
		return -1;
	fprintf(f, "# The configuration of this crawl as it started (crawler crawl --resume\n"
	           "# reads it back; flags given with --resume override it).\n");
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(section, keys[i].section) != 0) {
			section = keys[i].section;
			fprintf(f, "\n[%s]\n", section);
		}
		key_write(f, c, &keys[i]);
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
	/* indexed by the enum's values, 0..4 */
	static const char *const messages[] = { "ok", "unknown key", "bad value",
		                                "cannot read file", "out of memory" };
	return (size_t)e < sizeof messages / sizeof messages[0] ? messages[e] : "unknown error";
}

int crawl_config_key(size_t i, const char **section, const char **name)
{
	if (i >= N_KEYS)
		return -1;
	*section = keys[i].section;
	*name = keys[i].name;
	return 0;
}
