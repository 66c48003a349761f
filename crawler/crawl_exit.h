/*
 * crawl_exit.h: the exit codes of a crawl (crawl_run) and of `crawler
 * crawl`. Every piece that can end a crawl's set-up or run returns one;
 * the values are part of the command line's contract and never renumber.
 */
#ifndef CRAWLER_CRAWL_EXIT_H
#define CRAWLER_CRAWL_EXIT_H

enum crawl_exit {
	CRAWL_EXIT_OK = 0,      /* crawl finished (frontier exhausted or a limit) */
	CRAWL_EXIT_FAILURE = 1, /* setup or I/O failure */
	CRAWL_EXIT_USAGE = 2,   /* bad command line or configuration */
	CRAWL_EXIT_ABORTED = 3, /* second SIGINT: stopped at once */
};

#endif
