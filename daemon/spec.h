/* SPDX-License-Identifier: MIT */
/*
 * spec.h - a job request: JSON in, a validated struct gemm_spec out.
 *
 * Parsing is strict: malformed JSON, duplicate keys, unknown fields, wrong
 * types and out-of-range values each get their own error code, naming the
 * field.  Whether a valid spec can run here is plan.h's business (422).
 */
#pragma once

#include <stddef.h>
#include <jansson.h>

#include "gemm.h"
#include "util.h"

/* Limits on what one job may ask for. */
#define SPEC_DIM_MAX (1u << 20)
#define SPEC_WARMUP_MAX 10000
#define SPEC_ITERATIONS_MAX 100000
#define SPEC_STAGES_MAX 64
#define SPEC_CLUSTER_DIM_MAX 8 /* each of x and y: 1, 2, 4 or 8 */
#define SPEC_CLUSTER_MAX 16 /* CTAs in a cluster, x * y */
#define SPEC_DEVICE_MAX 255
#define SPEC_SCALE_MAX 1e6 /* |alpha| and |beta| */

void spec_init(struct gemm_spec *spec);

/* Parse a request body; on failure err says why (status 400). */
int spec_parse(const char *body, size_t len, struct gemm_spec *ret,
	       struct gemmd_error *err);
int spec_from_json(json_t *root, struct gemm_spec *ret,
		   struct gemmd_error *err);

/* The spec as the API shows it, every default filled in. */
json_t *spec_to_json(const struct gemm_spec *spec);

/* "128x256x64" <-> struct gemm_tile. */
int tile_parse(const char *s, struct gemm_tile *ret);
char *tile_format(const struct gemm_tile *t, char *buf, size_t len);
