/* SPDX-License-Identifier: MIT */
/*
 * sm90_gemm.cu - the warp-specialized SM90 GEMMs: schedules ws,
 * cooperative and pingpong.  D = alpha * A * B + beta * C, A and B bf16 or
 * fp16 in any of the four layouts, fp32 accumulation, D and C of the
 * run-time output type (kernels/gemm-abi.h).
 *
 * Built once per entry (one kernel per translation unit): -DGEMMD_SCHED=
 * ws|cooperative|pingpong -DGEMMD_DTYPE -DGEMMD_LAYOUT -DGEMMD_BM/BN/BK.
 *
 * Three warpgroups, 384 threads, one CTA per SM:
 *   WG0    producer: drops to 40 registers (24 beside 192-accumulator
 *          consumers); one elected thread streams A and B k-tiles with
 *          TMA into a ring of `stages` slots;
 *   WG1/2  consumers (232 registers, 240 with 192 accumulators): wgmma
 *          from the swizzled slots, then the epilogue (direct stores,
 *          or TMA stores through smem).
 * Schedules:
 *   ws           one work unit per cluster (the grid covers all tiles);
 *                both consumers split each tile's rows.
 *   cooperative  the same split, persistent: a CTA walks units id, id+G,
 *                ... and its producer runs ahead into the next tile
 *                while the consumers store the last one.  Under
 *                stream-K (gemm_args.decomposition) the last wave's
 *                units are cut along K instead: after its whole units
 *                each cluster takes an even share of their k-tiles, and
 *                partial sums meet in a global workspace (sk_publish(),
 *                sk_collect()).
 *   pingpong     persistent; each consumer takes every other tile of the
 *                CTA whole.  An ordered barrier hands the tensor cores
 *                over (mainloop turn) and the epilogue turn, so one
 *                consumer's stores overlap the other's mainloop.
 *
 * Ring protocol, per slot s: full[s] (count 1: the local producer's
 * arrive.expect_tx of the whole stage; TMA, local or multicast from a
 * peer, completes the bytes) and empty[s] (count: consumer warpgroups
 * reading a slot x (cluster_x + cluster_y - 1)).  Each role keeps (slot,
 * phase), the phase flipping on wrap; the producer starts at phase 1.  A
 * consumer keeps one wgmma batch in flight and releases a slot one k-tile
 * late, on every CTA of its cluster row and column: those are the CTAs
 * whose producers may multicast into it.
 *
 * Clusters: cluster_x CTAs along M by cluster_y along N.  The CTAs
 * (x, *) share an A tile: CTA (x, y) loads part y of cluster_y of it and
 * multicasts that to (x, *); likewise CTA (x, y) loads part x of
 * cluster_x of the B tile of (*, y).  Every CTA arms its own full barrier
 * for the whole stage.  No CTA leaves while a peer may still write into
 * it or arrive on it, with no cluster barrier at the end: its consumers
 * wait for every k-tile the peers multicast into it (the CTAs of a
 * cluster walk the same units and k-tiles), and its producer drains the
 * ring, waiting for every release, the peers' included.
 *
 * Shared memory (dynamic): full[16] | empty[16] | order[4] | pad to 1024 |
 * ring: slot s = A tile, B tile | epilogue staging (TMA epilogue only).
 * A tile for K-major A: BM rows of 128 B; for M-major A: BM/64 chunks of
 * BK rows x 128 B (64 M elements).  The same for B with BN.  Either way
 * rows [64i, 64i + 64) of A start 8 KiB * i into the tile.
 */
#include "common.cuh"
#include "sched.cuh"

namespace {

enum sm90_sched { SCHED_WS, SCHED_COOP, SCHED_PINGPONG };

#define GEMMD_SCHED_ID_ws SCHED_WS
#define GEMMD_SCHED_ID_cooperative SCHED_COOP
#define GEMMD_SCHED_ID_pingpong SCHED_PINGPONG
#define GEMMD_CAT_(a, b) a##b
#define GEMMD_CAT(a, b) GEMMD_CAT_(a, b)
#define GEMMD_TYPE_bf16 __nv_bfloat16
#define GEMMD_TYPE_fp16 __half
/* K-major A in tn and tt; K-major B in tn and nn. */
#define GEMMD_A_KMAJOR_tn 1
#define GEMMD_A_KMAJOR_tt 1
#define GEMMD_A_KMAJOR_nt 0
#define GEMMD_A_KMAJOR_nn 0
#define GEMMD_B_KMAJOR_tn 1
#define GEMMD_B_KMAJOR_nn 1
#define GEMMD_B_KMAJOR_nt 0
#define GEMMD_B_KMAJOR_tt 0

template <int SCHED, typename T, int BM, int BN, int BK, bool AK, bool BK_>
struct sm90_config {
	static constexpr int bm = BM, bn = BN, bk = BK;
	static constexpr bool a_kmajor = AK, b_kmajor = BK_;
	static constexpr bool persistent = SCHED != SCHED_WS;
	static constexpr bool pingpong = SCHED == SCHED_PINGPONG;
	/* Takes GEMMD_DECOMP_STREAM_K: persistent, both consumers a tile. */
	static constexpr bool stream_k = SCHED == SCHED_COOP;
	static constexpr uint32_t a_bytes = BM * BK * sizeof(T);
	static constexpr uint32_t b_bytes = BN * BK * sizeof(T);
	static constexpr uint32_t stage_bytes = a_bytes + b_bytes;
	static constexpr uint32_t max_stages =
		gemmd_stages_that_fit(stage_bytes);
	/* Rows of a tile one consumer computes, in 64-row wgmma slices. */
	static constexpr int wg_rows = pingpong ? BM : BM / 2;
	static constexpr int mi = wg_rows / 64;
	static constexpr int n_acc = BN / 2; /* per slice, per thread */
	/* Consumer warpgroups that read each slot. */
	static constexpr uint32_t slot_readers = pingpong ? 1 : 2;
	/* TMA epilogue staging: pingpong's consumers store in turn. */
	static constexpr uint32_t epi_bytes = GEMMD_SMEM_EPILOGUE_OF(pingpong);
	/* 64-element chunks of an MN-major tile, BK rows of 128 B each. */
	static constexpr uint32_t chunk_bytes = BK * 128;

	static_assert(sizeof(T) == 2, "16-bit inputs");
	static_assert(BK * sizeof(T) == 128, "one 128B swizzle row per k-tile");
	static_assert(wg_rows % 64 == 0 && mi >= 1, "64-row wgmma slices");
	/*
	 * A consumer holds mi * n_acc accumulators.  Up to 128 leave room
	 * for the deferred store of consumer_split(); pingpong stores a
	 * tile whole before its next mainloop, and holds up to 192 with
	 * the wider register split below.
	 */
	static constexpr bool wide_acc = mi * n_acc > 128;
	/*
	 * GPC placement (gemm_args.placement): ptxas spilled the claim in
	 * the kernels whose consumers hold 192 accumulators, however it
	 * was placed (session 17), so those are built without.
	 */
	static constexpr bool placement = persistent && !wide_acc;
	static_assert(mi *n_acc <= (pingpong ? 192 : 128),
		      "accumulators fit a consumer");
	static_assert(BM % 64 == 0 && BN % 64 == 0, "64-wide MN chunks");
	static_assert(BM <= 256 && BN <= 256, "TMA box and wgmma N <= 256");
	static_assert(a_bytes % 1024 == 0 && b_bytes % 1024 == 0,
		      "tiles must stay 1024-B aligned");
	static_assert(chunk_bytes == 64 * 128, "an A slice is 8 KiB");
	static_assert(2 * 8 * GEMMD_MAX_STAGES + 32 + 1023 <= GEMMD_SMEM_FIXED,
		      "barriers and alignment slack fit in smem_fixed");
};

/*
 * Register budgets: 128*40 + 256*232 = 64512 <= 65536, or for 192
 * accumulators a consumer 128*24 + 256*240 = 64512: the producer's one
 * thread needs few.
 */
template <typename Cfg> struct regs {
	static constexpr uint32_t producer = Cfg::wide_acc ? 24 : 40;
	static constexpr uint32_t consumer = Cfg::wide_acc ? 240 : 232;
};

/* Where things are, and who this CTA is in its cluster. */
struct sm90_ctx {
	uint32_t full, empty, order; /* barrier arrays */
	uint32_t ring; /* slot 0, 1024-B aligned */
	uint32_t staging; /* after the ring: TMA epilogue buffers */
	uint32_t stages, k_tiles;
	uint32_t cta_x, cta_y, cx, cy;
	uint32_t cluster, clusters; /* this CTA's place, clusters launched */
	bool early_release; /* GEMMD_FAULT_EARLY_RELEASE: tests only */
	struct gemmd_sched sched;
	/*
	 * Units [0, dp) go whole; stream-K cuts the rest along K into
	 * sk_iters k-tiles, of which this cluster does [sk_begin, sk_end).
	 */
	uint32_t dp, sk_iters, sk_begin, sk_end;
};

/* Pipeline position: slot and the parity to wait for. */
struct pipe_state {
	uint32_t slot, phase;
};

__device__ __forceinline__ void pipe_advance(pipe_state &p, uint32_t stages)
{
	if (++p.slot == stages) {
		p.slot = 0;
		p.phase ^= 1;
	}
}

/* Skip n positions at once (pingpong: the other consumer's k-tiles). */
[[maybe_unused]] __device__ __forceinline__ void
pipe_skip(pipe_state &p, uint32_t n, uint32_t stages)
{
	const uint32_t t = p.slot + n;

	p.phase ^= (t / stages) & 1;
	p.slot = t % stages;
}

/* ---- work list ----------------------------------------------------------- */

/*
 * The units that stream-K cuts along K: those of the last wave when it
 * is partial, all of them where there is less than one wave, and one
 * full wave more where the partial one is less than half full, so that
 * no cluster's share is much under half a unit (each cut costs a slot
 * of partial sums written and read again).
 */
__device__ __forceinline__ uint32_t sk_units(uint32_t units, uint32_t clusters)
{
	uint32_t rem = units % clusters;

	if (rem && 2 * rem < clusters && units > clusters)
		rem += clusters;
	return rem;
}

/* The first of cluster i's k-tiles among n stream-K k-tiles. */
__device__ __forceinline__ uint32_t sk_first(uint32_t i, uint32_t n,
					     uint32_t clusters)
{
	return static_cast<uint32_t>(static_cast<uint64_t>(i) * n / clusters);
}

/* A piece of work: k-tiles [kb, ke) of unit u. */
struct work {
	uint32_t u, kb, ke;
};

/* Where a cluster is in its list: whole units, then its stream-K range. */
struct work_iter {
	uint32_t u, pos;
};

/*
 * The data-parallel walk starts from the cluster's place, in a word of
 * shared memory: its launch index (thread 0 writes it before the CTA
 * barrier), or the place the cluster claimed, which the claiming CTA
 * writes into every CTA of the cluster (place_take()).  Each thread
 * reads it once, where its walk starts, rather than every thread
 * updating its sm90_ctx.
 */
__device__ __forceinline__ uint32_t place_word(const sm90_ctx &c)
{
	return c.full + 16 * GEMMD_MAX_STAGES + 32;
}

template <bool SK>
__device__ __forceinline__ uint32_t place_of(const sm90_ctx &c)
{
	return SK ? c.cluster : ld_shared_u32(place_word(c));
}

template <bool SK>
__device__ __forceinline__ work_iter work_start(const sm90_ctx &c)
{
	return { place_of<SK>(c), c.sk_begin };
}

/*
 * The next piece, in the same order for the producer and the consumers
 * of every CTA of the cluster.  A stream-K range is cut at unit ends:
 * only its first piece can start inside a unit, only its last end
 * inside one.  SK: built for stream-K (the _sk entry).
 */
template <bool SK>
__device__ __forceinline__ bool work_next(const sm90_ctx &c, work_iter &it,
					  work &w)
{
	uint32_t su;

	if (it.u < c.dp) {
		w = { it.u, 0, c.k_tiles };
		it.u += c.clusters;
		return true;
	}
	if (!SK || it.pos >= c.sk_end)
		return false;
	su = it.pos / c.k_tiles;
	w.u = c.dp + su;
	w.kb = it.pos - su * c.k_tiles;
	w.ke = min(c.k_tiles, w.kb + (c.sk_end - it.pos));
	it.pos += w.ke - w.kb;
	return true;
}

/* Whether work_next() has another piece. */
template <bool SK>
__device__ __forceinline__ bool work_more(const sm90_ctx &c,
					  const work_iter &it)
{
	return it.u < c.dp || (SK && it.pos < c.sk_end);
}

/* ---- placement (gemm_args.placement, gemm-abi.h) ------------------------- */

/*
 * A place for this cluster: the next of its own GPC group's, or, that
 * group full, the next free one of the first group with one left.  Each
 * counter value goes to one claim; with as many places as clusters no
 * cluster can find every group full (the places would all be taken by
 * the others, at most one each), so every place goes to one cluster.
 */
__device__ __forceinline__ uint32_t place_claim(gemm_places *pl)
{
	const uint32_t sm = sreg_smid();
	const uint32_t own = sm < GEMMD_MAX_SMS ? pl->sm_group[sm] :
						  GEMMD_NO_GROUP;
	const uint32_t groups = pl->groups;
	uint32_t pos;

	if (own < groups) {
		pos = atomicAdd(&pl->count[own], 1);
		if (pos < pl->group_cap[own])
			return pl->group_base[own] + pos;
	}
	for (uint32_t g = 0; g < groups && g < GEMMD_MAX_GROUPS; g++) {
		if (g == own)
			continue;
		pos = atomicAdd(&pl->count[g], 1);
		if (pos < pl->group_cap[g])
			return pl->group_base[g] + pos;
	}
	__trap(); /* the caps do not add up to the clusters: a worker bug */
	return 0;
}

/*
 * The cluster's first CTA claims a place (a consumer thread: the
 * producer's few registers spilled with the claim) and hands it to
 * every CTA of the cluster, whose producer and consumers all walk the
 * work from it (place_of()).  Every thread of the cluster calls this,
 * after setmaxnreg.
 */
__device__ __forceinline__ void place_take(const sm90_ctx &c,
					   const gemm_args &args)
{
	if (threadIdx.x == 128 && c.cta_x == 0 && c.cta_y == 0) {
		const uint32_t v = place_claim(
			reinterpret_cast<gemm_places *>(args.placement));

		for (uint32_t r = 0; r < c.cx * c.cy; r++)
			st_shared_cluster(place_word(c), r, v);
	}
	if (c.cx * c.cy > 1)
		cluster_sync();
	else
		__syncthreads();
}

/*
 * The counters start every launch at zero: the last cluster to count
 * itself in, after its claim (ordered before by the barrier in
 * place_take() and the fence), sets them back.  The next launch claims
 * only once this grid has completed, its stores visible.
 */
__device__ __forceinline__ void place_release(const gemm_args &args,
					      uint32_t clusters)
{
	gemm_places *const pl = reinterpret_cast<gemm_places *>(args.placement);

	__threadfence();
	if (atomicAdd(&pl->claimed, 1) != clusters - 1)
		return;
	__threadfence();
	for (uint32_t g = 0; g < GEMMD_MAX_GROUPS; g++)
		atomicExch(&pl->count[g], 0);
	atomicExch(&pl->claimed, 0);
}

/* ---- producer ------------------------------------------------------------ */

/* CTA-rank masks of the multicast groups: the CTA's row (same x), column. */
__device__ __forceinline__ uint16_t row_mask(const sm90_ctx &c)
{
	uint16_t m = 0;

	for (uint32_t j = 0; j < c.cy; j++)
		m |= 1u << (c.cta_x + j * c.cx);
	return m;
}

__device__ __forceinline__ uint16_t col_mask(const sm90_ctx &c)
{
	uint16_t m = 0;

	for (uint32_t i = 0; i < c.cx; i++)
		m |= 1u << (i + c.cta_y * c.cx);
	return m;
}

/*
 * This CTA's share of an operand tile that its multicast group of
 * `parts` CTAs all read: part `part` of them.  A K-major tile is cut by
 * rows, each 64-wide chunk of an MN-major tile by k rows; either way a
 * share is whole 1024-B swizzle atoms (8 rows of 128 B), so it lands
 * exactly where a load of the whole tile would put it.  Each CTA loads
 * its share and multicasts it: the group's L2 reads and TMA issues are
 * spread evenly instead of all falling on one CTA.  The host cuts the
 * tensor map boxes to match (run_operand_map()).
 */
struct share {
	uint32_t dst; /* byte offset in the tile */
	int32_t rows, k; /* coordinate offsets */
};

template <typename Cfg, bool KMAJOR, int ROWS>
__device__ __forceinline__ share share_of(uint32_t part, uint32_t parts)
{
	const uint32_t n = KMAJOR ? ROWS / parts : Cfg::bk / parts;
	const uint32_t first = part * n;

	return { first * 128, KMAJOR ? (int32_t)first : 0,
		 KMAJOR ? 0 : (int32_t)first };
}

/*
 * A share of an operand tile: a K-major tile is one box of (BK, rows);
 * an MN-major tile is rows/64 boxes of (64, k rows), chunk_bytes apart.
 * mask 0 means a local load.
 */
template <typename Cfg, bool KMAJOR, int ROWS>
__device__ __forceinline__ void
load_tile(uint32_t dst, const CUtensorMap *map, int32_t k0, int32_t r0,
	  const share &s, uint32_t bar, uint16_t mask)
{
	dst += s.dst;
	k0 += s.k;
	r0 += s.rows;
	if constexpr (KMAJOR) {
		if (mask)
			tma_load_2d_mc(dst, map, k0, r0, bar, mask);
		else
			tma_load_2d(dst, map, k0, r0, bar);
	} else {
#pragma unroll
		for (int c = 0; c < ROWS / 64; c++) {
			const uint32_t d = dst + c * Cfg::chunk_bytes;

			if (mask)
				tma_load_2d_mc(d, map, r0 + 64 * c, k0, bar,
					       mask);
			else
				tma_load_2d(d, map, r0 + 64 * c, k0, bar);
		}
	}
}

/*
 * What the producer needs before its first load that takes a while to
 * work out (loops over the cluster, divisions).  Its warp works it out
 * before the CTA barrier, while thread 0 sets up the barriers, and its
 * first pass over the ring skips the waits for slots never filled.
 * Where the consumers hold 192 accumulators the producer has 24
 * registers, too few for either: it works the tile out after
 * setmaxnreg and waits on every slot.
 */
template <typename Cfg> struct early_producer {
	static constexpr bool on = !Cfg::wide_acc;
	static constexpr uint32_t warp = on ? 1 : 0;
};

/* Few registers: they live across the producer's setmaxnreg. */
struct producer_first {
	uint32_t masks; /* see multicast_masks() */
	uint32_t tm, tn; /* the first piece's tile */
};

/*
 * The CTAs each operand's loads go to: A's mask in the low half, B's in
 * the high one.  A is shared along the cluster's y, B along its x.
 */
__device__ __forceinline__ uint32_t multicast_masks(const sm90_ctx &c)
{
	const uint32_t a = c.cy > 1 ? row_mask(c) : 0;
	const uint32_t b = c.cx > 1 ? col_mask(c) : 0;

	return a | b << 16;
}

template <typename Cfg, bool SK>
__device__ __forceinline__ void
producer_prepare(const sm90_ctx &c, producer_first &f, uint32_t place)
{
	/* Before the CTA barrier the place word may not be written yet. */
	work_iter it = { place, c.sk_begin };
	work w;

	f.masks = multicast_masks(c);
	/* A CTA with no piece never reads f.tm, f.tn. */
	if (work_next<SK>(c, it, w))
		gemmd_sched_tile(c.sched, w.u, c.cta_x, c.cta_y, f.tm, f.tn);
}

template <typename Cfg, bool SK>
__device__ __forceinline__ void
producer(const sm90_ctx &c, const producer_first &f, const CUtensorMap *tma_a,
	 const CUtensorMap *tma_b)
{
	constexpr bool early = early_producer<Cfg>::on;
	/* A is shared along the cluster's y, B along its x. */
	const share sa = share_of<Cfg, Cfg::a_kmajor, Cfg::bm>(c.cta_y, c.cy);
	const share sb = share_of<Cfg, Cfg::b_kmajor, Cfg::bn>(c.cta_x, c.cx);
	const uint32_t masks = early ? f.masks : multicast_masks(c);
	const uint16_t mask_a = masks & 0xffff, mask_b = masks >> 16;
	/*
	 * Bit 1 of the phase: the first pass over the ring, whose slots
	 * are free (their waits would pass at once); cleared at the wrap.
	 */
	pipe_state p = { 0, early ? 1u | 2u : 1u };
	work_iter it = work_start<SK>(c);
	work w;

	tma_prefetch_desc(tma_a);
	tma_prefetch_desc(tma_b);

#pragma unroll 1
	while (work_next<SK>(c, it, w)) {
		uint32_t tm, tn;

		/* Tiles outside D load zero-filled boxes for their peers. */
		if (early && p.phase == 3 && p.slot == 0) {
			tm = f.tm; /* the first piece */
			tn = f.tn;
		} else {
			gemmd_sched_tile(c.sched, w.u, c.cta_x, c.cta_y, tm,
					 tn);
		}
#pragma unroll 1
		for (uint32_t kt = w.kb; kt < w.ke; kt++) {
			const uint32_t a = c.ring + p.slot * Cfg::stage_bytes;
			const uint32_t full = c.full + 8 * p.slot;
			const int32_t k0 = kt * Cfg::bk;

			if (!early || !(p.phase & 2))
				mbar_wait(c.empty + 8 * p.slot, p.phase);
			/*
			 * The whole stage: the peers' shares land here too,
			 * and TMA counts zero-filled bytes on edge tiles.
			 */
			mbar_arrive_expect_tx(full, Cfg::stage_bytes);
			load_tile<Cfg, Cfg::a_kmajor, Cfg::bm>(
				a, tma_a, k0, tm * Cfg::bm, sa, full, mask_a);
			load_tile<Cfg, Cfg::b_kmajor, Cfg::bn>(a + Cfg::a_bytes,
							       tma_b, k0,
							       tn * Cfg::bn, sb,
							       full, mask_b);
			pipe_advance(p, c.stages);
			if (early && p.slot == 0)
				p.phase &= 1;
		}
	}

	/*
	 * Producer tail: wait until every slot still in flight has been
	 * released by all its readers, here and in the peers it feeds.
	 * This is what keeps the CTA alive until the last remote arrive on
	 * its empty barriers has landed (see the kernel's end).  Slots of
	 * a first pass never finished were never filled: their waits pass.
	 */
	p.phase &= 1;
#pragma unroll 1
	for (uint32_t i = 0; i < c.stages; i++) {
		mbar_wait(c.empty + 8 * p.slot, p.phase);
		pipe_advance(p, c.stages);
	}
}

/* ---- consumer mainloop --------------------------------------------------- */

/*
 * Release a slot on every CTA that may multicast into this one: its
 * cluster row and column, itself once.  Lane l of the calling warp takes
 * destination l, so all cluster_x + cluster_y - 1 arrive at once.
 */
__device__ __forceinline__ void release_slot(const sm90_ctx &c, uint32_t bar,
					     uint32_t lane)
{
	uint32_t rank, j;

	if (c.cx * c.cy == 1) {
		if (lane == 0)
			mbar_arrive(bar);
		return;
	}
	if (lane < c.cx) {
		rank = lane + c.cta_y * c.cx;
	} else if (lane < c.cx + c.cy - 1) {
		j = lane - c.cx;
		j += j >= c.cta_y; /* skip this CTA: counted above */
		rank = c.cta_x + j * c.cx;
	} else {
		return;
	}
	mbar_arrive_cluster(bar, rank);
}

template <typename Cfg> struct descs {
	uint64_t a, b; /* A: the first slice */
	/*
	 * Descriptor start-address steps (16-B units): per k16, per slot,
	 * per 64-row slice of A (an immediate: one register pair less).
	 */
	static constexpr uint32_t a_k16 = Cfg::a_kmajor ? 2 : 2048 >> 4;
	static constexpr uint32_t b_k16 = Cfg::b_kmajor ? 2 : 2048 >> 4;
	static constexpr uint32_t slot = Cfg::stage_bytes >> 4;
	static constexpr uint32_t a_slice = Cfg::chunk_bytes >> 4;
};

/* Descriptors for slot 0 of A rows [row0, row0 + wg_rows) and of B. */
template <typename Cfg>
__device__ __forceinline__ void make_descs(const sm90_ctx &c, uint32_t row0,
					   descs<Cfg> &d)
{
	const uint32_t a = c.ring + row0 / 64 * Cfg::chunk_bytes;

	d.a = Cfg::a_kmajor ? smem_desc_sw128(a) :
			      smem_desc_sw128_mn(a, Cfg::chunk_bytes);
	d.b = Cfg::b_kmajor ? smem_desc_sw128(c.ring + Cfg::a_bytes) :
			      smem_desc_sw128_mn(c.ring + Cfg::a_bytes,
						 Cfg::chunk_bytes);
}

/*
 * One k-tile: wait for its slot, issue its wgmmas, and give back the
 * slot of the k-tile before, whose batch has finished reading it.  The
 * first k-tile of a tile starts the accumulators afresh.
 *
 * ready: whether this k-tile's slot was seen full during the step
 * before.  Pingpong's consumer has the tensor cores to itself, so the
 * time from one batch's end to the next one's issue is idle time for
 * them: asking after the next slot while the wgmmas run takes the wait
 * off that path (4 % at 1024^3 on an H200, docs/perf.md).  Cooperative
 * consumers share the tensor cores, whose queue holds the other
 * consumer's batch through that gap; they keep the plain wait.
 */
template <typename T, typename Cfg, bool FIRST>
__device__ __forceinline__ void
mainloop_step(const sm90_ctx &c, const descs<Cfg> &d,
	      float (&acc)[Cfg::mi][Cfg::n_acc], pipe_state &p, uint32_t &prev,
	      uint32_t lane, bool warp0, bool &ready)
{
	using D = descs<Cfg>;
	constexpr bool ta = !Cfg::a_kmajor, tb = !Cfg::b_kmajor;
	const uint64_t off = p.slot * D::slot;
	pipe_state next = p;

	if (FIRST || !ready)
		mbar_wait(c.full + 8 * p.slot, p.phase);
	/*
	 * The injected race: give the slot back before the wgmmas that
	 * read it are even issued, so the producer's next TMA into it can
	 * land first.  (On one k-tile per tile alone it went unnoticed on
	 * an H200: the wgmmas mostly win.)
	 */
	if (c.early_release && warp0)
		release_slot(c, c.empty + 8 * p.slot, lane);
	if constexpr (!FIRST) {
#pragma unroll
		for (int i = 0; i < Cfg::mi; i++)
			wgmma_fence_acc(acc[i]);
	}
	wgmma_fence();
#pragma unroll
	for (int kk = 0; kk < Cfg::bk / 16; kk++) {
#pragma unroll
		for (int i = 0; i < Cfg::mi; i++) {
			const uint64_t da =
				d.a + off + i * D::a_slice + kk * D::a_k16;
			const uint64_t db = d.b + off + kk * D::b_k16;

			if (FIRST && kk == 0)
				wgmma_m64k16<T, Cfg::bn, ta, tb, true>(
					acc[i], da, db, 0);
			else
				wgmma_m64k16<T, Cfg::bn, ta, tb>(acc[i], da, db,
								 1);
		}
	}
	wgmma_commit();
#pragma unroll
	for (int i = 0; i < Cfg::mi; i++)
		wgmma_fence_acc(acc[i]);
	pipe_advance(next, c.stages);
	if constexpr (Cfg::pingpong)
		ready = mbar_test_wait(c.full + 8 * next.slot, next.phase);
	/* Keep this k-tile's batch in flight; the one before has finished. */
	wgmma_wait<1>();
#pragma unroll
	for (int i = 0; i < Cfg::mi; i++)
		wgmma_fence_acc(acc[i]);
	if (!FIRST && warp0 && !c.early_release)
		release_slot(c, c.empty + 8 * prev, lane);
	prev = p.slot;
	p = next;
}

/*
 * One piece's k-loop: n k-tiles of a tile (all of them but under
 * stream-K).  Returns with every wgmma issued; the caller drains with
 * mainloop_tail().  prev is the slot still held (released late).
 * hook() runs once, while the first k-tile's wgmmas are in flight: the
 * tensor cores work on this tile while the warps store the last one.
 * The first k-tile is peeled so that what the hook reads is dead after
 * it, not live across the whole loop; there is one, as k >= 1 (launch_ok),
 * and it writes the accumulators without reading them, so they are dead
 * from the end of one tile to the start of the next.
 */
template <typename T, typename Cfg, typename Hook>
__device__ __forceinline__ void
mainloop(const sm90_ctx &c, const descs<Cfg> &d,
	 float (&acc)[Cfg::mi][Cfg::n_acc], pipe_state &p, uint32_t &prev,
	 uint32_t lane, bool warp0, const Hook &hook, uint32_t n)
{
	bool ready = false;

	mainloop_step<T, Cfg, true>(c, d, acc, p, prev, lane, warp0, ready);
	hook();
#pragma unroll 1
	for (uint32_t kt = 1; kt < n; kt++)
		mainloop_step<T, Cfg, false>(c, d, acc, p, prev, lane, warp0,
					     ready);
}

template <typename Cfg>
__device__ __forceinline__ void
mainloop_tail(const sm90_ctx &c, float (&acc)[Cfg::mi][Cfg::n_acc],
	      uint32_t prev, uint32_t lane, bool warp0)
{
	wgmma_wait<0>();
#pragma unroll
	for (int i = 0; i < Cfg::mi; i++)
		wgmma_fence_acc(acc[i]);
	if (warp0 && !c.early_release)
		release_slot(c, c.empty + 8 * prev, lane);
}

/* ---- epilogue ------------------------------------------------------------ */

/* An element of C as fp32. */
template <typename O> __device__ __forceinline__ float load_c(const O *cp)
{
	if constexpr (sizeof(O) == 4)
		return *reinterpret_cast<const float *>(cp);
	else
		return gemmd_type<O>::to_float(
			*reinterpret_cast<const uint16_t *>(cp));
}

/* D = alpha * acc + beta * C for one value; C only when beta != 0. */
template <typename O>
__device__ __forceinline__ float combine(const gemm_args &args, float acc,
					 const O *cp)
{
	float v = args.alpha * acc;

	if (args.beta != 0.0f)
		v += args.beta * load_c<O>(cp);
	return v;
}

/* Store values for p[0], p[1], of which only the first n_left are in D. */
template <typename O>
__device__ __forceinline__ void store_pair(O *p, int32_t n_left, bool pair_ok,
					   float v0, float v1)
{
	if (n_left >= 2 && pair_ok) {
		if constexpr (sizeof(O) == 4)
			*reinterpret_cast<float2 *>(p) = make_float2(v0, v1);
		else
			*reinterpret_cast<uint32_t *>(p) =
				gemmd_type<O>::pack2(v0, v1);
	} else if (n_left >= 2) {
		p[0] = gemmd_type<O>::from_float(v0);
		p[1] = gemmd_type<O>::from_float(v1);
	} else if (n_left == 1) {
		p[0] = gemmd_type<O>::from_float(v0);
	}
}

/*
 * Accumulator layout of m64nNk16: warp w of the warpgroup holds rows
 * 16w + lane/4 (+8); register 4j + {0,1} holds columns 8j + 2*(lane%4)
 * + {0,1} of the first row, 4j + {2,3} the same columns 8 rows below.
 */
template <typename Cfg, typename O>
__device__ __forceinline__ void
store_direct(const gemm_args &args, const float (&acc)[Cfg::mi][Cfg::n_acc],
	     uint32_t row0, uint32_t col0, uint32_t tid)
{
	const uint32_t warp = tid / 32, lane = tid % 32;
	const uint32_t col = col0 + 2 * (lane % 4);
	const bool pair_ok = (args.ldd & 1) == 0;
	const int32_t n_left = static_cast<int32_t>(args.n - col);

#pragma unroll
	for (int i = 0; i < Cfg::mi; i++) {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const uint32_t row =
				row0 + 64 * i + warp * 16 + lane / 4 + 8 * h;
			const uint64_t at =
				static_cast<uint64_t>(row) * args.ldd + col;
			O *p = reinterpret_cast<O *>(args.d) + at;
			const O *cp = reinterpret_cast<const O *>(args.c) + at;

			if (row >= args.m)
				continue;
#pragma unroll
			for (int j = 0; j < Cfg::n_acc / 4; j++) {
				const int32_t left = n_left - 8 * j;
				float v0, v1;

				if (left <= 0)
					break;
				v0 = combine<O>(args, acc[i][4 * j + 2 * h],
						cp + 8 * j);
				v1 = left > 1 ?
					     combine<O>(
						     args,
						     acc[i][4 * j + 2 * h + 1],
						     cp + 8 * j + 1) :
					     0.0f;
				store_pair(p + 8 * j, left, pair_ok, v0, v1);
			}
		}
	}
}

/* Byte offset of 16-byte unit u of row r in a 128B-swizzled buffer. */
__device__ __forceinline__ uint32_t swizzle128(uint32_t r, uint32_t u)
{
	return r * 128 + ((u ^ (r & 7)) << 4);
}

/*
 * 16-bit D with beta 0 goes out in 64-column chunks of packed registers:
 * chunk q of a consumer's tile is columns [64 (q % per_slice), + 64) of
 * slice q / per_slice, 16 registers a thread, alpha applied.
 */
template <typename Cfg> struct chunks {
	static constexpr int per_slice = Cfg::bn / 64;
	static constexpr int count = Cfg::mi * per_slice;
};

template <typename Cfg, typename O>
__device__ __forceinline__ void
pack_chunk(const float (&acc)[Cfg::mi][Cfg::n_acc], int q, float alpha,
	   uint32_t (&v)[16])
{
	const int i = q / chunks<Cfg>::per_slice;
	const int b = 32 * (q % chunks<Cfg>::per_slice);

#pragma unroll
	for (int j = 0; j < 16; j++)
		v[j] = gemmd_type<O>::pack2(alpha * acc[i][b + 2 * j],
					    alpha * acc[i][b + 2 * j + 1]);
}

/*
 * One warp's 16 rows of a packed chunk: the registers of column block j
 * (rows r and r + 8 of the warp) are two 8x8 matrices as stmatrix takes
 * them, so four instructions write the chunk, each two column blocks.
 */
__device__ __forceinline__ void stage_packed(const uint32_t (&v)[16],
					     uint32_t buf, uint32_t lane)
{
	/* Lane l addresses row l % 8 of matrix l / 8: block 2q + m / 2. */
	const uint32_t m = lane / 8;
	const uint32_t r = 8 * (m & 1) + lane % 8;

#pragma unroll
	for (uint32_t q = 0; q < 4; q++)
		stmatrix_x4(buf + swizzle128(r, 2 * q + m / 2), v[4 * q],
			    v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
}

/*
 * The same for any output type and beta: element by element, with
 * alpha * acc + beta * C for the elements inside D.  grow and gcol are
 * the global coordinates of the warp's first row and the chunk's first
 * column.
 */
template <typename Cfg, typename O>
__device__ __forceinline__ void
stage_general(const gemm_args &args, const float (&a)[Cfg::n_acc], uint32_t ch,
	      uint32_t buf, uint32_t lane, uint32_t grow, uint32_t gcol)
{
	constexpr uint32_t regs = 128 / sizeof(O) / 8 * 4; /* per chunk */
	const bool beta = args.beta != 0.0f;
	/*
	 * C of the lane's two rows, found once: with 192 accumulators live
	 * an address per element does not fit in the registers left.
	 */
	const O *crow[2];
	bool row_in[2];

#pragma unroll
	for (uint32_t h = 0; h < 2; h++) {
		const uint32_t gr = grow + lane / 4 + 8 * h;

		row_in[h] = beta && gr < args.m;
		crow[h] = reinterpret_cast<const O *>(args.c) +
			  static_cast<uint64_t>(row_in[h] ? gr : 0) * args.ldd;
	}
#pragma unroll
	for (uint32_t q = 0; q < regs; q += 2) {
		const uint32_t j = q / 4, h = (q / 2) % 2;
		const uint32_t r = lane / 4 + 8 * h;
		const uint32_t cc = 8 * j + 2 * (lane % 4);
		const uint32_t byte = cc * sizeof(O);
		const uint32_t addr =
			buf + swizzle128(r, byte >> 4) + (byte & 15);
		const uint32_t gc = gcol + cc;
		float v0 = args.alpha * a[ch * regs + q];
		float v1 = args.alpha * a[ch * regs + q + 1];

		if (row_in[h] && gc < args.n) {
			const O *cp = crow[h] + gc;

			v0 += args.beta * load_c<O>(cp);
			if (gc + 1 < args.n)
				v1 += args.beta * load_c<O>(cp + 1);
		}
		if constexpr (sizeof(O) == 4)
			asm volatile(
				"st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr),
				"f"(v0), "f"(v1)
				: "memory");
		else
			asm volatile("st.shared.b32 [%0], %1;" ::"r"(addr),
				     "r"(gemmd_type<O>::pack2(v0, v1))
				     : "memory");
	}
}

/*
 * Through shared memory, warp by warp: each warp of the consumer owns
 * rows [16w, 16w + 16) of every 64-row slice, so it stages and stores
 * them alone, with no barrier across the warpgroup.  For each 128-byte
 * column chunk (64 16-bit or 32 fp32 columns) the warp writes its 16
 * rows into one of its two staging buffers with the 128B swizzle of
 * tma_d, and lane 0 stores them with TMA (which also clips the edges of
 * D).  A buffer is rewritten only once the store issued from it two
 * chunks ago has finished reading it.  set is the consumer's set of
 * buffers (the wg the epilogue functions pass on): the consumers of ws
 * and cooperative store at once, each into its own set; pingpong's
 * store in turn and share set 0 where the launch has room for one set
 * only (see staging_sets()).
 */
__device__ __forceinline__ uint32_t chunk_buffer(const sm90_ctx &c,
						 uint32_t set, uint32_t tid,
						 uint32_t buf_seq)
{
	const uint32_t warp = tid / 32;

	if (tid % 32 == 0)
		bulk_wait_read<1>();
	__syncwarp();
	return c.staging +
	       ((4 * set + warp) * 2 + (buf_seq & 1)) * GEMMD_EPI_BUF_BYTES;
}

/* Hand the staged chunk to TMA, for D at (row, col). */
__device__ __forceinline__ void chunk_store(const CUtensorMap *tma_d,
					    uint32_t buf, uint32_t row,
					    uint32_t col, uint32_t tid,
					    uint32_t &buf_seq)
{
	fence_proxy_async_smem();
	__syncwarp();
	if (tid % 32 == 0) {
		tma_store_2d(tma_d, col, row, buf);
		bulk_commit();
	}
	buf_seq++;
}

/* Row of D where warp tid / 32 of a consumer starts in slice i. */
__device__ __forceinline__ uint32_t warp_row(uint32_t row0, int i, uint32_t tid)
{
	return row0 + 64 * i + GEMMD_EPI_BOX_ROWS * (tid / 32);
}

/* Stage and store packed chunk q of the tile at (row0, col0). */
template <typename Cfg>
__device__ __forceinline__ void
store_chunk(const sm90_ctx &c, const CUtensorMap *tma_d,
	    const uint32_t (&v)[16], int q, uint32_t row0, uint32_t col0,
	    uint32_t tid, uint32_t wg, uint32_t &buf_seq)
{
	const uint32_t row = warp_row(row0, q / chunks<Cfg>::per_slice, tid);
	const uint32_t col = col0 + 64 * (q % chunks<Cfg>::per_slice);
	const uint32_t buf = chunk_buffer(c, wg, tid, buf_seq);

	stage_packed(v, buf, tid % 32);
	chunk_store(tma_d, buf, row, col, tid, buf_seq);
}

/* Chunks [from, to) straight from the accumulators. */
template <typename Cfg, typename O>
__device__ __forceinline__ void
store_chunks(const sm90_ctx &c, const CUtensorMap *tma_d,
	     const float (&acc)[Cfg::mi][Cfg::n_acc], float alpha, int from,
	     int to, uint32_t row0, uint32_t col0, uint32_t tid, uint32_t wg,
	     uint32_t &buf_seq)
{
	/* Unrolled: registers are indexed with constants only. */
#pragma unroll
	for (int q = 0; q < chunks<Cfg>::count; q++) {
		uint32_t v[16];

		if (q < from || q >= to)
			continue;
		pack_chunk<Cfg, O>(acc, q, alpha, v);
		store_chunk<Cfg>(c, tma_d, v, q, row0, col0, tid, wg, buf_seq);
	}
}

template <typename Cfg, typename O>
__device__ __forceinline__ void
store_general(const sm90_ctx &c, const gemm_args &args,
	      const CUtensorMap *tma_d, const float (&acc)[Cfg::mi][Cfg::n_acc],
	      uint32_t row0, uint32_t col0, uint32_t tid, uint32_t wg,
	      uint32_t &buf_seq)
{
	constexpr uint32_t cols = 128 / sizeof(O); /* per chunk */

#pragma unroll
	for (int i = 0; i < Cfg::mi; i++) {
		const uint32_t row = warp_row(row0, i, tid);

#pragma unroll
		for (uint32_t ch = 0; ch < Cfg::bn / cols; ch++) {
			const uint32_t buf = chunk_buffer(c, wg, tid, buf_seq);
			const uint32_t col = col0 + ch * cols;

			stage_general<Cfg, O>(args, acc[i], ch, buf, tid % 32,
					      row, col);
			chunk_store(tma_d, buf, row, col, tid, buf_seq);
		}
	}
}

template <typename Cfg, typename O>
__device__ __forceinline__ void
store_tma(const sm90_ctx &c, const gemm_args &args, const CUtensorMap *tma_d,
	  const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t row0, uint32_t col0,
	  uint32_t tid, uint32_t wg, uint32_t &buf_seq)
{
	if constexpr (sizeof(O) == 2) {
		/* 16-bit D and no C: packed, four stmatrix a chunk. */
		if (args.beta == 0.0f) {
			store_chunks<Cfg, O>(c, tma_d, acc, args.alpha, 0,
					     chunks<Cfg>::count, row0, col0,
					     tid, wg, buf_seq);
			return;
		}
	}
	store_general<Cfg, O>(c, args, tma_d, acc, row0, col0, tid, wg,
			      buf_seq);
}

template <typename Cfg, typename O>
__device__ __forceinline__ void
epilogue_as(const sm90_ctx &c, const gemm_args &args, const CUtensorMap *tma_d,
	    const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t row0,
	    uint32_t col0, uint32_t tid, uint32_t wg, uint32_t &buf_seq)
{
	if (args.epilogue == GEMMD_EPILOGUE_TMA)
		store_tma<Cfg, O>(c, args, tma_d, acc, row0, col0, tid, wg,
				  buf_seq);
	else
		store_direct<Cfg, O>(args, acc, row0, col0, tid);
}

template <typename Cfg>
__device__ __forceinline__ void
epilogue(const sm90_ctx &c, const gemm_args &args, const CUtensorMap *tma_d,
	 const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t row0, uint32_t col0,
	 uint32_t tid, uint32_t wg, uint32_t &buf_seq)
{
	switch (args.out) {
	case GEMMD_OUT_FP32:
		epilogue_as<Cfg, float>(c, args, tma_d, acc, row0, col0, tid,
					wg, buf_seq);
		break;
	case GEMMD_OUT_FP16:
		epilogue_as<Cfg, __half>(c, args, tma_d, acc, row0, col0, tid,
					 wg, buf_seq);
		break;
	default:
		epilogue_as<Cfg, __nv_bfloat16>(c, args, tma_d, acc, row0, col0,
						tid, wg, buf_seq);
		break;
	}
}

/* ---- consumers ----------------------------------------------------------- */

/*
 * A tile whose store waits for the next tile's first wgmmas: with 16-bit
 * D, no C and the TMA epilogue, a consumer stores the first chunks of a
 * tile at once and packs the last `later` into registers, to stage and
 * store them while the tensor cores start on the next tile.  `later` is
 * three quarters of the chunks, rounded down (3 of 4 for 128x256 and
 * 256x128: 48 registers beside the accumulators, 2 of 3 for 128x192, 1
 * of 2 for 128x128): that fits in the consumers' 232 without spilling;
 * the whole tile does not.
 */
template <typename Cfg> struct deferred_store {
	static constexpr int later = chunks<Cfg>::count * 3 / 4;
	static constexpr int first = chunks<Cfg>::count - later;
	uint32_t v[later][16];
	uint32_t row0, col0;
	bool pending;
};

template <typename Cfg, typename O>
__device__ __forceinline__ void defer_store_as(
	const sm90_ctx &c, const gemm_args &args, const CUtensorMap *tma_d,
	const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t row0, uint32_t col0,
	uint32_t tid, uint32_t wg, uint32_t &buf_seq, deferred_store<Cfg> &ds)
{
	using DS = deferred_store<Cfg>;

	store_chunks<Cfg, O>(c, tma_d, acc, args.alpha, 0, DS::first, row0,
			     col0, tid, wg, buf_seq);
#pragma unroll
	for (int j = 0; j < DS::later; j++)
		pack_chunk<Cfg, O>(acc, DS::first + j, args.alpha, ds.v[j]);
	ds.row0 = row0;
	ds.col0 = col0;
	ds.pending = true;
}

template <typename Cfg>
__device__ __forceinline__ void
defer_store(const sm90_ctx &c, const gemm_args &args, const CUtensorMap *tma_d,
	    const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t row0,
	    uint32_t col0, uint32_t tid, uint32_t wg, uint32_t &buf_seq,
	    deferred_store<Cfg> &ds)
{
	if (args.out == GEMMD_OUT_FP16)
		defer_store_as<Cfg, __half>(c, args, tma_d, acc, row0, col0,
					    tid, wg, buf_seq, ds);
	else
		defer_store_as<Cfg, __nv_bfloat16>(c, args, tma_d, acc, row0,
						   col0, tid, wg, buf_seq, ds);
}

[[maybe_unused]] __device__ __forceinline__ bool defers(const gemm_args &args)
{
	return args.epilogue == GEMMD_EPILOGUE_TMA &&
	       args.out != GEMMD_OUT_FP32 && args.beta == 0.0f;
}

/*
 * The entry's epilogues: every one, chosen from args at run time, or
 * with PACKED (the _packed entries, gemm-abi.h) only the TMA store of D
 * in the input type T with no C, which is what launch_ok() requires.
 */
template <typename T, typename Cfg, bool PACKED>
__device__ __forceinline__ void
epilogue_of(const sm90_ctx &c, const gemm_args &args, const CUtensorMap *tma_d,
	    const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t row0,
	    uint32_t col0, uint32_t tid, uint32_t wg, uint32_t &buf_seq)
{
	if constexpr (PACKED)
		store_chunks<Cfg, T>(c, tma_d, acc, args.alpha, 0,
				     chunks<Cfg>::count, row0, col0, tid, wg,
				     buf_seq);
	else
		epilogue<Cfg>(c, args, tma_d, acc, row0, col0, tid, wg,
			      buf_seq);
}

template <typename T, typename Cfg, bool PACKED>
__device__ __forceinline__ void defer_store_of(
	const sm90_ctx &c, const gemm_args &args, const CUtensorMap *tma_d,
	const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t row0, uint32_t col0,
	uint32_t tid, uint32_t wg, uint32_t &buf_seq, deferred_store<Cfg> &ds)
{
	if constexpr (PACKED)
		defer_store_as<Cfg, T>(c, args, tma_d, acc, row0, col0, tid, wg,
				       buf_seq, ds);
	else
		defer_store<Cfg>(c, args, tma_d, acc, row0, col0, tid, wg,
				 buf_seq, ds);
}

/*
 * mainloop()'s hook that stores the deferred chunks.  Not a lambda: its
 * call must be inlined, or the registers go to local memory.
 */
template <typename Cfg> struct store_deferred {
	deferred_store<Cfg> &ds;
	const sm90_ctx &c;
	const CUtensorMap *tma_d;
	uint32_t tid, wg;
	uint32_t &buf_seq;

	__device__ __forceinline__ void operator()() const
	{
		using DS = deferred_store<Cfg>;

		if (!ds.pending)
			return;
#pragma unroll
		for (int j = 0; j < DS::later; j++)
			store_chunk<Cfg>(c, tma_d, ds.v[j], DS::first + j,
					 ds.row0, ds.col0, tid, wg, buf_seq);
		ds.pending = false;
	}
};

template <typename Cfg> struct no_hook {
	__device__ __forceinline__ void operator()() const
	{
	}
};

/* ---- stream-K fixup ------------------------------------------------------ */

/* Named barrier of both consumer warpgroups (0 is the whole CTA's). */
#define SK_BAR 3

/*
 * The slot and flag of the CTA at this CTA's place in cluster i
 * (gemm-abi.h: one slot per CTA in CTA order, then the flags).  In a
 * slot, float4 q of consumer thread t (of 256) is at q * 256 + t:
 * whoever adds it back is the same thread of another CTA, so the layout
 * need not be D's, only coalesced.
 */
[[maybe_unused]] __device__ __forceinline__ uint32_t sk_cta(const sm90_ctx &c,
							    uint32_t i)
{
	return blockIdx.y * gridDim.x + i * c.cx + c.cta_x;
}

template <typename Cfg>
__device__ __forceinline__ float4 *sk_slot(const gemm_args &args, uint32_t cta,
					   uint32_t ct)
{
	return reinterpret_cast<float4 *>(
		       args.workspace +
		       cta * GEMMD_SK_SLOT_BYTES(Cfg::bm, Cfg::bn)) +
	       ct;
}

template <typename Cfg>
__device__ __forceinline__ uint32_t *sk_flag(const gemm_args &args,
					     uint32_t cta)
{
	const uint64_t slots = static_cast<uint64_t>(gridDim.x) * gridDim.y *
			       GEMMD_SK_SLOT_BYTES(Cfg::bm, Cfg::bn);

	return reinterpret_cast<uint32_t *>(args.workspace + slots) + cta;
}

/*
 * A piece that starts inside its unit: leave its partial sums in this
 * CTA's slot and raise the flag (a range's first piece only, so one slot
 * a CTA is enough).  Nobody waits for it but the unit's owner.
 */
template <typename Cfg>
__device__ __forceinline__ void
sk_publish(const sm90_ctx &c, const gemm_args &args,
	   const float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t ct)
{
	const uint32_t cta = sk_cta(c, c.cluster);
	float4 *slot = sk_slot<Cfg>(args, cta, ct);

#pragma unroll
	for (int i = 0; i < Cfg::mi; i++) {
#pragma unroll
		for (int q = 0; q < Cfg::n_acc / 4; q++)
			__stcg(slot + (i * Cfg::n_acc / 4 + q) * 256,
			       make_float4(acc[i][4 * q], acc[i][4 * q + 1],
					   acc[i][4 * q + 2],
					   acc[i][4 * q + 3]));
	}
	/*
	 * The barrier orders every consumer thread's stores before thread
	 * 0's release, which makes them visible with the flag: no fence
	 * per thread (__threadfence() also invalidates L1 here).
	 */
	named_bar_sync(SK_BAR, 256);
	if (ct == 0)
		st_release_gpu(sk_flag<Cfg>(args, cta), 1);
}

/*
 * The owner of unit u (its piece starts at the unit's first k-tile and
 * ends before the last) adds the partial sums of the clusters whose
 * ranges start inside the unit, in cluster order, and lowers their
 * flags for the next launch.  Their pieces are the first of their
 * ranges and this is the last of this one's, so the wait is short, and
 * no CTA waits while it owes another its sums.
 */
template <typename Cfg>
__device__ __forceinline__ void
sk_collect(const sm90_ctx &c, const gemm_args &args,
	   float (&acc)[Cfg::mi][Cfg::n_acc], uint32_t u, uint32_t ct)
{
	const uint32_t end = (u - c.dp + 1) * c.k_tiles;

#pragma unroll 1
	for (uint32_t i = c.cluster + 1; i < c.clusters; i++) {
		const uint32_t first = sk_first(i, c.sk_iters, c.clusters);
		const uint32_t cta = sk_cta(c, i);
		const float4 *slot;

		if (first >= end)
			break;
		if (first == sk_first(i + 1, c.sk_iters, c.clusters))
			continue; /* an empty range */
		if (ct == 0) {
			while (!ld_acquire_gpu(sk_flag<Cfg>(args, cta)))
				__nanosleep(64);
		}
		named_bar_sync(SK_BAR, 256);
		slot = sk_slot<Cfg>(args, cta, ct);
#pragma unroll
		for (int j = 0; j < Cfg::mi; j++) {
#pragma unroll
			for (int q = 0; q < Cfg::n_acc / 4; q++) {
				const float4 v = __ldcg(
					slot + (j * Cfg::n_acc / 4 + q) * 256);

				acc[j][4 * q] += v.x;
				acc[j][4 * q + 1] += v.y;
				acc[j][4 * q + 2] += v.z;
				acc[j][4 * q + 3] += v.w;
			}
		}
		/*
		 * Lowered while the other threads may still read the slot:
		 * safe because a slot is written once a launch, and the next
		 * launch writes it only after griddepcontrol.wait.
		 */
		if (ct == 0)
			*sk_flag<Cfg>(args, cta) = 0;
	}
}

/*
 * The last piece of a CTA: consumer 1 stops `lag` k-tiles short of the
 * end until consumer 0 has issued all of its own, then does the rest
 * with the tensor cores to itself while consumer 0 stores its rows.
 * What D costs at the end of a launch is the bytes stored after the
 * last wgmma, all CTAs at once (8 MB at 2048^3: 1.5 us of 29, where
 * stores beside wgmmas cost about nothing; docs/perf.md, session 19,
 * run 2); this way half of them go out beside wgmmas.  One consumer
 * issuing alone keeps the tensor cores at their rate (session 16, runs
 * 1-3).  Three k-tiles, 1536 cycles on 128x256: about what consumer 0's
 * 32 KB take.  Consumer 1 holds `lag` full slots and the one before
 * while consumer 0 needs the producer to have loaded all of its
 * k-tiles, so lag < stages; and it keeps the first k-tile, which runs
 * the hook, before the wait.  Not under stream-K, whose consumers meet
 * at SK_BAR.  (Computed in the loop, not in a function: ptxas spilled
 * the stream-K entry with one, though it folds to 0 there.)
 */
#define LAG_BAR 4
#define LAG_MOST 3u

/* ws and cooperative: both consumers on every tile, wg_rows rows each. */
template <typename T, typename Cfg, bool SK, bool PACKED>
__device__ __forceinline__ void
consumer_split(const sm90_ctx &c, const gemm_args &args,
	       const CUtensorMap *tma_d, uint32_t wg)
{
	const uint32_t tid = threadIdx.x % 128;
	const uint32_t lane = tid % 32;
	const bool warp0 = tid < 32;
	const bool defer = PACKED || defers(args);
	float acc[Cfg::mi][Cfg::n_acc];
	pipe_state p = { 0, 0 };
	uint32_t prev = 0, buf_seq = 0;
	deferred_store<Cfg> ds = {};
	descs<Cfg> d;
	const store_deferred<Cfg> flush = { ds, c, tma_d, tid, wg, buf_seq };
	work_iter it = work_start<SK>(c);
	work cur;

	make_descs<Cfg>(c, wg * Cfg::wg_rows, d);
#pragma unroll 1
	while (work_next<SK>(c, it, cur)) {
		uint32_t tm, tn, row0, col0;
		const uint32_t n = cur.ke - cur.kb;
		const uint32_t lag =
			!SK && !work_more<SK>(c, it) ?
				min(min(LAG_MOST, c.stages - 1), n - 1) :
				0;

		if (wg == 1 && lag) {
			bool ready = false;

			mainloop<T, Cfg>(c, d, acc, p, prev, lane, warp0, flush,
					 n - lag);
			named_bar_sync(LAG_BAR, 256);
#pragma unroll 1
			for (uint32_t kt = lag; kt; kt--)
				mainloop_step<T, Cfg, false>(
					c, d, acc, p, prev, lane, warp0, ready);
		} else {
			mainloop<T, Cfg>(c, d, acc, p, prev, lane, warp0, flush,
					 n);
			if (lag)
				named_bar_arrive(LAG_BAR, 256);
		}
		mainloop_tail<Cfg>(c, acc, prev, lane, warp0);
		/* Where the tile goes, only now: fewer registers in the loop. */
		if (!gemmd_sched_tile(c.sched, cur.u, c.cta_x, c.cta_y, tm, tn))
			continue;
		/* Stream-K: a piece that is not the unit's first goes back. */
		if (SK && cur.kb) {
			sk_publish<Cfg>(c, args, acc, wg * 128 + tid);
			continue;
		}
		if (SK && cur.ke < c.k_tiles)
			sk_collect<Cfg>(c, args, acc, cur.u, wg * 128 + tid);
		row0 = tm * Cfg::bm + wg * Cfg::wg_rows;
		col0 = tn * Cfg::bn;
		/* The last tile has nothing to overlap with: store it now. */
		if (defer && work_more<SK>(c, it))
			defer_store_of<T, Cfg, PACKED>(c, args, tma_d, acc,
						       row0, col0, tid, wg,
						       buf_seq, ds);
		else
			epilogue_of<T, Cfg, PACKED>(c, args, tma_d, acc, row0,
						    col0, tid, wg, buf_seq);
	}
	flush();
	/*
	 * Only until the stores have read their staging buffers: the
	 * writes themselves complete with the grid, and waiting for them
	 * here would add their latency to the kernel's tail.
	 */
	if (lane == 0)
		bulk_wait_read<0>();
}

/*
 * Ordered barrier of the pingpong consumers: order + 8 * (2 * turn + w)
 * is consumer w's barrier for turn 0 (mainloop) or 1 (epilogue), one
 * arrival per thread of the other consumer.  A consumer waits on its
 * own and arrives on the other's, so each turn passes back and forth;
 * consumer 0 starts at phase 1 and so holds both turns first.
 */
#define ORDER_ARRIVALS 128

[[maybe_unused]] __device__ __forceinline__ void
order_wait(const sm90_ctx &c, uint32_t turn, uint32_t wg, uint32_t phase)
{
	mbar_wait(c.order + 8 * (2 * turn + wg), phase);
}

[[maybe_unused]] __device__ __forceinline__ void
order_arrive(const sm90_ctx &c, uint32_t turn, uint32_t wg)
{
	/*
	 * Each thread releases its own part of the turn's work (its stores
	 * to a shared set of staging buffers), as CUTLASS's
	 * OrderedSequenceBarrier does.  One arrival after a bar.sync of the
	 * warpgroup is ordered as well, but compute-sanitizer's racecheck
	 * does not follow that chain and reports the next consumer's
	 * stores as hazards (docs/perf.md, session 25, run 4).
	 */
	mbar_arrive(c.order + 8 * (2 * turn + (wg ^ 1)));
}

/*
 * The number of work units, computed again from the kernel parameters
 * (constant memory) with shifts, cluster sides being powers of two: with
 * 192 accumulators a register holding it through the loop was one too
 * many, and ptxas spilled it.
 */
template <typename Cfg>
__device__ __forceinline__ uint32_t units_from_params(const gemm_args &args)
{
	const uint32_t cx = args.cluster_x ? args.cluster_x : 1;
	const uint32_t cy = args.cluster_y ? args.cluster_y : 1;
	const uint32_t tm = (args.m + Cfg::bm - 1) / Cfg::bm;
	const uint32_t tn = (args.n + Cfg::bn - 1) / Cfg::bn;

	return ((tm + cx - 1) >> (__ffs(cx) - 1)) *
	       ((tn + cy - 1) >> (__ffs(cy) - 1));
}

/*
 * Pingpong's sets of TMA-epilogue staging buffers: one (its note's
 * smem_epilogue) shared by the consumers in turn, or one each where the
 * daemon gave the launch room for two (daemon/plan.c's smem_bytes()).
 */
[[maybe_unused]] __device__ __forceinline__ uint32_t
staging_sets(const sm90_ctx &c)
{
	extern __shared__ __align__(16) uint8_t smem[];

	return c.staging + GEMMD_SMEM_EPILOGUE <=
			       smem_u32(smem) + dynamic_smem_size() ?
		       2 :
		       1;
}

/* pingpong: consumer wg takes the CTA's tiles wg, wg + 2, ... whole. */
template <typename T, typename Cfg, bool PACKED>
__device__ __forceinline__ void
consumer_pingpong(const sm90_ctx &c, const gemm_args &args,
		  const CUtensorMap *tma_d, uint32_t wg)
{
	const uint32_t tid = threadIdx.x % 128;
	const uint32_t lane = tid % 32;
	const bool warp0 = tid < 32;
	float acc[Cfg::mi][Cfg::n_acc];
	pipe_state p = { 0, 0 };
	uint32_t prev = 0, buf_seq = 0;
	uint32_t order_phase = wg == 0 ? 1 : 0;
	/* A set of staging buffers each where the launch has room for two. */
	const bool shared = staging_sets(c) == 1;
	const uint32_t set = shared ? 0 : wg;
	descs<Cfg> d;

	make_descs<Cfg>(c, 0, d);
	/* Consumer 1's first tile is the CTA's second. */
	if (wg == 1)
		pipe_skip(p, c.k_tiles, c.stages);
#pragma unroll 1
	for (uint32_t u = place_of<false>(c) + wg * c.clusters;
	     u < units_from_params<Cfg>(args); u += 2 * c.clusters) {
		uint32_t tm, tn;
		bool inside;

		order_wait(c, 0, wg, order_phase);
		mainloop<T, Cfg>(c, d, acc, p, prev, lane, warp0,
				 no_hook<Cfg>(), c.k_tiles);
		order_arrive(c, 0, wg);
		mainloop_tail<Cfg>(c, acc, prev, lane, warp0);
		/* The other consumer's k-tiles come next in the ring. */
		pipe_skip(p, c.k_tiles, c.stages);
		/* Where the tile goes, only now: fewer registers in the loop. */
		inside = gemmd_sched_tile(c.sched, u, c.cta_x, c.cta_y, tm, tn);

		/*
		 * The epilogue turn.  Where the consumers share one set of
		 * staging buffers, each waits until its stores have read
		 * them before handing the turn over; the wait falls behind
		 * the other consumer's mainloop, as the stores do, but not
		 * where each consumer has about one tile.
		 */
		order_wait(c, 1, wg, order_phase);
		if (inside)
			epilogue_of<T, Cfg, PACKED>(c, args, tma_d, acc,
						    tm * Cfg::bm, tn * Cfg::bn,
						    tid, set, buf_seq);
		if (shared && lane == 0)
			bulk_wait_read<0>();
		order_arrive(c, 1, wg);
		order_phase ^= 1;
	}
	if (lane == 0)
		bulk_wait_read<0>(); /* as in consumer_split() */
}

/* ---- the kernel ---------------------------------------------------------- */

__device__ __forceinline__ uint32_t sreg_cluster_nctaid_x(void)
{
	uint32_t v;

	asm volatile("mov.u32 %0, %%cluster_nctaid.x;" : "=r"(v));
	return v;
}

__device__ __forceinline__ uint32_t sreg_cluster_nctaid_y(void)
{
	uint32_t v;

	asm volatile("mov.u32 %0, %%cluster_nctaid.y;" : "=r"(v));
	return v;
}

template <typename Cfg, bool SK>
__device__ __forceinline__ void ctx_init(sm90_ctx &c, const gemm_args &args)
{
	extern __shared__ __align__(16) uint8_t smem[];
	const uint32_t base = smem_u32(smem);

	c.full = base;
	c.empty = base + 8 * GEMMD_MAX_STAGES;
	c.order = base + 16 * GEMMD_MAX_STAGES;
	/* After the place word; 1024-B aligned for the 128B swizzle. */
	c.ring = (place_word(c) + 16 + 1023) & ~1023u;
	c.stages = args.stages;
	c.staging = c.ring + c.stages * Cfg::stage_bytes;
	c.k_tiles = (args.k + Cfg::bk - 1) / Cfg::bk;
	gemmd_sched_init(c.sched, args, Cfg::bm, Cfg::bn);
	c.cx = c.sched.cx;
	c.cy = c.sched.cy;
	c.cta_x = blockIdx.x % c.cx;
	c.cta_y = blockIdx.y;
	c.clusters = gridDim.x / c.cx;
	c.early_release = args.fault & GEMMD_FAULT_EARLY_RELEASE;
	c.dp = c.sched.units;
	c.cluster = blockIdx.x / c.cx;
	c.sk_iters = c.sk_begin = c.sk_end = 0;
	if (SK) {
		c.dp -= sk_units(c.sched.units, c.clusters);
		c.sk_iters = (c.sched.units - c.dp) * c.k_tiles;
		c.sk_begin = sk_first(c.cluster, c.sk_iters, c.clusters);
		c.sk_end = sk_first(c.cluster + 1, c.sk_iters, c.clusters);
	}
}

/*
 * The launch's shape as the hardware has it, read by the launch check.
 * It sits in a line of the constant bank apart from the parameters:
 * read first thing, its miss overlaps theirs; read inside launch_ok(),
 * after the checks on the parameters, it came after them, about 400
 * cycles later on a cold launch (docs/perf.md, 2026-11-26).
 */
struct launch_regs {
	uint32_t ncx, ncy, smem;
};

__device__ __forceinline__ void launch_regs_read(launch_regs &lr)
{
	lr.ncx = sreg_cluster_nctaid_x();
	lr.ncy = sreg_cluster_nctaid_y();
	lr.smem = dynamic_smem_size();
}

/*
 * A mis-planned launch must not run off shared memory or mistake its
 * cluster (whose sides are powers of two: units_from_params() shifts);
 * consumers release a slot one k-tile late, so a ring of one would
 * deadlock; and every tile has a k-tile (the daemon takes k >= 1).
 */
template <typename T, typename Cfg, bool SK, bool PACKED>
__device__ __forceinline__ bool
launch_ok(const sm90_ctx &c, const gemm_args &args, const launch_regs &lr)
{
	const uint32_t end =
		c.staging +
		(args.epilogue == GEMMD_EPILOGUE_TMA ? Cfg::epi_bytes : 0);
	extern __shared__ __align__(16) uint8_t smem[];

	const uint32_t decomp = SK ? GEMMD_DECOMP_STREAM_K :
				     GEMMD_DECOMP_DATA_PARALLEL;

	if (PACKED && (args.epilogue != GEMMD_EPILOGUE_TMA ||
		       args.out != gemmd_type<T>::out || args.beta != 0.0f))
		return false;
	return c.stages >= 2 && c.stages <= Cfg::max_stages && c.k_tiles > 0 &&
	       args.decomposition == decomp && (!SK || args.workspace) &&
	       (SK || !args.placement || Cfg::placement) &&
	       end <= smem_u32(smem) + lr.smem && c.cx == lr.ncx &&
	       c.cy == lr.ncy && gridDim.y == c.cy &&
	       (c.cx & (c.cx - 1)) == 0 && (c.cy & (c.cy - 1)) == 0 &&
	       gridDim.x % c.cx == 0 &&
	       (c.cx * c.cy == 1 ||
		cluster_ctarank() == c.cta_x + c.cta_y * c.cx);
}

template <typename T, typename Cfg, bool SK, bool PACKED>
__device__ __forceinline__ void
sm90_gemm(const CUtensorMap *tma_a, const CUtensorMap *tma_b,
	  const CUtensorMap *tma_d, const gemm_args &args)
{
	const uint32_t wg = threadIdx.x / 128;
	producer_first pf;
	launch_regs lr;
	sm90_ctx c;

	static_assert(!SK || Cfg::stream_k, "stream-K: cooperative only");
	if (threadIdx.x == 0)
		launch_regs_read(lr);
	ctx_init<Cfg, SK>(c, args);
	if (threadIdx.x == 0) {
		if (!launch_ok<T, Cfg, SK, PACKED>(c, args, lr))
			__trap();
		for (uint32_t s = 0; s < c.stages; s++) {
			mbar_init(c.full + 8 * s, 1);
			mbar_init(c.empty + 8 * s,
				  Cfg::slot_readers * (c.cx + c.cy - 1));
		}
		for (uint32_t s = 0; s < 4; s++)
			mbar_init(c.order + 8 * s, ORDER_ARRIVALS);
		fence_mbarrier_init();
		st_shared_u32(place_word(c), c.cluster);
	} else if (early_producer<Cfg>::on && (SK || !args.placement) &&
		   threadIdx.x / 32 == early_producer<Cfg>::warp) {
		producer_prepare<Cfg, SK>(c, pf, c.cluster);
	}
	/* Peers multicast into this CTA and arrive on it: all must see init. */
	if (c.cx * c.cy > 1)
		cluster_sync();
	else
		__syncthreads();
	/*
	 * Launched with programmatic dependent launch (the job's "pdl"),
	 * this grid may have started while the launch before it still runs:
	 * in a timed batch, the same GEMM writing the same D.  Everything
	 * above touched only this CTA's shared memory and the parameters;
	 * nothing below loads A, B or C or stores D before that grid has
	 * completed and its writes are visible.  The next launch may then
	 * be scheduled, to wait likewise.  Without the attribute neither
	 * instruction does anything.
	 */
	griddep_launch_dependents();
	griddep_wait();
	/* Placement: not in the stream-K entries, which spilled with it. */
	const bool placed = !SK && Cfg::placement && args.placement;

	if (wg == 0) {
		setmaxnreg_dec<regs<Cfg>::producer>();
		if (placed) {
			place_take(c, args);
			if (early_producer<Cfg>::on &&
			    threadIdx.x / 32 == early_producer<Cfg>::warp)
				producer_prepare<Cfg, SK>(c, pf,
							  place_of<SK>(c));
		}
		if (threadIdx.x / 32 == early_producer<Cfg>::warp &&
		    elect_one())
			producer<Cfg, SK>(c, pf, tma_a, tma_b);
		/* Warp 3 is idle: off the producer's and consumers' paths. */
		else if (placed && threadIdx.x == 96 && c.cta_x == 0 &&
			 c.cta_y == 0)
			place_release(args, c.clusters);
		__syncwarp();
	} else {
		setmaxnreg_inc<regs<Cfg>::consumer>();
		if (placed)
			place_take(c, args);
		if constexpr (Cfg::pingpong)
			consumer_pingpong<T, Cfg, PACKED>(c, args, tma_d,
							  wg - 1);
		else
			consumer_split<T, Cfg, SK, PACKED>(c, args, tma_d,
							   wg - 1);
	}
	/*
	 * No cluster barrier here: the consumers have waited for every
	 * k-tile the peers multicast into this CTA, and the producer thread
	 * for every release the peers owe it, so nothing can still land
	 * here.  A barrier cost 0.8 us per launch at 1024^3 on a 2x1
	 * cluster (docs/perf.md), waiting for the slower CTA of the pair.
	 */
}

} /* namespace */

using gemmd_cfg =
	sm90_config<GEMMD_CAT(GEMMD_SCHED_ID_, GEMMD_SCHED),
		    GEMMD_CAT(GEMMD_TYPE_, GEMMD_DTYPE), GEMMD_BM, GEMMD_BN,
		    GEMMD_BK, GEMMD_CAT(GEMMD_A_KMAJOR_, GEMMD_LAYOUT),
		    GEMMD_CAT(GEMMD_B_KMAJOR_, GEMMD_LAYOUT)>;

/*
 * The note's numbers are literals pasted into a string: per tile, the
 * bytes of a stage ((BM + BN) * 64 * 2) and the most stages that fit;
 * per schedule, the TMA epilogue's staging bytes; checked here against
 * what the kernel computes.
 */
#define GEMMD_STAGE_128x128 32768
#define GEMMD_STAGE_128x192 40960
#define GEMMD_STAGE_128x256 49152
#define GEMMD_STAGE_256x128 49152
#define GEMMD_STAGE_64x128 24576
#define GEMMD_STAGE_64x256 40960
#define GEMMD_NSTAGES_128x128 7
#define GEMMD_NSTAGES_128x192 5
#define GEMMD_NSTAGES_128x256 4
#define GEMMD_NSTAGES_256x128 4
#define GEMMD_NSTAGES_64x128 9
#define GEMMD_NSTAGES_64x256 5
#define GEMMD_PERSISTENT_ws 0
#define GEMMD_PERSISTENT_cooperative 1
#define GEMMD_PERSISTENT_pingpong 1
#define GEMMD_EPILOGUE_BYTES_ws 32768
#define GEMMD_EPILOGUE_BYTES_cooperative 32768
#define GEMMD_EPILOGUE_BYTES_pingpong 16384
#define GEMMD_TILE_KEY_(m, n) m##x##n
#define GEMMD_TILE_KEY(m, n) GEMMD_TILE_KEY_(m, n)
#define GEMMD_NOTE_STAGE \
	GEMMD_CAT(GEMMD_STAGE_, GEMMD_TILE_KEY(GEMMD_BM, GEMMD_BN))
#define GEMMD_NOTE_MAX_STAGES \
	GEMMD_CAT(GEMMD_NSTAGES_, GEMMD_TILE_KEY(GEMMD_BM, GEMMD_BN))
#define GEMMD_NOTE_PERSISTENT GEMMD_CAT(GEMMD_PERSISTENT_, GEMMD_SCHED)
/* Cfg::placement: the persistent kernels but pingpong 128x192. */
#define GEMMD_PINGPONG_ws 0
#define GEMMD_PINGPONG_cooperative 0
#define GEMMD_PINGPONG_pingpong 1
#if GEMMD_NOTE_PERSISTENT && \
	!(GEMMD_CAT(GEMMD_PINGPONG_, GEMMD_SCHED) && GEMMD_BN == 192)
#define GEMMD_NOTE_PLACEMENT 1
#else
#define GEMMD_NOTE_PLACEMENT 0
#endif
#define GEMMD_NOTE_EPILOGUE GEMMD_CAT(GEMMD_EPILOGUE_BYTES_, GEMMD_SCHED)

static_assert(gemmd_cfg::stage_bytes == GEMMD_NOTE_STAGE, "note smem_stage");
static_assert(gemmd_cfg::max_stages == GEMMD_NOTE_MAX_STAGES,
	      "note max_stages");
static_assert(gemmd_cfg::persistent == GEMMD_NOTE_PERSISTENT,
	      "note persistent");
static_assert(gemmd_cfg::placement == GEMMD_NOTE_PLACEMENT, "note placement");
static_assert(gemmd_cfg::epi_bytes == GEMMD_NOTE_EPILOGUE,
	      "note smem_epilogue");

GEMMD_KERNEL_NOTE(GEMMD_ENTRY, GEMMD_SCHED, GEMMD_DTYPE, GEMMD_LAYOUT, GEMMD_BM,
		  GEMMD_BN, GEMMD_BK, 384, GEMMD_NOTE_STAGE, 2,
		  GEMMD_NOTE_MAX_STAGES, 8, GEMMD_NOTE_PERSISTENT, 1,
		  GEMMD_NOTE_PLACEMENT, "direct,tma", GEMMD_NOTE_EPILOGUE,
		  sm_90a);

/*
 * The entries (gemm-abi.h): <name> takes every epilogue and output type,
 * <name>_packed only TMA stores of D in the input type without C, which
 * most jobs ask for.  That one is a small fraction of the code: with all
 * of them in one function, 2048^3 took 0.4 us longer and 1024x1536x1032
 * cold 3 us longer (docs/perf.md, 2026-11-25, session 14), and nvcc
 * spends most of a translation unit's time on the general epilogues.
 * Stream-K gets an entry of its own too, with every epilogue: built
 * into the data-parallel ones, its paths cost their loop about 0.5 us
 * at 2048^3 though never taken, and ptxas spilled the two side by side
 * in one function (session 13); a packed stream-K entry spilled 12
 * bytes on 128x256.
 */
#define GEMMD_SK_cooperative 1
#define GEMMD_SK_ws 0
#define GEMMD_SK_pingpong 0
static_assert(gemmd_cfg::stream_k == GEMMD_CAT(GEMMD_SK_, GEMMD_SCHED),
	      "the schedules with a stream-K entry");

#define GEMMD_SM90_ENTRY(name, sk, packed)                                    \
	extern "C" __global__ void __launch_bounds__(GEMMD_WS_THREADS, 1)     \
		name(const __grid_constant__ CUtensorMap tma_a,               \
		     const __grid_constant__ CUtensorMap tma_b,               \
		     const __grid_constant__ CUtensorMap tma_d,               \
		     const struct gemm_args args)                             \
	{                                                                     \
		sm90_gemm<GEMMD_CAT(GEMMD_TYPE_, GEMMD_DTYPE), gemmd_cfg, sk, \
			  packed>(&tma_a, &tma_b, &tma_d, args);              \
	}

GEMMD_SM90_ENTRY(GEMMD_ENTRY, false, false)
GEMMD_SM90_ENTRY(GEMMD_CAT(GEMMD_ENTRY, _packed), false, true)
#if GEMMD_CAT(GEMMD_SK_, GEMMD_SCHED)
GEMMD_SM90_ENTRY(GEMMD_CAT(GEMMD_ENTRY, _sk), true, false)
#endif
