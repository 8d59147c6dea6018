/* SPDX-License-Identifier: MIT */
/*
 * sm80.cuh - the parts the SM80-style kernels (gemm_multistage.cu,
 * gemm_pipelined.cu) share: ldmatrix / mma.sync wrappers, the tile
 * configuration, the shared memory swizzle, the per-thread k-tile copy
 * addressing, the warp fragment loads and the direct alpha / beta
 * epilogue with its run-time output type.
 *
 * The two kernels differ only in how a k-tile gets from global to shared
 * memory (a cp.async ring against a register double buffer) and in the
 * main loop around it; what lies on either side of that is one piece of
 * code, kept here so that a fix to it is made once.  Both build "tn"
 * only (A row-major M x K, B stored N x K), 16-bit inputs, fp32
 * accumulation; no TMA, no wgmma, no clusters, so it runs on sm_80 and
 * sm_90a alike.
 *
 * Layout, for the default 128 x 128 x 32 tile: one CTA of 256 threads,
 * 8 warps as a 2 (M) x 4 (N) grid of 64 x 32 warp tiles, a warp tile
 * 4 x 4 mma.sync m16n8k16 tiles (64 fp32 accumulators per thread).  A
 * shared memory slot is the A tile (BM rows of BK * 2 = 64 B) then the B
 * tile (BN rows); a row's 16-B chunks are XOR-swizzled with its position
 * among the 8 rows sharing the bank groups (sm80_swz), so ldmatrix is
 * conflict-free.  Every thread copies one 16-B chunk column of rows
 * row0 + i * pass_rows of A and of B (struct sm80_copy).
 *
 * Everything is force-inlined into the one entry of the translation
 * unit: the register budget (exactly 128 a thread in the multistage
 * kernel on sm_90a) is that of the whole kernel, so a change here must
 * be checked for spills in both kernels on both architectures.
 */
#pragma once

#include "common.cuh"

#define SM80_CAT_(a, b) a##b
#define SM80_CAT(a, b) SM80_CAT_(a, b)
#define SM80_ELEM_bf16 __nv_bfloat16
#define SM80_ELEM_fp16 __half

namespace {

/* ---- SM80 PTX: ldmatrix, mma.sync ---------------------------------------- */

/* Four 8x8 b16 matrices; lane l gives the row address of matrix l / 8. */
GEMMD_DEV void ldsm_x4(uint32_t (&r)[4], uint32_t addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
		     "{%0, %1, %2, %3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr)
		     : "memory");
}

#define SM80_MMA_16816(ty, d, a, b)                                           \
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." ty "." ty       \
		     ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "    \
		     "{%0, %1, %2, %3};"                                      \
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])         \
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), \
		       "r"(b[1]))

/* d (16x8, f32) += a (16x16, row) * b (16x8, col). */
template <typename T>
GEMMD_DEV void mma_16816(float (&d)[4], const uint32_t (&a)[4],
			 const uint32_t (&b)[2])
{
	if constexpr (gemmd_same<T, __nv_bfloat16>::value)
		SM80_MMA_16816("bf16", d, a, b);
	else
		SM80_MMA_16816("f16", d, a, b);
}

/* ---- configuration ------------------------------------------------------- */

/*
 * The tile shape and what follows from it; a kernel's own config derives
 * from this and adds its min_stages and max_stages.
 */
template <typename T, int BM, int BN, int BK> struct sm80_config {
	static constexpr int bm = BM, bn = BN, bk = BK;
	static constexpr int threads = 256;
	static constexpr int warps_m = 2, warps_n = 4;
	static constexpr int wm = BM / warps_m, wn = BN / warps_n;
	static constexpr int mi = wm / 16, ni = wn / 8; /* mma tiles */
	static constexpr int ksteps = BK / 16;
	static constexpr uint32_t row_bytes = BK * sizeof(T);
	static constexpr uint32_t chunks = row_bytes / 16; /* per row */
	/* Rows one pass of all threads copies, and their bytes. */
	static constexpr uint32_t pass_rows = threads / chunks;
	static constexpr uint32_t pass_bytes = pass_rows * row_bytes;
	static constexpr int a_passes = BM / pass_rows;
	static constexpr int b_passes = BN / pass_rows;
	static constexpr uint32_t a_bytes = BM * row_bytes;
	static constexpr uint32_t b_bytes = BN * row_bytes;
	static constexpr uint32_t stage_bytes = a_bytes + b_bytes;

	static_assert(sizeof(T) == 2, "16-bit inputs");
	static_assert(threads == 32 * warps_m * warps_n, "8 warps");
	static_assert(wm % 16 == 0 && wn % 16 == 0, "whole ldmatrix.x4 tiles");
	static_assert(ksteps % 2 == 0, "fragment buffers alternate per k-step");
	static_assert(chunks == 4 || chunks == 8, "swizzle: 64- or 128-B rows");
	static_assert(BM % pass_rows == 0 && BN % pass_rows == 0,
		      "whole copy passes");
	static_assert(a_passes <= 16 && b_passes <= 16, "rows_ok bits");
	/* Every pass starts on the same swizzle phase (see sm80_swz). */
	static_assert(pass_rows % 16 == 0, "pass keeps the swizzle phase");
	static_assert(GEMMD_SMEM_FIXED >= 128, "room to align the ring");
	static_assert(stage_bytes % 128 == 0 && a_bytes % 128 == 0,
		      "slots and tiles 128-B aligned (see sm80_warp)");
};

/*
 * Byte offset of 16-B chunk c of row r in a tile of `chunks`-chunk rows:
 * the chunk index is XORed with the row's position among the 8 rows that
 * share the 8 bank groups (two 64-B rows per 128-B line, or one 128-B
 * row), so 8 consecutive rows at one logical chunk use 8 bank groups.
 */
template <typename Cfg>
__device__ __forceinline__ uint32_t sm80_swz(uint32_t r, uint32_t c)
{
	const uint32_t phase = (r / (8 / Cfg::chunks)) % Cfg::chunks;

	return r * Cfg::row_bytes + ((c ^ phase) << 4);
}

/*
 * This thread's part of the k-tile copies: chunk kc of rows row0 +
 * i * pass_rows of A and of B.  The k-tiles are copied strictly in
 * order, so a kernel's loader (derived from this) only steps forward;
 * it keeps few registers (the row strides come from the parameter bank)
 * because the accumulators and the fragments need most of them.
 */
template <typename T, typename Cfg> struct sm80_copy {
	const T *a, *b; /* the chunk in pass 0 of the next k-tile */
	int32_t k_left; /* elements of K from that chunk on */
	uint32_t rows_ok; /* bit i: A pass i inside M; bit 16 + i: B, N */
	uint32_t sts; /* smem offset of the chunk in pass 0 */

	__device__ __forceinline__ void init(const gemm_args &args,
					     uint32_t tile_m, uint32_t tile_n)
	{
		const uint32_t row0 = threadIdx.x / Cfg::chunks;
		const uint32_t kc = threadIdx.x % Cfg::chunks;
		const uint32_t m0 = tile_m * Cfg::bm + row0;
		const uint32_t n0 = tile_n * Cfg::bn + row0;

		a = reinterpret_cast<const T *>(args.a) +
		    static_cast<uint64_t>(m0) * args.lda + kc * 8;
		b = reinterpret_cast<const T *>(args.b) +
		    static_cast<uint64_t>(n0) * args.ldb + kc * 8;
		k_left = static_cast<int32_t>(args.k - kc * 8);
		rows_ok = 0;
#pragma unroll
		for (int i = 0; i < Cfg::a_passes; i++)
			rows_ok |= (m0 + i * Cfg::pass_rows < args.m) << i;
#pragma unroll
		for (int i = 0; i < Cfg::b_passes; i++)
			rows_ok |= (n0 + i * Cfg::pass_rows < args.n)
				   << (16 + i);
		sts = sm80_swz<Cfg>(row0, kc);
	}

	/* rows_ok, or 0 once the k-tile lies wholly past K. */
	__device__ __forceinline__ uint32_t live(void) const
	{
		return k_left > 0 ? rows_ok : 0;
	}

	/* This thread's chunk of A in pass i, of B in pass i. */
	__device__ __forceinline__ const T *a_src(const gemm_args &args,
						  int i) const
	{
		return a + static_cast<uint64_t>(i * Cfg::pass_rows) * args.lda;
	}

	__device__ __forceinline__ const T *b_src(const gemm_args &args,
						  int i) const
	{
		return b + static_cast<uint64_t>(i * Cfg::pass_rows) * args.ldb;
	}

	/* On to the next k-tile. */
	__device__ __forceinline__ void advance(void)
	{
		a += Cfg::bk;
		b += Cfg::bk;
		k_left -= Cfg::bk;
	}
};

/*
 * A warp's fragments of one k-step.  ldmatrix addresses: for A, lanes
 * 0-15 give rows 0-15 of the m16 tile at k 0-7 and lanes 16-31 the same
 * rows at k 8-15 (a0..a3 of m16n8k16); for B, lanes 0-7 / 8-15 give n
 * 0-7 at k 0-7 / 8-15 and lanes 16-31 the same for n 8-15, i.e. b0, b1 of
 * two n8 tiles.  The rows of every m16 / n16 step are 16-aligned, so the
 * swizzle phase depends on the lane only.  A lane's chunk in k-step kk is
 * 2 * kk + h (h = 0 or 1), and (2 * kk + h) ^ phase = (h ^ phase) ^ 2 * kk:
 * its address is that of k-step 0 XOR 32 * kk, as the slots and the row
 * groups are 128-B aligned.  One offset register per operand, not one per
 * k-step: they are scarce here.
 */
template <typename T, typename Cfg> struct sm80_warp {
	uint32_t a_ld, b_ld;

	__device__ __forceinline__ void init(uint32_t warp, uint32_t lane)
	{
		const uint32_t wm = warp % Cfg::warps_m;
		const uint32_t wn = warp / Cfg::warps_m;
		const uint32_t ar = wm * Cfg::wm + lane % 16;
		const uint32_t br = wn * Cfg::wn + lane % 8 + 8 * (lane / 16);

		a_ld = sm80_swz<Cfg>(ar, lane / 16);
		b_ld = Cfg::a_bytes + sm80_swz<Cfg>(br, (lane / 8) % 2);
	}

	__device__ __forceinline__ void load(uint32_t slot, int kk,
					     uint32_t (&a)[Cfg::mi][4],
					     uint32_t (&b)[Cfg::ni][2]) const
	{
#pragma unroll
		for (int i = 0; i < Cfg::mi; i++)
			ldsm_x4(a[i], (slot + a_ld + i * 16 * Cfg::row_bytes) ^
					      (kk * 32));
#pragma unroll
		for (int j = 0; j < Cfg::ni / 2; j++) {
			uint32_t r[4];

			ldsm_x4(r, (slot + b_ld + j * 16 * Cfg::row_bytes) ^
					   (kk * 32));
			b[2 * j][0] = r[0];
			b[2 * j][1] = r[1];
			b[2 * j + 1][0] = r[2];
			b[2 * j + 1][1] = r[3];
		}
	}
};

template <typename Cfg>
__device__ __forceinline__ void sm80_zero(float (&acc)[Cfg::mi][Cfg::ni][4])
{
#pragma unroll
	for (int i = 0; i < Cfg::mi; i++)
#pragma unroll
		for (int j = 0; j < Cfg::ni; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][j][e] = 0.0f;
}

template <typename T, typename Cfg>
__device__ __forceinline__ void sm80_mma(float (&acc)[Cfg::mi][Cfg::ni][4],
					 const uint32_t (&a)[Cfg::mi][4],
					 const uint32_t (&b)[Cfg::ni][2])
{
#pragma unroll
	for (int i = 0; i < Cfg::mi; i++)
#pragma unroll
		for (int j = 0; j < Cfg::ni; j++)
			mma_16816<T>(acc[i][j], a[i], b[j]);
}

/* ---- epilogue ------------------------------------------------------------ */

/*
 * Two adjacent elements of C or D, of which only the first n_left are
 * inside; pair_ok: one 32-bit (16-bit types) or 64-bit (fp32) access is
 * aligned (the column is even, so that holds when ldd is even).
 */
template <typename O> struct sm80_out {
	GEMMD_DEV void load(const O *p, int32_t n_left, bool pair_ok, float &c0,
			    float &c1)
	{
		const uint16_t *q = reinterpret_cast<const uint16_t *>(p);

		if (n_left >= 2 && pair_ok) {
			const uint32_t w =
				*reinterpret_cast<const uint32_t *>(q);

			c0 = gemmd_type<O>::to_float(w & 0xffff);
			c1 = gemmd_type<O>::to_float(w >> 16);
		} else {
			c0 = gemmd_type<O>::to_float(q[0]);
			c1 = n_left >= 2 ? gemmd_type<O>::to_float(q[1]) : 0.0f;
		}
	}

	GEMMD_DEV void store(O *p, int32_t n_left, bool pair_ok, float v0,
			     float v1)
	{
		if (n_left >= 2 && pair_ok) {
			*reinterpret_cast<uint32_t *>(p) =
				gemmd_type<O>::pack2(v0, v1);
		} else {
			p[0] = gemmd_type<O>::from_float(v0);
			if (n_left >= 2)
				p[1] = gemmd_type<O>::from_float(v1);
		}
	}
};

template <> struct sm80_out<float> {
	GEMMD_DEV void load(const float *p, int32_t n_left, bool pair_ok,
			    float &c0, float &c1)
	{
		if (n_left >= 2 && pair_ok) {
			const float2 v = *reinterpret_cast<const float2 *>(p);

			c0 = v.x;
			c1 = v.y;
		} else {
			c0 = p[0];
			c1 = n_left >= 2 ? p[1] : 0.0f;
		}
	}

	GEMMD_DEV void store(float *p, int32_t n_left, bool pair_ok, float v0,
			     float v1)
	{
		if (n_left >= 2 && pair_ok) {
			*reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
		} else {
			p[0] = v0;
			if (n_left >= 2)
				p[1] = v1;
		}
	}
};

/*
 * D = alpha * acc + beta * C straight from the m16n8 accumulator layout:
 * acc[i][j][0..1] are row lane / 4, columns 2 * (lane % 4) + {0, 1} of
 * mma tile (i, j); [2..3] the same columns 8 rows below.  row0 / col0:
 * this thread's first row and column of the warp tile.
 */
template <typename O, typename Cfg>
__device__ __forceinline__ void
sm80_epilogue_as(const gemm_args &args, const float (&acc)[Cfg::mi][Cfg::ni][4],
		 uint32_t row0, uint32_t col0)
{
	O *d = reinterpret_cast<O *>(args.d);
	const O *c = reinterpret_cast<const O *>(args.c);
	const bool pair_ok = (args.ldd & 1) == 0;
	const bool use_c = args.beta != 0.0f;

#pragma unroll
	for (int i = 0; i < Cfg::mi; i++) {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const uint32_t row = row0 + i * 16 + h * 8;
			const uint64_t off =
				static_cast<uint64_t>(row) * args.ldd;

			if (row >= args.m)
				continue;
#pragma unroll
			for (int j = 0; j < Cfg::ni; j++) {
				const uint32_t col = col0 + j * 8;
				const int32_t n_left =
					static_cast<int32_t>(args.n - col);
				float v0 = args.alpha * acc[i][j][2 * h];
				float v1 = args.alpha * acc[i][j][2 * h + 1];

				if (col >= args.n)
					continue;
				if (use_c) {
					float c0, c1;

					sm80_out<O>::load(c + off + col, n_left,
							  pair_ok, c0, c1);
					v0 += args.beta * c0;
					v1 += args.beta * c1;
				}
				sm80_out<O>::store(d + off + col, n_left,
						   pair_ok, v0, v1);
			}
		}
	}
}

/* The epilogue of tile (tile_m, tile_n) in the output type args.out. */
template <typename Cfg>
__device__ __forceinline__ void
sm80_epilogue(const gemm_args &args, const float (&acc)[Cfg::mi][Cfg::ni][4],
	      uint32_t tile_m, uint32_t tile_n, uint32_t warp, uint32_t lane)
{
	const uint32_t row0 =
		tile_m * Cfg::bm + warp % Cfg::warps_m * Cfg::wm + lane / 4;
	const uint32_t col0 = tile_n * Cfg::bn + warp / Cfg::warps_m * Cfg::wn +
			      2 * (lane % 4);

	if (args.out == GEMMD_OUT_BF16)
		sm80_epilogue_as<__nv_bfloat16, Cfg>(args, acc, row0, col0);
	else if (args.out == GEMMD_OUT_FP16)
		sm80_epilogue_as<__half, Cfg>(args, acc, row0, col0);
	else
		sm80_epilogue_as<float, Cfg>(args, acc, row0, col0);
}

} /* namespace */
