/* SPDX-License-Identifier: MIT */
/*
 * gemm_ws.cu - warp-specialized SM90 GEMM, D = A * B^T ("tn": both
 * operands K-major), bf16/fp16 in and out, fp32 accumulation.
 *
 * One CTA computes one BM x BN tile of D (grid: x walks M tiles, y walks
 * N tiles), with 3 warpgroups:
 *   WG0    producer: one elected thread streams A and B k-tiles with TMA
 *          into a ring of `stages` shared memory slots (run-time depth);
 *   WG1/2  consumers: each owns BM/2 = 64 rows x BN columns, multiplies
 *          with wgmma m64nBNk16 straight from the swizzled slots and
 *          writes its rows of D from registers.
 * Per slot s there is a "full" mbarrier (count 1: the producer's
 * arrive.expect_tx; TMA completes the bytes) and an "empty" one (count 2:
 * one arrival per consumer warpgroup when it no longer reads the slot).
 * Each role keeps (slot, phase) and flips phase when slot wraps; the
 * producer starts at phase 1, so its first pass over the fresh ring does
 * not block.  A consumer keeps one wgmma batch in flight (wait_group 1)
 * and releases a slot one k-tile late, which is why stages >= 2.  The
 * first k-step of a tile runs with scale-d = 0 (no zeroing pass); M, N
 * and K tails come from TMA zero-fill plus masked stores.
 *
 * Shared memory (dynamic, GEMMD_SMEM_FIXED + stages * stage bytes):
 *   full[16] | empty[16] | pad to 1024 | slot 0: A (BM x BK), B (BN x BK)
 *   | slot 1 ... ; every tile 1024-B aligned for the 128B swizzle atoms.
 */
#include "common.cuh"

namespace {

template <typename T, int BM, int BN, int BK> struct ws_config {
	static constexpr int bm = BM, bn = BN, bk = BK;
	static constexpr uint32_t a_bytes = BM * BK * sizeof(T);
	static constexpr uint32_t b_bytes = BN * BK * sizeof(T);
	static constexpr uint32_t stage_bytes = a_bytes + b_bytes;
	static constexpr uint32_t fit =
		(GEMMD_SMEM_LIMIT - GEMMD_SMEM_FIXED) / stage_bytes;
	static constexpr uint32_t max_stages =
		fit < GEMMD_MAX_STAGES ? fit : GEMMD_MAX_STAGES;
	static constexpr int consumers = 2;
	static constexpr int rows_per_wg = BM / consumers;

	static_assert(sizeof(T) == 2, "16-bit inputs");
	static_assert(BK * sizeof(T) == 128, "one 128B swizzle row per k-tile");
	static_assert(rows_per_wg == 64, "one wgmma M=64 per consumer");
	static_assert(a_bytes % 1024 == 0 && b_bytes % 1024 == 0,
		      "tiles must stay 1024-B aligned");
	static_assert(BN <= 256, "TMA box and wgmma N are at most 256");
	static_assert(2 * 8 * GEMMD_MAX_STAGES + 1023 <= GEMMD_SMEM_FIXED,
		      "barriers and alignment slack fit in smem_fixed");
};

/*
 * Tile order.  0 (the default) keeps the launch convention literally:
 * blockIdx.x = M tile, blockIdx.y = N tile.  G > 0 maps the CTAs' linear
 * launch order onto the same (tiles_m, tiles_n) tiles in groups of G
 * N-tile columns, M-major inside a group, so that the CTAs resident at
 * one time share a few B panels in L2 instead of each column streaming
 * all of A.  Measured on an H200 (bf16, 2026-11-21), G = 8 gained 5-15%
 * for 128x128 at 8192^3, lost 2-5% for 128x128 at 4096^3 with 5-7
 * stages, and was within noise for 128x256: not worth bending the
 * convention for yet.  Build with -DGEMMD_WS_GROUP=8 to try it.
 */
#ifndef GEMMD_WS_GROUP
#define GEMMD_WS_GROUP 0
#endif
constexpr uint32_t ws_group = GEMMD_WS_GROUP;

/* Register budgets: 128*40 + 256*232 = 64512 <= 65536. */
constexpr uint32_t producer_regs = 40;
constexpr uint32_t consumer_regs = 232;

struct ws_smem {
	uint32_t full; /* first full barrier; slot s at full + 8*s */
	uint32_t empty;
	uint32_t ring; /* slot 0, 1024-B aligned */
	uint32_t tile_m, tile_n; /* this CTA's tile of D */
};

/* A bijection from the launch order onto the grid's tiles (see ws_group). */
__device__ __forceinline__ void ws_tile(uint32_t &tile_m, uint32_t &tile_n)
{
	const uint32_t tiles_m = gridDim.x, tiles_n = gridDim.y;
	const uint32_t id = blockIdx.x + blockIdx.y * tiles_m;
	const uint32_t span = ws_group * tiles_m;
	uint32_t first, width, r;

	if (ws_group == 0) {
		tile_m = blockIdx.x;
		tile_n = blockIdx.y;
		return;
	}
	first = id / span * ws_group;
	r = id % span;
	/* The last group may be narrower; r < width * tiles_m there. */
	width = min(ws_group, tiles_n - first);
	tile_m = r / width;
	tile_n = first + r % width;
}

template <typename Cfg>
__device__ __forceinline__ void
ws_producer(const ws_smem &sm, const CUtensorMap *tma_a,
	    const CUtensorMap *tma_b, uint32_t stages, uint32_t k_tiles)
{
	const int32_t m0 = sm.tile_m * Cfg::bm;
	const int32_t n0 = sm.tile_n * Cfg::bn;
	uint32_t slot = 0, phase = 1;

	tma_prefetch_desc(tma_a);
	tma_prefetch_desc(tma_b);

#pragma unroll 1
	for (uint32_t kt = 0; kt < k_tiles; kt++) {
		const uint32_t a = sm.ring + slot * Cfg::stage_bytes;
		const uint32_t full = sm.full + 8 * slot;
		const int32_t k0 = kt * Cfg::bk;

		mbar_wait(sm.empty + 8 * slot, phase);
		/* Whole stage, also on edge tiles: TMA counts zero-fill. */
		mbar_arrive_expect_tx(full, Cfg::stage_bytes);
		tma_load_2d(a, tma_a, k0, m0, full);
		tma_load_2d(a + Cfg::a_bytes, tma_b, k0, n0, full);
		if (++slot == stages) {
			slot = 0;
			phase ^= 1;
		}
	}

	/*
	 * Producer tail: wait until the consumers have released every slot
	 * still in flight, so no arrival or TMA write can target this CTA's
	 * shared memory after it starts to exit.
	 */
#pragma unroll 1
	for (uint32_t i = 0; i < stages; i++) {
		mbar_wait(sm.empty + 8 * slot, phase);
		if (++slot == stages) {
			slot = 0;
			phase ^= 1;
		}
	}
}

/*
 * Store v0, v1 at p[0], p[1], of which only the first n_left are inside D.
 * A 32-bit store needs an even element offset: col is even, so that holds
 * unless ldd is odd (pair_ok false).
 */
template <typename T>
__device__ __forceinline__ void store_pair(T *p, int32_t n_left, bool pair_ok,
					   float v0, float v1)
{
	if (n_left >= 2 && pair_ok) {
		*reinterpret_cast<uint32_t *>(p) = gemmd_type<T>::pack2(v0, v1);
	} else if (n_left >= 2) {
		p[0] = gemmd_type<T>::from_float(v0);
		p[1] = gemmd_type<T>::from_float(v1);
	} else if (n_left == 1) {
		p[0] = gemmd_type<T>::from_float(v0);
	}
}

template <typename T, int BN, typename Cfg>
__device__ __forceinline__ void ws_consumer(const ws_smem &sm,
					    const gemm_args &args, int wg,
					    uint32_t stages, uint32_t k_tiles)
{
	constexpr int n_acc = BN / 2;
	const uint32_t tid = threadIdx.x % 128;
	const bool leader = tid == 0;
	/* This warpgroup's 64 rows of A start 64 * 128 B into the A tile. */
	const uint64_t desc_a =
		smem_desc_sw128(sm.ring + wg * Cfg::rows_per_wg * 128);
	const uint64_t desc_b = smem_desc_sw128(sm.ring + Cfg::a_bytes);
	float acc[n_acc];
	uint32_t slot = 0, phase = 0, prev = 0;

#pragma unroll 1
	for (uint32_t kt = 0; kt < k_tiles; kt++) {
		/* Descriptor start addresses are in 16-B units. */
		const uint64_t off = (slot * Cfg::stage_bytes) >> 4;

		mbar_wait(sm.full + 8 * slot, phase);
		wgmma_fence_acc(acc);
		wgmma_fence();
#pragma unroll
		for (int kk = 0; kk < Cfg::bk / 16; kk++)
			wgmma_m64k16<T, BN>(acc, desc_a + off + 2 * kk,
					    desc_b + off + 2 * kk,
					    (kt | kk) != 0);
		wgmma_commit();
		wgmma_fence_acc(acc);
		/*
		 * Keep this k-tile's batch in flight; the previous one has
		 * finished reading its slot, which can be refilled now.
		 */
		wgmma_wait<1>();
		wgmma_fence_acc(acc);
		if (kt > 0 && leader)
			mbar_arrive(sm.empty + 8 * prev);
		prev = slot;
		if (++slot == stages) {
			slot = 0;
			phase ^= 1;
		}
	}
	wgmma_wait<0>();
	wgmma_fence_acc(acc);
	if (leader)
		mbar_arrive(sm.empty + 8 * prev);

	/*
	 * Epilogue straight from the accumulator layout of m64nNk16: warp w
	 * of the warpgroup holds rows 16w + lane/4 (+8); register 4j + {0,1}
	 * holds columns 8j + 2*(lane%4) + {0,1} of the first row, 4j + {2,3}
	 * the same columns 8 rows below.
	 */
	{
		const uint32_t warp = tid / 32, lane = tid % 32;
		const uint32_t row = sm.tile_m * Cfg::bm +
				     wg * Cfg::rows_per_wg + warp * 16 +
				     lane / 4;
		const uint32_t col = sm.tile_n * BN + 2 * (lane % 4);
		const bool pair_ok = (args.ldd & 1) == 0;
		const int32_t n_left = static_cast<int32_t>(args.n - col);
		T *p = reinterpret_cast<T *>(args.d) +
		       static_cast<uint64_t>(row) * args.ldd + col;
		T *p8 = p + 8 * static_cast<uint64_t>(args.ldd);

		if (row < args.m) {
#pragma unroll
			for (int j = 0; j < n_acc / 4; j++)
				store_pair(p + 8 * j, n_left - 8 * j, pair_ok,
					   acc[4 * j + 0], acc[4 * j + 1]);
		}
		if (row + 8 < args.m) {
#pragma unroll
			for (int j = 0; j < n_acc / 4; j++)
				store_pair(p8 + 8 * j, n_left - 8 * j, pair_ok,
					   acc[4 * j + 2], acc[4 * j + 3]);
		}
	}
}

template <typename T, int BM, int BN, int BK>
__device__ __forceinline__ void ws_gemm(const CUtensorMap *tma_a,
					const CUtensorMap *tma_b,
					const gemm_args &args)
{
	using Cfg = ws_config<T, BM, BN, BK>;
	extern __shared__ __align__(16) uint8_t smem[];
	const uint32_t base = smem_u32(smem);
	const uint32_t stages = args.stages;
	const uint32_t k_tiles = (args.k + BK - 1) / BK;
	const int wg = threadIdx.x / 128;
	ws_smem sm;

	sm.full = base;
	sm.empty = base + 8 * GEMMD_MAX_STAGES;
	sm.ring = (base + 16 * GEMMD_MAX_STAGES + 1023) & ~1023u;
	ws_tile(sm.tile_m, sm.tile_n);

	if (threadIdx.x == 0) {
		/*
		 * A mis-planned launch must not run off shared memory; and
		 * the consumers release a slot one k-tile late, so a ring
		 * of one would deadlock.
		 */
		if (stages < 2 || stages > Cfg::max_stages ||
		    sm.ring + stages * Cfg::stage_bytes >
			    base + dynamic_smem_size())
			__trap();
		for (uint32_t s = 0; s < stages; s++) {
			mbar_init(sm.full + 8 * s, 1);
			mbar_init(sm.empty + 8 * s, Cfg::consumers);
		}
		fence_mbarrier_init();
	}
	__syncthreads();

	if (wg == 0) {
		setmaxnreg_dec<producer_regs>();
		if (threadIdx.x / 32 == 0 && elect_one())
			ws_producer<Cfg>(sm, tma_a, tma_b, stages, k_tiles);
	} else {
		setmaxnreg_inc<consumer_regs>();
		ws_consumer<T, BN, Cfg>(sm, args, wg - 1, stages, k_tiles);
	}
}

} /* namespace */

/*
 * One entry point and catalog note per (dtype, tile).  The note's numbers
 * are literals (they are pasted into a string), checked here against what
 * the kernel computes.
 */
#define GEMMD_WS_ENTRY(dtype, T, bm, bn, bk, stage, nmax)                      \
	static_assert(ws_config<T, bm, bn, bk>::stage_bytes == stage,          \
		      "note smem_stage");                                      \
	static_assert(ws_config<T, bm, bn, bk>::max_stages == nmax,            \
		      "note max_stages");                                      \
	GEMMD_WS_NOTE(gemmd_ws_##dtype##_tn_##bm##x##bn##x##bk, dtype, bm, bn, \
		      bk, stage, nmax);                                        \
	extern "C" __global__ void __launch_bounds__(GEMMD_WS_THREADS, 1)      \
		gemmd_ws_##dtype##_tn_##bm##x##bn##x##bk(                      \
			const __grid_constant__ CUtensorMap tma_a,             \
			const __grid_constant__ CUtensorMap tma_b,             \
			const struct gemm_args args)                           \
	{                                                                      \
		ws_gemm<T, bm, bn, bk>(&tma_a, &tma_b, args);                  \
	}

GEMMD_WS_ENTRY(bf16, __nv_bfloat16, 128, 128, 64, 32768, 7)
GEMMD_WS_ENTRY(bf16, __nv_bfloat16, 128, 256, 64, 49152, 4)
GEMMD_WS_ENTRY(fp16, __half, 128, 128, 64, 32768, 7)
GEMMD_WS_ENTRY(fp16, __half, 128, 256, 64, 49152, 4)
