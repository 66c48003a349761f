/* wacz.c: a crawl packaged as a WACZ (see wacz.h). */
#include "crawler/archive/wacz.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zip.h>
#include <zlib.h>

#include "crawler/archive/index.h"
#include "crawler/archive/pages.h"
#include "crawler/store/cdxj.h"
#include "frontier/base/array.h"
#include "frontier/base/fileio.h"

#define DEFAULT_MAX_RECORD (64u << 20)
#define HASH_CHUNK (1u << 20)

/* One file of the package: where it is and where it goes. */
struct resource {
	char *file;     /* on disk */
	char *zip_path; /* in the package */
	uint64_t bytes;
	char hash[72]; /* "sha256:" + hex */
};

struct package {
	const char *dir;
	const struct wacz_options *o;
	struct wacz_report *rep;
	char tmpdir[4200];
	struct resource *res;
	size_t nres, res_cap;
	char *err;
	size_t errlen;
};

static int add_resource(struct package *k, const char *file, const char *zip_path)
{
	struct resource *r = array_grow(k->res, &k->res_cap, k->nres, sizeof *r, 16);
	if (r == NULL)
		return -1;
	k->res = r;
	r = &k->res[k->nres];
	memset(r, 0, sizeof *r);
	r->file = strdup(file);
	r->zip_path = strdup(zip_path);
	if (r->file == NULL || r->zip_path == NULL) {
		free(r->file);
		free(r->zip_path);
		return -1;
	}
	k->nres++;
	return 0;
}

/* The SHA-256 and size of a resource's file. */
static int hash_file(struct package *k, struct resource *r)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int rc = -1;
	uint8_t *buf = malloc(HASH_CHUNK);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int fd = open(r->file, O_RDONLY | O_CLOEXEC);
	if (buf == NULL || ctx == NULL || fd < 0 || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out;
	r->bytes = 0;
	for (;;) {
		ssize_t n = read(fd, buf, HASH_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out;
		if (n == 0)
			break;
		if (EVP_DigestUpdate(ctx, buf, (size_t)n) != 1)
			goto out;
		r->bytes += (uint64_t)n;
	}
	if (EVP_DigestFinal_ex(ctx, md, &mdlen) != 1)
		goto out;
	memcpy(r->hash, "sha256:", 7);
	for (unsigned i = 0; i < mdlen; i++) {
		r->hash[7 + 2 * i] = hex[md[i] >> 4];
		r->hash[8 + 2 * i] = hex[md[i] & 15];
	}
	r->hash[7 + 2 * mdlen] = '\0';
	rc = 0;
out:
	if (rc != 0)
		snprintf(k->err, k->errlen, "%s: %s", r->file, strerror(errno ? errno : EIO));
	if (fd >= 0)
		close(fd);
	EVP_MD_CTX_free(ctx);
	free(buf);
	return rc;
}

/* ---------- a ZipNum index ---------- */

struct zipnum {
	FILE *gz, *idx;
	struct cdxj_text block;
	char *prefix; /* "URLKEY TIMESTAMP" of the block's first line */
	size_t prefix_cap, lines;
	uint64_t offset;
	uint8_t *out;
	size_t out_cap;
};

/* The block as one gzip member, and its line in the idx. */
static int zipnum_flush(struct zipnum *z)
{
	z_stream s;
	if (z->lines == 0)
		return 0;
	memset(&s, 0, sizeof s);
	if (deflateInit2(&s, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	size_t bound = deflateBound(&s, z->block.len);
	uint8_t *o = (uint8_t *)array_room((char *)z->out, &z->out_cap, bound, 64 * 1024);
	if (o == NULL) {
		deflateEnd(&s);
		return -1;
	}
	z->out = o;
	s.next_in = (Bytef *)z->block.p;
	s.avail_in = (uInt)z->block.len;
	s.next_out = z->out;
	s.avail_out = (uInt)z->out_cap;
	int ret = deflate(&s, Z_FINISH);
	size_t len = z->out_cap - s.avail_out;
	deflateEnd(&s);
	if (ret != Z_STREAM_END || fwrite(z->out, 1, len, z->gz) != len)
		return -1;
	fprintf(z->idx, "%s {\"offset\":%" PRIu64 ",\"length\":%zu}\n", z->prefix, z->offset, len);
	z->offset += len;
	z->block.len = 0;
	z->lines = 0;
	return 0;
}

static int zipnum_line(struct zipnum *z, const char *line, size_t len)
{
	if (z->lines == 0) {
		const char *brace = memmem(line, len, " {", 2);
		size_t pl = brace ? (size_t)(brace - line) : len;
		char *p = array_room(z->prefix, &z->prefix_cap, pl + 1, 256);
		if (p == NULL)
			return -1;
		z->prefix = p;
		memcpy(p, line, pl);
		p[pl] = '\0';
	}
	if (cdxj_text_add(&z->block, line, len) != 0)
		return -1;
	if (++z->lines == WACZ_ZIPNUM_BLOCK)
		return zipnum_flush(z);
	return 0;
}

/* index.cdxj as tmpdir/index.cdx.gz and tmpdir/index.idx. */
static int make_zipnum(struct package *k, const char *cdxj, const char *gz, const char *idx)
{
	struct zipnum z = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = -1;
	FILE *in = fopen(cdxj, "r");
	z.gz = fopen(gz, "w");
	z.idx = fopen(idx, "w");
	if (in == NULL || z.gz == NULL || z.idx == NULL)
		goto out;
	fputs("!meta 0 {\"format\":\"cdxj-gzip-1.0\",\"filename\":\"index.cdx.gz\"}\n", z.idx);
	while ((n = getline(&line, &cap, in)) > 0)
		if (zipnum_line(&z, line, (size_t)n) != 0)
			goto out;
	rc = ferror(in) || zipnum_flush(&z) != 0 ? -1 : 0;
out:
	if (rc != 0)
		snprintf(k->err, k->errlen, "ZipNum index: %s", strerror(errno ? errno : EIO));
	if (in != NULL)
		fclose(in);
	if (z.gz != NULL && fclose(z.gz) != 0)
		rc = -1;
	if (z.idx != NULL && fclose(z.idx) != 0)
		rc = -1;
	free(line);
	cdxj_text_free(&z.block);
	free(z.prefix);
	free(z.out);
	return rc;
}

/* ---------- the two JSON files ---------- */

/* The raw JSON string token of "name": in a JSON line (escapes kept), or
 * NULL. */
static const char *json_token(const char *line, const char *name, size_t *len)
{
	char key[32];
	snprintf(key, sizeof key, "\"%s\":\"", name);
	const char *s = strstr(line, key);
	if (s == NULL)
		return NULL;
	s += strlen(key) - 1;
	const char *e = s + 1;
	while (*e && *e != '"')
		e += *e == '\\' && e[1] ? 2 : 1;
	if (*e != '"')
		return NULL;
	*len = (size_t)(e + 1 - s);
	return s;
}

/* The first page of pages.jsonl (a seed, when there is one) as the main
 * page: its url and ts tokens appended to t. */
static int main_page(const char *pages, struct cdxj_text *t)
{
	FILE *f = fopen(pages, "r");
	char *line = NULL;
	size_t cap = 0, ul, tl;
	int rc = 0;
	if (f == NULL)
		return -1;
	if (getline(&line, &cap, f) > 0 && getline(&line, &cap, f) > 0) {
		const char *u = json_token(line, "url", &ul), *ts = json_token(line, "ts", &tl);
		if (u != NULL && ts != NULL)
			rc = cdxj_text_add(t, ",\"mainPageUrl\":", 15) || cdxj_text_add(t, u, ul) ||
			     cdxj_text_add(t, ",\"mainPageDate\":", 16) || cdxj_text_add(t, ts, tl);
	}
	free(line);
	fclose(f);
	return rc ? -1 : 0;
}

static int write_text(const char *path, const struct cdxj_text *t)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	int rc = fwrite(t->p, 1, t->len, f) == t->len ? 0 : -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* datapackage.json (its resources hashed first) and
 * datapackage-digest.json. */
static int write_manifests(struct package *k, const char *pages, const char *dp, const char *digest)
{
	struct cdxj_text t = { 0 };
	char created[32], num[32];
	time_t now = time(NULL);
	struct tm tm;
	int rc = -1;
	gmtime_r(&now, &tm);
	strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (size_t i = 0; i < k->nres; i++)
		if (hash_file(k, &k->res[i]) != 0)
			goto out;
	if (cdxj_text_add(&t, "{\"profile\":\"data-package\",\"resources\":[", 39) != 0)
		goto nomem;
	for (size_t i = 0; i < k->nres; i++) {
		const struct resource *r = &k->res[i];
		const char *name = strrchr(r->zip_path, '/');
		name = name ? name + 1 : r->zip_path;
		snprintf(num, sizeof num, ",\"bytes\":%" PRIu64 "}", r->bytes);
		if (cdxj_text_add(&t, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8) != 0 ||
		    cdxj_json_string(&t, name, strlen(name)) != 0 ||
		    cdxj_text_add(&t, ",\"path\":", 8) != 0 ||
		    cdxj_json_string(&t, r->zip_path, strlen(r->zip_path)) != 0 ||
		    cdxj_text_add(&t, ",\"hash\":", 8) != 0 ||
		    cdxj_json_string(&t, r->hash, strlen(r->hash)) != 0 ||
		    cdxj_text_add(&t, num, strlen(num)) != 0)
			goto nomem;
	}
	const char *sw = k->o->software ? k->o->software : "crawler";
	if (cdxj_text_add(&t, "],\"wacz_version\":\"1.1.1\",\"software\":", 36) != 0 ||
	    cdxj_json_string(&t, sw, strlen(sw)) != 0 ||
	    cdxj_text_add(&t, ",\"created\":", 11) != 0 ||
	    cdxj_json_string(&t, created, strlen(created)) != 0 || main_page(pages, &t) != 0 ||
	    cdxj_text_add(&t, "}\n", 2) != 0)
		goto nomem;
	if (write_text(dp, &t) != 0)
		goto io;
	struct resource dr = { .file = (char *)dp };
	if (hash_file(k, &dr) != 0)
		goto out;
	t.len = 0;
	if (cdxj_text_add(&t, "{\"path\":\"datapackage.json\",\"hash\":", 34) != 0 ||
	    cdxj_json_string(&t, dr.hash, strlen(dr.hash)) != 0 || cdxj_text_add(&t, "}\n", 2) != 0)
		goto nomem;
	if (write_text(digest, &t) != 0)
		goto io;
	rc = 0;
	goto out;
nomem:
	snprintf(k->err, k->errlen, "out of memory");
	goto out;
io:
	snprintf(k->err, k->errlen, "%s: %s", k->tmpdir, strerror(errno));
out:
	cdxj_text_free(&t);
	return rc;
}

/* ---------- the zip ---------- */

static int package_add(zip_t *za, const char *file, const char *name)
{
	zip_source_t *src = zip_source_file(za, file, 0, -1);
	if (src == NULL)
		return -1;
	zip_int64_t i = zip_file_add(za, name, src, ZIP_FL_ENC_UTF_8 | ZIP_FL_OVERWRITE);
	if (i < 0) {
		zip_source_free(src);
		return -1;
	}
	return zip_set_file_compression(za, (zip_uint64_t)i, ZIP_CM_STORE, 0);
}

static int write_zip(struct package *k, const char *tmp, const char *dp, const char *digest)
{
	int zerr = 0;
	zip_t *za = zip_open(tmp, ZIP_CREATE | ZIP_TRUNCATE, &zerr);
	if (za == NULL) {
		zip_error_t e;
		zip_error_init_with_code(&e, zerr);
		snprintf(k->err, k->errlen, "%s: %s", tmp, zip_error_strerror(&e));
		zip_error_fini(&e);
		return -1;
	}
	for (size_t i = 0; i < k->nres; i++)
		if (package_add(za, k->res[i].file, k->res[i].zip_path) != 0)
			goto fail;
	if (package_add(za, dp, "datapackage.json") != 0 ||
	    package_add(za, digest, "datapackage-digest.json") != 0 || zip_close(za) != 0)
		goto fail;
	return 0;
fail:
	snprintf(k->err, k->errlen, "%s: %s", tmp, zip_strerror(za));
	zip_discard(za);
	remove(tmp);
	return -1;
}

/* ---------- the whole ---------- */

static int gather(struct package *k, char *path, size_t cap, uint64_t lines)
{
	char **names = NULL, zp[4400];
	size_t n = 0;
	int rc = -1;
	char pages[4400], gz[4400], idx[4400];
	snprintf(pages, sizeof pages, "%s/pages.jsonl", k->tmpdir);
	if (archive_warc_files(k->dir, &names, &n) != 0) {
		snprintf(k->err, k->errlen, "%s: %s", k->dir, strerror(errno));
		return -1;
	}
	k->rep->warcs = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(path, cap, "%s/%s", k->dir, names[i]);
		snprintf(zp, sizeof zp, "archive/%s", names[i]);
		if (add_resource(k, path, zp) != 0)
			goto nomem;
	}
	snprintf(path, cap, "%s/index.cdxj", k->dir);
	if (lines <= (k->o->zipnum_lines ? k->o->zipnum_lines : WACZ_ZIPNUM_LINES)) {
		if (add_resource(k, path, "indexes/index.cdx") != 0)
			goto nomem;
	} else {
		snprintf(gz, sizeof gz, "%s/index.cdx.gz", k->tmpdir);
		snprintf(idx, sizeof idx, "%s/index.idx", k->tmpdir);
		k->rep->zipnum = 1;
		if (make_zipnum(k, path, gz, idx) != 0)
			goto out;
		if (add_resource(k, gz, "indexes/index.cdx.gz") != 0 ||
		    add_resource(k, idx, "indexes/index.idx") != 0)
			goto nomem;
	}
	if (add_resource(k, pages, "pages/pages.jsonl") != 0)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	snprintf(k->err, k->errlen, "out of memory");
out:
	ARRAY_FREE_EACH(names, n);
	return rc;
}

int wacz_write(const char *dir, const struct wacz_options *o, struct wacz_report *rep, char *err,
               size_t errlen)
{
	struct package k = { .dir = dir, .o = o, .rep = rep, .err = err, .errlen = errlen };
	struct archive_index_options io = { .memory = o->memory,
		                            .max_record = o->max_record,
		                            .max_url_len = o->max_url_len,
		                            .messages = o->messages,
		                            .who = o->who };
	struct archive_index_report ir = { 0 };
	struct pages_report pr = { 0 };
	char path[4400], tmp[4400], pages[4400], sortdir[4400], dp[4400], digest[4400];
	struct stat st;
	int rc = -1;
	if (o->path != NULL)
		snprintf(rep->path, sizeof rep->path, "%s", o->path);
	else
		snprintf(rep->path, sizeof rep->path, "%s/crawl.wacz", dir);
	snprintf(tmp, sizeof tmp, "%s.tmp", rep->path);
	snprintf(k.tmpdir, sizeof k.tmpdir, "%s/.wacz-tmp", dir);
	snprintf(pages, sizeof pages, "%s/pages.jsonl", k.tmpdir);
	snprintf(sortdir, sizeof sortdir, "%s/sort", k.tmpdir);
	snprintf(dp, sizeof dp, "%s/datapackage.json", k.tmpdir);
	snprintf(digest, sizeof digest, "%s/datapackage-digest.json", k.tmpdir);
	fileio_remove_tree(k.tmpdir);
	if (fileio_mkdir_p(k.tmpdir) != 0) {
		snprintf(err, errlen, "%s: %s", k.tmpdir, strerror(errno));
		return -1;
	}
	if (archive_index_write(dir, &io, &ir, err, errlen) != 0)
		goto out;
	rep->index_lines = ir.lines;
	if (pages_write(dir, sortdir, o->memory, o->max_record ? o->max_record : DEFAULT_MAX_RECORD,
	                pages, &pr, err, errlen) != 0)
		goto out;
	rep->pages = pr.pages;
	rep->titles = pr.titles;
	if (gather(&k, path, sizeof path, ir.lines) != 0 ||
	    write_manifests(&k, pages, dp, digest) != 0 || write_zip(&k, tmp, dp, digest) != 0)
		goto out;
	if (fileio_fsync_path(tmp) != 0 || rename(tmp, rep->path) != 0) {
		snprintf(err, errlen, "%s: %s", rep->path, strerror(errno));
		remove(tmp);
		goto out;
	}
	char *slash = strrchr(tmp, '/');
	if (slash != NULL) {
		*slash = '\0';
		fileio_fsync_dir(tmp[0] ? tmp : "/");
	} else {
		fileio_fsync_dir(".");
	}
	if (stat(rep->path, &st) == 0)
		rep->bytes = (uint64_t)st.st_size;
	rc = 0;
out:
	fileio_remove_tree(k.tmpdir);
	for (size_t i = 0; i < k.nres; i++) {
		free(k.res[i].file);
		free(k.res[i].zip_path);
	}
	free(k.res);
	return rc;
}
