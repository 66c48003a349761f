/*
 * array.h: the growable array every module hand-rolled: a pointer, a count
 * and a capacity, the capacity doubling when the array is full; an array
 * of owned strings grown one copy at a time; and the binary search of a
 * sorted array. Header only; the caller keeps the three fields in its own
 * struct.
 */
#ifndef FRONTIER_BASE_ARRAY_H
#define FRONTIER_BASE_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Room for element n of the array v (*cap elements of `size` bytes):
 * returns v itself when n < *cap; otherwise v reallocated to twice *cap
 * elements (`first` when *cap is 0), *cap updated. NULL when out of memory
 * or the size overflows: then v is still valid and *cap unchanged. */
static inline void *array_grow(void *v, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n < *cap)
		return v;
	size_t ncap = *cap ? *cap * 2 : first;
	if (ncap > SIZE_MAX / size)
		return NULL;
	void *nv = realloc(v, ncap * size);
	if (nv)
		*cap = ncap;
	return nv;
}

/* Room for need bytes in buffer v (*cap bytes now): v itself when it
 * holds them, else v reallocated to *cap (`first` when 0) doubled until
 * need fits. NULL when out of memory: then v is still valid and *cap
 * unchanged. */
static inline char *array_room(char *v, size_t *cap, size_t need, size_t first)
{
	if (need <= *cap)
		return v;
	size_t ncap = *cap ? *cap : first;
	while (ncap < need && ncap <= SIZE_MAX / 2)
		ncap *= 2;
	if (ncap < need)
		return NULL;
	char *nv = realloc(v, ncap);
	if (nv)
		*cap = ncap;
	return nv;
}

/* Room for n elements of `size` bytes in v (*cap of them now): v itself
 * when it holds n, else v reallocated to exactly n elements (at least one,
 * so that NULL always means failure). NULL when out of memory or the size
 * overflows: then v is still valid and *cap unchanged. For arrays sized
 * once per use to a count known in advance. */
static inline void *array_reserve(void *v, size_t *cap, size_t n, size_t size)
{
	if (v != NULL && n <= *cap)
		return v;
	size_t want = n > *cap ? n : *cap;
	if (want == 0)
		want = 1;
	if (want > SIZE_MAX / size)
		return NULL;
	void *nv = realloc(v, want * size);
	if (nv)
		*cap = want;
	return nv;
}

/* Appends a copy of the n bytes at s, made a string, to the array of
 * strings *v (*count of them, room for *cap; `first` as in array_grow).
 * 0, or -1 when out of memory: then *v, *count and *cap still describe
 * the array, which owns what it held. */
static inline int array_push_strndup(char ***v, size_t *count, size_t *cap, const char *s, size_t n,
                                     size_t first)
{
	char **nv = array_grow(*v, cap, *count, sizeof *nv, first);
	if (nv == NULL)
		return -1;
	*v = nv;
	if ((nv[*count] = strndup(s, n)) == NULL)
		return -1;
	(*count)++;
	return 0;
}

/* strcmp of two elements of an array of strings (char *): the comparison
 * qsort and bsearch take to keep such an array in order. */
static inline int array_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Binary search over [lo, hi) of a sorted array for the first index where
 * the condition `below` (written in terms of the index variable `mid`)
 * turns false; below must hold for a prefix of the range and fail for the
 * rest. Leaves that index in lo (hi when below holds throughout). */
#define ARRAY_LOWER_BOUND(lo, hi, mid, below)                                                      \
	do {                                                                                       \
		size_t array_hi_ = (hi);                                                           \
		while ((lo) < array_hi_) {                                                         \
			size_t mid = (lo) + (array_hi_ - (lo)) / 2;                                \
			if (below)                                                                 \
				(lo) = mid + 1;                                                    \
			else                                                                       \
				array_hi_ = mid;                                                   \
		}                                                                                  \
	} while (0)

/* Frees each of the n elements of v (pointers from malloc, or NULL), then
 * v itself: the teardown of an array that owns what it points to. */
#define ARRAY_FREE_EACH(v, n)                                                                      \
	do {                                                                                       \
		for (size_t array_i_ = 0; array_i_ < (size_t)(n); array_i_++)                      \
			free((v)[array_i_]);                                                       \
		free(v);                                                                           \
	} while (0)

#endif
