/*
 * Check suite for frontier/base/fileio.h: the write/pwrite/pread loops (a read
 * past the end fails with EIO), fsync of a path, a folder and a tree,
 * copy_file whole or with a length (EIO when the source is shorter),
 * link_or_copy, mkdir_p, remove_tree over nested folders, and the stream
 * and path readers with their cap.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/base/fileio.h"

static char *tmpdir(void)
{
	char *d = strdup("/tmp/test_fileio.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void path_of(char *out, size_t cap, const char *dir, const char *name)
{
	ck_assert_int_lt(snprintf(out, cap, "%s/%s", dir, name), (int)cap);
}

/* Writes n bytes of a pattern into path. */
static void write_file(const char *path, size_t n)
{
	char *buf = malloc(n ? n : 1);
	for (size_t i = 0; i < n; i++)
		buf[i] = (char)(i * 31 + 7);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fileio_write_all(fd, buf, n), 0);
	ck_assert_int_eq(close(fd), 0);
	free(buf);
}

static int same_bytes(const char *a, const char *b, size_t n)
{
	char *x = malloc(n + 1), *y = malloc(n + 1);
	int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY);
	int same = fa >= 0 && fb >= 0 && fileio_pread_all(fa, x, n, 0) == 0 &&
	           fileio_pread_all(fb, y, n, 0) == 0 && memcmp(x, y, n) == 0;
	close(fa);
	close(fb);
	free(x);
	free(y);
	return same;
}

static off_t size_of(const char *path)
{
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_size;
}

START_TEST(write_pwrite_pread)
{
	char *d = tmpdir(), p[4200], got[16];
	path_of(p, sizeof p, d, "f");
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fileio_write_all(fd, "0123456789", 10), 0);
	ck_assert_int_eq(fileio_pwrite_all(fd, "ab", 2, 4), 0);
	ck_assert_int_eq(fileio_pwrite_all(fd, "XY", 2, 12), 0); /* past the end: a hole */
	ck_assert_int_eq(fileio_pread_all(fd, got, 10, 0), 0);
	ck_assert(memcmp(got, "0123ab6789", 10) == 0);
	ck_assert_int_eq(fileio_pread_all(fd, got, 2, 12), 0);
	ck_assert(memcmp(got, "XY", 2) == 0);
	/* a short read is damage: EIO */
	errno = 0;
	ck_assert_int_eq(fileio_pread_all(fd, got, 4, 12), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(fileio_pread_all(fd, got, 1, 100), -1);
	ck_assert_int_eq(errno, EIO);
	close(fd);
	/* a bad descriptor gives the system call's error */
	ck_assert_int_eq(fileio_write_all(-1, "x", 1), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(fileio_remove_tree(d), 0);
	free(d);
}
END_TEST

START_TEST(mkdir_p_and_remove_tree)
{
	char *d = tmpdir(), p[4200], f[4300];
	struct stat st;
	path_of(p, sizeof p, d, "a/b/c/d");
	ck_assert_int_eq(fileio_mkdir_p(p), 0);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(fileio_mkdir_p(p), 0); /* already there */
	path_of(f, sizeof f, p, "file");
	write_file(f, 100);
	path_of(p, sizeof p, d, "a/b/other");
	ck_assert_int_eq(fileio_mkdir_p(p), 0);
	path_of(f, sizeof f, p, "x");
	write_file(f, 10);
	path_of(f, sizeof f, d, "a/top");
	write_file(f, 1);
	/* a file in the way */
	path_of(p, sizeof p, d, "a/top/below");
	ck_assert_int_eq(fileio_mkdir_p(p), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_int_eq(fileio_mkdir_p(""), -1);
	/* nested folders and their files all go */
	path_of(p, sizeof p, d, "a");
	ck_assert_int_eq(fileio_remove_tree(p), 0);
	ck_assert_int_eq(stat(p, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(fileio_remove_tree(p), 0); /* missing is not an error */
	ck_assert_int_eq(fileio_remove_tree(d), 0);
	ck_assert_int_eq(stat(d, &st), -1);
	free(d);
}
END_TEST

START_TEST(copy_file_lengths)
{
	char *d = tmpdir(), src[4200], dst[4200];
	path_of(src, sizeof src, d, "src");
	path_of(dst, sizeof dst, d, "dst");
	write_file(src, 200000); /* several copy chunks */
	ck_assert_int_eq(fileio_copy_file(src, dst, FILEIO_WHOLE_FILE), 0);
	ck_assert_int_eq(size_of(dst), 200000);
	ck_assert(same_bytes(src, dst, 200000));
	/* a prefix */
	ck_assert_int_eq(fileio_copy_file(src, dst, 70001), 0);
	ck_assert_int_eq(size_of(dst), 70001);
	ck_assert(same_bytes(src, dst, 70001));
	ck_assert_int_eq(fileio_copy_file(src, dst, 0), 0);
	ck_assert_int_eq(size_of(dst), 0);
	/* the source no longer holds what was to be copied */
	errno = 0;
	ck_assert_int_eq(fileio_copy_file(src, dst, 200001), -1);
	ck_assert_int_eq(errno, EIO);
	/* a missing source */
	path_of(src, sizeof src, d, "none");
	ck_assert_int_eq(fileio_copy_file(src, dst, FILEIO_WHOLE_FILE), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(fileio_remove_tree(d), 0);
	free(d);
}
END_TEST

START_TEST(link_or_copy)
{
	char *d = tmpdir(), src[4200], dst[4200];
	struct stat a, b;
	path_of(src, sizeof src, d, "src");
	path_of(dst, sizeof dst, d, "dst");
	write_file(src, 5000);
	ck_assert_int_eq(fileio_link_or_copy(src, dst), 0);
	ck_assert_int_eq(stat(src, &a), 0);
	ck_assert_int_eq(stat(dst, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino); /* same file system: a link */
	ck_assert(same_bytes(src, dst, 5000));
	/* dst exists: the link's error, not a copy over it */
	ck_assert_int_eq(fileio_link_or_copy(src, dst), -1);
	ck_assert_int_eq(errno, EEXIST);
	/* across file systems (/dev/shm is a tmpfs): a copy */
	char shm[64];
	snprintf(shm, sizeof shm, "/dev/shm/test_fileio.%d", (int)getpid());
	struct stat s;
	if (stat("/dev/shm", &s) == 0 && s.st_dev != a.st_dev) {
		ck_assert_int_eq(fileio_link_or_copy(src, shm), 0);
		ck_assert_int_eq(stat(shm, &b), 0);
		ck_assert_int_eq(b.st_size, 5000);
		ck_assert(same_bytes(src, shm, 5000));
		unlink(shm);
	}
	ck_assert_int_eq(fileio_remove_tree(d), 0);
	free(d);
}
END_TEST

START_TEST(fsync_tree_and_paths)
{
	char *d = tmpdir(), p[4200], f[4300];
	path_of(p, sizeof p, d, "x/y");
	ck_assert_int_eq(fileio_mkdir_p(p), 0);
	path_of(f, sizeof f, p, "leaf");
	write_file(f, 10);
	path_of(f, sizeof f, d, "top");
	write_file(f, 10);
	ck_assert_int_eq(fileio_fsync_path(f), 0);
	ck_assert_int_eq(fileio_fsync_dir(d), 0);
	ck_assert_int_eq(fileio_fsync_tree(d), 0);
	/* a symbolic link is neither followed nor fsynced */
	path_of(f, sizeof f, d, "link");
	ck_assert_int_eq(symlink("/nonexistent", f), 0);
	ck_assert_int_eq(fileio_fsync_tree(d), 0);
	path_of(p, sizeof p, d, "missing");
	ck_assert_int_eq(fileio_fsync_tree(p), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(fileio_fsync_path(p), -1);
	ck_assert_int_eq(fileio_remove_tree(d), 0);
	free(d);
}
END_TEST

START_TEST(read_stream_and_path)
{
	char *d = tmpdir(), p[4200];
	size_t len = 0;
	path_of(p, sizeof p, d, "in");
	write_file(p, 300000); /* grows the buffer a few times */
	char *all = fileio_read_path(p, 1u << 20, &len);
	ck_assert_ptr_nonnull(all);
	ck_assert_uint_eq(len, 300000);
	size_t bad = len;
	for (size_t i = 0; i < len && bad == len; i++)
		if (all[i] != (char)(i * 31 + 7))
			bad = i; /* one assertion below: each one costs a message to Check's parent */
	ck_assert_uint_eq(bad, len);
	free(all);
	/* the cap: the first max bytes, the rest unread */
	FILE *fp = fopen(p, "rb");
	char *head = fileio_read_stream(fp, 1000, &len);
	ck_assert_ptr_nonnull(head);
	ck_assert_uint_eq(len, 1000);
	ck_assert_int_eq(ftell(fp), 1000);
	free(head);
	fclose(fp);
	/* an empty file */
	write_file(p, 0);
	all = fileio_read_path(p, 100, &len);
	ck_assert_ptr_nonnull(all);
	ck_assert_uint_eq(len, 0);
	free(all);
	path_of(p, sizeof p, d, "none");
	ck_assert_ptr_null(fileio_read_path(p, 100, &len));
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(fileio_remove_tree(d), 0);
	free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fileio");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, write_pwrite_pread);
	tcase_add_test(tc, mkdir_p_and_remove_tree);
	tcase_add_test(tc, copy_file_lengths);
	tcase_add_test(tc, link_or_copy);
	tcase_add_test(tc, fsync_tree_and_paths);
	tcase_add_test(tc, read_stream_and_path);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
