/* test_testweb_fetch.c: dns.h + fetch.h + decode.h together against the
 * project's test web (tests/testweb): names resolved through its UDP DNS
 * responder only, pages and fault hosts fetched over loopback.
 * Usage: test_testweb_fetch PATH_TO_TESTWEB */
#include <check.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "crawler/net/decode.h"
#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"

extern char **environ;
static const char *testweb_path;
static pid_t server_pid;
static int http_port, dns_port;
static char dir[128];

static void start_testweb(void)
{
	char ready[256], hp[32];
	snprintf(dir, sizeof(dir), "/tmp/crawler-tw-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(hp, sizeof(hp), "%d", 0);
	char *argv[] = { (char *)testweb_path,
		         "--hosts",
		         "7",
		         "--pages",
		         "5",
		         "--fault",
		         "h3=gzipbomb",
		         "--fault",
		         "h4=hugeheaders",
		         "--fault",
		         "h5=badchunk",
		         "--fault",
		         "h6=slow",
		         "--ready-file",
		         ready,
		         NULL };
	ck_assert_int_eq(posix_spawn(&server_pid, testweb_path, NULL, NULL, argv, environ), 0);
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen(ready, "r");
		if (f != NULL) {
			char line[128];
			while (fgets(line, sizeof(line), f)) {
				if (strncmp(line, "http_port=", 10) == 0)
					http_port = (int)strtol(line + 10, NULL, 10);
				if (strncmp(line, "dns_port=", 9) == 0)
					dns_port = (int)strtol(line + 9, NULL, 10);
			}
			fclose(f);
			unlink(ready);
			break;
		}
		usleep(50000);
	}
	ck_assert_int_gt(http_port, 0);
	ck_assert_int_gt(dns_port, 0);
}

static void stop_testweb(void)
{
	int status;
	kill(server_pid, SIGTERM);
	waitpid(server_pid, &status, 0);
	rmdir(dir);
}

struct target {
	const char *host;
	const char *path;
	enum dns_error dns_err;
	struct fetch_result *res;
	int started;
};

struct world {
	struct fetch_engine *fe;
	struct target *t;
};

static struct world world;

static void on_fetched(void *ctx, struct fetch_result *r)
{
	struct world *w = ctx;
	struct target *t = &w->t[(uintptr_t)r->user];
	t->res = r;
}

static void on_resolved(void *ctx, enum dns_error err, const char *host,
                        const struct ip_addr *addrs, size_t n)
{
	struct target *t = ctx;
	char url[256], ip[IP_ADDR_STRLEN];
	(void)host;
	t->dns_err = err;
	if (err != DNS_OK || n == 0)
		return;
	snprintf(url, sizeof(url), "http://%s:%d%s", t->host, http_port, t->path);
	ip_addr_format(&addrs[0], ip, sizeof(ip));
	struct fetch_request req = { .url = url,
		                     .ip = ip,
		                     .user = (void *)(uintptr_t)(t - world.t) };
	ck_assert_int_eq(fetch_engine_start(world.fe, &req), FETCH_OK);
	t->started = 1;
}

START_TEST(testweb_faults)
{
	struct target t[] = {
		{ .host = "h0.web.test", .path = "/" },
		{ .host = "H1.web.test", .path = "/robots.txt" },
		{ .host = "h2.web.test", .path = "/r/1" },
		{ .host = "h3.web.test", .path = "/" },
		{ .host = "h4.web.test", .path = "/" },
		{ .host = "h5.web.test", .path = "/" },
		{ .host = "h6.web.test", .path = "/" },
		{ .host = "nx1.web.test", .path = "/" },
		{ .host = "h0.web.test", .path = "/gone/x" },
	};
	size_t nt = sizeof(t) / sizeof(t[0]);
	uv_loop_t loop;
	struct dns_resolver *dr = NULL;
	char server[64];
	start_testweb();
	uv_loop_init(&loop);
	snprintf(server, sizeof(server), "127.0.0.1:%d", dns_port);
	struct dns_config dc = { .server = server, .timeout_ms = 1000 };
	ck_assert_int_eq(dns_resolver_create(&loop, &dc, &dr), DNS_OK);
	struct fetch_config fc = { .allow_private_networks = true,
		                   .total_timeout_ms = 3000,
		                   .low_speed_limit = 100,
		                   .low_speed_time_s = 2 };
	world.t = t;
	ck_assert_int_eq(fetch_engine_create(&loop, &fc, on_fetched, &world, &world.fe), FETCH_OK);
	for (size_t i = 0; i < nt; i++)
		ck_assert_int_eq(dns_resolve(dr, t[i].host, on_resolved, &t[i], uv_now(&loop)),
		                 DNS_OK);
	uv_run(&loop, UV_RUN_DEFAULT);

	struct dns_stats ds;
	dns_resolver_stats(dr, &ds);
	ck_assert_uint_eq(ds.queries, 8); /* h0 twice: one query (coalesced) */
	ck_assert_int_eq(t[7].dns_err, DNS_ERR_NOTFOUND);
	ck_assert(!t[7].started);
	for (size_t i = 0; i < nt; i++)
		if (i != 7)
			ck_assert_msg(t[i].res != NULL, "no result for %zu", i);
	/* h0 front page: an HTML page, maybe gzip-encoded; decodes to HTML. */
	struct fetch_result *r = t[0].res;
	ck_assert_int_eq(r->error, FETCH_OK);
	ck_assert_int_eq(r->status, 200);
	struct decode_output out;
	ck_assert_int_eq(decode_body(r->content_encoding, r->body.data, r->body.len, 0, &out),
	                 DECODE_OK);
	ck_assert_ptr_nonnull(strstr((char *)out.data, "<a "));
	free(out.data);
	ck_assert_str_eq(r->ip, "127.0.1.1");
	ck_assert_int_eq(t[1].res->error, FETCH_OK);
	ck_assert_str_eq(t[1].res->ip, "127.0.1.2");
	/* Redirect reported, not followed. */
	ck_assert_int_eq(t[2].res->status, 301);
	ck_assert_ptr_nonnull(t[2].res->location);
	/* gzip bomb: fetched as is (~2 MB), decoding stops at the cap. */
	r = t[3].res;
	ck_assert_int_eq(r->error, FETCH_OK);
	ck_assert_str_eq(r->content_encoding, "gzip");
	ck_assert_int_eq(
	        decode_body(r->content_encoding, r->body.data, r->body.len, 4u << 20, &out),
	        DECODE_OK);
	ck_assert(out.truncated);
	ck_assert_uint_eq(out.len, 4u << 20);
	free(out.data);
	ck_assert_int_eq(t[4].res->error, FETCH_ERR_HEADER_TOO_LARGE);
	ck_assert_msg(t[5].res->error == FETCH_ERR_BAD_RESPONSE ||
	                      t[5].res->error == FETCH_ERR_RECV,
	              "badchunk gave %s", fetch_strerror(t[5].res->error));
	ck_assert_msg(t[6].res->error == FETCH_ERR_TIMEOUT || t[6].res->error == FETCH_ERR_TOO_SLOW,
	              "slow gave %s", fetch_strerror(t[6].res->error));
	ck_assert_int_eq(t[8].res->status, 404);

	for (size_t i = 0; i < nt; i++)
		fetch_result_free(t[i].res);
	fetch_engine_destroy(world.fe);
	dns_resolver_destroy(dr);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	stop_testweb();
}
END_TEST

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s TESTWEB\n", argv[0]);
		return 2;
	}
	testweb_path = argv[1];
	Suite *s = suite_create("testweb_fetch");
	TCase *tc = tcase_create("faults");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, testweb_faults);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
