/*
 * Server models of the test web: per host, how fast and how much a server
 * answers (latency distribution, bandwidth, capacity), and what the server
 * saw (requests in flight, arrivals in the last second). Read from a
 * line-based text (a --models file, --model lines, or lines a plan embeds).
 *
 * THE TEXT (one rule a line; '#' starts a comment; blank lines ignored):
 *
 *   SELECTOR [after DURATION] SETTING [SETTING ...]
 *
 *   SELECTOR  *            every host of the web (the default)
 *             hI           host index I
 *             hA-hB        host indexes A..B, inclusive
 *             PATTERN      glob (fnmatch) on the host name hI.DOMAIN,
 *                          case-insensitive; must contain '.', '*', '?' or '['
 *   SETTING   latency fixed D | uniform D1 D2 | normal MEAN SD
 *                     | lognormal MEAN SD | exponential MEAN
 *             bandwidth RATE   bytes per second per response (headers and
 *                              body), RATE = N[B|KB|KiB|MB|MiB|GB|GiB][/s]
 *                              or 'unlimited' (the default)
 *             capacity N       requests in service at once, 0 = unlimited
 *                              (the default)
 *             over 429|503     status beyond capacity (default 429)
 *             retry-after N    its Retry-After seconds (default 1)
 *   D         a duration with its unit: 50ms, 1.5s, 800us
 *
 * A host's model starts from the defaults (latency fixed 0ms, unlimited
 * bandwidth and capacity), then every rule whose selector matches it
 * applies, in text order, later settings overriding earlier ones. Rules
 * with 'after T' build a phase that starts T after the host's first
 * request: phase T = the phase before it, then the matching 'after T'
 * rules in text order (at most TW_MODEL_PHASES phases per host).
 *
 * Invariants: rules are immutable once parsed; a host's model is resolved
 * on its first arrival and interned (hosts with equal models share one);
 * per-host state lives in pages of TW_MODEL_PAGE hosts allocated on first
 * touch, so a web of 10^8 hosts costs only the pages its requests reach.
 * Latency samples come from a splitmix64 stream per host keyed by (seed,
 * host): the k-th request of a host always draws the same latency.
 *
 * Workload: one arrive and one depart per request on the server's loop
 * thread (not thread-safe); resolution once per host.
 */
#ifndef TESTS_TESTWEB_MODELS_H
#define TESTS_TESTWEB_MODELS_H

#include <stddef.h>
#include <stdint.h>

#define TW_MODEL_PHASES 16
#define TW_MODEL_PAGE 4096

enum tw_latency_dist {
	TW_LAT_FIXED = 0,  /* a */
	TW_LAT_UNIFORM,    /* a..b */
	TW_LAT_NORMAL,     /* mean a, sd b, truncated at 0 */
	TW_LAT_LOGNORMAL,  /* mean a, sd b of the latency itself */
	TW_LAT_EXPONENTIAL /* mean a */
};

/* One phase of a host's model; times in microseconds. */
struct tw_model_phase {
	uint64_t after_us; /* since the host's first request */
	enum tw_latency_dist dist;
	double lat_a_us;
	double lat_b_us;
	uint64_t bandwidth;   /* bytes per second, 0 = unlimited */
	uint32_t capacity;    /* 0 = unlimited */
	uint32_t retry_after; /* seconds */
	int over_status;      /* 429 or 503 */
};

/* A resolved model: phases sorted by after_us, phase[0].after_us == 0. */
struct tw_model {
	unsigned nphases;
	struct tw_model_phase phase[TW_MODEL_PHASES];
};

/* What the server saw and decided when a request arrived. */
struct tw_arrival {
	uint32_t in_flight;   /* other requests of the host in service */
	uint32_t rate_1s;     /* arrivals of the host in the last second,
			       * this one included */
	int reject_status;    /* 0 = admitted, else 429 or 503 */
	uint32_t retry_after; /* with reject_status */
	uint64_t delay_us;    /* latency before the first byte */
	uint64_t bandwidth;   /* bytes per second, 0 = unlimited */
};

struct tw_models;

/* An empty rule set (every host gets the defaults); NULL if out of memory. */
struct tw_models *tw_models_create(void);
/* Frees everything; NULL does nothing. */
void tw_models_destroy(struct tw_models *m);

/* Appends the rules of text (len bytes, need not be NUL-terminated);
 * source names it in errors, first_line is the number of its first line.
 * Returns 0, or -1 with "SOURCE:LINE: what is wrong" in err (no rule of a
 * rejected text is kept). */
int tw_models_parse(struct tw_models *m, const char *text, size_t len, const char *source,
                    int first_line, char *err, size_t errcap);
/* Reads and parses a file (at most 1 MiB); -1 with a message in err. */
int tw_models_load(struct tw_models *m, const char *path, char *err, size_t errcap);

/* Binds the rules to a web before any arrival: host names are
 * "hI.DOMAIN", selectors must name hosts below `hosts`, seed keys the
 * latency streams. -1 with "SOURCE:LINE: ..." in err. */
int tw_models_bind(struct tw_models *m, const char *domain, long hosts, uint64_t seed, char *err,
                   size_t errcap);

/* The model of host (0 <= host < hosts); NULL if out of memory. Borrowed:
 * valid until tw_models_destroy. */
const struct tw_model *tw_models_resolve(struct tw_models *m, long host);

/* A request of host arrives at now_us (monotonic). observe_only: count it
 * and admit it without shaping (fault responses). An admitted request
 * (a->reject_status == 0) must be followed by one tw_models_depart.
 * Returns 0, or -1 if out of memory (nothing counted). */
int tw_models_arrive(struct tw_models *m, long host, uint64_t now_us, int observe_only,
                     struct tw_arrival *a);
/* An admitted request of host left service (answered or connection gone). */
void tw_models_depart(struct tw_models *m, long host);

/* One latency draw of phase p from the stream *rng (advanced). */
uint64_t tw_model_latency_sample(const struct tw_model_phase *p, uint64_t *rng);

#endif
