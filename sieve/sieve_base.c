/*
 * sieve_base.c: the state and operations the sieves share (see
 * sieve_base.h).
 */
#include "sieve/sieve_base.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "frontier/base/byteorder.h"
#include "sieve/sieve_files.h"

void *sieve_alloc_random(size_t n)
{
	const size_t huge = (size_t)2 << 20;
	void *p = NULL;

	if (n < huge)
		return malloc(n > 0 ? n : 1);
	if (posix_memalign(&p, huge, n) != 0)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void)madvise(p, n / huge * huge, MADV_HUGEPAGE); /* a hint: ignored if refused */
#endif
	return p;
}

int sieve_base_init(struct sieve_base *b, const struct sieve_config *cfg, sieve_emit_fn emit,
                    void *emit_ctx, char *err, size_t errlen)
{
	b->lock_fd = -1;
	pthread_mutex_init(&b->mu, NULL);
	if (cfg->dir == NULL || cfg->dir[0] == '\0') {
		snprintf(err, errlen, "no sieve folder given");
		return SIEVE_EINVAL;
	}
	b->cfg = *cfg;
	b->emit = emit;
	b->emit_ctx = emit_ctx;
	b->dir = strdup(cfg->dir);
	if (b->dir == NULL) {
		snprintf(err, errlen, "out of memory");
		return SIEVE_ENOMEM;
	}
	b->cfg.dir = b->dir;
	if (b->cfg.max_url_len == 0)
		b->cfg.max_url_len = 65536;
	return SIEVE_OK;
}

int sieve_base_lock(struct sieve_base *b)
{
	return sieve_dir_lock(b->dir, &b->lock_fd, b->msg, sizeof b->msg);
}

int sieve_base_opened(struct sieve_base *b, int rc, char *err, size_t errlen)
{
	if (rc != SIEVE_OK)
		snprintf(err, errlen, "%s", b->msg[0] ? b->msg : sieve_strerror(rc));
	return rc;
}

void sieve_base_release(struct sieve_base *b)
{
	if (b->lock_fd >= 0)
		close(b->lock_fd);
	b->lock_fd = -1;
	free(b->dir);
	b->dir = NULL;
	pthread_mutex_destroy(&b->mu);
}

int sieve_fail(struct sieve_base *b, int code, const char *fmt, ...)
{
	char tmp[sizeof b->msg]; /* formatted first: an argument may point into b->msg */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	memcpy(b->msg, tmp, sizeof tmp);
	return code;
}

int sieve_set_fatal(struct sieve_base *b, int code)
{
	if (b->err == 0)
		b->err = code;
	return code;
}

/* One URL: refused when the sieve failed or the URL is too long. */
static int add_checked(struct sieve_base *b, const char *url, size_t len)
{
	if (b->err != 0)
		return SIEVE_ECLOSED;
	if (len > b->cfg.max_url_len)
		return sieve_fail(b, SIEVE_ETOOLONG, "URL of %zu bytes (max %zu)", len,
		                  b->cfg.max_url_len);
	return b->h->add_locked(b, url, len);
}

int sieve_base_open(const struct sieve_hooks *h, size_t size, const struct sieve_config *cfg,
                    sieve_emit_fn emit, void *emit_ctx, void **impl, char *err, size_t errlen)
{
	struct sieve_base *b = calloc(1, size);
	int rc;

	*impl = NULL;
	if (b == NULL)
		return SIEVE_ENOMEM;
	b->h = h;
	rc = sieve_base_init(b, cfg, emit, emit_ctx, err, errlen);
	if (rc != SIEVE_OK) {
		sieve_base_release(b);
		free(b);
		return rc;
	}
	rc = sieve_base_opened(b, h->start(b), err, errlen);
	if (rc != SIEVE_OK) {
		h->destroy(b);
		return rc;
	}
	*impl = b;
	return SIEVE_OK;
}

int sieve_base_close(void *impl)
{
	struct sieve_base *b = impl;
	int rc = b->h->close_locked != NULL ? b->h->close_locked(b) : sieve_base_sync_locked(b);

	b->h->destroy(b);
	return rc;
}

int sieve_base_add(void *impl, const char *url, size_t len)
{
	struct sieve_base *b = impl;
	int rc;

	pthread_mutex_lock(&b->mu);
	rc = add_checked(b, url, len);
	if (b->h->decides_in_add)
		b->st.flushes++; /* decided: see sieve.h on flushes */
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int sieve_base_add_batch(void *impl, const char *const *urls, const size_t *lens, size_t n)
{
	struct sieve_base *b = impl;
	int rc = SIEVE_OK;

	pthread_mutex_lock(&b->mu);
	if (b->h->add_batch_locked != NULL)
		rc = b->err != 0 ? SIEVE_ECLOSED : b->h->add_batch_locked(b, urls, lens, n);
	else
		for (size_t i = 0; i < n && rc == SIEVE_OK; i++)
			rc = add_checked(b, urls[i], lens[i]);
	if (b->h->decides_in_add)
		b->st.flushes++;
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int sieve_base_flush(void *impl)
{
	struct sieve_base *b = impl;
	int rc = SIEVE_OK;

	pthread_mutex_lock(&b->mu);
	if (b->err != 0)
		rc = SIEVE_ECLOSED;
	else if (b->h->flush_locked != NULL)
		rc = b->h->flush_locked(b);
	if (b->h->decides_in_add)
		b->st.flushes++; /* every URL is decided inside its add: nothing to do */
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int sieve_base_sync_locked(struct sieve_base *b)
{
	return b->err != 0 ? SIEVE_ECLOSED : b->h->sync_locked(b);
}

int sieve_base_sync(void *impl)
{
	struct sieve_base *b = impl;
	int rc;

	pthread_mutex_lock(&b->mu);
	rc = sieve_base_sync_locked(b);
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void sieve_base_stats(void *impl, struct sieve_stats *out)
{
	struct sieve_base *b = impl;

	pthread_mutex_lock(&b->mu);
	*out = b->st;
	if (b->h->stats_locked != NULL)
		b->h->stats_locked(b, out);
	pthread_mutex_unlock(&b->mu);
}

const char *sieve_base_last_error(void *impl)
{
	struct sieve_base *b = impl;

	pthread_mutex_lock(&b->mu);
	memcpy(b->lastmsg, b->msg, sizeof b->lastmsg);
	pthread_mutex_unlock(&b->mu);
	return b->lastmsg;
}

int sieve_snapshot_checkpoint(void *impl, const char *dir)
{
	struct sieve_base *b = impl;
	int rc;

	pthread_mutex_lock(&b->mu);
	rc = sieve_base_sync_locked(b);
	if (rc == SIEVE_OK &&
	    sieve_checkpoint_file(b->dir, dir, b->h->snapshot, SIEVE_WHOLE_FILE) != 0)
		rc = sieve_fail(b, SIEVE_EIO, "checkpoint of %s/%s into %s: %s", b->dir,
		                b->h->snapshot, dir, strerror(errno));
	pthread_mutex_unlock(&b->mu);
	return rc;
}

int sieve_snapshot_write(struct sieve_base *b, const char *name, const char *magic, uint8_t *h,
                         size_t hlen, const void *body, size_t blen)
{
	memcpy(h, magic, 8);
	if (body != NULL)
		le_put64(h + hlen - 16, XXH64(body, blen, 0));
	le_put64(h + hlen - 8, XXH64(h, hlen - 8, 0));
	if (sieve_file_replace(b->dir, name, h, hlen, body, blen, b->cfg.no_fsync) != 0)
		return sieve_fail(b, SIEVE_EIO, "%s/%s: %s", b->dir, name, strerror(errno));
	return SIEVE_OK;
}

int sieve_snapshot_read(struct sieve_base *b, const char *name, const char *magic, uint8_t *h,
                        size_t hlen, bool *present)
{
	char p[4096];
	int r;

	*present = false;
	if (sieve_path(p, sizeof p, b->dir, "%s", name) != 0)
		return sieve_fail(b, SIEVE_EINVAL, "%s: path too long", b->dir);
	r = sieve_file_read_at(p, h, hlen, 0);
	if (r == 1)
		return SIEVE_OK;
	if (r == -2)
		return sieve_fail(b, SIEVE_EIO, "%s: %s", p, strerror(errno));
	if (r == -1 || memcmp(h, magic, 8) != 0 || le_get64(h + hlen - 8) != XXH64(h, hlen - 8, 0))
		return sieve_fail(b, SIEVE_ECORRUPT, "%s: truncated or corrupt header", p);
	*present = true;
	return SIEVE_OK;
}

int sieve_snapshot_body(struct sieve_base *b, const char *name, const uint8_t *h, size_t hlen,
                        void *body, size_t blen)
{
	char p[4096];
	int r;

	if (sieve_path(p, sizeof p, b->dir, "%s", name) != 0)
		return sieve_fail(b, SIEVE_EINVAL, "%s: path too long", b->dir);
	r = sieve_file_read_at(p, body, blen, hlen);
	if (r == -2)
		return sieve_fail(b, SIEVE_EIO, "%s: %s", p, strerror(errno));
	if (r != 0 || XXH64(body, blen, 0) != le_get64(h + hlen - 16))
		return sieve_fail(b, SIEVE_ECORRUPT, "%s: truncated or corrupt body", p);
	return SIEVE_OK;
}
