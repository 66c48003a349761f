/*
 * loop_rig.h: what the suites of the fetch loop's pieces share: a
 * temporary folder, a crawl configuration for tests, and a visit
 * (crawler/visit.h) over a real frontier and politeness heap, driven
 * without a network: its engine and resolver hooks are fakes that record
 * each request and answer only when the test says, as the loop would
 * (rig_answer hands the result to visit_result, frees the job and calls
 * visit_continue). Each test runs in its own process (Check's fork mode),
 * so a rig is a plain struct the test owns.
 */
#ifndef TESTS_LOOP_LOOP_RIG_H
#define TESTS_LOOP_LOOP_RIG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "crawler/config/config.h"
#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"
#include "crawler/sieve_path.h"
#include "crawler/visit.h"
#include "frontier/base/ipaddr.h"
#include "frontier/frontier.h"
#include "politeness/politeness.h"

#define RIG_MAX 64

/* A request the fake engine took, in order. */
struct rig_fetch {
	char url[512];
	char ip[IP_ADDR_STRLEN];
	unsigned flags;
	void *user;
	int answered;
};

/* A lookup the fake resolver took. */
struct rig_lookup {
	char name[256];
	dns_done_fn done;
	void *arg;
	int answered;
};

/* An IP lease asked (rig_open with leases). */
struct rig_lease {
	char key[IP_ADDR_STRLEN];
	unsigned ttl_ms;
	visit_lease_done_fn *done;
	void *arg;
};

struct rig {
	char dir[256];
	struct crawl_config cfg; /* rig_config's defaults; tune before rig_open */
	struct frontier_config fc;
	struct frontier *frontier;
	struct politeness *pol;
	struct done_set *done;
	struct visit *visit;
	struct visit_stats st; /* rig_stats's copy */
	int stopping, finished, pumps;
	int soon_pumps; /* pumps asked for the loop's next turn (a yield) */
	struct rig_fetch fetch[RIG_MAX];
	size_t nfetch;
	struct rig_lookup lookup[RIG_MAX];
	size_t nlookup;
	struct rig_lease lease[RIG_MAX];
	size_t nlease;
	char released[RIG_MAX][IP_ADDR_STRLEN]; /* leases shortened after a request */
	size_t nreleased;
};

/* A new temporary folder (path in dir, cap bytes); fails the test if not. */
void rig_tempdir(char *dir, size_t cap);
/* Removes a folder and what it holds. */
void rig_rmtree(const char *dir);

/* The text of every complete gzip member of the crawl's WARC files in dir
 * (crawl-*.warc.gz, by name), inflated and concatenated: a member cut
 * short, as when its writer has not flushed it yet, is left out. malloc'd
 * and NUL-terminated, *len its length; read with zlib, not the crawler's
 * reader, so that the tests judge the files independently. */
char *rig_warc_text(const char *dir, size_t *len);

/* r zeroed, a temporary folder, and the crawl's defaults with private
 * addresses allowed (the fakes answer with loopback ones) and ten URLs per
 * visit. */
void rig_config(struct rig *r);
/* The frontier (spilling in r->dir), the politeness heap, the done set and
 * the visit, with fake IP leases when leases. */
void rig_open(struct rig *r, int leases);
/* Frees everything, the folder too. */
void rig_close(struct rig *r);

/* The visit's counters, as they stand. */
const struct visit_stats *rig_stats(struct rig *r);
/* Queues url (a crawl key) for its host (created if new): its host. */
uint32_t rig_add(struct rig *r, const char *url);
/* Begins the visit of every host ready at now_us: how many. */
int rig_pop(struct rig *r, uint64_t now_us);
/* A time at which every host is ready. */
uint64_t rig_later(void);

/* A host's name is looked up (a new host's, or one whose address was
 * given up, its rest over within 5 s), answered with ip1 (and ip2), and
 * the visit under the IP's token begun: the visit a test is about. */
void rig_first_visit(struct rig *r, uint32_t host, const char *ip1, const char *ip2);
/* Answers lookup i with one or two addresses (ip2 may be NULL). */
void rig_resolve(struct rig *r, size_t i, const char *ip1, const char *ip2);
/* Answers request i with an HTTP response (retry_after_s -1: none; ctype
 * and location may be NULL), as the loop would: visit_result, the job
 * freed, visit_continue. */
void rig_answer(struct rig *r, size_t i, long status, const char *ctype, const char *body,
                long retry_after_s, const char *location);
/* Request i failed with e; nothing was sent when e is FETCH_ERR_CONNECT. */
void rig_fail(struct rig *r, size_t i, enum fetch_error e);

/* ---- the sieve path over a small Mercator sieve ---- */

#define RIG_GOT_MAX 64

struct rig_sieve {
	char dir[256], sieve_dir[300];
	struct crawl_config cfg; /* rig_sieve_open's */
	int own;                 /* cfg and dir are ours */
	struct sieve_config svc;
	struct io_stall *io;
	struct sieve_path *sp;
	struct sieve_path_stats st; /* rig_sieve_stats's copy */
	atomic_int wakes;
	struct {
		char url[256], via[256];
		uint32_t depth;
	} got[RIG_GOT_MAX]; /* what reached the frontier (the take hook), in order */
	size_t ngot;
};

/* In a new temporary folder, or in dir when not NULL (with cfg as given:
 * then cfg is borrowed, not freed), the feeder adding the seeds. */
void rig_sieve_open(struct rig_sieve *r, char *const *seeds, size_t nseeds);
void rig_sieve_open_in(struct rig_sieve *r, const char *dir, const struct crawl_config *cfg);
void rig_sieve_close(struct rig_sieve *r);
/* Waits (10 s at most) until the seeds are in and no flush is pending. */
void rig_sieve_quiet(struct rig_sieve *r);
/* A forced flush, as a checkpoint asks it, then everything emitted taken. */
void rig_sieve_flush(struct rig_sieve *r);
/* Drains until n URLs reached the frontier (10 s at most). */
void rig_sieve_drain_until(struct rig_sieve *r, size_t n);
/* The sieve path's counters, as they stand. */
const struct sieve_path_stats *rig_sieve_stats(struct rig_sieve *r);
/* 1 if url reached the frontier. */
int rig_sieve_got(const struct rig_sieve *r, const char *url);

#endif
