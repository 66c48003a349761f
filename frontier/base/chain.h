/*
 * chain.h: the linked lists several modules keep, header only:
 *  - a singly linked queue: a head and a tail pointer in the owner's
 *    struct, nodes linked through their `next` field, appended at the tail
 *    and taken from the head;
 *  - a doubly linked list: a head pointer, nodes linked through `prev` and
 *    `next`, pushed at the head and unlinked from anywhere in O(1) (the
 *    fetch engine's transfers and sockets, the metrics endpoint's clients).
 */
#ifndef FRONTIER_BASE_CHAIN_H
#define FRONTIER_BASE_CHAIN_H

#include <stddef.h>

/* Appends node at the tail of the queue (head, tail); node->next becomes
 * NULL. head and tail are lvalues, NULL both when the queue is empty. */
#define CHAIN_APPEND(head, tail, node)                                                             \
	do {                                                                                       \
		(node)->next = NULL;                                                               \
		if ((tail) != NULL)                                                                \
			(tail)->next = (node);                                                     \
		else                                                                               \
			(head) = (node);                                                           \
		(tail) = (node);                                                                   \
	} while (0)

/* Pushes node at the head of the doubly linked list head (an lvalue). */
#define DLIST_PUSH(head, node)                                                                     \
	do {                                                                                       \
		(node)->prev = NULL;                                                               \
		(node)->next = (head);                                                             \
		if ((head) != NULL)                                                                \
			(head)->prev = (node);                                                     \
		(head) = (node);                                                                   \
	} while (0)

/* Takes node out of the doubly linked list head; its links become NULL. */
#define DLIST_UNLINK(head, node)                                                                   \
	do {                                                                                       \
		if ((node)->prev)                                                                  \
			(node)->prev->next = (node)->next;                                         \
		else                                                                               \
			(head) = (node)->next;                                                     \
		if ((node)->next)                                                                  \
			(node)->next->prev = (node)->prev;                                         \
		(node)->prev = (node)->next = NULL;                                                \
	} while (0)

#endif
