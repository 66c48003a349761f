/* pages.c: a WACZ's page list (see pages.h). */
#include "crawler/archive/pages.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "crawler/archive/index.h"
#include "crawler/archive/linesort.h"
#include "crawler/net/decode.h"
#include "crawler/store/cdxj.h"
#include "crawler/store/crawl_log.h"
#include "crawler/store/warc_reader.h"
#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "parse/html_charset.h"
#include "parse/html_tokenizer.h"

/* Largest decoded page a title is looked for in. */
#define PAGE_DECODED_MAX (16u << 20)
#define NO_DEPTH UINT64_C(9999999999)

struct cached_title {
	char digest[48];
	char *title;
};

struct pages {
	struct pages_report *rep;
	struct linesort *join;  /* by URL: log lines and records */
	struct linesort *order; /* by depth: the pages */
	struct html_decoder *charset;
	struct html_tokenizer *tok;
	struct cdxj_text line, title;
	bool in_title, title_done;
	struct cached_title cache[PAGES_TITLE_CACHE];
	FILE *out;
	uint64_t seq;
	/* the join's current URL */
	char *url;
	size_t url_cap;
	bool have_url, have_log, have_record;
	uint64_t depth;
	char *date, *page_title;
	size_t date_cap, title_cap;
	char *err;
	size_t errlen;
};

/* ---------- titles ---------- */

static void on_tag(void *ctx, const struct html_tag *tag)
{
	struct pages *p = ctx;
	if (p->title_done || tag->name_len != 5 || memcmp(tag->name, "title", 5) != 0)
		return;
	if (!tag->end && !p->in_title) {
		p->in_title = true;
		p->title.len = 0;
	} else if (tag->end && p->in_title) {
		p->in_title = false;
		p->title_done = true;
	}
}

static void on_text(void *ctx, const char *s, size_t len)
{
	struct pages *p = ctx;
	if (!p->in_title || p->title_done)
		return;
	/* ASCII whitespace runs become one space (document.title) */
	for (size_t i = 0; i < len && p->title.len < PAGES_TITLE_MAX; i++) {
		unsigned char c = (unsigned char)s[i];
		bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
		if (space && (p->title.len == 0 || p->title.p[p->title.len - 1] == ' '))
			continue;
		if (cdxj_text_add(&p->title, space ? " " : (const char *)s + i, 1) != 0)
			return;
	}
}

/* The HTTP message of a record block: status, Content-Type and
 * Content-Encoding (first of each), and where the payload starts. */
struct http_msg {
	int status;
	const char *ctype, *cenc;
	size_t ctype_len, cenc_len;
	size_t body_at;
};

static void http_parse(const uint8_t *b, size_t n, struct http_msg *m)
{
	const char *s = (const char *)b, *end = s + n;
	memset(m, 0, sizeof *m);
	m->body_at = n;
	const char *eol = memchr(s, '\n', n);
	const char *sp = memchr(s, ' ', eol ? (size_t)(eol - s) : n);
	if (eol == NULL || sp == NULL)
		return;
	long st = ascii_decimal_prefix(sp + 1, (size_t)(eol - sp - 1), 999);
	m->status = st < 0 ? 0 : (int)st;
	for (const char *l = eol + 1; l < end;) {
		const char *le = memchr(l, '\n', (size_t)(end - l));
		size_t ll = le ? (size_t)(le - l) : (size_t)(end - l);
		if (ll > 0 && l[ll - 1] == '\r')
			ll--;
		if (ll == 0) {
			m->body_at = le ? (size_t)(le + 1 - s) : n;
			return;
		}
		const char *colon = memchr(l, ':', ll);
		if (colon != NULL) {
			size_t nl = (size_t)(colon - l), vl = ll - nl - 1;
			const char *v = colon + 1;
			while (vl > 0 && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
				vl--;
			if (nl == 12 && strncasecmp(l, "Content-Type", 12) == 0 &&
			    m->ctype == NULL) {
				m->ctype = v;
				m->ctype_len = vl;
			} else if (nl == 16 && strncasecmp(l, "Content-Encoding", 16) == 0 &&
			           m->cenc == NULL) {
				m->cenc = v;
				m->cenc_len = vl;
			}
		}
		if (le == NULL)
			break;
		l = le + 1;
	}
}

static bool is_html(const struct http_msg *m)
{
	size_t n = m->ctype_len;
	const char *semi = m->ctype ? memchr(m->ctype, ';', n) : NULL;
	if (semi != NULL)
		n = (size_t)(semi - m->ctype);
	while (n > 0 && (m->ctype[n - 1] == ' ' || m->ctype[n - 1] == '\t'))
		n--;
	return (n == 9 && strncasecmp(m->ctype, "text/html", 9) == 0) ||
	       (n == 21 && strncasecmp(m->ctype, "application/xhtml+xml", 21) == 0);
}

/* The charset parameter of the Content-Type, NUL-terminated in buf, or NULL. */
static const char *charset_of(const struct http_msg *m, char *buf, size_t cap)
{
	for (size_t i = 0; m->ctype != NULL && i + 8 <= m->ctype_len; i++)
		if (strncasecmp(m->ctype + i, "charset=", 8) == 0) {
			const char *v = m->ctype + i + 8;
			size_t n = 0;
			while (i + 8 + n < m->ctype_len && v[n] != ';' && v[n] != ' ' &&
			       n + 1 < cap)
				n++;
			if (n > 0 && v[0] == '"')
				v++, n--;
			if (n > 0 && v[n - 1] == '"')
				n--;
			memcpy(buf, v, n);
			buf[n] = '\0';
			return n ? buf : NULL;
		}
	return NULL;
}

/* The title of a page's payload into p->title ("" when none). */
static void find_title(struct pages *p, const struct http_msg *m, const uint8_t *body, size_t len)
{
	struct decode_output d = { 0 };
	char enc[64], cs[64];
	const char *page;
	size_t page_len;
	p->title.len = 0;
	if (m->cenc_len >= sizeof enc)
		return;
	memcpy(enc, m->cenc ? m->cenc : "", m->cenc_len);
	enc[m->cenc_len] = '\0';
	if (decode_body(enc, body, len, PAGE_DECODED_MAX, &d) != DECODE_OK)
		return;
	if (html_decoder_run(p->charset, charset_of(m, cs, sizeof cs), (const char *)d.data, d.len,
	                     &page, &page_len) == 0) {
		const struct html_tokenizer_callbacks cb = { .tag = on_tag, .text = on_text };
		p->in_title = p->title_done = false;
		html_tokenize(p->tok, page, page_len, &cb, p, NULL);
		if (!p->title_done)
			p->title.len = p->in_title ? p->title.len : 0;
		while (p->title.len > 0 && p->title.p[p->title.len - 1] == ' ')
			p->title.len--;
		/* a title cut at PAGES_TITLE_MAX may end inside a character */
		struct cdxj_text clean = { 0 };
		if (cdxj_utf8_sanitize(&clean, (const uint8_t *)(p->title.p ? p->title.p : ""),
		                       p->title.len) == 0) {
			p->title.len = 0;
			cdxj_text_add(&p->title, clean.p, clean.len);
		}
		cdxj_text_free(&clean);
	}
	free(d.data);
}

static struct cached_title *cache_slot(struct pages *p, const char *digest, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)digest[i]) * 1099511628211ull;
	return &p->cache[h % PAGES_TITLE_CACHE];
}

/* ---------- gathering ---------- */

static int join_add(struct pages *p)
{
	if (linesort_add(p->join, p->line.p, p->line.len) != 0) {
		snprintf(p->err, p->errlen, "sorting pages: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* One record: an HTML 200 response or a revisit of one goes to the join. */
static int take_record(struct pages *p, const struct warc_record *r)
{
	struct http_msg m;
	bool revisit = r->type != NULL && strcmp(r->type, "revisit") == 0;
	bool response = r->type != NULL && strcmp(r->type, "response") == 0;
	if ((!revisit && !response) || r->target_uri == NULL || r->block == NULL)
		return 0;
	http_parse(r->block, r->block_len, &m);
	if (m.status != 200 || !is_html(&m))
		return 0;
	p->title.len = 0;
	size_t dl = r->payload_digest ? strlen(r->payload_digest) : 0;
	if (dl > 0 && dl < sizeof p->cache[0].digest) {
		struct cached_title *c = cache_slot(p, r->payload_digest, dl);
		bool hit = strcmp(c->digest, r->payload_digest) == 0;
		if (response) {
			find_title(p, &m, r->block + m.body_at, r->block_len - m.body_at);
			free(c->title);
			c->title = strndup(p->title.p ? p->title.p : "", p->title.len);
			memcpy(c->digest, r->payload_digest, dl + 1);
		} else if (hit && c->title != NULL) {
			p->title.len = 0;
			cdxj_text_add(&p->title, c->title, strlen(c->title));
		}
	} else if (response) {
		find_title(p, &m, r->block + m.body_at, r->block_len - m.body_at);
	}
	const char *date = r->date ? r->date : "";
	p->line.len = 0;
	if (cdxj_text_add(&p->line, r->target_uri, strlen(r->target_uri)) != 0 ||
	    cdxj_text_add(&p->line, "\t1\t", 3) != 0 ||
	    cdxj_text_add(&p->line, date, strlen(date)) != 0 ||
	    cdxj_text_add(&p->line, "\t", 1) != 0 ||
	    cdxj_text_add(&p->line, p->title.p ? p->title.p : "", p->title.len) != 0)
		return -1;
	return join_add(p);
}

static int scan_warcs(struct pages *p, const char *dir, size_t max_record)
{
	char **names = NULL, path[4400];
	size_t n = 0;
	int rc = -1;
	if (archive_warc_files(dir, &names, &n) != 0) {
		snprintf(p->err, p->errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct warc_reader *s = NULL;
		struct warc_record r;
		enum warc_read res;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if (warc_reader_open(path, 0, max_record, &s) != 0) {
			snprintf(p->err, p->errlen, "%s: %s", path, strerror(errno));
			goto out;
		}
		while ((res = warc_reader_next(s, &r)) == WARC_READ_RECORD ||
		       res == WARC_READ_TOO_LARGE)
			if (take_record(p, &r) != 0) {
				warc_reader_close(s);
				goto out;
			}
		warc_reader_close(s);
		if (res == WARC_READ_ERR_IO || res == WARC_READ_ERR_NOMEM) {
			snprintf(p->err, p->errlen, "%s: read error", path);
			goto out;
		}
		if (res != WARC_READ_END)
			p->rep->bad_records++;
	}
	rc = 0;
out:
	ARRAY_FREE_EACH(names, n);
	return rc;
}

/* The pages crawl.log lists: their URL, depth and time go to the join. */
static int scan_log(struct pages *p, const char *dir)
{
	char path[4400];
	snprintf(path, sizeof path, "%s/crawl.log", dir);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return errno == ENOENT ? 0 : -1;
	char *line = NULL, *url = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
		const char *fv[CRAWL_LOG_FIELDS];
		size_t fl[CRAWL_LOG_FIELDS];
		int64_t status = 0, depth = 0;
		if (line[0] == '#')
			continue;
		if (line[n - 1] == '\n')
			n--;
		if (crawl_log_split(line, (size_t)n, fv, fl) < CRAWL_LOG_F_FLAGS + 1 ||
		    crawl_log_parse_i64(fv[CRAWL_LOG_F_STATUS], fl[CRAWL_LOG_F_STATUS], &status) !=
		            0 ||
		    crawl_log_parse_i64(fv[CRAWL_LOG_F_DEPTH], fl[CRAWL_LOG_F_DEPTH], &depth) !=
		            0 ||
		    depth < 0) {
			p->rep->bad_log_lines++;
			continue;
		}
		if (status != 200 ||
		    crawl_log_has_flag(fv[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS], "robots") ||
		    crawl_log_has_flag(fv[CRAWL_LOG_F_FLAGS], fl[CRAWL_LOG_F_FLAGS], "embed"))
			continue;
		char *u = realloc(url, fl[CRAWL_LOG_F_URL] + 1);
		if (u == NULL) {
			rc = -1;
			break;
		}
		url = u;
		if (crawl_log_unescape(fv[CRAWL_LOG_F_URL], fl[CRAWL_LOG_F_URL], url) == NULL ||
		    url[0] == '\0') {
			p->rep->bad_log_lines++;
			continue;
		}
		char num[32];
		snprintf(num, sizeof num, "\t0\t%010" PRId64, depth);
		p->line.len = 0;
		rc = cdxj_text_add(&p->line, url, strlen(url)) != 0 ||
		                     cdxj_text_add(&p->line, num, strlen(num)) != 0
		             ? -1
		             : join_add(p);
	}
	free(line);
	free(url);
	fclose(f);
	return rc;
}

/* ---------- joining and ordering ---------- */

static int set_str(char **s, size_t *cap, const char *v, size_t n)
{
	char *r = array_room(*s, cap, n + 1, 64);
	if (r == NULL)
		return -1;
	*s = r;
	memcpy(r, v, n);
	r[n] = '\0';
	return 0;
}

/* The URL the join was on is done: a page when a record names it. */
static int join_flush(struct pages *p)
{
	char head[48];
	if (!p->have_url || !p->have_record)
		goto reset;
	snprintf(head, sizeof head, "%010" PRIu64 "\t", p->have_log ? p->depth : NO_DEPTH);
	p->line.len = 0;
	if (cdxj_text_add(&p->line, head, strlen(head)) != 0 ||
	    cdxj_text_add(&p->line, p->date, strlen(p->date)) != 0 ||
	    cdxj_text_add(&p->line, "\t", 1) != 0 ||
	    cdxj_text_add(&p->line, p->url, strlen(p->url)) != 0 ||
	    cdxj_text_add(&p->line, "\t", 1) != 0 ||
	    cdxj_text_add(&p->line, p->page_title, strlen(p->page_title)) != 0)
		return -1;
	if (linesort_add(p->order, p->line.p, p->line.len) != 0)
		return -1;
reset:
	p->have_url = p->have_log = p->have_record = false;
	return 0;
}

/* A joined line, in URL order: URL \t 0 \t DEPTH, or URL \t 1 \t DATE \t
 * TITLE. The least depth and the first record of a URL are kept. */
static int on_joined(void *ctx, const char *line, size_t len)
{
	struct pages *p = ctx;
	const char *t1 = memchr(line, '\t', len);
	if (t1 == NULL || (size_t)(line + len - t1) < 3)
		return 0;
	size_t ul = (size_t)(t1 - line);
	if (!p->have_url || strlen(p->url) != ul || memcmp(p->url, line, ul) != 0) {
		if (join_flush(p) != 0 || set_str(&p->url, &p->url_cap, line, ul) != 0)
			return -1;
		p->have_url = true;
	}
	const char *rest = t1 + 3, *end = line + len;
	if (t1[1] == '0') {
		uint64_t d = strtoull(rest, NULL, 10);
		if (!p->have_log || d < p->depth)
			p->depth = d;
		p->have_log = true;
	} else if (!p->have_record) {
		const char *t2 = memchr(rest, '\t', (size_t)(end - rest));
		if (t2 == NULL)
			return 0;
		if (set_str(&p->date, &p->date_cap, rest, (size_t)(t2 - rest)) != 0 ||
		    set_str(&p->page_title, &p->title_cap, t2 + 1, (size_t)(end - t2 - 1)) != 0)
			return -1;
		p->have_record = true;
	}
	return 0;
}

/* A page, in depth order: DEPTH \t DATE \t URL \t TITLE, to the file. */
static int on_ordered(void *ctx, const char *line, size_t len)
{
	struct pages *p = ctx;
	const char *f[4], *end = line + len;
	size_t fl[4];
	const char *s = line;
	for (int i = 0; i < 4; i++) {
		const char *t = i < 3 ? memchr(s, '\t', (size_t)(end - s)) : NULL;
		f[i] = s;
		fl[i] = (size_t)((t ? t : end) - s);
		if (i < 3 && t == NULL)
			return 0;
		s = t ? t + 1 : end;
	}
	uint64_t depth = strtoull(f[0], NULL, 10);
	char id[24], num[32];
	snprintf(id, sizeof id, "%08" PRIx64, ++p->seq);
	p->line.len = 0;
	if (cdxj_text_add(&p->line, "{\"id\":", 6) != 0 ||
	    cdxj_json_string(&p->line, id, strlen(id)) != 0 ||
	    cdxj_text_add(&p->line, ",\"url\":", 7) != 0 ||
	    cdxj_json_string(&p->line, f[2], fl[2]) != 0 ||
	    cdxj_text_add(&p->line, ",\"ts\":", 6) != 0 ||
	    cdxj_json_string(&p->line, f[1], fl[1]) != 0)
		return -1;
	if (fl[3] > 0 && (cdxj_text_add(&p->line, ",\"title\":", 9) != 0 ||
	                  cdxj_json_string(&p->line, f[3], fl[3]) != 0))
		return -1;
	p->rep->titles += fl[3] > 0;
	if (depth != NO_DEPTH) {
		snprintf(num, sizeof num, ",\"depth\":%" PRIu64, depth);
		if (cdxj_text_add(&p->line, num, strlen(num)) != 0 ||
		    (depth == 0 && cdxj_text_add(&p->line, ",\"seed\":true", 12) != 0))
			return -1;
	}
	if (cdxj_text_add(&p->line, "}\n", 2) != 0 ||
	    fwrite(p->line.p, 1, p->line.len, p->out) != p->line.len)
		return -1;
	p->rep->pages++;
	return 0;
}

int pages_write(const char *dir, const char *tmpdir, size_t memory, size_t max_record,
                const char *out_path, struct pages_report *rep, char *err, size_t errlen)
{
	char jdir[4400], odir[4400];
	struct pages *p = calloc(1, sizeof *p);
	int rc = -1;
	if (p == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	p->rep = rep;
	p->err = err;
	p->errlen = errlen;
	snprintf(jdir, sizeof jdir, "%s/join", tmpdir);
	snprintf(odir, sizeof odir, "%s/order", tmpdir);
	p->join = linesort_create(jdir, memory / 2);
	p->order = linesort_create(odir, memory / 2);
	p->charset = html_decoder_create();
	p->tok = html_tokenizer_create();
	if (p->join == NULL || p->order == NULL || p->charset == NULL || p->tok == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	err[0] = '\0';
	if (scan_log(p, dir) != 0 || scan_warcs(p, dir, max_record) != 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "%s/crawl.log: %s", dir, strerror(errno));
		goto out;
	}
	if (linesort_finish(p->join, on_joined, p) != 0 || join_flush(p) != 0) {
		snprintf(err, errlen, "joining pages: %s", strerror(errno));
		goto out;
	}
	p->out = fopen(out_path, "w");
	if (p->out == NULL) {
		snprintf(err, errlen, "%s: %s", out_path, strerror(errno));
		goto out;
	}
	fputs("{\"format\":\"json-pages-1.0\",\"id\":\"pages\",\"title\":\"All Pages\"}\n", p->out);
	rc = linesort_finish(p->order, on_ordered, p);
	if (fclose(p->out) != 0)
		rc = -1;
	p->out = NULL;
	if (rc != 0)
		snprintf(err, errlen, "%s: %s", out_path, strerror(errno));
out:
	linesort_destroy(p->join);
	linesort_destroy(p->order);
	html_decoder_destroy(p->charset);
	html_tokenizer_destroy(p->tok);
	for (size_t i = 0; i < PAGES_TITLE_CACHE; i++)
		free(p->cache[i].title);
	cdxj_text_free(&p->line);
	cdxj_text_free(&p->title);
	free(p->url);
	free(p->date);
	free(p->page_title);
	free(p);
	return rc;
}
