/*
 * sieve_hashset.c: the upper bound for the sieve benchmark: an in-memory
 * open-addressing hash set of XXH3 signatures (grows at 50% load), printing
 * each stdin line not seen before. Memory grows with the distinct URLs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static uint64_t *tab;
static size_t cap = 1 << 20, used;

static int insert(uint64_t h)
{
	if (h == 0)
		h = 1;
	size_t i = h & (cap - 1);
	while (tab[i] != 0) {
		if (tab[i] == h)
			return 0;
		i = (i + 1) & (cap - 1);
	}
	tab[i] = h;
	used++;
	if (used * 2 > cap) {
		uint64_t *old = tab;
		size_t oc = cap;
		cap *= 2;
		tab = calloc(cap, sizeof *tab);
		if (tab == NULL)
			exit(1);
		for (size_t k = 0; k < oc; k++) {
			if (old[k] == 0)
				continue;
			size_t j = old[k] & (cap - 1);
			while (tab[j] != 0)
				j = (j + 1) & (cap - 1);
			tab[j] = old[k];
		}
		free(old);
	}
	return 1;
}

int main(void)
{
	static char buf[1 << 22], obuf[1 << 20];
	size_t len = 0;
	ssize_t g;

	tab = calloc(cap, sizeof *tab);
	if (tab == NULL)
		return 1;
	setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
	for (;;) {
		g = read(0, buf + len, sizeof buf - len);
		if (g < 0)
			return 1;
		if (g == 0 && len > 0 && buf[len - 1] != '\n')
			buf[len++] = '\n';
		size_t start = 0, end = len + (size_t)(g > 0 ? g : 0);
		for (;;) {
			char *nl = memchr(buf + start, '\n', end - start);
			if (nl == NULL)
				break;
			size_t l = (size_t)(nl - buf) - start;
			if (insert(XXH3_64bits(buf + start, l)))
				fwrite(buf + start, 1, l + 1, stdout);
			start += l + 1;
		}
		memmove(buf, buf + start, end - start);
		len = end - start;
		if (g == 0)
			break;
		if (len == sizeof buf)
			return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
