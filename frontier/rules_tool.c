/*
 * rules_tool.c: `crawler rules [FILE] [wget flags] [--depth N]
 * [--option NAME=VALUE]... < urls`: how URL rules decide each URL, so a
 * user can try a rules file before a crawl.
 *
 * Each stdin line is a URL, optionally followed by white space and the
 * number of links it lies from a seed (default --depth, 1). Printed per
 * line, tab-separated: the decision (accept, reject, no-match, or error
 * when the URL has no crawl key), the crawl key (or the input), and the
 * rule that decided, as "SOURCE:LINE: TEXT" (a flag's rule as
 * "--accept: TEXT"), with "(depth D > N)" when an accept rule's depth
 * limit turned it into a reject.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/tool_args.h"
#include "frontier/base/tools.h"
#include "frontier/url_rules.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: crawler rules [FILE] [-A LIST] [-R LIST] [--accept-regex RE]\n"
	           "                     [--reject-regex RE] [-I LIST] [-X LIST] [--depth N]\n"
	           "                     [--option NAME=VALUE]... < urls\n"
	           "  Decides each URL of stdin (one a line, optionally followed by its depth:\n"
	           "  links from a seed, default --depth 1) by the rules of FILE (one a line:\n"
	           "  ACTION [!]MATCHER PATTERN [depth=N] [priority=N]; see the README) and\n"
	           "  wget's flags (-A/--accept, -R/--reject, --accept-regex, --reject-regex,\n"
	           "  -I/--include-directories, -X/--exclude-directories; repeatable), which\n"
	           "  come first. Prints per URL: accept, reject or no-match (the crawl's\n"
	           "  domain scope decides), its crawl key and the rule that decided it.\n"
	           "  --option sets a crawl key canonicalization as in `crawler url`.\n"
	           "  Exit 2 for a malformed rule (its file and line named).\n");
}

static const struct {
	const char *name, *short_name;
	enum url_rules_wget flag;
} flags[] = {
	{ "--accept", "-A", URL_RULES_WGET_ACCEPT },
	{ "--reject", "-R", URL_RULES_WGET_REJECT },
	{ "--accept-regex", NULL, URL_RULES_WGET_ACCEPT_REGEX },
	{ "--reject-regex", NULL, URL_RULES_WGET_REJECT_REGEX },
	{ "--include-directories", "-I", URL_RULES_WGET_INCLUDE_DIRS },
	{ "--exclude-directories", "-X", URL_RULES_WGET_EXCLUDE_DIRS },
};
#define N_FLAGS (sizeof flags / sizeof flags[0])

struct tool_opts {
	const char *file;
	char *wget[URL_RULES_WGET_COUNT];
	unsigned long depth;
	struct url_options url;
};

/* "--option NAME=VALUE" into o->url; 0 or 2 (said). */
static int set_url_option(struct tool_opts *o, const char *arg)
{
	char name[64];
	const char *eq = strchr(arg, '=');
	size_t nl = eq ? (size_t)(eq - arg) : 0;
	if (!eq || nl >= sizeof name) {
		fprintf(stderr, "crawler rules: bad --option %s (want NAME=VALUE)\n", arg);
		return 2;
	}
	memcpy(name, arg, nl);
	name[nl] = '\0';
	if (url_options_set(&o->url, name, eq + 1) != URL_OK) {
		fprintf(stderr, "crawler rules: unknown option or bad value: %s\n", arg);
		return 2;
	}
	return 0;
}

/* argv[*i] as one of wget's flags: 1 taken, 0 not one, -1 out of memory. */
static int wget_arg(struct tool_opts *o, int argc, char **argv, int *i)
{
	for (size_t k = 0; k < N_FLAGS; k++) {
		const char *v = tool_option(argc, argv, i, flags[k].name);
		const char *sn = flags[k].short_name;
		if (!v && sn && strcmp(argv[*i], sn) == 0 && *i + 1 < argc)
			v = argv[++*i];
		else if (!v && sn && strncmp(argv[*i], sn, 2) == 0 && argv[*i][2] != '\0')
			v = argv[*i] + 2; /* "-I/pub", as getopt takes it */
		if (!v)
			continue;
		char *joined = url_rules_wget_join(flags[k].flag, o->wget[flags[k].flag], v);
		if (!joined)
			return -1;
		free(o->wget[flags[k].flag]);
		o->wget[flags[k].flag] = joined;
		return 1;
	}
	return 0;
}

/* -1 to go on, else the exit status. */
static int parse_args(struct tool_opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *v;
		int w = wget_arg(o, argc, argv, &i);
		if (w < 0) {
			fprintf(stderr, "crawler rules: out of memory\n");
			return 1;
		}
		if (w > 0)
			continue;
		if ((v = tool_option(argc, argv, &i, "--option"))) {
			if (set_url_option(o, v))
				return 2;
		} else if ((v = tool_option(argc, argv, &i, "--depth"))) {
			char *end;
			o->depth = strtoul(v, &end, 10);
			if (*end || !v[0] || v[0] == '-' || o->depth > 0xffffffffUL) {
				fprintf(stderr, "crawler rules: bad --depth '%s'\n", v);
				return 2;
			}
		} else {
			int st = tool_other_arg("rules", "unknown option or missing value", argv[i],
			                        &o->file, usage);
			if (st >= 0)
				return st;
		}
	}
	return -1;
}

/* Decides one input line and prints the result. */
static void one(struct url_rules *r, struct url *u, char *key, size_t cap, char *line, size_t len,
                unsigned long depth)
{
	size_t ul = 0, kl;
	while (ul < len && line[ul] != ' ' && line[ul] != '\t')
		ul++;
	if (ul < len) {
		char *end;
		unsigned long d = strtoul(line + ul + 1, &end, 10);
		if (end != line + ul + 1)
			depth = d;
	}
	enum url_error e = url_normalize(u, NULL, line, ul, key, cap, &kl);
	if (e != URL_OK) {
		printf("error\t%.*s\t%s\n", (int)ul, line, url_strerror(e));
		return;
	}
	struct url_rules_decision d;
	struct url_rule_info info;
	url_rules_decide(r, key, kl, (uint32_t)depth, &d);
	printf("%s\t%s", url_rules_action_name(d.action), key);
	if (d.rule >= 0 && url_rules_rule(r, (size_t)d.rule, &info) == 0) {
		if (info.line > 0)
			printf("\t%s:%u: %s", info.source, info.line, info.text);
		else
			printf("\t%s: %s", info.source, info.text);
		if (d.too_deep)
			printf(" (depth %lu > %u)", depth, d.depth);
	}
	if (d.regex_failed)
		printf("\t(a regex hit its match limit)");
	putchar('\n');
}

int rules_tool_main(int argc, char **argv)
{
	struct tool_opts o = { .depth = 1 };
	struct url_rules *r = NULL;
	struct url *u = NULL;
	char *line = NULL, *key = NULL, err[1024];
	size_t line_cap = 0;
	url_options_init(&o.url);
	int rc = parse_args(&o, argc, argv);
	if (rc >= 0)
		goto out;
	struct url_rules_config c = { .file = o.file };
	for (size_t k = 0; k < URL_RULES_WGET_COUNT; k++)
		c.wget[k] = o.wget[k];
	enum url_rules_err e = url_rules_from_config(&c, &o.url, &r, err, sizeof err);
	if (e != URL_RULES_OK) {
		fprintf(stderr, "crawler rules: %s\n", err);
		rc = e == URL_RULES_ERR_SYNTAX || e == URL_RULES_ERR_LIMIT ? 2 : 1;
		goto out;
	}
	rc = 1;
	u = url_create(&o.url);
	key = malloc(o.url.max_len + 1);
	if (!u || !key) {
		fprintf(stderr, "crawler rules: out of memory\n");
		goto out;
	}
	ssize_t n;
	while ((n = getline(&line, &line_cap, stdin)) >= 0) {
		size_t len = (size_t)n;
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		if (len > 0)
			one(r, u, key, o.url.max_len + 1, line, len, o.depth);
	}
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	for (size_t k = 0; k < URL_RULES_WGET_COUNT; k++)
		free(o.wget[k]);
	free(line);
	free(key);
	url_destroy(u);
	url_rules_destroy(r);
	return rc;
}
