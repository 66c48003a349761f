/* header_field.c: see header_field.h. */
#include "frontier/base/header_field.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool header_field_is(const char *line, const char *line_end, const char *name)
{
	size_t n = strlen(name);
	return (size_t)(line_end - line) > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

bool header_field_split(const char *line, const char *line_end, size_t *name_len,
                        const char **value, size_t *value_len)
{
	const char *colon = memchr(line, ':', (size_t)(line_end - line));
	if (!colon)
		return false;
	const char *v = colon + 1, *ve = line_end;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	*name_len = (size_t)(colon - line);
	*value = v;
	*value_len = (size_t)(ve - v);
	return true;
}

bool header_field_next(const char **at, const char *end, const char *name, const char **value,
                       size_t *len)
{
	const char *p = *at;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = eol ? eol : end;
		size_t name_len;
		if (header_field_is(p, line_end, name) &&
		    header_field_split(p, line_end, &name_len, value, len)) {
			*at = eol ? eol + 1 : end;
			return true;
		}
		p = eol ? eol + 1 : end;
	}
	return false;
}

char *header_field_dup(const char *block, size_t len, const char *name, bool all)
{
	const char *at = block, *end = block + len, *v;
	size_t vlen, out_len = 0;
	char *out = NULL;
	if (!block)
		return NULL;
	while (header_field_next(&at, end, name, &v, &vlen)) {
		size_t sep = out ? 2 : 0;
		char *grown = realloc(out, out_len + sep + vlen + 1);
		if (!grown) {
			free(out);
			return NULL;
		}
		out = grown;
		memcpy(out + out_len, ", ", sep);
		memcpy(out + out_len + sep, v, vlen);
		out_len += sep + vlen;
		out[out_len] = '\0';
		if (!all)
			break;
	}
	return out;
}
