/*
 * visit_ckpt.c: what a checkpoint saves of the visits: per host its DNS
 * answer and politeness state, and the pages in flight (see visit.h).
 */
#include "crawler/visit.h"
#include "crawler/visit_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "frontier/base/recfile.h"

/* ---- checkpoints ---- */

/* How a host's address is saved: the first checkpoints had an IPv4
 * address (u32) and a has_ip byte of 0 or 1; HOST_ADDR_SAVED (2) is
 * followed by the address of either family and the host's families and
 * failed masks (bytes), and the u32 is then 0. Both read back. */
#define HOST_ADDR_SAVED 2

static void host_addr_save(struct recfile_writer *w, const struct politeness_host_saved *ps,
                           const struct host_state *hs)
{
	recfile_put_u32(w, 0);
	recfile_put_u8(w, ps->has_ip ? HOST_ADDR_SAVED : 0);
	if (!ps->has_ip)
		return;
	recfile_put_u8(w, ps->addr.family);
	recfile_put_bytes(w, ps->addr.b, sizeof ps->addr.b);
	recfile_put_u8(w, hs ? hs->families : 0);
	recfile_put_u8(w, hs ? hs->failed : 0);
}

/* Reads what host_addr_save wrote (or the first form). 0, or -1. */
static int host_addr_load(struct recfile_reader *rd, struct politeness_host_saved *ps,
                          struct host_state *hs)
{
	uint32_t v4, len;
	uint8_t family;
	uint8_t b[sizeof ps->addr.b];
	memset(&ps->addr, 0, sizeof ps->addr);
	if (recfile_get_u32(rd, &v4) != RECFILE_OK || recfile_get_u8(rd, &ps->has_ip) != RECFILE_OK)
		return -1;
	if (ps->has_ip == 1) {
		ip_addr_from_v4(&ps->addr, v4);
		hs->families = visit_family_bit(IP_V4);
		return 0;
	}
	if (ps->has_ip != HOST_ADDR_SAVED)
		return ps->has_ip == 0 ? 0 : -1;
	if (recfile_get_u8(rd, &family) != RECFILE_OK ||
	    recfile_get_bytes(rd, b, sizeof b, &len) != RECFILE_OK || len != sizeof b ||
	    (family != IP_V4 && family != IP_V6) ||
	    recfile_get_u8(rd, &hs->families) != RECFILE_OK ||
	    recfile_get_u8(rd, &hs->failed) != RECFILE_OK)
		return -1;
	ip_addr_set(&ps->addr, (enum ip_family)family, b);
	ps->has_ip = 1;
	return 0;
}

void visit_save(struct visit *v, struct recfile_writer *w, uint64_t now)
{
	uint32_t nhosts = frontier_host_count(v->p.frontier), n = 0;
	recfile_put_u32(w, nhosts);
	for (uint32_t h = 0; h < nhosts; h++) {
		struct politeness_host_saved ps;
		const struct host_state *hs = visit_host_state_if_any(v, h);
		politeness_host_save(v->p.pol, h, now, &ps);
		/* a lookup in progress is made again */
		recfile_put_u8(w, hs && (hs->dns == HOST_DNS_OK || hs->dns == HOST_DNS_FAILED)
		                          ? hs->dns
		                          : HOST_DNS_NONE);
		recfile_put_u64(w, ps.wait_us);
		recfile_put_u64(w, ps.ip_wait_us);
		recfile_put_u64(w, ps.crawl_delay_us);
		recfile_put_u32(w, ps.errors);
		host_addr_save(w, &ps, hs);
	}
	for (const struct req *q = v->live; q; q = q->next)
		n += !q->robots;
	recfile_put_u32(w, n);
	for (const struct req *q = v->live; q; q = q->next) {
		if (q->robots)
			continue;
		recfile_put_u32(w, q->host);
		uint32_t word =
		        frontier_depth_pack_embed(q->depth, (uint32_t)q->redirects, q->embed);
		recfile_put_u32(w, frontier_depth_with_priority(word, q->priority));
		recfile_put_bytes(w, q->url, (uint32_t)strlen(q->url));
		recfile_put_bytes(w, q->via, (uint32_t)strlen(q->via));
	}
}

static int load_host(struct visit *v, struct recfile_reader *rd, uint32_t h, uint64_t now)
{
	struct politeness_host_saved ps;
	uint8_t dns;
	struct host_state *hs = visit_host_state(v, h);
	if (!hs || recfile_get_u8(rd, &dns) != RECFILE_OK ||
	    recfile_get_u64(rd, &ps.wait_us) != RECFILE_OK ||
	    recfile_get_u64(rd, &ps.ip_wait_us) != RECFILE_OK ||
	    recfile_get_u64(rd, &ps.crawl_delay_us) != RECFILE_OK ||
	    recfile_get_u32(rd, &ps.errors) != RECFILE_OK || host_addr_load(rd, &ps, hs) != 0)
		return -1;
	visit_set_dns(v, h,
	              dns == HOST_DNS_OK && ps.has_ip ? HOST_DNS_OK
	              : dns == HOST_DNS_FAILED        ? HOST_DNS_FAILED
	                                              : HOST_DNS_NONE,
	              "checkpoint");
	if (politeness_host_restore(v->p.pol, h, &ps, now) == POLITENESS_ERR_NOMEM)
		return -1;
	return 0;
}

int visit_load(struct visit *v, struct recfile_reader *rd, uint64_t now)
{
	uint32_t n, nhosts;
	char url[FRONTIER_URL_MAX + 1], via[FRONTIER_URL_MAX + 1];
	if (recfile_get_u32(rd, &nhosts) != RECFILE_OK ||
	    nhosts != frontier_host_count(v->p.frontier))
		return -1;
	for (uint32_t h = 0; h < nhosts; h++)
		if (load_host(v, rd, h, now) != 0)
			return -1;
	if (recfile_get_u32(rd, &n) != RECFILE_OK)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t host, depth, ulen, vlen;
		if (recfile_get_u32(rd, &host) != RECFILE_OK ||
		    recfile_get_u32(rd, &depth) != RECFILE_OK ||
		    recfile_get_bytes(rd, url, sizeof url, &ulen) != RECFILE_OK ||
		    recfile_get_bytes(rd, via, sizeof via, &vlen) != RECFILE_OK || host >= nhosts)
			return -1;
		/* a retired host counts it as dropped */
		frontier_unpop(v->p.frontier, host, url, ulen, via, vlen, depth);
	}
	return 0;
}
