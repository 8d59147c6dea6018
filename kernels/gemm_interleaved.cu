/* SPDX-License-Identifier: MIT */
/*
 * gemm_interleaved.cu - SM90 GEMM without warp specialization, D = alpha *
 * A * B^T + beta * C ("tn": both operands K-major), bf16/fp16 in, fp32
 * accumulation, bf16/fp16/fp32 out (chosen at run time).
 *
 * One CTA computes one BM x BN tile of D with 2 warpgroups, each owning
 * 64 rows x BN columns (wgmma m64nBNk16 straight from the swizzled
 * slots).  There is no producer warpgroup: the same warps that multiply
 * also issue the TMA loads, between the MMAs of one k-tile and those of
 * the next (the NVIDIA counterpart of an interleaved copy/MMA schedule).
 *
 * The ring has `stages` slots (run-time depth).  The prologue loads
 * k-tiles 0 .. stages-1 into slots 0 .. stages-1.  Then, per k-tile kt,
 * each warpgroup waits for full[slot(kt)], issues the wgmmas of kt,
 * commits and waits until only that batch is in flight (wait_group 1):
 * the warpgroup no longer reads the slot of k-tile kt-1.  That slot is
 * refilled with k-tile kt-1+stages once BOTH warpgroups have got that
 * far.  Rather than have a fixed thread wait for the slower warpgroup
 * (which would stall the faster one's next MMAs), each warpgroup's
 * leader bumps a per-slot release counter with an acq_rel atomic; the
 * leader that sees an odd old value released second, knows both
 * warpgroups are done with the slot, and issues the refill.  Each use of
 * a slot adds exactly 2 (the slot cannot be refilled, hence not used
 * again, before both releases), so the counter's parity tells first from
 * second without ever resetting it; the atomic's release/acquire pair
 * orders the first warpgroup's retired wgmma reads before the second's
 * TMA write, as an mbarrier arrive/wait would.
 *
 * full[s] has count 1 (the refilling leader's arrive.expect_tx, always
 * the whole stage: TMA counts the zero-fill of K, M and N tails), and
 * each warpgroup keeps (slot, phase) for it, phase flipping when slot
 * wraps.  A phase cannot complete twice before a warpgroup waits on it:
 * the next arrive needs that warpgroup's release first.  Every load that
 * is issued is of a k-tile < k_tiles, and both warpgroups wait for every
 * such k-tile, so when the main loop ends no TMA is in flight and the
 * CTA may exit.  The first k-step runs with scale-d = 0; M and N tails
 * are masked stores.
 *
 * Shared memory (dynamic, GEMMD_SMEM_FIXED + stages * stage bytes):
 *   full[16] | release counters[16] (in the empty-barrier space) | pad to
 *   1024 | slot 0: A (BM x BK), B (BN x BK) | slot 1 ... ; every tile
 *   1024-B aligned for the 128B swizzle atoms.
 *
 * Built once per entry: -DGEMMD_SCHED=interleaved -DGEMMD_DTYPE=bf16|fp16
 * -DGEMMD_LAYOUT=tn -DGEMMD_BM=128 -DGEMMD_BN=128|256 -DGEMMD_BK=64.
 */
#include "common.cuh"
#include "sched.cuh"

#define IL_PASTE_(a, b) a##b
#define IL_PASTE(a, b) IL_PASTE_(a, b)

/* Token checks: an undefined IL_* name is 0 in #if. */
#define IL_SCHED_interleaved 1
#define IL_LAYOUT_tn 1
#define IL_DTYPE_bf16 1
#define IL_DTYPE_fp16 2

#if IL_PASTE(IL_SCHED_, GEMMD_SCHED) != 1
#error "gemm_interleaved.cu: GEMMD_SCHED must be interleaved"
#endif
#if IL_PASTE(IL_LAYOUT_, GEMMD_LAYOUT) != 1
#error "gemm_interleaved.cu: GEMMD_LAYOUT must be tn"
#endif

namespace {

#if IL_PASTE(IL_DTYPE_, GEMMD_DTYPE) == 1
typedef __nv_bfloat16 il_in_t;
#elif IL_PASTE(IL_DTYPE_, GEMMD_DTYPE) == 2
typedef __half il_in_t;
#else
#error "gemm_interleaved.cu: GEMMD_DTYPE must be bf16 or fp16"
#endif

constexpr int il_threads = 256;

template <typename T, int BM, int BN, int BK> struct il_config {
	static constexpr int bk = BK;
	static constexpr uint32_t a_bytes = BM * BK * sizeof(T);
	static constexpr uint32_t b_bytes = BN * BK * sizeof(T);
	static constexpr uint32_t stage_bytes = a_bytes + b_bytes;
	static constexpr uint32_t max_stages =
		gemmd_stages_that_fit(stage_bytes);
	static constexpr int wgs = il_threads / 128;
	static constexpr int rows_per_wg = BM / wgs;

	static_assert(sizeof(T) == 2, "16-bit inputs");
	static_assert(BK * sizeof(T) == 128, "one 128B swizzle row per k-tile");
	static_assert(rows_per_wg == 64, "one wgmma M=64 per warpgroup");
	static_assert(BN == 128 || BN == 256, "wgmma N: 128 or 256");
	static_assert(a_bytes % 1024 == 0 && b_bytes % 1024 == 0,
		      "tiles must stay 1024-B aligned");
	static_assert(8 * GEMMD_MAX_STAGES + 4 * GEMMD_MAX_STAGES + 1023 <=
			      GEMMD_SMEM_FIXED,
		      "barriers, counters and alignment slack fit");
};

struct il_smem {
	uint32_t full; /* first full barrier; slot s at full + 8*s */
	uint32_t released; /* release counter of slot s at released + 4*s */
	uint32_t ring; /* slot 0, 1024-B aligned */
	int32_t m0, n0; /* this CTA's tile of D, in elements */
};

/*
 * One warpgroup is done with a slot: add 1 to its release counter and
 * return the old value.  release orders this warpgroup's retired wgmma
 * reads before the add; acquire makes the other warpgroup's earlier
 * release visible to whoever refills the slot next.
 */
__device__ __forceinline__ uint32_t il_release(uint32_t counter)
{
	uint32_t old;

	asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;"
		     : "=r"(old)
		     : "r"(counter)
		     : "memory");
	return old;
}

/* Load k-tile kt of A and B into slot `slot`. */
template <typename Cfg>
__device__ __forceinline__ void
il_load(const il_smem &sm, const CUtensorMap *tma_a, const CUtensorMap *tma_b,
	uint32_t slot, uint32_t kt)
{
	const uint32_t a = sm.ring + slot * Cfg::stage_bytes;
	const uint32_t full = sm.full + 8 * slot;
	const int32_t k0 = kt * Cfg::bk;

	/* Whole stage, also on edge tiles: TMA counts zero-fill. */
	mbar_arrive_expect_tx(full, Cfg::stage_bytes);
	tma_load_2d(a, tma_a, k0, sm.m0, full);
	tma_load_2d(a + Cfg::a_bytes, tma_b, k0, sm.n0, full);
}

/*
 * GEMMD_FAULT_EARLY_RELEASE, a deliberate race for the fault-injection
 * test: release the slot of the k-tile whose wgmmas were just issued,
 * not the one before, so that its refill with k-tile `next` (0: none, K
 * has no more) lands while those wgmmas may still read it.  The ring's
 * bookkeeping stays whole (two releases per refilled use, every load of
 * a k-tile < k_tiles and waited for), so the CTA ends cleanly and only
 * the sums are wrong.
 */
template <typename Cfg>
__device__ __forceinline__ void
il_release_early(const il_smem &sm, const CUtensorMap *tma_a,
		 const CUtensorMap *tma_b, bool leader, uint32_t slot,
		 uint32_t next)
{
	if (next == 0)
		return;
	if (leader && (il_release(sm.released + 4 * slot) & 1) != 0)
		il_load<Cfg>(sm, tma_a, tma_b, slot, next);
	__syncwarp();
}

/* ---- epilogue ------------------------------------------------------------ */

/*
 * The epilogue's global accesses are predicated PTX rather than C++ `if`s:
 * with one branch per element pair, ptxas computes every pair's value
 * ahead of the branches and needs ~50 more registers (128x256 spilled).
 * Each helper handles the pair p[0], p[1] of which the first nl are
 * inside D (nl <= 0: none): one paired access when nl >= 2 and `pair` (an
 * even element offset: col is even, so that holds unless ldd is odd),
 * else one access per element.
 */
GEMMD_DEV void il_st_b16x2(void *p, int32_t nl, uint32_t pair, uint32_t v)
{
	asm volatile("{\n\t.reg .pred pp, pl, ph;\n\t.reg .b16 lo, hi;\n\t"
		     "setp.ne.b32 pp, %2, 0;\n\t"
		     "setp.ge.and.s32 pp, %1, 2, pp;\n\t"
		     "setp.ge.and.s32 pl, %1, 1, !pp;\n\t"
		     "setp.ge.and.s32 ph, %1, 2, !pp;\n\t"
		     "mov.b32 {lo, hi}, %3;\n\t"
		     "@pp st.global.b32 [%0], %3;\n\t"
		     "@pl st.global.b16 [%0], lo;\n\t"
		     "@ph st.global.b16 [%0+2], hi;\n\t}"
		     :
		     : "l"(p), "r"(nl), "r"(pair), "r"(v)
		     : "memory");
}

/* Out-of-range elements read as +0. */
GEMMD_DEV uint32_t il_ld_b16x2(const void *p, int32_t nl, uint32_t pair)
{
	uint32_t v;

	asm volatile("{\n\t.reg .pred pp, pl, ph;\n\t.reg .b16 lo, hi;\n\t"
		     "setp.ne.b32 pp, %3, 0;\n\t"
		     "setp.ge.and.s32 pp, %2, 2, pp;\n\t"
		     "setp.ge.and.s32 pl, %2, 1, !pp;\n\t"
		     "setp.ge.and.s32 ph, %2, 2, !pp;\n\t"
		     "mov.b32 %0, 0;\n\t"
		     "mov.b16 lo, 0;\n\t"
		     "mov.b16 hi, 0;\n\t"
		     "@pp ld.global.b32 %0, [%1];\n\t"
		     "@pl ld.global.b16 lo, [%1];\n\t"
		     "@ph ld.global.b16 hi, [%1+2];\n\t"
		     "@!pp mov.b32 %0, {lo, hi};\n\t}"
		     : "=r"(v)
		     : "l"(p), "r"(nl), "r"(pair)
		     : "memory");
	return v;
}

GEMMD_DEV void il_st_f32x2(void *p, int32_t nl, uint32_t pair, float v0,
			   float v1)
{
	asm volatile("{\n\t.reg .pred pp, pl, ph;\n\t"
		     "setp.ne.b32 pp, %2, 0;\n\t"
		     "setp.ge.and.s32 pp, %1, 2, pp;\n\t"
		     "setp.ge.and.s32 pl, %1, 1, !pp;\n\t"
		     "setp.ge.and.s32 ph, %1, 2, !pp;\n\t"
		     "@pp st.global.v2.f32 [%0], {%3, %4};\n\t"
		     "@pl st.global.f32 [%0], %3;\n\t"
		     "@ph st.global.f32 [%0+4], %4;\n\t}"
		     :
		     : "l"(p), "r"(nl), "r"(pair), "f"(v0), "f"(v1)
		     : "memory");
}

GEMMD_DEV float2 il_ld_f32x2(const void *p, int32_t nl, uint32_t pair)
{
	float2 v;

	asm volatile("{\n\t.reg .pred pp, pl, ph;\n\t"
		     "setp.ne.b32 pp, %4, 0;\n\t"
		     "setp.ge.and.s32 pp, %3, 2, pp;\n\t"
		     "setp.ge.and.s32 pl, %3, 1, !pp;\n\t"
		     "setp.ge.and.s32 ph, %3, 2, !pp;\n\t"
		     "mov.f32 %0, 0f00000000;\n\t"
		     "mov.f32 %1, 0f00000000;\n\t"
		     "@pp ld.global.v2.f32 {%0, %1}, [%2];\n\t"
		     "@pl ld.global.f32 %0, [%2];\n\t"
		     "@ph ld.global.f32 %1, [%2+4];\n\t}"
		     : "=f"(v.x), "=f"(v.y)
		     : "l"(p), "r"(nl), "r"(pair)
		     : "memory");
	return v;
}

/* A pair of C or D elements as raw bits, for each output type. */
template <typename O> struct il_out;

template <> struct il_out<__nv_bfloat16> {
	typedef uint32_t bits;
	GEMMD_DEV bits ld(const __nv_bfloat16 *p, int32_t nl, uint32_t pair)
	{
		return il_ld_b16x2(p, nl, pair);
	}
	GEMMD_DEV void st(__nv_bfloat16 *p, int32_t nl, uint32_t pair, float v0,
			  float v1)
	{
		il_st_b16x2(p, nl, pair,
			    gemmd_type<__nv_bfloat16>::pack2(v0, v1));
	}
	GEMMD_DEV float lo(bits b)
	{
		return __uint_as_float(b << 16);
	}
	GEMMD_DEV float hi(bits b)
	{
		return __uint_as_float(b & 0xffff0000u);
	}
};

template <> struct il_out<__half> {
	typedef uint32_t bits;
	GEMMD_DEV bits ld(const __half *p, int32_t nl, uint32_t pair)
	{
		return il_ld_b16x2(p, nl, pair);
	}
	GEMMD_DEV void st(__half *p, int32_t nl, uint32_t pair, float v0,
			  float v1)
	{
		il_st_b16x2(p, nl, pair, gemmd_type<__half>::pack2(v0, v1));
	}
	GEMMD_DEV float lo(bits b)
	{
		return gemmd_type<__half>::to_float(b & 0xffffu);
	}
	GEMMD_DEV float hi(bits b)
	{
		return gemmd_type<__half>::to_float(b >> 16);
	}
};

template <> struct il_out<float> {
	typedef float2 bits;
	GEMMD_DEV bits ld(const float *p, int32_t nl, uint32_t pair)
	{
		return il_ld_f32x2(p, nl, pair);
	}
	GEMMD_DEV void st(float *p, int32_t nl, uint32_t pair, float v0,
			  float v1)
	{
		il_st_f32x2(p, nl, pair, v0, v1);
	}
	GEMMD_DEV float lo(bits b)
	{
		return b.x;
	}
	GEMMD_DEV float hi(bits b)
	{
		return b.y;
	}
};

/* C pairs loaded ahead of their stores: enough loads in flight, few regs. */
constexpr int il_c_batch = 8;

/*
 * Store this warpgroup's 64 x BN accumulators, D = alpha * acc + beta * C,
 * straight from the layout of m64nNk16: warp w of the warpgroup holds rows
 * 16w + lane/4 (+8); register 4j + {0,1} holds columns 8j + 2*(lane%4) +
 * {0,1} of the first row, 4j + {2,3} the same columns 8 rows below.  C is
 * not touched when WithC is false (beta == 0: C may hold NaN or not
 * exist).
 */
template <typename O, bool WithC, int BN>
__device__ __forceinline__ void il_epilogue(const float (&acc)[BN / 2],
					    const gemm_args &args, uint32_t row,
					    uint32_t col)
{
	using E = il_out<O>;
	const uint32_t pair = (args.ldd & 1) == 0;
	const uint64_t at = static_cast<uint64_t>(row) * args.ldd + col;
	const int32_t n_left = static_cast<int32_t>(args.n - col);

#pragma unroll
	for (int h = 0; h < 2; h++) {
		const uint64_t down = 8 * h * static_cast<uint64_t>(args.ldd);
		O *d = reinterpret_cast<O *>(args.d) + at + down;
		const O *c = reinterpret_cast<const O *>(args.c) + at + down;
		/* A row below D stores nothing. */
		const int32_t nl = row + 8 * h < args.m ? n_left : 0;

#pragma unroll
		for (int g = 0; g < BN / 8; g += il_c_batch) {
			typename E::bits cv[il_c_batch];

			if (WithC) {
#pragma unroll
				for (int i = 0; i < il_c_batch; i++)
					cv[i] = E::ld(c + 8 * (g + i),
						      nl - 8 * (g + i), pair);
			}
#pragma unroll
			for (int i = 0; i < il_c_batch; i++) {
				const int j = g + i;
				float v0 = args.alpha * acc[4 * j + 2 * h];
				float v1 = args.alpha * acc[4 * j + 2 * h + 1];

				if (WithC) {
					v0 += args.beta * E::lo(cv[i]);
					v1 += args.beta * E::hi(cv[i]);
				}
				E::st(d + 8 * j, nl - 8 * j, pair, v0, v1);
			}
		}
	}
}

template <typename O, int BN>
__device__ __forceinline__ void il_epilogue_out(const float (&acc)[BN / 2],
						const gemm_args &args,
						uint32_t row, uint32_t col)
{
	if (args.beta != 0.0f)
		il_epilogue<O, true, BN>(acc, args, row, col);
	else
		il_epilogue<O, false, BN>(acc, args, row, col);
}

/* ---- the kernel ---------------------------------------------------------- */

template <typename T, int BM, int BN, int BK>
__device__ __forceinline__ void il_gemm(const CUtensorMap *tma_a,
					const CUtensorMap *tma_b,
					const gemm_args &args)
{
	using Cfg = il_config<T, BM, BN, BK>;
	constexpr int n_acc = BN / 2;
	extern __shared__ __align__(16) uint8_t smem[];
	const uint32_t base = smem_u32(smem);
	const uint32_t stages = args.stages;
	const uint32_t k_tiles = (args.k + BK - 1) / BK;
	const uint32_t wg = threadIdx.x / 128, tid = threadIdx.x % 128;
	const bool leader = tid == 0;
	const bool early = args.fault & GEMMD_FAULT_EARLY_RELEASE;
	struct gemmd_sched sched;
	uint32_t tile_m, tile_n;
	il_smem sm;

	sm.full = base;
	sm.released = base + 8 * GEMMD_MAX_STAGES;
	sm.ring = (base + 12 * GEMMD_MAX_STAGES + 1023) & ~1023u;

	/*
	 * A mis-planned launch must not run off shared memory or silently
	 * do something else than asked; and a slot is released one k-tile
	 * late, so a ring of one would deadlock.
	 */
	if (threadIdx.x == 0 &&
	    (stages < 2 || stages > Cfg::max_stages ||
	     sm.ring + stages * Cfg::stage_bytes > base + dynamic_smem_size() ||
	     args.cluster_x > 1 || args.cluster_y > 1 ||
	     args.epilogue != GEMMD_EPILOGUE_DIRECT ||
	     args.out > GEMMD_OUT_FP32))
		__trap();

	gemmd_sched_init(sched, args, BM, BN);
	if (!gemmd_sched_tile(sched, blockIdx.x, 0, 0, tile_m, tile_n))
		return;
	sm.m0 = tile_m * BM;
	sm.n0 = tile_n * BN;

	if (threadIdx.x == 0) {
		uint32_t *released = reinterpret_cast<uint32_t *>(
			smem + 8 * GEMMD_MAX_STAGES);

		tma_prefetch_desc(tma_a);
		tma_prefetch_desc(tma_b);
		for (uint32_t s = 0; s < stages; s++) {
			mbar_init(sm.full + 8 * s, 1);
			released[s] = 0;
		}
		fence_mbarrier_init();
		/* The ring starts empty: fill all of it right away. */
		for (uint32_t kt = 0; kt < stages && kt < k_tiles; kt++)
			il_load<Cfg>(sm, tma_a, tma_b, kt, kt);
	}
	__syncthreads();

	/* This warpgroup's 64 rows of A start 64 * 128 B into the A tile. */
	const uint64_t desc_a =
		smem_desc_sw128(sm.ring + wg * Cfg::rows_per_wg * 128);
	const uint64_t desc_b = smem_desc_sw128(sm.ring + Cfg::a_bytes);
	float acc[n_acc];
	uint32_t slot = 0, phase = 0, prev = 0;

	/* Only for k == 0, where no wgmma runs: D = beta * C. */
#pragma unroll
	for (int i = 0; i < n_acc; i++)
		acc[i] = 0.0f;

#pragma unroll 1
	for (uint32_t kt = 0; kt < k_tiles; kt++) {
		/* Descriptor start addresses are in 16-B units. */
		const uint64_t off = (slot * Cfg::stage_bytes) >> 4;

		mbar_wait(sm.full + 8 * slot, phase);
		wgmma_fence_acc(acc);
		wgmma_fence();
#pragma unroll
		for (int kk = 0; kk < BK / 16; kk++)
			wgmma_m64k16<T, BN>(acc, desc_a + off + 2 * kk,
					    desc_b + off + 2 * kk,
					    (kt | kk) != 0);
		wgmma_commit();
		wgmma_fence_acc(acc);
		if (early)
			il_release_early<Cfg>(
				sm, tma_a, tma_b, leader, slot,
				kt + stages < k_tiles ? kt + stages : 0);
		/*
		 * Keep this k-tile's batch in flight; the previous one has
		 * retired, so this warpgroup is done with its slot, whose
		 * next k-tile is kt - 1 + stages.  Both warpgroups test the
		 * same condition, so every slot use that is refilled gets
		 * exactly two releases.
		 */
		wgmma_wait<1>();
		wgmma_fence_acc(acc);
		if (!early && kt > 0 && kt - 1 + stages < k_tiles) {
			if (leader &&
			    (il_release(sm.released + 4 * prev) & 1) != 0)
				il_load<Cfg>(sm, tma_a, tma_b, prev,
					     kt - 1 + stages);
			/* wgmma is .aligned: reconverge before the next. */
			__syncwarp();
		}
		prev = slot;
		if (++slot == stages) {
			slot = 0;
			phase ^= 1;
		}
	}
	wgmma_wait<0>();
	wgmma_fence_acc(acc);

	{
		const uint32_t warp = tid / 32, lane = tid % 32;
		const uint32_t row =
			sm.m0 + wg * Cfg::rows_per_wg + warp * 16 + lane / 4;
		const uint32_t col = sm.n0 + 2 * (lane % 4);

		switch (args.out) {
		case GEMMD_OUT_BF16:
			il_epilogue_out<__nv_bfloat16, BN>(acc, args, row, col);
			break;
		case GEMMD_OUT_FP16:
			il_epilogue_out<__half, BN>(acc, args, row, col);
			break;
		default:
			il_epilogue_out<float, BN>(acc, args, row, col);
			break;
		}
	}
}

} /* namespace */

/*
 * The catalog note's numbers are literals (they are pasted into a
 * string), checked here against what the kernel computes.
 */
#if GEMMD_BM != 128 || GEMMD_BK != 64
#error "gemm_interleaved.cu: tile 128x128x64 or 128x256x64"
#elif GEMMD_BN == 128
GEMMD_KERNEL_NOTE(GEMMD_ENTRY, interleaved, GEMMD_DTYPE, tn, 128, 128, 64, 256,
		  32768, 2, 7, 1, 0, 0, 0, "direct", 0, sm_90a);
static_assert(il_config<il_in_t, 128, 128, 64>::stage_bytes == 32768,
	      "note smem_stage");
static_assert(il_config<il_in_t, 128, 128, 64>::max_stages == 7,
	      "note max_stages");
#elif GEMMD_BN == 256
GEMMD_KERNEL_NOTE(GEMMD_ENTRY, interleaved, GEMMD_DTYPE, tn, 128, 256, 64, 256,
		  49152, 2, 4, 1, 0, 0, 0, "direct", 0, sm_90a);
static_assert(il_config<il_in_t, 128, 256, 64>::stage_bytes == 49152,
	      "note smem_stage");
static_assert(il_config<il_in_t, 128, 256, 64>::max_stages == 4,
	      "note max_stages");
#else
#error "gemm_interleaved.cu: tile 128x128x64 or 128x256x64"
#endif
static_assert(il_threads == 256, "note threads");

extern "C" __global__ void __launch_bounds__(il_threads, 1)
	GEMMD_ENTRY(const __grid_constant__ CUtensorMap tma_a,
		    const __grid_constant__ CUtensorMap tma_b,
		    const __grid_constant__ CUtensorMap tma_d,
		    const struct gemm_args args)
{
	il_gemm<il_in_t, GEMMD_BM, GEMMD_BN, GEMMD_BK>(&tma_a, &tma_b, args);
}
