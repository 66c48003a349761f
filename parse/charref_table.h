/*
 * charref_table.h: layout of the generated table of named character
 * references (parse/charref_table.c, written by parse/gen_charref_table.py).
 * Internal to parse/charref.c and its tests; see parse/charref.h.
 *
 * charref_table holds every name of the HTML Standard's table, sorted by
 * bytes (so "amp" comes right before "amp;", and a name right before every
 * longer name it is a prefix of). A name is stored without its '&' and with
 * its ';' when it has one; its text is charref_names[name .. name+name_len).
 * The replacement is stored as UTF-8 (1 or 2 code points, 1..6 bytes).
 * charref_first[i] is the index of the first name starting with letter i
 * ('A'..'Z' = 0..25, 'a'..'z' = 26..51); charref_first[52] the table size.
 * Every name starts with an ASCII letter, continues with ASCII letters and
 * digits, and may end with ';'.
 */
#ifndef PARSE_CHARREF_TABLE_H
#define PARSE_CHARREF_TABLE_H

#include <stdint.h>

#define CHARREF_TABLE_SIZE 2231
#define CHARREF_NAME_MAX 32 /* longest name, with its ';' */

struct charref_entry {
	uint16_t name;          /* offset in charref_names */
	uint8_t name_len;       /* bytes, with the ';' if any */
	uint8_t value_len;      /* UTF-8 bytes of the replacement */
	unsigned char value[6]; /* the replacement, UTF-8 */
};

extern const char charref_names[];
extern const struct charref_entry charref_table[CHARREF_TABLE_SIZE];
extern const uint16_t charref_first[53];
/* What a numeric reference to 0x80 + i becomes (windows-1252's character,
 * or 0x80 + i itself where windows-1252 has none). */
extern const uint16_t charref_c1[32];

#endif
