/*
 * ini_file.h: the reader of the crawler's configuration files (INI).
 *
 * A file is lines of up to INI_FILE_MAX_LINE bytes: "[section]", "key =
 * value", comments (a line whose first non-space is '#' or ';') and blank
 * lines; a UTF-8 BOM at the start is skipped. Key and value are trimmed of
 * spaces; in a value, ';' or '#' after a space starts a comment (so a ';'
 * inside a word, as in user agents, is kept). Whatever the file's size,
 * memory is one line.
 *
 * Unlike inih (which Debian builds with 200-byte lines, cutting longer ones
 * into pieces), a line of any length up to the limit reads back whole, so
 * every value the crawler writes into crawl.conf is read again as written.
 */
#ifndef CRAWLER_CONFIG_INI_FILE_H
#define CRAWLER_CONFIG_INI_FILE_H

#define INI_FILE_MAX_LINE (64 * 1024)

/* Called for each "key = value" line, with its section ("" before the
 * first); nonzero to go on, 0 to stop (the line is then reported). */
typedef int (*ini_file_fn)(void *ctx, const char *section, const char *key, const char *value);

/*
 * Reads path. 0; -1 when it cannot be opened or read (errno set); -2 out of
 * memory; else the number (from 1) of the first line that is malformed
 * (no '=', no closing ']', empty key, over INI_FILE_MAX_LINE) or that fn
 * refused. Reading stops there.
 */
int ini_file_parse(const char *path, ini_file_fn fn, void *ctx);

#endif
