/*
 * url.c: the WHATWG basic URL parser (state machine), host parsers (IPv4,
 * IPv6, opaque, domain with IDNA through libidn2), the serializer, and the
 * crawl key. Works on bytes: non-ASCII bytes are carried through and
 * percent-encoded as they are (valid UTF-8 input therefore gives the
 * standard's UTF-8 percent-encoding).
 */
#include "frontier/url.h"

#include <idn2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A bounded byte buffer: appends past cap set `over` instead of writing. */
struct sbuf {
    char *p;
    size_t n, cap;
};

enum host_kind { HOST_NULL = 0, HOST_EMPTY, HOST_DOMAIN, HOST_IPV4, HOST_IPV6, HOST_OPAQUE };

struct url {
    struct url_options opt;
    size_t cap;       /* per-component capacity */
    char *mem;        /* one allocation for every buffer below */
    bool over;        /* some append overflowed during this parse */
    bool valid;
    /* components (the parse result; also read when `u` is a base) */
    struct sbuf scheme, user, pass, host, path, query, frag, seg;
    bool has_query, has_frag, opaque_path, special;
    enum host_kind host_kind;
    int port; /* -1 = null */
    /* serialization and spans into it */
    struct sbuf href;
    size_t host_off, host_len, user_off, user_len, pass_off, pass_len;
    size_t path_off, path_len, query_off, query_len, frag_off, frag_len;
    /* input after cleanup */
    struct sbuf in;
};

const char *url_strerror(enum url_error e)
{
    switch (e) {
    case URL_OK: return "ok";
    case URL_ERR_TOO_LONG: return "URL too long";
    case URL_ERR_NO_SCHEME_NO_BASE: return "relative reference without a usable base";
    case URL_ERR_INVALID_SCHEME: return "invalid scheme";
    case URL_ERR_MISSING_HOST: return "missing host";
    case URL_ERR_INVALID_HOST: return "invalid host";
    case URL_ERR_INVALID_PORT: return "invalid port";
    case URL_ERR_INVALID_IPV4: return "invalid IPv4 address";
    case URL_ERR_INVALID_IPV6: return "invalid IPv6 address";
    case URL_ERR_IDNA: return "IDNA processing failed";
    case URL_ERR_CREDENTIALS_NO_HOST: return "credentials without host";
    case URL_ERR_NOT_HTTP: return "not an http(s) URL";
    case URL_ERR_NO_SPACE: return "output buffer too small";
    case URL_ERR_INVALID_ARG: return "invalid argument";
    case URL_ERR_NOMEM: return "out of memory";
    }
    return "unknown error";
}

/* ---- options ---- */

static const struct {
    const char *name;
    unsigned flag;
} canon_names[] = {
    {"strip_tracking_params", URL_CANON_STRIP_TRACKING},
    {"sort_query_params", URL_CANON_SORT_QUERY},
    {"strip_www", URL_CANON_STRIP_WWW},
    {"strip_trailing_slash", URL_CANON_STRIP_TRAILING_SLASH},
    {"lowercase_path", URL_CANON_LOWERCASE_PATH},
    {"strip_index", URL_CANON_STRIP_INDEX},
    {"drop_empty_query", URL_CANON_DROP_EMPTY_QUERY},
    {"https_to_http", URL_CANON_SCHEME_FOLD},
};

void url_options_init(struct url_options *opt)
{
    opt->max_len = URL_DEFAULT_MAX_LEN;
    opt->flags = 0;
}

enum url_error url_options_set(struct url_options *opt, const char *name, const char *value)
{
    if (!opt || !name || !value)
        return URL_ERR_INVALID_ARG;
    if (strcmp(name, "max_url_length") == 0) {
        char *end;
        unsigned long long v = strtoull(value, &end, 10);
        if (end == value || *end != '\0' || v < 16 || v > (1u << 24))
            return URL_ERR_INVALID_ARG;
        opt->max_len = (size_t)v;
        return URL_OK;
    }
    bool on;
    if (!strcasecmp(value, "true") || !strcmp(value, "1") || !strcasecmp(value, "yes") ||
        !strcasecmp(value, "on"))
        on = true;
    else if (!strcasecmp(value, "false") || !strcmp(value, "0") || !strcasecmp(value, "no") ||
             !strcasecmp(value, "off"))
        on = false;
    else
        return URL_ERR_INVALID_ARG;
    for (size_t i = 0; i < sizeof canon_names / sizeof canon_names[0]; i++) {
        if (strcmp(name, canon_names[i].name) == 0) {
            if (on)
                opt->flags |= canon_names[i].flag;
            else
                opt->flags &= ~canon_names[i].flag;
            return URL_OK;
        }
    }
    return URL_ERR_INVALID_ARG;
}

/* ---- lifecycle ---- */

struct url *url_create(const struct url_options *opt)
{
    struct url *u = calloc(1, sizeof *u);
    if (!u)
        return NULL;
    if (opt)
        u->opt = *opt;
    else
        url_options_init(&u->opt);
    if (u->opt.max_len == 0)
        u->opt.max_len = URL_DEFAULT_MAX_LEN;
    u->cap = 4 * u->opt.max_len + 64;
    /* 9 component-sized buffers + href (2 components) */
    u->mem = malloc(11 * u->cap);
    if (!u->mem) {
        free(u);
        return NULL;
    }
    struct sbuf *bufs[] = {&u->scheme, &u->user, &u->pass, &u->host, &u->path,
                           &u->query,  &u->frag, &u->seg,  &u->in};
    for (size_t i = 0; i < 9; i++) {
        bufs[i]->p = u->mem + i * u->cap;
        bufs[i]->cap = u->cap;
        bufs[i]->n = 0;
    }
    u->href.p = u->mem + 9 * u->cap;
    u->href.cap = 2 * u->cap;
    u->href.p[0] = '\0';
    return u;
}

void url_destroy(struct url *u)
{
    if (!u)
        return;
    free(u->mem);
    free(u);
}

/* ---- small helpers ---- */

static inline void put(struct url *u, struct sbuf *b, char c)
{
    if (b->n >= b->cap) {
        u->over = true;
        return;
    }
    b->p[b->n++] = c;
}

static void puts_n(struct url *u, struct sbuf *b, const char *s, size_t n)
{
    if (n > b->cap - b->n) {
        u->over = true;
        n = b->cap - b->n;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static inline bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static inline bool is_digit(int c) { return c >= '0' && c <= '9'; }
static inline bool is_hex(int c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static inline int hexval(int c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}
static inline int lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* Percent-encode sets, as bits in a table over bytes. */
enum { SET_C0 = 1, SET_FRAG = 2, SET_QUERY = 4, SET_SQUERY = 8, SET_PATH = 16, SET_USERINFO = 32 };

/* Which sets each byte belongs to (generated from the standard's lists:
 * C0 = c <= 0x1f or > 0x7e; fragment adds space " < > `; query adds space
 * " # < >; special-query adds '; path adds ? ^ ` { }; userinfo adds
 * / : ; = @ [ \\ ] |). */
static const unsigned char enc_table[256] = {
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    62, 0, 62, 60, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 32,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 62, 32, 62, 48,
    32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32, 32, 32, 48, 0,
    50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 48, 32, 48, 0, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
    63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63,
};

static inline const unsigned char *enc_sets(void) { return enc_table; }

static const char HEX[] = "0123456789ABCDEF";

static inline void put_enc(struct url *u, struct sbuf *b, unsigned char c, unsigned set,
                           const unsigned char *t)
{
    if (t[c] & set) {
        put(u, b, '%');
        put(u, b, HEX[c >> 4]);
        put(u, b, HEX[c & 15]);
    } else {
        put(u, b, (char)c);
    }
}

static bool scheme_is(const struct sbuf *s, const char *name)
{
    size_t n = strlen(name);
    return s->n == n && memcmp(s->p, name, n) == 0;
}

static bool scheme_special(const struct sbuf *s)
{
    return scheme_is(s, "http") || scheme_is(s, "https") || scheme_is(s, "ws") ||
           scheme_is(s, "wss") || scheme_is(s, "ftp") || scheme_is(s, "file");
}

static int default_port(const char *s, size_t n)
{
    if (n == 4 && !memcmp(s, "http", 4))
        return 80;
    if (n == 5 && !memcmp(s, "https", 5))
        return 443;
    if (n == 2 && !memcmp(s, "ws", 2))
        return 80;
    if (n == 3 && !memcmp(s, "wss", 3))
        return 443;
    if (n == 3 && !memcmp(s, "ftp", 3))
        return 21;
    return -1;
}

/* A Windows drive letter: ASCII alpha then ':' or '|'; normalized: ':' only. */
static bool is_drive(const char *s, size_t n, bool normalized)
{
    return n == 2 && is_alpha((unsigned char)s[0]) && (s[1] == ':' || (!normalized && s[1] == '|'));
}

/* "starts with a Windows drive letter": drive, then end or / \ ? # */
static bool starts_with_drive(const char *s, size_t n)
{
    if (n < 2 || !is_drive(s, 2, false))
        return false;
    if (n == 2)
        return true;
    char c = s[2];
    return c == '/' || c == '\\' || c == '?' || c == '#';
}

/* ---- path list kept as "/seg/seg" ---- */

static size_t path_count(const struct sbuf *p)
{
    size_t k = 0;
    for (size_t i = 0; i < p->n; i++)
        k += p->p[i] == '/';
    return k;
}

static void path_first(const struct sbuf *p, const char **s, size_t *n)
{
    if (p->n == 0) {
        *s = NULL;
        *n = 0;
        return;
    }
    const char *e = memchr(p->p + 1, '/', p->n - 1);
    *s = p->p + 1;
    *n = e ? (size_t)(e - (p->p + 1)) : p->n - 1;
}

static void path_shorten(struct url *u)
{
    struct sbuf *p = &u->path;
    if (scheme_is(&u->scheme, "file") && path_count(p) == 1 && is_drive(p->p + 1, p->n - 1, true))
        return;
    while (p->n > 0 && p->p[p->n - 1] != '/')
        p->n--;
    if (p->n > 0)
        p->n--;
}

static bool is_single_dot(const char *s, size_t n)
{
    return (n == 1 && s[0] == '.') || (n == 3 && s[0] == '%' && s[1] == '2' && lower(s[2]) == 'e');
}

static bool is_double_dot(const char *s, size_t n)
{
    if (n == 2)
        return s[0] == '.' && s[1] == '.';
    if (n == 4)
        return (s[0] == '.' && is_single_dot(s + 1, 3)) || (is_single_dot(s, 3) && s[3] == '.');
    if (n == 6)
        return is_single_dot(s, 3) && is_single_dot(s + 3, 3);
    return false;
}

/* ---- host parsing ---- */

static bool forbidden_host_cp(unsigned char c)
{
    switch (c) {
    case 0: case '\t': case '\n': case '\r': case ' ': case '#': case '/': case ':':
    case '<': case '>': case '?': case '@': case '[': case '\\': case ']': case '^': case '|':
        return true;
    default:
        return false;
    }
}

static bool forbidden_domain_cp(unsigned char c)
{
    return forbidden_host_cp(c) || c <= 0x1f || c == '%' || c == 0x7f;
}

/* IPv4 number parser: 0 ok, -1 failure. Values saturate above 2^32. */
static int ipv4_number(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return -1;
    unsigned r = 10;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        n -= 2;
        r = 16;
    } else if (n >= 2 && s[0] == '0') {
        s += 1;
        n -= 1;
        r = 8;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        unsigned d;
        if (r == 16 && is_hex(c))
            d = (unsigned)hexval(c);
        else if (r == 10 && is_digit(c))
            d = (unsigned)(c - '0');
        else if (r == 8 && c >= '0' && c <= '7')
            d = (unsigned)(c - '0');
        else
            return -1;
        v = v * r + d;
        if (v > 0xffffffffull * 256)
            v = 0xffffffffull * 256; /* saturate: already out of range */
    }
    *out = v;
    return 0;
}

static bool ends_in_number(const char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '.') {
        n--; /* a trailing dot is ignored, unless it is the only label */
        if (n == 0)
            return false;
    }
    size_t st = n;
    while (st > 0 && s[st - 1] != '.')
        st--;
    const char *last = s + st;
    size_t ln = n - st;
    if (ln == 0)
        return false;
    bool digits = true;
    for (size_t i = 0; i < ln; i++)
        if (!is_digit((unsigned char)last[i]))
            digits = false;
    if (digits)
        return true;
    uint64_t v;
    return ipv4_number(last, ln, &v) == 0;
}

static enum url_error ipv4_parse(const char *s, size_t n, uint32_t *out)
{
    const char *parts[5];
    size_t lens[5];
    size_t k = 0, st = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (k == 5)
                return URL_ERR_INVALID_IPV4;
            parts[k] = s + st;
            lens[k] = i - st;
            k++;
            st = i + 1;
        }
    }
    if (k > 1 && lens[k - 1] == 0)
        k--;
    if (k > 4)
        return URL_ERR_INVALID_IPV4;
    uint64_t nums[4];
    for (size_t i = 0; i < k; i++)
        if (ipv4_number(parts[i], lens[i], &nums[i]) != 0)
            return URL_ERR_INVALID_IPV4;
    for (size_t i = 0; i + 1 < k; i++)
        if (nums[i] > 255)
            return URL_ERR_INVALID_IPV4;
    uint64_t lim = 1ull << (8 * (5 - k));
    if (nums[k - 1] >= lim)
        return URL_ERR_INVALID_IPV4;
    uint64_t v = nums[k - 1];
    for (size_t i = 0; i + 1 < k; i++)
        v += nums[i] << (8 * (3 - i));
    *out = (uint32_t)v;
    return URL_OK;
}

static enum url_error ipv6_parse(const char *s, size_t n, uint16_t a[8])
{
    memset(a, 0, 16);
    int piece = 0, compress = -1;
    size_t p = 0;
#define C(i) ((i) < n ? (int)(unsigned char)s[i] : -1)
    if (C(p) == ':') {
        if (C(p + 1) != ':')
            return URL_ERR_INVALID_IPV6;
        p += 2;
        piece++;
        compress = piece;
    }
    while (C(p) != -1) {
        if (piece == 8)
            return URL_ERR_INVALID_IPV6;
        if (C(p) == ':') {
            if (compress != -1)
                return URL_ERR_INVALID_IPV6;
            p++;
            piece++;
            compress = piece;
            continue;
        }
        unsigned value = 0, length = 0;
        while (length < 4 && is_hex(C(p))) {
            value = value * 16 + (unsigned)hexval(C(p));
            p++;
            length++;
        }
        if (C(p) == '.') {
            if (length == 0)
                return URL_ERR_INVALID_IPV6;
            p -= length;
            if (piece > 6)
                return URL_ERR_INVALID_IPV6;
            int seen = 0;
            while (C(p) != -1) {
                int v4 = -1;
                if (seen > 0) {
                    if (C(p) == '.' && seen < 4)
                        p++;
                    else
                        return URL_ERR_INVALID_IPV6;
                }
                if (!is_digit(C(p)))
                    return URL_ERR_INVALID_IPV6;
                while (is_digit(C(p))) {
                    int number = C(p) - '0';
                    if (v4 == -1)
                        v4 = number;
                    else if (v4 == 0)
                        return URL_ERR_INVALID_IPV6;
                    else
                        v4 = v4 * 10 + number;
                    if (v4 > 255)
                        return URL_ERR_INVALID_IPV6;
                    p++;
                }
                a[piece] = (uint16_t)(a[piece] * 0x100 + v4);
                seen++;
                if (seen == 2 || seen == 4)
                    piece++;
            }
            if (seen != 4)
                return URL_ERR_INVALID_IPV6;
            break;
        } else if (C(p) == ':') {
            p++;
            if (C(p) == -1)
                return URL_ERR_INVALID_IPV6;
        } else if (C(p) != -1) {
            return URL_ERR_INVALID_IPV6;
        }
        a[piece] = (uint16_t)value;
        piece++;
    }
#undef C
    if (compress != -1) {
        int swaps = piece - compress;
        piece = 7;
        while (piece != 0 && swaps > 0) {
            uint16_t t = a[piece];
            a[piece] = a[compress + swaps - 1];
            a[compress + swaps - 1] = t;
            piece--;
            swaps--;
        }
    } else if (piece != 8) {
        return URL_ERR_INVALID_IPV6;
    }
    return URL_OK;
}

static void ipv6_serialize(struct url *u, struct sbuf *b, const uint16_t a[8])
{
    int best = -1, bestlen = 1;
    for (int i = 0; i < 8;) {
        if (a[i] != 0) {
            i++;
            continue;
        }
        int j = i;
        while (j < 8 && a[j] == 0)
            j++;
        if (j - i > bestlen) {
            best = i;
            bestlen = j - i;
        }
        i = j;
    }
    put(u, b, '[');
    bool ignore0 = false;
    for (int i = 0; i < 8; i++) {
        if (ignore0 && a[i] == 0)
            continue;
        ignore0 = false;
        if (best == i) {
            puts_n(u, b, i == 0 ? "::" : ":", i == 0 ? 2 : 1);
            ignore0 = true;
            continue;
        }
        char t[8];
        int k = snprintf(t, sizeof t, "%x", a[i]);
        puts_n(u, b, t, (size_t)k);
        if (i != 7)
            put(u, b, ':');
    }
    put(u, b, ']');
}

/* true if s[n] (the part of an ASCII label after "xn--") is valid Punycode
 * (RFC 3492) decoding to Unicode scalar values. Used when libidn2 refuses an
 * A-label that UTS #46 accepts (its IDNA2008 checks are stricter). */
static bool punycode_valid(const char *s, size_t n)
{
    enum { BASE = 36, TMIN = 1, TMAX = 26, SKEW = 38, DAMP = 700 };
    size_t b = 0;
    for (size_t j = 0; j < n; j++)
        if (s[j] == '-')
            b = j;
    size_t out = 0, in = 0;
    if (b > 0 || (n > 0 && s[0] == '-')) {
        for (size_t j = 0; j < b; j++)
            if ((unsigned char)s[j] >= 0x80)
                return false;
        out = b;
        in = b + 1;
    }
    uint64_t cp = 128, i = 0, bias = 72;
    while (in < n) {
        uint64_t oldi = i, w = 1;
        for (uint64_t k = BASE;; k += BASE) {
            if (in >= n)
                return false;
            int c = lower((unsigned char)s[in++]);
            uint64_t digit;
            if (c >= 'a' && c <= 'z')
                digit = (uint64_t)(c - 'a');
            else if (is_digit(c))
                digit = (uint64_t)(c - '0' + 26);
            else
                return false;
            i += digit * w;
            if (i > 0x7fffffff)
                return false;
            uint64_t t = k <= bias ? TMIN : (k >= bias + TMAX ? TMAX : k - bias);
            if (digit < t)
                break;
            w *= BASE - t;
            if (w > 0x7fffffff)
                return false;
        }
        uint64_t delta = (oldi == 0) ? (i - oldi) / DAMP : (i - oldi) / 2;
        delta += delta / (out + 1);
        uint64_t k = 0;
        while (delta > ((BASE - TMIN) * TMAX) / 2) {
            delta /= BASE - TMIN;
            k += BASE;
        }
        bias = k + (BASE - TMIN + 1) * delta / (delta + SKEW);
        cp += i / (out + 1);
        i %= out + 1;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        out++;
        i++;
    }
    return true;
}

/* All labels of an ASCII domain that start with "xn--" are valid Punycode. */
static bool alabels_valid(const char *s, size_t n)
{
    size_t st = 0;
    for (size_t j = 0; j <= n; j++) {
        if (j < n && s[j] != '.')
            continue;
        size_t ln = j - st;
        const char *l = s + st;
        if (ln >= 4 && lower(l[0]) == 'x' && lower(l[1]) == 'n' && l[2] == '-' && l[3] == '-' &&
            !punycode_valid(l + 4, ln - 4))
            return false;
        st = j + 1;
    }
    return true;
}

/* Parses host text s[n] into u->host (kind in u->host_kind); uses u->seg as
 * scratch. */
static enum url_error host_parse_inner(struct url *u, const char *s, size_t n, bool opaque)
{
    struct sbuf *h = &u->host;
    h->n = 0;
    if (n > 0 && s[0] == '[') {
        if (s[n - 1] != ']')
            return URL_ERR_INVALID_IPV6;
        uint16_t a[8];
        enum url_error e = ipv6_parse(s + 1, n - 2, a);
        if (e)
            return e;
        ipv6_serialize(u, h, a);
        u->host_kind = HOST_IPV6;
        return URL_OK;
    }
    if (opaque) {
        const unsigned char *t = enc_sets();
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c != '%' && forbidden_host_cp(c))
                return URL_ERR_INVALID_HOST;
            put_enc(u, h, c, SET_C0, t);
        }
        u->host_kind = n ? HOST_OPAQUE : HOST_EMPTY;
        return URL_OK;
    }
    /* percent-decode into seg (scratch), then domain to ASCII */
    struct sbuf *d = &u->seg;
    d->n = 0;
    bool ascii = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%' && i + 2 < n && is_hex((unsigned char)s[i + 1]) && is_hex((unsigned char)s[i + 2])) {
            c = (unsigned char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
            i += 2;
        }
        if (c >= 0x80)
            ascii = false;
        put(u, d, (char)c);
    }
    if (u->over)
        return URL_ERR_TOO_LONG;
    bool need_idna = !ascii;
    if (ascii) {
        /* xn-- labels need validation by IDNA */
        for (size_t i = 0; i + 4 <= d->n; i++) {
            if ((i == 0 || d->p[i - 1] == '.') && lower(d->p[i]) == 'x' && lower(d->p[i + 1]) == 'n' &&
                d->p[i + 2] == '-' && d->p[i + 3] == '-') {
                need_idna = true;
                break;
            }
        }
    }
    if (!need_idna) {
        for (size_t i = 0; i < d->n; i++) {
            unsigned char c = (unsigned char)d->p[i];
            if (forbidden_domain_cp(c))
                return URL_ERR_INVALID_HOST;
            put(u, h, (char)lower(c));
        }
    } else {
        /* libidn2 wants a NUL-terminated string; a NUL inside is forbidden anyway */
        if (memchr(d->p, 0, d->n))
            return URL_ERR_INVALID_HOST;
        put(u, d, '\0');
        if (u->over)
            return URL_ERR_TOO_LONG;
        char *out = NULL;
        int rc = idn2_to_ascii_8z(d->p, &out, IDN2_NONTRANSITIONAL);
        if (rc != IDN2_OK) {
            idn2_free(out);
            out = NULL;
            if (!ascii || !alabels_valid(d->p, d->n - 1))
                return URL_ERR_IDNA;
            /* libidn2 applies IDNA2008 rules on top of UTS #46 and refuses
             * some A-labels the URL Standard keeps: keep the ASCII as is. */
            d->n--;
            for (size_t i = 0; i < d->n; i++) {
                unsigned char c = (unsigned char)d->p[i];
                if (forbidden_domain_cp(c))
                    return URL_ERR_INVALID_HOST;
                put(u, h, (char)lower(c));
            }
            goto ascii_done;
        }
        size_t on = strlen(out);
        if (on == 0) {
            idn2_free(out);
            return URL_ERR_IDNA;
        }
        for (size_t i = 0; i < on; i++) {
            unsigned char c = (unsigned char)out[i];
            if (forbidden_domain_cp(c)) {
                idn2_free(out);
                return URL_ERR_INVALID_HOST;
            }
            put(u, h, (char)lower(c));
        }
        idn2_free(out);
    }
ascii_done:
    if (h->n == 0)
        return URL_ERR_INVALID_HOST;
    if (ends_in_number(h->p, h->n)) {
        uint32_t v4;
        enum url_error e = ipv4_parse(h->p, h->n, &v4);
        if (e)
            return e;
        char t[16];
        int k = snprintf(t, sizeof t, "%u.%u.%u.%u", v4 >> 24, (v4 >> 16) & 255, (v4 >> 8) & 255,
                         v4 & 255);
        h->n = 0;
        puts_n(u, h, t, (size_t)k);
        u->host_kind = HOST_IPV4;
        return URL_OK;
    }
    u->host_kind = HOST_DOMAIN;
    return URL_OK;
}

static enum url_error host_parse(struct url *u, const char *s, size_t n, bool opaque)
{
    enum url_error e = host_parse_inner(u, s, n, opaque);
    u->seg.n = 0;
    return e;
}

/* ---- the state machine ---- */

enum state {
    S_SCHEME_START, S_SCHEME, S_NO_SCHEME, S_SPECIAL_RELATIVE_OR_AUTHORITY, S_PATH_OR_AUTHORITY,
    S_RELATIVE, S_RELATIVE_SLASH, S_SPECIAL_AUTHORITY_SLASHES, S_SPECIAL_AUTHORITY_IGNORE_SLASHES,
    S_AUTHORITY, S_HOST, S_PORT, S_FILE, S_FILE_SLASH, S_FILE_HOST, S_PATH_START, S_PATH,
    S_OPAQUE_PATH, S_QUERY, S_FRAGMENT
};

static void copy_buf(struct url *u, struct sbuf *dst, const struct sbuf *src)
{
    dst->n = 0;
    puts_n(u, dst, src->p, src->n);
}

static void copy_authority(struct url *u, const struct url *b)
{
    copy_buf(u, &u->user, &b->user);
    copy_buf(u, &u->pass, &b->pass);
    copy_buf(u, &u->host, &b->host);
    u->host_kind = b->host_kind;
    u->port = b->port;
}

static void reset(struct url *u)
{
    u->scheme.n = u->user.n = u->pass.n = u->host.n = u->path.n = 0;
    u->query.n = u->frag.n = u->seg.n = 0;
    u->has_query = u->has_frag = u->opaque_path = u->special = false;
    u->host_kind = HOST_NULL;
    u->port = -1;
    u->over = false;
    u->valid = false;
    u->href.n = 0;
    u->href.p[0] = '\0';
}

/* Appends the path segment buffer (seg) to the path at a path-state boundary. */
static void path_push_seg(struct url *u)
{
    put(u, &u->path, '/');
    puts_n(u, &u->path, u->seg.p, u->seg.n);
}

static enum url_error serialize(struct url *u);

static enum url_error parse_inner(struct url *u, const char *s, size_t n, const struct url *base)
{
    const unsigned char *T = enc_sets();
    enum state st = S_SCHEME_START;
    bool at_seen = false, pass_seen = false, brackets = false;
    size_t buf_start = 0; /* start of the authority/host/port buffer in s */
    enum url_error e;
    for (size_t i = 0;; i++) {
        int c = i < n ? (unsigned char)s[i] : -1;
        size_t rem = i < n ? n - i - 1 : 0; /* bytes after c */
        const char *r = s + i + 1;          /* remaining */
        switch (st) {
        case S_SCHEME_START:
            if (is_alpha(c)) {
                put(u, &u->scheme, (char)lower(c));
                st = S_SCHEME;
            } else {
                st = S_NO_SCHEME;
                i--;
            }
            break;
        case S_SCHEME:
            if (c != -1 && (is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.')) {
                put(u, &u->scheme, (char)lower(c));
            } else if (c == ':') {
                if (u->over)
                    return URL_ERR_TOO_LONG;
                u->special = scheme_special(&u->scheme);
                if (scheme_is(&u->scheme, "file")) {
                    st = S_FILE;
                } else if (u->special && base && base->scheme.n == u->scheme.n &&
                           memcmp(base->scheme.p, u->scheme.p, u->scheme.n) == 0) {
                    st = S_SPECIAL_RELATIVE_OR_AUTHORITY;
                } else if (u->special) {
                    st = S_SPECIAL_AUTHORITY_SLASHES;
                } else if (rem > 0 && r[0] == '/') {
                    st = S_PATH_OR_AUTHORITY;
                    i++;
                } else {
                    u->opaque_path = true;
                    st = S_OPAQUE_PATH;
                }
            } else {
                u->scheme.n = 0;
                st = S_NO_SCHEME;
                i = (size_t)-1;
            }
            break;
        case S_NO_SCHEME:
            if (!base || (base->opaque_path && c != '#'))
                return URL_ERR_NO_SCHEME_NO_BASE;
            if (base->opaque_path && c == '#') {
                copy_buf(u, &u->scheme, &base->scheme);
                u->special = base->special;
                copy_buf(u, &u->path, &base->path);
                u->opaque_path = true;
                copy_buf(u, &u->query, &base->query);
                u->has_query = base->has_query;
                u->has_frag = true;
                st = S_FRAGMENT;
            } else if (!scheme_is(&base->scheme, "file")) {
                st = S_RELATIVE;
                i--;
            } else {
                st = S_FILE;
                i--;
            }
            break;
        case S_SPECIAL_RELATIVE_OR_AUTHORITY:
            if (c == '/' && rem > 0 && r[0] == '/') {
                st = S_SPECIAL_AUTHORITY_IGNORE_SLASHES;
                i++;
            } else {
                st = S_RELATIVE;
                i--;
            }
            break;
        case S_PATH_OR_AUTHORITY:
            if (c == '/') {
                st = S_AUTHORITY;
                buf_start = i + 1;
            } else {
                st = S_PATH;
                i--;
            }
            break;
        case S_RELATIVE:
            copy_buf(u, &u->scheme, &base->scheme);
            u->special = base->special;
            if (c == '/' || (u->special && c == '\\')) {
                st = S_RELATIVE_SLASH;
            } else {
                copy_authority(u, base);
                copy_buf(u, &u->path, &base->path);
                copy_buf(u, &u->query, &base->query);
                u->has_query = base->has_query;
                if (c == '?') {
                    u->query.n = 0;
                    u->has_query = true;
                    st = S_QUERY;
                } else if (c == '#') {
                    u->has_frag = true;
                    st = S_FRAGMENT;
                } else if (c != -1) {
                    u->query.n = 0;
                    u->has_query = false;
                    path_shorten(u);
                    st = S_PATH;
                    i--;
                }
            }
            break;
        case S_RELATIVE_SLASH:
            if (u->special && (c == '/' || c == '\\')) {
                st = S_SPECIAL_AUTHORITY_IGNORE_SLASHES;
            } else if (c == '/') {
                st = S_AUTHORITY;
                buf_start = i + 1;
            } else {
                copy_authority(u, base);
                st = S_PATH;
                i--;
            }
            break;
        case S_SPECIAL_AUTHORITY_SLASHES:
            if (c == '/' && rem > 0 && r[0] == '/') {
                st = S_SPECIAL_AUTHORITY_IGNORE_SLASHES;
                i++;
            } else {
                st = S_SPECIAL_AUTHORITY_IGNORE_SLASHES;
                i--;
            }
            break;
        case S_SPECIAL_AUTHORITY_IGNORE_SLASHES:
            if (c != '/' && c != '\\') {
                st = S_AUTHORITY;
                buf_start = i;
                i--;
            }
            break;
        case S_AUTHORITY:
            if (c == '@') {
                if (at_seen)
                    puts_n(u, pass_seen ? &u->pass : &u->user, "%40", 3);
                at_seen = true;
                for (size_t k = buf_start; k < i; k++) {
                    unsigned char b = (unsigned char)s[k];
                    if (b == ':' && !pass_seen) {
                        pass_seen = true;
                        continue;
                    }
                    put_enc(u, pass_seen ? &u->pass : &u->user, b, SET_USERINFO, T);
                }
                buf_start = i + 1;
            } else if (c == -1 || c == '/' || c == '?' || c == '#' || (u->special && c == '\\')) {
                if (at_seen && i == buf_start)
                    return URL_ERR_CREDENTIALS_NO_HOST;
                i = buf_start - 1;
                st = S_HOST;
            }
            break;
        case S_HOST:
            if (c == ':' && !brackets) {
                if (i == buf_start)
                    return URL_ERR_MISSING_HOST;
                e = host_parse(u, s + buf_start, i - buf_start, !u->special);
                if (e)
                    return e;
                st = S_PORT;
                buf_start = i + 1;
            } else if (c == -1 || c == '/' || c == '?' || c == '#' || (u->special && c == '\\')) {
                i--;
                if (u->special && i + 1 == buf_start)
                    return URL_ERR_MISSING_HOST;
                e = host_parse(u, s + buf_start, i + 1 - buf_start, !u->special);
                if (e)
                    return e;
                st = S_PATH_START;
            } else {
                if (c == '[')
                    brackets = true;
                if (c == ']')
                    brackets = false;
            }
            break;
        case S_PORT:
            if (is_digit(c)) {
                /* accumulate below */
            } else if (c == -1 || c == '/' || c == '?' || c == '#' || (u->special && c == '\\')) {
                if (i > buf_start) {
                    unsigned long v = 0;
                    for (size_t k = buf_start; k < i; k++) {
                        v = v * 10 + (unsigned long)(s[k] - '0');
                        if (v > 65535)
                            return URL_ERR_INVALID_PORT;
                    }
                    int dp = default_port(u->scheme.p, u->scheme.n);
                    u->port = ((int)v == dp) ? -1 : (int)v;
                }
                st = S_PATH_START;
                i--;
            } else {
                return URL_ERR_INVALID_PORT;
            }
            break;
        case S_FILE:
            u->scheme.n = 0;
            puts_n(u, &u->scheme, "file", 4);
            u->special = true;
            u->host.n = 0;
            u->host_kind = HOST_EMPTY;
            if (c == '/' || c == '\\') {
                st = S_FILE_SLASH;
            } else if (base && scheme_is(&base->scheme, "file")) {
                copy_buf(u, &u->host, &base->host);
                u->host_kind = base->host_kind;
                copy_buf(u, &u->path, &base->path);
                copy_buf(u, &u->query, &base->query);
                u->has_query = base->has_query;
                if (c == '?') {
                    u->query.n = 0;
                    u->has_query = true;
                    st = S_QUERY;
                } else if (c == '#') {
                    u->has_frag = true;
                    st = S_FRAGMENT;
                } else if (c != -1) {
                    u->query.n = 0;
                    u->has_query = false;
                    if (!starts_with_drive(s + i, n - i))
                        path_shorten(u);
                    else
                        u->path.n = 0;
                    st = S_PATH;
                    i--;
                }
            } else {
                st = S_PATH;
                i--;
            }
            break;
        case S_FILE_SLASH:
            if (c == '/' || c == '\\') {
                st = S_FILE_HOST;
                buf_start = i + 1;
            } else {
                if (base && scheme_is(&base->scheme, "file")) {
                    copy_buf(u, &u->host, &base->host);
                    u->host_kind = base->host_kind;
                    const char *f;
                    size_t fn;
                    path_first(&base->path, &f, &fn);
                    if (!starts_with_drive(s + i, i < n ? n - i : 0) && f && is_drive(f, fn, true)) {
                        put(u, &u->path, '/');
                        puts_n(u, &u->path, f, fn);
                    }
                }
                st = S_PATH;
                i--;
            }
            break;
        case S_FILE_HOST:
            if (c == -1 || c == '/' || c == '\\' || c == '?' || c == '#') {
                i--;
                size_t bl = i + 1 - buf_start;
                if (is_drive(s + buf_start, bl, false)) {
                    u->seg.n = 0;
                    puts_n(u, &u->seg, s + buf_start, bl);
                    st = S_PATH;
                } else if (bl == 0) {
                    u->host.n = 0;
                    u->host_kind = HOST_EMPTY;
                    st = S_PATH_START;
                } else {
                    e = host_parse(u, s + buf_start, bl, false);
                    if (e)
                        return e;
                    if (u->host.n == 9 && memcmp(u->host.p, "localhost", 9) == 0) {
                        u->host.n = 0;
                        u->host_kind = HOST_EMPTY;
                    }
                    st = S_PATH_START;
                }
            }
            break;
        case S_PATH_START:
            if (u->special) {
                st = S_PATH;
                if (c != '/' && c != '\\')
                    i--;
            } else if (c == '?') {
                u->has_query = true;
                st = S_QUERY;
            } else if (c == '#') {
                u->has_frag = true;
                st = S_FRAGMENT;
            } else if (c != -1) {
                st = S_PATH;
                if (c != '/')
                    i--;
            }
            break;
        case S_PATH:
            if (c == -1 || c == '/' || (u->special && c == '\\') || c == '?' || c == '#') {
                bool slash = c == '/' || (u->special && c == '\\');
                if (is_double_dot(u->seg.p, u->seg.n)) {
                    path_shorten(u);
                    if (!slash)
                        put(u, &u->path, '/');
                } else if (is_single_dot(u->seg.p, u->seg.n)) {
                    if (!slash)
                        put(u, &u->path, '/');
                } else {
                    if (scheme_is(&u->scheme, "file") && u->path.n == 0 &&
                        is_drive(u->seg.p, u->seg.n, false))
                        u->seg.p[1] = ':';
                    path_push_seg(u);
                }
                u->seg.n = 0;
                if (c == '?') {
                    u->has_query = true;
                    st = S_QUERY;
                } else if (c == '#') {
                    u->has_frag = true;
                    st = S_FRAGMENT;
                }
            } else {
                put_enc(u, &u->seg, (unsigned char)c, SET_PATH, T);
            }
            break;
        case S_OPAQUE_PATH:
            if (c == '?') {
                u->has_query = true;
                st = S_QUERY;
            } else if (c == '#') {
                u->has_frag = true;
                st = S_FRAGMENT;
            } else if (c == ' ') {
                if (rem > 0 && (r[0] == '?' || r[0] == '#'))
                    puts_n(u, &u->path, "%20", 3);
                else
                    put(u, &u->path, ' ');
            } else if (c != -1) {
                put_enc(u, &u->path, (unsigned char)c, SET_C0, T);
            }
            break;
        case S_QUERY:
            if (c == '#') {
                u->has_frag = true;
                st = S_FRAGMENT;
            } else if (c != -1) {
                put_enc(u, &u->query, (unsigned char)c, u->special ? SET_SQUERY : SET_QUERY, T);
            }
            break;
        case S_FRAGMENT:
            if (c != -1)
                put_enc(u, &u->frag, (unsigned char)c, SET_FRAG, T);
            break;
        }
        /* at EOF, states that "decrease the pointer" run again */
        if (c == -1 && i == n)
            break;
        if (u->over)
            return URL_ERR_TOO_LONG;
    }
    if (u->over)
        return URL_ERR_TOO_LONG;
    return serialize(u);
}

static enum url_error serialize(struct url *u)
{
    struct sbuf *h = &u->href;
    h->n = 0;
    puts_n(u, h, u->scheme.p, u->scheme.n);
    put(u, h, ':');
    u->user_off = u->pass_off = u->host_off = h->n;
    u->user_len = u->pass_len = u->host_len = 0;
    if (u->host_kind != HOST_NULL) {
        puts_n(u, h, "//", 2);
        if (u->user.n || u->pass.n) {
            u->user_off = h->n;
            u->user_len = u->user.n;
            puts_n(u, h, u->user.p, u->user.n);
            if (u->pass.n) {
                put(u, h, ':');
                u->pass_off = h->n;
                u->pass_len = u->pass.n;
                puts_n(u, h, u->pass.p, u->pass.n);
            }
            put(u, h, '@');
        }
        u->host_off = h->n;
        u->host_len = u->host.n;
        puts_n(u, h, u->host.p, u->host.n);
        if (u->port >= 0) {
            char t[8];
            int k = snprintf(t, sizeof t, ":%d", u->port);
            puts_n(u, h, t, (size_t)k);
        }
    } else if (!u->opaque_path && u->path.n > 1 && u->path.p[0] == '/' && u->path.p[1] == '/') {
        puts_n(u, h, "/.", 2);
    }
    u->path_off = h->n;
    u->path_len = u->path.n;
    puts_n(u, h, u->path.p, u->path.n);
    u->query_off = u->frag_off = 0;
    u->query_len = u->frag_len = 0;
    if (u->has_query) {
        put(u, h, '?');
        u->query_off = h->n;
        u->query_len = u->query.n;
        puts_n(u, h, u->query.p, u->query.n);
    }
    if (u->has_frag) {
        put(u, h, '#');
        u->frag_off = h->n;
        u->frag_len = u->frag.n;
        puts_n(u, h, u->frag.p, u->frag.n);
    }
    if (u->over || h->n >= h->cap)
        return URL_ERR_TOO_LONG;
    h->p[h->n] = '\0';
    return URL_OK;
}

enum url_error url_parse(struct url *u, const char *input, size_t len, const struct url *base)
{
    if (!u || (!input && len) || base == u)
        return URL_ERR_INVALID_ARG;
    reset(u);
    if (base && !base->valid)
        base = NULL;
    if (len > u->opt.max_len)
        return URL_ERR_TOO_LONG;
    /* strip leading/trailing C0 control or space, remove tab and newlines */
    size_t a = 0, b = len;
    while (a < b && (unsigned char)input[a] <= 0x20)
        a++;
    while (b > a && (unsigned char)input[b - 1] <= 0x20)
        b--;
    struct sbuf *in = &u->in;
    in->n = 0;
    for (size_t i = a; i < b; i++) {
        char c = input[i];
        if (c == '\t' || c == '\n' || c == '\r')
            continue;
        in->p[in->n++] = c; /* in->cap > max_len >= len */
    }
    enum url_error e = parse_inner(u, in->p, in->n, base);
    if (e) {
        reset(u);
        return e;
    }
    u->valid = true;
    return URL_OK;
}

/* ---- accessors ---- */

static const char empty[] = "";

const char *url_href(const struct url *u, size_t *len)
{
    if (len)
        *len = u->valid ? u->href.n : 0;
    return u->valid ? u->href.p : empty;
}

size_t url_href_cap(const struct url *u)
{
    return u->href.cap - 1;
}

static const char *span(const struct url *u, size_t off, size_t n, size_t *len)
{
    if (len)
        *len = u->valid ? n : 0;
    return u->valid ? u->href.p + off : empty;
}

const char *url_scheme(const struct url *u, size_t *len) { return span(u, 0, u->scheme.n, len); }
const char *url_username(const struct url *u, size_t *len)
{
    return span(u, u->user_off, u->user_len, len);
}
const char *url_password(const struct url *u, size_t *len)
{
    return span(u, u->pass_off, u->pass_len, len);
}
const char *url_host(const struct url *u, size_t *len) { return span(u, u->host_off, u->host_len, len); }
const char *url_path(const struct url *u, size_t *len) { return span(u, u->path_off, u->path_len, len); }

const char *url_query(const struct url *u, size_t *len)
{
    if (!u->valid || !u->has_query) {
        if (len)
            *len = 0;
        return NULL;
    }
    return span(u, u->query_off, u->query_len, len);
}

const char *url_fragment(const struct url *u, size_t *len)
{
    if (!u->valid || !u->has_frag) {
        if (len)
            *len = 0;
        return NULL;
    }
    return span(u, u->frag_off, u->frag_len, len);
}

int url_port(const struct url *u) { return u->valid ? u->port : -1; }

int url_port_effective(const struct url *u)
{
    if (!u->valid)
        return -1;
    if (u->port >= 0)
        return u->port;
    return default_port(u->scheme.p, u->scheme.n);
}

bool url_is_http(const struct url *u)
{
    return u->valid && (scheme_is(&u->scheme, "http") || scheme_is(&u->scheme, "https"));
}

const char *url_request_target(const struct url *u, size_t *len)
{
    size_t n = u->path_len + (u->has_query ? 1 + u->query_len : 0);
    return span(u, u->path_off, n, len);
}

enum url_error url_origin_key(const struct url *u, char *out, size_t cap, size_t *len)
{
    if (!u || !out)
        return URL_ERR_INVALID_ARG;
    if (!url_is_http(u))
        return URL_ERR_NOT_HTTP;
    int k = snprintf(out, cap, "%.*s://%.*s:%d", (int)u->scheme.n, u->href.p, (int)u->host_len,
                     u->href.p + u->host_off, url_port_effective(u));
    if (k < 0 || (size_t)k >= cap)
        return URL_ERR_NO_SPACE;
    if (len)
        *len = (size_t)k;
    return URL_OK;
}

/* ---- crawl key ---- */

int url_key_split(const char *key, size_t len, size_t *authority_len, size_t *host_off,
                  size_t *host_len)
{
    const char *colon = memchr(key, ':', len);
    if (!colon || (size_t)(colon - key) + 3 > len || colon[1] != '/' || colon[2] != '/')
        return -1;
    size_t start = (size_t)(colon - key) + 3, end = start;
    while (end < len && key[end] != '/' && key[end] != '?' && key[end] != '#')
        end++;
    size_t hs = start, he = end;
    for (size_t i = end; i > start; i--) /* userinfo ends at the last '@' */
        if (key[i - 1] == '@') {
            hs = i;
            break;
        }
    if (hs < end && key[hs] == '[') {
        const char *rb = memchr(key + hs, ']', end - hs);
        if (!rb)
            return -1;
        he = (size_t)(rb - key) + 1;
    } else {
        const char *port = memchr(key + hs, ':', end - hs);
        if (port)
            he = (size_t)(port - key);
    }
    if (he == hs)
        return -1;
    *authority_len = end;
    *host_off = hs;
    *host_len = he - hs;
    return 0;
}

struct obuf {
    char *p;
    size_t n, cap;
    bool over;
};

static void oput(struct obuf *o, const char *s, size_t n)
{
    if (n > o->cap - o->n) {
        o->over = true;
        return;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static bool unreserved(int c)
{
    return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* Percent-encoding normalized copy of s[n] (hex upper, unreserved decoded,
 * a '%' that starts no escape written as %25),
 * optionally lower-casing the characters that are not escapes. */
static void norm_pct(struct obuf *o, const char *s, size_t n, bool lowercase)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%' && i + 2 < n && is_hex((unsigned char)s[i + 1]) &&
            is_hex((unsigned char)s[i + 2])) {
            int v = hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]);
            if (unreserved(v)) {
                char ch = (char)(lowercase ? lower(v) : v);
                oput(o, &ch, 1);
            } else {
                char t[3] = {'%', HEX[v >> 4], HEX[v & 15]};
                oput(o, t, 3);
            }
            i += 2;
        } else if (c == '%') {
            /* a stray '%' would form a new escape with decoded neighbours
             * ("%%36C" -> "%6C"): write it as the escape it stands for */
            oput(o, "%25", 3);
        } else {
            char ch = (char)(lowercase ? lower(c) : c);
            oput(o, &ch, 1);
        }
    }
}

static bool tracking_param(const char *s, size_t n)
{
    static const char *const names[] = {"fbclid", "gclid",  "dclid",  "gbraid", "wbraid",
                                        "msclkid", "mc_cid", "mc_eid", "_ga",    "_gl",
                                        "yclid",  "igshid", "_hsenc", "_hsmi",  "mkt_tok"};
    if (n >= 4 && strncasecmp(s, "utm_", 4) == 0)
        return true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncasecmp(s, names[i], n) == 0)
            return true;
    return false;
}

struct qparam {
    const char *p;
    size_t n, name_n, idx;
};

static int qparam_cmp(const void *a, const void *b)
{
    const struct qparam *x = a, *y = b;
    size_t m = x->name_n < y->name_n ? x->name_n : y->name_n;
    int c = memcmp(x->p, y->p, m);
    if (c)
        return c;
    if (x->name_n != y->name_n)
        return x->name_n < y->name_n ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

#define QPARAM_MAX 256

/* Query canonicalization: q[n] is already percent-normalized. */
static void canon_query(struct obuf *o, const char *q, size_t n, unsigned flags)
{
    struct qparam ps[QPARAM_MAX];
    size_t k = 0;
    bool too_many = false;
    size_t st = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && q[i] != '&')
            continue;
        const char *p = q + st;
        size_t pn = i - st;
        st = i + 1;
        const char *eq = memchr(p, '=', pn);
        size_t nn = eq ? (size_t)(eq - p) : pn;
        if ((flags & URL_CANON_STRIP_TRACKING) && tracking_param(p, nn))
            continue;
        if (k == QPARAM_MAX) {
            too_many = true;
            break;
        }
        ps[k] = (struct qparam){p, pn, nn, k};
        k++;
    }
    if (too_many) { /* leave huge queries alone rather than half-process them */
        flags &= ~(unsigned)(URL_CANON_STRIP_TRACKING | URL_CANON_SORT_QUERY);
        oput(o, "?", 1);
        oput(o, q, n);
        return;
    }
    if ((flags & URL_CANON_SORT_QUERY) && k > 1)
        qsort(ps, k, sizeof ps[0], qparam_cmp);
    size_t mark = o->n;
    oput(o, "?", 1);
    for (size_t i = 0; i < k; i++) {
        if (i)
            oput(o, "&", 1);
        oput(o, ps[i].p, ps[i].n);
    }
    /* An empty result is dropped when asked, or when stripping emptied it
     * (so "?utm_x=1&" and its key "" agree). */
    if (!o->over && o->n == mark + 1 &&
        ((flags & URL_CANON_DROP_EMPTY_QUERY) || ((flags & URL_CANON_STRIP_TRACKING) && n > 0)))
        o->n = mark;
}

enum url_error url_crawl_key(const struct url *u, char *out, size_t cap, size_t *len)
{
    if (!u || !out || cap == 0)
        return URL_ERR_INVALID_ARG;
    if (!url_is_http(u))
        return URL_ERR_NOT_HTTP;
    unsigned f = u->opt.flags;
    struct obuf o = {.p = out, .n = 0, .cap = cap - 1, .over = false};
    const char *h = u->href.p;
    /* https_to_http keeps "https://h:80" as it is: folded, its port would
     * vanish on reparse (80 is http's default) and the key would change. */
    if ((f & URL_CANON_SCHEME_FOLD) && u->port != 80)
        oput(&o, "http:", 5);
    else
        oput(&o, h, u->scheme.n + 1);
    /* authority as serialized: from after "scheme:" to the path; strip_www
     * removes every leading "www." so that the key is a fixed point */
    size_t host_off = u->host_off, skip = 0;
    if ((f & URL_CANON_STRIP_WWW) && u->host_kind == HOST_DOMAIN) {
        while (u->host_len - skip > 4 && memcmp(h + host_off + skip, "www.", 4) == 0)
            skip += 4;
    }
    oput(&o, h + u->scheme.n + 1, host_off - (u->scheme.n + 1));
    oput(&o, h + host_off + skip, u->path_off - host_off - skip);
    /* path */
    size_t pstart = o.n;
    if (u->path_len == 0)
        oput(&o, "/", 1);
    else
        norm_pct(&o, h + u->path_off, u->path_len, (f & URL_CANON_LOWERCASE_PATH) != 0);
    /* strip_index and strip_trailing_slash feed each other ("/a/index.html/"):
     * repeat until neither applies, so the key is a fixed point. */
    for (bool changed = true; changed && !o.over;) {
        changed = false;
        if (f & URL_CANON_STRIP_TRAILING_SLASH) {
            while (o.n - pstart > 1 && o.p[o.n - 1] == '/') {
                o.n--;
                changed = true;
            }
        }
        if (f & URL_CANON_STRIP_INDEX) {
            static const char *const idx[] = {"index.html", "index.htm", "index.php",
                                              "default.asp", "default.aspx"};
            for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++) {
                size_t l = strlen(idx[i]);
                if (o.n - pstart > l && o.p[o.n - l - 1] == '/' &&
                    strncasecmp(o.p + o.n - l, idx[i], l) == 0) {
                    o.n -= l;
                    changed = true;
                    break;
                }
            }
        }
    }
    /* query */
    if (u->has_query) {
        if (f & (URL_CANON_STRIP_TRACKING | URL_CANON_SORT_QUERY | URL_CANON_DROP_EMPTY_QUERY)) {
            /* normalize into the tail of out first, then canonicalize from a copy */
            char tmp[4096];
            struct obuf t = {.p = tmp, .n = 0, .cap = sizeof tmp, .over = false};
            norm_pct(&t, h + u->query_off, u->query_len, false);
            if (t.over) {
                oput(&o, "?", 1);
                norm_pct(&o, h + u->query_off, u->query_len, false);
            } else {
                canon_query(&o, tmp, t.n, f);
            }
        } else {
            oput(&o, "?", 1);
            norm_pct(&o, h + u->query_off, u->query_len, false);
        }
    }
    if (o.over)
        return o.n >= u->opt.max_len ? URL_ERR_TOO_LONG : URL_ERR_NO_SPACE;
    if (o.n > u->opt.max_len)
        return URL_ERR_TOO_LONG;
    out[o.n] = '\0';
    if (len)
        *len = o.n;
    return URL_OK;
}

enum url_error url_normalize(struct url *u, const struct url *base, const char *ref, size_t len,
                             char *out, size_t cap, size_t *out_len)
{
    enum url_error e = url_parse(u, ref, len, base);
    if (e)
        return e;
    return url_crawl_key(u, out, cap, out_len);
}
