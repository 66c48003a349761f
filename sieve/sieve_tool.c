/*
 * sieve_tool.c: `crawler sieve`: prints each stdin URL (one per line) not
 * seen before, in first-appearance order, through the Mercator sieve (or
 * the one named by --sieve: memory, bloom, lsm, offline; see sieve.h).
 *
 * stdin is read with read() in large blocks and split in place. Emitted
 * URLs are copied by the sieve's flush thread into one of two 1 MiB output
 * buffers; a writer thread writes the full ones to stdout in order, so the
 * write() calls (most of the output's cost: the page cache of a file)
 * overlap the flush instead of lengthening it. Without
 * --dir a temporary folder is used and removed; with --dir the sieve
 * persists: a later run goes on from its state, and after a crash the
 * next run first flushes the URLs the crashed one had read but not
 * flushed. No output log is kept (it would double the output on disk, and
 * resuming needs none): a URL is never printed twice, but a crash after a
 * flush's commit loses the printing of that flush's new URLs not yet
 * written to stdout.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "frontier/base/tools.h"
#include "frontier/base/fileio.h"
#include "sieve/sieve.h"

#define OUT_BUF ((size_t)1 << 20)

/* The output double buffer. The flush thread (the only emitter) fills
 * buf[cur]; a full buffer is marked ready and the writer thread writes it;
 * buffers are filled and written alternately, so the order is kept. A URL
 * longer than a buffer is written directly once both buffers are written.
 * Invariant: ready[i] set => n[i] bytes of buf[i] wait for the writer. */
struct tool_out {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char *buf[2];
	size_t n[2];
	bool ready[2];
	int cur;  /* filled by the emitter */
	int next; /* written next by the writer */
	bool stop;
	bool failed; /* a write to stdout failed */
	pthread_t thr;
};

static void *out_writer(void *arg)
{
	struct tool_out *o = arg;

	pthread_mutex_lock(&o->mu);
	for (;;) {
		int i = o->next;
		while (!o->ready[i] && !o->stop)
			pthread_cond_wait(&o->cv, &o->mu);
		if (!o->ready[i])
			break;
		pthread_mutex_unlock(&o->mu);
		int rc = fileio_write_all(STDOUT_FILENO, o->buf[i], o->n[i]);
		pthread_mutex_lock(&o->mu);
		if (rc != 0)
			o->failed = true;
		o->n[i] = 0;
		o->ready[i] = false;
		o->next ^= 1;
		pthread_cond_broadcast(&o->cv);
	}
	pthread_mutex_unlock(&o->mu);
	return NULL;
}

/* Hands buf[cur] to the writer and waits until the other buffer is free. */
static void out_submit(struct tool_out *o)
{
	pthread_mutex_lock(&o->mu);
	if (o->n[o->cur] > 0) {
		o->ready[o->cur] = true;
		o->cur ^= 1;
		pthread_cond_broadcast(&o->cv);
	}
	while (o->ready[o->cur])
		pthread_cond_wait(&o->cv, &o->mu);
	pthread_mutex_unlock(&o->mu);
}

static void tool_emit(void *ctx, const char *url, size_t len)
{
	struct tool_out *o = ctx;
	char *b;

	if (o->n[o->cur] + len + 1 > OUT_BUF) {
		out_submit(o);
		if (len + 1 > OUT_BUF) {
			/* longer than a buffer: once everything before it is written */
			out_submit(o);
			if (fileio_write_all(STDOUT_FILENO, url, len) != 0 ||
			    fileio_write_all(STDOUT_FILENO, "\n", 1) != 0)
				o->failed = true;
			return;
		}
	}
	b = o->buf[o->cur] + o->n[o->cur];
	memcpy(b, url, len);
	b[len] = '\n';
	o->n[o->cur] += len + 1;
}

/* Starts the writer thread; 0 or -1 (nothing to release then). */
static int out_start(struct tool_out *o)
{
	memset(o, 0, sizeof *o);
	o->buf[0] = malloc(OUT_BUF);
	o->buf[1] = malloc(OUT_BUF);
	if (o->buf[0] == NULL || o->buf[1] == NULL) {
		free(o->buf[0]);
		free(o->buf[1]);
		return -1;
	}
	pthread_mutex_init(&o->mu, NULL);
	pthread_cond_init(&o->cv, NULL);
	if (pthread_create(&o->thr, NULL, out_writer, o) != 0) {
		pthread_mutex_destroy(&o->mu);
		pthread_cond_destroy(&o->cv);
		free(o->buf[0]);
		free(o->buf[1]);
		return -1;
	}
	return 0;
}

/* Writes what is buffered, joins the writer, frees; 0 if every write
 * succeeded. Called after the sieve is closed (no emitter left). */
static int out_finish(struct tool_out *o)
{
	out_submit(o);
	pthread_mutex_lock(&o->mu);
	o->stop = true;
	pthread_cond_broadcast(&o->cv);
	pthread_mutex_unlock(&o->mu);
	pthread_join(o->thr, NULL);
	pthread_mutex_destroy(&o->mu);
	pthread_cond_destroy(&o->cv);
	free(o->buf[0]);
	free(o->buf[1]);
	return o->failed ? -1 : 0;
}

#define BATCH 256
#define SCAN 64 /* bytes looked at a time by the line splitter (slack past the read buffer) */

#if defined(__SSE2__)
/* The bits of the 64 bytes in v[0..3] equal to k's (bit i: byte i). */
static inline uint64_t mask64(const __m128i v[4], __m128i k)
{
	return (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[0], k)) |
	       (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[1], k)) << 16 |
	       (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[2], k)) << 32 |
	       (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v[3], k)) << 48;
}
#endif

/* The bits of the SCAN bytes at p that are line ends (*nl) and NUL bytes
 * (*nul) (bit i: p[i]); p may run past the data (callers mask those bits
 * off). One pass finds both in a whole read, each byte loaded once,
 * instead of two memchr calls a line. */
static inline void byte_masks(const char *p, uint64_t *nl, uint64_t *nul)
{
#if defined(__SSE2__)
	__m128i v[4];

	for (int i = 0; i < 4; i++)
		v[i] = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
	*nl = mask64(v, _mm_set1_epi8('\n'));
	*nul = mask64(v, _mm_setzero_si128());
#else
	uint64_t n = 0, z = 0;

	for (int i = 0; i < SCAN; i++) {
		n |= (uint64_t)(p[i] == '\n') << i;
		z |= (uint64_t)(p[i] == '\0') << i;
	}
	*nl = n;
	*nul = z;
#endif
}

/* Adds the batched lines (pointers into the read buffer) under one lock. */
static int add_pending(sieve_t *s, const char **bu, const size_t *bl, size_t *nb)
{
	int r = sieve_add_batch(s, bu, bl, *nb);
	*nb = 0;
	if (r != SIEVE_OK) {
		fprintf(stderr, "crawler sieve: %s: %s\n", sieve_strerror(r), sieve_last_error(s));
		return -1;
	}
	return 0;
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned long long mul = 1;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		mul = 1ull << 10;
	else if (*end == 'm' || *end == 'M')
		mul = 1ull << 20;
	else if (*end == 'g' || *end == 'G')
		mul = 1ull << 30;
	else if (*end != '\0')
		return -1;
	if (*end != '\0' && end[1] != '\0' && !((end[1] == 'B' || end[1] == 'b') && end[2] == '\0'))
		return -1;
	if (v > (unsigned long long)SIZE_MAX / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: crawler sieve [--sieve NAME] [--memory SIZE] [--dir DIR] [--max-line N] "
	           "[--stats]\n"
	           "                     [--expected N] [--fp-rate P] [--blocked]\n"
	           "  Reads URLs one per line on stdin; prints each URL not seen before,\n"
	           "  in first-appearance order. SIZE accepts K/M/G suffixes (default 64M).\n"
	           "  --dir DIR keeps the sieve in DIR across runs (default: a temporary folder).\n"
	           "  Lines longer than --max-line (default 8192) or holding NUL bytes are\n"
	           "  reported on stderr and skipped.\n"
	           "  --sieve NAME: mercator (default), memory, bloom, lsm or offline.\n"
	           "  bloom: sized for --expected N distinct URLs at false-positive rate\n"
	           "  --fp-rate P (default 0.01), or from --memory without --expected;\n"
	           "  --blocked for the cache-blocked filter. Its false positives drop URLs.\n");
}

/* The command line. */
struct tool_opts {
	struct sieve_config cfg;
	const char *dir;
	size_t max_line;
	int want_stats;
};

/* Reads an option's value v into o: 0, or -1 (reported). */
static int parse_value(const char *a, const char *v, struct tool_opts *o)
{
	char *end;
	size_t n;

	if (strcmp(a, "--sieve") == 0) {
		o->cfg.impl = v;
	} else if (strcmp(a, "--dir") == 0) {
		o->dir = v;
	} else if (strcmp(a, "--expected") == 0) {
		if (parse_size(v, &n) != 0 || n == 0) {
			fprintf(stderr, "crawler sieve: bad --expected '%s'\n", v);
			return -1;
		}
		o->cfg.expected_urls = n;
	} else if (strcmp(a, "--fp-rate") == 0) {
		errno = 0;
		o->cfg.fp_rate = strtod(v, &end);
		if (errno != 0 || end == v || *end != '\0' ||
		    !(o->cfg.fp_rate > 0 && o->cfg.fp_rate <= 0.5)) {
			fprintf(stderr, "crawler sieve: bad --fp-rate '%s' (want 0 < P <= 0.5)\n",
			        v);
			return -1;
		}
	} else if (strcmp(a, "--memory") == 0) {
		if (parse_size(v, &o->cfg.memory) != 0) {
			fprintf(stderr, "crawler sieve: bad --memory '%s'\n", v);
			return -1;
		}
	} else if (strcmp(a, "--max-line") == 0) {
		if (parse_size(v, &o->max_line) != 0 || o->max_line == 0 ||
		    o->max_line > ((size_t)1 << 24)) {
			fprintf(stderr, "crawler sieve: bad --max-line '%s'\n", v);
			return -1;
		}
	} else {
		fprintf(stderr, "crawler sieve: unknown or incomplete option '%s'\n", a);
		usage(stderr);
		return -1;
	}
	return 0;
}

/* Reads the options into o: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct tool_opts *o)
{
	memset(o, 0, sizeof *o);
	o->cfg.memory = (size_t)64 << 20;
	o->max_line = 8192;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(a, "--stats") == 0) {
			o->want_stats = 1;
		} else if (strcmp(a, "--blocked") == 0) {
			o->cfg.bloom_blocked = 1;
		} else if (i + 1 == argc) {
			fprintf(stderr, "crawler sieve: unknown or incomplete option '%s'\n", a);
			usage(stderr);
			return 2;
		} else if (parse_value(a, argv[++i], o) != 0) {
			return 2;
		}
	}
	return -1;
}

/* The input: a read buffer split into lines in place, the lines batched
 * for the sieve. */
struct tool_in {
	char *buf;
	size_t cap, len, start, max_line;
	unsigned long long lineno, nread, skipped;
	int skipping; /* in the tail of an overlong line already reported */
	const char *bu[BATCH];
	size_t bl[BATCH], nb;
};

/* Takes the complete lines of buf[0, len) (each newline ends one; a line
 * holds a NUL when the last NUL seen lies at or after its start) to the
 * sieve, a batch at a time; in->start is left at the first line not
 * complete. The counters are kept in locals in the loop. 0 or -1. */
static int split_lines(struct tool_in *in, sieve_t *s)
{
	const char *buf = in->buf;
	const size_t len = in->len, max_line = in->max_line;
	size_t start = in->start, last_nul = SIZE_MAX;
	unsigned long long lineno = in->lineno, nread = in->nread, skipped = in->skipped;
	int skipping = in->skipping, rc = 0;

	for (size_t pos = 0; pos < len && rc == 0; pos += SCAN) {
		uint64_t nl, nul;
		byte_masks(buf + pos, &nl, &nul);
		if (len - pos < SCAN) {
			uint64_t keep = ((uint64_t)1 << (len - pos)) - 1;
			nl &= keep;
			nul &= keep;
		}
		for (; nl != 0 && rc == 0; nl &= nl - 1) {
			unsigned b = (unsigned)__builtin_ctzll(nl);
			uint64_t before = nul & (((uint64_t)1 << b) - 1);
			size_t l = pos + b - start;
			if (before != 0)
				last_nul = pos + 63 - (unsigned)__builtin_clzll(before);
			if (skipping) {
				skipping = 0; /* the tail of a line already reported */
			} else {
				lineno++;
				if (l > max_line) {
					fprintf(stderr,
					        "crawler sieve: line %llu: longer than %zu bytes, "
					        "skipped\n",
					        lineno, max_line);
					skipped++;
				} else if (last_nul != SIZE_MAX && last_nul >= start) {
					fprintf(stderr,
					        "crawler sieve: line %llu: contains a NUL byte, "
					        "skipped\n",
					        lineno);
					skipped++;
				} else {
					nread++;
					in->bu[in->nb] = buf + start;
					in->bl[in->nb++] = l;
					if (in->nb == BATCH)
						rc = add_pending(s, in->bu, in->bl, &in->nb);
				}
			}
			start = pos + b + 1;
		}
		if (nul != 0)
			last_nul = pos + 63 - (unsigned)__builtin_clzll(nul);
	}
	in->start = start;
	in->lineno = lineno;
	in->nread = nread;
	in->skipped = skipped;
	in->skipping = skipping;
	if (rc == 0 && in->nb > 0)
		rc = add_pending(s, in->bu, in->bl, &in->nb);
	return rc;
}

/* Reads stdin to its end into the sieve. 0 or -1 (reported). */
static int read_input(struct tool_in *in, sieve_t *s)
{
	int eof = 0;

	while (!eof) {
		ssize_t g = read(0, in->buf + in->len, in->cap - in->len);
		if (g < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "crawler sieve: read error: %s\n", strerror(errno));
			return -1;
		}
		if (g == 0) {
			eof = 1;
			if (in->len > in->start)
				in->buf[in->len++] = '\n'; /* a last line without newline */
		} else {
			in->len += (size_t)g;
		}
		if (split_lines(in, s) != 0)
			return -1;
		if (in->start > 0) {
			memmove(in->buf, in->buf + in->start, in->len - in->start);
			in->len -= in->start;
			in->start = 0;
		}
		if (in->skipping) {
			in->len = 0;
		} else if (in->len > in->max_line) {
			/* an overlong line without its newline yet: report, drop, skip to the newline */
			in->lineno++;
			fprintf(stderr,
			        "crawler sieve: line %llu: longer than %zu bytes, skipped\n",
			        in->lineno, in->max_line);
			in->skipped++;
			in->skipping = 1;
			in->len = 0;
		}
	}
	return 0;
}

static void print_stats(const struct sieve_stats *st, const struct tool_in *in)
{
	fprintf(stderr,
	        "urls_read %llu\nlines_skipped %llu\nemitted %llu\ncache_drops %llu\nflushes %llu\n"
	        "flush_seconds_total %.3f\nflush_seconds_max %.3f\nadd_waits %llu\nbuffer_urls "
	        "%llu\n"
	        "z_signatures %llu\nz_bytes %llu\nz_bytes_per_signature %.3f\n",
	        in->nread, in->skipped, (unsigned long long)st->emitted,
	        (unsigned long long)st->cache_drops, (unsigned long long)st->flushes,
	        st->flush_ns_total / 1e9, st->flush_ns_max / 1e9, (unsigned long long)st->add_waits,
	        (unsigned long long)st->buffer_urls, (unsigned long long)st->z_count,
	        (unsigned long long)st->z_bytes,
	        st->z_count ? (double)st->z_bytes / (double)st->z_count : 0.0);
	if (st->filter_bits > 0)
		fprintf(stderr,
		        "filter_bits %llu\nfilter_hashes %llu\nfilter_fill "
		        "%.6f\nfilter_fp_estimate %.6g\n"
		        "filter_fp_target %.6g\n",
		        (unsigned long long)st->filter_bits, (unsigned long long)st->filter_hashes,
		        (double)st->filter_bits_set / (double)st->filter_bits,
		        st->filter_fp_estimate, st->filter_fp_target);
}

/* Flushes and closes s (freed either way); prints the counters if asked.
 * 0 or -1 (reported). */
static int finish(sieve_t *s, struct tool_out *out, const struct tool_in *in, int want_stats)
{
	struct sieve_stats st;
	int r = sieve_flush(s);

	sieve_stats_get(s, &st);
	if (r == SIEVE_OK)
		r = sieve_close(s);
	else
		sieve_close(s);
	if (r != SIEVE_OK) {
		fprintf(stderr, "crawler sieve: %s\n", sieve_strerror(r));
		out_finish(out);
		return -1;
	}
	if (out_finish(out) != 0) {
		fprintf(stderr, "crawler sieve: write error on stdout\n");
		return -1;
	}
	if (want_stats)
		print_stats(&st, in);
	return 0;
}

int sieve_tool_main(int argc, char **argv)
{
	struct tool_opts o;
	struct tool_out out;
	struct tool_in in;
	sieve_t *s = NULL;
	char err[600], tmpdir[4096] = "";
	int rc = parse_args(argc, argv, &o), r;

	if (rc >= 0)
		return rc;
	memset(&in, 0, sizeof in);
	in.max_line = o.max_line;
	in.cap = (size_t)256 << 10;
	if (in.cap < 2 * o.max_line + 2)
		in.cap = 2 * o.max_line + 2;
	if (o.dir == NULL) {
		const char *t = getenv("TMPDIR");
		if (snprintf(tmpdir, sizeof tmpdir, "%s/crawler-sieve-XXXXXX",
		             t && *t ? t : "/tmp") >= (int)sizeof tmpdir ||
		    mkdtemp(tmpdir) == NULL) {
			fprintf(stderr, "crawler sieve: cannot create a temporary folder: %s\n",
			        strerror(errno));
			return 1;
		}
		o.dir = tmpdir;
		o.cfg.no_fsync = 1;
	}
	o.cfg.dir = o.dir;
	o.cfg.max_url_len = o.max_line;
	rc = 1;
	in.buf = calloc(1, in.cap + SCAN); /* the splitter's last look may pass len */
	if (in.buf == NULL || out_start(&out) != 0) {
		fprintf(stderr, "crawler sieve: out of memory\n");
		goto out;
	}
	r = sieve_open(&o.cfg, tool_emit, &out, &s, err, sizeof err);
	if (r != SIEVE_OK) {
		fprintf(stderr, "crawler sieve: %s: %s\n", sieve_strerror(r), err);
		out_finish(&out);
	} else if (read_input(&in, s) != 0) {
		sieve_close(s);
		out_finish(&out);
	} else if (finish(s, &out, &in, o.want_stats) == 0) {
		rc = 0;
	}
out:
	free(in.buf);
	if (tmpdir[0] != '\0')
		fileio_remove_tree(tmpdir); /* (the lsm sieve keeps a rocksdb/ subfolder) */
	return rc;
}
