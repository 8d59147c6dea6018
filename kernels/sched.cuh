/* SPDX-License-Identifier: MIT */
/*
 * sched.cuh - which tiles of D a CTA computes: the work order shared by
 * every GEMM kernel (see struct gemm_args).
 *
 * The tile grid (ceil(m/BM) x ceil(n/BN)) is rounded up to whole clusters
 * of cluster_x x cluster_y tiles; a work unit is one cluster of tiles.
 * Unit u is placed by raster and swizzle:
 *   along_m, swizzle g: units walk down M through a band of g cluster
 *     columns, the column moving fastest inside the band, so the CTAs
 *     resident at one time share g panels of B and a few of A in L2;
 *   along_n: the same with M and N swapped.
 * g = 1 is plain column-major (along_m) or row-major (along_n) order.
 * Only integer arithmetic, no SM90 instructions: the sm_80 kernels use it
 * too.
 */
#pragma once

#include <stdint.h>

#include "gemm-abi.h"

struct gemmd_sched {
	uint32_t tiles_m, tiles_n; /* tiles of D */
	uint32_t units_m, units_n; /* clusters of tiles, rounded up */
	uint32_t units; /* units_m * units_n */
	uint32_t cx, cy; /* cluster shape */
	uint32_t along_n; /* raster */
	uint32_t group; /* swizzle width, >= 1 */
};

static __device__ __forceinline__ void
gemmd_sched_init(struct gemmd_sched &s, const struct gemm_args &args,
		 uint32_t bm, uint32_t bn)
{
	s.cx = args.cluster_x ? args.cluster_x : 1;
	s.cy = args.cluster_y ? args.cluster_y : 1;
	s.tiles_m = (args.m + bm - 1) / bm;
	s.tiles_n = (args.n + bn - 1) / bn;
	s.units_m = (s.tiles_m + s.cx - 1) / s.cx;
	s.units_n = (s.tiles_n + s.cy - 1) / s.cy;
	s.units = s.units_m * s.units_n;
	s.along_n = args.raster == GEMMD_RASTER_ALONG_N;
	s.group = args.swizzle ? args.swizzle : 1;
}

/*
 * The tile of work unit u for the CTA at (cta_x, cta_y) in its cluster.
 * Returns false when that tile lies outside D (the rounded-up edge).
 */
static __device__ __forceinline__ bool
gemmd_sched_tile(const struct gemmd_sched &s, uint32_t u, uint32_t cta_x,
		 uint32_t cta_y, uint32_t &tile_m, uint32_t &tile_n)
{
	/* "fast" is the dimension the band is cut across, "slow" walks it. */
	const uint32_t slow_n = s.along_n ? s.units_m : s.units_n;
	const uint32_t walk = s.along_n ? s.units_n : s.units_m;
	const uint32_t group = s.group < slow_n ? s.group : slow_n;
	const uint32_t span = group * walk;
	const uint32_t first = u / span * group;
	const uint32_t r = u % span;
	/* The last band may be narrower; r < width * walk there. */
	const uint32_t width = min(group, slow_n - first);
	const uint32_t across = first + r % width;
	const uint32_t along = r / width;
	const uint32_t um = s.along_n ? across : along;
	const uint32_t un = s.along_n ? along : across;

	tile_m = um * s.cx + cta_x;
	tile_n = un * s.cy + cta_y;
	return tile_m < s.tiles_m && tile_n < s.tiles_n;
}
