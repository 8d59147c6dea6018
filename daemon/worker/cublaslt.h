/* SPDX-License-Identifier: MIT */
/*
 * cublaslt.h - cuBLASLt, loaded at run time, for the baseline GEMM and
 * the cuBLASLt reference (worker process only).
 *
 * The worker does not link cuBLASLt: libcublasLt.so.13, .so.12 or .so
 * (or $GEMMD_CUBLASLT_LIBRARY) is dlopen()ed on first use, and a build
 * without cublasLt.h reports it unavailable.  This module makes no
 * driver calls of its own: the caller makes the context current and
 * owns the buffers, the workspace and the stream.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda.h>
#include <jansson.h>

#include "gemm.h"

/*
 * Heuristic results asked for at most: the "cublas" baseline tries each
 * briefly and keeps the fastest.
 */
#define CUBLASLT_ALGOS_MAX 8

/*
 * Load the library once per process.  Returns 0, or -ENOENT (library
 * not found) or -ENOSYS (built without cublasLt.h, or an entry point is
 * missing) with the reason in err, every time it is asked.
 */
int cublaslt_load(char *err, size_t errlen);

/* {"available": bool, "version": N|null}: loads the library if need be. */
json_t *cublaslt_to_json(void);

/* cublasLtGetVersion(), e.g. 130100; 0 when not loaded. */
int cublaslt_version(void);

/*
 * One GEMM on existing buffers: D = alpha * A * B + beta * C, A and B of
 * dtype (bf16 or fp16) in the layout's storage (see gemm.h), C and D
 * row-major m x n of type out (dtype or fp32), fp32 compute.  c is read
 * only when beta != 0; it may be d (in place), and 0 when beta is 0.
 */
struct cublaslt_gemm_desc {
	enum gemm_dtype dtype;
	enum gemm_dtype out;
	enum gemm_layout layout;
	uint64_t m, n, k;
	float alpha, beta;
	CUdeviceptr a, b, c, d;
	CUdeviceptr workspace;
	size_t workspace_bytes;
	/*
	 * Heuristic results to ask for, 1..CUBLASLT_ALGOS_MAX (0: the
	 * most).  1 asks for what cuBLAS itself would run.
	 */
	unsigned int algos;
};

struct cublaslt_gemm;

/*
 * Describe the GEMM and ask the heuristic for up to desc->algos
 * algorithms; the first is selected.  The context must be current.
 * -EOPNOTSUPP with the reason in err for a type pair cuBLASLt lacks.
 */
int cublaslt_gemm_new(const struct cublaslt_gemm_desc *desc,
		      struct cublaslt_gemm **ret, char *err, size_t errlen);
struct cublaslt_gemm *cublaslt_gemm_free(struct cublaslt_gemm *g);

/* How many algorithms the heuristic returned (at least one). */
unsigned int cublaslt_gemm_algos(const struct cublaslt_gemm *g);
/* CUBLASLT_ALGO_CONFIG_ID of algorithm i, or -1 if it cannot be read. */
int cublaslt_gemm_algo_id(const struct cublaslt_gemm *g, unsigned int i);
/* The configuration of algorithm i: tile, stages, cluster, split-K. */
void cublaslt_gemm_algo_describe(const struct cublaslt_gemm *g, unsigned int i,
				 struct gemm_lt_algo *ret);
void cublaslt_gemm_select(struct cublaslt_gemm *g, unsigned int i);

/* Queue one launch of the selected algorithm on stream. */
int cublaslt_gemm_launch(struct cublaslt_gemm *g, CUstream stream, char *err,
			 size_t errlen);
