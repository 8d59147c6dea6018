/* SPDX-License-Identifier: MIT */
/*
 * gemm_multistage.cu - SM80-style multistage GEMM (CUTLASS 2.x
 * MmaMultistage), D = alpha * A * B^T + beta * C ("tn": A row-major M x K,
 * B stored N x K), bf16/fp16 in, fp32 accumulation, bf16/fp16/fp32 out.
 * No TMA, no wgmma, no clusters: the same code runs on sm_80 and sm_90a.
 *
 * One CTA of 256 threads computes one BM x BN = 128 x 128 tile of D (the
 * tile of work unit blockIdx.x, kernels/sched.cuh).  The 8 warps form a
 * 2 (M) x 4 (N) grid of 64 x 32 warp tiles; a warp tile is 4 x 4
 * mma.sync m16n8k16 tiles, 64 fp32 accumulators per thread.
 *
 * Main loop: a ring of `stages` (run-time) shared memory slots, each one
 * k-tile of A (BM x BK) and B (BN x BK), filled with 16-byte
 * cp.async.cg.  k-tiles 0 .. stages-2 are issued up front, one commit
 * group per k-tile; k-tile kt + stages - 1 is issued at the first k-step
 * of k-tile kt into the slot k-tile kt - 1 has left.  Exactly one group
 * is committed per k-tile (empty past the end of K), so waiting until at
 * most stages - 2 groups are pending means k-tile kt + 1 has landed.
 * That wait and one __syncthreads() per k-tile come at the last k-step,
 * once its fragments are in registers: past the barrier no thread reads
 * the slot of k-tile kt any more, which is what lets the next k-tile's
 * copies overwrite it.  With stages = 2 the copy of k-tile kt + 1
 * overlaps only the first k-step of kt: correct, but deeper rings are
 * what this schedule is for (3-4 are best at 4096^3 on an H200; from 7
 * on, one CTA per SM is left and it is a third slower).
 *
 * The warp fragments are double-buffered on sm_90a: the ldmatrix of
 * k-step kk + 1 (or, past the barrier, of the next k-tile's first
 * k-step) is issued before the mma.sync of k-step kk.  That and two CTAs
 * per SM take exactly the 128 registers a thread has then; see bufs.
 *
 * Shared memory (dynamic, GEMMD_SMEM_FIXED + stages * 16 KiB): the ring
 * starts at the window rounded up to 128 B (the fixed part is only slack
 * here); slot s = A tile (BM rows of BK * 2 = 64 B) then B tile (BN rows).
 * A row's four 16-B chunks are XOR-swizzled with bits 1-2 of the row, so
 * the 8 row addresses of one ldmatrix 8x8 matrix (8 consecutive rows, one
 * chunk column) hit 8 different 16-B bank groups: conflict-free.
 *
 * Edges: rows of A and B outside M and N, and 16-B chunks past K (K is a
 * multiple of 8), are zero-filled by cp.async with src-size 0; stores of
 * D are masked per element.
 */
#include "common.cuh"
#include "sched.cuh"
#include "sm80.cuh"

/* ---- which entry this translation unit builds ----------------------------- */

#define MS_IS_multistage 1
#define MS_IS_tn 1

#if !SM80_CAT(MS_IS_, GEMMD_SCHED)
#error "gemm_multistage.cu builds -DGEMMD_SCHED=multistage"
#endif
#if !SM80_CAT(MS_IS_, GEMMD_LAYOUT)
#error "gemm_multistage.cu builds -DGEMMD_LAYOUT=tn only"
#endif

/*
 * The catalog note's numbers must be literal tokens: one row per tile
 * this source is built for, checked against ms_config below.
 */
#if GEMMD_BM == 128 && GEMMD_BN == 128 && GEMMD_BK == 32
#define MS_THREADS 256
#define MS_STAGE_BYTES 16384
#define MS_MIN_STAGES 2
#define MS_MAX_STAGES 14
#else
#error "gemm_multistage.cu: no catalog row for this tile"
#endif

namespace {

/* ---- SM80 PTX: cp.async (ldmatrix, mma.sync: sm80.cuh) ------------------ */

/*
 * 16-byte global->shared copy through L2 only (.cg); the src_bytes that
 * are not read (all 16 when src_bytes is 0) are written as zeros.
 */
GEMMD_DEV void cp_async_16(uint32_t dst, const void *src, uint32_t src_bytes)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
		     :
		     : "r"(dst), "l"(src), "r"(src_bytes)
		     : "memory");
}

GEMMD_DEV void cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int N> GEMMD_DEV void cp_async_wait(void)
{
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/*
 * Wait until at most n groups are pending.  wait_group takes an
 * immediate and the ring depth is a run-time argument, so walk up from
 * the shallow (common) depths; n is uniform, the branches do not diverge.
 */
template <int N, int Max> GEMMD_DEV void cp_async_wait_n(uint32_t n)
{
	if constexpr (N < Max) {
		if (n <= N)
			cp_async_wait<N>();
		else
			cp_async_wait_n<N + 1, Max>(n);
	} else {
		cp_async_wait<N>();
	}
}

/* ---- configuration ------------------------------------------------------- */

template <typename T, int BM, int BN, int BK>
struct ms_config : sm80_config<T, BM, BN, BK> {
	static constexpr uint32_t min_stages = 2;
	/* The ring starts up to 127 B into the window: inside smem_fixed. */
	static constexpr uint32_t max_stages =
		gemmd_stages_that_fit(sm80_config<T, BM, BN, BK>::stage_bytes);
};

/*
 * This thread's part of the k-tile copies (see sm80_copy), issued as
 * cp.async straight into the ring.
 */
template <typename T, typename Cfg> struct ms_loader : sm80_copy<T, Cfg> {
	/* Issue the copies of the next k-tile into the slot at `slot`. */
	__device__ __forceinline__ void issue(const gemm_args &args,
					      uint32_t slot)
	{
		const T *dummy = reinterpret_cast<const T *>(args.a);
		const uint32_t ok = this->live();

#pragma unroll
		for (int i = 0; i < Cfg::a_passes; i++)
			cp_async_16(slot + this->sts + i * Cfg::pass_bytes,
				    ok >> i & 1 ? this->a_src(args, i) : dummy,
				    ok >> i & 1 ? 16 : 0);
#pragma unroll
		for (int i = 0; i < Cfg::b_passes; i++)
			cp_async_16(slot + Cfg::a_bytes + this->sts +
					    i * Cfg::pass_bytes,
				    ok >> (16 + i) & 1 ? this->b_src(args, i) :
							 dummy,
				    ok >> (16 + i) & 1 ? 16 : 0);
		this->advance();
	}
};

/* ---- the kernel ---------------------------------------------------------- */

/* Until k-tile kt + 1 has landed: at most stages - 2 groups pending. */
template <typename Cfg>
__device__ __forceinline__ void ms_ring_wait(uint32_t stages)
{
	cp_async_wait_n<0, Cfg::max_stages - 2>(stages - 2);
}

/*
 * Warp fragment buffers.  2: the ldmatrix of the next k-step is issued
 * before the mma.sync of this one (CUTLASS's warp-fragment double
 * buffer).  1: after it, its latency left to the other warps.  Either way
 * two CTAs (16 warps) per SM, 128 registers a thread, which the 64
 * accumulators and 2 x 24 fragment registers just fit on sm_90a.  There,
 * with 3-4 stages, 2 buffers ran 394 TFLOP/s on an H200 (bf16 4096^3),
 * 1 buffer 358, and 2 buffers with one CTA per SM (146 registers) 325.
 * sm_80's ptxas spills 8 bytes with 2 buffers in 128 registers, so an
 * sm_80 build takes 1 (118 registers, no spills) unless told otherwise.
 */
#ifndef GEMMD_MS_FRAG_BUFS
#if __CUDA_ARCH__ >= 900
#define GEMMD_MS_FRAG_BUFS 2
#else
#define GEMMD_MS_FRAG_BUFS 1
#endif
#endif
#ifndef GEMMD_MS_MIN_BLOCKS
#define GEMMD_MS_MIN_BLOCKS 2
#endif
constexpr int bufs = GEMMD_MS_FRAG_BUFS;
static_assert(bufs == 1 || bufs == 2, "one or two fragment buffers");

/*
 * Unguarded: the fault-injection test's race (GEMMD_FAULT_EARLY_RELEASE),
 * the CTA barrier between k-tiles left out, in an entry of its own
 * (GEMMD_FAULT_ENTRY_SUFFIX): at 128 registers even a branch never taken
 * in the k-loop cost the real entry 1-4 % (docs/perf.md, session 36,
 * runs 2-3).
 */
template <typename T, typename Cfg, bool Unguarded>
__device__ __forceinline__ void ms_gemm(const gemm_args &args)
{
	extern __shared__ __align__(16) uint8_t smem[];
	const uint32_t base = smem_u32(smem);
	const uint32_t ring = (base + 127) & ~127u;
	const uint32_t stages = args.stages;
	const uint32_t k_tiles = (args.k + Cfg::bk - 1) / Cfg::bk;
	const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
	struct gemmd_sched s;
	ms_loader<T, Cfg> ld;
	sm80_warp<T, Cfg> wf;
	float acc[Cfg::mi][Cfg::ni][4];
	uint32_t fa[bufs][Cfg::mi][4], fb[bufs][Cfg::ni][2];
	uint32_t tile_m, tile_n;
	/*
	 * Slots of k-tiles kt and kt + stages - 1.  wr is always rd - 1
	 * (mod stages), but deriving it at the issue instead of keeping it
	 * cost 10% on the H200 (353 against 394 TFLOP/s): at exactly 128
	 * registers the ptxas schedule is that fragile.
	 */
	uint32_t rd, wr;

	/*
	 * A mis-planned launch must not run off shared memory or issue
	 * misaligned 16-B copies (the planner keeps k, lda, ldb multiples
	 * of 8 and the bases 16-B aligned).
	 */
	if (stages < Cfg::min_stages || stages > Cfg::max_stages ||
	    ring + stages * Cfg::stage_bytes > base + dynamic_smem_size() ||
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
	 * Prologue: k-tiles 0 .. stages-2 in flight, one group each.  In
	 * the main loop `left` = k_tiles - kt, the k-tiles from kt on.
	 */
#pragma unroll 1
	for (uint32_t kt = 0; kt < stages - 1; kt++) {
		if (kt < k_tiles)
			ld.issue(args, ring + kt * Cfg::stage_bytes);
		cp_async_commit();
	}
	ms_ring_wait<Cfg>(stages);
	__syncthreads();
	wf.load(ring, 0, fa[0], fb[0]);
	rd = 0;
	wr = stages - 1;

#pragma unroll 1
	for (uint32_t left = k_tiles; left > 0; left--) {
#pragma unroll
		for (int kk = 0; kk < Cfg::ksteps; kk++) {
			const bool last = kk == Cfg::ksteps - 1;
			const int cur = kk % bufs, nxt = (kk + 1) % bufs;

			if (kk == 0) {
				/* Into the slot k-tile kt - 1 has left. */
				if (left >= stages)
					ld.issue(args,
						 ring + wr * Cfg::stage_bytes);
				cp_async_commit();
				wr = wr + 1 == stages ? 0 : wr + 1;
			}
			if (bufs == 1)
				sm80_mma<T, Cfg>(acc, fa[cur], fb[cur]);
			if (last) {
				/* k-tile kt + 1 has landed, kt is drained. */
				ms_ring_wait<Cfg>(stages);
				if (!Unguarded)
					__syncthreads();
				rd = rd + 1 == stages ? 0 : rd + 1;
			}
			if (!last || left > 1)
				wf.load(ring + rd * Cfg::stage_bytes,
					(kk + 1) % Cfg::ksteps, fa[nxt],
					fb[nxt]);
			if (bufs == 2)
				sm80_mma<T, Cfg>(acc, fa[cur], fb[cur]);
		}
	}
	/* Only empty groups can be left; nothing may land after exit. */
	cp_async_wait<0>();

	sm80_epilogue<Cfg>(args, acc, tile_m, tile_n, warp, lane);
}

using ms_elem = SM80_CAT(SM80_ELEM_, GEMMD_DTYPE);
using ms_cfg = ms_config<ms_elem, GEMMD_BM, GEMMD_BN, GEMMD_BK>;

static_assert(ms_cfg::threads == MS_THREADS, "note threads");
static_assert(ms_cfg::stage_bytes == MS_STAGE_BYTES, "note smem_stage");
static_assert(ms_cfg::min_stages == MS_MIN_STAGES, "note min_stages");
static_assert(ms_cfg::max_stages == MS_MAX_STAGES, "note max_stages");
static_assert(GEMMD_SMEM_FIXED + MS_MAX_STAGES * MS_STAGE_BYTES <=
		      GEMMD_SMEM_LIMIT,
	      "deepest ring fits");

} /* namespace */

/* The arguments expand to literal tokens before the note pastes them. */
GEMMD_KERNEL_NOTE(GEMMD_ENTRY, multistage, GEMMD_DTYPE, tn, GEMMD_BM, GEMMD_BN,
		  GEMMD_BK, MS_THREADS, MS_STAGE_BYTES, MS_MIN_STAGES,
		  MS_MAX_STAGES, 1, 0, 0, 0, "direct", 0, sm_80);

#define MS_ENTRY(name, unguarded)                                         \
	extern "C" __global__ void __launch_bounds__(MS_THREADS,          \
						     GEMMD_MS_MIN_BLOCKS) \
		name(const __grid_constant__ CUtensorMap tma_a,           \
		     const __grid_constant__ CUtensorMap tma_b,           \
		     const __grid_constant__ CUtensorMap tma_d,           \
		     const struct gemm_args args)                         \
	{                                                                 \
		ms_gemm<ms_elem, ms_cfg, unguarded>(args);                \
	}

MS_ENTRY(GEMMD_ENTRY, false)
MS_ENTRY(SM80_CAT(GEMMD_ENTRY, _unguarded), true)
