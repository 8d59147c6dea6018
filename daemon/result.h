/* SPDX-License-Identifier: MIT */
/*
 * result.h - a job's measurements as JSON.
 *
 * JSON has no NaN or Infinity: a value that is not finite is written as
 * null, so every response parses with a strict parser.
 */
#pragma once

#include <jansson.h>

#include "gemm.h"

json_t *json_finite(double x);
json_t *result_to_json(const struct gemm_result *r);
int result_from_json(json_t *j, struct gemm_result *ret);
