/* history.c: a crawl's history lines (see history.h). */
#include "crawler/store/history.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "crawler/store/cdxj.h"
#include "crawler/store/warc_reader.h"
#include "frontier/base/header_field.h"

#define PROFILE_IDENTICAL "/revisit/identical-payload-digest"
#define PROFILE_NOT_MODIFIED "/revisit/server-not-modified"

uint64_t history_sig(const char *url, size_t len)
{
	return XXH3_64bits(url, len);
}

bool history_wanted(const char *url)
{
	const char *p = strstr(url, "://");
	if (p == NULL)
		return false;
	p = strchr(p + 3, '/');
	return p == NULL || strcmp(p, "/robots.txt") != 0;
}

/* 1 if s[0..n) can be a field: no tab, CR or LF, not empty. */
static int field_ok(const char *s)
{
	return s != NULL && s[0] != '\0' && strpbrk(s, "\t\r\n") == NULL;
}

static int add(struct cdxj_text *t, const char *s)
{
	return cdxj_text_add(t, s, strlen(s)) != 0 || cdxj_text_add(t, "\t", 1) != 0 ? -1 : 0;
}

/* A validator as written: '-' when absent or unfit. */
static const char *validator_field(const char *v)
{
	if (v == NULL || v[0] == '\0' || strlen(v) > HISTORY_VALIDATOR_MAX)
		return "-";
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return "-";
	return strcmp(v, "-") == 0 || strcmp(v, "=") == 0 ? "-" : v;
}

int history_line(struct cdxj_text *t, const struct history_entry *e)
{
	char num[4][24];
	const char *strs[] = { e->date,     e->file,       e->ref_id,  e->ref_date,
		               e->ref_file, e->ref_digest, e->ref_uri, e->url };
	for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
		if (!field_ok(strs[i]))
			return 1;
	size_t start = t->len;
	snprintf(num[0], sizeof num[0], "%016" PRIx64, e->sig);
	snprintf(num[1], sizeof num[1], "%" PRIu64, e->offset);
	snprintf(num[2], sizeof num[2], "%" PRIu64, e->length);
	snprintf(num[3], sizeof num[3], "%" PRIu32, e->depth);
	char roff[24];
	snprintf(roff, sizeof roff, "%" PRIu64, e->ref_offset);
	const char *fields[HISTORY_FIELDS] = {
		num[0],
		e->date,
		e->file,
		num[1],
		num[2],
		e->has_depth ? num[3] : "-",
		validator_field(e->etag),
		validator_field(e->last_modified),
		e->ref_id,
		strcmp(e->ref_date, e->date) == 0 ? "=" : e->ref_date,
		e->ref_digest,
		strcmp(e->ref_file, e->file) == 0 ? "=" : e->ref_file,
		roff,
		strcmp(e->ref_uri, e->url) == 0 ? "=" : e->ref_uri,
		e->url,
	};
	for (size_t i = 0; i < HISTORY_FIELDS; i++)
		if (add(t, fields[i]) != 0) {
			t->len = start;
			return -1;
		}
	t->p[t->len - 1] = '\n';
	return 0;
}

/* A decimal number filling the whole field. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (*s == '\0' || strlen(s) > 19)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static int parse_sig(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (strlen(s) != 16)
		return -1;
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9'   ? *s - '0'
		        : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
		                                 : -1;
		if (d < 0)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

int history_parse(char *line, size_t len, struct history_entry *e)
{
	char *f[HISTORY_FIELDS];
	size_t n = 0;
	char *rest = line;
	uint64_t depth;
	if (memchr(line, '\0', len) != NULL || memchr(line, '\n', len) != NULL)
		return -1;
	line[len] = '\0';
	while (rest != NULL && n < HISTORY_FIELDS)
		f[n++] = strsep(&rest, "\t");
	if (n != HISTORY_FIELDS || rest != NULL) /* too few fields, or too many */
		return -1;
	memset(e, 0, sizeof *e);
	e->date = f[1];
	e->file = f[2];
	e->ref_id = f[8];
	e->ref_digest = f[10];
	e->url = f[14];
	if (parse_sig(f[0], &e->sig) != 0 || parse_u64(f[3], &e->offset) != 0 ||
	    parse_u64(f[4], &e->length) != 0 || parse_u64(f[12], &e->ref_offset) != 0)
		return -1;
	e->has_depth = strcmp(f[5], "-") != 0;
	if (e->has_depth && (parse_u64(f[5], &depth) != 0 || depth > UINT32_MAX))
		return -1;
	e->depth = e->has_depth ? (uint32_t)depth : 0;
	e->etag = strcmp(f[6], "-") == 0 ? NULL : f[6];
	e->last_modified = strcmp(f[7], "-") == 0 ? NULL : f[7];
	e->ref_date = strcmp(f[9], "=") == 0 ? e->date : f[9];
	e->ref_file = strcmp(f[11], "=") == 0 ? e->file : f[11];
	e->ref_uri = strcmp(f[13], "=") == 0 ? e->url : f[13];
	for (size_t i = 1; i < HISTORY_FIELDS; i++)
		if (f[i][0] == '\0')
			return -1;
	return e->sig == history_sig(e->url, strlen(e->url)) ? 0 : -1;
}

/* The first value of field name in the block, trimmed, into out: "" when
 * absent or unfit to keep. */
static void one_validator(const char *block, size_t len, const char *name,
                          char out[HISTORY_VALIDATOR_MAX + 1])
{
	const char *at = block, *v;
	size_t n;
	out[0] = '\0';
	if (block == NULL || !header_field_next(&at, block + len, name, &v, &n) ||
	    n > HISTORY_VALIDATOR_MAX)
		return;
	memcpy(out, v, n);
	out[n] = '\0';
	if (strcmp(validator_field(out), "-") == 0)
		out[0] = '\0';
}

void history_validators(const char *block, size_t len, char etag[HISTORY_VALIDATOR_MAX + 1],
                        char lm[HISTORY_VALIDATOR_MAX + 1])
{
	one_validator(block, len, "ETag", etag);
	one_validator(block, len, "Last-Modified", lm);
}

int history_container(const char *file, uint64_t offset, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s%s#%" PRIu64, HISTORY_CONTAINER_SCHEME, file, offset);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int history_container_parse(const char *value, char *file, size_t cap, uint64_t *offset)
{
	size_t pl = strlen(HISTORY_CONTAINER_SCHEME);
	const char *hash = value ? strrchr(value, '#') : NULL;
	if (hash == NULL || strncmp(value, HISTORY_CONTAINER_SCHEME, pl) != 0 ||
	    hash == value + pl || (size_t)(hash - value - pl) >= cap || parse_u64(hash + 1, offset))
		return -1;
	memcpy(file, value + pl, (size_t)(hash - value - pl));
	file[hash - value - pl] = '\0';
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = s ? strlen(s) : 0, t = strlen(tail);
	return n >= t && strcmp(s + n - t, tail) == 0;
}

int history_of_record(struct cdxj_text *t, const struct warc_record *rec, const char *file)
{
	char etag[HISTORY_VALIDATOR_MAX + 1], lm[HISTORY_VALIDATOR_MAX + 1], ref_file[4096];
	struct history_entry e = {
		.date = rec->date,
		.file = file,
		.offset = rec->offset,
		.length = rec->length,
		.url = rec->target_uri,
		.etag = etag,
		.last_modified = lm,
		.ref_digest = rec->payload_digest,
	};
	if (rec->type == NULL || rec->target_uri == NULL || rec->payload_digest == NULL ||
	    !history_wanted(rec->target_uri))
		return 1;
	if (strcmp(rec->type, "response") == 0 && rec->http_status == 200) {
		e.ref_id = rec->record_id;
		e.ref_date = rec->date;
		e.ref_file = file;
		e.ref_offset = rec->offset;
		e.ref_uri = rec->target_uri;
	} else if (strcmp(rec->type, "revisit") == 0 &&
	           ((ends_with(rec->profile, PROFILE_IDENTICAL) && rec->http_status == 200) ||
	            (ends_with(rec->profile, PROFILE_NOT_MODIFIED) && rec->http_status == 304)) &&
	           history_container_parse(rec->refers_to_container, ref_file, sizeof ref_file,
	                                   &e.ref_offset) == 0) {
		e.ref_id = rec->refers_to;
		e.ref_date = rec->refers_to_date;
		e.ref_file = ref_file;
		e.ref_uri = rec->refers_to_target_uri ? rec->refers_to_target_uri : rec->target_uri;
	} else {
		return 1;
	}
	history_validators(rec->http_headers, rec->http_headers ? rec->http_headers_len : 0, etag,
	                   lm);
	e.sig = history_sig(e.url, strlen(e.url));
	return history_line(t, &e);
}
