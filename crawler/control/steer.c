/*
 * steer.c: steering a running crawl (see steer.h).
 */
#include "crawler/control/steer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontier/base/array.h"
#include "frontier/base/ascii.h"
#include "frontier/base/bqueue.h"
#include "frontier/base/clock.h"
#include "frontier/base/fileio.h"
#include "frontier/frontier.h"
#include "frontier/url.h"
#include "frontier/url_rules_live.h"
#include "politeness/politeness.h"

enum steer_kind { STEER_SEEDS, STEER_RULES, STEER_PAUSE, STEER_RESUME, STEER_DELAY };

/* A checked action: seeds as crawl keys a line, rules as given, delays as
 * "HOST MS" lines. */
struct action {
	enum steer_kind kind;
	size_t len;
	char source[160];
	char text[];
};

struct fetch_note {
	uint64_t at_us;
	uint32_t host;
	int status;
	char url[STEER_URL_MAX];
};

struct steer {
	struct steer_parts p;
	char dir[4200]; /* action/ */
	char rules_path[4200];
	int log_fd;       /* steering.log, O_APPEND */
	struct bqueue *q; /* struct action *, thread -> loop */
	pthread_t thread;
	int thread_started;
	pthread_mutex_t mu; /* guards stop, for the thread's timed wait */
	pthread_cond_t cv;
	int stop;
	atomic_size_t pending_bytes; /* read by the thread: files wait while full */
	char *pending;               /* seeds' keys, '\n'-ended, from pending_off */
	size_t pending_len, pending_cap, pending_off;
	int paused, replaying;
	uint64_t shared_next; /* steer_shared_next */
	struct fetch_note ring[STEER_RING];
	size_t ring_next;
	struct steer_stats st;              /* the loop's counts */
	atomic_uint_fast64_t files_refused; /* the thread's */
};

/* ---- checking (either thread) ---- */

/* The next line of text[len] from *off, without its '\n' and the blanks
 * around it; NULL at the end. */
static const char *next_line(const char *text, size_t len, size_t *off, size_t *n)
{
	if (*off >= len)
		return NULL;
	const char *s = text + *off, *e = memchr(s, '\n', len - *off);
	size_t l = e ? (size_t)(e - s) : len - *off;
	*off += l + (e != NULL);
	ascii_trim(&s, &l);
	*n = l;
	return s;
}

/* "HOST MS" (or host and ms apart) checked: a host name as URLs carry it,
 * ms within STEER_DELAY_MAX_MS; 0 or -1 with the reason in err. */
static int check_delay(const char *host, size_t hl, const char *ms, char *err, size_t errlen)
{
	char *end;
	if (hl == 0 || hl > 255 || strcspn(host, "/ \t?#@") < hl) {
		snprintf(err, errlen, "bad host '%.*s'", (int)(hl > 255 ? 255 : hl), host);
		return -1;
	}
	errno = 0;
	unsigned long v = strtoul(ms, &end, 10);
	if (end == ms || (*end && *end != '\n' && *end != '\r') || errno || *ms == '-' ||
	    v > STEER_DELAY_MAX_MS) {
		snprintf(err, errlen, "bad delay '%.20s': milliseconds, 0 to %u", ms,
		         STEER_DELAY_MAX_MS);
		return -1;
	}
	return 0;
}

/* Seeds: each non-blank, non-comment line an http(s) URL, made its crawl
 * key into *out ('\n'-ended lines; malloc'd). 0, or -1 (err names the
 * line; *out NULL). */
static int check_seeds(const struct steer *s, const char *text, size_t len, const char *source,
                       char **out, size_t *out_len, char *err, size_t errlen)
{
	struct url *u = url_create(s->p.url);
	char *keys = NULL;
	size_t n = 0, cap = 0, off = 0, l, line = 0, seeds = 0;
	const char *ln;
	int rc = -1;
	if (!u) {
		snprintf(err, errlen, "%s: out of memory", source);
		goto out;
	}
	while ((ln = next_line(text, len, &off, &l)) != NULL) {
		line++;
		if (l == 0 || *ln == '#')
			continue;
		char *room = array_room(keys, &cap, n + 3 * l + 64, 4096); /* %XX: 3x */
		if (!room) {
			snprintf(err, errlen, "%s:%zu: out of memory", source, line);
			goto out;
		}
		keys = room;
		size_t klen;
		enum url_error ue = url_normalize(u, NULL, ln, l, keys + n, cap - n - 1, &klen);
		if (ue != URL_OK) {
			snprintf(err, errlen, "%s:%zu: bad seed '%.*s': %s", source, line,
			         (int)(l < 200 ? l : 200), ln, url_strerror(ue));
			goto out;
		}
		n += klen;
		keys[n++] = '\n';
		seeds++;
	}
	if (!seeds) {
		snprintf(err, errlen, "%s: no seed URL", source);
		goto out;
	}
	rc = 0;
out:
	url_destroy(u);
	if (rc != 0) {
		free(keys);
		keys = NULL;
		n = 0;
	}
	*out = keys;
	*out_len = n;
	return rc;
}

/* The action of a request's or file's text, checked whole: NULL with a
 * message in err (naming source and the line) when anything is wrong. */
static struct action *make_action(const struct steer *s, enum steer_kind kind, const char *text,
                                  size_t len, const char *source, char *err, size_t errlen)
{
	char *keys = NULL;
	if (kind == STEER_SEEDS) {
		if (check_seeds(s, text, len, source, &keys, &len, err, errlen) != 0)
			return NULL;
		text = keys;
	} else if (kind == STEER_RULES) {
		struct url_rules *r = NULL;
		if (!s->p.rules) {
			snprintf(err, errlen, "%s: this crawl takes no rules", source);
			return NULL;
		}
		if (url_rules_live_parse(text, len, source, s->p.url, &r, err, errlen) !=
		    URL_RULES_OK)
			return NULL;
		url_rules_destroy(r);
	} else if (kind == STEER_DELAY) {
		size_t off = 0, l, line = 0, n = 0;
		const char *ln;
		char one[300];
		while ((ln = next_line(text, len, &off, &l)) != NULL) {
			line++;
			if (l == 0 || *ln == '#')
				continue;
			size_t hl = strcspn(ln, " \t");
			snprintf(one, sizeof one, "%.*s", (int)(l < 299 ? l : 299), ln);
			const char *ms = one + (hl < strlen(one) ? hl : strlen(one));
			ms += strspn(ms, " \t");
			char why[300];
			if (l >= 299 || check_delay(one, hl, ms, why, sizeof why) != 0) {
				snprintf(err, errlen, "%s:%zu: %s (a line is HOST MS)", source,
				         line, l >= 299 ? "line too long" : why);
				return NULL;
			}
			n++;
		}
		if (!n) {
			snprintf(err, errlen, "%s: no HOST MS line", source);
			return NULL;
		}
	}
	if (kind == STEER_PAUSE || kind == STEER_RESUME)
		len = 0; /* a body says nothing */
	struct action *a = malloc(sizeof *a + len + 1);
	if (!a) {
		snprintf(err, errlen, "%s: out of memory", source);
		free(keys);
		return NULL;
	}
	a->kind = kind;
	a->len = len;
	snprintf(a->source, sizeof a->source, "%s", source);
	if (len)
		memcpy(a->text, text, len);
	a->text[len] = '\0';
	free(keys);
	return a;
}

/* ---- applying (loop thread) ---- */

/* An applied action's line for steering.log (not while replaying it). */
static void log_line(struct steer *s, const char *line, size_t len)
{
	if (s->replaying || s->log_fd < 0)
		return;
	if (fileio_write_all(s->log_fd, line, len) != 0)
		fprintf(stderr, "\ncrawler crawl: steering.log: %s\n", strerror(errno));
}

/* The frontier key of host under scheme ("http://"), lowercased. */
static size_t host_key(char *key, size_t cap, const char *scheme, const char *host, size_t hl)
{
	int kl = snprintf(key, cap, "%s%.*s", scheme, (int)hl, host);
	size_t n = kl < 0 ? 0 : (size_t)kl < cap ? (size_t)kl : cap - 1;
	for (size_t j = 0; j < n; j++)
		key[j] = (char)ascii_to_lower((unsigned char)key[j]);
	return n;
}

/* A host's ids under http and https (create: the http one when neither
 * is known); the number found. */
static int host_ids(struct steer *s, const char *host, size_t hl, int create, uint32_t ids[2])
{
	static const char *const schemes[] = { "http://", "https://" };
	char key[300];
	int n = 0;
	for (int i = 0; i < 2; i++) {
		size_t kl = host_key(key, sizeof key, schemes[i], host, hl);
		if (frontier_host_get(s->p.frontier, key, kl, 0, &ids[n]) == FRONTIER_OK)
			n++;
	}
	if (!n && create &&
	    frontier_host_get(s->p.frontier, key, host_key(key, sizeof key, schemes[0], host, hl),
	                      1, &ids[0]) == FRONTIER_OK)
		n = 1;
	return n;
}

static int apply_delays(struct steer *s, const struct action *a, char *err, size_t errlen)
{
	size_t off = 0, l;
	const char *ln;
	while ((ln = next_line(a->text, a->len, &off, &l)) != NULL) {
		if (l == 0 || *ln == '#')
			continue;
		size_t hl = strcspn(ln, " \t");
		unsigned ms = (unsigned)strtoul(ln + hl, NULL, 10);
		uint32_t ids[2];
		int n = host_ids(s, ln, hl, 1, ids);
		for (int i = 0; i < n; i++)
			if (politeness_host_set_delay(s->p.pol, ids[i], ms) != POLITENESS_OK)
				n = -1;
		if (n <= 0) {
			snprintf(err, errlen, "%s: host '%.*s': out of memory", a->source, (int)hl,
			         ln);
			return -1;
		}
		char line[300];
		int ll = snprintf(line, sizeof line, "delay %.*s %u\n", (int)hl, ln, ms);
		log_line(s, line, (size_t)ll);
	}
	return 0;
}

static int apply_seeds(struct steer *s, const struct action *a, char *err, size_t errlen)
{
	if (s->pending_off && s->pending_off == s->pending_len)
		s->pending_off = s->pending_len = 0;
	char *room = array_room(s->pending, &s->pending_cap, s->pending_len + a->len, 4096);
	if (!room) {
		snprintf(err, errlen, "%s: out of memory", a->source);
		return -1;
	}
	s->pending = room;
	memcpy(s->pending + s->pending_len, a->text, a->len);
	s->pending_len += a->len;
	atomic_store(&s->pending_bytes, s->pending_len - s->pending_off);
	size_t off = 0, l, n = 0;
	const char *ln;
	char *lines = malloc(a->len + a->len / 2 + 16); /* "seed " on each key of 10+ bytes */
	while ((ln = next_line(a->text, a->len, &off, &l)) != NULL) {
		s->st.seeds++;
		if (lines) {
			memcpy(lines + n, "seed ", 5);
			memcpy(lines + n + 5, ln, l);
			lines[n + 5 + l] = '\n';
			n += l + 6;
		}
	}
	if (lines)
		log_line(s, lines, n);
	else
		fprintf(stderr, "\ncrawler crawl: steering.log: out of memory: seeds not kept\n");
	free(lines);
	return 0;
}

/* Rules added at the top, and kept in rules.txt. 0, or -1 with err. */
static int apply_rules(struct steer *s, const struct action *a, char *err, size_t errlen)
{
	size_t added;
	if (url_rules_live_add(s->p.rules, a->text, a->len, a->source, &added, err, errlen) !=
	    URL_RULES_OK)
		return -1;
	if (url_rules_live_write(s->p.rules, s->rules_path) != 0)
		fprintf(stderr, "\ncrawler crawl: cannot write %s: %s\n", s->rules_path,
		        strerror(errno));
	return 0;
}

/* Applies a checked action; 0, or -1 with err. */
static int apply(struct steer *s, const struct action *a, char *err, size_t errlen)
{
	int rc = 0;
	switch (a->kind) {
	case STEER_SEEDS: rc = apply_seeds(s, a, err, errlen); break;
	case STEER_RULES:
		if (apply_rules(s, a, err, errlen) != 0)
			return -1;
		if (s->p.share && !s->replaying)
			s->p.share(s->p.ctx, a->text, a->len, a->source);
		break;
	case STEER_PAUSE:
	case STEER_RESUME:
		s->paused = a->kind == STEER_PAUSE;
		log_line(s, a->kind == STEER_PAUSE ? "pause\n" : "resume\n",
		         a->kind == STEER_PAUSE ? 6 : 7);
		break;
	case STEER_DELAY: rc = apply_delays(s, a, err, errlen); break;
	}
	if (rc == 0)
		s->st.applied++;
	if (!s->replaying)
		s->p.wake(s->p.ctx);
	return rc;
}

void steer_pump(struct steer *s)
{
	void *item;
	char err[1200];
	if (!s)
		return;
	while (bqueue_try_pop(s->q, &item) == BQUEUE_OK) {
		if (apply(s, item, err, sizeof err) != 0) {
			fprintf(stderr, "\ncrawler crawl: action: %s\n", err);
			s->st.refused++;
		}
		free(item);
	}
	while (s->pending_off < s->pending_len) {
		const char *k = s->pending + s->pending_off;
		const char *nl = memchr(k, '\n', s->pending_len - s->pending_off);
		size_t l = (size_t)(nl - k);
		if (s->p.feed(s->p.ctx, k, l) != 0)
			break;
		s->pending_off += l + 1;
	}
	if (s->pending_off == s->pending_len)
		s->pending_off = s->pending_len = 0;
	atomic_store(&s->pending_bytes, s->pending_len - s->pending_off);
}

uint64_t steer_shared_next(const struct steer *s)
{
	return s ? s->shared_next : 0;
}

int steer_shared_apply(struct steer *s, uint64_t index, const char *text, size_t len,
                       const char *source)
{
	char err[1200], line[40];
	int rc = 0;
	if (!s)
		return -1;
	if (text) {
		struct action *a = make_action(s, STEER_RULES, text, len, source, err, sizeof err);
		rc = a ? apply_rules(s, a, err, sizeof err) : -1;
		free(a);
		if (rc != 0) {
			fprintf(stderr, "\ncrawler crawl: shared rules refused: %s\n", err);
			s->st.refused++;
		} else {
			s->st.applied++;
			s->p.wake(s->p.ctx);
		}
	}
	s->shared_next = index + 1;
	int n = snprintf(line, sizeof line, "shared %" PRIu64 "\n", s->shared_next);
	log_line(s, line, (size_t)n);
	return rc;
}

int steer_paused(const struct steer *s)
{
	return s && s->paused;
}

int steer_busy(const struct steer *s)
{
	return s && (s->pending_off < s->pending_len || bqueue_size(s->q) > 0);
}

void steer_note_fetch(struct steer *s, uint32_t host, const char *url, long status)
{
	if (!s)
		return;
	struct fetch_note *n = &s->ring[s->ring_next++ % STEER_RING];
	n->at_us = monotonic_us();
	n->host = host;
	n->status = (int)status;
	snprintf(n->url, sizeof n->url, "%s", url);
}

void steer_stats(const struct steer *s, struct steer_stats *out)
{
	*out = s ? s->st : (struct steer_stats){ 0 };
	if (s)
		out->refused += atomic_load(&s->files_refused);
}

/* ---- HTTP (loop thread) ---- */

/* GET /hosts/HOST: 200, or 404 (a host the crawl has not met). */
static int host_page(struct steer *s, const char *host, size_t hl, FILE *f)
{
	uint32_t ids[2];
	int n = host_ids(s, host, hl, 0, ids);
	uint64_t now = monotonic_us();
	if (!n) {
		fprintf(f, "unknown host '%.*s'\n", (int)(hl > 255 ? 255 : hl), host);
		return 404;
	}
	fprintf(f, "{\"host\": ");
	ascii_json_string(f, host, hl);
	fprintf(f, ", \"paused\": %s, \"queues\": [", s->paused ? "true" : "false");
	for (int i = 0; i < n; i++) {
		uint32_t h = ids[i];
		size_t kl;
		const char *key = frontier_host_key(s->p.frontier, h, &kl);
		uint64_t pages = 0, bytes = 0, next = politeness_host_next(s->p.pol, h);
		uint64_t queued = frontier_host_queued(s->p.frontier, h);
		frontier_host_counts(s->p.frontier, h, &pages, &bytes, NULL);
		const char *state = frontier_host_is_retired(s->p.frontier, h) ? "retired"
		                    : politeness_host_held(s->p.pol, h)        ? "visiting"
		                    : queued                                   ? "waiting"
		                                                               : "idle";
		fprintf(f, "%s{\"key\": ", i ? ", " : "");
		ascii_json_string(f, key, kl);
		fprintf(f,
		        ", \"queued\": %" PRIu64 ", \"state\": \"%s\", \"steered_delay_ms\": %u,"
		        " \"next_in_ms\": %" PRIu64 ", \"pages\": %" PRIu64 ", \"bytes\": %" PRIu64
		        ", \"last_fetches\": [",
		        queued, state, politeness_host_delay(s->p.pol, h),
		        next > now ? (next - now) / 1000u : 0, pages, bytes);
		int listed = 0;
		for (size_t j = 0; j < STEER_RING && listed < 10 && j < s->ring_next; j++) {
			const struct fetch_note *fn = &s->ring[(s->ring_next - 1 - j) % STEER_RING];
			if (fn->host != h)
				continue;
			fprintf(f, "%s{\"url\": ", listed++ ? ", " : "");
			ascii_json_string(f, fn->url, strlen(fn->url));
			fprintf(f, ", \"status\": %d, \"ago_ms\": %" PRIu64 "}", fn->status,
			        (now - fn->at_us) / 1000u);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
	return 200;
}

/* An action asked over HTTP: checked, applied at once. */
static int http_action(struct steer *s, enum steer_kind kind, const char *body, size_t len,
                       const char *source, FILE *f)
{
	char err[1200];
	if (kind == STEER_SEEDS && atomic_load(&s->pending_bytes) + len > STEER_PENDING_MAX) {
		fprintf(f, "%s: too many seeds wait for the sieve; ask again later\n", source);
		s->st.refused++;
		return 503;
	}
	struct action *a = make_action(s, kind, body, len, source, err, sizeof err);
	int rc = a ? apply(s, a, err, sizeof err) : -1;
	free(a);
	if (rc != 0) {
		s->st.refused++;
		fprintf(f, "%s\n", err);
		return 400;
	}
	fprintf(f, "ok\n");
	return 200;
}

int steer_http(struct steer *s, const char *method, const char *target, const char *body,
               size_t len, FILE *f)
{
	static const char *const simple[] = { "/seeds", "/rules", "/pause", "/resume" };
	static const enum steer_kind kinds[] = { STEER_SEEDS, STEER_RULES, STEER_PAUSE,
		                                 STEER_RESUME };
	int post = strcmp(method, "POST") == 0, get = strcmp(method, "GET") == 0;
	size_t tl = strcspn(target, "?");
	for (size_t i = 0; i < 4; i++)
		if (strlen(simple[i]) == tl && strncmp(target, simple[i], tl) == 0) {
			if (!post)
				goto not_allowed;
			char source[32];
			snprintf(source, sizeof source, "POST %s", simple[i]);
			return http_action(s, kinds[i], body, len, source, f);
		}
	if (strncmp(target, "/hosts/", 7) == 0) {
		const char *host = target + 7;
		size_t hl = strcspn(host, "/?");
		if (host[hl] != '/' && get)
			return host_page(s, host, hl, f);
		if (strncmp(host + hl, "/delay", 6) == 0 &&
		    (host[hl + 6] == '?' || !host[hl + 6])) {
			if (!post)
				goto not_allowed;
			const char *ms = strstr(host + hl + 6, "ms=");
			char line[400];
			if (!ms || hl > 255) {
				fprintf(f, "POST /hosts/HOST/delay?ms=N: %s\n",
				        ms ? "host name too long" : "no ms=N");
				s->st.refused++;
				return 400;
			}
			int ll = snprintf(line, sizeof line, "%.*s %.*s", (int)hl, host,
			                  (int)strcspn(ms + 3, "&"), ms + 3);
			return http_action(s, STEER_DELAY, line, (size_t)ll,
			                   "POST /hosts/HOST/delay", f);
		}
	}
	fprintf(f,
	        "not found: %s %.200s (GET /metrics, /status, /hosts/HOST; POST /seeds, "
	        "/rules, /pause, /resume, /hosts/HOST/delay?ms=N)\n",
	        method, target);
	return 404;
not_allowed:
	fprintf(f, "%s %.200s: method not allowed\n", method, target);
	return 405;
}

/* ---- the action directory (its own thread) ---- */

static const char *const suffixes[] = { ".seeds", ".rules", ".pause", ".resume", ".delay" };

/* Moves action/NAME to action/SUB/NAME, and the reason to NAME.reason. */
static void file_done(struct steer *s, const char *name, const char *sub, const char *reason)
{
	char from[4500], to[4500];
	snprintf(from, sizeof from, "%s/%s", s->dir, name);
	snprintf(to, sizeof to, "%s/%s/%s", s->dir, sub, name);
	if (rename(from, to) != 0) {
		fprintf(stderr, "\ncrawler crawl: %s: %s (removed)\n", from, strerror(errno));
		unlink(from);
	}
	if (reason) {
		snprintf(to, sizeof to, "%s/%s/%s.reason", s->dir, sub, name);
		FILE *f = fopen(to, "w");
		if (f) {
			fprintf(f, "%s\n", reason);
			fclose(f);
		}
		fprintf(stderr, "\ncrawler crawl: action %s refused: %s\n", name, reason);
	}
}

/* One action file: 0 taken or refused, 1 to try later (full), -1 stopping. */
static int take_file(struct steer *s, const char *name)
{
	char path[4500], err[1200];
	size_t nl = strlen(name), len = 0;
	int kind = -1;
	for (int i = 0; i < 5; i++) {
		size_t sl = strlen(suffixes[i]);
		if (nl > sl && strcmp(name + nl - sl, suffixes[i]) == 0)
			kind = i;
	}
	if (kind < 0) {
		file_done(
		        s, name, "failed",
		        "unknown action: a name ends in .seeds, .rules, .pause, .resume or .delay");
		atomic_fetch_add(&s->files_refused, 1);
		return 0;
	}
	if (kind == STEER_SEEDS && atomic_load(&s->pending_bytes) > STEER_PENDING_MAX)
		return 1;
	snprintf(path, sizeof path, "%s/%s", s->dir, name);
	FILE *f = fopen(path, "rb");
	char *text = f ? fileio_read_stream(f, STEER_BODY_MAX, &len) : NULL;
	if (f)
		fclose(f);
	struct action *a = NULL;
	if (!text)
		snprintf(err, sizeof err, "%s: cannot read it, or larger than %u bytes", name,
		         STEER_BODY_MAX);
	else
		a = make_action(s, (enum steer_kind)kind, text, len, name, err, sizeof err);
	free(text);
	if (!a) {
		file_done(s, name, "failed", err);
		atomic_fetch_add(&s->files_refused, 1);
		return 0;
	}
	if (bqueue_push(s->q, a) != BQUEUE_OK) {
		free(a);
		return -1;
	}
	s->p.wake(s->p.ctx);
	file_done(s, name, "done", NULL);
	return 0;
}

/* The regular files of action/ not starting with '.', in name order. */
static void scan(struct steer *s)
{
	DIR *d = opendir(s->dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d)) != NULL && n < 10000) {
		struct stat st;
		char path[4500];
		snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
		if (e->d_name[0] == '.' || (e->d_type != DT_REG && e->d_type != DT_UNKNOWN) ||
		    (e->d_type == DT_UNKNOWN && (stat(path, &st) != 0 || !S_ISREG(st.st_mode))))
			continue;
		char **nn = array_grow(names, &cap, n, sizeof *names, 16);
		if (!nn)
			break;
		names = nn;
		if ((names[n] = strdup(e->d_name)) != NULL)
			n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof *names, array_strcmp);
	for (size_t i = 0; i < n; i++)
		if (take_file(s, names[i]) != 0)
			break;
	ARRAY_FREE_EACH(names, n);
}

static void *watch_main(void *arg)
{
	struct steer *s = arg;
	pthread_mutex_lock(&s->mu);
	while (!s->stop) {
		pthread_mutex_unlock(&s->mu);
		scan(s);
		pthread_mutex_lock(&s->mu);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += STEER_POLL_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		if (!s->stop)
			pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* ---- set-up ---- */

/* A line "shared N"'s N (d[n]): the shared rules' next index. 1, or 0
 * when it is not a number. */
static int shared_line(struct steer *s, const char *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!ascii_is_digit((unsigned char)d[i]))
			return 0;
	long v = ascii_decimal_prefix(d, n, LONG_MAX / 10);
	if (v < 0)
		return 0;
	s->shared_next = (uint64_t)v;
	return 1;
}

/* A resumed crawl: steering.log's actions applied again, in order. */
static int replay(struct steer *s, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t len = 0, off = 0, l, line = 0;
	char err[1200];
	if (!f)
		return errno == ENOENT ? 0 : -1;
	char *text = fileio_read_stream(f, SIZE_MAX / 2, &len);
	fclose(f);
	if (!text)
		return -1;
	s->replaying = 1;
	const char *ln;
	while ((ln = next_line(text, len, &off, &l)) != NULL) {
		line++;
		struct action *a = NULL;
		char source[64];
		snprintf(source, sizeof source, "steering.log:%zu", line);
		if (l > 5 && strncmp(ln, "seed ", 5) == 0)
			a = make_action(s, STEER_SEEDS, ln + 5, l - 5, source, err, sizeof err);
		else if (l > 6 && strncmp(ln, "delay ", 6) == 0)
			a = make_action(s, STEER_DELAY, ln + 6, l - 6, source, err, sizeof err);
		else if ((l == 5 && strncmp(ln, "pause", 5) == 0) ||
		         (l == 6 && strncmp(ln, "resume", 6) == 0))
			a = make_action(s, *ln == 'p' ? STEER_PAUSE : STEER_RESUME, "", 0, source,
			                err, sizeof err);
		else if (l > 7 && strncmp(ln, "shared ", 7) == 0 && shared_line(s, ln + 7, l - 7))
			continue;
		else if (l == 0)
			continue;
		else
			snprintf(err, sizeof err, "%s: not an action", source);
		if (!a || apply(s, a, err, sizeof err) != 0)
			fprintf(stderr, "crawler crawl: %s (skipped)\n", err);
		free(a);
	}
	s->replaying = 0;
	free(text);
	return 0;
}

int steer_create(const struct steer_parts *parts, int resume, struct steer **out, char *err,
                 size_t errlen)
{
	char path[4300];
	struct steer *s = calloc(1, sizeof *s);
	*out = NULL;
	if (!s || !(s->q = bqueue_create(STEER_QUEUE))) {
		free(s);
		snprintf(err, errlen, "steering: out of memory");
		return -1;
	}
	s->p = *parts;
	s->log_fd = -1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	snprintf(s->dir, sizeof s->dir, "%s/action", parts->out_dir);
	snprintf(s->rules_path, sizeof s->rules_path, "%s/rules.txt", parts->out_dir);
	static const char *const subs[] = { "", "/done", "/failed" };
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, "%s%s", s->dir, subs[i]);
		if (mkdir(path, 0777) != 0 && errno != EEXIST) {
			snprintf(err, errlen, "steering: cannot make %s: %s", path,
			         strerror(errno));
			goto fail;
		}
	}
	snprintf(path, sizeof path, "%s/steering.log", parts->out_dir);
	if (resume && replay(s, path) != 0) {
		snprintf(err, errlen, "steering: cannot read %s: %s", path, strerror(errno));
		goto fail;
	}
	s->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	if (s->log_fd < 0) {
		snprintf(err, errlen, "steering: cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	if (pthread_create(&s->thread, NULL, watch_main, s) != 0) {
		snprintf(err, errlen, "steering: cannot start its thread");
		goto fail;
	}
	s->thread_started = 1;
	*out = s;
	return 0;
fail:
	steer_destroy(s);
	return -1;
}

void steer_stop(struct steer *s)
{
	if (!s || !s->thread_started)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	bqueue_close(s->q); /* a push waiting for room gives up */
	pthread_join(s->thread, NULL);
	s->thread_started = 0;
}

void steer_destroy(struct steer *s)
{
	void *item;
	if (!s)
		return;
	steer_stop(s);
	while (bqueue_try_pop(s->q, &item) == BQUEUE_OK)
		free(item);
	bqueue_destroy(s->q);
	if (s->log_fd >= 0)
		close(s->log_fd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->pending);
	free(s);
}
