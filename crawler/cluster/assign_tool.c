/*
 * assign_tool.c: `crawler assign --method M --agents a,b,c [--add d]
 * [--remove b] < hosts`.
 *
 * Reads one host per line on stdin and prints, per line, the host, a tab
 * and the agent owning it (assign.h). With --add or --remove (each may be
 * repeated; the adds are applied first) it prints the owner before and after
 * the change: host, tab, before, tab, after. Hosts are taken as bytes, as
 * given (lowercase them first); a trailing CR is dropped; an empty line is
 * the empty host, so output lines match input lines one to one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/cluster/assign.h"
#include "frontier/base/tools.h"

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: crawler assign --method perm|minhash|consistent --agents A,B,...\n"
	        "                      [--add AGENT]... [--remove AGENT]... < hosts\n"
	        "  Assigns each host read on stdin (one per line) to one agent of a\n"
	        "  distributed crawl and prints `host<TAB>agent`. With --add or --remove\n"
	        "  it prints `host<TAB>before<TAB>after`: the owner among --agents, and\n"
	        "  the owner once the agents given to --add have joined and those given\n"
	        "  to --remove have left.\n"
	        "  methods (course notes, part 3): perm = Fisher-Yates permutation of %d\n"
	        "  agent slots seeded by the host; minhash = least hash of (agent, host);\n"
	        "  consistent = consistent hashing, %d points per agent.\n",
	        ASSIGN_PERM_SLOTS, ASSIGN_REPLICAS);
}

/* Splits the comma-separated list in place into *names (the caller frees
 * the array, not the strings); ASSIGN_EINVAL on an empty element. */
static int split_agents(char *list, char ***names, size_t *n)
{
	size_t count = 1;
	for (const char *p = list; *p; p++)
		count += *p == ',';
	char **v = malloc(count * sizeof *v);
	if (!v)
		return ASSIGN_ENOMEM;
	size_t i = 0;
	for (char *p = list;;) {
		char *comma = strchr(p, ',');
		if (comma)
			*comma = '\0';
		v[i++] = p;
		if (*p == '\0') {
			free(v);
			return ASSIGN_EINVAL;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	*names = v;
	*n = i;
	return ASSIGN_OK;
}

/* The agents that --add (or --remove) names, applied in order to the view. */
struct change {
	const char *option;
	int (*apply)(struct assign_view *v, const char *name);
	const char **names;
	size_t n;
};

int assign_tool_main(int argc, char **argv)
{
	const char *method_name = NULL;
	char *agents_arg = NULL;
	const char **adds = NULL, **removes = NULL;
	size_t n_adds = 0, n_removes = 0;
	char **names = NULL;
	size_t n_names = 0;
	struct assign_view *before = NULL, *after = NULL;
	char *line = NULL;
	size_t line_cap = 0;
	enum assign_method method;
	int status = 2, rc;

	adds = calloc((size_t)argc, sizeof *adds);
	removes = calloc((size_t)argc, sizeof *removes);
	if (!adds || !removes) {
		fprintf(stderr, "crawler assign: out of memory\n");
		status = 1;
		goto out;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			status = 0;
			goto out;
		} else if (strcmp(argv[i], "--method") == 0 && i + 1 < argc) {
			method_name = argv[++i];
		} else if (strcmp(argv[i], "--agents") == 0 && i + 1 < argc) {
			agents_arg = argv[++i];
		} else if (strcmp(argv[i], "--add") == 0 && i + 1 < argc) {
			adds[n_adds++] = argv[++i];
		} else if (strcmp(argv[i], "--remove") == 0 && i + 1 < argc) {
			removes[n_removes++] = argv[++i];
		} else {
			fprintf(stderr, "crawler assign: unknown option or missing value '%s'\n",
			        argv[i]);
			usage(stderr);
			goto out;
		}
	}
	if (!method_name || !agents_arg) {
		fprintf(stderr, "crawler assign: --method and --agents are required\n");
		usage(stderr);
		goto out;
	}
	if (assign_method_parse(method_name, &method) != ASSIGN_OK) {
		fprintf(stderr, "crawler assign: unknown method '%s' (perm, minhash, consistent)\n",
		        method_name);
		goto out;
	}
	rc = split_agents(agents_arg, &names, &n_names);
	if (rc == ASSIGN_OK)
		rc = assign_view_create(method, (const char *const *)names, n_names, &before);
	if (rc == ASSIGN_OK && (n_adds || n_removes))
		rc = assign_view_create(method, (const char *const *)names, n_names, &after);
	if (rc != ASSIGN_OK) {
		fprintf(stderr, "crawler assign: --agents: %s\n", assign_strerror(rc));
		status = rc == ASSIGN_ENOMEM ? 1 : 2;
		goto out;
	}
	const struct change changes[] = { { "--add", assign_view_add, adds, n_adds },
		                          { "--remove", assign_view_remove, removes, n_removes } };
	for (size_t k = 0; k < 2; k++) {
		const struct change *c = &changes[k];
		for (size_t i = 0; i < c->n; i++) {
			rc = c->apply(after, c->names[i]);
			if (rc != ASSIGN_OK) {
				fprintf(stderr, "crawler assign: %s '%s': %s\n", c->option,
				        c->names[i], assign_strerror(rc));
				status = rc == ASSIGN_ENOMEM ? 1 : 2;
				goto out;
			}
		}
	}
	if (after && assign_view_size(after) == 0) {
		fprintf(stderr, "crawler assign: no agent left after the changes\n");
		goto out;
	}
	status = 1;
	for (;;) {
		ssize_t len = getline(&line, &line_cap, stdin);
		if (len < 0)
			break;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len > 0 && line[len - 1] == '\r')
			line[--len] = '\0';
		const char *owner = assign_view_owner(before, line, (size_t)len);
		if (after)
			printf("%s\t%s\t%s\n", line, owner,
			       assign_view_owner(after, line, (size_t)len));
		else
			printf("%s\t%s\n", line, owner);
	}
	if (ferror(stdin)) {
		fprintf(stderr, "crawler assign: cannot read stdin\n");
		goto out;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "crawler assign: cannot write stdout\n");
		goto out;
	}
	status = 0;
out:
	free(line);
	assign_view_destroy(after);
	assign_view_destroy(before);
	free(names);
	free(removes);
	free(adds);
	return status;
}
