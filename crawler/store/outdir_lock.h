/*
 * outdir_lock.h: one crawl per output folder.
 *
 * The lock is the file DIR/crawl.lock holding the owner's PID in decimal,
 * and an open-file-description write lock (fcntl F_OFD_SETLK) on it held for
 * the crawl's lifetime. The fcntl lock, not the file's existence, is what
 * excludes: the kernel drops it when its owner dies however it dies (kill -9,
 * power cut), so a lock file left by a dead crawl is never mistaken for a
 * live one, and a recycled PID cannot keep a folder locked. The PID inside
 * only names the owner in messages.
 *
 * Invariant: while an outdir_lock exists, its process holds the fcntl lock
 * and the file holds its PID.
 */
#ifndef CRAWLER_STORE_OUTDIR_LOCK_H
#define CRAWLER_STORE_OUTDIR_LOCK_H

#include <stddef.h>
#include <sys/types.h>

enum outdir_lock_result {
	OUTDIR_LOCK_OK = 0,     /* acquired; the folder was not locked */
	OUTDIR_LOCK_STALE = 1,  /* acquired, taking over the file of a dead owner */
	OUTDIR_LOCK_BUSY = 2,   /* a live process holds it (its PID in *owner) */
	OUTDIR_LOCK_ERR_IO = 3, /* open/lock/write failed (errno text in err) */
	OUTDIR_LOCK_ERR_NOMEM = 4,
};

struct outdir_lock;

/*
 * Locks dir (which must exist). On OK or STALE, *out owns the lock (release
 * with outdir_lock_release); on STALE *owner is the dead owner's PID read
 * from the file (0 if unreadable). On BUSY *owner is the live owner's PID.
 * On any other result *out is NULL and err (if non-NULL) says why, naming
 * the file.
 */
enum outdir_lock_result outdir_lock_acquire(const char *dir, struct outdir_lock **out, pid_t *owner,
                                            char *err, size_t errlen);

/* Unlocks and removes the lock file. NULL is a no-op. */
void outdir_lock_release(struct outdir_lock *lock);

#endif
