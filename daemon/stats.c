// SPDX-License-Identifier: MIT
/*
 * stats.c - order statistics, moments and the stopping rule.
 */
#include <math.h>
#include <stdlib.h>

#include "stats.h"
#include "util.h"

/*
 * Ascending, NaN after every number.  qsort() needs a total order: were
 * NaN equal to everything, 1 < 2 and 2 == NaN == 1 would leave a sort
 * with a NaN in it free to put the numbers around it in any order, and
 * the order statistics would read the wrong samples.
 */
static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	const int x_nan = isnan(x) != 0, y_nan = isnan(y) != 0;

	if (x_nan || y_nan)
		return x_nan - y_nan;
	return (x > y) - (x < y);
}

void stats_sort(double *x, size_t n)
{
	if (n > 1)
		qsort(x, n, sizeof(*x), cmp_double);
}

double stats_percentile(const double *sorted, size_t n, double p)
{
	double rank, frac, a, b;
	size_t lo;

	if (!n)
		return NAN;
	rank = (double)(n - 1) * fmin(fmax(p, 0.0), 100.0) / 100.0;
	lo = (size_t)rank;
	if (lo + 1 >= n)
		return sorted[n - 1];
	frac = rank - (double)lo;
	a = sorted[lo];
	b = sorted[lo + 1];
	/*
	 * At a rank exactly, the value there: 0 * (b - a) is NaN where b
	 * is infinite.
	 */
	if (!(frac > 0))
		return a;
	if (isfinite(a) && isfinite(b))
		return a + frac * (b - a);
	/*
	 * Beside an infinity, weights: a + frac * (b - a) is NaN between
	 * two infinities of one sign (inf - inf) and after -inf.
	 */
	return (1 - frac) * a + frac * b;
}

double stats_mean(const double *x, size_t n)
{
	double sum = 0;

	if (!n)
		return NAN;
	for (size_t i = 0; i < n; i++)
		sum += x[i];
	return sum / (double)n;
}

double stats_stdev(const double *x, size_t n, double mean)
{
	double var = 0;

	if (!n)
		return NAN;
	if (n == 1)
		return 0;
	for (size_t i = 0; i < n; i++)
		var += (x[i] - mean) * (x[i] - mean);
	return sqrt(var / (double)(n - 1));
}

double stats_rel_stderr(double mean, double stdev, size_t n)
{
	if (n < 2 || !(mean > 0))
		return INFINITY;
	return stdev / sqrt((double)n) / mean;
}

void stats_summarize(double *x, size_t n, struct stats_summary *ret)
{
	struct stats_summary s;

	stats_sort(x, n);
	s.n = n;
	s.min = n ? x[0] : NAN;
	s.max = n ? x[n - 1] : NAN;
	s.mean = stats_mean(x, n);
	s.stdev = stats_stdev(x, n, s.mean);
	s.median = stats_percentile(x, n, 50);
	s.p25 = stats_percentile(x, n, 25);
	s.p75 = stats_percentile(x, n, 75);
	s.p90 = stats_percentile(x, n, 90);
	s.p99 = stats_percentile(x, n, 99);
	s.sum = n ? s.mean * (double)n : NAN;
	s.noise = stats_rel_stderr(s.mean, s.stdev, n);
	*ret = s;
}

bool stats_should_stop(const struct stats_rule *rule, size_t n, double total_us,
		       double noise, enum gemm_stop *ret_reason)
{
	if (n >= rule->min_samples && total_us >= rule->min_time_us &&
	    noise <= rule->max_noise) {
		*ret_reason = GEMM_STOP_NOISE;
		return true;
	}
	if (total_us >= rule->max_time_us) {
		*ret_reason = GEMM_STOP_MAX_TIME;
		return true;
	}
	if (n >= rule->max_samples) {
		*ret_reason = GEMM_STOP_MAX_SAMPLES;
		return true;
	}
	return false;
}

unsigned int stats_batch_size(double launch_us)
{
	double b;

	/* NAN or long enough: one launch per sample. */
	if (!(launch_us < STATS_SHORT_LAUNCH_US))
		return 1;
	if (!(launch_us > 0))
		return STATS_BATCH_MAX;
	b = ceil(STATS_BATCH_US / launch_us);
	return b < STATS_BATCH_MAX ? (unsigned int)b : STATS_BATCH_MAX;
}

unsigned int stats_chunk_size(double sample_us, double chunk_us,
			      unsigned int chunk_max, double left_us)
{
	unsigned int n = chunk_max;

	if (sample_us * chunk_max > chunk_us)
		n = MAX(1u, (unsigned int)(chunk_us / sample_us));
	/*
	 * A whole chunk past the time left would overrun a short budget
	 * by up to chunk_us: max_time_ms 5 took up to 20 ms of samples.  The
	 * last one may end past it by less than a sample.
	 */
	if (left_us <= 0)
		return 1;
	if (left_us < sample_us * n)
		n = MAX(1u, (unsigned int)ceil(left_us / sample_us));
	return n;
}
