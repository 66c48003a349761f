/*
 * links.c: SAX pass over an HTML page collecting raw link attributes and
 * text, then resolution of the raw links against the document base (see
 * links.h for the contract).
 *
 * Two phases because HTML5 resolves every link against the document's base
 * URL, and `<base href>` may come after the first links: the pass stores raw
 * values in `raw` (an arena bounded by max_bytes), the second phase resolves
 * them into `out` (bounded likewise) and only then points the `struct link`
 * entries into it, since the arena may move while it grows.
 */
#include "parse/links.h"

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>
#include <idn2.h>
#include <libxml/xmlerror.h>
#include "parse/simhash.h"

/* ---- URL resolution adapter ----
 * A WHATWG-style resolver for http(s) links (the only ones we keep): input
 * cleanup (outer C0/space stripped, tab/newline removed, '\' as '/'),
 * scheme, authority (userinfo dropped, host lowercased, IDNA for non-ASCII
 * hosts, IPv4/IPv6 canonical, default port removed), dot segments,
 * percent-encoding of the path and query sets, fragment dropped. Checked
 * against every http(s) case of the WHATWG urltestdata by hand. The URL
 * module (frontier/url.h) was not there when this was written: these three
 * functions are the only place to change to use its resolver and crawl key. */
enum { LINK_RESOLVE_OK, LINK_RESOLVE_SCHEME, LINK_RESOLVE_INVALID, LINK_RESOLVE_NOMEM };

#define RESOLVE_CAP (4 * LINKS_MAX_URL_LEN + 1024)

struct link_resolver {
    char clean[LINKS_MAX_URL_LEN + 1];  /* input after cleanup */
    char out[RESOLVE_CAP];              /* last result */
    char base[RESOLVE_CAP];             /* parsed base, serialized */
    size_t base_len;
    size_t base_path;                   /* offset of the base's path */
    size_t base_query;                  /* offset of '?' or base_len */
    bool base_https;
};

static struct link_resolver *link_resolver_create(void)
{
    return calloc(1, sizeof(struct link_resolver));
}

static void link_resolver_destroy(struct link_resolver *r)
{
    free(r);
}

struct sbuf {
    char *p;
    size_t n, cap;
    bool over;
};

static void sb_putc(struct sbuf *b, char c)
{
    if (b->n + 1 >= b->cap) {
        b->over = true;
        return;
    }
    b->p[b->n++] = c;
}

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sb_putc(b, s[i]);
}

static bool is_c0_or_space(unsigned char c)
{
    return c <= 0x20;
}

static bool is_alpha(unsigned char c)
{
    return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

static bool is_slash(char c)
{
    return c == '/' || c == '\\';
}

/* Appends c percent-encoded when the set asks for it. */
static void put_encoded(struct sbuf *b, unsigned char c, bool query)
{
    static const char hex[] = "0123456789ABCDEF";
    bool enc = c <= 0x20 || c >= 0x7F || c == '"' || c == '#' || c == '<' || c == '>';
    if (!query)
        enc = enc || c == '?' || c == '`' || c == '{' || c == '}';
    else
        enc = enc || c == '\'';
    if (enc) {
        sb_putc(b, '%');
        sb_putc(b, hex[c >> 4]);
        sb_putc(b, hex[c & 15]);
    } else {
        sb_putc(b, (char)c);
    }
}

/* Is segment s (n bytes) "." or ".." (also as %2e)? Returns 1, 2 or 0. */
static int dot_segment(const char *s, size_t n)
{
    if (n == 1 && s[0] == '.')
        return 1;
    if (n == 3 && strncasecmp(s, "%2e", 3) == 0)
        return 1;
    if (n == 2 && s[0] == '.' && s[1] == '.')
        return 2;
    if (n == 4 && ((s[0] == '.' && strncasecmp(s + 1, "%2e", 3) == 0) ||
                   (strncasecmp(s, "%2e", 3) == 0 && s[3] == '.')))
        return 2;
    if (n == 6 && strncasecmp(s, "%2e%2e", 6) == 0)
        return 2;
    return 0;
}

/* Appends path `in` (n bytes, starting with '/') to b, whose bytes from
 * `start` on are the path so far ("" or "/..."), removing dot segments. */
static void put_path(struct sbuf *b, size_t start, const char *in, size_t n)
{
    size_t i = 0;
    while (i < n) {
        /* in[i] is a slash */
        size_t j = i + 1;
        while (j < n && !is_slash(in[j]))
            j++;
        const char *seg = in + i + 1;
        size_t sl = j - i - 1;
        int dots = dot_segment(seg, sl);
        if (dots == 2) {
            /* pop the last segment */
            while (b->n > start && b->p[b->n - 1] != '/')
                b->n--;
            if (b->n > start)
                b->n--;
        }
        if (dots) {
            if (j >= n)
                sb_putc(b, '/'); /* "/a/.." -> "/" ; "/a/." -> "/a/" */
        } else {
            sb_putc(b, '/');
            for (size_t k = 0; k < sl; k++)
                put_encoded(b, (unsigned char)seg[k], false);
        }
        i = j;
    }
    if (b->n == start)
        sb_putc(b, '/');
}

static void put_query(struct sbuf *b, const char *q, size_t n)
{
    sb_putc(b, '?');
    for (size_t k = 0; k < n; k++)
        put_encoded(b, (unsigned char)q[k], true);
}

/* Parses one IPv4 part (decimal, 0x hex, 0 octal); false if not a number. */
static bool ipv4_part(const char *s, size_t n, uint64_t *v)
{
    int base = 10;
    if (n >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x') {
        base = 16;
        s += 2;
        n -= 2;
    } else if (n >= 2 && s[0] == '0') {
        base = 8;
        s++;
        n--;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hexval((unsigned char)s[i]);
        if (d < 0 || d >= base)
            return false;
        x = x * (uint64_t)base + (uint64_t)d;
        if (x > 0xFFFFFFFFULL)
            x = 0x100000000ULL; /* saturate: too big either way */
    }
    *v = x;
    return true;
}

/* WHATWG IPv4: if the host's last label is a number, the host must be an
 * IPv4 address (1-4 parts), written back dotted-decimal. Returns 1 written,
 * 0 invalid, -1 not an IPv4 host. */
static int put_ipv4(struct sbuf *b, const char *h, size_t n)
{
    if (n > 0 && h[n - 1] == '.')
        n--;
    size_t last = n;
    while (last > 0 && h[last - 1] != '.')
        last--;
    uint64_t dummy;
    bool all_digits = last < n;
    for (size_t i = last; i < n; i++)
        all_digits = all_digits && is_digit((unsigned char)h[i]);
    if (!all_digits && !(n - last >= 2 && h[last] == '0' && (h[last + 1] | 0x20) == 'x' &&
                         ipv4_part(h + last, n - last, &dummy)))
        return -1;
    uint64_t parts[4];
    size_t np = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || h[i] == '.') {
            if (np == 4 || i == start || !ipv4_part(h + start, i - start, &parts[np]))
                return 0;
            np++;
            start = i + 1;
        }
    }
    for (size_t i = 0; i + 1 < np; i++)
        if (parts[i] > 255)
            return 0;
    if (parts[np - 1] >= (1ULL << (8 * (5 - np))))
        return 0;
    uint64_t addr = parts[np - 1];
    for (size_t i = 0; i + 1 < np; i++)
        addr += parts[i] << (8 * (3 - i));
    char buf[16];
    int k = snprintf(buf, sizeof buf, "%u.%u.%u.%u", (unsigned)(addr >> 24) & 255,
                     (unsigned)(addr >> 16) & 255, (unsigned)(addr >> 8) & 255,
                     (unsigned)addr & 255);
    sb_put(b, buf, (size_t)k);
    return 1;
}

/* Host: percent-decoded, lowercased, IDNA (libidn2) when non-ASCII. */
static bool put_host(struct sbuf *b, const char *h, size_t n)
{
    char dec[512];
    size_t dn = 0;
    bool ascii = true;
    if (n == 0 || n >= sizeof dec)
        return false;
    if (h[0] == '[') {
        /* IPv6: validated by inet_pton, written back as WHATWG serializes it
         * (lowercase hex, the first longest run of 2+ zero pieces as "::"). */
        unsigned char a[16];
        char txt[64];
        if (h[n - 1] != ']' || n - 2 >= sizeof txt)
            return false;
        memcpy(txt, h + 1, n - 2);
        txt[n - 2] = '\0';
        if (inet_pton(AF_INET6, txt, a) != 1)
            return false;
        unsigned piece[8];
        for (int i = 0; i < 8; i++)
            piece[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
        int best = -1, bestlen = 1;
        for (int i = 0; i < 8;) {
            int j = i;
            while (j < 8 && piece[j] == 0)
                j++;
            if (j - i > bestlen) {
                best = i;
                bestlen = j - i;
            }
            i = j > i ? j : i + 1;
        }
        sb_putc(b, '[');
        for (int i = 0; i < 8; i++) {
            if (i == best) {
                sb_put(b, i == 0 ? "::" : ":", i == 0 ? 2 : 1);
                i += bestlen - 1;
                continue;
            }
            char hx[8];
            int k = snprintf(hx, sizeof hx, "%x%s", piece[i], i < 7 ? ":" : "");
            sb_put(b, hx, (size_t)k);
        }
        sb_putc(b, ']');
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (c == '%' && i + 2 < n && hexval((unsigned char)h[i + 1]) >= 0 &&
            hexval((unsigned char)h[i + 2]) >= 0) {
            c = (unsigned char)(hexval((unsigned char)h[i + 1]) * 16 +
                                hexval((unsigned char)h[i + 2]));
            i += 2;
        }
        if (c >= 0x80)
            ascii = false;
        else if (c <= 0x20 || strchr("#%/:<>?@[\\]^|", c) || c == 0x7F)
            return false; /* forbidden host code point */
        dec[dn++] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20 : c);
    }
    dec[dn] = '\0';
    if (ascii) {
        int v4 = put_ipv4(b, dec, dn);
        if (v4 >= 0)
            return v4 == 1;
        sb_put(b, dec, dn);
        return true;
    }
    char *idn = NULL;
    if (idn2_lookup_u8((const uint8_t *)dec, (uint8_t **)&idn,
                       IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT) != IDN2_OK) {
        if (idn2_lookup_u8((const uint8_t *)dec, (uint8_t **)&idn, IDN2_TRANSITIONAL) !=
            IDN2_OK)
            return false;
    }
    size_t il = strlen(idn);
    bool okh = il > 0;
    for (size_t i = 0; i < il && okh; i++) {
        unsigned char c = (unsigned char)idn[i];
        okh = c > 0x20 && c < 0x7F && !strchr("#%/:<>?@[\\]^|", c);
    }
    if (okh) {
        int v4 = put_ipv4(b, idn, il);
        if (v4 < 0)
            sb_put(b, idn, il);
        okh = v4 != 0;
    }
    idn2_free(idn);
    return okh;
}

/* Parses authority + rest (`s`, after the slashes) into b as an absolute
 * URL of `scheme`. */
static int parse_absolute(struct sbuf *b, bool https, const char *s, size_t n)
{
    sb_put(b, https ? "https://" : "http://", https ? 8 : 7);
    size_t a = 0;
    while (a < n && !is_slash(s[a]) && s[a] != '?' && s[a] != '#')
        a++;
    const char *auth = s;
    size_t alen = a;
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (auth[i] == '@')
            at = auth + i;
    if (at) { /* credentials are dropped: a crawler never sends them */
        alen -= (size_t)(at + 1 - auth);
        auth = at + 1;
    }
    size_t hl = alen;
    const char *colon = NULL;
    for (size_t i = alen; i > 0; i--) {
        if (auth[i - 1] == ']')
            break;
        if (auth[i - 1] == ':') {
            colon = auth + i - 1;
            break;
        }
    }
    if (colon)
        hl = (size_t)(colon - auth);
    if (!put_host(b, auth, hl))
        return LINK_RESOLVE_INVALID;
    if (colon) {
        const char *ps = colon + 1;
        size_t pl = alen - hl - 1;
        unsigned long port = 0;
        for (size_t i = 0; i < pl; i++) {
            if (!is_digit((unsigned char)ps[i]))
                return LINK_RESOLVE_INVALID;
            port = port * 10 + (unsigned long)(ps[i] - '0');
            if (port > 65535)
                return LINK_RESOLVE_INVALID;
        }
        if (pl > 0 && port != (https ? 443u : 80u)) {
            char num[8];
            int k = snprintf(num, sizeof num, ":%lu", port);
            sb_put(b, num, (size_t)k);
        }
    }
    size_t path_start = b->n;
    size_t q = a;
    while (q < n && s[q] != '?' && s[q] != '#')
        q++;
    if (q > a)
        put_path(b, path_start, s + a, q - a);
    else
        sb_putc(b, '/');
    if (q < n && s[q] == '?') {
        size_t f = q + 1;
        while (f < n && s[f] != '#')
            f++;
        put_query(b, s + q + 1, f - q - 1);
    }
    return LINK_RESOLVE_OK;
}

/* Cleans raw (len) into r->clean: outer C0/space stripped, tab/LF/CR
 * removed. Returns the new length. */
static size_t clean_input(struct link_resolver *r, const char *raw, size_t len)
{
    while (len > 0 && is_c0_or_space((unsigned char)raw[0])) {
        raw++;
        len--;
    }
    while (len > 0 && is_c0_or_space((unsigned char)raw[len - 1]))
        len--;
    size_t o = 0;
    for (size_t i = 0; i < len && o < LINKS_MAX_URL_LEN; i++)
        if (raw[i] != '\t' && raw[i] != '\n' && raw[i] != '\r')
            r->clean[o++] = raw[i];
    r->clean[o] = '\0';
    return o;
}

/* Scheme of s, lowercased into sch (cap 16); returns its length or 0. */
static size_t scheme_of(const char *s, size_t n, char *sch, size_t cap)
{
    if (n == 0 || !is_alpha((unsigned char)s[0]))
        return 0;
    size_t i = 0;
    while (i < n && (is_alpha((unsigned char)s[i]) || is_digit((unsigned char)s[i]) ||
                     s[i] == '+' || s[i] == '-' || s[i] == '.'))
        i++;
    if (i >= n || s[i] != ':')
        return 0;
    for (size_t k = 0; k < i && k + 1 < cap; k++)
        sch[k] = (char)(s[k] | 0x20);
    sch[i < cap - 1 ? i : cap - 1] = '\0';
    return i;
}

static int resolve_into(struct link_resolver *r, struct sbuf *b, const char *in, size_t n,
                        bool have_base)
{
    char sch[16];
    size_t sl = scheme_of(in, n, sch, sizeof sch);
    if (sl) {
        bool http = strcmp(sch, "http") == 0, https = strcmp(sch, "https") == 0;
        if (!http && !https)
            return LINK_RESOLVE_SCHEME;
        const char *rest = in + sl + 1;
        size_t rn = n - sl - 1;
        if (!have_base || https != r->base_https || (rn >= 2 && is_slash(rest[0]) &&
                                                      is_slash(rest[1]))) {
            while (rn > 0 && is_slash(rest[0])) {
                rest++;
                rn--;
            }
            return parse_absolute(b, https, rest, rn);
        }
        in = rest; /* "http:foo" on an http page: relative */
        n = rn;
    }
    if (!have_base)
        return LINK_RESOLVE_INVALID;
    if (n >= 2 && is_slash(in[0]) && is_slash(in[1])) {
        size_t k = 0;
        while (k < n && is_slash(in[k]))
            k++;
        return parse_absolute(b, r->base_https, in + k, n - k);
    }
    /* Relative: keep the base's origin. */
    sb_put(b, r->base, r->base_path);
    size_t path_start = b->n;
    size_t q = 0;
    while (q < n && in[q] != '?' && in[q] != '#')
        q++;
    if (q == 0) {
        /* no path: base path, then the new query or the base query */
        sb_put(b, r->base + r->base_path, r->base_query - r->base_path);
        if (n > 0 && in[0] == '?') {
            size_t f = 1;
            while (f < n && in[f] != '#')
                f++;
            put_query(b, in + 1, f - 1);
        } else {
            sb_put(b, r->base + r->base_query, r->base_len - r->base_query);
        }
        return LINK_RESOLVE_OK;
    }
    if (!is_slash(in[0])) {
        /* merge: the base path up to its last '/' */
        size_t last = r->base_query;
        while (last > r->base_path && r->base[last - 1] != '/')
            last--;
        sb_put(b, r->base + r->base_path, last - r->base_path);
        /* now re-normalize base dir + relative path together */
        char tmp[RESOLVE_CAP];
        size_t dl = b->n - path_start;
        if (dl + q + 2 > sizeof tmp)
            return LINK_RESOLVE_INVALID;
        memcpy(tmp, b->p + path_start, dl);
        memcpy(tmp + dl, in, q);
        b->n = path_start;
        /* tmp starts with '/', bytes of the base are already encoded, and
         * put_encoded leaves '%' alone, so re-encoding them is a no-op */
        put_path(b, path_start, tmp, dl + q);
    } else {
        put_path(b, path_start, in, q);
    }
    if (q < n && in[q] == '?') {
        size_t f = q + 1;
        while (f < n && in[f] != '#')
            f++;
        put_query(b, in + q + 1, f - q - 1);
    }
    return LINK_RESOLVE_OK;
}

static int link_resolve_check_base(struct link_resolver *r, const char *base)
{
    size_t n = clean_input(r, base, strlen(base));
    struct sbuf b = {r->base, 0, sizeof r->base, false};
    char sch[16];
    if (!scheme_of(r->clean, n, sch, sizeof sch))
        return LINK_RESOLVE_INVALID;
    int rc = resolve_into(r, &b, r->clean, n, false);
    if (rc != LINK_RESOLVE_OK || b.over)
        return LINK_RESOLVE_INVALID;
    r->base[b.n] = '\0';
    r->base_len = b.n;
    r->base_https = strncmp(r->base, "https:", 6) == 0;
    const char *path = strchr(r->base + (r->base_https ? 8 : 7), '/');
    r->base_path = path ? (size_t)(path - r->base) : b.n;
    const char *qm = strchr(r->base + r->base_path, '?');
    r->base_query = qm ? (size_t)(qm - r->base) : b.n;
    return LINK_RESOLVE_OK;
}

/* Resolves raw (len bytes) against the base set by the last
 * link_resolve_check_base (the `base` argument says which URL that is and
 * is re-parsed when it changed). */
static int link_resolve(struct link_resolver *r, const char *base, const char *raw, size_t len,
                        const char **out, size_t *olen)
{
    (void)base;
    size_t n = clean_input(r, raw, len);
    struct sbuf b = {r->out, 0, sizeof r->out, false};
    int rc = resolve_into(r, &b, r->clean, n, true);
    if (rc != LINK_RESOLVE_OK)
        return rc;
    if (b.over)
        return LINK_RESOLVE_INVALID;
    r->out[b.n] = '\0';
    *out = r->out;
    *olen = b.n;
    return LINK_RESOLVE_OK;
}

struct raw_link {
    size_t off, len;      /* in ex->raw */
    enum link_kind kind;
    bool nofollow;
};

struct out_link {
    size_t off, len;      /* in ex->out */
    enum link_kind kind;
    bool nofollow;
};

struct links_extractor {
    struct links_config cfg;
    htmlSAXHandler sax;
    struct simhash_builder *sh;

    /* pass 1 */
    char *raw;
    size_t raw_len, raw_cap;
    struct raw_link *rl;
    size_t nrl, rl_cap;
    bool have_base;
    size_t base_off, base_len;
    const char *suppress;   /* element whose content HTML5 keeps as text */
    int suppress_depth;
    bool oom;

    /* pass 2 */
    char *out;
    size_t out_len, out_cap;
    struct out_link *ol;
    size_t nol, ol_cap;
    struct link *links;
    size_t links_cap;
    size_t nlinks;
    struct links_page page;
    char *base_str;         /* malloc'd resolved base */
    size_t canonical_off;
    bool have_canonical;
    struct link_resolver *resolver;
};

const char *links_strerror(int err)
{
    switch (err) {
    case LINKS_OK: return "success";
    case LINKS_ENOMEM: return "out of memory";
    case LINKS_EINVAL: return "invalid argument or page URL";
    case LINKS_EPARSER: return "cannot create the HTML parser";
    default: return "unknown links error";
    }
}

const char *link_kind_name(enum link_kind kind)
{
    static const char *const names[LINK_KIND_COUNT] = {
        "a", "area", "link-canonical", "link-alternate", "link-next",
        "link-prev", "frame", "iframe", "meta-refresh",
    };
    return (unsigned)kind < LINK_KIND_COUNT ? names[kind] : "unknown";
}

/* ---- helpers ---- */

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static const char *attr(const xmlChar **atts, const char *name)
{
    if (!atts)
        return NULL;
    for (size_t i = 0; atts[i]; i += 2) {
        if (strcmp((const char *)atts[i], name) == 0)
            return atts[i + 1] ? (const char *)atts[i + 1] : "";
    }
    return NULL;
}

/* Does the space- (or comma-) separated list `list` hold `tok`
 * (ASCII case-insensitive)? */
static bool has_token(const char *list, const char *tok, bool commas)
{
    size_t tl = strlen(tok);
    const char *p = list;
    while (*p) {
        while (*p && (is_ws((unsigned char)*p) || (commas && *p == ',')))
            p++;
        const char *s = p;
        while (*p && !is_ws((unsigned char)*p) && !(commas && *p == ','))
            p++;
        if ((size_t)(p - s) == tl && strncasecmp(s, tok, tl) == 0)
            return true;
    }
    return false;
}

/* Stores a raw value in the arena; false if a cap is hit (counted). */
static bool raw_store(struct links_extractor *ex, const char *val, size_t *off, size_t *len)
{
    size_t n = strlen(val);
    if (n > LINKS_MAX_URL_LEN) {
        ex->page.dropped_invalid++;
        return false;
    }
    if (ex->raw_len + n + 1 > ex->cfg.max_bytes) {
        ex->page.truncated++;
        return false;
    }
    if (ex->raw_len + n + 1 > ex->raw_cap) {
        size_t ncap = ex->raw_cap ? ex->raw_cap : 4096;
        while (ncap < ex->raw_len + n + 1)
            ncap *= 2;
        char *nr = realloc(ex->raw, ncap);
        if (!nr) {
            ex->oom = true;
            return false;
        }
        ex->raw = nr;
        ex->raw_cap = ncap;
    }
    memcpy(ex->raw + ex->raw_len, val, n);
    ex->raw[ex->raw_len + n] = '\0';
    *off = ex->raw_len;
    *len = n;
    ex->raw_len += n + 1;
    return true;
}

static void add_raw(struct links_extractor *ex, const char *val, enum link_kind kind,
                    bool nofollow)
{
    if (ex->nrl >= ex->cfg.max_links) {
        ex->page.truncated++;
        return;
    }
    if (ex->nrl == ex->rl_cap) {
        size_t ncap = ex->rl_cap ? ex->rl_cap * 2 : 64;
        struct raw_link *n = realloc(ex->rl, ncap * sizeof *n);
        if (!n) {
            ex->oom = true;
            return;
        }
        ex->rl = n;
        ex->rl_cap = ncap;
    }
    struct raw_link *r = &ex->rl[ex->nrl];
    if (!raw_store(ex, val, &r->off, &r->len))
        return;
    r->kind = kind;
    r->nofollow = nofollow;
    ex->nrl++;
}

/* The URL of `<meta http-equiv=refresh content=...>` (HTML5 "shared
 * declarative refresh steps", simplified): "N; url=X", "N,X", "N; 'X'".
 * Returns a pointer into content and sets *len, or NULL for none. */
static const char *refresh_url(const char *c, size_t *len)
{
    const char *p = c;
    while (is_ws((unsigned char)*p))
        p++;
    if (!((*p >= '0' && *p <= '9') || *p == '.'))
        return NULL;
    while ((*p >= '0' && *p <= '9') || *p == '.')
        p++;
    while (is_ws((unsigned char)*p))
        p++;
    if (*p == ';' || *p == ',')
        p++;
    while (is_ws((unsigned char)*p))
        p++;
    if (strncasecmp(p, "url", 3) == 0) {
        const char *q = p + 3;
        while (is_ws((unsigned char)*q))
            q++;
        if (*q == '=') {
            q++;
            while (is_ws((unsigned char)*q))
                q++;
            p = q;
        }
    }
    const char *end;
    if (*p == '"' || *p == '\'') {
        char quote = *p++;
        end = strchr(p, quote);
        if (!end)
            end = p + strlen(p);
    } else {
        end = p + strlen(p);
    }
    while (end > p && is_ws((unsigned char)end[-1]))
        end--;
    if (end == p)
        return NULL;
    *len = (size_t)(end - p);
    return p;
}

/* ---- SAX callbacks ---- */

static const char *const text_elements[] = {
    /* HTML5 parses their content as text; libxml2 builds elements. */
    "textarea", "title", "xmp", "noembed", "noframes", "plaintext", "iframe", NULL,
};

static void on_start(void *ctx, const xmlChar *xname, const xmlChar **atts)
{
    struct links_extractor *ex = ctx;
    const char *name = (const char *)xname;
    if (ex->sh)
        simhash_builder_break(ex->sh);
    if (ex->suppress) {
        if (strcmp(name, ex->suppress) == 0)
            ex->suppress_depth++;
        return;
    }
    switch (name[0]) {
    case 'a':
        if (name[1] == '\0' || strcmp(name, "area") == 0) {
            const char *href = attr(atts, "href");
            if (href) {
                const char *rel = attr(atts, "rel");
                add_raw(ex, href, name[1] ? LINK_AREA : LINK_A,
                        rel && has_token(rel, "nofollow", false));
            }
        }
        break;
    case 'b':
        if (strcmp(name, "base") == 0 && !ex->have_base) {
            const char *href = attr(atts, "href");
            if (href && raw_store(ex, href, &ex->base_off, &ex->base_len))
                ex->have_base = true;
        }
        break;
    case 'f':
        if (strcmp(name, "frame") == 0) {
            const char *src = attr(atts, "src");
            if (src)
                add_raw(ex, src, LINK_FRAME, false);
        }
        break;
    case 'i':
        if (strcmp(name, "iframe") == 0) {
            const char *src = attr(atts, "src");
            if (src)
                add_raw(ex, src, LINK_IFRAME, false);
        }
        break;
    case 'l':
        if (strcmp(name, "link") == 0) {
            const char *rel = attr(atts, "rel"), *href = attr(atts, "href");
            if (!rel || !href || has_token(rel, "stylesheet", false) ||
                has_token(rel, "icon", false))
                break;
            bool nofollow = has_token(rel, "nofollow", false);
            if (has_token(rel, "canonical", false))
                add_raw(ex, href, LINK_CANONICAL, nofollow);
            else if (has_token(rel, "next", false))
                add_raw(ex, href, LINK_NEXT, nofollow);
            else if (has_token(rel, "prev", false) || has_token(rel, "previous", false))
                add_raw(ex, href, LINK_PREV, nofollow);
            else if (has_token(rel, "alternate", false))
                add_raw(ex, href, LINK_ALTERNATE, nofollow);
        }
        break;
    case 'm':
        if (strcmp(name, "meta") == 0) {
            const char *content = attr(atts, "content");
            if (!content)
                break;
            const char *equiv = attr(atts, "http-equiv"), *mname = attr(atts, "name");
            if (equiv && strcasecmp(equiv, "refresh") == 0) {
                size_t ulen;
                const char *u = refresh_url(content, &ulen);
                if (u && ulen <= LINKS_MAX_URL_LEN) {
                    char buf[LINKS_MAX_URL_LEN + 1];
                    memcpy(buf, u, ulen);
                    buf[ulen] = '\0';
                    add_raw(ex, buf, LINK_META_REFRESH, false);
                }
            } else if (mname && strcasecmp(mname, "robots") == 0) {
                if (has_token(content, "noindex", true) || has_token(content, "none", true))
                    ex->page.noindex = true;
                if (has_token(content, "nofollow", true) || has_token(content, "none", true))
                    ex->page.nofollow = true;
            }
        }
        break;
    default:
        break;
    }
    for (size_t i = 0; text_elements[i]; i++) {
        if (name[0] == text_elements[i][0] && strcmp(name, text_elements[i]) == 0) {
            ex->suppress = text_elements[i];
            ex->suppress_depth = 1;
            break;
        }
    }
}

static void on_end(void *ctx, const xmlChar *xname)
{
    struct links_extractor *ex = ctx;
    if (ex->sh)
        simhash_builder_break(ex->sh);
    if (ex->suppress && strcmp((const char *)xname, ex->suppress) == 0 &&
        --ex->suppress_depth == 0)
        ex->suppress = NULL;
}

static void on_text(void *ctx, const xmlChar *s, int len)
{
    struct links_extractor *ex = ctx;
    if (ex->sh && len > 0)
        simhash_builder_add(ex->sh, (const char *)s, (size_t)len);
}

static void on_break(void *ctx, const xmlChar *s, int len)
{
    struct links_extractor *ex = ctx;
    (void)s;
    (void)len;
    if (ex->sh)
        simhash_builder_break(ex->sh);
}

/* script and style content: not text, not markup. */
static void on_cdata(void *ctx, const xmlChar *s, int len)
{
    on_break(ctx, s, len);
}

/* ---- lifecycle ---- */

int links_extractor_create(const struct links_config *config, struct links_extractor **out)
{
    if (!out)
        return LINKS_EINVAL;
    *out = NULL;
    xmlInitParser();
    struct links_extractor *ex = calloc(1, sizeof *ex);
    if (!ex)
        return LINKS_ENOMEM;
    if (config)
        ex->cfg = *config;
    if (ex->cfg.max_links == 0)
        ex->cfg.max_links = LINKS_DEFAULT_MAX_LINKS;
    if (ex->cfg.max_bytes == 0)
        ex->cfg.max_bytes = LINKS_DEFAULT_MAX_BYTES;
    if (!ex->cfg.no_simhash) {
        ex->sh = simhash_builder_create();
        if (!ex->sh)
            goto fail;
    }
    ex->resolver = link_resolver_create();
    if (!ex->resolver)
        goto fail;
    ex->sax.startElement = on_start;
    ex->sax.endElement = on_end;
    ex->sax.characters = on_text;
    ex->sax.ignorableWhitespace = on_break;
    ex->sax.cdataBlock = on_cdata;
    *out = ex;
    return LINKS_OK;
fail:
    links_extractor_destroy(ex);
    return LINKS_ENOMEM;
}

void links_extractor_destroy(struct links_extractor *ex)
{
    if (!ex)
        return;
    simhash_builder_destroy(ex->sh);
    link_resolver_destroy(ex->resolver);
    free(ex->raw);
    free(ex->rl);
    free(ex->out);
    free(ex->ol);
    free(ex->links);
    free(ex->base_str);
    free(ex);
}

static void reset(struct links_extractor *ex)
{
    ex->raw_len = 0;
    ex->nrl = 0;
    ex->have_base = false;
    ex->suppress = NULL;
    ex->suppress_depth = 0;
    ex->oom = false;
    ex->out_len = 0;
    ex->nol = 0;
    ex->nlinks = 0;
    ex->have_canonical = false;
    free(ex->base_str);
    ex->base_str = NULL;
    memset(&ex->page, 0, sizeof ex->page);
    if (ex->sh)
        simhash_builder_reset(ex->sh);
}

/* Maps a Content-Type charset label to the encoding we ask libxml2 for.
 * HTML5 decodes the Latin-1 and ASCII labels as windows-1252. */
static const char *charset_name(const char *label)
{
    static const char *const as1252[] = {"iso-8859-1", "iso8859-1", "latin1", "l1",
                                         "us-ascii", "ascii", "iso_8859-1", "cp819",
                                         "ibm819", "iso-ir-100", "csisolatin1", NULL};
    for (size_t i = 0; as1252[i]; i++)
        if (strcasecmp(label, as1252[i]) == 0)
            return "windows-1252";
    return label;
}

static bool is_label_char(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '-' ||
           c == '_' || c == '.' || c == ':';
}

/* HTML5's prescan, reduced to what libxml2 gets wrong: a `<meta>` in the
 * first 1024 bytes declaring a Latin-1 label (charset=... or content="...;
 * charset=...") means windows-1252, while libxml2 would decode ISO-8859-1
 * (0x80-0x9F as C1 controls instead of the euro sign, quotes, dashes).
 * Returns "windows-1252" or NULL (then libxml2's own detection applies). */
static const char *prescan_latin1(const char *body, size_t len)
{
    size_t n = len < 1024 ? len : 1024;
    for (size_t i = 0; i + 5 < n; i++) {
        if (body[i] != '<' || strncasecmp(body + i + 1, "meta", 4) != 0)
            continue;
        const char *end = memchr(body + i, '>', n - i);
        size_t tl = end ? (size_t)(end - (body + i)) : n - i;
        for (size_t k = i + 5; k + 7 < i + tl; k++) {
            if (strncasecmp(body + k, "charset", 7) != 0)
                continue;
            size_t p = k + 7;
            while (p < i + tl && is_ws((unsigned char)body[p]))
                p++;
            if (p >= i + tl || body[p] != '=')
                continue;
            p++;
            while (p < i + tl && (is_ws((unsigned char)body[p]) || body[p] == '"' ||
                                  body[p] == '\''))
                p++;
            char label[32];
            size_t ll = 0;
            while (p < i + tl && ll + 1 < sizeof label &&
                   (is_label_char((unsigned char)body[p])))
                label[ll++] = body[p++];
            label[ll] = '\0';
            const char *mapped = charset_name(label);
            return strcmp(mapped, "windows-1252") == 0 && strcasecmp(label, mapped) != 0
                       ? mapped
                       : NULL;
        }
    }
    return NULL;
}

/* Swallows libxml2's context-free messages (encoding errors). */
static void quiet(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static int parse_pass(struct links_extractor *ex, const char *charset, const char *body,
                      size_t len)
{
    int rc = LINKS_OK;
    const char *enc = NULL;
    /* A BOM wins over the Content-Type charset (HTML5 "BOM sniffing"). */
    if (len >= 3 && memcmp(body, "\xEF\xBB\xBF", 3) == 0) {
        enc = "UTF-8";
        body += 3;
        len -= 3;
    } else if (len >= 2 && memcmp(body, "\xFF\xFE", 2) == 0) {
        enc = "UTF-16LE";
        body += 2;
        len -= 2;
    } else if (len >= 2 && memcmp(body, "\xFE\xFF", 2) == 0) {
        enc = "UTF-16BE";
        body += 2;
        len -= 2;
    } else if (charset && *charset) {
        enc = charset_name(charset);
    } else {
        enc = prescan_latin1(body, len);
    }
    /* Errors raised without a parser context (the encoders') go to libxml2's
     * generic handler, which is per thread: silence it for this parse only. */
    xmlGenericErrorFunc saved_err = xmlGenericError;
    void *saved_ctx = xmlGenericErrorContext;
    xmlSetGenericErrorFunc(NULL, quiet);
    htmlParserCtxtPtr ctxt = htmlCreatePushParserCtxt(&ex->sax, ex, NULL, 0, NULL,
                                                      XML_CHAR_ENCODING_NONE);
    if (!ctxt) {
        xmlSetGenericErrorFunc(saved_ctx, saved_err);
        return LINKS_EPARSER;
    }
    htmlCtxtUseOptions(ctxt, HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR |
                                 HTML_PARSE_NOWARNING | HTML_PARSE_COMPACT);
    if (enc) {
        xmlCharEncodingHandlerPtr h = xmlFindCharEncodingHandler(enc);
        /* An unknown label is ignored: the page's own declaration or the
         * default applies. libxml2 frees the handler with the context. */
        if (h)
            xmlSwitchToEncoding(ctxt, h);
    }
    const size_t chunk = (size_t)INT_MAX / 2;
    while (len > chunk) {
        htmlParseChunk(ctxt, body, (int)chunk, 0);
        body += chunk;
        len -= chunk;
    }
    htmlParseChunk(ctxt, body, (int)len, 1);
    htmlFreeParserCtxt(ctxt);
    xmlSetGenericErrorFunc(saved_ctx, saved_err);
    if (ex->oom)
        rc = LINKS_ENOMEM;
    return rc;
}

/* Appends a resolved URL to `out`; false if a cap is hit. */
static bool out_store(struct links_extractor *ex, const char *url, size_t n, size_t *off)
{
    if (ex->out_len + n + 1 > ex->cfg.max_bytes) {
        ex->page.truncated++;
        return false;
    }
    if (ex->out_len + n + 1 > ex->out_cap) {
        size_t ncap = ex->out_cap ? ex->out_cap : 8192;
        while (ncap < ex->out_len + n + 1)
            ncap *= 2;
        char *no = realloc(ex->out, ncap);
        if (!no) {
            ex->oom = true;
            return false;
        }
        ex->out = no;
        ex->out_cap = ncap;
    }
    memcpy(ex->out + ex->out_len, url, n);
    ex->out[ex->out_len + n] = '\0';
    *off = ex->out_len;
    ex->out_len += n + 1;
    return true;
}

static int resolve_pass(struct links_extractor *ex, const char *page_url)
{
    if (ex->nrl > ex->ol_cap) {
        struct out_link *n = realloc(ex->ol, ex->nrl * sizeof *n);
        if (!n)
            return LINKS_ENOMEM;
        ex->ol = n;
        ex->ol_cap = ex->nrl;
    }
    /* The document base: the first <base href> resolved against the page. */
    const char *base = page_url;
    if (ex->have_base) {
        const char *b = NULL;
        size_t blen = 0;
        if (link_resolve(ex->resolver, page_url, ex->raw + ex->base_off, ex->base_len, &b,
                         &blen) == LINK_RESOLVE_OK) {
            ex->base_str = strndup(b, blen);
            if (!ex->base_str)
                return LINKS_ENOMEM;
            base = ex->base_str;
            if (link_resolve_check_base(ex->resolver, base) != LINK_RESOLVE_OK) {
                free(ex->base_str);
                ex->base_str = NULL;
                base = page_url;
                link_resolve_check_base(ex->resolver, page_url);
            }
        }
    }
    if (!ex->base_str) {
        /* the page URL, normalized */
        const char *b = NULL;
        size_t blen = 0;
        if (link_resolve(ex->resolver, page_url, "", 0, &b, &blen) != LINK_RESOLVE_OK)
            return LINKS_EINVAL;
        ex->base_str = strndup(b, blen);
        if (!ex->base_str)
            return LINKS_ENOMEM;
        base = ex->base_str;
    }
    ex->page.base = ex->base_str;
    for (size_t i = 0; i < ex->nrl; i++) {
        const struct raw_link *r = &ex->rl[i];
        const char *u = NULL;
        size_t ulen = 0;
        int v = link_resolve(ex->resolver, base, ex->raw + r->off, r->len, &u, &ulen);
        if (v == LINK_RESOLVE_SCHEME) {
            ex->page.dropped_scheme++;
            continue;
        }
        if (v != LINK_RESOLVE_OK) {
            if (v == LINK_RESOLVE_NOMEM)
                return LINKS_ENOMEM;
            ex->page.dropped_invalid++;
            continue;
        }
        struct out_link *o = &ex->ol[ex->nol];
        if (!out_store(ex, u, ulen, &o->off)) {
            if (ex->oom)
                return LINKS_ENOMEM;
            continue;
        }
        o->len = ulen;
        o->kind = r->kind;
        o->nofollow = r->nofollow;
        if (r->kind == LINK_CANONICAL && !ex->have_canonical) {
            ex->have_canonical = true;
            ex->canonical_off = o->off;
        }
        ex->nol++;
    }
    if (ex->nol > ex->links_cap) {
        struct link *n = realloc(ex->links, ex->nol * sizeof *n);
        if (!n)
            return LINKS_ENOMEM;
        ex->links = n;
        ex->links_cap = ex->nol;
    }
    for (size_t i = 0; i < ex->nol; i++) {
        ex->links[i].url = ex->out + ex->ol[i].off;
        ex->links[i].len = ex->ol[i].len;
        ex->links[i].kind = ex->ol[i].kind;
        ex->links[i].nofollow = ex->ol[i].nofollow;
    }
    ex->nlinks = ex->nol;
    if (ex->have_canonical)
        ex->page.canonical = ex->out + ex->canonical_off;
    return LINKS_OK;
}

int links_extract(struct links_extractor *ex, const char *page_url, const char *charset,
                  const char *body, size_t len)
{
    if (!ex || !page_url || (!body && len > 0))
        return LINKS_EINVAL;
    reset(ex);
    if (link_resolve_check_base(ex->resolver, page_url) != LINK_RESOLVE_OK)
        return LINKS_EINVAL;
    int rc = parse_pass(ex, charset, body ? body : "", len);
    if (rc != LINKS_OK && rc != LINKS_ENOMEM)
        return rc;
    int rc2 = resolve_pass(ex, page_url);
    if (ex->sh)
        ex->page.simhash = simhash_builder_value(ex->sh);
    return rc != LINKS_OK ? rc : rc2;
}

const struct link *links_result(const struct links_extractor *ex, size_t *count)
{
    if (count)
        *count = ex ? ex->nlinks : 0;
    return ex ? ex->links : NULL;
}

const struct links_page *links_page_info(const struct links_extractor *ex)
{
    return ex ? &ex->page : NULL;
}
