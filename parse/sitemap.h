/*
 * sitemap.h: streaming parser of sitemap files (sitemaps.org protocol 0.9).
 *
 * Data structure. A `struct sitemap_parser` owns, for one document at a
 * time, a libxml2 SAX2 push parser context (only the element, text, entity
 * lookup and error callbacks are set: no tree is built), a zlib inflate
 * stream used when the body starts with the gzip magic bytes 1f 8b, one
 * inflate output buffer (SITEMAP_INFLATE_CHUNK bytes), a text buffer for
 * the current `<loc>` (the caller's URL length limit) and `<lastmod>`, and
 * two parsed URLs (frontier/url.h): the current loc and the scope URL. A
 * document is pushed in pieces (sitemap_begin, sitemap_feed...,
 * sitemap_finish) or in one call (sitemap_parse); memory stays bounded by
 * those buffers plus libxml2's input window, whatever the document's size.
 *
 * What is emitted: for `<urlset>` each `<url><loc>`, for `<sitemapindex>`
 * each `<sitemap><loc>` (children of the root's children only, so the
 * `image:loc` of extensions never counts), with the entry's `<lastmod>` when
 * present, through the caller's callback, at the end of the entry element.
 * Only the first loc of an entry counts. Elements are matched by local name
 * in any namespace (or none): a sitemap with the old Google 0.84 namespace
 * or none at all is read, as crawler-commons (Nutch's sitemap parser) does
 * by default; the result says so (`foreign_namespace`). The loc text is
 * trimmed of XML white space, CDATA sections count as text, entities are the
 * five predefined ones and character references. A loc must be an absolute
 * http(s) URL (the protocol demands it; relative ones are counted invalid)
 * and is emitted as its crawl key (url_crawl_key), the form the sieve and
 * the frontier use, like parse/links.h's links.
 *
 * Limits, each counted in the result: at most `max_locs` entries per file
 * (50,000 by the protocol; the rest are counted and dropped), at most
 * `max_bytes` uncompressed bytes (50 MB by the protocol; parsing stops
 * there, problem SITEMAP_TRUNCATED: a gzip bomb costs at most that much
 * inflating and parsing), locs longer than the URL length limit, element
 * nesting deeper than `max_depth`, a tag (or declaration, or processing
 * instruction) longer than `max_tag_bytes` or of more than `max_attributes`
 * attributes: the document is malformed there, found before libxml2 sees
 * the tag (libxml2's check for repeated attributes is quadratic in their
 * number), the entries before it kept. Scope (`scope`): the protocol lets a
 * sitemap list only URLs under its own directory on its own host, and a
 * sitemap listed by a host's robots.txt URLs of that host (cross-submission):
 * the caller knows which case applies and passes the scope URL.
 *
 * Safety: no external DTD is loaded, and entity references resolve to the
 * five predefined entities only (our getEntity callback; libxml2 records a
 * DTD's declarations in a scratch document we free, but never looks there
 * for us), so no entity is ever expanded: no external entity is read, no
 * "billion laughs". A reference to a DTD's entity is undeclared: the
 * document is malformed there ("Entity 'x' not defined"). No network access
 * (XML_PARSE_NONET); libxml2's own limits on names and text nodes stay on
 * (no XML_PARSE_HUGE). Malformed XML stops the document with
 * SITEMAP_MALFORMED and libxml2's message; the entries emitted before stay
 * emitted.
 *
 * Nesting of sitemap indexes is the crawler's business (it fetches the
 * listed sitemaps): the protocol forbids an index listing indexes
 * (SITEMAP_INDEX_DEPTH 1); SITEMAP_INDEX_DEPTH_MAX 2 tolerates the sites
 * that nest once more. Deeper levels should be counted and skipped.
 *
 * Threads: one parser per thread (a parse thread reuses it document after
 * document); libxml2's global state is initialised by xmlInitParser(),
 * called from sitemap_parser_create (call it once from the main thread
 * before starting threads). libxml2 errors are captured by a structured
 * error handler set per context: nothing is printed.
 *
 * Workload: a few sitemaps per site, each up to 50,000 locs and 50 MB,
 * often gzip-compressed; the cost is libxml2's parse plus one URL parse per
 * loc: a 50,000-loc sitemap (10.6 MB, with lastmod, changefreq and
 * priority) takes about 0.1 s on one core, gzip-compressed or not.
 */
#ifndef PARSE_SITEMAP_H
#define PARSE_SITEMAP_H

#include <stdbool.h>
#include <stddef.h>

/* The protocol's limits per file: 50,000 URLs, 50 MB (52,428,800 bytes)
 * uncompressed. */
#define SITEMAP_MAX_LOCS 50000u
#define SITEMAP_MAX_BYTES (50u * 1024u * 1024u)
/* Element nesting: a sitemap needs 3 (urlset, url, loc), extensions 5. */
#define SITEMAP_DEFAULT_MAX_DEPTH 16u
/* Index nesting the crawler should follow: an index lists sitemaps (1, the
 * protocol's rule); 2 also follows an index listed by an index. */
#define SITEMAP_INDEX_DEPTH 1u
#define SITEMAP_INDEX_DEPTH_MAX 2u
/* Inflate output handed to libxml2 at a time. */
#define SITEMAP_INFLATE_CHUNK (64u * 1024u)
/* Markup (a tag, "<!...>", "<?...?>") longer than this, or a tag of more
 * attributes (namespace declarations included), is malformed: a sitemap's
 * root with its extensions' namespaces needs about 10 attributes and 1 KiB. */
#define SITEMAP_MAX_TAG_BYTES 4096u
#define SITEMAP_MAX_ATTRIBUTES 32u
/* A lastmod longer than this (after trimming) is ignored. */
#define SITEMAP_LASTMOD_MAX 64u
/* A priority longer than this (after trimming) is ignored. */
#define SITEMAP_PRIORITY_MAX 16u

enum sitemap_err {
	SITEMAP_OK = 0,     /* success (a malformed document is still a success: see
	                       the result's problem) */
	SITEMAP_ENOMEM = 1, /* allocation failed; the document's results are partial */
	SITEMAP_EINVAL = 2, /* NULL argument, a call out of order, or the sitemap or
	                       scope URL is not an absolute http(s) URL */
	SITEMAP_EPARSER = 3 /* libxml2 or zlib could not create its context */
};

/* Static English text for an error code (never NULL). */
const char *sitemap_strerror(int err);

enum sitemap_kind {
	SITEMAP_KIND_UNKNOWN = 0, /* no root element seen (yet), or not a sitemap */
	SITEMAP_KIND_URLSET,      /* <urlset>: locs are pages */
	SITEMAP_KIND_INDEX        /* <sitemapindex>: locs are sitemaps */
};

/* "unknown", "urlset", "sitemapindex". */
const char *sitemap_kind_name(enum sitemap_kind kind);

/* Why a document stopped before its end, or did not parse. The first
 * problem is kept; entries emitted before it stay emitted. */
enum sitemap_problem {
	SITEMAP_FINE = 0,    /* parsed to its end */
	SITEMAP_MALFORMED,   /* XML not well-formed (or empty); see `message` */
	SITEMAP_NOT_SITEMAP, /* root element neither urlset nor sitemapindex */
	SITEMAP_TOO_DEEP,    /* elements nested deeper than max_depth */
	SITEMAP_TRUNCATED,   /* max_bytes uncompressed reached: parsing stopped */
	SITEMAP_BAD_GZIP,    /* gzip magic, but the stream is corrupt or cut */
	SITEMAP_STOPPED      /* the callback asked to stop */
};

/* "fine", "malformed", "not-sitemap", "too-deep", "truncated", "bad-gzip",
 * "stopped": the names for statistics. */
const char *sitemap_problem_name(enum sitemap_problem problem);

/* Which locs a sitemap may list, judged against the scope URL. */
enum sitemap_scope {
	SITEMAP_SCOPE_ANY = 0,  /* every http(s) URL (the crawler's scope rules judge) */
	SITEMAP_SCOPE_HOST,     /* same host as the scope URL ("same_host_only";
	                           scheme and port may differ) */
	SITEMAP_SCOPE_DIRECTORY /* the protocol's strict rule: same scheme, host and
	                           port, path under the scope URL's directory */
};

struct url_options;

struct sitemap_config {
	size_t max_locs;       /* 0 = SITEMAP_MAX_LOCS */
	size_t max_bytes;      /* uncompressed; 0 = SITEMAP_MAX_BYTES */
	unsigned max_depth;    /* element nesting; 0 = SITEMAP_DEFAULT_MAX_DEPTH */
	size_t max_tag_bytes;  /* 0 = SITEMAP_MAX_TAG_BYTES */
	size_t max_attributes; /* 0 = SITEMAP_MAX_ATTRIBUTES */
	enum sitemap_scope scope;
	/* URL length limit and canonicalizations of the locs' crawl keys
	 * (frontier/url.h); copied at create; NULL = url.h's defaults. */
	const struct url_options *url_options;
};

/* One entry, borrowed by the callback (valid during the call only). */
struct sitemap_entry {
	const char *url; /* crawl key, NUL-terminated */
	size_t len;
	enum sitemap_kind kind; /* URLSET: a page; INDEX: a sitemap */
	const char *lastmod;    /* trimmed text of <lastmod> (not validated), or NULL */
	/* <priority> of a urlset entry, 0.0 to 1.0; -1 when it has none or
	 * one that is no number in that range */
	double priority;
};

/* The crawl tier (-3..3, best first) of a sitemap priority: 0.5, the
 * protocol's default, and none (-1) are 0; 0.0..1.0 map linearly onto
 * -3..3, rounded (1.0: 3, 0.8: 2, 0.6: 1, 0.3: -1). */
int sitemap_priority_tier(double priority);

/* Called for each entry in document order; return 0 to go on, anything else
 * to stop the document (problem SITEMAP_STOPPED). */
typedef int (*sitemap_entry_fn)(const struct sitemap_entry *entry, void *arg);

/* What a document gave (filled by sitemap_finish). */
struct sitemap_result {
	enum sitemap_kind kind;
	enum sitemap_problem problem;
	char message[160];         /* problem in words ("line 7: ..."), "" if fine */
	size_t locs;               /* entries emitted */
	size_t dropped_over_limit; /* entries after the first max_locs */
	size_t too_long;           /* locs (or their crawl keys) over the URL length limit */
	size_t invalid;            /* locs that do not parse as absolute http(s) URLs */
	size_t out_of_scope;       /* locs refused by the scope rule */
	size_t empty;              /* entries without a loc, or with an empty one */
	size_t bytes;              /* uncompressed bytes parsed */
	bool gzip;                 /* the body was gzip-compressed */
	bool foreign_namespace;    /* root not in the sitemaps.org 0.9 namespace */
};

struct sitemap_parser;

/* New parser (config may be NULL for the defaults). On error *out = NULL. */
int sitemap_parser_create(const struct sitemap_config *config, struct sitemap_parser **out);
/* Frees everything (an unfinished document too); NULL is a no-op. */
void sitemap_parser_destroy(struct sitemap_parser *p);

/*
 * Starts a document fetched from `sitemap_url` (NUL-terminated, absolute
 * http(s), borrowed during the call). `scope_url` is the URL the scope rule
 * compares locs with: NULL for the sitemap URL itself, or the robots.txt URL
 * of a host whose robots.txt listed this sitemap (cross-submission). `fn`
 * (with `arg`) receives the entries during sitemap_feed / sitemap_finish.
 * An unfinished previous document is discarded.
 */
int sitemap_begin(struct sitemap_parser *p, const char *sitemap_url, const char *scope_url,
                  sitemap_entry_fn fn, void *arg);

/* Pushes the next `len` bytes of the body (gzip or not; any split). Once the
 * document has stopped (a problem) the rest is ignored: still SITEMAP_OK. */
int sitemap_feed(struct sitemap_parser *p, const char *data, size_t len);

/* Ends the document and fills *result. SITEMAP_ENOMEM if memory ran out
 * during the document (the counts are still filled). */
int sitemap_finish(struct sitemap_parser *p, struct sitemap_result *result);

/* The whole body at once: begin, feed, finish. */
int sitemap_parse(struct sitemap_parser *p, const char *sitemap_url, const char *scope_url,
                  const char *body, size_t len, sitemap_entry_fn fn, void *arg,
                  struct sitemap_result *result);

#endif
