/*
 * crawl_source.h: where the fetch loop's work comes from and where the URLs
 * the crawl finds go, behind one table of operations (as the sieves are,
 * sieve/sieve.h): crawl_source_open picks the implementation, and the loop
 * calls only the wrappers below, never asking which it has.
 *
 *   this process alone (crawl_source.c): every URL found (seeds, links,
 *       redirect targets) goes into its own sieve through the sieve path
 *       (sieve_path.h), which feeds its frontier; requests may always
 *       start; the page limit is [crawl] max_pages; the crawl ends when a
 *       flush of an idle crawl finds nothing new;
 *   an agent of a crawl shared through Redis (crawl_cluster.h): every URL
 *       found goes to the inbox of its host's owner, and only its own inbox
 *       feeds its sieve; requests wait while it is not live or has just
 *       gained hosts; the page budget is the whole crawl's; the end is the
 *       whole crawl's; a graceful stop hands everything over first.
 *
 * Link batches: the URLs an adding thread (a parse thread, the feeder)
 * finds leave through a batch of its own, made by the source: crawl keys
 * written in place at a slot, added with their depth word and via, handed
 * on at a flush (and whenever the batch fills): into the sieve, or (an
 * agent) to their owners. A batch is used by one thread at a time.
 *
 * Threads: the loop's thread for every operation but batch_create and the
 * batches' own, which run on the adding threads.
 */
#ifndef CRAWLER_CRAWL_SOURCE_H
#define CRAWLER_CRAWL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

struct crawl_source;
struct crawl_cluster_config;
struct politeness_config;
struct frontier;
struct politeness;
struct sieve_path;
struct link_meta_via;
struct visit_lease_hooks;
struct crawl_stats_pages;

/* ---- link batches ---- */

struct link_batch;
struct link_batch_ops {
	/* room for one more crawl key (at most [frontier] max_url_len): *room
	 * bytes at the returned address */
	char *(*slot)(struct link_batch *b, size_t *room);
	/* the key just written at the slot (klen bytes), with its depth word
	 * and via (borrowed) */
	void (*add)(struct link_batch *b, size_t klen, uint32_t depth, struct link_meta_via *via);
	/* hands on what the batch holds (may wait: never on the loop) */
	void (*flush)(struct link_batch *b);
	void (*destroy)(struct link_batch *b);
};
/* Every implementation's batch begins with this. */
struct link_batch {
	const struct link_batch_ops *ops;
};

static inline char *link_batch_slot(struct link_batch *b, size_t *room)
{
	return b->ops->slot(b, room);
}
static inline void link_batch_add(struct link_batch *b, size_t klen, uint32_t depth,
                                  struct link_meta_via *via)
{
	b->ops->add(b, klen, depth, via);
}
static inline void link_batch_flush(struct link_batch *b)
{
	b->ops->flush(b);
}
/* NULL is a no-op. */
static inline void link_batch_destroy(struct link_batch *b)
{
	if (b)
		b->ops->destroy(b);
}

/* ---- the source ---- */

/* What a source reads of the configuration (borrowed). */
struct crawl_source_config {
	const struct crawl_cluster_config *cluster; /* redis "": this process alone */
	const struct politeness_config *politeness; /* its delays: an agent's rests */
	uint64_t max_pages;                         /* [crawl] max_pages; 0: none */
	uint64_t max_time_ms;                       /* [crawl] max_time_ms; 0: none */
	uint32_t max_url_len;                       /* [frontier]: a found URL's room */
};

/* What a source uses (borrowed), and the loop's hooks. */
struct crawl_source_parts {
	uv_loop_t *loop;
	struct frontier *frontier;
	struct politeness *pol;
	struct sieve_path *sp;
	void *ctx;
	/* the pages the crawl has started, its earlier runs' included */
	uint64_t (*pages_started)(void *ctx);
	void (*pump)(void *ctx); /* loop thread: work for the loop arrived */
	void (*wake)(void *ctx); /* any thread: the same, through the loop's async */
	/* the source cannot go on: the crawl stops with exit_code */
	void (*fail)(void *ctx, int exit_code);
	/* a URL straight into the frontier (an emitted URL's way): 0, or -1
	 * not now */
	int (*take)(void *ctx, const char *url, size_t len, const char *via, size_t via_len,
	            uint32_t depth);
	/* an agent's inbox URL (NUL-terminated, len bytes) with its depth
	 * word, as another agent wrote it: 1 if this crawl takes it, *out
	 * then its word clamped (parse_jobs_inbound), else 0 */
	int (*inbound)(void *ctx, const char *url, size_t len, uint32_t word, uint32_t *out);
	/* an agent: the index of the first entry of the crawl's shared rules
	 * this crawl has not applied, into *next: 0, or -1 not known yet */
	int (*shared_next)(void *ctx, uint64_t *next);
	/* an agent: the shared rules' entry index, its text[len] applied as
	 * rules steered here (source names them), or, text NULL, passed (this
	 * agent's own, applied when steered) */
	void (*shared_apply)(void *ctx, uint64_t index, const char *text, size_t len,
	                     const char *source);
};

/* The source's own counters. */
struct crawl_source_stats {
	uint64_t links_dropped; /* found URLs lost on their way out (no memory) */
	/* an agent's inbox URLs this crawl does not take (parse_jobs_inbound),
	 * and entry lines no agent writes */
	uint64_t inbox_rejected;
};

/* The table an implementation provides; each function has the contract of
 * the wrapper below. open, close, page_allowed, budget_over and
 * batch_create are required; any other may be NULL, and then means what a
 * crawl of this process alone does (redis's dictType manner): ready
 * always, keep every host, nothing to pump, stop or tick, the end when
 * dry, let a stop end at once, never leaving, the time never up, no
 * progress part, no lease hooks, counters all 0, no rules to share. */
struct crawl_source_ops {
	int (*open)(const struct crawl_source_config *cfg, const struct crawl_source_parts *parts,
	            void **impl);
	void (*stop)(void *impl);
	void (*close)(void *impl);
	int (*ready)(void *impl);
	int (*page_allowed)(void *impl);
	int (*budget_over)(void *impl);
	int (*keep_host)(void *impl, uint32_t host);
	void (*pump)(void *impl);
	int (*done)(void *impl, int dry);
	int (*leave)(void *impl, int loop_idle);
	int (*leaving)(void *impl);
	int (*time_up)(void *impl);
	void (*tick)(void *impl, const struct crawl_stats_pages *pages);
	int (*progress)(void *impl, char *buf, size_t cap);
	void (*leases)(void *impl, struct visit_lease_hooks *out);
	struct link_batch *(*batch_create)(void *impl);
	void (*stats)(void *impl, struct crawl_source_stats *out);
	void (*share_rules)(void *impl, const char *text, size_t len, const char *source);
};

/* Opens the source cfg names (this process alone, or an agent joining
 * cfg->cluster: joining goes on in the background). A crawl exit code
 * (crawl_exit.h); *out NULL on error. */
int crawl_source_open(const struct crawl_source_config *cfg, const struct crawl_source_parts *parts,
                      struct crawl_source **out);
/* Teardown, before the loop's last turns: its work on the loop stops (an
 * agent's Redis connection closes, its lease lapses: no graceful leave);
 * its batches stay usable until crawl_source_close. NULL is a no-op. */
void crawl_source_stop(struct crawl_source *s);
/* Stops it if not stopped, and frees it, after every batch it made is
 * gone. NULL is a no-op. */
void crawl_source_close(struct crawl_source *s);

/* 1 if requests may start now. */
int crawl_source_ready(struct crawl_source *s);
/* 1 if one more page may start (the visit's page_allowed hook). */
int crawl_source_page_allowed(struct crawl_source *s);
/* 1 once the page budget is spent: the crawl then ends when idle, as on
 * max_pages. */
int crawl_source_budget_over(struct crawl_source *s);
/* A host the politeness heap handed out: 1 if it is this crawl's to visit;
 * else its URLs went elsewhere and the host was given back (0), or some
 * could not go yet and stay queued (-1: hand out no more hosts in this
 * pump). */
int crawl_source_keep_host(struct crawl_source *s, uint32_t host);
/* Every pump, after a checkpoint's cut: found URLs go out, incoming ones in. */
void crawl_source_pump(struct crawl_source *s);
/* The end check: dry is sieve_path_dry's answer (1: the loop is idle and a
 * flush found nothing new). 1 once the crawl is over. */
int crawl_source_done(struct crawl_source *s, int dry);
/* While the crawl stops gracefully (SIGINT, max_time; not after a
 * failure): 1 once the source lets it end (an agent first hands over what
 * it holds, once the loop is idle: nothing in flight, held or parsed). */
int crawl_source_leave(struct crawl_source *s, int loop_idle);
/* 1 while such a hand-over runs (nothing in flight then): the loop gives it
 * its own time before abandoning. */
int crawl_source_leaving(struct crawl_source *s);
/* 1 once the crawl's time is up for a reason of the source's (an agent:
 * the whole crawl's deadline, crawl.max_time_ms from its first agent's
 * start): the loop then stops gracefully, as on its own max_time. */
int crawl_source_time_up(struct crawl_source *s);
/* Once a second, with the crawl's figures. */
void crawl_source_tick(struct crawl_source *s, const struct crawl_stats_pages *pages);
/* The progress line's part into buf: 1, or 0 when the source has none. */
int crawl_source_progress(struct crawl_source *s, char *buf, size_t cap);
/* The visit's per-IP lease hooks (visit.h): none (acquire NULL) but for an
 * agent. */
void crawl_source_leases(struct crawl_source *s, struct visit_lease_hooks *out);
/* Any thread: a batch for the calling thread's found URLs; NULL if out of
 * memory. Destroy it with link_batch_destroy. */
struct link_batch *crawl_source_batch(struct crawl_source *s);
/* Rules steered into this crawl (checked and applied here), for the whole
 * crawl: an agent sends them to the other agents (crawl_cluster.h); alone,
 * nothing to do. */
void crawl_source_share_rules(struct crawl_source *s, const char *text, size_t len,
                              const char *source);
/* Its counters as they stand. */
void crawl_source_stats(const struct crawl_source *s, struct crawl_source_stats *out);

#endif
