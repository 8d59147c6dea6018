/* SPDX-License-Identifier: MIT */
/*
 * list.h - intrusive doubly linked lists, after the kernel's list.h.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name)     \
	{                        \
		&(name), &(name) \
	}

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr)-offsetof(type, member)))

#define list_entry(ptr, type, member) container_of(ptr, type, member)

static inline void list_init(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static inline bool list_empty(const struct list_head *h)
{
	return h->next == h;
}

static inline void list_insert(struct list_head *n, struct list_head *prev,
			       struct list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	prev->next = n;
}

static inline void list_add_tail(struct list_head *n, struct list_head *h)
{
	list_insert(n, h->prev, h);
}

static inline void list_del_init(struct list_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	list_init(n);
}

#define list_for_each(pos, head) \
	for (pos = (head)->next; pos != (head); pos = pos->next)

#define list_for_each_safe(pos, tmp, head)                       \
	for (pos = (head)->next, tmp = pos->next; pos != (head); \
	     pos = tmp, tmp = pos->next)
