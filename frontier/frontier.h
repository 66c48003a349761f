/*
 * frontier.h: the host table and the per-host queues of URLs to visit,
 * held in memory up to a byte budget and spilled to disk beyond it. A
 * host's queue is one FIFO per tier (frontier_tier: the URL rule's
 * priority, then the depth under FRONTIER_ORDER_DEPTH), the highest tier
 * popped first.
 *
 * Data structure.
 *   - Host table: a hash index from a host key (scheme://host:port, e.g.
 *     "http://h17.web.test:8080", derived by the caller from the URL module)
 *     to a dense host id (uint32_t, 0..n-1, never reused). Per host: its key
 *     and, beside it, its host name (cut once from the key by url_key_split,
 *     so no caller cuts the key again), pages and bytes fetched, URLs ever
 *     queued, a retired flag, and its queue record while it has URLs
 *     queued (an idle host keeps none). The rest of a host's state lives in
 *     politeness/politeness.h, indexed by the same host id: its timing
 *     (next allowed time, in-flight token, consecutive errors), its IP (the
 *     one copy the crawler keeps) and its robots.txt rules.
 *   - Tiers: a host whose queued URLs are all of one tier has one queue
 *     (below); a host with URLs of several tiers has a tier table, its
 *     queues sorted best tier first, each non-empty (a queue is freed as
 *     soon as it is empty, the table as soon as one tier is left).
 *   - Queue of a host's tier = [memory part] then [disk part], in FIFO order. The
 *     memory part is a linked list of records (URL, via-URL, depth). The disk
 *     part is a chain of extents in shared append-only segment files (one
 *     extent per host per flush of the shared write buffer), followed by the
 *     host's records still in the write buffer. Extents are chained by a
 *     "next" pointer patched into the previous extent's header when the next
 *     one is written. No file descriptor is held per host: only one per live
 *     segment (64 MiB each by default).
 *   - A URL goes to the memory part only when the disk part is empty and the
 *     memory budget minus a refill reserve (a quarter of the budget left
 *     after the fixed buffers) allows it; otherwise it goes to the disk part.
 *     When the memory part of a host runs empty, the next pop reads a batch
 *     from the front of its disk part: at least one record, at most the
 *     host's share of the reserve (reserve / hosts with spilled URLs, at
 *     least 512 bytes) and what the budget allows, and never past the end of
 *     the current extent. A segment is unlinked once every extent in it is
 *     consumed.
 *
 * Invariants.
 *   - Per host, URLs come out of frontier_pop highest tier first and, within
 *     a tier, in exactly the order they went in (FIFO), each exactly once,
 *     whatever went through the disk. With a single tier (no rule priority,
 *     FRONTIER_ORDER_BFS) that is plain FIFO.
 *   - frontier_stats().mem_bytes <= config.mem_budget, where mem_bytes counts
 *     the host structs, keys, hash index, the write buffer and every record
 *     in memory. The only excess allowed: a pop that finds a host's memory
 *     part empty always brings back at least one record (bounded by one
 *     record of at most 2 * FRONTIER_URL_MAX bytes). If the host table alone
 *     outgrows the budget, every new URL goes to disk.
 *   - A retired host keeps its id but accepts no URL; its queued URLs were
 *     handed to the drain callback and counted as dropped, never lost silently.
 *
 * Via-URL: each queued URL carries the URL it was discovered from (optional,
 * may be empty) as a string, so the crawl log can print it without another
 * lookup; callers that want it cheaper pass an empty via and keep their own id.
 *
 * Memory costs: per host 56 bytes of struct + its key and name (in a
 * shared arena) + 8 bytes of hash index: about 110 bytes for a host with
 * nothing queued; a host with URLs queued has a queue record besides
 * (memory and disk part state: 112 bytes as malloc rounds it), made at its
 * first URL and freed when its queue is empty again (all counted in
 * mem_budget); a host with URLs of two tiers or more has one such record
 * per tier and a tier table (8 bytes + 8 per slot, 4 slots at first: 48
 * bytes as malloc rounds it); a host of one tier pays nothing for tiers
 * (the tier is a field of the queue record, within its 96 bytes); per
 * record in memory 16 bytes of
 * header + URL + via, rounded as malloc does (counted); fixed: the write
 * buffer, a flush chunk (<= 1 MiB), a 64 KiB read chunk (counted). On disk:
 * 8 bytes per record + 32 per extent; a segment lives until every extent in
 * it is consumed, so disk use can exceed the live data while slow hosts hold
 * old segments.
 *
 * Workload: one push per URL the sieve emits, one pop per fetch; pushes and
 * pops are O(1) in memory plus amortized sequential disk I/O when spilled.
 * Thread safety: none. The fetch loop thread alone uses a frontier.
 */
#ifndef FRONTIER_FRONTIER_H
#define FRONTIER_FRONTIER_H

#include <stddef.h>
#include <stdint.h>

/* Longest URL (and via-URL) a queue record can hold, in bytes. */
#define FRONTIER_URL_MAX 8192u
/* Longest host key, in bytes. */
#define FRONTIER_KEY_MAX 512u
/* Host id returned when there is none. */
#define FRONTIER_HOST_NONE UINT32_MAX

/* The depth word of a queue record carries three counts and a priority:
 * the link depth in its low FRONTIER_DEPTH_BITS bits; above them, in
 * FRONTIER_EMBED_BITS bits, the embed code (0: a page or link; e > 0: a
 * page requisite, an embed, reached by e - 1 embeds in a row off the
 * crawl's allowed domains, see crawler/parse_jobs.h); above that, in
 * FRONTIER_REDIRECTS_BITS bits, how many redirects led to the URL (a
 * redirect target keeps the link depth and the embed code of the URL that
 * redirected; its count is one more); and in the top
 * FRONTIER_PRIORITY_BITS bits the URL rule's priority (-3..3, two's
 * complement; 0 when no rule gave one: url_rules.h), which the crawl
 * order reads. The word travels unchanged wherever depth does (sieve side
 * table, queues, spill files, checkpoints, cluster inboxes); max_depth
 * applies to the link depth alone. A word written before the priority
 * existed reads as priority 0 when its redirect count was under 32. */
#define FRONTIER_DEPTH_BITS 20
#define FRONTIER_DEPTH_MASK ((1u << FRONTIER_DEPTH_BITS) - 1)
#define FRONTIER_EMBED_BITS 4
#define FRONTIER_EMBED_MAX ((1u << FRONTIER_EMBED_BITS) - 1)
/* Most off-domain embeds in a row an embed code can say. */
#define FRONTIER_EMBED_HOPS_MAX (FRONTIER_EMBED_MAX - 1)
#define FRONTIER_REDIRECTS_SHIFT (FRONTIER_DEPTH_BITS + FRONTIER_EMBED_BITS)
#define FRONTIER_REDIRECTS_BITS 5
#define FRONTIER_REDIRECTS_MAX ((1u << FRONTIER_REDIRECTS_BITS) - 1)
#define FRONTIER_PRIORITY_SHIFT (FRONTIER_REDIRECTS_SHIFT + FRONTIER_REDIRECTS_BITS)
#define FRONTIER_PRIORITY_BITS 3
#define FRONTIER_PRIORITY_MIN (-3)
#define FRONTIER_PRIORITY_MAX 3

/* depth must be at most FRONTIER_DEPTH_MASK, embed at most
 * FRONTIER_EMBED_MAX, redirects at most FRONTIER_REDIRECTS_MAX (larger
 * values saturate). Priority 0. */
static inline uint32_t frontier_depth_pack_embed(uint32_t depth, uint32_t redirects, uint32_t embed)
{
	if (depth > FRONTIER_DEPTH_MASK)
		depth = FRONTIER_DEPTH_MASK;
	if (embed > FRONTIER_EMBED_MAX)
		embed = FRONTIER_EMBED_MAX;
	if (redirects > FRONTIER_REDIRECTS_MAX)
		redirects = FRONTIER_REDIRECTS_MAX;
	return redirects << FRONTIER_REDIRECTS_SHIFT | embed << FRONTIER_DEPTH_BITS | depth;
}

/* The depth word of a page or link (embed code 0). */
static inline uint32_t frontier_depth_pack(uint32_t depth, uint32_t redirects)
{
	return frontier_depth_pack_embed(depth, redirects, 0);
}

static inline uint32_t frontier_depth_of(uint32_t word)
{
	return word & FRONTIER_DEPTH_MASK;
}

static inline uint32_t frontier_embed_of(uint32_t word)
{
	return word >> FRONTIER_DEPTH_BITS & FRONTIER_EMBED_MAX;
}

static inline uint32_t frontier_redirects_of(uint32_t word)
{
	return word >> FRONTIER_REDIRECTS_SHIFT & FRONTIER_REDIRECTS_MAX;
}

static inline int frontier_priority_of(uint32_t word)
{
	int p = (int)(word >> FRONTIER_PRIORITY_SHIFT);
	return p > FRONTIER_PRIORITY_MAX ? p - (1 << FRONTIER_PRIORITY_BITS) : p;
}

/* The word with its priority set to priority (clamped to -3..3). */
static inline uint32_t frontier_depth_with_priority(uint32_t word, int priority)
{
	if (priority < FRONTIER_PRIORITY_MIN)
		priority = FRONTIER_PRIORITY_MIN;
	if (priority > FRONTIER_PRIORITY_MAX)
		priority = FRONTIER_PRIORITY_MAX;
	uint32_t bits = (uint32_t)priority & ((1u << FRONTIER_PRIORITY_BITS) - 1);
	return (word & ((1u << FRONTIER_PRIORITY_SHIFT) - 1)) | bits << FRONTIER_PRIORITY_SHIFT;
}

/* The order in which a host's queued URLs come out: tiers, each FIFO
 * (first appearance), the highest tier first. A URL's tier is its rule
 * priority (frontier_priority_of), then, under FRONTIER_ORDER_DEPTH, its
 * link depth, shallower first: a rule's priority outranks depth. */
enum frontier_order {
	FRONTIER_ORDER_BFS = 0,   /* tiers by rule priority alone */
	FRONTIER_ORDER_DEPTH = 1, /* by rule priority, then shallower first */
	/* as BFS here: the priority bits then carry the focus tier of the
	 * page a link was found on, when no rule gave one (parse_jobs.h) */
	FRONTIER_ORDER_FOCUSED = 2,
};

/* The tier of a depth word under an order: higher comes out first. */
static inline uint32_t frontier_tier(uint32_t word, enum frontier_order order)
{
	uint32_t tier = (uint32_t)(frontier_priority_of(word) - FRONTIER_PRIORITY_MIN)
	                << FRONTIER_DEPTH_BITS;

	if (order == FRONTIER_ORDER_DEPTH)
		tier |= FRONTIER_DEPTH_MASK - frontier_depth_of(word);
	return tier;
}

/* The rule priority a tier holds (the inverse of frontier_tier's first
 * part). */
static inline int frontier_tier_priority(uint32_t tier)
{
	return (int)(tier >> FRONTIER_DEPTH_BITS) + FRONTIER_PRIORITY_MIN;
}

enum frontier_err {
	FRONTIER_OK = 0,
	FRONTIER_ERR_NOMEM = 1,     /* an allocation failed; nothing changed */
	FRONTIER_ERR_IO = 2,        /* spill file error (see errno); queue may be short */
	FRONTIER_ERR_INVALID = 3,   /* bad argument: NULL, bad host id, too long */
	FRONTIER_ERR_EMPTY = 4,     /* pop: the host's queue is empty (not an error) */
	FRONTIER_ERR_NOT_FOUND = 5, /* host_get without create: unknown key */
	FRONTIER_ERR_RETIRED = 6,   /* push: the host is retired; URL counted as dropped */
	FRONTIER_ERR_BUDGET = 7,    /* push: host reached max_urls_per_host; counted */
	FRONTIER_ERR_DEPTH = 8,     /* push: link depth > max_depth; counted */
	FRONTIER_ERR_FULL = 9,      /* host table reached max_hosts */
	FRONTIER_ERR_CORRUPT = 10,  /* restore: a checkpoint file is truncated or corrupt */
};

struct frontier_config {
	const char *spill_dir;      /* a private subdirectory is created here (default "/tmp") */
	uint64_t mem_budget;        /* bytes; default 256 MiB */
	uint64_t write_buffer;      /* bytes of the shared spill buffer, counted in the
	                               budget; default min(budget / 8, 32 MiB);
	                               clamped to [64 KiB, 512 MiB] */
	uint64_t segment_bytes;     /* segment file size before rotation; default 64 MiB,
	                               at most 1 GiB */
	uint64_t max_urls_per_host; /* URLs ever accepted per host; 0 = unlimited */
	uint32_t max_depth;         /* 0 = unlimited */
	uint32_t max_hosts;         /* 0 = unlimited (up to 2^31) */
	enum frontier_order order;  /* how a host's URLs are ranked; default BFS */
};

/* One URL taken out of a queue. Pointers stay valid until the next call on
 * the same frontier (they point into a scratch buffer the frontier owns). */
struct frontier_url {
	const char *url;
	size_t url_len;
	const char *via; /* "" when none */
	size_t via_len;
	uint32_t depth; /* the depth word: frontier_depth_of, frontier_redirects_of */
};

struct frontier_stats {
	uint64_t hosts;           /* hosts in the table (retired included) */
	uint64_t urls_queued;     /* URLs in all queues now */
	uint64_t urls_in_memory;  /* of which in memory */
	uint64_t urls_on_disk;    /* of which in the disk part (segments + write buffer) */
	uint64_t mem_bytes;       /* accounted memory, see invariants */
	uint64_t mem_hosts;       /* of which the host table: structs, keys, index */
	uint64_t mem_queues;      /* of which the queue records of hosts with URLs */
	uint64_t disk_bytes;      /* bytes in live segment files */
	uint64_t segments;        /* live segment files */
	uint64_t pushed;          /* URLs accepted, ever */
	uint64_t popped;          /* URLs handed out by frontier_pop, ever */
	uint64_t dropped_retired; /* URLs drained from retired hosts or refused by them */
	uint64_t rejected_budget; /* FRONTIER_ERR_BUDGET refusals */
	uint64_t rejected_depth;  /* FRONTIER_ERR_DEPTH refusals */
	uint64_t flushes;         /* write-buffer flushes to disk */
	uint64_t refills;         /* batches read back from the disk part */
};

struct frontier;

/* Called when a host's queue goes from empty to non-empty (politeness uses it
 * to put a parked host back in its heap), and when a push raises the tier
 * of its best URL (frontier_host_best_tier: politeness ranks it afresh). */
typedef void (*frontier_nonempty_fn)(void *ctx, uint32_t host);
/* Called for each URL drained from a retiring host. */
typedef void (*frontier_drain_fn)(void *ctx, uint32_t host, const struct frontier_url *u);

/* Fills *c with the defaults above (spill_dir "/tmp"). */
void frontier_config_default(struct frontier_config *c);

/* Creates a frontier; the config is copied (spill_dir too). A private
 * directory is created under spill_dir and removed by destroy. On error *out
 * is NULL and nothing is left behind. */
enum frontier_err frontier_create(const struct frontier_config *c, struct frontier **out);
/* Frees everything, deletes the spill files. NULL is a no-op. */
void frontier_destroy(struct frontier *f);

/* Looks a host key up (bytes, not necessarily NUL-terminated); with create,
 * adds it if missing. *host receives the id. */
enum frontier_err frontier_host_get(struct frontier *f, const char *key, size_t key_len, int create,
                                    uint32_t *host);
/* The key of a host (NUL-terminated, owned by the frontier); NULL if bad id. */
const char *frontier_host_key(const struct frontier *f, uint32_t host, size_t *len);
/* The host name of a host (NUL-terminated, owned by the frontier): its
 * key's host part as url_key_split cuts it (an IPv6 literal keeps its
 * brackets); "" when the key is not a crawl key. NULL if bad id. */
const char *frontier_host_name(const struct frontier *f, uint32_t host, size_t *len);
uint32_t frontier_host_count(const struct frontier *f);

/* Appends a URL to a host's queue (bytes are copied; via may be NULL). Fires
 * the nonempty callback when the queue was empty or its best tier rose. */
enum frontier_err frontier_push(struct frontier *f, uint32_t host, const char *url, size_t url_len,
                                const char *via, size_t via_len, uint32_t depth);
/* Takes the first URL of a host's best tier into *u (see struct frontier_url for
 * lifetime). FRONTIER_ERR_EMPTY when none. */
enum frontier_err frontier_pop(struct frontier *f, uint32_t host, struct frontier_url *u);
/* URLs queued for a host (memory + disk); 0 for a bad id. O(its tiers). */
uint64_t frontier_host_queued(const struct frontier *f, uint32_t host);
/* The tier of the URL frontier_pop would give next (frontier_tier); 0 when
 * the host has nothing queued. O(1). */
uint32_t frontier_host_best_tier(const struct frontier *f, uint32_t host);

/* Retires a host: every queued URL is popped, given to cb (may be NULL) and
 * counted in dropped_retired; later pushes are refused. Returns the number of
 * URLs drained via *n (may be NULL). Idempotent. */
enum frontier_err frontier_host_retire(struct frontier *f, uint32_t host, frontier_drain_fn cb,
                                       void *ctx, uint64_t *n);
int frontier_host_is_retired(const struct frontier *f, uint32_t host);

/* Adds fetched pages/bytes to a host's counters, and reads them back. */
void frontier_host_account(struct frontier *f, uint32_t host, uint64_t pages, uint64_t bytes);
void frontier_host_counts(const struct frontier *f, uint32_t host, uint64_t *pages, uint64_t *bytes,
                          uint64_t *urls_ever);

/* Puts a URL back at the FRONT of its host's queue: a URL popped for a
 * fetch that will not complete (the crawl stopped, a checkpoint re-queues
 * what was in flight). It goes to the memory part whatever the budget (one
 * record per host in flight: the same excess a refill allows). */
enum frontier_err frontier_unpop(struct frontier *f, uint32_t host, const char *url, size_t url_len,
                                 const char *via, size_t via_len, uint32_t depth);

/*
 * Checkpoint: writes into dir (an existing, empty folder) the frontier's
 * state (the host table with each host's counters, every queue in order, the counters of frontier_stats) so that
 * frontier_restore rebuilds it. The write buffer is flushed to a segment
 * first; memory parts are written out; disk parts are NOT copied: the live
 * segment files are hard-linked into dir (copied only across file systems),
 * since an extent's bytes never change once written except its `next`
 * link, and a restored frontier never follows the link of the last extent
 * it knows a host has. So the cost is O(hosts + memory budget), not
 * O(URLs queued on disk). Nothing is fsynced: the caller fsyncs dir's files. On error the
 * frontier is unchanged but for the flushed write buffer.
 */
enum frontier_err frontier_checkpoint(struct frontier *f, const char *dir);
/* frontier_checkpoint in two steps, for a caller that writes the second
 * from a copy of the process (fork): the segments (write buffer flushed,
 * live segment files linked into dir), which touches the frontier's own
 * files; then the queues file, which only reads the frontier's memory and
 * writes a new file. frontier_checkpoint = both, back to back. */
enum frontier_err frontier_checkpoint_segments(struct frontier *f, const char *dir);
enum frontier_err frontier_checkpoint_queues(const struct frontier *f, const char *dir);
/* Creates a frontier (as frontier_create with c) holding the state saved in
 * dir by frontier_checkpoint. dir's
 * files are only read (segments are linked or copied into the new private
 * folder), so one checkpoint can be restored any number of times.
 * FRONTIER_ERR_CORRUPT when dir's files are torn, truncated or
 * inconsistent; FRONTIER_ERR_IO (errno) when they cannot be read. */
enum frontier_err frontier_restore(const struct frontier_config *c, const char *dir,
                                   struct frontier **out);

/* Registers the empty->non-empty callback (one; NULL clears it). */
void frontier_set_nonempty_cb(struct frontier *f, frontier_nonempty_fn fn, void *ctx);

void frontier_stats(const struct frontier *f, struct frontier_stats *s);
const char *frontier_strerror(enum frontier_err e);

#endif
