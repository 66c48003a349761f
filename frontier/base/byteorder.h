/*
 * byteorder.h: little-endian integers in byte buffers, the byte order of
 * every file the crawler writes (sieve segments and snapshots, checkpoint
 * records), whatever the host's order. Each call is one unaligned move
 * (memcpy), byte-swapped on a big-endian host: the sieve's codec and
 * record scans call them per signature, so a byte loop (which GCC 12 at
 * -O2 does not merge into one move) would cost there.
 */
#ifndef FRONTIER_BASE_BYTEORDER_H
#define FRONTIER_BASE_BYTEORDER_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BYTEORDER_SWAP16(v) __builtin_bswap16(v)
#define BYTEORDER_SWAP32(v) __builtin_bswap32(v)
#define BYTEORDER_SWAP64(v) __builtin_bswap64(v)
#else
#define BYTEORDER_SWAP16(v) (v)
#define BYTEORDER_SWAP32(v) (v)
#define BYTEORDER_SWAP64(v) (v)
#endif

static inline void le_put16(uint8_t *p, uint16_t v)
{
	v = BYTEORDER_SWAP16(v);
	memcpy(p, &v, sizeof v);
}

static inline void le_put32(uint8_t *p, uint32_t v)
{
	v = BYTEORDER_SWAP32(v);
	memcpy(p, &v, sizeof v);
}

static inline void le_put64(uint8_t *p, uint64_t v)
{
	v = BYTEORDER_SWAP64(v);
	memcpy(p, &v, sizeof v);
}

static inline uint16_t le_get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return BYTEORDER_SWAP16(v);
}

static inline uint32_t le_get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return BYTEORDER_SWAP32(v);
}

static inline uint64_t le_get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return BYTEORDER_SWAP64(v);
}

#endif
