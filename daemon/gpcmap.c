// SPDX-License-Identifier: MIT
/*
 * gpcmap.c - GPC groups of SMs by union-find over probe clusters, and
 * each group's share of a placed launch's work order.
 */
#include <stdlib.h>
#include <string.h>

#include "gpcmap.h"
#include "util.h"

void gpc_map_init(struct gpc_map *m)
{
	memset(m, 0, sizeof(*m));
	for (unsigned int i = 0; i < GEMMD_MAX_SMS; i++)
		m->parent[i] = (uint16_t)i;
	memset(m->sm_group, GEMMD_NO_GROUP, sizeof(m->sm_group));
}

static unsigned int find(struct gpc_map *m, unsigned int x)
{
	while (m->parent[x] != x) {
		m->parent[x] = m->parent[m->parent[x]];
		x = m->parent[x];
	}
	return x;
}

void gpc_map_join(struct gpc_map *m, const uint32_t *sms, unsigned int n)
{
	unsigned int first = GEMMD_MAX_SMS;

	for (unsigned int i = 0; i < n; i++) {
		if (sms[i] >= GEMMD_MAX_SMS)
			continue;
		m->seen[sms[i]] = true;
		if (first == GEMMD_MAX_SMS)
			first = find(m, sms[i]);
		else
			m->parent[find(m, sms[i])] = (uint16_t)first;
	}
}

struct component {
	unsigned int root, size, low; /* low: its lowest SM id */
};

static int cmp_component(const void *a, const void *b)
{
	const struct component *x = a, *y = b;

	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return (x->low > y->low) - (x->low < y->low);
}

void gpc_map_finish(struct gpc_map *m)
{
	struct component c[GEMMD_MAX_SMS];
	unsigned int n = 0;

	for (unsigned int sm = 0; sm < GEMMD_MAX_SMS; sm++) {
		unsigned int root, i;

		if (!m->seen[sm])
			continue;
		root = find(m, sm);
		for (i = 0; i < n && c[i].root != root; i++)
			;
		if (i == n)
			c[n++] = (struct component){ root, 0, sm };
		c[i].size++;
	}
	qsort(c, n, sizeof(c[0]), cmp_component);
	m->groups = MIN(n, (unsigned int)GEMMD_MAX_GROUPS);
	memset(m->group_sms, 0, sizeof(m->group_sms));
	for (unsigned int sm = 0; sm < GEMMD_MAX_SMS; sm++) {
		unsigned int root, i;

		if (!m->seen[sm])
			continue;
		root = find(m, sm);
		for (i = 0; c[i].root != root; i++)
			;
		i = MIN(i, m->groups - 1);
		m->sm_group[sm] = (uint8_t)i;
		m->group_sms[i]++;
	}
}

void gpc_map_placement(const struct gpc_map *m, unsigned int clusters,
		       unsigned int ctas, struct gemm_places *pl)
{
	unsigned int g, total = 0, base = 0;

	memset(pl, 0, sizeof(*pl));
	memcpy(pl->sm_group, m->sm_group, sizeof(pl->sm_group));
	pl->groups = MAX(m->groups, 1u);
	for (g = 0; g < m->groups; g++) {
		pl->group_cap[g] = (uint16_t)MIN(
			m->group_sms[g] / MAX(ctas, 1u), clusters - total);
		total += pl->group_cap[g];
	}
	/* More clusters than the map holds at once: the rest go last. */
	pl->group_cap[pl->groups - 1] += (uint16_t)(clusters - total);
	for (g = 0; g < pl->groups; g++) {
		pl->group_base[g] = (uint16_t)base;
		base += pl->group_cap[g];
	}
}
