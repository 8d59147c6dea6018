// SPDX-License-Identifier: MIT
/*
 * test-spec - job parsing and validation: every error the API promises.
 */
#include <math.h>

#include "check.h"
#include "spec.h"

static int parse(const char *body, struct gemm_spec *spec,
		 struct gemmd_error *err)
{
	memset(err, 0, sizeof(*err));
	return spec_parse(body, strlen(body), spec, err);
}

/* Expect a 400 with this code and field. */
static void expect_error(const char *body, const char *code, const char *field)
{
	struct gemmd_error err;
	struct gemm_spec spec;
	int r = parse(body, &spec, &err);

	CHECK(r < 0);
	CHECK_EQ_INT(err.status, 400);
	CHECK_STREQ(err.code, code);
	if (field)
		CHECK_STREQ(err.field, field);
	CHECK(err.message[0] != '\0');
	if (r >= 0 || strcmp(err.code, code))
		fprintf(stderr, "  body: %s\n  got: %s %s\n", body, err.code,
			err.message);
}

static void test_minimal_defaults(void)
{
	struct gemmd_error err;
	struct gemm_spec s;

	CHECK_EQ_INT(parse("{\"m\":1000,\"n\":1500,\"k\":1032}", &s, &err), 0);
	CHECK_EQ_INT(s.m, 1000);
	CHECK_EQ_INT(s.n, 1500);
	CHECK_EQ_INT(s.k, 1032);
	CHECK_EQ_INT(s.dtype, GEMM_DTYPE_BF16);
	CHECK_EQ_INT(s.layout, GEMM_LAYOUT_TN);
	CHECK_EQ_INT(s.schedule, GEMM_SCHEDULE_WS);
	CHECK_EQ_INT(s.stages, 0);
	CHECK_EQ_INT(s.cluster_x, 1);
	CHECK_EQ_INT(s.cluster_y, 1);
	CHECK_EQ_INT(s.out, GEMM_DTYPE_BF16);
	CHECK_EQ_INT(s.raster, GEMM_RASTER_AUTO);
	CHECK_EQ_INT(s.swizzle, 0);
	CHECK_EQ_INT(s.epilogue, GEMM_EPILOGUE_AUTO);
	CHECK_EQ_INT(s.decomposition, GEMM_DECOMP_DATA_PARALLEL);
	CHECK_EQ_INT(s.placement, GEMM_PLACEMENT_NONE);
	CHECK_EQ_INT(s.occupancy, GEMM_OCCUPANCY_AUTO);
	CHECK(fabs(s.alpha - 1.0) < 1e-15);
	CHECK(fabs(s.beta) < 1e-15);
	CHECK_EQ_INT(s.warmup, 10);
	CHECK_EQ_INT(s.iterations, 0); /* the stopping rule decides */
	CHECK_EQ_INT(s.timing_mode, GEMM_TIMING_COLD);
	CHECK_EQ_INT(s.min_samples, 10);
	CHECK_EQ_INT(s.min_time_ms, 100);
	CHECK(fabs(s.max_noise - 0.005) < 1e-15);
	CHECK_EQ_INT(s.max_time_ms, 5000);
	CHECK_EQ_INT(s.cooldown_ms, 100);
	CHECK_EQ_INT(s.baseline_order, GEMM_ORDER_SEPARATE);
	CHECK(!s.raw_samples);
	CHECK(s.verify);
	CHECK_EQ_INT(s.init, GEMM_INIT_NORMAL);
	CHECK_EQ_INT(s.seed, 1);
	CHECK_EQ_INT(s.device, -1);
	CHECK(!s.dry_run);
	CHECK_EQ_INT(s.baseline, GEMM_BASELINE_NONE);
	CHECK_EQ_INT(s.reference, GEMM_REFERENCE_DEVICE);
}

static void test_full(void)
{
	const char *body =
		"{\"m\":4096,\"n\":4096,\"k\":4096,\"dtype\":\"fp16\","
		"\"layout\":\"tn\",\"kernel\":{\"schedule\":\"ws\","
		"\"tile\":\"128x256x64\",\"stages\":3,\"cluster\":[1,1]},"
		"\"timing\":{\"warmup\":2,\"iterations\":7,\"mode\":\"hot\","
		"\"min_samples\":3,\"min_time_ms\":50,\"max_time_ms\":2000,"
		"\"max_noise\":0.01,\"cooldown_ms\":0,\"samples\":true,"
		"\"baseline_order\":\"interleaved\"},"
		"\"verify\":{\"enabled\":false,\"init\":\"randint\","
		"\"seed\":42,\"reference\":\"device\"},\"device\":0,"
		"\"dry_run\":true,\"label\":\"sweep-1\"}";
	struct gemmd_error err;
	struct gemm_spec s;

	CHECK_EQ_INT(parse(body, &s, &err), 0);
	CHECK_EQ_INT(s.dtype, GEMM_DTYPE_FP16);
	CHECK_EQ_INT(s.tile.m, 128);
	CHECK_EQ_INT(s.tile.n, 256);
	CHECK_EQ_INT(s.tile.k, 64);
	CHECK_EQ_INT(s.stages, 3);
	CHECK_EQ_INT(s.warmup, 2);
	CHECK_EQ_INT(s.iterations, 7);
	CHECK_EQ_INT(s.timing_mode, GEMM_TIMING_HOT);
	CHECK_EQ_INT(s.min_samples, 3);
	CHECK_EQ_INT(s.min_time_ms, 50);
	CHECK_EQ_INT(s.max_time_ms, 2000);
	CHECK(fabs(s.max_noise - 0.01) < 1e-15);
	CHECK_EQ_INT(s.cooldown_ms, 0);
	CHECK_EQ_INT(s.baseline_order, GEMM_ORDER_INTERLEAVED);
	CHECK(s.raw_samples);
	CHECK(!s.verify);
	CHECK_EQ_INT(s.init, GEMM_INIT_RANDINT);
	CHECK_EQ_INT(s.seed, 42);
	CHECK_EQ_INT(s.device, 0);
	CHECK(s.dry_run);
	CHECK_STREQ(s.label, "sweep-1");
}

static void round_trip(const char *body)
{
	struct gemmd_error err;
	struct gemm_spec a, b;
	json_t *j;

	CHECK_EQ_INT(parse(body, &a, &err), 0);
	j = spec_to_json(&a);
	CHECK(j != NULL);
	CHECK_EQ_INT(spec_from_json(j, &b, &err), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	json_decref(j);
}

static void test_round_trip(void)
{
	round_trip("{\"m\":77,\"n\":88,\"k\":96,\"dtype\":\"fp16\","
		   "\"kernel\":{\"tile\":\"128x128x64\",\"stages\":5},"
		   "\"verify\":{\"init\":\"uniform\",\"seed\":9}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"baseline\":\"cublas\","
		   "\"verify\":{\"reference\":\"cublas\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"baseline\":null}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"baseline\":"
		   "\"cublas_default\"}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"dtype\":\"fp16\","
		   "\"out_dtype\":\"fp32\",\"layout\":\"nt\","
		   "\"alpha\":0.1,\"beta\":-2.5,\"kernel\":{"
		   "\"schedule\":\"pingpong\",\"cluster\":[2,4],"
		   "\"raster\":\"along_n\",\"swizzle\":4,"
		   "\"epilogue\":\"tma\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{\"swizzle\":null,"
		   "\"raster\":\"auto\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		   "\"schedule\":\"cooperative\","
		   "\"decomposition\":\"stream_k\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		   "\"schedule\":\"pingpong\",\"placement\":\"gpc\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		   "\"placement\":\"none\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		   "\"schedule\":\"cooperative\",\"occupancy\":\"full\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		   "\"occupancy\":\"balanced\"}}");
	round_trip("{\"m\":8,\"n\":8,\"k\":8,\"timing\":{\"iterations\":3,"
		   "\"mode\":\"hot\",\"min_samples\":4,\"min_time_ms\":0,"
		   "\"max_time_ms\":7,\"max_noise\":0.0123,"
		   "\"cooldown_ms\":5000,\"samples\":true,"
		   "\"baseline_order\":\"interleaved\"}}");
}

/* The timing block as the API shows it: every default, iterations null. */
static void test_timing_json(void)
{
	struct gemmd_error err;
	struct gemm_spec s;
	json_t *j, *t;

	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"timing\":"
			   "{\"iterations\":null}}",
			   &s, &err),
		     0);
	j = spec_to_json(&s);
	t = json_object_get(j, "timing");
	CHECK(json_is_null(json_object_get(t, "iterations")));
	CHECK_STREQ(json_string_value(json_object_get(t, "mode")), "cold");
	CHECK_EQ_INT(json_integer_value(json_object_get(t, "min_samples")), 10);
	CHECK_EQ_INT(json_integer_value(json_object_get(t, "min_time_ms")),
		     100);
	CHECK_EQ_INT(json_integer_value(json_object_get(t, "max_time_ms")),
		     5000);
	CHECK(fabs(json_number_value(json_object_get(t, "max_noise")) - 0.005) <
	      1e-15);
	CHECK_EQ_INT(json_integer_value(json_object_get(t, "cooldown_ms")),
		     100);
	CHECK(json_is_false(json_object_get(t, "samples")));
	CHECK_STREQ(json_string_value(json_object_get(t, "baseline_order")),
		    "separate");
	json_decref(j);
}

/* The fields of the kernel family: values in, defaults, JSON out. */
static void test_family(void)
{
	static const char *const schedules[] = {
		"ws",	       "cooperative", "pingpong",
		"interleaved", "multistage",  "pipelined",
	};
	static const char *const layouts[] = { "tn", "nt", "nn", "tt" };
	struct gemmd_error err;
	struct gemm_spec s;
	char body[256];
	json_t *j, *k;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(schedules); i++) {
		snprintf(body, sizeof(body),
			 "{\"m\":8,\"n\":8,\"k\":8,\"kernel\":"
			 "{\"schedule\":\"%s\"}}",
			 schedules[i]);
		CHECK_EQ_INT(parse(body, &s, &err), 0);
		CHECK_EQ_INT(s.schedule, i);
		CHECK_STREQ(gemm_schedule_to_string(s.schedule), schedules[i]);
	}
	for (i = 0; i < ARRAY_SIZE(layouts); i++) {
		snprintf(body, sizeof(body),
			 "{\"m\":8,\"n\":8,\"k\":8,\"layout\":\"%s\"}",
			 layouts[i]);
		CHECK_EQ_INT(parse(body, &s, &err), 0);
		CHECK_EQ_INT(s.layout, i);
	}

	/* out_dtype follows dtype, wherever the keys come */
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"dtype\":\"fp16\"}", &s,
			   &err),
		     0);
	CHECK_EQ_INT(s.out, GEMM_DTYPE_FP16);
	CHECK_EQ_INT(parse("{\"out_dtype\":\"bf16\",\"m\":8,\"n\":8,"
			   "\"k\":8,\"dtype\":\"fp16\"}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.dtype, GEMM_DTYPE_FP16);
	CHECK_EQ_INT(s.out, GEMM_DTYPE_BF16);
	CHECK_EQ_INT(gemm_dtype_size(GEMM_DTYPE_FP32), 4);

	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"out_dtype\":\"fp32\","
			   "\"alpha\":-1000000,\"beta\":1e6,\"kernel\":{"
			   "\"cluster\":[8,2],\"raster\":\"along_m\","
			   "\"swizzle\":8,\"epilogue\":\"tma\",\"pdl\":true}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.dtype, GEMM_DTYPE_BF16);
	CHECK_EQ_INT(s.out, GEMM_DTYPE_FP32);
	CHECK(fabs(s.alpha + 1e6) < 1e-9);
	CHECK(fabs(s.beta - 1e6) < 1e-9);
	CHECK_EQ_INT(s.cluster_x, 8);
	CHECK_EQ_INT(s.cluster_y, 2);
	CHECK_EQ_INT(s.raster, GEMM_RASTER_ALONG_M);
	CHECK_EQ_INT(s.swizzle, 8);
	CHECK_EQ_INT(s.epilogue, GEMM_EPILOGUE_TMA);
	CHECK(s.pdl);

	j = spec_to_json(&s);
	k = json_object_get(j, "kernel");
	CHECK_STREQ(json_string_value(json_object_get(j, "out_dtype")), "fp32");
	CHECK(fabs(json_number_value(json_object_get(j, "alpha")) + 1e6) <
	      1e-9);
	CHECK(json_is_number(json_object_get(j, "beta")));
	CHECK_STREQ(json_string_value(json_object_get(k, "raster")), "along_m");
	CHECK_EQ_INT(json_integer_value(json_object_get(k, "swizzle")), 8);
	CHECK_STREQ(json_string_value(json_object_get(k, "epilogue")), "tma");
	CHECK(json_is_true(json_object_get(k, "pdl")));
	CHECK_STREQ(json_string_value(json_object_get(k, "decomposition")),
		    "data_parallel");
	CHECK_STREQ(json_string_value(json_object_get(k, "placement")), "none");
	json_decref(j);

	/* the decompositions; which schedule takes which is the plan's */
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"schedule\":\"cooperative\","
			   "\"decomposition\":\"stream_k\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.decomposition, GEMM_DECOMP_STREAM_K);
	j = spec_to_json(&s);
	k = json_object_get(j, "kernel");
	CHECK_STREQ(json_string_value(json_object_get(k, "decomposition")),
		    "stream_k");
	json_decref(j);
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"schedule\":\"pingpong\","
			   "\"decomposition\":\"stream_k\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.decomposition, GEMM_DECOMP_STREAM_K);
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"decomposition\":\"data_parallel\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.decomposition, GEMM_DECOMP_DATA_PARALLEL);
	CHECK_STREQ(gemm_decomposition_to_string(GEMM_DECOMP_STREAM_K),
		    "stream_k");
	CHECK_EQ_INT(gemm_decomposition_from_string("data_parallel"),
		     GEMM_DECOMP_DATA_PARALLEL);
	CHECK(gemm_decomposition_from_string("auto") < 0);
	/* the error names the field and lists every value */
	CHECK(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		    "\"decomposition\":\"split_k\"}}",
		    &s, &err) < 0);
	CHECK_STREQ(err.field, "kernel.decomposition");
	CHECK_STREQ(err.message, "'kernel.decomposition' is \"split_k\"; "
				 "expected one of \"data_parallel\", "
				 "\"stream_k\"");

	/* the placements; which schedule takes which is the plan's too */
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"schedule\":\"cooperative\","
			   "\"placement\":\"gpc\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.placement, GEMM_PLACEMENT_GPC);
	CHECK_EQ_INT(s.decomposition, GEMM_DECOMP_DATA_PARALLEL);
	j = spec_to_json(&s);
	k = json_object_get(j, "kernel");
	CHECK_STREQ(json_string_value(json_object_get(k, "placement")), "gpc");
	json_decref(j);
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"placement\":\"gpc\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.placement, GEMM_PLACEMENT_GPC);
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"schedule\":\"cooperative\","
			   "\"decomposition\":\"stream_k\","
			   "\"placement\":\"gpc\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.decomposition, GEMM_DECOMP_STREAM_K);
	CHECK_EQ_INT(s.placement, GEMM_PLACEMENT_GPC);
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"placement\":\"none\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.placement, GEMM_PLACEMENT_NONE);
	CHECK_STREQ(gemm_placement_to_string(GEMM_PLACEMENT_GPC), "gpc");
	CHECK_STREQ(gemm_placement_to_string(GEMM_PLACEMENT_NONE), "none");
	CHECK_EQ_INT(gemm_placement_from_string("none"), GEMM_PLACEMENT_NONE);
	CHECK_EQ_INT(gemm_placement_from_string("gpc"), GEMM_PLACEMENT_GPC);
	CHECK(gemm_placement_from_string("GPC") < 0);
	CHECK(gemm_placement_from_string("auto") < 0);
	CHECK(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		    "\"placement\":\"sm\"}}",
		    &s, &err) < 0);
	CHECK_EQ_INT(err.status, 400);
	CHECK_STREQ(err.code, "invalid_value");
	CHECK_STREQ(err.field, "kernel.placement");
	CHECK_STREQ(err.message, "'kernel.placement' is \"sm\"; "
				 "expected one of \"none\", \"gpc\"");

	/* the occupancies; which kernels take "balanced" is the plan's */
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"schedule\":\"cooperative\","
			   "\"occupancy\":\"full\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.occupancy, GEMM_OCCUPANCY_FULL);
	j = spec_to_json(&s);
	k = json_object_get(j, "kernel");
	CHECK_STREQ(json_string_value(json_object_get(k, "occupancy")), "full");
	json_decref(j);
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
			   "\"occupancy\":\"balanced\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.occupancy, GEMM_OCCUPANCY_BALANCED);
	CHECK_EQ_INT(gemm_occupancy_from_string("auto"), GEMM_OCCUPANCY_AUTO);
	CHECK_STREQ(gemm_occupancy_to_string(GEMM_OCCUPANCY_BALANCED),
		    "balanced");
	CHECK(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		    "\"occupancy\":128}}",
		    &s, &err) < 0);
	CHECK_EQ_INT(err.status, 400);
	CHECK_STREQ(err.field, "kernel.occupancy");
	CHECK(parse("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{"
		    "\"occupancy\":\"half\"}}",
		    &s, &err) < 0);
	CHECK_EQ_INT(err.status, 400);
	CHECK_STREQ(err.code, "invalid_value");
	CHECK_STREQ(err.field, "kernel.occupancy");
	CHECK_STREQ(err.message, "'kernel.occupancy' is \"half\"; "
				 "expected one of \"auto\", \"balanced\", "
				 "\"full\"");

	/* the defaults as the API shows them */
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8}", &s, &err), 0);
	j = spec_to_json(&s);
	k = json_object_get(j, "kernel");
	CHECK_STREQ(json_string_value(json_object_get(j, "out_dtype")), "bf16");
	CHECK(fabs(json_number_value(json_object_get(j, "alpha")) - 1.0) <
	      1e-15);
	CHECK(fabs(json_number_value(json_object_get(j, "beta"))) < 1e-15);
	CHECK_STREQ(json_string_value(json_object_get(k, "raster")), "auto");
	CHECK_STREQ(json_string_value(json_object_get(k, "occupancy")), "auto");
	CHECK(json_is_null(json_object_get(k, "swizzle")));
	CHECK_STREQ(json_string_value(json_object_get(k, "epilogue")), "auto");
	CHECK(json_is_false(json_object_get(k, "pdl")));
	CHECK_STREQ(json_string_value(json_object_get(k, "decomposition")),
		    "data_parallel");
	CHECK_STREQ(json_string_value(json_object_get(k, "placement")), "none");
	json_decref(j);
}

#define JOB(x) "{\"m\":1,\"n\":1,\"k\":8," x "}"
#define KERNEL(x) JOB("\"kernel\":{" x "}")
#define TIMING(x) JOB("\"timing\":{" x "}")

/* Every new field: a wrong type and a wrong value, named by its path. */
static void test_family_errors(void)
{
	expect_error(JOB("\"dtype\":\"fp32\""), "invalid_value", "dtype");
	expect_error(JOB("\"dtype\":16"), "invalid_type", "dtype");
	expect_error(JOB("\"out_dtype\":\"fp64\""), "invalid_value",
		     "out_dtype");
	expect_error(JOB("\"out_dtype\":32"), "invalid_type", "out_dtype");
	expect_error(JOB("\"out_dtype\":null"), "invalid_type", "out_dtype");
	expect_error(JOB("\"layout\":\"TN\""), "invalid_value", "layout");
	expect_error(JOB("\"layout\":[]"), "invalid_type", "layout");
	expect_error(KERNEL("\"schedule\":\"warp\""), "invalid_value",
		     "kernel.schedule");
	expect_error(KERNEL("\"raster\":\"along_k\""), "invalid_value",
		     "kernel.raster");
	expect_error(KERNEL("\"raster\":0"), "invalid_type", "kernel.raster");
	expect_error(KERNEL("\"swizzle\":3"), "invalid_value",
		     "kernel.swizzle");
	expect_error(KERNEL("\"swizzle\":0"), "invalid_value",
		     "kernel.swizzle");
	expect_error(KERNEL("\"swizzle\":16"), "invalid_value",
		     "kernel.swizzle");
	expect_error(KERNEL("\"swizzle\":-4"), "invalid_value",
		     "kernel.swizzle");
	expect_error(KERNEL("\"swizzle\":2.0"), "invalid_type",
		     "kernel.swizzle");
	expect_error(KERNEL("\"swizzle\":\"8\""), "invalid_type",
		     "kernel.swizzle");
	expect_error(KERNEL("\"epilogue\":\"smem\""), "invalid_value",
		     "kernel.epilogue");
	expect_error(KERNEL("\"epilogue\":true"), "invalid_type",
		     "kernel.epilogue");
	expect_error(KERNEL("\"decomposition\":\"split_k\""), "invalid_value",
		     "kernel.decomposition");
	expect_error(KERNEL("\"decomposition\":\"auto\""), "invalid_value",
		     "kernel.decomposition");
	expect_error(KERNEL("\"decomposition\":1"), "invalid_type",
		     "kernel.decomposition");
	expect_error(KERNEL("\"decomposition\":null"), "invalid_type",
		     "kernel.decomposition");
	expect_error(KERNEL("\"placement\":\"sm\""), "invalid_value",
		     "kernel.placement");
	expect_error(KERNEL("\"placement\":\"GPC\""), "invalid_value",
		     "kernel.placement");
	expect_error(KERNEL("\"placement\":\"\""), "invalid_value",
		     "kernel.placement");
	expect_error(KERNEL("\"placement\":1"), "invalid_type",
		     "kernel.placement");
	expect_error(KERNEL("\"placement\":true"), "invalid_type",
		     "kernel.placement");
	expect_error(KERNEL("\"placement\":null"), "invalid_type",
		     "kernel.placement");
	expect_error(KERNEL("\"placement\":[\"gpc\"]"), "invalid_type",
		     "kernel.placement");
	expect_error(JOB("\"alpha\":\"1\""), "invalid_type", "alpha");
	expect_error(JOB("\"alpha\":null"), "invalid_type", "alpha");
	expect_error(JOB("\"alpha\":1000000.5"), "out_of_range", "alpha");
	expect_error(JOB("\"beta\":-2e6"), "out_of_range", "beta");
	expect_error(JOB("\"beta\":false"), "invalid_type", "beta");
	expect_error(JOB("\"beta\":1e999"), "numeric_overflow", "beta");
	/* 0 in the kernels' fp32, though not 0 here */
	expect_error(JOB("\"beta\":1e-300"), "out_of_range", "beta");
	expect_error(JOB("\"beta\":-1e-46"), "out_of_range", "beta");
	expect_error(JOB("\"alpha\":1e-300"), "out_of_range", "alpha");
	expect_error(JOB("\"alpha\":-7e-46"), "out_of_range", "alpha");
	/* clusters: powers of two up to 8 a side, 16 CTAs in all */
	expect_error(KERNEL("\"cluster\":[3,1]"), "invalid_value",
		     "kernel.cluster[0]");
	expect_error(KERNEL("\"cluster\":[1,6]"), "invalid_value",
		     "kernel.cluster[1]");
	expect_error(KERNEL("\"cluster\":[16,1]"), "out_of_range",
		     "kernel.cluster[0]");
	expect_error(KERNEL("\"cluster\":[8,4]"), "invalid_value",
		     "kernel.cluster");
	expect_error(KERNEL("\"cluster\":[1,\"2\"]"), "invalid_type",
		     "kernel.cluster[1]");
	expect_error(KERNEL("\"cluster\":{\"x\":1}"), "invalid_type",
		     "kernel.cluster");
}

static void test_malformed(void)
{
	expect_error("", "invalid_json", NULL);
	expect_error("{\"m\":1,", "invalid_json", NULL);
	expect_error("{\"m\":1} trailing", "invalid_json", NULL);
	expect_error("[1,2,3]", "invalid_type", "(body)");
	/* JSON, but not an object: the same as an array */
	expect_error("42", "invalid_type", "(body)");
	expect_error("\"m\"", "invalid_type", "(body)");
	expect_error(" null ", "invalid_type", "(body)");
	expect_error("true", "invalid_type", "(body)");
	expect_error("{\"m\":NaN,\"n\":1,\"k\":8}", "invalid_json", NULL);
	expect_error("{\"m\":\"a\\u0000b\",\"n\":1,\"k\":8}", "null_byte",
		     NULL);
	expect_error("{\"m\":1,\"m\":2,\"n\":1,\"k\":8}", "duplicate_key", "m");
	expect_error("{\"m\":1e999,\"n\":1,\"k\":8}", "numeric_overflow", "m");
	expect_error("{\"m\":99999999999999999999,\"n\":1,\"k\":8}",
		     "numeric_overflow", "m");
	/* the field a number too large or a key twice is in, however deep */
	expect_error("{\"m\":256,\"n\":256,\"k\":256,\"verify\":"
		     "{\"init\":\"normal\",\"seed\":9223372036854775808}}",
		     "numeric_overflow", "verify.seed");
	expect_error("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{\"cluster\":"
		     "[1, 1e400]}}",
		     "numeric_overflow", "kernel.cluster[1]");
	expect_error("{\"m\":8,\"n\":8,\"k\":8,\"kernel\":{\"tile\":\"a\","
		     "\"x\":{\"y\":[]},\"tile\":\"b\"}}",
		     "duplicate_key", "kernel.tile");
	/* a key with an escape is not quoted back as a field */
	expect_error("{\"m\":8,\"n\":8,\"k\":8,\"a\\\"b\":1,\"a\\\"b\":2}",
		     "duplicate_key", "");
}

/* The message says what was wrong, not which jansson flag was missing. */
static void test_malformed_messages(void)
{
	struct gemmd_error err;
	struct gemm_spec spec;

	CHECK(parse("{\"m\":\"a\\u0000b\",\"n\":1,\"k\":8}", &spec, &err) < 0);
	CHECK(strstr(err.message, "NUL character") != NULL);
	CHECK(strstr(err.message, "JSON_") == NULL);
	CHECK(parse("{\"m\":99999999999999999999,\"n\":1,\"k\":8}", &spec,
		    &err) < 0);
	CHECK(strstr(err.message, "near '99999999999999999999'") != NULL);
}

/* A NUL byte sent raw, not as \u0000: never JSON, wherever it is. */
#define RAW(s, field)                   \
	{                               \
		s, sizeof(s) - 1, field \
	}

static void test_raw_nul(void)
{
	static const struct {
		const char *body;
		size_t len;
		const char *field;
	} t[] = {
		RAW("{\"m\":64,\"n\":64,\"k\":64,\"dry_run\":true\0}",
		    "dry_run"),
		RAW("{\"m\":64\0,\"n\":64,\"k\":64}", "m"),
		RAW("{\"m\":64,\"n\":64,\"k\":64}\0trailing", ""),
		RAW("{\"m\":64,\"n\":64,\"k\":64,\"label\":\"a\0b\"}", "label"),
		RAW("{\"m\":64,\"n\":64,\"k\":64,\"a\0b\":1}", ""),
	};
	struct gemmd_error err;
	struct gemm_spec spec;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		memset(&err, 0, sizeof(err));
		CHECK(spec_parse(t[i].body, t[i].len, &spec, &err) < 0);
		CHECK_EQ_INT(err.status, 400);
		CHECK_STREQ(err.code, "null_byte");
		CHECK_STREQ(err.field, t[i].field);
	}
}

static void test_too_deep(void)
{
	static char body[40000];
	size_t i, n = 10000;

	for (i = 0; i < n; i++)
		body[i] = '[';
	for (i = 0; i < n; i++)
		body[n + i] = ']';
	body[2 * n] = '\0';
	expect_error(body, "too_deep", NULL);
}

static void test_fields(void)
{
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"mm\":3}", "unknown_field",
		     "mm");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"kernel\":{\"stage\":3}}",
		     "unknown_field", "kernel.stage");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"verify\":{\"int\":1}}",
		     "unknown_field", "verify.int");
	expect_error("{\"n\":1,\"k\":8}", "missing_field", "m");
	expect_error("{\"m\":1,\"k\":8}", "missing_field", "n");
	expect_error("{\"m\":1,\"n\":8}", "missing_field", "k");
	expect_error("{\"m\":\"5\",\"n\":1,\"k\":8}", "invalid_type", "m");
	expect_error("{\"m\":5.5,\"n\":1,\"k\":8}", "invalid_type", "m");
	expect_error("{\"m\":0,\"n\":1,\"k\":8}", "out_of_range", "m");
	expect_error("{\"m\":-4,\"n\":1,\"k\":8}", "out_of_range", "m");
	expect_error("{\"m\":4294967297,\"n\":1,\"k\":8}", "out_of_range", "m");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"dtype\":\"fp64\"}",
		     "invalid_value", "dtype");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"layout\":\"xx\"}",
		     "invalid_value", "layout");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"kernel\":{\"schedule\":1}}",
		     "invalid_type", "kernel.schedule");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"kernel\":{\"tile\":\"12x\"}}",
		     "invalid_value", "kernel.tile");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,"
		     "\"kernel\":{\"tile\":\"-1x-1x-1\"}}",
		     "invalid_value", "kernel.tile");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,"
		     "\"kernel\":{\"tile\":\" 128x256x64\"}}",
		     "invalid_value", "kernel.tile");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"kernel\":{\"stages\":0}}",
		     "out_of_range", "kernel.stages");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"kernel\":{\"stages\":65}}",
		     "out_of_range", "kernel.stages");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"kernel\":{\"cluster\":[1]}}",
		     "invalid_type", "kernel.cluster");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"kernel\":{\"cluster\":[1,0]}}",
		     "out_of_range", "kernel.cluster[1]");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"timing\":{\"iterations\":0}}",
		     "out_of_range", "timing.iterations");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"timing\":{\"warmup\":-1}}",
		     "out_of_range", "timing.warmup");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"verify\":{\"enabled\":1}}",
		     "invalid_type", "verify.enabled");
	expect_error(
		"{\"m\":1,\"n\":1,\"k\":8,\"verify\":{\"init\":\"zeros\"}}",
		"invalid_value", "verify.init");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"verify\":{\"seed\":-1}}",
		     "out_of_range", "verify.seed");
	expect_error(
		"{\"m\":1,\"n\":1,\"k\":8,\"verify\":{\"reference\":\"x\"}}",
		"invalid_value", "verify.reference");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"baseline\":\"mkl\"}",
		     "invalid_value", "baseline");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"baseline\":true}",
		     "invalid_type", "baseline");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"device\":-2}", "out_of_range",
		     "device");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"dry_run\":\"yes\"}",
		     "invalid_type", "dry_run");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"timing\":[]}", "invalid_type",
		     "timing");
}

/*
 * Each limit the API promises, at the limit and one past it: the planner
 * counts on them (dimensions of at most 2^20 keep m * n * k and the grid
 * in range), and a limit moved by one would pass the tests of values far
 * outside it.
 */
static void test_limits(void)
{
	struct gemmd_error err;
	struct gemm_spec s;

	CHECK_EQ_INT(parse("{\"m\":1048576,\"n\":1048576,\"k\":1048576}", &s,
			   &err),
		     0);
	CHECK_EQ_INT(s.m, 1048576);
	CHECK_EQ_INT(s.n, 1048576);
	CHECK_EQ_INT(s.k, 1048576);
	expect_error("{\"m\":1048577,\"n\":1,\"k\":8}", "out_of_range", "m");
	expect_error("{\"m\":1,\"n\":1048577,\"k\":8}", "out_of_range", "n");
	expect_error("{\"m\":1,\"n\":1,\"k\":1048577}", "out_of_range", "k");
	CHECK(parse("{\"m\":1,\"n\":1,\"k\":1048577}", &s, &err) < 0);
	CHECK_STREQ(err.message, "'k' is 1048577, outside 1..1048576");

	CHECK_EQ_INT(parse(TIMING("\"warmup\":10000,\"iterations\":100000"), &s,
			   &err),
		     0);
	CHECK_EQ_INT(s.warmup, 10000);
	CHECK_EQ_INT(s.iterations, 100000);
	expect_error(TIMING("\"warmup\":10001"), "out_of_range",
		     "timing.warmup");
	expect_error(TIMING("\"iterations\":100001"), "out_of_range",
		     "timing.iterations");
	CHECK_EQ_INT(parse(TIMING("\"cooldown_ms\":5000"), &s, &err), 0);
	CHECK_EQ_INT(s.cooldown_ms, 5000);
	expect_error(TIMING("\"min_time_ms\":10001"), "out_of_range",
		     "timing.min_time_ms");

	CHECK_EQ_INT(parse(KERNEL("\"stages\":64"), &s, &err), 0);
	CHECK_EQ_INT(s.stages, 64);
	CHECK_EQ_INT(parse(KERNEL("\"cluster\":[8,2]"), &s, &err), 0);
	CHECK_EQ_INT(parse(KERNEL("\"cluster\":[2,8]"), &s, &err), 0);
	expect_error(KERNEL("\"cluster\":[1,16]"), "out_of_range",
		     "kernel.cluster[1]");
	expect_error(KERNEL("\"cluster\":[4,8]"), "invalid_value",
		     "kernel.cluster");

	CHECK_EQ_INT(parse(JOB("\"device\":255"), &s, &err), 0);
	CHECK_EQ_INT(s.device, 255);
	expect_error(JOB("\"device\":256"), "out_of_range", "device");
	CHECK_EQ_INT(parse(JOB("\"device\":-1"), &s, &err), 0);
	CHECK_EQ_INT(s.device, -1);

	CHECK_EQ_INT(parse(JOB("\"verify\":{\"seed\":9223372036854775807}"), &s,
			   &err),
		     0);
	CHECK(s.seed == (uint64_t)INT64_MAX);
	CHECK_EQ_INT(
		parse(JOB("\"alpha\":-1000000,\"beta\":1000000"), &s, &err), 0);
	expect_error(JOB("\"beta\":1000000.5"), "out_of_range", "beta");
	expect_error(JOB("\"alpha\":-1000000.5"), "out_of_range", "alpha");
}

/*
 * null where the plan picks (tile, stages, swizzle) or the job leaves it
 * open (device, iterations, baseline): back to the default, whatever the
 * field said before it (keys are read in order; a later one wins only as
 * a duplicate, which is refused, so null is checked on its own).
 */
static void test_nulls(void)
{
	struct gemmd_error err;
	struct gemm_spec s;

	CHECK_EQ_INT(parse(KERNEL("\"tile\":null,\"stages\":null,"
				  "\"swizzle\":null"),
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.tile.m, 0);
	CHECK_EQ_INT(s.stages, 0);
	CHECK_EQ_INT(s.swizzle, 0);
	CHECK_EQ_INT(parse(JOB("\"device\":null"), &s, &err), 0);
	CHECK_EQ_INT(s.device, -1);
	expect_error(KERNEL("\"stages\":\"4\""), "invalid_type",
		     "kernel.stages");
	expect_error(KERNEL("\"tile\":128"), "invalid_type", "kernel.tile");
	expect_error(JOB("\"device\":\"0\""), "invalid_type", "device");
}

/* A label fills its buffer but for the NUL; one byte more is refused. */
static void test_label_length(void)
{
	struct gemm_spec spec;
	struct gemmd_error err;
	char label[sizeof(spec.label) + 1], body[sizeof(label) + 64];

	memset(label, 'x', sizeof(label) - 2);
	label[sizeof(label) - 2] = '\0';
	snprintf(body, sizeof(body),
		 "{\"m\":1,\"n\":1,\"k\":8,\"label\":\"%s\"}", label);
	CHECK_EQ_INT(parse(body, &spec, &err), 0);
	CHECK_STREQ(spec.label, label);
	label[sizeof(label) - 2] = 'x';
	label[sizeof(label) - 1] = '\0';
	snprintf(body, sizeof(body),
		 "{\"m\":1,\"n\":1,\"k\":8,\"label\":\"%s\"}", label);
	expect_error(body, "out_of_range", "label");
	expect_error("{\"m\":1,\"n\":1,\"k\":8,\"label\":7}", "invalid_type",
		     "label");
}

static void test_timing_fields(void)
{
	expect_error(TIMING("\"modes\":\"hot\""), "unknown_field",
		     "timing.modes");
	expect_error(TIMING("\"mode\":\"warm\""), "invalid_value",
		     "timing.mode");
	expect_error(TIMING("\"mode\":1"), "invalid_type", "timing.mode");
	expect_error(TIMING("\"baseline_order\":\"alternate\""),
		     "invalid_value", "timing.baseline_order");
	expect_error(TIMING("\"min_samples\":0"), "out_of_range",
		     "timing.min_samples");
	expect_error(TIMING("\"min_samples\":100001"), "out_of_range",
		     "timing.min_samples");
	expect_error(TIMING("\"min_time_ms\":-1"), "out_of_range",
		     "timing.min_time_ms");
	expect_error(TIMING("\"min_time_ms\":1.5"), "invalid_type",
		     "timing.min_time_ms");
	expect_error(TIMING("\"max_time_ms\":0"), "out_of_range",
		     "timing.max_time_ms");
	expect_error(TIMING("\"max_time_ms\":10001"), "out_of_range",
		     "timing.max_time_ms");
	expect_error(TIMING("\"max_noise\":\"low\""), "invalid_type",
		     "timing.max_noise");
	expect_error(TIMING("\"max_noise\":-0.1"), "out_of_range",
		     "timing.max_noise");
	expect_error(TIMING("\"max_noise\":1.5"), "out_of_range",
		     "timing.max_noise");
	expect_error(TIMING("\"cooldown_ms\":5001"), "out_of_range",
		     "timing.cooldown_ms");
	expect_error(TIMING("\"samples\":1"), "invalid_type", "timing.samples");
	expect_error(TIMING("\"iterations\":\"5\""), "invalid_type",
		     "timing.iterations");
	/* across fields: the floor on time above its ceiling */
	expect_error(TIMING("\"min_time_ms\":300,\"max_time_ms\":200"),
		     "invalid_value", "timing.min_time_ms");
	expect_error(TIMING("\"min_time_ms\":6000"), "invalid_value",
		     "timing.min_time_ms");
	/* a ceiling under the default floor: the field that was sent */
	expect_error(TIMING("\"max_time_ms\":50"), "invalid_value",
		     "timing.max_time_ms");
}

static void test_timing_accepted(void)
{
	struct gemmd_error err;
	struct gemm_spec s;

	CHECK_EQ_INT(parse(TIMING("\"max_noise\":0,\"min_time_ms\":0,"
				  "\"max_time_ms\":1,\"cooldown_ms\":0"),
			   &s, &err),
		     0);
	CHECK_EQ_INT(parse(TIMING("\"max_noise\":1,\"min_samples\":100000,"
				  "\"min_time_ms\":10000,"
				  "\"max_time_ms\":10000"),
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.min_samples, 100000);
	CHECK_EQ_INT(parse(TIMING("\"iterations\":null"), &s, &err), 0);
	CHECK_EQ_INT(s.iterations, 0);
}

static void test_tile(void)
{
	struct gemm_tile t;
	char buf[32];

	CHECK_EQ_INT(tile_parse("64x128x64", &t), 0);
	CHECK_STREQ(tile_format(&t, buf, sizeof(buf)), "64x128x64");
	CHECK(tile_parse("64x128", &t) < 0);
	CHECK(tile_parse("64x128x64x1", &t) < 0);
	CHECK(tile_parse("0x128x64", &t) < 0);
	CHECK(tile_parse("x", &t) < 0);
	CHECK_EQ_INT(tile_parse("999x1x999", &t), 0);
	CHECK_STREQ(tile_format(&t, buf, sizeof(buf)), "999x1x999");
	/* digits and 'x' only: no sign, no space, 1..999 each */
	CHECK(tile_parse("-1x-1x-1", &t) < 0);
	CHECK(tile_parse("+128x256x64", &t) < 0);
	CHECK(tile_parse(" 128x256x64", &t) < 0);
	CHECK(tile_parse("128x 256x64", &t) < 0);
	CHECK(tile_parse("128x256x64 ", &t) < 0);
	CHECK(tile_parse("128X256x64", &t) < 0);
	CHECK(tile_parse("1000x128x64", &t) < 0);
	CHECK(tile_parse("128x256x0", &t) < 0);
	CHECK(tile_parse("128xx64", &t) < 0);
	CHECK(tile_parse("", &t) < 0);
	/* what was refused leaves *ret alone */
	CHECK_STREQ(tile_format(&t, buf, sizeof(buf)), "999x1x999");
}

/* baseline and verify.reference, in and out. */
static void test_baseline(void)
{
	struct gemmd_error err;
	struct gemm_spec s;
	json_t *j;

	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"baseline\":"
			   "\"cublas\",\"verify\":{\"reference\":"
			   "\"cublas\"}}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.baseline, GEMM_BASELINE_CUBLAS);
	CHECK_EQ_INT(s.reference, GEMM_REFERENCE_CUBLAS);
	j = spec_to_json(&s);
	CHECK_STREQ(json_string_value(json_object_get(j, "baseline")),
		    "cublas");
	CHECK_STREQ(json_string_value(json_object_get(
			    json_object_get(j, "verify"), "reference")),
		    "cublas");
	json_decref(j);

	/* cuBLASLt's first choice only: its own value, in and out */
	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"baseline\":"
			   "\"cublas_default\"}",
			   &s, &err),
		     0);
	CHECK_EQ_INT(s.baseline, GEMM_BASELINE_CUBLAS_DEFAULT);
	j = spec_to_json(&s);
	CHECK_STREQ(json_string_value(json_object_get(j, "baseline")),
		    "cublas_default");
	json_decref(j);
	/* the error lists every value */
	CHECK(parse("{\"m\":8,\"n\":8,\"k\":8,\"baseline\":\"default\"}", &s,
		    &err) < 0);
	CHECK_STREQ(err.field, "baseline");
	CHECK(strstr(err.message, "\"cublas_default\"") != NULL);

	CHECK_EQ_INT(parse("{\"m\":8,\"n\":8,\"k\":8,\"baseline\":null}", &s,
			   &err),
		     0);
	CHECK_EQ_INT(s.baseline, GEMM_BASELINE_NONE);
	j = spec_to_json(&s);
	CHECK(json_is_null(json_object_get(j, "baseline")));
	CHECK_STREQ(json_string_value(json_object_get(
			    json_object_get(j, "verify"), "reference")),
		    "device");
	json_decref(j);
}

int main(void)
{
	RUN_TEST(test_minimal_defaults);
	RUN_TEST(test_full);
	RUN_TEST(test_round_trip);
	RUN_TEST(test_family);
	RUN_TEST(test_family_errors);
	RUN_TEST(test_malformed);
	RUN_TEST(test_malformed_messages);
	RUN_TEST(test_raw_nul);
	RUN_TEST(test_too_deep);
	RUN_TEST(test_fields);
	RUN_TEST(test_limits);
	RUN_TEST(test_nulls);
	RUN_TEST(test_label_length);
	RUN_TEST(test_timing_json);
	RUN_TEST(test_timing_fields);
	RUN_TEST(test_timing_accepted);
	RUN_TEST(test_tile);
	RUN_TEST(test_baseline);
	return check_exit();
}
