// SPDX-License-Identifier: MIT
/*
 * gpu-gemm - run every kernel of the catalog through gpu_run() on a real
 * GPU: a correctness matrix.
 *
 *   gpu-gemm [--kernel TEXT]       the test (exit 77 without an SM90 GPU)
 *   gpu-gemm --full [--kernel TEXT]
 *                                  the whole cross product (long: about
 *                                  5800 cases per kernel, and a walk over
 *                                  many tiles for persistent ones; TEXT
 *                                  narrows it to the kernels whose name
 *                                  holds TEXT)
 *   gpu-gemm --small [--full] [--kernel TEXT]
 *                                  the same cases on small problems, with
 *                                  persistent kernels on at most three
 *                                  clusters (for compute-sanitizer:
 *                                  tests/gpu-sanitize.test)
 *   gpu-gemm --bench M N K [DTYPE] TFLOP/s of every kernel and stage count
 *
 * Kernels come from the real catalog (catalog_load() on GEMMD_KERNEL_DIR,
 * which must list the kernel of each gemmd_*.cubin there), and every
 * case is a job as a client would write it: JSON text through
 * spec_parse() and plan_resolve(), then gpu_run().  A case that the
 * planner refuses fails, unless the test knows why it must (a shape the
 * layout's alignment rule forbids is moved to the next allowed one and
 * noted, a stage count that does not fit is left out); what it leaves
 * out (a stage more than fit, a cluster over the kernel's limit, rows of
 * A not 16-byte aligned) the planner must refuse, on the field that says
 * why (kernel_refusals(): no case, nothing runs).
 *
 * The dimensions of the matrix, per kernel:
 *   shape     512^3, ragged 1000x1500x1032, short-K 256x384x64, 64^3
 *   stages    the fewest, a middle count, the most that fit
 *   cluster   1x1, 2x1, 1x2, 2x2, 4x1, 1x4, 8x1, 4x2, 2x4, 1x8 (and 8x2,
 *             4x4, 2x8), up to the kernel's limit
 *   epilogue  each one the kernel has
 *   out       the input type, fp32, the other 16-bit type (if offered)
 *   order     along_m / along_n with swizzle 1 and 8 (2 and 4 in
 *             kernel_placement())
 *   scaling   (alpha, beta) = (1, 0), or (2, -1) with C
 * By default each kernel runs six randint cases (one a cluster shape, where
 * it takes more than six) that between them take every value of every
 * dimension at least once (each cluster shape, stage class, epilogue,
 * output type, order and shape), plus two within
 * tolerance (normal and uniform inputs); --full runs every combination
 * with randint inputs.  Persistent kernels also run two randint cases on
 * 4000x4040x320, several tiles per CTA, and a walk over such tiles at
 * four depths of K (kernel_walk(): four cases, or with --full every
 * stage class and cluster shape at each); cooperative kernels also run
 * their stream-K cases (kernel_stream_k()), the kernels built with GPC
 * placement two cases with it (kernel_placement()), and the SM90
 * warp-specialized kernels two cases on their general entry
 * (kernel_general_entry()).  randint inputs make fp32 accumulation
 * exact: the kernels must then match the reference rounded to the output
 * type bit for bit.  Every case must have zero mismatches,
 * NaN, Inf and unwritten elements.  One deliberately broken launch (half
 * the grid) must fail verification, to show that the check can fail.
 *
 * Each failing case prints one line (and its verdict and job); a table
 * per schedule closes the run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "catalog.h"
#include "check.h"
#include "gemm-abi.h"
#include "gemm.h"
#include "gpu.h"
#include "plan.h"
#include "spec.h"
#include "util.h"

struct shape {
	uint64_t m, n, k;
};

#define N_SHAPES 4
#define N_SK_SHAPES 2

/* The problem sizes of the matrix. */
struct sizes {
	/* whole tiles; ragged M, N and K; short K (one k-tile); tiny */
	struct shape shapes[N_SHAPES];
	/*
	 * More tiles than the persistent kernels' CTAs, ragged edges and
	 * five k-tiles, so the ring wraps inside tiles and across them.
	 */
	struct shape many_tiles;
	/*
	 * Stream-K's own shapes: fewer units than clusters with long K
	 * (every unit cut among many clusters, so its owner adds many
	 * slots), and one k-tile per unit (nothing to cut).
	 */
	struct shape sk_shapes[N_SK_SHAPES];
	/* the plan's clusters_max, 0: as many clusters as fit */
	unsigned int clusters_max;
};

/* many_tiles: about four tiles per CTA for the largest tile on 132 SMs. */
static const struct sizes full_sizes = {
	.shapes = { { 512, 512, 512 },
		    { 1000, 1500, 1032 },
		    { 256, 384, 64 },
		    { 64, 64, 64 } },
	.many_tiles = { 4000, 4040, 320 },
	.sk_shapes = { { 256, 512, 8192 }, { 2048, 2048, 64 } },
};

/*
 * --small: the same cases on problems small enough for compute-sanitizer's
 * racecheck, which instruments every shared-memory access.  Persistent
 * kernels run on at most three clusters, so that many_tiles still gives a
 * CTA several tiles (7 to 21, unevenly) and stream-K still cuts units.
 */
static const struct sizes small_sizes = {
	.shapes = { { 256, 256, 128 },
		    { 200, 264, 136 },
		    { 128, 192, 64 },
		    { 64, 64, 64 } },
	.many_tiles = { 520, 776, 320 },
	.sk_shapes = { { 256, 512, 1032 }, { 512, 512, 64 } },
	.clusters_max = 3,
};

/*
 * Every shape kernel.cluster takes (1, 2, 4 or 8 a side, SPEC_CLUSTER_MAX
 * CTAs at most), smallest first; kernel_clusters() keeps those within the
 * kernel's cluster_max (8 for the SM90 kernels).
 */
static const unsigned int clusters[][2] = {
	{ 1, 1 }, { 2, 1 }, { 1, 2 }, { 2, 2 }, { 4, 1 }, { 1, 4 }, { 8, 1 },
	{ 4, 2 }, { 2, 4 }, { 1, 8 }, { 8, 2 }, { 4, 4 }, { 2, 8 },
};

struct order {
	enum gemm_raster raster;
	unsigned int swizzle;
};

static const struct order orders[] = {
	{ GEMM_RASTER_ALONG_M, 1 },
	{ GEMM_RASTER_ALONG_N, 8 },
	{ GEMM_RASTER_ALONG_M, 8 },
	{ GEMM_RASTER_ALONG_N, 1 },
};

enum stage_class { STAGES_MIN, STAGES_MID, STAGES_MAX, _STAGES_CLASSES };

static const char *const stage_class_names[_STAGES_CLASSES] = {
	"min",
	"mid",
	"max",
};

/* One case of the matrix. */
struct tcase {
	const struct kernel_info *k;
	struct shape shape;
	enum stage_class stages;
	unsigned int cx, cy;
	enum gemm_epilogue epilogue;
	enum gemm_dtype out;
	struct order order;
	bool scaled; /* alpha 2, beta -1, with C */
	bool pdl; /* launched with programmatic dependent launch */
	bool stream_k; /* "decomposition": "stream_k" */
	bool full; /* "occupancy": "full" (default: "auto") */
	bool gpc; /* "placement": "gpc" (default: "none") */
	bool general; /* the kernel's own entry where the plan has _packed */
	enum gemm_init init;
	enum gemm_timing_mode mode;
};

enum outcome { CASE_PASS, CASE_FAIL, CASE_SKIP };

/* The run's kernels, device and tallies. */
static struct {
	struct catalog *cat;
	struct device_limits dev;
	struct gpu *gpu;
	const char *filter;
	const struct sizes *sz;
	uint64_t seed;
	unsigned int cases[_GEMM_SCHEDULE_MAX];
	unsigned int passed[_GEMM_SCHEDULE_MAX];
	unsigned int failed[_GEMM_SCHEDULE_MAX];
	unsigned int skipped[_GEMM_SCHEDULE_MAX];
	/* cases whose shape fit_shape() moved, and the first of them */
	unsigned int moved;
	char moved_example[160];
} t = { .sz = &full_sizes, .seed = 1 };

/* Timed samples per case: the timing path runs too, briefly. */
#define CASE_ITERATIONS 2

static void note(const char *fmt, ...) _printf_(1, 2);

static void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("note ", stdout);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* ---- what a kernel offers ------------------------------------------------ */

static bool a_kmajor(enum gemm_layout l)
{
	return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_TT;
}

static bool b_kmajor(enum gemm_layout l)
{
	return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_NN;
}

static unsigned int kernel_clusters(const struct kernel_info *k,
				    unsigned int ret[][2])
{
	unsigned int n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(clusters); i++) {
		if (clusters[i][0] * clusters[i][1] > MAX(k->cluster_max, 1u))
			continue;
		ret[n][0] = clusters[i][0];
		ret[n][1] = clusters[i][1];
		n++;
	}
	return n;
}

static unsigned int kernel_epilogues(const struct kernel_info *k,
				     enum gemm_epilogue *ret)
{
	unsigned int n = 0;

	for (int e = 0; e < _GEMM_EPILOGUE_MAX; e++)
		if (k->epilogues & KERNEL_BIT(e))
			ret[n++] = (enum gemm_epilogue)e;
	return n;
}

/* The input type first, then fp32, then the other 16-bit type. */
static unsigned int kernel_outs(const struct kernel_info *k,
				enum gemm_dtype *ret)
{
	const enum gemm_dtype other =
		k->dtype == GEMM_DTYPE_BF16 ? GEMM_DTYPE_FP16 : GEMM_DTYPE_BF16;
	const enum gemm_dtype want[] = { k->dtype, GEMM_DTYPE_FP32, other };
	unsigned int n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		if (k->outs & KERNEL_BIT(want[i]))
			ret[n++] = want[i];
	return n;
}

/* The stage count of a class with this epilogue; 0 if none fits. */
static unsigned int stages_of(const struct kernel_info *k, enum stage_class c,
			      enum gemm_epilogue epilogue)
{
	uint64_t fixed = (uint64_t)k->smem_fixed +
			 (epilogue == GEMM_EPILOGUE_TMA ? k->smem_epilogue : 0);
	uint64_t fit = 0;

	if (t.dev.smem_optin > fixed && k->smem_stage)
		fit = (t.dev.smem_optin - fixed) / k->smem_stage;
	fit = MIN(fit, (uint64_t)k->max_stages);
	if (fit < k->min_stages)
		return 0;
	switch (c) {
	case STAGES_MIN:
		return k->min_stages;
	case STAGES_MID:
		return (unsigned int)((k->min_stages + fit) / 2);
	case STAGES_MAX:
	case _STAGES_CLASSES:
	default:
		return (unsigned int)fit;
	}
}

static uint64_t round_up(uint64_t x, uint64_t to)
{
	return DIV_ROUND_UP(x, to) * to;
}

/*
 * The shape moved to the next one the alignment rules allow: rows of A,
 * B and (with the tma epilogue) D must be whole 16-byte units, so an
 * MN-major operand needs m or n a multiple of 8 and so on.
 */
static struct shape fit_shape(const struct tcase *c)
{
	const unsigned int in = gemm_dtype_size(c->k->dtype);
	const unsigned int out = gemm_dtype_size(c->out);
	struct shape s = c->shape;

	s.k = round_up(s.k, 16 / in);
	if (!a_kmajor(c->k->layout))
		s.m = round_up(s.m, 16 / in);
	if (!b_kmajor(c->k->layout))
		s.n = round_up(s.n, 16 / in);
	if (c->epilogue == GEMM_EPILOGUE_TMA)
		s.n = round_up(s.n, 16 / out);
	return s;
}

/* ---- one case ------------------------------------------------------------ */

static void describe(const struct tcase *c, const struct shape *s,
		     unsigned int stages, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%llux%llux%llu stages=%u(%s) cluster=%ux%u epilogue=%s "
		 "out=%s order=%s/%u%s%s%s%s%s%s init=%s %s",
		 (unsigned long long)s->m, (unsigned long long)s->n,
		 (unsigned long long)s->k, stages, stage_class_names[c->stages],
		 c->cx, c->cy, gemm_epilogue_to_string(c->epilogue),
		 gemm_dtype_to_string(c->out),
		 gemm_raster_to_string(c->order.raster), c->order.swizzle,
		 c->scaled ? " alpha=2 beta=-1" : "", c->pdl ? " pdl" : "",
		 c->stream_k ? " stream_k" : "",
		 c->full ? " occupancy=full" : "",
		 c->gpc ? " placement=gpc" : "",
		 c->general ? " entry=general" : "",
		 gemm_init_to_string(c->init), gemm_timing_mode_names[c->mode]);
}

/* The job as a client would send it. */
static int job_json(const struct tcase *c, const struct shape *s,
		    unsigned int stages, char *buf, size_t len)
{
	const struct kernel_info *k = c->k;
	int n;

	n = snprintf(
		buf, len,
		"{\"m\": %llu, \"n\": %llu, \"k\": %llu, \"dtype\": \"%s\", "
		"\"out_dtype\": \"%s\", \"layout\": \"%s\", \"alpha\": %d, "
		"\"beta\": %d, \"kernel\": {\"schedule\": \"%s\", "
		"\"tile\": \"%ux%ux%u\", \"stages\": %u, \"cluster\": [%u, %u], "
		"\"raster\": \"%s\", \"swizzle\": %u, \"epilogue\": \"%s\", "
		"\"pdl\": %s, \"decomposition\": \"%s\", "
		"\"occupancy\": \"%s\", \"placement\": \"%s\"}, "
		"\"timing\": {\"warmup\": 0, \"iterations\": %d, "
		"\"mode\": \"%s\", \"cooldown_ms\": 0}, "
		"\"verify\": {\"init\": \"%s\", \"seed\": %llu}, "
		"\"device\": 0}",
		(unsigned long long)s->m, (unsigned long long)s->n,
		(unsigned long long)s->k, gemm_dtype_to_string(k->dtype),
		gemm_dtype_to_string(c->out), gemm_layout_to_string(k->layout),
		c->scaled ? 2 : 1, c->scaled ? -1 : 0,
		gemm_schedule_to_string(k->schedule), k->tile.m, k->tile.n,
		k->tile.k, stages, c->cx, c->cy,
		gemm_raster_to_string(c->order.raster), c->order.swizzle,
		gemm_epilogue_to_string(c->epilogue), c->pdl ? "true" : "false",
		c->stream_k ? "stream_k" : "data_parallel",
		c->full ? "full" : "auto", c->gpc ? "gpc" : "none",
		CASE_ITERATIONS, gemm_timing_mode_names[c->mode],
		gemm_init_to_string(c->init), (unsigned long long)t.seed++);
	return n > 0 && (size_t)n < len ? 0 : -ENOBUFS;
}

/* spec_parse() and plan_resolve(), as the daemon does them. */
static int job_plan(const struct kernel_info *k, const char *json,
		    struct gemm_spec *spec, struct gemm_plan *plan, char *why,
		    size_t len)
{
	struct gemmd_error perr;

	memset(&perr, 0, sizeof(perr));
	if (spec_parse(json, strlen(json), spec, &perr) < 0) {
		snprintf(why, len, "spec refused: %s", perr.message);
		return -EINVAL;
	}
	if (plan_resolve(t.cat, spec, &t.dev, plan, &perr) < 0) {
		snprintf(why, len, "plan refused (%s): %s", perr.field,
			 perr.message);
		return -EINVAL;
	}
	if (strcmp(plan->kernel, k->name) != 0) {
		snprintf(why, len, "the planner picked %s", plan->kernel);
		return -EINVAL;
	}
	plan->clusters_max = t.sz->clusters_max;
	return 0;
}

/*
 * A case of the general entry: the planner must have picked the packed
 * one, which the plain entry stands in for here.
 */
static int job_general_entry(struct gemm_plan *plan, char *why, size_t len)
{
	const size_t n = strlen(plan->kernel);

	if (strncmp(plan->entry, plan->kernel, n) != 0 ||
	    strcmp(plan->entry + n, GEMMD_PACKED_ENTRY_SUFFIX) != 0) {
		snprintf(why, len, "the planner picked entry %s, not %s%s",
			 plan->entry, plan->kernel, GEMMD_PACKED_ENTRY_SUFFIX);
		return -EINVAL;
	}
	plan->entry[n] = '\0';
	return 0;
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
	for (unsigned int i = 1; i < v->n_sample; i++)
		printf("     then (%lld, %lld): got %g want %g\n",
		       (long long)v->sample[i].row, (long long)v->sample[i].col,
		       v->sample[i].got, v->sample[i].want);
	if (v->diagnosed)
		printf("     tile (%u, %u) warpgroup %u k_tile %d stage %d "
		       "(kind %d, other k_tile %d, from %u mismatches)\n",
		       v->where.tile_m, v->where.tile_n, v->where.warpgroup,
		       v->where.k_tile, v->where.stage, v->where.kind,
		       v->where.other_k_tile, v->where.used);
}

/* Runs one job; a lost context ends the program, nothing else can run. */
static int run_job(const struct gemm_spec *spec, const struct gemm_plan *p,
		   struct gemm_result *res, char *err, size_t errlen)
{
	bool sticky;
	int e;

	e = gpu_run(t.gpu, spec, p, res, &sticky, err, errlen);
	if (sticky) {
		printf("FAIL %s: the CUDA context is lost (%s); stopping\n",
		       p->kernel, err);
		exit(EXIT_FAILURE);
	}
	return e;
}

/*
 * Whether a launch of n clusters has whole waves: no fewer clusters give
 * each as few rounds of the plan's work units (daemon/worker/gpu.c).
 */
static bool grid_balanced(const struct gemm_plan *p, uint64_t n)
{
	const uint64_t rounds = (p->units + n - 1) / n;

	return (n - 1) * rounds < p->units;
}

static bool waves_are(const struct gemm_launch *l, uint64_t waves)
{
	return fabs(l->waves - (double)waves) < 1e-9;
}

/*
 * result.launch's clusters and waves against the plan: persistent
 * clusters all fit at once, and a whole-tile launch that no test cap cut
 * takes as many waves as the units need of the clusters that fit.
 */
static const char *launch_problem(const struct gemm_plan *p,
				  const struct gemm_launch *l)
{
	const uint64_t fit = l->clusters_resident;

	if (l->clusters * p->cluster[0] * p->cluster[1] != l->ctas)
		return "launch.clusters is not the grid's";
	if (!fit || (p->persistent && l->clusters > fit))
		return "launch.clusters_resident missing or too few";
	if (p->decomposition == GEMM_DECOMP_STREAM_K)
		return fabs(l->waves * (double)l->clusters - (double)p->units) <
				       1e-6 * (double)p->units ?
			       NULL :
			       "stream-K waves are not units / clusters";
	if (!waves_are(l, DIV_ROUND_UP(p->units, MIN(l->clusters, fit))))
		return "launch.waves is not the busiest cluster's units";
	if (!p->clusters_max && !waves_are(l, DIV_ROUND_UP(p->units, fit)))
		return "the launch takes more waves than the units need";
	return NULL;
}

/* What a passing case must show, besides gpu_run() returning 0. */
static const char *result_problem(const struct gemm_spec *spec,
				  const struct gemm_plan *p,
				  const struct gemm_result *res)
{
	const struct gemm_verdict *v = &res->verify;

	if (!v->checked)
		return "not verified";
	if (!v->passed || v->mismatches || v->nan_count || v->inf_count ||
	    v->unwritten)
		return "verification failed";
	/* every randint case here is exact: |alpha| 4k + |beta| 2 < 2^24 */
	if (spec->init == GEMM_INIT_RANDINT && (v->atol > 0 || v->rtol > 0))
		return "randint inputs not compared bit for bit";
	if (res->timing.samples != spec->iterations)
		return "wrong number of timed samples";
	/* Stream-K takes every cluster that fits, more than the units. */
	if (!res->launch.ctas ||
	    (p->decomposition == GEMM_DECOMP_DATA_PARALLEL &&
	     res->launch.grid[0] > p->grid[0]) ||
	    res->launch.grid[0] % p->cluster[0] ||
	    res->launch.grid[1] != p->grid[1])
		return "bad launch grid in the result";
	if (!p->persistent && res->launch.grid[0] != p->grid[0])
		return "a non-persistent grid was cut";
	/* balanced unless --small's cap cut it further */
	if (p->occupancy == GEMM_OCCUPANCY_BALANCED && !p->clusters_max &&
	    !grid_balanced(p, res->launch.grid[0] / p->cluster[0]))
		return "balanced occupancy launched a partial wave";
	return launch_problem(p, &res->launch);
}

static void tally(const struct kernel_info *k, enum outcome o)
{
	t.cases[k->schedule]++;
	if (o == CASE_PASS)
		t.passed[k->schedule]++;
	else if (o == CASE_FAIL)
		t.failed[k->schedule]++;
	else
		t.skipped[k->schedule]++;
}

static enum outcome run_case(const struct tcase *c)
{
	const struct shape s = fit_shape(c);
	const unsigned int stages = stages_of(c->k, c->stages, c->epilogue);
	char what[256], json[1024], why[512] = "";
	const char *problem = NULL;
	struct gemm_result res;
	struct gemm_spec spec;
	struct gemm_plan plan;
	int e;

	describe(c, &s, stages, what, sizeof(what));
	if (!stages) {
		note("%s %s: skipped, no stage count fits", c->k->name, what);
		return CASE_SKIP;
	}
	if (memcmp(&s, &c->shape, sizeof(s)) != 0 && !t.moved++)
		snprintf(t.moved_example, sizeof(t.moved_example),
			 "%s: %llux%llux%llu ran as %llux%llux%llu", c->k->name,
			 (unsigned long long)c->shape.m,
			 (unsigned long long)c->shape.n,
			 (unsigned long long)c->shape.k,
			 (unsigned long long)s.m, (unsigned long long)s.n,
			 (unsigned long long)s.k);
	e = job_json(c, &s, stages, json, sizeof(json));
	if (!e)
		e = job_plan(c->k, json, &spec, &plan, why, sizeof(why));
	if (!e && c->general)
		e = job_general_entry(&plan, why, sizeof(why));
	if (!e) {
		memset(&res, 0, sizeof(res));
		e = run_job(&spec, &plan, &res, why, sizeof(why));
		free(res.timing.raw_us);
	}
	if (!e)
		problem = result_problem(&spec, &plan, &res);
	if (!e && !problem)
		return CASE_PASS;
	printf("FAIL %s %s: %s\n", c->k->name, what, problem ? problem : why);
	if (!e)
		print_verdict(&res.verify);
	printf("     job: %s\n", json);
	check_failures++;
	return CASE_FAIL;
}

/* ---- the matrix ---------------------------------------------------------- */

struct offer {
	unsigned int clusters[ARRAY_SIZE(clusters)][2];
	unsigned int n_clusters;
	enum gemm_epilogue epilogues[_GEMM_EPILOGUE_MAX];
	unsigned int n_epilogues;
	enum gemm_dtype outs[_GEMM_DTYPE_MAX];
	unsigned int n_outs;
};

static void offer_get(const struct kernel_info *k, struct offer *o)
{
	o->n_clusters = kernel_clusters(k, o->clusters);
	o->n_epilogues = kernel_epilogues(k, o->epilogues);
	o->n_outs = kernel_outs(k, o->outs);
}

/*
 * A case of k on rows x cols tiles, K 256, its fewest stages, a 1x1
 * cluster, direct stores, randint inputs, hot timing.
 */
static void plain_case(struct tcase *c, const struct kernel_info *k,
		       uint64_t rows, uint64_t cols)
{
	memset(c, 0, sizeof(*c));
	c->k = k;
	c->shape.m = rows * k->tile.m;
	c->shape.n = cols * k->tile.n;
	c->shape.k = 256;
	c->stages = STAGES_MIN;
	c->cx = c->cy = 1;
	c->epilogue = GEMM_EPILOGUE_DIRECT;
	c->out = k->dtype;
	c->order = orders[0];
	c->init = GEMM_INIT_RANDINT;
	c->mode = GEMM_TIMING_HOT;
}

static enum outcome kernel_case(struct tcase *c)
{
	enum outcome o = run_case(c);

	tally(c->k, o);
	return o;
}

/*
 * Six randint cases (one a cluster shape, where the kernel takes more
 * than six) that between them take each value of each dimension at
 * least once, the indices staggered so that values do not always come
 * in the same pairs; then one normal case (the largest cluster, the last
 * epilogue, fp32 out, scaled, ragged) and one uniform case.
 */
static void kernel_default(const struct kernel_info *k, const struct offer *o)
{
	const unsigned int n = MAX(6u, o->n_clusters);
	struct tcase c;

	for (unsigned int i = 0; i < n; i++) {
		memset(&c, 0, sizeof(c));
		c.k = k;
		c.shape = t.sz->shapes[i % N_SHAPES];
		c.stages = (enum stage_class)(i % _STAGES_CLASSES);
		c.cx = o->clusters[i % o->n_clusters][0];
		c.cy = o->clusters[i % o->n_clusters][1];
		c.epilogue = o->epilogues[i % o->n_epilogues];
		c.out = o->outs[(i + i / 3) % o->n_outs];
		c.order = orders[(i + i / 2) % ARRAY_SIZE(orders)];
		c.scaled = (i / 2) % 2;
		c.init = GEMM_INIT_RANDINT;
		/* The cold path (L2 flush per sample) once per kernel. */
		c.mode = i == 0 ? GEMM_TIMING_COLD : GEMM_TIMING_HOT;
		kernel_case(&c);
	}

	memset(&c, 0, sizeof(c));
	c.k = k;
	c.shape = t.sz->shapes[1];
	c.stages = STAGES_MAX;
	c.cx = o->clusters[o->n_clusters - 1][0];
	c.cy = o->clusters[o->n_clusters - 1][1];
	c.epilogue = o->epilogues[o->n_epilogues - 1];
	c.out = o->outs[MIN(1u, o->n_outs - 1)];
	c.order = orders[1];
	c.scaled = true;
	c.init = GEMM_INIT_NORMAL;
	c.mode = GEMM_TIMING_HOT;
	kernel_case(&c);

	c.shape = t.sz->shapes[0];
	c.stages = STAGES_MID;
	c.cx = c.cy = 1;
	c.epilogue = o->epilogues[0];
	c.out = o->outs[0];
	c.order = orders[0];
	c.scaled = false;
	c.init = GEMM_INIT_UNIFORM;
	kernel_case(&c);
}

/*
 * The shapes above give no CTA of a persistent kernel a second tile on
 * an H100 or H200, so three randint cases walk many: 16-bit D without C
 * on the tma epilogue (stored while the next tile's first k-tile runs)
 * with the deepest ring and the first cluster of two CTAs, and fp32 D
 * with C (stored at once) with the shallowest ring on one CTA, with the
 * default (balanced) occupancy and then with every cluster that fits.
 */
static void kernel_many_tiles(const struct kernel_info *k,
			      const struct offer *o)
{
	struct tcase c;

	memset(&c, 0, sizeof(c));
	c.k = k;
	c.shape = t.sz->many_tiles;
	c.stages = STAGES_MAX;
	c.cx = o->clusters[MIN(1u, o->n_clusters - 1)][0];
	c.cy = o->clusters[MIN(1u, o->n_clusters - 1)][1];
	c.epilogue = o->epilogues[o->n_epilogues - 1]; /* tma if offered */
	c.out = o->outs[0];
	c.order = orders[1];
	c.init = GEMM_INIT_RANDINT;
	c.mode = GEMM_TIMING_HOT;
	kernel_case(&c);

	c.stages = STAGES_MIN;
	c.cx = c.cy = 1;
	c.out = o->outs[MIN(1u, o->n_outs - 1)];
	c.order = orders[2];
	c.scaled = true;
	kernel_case(&c);

	/* every cluster that fits, the last wave partial */
	c.full = true;
	kernel_case(&c);
}

/*
 * Programmatic dependent launch: each timed launch may start while the
 * one before it ends, and must wait for it before touching memory.  Two
 * randint cases on many tiles, timed hot so that the launches run back
 * to back; for a kernel that is not persistent, several waves of CTAs.
 * The first on one CTA, which the worker launches as a plain grid; the
 * second on the largest cluster, launched as clusters with both
 * attributes, whose CTAs meet at a cluster barrier before they wait.
 */
static void kernel_pdl(const struct kernel_info *k, const struct offer *o)
{
	struct tcase c;

	memset(&c, 0, sizeof(c));
	c.k = k;
	c.shape = t.sz->many_tiles;
	c.stages = STAGES_MID;
	c.cx = c.cy = 1;
	c.epilogue = o->epilogues[o->n_epilogues - 1];
	c.out = o->outs[0];
	c.order = orders[0];
	c.init = GEMM_INIT_RANDINT;
	c.mode = GEMM_TIMING_HOT;
	c.pdl = true;
	kernel_case(&c);

	if (o->n_clusters < 2)
		return;
	c.stages = STAGES_MAX;
	c.cx = o->clusters[o->n_clusters - 1][0];
	c.cy = o->clusters[o->n_clusters - 1][1];
	c.epilogue = o->epilogues[0];
	c.out = o->outs[MIN(1u, o->n_outs - 1)];
	c.order = orders[1];
	c.scaled = true;
	kernel_case(&c);
}

/*
 * The SM90 warp-specialized kernels launch the common epilogue, TMA
 * stores of D in the input type without C, from an entry built for it
 * alone (kernels/gemm-abi.h); their plain entry still takes it.  Two
 * randint cases run it there: ragged on one CTA, and on many tiles
 * (stored while the next tile runs) with a cluster of two.
 */
static void kernel_general_entry(const struct kernel_info *k,
				 const struct offer *o)
{
	struct tcase c;

	if (!kernel_has_packed_entry(k) ||
	    !(k->epilogues & KERNEL_BIT(GEMM_EPILOGUE_TMA)))
		return;
	memset(&c, 0, sizeof(c));
	c.k = k;
	c.shape = t.sz->shapes[1];
	c.stages = STAGES_MAX;
	c.cx = c.cy = 1;
	c.epilogue = GEMM_EPILOGUE_TMA;
	c.out = k->dtype;
	c.order = orders[0];
	c.init = GEMM_INIT_RANDINT;
	c.mode = GEMM_TIMING_HOT;
	c.general = true;
	kernel_case(&c);

	c.shape = t.sz->many_tiles;
	c.stages = STAGES_MID;
	c.cx = o->clusters[MIN(1u, o->n_clusters - 1)][0];
	c.cy = o->clusters[MIN(1u, o->n_clusters - 1)][1];
	c.order = orders[1];
	kernel_case(&c);
}

/*
 * Stream-K (cooperative): on many tiles over every cluster shape, the
 * epilogues and output types taken in turn (each type with each
 * epilogue, with and without C); on the square, ragged and short-K
 * shapes; on sk_shapes; one case within tolerance; and one with PDL,
 * whose back-to-back launches must each leave the workspace's flags as
 * they found them.
 */
static void kernel_stream_k(const struct kernel_info *k, const struct offer *o)
{
	const unsigned int first_sk = o->n_clusters + N_SHAPES - 1;
	const unsigned int n = first_sk + N_SK_SHAPES;
	struct tcase c;

	for (unsigned int i = 0; i < n; i++) {
		memset(&c, 0, sizeof(c));
		c.k = k;
		if (i < o->n_clusters)
			c.shape = t.sz->many_tiles;
		else if (i < first_sk)
			c.shape = t.sz->shapes[i - o->n_clusters];
		else
			c.shape = t.sz->sk_shapes[i - first_sk];
		c.stages = (enum stage_class)(i % _STAGES_CLASSES);
		c.cx = o->clusters[i % o->n_clusters][0];
		c.cy = o->clusters[i % o->n_clusters][1];
		c.epilogue = o->epilogues[i % o->n_epilogues];
		c.out = o->outs[(i + i / 4) % o->n_outs];
		c.order = orders[i % ARRAY_SIZE(orders)];
		c.scaled = (i / 2) % 2;
		c.init = GEMM_INIT_RANDINT;
		c.mode = GEMM_TIMING_HOT;
		c.stream_k = true;
		kernel_case(&c);
	}

	c.shape = t.sz->shapes[1];
	c.stages = STAGES_MAX;
	c.cx = c.cy = 1;
	c.epilogue = o->epilogues[o->n_epilogues - 1];
	c.out = o->outs[MIN(1u, o->n_outs - 1)];
	c.scaled = true;
	c.init = GEMM_INIT_NORMAL;
	kernel_case(&c);

	c.shape = t.sz->many_tiles;
	c.stages = STAGES_MID;
	c.out = o->outs[0];
	c.scaled = false;
	c.init = GEMM_INIT_RANDINT;
	c.pdl = k->pdl;
	kernel_case(&c);
}

/*
 * Persistent kernels: a CTA's walk over many tiles, where the ring wraps
 * inside tiles and across them and each tile's end (the consumers' lag,
 * the epilogue beside the next tile's first k-tile) meets the next
 * tile's start.  K of 1, 3, 5 and 17 k-tiles (the last k-tile of 3 and
 * of 17 partial): a CTA's successive tiles start on different slots of
 * the ring wherever its length does not divide the count (a ring of 2
 * or 4 always).  With --full every stage class and cluster shape at each
 * depth, else one case a depth, the stage class and the cluster shape
 * taken in turn; epilogue, output type, work order and C in turn too:
 * with --full each output type with each epilogue and stage class,
 * with and without C, at each depth; else each epilogue into the input
 * type and into fp32, the tma one once without C (16-bit D stored
 * beside the next tile).
 */
static const uint64_t walk_k[] = { 64, 136, 320, 1032 };

static void kernel_walk(const struct kernel_info *k, const struct offer *o,
			bool full)
{
	const unsigned int per_k = full ? _STAGES_CLASSES * o->n_clusters : 1;
	const unsigned int n = ARRAY_SIZE(walk_k) * per_k;
	struct tcase c;

	for (unsigned int i = 0; i < n; i++) {
		const unsigned int cl = full ? i / _STAGES_CLASSES : i + 1;

		memset(&c, 0, sizeof(c));
		c.k = k;
		c.shape = t.sz->many_tiles;
		c.shape.k = walk_k[i / per_k];
		c.stages = (enum stage_class)(i % _STAGES_CLASSES);
		c.cx = o->clusters[cl % o->n_clusters][0];
		c.cy = o->clusters[cl % o->n_clusters][1];
		c.epilogue = o->epilogues[i % o->n_epilogues];
		c.out = o->outs[(i / 2 + i / 8) % o->n_outs];
		c.order = orders[(i + i / 4) % ARRAY_SIZE(orders)];
		c.scaled = (i / 3 + i / 18) % 2;
		c.init = GEMM_INIT_RANDINT;
		c.mode = GEMM_TIMING_HOT;
		kernel_case(&c);
	}
}

/*
 * GPC placement (the kernels built with it): each cluster claims its
 * place in the work order from its GPC group's counter, hands it to its
 * peers through distributed shared memory, and the last cluster sets the
 * counters back; the verified launch follows two others.  Two randint
 * cases on many tiles: the largest cluster (eight CTAs, the place handed
 * to seven peers) with the tma epilogue, and a cluster of four CTAs with
 * direct stores of fp32 D with C, 3 k-tiles, every cluster that fits.
 * They take the bands of width 2 and 4 (along_n and along_m), which
 * orders[] leaves out: the matrix runs 1 and 8.
 */
static void kernel_placement(const struct kernel_info *k, const struct offer *o)
{
	struct tcase c;

	if (!k->placement)
		return;
	plain_case(&c, k, 1, 1);
	c.shape = t.sz->many_tiles;
	c.stages = STAGES_MID;
	c.cx = o->clusters[o->n_clusters - 1][0];
	c.cy = o->clusters[o->n_clusters - 1][1];
	c.epilogue = o->epilogues[o->n_epilogues - 1];
	c.order = (struct order){ GEMM_RASTER_ALONG_N, 2 };
	c.gpc = true;
	kernel_case(&c);

	c.shape.k = walk_k[1];
	c.stages = STAGES_MIN;
	c.cx = o->clusters[MIN(4u, o->n_clusters - 1)][0];
	c.cy = o->clusters[MIN(4u, o->n_clusters - 1)][1];
	c.epilogue = o->epilogues[0];
	c.out = o->outs[MIN(1u, o->n_outs - 1)];
	c.order = (struct order){ GEMM_RASTER_ALONG_M, 4 };
	c.scaled = true;
	c.full = true;
	kernel_case(&c);
}

/*
 * A job the planner must refuse on field, before any launch: planned, or
 * refused for another reason, it fails.  Never a case: nothing runs.
 */
static void refusal_case(const struct tcase *c, unsigned int stages,
			 const char *field, const char *what)
{
	char json[1024], why[512] = "", want[64];
	struct gemm_spec spec;
	struct gemm_plan plan;
	int e;

	snprintf(want, sizeof(want), "plan refused (%s)", field);
	e = job_json(c, &c->shape, stages, json, sizeof(json));
	if (!e)
		e = job_plan(c->k, json, &spec, &plan, why, sizeof(why));
	if (e && strncmp(why, want, strlen(want)) == 0)
		return;
	printf("FAIL %s: %s, not refused on %s: %s\n", c->k->name, what, field,
	       e ? why : "planned");
	printf("     job: %s\n", json);
	check_failures++;
}

/*
 * What the matrix leaves out must be refused at validation, not run: a
 * stage more than stages_of() found to fit with each epilogue, the
 * smallest cluster over the kernel's limit, and rows of A that are not
 * whole 16-byte units (m, n and k odd).
 */
static void kernel_refusals(const struct kernel_info *k, const struct offer *o)
{
	const unsigned int fewest = stages_of(k, STAGES_MIN, o->epilogues[0]);
	struct tcase c;

	memset(&c, 0, sizeof(c));
	c.k = k;
	c.shape = (struct shape){ 512, 512, 512 };
	c.cx = c.cy = 1;
	c.out = k->dtype;
	c.order = orders[0];
	c.init = GEMM_INIT_RANDINT;
	c.mode = GEMM_TIMING_HOT;
	for (unsigned int i = 0; i < o->n_epilogues; i++) {
		const unsigned int most =
			stages_of(k, STAGES_MAX, o->epilogues[i]);

		c.epilogue = o->epilogues[i];
		if (most)
			refusal_case(&c, most + 1, "kernel.stages",
				     "one stage more than fit");
	}
	if (!fewest)
		return;
	c.epilogue = o->epilogues[0];
	for (size_t i = 0; i < ARRAY_SIZE(clusters); i++) {
		if (clusters[i][0] * clusters[i][1] <= MAX(k->cluster_max, 1u))
			continue;
		c.cx = clusters[i][0];
		c.cy = clusters[i][1];
		refusal_case(&c, fewest, "kernel.cluster",
			     "a cluster over its limit");
		break;
	}
	c.cx = c.cy = 1;
	c.shape = (struct shape){ 1001, 1501, 1033 };
	refusal_case(&c, fewest, a_kmajor(k->layout) ? "k" : "m",
		     "rows of A not 16-byte aligned");
}

/* Every combination, randint inputs: case i read as a mixed-radix number. */
static void kernel_full(const struct kernel_info *k, const struct offer *o)
{
	enum { SHAPE, STAGES, CLUSTER, EPILOGUE, OUT, ORDER, SCALED, N_DIMS };
	const unsigned int radix[N_DIMS] = {
		[SHAPE] = N_SHAPES,
		[STAGES] = _STAGES_CLASSES,
		[CLUSTER] = o->n_clusters,
		[EPILOGUE] = o->n_epilogues,
		[OUT] = o->n_outs,
		[ORDER] = ARRAY_SIZE(orders),
		[SCALED] = 2,
	};
	unsigned int total = 1, v[N_DIMS];
	struct tcase c;

	for (int d = 0; d < N_DIMS; d++)
		total *= radix[d];
	memset(&c, 0, sizeof(c));
	c.k = k;
	c.init = GEMM_INIT_RANDINT;
	c.mode = GEMM_TIMING_HOT;
	for (unsigned int i = 0; i < total; i++) {
		unsigned int x = i;

		for (int d = N_DIMS - 1; d >= 0; d--) {
			v[d] = x % radix[d];
			x /= radix[d];
		}
		c.shape = t.sz->shapes[v[SHAPE]];
		c.stages = (enum stage_class)v[STAGES];
		c.cx = o->clusters[v[CLUSTER]][0];
		c.cy = o->clusters[v[CLUSTER]][1];
		c.epilogue = o->epilogues[v[EPILOGUE]];
		c.out = o->outs[v[OUT]];
		c.order = orders[v[ORDER]];
		c.scaled = v[SCALED];
		kernel_case(&c);
	}
}

static bool kernel_selected(const struct kernel_info *k)
{
	return !t.filter || strstr(k->name, t.filter);
}

static int gemm_cubin(const struct dirent *de)
{
	const size_t n = strlen(de->d_name);

	return n > 6 && strncmp(de->d_name, "gemmd_", 6) == 0 &&
	       strcmp(de->d_name + n - 6, ".cubin") == 0;
}

/*
 * Every selected gemmd_*.cubin of dir lists the kernel it is named
 * after: catalog_load() skips a cubin it cannot read with a warning on
 * stderr, and lists nothing for one without a note, and the matrix would
 * pass without that kernel.
 */
static void check_listed(const char *dir)
{
	struct dirent **de = NULL;
	int n = scandir(dir, &de, gemm_cubin, alphasort);

	if (n < 0) {
		printf("FAIL %s: %s\n", dir, strerror(errno));
		check_failures++;
		return;
	}
	for (int i = 0; i < n; i++) {
		char name[256];

		snprintf(name, sizeof(name), "%.*s",
			 (int)(strlen(de[i]->d_name) - 6), de[i]->d_name);
		if ((!t.filter || strstr(name, t.filter)) &&
		    !catalog_find(t.cat, name)) {
			printf("FAIL %s/%s: kernel %s is not in the catalog, so "
			       "it never runs\n",
			       dir, de[i]->d_name, name);
			check_failures++;
		}
		free(de[i]);
	}
	free(de);
}

static void run_matrix(bool full)
{
	for (size_t i = 0; i < catalog_size(t.cat); i++) {
		const struct kernel_info *k = catalog_get(t.cat, i);
		int failed = check_failures;
		struct offer o;

		if (!kernel_selected(k))
			continue;
		offer_get(k, &o);
		if (!o.n_clusters || !o.n_epilogues || !o.n_outs) {
			printf("FAIL %s: the catalog note offers no cluster, "
			       "epilogue or output type\n",
			       k->name);
			check_failures++;
			continue;
		}
		if (full)
			kernel_full(k, &o);
		else
			kernel_default(k, &o);
		if (k->persistent) {
			kernel_many_tiles(k, &o);
			kernel_walk(k, &o, full);
		}
		if (k->pdl)
			kernel_pdl(k, &o);
		kernel_placement(k, &o);
		kernel_general_entry(k, &o);
		if (k->schedule == GEMM_SCHEDULE_COOPERATIVE)
			kernel_stream_k(k, &o);
		kernel_refusals(k, &o);
		printf("%-4s %s\n", check_failures == failed ? "ok" : "FAIL",
		       k->name);
	}
}

/*
 * The mismatch sample of a verdict: GEMM_MISMATCH_SAMPLE of them (there
 * are more), in strictly increasing index order, starting at the first
 * mismatch, (row, col), and all still poisoned (NaN).
 */
static bool sample_ok(const struct gemm_verdict *v, uint64_t n, int64_t row,
		      int64_t col)
{
	if (v->n_sample != GEMM_MISMATCH_SAMPLE || v->sample[0].row != row ||
	    v->sample[0].col != col || v->first_row != row ||
	    v->first_col != col)
		return false;
	for (unsigned int i = 0; i < v->n_sample; i++) {
		const struct gemm_mismatch *x = &v->sample[i];

		if (!isnan(x->got) ||
		    (i && x->row * (int64_t)n + x->col <=
				  x[-1].row * (int64_t)n + x[-1].col))
			return false;
	}
	return true;
}

/*
 * Whether a CTA of k computes one tile and no more, so that half its
 * grid leaves half of D unwritten.  Not ws: it walks work units as the
 * persistent schedules do (id, id + G, ...), so half the grid still
 * covers D, each CTA taking two tiles.
 */
static bool one_tile_per_cta(const struct kernel_info *k)
{
	return !k->persistent && k->schedule != GEMM_SCHEDULE_WS &&
	       stages_of(k, STAGES_MIN, GEMM_EPILOGUE_DIRECT) &&
	       (k->epilogues & KERNEL_BIT(GEMM_EPILOGUE_DIRECT));
}

/*
 * The kernel for the negative case: a selected one if it can serve,
 * else any, since the case checks the check and not the kernel.
 */
static const struct kernel_info *negative_kernel(void)
{
	const struct kernel_info *any = NULL;

	for (size_t i = 0; i < catalog_size(t.cat); i++) {
		const struct kernel_info *x = catalog_get(t.cat, i);

		if (!one_tile_per_cta(x))
			continue;
		if (kernel_selected(x))
			return x;
		if (!any)
			any = x;
	}
	return any;
}

/*
 * The negative case: a kernel of one tile per CTA launched on half its
 * grid.  With one-CTA clusters and work units in plain column order
 * (along_m, swizzle 1) over 2 x 8 tiles, the first half of the units is
 * the left half of D, so exactly half of D stays poisoned, the first
 * element of it at row 0, column 4 tiles in.
 */
static void negative_case(void)
{
	const struct kernel_info *k = negative_kernel();
	char json[1024], why[512] = "";
	struct gemm_result res;
	struct gemm_spec spec;
	struct gemm_plan plan;
	struct shape s;
	struct tcase c;
	bool ok;
	int e;

	if (!k) {
		note("negative case skipped: no kernel of one tile per CTA "
		     "with the direct epilogue");
		return;
	}
	plain_case(&c, k, 2, 8);
	s = c.shape;
	e = job_json(&c, &s, stages_of(k, STAGES_MIN, c.epilogue), json,
		     sizeof(json));
	if (!e)
		e = job_plan(k, json, &spec, &plan, why, sizeof(why));
	if (!e) {
		plan.grid[0] /= 2;
		memset(&res, 0, sizeof(res));
		e = run_job(&spec, &plan, &res, why, sizeof(why));
	}
	ok = !e && res.verify.checked && !res.verify.passed &&
	     res.verify.unwritten == s.m * s.n / 2 &&
	     res.verify.mismatches == res.verify.unwritten &&
	     sample_ok(&res.verify, s.n, 0, 4 * (int64_t)k->tile.n);
	printf("%-4s %s: grid.x halved, verification must fail\n",
	       ok ? "ok" : "FAIL", k->name);
	if (!ok) {
		if (e)
			printf("     %s\n", why);
		else
			print_verdict(&res.verify);
		printf("     job: %s\n", json);
		check_failures++;
	}
	tally(k, ok ? CASE_PASS : CASE_FAIL);
}

/* The first selected kernel that loads with TMA, or the first that does not. */
static const struct kernel_info *ring_kernel(bool tma)
{
	for (size_t i = 0; i < catalog_size(t.cat); i++) {
		const struct kernel_info *x = catalog_get(t.cat, i);
		bool x_tma = x->schedule != GEMM_SCHEDULE_MULTISTAGE &&
			     x->schedule != GEMM_SCHEDULE_PIPELINED;

		if (x_tma == tma && kernel_selected(x) &&
		    (x->epilogues & KERNEL_BIT(GEMM_EPILOGUE_DIRECT)))
			return x;
	}
	return NULL;
}

/*
 * A plan whose shared memory cannot hold its ring is refused by the
 * worker with the reason, before launch: the kernel would trap and take
 * the context (and the worker) with it.  The next cases run on the same
 * context, so a lost one shows there too.
 */
static void short_ring_case(bool tma)
{
	const struct kernel_info *k = ring_kernel(tma);
	char json[1024], why[512] = "";
	struct gemm_result res;
	struct gemm_spec spec;
	struct gemm_plan plan;
	struct tcase c;
	bool ok;
	int e;

	if (!k)
		return;
	plain_case(&c, k, 1, 1);
	e = job_json(&c, &c.shape, stages_of(k, STAGES_MIN, c.epilogue), json,
		     sizeof(json));
	if (!e)
		e = job_plan(k, json, &spec, &plan, why, sizeof(why));
	if (e) {
		printf("FAIL %s: short ring case not planned: %s\n", k->name,
		       why);
		check_failures++;
		return;
	}
	plan.smem_bytes = GEMMD_SMEM_FIXED;
	memset(&res, 0, sizeof(res));
	e = run_job(&spec, &plan, &res, why, sizeof(why));
	ok = e == -EINVAL && strstr(why, "too small");
	printf("%-4s %s: shared memory short of the ring, refused: %s\n",
	       ok ? "ok" : "FAIL", k->name, e ? why : "it ran");
	if (!ok)
		check_failures++;
}

/* Cases passed so far, every schedule. */
static unsigned int passed_total(void)
{
	unsigned int p = 0;

	for (int i = 0; i < _GEMM_SCHEDULE_MAX; i++)
		p += t.passed[i];
	return p;
}

static void print_summary(void)
{
	unsigned int c = 0, p = 0, f = 0, s = 0;

	printf("\n%-12s %7s %7s %7s %7s\n", "schedule", "cases", "passed",
	       "failed", "skipped");
	for (int i = 0; i < _GEMM_SCHEDULE_MAX; i++) {
		if (!t.cases[i])
			continue;
		printf("%-12s %7u %7u %7u %7u\n",
		       gemm_schedule_to_string((enum gemm_schedule)i),
		       t.cases[i], t.passed[i], t.failed[i], t.skipped[i]);
		c += t.cases[i];
		p += t.passed[i];
		f += t.failed[i];
		s += t.skipped[i];
	}
	printf("%-12s %7u %7u %7u %7u\n", "all", c, p, f, s);
	if (t.moved)
		printf("%u cases ran with m, n or k rounded up to 16-byte rows "
		       "of A, B or D (e.g. %s)\n",
		       t.moved, t.moved_example);
}

/* ---- --bench ------------------------------------------------------------- */

/* Every selected kernel of the dtype at every stage count that fits. */
static int bench(int argc, char **argv)
{
	const char *dtype = argc > 5 ? argv[5] : "all";
	char json[1024], why[512];
	struct tcase c;

	if (argc < 5) {
		fprintf(stderr, "usage: gpu-gemm --bench M N K "
				"[bf16|fp16|all]\n");
		return EXIT_FAILURE;
	}
	memset(&c, 0, sizeof(c));
	c.shape.m = strtoull(argv[2], NULL, 0);
	c.shape.n = strtoull(argv[3], NULL, 0);
	c.shape.k = strtoull(argv[4], NULL, 0);
	c.cx = c.cy = 1;
	c.epilogue = GEMM_EPILOGUE_DIRECT;
	c.order = orders[0];
	c.init = GEMM_INIT_NORMAL;
	c.mode = GEMM_TIMING_COLD;
	printf("%-40s %6s %7s %10s %10s %8s %8s %s\n", "kernel", "stages",
	       "smem", "median_us", "min_us", "TF/s", "TF/s@min", "verify");
	for (size_t i = 0; i < catalog_size(t.cat); i++) {
		const struct kernel_info *k = catalog_get(t.cat, i);
		unsigned int fit;

		if (!kernel_selected(k) ||
		    (strcmp(dtype, "all") != 0 &&
		     strcmp(dtype, gemm_dtype_to_string(k->dtype)) != 0) ||
		    !(k->epilogues & KERNEL_BIT(GEMM_EPILOGUE_DIRECT)))
			continue;
		c.k = k;
		c.out = k->dtype;
		fit = stages_of(k, STAGES_MAX, c.epilogue);
		for (unsigned int st = k->min_stages; fit && st <= fit; st++) {
			struct gemm_spec spec;
			struct gemm_plan plan;
			struct gemm_result res;
			struct shape s = fit_shape(&c);
			int e;

			e = job_json(&c, &s, st, json, sizeof(json));
			if (!e)
				e = job_plan(k, json, &spec, &plan, why,
					     sizeof(why));
			if (!e) {
				spec.warmup = 10;
				spec.iterations = 50;
				memset(&res, 0, sizeof(res));
				e = run_job(&spec, &plan, &res, why,
					    sizeof(why));
			}
			if (e) {
				printf("%-40s %6u %s\n", k->name, st, why);
				check_failures++;
				continue;
			}
			printf("%-40s %6u %7u %10.1f %10.1f %8.1f %8.1f %s\n",
			       k->name, st, plan.smem_bytes,
			       res.timing.median_us, res.timing.min_us,
			       res.tflops,
			       gemm_flops(&spec) / res.timing.min_us / 1e6,
			       res.verify.passed ? "ok" : "FAIL");
			if (!res.verify.passed)
				check_failures++;
		}
	}
	return check_exit();
}

/* ---- main ---------------------------------------------------------------- */

/*
 * Whether the kernel shows an NVIDIA GPU, whatever the probe makes of it
 * (tests/lib.sh's nvidia_gpu_present()).
 */
static bool nvidia_gpu_present(void)
{
	DIR *d = opendir("/proc/driver/nvidia/gpus");
	struct dirent *de;
	bool found = access("/dev/nvidia0", F_OK) == 0;

	while (d && !found && (de = readdir(d)))
		found = de->d_name[0] != '.';
	if (d)
		closedir(d);
	return found;
}

/*
 * As tests/lib.sh's have_gpu(): no driver or no device is a skip only
 * where the machine has no NVIDIA GPU, or CUDA_VISIBLE_DEVICES hides it.
 */
static int no_gpu(const char *why)
{
	if (nvidia_gpu_present() && !getenv("CUDA_VISIBLE_DEVICES")) {
		printf("FAIL: this machine has an NVIDIA GPU, but the probe "
		       "found none: %s\n",
		       why);
		return EXIT_FAILURE;
	}
	printf("SKIP: %s\n", why);
	return EXIT_TEST_SKIP;
}

/*
 * 0 when device 0 is an SM90 GPU, with its limits for the planner; else
 * prints why and returns 77 (or fails, no_gpu()).
 */
static int probe(char *name, size_t len)
{
	char err[512] = "";
	json_t *devs = NULL, *d;
	const char *cc = NULL, *n = NULL;
	json_int_t sms = 0, optin = 0, mem = 0;
	int e;

	e = gpu_probe(&devs, err, sizeof(err));
	if (e == -ENOENT || e == -ENODEV || e == -ENOSYS)
		return no_gpu(err);
	if (e < 0) {
		printf("FAIL: gpu_probe: %s\n", err);
		return EXIT_FAILURE;
	}
	d = json_array_get(devs, 0);
	if (!d) {
		json_decref(devs);
		return no_gpu("no CUDA device");
	}
	/* a probe without these is broken, not a GPU of another kind */
	if (json_unpack(d, "{s:s, s:s, s:I, s:I, s:I}", "compute_capability",
			&cc, "name", &n, "sm_count", &sms,
			"max_smem_per_block_optin", &optin, "memory_bytes",
			&mem) < 0) {
		printf("FAIL: gpu_probe: device 0 lacks a field\n");
		json_decref(devs);
		return EXIT_FAILURE;
	}
	if (strncmp(cc, "9.", 2) != 0) {
		printf("SKIP: device 0 is compute capability %s, not 9.x\n",
		       cc);
		json_decref(devs);
		return EXIT_TEST_SKIP;
	}
	snprintf(name, len, "%s", n);
	t.dev.sm_count = (unsigned int)sms;
	t.dev.smem_optin = (unsigned int)optin;
	t.dev.memory_bytes = (uint64_t)mem;
	json_decref(devs);
	return 0;
}

/*
 * Hold the machine's GPU until exit, as tests/lib.sh's gpu_exclusive()
 * does (the same lock file): make check runs tests in parallel, and the
 * script tests' timings mean nothing while this one loads the GPU.  Best
 * effort: without the lock the test still runs.
 */
static void gpu_exclusive(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/gemmd-gpu-tests.lock",
		 dir && *dir ? dir : "/tmp");
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (fd >= 0 && flock(fd, LOCK_EX) < 0)
		printf("note could not lock %s: %s\n", path, strerror(errno));
}

static int usage(void)
{
	fprintf(stderr, "usage: gpu-gemm [--full] [--small] [--kernel TEXT]\n"
			"       gpu-gemm [--kernel TEXT] --bench M N K "
			"[bf16|fp16|all]\n");
	return EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("GEMMD_KERNEL_DIR");
	char err[512] = "", name[256] = "";
	bool full = false;
	int bench_at = 0, e;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc && !bench_at; i++) {
		if (strcmp(argv[i], "--full") == 0)
			full = true;
		else if (strcmp(argv[i], "--small") == 0)
			t.sz = &small_sizes;
		else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc)
			t.filter = argv[++i];
		else if (strcmp(argv[i], "--bench") == 0)
			bench_at = i;
		else
			return usage();
	}
	e = probe(name, sizeof(name));
	if (e)
		return e;
	if (!dir)
		dir = "kernels";
	gpu_exclusive();
	e = catalog_load(dir, &t.cat);
	if (e < 0 || !catalog_size(t.cat)) {
		printf("FAIL: no kernels in %s (%s)\n", dir,
		       e < 0 ? strerror(-e) : "empty catalog");
		catalog_free(t.cat);
		return EXIT_FAILURE;
	}
	e = gpu_open(0, dir, &t.gpu, err, sizeof(err));
	if (e < 0) {
		printf("FAIL: gpu_open(%s): %s\n", dir, err);
		catalog_free(t.cat);
		return EXIT_FAILURE;
	}
	printf("device 0: %s, %zu kernels from %s\n", name, catalog_size(t.cat),
	       dir);

	if (bench_at) {
		e = bench(argc - bench_at + 1, argv + bench_at - 1);
	} else {
		unsigned int ran;

		check_listed(dir);
		run_matrix(full);
		/* A filter that matches nothing, or all skipped, proves nothing. */
		ran = passed_total();
		short_ring_case(true);
		short_ring_case(false);
		negative_case();
		print_summary();
		if (!ran) {
			printf("FAIL: no case ran and passed%s%s\n",
			       t.filter ? " for --kernel " : "",
			       t.filter ? t.filter : "");
			check_failures++;
		}
		e = check_exit();
	}
	t.gpu = gpu_close(t.gpu);
	t.cat = catalog_free(t.cat);
	return e;
}
