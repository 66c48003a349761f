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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/config.h"
#include "crawler/crawl_run.h"
#include "crawler/tools.h"
#include "frontier/array.h"

#define MAX_SEEDS 1000000
#define MAX_OVERRIDES 64

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
	        "      --dns-server S1[,S2...]  the DNS servers asked, in order: ADDR, ADDR:PORT,\n"
	        "                            IPV6 or [IPV6]:PORT (default: /etc/resolv.conf's)\n"
	        "      --resolv-conf FILE    take the DNS servers from FILE's nameserver lines\n"
	        "                            (port 53 only) instead of /etc/resolv.conf\n"
	        "      --ca-file FILE        trust the CAs of this PEM file (default: the "
	        "system's)\n"
	        "      --insecure            accept any TLS certificate (default: verify, and\n"
	        "                            count failures as tls-cert)\n"
	        "      --allow-private-networks  allow private/loopback addresses (local tests)\n"
	        "      --parse-threads N     parse threads (0 = number of cores)\n"
	        "      --set SECTION.KEY=VALUE  any configuration key\n"
	        "      --checkpoint-interval SECONDS  between checkpoints (default 60; 0: only\n"
	        "                            at a graceful stop and at the end)\n"
	        "      --resume              continue the crawl in DIR (-o) from its last\n"
	        "                            checkpoint, after a stop, kill -9 or power cut;\n"
	        "                            seeds and configuration come from DIR (flags\n"
	        "                            given here override that configuration)\n"
	        "      --sitemaps on|off     follow the sitemaps robots.txt lists (off)\n"
	        "      --metrics [ADDR:]PORT live figures over HTTP: /metrics (Prometheus),\n"
	        "                            /status (JSON); ADDR defaults to 127.0.0.1\n"
	        "      --cluster redis://HOST:PORT[/PREFIX]\n"
	        "                            join the crawl PREFIX shared by several agents\n"
	        "      --agent NAME          this agent's name in the cluster\n"
	        "      --assign perm|minhash|consistent\n"
	        "                            how hosts are assigned to agents (consistent)\n"
	        "  -q, --quiet               no progress line, no summary\n"
	        "  -h, --help                this text\n"
	        "\n"
	        "exit codes: 0 crawl finished (frontier exhausted or a limit reached);\n"
	        "            1 runtime failure (output directory, network setup, I/O);\n"
	        "            2 usage or configuration error; 3 stopped by a second SIGINT.\n"
	        "A first SIGINT stops gracefully: no new transfers, in-flight ones get a few\n"
	        "seconds, WARC/log are flushed, a checkpoint and stats.json written.\n");
}

struct override {
	const char *section, *key;
	char *value;
};

static int add_override(struct override *o, size_t *n, const char *section, const char *key,
                        const char *value)
{
	if (*n == MAX_OVERRIDES)
		return -1;
	o[*n].section = section;
	o[*n].key = key;
	o[*n].value = strdup(value);
	if (!o[*n].value)
		return -1;
	(*n)++;
	return 0;
}

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
	struct override ov[MAX_OVERRIDES]; /* values owned */
	size_t nov;
	char *set_copy[MAX_OVERRIDES]; /* --set arguments, cut in place; owned */
	size_t nset;
	const char *config_path;
	const char *seeds_path;
	const char *out_dir;
	int resume;
};

static void crawl_flags_free(struct crawl_flags *fl)
{
	for (size_t i = 0; i < fl->nov; i++)
		free(fl->ov[i].value);
	for (size_t i = 0; i < fl->nset; i++)
		free(fl->set_copy[i]);
}

/* --set SECTION.KEY=VALUE: 0, 1 (too many options) or -1 (malformed, said). */
static int add_set_override(struct crawl_flags *fl, const char *arg)
{
	char *s = strdup(arg);
	if (!s || fl->nset == MAX_OVERRIDES) {
		free(s);
		return 1;
	}
	fl->set_copy[fl->nset++] = s;
	char *dot = strchr(s, '.'), *eq = strchr(s, '=');
	if (!dot || !eq || dot > eq) {
		fprintf(stderr, "crawler crawl: --set: expected SECTION.KEY=VALUE, got '%s'\n",
		        arg);
		return -1;
	}
	*dot = '\0';
	*eq = '\0';
	return add_override(fl->ov, &fl->nov, s, dot + 1, eq + 1) ? 1 : 0;
}

enum {
	OPT_SEEDS = 256,
	OPT_MAX_PAGES,
	OPT_MAX_TIME,
	OPT_MAX_DEPTH,
	OPT_MAX_CONN,
	OPT_HOST_DELAY,
	OPT_IP_DELAY,
	OPT_POLICY,
	OPT_UA,
	OPT_DOMAINS,
	OPT_DNS,
	OPT_RESOLV_CONF,
	OPT_CA_FILE,
	OPT_INSECURE,
	OPT_PRIVATE,
	OPT_PARSE_THREADS,
	OPT_SITEMAPS,
	OPT_METRICS,
	OPT_SET,
	OPT_CKPT_INTERVAL,
	OPT_RESUME,
	OPT_CLUSTER,
	OPT_AGENT,
	OPT_ASSIGN,
};

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "output", required_argument, NULL, 'o' },
	{ "seeds", required_argument, NULL, OPT_SEEDS },
	{ "max-pages", required_argument, NULL, OPT_MAX_PAGES },
	{ "max-time", required_argument, NULL, OPT_MAX_TIME },
	{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
	{ "host-delay", required_argument, NULL, OPT_HOST_DELAY },
	{ "ip-delay", required_argument, NULL, OPT_IP_DELAY },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "user-agent", required_argument, NULL, OPT_UA },
	{ "domains", required_argument, NULL, OPT_DOMAINS },
	{ "dns-server", required_argument, NULL, OPT_DNS },
	{ "resolv-conf", required_argument, NULL, OPT_RESOLV_CONF },
	{ "ca-file", required_argument, NULL, OPT_CA_FILE },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "allow-private-networks", no_argument, NULL, OPT_PRIVATE },
	{ "parse-threads", required_argument, NULL, OPT_PARSE_THREADS },
	{ "sitemaps", required_argument, NULL, OPT_SITEMAPS },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "set", required_argument, NULL, OPT_SET },
	{ "checkpoint-interval", required_argument, NULL, OPT_CKPT_INTERVAL },
	{ "resume", no_argument, NULL, OPT_RESUME },
	{ "cluster", required_argument, NULL, OPT_CLUSTER },
	{ "agent", required_argument, NULL, OPT_AGENT },
	{ "assign", required_argument, NULL, OPT_ASSIGN },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Flags that set one configuration key: to their argument, or to value. */
static const struct flag_key {
	int opt;
	const char *section, *key, *value;
} flag_keys[] = {
	{ 'o', "output", "dir", NULL },
	{ OPT_CKPT_INTERVAL, "output", "checkpoint_interval_s", NULL },
	{ OPT_MAX_PAGES, "crawl", "max_pages", NULL },
	{ OPT_MAX_DEPTH, "crawl", "max_depth", NULL },
	{ OPT_MAX_CONN, "fetch", "max_connections", NULL },
	{ OPT_HOST_DELAY, "politeness", "host_delay_ms", NULL },
	{ OPT_IP_DELAY, "politeness", "ip_delay_ms", NULL },
	{ OPT_POLICY, "politeness", "policy", NULL },
	{ OPT_UA, "crawl", "user_agent", NULL },
	{ OPT_DOMAINS, "crawl", "domains", NULL },
	{ OPT_DNS, "dns", "server", NULL },
	{ OPT_RESOLV_CONF, "dns", "resolv_conf", NULL },
	{ OPT_CA_FILE, "fetch", "ca_file", NULL },
	{ OPT_INSECURE, "fetch", "tls_verify", "false" },
	{ OPT_PRIVATE, "fetch", "allow_private_networks", "true" },
	{ OPT_PARSE_THREADS, "parse", "threads", NULL },
	{ OPT_SITEMAPS, "crawl", "sitemaps", NULL },
	{ OPT_METRICS, "output", "metrics", NULL },
	{ 'q', "crawl", "quiet", "true" },
	{ OPT_CLUSTER, "cluster", "redis", NULL },
	{ OPT_AGENT, "cluster", "agent", NULL },
	{ OPT_ASSIGN, "cluster", "assign", NULL },
};

static const struct flag_key *flag_key_of(int opt)
{
	for (size_t i = 0; i < sizeof flag_keys / sizeof flag_keys[0]; i++)
		if (flag_keys[i].opt == opt)
			return &flag_keys[i];
	return NULL;
}

/* Reads the flags into fl: 0 to go on, -1 after --help (exit 0), else the
 * exit code. */
static int parse_flags(int argc, char **argv, struct crawl_flags *fl)
{
	char numbuf[64];
	int c;

	optind = 1;
	opterr = 1;
	while ((c = getopt_long(argc, argv, "c:o:qh", opts, NULL)) != -1) {
		const struct flag_key *fk = flag_key_of(c);
		int bad = 0;
		if (fk) {
			bad = add_override(fl->ov, &fl->nov, fk->section, fk->key,
			                   fk->value ? fk->value : optarg);
			if (c == 'o')
				fl->out_dir = optarg;
		} else if (c == 'c') {
			fl->config_path = optarg;
		} else if (c == OPT_RESUME) {
			fl->resume = 1;
		} else if (c == OPT_SEEDS) {
			fl->seeds_path = optarg;
		} else if (c == OPT_MAX_TIME) {
			if (secs_to_ms(optarg, numbuf, sizeof numbuf) < 0) {
				fprintf(stderr, "crawler crawl: --max-time: bad value '%s'\n",
				        optarg);
				return 2;
			}
			bad = add_override(fl->ov, &fl->nov, "crawl", "max_time_ms", numbuf);
		} else if (c == OPT_SET) {
			bad = add_set_override(fl, optarg);
			if (bad < 0)
				return 2;
		} else if (c == 'h') {
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
	for (int i = optind; i < argc; i++) {
		if (*nseeds == seeds_cap) {
			size_t nc = seeds_cap ? seeds_cap * 2 : 16;
			char **ns = realloc(*seeds, nc * sizeof *ns);
			if (!ns)
				return -1;
			*seeds = ns;
			seeds_cap = nc;
		}
		(*seeds)[*nseeds] = strdup(argv[i]);
		if (!(*seeds)[*nseeds])
			return -1;
		(*nseeds)++;
	}
	if (fl->seeds_path && read_seeds(fl->seeds_path, seeds, nseeds, &seeds_cap) < 0)
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
	rc = 2;
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
	rc = crawl_run(&cfg, seeds, nseeds, fl.resume);
out:
	crawl_flags_free(&fl);
	ARRAY_FREE_EACH(seeds, nseeds);
	if (have_cfg)
		crawl_config_free(&cfg);
	return rc;
}
