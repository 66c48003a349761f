/*
 * replay_main.c: runs a fuzz harness's LLVMFuzzerTestOneInput over every file
 * of the folders (or files) given, so the corpus and the crashes fuzzing once
 * found are replayed by every ordinary and sanitizer build.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path, size_t *count)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	int rc = -1;
	uint8_t *buf = NULL;
	if (fseek(f, 0, SEEK_END) != 0)
		goto out;
	long len = ftell(f);
	if (len < 0 || fseek(f, 0, SEEK_SET) != 0)
		goto out;
	buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
		goto out;
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	(*count)++;
	rc = 0;
out:
	free(buf);
	fclose(f);
	return rc;
}

int main(int argc, char **argv)
{
	size_t count = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0)
			continue; /* a harness may have no regressions yet */
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i], &count) != 0)
				return 1;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d)
			return 1;
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			char path[4096];
			int n = snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			if (n < 0 || (size_t)n >= sizeof path || replay_file(path, &count) != 0) {
				closedir(d);
				return 1;
			}
		}
		closedir(d);
	}
	printf("replayed %zu inputs\n", count);
	return count > 0 ? 0 : 1;
}
