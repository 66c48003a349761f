/*
 * assign.h: which agent of a distributed crawl owns a host (course notes,
 * part 3, "Tecniche di distribuzione del carico").
 *
 * A crawl outgrows one machine by running a set A of identical agents, each
 * host crawled by exactly one of them: delta_A(host) in A. Every agent
 * computes delta_A on its own, from the same view of who is alive, and must
 * get the same answer. delta must be
 *   - balanced: each agent owns about |hosts| / |A| of the hosts (3);
 *   - contravariant: for B a superset of A and a in A, the hosts of a under
 *     B are a subset of its hosts under A (3): an agent that joins only takes
 *     hosts away from the others, and an agent that leaves (or dies) hands
 *     each of its hosts to that host's next choice, nobody else's host moves.
 * Hence the "next choices" of a key: the first k agents of the view it would
 * go to, in order; next_choices[0] is the owner, next_choices[1] the owner
 * once next_choices[0] is gone (3.4), and so on.
 *
 * A view (struct assign_view) is the set of live agents, named by strings,
 * under one method. Keys are host names as bytes (the caller normalizes,
 * e.g. lowercases); a key is hashed once with XXH3-64 (hk below) and each
 * method works from hk. Agent names are hashed with XXH3-64 too (ha). The
 * three methods of the notes, behind one table of operations:
 *
 * ASSIGN_PERM, random permutations (3.1). A fixed universe P of
 *   ASSIGN_PERM_SLOTS agent slots; each live agent holds one slot. A key
 *   seeds a PRNG (splitmix64 from hk) that drives a Fisher-Yates shuffle of
 *   P; the owner is the first slot of the shuffle that holds a live agent,
 *   the next choices the following ones. The shuffle is lazy, as the notes
 *   suggest: it stops once position i holds a live agent (later steps never
 *   move position i). A lookup costs an array of |P| 16-bit entries on
 *   the stack (one memset: the zeroed array stands for the identity) plus
 *   about |P| / (|A| + 1) swaps, k |P| / (|A| + 1) for k choices (so ~256
 *   swaps, ~2 us, for 3 agents; ~16 for 64), with no allocation. Balanced since the shuffle
 *   is uniform (the first live slot is uniform over the live slots);
 *   contravariant since adding agents to A only makes a slot of B \ A come
 *   first for some keys: those keys, and only those, move to it (3.1). Add
 *   and remove cost O(1) (no state but the slot table).
 *   Slots: an agent's home slot is ha mod |P|; when it is taken the agent
 *   probes linearly (home + 1, + 2, ...) and holds the first free slot for
 *   as long as it is alive: an add or a remove never moves another agent
 *   (moving one would break contravariance). So slots, and the owners of
 *   colliding names, depend on the view's history: assign_view_create()
 *   places its names in a canonical order (by ha, then name) so that any
 *   machine creating a view from the same set agrees; agents added later
 *   take the first free slot of their probe at that time. With |P| = 1024
 *   and 64 agents about 2 names collide, so a cluster that adds agents one
 *   by one must share the slot table (or name its agents so that their home
 *   slots differ). At most |P| agents (ASSIGN_EFULL).
 *
 * ASSIGN_MINHASH, min hashing (3.2). No universe. h(a, key) =
 *   XXH3-64 of hk's 8 little-endian bytes seeded with ha; the owner is the
 *   live agent with the least h (ties, probability 2^-64 per pair, broken
 *   by name), the next choices the following ones in increasing h. A lookup
 *   costs |A| hashes (and an insertion into a list of k for k choices), no
 *   allocation; add and remove cost O(1) beyond keeping the list of agents.
 *   Balanced since h is (pseudo)random, so the argmin is uniform over A;
 *   contravariant since a key moves from A's owner only to a b in B \ A with
 *   h(b, key) below every h(a, key) (3.2).
 *
 * ASSIGN_CONSISTENT, consistent hashing (3.3). A ring of 2^64 positions:
 *   each agent places ASSIGN_REPLICAS points (replicas) drawn from a
 *   splitmix64 generator seeded with ha; the points of all live agents are
 *   kept in one array sorted by (position, agent name). The owner of a key
 *   is the agent of the first point at or after hk, wrapping past the end
 *   (clockwise); the next choices are the next distinct agents clockwise.
 *   A lookup is a binary search, O(log(|A| C)); k choices walk on until k
 *   distinct agents show up (about k points while k is well below |A|); an
 *   add merges C sorted points into the array and a remove filters the
 *   array, both O(|A| C) (the notes' b-tree would make them logarithmic;
 *   membership changes are rare next to lookups, and a flat array searches
 *   faster). Contravariant since a new agent's points only split arcs: the
 *   part of an arc before a new point goes to the new agent, the rest keeps
 *   its owner (3.3). Balanced only with many replicas: an agent's share is a
 *   sum of C arcs, with relative deviation about 1/sqrt(C), hence C = 256
 *   here (the notes use C = 300): about 6% deviation, max/mean about 1.16
 *   for 64 agents against 1.06 for the other two methods (tests/cluster
 *   prints the measured balance).
 *
 * All methods are deterministic: a view's answers depend only on its method
 * and its set of agents (and, for ASSIGN_PERM with colliding names, the
 * order they were added in, see above), not on the machine or the order of
 * the names given to assign_view_create(). The methods' collisions (equal
 * minima, equal ring points) are broken by agent name (3.4).
 *
 * Threads: lookups do not modify the view and may run concurrently;
 * assign_view_add() and assign_view_remove() need exclusive access.
 */
#ifndef CRAWLER_CLUSTER_ASSIGN_H
#define CRAWLER_CLUSTER_ASSIGN_H

#include <stddef.h>
#include <stdint.h>

/* Slots of the permutation method's universe (a power of two). */
#define ASSIGN_PERM_SLOTS 1024
/* Points of each agent on the consistent-hashing ring. */
#define ASSIGN_REPLICAS 256
/* Longest agent name, in bytes. */
#define ASSIGN_NAME_MAX 255

enum assign_method {
	ASSIGN_PERM = 0,       /* random permutations of a slot universe ("perm") */
	ASSIGN_MINHASH = 1,    /* least h(agent, key) ("minhash") */
	ASSIGN_CONSISTENT = 2, /* consistent hashing on a ring ("consistent") */
};

enum assign_err {
	ASSIGN_OK = 0,     /* success */
	ASSIGN_ENOMEM = 1, /* allocation failed; the view is as it was */
	ASSIGN_EINVAL = 2, /* NULL argument, unknown method, or a name that is
			    * empty, longer than ASSIGN_NAME_MAX or holds a
			    * control character (0x00-0x1f, 0x7f) */
	ASSIGN_EEXIST = 3, /* the name is already in the view (or given twice) */
	ASSIGN_ENOENT = 4, /* the name is not in the view */
	ASSIGN_EFULL = 5,  /* ASSIGN_PERM: all ASSIGN_PERM_SLOTS slots are held */
};

/* Static description of an assign_err value. */
const char *assign_strerror(int err);

/* "perm", "minhash" or "consistent"; "?" for a value out of range. */
const char *assign_method_name(enum assign_method m);
/* Parses one of the names above into *out: ASSIGN_OK or ASSIGN_EINVAL. */
int assign_method_parse(const char *name, enum assign_method *out);

struct assign_view;

/*
 * Creates a view of method m holding the n agents names[0..n-1] (n may be
 * 0; the names are copied, the order does not matter) into *out. On error
 * *out is NULL, nothing is allocated, and the result is ASSIGN_EINVAL (bad
 * method or name), ASSIGN_EEXIST (a name given twice), ASSIGN_EFULL or
 * ASSIGN_ENOMEM. The caller frees the view with assign_view_destroy().
 */
int assign_view_create(enum assign_method m, const char *const *names, size_t n,
                       struct assign_view **out);
/* Frees the view and its names; NULL is a no-op. */
void assign_view_destroy(struct assign_view *v);

/* Adds an agent (the name is copied). On error the view is unchanged:
 * ASSIGN_EINVAL, ASSIGN_EEXIST, ASSIGN_EFULL or ASSIGN_ENOMEM. Never moves
 * a host between agents already in the view. */
int assign_view_add(struct assign_view *v, const char *name);
/* Removes an agent: ASSIGN_OK or ASSIGN_ENOENT. Its hosts go to their next
 * choice; no other host moves. Names returned for it become invalid. */
int assign_view_remove(struct assign_view *v, const char *name);

/* The view's method. */
enum assign_method assign_view_method(const struct assign_view *v);
/* Number of live agents. */
size_t assign_view_size(const struct assign_view *v);

/*
 * The agent owning the key (len bytes), or NULL when the view is empty (not
 * an error). The name is the view's: valid until that agent is removed or
 * the view destroyed.
 */
const char *assign_view_owner(const struct assign_view *v, const char *key, size_t len);

/*
 * The first min(k, size) agents the key would go to, in order, into
 * out[0..] (out may be NULL when k is 0); returns how many. out[0] is the
 * owner; out[i + 1] owns the key once out[0..i] are removed. The names are
 * the view's, as for assign_view_owner().
 */
size_t assign_view_choices(const struct assign_view *v, const char *key, size_t len,
                           const char **out, size_t k);

#endif
