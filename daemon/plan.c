// SPDX-License-Identifier: MIT
/*
 * plan.c - resolve a spec to a kernel and a launch.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "spec.h"

/* TMA needs 16-byte aligned row strides for the K-major operands. */
#define TMA_STRIDE_ALIGN 16u
/* A grid dimension's limit for y (x allows 2^31-1). */
#define GRID_Y_MAX 65535u

static bool kernel_matches(const struct kernel_info *k,
			   const struct gemm_spec *spec)
{
	if (k->schedule != spec->schedule || k->dtype != spec->dtype ||
	    k->layout != spec->layout)
		return false;
	if (spec->tile.m &&
	    (k->tile.m != spec->tile.m || k->tile.n != spec->tile.n ||
	     k->tile.k != spec->tile.k))
		return false;
	return true;
}

static uint64_t tiles_of(const struct kernel_info *k,
			 const struct gemm_spec *spec)
{
	return DIV_ROUND_UP(spec->m, k->tile.m) *
	       DIV_ROUND_UP(spec->n, k->tile.n);
}

/*
 * With no tile asked for, take the largest tile that still gives every SM
 * a CTA; when none does (a small problem), the one with the most CTAs.
 */
static const struct kernel_info *pick_kernel(const struct catalog *cat,
					     const struct gemm_spec *spec,
					     unsigned int sm_count)
{
	const struct kernel_info *best = NULL;
	size_t i;

	for (i = 0; i < catalog_size(cat); i++) {
		const struct kernel_info *k = catalog_get(cat, i);
		uint64_t area, best_area;
		bool fills, best_fills;

		if (!kernel_matches(k, spec))
			continue;
		if (!best) {
			best = k;
			continue;
		}
		fills = tiles_of(k, spec) >= sm_count;
		best_fills = tiles_of(best, spec) >= sm_count;
		area = (uint64_t)k->tile.m * k->tile.n;
		best_area = (uint64_t)best->tile.m * best->tile.n;
		if (fills != best_fills) {
			if (fills)
				best = k;
		} else if (fills ? area > best_area :
				   tiles_of(k, spec) > tiles_of(best, spec)) {
			best = k;
		}
	}
	return best;
}

static int no_kernel(const struct gemm_spec *spec, struct gemmd_error *err)
{
	char tile[32];

	if (spec->tile.m)
		return gemmd_error_set(
			err, 422, "unsupported", "kernel.tile",
			"no %s kernel for dtype %s, layout %s with tile %s",
			gemm_schedule_to_string(spec->schedule),
			gemm_dtype_to_string(spec->dtype),
			gemm_layout_to_string(spec->layout),
			tile_format(&spec->tile, tile, sizeof(tile)));
	return gemmd_error_set(err, 422, "unsupported", "kernel.schedule",
			       "no %s kernel for dtype %s, layout %s",
			       gemm_schedule_to_string(spec->schedule),
			       gemm_dtype_to_string(spec->dtype),
			       gemm_layout_to_string(spec->layout));
}

static unsigned int stages_that_fit(const struct kernel_info *k,
				    unsigned int smem_limit)
{
	unsigned int n;

	if (smem_limit <= k->smem_fixed)
		return 0;
	n = (smem_limit - k->smem_fixed) / k->smem_stage;
	return MIN(n, k->max_stages);
}

static int check_stages(const struct kernel_info *k, unsigned int stages,
			unsigned int smem_limit, struct gemmd_error *err)
{
	unsigned int fit = stages_that_fit(k, smem_limit);

	if (stages < k->min_stages)
		return gemmd_error_set(err, 422, "unsupported", "kernel.stages",
				       "%s needs at least %u stages, got %u",
				       k->name, k->min_stages, stages);
	if (stages > fit)
		return gemmd_error_set(
			err, 422, "unsupported", "kernel.stages",
			"%u stages of %u bytes do not fit: %s takes at most "
			"%u stages in %u bytes of shared memory",
			stages, k->smem_stage, k->name, fit, smem_limit);
	return 0;
}

static int check_shape(const struct kernel_info *k,
		       const struct gemm_spec *spec, struct gemmd_error *err)
{
	unsigned int esize = gemm_dtype_size(spec->dtype);

	if ((spec->k * esize) % TMA_STRIDE_ALIGN)
		return gemmd_error_set(
			err, 422, "unsupported", "k",
			"k=%llu: rows of A and B must be a multiple of %u "
			"bytes for TMA, so k must be a multiple of %u for %s",
			(unsigned long long)spec->k, TMA_STRIDE_ALIGN,
			TMA_STRIDE_ALIGN / esize,
			gemm_dtype_to_string(spec->dtype));
	if (DIV_ROUND_UP(spec->n, k->tile.n) > GRID_Y_MAX)
		return gemmd_error_set(err, 422, "unsupported", "n",
				       "n=%llu needs more than %u tiles",
				       (unsigned long long)spec->n, GRID_Y_MAX);
	if (spec->cluster_x > k->cluster_x || spec->cluster_y > k->cluster_y)
		return gemmd_error_set(
			err, 422, "unsupported", "kernel.cluster",
			"cluster %ux%u: %s accepts clusters up to %ux%u",
			spec->cluster_x, spec->cluster_y, k->name, k->cluster_x,
			k->cluster_y);
	return 0;
}

static bool uses_cublaslt(const struct gemm_spec *spec)
{
	return spec->baseline == GEMM_BASELINE_CUBLAS ||
	       (spec->verify && spec->reference == GEMM_REFERENCE_CUBLAS);
}

uint64_t plan_memory_bytes(const struct gemm_spec *spec)
{
	uint64_t es = gemm_dtype_size(spec->dtype);
	uint64_t ws = uses_cublaslt(spec) ? PLAN_CUBLASLT_WORKSPACE : 0;

	return spec->m * spec->k * es + spec->n * spec->k * es +
	       spec->m * spec->n * es + spec->m * spec->n * sizeof(float) + ws;
}

int plan_check_baseline(const struct gemm_spec *spec, bool available,
			struct gemmd_error *err)
{
	if (available)
		return 0;
	if (spec->baseline == GEMM_BASELINE_CUBLAS)
		return gemmd_error_set(err, 422, "unsupported", "baseline",
				       "baseline \"cublas\" needs cuBLASLt, "
				       "which the GPU's worker could not load");
	if (spec->verify && spec->reference == GEMM_REFERENCE_CUBLAS)
		return gemmd_error_set(err, 422, "unsupported",
				       "verify.reference",
				       "reference \"cublas\" needs cuBLASLt, "
				       "which the GPU's worker could not load");
	return 0;
}

static bool device_has_cublaslt(json_t *dev)
{
	json_t *c = json_object_get(dev, "cublaslt");

	return json_is_true(json_object_get(c, "available"));
}

int plan_check_baseline_devices(const struct gemm_spec *spec, json_t *devices,
				struct gemmd_error *err)
{
	bool available = true;
	json_t *dev;
	size_t i;
	int r;

	json_array_foreach(devices, i, dev)
		if (spec->device < 0 || (size_t)spec->device == i)
			available = available && device_has_cublaslt(dev);
	r = plan_check_baseline(spec, available, err);
	json_decref(devices);
	return r;
}

static int check_memory(const struct gemm_spec *spec,
			const struct device_limits *dev,
			struct gemmd_error *err)
{
	uint64_t need = plan_memory_bytes(spec);

	if (!dev || !dev->memory_bytes || need <= dev->memory_bytes)
		return 0;
	return gemmd_error_set(err, 422, "too_large", "m",
			       "%llux%llux%llu needs %llu MiB of device "
			       "memory; the device has %llu MiB",
			       (unsigned long long)spec->m,
			       (unsigned long long)spec->n,
			       (unsigned long long)spec->k,
			       (unsigned long long)(need >> 20),
			       (unsigned long long)(dev->memory_bytes >> 20));
}

int plan_resolve(const struct catalog *cat, const struct gemm_spec *spec,
		 const struct device_limits *dev, struct gemm_plan *ret,
		 struct gemmd_error *err)
{
	unsigned int smem_limit = PLAN_SMEM_OPTIN_SM90;
	unsigned int sm_count = 132;
	const struct kernel_info *k;
	struct gemm_plan p = { 0 };
	unsigned int stages;
	int r;

	if (dev && dev->smem_optin)
		smem_limit = dev->smem_optin;
	if (dev && dev->sm_count)
		sm_count = dev->sm_count;

	k = pick_kernel(cat, spec, sm_count);
	if (!k)
		return no_kernel(spec, err);
	r = check_shape(k, spec, err);
	if (r < 0)
		return r;
	stages = spec->stages ? spec->stages : stages_that_fit(k, smem_limit);
	r = check_stages(k, stages, smem_limit, err);
	if (r < 0)
		return r;
	r = check_memory(spec, dev, err);
	if (r < 0)
		return r;

	snprintf(p.kernel, sizeof(p.kernel), "%s", k->name);
	snprintf(p.cubin, sizeof(p.cubin), "%s", k->cubin);
	p.grid[0] = (unsigned int)DIV_ROUND_UP(spec->m, k->tile.m);
	p.grid[1] = (unsigned int)DIV_ROUND_UP(spec->n, k->tile.n);
	p.grid[2] = 1;
	p.block[0] = k->threads;
	p.block[1] = p.block[2] = 1;
	p.cluster[0] = spec->cluster_x;
	p.cluster[1] = spec->cluster_y;
	p.cluster[2] = 1;
	p.stages = stages;
	p.smem_bytes = k->smem_fixed + stages * k->smem_stage;
	p.tile = k->tile;
	*ret = p;
	return 0;
}

/*
 * Budget each launch at 20 TFLOP/s (a tenth of a slow pipeline) plus a
 * fixed allowance for allocation, initialisation, the reference and the
 * cool-down, and cap it: a deadlocked pipeline must not hold a GPU for
 * long.  Under the stopping rule (no fixed iteration count) the timed
 * region may last max_time_ms of GPU time; flushes and host overhead can
 * triple that in wall time for tiny kernels.
 */
unsigned int plan_deadline_sec(const struct gemm_spec *spec)
{
	const bool baseline = spec->baseline != GEMM_BASELINE_NONE;
	double launches = 1.0 + spec->warmup + spec->iterations;
	/* the naive reference is about 50 times slower than our kernels */
	double ref = spec->verify ? 50.0 : 0.0;
	double sec;

	/* A baseline: as many launches again, and its algorithm trials. */
	if (baseline)
		launches = 2 * launches + PLAN_BASELINE_TRIAL_LAUNCHES;
	sec = gemm_flops(spec) * (launches + ref) / 20e12;
	if (!spec->iterations)
		sec += (baseline ? 6.0 : 3.0) * spec->max_time_ms / 1000.0;
	if (baseline)
		sec += 10.0; /* loading cuBLASLt, its first-call set-up */
	sec += spec->cooldown_ms / 1000.0;
	return (unsigned int)MIN(30.0 + sec, 600.0);
}

json_t *plan_to_json(const struct gemm_plan *p)
{
	return json_pack("{s:s, s:s, s:[i,i,i], s:[i,i,i], s:[i,i,i], s:i,"
			 " s:i, s:[i,i,i]}",
			 "kernel", p->kernel, "cubin", p->cubin, "grid",
			 p->grid[0], p->grid[1], p->grid[2], "block",
			 p->block[0], p->block[1], p->block[2], "cluster",
			 p->cluster[0], p->cluster[1], p->cluster[2],
			 "smem_bytes", p->smem_bytes, "stages", p->stages,
			 "tile", p->tile.m, p->tile.n, p->tile.k);
}

int plan_from_json(json_t *j, struct gemm_plan *ret)
{
	struct gemm_plan p = { 0 };
	const char *kernel, *cubin;
	json_error_t jerr;

	if (json_unpack_ex(j, &jerr, JSON_STRICT,
			   "{s:s, s:s, s:[iii], s:[iii], s:[iii], s:i, s:i,"
			   " s:[iii]}",
			   "kernel", &kernel, "cubin", &cubin, "grid",
			   &p.grid[0], &p.grid[1], &p.grid[2], "block",
			   &p.block[0], &p.block[1], &p.block[2], "cluster",
			   &p.cluster[0], &p.cluster[1], &p.cluster[2],
			   "smem_bytes", &p.smem_bytes, "stages", &p.stages,
			   "tile", &p.tile.m, &p.tile.n, &p.tile.k) < 0)
		return -EINVAL;
	if (strlen(kernel) >= sizeof(p.kernel) ||
	    strlen(cubin) >= sizeof(p.cubin))
		return -ENAMETOOLONG;
	strcpy(p.kernel, kernel);
	strcpy(p.cubin, cubin);
	*ret = p;
	return 0;
}
