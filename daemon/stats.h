/* SPDX-License-Identifier: MIT */
/*
 * stats.h - statistics over timing samples, and the rule that says when
 * there are enough of them.
 *
 * Pure functions on arrays of doubles: no CUDA, no allocation, so every
 * number a result reports can be checked by hand in a unit test.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "gemm.h"

/* A launch shorter than this is timed in batches... */
#define STATS_SHORT_LAUNCH_US 20.0
/* ...of enough launches for a batch to last this long... */
#define STATS_BATCH_US 50.0
/* ...but of no more launches than this. */
#define STATS_BATCH_MAX 1000u

struct stats_summary {
	size_t n;
	double min, max, mean, stdev;
	double median, p25, p75, p90, p99;
	double sum;
	double noise; /* stats_rel_stderr() */
};

/* When to stop sampling; see stats_should_stop(). */
struct stats_rule {
	unsigned int min_samples;
	unsigned int max_samples;
	double min_time_us;
	double max_time_us;
	double max_noise;
};

/* Ascending, in place; NaN last. */
void stats_sort(double *x, size_t n);

/*
 * The p-th percentile (0 <= p <= 100) of ascending data, interpolating
 * linearly between the two closest ranks: rank (n - 1) * p / 100, counted
 * from 0; at a whole rank the value there, beside an infinity that
 * infinity.  NAN for no data.
 */
double stats_percentile(const double *sorted, size_t n, double p);

/* NAN for no data. */
double stats_mean(const double *x, size_t n);

/* Sample standard deviation (divides by n - 1); 0 for one value. */
double stats_stdev(const double *x, size_t n, double mean);

/*
 * Relative standard error of the mean, stdev / sqrt(n) / mean: INFINITY
 * when it cannot be known (fewer than two values, a mean that is not
 * positive).
 */
double stats_rel_stderr(double mean, double stdev, size_t n);

/* Everything above at once; sorts x in place.  All NAN for no data. */
void stats_summarize(double *x, size_t n, struct stats_summary *ret);

/*
 * Whether to stop after n samples holding total_us of GPU time at the
 * given noise, and why: the noise criterion (n >= min_samples, time >=
 * min_time_us and noise <= max_noise) first, then max_time_us, then
 * max_samples.  *ret_reason is written only when it returns true.
 */
bool stats_should_stop(const struct stats_rule *rule, size_t n, double total_us,
		       double noise, enum gemm_stop *ret_reason);

/* Launches per sample for a launch of launch_us: 1 unless it is short. */
unsigned int stats_batch_size(double launch_us);

/*
 * Samples of sample_us each to take before the next look at the
 * stopping rule: as many as fit in chunk_us (at least one, at most
 * chunk_max), but no more than reach left_us, the GPU time left before
 * the rule's max_time_us (INFINITY: no such limit).
 */
unsigned int stats_chunk_size(double sample_us, double chunk_us,
			      unsigned int chunk_max, double left_us);
