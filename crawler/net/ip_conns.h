/*
 * ip_conns.h: the TCP connections the fetch engine has open, counted per
 * peer address, so that idle keep-alive connections to one address stay
 * bounded. libcurl's caps are per host name (CURLMOPT_MAX_HOST_CONNECTIONS)
 * or global (CURLMOPT_MAXCONNECTS): 10,000 host names on one address could
 * keep one idle connection each. The engine records every socket it opens
 * (CURLOPT_OPENSOCKETFUNCTION) and closes (CURLOPT_CLOSESOCKETFUNCTION);
 * when an address is at its cap, a new transfer first shuts down one of
 * its idle connections (shutdown(2): the peer sees the close at once;
 * libcurl finds the connection dead and closes the socket when it next
 * looks at it).
 *
 * Data structure: a chained hash table of addresses (16 bytes: IPv4 as
 * ::ffff:a.b.c.d), each with its count of open connections not shut down
 * and a doubly linked list of its sockets; an array indexed by socket
 * descriptor points at each socket's record. Memory: O(open sockets).
 *
 * Invariants: an address is in the table iff it has a socket recorded;
 * count = its recorded sockets not shut down.
 *
 * Fetch loop thread only (as the engine); every call O(1) but
 * ip_conns_shut_idle, O(sockets of the address).
 */
#ifndef CRAWLER_NET_IP_CONNS_H
#define CRAWLER_NET_IP_CONNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct ip_conns;

/* NULL if out of memory. */
struct ip_conns *ip_conns_create(void);
/* Frees everything; the sockets are not closed. NULL is a no-op. */
void ip_conns_destroy(struct ip_conns *c);

/* Records socket fd connected (or connecting) to sa's address. 0, or -1
 * (out of memory or not an IP address: the socket goes uncounted). */
int ip_conns_opened(struct ip_conns *c, int fd, const struct sockaddr *sa);
/* Forgets socket fd (closed); an unknown fd is ignored. */
void ip_conns_closed(struct ip_conns *c, int fd);

/* The table's memory now (as malloc rounds it). */
uint64_t ip_conns_bytes(const struct ip_conns *c);

/* Connections to ip (a literal) open and not shut down. */
size_t ip_conns_count(const struct ip_conns *c, const char *ip);

/* Is socket fd in use by a transfer? (the caller's knowledge) */
typedef bool (*ip_conns_busy_fn)(void *ctx, int fd);

/* Shuts down one connection to ip that busy says is not in use, the most
 * recently opened first (a connection reused visit after visit is old and
 * kept). Returns true if one was shut down. */
bool ip_conns_shut_idle(struct ip_conns *c, const char *ip, ip_conns_busy_fn busy, void *ctx);

/* Connections shut down by ip_conns_shut_idle since creation. */
unsigned long long ip_conns_shut_total(const struct ip_conns *c);

#endif
