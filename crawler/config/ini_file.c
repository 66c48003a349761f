/*
 * ini_file.c: the configuration file reader (see ini_file.h).
 */
#include "crawler/config/ini_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontier/base/ascii.h"

/* Cuts the value at an inline comment: ';' or '#' after a space. */
static void cut_comment(char *v)
{
	for (char *p = v + 1; *p; p++)
		if ((*p == ';' || *p == '#') && ascii_is_space((unsigned char)p[-1])) {
			*p = '\0';
			return;
		}
}

/* One line (NUL-terminated, no newline): 1 fine, 0 malformed or refused. */
static int parse_line(char *line, char *section, size_t seccap, ini_file_fn fn, void *ctx)
{
	char *s = ascii_trim_cstr(line);
	if (*s == '\0' || *s == '#' || *s == ';')
		return 1;
	if (*s == '[') {
		char *end = strchr(s, ']');
		if (!end)
			return 0;
		*end = '\0';
		snprintf(section, seccap, "%s", ascii_trim_cstr(s + 1));
		return 1;
	}
	char *eq = strchr(s, '=');
	if (!eq)
		return 0;
	*eq = '\0';
	char *key = ascii_trim_cstr(s), *value = eq + 1;
	if (*key == '\0')
		return 0;
	value = ascii_trim_cstr(value);
	if (*value == ';' || *value == '#')
		*value = '\0'; /* "key = ; comment": an empty value */
	else if (*value)
		cut_comment(value);
	return fn(ctx, section, key, ascii_trim_cstr(value)) != 0;
}

int ini_file_parse(const char *path, ini_file_fn fn, void *ctx)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *line = malloc(INI_FILE_MAX_LINE + 2);
	char section[256] = "";
	int rc = line ? 0 : -2, n = 0;
	while (rc == 0 && fgets(line, INI_FILE_MAX_LINE + 2, f)) {
		n++;
		size_t len = strlen(line);
		if (len > INI_FILE_MAX_LINE && line[len - 1] != '\n') {
			rc = n; /* longer than the limit */
			break;
		}
		char *s = line;
		if (n == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
		    (unsigned char)s[2] == 0xBF)
			s += 3;
		if (!parse_line(s, section, sizeof section, fn, ctx))
			rc = n;
	}
	if (rc == 0 && ferror(f))
		rc = -1;
	int e = errno;
	free(line);
	fclose(f);
	errno = e;
	return rc;
}
