// SPDX-License-Identifier: MIT
/*
 * plan.c - resolve a spec to a kernel and a launch.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gemm-abi.h"
#include "plan.h"
#include "spec.h"

/* TMA and 16-byte cp.async both need 16-byte aligned row pitches. */
#define ROW_ALIGN 16u
/* A grid's x dimension holds at most 2^31 - 1 blocks. */
#define GRID_X_MAX 0x7fffffffull
/* SMs assumed when the device is not known: an H100 SXM. */
#define SM_COUNT_DEFAULT 132
/* The swizzle the plan picks when the job leaves it open. */
#define SWIZZLE_AUTO 8u

/* The catalog's own terms: schedule, dtype, layout and, if asked, tile. */
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

static bool kernel_has_out(const struct kernel_info *k,
			   const struct gemm_spec *spec)
{
	return k->outs & KERNEL_BIT(spec->out);
}

/* "auto" takes what the kernel has: every kernel stores directly. */
static bool kernel_has_epilogue(const struct kernel_info *k,
				const struct gemm_spec *spec)
{
	return spec->epilogue == GEMM_EPILOGUE_AUTO ||
	       (k->epilogues & KERNEL_BIT(spec->epilogue));
}

/* PDL needs a kernel that waits for the grid before it. */
static bool kernel_has_pdl(const struct kernel_info *k,
			   const struct gemm_spec *spec)
{
	return !spec->pdl || k->pdl;
}

/* GPC placement needs a kernel built with it (its note says so). */
static bool kernel_has_placement(const struct kernel_info *k,
				 const struct gemm_spec *spec)
{
	return spec->placement != GEMM_PLACEMENT_GPC || k->placement;
}

/*
 * What the kernel must also offer: the output type, the epilogue, PDL,
 * placement and the cluster size, so that a tile picked for the job can
 * run it.
 */
static bool kernel_offers(const struct kernel_info *k,
			  const struct gemm_spec *spec)
{
	return kernel_has_out(k, spec) && kernel_has_epilogue(k, spec) &&
	       kernel_has_pdl(k, spec) && kernel_has_placement(k, spec) &&
	       spec->cluster_x * spec->cluster_y <= k->cluster_max;
}

/*
 * The stages of k that fit in smem_limit beside extra epilogue bytes, up
 * to what it is built for; unlimited: not capped by max_stages.
 */
static unsigned int stages_fit(const struct kernel_info *k, unsigned int extra,
			       unsigned int smem_limit, bool unlimited)
{
	uint64_t fixed = (uint64_t)k->smem_fixed + extra;
	uint64_t n;

	if (smem_limit <= fixed)
		return 0;
	n = (smem_limit - fixed) / k->smem_stage;
	if (!unlimited)
		n = MIN(n, (uint64_t)k->max_stages);
	return (unsigned int)MIN(n, (uint64_t)UINT32_MAX);
}

static unsigned int stages_that_fit(const struct kernel_info *k,
				    unsigned int extra, unsigned int smem_limit)
{
	return stages_fit(k, extra, smem_limit, false);
}

/*
 * Whether k can run the stages the job asked for (any, where it asked
 * for none): with the tma epilogue's bytes where the job names it, else
 * with direct stores, which "auto" falls back to.
 */
static bool kernel_takes_stages(const struct kernel_info *k,
				const struct gemm_spec *spec,
				unsigned int smem_limit)
{
	unsigned int extra =
		spec->epilogue == GEMM_EPILOGUE_TMA ? k->smem_epilogue : 0;

	return !spec->stages ||
	       (spec->stages >= k->min_stages &&
		spec->stages <= stages_that_fit(k, extra, smem_limit));
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
 * Where the job asked for a stage count, only among the kernels that can
 * run it (any_stages false); where none can, pick_stages() refuses the
 * one picked regardless (any_stages true), naming its limit.
 */
static const struct kernel_info *
pick_kernel(const struct catalog *cat, const struct gemm_spec *spec,
	    unsigned int sm_count, unsigned int smem_limit, bool any_stages)
{
	const struct kernel_info *best = NULL;
	size_t i;

	for (i = 0; i < catalog_size(cat); i++) {
		const struct kernel_info *k = catalog_get(cat, i);
		uint64_t area, best_area;
		bool fills, best_fills;

		if (!kernel_matches(k, spec) || !kernel_offers(k, spec) ||
		    (!any_stages && !kernel_takes_stages(k, spec, smem_limit)))
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

/* "ws kernel for bf16, layout tn[, tile 128x256x64]", for messages. */
static const char *describe(const struct gemm_spec *spec, char *buf, size_t len)
{
	char tile[32] = "";

	if (spec->tile.m)
		tile_format(&spec->tile, tile, sizeof(tile));
	snprintf(buf, len, "%s kernel for %s, layout %s%s%s",
		 gemm_schedule_to_string(spec->schedule),
		 gemm_dtype_to_string(spec->dtype),
		 gemm_layout_to_string(spec->layout),
		 spec->tile.m ? ", tile " : "", tile);
	return buf;
}

/*
 * No kernel of the schedule, dtype, layout and tile asked for: the tile
 * is named only where the schedule has kernels for that dtype and
 * layout; "layout nt" on a schedule built for tn alone is the
 * schedule's, whatever tile came with it.
 */
static int no_kernel_of_tile(const struct catalog *cat,
			     const struct gemm_spec *spec,
			     struct gemmd_error *err)
{
	struct gemm_spec any_tile = *spec;
	char what[96];
	size_t i;

	any_tile.tile.m = 0;
	for (i = 0; spec->tile.m && i < catalog_size(cat); i++) {
		if (!kernel_matches(catalog_get(cat, i), &any_tile))
			continue;
		describe(spec, what, sizeof(what));
		return gemmd_error_set(err, 422, "unsupported", "kernel.tile",
				       "no %s", what);
	}
	describe(&any_tile, what, sizeof(what));
	return gemmd_error_set(err, 422, "unsupported", "kernel.schedule",
			       "no %s", what);
}

/*
 * Why pick_kernel() found nothing: the first term that no kernel meets,
 * in the order kernel, output type, epilogue, PDL, placement, cluster.
 * For the cluster, the kernel that takes the largest one is named with its
 * limit.
 */
static int no_kernel(const struct catalog *cat, const struct gemm_spec *spec,
		     struct gemmd_error *err)
{
	const struct kernel_info *widest = NULL;
	bool any = false, out = false, epilogue = false, pdl = false;
	char what[96];
	size_t i;

	for (i = 0; i < catalog_size(cat); i++) {
		const struct kernel_info *k = catalog_get(cat, i);

		if (!kernel_matches(k, spec))
			continue;
		any = true;
		if (!kernel_has_out(k, spec))
			continue;
		out = true;
		if (!kernel_has_epilogue(k, spec))
			continue;
		epilogue = true;
		if (!kernel_has_pdl(k, spec))
			continue;
		pdl = true;
		if (kernel_has_placement(k, spec) &&
		    (!widest || k->cluster_max > widest->cluster_max))
			widest = k;
	}
	if (!any)
		return no_kernel_of_tile(cat, spec, err);
	describe(spec, what, sizeof(what));
	if (!out)
		return gemmd_error_set(err, 422, "unsupported", "out_dtype",
				       "no %s writes %s output", what,
				       gemm_dtype_to_string(spec->out));
	if (!epilogue)
		return gemmd_error_set(
			err, 422, "unsupported", "kernel.epilogue",
			"no %s has the %s epilogue with %s output", what,
			gemm_epilogue_to_string(spec->epilogue),
			gemm_dtype_to_string(spec->out));
	if (!pdl)
		return gemmd_error_set(err, 422, "unsupported", "kernel.pdl",
				       "no %s waits for the launch before it, "
				       "as programmatic dependent launch needs "
				       "(ws, cooperative and pingpong do)",
				       what);
	if (!widest)
		return gemmd_error_set(err, 422, "unsupported",
				       "kernel.placement",
				       "no %s is built with gpc placement "
				       "(ptxas spilled the claim beside "
				       "pingpong 128x192's 192 accumulators)",
				       what);
	return gemmd_error_set(err, 422, "unsupported", "kernel.cluster",
			       "cluster %ux%u is %u CTAs: %s accepts "
			       "clusters of at most %u",
			       spec->cluster_x, spec->cluster_y,
			       spec->cluster_x * spec->cluster_y, widest->name,
			       widest->cluster_max);
}

/* Shared memory the epilogue adds after the stage ring. */
static unsigned int epilogue_bytes(const struct kernel_info *k,
				   const struct gemm_spec *spec)
{
	return spec->epilogue == GEMM_EPILOGUE_TMA ? k->smem_epilogue : 0;
}

/*
 * The launch's shared memory.  Pingpong's consumers store in turn
 * through one set of staging buffers (its note's smem_epilogue), so each
 * drains its stores before handing the turn over; where the ring leaves
 * room for a second set they get one each and skip that wait, which
 * the kernel sees from its shared memory size (consumer_pingpong() in
 * kernels/sm90_gemm.cu).
 */
static unsigned int smem_bytes(const struct kernel_info *k,
			       const struct gemm_spec *spec,
			       unsigned int stages, unsigned int smem_limit)
{
	unsigned int ring = k->smem_fixed + stages * k->smem_stage;
	unsigned int epi = epilogue_bytes(k, spec);

	if (k->schedule == GEMM_SCHEDULE_PINGPONG &&
	    (uint64_t)ring + 2 * epi <= smem_limit)
		epi *= 2;
	return ring + epi;
}

/* The tma epilogue stores rows of D with TMA: 16-byte aligned rows. */
static bool tma_rows_ok(const struct gemm_spec *spec)
{
	return (spec->n * gemm_dtype_size(spec->out)) % ROW_ALIGN == 0;
}

/* Stages when the job leaves them open, beside extra epilogue bytes. */
static unsigned int default_stages(const struct kernel_info *k,
				   unsigned int extra, unsigned int smem_limit)
{
	return MIN(stages_that_fit(k, extra, smem_limit), PLAN_DEFAULT_STAGES);
}

/*
 * Whether the job is small enough for the deepest ring: a TMA ring
 * kernel (ws, cooperative, pingpong) with at most PLAN_DEEP_TILES_PER_SM
 * tiles per SM, so that each CTA has a tile or two and nothing but its
 * ring to hide the loads behind.
 */
static bool wants_deep_ring(const struct kernel_info *k,
			    const struct gemm_spec *spec, unsigned int sm_count)
{
	const bool ring = k->schedule == GEMM_SCHEDULE_WS ||
			  k->schedule == GEMM_SCHEDULE_COOPERATIVE ||
			  k->schedule == GEMM_SCHEDULE_PINGPONG;

	return ring &&
	       tiles_of(k, spec) <= (uint64_t)PLAN_DEEP_TILES_PER_SM * sm_count;
}

/*
 * The epilogue for "auto": tma where the kernel has it, rows of D are
 * 16-byte aligned and its staging buffers leave room for the stages the
 * job asked for, or by default for as many as direct stores would get.
 * The tma epilogue was the faster one in the best configuration of 10 of
 * the 11 shapes of the shapes table (docs/perf.md); otherwise direct.
 */
static enum gemm_epilogue pick_epilogue(const struct kernel_info *k,
					const struct gemm_spec *spec,
					unsigned int smem_limit)
{
	unsigned int tma = stages_that_fit(k, k->smem_epilogue, smem_limit);
	unsigned int want;

	if (spec->epilogue != GEMM_EPILOGUE_AUTO)
		return spec->epilogue;
	want = spec->stages ? spec->stages : default_stages(k, 0, smem_limit);
	if (!(k->epilogues & KERNEL_BIT(GEMM_EPILOGUE_TMA)) ||
	    !tma_rows_ok(spec) || tma < MAX(want, k->min_stages))
		return GEMM_EPILOGUE_DIRECT;
	return GEMM_EPILOGUE_TMA;
}

/*
 * Stages the job asked for, or by default the most that fit beside the
 * epilogue's bytes, up to PLAN_DEFAULT_STAGES unless deep (see
 * wants_deep_ring()).  The epilogue is picked first, for the capped
 * default, so a deep ring never costs the tma epilogue.  A kernel that
 * does not fit even with its fewest stages is refused on the epilogue
 * when that is what tips it over, on the stages otherwise.
 */
static int pick_stages(const struct kernel_info *k,
		       const struct gemm_spec *spec, unsigned int smem_limit,
		       bool deep, unsigned int *ret, struct gemmd_error *err)
{
	unsigned int extra = epilogue_bytes(k, spec);
	unsigned int fit = stages_that_fit(k, extra, smem_limit);
	unsigned int stages = spec->stages;
	bool fits_direct = stages_that_fit(k, 0, smem_limit) >= k->min_stages;
	char beside[64] = "";

	if (!stages)
		stages = deep ? fit : default_stages(k, extra, smem_limit);
	if (spec->stages && stages < k->min_stages)
		return gemmd_error_set(err, 422, "unsupported", "kernel.stages",
				       "%s needs at least %u stages, got %u",
				       k->name, k->min_stages, stages);
	if (extra)
		snprintf(beside, sizeof(beside), " and %u for the tma epilogue",
			 extra);
	if (!spec->stages && fit < k->min_stages)
		return gemmd_error_set(
			err, 422, "unsupported",
			extra && fits_direct ? "kernel.epilogue" :
					       "kernel.stages",
			"%s does not fit in %u bytes of shared memory: its "
			"fewest stages, %u of %u bytes, beside %u fixed%s",
			k->name, smem_limit, k->min_stages, k->smem_stage,
			k->smem_fixed, beside);
	if (stages > fit && stages > k->max_stages &&
	    stages <= stages_fit(k, extra, smem_limit, true))
		return gemmd_error_set(err, 422, "unsupported", "kernel.stages",
				       "%s is built for at most %u stages, "
				       "got %u",
				       k->name, k->max_stages, stages);
	if (stages > fit)
		return gemmd_error_set(
			err, 422, "unsupported", "kernel.stages",
			"%u stages of %u bytes do not fit: %s takes at most "
			"%u stages in %u bytes of shared memory, beside %u "
			"fixed%s",
			stages, k->smem_stage, k->name, fit, smem_limit,
			k->smem_fixed, beside);
	*ret = stages;
	return 0;
}

/*
 * The dimension that is the row pitch of A (b false) or B in memory:
 * K-major operands ("t" A, "n" B) have rows of k elements, an M-major A
 * rows of m, an N-major B rows of n.
 */
static const char *pitch_dim(enum gemm_layout l, bool b)
{
	if (!b)
		return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_TT ? "k" : "m";
	return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_NN ? "k" : "n";
}

static uint64_t dim_value(const struct gemm_spec *spec, const char *dim)
{
	switch (dim[0]) {
	case 'm':
		return spec->m;
	case 'n':
		return spec->n;
	default:
		return spec->k;
	}
}

static int check_pitch(const struct kernel_info *k,
		       const struct gemm_spec *spec, bool b,
		       struct gemmd_error *err)
{
	unsigned int esize = gemm_dtype_size(spec->dtype);
	const char *dim = pitch_dim(spec->layout, b);
	uint64_t x = dim_value(spec, dim);

	if ((x * esize) % ROW_ALIGN == 0)
		return 0;
	return gemmd_error_set(
		err, 422, "unsupported", dim,
		"%s=%llu: with layout %s, rows of %s are %s elements long, "
		"and %s needs them to be a multiple of %u bytes, so %s must "
		"be a multiple of %u for %s",
		dim, (unsigned long long)x, gemm_layout_to_string(spec->layout),
		b ? "B" : "A", dim, kernel_is_sm80(k) ? "cp.async" : "TMA",
		ROW_ALIGN, dim, ROW_ALIGN / esize,
		gemm_dtype_to_string(spec->dtype));
}

/*
 * Operands are read through TMA (or 16-byte cp.async on the sm_80
 * kernels), which needs 16-byte aligned rows; the sm_80 kernels also copy
 * whole 16-byte pieces along k.  The tma epilogue stores rows of D.
 */
static int check_alignment(const struct kernel_info *k,
			   const struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	unsigned int osize = gemm_dtype_size(spec->out);
	int r;

	r = check_pitch(k, spec, false, err);
	if (r >= 0)
		r = check_pitch(k, spec, true, err);
	if (r < 0)
		return r;
	if (kernel_is_sm80(k) && spec->k % 8)
		return gemmd_error_set(err, 422, "unsupported", "k",
				       "k=%llu: %s copies A and B in 16-byte "
				       "pieces along k (cp.async), so k must "
				       "be a multiple of 8",
				       (unsigned long long)spec->k, k->name);
	if (spec->epilogue == GEMM_EPILOGUE_TMA && !tma_rows_ok(spec))
		return gemmd_error_set(
			err, 422, "unsupported", "kernel.epilogue",
			"n=%llu: the tma epilogue stores rows of D with TMA, "
			"which must be a multiple of %u bytes, so n must be a "
			"multiple of %u for %s output; the direct epilogue "
			"has no such limit",
			(unsigned long long)spec->n, ROW_ALIGN,
			ROW_ALIGN / osize, gemm_dtype_to_string(spec->out));
	return 0;
}

/*
 * The work order when the job leaves it open (kernels/sched.cuh):
 *   raster: walk the shorter side of the grid of work units, so that the
 *     units running at one time cover a squarer block of D: along_m when
 *     units_n >= units_m, else along_n.
 *   swizzle: bands 8 units wide when the CTAs outnumber the SMs (so that
 *     one wave does not cover D and the order matters for L2) and there
 *     are at least 8 units across the band; otherwise 1 (plain order).
 * First guesses, to be tuned against measurements.
 */
static void pick_order(const struct gemm_spec *spec, uint64_t units_m,
		       uint64_t units_n, unsigned int sm_count,
		       struct gemm_plan *p)
{
	uint64_t ctas = units_m * units_n * spec->cluster_x * spec->cluster_y;
	uint64_t across;

	p->raster = spec->raster;
	if (p->raster == GEMM_RASTER_AUTO)
		p->raster = units_n >= units_m ? GEMM_RASTER_ALONG_M :
						 GEMM_RASTER_ALONG_N;
	across = p->raster == GEMM_RASTER_ALONG_M ? units_n : units_m;
	p->swizzle = spec->swizzle;
	if (!p->swizzle)
		p->swizzle = ctas > sm_count && across >= SWIZZLE_AUTO ?
				     SWIZZLE_AUTO :
				     1;
}

/*
 * The launch (kernels/gemm-abi.h): the tile grid rounded up to whole
 * clusters of cluster_x x cluster_y tiles, one work unit per cluster,
 * grid (cluster_x * units, cluster_y, 1).  A persistent kernel gets the
 * full figure too; the worker cuts grid[0] down to what fits at once.
 */
static int plan_geometry(const struct kernel_info *k,
			 const struct gemm_spec *spec, unsigned int sm_count,
			 struct gemm_plan *p, struct gemmd_error *err)
{
	uint64_t tiles_m = DIV_ROUND_UP(spec->m, k->tile.m);
	uint64_t tiles_n = DIV_ROUND_UP(spec->n, k->tile.n);
	uint64_t units_m = DIV_ROUND_UP(tiles_m, spec->cluster_x);
	uint64_t units_n = DIV_ROUND_UP(tiles_n, spec->cluster_y);
	uint64_t units = units_m * units_n;

	if (units * spec->cluster_x > GRID_X_MAX)
		return gemmd_error_set(err, 422, "unsupported", "kernel.tile",
				       "%llux%llu in %ux%u tiles needs %llu "
				       "clusters, more than a grid holds",
				       (unsigned long long)spec->m,
				       (unsigned long long)spec->n, k->tile.m,
				       k->tile.n, (unsigned long long)units);
	p->grid[0] = (unsigned int)(units * spec->cluster_x);
	p->grid[1] = spec->cluster_y;
	p->grid[2] = 1;
	p->block[0] = k->threads;
	p->block[1] = p->block[2] = 1;
	p->cluster[0] = spec->cluster_x;
	p->cluster[1] = spec->cluster_y;
	p->cluster[2] = 1;
	p->persistent = k->persistent;
	p->units = units;
	pick_order(spec, units_m, units_n, sm_count, p);
	return 0;
}

bool plan_reads_c(const struct gemm_spec *spec)
{
	return fpclassify(spec->beta) != FP_ZERO;
}

/* Both baselines are cuBLASLt; so is the "cublas" reference. */
static bool uses_cublaslt(const struct gemm_spec *spec)
{
	return spec->baseline != GEMM_BASELINE_NONE ||
	       (spec->verify && spec->reference == GEMM_REFERENCE_CUBLAS);
}

/*
 * The worker makes the fp32 reference only for a verified job
 * (run_ref_buffer()); one kept from an earlier job is freed when memory
 * runs short, so an unverified job is not charged for it.
 */
uint64_t plan_memory_bytes(const struct gemm_spec *spec)
{
	uint64_t es = gemm_dtype_size(spec->dtype);
	uint64_t os = gemm_dtype_size(spec->out);
	uint64_t mn = spec->m * spec->n;
	uint64_t c = plan_reads_c(spec) ? mn * os : 0;
	uint64_t ref = spec->verify ? mn * sizeof(float) : 0;
	uint64_t ws = uses_cublaslt(spec) ? PLAN_CUBLASLT_WORKSPACE : 0;

	return spec->m * spec->k * es + spec->n * spec->k * es + mn * os + c +
	       ref + ws;
}

int plan_check_baseline(const struct gemm_spec *spec, bool available,
			struct gemmd_error *err)
{
	if (available)
		return 0;
	if (spec->baseline != GEMM_BASELINE_NONE)
		return gemmd_error_set(err, 422, "unsupported", "baseline",
				       "baseline \"%s\" needs cuBLASLt, "
				       "which the GPU's worker could not load",
				       gemm_baseline_to_string(spec->baseline));
	if (spec->verify && spec->reference == GEMM_REFERENCE_CUBLAS)
		return gemmd_error_set(err, 422, "unsupported",
				       "verify.reference",
				       "reference \"cublas\" needs cuBLASLt, "
				       "which the GPU's worker could not load");
	return 0;
}

/* "9.0" as 90; 0 for anything else. */
static unsigned int parse_cc(const char *s)
{
	unsigned int major, minor;
	char end;

	if (!s || sscanf(s, "%2u.%1u%c", &major, &minor, &end) != 2)
		return 0;
	return major * 10 + minor;
}

void device_limits_from_json(const json_t *dev, struct device_limits *ret)
{
	json_int_t sms = 0, smem = 0, mem = 0, l2 = 0;
	json_t *lt = json_object_get(dev, "cublaslt");

	json_unpack((json_t *)dev, "{s?I, s?I, s?I, s?I}", "sm_count", &sms,
		    "max_smem_per_block_optin", &smem, "memory_bytes", &mem,
		    "l2_bytes", &l2);
	ret->sm_count = (unsigned int)sms;
	ret->smem_optin = (unsigned int)smem;
	ret->memory_bytes = (uint64_t)mem;
	ret->l2_bytes = l2 > 0 ? (uint64_t)l2 : 0;
	ret->cc = parse_cc(
		json_string_value(json_object_get(dev, "compute_capability")));
	ret->cublaslt = json_is_true(json_object_get(lt, "available"));
}

void device_limits_merge(struct device_limits *acc,
			 const struct device_limits *l)
{
	const bool cublaslt = acc->cublaslt && l->cublaslt;
	const unsigned int cc = acc->cc == l->cc ? acc->cc : 0;
	const uint64_t l2 = MAX(acc->l2_bytes, l->l2_bytes);

	if (l->memory_bytes < acc->memory_bytes)
		*acc = *l;
	acc->cublaslt = cublaslt;
	acc->cc = cc;
	acc->l2_bytes = l2;
}

/*
 * A cubin built for sm_90a (configure.ac's -gencode) runs on compute
 * capability 9.0 only: code with the arch-specific features loads on its
 * own version and no other.  The ELF header does not tell sm_90a from
 * sm_90 (which would also run on a later 9.x), so the version must be
 * the same.  Refused here, where a launch would fail to load the module.
 */
static int check_target(const struct kernel_info *k,
			const struct device_limits *dev,
			struct gemmd_error *err)
{
	if (!dev || !dev->cc || !k->sm || dev->cc == k->sm)
		return 0;
	return gemmd_error_set(err, 422, "unsupported", "device",
			       "%s is built for sm_%u, which a GPU of "
			       "compute capability %u.%u cannot run",
			       k->name, k->sm, dev->cc / 10, dev->cc % 10);
}

uint64_t plan_flush_bytes(uint64_t l2_bytes)
{
	return l2_bytes ? 2 * l2_bytes : PLAN_L2_FLUSH_FALLBACK;
}

/*
 * What the worker allocates beside the operands: stream-K's workspace, a
 * slot and a flag for each CTA of a grid of at most one CTA per SM
 * (run_workspace()), and cold timing's flush buffer.
 */
static uint64_t scratch_bytes(const struct kernel_info *k,
			      const struct gemm_spec *spec,
			      const struct device_limits *dev,
			      unsigned int sm_count)
{
	uint64_t n = 0;

	if (spec->decomposition == GEMM_DECOMP_STREAM_K)
		n += GEMMD_SK_WORKSPACE_BYTES(sm_count, k->tile.m, k->tile.n);
	if (spec->timing_mode == GEMM_TIMING_COLD)
		n += plan_flush_bytes(dev->l2_bytes);
	return n;
}

/* The largest of m, n and k, by name: the one to cut first. */
static const char *largest_dim(const struct gemm_spec *spec)
{
	if (spec->m >= spec->n && spec->m >= spec->k)
		return "m";
	return spec->n >= spec->k ? "n" : "k";
}

static int check_memory(const struct kernel_info *k,
			const struct gemm_spec *spec,
			const struct device_limits *dev, unsigned int sm_count,
			struct gemmd_error *err)
{
	uint64_t need;

	if (!dev || !dev->memory_bytes)
		return 0;
	need = plan_memory_bytes(spec) + scratch_bytes(k, spec, dev, sm_count);

	if (need <= dev->memory_bytes)
		return 0;
	return gemmd_error_set(err, 422, "too_large", largest_dim(spec),
			       "%llux%llux%llu needs %llu MiB of device "
			       "memory; the device has %llu MiB",
			       (unsigned long long)spec->m,
			       (unsigned long long)spec->n,
			       (unsigned long long)spec->k,
			       (unsigned long long)(need >> 20),
			       (unsigned long long)(dev->memory_bytes >> 20));
}

/*
 * cuBLASLt has no GEMM from one 16-bit type into the other (bf16 in, fp16
 * out or the reverse), so such a baseline cannot run; as a reference it
 * can, since the reference is always computed in fp32.
 */
static int check_baseline_types(const struct gemm_spec *spec,
				struct gemmd_error *err)
{
	if (spec->baseline == GEMM_BASELINE_NONE ||
	    spec->out == GEMM_DTYPE_FP32 || spec->out == spec->dtype)
		return 0;
	return gemmd_error_set(err, 422, "unsupported", "baseline",
			       "baseline \"%s\": cuBLASLt has no %s GEMM "
			       "with %s output",
			       gemm_baseline_to_string(spec->baseline),
			       gemm_dtype_to_string(spec->dtype),
			       gemm_dtype_to_string(spec->out));
}

static bool takes_decomposition(enum gemm_schedule s,
				const struct gemm_spec *spec)
{
	return gemm_schedule_has_decomposition(s, spec->decomposition);
}

static bool takes_placement(enum gemm_schedule s, const struct gemm_spec *spec)
{
	return gemm_schedule_has_placement(s, spec->placement);
}

static bool takes_occupancy(enum gemm_schedule s, const struct gemm_spec *spec)
{
	return gemm_schedule_has_occupancy(s, spec->occupancy);
}

/* "a or b": the schedules that take what the spec asks, for a message. */
static void schedules_that(bool (*takes)(enum gemm_schedule,
					 const struct gemm_spec *),
			   const struct gemm_spec *spec, char *buf, size_t len)
{
	size_t used = 0;
	int i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < _GEMM_SCHEDULE_MAX && used < len; i++) {
		if (!takes(i, spec))
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 n++ ? " or " : "",
					 gemm_schedule_to_string(i));
	}
}

/*
 * The decomposition is the schedule's to offer, whatever the kernel
 * (gemm_schedule_has_decomposition()): refused before a kernel is
 * looked for, so the job hears of the rule and not of a missing tile.
 * The schedules that offer it are named from the rule itself.
 */
static int check_decomposition(const struct gemm_spec *spec,
			       struct gemmd_error *err)
{
	char need[96];

	if (gemm_schedule_has_decomposition(spec->schedule,
					    spec->decomposition))
		return 0;
	schedules_that(takes_decomposition, spec, need, sizeof(need));
	return gemmd_error_set(
		err, 422, "unsupported", "kernel.decomposition",
		"%s needs the %s schedule, not %s",
		gemm_decomposition_to_string(spec->decomposition), need,
		gemm_schedule_to_string(spec->schedule));
}

/*
 * The placement is the schedule's to offer too
 * (gemm_schedule_has_placement()): GPC claims need clusters that stay
 * resident and walk the work order, refused for any other schedule before
 * a kernel is looked for, as check_decomposition() does.
 */
static int check_placement(const struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	char need[96];

	/* The stream-K entries have no placement (kernels/gemm-abi.h). */
	if (spec->placement == GEMM_PLACEMENT_GPC &&
	    spec->decomposition == GEMM_DECOMP_STREAM_K)
		return gemmd_error_set(err, 422, "unsupported",
				       "kernel.placement",
				       "gpc placement needs the data_parallel "
				       "decomposition, not stream_k");
	if (gemm_schedule_has_placement(spec->schedule, spec->placement))
		return 0;
	schedules_that(takes_placement, spec, need, sizeof(need));
	return gemmd_error_set(err, 422, "unsupported", "kernel.placement",
			       "%s placement needs the %s schedule, not %s",
			       gemm_placement_to_string(spec->placement), need,
			       gemm_schedule_to_string(spec->schedule));
}

/*
 * "balanced" cuts a persistent kernel's grid to whole waves of work
 * units: refused where there are no units to balance (the kernels that
 * are not persistent) or where every cluster that fits must run
 * (stream-K deals its k-tiles out to all of them).
 */
static int check_occupancy(const struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	char need[96];

	if (spec->occupancy == GEMM_OCCUPANCY_BALANCED &&
	    spec->decomposition == GEMM_DECOMP_STREAM_K)
		return gemmd_error_set(err, 422, "unsupported",
				       "kernel.occupancy",
				       "balanced occupancy needs the "
				       "data_parallel decomposition: stream_k "
				       "deals its k-tiles out to every cluster "
				       "that fits");
	if (gemm_schedule_has_occupancy(spec->schedule, spec->occupancy))
		return 0;
	schedules_that(takes_occupancy, spec, need, sizeof(need));
	return gemmd_error_set(err, 422, "unsupported", "kernel.occupancy",
			       "%s occupancy needs the %s schedule, not %s",
			       gemm_occupancy_to_string(spec->occupancy), need,
			       gemm_schedule_to_string(spec->schedule));
}

/* "auto": balanced wherever check_occupancy() would take it. */
static enum gemm_occupancy pick_occupancy(const struct gemm_spec *spec,
					  const struct gemm_plan *p)
{
	if (spec->occupancy != GEMM_OCCUPANCY_AUTO)
		return spec->occupancy;
	return p->persistent && spec->decomposition ==
					GEMM_DECOMP_DATA_PARALLEL ?
		       GEMM_OCCUPANCY_BALANCED :
		       GEMM_OCCUPANCY_FULL;
}

/*
 * The function in the kernel's cubin (kernels/gemm-abi.h): stream-K has
 * an entry of its own, and the common epilogue, TMA stores of D in the
 * input type without C, one with only that in it where the kernel has
 * one: a fraction of the code, and faster on short jobs.
 */
static void pick_entry(const struct kernel_info *k, const struct gemm_spec *s,
		       struct gemm_plan *p)
{
	const char *suffix = "";

	if (s->decomposition == GEMM_DECOMP_STREAM_K)
		suffix = GEMMD_SK_ENTRY_SUFFIX;
	else if (kernel_has_packed_entry(k) &&
		 s->epilogue == GEMM_EPILOGUE_TMA && s->out == k->dtype &&
		 !plan_reads_c(s))
		suffix = GEMMD_PACKED_ENTRY_SUFFIX;
	snprintf(p->entry, sizeof(p->entry), "%s%s", k->name, suffix);
}

int plan_resolve(const struct catalog *cat, const struct gemm_spec *spec,
		 const struct device_limits *dev, struct gemm_plan *ret,
		 struct gemmd_error *err)
{
	unsigned int smem_limit = PLAN_SMEM_OPTIN_SM90;
	unsigned int sm_count = SM_COUNT_DEFAULT;
	const struct kernel_info *k;
	struct gemm_spec s = *spec; /* with "auto" resolved */
	struct gemm_plan p;
	unsigned int stages = 0;
	int r;

	memset(&p, 0, sizeof(p));
	if (dev && dev->smem_optin)
		smem_limit = dev->smem_optin;
	if (dev && dev->sm_count)
		sm_count = dev->sm_count;

	r = check_decomposition(spec, err);
	if (r >= 0)
		r = check_placement(spec, err);
	if (r >= 0)
		r = check_occupancy(spec, err);
	if (r < 0)
		return r;
	k = pick_kernel(cat, spec, sm_count, smem_limit, false);
	if (!k)
		k = pick_kernel(cat, spec, sm_count, smem_limit, true);
	if (!k)
		return no_kernel(cat, spec, err);
	s.epilogue = pick_epilogue(k, spec, smem_limit);
	r = check_target(k, dev, err);
	if (r >= 0)
		r = check_alignment(k, &s, err);
	if (r >= 0)
		r = check_baseline_types(&s, err);
	if (r >= 0)
		r = pick_stages(k, &s, smem_limit,
				wants_deep_ring(k, &s, sm_count), &stages, err);
	if (r >= 0)
		r = plan_geometry(k, &s, sm_count, &p, err);
	if (r >= 0)
		r = check_memory(k, &s, dev, sm_count, err);
	if (r < 0)
		return r;

	snprintf(p.kernel, sizeof(p.kernel), "%s", k->name);
	snprintf(p.cubin, sizeof(p.cubin), "%s", k->cubin);
	snprintf(p.digest, sizeof(p.digest), "%s", k->digest);
	p.stages = stages;
	p.epilogue = s.epilogue;
	p.decomposition = s.decomposition;
	p.placement = s.placement;
	p.occupancy = pick_occupancy(&s, &p);
	pick_entry(k, &s, &p);
	p.smem_bytes = smem_bytes(k, &s, stages, smem_limit);
	p.tile = k->tile;
	*ret = p;
	return 0;
}

/*
 * Budget each launch at 20 TFLOP/s (a tenth of a slow pipeline; of whole
 * waves, gemm_flops_budget(), so that a few tiles with a long K on a
 * few SMs get as long as a full GPU's wave would) plus a
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

	/*
	 * A baseline: as many launches again and, when it picks the fastest
	 * algorithm, the trials (the default one runs heuristic #0 as is).
	 */
	if (baseline)
		launches = 2 * launches;
	if (spec->baseline == GEMM_BASELINE_CUBLAS)
		launches += PLAN_BASELINE_TRIAL_LAUNCHES;
	sec = gemm_flops_budget(spec) * (launches + ref) / 20e12;
	/* a fixed count of samples of a tiny kernel: their batches, flushes */
	if (spec->iterations)
		sec += (baseline ? 2.0 : 1.0) * spec->iterations *
		       PLAN_SAMPLE_FLOOR_US / 1e6;
	if (!spec->iterations)
		sec += (baseline ? 6.0 : 3.0) * spec->max_time_ms / 1000.0;
	if (baseline)
		sec += 10.0; /* loading cuBLASLt, its first-call set-up */
	sec += spec->cooldown_ms / 1000.0;
	/* separate: a cool-down before ours and before the baseline too */
	if (baseline && spec->baseline_order == GEMM_ORDER_SEPARATE)
		sec += 2.0 * spec->cooldown_ms / 1000.0;
	/* job-timeout-max caps it; a day keeps the sum in range. */
	return (unsigned int)MIN(30.0 + sec, 86400.0);
}

json_t *plan_to_json(const struct gemm_plan *p)
{
	return json_pack(
		"{s:s, s:s, s:s, s:[i,i,i], s:[i,i,i], s:[i,i,i], s:i,"
		" s:i, s:[i,i,i], s:s, s:i, s:s, s:s, s:s, s:s, s:b, s:I,"
		" s:o}",
		"kernel", p->kernel, "entry", p->entry, "cubin", p->cubin,
		"grid", p->grid[0], p->grid[1], p->grid[2], "block",
		p->block[0], p->block[1], p->block[2], "cluster", p->cluster[0],
		p->cluster[1], p->cluster[2], "smem_bytes", p->smem_bytes,
		"stages", p->stages, "tile", p->tile.m, p->tile.n, p->tile.k,
		"raster", gemm_raster_to_string(p->raster), "swizzle",
		p->swizzle, "epilogue", gemm_epilogue_to_string(p->epilogue),
		"decomposition", gemm_decomposition_to_string(p->decomposition),
		"placement", gemm_placement_to_string(p->placement),
		"occupancy", gemm_occupancy_to_string(p->occupancy),
		"persistent", p->persistent, "units", (json_int_t)p->units,
		"digest", p->digest[0] ? json_string(p->digest) : json_null());
}

/* The cubin's digest: absent or null when the catalog had none. */
static int digest_from_json(json_t *j, struct gemm_plan *p)
{
	const char *v;

	if (!j || json_is_null(j))
		return 0;
	v = json_string_value(j);
	if (!v || strlen(v) >= sizeof(p->digest))
		return -EINVAL;
	strcpy(p->digest, v);
	return 0;
}

/* The work order as the kernels take it: resolved, never "auto". */
static int order_from_json(const char *raster, unsigned int swizzle,
			   const char *epilogue, struct gemm_plan *p)
{
	int r = gemm_raster_from_string(raster);
	int e = gemm_epilogue_from_string(epilogue);

	if (r < 0 || r == GEMM_RASTER_AUTO || e < 0 ||
	    (swizzle != 1 && swizzle != 2 && swizzle != 4 && swizzle != 8))
		return -EINVAL;
	p->raster = r;
	p->epilogue = e;
	p->swizzle = swizzle;
	return 0;
}

/*
 * Stream-K cuts tiles among the clusters of a persistent kernel: a plan
 * that is not persistent cannot carry it.
 */
static int decomposition_from_json(const char *decomposition,
				   struct gemm_plan *p)
{
	int d = gemm_decomposition_from_string(decomposition);

	if (d < 0 || (d == GEMM_DECOMP_STREAM_K && !p->persistent))
		return -EINVAL;
	p->decomposition = d;
	return 0;
}

/*
 * GPC placement orders the clusters of a persistent kernel: a plan that
 * is not persistent cannot carry it either.
 */
static int placement_from_json(const char *placement, struct gemm_plan *p)
{
	int x = gemm_placement_from_string(placement);

	if (x < 0 ||
	    (x == GEMM_PLACEMENT_GPC &&
	     (!p->persistent || p->decomposition != GEMM_DECOMP_DATA_PARALLEL)))
		return -EINVAL;
	p->placement = x;
	return 0;
}

/*
 * Whole waves need work units to balance: a persistent, data-parallel
 * plan; "auto" is the job's, never the plan's.
 */
static int occupancy_from_json(const char *occupancy, struct gemm_plan *p)
{
	int x = gemm_occupancy_from_string(occupancy);

	if (x < 0 || x == GEMM_OCCUPANCY_AUTO ||
	    (x == GEMM_OCCUPANCY_BALANCED &&
	     (!p->persistent || p->decomposition != GEMM_DECOMP_DATA_PARALLEL)))
		return -EINVAL;
	p->occupancy = x;
	return 0;
}

int plan_from_json(json_t *j, struct gemm_plan *ret)
{
	const char *kernel, *entry, *cubin, *raster, *epilogue, *decomposition;
	const char *placement, *occupancy;
	json_t *digest = NULL;
	struct gemm_plan p;
	json_error_t jerr;
	json_int_t units;
	int swizzle, persistent;

	memset(&p, 0, sizeof(p));
	if (json_unpack_ex(j, &jerr, JSON_STRICT,
			   "{s:s, s:s, s:s, s:[iii], s:[iii], s:[iii], s:i,"
			   " s:i, s:[iii], s:s, s:i, s:s, s:s, s:s, s:s, s:b,"
			   " s:I, s?o}",
			   "kernel", &kernel, "entry", &entry, "cubin", &cubin,
			   "grid", &p.grid[0], &p.grid[1], &p.grid[2], "block",
			   &p.block[0], &p.block[1], &p.block[2], "cluster",
			   &p.cluster[0], &p.cluster[1], &p.cluster[2],
			   "smem_bytes", &p.smem_bytes, "stages", &p.stages,
			   "tile", &p.tile.m, &p.tile.n, &p.tile.k, "raster",
			   &raster, "swizzle", &swizzle, "epilogue", &epilogue,
			   "decomposition", &decomposition, "placement",
			   &placement, "occupancy", &occupancy, "persistent",
			   &persistent, "units", &units, "digest", &digest) < 0)
		return -EINVAL;
	if (strlen(kernel) >= sizeof(p.kernel) ||
	    strlen(entry) >= sizeof(p.entry) ||
	    strlen(cubin) >= sizeof(p.cubin))
		return -ENAMETOOLONG;
	p.persistent = persistent;
	if (units < 1 || swizzle < 1 ||
	    order_from_json(raster, (unsigned int)swizzle, epilogue, &p) < 0 ||
	    decomposition_from_json(decomposition, &p) < 0 ||
	    placement_from_json(placement, &p) < 0 ||
	    occupancy_from_json(occupancy, &p) < 0 ||
	    digest_from_json(digest, &p) < 0)
		return -EINVAL;
	strcpy(p.kernel, kernel);
	strcpy(p.entry, entry);
	strcpy(p.cubin, cubin);
	p.units = (uint64_t)units;
	*ret = p;
	return 0;
}
