/*
 * crawl_outdir.h: a crawl's output folder at set-up: its claim (one crawl
 * per folder: outdir_lock.h; a checkpoint there means --resume), and the
 * files besides the checkpoints (checkpoint.h) and the live outputs: the inputs a --resume
 * reads again (seeds.txt, crawl.conf), the frontier spill folders a killed
 * crawl left behind, and the repairs a resume makes to the WARC files and
 * crawl.log a crash may have cut.
 *
 * Called once, at set-up, before any output is opened.
 */
#ifndef CRAWLER_CRAWL_OUTDIR_H
#define CRAWLER_CRAWL_OUTDIR_H

#include <stddef.h>
#include <stdint.h>

struct crawl_config;

struct outdir_lock;

/* Claims the output folder (created if missing) for this crawl: its lock
 * (*lock, released by the caller; a dead crawl's lock is taken over), and
 * the checkpoint there: *found = 1 with its folder in ckpt and its number
 * in *ckpt_seq. A folder that holds a checkpoint is refused unless resume.
 * Returns an enum crawl_exit: CRAWL_EXIT_USAGE when the folder is in use or
 * holds a crawl to resume; messages on stderr. */
int crawl_outdir_claim(const struct crawl_config *cfg, int resume, struct outdir_lock **lock,
                       char *ckpt, size_t cap, uint64_t *ckpt_seq, int *found);

/* A new crawl's seeds (n, borrowed) and configuration, kept so that
 * --resume needs neither again. 0, or -1 (a message on stderr). */
int crawl_outdir_save_inputs(const struct crawl_config *cfg, char *const *seeds, size_t n);

/* Removes the spill folders of a frontier killed with its crawl
 * (frontier-XXXXXX in the output folder; never when spill_dir is elsewhere:
 * it may be shared). */
void crawl_outdir_remove_stale_spill(const struct crawl_config *cfg);

/* 1 if the file name is one of the crawl's WARC files, named (so opened)
 * at or after `from` ("" for all). */
int crawl_outdir_warc_from(const char *name, const char *from);

/* The crawl's merged CDXJ index (archive/index.h), when WARC files and
 * their indexes are written, and with `package` and [output] wacz its WACZ
 * (archive/wacz.h): at a crawl's end (package 1) and at a resume, after
 * the repair (crawl_outdir_repair; package 0). What it cut or read again
 * is said on stderr. 0, or -1 (said on stderr; the crawl's outputs are
 * untouched). */
int crawl_outdir_archive(const struct crawl_config *cfg, int package);

/* Resume: cuts what a crash tore off the WARC files in the output folder
 * dir (those from `from` on, by name, i.e. by time; all when from is
 * empty) and its crawl log. 0, or -1 (messages on stderr). */
int crawl_outdir_repair(const char *dir, const char *from);

#endif
