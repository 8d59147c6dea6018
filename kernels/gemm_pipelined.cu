/* SPDX-License-Identifier: MIT */
/*
 * gemm_pipelined.cu - SM80-style two-stage GEMM (CUTLASS 2.x
 * MmaPipelined), D = alpha * A * B^T + beta * C ("tn": A row-major M x K,
 * B stored N x K), bf16/fp16 in, fp32 accumulation, bf16/fp16/fp32 out.
 * No cp.async, TMA, wgmma or clusters: the same code runs on sm_80 and
 * sm_90a (and would on sm_75 but for bf16).
 *
 * One CTA of 256 threads computes one BM x BN = 128 x 128 tile of D (the
 * tile of work unit blockIdx.x, kernels/sched.cuh).  The 8 warps form a
 * 2 (M) x 4 (N) grid of 64 x 32 warp tiles; a warp tile is 4 x 4
 * mma.sync m16n8k16 tiles, 64 fp32 accumulators per thread.
 *
 * Main loop (the register double buffer): two shared memory slots.  At
 * the first k-step of k-tile kt every thread loads its share of k-tile
 * kt + 1 from global memory into registers (ld.global 16 B, zeros outside
 * A and B) and goes on computing k-tile kt from its slot; after the last
 * k-step's mma.sync it stores those registers into the other slot, one
 * __syncthreads() publishes them, and the first fragments of k-tile
 * kt + 1 are loaded.  The other slot was last read in k-tile kt - 1,
 * before the previous barrier, so one barrier per k-tile is enough.  The
 * global loads have the whole k-tile's mma.sync work to land in; the
 * store comes after the last mma.sync, not before it as in CUTLASS, so
 * that a store waiting on a late load does not hold up those mma.sync.
 * That work is short (BK = 32, 8 warps per SM, see bufs): on an H200,
 * bf16 4096^3 ran 154 TFLOP/s, against 394 for the multistage kernel
 * with 3-4 stages.  Exposed global latency is what this schedule costs.
 *
 * Shared memory (dynamic, GEMMD_SMEM_FIXED + 2 * 16 KiB): the ring
 * starts at the window rounded up to 128 B (the fixed part is only slack
 * here); slot s = A tile (BM rows of BK * 2 = 64 B) then B tile (BN rows).
 * A row's four 16-B chunks are XOR-swizzled with bits 1-2 of the row, so
 * the 8 row addresses of one ldmatrix 8x8 matrix (8 consecutive rows, one
 * chunk column) hit 8 different 16-B bank groups: conflict-free.
 *
 * Edges: rows of A and B outside M and N, and 16-B chunks past K (K is a
 * multiple of 8), are loaded as zeros; stores of D are masked per element.
 */
#include "common.cuh"
#include "sched.cuh"
#include "sm80.cuh"

/* ---- which entry this translation unit builds ----------------------------- */

#define PL_IS_pipelined 1
#define PL_IS_tn 1

#if !SM80_CAT(PL_IS_, GEMMD_SCHED)
#error "gemm_pipelined.cu builds -DGEMMD_SCHED=pipelined"
#endif
#if !SM80_CAT(PL_IS_, GEMMD_LAYOUT)
#error "gemm_pipelined.cu builds -DGEMMD_LAYOUT=tn only"
#endif

/*
 * The catalog note's numbers must be literal tokens: one row per tile
 * this source is built for, checked against pl_config below.
 */
#if GEMMD_BM == 128 && GEMMD_BN == 128 && GEMMD_BK == 32
#define PL_THREADS 256
#define PL_STAGE_BYTES 16384
#define PL_MIN_STAGES 2
#define PL_MAX_STAGES 2
#else
#error "gemm_pipelined.cu: no catalog row for this tile"
#endif

namespace {

/* ---- SM80 PTX: st.shared (ldmatrix, mma.sync: sm80.cuh) ----------------- */

GEMMD_DEV void sts_128(uint32_t addr, const uint4 &v)
{
	asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};"
		     :
		     : "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
		     : "memory");
}

/* 16 bytes from global memory through the read-only path. */
GEMMD_DEV uint4 ldg_128(const void *p)
{
	return __ldg(reinterpret_cast<const uint4 *>(p));
}

/* ---- configuration ------------------------------------------------------- */

template <typename T, int BM, int BN, int BK>
struct pl_config : sm80_config<T, BM, BN, BK> {
	/* Two slots, the register double buffer's fixed depth. */
	static constexpr uint32_t min_stages = 2;
	static constexpr uint32_t max_stages = 2;
};

/*
 * This thread's part of the k-tile copies (see sm80_copy), through the
 * registers ra / rb, which come on top of the accumulators and the
 * fragments.
 */
template <typename T, typename Cfg> struct pl_loader : sm80_copy<T, Cfg> {
	uint4 ra[Cfg::a_passes], rb[Cfg::b_passes];

	/* Global -> registers: the next k-tile, zeros outside A and B. */
	__device__ __forceinline__ void fetch(const gemm_args &args)
	{
		const uint32_t ok = this->live();

#pragma unroll
		for (int i = 0; i < Cfg::a_passes; i++)
			ra[i] = ok >> i & 1 ? ldg_128(this->a_src(args, i)) :
					      make_uint4(0, 0, 0, 0);
#pragma unroll
		for (int i = 0; i < Cfg::b_passes; i++)
			rb[i] = ok >> (16 + i) & 1 ?
					ldg_128(this->b_src(args, i)) :
					make_uint4(0, 0, 0, 0);
		this->advance();
	}

	/* Registers -> the slot at `slot`. */
	__device__ __forceinline__ void store(uint32_t slot) const
	{
#pragma unroll
		for (int i = 0; i < Cfg::a_passes; i++)
			sts_128(slot + this->sts + i * Cfg::pass_bytes, ra[i]);
#pragma unroll
		for (int i = 0; i < Cfg::b_passes; i++)
			sts_128(slot + Cfg::a_bytes + this->sts +
					i * Cfg::pass_bytes,
				rb[i]);
	}
};

/* ---- the kernel ---------------------------------------------------------- */

/*
 * Warp fragment buffers.  2 (the default): the ldmatrix of k-step kk + 1
 * is issued before the mma.sync of kk, as in CUTLASS.  1: after it, the
 * latency left to the other warps.  The 16 staging registers come on top
 * of the 64 accumulators either way, so neither fits the 128 registers
 * of two CTAs per SM without spilling (152 and 143 registers on sm_90a):
 * one CTA (8 warps) per SM.  1 ran 2% faster on the H200; 2 is kept as
 * the schedule this kernel stands for.
 */
#ifndef GEMMD_PL_FRAG_BUFS
#define GEMMD_PL_FRAG_BUFS 2
#endif
constexpr int bufs = GEMMD_PL_FRAG_BUFS;
static_assert(bufs == 1 || bufs == 2, "one or two fragment buffers");
#ifndef GEMMD_PL_MIN_BLOCKS
#define GEMMD_PL_MIN_BLOCKS 1
#endif

template <typename T, typename Cfg>
__device__ __forceinline__ void pl_gemm(const gemm_args &args)
{
	extern __shared__ __align__(16) uint8_t smem[];
	const uint32_t base = smem_u32(smem);
	const uint32_t ring = (base + 127) & ~127u;
	const uint32_t k_tiles = (args.k + Cfg::bk - 1) / Cfg::bk;
	const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	struct gemmd_sched s;
	pl_loader<T, Cfg> ld;
	sm80_warp<T, Cfg> wf;
	float acc[Cfg::mi][Cfg::ni][4];
	uint32_t fa[bufs][Cfg::mi][4], fb[bufs][Cfg::ni][2];
	uint32_t tile_m, tile_n;
	uint32_t rd; /* byte offset of the slot being read: 0 or stage */

	/*
	 * A mis-planned launch must not run off shared memory or load
	 * misaligned 16-B vectors (the planner keeps k, lda, ldb multiples
	 * of 8 and the bases 16-B aligned).
	 */
	if (args.stages != 2 ||
	    ring + 2 * Cfg::stage_bytes > base + dynamic_smem_size() ||
	    args.out > GEMMD_OUT_FP32 || ((args.k | args.lda | args.ldb) & 7) ||
	    ((args.a | args.b) & 15))
		__trap();

	gemmd_sched_init(s, args, Cfg::bm, Cfg::bn);
	if (!gemmd_sched_tile(s, blockIdx.x, 0, 0, tile_m, tile_n))
		return;

	ld.init(args, tile_m, tile_n);
	wf.init(warp, lane);
	sm80_zero<Cfg>(acc);

	/*
	 * Prologue: k-tile 0 through the registers into slot 0.  In the
	 * main loop `left` = k_tiles - kt, the k-tiles from kt on.
	 */
	if (k_tiles > 0) {
		ld.fetch(args);
		ld.store(ring);
	}
	__syncthreads();
	wf.load(ring, 0, fa[0], fb[0]);
	rd = 0;

#pragma unroll 1
	for (uint32_t left = k_tiles; left > 0; left--) {
#pragma unroll
		for (int kk = 0; kk < Cfg::ksteps; kk++) {
			const int cur = kk % bufs, nxt = (kk + 1) % bufs;

			if (kk == 0 && left > 1)
				ld.fetch(args);
			if (kk < Cfg::ksteps - 1) {
				if (bufs == 2)
					wf.load(ring + rd, kk + 1, fa[nxt],
						fb[nxt]);
				sm80_mma<T, Cfg>(acc, fa[cur], fb[cur]);
				if (bufs == 1)
					wf.load(ring + rd, kk + 1, fa[nxt],
						fb[nxt]);
				continue;
			}
			sm80_mma<T, Cfg>(acc, fa[cur], fb[cur]);
			if (left > 1) {
				/*
				 * The other slot was last read in the previous
				 * k-tile, before the previous barrier.
				 */
				rd ^= Cfg::stage_bytes;
				ld.store(ring + rd);
				/* Not in the fault test's race (gemm-abi.h). */
				if (!(args.fault & GEMMD_FAULT_EARLY_RELEASE))
					__syncthreads();
				wf.load(ring + rd, 0, fa[nxt], fb[nxt]);
			}
		}
	}

	sm80_epilogue<Cfg>(args, acc, tile_m, tile_n, warp, lane);
}

using pl_elem = SM80_CAT(SM80_ELEM_, GEMMD_DTYPE);
using pl_cfg = pl_config<pl_elem, GEMMD_BM, GEMMD_BN, GEMMD_BK>;

static_assert(pl_cfg::threads == PL_THREADS, "note threads");
static_assert(pl_cfg::stage_bytes == PL_STAGE_BYTES, "note smem_stage");
static_assert(pl_cfg::min_stages == PL_MIN_STAGES, "note min_stages");
static_assert(pl_cfg::max_stages == PL_MAX_STAGES, "note max_stages");
static_assert(GEMMD_SMEM_FIXED + PL_MAX_STAGES * PL_STAGE_BYTES <=
		      GEMMD_SMEM_LIMIT,
	      "both slots fit");
static_assert((PL_STAGE_BYTES & (PL_STAGE_BYTES - 1)) == 0,
	      "rd ^= stage_bytes flips between the slots");

} /* namespace */

/* The arguments expand to literal tokens before the note pastes them. */
GEMMD_KERNEL_NOTE(GEMMD_ENTRY, pipelined, GEMMD_DTYPE, tn, GEMMD_BM, GEMMD_BN,
		  GEMMD_BK, PL_THREADS, PL_STAGE_BYTES, PL_MIN_STAGES,
		  PL_MAX_STAGES, 1, 0, 0, 0, "direct", 0, sm_80);

extern "C" __global__ void __launch_bounds__(PL_THREADS, GEMMD_PL_MIN_BLOCKS)
	GEMMD_ENTRY(const __grid_constant__ CUtensorMap tma_a,
		    const __grid_constant__ CUtensorMap tma_b,
		    const __grid_constant__ CUtensorMap tma_d,
		    const struct gemm_args args)
{
	pl_gemm<pl_elem, pl_cfg>(args);
}
