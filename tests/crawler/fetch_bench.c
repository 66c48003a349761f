/* fetch_bench.c: throughput and concurrency of the fetch engine (with the
 * DNS resolver) against the test web in another process.
 * Usage: fetch_bench TESTWEB TOTAL CONCURRENCY
 * Prints one line: fetched, errors, seconds, pages/s, MB/s, peak in flight.
 * Exits non-zero when a fetch fails or the peak concurrency was not reached. */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "crawler/net/dns.h"
#include "crawler/net/fetch.h"

extern char **environ;

#define HOSTS 50
#define PAGES 200

static struct fetch_engine *fe;
static char ips[HOSTS][IP_ADDR_STRLEN];
static int http_port;
static long total, started, done_ok, done_err, resolved;
static size_t peak;
static uint64_t bytes;

static void start_next(void)
{
	char url[256];
	while (started < total && fetch_engine_in_flight(fe) < SIZE_MAX) {
		long i = started;
		int h = (int)(i % HOSTS);
		long k = i / HOSTS;
		int j = (int)(1 + k % (PAGES - 1));
		if (j % 10 == 7)
			j++;
		/* query variants make repeated pages distinct URLs */
		snprintf(url, sizeof(url), "http://h%d.web.test:%d/s%d/p%d.html?q=%ld", h,
		         http_port, j % 5, j, 1 + (k / PAGES) % 2);
		struct fetch_request req = { .url = url, .ip = ips[h] };
		enum fetch_error e = fetch_engine_start(fe, &req);
		if (e == FETCH_ERR_BUSY)
			break;
		if (e != FETCH_OK) {
			fprintf(stderr, "start: %s\n", fetch_strerror(e));
			exit(1);
		}
		started++;
		if (fetch_engine_in_flight(fe) > peak)
			peak = fetch_engine_in_flight(fe);
	}
}

static void on_done(void *ctx, struct fetch_result *r)
{
	(void)ctx;
	if (r->error == FETCH_OK && r->status == 200) {
		done_ok++;
	} else {
		if (done_err < 5)
			fprintf(stderr, "%s: %s %ld %s\n", r->url, fetch_strerror(r->error),
			        r->status, r->error_detail);
		done_err++;
	}
	bytes += r->body.len;
	fetch_result_free(r);
	start_next();
}

static void on_dns(void *ctx, enum dns_error err, const char *host, const struct ip_addr *a,
                   size_t n)
{
	int h = (int)(intptr_t)ctx;
	(void)host;
	if (err != DNS_OK || n == 0) {
		fprintf(stderr, "dns %s: %s\n", host, dns_strerror(err));
		exit(1);
	}
	ip_addr_format(&a[0], ips[h], sizeof(ips[h]));
	if (++resolved == HOSTS)
		start_next();
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s TESTWEB TOTAL CONCURRENCY\n", argv[0]);
		return 2;
	}
	total = strtol(argv[2], NULL, 10);
	long conc = strtol(argv[3], NULL, 10);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	char dir[] = "/tmp/fetch-bench-XXXXXX", ready[128], hosts[32], pages[32], mc[32];
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(hosts, sizeof(hosts), "%d", HOSTS);
	snprintf(pages, sizeof(pages), "%d", PAGES);
	snprintf(mc, sizeof(mc), "%ld", conc + 100);
	char *sargv[] = { argv[1],       "--hosts", hosts,          "--pages", pages,
		          "--max-conns", mc,        "--ready-file", ready,     NULL };
	pid_t pid;
	if (posix_spawn(&pid, argv[1], NULL, NULL, sargv, environ) != 0)
		return 1;
	int dns_port = 0;
	for (int i = 0; i < 400 && http_port == 0; i++) {
		FILE *f = fopen(ready, "r");
		char line[128];
		if (f == NULL) {
			usleep(50000);
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "http_port=", 10) == 0)
				http_port = (int)strtol(line + 10, NULL, 10);
			if (strncmp(line, "dns_port=", 9) == 0)
				dns_port = (int)strtol(line + 9, NULL, 10);
		}
		fclose(f);
	}
	unlink(ready);
	rmdir(dir);
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct dns_resolver *dr = NULL;
	char server[64];
	snprintf(server, sizeof(server), "127.0.0.1:%d", dns_port);
	struct dns_config dc = { .server = server };
	struct fetch_config fc = { .allow_private_networks = true,
		                   .max_connections = (size_t)conc,
		                   .connect_timeout_ms = 30000,
		                   .total_timeout_ms = 120000 };
	if (dns_resolver_create(&loop, &dc, &dr) != DNS_OK ||
	    fetch_engine_create(&loop, &fc, on_done, NULL, &fe) != FETCH_OK)
		return 1;
	uint64_t t0 = uv_hrtime();
	for (int h = 0; h < HOSTS; h++) {
		char name[64];
		snprintf(name, sizeof(name), "h%d.web.test", h);
		dns_resolve(dr, name, on_dns, (void *)(intptr_t)h, uv_now(&loop));
	}
	uv_run(&loop, UV_RUN_DEFAULT);
	double secs = (double)(uv_hrtime() - t0) / 1e9;
	printf("fetched=%ld errors=%ld seconds=%.3f pages_per_s=%.0f MB_per_s=%.1f "
	       "peak_in_flight=%zu\n",
	       done_ok, done_err, secs, (double)done_ok / secs, (double)bytes / secs / 1e6, peak);
	fetch_engine_destroy(fe);
	dns_resolver_destroy(dr);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	long want_peak = conc < total ? conc : total;
	return (done_err == 0 && done_ok == total && (long)peak >= want_peak) ? 0 : 1;
}
