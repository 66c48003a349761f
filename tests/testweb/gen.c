/*
 * Deterministic generation of the test web (see gen.h for the contract and
 * testweb --help for the shape of the web).
 */
#include "tests/testweb/gen.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <zlib.h>

#define BODY_MAX (8u << 20) /* cap on any generated body */
#define LINKS_MAX 64        /* links per page, hard cap */

/* ---------- random streams ---------- */

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

static uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n == 0 ? 0 : rng_next(r) % n;
}

/* Key of a stream: (seed, host, a, b, tag). */
static uint64_t key5(const struct tw_config *cfg, long host, long a, long b, uint64_t tag)
{
	uint64_t k = mix64(cfg->seed ^ 0x5bd1e9955bd1e995ULL);
	k = mix64(k ^ (uint64_t)host);
	k = mix64(k ^ (uint64_t)a * 31);
	k = mix64(k ^ (uint64_t)b * 131);
	return mix64(k ^ tag);
}

enum {
	TAG_LINKS = 1,
	TAG_FILL,
	TAG_GZ,
	TAG_BASE,
	TAG_SIZE,
	TAG_IMG,
	TAG_PDF,
	TAG_VAR,
	TAG_CAL,
	TAG_EPOCH,
	TAG_ETAG,
	TAG_COPY
};

/* ---------- bounded string buffer ---------- */

struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void sb_reserve(struct sbuf *b, size_t extra)
{
	if (b->err)
		return;
	if (b->len + extra + 1 > BODY_MAX) {
		b->err = 1;
		return;
	}
	if (b->len + extra + 1 <= b->cap)
		return;
	size_t nc = b->cap ? b->cap : 4096;
	while (nc < b->len + extra + 1)
		nc *= 2;
	char *np = realloc(b->p, nc);
	if (np == NULL) {
		b->err = 1;
		return;
	}
	b->p = np;
	b->cap = nc;
}

static void sb_add(struct sbuf *b, const void *s, size_t n)
{
	sb_reserve(b, n);
	if (b->err)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void sb_fmt(struct sbuf *b, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof tmp) {
		b->err = 1;
		return;
	}
	sb_add(b, tmp, (size_t)n);
}

/* ---------- configuration ---------- */

static const char *const fault_names[] = {
	"-",         "slow",        "endless",       "hugeheaders",
	"gzipbomb",  "badchunk",    "reset",         "trap",
	"429",       "robotsredir", "robotsflaky",   "robotsredir6",
	"chunked",   "br",          "kaclose",       "session",
	"userinfo",  "robotszstd",  "robotsbadgzip", "robotsutf8",
	"robots429", "robotsnx"
};

const char *tw_fault_name(enum tw_fault f)
{
	if ((unsigned)f >= sizeof fault_names / sizeof fault_names[0])
		return "?";
	return fault_names[f];
}

void tw_config_defaults(struct tw_config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->seed = 1;
	cfg->hosts = 10;
	cfg->pages = 20;
	cfg->ips = 4;
	cfg->http_port = 0;
	cfg->seed_hosts = -1;
	cfg->sitemap_max_urls = 50000;
	memcpy(cfg->domain, "web.test", sizeof "web.test");
	memcpy(cfg->robots_agent, "badbot", sizeof "badbot");
	memcpy(cfg->crawl_delay, "1", sizeof "1");
	cfg->change_pct = 10;
}

static int set_name(char *dst, size_t cap, const char *v, int lower)
{
	size_t n = strlen(v);
	if (n == 0 || n >= cap)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];
		if (!(isalnum(c) || c == '-' || c == '.' || c == '_'))
			return -1;
		dst[i] = lower ? (char)tolower(c) : (char)c;
	}
	dst[n] = '\0';
	return 0;
}

int tw_config_set_domain(struct tw_config *cfg, const char *domain)
{
	if (domain[0] == '.' || strchr(domain, '.') == NULL)
		return -1;
	return set_name(cfg->domain, sizeof cfg->domain, domain, 1);
}

int tw_config_set_robots_agent(struct tw_config *cfg, const char *agent)
{
	return set_name(cfg->robots_agent, sizeof cfg->robots_agent, agent, 0);
}

int tw_config_set_crawl_delay(struct tw_config *cfg, const char *secs)
{
	char *end = NULL;
	errno = 0;
	double d = strtod(secs, &end);
	if (errno != 0 || end == secs || *end != '\0' || !(d >= 0 && d <= 3600))
		return -1;
	return set_name(cfg->crawl_delay, sizeof cfg->crawl_delay, secs, 0);
}

int tw_config_add_fault(struct tw_config *cfg, const char *spec)
{
	if (cfg->nfaults >= TW_MAX_FAULTS || (spec[0] != 'h' && spec[0] != 'H'))
		return -1;
	const char *eq = strchr(spec, '=');
	if (eq == NULL)
		return -1;
	char *end = NULL;
	errno = 0;
	long h = strtol(spec + 1, &end, 10);
	if (errno != 0 || end != eq || end == spec + 1 || h < 0)
		return -1;
	for (size_t f = 1; f < sizeof fault_names / sizeof fault_names[0]; f++) {
		if (strcmp(eq + 1, fault_names[f]) == 0) {
			for (int k = 0; k < cfg->nfaults; k++)
				if (cfg->fault_host[k] == h)
					return -1;
			cfg->fault_host[cfg->nfaults] = h;
			cfg->fault_mode[cfg->nfaults] = (enum tw_fault)f;
			cfg->nfaults++;
			return 0;
		}
	}
	return -1;
}

int tw_config_check(const struct tw_config *cfg)
{
	if (cfg->hosts < 1 || cfg->pages < 1 || cfg->ips < 1 || cfg->ips > 250 || cfg->topics < 0 ||
	    cfg->topics == 1 || cfg->topics > TW_TOPICS_MAX)
		return -1;
	for (int k = 0; k < cfg->nfaults; k++)
		if (cfg->fault_host[k] >= cfg->hosts)
			return -1;
	return 0;
}

void tw_config_release(struct tw_config *cfg)
{
	(void)cfg;
}

enum tw_fault tw_host_fault(const struct tw_config *cfg, long host)
{
	for (int k = 0; k < cfg->nfaults; k++)
		if (cfg->fault_host[k] == host)
			return cfg->fault_mode[k];
	return TW_FAULT_NONE;
}

/* ---------- hosts ---------- */

/* Parse a decimal without sign or leading zeros, at most 9 digits. */
static int parse_num(const char **sp, const char *end, long *out)
{
	const char *s = *sp;
	long v = 0;
	int n = 0;
	while (s < end && *s >= '0' && *s <= '9' && n < 10) {
		v = v * 10 + (*s - '0');
		s++;
		n++;
	}
	if (n == 0 || n > 9 || (n > 1 && **sp == '0'))
		return -1;
	*sp = s;
	*out = v;
	return 0;
}

int tw_host_parse(const struct tw_config *cfg, const char *name, size_t len, long *idx)
{
	if (len > 0 && name[len - 1] == '.')
		len--;
	const char *s = name, *end = name + len;
	if (len < 3 || (*s != 'h' && *s != 'H'))
		return -1;
	s++;
	long i = 0;
	if (parse_num(&s, end, &i) != 0 || s >= end || *s != '.')
		return -1;
	s++;
	size_t dl = strlen(cfg->domain);
	if ((size_t)(end - s) != dl || strncasecmp(s, cfg->domain, dl) != 0)
		return -1;
	if (i >= cfg->hosts + (cfg->requisites ? TW_REQ_CDN_HOSTS : 0))
		return -1;
	*idx = i;
	return 0;
}

enum tw_stack tw_host_stack(const struct tw_config *cfg, long idx)
{
	return cfg->ipv6 ? (enum tw_stack)(idx % 4) : TW_STACK_V4;
}

uint32_t tw_host_addr(const struct tw_config *cfg, long idx)
{
	enum tw_stack st = tw_host_stack(cfg, idx);
	uint32_t net = st == TW_STACK_DEAD_V4 ? 2u : 1u;
	if (st == TW_STACK_V6)
		return 0;
	return (127u << 24) | (0u << 16) | (net << 8) | (uint32_t)(1 + idx % cfg->ips);
}

int tw_robots_kind(const struct tw_config *cfg, long host)
{
	if (tw_host_fault(cfg, host) == TW_FAULT_USERINFO)
		return 3; /* a Crawl-delay for the one server behind many names */
	if (tw_host_fault(cfg, host) != TW_FAULT_NONE || host >= cfg->hosts)
		return 0;
	return (int)(((uint64_t)host % 10 + cfg->seed % 10) % 10);
}

static int robots_status(int kind)
{
	return kind == 4 ? 404 : kind == 7 ? 503 : 200;
}

/* ---------- paths ---------- */

static int page_is_private(long j)
{
	return j % 10 == 7;
}

static void page_path(long j, char *out, size_t cap)
{
	if (j == 0)
		snprintf(out, cap, "/");
	else if (page_is_private(j))
		snprintf(out, cap, "/private/p%ld.html", j);
	else
		snprintf(out, cap, "/s%ld/p%ld.html", j % 5, j);
}

/* Directory of a page's path ("/", "/private/", "/sD/"). */
static void page_dir(long j, char *out, size_t cap)
{
	if (j == 0)
		snprintf(out, cap, "/");
	else if (page_is_private(j))
		snprintf(out, cap, "/private/");
	else
		snprintf(out, cap, "/s%ld/", j % 5);
}

/* Returns page index or -1. */
static long parse_page(const struct tw_config *cfg, const char *p, const char *end)
{
	long j = 0;
	if (end - p == 1 && p[0] == '/')
		return 0;
	if ((size_t)(end - p) > 10 && memcmp(p, "/private/p", 10) == 0) {
		p += 10;
		if (parse_num(&p, end, &j) != 0 || !page_is_private(j))
			return -1;
	} else if ((size_t)(end - p) > 5 && memcmp(p, "/s", 2) == 0) {
		long d = 0;
		p += 2;
		if (parse_num(&p, end, &d) != 0 || end - p < 2 || p[0] != '/' || p[1] != 'p')
			return -1;
		p += 2;
		if (parse_num(&p, end, &j) != 0 || page_is_private(j) || j % 5 != d || j == 0)
			return -1;
	} else {
		return -1;
	}
	if (end - p != 5 || memcmp(p, ".html", 5) != 0 || j >= cfg->pages)
		return -1;
	return j;
}

int tw_variant_of(const struct tw_config *cfg, const char *path, size_t len, long *page)
{
	const char *q = memchr(path, '?', len), *end = path + len;
	if (q == NULL || end - q != 4 || (memcmp(q, "?q=1", 4) != 0 && memcmp(q, "?q=2", 4) != 0))
		return 0;
	*page = parse_page(cfg, path, q);
	return *page >= 0 ? q[3] - '0' : 0;
}

/* Matches PREFIX<num>SUFFIX exactly; returns num or -1. */
static long match_num(const char *p, const char *end, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	long v = 0;
	if ((size_t)(end - p) <= pl + sl || memcmp(p, prefix, pl) != 0)
		return -1;
	p += pl;
	if (parse_num(&p, end, &v) != 0 || (size_t)(end - p) != sl || memcmp(p, suffix, sl) != 0)
		return -1;
	return v;
}

/* ---------- filler ---------- */

static const char *const words[] = {
	"crawler",   "frontier",      "sieve",     "politeness",   "robots",      "anchor",
	"lorem",     "ipsum",         "dolor",     "amet",         "consectetur", "adipiscing",
	"elit",      "sed",           "do",        "eiusmod",      "tempor",      "incididunt",
	"labore",    "dolore",        "magna",     "aliqua",       "enim",        "minim",
	"veniam",    "quis",          "nostrud",   "exercitation", "ullamco",     "laboris",
	"nisi",      "aliquip",       "commodo",   "consequat",    "duis",        "aute",
	"irure",     "reprehenderit", "voluptate", "velit",        "esse",        "cillum",
	"fugiat",    "nulla",         "pariatur",  "excepteur",    "sint",        "occaecat",
	"cupidatat", "proident",      "sunt",      "culpa",        "officia",     "deserunt",
	"mollit",    "anim",          "hash",      "queue",        "heap",        "socket",
	"buffer",    "graph",         "page",      "link"
};

static const char *const topic_names[TW_TOPICS_MAX] = {
	"astronomy", "botany", "chemistry", "geology",  "music",   "cooking",
	"sailing",   "chess",  "poetry",    "robotics", "weather", "finance",
};

static const char *const topic_words[TW_TOPICS_MAX][TW_TOPIC_WORDS] = {
	{ "planet", "comet", "galaxy", "nebula", "telescope", "orbit" },
	{ "fern", "orchid", "pollen", "petal", "seedling", "moss" },
	{ "molecule", "reagent", "catalyst", "isotope", "solvent", "titration" },
	{ "basalt", "granite", "tectonic", "sediment", "quartz", "magma" },
	{ "melody", "sonata", "chord", "tempo", "violin", "harmony" },
	{ "recipe", "saucepan", "simmer", "braise", "pastry", "skillet" },
	{ "mainsail", "keel", "rudder", "regatta", "mooring", "tack" },
	{ "bishop", "gambit", "rook", "checkmate", "endgame", "pawn" },
	{ "sonnet", "stanza", "meter", "rhyme", "couplet", "verse" },
	{ "actuator", "servo", "gripper", "kinematics", "lidar", "torque" },
	{ "drizzle", "cyclone", "humidity", "forecast", "isobar", "monsoon" },
	{ "dividend", "ledger", "equity", "bond", "portfolio", "liquidity" },
};

const char *tw_topic_word(long t, int k)
{
	return topic_words[t][k];
}

const char *tw_topic_name(long t)
{
	return topic_names[t];
}

long tw_page_topic(const struct tw_config *cfg, long i, long j)
{
	return cfg->topics > 0 ? (i + j) % cfg->topics : -1;
}

/* The next filler word; on a page of topic t >= 0, a fifth of them are
 * t's words and a fiftieth any topic's. */
static const char *next_word(struct rng *r, const struct tw_config *cfg, long t)
{
	if (t >= 0) {
		unsigned u = (unsigned)rng_below(r, 100);
		if (u < 20)
			return topic_words[t][rng_below(r, TW_TOPIC_WORDS)];
		if (u < 22)
			return topic_words[rng_below(r, (uint64_t)cfg->topics)]
			                  [rng_below(r, TW_TOPIC_WORDS)];
	}
	return words[rng_next(r) % (sizeof words / sizeof words[0])];
}

/* Appends about n bytes of words in <p> paragraphs (of topic t: next_word). */
static void filler_html(struct sbuf *b, struct rng *r, size_t n, const struct tw_config *cfg,
                        long t)
{
	size_t start = b->len;
	sb_str(b, "<p>");
	int inpara = 0;
	while (!b->err && b->len - start < n) {
		const char *w = next_word(r, cfg, t);
		sb_str(b, w);
		inpara++;
		if (inpara > 40 && rng_below(r, 8) == 0) {
			sb_str(b, ".</p>\n<p>");
			inpara = 0;
		} else {
			sb_str(b, " ");
		}
	}
	sb_str(b, "</p>\n");
}

void tw_filler(uint64_t key, char *out, size_t len)
{
	struct rng r = { mix64(key) };
	size_t pos = 0;
	while (pos < len) {
		const char *w = words[rng_next(&r) % (sizeof words / sizeof words[0])];
		size_t wl = strlen(w);
		for (size_t k = 0; k < wl && pos < len; k++)
			out[pos++] = w[k];
		if (pos < len)
			out[pos++] = (rng_below(&r, 12) == 0) ? '\n' : ' ';
	}
}

/* ---------- links ---------- */

struct linkset {
	struct tw_link *out;
	size_t cap, n;
	char href[LINKS_MAX][256];
	int is_img[LINKS_MAX];
	size_t nh;
};

static void host_prefix(const struct tw_config *cfg, long host, int upper, char *out, size_t cap)
{
	char dom[TW_NAME_MAX];
	size_t dl = strlen(cfg->domain);
	for (size_t k = 0; k <= dl; k++)
		dom[k] = upper ? (char)toupper((unsigned char)cfg->domain[k]) : cfg->domain[k];
	snprintf(out, cap, "http://%c%ld.%s:%d", upper ? 'H' : 'h', host, dom, cfg->http_port);
}

/* Relative reference from base directory bdir ("/" or "/X/") to path t. */
static void rel_ref(const char *bdir, const char *t, int dot, char *out, size_t cap)
{
	size_t bl = strlen(bdir);
	if (strcmp(t, "/") == 0) {
		snprintf(out, cap, bl == 1 ? "./" : "../");
	} else if (bl == 1) {
		snprintf(out, cap, "%s%s", dot ? "./" : "", t + 1);
	} else if (strncmp(t, bdir, bl) == 0) {
		if (t[bl] == '\0')
			snprintf(out, cap, "./");
		else
			snprintf(out, cap, "%s%s", dot ? "./" : "", t + bl);
	} else {
		snprintf(out, cap, "../%s", t + 1);
	}
}

static void add_link(struct linkset *ls, long host, const char *canon, const char *href, int img)
{
	if (ls->nh >= LINKS_MAX)
		return;
	snprintf(ls->href[ls->nh], sizeof ls->href[0], "%s", href);
	ls->is_img[ls->nh] = img;
	ls->nh++;
	if (host >= 0 && canon != NULL && ls->out != NULL && ls->n < ls->cap) {
		ls->out[ls->n].host = host;
		snprintf(ls->out[ls->n].path, sizeof ls->out[0].path, "%s", canon);
		ls->n++;
	}
}

/* Same-host target t written in one of several forms, maybe with a fragment. */
static void add_same_host(const struct tw_config *cfg, struct linkset *ls, struct rng *r, long host,
                          const char *bdir, const char *t, int img)
{
	char href[256], pre[128];
	int form = (int)rng_below(r, 6);
	switch (form) {
	case 0:
		host_prefix(cfg, host, rng_below(r, 3) == 0, pre, sizeof pre);
		snprintf(href, sizeof href, "%s%s", pre, t);
		break;
	case 1:
	case 5: snprintf(href, sizeof href, "%s", t); break;
	default: rel_ref(bdir, t, form == 4, href, sizeof href); break;
	}
	if (!img && rng_below(r, 5) == 0) {
		size_t hl = strlen(href);
		snprintf(href + hl, sizeof href - hl, "#sec%u", (unsigned)rng_below(r, 9));
	}
	add_link(ls, host, t, href, img);
}

static void add_cross_host(const struct tw_config *cfg, struct linkset *ls, struct rng *r,
                           long host, const char *t)
{
	char href[256], pre[128];
	host_prefix(cfg, host, rng_below(r, 4) == 0, pre, sizeof pre);
	snprintf(href, sizeof href, "%s%s", pre, t);
	add_link(ls, host, t, href, 0);
}

/* A userinfo host's front page: one server under many names. /uK through
 * http://uK@hI.D:PORT/ (userinfo a crawler must neither key apart nor send)
 * and page 1 through the fully qualified name hI.D. (final dot). */
static void add_userinfo_links(const struct tw_config *cfg, struct linkset *ls, long host)
{
	char href[512], t[160];
	for (int k = 0; k < TW_USERINFO_LINKS; k++) {
		snprintf(t, sizeof t, "/u%d", k);
		snprintf(href, sizeof href, "http://u%d@h%ld.%s:%d%s", k, host, cfg->domain,
		         cfg->http_port, t);
		add_link(ls, host, t, href, 0);
	}
	page_path(1 % cfg->pages, t, sizeof t);
	snprintf(href, sizeof href, "http://h%ld.%s.:%d%s", host, cfg->domain, cfg->http_port, t);
	add_link(ls, host, t, href, 0);
}

/* A page of host h about topic t near page pk (pk itself when there is
 * none: fewer pages than topics). */
static long topic_page(const struct tw_config *cfg, long h, long pk, long t)
{
	long T = cfg->topics;
	long j = pk - (((h + pk - t) % T) + T) % T;
	if (j < 0)
		j += T;
	return j < cfg->pages ? j : pk;
}

/* The link list of page j of host i (variant pages and calendar excluded). */
static void page_links(const struct tw_config *cfg, long i, long j, const char *bdir,
                       struct linkset *ls)
{
	struct rng r = { key5(cfg, i, j, 0, TAG_LINKS) };
	char t[160];
	long P = cfg->pages, N = cfg->hosts;

	/* Fault hosts link only to themselves, so a crawl log minus the fault
	 * hosts' lines is comparable with the expected set. */
	int self_only = tw_host_fault(cfg, i) != TW_FAULT_NONE;

	page_path((j + 1) % P, t, sizeof t);
	add_same_host(cfg, ls, &r, i, bdir, t, 0);
	page_path((j + 2) % P, t, sizeof t);
	add_same_host(cfg, ls, &r, i, bdir, t, 0);
	if (j == 0) {
		if (tw_host_fault(cfg, i) == TW_FAULT_USERINFO)
			add_userinfo_links(cfg, ls, i);
		add_cross_host(cfg, ls, &r, self_only ? i : (i + 1) % N, "/");
		if (tw_host_fault(cfg, i) == TW_FAULT_TRAP)
			add_same_host(cfg, ls, &r, i, bdir, "/cal/2026/11/", 0);
		if (tw_host_fault(cfg, i) == TW_FAULT_SESSION)
			add_same_host(cfg, ls, &r, i, bdir, "/sess?sid=1", 0);
		if (i % 5 == 2)
			add_same_host(cfg, ls, &r, i, bdir, "/loop/a", 0);
	}
	long nl = 8 + (long)rng_below(&r, 20);
	for (long k = 0; k < nl; k++) {
		unsigned u = (unsigned)rng_below(&r, 100);
		long pk = (long)rng_below(&r, (uint64_t)P);
		if (u < 45) {
			if (cfg->topics && rng_below(&r, 5) > 0)
				pk = topic_page(cfg, i, pk, tw_page_topic(cfg, i, j));
			page_path(pk, t, sizeof t);
			add_same_host(cfg, ls, &r, i, bdir, t, 0);
		} else if (u < 60) {
			page_path(pk, t, sizeof t);
			long h = (long)rng_below(&r, (uint64_t)N);
			if (cfg->topics && rng_below(&r, 5) > 0) {
				pk = topic_page(cfg, self_only ? i : h, pk,
				                tw_page_topic(cfg, i, j));
				page_path(pk, t, sizeof t);
			}
			add_cross_host(cfg, ls, &r, self_only ? i : h, t);
		} else if (u < 65) {
			snprintf(t, sizeof t, "/gone/x%u.html", (unsigned)rng_below(&r, 1000));
			add_same_host(cfg, ls, &r, i, bdir, t, 0);
		} else if (u < 70) {
			static const char *const rp[] = { "/r/", "/r2/", "/r3/" };
			snprintf(t, sizeof t, "%s%ld", rp[rng_below(&r, 3)], pk);
			add_same_host(cfg, ls, &r, i, bdir, t, 0);
		} else if (u < 72) {
			snprintf(t, sizeof t, "/rx/%ld", pk);
			add_same_host(cfg, ls, &r, i, bdir, t, 0);
		} else if (u < 79) {
			snprintf(t, sizeof t, "/img/i%ld.png", pk);
			add_same_host(cfg, ls, &r, i, bdir, t, 1);
		} else if (u < 83) {
			snprintf(t, sizeof t, "/doc/d%ld.pdf", pk);
			add_same_host(cfg, ls, &r, i, bdir, t, 0);
		} else if (u < 89) {
			char pp[140];
			page_path(pk, pp, sizeof pp);
			snprintf(t, sizeof t, "%s?q=%u", pp, 1 + (unsigned)rng_below(&r, 2));
			add_same_host(cfg, ls, &r, i, bdir, t, 0);
		} else if (u < 90) {
			char href[256];
			snprintf(href, sizeof href, "http://nx%u.%s:%d/",
			         (unsigned)rng_below(&r, 100), cfg->domain, cfg->http_port);
			add_link(ls, -1, NULL, href, 0);
		} else if (u < 91) {
			char href[256];
			snprintf(href, sizeof href, "http://www.example.org/x%u.html",
			         (unsigned)rng_below(&r, 100));
			add_link(ls, -1, NULL, href, 0);
		} else if (u < 92) {
			add_link(ls, -1, NULL, "mailto:webmaster@example.org", 0);
		} else if (ls->nh > 0) {
			/* Duplicate an earlier href verbatim, canonical too. */
			size_t d = (size_t)rng_below(&r, ls->nh);
			char href[256];
			memcpy(href, ls->href[d], sizeof href);
			if (ls->nh < LINKS_MAX) {
				/* Find its canonical form: recompute is not possible, so the
				 * duplicate is reported only as an href; its target is
				 * already in the list. */
				add_link(ls, -1, NULL, href, ls->is_img[d]);
			}
		}
	}
}

/* ---------- resources ---------- */

static const char *status_text(int st)
{
	switch (st) {
	case 200: return "OK";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 404: return "Not Found";
	case 429: return "Too Many Requests";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

static int finish(struct sbuf *b, struct tw_resource *res)
{
	if (b->err) {
		free(b->p);
		return -1;
	}
	if (b->p == NULL) {
		b->p = malloc(1);
		if (b->p == NULL)
			return -1;
		b->p[0] = '\0';
	}
	res->body = b->p;
	res->body_len = b->len;
	return 0;
}

static int make_simple(struct tw_resource *res, int status)
{
	struct sbuf b = { 0 };
	res->status = status;
	res->content_type = "text/html; charset=utf-8";
	sb_fmt(&b,
	       "<!DOCTYPE html>\n<html><head><title>%d %s</title></head>"
	       "<body><h1>%d %s</h1></body></html>\n",
	       status, status_text(status), status, status_text(status));
	return finish(&b, res);
}

static int make_redirect(const struct tw_config *cfg, struct tw_resource *res, int status,
                         long host, const char *path, int absolute, long self)
{
	char pre[128];
	res->loc.host = host;
	snprintf(res->loc.path, sizeof res->loc.path, "%s", path);
	if (absolute || host != self) {
		host_prefix(cfg, host, 0, pre, sizeof pre);
		snprintf(res->location, sizeof res->location, "%s%s", pre, path);
	} else {
		snprintf(res->location, sizeof res->location, "%s", path);
	}
	return make_simple(res, status);
}

/* ---------- requisites (--requisites) ---------- */

/* A page's requisites, as page j writes them (requisites_head and
 * requisites_body) and as page_requisites lists them: a stylesheet of its
 * host naming more of that host's files and a logo on CDN host 2; a
 * stylesheet and a script on CDN host 1, whose stylesheet names a font of
 * its own host (still one hop off the domains) and an image on CDN host
 * 2 (two hops: not fetched); images with srcset; a style attribute. */
static void requisites_head(const struct tw_config *cfg, long j, struct sbuf *b)
{
	char cdn[128];
	host_prefix(cfg, cfg->hosts, j % 2 == 1, cdn, sizeof cdn);
	sb_fmt(b,
	       "<link rel=\"stylesheet\" href=\"/req/site.css\">\n"
	       "<link rel=\"stylesheet\" href=\"%s/req/cdn.css\">\n"
	       "<script src=\"%s/req/lib.js\"></script>\n",
	       cdn, cdn);
}

static void requisites_body(long j, struct sbuf *b)
{
	sb_fmt(b,
	       "<img src=\"/req/i%ld.png\" srcset=\"/req/i%ld-2x.png 2x, /req/i%ld-3x.png 3x\" "
	       "alt=\"\">\n<div style=\"background:url('/req/inline%ld.png')\">&nbsp;</div>\n",
	       j % 4, j % 4, j % 4, j % 3);
}

static void req_link(struct tw_link *out, size_t cap, size_t *n, long host, const char *fmt, long v)
{
	if (*n >= cap)
		return;
	out[*n].host = host;
	snprintf(out[*n].path, sizeof out[0].path, fmt, v);
	(*n)++;
}

/* The requisites of page j of host i, canonical (the BFS's list). */
static size_t page_requisites(const struct tw_config *cfg, long i, long j, struct tw_link *out,
                              size_t cap)
{
	size_t n = 0;
	req_link(out, cap, &n, i, "/req/site.css", 0);
	req_link(out, cap, &n, cfg->hosts, "/req/cdn.css", 0);
	req_link(out, cap, &n, cfg->hosts, "/req/lib.js", 0);
	req_link(out, cap, &n, i, "/req/i%ld.png", j % 4);
	req_link(out, cap, &n, i, "/req/i%ld-2x.png", j % 4);
	req_link(out, cap, &n, i, "/req/i%ld-3x.png", j % 4);
	req_link(out, cap, &n, i, "/req/inline%ld.png", j % 3);
	return n;
}

/* /req/NAME.EXT on any host: the stylesheets say what they name (as
 * links); other names are small bodies of their extension's type. */
static int make_requisite(const struct tw_config *cfg, long i, const char *p, const char *pend,
                          struct tw_resource *res, struct tw_link *links, size_t cap,
                          size_t *nlinks)
{
	struct sbuf b = { 0 };
	size_t len = (size_t)(pend - p), n = 0;
	char far[128];
	host_prefix(cfg, cfg->hosts + 1, 0, far, sizeof far);
	res->status = 200;
	if (len == 13 && memcmp(p, "/req/site.css", 13) == 0) {
		sb_fmt(&b,
		       "@import \"print.css\";\nbody { background: url(/req/bg.png) }\n"
		       "/* url(/req/commented.png) */\n.logo { background: url('%s/req/logo.png') "
		       "}\n",
		       far);
		req_link(links, cap, &n, i, "/req/print.css", 0);
		req_link(links, cap, &n, i, "/req/bg.png", 0);
		req_link(links, cap, &n, cfg->hosts + 1, "/req/logo.png", 0);
	} else if (len == 12 && memcmp(p, "/req/cdn.css", 12) == 0) {
		sb_fmt(&b,
		       "@font-face { font-family: f; src: url(font.woff) format('woff') }\n"
		       ".far { background: url(%s/req/far.png) }\n",
		       far);
		req_link(links, cap, &n, i, "/req/font.woff", 0);
		req_link(links, cap, &n, cfg->hosts + 1, "/req/far.png", 0);
	} else {
		sb_fmt(&b, "/* h%ld %.*s */\n", i, (int)len, p);
	}
	if (nlinks != NULL)
		*nlinks = links ? n : 0;
	const char *dot = memrchr(p, '.', len);
	size_t el = dot ? (size_t)(pend - dot) : 0;
	res->content_type = el == 4 && memcmp(dot, ".css", 4) == 0    ? "text/css"
	                    : el == 3 && memcmp(dot, ".js", 3) == 0   ? "text/javascript"
	                    : el == 4 && memcmp(dot, ".png", 4) == 0  ? "image/png"
	                    : el == 5 && memcmp(dot, ".woff", 5) == 0 ? "font/woff"
	                                                              : NULL;
	if (res->content_type == NULL) {
		free(b.p);
		return make_simple(res, 404);
	}
	return finish(&b, res);
}

long tw_page_source(const struct tw_config *cfg, long i, long j)
{
	char d1[32], d2[32];
	while (cfg->copy_pct > 0 && j > TW_COPY_STEP &&
	       key5(cfg, i, j, 0, TAG_COPY) % 100 < (uint64_t)cfg->copy_pct) {
		page_dir(j, d1, sizeof d1);
		page_dir(j - TW_COPY_STEP, d2, sizeof d2);
		if (strcmp(d1, d2) != 0)
			break;
		j -= TW_COPY_STEP;
	}
	return j;
}

static int make_page(const struct tw_config *cfg, long i, long j, struct tw_resource *res,
                     struct tw_link *links, size_t links_cap, size_t *nlinks)
{
	struct sbuf b = { 0 };
	struct rng fr = { key5(cfg, i, j, 0, TAG_FILL) };
	struct rng sr = { key5(cfg, i, j, 0, TAG_SIZE) };
	struct linkset *ls = calloc(1, sizeof *ls);
	char bdir[32], pre[128];
	int has_base = (j % 6 == 5);
	if (ls == NULL)
		return -1;
	ls->out = links;
	ls->cap = links_cap;
	if (has_base)
		snprintf(bdir, sizeof bdir, "/s%ld/", (j + 2) % 5);
	else
		page_dir(j, bdir, sizeof bdir);
	page_links(cfg, i, j, bdir, ls);

	size_t total = 5000 + (size_t)rng_below(&sr, 55000);
	size_t chunk = total / (ls->nh + 1);
	host_prefix(cfg, i, 0, pre, sizeof pre);
	sb_fmt(&b,
	       "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
	       "<title>h%ld page %ld</title>\n",
	       i, j);
	if (has_base)
		sb_fmt(&b, "<base href=\"%s%s\">\n", pre, bdir);
	if (cfg->requisites)
		requisites_head(cfg, j, &b);
	sb_fmt(&b, "</head>\n<body>\n<h1>Host h%ld, page %ld</h1>\n", i, j);
	if (cfg->requisites)
		requisites_body(j, &b);
	for (size_t k = 0; k < ls->nh; k++) {
		filler_html(&b, &fr, chunk, cfg, tw_page_topic(cfg, i, j));
		if (ls->is_img[k])
			sb_fmt(&b,
			       "<p><a href=\"%s\"><img src=\"%s\" alt=\"figure %zu\"></a></p>\n",
			       ls->href[k], ls->href[k], k);
		else if (k % 3 == 2)
			sb_fmt(&b, "<p>See <a href='%s'>item %zu</a>.</p>\n", ls->href[k], k);
		else
			sb_fmt(&b, "<p><a href=\"%s\">link %zu</a></p>\n", ls->href[k], k);
	}
	filler_html(&b, &fr, chunk, cfg, tw_page_topic(cfg, i, j));
	long version = tw_page_version(cfg, i, j, cfg->epoch);
	if (version > 0)
		sb_fmt(&b, "<p class=\"rev\">Revision %ld of this page.</p>\n", version);
	sb_str(&b, "</body></html>\n");
	if (nlinks != NULL)
		*nlinks = ls->n;
	free(ls);
	res->status = 200;
	res->content_type = "text/html; charset=utf-8";
	res->gzip_ok = key5(cfg, i, j, 0, TAG_GZ) % 3 == 0;
	snprintf(res->etag, sizeof res->etag, "W/\"p%016llx\"",
	         (unsigned long long)key5(cfg, i, j, version, TAG_ETAG));
	res->last_modified = TW_EPOCH0_UNIX + (int64_t)version * 86400;
	return finish(&b, res);
}

static int make_variant(const struct tw_config *cfg, long i, long j, int q, struct tw_resource *res,
                        struct tw_link *links, size_t links_cap, size_t *nlinks)
{
	struct sbuf b = { 0 };
	/* Both variants draw the same text (the key leaves q out) and differ
	 * in numbers only, which SimHash ignores: near-duplicates. */
	struct rng fr = { key5(cfg, i, j, 0, TAG_VAR) };
	char t[160];
	page_path(j, t, sizeof t);
	sb_fmt(&b,
	       "<!DOCTYPE html>\n<html><head><title>h%ld page %ld variant %d</title></head>\n"
	       "<body><h1>Variant %d of page %ld</h1>\n<p>Viewed %u times.</p>\n",
	       i, j, q, q, j, (unsigned)(fr.s % 1000) * 7 + (unsigned)q);
	filler_html(&b, &fr, 2000 + (size_t)rng_below(&fr, 3000), cfg, tw_page_topic(cfg, i, j));
	sb_fmt(&b, "<p><a href=\"%s\">back</a></p>\n</body></html>\n", t);
	if (links != NULL && links_cap > 0) {
		links[0].host = i;
		snprintf(links[0].path, sizeof links[0].path, "%s", t);
		*nlinks = 1;
	}
	res->status = 200;
	res->content_type = "text/html; charset=utf-8";
	return finish(&b, res);
}

static int make_calendar(const struct tw_config *cfg, long i, long y, long m,
                         struct tw_resource *res, struct tw_link *links, size_t links_cap,
                         size_t *nlinks)
{
	struct sbuf b = { 0 };
	struct rng fr = { key5(cfg, i, y, m, TAG_CAL) };
	long ny = m == 12 ? y + 1 : y, nm = m == 12 ? 1 : m + 1;
	long py = m == 1 ? y - 1 : y, pm = m == 1 ? 12 : m - 1;
	char next[64], prev[64];
	snprintf(next, sizeof next, "/cal/%ld/%ld/", ny, nm);
	snprintf(prev, sizeof prev, "/cal/%ld/%ld/", py, pm);
	sb_fmt(&b,
	       "<!DOCTYPE html>\n<html><head><title>Calendar %ld-%ld</title></head>\n"
	       "<body><h1>Calendar %ld-%02ld</h1>\n",
	       y, m, y, m);
	filler_html(&b, &fr, 1000, cfg, -1);
	sb_fmt(&b,
	       "<p><a href=\"%s\">next month</a> <a href=\"%s\">previous month</a>"
	       " <a href=\"/\">home</a></p>\n</body></html>\n",
	       next, py >= 1 ? prev : next);
	size_t n = 0;
	if (links != NULL) {
		const char *ts[3] = { next, py >= 1 ? prev : next, "/" };
		for (int k = 0; k < 3 && n < links_cap; k++) {
			links[n].host = i;
			snprintf(links[n].path, sizeof links[n].path, "%s", ts[k]);
			n++;
		}
		*nlinks = n;
	}
	res->status = 200;
	res->content_type = "text/html; charset=utf-8";
	return finish(&b, res);
}

/* Session trap page /sess?sid=SID: links to itself under a new session
 * ID, and with eleven more query parameters. */
static int make_session(long i, long sid, struct tw_resource *res, struct tw_link *links,
                        size_t links_cap, size_t *nlinks)
{
	struct sbuf b = { 0 };
	char next[64], many[128];
	snprintf(next, sizeof next, "/sess?sid=%ld", (sid * 7919 + 104729) % 1000000000);
	snprintf(many, sizeof many, "/sess?sid=%ld&a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11",
	         sid);
	sb_fmt(&b,
	       "<!DOCTYPE html>\n<html><head><title>Session %ld</title></head>\n"
	       "<body><p><a href=\"%s\">next</a> <a href=\"%s\">sorted</a>"
	       " <a href=\"/\">home</a></p>\n</body></html>\n",
	       sid, next, many);
	if (links != NULL) {
		const char *ts[3] = { next, many, "/" };
		size_t n = 0;
		for (; n < 3 && n < links_cap; n++) {
			links[n].host = i;
			snprintf(links[n].path, sizeof links[n].path, "%s", ts[n]);
		}
		*nlinks = n;
	}
	res->status = 200;
	res->content_type = "text/html; charset=utf-8";
	return finish(&b, res);
}

static int make_robots(const struct tw_config *cfg, long i, struct tw_resource *res)
{
	struct sbuf b = { 0 };
	int kind = tw_robots_kind(cfg, i);
	char pre[128];
	host_prefix(cfg, i, 0, pre, sizeof pre);
	if (robots_status(kind) != 200)
		return make_simple(res, robots_status(kind));
	sb_fmt(&b, "# robots.txt of h%ld (kind %d)\n", i, kind);
	switch (kind) {
	case 1: sb_str(&b, "User-agent: *\nDisallow: /private/\n"); break;
	case 2:
		sb_fmt(&b,
		       "User-agent: %s\nDisallow: /s1/\nDisallow: /doc/\n\n"
		       "User-agent: *\nDisallow:\n",
		       cfg->robots_agent);
		break;
	case 3:
		sb_fmt(&b, "User-agent: *\nCrawl-delay: %s\nDisallow: /s3/\n", cfg->crawl_delay);
		break;
	case 5:
		sb_fmt(&b, "User-agent: *\nDisallow:\n\nSitemap: %s/sitemap.xml\n", pre);
		if (cfg->sitemap_faults)
			sb_fmt(&b,
			       "Sitemap: %s/sitemap_big.xml\nSitemap: %s/sitemap_huge.xml\n"
			       "Sitemap: %s/sitemap_bad.xml\n",
			       pre, pre, pre);
		break;
	case 6:
		sb_fmt(&b,
		       "User-agent: *\nAllow: /private/p7.html\nDisallow: /private/\n\n"
		       "Sitemap: %s/sitemap_index.xml\n",
		       pre);
		break;
	case 8:
		sb_fmt(&b, "User-agent: *\nDisallow: /r/\nCrawl-delay: %s\n", cfg->crawl_delay);
		break;
	case 9:
		sb_fmt(&b, "User-agent: %s\nDisallow: /\n\nUser-agent: *\nDisallow:\n",
		       cfg->robots_agent);
		break;
	default: sb_str(&b, "User-agent: *\nDisallow:\n"); break;
	}
	res->status = 200;
	res->content_type = "text/plain";
	return finish(&b, res);
}

/* Pages listed only by the sitemaps of hosts with robots kind 5 or 6:
 * /o/oK.html, K < TW_ORPHANS, linked from nowhere. */
#define TW_ORPHANS 3

static void sitemap_link(struct tw_link *links, size_t cap, size_t *n, long host, const char *path)
{
	if (links == NULL || n == NULL || *n >= cap)
		return;
	links[*n].host = host;
	snprintf(links[*n].path, sizeof links[*n].path, "%s", path);
	(*n)++;
}

/* gzip of b's bytes, replacing them (the sitemap.xml.gz file). */
static void sb_gzip(struct sbuf *b)
{
	z_stream zs;
	memset(&zs, 0, sizeof zs);
	uLong cap = compressBound(b->len) + 64;
	unsigned char *out = malloc(cap);
	if (b->err || !out ||
	    deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(out);
		b->err = 1;
		return;
	}
	zs.next_in = (unsigned char *)b->p;
	zs.avail_in = (uInt)b->len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	int zr = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(out);
		b->err = 1;
		return;
	}
	free(b->p);
	b->p = (char *)out;
	b->len = zs.total_out;
}

/* /sitemap.xml (and its gzip twin): every page and the orphans; as links
 * for the expected set of a crawl that follows sitemaps. */
static int make_sitemap(const struct tw_config *cfg, long i, int gz, struct tw_resource *res,
                        struct tw_link *links, size_t links_cap, size_t *nlinks)
{
	struct sbuf b = { 0 };
	char pre[128], t[160];
	host_prefix(cfg, i, 0, pre, sizeof pre);
	sb_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
	/* Orphans first: the expected set's BFS takes only the first links
	 * (and a crawler only the first sitemap_max_urls entries). */
	if ((long)links_cap > cfg->sitemap_max_urls)
		links_cap = (size_t)cfg->sitemap_max_urls;
	for (long j = -TW_ORPHANS; j < cfg->pages && j < 50000 && !b.err; j++) {
		if (j < 0)
			snprintf(t, sizeof t, "/o/o%ld.html", j + TW_ORPHANS);
		else
			page_path(j, t, sizeof t);
		sb_fmt(&b, "<url><loc>%s%s</loc></url>\n", pre, t);
		sitemap_link(links, links_cap, nlinks, i, t);
	}
	sb_str(&b, "</urlset>\n");
	if (gz)
		sb_gzip(&b);
	res->status = 200;
	res->content_type = gz ? "application/gzip" : "application/xml";
	return finish(&b, res);
}

/* The faulty sitemaps of --sitemap-faults (kind 5 hosts): "big" lists
 * TW_BIG_LOCS pages /big/bK.html, "huge" TW_HUGE_LOCS pages /huge/hK.html
 * padded by comments, "bad" TW_BAD_LOCS pages /bad/bK.html and then a
 * mismatched end tag (more entries after it are never read). */
static int make_sitemap_fault(const struct tw_config *cfg, long i, char which,
                              struct tw_resource *res, struct tw_link *links, size_t links_cap,
                              size_t *nlinks)
{
	struct sbuf b = { 0 };
	char pre[128], t[160];
	long n = which == 'b' ? TW_BIG_LOCS : which == 'h' ? TW_HUGE_LOCS : TW_BAD_LOCS + 3;
	const char *dir = which == 'b' ? "big/b" : which == 'h' ? "huge/h" : "bad/b";
	if ((long)links_cap > cfg->sitemap_max_urls)
		links_cap = (size_t)cfg->sitemap_max_urls;
	host_prefix(cfg, i, 0, pre, sizeof pre);
	sb_str(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	           "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
	for (long k = 0; k < n && !b.err; k++) {
		snprintf(t, sizeof t, "/%s%ld.html", dir, k);
		if (which == 'x' && k == TW_BAD_LOCS)
			sb_str(&b, "<url><loc>broken</lo></url>\n");
		sb_fmt(&b, "<url><loc>%s%s</loc>", pre, t);
		if (which == 'h')
			sb_fmt(&b, "<!-- %0240d -->", 0);
		sb_str(&b, "</url>\n");
		if (which == 'b' || (which == 'x' && k < TW_BAD_LOCS))
			sitemap_link(links, links_cap, nlinks, i, t);
	}
	sb_str(&b, "</urlset>\n");
	res->status = 200;
	res->content_type = "application/xml";
	return finish(&b, res);
}

/* /sitemap_index.xml (robots kind 6): lists /sitemap.xml.gz. */
static int make_sitemap_index(const struct tw_config *cfg, long i, struct tw_resource *res,
                              struct tw_link *links, size_t links_cap, size_t *nlinks)
{
	struct sbuf b = { 0 };
	char pre[128];
	host_prefix(cfg, i, 0, pre, sizeof pre);
	sb_fmt(&b,
	       "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n"
	       "<sitemap><loc>%s/sitemap.xml.gz</loc></sitemap>\n</sitemapindex>\n",
	       pre);
	sitemap_link(links, links_cap, nlinks, i, "/sitemap.xml.gz");
	res->status = 200;
	res->content_type = "application/xml";
	return finish(&b, res);
}

/* A small page without links: title "hI WHAT K", one paragraph. */
static int make_leaf(long i, long k, const char *what, const char *text, struct tw_resource *res)
{
	struct sbuf b = { 0 };
	sb_fmt(&b, "<html><head><title>h%ld %s %ld</title></head><body><p>%s</p></body></html>\n",
	       i, what, k, text);
	res->status = 200;
	res->content_type = "text/html";
	return finish(&b, res);
}

/* /o/oK.html: a page no page links. */
static int make_orphan(long i, long k, struct tw_resource *res)
{
	return make_leaf(i, k, "orphan", "Listed only in the sitemap.", res);
}

static int make_binary(const struct tw_config *cfg, long i, long k, int pdf,
                       struct tw_resource *res)
{
	struct sbuf b = { 0 };
	struct rng r = { key5(cfg, i, k, 0, pdf ? TAG_PDF : TAG_IMG) };
	size_t n = pdf ? 2000 + (size_t)rng_below(&r, 18000) : 1000 + (size_t)rng_below(&r, 3000);
	if (pdf)
		sb_fmt(&b, "%%PDF-1.4\n%% h%ld document %ld\n", i, k);
	else
		sb_add(&b, "\x89PNG\r\n\x1a\n", 8);
	sb_reserve(&b, n + 16);
	if (b.err)
		return finish(&b, res);
	for (size_t x = 0; x < n; x += 8) {
		uint64_t v = rng_next(&r);
		size_t m = n - x < 8 ? n - x : 8;
		if (pdf) {
			for (size_t y = 0; y < m; y++)
				b.p[b.len++] = (char)(' ' + (v >> (8 * y)) % 90);
		} else {
			memcpy(b.p + b.len, &v, m);
			b.len += m;
		}
	}
	if (pdf)
		sb_str(&b, "\n%%EOF\n");
	res->status = 200;
	res->content_type = pdf ? "application/pdf" : "image/png";
	return finish(&b, res);
}

long tw_page_version(const struct tw_config *cfg, long host, long page, long epoch)
{
	for (long e = epoch; e > 0; e--)
		if (key5(cfg, host, page, e, TAG_EPOCH) % 100 < (uint64_t)cfg->change_pct)
			return e;
	return 0;
}

static int resource_get(const struct tw_config *cfg, long host, const char *path, size_t path_len,
                        struct tw_resource *res, struct tw_link *links, size_t links_cap,
                        size_t *nlinks);

/* Every 200 has validators; a resource other than a page never changes
 * (version 0), its entity tag drawn from its host and path. */
int tw_resource_get(const struct tw_config *cfg, long host, const char *path, size_t path_len,
                    struct tw_resource *res, struct tw_link *links, size_t links_cap,
                    size_t *nlinks)
{
	int rc = resource_get(cfg, host, path, path_len, res, links, links_cap, nlinks);
	if (rc == 0 && res->status == 200 && res->etag[0] == '\0') {
		uint64_t h = key5(cfg, host, 0, 0, TAG_ETAG);
		for (size_t k = 0; k < path_len; k++)
			h = mix64(h ^ (unsigned char)path[k]);
		snprintf(res->etag, sizeof res->etag, "W/\"r%016llx\"", (unsigned long long)h);
		res->last_modified = TW_EPOCH0_UNIX;
	}
	return rc;
}

static int resource_get(const struct tw_config *cfg, long host, const char *path, size_t path_len,
                        struct tw_resource *res, struct tw_link *links, size_t links_cap,
                        size_t *nlinks)
{
	const char *p = path, *end = path + path_len;
	const char *q = memchr(path, '?', path_len);
	const char *pend = q ? q : end;
	long j, v;
	char t[160];

	memset(res, 0, sizeof *res);
	res->loc.host = -1;
	if (nlinks != NULL)
		*nlinks = 0;
	if (host < 0 || host >= cfg->hosts + (cfg->requisites ? TW_REQ_CDN_HOSTS : 0))
		return make_simple(res, 404);
	if (cfg->requisites && pend - p > 5 && memcmp(p, "/req/", 5) == 0 && q == NULL)
		return make_requisite(cfg, host, p, pend, res, links, links_cap, nlinks);
	if (host >= cfg->hosts) /* a CDN host: requisites and robots.txt only */
		return pend - p == 11 && memcmp(p, "/robots.txt", 11) == 0
		               ? make_robots(cfg, host, res)
		               : make_simple(res, 404);
	j = parse_page(cfg, p, pend);
	if (tw_host_fault(cfg, host) == TW_FAULT_SESSION &&
	    (v = match_num(p, end, "/sess?sid=", "")) >= 0)
		return make_session(host, v, res, links, links_cap, nlinks);
	if (tw_host_fault(cfg, host) == TW_FAULT_USERINFO &&
	    (v = match_num(p, end, "/u", "")) >= 0 && v < TW_USERINFO_LINKS)
		return make_leaf(host, v, "userinfo", "Linked with a userinfo.", res);
	if (q != NULL) {
		size_t ql = (size_t)(end - q);
		if (j >= 0 && ql == 4 && (memcmp(q, "?q=1", 4) == 0 || memcmp(q, "?q=2", 4) == 0))
			return make_variant(cfg, host, j, q[3] - '0', res, links, links_cap,
			                    nlinks);
		return make_simple(res, 404);
	}
	if (j >= 0)
		return make_page(cfg, host, tw_page_source(cfg, host, j), res, links, links_cap,
		                 nlinks);
	if (pend - p == 11 && memcmp(p, "/robots.txt", 11) == 0) {
		enum tw_fault f = tw_host_fault(cfg, host);
		if (f == TW_FAULT_ROBOTSREDIR || f == TW_FAULT_ROBOTSREDIR6)
			return make_redirect(cfg, res, 301, (host + 1) % cfg->hosts,
			                     f == TW_FAULT_ROBOTSREDIR ? "/rr/4" : "/rr/5", 1,
			                     host);
		return make_robots(cfg, host, res);
	}
	int kind = tw_robots_kind(cfg, host);
	if (tw_host_fault(cfg, host) == TW_FAULT_NONE && (kind == 5 || kind == 6)) {
		if (pend - p == 12 && memcmp(p, "/sitemap.xml", 12) == 0)
			return make_sitemap(cfg, host, 0, res, links, links_cap, nlinks);
		if (pend - p == 15 && memcmp(p, "/sitemap.xml.gz", 15) == 0)
			return make_sitemap(cfg, host, 1, res, links, links_cap, nlinks);
		if (pend - p == 18 && memcmp(p, "/sitemap_index.xml", 18) == 0)
			return make_sitemap_index(cfg, host, res, links, links_cap, nlinks);
		if ((v = match_num(p, pend, "/o/o", ".html")) >= 0 && v < TW_ORPHANS)
			return make_orphan(host, v, res);
		if (cfg->sitemap_faults && kind == 5) {
			static const char *const names[] = { "/sitemap_big.xml",
				                             "/sitemap_huge.xml",
				                             "/sitemap_bad.xml" };
			for (int k = 0; k < 3; k++)
				if ((size_t)(pend - p) == strlen(names[k]) &&
				    memcmp(p, names[k], strlen(names[k])) == 0)
					return make_sitemap_fault(cfg, host, "bhx"[k], res, links,
					                          links_cap, nlinks);
			if (((v = match_num(p, pend, "/big/b", ".html")) >= 0 && v < TW_BIG_LOCS) ||
			    ((v = match_num(p, pend, "/huge/h", ".html")) >= 0 &&
			     v < TW_HUGE_LOCS) ||
			    ((v = match_num(p, pend, "/bad/b", ".html")) >= 0 &&
			     v < TW_BAD_LOCS + 3))
				return make_orphan(host, v, res);
		}
	}
	if (pend - p == 12 && memcmp(p, "/sitemap.xml", 12) == 0)
		return make_simple(res, 404);
	if ((v = match_num(p, pend, "/img/i", ".png")) >= 0 && v < cfg->pages)
		return make_binary(cfg, host, v, 0, res);
	if ((v = match_num(p, pend, "/doc/d", ".pdf")) >= 0 && v < cfg->pages)
		return make_binary(cfg, host, v, 1, res);
	if ((v = match_num(p, pend, "/r/", "")) >= 0 && v < cfg->pages) {
		page_path(v, t, sizeof t);
		return make_redirect(cfg, res, 301, host, t, 1, host);
	}
	if ((v = match_num(p, pend, "/r2/", "")) >= 0 && v < cfg->pages) {
		snprintf(t, sizeof t, "/r/%ld", v);
		return make_redirect(cfg, res, 302, host, t, 0, host);
	}
	if ((v = match_num(p, pend, "/r3/", "")) >= 0 && v < cfg->pages) {
		snprintf(t, sizeof t, "/r2/%ld", v);
		return make_redirect(cfg, res, 301, host, t, 0, host);
	}
	if ((v = match_num(p, pend, "/rx/", "")) >= 0 && v < cfg->pages) {
		page_path(v, t, sizeof t);
		long to =
		        tw_host_fault(cfg, host) != TW_FAULT_NONE ? host : (host + 1) % cfg->hosts;
		return make_redirect(cfg, res, 302, to, t, 1, host);
	}
	if ((v = match_num(p, pend, "/inf/", "")) >= 0 && v < 1000000000) {
		snprintf(t, sizeof t, "/inf/%ld", v + 1);
		return make_redirect(cfg, res, 302, host, t, 0, host);
	}
	if ((v = match_num(p, pend, "/rr/", "")) > 0 && v < 100) {
		snprintf(t, sizeof t, "/rr/%ld", v - 1);
		return make_redirect(cfg, res, 302, (host + 1) % cfg->hosts, t, 1, host);
	}
	if (v == 0) { /* /rr/0: where the robotsredir chain ends */
		struct sbuf b = { 0 };
		sb_str(&b, "User-agent: *\nDisallow: /\n");
		res->status = 200;
		res->content_type = "text/plain";
		return finish(&b, res);
	}
	if ((v = match_num(p, pend, "/status/", "")) >= 100 && v <= 999)
		return make_simple(res, (int)v);
	if (pend - p == 7 && memcmp(p, "/loop/a", 7) == 0)
		return make_redirect(cfg, res, 302, host, "/loop/b", 0, host);
	if (pend - p == 7 && memcmp(p, "/loop/b", 7) == 0)
		return make_redirect(cfg, res, 302, host, "/loop/a", 0, host);
	if (tw_host_fault(cfg, host) == TW_FAULT_TRAP && pend - p > 5 &&
	    memcmp(p, "/cal/", 5) == 0) {
		long y = 0, m = 0;
		const char *s = p + 5;
		if (parse_num(&s, pend, &y) == 0 && s < pend && *s == '/' && (s++, 1) &&
		    parse_num(&s, pend, &m) == 0 && s + 1 == pend && *s == '/' && y >= 1 &&
		    m >= 1 && m <= 12)
			return make_calendar(cfg, host, y, m, res, links, links_cap, nlinks);
	}
	return make_simple(res, 404);
}

void tw_resource_clear(struct tw_resource *res)
{
	if (res == NULL)
		return;
	free(res->body);
	res->body = NULL;
	res->body_len = 0;
}

/* ---------- gzip bomb ---------- */

static unsigned char *bomb;
static size_t bomb_len;
static uint64_t bomb_inflated;

/* A raw-deflate segment of `in` from a fresh stream, ended by flush. */
static int deflate_segment(const unsigned char *in, size_t in_len, int flush, unsigned char *out,
                           size_t cap, size_t *out_len)
{
	z_stream zs;
	memset(&zs, 0, sizeof zs);
	if (deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)in_len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	int zr = deflate(&zs, flush);
	int ok = (flush == Z_FINISH) ? zr == Z_STREAM_END
	                             : (zr == Z_OK && zs.avail_in == 0 && zs.avail_out > 0);
	*out_len = cap - zs.avail_out;
	deflateEnd(&zs);
	return ok ? 0 : -1;
}

const unsigned char *tw_gzip_bomb(size_t *len, uint64_t *inflated)
{
	enum { SEG = 1 << 20, NSEG = 2048 };
	unsigned char *zero = NULL, seg[16384], tail[64];
	size_t seg_len = 0, tail_len = 0;
	if (bomb != NULL)
		goto out;
	zero = calloc(1, SEG);
	if (zero == NULL)
		goto out;
	if (deflate_segment(zero, SEG, Z_FULL_FLUSH, seg, sizeof seg, &seg_len) != 0 ||
	    deflate_segment(zero, 0, Z_FINISH, tail, sizeof tail, &tail_len) != 0)
		goto out;
	uLong crc1 = crc32(0L, zero, SEG), crc = crc32(0L, Z_NULL, 0);
	for (int k = 0; k < NSEG; k++)
		crc = crc32_combine(crc, crc1, SEG);
	uint64_t total = (uint64_t)SEG * NSEG;
	size_t n = 10 + seg_len * NSEG + tail_len + 8;
	unsigned char *b = malloc(n);
	if (b == NULL)
		goto out;
	static const unsigned char hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3 };
	size_t pos = 0;
	memcpy(b, hdr, 10);
	pos = 10;
	for (int k = 0; k < NSEG; k++) {
		memcpy(b + pos, seg, seg_len);
		pos += seg_len;
	}
	memcpy(b + pos, tail, tail_len);
	pos += tail_len;
	for (int k = 0; k < 4; k++)
		b[pos++] = (unsigned char)(crc >> (8 * k));
	for (int k = 0; k < 4; k++)
		b[pos++] = (unsigned char)(total >> (8 * k));
	bomb = b;
	bomb_len = pos;
	bomb_inflated = total;
out:
	free(zero);
	if (bomb == NULL)
		return NULL;
	*len = bomb_len;
	*inflated = bomb_inflated;
	return bomb;
}

/* ---------- seeds, hosts info ---------- */

int tw_seeds_write(const struct tw_config *cfg, FILE *out)
{
	long s = cfg->seed_hosts < 0 || cfg->seed_hosts > cfg->hosts ? cfg->hosts : cfg->seed_hosts;
	for (long i = 0; i < s; i++) {
		if (tw_host_fault(cfg, i) != TW_FAULT_NONE)
			continue;
		fprintf(out, "http://h%ld.%s:%d/\n", i, cfg->domain, cfg->http_port);
	}
	return ferror(out) ? -1 : 0;
}

int tw_hosts_info_write(const struct tw_config *cfg, FILE *out)
{
	for (long i = 0; i < cfg->hosts; i++) {
		int kind = tw_robots_kind(cfg, i);
		uint32_t a = tw_host_addr(cfg, i);
		char ip[40] = "";
		if (a != 0)
			snprintf(ip, sizeof ip, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255,
			         (a >> 8) & 255, a & 255);
		if (tw_host_stack(cfg, i) != TW_STACK_V4)
			snprintf(ip + strlen(ip), sizeof ip - strlen(ip), "%s::1", a ? "," : "");
		fprintf(out, "h%ld.%s\t%s\t%d\t%d\t%s\t%d\t%s\n", i, cfg->domain, ip,
		        robots_status(kind), kind,
		        (kind == 3 || kind == 8) ? cfg->crawl_delay : "-",
		        (kind == 5 || kind == 6) && tw_host_fault(cfg, i) == TW_FAULT_NONE,
		        tw_fault_name(tw_host_fault(cfg, i)));
	}
	return ferror(out) ? -1 : 0;
}

/* ---------- robots matching for the expected set ---------- */

struct rule {
	int allow;
	const char *prefix;
};

/* Rules of the group that applies to agent token tok; *all_denied for 5xx. */
static size_t robots_rules(const struct tw_config *cfg, long host, const char *tok, struct rule *r,
                           int *all_denied)
{
	int kind = tw_robots_kind(cfg, host);
	int named = strcasecmp(tok, cfg->robots_agent) == 0;
	*all_denied = robots_status(kind) >= 500;
	switch (kind) {
	case 1: r[0] = (struct rule){ 0, "/private/" }; return 1;
	case 2:
		if (!named)
			return 0;
		r[0] = (struct rule){ 0, "/s1/" };
		r[1] = (struct rule){ 0, "/doc/" };
		return 2;
	case 3: r[0] = (struct rule){ 0, "/s3/" }; return 1;
	case 6:
		r[0] = (struct rule){ 1, "/private/p7.html" };
		r[1] = (struct rule){ 0, "/private/" };
		return 2;
	case 8: r[0] = (struct rule){ 0, "/r/" }; return 1;
	case 9:
		if (!named)
			return 0;
		r[0] = (struct rule){ 0, "/" };
		return 1;
	default: return 0;
	}
}

int tw_robots_allowed(const struct tw_config *cfg, long host, const char *tok, const char *path)
{
	struct rule r[4];
	int denied = 0;
	size_t n = robots_rules(cfg, host, tok, r, &denied);
	if (denied)
		return 0;
	size_t best = 0;
	int verdict = 1;
	for (size_t k = 0; k < n; k++) {
		size_t pl = strlen(r[k].prefix);
		if (strncmp(path, r[k].prefix, pl) != 0)
			continue;
		if (pl > best || (pl == best && r[k].allow)) {
			best = pl;
			verdict = r[k].allow;
		}
	}
	return verdict;
}

/* ---------- expected set (BFS) ---------- */

struct vnode {
	struct vnode *next;
	long host;
	char path[];
};

struct vset {
	struct vnode **tab;
	size_t nb, n;
};

static uint64_t hash_hp(long host, const char *path)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)host;
	for (const char *s = path; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return mix64(h);
}

/* 1 inserted, 0 present, -1 no memory. */
static int vset_add(struct vset *v, long host, const char *path)
{
	if (v->n + 1 > v->nb) {
		size_t nb = v->nb ? v->nb * 2 : 1024;
		struct vnode **nt = calloc(nb, sizeof *nt);
		if (nt == NULL)
			return -1;
		for (size_t b = 0; b < v->nb; b++) {
			struct vnode *e = v->tab[b];
			while (e) {
				struct vnode *nx = e->next;
				size_t k = hash_hp(e->host, e->path) & (nb - 1);
				e->next = nt[k];
				nt[k] = e;
				e = nx;
			}
		}
		free(v->tab);
		v->tab = nt;
		v->nb = nb;
	}
	size_t k = hash_hp(host, path) & (v->nb - 1);
	for (struct vnode *e = v->tab[k]; e; e = e->next)
		if (e->host == host && strcmp(e->path, path) == 0)
			return 0;
	size_t pl = strlen(path);
	struct vnode *e = malloc(sizeof *e + pl + 1);
	if (e == NULL)
		return -1;
	e->host = host;
	memcpy(e->path, path, pl + 1);
	e->next = v->tab[k];
	v->tab[k] = e;
	v->n++;
	return 1;
}

static void vset_free(struct vset *v)
{
	for (size_t b = 0; b < v->nb; b++) {
		struct vnode *e = v->tab[b];
		while (e) {
			struct vnode *nx = e->next;
			free(e);
			e = nx;
		}
	}
	free(v->tab);
}

struct strvec {
	char **v;
	size_t n, cap;
};

static int strvec_push(struct strvec *s, char *str)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 1024;
		char **nv = realloc(s->v, nc * sizeof *nv);
		if (nv == NULL)
			return -1;
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->n++] = str;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct qitem {
	long host;
	int hops; /* -1: a page or link; else a requisite this many hops off the domains */
	char path[160];
};

struct queue {
	struct qitem *v;
	size_t head, n, cap;
};

static int queue_push(struct queue *q, long host, const char *path)
{
	if (q->n == q->cap) {
		size_t nc = q->cap ? q->cap * 2 : 1024;
		struct qitem *nv = realloc(q->v, nc * sizeof *nv);
		if (nv == NULL)
			return -1;
		q->v = nv;
		q->cap = nc;
	}
	q->v[q->n].host = host;
	q->v[q->n].hops = -1;
	snprintf(q->v[q->n].path, sizeof q->v[0].path, "%s", path);
	q->n++;
	return 0;
}

static int record(const struct tw_config *cfg, struct strvec *lines, long host, const char *path,
                  int status)
{
	char buf[512];
	int n = snprintf(buf, sizeof buf, "http://h%ld.%s:%d%s\t%d", host, cfg->domain,
	                 cfg->http_port, path, status);
	if (n < 0 || (size_t)n >= sizeof buf)
		return -1;
	char *s = strdup(buf);
	if (s == NULL || strvec_push(lines, s) != 0) {
		free(s);
		return -1;
	}
	return 0;
}

struct bfs {
	const struct tw_config *cfg;
	const char *tok;
	struct vset *seen, *contacted;
	struct strvec *lines;
	struct queue *q;
};

static int discover(struct bfs *b, long host, const char *path);

/* The crawler's first contact with a host makes it fetch that host's
 * robots.txt (and, following sitemaps, those it lists): recorded then.
 * Returns 0, or -1 on allocation failure. */
static int contact(struct bfs *b, long host)
{
	const struct tw_config *cfg = b->cfg;
	int r = vset_add(b->contacted, host, "");
	if (r <= 0)
		return r;
	int kind = tw_robots_kind(cfg, host);
	int st = robots_status(kind);
	if (vset_add(b->seen, host, "/robots.txt") < 0 ||
	    record(cfg, b->lines, host, "/robots.txt", st) != 0)
		return -1;
	/* A crawler that follows sitemaps asks for those robots.txt lists. */
	if (cfg->sitemaps && (kind == 5 || kind == 6) &&
	    discover(b, host, kind == 5 ? "/sitemap.xml" : "/sitemap_index.xml") != 0)
		return -1;
	if (cfg->sitemaps && cfg->sitemap_faults && kind == 5 &&
	    (discover(b, host, "/sitemap_big.xml") != 0 ||
	     discover(b, host, "/sitemap_huge.xml") != 0 ||
	     discover(b, host, "/sitemap_bad.xml") != 0))
		return -1;
	return 0;
}

/* Queues host's path once unless robots.txt (fetched at the crawler's
 * first contact with the host) disallows it; hops as in struct qitem.
 * Returns 0, or -1 on allocation failure. */
static int enqueue(struct bfs *b, long host, const char *path, int hops)
{
	if (contact(b, host) != 0)
		return -1;
	if (!tw_robots_allowed(b->cfg, host, b->tok, path))
		return 0;
	int r = vset_add(b->seen, host, path);
	if (r <= 0 || queue_push(b->q, host, path) != 0)
		return r;
	b->q->v[b->q->n - 1].hops = hops;
	return 0;
}

/* A URL was discovered (seed, link or Location): filter it (fault and
 * unknown hosts, robots) and queue it once. Returns 0, or -1 on
 * allocation failure. */
static int discover(struct bfs *b, long host, const char *path)
{
	const struct tw_config *cfg = b->cfg;
	if (host < 0 || host >= cfg->hosts || tw_host_fault(cfg, host) != TW_FAULT_NONE)
		return 0;
	return enqueue(b, host, path, -1);
}

/* A requisite named by a page or stylesheet of host `from`, which is
 * from_hops hops off the domains: queued once when at most one hop off
 * them (hosts N and up are off; a requisite on the host that named it is
 * as many hops off as that host's resource was, one on another off host
 * one more). Returns 0, or -1 on allocation failure. */
static int discover_requisite(struct bfs *b, long from, int from_hops, long host, const char *path)
{
	const struct tw_config *cfg = b->cfg;
	int hops = host < cfg->hosts ? 0 : host == from ? from_hops : from_hops + 1;
	if (hops > 1 || host < 0 || host >= cfg->hosts + TW_REQ_CDN_HOSTS ||
	    tw_host_fault(cfg, host) != TW_FAULT_NONE)
		return 0;
	return enqueue(b, host, path, hops);
}

/* What a fetched item leads to: a page's links (and requisites), a
 * redirect's target, a requisite stylesheet's url()s. */
static int follow_item(struct bfs *b, const struct qitem *it, const struct tw_resource *res,
                       const struct tw_link *links, size_t nl)
{
	const struct tw_config *cfg = b->cfg;
	int st = res->status;
	const char *ct = res->content_type ? res->content_type : "";
	int html = strncmp(ct, "text/html", 9) == 0;
	if (it->hops >= 0) {
		for (size_t k = 0; st == 200 && strcmp(ct, "text/css") == 0 && k < nl; k++)
			if (discover_requisite(b, it->host, it->hops, links[k].host,
			                       links[k].path) != 0)
				return -1;
		return 0;
	}
	if (st == 200 && (html || cfg->sitemaps)) {
		for (size_t k = 0; k < nl; k++)
			if (discover(b, links[k].host, links[k].path) != 0)
				return -1;
	} else if ((st == 301 || st == 302) && res->loc.host >= 0) {
		return discover(b, res->loc.host, res->loc.path);
	}
	long j = parse_page(cfg, it->path, it->path + strlen(it->path));
	if (cfg->requisites && st == 200 && html && j >= 0) {
		struct tw_link req[8];
		size_t n = page_requisites(cfg, it->host, j, req, 8);
		for (size_t k = 0; k < n; k++)
			if (discover_requisite(b, it->host, 0, req[k].host, req[k].path) != 0)
				return -1;
	}
	return 0;
}

int tw_expected_write(const struct tw_config *cfg, const char *agent, FILE *out)
{
	struct vset seen = { 0 }, contacted = { 0 };
	struct strvec lines = { 0 };
	struct queue q = { 0 };
	struct tw_link *links = calloc(LINKS_MAX, sizeof *links);
	char tok[TW_NAME_MAX + 1];
	int rc = -1;
	size_t tl = strcspn(agent, "/ ");
	if (tl > TW_NAME_MAX)
		tl = TW_NAME_MAX;
	memcpy(tok, agent, tl);
	tok[tl] = '\0';
	if (links == NULL)
		goto out;

	long s = cfg->seed_hosts < 0 || cfg->seed_hosts > cfg->hosts ? cfg->hosts : cfg->seed_hosts;
	struct bfs b = { cfg, tok, &seen, &contacted, &lines, &q };
	for (long i = 0; i < s; i++)
		if (discover(&b, i, "/") != 0)
			goto out;
	while (q.head < q.n) {
		struct qitem it = q.v[q.head++];
		struct tw_resource res;
		size_t nl = 0;
		if (tw_resource_get(cfg, it.host, it.path, strlen(it.path), &res, links, LINKS_MAX,
		                    &nl) != 0)
			goto out;
		int bad = record(cfg, &lines, it.host, it.path, res.status) != 0 ||
		          follow_item(&b, &it, &res, links, nl) != 0;
		tw_resource_clear(&res);
		if (bad)
			goto out;
		/* Compact the consumed prefix so the queue stays O(frontier). */
		if (q.head > 65536 && q.head * 2 > q.n) {
			memmove(q.v, q.v + q.head, (q.n - q.head) * sizeof *q.v);
			q.n -= q.head;
			q.head = 0;
		}
	}
	qsort(lines.v, lines.n, sizeof *lines.v, cmp_str);
	for (size_t k = 0; k < lines.n; k++)
		fprintf(out, "%s\n", lines.v[k]);
	rc = ferror(out) ? -1 : 0;
out:
	if (rc != 0)
		fprintf(stderr, "testweb: expected set: out of memory or write error\n");
	for (size_t k = 0; k < lines.n; k++)
		free(lines.v[k]);
	free(lines.v);
	free(q.v);
	free(links);
	vset_free(&seen);
	vset_free(&contacted);
	return rc;
}

/* ---------- changed pages ---------- */

/* A URL of the expected set ("http://hI.D:PORT/path") as host and path. */
static int url_split(const struct tw_config *cfg, const char *url, long *host, const char **path)
{
	const char *h = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
	if (h == NULL)
		return -1;
	const char *slash = strchr(h, '/');
	const char *colon = strchr(h, ':');
	const char *he = colon != NULL && (slash == NULL || colon < slash) ? colon : slash;
	if (he == NULL || slash == NULL || tw_host_parse(cfg, h, (size_t)(he - h), host) != 0)
		return -1;
	*path = slash;
	return 0;
}

int tw_changed_write(const struct tw_config *cfg, const char *agent, long since, FILE *out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc = -1;
	if (mem == NULL)
		return -1;
	int bad = tw_expected_write(cfg, agent, mem);
	if (fclose(mem) != 0 || bad != 0)
		goto out;
	/* URL \t STATUS lines, sorted: keep the 200 pages whose version moved */
	for (char *line = buf, *nl; line != NULL && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		char *tab = strchr(line, '\t');
		long host;
		const char *path;
		if (tab == NULL || strcmp(tab + 1, "200") != 0)
			continue;
		*tab = '\0';
		if (url_split(cfg, line, &host, &path) != 0 || strchr(path, '?') != NULL)
			continue;
		long j = parse_page(cfg, path, path + strlen(path));
		if (j >= 0)
			j = tw_page_source(cfg, host, j);
		if (j >= 0 && tw_page_version(cfg, host, j, cfg->epoch) !=
		                      tw_page_version(cfg, host, j, since))
			fprintf(out, "%s\n", line);
	}
	rc = ferror(out) ? -1 : 0;
out:
	free(buf);
	return rc;
}

/* ---------- dump ---------- */

static int mkdir_p(const char *path)
{
	char tmp[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof tmp)
		return -1;
	memcpy(tmp, path, n + 1);
	for (size_t k = 1; k <= n; k++) {
		if (tmp[k] == '/' || tmp[k] == '\0') {
			char c = tmp[k];
			tmp[k] = '\0';
			if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
				return -1;
			tmp[k] = c;
		}
	}
	return 0;
}

static int dump_one(const struct tw_config *cfg, const char *dir, long i, const char *path,
                    FILE *urls)
{
	struct tw_resource res;
	char file[4096], d[4096];
	int rc = -1;
	if (tw_resource_get(cfg, i, path, strlen(path), &res, NULL, 0, NULL) != 0)
		return -1;
	if (res.status != 200) {
		rc = 0;
		goto out;
	}
	int n = snprintf(file, sizeof file, "%s/h%ld.%s%s%s", dir, i, cfg->domain, path,
	                 strcmp(path, "/") == 0 ? "index.html" : "");
	if (n < 0 || (size_t)n >= sizeof file)
		goto out;
	memcpy(d, file, (size_t)n + 1);
	char *slash = strrchr(d, '/');
	*slash = '\0';
	if (mkdir_p(d) != 0)
		goto out;
	FILE *f = fopen(file, "wb");
	if (f == NULL)
		goto out;
	size_t w = fwrite(res.body, 1, res.body_len, f);
	if (fclose(f) != 0 || w != res.body_len)
		goto out;
	if (urls != NULL)
		fprintf(urls, "http://h%ld.%s:%d%s\n", i, cfg->domain, cfg->http_port, path);
	rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "testweb: dump: cannot write %s\n", file);
	tw_resource_clear(&res);
	return rc;
}

int tw_dump(const struct tw_config *cfg, const char *dir)
{
	char file[4096], t[160];
	int rc = -1;
	FILE *urls = NULL;
	if (mkdir_p(dir) != 0) {
		fprintf(stderr, "testweb: dump: cannot create %s\n", dir);
		return -1;
	}
	snprintf(file, sizeof file, "%s/urls.txt", dir);
	urls = fopen(file, "w");
	if (urls == NULL)
		goto out;
	for (long i = 0; i < cfg->hosts; i++) {
		if (tw_host_fault(cfg, i) != TW_FAULT_NONE)
			continue;
		if (dump_one(cfg, dir, i, "/robots.txt", NULL) != 0 ||
		    dump_one(cfg, dir, i, "/sitemap.xml", NULL) != 0)
			goto out;
		for (long j = 0; j < cfg->pages; j++) {
			page_path(j, t, sizeof t);
			if (dump_one(cfg, dir, i, t, urls) != 0)
				goto out;
			snprintf(t, sizeof t, "/img/i%ld.png", j);
			if (dump_one(cfg, dir, i, t, NULL) != 0)
				goto out;
			snprintf(t, sizeof t, "/doc/d%ld.pdf", j);
			if (dump_one(cfg, dir, i, t, NULL) != 0)
				goto out;
		}
	}
	rc = 0;
out:
	if (urls != NULL && fclose(urls) != 0)
		rc = -1;
	return rc;
}
