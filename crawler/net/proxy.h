/*
 * proxy.h: which requests go through the configured proxy ([fetch] proxy,
 * --proxy) and who resolves their host's name.
 *
 * Data structure: a `struct proxy` holds the proxy URL (scheme http,
 * https, socks4, socks4a, socks5 or socks5h; none means http, as libcurl
 * reads it) and the no_proxy list, both copied: the [fetch] no_proxy key
 * when set, else the environment's no_proxy, else NO_PROXY, read once at
 * create. A host bypasses the proxy when the list is "*", or when one of
 * its comma- or space-separated entries (a leading dot ignored, ASCII
 * case-insensitive) is the host or a dot-suffix of it ("example.org"
 * matches example.org and www.example.org, not badexample.org), IPv6
 * literals compared without brackets. CIDR ranges and ports in entries
 * are not read (such an entry matches nothing). The list is applied here,
 * not by libcurl (which gets an empty CURLOPT_NOPROXY), so that the
 * crawler knows which transfers are direct: those keep the address the
 * crawler resolved pinned, and curl never resolves a name.
 *
 * Who resolves: through an http(s), socks4a or socks5h proxy the proxy
 * resolves the host's name itself (the crawler sends it the name; pinning
 * the address would make libcurl tunnel every request with CONNECT, which
 * most HTTP proxies allow to port 443 only). Through socks4 or socks5 the
 * crawler's own address is pinned and handed to the proxy. Either way the
 * crawler still resolves every host itself first, so politeness per IP
 * groups hosts by the crawler's answer, and the private-range refusal
 * judges that answer; the connection to the proxy itself (usually on a
 * private or loopback address) is not refused. Only a pinned transfer is
 * guarded to the end: a proxy that resolves the name connects where its
 * own DNS says, which the crawler neither sees nor checks.
 *
 * Immutable after create; any thread may read it.
 */
#ifndef CRAWLER_NET_PROXY_H
#define CRAWLER_NET_PROXY_H

#include <stdbool.h>

struct proxy;

/* true when url is "" (no proxy) or names a scheme above (or none). */
bool proxy_url_known(const char *url);

/* A proxy for url (NULL or "": no proxy: *out = NULL, 0) with the bypass
 * list no_proxy (NULL or "": the environment's). 0, or -1 when url has an
 * unknown scheme or memory runs out (*out = NULL). */
int proxy_create(const char *url, const char *no_proxy, struct proxy **out);
/* NULL is a no-op. */
void proxy_destroy(struct proxy *p);

/* The proxy URL a request to host (as in its URL, an IPv6 literal in
 * brackets or not) goes through, or NULL when direct (p NULL, or host
 * bypasses it). *pin: the transfer connects to the address the crawler
 * resolved (direct, or a proxy that takes addresses). */
const char *proxy_for(const struct proxy *p, const char *host, bool *pin);

#endif
