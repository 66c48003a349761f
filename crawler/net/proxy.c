/* proxy.c: the proxy and its bypass list (see proxy.h). */
#include "crawler/net/proxy.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct proxy {
	char *url;
	char *no_proxy;      /* "" when none */
	bool proxy_resolves; /* the proxy takes names (http, https, socks4a, socks5h) */
	char text[];         /* url and no_proxy point here: one block */
};

/* Does url name a scheme libcurl proxies with? *resolves: the proxy
 * resolves names. */
static bool proxy_scheme(const char *url, bool *resolves)
{
	static const struct {
		const char *scheme;
		bool resolves;
	} schemes[] = {
		{ "http://", true },    { "https://", true },   { "socks4a://", true },
		{ "socks5h://", true }, { "socks4://", false }, { "socks5://", false },
	};
	*resolves = true;
	if (!strstr(url, "://"))
		return true; /* host[:port]: an HTTP proxy */
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
		if (strncasecmp(url, schemes[i].scheme, strlen(schemes[i].scheme)) == 0) {
			*resolves = schemes[i].resolves;
			return true;
		}
	return false;
}

bool proxy_url_known(const char *url)
{
	bool resolves;
	return !*url || proxy_scheme(url, &resolves);
}

int proxy_create(const char *url, const char *no_proxy, struct proxy **out)
{
	*out = NULL;
	if (!url || !*url)
		return 0;
	bool resolves;
	if (!proxy_scheme(url, &resolves))
		return -1;
	if (!no_proxy || !*no_proxy)
		no_proxy = getenv("no_proxy");
	if (!no_proxy || !*no_proxy)
		no_proxy = getenv("NO_PROXY");
	if (!no_proxy)
		no_proxy = "";
	size_t ulen = strlen(url) + 1, nlen = strlen(no_proxy) + 1;
	struct proxy *p = malloc(sizeof *p + ulen + nlen);
	if (!p)
		return -1;
	p->url = memcpy(p->text, url, ulen);
	p->no_proxy = memcpy(p->text + ulen, no_proxy, nlen);
	p->proxy_resolves = resolves;
	*out = p;
	return 0;
}

void proxy_destroy(struct proxy *p)
{
	free(p);
}

static bool is_separator(char c)
{
	return c == ',' || c == ' ' || c == '\t';
}

/* Does entry e[0, n) (no leading dot) match host h[0, hl)? */
static bool entry_matches(const char *e, size_t n, const char *h, size_t hl)
{
	if (n == 0 || n > hl || strncasecmp(h + hl - n, e, n) != 0)
		return false;
	return n == hl || h[hl - n - 1] == '.';
}

static bool bypassed(const char *list, const char *host)
{
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		host++;
		hl -= 2;
	}
	const char *p = list;
	while (*p) {
		while (is_separator(*p))
			p++;
		const char *s = p;
		while (*p && !is_separator(*p))
			p++;
		size_t n = (size_t)(p - s);
		if (n == 1 && *s == '*')
			return true;
		if (n > 0 && *s == '.') {
			s++;
			n--;
		}
		if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
			s++;
			n -= 2;
		}
		if (entry_matches(s, n, host, hl))
			return true;
	}
	return false;
}

const char *proxy_for(const struct proxy *p, const char *host, bool *pin)
{
	if (!p || bypassed(p->no_proxy, host)) {
		*pin = true;
		return NULL;
	}
	*pin = !p->proxy_resolves;
	return p->url;
}
