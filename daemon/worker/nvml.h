/* SPDX-License-Identifier: MIT */
/*
 * nvml.h - GPU telemetry through NVML, loaded at run time.
 *
 * libnvidia-ml.so.1 is dlopen()ed (GEMMD_NVML_LIBRARY overrides the
 * path), so neither nvml.h nor the library is needed to build or run.
 * Telemetry is a bonus: without the library, or when any call fails, the
 * values are NAN (null in the result) and nothing is an error.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gemm.h"

struct nvml;

/*
 * The GPU with this UUID ("GPU-xxxxxxxx-...", as cuDeviceGetUuid gives
 * it), or NULL when NVML cannot be used.
 */
struct nvml *nvml_open(const char *uuid);
struct nvml *nvml_close(struct nvml *n);

/*
 * Telemetry over a timed region.  nvml_track_start() reads the energy
 * counter; nvml_track_sample() is called while samples run and reads the
 * clocks, power, temperature and clock event reasons (at most once a
 * millisecond), returning whether the last reading saw the GPU slowed
 * down (thermal or power brake); the caller counts the samples that ran
 * under such a reading with nvml_track_throttled().
 * nvml_track_finish() reads the energy again and reduces it all.  n may
 * be NULL: everything is then NAN, as it is when memory runs short.
 *
 * A region taken in pieces (ours and the baseline, alternating) is
 * bracketed by nvml_track_resume() and nvml_track_pause(): the energy is
 * the sum over the pieces.
 */
struct nvml_track {
	struct nvml *nvml;
	double *sm_mhz, *mem_mhz, *power_w;
	size_t n_sm, n_mem, n_power, cap;
	double temp_max_c;
	double energy0_j; /* at the last start or resume; NAN: paused */
	double energy_j; /* over the pieces so far */
	bool energy_bad; /* a read failed or the counter went backwards */
	bool reasons_known;
	uint64_t reasons_seen, last_reasons;
	uint64_t last_us;
	unsigned int throttled;
};

void nvml_track_start(struct nvml_track *t, struct nvml *n, size_t samples);
bool nvml_track_sample(struct nvml_track *t);
void nvml_track_throttled(struct nvml_track *t, unsigned int samples);
void nvml_track_pause(struct nvml_track *t);
void nvml_track_resume(struct nvml_track *t);
void nvml_track_finish(struct nvml_track *t, struct gemm_telemetry *ret);
void nvml_track_free(struct nvml_track *t);
