/*
 * test_zcodec.c: the Mercator sieve's Z codec (Elias-Fano in blocks, see
 * sieve/zcodec.h) on signatures the public interface cannot choose (they
 * are hashes): n = 0, 1, 2; signatures 0 and 2^64-1; every L from 0 to
 * Z_LMAX; gaps far larger than a buffer; equal signatures; payloads read
 * through the smallest buffer; damaged and truncated payloads. Each set is
 * encoded to a file by the writer and read back by the reader, and compared
 * with the input. Also the flush's layout and sort (flush_sort.h) and the
 * load of a slice from its S file: internal parts, reached through their
 * headers.
 *
 * `test_zcodec --bench` instead prints the codec's speed on 10^7 random
 * signatures (ns per signature to encode and to decode, bytes per signature).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frontier/base/clock.h"
#include "harness.h"
#include "sieve/mercator.h"

/* A xorshift generator: the same sets on every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* An assertion that also holds outside a Check test (the --bench mode):
 * the helpers below serve both. */
static int bench_mode;
#define need(c)                                                                                    \
	do {                                                                                       \
		if (!bench_mode) {                                                                 \
			ck_assert(c);                                                              \
		} else if (!(c)) {                                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c);                    \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct coded {
	uint64_t payload, sum; /* bytes written and their XXH3 */
};

/* Encodes v[0..n) with L low bits into the file fd (from offset 0), through
 * an I/O buffer of cap bytes, a block of Z_BLOCK at a time. */
static struct coded encode(int fd, const uint64_t *v, size_t n, unsigned L, size_t cap)
{
	struct zw w;
	struct coded c;
	struct stat sb;
	XXH3_state_t *xs = XXH3_createState();

	memset(&w, 0, sizeof w);
	need(xs != NULL);
	XXH3_64bits_reset(xs);
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)) {
		need(ftruncate(fd, 0) == 0);
		need(lseek(fd, 0, SEEK_SET) == 0);
	}
	w.fd = fd;
	w.buf = malloc(cap);
	need(w.buf != NULL);
	w.cap = cap;
	w.L = L;
	w.xs = xs;
	/* blocks of Z_BLOCK, as the merge of a flush hands them */
	for (size_t i = 0; i < n; i += Z_BLOCK)
		zw_block(&w, v + i, n - i < Z_BLOCK ? n - i : Z_BLOCK);
	zw_drain(&w);
	need(!w.ioerr);
	need(!w.unsorted);
	c.payload = w.total;
	c.sum = XXH3_64bits_digest(xs);
	free(w.buf);
	XXH3_freeState(xs);
	return c;
}

/* Decodes n signatures of a payload of plen bytes from fd into out; 1 if
 * the reader ended cleanly with every byte read and the checksum equal to
 * sum, 0 otherwise (damage detected). */
static int decode(int fd, uint64_t *out, size_t n, unsigned L, uint64_t plen, uint64_t sum,
                  size_t cap)
{
	struct zr z;
	uint64_t hprev = 0;
	XXH3_state_t *xs = XXH3_createState();
	int ok = 1;

	memset(&z, 0, sizeof z);
	need(xs != NULL);
	XXH3_64bits_reset(xs);
	need(lseek(fd, 0, SEEK_SET) == 0);
	z.fd = fd;
	z.buf = calloc(1, cap + Z_SLACK);
	need(z.buf != NULL);
	z.cap = cap;
	z.left = plen;
	z.xs = xs;
	for (size_t i = 0; i < n && ok; i += Z_BLOCK)
		ok = zr_block(&z, L, &hprev, out + i, n - i < Z_BLOCK ? n - i : Z_BLOCK);
	if (ok)
		ok = !z.bad && z.ioerr == 0 && z.left == 0 && z.pos == z.len &&
		     XXH3_64bits_digest(xs) == sum;
	free(z.buf);
	XXH3_freeState(xs);
	return ok;
}

static int open_tmp(void)
{
	char p[256];
	int fd;
	make_dir(p, sizeof p, "zcodec");
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	need(fd >= 0);
	unlink(p);
	return fd;
}

/* Round trip of v[0..n) with L low bits through buffers of cap bytes. */
static struct coded round_trip(const uint64_t *v, size_t n, unsigned L, size_t cap)
{
	int fd = open_tmp();
	uint64_t *got = malloc((n + 1) * sizeof *got);
	struct coded c;
	struct stat sb;

	ck_assert_ptr_nonnull(got);
	c = encode(fd, v, n, L, cap);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	ck_assert_uint_eq((uint64_t)sb.st_size, c.payload);
	ck_assert_msg(decode(fd, got, n, L, c.payload, c.sum, cap), "decode failed: n %zu, L %u", n,
	              L);
	/* one assertion per set: Check records every one it evaluates */
	size_t i = 0;
	while (i < n && got[i] == v[i])
		i++;
	ck_assert_msg(i == n, "n %zu L %u: [%zu] = %llx, want %llx", n, L, i,
	              (unsigned long long)(i < n ? got[i] : 0),
	              (unsigned long long)(i < n ? v[i] : 0));
	free(got);
	close(fd);
	return c;
}

/* n ascending signatures spread over [0, 2^bits) (a little beyond when
 * bumped apart), with runs of consecutive ones (gaps of 1) if runs. */
static uint64_t *sorted_set(size_t n, unsigned bits, int runs)
{
	uint64_t *v = malloc((n + 1) * sizeof *v);
	need(v != NULL);
	for (size_t i = 0; i < n; i++)
		v[i] = bits == 0 ? 0 : rng() >> (64 - bits);
	qsort(v, n, sizeof *v, cmp_u64);
	for (size_t i = 1; i < n; i++) {
		if (runs && rng() % 4 == 0)
			v[i] = v[i - 1] + 1;
		if (v[i] <= v[i - 1])
			v[i] = v[i - 1] + 1;
		need(v[i] != 0); /* no wrap past 2^64-1 */
	}
	return v;
}

START_TEST(test_low_bits_choice)
{
	/* whole bytes, minimizing n (L + 1) + 2^(64-L) bits */
	ck_assert_uint_eq(z_low_bits(0), Z_LMAX);
	ck_assert_uint_eq(z_low_bits(1), Z_LMAX);
	ck_assert_uint_eq(z_low_bits(2), Z_LMAX);
	ck_assert_uint_eq(z_low_bits(256), 56);
	ck_assert_uint_eq(z_low_bits(10000000), 40); /* log2(2^64/n) = 40.75 */
	/* 30.78: 33.43 bits, not 24 + 1 + 2^6.78 */
	ck_assert_uint_eq(z_low_bits(10000000000ull), 32);
	ck_assert_uint_eq(z_low_bits((uint64_t)1 << 29), 32); /* 35: 41 bits against 41.03 */
	ck_assert_uint_eq(z_low_bits((uint64_t)1 << 28), 40); /* 36: 41.06 bits against 49 */
	ck_assert_uint_eq(z_low_bits(UINT64_MAX), 0);
	for (uint64_t n = 1; n < ((uint64_t)1 << 62); n = n * 3 + 1)
		ck_assert_uint_eq(z_low_bits(n) % 8, 0);
}
END_TEST

/* n = 0, 1, 2 with the extreme signatures, at L = 0, 8, 56 and the L the
 * sieve would choose. */
START_TEST(test_tiny_sets)
{
	static const uint64_t ends[][2] = {
		{ 0, 1 }, { 0, UINT64_MAX }, { UINT64_MAX - 1, UINT64_MAX }, { 5, 6 }, { 0, 256 }
	};
	for (unsigned L = 0; L <= Z_LMAX; L += 8) {
		struct coded c = round_trip(NULL, 0, L, 64 << 10);
		ck_assert_uint_eq(c.payload, 0);
		for (size_t e = 0; e < sizeof ends / sizeof ends[0]; e++) {
			/* at small L the high part of 2^64-1 has 2^(64-L) zeros: only
			 * sets whose high parts stay small */
			if (L < 40 && (ends[e][1] >> L) > ((uint64_t)1 << 24))
				continue;
			round_trip(&ends[e][0], 1, L, 64 << 10);
			round_trip(&ends[e][1], 1, L, 64 << 10);
			round_trip(ends[e], 2, L, 64 << 10);
		}
	}
	/* n = 1 and 2 at the L the sieve chooses for them (Z_LMAX) */
	static const uint64_t hi[2] = { 0, UINT64_MAX };
	round_trip(hi, 2, z_low_bits(2), 64 << 10);
	/* L = 0: the signatures are all high part (unary) */
	static const uint64_t small[] = { 0, 1, 2, 3, 100, 1000, 70000 };
	round_trip(small, sizeof small / sizeof small[0], 0, 64 << 10);
}
END_TEST

/* Every L (0, 8, ..., Z_LMAX), sizes around the block size, with and
 * without runs of consecutive signatures, through the smallest buffer
 * (64 KiB) and a large one. */
START_TEST(test_every_l)
{
	static const size_t sizes[] = { 3,           Z_BLOCK - 1,      Z_BLOCK,
		                        Z_BLOCK + 1, 5 * Z_BLOCK + 17, 70000 };
	for (unsigned L = 0; L <= Z_LMAX; L += 8) {
		for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
			size_t n = sizes[k];
			unsigned ceil_log2 = 64 - (unsigned)__builtin_clzll(n - 1);
			/* dense (the sieve's case: ~2 high bits each) and sparse
			 * (~2^4 zeros per high part) */
			for (unsigned extra = 0; extra <= 4; extra += 4) {
				unsigned bits =
				        L + ceil_log2 + extra > 64 ? 64 : L + ceil_log2 + extra;
				uint64_t *v = sorted_set(n, bits, (int)(k % 2));
				round_trip(v, n, L, 64 << 10);
				if (k == 5)
					round_trip(v, n, L, 1 << 20);
				free(v);
			}
		}
	}
}
END_TEST

/* Gaps far beyond a store and beyond the buffer: 2^24 zero bits of unary
 * (2 MiB, 32 buffers of 64 KiB) are written and skipped in pieces. */
START_TEST(test_huge_gaps)
{
	uint64_t v[6] = { 0,         1, (uint64_t)1 << 63, ((uint64_t)1 << 63) + 1, UINT64_MAX - 1,
		          UINT64_MAX };
	struct coded c = round_trip(v, 6, 40, 64 << 10);
	/* 2^24 zeros = 2 MiB of high part, then 6 x 40 low bits */
	ck_assert_uint_ge(c.payload, ((uint64_t)1 << 24) / 8);
	round_trip(v, 6, Z_LMAX, 64 << 10);
	/* a gap of 63, 64, 65 zeros and around the fast path's limit (62) */
	for (uint64_t g = 50; g < 140; g++) {
		uint64_t w[4] = { 0, g << 8, (g << 8) + 3, (2 * g + 1) << 8 };
		round_trip(w, 4, 8, 64 << 10);
	}
	/* a block of dense signatures after a long gap, and the reverse */
	uint64_t *d = malloc(3000 * sizeof *d);
	ck_assert_ptr_nonnull(d);
	for (size_t i = 0; i < 3000; i++)
		d[i] = i < 1500 ? i : ((uint64_t)1 << 28) + i;
	round_trip(d, 3000, 8, 64 << 10); /* 2^20 zeros: 128 KiB */
	round_trip(d, 3000, 0, 64 << 10); /* 2^28 zeros: 32 MiB */
	/* gaps of thousands of bits that still fit the buffer (the fast
	 * path's words skipped, left zero) */
	for (size_t i = 0; i < 3000; i++)
		d[i] = i == 0 ? 0 : d[i - 1] + ((uint64_t)(5000 + i % 7) << 8);
	round_trip(d, 3000, 8, 64 << 10);
	free(d);
}
END_TEST

/* The sizes the sieve produces: n random signatures at z_low_bits(n), and
 * the space against Elias-Fano's bound L + 1 + 2^64/(n 2^L) bits. */
START_TEST(test_space)
{
	const size_t n = 200000;
	uint64_t *v = sorted_set(n, 64, 0);
	unsigned L = z_low_bits(n);
	struct coded c = round_trip(v, n, L, 64 << 10);
	double bits = 8.0 * (double)c.payload / (double)n;
	double bound = L + 1 + ldexp(1.0, 64) / ((double)n * ldexp(1.0, (int)L));
	ck_assert_msg(bits < bound + 0.05, "%.3f bits per signature, bound %.3f", bits, bound);
	free(v);
}
END_TEST

/* A flipped byte anywhere and a cut payload are caught (by the reader or
 * by the checksum). */
START_TEST(test_damage)
{
	const size_t n = 5000;
	uint64_t *v = sorted_set(n, 64, 0), *got = malloc(n * sizeof *got);
	unsigned L = z_low_bits(n);
	int fd = open_tmp();
	struct coded c = encode(fd, v, n, L, 64 << 10);

	ck_assert_ptr_nonnull(got);
	for (uint64_t off = 0; off < c.payload; off += 97) {
		uint8_t b;
		ck_assert_int_eq(pread(fd, &b, 1, (off_t)off), 1);
		b ^= 0x10;
		ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
		ck_assert_msg(!decode(fd, got, n, L, c.payload, c.sum, 64 << 10),
		              "flip at %llu not caught", (unsigned long long)off);
		b ^= 0x10;
		ck_assert_int_eq(pwrite(fd, &b, 1, (off_t)off), 1);
	}
	ck_assert(decode(fd, got, n, L, c.payload, c.sum, 64 << 10));
	/* the header's length with the file cut, and a length too short */
	ck_assert_int_eq(ftruncate(fd, (off_t)(c.payload / 2)), 0);
	ck_assert(!decode(fd, got, n, L, c.payload, c.sum, 64 << 10));
	ck_assert(!decode(fd, got, n, L, c.payload / 2, c.sum, 64 << 10));
	close(fd);
	free(v);
	free(got);
}
END_TEST

/* Z is a set: a payload holding a signature twice (written by a writer
 * that does not check) is refused by the reader, inside a block and across
 * two blocks. */
START_TEST(test_refuse_repeats)
{
	uint64_t *v = malloc(2 * Z_BLOCK * sizeof *v), *got = malloc(2 * Z_BLOCK * sizeof *got);
	int fd = open_tmp();
	struct coded c;

	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(got);
	for (size_t i = 0; i < 2 * Z_BLOCK; i++)
		v[i] = (uint64_t)i << 20;
	c = encode(fd, v, 2 * Z_BLOCK, 16, 64 << 10);
	ck_assert(decode(fd, got, 2 * Z_BLOCK, 16, c.payload, c.sum, 64 << 10));
	v[7] = v[6]; /* inside the first block */
	c = encode(fd, v, 2 * Z_BLOCK, 16, 64 << 10);
	ck_assert(!decode(fd, got, 2 * Z_BLOCK, 16, c.payload, c.sum, 64 << 10));
	v[7] = (uint64_t)7 << 20;
	v[Z_BLOCK] = v[Z_BLOCK - 1]; /* the second block starts with the first's last */
	c = encode(fd, v, 2 * Z_BLOCK, 16, 64 << 10);
	ck_assert(!decode(fd, got, 2 * Z_BLOCK, 16, c.payload, c.sum, 64 << 10));
	free(v);
	free(got);
	close(fd);
}
END_TEST

/* Input out of order (what the merge would make of a damaged Z, were the
 * reader not to refuse it): a block below the previous one is refused by
 * the writer; disorder inside a block is written wrong but inside the
 * buffer (ASan builds check that), never as a run of 2^64 zeros. */
START_TEST(test_unsorted_input)
{
	uint64_t v[3] = { UINT64_MAX, 0, 5 }; /* the second block goes back */
	uint64_t u[3] = { 0, (uint64_t)1 << 40, 5 }, got[3];
	struct zw w;
	XXH3_state_t *xs = XXH3_createState();
	int fd = open_tmp();
	struct coded c;

	memset(&w, 0, sizeof w);
	XXH3_64bits_reset(xs);
	w.fd = fd;
	w.buf = malloc(64 << 10);
	w.cap = 64 << 10;
	w.L = 40;
	w.xs = xs;
	zw_block(&w, v, 1);
	ck_assert(!w.unsorted);
	zw_block(&w, v + 1, 2);
	zw_drain(&w);
	ck_assert(w.unsorted);
	ck_assert_uint_eq(w.count, 1);
	free(w.buf);
	XXH3_freeState(xs);
	/* inside a block: a high part 2^32 words away is kept in the block */
	c = encode(fd, u, 3, 8, 64 << 10);
	ck_assert_uint_lt(c.payload, 64);
	ck_assert(!decode(fd, got, 3, 8, c.payload, c.sum, 64 << 10));
	close(fd);
}
END_TEST

/* The key expected at each position of the bucketed layout, built by
 * counting: record i of v goes to its bucket's start plus its rank. */
static void layout_expect(const uint64_t *v, size_t n, unsigned p, const uint32_t *top,
                          uint64_t *want)
{
	size_t nb = (size_t)1 << p;
	uint32_t *start = calloc(nb + 1, sizeof *start), *rank = calloc(nb, sizeof *rank);
	const uint32_t lim = ((uint32_t)1 << p) - 1;

	need(start != NULL && rank != NULL);
	for (size_t d = 0; d < nb; d++)
		start[d + 1] = start[d] + top[d];
	for (size_t i = 0; i < n; i++) {
		size_t d = v[i] >> (64 - p);
		uint32_t r = rank[d]++;
		want[start[d] + r] = v[i] << p | (r < lim ? r : lim);
	}
	free(start);
	free(rank);
}

/* S.<seg>.<r>, the list of a segment's signatures of slice r that the
 * flush loads (a cache of A's): loaded into the bucketed layout when whole
 * (every position holds its record's signature and rank, ranks past lim
 * saturated), also when the file goes on past them (a recycled file), and
 * refused (the flush then reads A) when missing, short, with another
 * checksum, holding a signature of another slice, or disagreeing with the
 * adds' count per bucket. */
START_TEST(test_signature_list)
{
	const size_t n = 3000;
	const unsigned p = 8, r = 2; /* slice 2: buckets 64..95 */
	const uint64_t slice_bits = (uint64_t)r << (64 - SLICE_BITS);
	struct merc m;
	struct segment b;
	struct zpart zp;
	uint32_t top[256];
	uint64_t *v = malloc(n * sizeof *v), *want = malloc(n * sizeof *want), sum;
	uint8_t *bytes = malloc(n * 8 + 8), *scratch = malloc(64 << 10);
	char sp[512], dir[256];
	int fd;
	size_t crowded = 0;

	ck_assert_ptr_nonnull(v);
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(bytes);
	ck_assert_ptr_nonnull(scratch);
	memset(&m, 0, sizeof m);
	memset(&b, 0, sizeof b);
	memset(&zp, 0, sizeof zp);
	make_dir(dir, sizeof dir, "slist");
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	m.base.dir = dir;
	m.io = 64 << 10;
	m.pbits = p;
	m.keys = malloc(n * sizeof *m.keys);
	m.bstart = malloc((256 + 1) * sizeof *m.bstart);
	m.bnext = malloc(256 * sizeof *m.bnext);
	ck_assert_ptr_nonnull(m.keys);
	ck_assert_ptr_nonnull(m.bstart);
	ck_assert_ptr_nonnull(m.bnext);
	memset(top, 0, sizeof top);
	for (size_t i = 0; i < n; i++) {
		/* with repeats, in add order; a third in bucket 70, past its lim */
		v[i] = i > 0 && i % 10 == 0 ? v[i / 2]
		       : i % 3 == 0         ? (uint64_t)70 << 56 | (rng() >> 8)
		                            : slice_bits | (rng() >> SLICE_BITS);
		top[v[i] >> 56]++;
		le_put64(bytes + 8 * i, v[i]);
	}
	ck_assert_uint_gt(top[70], 255);
	sum = XXH3_64bits(bytes, n * 8);
	b.id = 900000 + (uint64_t)getpid();
	b.s_count[r] = (uint32_t)n;
	b.s.sum[r] = sum;
	zp.m = &m;
	zp.sg = &b;
	zp.region = m.keys;
	ck_assert_int_eq(seg_path(dir, sp, sizeof sp, "S", b.id, (int)r), 0);
	unlink(sp);
	ck_assert_uint_eq(layout_starts(top, p, m.bstart), n);
	ck_assert_uint_eq(m.bstart[64], 0);
	ck_assert_int_eq(merc_slice_load_s(&zp, r, scratch, 64 << 10), -1); /* missing */
	fd = open(sp, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, bytes, n * 8), (ssize_t)(n * 8));
	ck_assert_int_eq(merc_slice_load_s(&zp, r, scratch, 64 << 10), 0);
	layout_expect(v, n, p, top, want);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(m.keys[i], want[i]);
		crowded += (m.keys[i] & 255) == 255;
	}
	ck_assert_uint_eq(m.bstart[70 + 1] - m.bstart[70], top[70]);
	ck_assert_uint_ge(crowded, top[70] - 255); /* saturated ranks */
	b.s.sum[r] = sum ^ 1;
	ck_assert_int_eq(merc_slice_load_s(&zp, r, scratch, 64 << 10), -1); /* checksum */
	b.s.sum[r] = sum;
	top[64]++;
	top[95]--;
	layout_starts(top, p, m.bstart);
	ck_assert_int_eq(merc_slice_load_s(&zp, r, scratch, 64 << 10), -1); /* count per bucket */
	top[64]--;
	top[95]++;
	layout_starts(top, p, m.bstart);
	ck_assert_int_eq(write(fd, bytes, 8), 8);
	/* longer: a recycled file's stale tail, not read */
	ck_assert_int_eq(merc_slice_load_s(&zp, r, scratch, 64 << 10), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(m.keys[i], want[i]);
	ck_assert_int_eq(ftruncate(fd, (off_t)(n * 8 - 8)), 0);
	ck_assert_int_eq(merc_slice_load_s(&zp, r, scratch, 64 << 10), -1); /* shorter */
	/* a signature of another slice in the file (its checksum matching) */
	le_put64(bytes + 8 * 17, v[17] ^ (uint64_t)1 << 63);
	ck_assert_int_eq(pwrite(fd, bytes, n * 8, 0), (ssize_t)(n * 8));
	b.s.sum[r] = XXH3_64bits(bytes, n * 8);
	ck_assert_int_eq(merc_slice_load_s(&zp, r, scratch, 64 << 10), -1);
	close(fd);
	unlink(sp);
	rm_tree(dir);
	free(scratch);
	free(m.keys);
	free(m.bstart);
	free(m.bnext);
	free(v);
	free(want);
	free(bytes);
}
END_TEST

/* The bucket sort against qsort: sizes around its thresholds and past
 * its scratch, keys alike in their top bits (as in a bucket) or not, with
 * runs of equal keys (one signature's records) small and large. */
START_TEST(test_bucket_sort)
{
	static const size_t ns[] = { 0, 1, 2, 16, 17, 33, 100, 387, 1000, 4096, 5000, 20000 };
	const size_t tmp_cap = 4096;
	uint64_t *a = malloc(20000 * sizeof *a), *b = malloc(20000 * sizeof *b),
	         *tmp = malloc(tmp_cap * sizeof *tmp);

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(tmp);
	for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
		for (int shape = 0; shape < 4; shape++) {
			size_t n = ns[k];
			for (size_t i = 0; i < n; i++) {
				uint64_t v = rng();
				if (shape == 1)
					v >>= 11; /* top bits alike */
				else if (shape == 2 && i % 4 != 0)
					v = 0x5555555555555555ull + i % 3; /* three keys */
				else if (shape == 3 && i > 0 && i % 8 != 0)
					v = a[rng() % i]; /* repeats */
				a[i] = v;
			}
			memcpy(b, a, n * sizeof *a);
			bucket_sort(a, n, tmp, tmp_cap);
			qsort(b, n, sizeof *b, cmp_u64);
			ck_assert_msg(n == 0 || memcmp(a, b, n * sizeof *a) == 0, "n %zu shape %d",
			              n, shape);
		}
	}
	free(a);
	free(b);
	free(tmp);
}
END_TEST

/* The bucket bits: a bucket averages at most a quarter of its lim, from 8
 * to 24 bits. */
START_TEST(test_layout_bits)
{
	static const size_t ns[] = { 1, 1000, 16384, 16385, 707544, 1u << 20, (size_t)1 << 31 };
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		unsigned p = layout_bits(ns[i]);
		ck_assert_uint_ge(p, 8);
		ck_assert_uint_le(p, 24);
		ck_assert_uint_le(4 * (uint64_t)ns[i], (uint64_t)1 << (2 * p));
		if (p > 8)
			ck_assert_uint_gt(4 * (uint64_t)ns[i], (uint64_t)1 << (2 * (p - 1)));
	}
	ck_assert_uint_eq(layout_bits(707544), 11);
}
END_TEST

/* Prints the codec's time per signature for n random signatures at the
 * sieve's L (best of 5): encoding to /dev/null (the codec and XXH3),
 * encoding to a scratch file and decoding it back (with the copies of
 * write and read, as in a flush). */
static int bench(size_t n)
{
	uint64_t *v = sorted_set(n, 64, 0), *got = malloc(n * sizeof *got);
	unsigned L = z_low_bits(n);
	int fd = open_tmp(), nul = open("/dev/null", O_WRONLY);
	double best[3] = { 1e9, 1e9, 1e9 };
	struct coded c = { 0, 0 };

	need(got != NULL && nul >= 0);
	for (int r = 0; r < 5; r++) {
		double t[4];
		t[0] = monotonic_s();
		encode(nul, v, n, L, 1 << 20);
		t[1] = monotonic_s();
		c = encode(fd, v, n, L, 1 << 20);
		t[2] = monotonic_s();
		need(decode(fd, got, n, L, c.payload, c.sum, 1 << 20));
		t[3] = monotonic_s();
		for (int k = 0; k < 3; k++)
			if (t[k + 1] - t[k] < best[k])
				best[k] = t[k + 1] - t[k];
	}
	for (size_t i = 0; i < n; i++)
		need(got[i] == v[i]);
	printf("n %zu L %u: %.3f bytes per signature; ns per signature: encode %.2f (to "
	       "/dev/null), "
	       "%.2f (to a file), decode %.2f (from the file)\n",
	       n, L, (double)c.payload / (double)n, best[0] * 1e9 / (double)n,
	       best[1] * 1e9 / (double)n, best[2] * 1e9 / (double)n);
	free(v);
	free(got);
	close(fd);
	close(nul);
	return 0;
}

static Suite *zcodec_suite(void)
{
	Suite *s = suite_create("zcodec");
	TCase *tc = harness_case(s, "core", 60);

	tcase_add_test(tc, test_low_bits_choice);
	tcase_add_test(tc, test_tiny_sets);
	tcase_add_test(harness_case(s, "every_l", 200), test_every_l);
	tcase_add_test(tc, test_huge_gaps);
	tcase_add_test(tc, test_space);
	tcase_add_test(tc, test_damage);
	tcase_add_test(tc, test_refuse_repeats);
	tcase_add_test(tc, test_layout_bits);
	tcase_add_test(tc, test_bucket_sort);
	tcase_add_test(tc, test_unsorted_input);
	tcase_add_test(tc, test_signature_list);
	return s;
}

int main(int argc, char **argv)
{
	bench_mode = argc > 1 && strcmp(argv[1], "--bench") == 0;
	if (bench_mode) {
		harness_scratch();
		return bench(argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 10000000);
	}
	return harness_main(zcodec_suite(), argc, argv);
}
