/* SPDX-License-Identifier: MIT */
/*
 * common.cuh - SM90 PTX helpers for the gemmd kernels, and the catalog
 * note macro.
 *
 * Everything here is a thin inline-asm wrapper over one PTX instruction
 * (or a short fixed sequence); the PTX ISA sections are named in the
 * comments.  Shared memory operands are 32-bit shared-window addresses
 * (smem_u32()), as the .shared::cta / .shared::cluster forms expect.
 */
#pragma once

#include <stdint.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gemm-abi.h"

#define GEMMD_DEV static __device__ __forceinline__

/* ---- catalog notes ------------------------------------------------------- */

#define GEMMD_STR_(x) #x
#define GEMMD_STR(x) GEMMD_STR_(x)

/*
 * The note the supervisor reads from the cubin's ELF, without a GPU: an
 * extern "C" device string named gemmd_meta_<entry> (kept by nvcc as an
 * OBJECT symbol in .nv.global.init).  Keys:
 *   schedule    ws, cooperative, pingpong, interleaved, multistage,
 *               pipelined
 *   dtype, layout, tile (BMxBNxBK), threads (block size)
 *   smem_fixed, smem_stage   dynamic smem for S stages is smem_fixed +
 *               S * smem_stage (+ smem_epilogue with the TMA epilogue;
 *               0 where the kernel has none)
 *   min_stages, max_stages
 *   cluster     the largest cluster (x * y CTAs) the kernel accepts
 *   persistent  1: the grid is sized by occupancy, not by the tile count
 *   pdl         1: waits for the launch before it (griddepcontrol), so a
 *               job may launch it with programmatic dependent launch
 *   epilogue    the epilogue modes it has, comma-separated
 *   out         the output types it has, comma-separated
 *   arch        the oldest architecture its code would run on
 * Arguments must be literal tokens: they are pasted into the string, so
 * the instantiating code static_asserts that they match the values the
 * kernel computes.
 */
/* clang-format off */
#define GEMMD_KERNEL_NOTE(...) GEMMD_KERNEL_NOTE_(__VA_ARGS__)
#define GEMMD_KERNEL_NOTE_(entry, sched, dtype, layout, bm, bn, bk, threads,  \
			  smem_stage, min_stages, max_stages, cluster,        \
			  persistent, pdl, placement, epilogues,              \
			  smem_epilogue, arch)                                \
	extern "C" __device__ const char gemmd_meta_##entry[] =              \
		"kernel=" #entry " schedule=" #sched " dtype=" #dtype        \
		" layout=" #layout " tile=" #bm "x" #bn "x" #bk              \
		" threads=" #threads                                         \
		" smem_fixed=" GEMMD_STR(GEMMD_SMEM_FIXED)                   \
		" smem_stage=" #smem_stage " min_stages=" #min_stages        \
		" max_stages=" #max_stages " cluster=" #cluster              \
		" persistent=" #persistent " pdl=" #pdl                      \
		" placement=" #placement                                     \
		" epilogue=" epilogues                                       \
		" smem_epilogue=" #smem_epilogue                             \
		" out=bf16,fp16,fp32 arch=" #arch
/* clang-format on */

/*
 * One kernel per translation unit: the build compiles a kernel source
 * once per entry, naming it with -DGEMMD_SCHED=cooperative
 * -DGEMMD_DTYPE=bf16 -DGEMMD_LAYOUT=tn -DGEMMD_BM=128 -DGEMMD_BN=256
 * -DGEMMD_BK=64 (see Makefile.am), and the source defines the one entry
 * GEMMD_ENTRY = gemmd_cooperative_bf16_tn_128x256x64 with its note.
 */
#define GEMMD_NAME_(s, d, l, m, n, k) gemmd_##s##_##d##_##l##_##m##x##n##x##k
#define GEMMD_NAME(s, d, l, m, n, k) GEMMD_NAME_(s, d, l, m, n, k)
#define GEMMD_ENTRY                                                            \
	GEMMD_NAME(GEMMD_SCHED, GEMMD_DTYPE, GEMMD_LAYOUT, GEMMD_BM, GEMMD_BN, \
		   GEMMD_BK)

/*
 * The deepest ring of stage_bytes stages that fits in the opt-in shared
 * memory beside the fixed part, and within the GEMMD_MAX_STAGES barrier
 * pairs: a kernel's max_stages, and its catalog note's.
 */
constexpr uint32_t gemmd_stages_that_fit(uint32_t stage_bytes)
{
	return (GEMMD_SMEM_LIMIT - GEMMD_SMEM_FIXED) / stage_bytes <
			       GEMMD_MAX_STAGES ?
		       (GEMMD_SMEM_LIMIT - GEMMD_SMEM_FIXED) / stage_bytes :
		       GEMMD_MAX_STAGES;
}

/* ---- element types ------------------------------------------------------- */

template <typename A, typename B> struct gemmd_same {
	static constexpr bool value = false;
};
template <typename A> struct gemmd_same<A, A> {
	static constexpr bool value = true;
};

template <typename T> struct gemmd_type;

template <> struct gemmd_type<__nv_bfloat16> {
	/* gemm_args.out of this type */
	static constexpr uint32_t out = GEMMD_OUT_BF16;

	GEMMD_DEV float to_float(uint16_t bits)
	{
		return __bfloat162float(__ushort_as_bfloat16(bits));
	}
	GEMMD_DEV __nv_bfloat16 from_float(float x)
	{
		return __float2bfloat16_rn(x);
	}
	/* Two values packed low address first, for one 32-bit store. */
	GEMMD_DEV uint32_t pack2(float lo, float hi)
	{
		__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);

		return *reinterpret_cast<uint32_t *>(&v);
	}
};

template <> struct gemmd_type<__half> {
	static constexpr uint32_t out = GEMMD_OUT_FP16;

	GEMMD_DEV float to_float(uint16_t bits)
	{
		return __half2float(__ushort_as_half(bits));
	}
	GEMMD_DEV __half from_float(float x)
	{
		return __float2half_rn(x);
	}
	GEMMD_DEV uint32_t pack2(float lo, float hi)
	{
		__half2 v = __floats2half2_rn(lo, hi);

		return *reinterpret_cast<uint32_t *>(&v);
	}
};

template <> struct gemmd_type<float> {
	static constexpr uint32_t out = GEMMD_OUT_FP32;

	GEMMD_DEV float to_float(uint32_t bits)
	{
		return __uint_as_float(bits);
	}
	GEMMD_DEV float from_float(float x)
	{
		return x;
	}
};

/* ---- shared memory, special registers, election -------------------------- */

GEMMD_DEV uint32_t smem_u32(const void *p)
{
	return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

GEMMD_DEV uint32_t dynamic_smem_size(void)
{
	uint32_t v;

	asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v));
	return v;
}

/* elect.sync: true in exactly one lane of a converged warp. */
GEMMD_DEV bool elect_one(void)
{
	uint32_t pred;

	asm volatile("{\n\t.reg .b32 r;\n\t.reg .pred p;\n\t"
		     "elect.sync r|p, 0xffffffff;\n\t"
		     "selp.u32 %0, 1, 0, p;\n\t}"
		     : "=r"(pred));
	return pred != 0;
}

/* setmaxnreg: every warp of the warpgroup must execute the same one. */
template <uint32_t R> GEMMD_DEV void setmaxnreg_dec(void)
{
	asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

template <uint32_t R> GEMMD_DEV void setmaxnreg_inc(void)
{
	asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}

/* ---- mbarrier ------------------------------------------------------------ */

GEMMD_DEV void mbar_init(uint32_t bar, uint32_t count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;"
		     :
		     : "r"(bar), "r"(count)
		     : "memory");
}

/* Makes mbarrier.init visible to the async proxy (TMA complete_tx). */
GEMMD_DEV void fence_mbarrier_init(void)
{
	asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

GEMMD_DEV void mbar_arrive(uint32_t bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];"
		     :
		     : "r"(bar)
		     : "memory");
}

/* One arrival plus the bytes the TMA loads of this phase will deliver. */
GEMMD_DEV void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
		     :
		     : "r"(bar), "r"(bytes)
		     : "memory");
}

/*
 * How long a try_wait may keep the thread suspended on an incomplete
 * phase, in ns (the value CUTLASS passes).  Without the hint it comes
 * back after a short system-dependent time and the loop spins: the
 * producer, nearly always waiting on a full ring, issues that loop for
 * the whole kernel beside two consumer warps on its scheduler.  (Timed
 * with and without: within noise; docs/perf.md, 2026-11-25.)
 */
#define GEMMD_WAIT_SUSPEND_NS 0x989680u

GEMMD_DEV bool mbar_try_wait(uint32_t bar, uint32_t parity)
{
	uint32_t ok;

	asm volatile(
		"{\n\t.reg .pred p;\n\t"
		"mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\n\t"
		"selp.u32 %0, 1, 0, p;\n\t}"
		: "=r"(ok)
		: "r"(bar), "r"(parity), "r"(GEMMD_WAIT_SUSPEND_NS)
		: "memory");
	return ok != 0;
}

/*
 * Whether the phase of parity `parity` has completed, without waiting.
 * Asked a step ahead, the answer is there when it is needed, and where
 * it is yes, try_wait's latency drops out of the issue path.
 */
GEMMD_DEV bool mbar_test_wait(uint32_t bar, uint32_t parity)
{
	uint32_t ok;

	asm volatile(
		"{\n\t.reg .pred p;\n\t"
		"mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
		"selp.u32 %0, 1, 0, p;\n\t}"
		: "=r"(ok)
		: "r"(bar), "r"(parity)
		: "memory");
	return ok != 0;
}

/*
 * Wait until the phase of parity `parity` has completed.  A fresh barrier
 * is in phase 0, so waiting for parity 1 returns at once.  try_wait may
 * still time out, hence the loop.
 */
GEMMD_DEV void mbar_wait(uint32_t bar, uint32_t parity)
{
	while (!mbar_try_wait(bar, parity))
		;
}

/* ---- programmatic dependent launch --------------------------------------- */

/*
 * Let the grids launched after this one with programmatic stream
 * serialization be scheduled: once every CTA of this grid has said so (or
 * exited), theirs may take SMs as they free up.
 */
GEMMD_DEV void griddep_launch_dependents(void)
{
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

/*
 * Wait until the grids this one depends on have completed and their
 * memory operations are visible.  A no-op for a grid launched without
 * programmatic stream serialization.
 */
GEMMD_DEV void griddep_wait(void)
{
	asm volatile("griddepcontrol.wait;" ::: "memory");
}

/* ---- TMA (cp.async.bulk.tensor) ------------------------------------------ */

GEMMD_DEV void tma_prefetch_desc(const CUtensorMap *map)
{
	const uint64_t p = reinterpret_cast<uint64_t>(map);

	asm volatile("prefetch.tensormap [%0];" : : "l"(p) : "memory");
}

/*
 * Load the box at (c0, c1) (c0 innermost, in elements) into shared memory
 * at dst, signalling complete_tx on bar.  Out-of-bounds elements are
 * zero-filled and still counted in the transaction bytes.
 */
GEMMD_DEV void tma_load_2d(uint32_t dst, const CUtensorMap *map, int32_t c0,
			   int32_t c1, uint32_t bar)
{
	const uint64_t p = reinterpret_cast<uint64_t>(map);

	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
		     ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
		     :
		     : "r"(dst), "l"(p), "r"(c0), "r"(c1), "r"(bar)
		     : "memory");
}

/*
 * The same box multicast to every CTA of the cluster in cta_mask (bits
 * index %cluster_ctarank): the data and the complete_tx land at the same
 * CTA-relative dst and bar in each of them.
 */
GEMMD_DEV void tma_load_2d_mc(uint32_t dst, const CUtensorMap *map, int32_t c0,
			      int32_t c1, uint32_t bar, uint16_t cta_mask)
{
	const uint64_t p = reinterpret_cast<uint64_t>(map);

	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
		     ".mbarrier::complete_tx::bytes.multicast::cluster"
		     " [%0], [%1, {%2, %3}], [%4], %5;"
		     :
		     : "r"(dst), "l"(p), "r"(c0), "r"(c1), "r"(bar),
		       "h"(cta_mask)
		     : "memory");
}

/* Store the box at (c0, c1) from smem; out-of-bounds parts are dropped. */
GEMMD_DEV void tma_store_2d(const CUtensorMap *map, int32_t c0, int32_t c1,
			    uint32_t src)
{
	const uint64_t p = reinterpret_cast<uint64_t>(map);

	asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
		     " [%0, {%1, %2}], [%3];"
		     :
		     : "l"(p), "r"(c0), "r"(c1), "r"(src)
		     : "memory");
}

GEMMD_DEV void bulk_commit(void)
{
	asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/* Until at most N store groups may still read their smem source. */
template <int N> GEMMD_DEV void bulk_wait_read(void)
{
	asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

/* ---- clusters ------------------------------------------------------------ */

GEMMD_DEV uint32_t cluster_ctarank(void)
{
	uint32_t v;

	asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(v));
	return v;
}

/* Every thread of every CTA in the cluster; orders smem writes before. */
GEMMD_DEV void cluster_sync(void)
{
	asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
		     "barrier.cluster.wait.acquire.aligned;" ::
			     : "memory");
}

/*
 * Arrive on the mbarrier at the same CTA-relative address as bar in the
 * cluster's CTA `rank` (which may be this one).  Default semantics
 * (release at CTA scope), as CUTLASS's ClusterBarrier does: the arrival
 * only says "done reading this slot", and .release.cluster costs a
 * cluster-wide fence per arrival, which measured as half the throughput
 * of a 128x128 tile with a 2x1 cluster (H200, 2026-11-22).
 */
GEMMD_DEV void mbar_arrive_cluster(uint32_t bar, uint32_t rank)
{
	asm volatile("{\n\t.reg .b32 remote;\n\t"
		     "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
		     "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}"
		     :
		     : "r"(bar), "r"(rank)
		     : "memory");
}

/* A 32-bit store into the shared memory of CTA `rank` of the cluster. */
GEMMD_DEV void st_shared_cluster(uint32_t addr, uint32_t rank, uint32_t v)
{
	asm volatile("{\n\t.reg .b32 remote;\n\t"
		     "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
		     "st.shared::cluster.u32 [remote], %2;\n\t}"
		     :
		     : "r"(addr), "r"(rank), "r"(v)
		     : "memory");
}

GEMMD_DEV void st_shared_u32(uint32_t addr, uint32_t v)
{
	asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

GEMMD_DEV uint32_t ld_shared_u32(uint32_t addr)
{
	uint32_t v;

	asm volatile("ld.shared.u32 %0, [%1];"
		     : "=r"(v)
		     : "r"(addr)
		     : "memory");
	return v;
}

/* The SM this thread runs on: ids may have gaps (%nsmid). */
GEMMD_DEV uint32_t sreg_smid(void)
{
	uint32_t v;

	asm volatile("mov.u32 %0, %%smid;" : "=r"(v));
	return v;
}

/* A barrier among `count` threads (whole warps) with id 1..15. */
GEMMD_DEV void named_bar_sync(uint32_t id, uint32_t count)
{
	asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}

/* Count this warp in at barrier id without waiting for the others. */
GEMMD_DEV void named_bar_arrive(uint32_t id, uint32_t count)
{
	asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(count) : "memory");
}

/*
 * A flag in global memory that one CTA raises for another of the same
 * grid: the release orders the writes this thread has seen before it
 * (the whole CTA's, after a barrier) ahead of the flag; the acquire
 * orders the flag ahead of what the reading CTA does next.
 */
GEMMD_DEV void st_release_gpu(uint32_t *p, uint32_t v)
{
	asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v)
		     : "memory");
}

GEMMD_DEV uint32_t ld_acquire_gpu(const uint32_t *p)
{
	uint32_t v;

	asm volatile("ld.acquire.gpu.global.u32 %0, [%1];"
		     : "=r"(v)
		     : "l"(p)
		     : "memory");
	return v;
}

/*
 * Four 8x8 matrices of 16-bit elements from registers to shared memory:
 * lane l gives the address of row l % 8 of matrix l / 8, and register i
 * of lane l holds row l / 4, columns 2 * (l % 4) + {0, 1} of matrix i -
 * the layout of an 8-column block of a wgmma accumulator.
 */
GEMMD_DEV void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2,
			   uint32_t r3)
{
	asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], "
		     "{%1, %2, %3, %4};" ::"r"(addr),
		     "r"(r0), "r"(r1), "r"(r2), "r"(r3)
		     : "memory");
}

/* Generic-proxy smem writes before async-proxy reads (TMA store, wgmma). */
GEMMD_DEV void fence_proxy_async_smem(void)
{
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

/* ---- wgmma --------------------------------------------------------------- */

GEMMD_DEV void wgmma_fence(void)
{
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

GEMMD_DEV void wgmma_commit(void)
{
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

/* Wait until at most N committed wgmma groups are still pending. */
template <int N> GEMMD_DEV void wgmma_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/*
 * Keep the compiler from moving accumulator reads or writes across a
 * wgmma fence/wait (the registers are written behind its back).
 */
template <int R> GEMMD_DEV void wgmma_fence_acc(float (&d)[R])
{
#pragma unroll
	for (int i = 0; i < R; i++)
		asm volatile("" : "+f"(d[i])::"memory");
}

/*
 * Shared memory matrix descriptor ("Matrix Descriptor Format") for a
 * K-major tile written by TMA with 128B swizzle: rows of 64 16-bit
 * elements (128 B), 8-row swizzle atoms of 1024 B.
 *   bits  0-13  start address >> 4
 *   bits 16-29  leading byte offset >> 4: unused for swizzled K-major,
 *               set to 1 as is customary
 *   bits 32-45  stride byte offset >> 4: 1024 B between 8-row groups
 *   bits 49-51  base offset: 0, the tile is 1024-B aligned
 *   bits 62-63  swizzle mode: 1 = 128B
 * Advancing K by 16 elements inside the atom adds 32 B, i.e. 2, to the
 * start address field.
 */
GEMMD_DEV uint64_t smem_desc_sw128(uint32_t addr)
{
	return static_cast<uint64_t>((addr & 0x3ffff) >> 4) |
	       (static_cast<uint64_t>(1) << 16) |
	       (static_cast<uint64_t>(1024 >> 4) << 32) |
	       (static_cast<uint64_t>(1) << 62);
}

/*
 * The same for an M- or N-major tile (imm-trans 1) as TMA writes it with
 * 128B swizzle from boxes of 64 MN elements x BK K rows: each 64-wide MN
 * chunk is BK rows of 128 B, chunks lbo bytes apart.  Here the stride
 * byte offset (1024 B) steps 8 K rows and the leading byte offset steps
 * 64 MN elements; advancing K by 16 adds 16 rows = 2048 B.
 */
GEMMD_DEV uint64_t smem_desc_sw128_mn(uint32_t addr, uint32_t lbo)
{
	return static_cast<uint64_t>((addr & 0x3ffff) >> 4) |
	       (static_cast<uint64_t>((lbo >> 4) & 0x3fff) << 16) |
	       (static_cast<uint64_t>(1024 >> 4) << 32) |
	       (static_cast<uint64_t>(1) << 62);
}

/* Accumulator operands: k is "+f", or "=f" where the old D is ignored. */
#define GEMMD_ACC8(k, d, i)                                         \
	k(d[(i) + 0]), k(d[(i) + 1]), k(d[(i) + 2]), k(d[(i) + 3]), \
		k(d[(i) + 4]), k(d[(i) + 5]), k(d[(i) + 6]), k(d[(i) + 7])
#define GEMMD_ACC64(k, d, i)                                            \
	GEMMD_ACC8(k, d, (i) + 0), GEMMD_ACC8(k, d, (i) + 8),           \
		GEMMD_ACC8(k, d, (i) + 16), GEMMD_ACC8(k, d, (i) + 24), \
		GEMMD_ACC8(k, d, (i) + 32), GEMMD_ACC8(k, d, (i) + 40), \
		GEMMD_ACC8(k, d, (i) + 48), GEMMD_ACC8(k, d, (i) + 56)

#define GEMMD_REGS_0_63                            \
	"%0, %1, %2, %3, %4, %5, %6, %7, "         \
	"%8, %9, %10, %11, %12, %13, %14, %15, "   \
	"%16, %17, %18, %19, %20, %21, %22, %23, " \
	"%24, %25, %26, %27, %28, %29, %30, %31, " \
	"%32, %33, %34, %35, %36, %37, %38, %39, " \
	"%40, %41, %42, %43, %44, %45, %46, %47, " \
	"%48, %49, %50, %51, %52, %53, %54, %55, " \
	"%56, %57, %58, %59, %60, %61, %62, %63"
#define GEMMD_REGS_64_127                                  \
	"%64, %65, %66, %67, %68, %69, %70, %71, "         \
	"%72, %73, %74, %75, %76, %77, %78, %79, "         \
	"%80, %81, %82, %83, %84, %85, %86, %87, "         \
	"%88, %89, %90, %91, %92, %93, %94, %95, "         \
	"%96, %97, %98, %99, %100, %101, %102, %103, "     \
	"%104, %105, %106, %107, %108, %109, %110, %111, " \
	"%112, %113, %114, %115, %116, %117, %118, %119, " \
	"%120, %121, %122, %123, %124, %125, %126, %127"

/*
 * D(64xN, f32) (+)= A(64x16) * B(16xN), both operands in smem; ta/tb are
 * imm-trans-a/b (0: K-major, 1: M- or N-major), scale-a/b 1; scale_d == 0
 * ignores the old D, so the first k-step of a tile needs no zeroing pass.
 */
#define GEMMD_WGMMA_N128(k, ty, ta, tb, d, da, db, scale_d)                   \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %66, 0;\n\t"       \
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32." ty "." ty \
		     " {" GEMMD_REGS_0_63 "}, %64, %65, p, 1, 1, " #ta        \
		     ", " #tb ";\n\t}"                                        \
		     : GEMMD_ACC64(k, d, 0)                                   \
		     : "l"(da), "l"(db), "r"(scale_d))

#define GEMMD_REGS_64_95                           \
	"%64, %65, %66, %67, %68, %69, %70, %71, " \
	"%72, %73, %74, %75, %76, %77, %78, %79, " \
	"%80, %81, %82, %83, %84, %85, %86, %87, " \
	"%88, %89, %90, %91, %92, %93, %94, %95"

#define GEMMD_WGMMA_N192(k, ty, ta, tb, d, da, db, scale_d)                   \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %98, 0;\n\t"       \
		     "wgmma.mma_async.sync.aligned.m64n192k16.f32." ty "." ty \
		     " {" GEMMD_REGS_0_63 ", " GEMMD_REGS_64_95 "}, "         \
		     "%96, %97, p, 1, 1, " #ta ", " #tb ";\n\t}"              \
		     : GEMMD_ACC64(k, d, 0), GEMMD_ACC8(k, d, 64),            \
		       GEMMD_ACC8(k, d, 72), GEMMD_ACC8(k, d, 80),            \
		       GEMMD_ACC8(k, d, 88)                                   \
		     : "l"(da), "l"(db), "r"(scale_d))

#define GEMMD_WGMMA_N256(k, ty, ta, tb, d, da, db, scale_d)                   \
	asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %130, 0;\n\t"      \
		     "wgmma.mma_async.sync.aligned.m64n256k16.f32." ty "." ty \
		     " {" GEMMD_REGS_0_63 ", " GEMMD_REGS_64_127 "}, "        \
		     "%128, %129, p, 1, 1, " #ta ", " #tb ";\n\t}"            \
		     : GEMMD_ACC64(k, d, 0), GEMMD_ACC64(k, d, 64)            \
		     : "l"(da), "l"(db), "r"(scale_d))

#define GEMMD_WGMMA_TRANS(k, N, ty, d, da, db, scale_d)                    \
	do {                                                               \
		if constexpr (!TA && !TB)                                  \
			GEMMD_WGMMA_N##N(k, ty, 0, 0, d, da, db, scale_d); \
		else if constexpr (!TA)                                    \
			GEMMD_WGMMA_N##N(k, ty, 0, 1, d, da, db, scale_d); \
		else if constexpr (!TB)                                    \
			GEMMD_WGMMA_N##N(k, ty, 1, 0, d, da, db, scale_d); \
		else                                                       \
			GEMMD_WGMMA_N##N(k, ty, 1, 1, d, da, db, scale_d); \
	} while (0)

#define GEMMD_WGMMA_ANY(k, d, da, db, scale_d)                                 \
	do {                                                                   \
		if constexpr (N == 128 && bf16)                                \
			GEMMD_WGMMA_TRANS(k, 128, "bf16", d, da, db, scale_d); \
		else if constexpr (N == 128)                                   \
			GEMMD_WGMMA_TRANS(k, 128, "f16", d, da, db, scale_d);  \
		else if constexpr (N == 192 && bf16)                           \
			GEMMD_WGMMA_TRANS(k, 192, "bf16", d, da, db, scale_d); \
		else if constexpr (N == 192)                                   \
			GEMMD_WGMMA_TRANS(k, 192, "f16", d, da, db, scale_d);  \
		else if constexpr (bf16)                                       \
			GEMMD_WGMMA_TRANS(k, 256, "bf16", d, da, db, scale_d); \
		else                                                           \
			GEMMD_WGMMA_TRANS(k, 256, "f16", d, da, db, scale_d);  \
	} while (0)

/*
 * INIT: D = A * B, the old D neither read nor kept alive.  The "+f" form
 * with scale_d 0 ignores D too, but the compiler cannot know, so D's
 * registers would stay live from one tile into the next.
 */
template <typename T, int N, bool TA = false, bool TB = false, bool INIT = false>
GEMMD_DEV void wgmma_m64k16(float (&d)[N / 2], uint64_t da, uint64_t db,
			    uint32_t scale_d)
{
	constexpr bool bf16 = gemmd_same<T, __nv_bfloat16>::value;

	static_assert(bf16 || gemmd_same<T, __half>::value, "bf16 or fp16");
	static_assert(N == 128 || N == 192 || N == 256,
		      "wgmma N: 128, 192 or 256");
	if constexpr (INIT)
		GEMMD_WGMMA_ANY("=f", d, da, db, 0u);
	else
		GEMMD_WGMMA_ANY("+f", d, da, db, scale_d);
}
