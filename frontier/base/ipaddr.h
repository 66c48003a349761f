/*
 * ipaddr.h: an IP address of either family as the crawler keeps it: a
 * host's DNS answer (dns.h), the politeness IP groups (politeness.h), the
 * address a fetch is pinned to (fetch.h).
 *
 * Data structure: struct ip_addr is a family (IP_V4 or IP_V6, IP_NONE for
 * no address) and 16 bytes in network order. An IPv4 address fills the
 * first 4 bytes. Invariant: bytes past the family's length are zero and
 * the struct has no padding (17 bytes), so equality is one memcmp and a
 * hash reads every byte.
 *
 * Grouping for per-IP politeness (ip_addr_group): an IPv4 address is its
 * own group; an IPv6 address counts as its /64 (IP_V6_GROUP_BITS). A
 * server usually gets a whole /64 (the smallest prefix SLAAC works on, and
 * what providers hand a machine), so its addresses share one group, and a
 * site cannot spread one machine's load over many addresses of it; a /128
 * key would let the crawler hit one server from 2^64 "different" IPs. An
 * IPv6 address that carries an IPv4 one (ip_v6_embedded_v4: mapped,
 * translated, NAT64, 6to4, Teredo) reaches that IPv4 machine, and is
 * grouped as that IPv4 address.
 *
 * Pure functions, no allocation, any thread.
 */
#ifndef FRONTIER_BASE_IPADDR_H
#define FRONTIER_BASE_IPADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ip_family { IP_NONE = 0, IP_V4 = 4, IP_V6 = 6 };

/* Prefix length an IPv6 address is grouped by for per-IP politeness. */
#define IP_V6_GROUP_BITS 64

/* Longest text form, NUL included ("ffff:...:255.255.255.255"). */
#define IP_ADDR_STRLEN 46

struct ip_addr {
	uint8_t family; /* enum ip_family */
	uint8_t b[16];  /* network order; zero past the family's length */
};

/* Parses an IPv4 dotted quad, an IPv6 address, or one in brackets
 * ("[::1]", as URL hosts carry it), len bytes at s (no NUL needed).
 * 0 and *out set, or -1 (*out zeroed). */
int ip_addr_parse(const char *s, size_t len, struct ip_addr *out);

/* The address from its binary form: 4 bytes for IP_V4, 16 for IP_V6. */
void ip_addr_set(struct ip_addr *out, enum ip_family family, const void *bytes);

/* The IPv4 address v4 (host byte order). */
void ip_addr_from_v4(struct ip_addr *out, uint32_t v4);

/* Text form (dotted quad; RFC 5952 IPv6, no brackets) into buf (cap >=
 * IP_ADDR_STRLEN); "" for IP_NONE. Returns buf. */
char *ip_addr_format(const struct ip_addr *a, char *buf, size_t cap);

/* The per-IP politeness group of a: itself for IPv4, the IPv4 address an
 * IPv6 one carries (the first of ip_v6_embedded_v4's, the deprecated
 * IPv4-compatible form left out), else its /64 (low bits zeroed). */
void ip_addr_group(const struct ip_addr *a, struct ip_addr *group);

/*
 * The IPv4 addresses (host byte order) an IPv6 address b (16 bytes,
 * network order) carries, into v4[0..returned): one for IPv4-mapped
 * ::ffff:a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96
 * and 6to4 2002:AABB:CCDD::/48; two for Teredo 2001::/32 (the client,
 * inverted in the last 32 bits, then the server in bits 32..63); with
 * compat, one for the deprecated IPv4-compatible ::a.b.c.d too; else none.
 */
size_t ip_v6_embedded_v4(const uint8_t b[16], bool compat, uint32_t v4[2]);

bool ip_addr_equal(const struct ip_addr *a, const struct ip_addr *b);

/* A 32-bit hash of every byte (for open addressing). */
uint32_t ip_addr_hash(const struct ip_addr *a);

#endif
