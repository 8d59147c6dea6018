// SPDX-License-Identifier: MIT
/*
 * test-plan - kernel choice, launch geometry and every 422 the planner
 * gives, on a catalog made of notes shaped like the real ones.
 */
#include "check.h"
#include "plan.h"
#include "spec.h"

static struct catalog *make_catalog(void)
{
	static const char *const notes[] = {
		"kernel=k_bf16_128 schedule=ws dtype=bf16 layout=tn "
		"tile=128x128x64 threads=384 smem_fixed=2048 smem_stage=32768 "
		"min_stages=2 max_stages=7 cluster=1x1",
		"kernel=k_bf16_256 schedule=ws dtype=bf16 layout=tn "
		"tile=128x256x64 threads=384 smem_fixed=2048 smem_stage=49152 "
		"min_stages=2 max_stages=4 cluster=1x1",
		"kernel=k_fp16_128 schedule=ws dtype=fp16 layout=tn "
		"tile=128x128x64 threads=384 smem_fixed=2048 smem_stage=32768 "
		"min_stages=2 max_stages=7 cluster=1x1",
	};
	struct catalog *c = catalog_new();
	struct kernel_info k;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(notes); i++) {
		CHECK_EQ_INT(kernel_info_parse(notes[i], "gemm_ws.cubin", &k),
			     0);
		CHECK_EQ_INT(catalog_add(c, &k), 0);
	}
	return c;
}

static int plan(const struct catalog *c, const char *body,
		const struct device_limits *dev, struct gemm_plan *p,
		struct gemmd_error *err)
{
	struct gemm_spec s;

	memset(err, 0, sizeof(*err));
	CHECK_EQ_INT(spec_parse(body, strlen(body), &s, err), 0);
	return plan_resolve(c, &s, dev, p, err);
}

static void expect_422(const struct catalog *c, const char *body,
		       const struct device_limits *dev, const char *field)
{
	struct gemmd_error err;
	struct gemm_plan p;

	CHECK(plan(c, body, dev, &p, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.field, field);
	CHECK(err.message[0]);
}

static void test_geometry(void)
{
	struct catalog *c = make_catalog();
	struct gemmd_error err;
	struct gemm_plan p;

	CHECK_EQ_INT(plan(c,
			  "{\"m\":1000,\"n\":1500,\"k\":1032,\"kernel\":"
			  "{\"tile\":\"128x256x64\",\"stages\":3}}",
			  NULL, &p, &err),
		     0);
	CHECK_STREQ(p.kernel, "k_bf16_256");
	CHECK_STREQ(p.cubin, "gemm_ws.cubin");
	CHECK_EQ_INT(p.grid[0], 8); /* ceil(1000 / 128) */
	CHECK_EQ_INT(p.grid[1], 6); /* ceil(1500 / 256) */
	CHECK_EQ_INT(p.grid[2], 1);
	CHECK_EQ_INT(p.block[0], 384);
	CHECK_EQ_INT(p.cluster[0], 1);
	CHECK_EQ_INT(p.stages, 3);
	CHECK_EQ_INT(p.smem_bytes, 2048 + 3 * 49152);
	catalog_free(c);
}

static void test_auto_choice(void)
{
	struct catalog *c = make_catalog();
	struct device_limits h100 = { .sm_count = 132, .smem_optin = 232448 };
	struct gemmd_error err;
	struct gemm_plan p;

	/* big: the large tile, and the most stages that fit */
	CHECK_EQ_INT(plan(c, "{\"m\":8192,\"n\":8192,\"k\":8192}", &h100, &p,
			  &err),
		     0);
	CHECK_STREQ(p.kernel, "k_bf16_256");
	CHECK_EQ_INT(p.stages, 4);
	/* small: more CTAs win */
	CHECK_EQ_INT(
		plan(c, "{\"m\":512,\"n\":512,\"k\":512}", &h100, &p, &err), 0);
	CHECK_STREQ(p.kernel, "k_bf16_128");
	CHECK_EQ_INT(p.stages, 7);
	/* a device with less shared memory gets fewer stages */
	h100.smem_optin = 120000;
	CHECK_EQ_INT(
		plan(c, "{\"m\":512,\"n\":512,\"k\":512}", &h100, &p, &err), 0);
	CHECK_EQ_INT(p.stages, 3);
	CHECK_EQ_INT(plan(c, "{\"m\":64,\"n\":64,\"k\":64,\"dtype\":\"fp16\"}",
			  NULL, &p, &err),
		     0);
	CHECK_STREQ(p.kernel, "k_fp16_128");
	catalog_free(c);
}

static void test_refusals(void)
{
	struct catalog *c = make_catalog();
	struct device_limits small = { .memory_bytes = 1ull << 30 };

	expect_422(c, "{\"m\":64,\"n\":64,\"k\":12}", NULL, "k");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{\"stages\":5,"
		   "\"tile\":\"128x256x64\"}}",
		   NULL, "kernel.stages");
	expect_422(c, "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{\"stages\":1}}",
		   NULL, "kernel.stages");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		   "{\"tile\":\"64x64x64\"}}",
		   NULL, "kernel.tile");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"dtype\":\"fp16\","
		   "\"kernel\":{\"tile\":\"128x256x64\"}}",
		   NULL, "kernel.tile");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		   "{\"cluster\":[2,1]}}",
		   NULL, "kernel.cluster");
	expect_422(c, "{\"m\":65536,\"n\":65536,\"k\":8192}", &small, "m");
	catalog_free(c);
	c = catalog_new();
	expect_422(c, "{\"m\":64,\"n\":64,\"k\":64}", NULL, "kernel.schedule");
	catalog_free(c);
}

static void test_json_round_trip(void)
{
	struct catalog *c = make_catalog();
	struct gemmd_error err;
	struct gemm_plan a, b;
	json_t *j;

	CHECK_EQ_INT(plan(c, "{\"m\":300,\"n\":200,\"k\":128}", NULL, &a, &err),
		     0);
	j = plan_to_json(&a);
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	json_decref(j);
	catalog_free(c);
}

static int check_baseline(const char *body, bool available,
			  struct gemmd_error *err)
{
	struct gemm_spec s;

	memset(err, 0, sizeof(*err));
	CHECK_EQ_INT(spec_parse(body, strlen(body), &s, err), 0);
	return plan_check_baseline(&s, available, err);
}

static void test_baseline(void)
{
	const char *job = "{\"m\":64,\"n\":64,\"k\":64,\"baseline\":"
			  "\"cublas\"}";
	const char *ref = "{\"m\":64,\"n\":64,\"k\":64,\"verify\":"
			  "{\"reference\":\"cublas\"}}";
	struct gemmd_error err;

	CHECK_EQ_INT(check_baseline(job, true, &err), 0);
	CHECK(check_baseline(job, false, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.code, "unsupported");
	CHECK_STREQ(err.field, "baseline");
	CHECK(err.message[0]);
	CHECK(check_baseline(ref, false, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.field, "verify.reference");
	/* Not verified: the reference is not used. */
	CHECK_EQ_INT(check_baseline("{\"m\":64,\"n\":64,\"k\":64,"
				    "\"verify\":{\"enabled\":false,"
				    "\"reference\":\"cublas\"}}",
				    false, &err),
		     0);
	CHECK_EQ_INT(
		check_baseline("{\"m\":64,\"n\":64,\"k\":64}", false, &err), 0);
}

/* Against the devices' JSON, as api.c passes workers_devices_json(). */
static int check_devices(const char *body, const char *devices,
			 struct gemmd_error *err)
{
	struct gemm_spec s;

	memset(err, 0, sizeof(*err));
	CHECK_EQ_INT(spec_parse(body, strlen(body), &s, err), 0);
	return plan_check_baseline_devices(&s, json_loads(devices, 0, NULL),
					   err);
}

static void test_baseline_devices(void)
{
	const char *mixed = "[{\"cublaslt\":{\"available\":true,"
			    "\"version\":130100}},"
			    "{\"cublaslt\":{\"available\":false,"
			    "\"version\":null}}]";
	struct gemmd_error err;

	CHECK_EQ_INT(check_devices("{\"m\":64,\"n\":64,\"k\":64,"
				   "\"baseline\":\"cublas\",\"device\":0}",
				   mixed, &err),
		     0);
	CHECK(check_devices("{\"m\":64,\"n\":64,\"k\":64,"
			    "\"baseline\":\"cublas\",\"device\":1}",
			    mixed, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.field, "baseline");
	/* any device: each must have it */
	CHECK(check_devices("{\"m\":64,\"n\":64,\"k\":64,"
			    "\"baseline\":\"cublas\"}",
			    mixed, &err) < 0);
	/* an older worker that does not say: not available */
	CHECK(check_devices("{\"m\":64,\"n\":64,\"k\":64,"
			    "\"baseline\":\"cublas\"}",
			    "[{\"name\":\"x\"}]", &err) < 0);
	/* no devices (a dry run): nothing to check */
	CHECK_EQ_INT(check_devices("{\"m\":64,\"n\":64,\"k\":64,"
				   "\"baseline\":\"cublas\",\"dry_run\":"
				   "true}",
				   "[]", &err),
		     0);
	CHECK_EQ_INT(check_devices("{\"m\":64,\"n\":64,\"k\":64}",
				   "[{\"name\":\"x\"}]", &err),
		     0);
}

static void test_baseline_budget(void)
{
	struct gemm_spec s;
	uint64_t mem;
	unsigned int sec;

	spec_init(&s);
	s.m = s.n = s.k = 4096;
	s.iterations = 100;
	mem = plan_memory_bytes(&s);
	sec = plan_deadline_sec(&s);
	s.baseline = GEMM_BASELINE_CUBLAS;
	CHECK_EQ_INT(plan_memory_bytes(&s), mem + PLAN_CUBLASLT_WORKSPACE);
	CHECK(plan_deadline_sec(&s) > sec);
	s.baseline = GEMM_BASELINE_NONE;
	s.reference = GEMM_REFERENCE_CUBLAS;
	CHECK_EQ_INT(plan_memory_bytes(&s), mem + PLAN_CUBLASLT_WORKSPACE);
}

static void test_deadline(void)
{
	struct gemm_spec s;

	spec_init(&s);
	s.m = s.n = s.k = 256;
	s.iterations = 50;
	CHECK(plan_deadline_sec(&s) >= 30);
	CHECK(plan_deadline_sec(&s) < 40);
	/* under the stopping rule, room for three times max_time_ms */
	s.iterations = 0;
	s.max_time_ms = 10000;
	CHECK(plan_deadline_sec(&s) >= 60);
	s.m = s.n = s.k = 1 << 20;
	CHECK_EQ_INT(plan_deadline_sec(&s), 600);
}

int main(void)
{
	RUN_TEST(test_geometry);
	RUN_TEST(test_auto_choice);
	RUN_TEST(test_refusals);
	RUN_TEST(test_json_round_trip);
	RUN_TEST(test_deadline);
	RUN_TEST(test_baseline);
	RUN_TEST(test_baseline_devices);
	RUN_TEST(test_baseline_budget);
	return check_exit();
}
