/* SPDX-License-Identifier: MIT */
/*
 * gpu.h - one GPU through the CUDA Driver API (worker process only).
 *
 * Only gemmd-worker links this module: the supervisor never loads libcuda.
 * Functions return 0 or a negative errno; where the cause is a CUresult,
 * its name is written into the caller's error buffer.
 */
#pragma once

#include <stddef.h>
#include <jansson.h>

#include "gemm.h"

struct gpu;

/* All devices the driver sees, as a JSON array of device objects. */
int gpu_probe(json_t **ret_devices, char *err, size_t errlen);

int gpu_open(int ordinal, const char *kernel_dir, struct gpu **ret, char *err,
	     size_t errlen);
struct gpu *gpu_close(struct gpu *g);

/* Name, UUID, compute capability, SMs, memory, clocks, driver version. */
json_t *gpu_describe(struct gpu *g);

/* Bytes of device memory free right now. */
int gpu_mem_free(struct gpu *g, size_t *ret_free);

/*
 * Run one job: allocate, initialise A, B (and C when beta != 0) from the
 * seed, or take them from the inputs kept from the previous job on the
 * same problem (and the reference with them; see result.inputs), poison
 * the output, launch once and verify against the reference (kernel or
 * cuBLASLt) in the job's layout and output type, then warm up
 * and time samples with CUDA events, cold (L2 flushed) or hot, until
 * timing.iterations samples or the stopping rule; with NVML telemetry.
 * ret->launch is the grid that ran: a persistent plan's grid[0] is cut to
 * the clusters that can be resident at once.
 *
 * Returns 0, or a negative errno with the reason in err.  *ret_sticky is set
 * when the CUDA context is no longer usable (an illegal address, a trap):
 * the worker must then exit so the supervisor can start a fresh one.  On
 * success ret->timing.raw_us is malloc'd when the spec asks for the raw
 * samples: the caller frees it.
 */
int gpu_run(struct gpu *g, const struct gemm_spec *spec,
	    const struct gemm_plan *plan, struct gemm_result *ret,
	    bool *ret_sticky, char *err, size_t errlen);
