// SPDX-License-Identifier: MIT
/*
 * baseline.c - the cuBLASLt baseline: the same GEMM through cuBLASLt on
 * the run's buffers, its algorithm picked (the heuristic's first choice,
 * or the fastest of its top CUBLASLT_ALGOS_MAX in a brief trial), then
 * timed alongside ours (timing.c) and reported next to it.  The
 * cuBLASLt GEMM itself (run_lt_new()) serves the cuBLASLt reference of
 * verify.c too.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "baseline.h"
#include "cublaslt.h"
#include "plan.h"
#include "run.h"
#include "timing.h"
#include "util.h"

/* A baseline algorithm's trial: one launch to warm up, these timed. */
#define BASELINE_TRIAL_LAUNCHES 5u

int run_lt_new(struct run *r, enum gemm_dtype out, CUdeviceptr c, CUdeviceptr d,
	       float alpha, float beta, unsigned int algos,
	       struct cublaslt_gemm **ret)
{
	const struct gemm_spec *s = r->spec;
	struct cublaslt_gemm_desc desc = {
		.dtype = s->dtype,
		.out = out,
		.layout = s->layout,
		.m = s->m,
		.n = s->n,
		.k = s->k,
		.alpha = alpha,
		.beta = beta,
		.a = r->a,
		.b = r->b,
		.c = c,
		.d = d,
		.workspace_bytes = PLAN_CUBLASLT_WORKSPACE,
		.algos = algos,
	};
	int e;

	e = cublaslt_load(r->err, r->errlen);
	if (e)
		return e;
	if (!r->lt_ws)
		e = run_alloc(r, &r->lt_ws, PLAN_CUBLASLT_WORKSPACE);
	if (e)
		return e;
	desc.workspace = r->lt_ws;
	return cublaslt_gemm_new(&desc, ret, r->err, r->errlen);
}

int run_lt_failed(struct run *r, int e)
{
	CUresult res = gpu_cuda->cuStreamQuery(r->g->stream);

	if (cuda_api_is_sticky(res))
		r->sticky = true;
	return run_context(r, e, "cuBLASLt");
}

static int run_launch_lt(struct run *r)
{
	int e = cublaslt_gemm_launch(r->lt, r->g->stream, r->err, r->errlen);

	return e ? run_lt_failed(r, e) : 0;
}

/*
 * Time algorithm i briefly: one launch to warm up, then
 * BASELINE_TRIAL_LAUNCHES between the first event pair, on a warm L2
 * whatever the job's mode.  An algorithm the library refuses at its
 * first launch is skipped (*ret_us = INFINITY); a launch that fails
 * after one has worked fails the job: something else went wrong.
 */
static int run_lt_trial(struct run *r, unsigned int i, double *ret_us)
{
	int e;

	*ret_us = INFINITY;
	cublaslt_gemm_select(r->lt, i);
	e = run_launch_lt(r);
	if (e)
		return r->sticky ? e : 0;
	e = CU(r, cuEventRecord, r->events[0], r->g->stream);
	for (unsigned int k = 0; k < BASELINE_TRIAL_LAUNCHES && !e; k++)
		e = run_launch_lt(r);
	if (!e)
		e = CU(r, cuEventRecord, r->events[1], r->g->stream);
	if (!e)
		e = run_sync(r, "cuBLASLt algorithm trial",
			     BASELINE_TRIAL_LAUNCHES + 1);
	if (!e)
		e = run_elapsed(r, 0, ret_us);
	if (!e)
		*ret_us /= BASELINE_TRIAL_LAUNCHES;
	return e;
}

/* Try each algorithm the heuristic gave; *ret: the fastest. */
static int run_lt_fastest(struct run *r, unsigned int n, unsigned int *ret)
{
	double best = INFINITY, us;
	int e;

	for (unsigned int i = 0; i < n; i++) {
		e = run_lt_trial(r, i, &us);
		if (e)
			return e;
		if (us < best) {
			best = us;
			*ret = i;
		}
	}
	if (!(best < INFINITY))
		return run_context(r, -EOPNOTSUPP,
				   "no cuBLASLt algorithm could be launched");
	/*
	 * The reason an algorithm was skipped stays in r->err, where a
	 * later error that sets none of its own would be read with it.
	 */
	r->err[0] = '\0';
	return 0;
}

/*
 * Select the algorithm to time.  In the default mode the heuristic was
 * asked for one only, and it is taken untried, as cuBLAS would take it.
 */
static int run_lt_pick(struct run *r, struct gemm_baseline_result *b)
{
	const unsigned int n = cublaslt_gemm_algos(r->lt);
	unsigned int pick = 0;
	int e;

	if (b->mode == GEMM_BASELINE_MODE_FASTEST) {
		e = run_lt_fastest(r, n, &pick);
		if (e)
			return e;
	}
	cublaslt_gemm_select(r->lt, pick);
	b->heuristics_tried = n;
	b->algo_index = (int)pick;
	b->algo_id = cublaslt_gemm_algo_id(r->lt, pick);
	return 0;
}

int run_baseline_prepare(struct run *r, struct gemm_result *res)
{
	const struct gemm_spec *s = r->spec;
	struct gemm_baseline_result *b = &res->baseline;
	const bool first = s->baseline == GEMM_BASELINE_CUBLAS_DEFAULT;
	int e;

	b->mode = first ? GEMM_BASELINE_MODE_DEFAULT :
			  GEMM_BASELINE_MODE_FASTEST;
	e = run_lt_new(r, s->out, r->reads_c ? r->c : 0, r->d, (float)s->alpha,
		       r->reads_c ? (float)s->beta : 0.0f,
		       first ? 1 : CUBLASLT_ALGOS_MAX, &r->lt);
	if (!e)
		e = run_lt_pick(r, b);
	if (e)
		return e;
	cublaslt_gemm_algo_describe(r->lt, (unsigned int)b->algo_index,
				    &b->algo);
	r->base.launch = run_launch_lt;
	return 0;
}

int run_baseline_report(struct run *r, struct gemm_result *res)
{
	struct gemm_baseline_result *b = &res->baseline;
	int e;

	e = run_time_report(r, &r->base, &b->timing, &b->telemetry, false);
	if (e)
		return e;
	snprintf(b->library, sizeof(b->library), "cublasLt");
	b->version = cublaslt_version();
	b->order = r->spec->baseline_order;
	b->rounds = r->base.chunks;
	b->tflops = gemm_flops(r->spec) / (b->timing.median_us * 1e-6) / 1e12;
	b->telemetry.tflops_per_watt = b->tflops / b->telemetry.power_mean_w;
	b->present = true;
	res->speedup_vs_baseline = b->timing.median_us / res->timing.median_us;
	return 0;
}
