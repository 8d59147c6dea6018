/* SPDX-License-Identifier: MIT */
/*
 * run.h - one job on one GPU: the state the worker's modules share
 * (private to daemon/worker).
 *
 * gpu.c opens the GPU and runs a job, gpu_run(), as a struct run that it
 * hands to one module per step:
 *   inputs.c    A, B, C and the reference, kept between jobs
 *   verify.c    the first launch, against the reference
 *   timing.c    warm-up, samples and stopping rule, for ours and the
 *               baseline, and the rates
 *   baseline.c  the cuBLASLt baseline, and the cuBLASLt GEMM that the
 *               reference shares with it
 * Below are the types they share and the helpers that more than one of
 * them calls, defined in gpu.c unless said otherwise.  Functions return
 * 0 or a negative errno with the reason in r->err; a CUDA error after
 * which the context is lost sets r->sticky (see cuda_api_is_sticky()).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda.h>

#include "cuda-api.h"
#include "gemm-abi.h"
#include "gemm.h"
#include "gpcmap.h"
#include "nvml.h"
#include "util.h"

/* What A and B are made from (the init kernels): equal keys, equal bits. */
struct inputs_key {
	uint64_t m, n, k, seed;
	enum gemm_dtype dtype;
	enum gemm_layout layout;
	enum gemm_init init;
};

/* The buffers a worker keeps between jobs; see run_buffers(). */
enum cache_slot {
	SLOT_A,
	SLOT_B,
	SLOT_C,
	SLOT_REF,
	_SLOT_MAX,
};

/*
 * One job's inputs, kept for the next: A and B (ab_valid) for key; C
 * (c_valid) of type c_out; the fp32 reference (ref_valid) for alpha,
 * beta, ref_kind and, with beta != 0, C of type ref_out.  sum[]: each
 * buffer's fingerprint (gemmd_checksum) when it was made.  A buffer may
 * be allocated and not valid: it is then reused or freed, never read.
 */
struct gpu_cache {
	CUdeviceptr buf[_SLOT_MAX];
	uint64_t sum[_SLOT_MAX];
	bool ab_valid, c_valid, ref_valid;
	struct inputs_key key;
	enum gemm_dtype c_out;
	double alpha, beta;
	enum gemm_reference ref_kind;
	enum gemm_dtype ref_out;
};

struct cublaslt_gemm;
struct gpu_module;

struct gpu {
	int ordinal;
	CUdevice dev;
	CUcontext ctx; /* the retained primary context, or NULL */
	CUstream stream;
	int sm_count;
	int cc_major;
	int clock_khz; /* the maximum SM clock */
	int l2_bytes;
	struct nvml *nvml; /* NULL: no telemetry */
	char kernel_dir[PATH_MAX];
	struct gpu_module *mods;
	unsigned int n_mods, alloc_mods;
	/*
	 * reference.cubin, indexed by enum gemm_dtype: init and compare by
	 * element type, the reference GEMM by input type (bf16, fp16).
	 */
	CUfunction f_init[_GEMM_DTYPE_MAX];
	CUfunction f_ref[_GEMM_DTYPE_MAX];
	CUfunction f_cmp[_GEMM_DTYPE_MAX];
	CUfunction f_fill16, f_fill32;
	CUfunction f_sum;
	CUfunction f_probe;
	struct gpc_map gpcs; /* which SMs share a GPC: placement */
	/* inputs kept between jobs, and room for their fingerprints */
	struct gpu_cache cache;
	CUdeviceptr sums; /* uint64_t[_SLOT_MAX] */
};

struct run;

/*
 * One GEMM's timing: ours, or the baseline's.  With a baseline the two
 * take their samples in alternating chunks (see run_time()).
 */
struct timer {
	/* queue one launch: ours, or cuBLASLt's (NULL: no baseline) */
	int (*launch)(struct run *r);
	unsigned int batch; /* launches per sample */
	double launch_us; /* one launch, measured in the warm-up */
	double *samples; /* per-launch times, in the order taken */
	unsigned int n_samples;
	double gpu_time_us; /* whole batches */
	struct nvml_track tele;
	enum gemm_stop reason;
	bool done;
	unsigned int chunks;
};

struct run {
	struct gpu *g;
	const struct gemm_spec *spec;
	const struct gemm_plan *plan;
	/* 64-B aligned by their type; all zero when the kernel has no use */
	CUtensorMap tma_a, tma_b, tma_d;
	struct gemm_args args;
	uint32_t fault; /* GEMMD_FAULT_*, from $GEMMD_FAULT: tests only */
	CUfunction f;
	unsigned int grid[3]; /* as launched: the plan's, cut if persistent */
	unsigned int resident; /* clusters that fit at once; 0: unknown */
	bool tma; /* the kernel loads A and B with TMA (not an sm_80 one) */
	bool reads_c; /* beta != 0: C exists and is read */
	unsigned int in_size, out_size; /* bytes per element */
	/* a, b, c and ref belong to g->cache; d and stats to the run */
	CUdeviceptr a, b, c, d, ref, stats;
	/*
	 * Stream-K's partial sums and flags (GEMMD_SK_WORKSPACE_BYTES for
	 * the grid as launched), the run's; 0 for a data-parallel plan.
	 */
	CUdeviceptr sk_ws;
	CUdeviceptr placement; /* struct gemm_places, or 0 */
	bool cached[_SLOT_MAX]; /* taken from the cache, not made anew */
	bool current; /* the context is current: driver calls may follow */
	/* cuBLASLt: the baseline (output D) and the reference (output ref) */
	CUdeviceptr lt_ws;
	struct cublaslt_gemm *lt, *lt_ref;
	/* timing */
	CUdeviceptr flush; /* cold mode: written before each sample */
	size_t flush_bytes;
	unsigned int flush_value;
	CUevent *events; /* a start/stop pair per sample of a chunk */
	unsigned int n_events;
	unsigned int cap_samples; /* per timer */
	struct timer ours, base;
	/* the energy counter at its last read, and the timer it goes to */
	struct timer *energy_owner;
	double energy_at;
	bool sticky;
	char *err;
	size_t errlen;
};

/*
 * The driver's entry points (cuda-api.h), loaded before a GPU can be
 * opened: always there during a run.
 */
extern const struct cuda_api *const gpu_cuda;

int run_check(struct run *r, CUresult res, const char *call);

/* Call a driver function; on failure describe it in r->err. */
#define CU(r, call, ...) run_check((r), gpu_cuda->call(__VA_ARGS__), #call)

/* A job the worker cannot run as asked: fmt into r->err, -EINVAL. */
int run_invalid(struct run *r, const char *fmt, ...) _printf_(2, 3);

/* Append ": what" to the message already in r->err; returns e. */
int run_context(struct run *r, int e, const char *what);

/* "t" A and "n" B are K-major (gemm.h); the others M- or N-major. */
static inline bool layout_a_kmajor(enum gemm_layout l)
{
	return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_TT;
}

static inline bool layout_b_kmajor(enum gemm_layout l)
{
	return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_NN;
}

/* GEMMD_OUT_*, the kernels' code for an output type. */
uint32_t run_out_code(enum gemm_dtype t);

/* Blocks for a grid-stride kernel over count elements. */
unsigned int run_stride_blocks(struct run *r, uint64_t count);

/* Launch a helper kernel whose one parameter is a struct. */
int run_helper(struct run *r, CUfunction f, unsigned int gx, unsigned int gy,
	       void *args);

/* Sleep us microseconds, less than a second. */
/*
 * Wait for the stream by polling, with a deadline: a pipeline bug can
 * hang a kernel forever, and the supervisor should hear about it rather
 * than a silent worker.  After a timeout the kernel is still running, so
 * the context counts as lost.  The deadline allows for launches GEMMs;
 * what: the work waited for, for the message.
 */
int run_sync(struct run *r, const char *what, double launches);

/* Set words 32-bit words at p to value, in stream order. */
int run_memset32(struct run *r, CUdeviceptr p, uint32_t value, size_t words);

/*
 * The bytes of stream-K's partial-sum slots, one per CTA of the grid, at
 * the start of its workspace; its flags follow them.
 */
uint64_t run_sk_slots_bytes(const struct run *r);

/* Queue one launch of the kernel under test. */
int run_launch_ours(struct run *r);

/*
 * cuMemAlloc; when the memory is full and the cache holds something this
 * job does not use, that goes and the allocation is tried once more
 * (inputs.c).
 */
int run_alloc(struct run *r, CUdeviceptr *p, size_t bytes);

/*
 * cuBLASLt, for the reference (verify.c) and the baseline (baseline.c,
 * which defines these two).
 *
 * A cuBLASLt GEMM on the run's A and B: d = alpha * A * B + beta * c, d
 * and c of type out (D and C for the baseline; the fp32 reference buffer
 * for the reference), with the workspace allocated on first use.  algos:
 * the heuristic results to ask for (0: CUBLASLT_ALGOS_MAX).
 */
int run_lt_new(struct run *r, enum gemm_dtype out, CUdeviceptr c, CUdeviceptr d,
	       float alpha, float beta, unsigned int algos,
	       struct cublaslt_gemm **ret);

/* After a failed cuBLASLt call: did it take the context down? */
int run_lt_failed(struct run *r, int e);
