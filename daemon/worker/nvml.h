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
 * Who the GPU is beyond its UUID, for results gathered across a fleet:
 * the NVIDIA driver's version ("580.159.04"), the VBIOS's and the
 * board's serial number.  "" for each NVML cannot give (n NULL, an old
 * library, a board without a serial).
 */
struct nvml_identity {
	char driver[80]; /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */
	char vbios[32]; /* NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE */
	char serial[32]; /* NVML_DEVICE_SERIAL_BUFFER_SIZE is 30 */
};

void nvml_identity(struct nvml *n, struct nvml_identity *ret);

/*
 * The energy counter, in joules since the driver loaded; NAN without it.
 * A read takes milliseconds: read it only while the GPU has work queued.
 * Read between two chunks of samples, it left the GPU idle that long
 * each time, and at the power cap those pauses raised the clocks of
 * every sample (8192^3 bf16 on an H200: 1400 us instead of 1600;
 * docs/perf.md).
 */
double nvml_energy_j(struct nvml *n);

/*
 * Telemetry over a timed region.  nvml_track_sample() is called while
 * samples run and reads the clocks, power, temperature and clock event
 * reasons (at most once a millisecond), returning whether the last
 * reading saw the GPU slowed down (thermal or power brake); the caller
 * counts the samples that ran under such a reading with
 * nvml_track_throttled(), and adds the region's energy, window by
 * window, with nvml_track_energy().  nvml_track_finish() reduces it all.
 * n may be NULL: everything is then NAN, as it is when memory runs
 * short.
 */
struct nvml_track {
	struct nvml *nvml;
	double *sm_mhz, *mem_mhz, *power_w;
	size_t n_sm, n_mem, n_power, cap;
	double temp_max_c;
	double power_limit_w; /* read once, at the start */
	double power_before; /* the first power reading, until one differs */
	bool power_live; /* a reading differed: the rest count */
	double energy_j; /* over the windows so far */
	bool energy_bad; /* a read failed or the counter went backwards */
	bool reasons_known;
	uint64_t reasons_seen, last_reasons;
	uint64_t last_us;
	unsigned int throttled;
};

void nvml_track_start(struct nvml_track *t, struct nvml *n, size_t samples);
bool nvml_track_sample(struct nvml_track *t);
void nvml_track_throttled(struct nvml_track *t, unsigned int samples);
void nvml_track_energy(struct nvml_track *t, double joules);
void nvml_track_finish(struct nvml_track *t, struct gemm_telemetry *ret);
void nvml_track_free(struct nvml_track *t);
