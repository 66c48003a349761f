/*
 * url_tool.c: `crawler url [--base URL] [--href] [--option NAME=VALUE]... [REF...]`.
 * Prints, for each reference (arguments, or one per line on stdin when none
 * are given), its crawl key (or WHATWG href with --href), or
 * "ERROR <reason>". Arguments may hold any bytes but NUL, tabs and newlines
 * included; on stdin a line ends at '\n'.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/tools.h"
#include "frontier/base/tool_args.h"
#include "frontier/url.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: crawler url [--base URL] [--href] [--option NAME=VALUE]... [REF...]\n"
	        "  Parses each REF (or each line of stdin when no REF is given) as a URL,\n"
	        "  resolved against --base if given, and prints its crawl key, or with\n"
	        "  --href the WHATWG href (fragment kept); \"ERROR <reason>\" if rejected.\n"
	        "  Options (crawl key canonicalizations, off by default): strip_tracking_params,\n"
	        "  sort_query_params, strip_www, strip_trailing_slash, lowercase_path,\n"
	        "  strip_index, drop_empty_query, https_to_http (=true/false), and\n"
	        "  max_url_length=BYTES (default %d).\n",
	        URL_DEFAULT_MAX_LEN);
}

static int one(struct url *u, const struct url *base, const char *ref, size_t len, bool href,
               char *out, size_t cap)
{
	enum url_error e = url_parse(u, ref, len, base);
	if (e == URL_OK && href) {
		size_t n;
		const char *h = url_href(u, &n);
		fwrite(h, 1, n, stdout);
		fputc('\n', stdout);
		return 0;
	}
	size_t n = 0;
	if (e == URL_OK)
		e = url_crawl_key(u, out, cap, &n);
	if (e != URL_OK) {
		printf("ERROR %s\n", url_strerror(e));
		return 0;
	}
	fwrite(out, 1, n, stdout);
	fputc('\n', stdout);
	return 0;
}

int url_tool_main(int argc, char **argv)
{
	int rc = 1;
	struct url_options opt;
	url_options_init(&opt);
	const char *base_str = NULL;
	bool href = false;
	int i = 1;
	for (; i < argc; i++) {
		if (tool_flag(argv[i], "--help", "-h")) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--href") == 0) {
			href = true;
		} else if (strcmp(argv[i], "--base") == 0 && i + 1 < argc) {
			base_str = argv[++i];
		} else if (strcmp(argv[i], "--option") == 0 && i + 1 < argc) {
			char name[64];
			const char *eq = strchr(argv[++i], '=');
			size_t nl = eq ? (size_t)(eq - argv[i]) : 0;
			if (!eq || nl >= sizeof name) {
				fprintf(stderr, "crawler url: bad --option %s (want NAME=VALUE)\n",
				        argv[i]);
				return 2;
			}
			memcpy(name, argv[i], nl);
			name[nl] = '\0';
			if (url_options_set(&opt, name, eq + 1) != URL_OK) {
				fprintf(stderr, "crawler url: unknown option or bad value: %s\n",
				        argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (argv[i][0] == '-' && argv[i][1] == '-') {
			fprintf(stderr, "crawler url: unknown flag %s\n", argv[i]);
			usage(stderr);
			return 2;
		} else {
			break;
		}
	}
	struct url *u = url_create(&opt);
	struct url *base = url_create(&opt);
	size_t cap = opt.max_len + 1;
	char *out = malloc(cap);
	char *line = NULL;
	size_t line_cap = 0;
	if (!u || !base || !out) {
		fprintf(stderr, "crawler url: out of memory\n");
		goto out;
	}
	const struct url *bp = NULL;
	if (base_str) {
		enum url_error e = url_parse(base, base_str, strlen(base_str), NULL);
		if (e != URL_OK) {
			fprintf(stderr, "crawler url: bad --base: %s\n", url_strerror(e));
			rc = 2;
			goto out;
		}
		bp = base;
	}
	if (i < argc) {
		for (; i < argc; i++)
			one(u, bp, argv[i], strlen(argv[i]), href, out, cap);
	} else {
		ssize_t n;
		while ((n = getline(&line, &line_cap, stdin)) >= 0) {
			size_t len = (size_t)n;
			if (len > 0 && line[len - 1] == '\n')
				len--;
			one(u, bp, line, len, href, out, cap);
		}
	}
	rc = fflush(stdout) == 0 ? 0 : 1;
out:
	free(line);
	free(out);
	url_destroy(base);
	url_destroy(u);
	return rc;
}
