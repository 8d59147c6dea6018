// SPDX-License-Identifier: MIT
/*
 * gemm.c - names of the enums in gemm.h, as the API spells them.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "gemm.h"
#include "spec.h"
#include "util.h"

const char *const gemm_dtype_names[_GEMM_DTYPE_MAX] = {
	[GEMM_DTYPE_BF16] = "bf16",
	[GEMM_DTYPE_FP16] = "fp16",
	[GEMM_DTYPE_FP32] = "fp32",
};

const char *const gemm_layout_names[_GEMM_LAYOUT_MAX] = {
	[GEMM_LAYOUT_TN] = "tn",
	[GEMM_LAYOUT_NT] = "nt",
	[GEMM_LAYOUT_NN] = "nn",
	[GEMM_LAYOUT_TT] = "tt",
};

const char *const gemm_schedule_names[_GEMM_SCHEDULE_MAX] = {
	[GEMM_SCHEDULE_WS] = "ws",
	[GEMM_SCHEDULE_COOPERATIVE] = "cooperative",
	[GEMM_SCHEDULE_PINGPONG] = "pingpong",
	[GEMM_SCHEDULE_INTERLEAVED] = "interleaved",
	[GEMM_SCHEDULE_MULTISTAGE] = "multistage",
	[GEMM_SCHEDULE_PIPELINED] = "pipelined",
};

const char *const gemm_raster_names[_GEMM_RASTER_MAX] = {
	[GEMM_RASTER_AUTO] = "auto",
	[GEMM_RASTER_ALONG_M] = "along_m",
	[GEMM_RASTER_ALONG_N] = "along_n",
};

const char *const gemm_epilogue_names[_GEMM_EPILOGUE_MAX] = {
	[GEMM_EPILOGUE_DIRECT] = "direct",
	[GEMM_EPILOGUE_TMA] = "tma",
	[GEMM_EPILOGUE_AUTO] = "auto",
};

const char *const gemm_decomposition_names[_GEMM_DECOMP_MAX] = {
	[GEMM_DECOMP_DATA_PARALLEL] = "data_parallel",
	[GEMM_DECOMP_STREAM_K] = "stream_k",
};

const char *const gemm_placement_names[_GEMM_PLACEMENT_MAX] = {
	[GEMM_PLACEMENT_NONE] = "none",
	[GEMM_PLACEMENT_GPC] = "gpc",
};

const char *const gemm_occupancy_names[_GEMM_OCCUPANCY_MAX] = {
	[GEMM_OCCUPANCY_AUTO] = "auto",
	[GEMM_OCCUPANCY_BALANCED] = "balanced",
	[GEMM_OCCUPANCY_FULL] = "full",
};

const char *const gemm_init_names[_GEMM_INIT_MAX] = {
	[GEMM_INIT_NORMAL] = "normal",
	[GEMM_INIT_UNIFORM] = "uniform",
	[GEMM_INIT_RANDINT] = "randint",
};

const char *const gemm_timing_mode_names[_GEMM_TIMING_MAX] = {
	[GEMM_TIMING_COLD] = "cold",
	[GEMM_TIMING_HOT] = "hot",
};

const char *const gemm_stop_names[_GEMM_STOP_MAX] = {
	[GEMM_STOP_ITERATIONS] = "iterations",
	[GEMM_STOP_NOISE] = "noise",
	[GEMM_STOP_MAX_TIME] = "max_time",
	[GEMM_STOP_MAX_SAMPLES] = "max_samples",
};

/* GEMM_BASELINE_NONE is JSON null, not a name. */
const char *const gemm_baseline_names[_GEMM_BASELINE_MAX] = {
	[GEMM_BASELINE_CUBLAS] = "cublas",
	[GEMM_BASELINE_CUBLAS_DEFAULT] = "cublas_default",
};

const char *const gemm_baseline_order_names[_GEMM_ORDER_MAX] = {
	[GEMM_ORDER_SEPARATE] = "separate",
	[GEMM_ORDER_INTERLEAVED] = "interleaved",
};

const char *const gemm_baseline_mode_names[_GEMM_BASELINE_MODE_MAX] = {
	[GEMM_BASELINE_MODE_FASTEST] = "fastest",
	[GEMM_BASELINE_MODE_DEFAULT] = "default",
};

const char *gemm_dtype_to_string(enum gemm_dtype d)
{
	return string_table_lookup(gemm_dtype_names,
				   ARRAY_SIZE(gemm_dtype_names), d);
}

int gemm_dtype_from_string(const char *s)
{
	return string_table_find(gemm_dtype_names, ARRAY_SIZE(gemm_dtype_names),
				 s);
}

unsigned int gemm_dtype_size(enum gemm_dtype d)
{
	switch (d) {
	case GEMM_DTYPE_BF16:
	case GEMM_DTYPE_FP16:
		return 2;
	case GEMM_DTYPE_FP32:
		return 4;
	case _GEMM_DTYPE_MAX:
		break;
	}
	return 0;
}

const char *gemm_layout_to_string(enum gemm_layout l)
{
	return string_table_lookup(gemm_layout_names,
				   ARRAY_SIZE(gemm_layout_names), l);
}

int gemm_layout_from_string(const char *s)
{
	return string_table_find(gemm_layout_names,
				 ARRAY_SIZE(gemm_layout_names), s);
}

const char *gemm_schedule_to_string(enum gemm_schedule s)
{
	return string_table_lookup(gemm_schedule_names,
				   ARRAY_SIZE(gemm_schedule_names), s);
}

int gemm_schedule_from_string(const char *s)
{
	return string_table_find(gemm_schedule_names,
				 ARRAY_SIZE(gemm_schedule_names), s);
}

const char *gemm_raster_to_string(enum gemm_raster r)
{
	return string_table_lookup(gemm_raster_names,
				   ARRAY_SIZE(gemm_raster_names), r);
}

int gemm_raster_from_string(const char *s)
{
	return string_table_find(gemm_raster_names,
				 ARRAY_SIZE(gemm_raster_names), s);
}

const char *gemm_epilogue_to_string(enum gemm_epilogue e)
{
	return string_table_lookup(gemm_epilogue_names,
				   ARRAY_SIZE(gemm_epilogue_names), e);
}

int gemm_epilogue_from_string(const char *s)
{
	return string_table_find(gemm_epilogue_names,
				 ARRAY_SIZE(gemm_epilogue_names), s);
}

const char *gemm_decomposition_to_string(enum gemm_decomposition d)
{
	return string_table_lookup(gemm_decomposition_names,
				   ARRAY_SIZE(gemm_decomposition_names), d);
}

int gemm_decomposition_from_string(const char *s)
{
	return string_table_find(gemm_decomposition_names,
				 ARRAY_SIZE(gemm_decomposition_names), s);
}

/*
 * Stream-K splits a tile's k-tiles among clusters and adds the partial
 * sums up in a workspace: the kernel that does it is cooperative's, the
 * persistent one whose two consumers split each tile (kernels/gemm-abi.h).
 */
bool gemm_schedule_has_decomposition(enum gemm_schedule s,
				     enum gemm_decomposition d)
{
	switch (d) {
	case GEMM_DECOMP_DATA_PARALLEL:
		return true;
	case GEMM_DECOMP_STREAM_K:
		return s == GEMM_SCHEDULE_COOPERATIVE;
	case _GEMM_DECOMP_MAX:
		break;
	}
	return false;
}

const char *gemm_placement_to_string(enum gemm_placement p)
{
	return string_table_lookup(gemm_placement_names,
				   ARRAY_SIZE(gemm_placement_names), p);
}

int gemm_placement_from_string(const char *s)
{
	return string_table_find(gemm_placement_names,
				 ARRAY_SIZE(gemm_placement_names), s);
}

/*
 * The schedules whose clusters stay resident and walk many work units;
 * the others take one work unit a cluster, from the launch index.
 */
static bool schedule_persistent(enum gemm_schedule s)
{
	return s == GEMM_SCHEDULE_COOPERATIVE || s == GEMM_SCHEDULE_PINGPONG;
}

/*
 * GPC placement needs clusters that walk the work order from the place
 * they claim: the persistent kernels'.  The others have no place to
 * claim.
 */
bool gemm_schedule_has_placement(enum gemm_schedule s, enum gemm_placement p)
{
	switch (p) {
	case GEMM_PLACEMENT_NONE:
		return true;
	case GEMM_PLACEMENT_GPC:
		return schedule_persistent(s);
	case _GEMM_PLACEMENT_MAX:
		break;
	}
	return false;
}

const char *gemm_occupancy_to_string(enum gemm_occupancy o)
{
	return string_table_lookup(gemm_occupancy_names,
				   ARRAY_SIZE(gemm_occupancy_names), o);
}

int gemm_occupancy_from_string(const char *s)
{
	return string_table_find(gemm_occupancy_names,
				 ARRAY_SIZE(gemm_occupancy_names), s);
}

bool gemm_schedule_has_occupancy(enum gemm_schedule s, enum gemm_occupancy o)
{
	switch (o) {
	case GEMM_OCCUPANCY_AUTO:
	case GEMM_OCCUPANCY_FULL:
		return true;
	case GEMM_OCCUPANCY_BALANCED:
		return schedule_persistent(s);
	case _GEMM_OCCUPANCY_MAX:
		break;
	}
	return false;
}

const char *gemm_init_to_string(enum gemm_init i)
{
	return string_table_lookup(gemm_init_names, ARRAY_SIZE(gemm_init_names),
				   i);
}

int gemm_init_from_string(const char *s)
{
	return string_table_find(gemm_init_names, ARRAY_SIZE(gemm_init_names),
				 s);
}

double gemm_flops(const struct gemm_spec *spec)
{
	return 2.0 * (double)spec->m * (double)spec->n * (double)spec->k;
}

double gemm_flops_budget(const struct gemm_spec *spec)
{
	const double tiles =
		ceil((double)spec->m / 64.0) * ceil((double)spec->n / 64.0);
	const double waves = ceil(tiles / GEMM_BUDGET_SMS);

	return 2.0 * waves * GEMM_BUDGET_SMS * 64.0 * 64.0 * (double)spec->k;
}

/* NULL for GEMM_BASELINE_NONE. */
const char *gemm_baseline_to_string(enum gemm_baseline b)
{
	return string_table_lookup(gemm_baseline_names,
				   ARRAY_SIZE(gemm_baseline_names), b);
}

int gemm_baseline_from_string(const char *s)
{
	return string_table_find(gemm_baseline_names,
				 ARRAY_SIZE(gemm_baseline_names), s);
}
