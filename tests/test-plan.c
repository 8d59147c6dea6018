// SPDX-License-Identifier: MIT
/*
 * test-plan - kernel choice, launch geometry and every 422 the planner
 * gives, on a catalog made of notes shaped like the real ones.
 */
#include "check.h"
#include "gemm-abi.h"
#include "plan.h"
#include "spec.h"

/* The v2 keys of a kernel with both epilogues and every output type. */
#define V2 "epilogue=direct,tma smem_epilogue=32768 out=bf16,fp16,fp32"

static struct catalog *make_catalog(void)
{
	static const char *const notes[] = {
		"kernel=k_bf16_128 schedule=ws dtype=bf16 layout=tn "
		"tile=128x128x64 threads=384 smem_fixed=2048 smem_stage=32768 "
		"min_stages=2 max_stages=7 cluster=2 persistent=0 "
		"epilogue=direct,tma smem_epilogue=32768 out=bf16,fp32 "
		"arch=sm_90a",
		/* v1 notes: direct epilogue, D of the input type, no cluster */
		"kernel=k_bf16_256 schedule=ws dtype=bf16 layout=tn "
		"tile=128x256x64 threads=384 smem_fixed=2048 smem_stage=49152 "
		"min_stages=2 max_stages=4 cluster=1x1",
		"kernel=k_fp16_128 schedule=ws dtype=fp16 layout=tn "
		"tile=128x128x64 threads=384 smem_fixed=2048 smem_stage=32768 "
		"min_stages=2 max_stages=7 cluster=1x1",
		"kernel=k_coop schedule=cooperative dtype=bf16 layout=tn "
		"tile=128x256x64 threads=384 smem_fixed=2048 smem_stage=49152 "
		"min_stages=2 max_stages=4 cluster=8 persistent=1 pdl=1 "
		"placement=1 " V2,
		"kernel=k_nt schedule=ws dtype=bf16 layout=nt tile=128x128x64 "
		"threads=384 smem_fixed=2048 smem_stage=32768 min_stages=2 "
		"max_stages=7 cluster=1 " V2,
		"kernel=k_nn schedule=ws dtype=bf16 layout=nn tile=128x128x64 "
		"threads=384 smem_fixed=2048 smem_stage=32768 min_stages=2 "
		"max_stages=7 cluster=1 " V2,
		"kernel=k_tt schedule=ws dtype=bf16 layout=tt tile=128x128x64 "
		"threads=384 smem_fixed=2048 smem_stage=32768 min_stages=2 "
		"max_stages=7 cluster=1 " V2,
		"kernel=k_ms schedule=multistage dtype=bf16 layout=nt "
		"tile=128x128x32 threads=256 smem_fixed=2048 smem_stage=16384 "
		"min_stages=2 max_stages=8 cluster=1 persistent=0 "
		"epilogue=direct out=bf16,fp16,fp32 arch=sm_80",
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

/* Expect a 422 with this code and field, and a message. */
static void expect_refused(const struct catalog *c, const char *body,
			   const struct device_limits *dev, const char *code,
			   const char *field)
{
	struct gemmd_error err;
	struct gemm_plan p;
	int r = plan(c, body, dev, &p, &err);

	CHECK(r < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.code, code);
	CHECK_STREQ(err.field, field);
	CHECK(err.message[0]);
	if (r >= 0 || strcmp(err.field, field) || strcmp(err.code, code))
		fprintf(stderr, "  body: %s\n  got: %s %s %s\n", body, err.code,
			err.field, err.message);
}

/* What no kernel here can run: "unsupported". */
static void expect_422(const struct catalog *c, const char *body,
		       const struct device_limits *dev, const char *field)
{
	expect_refused(c, body, dev, "unsupported", field);
}

/* More than the device's memory: "too_large", naming a dimension. */
static void expect_too_large(const struct catalog *c, const char *body,
			     const struct device_limits *dev, const char *field)
{
	expect_refused(c, body, dev, "too_large", field);
}

/* A 4096x4096x128 job of schedule sched with kernel.key = value. */
static void field_job(char *body, size_t len, const char *sched,
		      const char *key, const char *value)
{
	snprintf(body, len,
		 "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		 "\"schedule\":\"%s\",\"%s\":\"%s\"}}",
		 sched, key, value);
}

/*
 * Schedule sched refuses kernel.key = bad with a 422 naming the field,
 * and kernel.key = good is not what it refuses (whatever else the
 * catalog says about the job).
 */
static void expect_field_refused(const struct catalog *c, const char *sched,
				 const char *key, const char *bad,
				 const char *good)
{
	struct gemmd_error err;
	struct gemm_plan p;
	char body[256], field[64];

	snprintf(field, sizeof(field), "kernel.%s", key);
	field_job(body, sizeof(body), sched, key, bad);
	expect_422(c, body, NULL, field);
	field_job(body, sizeof(body), sched, key, good);
	memset(&err, 0, sizeof(err));
	if (plan(c, body, NULL, &p, &err) < 0)
		CHECK(strcmp(err.field, field) != 0);
}

/* Expect the job to plan; the plan in *p. */
static void expect_plan(const struct catalog *c, const char *body,
			const struct device_limits *dev, struct gemm_plan *p)
{
	struct gemmd_error err;
	int r = plan(c, body, dev, p, &err);

	CHECK_EQ_INT(r, 0);
	if (r < 0)
		fprintf(stderr, "  body: %s\n  got: %s %s\n", body, err.field,
			err.message);
}

static void expect_kernel(const struct catalog *c, const char *body,
			  const struct device_limits *dev, struct gemm_plan *p,
			  const char *kernel)
{
	expect_plan(c, body, dev, p);
	CHECK_STREQ(p->kernel, kernel);
}

/* A 4096^3 job with these members of "kernel". */
#define JOB_4K(kernel) \
	"{\"m\":4096,\"n\":4096,\"k\":4096,\"kernel\":{" kernel "}}"

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
	/* ceil(1000 / 128) x ceil(1500 / 256) tiles, one unit each */
	CHECK_EQ_INT(p.units, 8 * 6);
	CHECK_EQ_INT(p.grid[0], 48);
	CHECK_EQ_INT(p.grid[1], 1);
	CHECK_EQ_INT(p.grid[2], 1);
	CHECK_EQ_INT(p.block[0], 384);
	CHECK_EQ_INT(p.cluster[0], 1);
	CHECK_EQ_INT(p.cluster[1], 1);
	CHECK_EQ_INT(p.cluster[2], 1);
	CHECK_EQ_INT(p.stages, 3);
	CHECK_EQ_INT(p.smem_bytes, 2048 + 3 * 49152);
	CHECK(!p.persistent);
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_DIRECT);

	/* tiles 8 x 12 in clusters of 2 x 1: units 4 x 12 */
	expect_plan(c,
		    "{\"m\":1000,\"n\":1500,\"k\":1032,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"cluster\":[2,1]}}",
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_bf16_128");
	CHECK_EQ_INT(p.units, 48);
	CHECK_EQ_INT(p.grid[0], 96);
	CHECK_EQ_INT(p.grid[1], 1);
	CHECK_EQ_INT(p.cluster[0], 2);
	CHECK_EQ_INT(p.cluster[1], 1);
	/* an odd count rounds up: 9 x 12 tiles in 1 x 2 clusters, 9 x 6 */
	expect_plan(c,
		    "{\"m\":1100,\"n\":1500,\"k\":64,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"cluster\":[1,2]}}",
		    NULL, &p);
	CHECK_EQ_INT(p.units, 9 * 6);
	CHECK_EQ_INT(p.grid[0], 54);
	CHECK_EQ_INT(p.grid[1], 2);
	CHECK_EQ_INT(p.cluster[1], 2);
	/* persistent: the full figure; the worker cuts it down */
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":64,\"kernel\":"
		    "{\"schedule\":\"cooperative\",\"cluster\":[2,4]}}",
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_coop");
	CHECK(p.persistent);
	CHECK_EQ_INT(p.units, 16 * 4); /* 32 x 16 tiles */
	CHECK_EQ_INT(p.grid[0], 128);
	CHECK_EQ_INT(p.grid[1], 4);
	catalog_free(c);
}

/* The output type and the epilogue the kernel offers; the cluster. */
static void test_offers(void)
{
	struct catalog *c = make_catalog();
	struct device_limits h100 = { .sm_count = 132, .smem_optin = 232448 };
	struct gemm_plan p;

	/* fp32 out: only k_bf16_128 has it, even where 128x256 would win */
	expect_plan(c, "{\"m\":8192,\"n\":8192,\"k\":8192}", &h100, &p);
	CHECK_STREQ(p.kernel, "k_bf16_256");
	expect_plan(c,
		    "{\"m\":8192,\"n\":8192,\"k\":8192,"
		    "\"out_dtype\":\"fp32\"}",
		    &h100, &p);
	CHECK_STREQ(p.kernel, "k_bf16_128");
	expect_422(c, "{\"m\":64,\"n\":64,\"k\":64,\"out_dtype\":\"fp16\"}",
		   NULL, "out_dtype");
	/* cuBLASLt has no bf16 -> fp16 GEMM; fp32 out is fine */
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"out_dtype\":\"fp16\","
		   "\"kernel\":{\"schedule\":\"cooperative\"},"
		   "\"baseline\":\"cublas\"}",
		   NULL, "baseline");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"out_dtype\":\"fp16\","
		   "\"kernel\":{\"schedule\":\"cooperative\"},"
		   "\"baseline\":\"cublas_default\"}",
		   NULL, "baseline");
	expect_plan(c,
		    "{\"m\":64,\"n\":64,\"k\":64,\"out_dtype\":\"bf16\","
		    "\"kernel\":{\"schedule\":\"cooperative\"},"
		    "\"baseline\":\"cublas_default\"}",
		    NULL, &p);
	expect_plan(c,
		    "{\"m\":64,\"n\":64,\"k\":64,\"out_dtype\":\"fp32\","
		    "\"kernel\":{\"schedule\":\"cooperative\"},"
		    "\"baseline\":\"cublas\"}",
		    NULL, &p);
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"dtype\":\"fp16\","
		   "\"out_dtype\":\"fp32\"}",
		   NULL, "out_dtype");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"out_dtype\":\"fp32\","
		   "\"kernel\":{\"tile\":\"128x256x64\"}}",
		   NULL, "out_dtype");
	/* the tma epilogue: k_bf16_256 has none */
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		   "{\"tile\":\"128x256x64\",\"epilogue\":\"tma\"}}",
		   NULL, "kernel.epilogue");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"layout\":\"nt\","
		   "\"kernel\":{\"schedule\":\"multistage\","
		   "\"epilogue\":\"tma\"}}",
		   NULL, "kernel.epilogue");
	expect_plan(c,
		    "{\"m\":8192,\"n\":8192,\"k\":64,\"kernel\":"
		    "{\"epilogue\":\"tma\"}}",
		    &h100, &p);
	CHECK_STREQ(p.kernel, "k_bf16_128");
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_TMA);
	/* pdl: only a kernel whose note says it waits for the grid before */
	expect_422(c, "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{\"pdl\":true}}",
		   NULL, "kernel.pdl");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"layout\":\"nt\","
		   "\"kernel\":{\"schedule\":\"multistage\",\"pdl\":true}}",
		   NULL, "kernel.pdl");
	expect_plan(c,
		    "{\"m\":8192,\"n\":8192,\"k\":64,\"kernel\":"
		    "{\"schedule\":\"cooperative\",\"pdl\":true}}",
		    &h100, &p);
	CHECK_STREQ(p.kernel, "k_coop");
	/* clusters: the kernel's limit, x * y */
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		   "{\"tile\":\"128x256x64\",\"cluster\":[2,1]}}",
		   NULL, "kernel.cluster");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		   "{\"cluster\":[1,4]}}",
		   NULL, "kernel.cluster");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		   "{\"schedule\":\"cooperative\",\"cluster\":[4,4]}}",
		   NULL, "kernel.cluster");
	/* a cluster picks the kernel that takes it */
	expect_plan(c,
		    "{\"m\":8192,\"n\":8192,\"k\":64,\"kernel\":"
		    "{\"cluster\":[2,1]}}",
		    &h100, &p);
	CHECK_STREQ(p.kernel, "k_bf16_128");
	expect_plan(c,
		    "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		    "{\"schedule\":\"cooperative\",\"cluster\":[8,1]}}",
		    NULL, &p);
	CHECK_EQ_INT(p.grid[0], 8);
	catalog_free(c);
}

/* Shared memory: the tma epilogue's bytes come off the stage ring. */
static void test_epilogue_stages(void)
{
	struct catalog *c = make_catalog();
	struct device_limits dev = { .sm_count = 132, .smem_optin = 232448 };
	struct gemm_plan p;

	/* direct: (232448 - 2048) / 32768 = 7 stages fit; 4 by default */
	expect_plan(c,
		    "{\"m\":8192,\"n\":8192,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"epilogue\":\"direct\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, PLAN_DEFAULT_STAGES);
	CHECK_EQ_INT(p.smem_bytes, 2048 + 4 * 32768);
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_DIRECT);
	/* all 7 for 16 tiles on 132 SMs: a deep ring */
	expect_plan(c,
		    "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"epilogue\":\"direct\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, 7);
	/* 264 tiles (2 per SM) still deep, 272 not */
	expect_plan(c,
		    "{\"m\":4224,\"n\":1024,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"epilogue\":\"direct\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, 7);
	expect_plan(c,
		    "{\"m\":4352,\"n\":1024,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"epilogue\":\"direct\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, PLAN_DEFAULT_STAGES);
	expect_plan(c,
		    "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"epilogue\":\"direct\","
		    "\"stages\":7}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, 7);
	CHECK_EQ_INT(p.smem_bytes, 2048 + 7 * 32768);
	/* tma: (232448 - 2048 - 32768) / 32768 = 6 fit */
	expect_plan(c,
		    "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"epilogue\":\"tma\","
		    "\"stages\":6}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, 6);
	CHECK_EQ_INT(p.smem_bytes, 2048 + 6 * 32768 + 32768);
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_TMA);
	/* auto: tma, since it leaves room for the default 4 stages */
	expect_plan(c,
		    "{\"m\":8192,\"n\":8192,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, 4);
	CHECK_EQ_INT(p.smem_bytes, 2048 + 4 * 32768 + 32768);
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_TMA);
	/* a deep ring keeps the tma epilogue: the 6 that fit beside it */
	expect_plan(c,
		    "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, 6);
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_TMA);
	/* auto with 7 stages asked for: only direct stores leave room */
	expect_plan(c,
		    "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\",\"stages\":7}}",
		    &dev, &p);
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_DIRECT);
	/* auto with rows of D not 16-byte aligned: direct */
	expect_plan(c,
		    "{\"m\":512,\"n\":500,\"k\":512,\"kernel\":"
		    "{\"tile\":\"128x128x64\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.epilogue, GEMM_EPILOGUE_DIRECT);
	expect_422(c,
		   "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		   "{\"tile\":\"128x128x64\",\"epilogue\":\"tma\","
		   "\"stages\":7}}",
		   &dev, "kernel.stages");
	/* 120000 bytes: two 128x256 stages, but not beside the epilogue */
	dev.smem_optin = 120000;
	expect_plan(c,
		    "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		    "{\"schedule\":\"cooperative\"}}",
		    &dev, &p);
	CHECK_EQ_INT(p.stages, 2);
	expect_422(c,
		   "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		   "{\"schedule\":\"cooperative\",\"epilogue\":\"tma\"}}",
		   &dev, "kernel.epilogue");
	/* too little for any stage ring: the stages are at fault */
	dev.smem_optin = 60000;
	expect_422(c,
		   "{\"m\":512,\"n\":512,\"k\":512,\"kernel\":"
		   "{\"schedule\":\"cooperative\"}}",
		   &dev, "kernel.stages");
	catalog_free(c);
}

/*
 * The epilogue's bytes are the kernel's own: pingpong's consumers share
 * 16 KB of staging, which leaves room for a fifth 128x192 stage, and get
 * 16 KB each where the ring leaves room; cooperative's 32 KB stay 32.
 */
static void test_epilogue_bytes(void)
{
	static const char *const notes[] = {
		"kernel=k_pp schedule=pingpong dtype=bf16 layout=tn "
		"tile=128x192x64 threads=384 smem_fixed=2048 "
		"smem_stage=40960 min_stages=2 max_stages=5 cluster=8 "
		"persistent=1 pdl=1 epilogue=direct,tma smem_epilogue=16384 "
		"out=bf16,fp16,fp32 arch=sm_90a",
		"kernel=k_co schedule=cooperative dtype=bf16 layout=tn "
		"tile=128x192x64 threads=384 smem_fixed=2048 "
		"smem_stage=40960 min_stages=2 max_stages=5 cluster=8 "
		"persistent=1 pdl=1 " V2,
	};
#define JOB_8K(kernel) \
	"{\"m\":8192,\"n\":8192,\"k\":1024,\"kernel\":{" kernel "}}"
	static const struct {
		const char *job;
		enum gemm_epilogue epilogue;
		unsigned int smem_bytes;
	} cases[] = {
		/* 2048 + 5 * 40960 + 16384 = 223232 bytes fit */
		{ JOB_8K("\"schedule\":\"pingpong\",\"stages\":5"),
		  GEMM_EPILOGUE_TMA, 2048 + 5 * 40960 + 16384 },
		/* at four stages a set each fits */
		{ JOB_8K("\"schedule\":\"pingpong\",\"stages\":4"),
		  GEMM_EPILOGUE_TMA, 2048 + 4 * 40960 + 2 * 16384 },
		/* direct stores take no staging, one set or two */
		{ JOB_8K("\"schedule\":\"pingpong\",\"stages\":4,"
			 "\"epilogue\":\"direct\""),
		  GEMM_EPILOGUE_DIRECT, 2048 + 4 * 40960 },
		/* the other schedules' consumers store at once: one set */
		{ JOB_8K("\"schedule\":\"cooperative\",\"stages\":2"),
		  GEMM_EPILOGUE_TMA, 2048 + 2 * 40960 + 32768 },
		/* with 32 KB of staging only direct stores leave room */
		{ JOB_8K("\"schedule\":\"cooperative\",\"stages\":5"),
		  GEMM_EPILOGUE_DIRECT, 2048 + 5 * 40960 },
	};
	struct device_limits dev = { .sm_count = 132, .smem_optin = 232448 };
	struct catalog *c = catalog_new();
	struct kernel_info k;
	struct gemm_plan p;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(notes); i++) {
		CHECK_EQ_INT(kernel_info_parse(notes[i], "x.cubin", &k), 0);
		CHECK_EQ_INT(catalog_add(c, &k), 0);
	}
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		expect_plan(c, cases[i].job, &dev, &p);
		CHECK_EQ_INT(p.epilogue, cases[i].epilogue);
		CHECK_EQ_INT(p.smem_bytes, cases[i].smem_bytes);
	}
	expect_422(c,
		   JOB_8K("\"schedule\":\"cooperative\",\"stages\":5,"
			  "\"epilogue\":\"tma\""),
		   &dev, "kernel.stages");
	catalog_free(c);
#undef JOB_8K
}

#define SHAPE(layout, m, n, k, rest)                                   \
	"{\"m\":" #m ",\"n\":" #n ",\"k\":" #k ",\"layout\":\"" layout \
	"\"" rest "}"

/* Rows read through TMA are 16-byte aligned: 8 elements of bf16. */
static void test_alignment(void)
{
	struct catalog *c = make_catalog();
	struct gemm_plan p;

	/* tn: A and B both have rows of k */
	expect_422(c, SHAPE("tn", 1000, 1000, 1004, ""), NULL, "k");
	expect_plan(c, SHAPE("tn", 1001, 1003, 1000, ""), NULL, &p);
	/* nt: A rows of m, B rows of n */
	expect_422(c, SHAPE("nt", 1001, 1000, 1000, ""), NULL, "m");
	expect_422(c, SHAPE("nt", 1000, 1001, 1000, ""), NULL, "n");
	expect_plan(c, SHAPE("nt", 1000, 1000, 1001, ""), NULL, &p);
	CHECK_STREQ(p.kernel, "k_nt");
	/* nn: A rows of m, B rows of k */
	expect_422(c, SHAPE("nn", 1001, 1000, 1000, ""), NULL, "m");
	expect_422(c, SHAPE("nn", 1000, 1000, 1001, ""), NULL, "k");
	expect_plan(c, SHAPE("nn", 1000, 1001, 1000, ""), NULL, &p);
	CHECK_STREQ(p.kernel, "k_nn");
	/* tt: A rows of k, B rows of n */
	expect_422(c, SHAPE("tt", 1000, 1000, 1001, ""), NULL, "k");
	expect_422(c, SHAPE("tt", 1000, 1001, 1000, ""), NULL, "n");
	expect_plan(c, SHAPE("tt", 1001, 1000, 1000, ""), NULL, &p);
	CHECK_STREQ(p.kernel, "k_tt");
	/*
	 * sm_80 (cp.async): the layout's rule and k a multiple of 8 too,
	 * not only of 4 (1004)
	 */
	expect_422(c,
		   SHAPE("nt", 1000, 1000, 1001,
			 ",\"kernel\":{\"schedule\":\"multistage\"}"),
		   NULL, "k");
	expect_422(c,
		   SHAPE("nt", 1000, 1000, 1004,
			 ",\"kernel\":{\"schedule\":\"multistage\"}"),
		   NULL, "k");
	expect_422(c,
		   SHAPE("nt", 1000, 1001, 1000,
			 ",\"kernel\":{\"schedule\":\"multistage\"}"),
		   NULL, "n");
	expect_plan(c,
		    SHAPE("nt", 1000, 1000, 1000,
			  ",\"kernel\":{\"schedule\":\"multistage\"}"),
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_ms");
	CHECK_EQ_INT(p.block[0], 256);
	/* the tma epilogue stores rows of n outputs: 16 bytes */
	expect_422(c,
		   SHAPE("tn", 1000, 1004, 64,
			 ",\"kernel\":{\"epilogue\":\"tma\"}"),
		   NULL, "kernel.epilogue");
	expect_plan(c,
		    SHAPE("tn", 1000, 1000, 64,
			  ",\"kernel\":{\"epilogue\":\"tma\"}"),
		    NULL, &p);
	expect_422(c,
		   SHAPE("tn", 1000, 1002, 64,
			 ",\"out_dtype\":\"fp32\",\"kernel\":"
			 "{\"epilogue\":\"tma\"}"),
		   NULL, "kernel.epilogue");
	expect_plan(c,
		    SHAPE("tn", 1000, 1004, 64,
			  ",\"out_dtype\":\"fp32\",\"kernel\":"
			  "{\"epilogue\":\"tma\"}"),
		    NULL, &p);
	/* beta with the tma epilogue is fine; the direct one takes any n */
	expect_plan(c,
		    SHAPE("tn", 1000, 1000, 64,
			  ",\"beta\":1,\"kernel\":{\"epilogue\":\"tma\"}"),
		    NULL, &p);
	expect_plan(c, SHAPE("tn", 1000, 1001, 64, ""), NULL, &p);
	catalog_free(c);
}

/* Raster and swizzle left open: the rule in plan.c's pick_order(). */
static void test_order(void)
{
	struct catalog *c = make_catalog();
	struct device_limits h100 = { .sm_count = 132, .smem_optin = 232448 };
	struct gemm_plan p;

#define T128 "\"tile\":\"128x128x64\""
	/* 8 x 12 units, 96 CTAs: one wave, plain order along the short M */
	expect_plan(c, "{\"m\":1000,\"n\":1500,\"k\":64,\"kernel\":{" T128 "}}",
		    &h100, &p);
	CHECK_EQ_INT(p.raster, GEMM_RASTER_ALONG_M);
	CHECK_EQ_INT(p.swizzle, 1);
	/* 64 x 16 units: along the short N, bands of 8 across M */
	expect_plan(c, "{\"m\":8192,\"n\":2048,\"k\":64,\"kernel\":{" T128 "}}",
		    &h100, &p);
	CHECK_EQ_INT(p.raster, GEMM_RASTER_ALONG_N);
	CHECK_EQ_INT(p.swizzle, 8);
	/* square: along_m */
	expect_plan(c, "{\"m\":4096,\"n\":4096,\"k\":64,\"kernel\":{" T128 "}}",
		    &h100, &p);
	CHECK_EQ_INT(p.raster, GEMM_RASTER_ALONG_M);
	CHECK_EQ_INT(p.swizzle, 8);
	/* a raster asked for: the band is cut across N, 4 units wide */
	expect_plan(c,
		    "{\"m\":65536,\"n\":512,\"k\":64,\"kernel\":{" T128
		    ",\"raster\":\"along_m\"}}",
		    &h100, &p);
	CHECK_EQ_INT(p.raster, GEMM_RASTER_ALONG_M);
	CHECK_EQ_INT(p.swizzle, 1);
	/* ... and with along_n, 512 units across M */
	expect_plan(c, "{\"m\":65536,\"n\":512,\"k\":64,\"kernel\":{" T128 "}}",
		    &h100, &p);
	CHECK_EQ_INT(p.raster, GEMM_RASTER_ALONG_N);
	CHECK_EQ_INT(p.swizzle, 8);
	/* units are clusters: 2 x 1 clusters of 8 x 12 tiles are 4 x 12 */
	expect_plan(c,
		    "{\"m\":1000,\"n\":1500,\"k\":64,\"kernel\":{" T128
		    ",\"cluster\":[2,1]}}",
		    &h100, &p);
	CHECK_EQ_INT(p.raster, GEMM_RASTER_ALONG_M);
	CHECK_EQ_INT(p.swizzle, 1); /* 96 CTAs */
	/* what the job asks for is kept */
	expect_plan(c,
		    "{\"m\":8192,\"n\":2048,\"k\":64,\"kernel\":{" T128
		    ",\"raster\":\"along_m\",\"swizzle\":2}}",
		    &h100, &p);
	CHECK_EQ_INT(p.raster, GEMM_RASTER_ALONG_M);
	CHECK_EQ_INT(p.swizzle, 2);
	/* a GPU with more SMs than CTAs: one wave, plain order */
	h100.sm_count = 1024;
	expect_plan(c, "{\"m\":8192,\"n\":2048,\"k\":64,\"kernel\":{" T128 "}}",
		    &h100, &p);
	CHECK_EQ_INT(p.swizzle, 1);
#undef T128
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
	/* small: more CTAs win, and a deep ring (6 beside the epilogue) */
	CHECK_EQ_INT(
		plan(c, "{\"m\":512,\"n\":512,\"k\":512}", &h100, &p, &err), 0);
	CHECK_STREQ(p.kernel, "k_bf16_128");
	CHECK_EQ_INT(p.stages, 6);
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

/*
 * Stages asked for without a tile pick among the tiles that can run
 * them: the largest ws tile takes at most 4, the 128x128 one 7.  Where
 * no tile can, the refusal names the picked one's limit; where the
 * limit is what the kernel is built for, not shared memory, it says so.
 */
static void test_stages_pick(void)
{
	struct catalog *c = make_catalog();
	struct device_limits dev = { .sm_count = 132, .smem_optin = 232448 };
	struct gemmd_error err;
	struct gemm_plan p;

	expect_kernel(c, JOB_4K("\"schedule\":\"ws\""), &dev, &p, "k_bf16_256");
	expect_kernel(c, JOB_4K("\"schedule\":\"ws\",\"stages\":6"), &dev, &p,
		      "k_bf16_128");
	CHECK_EQ_INT(p.stages, 6);
	/* with tma, 6 fit beside the staging buffers of 128x128 alone */
	expect_kernel(c,
		      JOB_4K("\"schedule\":\"ws\",\"stages\":6,"
			     "\"epilogue\":\"tma\""),
		      &dev, &p, "k_bf16_128");
	/* 8: no ws tile is built for so many; named for the largest */
	expect_422(c, JOB_4K("\"schedule\":\"ws\",\"stages\":8"), &dev,
		   "kernel.stages");
	/* multistage: 16 KB stages, so 9 fit; it is built for 8 */
	CHECK(plan(c,
		   "{\"m\":512,\"n\":512,\"k\":512,\"layout\":\"nt\","
		   "\"kernel\":{\"schedule\":\"multistage\",\"stages\":9}}",
		   &dev, &p, &err) < 0);
	CHECK_STREQ(err.field, "kernel.stages");
	CHECK(strstr(err.message, "is built for at most 8 stages, got 9") !=
	      NULL);
	catalog_free(c);
}

/*
 * A grid's x dimension holds 2^31 - 1 blocks: with 16x16 tiles, 2^20 x
 * 2^19 is 2^31 of them, one too many; 16 columns fewer fit.
 */
static void test_grid_limit(void)
{
	struct catalog *c = catalog_new();
	struct gemmd_error err;
	struct kernel_info k;
	struct gemm_plan p;

	CHECK_EQ_INT(kernel_info_parse("kernel=k_small schedule=ws dtype=bf16 "
				       "layout=tn tile=16x16x64 threads=128 "
				       "smem_fixed=1024 smem_stage=4096 "
				       "min_stages=2 max_stages=4",
				       "k_small.cubin", &k),
		     0);
	CHECK_EQ_INT(catalog_add(c, &k), 0);
	CHECK(plan(c, "{\"m\":1048576,\"n\":524288,\"k\":64}", NULL, &p, &err) <
	      0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.code, "unsupported");
	CHECK_STREQ(err.field, "kernel.tile");
	CHECK(strstr(err.message, "2147483648 clusters, more than a grid "
				  "holds") != NULL);
	expect_plan(c, "{\"m\":1048576,\"n\":524272,\"k\":64}", NULL, &p);
	CHECK_EQ_INT(p.grid[0], 2147418112u);
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
	/* a layout the schedule has no kernel for: its fault, not the tile's */
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"layout\":\"tt\","
		   "\"kernel\":{\"schedule\":\"multistage\","
		   "\"tile\":\"128x128x32\"}}",
		   NULL, "kernel.schedule");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"layout\":\"tt\","
		   "\"kernel\":{\"tile\":\"128x256x64\"}}",
		   NULL, "kernel.tile");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":"
		   "{\"cluster\":[2,2]}}",
		   NULL, "kernel.cluster");
	expect_too_large(c, "{\"m\":65536,\"n\":65536,\"k\":8192}", &small,
			 "m");
	/* the field named is the largest dimension, not always m */
	expect_too_large(c, "{\"m\":64,\"n\":65536,\"k\":65536}", &small, "n");
	expect_too_large(c, "{\"m\":512,\"n\":512,\"k\":1048576}", &small, "k");
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"layout\":\"nt\","
		   "\"kernel\":{\"schedule\":\"pingpong\"}}",
		   NULL, "kernel.schedule");
	catalog_free(c);
	c = catalog_new();
	expect_422(c, "{\"m\":64,\"n\":64,\"k\":64}", NULL, "kernel.schedule");
	catalog_free(c);
}

/*
 * Stream-K: the cooperative schedule only, refused for every other one
 * before a kernel is looked for (the catalog here has no pingpong or
 * interleaved kernel: the decomposition is what the job hears about).
 */
static void test_decomposition(void)
{
	static const char *const others[] = { "ws", "pingpong", "interleaved",
					      "multistage", "pipelined" };
	struct catalog *c = make_catalog();
	struct gemmd_error err;
	struct gemm_plan p;
	size_t i;

	/* the default, and data_parallel asked for */
	expect_plan(c, "{\"m\":4096,\"n\":4096,\"k\":128}", NULL, &p);
	CHECK_EQ_INT(p.decomposition, GEMM_DECOMP_DATA_PARALLEL);
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\","
		    "\"decomposition\":\"data_parallel\"}}",
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_coop");
	CHECK_EQ_INT(p.decomposition, GEMM_DECOMP_DATA_PARALLEL);

	/* cooperative takes stream_k; nothing else of the plan changes */
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\",\"cluster\":[2,1],"
		    "\"decomposition\":\"stream_k\"}}",
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_coop");
	CHECK_EQ_INT(p.decomposition, GEMM_DECOMP_STREAM_K);
	CHECK(p.persistent);
	CHECK_EQ_INT(p.units, 16 * 16);
	CHECK_EQ_INT(p.grid[0], 2 * 16 * 16);

	for (i = 0; i < ARRAY_SIZE(others); i++)
		expect_field_refused(c, others[i], "decomposition", "stream_k",
				     "data_parallel");
	CHECK(plan(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{"
		   "\"schedule\":\"pingpong\",\"decomposition\":\"stream_k\"}}",
		   NULL, &p, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.code, "unsupported");
	CHECK_STREQ(err.field, "kernel.decomposition");
	CHECK_STREQ(err.message,
		    "stream_k needs the cooperative schedule, not pingpong");
	/* ws is the default schedule */
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{"
		   "\"decomposition\":\"stream_k\"}}",
		   NULL, "kernel.decomposition");

	/* the rule itself, which the catalog lists too */
	for (i = 0; i < _GEMM_SCHEDULE_MAX; i++) {
		CHECK(gemm_schedule_has_decomposition(
			i, GEMM_DECOMP_DATA_PARALLEL));
		CHECK_EQ_INT(gemm_schedule_has_decomposition(
				     i, GEMM_DECOMP_STREAM_K),
			     i == GEMM_SCHEDULE_COOPERATIVE);
	}
	catalog_free(c);
}

/*
 * GPC placement: the persistent schedules only (cooperative, pingpong),
 * refused for every other one before a kernel is looked for, as stream-K
 * is.  make_catalog() has no pingpong kernel: one is added here.
 */
static void test_placement(void)
{
	static const char *const others[] = { "ws", "interleaved", "multistage",
					      "pipelined" };
	static const char *const pingpong =
		"kernel=k_pp schedule=pingpong dtype=bf16 layout=tn "
		"tile=128x128x64 threads=384 smem_fixed=2048 "
		"smem_stage=32768 min_stages=2 max_stages=7 cluster=2 "
		"persistent=1 pdl=1 placement=1 " V2;
	static const char *const pingpong_wide =
		"kernel=k_pp192 schedule=pingpong dtype=bf16 layout=tn "
		"tile=128x192x64 threads=384 smem_fixed=2048 "
		"smem_stage=40960 min_stages=2 max_stages=5 cluster=8 "
		"persistent=1 pdl=1 " V2;
	struct catalog *c = make_catalog();
	struct gemm_plan p, q;
	struct gemmd_error err;
	struct kernel_info k;
	size_t i;

	CHECK_EQ_INT(kernel_info_parse(pingpong, "gemm_pp.cubin", &k), 0);
	CHECK_EQ_INT(catalog_add(c, &k), 0);

	/* the default, and none asked for */
	expect_plan(c, "{\"m\":4096,\"n\":4096,\"k\":128}", NULL, &p);
	CHECK_EQ_INT(p.placement, GEMM_PLACEMENT_NONE);
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\",\"cluster\":[2,1],"
		    "\"placement\":\"none\"}}",
		    NULL, &q);
	CHECK_STREQ(q.kernel, "k_coop");
	CHECK_EQ_INT(q.placement, GEMM_PLACEMENT_NONE);

	/* cooperative takes gpc; nothing else of the plan changes */
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\",\"cluster\":[2,1],"
		    "\"placement\":\"gpc\"}}",
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_coop");
	CHECK_EQ_INT(p.placement, GEMM_PLACEMENT_GPC);
	CHECK(p.persistent);
	q.placement = GEMM_PLACEMENT_GPC;
	CHECK(memcmp(&p, &q, sizeof(p)) == 0);
	/* not with stream-K: its entries claim no place */
	expect_422(c,
		   "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		   "\"schedule\":\"cooperative\","
		   "\"decomposition\":\"stream_k\","
		   "\"placement\":\"gpc\"}}",
		   NULL, "kernel.placement");

	/* and so does pingpong */
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"pingpong\",\"placement\":\"gpc\"}}",
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_pp");
	CHECK_EQ_INT(p.placement, GEMM_PLACEMENT_GPC);
	CHECK_EQ_INT(p.decomposition, GEMM_DECOMP_DATA_PARALLEL);
	CHECK(p.persistent);
	/* but not a kernel built without it (pingpong 128x192's) */
	CHECK_EQ_INT(kernel_info_parse(pingpong_wide, "gemm_pp2.cubin", &k), 0);
	CHECK_EQ_INT(catalog_add(c, &k), 0);
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"pingpong\",\"tile\":\"128x192x64\"}}",
		    NULL, &p);
	CHECK_STREQ(p.kernel, "k_pp192");
	CHECK(plan(c,
		   "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		   "\"schedule\":\"pingpong\",\"tile\":\"128x192x64\","
		   "\"placement\":\"gpc\"}}",
		   NULL, &p, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.field, "kernel.placement");
	CHECK(strstr(err.message, "built with gpc placement") != NULL);

	for (i = 0; i < ARRAY_SIZE(others); i++)
		expect_field_refused(c, others[i], "placement", "gpc", "none");
	CHECK(plan(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{"
		   "\"schedule\":\"interleaved\",\"placement\":\"gpc\"}}",
		   NULL, &p, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.code, "unsupported");
	CHECK_STREQ(err.field, "kernel.placement");
	CHECK_STREQ(err.message, "gpc placement needs the cooperative or "
				 "pingpong schedule, not interleaved");
	/* ws is the default schedule */
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{"
		   "\"placement\":\"gpc\"}}",
		   NULL, "kernel.placement");
	/* both refused: the decomposition is checked first */
	expect_422(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{"
		   "\"schedule\":\"pingpong\","
		   "\"decomposition\":\"stream_k\","
		   "\"placement\":\"gpc\"}}",
		   NULL, "kernel.decomposition");

	/* the rule itself */
	for (i = 0; i < _GEMM_SCHEDULE_MAX; i++) {
		CHECK(gemm_schedule_has_placement(i, GEMM_PLACEMENT_NONE));
		CHECK_EQ_INT(gemm_schedule_has_placement(i, GEMM_PLACEMENT_GPC),
			     i == GEMM_SCHEDULE_COOPERATIVE ||
				     i == GEMM_SCHEDULE_PINGPONG);
	}
	catalog_free(c);
}

/*
 * kernel.occupancy: "auto" is balanced on the persistent data-parallel
 * kernels and full elsewhere; "balanced" asked of a kernel that is not
 * persistent, or with stream-K, is a 422 naming the field.
 */
static void test_occupancy(void)
{
	static const char *const others[] = { "ws", "interleaved", "multistage",
					      "pipelined" };
	struct catalog *c = make_catalog();
	struct gemm_plan p, q;
	struct gemmd_error err;
	size_t i;

	/* the default: ws is not persistent */
	expect_plan(c, "{\"m\":4096,\"n\":4096,\"k\":128}", NULL, &p);
	CHECK_EQ_INT(p.occupancy, GEMM_OCCUPANCY_FULL);
	CHECK(!p.persistent);
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\",\"cluster\":[2,1]}}",
		    NULL, &p);
	CHECK(p.persistent);
	CHECK_EQ_INT(p.occupancy, GEMM_OCCUPANCY_BALANCED);
	/* asked for: nothing else of the plan changes */
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\",\"cluster\":[2,1],"
		    "\"occupancy\":\"full\"}}",
		    NULL, &q);
	CHECK_EQ_INT(q.occupancy, GEMM_OCCUPANCY_FULL);
	q.occupancy = GEMM_OCCUPANCY_BALANCED;
	CHECK(memcmp(&p, &q, sizeof(p)) == 0);
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\",\"cluster\":[2,1],"
		    "\"occupancy\":\"balanced\"}}",
		    NULL, &q);
	CHECK(memcmp(&p, &q, sizeof(p)) == 0);
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\",\"occupancy\":\"auto\"}}",
		    NULL, &p);
	CHECK_EQ_INT(p.occupancy, GEMM_OCCUPANCY_BALANCED);

	/* stream-K deals k-tiles to every cluster: full, and only full */
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"cooperative\","
		    "\"decomposition\":\"stream_k\"}}",
		    NULL, &p);
	CHECK_EQ_INT(p.occupancy, GEMM_OCCUPANCY_FULL);
	CHECK(plan(c,
		   "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		   "\"schedule\":\"cooperative\","
		   "\"decomposition\":\"stream_k\","
		   "\"occupancy\":\"balanced\"}}",
		   NULL, &p, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.code, "unsupported");
	CHECK_STREQ(err.field, "kernel.occupancy");
	CHECK(strstr(err.message, "data_parallel") != NULL);

	/* the kernels that are not persistent take full or auto alone */
	for (i = 0; i < ARRAY_SIZE(others); i++) {
		expect_field_refused(c, others[i], "occupancy", "balanced",
				     "full");
		expect_field_refused(c, others[i], "occupancy", "balanced",
				     "auto");
	}
	CHECK(plan(c,
		   "{\"m\":64,\"n\":64,\"k\":64,\"kernel\":{"
		   "\"occupancy\":\"balanced\"}}",
		   NULL, &p, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.field, "kernel.occupancy");
	CHECK_STREQ(err.message, "balanced occupancy needs the cooperative or "
				 "pingpong schedule, not ws");

	/* the rule itself */
	for (i = 0; i < _GEMM_SCHEDULE_MAX; i++) {
		CHECK(gemm_schedule_has_occupancy(i, GEMM_OCCUPANCY_AUTO));
		CHECK(gemm_schedule_has_occupancy(i, GEMM_OCCUPANCY_FULL));
		CHECK_EQ_INT(
			gemm_schedule_has_occupancy(i, GEMM_OCCUPANCY_BALANCED),
			i == GEMM_SCHEDULE_COOPERATIVE ||
				i == GEMM_SCHEDULE_PINGPONG);
	}
	catalog_free(c);
}

/*
 * The entry the plan names for a cooperative job with these top-level and
 * kernel fields (each empty or ending in a comma).
 */
static void expect_entry(const struct catalog *c, const char *top,
			 const char *kernel, const char *entry)
{
	char body[256];
	struct gemm_plan p;

	snprintf(body, sizeof(body),
		 "{%s\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{%s"
		 "\"schedule\":\"cooperative\"}}",
		 top, kernel);
	expect_plan(c, body, NULL, &p);
	CHECK_STREQ(p.kernel, "k_coop");
	CHECK_STREQ(p.entry, entry);
	if (strcmp(p.entry, entry))
		fprintf(stderr, "  body: %s\n", body);
}

/*
 * The function launched (kernels/gemm-abi.h): _packed for TMA stores of
 * D in the input type without C on the SM90 warp-specialized kernels,
 * _sk for stream-K, the kernel's own entry for everything else.
 */
static void test_entry(void)
{
	struct catalog *c = make_catalog();
	struct gemm_plan p;

	expect_entry(c, "", "", "k_coop_packed"); /* tma where it fits */
	expect_entry(c, "", "\"epilogue\":\"tma\",", "k_coop_packed");
	expect_entry(c, "\"beta\":0,\"alpha\":2,", "", "k_coop_packed");
	expect_entry(c, "\"beta\":-0.0,", "", "k_coop_packed");
	expect_entry(c, "\"out_dtype\":\"bf16\",", "", "k_coop_packed");
	expect_entry(c, "", "\"epilogue\":\"direct\",", "k_coop");
	expect_entry(c, "\"beta\":1,", "", "k_coop");
	/* the smallest beta an fp32 holds reads C; one below is refused */
	expect_entry(c, "\"beta\":1e-45,", "", "k_coop");
	expect_entry(c, "\"out_dtype\":\"fp32\",", "", "k_coop");
	expect_entry(c, "\"out_dtype\":\"fp16\",", "", "k_coop");
	expect_entry(c, "", "\"decomposition\":\"stream_k\",", "k_coop_sk");
	expect_entry(c, "\"beta\":1,\"out_dtype\":\"fp32\",",
		     "\"decomposition\":\"stream_k\",", "k_coop_sk");

	/* ws has one too; the sm_80 kernels have only their own */
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":{"
		    "\"schedule\":\"ws\",\"tile\":\"128x128x64\","
		    "\"epilogue\":\"tma\"}}",
		    NULL, &p);
	CHECK_STREQ(p.entry, "k_bf16_128_packed");
	expect_plan(c,
		    "{\"m\":4096,\"n\":4096,\"k\":128,\"layout\":\"nt\","
		    "\"kernel\":{\"schedule\":\"multistage\"}}",
		    NULL, &p);
	CHECK_STREQ(p.entry, "k_ms");
	catalog_free(c);
}

static void test_json_round_trip(void)
{
	char long_name[sizeof(((struct gemm_plan *)NULL)->entry) + 1] = "";
	struct catalog *c = make_catalog();
	struct gemmd_error err;
	struct gemm_plan a, b;
	json_t *j;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK_EQ_INT(plan(c, "{\"m\":300,\"n\":200,\"k\":128}", NULL, &a, &err),
		     0);
	j = plan_to_json(&a);
	/* a catalog that read no cubin has no digest to pass on */
	CHECK(json_is_null(json_object_get(j, "digest")));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	json_decref(j);

	/* the cubin's digest goes to the worker, which checks its file */
	sha256_tag("cubin", 5, a.digest);
	j = plan_to_json(&a);
	CHECK_STREQ(json_string_value(json_object_get(j, "digest")), a.digest);
	memset(&b, 0, sizeof(b));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	json_object_del(j, "digest");
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_STREQ(b.digest, "");
	json_object_set_new(j, "digest", json_integer(1));
	CHECK(plan_from_json(j, &b) < 0);
	json_decref(j);
	memset(a.digest, 0, sizeof(a.digest));

	CHECK_EQ_INT(plan(c,
			  "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":"
			  "{\"schedule\":\"cooperative\",\"cluster\":[2,1],"
			  "\"epilogue\":\"tma\",\"raster\":\"along_n\"}}",
			  NULL, &a, &err),
		     0);
	j = plan_to_json(&a);
	CHECK_STREQ(json_string_value(json_object_get(j, "raster")), "along_n");
	CHECK_EQ_INT(json_integer_value(json_object_get(j, "swizzle")), 8);
	CHECK_STREQ(json_string_value(json_object_get(j, "epilogue")), "tma");
	CHECK(json_is_true(json_object_get(j, "persistent")));
	CHECK_EQ_INT(json_integer_value(json_object_get(j, "units")), 16 * 16);
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);

	/* strict: the worker is ours, anything odd is a bug */
	json_object_set_new(j, "raster", json_string("auto"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "raster", json_string("along_m"));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	json_object_set_new(j, "swizzle", json_integer(3));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "swizzle", json_integer(1));
	json_object_set_new(j, "epilogue", json_string("smem"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "epilogue", json_string("direct"));
	json_object_set_new(j, "units", json_integer(0));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_del(j, "units");
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "units", json_integer(4));
	json_object_set_new(j, "persistent", json_integer(1));
	CHECK(plan_from_json(j, &b) < 0);
	/* balanced needs work units to balance: a persistent plan */
	CHECK_STREQ(json_string_value(json_object_get(j, "occupancy")),
		    "balanced");
	json_object_set_new(j, "persistent", json_false());
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "occupancy", json_string("full"));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_EQ_INT(b.occupancy, GEMM_OCCUPANCY_FULL);
	json_object_set_new(j, "extra", json_true());
	CHECK(plan_from_json(j, &b) < 0);
	json_object_del(j, "extra");
	/* the entry is the worker's to launch: there, and of a sane length */
	json_object_del(j, "entry");
	CHECK(plan_from_json(j, &b) < 0);
	memset(long_name, 'k', sizeof(long_name) - 1);
	json_object_set_new(j, "entry", json_string(long_name));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "entry", json_string("k_coop"));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_STREQ(b.entry, "k_coop");
	json_decref(j);

	/* the decomposition goes to the worker and back */
	j = plan_to_json(&b);
	CHECK_STREQ(json_string_value(json_object_get(j, "decomposition")),
		    "data_parallel");
	json_decref(j);
	CHECK_EQ_INT(plan(c,
			  "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":"
			  "{\"schedule\":\"cooperative\","
			  "\"decomposition\":\"stream_k\"}}",
			  NULL, &a, &err),
		     0);
	j = plan_to_json(&a);
	CHECK_STREQ(json_string_value(json_object_get(j, "decomposition")),
		    "stream_k");
	memset(&b, 0, sizeof(b));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_EQ_INT(b.decomposition, GEMM_DECOMP_STREAM_K);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	/* strict: a name not known, none at all, stream_k not persistent */
	json_object_set_new(j, "decomposition", json_string("split_k"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "decomposition", json_integer(1));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_del(j, "decomposition");
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "decomposition", json_string("stream_k"));
	json_object_set_new(j, "persistent", json_false());
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "decomposition", json_string("data_parallel"));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_EQ_INT(b.decomposition, GEMM_DECOMP_DATA_PARALLEL);
	/* stream-K runs every cluster that fits: never balanced */
	CHECK_STREQ(json_string_value(json_object_get(j, "occupancy")), "full");
	json_object_set_new(j, "persistent", json_true());
	json_object_set_new(j, "decomposition", json_string("stream_k"));
	json_object_set_new(j, "occupancy", json_string("balanced"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "decomposition", json_string("data_parallel"));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_EQ_INT(b.occupancy, GEMM_OCCUPANCY_BALANCED);
	/* a name not known, "auto" (the job's), none at all */
	json_object_set_new(j, "occupancy", json_string("auto"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "occupancy", json_string("half"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_del(j, "occupancy");
	CHECK(plan_from_json(j, &b) < 0);
	json_decref(j);

	/* the placement goes to the worker and back */
	j = plan_to_json(&b);
	CHECK_STREQ(json_string_value(json_object_get(j, "placement")), "none");
	json_decref(j);
	CHECK_EQ_INT(plan(c,
			  "{\"m\":4096,\"n\":4096,\"k\":128,\"kernel\":"
			  "{\"schedule\":\"cooperative\","
			  "\"placement\":\"gpc\"}}",
			  NULL, &a, &err),
		     0);
	j = plan_to_json(&a);
	CHECK_STREQ(json_string_value(json_object_get(j, "placement")), "gpc");
	memset(&b, 0, sizeof(b));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_EQ_INT(b.placement, GEMM_PLACEMENT_GPC);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	/* strict: a name not known, none at all, gpc not persistent */
	json_object_set_new(j, "placement", json_string("sm"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "placement", json_string("GPC"));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "placement", json_integer(1));
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "placement", json_null());
	CHECK(plan_from_json(j, &b) < 0);
	json_object_del(j, "placement");
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "placement", json_string("gpc"));
	json_object_set_new(j, "occupancy", json_string("full"));
	json_object_set_new(j, "persistent", json_false());
	CHECK(plan_from_json(j, &b) < 0);
	json_object_set_new(j, "placement", json_string("none"));
	CHECK_EQ_INT(plan_from_json(j, &b), 0);
	CHECK_EQ_INT(b.placement, GEMM_PLACEMENT_NONE);
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
	const char *dflt = "{\"m\":64,\"n\":64,\"k\":64,\"baseline\":"
			   "\"cublas_default\"}";
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
	/* cuBLASLt's first choice needs the library just the same */
	CHECK_EQ_INT(check_baseline(dflt, true, &err), 0);
	CHECK(check_baseline(dflt, false, &err) < 0);
	CHECK_EQ_INT(err.status, 422);
	CHECK_STREQ(err.code, "unsupported");
	CHECK_STREQ(err.field, "baseline");
	CHECK(strstr(err.message, "\"cublas_default\"") != NULL);
}

/*
 * Against the devices' JSON as the probe reports them, the way api.c
 * checks a job: the device it names, or every device merged; nothing to
 * check on a node without devices (a dry run).
 */
static int check_devices(const char *body, const char *devices,
			 struct gemmd_error *err)
{
	json_t *all = json_loads(devices, 0, NULL);
	struct device_limits lim = { 0 }, l;
	struct gemm_spec s;
	json_t *dev;
	size_t i;
	int r = 0;

	memset(err, 0, sizeof(*err));
	CHECK_EQ_INT(spec_parse(body, strlen(body), &s, err), 0);
	CHECK(all != NULL);
	json_array_foreach(all, i, dev) {
		if (s.device >= 0 && (size_t)s.device != i)
			continue;
		device_limits_from_json(dev, &l);
		if (s.device >= 0 || i == 0)
			lim = l;
		else
			device_limits_merge(&lim, &l);
	}
	if (json_array_size(all))
		r = plan_check_baseline(&s, lim.cublaslt, err);
	json_decref(all);
	return r;
}

static void test_device_limits(void)
{
	const char *a = "{\"sm_count\":132,\"max_smem_per_block_optin\":"
			"232448,\"memory_bytes\":150000000000,"
			"\"l2_bytes\":52428800,"
			"\"cublaslt\":{\"available\":true}}";
	const char *b = "{\"sm_count\":114,\"memory_bytes\":80000000000,"
			"\"l2_bytes\":-1}";
	struct device_limits x, y;
	json_t *ja = json_loads(a, 0, NULL), *jb = json_loads(b, 0, NULL);

	device_limits_from_json(ja, &x);
	CHECK_EQ_INT(x.sm_count, 132);
	CHECK_EQ_INT(x.smem_optin, 232448);
	CHECK(x.memory_bytes == 150000000000ull);
	CHECK(x.cublaslt);
	CHECK_EQ_INT(x.l2_bytes, 50 << 20);
	device_limits_from_json(jb, &y);
	CHECK_EQ_INT(y.smem_optin, 0); /* not known */
	CHECK(!y.cublaslt); /* not said: not available */
	CHECK_EQ_INT(y.l2_bytes, 0); /* nonsense: not known */
	/*
	 * either device: the smaller one's limits, cuBLASLt only if both,
	 * but the larger L2, so that cold timing flushes either one's
	 */
	device_limits_merge(&x, &y);
	CHECK_EQ_INT(x.sm_count, 114);
	CHECK(x.memory_bytes == 80000000000ull);
	CHECK(!x.cublaslt);
	CHECK_EQ_INT(x.l2_bytes, 50 << 20);
	/* the other way round: the larger L2 is the one merged in */
	device_limits_from_json(jb, &x);
	device_limits_from_json(ja, &y);
	device_limits_merge(&x, &y);
	CHECK(x.memory_bytes == 80000000000ull);
	CHECK_EQ_INT(x.l2_bytes, 50 << 20);
	json_decref(ja);
	json_decref(jb);
}

static unsigned int cc_of(const char *json)
{
	json_t *j = json_loads(json, 0, NULL);
	struct device_limits l;

	device_limits_from_json(j, &l);
	json_decref(j);
	return l.cc;
}

/*
 * A kernel runs on the SM version its cubin is built for (sm_90a: 9.0
 * only); any other GPU is refused before its launch would fail to load
 * the module.
 */
static void test_target(void)
{
	const char *job = "{\"m\":4096,\"n\":4096,\"k\":4096}";
	struct device_limits dev = { .sm_count = 132, .smem_optin = 232448 };
	struct device_limits other = dev;
	struct catalog *c = catalog_new();
	struct gemm_plan p;
	struct kernel_info k;

	CHECK_EQ_INT(cc_of("{\"compute_capability\":\"9.0\"}"), 90);
	CHECK_EQ_INT(cc_of("{\"compute_capability\":\"10.0\"}"), 100);
	CHECK_EQ_INT(cc_of("{\"compute_capability\":\"9.0x\"}"), 0);
	CHECK_EQ_INT(cc_of("{\"compute_capability\":90}"), 0);
	CHECK_EQ_INT(cc_of("{}"), 0);

	CHECK_EQ_INT(kernel_info_parse("kernel=k_ws schedule=ws dtype=bf16 "
				       "layout=tn tile=128x128x64 threads=384 "
				       "smem_fixed=1024 smem_stage=32768 "
				       "min_stages=2 max_stages=6",
				       "k_ws.cubin", &k),
		     0);
	k.sm = 90;
	CHECK_EQ_INT(catalog_add(c, &k), 0);
	dev.cc = 90;
	expect_plan(c, job, &dev, &p);
	dev.cc = 91; /* sm_90a code loads on 9.0 only */
	expect_422(c, job, &dev, "device");
	dev.cc = 80;
	expect_422(c, job, &dev, "device");
	dev.cc = 100;
	expect_422(c, job, &dev, "device");
	/* not known: the worker has not said, or the devices differ */
	dev.cc = 0;
	expect_plan(c, job, &dev, &p);
	dev.cc = 90;
	other.cc = 100;
	device_limits_merge(&dev, &other);
	CHECK_EQ_INT(dev.cc, 0);
	expect_plan(c, job, &dev, &p);
	catalog_free(c);
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
	CHECK(check_devices("{\"m\":64,\"n\":64,\"k\":64,"
			    "\"baseline\":\"cublas_default\",\"device\":1}",
			    mixed, &err) < 0);
	CHECK_STREQ(err.field, "baseline");
	CHECK_EQ_INT(check_devices("{\"m\":64,\"n\":64,\"k\":64,"
				   "\"baseline\":\"cublas_default\","
				   "\"device\":0}",
				   mixed, &err),
		     0);
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
	/* the first choice: as much memory, no trials, still the launches */
	s.baseline = GEMM_BASELINE_CUBLAS_DEFAULT;
	CHECK_EQ_INT(plan_memory_bytes(&s), mem + PLAN_CUBLASLT_WORKSPACE);
	CHECK(plan_deadline_sec(&s) > sec);
	/* big enough for the algorithm trials to show, under the cap */
	s.m = s.n = s.k = 8192;
	sec = plan_deadline_sec(&s);
	CHECK(sec < 600);
	s.baseline = GEMM_BASELINE_CUBLAS;
	CHECK(plan_deadline_sec(&s) > sec);
	s.baseline = GEMM_BASELINE_NONE;
	CHECK(plan_deadline_sec(&s) < sec);
	s.m = s.n = s.k = 4096;
	s.reference = GEMM_REFERENCE_CUBLAS;
	CHECK_EQ_INT(plan_memory_bytes(&s), mem + PLAN_CUBLASLT_WORKSPACE);
	/* separate: the cool-down twice more, before each side */
	s.baseline = GEMM_BASELINE_CUBLAS;
	s.cooldown_ms = 5000;
	s.baseline_order = GEMM_ORDER_INTERLEAVED;
	sec = plan_deadline_sec(&s);
	s.baseline_order = GEMM_ORDER_SEPARATE;
	CHECK_EQ_INT(plan_deadline_sec(&s), sec + 10);
}

/*
 * Many samples of a tiny kernel: each is a 50 us batch and in cold mode
 * an L2 flush, which no FLOP count shows.  Measured on an H200: 7.9 s
 * for 100000 samples of 128^3, 20.7 s with cuBLASLt beside them; the
 * deadline gives each side 10 s more than the 30 s it starts from.
 */
static void test_sample_budget(void)
{
	struct gemm_spec s;
	unsigned int one;

	spec_init(&s);
	s.m = s.n = s.k = 128;
	s.iterations = 1;
	one = plan_deadline_sec(&s);
	s.iterations = SPEC_ITERATIONS_MAX;
	CHECK(plan_deadline_sec(&s) >= one + 10);
	s.baseline = GEMM_BASELINE_CUBLAS;
	s.iterations = 1;
	one = plan_deadline_sec(&s);
	s.iterations = SPEC_ITERATIONS_MAX;
	CHECK(plan_deadline_sec(&s) >= one + 2 * 10);
}

/* A, B (dtype), D and C when beta is not 0 (out_dtype), the reference. */
static void test_memory(void)
{
	const uint64_t mn = 4096ull * 2048, mk = 4096ull * 1024,
		       nk = 2048ull * 1024;
	struct gemm_spec s;

	spec_init(&s);
	s.m = 4096;
	s.n = 2048;
	s.k = 1024;
	CHECK(!plan_reads_c(&s));
	CHECK_EQ_INT(plan_memory_bytes(&s), 2 * (mk + nk) + 2 * mn + 4 * mn);
	s.out = GEMM_DTYPE_FP32;
	CHECK_EQ_INT(plan_memory_bytes(&s), 2 * (mk + nk) + 4 * mn + 4 * mn);
	s.beta = -0.5;
	CHECK(plan_reads_c(&s));
	CHECK_EQ_INT(plan_memory_bytes(&s),
		     2 * (mk + nk) + 2 * 4 * mn + 4 * mn);
	s.beta = -0.0;
	CHECK(!plan_reads_c(&s));
	/* no reference without verification: the worker makes none */
	s.verify = false;
	CHECK_EQ_INT(plan_memory_bytes(&s), 2 * (mk + nk) + 4 * mn);
}

/*
 * On an 80 GB GPU, 131072^2 D in bf16 (32 GiB) fits; its fp32 reference
 * (64 GiB more) does not: refused only when verified.
 */
static void test_memory_unverified(void)
{
	const struct device_limits dev = { .memory_bytes = 80ull << 30 };
	struct catalog *c = make_catalog();
	struct gemm_plan p;

	expect_too_large(c, "{\"m\":131072,\"n\":131072,\"k\":64}", &dev, "m");
	expect_plan(c,
		    "{\"m\":131072,\"n\":131072,\"k\":64,"
		    "\"verify\":{\"enabled\":false}}",
		    &dev, &p);
	catalog_free(c);
}

/*
 * What the worker allocates beside the operands counts too: cold timing's
 * flush buffer (twice the L2) and stream-K's workspace (a tile of fp32
 * and a flag per CTA, at most one CTA per SM).
 */
static uint64_t operand_bytes(const char *body)
{
	struct gemmd_error err;
	struct gemm_spec s;

	CHECK_EQ_INT(spec_parse(body, strlen(body), &s, &err), 0);
	return plan_memory_bytes(&s);
}

static void test_memory_scratch(void)
{
	static const char cold[] = "{\"m\":4096,\"n\":4096,\"k\":128}";
	static const char hot[] = "{\"m\":4096,\"n\":4096,\"k\":128,"
				  "\"timing\":{\"mode\":\"hot\"}}";
	static const char sk[] = "{\"m\":4096,\"n\":4096,\"k\":128,"
				 "\"timing\":{\"mode\":\"hot\"},"
				 "\"kernel\":{\"schedule\":\"cooperative\","
				 "\"decomposition\":\"stream_k\"}}";
	const uint64_t ws = GEMMD_SK_WORKSPACE_BYTES(132, 128, 256);
	struct device_limits dev = { .sm_count = 132, .l2_bytes = 50 << 20 };
	struct catalog *c = make_catalog();
	struct gemm_plan p;

	dev.memory_bytes = operand_bytes(cold) + (100 << 20) - 1;
	expect_too_large(c, cold, &dev, "m");
	expect_plan(c, hot, &dev, &p);
	dev.memory_bytes++;
	expect_plan(c, cold, &dev, &p);
	/* an L2 of unknown size: the worker's fallback */
	dev.l2_bytes = 0;
	dev.memory_bytes = operand_bytes(cold) + PLAN_L2_FLUSH_FALLBACK - 1;
	expect_too_large(c, cold, &dev, "m");
	dev.memory_bytes++;
	expect_plan(c, cold, &dev, &p);

	dev.memory_bytes = operand_bytes(sk) + ws - 1;
	expect_too_large(c, sk, &dev, "m");
	expect_plan(c, hot, &dev, &p);
	dev.memory_bytes++;
	expect_plan(c, sk, &dev, &p);
	CHECK_EQ_INT(p.decomposition, GEMM_DECOMP_STREAM_K);
	CHECK_EQ_INT(p.tile.m, 128);
	CHECK_EQ_INT(p.tile.n, 256);
	catalog_free(c);
}

/* Layouts other than tn may use cuBLASLt: the worker supports them. */
static void test_layouts_cublas(void)
{
	struct catalog *c = make_catalog();
	struct gemmd_error err;
	struct gemm_plan p;

	expect_plan(c,
		    "{\"m\":64,\"n\":64,\"k\":64,\"layout\":\"tt\","
		    "\"baseline\":\"cublas\",\"verify\":{\"reference\":"
		    "\"cublas\"}}",
		    NULL, &p);
	CHECK_EQ_INT(check_baseline("{\"m\":64,\"n\":64,\"k\":64,"
				    "\"layout\":\"nn\",\"baseline\":"
				    "\"cublas\"}",
				    true, &err),
		     0);
	catalog_free(c);
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
	/* job-timeout-max caps it (the job store); the planner at a day */
	s.m = s.n = s.k = 1 << 20;
	CHECK_EQ_INT(plan_deadline_sec(&s), 86400);
	/*
	 * Four tiles of 64x64 and a long K run on four SMs: each SM is
	 * budgeted at its share of the GPU's rate (20 TFLOP/s over 132),
	 * not the whole GPU's rate for the job (47 s before).
	 */
	s.m = s.n = 128;
	s.k = 1 << 20;
	s.iterations = 10000;
	s.verify = false;
	CHECK(plan_deadline_sec(&s) >=
	      10001 * gemm_flops(&s) / (4 * 20e12 / 132));
	/* a large job is budgeted at the GPU's rate, within a wave */
	s.m = s.n = s.k = 8192;
	s.iterations = 100;
	CHECK(plan_deadline_sec(&s) <= 30 + s.cooldown_ms / 1000.0 +
					       (1 + s.warmup + s.iterations) *
						       gemm_flops(&s) * 1.01 /
						       20e12);
}

int main(void)
{
	RUN_TEST(test_geometry);
	RUN_TEST(test_offers);
	RUN_TEST(test_epilogue_stages);
	RUN_TEST(test_epilogue_bytes);
	RUN_TEST(test_alignment);
	RUN_TEST(test_order);
	RUN_TEST(test_auto_choice);
	RUN_TEST(test_refusals);
	RUN_TEST(test_grid_limit);
	RUN_TEST(test_stages_pick);
	RUN_TEST(test_decomposition);
	RUN_TEST(test_placement);
	RUN_TEST(test_occupancy);
	RUN_TEST(test_entry);
	RUN_TEST(test_json_round_trip);
	RUN_TEST(test_deadline);
	RUN_TEST(test_baseline);
	RUN_TEST(test_baseline_devices);
	RUN_TEST(test_device_limits);
	RUN_TEST(test_target);
	RUN_TEST(test_baseline_budget);
	RUN_TEST(test_sample_budget);
	RUN_TEST(test_memory);
	RUN_TEST(test_memory_unverified);
	RUN_TEST(test_memory_scratch);
	RUN_TEST(test_layouts_cublas);
	return check_exit();
}
