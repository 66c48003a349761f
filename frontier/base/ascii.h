/*
 * ascii.h: byte classes of ASCII, whatever the locale (the <ctype.h>
 * functions follow the locale and take an int that must fit unsigned char).
 * For every module that scans protocol text: URLs, robots.txt, HTML
 * character references, the crawl log. Bytes >= 0x80 are in no class.
 */
#ifndef FRONTIER_BASE_ASCII_H
#define FRONTIER_BASE_ASCII_H

#include <stdbool.h>

static inline bool ascii_is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static inline bool ascii_is_alpha(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static inline bool ascii_is_alnum(unsigned char c)
{
	return ascii_is_digit(c) || ascii_is_alpha(c);
}

/* c in lower case when it is an ASCII capital letter, else c. */
static inline unsigned char ascii_to_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/* Value of the hex digit c (either case), or -1 if c is none. */
static inline int ascii_hex_value(unsigned char c)
{
	if (ascii_is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
