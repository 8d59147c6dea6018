/* SPDX-License-Identifier: MIT */
/*
 * inputs.h - the inputs a worker keeps between jobs (worker only): A, B,
 * C and the fp32 reference stay on the GPU for the next job on the same
 * problem, in g->cache; see inputs.c for what is reused when, and how a
 * job that writes into them is caught.  run_alloc() is in run.h.
 */
#pragma once

#include <stdbool.h>

#include "gemm.h"
#include "run.h"

/* D for this job; A, B and (beta != 0) C kept or made (see inputs.c). */
int run_buffers(struct run *r);

/*
 * The reference, for verification: its buffer, kept or allocated, as
 * r->ref; made into it unless r->cached[SLOT_REF], then its fingerprint
 * queued (run_ref_sum_queue()) and, once the stream is done, read back
 * and the reference kept for the next job (run_ref_keep()).
 */
int run_ref_buffer(struct run *r);
int run_ref_sum_queue(struct run *r);
int run_ref_keep(struct run *r);

/*
 * At the end of the job, every kept buffer fingerprinted again.  One
 * that changed was written by something the job ran, the kernel under
 * test storing outside D most likely: *ret_intact is cleared, and the
 * set is dropped, to be made anew.
 */
int run_check_kept(struct run *r, bool *ret_intact);

/*
 * The same after a job that failed part way, its context intact (an
 * allocation, a launch or cuBLASLt refused): what is intact stays for
 * the next job, so that one failed configuration in a sweep does not
 * cost the rest their inputs and reference.  The job's error in r->err
 * is left as it was.
 */
void run_check_kept_failed(struct run *r);

/* Where the inputs came from, for the result. */
void run_inputs_report(const struct run *r, struct gemm_inputs *in);

/* Free all that is kept (the GPU closing). */
void inputs_drop(struct gpu *g);
