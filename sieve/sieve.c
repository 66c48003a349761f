/*
 * sieve.c: the public wrapper: picks an implementation by name from the table
 * of operations and forwards every call to it.
 */
#include "sieve/sieve.h"

#include <errno.h>
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sieve/sieve_files.h"

struct sieve {
	const struct sieve_ops *ops;
	void *impl;
};

static const struct sieve_ops *const sieve_impls[] = {
	&sieve_mercator_ops, &sieve_memory_ops,  &sieve_bloom_ops,
	&sieve_lsm_ops,      &sieve_offline_ops,
};

int sieve_open(const struct sieve_config *cfg, sieve_emit_fn emit, void *emit_ctx, sieve_t **out,
               char *errbuf, size_t errlen)
{
	const struct sieve_ops *ops = NULL;
	sieve_t *s = NULL;
	char dummy[8];
	int rc;

	if (errbuf == NULL || errlen == 0) {
		errbuf = dummy;
		errlen = sizeof dummy;
	}
	errbuf[0] = '\0';
	if (out == NULL)
		return SIEVE_EINVAL;
	*out = NULL;
	if (cfg == NULL) {
		snprintf(errbuf, errlen, "no configuration");
		return SIEVE_EINVAL;
	}
	for (size_t i = 0; i < sizeof sieve_impls / sizeof sieve_impls[0]; i++) {
		if (cfg->impl == NULL || strcmp(cfg->impl, sieve_impls[i]->name) == 0) {
			ops = sieve_impls[i];
			break;
		}
	}
	if (ops == NULL) {
		snprintf(errbuf, errlen, "unknown sieve implementation '%s'", cfg->impl);
		return SIEVE_ENOTSUP;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return SIEVE_ENOMEM;
	s->ops = ops;
	rc = ops->open(cfg, emit, emit_ctx, &s->impl, errbuf, errlen);
	if (rc != SIEVE_OK) {
		free(s);
		return rc;
	}
	*out = s;
	return SIEVE_OK;
}

int sieve_add(sieve_t *s, const char *url, size_t len)
{
	if (s == NULL || (url == NULL && len > 0))
		return SIEVE_EINVAL;
	return s->ops->add(s->impl, url, len);
}

int sieve_add_batch(sieve_t *s, const char *const *urls, const size_t *lens, size_t n)
{
	if (s == NULL || (n > 0 && (urls == NULL || lens == NULL)))
		return SIEVE_EINVAL;
	return s->ops->add_batch(s->impl, urls, lens, n);
}

int sieve_flush(sieve_t *s)
{
	if (s == NULL)
		return SIEVE_EINVAL;
	return s->ops->flush(s->impl);
}

int sieve_sync(sieve_t *s)
{
	if (s == NULL)
		return SIEVE_EINVAL;
	return s->ops->sync(s->impl);
}

int sieve_close(sieve_t *s)
{
	int rc;

	if (s == NULL)
		return SIEVE_OK;
	rc = s->ops->close(s->impl);
	free(s);
	return rc;
}

int sieve_checkpoint(sieve_t *s, const char *dir)
{
	if (s == NULL || dir == NULL)
		return SIEVE_EINVAL;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return SIEVE_EIO;
	return s->ops->checkpoint(s->impl, dir);
}

int sieve_restore(const char *ckpt, const char *dir, char *err, size_t errlen)
{
	char dummy[8];
	if (err == NULL || errlen == 0) {
		err = dummy;
		errlen = sizeof dummy;
	}
	err[0] = '\0';
	if (ckpt == NULL || dir == NULL)
		return SIEVE_EINVAL;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(errno));
		return SIEVE_EIO;
	}
	if (sieve_empty_dir(dir, "LOCK") != 0) {
		snprintf(err, errlen, "%s: cannot empty: %s", dir, strerror(errno));
		return SIEVE_EIO;
	}
	if (sieve_copy_tree(ckpt, dir) != 0) {
		snprintf(err, errlen, "copying the checkpoint %s to %s: %s", ckpt, dir,
		         strerror(errno));
		return SIEVE_EIO;
	}
	return SIEVE_OK;
}

void sieve_stats_get(sieve_t *s, struct sieve_stats *out)
{
	if (out == NULL)
		return;
	memset(out, 0, sizeof *out);
	if (s != NULL)
		s->ops->stats(s->impl, out);
}

const char *sieve_last_error(sieve_t *s)
{
	if (s == NULL)
		return "";
	return s->ops->last_error(s->impl);
}

const char *sieve_strerror(int err)
{
	switch (err) {
	case SIEVE_OK: return "success";
	case SIEVE_EINVAL: return "invalid argument or configuration";
	case SIEVE_ENOMEM: return "out of memory";
	case SIEVE_EIO: return "I/O error";
	case SIEVE_ECORRUPT: return "sieve file truncated or corrupt";
	case SIEVE_ETOOLONG: return "URL too long";
	case SIEVE_ECLOSED: return "sieve unusable after an earlier error";
	case SIEVE_ENOTSUP: return "not supported";
	case SIEVE_ELOCKED: return "sieve folder in use by another process";
	default: return "unknown sieve error";
	}
}
