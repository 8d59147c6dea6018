// SPDX-License-Identifier: MIT
/*
 * diagnose.c - explain a mismatch by k-tile and pipeline stage.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "diagnose.h"
#include "util.h"

static const char *const kind_names[_KDIAG_KIND_MAX] = {
	[KDIAG_NONE] = "unexplained",
	[KDIAG_MISSING] = "k_tile_missing",
	[KDIAG_DOUBLED] = "k_tile_doubled",
	[KDIAG_REPLACED] = "k_tile_replaced",
	[KDIAG_AMBIGUOUS] = "ambiguous",
};

static double *partial_sums(const float *a, const float *b, unsigned int k,
			    unsigned int bk, unsigned int *ret_n)
{
	unsigned int n = (unsigned int)DIV_ROUND_UP(k, bk), i;
	double *p = calloc(n ? n : 1, sizeof(*p));

	if (!p)
		return NULL;
	for (i = 0; i < k; i++)
		p[i / bk] += (double)a[i] * (double)b[i];
	*ret_n = n;
	return p;
}

static bool near(double x, double y, double tol)
{
	return fabs(x - y) <= tol;
}

/*
 * The explanations, tried in this order: a stage that held the data of
 * another k-tile of its own slot (u = t +- S: the likely race), of any
 * other slot, a k-tile lost, a k-tile counted twice.
 */
enum tier {
	TIER_SAME_SLOT,
	TIER_OTHER_SLOT,
	TIER_MISSING,
	TIER_DOUBLED,
	_TIER_MAX,
};

static const enum kdiag_kind tier_kinds[_TIER_MAX] = {
	[TIER_SAME_SLOT] = KDIAG_REPLACED,
	[TIER_OTHER_SLOT] = KDIAG_REPLACED,
	[TIER_MISSING] = KDIAG_MISSING,
	[TIER_DOUBLED] = KDIAG_DOUBLED,
};

/* A k-tile's partial sum for the first element, for a sorted index. */
struct ranked {
	double sum;
	unsigned int tile;
};

struct diag {
	double **p; /* per element, its per-k-tile partial sums */
	const struct kdiag_elem *e;
	unsigned int n_elems, n_tiles, stages;
	struct ranked *by_sum; /* the first element's sums, ascending */
};

/* Whether k-tile t (with u, where it was replaced) explains element i. */
static bool explains(const struct diag *d, unsigned int i, enum tier tier,
		     unsigned int t, unsigned int u)
{
	const double *p = d->p[i];
	const double err = d->e[i].err, tol = d->e[i].tol;

	/*
	 * Each explanation is the error it makes; one that makes none (u's
	 * sum like t's, t's sum 0) fits only an error within tol of 0,
	 * which other explanations fit as well: ambiguous, as it should be.
	 */
	switch (tier) {
	case TIER_SAME_SLOT:
	case TIER_OTHER_SLOT:
		return near(err, p[u] - p[t], tol);
	case TIER_MISSING:
		return near(err, -p[t], tol);
	case TIER_DOUBLED:
		return near(err, p[t], tol);
	case _TIER_MAX:
	default:
		return false;
	}
}

static bool explains_all(const struct diag *d, uint32_t mask, enum tier tier,
			 unsigned int t, unsigned int u)
{
	for (unsigned int i = 0; i < d->n_elems; i++)
		if ((mask & (1u << i)) && !explains(d, i, tier, t, u))
			return false;
	return true;
}

static bool tier_pair(const struct diag *d, enum tier tier, unsigned int t,
		      unsigned int u)
{
	switch (tier) {
	case TIER_SAME_SLOT:
		return u != t && u % d->stages == t % d->stages;
	case TIER_OTHER_SLOT:
		return u % d->stages != t % d->stages;
	case TIER_MISSING:
	case TIER_DOUBLED:
		return u == t;
	case _TIER_MAX:
	default:
		return false;
	}
}

static int cmp_ranked(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;

	return a->sum < b->sum ? -1 : a->sum > b->sum;
}

/* The first of by_sum at or above x. */
static unsigned int lower_bound(const struct diag *d, double x)
{
	unsigned int lo = 0, hi = d->n_tiles;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (d->by_sum[mid].sum < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void count_fit(const struct diag *d, enum tier tier, uint32_t mask,
		      unsigned int t, unsigned int u, uint64_t *count,
		      int *ret_t, int *ret_u)
{
	if (!tier_pair(d, tier, t, u) || !explains_all(d, mask, tier, t, u))
		return;
	if (!(*count)++) {
		*ret_t = (int)t;
		*ret_u = (int)u;
	}
}

/*
 * How many explanations of the tier fit every element in mask; the first.
 * The first element is in every mask: a replacement u of t fits it only
 * where u's sum is within tol of t's sum plus the error, which the sorted
 * sums find without trying every pair (K of 2^20 has 16384 k-tiles).
 */
static uint64_t tally(const struct diag *d, enum tier tier, uint32_t mask,
		      int *ret_t, int *ret_u)
{
	const double err = d->e[0].err, tol = d->e[0].tol;
	uint64_t count = 0;

	for (unsigned int t = 0; t < d->n_tiles; t++) {
		const double want = d->p[0][t] + err;

		if (tier_kinds[tier] != KDIAG_REPLACED) {
			count_fit(d, tier, mask, t, t, &count, ret_t, ret_u);
			continue;
		}
		for (unsigned int i = lower_bound(d, want - tol);
		     i < d->n_tiles && d->by_sum[i].sum <= want + tol; i++)
			count_fit(d, tier, mask, t, d->by_sum[i].tile, &count,
				  ret_t, ret_u);
	}
	return count;
}

static uint64_t tally_all(const struct diag *d, uint32_t mask)
{
	uint64_t count = 0;
	int t, u;

	for (unsigned int tier = 0; tier < _TIER_MAX; tier++)
		count += tally(d, tier, mask, &t, &u);
	return count;
}

/*
 * Small integer partial sums repeat, so one element's error is often
 * matched by several k-tiles.  The other mismatches of the element's tile
 * and warpgroup most likely come from the same fault: each one that some
 * explanation of the first fits along with those taken so far narrows
 * the choice; one that none fits (another fault) is passed over.  Only an
 * explanation left alone in the first tier that has any is given.
 */
static void explain(const struct diag *d, struct kdiag *ret)
{
	uint32_t mask = 1;
	int t = -1, u = -1;

	for (unsigned int i = 1; i < d->n_elems; i++)
		if (tally_all(d, mask | (1u << i)))
			mask |= 1u << i;
	for (unsigned int tier = 0; tier < _TIER_MAX; tier++) {
		uint64_t n = tally(d, tier, mask, &t, &u);

		if (!n)
			continue;
		ret->used = (unsigned int)__builtin_popcount(mask);
		if (n > 1) {
			ret->kind = KDIAG_AMBIGUOUS;
			return;
		}
		ret->kind = tier_kinds[tier];
		ret->k_tile = t;
		if (tier_kinds[tier] == KDIAG_REPLACED)
			ret->other_k_tile = u;
		return;
	}
}

static struct ranked *rank_sums(const double *p, unsigned int n)
{
	struct ranked *r = calloc(n ? n : 1, sizeof(*r));

	if (!r)
		return NULL;
	for (unsigned int t = 0; t < n; t++)
		r[t] = (struct ranked){ .sum = p[t], .tile = t };
	qsort(r, n, sizeof(*r), cmp_ranked);
	return r;
}

int diagnose_elements(const struct gemm_tile *tile, unsigned int stages,
		      const struct kdiag_elem *e, unsigned int n,
		      unsigned int k, struct kdiag *ret)
{
	struct kdiag r = { .kind = KDIAG_NONE,
			   .k_tile = -1,
			   .stage = -1,
			   .other_k_tile = -1,
			   .other_stage = -1 };
	struct diag d = { .e = e,
			  .n_elems = MIN(n, KDIAG_MAX_ELEMS),
			  .stages = stages };
	unsigned int i;
	int err = 0;

	r.tile_m = e[0].row / tile->m;
	r.tile_n = e[0].col / tile->n;
	r.warpgroup = (e[0].row % tile->m) / 64;
	/*
	 * Without memory nothing is tried, and the caller must not report
	 * "unexplained", which says that no k-tile fits.
	 */
	d.p = calloc(d.n_elems, sizeof(*d.p));
	if (!d.p)
		err = -ENOMEM;
	for (i = 0; !err && stages && i < d.n_elems; i++) {
		d.p[i] = partial_sums(e[i].a_row, e[i].b_col, k, tile->k,
				      &d.n_tiles);
		if (!d.p[i])
			err = -ENOMEM;
	}
	if (!err && stages) {
		d.by_sum = rank_sums(d.p[0], d.n_tiles);
		if (!d.by_sum)
			err = -ENOMEM;
	}
	if (d.by_sum)
		explain(&d, &r);
	free(d.by_sum);
	for (i = 0; d.p && i < d.n_elems; i++)
		free(d.p[i]);
	free(d.p);
	if (r.k_tile >= 0)
		r.stage = r.k_tile % (int)stages;
	if (r.other_k_tile >= 0)
		r.other_stage = r.other_k_tile % (int)stages;
	*ret = r;
	return err;
}

int diagnose_element(const struct gemm_tile *tile, unsigned int stages,
		     unsigned int row, unsigned int col, const float *a_row,
		     const float *b_col, unsigned int k, double err, double tol,
		     struct kdiag *ret)
{
	const struct kdiag_elem e = { .row = row,
				      .col = col,
				      .a_row = a_row,
				      .b_col = b_col,
				      .err = err,
				      .tol = tol };

	return diagnose_elements(tile, stages, &e, 1, k, ret);
}

/*
 * Interleaved has no producer, but its two warpgroups split the rows as
 * ws's and cooperative's consumers do (64 each of 128): a stage one of
 * them read too early shows in its half alone, and mismatches of the
 * other half are another warpgroup's, not more of the same fault.
 */
unsigned int kdiag_warpgroup(enum gemm_schedule s, const struct gemm_tile *tile,
			     uint64_t row)
{
	switch (s) {
	case GEMM_SCHEDULE_WS:
	case GEMM_SCHEDULE_COOPERATIVE:
	case GEMM_SCHEDULE_INTERLEAVED:
		return tile->m >= 2 ?
			       (unsigned int)(row % tile->m / (tile->m / 2)) :
			       0;
	case GEMM_SCHEDULE_PINGPONG:
	case GEMM_SCHEDULE_MULTISTAGE:
	case GEMM_SCHEDULE_PIPELINED:
	case _GEMM_SCHEDULE_MAX:
	default:
		return 0;
	}
}

double kdiag_half_ulp(enum gemm_dtype t, double x)
{
	/* significand bits, the implicit one counted */
	static const int bits[_GEMM_DTYPE_MAX] = {
		[GEMM_DTYPE_BF16] = 8,
		[GEMM_DTYPE_FP16] = 11,
		[GEMM_DTYPE_FP32] = 24,
	};
	int e;

	if ((unsigned int)t >= _GEMM_DTYPE_MAX || !isfinite(x))
		return 0.0;
	frexp(x, &e); /* |x| < 2^e */
	return ldexp(1.0, e - bits[t] - 1);
}

static json_t *int_or_null(int x)
{
	return x >= 0 ? json_integer(x) : json_null();
}

/*
 * mismatches_used goes as a json_int_t, which json_pack() reads for "I";
 * "i" would read an int from its place in the arguments.
 */
json_t *kdiag_to_json(const struct kdiag *d)
{
	return json_pack("{s:s, s:[i,i], s:i, s:o, s:o, s:o, s:o, s:I}", "kind",
			 kind_names[d->kind], "tile", d->tile_m, d->tile_n,
			 "warpgroup", d->warpgroup, "k_tile",
			 int_or_null(d->k_tile), "stage", int_or_null(d->stage),
			 "other_k_tile", int_or_null(d->other_k_tile),
			 "other_stage", int_or_null(d->other_stage),
			 "mismatches_used", (json_int_t)d->used);
}
