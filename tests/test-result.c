// SPDX-License-Identifier: MIT
/*
 * test-result - result JSON: field names, round trip, no NaN/Inf tokens.
 */
#include <math.h>

#include "check.h"
#include "result.h"

static struct gemm_result sample(void)
{
	struct gemm_result r = {
		.timing = { .min_us = 100.5,
			    .median_us = 101.25,
			    .mean_us = 101.5,
			    .stdev_us = 0.75,
			    .samples = 50 },
		.tflops = 678.9,
		.verify = { .checked = true,
			    .passed = false,
			    .max_abs_err = 0.5,
			    .max_rel_err = 0.25,
			    .rel_fro_err = 1e-3,
			    .atol = 0.0,
			    .rtol = 0.0,
			    .mismatches = 3,
			    .nan_count = 1,
			    .inf_count = 2,
			    .unwritten = 4,
			    .first_row = 7,
			    .first_col = 9,
			    .first_got = 1.0,
			    .first_want = 2.0 },
	};
	return r;
}

static void test_round_trip(void)
{
	struct gemm_result a = sample(), b;
	json_t *j = result_to_json(&a);

	CHECK(j != NULL);
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK(b.timing.samples == 50);
	CHECK(b.timing.median_us > 101.2 && b.timing.median_us < 101.3);
	CHECK(b.tflops > 678.8 && b.tflops < 679.0);
	CHECK(b.verify.checked && !b.verify.passed);
	CHECK_EQ_INT(b.verify.mismatches, 3);
	CHECK_EQ_INT(b.verify.nan_count, 1);
	CHECK_EQ_INT(b.verify.inf_count, 2);
	CHECK_EQ_INT(b.verify.unwritten, 4);
	CHECK_EQ_INT(b.verify.first_row, 7);
	CHECK_EQ_INT(b.verify.first_col, 9);
	json_decref(j);
}

static void test_field_names(void)
{
	struct gemm_result a = sample();
	json_t *j = result_to_json(&a), *v;

	CHECK(json_is_real(
		json_object_get(json_object_get(j, "timing"), "median_us")));
	CHECK(json_is_integer(
		json_object_get(json_object_get(j, "timing"), "samples")));
	CHECK(json_is_real(json_object_get(j, "tflops")));
	v = json_object_get(j, "verify");
	CHECK(json_is_false(json_object_get(v, "passed")));
	CHECK(json_is_object(json_object_get(v, "first_mismatch")));
	CHECK(json_integer_value(json_object_get(
		      json_object_get(v, "first_mismatch"), "row")) == 7);
	json_decref(j);
}

/* JSON has no NaN/Infinity: they must come out as null, never as tokens. */
static void test_not_finite(void)
{
	struct gemm_result a = sample();
	json_t *j, *back;
	char *text;

	a.tflops = NAN;
	a.verify.max_abs_err = INFINITY;
	a.verify.first_got = NAN;
	j = result_to_json(&a);
	CHECK(j != NULL);
	CHECK(json_is_null(json_object_get(j, "tflops")));
	text = json_dumps(j, 0);
	CHECK(text && !strstr(text, "NaN") && !strstr(text, "Infinity") &&
	      !strstr(text, ":nan") && !strstr(text, ":inf"));
	/* and a strict parser takes it back */
	back = json_loads(text ? text : "", 0, NULL);
	CHECK(back != NULL);
	json_decref(back);
	free(text);
	json_decref(j);
}

static void test_unchecked(void)
{
	struct gemm_result a = sample(), b;
	json_t *j;

	a.verify.checked = false;
	j = result_to_json(&a);
	CHECK_EQ_INT(json_object_size(json_object_get(j, "verify")), 1);
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK(!b.verify.checked);
	json_decref(j);
	CHECK(result_from_json(json_object(), &b) < 0);
}

int main(void)
{
	RUN_TEST(test_round_trip);
	RUN_TEST(test_field_names);
	RUN_TEST(test_not_finite);
	RUN_TEST(test_unchecked);
	return check_exit();
}
