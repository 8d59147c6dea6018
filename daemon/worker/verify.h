/* SPDX-License-Identifier: MIT */
/*
 * verify.h - verification of the kernel under test against an fp32
 * reference (worker only; see verify.c).
 */
#pragma once

#include "gemm.h"
#include "run.h"

/*
 * The first launch, on a poisoned D, against the fp32 reference: the
 * kept one when it is this job's, otherwise one made now (and kept).
 */
int run_verify(struct run *r, struct gemm_verdict *v);

/*
 * The tolerance a job is verified with, |d - r| <= atol + rtol * |r|
 * (both 0: bit for bit), into v->atol and v->rtol.
 */
void verify_tolerance(const struct gemm_spec *s, struct gemm_verdict *v);
