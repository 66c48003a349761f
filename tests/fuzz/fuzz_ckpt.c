/*
 * fuzz_ckpt.c: the checkpoint readers on arbitrary field values. A
 * checkpoint file is checksummed (frontier/base/recfile.h), so random bytes
 * would only ever meet the checksum; this harness wraps the input in a
 * valid file instead (magic, the input as payload, a trailer with the
 * right length and XXH3) so the readers see every field the fuzzer makes:
 * the first byte picks the reader (the frontier's queues, the robots.txt
 * cache), the rest is the payload. The readers must refuse what is
 * inconsistent with an error code, and never crash or leak.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "frontier/base/byteorder.h"
#include "frontier/frontier.h"
#include "politeness/politeness.h"

static char dir[256];

static void dir_remove(void)
{
	char path[300];
	snprintf(path, sizeof path, "%s/queues", dir);
	unlink(path);
	snprintf(path, sizeof path, "%s/robots", dir);
	unlink(path);
	rmdir(dir);
}

static void dir_init(void)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(dir, sizeof dir, "%s/fuzz_ckpt.%d", base, (int)getpid());
	if (mkdir(dir, 0700) != 0)
		abort();
	atexit(dir_remove);
}

/* Writes magic + payload + {u64 length, u64 XXH3-64 of magic and payload}. */
static void write_valid(const char *path, const char magic[8], const uint8_t *p, size_t n)
{
	uint8_t *all = malloc(8 + n + 16);
	if (!all)
		abort();
	memcpy(all, magic, 8);
	if (n)
		memcpy(all + 8, p, n);
	le_put64(all + 8 + n, n);
	le_put64(all + 16 + n, XXH3_64bits(all, 8 + n));
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(all, 1, 8 + n + 16, f) != 8 + n + 16 || fclose(f) != 0)
		abort();
	free(all);
}

/* The payload as the checkpoint file NAME (magic) in the work folder. */
static void put_file(const char *name, const char magic[8], const uint8_t *p, size_t n)
{
	char path[300];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	write_valid(path, magic, p, n);
}

/* A frontier small enough to make per input, spilling into the work folder. */
static void small_frontier(struct frontier_config *c)
{
	frontier_config_default(c);
	c->spill_dir = dir;
	c->mem_budget = 1u << 20;
}

static void read_queues(const uint8_t *p, size_t n)
{
	put_file("queues", "FRQUEUE2", p, n);
	struct frontier_config c;
	small_frontier(&c);
	struct frontier *f = NULL;
	enum frontier_err e = frontier_restore(&c, dir, &f);
	if ((e == FRONTIER_OK) != (f != NULL))
		abort();
	frontier_destroy(f);
}

static void read_robots(const uint8_t *p, size_t n)
{
	char path[300];
	put_file("robots", "PLROBOT1", p, n);
	snprintf(path, sizeof path, "%s/robots", dir);
	struct frontier_config fc;
	small_frontier(&fc);
	struct frontier *f = NULL;
	struct politeness *pol = NULL;
	struct politeness_config pc;
	politeness_config_default(&pc);
	if (frontier_create(&fc, &f) != FRONTIER_OK ||
	    politeness_create(f, &pc, NULL, NULL, &pol) != POLITENESS_OK)
		abort();
	enum politeness_err e = politeness_robots_restore(pol, path, 1000000);
	if (e != POLITENESS_OK && e != POLITENESS_ERR_CORRUPT && e != POLITENESS_ERR_NOMEM)
		abort();
	politeness_destroy(pol);
	frontier_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0])
		dir_init();
	if (size == 0)
		return 0;
	if (data[0] & 1)
		read_robots(data + 1, size - 1);
	else
		read_queues(data + 1, size - 1);
	return 0;
}
