/*
 * fuzz_delay.c: the numbers a server sends to politeness/: arbitrary bytes
 * as a delay in seconds (delay_policy_parse_seconds), as a Retry-After value
 * and as a robots.txt Crawl-delay. Beyond "no crash", it aborts when a
 * number wraps instead of saturating:
 *  - the microseconds parsed agree with strtod on the same text, or are
 *    saturated where strtod's value passes 2^64 (a value just below 2^64
 *    that strtod rounds up to it may also be exact);
 *  - a Retry-After of n seconds lands exactly at now + n (saturating), and
 *    the next visit is never past the 12 s cap nor before it when n >= 12 s;
 *  - a Crawl-delay of n >= 5 s gives the 5 s cap, one that is no number
 *    gives no delay.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "politeness/delay_policy.h"
#include "politeness/robots.h"

#define S 1000000ull
#define INPUT_MAX 4096

static void check_seconds(const char *text, size_t len)
{
	uint64_t us;
	size_t used;
	char prefix[INPUT_MAX + 1];

	if (delay_policy_parse_seconds(text, len, &us, &used) != 0)
		return;
	if (used == 0 || used > len)
		abort();
	memcpy(prefix, text, used);
	prefix[used] = '\0';
	/* ref is rounded twice (strtod, then the product): a value just below
	 * 2^64 may come out as 2^64, so only a ref past 2^64 that us does not
	 * also agree with asks for saturation. */
	double ref = strtod(prefix, NULL) * 1e6;
	bool saturated = us >= 18446744073709549568ull; /* the largest double below 2^64 */
	bool agrees = fabs((double)us - ref) <= 1.0 + ref * 1e-9;
	if (!agrees && !(ref >= 18446744073709551616.0 && saturated))
		abort();
}

static void check_retry_after(const char *text, size_t len)
{
	const uint64_t now = 1000000 * S;
	struct politeness_config c;
	struct visit_outcome o = { VISIT_RETRY_LATER, now, 1, 0 };
	const char *p = text;
	uint64_t us;
	size_t used;

	if (politeness_parse_retry_after(text, now, 784111777, &o.retry_after_us) != 0)
		return;
	if (o.retry_after_us < now)
		abort();
	while (*p == ' ' || *p == '\t')
		p++;
	if (delay_policy_parse_seconds(p, len - (size_t)(p - text), &us, &used) == 0 &&
	    o.retry_after_us != (us > UINT64_MAX - now ? UINT64_MAX : now + us))
		abort();
	politeness_config_default(&c);
	c.retry_after_cap_us = 12 * S;
	uint64_t next = delay_policy_next_time(&c, &o, now, 0, 0);
	if (next > now + 12 * S || (o.retry_after_us >= now + 12 * S && next != now + 12 * S))
		abort();
}

/* Only for text the robots parser takes as the whole value: no spaces,
 * comments, colons or line ends. */
static void check_crawl_delay(const char *text, size_t len)
{
	struct politeness_config c;
	struct visit_outcome o = { VISIT_OK, 100 * S, 1, 0 };
	char body[INPUT_MAX + 64];
	struct robots *r = NULL;
	uint64_t us, cd_us = 0;
	size_t used;

	for (size_t i = 0; i < len; i++)
		if (text[i] <= ' ' || text[i] == '#' || text[i] == ':' ||
		    (unsigned char)text[i] >= 0x7f)
			return;
	int n = snprintf(body, sizeof body, "User-agent: *\nCrawl-delay: %s\n", text);
	if (robots_parse(body, (size_t)n, "FuzzBot/1.0", &r) != ROBOTS_OK)
		return;
	double cd = robots_crawl_delay(r);
	robots_destroy(r);
	if (cd > ROBOTS_CRAWL_DELAY_MAX_S)
		abort();
	if (cd > 0)
		cd_us = (uint64_t)(cd * 1e6);
	politeness_config_default(&c);
	c.crawl_delay_cap_us = 5 * S;
	uint64_t next = delay_policy_next_time(&c, &o, 101 * S, cd_us, 0);
	int rc = delay_policy_parse_seconds(text, len, &us, &used);
	if ((rc != 0 && cd >= 0) || (rc == 0 && us >= 5 * S && next != 106 * S))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[INPUT_MAX + 1];
	int64_t t;

	if (size > INPUT_MAX)
		size = INPUT_MAX;
	memcpy(text, data, size);
	text[size] = '\0';
	size = strlen(text); /* the header and robots parsers see C strings */
	check_seconds(text, size);
	check_retry_after(text, size);
	check_crawl_delay(text, size);
	(void)politeness_parse_http_date(text, &t);
	return 0;
}
