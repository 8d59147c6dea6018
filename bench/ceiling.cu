// SPDX-License-Identifier: MIT
/*
 * ceiling.cu - the wgmmas of a cooperative 128x256 tile and nothing else,
 * for bench/ceiling: what the tensor cores sustain on this GPU when no
 * operand has to be brought in.
 *
 * Each CTA fills four 48 KB stages of shared memory with N(0,1) values
 * once, then its two consumer warpgroups run the k-loop of our kernels
 * over them: per k-tile four m64n256k16 wgmmas each, one group in
 * flight, a fresh accumulator every 128 k-tiles.  No TMA, no barriers,
 * no epilogue: any GEMM built from these wgmmas does this work and more,
 * so its rate at the power cap bounds theirs on the same inputs.
 */
#include "common.cuh"

#define CEIL_STAGE_BYTES 49152u
#define CEIL_STAGES 4u
#define CEIL_TILE_KTILES 128

/* A 32-bit hash (splitmix's finaliser): uniform bits from an index. */
GEMMD_DEV uint32_t ceil_hash(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* Two N(0,1) values by Box-Muller from the hash of i. */
GEMMD_DEV float2 ceil_normal2(uint32_t i)
{
	const uint32_t h1 = ceil_hash(2 * i), h2 = ceil_hash(2 * i + 1);
	const float u1 = ((h1 >> 8) + 1.0f) * (1.0f / 16777217.0f);
	const float u2 = (h2 >> 8) * (1.0f / 16777216.0f);
	const float r = sqrtf(-2.0f * __logf(u1));
	float s, c;

	__sincosf(6.28318531f * u2, &s, &c);
	return make_float2(r * c, r * s);
}

template <typename T> GEMMD_DEV void ceil_fill(uint8_t *sm, uint32_t seed)
{
	const uint32_t words = CEIL_STAGE_BYTES * CEIL_STAGES / 4;
	const uint32_t base = (seed + blockIdx.x) * words;
	uint32_t *w = (uint32_t *)sm;

	for (uint32_t i = threadIdx.x; i < words; i += blockDim.x) {
		const float2 z = ceil_normal2(base + i);

		w[i] = gemmd_type<T>::pack2(z.x, z.y);
	}
	/* Generic-proxy writes, read by wgmma through the async proxy. */
	fence_proxy_async_smem();
	__syncthreads();
}

template <typename T>
GEMMD_DEV void ceil_run(uint32_t ktiles, uint32_t seed, float *sink)
{
	extern __shared__ __align__(1024) uint8_t raw[];
	uint8_t *sm = (uint8_t *)(((uintptr_t)raw + 1023) & ~(uintptr_t)1023);
	const uint32_t base = smem_u32(sm);
	const uint32_t wg = threadIdx.x / 128;
	float d[128];
	float s = 0.f;

	ceil_fill<T>(sm, seed);
	for (int i = 0; i < 128; i++)
		d[i] = 0.f;
	wgmma_fence_acc(d);
#pragma unroll 1
	for (uint32_t t = 0; t < ktiles; t++) {
		const uint32_t st = base + (t % CEIL_STAGES) * CEIL_STAGE_BYTES;
		const uint32_t sa = st + wg * 8192, sb = st + 16384;

		wgmma_fence();
#pragma unroll
		for (int k = 0; k < 4; k++)
			wgmma_m64k16<T, 256>(d, smem_desc_sw128(sa + 32 * k),
					     smem_desc_sw128(sb + 32 * k),
					     k > 0 || t % CEIL_TILE_KTILES);
		wgmma_commit();
		wgmma_wait<1>();
	}
	wgmma_wait<0>();
	wgmma_fence_acc(d);
	for (int i = 0; i < 128; i += 32)
		s += d[i];
	/* Never true for these inputs; keeps the accumulators live. */
	if (s == 12345.0f)
		sink[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(256, 1)
	gemmd_ceiling_bf16(uint32_t ktiles, uint32_t seed, float *sink)
{
	ceil_run<__nv_bfloat16>(ktiles, seed, sink);
}

extern "C" __global__ void __launch_bounds__(256, 1)
	gemmd_ceiling_fp16(uint32_t ktiles, uint32_t seed, float *sink)
{
	ceil_run<__half>(ktiles, seed, sink);
}
