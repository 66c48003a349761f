/*
 * test_assign.c: Check suite for crawler/cluster/assign.h, each test run once per
 * method (perm, minhash, consistent), on HOSTS generated host names:
 *  - balance: max/mean load for 3, 8, 16 and 64 agents within a bound per
 *    method (see BALANCE_* below), the ratios printed;
 *  - contravariance: adding an agent moves hosts only to it, about
 *    1/(n+1) of them; removing one moves only its hosts, each to its former
 *    second choice; the moved fractions printed;
 *  - next choices: distinct, the first is the owner, and removing any agent
 *    leaves every host's choices as they were with that agent struck out;
 *  - determinism: a view created from the same names in another order, or
 *    built by adds, gives the same owners; colliding perm slots too;
 *  - a naive reference of each method, written from assign.h's definitions
 *    (the whole Fisher-Yates shuffle, every h(a, key), a linear scan of the
 *    ring), gives the same choices: this also pins the hash functions, whose
 *    change would move the hosts of a running cluster; all 65 choices of 65
 *    agents are each agent once;
 *  - errors: duplicate, missing and invalid names, a full perm universe, an
 *    empty view.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "crawler/cluster/assign.h"

#define HOSTS 100000
#define MAX_AGENTS 65

/*
 * Bounds on max/mean load over HOSTS hosts. With a uniform assignment an
 * agent's load is binomial(HOSTS, 1/n): for 64 agents the mean is 1562.5
 * and the deviation 39 (2.5%); the largest of 64 lies about 2.4 deviations
 * up, max/mean ~1.06; 1.10 is 4 deviations (perm, minhash). Consistent
 * hashing adds the spread of the agents' shares of the ring, relative
 * deviation ~1/sqrt(C) = 6.3% for C = 256 replicas, 6.7% in all: max/mean
 * ~1.16 for 64 agents; 1.25 is 3.7 deviations.
 */
#define BALANCE_UNIFORM 1.10
#define BALANCE_CONSISTENT 1.25

/* A passing ck_assert reports to the parent process (a write each): the
 * loops over hosts check with these, which report only failures. */
#define REQUIRE(cond, ...)                                                                         \
	do {                                                                                       \
		if (!(cond))                                                                       \
			ck_abort_msg(__VA_ARGS__);                                                 \
	} while (0)
#define REQUIRE_STR_EQ(a, b) REQUIRE(strcmp((a), (b)) == 0, "'%s' != '%s'", (a), (b))
#define REQUIRE_UINT_EQ(a, b)                                                                      \
	REQUIRE((a) == (b), "%s = %zu, want %zu", #a, (size_t)(a), (size_t)(b))

static const enum assign_method methods[] = { ASSIGN_PERM, ASSIGN_MINHASH, ASSIGN_CONSISTENT };
static const size_t agent_counts[] = { 3, 8, 16, 64 };

static char hosts[HOSTS][40];
static size_t host_len[HOSTS];
static char agent_names[MAX_AGENTS][32];
static const char *agents[MAX_AGENTS];

/* Host names of several shapes, and agent names crawl-NN.example.net. */
static void setup(void)
{
	static const char *tld[] = { "com", "org", "net", "it", "de", "co.uk" };
	for (size_t i = 0; i < HOSTS; i++) {
		int len;
		if (i % 3 == 0)
			len = snprintf(hosts[i], sizeof hosts[i], "www.site%zu.%s", i, tld[i % 6]);
		else if (i % 3 == 1)
			len = snprintf(hosts[i], sizeof hosts[i], "host-%zu.example.%s", i * 7919,
			               tld[i % 6]);
		else
			len = snprintf(hosts[i], sizeof hosts[i], "%zu.cdn%zu.net", i, i % 100);
		host_len[i] = (size_t)len;
	}
	for (size_t i = 0; i < MAX_AGENTS; i++) {
		snprintf(agent_names[i], sizeof agent_names[i], "crawl-%02zu.example.net", i);
		agents[i] = agent_names[i];
	}
}

static struct assign_view *view_of(enum assign_method m, const char *const *names, size_t n)
{
	struct assign_view *v = NULL;
	int rc = assign_view_create(m, names, n, &v);
	ck_assert_msg(rc == ASSIGN_OK, "create: %s", assign_strerror(rc));
	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(assign_view_size(v), n);
	return v;
}

static const char *owner(const struct assign_view *v, size_t host)
{
	const char *o = assign_view_owner(v, hosts[host], host_len[host]);
	REQUIRE(o != NULL, "no owner for %s", hosts[host]);
	return o;
}

/* Index of the name among agents[0..n-1]. */
static size_t agent_index(const char *name, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(name, agents[i]) == 0)
			return i;
	ck_abort_msg("'%s' is not an agent", name);
	return 0;
}

START_TEST(test_balance)
{
	enum assign_method m = methods[_i];
	double bound = m == ASSIGN_CONSISTENT ? BALANCE_CONSISTENT : BALANCE_UNIFORM;
	for (size_t c = 0; c < sizeof agent_counts / sizeof agent_counts[0]; c++) {
		size_t n = agent_counts[c];
		size_t load[MAX_AGENTS] = { 0 };
		struct assign_view *v = view_of(m, agents, n);
		for (size_t h = 0; h < HOSTS; h++)
			load[agent_index(owner(v, h), n)]++;
		size_t max = 0, min = HOSTS;
		for (size_t i = 0; i < n; i++) {
			max = load[i] > max ? load[i] : max;
			min = load[i] < min ? load[i] : min;
		}
		double mean = (double)HOSTS / (double)n;
		printf("balance %-10s agents %2zu: max/mean %.3f min/mean %.3f\n",
		       assign_method_name(m), n, (double)max / mean, (double)min / mean);
		ck_assert_msg((double)max / mean <= bound, "%s, %zu agents: max/mean %.3f > %.2f",
		              assign_method_name(m), n, (double)max / mean, bound);
		assign_view_destroy(v);
	}
}
END_TEST

/*
 * Adding agents[n] to agents[0..n-1]: a host either keeps its owner or goes
 * to the new agent, and about 1/(n+1) of them go: within 10% of that for
 * perm and minhash (the count is binomial, 2.5% deviation at 64 agents),
 * within 25% for consistent hashing (the new agent's share deviates 6.7%).
 */
START_TEST(test_add_moves_only_to_new)
{
	enum assign_method m = methods[_i];
	double slack = m == ASSIGN_CONSISTENT ? 0.25 : 0.10;
	for (size_t c = 0; c < sizeof agent_counts / sizeof agent_counts[0]; c++) {
		size_t n = agent_counts[c], moved = 0;
		struct assign_view *a = view_of(m, agents, n);
		struct assign_view *b = view_of(m, agents, n);
		ck_assert_int_eq(assign_view_add(b, agents[n]), ASSIGN_OK);
		for (size_t h = 0; h < HOSTS; h++) {
			const char *oa = owner(a, h), *ob = owner(b, h);
			if (strcmp(oa, ob) == 0)
				continue;
			REQUIRE(strcmp(ob, agents[n]) == 0, "%s: adding %s moved %s from %s to %s",
			        assign_method_name(m), agents[n], hosts[h], oa, ob);
			moved++;
		}
		double frac = (double)moved / HOSTS, want = 1.0 / (double)(n + 1);
		printf("add    %-10s agents %2zu -> %2zu: moved %.4f, 1/(n+1) = %.4f, ratio %.3f\n",
		       assign_method_name(m), n, n + 1, frac, want, frac / want);
		ck_assert_msg(frac >= want * (1 - slack) && frac <= want * (1 + slack),
		              "%s: adding to %zu agents moved %.4f, want %.4f",
		              assign_method_name(m), n, frac, want);
		assign_view_destroy(b);
		assign_view_destroy(a);
	}
}
END_TEST

/* Removing agents[1]: only its hosts move, each to its second choice. */
START_TEST(test_remove_moves_only_its_hosts)
{
	enum assign_method m = methods[_i];
	for (size_t c = 0; c < sizeof agent_counts / sizeof agent_counts[0]; c++) {
		size_t n = agent_counts[c], moved = 0, owned = 0;
		const char *victim = agents[1];
		struct assign_view *a = view_of(m, agents, n);
		struct assign_view *b = view_of(m, agents, n);
		ck_assert_int_eq(assign_view_remove(b, victim), ASSIGN_OK);
		ck_assert_uint_eq(assign_view_size(b), n - 1);
		for (size_t h = 0; h < HOSTS; h++) {
			const char *ch[2];
			REQUIRE_UINT_EQ(assign_view_choices(a, hosts[h], host_len[h], ch, 2), 2);
			const char *ob = owner(b, h);
			if (strcmp(ch[0], victim) == 0) {
				owned++;
				REQUIRE(strcmp(ob, ch[1]) == 0, "%s: %s went to %s, not %s",
				        assign_method_name(m), hosts[h], ob, ch[1]);
			} else {
				REQUIRE(strcmp(ob, ch[0]) == 0, "%s: %s moved from %s to %s",
				        assign_method_name(m), hosts[h], ch[0], ob);
			}
			moved += strcmp(ob, ch[0]) != 0;
		}
		ck_assert_uint_eq(moved, owned);
		printf("remove %-10s agents %2zu -> %2zu: moved %.4f, 1/n = %.4f\n",
		       assign_method_name(m), n, n - 1, (double)moved / HOSTS, 1.0 / (double)n);
		assign_view_destroy(b);
		assign_view_destroy(a);
	}
}
END_TEST

/*
 * Choices of 8 agents for 5,000 hosts: all 8, distinct, the first the
 * owner; k beyond the view's size gives the view's size. Striking out any
 * one agent x from the view strikes x out of each host's choices and
 * changes nothing else (so a dead owner's hosts go to their second choice,
 * and the second choice's to the third once it dies too).
 */
START_TEST(test_choices)
{
	enum assign_method m = methods[_i];
	enum { N = 8, CHOICE_HOSTS = 5000 };
	static const char *ch[CHOICE_HOSTS][N];
	struct assign_view *a = view_of(m, agents, N);
	for (size_t h = 0; h < CHOICE_HOSTS; h++) {
		const char *more[N + 4];
		REQUIRE_UINT_EQ(assign_view_choices(a, hosts[h], host_len[h], ch[h], N), N);
		REQUIRE_UINT_EQ(assign_view_choices(a, hosts[h], host_len[h], more, N + 4), N);
		REQUIRE_STR_EQ(ch[h][0], owner(a, h));
		for (size_t i = 0; i < N; i++) {
			REQUIRE_STR_EQ(more[i], ch[h][i]);
			for (size_t j = 0; j < i; j++)
				REQUIRE(strcmp(ch[h][i], ch[h][j]) != 0, "%s twice", ch[h][i]);
		}
	}
	ck_assert_uint_eq(assign_view_choices(a, hosts[0], host_len[0], NULL, 0), 0);
	for (size_t x = 0; x < N; x++) {
		struct assign_view *b = view_of(m, agents, N);
		ck_assert_int_eq(assign_view_remove(b, agents[x]), ASSIGN_OK);
		for (size_t h = 0; h < CHOICE_HOSTS; h++) {
			const char *got[N];
			REQUIRE_UINT_EQ(assign_view_choices(b, hosts[h], host_len[h], got, N),
			                N - 1);
			size_t j = 0;
			for (size_t i = 0; i < N; i++)
				if (strcmp(ch[h][i], agents[x]) != 0)
					REQUIRE_STR_EQ(got[j++], ch[h][i]);
		}
		assign_view_destroy(b);
	}
	assign_view_destroy(a);
}
END_TEST

/* Names in another order, or added one by one, give the same owners. */
START_TEST(test_determinism)
{
	enum assign_method m = methods[_i];
	enum { N = 16 };
	const char *reversed[N], *shuffled[N];
	for (size_t i = 0; i < N; i++) {
		reversed[i] = agents[N - 1 - i];
		shuffled[i] = agents[(i * 5 + 3) % N];
	}
	struct assign_view *a = view_of(m, agents, N);
	struct assign_view *b = view_of(m, reversed, N);
	struct assign_view *c = view_of(m, shuffled, N);
	struct assign_view *d = view_of(m, NULL, 0);
	for (size_t i = 0; i < N; i++)
		ck_assert_int_eq(assign_view_add(d, shuffled[i]), ASSIGN_OK);
	/* d's perm slots match the others' only while no two of these names
	 * share a home slot (they do not; test_perm_collision covers it). */
	for (size_t h = 0; h < HOSTS; h += 7) {
		const char *o = owner(a, h);
		REQUIRE_STR_EQ(owner(b, h), o);
		REQUIRE_STR_EQ(owner(c, h), o);
		REQUIRE_STR_EQ(owner(d, h), o);
	}
	assign_view_destroy(d);
	assign_view_destroy(c);
	assign_view_destroy(b);
	assign_view_destroy(a);
}
END_TEST

/* ---- a naive reference for each method, from assign.h ---- */

static uint64_t ref_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n): Lemire's multiply and reject. */
static uint32_t ref_uniform(uint64_t *state, uint32_t n)
{
	for (;;) {
		unsigned __int128 m = (unsigned __int128)ref_splitmix64(state) * n;
		if ((uint64_t)m >= -(uint64_t)n % n)
			return (uint32_t)(m >> 64);
	}
}

static uint64_t name_hash(const char *name)
{
	return XXH3_64bits(name, strlen(name));
}

/* Perm: the whole shuffle of the slot universe, then its live slots in
 * order. slot_of[i] is agents[i]'s slot (no collisions among names[]). */
static size_t ref_perm(const char *const *names, size_t n, uint64_t hk, const char **out)
{
	static uint16_t perm[ASSIGN_PERM_SLOTS];
	const char *slots[ASSIGN_PERM_SLOTS] = { 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t s = (uint32_t)name_hash(names[i]) % ASSIGN_PERM_SLOTS;
		REQUIRE(slots[s] == NULL, "%s collides", names[i]);
		slots[s] = names[i];
	}
	for (uint32_t i = 0; i < ASSIGN_PERM_SLOTS; i++)
		perm[i] = (uint16_t)i;
	uint64_t state = hk;
	for (uint32_t i = 0; i < ASSIGN_PERM_SLOTS; i++) {
		uint32_t j = i + ref_uniform(&state, ASSIGN_PERM_SLOTS - i);
		uint16_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	size_t k = 0;
	for (uint32_t i = 0; i < ASSIGN_PERM_SLOTS; i++)
		if (slots[perm[i]])
			out[k++] = slots[perm[i]];
	return k;
}

/* Minhash: every agent sorted by (h, name). */
static uint64_t ref_h_key;
static int ref_minhash_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	unsigned char le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(ref_h_key >> (8 * i));
	uint64_t ha = XXH3_64bits_withSeed(le, 8, name_hash(a));
	uint64_t hb = XXH3_64bits_withSeed(le, 8, name_hash(b));
	if (ha != hb)
		return ha < hb ? -1 : 1;
	return strcmp(a, b);
}

static size_t ref_minhash(const char *const *names, size_t n, uint64_t hk, const char **out)
{
	memcpy(out, names, n * sizeof *out);
	ref_h_key = hk;
	qsort(out, n, sizeof *out, ref_minhash_cmp);
	return n;
}

/* Consistent: repeatedly the agent of the least point at or after the
 * position reached (wrapping), skipping agents already chosen. */
static size_t ref_consistent(const char *const *names, size_t n, uint64_t hk, const char **out)
{
	static uint64_t pts[MAX_AGENTS][ASSIGN_REPLICAS];
	for (size_t i = 0; i < n; i++) {
		uint64_t state = name_hash(names[i]);
		for (size_t r = 0; r < ASSIGN_REPLICAS; r++)
			pts[i][r] = ref_splitmix64(&state);
	}
	bool taken[MAX_AGENTS] = { false };
	for (size_t k = 0; k < n; k++) {
		/* the least point >= hk among agents not taken, else the least */
		size_t best = n, low = n;
		uint64_t best_p = 0, low_p = 0;
		for (size_t i = 0; i < n; i++) {
			if (taken[i])
				continue;
			for (size_t r = 0; r < ASSIGN_REPLICAS; r++) {
				uint64_t p = pts[i][r];
				if (p >= hk && (best == n || p < best_p)) {
					best = i;
					best_p = p;
				}
				if (low == n || p < low_p) {
					low = i;
					low_p = p;
				}
			}
		}
		size_t pick = best < n ? best : low;
		taken[pick] = true;
		out[k] = names[pick];
	}
	return n;
}

START_TEST(test_reference)
{
	enum assign_method m = methods[_i];
	enum { N = 5, REF_HOSTS = 300 };
	struct assign_view *v = view_of(m, agents, N);
	for (size_t h = 0; h < REF_HOSTS; h++) {
		const char *got[N], *want[N];
		uint64_t hk = XXH3_64bits(hosts[h], host_len[h]);
		size_t n = m == ASSIGN_PERM      ? ref_perm(agents, N, hk, want)
		           : m == ASSIGN_MINHASH ? ref_minhash(agents, N, hk, want)
		                                 : ref_consistent(agents, N, hk, want);
		REQUIRE_UINT_EQ(n, N);
		REQUIRE_UINT_EQ(assign_view_choices(v, hosts[h], host_len[h], got, N), N);
		for (size_t i = 0; i < N; i++)
			REQUIRE_STR_EQ(got[i], want[i]);
	}
	assign_view_destroy(v);
}
END_TEST

/*
 * All 65 choices of 65 agents (minhash's pass-per-choice path beyond 64):
 * every agent once; the first 8 are the 8 choices; minhash's order is the
 * reference's.
 */
START_TEST(test_all_choices)
{
	enum assign_method m = methods[_i];
	enum { N = MAX_AGENTS, ALL_HOSTS = 500 };
	struct assign_view *v = view_of(m, agents, N);
	for (size_t h = 0; h < ALL_HOSTS; h++) {
		const char *all[N], *few[8], *want[N];
		bool seen[N] = { false };
		REQUIRE_UINT_EQ(assign_view_choices(v, hosts[h], host_len[h], all, N), N);
		REQUIRE_UINT_EQ(assign_view_choices(v, hosts[h], host_len[h], few, 8), 8);
		for (size_t i = 0; i < N; i++) {
			size_t a = agent_index(all[i], N);
			REQUIRE(!seen[a], "%s twice", all[i]);
			seen[a] = true;
		}
		for (size_t i = 0; i < 8; i++)
			REQUIRE_STR_EQ(few[i], all[i]);
		if (m == ASSIGN_MINHASH) {
			ref_minhash(agents, N, XXH3_64bits(hosts[h], host_len[h]), want);
			for (size_t i = 0; i < N; i++)
				REQUIRE_STR_EQ(all[i], want[i]);
		}
	}
	assign_view_destroy(v);
}
END_TEST

/* ---- method-independent cases ---- */

START_TEST(test_errors)
{
	enum assign_method m = methods[_i];
	struct assign_view *v = NULL;
	const char *dup[] = { "a", "b", "a" };
	ck_assert_int_eq(assign_view_create(m, dup, 3, &v), ASSIGN_EEXIST);
	ck_assert_ptr_null(v);
	const char *bad[] = { "a", "b\tc" };
	ck_assert_int_eq(assign_view_create(m, bad, 2, &v), ASSIGN_EINVAL);
	ck_assert_ptr_null(v);
	const char *empty[] = { "" };
	ck_assert_int_eq(assign_view_create(m, empty, 1, &v), ASSIGN_EINVAL);
	ck_assert_int_eq(assign_view_create((enum assign_method)7, NULL, 0, &v), ASSIGN_EINVAL);

	v = view_of(m, NULL, 0);
	ck_assert_ptr_null(assign_view_owner(v, "example.com", 11));
	const char *ch[2];
	ck_assert_uint_eq(assign_view_choices(v, "example.com", 11, ch, 2), 0);
	ck_assert_int_eq(assign_view_add(v, "a"), ASSIGN_OK);
	ck_assert_str_eq(assign_view_owner(v, "example.com", 11), "a");
	ck_assert_int_eq(assign_view_add(v, "a"), ASSIGN_EEXIST);
	ck_assert_int_eq(assign_view_remove(v, "b"), ASSIGN_ENOENT);
	char long_name[ASSIGN_NAME_MAX + 2];
	memset(long_name, 'x', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	ck_assert_int_eq(assign_view_add(v, long_name), ASSIGN_EINVAL);
	long_name[ASSIGN_NAME_MAX] = '\0';
	ck_assert_int_eq(assign_view_add(v, long_name), ASSIGN_OK);
	ck_assert_int_eq(assign_view_remove(v, "a"), ASSIGN_OK);
	ck_assert_str_eq(assign_view_owner(v, "example.com", 11), long_name);
	ck_assert_int_eq(assign_view_remove(v, long_name), ASSIGN_OK);
	ck_assert_ptr_null(assign_view_owner(v, "example.com", 11));
	ck_assert_int_eq(assign_view_method(v), m);
	assign_view_destroy(v);
	assign_view_destroy(NULL);
}
END_TEST

START_TEST(test_method_names)
{
	for (size_t i = 0; i < 3; i++) {
		enum assign_method m;
		ck_assert_int_eq(assign_method_parse(assign_method_name(methods[i]), &m),
		                 ASSIGN_OK);
		ck_assert_int_eq(m, methods[i]);
	}
	enum assign_method m;
	ck_assert_str_eq(assign_method_name(ASSIGN_PERM), "perm");
	ck_assert_str_eq(assign_method_name(ASSIGN_MINHASH), "minhash");
	ck_assert_str_eq(assign_method_name(ASSIGN_CONSISTENT), "consistent");
	ck_assert_int_eq(assign_method_parse("ring", &m), ASSIGN_EINVAL);
	ck_assert_int_eq(assign_method_parse("", &m), ASSIGN_EINVAL);
	for (int e = ASSIGN_OK; e <= ASSIGN_EFULL + 1; e++)
		ck_assert_ptr_nonnull(assign_strerror(e));
}
END_TEST

/* The perm universe holds ASSIGN_PERM_SLOTS agents, then ASSIGN_EFULL. */
START_TEST(test_perm_full)
{
	static char names[ASSIGN_PERM_SLOTS + 1][16];
	static const char *p[ASSIGN_PERM_SLOTS + 1];
	for (size_t i = 0; i <= ASSIGN_PERM_SLOTS; i++) {
		snprintf(names[i], sizeof names[i], "a%zu", i);
		p[i] = names[i];
	}
	struct assign_view *v = NULL;
	ck_assert_int_eq(assign_view_create(ASSIGN_PERM, p, ASSIGN_PERM_SLOTS + 1, &v),
	                 ASSIGN_EFULL);
	v = view_of(ASSIGN_PERM, p, ASSIGN_PERM_SLOTS);
	ck_assert_int_eq(assign_view_add(v, p[ASSIGN_PERM_SLOTS]), ASSIGN_EFULL);
	/* every slot is live: the owner is the shuffle's first slot */
	ck_assert_ptr_nonnull(assign_view_owner(v, "example.com", 11));
	ck_assert_int_eq(assign_view_remove(v, p[3]), ASSIGN_OK);
	ck_assert_int_eq(assign_view_add(v, p[ASSIGN_PERM_SLOTS]), ASSIGN_OK);
	assign_view_destroy(v);
}
END_TEST

/*
 * Two names with the same home slot: a created view places them the same
 * whatever their order, and the one probing further keeps its slot when the
 * other leaves (no host of a third agent moves).
 */
START_TEST(test_perm_collision)
{
	static char names[2048][16];
	const char *x = NULL, *y = NULL;
	int first[ASSIGN_PERM_SLOTS];
	for (size_t i = 0; i < ASSIGN_PERM_SLOTS; i++)
		first[i] = -1;
	for (int i = 0; i < 2048 && !y; i++) {
		snprintf(names[i], sizeof names[i], "agent%d", i);
		uint32_t s = (uint32_t)name_hash(names[i]) % ASSIGN_PERM_SLOTS;
		if (first[s] >= 0) {
			x = names[first[s]];
			y = names[i];
		}
		first[s] = i;
	}
	ck_assert_ptr_nonnull(y);
	const char *xy[] = { x, y, agents[0], agents[1] };
	const char *yx[] = { agents[1], y, agents[0], x };
	struct assign_view *a = view_of(ASSIGN_PERM, xy, 4);
	struct assign_view *b = view_of(ASSIGN_PERM, yx, 4);
	struct assign_view *c = view_of(ASSIGN_PERM, xy, 4);
	ck_assert_int_eq(assign_view_remove(c, x), ASSIGN_OK);
	struct assign_view *d = view_of(ASSIGN_PERM, xy, 4);
	ck_assert_int_eq(assign_view_remove(d, y), ASSIGN_OK);
	for (size_t h = 0; h < 20000; h++) {
		const char *o = owner(a, h);
		REQUIRE_STR_EQ(owner(b, h), o);
		if (strcmp(o, x) != 0)
			REQUIRE_STR_EQ(owner(c, h), o);
		if (strcmp(o, y) != 0)
			REQUIRE_STR_EQ(owner(d, h), o);
	}
	assign_view_destroy(d);
	assign_view_destroy(c);
	assign_view_destroy(b);
	assign_view_destroy(a);
}
END_TEST

int main(void)
{
	setup();
	Suite *s = suite_create("assign");
	TCase *tc = tcase_create("methods");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_balance, 0, 3);
	tcase_add_loop_test(tc, test_add_moves_only_to_new, 0, 3);
	tcase_add_loop_test(tc, test_remove_moves_only_its_hosts, 0, 3);
	tcase_add_loop_test(tc, test_choices, 0, 3);
	tcase_add_loop_test(tc, test_determinism, 0, 3);
	tcase_add_loop_test(tc, test_reference, 0, 3);
	tcase_add_loop_test(tc, test_all_choices, 0, 3);
	tcase_add_loop_test(tc, test_errors, 0, 3);
	tcase_add_test(tc, test_method_names);
	tcase_add_test(tc, test_perm_full);
	tcase_add_test(tc, test_perm_collision);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
