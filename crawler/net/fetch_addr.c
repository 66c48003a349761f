/*
 * fetch_addr.c: the fetch engine's address policy (see fetch.h): the
 * special-purpose IPv4 and IPv6 blocks a crawl of the public web refuses,
 * and the IPv6 forms that carry an IPv4 address, judged by that address.
 */
#include "crawler/net/fetch.h"
#include "frontier/base/ipaddr.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

/* The IPv4 block a.b.c.d/bits as a network and a mask (bits 1..32). */
#define CIDR4(a, b, c, d, bits)                                                                    \
	{                                                                                          \
		(uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d),    \
		        0xffffffffu << (32 - (bits))                                               \
	}

static bool v4_private(uint32_t a)
{
	/* The special-purpose blocks (RFC 6890): "this network", private,
	 * carrier-grade NAT, loopback, link-local, IETF assignments,
	 * documentation, benchmarking, multicast, reserved and broadcast. */
	static const struct {
		uint32_t net, mask;
	} ranges[] = {
		CIDR4(0, 0, 0, 0, 8),     CIDR4(10, 0, 0, 0, 8),      CIDR4(100, 64, 0, 0, 10),
		CIDR4(127, 0, 0, 0, 8),   CIDR4(169, 254, 0, 0, 16),  CIDR4(172, 16, 0, 0, 12),
		CIDR4(192, 0, 0, 0, 24),  CIDR4(192, 0, 2, 0, 24),    CIDR4(192, 168, 0, 0, 16),
		CIDR4(198, 18, 0, 0, 15), CIDR4(198, 51, 100, 0, 24), CIDR4(203, 0, 113, 0, 24),
		CIDR4(224, 0, 0, 0, 4),   CIDR4(240, 0, 0, 0, 4),
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if ((a & ranges[i].mask) == ranges[i].net)
			return true;
	return false;
}

static bool v6_private(const uint8_t b[16])
{
	/* Blocks refused outright (RFC 6890 and successors): unspecified and
	 * loopback (::/127), discard-only 100::/64, NAT64 local use
	 * 64:ff9b:1::/48, benchmarking 2001:2::/48, ORCHIDv2 2001:20::/28,
	 * documentation 2001:db8::/32 and 3fff::/20, unique-local fc00::/7,
	 * link-local fe80::/10, site-local fec0::/10, multicast ff00::/8. */
	static const struct {
		uint8_t prefix[16];
		unsigned bits;
	} blocks[] = {
		{ { 0 }, 127 },
		{ { 0x01, 0x00 }, 64 },
		{ { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48 },
		{ { 0x20, 0x01, 0x00, 0x02 }, 48 },
		{ { 0x20, 0x01, 0x00, 0x20 }, 28 },
		{ { 0x20, 0x01, 0x0d, 0xb8 }, 32 },
		{ { 0x3f, 0xff }, 20 },
		{ { 0xfc }, 7 },
		{ { 0xfe, 0x80 }, 10 },
		{ { 0xfe, 0xc0 }, 10 },
		{ { 0xff }, 8 },
	};
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		unsigned full = blocks[i].bits / 8, rest = blocks[i].bits % 8;
		if (memcmp(b, blocks[i].prefix, full) != 0)
			continue;
		uint8_t mask = (uint8_t)(0xff00u >> rest);
		if (rest == 0 || (b[full] & mask) == (blocks[i].prefix[full] & mask))
			return true;
	}
	/* Forms that carry an IPv4 address (the deprecated IPv4-compatible
	 * ::a.b.c.d too): judged by it, by either of Teredo's two. */
	uint32_t v4[2];
	size_t n = ip_v6_embedded_v4(b, true, v4);
	for (size_t i = 0; i < n; i++)
		if (v4_private(v4[i]))
			return true;
	return false;
}

bool fetch_addr_is_private(const char *ip)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (ip == NULL)
		return true;
	if (inet_pton(AF_INET, ip, &a4) == 1)
		return v4_private(ntohl(a4.s_addr));
	if (inet_pton(AF_INET6, ip, &a6) == 1)
		return v6_private(a6.s6_addr);
	return true;
}

bool fetch_sockaddr_is_private(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_private(
		        ntohl(((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return v6_private(
		        ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr);
	return true;
}
