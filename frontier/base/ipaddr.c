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

void ip_addr_group(const struct ip_addr *a, struct ip_addr *group)
{
	*group = *a;
	if (a->family == IP_V6)
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
