/*
 * zcodec.h: the Mercator sieve's code for Z, its sorted set of signatures
 * (internal to the module).
 *
 * A part of Z is stored as its signatures, less the part's first possible
 * one, in blocks of Z_BLOCK, each Elias-Fano coded: the high parts (value
 * >> L) as unary gaps from the previous value's (ones at high part +
 * index, LSB first, counted from the previous block's last), then the L
 * low bits of each as L/8 whole bytes. L, a multiple of 8, is chosen for
 * the part's size (z_low_bits): ~log2(2^64/|Z|) + 2 bits per signature,
 * decoded with a ctz per signature and one load per low part (a
 * Golomb-Rice code costs a bit-serial decode instead).
 *
 * The writer encodes a block at a time into its buffer and drains it to
 * the file; the reader reads and hashes the payload as it decodes a block
 * at a time. The merge of a flush holds one block of each.
 */
#ifndef SIEVE_ZCODEC_H
#define SIEVE_ZCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

#include "sieve/sieve.h"

#define Z_BLOCK 1024 /* signatures per block */
#define Z_LMAX 56    /* most low bits (a multiple of 8): a low part is one 8-byte load and a mask */
#define Z_SLACK 8    /* bytes past the reader's buffer that a low part's last load may touch */

#define Z_READ_MIN (8 << 10) /* the smallest reader's buffer */

_Static_assert(Z_BLOCK *Z_LMAX / 8 + 16 <= Z_READ_MIN,
               "a block's low parts fit the smallest reader");

/* Low bits per signature for n signatures: the multiple of 8 that
 * minimizes Elias-Fano's size, at most Z_LMAX. */
unsigned z_low_bits(uint64_t n);

/* The writer of a payload. Z' ascends strictly when the merge's inputs do
 * (S sorted, Z checked by its reader), so the writer checks only each
 * block's ends. */
struct zw {
	const struct sieve_config *cfg; /* the writes' on_write_error (may be NULL) */
	int fd;
	uint64_t base; /* the payload's offset in the file */
	uint8_t *buf;
	size_t cap, len;
	unsigned L;       /* a multiple of 8, <= Z_LMAX */
	uint64_t hprev;   /* high part of the last signature written */
	uint64_t vprev;   /* the last signature written */
	uint64_t count;   /* signatures written */
	uint64_t total;   /* payload bytes written to the file */
	XXH3_state_t *xs; /* of the payload written */
	bool ioerr;
	bool unsorted; /* a block out of order was given (see zw_block) */
};

/* Encodes the block v[0..cnt), cnt <= Z_BLOCK. A block out of order at its
 * ends (below the previous one, or last < first) is refused (w->unsorted);
 * disorder inside a block, which the merge cannot produce from checked
 * inputs, would be written wrong but never outside buf. */
void zw_block(struct zw *w, const uint64_t *v, size_t cnt);
/* Writes what is buffered (its buffer is then free, until the next block). */
void zw_drain(struct zw *w);

/* The reader of a payload: a buffer of cap bytes, allocated with Z_SLACK
 * more (zeroed), so that a low part's last 8-byte load stays inside it;
 * every byte is hashed as it is read, and reading stops at the payload's
 * end. */
struct zr {
	int fd;
	uint8_t *buf;
	size_t cap, pos, len;
	uint64_t left; /* payload bytes not yet read from the file */
	XXH3_state_t *xs;
	uint64_t vprev; /* the last signature decoded (when count > 0) */
	uint64_t count; /* signatures decoded */
	int ioerr;      /* errno of a failed read, or 0 */
	bool bad;
};

/* Decodes one block of cnt signatures into out (*hprev: the high part of
 * the previous block's last one, updated). The signatures must ascend
 * strictly (Z is a set; the merge and Z's writer rely on the order). false
 * on a damaged, short or out-of-order payload (z->bad). */
bool zr_block(struct zr *z, unsigned L, uint64_t *hprev, uint64_t *out, size_t cnt);

#endif
