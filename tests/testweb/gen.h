/*
 * The synthetic web: a pure function from (configuration, host index, path)
 * to a response. Nothing is stored; every byte is recomputed from a
 * splitmix64 stream keyed by (seed, host, resource), so the server, the
 * expected-set BFS and the dump agree by construction, and two runs with the
 * same seed produce the same bytes.
 *
 * Invariants: a host index is valid iff 0 <= i < hosts; every link a page
 * carries is reported to the caller in canonical form (host index or -1 for
 * off-web, path with query, no fragment) next to the href string written
 * into the HTML, so the BFS never has to parse HTML it generated. Bodies are
 * capped (pages < 64 KB); all outputs are heap buffers owned by the caller.
 *
 * Workload: the server generates each resource once and caches the bytes;
 * the BFS generates each reachable page once per run.
 */
#ifndef TESTS_TESTWEB_GEN_H
#define TESTS_TESTWEB_GEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TW_MAX_FAULTS 64
#define TW_NAME_MAX 64
#define TW_FLAKY_ROBOTS_FAILS 2 /* robots.txt requests a robotsflaky host fails */
#define TW_USERINFO_LINKS 20    /* /uK links of a userinfo host's front page */

enum tw_fault {
	TW_FAULT_NONE = 0,
	TW_FAULT_SLOW,         /* body at 1 byte per second */
	TW_FAULT_ENDLESS,      /* chunked body that never ends */
	TW_FAULT_HUGEHEADERS,  /* ~1 MiB of header lines */
	TW_FAULT_GZIPBOMB,     /* small gzip inflating to 2 GiB */
	TW_FAULT_BADCHUNK,     /* invalid chunk size */
	TW_FAULT_RESET,        /* 1000 body bytes then RST */
	TW_FAULT_TRAP,         /* infinite calendar /cal/Y/M/ */
	TW_FAULT_429,          /* 429 with Retry-After */
	TW_FAULT_ROBOTSREDIR,  /* robots.txt: 5 redirects across hosts to Disallow: / */
	TW_FAULT_ROBOTSFLAKY,  /* robots.txt: 503 to the first TW_FLAKY_ROBOTS_FAILS */
	TW_FAULT_ROBOTSREDIR6, /* robotsredir with 6 redirects (one past RFC 9309's 5) */
	TW_FAULT_CHUNKED,      /* every response chunked (gzip when accepted) */
	TW_FAULT_BR,           /* 200s in Content-Encoding br when accepted, half chunked */
	TW_FAULT_KACLOSE,      /* a kept-alive connection's second request: closed unanswered */
	TW_FAULT_SESSION,      /* normal host plus a session-ID trap /sess?sid=N */
	TW_FAULT_USERINFO,     /* front page links /uK as http://uK@hI.D:PORT/uK and page 1
	                          through the name hI.D. (final dot); robots kind 3 */
	/* robots.txt that cannot be had; its other paths are a normal host's */
	TW_FAULT_ROBOTSZSTD,    /* 200, Content-Encoding: zstd (not decodable) */
	TW_FAULT_ROBOTSBADGZIP, /* 200, Content-Encoding: gzip, a corrupt stream */
	TW_FAULT_ROBOTSUTF8,    /* 200, Content-Encoding: utf-8 (not a coding) */
	TW_FAULT_ROBOTS429,     /* 429 with Retry-After: 1, forever */
	TW_FAULT_ROBOTSNX,      /* 301 to a host name the DNS does not know */
};

/* Parsed once from the command line; copied by nobody, read by everyone. */
struct tw_config {
	uint64_t seed;
	long hosts;
	long pages;
	int ips;
	int http_port;
	long seed_hosts;          /* -1 = all hosts */
	char domain[TW_NAME_MAX]; /* lowercase */
	char robots_agent[TW_NAME_MAX];
	char crawl_delay[16];
	int nfaults;
	long fault_host[TW_MAX_FAULTS];
	enum tw_fault fault_mode[TW_MAX_FAULTS];
	int sitemaps; /* --expected: the crawler follows robots.txt's sitemaps */
	/* Pages embed requisites (images, scripts, stylesheets, on their host
	 * and on TW_REQ_CDN_HOSTS extra hosts hN and hN+1, N = hosts, which no
	 * page links), and --expected is for a crawler that fetches them with
	 * requisites_hops = 1 and the domains restricted to h0..hN-1. */
	int requisites;
	/* Hosts with robots kind 5 also list three faulty sitemaps: one over a
	 * small URL limit (TW_BIG_LOCS entries), one padded past a small byte
	 * limit (TW_HUGE_LOCS entries of about 300 bytes), one malformed after
	 * TW_BAD_LOCS entries; --expected follows those a crawler reads with
	 * sitemap_max_urls = sitemap_max_urls (its entries beyond are not), and
	 * leaves the padded one's pages out (where a byte limit cuts depends on
	 * the parser's buffering: the test judges them itself). */
	int sitemap_faults;
	long sitemap_max_urls; /* --expected: entries a crawler reads per sitemap */
	int ipv6;              /* hosts on ::1 too (tw_host_stack) */
	/* Recrawls: the web as it stands at `epoch` (0: as first generated).
	 * At each step e = 1, 2, ... each HTML page changes with probability
	 * change_pct / 100, drawn from (seed, host, page, e): its version is
	 * the last step <= epoch that changed it (tw_page_version). A changed
	 * page carries one more paragraph naming its version; its links, and
	 * so the expected set, stay the same. */
	long epoch;
	int change_pct;
	/* Pages that repeat another page's payload, as boilerplate and soft-404
	 * pages do: page j > TW_COPY_STEP of a host is, with probability
	 * copy_pct / 100 (drawn from seed, host and page), served as the very
	 * bytes and validators of page j - TW_COPY_STEP, when both lie in one
	 * directory (so each of its links resolves the same from either URL);
	 * a chain of copies leads to the first page that is not one
	 * (tw_page_source). Its links, and so the expected set, are those
	 * bytes'. */
	int copy_pct;
	/* Topical pages (0: none, else 2..TW_TOPICS_MAX topics): page j of
	 * host i (and its query variants) is about topic (i + j) % topics
	 * (tw_page_topic); about a fifth of its text's words are its topic's
	 * (tw_topic_word), a fiftieth any topic's; four in five of its
	 * links to pages chosen at random go to a page of its own topic. */
	int topics;
};

#define TW_TOPICS_MAX 12
#define TW_TOPIC_WORDS 6
/* The topic of page j of host i (0..topics - 1), or -1 without topics. */
long tw_page_topic(const struct tw_config *cfg, long i, long j);
/* Word k (< TW_TOPIC_WORDS) of topic t (< TW_TOPICS_MAX), and its name. */
const char *tw_topic_word(long t, int k);
const char *tw_topic_name(long t);

#define TW_COPY_STEP 5

/* 2024-01-01T00:00:00Z: the Last-Modified of a version 0 resource; each
 * version adds a day. */
#define TW_EPOCH0_UNIX 1704067200

/* The address families a host is served over (DNS records and listeners).
 * Without --ipv6 every host is TW_STACK_V4. */
enum tw_stack {
	TW_STACK_V4 = 0,  /* A 127.0.1.(1 + I % K) */
	TW_STACK_V6,      /* AAAA ::1 only */
	TW_STACK_DUAL,    /* both: A 127.0.1.(1 + I % K) and AAAA ::1 */
	TW_STACK_DEAD_V4, /* A 127.0.2.(1 + I % K), where nothing listens, and
	                      AAAA ::1: a client preferring IPv4 must fall back */
};

#define TW_BIG_LOCS 40
#define TW_HUGE_LOCS 100
#define TW_BAD_LOCS 5

/* Extra hosts a --requisites web serves requisites from. */
#define TW_REQ_CDN_HOSTS 2

/* A link a page carries, canonical form. host = -1: off the web (unknown
 * host or another domain; never followed). */
struct tw_link {
	long host;
	char path[160];
};

/* One generated response. body is heap memory owned by the caller
 * (free with tw_resource_clear). location is set for 3xx. */
struct tw_resource {
	int status;
	/* Validators of a 200 (empty etag: none): a weak entity tag that
	 * changes with the content, and Last-Modified, unix seconds. */
	char etag[32];
	int64_t last_modified;
	const char *content_type; /* static string */
	char *body;
	size_t body_len;
	char location[512];
	struct tw_link loc;   /* canonical Location target for 3xx */
	int gzip_ok;          /* page is in the gzip-encoded share */
	unsigned retry_after; /* 0 = none */
};

void tw_config_defaults(struct tw_config *cfg);
/* The page whose bytes page j of host i serves (--copy-pct): j itself, or
 * the page it copies. */
long tw_page_source(const struct tw_config *cfg, long i, long j);
/* 0 ok, -1 bad value. */
int tw_config_set_domain(struct tw_config *cfg, const char *domain);
int tw_config_set_robots_agent(struct tw_config *cfg, const char *agent);
int tw_config_set_crawl_delay(struct tw_config *cfg, const char *secs);
/* spec "hI=MODE"; 0 ok, -1 bad spec or too many faults. */
int tw_config_add_fault(struct tw_config *cfg, const char *spec);
/* 0 if consistent (faults name existing hosts), -1 otherwise. */
int tw_config_check(const struct tw_config *cfg);
/* Nothing is heap-allocated today; kept for the create/release pairing. */
void tw_config_release(struct tw_config *cfg);

const char *tw_fault_name(enum tw_fault f);
enum tw_fault tw_host_fault(const struct tw_config *cfg, long host);

/* Host name (case-insensitive, optional ":port" NOT accepted; one final
 * dot accepted, as DNS and common servers do) -> index. Returns 0 and sets
 * *idx, or -1 if the name is not hI.domain with I < N (N +
 * TW_REQ_CDN_HOSTS with requisites). */
int tw_host_parse(const struct tw_config *cfg, const char *name, size_t len, long *idx);
/* IPv4 address of host idx in host byte order (127.0.1.(1 + idx % ips),
 * 127.0.2.x for TW_STACK_DEAD_V4); 0 for TW_STACK_V6 (no A record). */
uint32_t tw_host_addr(const struct tw_config *cfg, long idx);
/* The families host idx is served over: with --ipv6, by idx % 4 in the
 * order of enum tw_stack (h0 IPv4 only, h1 IPv6 only, h2 both, h3 both with
 * a dead IPv4 address); else TW_STACK_V4. */
enum tw_stack tw_host_stack(const struct tw_config *cfg, long idx);
/* robots.txt kind 0..9 of a host (see --help). */
int tw_robots_kind(const struct tw_config *cfg, long host);

/* 1 if host's robots.txt allows path (with its query) for the agent whose
 * product token is tok, as the expected set judges it (RFC 9309: tok's
 * group, else '*'; longest match, Allow on ties; a 5xx robots.txt allows
 * nothing); else 0. */
int tw_robots_allowed(const struct tw_config *cfg, long host, const char *tok, const char *path);
/* Which variant page path (len bytes, with its query) is: 1 or 2 for
 * PAGE?q=1 and PAGE?q=2, *page set to the page's index; 0 for any other
 * path. The two variants of a page are near-duplicates: the same text
 * but for numbers, which SimHash ignores. */
int tw_variant_of(const struct tw_config *cfg, const char *path, size_t len, long *page);

/* Generate the response for GET path (with query) on host. path need not
 * be NUL-terminated. Fault modes are NOT applied here except the trap's
 * calendar pages (the server applies the others). If links is non-NULL,
 * up to links_cap canonical links of an HTML body are stored there and
 * *nlinks set (only the server's BFS uses it). Returns 0, or -1 on
 * allocation failure. res->body is owned by the caller. */
int tw_resource_get(const struct tw_config *cfg, long host, const char *path, size_t path_len,
                    struct tw_resource *res, struct tw_link *links, size_t links_cap,
                    size_t *nlinks);
void tw_resource_clear(struct tw_resource *res);

/* The version of page j of host at epoch (see tw_config.epoch): 0 when
 * it never changed. */
long tw_page_version(const struct tw_config *cfg, long host, long page, long epoch);

/* --changed: the URLs of the expected set (for agent) whose pages differ
 * between epoch `since` and cfg->epoch, sorted, one a line. */
int tw_changed_write(const struct tw_config *cfg, const char *agent, long since, FILE *out);

/* Small deterministic HTML filler of exactly len bytes (for endless /
 * slow bodies). */
void tw_filler(uint64_t key, char *out, size_t len);

/* Gzip bomb: returns a static buffer (built once, thread-unsafe) holding a
 * gzip member that inflates to *inflated bytes of zeros. NULL on failure. */
const unsigned char *tw_gzip_bomb(size_t *len, uint64_t *inflated);

/* CLI modes; 0 ok, -1 on error (message on stderr). */
int tw_seeds_write(const struct tw_config *cfg, FILE *out);
int tw_expected_write(const struct tw_config *cfg, const char *agent, FILE *out);
int tw_hosts_info_write(const struct tw_config *cfg, FILE *out);
int tw_dump(const struct tw_config *cfg, const char *dir);

#endif
