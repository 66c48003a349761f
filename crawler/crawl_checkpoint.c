/*
 * crawl_checkpoint.c: the checkpoint phase machine and the crawl state
 * file (see crawl_checkpoint.h).
 */
#include "crawler/crawl_checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "crawler/config/config.h"
#include "crawler/crawl_outdir.h"
#include "crawler/crawl_stats.h"
#include "crawler/crawl_tail.h"
#include "crawler/crawl_writer.h"
#include "crawler/net/fetch.h"
#include "crawler/parse_jobs.h"
#include "crawler/sieve_path.h"
#include "crawler/store/checkpoint.h"
#include "crawler/store/done_set.h"
#include "crawler/store/warc.h"
#include "crawler/visit.h"
#include "frontier/base/clock.h"
#include "frontier/base/recfile.h"
#include "frontier/frontier.h"
#include "frontier/scope.h"
#include "frontier/url_rules_live.h"
#include "politeness/politeness.h"
#include "sieve/sieve.h"

#define STATE_MAGIC "CRSTATE1"

enum ckpt_phase {
	CKPT_IDLE = 0,
	CKPT_DRAIN,  /* waiting for the parse threads and the feeder to be idle */
	CKPT_FLUSH,  /* waiting for a forced sieve flush to deliver everything */
	CKPT_WRITER, /* waiting for the writer thread to sync WARC and log */
	CKPT_COMMIT, /* a worker copies the sieve and fsyncs; then the switch */
};

struct crawl_ckpt {
	struct crawl_ckpt_parts p;
	enum ckpt_phase phase;
	int final;
	int rc;             /* worker thread, before its after-callback */
	uint64_t seq;       /* number of the checkpoint being / last written */
	uint64_t flush_seq; /* the forced flush it waits for */
	uint64_t t0_us, last_us;
	uint64_t phase_t0_us;         /* when the phase began */
	struct warc_position warc;    /* where the WARC stood at the writer's sync */
	uint64_t log_size;            /* and the crawl log's size */
	struct fetch_result **parked; /* results held while a checkpoint is taken */
	size_t n_parked, parked_cap;
	uv_work_t work;
	struct crawl_ckpt_stats st;
	char dir[4200];
	char err[4800]; /* worker thread, before its after-callback */
};

/* ---- the crawl state file ---- */

static void put_scope(struct recfile_writer *w, const struct scope *scope)
{
	recfile_put_u32(w, SCOPE_VERDICT_COUNT);
	for (int v = 0; v < SCOPE_VERDICT_COUNT; v++)
		recfile_put_u64(w, scope_count(scope, (enum scope_verdict)v));
}

/* Writes the crawl's own state (see crawl_checkpoint.h). */
static int state_save(struct crawl_ckpt *c, const char *path)
{
	struct recfile_writer *w;
	uint64_t now = monotonic_us();
	if (recfile_writer_create(path, STATE_MAGIC, &w) != RECFILE_OK)
		return -1;
	crawl_stats_save(c->p.stats, w);
	put_scope(w, c->p.scope);
	recfile_put_bytes(w, c->warc.file, (uint32_t)strlen(c->warc.file));
	recfile_put_u64(w, c->warc.offset);
	visit_save(c->p.visit, w, now);
	/* after the visit's part, so that checkpoints from before still read */
	recfile_put_u64(w, c->log_size);
	done_set_save(c->p.done, w);
	/* after the done set, so that checkpoints from before still read */
	url_rules_live_save_counts(c->p.rules, w);
	if (recfile_writer_close(w, 0) != RECFILE_OK)
		return -1;
	return 0;
}

static int get_scope(struct recfile_reader *rd, struct scope *scope)
{
	uint32_t k;
	uint64_t v;
	if (recfile_get_u32(rd, &k) != RECFILE_OK || k > SCOPE_VERDICT_COUNT)
		return -1;
	for (uint32_t i = 0; i < k; i++) {
		if (recfile_get_u64(rd, &v) != RECFILE_OK)
			return -1;
		scope_count_add(scope, (enum scope_verdict)i, v);
	}
	return 0;
}

/* Reads what state_save wrote (the frontier and politeness were restored
 * from the same checkpoint) into the parts, and where the checkpoint's cut
 * fell into *pos. 0, or -1 with the message in err. */
static int state_load(const char *path, const struct crawl_ckpt_resume_parts *p,
                      struct crawl_tail_pos *pos, char *err, size_t errlen)
{
	struct recfile_reader *rd = NULL;
	enum recfile_err re = recfile_reader_open(path, STATE_MAGIC, &rd);
	uint32_t len;
	int rc = -1;
	if (re != RECFILE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		         re == RECFILE_ERR_IO ? strerror(errno) : recfile_strerror(re));
		return -1;
	}
	if (crawl_stats_load(p->stats, rd) != 0 || get_scope(rd, p->scope) != 0)
		goto bad;
	if (recfile_get_bytes(rd, pos->warc_file, sizeof pos->warc_file - 1, &len) != RECFILE_OK ||
	    recfile_get_u64(rd, &pos->warc_offset) != RECFILE_OK)
		goto bad;
	pos->warc_file[len] = '\0';
	if (visit_load(p->visit, rd, monotonic_us()) != 0)
		goto bad;
	if (!recfile_reader_at_end(rd)) {
		if (recfile_get_u64(rd, &pos->log_offset) != RECFILE_OK ||
		    done_set_load(p->done, rd) != 0 ||
		    (!recfile_reader_at_end(rd) && url_rules_live_load_counts(p->rules, rd) != 0) ||
		    !recfile_reader_at_end(rd))
			goto bad;
		pos->known = 1;
	}
	rc = 0;
	goto out;
bad:
	snprintf(err, errlen, "%s: truncated or inconsistent crawl state", path);
out:
	recfile_reader_close(rd);
	return rc;
}

int crawl_ckpt_resume(const struct crawl_ckpt_resume_parts *p, const char *ckpt,
                      struct crawl_tail_pos *pos)
{
	char path[4400], err[4800];
	memset(pos, 0, sizeof *pos);
	pos->known = !ckpt; /* no checkpoint: all the outputs are the tail */
	if (ckpt) {
		snprintf(path, sizeof path, "%s/state", ckpt);
		if (state_load(path, p, pos, err, sizeof err) != 0) {
			fprintf(stderr, "crawler crawl: %s\n", err);
			return -1;
		}
	}
	if (crawl_outdir_repair(p->output->dir, pos->warc_file) != 0)
		return -1;
	if (!p->quiet)
		fprintf(stderr, "crawler crawl: resuming %s from %s\n", p->output->dir,
		        ckpt ? ckpt : "its seeds (no checkpoint was written)");
	return 0;
}

/* ---- the phases ---- */

/* Ends the phase under way, counting its time in *max, and begins next. */
static void phase_to(struct crawl_ckpt *c, enum ckpt_phase next, uint64_t *max)
{
	uint64_t now = monotonic_us(), dt = now - c->phase_t0_us;
	if (dt > *max)
		*max = dt;
	c->phase = next;
	c->phase_t0_us = now;
}

struct crawl_ckpt *crawl_ckpt_create(const struct crawl_ckpt_parts *parts, uint64_t seq)
{
	struct crawl_ckpt *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->p = *parts;
	c->seq = seq;
	c->last_us = monotonic_us();
	return c;
}

void crawl_ckpt_destroy(struct crawl_ckpt *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_parked; i++)
		fetch_result_free(c->parked[i]);
	free(c->parked);
	free(c);
}

void crawl_ckpt_stats(const struct crawl_ckpt *c, struct crawl_ckpt_stats *out)
{
	*out = c->st;
}

int crawl_ckpt_active(const struct crawl_ckpt *c)
{
	return c->phase != CKPT_IDLE;
}

int crawl_ckpt_due(const struct crawl_ckpt *c)
{
	unsigned s = c->p.output->checkpoint_interval_s;
	return s && monotonic_us() - c->last_us >= (uint64_t)s * 1000000u;
}

void crawl_ckpt_start(struct crawl_ckpt *c, int final)
{
	char msg[8];
	if (c->phase != CKPT_IDLE) {
		c->final |= final;
		return;
	}
	/* a failed sieve cannot be checkpointed: the previous one stands */
	if (sieve_path_failed(c->p.sieve, msg, sizeof msg)) {
		if (final)
			c->p.finish(c->p.ctx);
		return;
	}
	c->phase = CKPT_DRAIN;
	c->final = final;
	c->t0_us = c->phase_t0_us = monotonic_us();
	c->seq++;
	c->err[0] = '\0';
}

int crawl_ckpt_park(struct crawl_ckpt *c, struct fetch_result *res)
{
	if (c->phase == CKPT_IDLE)
		return 0;
	if (c->n_parked == c->parked_cap) {
		size_t cap = c->parked_cap ? 2 * c->parked_cap : 64;
		struct fetch_result **p = realloc(c->parked, cap * sizeof *p);
		if (p) {
			c->parked = p;
			c->parked_cap = cap;
		}
	}
	if (c->n_parked == c->parked_cap)
		return 0;
	c->parked[c->n_parked++] = res;
	return 1;
}

static void ckpt_end(struct crawl_ckpt *c, int ok)
{
	struct crawl_ckpt_stats *s = &c->st;
	uint64_t dt = monotonic_us() - c->t0_us;
	size_t n = c->n_parked;
	if (c->phase == CKPT_COMMIT)
		phase_to(c, CKPT_COMMIT, &s->us_commit_max);
	if (ok) {
		s->written++;
		s->us_total += dt;
		if (dt > s->us_max)
			s->us_max = dt;
	} else {
		s->failed++;
		fprintf(stderr,
		        "\ncrawler crawl: checkpoint %" PRIu64
		        " failed: %s; the previous one stands\n",
		        c->seq, c->err[0] ? c->err : "unknown error");
		checkpoint_discard(c->p.output->dir, c->seq);
	}
	c->phase = CKPT_IDLE;
	c->last_us = monotonic_us();
	if (c->final)
		c->p.finish(c->p.ctx);
	/* Parked results go on as if they had just arrived (after a final
	 * checkpoint they are still written: the checkpoint counts them as in
	 * flight, so a resume fetches them again). */
	c->n_parked = 0;
	for (size_t i = 0; i < n; i++)
		c->p.replay(c->p.ctx, c->parked[i]);
	c->p.pump(c->p.ctx);
}

/* Worker thread: the sieve's copy (it may link and copy files) and the
 * commit (every fsync); the loop goes on meanwhile, starting nothing. */
static void ckpt_work(uv_work_t *w)
{
	struct crawl_ckpt *c = w->data;
	char path[4300];
	snprintf(path, sizeof path, "%s/sieve", c->dir);
	if (sieve_path_checkpoint(c->p.sieve, path, c->err, sizeof c->err) != SIEVE_OK) {
		c->rc = -1;
		return;
	}
	c->rc = checkpoint_commit(c->p.output->dir, c->seq, c->err, sizeof c->err);
}

static void ckpt_work_done(uv_work_t *w, int status)
{
	struct crawl_ckpt *c = w->data;
	ckpt_end(c, status == 0 && c->rc == 0);
}

/* The loop's part of the files: the frontier (its segments linked) and the
 * crawl's state, into ckpt-N.tmp. */
static int ckpt_write_local(struct crawl_ckpt *c)
{
	char path[4300];
	enum frontier_err fe;
	enum politeness_err pe;
	if (checkpoint_prepare(c->p.output->dir, c->seq, c->dir, sizeof c->dir, c->err,
	                       sizeof c->err) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/frontier", c->dir);
	if (mkdir(path, 0755) != 0) {
		snprintf(c->err, sizeof c->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	fe = frontier_checkpoint(c->p.frontier, path);
	if (fe != FRONTIER_OK) {
		snprintf(c->err, sizeof c->err, "frontier into %s: %s (%s)", path,
		         frontier_strerror(fe), strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/robots", c->dir);
	pe = politeness_robots_checkpoint(c->p.pol, path, monotonic_us());
	if (pe != POLITENESS_OK) {
		snprintf(c->err, sizeof c->err, "robots.txt cache into %s: %s (%s)", path,
		         politeness_strerror(pe), strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/state", c->dir);
	if (state_save(c, path) != 0) {
		snprintf(c->err, sizeof c->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* DRAIN: 1 once every processed page's links are in the sieve and the
 * forced flush that delivers them was asked for. */
static int ckpt_drained(struct crawl_ckpt *c)
{
	if (!sieve_path_quiet(c->p.sieve) || parse_jobs_outstanding(c->p.parse) > 0)
		return 0;
	return sieve_path_push_flush(c->p.sieve, &c->flush_seq) == 0;
}

/* FLUSH: 1 once every URL the sieve emitted is in the frontier and the
 * writer was asked to sync; a failure ends the checkpoint. */
static int ckpt_flushed(struct crawl_ckpt *c)
{
	if (!sieve_path_flushed(c->p.sieve, c->flush_seq))
		return 0;
	/* every URL the sieve emitted must be in the frontier's copy */
	if (!sieve_path_drain(c->p.sieve, 1)) {
		snprintf(c->err, sizeof c->err, "frontier spill %s: %s", c->p.spill_label,
		         strerror(errno));
		ckpt_end(c, 0);
		return 0;
	}
	return crawl_writer_request_sync(c->p.writer, c->seq) == 0;
}

/* WRITER: the writer synced; the loop's files, then the worker. */
static void ckpt_commit(struct crawl_ckpt *c)
{
	int rc;
	if (!crawl_writer_synced(c->p.writer, c->seq, &rc, &c->warc, &c->log_size))
		return;
	if (rc != 0) {
		snprintf(c->err, sizeof c->err, "the WARC or crawl log cannot be synced");
		ckpt_end(c, 0);
		return;
	}
	phase_to(c, CKPT_WRITER, &c->st.us_writer_max);
	uint64_t cpu0 = thread_cpu_us();
	if (ckpt_write_local(c) != 0) {
		ckpt_end(c, 0);
		return;
	}
	uint64_t cpu = thread_cpu_us() - cpu0;
	if (cpu > c->st.us_files_cpu_max)
		c->st.us_files_cpu_max = cpu;
	phase_to(c, CKPT_COMMIT, &c->st.us_files_max);
	c->work.data = c;
	if (uv_queue_work(c->p.loop, &c->work, ckpt_work, ckpt_work_done) != 0) {
		snprintf(c->err, sizeof c->err, "cannot start the checkpoint worker");
		ckpt_end(c, 0);
		return;
	}
}

void crawl_ckpt_step(struct crawl_ckpt *c)
{
	switch (c->phase) {
	case CKPT_DRAIN:
		if (!ckpt_drained(c))
			return;
		phase_to(c, CKPT_FLUSH, &c->st.us_drain_max);
		/* fall through */
	case CKPT_FLUSH:
		if (!ckpt_flushed(c))
			return;
		phase_to(c, CKPT_WRITER, &c->st.us_flush_max);
		/* fall through */
	case CKPT_WRITER: ckpt_commit(c); return;
	default: return;
	}
}
