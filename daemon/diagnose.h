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
 * inputs these sums are exact, but small integers repeat: one element's
 * error is often matched by several k-tiles, so other mismatches of the
 * same tile narrow the choice, and where more than one explanation is
 * left the answer is "ambiguous", not a guess.
 */
#pragma once

#include <stdint.h>
#include <jansson.h>

#include "gemm.h"

enum kdiag_kind {
	KDIAG_NONE, /* no single-k-tile explanation */
	KDIAG_MISSING, /* k_tile's contribution is absent */
	KDIAG_DOUBLED, /* k_tile was accumulated twice */
	KDIAG_REPLACED, /* k_tile's stage held other_k_tile's data */
	KDIAG_AMBIGUOUS, /* several explanations fit the mismatches */
	_KDIAG_KIND_MAX,
};

struct kdiag {
	enum kdiag_kind kind;
	unsigned int tile_m, tile_n; /* output tile of the element */
	unsigned int warpgroup; /* consumer warpgroup (64 rows each) */
	int k_tile, stage;
	int other_k_tile, other_stage;
	unsigned int used; /* mismatches the explanation fits */
};

/* The most mismatches one diagnosis takes. */
#define KDIAG_MAX_ELEMS 32u

/*
 * A wrong output element: its K inputs (as floats), err = got - want, and
 * tol, the largest difference still called a match.
 */
struct kdiag_elem {
	unsigned int row, col;
	const float *a_row, *b_col;
	double err, tol;
};

/*
 * Explain e[0]; e[1..n-1] are other mismatches of its tile and warpgroup
 * (at most KDIAG_MAX_ELEMS are read).  0, or -ENOMEM where there was no
 * memory for the k-tiles' sums: *ret is then KDIAG_NONE only because
 * nothing was tried, and is no verdict on the mismatch.
 */
int diagnose_elements(const struct gemm_tile *tile, unsigned int stages,
		      const struct kdiag_elem *e, unsigned int n,
		      unsigned int k, struct kdiag *ret);
/* The same for one element alone. */
int diagnose_element(const struct gemm_tile *tile, unsigned int stages,
		     unsigned int row, unsigned int col, const float *a_row,
		     const float *b_col, unsigned int k, double err, double tol,
		     struct kdiag *ret);

/*
 * Which consumer warpgroup of schedule s wrote output row: ws,
 * cooperative and interleaved split each tile's rows between two, the
 * first half to warpgroup 0; pingpong's warpgroups own whole tiles and
 * the sm_80 schedules have none, so 0.
 */
unsigned int kdiag_warpgroup(enum gemm_schedule s, const struct gemm_tile *tile,
			     uint64_t row);

/*
 * Half a unit in the last place of x in type t: how far D's value, rounded
 * to its type, may lie from the exact sum.
 */
double kdiag_half_ulp(enum gemm_dtype t, double x);

json_t *kdiag_to_json(const struct kdiag *d);
