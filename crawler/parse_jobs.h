/*
 * parse_jobs.h: what the parse threads do with a fetched HTML page
 * (parse/parse_pool.h runs them): decode the body, extract its links,
 * judge each one by the URL rules (url_rules_live.h: first match wins; a
 * rule's accept lifts the domain limit and its depth=N replaces
 * max_depth) and the scope, write its crawl key into the thread's
 * link batch (made by the crawl's source, crawl_source.h: into the sieve,
 * or a cluster agent's to the hosts' owners), mark near-duplicates, then
 * hand the job to the writer.
 *
 * Focus ([crawl] focus, parse/focus.h): the text pass that feeds the
 * near-duplicate fingerprint also scores each HTML page against the focus
 * terms (j->focus, written to crawl.log). Under --order focused a page's
 * links (not its embeds) take the tier of its score (focus_tier) in the
 * priority bits of their depth word, unless the deciding URL rule gave a
 * non-zero priority, which wins. A URL keeps the tier of the page it was
 * first found on (the sieve drops the later finds).
 *
 * Near-duplicates ([parse] near_dup): a page within NEAR_DUP_DISTANCE of
 * a fingerprint of its host in the near-duplicate store (parse/near_dup.h,
 * [parse] near_dup_memory) is marked (CRAWL_LOG_NEAR_DUP), not dropped.
 *
 * Sitemaps: a robots.txt job's Sitemap URLs are registered at level 0 and
 * added like links (via the robots.txt URL, at the robots.txt's depth); a
 * sitemap's entries are scope-checked and added one hop deeper, with the
 * sitemap as their via, and with [crawl] sitemap_priority the tier of
 * their <priority> (sitemap_priority_tier) unless their rule gave a
 * non-zero priority; an index's entries are registered one level down
 * (up to SITEMAP_INDEX_DEPTH_MAX) and added at the index's own depth.
 *
 * Page requisites ([crawl] page_requisites): a page's embeds (links.h's
 * embed kinds) and a stylesheet's url()s enter the sieve like links but
 * with an embed code in their depth word (frontier.h) and at the link
 * depth of the page or stylesheet that names them (an embed is no hop for
 * max_depth, as in wget). Their scope rule: every rule of scope.h, except
 * that an embed may lie off the allowed domains when it is at most
 * requisites_hops hops off them. Hops: a page or an embed on the domains
 * is 0; an embed off them is one more than what named it (a page, or an
 * embedded stylesheet), or as many when it is on the same off-domain host
 * (a CDN's stylesheet and its fonts are one hop off; an image that
 * stylesheet names on yet another host, two). An embed is
 * not parsed for links (visit.c parses none), except a stylesheet, whose
 * url()s are embeds in turn. Same politeness as any URL of its host.
 * Recrawls: a page answered 304 to a conditional request (j->earlier,
 * archive/previous.h) is parsed from its earlier capture, read back from
 * the earlier crawl's WARC in the parse thread (one record, 32 KiB reads);
 * a capture that cannot be read is counted, its links then not followed
 * from here.
 * A resume's replayed job (crawl_tail.h: j->replayed) also adds its own
 * URL and its redirect target, and goes to the writer only to be freed.
 *
 * A job reaches the parse threads through the writer (crawl_writer.h),
 * which writes its records first: the loop hands every fetch's job to the
 * writer (parse_jobs_take), and the writer, once the records are out,
 * submits those with something to parse (parse_jobs_recorded); they go
 * back to the writer for their log line. A job to parse counts as
 * outstanding (parse_jobs_outstanding) from its take until its links are
 * in the sieve: "no parse job outstanding" then means every link found so
 * far was added. The pool's queue is bounded, and the writer never waits
 * on it: the loop starts no transfer unless parse_jobs_has_room.
 *
 * Answers waiting in the writer's queue for their records (or held by a
 * checkpoint) are not in the WARC yet, so a kill loses them and a resume
 * fetches them again; those in the parse threads are stored, and a
 * resume reads their links back from their records (crawl_tail.h). The
 * loop starts no transfer while [parse] queue answers wait in the
 * writer's queue, the parse threads or a checkpoint: at any moment at
 * most that many (the writer's job in hand included) + the transfers
 * then in flight (one a host) are received and not through; of them
 * only those before the writer's records are lost at a kill. The pool's
 * queue holds [parse] queue + max_connections jobs, so that every
 * transfer in flight still finds a slot.
 *
 * Counters (parse_jobs_stats): the parse threads and the writer's hook
 * bump atomics; writer_full is the loop thread's.
 */
#ifndef CRAWLER_PARSE_JOBS_H
#define CRAWLER_PARSE_JOBS_H

#include <stddef.h>
#include <stdint.h>

struct crawl_parse;
struct links_config;
struct url_options;
struct crawl_limits;
struct fetch_config;
struct scope;
struct url_rules_live;
struct sieve_path;
struct crawl_source;
struct crawl_writer;
struct crawl_job;
struct sitemap_registry;
struct focus_terms;

struct parse_jobs;

/* What the parse threads use, all borrowed. */
struct parse_jobs_parts {
	const struct crawl_parse *parse; /* [parse] */
	const struct links_config *links;
	const struct url_options *url; /* the crawl keys of links */
	/* [crawl] requisites_hops, sitemap_max_urls, _bytes, _tag_bytes, _attributes */
	const struct crawl_limits *crawl;
	/* [fetch] max_body_bytes (decoding), max_connections (the queue) */
	const struct fetch_config *fetch;
	struct scope *scope;
	struct url_rules_live *rules; /* the URL rules: one list taken per job */
	struct crawl_source *source;  /* each thread's batch for the links it finds */
	struct sieve_path *sp;        /* via strings; whether adding stopped */
	struct crawl_writer *writer;
	struct sitemap_registry *sitemaps; /* NULL: sitemaps are not followed */
	const struct focus_terms *focus;   /* NULL: pages are not scored */
	int focus_tiers;                   /* --order focused: links take their page's tier */
	void (*wake)(void *ctx);           /* any thread: a job went to the writer */
	void *ctx;
};

/* Starts parse->threads threads with a queue of parse->queue +
 * fetch->max_connections jobs. 0, or -1 (a message on stderr). */
int parse_jobs_create(const struct parse_jobs_parts *parts, struct parse_jobs **out);

/* Loop thread: queues j without waiting (takes it). 0, or -1 when full (j
 * not taken). */
int parse_jobs_try_submit(struct parse_jobs *pj, struct crawl_job *j);
/* Loop thread: a fetch's job goes to the writer for its records; a full
 * writer queue drops it (writer_full). Takes j. */
void parse_jobs_take(struct parse_jobs *pj, struct crawl_job *j);
/* The writer's `recorded` hook (writer thread): j's records are written;
 * when it has something to parse (j->parse) it goes to the parse threads,
 * without waiting (0: taken). -1: its log line follows now (nothing to
 * parse, or the parse queue full: counted as parse_full, j unparsed). */
int parse_jobs_recorded(struct parse_jobs *pj, struct crawl_job *j);
/* Is job j's redirect target in scope (the URL rules, then the scope)?
 * Then *word is its depth word, with the deciding rule's priority. A
 * page's target is judged as a link; an embed's by the embed rule above,
 * a redirect adding no hop: off the allowed domains it is one hop off
 * them at least, or as many as the embed was. Loop thread. */
int parse_jobs_redirect_in_scope(struct parse_jobs *pj, const struct crawl_job *j, uint32_t *word);
/* Is a URL from a cluster agent's inbox (with its depth word) one this
 * crawl takes? It must be a crawl key as this crawl writes them (parsed
 * again: the same bytes) and pass the URL rules and the scope (its trap
 * rules included) as a link or embed found here would. Then *out is its
 * word clamped to what this crawl makes (embed code at most
 * requisites_hops + 1, and 0 without page_requisites; redirects at most
 * max_redirects; the priority of the local rules, or when they give
 * none the word's own: a focus or sitemap tier). 1, or 0 (a rule's or
 * the scope's rejection counted there). Loop thread. */
int parse_jobs_inbound(struct parse_jobs *pj, const char *url, size_t len, uint32_t word,
                       uint32_t *out);
/* 1 if one more transfer may start: fewer than [parse] queue answers wait
 * (in the parse threads, the writer's queue, and `held`, the results a
 * checkpoint holds), and the pool's queue keeps room for the jobs the
 * writer will submit + in_flight + held + 1 more. */
int parse_jobs_has_room(struct parse_jobs *pj, size_t in_flight, size_t held);
/* Jobs to parse taken (or submitted by a replay) and not yet handed back
 * to the writer. */
uint64_t parse_jobs_outstanding(struct parse_jobs *pj);

/* The near-duplicate store's figures (zeros when near_dup is off). */
struct near_dup_stats;
void parse_jobs_near_dup_stats(struct parse_jobs *pj, struct near_dup_stats *s);

/* The counters of the parse threads, of parse_jobs_recorded (jobs sent on
 * unparsed: the parse queue full) and of parse_jobs_take (loop thread:
 * jobs dropped, the writer's queue full). */
struct parse_jobs_stats {
	uint64_t parsed;         /* HTML pages whose links were extracted */
	uint64_t links;          /* links found (embeds aside) */
	uint64_t scope_rejected; /* links, embeds and sitemap URLs out of scope */
	uint64_t rules_rejected; /* the same a URL rule rejected (redirect targets too) */
	uint64_t nofollow;       /* nofollow links, and pages with meta nofollow */
	uint64_t near_dups;      /* pages marked near-duplicates */
	uint64_t decode_errors;  /* bodies whose Content-Encoding would not decode */
	uint64_t url_invalid;    /* links that are no valid URL */
	uint64_t emit_dropped;   /* links lost: no memory for their via string */
	/* sitemaps: parsed, their URLs taken, parsed with a problem, not
	 * registered (the registry was full, or an index too deep) */
	uint64_t sitemaps, sitemap_urls, sitemap_problems, sitemaps_dropped;
	/* sitemap files malformed (XML, gzip, not a sitemap, too deep), cut at
	 * sitemap_max_bytes, with more than sitemap_max_urls entries; entries
	 * dropped past that */
	uint64_t sitemap_malformed, sitemap_too_large, sitemap_too_many, sitemap_urls_over_limit;
	/* page requisites: embeds found, in scope and handed to the sieve, of
	 * those off the allowed domains, stylesheets parsed */
	uint64_t embeds, embeds_added, embeds_off_domain, stylesheets;
	/* pages answered 304 to a recrawl: parsed from their earlier capture,
	 * and those whose earlier capture could not be read back */
	uint64_t earlier_parsed, earlier_unreadable;
	/* focus: HTML pages scored, of those on-topic (at [crawl]
	 * focus_threshold or more), and the sum of their scores
	 * (FOCUS_SCORE_ONE units) */
	uint64_t focus_scored, focus_on_topic, focus_score_sum;
	uint64_t parse_full, writer_full;
	/* memory now: the near-duplicate store, and the responses waiting for
	 * or in the parse threads */
	uint64_t mem_near_dup, mem_queued;
};
void parse_jobs_stats(const struct parse_jobs *pj, struct parse_jobs_stats *out);

/* Finishes every queued job and joins the threads (teardown); the figures
 * stay readable until parse_jobs_destroy. NULL is a no-op. */
void parse_jobs_stop(struct parse_jobs *pj);
/* Stops it if not stopped, and frees it. NULL is a no-op. */
void parse_jobs_destroy(struct parse_jobs *pj);

#endif
