/* SPDX-License-Identifier: MIT */
/*
 * timing.h - a run's timing (worker only; see timing.c): samples of
 * launches between CUDA events, in chunks, to the job's stopping rule.
 */
#pragma once

#include <stdbool.h>

#include "gemm.h"
#include "run.h"

/*
 * The event pairs of a chunk, room for each timer's samples, and in cold
 * mode the buffer that flushes the L2.
 */
int run_timing_alloc(struct run *r);

/* Microseconds between the events of pair i (both done). */
int run_elapsed(struct run *r, unsigned int i, double *ret_us);

/*
 * Time our kernel and, with a baseline (r->base.launch set), the
 * baseline's, in the job's order.  Separate: ours warmed up and timed
 * to the end, the job's cool-down, then the baseline likewise.
 * Interleaved: both warmed up, then a chunk of samples (about
 * TIMING_CHUNK_US) of one and then the other until each has met the
 * stopping rule.
 */
int run_time(struct run *r);

/*
 * A timer's timing and telemetry, into the result: ours (raw: with every
 * sample, as the spec asks) or the baseline's.
 */
int run_time_report(struct run *r, struct timer *t, struct gemm_timing *timing,
		    struct gemm_telemetry *tele, bool raw);

/*
 * Rates at the median time.  The peak is SMs x the maximum SM clock
 * (CU_DEVICE_ATTRIBUTE_CLOCK_RATE) x GPU_SM90_DENSE_FLOP_PER_CLK, for
 * SM90 only.  The fewest bytes a GEMM can move: A and B read once, D
 * written once and, with beta != 0, C read once, each in its own type.
 */
void run_rates(const struct run *r, struct gemm_result *res);
