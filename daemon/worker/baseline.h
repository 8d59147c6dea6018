/* SPDX-License-Identifier: MIT */
/*
 * baseline.h - the cuBLASLt baseline of a run (worker only; see
 * baseline.c).  run_lt_new() and run_lt_failed() are in run.h.
 */
#pragma once

#include "gemm.h"
#include "run.h"

/*
 * The baseline: cuBLASLt on the same A, B, C and D (same alpha, beta and
 * output type), timed exactly as ours is (same mode, warm-up and
 * stopping rule) and alongside it.  D is overwritten, which is fine:
 * verification is done by now.  "cublas" times the fastest of the
 * heuristic's top CUBLASLT_ALGOS_MAX, "cublas_default" its first choice,
 * the like-for-like figure next to a framework that calls cuBLAS.  The
 * trials of "cublas" run here, before either is timed.
 */
int run_baseline_prepare(struct run *r, struct gemm_result *res);

/* Its timing, telemetry, algorithm and speed-up, into the result. */
int run_baseline_report(struct run *r, struct gemm_result *res);
