/*
 * archive_tool.c: `crawler index DIR` (index.h) and `crawler wacz DIR`
 * (wacz.h) on a crawl's output folder, which they lock as a crawl does
 * (store/outdir_lock.h) so that no crawl writes it meanwhile.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "crawler/archive/index.h"
#include "crawler/archive/wacz.h"
#include "crawler/store/outdir_lock.h"
#include "frontier/base/tool_args.h"
#include "frontier/base/tools.h"

static void index_usage(FILE *out)
{
	fprintf(out, "usage: crawler index DIR [--memory-mb N] [--quiet]\n"
	             "  Writes DIR/index.cdxj: the CDXJ lines of every response and revisit\n"
	             "  record of DIR's WARC files, sorted (what pywb and ReplayWeb.page\n"
	             "  read). Each WARC file's own index (NAME.cdxj, written by the crawl)\n"
	             "  is completed first from its records where a crash or a failed write\n"
	             "  cut it short; what was cut or read again is said on stderr.\n"
	             "  --memory-mb N  sort in N MiB (default 64); more lines go through\n"
	             "                 temporary runs in DIR/.index-tmp\n"
	             "  --quiet        no summary\n"
	             "  A crawl running in DIR is not disturbed: the tool refuses (exit 1).\n"
	             "  Exit: 0 written, 1 failure, 2 usage.\n");
}

static void wacz_usage(FILE *out)
{
	fprintf(out,
	        "usage: crawler wacz DIR [-o FILE] [--memory-mb N] [--zipnum-lines N] [--quiet]\n"
	        "  Packages the crawl in DIR as a WACZ 1.1.1 file (default DIR/crawl.wacz):\n"
	        "  an uncompressed zip of archive/ (the WARC files), indexes/ (the CDXJ\n"
	        "  index, index.cdx; ZipNum index.cdx.gz + index.idx past %d lines),\n"
	        "  pages/pages.jsonl (the seeds and the HTML pages by depth, with their\n"
	        "  titles), datapackage.json (every file's SHA-256) and\n"
	        "  datapackage-digest.json. The index is brought up to date first\n"
	        "  (crawler index). Written as FILE.tmp and renamed when whole.\n"
	        "  --memory-mb N  sort in N MiB (default 64)\n"
	        "  --zipnum-lines N  a ZipNum index past N lines (default %d)\n"
	        "  --quiet        no summary\n"
	        "  Exit: 0 written, 1 failure, 2 usage.\n",
	        WACZ_ZIPNUM_LINES, WACZ_ZIPNUM_LINES);
}

/* Takes the crawl's lock on dir; NULL (said on stderr) when a crawl holds
 * it or it cannot be taken. */
static struct outdir_lock *lock_dir(const char *tool, const char *dir)
{
	struct outdir_lock *lock = NULL;
	pid_t owner = 0;
	char err[512] = "";
	enum outdir_lock_result r = outdir_lock_acquire(dir, &lock, &owner, err, sizeof err);
	if (r == OUTDIR_LOCK_BUSY)
		fprintf(stderr,
		        "crawler %s: a crawl (pid %ld) is writing %s: run it when it ends\n", tool,
		        (long)owner, dir);
	else if (r != OUTDIR_LOCK_OK && r != OUTDIR_LOCK_STALE)
		fprintf(stderr, "crawler %s: %s\n", tool, err[0] ? err : strerror(errno));
	return lock;
}

static int memory_option(const char *tool, const char *v, size_t *bytes)
{
	size_t mb = 64;
	if (v != NULL && tool_count(tool, "--memory-mb", v, 1 << 20, &mb) != 0)
		return 2;
	*bytes = mb << 20;
	return 0;
}

/* What a tool writes into the locked folder: 0, or nonzero with the
 * reason in err. */
typedef int archive_job(const char *dir, const void *opts, void *report, char *err, size_t len);

static int index_job(const char *dir, const void *opts, void *report, char *err, size_t len)
{
	return archive_index_write(dir, opts, report, err, len);
}

static int wacz_job(const char *dir, const void *opts, void *report, char *err, size_t len)
{
	return wacz_write(dir, opts, report, err, len);
}

/* Runs job on dir under the crawl's lock: 0, or 1 when dir is locked or
 * the job fails (said on stderr). */
static int run_locked(const char *tool, const char *dir, archive_job *job, const void *opts,
                      void *report)
{
	struct outdir_lock *lock = lock_dir(tool, dir);
	if (lock == NULL)
		return 1;
	char err[1024];
	int rc = job(dir, opts, report, err, sizeof err);
	outdir_lock_release(lock);
	if (rc != 0) {
		fprintf(stderr, "crawler %s: %s\n", tool, err);
		return 1;
	}
	return 0;
}

struct index_args {
	const char *dir, *mem;
	bool quiet;
};

static int index_run(const void *ctx)
{
	const struct index_args *a = ctx;
	struct archive_index_options o = { .messages = stderr, .who = "crawler index" };
	if (memory_option("index", a->mem, &o.memory) != 0)
		return 2;
	struct archive_index_report rep = { 0 };
	if (run_locked("index", a->dir, index_job, &o, &rep) != 0)
		return 1;
	if (!a->quiet)
		printf("%s/index.cdxj: %" PRIu64 " lines from %" PRIu64 " WARC files (%" PRIu64
		       " made again from records, %" PRIu64 " cut, %" PRIu64
		       " unreadable records)\n",
		       a->dir, rep.lines, rep.files, rep.reindexed, rep.cut_lines, rep.bad_records);
	return 0;
}

int index_tool_main(int argc, char **argv)
{
	struct index_args a = { 0 };
	const struct tool_spec spec = { "index",
		                        index_usage,
		                        { { "--memory-mb", NULL, &a.mem } },
		                        { "--quiet", "-q", &a.quiet },
		                        &a.dir };
	return tool_run(&spec, argc, argv, index_run, &a);
}

struct wacz_args {
	const char *dir, *mem, *file, *zipnum;
	bool quiet;
};

static int wacz_run(const void *ctx)
{
	const struct wacz_args *a = ctx;
	struct wacz_options o = { .path = a->file, .messages = stderr, .who = "crawler wacz" };
	size_t lines = WACZ_ZIPNUM_LINES;
	if (memory_option("wacz", a->mem, &o.memory) != 0 ||
	    (a->zipnum != NULL &&
	     tool_count("wacz", "--zipnum-lines", a->zipnum, 1ull << 40, &lines) != 0))
		return 2;
	o.zipnum_lines = lines;
	struct wacz_report rep = { 0 };
	if (run_locked("wacz", a->dir, wacz_job, &o, &rep) != 0)
		return 1;
	if (!a->quiet)
		printf("%s: %" PRIu64 " WARC files, %" PRIu64 " index lines, %" PRIu64
		       " pages (%" PRIu64 " with a title), %" PRIu64 " bytes\n",
		       rep.path, rep.warcs, rep.index_lines, rep.pages, rep.titles, rep.bytes);
	return 0;
}

int wacz_tool_main(int argc, char **argv)
{
	struct wacz_args a = { 0 };
	const struct tool_spec spec = { "wacz",
		                        wacz_usage,
		                        { { "--memory-mb", NULL, &a.mem },
		                          { "--output", "-o", &a.file },
		                          { "--zipnum-lines", NULL, &a.zipnum } },
		                        { "--quiet", "-q", &a.quiet },
		                        &a.dir };
	return tool_run(&spec, argc, argv, wacz_run, &a);
}
