/*
 * config.h: the crawl's configuration, parsed once into one struct that
 * embeds each module's own config struct.
 *
 * Data structure. `struct crawl_config` holds every setting of a crawl:
 * the config structs of the modules it drives (frontier, scope, politeness,
 * sieve, fetch, dns, warc, the link extractor and its URL options), filled
 * in place, plus small crawl-level structs for what no module owns (the
 * crawl's limits, the parse pool, the output folder). A table of keys in
 * config.c (section, name, type, field, unit, range) drives both the INI
 * reader (ini_file.h; sections [crawl] [politeness] [fetch] [dns] [frontier]
 * [sieve] [parse] [output]) and the command-line flags, which override the
 * same key: both go through crawl_config_set("section", "key", "value"), so
 * a flag and a file line are validated by the same code. Each key is stored
 * in the unit of the field it fills ([politeness] host_delay_ms lands in
 * politeness.host_delay_us, x1000) and written back in its own unit.
 * configs/default.conf documents exactly the keys of the table (a test
 * checks it), so a key that nothing reads cannot exist.
 *
 * Invariants:
 *  - after crawl_config_set succeeds the struct holds only valid values
 *    (ranges checked); an unknown key or a bad value is refused with a
 *    message naming the key (and file:line for files) and leaves the struct
 *    unchanged.
 *  - a setting read by several modules is stored once, in the field its key
 *    names, and copied to the others after every change: [crawl] max_depth
 *    (scope.max_depth -> frontier.max_depth), [frontier] max_url_len
 *    (scope.max_url_len -> url.max_len, sieve.max_url_len), [crawl]
 *    user_agent (crawl.user_agent -> fetch, warc), [output] dir (-> warc.dir),
 *    [crawl] domains and any_domain (-> scope.domains: none when any_domain,
 *    or when no domain is given: the crawl then takes the seeds' domains),
 *    [crawl] rules, accept, reject... (-> rules).
 *  - wget's keys (accept, reject, accept_regex, reject_regex,
 *    include_directories, exclude_directories) add up as wget's flags do:
 *    setting one again joins the values (url_rules_wget_join), so a file's
 *    list and a flag's both hold; an empty value clears it.
 *  - strings (user agent, domains, DNS servers, resolv.conf, CA file,
 *    spill folder, sieve
 *    implementation, output folder) are owned by the struct and freed by
 *    crawl_config_free; the module structs point at them, and links.url_options
 *    and scope.domains point into the struct itself: never copy a
 *    crawl_config by value (copy a module struct out of it instead).
 *  - fields no key fills (the modules' callbacks, the sieve's folder, the
 *    spill folder when spill_dir is empty) are the crawl's to set at run time,
 *    in its own copy of the module struct.
 *
 * Workload: parsed once at start-up; the fetch loop and parse threads read
 * it afterwards without locks (it is never written again).
 */
#ifndef CRAWLER_CONFIG_CONFIG_H
#define CRAWLER_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"
#include "crawler/store/warc.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "frontier/url.h"
#include "frontier/url_rules.h"
#include "parse/links.h"
#include "politeness/delay_policy.h"
#include "sieve/sieve.h"

#define CRAWL_CONFIG_MAX_DOMAINS 256
#define CRAWL_CONFIG_ERR_MAX 512

enum crawl_config_err {
	CRAWL_CONFIG_OK = 0,
	CRAWL_CONFIG_ERR_UNKNOWN_KEY = 1, /* no such section/key */
	CRAWL_CONFIG_ERR_BAD_VALUE = 2,   /* value out of range or not parsable */
	CRAWL_CONFIG_ERR_IO = 3,          /* the file could not be opened */
	CRAWL_CONFIG_ERR_NOMEM = 4,       /* allocation failed */
};

/* [crawl] (and [politeness] obey_robots): what the crawl loop itself
 * enforces. */
struct crawl_limits {
	uint64_t max_pages;                      /* 0 = unlimited */
	uint64_t max_time_ms;                    /* 0 = unlimited */
	char *user_agent;                        /* also the robots.txt product token */
	char *domains[CRAWL_CONFIG_MAX_DOMAINS]; /* allowed host suffixes */
	size_t n_domains;
	int any_domain;             /* 1: no domain restriction at all */
	int sitemaps;               /* follow robots.txt's Sitemap: lines (and their indexes) */
	int sitemap_priority;       /* a sitemap entry's <priority> is its URL's tier */
	uint64_t sitemap_max_urls;  /* entries read per sitemap file (the protocol's 50,000) */
	uint64_t sitemap_max_bytes; /* uncompressed bytes read per sitemap file (50 MB) */
	int page_requisites;        /* also fetch what pages embed (images, scripts, CSS...) */
	uint32_t requisites_hops;   /* hops an embed may lie off the allowed
	                             domains (parse_jobs.h) */
	int quiet;                  /* no progress line, no summary */
	int obey_robots;            /* fetch robots.txt first and obey it (the crawl does,
	                    not the politeness module) */
	/* [politeness]: robots.txt misses (unreachable, undecodable) in a row
	 * that retire a host; 0 = never */
	uint32_t robots_max_attempts;
	/* [politeness]: URLs a visit drops as robots-disallowed before it
	 * gives the loop a turn; 0 = no bound */
	uint32_t max_disallowed_per_turn;
	uint32_t max_redirects; /* [fetch]: redirects followed along one chain
	                           (the fetch engine follows none itself) */
	char *rules;            /* the URL rules file, "" none */
	char *focus;            /* the focus terms file (parse/focus.h), "" none */
	double focus_threshold; /* a page's score from which it is on-topic (fraction of words) */
	char *rules_wget[URL_RULES_WGET_COUNT]; /* wget's flags as keys (accept...) */
	/* a sitemap tag longer, or of more attributes, makes it malformed */
	uint64_t sitemap_max_tag_bytes, sitemap_max_attributes;
	int trace_visits; /* each change of a host's visit state on stderr */
};

/* [parse]: the pool of parse threads and what it does per page. */
struct crawl_parse {
	uint32_t threads; /* 0 = number of cores */
	uint32_t queue;   /* answers waiting unstored (parse, writer) before no transfer starts */
	int near_dup;     /* SimHash near-duplicate flagging */
	uint64_t near_dup_memory; /* budget of the near-duplicate store, bytes */
};

/* [output] */
struct crawl_output {
	char *dir;
	int warc;                       /* write WARC files (warc below) */
	int wacz;                       /* package the crawl as a WACZ at its end */
	uint32_t stats_interval_s;      /* pages/s sampling period in stats.json */
	uint32_t checkpoint_interval_s; /* seconds between checkpoints; 0 = only at the end */
	int checkpoint_fork;            /* a copy of the process writes the snapshot
	                                   (crawl_checkpoint.h) */
	char *metrics;                  /* live figures over HTTP: "PORT", "ADDR:PORT"; "" off */
	char *previous;                 /* earlier crawls to recrawl against: output
	                                   folders or CDXJ indexes, joined by ','
	                                   (archive/previous.h); "" none */
};

/* [cluster]: joining a crawl shared by several agents through Redis
 * (crawler/crawl_cluster.h); redis "" is a crawl of one process. */
struct crawl_cluster_config {
	char *redis;       /* redis://HOST:PORT[/PREFIX], or "" */
	char *agent;       /* this agent's name */
	char *assign;      /* perm, minhash or consistent */
	uint32_t lease_ms; /* membership lease */
	uint32_t window;   /* URLs taken from the inbox and not yet acked, at most */
};

struct crawl_config {
	struct crawl_limits crawl;
	struct crawl_cluster_config cluster;
	struct politeness_config politeness;
	struct fetch_config fetch;
	struct dns_config dns;
	struct frontier_config frontier;
	struct scope_config scope;
	struct url_rules_config rules; /* points at crawl.rules, crawl.rules_wget */
	struct url_options url;        /* the crawl keys of seeds, links and redirects */
	struct sieve_config sieve;
	uint64_t link_meta_memory; /* [sieve] meta_memory: bound of the depth/via
	                              side table (link_meta.h), bytes */
	struct crawl_parse parse;
	struct links_config links;
	struct crawl_output output;
	struct warc_config warc;
};

/* Fills *c with the defaults (strings allocated); 0 or -1 (no memory). */
int crawl_config_default(struct crawl_config *c);
/* Frees the strings; the struct may be reused after crawl_config_default. */
void crawl_config_free(struct crawl_config *c);

/* Sets section.key = value. On error, err (errlen bytes) gets a message
 * naming the key; *c is unchanged. */
enum crawl_config_err crawl_config_set(struct crawl_config *c, const char *section, const char *key,
                                       const char *value, char *err, size_t errlen);
/* Reads an INI file; stops at the first bad line: err gets
 * "FILE:LINE: key: message". */
enum crawl_config_err crawl_config_load(struct crawl_config *c, const char *path, char *err,
                                        size_t errlen);
/* Writes every key with its current value as an INI file that
 * crawl_config_load reads back to the same settings (a resumed crawl starts
 * from the configuration its first run saved). 0, or -1 with errno set. */
int crawl_config_write(const struct crawl_config *c, const char *path);
const char *crawl_config_strerror(enum crawl_config_err e);

/* A boolean value as the configuration writes it: "1", "true", "yes", "on"
 * set *out to 1; "0", "false", "no", "off" to 0 (any case). 0, or -1 on
 * anything else (*out unchanged). Shared with the audit's own config. */
int crawl_config_parse_bool(const char *v, int *out);

/* The keys, in table order, for tests and documentation: *section and *name
 * of key i (static strings); 0, or -1 when i is past the last key. */
int crawl_config_key(size_t i, const char **section, const char **name);

#endif
