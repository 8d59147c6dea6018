/* SPDX-License-Identifier: MIT */
/*
 * plan.h - can this spec run here, and how: pick the kernel from the
 * catalog and derive the launch (grid, block, cluster, shared memory) and
 * the work order (raster, swizzle, decomposition, placement) the kernel is
 * handed.
 *
 * Everything a launch could fail on is checked here, so that a job the
 * daemon accepts does not fail at launch: a spec that is valid JSON but
 * cannot run gets a 422 naming the field and the reason.
 */
#pragma once

#include <jansson.h>

#include "catalog.h"
#include "gemm.h"
#include "util.h"

/* What planning needs to know of a device; zeros mean "not known". */
struct device_limits {
	unsigned int sm_count;
	unsigned int smem_optin; /* max dynamic shared memory per block */
	uint64_t memory_bytes;
	uint64_t l2_bytes; /* sizes cold timing's flush buffer */
	unsigned int cc; /* compute capability, 90 for 9.0 */
	bool cublaslt; /* the device's worker could load cuBLASLt */
};

/*
 * The limits of one device, from its JSON as the worker's probe reports
 * it ("sm_count", "max_smem_per_block_optin", "memory_bytes",
 * "l2_bytes", "compute_capability": "9.0", "cublaslt": {"available": bool}); a
 * missing key reads as not known, or for cuBLASLt as not available.
 */
void device_limits_from_json(const json_t *dev, struct device_limits *ret);

/*
 * Fold l into acc for a job that may land on either device: the limits
 * of the one with less memory (but the larger L2), cuBLASLt only if both
 * have it, and the compute capability only if both have the same.
 */
void device_limits_merge(struct device_limits *acc,
			 const struct device_limits *l);

/* The H100/H200 opt-in limit: 227 KiB of dynamic shared memory. */
#define PLAN_SMEM_OPTIN_SM90 232448u

int plan_resolve(const struct catalog *cat, const struct gemm_spec *spec,
		 const struct device_limits *dev, struct gemm_plan *ret,
		 struct gemmd_error *err);

/* The cuBLASLt workspace of a baseline or cuBLASLt reference run. */
#define PLAN_CUBLASLT_WORKSPACE (32u << 20)
/*
 * Cold timing's flush buffer: twice the L2, so that nothing of A, B or D
 * is left in it; this much where the L2's size is not known.
 */
#define PLAN_L2_FLUSH_FALLBACK (64u << 20)
uint64_t plan_flush_bytes(uint64_t l2_bytes);
/*
 * Stages when the job leaves them open: the most that fit, up to this
 * many.  In the 8192^3 design table (docs/perf.md) more stages never
 * helped with direct stores: 128x128 tiles fell from 599 TFLOP/s at 4
 * to 506 at 7, the multistage kernel from 402 at 4 to 282 at 14.  With
 * the TMA epilogue deeper rings measured 7 % faster to 10 % slower by
 * kernel and shape (session 9), no rule to change the default on.
 */
#define PLAN_DEFAULT_STAGES 4u
/*
 * Except for jobs of at most this many tiles per SM, which get the most
 * stages that fit: 128x8192x8192 with pingpong 64x128 ran at 349 TFLOP/s
 * with 9 stages against 283 with 4, 2048^3 with cooperative 128x128 at
 * 555 with 6 against 500 (H200, docs/perf.md).
 */
#define PLAN_DEEP_TILES_PER_SM 2u
/* Launches baseline "cublas" spends picking its algorithm (8 tried). */
#define PLAN_BASELINE_TRIAL_LAUNCHES 64

/*
 * The least wall time a timed sample takes, per side: a batch lasts at
 * least STATS_BATCH_US, and cold mode writes twice the L2 before it.
 * 128^3 with 100000 cold samples took 79 us a sample (docs/perf.md,
 * session 43, run 2), which the per-launch FLOP budget counts as nothing.
 */
#define PLAN_SAMPLE_FLOOR_US 100.0

/*
 * A job that asks for cuBLASLt (baseline "cublas" or "cublas_default",
 * or verify.reference "cublas") needs a device whose worker reported
 * it: 422 "unsupported" naming the field otherwise.  available: whether
 * it did (device_limits.cublaslt).
 */
int plan_check_baseline(const struct gemm_spec *spec, bool available,
			struct gemmd_error *err);

/* Whether the kernel reads C: beta is not zero. */
bool plan_reads_c(const struct gemm_spec *spec);

/*
 * Device memory a job allocates: A and B (dtype), D and, when beta is not
 * zero, C (out_dtype), the fp32 reference when the job is verified and,
 * when cuBLASLt is used, its workspace.
 */
uint64_t plan_memory_bytes(const struct gemm_spec *spec);

/* Seconds a job may run before its worker is killed: from its size, capped. */
unsigned int plan_deadline_sec(const struct gemm_spec *spec);

json_t *plan_to_json(const struct gemm_plan *plan);
int plan_from_json(json_t *j, struct gemm_plan *ret);
