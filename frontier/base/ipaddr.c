/*
 * ipaddr.c: IP addresses of both families (see ipaddr.h).
 */
#include "frontier/base/ipaddr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(struct ip_addr) == 17, "struct ip_addr must have no padding");

int ip_addr_parse(const char *s, size_t len, struct ip_addr *out)
{
	char text[IP_ADDR_STRLEN];
	memset(out, 0, sizeof *out);
	if (s == NULL)
		return -1;
	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		s++;
		len -= 2;
		if (memchr(s, ':', len) == NULL)
			return -1; /* brackets hold only IPv6 */
	}
	if (len == 0 || len >= sizeof text)
		return -1;
	memcpy(text, s, len);
	text[len] = '\0';
	if (inet_pton(AF_INET, text, out->b) == 1) {
		out->family = IP_V4;
		return 0;
	}
	if (inet_pton(AF_INET6, text, out->b) == 1) {
		out->family = IP_V6;
		return 0;
	}
	memset(out, 0, sizeof *out);
	return -1;
}

void ip_addr_set(struct ip_addr *out, enum ip_family family, const void *bytes)
{
	memset(out, 0, sizeof *out);
	if (family != IP_V4 && family != IP_V6)
		return;
	out->family = (uint8_t)family;
	memcpy(out->b, bytes, family == IP_V4 ? 4 : 16);
}

void ip_addr_from_v4(struct ip_addr *out, uint32_t v4)
{
	uint8_t b[4] = { (uint8_t)(v4 >> 24), (uint8_t)(v4 >> 16), (uint8_t)(v4 >> 8),
		         (uint8_t)v4 };
	ip_addr_set(out, IP_V4, b);
}

char *ip_addr_format(const struct ip_addr *a, char *buf, size_t cap)
{
	if (cap == 0)
		return buf;
	buf[0] = '\0';
	if (a->family == IP_V4 || a->family == IP_V6)
		if (inet_ntop(a->family == IP_V4 ? AF_INET : AF_INET6, a->b, buf, (socklen_t)cap) ==
		    NULL)
			buf[0] = '\0';
	return buf;
}

/* The IPv4 address at byte offset off of b, XORed with x. */
static uint32_t v4_at(const uint8_t b[16], size_t off, uint32_t x)
{
	return ((uint32_t)b[off] << 24 | (uint32_t)b[off + 1] << 16 | (uint32_t)b[off + 2] << 8 |
	        b[off + 3]) ^
	       x;
}

size_t ip_v6_embedded_v4(const uint8_t b[16], bool compat, uint32_t v4[2])
{
	static const uint8_t zero[12];
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t translated[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0 };
	static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	if (memcmp(b, mapped, 12) == 0 || memcmp(b, translated, 12) == 0 ||
	    memcmp(b, nat64, 12) == 0 || (compat && memcmp(b, zero, 12) == 0)) {
		v4[0] = v4_at(b, 12, 0);
		return 1;
	}
	if (b[0] == 0x20 && b[1] == 0x02) {
		v4[0] = v4_at(b, 2, 0);
		return 1;
	}
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		v4[0] = v4_at(b, 12, 0xffffffffu);
		v4[1] = v4_at(b, 4, 0);
		return 2;
	}
	return 0;
}

void ip_addr_group(const struct ip_addr *a, struct ip_addr *group)
{
	uint32_t v4[2];
	*group = *a;
	if (a->family != IP_V6)
		return;
	if (ip_v6_embedded_v4(a->b, false, v4) > 0)
		ip_addr_from_v4(group, v4[0]);
	else
		memset(group->b + IP_V6_GROUP_BITS / 8, 0, 16 - IP_V6_GROUP_BITS / 8);
}

bool ip_addr_equal(const struct ip_addr *a, const struct ip_addr *b)
{
	return memcmp(a, b, sizeof *a) == 0;
}

uint32_t ip_addr_hash(const struct ip_addr *a)
{
	/* FNV-1a over the 17 bytes, then a final mix for the low bits. */
	const uint8_t *p = (const uint8_t *)a;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < sizeof *a; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h ^ (h >> 15);
}
