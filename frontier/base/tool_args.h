/*
 * tool_args.h: the command-line spellings the `crawler` subcommands share
 * (the url, robots and links tools beside their modules): a flag with a
 * long and a short name, and an option whose value follows as the next
 * argument or after '='; the usage error every tool gives for an
 * argument it does not know; the one operand a tool takes; counts; and a
 * tool's arguments described as a table, parsed before the tool runs.
 * Header only: each tool parses its own argv.
 */
#ifndef FRONTIER_BASE_TOOL_ARGS_H
#define FRONTIER_BASE_TOOL_ARGS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* true when arg is the flag's long name or its short one (may be NULL). */
static inline bool tool_flag(const char *arg, const char *long_name, const char *short_name)
{
	return strcmp(arg, long_name) == 0 || (short_name != NULL && strcmp(arg, short_name) == 0);
}

/* The value of option `name` ("--name") when argv[*i] is that option:
 * "--name VALUE" (then *i moves to VALUE) or "--name=VALUE". NULL when
 * argv[*i] is something else, or "--name" is the last argument. */
static inline const char *tool_option(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strcmp(argv[*i], name) == 0 && *i + 1 < argc)
		return argv[++*i];
	if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return NULL;
}

/* true when arg is spelled as an option ("-x", "--x"); "-" alone is an
 * operand (standard input). */
static inline bool tool_is_option(const char *arg)
{
	return arg[0] == '-' && arg[1] != '\0';
}

/* The usage error of tool `name` ("crawler NAME: WHAT 'ARG'" on stderr,
 * then the tool's usage on stderr). Returns 2, the usage-error status. */
static inline int tool_usage_error(const char *name, const char *what, const char *arg,
                                   void (*usage)(FILE *out))
{
	fprintf(stderr, "crawler %s: %s '%s'\n", name, what, arg);
	usage(stderr);
	return 2;
}

/* Takes arg as the tool's one operand: stores it in *operand and returns 0.
 * When *operand is already set (a second operand), prints the usage on
 * stderr and returns 2, the usage-error status. */
static inline int tool_take_operand(const char *arg, const char **operand, void (*usage)(FILE *out))
{
	if (*operand == NULL) {
		*operand = arg;
		return 0;
	}
	usage(stderr);
	return 2;
}

/* An argument that is none of the tool's own options: "--help"/"-h"
 * prints the usage on stdout and returns 0; another option is the usage
 * error `what` (2); anything else is taken as the one operand (-1, go on
 * with the next argument; 2 when it is a second operand). */
static inline int tool_other_arg(const char *name, const char *what, const char *arg,
                                 const char **operand, void (*usage)(FILE *out))
{
	if (tool_flag(arg, "--help", "-h")) {
		usage(stdout);
		return 0;
	}
	if (tool_is_option(arg))
		return tool_usage_error(name, what, arg, usage);
	return tool_take_operand(arg, operand, usage) != 0 ? 2 : -1;
}

/* 0 when the tool's operand was given; else prints the usage on stderr and
 * returns 2, the usage-error status. */
static inline int tool_need_operand(const char *operand, void (*usage)(FILE *out))
{
	if (operand != NULL)
		return 0;
	usage(stderr);
	return 2;
}

/* A count option's value: decimal digits only, from 1 to max, stored in
 * *out (returns 0). Anything else is the usage error "crawler NAME: bad
 * OPTION 'VALUE'" on stderr (returns 2). */
static inline int tool_count(const char *name, const char *option, const char *value,
                             unsigned long long max, size_t *out)
{
	char *end;
	unsigned long long v = value[0] >= '0' && value[0] <= '9' ? strtoull(value, &end, 10) : 0;
	if (v == 0 || *end != '\0' || v > max) {
		fprintf(stderr, "crawler %s: bad %s '%s'\n", name, option, value);
		return 2;
	}
	*out = (size_t)v;
	return 0;
}

/* A tool's arguments described as data: its value options (each
 * "--name VALUE", "--name=VALUE" or its short name "-x VALUE" sets
 * *value; the list ends at the first without a name), at most one flag
 * (long and short name, sets *flag), and its one operand. */
struct tool_value_opt {
	const char *name, *short_name; /* short_name may be NULL */
	const char **value;
};

#define TOOL_MAX_VALUE_OPTS 4

struct tool_spec {
	const char *name; /* "links" in "crawler links" */
	void (*usage)(FILE *out);
	struct tool_value_opt opts[TOOL_MAX_VALUE_OPTS];
	struct tool_flag_opt {
		const char *name, *short_name; /* name NULL: no flag */
		bool *set;
	} flag;
	const char **operand;
};

/* The value argv[*i] gives one of the spec's value options (stored in
 * it), or NULL when argv[*i] is no value option. */
static inline const char *tool_value_arg(const struct tool_spec *t, int argc, char **argv, int *i)
{
	for (size_t k = 0; k < TOOL_MAX_VALUE_OPTS && t->opts[k].name != NULL; k++) {
		const struct tool_value_opt *o = &t->opts[k];
		const char *value = tool_option(argc, argv, i, o->name);
		if (value == NULL && o->short_name != NULL)
			value = tool_option(argc, argv, i, o->short_name);
		if (value != NULL)
			return *o->value = value;
	}
	return NULL;
}

/* Parses argv by the spec; the operand is required. -1 when the tool goes
 * on, else its exit status: 0 after --help, 2 for a usage error. */
static inline int tool_parse_args(const struct tool_spec *t, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (tool_value_arg(t, argc, argv, &i) != NULL)
			continue;
		if (t->flag.name != NULL && tool_flag(argv[i], t->flag.name, t->flag.short_name)) {
			*t->flag.set = true;
			continue;
		}
		int st = tool_other_arg(t->name, "unknown option or missing value", argv[i],
		                        t->operand, t->usage);
		if (st >= 0)
			return st;
	}
	return tool_need_operand(*t->operand, t->usage) != 0 ? 2 : -1;
}

/* A tool's main: parses argv by the spec (whose pointers point into the
 * tool's arguments, ctx), then runs the tool. The exit status: the
 * parse's (0 after --help, 2 for a usage error), else run(ctx)'s. */
static inline int tool_run(const struct tool_spec *t, int argc, char **argv,
                           int (*run)(const void *ctx), const void *ctx)
{
	int st = tool_parse_args(t, argc, argv);
	return st >= 0 ? st : run(ctx);
}

#endif
