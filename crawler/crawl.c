/*
 * crawl.c: `crawler crawl`: command line -> configuration -> crawl_run.
 *
 * Precedence: defaults < the -c CONFIG file < command-line flags. Each flag
 * is the same key as in the file (crawl_config_set), so both are validated
 * by one table; bad values exit 2 naming the file, line and key (or flag).
 */
#include <errno.h>
#include <ctype.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>

#include "crawler/archive/previous.h"
#include "crawler/config/config.h"
#include "crawler/crawl_run.h"
#include "frontier/base/tools.h"
#include "frontier/base/array.h"

#define MAX_SEEDS 1000000
#define MAX_OVERRIDES 64
/* Descriptors kept for all but the connections: c-ares, WARC, log, sieve
 * and spill files, checkpoints, metrics clients. */
#define FD_RESERVE 128

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: crawler crawl [SEED_URL...] [--seeds FILE] [-c CONFIG] [-o DIR] [OPTIONS]\n"
	        "\n"
	        "Crawls from the seed URLs, politely (robots.txt, per-host and per-IP delays),\n"
	        "writing WARC files, crawl.log and stats.json into DIR.\n"
	        "\n"
	        "  -c, --config FILE         INI configuration (see configs/default.conf)\n"
	        "  -o, --output DIR          output directory (default crawl-out)\n"
	        "      --seeds FILE          seed URLs, one per line ('#' comments)\n"
	        "      --max-pages N         stop after N fetched pages (0 = no limit)\n"
	        "      --max-time SECS       stop after SECS seconds (0 = no limit)\n"
	        "      --max-depth N         links deeper than N are not followed (0 = no limit)\n"
	        "      --max-connections N   transfers in flight\n"
	        "      --host-delay MS       fixed policy: rest per host between visits\n"
	        "      --ip-delay MS         rest per IP address between visits\n"
	        "      --policy fixed|ratio|adaptive  delay policy (ratio: keep-alive visits,\n"
	        "                            wait s'/p; adaptive: follows response times)\n"
	        "      --user-agent UA       User-Agent (name a contact!)\n"
	        "      --domains D1,D2       stay on these domains (default: the seeds'\n"
	        "                            registrable domains)\n"
	        "      --rules FILE          URL rules, first match wins (`crawler rules`)\n"
	        "      --order bfs|depth|focused  each host's URLs: first seen first (bfs),\n"
	        "                            the fewest links from a seed first, or links\n"
	        "                            of the pages --focus scores best first; rule\n"
	        "                            priorities outrank each (bfs)\n"
	        "      --focus FILE          focus terms, one a line (TERM [WEIGHT]): each\n"
	        "                            HTML page is scored (crawl.log, stats.json)\n"
	        "  -A, --accept LIST         wget's: only file names with these suffixes or\n"
	        "                            globs (pages .htm/.html and directories pass)\n"
	        "  -R, --reject LIST         wget's: not file names with these suffixes/globs\n"
	        "      --accept-regex RE     wget's: only URLs RE matches (repeatable: any)\n"
	        "      --reject-regex RE     wget's: not URLs RE matches (repeatable)\n"
	        "  -I, --include-directories LIST  wget's: only URLs in these directories\n"
	        "  -X, --exclude-directories LIST  wget's: not URLs in these directories\n"
	        "      --dns-server S1[,S2...]  the DNS servers asked, in order: ADDR, ADDR:PORT,\n"
	        "                            IPV6 or [IPV6]:PORT (default: /etc/resolv.conf's)\n"
	        "      --resolv-conf FILE    take the DNS servers from FILE's nameserver lines\n"
	        "                            (port 53 only) instead of /etc/resolv.conf\n"
	        "      --prefer-family ipv4|ipv6  the address family tried first when a host\n"
	        "                            has both (default ipv4; the other on a failed\n"
	        "                            connect)\n"
	        "      --ca-file FILE        trust the CAs of this PEM file (default: the "
	        "system's)\n"
	        "      --proxy URL           fetch through this proxy: http://HOST:PORT or\n"
	        "                            socks5://, socks5h://, socks4://, socks4a://\n"
	        "      --no-proxy LIST       hosts that bypass it (default: $no_proxy)\n"
	        "      --insecure            accept any TLS certificate (default: verify, and\n"
	        "                            count failures as tls-cert)\n"
	        "      --allow-private-networks  allow private/loopback addresses (local tests)\n"
	        "      --parse-threads N     parse threads (0 = the cores less one, at least 1)\n"
	        "      --set SECTION.KEY=VALUE  any configuration key\n"
	        "      --checkpoint-interval SECONDS  between checkpoints (default 60; 0: only\n"
	        "                            at a graceful stop and at the end)\n"
	        "      --resume              continue the crawl in DIR (-o) from its last\n"
	        "                            checkpoint, after a stop, kill -9 or power cut;\n"
	        "                            seeds and configuration come from DIR (flags\n"
	        "                            given here override that configuration)\n"
	        "      --sitemaps on|off     follow the sitemaps robots.txt lists (off)\n"
	        "      --page-requisites     also fetch what pages embed: images, scripts,\n"
	        "                            stylesheets and their url()s (off)\n"
	        "      --previous PATH       recrawl against an earlier crawl: its output\n"
	        "                            folder or its index.cdxj (given again: several,\n"
	        "                            the last one's capture of a URL wins); its pages\n"
	        "                            are seeds, asked for conditionally; unchanged\n"
	        "                            ones are stored as revisits\n"
	        "      --wacz                package the crawl as DIR/crawl.wacz at its end\n"
	        "      --cluster redis://HOST:PORT[/PREFIX]\n"
	        "                            join the crawl PREFIX shared by several agents\n"
	        "      --agent NAME          this agent's name in the cluster\n"
	        "      --assign perm|minhash|consistent\n"
	        "                            how hosts are assigned to agents (consistent)\n"
	        "      --metrics [ADDR:]PORT live figures over HTTP: /metrics (Prometheus),\n"
	        "                            /status (JSON); ADDR defaults to 127.0.0.1;\n"
	        "                            steering: POST /seeds, /rules, /pause, /resume,\n"
	        "                            /hosts/HOST/delay?ms=N, GET /hosts/HOST (also\n"
	        "                            files in DIR/action/: README, Steering a crawl)\n"
	        "  -q, --quiet               no progress line, no summary\n"
	        "  -h, --help                this text\n"
	        "\n"
	        "exit codes: 0 crawl finished (frontier exhausted or a limit reached);\n"
	        "            1 runtime failure (output directory, network setup, I/O);\n"
	        "            2 usage or configuration error; 3 stopped by a second SIGINT.\n"
	        "A first SIGINT stops gracefully: no new transfers, in-flight ones get a few\n"
	        "seconds, WARC/log are flushed, a checkpoint and stats.json written.\n");
}

/* A configuration key the command line sets: "SECTION.NAME" cut at its
 * dot into section and key, both in one owned copy. */
struct override {
	char *section;
	const char *key, *value;
};

/* "SECONDS" -> milliseconds string. */
static int secs_to_ms(const char *v, char *buf, size_t cap)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end != '\0' || d < 0 || d > 1e9)
		return -1;
	snprintf(buf, cap, "%.0f", d * 1000.0);
	return 0;
}

static int read_seeds(const char *path, char ***seeds, size_t *n, size_t *cap)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "crawler crawl: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t lcap = 0;
	ssize_t len;
	int rc = 0;
	while ((len = getline(&line, &lcap, f)) >= 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
		                   line[len - 1] == ' ' || line[len - 1] == '\t'))
			line[--len] = '\0';
		char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (*s == '\0' || *s == '#')
			continue;
		if (*n == MAX_SEEDS) {
			fprintf(stderr, "crawler crawl: %s: more than %d seeds\n", path, MAX_SEEDS);
			rc = -1;
			break;
		}
		if (*n == *cap) {
			size_t nc = *cap ? *cap * 2 : 64;
			char **ns = realloc(*seeds, nc * sizeof *ns);
			if (!ns) {
				rc = -1;
				break;
			}
			*seeds = ns;
			*cap = nc;
		}
		(*seeds)[*n] = strdup(s);
		if (!(*seeds)[*n]) {
			rc = -1;
			break;
		}
		(*n)++;
	}
	free(line);
	fclose(f);
	return rc;
}

/* Lowercases the scheme and host of a seed and checks it is http(s). */
static int check_seed(char *s)
{
	if (strncasecmp(s, "http://", 7) != 0 && strncasecmp(s, "https://", 8) != 0)
		return -1;
	char *p = strstr(s, "://") + 3;
	for (char *q = s; q < p; q++)
		*q = (char)tolower((unsigned char)*q);
	for (; *p && *p != '/' && *p != '?' && *p != '#'; p++)
		*p = (char)tolower((unsigned char)*p);
	if (*p == '\0') { /* "http://host" -> "http://host/" */
		return 1;
	}
	char *hash = strchr(p, '#');
	if (hash)
		*hash = '\0';
	return 0;
}

/* What the command line asked for, before the configuration is built. */
struct crawl_flags {
	struct override ov[MAX_OVERRIDES];
	size_t nov;
	const char *config_path;
	const char *seeds_path;
	const char *out_dir;
	int resume;
	char max_time_ms[32]; /* --max-time's value, converted */
	char *previous;       /* the --previous paths, joined by PREVIOUS_SEPARATOR */
};

static void crawl_flags_free(struct crawl_flags *fl)
{
	for (size_t i = 0; i < fl->nov; i++)
		free(fl->ov[i].section);
	free(fl->previous);
}

/* One more --previous PATH, joined to those before it. 0, or the exit
 * code (said). */
static int add_previous(struct crawl_flags *fl, const char *path)
{
	size_t old = fl->previous ? strlen(fl->previous) : 0, n = strlen(path);
	if (strstr(path, PREVIOUS_SEPARATOR) != NULL || n == 0) {
		fprintf(stderr, "crawler crawl: --previous '%s': a path without '%s', please\n",
		        path, PREVIOUS_SEPARATOR);
		return 2;
	}
	char *s = realloc(fl->previous, old + n + 2);
	if (s == NULL)
		return 1;
	if (old > 0)
		s[old++] = PREVIOUS_SEPARATOR[0];
	memcpy(s + old, path, n + 1);
	fl->previous = s;
	return 0;
}

/* Sets key ("SECTION.NAME", len bytes) to value (not copied; it outlives
 * fl). 0, 1 when there are too many or memory ran out, -1 when key has no
 * dot or value is NULL (a malformed --set, said). */
static int add_override(struct crawl_flags *fl, const char *key, size_t len, const char *value)
{
	const char *dot = memchr(key, '.', len);
	if (!dot || !value) {
		fprintf(stderr, "crawler crawl: --set: expected SECTION.KEY=VALUE, got '%.*s'\n",
		        (int)len, key);
		return -1;
	}
	struct override *o = &fl->ov[fl->nov];
	if (fl->nov == MAX_OVERRIDES || !(o->section = strndup(key, len)))
		return 1;
	o->section[dot - key] = '\0';
	o->key = o->section + (dot - key) + 1;
	o->value = value;
	fl->nov++;
	return 0;
}

/*
 * The crawl command's options, each named once: a flag that sets one
 * configuration key (key "SECTION.NAME") to its argument or, when value is
 * given, to that value; a flag with no key is handled by parse_flags by
 * name. getopt_long's table is built from this one.
 */
static const struct crawl_option {
	const char *name;
	int has_arg;
	int short_name; /* 0: none */
	const char *key, *value;
} crawl_options[] = {
	{ "config", required_argument, 'c', NULL, NULL },
	{ "output", required_argument, 'o', "output.dir", NULL },
	{ "seeds", required_argument, 0, NULL, NULL },
	{ "max-time", required_argument, 0, NULL, NULL },
	{ "set", required_argument, 0, NULL, NULL },
	{ "resume", no_argument, 0, NULL, NULL },
	{ "help", no_argument, 'h', NULL, NULL },
	{ "quiet", no_argument, 'q', "crawl.quiet", "true" },
	{ "insecure", no_argument, 0, "fetch.tls_verify", "false" },
	{ "allow-private-networks", no_argument, 0, "fetch.allow_private_networks", "true" },
	{ "checkpoint-interval", required_argument, 0, "output.checkpoint_interval_s", NULL },
	{ "max-pages", required_argument, 0, "crawl.max_pages", NULL },
	{ "max-depth", required_argument, 0, "crawl.max_depth", NULL },
	{ "max-connections", required_argument, 0, "fetch.max_connections", NULL },
	{ "host-delay", required_argument, 0, "politeness.host_delay_ms", NULL },
	{ "ip-delay", required_argument, 0, "politeness.ip_delay_ms", NULL },
	{ "policy", required_argument, 0, "politeness.policy", NULL },
	{ "user-agent", required_argument, 0, "crawl.user_agent", NULL },
	{ "domains", required_argument, 0, "crawl.domains", NULL },
	{ "rules", required_argument, 0, "crawl.rules", NULL },
	{ "order", required_argument, 0, "crawl.order", NULL },
	{ "focus", required_argument, 0, "crawl.focus", NULL },
	{ "accept", required_argument, 'A', "crawl.accept", NULL },
	{ "reject", required_argument, 'R', "crawl.reject", NULL },
	{ "accept-regex", required_argument, 0, "crawl.accept_regex", NULL },
	{ "reject-regex", required_argument, 0, "crawl.reject_regex", NULL },
	{ "include-directories", required_argument, 'I', "crawl.include_directories", NULL },
	{ "exclude-directories", required_argument, 'X', "crawl.exclude_directories", NULL },
	{ "dns-server", required_argument, 0, "dns.server", NULL },
	{ "resolv-conf", required_argument, 0, "dns.resolv_conf", NULL },
	{ "prefer-family", required_argument, 0, "dns.prefer", NULL },
	{ "ca-file", required_argument, 0, "fetch.ca_file", NULL },
	{ "parse-threads", required_argument, 0, "parse.threads", NULL },
	{ "sitemaps", required_argument, 0, "crawl.sitemaps", NULL },
	{ "metrics", required_argument, 0, "output.metrics", NULL },
	{ "page-requisites", no_argument, 0, "crawl.page_requisites", "true" },
	{ "wacz", no_argument, 0, "output.wacz", "true" },
	{ "previous", required_argument, 0, NULL, NULL }, /* output.previous, gathered */
	{ "proxy", required_argument, 0, "fetch.proxy", NULL },
	{ "no-proxy", required_argument, 0, "fetch.no_proxy", NULL },
	{ "cluster", required_argument, 0, "cluster.redis", NULL },
	{ "agent", required_argument, 0, "cluster.agent", NULL },
	{ "assign", required_argument, 0, "cluster.assign", NULL },
};
#define N_CRAWL_OPTIONS (sizeof crawl_options / sizeof crawl_options[0])
/* getopt_long's value for an option without a short name: its index + this. */
#define LONG_ONLY_BASE 256

/* The crawl_options row getopt_long answered c for, or NULL. */
static const struct crawl_option *crawl_option_of(int c)
{
	for (size_t i = 0; i < N_CRAWL_OPTIONS; i++) {
		const struct crawl_option *o = &crawl_options[i];
		if (o->short_name ? c == o->short_name : c == (int)(LONG_ONLY_BASE + i))
			return o;
	}
	return NULL;
}

/* getopt_long's tables (long options, terminated; short spelling) from
 * crawl_options. */
static void getopt_tables(struct option *longopts, char *shortopts)
{
	for (size_t i = 0; i < N_CRAWL_OPTIONS; i++) {
		const struct crawl_option *o = &crawl_options[i];
		longopts[i] = (struct option){ o->name, o->has_arg, NULL,
			                       o->short_name ? o->short_name
			                                     : (int)(LONG_ONLY_BASE + i) };
		if (o->short_name) {
			*shortopts++ = (char)o->short_name;
			if (o->has_arg)
				*shortopts++ = ':';
		}
	}
	longopts[N_CRAWL_OPTIONS] = (struct option){ 0 };
	*shortopts = '\0';
}

/* Reads the flags into fl: 0 to go on, -1 after --help (exit 0), else the
 * exit code. */
static int parse_flags(int argc, char **argv, struct crawl_flags *fl)
{
	struct option longopts[N_CRAWL_OPTIONS + 1];
	char shortopts[2 * N_CRAWL_OPTIONS + 1];
	int c;

	getopt_tables(longopts, shortopts);
	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct crawl_option *o = crawl_option_of(c);
		const char *name = o ? o->name : "";
		int bad = 0;
		if (o && o->key) {
			bad = add_override(fl, o->key, strlen(o->key),
			                   o->value ? o->value : optarg);
			if (c == 'o')
				fl->out_dir = optarg;
		} else if (strcmp(name, "config") == 0) {
			fl->config_path = optarg;
		} else if (strcmp(name, "resume") == 0) {
			fl->resume = 1;
		} else if (strcmp(name, "seeds") == 0) {
			fl->seeds_path = optarg;
		} else if (strcmp(name, "previous") == 0) {
			int e = add_previous(fl, optarg);
			if (e != 0)
				return e;
		} else if (strcmp(name, "max-time") == 0) {
			if (secs_to_ms(optarg, fl->max_time_ms, sizeof fl->max_time_ms) < 0) {
				fprintf(stderr, "crawler crawl: --max-time: bad value '%s'\n",
				        optarg);
				return 2;
			}
			bad = add_override(fl, "crawl.max_time_ms", 17, fl->max_time_ms);
		} else if (strcmp(name, "set") == 0) {
			const char *eq = strchr(optarg, '=');
			bad = add_override(fl, optarg, eq ? (size_t)(eq - optarg) : strlen(optarg),
			                   eq ? eq + 1 : NULL);
			if (bad < 0)
				return 2;
		} else if (strcmp(name, "help") == 0) {
			usage(stdout);
			return -1;
		} else {
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "crawler crawl: too many options\n");
			return 2;
		}
	}
	if (fl->previous && add_override(fl, "output.previous", 15, fl->previous) != 0) {
		fprintf(stderr, "crawler crawl: too many options\n");
		return 2;
	}
	return 0;
}

/* Defaults < the first run's crawl.conf (--resume) < -c FILE < the flags.
 * cfg holds the defaults already. 0, or the exit code. */
static int configure(struct crawl_config *cfg, const struct crawl_flags *fl)
{
	char err[CRAWL_CONFIG_ERR_MAX];
	const char *dir = fl->out_dir ? fl->out_dir : cfg->output.dir;
	if (fl->resume) {
		char path[4200];
		snprintf(path, sizeof path, "%s/crawl.conf", dir);
		enum crawl_config_err e = crawl_config_load(cfg, path, err, sizeof err);
		if (e != CRAWL_CONFIG_OK) {
			if (e == CRAWL_CONFIG_ERR_IO)
				fprintf(stderr,
				        "crawler crawl: --resume: %s holds no crawl to resume "
				        "(%s)\n",
				        dir, err);
			else
				fprintf(stderr, "crawler crawl: --resume: %s\n", err);
			return 2;
		}
	}
	if (fl->config_path) {
		enum crawl_config_err e = crawl_config_load(cfg, fl->config_path, err, sizeof err);
		if (e != CRAWL_CONFIG_OK) {
			fprintf(stderr, "crawler crawl: %s\n", err);
			return e == CRAWL_CONFIG_ERR_NOMEM ? 1 : 2;
		}
	}
	for (size_t i = 0; i < fl->nov; i++) {
		if (crawl_config_set(cfg, fl->ov[i].section, fl->ov[i].key, fl->ov[i].value, err,
		                     sizeof err) != CRAWL_CONFIG_OK) {
			fprintf(stderr, "crawler crawl: command line: %s\n", err);
			return 2;
		}
	}
	return 0;
}

struct seed_list {
	char ***seeds;
	size_t *n, *cap;
};

static int seed_push(void *ctx, const char *url)
{
	struct seed_list *sl = ctx;
	if (*sl->n == MAX_SEEDS) {
		fprintf(stderr, "crawler crawl: more than %d seeds\n", MAX_SEEDS);
		return -1;
	}
	char **ns = array_grow(*sl->seeds, sl->cap, *sl->n, sizeof *ns, 16);
	if (!ns)
		return -1;
	*sl->seeds = ns;
	if (!(ns[*sl->n] = strdup(url)))
		return -1;
	(*sl->n)++;
	return 0;
}

/* Every page an earlier crawl (list: its paths; "": none) fetched is a
 * seed of its recrawl: a page answered 304 still leads to its links
 * (parse_jobs.h), and one no longer linked to is still asked for. 0 or
 * -1 (said). */
static int previous_seeds(const struct crawl_config *cfg, struct seed_list *sl)
{
	struct previous *p = NULL;
	char err[512];
	if (cfg->output.previous[0] == '\0')
		return 0;
	if (previous_open_list(cfg->output.previous, &cfg->url, cfg->output.dir, &p, err,
	                       sizeof err) != 0) {
		fprintf(stderr, "crawler crawl: --previous: %s\n", err);
		return -1;
	}
	int rc = previous_each_url(p, seed_push, sl);
	if (rc < 0)
		fprintf(stderr, "crawler crawl: --previous %s: a file changed while read\n",
		        cfg->output.previous);
	previous_destroy(p);
	return rc != 0 ? -1 : 0;
}

/* The seeds: DIR/seeds.txt on --resume, else the arguments and --seeds,
 * each checked (and "http://host" given its "/"). 0 or -1 (said). */
static int gather_seeds(int argc, char **argv, const struct crawl_flags *fl,
                        const struct crawl_config *cfg, char ***seeds, size_t *nseeds)
{
	size_t seeds_cap = 0;
	if (fl->resume && (optind < argc || fl->seeds_path)) {
		fprintf(stderr,
		        "crawler crawl: --resume takes no seeds: they come from %s/seeds.txt\n",
		        cfg->output.dir);
		return -1;
	}
	if (fl->resume) {
		char path[4200];
		snprintf(path, sizeof path, "%s/seeds.txt", cfg->output.dir);
		if (read_seeds(path, seeds, nseeds, &seeds_cap) < 0)
			return -1;
	}
	struct seed_list sl = { seeds, nseeds, &seeds_cap };
	for (int i = optind; i < argc; i++)
		if (seed_push(&sl, argv[i]) != 0)
			return -1;
	if (fl->seeds_path && read_seeds(fl->seeds_path, seeds, nseeds, &seeds_cap) < 0)
		return -1;
	if (!fl->resume && previous_seeds(cfg, &sl) != 0)
		return -1;
	for (size_t i = 0; i < *nseeds; i++) {
		int k = check_seed((*seeds)[i]);
		if (k < 0) {
			fprintf(stderr, "crawler crawl: seed '%s' is not an http(s) URL\n",
			        (*seeds)[i]);
			return -1;
		}
		if (k == 1) {
			size_t l = strlen((*seeds)[i]);
			char *s = realloc((*seeds)[i], l + 2);
			if (!s)
				return -1;
			s[l] = '/';
			s[l + 1] = '\0';
			(*seeds)[i] = s;
		}
	}
	return 0;
}

/*
 * A connection the process has no descriptor for fails as a connect error,
 * and the crawl's own files (sieve, WARC, spill) then fail too: raise the
 * soft limit on open files to the hard one and keep max_connections
 * FD_RESERVE under it.
 */
static void fit_connections_to_fd_limit(struct crawl_config *cfg)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit raised = { rl.rlim_max, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
			rl = raised;
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return;
	rlim_t room = rl.rlim_cur > 2 * FD_RESERVE ? rl.rlim_cur - FD_RESERVE : rl.rlim_cur / 2;
	if (room < 1)
		room = 1;
	if ((rlim_t)cfg->fetch.max_connections <= room)
		return;
	fprintf(stderr,
	        "crawler crawl: warning: %zu connections need more than the %llu open files "
	        "this process may have: %llu connections\n",
	        cfg->fetch.max_connections, (unsigned long long)rl.rlim_cur,
	        (unsigned long long)room);
	cfg->fetch.max_connections = (size_t)room;
}

/*
 * Response bodies and per-record compressor state are large, short-lived
 * blocks: keep glibc from mapping and unmapping (and trimming) them on
 * every fetch, which costs more in page faults than the work itself. A
 * process-wide setting, so the tool's, not the library's (crawl_run).
 */
static void tune_malloc(void)
{
	mallopt(M_MMAP_THRESHOLD, 64 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);
}

/* A malformed rules file or wget flag stops a new crawl before it touches
 * its output folder; 0 or -1 (said). A resumed crawl reads the rules its
 * output folder keeps (crawl_run.h). */
static int check_rules(const struct crawl_config *cfg, int resume)
{
	char err[1024];
	struct url_rules *rules = NULL;
	if (resume)
		return 0;
	if (url_rules_from_config(&cfg->rules, &cfg->url, &rules, err, sizeof err) !=
	    URL_RULES_OK) {
		fprintf(stderr, "crawler crawl: %s\n", err);
		return -1;
	}
	url_rules_destroy(rules);
	return 0;
}

int crawl_tool_main(int argc, char **argv)
{
	int rc = 2;
	struct crawl_config cfg;
	struct crawl_flags fl = { 0 };
	char **seeds = NULL;
	size_t nseeds = 0;
	int have_cfg = 0;

	int f = parse_flags(argc, argv, &fl);
	if (f != 0) {
		rc = f < 0 ? 0 : f;
		goto out;
	}
	if (crawl_config_default(&cfg) != 0) {
		fprintf(stderr, "crawler crawl: out of memory\n");
		rc = 1;
		goto out;
	}
	have_cfg = 1;
	rc = configure(&cfg, &fl);
	if (rc != 0)
		goto out;
	fit_connections_to_fd_limit(&cfg);
	rc = 2;
	if (check_rules(&cfg, fl.resume) != 0)
		goto out;
	if (gather_seeds(argc, argv, &fl, &cfg, &seeds, &nseeds) != 0)
		goto out;
	if (nseeds == 0) {
		fprintf(stderr, "crawler crawl: no seed URL (give URLs or --seeds FILE)\n");
		usage(stderr);
		goto out;
	}
	if (strstr(cfg.crawl.user_agent, "CONTACT-ME") && !cfg.fetch.allow_private_networks)
		fprintf(stderr,
		        "crawler crawl: warning: the user agent still has the contact\n"
		        "placeholder; set --user-agent or [crawl] user_agent to name you\n");
	tune_malloc();
	rc = crawl_run(&cfg, seeds, nseeds, fl.resume);
out:
	crawl_flags_free(&fl);
	ARRAY_FREE_EACH(seeds, nseeds);
	if (have_cfg)
		crawl_config_free(&cfg);
	return rc;
}
