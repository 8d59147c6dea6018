/* SPDX-License-Identifier: MIT */
/*
 * reference.cu - what a GEMM run needs besides the kernel under test:
 * input init from a seed, output poisoning, an independent fp32 reference
 * GEMM and a compare kernel that reduces the verdict on the GPU.
 *
 * Nothing here uses tensor cores or TMA: the reference must not share a
 * failure mode with the kernels it checks.
 */
#include "common.cuh"

namespace {

/*
 * This thread's index in the grid, in 64 bits: the grid-stride kernels
 * here take any grid, and blockIdx.x * blockDim.x alone is a 32-bit
 * product, which wraps from 2^24 blocks of 256 threads on.
 */
__device__ __forceinline__ uint64_t grid_thread(void)
{
	return static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

/* ---- counter-based random numbers ---------------------------------------- */

/* SplitMix64's output function: a bijective 64-bit mixer. */
__device__ __forceinline__ uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Element i of stream `stream` of `seed`: SplitMix64 with its state jumped
 * straight to step i, keyed by (seed, stream).  Any element can be made
 * by any thread, so the result does not depend on the launch shape.
 */
__device__ __forceinline__ uint64_t hash_elem(uint64_t key, uint64_t i)
{
	return mix64(key + (i + 1) * 0x9e3779b97f4a7c15ull);
}

__device__ __forceinline__ float draw(uint64_t h, uint32_t dist)
{
	const float two_m24 = 1.0f / 16777216.0f;

	switch (dist) {
	case GEMMD_DIST_UNIFORM:
		/* 24 random bits: exact in fp32, in [-1, 1). */
		return static_cast<float>(h >> 40) * (2.0f * two_m24) - 1.0f;
	case GEMMD_DIST_RANDINT:
		/* {-2..2}: products and their sums stay exact in fp32. */
		return static_cast<float>(static_cast<int>((h >> 32) % 5) - 2);
	default: {
		/* Box-Muller; u1 in (0, 1] keeps the log finite. */
		const float u1 = static_cast<float>((h >> 40) + 1) * two_m24;
		const float u2 = static_cast<float>(h & 0xffffff) * two_m24;

		return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
	}
	}
}

/*
 * What the kernels here need of an element type: its bit pattern's
 * width, the conversions, and the poison pattern of an output.
 */
template <typename T> struct elem;

template <> struct elem<__nv_bfloat16> {
	using bits = uint16_t;
	static constexpr bits poison = GEMMD_POISON_U16;
	static __device__ __forceinline__ float to_float(bits b)
	{
		return gemmd_type<__nv_bfloat16>::to_float(b);
	}
	static __device__ __forceinline__ bits from_float(float x)
	{
		return __bfloat16_as_ushort(
			gemmd_type<__nv_bfloat16>::from_float(x));
	}
};

template <> struct elem<__half> {
	using bits = uint16_t;
	static constexpr bits poison = GEMMD_POISON_U16;
	static __device__ __forceinline__ float to_float(bits b)
	{
		return gemmd_type<__half>::to_float(b);
	}
	static __device__ __forceinline__ bits from_float(float x)
	{
		return __half_as_ushort(gemmd_type<__half>::from_float(x));
	}
};

template <> struct elem<float> {
	using bits = uint32_t;
	static constexpr bits poison = GEMMD_POISON_U32;
	static __device__ __forceinline__ float to_float(bits b)
	{
		return __uint_as_float(b);
	}
	static __device__ __forceinline__ bits from_float(float x)
	{
		return __float_as_uint(x);
	}
};

/* x rounded to T and back: what a correct kernel stores for x. */
template <typename T> __device__ __forceinline__ float round_to(float x)
{
	return elem<T>::to_float(elem<T>::from_float(x));
}

template <typename T> __device__ void init_kernel(const gemm_init_args &a)
{
	typename elem<T>::bits *p =
		reinterpret_cast<typename elem<T>::bits *>(a.p);
	const uint64_t key = mix64(a.seed ^ mix64(a.stream));
	const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;

	for (uint64_t i = grid_thread(); i < a.count; i += step)
		p[i] = elem<T>::from_float(draw(hash_elem(key, i), a.dist));
}

template <typename B> __device__ void fill_kernel(const gemm_fill_args &a)
{
	B *p = reinterpret_cast<B *>(a.p);
	const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;

	for (uint64_t i = grid_thread(); i < a.count; i += step)
		p[i] = static_cast<B>(a.value);
}

/* ---- reference GEMM ------------------------------------------------------ */

/*
 * 64x64 output tile per 256-thread block, 16-deep k slices staged in
 * shared memory as fp32, 4x4 outputs per thread accumulated with fmaf in
 * plain k order.  Grid: (ceil(m/64), ceil(n/64)).
 */
constexpr int ref_tile = 64;
constexpr int ref_bk = 16;

/*
 * Which element of the 64 x 16 slice load `idx` fetches: k fastest for a
 * K-major operand, rows fastest otherwise, so that a warp reads
 * consecutive addresses either way (and writes the padded smem rows
 * without bank conflicts).
 */
__device__ __forceinline__ void ref_slot(bool k_major, uint32_t idx,
					 uint32_t &row, uint32_t &kk)
{
	if (k_major) {
		row = idx / ref_bk;
		kk = idx % ref_bk;
	} else {
		row = idx % ref_tile;
		kk = idx / ref_tile;
	}
}

/* Element i of C, in its output type, as fp32. */
__device__ __forceinline__ float ref_c(const gemm_ref_args &args, uint64_t i)
{
	switch (args.out) {
	case GEMMD_OUT_FP16:
		return elem<__half>::to_float(
			reinterpret_cast<const uint16_t *>(args.c)[i]);
	case GEMMD_OUT_FP32:
		return reinterpret_cast<const float *>(args.c)[i];
	default:
		return elem<__nv_bfloat16>::to_float(
			reinterpret_cast<const uint16_t *>(args.c)[i]);
	}
}

template <typename T> __device__ void ref_kernel(const gemm_ref_args &args)
{
	__shared__ float as[ref_bk][ref_tile + 1];
	__shared__ float bs[ref_bk][ref_tile + 1];
	const uint16_t *a = reinterpret_cast<const uint16_t *>(args.a);
	const uint16_t *b = reinterpret_cast<const uint16_t *>(args.b);
	float *r = reinterpret_cast<float *>(args.r);
	const uint32_t m0 = blockIdx.x * ref_tile, n0 = blockIdx.y * ref_tile;
	const uint32_t tx = threadIdx.x % 16, ty = threadIdx.x / 16;
	const bool a_kmajor = args.a_sk == 1, b_kmajor = args.b_sk == 1;
	const bool read_c = args.beta != 0.0f;
	float acc[4][4] = {};

	for (uint32_t k0 = 0; k0 < args.k; k0 += ref_bk) {
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const uint32_t idx = threadIdx.x + 256 * j;
			uint32_t row, kk;

			ref_slot(a_kmajor, idx, row, kk);
			{
				const uint32_t gm = m0 + row, gk = k0 + kk;
				const uint64_t ia =
					static_cast<uint64_t>(gm) * args.a_sm +
					static_cast<uint64_t>(gk) * args.a_sk;

				as[kk][row] = gm < args.m && gk < args.k ?
						      elem<T>::to_float(a[ia]) :
						      0.0f;
			}
			ref_slot(b_kmajor, idx, row, kk);
			{
				const uint32_t gn = n0 + row, gk = k0 + kk;
				const uint64_t ib =
					static_cast<uint64_t>(gk) * args.b_sk +
					static_cast<uint64_t>(gn) * args.b_sn;

				bs[kk][row] = gn < args.n && gk < args.k ?
						      elem<T>::to_float(b[ib]) :
						      0.0f;
			}
		}
		__syncthreads();
#pragma unroll
		for (int kk = 0; kk < ref_bk; kk++) {
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 4; j++)
					acc[i][j] = fmaf(as[kk][ty + 16 * i],
							 bs[kk][tx + 16 * j],
							 acc[i][j]);
		}
		__syncthreads();
	}
	/*
	 * The epilogue as plain fp32 operations: alpha * acc rounded, then
	 * beta * c rounded and added.  With integer inputs and small integer
	 * alpha and beta every step is exact, so a kernel that fuses them
	 * differently still matches bit for bit.
	 */
#pragma unroll
	for (int i = 0; i < 4; i++) {
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const uint32_t row = m0 + ty + 16 * i;
			const uint32_t col = n0 + tx + 16 * j;
			const uint64_t o =
				static_cast<uint64_t>(row) * args.n + col;
			float v;

			if (row >= args.m || col >= args.n)
				continue;
			v = __fmul_rn(args.alpha, acc[i][j]);
			if (read_c)
				v = __fadd_rn(v, __fmul_rn(args.beta,
							   ref_c(args, o)));
			r[o] = v;
		}
	}
}

/* ---- compare ------------------------------------------------------------- */

struct cmp_local {
	unsigned long long mismatches, nan_count, inf_count, unwritten;
	unsigned long long overflow;
	unsigned long long first_index;
	float max_abs, max_rel;
	double sum_sq_err, sum_sq_ref;
};

__device__ __forceinline__ unsigned long long *u64(uint64_t *p)
{
	return reinterpret_cast<unsigned long long *>(p);
}

/*
 * Claim a sample slot for mismatch i.  The plain read first: once the
 * slots are gone, a broken kernel's millions of mismatches cost no
 * more atomics on that one word.
 */
__device__ __forceinline__ void cmp_record(gemm_cmp_stats *s, uint64_t i)
{
	const volatile uint64_t *count = &s->sample_count;
	unsigned long long slot;

	if (*count >= GEMMD_CMP_SAMPLE_SLOTS)
		return;
	slot = atomicAdd(u64(&s->sample_count), 1ull);
	if (slot < GEMMD_CMP_SAMPLE_SLOTS)
		s->sample[slot] = i;
}

__device__ __forceinline__ void cmp_bad(cmp_local &c, const gemm_cmp_args &a,
					uint64_t i)
{
	c.mismatches++;
	if (i < c.first_index)
		c.first_index = i;
	cmp_record(reinterpret_cast<gemm_cmp_stats *>(a.stats), i);
}

/* got, an Inf, is what D's type makes of a value the reference allows. */
template <typename T>
__device__ __forceinline__ bool overflows(const gemm_cmp_args &a, float ref,
					  float got)
{
	const float far =
		fabsf(ref) + (a.exact ? 0.0f : a.atol + a.rtol * fabsf(ref));

	return signbit(got) == signbit(ref) && isinf(round_to<T>(far));
}

/*
 * Tolerances (chosen by the host, run_tolerance() in verify.c, documented
 * here because this is where they are applied):
 *  - exact (randint inputs, integer alpha and beta, every value below
 *    2^24): every product, partial sum and epilogue step is an integer
 *    exact in fp32 whatever the order, so D must equal the reference
 *    rounded to the output type (fp32: the reference itself) bit for bit
 *    (atol = rtol = 0).  Any pipeline race or missed k-tile shows.
 *  - otherwise |d - r| <= atol + rtol * |r|.  atol is |alpha| times
 *    what the sum itself may be off by (fp32 summation order, and the
 *    tensor cores' truncation of each k16 block's sum, which grows as
 *    K * sqrt(K)) plus the output type's smallest step: verify.c's
 *    verify_tolerance().  rtol is the output format's epsilon (2^-7
 *    bf16, 2^-10 fp16: twice the unit roundoff of the final rounding to
 *    D).  An fp32 output has no final rounding, so that term goes; what
 *    is left, 2^-22, covers the one or two fp32 roundings of alpha * acc
 *    + beta * c, which a kernel may fuse (fma) where the reference does
 *    not.
 * NaN, Inf and unwritten elements are mismatches and are kept out of the
 * error statistics.  An Inf is right, and counted as overflow, where the
 * value within the tolerance of the reference furthest from zero rounds
 * to that Inf in the output type: exact, the product itself is past the
 * type's range (an fp16 D past 65504, with alpha 1000, say).
 *
 * max_rel is taken only over elements whose reference is clearly away
 * from zero, |want| > atol (or > 1e-6 when atol is 0, as for randint):
 * near zero the relative error of a passing element means nothing (with
 * K = 4096, an error of atol on a reference of 1e-4 reads as 39).  Those
 * elements are still checked against the tolerance and count in max_abs
 * and the Frobenius error.
 */
template <typename T>
__device__ __forceinline__ void cmp_elem(cmp_local &c, const gemm_cmp_args &a,
					 typename elem<T>::bits bits, float ref,
					 uint64_t i)
{
	float got, want, err, tol;

	if (bits == elem<T>::poison) {
		c.unwritten++;
		cmp_bad(c, a, i);
		return;
	}
	got = elem<T>::to_float(bits);
	if (isnan(got)) {
		c.nan_count++;
		cmp_bad(c, a, i);
		return;
	}
	if (isinf(got) && overflows<T>(a, ref, got)) {
		c.overflow++;
		return;
	}
	if (isinf(got)) {
		c.inf_count++;
		cmp_bad(c, a, i);
		return;
	}
	want = a.exact ? round_to<T>(ref) : ref;
	err = fabsf(got - want);
	tol = a.exact ? 0.0f : a.atol + a.rtol * fabsf(want);
	c.max_abs = fmaxf(c.max_abs, err);
	if (fabsf(want) > (a.atol > 0.0f ? a.atol : 1e-6f))
		c.max_rel = fmaxf(c.max_rel, err / fabsf(want));
	c.sum_sq_err += static_cast<double>(err) * err;
	c.sum_sq_ref += static_cast<double>(want) * want;
	if (!(err <= tol))
		cmp_bad(c, a, i);
}

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v)
{
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffff, v, o);
	return v;
}

__device__ __forceinline__ double warp_sum(double v)
{
	for (int o = 16; o > 0; o /= 2)
		v += __shfl_xor_sync(0xffffffff, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v)
{
	for (int o = 16; o > 0; o /= 2)
		v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
	return v;
}

__device__ __forceinline__ unsigned long long warp_min(unsigned long long v)
{
	for (int o = 16; o > 0; o /= 2) {
		const unsigned long long w = __shfl_xor_sync(0xffffffff, v, o);

		v = w < v ? w : v;
	}
	return v;
}

/* Warp-reduce, then one set of atomics per warp. */
__device__ void cmp_flush(cmp_local &c, gemm_cmp_stats *s)
{
	const unsigned long long mis = warp_sum(c.mismatches);
	const unsigned long long nan = warp_sum(c.nan_count);
	const unsigned long long inf = warp_sum(c.inf_count);
	const unsigned long long unw = warp_sum(c.unwritten);
	const unsigned long long ovf = warp_sum(c.overflow);
	const unsigned long long first = warp_min(c.first_index);
	const float max_abs = warp_max(c.max_abs);
	const float max_rel = warp_max(c.max_rel);
	const double sse = warp_sum(c.sum_sq_err);
	const double ssr = warp_sum(c.sum_sq_ref);

	if (threadIdx.x % 32)
		return;
	if (mis) {
		atomicAdd(u64(&s->mismatches), mis);
		atomicMin(u64(&s->first_index), first);
	}
	if (nan)
		atomicAdd(u64(&s->nan_count), nan);
	if (inf)
		atomicAdd(u64(&s->inf_count), inf);
	if (unw)
		atomicAdd(u64(&s->unwritten), unw);
	if (ovf)
		atomicAdd(u64(&s->overflow), ovf);
	/* Non-negative floats order like their bit patterns. */
	atomicMax(&s->max_abs_bits, __float_as_uint(max_abs));
	atomicMax(&s->max_rel_bits, __float_as_uint(max_rel));
	atomicAdd(&s->sum_sq_err, sse);
	atomicAdd(&s->sum_sq_ref, ssr);
}

/* ---- checksum ------------------------------------------------------------ */

__device__ __forceinline__ unsigned long long sum_word(uint64_t i, uint32_t w)
{
	return mix64((i + 1) * 0x9e3779b97f4a7c15ull + w);
}

/* Grid-stride over the words, one atomic per warp. */
__device__ void sum_kernel(const gemm_sum_args &a)
{
	const uint32_t *p = reinterpret_cast<const uint32_t *>(a.p);
	const uint16_t *h = reinterpret_cast<const uint16_t *>(a.p);
	const uint64_t words = a.bytes / 4;
	const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
	const uint64_t first = grid_thread();
	unsigned long long s = 0;

	for (uint64_t i = first; i < words; i += step)
		s += sum_word(i, p[i]);
	if (first == 0 && a.bytes % 4)
		s += sum_word(words, h[2 * words]);
	s = warp_sum(s);
	if (threadIdx.x % 32 == 0 && s)
		atomicAdd(reinterpret_cast<unsigned long long *>(a.sum), s);
}

template <typename T> __device__ void cmp_kernel(const gemm_cmp_args &a)
{
	const typename elem<T>::bits *d =
		reinterpret_cast<const typename elem<T>::bits *>(a.d);
	const float *r = reinterpret_cast<const float *>(a.r);
	const uint64_t step = static_cast<uint64_t>(gridDim.x) * blockDim.x;
	cmp_local c = {};

	c.first_index = ~0ull;
	for (uint64_t i = grid_thread(); i < a.count; i += step)
		cmp_elem<T>(c, a, d[i], r[i], i);
	cmp_flush(c, reinterpret_cast<gemm_cmp_stats *>(a.stats));
}

} /* namespace */

/* ---- entry points -------------------------------------------------------- */

/* Any grid; block size a multiple of 32. */
extern "C" __global__ void gemmd_init_bf16(const struct gemm_init_args a)
{
	init_kernel<__nv_bfloat16>(a);
}

extern "C" __global__ void gemmd_init_fp16(const struct gemm_init_args a)
{
	init_kernel<__half>(a);
}

extern "C" __global__ void gemmd_init_fp32(const struct gemm_init_args a)
{
	init_kernel<float>(a);
}

extern "C" __global__ void gemmd_fill_u16(const struct gemm_fill_args a)
{
	fill_kernel<uint16_t>(a);
}

extern "C" __global__ void gemmd_fill_u32(const struct gemm_fill_args a)
{
	fill_kernel<uint32_t>(a);
}

/* Any grid; block size a multiple of 32 (whole warps reduce). */
extern "C" __global__ void gemmd_checksum(const struct gemm_sum_args a)
{
	sum_kernel(a);
}

/* Block 256, grid (ceil(m/64), ceil(n/64)); named by the input type. */
extern "C" __global__ void __launch_bounds__(256)
	gemmd_ref_bf16(const struct gemm_ref_args args)
{
	ref_kernel<__nv_bfloat16>(args);
}

extern "C" __global__ void __launch_bounds__(256)
	gemmd_ref_fp16(const struct gemm_ref_args args)
{
	ref_kernel<__half>(args);
}

/* Any grid; block size a multiple of 32 (whole warps reduce). */
extern "C" __global__ void gemmd_compare_bf16(const struct gemm_cmp_args a)
{
	cmp_kernel<__nv_bfloat16>(a);
}

extern "C" __global__ void gemmd_compare_fp16(const struct gemm_cmp_args a)
{
	cmp_kernel<__half>(a);
}

extern "C" __global__ void gemmd_compare_fp32(const struct gemm_cmp_args a)
{
	cmp_kernel<float>(a);
}

/*
 * out[block] = the SM the block ran on.  Launched in clusters with one
 * block per SM (its shared memory), it shows the worker which SMs share
 * a GPC: a cluster never spans two (daemon/gpcmap.h).
 */
extern "C" __global__ void gemmd_probe_sm(uint32_t *out)
{
	if (threadIdx.x == 0)
		out[blockIdx.x] = sreg_smid();
}
