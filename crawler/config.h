/*
 * config.h: the crawl's configuration, parsed once into one struct.
 *
 * Data structure. `struct crawl_config` holds every setting of a crawl, each
 * with a default (crawl_config_default). Settings come from an INI file
 * (sections [crawl] [politeness] [fetch] [dns] [frontier] [sieve] [parse]
 * [output],
 * read with inih) and then from command-line flags, which override the same
 * key: both go through crawl_config_set("section", "key", "value"), so a
 * flag and a file line are validated by the same code. Every key is
 * documented in configs/default.conf.
 *
 * Invariants: after crawl_config_set succeeds the struct holds only valid
 * values (ranges checked); an unknown key or a bad value is refused with a
 * message naming the key (and file:line for files) and leaves the struct
 * unchanged. Strings are owned by the struct (crawl_config_free frees them).
 *
 * Workload: parsed once at start-up; the fetch loop and parse threads read
 * it afterwards without locks (it is never written again).
 */
#ifndef CRAWLER_CONFIG_H
#define CRAWLER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define CRAWL_CONFIG_MAX_DOMAINS 256
#define CRAWL_CONFIG_ERR_MAX 512

enum crawl_config_err {
	CRAWL_CONFIG_OK = 0,
	CRAWL_CONFIG_ERR_UNKNOWN_KEY = 1, /* no such section/key */
	CRAWL_CONFIG_ERR_BAD_VALUE = 2,   /* value out of range or not parsable */
	CRAWL_CONFIG_ERR_IO = 3,          /* the file could not be opened */
	CRAWL_CONFIG_ERR_NOMEM = 4,       /* allocation failed */
};

struct crawl_config {
	/* [crawl] */
	uint64_t max_pages;        /* 0 = unlimited */
	uint64_t max_time_ms;      /* 0 = unlimited */
	uint32_t max_depth;        /* 0 = unlimited */
	char *user_agent;
	char *domains[CRAWL_CONFIG_MAX_DOMAINS]; /* allowed host suffixes */
	size_t n_domains;
	int any_domain;            /* 1: no domain restriction at all */
	int quiet;
	/* [politeness] */
	int policy;                /* enum delay_policy_kind */
	uint64_t host_delay_ms;
	uint64_t ip_delay_ms;
	int ip_politeness;
	double ratio;
	uint64_t visit_budget_ms;
	uint64_t min_delay_ms;
	uint64_t max_delay_ms;
	uint32_t max_urls_per_visit;
	uint64_t crawl_delay_cap_ms;
	uint64_t backoff_base_ms;
	uint64_t backoff_max_ms;
	uint32_t max_consecutive_errors;
	uint64_t retry_after_cap_ms;
	int obey_robots;
	/* [fetch] */
	uint32_t max_connections;
	uint64_t timeout_ms;
	uint64_t connect_timeout_ms;
	uint64_t low_speed_bytes;  /* abort below this many bytes/s ... */
	uint64_t low_speed_time_s; /* ... for this long */
	uint64_t max_body_bytes;
	uint64_t max_header_bytes;
	int allow_private_networks;
	int accept_encoding;       /* send Accept-Encoding: gzip, deflate */
	/* [dns] */
	char *dns_server;          /* ADDR[:PORT]; required to crawl */
	uint64_t dns_cache_ttl_s;  /* cap on answer TTLs kept */
	uint64_t dns_timeout_ms;
	uint32_t dns_max_pending;  /* distinct names resolving at once */
	uint32_t dns_negative_ttl_s; /* how long a failed lookup is remembered */
	/* [frontier] */
	uint64_t frontier_mem_mb;
	char *spill_dir;
	uint64_t max_urls_per_host;
	uint32_t max_hosts;
	uint32_t max_url_len;
	uint32_t max_path_segments;
	uint32_t max_segment_repeats;
	/* [sieve] */
	char *sieve_impl;          /* sieve implementation name (sieve_config.impl) */
	uint64_t sieve_memory;     /* heap budget of the sieve, bytes */
	uint64_t sieve_buffer_urls;/* tests: URLs per sieve buffer; 0 = from memory */
	uint64_t sieve_meta_memory;/* bound of the depth/via side table, bytes */
	/* [parse] */
	uint32_t parse_threads;    /* 0 = number of cores */
	uint32_t parse_queue;      /* responses waiting for a parse thread */
	uint32_t max_links;
	int near_dup;              /* SimHash near-duplicate flagging */
	/* [output] */
	char *output_dir;
	int warc;                  /* write WARC files */
	uint64_t warc_max_mb;
	uint32_t warc_level;       /* gzip level of WARC records, 1 (fast) .. 9 */
	uint32_t stats_interval_s; /* pages/s sampling period in stats.json */
	uint32_t checkpoint_interval_s; /* seconds between checkpoints; 0 = only at the end */
};

/* Fills *c with the defaults (strings allocated); 0 or -1 (no memory). */
int crawl_config_default(struct crawl_config *c);
/* Frees the strings; the struct may be reused after crawl_config_default. */
void crawl_config_free(struct crawl_config *c);

/* Sets section.key = value. On error, err (errlen bytes) gets a message
 * naming the key; *c is unchanged. */
enum crawl_config_err crawl_config_set(struct crawl_config *c, const char *section,
                                       const char *key, const char *value,
                                       char *err, size_t errlen);
/* Reads an INI file; stops at the first bad line: err gets
 * "FILE:LINE: key: message". */
enum crawl_config_err crawl_config_load(struct crawl_config *c, const char *path,
                                        char *err, size_t errlen);
/* Writes every key with its current value as an INI file that
 * crawl_config_load reads back to the same settings (a resumed crawl starts
 * from the configuration its first run saved). 0, or -1 with errno set. */
int crawl_config_write(const struct crawl_config *c, const char *path);
const char *crawl_config_strerror(enum crawl_config_err e);

#endif
