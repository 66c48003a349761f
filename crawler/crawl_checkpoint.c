/*
 * crawl_checkpoint.c: the checkpoint phase machine and the crawl state
 * file (see crawl_checkpoint.h).
 */
#include "crawler/crawl_checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

#define STATE_MAGIC "CRSTATE2"
#define VISIT_MAGIC "CRVISIT1"

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
	pid_t child;       /* the copy of the process writing the snapshot; 0 none */
	int child_fd;      /* its pipe: the error message it exits with */
	uint64_t child_us; /* worker thread: how long the copy took */
	struct crawl_ckpt_stats st;
	char dir[4200];
	char err[4800]; /* worker thread, before its after-callback */
};

static int ckpt_wait_child(struct crawl_ckpt *c);

/* ---- the crawl state file ---- */

static void put_scope(struct recfile_writer *w, const struct scope *scope)
{
	recfile_put_u32(w, SCOPE_VERDICT_COUNT);
	for (int v = 0; v < SCOPE_VERDICT_COUNT; v++)
		recfile_put_u64(w, scope_count(scope, (enum scope_verdict)v));
}

/* Writes the crawl's own state (see crawl_checkpoint.h) but the visit's. */
static int state_save(struct crawl_ckpt *c, const char *path)
{
	struct recfile_writer *w;
	if (recfile_writer_create(path, STATE_MAGIC, &w) != RECFILE_OK)
		return -1;
	crawl_stats_save(c->p.stats, w);
	put_scope(w, c->p.scope);
	recfile_put_bytes(w, c->warc.file, (uint32_t)strlen(c->warc.file));
	recfile_put_u64(w, c->warc.offset);
	recfile_put_u64(w, c->log_size);
	done_set_save(c->p.done, w);
	url_rules_live_save_counts(c->p.rules, w);
	if (recfile_writer_close(w, 0) != RECFILE_OK)
		return -1;
	return 0;
}

/* The visit's part (per host: DNS answer, politeness state; the URLs in
 * flight), the largest, in a file of its own. */
static int visit_file_save(struct visit *v, const char *path)
{
	struct recfile_writer *w;
	if (recfile_writer_create(path, VISIT_MAGIC, &w) != RECFILE_OK)
		return -1;
	visit_save(v, w, monotonic_us());
	return recfile_writer_close(w, 0) == RECFILE_OK ? 0 : -1;
}

/* Reads what visit_file_save wrote. 0, or -1 with the message in err. */
static int visit_file_load(struct visit *v, const char *path, char *err, size_t errlen)
{
	struct recfile_reader *rd = NULL;
	enum recfile_err re = recfile_reader_open(path, VISIT_MAGIC, &rd);
	if (re != RECFILE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		         re == RECFILE_ERR_IO ? strerror(errno) : recfile_strerror(re));
		return -1;
	}
	int rc = visit_load(v, rd, monotonic_us()) == 0 && recfile_reader_at_end(rd) ? 0 : -1;
	if (rc != 0)
		snprintf(err, errlen, "%s: truncated or inconsistent crawl state", path);
	recfile_reader_close(rd);
	return rc;
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
	if (recfile_get_u64(rd, &pos->log_offset) != RECFILE_OK ||
	    done_set_load(p->done, rd) != 0 || url_rules_live_load_counts(p->rules, rd) != 0 ||
	    !recfile_reader_at_end(rd))
		goto bad;
	pos->known = 1;
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
		int rc = state_load(path, p, pos, err, sizeof err);
		snprintf(path, sizeof path, "%s/visit", ckpt);
		if (rc != 0 || visit_file_load(p->visit, path, err, sizeof err) != 0) {
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
	if (c->child > 0)
		ckpt_wait_child(c); /* no orphan writing into a folder left behind */
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

int crawl_ckpt_fetching(const struct crawl_ckpt *c, size_t *parked)
{
	int yes = c->phase != CKPT_IDLE && !c->final;
	*parked = yes ? c->n_parked : 0;
	return yes;
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

/* Worker thread: waits for the copy of the process (ckpt_fork_snapshot)
 * to exit; 0 if it wrote its files, else -1 with its message in c->err. */
static int ckpt_wait_child(struct crawl_ckpt *c)
{
	uint64_t t0 = monotonic_us();
	size_t n = 0;
	ssize_t k;
	int status = 0;
	while (n + 1 < sizeof c->err &&
	       ((k = read(c->child_fd, c->err + n, sizeof c->err - 1 - n)) > 0 ||
	        (k < 0 && errno == EINTR)))
		n += k > 0 ? (size_t)k : 0;
	c->err[n] = '\0';
	close(c->child_fd);
	c->child_fd = -1;
	while (waitpid(c->child, &status, 0) < 0) {
		if (errno != EINTR) {
			snprintf(c->err, sizeof c->err, "the checkpoint's copy of the process: %s",
			         strerror(errno));
			c->child = 0;
			return -1;
		}
	}
	c->child = 0;
	c->child_us = monotonic_us() - t0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (!c->err[0])
		snprintf(c->err, sizeof c->err, "the checkpoint's copy of the process %s %d",
		         WIFSIGNALED(status) ? "died of signal" : "exited with",
		         WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	return -1;
}

/* Worker thread: the snapshot's copy of the process, if any, to its end;
 * the sieve's copy (it may link and copy files) and the commit (every
 * fsync). The loop goes on meanwhile; what it fetches is parked. */
static void ckpt_work(uv_work_t *w)
{
	struct crawl_ckpt *c = w->data;
	char path[4300];
	c->child_us = 0;
	if (c->child > 0 && ckpt_wait_child(c) != 0) {
		c->rc = -1;
		return;
	}
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
	if (c->child_us > c->st.us_snapshot_max)
		c->st.us_snapshot_max = c->child_us;
	ckpt_end(c, status == 0 && c->rc == 0);
}

/* A frontier file that could not be written: the message, and -1. */
static int frontier_failed(struct crawl_ckpt *c, const char *path, enum frontier_err fe)
{
	snprintf(c->err, sizeof c->err, "frontier into %s: %s (%s)", path, frontier_strerror(fe),
	         strerror(errno));
	return -1;
}

/* The loop's part of the files, before any copy of the process: the
 * folder ckpt-N.tmp, the frontier's segments (its own files), the crawl
 * state (the counters are gathered from every piece, under their locks,
 * which a copy of the process must never take). 0, or -1 (c->err). */
static int ckpt_write_prepare(struct crawl_ckpt *c)
{
	char path[4300];
	enum frontier_err fe;
	if (checkpoint_prepare(c->p.output->dir, c->seq, c->dir, sizeof c->dir, c->err,
	                       sizeof c->err) != 0)
		return -1;
	snprintf(path, sizeof path, "%s/frontier", c->dir);
	if (mkdir(path, 0755) != 0) {
		snprintf(c->err, sizeof c->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	fe = frontier_checkpoint_segments(c->p.frontier, path);
	if (fe != FRONTIER_OK)
		return frontier_failed(c, path, fe);
	snprintf(path, sizeof path, "%s/state", c->dir);
	if (state_save(c, path) != 0) {
		snprintf(c->err, sizeof c->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The snapshot: what is O(hosts + the frontier's memory part) to write,
 * the frontier's queues, the robots.txt cache and the visit's state. It
 * only reads the loop's own structures (no lock, no shared descriptor)
 * and writes new files, so a copy of the process can write it. 0, or -1
 * (c->err). */
static int ckpt_write_snapshot(struct crawl_ckpt *c)
{
	char path[4300];
	enum frontier_err fe;
	enum politeness_err pe;
	snprintf(path, sizeof path, "%s/frontier", c->dir);
	fe = frontier_checkpoint_queues(c->p.frontier, path);
	if (fe != FRONTIER_OK)
		return frontier_failed(c, path, fe);
	snprintf(path, sizeof path, "%s/robots", c->dir);
	pe = politeness_robots_checkpoint(c->p.pol, path, monotonic_us());
	if (pe != POLITENESS_OK) {
		snprintf(c->err, sizeof c->err, "robots.txt cache into %s: %s (%s)", path,
		         politeness_strerror(pe), strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/visit", c->dir);
	if (visit_file_save(c->p.visit, path) != 0) {
		snprintf(c->err, sizeof c->err, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* The copy of the process: one thread, the loop's structures as they
 * stood at the fork. It keeps only stderr and its pipe (err_fd): the
 * crawl's sockets must close when the crawl closes them, not when the
 * copy exits. A terminal's Ctrl-C reaches the whole process group: the
 * copy ignores it and finishes its files (the crawl's own handler would
 * tell the crawl a second time, which means "stop at once"). */
static void ckpt_snapshot_child(struct crawl_ckpt *c, int err_fd, const sigset_t *mask)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	pthread_sigmask(SIG_SETMASK, mask, NULL);
	if (err_fd != 3 && (dup2(err_fd, 3) != 3 || close(err_fd) != 0))
		_exit(1);
	close_range(4, ~0u, 0);
	int rc = ckpt_write_snapshot(c);
	if (rc != 0 && write(3, c->err, strlen(c->err)) < 0)
		rc = 1; /* the parent then reports the exit status alone */
	_exit(rc != 0);
}

/* Forks a copy of the process that writes the snapshot as it stands and
 * exits, so that the loop goes on (transfers start, their results parked)
 * while the copy writes: the loop's pause is the fork. Memory: the copy
 * shares the crawl's pages; those the loop writes meanwhile are copied
 * (at most the crawl's RSS, in practice a small part). 0 (c->child set),
 * or -1: no copy (the caller writes the snapshot itself). */
static int ckpt_fork_snapshot(struct crawl_ckpt *c)
{
	int fds[2];
	sigset_t all, old;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	/* no signal handler runs in the copy before it has set its own */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pid_t pid = fork();
	if (pid == 0)
		ckpt_snapshot_child(c, fds[1], &old);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	c->child = pid;
	c->child_fd = fds[0];
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
	c->child = 0;
	/* a final checkpoint starts no transfer: no copy to write for it */
	if (ckpt_write_prepare(c) != 0 ||
	    ((c->final || !c->p.output->checkpoint_fork || ckpt_fork_snapshot(c) != 0) &&
	     ckpt_write_snapshot(c) != 0)) {
		ckpt_end(c, 0);
		return;
	}
	uint64_t cpu = thread_cpu_us() - cpu0;
	if (cpu > c->st.us_files_cpu_max)
		c->st.us_files_cpu_max = cpu;
	uint64_t files_t0 = c->phase_t0_us;
	phase_to(c, CKPT_COMMIT, &c->st.us_files_max);
	/* the time no transfer could start: the loop's own files (a final
	 * checkpoint starts none at all; the crawl is ending) */
	if (!c->final && c->phase_t0_us - files_t0 > c->st.us_nofetch_max)
		c->st.us_nofetch_max = c->phase_t0_us - files_t0;
	c->work.data = c;
	if (uv_queue_work(c->p.loop, &c->work, ckpt_work, ckpt_work_done) != 0) {
		if (c->child > 0)
			ckpt_wait_child(c);
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
