/*
 * sieve_base.h: what every sieve implementation keeps and does alike
 * (internal to the module): its folder, configuration, callback, lock,
 * mutex, counters and error message, and the operations of the sieves that
 * run each call under that mutex ("memory", "bloom", "lsm", "offline").
 *
 * An implementation's state begins with a struct sieve_base, so that the
 * generic operations below, given the implementation's pointer, reach it;
 * the base's hooks supply what differs. Mercator keeps a base too (folder,
 * counters, message) but has its own operations: its adds and its flush
 * thread take its locks their own way.
 */
#ifndef SIEVE_SIEVE_BASE_H
#define SIEVE_SIEVE_BASE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sieve/sieve.h"

struct sieve_base;

/* What an implementation adds to the generic operations. Called under the
 * base's mutex (start and destroy: by the only thread). */
struct sieve_hooks {
	/* after the base is filled: sizes, locks the folder (sieve_base_lock),
	 * loads the state; an error's message in the base (destroy follows) */
	int (*start)(struct sieve_base *b);
	/* frees everything, the base (sieve_base_release) and b itself */
	void (*destroy)(struct sieve_base *b);
	/* one URL, its length checked */
	int (*add_locked)(struct sieve_base *b, const char *url, size_t len);
	/* n URLs, or NULL (then add_locked each) */
	int (*add_batch_locked)(struct sieve_base *b, const char *const *urls, const size_t *lens,
	                        size_t n);
	int (*flush_locked)(struct sieve_base *b); /* NULL: nothing to do */
	int (*sync_locked)(struct sieve_base *b);
	int (*close_locked)(struct sieve_base *b); /* NULL: the sync hook */
	/* the counters beyond st (after *out = st), or NULL */
	void (*stats_locked)(struct sieve_base *b, struct sieve_stats *out);
	const char *snapshot; /* the state file sieve_snapshot_checkpoint links, or NULL */
	bool decides_in_add;  /* each add and flush counts as a flush (see sieve.h) */
};

struct sieve_base {
	char *dir;               /* cfg.dir's copy */
	struct sieve_config cfg; /* defaults filled in (max_url_len) */
	sieve_emit_fn emit;
	void *emit_ctx;
	int lock_fd;        /* dir/LOCK, or -1 */
	pthread_mutex_t mu; /* held by every operation (the generic ones take it) */
	int err;            /* nonzero: a fatal error, the sieve is unusable */
	struct sieve_stats st;
	char msg[512];     /* the last error */
	char lastmsg[512]; /* last_error's copy, taken under mu */
	const struct sieve_hooks *h;
};

/* Fills b from the configuration (dir copied; max_url_len 65536 if 0) and
 * takes no lock yet. SIEVE_EINVAL (no folder) or SIEVE_ENOMEM, with the
 * message in err. */
int sieve_base_init(struct sieve_base *b, const struct sieve_config *cfg, sieve_emit_fn emit,
                    void *emit_ctx, char *err, size_t errlen);
/* Locks the folder (sieve_dir_lock), creating it. */
int sieve_base_lock(struct sieve_base *b);
/* Ends an open: when rc is an error, copies the message (or rc's
 * description) into err. Returns rc. */
int sieve_base_opened(struct sieve_base *b, int rc, char *err, size_t errlen);
/* Releases the lock, the copy of dir and the mutex (not b itself). */
void sieve_base_release(struct sieve_base *b);

/* An array of n bytes the sieve reads and writes at random (Mercator's
 * flush array, marks, cache): aligned to 2 MiB and marked for transparent
 * huge pages, so that its random accesses miss the TLB less. Release with
 * free(). NULL when out of memory. */
void *sieve_alloc_random(size_t n);

/* Records an error message; returns code. */
int sieve_fail(struct sieve_base *b, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Makes code the sieve's fatal error (the first one sticks); returns it. */
int sieve_set_fatal(struct sieve_base *b, int code);
/* sieve_fail, then sieve_set_fatal. */
#define sieve_fatal(b, code, ...) sieve_set_fatal((b), sieve_fail((b), (code), __VA_ARGS__))

/* Snapshots (state files replaced whole, sieve_file_replace): a header of
 * hlen bytes beginning with an 8-byte magic and ending with {u64 XXH64 of
 * the body (when there is one), u64 XXH64 of the header before it}, then
 * the body. sieve_snapshot_write fills the magic and the checksums of h
 * and writes dir/name; sieve_snapshot_read reads and checks the header
 * (*present false when the file is absent); sieve_snapshot_body reads and
 * checks the body. SIEVE_OK, or an error with the file named. */
int sieve_snapshot_write(struct sieve_base *b, const char *name, const char *magic, uint8_t *h,
                         size_t hlen, const void *body, size_t blen);
int sieve_snapshot_read(struct sieve_base *b, const char *name, const char *magic, uint8_t *h,
                        size_t hlen, bool *present);
int sieve_snapshot_body(struct sieve_base *b, const char *name, const uint8_t *h, size_t hlen,
                        void *body, size_t blen);

/* Delivers a URL: counts it and calls the callback. */
static inline void sieve_emit(struct sieve_base *b, const char *url, size_t len)
{
	b->st.emitted++;
	if (b->emit != NULL)
		b->emit(b->emit_ctx, url, len);
}

/* The generic operations (struct sieve_ops) on an implementation whose
 * state, of size bytes, begins with a struct sieve_base. */
int sieve_base_open(const struct sieve_hooks *h, size_t size, const struct sieve_config *cfg,
                    sieve_emit_fn emit, void *emit_ctx, void **impl, char *err, size_t errlen);
int sieve_base_close(void *impl);
int sieve_base_add(void *impl, const char *url, size_t len);
int sieve_base_add_batch(void *impl, const char *const *urls, const size_t *lens, size_t n);
int sieve_base_flush(void *impl);
int sieve_base_sync(void *impl);
void sieve_base_stats(void *impl, struct sieve_stats *out);
const char *sieve_base_last_error(void *impl);
/* The sync hook unless the sieve failed (SIEVE_ECLOSED); caller holds mu
 * or is the only thread (close). */
int sieve_base_sync_locked(struct sieve_base *b);
/* A checkpoint of a sieve whose state is one snapshot file (b->snapshot):
 * a fresh snapshot (sync hook), hard-linked into dir, under mu. */
int sieve_snapshot_checkpoint(void *impl, const char *dir);

/* Defines the table of operations ops of the sieve named nm built on the
 * generic operations: its state is a `type` (beginning with a struct
 * sieve_base), checkpoint_fn its checkpoint, the designated initializers
 * after it its struct sieve_hooks. */
#define SIEVE_BASE_OPS(ops, nm, type, checkpoint_fn, ...)                                          \
	static const struct sieve_hooks ops##_hooks = { __VA_ARGS__ };                             \
	static int ops##_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx,  \
	                      void **impl, char *err, size_t errlen)                               \
	{                                                                                          \
		return sieve_base_open(&ops##_hooks, sizeof(type), cfg, emit, emit_ctx, impl, err, \
		                       errlen);                                                    \
	}                                                                                          \
	const struct sieve_ops ops = {                                                             \
		.name = nm,                                                                        \
		.open = ops##_open,                                                                \
		.add = sieve_base_add,                                                             \
		.add_batch = sieve_base_add_batch,                                                 \
		.flush = sieve_base_flush,                                                         \
		.sync = sieve_base_sync,                                                           \
		.close = sieve_base_close,                                                         \
		.stats = sieve_base_stats,                                                         \
		.last_error = sieve_base_last_error,                                               \
		.checkpoint = checkpoint_fn,                                                       \
	}

#endif
