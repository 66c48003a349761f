/*
 * lab.c: the lab's plan file (lab.h): parsing, defaults, ownership.
 *
 * Parsing keeps [lab]'s own keys in a defaults entry while reading; when
 * the text ends, each entry gets [lab]'s arguments and model rules in
 * front of its own and [lab]'s generation values where it set none, so
 * [lab] may come anywhere in the file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "crawler/lab/lab.h"
#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/base/fileio.h"

const char *lab_strerror(enum lab_error err)
{
	switch (err) {
	case LAB_OK: return "no error";
	case LAB_ERR_NOMEM: return "out of memory";
	case LAB_ERR_IO: return "input/output error";
	case LAB_ERR_PLAN: return "malformed plan";
	case LAB_ERR_PROCESS: return "a process could not run";
	case LAB_ERR_LOG: return "unusable server log";
	}
	return "unknown error";
}

enum lab_error lab_strv_add(struct lab_strv *sv, const char *s, size_t len)
{
	char **nv = array_grow(sv->v, &sv->cap, sv->n, sizeof *sv->v, 8);
	if (nv == NULL)
		return LAB_ERR_NOMEM;
	sv->v = nv;
	char *c = strndup(s, len);
	if (c == NULL)
		return LAB_ERR_NOMEM;
	sv->v[sv->n++] = c;
	return LAB_OK;
}

void lab_strv_free(struct lab_strv *sv)
{
	ARRAY_FREE_EACH(sv->v, sv->n);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}

static void entry_free(struct lab_entry *e)
{
	free(e->name);
	lab_strv_free(&e->args);
	lab_strv_free(&e->models);
	lab_strv_free(&e->model_files);
}

void lab_plan_free(struct lab_plan *plan)
{
	if (plan == NULL)
		return;
	free(plan->testweb);
	for (size_t i = 0; i < plan->n; i++)
		entry_free(&plan->entries[i]);
	free(plan->entries);
	memset(plan, 0, sizeof *plan);
}

/* The parser's state: where it is, and [lab]'s defaults. */
struct parser {
	struct lab_plan *plan;
	struct lab_entry defaults;
	struct lab_entry *cur; /* &defaults in [lab], NULL before any section */
	char dir[4096];        /* the plan's folder, "" for the current one */
	const char *name;
	unsigned lineno;
	char *err;
	size_t errlen;
};

static enum lab_error fail(struct parser *p, const char *fmt, ...)
{
	int n = snprintf(p->err, p->errlen, "%s:%u: ", p->name, p->lineno);
	if (n >= 0 && (size_t)n < p->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return LAB_ERR_PLAN;
}

static int parse_long(const char *v, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi)
		return -1;
	*out = x;
	return 0;
}

static void web_unset(struct lab_web *w)
{
	w->hosts = w->pages = w->ips = w->seed = -1;
}

static int name_ok(const char *s)
{
	if (*s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strlen(s) > 64)
		return 0;
	for (; *s; s++)
		if (!ascii_is_alnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
			return 0;
	return 1;
}

static enum lab_error section(struct parser *p, char *s)
{
	size_t n = strlen(s);
	if (s[n - 1] != ']')
		return fail(p, "section header without ']'");
	s[n - 1] = '\0';
	char *body = ascii_trim_cstr(s + 1);
	if (strcmp(body, "lab") == 0) {
		p->cur = &p->defaults;
		return LAB_OK;
	}
	if (strncmp(body, "entry", 5) != 0 || (body[5] != ' ' && body[5] != '\t'))
		return fail(p, "unknown section '[%s]' (want [lab] or [entry NAME])", body);
	char *name = ascii_trim_cstr(body + 5);
	if (!name_ok(name))
		return fail(p, "bad entry name '%s' (1-64 of A-Z a-z 0-9 . _ -)", name);
	struct lab_plan *pl = p->plan;
	for (size_t i = 0; i < pl->n; i++)
		if (strcmp(pl->entries[i].name, name) == 0)
			return fail(p, "entry '%s' twice", name);
	struct lab_entry *ne = array_grow(pl->entries, &pl->cap, pl->n, sizeof *ne, 4);
	if (ne == NULL)
		return LAB_ERR_NOMEM;
	pl->entries = ne;
	struct lab_entry *e = &pl->entries[pl->n];
	memset(e, 0, sizeof *e);
	web_unset(&e->web);
	e->judge_delay_ms = -1;
	if ((e->name = strdup(name)) == NULL)
		return LAB_ERR_NOMEM;
	pl->n++;
	p->cur = e;
	return LAB_OK;
}

/* Splits v on blanks into e's crawl arguments. */
static enum lab_error split_args(struct lab_strv *sv, const char *v)
{
	while (*v) {
		while (*v == ' ' || *v == '\t')
			v++;
		size_t n = strcspn(v, " \t");
		if (n > 0 && lab_strv_add(sv, v, n) != LAB_OK)
			return LAB_ERR_NOMEM;
		v += n;
	}
	return LAB_OK;
}

/* v resolved against the plan's folder (unless absolute) into path. */
static enum lab_error plan_path(struct parser *p, const char *v, char *path, size_t cap)
{
	int n = v[0] == '/' || p->dir[0] == '\0' ? snprintf(path, cap, "%s", v)
	                                         : snprintf(path, cap, "%s/%s", p->dir, v);
	if (n < 0 || (size_t)n >= cap)
		return fail(p, "path too long");
	return LAB_OK;
}

static enum lab_error add_model_file(struct parser *p, const char *v)
{
	char path[8192];
	enum lab_error rc = plan_path(p, v, path, sizeof path);
	return rc != LAB_OK ? rc : lab_strv_add(&p->cur->model_files, path, strlen(path));
}

/* SECTION.KEY = VALUE: `--set SECTION.KEY=VALUE`. */
static enum lab_error add_set(struct parser *p, const char *k, const char *v)
{
	char buf[LAB_MAX_LINE + 8];
	snprintf(buf, sizeof buf, "%s=%s", k, v);
	if (lab_strv_add(&p->cur->args, "--set", 5) != LAB_OK ||
	    lab_strv_add(&p->cur->args, buf, strlen(buf)) != LAB_OK)
		return LAB_ERR_NOMEM;
	return LAB_OK;
}

/* The keys only [lab] has. 1 if k was one of them (rc set), else 0. */
static int lab_key(struct parser *p, const char *k, const char *v, enum lab_error *rc)
{
	long x;
	*rc = LAB_OK;
	if (strcmp(k, "repetitions") == 0) {
		if (parse_long(v, 1, LAB_MAX_REPETITIONS, &x) != 0)
			*rc = fail(p, "repetitions: want 1..%d", LAB_MAX_REPETITIONS);
		else
			p->plan->repetitions = (unsigned)x;
	} else if (strcmp(k, "timeout_s") == 0) {
		if (parse_long(v, 1, 86400, &x) != 0)
			*rc = fail(p, "timeout_s: want 1..86400");
		else
			p->plan->timeout_s = (unsigned)x;
	} else if (strcmp(k, "tolerance_ms") == 0) {
		if (parse_long(v, 0, 60000, &x) != 0)
			*rc = fail(p, "tolerance_ms: want 0..60000");
		else
			p->plan->tolerance_ms = (unsigned)x;
	} else if (strcmp(k, "testweb") == 0) {
		char path[8192];
		free(p->plan->testweb);
		p->plan->testweb = NULL;
		*rc = plan_path(p, v, path, sizeof path);
		if (*rc == LAB_OK && (p->plan->testweb = strdup(path)) == NULL)
			*rc = LAB_ERR_NOMEM;
	} else {
		return 0;
	}
	return 1;
}

static enum lab_error key(struct parser *p, char *k, char *v)
{
	struct lab_entry *e = p->cur;
	struct {
		const char *name;
		long *field, lo, hi;
	} web[] = { { "hosts", &e->web.hosts, 1, 100000 },
		    { "pages", &e->web.pages, 1, 100000 },
		    { "ips", &e->web.ips, 1, 250 },
		    { "seed", &e->web.seed, 0, 2147483647L },
		    { "judge_delay_ms", &e->judge_delay_ms, 0, 86400000L } };
	enum lab_error rc;
	if (e == &p->defaults && lab_key(p, k, v, &rc))
		return rc;
	for (size_t i = 0; i < sizeof web / sizeof web[0]; i++)
		if (strcmp(k, web[i].name) == 0)
			return parse_long(v, web[i].lo, web[i].hi, web[i].field) == 0
			               ? LAB_OK
			               : fail(p, "%s: want %ld..%ld", k, web[i].lo, web[i].hi);
	if (strcmp(k, "model") == 0)
		return lab_strv_add(&e->models, v, strlen(v));
	if (strcmp(k, "models") == 0)
		return add_model_file(p, v);
	if (strcmp(k, "crawl") == 0)
		return split_args(&e->args, v);
	if (strchr(k, '.') != NULL && k[0] != '.' && k[strlen(k) - 1] != '.')
		return add_set(p, k, v);
	return fail(p, "unknown key '%s'", k);
}

static enum lab_error line(struct parser *p, char *s)
{
	s = ascii_trim_cstr(s);
	if (*s == '\0' || *s == '#' || *s == ';')
		return LAB_OK;
	if (*s == '[')
		return section(p, s);
	if (p->cur == NULL)
		return fail(p, "key before any [lab] or [entry NAME]");
	char *eq = strchr(s, '=');
	if (eq == NULL)
		return fail(p, "want KEY = VALUE");
	*eq = '\0';
	char *k = ascii_trim_cstr(s), *v = ascii_trim_cstr(eq + 1);
	if (*k == '\0')
		return fail(p, "empty key");
	return key(p, k, v);
}

/* dst = src then dst's own. */
static enum lab_error prepend(struct lab_strv *dst, const struct lab_strv *src)
{
	struct lab_strv m = { 0 };
	enum lab_error rc = LAB_OK;
	for (size_t i = 0; i < src->n && rc == LAB_OK; i++)
		rc = lab_strv_add(&m, src->v[i], strlen(src->v[i]));
	for (size_t i = 0; i < dst->n && rc == LAB_OK; i++)
		rc = lab_strv_add(&m, dst->v[i], strlen(dst->v[i]));
	if (rc != LAB_OK) {
		lab_strv_free(&m);
		return rc;
	}
	lab_strv_free(dst);
	*dst = m;
	return LAB_OK;
}

static enum lab_error finish(struct parser *p)
{
	const struct lab_entry *d = &p->defaults;
	const long web_default[4] = { 8, 20, 4, 1 };
	if (p->plan->n == 0)
		return fail(p, "no [entry NAME] in the plan");
	for (size_t i = 0; i < p->plan->n; i++) {
		struct lab_entry *e = &p->plan->entries[i];
		long *f[4] = { &e->web.hosts, &e->web.pages, &e->web.ips, &e->web.seed };
		const long df[4] = { d->web.hosts, d->web.pages, d->web.ips, d->web.seed };
		for (int j = 0; j < 4; j++)
			if (*f[j] < 0)
				*f[j] = df[j] >= 0 ? df[j] : web_default[j];
		if (e->judge_delay_ms < 0)
			e->judge_delay_ms = d->judge_delay_ms;
		if (prepend(&e->args, &d->args) != LAB_OK ||
		    prepend(&e->models, &d->models) != LAB_OK ||
		    prepend(&e->model_files, &d->model_files) != LAB_OK)
			return LAB_ERR_NOMEM;
	}
	return LAB_OK;
}

enum lab_error lab_plan_parse(struct lab_plan *plan, const char *text, size_t len, const char *name,
                              char *err, size_t errlen)
{
	struct parser p = { .plan = plan, .name = name, .err = err, .errlen = errlen };
	memset(plan, 0, sizeof *plan);
	plan->repetitions = 1;
	plan->timeout_s = 300;
	plan->tolerance_ms = LAB_TOLERANCE_MS;
	web_unset(&p.defaults.web);
	p.defaults.judge_delay_ms = -1;
	const char *slash = strrchr(name, '/');
	if (slash != NULL && (size_t)(slash - name) < sizeof p.dir)
		memcpy(p.dir, name, (size_t)(slash - name) + (slash == name));
	enum lab_error rc = LAB_OK;
	char buf[LAB_MAX_LINE];
	size_t pos = 0;
	while (pos < len && rc == LAB_OK) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		p.lineno++;
		if (n >= sizeof buf || memchr(text + pos, '\0', n) != NULL) {
			rc = fail(&p, n >= sizeof buf ? "line too long" : "NUL byte");
			break;
		}
		memcpy(buf, text + pos, n);
		buf[n] = '\0';
		rc = line(&p, buf);
		pos += n + 1;
	}
	if (rc == LAB_OK)
		rc = finish(&p);
	else if (rc == LAB_ERR_NOMEM)
		snprintf(err, errlen, "%s", lab_strerror(rc));
	entry_free(&p.defaults);
	return rc;
}

enum lab_error lab_plan_load(struct lab_plan *plan, const char *path, char *err, size_t errlen)
{
	size_t len;
	memset(plan, 0, sizeof *plan);
	char *text = fileio_read_path(path, 1u << 20, &len);
	if (text == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return LAB_ERR_IO;
	}
	enum lab_error rc = lab_plan_parse(plan, text, len, path, err, errlen);
	free(text);
	return rc;
}
