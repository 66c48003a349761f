/*
 * lab_run.c: one lab run (lab.h): a fresh test web, one crawl against it,
 * the judge. Child processes are started with fork/exec, each with its
 * stdout and stderr in files of the run's folder and a parent-death signal
 * (so a lab killed with SIGKILL leaves no server behind); every exit path
 * of lab_run_one stops the children it started: the crawler with SIGINT
 * (its graceful stop) and the test web with SIGTERM (it flushes its log),
 * then SIGKILL when they outlast their grace.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crawler/lab/audit.h"
#include "crawler/lab/lab.h"
#include "frontier/base/clock.h"
#include "frontier/base/fileio.h"

#define READY_TIMEOUT_S 20
#define HELPER_TIMEOUT_S 60 /* testweb --seeds, --expected */
#define GRACE_MS 10000

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

void lab_run_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int lab_run_stopped(void)
{
	return stop_flag != 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Starts argv[0] with stdout to out_path and stderr to err_path (NULL:
 * /dev/null). The child's pid or -1 (errno). */
static pid_t spawn(char *const argv[], const char *out_path, const char *err_path)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	int in = open("/dev/null", O_RDONLY);
	int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (in < 0 || out < 0 || err < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(127);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	execv(argv[0], argv);
	dprintf(2, "crawler lab: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* Waits for pid until timeout_ms (or the lab's stop): 0 when it exited
 * (its exit status in *status, -1 killed by a signal), 1 when still running. */
static int wait_for(pid_t pid, long timeout_ms, int *status)
{
	uint64_t deadline = monotonic_ms() + (uint64_t)timeout_ms;
	for (;;) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid) {
			*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			return 0;
		}
		if (w < 0 && errno != EINTR) {
			*status = -1;
			return 0;
		}
		if (monotonic_ms() >= deadline || stop_flag)
			return 1;
		sleep_ms(20);
	}
}

/* Stops pid: sig, then SIGKILL after the grace. Its exit status or -1. */
static int stop_child(pid_t pid, int sig)
{
	int status = -1;
	kill(pid, sig);
	uint64_t deadline = monotonic_ms() + GRACE_MS;
	while (monotonic_ms() < deadline) {
		int st;
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return w == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		sleep_ms(20);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return status;
}

/* Runs argv to its end within HELPER_TIMEOUT_S, stdout to out_path. */
static int run_helper(char *const argv[], const char *out_path, const char *err_path)
{
	pid_t pid = spawn(argv, out_path, err_path);
	if (pid < 0)
		return -1;
	int status;
	if (wait_for(pid, HELPER_TIMEOUT_S * 1000L, &status) != 0)
		return stop_child(pid, SIGKILL), -1;
	return status;
}

/* A run's file paths, all under its folder. */
struct run_paths {
	char ready[4096], log[4096], err[4096], models[4096], seeds[4096], expected[4096];
	char out[4096], crawl_out[4096], crawl_err[4096], conf[4096], helper_err[4096];
};

static int paths_make(struct run_paths *p, const char *dir)
{
	struct {
		char *dst;
		const char *name;
	} t[] = { { p->ready, "ready" },
		  { p->log, "testweb.log" },
		  { p->err, "testweb.err" },
		  { p->models, "models.txt" },
		  { p->seeds, "seeds.txt" },
		  { p->expected, "expected.tsv" },
		  { p->out, "crawl" },
		  { p->crawl_out, "crawl.out" },
		  { p->crawl_err, "crawl.err" },
		  { p->conf, "crawl/crawl.conf" },
		  { p->helper_err, "helper.err" } };
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		int n = snprintf(t[i].dst, 4096, "%s/%s", dir, t[i].name);
		if (n < 0 || n >= 4096)
			return -1;
	}
	return 0;
}

/* The argv of the entry's test web: GEN options, then MODE (NULL: serve). */
static enum lab_error web_argv(struct lab_strv *sv, const char *testweb, const struct lab_entry *e,
                               long port)
{
	char num[4][32];
	snprintf(num[0], 32, "%ld", e->web.hosts);
	snprintf(num[1], 32, "%ld", e->web.pages);
	snprintf(num[2], 32, "%ld", e->web.ips);
	snprintf(num[3], 32, "%ld", e->web.seed);
	char portbuf[32];
	snprintf(portbuf, sizeof portbuf, "%ld", port);
	const char *a[] = { testweb, "--hosts", num[0], "--pages",     num[1], "--ips",
		            num[2],  "--seed",  num[3], "--http-port", portbuf };
	for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
		if (lab_strv_add(sv, a[i], strlen(a[i])) != LAB_OK)
			return LAB_ERR_NOMEM;
	return LAB_OK;
}

/* Appends the strings, then a NULL terminator for execv (not counted). */
static enum lab_error add_all(struct lab_strv *sv, const char *const *a, size_t n, int end)
{
	for (size_t i = 0; i < n; i++)
		if (lab_strv_add(sv, a[i], strlen(a[i])) != LAB_OK)
			return LAB_ERR_NOMEM;
	if (end) {
		if (lab_strv_add(sv, "", 0) != LAB_OK)
			return LAB_ERR_NOMEM;
		free(sv->v[--sv->n]);
		sv->v[sv->n] = NULL;
	}
	return LAB_OK;
}

/* Writes the entry's model rules into p->models, one a line. */
static int write_models(const struct run_paths *p, const struct lab_entry *e)
{
	FILE *f = fopen(p->models, "w");
	if (f == NULL)
		return -1;
	fputs("# written by crawler lab: the entry's model rules\n", f);
	for (size_t i = 0; i < e->models.n; i++)
		fprintf(f, "%s\n", e->models.v[i]);
	return fclose(f) == 0 ? 0 : -1;
}

/* Starts the test web and waits for its ready file; its ports into *http
 * and *dns. *pid: the test web while it runs (the caller stops it, even on
 * error), -1 when it never started or has exited. */
static enum lab_error web_start(const struct lab_run_ctx *ctx, const struct lab_entry *e,
                                const struct run_paths *p, pid_t *pid, long *http, long *dns)
{
	struct lab_strv sv = { 0 };
	enum lab_error rc = web_argv(&sv, ctx->testweb_path, e, 0);
	const char *srv[] = { "--dns-port", "0", "--ready-file", p->ready, "--log", p->log };
	if (rc == LAB_OK)
		rc = add_all(&sv, srv, 6, 0);
	for (size_t i = 0; rc == LAB_OK && i < e->model_files.n; i++) {
		const char *m[] = { "--models", e->model_files.v[i] };
		rc = add_all(&sv, m, 2, 0);
	}
	const char *m[] = { "--models", p->models };
	if (rc == LAB_OK)
		rc = add_all(&sv, m, 2, 1);
	if (rc != LAB_OK)
		goto out;
	*pid = spawn(sv.v, NULL, p->err);
	if (*pid < 0) {
		rc = LAB_ERR_PROCESS;
		goto out;
	}
	uint64_t deadline = monotonic_ms() + READY_TIMEOUT_S * 1000;
	int status;
	while (access(p->ready, R_OK) != 0) {
		int exited = wait_for(*pid, 0, &status) == 0;
		if (exited)
			*pid = -1; /* reaped: its pid may be reused, never signal it */
		if (monotonic_ms() > deadline || stop_flag || exited) {
			fprintf(ctx->errs, "crawler lab: the test web did not start (see %s)\n",
			        p->err);
			rc = LAB_ERR_PROCESS;
			goto out;
		}
		sleep_ms(20);
	}
	FILE *f = fopen(p->ready, "r");
	*http = *dns = -1;
	char line[128];
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "http_port=", 10) == 0)
			*http = strtol(line + 10, NULL, 10);
		if (strncmp(line, "dns_port=", 9) == 0)
			*dns = strtol(line + 9, NULL, 10);
	}
	if (f != NULL)
		fclose(f);
	if (*http <= 0 || *dns <= 0)
		rc = LAB_ERR_PROCESS;
out:
	lab_strv_free(&sv);
	return rc;
}

/* Runs the test web in a helper mode (--seeds, --expected) into out. */
static enum lab_error web_helper(const struct lab_run_ctx *ctx, const struct lab_entry *e,
                                 const struct run_paths *p, long http, const char *const *mode,
                                 size_t nmode, const char *out)
{
	struct lab_strv sv = { 0 };
	enum lab_error rc = web_argv(&sv, ctx->testweb_path, e, http);
	if (rc == LAB_OK)
		rc = add_all(&sv, mode, nmode, 1);
	if (rc == LAB_OK && run_helper(sv.v, out, p->helper_err) != 0) {
		fprintf(ctx->errs, "crawler lab: testweb %s failed (see %s)\n", mode[0],
		        p->helper_err);
		rc = LAB_ERR_PROCESS;
	}
	lab_strv_free(&sv);
	return rc;
}

/* Runs the crawl; its exit status, -1 killed or timed out. */
static int crawl(const struct lab_run_ctx *ctx, const struct lab_entry *e,
                 const struct run_paths *p, long dns)
{
	struct lab_strv sv = { 0 };
	char dnsarg[64];
	snprintf(dnsarg, sizeof dnsarg, "127.0.0.1:%ld", dns);
	const char *a[] = { ctx->crawler_path,
		            "crawl",
		            "--seeds",
		            p->seeds,
		            "-o",
		            p->out,
		            "--quiet",
		            "--dns-server",
		            dnsarg,
		            "--allow-private-networks" };
	int status = -1;
	if (add_all(&sv, a, sizeof a / sizeof a[0], 0) != LAB_OK ||
	    add_all(&sv, (const char *const *)e->args.v, e->args.n, 1) != LAB_OK)
		goto out;
	pid_t pid = spawn(sv.v, p->crawl_out, p->crawl_err);
	if (pid < 0)
		goto out;
	if (wait_for(pid, (long)ctx->timeout_s * 1000L, &status) != 0) {
		fprintf(ctx->errs, "crawler lab: %s: the crawl %s; stopping it\n", e->name,
		        stop_flag ? "is interrupted" : "timed out");
		stop_child(pid, SIGINT);
		status = -1;
	}
out:
	lab_strv_free(&sv);
	return status;
}

/* The value of KEY in [SECTION] of the crawl's crawl.conf into buf (the
 * crawler writes it whole at the start, one "key = value" a line); def
 * when the file or the key is missing. */
static void conf_value(const char *conf, const char *section, const char *key, const char *def,
                       char *buf, size_t cap)
{
	snprintf(buf, cap, "%s", def);
	FILE *f = fopen(conf, "r");
	char line[1024];
	size_t klen = strlen(key);
	int in = 0;
	while (f != NULL && fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '[')
			in = strncmp(line + 1, section, strlen(section)) == 0 &&
			     line[1 + strlen(section)] == ']';
		if (!in || strncmp(line, key, klen) != 0 || strchr(" =", line[klen]) == NULL)
			continue;
		char *v = strchr(line, '=');
		if (v == NULL)
			continue;
		v++;
		while (*v == ' ')
			v++;
		if (*v != '\0')
			snprintf(buf, cap, "%s", v);
	}
	if (f != NULL)
		fclose(f);
}

/* The delay violations are judged against (lab.h): the entry's, else the
 * least wait the crawl's policy promises between two one-URL visits
 * (fixed: the host delay; adaptive: its floor min_delay_ms; with the IP
 * delay when ip_politeness), else 0: overlaps only. */
static int64_t judged_delay(const struct lab_entry *e, const char *conf)
{
	if (e->judge_delay_ms >= 0)
		return e->judge_delay_ms;
	char policy[64], min_delay[64], visit[64];
	conf_value(conf, "politeness", "policy", "fixed", policy, sizeof policy);
	conf_value(conf, "politeness", "min_delay_ms", "500", min_delay, sizeof min_delay);
	conf_value(conf, "politeness", "max_urls_per_visit", "0", visit, sizeof visit);
	struct audit_config c;
	char err[256];
	audit_config_default(&c);
	int have = audit_config_load(&c, conf, err, sizeof err) == AUDIT_OK;
	if (strtol(visit, NULL, 10) > 1)
		return 0;
	int64_t ip = have && c.ip_politeness ? c.ip_delay_ms : 0, floor = 0;
	if (strcmp(policy, "fixed") == 0 && have)
		floor = c.host_delay_ms;
	else if (strcmp(policy, "adaptive") == 0)
		floor = strtol(min_delay, NULL, 10);
	else
		return 0;
	return floor > ip ? floor : ip;
}

enum lab_error lab_run_one(const struct lab_run_ctx *ctx, const struct lab_entry *e,
                           struct lab_result *r)
{
	struct run_paths p;
	pid_t web = -1;
	long http = -1, dns = -1;
	char err[512], ua[512];
	enum lab_error rc = LAB_OK;
	memset(r, 0, sizeof *r);
	r->crawl_status = -1;
	r->t90_s = -1;
	if (paths_make(&p, ctx->run_dir) != 0 || fileio_remove_tree(ctx->run_dir) != 0 ||
	    fileio_mkdir_p(ctx->run_dir) != 0 || write_models(&p, e) != 0) {
		fprintf(ctx->errs, "crawler lab: %s: %s\n", ctx->run_dir, strerror(errno));
		return LAB_ERR_IO;
	}
	rc = web_start(ctx, e, &p, &web, &http, &dns);
	const char *seeds[] = { "--seeds" };
	if (rc == LAB_OK)
		rc = web_helper(ctx, e, &p, http, seeds, 1, p.seeds);
	if (rc == LAB_OK)
		r->crawl_status = crawl(ctx, e, &p, dns);
	if (web > 0 && stop_child(web, SIGTERM) != 0 && rc == LAB_OK)
		fprintf(ctx->errs, "crawler lab: the test web did not stop cleanly (see %s)\n",
		        p.err);
	if (rc != LAB_OK || stop_flag)
		return rc;
	conf_value(p.conf, "crawl", "user_agent", "crawler", ua, sizeof ua);
	const char *expected[] = { "--expected", "--agent", ua };
	rc = web_helper(ctx, e, &p, http, expected, 3, p.expected);
	if (rc != LAB_OK)
		return rc;
	struct lab_judge_in in = { p.log, p.expected, http, judged_delay(e, p.conf),
		                   ctx->tolerance_ms };
	rc = lab_judge(&in, r, err, sizeof err);
	if (rc != LAB_OK)
		fprintf(ctx->errs, "crawler lab: %s\n", err);
	return rc;
}
