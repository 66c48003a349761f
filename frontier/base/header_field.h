/*
 * header_field.h: the fields of a header block ("Name: value" lines, as
 * HTTP/1.1 and WARC write them), read where they lie.
 *
 * A block is a byte range; a line ends at LF (a CR before it is not part
 * of the value) or at the block's end. A field's name matches whatever its
 * case; its value is what follows the colon, without the spaces and tabs
 * around it. Nothing is allocated but by header_field_dup; nothing is
 * written to the block. Work: one pass over the block per call.
 */
#ifndef FRONTIER_BASE_HEADER_FIELD_H
#define FRONTIER_BASE_HEADER_FIELD_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the line [line, line_end) is one of field name's: name (any
 * case) then ':'. */
bool header_field_is(const char *line, const char *line_end, const char *name);

/* Splits the line [line, line_end) at its first ':': the name's length in
 * *name_len, the value trimmed in [*value, *value + *value_len). false when
 * the line has no ':'. */
bool header_field_split(const char *line, const char *line_end, size_t *name_len,
                        const char **value, size_t *value_len);

/* The next line of field name in [*at, end): its value in [*value,
 * *value + *len), and *at moved past that line, so that a loop reads every
 * line of a field sent on several. false, *at unchanged, when none is left. */
bool header_field_next(const char **at, const char *end, const char *name, const char **value,
                       size_t *len);

/* A copy of field name's value in the block [block, block + len): the
 * first line's, or with all every line's joined by ", " in order (RFC 9110
 * 5.3: a field sent on several lines is one comma-separated list). NULL
 * when the field is absent or memory is short; the caller frees it. */
char *header_field_dup(const char *block, size_t len, const char *name, bool all);

#endif
