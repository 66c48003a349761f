/*
 * crawl_outdir.c: the output folder's inputs, leftovers and repairs (see
 * crawl_outdir.h).
 */
#include "crawler/crawl_outdir.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "crawler/archive/index.h"
#include "crawler/archive/wacz.h"
#include "crawler/config/config.h"
#include "crawler/crawl_exit.h"
#include "crawler/store/checkpoint.h"
#include "crawler/store/outdir_lock.h"
#include "crawler/store/warc_repair.h"
#include "frontier/base/fileio.h"

/* One crawl per output folder; a folder that holds a checkpoint only
 * with --resume. *found: there is a checkpoint (its folder in ckpt, its
 * number in *ckpt_seq) to resume from. */
int crawl_outdir_claim(const struct crawl_config *cfg, int resume, struct outdir_lock **lock,
                       char *ckpt, size_t cap, uint64_t *ckpt_seq, int *found)
{
	char err[4800];
	pid_t owner = 0;
	if (fileio_mkdir_p(cfg->output.dir) != 0) {
		fprintf(stderr, "crawler crawl: cannot create %s: %s\n", cfg->output.dir,
		        strerror(errno));
		return CRAWL_EXIT_FAILURE;
	}
	enum outdir_lock_result lr =
	        outdir_lock_acquire(cfg->output.dir, lock, &owner, err, sizeof err);
	if (lr == OUTDIR_LOCK_BUSY) {
		fprintf(stderr, "crawler crawl: %s is in use by another crawl (pid %ld)\n",
		        cfg->output.dir, (long)owner);
		return CRAWL_EXIT_USAGE;
	}
	if (lr == OUTDIR_LOCK_STALE) {
		fprintf(stderr,
		        "crawler crawl: %s: taking over the lock of crawl %ld, which is"
		        " no longer running\n",
		        cfg->output.dir, (long)owner);
	} else if (lr != OUTDIR_LOCK_OK) {
		fprintf(stderr, "crawler crawl: %s\n", err);
		return CRAWL_EXIT_FAILURE;
	}
	int f = checkpoint_find(cfg->output.dir, ckpt, cap, ckpt_seq, err, sizeof err);
	if (f < 0) {
		fprintf(stderr, "crawler crawl: %s\n", err);
		return CRAWL_EXIT_FAILURE;
	}
	if (f == 0 && !resume) {
		fprintf(stderr,
		        "crawler crawl: %s holds a crawl (%s): continue it with --resume,"
		        " or choose another output folder\n",
		        cfg->output.dir, ckpt);
		return CRAWL_EXIT_USAGE;
	}
	*found = f == 0;
	return CRAWL_EXIT_OK;
}

int crawl_outdir_save_inputs(const struct crawl_config *cfg, char *const *seeds, size_t n)
{
	char path[4200];
	FILE *f;
	int rc;
	snprintf(path, sizeof path, "%s/crawl.conf", cfg->output.dir);
	if (crawl_config_write(cfg, path) != 0) {
		fprintf(stderr, "crawler crawl: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	snprintf(path, sizeof path, "%s/seeds.txt", cfg->output.dir);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "crawler crawl: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\n", seeds[i]);
	rc = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	if (rc != 0)
		fprintf(stderr, "crawler crawl: cannot write %s: %s\n", path, strerror(errno));
	return rc;
}

void crawl_outdir_remove_stale_spill(const struct crawl_config *cfg)
{
	char path[4400];
	DIR *d;
	struct dirent *e;
	if (cfg->frontier.spill_dir[0] && strcmp(cfg->frontier.spill_dir, cfg->output.dir) != 0)
		return;
	d = opendir(cfg->output.dir);
	if (!d)
		return;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "frontier-", 9) == 0) {
			snprintf(path, sizeof path, "%s/%s", cfg->output.dir, e->d_name);
			fileio_remove_tree(path);
		}
	closedir(d);
}

int crawl_outdir_warc_from(const char *name, const char *from)
{
	size_t n = strlen(name);
	return strncmp(name, "crawl-", 6) == 0 && n >= 8 && strcmp(name + n - 8, ".warc.gz") == 0 &&
	       strcmp(name, from) >= 0;
}

int crawl_outdir_archive(const struct crawl_config *cfg, int package)
{
	char err[1024];
	if (!cfg->output.warc || !cfg->warc.cdxj)
		return 0;
	if (package && cfg->output.wacz) {
		struct wacz_options o = { .max_url_len = cfg->warc.max_url_len,
			                  .software = cfg->warc.software,
			                  .messages = stderr,
			                  .who = "crawler crawl" };
		struct wacz_report rep = { 0 };
		if (wacz_write(cfg->output.dir, &o, &rep, err, sizeof err) == 0)
			return 0;
	} else {
		struct archive_index_options o = { .max_url_len = cfg->warc.max_url_len,
			                           .messages = stderr,
			                           .who = "crawler crawl" };
		struct archive_index_report rep = { 0 };
		if (archive_index_write(cfg->output.dir, &o, &rep, err, sizeof err) == 0)
			return 0;
	}
	fprintf(stderr, "crawler crawl: %s\n", err);
	return -1;
}

int crawl_outdir_repair(const char *dir, const char *from)
{
	char path[4400], err[512] = "";
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t cut = 0;
	int rc = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		struct warc_repair_result res;
		if (!crawl_outdir_warc_from(e->d_name, from))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		/* what the repair found whole is synced too: the crashed run's
		 * tail may still be only in the page cache, and a power cut
		 * after this resume would tear a file no later resume repairs
		 * (it is before that one's checkpoint) */
		if (warc_repair_tail(path, 0, &res, err, sizeof err) != WARC_REPAIR_OK ||
		    fileio_fsync_path(path) != 0) {
			fprintf(stderr, "crawler crawl: resume: %s\n",
			        err[0] ? err : strerror(errno));
			rc = -1;
		} else if (res.cut_bytes > 0) {
			fprintf(stderr,
			        "crawler crawl: resume: %s: removed %" PRIu64
			        " bytes of a record cut off by the crash (%s)\n",
			        path, res.cut_bytes, res.reason ? res.reason : "torn");
		}
	}
	closedir(d);
	snprintf(path, sizeof path, "%s/crawl.log", dir);
	if (checkpoint_repair_log(path, &cut) != 0) {
		fprintf(stderr, "crawler crawl: resume: %s: %s\n", path, strerror(errno));
		rc = -1;
	} else if (cut > 0) {
		fprintf(stderr,
		        "crawler crawl: resume: %s: removed a line cut off by the crash (%" PRIu64
		        " bytes)\n",
		        path, cut);
	}
	return rc;
}
