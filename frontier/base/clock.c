/* clock.c: see clock.h. */
#include "frontier/base/clock.h"

#include <stdbool.h>
#include <string.h>

#include "frontier/base/ascii.h"

size_t wall_clock_text(int64_t unix_ms, char out[WALL_CLOCK_TEXT_MAX])
{
	time_t secs = (time_t)(unix_ms / 1000);
	int ms = (int)(unix_ms % 1000);
	struct tm tm;
	if (ms < 0) {
		ms += 1000;
		secs -= 1;
	}
	if (!gmtime_r(&secs, &tm))
		memset(&tm, 0, sizeof tm); /* a year past int: 1900-01-00 */
	const struct {
		long long v;
		int width;
		char after;
	} parts[] = {
		{ tm.tm_year + 1900LL, 4, '-' },
		{ tm.tm_mon + 1, 2, '-' },
		{ tm.tm_mday, 2, 'T' },
		{ tm.tm_hour, 2, ':' },
		{ tm.tm_min, 2, ':' },
		{ tm.tm_sec, 2, '.' },
		{ ms, 3, 'Z' },
	};
	char *o = out;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		char tmp[24];
		char *end = tmp + sizeof(tmp);
		long long v = parts[i].v;
		bool neg = v < 0; /* printf's width counts the sign */
		char *p = ascii_decimal_before(
		        end, neg ? 0ULL - (unsigned long long)v : (unsigned long long)v,
		        neg ? parts[i].width - 1 : parts[i].width);
		if (neg)
			*--p = '-';
		memcpy(o, p, (size_t)(end - p));
		o += end - p;
		*o++ = parts[i].after;
	}
	*o = '\0';
	return (size_t)(o - out);
}
