/*
 * fuzz_config.c: loads arbitrary bytes as a configuration file over the
 * defaults, and checks the round trip of what loads: the configuration
 * written back loads again, and writing that gives the same bytes.
 * crawl_config_load reads a path, so the input goes through a file of
 * this process's own in /dev/shm (or TMPDIR).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/config/config.h"
#include "frontier/base/fileio.h"

static char in_path[256], out1[256], out2[256];

static void paths_remove(void)
{
	unlink(in_path);
	unlink(out1);
	unlink(out2);
}

static void paths_init(void)
{
	const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(in_path, sizeof in_path, "%s/fuzz_config.%d.in", dir, (int)getpid());
	snprintf(out1, sizeof out1, "%s/fuzz_config.%d.1", dir, (int)getpid());
	snprintf(out2, sizeof out2, "%s/fuzz_config.%d.2", dir, (int)getpid());
	atexit(paths_remove);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		abort();
	char *s = fileio_read_stream(f, 1u << 20, len);
	fclose(f);
	if (!s)
		abort();
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!in_path[0])
		paths_init();
	FILE *f = fopen(in_path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	struct crawl_config c;
	char err[512];
	if (crawl_config_default(&c) != 0)
		abort();
	if (crawl_config_load(&c, in_path, err, sizeof err) == CRAWL_CONFIG_OK) {
		if (crawl_config_write(&c, out1) != 0)
			abort();
		struct crawl_config again;
		if (crawl_config_default(&again) != 0)
			abort();
		if (crawl_config_load(&again, out1, err, sizeof err) != CRAWL_CONFIG_OK)
			abort(); /* what we wrote must load */
		if (crawl_config_write(&again, out2) != 0)
			abort();
		size_t n1, n2;
		char *a = slurp(out1, &n1), *b = slurp(out2, &n2);
		if (n1 != n2 || memcmp(a, b, n1) != 0)
			abort(); /* and be a fixed point */
		free(a);
		free(b);
		crawl_config_free(&again);
	} else if (err[0] == '\0') {
		abort(); /* a refusal always says why */
	}
	crawl_config_free(&c);
	return 0;
}
