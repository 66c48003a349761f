/*
 * mem_cost.h: what a heap block costs, for the modules that account their
 * memory against a budget (frontier, near-duplicate store, robots.txt
 * cache). Header only.
 */
#ifndef FRONTIER_BASE_MEM_COST_H
#define FRONTIER_BASE_MEM_COST_H

#include <stddef.h>
#include <stdint.h>

/* The bytes malloc(n) takes: glibc rounds to 16 with 8 bytes of header,
 * 32 bytes at least. */
static inline uint64_t mem_alloc_cost(size_t n)
{
	size_t c = (n + 8 + 15) & ~(size_t)15;
	return c < 32 ? 32 : c;
}

#endif
