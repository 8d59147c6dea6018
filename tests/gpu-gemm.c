// SPDX-License-Identifier: MIT
/*
 * gpu-gemm - run every ws kernel through gpu_run() on a real GPU.
 *
 *   gpu-gemm                      the test (exit 77 without an SM90 GPU)
 *   gpu-gemm --bench M N K [DTYPE] TFLOP/s of every kernel and stage count
 *
 * The test builds its plans itself, from the same constants the kernels'
 * catalog notes carry, so it does not depend on the supervisor's planner.
 * randint inputs make fp32 accumulation exact: the kernels must then
 * match the reference rounded to the output type bit for bit, at every
 * stage count and on ragged shapes.  A few normal/uniform runs check the
 * tolerance path, and one deliberately wrong launch must fail
 * verification, to show that the check can fail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gemm-abi.h"
#include "gemm.h"
#include "gpu.h"
#include "util.h"

struct kernel {
	const char *name;
	enum gemm_dtype dtype;
	struct gemm_tile tile;
	unsigned int smem_stage;
	unsigned int max_stages;
};

/* Mirrors the gemmd_meta_* notes of kernels/gemm_ws.cu. */
static const struct kernel kernels[] = {
	/* clang-format off */
	{ "gemmd_ws_bf16_tn_128x128x64", GEMM_DTYPE_BF16,
	  { 128, 128, 64 }, 32768, 7 },
	{ "gemmd_ws_bf16_tn_128x256x64", GEMM_DTYPE_BF16,
	  { 128, 256, 64 }, 49152, 4 },
	{ "gemmd_ws_fp16_tn_128x128x64", GEMM_DTYPE_FP16,
	  { 128, 128, 64 }, 32768, 7 },
	{ "gemmd_ws_fp16_tn_128x256x64", GEMM_DTYPE_FP16,
	  { 128, 256, 64 }, 49152, 4 },
	/* clang-format on */
};

#define MIN_STAGES 2

struct shape {
	uint64_t m, n, k;
};

static struct gpu *gpu;

static unsigned int div_up(uint64_t a, unsigned int b)
{
	return (unsigned int)((a + b - 1) / b);
}

static void make_plan(const struct kernel *kn, unsigned int stages,
		      const struct shape *s, struct gemm_plan *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->kernel, sizeof(p->kernel), "%s", kn->name);
	snprintf(p->cubin, sizeof(p->cubin), "gemm_ws.cubin");
	p->grid[0] = div_up(s->m, kn->tile.m);
	p->grid[1] = div_up(s->n, kn->tile.n);
	p->grid[2] = 1;
	p->block[0] = GEMMD_WS_THREADS;
	p->block[1] = 1;
	p->block[2] = 1;
	p->cluster[0] = 1;
	p->cluster[1] = 1;
	p->cluster[2] = 1;
	p->smem_bytes = GEMMD_SMEM_FIXED + stages * kn->smem_stage;
	p->stages = stages;
	p->tile = kn->tile;
}

static void make_spec(const struct kernel *kn, const struct shape *s,
		      enum gemm_init init, uint64_t seed,
		      struct gemm_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->m = s->m;
	spec->n = s->n;
	spec->k = s->k;
	spec->dtype = kn->dtype;
	spec->layout = GEMM_LAYOUT_TN;
	spec->schedule = GEMM_SCHEDULE_WS;
	spec->tile = kn->tile;
	spec->cluster_x = 1;
	spec->cluster_y = 1;
	spec->warmup = 0;
	spec->iterations = 2; /* exercise the timing path too */
	spec->verify = true;
	spec->init = init;
	spec->seed = seed;
	spec->device = 0;
}

static void print_case(const char *status, const struct kernel *kn,
		       unsigned int stages, const struct shape *s,
		       enum gemm_init init)
{
	printf("%-4s %s stages=%u %llux%llux%llu %s\n", status, kn->name,
	       stages, (unsigned long long)s->m, (unsigned long long)s->n,
	       (unsigned long long)s->k, gemm_init_to_string(init));
}

static void print_verdict(const struct gemm_verdict *v)
{
	printf("     mismatches=%llu nan=%llu inf=%llu unwritten=%llu "
	       "max_abs=%g max_rel=%g rel_fro=%g (atol=%g rtol=%g)\n",
	       (unsigned long long)v->mismatches,
	       (unsigned long long)v->nan_count,
	       (unsigned long long)v->inf_count,
	       (unsigned long long)v->unwritten, v->max_abs_err, v->max_rel_err,
	       v->rel_fro_err, v->atol, v->rtol);
	if (v->first_row >= 0)
		printf("     first mismatch at (%lld, %lld): got %g want %g\n",
		       (long long)v->first_row, (long long)v->first_col,
		       v->first_got, v->first_want);
}

/* Runs one job; a lost context ends the program, nothing else can run. */
static int run_job(const struct gemm_spec *spec, const struct gemm_plan *p,
		   struct gemm_result *res)
{
	char err[512] = "";
	bool sticky;
	int e;

	e = gpu_run(gpu, spec, p, res, &sticky, err, sizeof(err));
	if (e < 0)
		printf("     gpu_run: %s (%s)\n", err, strerror(-e));
	if (sticky) {
		printf("FAIL the CUDA context is lost; stopping\n");
		exit(EXIT_FAILURE);
	}
	return e;
}

static unsigned int n_passed, n_failed;

static void expect_pass(const struct kernel *kn, unsigned int stages,
			const struct shape *s, enum gemm_init init,
			uint64_t seed)
{
	struct gemm_spec spec;
	struct gemm_plan plan;
	struct gemm_result res;
	const struct gemm_verdict *v = &res.verify;
	bool ok;

	make_spec(kn, s, init, seed, &spec);
	make_plan(kn, stages, s, &plan);
	ok = run_job(&spec, &plan, &res) == 0 && v->checked && v->passed &&
	     v->mismatches == 0 && v->nan_count == 0 && v->inf_count == 0 &&
	     v->unwritten == 0 && res.timing.samples == spec.iterations;
	print_case(ok ? "ok" : "FAIL", kn, stages, s, init);
	if (!ok) {
		print_verdict(v);
		check_failures++;
		n_failed++;
	} else {
		n_passed++;
	}
}

/* Half the N tiles never run: the poison must show as unwritten. */
static void expect_fail_wrong_grid(const struct kernel *kn)
{
	const struct shape s = { 512, 1024, 256 };
	struct gemm_spec spec;
	struct gemm_plan plan;
	struct gemm_result res;
	bool ok;

	make_spec(kn, &s, GEMM_INIT_RANDINT, 7, &spec);
	make_plan(kn, MIN_STAGES, &s, &plan);
	plan.grid[1] /= 2;
	ok = run_job(&spec, &plan, &res) == 0 && res.verify.checked &&
	     !res.verify.passed && res.verify.unwritten == s.m * s.n / 2 &&
	     res.verify.mismatches == res.verify.unwritten;
	print_case(ok ? "ok" : "FAIL", kn, MIN_STAGES, &s, spec.init);
	printf("     (negative test: grid.y halved, verification must fail)\n");
	if (!ok) {
		print_verdict(&res.verify);
		check_failures++;
		n_failed++;
	} else {
		n_passed++;
	}
}

static const struct shape exact_shapes[] = {
	{ 512, 512, 512 }, /* whole tiles */
	{ 1000, 1500, 1032 }, /* ragged M, N and K */
	{ 129, 257, 72 }, /* one element past a tile; odd ldd */
	{ 64, 64, 8 }, /* short K: one zero-filled k-tile */
	{ 1, 1, 8 }, /* a single element */
	{ 256, 512, 4096 }, /* 64 k-tiles: the ring wraps many times */
};

static const struct shape tol_shapes[] = {
	{ 1024, 1024, 2048 },
	{ 777, 555, 1000 },
};

static void run_tests(void)
{
	uint64_t seed = 1;

	for (size_t i = 0; i < ARRAY_SIZE(kernels); i++) {
		const struct kernel *kn = &kernels[i];

		for (unsigned int st = MIN_STAGES; st <= kn->max_stages; st++)
			for (size_t j = 0; j < ARRAY_SIZE(exact_shapes); j++)
				expect_pass(kn, st, &exact_shapes[j],
					    GEMM_INIT_RANDINT, seed++);
		expect_pass(kn, kn->max_stages, &tol_shapes[0],
			    GEMM_INIT_NORMAL, seed++);
		expect_pass(kn, MIN_STAGES + 1, &tol_shapes[1],
			    GEMM_INIT_UNIFORM, seed++);
		expect_fail_wrong_grid(kn);
	}
}

/* ---- --bench ------------------------------------------------------------- */

static int bench(int argc, char **argv)
{
	struct shape s;
	const char *dtype = argc > 5 ? argv[5] : "all";

	if (argc < 5) {
		fprintf(stderr,
			"usage: gpu-gemm --bench M N K [bf16|fp16|all]\n");
		return EXIT_FAILURE;
	}
	s.m = strtoull(argv[2], NULL, 0);
	s.n = strtoull(argv[3], NULL, 0);
	s.k = strtoull(argv[4], NULL, 0);
	printf("%-28s %6s %7s %10s %10s %8s %8s %s\n", "kernel", "stages",
	       "smem", "median_us", "min_us", "TF/s", "TF/s@min", "verify");
	for (size_t i = 0; i < ARRAY_SIZE(kernels); i++) {
		const struct kernel *kn = &kernels[i];

		if (strcmp(dtype, "all") != 0 &&
		    strcmp(dtype, gemm_dtype_to_string(kn->dtype)) != 0)
			continue;
		for (unsigned int st = MIN_STAGES; st <= kn->max_stages; st++) {
			struct gemm_spec spec;
			struct gemm_plan plan;
			struct gemm_result res;
			double flops;

			make_spec(kn, &s, GEMM_INIT_NORMAL, 42, &spec);
			spec.warmup = 10;
			spec.iterations = 50;
			make_plan(kn, st, &s, &plan);
			if (run_job(&spec, &plan, &res) < 0) {
				check_failures++;
				continue;
			}
			flops = gemm_flops(&spec);
			printf("%-28s %6u %7u %10.1f %10.1f %8.1f %8.1f %s\n",
			       kn->name, st, plan.smem_bytes,
			       res.timing.median_us, res.timing.min_us,
			       res.tflops, flops / res.timing.min_us / 1e6,
			       res.verify.passed ? "ok" : "FAIL");
			if (!res.verify.passed)
				check_failures++;
		}
	}
	return check_exit();
}

/* ---- main ---------------------------------------------------------------- */

/* 0 when device 0 is an SM90 GPU; else prints why and returns 77. */
static int probe(char *name, size_t len)
{
	char err[512] = "";
	json_t *devs = NULL, *d;
	const char *cc = NULL, *n = NULL;
	int e;

	e = gpu_probe(&devs, err, sizeof(err));
	if (e == -ENOENT || e == -ENODEV || e == -ENOSYS) {
		printf("SKIP: %s\n", err);
		return EXIT_TEST_SKIP;
	}
	if (e < 0) {
		printf("FAIL: gpu_probe: %s\n", err);
		return EXIT_FAILURE;
	}
	d = json_array_get(devs, 0);
	if (d &&
	    json_unpack(d, "{s:s, s:s}", "compute_capability", &cc, "name",
			&n) == 0 &&
	    strncmp(cc, "9.", 2) == 0) {
		snprintf(name, len, "%s", n);
		json_decref(devs);
		return 0;
	}
	printf("SKIP: %s\n",
	       d ? "device 0 is not compute capability 9.x" : "no CUDA device");
	json_decref(devs);
	return EXIT_TEST_SKIP;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("GEMMD_KERNEL_DIR");
	char err[512] = "", name[256] = "";
	int e;

	setvbuf(stdout, NULL, _IOLBF, 0);
	e = probe(name, sizeof(name));
	if (e)
		return e;
	if (!dir)
		dir = "kernels";
	e = gpu_open(0, dir, &gpu, err, sizeof(err));
	if (e < 0) {
		printf("FAIL: gpu_open(%s): %s\n", dir, err);
		return EXIT_FAILURE;
	}
	printf("device 0: %s, kernels from %s\n", name, dir);

	if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
		e = bench(argc, argv);
	} else {
		run_tests();
		printf("%u passed, %u failed\n", n_passed, n_failed);
		e = check_exit();
	}
	gpu = gpu_close(gpu);
	return e;
}
