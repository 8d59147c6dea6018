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

/* Placement (gemm_args.sm_group): SM ids and GPC groups it can map. */
#define GEMMD_MAX_SMS 256
#define GEMMD_MAX_GROUPS 16

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
/* Threads of the warp-specialized kernels: 1 producer + 2 consumer WGs. */
#define GEMMD_WS_THREADS 384
/*
 * Shared memory the TMA-store epilogue adds after the stage ring: per
 * consumer warp two staging buffers of 16 rows x 128 B (whatever the
 * output type: 64 16-bit or 32 fp32 columns), so that one buffer is
 * written while the TMA store of the other is still reading it.  Each
 * warp stores its own rows: a box of D is GEMMD_EPI_BOX_ROWS rows.
 * The consumers of ws and cooperative store at once, each warp of both
 * into its own buffers; pingpong's store in turn and need only one set
 * (GEMMD_SMEM_EPILOGUE_SHARED), which leaves room for a deeper ring,
 * but take one each where the launch has room for two: sharing makes a
 * consumer wait for its stores' reads before it hands the turn over.
 */
#define GEMMD_EPI_BOX_ROWS 16
#define GEMMD_EPI_BUF_BYTES (GEMMD_EPI_BOX_ROWS * 128)
#define GEMMD_SMEM_EPILOGUE (2 * 4 * 2 * GEMMD_EPI_BUF_BYTES)
#define GEMMD_SMEM_EPILOGUE_SHARED (4 * 2 * GEMMD_EPI_BUF_BYTES)
/* The staging bytes of a kernel whose consumers store in turn or not. */
#define GEMMD_SMEM_EPILOGUE_OF(in_turn) \
	((in_turn) ? GEMMD_SMEM_EPILOGUE_SHARED : GEMMD_SMEM_EPILOGUE)
/* bf16 and fp16 NaN pattern that no conversion produces: "not written". */
#define GEMMD_POISON_U16 0xffffu
/* The same for fp32 outputs. */
#define GEMMD_POISON_U32 0xffffffffu

/* Init distributions (gemmd_init_*). */
#define GEMMD_DIST_NORMAL 0u /* N(0, 1), Box-Muller */
#define GEMMD_DIST_UNIFORM 1u /* [-1, 1) */
#define GEMMD_DIST_RANDINT 2u /* integers in [-2, 2] */

/* Streams of one seed: A and B must not be the same matrix. */
#define GEMMD_STREAM_A 1u
#define GEMMD_STREAM_B 2u
#define GEMMD_STREAM_C 3u

/* gemm_args.out: the type of C and D. */
#define GEMMD_OUT_BF16 0u
#define GEMMD_OUT_FP16 1u
#define GEMMD_OUT_FP32 2u

/* gemm_args.raster: which tile index moves fastest in the work order. */
#define GEMMD_RASTER_ALONG_M 0u
#define GEMMD_RASTER_ALONG_N 1u

/* gemm_args.epilogue */
#define GEMMD_EPILOGUE_DIRECT 0u /* st.global from the accumulators */
#define GEMMD_EPILOGUE_TMA 1u /* through smem, TMA stores (tma_d) */

/*
 * Every GEMM kernel has the same signature:
 *
 *   (const __grid_constant__ CUtensorMap tma_a, tma_b, tma_d,
 *    const struct gemm_args args)
 *
 * and computes D = alpha * A * B + beta * C with fp32 accumulation, D and
 * C row-major m x n with leading dimension ldd, of type `out`.  Kernels
 * that load with TMA use tma_a and tma_b (built for the kernel's layout
 * and tile); tma_d is used only by the TMA-store epilogue; the others read
 * a and b through the pointers.  C is read only when beta != 0.
 *
 * Work is handed out in clusters of cluster_x (along M) by cluster_y
 * (along N) tiles; a kernel without clusters takes 1 x 1.  The launch grid
 * is (cluster_x * G, cluster_y, 1) with the cluster dimension (cluster_x,
 * cluster_y, 1): G clusters, the cluster of a CTA being blockIdx.x /
 * cluster_x.  A persistent kernel walks work units id, id + G, id + 2G...
 * with G from the occupancy API; the others get G = all work units.  The
 * tile grid is rounded up to whole clusters, so a CTA can get a tile
 * outside D: it runs (its peers need its barrier arrivals) and stores
 * nothing.  Work unit u maps to a cluster of tiles through raster and
 * swizzle (kernels/sched.cuh).
 *
 * The launch gives the kernel GEMMD_SMEM_FIXED + stages * smem_stage bytes
 * of dynamic shared memory, plus its note's smem_epilogue with the
 * TMA-store epilogue (GEMMD_SMEM_EPILOGUE, or GEMMD_SMEM_EPILOGUE_SHARED
 * for pingpong, which uses GEMMD_SMEM_EPILOGUE where it gets that much).
 */
struct gemm_args {
	uint64_t d; /* device pointer to D */
	uint64_t c; /* device pointer to C, read when beta != 0 */
	uint64_t a, b; /* A and B, for the kernels without TMA */
	uint32_t m, n, k;
	uint32_t ldd; /* elements, of D and C */
	uint32_t lda, ldb; /* elements, of a and b */
	uint32_t stages; /* ring depth: min_stages .. max_stages */
	uint32_t cluster_x, cluster_y;
	uint32_t raster; /* GEMMD_RASTER_* */
	uint32_t swizzle; /* tile group width: 1, 2, 4 or 8 */
	uint32_t epilogue; /* GEMMD_EPILOGUE_* */
	uint32_t out; /* GEMMD_OUT_* */
	float alpha, beta;
	uint32_t fault; /* GEMMD_FAULT_*: 0 outside fault-injection tests */
	uint32_t decomposition; /* GEMMD_DECOMP_* */
	uint32_t reserved;
	uint64_t workspace; /* stream-K: GEMMD_SK_WORKSPACE_BYTES, see below */
	uint64_t placement; /* 0, or a struct gemm_places (below) */
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_args) == 120, "gemm_args layout");

/*
 * Placement (the persistent SM90 schedules but their stream-K entries,
 * job field kernel.placement): with gemm_args.placement a cluster's
 * place in the work order, the index it walks work units from, is not
 * its launch index but one it claims at the start in its GPC group's
 * share of the order, so that the clusters of one GPC work on
 * neighbouring units at once and their operand loads meet in the GPC
 * rather than each going to L2 (docs/kernels.md).  In device memory:
 * sm_group[smid] is the group of each SM (the worker's map from probe
 * launches of clusters, which never span a GPC; GEMMD_NO_GROUP where
 * it has none); group g owns places group_base[g] .. + group_cap[g] - 1,
 * and the caps add up to the clusters launched.  A cluster takes the
 * next place of its own group or, that one full, of the first group
 * with one left: every place goes to exactly one cluster, wherever the
 * clusters land, so the map decides only how much L2 traffic is saved.
 * count[] and claimed are zeroed by the host once; the last cluster of
 * each launch to count itself in sets them back to zero.  (In the
 * parameters, the tables made ptxas spill the stream-K entries.)
 */
#define GEMMD_NO_GROUP 0xffu
struct gemm_places {
	uint32_t count[GEMMD_MAX_GROUPS]; /* places claimed, per group */
	uint32_t claimed; /* clusters that have their place */
	uint32_t groups; /* 1 .. GEMMD_MAX_GROUPS */
	uint16_t group_base[GEMMD_MAX_GROUPS];
	uint16_t group_cap[GEMMD_MAX_GROUPS];
	uint8_t sm_group[GEMMD_MAX_SMS];
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_places) == 392, "gemm_places layout");

/*
 * gemm_args.decomposition: how a persistent kernel cuts the work.
 *   DATA_PARALLEL  whole tiles: work unit u goes to cluster u % G.
 *   STREAM_K       (cooperative) the units of the last, partial wave (and
 *                  one full wave more where that one is less than half
 *                  full) are cut along K instead: their k-tiles are
 *                  dealt out evenly, one contiguous range per cluster,
 *                  after its whole units.  The cluster whose range holds
 *                  a unit's first k-tile stores it, after adding the
 *                  partial sums of the clusters that did the rest.
 * A kernel that takes STREAM_K has a second entry, its name followed by
 * GEMMD_SK_ENTRY_SUFFIX, for that alone; the plain entry takes
 * DATA_PARALLEL alone.
 * The stream-K workspace: one slot of BM x BN fp32 partial sums per CTA
 * of the launch, in CTA order (blockIdx.y * gridDim.x + blockIdx.x),
 * then one 32-bit flag per CTA.  The host zeroes the flags once; each
 * launch leaves them zero again.
 */
#define GEMMD_DECOMP_DATA_PARALLEL 0u
#define GEMMD_DECOMP_STREAM_K 1u
#define GEMMD_SK_ENTRY_SUFFIX "_sk"
/*
 * The SM90 warp-specialized kernels (ws, cooperative, pingpong) have one
 * more entry, their name followed by GEMMD_PACKED_ENTRY_SUFFIX, for the
 * common epilogue alone: GEMMD_EPILOGUE_TMA, out the input type, beta 0,
 * DATA_PARALLEL.  It traps on anything else; the plain entry takes all.
 */
#define GEMMD_PACKED_ENTRY_SUFFIX "_packed"
#define GEMMD_SK_SLOT_BYTES(bm, bn) ((uint64_t)(bm) * (uint64_t)(bn)*4u)
#define GEMMD_SK_WORKSPACE_BYTES(ctas, bm, bn) \
	((uint64_t)(ctas) * (GEMMD_SK_SLOT_BYTES(bm, bn) + 4u))

/*
 * gemm_args.fault: deliberate pipeline bugs, so that the tests can show
 * that verification catches a real race and the diagnosis points at it.
 * The worker sets them only from its GEMMD_FAULT environment variable.
 *   EARLY_RELEASE  consumers release a slot as soon as its data has
 *                  arrived, before their wgmmas read it, so the producer
 *                  can overwrite operands still being read (the SM90
 *                  kernels: in interleaved, the warpgroups refill the
 *                  slot of the k-tile whose wgmmas they just issued).
 *                  In multistage and pipelined, which have no mbarriers,
 *                  the CTA barrier between k-tiles is left out, so a
 *                  warp reads a slot before the other warps' copies into
 *                  it have landed and refills one that they may still be
 *                  reading.
 *                  A kernel whose real entry would be slowed by a test
 *                  of the bit (multistage) has the race in an entry of
 *                  its own instead, its name followed by
 *                  GEMMD_FAULT_ENTRY_SUFFIX, which the worker launches
 *                  in the plain entry's place under this fault.
 */
#define GEMMD_FAULT_EARLY_RELEASE 1u
#define GEMMD_FAULT_ENTRY_SUFFIX "_unguarded"
/*
 *   PLACEMENT_SKEW  not a bug but a stress, applied by the worker alone:
 *                  a placed launch is told that every SM is in group 0,
 *                  so nearly every cluster finds its group's places
 *                  taken and claims one elsewhere; every place must
 *                  still go to exactly one cluster (verification passes).
 */
#define GEMMD_FAULT_PLACEMENT_SKEW 2u

/*
 * gemmd_init_{bf16,fp16,fp32}: p[i] = dist(hash(seed, stream, i)), the
 * value rounded to the element type.
 */
struct gemm_init_args {
	uint64_t p;
	uint64_t count;
	uint64_t seed;
	uint32_t stream;
	uint32_t dist;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_init_args) == 32, "init layout");

/* gemmd_fill_{u16,u32}: p[i] = value, for poisoning D. */
struct gemm_fill_args {
	uint64_t p;
	uint64_t count;
	uint32_t value;
	uint32_t reserved;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_fill_args) == 24, "fill layout");

/*
 * gemmd_checksum: *sum += the wrapping sum over the 32-bit words w_i of
 * the buffer (the last one 16 bits wide when bytes % 4 is 2) of
 * mix64((i + 1) * golden + w_i), mix64 a bijection: a fingerprint that
 * a change of any one word always alters, whatever the launch shape.
 * The host zeroes *sum first.  The worker fingerprints the inputs it
 * keeps between jobs, to show that nothing wrote them since.
 */
struct gemm_sum_args {
	uint64_t p;
	uint64_t bytes; /* even */
	uint64_t sum; /* device pointer to a uint64_t */
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_sum_args) == 24, "sum layout");

/*
 * gemmd_ref_{bf16,fp16} (the input type): r (fp32, row-major m x n,
 * leading dimension n) = alpha * sum_k A[m][k] * B[k][n] + beta * C[m][n],
 * summed in fp32 in k order.  The operands are addressed by element
 * strides, which covers every layout:
 *   A[m][k] = a[m * a_sm + k * a_sk], B[k][n] = b[k * b_sk + n * b_sn]
 *   tn: a_sm = k, a_sk = 1;  b_sk = 1, b_sn = k
 *   nt: a_sm = 1, a_sk = m;  b_sk = n, b_sn = 1
 *   nn: a_sm = 1, a_sk = m;  b_sk = 1, b_sn = k
 *   tt: a_sm = k, a_sk = 1;  b_sk = n, b_sn = 1
 * C is row-major m x n (leading dimension n) of type out and is read
 * only when beta != 0.  k may be 0: then r = beta * C.
 */
struct gemm_ref_args {
	uint64_t a, b; /* inputs */
	uint64_t c; /* GEMMD_OUT_* out, read when beta != 0 */
	uint64_t r; /* fp32 output */
	uint32_t m, n, k;
	uint32_t out; /* GEMMD_OUT_*: the type of C */
	uint32_t a_sm, a_sk, b_sk, b_sn; /* elements */
	float alpha, beta;
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_ref_args) == 72, "ref layout");

/*
 * gemmd_compare_{bf16,fp16,fp32} (the output type): compare count
 * elements of d (leading dimension = n, dense) with the fp32 reference r,
 * accumulating into *stats.  exact != 0 compares with r rounded to the
 * output type (fp32: r itself) and no tolerance; otherwise an element
 * passes when |d - r| <= atol + rtol * |r|.
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

/* Mismatching indices the compare kernel records (gemm_cmp_stats). */
#define GEMMD_CMP_SAMPLE_SLOTS 256

/*
 * Reduced on the device with atomics; the host zeroes it and sets
 * first_index to UINT64_MAX before the compare launch.  The maxima are
 * non-negative floats stored as their bit patterns, which order like
 * unsigned integers, so atomicMax works on them.  NaN, Inf and unwritten
 * elements count as mismatches and are left out of the error statistics,
 * but for an Inf where the exact value is past the output type's range
 * (an fp16 D past 65504), which is right: counted as overflow.
 *
 * sample: the linear indices of mismatches, one per slot claimed (an
 * atomic add on sample_count, which may count past the slots), in the
 * order threads got there.  With at most GEMMD_CMP_SAMPLE_SLOTS
 * mismatches it holds all of them; with more, whichever came first.
 */
struct gemm_cmp_stats {
	uint64_t mismatches;
	uint64_t nan_count; /* NaN other than the poison pattern */
	uint64_t inf_count;
	uint64_t unwritten; /* still GEMMD_POISON_U16 / GEMMD_POISON_U32 */
	uint64_t overflow; /* Inf of the sign of a value past D's range */
	uint64_t first_index; /* lowest mismatching linear index */
	uint32_t max_abs_bits;
	uint32_t max_rel_bits;
	double sum_sq_err; /* sum (d - r)^2 over finite d */
	double sum_sq_ref; /* sum r^2 over the same elements */
	uint64_t sample_count;
	uint64_t sample[GEMMD_CMP_SAMPLE_SLOTS];
};
GEMMD_STATIC_ASSERT(sizeof(struct gemm_cmp_stats) ==
			    80 + 8 * GEMMD_CMP_SAMPLE_SLOTS,
		    "stats layout");
