/* SPDX-License-Identifier: MIT */
/*
 * gemm-abi.h - kernel parameter blocks shared by the .cu files and the
 * worker's C code.
 *
 * Every struct here is passed by value as a kernel parameter (or, for the
 * compare statistics, lives in device memory and is copied back), so it
 * must have the same layout under gcc and nvcc: fixed-width members only,
 * naturally aligned, explicit padding, sizes checked below.
 */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
#define GEMMD_STATIC_ASSERT(e, msg) static_assert(e, msg)
#else
#define GEMMD_STATIC_ASSERT(e, msg) _Static_assert(e, msg)
#endif

/* Barrier pairs reserved in shared memory: the run-time stage limit. */
#define GEMMD_MAX_STAGES 16
/* Opt-in dynamic shared memory per block on SM90 (227 KiB). */
#define GEMMD_SMEM_LIMIT 232448
/*
 * Shared memory besides the stage ring: 2 * GEMMD_MAX_STAGES mbarriers
 * (256 B) rounded up to 1 KiB, plus 1 KiB of slack so the ring can start
 * on a 1024-B boundary (128B-swizzle atoms) wherever the dynamic window
 * begins.
 */
#define GEMMD_SMEM_FIXED 2048
/* Threads of a ws kernel: 1 producer + 2 consumer warpgroups. */
#define GEMMD_WS_THREADS 384
/* bf16 and fp16 NaN pattern that no conversion produces: "not written". */
#define GEMMD_POISON_U16 0xffffu

/* Init distributions (gemmd_init_*). */
#define GEMMD_DIST_NORMAL 0u /* N(0, 1), Box-Muller */
#define GEMMD_DIST_UNIFORM 1u /* [-1, 1) */
#define GEMMD_DIST_RANDINT 2u /* integers in [-2, 2] */

/* Streams of one seed: A and B must not be the same matrix. */
#define GEMMD_STREAM_A 1u
#define GEMMD_STREAM_B 2u

/*
 * The ws GEMM kernels: D[m][n] = sum_k A[m][k] * B[n][k], D row-major with
 * leading dimension ldd (elements).  stages is the ring depth, 1 <=
 * stages <= GEMMD_MAX_STAGES, and the launch must give the kernel
 * GEMMD_SMEM_FIXED + stages * smem_stage bytes of dynamic shared memory.
 */
struct gemm_args {
	uint64_t d; /* device pointer to D */
	uint32_t m, n, k;
	uint32_t ldd;
	uint32_t stages;
	uint32_t reserved;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_args) == 32, "gemm_args layout");

/* gemmd_init_{bf16,fp16}: p[i] = dist(hash(seed, stream, i)). */
struct gemm_init_args {
	uint64_t p;
	uint64_t count;
	uint64_t seed;
	uint32_t stream;
	uint32_t dist;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_init_args) == 32, "init layout");

/* gemmd_fill_u16: p[i] = value, for poisoning D. */
struct gemm_fill_args {
	uint64_t p;
	uint64_t count;
	uint32_t value;
	uint32_t reserved;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_fill_args) == 24, "fill layout");

/* gemmd_ref_{bf16,fp16}_tn: r (fp32, row-major m x n) = A * B^T. */
struct gemm_ref_args {
	uint64_t a, b; /* inputs, as for the ws kernels */
	uint64_t r; /* fp32 output, leading dimension n */
	uint32_t m, n, k;
	uint32_t reserved;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_ref_args) == 40, "ref layout");

/*
 * gemmd_compare_{bf16,fp16}: compare count elements of d (leading
 * dimension = n, dense) with the fp32 reference r, accumulating into
 * *stats.  exact != 0 compares with r rounded to the output type and no
 * tolerance; otherwise an element passes when |d - r| <= atol + rtol*|r|.
 */
struct gemm_cmp_args {
	uint64_t d, r;
	uint64_t count;
	uint64_t stats; /* struct gemm_cmp_stats in device memory */
	float atol, rtol;
	uint32_t exact;
	uint32_t reserved;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_cmp_args) == 48, "cmp layout");

/*
 * Reduced on the device with atomics; the host zeroes it and sets
 * first_index to UINT64_MAX before the compare launch.  The maxima are
 * non-negative floats stored as their bit patterns, which order like
 * unsigned integers, so atomicMax works on them.  NaN, Inf and unwritten
 * elements count as mismatches and are left out of the error statistics.
 */
struct gemm_cmp_stats {
	uint64_t mismatches;
	uint64_t nan_count; /* NaN other than the poison pattern */
	uint64_t inf_count;
	uint64_t unwritten; /* still GEMMD_POISON_U16 */
	uint64_t first_index; /* lowest mismatching linear index */
	uint32_t max_abs_bits;
	uint32_t max_rel_bits;
	double sum_sq_err; /* sum (d - r)^2 over finite d */
	double sum_sq_ref; /* sum r^2 over the same elements */
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_cmp_stats) == 64, "stats layout");
