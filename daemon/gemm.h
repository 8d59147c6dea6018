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

enum gemm_dtype {
	GEMM_DTYPE_BF16,
	GEMM_DTYPE_FP16,
	_GEMM_DTYPE_MAX,
};

enum gemm_layout {
	GEMM_LAYOUT_TN, /* A row-major MxK, B column-major KxN: both K-major */
	_GEMM_LAYOUT_MAX,
};

enum gemm_schedule {
	GEMM_SCHEDULE_WS,
	_GEMM_SCHEDULE_MAX,
};

enum gemm_init {
	GEMM_INIT_NORMAL,
	GEMM_INIT_UNIFORM,
	GEMM_INIT_RANDINT,
	_GEMM_INIT_MAX,
};

struct gemm_tile {
	unsigned int m, n, k;
};

/* A validated job, with every default filled in. */
struct gemm_spec {
	uint64_t m, n, k;
	enum gemm_dtype dtype;
	enum gemm_layout layout;
	enum gemm_schedule schedule;
	struct gemm_tile tile; /* all zero: pick one */
	unsigned int stages; /* 0: the most that fit */
	unsigned int cluster_x, cluster_y;
	unsigned int warmup, iterations;
	bool verify;
	enum gemm_init init;
	uint64_t seed;
	int device; /* -1: any */
	bool dry_run;
	char label[128]; /* the client's name for the job, may be empty */
};

/* How a spec is launched: the resolved kernel and its launch geometry. */
struct gemm_plan {
	char kernel[96]; /* entry point in the cubin */
	char cubin[64]; /* file name inside the kernel directory */
	unsigned int grid[3];
	unsigned int block[3];
	unsigned int cluster[3];
	unsigned int smem_bytes;
	unsigned int stages;
	struct gemm_tile tile;
};

struct gemm_timing {
	double min_us, median_us, mean_us, stdev_us;
	unsigned int samples;
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
	int64_t first_row, first_col; /* first mismatch, -1 if none */
	double first_got, first_want;
};

struct gemm_result {
	struct gemm_timing timing;
	double tflops; /* at the median time */
	struct gemm_verdict verify;
};

const char *gemm_dtype_to_string(enum gemm_dtype d);
int gemm_dtype_from_string(const char *s);
unsigned int gemm_dtype_size(enum gemm_dtype d);
const char *gemm_layout_to_string(enum gemm_layout l);
int gemm_layout_from_string(const char *s);
const char *gemm_schedule_to_string(enum gemm_schedule s);
int gemm_schedule_from_string(const char *s);
const char *gemm_init_to_string(enum gemm_init i);
int gemm_init_from_string(const char *s);
double gemm_flops(const struct gemm_spec *spec);
