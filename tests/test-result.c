// SPDX-License-Identifier: MIT
/*
 * test-result - result JSON: field names, round trip, no NaN/Inf tokens.
 */
#include <math.h>

#include "check.h"
#include "diagnose.h"
#include "result.h"

static double raw[3] = { 101.5, 100.5, 102.5 };

static struct gemm_result sample(void)
{
	struct gemm_result r = {
		.timing = { .min_us = 100.5,
			    .median_us = 101.25,
			    .mean_us = 101.5,
			    .stdev_us = 0.75,
			    .samples = 50,
			    .iqr_us = 1.5,
			    .p90_us = 102.0,
			    .p99_us = 102.5,
			    .noise = 0.001,
			    .gpu_time_ms = 5.075,
			    .stop_reason = GEMM_STOP_NOISE,
			    .mode = GEMM_TIMING_COLD,
			    .l2_flush_bytes = 104857600,
			    .batch = 1 },
		.tflops = 678.9,
		.peak_tflops = 1070.5,
		.peak_percent = 63.4,
		.min_bytes = 100663296,
		.achieved_gbps = 994.2,
		.telemetry = { .sm_clock_min_mhz = 1755,
			       .sm_clock_median_mhz = 1980,
			       .mem_clock_min_mhz = 2619,
			       .mem_clock_median_mhz = 2619,
			       .power_mean_w = 650.5,
			       .power_max_w = 699,
			       .energy_j = 3.25,
			       .temp_max_c = 71,
			       .power_limit_w = 700,
			       .reasons_known = true,
			       .reasons_seen = GEMM_THROTTLE_SW_POWER_CAP |
					       GEMM_THROTTLE_HW_THERMAL |
					       (1ull << 40),
			       .throttled_samples = 4,
			       .tflops_per_watt = 1.04 },
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
			    .overflow = 5,
			    .first_row = 7,
			    .first_col = 9,
			    .first_got = 1.0,
			    .first_want = 2.0,
			    .n_sample = 3,
			    .sample = { { 7, 9, 1.0, 2.0 },
					{ 7, 12, -3.0, -1.0 },
					{ 8, 0, 0.5, 4.0 } } },
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
	CHECK_EQ_INT(b.verify.overflow, 5);
	CHECK_EQ_INT(b.verify.first_row, 7);
	CHECK_EQ_INT(b.verify.first_col, 9);
	CHECK(b.timing.iqr_us > 1.49 && b.timing.iqr_us < 1.51);
	CHECK(b.timing.p99_us > 102.4 && b.timing.p99_us < 102.6);
	CHECK(b.timing.gpu_time_ms > 5.07 && b.timing.gpu_time_ms < 5.08);
	CHECK_EQ_INT(b.timing.stop_reason, GEMM_STOP_NOISE);
	CHECK_EQ_INT(b.timing.mode, GEMM_TIMING_COLD);
	CHECK_EQ_INT(b.timing.l2_flush_bytes, 104857600);
	CHECK_EQ_INT(b.timing.batch, 1);
	CHECK(b.timing.raw_us == NULL);
	CHECK(b.peak_tflops > 1070.4 && b.peak_tflops < 1070.6);
	CHECK_EQ_INT(b.min_bytes, 100663296);
	CHECK(b.telemetry.reasons_known);
	CHECK_EQ_INT(b.telemetry.reasons_seen, a.telemetry.reasons_seen);
	CHECK_EQ_INT(b.telemetry.throttled_samples, 4);
	CHECK(b.telemetry.sm_clock_min_mhz > 1754.9 &&
	      b.telemetry.sm_clock_min_mhz < 1755.1);
	CHECK(b.telemetry.energy_j > 3.24 && b.telemetry.energy_j < 3.26);
	CHECK(b.telemetry.power_limit_w > 699.9 &&
	      b.telemetry.power_limit_w < 700.1);
	json_decref(j);
}

/*
 * A throttle reason the table has no name for comes as "bit_N": read
 * back for N up to 63, ignored past it, as an unknown name is.
 */
static void test_reason_bits(void)
{
	struct gemm_result a = sample(), b;
	json_t *j = result_to_json(&a), *r;

	r = json_pack("[s, s, s, s, s]", "bit_63", "bit_64", "bit_99",
		      "no_such_reason", "sw_power_cap");
	CHECK(j != NULL && r != NULL);
	json_object_set_new(json_object_get(j, "telemetry"),
			    "throttle_reasons_seen", r);
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK(b.telemetry.reasons_known);
	CHECK(b.telemetry.reasons_seen ==
	      (1ull << 63 | GEMM_THROTTLE_SW_POWER_CAP));
	json_decref(j);
}

static void test_raw_samples(void)
{
	struct gemm_result a = sample(), b;
	json_t *j, *arr;

	a.timing.samples = 3;
	a.timing.raw_us = raw;
	j = result_to_json(&a);
	arr = json_object_get(json_object_get(j, "timing"), "raw_us");
	CHECK(json_is_array(arr) && json_array_size(arr) == 3);
	CHECK(json_real_value(json_array_get(arr, 1)) > 100.4);
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK(b.timing.raw_us != NULL);
	if (b.timing.raw_us)
		CHECK(b.timing.raw_us[2] > 102.4 && b.timing.raw_us[2] < 102.6);
	free(b.timing.raw_us);
	/* the count must match the samples */
	json_array_remove(arr, 0);
	CHECK(result_from_json(j, &b) < 0);
	json_decref(j);
}

static void test_new_fields(void)
{
	struct gemm_result a = sample();
	json_t *j = result_to_json(&a), *t, *m, *tel, *r;

	t = json_object_get(j, "timing");
	CHECK_STREQ(json_string_value(json_object_get(t, "stop_reason")),
		    "noise");
	CHECK(json_is_real(json_object_get(t, "iqr_us")));
	CHECK(json_is_real(json_object_get(t, "p90_us")));
	CHECK(json_is_real(json_object_get(t, "noise")));
	CHECK(json_object_get(t, "raw_us") == NULL);
	m = json_object_get(t, "method");
	CHECK_STREQ(json_string_value(json_object_get(m, "mode")), "cold");
	CHECK_EQ_INT(json_integer_value(json_object_get(m, "l2_flush_bytes")),
		     104857600);
	CHECK_EQ_INT(json_integer_value(json_object_get(m, "batch")), 1);
	CHECK_STREQ(json_string_value(json_object_get(m, "flush")),
		    "each_launch");
	CHECK(json_is_real(
		json_object_get(json_object_get(j, "peak"), "dense_tflops")));
	CHECK_EQ_INT(json_integer_value(json_object_get(
			     json_object_get(j, "bytes"), "min")),
		     100663296);
	tel = json_object_get(j, "telemetry");
	CHECK(json_is_real(json_object_get(json_object_get(tel, "sm_clock_mhz"),
					   "median")));
	CHECK(json_is_real(
		json_object_get(json_object_get(tel, "power_w"), "max")));
	r = json_object_get(tel, "throttle_reasons_seen");
	CHECK_EQ_INT(json_array_size(r), 3);
	CHECK_STREQ(json_string_value(json_array_get(r, 0)), "sw_power_cap");
	CHECK_STREQ(json_string_value(json_array_get(r, 1)),
		    "hw_thermal_slowdown");
	CHECK_STREQ(json_string_value(json_array_get(r, 2)), "bit_40");
	CHECK_EQ_INT(
		json_integer_value(json_object_get(tel, "throttled_samples")),
		4);
	json_decref(j);

	a.timing.mode = GEMM_TIMING_COLD;
	a.timing.batch = 8;
	j = result_to_json(&a);
	m = json_object_get(json_object_get(j, "timing"), "method");
	CHECK_STREQ(json_string_value(json_object_get(m, "flush")),
		    "each_batch");
	json_decref(j);
	a.timing.mode = GEMM_TIMING_HOT;
	a.timing.l2_flush_bytes = 0;
	j = result_to_json(&a);
	m = json_object_get(json_object_get(j, "timing"), "method");
	CHECK_STREQ(json_string_value(json_object_get(m, "mode")), "hot");
	CHECK_STREQ(json_string_value(json_object_get(m, "flush")), "none");
	json_decref(j);
}

/* Without NVML every telemetry field is null, never an error. */
static void test_no_telemetry(void)
{
	struct gemm_result a = sample(), b;
	json_t *j, *tel;
	const char *key;
	json_t *v;

	a.telemetry = (struct gemm_telemetry){
		.sm_clock_min_mhz = NAN,
		.sm_clock_median_mhz = NAN,
		.mem_clock_min_mhz = NAN,
		.mem_clock_median_mhz = NAN,
		.power_mean_w = NAN,
		.power_max_w = NAN,
		.energy_j = NAN,
		.temp_max_c = NAN,
		.power_limit_w = NAN,
		.tflops_per_watt = NAN,
	};
	a.peak_tflops = NAN;
	a.peak_percent = NAN;
	j = result_to_json(&a);
	CHECK(j != NULL);
	tel = json_object_get(j, "telemetry");
	CHECK_EQ_INT(json_object_size(tel), 9);
	CHECK(json_is_null(json_object_get(tel, "power_limit_w")));
	json_object_foreach(tel, key, v)
		CHECK(json_is_null(v));
	CHECK(json_is_null(
		json_object_get(json_object_get(j, "peak"), "percent")));
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK(!b.telemetry.reasons_known);
	CHECK(isnan(b.telemetry.power_mean_w));
	CHECK(isnan(b.peak_tflops));
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
	/* Compact, so that a bare token would follow ":" with no space. */
	text = json_dumps(j, JSON_COMPACT);
	CHECK(text && !strstr(text, "NaN") && !strstr(text, "Infinity") &&
	      !strstr(text, ":nan") && !strstr(text, ":inf") &&
	      !strstr(text, ":-nan") && !strstr(text, ":-inf"));
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
	j = json_object();
	CHECK(result_from_json(j, &b) < 0);
	json_decref(j);
}

static struct gemm_result with_baseline(void)
{
	struct gemm_result r = sample();
	struct gemm_baseline_result *b = &r.baseline;

	b->present = true;
	snprintf(b->library, sizeof(b->library), "cublasLt");
	b->version = 130100;
	b->algo_index = 2;
	b->algo_id = 66;
	b->heuristics_tried = 8;
	b->algo.known = true;
	snprintf(b->algo.tile, sizeof(b->algo.tile), "128x256");
	snprintf(b->algo.stages, sizeof(b->algo.stages), "64x4");
	snprintf(b->algo.cluster, sizeof(b->algo.cluster), "2x1x1");
	b->algo.split_k = 1;
	snprintf(b->algo.reduction, sizeof(b->algo.reduction), "none");
	b->algo.swizzle = 0;
	b->algo.custom = -1; /* the library did not say */
	b->order = GEMM_ORDER_INTERLEAVED;
	b->rounds = 12;
	b->telemetry = r.telemetry;
	b->telemetry.power_mean_w = 650.0;
	b->timing = r.timing;
	b->timing.median_us = 110.0;
	b->timing.batch = 3;
	b->tflops = 620.5;
	r.speedup_vs_baseline = 110.0 / 101.25;
	return r;
}

/* Same keys, recursively: the baseline's timing is shaped like ours. */
static bool same_keys(json_t *a, json_t *b)
{
	const char *key;
	json_t *v;

	if (json_object_size(a) != json_object_size(b))
		return false;
	json_object_foreach(a, key, v) {
		json_t *w = json_object_get(b, key);

		if (!w || (json_is_object(v) && !same_keys(v, w)))
			return false;
	}
	return true;
}

static void test_baseline(void)
{
	struct gemm_result a = with_baseline(), c;
	json_t *j = result_to_json(&a), *b, *t;

	b = json_object_get(j, "baseline");
	CHECK(json_is_object(b));
	CHECK_STREQ(json_string_value(json_object_get(b, "library")),
		    "cublasLt");
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "version")), 130100);
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "algo_index")), 2);
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "algo_id")), 66);
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "heuristics_tried")),
		     8);
	CHECK_STREQ(json_string_value(json_object_get(b, "mode")), "fastest");
	CHECK(json_real_value(json_object_get(b, "tflops")) > 620.4);
	CHECK_EQ_INT(json_object_size(b), 12);
	CHECK_STREQ(json_string_value(json_object_get(b, "order")),
		    "interleaved");
	CHECK(same_keys(json_object_get(b, "telemetry"),
			json_object_get(j, "telemetry")));
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "rounds")), 12);
	t = json_object_get(b, "algo");
	CHECK_STREQ(json_string_value(json_object_get(t, "tile")), "128x256");
	CHECK_STREQ(json_string_value(json_object_get(t, "stages")), "64x4");
	CHECK_STREQ(json_string_value(json_object_get(t, "cluster")), "2x1x1");
	CHECK_EQ_INT(json_integer_value(json_object_get(t, "split_k")), 1);
	CHECK_STREQ(json_string_value(json_object_get(t, "reduction")), "none");
	CHECK_EQ_INT(json_integer_value(json_object_get(t, "cta_swizzling")),
		     0);
	CHECK(json_is_null(json_object_get(t, "custom_option")));
	t = json_object_get(b, "timing");
	CHECK(same_keys(t, json_object_get(j, "timing")));
	CHECK(json_real_value(json_object_get(t, "median_us")) > 109.9);
	CHECK(json_real_value(json_object_get(j, "speedup_vs_baseline")) >
	      1.086);
	CHECK(json_real_value(json_object_get(j, "speedup_vs_baseline")) <
	      1.087);

	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK(c.baseline.present);
	CHECK_STREQ(c.baseline.library, "cublasLt");
	CHECK_EQ_INT(c.baseline.version, 130100);
	CHECK_EQ_INT(c.baseline.algo_index, 2);
	CHECK_EQ_INT(c.baseline.algo_id, 66);
	CHECK_EQ_INT(c.baseline.heuristics_tried, 8);
	CHECK_EQ_INT(c.baseline.mode, GEMM_BASELINE_MODE_FASTEST);
	CHECK_EQ_INT(c.baseline.timing.samples, 50);
	CHECK_EQ_INT(c.baseline.timing.batch, 3);
	CHECK(c.baseline.timing.median_us > 109.9 &&
	      c.baseline.timing.median_us < 110.1);
	CHECK(c.baseline.tflops > 620.4 && c.baseline.tflops < 620.6);
	CHECK(c.speedup_vs_baseline > 1.086 && c.speedup_vs_baseline < 1.087);
	CHECK(c.baseline.timing.raw_us == NULL);
	CHECK_EQ_INT(c.baseline.order, GEMM_ORDER_INTERLEAVED);
	CHECK_EQ_INT(c.baseline.rounds, 12);
	CHECK(c.baseline.telemetry.power_mean_w > 649.9 &&
	      c.baseline.telemetry.power_mean_w < 650.1);
	CHECK(c.baseline.algo.known);
	CHECK_STREQ(c.baseline.algo.tile, "128x256");
	CHECK_STREQ(c.baseline.algo.stages, "64x4");
	CHECK_STREQ(c.baseline.algo.cluster, "2x1x1");
	CHECK_STREQ(c.baseline.algo.reduction, "none");
	CHECK_EQ_INT(c.baseline.algo.split_k, 1);
	CHECK_EQ_INT(c.baseline.algo.swizzle, 0);
	CHECK_EQ_INT(c.baseline.algo.custom, -1);
	json_decref(j);

	/* A record from before the description and interleaving. */
	j = result_to_json(&a);
	b = json_object_get(j, "baseline");
	json_object_del(b, "algo");
	json_object_del(b, "order");
	json_object_del(b, "rounds");
	json_object_del(b, "telemetry");
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK(!c.baseline.algo.known);
	CHECK_EQ_INT(c.baseline.order, GEMM_ORDER_SEPARATE);
	CHECK_EQ_INT(c.baseline.rounds, 0);
	CHECK(isnan(c.baseline.telemetry.power_mean_w));
	/* An order we do not know is an error. */
	json_object_set_new(b, "order", json_string("sideways"));
	CHECK(result_from_json(j, &c) < 0);
	json_decref(j);
	/* An algorithm the library describes nothing of: null. */
	a.baseline.algo.known = false;
	j = result_to_json(&a);
	CHECK(json_is_null(
		json_object_get(json_object_get(j, "baseline"), "algo")));
	json_decref(j);
	a.baseline.algo.known = true;

	/* Not finite: null, still valid JSON. */
	a.speedup_vs_baseline = NAN;
	j = result_to_json(&a);
	CHECK(json_is_null(json_object_get(j, "speedup_vs_baseline")));
	json_decref(j);
}

/* "cublas_default": heuristic #0 only, and the block says so. */
static void test_baseline_default(void)
{
	struct gemm_result a = with_baseline(), c;
	json_t *j, *b;

	a.baseline.mode = GEMM_BASELINE_MODE_DEFAULT;
	a.baseline.algo_index = 0;
	a.baseline.heuristics_tried = 1;
	j = result_to_json(&a);
	b = json_object_get(j, "baseline");
	CHECK_STREQ(json_string_value(json_object_get(b, "mode")), "default");
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "heuristics_tried")),
		     1);
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "algo_index")), 0);
	CHECK_EQ_INT(json_integer_value(json_object_get(b, "algo_id")), 66);
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK_EQ_INT(c.baseline.mode, GEMM_BASELINE_MODE_DEFAULT);
	CHECK_EQ_INT(c.baseline.heuristics_tried, 1);
	/* a record from before the choice existed: the fastest */
	json_object_del(b, "mode");
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK_EQ_INT(c.baseline.mode, GEMM_BASELINE_MODE_FASTEST);
	/* a mode we do not know is an error, not a guess */
	json_object_set_new(b, "mode", json_string("slowest"));
	CHECK(result_from_json(j, &c) < 0);
	json_object_set_new(b, "mode", json_integer(1));
	CHECK(result_from_json(j, &c) < 0);
	json_decref(j);
}

/* No baseline asked for: neither key, and reading one back gives none. */
static void test_no_baseline(void)
{
	struct gemm_result a = sample(), c;
	json_t *j = result_to_json(&a);

	CHECK(!json_object_get(j, "baseline"));
	CHECK(!json_object_get(j, "speedup_vs_baseline"));
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK(!c.baseline.present);
	CHECK(isnan(c.speedup_vs_baseline));
	json_decref(j);
	/* A malformed baseline is an error. */
	a = with_baseline();
	j = result_to_json(&a);
	json_object_del(json_object_get(j, "baseline"), "algo_id");
	CHECK(result_from_json(j, &c) < 0);
	json_decref(j);
}

/* The first mismatch carries where it came from, when that is known. */
static void test_where(void)
{
	struct gemm_result a = sample();
	json_t *j, *w;

	a.verify.diagnosed = true;
	a.verify.where.kind = KDIAG_REPLACED;
	a.verify.where.tile_m = 3;
	a.verify.where.tile_n = 1;
	a.verify.where.k_tile = 5;
	a.verify.where.stage = 1;
	a.verify.where.other_k_tile = 1;
	a.verify.where.other_stage = 1;
	a.verify.where.used = 6;
	j = result_to_json(&a);
	w = json_object_get(json_object_get(json_object_get(j, "verify"),
					    "first_mismatch"),
			    "where");
	CHECK_STREQ(json_string_value(json_object_get(w, "kind")),
		    "k_tile_replaced");
	CHECK_EQ_INT(json_integer_value(json_object_get(w, "stage")), 1);
	CHECK_EQ_INT(json_integer_value(json_object_get(w, "mismatches_used")),
		     6);
	CHECK_EQ_INT(json_integer_value(
			     json_array_get(json_object_get(w, "tile"), 0)),
		     3);
	json_decref(j);
	a.verify.diagnosed = false;
	j = result_to_json(&a);
	w = json_object_get(json_object_get(json_object_get(j, "verify"),
					    "first_mismatch"),
			    "where");
	CHECK(json_is_null(w));
	json_decref(j);
}

/* Up to 8 mismatches in index order; the first is first_mismatch. */
static void test_mismatches_sample(void)
{
	struct gemm_result a = sample(), c;
	json_t *j, *v, *arr, *x;

	a.verify.sample[1].got = NAN;
	j = result_to_json(&a);
	v = json_object_get(j, "verify");
	arr = json_object_get(v, "mismatches_sample");
	CHECK(json_is_array(arr));
	CHECK_EQ_INT(json_array_size(arr), 3);
	x = json_array_get(arr, 0);
	CHECK_EQ_INT(json_object_size(x), 4);
	CHECK_EQ_INT(json_integer_value(json_object_get(x, "row")), 7);
	CHECK_EQ_INT(json_integer_value(json_object_get(x, "col")), 9);
	CHECK(json_real_value(json_object_get(x, "got")) > 0.99);
	CHECK(json_real_value(json_object_get(x, "want")) > 1.99);
	/* the same element as first_mismatch, which keeps its "where" */
	CHECK_EQ_INT(json_integer_value(json_object_get(
			     json_object_get(v, "first_mismatch"), "col")),
		     9);
	x = json_array_get(arr, 1);
	CHECK_EQ_INT(json_integer_value(json_object_get(x, "col")), 12);
	CHECK(json_is_null(json_object_get(x, "got")));
	CHECK(json_real_value(json_object_get(x, "want")) < -0.99);
	x = json_array_get(arr, 2);
	CHECK_EQ_INT(json_integer_value(json_object_get(x, "row")), 8);
	CHECK_EQ_INT(json_integer_value(json_object_get(x, "col")), 0);
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK_EQ_INT(c.verify.n_sample, 3);
	CHECK_EQ_INT(c.verify.sample[1].row, 7);
	CHECK_EQ_INT(c.verify.sample[1].col, 12);
	CHECK(isnan(c.verify.sample[1].got));
	CHECK(c.verify.sample[2].want > 3.99 && c.verify.sample[2].want < 4.01);
	json_decref(j);

	/* all eight */
	a.verify.n_sample = GEMM_MISMATCH_SAMPLE;
	for (int i = 0; i < GEMM_MISMATCH_SAMPLE; i++)
		a.verify.sample[i] = (struct gemm_mismatch){ 7, 9 + i, i, -i };
	j = result_to_json(&a);
	arr = json_object_get(json_object_get(j, "verify"),
			      "mismatches_sample");
	CHECK_EQ_INT(json_array_size(arr), GEMM_MISMATCH_SAMPLE);
	CHECK_EQ_INT(
		json_integer_value(json_object_get(
			json_array_get(arr, GEMM_MISMATCH_SAMPLE - 1), "col")),
		9 + GEMM_MISMATCH_SAMPLE - 1);
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK_EQ_INT(c.verify.n_sample, GEMM_MISMATCH_SAMPLE);
	/* more than a verdict holds, or a malformed one: an error */
	json_array_append_new(arr, json_copy(json_array_get(arr, 0)));
	CHECK(result_from_json(j, &c) < 0);
	json_array_remove(arr, GEMM_MISMATCH_SAMPLE);
	json_object_del(json_array_get(arr, 3), "col");
	CHECK(result_from_json(j, &c) < 0);
	/* a record from before the sample: none */
	json_object_del(json_object_get(j, "verify"), "mismatches_sample");
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK_EQ_INT(c.verify.n_sample, 0);
	CHECK_EQ_INT(c.verify.first_row, 7);
	json_decref(j);

	/* passed: an empty sample, no first mismatch */
	a.verify.passed = true;
	a.verify.mismatches = a.verify.nan_count = a.verify.inf_count = 0;
	a.verify.unwritten = 0;
	a.verify.first_row = a.verify.first_col = -1;
	a.verify.n_sample = 0;
	j = result_to_json(&a);
	v = json_object_get(j, "verify");
	arr = json_object_get(v, "mismatches_sample");
	CHECK(json_is_array(arr) && json_array_size(arr) == 0);
	CHECK(json_is_null(json_object_get(v, "first_mismatch")));
	json_decref(j);
}

/* Where the inputs came from: seed, init and whether they were kept. */
static void test_inputs(void)
{
	struct gemm_result a = sample(), c;
	json_t *j, *in;

	a.inputs = (struct gemm_inputs){ .present = true,
					 .init = GEMM_INIT_RANDINT,
					 .seed = 7,
					 .cached = true,
					 .reference_used = true,
					 .reference_cached = true,
					 .intact = true };
	j = result_to_json(&a);
	in = json_object_get(j, "inputs");
	CHECK_EQ_INT(json_object_size(in), 5);
	CHECK(json_is_true(json_object_get(in, "intact")));
	CHECK_STREQ(json_string_value(json_object_get(in, "init")), "randint");
	CHECK_EQ_INT(json_integer_value(json_object_get(in, "seed")), 7);
	CHECK(json_is_true(json_object_get(in, "cached")));
	CHECK(json_is_true(json_object_get(in, "reference_cached")));
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK(c.inputs.present && c.inputs.cached && c.inputs.intact);
	CHECK(c.inputs.reference_used && c.inputs.reference_cached);
	CHECK_EQ_INT(c.inputs.init, GEMM_INIT_RANDINT);
	CHECK_EQ_INT(c.inputs.seed, 7);
	json_decref(j);

	/*
	 * made anew, and written by the job's launches; then not verified:
	 * no reference to speak of
	 */
	a.inputs.cached = false;
	a.inputs.reference_cached = false;
	a.inputs.intact = false;
	a.inputs.seed = (uint64_t)INT64_MAX;
	j = result_to_json(&a);
	in = json_object_get(j, "inputs");
	CHECK(json_is_false(json_object_get(in, "cached")));
	CHECK(json_is_false(json_object_get(in, "reference_cached")));
	CHECK(json_is_false(json_object_get(in, "intact")));
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK(!c.inputs.cached && c.inputs.reference_used &&
	      !c.inputs.reference_cached && !c.inputs.intact);
	CHECK(c.inputs.seed == (uint64_t)INT64_MAX);
	json_decref(j);
	a.inputs.reference_used = false;
	j = result_to_json(&a);
	in = json_object_get(j, "inputs");
	CHECK(json_is_null(json_object_get(in, "reference_cached")));
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK(!c.inputs.reference_used && !c.inputs.reference_cached);
	/* malformed: an error, not a guess */
	json_object_set_new(in, "init", json_string("zeros"));
	CHECK(result_from_json(j, &c) < 0);
	json_object_set_new(in, "init", json_string("normal"));
	json_object_set_new(in, "cached", json_string("yes"));
	CHECK(result_from_json(j, &c) < 0);
	json_object_set_new(in, "cached", json_true());
	json_object_del(in, "intact");
	CHECK(result_from_json(j, &c) < 0);
	json_decref(j);

	/* not reported (an older worker): no key, none read back */
	a.inputs.present = false;
	j = result_to_json(&a);
	CHECK(!json_object_get(j, "inputs"));
	CHECK_EQ_INT(result_from_json(j, &c), 0);
	CHECK(!c.inputs.present);
	json_decref(j);
}

/*
 * result.launch: the grid, the clusters launched and resident, the waves;
 * a resident count the driver did not give is null, and reads back 0.
 */
static void test_launch(void)
{
	struct gemm_result a = sample(), b;
	json_t *j, *l;

	a.launch = (struct gemm_launch){ .grid = { 104, 2, 1 },
					 .ctas = 208,
					 .clusters = 52,
					 .clusters_resident = 30,
					 .waves = 5.0 };
	j = result_to_json(&a);
	l = json_object_get(j, "launch");
	CHECK(json_is_object(l));
	CHECK_EQ_INT(json_integer_value(json_object_get(l, "clusters")), 52);
	CHECK_EQ_INT(
		json_integer_value(json_object_get(l, "clusters_resident")),
		30);
	CHECK(json_is_real(json_object_get(l, "waves")));
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK_EQ_INT(b.launch.ctas, 208);
	CHECK_EQ_INT(b.launch.grid[1], 2);
	CHECK_EQ_INT(b.launch.clusters, 52);
	CHECK_EQ_INT(b.launch.clusters_resident, 30);
	CHECK(fabs(b.launch.waves - 5.0) < 1e-12);
	json_decref(j);

	a.launch.clusters_resident = 0;
	a.launch.waves = 3.875; /* stream-K: units / clusters */
	j = result_to_json(&a);
	l = json_object_get(j, "launch");
	CHECK(json_is_null(json_object_get(l, "clusters_resident")));
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK_EQ_INT(b.launch.clusters_resident, 0);
	CHECK(fabs(b.launch.waves - 3.875) < 1e-12);
	json_decref(j);

	/* malformed: an error, not a guess */
	a.launch.grid[0] = 104;
	j = result_to_json(&a);
	l = json_object_get(j, "launch");
	json_array_set_new(json_object_get(l, "grid"), 1, json_integer(-2));
	CHECK(result_from_json(j, &b) < 0);
	json_array_set_new(json_object_get(l, "grid"), 1, json_integer(2));
	json_object_set_new(l, "ctas", json_integer(-1));
	CHECK(result_from_json(j, &b) < 0);
	json_object_del(l, "ctas");
	CHECK(result_from_json(j, &b) < 0);
	json_decref(j);

	/* No launch reported: none read. */
	a.launch = (struct gemm_launch){ 0 };
	j = result_to_json(&a);
	CHECK(json_object_get(j, "launch") == NULL);
	memset(&b, 0xff, sizeof(b));
	CHECK_EQ_INT(result_from_json(j, &b), 0);
	CHECK_EQ_INT(b.launch.ctas, 0);
	CHECK_EQ_INT(b.launch.grid[0], 0);
	CHECK_EQ_INT(b.launch.clusters, 0);
	json_decref(j);
}

int main(void)
{
	RUN_TEST(test_round_trip);
	RUN_TEST(test_field_names);
	RUN_TEST(test_not_finite);
	RUN_TEST(test_unchecked);
	RUN_TEST(test_raw_samples);
	RUN_TEST(test_reason_bits);
	RUN_TEST(test_new_fields);
	RUN_TEST(test_no_telemetry);
	RUN_TEST(test_baseline);
	RUN_TEST(test_baseline_default);
	RUN_TEST(test_no_baseline);
	RUN_TEST(test_where);
	RUN_TEST(test_inputs);
	RUN_TEST(test_mismatches_sample);
	RUN_TEST(test_launch);
	return check_exit();
}
