/* SPDX-License-Identifier: MIT */
/*
 * gpcmap.h - which SMs share a GPC, and the work-order places of the
 * kernel.placement "gpc" launches (kernels/gemm-abi.h, gemm_places).
 *
 * The worker learns the map from probe launches of clusters: the CTAs
 * of a cluster always run in one GPC, so every cluster's SMs join one
 * group.  No CUDA here: the map is unit-tested on any machine.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "gemm-abi.h"

struct gpc_map {
	uint16_t parent[GEMMD_MAX_SMS]; /* union-find, while joining */
	bool seen[GEMMD_MAX_SMS];
	unsigned int groups; /* 0: no map */
	unsigned int group_sms[GEMMD_MAX_GROUPS];
	uint8_t sm_group[GEMMD_MAX_SMS]; /* GEMMD_NO_GROUP: never seen */
};

void gpc_map_init(struct gpc_map *m);
/* The SMs that one cluster ran on; ids past GEMMD_MAX_SMS are ignored. */
void gpc_map_join(struct gpc_map *m, const uint32_t *sms, unsigned int n);
/* The groups, largest first; past GEMMD_MAX_GROUPS the rest share one. */
void gpc_map_finish(struct gpc_map *m);
/*
 * The placement tables (counters zero) for `clusters` clusters of `ctas`
 * CTAs, one CTA per SM: each group's share of the places is what its
 * SMs hold at once, trimmed or topped up so that the shares add up to
 * `clusters` (any shares that do are correct; these keep the clusters
 * of a GPC in places next to each other).
 */
void gpc_map_placement(const struct gpc_map *m, unsigned int clusters,
		       unsigned int ctas, struct gemm_places *pl);
