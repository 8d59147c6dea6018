// SPDX-License-Identifier: MIT
/*
 * test-stats - percentiles, moments and the stopping rule, against values
 * worked out by hand.
 */
#include <math.h>

#include "check.h"
#include "stats.h"

/* Equal to within rounding of the last few bits. */
static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * fmax(1, fabs(b));
}

#define CHECK_NEAR(a, b) CHECK(near((a), (b)))

static void test_percentile_odd(void)
{
	const double x[] = { 10, 20, 30, 40, 50 };

	/* rank = (n - 1) * p / 100 = 4p / 100 */
	CHECK_NEAR(stats_percentile(x, 5, 0), 10);
	CHECK_NEAR(stats_percentile(x, 5, 25), 20);
	CHECK_NEAR(stats_percentile(x, 5, 50), 30);
	CHECK_NEAR(stats_percentile(x, 5, 75), 40);
	CHECK_NEAR(stats_percentile(x, 5, 90), 46); /* 40 + 0.6 * 10 */
	CHECK_NEAR(stats_percentile(x, 5, 99), 49.6); /* 40 + 0.96 * 10 */
	CHECK_NEAR(stats_percentile(x, 5, 100), 50);
}

static void test_percentile_even(void)
{
	const double x[] = { 1, 2, 3, 4 };

	CHECK_NEAR(stats_percentile(x, 4, 50), 2.5); /* rank 1.5 */
	CHECK_NEAR(stats_percentile(x, 4, 25), 1.75); /* rank 0.75 */
	CHECK_NEAR(stats_percentile(x, 4, 75), 3.25); /* rank 2.25 */
	CHECK(isnan(stats_percentile(x, 0, 50)));
	CHECK_NEAR(stats_percentile(x, 1, 99), 1);
}

/*
 * An infinite sample is the neighbour of a rank, not a weight on it: at
 * a rank exactly the value there, between a number and an infinity that
 * infinity, between two of one sign that one.
 */
static void test_percentile_inf(void)
{
	const double x[] = { 1, 2, 3, INFINITY, INFINITY };
	const double y[] = { -INFINITY, -INFINITY, 5, 6 };

	CHECK_NEAR(stats_percentile(x, 5, 50), 3); /* rank 2 */
	CHECK_NEAR(stats_percentile(x, 5, 25), 2); /* rank 1 */
	CHECK(stats_percentile(x, 5, 60) > 0 &&
	      isinf(stats_percentile(x, 5, 60))); /* rank 2.4 */
	CHECK(stats_percentile(x, 5, 90) > 0 &&
	      isinf(stats_percentile(x, 5, 90))); /* rank 3.6 */
	CHECK(stats_percentile(y, 4, 10) < 0 &&
	      isinf(stats_percentile(y, 4, 10))); /* rank 0.3 */
	CHECK(stats_percentile(y, 4, 50) < 0 &&
	      isinf(stats_percentile(y, 4, 50))); /* rank 1.5 */
	CHECK_NEAR(stats_percentile(y, 4, 100), 6);
}

static void test_moments(void)
{
	const double a[] = { 1, 3, 5 }, b[] = { 9, 11 }, c[] = { 7 };

	/* mean 3; squared deviations 4 + 0 + 4 = 8; 8 / 2 = 4 */
	CHECK_NEAR(stats_mean(a, 3), 3);
	CHECK_NEAR(stats_stdev(a, 3, 3), 2);
	CHECK_NEAR(stats_rel_stderr(3, 2, 3), 2 / sqrt(3) / 3);
	/* mean 10, stdev sqrt(2): sqrt(2) / sqrt(2) / 10 */
	CHECK_NEAR(stats_stdev(b, 2, 10), sqrt(2));
	CHECK_NEAR(stats_rel_stderr(10, sqrt(2), 2), 0.1);
	/* one value: no spread known, so no noise estimate */
	CHECK_NEAR(stats_stdev(c, 1, 7), 0);
	CHECK(isinf(stats_rel_stderr(7, 0, 1)));
	CHECK(isinf(stats_rel_stderr(0, 1, 5)));
	CHECK(isnan(stats_mean(c, 0)));
}

static void test_summarize(void)
{
	double x[] = { 4, 1, 3, 2 };
	struct stats_summary s;

	stats_summarize(x, 4, &s);
	CHECK_EQ_INT(s.n, 4);
	CHECK_NEAR(x[0], 1); /* sorted in place */
	CHECK_NEAR(x[3], 4);
	CHECK_NEAR(s.min, 1);
	CHECK_NEAR(s.max, 4);
	CHECK_NEAR(s.mean, 2.5);
	CHECK_NEAR(s.median, 2.5);
	CHECK_NEAR(s.p75 - s.p25, 1.5);
	CHECK_NEAR(s.p90, 3.7); /* rank 2.7 */
	CHECK_NEAR(s.p99, 3.97); /* rank 2.97 */
	CHECK_NEAR(s.sum, 10);
	/* squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5, over 3 */
	CHECK_NEAR(s.stdev, sqrt(5.0 / 3));
	CHECK_NEAR(s.noise, sqrt(5.0 / 3) / 2 / 2.5);

	stats_summarize(x, 0, &s);
	CHECK(isnan(s.min) && isnan(s.median) && isnan(s.mean));
	CHECK(isinf(s.noise));
}

/*
 * A NaN sample goes last: with a comparator that calls NaN equal to
 * everything the sort is not one, and the numbers around it stay out
 * of order.
 */
static void test_sort_nan(void)
{
	double x[] = { NAN, 3, 1, 2 }, y[] = { 4, 2, NAN, 3, 1, NAN, 0 };
	struct stats_summary s;

	stats_sort(x, 4);
	CHECK_NEAR(x[0], 1);
	CHECK_NEAR(x[1], 2);
	CHECK_NEAR(x[2], 3);
	CHECK(isnan(x[3]));
	stats_summarize(y, 7, &s);
	for (int i = 0; i < 5; i++)
		CHECK_NEAR(y[i], i);
	CHECK(isnan(y[5]) && isnan(y[6]));
	CHECK_NEAR(s.min, 0);
	CHECK_NEAR(s.median, 3); /* rank 3 */
	CHECK(isnan(s.max) && isnan(s.mean));
}

static int stop(const struct stats_rule *rule, size_t n, double us,
		double noise)
{
	enum gemm_stop why = _GEMM_STOP_MAX;

	if (!stats_should_stop(rule, n, us, noise, &why))
		return -1;
	return (int)why;
}

static void test_should_stop(void)
{
	const struct stats_rule rule = {
		.min_samples = 10,
		.max_samples = 100,
		.min_time_us = 100,
		.max_time_us = 1000,
		.max_noise = 0.01,
	};

	/* noise: each of its three conditions is needed */
	CHECK_EQ_INT(stop(&rule, 9, 500, 0.001), -1);
	CHECK_EQ_INT(stop(&rule, 10, 99, 0.001), -1);
	CHECK_EQ_INT(stop(&rule, 10, 100, 0.011), -1);
	CHECK_EQ_INT(stop(&rule, 10, 100, 0.01), GEMM_STOP_NOISE);
	CHECK_EQ_INT(stop(&rule, 10, 100, INFINITY), -1);
	CHECK_EQ_INT(stop(&rule, 10, 100, NAN), -1);
	/* max_time, whatever the samples and noise */
	CHECK_EQ_INT(stop(&rule, 2, 999.9, 0.5), -1);
	CHECK_EQ_INT(stop(&rule, 2, 1000, 0.5), GEMM_STOP_MAX_TIME);
	CHECK_EQ_INT(stop(&rule, 50, 1500, INFINITY), GEMM_STOP_MAX_TIME);
	/* the hard cap on samples */
	CHECK_EQ_INT(stop(&rule, 99, 999, 0.5), -1);
	CHECK_EQ_INT(stop(&rule, 100, 999, 0.5), GEMM_STOP_MAX_SAMPLES);
	/* a converged run says so even when a limit is reached too */
	CHECK_EQ_INT(stop(&rule, 100, 1000, 0.001), GEMM_STOP_NOISE);
	CHECK_EQ_INT(stop(&rule, 100, 999, 0.5), GEMM_STOP_MAX_SAMPLES);
}

static void test_batch_size(void)
{
	CHECK_EQ_INT(stats_batch_size(1000), 1);
	CHECK_EQ_INT(stats_batch_size(20), 1);
	CHECK_EQ_INT(stats_batch_size(19.9), 3); /* ceil(50 / 19.9) */
	CHECK_EQ_INT(stats_batch_size(10), 5);
	CHECK_EQ_INT(stats_batch_size(0.5), 100);
	CHECK_EQ_INT(stats_batch_size(0.04), 1000); /* 1250, capped */
	CHECK_EQ_INT(stats_batch_size(0), 1000);
	CHECK_EQ_INT(stats_batch_size(NAN), 1);
}

/*
 * A chunk is about chunk_us of samples, but never runs far past the time
 * the stopping rule has left: a short max_time_ms is a budget, not a
 * chunk of 20 ms.
 */
static void test_chunk_size(void)
{
	/* no limit: as many as fit in 20 ms, 1..256 */
	CHECK_EQ_INT(stats_chunk_size(50, 20000, 256, INFINITY), 256);
	CHECK_EQ_INT(stats_chunk_size(1000, 20000, 256, INFINITY), 20);
	CHECK_EQ_INT(stats_chunk_size(50000, 20000, 256, INFINITY), 1);
	CHECK_EQ_INT(stats_chunk_size(0, 20000, 256, INFINITY), 256);
	CHECK_EQ_INT(stats_chunk_size(NAN, 20000, 256, INFINITY), 256);
	/* plenty of time left: the same */
	CHECK_EQ_INT(stats_chunk_size(1000, 20000, 256, 5e6), 20);
	/* max_time_ms 5, none taken yet: enough to reach 5 ms, not 20 */
	CHECK_EQ_INT(stats_chunk_size(50, 20000, 256, 5000), 100);
	CHECK_EQ_INT(stats_chunk_size(1000, 20000, 256, 5000), 5);
	/* a part of a sample left: one more, which reaches it */
	CHECK_EQ_INT(stats_chunk_size(1000, 20000, 256, 4500), 5);
	CHECK_EQ_INT(stats_chunk_size(1000, 20000, 256, 1), 1);
	CHECK_EQ_INT(stats_chunk_size(50000, 20000, 256, 1000), 1);
	/* nothing left (the rule stops first): still at least one */
	CHECK_EQ_INT(stats_chunk_size(1000, 20000, 256, 0), 1);
	CHECK_EQ_INT(stats_chunk_size(1000, 20000, 256, -5), 1);
}

int main(void)
{
	RUN_TEST(test_percentile_odd);
	RUN_TEST(test_percentile_even);
	RUN_TEST(test_percentile_inf);
	RUN_TEST(test_moments);
	RUN_TEST(test_summarize);
	RUN_TEST(test_sort_nan);
	RUN_TEST(test_should_stop);
	RUN_TEST(test_batch_size);
	RUN_TEST(test_chunk_size);
	return check_exit();
}
