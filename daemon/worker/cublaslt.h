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

/* Heuristic results asked for; each is tried briefly, the fastest kept. */
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
 * One GEMM of our tn layout on existing buffers: A row-major m x k, B
 * stored n x k (row-major, K-major), D row-major m x n; dtype in, fp32
 * compute, out either dtype (fp32_out false) or fp32.
 */
struct cublaslt_gemm_desc {
	enum gemm_dtype dtype;
	bool fp32_out;
	uint64_t m, n, k;
	CUdeviceptr a, b, d;
	CUdeviceptr workspace;
	size_t workspace_bytes;
};

struct cublaslt_gemm;

/*
 * Describe the GEMM and ask the heuristic for up to CUBLASLT_ALGOS_MAX
 * algorithms; the first is selected.  The context must be current.
 */
int cublaslt_gemm_new(const struct cublaslt_gemm_desc *desc,
		      struct cublaslt_gemm **ret, char *err, size_t errlen);
struct cublaslt_gemm *cublaslt_gemm_free(struct cublaslt_gemm *g);

/* How many algorithms the heuristic returned (at least one). */
unsigned int cublaslt_gemm_algos(const struct cublaslt_gemm *g);
/* CUBLASLT_ALGO_CONFIG_ID of algorithm i, or -1 if it cannot be read. */
int cublaslt_gemm_algo_id(const struct cublaslt_gemm *g, unsigned int i);
void cublaslt_gemm_select(struct cublaslt_gemm *g, unsigned int i);

/* Queue one launch of the selected algorithm on stream. */
int cublaslt_gemm_launch(struct cublaslt_gemm *g, CUstream stream, char *err,
			 size_t errlen);
