/*
 * tools.h: entry points of the `crawler` subcommands.
 *
 * `crawler/main.c` dispatches `crawler NAME ARGS...` to NAME's entry point.
 * Each entry point lives beside the module it exposes (the sieve tool in
 * sieve/, the URL tool in frontier/, ...) so a module and its tool change
 * together. Every entry point receives argv with argv[0] = the subcommand
 * name, and returns the process exit code (0 success, 1 runtime failure,
 * 2 usage error).
 */
#ifndef FRONTIER_BASE_TOOLS_H
#define FRONTIER_BASE_TOOLS_H

int crawl_tool_main(int argc, char **argv);          /* crawler/crawl.c */
int sieve_tool_main(int argc, char **argv);          /* sieve/sieve_tool.c */
int url_tool_main(int argc, char **argv);            /* frontier/url_tool.c */
int rules_tool_main(int argc, char **argv);          /* frontier/rules_tool.c */
int robots_tool_main(int argc, char **argv);         /* politeness/robots_tool.c */
int links_tool_main(int argc, char **argv);          /* parse/links_tool.c */
int sitemap_tool_main(int argc, char **argv);        /* parse/sitemap_tool.c */
int assign_tool_main(int argc, char **argv);         /* crawler/cluster/assign_tool.c */
int audit_tool_main(int argc, char **argv);          /* crawler/lab/audit_tool.c */
int lab_tool_main(int argc, char **argv);            /* crawler/lab/lab_tool.c */
int cluster_status_tool_main(int argc, char **argv); /* crawler/cluster/cluster_status.c */
int index_tool_main(int argc, char **argv);          /* crawler/archive/archive_tool.c */
int wacz_tool_main(int argc, char **argv);           /* crawler/archive/archive_tool.c */

#endif
