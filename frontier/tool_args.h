/*
 * tool_args.h: the command-line spellings the `crawler` subcommands share
 * (the url, robots and links tools beside their modules): a flag with a
 * long and a short name, and an option whose value follows as the next
 * argument or after '='. Header only: each tool parses its own argv.
 */
#ifndef FRONTIER_TOOL_ARGS_H
#define FRONTIER_TOOL_ARGS_H

#include <stdbool.h>
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

#endif
