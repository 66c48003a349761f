/* crawl_log.c: tab-separated crawl log lines (see crawl_log.h). */
#include "crawler/store/crawl_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frontier/base/ascii.h"
#include "frontier/base/clock.h"

/* Lines are appended to an own buffer and written with write(2): a write
 * that fails (a full disk) leaves the bytes not yet written in the buffer,
 * so the next flush goes on from exactly there; nothing accepted is lost
 * and the file only ever gets whole lines, in order (stdio would keep no
 * such promise after an error). */
#define LOG_BUF (64u * 1024u)

/* The longest line: its text fields at their caps, the timestamp (40), the
 * numbers (5 of 20), the flags with a focus score and 13 separators. The
 * buffer takes any line whole. */
#define LINE_BOUND                                                                                 \
	(3 * CRAWL_LOG_URL_MAX + 3 * CRAWL_LOG_TEXT_MAX + 40 + 5 * 20 + CRAWL_LOG_FLAGS_MAX +      \
	 CRAWL_LOG_FOCUS_MAX + 13)
_Static_assert(LINE_BOUND <= CRAWL_LOG_LINE_MAX, "a crawl.log line can pass the readers' limit");
_Static_assert(CRAWL_LOG_LINE_MAX <= LOG_BUF, "a crawl.log line can pass the buffer");

struct crawl_log {
	int fd;
	int is_stdout;
	size_t len; /* bytes in buf not yet written */
	char buf[LOG_BUF];
};

/* Writes out the buffer; on error keeps the unwritten rest at its front. */
static enum crawl_log_error drain(struct crawl_log *log)
{
	size_t done = 0;
	enum crawl_log_error rc = CRAWL_LOG_OK;
	while (done < log->len) {
		ssize_t k = write(log->fd, log->buf + done, log->len - done);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			rc = CRAWL_LOG_ERR_IO;
			break;
		}
		done += (size_t)k;
	}
	int e = errno;
	memmove(log->buf, log->buf + done, log->len - done);
	log->len -= done;
	errno = e;
	return rc;
}

static const char header_line[] =
        "#timestamp\tstatus\tbytes\turl\tvia\tdepth\tcontent_type\tduration_ms"
        "\tip\terror\tredirect\tflags\twait_ms\n";

const char *crawl_log_strerror(enum crawl_log_error err)
{
	static const char *const text[] = { [CRAWL_LOG_OK] = "ok",
		                            [CRAWL_LOG_ERR_NOMEM] = "out of memory",
		                            [CRAWL_LOG_ERR_INVALID] = "invalid argument",
		                            [CRAWL_LOG_ERR_IO] = "i/o error" };
	if ((size_t)err < sizeof text / sizeof text[0])
		return text[err];
	return "unknown error";
}

/* Appends to buf at *pos within cap, counting needed length in *pos. */
static void put(char *buf, size_t cap, size_t *pos, const char *s, size_t n)
{
	if (*pos < cap) {
		size_t room = cap - *pos;
		memcpy(buf + *pos, s, n < room ? n : room);
	}
	*pos += n;
}

/* Bytes of a byte's escape: 1 (as it is), 2 (\\, \t, \n, \r) or 4 (\xNN). */
static size_t escaped_size(unsigned char c)
{
	if (c >= 0x20 && c != 0x7f && c != '\\')
		return 1;
	return c == '\\' || c == '\t' || c == '\n' || c == '\r' ? 2 : 4;
}

/* A text field, escaped, in at most max bytes: a longer one is cut (never
 * inside an escape or a UTF-8 sequence) and ends with "...". */
static void put_field(char *buf, size_t cap, size_t *pos, const char *s, size_t max)
{
	if (s == NULL || *s == '\0') {
		put(buf, cap, pos, "-", 1);
		return;
	}
	/* backslash, tab, newline and return as \\, \t, \n, \r; other controls as \xNN */
	static const char special[] = "\\\t\n\r", letter[] = "\\tnr";
	const unsigned char *p = (const unsigned char *)s, *end;
	size_t out = 0;
	for (end = p; *end != '\0' && out + escaped_size(*end) <= max; end++)
		out += escaped_size(*end);
	bool cut = *end != '\0';
	if (cut) { /* room for the mark, and the cut on a character's first byte */
		while (end > p && out + 3 > max)
			out -= escaped_size(*--end);
		while (end > p && (*end & 0xc0) == 0x80)
			end--;
	}
	while (p < end) {
		/* a run of bytes that go out as they are, in one copy */
		const unsigned char *q = p;
		while (q < end && escaped_size(*q) == 1)
			q++;
		if (q > p) {
			put(buf, cap, pos, (const char *)p, (size_t)(q - p));
			p = q;
			continue;
		}
		char esc[5];
		const char *sp = strchr(special, *p);
		if (sp) {
			esc[0] = '\\';
			esc[1] = letter[sp - special];
			put(buf, cap, pos, esc, 2);
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			put(buf, cap, pos, esc, 4);
		}
		p++;
	}
	if (cut)
		put(buf, cap, pos, "...", 3);
}

/* A number column: signed (kind 'd') or unsigned ('u'), as %lld / %llu. */
static void put_num(char *buf, size_t cap, size_t *pos, char kind, long long v)
{
	char tmp[24];
	char *end = tmp + sizeof(tmp);
	bool neg = kind == 'd' && v < 0;
	unsigned long long mag = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	char *p = ascii_decimal_before(end, mag, 1);
	if (neg)
		*--p = '-';
	put(buf, cap, pos, p, (size_t)(end - p));
}

size_t crawl_log_format(const struct crawl_log_entry *e, char *buf, size_t cap)
{
	size_t pos = 0;
	char ts[WALL_CLOCK_TEXT_MAX];
	put(buf, cap, &pos, ts, wall_clock_text(e->timestamp_unix_ms, ts));
	/* the columns after the timestamp, in order */
	const struct {
		char kind; /* a number: 'd' signed, 'u' unsigned; 0: a text field */
		long long num;
		const char *text;
		size_t max; /* a text field's cap */
	} cols[] = {
		{ 'd', e->status, NULL, 0 },
		{ 'u', (long long)e->bytes, NULL, 0 },
		{ 0, 0, e->url, CRAWL_LOG_URL_MAX },
		{ 0, 0, e->via, CRAWL_LOG_URL_MAX },
		{ 'd', e->depth, NULL, 0 },
		{ 0, 0, e->content_type, CRAWL_LOG_TEXT_MAX },
		{ 'u', (long long)e->duration_ms, NULL, 0 },
		{ 0, 0, e->ip, CRAWL_LOG_TEXT_MAX },
		{ 0, 0, e->error, CRAWL_LOG_TEXT_MAX },
		{ 0, 0, e->redirect, CRAWL_LOG_URL_MAX },
	};
	put(buf, cap, &pos, "\t", 1);
	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
		if (cols[i].kind)
			put_num(buf, cap, &pos, cols[i].kind, cols[i].num);
		else
			put_field(buf, cap, &pos, cols[i].text, cols[i].max);
		put(buf, cap, &pos, "\t", 1);
	}
	char flags[CRAWL_LOG_FLAGS_MAX];
	size_t fl = crawl_log_flags_text(e->flags, flags, sizeof flags);
	if (fl)
		put(buf, cap, &pos, flags, fl);
	if (e->has_focus) {
		/* focus=I.FFFF: the score in FOCUS_SCORE_ONE units, 4 decimals */
		put(buf, cap, &pos, fl ? ",focus=" : "focus=", fl ? 7 : 6);
		put_num(buf, cap, &pos, 'u', e->focus / 10000);
		char frac[5];
		for (uint32_t i = 0, v = e->focus % 10000; i < 4; i++, v /= 10)
			frac[4 - i] = (char)('0' + v % 10);
		frac[0] = '.';
		put(buf, cap, &pos, frac, 5);
	} else if (!fl) {
		put(buf, cap, &pos, "-", 1);
	}
	put(buf, cap, &pos, "\t", 1);
	put_num(buf, cap, &pos, 'u', (long long)e->wait_ms);
	put(buf, cap, &pos, "\n", 1);
	if (cap > 0)
		buf[pos < cap ? pos : cap - 1] = '\0';
	return pos;
}

static const struct {
	unsigned bit;
	const char *name;
} FLAG_NAMES[] = {
	{ CRAWL_LOG_TRUNCATED, "truncated" }, { CRAWL_LOG_REDIRECT, "redirect" },
	{ CRAWL_LOG_NEAR_DUP, "near-dup" },   { CRAWL_LOG_REVISIT, "revisit" },
	{ CRAWL_LOG_ROBOTS, "robots" },       { CRAWL_LOG_EMBED, "embed" },
	{ CRAWL_LOG_REQUEUED, "requeued" },   { CRAWL_LOG_RECOVERED, "recovered" },
};

int crawl_log_focus_of(const char *s, size_t len, uint32_t *score)
{
	for (size_t i = 0; i + 6 <= len; i++) {
		if ((i > 0 && s[i - 1] != ',') || memcmp(s + i, "focus=", 6) != 0)
			continue;
		uint64_t v = 0;
		size_t j = i + 6, frac = 0;
		int dot = 0;
		for (; j < len && s[j] != ','; j++) {
			if (s[j] == '.' && !dot) {
				dot = 1;
			} else if (s[j] >= '0' && s[j] <= '9' && frac < 4 && v < UINT32_MAX) {
				v = v * 10 + (uint64_t)(s[j] - '0');
				frac += dot;
			} else {
				return 0;
			}
		}
		for (; frac < 4; frac++)
			v *= 10;
		if (j == i + 6 || v >= UINT32_MAX)
			return 0;
		*score = (uint32_t)v;
		return 1;
	}
	return 0;
}

size_t crawl_log_flags_text(unsigned flags, char *buf, size_t cap)
{
	size_t pos = 0;
	for (size_t i = 0; i < sizeof FLAG_NAMES / sizeof FLAG_NAMES[0]; i++) {
		if (!(flags & FLAG_NAMES[i].bit))
			continue;
		if (pos)
			put(buf, cap, &pos, ",", 1);
		put(buf, cap, &pos, FLAG_NAMES[i].name, strlen(FLAG_NAMES[i].name));
	}
	if (cap > 0)
		buf[pos < cap ? pos : cap - 1] = '\0';
	return pos;
}

unsigned crawl_log_flags_parse(const char *s, size_t len)
{
	unsigned flags = 0;
	for (size_t i = 0; i < sizeof FLAG_NAMES / sizeof FLAG_NAMES[0]; i++)
		if (crawl_log_has_flag(s, len, FLAG_NAMES[i].name))
			flags |= FLAG_NAMES[i].bit;
	return flags;
}

enum crawl_log_error crawl_log_open(const char *path, struct crawl_log **out)
{
	enum crawl_log_error rc = CRAWL_LOG_OK;
	struct crawl_log *log = NULL;
	struct stat st;

	if (out == NULL || path == NULL || *path == '\0')
		return CRAWL_LOG_ERR_INVALID;
	*out = NULL;
	log = calloc(1, sizeof(*log));
	if (log == NULL) {
		rc = CRAWL_LOG_ERR_NOMEM;
		goto out;
	}
	if (strcmp(path, "-") == 0) {
		log->fd = STDOUT_FILENO;
		log->is_stdout = 1;
	} else {
		log->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (log->fd < 0) {
			rc = CRAWL_LOG_ERR_IO;
			goto out;
		}
	}
	if (fstat(log->fd, &st) == 0 && (!S_ISREG(st.st_mode) || st.st_size == 0)) {
		memcpy(log->buf, header_line, sizeof header_line - 1);
		log->len = sizeof header_line - 1;
	}
	*out = log;
	log = NULL;
out:
	if (log != NULL) {
		if (log->fd >= 0 && !log->is_stdout)
			close(log->fd);
		free(log);
	}
	return rc;
}

enum crawl_log_error crawl_log_write(struct crawl_log *log, const struct crawl_log_entry *e)
{
	char stack[2048];
	char *buf = stack;
	enum crawl_log_error rc = CRAWL_LOG_OK;

	if (log == NULL || e == NULL)
		return CRAWL_LOG_ERR_INVALID;
	size_t need = crawl_log_format(e, buf, sizeof(stack));
	if (need >= sizeof(stack)) {
		buf = malloc(need + 1);
		if (buf == NULL)
			return CRAWL_LOG_ERR_NOMEM;
		crawl_log_format(e, buf, need + 1);
	}
	/* Room first: a line is taken whole or not at all (the caller retries
	 * it), never half. A line fits the buffer (LINE_BOUND). */
	if (log->len + need > LOG_BUF && log->len > 0)
		rc = drain(log);
	if (rc == CRAWL_LOG_OK) {
		memcpy(log->buf + log->len, buf, need);
		log->len += need;
	}
	int saved_errno = errno;
	if (buf != stack)
		free(buf);
	errno = saved_errno;
	return rc;
}

enum crawl_log_error crawl_log_flush(struct crawl_log *log, int sync)
{
	if (log == NULL)
		return CRAWL_LOG_ERR_INVALID;
	if (drain(log) != CRAWL_LOG_OK)
		return CRAWL_LOG_ERR_IO;
	if (sync && !log->is_stdout && fsync(log->fd) != 0)
		return CRAWL_LOG_ERR_IO;
	return CRAWL_LOG_OK;
}

uint64_t crawl_log_size(struct crawl_log *log)
{
	struct stat st;
	if (log == NULL || log->is_stdout || fstat(log->fd, &st) != 0)
		return 0;
	return (uint64_t)st.st_size + log->len;
}

enum crawl_log_error crawl_log_close(struct crawl_log *log)
{
	enum crawl_log_error rc = CRAWL_LOG_OK;
	if (log == NULL)
		return CRAWL_LOG_OK;
	if (drain(log) != CRAWL_LOG_OK)
		rc = CRAWL_LOG_ERR_IO;
	if (!log->is_stdout && close(log->fd) != 0)
		rc = CRAWL_LOG_ERR_IO;
	free(log);
	return rc;
}

/* ---- reading lines back ---- */

int crawl_log_split(const char *line, size_t len, const char **f, size_t *fl)
{
	int nf = 0;
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && line[i] != '\t')
			continue;
		if (nf == CRAWL_LOG_FIELDS)
			return -1;
		f[nf] = line + start;
		fl[nf++] = i - start;
		start = i + 1;
	}
	return nf;
}

int crawl_log_parse_i64(const char *s, size_t len, int64_t *out)
{
	int neg = 0;
	uint64_t v = 0;
	size_t i = 0;
	if (len > 0 && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == len || len - i > 18)
		return -1;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

char *crawl_log_unescape(const char *s, size_t len, char *out)
{
	if (len == 1 && s[0] == '-') {
		*out = '\0';
		return out + 1;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\0')
			return NULL;
		if (s[i] != '\\') {
			*out++ = s[i];
			continue;
		}
		if (++i == len)
			return NULL;
		switch (s[i]) {
		case '\\': *out++ = '\\'; break;
		case 't': *out++ = '\t'; break;
		case 'n': *out++ = '\n'; break;
		case 'r': *out++ = '\r'; break;
		case 'x': {
			int hi = i + 2 < len ? ascii_hex_value((unsigned char)s[i + 1]) : -1;
			int lo = hi >= 0 ? ascii_hex_value((unsigned char)s[i + 2]) : -1;
			if (lo < 0 || (hi == 0 && lo == 0))
				return NULL;
			*out++ = (char)(hi * 16 + lo);
			i += 2;
			break;
		}
		default: return NULL;
		}
	}
	*out = '\0';
	return out + 1;
}

int crawl_log_has_flag(const char *s, size_t len, const char *name)
{
	size_t n = strlen(name);
	size_t i = 0;
	while (i < len) {
		size_t j = i;
		while (j < len && s[j] != ',')
			j++;
		if (j - i == n && memcmp(s + i, name, n) == 0)
			return 1;
		i = j + 1;
	}
	return 0;
}
