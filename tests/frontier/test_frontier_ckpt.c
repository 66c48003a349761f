/*
 * Check suite for the frontier's checkpoints (frontier_checkpoint /
 * frontier_restore), frontier_unpop, the failure-atomic spill flush, and the
 * checksummed record files under them (frontier/base/recfile.h).
 *
 * Every queue is checked against a reference model: per host, the sequence
 * numbers still queued, in order.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/frontier.h"
#include "frontier/base/recfile.h"

#define HOSTS 50
#define MAXQ 20000

/* Reference model: per host a FIFO of sequence numbers. */
struct model {
	uint32_t q[HOSTS][MAXQ];
	uint32_t head[HOSTS], tail[HOSTS];
};

static char *tmpdir(void)
{
	char *d = strdup("/tmp/frontier-ckpt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[4096];
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rm_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

static struct frontier_config config(const char *spill, uint64_t budget)
{
	struct frontier_config c;
	frontier_config_default(&c);
	c.spill_dir = spill;
	c.mem_budget = budget;
	c.write_buffer = 64 * 1024;
	c.segment_bytes = 256 * 1024;
	return c;
}

static uint32_t host_id(struct frontier *f, int h)
{
	char k[64];
	int n = snprintf(k, sizeof k, "http://h%d.test", h);
	uint32_t id;
	ck_assert_int_eq(frontier_host_get(f, k, (size_t)n, 1, &id), FRONTIER_OK);
	return id;
}

static enum frontier_err push(struct frontier *f, struct model *m, int h, uint32_t seq)
{
	char url[128], via[64];
	/* long URLs so a small budget spills */
	int n = snprintf(url, sizeof url, "http://h%d.test/page/%u/%0*d", h, seq, 60, 0);
	int vn = snprintf(via, sizeof via, "http://h%d.test/from/%u", h, seq / 3);
	enum frontier_err e =
	        frontier_push(f, host_id(f, h), url, (size_t)n, via, (size_t)vn, seq % 7);
	if (e == FRONTIER_OK) {
		ck_assert_uint_lt(m->tail[h], MAXQ);
		m->q[h][m->tail[h]++] = seq;
	}
	return e;
}

/* Pops one URL of host h and checks it against the model. */
static void pop_check(struct frontier *f, struct model *m, int h)
{
	struct frontier_url u;
	char want[128];
	ck_assert_uint_lt(m->head[h], m->tail[h]);
	uint32_t seq = m->q[h][m->head[h]++];
	int n = snprintf(want, sizeof want, "http://h%d.test/page/%u/%0*d", h, seq, 60, 0);
	ck_assert_int_eq(frontier_pop(f, host_id(f, h), &u), FRONTIER_OK);
	ck_assert_uint_eq(u.url_len, (size_t)n);
	ck_assert(memcmp(u.url, want, (size_t)n) == 0);
	ck_assert_uint_eq(u.depth, seq % 7);
	n = snprintf(want, sizeof want, "http://h%d.test/from/%u", h, seq / 3);
	ck_assert_uint_eq(u.via_len, (size_t)n);
	ck_assert(memcmp(u.via, want, (size_t)n) == 0);
}

/* Pops everything and checks the model is exhausted exactly then. */
static void drain_check(struct frontier *f, struct model *m)
{
	struct frontier_url u;
	for (int h = 0; h < HOSTS; h++) {
		while (m->head[h] < m->tail[h])
			pop_check(f, m, h);
		ck_assert_int_eq(frontier_pop(f, host_id(f, h), &u), FRONTIER_ERR_EMPTY);
	}
}

START_TEST(checkpoint_restores_queues_exactly)
{
	char *spill = tmpdir(), *ck = tmpdir();
	struct frontier_config c = config(spill, 512 * 1024); /* most URLs go to disk */
	struct frontier *f, *g;
	struct frontier_stats s0, s1;
	static struct model m, saved;
	uint32_t seq = 0;

	memset(&m, 0, sizeof m);
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	/* interleaved pushes and pops over many hosts, through memory and disk */
	for (int round = 0; round < 30; round++) {
		for (int i = 0; i < 400; i++) {
			ck_assert_int_eq(push(f, &m, (int)(seq * 7919u % HOSTS), seq), FRONTIER_OK);
			seq++;
		}
		for (int h = 0; h < HOSTS; h += 3)
			for (int k = 0; k < 3 && m.head[h] < m.tail[h]; k++)
				pop_check(f, &m, h);
	}
	frontier_stats(f, &s0);
	ck_assert_uint_gt(s0.urls_on_disk, 1000); /* the test means something */
	ck_assert_uint_gt(s0.urls_in_memory, 10);
	frontier_host_account(f, host_id(f, 6), 12, 3456);
	ck_assert_int_eq(frontier_checkpoint(f, ck), FRONTIER_OK);
	saved = m;
	frontier_stats(f, &s0);

	/* The live frontier goes on after the checkpoint: more pushes (new
	 * extents patch the tails' links in the linked segments), pops that
	 * consume and unlink segments. The checkpoint must not notice. */
	for (int i = 0; i < 6000; i++) {
		ck_assert_int_eq(push(f, &m, (int)(seq * 7919u % HOSTS), seq), FRONTIER_OK);
		seq++;
	}
	drain_check(f, &m);
	frontier_destroy(f);

	/* Restored twice from the same checkpoint: the same queues each time. */
	for (int rep = 0; rep < 2; rep++) {
		m = saved;
		ck_assert_int_eq(frontier_restore(&c, ck, &g), FRONTIER_OK);
		frontier_stats(g, &s1);
		ck_assert_uint_eq(s1.urls_queued, s0.urls_queued);
		ck_assert_uint_eq(s1.urls_on_disk, s0.urls_on_disk);
		ck_assert_uint_eq(s1.urls_in_memory, s0.urls_in_memory);
		ck_assert_uint_eq(s1.pushed, s0.pushed);
		ck_assert_uint_eq(s1.popped, s0.popped);
		ck_assert_uint_eq(s1.hosts, s0.hosts);
		ck_assert_uint_le(s1.mem_bytes, c.mem_budget + 4096);
		uint64_t pages, bytes;
		frontier_host_counts(g, host_id(g, 6), &pages, &bytes, NULL);
		ck_assert_uint_eq(pages, 12);
		ck_assert_uint_eq(bytes, 3456);
		/* the restored frontier keeps working: pushes after its queues */
		for (int i = 0; i < 2000; i++) {
			ck_assert_int_eq(push(g, &m, (int)(seq * 7919u % HOSTS), seq), FRONTIER_OK);
			seq++;
		}
		drain_check(g, &m);
		frontier_stats(g, &s1);
		ck_assert_uint_eq(s1.urls_queued, 0);
		ck_assert_uint_eq(s1.urls_on_disk, 0);
		ck_assert_uint_le(s1.segments,
		                  1); /* old ones reclaimed; the one being appended stays */
		frontier_destroy(g);
	}
	rm_tree(ck);
	rm_tree(spill);
	free(ck);
	free(spill);
}
END_TEST

static void flip_byte(const char *path, long off)
{
	FILE *fp = fopen(path, "r+b");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fseek(fp, off, SEEK_SET), 0);
	int c = fgetc(fp);
	ck_assert_int_ne(c, EOF);
	ck_assert_int_eq(fseek(fp, off, SEEK_SET), 0);
	fputc(c ^ 0x40, fp);
	fclose(fp);
}

START_TEST(corrupt_checkpoint_is_refused)
{
	char *spill = tmpdir(), *ck = tmpdir(), path[4096];
	struct frontier_config c = config(spill, 1 << 20);
	struct frontier *f, *g = NULL;
	static struct model m;
	struct stat st;

	memset(&m, 0, sizeof m);
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	for (uint32_t i = 0; i < 500; i++)
		ck_assert_int_eq(push(f, &m, (int)(i % HOSTS), i), FRONTIER_OK);
	ck_assert_int_eq(frontier_checkpoint(f, ck), FRONTIER_OK);
	frontier_destroy(f);
	snprintf(path, sizeof path, "%s/queues", ck);
	ck_assert_int_eq(stat(path, &st), 0);
	/* a flipped byte anywhere in the middle */
	flip_byte(path, st.st_size / 2);
	ck_assert_int_eq(frontier_restore(&c, ck, &g), FRONTIER_ERR_CORRUPT);
	ck_assert_ptr_null(g);
	flip_byte(path, st.st_size / 2);
	ck_assert_int_eq(frontier_restore(&c, ck, &g), FRONTIER_OK);
	frontier_destroy(g);
	/* a truncated file */
	ck_assert_int_eq(truncate(path, st.st_size - 5), 0);
	ck_assert_int_eq(frontier_restore(&c, ck, &g), FRONTIER_ERR_CORRUPT);
	/* no file at all */
	unlink(path);
	ck_assert_int_eq(frontier_restore(&c, ck, &g), FRONTIER_ERR_IO);
	rm_tree(ck);
	rm_tree(spill);
	free(ck);
	free(spill);
}
END_TEST

START_TEST(unpop_goes_first)
{
	char *spill = tmpdir();
	struct frontier_config c = config(spill, 1 << 20);
	struct frontier *f;
	struct frontier_url u;
	static struct model m;
	char url[256];

	memset(&m, 0, sizeof m);
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	for (uint32_t i = 0; i < 5; i++)
		ck_assert_int_eq(push(f, &m, 0, i), FRONTIER_OK);
	ck_assert_int_eq(frontier_pop(f, host_id(f, 0), &u), FRONTIER_OK);
	memcpy(url, u.url, u.url_len);
	size_t len = u.url_len;
	ck_assert_int_eq(frontier_unpop(f, host_id(f, 0), url, len, "v", 1, 9), FRONTIER_OK);
	ck_assert_uint_eq(frontier_host_queued(f, host_id(f, 0)), 5);
	ck_assert_int_eq(frontier_pop(f, host_id(f, 0), &u), FRONTIER_OK);
	ck_assert_uint_eq(u.url_len, len);
	ck_assert(memcmp(u.url, url, len) == 0);
	ck_assert_uint_eq(u.depth, 9);
	/* an empty queue: unpop makes it non-empty again */
	ck_assert_int_eq(frontier_unpop(f, host_id(f, 1), "http://h1.test/x", 16, NULL, 0, 0),
	                 FRONTIER_OK);
	ck_assert_uint_eq(frontier_host_queued(f, host_id(f, 1)), 1);
	frontier_host_retire(f, host_id(f, 2), NULL, NULL, NULL);
	ck_assert_int_eq(frontier_unpop(f, host_id(f, 2), "http://h2.test/x", 16, NULL, 0, 0),
	                 FRONTIER_ERR_RETIRED);
	frontier_destroy(f);
	rm_tree(spill);
	free(spill);
}
END_TEST

/* A spill flush that fails (the file size limit stands in for a full disk:
 * writes past it fail with EFBIG) changes nothing: the push reports the
 * error, nothing accepted before is lost, and once writes succeed again
 * every accepted URL comes out once, in order. */
START_TEST(failed_spill_flush_loses_nothing)
{
	char *spill = tmpdir();
	struct frontier_config c = config(spill, 300 * 1024);
	struct frontier *f;
	static struct model m;
	struct rlimit rl, small;
	uint32_t seq = 0, ids[HOSTS];
	int failures = 0, other = 0;

	signal(SIGXFSZ, SIG_IGN);
	c.segment_bytes = 64u << 20;
	memset(&m, 0, sizeof m);
	ck_assert_int_eq(frontier_create(&c, &f), FRONTIER_OK);
	for (int h = 0; h < HOSTS; h++)
		ids[h] = host_id(f, h);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	small = rl;
	small.rlim_cur = 100 * 1024;
	/* No Check assertion while the limit holds: Check itself writes files. */
	setrlimit(RLIMIT_FSIZE, &small);
	for (int i = 0; i < 20000; i++, seq++) {
		char url[128];
		int h = (int)(seq % HOSTS);
		int n = snprintf(url, sizeof url, "http://h%d.test/page/%u/%0*d", h, seq, 60, 0);
		char via[64];
		int vn = snprintf(via, sizeof via, "http://h%d.test/from/%u", h, seq / 3);
		enum frontier_err e =
		        frontier_push(f, ids[h], url, (size_t)n, via, (size_t)vn, seq % 7);
		if (e == FRONTIER_OK && m.tail[h] < MAXQ)
			m.q[h][m.tail[h]++] = seq;
		else if (e == FRONTIER_ERR_IO)
			failures++;
		else
			other++;
	}
	setrlimit(RLIMIT_FSIZE, &rl);
	ck_assert_int_gt(failures, 0);
	ck_assert_int_eq(other, 0);
	for (int i = 0; i < 3000; i++) {
		ck_assert_int_eq(push(f, &m, (int)(seq % HOSTS), seq), FRONTIER_OK);
		seq++;
	}
	drain_check(f, &m);
	frontier_destroy(f);
	rm_tree(spill);
	free(spill);
}
END_TEST

START_TEST(recfile_roundtrip_and_damage)
{
	char *d = tmpdir(), path[4096], buf[64], *big = NULL;
	struct recfile_writer *w;
	struct recfile_reader *r;
	uint8_t b;
	uint32_t v32, len;
	uint64_t v64;

	snprintf(path, sizeof path, "%s/f", d);
	ck_assert_int_eq(recfile_writer_create(path, "TESTMAG1", &w), RECFILE_OK);
	recfile_put_u8(w, 7);
	recfile_put_u32(w, 0xdeadbeef);
	recfile_put_u64(w, 0x0123456789abcdefull);
	recfile_put_bytes(w, "hello", 5);
	for (int i = 0; i < 100000; i++) /* past one buffer */
		recfile_put_u32(w, (uint32_t)i);
	recfile_put_bytes(w, NULL, 0);
	ck_assert_int_eq(recfile_writer_close(w, 1), RECFILE_OK);

	ck_assert_int_eq(recfile_reader_open(path, "OTHERMAG", &r), RECFILE_ERR_CORRUPT);
	ck_assert_int_eq(recfile_reader_open(path, "TESTMAG1", &r), RECFILE_OK);
	ck_assert_int_eq(recfile_get_u8(r, &b), RECFILE_OK);
	ck_assert_uint_eq(b, 7);
	ck_assert_int_eq(recfile_get_u32(r, &v32), RECFILE_OK);
	ck_assert_uint_eq(v32, 0xdeadbeef);
	ck_assert_int_eq(recfile_get_u64(r, &v64), RECFILE_OK);
	ck_assert_uint_eq(v64, 0x0123456789abcdefull);
	ck_assert_int_eq(recfile_get_bytes(r, buf, 4, &len),
	                 RECFILE_ERR_CORRUPT); /* too long for cap */
	recfile_reader_close(r);
	ck_assert_int_eq(recfile_reader_open(path, "TESTMAG1", &r), RECFILE_OK);
	recfile_get_u8(r, &b);
	recfile_get_u32(r, &v32);
	recfile_get_u64(r, &v64);
	ck_assert_int_eq(recfile_get_bytes(r, buf, sizeof buf, &len), RECFILE_OK);
	ck_assert_uint_eq(len, 5);
	ck_assert_str_eq(buf, "hello");
	for (int i = 0; i < 100000; i++) {
		ck_assert_int_eq(recfile_get_u32(r, &v32), RECFILE_OK);
		ck_assert_uint_eq(v32, (uint32_t)i);
	}
	ck_assert(!recfile_reader_at_end(r));
	ck_assert_int_eq(recfile_get_bytes_alloc(r, 10, &big, &len), RECFILE_OK);
	ck_assert_ptr_null(big);
	ck_assert(recfile_reader_at_end(r));
	ck_assert_int_eq(recfile_get_u8(r, &b), RECFILE_ERR_CORRUPT); /* past the end */
	recfile_reader_close(r);

	/* any flipped byte, and any truncation, is refused before a field is read */
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	for (long off = 0; off < st.st_size; off += st.st_size / 13 + 1) {
		flip_byte(path, off);
		ck_assert_int_eq(recfile_reader_open(path, "TESTMAG1", &r), RECFILE_ERR_CORRUPT);
		flip_byte(path, off);
	}
	ck_assert_int_eq(truncate(path, st.st_size - 1), 0);
	ck_assert_int_eq(recfile_reader_open(path, "TESTMAG1", &r), RECFILE_ERR_CORRUPT);
	ck_assert_int_eq(truncate(path, 3), 0);
	ck_assert_int_eq(recfile_reader_open(path, "TESTMAG1", &r), RECFILE_ERR_CORRUPT);
	unlink(path);
	errno = 0;
	ck_assert_int_eq(recfile_reader_open(path, "TESTMAG1", &r), RECFILE_ERR_IO);
	ck_assert_int_eq(errno, ENOENT);
	/* an aborted writer leaves no file */
	ck_assert_int_eq(recfile_writer_create(path, "TESTMAG1", &w), RECFILE_OK);
	recfile_put_u32(w, 1);
	recfile_writer_abort(w);
	ck_assert_int_ne(access(path, F_OK), 0);
	rm_tree(d);
	free(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("frontier_checkpoint");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, checkpoint_restores_queues_exactly);
	tcase_add_test(tc, corrupt_checkpoint_is_refused);
	tcase_add_test(tc, unpop_goes_first);
	tcase_add_test(tc, failed_spill_flush_loses_nothing);
	tcase_add_test(tc, recfile_roundtrip_and_damage);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
