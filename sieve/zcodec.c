/*
 * zcodec.c: Z's code, Elias-Fano in blocks (see zcodec.h).
 */
#include "sieve/zcodec.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "sieve/sieve_files.h"

/* Low bits per signature for n signatures: the multiple of 8 (whole bytes:
 * a low part is then one store to write and one load and mask to read)
 * that minimizes Elias-Fano's size, n (L + 1) + 2^(64-L) bits (L bits each,
 * one high bit each, 2^(64-L) zeros in all): it lies between
 * log2(2^64/n) - 3 and log2(2^64/n) + 5. At most Z_LMAX. */
unsigned z_low_bits(uint64_t n)
{
	unsigned best = Z_LMAX;
	double best_bits = 0;

	for (unsigned l = 0; l <= Z_LMAX; l += 8) {
		double bits = (double)n * (l + 1) + ldexp(1.0, 64 - (int)l);
		if (l == 0 || bits < best_bits) {
			best = l;
			best_bits = bits;
		}
	}
	return best;
}

void zw_drain(struct zw *w)
{
	if (w->len == 0)
		return;
	if (sieve_write_at(w->cfg, w->fd, w->buf, w->len, w->base + w->total) != 0)
		w->ioerr = true;
	XXH3_64bits_update(w->xs, w->buf, w->len);
	w->total += w->len;
	w->len = 0;
}

/* Makes room for k more bytes plus 8 (a store's overhang); k + 8 <= cap. */
static uint8_t *zw_room(struct zw *w, size_t k)
{
	if (w->len + k + 8 > w->cap)
		zw_drain(w);
	return w->buf + w->len;
}

/* The high parts of v[0..cnt) when they do not fit half the buffer (gaps
 * of hundreds of thousands of bits: never with hashes): each unary code
 * written bit by bit, zeros a byte at a time, draining as the buffer
 * fills. */
static void zw_high_slow(struct zw *w, const uint64_t *v, size_t cnt)
{
	uint64_t hp = w->hprev;
	unsigned acc = 0, nb = 0; /* bits of the byte being filled */

	for (size_t i = 0; i < cnt; i++) {
		uint64_t h = v[i] >> w->L, z;
		if (h < hp) {
			w->unsorted = true; /* see zw_block */
			h = hp;
		}
		z = h - hp;
		hp = h;
		if (nb + z >= 8) {
			/* finish the byte, whole zero bytes, then the one's byte */
			*zw_room(w, 1) = (uint8_t)acc;
			w->len++;
			z -= 8 - nb;
			while (z >= 8) {
				size_t k = w->cap - 8 - w->len;
				if (k > z / 8)
					k = (size_t)(z / 8);
				memset(w->buf + w->len, 0, k);
				w->len += k;
				z -= 8 * (uint64_t)k;
				zw_room(w, 1);
			}
			acc = 0;
			nb = 0;
		}
		acc |= 1u << (nb + z);
		nb += (unsigned)z + 1;
		if (nb == 8) {
			*zw_room(w, 1) = (uint8_t)acc;
			w->len++;
			acc = 0;
			nb = 0;
		}
	}
	if (nb > 0) {
		*zw_room(w, 1) = (uint8_t)acc;
		w->len++;
	}
}

/* Encodes the block v[0..cnt): its high parts, then its low parts. A block
 * out of order at its ends (below the previous one, or last < first) is
 * refused (w->unsorted: the flush fails); disorder inside a block, which
 * the merge cannot produce from checked inputs, would be written wrong but
 * never outside buf. */
void zw_block(struct zw *w, const uint64_t *v, size_t cnt)
{
	const unsigned L = w->L, lb = L / 8;
	const uint64_t hbase = w->hprev;
	uint64_t nbits;

	if (cnt == 0 || w->unsorted)
		return;
	if (v[0] < w->vprev || v[cnt - 1] < v[0]) {
		w->unsorted = true;
		return;
	}
	/* the high parts: a one at (high part - the previous block's last) +
	 * index, the gaps in unary, LSB first */
	nbits = (v[cnt - 1] >> L) - hbase + cnt;
	if (nbits / 8 + 16 <= w->cap / 2) {
		size_t hbytes = (size_t)(nbits + 7) / 8, words = (size_t)(nbits + 63) / 64;
		uint8_t *p = zw_room(w, 8 * words);
		uint64_t acc = 0, cw = 0;
		memset(p, 0, 8 * words);
		/* each one ORed into the word being filled, the word stored every
		 * time (no branch: a word left behind is complete, one skipped
		 * stays zero) */
		for (size_t i = 0; i < cnt; i++) {
			uint64_t pos = (v[i] >> L) - hbase + i, wi = pos >> 6;
			wi = wi < words ? wi : words - 1;
			acc = (wi == cw ? acc : 0) | (uint64_t)1 << (pos & 63);
			cw = wi;
			le_put64(p + 8 * wi, acc);
		}
		w->len += hbytes;
	} else {
		zw_high_slow(w, v, cnt);
	}
	/* the low parts: lb bytes each, one 8-byte store each (its overhang is
	 * overwritten by the next one, or lies past len) */
	if (lb > 0) {
		uint8_t *q = zw_room(w, cnt * lb);
		for (size_t i = 0; i < cnt; i++)
			le_put64(q + i * lb, v[i]);
		w->len += cnt * lb;
	}
	w->hprev = v[cnt - 1] >> L;
	w->vprev = v[cnt - 1];
	w->count += cnt;
}

/* Makes k <= cap contiguous bytes available at buf+pos; returns how many
 * are (fewer than k only at the payload's end or on a read error). */
static size_t zr_need(struct zr *z, size_t k)
{
	if (z->len - z->pos >= k)
		return z->len - z->pos;
	if (z->pos > 0) {
		memmove(z->buf, z->buf + z->pos, z->len - z->pos);
		z->len -= z->pos;
		z->pos = 0;
	}
	while (z->len < k && z->left > 0) {
		size_t want = z->cap - z->len;
		ssize_t g;
		if (want > z->left)
			want = (size_t)z->left;
		g = read(z->fd, z->buf + z->len, want);
		if (g < 0 && errno == EINTR)
			continue;
		if (g < 0) {
			z->ioerr = errno;
			break;
		}
		if (g == 0)
			break; /* shorter than its header says */
		XXH3_64bits_update(z->xs, z->buf + z->len, (size_t)g);
		z->left -= (uint64_t)g;
		z->len += (size_t)g;
	}
	return z->len - z->pos;
}

/* Decodes one block of cnt signatures into out (*hprev: the high part of
 * the previous block's last one, updated). The high parts: each 64-bit
 * word's ones are taken lowest first (ctz, then clear it); a one at bit t
 * of a word, after k earlier ones of the word, is worth base + t - k, base
 * being the high part a one at the word's bit 0 would have. The low parts:
 * one load and a mask each, independent of each other. The signatures must
 * ascend strictly (Z is a set; the merge and Z's writer rely on the
 * order). false on a damaged, short or out-of-order payload (z->bad). */
bool zr_block(struct zr *z, unsigned L, uint64_t *hprev, uint64_t *out, size_t cnt)
{
	uint64_t zb = *hprev, hlast;
	size_t j = 0;
	bool down;

	while (j < cnt) {
		size_t a = zr_need(z, 8), nb = a < 8 ? a : 8;
		uint64_t w, base = zb;
		unsigned t = 0;
		if (a == 0) {
			z->bad = true;
			return false;
		}
		w = le_get64(z->buf + z->pos);
		if (nb < 8)
			w &= ~(uint64_t)0 >> (64 - 8 * nb);
		while (w != 0 && j < cnt) {
			t = (unsigned)__builtin_ctzll(w);
			out[j++] = base + t;
			base--;
			w &= w - 1;
		}
		if (j == cnt) {
			z->pos += t / 8 + 1;
			break;
		}
		zb = base + 8 * nb;
		z->pos += nb;
	}
	hlast = out[cnt - 1];
	if (hlast > ~(uint64_t)0 >> L) {
		z->bad = true;
		return false;
	}
	if (L > 0) {
		const uint64_t mask = ~(uint64_t)0 >> (64 - L);
		const size_t lb = L / 8;
		const uint8_t *p;
		if (zr_need(z, cnt * lb) < cnt * lb) {
			z->bad = true;
			return false;
		}
		p = z->buf + z->pos;
		for (size_t i = 0; i < cnt; i++)
			out[i] = out[i] << L | (le_get64(p + i * lb) & mask);
		z->pos += cnt * lb;
	}
	down = z->count > 0 && out[0] <= z->vprev;
	for (size_t i = 1; i < cnt; i++)
		down |= out[i] <= out[i - 1];
	if (down) {
		z->bad = true;
		return false;
	}
	z->vprev = out[cnt - 1];
	z->count += cnt;
	*hprev = hlast;
	return true;
}
