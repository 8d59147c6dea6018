/* SPDX-License-Identifier: MIT */
/*
 * gemm.h - what a GEMM job asks for, how it is launched, what it measured.
 *
 * These types are shared by the supervisor (which parses, validates and
 * plans jobs without a GPU) and the worker (which runs them).  Nothing here
 * touches CUDA.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "sha256.h"

/* Element types; fp32 only as an output (out_dtype). */
enum gemm_dtype {
	GEMM_DTYPE_BF16,
	GEMM_DTYPE_FP16,
	GEMM_DTYPE_FP32,
	_GEMM_DTYPE_MAX,
};

/*
 * Operand layouts in BLAS terms (first letter A, second B, column-major
 * storage): "t" A / "n" B is K-major, "n" A is M-major, "t" B N-major.
 */
enum gemm_layout {
	GEMM_LAYOUT_TN, /* A row-major MxK, B column-major KxN: both K-major */
	GEMM_LAYOUT_NT, /* A column-major MxK, B row-major KxN */
	GEMM_LAYOUT_NN, /* A column-major MxK, B column-major KxN */
	GEMM_LAYOUT_TT, /* A row-major MxK, B row-major KxN */
	_GEMM_LAYOUT_MAX,
};

enum gemm_schedule {
	GEMM_SCHEDULE_WS, /* warp-specialized, one tile per CTA */
	GEMM_SCHEDULE_COOPERATIVE, /* persistent, 2 consumer WGs per tile */
	GEMM_SCHEDULE_PINGPONG, /* persistent, consumer WGs alternate tiles */
	GEMM_SCHEDULE_INTERLEAVED, /* no specialization: load between MMAs */
	GEMM_SCHEDULE_MULTISTAGE, /* cp.async ring + mma.sync (sm_80) */
	GEMM_SCHEDULE_PIPELINED, /* register double buffer (sm_80) */
	_GEMM_SCHEDULE_MAX,
};

/* Work order of the tiles (kernels/sched.cuh); AUTO: the plan picks. */
enum gemm_raster {
	GEMM_RASTER_AUTO,
	GEMM_RASTER_ALONG_M,
	GEMM_RASTER_ALONG_N,
	_GEMM_RASTER_MAX,
};

/*
 * How a persistent kernel cuts the work among its clusters
 * (gemm_args.decomposition, kernels/gemm-abi.h).
 */
enum gemm_decomposition {
	GEMM_DECOMP_DATA_PARALLEL, /* whole tiles, one cluster each */
	GEMM_DECOMP_STREAM_K, /* the last wave's tiles cut along K */
	_GEMM_DECOMP_MAX,
};

/*
 * How a persistent kernel's clusters take their places in the work order
 * (kernels/gemm-abi.h, docs/kernels.md).  With GPC each cluster claims at
 * launch a place in its GPC's share of the order, so that the clusters of
 * one GPC work on neighbouring tiles at once and their operand loads meet
 * inside the GPC instead of each going to L2.  Every place goes to one
 * cluster whatever SMs they land on: the GPC map decides only the saving.
 */
enum gemm_placement {
	GEMM_PLACEMENT_NONE, /* place = launch index */
	GEMM_PLACEMENT_GPC, /* claimed in the cluster's GPC group */
	_GEMM_PLACEMENT_MAX,
};

/*
 * How many clusters a persistent kernel launches (daemon/worker/gpu.c,
 * docs/kernels.md).  FULL: every cluster that fits at once.  BALANCED:
 * the fewest that still give no cluster more work units than FULL
 * would, so that every wave is whole; the job takes as many rounds, and
 * the clusters left out draw no power that the others' clocks could
 * use at the cap.  AUTO, a job's only, is BALANCED where it applies
 * (persistent and data-parallel) and FULL elsewhere.
 */
enum gemm_occupancy {
	GEMM_OCCUPANCY_AUTO,
	GEMM_OCCUPANCY_BALANCED,
	GEMM_OCCUPANCY_FULL,
	_GEMM_OCCUPANCY_MAX,
};

enum gemm_epilogue {
	GEMM_EPILOGUE_DIRECT, /* stores from registers */
	GEMM_EPILOGUE_TMA, /* staged in smem, TMA stores */
	GEMM_EPILOGUE_AUTO, /* a job's only: the plan picks one of the two */
	_GEMM_EPILOGUE_MAX,
};

enum gemm_init {
	GEMM_INIT_NORMAL,
	GEMM_INIT_UNIFORM,
	GEMM_INIT_RANDINT,
	_GEMM_INIT_MAX,
};

/*
 * A library GEMM timed on the same buffers after ours: cuBLASLt, loaded
 * at run time, with its algorithm chosen one of two ways.
 */
enum gemm_baseline {
	GEMM_BASELINE_NONE,
	GEMM_BASELINE_CUBLAS, /* the fastest of the heuristic's top few */
	GEMM_BASELINE_CUBLAS_DEFAULT, /* the heuristic's first choice only */
	_GEMM_BASELINE_MAX,
};

/*
 * How ours and the baseline share the card (timing.baseline_order):
 * separate: ours timed to the end, the job's cool-down, then the
 *   baseline, so each runs from the same rested state into its own
 *   power and clock equilibrium (at the power cap a kernel's clock
 *   depends on its own draw);
 * interleaved: alternating chunks of samples, so slow drift hits both
 *   alike; at the power cap both then run at the clock their mix allows.
 */
enum gemm_baseline_order {
	GEMM_ORDER_SEPARATE,
	GEMM_ORDER_INTERLEAVED,
	_GEMM_ORDER_MAX,
};

/* How the baseline's algorithm was picked (result.baseline.mode). */
enum gemm_baseline_mode {
	GEMM_BASELINE_MODE_FASTEST, /* each timed briefly, the fastest kept */
	GEMM_BASELINE_MODE_DEFAULT, /* heuristic #0, what cuBLAS would run */
	_GEMM_BASELINE_MODE_MAX,
};

/* What the output is checked against. */
enum gemm_reference {
	GEMM_REFERENCE_DEVICE, /* reference.cubin's naive fp32 GEMM */
	GEMM_REFERENCE_CUBLAS, /* cuBLASLt with fp32 output */
	_GEMM_REFERENCE_MAX,
};

/* How a timed sample treats the L2 cache. */
enum gemm_timing_mode {
	GEMM_TIMING_COLD, /* L2 flushed before every sample */
	GEMM_TIMING_HOT, /* back-to-back launches, L2 left warm */
	_GEMM_TIMING_MAX,
};

/* Why a job stopped taking samples. */
enum gemm_stop {
	GEMM_STOP_ITERATIONS, /* the fixed count the job asked for */
	GEMM_STOP_NOISE, /* enough samples and time, noise low enough */
	GEMM_STOP_MAX_TIME, /* the GPU time budget ran out */
	GEMM_STOP_MAX_SAMPLES, /* GEMM_SAMPLES_MAX samples */
	_GEMM_STOP_MAX,
};

/* Hard cap on the timed samples of one job. */
#define GEMM_SAMPLES_MAX 100000

/*
 * Why the clocks were held down: the bit values of NVML's "clocks event
 * reasons" (formerly "throttle reasons"), so they pass through unchanged.
 */
#define GEMM_THROTTLE_GPU_IDLE 0x1ull
#define GEMM_THROTTLE_APP_CLOCKS 0x2ull
#define GEMM_THROTTLE_SW_POWER_CAP 0x4ull
#define GEMM_THROTTLE_HW_SLOWDOWN 0x8ull
#define GEMM_THROTTLE_SYNC_BOOST 0x10ull
#define GEMM_THROTTLE_SW_THERMAL 0x20ull
#define GEMM_THROTTLE_HW_THERMAL 0x40ull
#define GEMM_THROTTLE_HW_POWER_BRAKE 0x80ull
#define GEMM_THROTTLE_DISPLAY_CLOCK 0x100ull
/* The reasons that make a sample count as throttled. */
#define GEMM_THROTTLE_SLOWDOWN                                  \
	(GEMM_THROTTLE_HW_SLOWDOWN | GEMM_THROTTLE_SW_THERMAL | \
	 GEMM_THROTTLE_HW_THERMAL | GEMM_THROTTLE_HW_POWER_BRAKE)

struct gemm_tile {
	unsigned int m, n, k;
};

/* A validated job, with every default filled in. */
struct gemm_spec {
	uint64_t m, n, k;
	enum gemm_dtype dtype; /* of A and B: bf16 or fp16 */
	enum gemm_dtype out; /* of C and D; default: dtype */
	enum gemm_layout layout;
	enum gemm_schedule schedule;
	struct gemm_tile tile; /* all zero: pick one */
	unsigned int stages; /* 0: the most that fit */
	unsigned int cluster_x, cluster_y;
	enum gemm_raster raster;
	unsigned int swizzle; /* 0: the plan picks; else 1, 2, 4, 8 */
	enum gemm_epilogue epilogue;
	enum gemm_decomposition decomposition;
	enum gemm_placement placement;
	enum gemm_occupancy occupancy;
	/*
	 * Programmatic dependent launch: each launch of ours may start
	 * while the one before it finishes (kernels with "pdl" only).
	 */
	bool pdl;
	double alpha, beta; /* D = alpha * A * B + beta * C */
	unsigned int warmup;
	unsigned int iterations; /* 0: the stopping rule below decides */
	enum gemm_timing_mode timing_mode;
	unsigned int min_samples; /* stopping rule */
	unsigned int min_time_ms, max_time_ms; /* GPU time in samples */
	double max_noise; /* relative standard error of the mean */
	unsigned int cooldown_ms; /* worker pause after the job */
	enum gemm_baseline_order baseline_order;
	bool raw_samples; /* report every sample */
	bool verify;
	enum gemm_reference reference;
	enum gemm_init init;
	uint64_t seed;
	int device; /* -1: any */
	enum gemm_baseline baseline;
	bool dry_run;
	char label[128]; /* the client's name for the job, may be empty */
};

/* How a spec is launched: the resolved kernel and its launch geometry. */
struct gemm_plan {
	char kernel[96]; /* the catalog's kernel */
	/*
	 * The function launched: kernel, or kernel and an entry suffix
	 * (GEMMD_SK_ENTRY_SUFFIX, GEMMD_PACKED_ENTRY_SUFFIX).
	 */
	char entry[112];
	char cubin[64]; /* file name inside the kernel directory */
	/*
	 * The cubin's digest as the catalog read it ("" when unknown); the
	 * worker refuses to run a file that no longer matches it.
	 */
	char digest[SHA256_TAG_LEN];
	unsigned int grid[3];
	unsigned int block[3];
	unsigned int cluster[3];
	unsigned int smem_bytes;
	unsigned int stages;
	struct gemm_tile tile;
	enum gemm_raster raster; /* never AUTO */
	unsigned int swizzle;
	enum gemm_epilogue epilogue;
	enum gemm_decomposition decomposition; /* stream_k: persistent only */
	enum gemm_placement placement; /* gpc: persistent only */
	enum gemm_occupancy occupancy; /* never AUTO; balanced: see above */
	/*
	 * A persistent kernel: the worker cuts grid[0] down to the clusters
	 * that fit at once (cuOccupancyMaxActiveClusters).  grid[0] is
	 * cluster[0] * units, the work units (clusters of tiles) in all.
	 */
	bool persistent;
	uint64_t units;
	/*
	 * At most this many clusters for a persistent kernel, 0 for as many
	 * as fit.  The planner leaves it 0; tests set it, so that a small
	 * problem still walks several tiles per CTA (gpu-gemm --small).
	 */
	unsigned int clusters_max;
};

/* Per-launch times; a sample is one batch of launches, divided by it. */
struct gemm_timing {
	double min_us, median_us, mean_us, stdev_us;
	unsigned int samples;
	double iqr_us, p90_us, p99_us;
	double noise; /* relative standard error of the mean reached */
	double gpu_time_ms; /* GPU time in all samples, whole batches */
	enum gemm_stop stop_reason;
	enum gemm_timing_mode mode;
	uint64_t l2_flush_bytes; /* written before each sample, 0 if hot */
	unsigned int batch; /* launches per sample */
	double *raw_us; /* every sample in order, or NULL; malloc'd, owned */
};

/* NVML readings over the timed samples; NAN where not known. */
struct gemm_telemetry {
	double sm_clock_min_mhz, sm_clock_median_mhz;
	double mem_clock_min_mhz, mem_clock_median_mhz;
	double power_mean_w, power_max_w;
	double energy_j; /* from the first sample queued to the last done */
	double temp_max_c;
	/*
	 * The power limit the driver enforced as the samples began: at the
	 * cap it sets the clocks, so results from GPUs of one model but
	 * other limits are not comparable without it.
	 */
	double power_limit_w;
	bool reasons_known;
	uint64_t reasons_seen; /* GEMM_THROTTLE_* bits */
	unsigned int throttled_samples; /* under GEMM_THROTTLE_SLOWDOWN */
	double tflops_per_watt; /* tflops / power_mean_w */
};

/* Mismatches reported by row and column, the lowest indices first. */
#define GEMM_MISMATCH_SAMPLE 8

struct gemm_mismatch {
	int64_t row, col;
	double got, want;
};

struct gemm_verdict {
	bool checked;
	bool passed;
	double max_abs_err;
	double max_rel_err;
	double rel_fro_err;
	double atol,
		rtol; /* the tolerance applied: |d - r| <= atol + rtol * |r| */
	uint64_t mismatches;
	uint64_t nan_count;
	uint64_t inf_count;
	uint64_t unwritten; /* elements still holding the poison pattern */
	uint64_t overflow; /* right Infs: the value is past D's type's range */
	int64_t first_row, first_col; /* first mismatch, -1 if none */
	double first_got, first_want;
	/*
	 * Mismatches in index order, sample[0] the first; exactly the first
	 * n_sample when there were at most GEMMD_CMP_SAMPLE_SLOTS (256),
	 * otherwise the lowest of those the compare kernel recorded.
	 */
	unsigned int n_sample;
	struct gemm_mismatch sample[GEMM_MISMATCH_SAMPLE];
	/* where the first mismatch comes from: tile, k-tile, stage */
	bool diagnosed;
	struct {
		unsigned int tile_m, tile_n, warpgroup;
		int kind; /* enum kdiag_kind */
		int k_tile, stage, other_k_tile, other_stage;
		unsigned int used; /* mismatches the explanation fits */
	} where;
};

/*
 * What a cuBLASLt algorithm is, read from its configuration: the kernel
 * behind an algorithm id.  A field the library does not say is "" (or
 * -1), one this build has no name for is "#<id>".
 */
struct gemm_lt_algo {
	bool known;
	char tile[16]; /* CTA tile, "128x256" */
	char stages[16]; /* k depth x stage count, "64x4", "64xAUTO" */
	char cluster[16]; /* "2x1x1", or "auto" */
	int split_k; /* 1: none */
	char reduction[16]; /* of split-K partials: "none", "inplace", ... */
	int swizzle; /* CTA swizzling */
	int custom; /* kernel-specific custom option */
};

/*
 * The baseline library's GEMM, timed like ours (never raw samples), in
 * the order the job asked for (order; rounds: the chunks its samples
 * were queued in, in either order: with interleaved, ours and its take
 * turns chunk by chunk), with its own telemetry.
 */
struct gemm_baseline_result {
	bool present; /* false: no baseline asked for */
	char library[16]; /* "cublasLt" */
	int version; /* as the library reports it, e.g. 130100 */
	enum gemm_baseline_mode mode;
	int algo_index; /* of the heuristic's results, the one timed */
	int algo_id; /* CUBLASLT_ALGO_CONFIG_ID of that one */
	unsigned int heuristics_tried;
	struct gemm_lt_algo algo;
	enum gemm_baseline_order order;
	unsigned int rounds;
	struct gemm_timing timing;
	struct gemm_telemetry telemetry;
	double tflops; /* at its median time */
};

/*
 * What the inputs were made from, and whether the worker had them from
 * an earlier job on the same problem rather than making them anew.
 */
struct gemm_inputs {
	bool present; /* false: not reported (older workers) */
	enum gemm_init init;
	uint64_t seed;
	bool cached; /* A, B and (beta != 0) C: all reused */
	bool reference_used; /* verified, so a reference was needed */
	bool reference_cached; /* ... and reused, not computed again */
	bool intact; /* false: the job's launches wrote into A, B, C or R */
};

/*
 * The launch that ran: the plan's grid, with grid[0] cut to the clusters
 * that fit at once for a persistent kernel.  All zero: not known.
 */
struct gemm_launch {
	unsigned int grid[3];
	uint64_t ctas; /* grid[0] * grid[1] * grid[2] */
	uint64_t clusters; /* launched */
	unsigned int clusters_resident; /* that fit at once; 0: unknown */
	double waves; /* work units of the busiest cluster */
};

struct gemm_result {
	struct gemm_launch launch;
	struct gemm_timing timing;
	double tflops; /* at the median time */
	double peak_tflops; /* dense peak of the GPU for the dtype, or NAN */
	double peak_percent; /* 100 * tflops / peak_tflops */
	uint64_t min_bytes; /* A and B read once, D written once */
	double achieved_gbps; /* min_bytes at the median time */
	struct gemm_telemetry telemetry;
	struct gemm_verdict verify;
	struct gemm_inputs inputs;
	struct gemm_baseline_result baseline;
	double speedup_vs_baseline; /* baseline median / ours; NAN if none */
};

/* Names as the API spells them, indexed by the enums. */
extern const char *const gemm_dtype_names[_GEMM_DTYPE_MAX];
extern const char *const gemm_layout_names[_GEMM_LAYOUT_MAX];
extern const char *const gemm_schedule_names[_GEMM_SCHEDULE_MAX];
extern const char *const gemm_raster_names[_GEMM_RASTER_MAX];
extern const char *const gemm_epilogue_names[_GEMM_EPILOGUE_MAX];
extern const char *const gemm_decomposition_names[_GEMM_DECOMP_MAX];
extern const char *const gemm_placement_names[_GEMM_PLACEMENT_MAX];
extern const char *const gemm_occupancy_names[_GEMM_OCCUPANCY_MAX];
extern const char *const gemm_init_names[_GEMM_INIT_MAX];
/* GEMM_BASELINE_NONE has no name: it is JSON null. */
extern const char *const gemm_baseline_names[_GEMM_BASELINE_MAX];
extern const char *const gemm_timing_mode_names[_GEMM_TIMING_MAX];
extern const char *const gemm_stop_names[_GEMM_STOP_MAX];
extern const char *const gemm_baseline_mode_names[_GEMM_BASELINE_MODE_MAX];
extern const char *const gemm_baseline_order_names[_GEMM_ORDER_MAX];

const char *gemm_dtype_to_string(enum gemm_dtype d);
int gemm_dtype_from_string(const char *s);
unsigned int gemm_dtype_size(enum gemm_dtype d);
const char *gemm_layout_to_string(enum gemm_layout l);
int gemm_layout_from_string(const char *s);
const char *gemm_schedule_to_string(enum gemm_schedule s);
int gemm_schedule_from_string(const char *s);
const char *gemm_raster_to_string(enum gemm_raster r);
int gemm_raster_from_string(const char *s);
const char *gemm_epilogue_to_string(enum gemm_epilogue e);
int gemm_epilogue_from_string(const char *s);
const char *gemm_decomposition_to_string(enum gemm_decomposition d);
int gemm_decomposition_from_string(const char *s);
/*
 * Whether kernels of schedule s can run decomposition d: stream-K only
 * on cooperative, the persistent kernel whose consumers share a tile.
 * The planner refuses what this refuses, and the catalog lists it.
 */
bool gemm_schedule_has_decomposition(enum gemm_schedule s,
				     enum gemm_decomposition d);
const char *gemm_placement_to_string(enum gemm_placement p);
int gemm_placement_from_string(const char *s);
/*
 * Whether kernels of schedule s can run placement p: GPC only on the
 * persistent ones (cooperative, pingpong), whose clusters each walk
 * many work units from the place they claim.  The planner refuses what
 * this refuses.
 */
bool gemm_schedule_has_placement(enum gemm_schedule s, enum gemm_placement p);
const char *gemm_occupancy_to_string(enum gemm_occupancy o);
int gemm_occupancy_from_string(const char *s);
/*
 * Whether kernels of schedule s can run occupancy o: "balanced" only on
 * the persistent ones, whose clusters walk many work units; the others
 * launch a CTA per tile whatever the job asks.
 */
bool gemm_schedule_has_occupancy(enum gemm_schedule s, enum gemm_occupancy o);
const char *gemm_init_to_string(enum gemm_init i);
int gemm_init_from_string(const char *s);
const char *gemm_baseline_to_string(enum gemm_baseline b);
int gemm_baseline_from_string(const char *s);
double gemm_flops(const struct gemm_spec *spec);
/*
 * FLOPs for a time budget: those of whole waves of 64x64 tiles on
 * GEMM_BUDGET_SMS SMs.  A job of few tiles and a long K runs on a few
 * SMs at a small part of the GPU's rate, so the GPU's rate alone would
 * budget it far too short; a large job is hardly changed.
 */
#define GEMM_BUDGET_SMS 132u
double gemm_flops_budget(const struct gemm_spec *spec);
