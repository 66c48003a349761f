/*
 * test_config.c: the key table of crawler/config/config.h lists exactly the keys
 * configs/default.conf documents, with the same defaults; a configuration
 * written by crawl_config_write reads back to the same values; keys land in
 * the module structs in the modules' units.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crawler/config/config.h"
#include "crawler/config/ini_file.h"

#ifndef CONFIGS_DIR
#define CONFIGS_DIR "configs"
#endif

#define MAX_PAIRS 256

struct pairs {
	char section[MAX_PAIRS][32];
	char name[MAX_PAIRS][64];
	size_t n;
};

static int on_pair(void *user, const char *section, const char *name, const char *value)
{
	struct pairs *p = user;
	(void)value;
	ck_assert_uint_lt(p->n, MAX_PAIRS);
	snprintf(p->section[p->n], sizeof p->section[0], "%s", section);
	snprintf(p->name[p->n], sizeof p->name[0], "%s", name);
	p->n++;
	return 1;
}

static size_t count_pair(const struct pairs *p, const char *section, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n; i++)
		n += strcmp(p->section[i], section) == 0 && strcmp(p->name[i], name) == 0;
	return n;
}

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	char *buf = calloc(1, 1 << 16);
	size_t n = fread(buf, 1, (1 << 16) - 1, f);
	ck_assert_uint_lt(n, (1 << 16) - 1);
	fclose(f);
	return buf;
}

/* Writes c to a temporary file; returns its path (caller unlinks, frees). */
static char *write_tmp_config(const struct crawl_config *c)
{
	char *path = strdup("/tmp/test_config_XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(crawl_config_write(c, path), 0);
	return path;
}

START_TEST(table_and_default_conf_list_the_same_keys)
{
	struct pairs doc = { 0 }, table = { 0 };
	const char *section, *name;
	ck_assert_int_eq(ini_file_parse(CONFIGS_DIR "/default.conf", on_pair, &doc), 0);
	for (size_t i = 0; crawl_config_key(i, &section, &name) == 0; i++)
		on_pair(&table, section, name, NULL);
	ck_assert_uint_gt(table.n, 0);
	for (size_t i = 0; i < table.n; i++) {
		ck_assert_msg(count_pair(&table, table.section[i], table.name[i]) == 1,
		              "[%s] %s: twice in the key table", table.section[i], table.name[i]);
		ck_assert_msg(count_pair(&doc, table.section[i], table.name[i]) == 1,
		              "[%s] %s: in the key table, not (once) in default.conf",
		              table.section[i], table.name[i]);
	}
	for (size_t i = 0; i < doc.n; i++)
		ck_assert_msg(count_pair(&table, doc.section[i], doc.name[i]) == 1,
		              "[%s] %s: in default.conf, not in the key table", doc.section[i],
		              doc.name[i]);
	ck_assert_uint_eq(doc.n, table.n);
}
END_TEST

/* default.conf states the defaults: loading it over the defaults changes
 * nothing that crawl_config_write shows. */
START_TEST(default_conf_states_the_defaults)
{
	struct crawl_config d, f;
	char err[CRAWL_CONFIG_ERR_MAX];
	ck_assert_int_eq(crawl_config_default(&d), 0);
	ck_assert_int_eq(crawl_config_default(&f), 0);
	ck_assert_int_eq(crawl_config_load(&f, CONFIGS_DIR "/default.conf", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	char *pd = write_tmp_config(&d), *pf = write_tmp_config(&f);
	char *td = read_all(pd), *tf = read_all(pf);
	ck_assert_str_eq(td, tf);
	unlink(pd);
	unlink(pf);
	free(pd);
	free(pf);
	free(td);
	free(tf);
	crawl_config_free(&d);
	crawl_config_free(&f);
}
END_TEST

/* Written, read back into a fresh default config: the same values, in the
 * module structs as in the file. */
static void check_round_trip(const char *load)
{
	struct crawl_config a, b;
	char err[CRAWL_CONFIG_ERR_MAX];
	ck_assert_int_eq(crawl_config_default(&a), 0);
	if (load)
		ck_assert_int_eq(crawl_config_load(&a, load, err, sizeof err), CRAWL_CONFIG_OK);
	char *pa = write_tmp_config(&a);
	ck_assert_int_eq(crawl_config_default(&b), 0);
	ck_assert_int_eq(crawl_config_load(&b, pa, err, sizeof err), CRAWL_CONFIG_OK);
	char *pb = write_tmp_config(&b);
	char *ta = read_all(pa), *tb = read_all(pb);
	ck_assert_str_eq(ta, tb);
	ck_assert(memcmp(&a.politeness, &b.politeness, sizeof a.politeness) == 0);
	ck_assert(memcmp(&a.parse, &b.parse, sizeof a.parse) == 0);
	ck_assert_uint_eq(a.crawl.max_pages, b.crawl.max_pages);
	ck_assert_uint_eq(a.crawl.max_time_ms, b.crawl.max_time_ms);
	ck_assert_str_eq(a.crawl.user_agent, b.crawl.user_agent);
	ck_assert_uint_eq(a.crawl.n_domains, b.crawl.n_domains);
	ck_assert_uint_eq(a.fetch.max_connections, b.fetch.max_connections);
	ck_assert_int_eq(a.fetch.total_timeout_ms, b.fetch.total_timeout_ms);
	ck_assert_int_eq(a.fetch.allow_private_networks, b.fetch.allow_private_networks);
	ck_assert_int_eq(a.fetch.no_accept_encoding, b.fetch.no_accept_encoding);
	ck_assert_str_eq(a.dns.server, b.dns.server);
	ck_assert_uint_eq(a.dns.timeout_ms, b.dns.timeout_ms);
	ck_assert_uint_eq(a.dns.max_pending, b.dns.max_pending);
	ck_assert_uint_eq(a.frontier.mem_budget, b.frontier.mem_budget);
	ck_assert_uint_eq(a.frontier.max_depth, b.frontier.max_depth);
	ck_assert(memcmp(&a.url, &b.url, sizeof a.url) == 0);
	ck_assert_uint_eq(a.scope.max_url_len, b.scope.max_url_len);
	ck_assert_uint_eq(a.sieve.memory, b.sieve.memory);
	ck_assert_uint_eq(a.sieve.max_url_len, b.sieve.max_url_len);
	ck_assert_uint_eq(a.link_meta_memory, b.link_meta_memory);
	ck_assert_uint_eq(a.links.max_links, b.links.max_links);
	ck_assert_uint_eq(a.warc.max_file_bytes, b.warc.max_file_bytes);
	ck_assert_int_eq(a.warc.compression_level, b.warc.compression_level);
	ck_assert_str_eq(a.output.dir, b.output.dir);
	unlink(pa);
	unlink(pb);
	free(pa);
	free(pb);
	free(ta);
	free(tb);
	crawl_config_free(&a);
	crawl_config_free(&b);
}

START_TEST(write_and_read_back_the_defaults)
{
	check_round_trip(NULL);
}
END_TEST

START_TEST(write_and_read_back_shipped_files)
{
	static const char *files[] = { "polite.conf", "research.conf", "testweb.conf",
		                       "archival.conf" };
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char path[1024];
		snprintf(path, sizeof path, "%s/%s", CONFIGS_DIR, files[i]);
		check_round_trip(path);
	}
}
END_TEST

/* Keys land in the modules' fields, in the modules' units, and the settings
 * several modules read are shared. */
START_TEST(keys_fill_the_module_structs)
{
	struct crawl_config c;
	char err[CRAWL_CONFIG_ERR_MAX];
	static const char *const set[][3] = {
		{ "politeness", "ip_delay_ms", "250" },
		{ "frontier", "mem_mb", "3" },
		{ "output", "warc_max_mb", "2" },
		{ "fetch", "accept_encoding", "false" },
		{ "crawl", "max_depth", "7" },
		{ "frontier", "max_url_len", "512" },
		{ "crawl", "user_agent", "bot/2 (x)" },
		{ "output", "dir", "/tmp/somewhere" },
		{ "crawl", "domains", "a.test,b.test" },
		{ "politeness", "policy", "adaptive" },
		{ "politeness", "adaptive_factor", "2.5" },
		{ "politeness", "adaptive_smoothing", "0.25" },
		{ "politeness", "adaptive_slowdown", "4" },
		{ "dns", "server", "127.0.0.1:5353,[::1]:53" },
		{ "dns", "resolv_conf", "/tmp/resolv.test" },
		{ "fetch", "ca_file", "/tmp/ca.pem" },
		{ "fetch", "tls_verify", "off" },
		{ "dns", "prefer", "ipv6" },
		{ "crawl", "order", "focused" },
		{ "crawl", "focus", "/tmp/topic.txt" },
		{ "crawl", "focus_threshold", "0.05" },
	};
	ck_assert_int_eq(crawl_config_default(&c), 0);
	ck_assert(!c.fetch.no_accept_encoding);
	ck_assert(c.fetch.verify_tls); /* certificates verified by default */
	ck_assert_str_eq(c.fetch.ca_file, "");
	ck_assert_str_eq(c.dns.server, ""); /* "": the system's resolv.conf */
	ck_assert_str_eq(c.dns.resolv_conf, "");
	ck_assert_int_eq(c.dns.prefer, IP_V4); /* IPv4 first by default */
	ck_assert_ptr_null(c.scope.domains);
	ck_assert_ptr_eq(c.links.url_options, &c.url);
	for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
		ck_assert_msg(crawl_config_set(&c, set[i][0], set[i][1], set[i][2], err,
		                               sizeof err) == CRAWL_CONFIG_OK,
		              "%s", err);
	ck_assert_uint_eq(c.politeness.ip_delay_us, 250000);
	ck_assert_int_eq(c.frontier.order, FRONTIER_ORDER_FOCUSED);
	ck_assert_str_eq(c.crawl.focus, "/tmp/topic.txt");
	ck_assert(c.crawl.focus_threshold == 0.05);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "focus_threshold", "0", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "order", "best", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "(expected bfs, depth or focused)"));
	ck_assert_int_eq(c.politeness.policy, DELAY_POLICY_ADAPTIVE);
	ck_assert(c.politeness.adaptive_factor == 2.5);
	ck_assert(c.politeness.adaptive_smoothing == 0.25);
	ck_assert(c.politeness.adaptive_slowdown == 4);
	ck_assert_int_eq(politeness_config_check(&c.politeness), 0);
	ck_assert_int_eq(
	        crawl_config_set(&c, "politeness", "adaptive_smoothing", "0", err, sizeof err),
	        CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(
	        crawl_config_set(&c, "politeness", "adaptive_slowdown", "0.5", err, sizeof err),
	        CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "policy", "smart", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "(expected fixed, ratio or adaptive)"));
	for (int kind = DELAY_POLICY_FIXED; kind <= DELAY_POLICY_ADAPTIVE; kind++) {
		const char *name = delay_policy_name((enum delay_policy_kind)kind);
		ck_assert_int_eq(
		        crawl_config_set(&c, "politeness", "policy", name, err, sizeof err),
		        CRAWL_CONFIG_OK);
		ck_assert_int_eq(c.politeness.policy, kind);
	}
	ck_assert_int_eq(crawl_config_set(&c, "politeness", "policy", "adaptive", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_int_eq(c.dns.prefer, IP_V6);
	ck_assert_int_eq(crawl_config_set(&c, "dns", "prefer", "IPv7", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "(expected ipv4 or ipv6)"));
	/* A proxy URL must name a scheme libcurl proxies with. */
	ck_assert_int_eq(crawl_config_set(&c, "fetch", "proxy", "ftp://p:21", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "socks5h://"));
	ck_assert_int_eq(
	        crawl_config_set(&c, "fetch", "proxy", "socks5h://127.0.0.1:1080", err, sizeof err),
	        CRAWL_CONFIG_OK);
	ck_assert_str_eq(c.fetch.proxy, "socks5h://127.0.0.1:1080");
	/* Page requisites: the extractor follows the crawl's key. */
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "page_requisites", "true", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert(c.links.requisites);
	ck_assert_uint_eq(c.frontier.mem_budget, 3u << 20);
	ck_assert_uint_eq(c.warc.max_file_bytes, 2u << 20);
	ck_assert(c.fetch.no_accept_encoding);
	ck_assert_uint_eq(c.scope.max_depth, 7);
	ck_assert_uint_eq(c.frontier.max_depth, 7);
	ck_assert_uint_eq(c.scope.max_url_len, 512);
	ck_assert_uint_eq(c.url.max_len, 512);
	ck_assert_uint_eq(c.sieve.max_url_len, 512);
	ck_assert_str_eq(c.fetch.user_agent, "bot/2 (x)");
	ck_assert_str_eq(c.warc.user_agent, "bot/2 (x)");
	ck_assert_str_eq(c.warc.dir, "/tmp/somewhere");
	ck_assert_str_eq(c.dns.server, "127.0.0.1:5353,[::1]:53");
	ck_assert_str_eq(c.dns.resolv_conf, "/tmp/resolv.test");
	ck_assert_str_eq(c.fetch.ca_file, "/tmp/ca.pem");
	ck_assert(!c.fetch.verify_tls);
	ck_assert_uint_eq(c.scope.n_domains, 2);
	ck_assert_str_eq(c.scope.domains[1], "b.test");
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "any_domain", "true", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_ptr_null(c.scope.domains);
	ck_assert_uint_eq(c.scope.n_domains, 0);
	/* written back in the key's own unit and sense, read back the same */
	char *path = write_tmp_config(&c);
	char *text = read_all(path);
	ck_assert_ptr_nonnull(strstr(text, "\naccept_encoding = false\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nip_delay_ms = 250\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nmem_mb = 3\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nwarc_max_mb = 2\n"));
	ck_assert_ptr_nonnull(strstr(text, "\npolicy = adaptive\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprefer = ipv6\n"));
	struct crawl_config back;
	ck_assert_int_eq(crawl_config_default(&back), 0);
	ck_assert_int_eq(crawl_config_load(&back, path, err, sizeof err), CRAWL_CONFIG_OK);
	ck_assert(back.fetch.no_accept_encoding);
	ck_assert_uint_eq(back.politeness.ip_delay_us, 250000);
	ck_assert(memcmp(&back.politeness, &c.politeness, sizeof c.politeness) == 0);
	ck_assert(!back.fetch.verify_tls);
	ck_assert_int_eq(back.dns.prefer, IP_V6);
	ck_assert_str_eq(back.fetch.ca_file, "/tmp/ca.pem");
	ck_assert_str_eq(back.dns.server, "127.0.0.1:5353,[::1]:53");
	ck_assert_str_eq(back.dns.resolv_conf, "/tmp/resolv.test");
	crawl_config_free(&back);
	unlink(path);
	free(path);
	free(text);
	/* a refused value changes nothing, shared copies included */
	ck_assert_int_eq(crawl_config_set(&c, "frontier", "max_url_len", "9", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_uint_eq(c.url.max_len, 512);
	crawl_config_free(&c);
}
END_TEST

/* A host suffix with an empty label (a lone '.', "a..b") or what no host
 * name holds is refused: an empty suffix would let every host in. */
/* A string value the file could not carry back is refused: an inline
 * comment (';' or '#' first or after a space) or space at either end; a
 * ';' inside a word (as in user agents) is fine. */
static int collect(void *ctx, const char *section, const char *key, const char *value)
{
	char *out = ctx;
	size_t n = strlen(out);
	snprintf(out + n, 4096 - n, "[%s]%s=%s|", section, key, value);
	return strcmp(key, "refuse") != 0;
}

/* The file reader: a value of 3,000 bytes reads back whole (inih's 200-byte
 * lines would cut it), a BOM, comments and inline comments, and the number
 * of the first bad line. */
START_TEST(ini_file_reads_long_lines_whole)
{
	char path[] = "/tmp/ini_file_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	FILE *f = fdopen(fd, "w");
	fputs("\xEF\xBB\xBF# comment\n\n[crawl]\nuser_agent = a;b (x; y) ; comment\n", f);
	fputs("  ; also a comment\n[ output ]\ndir = ", f);
	for (int i = 0; i < 3000; i++)
		fputc('d', f);
	fputs("\nempty =\nlast = x # gone\n", f);
	fclose(f);
	char *got = calloc(1, 4096);
	ck_assert_int_eq(ini_file_parse(path, collect, got), 0);
	ck_assert_ptr_nonnull(strstr(got, "[crawl]user_agent=a;b (x; y)|[output]dir=ddd"));
	ck_assert_ptr_nonnull(strstr(got, "dd|[output]empty=|[output]last=x|"));
	ck_assert_uint_eq(strlen(got), strlen("[crawl]user_agent=a;b (x; y)|") +
	                                       strlen("[output]dir=|") + 3000 +
	                                       strlen("[output]empty=|[output]last=x|"));
	f = fopen(path, "w");
	fputs("[a]\nx = 1\nno equals sign\n", f);
	fclose(f);
	got[0] = '\0';
	ck_assert_int_eq(ini_file_parse(path, collect, got), 3);
	f = fopen(path, "w");
	fputs("[a]\nx = 1\nrefuse = 2\ny = 3\n", f);
	fclose(f);
	got[0] = '\0';
	ck_assert_int_eq(ini_file_parse(path, collect, got), 3);
	ck_assert_ptr_null(strstr(got, "y=3"));
	unlink(path);
	ck_assert_int_eq(ini_file_parse(path, collect, got), -1);
	free(got);
}
END_TEST

START_TEST(string_values_survive_the_file)
{
	struct crawl_config c;
	char err[256];
	ck_assert_int_eq(crawl_config_default(&c), 0);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "user_agent",
	                                  "Mozilla/5.0 (compatible; bot/1.0)", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	const char *bad[] = { ";", "#x", "bot ;x", "bot #x", " bot", "bot " };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(
		        crawl_config_set(&c, "crawl", "user_agent", bad[i], err, sizeof err),
		        CRAWL_CONFIG_ERR_BAD_VALUE);
		ck_assert_ptr_nonnull(strstr(err, "comments"));
	}
	ck_assert_str_eq(c.crawl.user_agent, "Mozilla/5.0 (compatible; bot/1.0)");
	crawl_config_free(&c);
}
END_TEST

START_TEST(domains_refuse_what_is_no_host_suffix)
{
	struct crawl_config c;
	char err[256];
	ck_assert_int_eq(crawl_config_default(&c), 0);
	ck_assert_int_eq(
	        crawl_config_set(&c, "crawl", "domains", "A.test, .b.test.", err, sizeof err),
	        CRAWL_CONFIG_OK);
	ck_assert_uint_eq(c.crawl.n_domains, 2);
	ck_assert_str_eq(c.crawl.domains[0], "a.test");
	ck_assert_str_eq(c.crawl.domains[1], "b.test");
	const char *bad[] = { "a.test, .", "a.test (b)", "x/y", "..a.test", "a..test", "a.test.." };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(crawl_config_set(&c, "crawl", "domains", bad[i], err, sizeof err),
		                 CRAWL_CONFIG_ERR_BAD_VALUE);
		ck_assert_ptr_nonnull(strstr(err, "not a host suffix"));
		ck_assert_uint_eq(c.crawl.n_domains, 2); /* unchanged */
	}
	crawl_config_free(&c);
}
END_TEST

/* wget's keys add up as wget's flags do, are checked as the rules they
 * make, survive the file a resumed crawl reads, and reach the rules'
 * config struct. */
START_TEST(wget_keys_join_and_check)
{
	struct crawl_config c, d;
	char err[512];
	ck_assert_int_eq(crawl_config_default(&c), 0);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "accept", "pdf", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "accept", "*.ps", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_str_eq(c.rules.wget[URL_RULES_WGET_ACCEPT], "pdf,*.ps");
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "reject_regex", "a", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "reject_regex", "b+", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_str_eq(c.crawl.rules_wget[URL_RULES_WGET_REJECT_REGEX], "(?:a)|(?:b+)");
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "accept_regex", "(", err, sizeof err),
	                 CRAWL_CONFIG_ERR_BAD_VALUE);
	ck_assert_msg(strstr(err, "accept_regex: --accept-regex: regex: missing closing"), "%s",
	              err);
	ck_assert_str_eq(c.crawl.rules_wget[URL_RULES_WGET_ACCEPT_REGEX], "");
	ck_assert_int_eq(crawl_config_set(&c, "crawl", "rules", "/x/rules.txt", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_str_eq(c.rules.file, "/x/rules.txt");
	char *p = write_tmp_config(&c);
	ck_assert_int_eq(crawl_config_default(&d), 0);
	ck_assert_int_eq(crawl_config_load(&d, p, err, sizeof err), CRAWL_CONFIG_OK);
	ck_assert_str_eq(d.rules.wget[URL_RULES_WGET_ACCEPT], "pdf,*.ps");
	ck_assert_str_eq(d.rules.wget[URL_RULES_WGET_REJECT_REGEX], "(?:a)|(?:b+)");
	ck_assert_str_eq(d.rules.file, "/x/rules.txt");
	ck_assert_int_eq(crawl_config_set(&d, "crawl", "accept", "", err, sizeof err),
	                 CRAWL_CONFIG_OK);
	ck_assert_str_eq(d.rules.wget[URL_RULES_WGET_ACCEPT], "");
	unlink(p);
	free(p);
	crawl_config_free(&c);
	crawl_config_free(&d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("keys");
	tcase_add_test(tc, table_and_default_conf_list_the_same_keys);
	tcase_add_test(tc, default_conf_states_the_defaults);
	tcase_add_test(tc, write_and_read_back_the_defaults);
	tcase_add_test(tc, write_and_read_back_shipped_files);
	tcase_add_test(tc, keys_fill_the_module_structs);
	tcase_add_test(tc, domains_refuse_what_is_no_host_suffix);
	tcase_add_test(tc, string_values_survive_the_file);
	tcase_add_test(tc, ini_file_reads_long_lines_whole);
	tcase_add_test(tc, wget_keys_join_and_check);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
