/*
 * judge.h: a crawl judged from the test web's request log alone, in one
 * pass, for webs too large for the expected set (`--expected` lists about
 * 20 URLs per host: 20 million lines at a million hosts). What it checks
 * needs no BFS: the generator says for any host and path whether its
 * robots.txt allows it, and which pages are near-duplicates.
 *
 * Per request of a host of the web (log columns: time_us conn host ip
 * method path status bytes):
 *   - robots violation: a request other than /robots.txt (or a robots.txt
 *     redirect hop, /rr/K) to a host whose robots.txt was not requested
 *     before, or to a path its robots.txt disallows for the agent;
 *   - politeness violation: a request less than host_delay_ms (less the
 *     slack) after the host's previous one, or before it (the log holds
 *     requests in the order they ended; a host's requests never overlap
 *     when they are polite, so theirs is also the order they began);
 *   - robots.txt requests beyond a host's first (an expired or evicted
 *     robots.txt fetched again, a 5xx retried);
 *   - near-duplicate pairs: pages whose two variants (PAGE?q=1, PAGE?q=2:
 *     tw_variant_of) were both answered 200; a crawler flagging
 *     near-duplicates per host must flag one page of each pair.
 *
 * Memory: 12 bytes per host and 2 bits per page (variants), so a million
 * hosts take about 13 MiB; the log is streamed.
 */
#ifndef TESTS_TESTWEB_JUDGE_H
#define TESTS_TESTWEB_JUDGE_H

#include <stdint.h>
#include <stdio.h>

#include "tests/testweb/gen.h"

struct tw_judge_options {
	const char *agent;      /* the crawler's user agent: its product token is matched */
	unsigned host_delay_ms; /* 0: no politeness check */
	unsigned slack_us;      /* allowance when comparing timestamps */
	int64_t after_us;       /* first_after_us: the first request at or after this */
};

struct tw_judge_result {
	uint64_t requests;              /* log lines read */
	uint64_t outside;               /* requests of no host of the web */
	uint64_t hosts;                 /* hosts with a request */
	uint64_t robots_requests;       /* /robots.txt requests */
	uint64_t robots_repeats;        /* of which beyond a host's first */
	uint64_t hosts_robots_repeated; /* hosts whose robots.txt was requested twice or more */
	uint64_t robots_violations;
	uint64_t politeness_violations;
	uint64_t near_dup_pairs; /* pages with both variants answered 200 */
	int64_t first_us, last_us;
	int64_t first_after_us; /* -1: none */
};

/* Reads log to its end. 0, or -1 (out of memory, message on stderr). */
int tw_judge_log(const struct tw_config *cfg, const struct tw_judge_options *o, FILE *log,
                 struct tw_judge_result *r);
/* "name value" lines, one per figure. */
void tw_judge_write(const struct tw_judge_result *r, FILE *out);

#endif
