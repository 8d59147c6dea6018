// SPDX-License-Identifier: MIT
/*
 * nvml.c - clocks, power, energy, temperature and clock event reasons of
 * one GPU, from libnvidia-ml.so.1 loaded with dlopen().
 *
 * nvml.h may be missing at build time, so the few prototypes and
 * constants used are written out here, with the values of NVML's header.
 * Every call is allowed to fail: what could not be read is NAN.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nvml.h"
#include "stats.h"
#include "util.h"

/* nvmlReturn_t (NVML_SUCCESS is 0) and nvmlDevice_t. */
typedef int nvml_ret;
typedef struct nvml_device_st *nvml_dev;

#define NVML_SUCCESS 0
/* The answers that say the driver lacks something, rather than failed. */
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_TEMPERATURE_GPU 0 /* nvmlTemperatureSensors_t */
#define NVML_CLOCK_SM 1 /* nvmlClockType_t */
#define NVML_CLOCK_MEM 2
#define NVML_FI_DEV_POWER_INSTANT 186 /* a field of nvmlDeviceGetFieldValues */
#define NVML_VALUE_TYPE_UNSIGNED_INT 1 /* nvmlValueType_t */
#define NVML_VALUE_TYPE_UNSIGNED_LONG 2
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3

/* nvmlFieldValue_t. */
struct nvml_field_value {
	unsigned int field_id;
	unsigned int scope_id;
	long long timestamp_us;
	long long latency_us;
	int value_type;
	nvml_ret ret;
	union {
		double d;
		unsigned int ui;
		unsigned long ul;
		unsigned long long ull;
		long long sll;
		int si;
		unsigned short us;
	} value;
};

/* Readings closer together than this reuse the last one. */
#define NVML_PERIOD_US 1000

struct nvml {
	void *dl;
	bool initialised;
	nvml_dev dev;
	nvml_ret (*init)(void); /* nvmlInit_v2 */
	nvml_ret (*shutdown)(void);
	nvml_ret (*by_uuid)(const char *uuid, nvml_dev *ret);
	nvml_ret (*clock)(nvml_dev d, int type, unsigned int *mhz);
	nvml_ret (*power)(nvml_dev d, unsigned int *mw);
	nvml_ret (*fields)(nvml_dev d, int count, struct nvml_field_value *v);
	bool no_instant; /* the instant power field failed once */
	nvml_ret (*energy)(nvml_dev d, unsigned long long *mj);
	nvml_ret (*temperature)(nvml_dev d, int sensor, unsigned int *c);
	nvml_ret (*limit)(nvml_dev d, unsigned int *mw);
	nvml_ret (*reasons)(nvml_dev d, unsigned long long *bits);
	nvml_ret (*driver)(char *buf, unsigned int len);
	nvml_ret (*vbios)(nvml_dev d, char *buf, unsigned int len);
	nvml_ret (*serial)(nvml_dev d, char *buf, unsigned int len);
};

#define NVML_SYM(n, field, name) \
	((n)->field = (__typeof__((n)->field))dlsym((n)->dl, name))

static void nvml_bind(struct nvml *n)
{
	NVML_SYM(n, init, "nvmlInit_v2");
	NVML_SYM(n, shutdown, "nvmlShutdown");
	NVML_SYM(n, by_uuid, "nvmlDeviceGetHandleByUUID");
	NVML_SYM(n, clock, "nvmlDeviceGetClockInfo");
	NVML_SYM(n, power, "nvmlDeviceGetPowerUsage");
	NVML_SYM(n, fields, "nvmlDeviceGetFieldValues");
	NVML_SYM(n, energy, "nvmlDeviceGetTotalEnergyConsumption");
	NVML_SYM(n, temperature, "nvmlDeviceGetTemperature");
	NVML_SYM(n, limit, "nvmlDeviceGetEnforcedPowerLimit");
	NVML_SYM(n, driver, "nvmlSystemGetDriverVersion");
	NVML_SYM(n, vbios, "nvmlDeviceGetVbiosVersion");
	NVML_SYM(n, serial, "nvmlDeviceGetSerial");
	/* The new name since driver 535; the old one is deprecated. */
	if (!NVML_SYM(n, reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
		NVML_SYM(n, reasons,
			 "nvmlDeviceGetCurrentClocksThrottleReasons");
}

struct nvml *nvml_open(const char *uuid)
{
	const char *lib = getenv("GEMMD_NVML_LIBRARY");
	const char *why = "no device with this UUID";
	struct nvml *n;

	if (!lib || !*lib)
		lib = "libnvidia-ml.so.1";
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!n->dl) {
		why = "library not found";
		goto fail;
	}
	nvml_bind(n);
	if (!n->init || !n->shutdown || !n->by_uuid) {
		why = "library too old";
		goto fail;
	}
	if (n->init() != NVML_SUCCESS) {
		why = "nvmlInit_v2 failed";
		goto fail;
	}
	n->initialised = true;
	if (n->by_uuid(uuid, &n->dev) != NVML_SUCCESS)
		goto fail;
	return n;

fail:
	log_debug("No NVML telemetry for %s (%s): %s", uuid, lib, why);
	return nvml_close(n);
}

struct nvml *nvml_close(struct nvml *n)
{
	if (!n)
		return NULL;
	if (n->initialised)
		n->shutdown();
	if (n->dl)
		dlclose(n->dl);
	free(n);
	return NULL;
}

/* NVML's string into buf: "" where it has none or the read fails. */
static void read_text(nvml_ret r, char *buf, size_t len)
{
	if (r != NVML_SUCCESS)
		buf[0] = '\0';
	buf[len - 1] = '\0';
}

void nvml_identity(struct nvml *n, struct nvml_identity *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!n)
		return;
	if (n->driver)
		read_text(n->driver(ret->driver, sizeof(ret->driver)),
			  ret->driver, sizeof(ret->driver));
	if (n->vbios)
		read_text(n->vbios(n->dev, ret->vbios, sizeof(ret->vbios)),
			  ret->vbios, sizeof(ret->vbios));
	if (n->serial)
		read_text(n->serial(n->dev, ret->serial, sizeof(ret->serial)),
			  ret->serial, sizeof(ret->serial));
}

static double read_clock(struct nvml *n, int type)
{
	unsigned int mhz;

	if (!n->clock || n->clock(n->dev, type, &mhz) != NVML_SUCCESS)
		return NAN;
	return mhz;
}

static bool nvml_lacks(nvml_ret r)
{
	return r == NVML_ERROR_INVALID_ARGUMENT ||
	       r == NVML_ERROR_NOT_SUPPORTED ||
	       r == NVML_ERROR_FUNCTION_NOT_FOUND;
}

/*
 * The instant power field in watts.  Where the driver lacks it, NAN
 * with *ret_lacks set, now and for the rest of the worker's life; a
 * reading that fails otherwise (a time-out, say) is NAN alone: one
 * glitch must not hand every later job the 1 s mean instead.
 */
static double read_power_instant(struct nvml *n, bool *ret_lacks)
{
	struct nvml_field_value v = { .field_id = NVML_FI_DEV_POWER_INSTANT };
	nvml_ret r;

	*ret_lacks = true;
	if (!n->fields || n->no_instant)
		return NAN;
	r = n->fields(n->dev, 1, &v);
	if (r == NVML_SUCCESS && v.ret == NVML_SUCCESS) {
		switch (v.value_type) {
		case NVML_VALUE_TYPE_UNSIGNED_INT:
			*ret_lacks = false;
			return v.value.ui / 1000.0;
		case NVML_VALUE_TYPE_UNSIGNED_LONG:
			*ret_lacks = false;
			return v.value.ul / 1000.0;
		case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
			*ret_lacks = false;
			return v.value.ull / 1000.0;
		}
	} else if (!nvml_lacks(r) && !nvml_lacks(v.ret)) {
		*ret_lacks = false;
		return NAN;
	}
	log_debug("NVML has no instant power: the 1 s mean stands in");
	n->no_instant = true;
	return NAN;
}

/*
 * The power in watts.  nvmlDeviceGetPowerUsage() is, on Ampere and newer
 * GPUs, the mean of the second before the call, so over a job shorter
 * than a few seconds its readings are mostly what ran before: on an
 * H100 a 300 ms job read up to twice the power of the same kernel run
 * after a rest, and trailed a load's start and end by a second
 * (docs/perf.md, 2026-11-25).  The instant field (updated about every
 * 100 ms, read in microseconds) follows the load; the mean stands in
 * where the driver lacks it.
 */
static double read_power(struct nvml *n)
{
	bool lacks;
	double w = read_power_instant(n, &lacks);
	unsigned int mw;

	if (!lacks)
		return w;
	if (!n->power || n->power(n->dev, &mw) != NVML_SUCCESS)
		return NAN;
	return mw / 1000.0;
}

static double read_temperature(struct nvml *n)
{
	unsigned int c;

	if (!n->temperature ||
	    n->temperature(n->dev, NVML_TEMPERATURE_GPU, &c) != NVML_SUCCESS)
		return NAN;
	return c;
}

double nvml_energy_j(struct nvml *n)
{
	unsigned long long mj;

	if (!n || !n->energy || n->energy(n->dev, &mj) != NVML_SUCCESS)
		return NAN;
	return mj / 1000.0;
}

/* The enforced power limit in watts; NAN without it. */
static double read_power_limit(struct nvml *n)
{
	unsigned int mw;

	if (!n->limit || n->limit(n->dev, &mw) != NVML_SUCCESS)
		return NAN;
	return mw / 1000.0;
}

void nvml_track_start(struct nvml_track *t, struct nvml *n, size_t samples)
{
	memset(t, 0, sizeof(*t));
	t->temp_max_c = NAN;
	t->power_limit_w = NAN;
	t->power_before = NAN;
	if (!n || !samples)
		return;
	t->sm_mhz = calloc(samples, sizeof(*t->sm_mhz));
	t->mem_mhz = calloc(samples, sizeof(*t->mem_mhz));
	t->power_w = calloc(samples, sizeof(*t->power_w));
	if (!t->sm_mhz || !t->mem_mhz || !t->power_w) {
		nvml_track_free(t);
		return;
	}
	t->cap = samples;
	t->nvml = n;
	t->power_limit_w = read_power_limit(n);
}

static void push(double *a, size_t *n, size_t cap, double x)
{
	if (!isnan(x) && *n < cap)
		a[(*n)++] = x;
}

static int grow(double **a, size_t cap)
{
	double *n = reallocarray(*a, cap, sizeof(**a));

	if (!n)
		return -ENOMEM;
	*a = n;
	return 0;
}

/*
 * Room for one more reading of each kind.  The arrays start at one
 * reading per sample, but the readings come once a millisecond for as
 * long as the samples run: a job of a fixed, small timing.iterations on
 * a long kernel takes many more, and the reductions must see all of
 * them, not the first few milliseconds.  Out of memory, the arrays keep
 * what they hold.
 */
static void track_room(struct nvml_track *t)
{
	size_t cap;

	if (t->n_sm < t->cap && t->n_mem < t->cap && t->n_power < t->cap)
		return;
	if (t->cap > SIZE_MAX / 2 / sizeof(double))
		return;
	cap = 2 * t->cap;
	if (grow(&t->sm_mhz, cap) < 0 || grow(&t->mem_mhz, cap) < 0 ||
	    grow(&t->power_w, cap) < 0)
		return;
	t->cap = cap;
}

/*
 * The power field changes about every 100 ms, and until it first changes
 * it still shows what ran before the timed chunks (a cool-down, the
 * other side's samples): readings count from its first change on, so a
 * timer shorter than about two updates has no power (docs/perf.md,
 * 2026-11-25: 20 ms jobs after a rest read idle power).
 */
static void track_power(struct nvml_track *t, double w)
{
	if (isnan(w))
		return;
	if (!t->power_live) {
		if (isnan(t->power_before)) {
			t->power_before = w;
			return;
		}
		if (!islessgreater(w, t->power_before))
			return;
		t->power_live = true;
	}
	push(t->power_w, &t->n_power, t->cap, w);
}

static void track_read(struct nvml_track *t)
{
	struct nvml *n = t->nvml;
	unsigned long long bits;

	track_room(t);
	push(t->sm_mhz, &t->n_sm, t->cap, read_clock(n, NVML_CLOCK_SM));
	push(t->mem_mhz, &t->n_mem, t->cap, read_clock(n, NVML_CLOCK_MEM));
	track_power(t, read_power(n));
	/* fmax() ignores a NAN operand. */
	t->temp_max_c = fmax(t->temp_max_c, read_temperature(n));
	t->last_reasons = 0;
	if (n->reasons && n->reasons(n->dev, &bits) == NVML_SUCCESS) {
		t->reasons_known = true;
		t->last_reasons = bits;
		t->reasons_seen |= bits;
	}
}

bool nvml_track_sample(struct nvml_track *t)
{
	uint64_t now;

	if (!t->nvml)
		return false;
	now = now_usec();
	if (!t->last_us || now - t->last_us >= NVML_PERIOD_US) {
		t->last_us = now;
		track_read(t);
	}
	return t->last_reasons & GEMM_THROTTLE_SLOWDOWN;
}

void nvml_track_throttled(struct nvml_track *t, unsigned int samples)
{
	t->throttled += samples;
}

void nvml_track_energy(struct nvml_track *t, double joules)
{
	if (!t->nvml)
		return;
	/* NAN: a read failed; negative: the counter went backwards. */
	if (joules >= 0)
		t->energy_j += joules;
	else
		t->energy_bad = true;
}

void nvml_track_finish(struct nvml_track *t, struct gemm_telemetry *ret)
{
	struct stats_summary sm, mem, power;
	struct gemm_telemetry r;

	stats_summarize(t->sm_mhz, t->n_sm, &sm);
	stats_summarize(t->mem_mhz, t->n_mem, &mem);
	stats_summarize(t->power_w, t->n_power, &power);
	memset(&r, 0, sizeof(r));
	r.sm_clock_min_mhz = sm.min;
	r.sm_clock_median_mhz = sm.median;
	r.mem_clock_min_mhz = mem.min;
	r.mem_clock_median_mhz = mem.median;
	r.power_mean_w = power.mean;
	r.power_max_w = power.max;
	/*
	 * The counter moves in steps: over a window shorter than one, it may
	 * not move at all, and no GPU at work used no energy.
	 */
	r.energy_j = t->nvml && !t->energy_bad && t->energy_j > 0 ?
			     t->energy_j :
			     NAN;
	r.temp_max_c = t->temp_max_c;
	r.power_limit_w = t->power_limit_w;
	r.reasons_known = t->reasons_known;
	r.reasons_seen = t->reasons_seen;
	r.throttled_samples = t->throttled;
	r.tflops_per_watt = NAN; /* the caller knows the throughput */
	*ret = r;
}

void nvml_track_free(struct nvml_track *t)
{
	free(t->sm_mhz);
	free(t->mem_mhz);
	free(t->power_w);
	t->sm_mhz = t->mem_mhz = t->power_w = NULL;
	t->cap = 0;
}
