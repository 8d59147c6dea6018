// SPDX-License-Identifier: MIT
/*
 * inputs.c - the inputs a worker keeps between jobs: A, B, C and the
 * reference, made on the GPU from the seed or taken from the last job
 * on the same problem, fingerprinted, and checked at the end of the job.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "gemm-abi.h"
#include "inputs.h"
#include "log.h"
#include "run.h"
#include "util.h"

/*
 * A worker keeps one job's inputs on the device for the next: a sweep
 * runs one problem with many kernel knobs, and making A, B and C and,
 * above all, the naive reference again for every job is time wasted.
 * The set is reused part by part:
 *   A, B       when m, n, k, dtype, layout, init and seed are the same;
 *   C          when also out_dtype is, for a job that reads C (beta != 0);
 *   reference  when also alpha, beta and the reference kind are (and,
 *              with beta != 0, out_dtype: C's type).
 * A job on another problem frees the set before it allocates anything.
 * A part the job has no use for (C when it does not read C, the
 * reference when it does not verify) stays for a later job, unless an
 * allocation finds the memory full (run_alloc()).  D is never kept: it
 * is allocated, poisoned and written per job.
 *
 * A kernel under test that stores outside D could corrupt what is kept,
 * and with it the verdict of every later job.  So each buffer is
 * fingerprinted (gemmd_checksum) when it is made, and every kept buffer
 * again at the end of every job, a pass over memory that costs a
 * fraction of a millisecond.  Nothing else runs on the worker's GPU in
 * between, so one that changed was written by this job's launches: the
 * job says so (result.inputs.intact) and the set is dropped.  A job that
 * fails part way with its context intact is checked the same way, and
 * what it left half made is freed.  After a sticky error nothing is
 * trusted, nor freed (the worker exits).
 */

static const char *const slot_names[_SLOT_MAX] = {
	[SLOT_A] = "A",
	[SLOT_B] = "B",
	[SLOT_C] = "C",
	[SLOT_REF] = "reference",
};

static void inputs_key_of(const struct gemm_spec *s, struct inputs_key *k)
{
	memset(k, 0, sizeof(*k));
	k->m = s->m;
	k->n = s->n;
	k->k = s->k;
	k->seed = s->seed;
	k->dtype = s->dtype;
	k->layout = s->layout;
	k->init = s->init;
}

/* Bytes of a buffer for the problem of key, C of type out. */
static uint64_t slot_bytes(const struct inputs_key *k, enum gemm_dtype out,
			   enum cache_slot slot)
{
	const uint64_t in = gemm_dtype_size(k->dtype);

	switch (slot) {
	case SLOT_A:
		return k->m * k->k * in;
	case SLOT_B:
		return k->n * k->k * in;
	case SLOT_C:
		return k->m * k->n * gemm_dtype_size(out);
	case SLOT_REF:
	case _SLOT_MAX:
	default:
		return k->m * k->n * sizeof(float);
	}
}

static uint64_t run_slot_bytes(const struct run *r, enum cache_slot slot)
{
	struct inputs_key k;

	inputs_key_of(r->spec, &k);
	return slot_bytes(&k, r->spec->out, slot);
}

static bool inputs_key_equal(const struct inputs_key *x,
			     const struct inputs_key *y)
{
	return x->m == y->m && x->n == y->n && x->k == y->k &&
	       x->seed == y->seed && x->dtype == y->dtype &&
	       x->layout == y->layout && x->init == y->init;
}

/* Bit for bit: a -0.0 that misses the cache costs a recomputation only. */
static bool same_double(double x, double y)
{
	return memcmp(&x, &y, sizeof(x)) == 0;
}

/* The kept reference is this job's, given the same A and B. */
static bool cache_ref_matches(const struct gpu_cache *c, const struct run *r)
{
	const struct gemm_spec *s = r->spec;

	return same_double(c->alpha, s->alpha) &&
	       same_double(c->beta, s->beta) && c->ref_kind == s->reference &&
	       (!r->reads_c || c->ref_out == s->out);
}

static void cache_free(struct gpu *g, enum cache_slot slot)
{
	struct gpu_cache *c = &g->cache;

	if (c->buf[slot])
		gpu_cuda->cuMemFree(c->buf[slot]);
	c->buf[slot] = 0;
	if (slot == SLOT_A || slot == SLOT_B)
		c->ab_valid = false;
	else if (slot == SLOT_C)
		c->c_valid = false;
	else
		c->ref_valid = false;
}

void inputs_drop(struct gpu *g)
{
	for (int i = 0; i < _SLOT_MAX; i++)
		cache_free(g, i);
}

/*
 * What of the cache this job can use (r->cached), with what it cannot
 * freed first: everything, for another problem; C of another type, for
 * a job that reads C.  A reference for other terms is made again in its
 * buffer, which has the right size.
 */
static void cache_prepare(struct run *r)
{
	struct gpu_cache *c = &r->g->cache;
	const struct gemm_spec *s = r->spec;
	struct inputs_key key;

	inputs_key_of(s, &key);
	if (!c->ab_valid || !inputs_key_equal(&c->key, &key)) {
		inputs_drop(r->g);
		return;
	}
	r->cached[SLOT_A] = r->cached[SLOT_B] = true;
	if (c->c_valid && (!r->reads_c || c->c_out == s->out))
		r->cached[SLOT_C] = r->reads_c;
	else
		cache_free(r->g, SLOT_C);
	if (s->verify) {
		r->cached[SLOT_REF] = c->ref_valid && cache_ref_matches(c, r);
		c->ref_valid = r->cached[SLOT_REF];
	} else if (!c->ref_valid) {
		cache_free(r->g, SLOT_REF);
	}
}

/*
 * Free what the cache holds that this job does not use; true if that was
 * anything.  The parts it uses cannot go: it would have to make them
 * again, in as much memory.
 */
static bool cache_trim(struct run *r)
{
	const struct gpu_cache *c = &r->g->cache;
	bool freed = false;

	if (c->buf[SLOT_C] && !r->reads_c) {
		cache_free(r->g, SLOT_C);
		freed = true;
	}
	if (c->buf[SLOT_REF] && !r->spec->verify) {
		cache_free(r->g, SLOT_REF);
		freed = true;
	}
	return freed;
}

int run_alloc(struct run *r, CUdeviceptr *p, size_t bytes)
{
	CUresult res = gpu_cuda->cuMemAlloc(p, bytes);

	if (res == CUDA_ERROR_OUT_OF_MEMORY && cache_trim(r))
		res = gpu_cuda->cuMemAlloc(p, bytes);
	return run_check(r, res, "cuMemAlloc");
}

/* Queue the fingerprint of a kept buffer into its place in g->sums. */
static int run_sum_queue(struct run *r, enum cache_slot slot, uint64_t bytes)
{
	struct gemm_sum_args a = {
		.p = r->g->cache.buf[slot],
		.bytes = bytes,
		.sum = r->g->sums + slot * sizeof(uint64_t),
	};
	int e;

	e = run_memset32(r, a.sum, 0, 2);
	if (!e)
		e = run_helper(r, r->g->f_sum,
			       run_stride_blocks(r, a.bytes / 4), 1, &a);
	return e;
}

/* The fingerprints queued, once the stream is done. */
static int run_sums_read(struct run *r, uint64_t sums[_SLOT_MAX])
{
	return CU(r, cuMemcpyDtoH, sums, r->g->sums,
		  _SLOT_MAX * sizeof(uint64_t));
}

/* count elements of type at p from the seed's stream, as the job asks. */
static int run_init_matrix(struct run *r, CUdeviceptr p, uint64_t count,
			   uint32_t stream, enum gemm_dtype type)
{
	struct gemm_init_args a = {
		.p = p,
		.count = count,
		.seed = r->spec->seed,
		.stream = stream,
	};

	switch (r->spec->init) {
	case GEMM_INIT_NORMAL:
		a.dist = GEMMD_DIST_NORMAL;
		break;
	case GEMM_INIT_UNIFORM:
		a.dist = GEMMD_DIST_UNIFORM;
		break;
	case GEMM_INIT_RANDINT:
		a.dist = GEMMD_DIST_RANDINT;
		break;
	case _GEMM_INIT_MAX:
	default:
		return run_invalid(r, "unknown init distribution");
	}
	return run_helper(r, r->g->f_init[type], run_stride_blocks(r, count), 1,
			  &a);
}

/* A, B and (beta != 0) C where the cache has none, from the seed. */
static int run_make_inputs(struct run *r)
{
	static const uint32_t streams[] = {
		[SLOT_A] = GEMMD_STREAM_A,
		[SLOT_B] = GEMMD_STREAM_B,
		[SLOT_C] = GEMMD_STREAM_C,
	};
	const struct gemm_spec *s = r->spec;
	struct gpu_cache *c = &r->g->cache;
	bool made[_SLOT_MAX] = { false };
	uint64_t sums[_SLOT_MAX];
	int e = 0;

	for (int i = SLOT_A; i <= SLOT_C && !e; i++) {
		const enum gemm_dtype type = i == SLOT_C ? s->out : s->dtype;
		const uint64_t bytes = run_slot_bytes(r, i);

		if (r->cached[i] || (i == SLOT_C && !r->reads_c))
			continue;
		cache_free(r->g, i);
		made[i] = true;
		e = run_alloc(r, &c->buf[i], bytes);
		if (!e)
			e = run_init_matrix(r, c->buf[i],
					    bytes / gemm_dtype_size(type),
					    streams[i], type);
		if (!e)
			e = run_sum_queue(r, i, bytes);
	}
	if (e || !(made[SLOT_A] || made[SLOT_B] || made[SLOT_C]))
		return e;
	e = run_sync(r, "making the inputs", 1);
	if (!e)
		e = run_sums_read(r, sums);
	if (e)
		return e;
	for (int i = SLOT_A; i <= SLOT_C; i++)
		if (made[i])
			c->sum[i] = sums[i];
	if (made[SLOT_A]) {
		inputs_key_of(s, &c->key);
		c->ab_valid = true;
	}
	if (made[SLOT_C]) {
		c->c_out = s->out;
		c->c_valid = true;
	}
	return 0;
}

/* The reference just made, fingerprinted and read back, is kept. */
static void cache_keep_ref(struct run *r, const uint64_t sums[_SLOT_MAX])
{
	struct gpu_cache *c = &r->g->cache;

	c->sum[SLOT_REF] = sums[SLOT_REF];
	c->alpha = r->spec->alpha;
	c->beta = r->spec->beta;
	c->ref_kind = r->spec->reference;
	c->ref_out = r->spec->out;
	c->ref_valid = true;
}

int run_ref_buffer(struct run *r)
{
	struct gpu_cache *c = &r->g->cache;
	int e = 0;

	if (!c->buf[SLOT_REF])
		e = run_alloc(r, &c->buf[SLOT_REF],
			      run_slot_bytes(r, SLOT_REF));
	r->ref = c->buf[SLOT_REF];
	return e;
}

int run_ref_sum_queue(struct run *r)
{
	return run_sum_queue(r, SLOT_REF, run_slot_bytes(r, SLOT_REF));
}

int run_ref_keep(struct run *r)
{
	uint64_t sums[_SLOT_MAX];
	int e;

	e = run_sums_read(r, sums);
	if (!e)
		cache_keep_ref(r, sums);
	return e;
}

int run_check_kept(struct run *r, bool *ret_intact)
{
	struct gpu_cache *c = &r->g->cache;
	const bool kept[_SLOT_MAX] = {
		[SLOT_A] = c->ab_valid,
		[SLOT_B] = c->ab_valid,
		[SLOT_C] = c->ab_valid && c->c_valid,
		[SLOT_REF] = c->ab_valid && c->ref_valid,
	};
	uint64_t sums[_SLOT_MAX];
	int e = 0;

	*ret_intact = true;
	if (!c->ab_valid)
		return 0;
	for (int i = 0; i < _SLOT_MAX && !e; i++)
		if (kept[i])
			e = run_sum_queue(r, i,
					  slot_bytes(&c->key, c->c_out, i));
	if (!e)
		e = run_sync(r, "fingerprints of the kept inputs", 1);
	if (!e)
		e = run_sums_read(r, sums);
	if (e) {
		/* Not known to be intact; after a sticky error, left alone. */
		if (!r->sticky)
			inputs_drop(r->g);
		return e;
	}
	for (int i = 0; i < _SLOT_MAX; i++) {
		if (!kept[i] || sums[i] == c->sum[i])
			continue;
		log_warning("GPU %d: %s changed during a job of %s (a store "
			    "outside D?); the kept inputs are dropped",
			    r->g->ordinal, slot_names[i], r->plan->kernel);
		*ret_intact = false;
	}
	if (!*ret_intact)
		inputs_drop(r->g);
	return 0;
}

/*
 * Free the buffers that hold nothing valid: what a failed job left half
 * made, or a reference buffer it took for other terms.  Everything goes
 * without A and B, which the rest was made from.
 */
static void cache_free_invalid(struct gpu *g)
{
	const struct gpu_cache *c = &g->cache;

	if (!c->ab_valid) {
		inputs_drop(g);
		return;
	}
	if (!c->c_valid)
		cache_free(g, SLOT_C);
	if (!c->ref_valid)
		cache_free(g, SLOT_REF);
}

void run_check_kept_failed(struct run *r)
{
	char scratch[256];
	char *const err = r->err;
	const size_t errlen = r->errlen;
	bool intact;

	/* The job's error is the one to report, not the check's. */
	r->err = scratch;
	r->errlen = sizeof(scratch);
	if (!run_check_kept(r, &intact))
		cache_free_invalid(r->g);
	r->err = err;
	r->errlen = errlen;
}

int run_buffers(struct run *r)
{
	const struct gpu_cache *c = &r->g->cache;
	const struct gemm_spec *s = r->spec;
	int e;

	cache_prepare(r);
	e = run_make_inputs(r);
	if (!e)
		e = run_alloc(r, &r->d, s->m * s->n * r->out_size);
	if (e)
		return e;
	r->a = c->buf[SLOT_A];
	r->b = c->buf[SLOT_B];
	r->c = r->reads_c ? c->buf[SLOT_C] : 0;
	return 0;
}

void run_inputs_report(const struct run *r, struct gemm_inputs *in)
{
	in->present = true;
	in->init = r->spec->init;
	in->seed = r->spec->seed;
	in->cached = r->cached[SLOT_A] && r->cached[SLOT_B] &&
		     (!r->reads_c || r->cached[SLOT_C]);
	in->reference_used = r->spec->verify;
	in->reference_cached = r->spec->verify && r->cached[SLOT_REF];
}
