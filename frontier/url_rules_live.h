/*
 * url_rules_live.h: a crawl's URL rules (url_rules.h) while it runs: the
 * sealed list every thread decides with, replaced whole when rules are
 * added at its top (steering a crawl), and the copy of it kept in the
 * output folder so that a resumed crawl decides as the crawl did.
 *
 * Data structure: the current list and the lists it replaced that a
 * thread still holds, each with a reference count and the number of rules
 * that had been added at the top when it was made; one mutex guards them
 * (taken twice per parse job, never per URL). A thread takes the current
 * list (url_rules_live_get), decides any number of URLs with it and gives
 * it back (url_rules_live_put). Adding rules builds a new list (the new
 * rules, then a copy of every rule of the current one: url_rules_add_copy,
 * no text parsed again), seals it and makes it current at once: a thread
 * that took the old list decides with the old list until it gives it back
 * (RCU-like); the last put frees it, after its per-rule counts are added
 * to the current list's (rule i of a list with k rules added is rule
 * i + K - k of the current one with K added, since rules are only ever
 * added at the top).
 *
 * Invariants: the current list is sealed and never changes but for its
 * counters; a list is freed only when it is not current and no thread
 * holds it; every decision is counted once, in the current list in the
 * end.
 *
 * The copy in the output folder (url_rules_live_write, _read): one rule a
 * line, as written, followed by a tab and "# from SOURCE:LINE" (or
 * "# from SOURCE" for a flag), so a resumed crawl reports each rule where
 * it came from; rules added while the crawl ran come first, from
 * "POST /rules" or the action file that gave them.
 *
 * Memory: the lists (url_rules.h), at most two at a time but for a thread
 * slow to give one back. Threads: get, put and the decisions from any
 * thread; add, write and the counts' save and load from one thread (the
 * fetch loop's).
 */
#ifndef FRONTIER_URL_RULES_LIVE_H
#define FRONTIER_URL_RULES_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "frontier/url_rules.h"

/* Longest text url_rules_live_add takes at once. */
#define URL_RULES_LIVE_ADD_MAX (1024u * 1024u)

struct url_rules_live;
struct recfile_writer;
struct recfile_reader;

/* Takes rules (sealed) as the current list, whose first `added` rules were
 * added at the top (a resumed crawl's: url_rules_live_read); NULL if out
 * of memory (rules are then destroyed). */
struct url_rules_live *url_rules_live_create(struct url_rules *rules, size_t added);
/* Frees every list; no thread may hold one. NULL is a no-op. */
void url_rules_live_destroy(struct url_rules_live *l);

/* Any thread: the current list, to decide with until url_rules_live_put
 * (NULL from a NULL l: a crawl without rules; put is then a no-op). */
struct url_rules *url_rules_live_get(struct url_rules_live *l);
void url_rules_live_put(struct url_rules_live *l, struct url_rules *r);

/* The rules of text[len] (lines, in the rules file's form), checked and
 * made into a sealed list in *out (NULL on error) with url_options opt:
 * source and the line number name each in messages (err: "SOURCE:LINE:
 * reason"). Adds none that way: for checking, or url_rules_live_add. An
 * empty text (only blank and comment lines) is an error too. */
enum url_rules_err url_rules_live_parse(const char *text, size_t len, const char *source,
                                        const struct url_options *opt, struct url_rules **out,
                                        char *err, size_t errlen);
/* Adds the rules of text[len] at the top, in their order, above every
 * rule there is; *added gets their number. On error nothing changes. */
enum url_rules_err url_rules_live_add(struct url_rules_live *l, const char *text, size_t len,
                                      const char *source, size_t *added, char *err, size_t errlen);
/* Rules added at the top since the crawl began (resumed runs included). */
size_t url_rules_live_added(const struct url_rules_live *l);

/* The copy of the current list at path, replaced at once (fileio.h's
 * fileio_replace). 0, or -1 (errno). */
int url_rules_live_write(struct url_rules_live *l, const char *path);
/* The rules of such a copy, into a sealed list with url_options opt;
 * *added gets the number of rules it says were added at the top. */
enum url_rules_err url_rules_live_read(const char *path, const struct url_options *opt,
                                       struct url_rules **out, size_t *added, char *err,
                                       size_t errlen);

/* A checkpoint's part: each rule's text and counts, and the URLs no rule
 * matched. Read back into a list that holds the same rules, more added at
 * its top maybe: each saved rule's counts go to the first rule after the
 * last one matched that has its text (the others are dropped). 0, or -1
 * (truncated). */
void url_rules_live_save_counts(struct url_rules_live *l, struct recfile_writer *w);
int url_rules_live_load_counts(struct url_rules_live *l, struct recfile_reader *rd);

#endif
