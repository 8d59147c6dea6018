// SPDX-License-Identifier: MIT
/*
 * diagnose.c - explain a mismatch by k-tile and pipeline stage.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "diagnose.h"
#include "util.h"

static const char *const kind_names[_KDIAG_KIND_MAX] = {
	[KDIAG_NONE] = "unexplained",
	[KDIAG_MISSING] = "k_tile_missing",
	[KDIAG_DOUBLED] = "k_tile_doubled",
	[KDIAG_REPLACED] = "k_tile_replaced",
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

/* t's stage held u's data; the same slot (u = t +- S) is the likely race. */
static bool find_replaced(const double *p, unsigned int n, unsigned int s,
			  double err, double tol, bool same_slot, int *ret_t,
			  int *ret_u)
{
	unsigned int t, u;

	for (t = 0; t < n; t++) {
		for (u = 0; u < n; u++) {
			if (u == t || (same_slot && u % s != t % s))
				continue;
			if (near(p[u], p[t], tol) ||
			    !near(err, p[u] - p[t], tol))
				continue;
			*ret_t = (int)t;
			*ret_u = (int)u;
			return true;
		}
	}
	return false;
}

static bool find_single(const double *p, unsigned int n, double err,
			double sign, double tol, int *ret_t)
{
	unsigned int t;

	for (t = 0; t < n; t++) {
		if (near(p[t], 0.0, tol) || !near(err, sign * p[t], tol))
			continue;
		*ret_t = (int)t;
		return true;
	}
	return false;
}

static void explain(const double *p, unsigned int n, unsigned int s, double err,
		    double tol, struct kdiag *d)
{
	int t, u;

	if (find_replaced(p, n, s, err, tol, true, &t, &u) ||
	    find_replaced(p, n, s, err, tol, false, &t, &u)) {
		d->kind = KDIAG_REPLACED;
		d->k_tile = t;
		d->other_k_tile = u;
	} else if (find_single(p, n, err, -1.0, tol, &t)) {
		d->kind = KDIAG_MISSING;
		d->k_tile = t;
	} else if (find_single(p, n, err, 1.0, tol, &t)) {
		d->kind = KDIAG_DOUBLED;
		d->k_tile = t;
	}
}

void diagnose_element(const struct gemm_tile *tile, unsigned int stages,
		      unsigned int row, unsigned int col, const float *a_row,
		      const float *b_col, unsigned int k, double err,
		      double tol, struct kdiag *ret)
{
	struct kdiag d = { .kind = KDIAG_NONE,
			   .k_tile = -1,
			   .stage = -1,
			   .other_k_tile = -1,
			   .other_stage = -1 };
	unsigned int n = 0;
	double *p;

	d.tile_m = row / tile->m;
	d.tile_n = col / tile->n;
	d.warpgroup = (row % tile->m) / 64;
	p = stages ? partial_sums(a_row, b_col, k, tile->k, &n) : NULL;
	if (p)
		explain(p, n, stages, err, tol, &d);
	free(p);
	if (d.k_tile >= 0)
		d.stage = d.k_tile % (int)stages;
	if (d.other_k_tile >= 0)
		d.other_stage = d.other_k_tile % (int)stages;
	*ret = d;
}

static json_t *int_or_null(int x)
{
	return x >= 0 ? json_integer(x) : json_null();
}

json_t *kdiag_to_json(const struct kdiag *d)
{
	return json_pack("{s:s, s:[i,i], s:i, s:o, s:o, s:o, s:o}", "kind",
			 kind_names[d->kind], "tile", d->tile_m, d->tile_n,
			 "warpgroup", d->warpgroup, "k_tile",
			 int_or_null(d->k_tile), "stage", int_or_null(d->stage),
			 "other_k_tile", int_or_null(d->other_k_tile),
			 "other_stage", int_or_null(d->other_stage));
}
