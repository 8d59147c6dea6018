// SPDX-License-Identifier: MIT
/*
 * test-verify - the tolerance a job is verified with (verify.c), no GPU
 * needed.  The figures it must cover or catch were measured on an H200
 * (docs/perf.md, session 42): a correct kernel's largest error on long-K
 * normal jobs, and what an injected race leaves at a small alpha.
 */
#include <math.h>

#include "check.h"
#include "spec.h"
#include "verify.h"

/* x is y, without -Wfloat-equal's complaint: these are set, not computed. */
static bool same(double x, double y)
{
	return !(x < y) && !(x > y);
}

static struct gemm_verdict tol_ab(uint64_t k, enum gemm_init init, double alpha,
				  double beta, enum gemm_dtype out)
{
	struct gemm_spec s;
	struct gemm_verdict v = { 0 };

	spec_init(&s);
	s.m = 128;
	s.n = 128;
	s.k = k;
	s.init = init;
	s.alpha = alpha;
	s.beta = beta;
	s.out = out;
	verify_tolerance(&s, &v);
	return v;
}

static struct gemm_verdict tol_of(uint64_t k, enum gemm_init init, double alpha,
				  enum gemm_dtype out)
{
	return tol_ab(k, init, alpha, 0.0, out);
}

/* randint with whole alpha and beta: bit for bit. */
static void test_exact(void)
{
	struct gemm_verdict v =
		tol_of(4096, GEMM_INIT_RANDINT, 1.0, GEMM_DTYPE_FP32);

	CHECK(same(v.atol, 0) && same(v.rtol, 0));
	/* 0.1 times an integer is not exact in fp32 */
	v = tol_of(4096, GEMM_INIT_RANDINT, 0.1, GEMM_DTYPE_FP32);
	CHECK(v.atol > 0 && v.rtol > 0);
	/* 5 * sum at K = 2^20 may be 2^24 + 5 */
	v = tol_of(1048576, GEMM_INIT_RANDINT, 5.0, GEMM_DTYPE_FP32);
	CHECK(v.atol > 0);
}

/* randint, fp32 out: compared bit for bit? */
static bool exact_of(uint64_t k, double alpha, double beta)
{
	const struct gemm_verdict v =
		tol_ab(k, GEMM_INIT_RANDINT, alpha, beta, GEMM_DTYPE_FP32);

	return same(v.atol, 0) && same(v.rtol, 0);
}

/*
 * Not only whole alpha and beta: values that are whole multiples of a
 * power of two below 2^24 of it are exact in fp32 as well.
 */
static void test_exact_dyadic(void)
{
	/* 0.5 * sum + 1.5 * c: multiples of 0.5 below 2^13 */
	CHECK(exact_of(4096, 0.5, 1.5));
	CHECK(exact_of(4096, -0.25, 0));
	/* 4 * sum at K = 2^20: multiples of 4 up to 2^24 */
	CHECK(exact_of(1048576, 4, 0));
	CHECK(exact_of(1048576, 3, 0));
	/* 4 * sum + c: 2^24 + 1 may be one */
	CHECK(!exact_of(1048576, 4, 1));
	/* 3 * sum + 0.5 * c: 12582912.5 needs 25 bits */
	CHECK(!exact_of(1048576, 3, 0.5));
	/* a unit under the smallest normal float: a flushing kernel's zero */
	CHECK(!exact_of(64, ldexp(1.0, -127), 0));
	CHECK(exact_of(64, ldexp(1.0, -126), 0));
	/* no alpha and no beta: D is zeros */
	CHECK(exact_of(64, 0, 0));
	CHECK(exact_of(64, 0, 0.5));
}

/*
 * Correct kernels, fp32 out, normal inputs: largest errors of 0.086 at
 * K = 65536 and 5.0 at K = 1048576 (the tensor cores truncate).  Twice
 * those must pass.
 */
static void test_long_k(void)
{
	CHECK(tol_of(65536, GEMM_INIT_NORMAL, 1.0, GEMM_DTYPE_FP32).atol >
	      2 * 0.086);
	CHECK(tol_of(1048576, GEMM_INIT_NORMAL, 1.0, GEMM_DTYPE_FP32).atol >
	      2 * 5.0);
	/* and a wrong k-tile of 64 products (about 8) still fails at 4096 */
	CHECK(tol_of(4096, GEMM_INIT_NORMAL, 1.0, GEMM_DTYPE_FP32).atol < 0.1);
	CHECK(tol_of(4096, GEMM_INIT_UNIFORM, 1.0, GEMM_DTYPE_FP32).atol <
	      tol_of(4096, GEMM_INIT_NORMAL, 1.0, GEMM_DTYPE_FP32).atol);
}

/*
 * randint with an alpha that is not exact (0.1) is compared within a
 * tolerance, but its sums are still exact integers: only the epilogue
 * rounds.  At K = 2^20 a lost k-tile of 64 products that sums to 2
 * moves an fp32 D by 0.2 and must fail; a bound sized for the tensor
 * cores' truncation of normal sums allowed about 13.
 */
static void test_randint_inexact(void)
{
	const double alpha = 0.1;
	struct gemm_verdict v =
		tol_of(1048576, GEMM_INIT_RANDINT, alpha, GEMM_DTYPE_FP32);

	CHECK(v.atol > 0);
	CHECK(v.atol < alpha * 2);
	/* the epilogue's roundings, 2^-24 of |alpha| * 4K, a few times */
	CHECK(v.atol >= 4 * ldexp(alpha * 4 * 1048576, -24));
}

/* cuBLASLt as the reference truncates too: more room, not less. */
static void test_cublas_reference(void)
{
	struct gemm_spec s;
	struct gemm_verdict dev = { 0 }, lt = { 0 };

	spec_init(&s);
	s.k = 65536;
	s.init = GEMM_INIT_NORMAL;
	verify_tolerance(&s, &dev);
	s.reference = GEMM_REFERENCE_CUBLAS;
	verify_tolerance(&s, &lt);
	CHECK(lt.atol > dev.atol);
	CHECK(same(lt.rtol, dev.rtol));
}

/*
 * A small alpha scales D and its tolerance alike: with alpha 1e-5 the
 * values of a 4096-deep normal sum are about 1e-5 * 64, and a D of zeros
 * (or the injected race, which passed at 1e-5 under max(1, |alpha|))
 * must be far outside atol.
 */
static void test_small_alpha(void)
{
	const double alpha = 1e-5;
	struct gemm_verdict v =
		tol_of(4096, GEMM_INIT_NORMAL, alpha, GEMM_DTYPE_BF16);

	CHECK(v.atol < 0.01 * alpha * 64);
	CHECK(v.atol >= ldexp(1.0, -126));
	/* fp16's subnormal step: a value of 1e-7 * 64 is stored that coarse */
	v = tol_of(4096, GEMM_INIT_NORMAL, 1e-7, GEMM_DTYPE_FP16);
	CHECK(v.atol >= ldexp(1.0, -24));
}

static void test_rtol(void)
{
	CHECK(same(tol_of(64, GEMM_INIT_NORMAL, 1.0, GEMM_DTYPE_BF16).rtol,
		   0x1p-7));
	CHECK(same(tol_of(64, GEMM_INIT_NORMAL, 1.0, GEMM_DTYPE_FP16).rtol,
		   0x1p-10));
	CHECK(same(tol_of(64, GEMM_INIT_NORMAL, 1.0, GEMM_DTYPE_FP32).rtol,
		   0x1p-22));
}

int main(void)
{
	RUN_TEST(test_exact);
	RUN_TEST(test_exact_dyadic);
	RUN_TEST(test_long_k);
	RUN_TEST(test_randint_inexact);
	RUN_TEST(test_cublas_reference);
	RUN_TEST(test_small_alpha);
	RUN_TEST(test_rtol);
	return check_exit();
}
