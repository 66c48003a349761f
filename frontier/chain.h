/*
 * chain.h: the singly linked queue several modules keep: a head and a tail
 * pointer in the owner's struct, nodes linked through their `next` field,
 * appended at the tail and taken from the head. Header only.
 */
#ifndef FRONTIER_CHAIN_H
#define FRONTIER_CHAIN_H

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

#endif
