/*
 * flush_sort.c: the layout and the sort of a flush's array (see
 * flush_sort.h).
 */
#include "sieve/flush_sort.h"

#include <string.h>

unsigned layout_bits(size_t n)
{
	unsigned p = 8;
	while (p < 24 && ((uint64_t)1 << (2 * p)) < 4 * (uint64_t)n)
		p++;
	return p;
}

uint64_t layout_starts(const uint32_t *top, unsigned p, uint32_t *bstart)
{
	uint64_t sum = 0;
	size_t nb = (size_t)1 << p;

	for (size_t d = 0; d < nb; d++) {
		bstart[d] = (uint32_t)sum;
		sum += top[d];
	}
	bstart[nb] = (uint32_t)(sum <= UINT32_MAX ? sum : UINT32_MAX);
	return sum;
}

static void ins_sort(uint64_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t v = a[i];
		size_t j = i;
		while (j > 0 && a[j - 1] > v) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

/* In-place MSD (American flag) radix sort on 8-bit digits from `shift`
 * down. Each pass moves keys between 256 sequential streams (cache
 * friendly); a bucket of at most 32 keys is finished by insertion sort.
 * Not stable, and needs not be: the keys carry their ranks. */
static void msd_sort(uint64_t *a, size_t n, int shift)
{
	size_t cnt[256], head[256], tail[256], sum = 0;

	if (n <= 32) {
		ins_sort(a, n);
		return;
	}
	memset(cnt, 0, sizeof cnt);
	for (size_t i = 0; i < n; i++)
		cnt[(a[i] >> shift) & 255]++;
	for (int d = 0; d < 256; d++) {
		head[d] = sum;
		sum += cnt[d];
		tail[d] = sum;
	}
	for (int d = 0; d < 256; d++) {
		while (head[d] < tail[d]) {
			uint64_t v = a[head[d]];
			unsigned dd = (unsigned)((v >> shift) & 255);
			while (dd != (unsigned)d) {
				uint64_t t = a[head[dd]];
				a[head[dd]++] = v;
				v = t;
				dd = (unsigned)((v >> shift) & 255);
			}
			a[head[d]++] = v;
		}
	}
	if (shift == 0)
		return;
	sum = 0;
	for (int d = 0; d < 256; d++) {
		if (cnt[d] > 1)
			msd_sort(a + sum, cnt[d], shift >= 8 ? shift - 8 : 0);
		sum += cnt[d];
	}
}

/* Sorts a bucket of the flush's array (n keys, whose bits above the
 * signature's part are alike: uniform below the bucket's bits), with tmp
 * (tmp_cap keys) as scratch: one counting pass on the keys' top w bits
 * (2^(w-1) <= n < 2^w: a key or none per sub-bucket) from tmp back into a,
 * then an insertion sort, which only moves keys inside their sub-buckets;
 * a sub-bucket of more than 32 (many records of one signature) gets the
 * radix sort instead (faster than a radix sort from the top on the
 * buckets of a few hundred keys the layout makes); a bucket larger than tmp
 * is radix sorted in place. */
void bucket_sort(uint64_t *a, size_t n, uint64_t *tmp, size_t tmp_cap)
{
	uint32_t cnt[((size_t)1 << 12) + 1];
	unsigned w = 1;
	bool big = false;
	size_t nb, from = 0;

	if (n <= 16) {
		ins_sort(a, n);
		return;
	}
	if (n > tmp_cap) {
		msd_sort(a, n, 56);
		return;
	}
	while (w < 12 && ((size_t)1 << w) <= n)
		w++;
	nb = (size_t)1 << w;
	memset(cnt, 0, (nb + 1) * sizeof *cnt);
	memcpy(tmp, a, n * sizeof *a);
	for (size_t i = 0; i < n; i++)
		cnt[(tmp[i] >> (64 - w)) + 1]++;
	for (size_t d = 1; d <= nb; d++) {
		big |= cnt[d] > 32;
		cnt[d] += cnt[d - 1];
	}
	for (size_t i = 0; i < n; i++)
		a[cnt[tmp[i] >> (64 - w)]++] = tmp[i];
	if (!big) {
		ins_sort(a, n);
		return;
	}
	for (size_t d = 0; d < nb; d++) {
		size_t c = cnt[d] - from;
		if (c > 32)
			msd_sort(a + from, c, 56 - (int)w);
		else if (c > 1)
			ins_sort(a + from, c);
		from = cnt[d];
	}
}
