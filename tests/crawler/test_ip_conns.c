/* test_ip_conns.c: the per-address count of open connections (ip_conns.h)
 * against a plain list of (fd, address, shut) kept by the test. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "crawler/net/ip_conns.h"

static struct sockaddr_in v4(const char *ip)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static struct sockaddr_in6 v6(const char *ip)
{
	struct sockaddr_in6 a;
	memset(&a, 0, sizeof a);
	a.sin6_family = AF_INET6;
	inet_pton(AF_INET6, ip, &a.sin6_addr);
	return a;
}

static int busy_fd = -1;

static bool one_busy(void *ctx, int fd)
{
	(void)ctx;
	return fd == busy_fd;
}

static bool none_busy(void *ctx, int fd)
{
	(void)ctx;
	(void)fd;
	return false;
}

/* The table's memory account follows the sockets it records: a 32-byte
 * socket record and a 40-byte address record, 48 bytes each as malloc
 * rounds them; back to where it was once they are closed. */
START_TEST(memory_account)
{
	struct ip_conns *c = ip_conns_create();
	ck_assert_ptr_nonnull(c);
	struct sockaddr_in a[10];
	char ip[32];
	for (int i = 0; i < 10; i++) {
		snprintf(ip, sizeof ip, "127.0.2.%d", i + 1);
		a[i] = v4(ip);
	}
	/* descriptors are only numbers to the table */
	ck_assert_int_eq(ip_conns_opened(c, 10, (struct sockaddr *)&a[0]), 0);
	ip_conns_closed(c, 10);
	uint64_t b1 = ip_conns_bytes(c);
	for (int fd = 10; fd < 110; fd++)
		ck_assert_int_eq(ip_conns_opened(c, fd, (struct sockaddr *)&a[fd % 10]), 0);
	ck_assert_uint_eq(ip_conns_bytes(c) - b1, 100 * 48 + 10 * 48);
	for (int fd = 10; fd < 110; fd++)
		ip_conns_closed(c, fd);
	ck_assert_uint_eq(ip_conns_bytes(c), b1);
	ip_conns_destroy(c);
}
END_TEST

START_TEST(counts_per_address)
{
	struct ip_conns *c = ip_conns_create();
	ck_assert_ptr_nonnull(c);
	int fds[6];
	struct sockaddr_in a = v4("127.0.1.1"), b = v4("127.0.1.2");
	struct sockaddr_in6 six = v6("::1");
	for (int i = 0; i < 6; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(fds[i], 0);
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(ip_conns_opened(c, fds[i], (struct sockaddr *)&a), 0);
	ck_assert_int_eq(ip_conns_opened(c, fds[4], (struct sockaddr *)&b), 0);
	ck_assert_int_eq(ip_conns_opened(c, fds[5], (struct sockaddr *)&six), 0);
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.1"), 4);
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.2"), 1);
	ck_assert_uint_eq(ip_conns_count(c, "::1"), 1);
	ck_assert_uint_eq(ip_conns_count(c, "::ffff:127.0.1.2"), 1); /* same address */
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.3"), 0);
	ck_assert_uint_eq(ip_conns_count(c, "not an address"), 0);

	/* The newest idle one is shut (fds[3] is busy, so fds[2]); a shut
	 * connection no longer counts, and is not shut twice. */
	busy_fd = fds[3];
	ck_assert(ip_conns_shut_idle(c, "127.0.1.1", one_busy, NULL));
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.1"), 3);
	char byte;
	ck_assert_int_eq(recv(fds[2], &byte, 1, MSG_DONTWAIT), 0); /* shut down: EOF */
	ck_assert(ip_conns_shut_idle(c, "127.0.1.1", one_busy, NULL));
	ck_assert(ip_conns_shut_idle(c, "127.0.1.1", one_busy, NULL));
	ck_assert(!ip_conns_shut_idle(c, "127.0.1.1", one_busy, NULL)); /* only busy left */
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.1"), 1);
	ck_assert_uint_eq(ip_conns_shut_total(c), 3);
	ck_assert(!ip_conns_shut_idle(c, "127.0.1.9", none_busy, NULL));

	/* Closing: a shut socket does not count twice; an unknown fd is ignored. */
	ip_conns_closed(c, fds[2]);
	ip_conns_closed(c, fds[3]);
	ip_conns_closed(c, 100000);
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.1"), 0);
	/* A descriptor reopened to another address without a close moves. */
	ck_assert_int_eq(ip_conns_opened(c, fds[4], (struct sockaddr *)&a), 0);
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.2"), 0);
	ck_assert_uint_eq(ip_conns_count(c, "127.0.1.1"), 1);
	ip_conns_destroy(c);
	ip_conns_destroy(NULL);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
}
END_TEST

/* Many addresses (the table grows) and many sockets: counts agree with a
 * plain tally, before and after closing half. */
START_TEST(many_addresses)
{
	enum { N = 600 };
	struct ip_conns *c = ip_conns_create();
	int fds[N];
	char ip[32];
	for (int i = 0; i < N; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		ck_assert_int_ge(fds[i], 0);
		snprintf(ip, sizeof ip, "10.0.0.%d", i % 200);
		struct sockaddr_in a = v4(ip);
		ck_assert_int_eq(ip_conns_opened(c, fds[i], (struct sockaddr *)&a), 0);
	}
	for (int k = 0; k < 200; k++) {
		snprintf(ip, sizeof ip, "10.0.0.%d", k);
		ck_assert_uint_eq(ip_conns_count(c, ip), 3);
	}
	for (int i = 0; i < N; i += 2)
		ip_conns_closed(c, fds[i]);
	size_t total = 0;
	for (int k = 0; k < 200; k++) {
		snprintf(ip, sizeof ip, "10.0.0.%d", k);
		total += ip_conns_count(c, ip);
	}
	ck_assert_uint_eq(total, N / 2);
	ip_conns_destroy(c);
	for (int i = 0; i < N; i++)
		close(fds[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ip_conns");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, counts_per_address);
	tcase_add_test(tc, many_addresses);
	tcase_add_test(tc, memory_account);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
