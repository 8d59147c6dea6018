// SPDX-License-Identifier: MIT
/*
 * verify.c - verification: the first launch of the kernel under test,
 * on a poisoned D, compared on the GPU with an fp32 reference (the
 * reference kernel of reference.cubin, or cuBLASLt) within the job's
 * tolerance; the first mismatches are read back and the first one traced
 * to its k-tile and stage (diagnose.c).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cublaslt.h"
#include "diagnose.h"
#include "gemm-abi.h"
#include "inputs.h"
#include "run.h"
#include "spec.h"
#include "util.h"
#include "verify.h"

/*
 * The naive reference kernel runs at a small part of our kernels' rate:
 * plan_deadline_sec() budgets it as this many launches of ours, and so
 * does the wait for it here, lest a slow reference on a large problem
 * pass for a hung kernel (run_sync() allows 10 TFLOP/s a launch).
 */
#define VERIFY_REFERENCE_LAUNCHES 50.0

static double bf16_to_double(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static double fp16_to_double(uint16_t h)
{
	const int exp = (h >> 10) & 0x1f;
	const int man = h & 0x3ff;
	const double sign = (h & 0x8000) ? -1.0 : 1.0;

	if (exp == 0x1f)
		return man ? NAN : sign * INFINITY;
	if (exp == 0)
		return sign * ldexp(man, -24);
	return sign * ldexp(man + 1024, exp - 25);
}

/* An element of D as read back, in its output type. */
static double out_to_double(enum gemm_dtype t, const void *p)
{
	uint16_t h;
	float f;

	switch (t) {
	case GEMM_DTYPE_BF16:
		memcpy(&h, p, sizeof(h));
		return bf16_to_double(h);
	case GEMM_DTYPE_FP16:
		memcpy(&h, p, sizeof(h));
		return fp16_to_double(h);
	case GEMM_DTYPE_FP32:
	case _GEMM_DTYPE_MAX:
	default:
		memcpy(&f, p, sizeof(f));
		return f;
	}
}

/*
 * The operands' element strides in the job's layout (see struct
 * gemm_ref_args): A[m][k] = a[m * a_sm + k * a_sk], B[k][n] = b[k * b_sk
 * + n * b_sn].
 */
static void run_strides(const struct run *r, struct gemm_ref_args *ref)
{
	const struct gemm_spec *s = r->spec;
	const uint32_t m = (uint32_t)s->m, n = (uint32_t)s->n;
	const uint32_t k = (uint32_t)s->k;

	ref->a_sm = layout_a_kmajor(s->layout) ? k : 1;
	ref->a_sk = layout_a_kmajor(s->layout) ? 1 : m;
	ref->b_sk = layout_b_kmajor(s->layout) ? 1 : n;
	ref->b_sn = layout_b_kmajor(s->layout) ? k : 1;
}

/*
 * The k inputs of one output element on one side, as floats: elements
 * first, first + stride, ... of an input matrix (a row of A or a column
 * of B; stride 1 when the operand is K-major).
 */
static int read_k_vector(struct run *r, CUdeviceptr base, uint64_t first,
			 uint64_t stride, float *out)
{
	const uint64_t k = r->spec->k;
	uint16_t *h = malloc(k * sizeof(*h));
	CUDA_MEMCPY2D c;
	int e;

	if (!h)
		return -ENOMEM;
	if (stride == 1) {
		e = CU(r, cuMemcpyDtoH, h, base + first * sizeof(*h),
		       k * sizeof(*h));
	} else {
		memset(&c, 0, sizeof(c));
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = base + first * sizeof(*h);
		c.srcPitch = stride * sizeof(*h);
		c.dstMemoryType = CU_MEMORYTYPE_HOST;
		c.dstHost = h;
		c.dstPitch = sizeof(*h);
		c.WidthInBytes = sizeof(*h);
		c.Height = k;
		e = CU(r, cuMemcpy2D, &c);
	}
	for (uint64_t i = 0; !e && i < k; i++)
		out[i] = (float)(r->spec->dtype == GEMM_DTYPE_BF16 ?
					 bf16_to_double(h[i]) :
					 fp16_to_double(h[i]));
	free(h);
	return e;
}

/* Which consumer warpgroup wrote row (kdiag_warpgroup()). */
static unsigned int run_warpgroup(const struct run *r, uint64_t row)
{
	return kdiag_warpgroup(r->spec->schedule, &r->plan->tile, row);
}

/* Whether sample mismatch m lies in the first one's tile and warpgroup. */
static bool same_tile(const struct run *r, const struct gemm_mismatch *m,
		      const struct gemm_mismatch *first)
{
	const struct gemm_tile *t = &r->plan->tile;

	return m->row / t->m == first->row / t->m &&
	       m->col / t->n == first->col / t->n &&
	       run_warpgroup(r, (uint64_t)m->row) ==
		       run_warpgroup(r, (uint64_t)first->row);
}

/*
 * A mismatch for diagnose_elements(): its row of A and column of B back on
 * the host, the error scaled back by alpha, and the tolerance of a match
 * in the same units as the k-tiles' sums: randint sums are exact integers
 * (half the gap between two), but D holds alpha times them rounded to its
 * type; otherwise the job's tolerance, scaled back by alpha.
 */
static int diag_elem(struct run *r, const struct gemm_ref_args *st,
		     const struct gemm_verdict *v,
		     const struct gemm_mismatch *m, float *buf,
		     struct kdiag_elem *ret)
{
	const struct gemm_spec *s = r->spec;
	const double alpha = fabs(s->alpha);
	float *a = buf, *b = buf + s->k;
	double tol;
	int e;

	e = read_k_vector(r, r->a, (uint64_t)m->row * st->a_sm, st->a_sk, a);
	if (!e)
		e = read_k_vector(r, r->b, (uint64_t)m->col * st->b_sn,
				  st->b_sk, b);
	if (e)
		return e;
	tol = s->init == GEMM_INIT_RANDINT ?
		      0.5 + kdiag_half_ulp(s->out, m->got) / alpha :
		      (v->atol + v->rtol * fabs(m->want)) / alpha;
	*ret = (struct kdiag_elem){ .row = (unsigned int)m->row,
				    .col = (unsigned int)m->col,
				    .a_row = a,
				    .b_col = b,
				    .err = (m->got - m->want) / s->alpha,
				    .tol = tol };
	return 0;
}

/*
 * Trace the first mismatch to the k-tile and stage that made it, with the
 * other sampled mismatches of its tile and warpgroup to tell apart the
 * k-tiles that one alone leaves open.  The tile is the plan's; the stage
 * is k_tile % stages only where the ring starts afresh with each tile, so
 * a persistent kernel reports none.  Best effort: a failure here leaves
 * the verdict as it is.
 */
static void run_diagnose(struct run *r, struct gemm_verdict *v)
{
	const uint64_t k = r->spec->k;
	struct kdiag_elem el[GEMM_MISMATCH_SAMPLE];
	struct gemm_ref_args st = { 0 };
	unsigned int n = 0;
	struct kdiag d;
	float *buf;

	if (!v->n_sample || fpclassify(r->spec->alpha) == FP_ZERO)
		return;
	buf = malloc(GEMM_MISMATCH_SAMPLE * 2 * k * sizeof(*buf));
	if (!buf)
		return;
	run_strides(r, &st);
	for (unsigned int i = 0; i < v->n_sample; i++) {
		const struct gemm_mismatch *m = &v->sample[i];

		if (!isfinite(m->got - m->want) ||
		    !same_tile(r, m, &v->sample[0]))
			continue;
		if (diag_elem(r, &st, v, m, buf + n * 2 * k, &el[n]))
			break;
		n++;
	}
	if (!n || el[0].row != v->sample[0].row ||
	    el[0].col != v->sample[0].col)
		goto out;
	/* no memory to trace it: no "where", rather than "unexplained" */
	if (diagnose_elements(&r->plan->tile, r->plan->stages, el, n,
			      (unsigned int)k, &d))
		goto out;
	v->diagnosed = true;
	v->where.tile_m = d.tile_m;
	v->where.tile_n = d.tile_n;
	v->where.warpgroup = run_warpgroup(r, (uint64_t)v->first_row);
	v->where.kind = d.kind;
	v->where.k_tile = d.k_tile;
	v->where.stage = r->plan->persistent ? -1 : d.stage;
	v->where.other_k_tile = d.other_k_tile;
	v->where.other_stage = r->plan->persistent ? -1 : d.other_stage;
	v->where.used = d.used;
out:
	free(buf);
}

/* Value and reference at a mismatch, read back from the GPU. */
static int run_read_mismatch(struct run *r, uint64_t index,
			     struct gemm_mismatch *x)
{
	unsigned char got[4];
	float want;
	int e;

	e = CU(r, cuMemcpyDtoH, got, r->d + index * r->out_size, r->out_size);
	if (!e)
		e = CU(r, cuMemcpyDtoH, &want, r->ref + index * sizeof(want),
		       sizeof(want));
	if (e)
		return e;
	x->row = (int64_t)(index / r->spec->n);
	x->col = (int64_t)(index % r->spec->n);
	x->got = out_to_double(r->spec->out, got);
	x->want = want;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/*
 * The first mismatches in index order, up to GEMM_MISMATCH_SAMPLE: the
 * indices the compare kernel recorded, and first_index, which is exact
 * (atomicMin) and so first even when the slots ran out before the
 * kernel met it; sorted, repeats dropped.  With at most
 * GEMMD_CMP_SAMPLE_SLOTS mismatches every one was recorded, and these
 * are exactly the first; with more, the lowest of those recorded.
 */
static int run_mismatches(struct run *r, const struct gemm_cmp_stats *st,
			  struct gemm_verdict *v)
{
	const uint64_t count = r->spec->m * r->spec->n;
	const size_t recorded =
		(size_t)MIN(st->sample_count, (uint64_t)GEMMD_CMP_SAMPLE_SLOTS);
	uint64_t idx[GEMMD_CMP_SAMPLE_SLOTS + 1];
	size_t n = 0;
	int e = 0;

	idx[n++] = st->first_index;
	for (size_t i = 0; i < recorded; i++)
		idx[n++] = st->sample[i];
	qsort(idx, n, sizeof(*idx), cmp_u64);
	for (size_t i = 0; i < n && v->n_sample < GEMM_MISMATCH_SAMPLE; i++) {
		if ((i && idx[i] == idx[i - 1]) || idx[i] >= count)
			continue;
		e = run_read_mismatch(r, idx[i], &v->sample[v->n_sample]);
		if (e)
			return e;
		v->n_sample++;
	}
	if (!v->n_sample)
		return 0;
	v->first_row = v->sample[0].row;
	v->first_col = v->sample[0].col;
	v->first_got = v->sample[0].got;
	v->first_want = v->sample[0].want;
	return 0;
}

static void verdict_fill(struct run *r, const struct gemm_cmp_stats *st,
			 struct gemm_verdict *v)
{
	float max_abs, max_rel;

	memcpy(&max_abs, &st->max_abs_bits, sizeof(max_abs));
	memcpy(&max_rel, &st->max_rel_bits, sizeof(max_rel));
	v->checked = true;
	v->mismatches = st->mismatches;
	v->nan_count = st->nan_count;
	v->inf_count = st->inf_count;
	v->unwritten = st->unwritten;
	v->overflow = st->overflow;
	v->max_abs_err = max_abs;
	v->max_rel_err = max_rel;
	if (st->sum_sq_ref > 0)
		v->rel_fro_err = sqrt(st->sum_sq_err / st->sum_sq_ref);
	else
		v->rel_fro_err = st->sum_sq_err > 0 ? INFINITY : 0;
	v->passed = st->mismatches == 0;
	(void)r;
}

/*
 * The exponent of the lowest set bit of x, finite and not 0: x is an odd
 * integer times 2^low_bit(x) (3: 0, 4: 2, 0.5 and 1.5: -1).
 */
static int low_bit(double x)
{
	int e;
	/* |x| = m * 2^e, m in [0.5, 1): m * 2^53 is a whole number */
	const double m = frexp(fabs(x), &e);

	return e - 53 + __builtin_ctzll((unsigned long long)ldexp(m, 53));
}

/*
 * Exact comparison needs every value the GEMM makes to be exact in
 * fp32, whatever the order of the sums and whether the epilogue fuses
 * alpha * acc + beta * c.  randint inputs (|x| <= 2) make the products
 * and sums integers of at most 4K <= 2^22.  alpha * acc, beta * c and
 * their sum are then whole multiples of u, the lowest set bit of alpha
 * or beta (1 for whole numbers; 0.5 for 0.5 or 1.5; 4 for 4), no larger
 * than |alpha| * 4K + |beta| * 2: exact in fp32 where that is below
 * 2^24 * u.  Whole alpha and beta are not the only such: with alpha
 * 0.5, or 4 at K = 2^20, every value is exact as well, and D is compared
 * bit for bit rather than within a tolerance.  u of at least 2^-126
 * keeps every value but 0 a normal float, which a kernel that flushes
 * subnormals leaves as it is.
 */
static bool run_exact(const struct gemm_spec *s)
{
	const double bound =
		fabs(s->alpha) * 4.0 * (double)s->k + fabs(s->beta) * 2.0;
	int unit = INT_MAX;

	if (s->init != GEMM_INIT_RANDINT || !isfinite(bound))
		return false;
	if (fpclassify(s->alpha) != FP_ZERO)
		unit = low_bit(s->alpha);
	if (fpclassify(s->beta) != FP_ZERO)
		unit = MIN(unit, low_bit(s->beta));
	if (unit == INT_MAX)
		return true; /* D is all zeros */
	return unit >= -126 && ldexp(bound, -unit) < 0x1p24;
}

/*
 * What the inputs of an init are made of (reference.cu's draw()): the
 * standard deviation of a product of two elements, and the largest
 * product.  normal: N(0, 1), Box-Muller from 24-bit uniforms, so |x| is
 * at most sqrt(2 ln 2^24) < 5.8; uniform: [-1, 1) in fp32, which rounds
 * to [-1, 1] in bf16 or fp16 (so 1 is still the largest product), sd
 * 1/sqrt(3); randint: -2..2, sd sqrt(2).
 */
static void init_products(enum gemm_init init, double *sd, double *max)
{
	switch (init) {
	case GEMM_INIT_UNIFORM:
		*sd = 1.0 / 3.0;
		*max = 1.0;
		break;
	case GEMM_INIT_RANDINT:
		*sd = 2.0;
		*max = 4.0;
		break;
	case GEMM_INIT_NORMAL:
	case _GEMM_INIT_MAX:
	default:
		*sd = 1.0;
		*max = 5.8 * 5.8;
		break;
	}
}

/*
 * The tensor cores add each k16 block of products into the fp32
 * accumulator and truncate the sum, so each block may lose up to an ulp
 * of the partial sum, 2^-23 of it, and always toward zero: the losses
 * add up rather than cancel, and grow as K * sqrt(K) where the summation
 * order alone grows as sqrt(K) (a correct 128x128x1048576 normal job
 * measured a largest error of 5.0 against the K * 2^-20 = 1 it was once
 * allowed).  The partial sums of zero-mean products are a random walk,
 * below 8 standard deviations, 8 * sd * sqrt(K), for all but about 1 in
 * 10^15 elements, plus one product for a short K.  With cuBLASLt as the
 * reference, it truncates as ours do: twice the bound.
 *
 * randint sums lose nothing: every product and partial sum is an
 * integer of at most 4K <= 2^22, exact in fp32 however the tensor cores
 * align and truncate.  Only the epilogue rounds, which K * 2^-20 covers
 * (see verify_tolerance()); a bound sized for normal inputs would let
 * through a lost k-tile at a large K (about 64 * |alpha| at K = 2^20,
 * where one k-tile's sum is a few tens).
 */
_Static_assert(4ull * SPEC_DIM_MAX < (1ull << 24),
	       "randint sums of K products stay exact in fp32");

static double accumulation_bound(const struct gemm_spec *s)
{
	const double k = (double)s->k;
	double sd, max, partial;

	if (s->init == GEMM_INIT_RANDINT)
		return 0.0;
	init_products(s->init, &sd, &max);
	partial = 8.0 * sd * sqrt(k) + max;
	return (s->reference == GEMM_REFERENCE_CUBLAS ? 2.0 : 1.0) *
	       ceil(k / 16.0) * ldexp(partial, -23);
}

/*
 * Below this an absolute error is the output type's own: fp16's
 * subnormal step, and the smallest normal fp32 for bf16 and fp32 (a
 * kernel may flush an fp32 subnormal, alpha * acc with a tiny alpha).
 */
static double output_floor(enum gemm_dtype out)
{
	return out == GEMM_DTYPE_FP16 ? ldexp(1.0, -24) : ldexp(1.0, -126);
}

/*
 * Tolerances: see cmp_elem() in kernels/reference.cu.  Exact where
 * run_exact() says so.  Otherwise atol is |alpha| times the sum's own
 * error, fp32 summation order (K * 2^-20) and the tensor cores'
 * truncation (accumulation_bound()), plus output_floor().  With
 * randint inputs the sum is exact, and what is left is the epilogue's
 * fp32 roundings of alpha * acc (and of beta * c where the two cancel),
 * ours and the reference's, each at most 2^-24 of |alpha| * 4K: K *
 * 2^-20 is four of them.  atol is scaled by alpha and nothing else, so
 * that a small alpha does not leave every value inside it.  beta * C
 * needs no term: its roundings are relative to it, inside rtol unless
 * it cancels with alpha * A * B, whose bound then covers them.  rtol is
 * the output's final rounding: its epsilon for bf16 and fp16; for fp32
 * there is none, and 2^-22 covers the epilogue's own fp32 roundings.
 */
void verify_tolerance(const struct gemm_spec *s, struct gemm_verdict *v)
{
	if (run_exact(s)) {
		v->atol = 0;
		v->rtol = 0;
		return;
	}
	v->atol = fabs(s->alpha) *
			  (ldexp((double)s->k, -20) + accumulation_bound(s)) +
		  output_floor(s->out);
	switch (s->out) {
	case GEMM_DTYPE_BF16:
		v->rtol = 0x1p-7;
		break;
	case GEMM_DTYPE_FP16:
		v->rtol = 0x1p-10;
		break;
	case GEMM_DTYPE_FP32:
	case _GEMM_DTYPE_MAX:
	default:
		v->rtol = 0x1p-22;
		break;
	}
}

static void run_tolerance(struct run *r, struct gemm_cmp_args *c,
			  struct gemm_verdict *v)
{
	verify_tolerance(r->spec, v);
	c->exact = run_exact(r->spec);
	c->atol = (float)v->atol;
	c->rtol = (float)v->rtol;
}

/*
 * The device reference into r->ref: alpha * A * B (k terms) + beta * C,
 * as the spec has them.  Its grid is (ceil(m / 64), ceil(n / 64)), and
 * a grid's y holds at most 65535 blocks: n up to 4194240, which the
 * spec's limit keeps it under.
 */
_Static_assert((SPEC_DIM_MAX + 63) / 64 <= 65535,
	       "the reference grid's y, ceil(n / 64), fits in 65535");

static int run_reference_device(struct run *r, uint64_t k, float alpha)
{
	const struct gemm_spec *s = r->spec;
	struct gemm_ref_args ref = {
		.a = r->a,
		.b = r->b,
		.c = r->reads_c ? r->c : 0,
		.r = r->ref,
		.m = (uint32_t)s->m,
		.n = (uint32_t)s->n,
		.k = (uint32_t)k,
		.out = run_out_code(s->out),
		.alpha = alpha,
		.beta = r->reads_c ? (float)s->beta : 0.0f,
	};

	run_strides(r, &ref);
	return run_helper(r, r->g->f_ref[s->dtype], DIV_ROUND_UP(s->m, 64),
			  DIV_ROUND_UP(s->n, 64), &ref);
}

/*
 * The fp32 reference from cuBLASLt's first heuristic choice.  cuBLASLt
 * wants C of D's type, so with beta != 0 the reference kernel first
 * writes beta * C (k = 0) in fp32 into the reference buffer, and
 * cuBLASLt adds alpha * A * B to it in place (beta 1).
 */
static int run_reference_cublas(struct run *r)
{
	const float alpha = (float)r->spec->alpha;
	int e = 0;

	if (r->reads_c)
		e = run_reference_device(r, 0, 0.0f);
	if (!e)
		e = run_lt_new(r, GEMM_DTYPE_FP32, r->reads_c ? r->ref : 0,
			       r->ref, alpha, r->reads_c ? 1.0f : 0.0f, 0,
			       &r->lt_ref);
	if (e)
		return e;
	e = cublaslt_gemm_launch(r->lt_ref, r->g->stream, r->err, r->errlen);
	return e ? run_lt_failed(r, e) : 0;
}

/* Poison D so that elements the kernel never writes show. */
static int run_poison(struct run *r)
{
	const uint64_t count = r->spec->m * r->spec->n;
	const bool wide = r->out_size == 4;
	struct gemm_fill_args fill = {
		.p = r->d,
		.count = count,
		.value = wide ? GEMMD_POISON_U32 : GEMMD_POISON_U16,
	};

	return run_helper(r, wide ? r->g->f_fill32 : r->g->f_fill16,
			  run_stride_blocks(r, count), 1, &fill);
}

/*
 * Stream-K's partial-sum slots too (not its flags): a slot read before
 * this launch wrote it, behind a flag left raised, then holds NaN rather
 * than what the launch before left there, which are the same sums.
 */
static int run_poison_slots(struct run *r)
{
	if (r->plan->decomposition != GEMM_DECOMP_STREAM_K)
		return 0;
	return run_memset32(r, r->sk_ws, GEMMD_POISON_U32,
			    run_sk_slots_bytes(r) / 4);
}

/* The reference into the kept buffer, then its fingerprint. */
static int run_reference(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	int e;

	if (s->reference == GEMM_REFERENCE_CUBLAS)
		e = run_reference_cublas(r);
	else
		e = run_reference_device(r, s->k, (float)s->alpha);
	if (!e)
		e = run_ref_sum_queue(r);
	return e;
}

/*
 * Zero the compare statistics, first_index all ones, in stream order: a
 * cuMemcpyHtoD from pageable memory goes through the legacy stream, which
 * our stream does not wait for, and may still be in flight when it
 * returns.
 */
static int run_stats_reset(struct run *r)
{
	const CUdeviceptr first =
		r->stats + offsetof(struct gemm_cmp_stats, first_index);
	int e;

	e = run_memset32(r, r->stats, 0, sizeof(struct gemm_cmp_stats) / 4);
	if (!e)
		e = run_memset32(r, first, UINT32_MAX, 2);
	return e;
}

/* Whether a launch leaves state that the next one starts from. */
static bool run_carries_state(const struct run *r)
{
	return r->placement || r->plan->decomposition == GEMM_DECOMP_STREAM_K;
}

int run_verify(struct run *r, struct gemm_verdict *v)
{
	const struct gemm_spec *s = r->spec;
	const uint64_t count = s->m * s->n;
	const bool make_ref = !r->cached[SLOT_REF];
	struct gemm_cmp_args cmp = { .count = count };
	struct gemm_cmp_stats st;
	int e;

	e = run_ref_buffer(r);
	if (!e)
		e = run_alloc(r, &r->stats, sizeof(st));
	/*
	 * A placed launch claims from counters, and a stream-K one waits
	 * on flags, that the launch before set back to zero: check one
	 * that follows two, as every timed launch does.  (The first after
	 * run_workspace() would pass with flags it never clears.)
	 */
	for (int i = 0; !e && run_carries_state(r) && i < 2; i++)
		e = run_launch_ours(r);
	if (!e)
		e = run_poison(r);
	if (!e)
		e = run_poison_slots(r);
	if (!e)
		e = run_launch_ours(r);
	if (!e)
		e = run_sync(r, "verification launch", 1);
	if (e)
		return e;

	cmp.d = r->d;
	cmp.r = r->ref;
	cmp.stats = r->stats;
	run_tolerance(r, &cmp, v);
	if (make_ref)
		e = run_reference(r);
	if (!e)
		e = run_stats_reset(r);
	if (!e)
		e = run_helper(r, r->g->f_cmp[s->out],
			       run_stride_blocks(r, count), 1, &cmp);
	if (!e)
		e = run_sync(r, "reference and compare",
			     make_ref && s->reference == GEMM_REFERENCE_DEVICE ?
				     VERIFY_REFERENCE_LAUNCHES :
				     1);
	if (!e)
		e = CU(r, cuMemcpyDtoH, &st, r->stats, sizeof(st));
	if (!e && make_ref)
		e = run_ref_keep(r);
	if (e)
		return e;

	verdict_fill(r, &st, v);
	if (!st.mismatches)
		return 0;
	e = run_mismatches(r, &st, v);
	if (!e && v->first_row >= 0)
		run_diagnose(r, v);
	return e;
}
