/*
 * Check suite for the generator of the test web: determinism (same seed ->
 * same bytes, other seed -> other bytes), host names, link targets that
 * resolve to real resources, robots kinds, the expected set, the gzip bomb.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tests/testweb/gen.h"

static struct tw_config cfg_with_seed(uint64_t seed)
{
	struct tw_config c;
	tw_config_defaults(&c);
	c.seed = seed;
	c.http_port = 8123;
	return c;
}

/* Path of page j, as documented in testweb --help. */
static void doc_page_path(long j, char *p, size_t cap)
{
	if (j == 0)
		snprintf(p, cap, "/");
	else if (j % 10 == 7)
		snprintf(p, cap, "/private/p%ld.html", j);
	else
		snprintf(p, cap, "/s%ld/p%ld.html", j % 5, j);
}

static const char *const sample_paths[] = { "/",
	                                    "/s1/p1.html",
	                                    "/s2/p12.html",
	                                    "/private/p7.html",
	                                    "/s4/p9.html?q=1",
	                                    "/img/i3.png",
	                                    "/doc/d5.pdf",
	                                    "/robots.txt",
	                                    "/r/4",
	                                    "/r2/4",
	                                    "/r3/4",
	                                    "/rx/4",
	                                    "/loop/a",
	                                    "/gone/x1.html",
	                                    "/nothing" };

START_TEST(same_seed_same_bytes)
{
	struct tw_config a = cfg_with_seed(7), b = cfg_with_seed(7);
	for (long h = 0; h < a.hosts; h++) {
		for (size_t k = 0; k < sizeof sample_paths / sizeof *sample_paths; k++) {
			const char *p = sample_paths[k];
			struct tw_resource r1, r2;
			ck_assert_int_eq(tw_resource_get(&a, h, p, strlen(p), &r1, NULL, 0, NULL),
			                 0);
			ck_assert_int_eq(tw_resource_get(&b, h, p, strlen(p), &r2, NULL, 0, NULL),
			                 0);
			ck_assert_int_eq(r1.status, r2.status);
			ck_assert_uint_eq(r1.body_len, r2.body_len);
			ck_assert(memcmp(r1.body, r2.body, r1.body_len) == 0);
			ck_assert_str_eq(r1.location, r2.location);
			tw_resource_clear(&r1);
			tw_resource_clear(&r2);
		}
	}
}
END_TEST

START_TEST(other_seed_other_bytes)
{
	struct tw_config a = cfg_with_seed(1), b = cfg_with_seed(2);
	const char *const paths[] = { "/", "/s1/p1.html", "/img/i3.png", "/doc/d5.pdf" };
	for (size_t k = 0; k < 4; k++) {
		struct tw_resource r1, r2;
		ck_assert_int_eq(
		        tw_resource_get(&a, 3, paths[k], strlen(paths[k]), &r1, NULL, 0, NULL), 0);
		ck_assert_int_eq(
		        tw_resource_get(&b, 3, paths[k], strlen(paths[k]), &r2, NULL, 0, NULL), 0);
		ck_assert_int_eq(r1.status, 200);
		ck_assert(r1.body_len != r2.body_len || memcmp(r1.body, r2.body, r1.body_len) != 0);
		tw_resource_clear(&r1);
		tw_resource_clear(&r2);
	}
	/* Different host, same path: different bytes too. */
	struct tw_resource r1, r2;
	ck_assert_int_eq(tw_resource_get(&a, 1, "/", 1, &r1, NULL, 0, NULL), 0);
	ck_assert_int_eq(tw_resource_get(&a, 2, "/", 1, &r2, NULL, 0, NULL), 0);
	ck_assert(r1.body_len != r2.body_len || memcmp(r1.body, r2.body, r1.body_len) != 0);
	tw_resource_clear(&r1);
	tw_resource_clear(&r2);
}
END_TEST

START_TEST(host_names)
{
	struct tw_config c = cfg_with_seed(1);
	long i = -1;
	ck_assert_int_eq(tw_host_parse(&c, "h3.web.test", 11, &i), 0);
	ck_assert_int_eq(i, 3);
	ck_assert_int_eq(tw_host_parse(&c, "H9.WEB.Test", 11, &i), 0);
	ck_assert_int_eq(i, 9);
	ck_assert_int_eq(tw_host_parse(&c, "h10.web.test", 12, &i), -1); /* >= hosts */
	ck_assert_int_eq(tw_host_parse(&c, "h03.web.test", 12, &i), -1);
	ck_assert_int_eq(tw_host_parse(&c, "h3.web.tes", 10, &i), -1);
	ck_assert_int_eq(tw_host_parse(&c, "h3.web.testx", 12, &i), -1);
	ck_assert_int_eq(tw_host_parse(&c, "x3.web.test", 11, &i), -1);
	ck_assert_int_eq(tw_host_parse(&c, "h.web.test", 10, &i), -1);
	ck_assert_int_eq(tw_host_parse(&c, "", 0, &i), -1);
	c.ips = 4;
	ck_assert_uint_eq(tw_host_addr(&c, 0), 0x7f000101u);
	ck_assert_uint_eq(tw_host_addr(&c, 5), 0x7f000102u);
	ck_assert_uint_eq(tw_host_addr(&c, 7), 0x7f000104u);
}
END_TEST

/* Every link of every page points at a resource of a real host, and the
 * page sizes are in the advertised range. */
START_TEST(links_resolve)
{
	struct tw_config c = cfg_with_seed(3);
	struct tw_link links[64];
	size_t nl = 0, total_links = 0, sizes_ok = 0;
	int seen[600] = { 0 };
	for (long h = 0; h < c.hosts; h++) {
		for (long j = 0; j < c.pages; j++) {
			char p[64];
			doc_page_path(j, p, sizeof p);
			struct tw_resource r;
			ck_assert_int_eq(tw_resource_get(&c, h, p, strlen(p), &r, links, 64, &nl),
			                 0);
			ck_assert_int_eq(r.status, 200);
			ck_assert(nl >= 2);
			if (r.body_len >= 5000 && r.body_len <= 64000)
				sizes_ok++;
			ck_assert_ptr_nonnull(strstr(r.body, "</html>"));
			tw_resource_clear(&r);
			for (size_t k = 0; k < nl; k++) {
				struct tw_resource t;
				ck_assert(links[k].host >= 0 && links[k].host < c.hosts);
				ck_assert_int_eq(tw_resource_get(&c, links[k].host, links[k].path,
				                                 strlen(links[k].path), &t, NULL, 0,
				                                 NULL),
				                 0);
				ck_assert(t.status == 200 || t.status == 301 || t.status == 302 ||
				          t.status == 404);
				if (t.status < 600)
					seen[t.status]++;
				tw_resource_clear(&t);
				total_links++;
			}
		}
	}
	ck_assert_uint_eq(sizes_ok, (size_t)(c.hosts * c.pages));
	ck_assert(total_links > (size_t)(c.hosts * c.pages) * 8);
	ck_assert(seen[200] > 0 && seen[301] > 0 && seen[302] > 0 && seen[404] > 0);
}
END_TEST

START_TEST(robots_kinds_and_sitemap)
{
	struct tw_config c = cfg_with_seed(1);
	int kinds[10] = { 0 };
	for (long h = 0; h < c.hosts; h++)
		kinds[tw_robots_kind(&c, h)]++;
	for (int k = 0; k < 10; k++)
		ck_assert_int_eq(kinds[k], 1);
	for (long h = 0; h < c.hosts; h++) {
		struct tw_resource r, s;
		int kind = tw_robots_kind(&c, h);
		ck_assert_int_eq(tw_resource_get(&c, h, "/robots.txt", 11, &r, NULL, 0, NULL), 0);
		ck_assert_int_eq(tw_resource_get(&c, h, "/sitemap.xml", 12, &s, NULL, 0, NULL), 0);
		ck_assert_int_eq(r.status, kind == 4 ? 404 : kind == 7 ? 503 : 200);
		if (kind == 5 || kind == 6) {
			ck_assert_ptr_nonnull(strstr(r.body, "Sitemap: http://"));
			ck_assert_int_eq(s.status, 200);
			ck_assert_ptr_nonnull(strstr(s.body, "<urlset"));
		} else {
			ck_assert_int_eq(s.status, 404);
		}
		if (kind == 2 || kind == 9)
			ck_assert_ptr_nonnull(strstr(r.body, "User-agent: badbot"));
		if (kind == 3 || kind == 8)
			ck_assert_ptr_nonnull(strstr(r.body, "Crawl-delay: 1"));
		tw_resource_clear(&r);
		tw_resource_clear(&s);
	}
}
END_TEST

static char *expected_text(const struct tw_config *c, const char *agent, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(tw_expected_write(c, agent, f), 0);
	fclose(f);
	return buf;
}

START_TEST(expected_set)
{
	struct tw_config a = cfg_with_seed(1), b = cfg_with_seed(1), d = cfg_with_seed(5);
	size_t la, lb, ld, lbad;
	char *ea = expected_text(&a, "testcrawler/1.0", &la);
	char *eb = expected_text(&b, "testcrawler/1.0", &lb);
	char *ed = expected_text(&d, "testcrawler/1.0", &ld);
	char *ebad = expected_text(&a, "BadBot/2.1", &lbad);
	ck_assert_uint_eq(la, lb);
	ck_assert(memcmp(ea, eb, la) == 0);
	ck_assert(la != ld || memcmp(ea, ed, la) != 0);
	/* badbot is disallowed more: a strictly smaller set. */
	ck_assert(lbad < la);
	/* Sorted, tab-separated, no fragments, explicit port, robots listed. */
	ck_assert_ptr_nonnull(strstr(ea, "http://h0.web.test:8123/\t200\n"));
	ck_assert_ptr_nonnull(strstr(ea, "http://h0.web.test:8123/robots.txt\t"));
	ck_assert_ptr_null(strchr(ea, '#'));
	/* 503 robots host (kind 7 = h6 with seed 1): robots.txt only. */
	ck_assert_ptr_nonnull(strstr(ea, "http://h6.web.test:8123/robots.txt\t503\n"));
	ck_assert_ptr_null(strstr(ea, "http://h6.web.test:8123/\t"));
	/* kind 1 (h0) disallows /private/ for everyone. */
	ck_assert_ptr_null(strstr(ea, "http://h0.web.test:8123/private/"));
	/* kind 9 (h8) disallows everything for badbot only. */
	ck_assert_ptr_nonnull(strstr(ea, "http://h8.web.test:8123/\t200"));
	ck_assert_ptr_null(strstr(ebad, "http://h8.web.test:8123/\t200"));
	const char *line = ea, *prevl = NULL;
	size_t prevn = 0;
	while (*line) {
		const char *nl = strchr(line, '\n');
		ck_assert_ptr_nonnull(nl);
		size_t n = (size_t)(nl - line);
		ck_assert_ptr_nonnull(memchr(line, '\t', n));
		if (prevl != NULL) {
			size_t m = n < prevn ? n : prevn;
			int cmp = memcmp(prevl, line, m);
			ck_assert(cmp < 0 || (cmp == 0 && prevn < n));
		}
		prevl = line;
		prevn = n;
		line = nl + 1;
	}
	free(ea);
	free(eb);
	free(ed);
	free(ebad);
}
END_TEST

START_TEST(expected_excludes_faults)
{
	struct tw_config c = cfg_with_seed(1);
	ck_assert_int_eq(tw_config_add_fault(&c, "h3=trap"), 0);
	ck_assert_int_eq(tw_config_add_fault(&c, "h4=slow"), 0);
	ck_assert_int_eq(tw_config_add_fault(&c, "h4=reset"), -1);
	ck_assert_int_eq(tw_config_add_fault(&c, "h5=nonsense"), -1);
	ck_assert_int_eq(tw_config_check(&c), 0);
	size_t l;
	char *e = expected_text(&c, "x", &l);
	ck_assert_ptr_null(strstr(e, "//h3.web.test"));
	ck_assert_ptr_null(strstr(e, "//h4.web.test"));
	ck_assert_ptr_nonnull(strstr(e, "//h5.web.test"));
	free(e);
	/* Fault hosts link only to themselves; /rx/ stays on the host. */
	for (long j = 0; j < c.pages; j++) {
		struct tw_link fl[64];
		size_t fn = 0;
		char p[64];
		struct tw_resource pr;
		doc_page_path(j, p, sizeof p);
		ck_assert_int_eq(tw_resource_get(&c, 3, p, strlen(p), &pr, fl, 64, &fn), 0);
		ck_assert_int_eq(pr.status, 200);
		for (size_t k = 0; k < fn; k++)
			ck_assert_int_eq(fl[k].host, 3);
		tw_resource_clear(&pr);
	}
	struct tw_resource rx;
	ck_assert_int_eq(tw_resource_get(&c, 3, "/rx/2", 5, &rx, NULL, 0, NULL), 0);
	ck_assert_int_eq(rx.loc.host, 3);
	tw_resource_clear(&rx);
	ck_assert_int_eq(tw_resource_get(&c, 2, "/rx/2", 5, &rx, NULL, 0, NULL), 0);
	ck_assert_int_eq(rx.loc.host, 3);
	ck_assert_int_eq(rx.status, 302);
	tw_resource_clear(&rx);
	/* The trap host's calendar goes on forever. */
	struct tw_link links[8];
	size_t nl = 0;
	struct tw_resource r;
	ck_assert_int_eq(tw_resource_get(&c, 3, "/cal/9999/12/", 13, &r, links, 8, &nl), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(links[0].path, "/cal/10000/1/");
	tw_resource_clear(&r);
}
END_TEST

START_TEST(gzip_bomb_inflates)
{
	size_t len = 0;
	uint64_t infl = 0;
	const unsigned char *b = tw_gzip_bomb(&len, &infl);
	ck_assert_ptr_nonnull(b);
	ck_assert(len < (4u << 20));
	ck_assert(infl >= (1ull << 31));
	z_stream zs;
	memset(&zs, 0, sizeof zs);
	ck_assert_int_eq(inflateInit2(&zs, 31), Z_OK);
	static unsigned char out[1 << 20];
	zs.next_in = (unsigned char *)b;
	zs.avail_in = (uInt)len;
	uint64_t total = 0;
	int zr;
	do {
		zs.next_out = out;
		zs.avail_out = sizeof out;
		zr = inflate(&zs, Z_NO_FLUSH);
		ck_assert(zr == Z_OK || zr == Z_STREAM_END);
		total += sizeof out - zs.avail_out;
		size_t got = sizeof out - zs.avail_out;
		ck_assert(got == 0 || (out[0] == 0 && out[got - 1] == 0));
	} while (zr != Z_STREAM_END);
	inflateEnd(&zs);
	/* Z_STREAM_END means the CRC and length trailer matched. */
	ck_assert_uint_eq(total, infl);
}
END_TEST

/* Epochs: a page's version is the last step that changed it, about
 * change_pct percent a step; its bytes and validators change with it and
 * nothing else does; --changed lists exactly the pages whose version moved. */
START_TEST(epochs_change_pages)
{
	struct tw_config c0 = cfg_with_seed(3), c2 = cfg_with_seed(3);
	c0.hosts = c2.hosts = 40;
	c0.pages = c2.pages = 50;
	c2.epoch = 2;
	long changed1 = 0, total = 0;
	for (long h = 0; h < c0.hosts; h++)
		for (long j = 0; j < c0.pages; j++) {
			long v1 = tw_page_version(&c0, h, j, 1), v2 = tw_page_version(&c0, h, j, 2);
			ck_assert(v1 == 0 || v1 == 1);
			ck_assert(v2 == 2 || v2 == v1);
			ck_assert_int_eq(tw_page_version(&c0, h, j, 0), 0);
			changed1 += v1 == 1;
			total++;
		}
	/* 2,000 pages at 10%: 200 expected, a binomial sd of 13.4 */
	ck_assert_msg(changed1 > 150 && changed1 < 250, "%ld of %ld changed", changed1, total);
	for (long j = 0; j < 12; j++) {
		char p[64];
		struct tw_resource a, b;
		doc_page_path(j, p, sizeof p);
		ck_assert_int_eq(tw_resource_get(&c0, 5, p, strlen(p), &a, NULL, 0, NULL), 0);
		ck_assert_int_eq(tw_resource_get(&c2, 5, p, strlen(p), &b, NULL, 0, NULL), 0);
		long v = tw_page_version(&c0, 5, j, 2);
		bool same = a.body_len == b.body_len && memcmp(a.body, b.body, a.body_len) == 0;
		ck_assert_int_eq(same, v == 0);
		ck_assert_int_eq(strcmp(a.etag, b.etag) == 0, v == 0);
		ck_assert_int_eq(a.last_modified, TW_EPOCH0_UNIX);
		ck_assert_int_eq(b.last_modified, TW_EPOCH0_UNIX + v * 86400);
		tw_resource_clear(&a);
		tw_resource_clear(&b);
	}
	/* other resources keep their validators */
	struct tw_resource a, b;
	ck_assert_int_eq(tw_resource_get(&c0, 5, "/img/i3.png", 11, &a, NULL, 0, NULL), 0);
	ck_assert_int_eq(tw_resource_get(&c2, 5, "/img/i3.png", 11, &b, NULL, 0, NULL), 0);
	ck_assert(a.etag[0] != '\0');
	ck_assert_str_eq(a.etag, b.etag);
	tw_resource_clear(&a);
	tw_resource_clear(&b);
	/* the expected set is the same at every epoch; --changed lists pages
	 * of it whose version moved, and only those */
	size_t l0, l2;
	char *e0 = expected_text(&c0, "testcrawler/1.0", &l0);
	char *e2 = expected_text(&c2, "testcrawler/1.0", &l2);
	ck_assert_uint_eq(l0, l2);
	ck_assert(memcmp(e0, e2, l0) == 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	ck_assert_int_eq(tw_changed_write(&c2, "testcrawler/1.0", 0, m), 0);
	fclose(m);
	long listed = 0;
	for (char *line = buf, *nl; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		ck_assert_ptr_nonnull(nl);
		*nl = '\0';
		char want[256];
		snprintf(want, sizeof want, "%s\t200\n", line);
		ck_assert_ptr_nonnull(strstr(e0, want));
		long h, j;
		char path[128];
		ck_assert_int_eq(sscanf(line, "http://h%ld.web.test:8123%127s", &h, path), 2);
		j = strcmp(path, "/") == 0 ? 0 : atol(strrchr(path, 'p') + 1);
		ck_assert_int_gt(tw_page_version(&c0, h, j, 2), 0);
		listed++;
	}
	/* and every reachable page that moved is listed */
	long moved = 0;
	for (const char *q = e0; (q = strstr(q, "\t200\n")) != NULL; q++) {
		const char *ls = q;
		while (ls > e0 && ls[-1] != '\n')
			ls--;
		long h;
		char path[128];
		if (sscanf(ls, "http://h%ld.web.test:8123%127[^\t?]", &h, path) != 2 ||
		    strchr(ls, '?') < q ||
		    (strcmp(path, "/") != 0 && strstr(path, ".html") == NULL) ||
		    strncmp(path, "/o/", 3) == 0)
			continue;
		long j = strcmp(path, "/") == 0 ? 0 : atol(strrchr(path, 'p') + 1);
		moved += tw_page_version(&c0, h, j, 2) > 0;
	}
	ck_assert_int_eq(listed, moved);
	ck_assert_int_gt(listed, 0);
	free(buf);
	free(e0);
	free(e2);
}
END_TEST

/* Copies: about copy_pct percent of the pages that can be one serve the
 * bytes, validators and links of the page TW_COPY_STEP before them, in
 * their directory; no page is one without the option. */
START_TEST(copies_repeat_payloads)
{
	struct tw_config c = cfg_with_seed(3), plain = cfg_with_seed(3);
	c.hosts = plain.hosts = 40;
	c.pages = plain.pages = 50;
	c.copy_pct = 25;
	long copies = 0, eligible = 0;
	for (long h = 0; h < c.hosts; h++)
		for (long j = 0; j < c.pages; j++) {
			ck_assert_int_eq(tw_page_source(&plain, h, j), j);
			long src = tw_page_source(&c, h, j);
			ck_assert(src == j ||
			          (src > 0 && src < j && (j - src) % TW_COPY_STEP == 0));
			eligible += j > TW_COPY_STEP && j % TW_COPY_STEP != 2;
			copies += src != j;
			if (h != 7 || src == j)
				continue;
			char p[64], ps[64];
			struct tw_link la[64], lb[64];
			size_t na = 0, nb = 0;
			struct tw_resource a, b;
			doc_page_path(j, p, sizeof p);
			doc_page_path(src, ps, sizeof ps);
			ck_assert_int_eq(strrchr(p, '/') - p, strrchr(ps, '/') - ps);
			ck_assert(memcmp(p, ps, (size_t)(strrchr(p, '/') - p)) == 0);
			ck_assert_int_eq(tw_resource_get(&c, h, p, strlen(p), &a, la, 64, &na), 0);
			ck_assert_int_eq(tw_resource_get(&c, h, ps, strlen(ps), &b, lb, 64, &nb),
			                 0);
			ck_assert_uint_eq(a.body_len, b.body_len);
			ck_assert(memcmp(a.body, b.body, a.body_len) == 0);
			ck_assert_str_eq(a.etag, b.etag);
			ck_assert_uint_eq(na, nb);
			for (size_t k = 0; k < na; k++) {
				ck_assert_int_eq(la[k].host, lb[k].host);
				ck_assert_str_eq(la[k].path, lb[k].path);
			}
			tw_resource_clear(&a);
			tw_resource_clear(&b);
		}
	/* 1,400 pages that can be copies: 350 expected, a binomial sd of 16.2 */
	ck_assert_msg(copies > 290 && copies < 410, "%ld of %ld pages are copies", copies,
	              eligible);
}
END_TEST

START_TEST(filler_exact)
{
	char a[1000], b[1000];
	tw_filler(5, a, sizeof a);
	tw_filler(5, b, sizeof b);
	ck_assert(memcmp(a, b, sizeof a) == 0);
	tw_filler(6, b, sizeof b);
	ck_assert(memcmp(a, b, sizeof a) != 0);
}
END_TEST

/* The page index of a documented page path, or -1. */
static long doc_page_of(const char *path)
{
	long j;
	if (strcmp(path, "/") == 0)
		return 0;
	if (sscanf(path, "/s%*d/p%ld.html", &j) == 1 || sscanf(path, "/private/p%ld.html", &j) == 1)
		return j;
	return -1;
}

/* Occurrences of word w (a whole word) in text. */
static long count_word(const char *text, const char *w)
{
	long n = 0;
	size_t wl = strlen(w);
	for (const char *p = strstr(text, w); p; p = strstr(p + 1, w))
		n += (p == text || p[-1] == ' ' || p[-1] == '>') && (p[wl] == ' ' || p[wl] == '<');
	return n;
}

/* --topics: page j of host i is about topic (i + j) % T: its text carries
 * that topic's words far more than another's, and most of its links to
 * pages go to pages of its topic; without topics, no topic word at all. */
START_TEST(topical_pages)
{
	struct tw_config c = cfg_with_seed(5);
	c.hosts = 6;
	c.pages = 40;
	c.topics = 4;
	ck_assert_int_eq(tw_config_check(&c), 0);
	long same = 0, other = 0;
	for (long h = 0; h < c.hosts; h++) {
		for (long j = 0; j < c.pages; j++) {
			char p[64];
			struct tw_resource r;
			struct tw_link links[64];
			size_t nl = 0;
			doc_page_path(j, p, sizeof p);
			ck_assert_int_eq(tw_resource_get(&c, h, p, strlen(p), &r, links, 64, &nl),
			                 0);
			long t = tw_page_topic(&c, h, j);
			ck_assert_int_eq(t, (h + j) % 4);
			long own = 0, most_other = 0;
			for (long k = 0; k < c.topics; k++) {
				long n = 0;
				for (int w = 0; w < TW_TOPIC_WORDS; w++)
					n += count_word(r.body, tw_topic_word(k, w));
				if (k == t)
					own = n;
				else if (n > most_other)
					most_other = n;
			}
			ck_assert_msg(own > 4 * most_other && own >= 20, "h%ld %s: %ld vs %ld", h,
			              p, own, most_other);
			for (size_t k = 0; k < nl; k++) {
				long pj = doc_page_of(links[k].path);
				if (pj > 0)
					*(tw_page_topic(&c, links[k].host, pj) == t ? &same
					                                            : &other) += 1;
			}
			tw_resource_clear(&r);
		}
	}
	/* random page links: 4 in 5 to the topic; the j+1, j+2 links never */
	ck_assert_msg(same > 2 * other, "%ld same-topic links, %ld others", same, other);
	ck_assert_int_eq(tw_page_topic(&(struct tw_config){ .topics = 0 }, 1, 1), -1);
	c.topics = 0;
	struct tw_resource r;
	ck_assert_int_eq(tw_resource_get(&c, 1, "/", 1, &r, NULL, 0, NULL), 0);
	for (long k = 0; k < TW_TOPICS_MAX; k++)
		for (int w = 0; w < TW_TOPIC_WORDS; w++)
			ck_assert_int_eq(count_word(r.body, tw_topic_word(k, w)), 0);
	tw_resource_clear(&r);
	c.topics = 1;
	ck_assert_int_eq(tw_config_check(&c), -1);
	c.topics = TW_TOPICS_MAX + 1;
	ck_assert_int_eq(tw_config_check(&c), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("testweb_gen");
	TCase *tc = tcase_create("gen");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, same_seed_same_bytes);
	tcase_add_test(tc, other_seed_other_bytes);
	tcase_add_test(tc, host_names);
	tcase_add_test(tc, links_resolve);
	tcase_add_test(tc, robots_kinds_and_sitemap);
	tcase_add_test(tc, expected_set);
	tcase_add_test(tc, expected_excludes_faults);
	tcase_add_test(tc, gzip_bomb_inflates);
	tcase_add_test(tc, filler_exact);
	tcase_add_test(tc, epochs_change_pages);
	tcase_add_test(tc, copies_repeat_payloads);
	tcase_add_test(tc, topical_pages);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
