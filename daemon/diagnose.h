/* SPDX-License-Identifier: MIT */
/*
 * diagnose.h - point a wrong output element at the pipeline step that
 * produced it.
 *
 * An output element is a sum over K, which the pipeline walks one k-tile
 * (BK wide) at a time through a ring of S shared-memory stages: k-tile t
 * lives in stage t % S.  If the error of one element equals minus the
 * partial sum of one k-tile, that k-tile was lost; if it equals the
 * partial sum of k-tile u minus that of k-tile t, t's stage still held
 * (or already held) u's data: a full/empty barrier race.  With integer
 * inputs these sums are exact, so the match is unambiguous.
 */
#pragma once

#include <jansson.h>

#include "gemm.h"

enum kdiag_kind {
	KDIAG_NONE, /* no single-k-tile explanation */
	KDIAG_MISSING, /* k_tile's contribution is absent */
	KDIAG_DOUBLED, /* k_tile was accumulated twice */
	KDIAG_REPLACED, /* k_tile's stage held other_k_tile's data */
	_KDIAG_KIND_MAX,
};

struct kdiag {
	enum kdiag_kind kind;
	unsigned int tile_m, tile_n; /* output tile of the element */
	unsigned int warpgroup; /* consumer warpgroup (64 rows each) */
	int k_tile, stage;
	int other_k_tile, other_stage;
};

/*
 * a_row and b_col are the element's K inputs (as floats); err = got - want.
 * tol is the largest difference still called a match.
 */
void diagnose_element(const struct gemm_tile *tile, unsigned int stages,
		      unsigned int row, unsigned int col, const float *a_row,
		      const float *b_col, unsigned int k, double err,
		      double tol, struct kdiag *ret);

json_t *kdiag_to_json(const struct kdiag *d);
