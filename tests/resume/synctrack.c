/*
 * synctrack.c: an LD_PRELOAD shim for the power-cut tests. After every
 * successful fsync or fdatasync it appends "dev ino size" (the file's size
 * at that moment) to the file named by $SYNCTRACK_JOURNAL, so that a test
 * can cut every file back to what a power cut would have kept: its size at
 * its last sync. Inodes, not names, since files are synced under one name
 * and renamed or linked under another. Each line is one write(2) to an
 * O_APPEND file, so threads do not interleave within a line.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void note(int fd)
{
	const char *journal = getenv("SYNCTRACK_JOURNAL");
	struct stat st;
	char line[96];
	if (journal == NULL || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	int n = snprintf(line, sizeof line, "%llu %llu %lld\n", (unsigned long long)st.st_dev,
	                 (unsigned long long)st.st_ino, (long long)st.st_size);
	int j = open(journal, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (j < 0)
		return;
	if (write(j, line, (size_t)n) != n)
		(void)0; /* the test then sees fewer synced bytes: stricter, never looser */
	close(j);
}

int fsync(int fd)
{
	static int (*real)(int);
	if (real == NULL)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	int rc = real(fd);
	if (rc == 0)
		note(fd);
	return rc;
}

int fdatasync(int fd)
{
	static int (*real)(int);
	if (real == NULL)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	int rc = real(fd);
	if (rc == 0)
		note(fd);
	return rc;
}
