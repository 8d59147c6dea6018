// SPDX-License-Identifier: MIT
/*
 * gpu.c - one GPU through the CUDA Driver API: probe, open, run a job.
 *
 * The driver is loaded with dlopen() (see cuda-api.h), so this file, and
 * the worker, run on machines without it and say so.  Kernels come from
 * cubins in the kernel directory: gemm_ws.cubin (the kernels under test,
 * named by the plan) and reference.cubin (init, poison, reference GEMM,
 * compare).  A run allocates its buffers, builds the inputs on the GPU
 * from the seed, optionally verifies one launch against the reference and
 * then times samples with CUDA events (see run_time()), reading NVML
 * telemetry alongside (nvml.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cublaslt.h"
#include "cuda-api.h"
#include "gemm-abi.h"
#include "diagnose.h"
#include "gpu.h"
#include "nvml.h"
#include "plan.h"
#include "stats.h"
#include "util.h"

#define REFERENCE_CUBIN "reference.cubin"
#define WS_CUBIN "gemm_ws.cubin"
#define GPU_MAX_MODULES 8
/* Sync deadline: this much plus the work at a pessimistic 10 TFLOP/s. */
#define GPU_SYNC_SLACK_US (30ull * 1000 * 1000)
#define GPU_SYNC_FLOPS_PER_US 1e7
/*
 * Dense bf16/fp16 tensor-core rate of one SM90 SM: 4096 FLOP per clock
 * (4 tensor cores x 512 FMA x 2 FLOP).  Check: 132 SMs x 1830 MHz x 4096
 * = 989 TFLOP/s, the H100 SXM data sheet's dense bf16 figure.
 */
#define GPU_SM90_DENSE_FLOP_PER_CLK 4096.0
/* Timing; see run_time(). */
#define TIMING_CALIBRATE 3u /* warm-up launches timed to pick the batch */
#define TIMING_CHUNK_US 20000.0 /* GPU time queued between two looks... */
#define TIMING_CHUNK_MAX 256u /* ...at the stopping rule, in samples */
#define TIMING_L2_FALLBACK (64u << 20) /* if the L2 size is unknown */
/* A baseline algorithm's trial: one launch to warm up, these timed. */
#define BASELINE_TRIAL_LAUNCHES 5u

/* ---- driver loading ------------------------------------------------------ */

static struct {
	bool tried;
	int error;
	char why[256];
	void *dl;
	struct cuda_api api;
	/* Beyond cuda-api.h's table: the L2 flush of cold timing. */
	__typeof__(cuMemsetD32Async) *memset_d32_async;
} driver;

static int driver_load(void)
{
	__typeof__(cuGetProcAddress) *get_proc;
	CUdriverProcAddressQueryResult status;
	const char *lib = getenv("GEMMD_CUDA_LIBRARY");
	CUresult r;

	/* GEMMD_CUDA_LIBRARY: tests point it elsewhere to play "no driver". */
	if (!lib || !*lib)
		lib = "libcuda.so.1";
	driver.dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!driver.dl) {
		snprintf(driver.why, sizeof(driver.why),
			 "CUDA driver not found (%s)", dlerror());
		return -ENOENT;
	}
	/* The CUDA 12+ signature: the status argument exists since 12.0. */
	get_proc = (__typeof__(cuGetProcAddress) *)dlsym(driver.dl,
							 "cuGetProcAddress_v2");
	if (!get_proc) {
		snprintf(driver.why, sizeof(driver.why),
			 "CUDA driver too old (libcuda.so.1 has no "
			 "cuGetProcAddress_v2: CUDA 12 or newer needed)");
		return -ENOSYS;
	}

/*
 * The symbol is stringized before cuda.h's renaming macros (cuMemAlloc ->
 * cuMemAlloc_v2) can apply: cuGetProcAddress wants the base name.
 */
#define DRIVER_LOAD(ptr, sym)                                              \
	r = get_proc(sym, (void **)&(ptr), CUDA_VERSION,                   \
		     CU_GET_PROC_ADDRESS_DEFAULT, &status);                \
	if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS ||  \
	    !(ptr)) {                                                      \
		snprintf(driver.why, sizeof(driver.why),                   \
			 "CUDA driver too old: no %s for CUDA %d.%d", sym, \
			 CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);   \
		return -ENOSYS;                                            \
	}
#define CUDA_API_LOAD(name) DRIVER_LOAD(driver.api.name, #name)
	CUDA_API_FUNCS(CUDA_API_LOAD)
	DRIVER_LOAD(driver.memset_d32_async, "cuMemsetD32Async")
#undef CUDA_API_LOAD
#undef DRIVER_LOAD
	return 0;
}

const struct cuda_api *cuda_api_get(int *ret_errno, char *err, size_t errlen)
{
	if (!driver.tried) {
		driver.tried = true;
		driver.error = driver_load();
		if (driver.error && driver.dl) {
			dlclose(driver.dl);
			driver.dl = NULL;
		}
	}
	if (driver.error) {
		snprintf(err, errlen, "%s", driver.why);
		*ret_errno = driver.error;
		return NULL;
	}
	*ret_errno = 0;
	return &driver.api;
}

/* Switch on int: CUresult has too many values for -Wswitch-enum. */
static int cu_errno(CUresult r)
{
	switch ((int)r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_FILE_NOT_FOUND:
	case CUDA_ERROR_NOT_FOUND:
		return -ENOENT;
	case CUDA_ERROR_INVALID_VALUE:
		return -EINVAL;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_INVALID_IMAGE:
	case CUDA_ERROR_NO_BINARY_FOR_GPU:
	case CUDA_ERROR_INVALID_PTX:
	case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
		return -ENOEXEC;
	case CUDA_ERROR_STUB_LIBRARY:
		/* libcuda.so.1 is the toolkit's stub: no driver installed. */
		return -ENOENT;
	case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
	case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
		return -ENOSYS;
	case CUDA_ERROR_LAUNCH_TIMEOUT:
		return -ETIMEDOUT;
	case CUDA_ERROR_NOT_PERMITTED:
		return -EPERM;
	default:
		return -EIO;
	}
}

bool cuda_api_is_sticky(CUresult r)
{
	switch ((int)r) {
	case CUDA_ERROR_ECC_UNCORRECTABLE:
	case CUDA_ERROR_NVLINK_UNCORRECTABLE:
	case CUDA_ERROR_CONTAINED:
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING:
	case CUDA_ERROR_CONTEXT_IS_DESTROYED:
	case CUDA_ERROR_ASSERT:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_TENSOR_MEMORY_LEAK:
	case CUDA_ERROR_UNKNOWN:
		return true;
	default:
		return false;
	}
}

int cuda_api_error(CUresult r, const char *call, char *err, size_t errlen)
{
	const char *name = NULL, *desc = NULL;

	if (!driver.api.cuGetErrorName ||
	    driver.api.cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = NULL;
	if (!driver.api.cuGetErrorString ||
	    driver.api.cuGetErrorString(r, &desc) != CUDA_SUCCESS)
		desc = NULL;
	if (name)
		snprintf(err, errlen, "%s: %s (%s)", call, name,
			 desc ? desc : "no description");
	else
		snprintf(err, errlen, "%s: CUDA error %d", call, (int)r);
	return cu_errno(r);
}

/* Call a driver function; on failure describe it in err and return errno. */
#define CU_TRY(err, errlen, call, ...)                                         \
	({                                                                     \
		CUresult _r_ = driver.api.call(__VA_ARGS__);                   \
		_r_ == CUDA_SUCCESS ? 0 :                                      \
				      cuda_api_error(_r_, #call, err, errlen); \
	})

/* Append ": what" to a message already in err. */
static int err_context(int e, char *err, size_t errlen, const char *what)
{
	size_t n = strnlen(err, errlen);

	if (n + 1 < errlen)
		snprintf(err + n, errlen - n, ": %s", what);
	return e;
}

/* ---- device description -------------------------------------------------- */

struct gpu_module {
	char name[64];
	CUmodule mod;
};

struct gpu {
	int ordinal;
	CUdevice dev;
	CUcontext ctx; /* the retained primary context, or NULL */
	CUstream stream;
	int sm_count;
	int cc_major;
	int clock_khz; /* the maximum SM clock */
	int l2_bytes;
	struct nvml *nvml; /* NULL: no telemetry */
	char kernel_dir[PATH_MAX];
	struct gpu_module mods[GPU_MAX_MODULES];
	unsigned int n_mods;
	/* reference.cubin, indexed by enum gemm_dtype */
	CUfunction f_init[_GEMM_DTYPE_MAX];
	CUfunction f_ref[_GEMM_DTYPE_MAX];
	CUfunction f_cmp[_GEMM_DTYPE_MAX];
	CUfunction f_fill;
};

#define SMEM_OPTIN CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

static int dev_attr(CUdevice dev, CUdevice_attribute a, int *v, char *err,
		    size_t errlen)
{
	return CU_TRY(err, errlen, cuDeviceGetAttribute, v, a, dev);
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it. */
static void format_uuid(const CUuuid *u, char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(buf, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

struct dev_info {
	char name[256];
	char uuid[48];
	char cc[16];
	char driver[16];
	int major, minor, sm_count, sm_clock, mem_clock, l2, smem_optin;
	size_t total;
};

static int dev_info_get(CUdevice dev, struct dev_info *d, char *err,
			size_t errlen)
{
	CUuuid uuid;
	int version;
	int e;

	e = CU_TRY(err, errlen, cuDeviceGetName, d->name, sizeof(d->name), dev);
	if (!e)
		e = CU_TRY(err, errlen, cuDeviceGetUuid, &uuid, dev);
	if (!e)
		e = CU_TRY(err, errlen, cuDeviceTotalMem, &d->total, dev);
	if (!e)
		e = CU_TRY(err, errlen, cuDriverGetVersion, &version);
	if (!e)
		e = dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
			     &d->major, err, errlen);
	if (!e)
		e = dev_attr(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
			     &d->minor, err, errlen);
	if (!e)
		e = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
			     &d->sm_count, err, errlen);
	if (!e)
		e = dev_attr(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &d->sm_clock,
			     err, errlen);
	if (!e)
		e = dev_attr(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
			     &d->mem_clock, err, errlen);
	if (!e)
		e = dev_attr(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &d->l2,
			     err, errlen);
	if (!e)
		e = dev_attr(dev, SMEM_OPTIN, &d->smem_optin, err, errlen);
	if (e)
		return e;
	format_uuid(&uuid, d->uuid, sizeof(d->uuid));
	snprintf(d->cc, sizeof(d->cc), "%d.%d", d->major, d->minor);
	snprintf(d->driver, sizeof(d->driver), "%d.%d", version / 1000,
		 version % 1000 / 10);
	return 0;
}

/* With "cublaslt": whether this worker can load it, for baseline jobs. */
static json_t *dev_info_json(const struct dev_info *d, int index)
{
	return json_pack("{s:i, s:s, s:s, s:s, s:i, s:I, s:i, s:i, s:I, s:i, "
			 "s:s, s:o}",
			 "index", index, "name", d->name, "uuid", d->uuid,
			 "compute_capability", d->cc, "sm_count", d->sm_count,
			 "memory_bytes", (json_int_t)d->total, "sm_clock_khz",
			 d->sm_clock, "mem_clock_khz", d->mem_clock, "l2_bytes",
			 (json_int_t)d->l2, "max_smem_per_block_optin",
			 d->smem_optin, "driver_version", d->driver, "cublaslt",
			 cublaslt_to_json());
}

static int driver_init(char *err, size_t errlen)
{
	int e;

	if (!cuda_api_get(&e, err, errlen))
		return e;
	return CU_TRY(err, errlen, cuInit, 0);
}

int gpu_probe(json_t **ret_devices, char *err, size_t errlen)
{
	json_t *arr;
	int count = 0, e;

	e = driver_init(err, errlen);
	if (e == -ENODEV) {
		/* A driver but no device: an empty list, not an error. */
		count = 0;
	} else if (e) {
		return e;
	} else {
		e = CU_TRY(err, errlen, cuDeviceGetCount, &count);
		if (e)
			return e;
	}

	arr = json_array();
	if (!arr)
		return -ENOMEM;
	for (int i = 0; i < count; i++) {
		struct dev_info d;
		CUdevice dev;

		e = CU_TRY(err, errlen, cuDeviceGet, &dev, i);
		if (!e)
			e = dev_info_get(dev, &d, err, errlen);
		if (e)
			goto fail;
		if (json_array_append_new(arr, dev_info_json(&d, i)) < 0) {
			e = -ENOMEM;
			goto fail;
		}
	}
	*ret_devices = arr;
	return 0;

fail:
	json_decref(arr);
	return e;
}

json_t *gpu_describe(struct gpu *g)
{
	char err[256];
	struct dev_info d;
	size_t free_b;
	json_t *o;

	if (dev_info_get(g->dev, &d, err, sizeof(err)) < 0)
		return NULL;
	o = dev_info_json(&d, g->ordinal);
	if (o && gpu_mem_free(g, &free_b) == 0)
		json_object_set_new(o, "memory_free_bytes",
				    json_integer((json_int_t)free_b));
	return o;
}

int gpu_mem_free(struct gpu *g, size_t *ret_free)
{
	char err[256];
	size_t total;
	int e;

	e = CU_TRY(err, sizeof(err), cuCtxSetCurrent, g->ctx);
	if (!e)
		e = CU_TRY(err, sizeof(err), cuMemGetInfo, ret_free, &total);
	return e;
}

/* ---- open / close -------------------------------------------------------- */

/* A cubin of the kernel directory, loaded on first use. */
static int module_get(struct gpu *g, const char *name, CUmodule *ret, char *err,
		      size_t errlen)
{
	char path[PATH_MAX + 64];
	struct gpu_module *m;
	struct stat st;
	int e;

	for (unsigned int i = 0; i < g->n_mods; i++) {
		if (strcmp(g->mods[i].name, name) == 0) {
			*ret = g->mods[i].mod;
			return 0;
		}
	}
	if (!*name || strchr(name, '/') || strlen(name) >= sizeof(m->name)) {
		snprintf(err, errlen, "bad cubin name '%s'", name);
		return -EINVAL;
	}
	if (g->n_mods == GPU_MAX_MODULES) {
		snprintf(err, errlen, "too many cubins loaded (%d)",
			 GPU_MAX_MODULES);
		return -ENOSPC;
	}
	snprintf(path, sizeof(path), "%s/%s", g->kernel_dir, name);
	/* cuModuleLoad would only say "file not found", without the path. */
	if (stat(path, &st) < 0) {
		e = -errno;
		snprintf(err, errlen, "kernel file %s: %s", path, strerror(-e));
		return e;
	}
	m = &g->mods[g->n_mods];
	e = CU_TRY(err, errlen, cuModuleLoad, &m->mod, path);
	if (e)
		return err_context(e, err, errlen, path);
	snprintf(m->name, sizeof(m->name), "%s", name);
	g->n_mods++;
	*ret = m->mod;
	return 0;
}

static int function_get(struct gpu *g, const char *cubin, const char *kernel,
			CUfunction *ret, char *err, size_t errlen)
{
	char what[256];
	CUmodule mod;
	int e;

	e = module_get(g, cubin, &mod, err, errlen);
	if (e)
		return e;
	e = CU_TRY(err, errlen, cuModuleGetFunction, ret, mod, kernel);
	if (e) {
		snprintf(what, sizeof(what), "%s in %s", kernel, cubin);
		return err_context(e, err, errlen, what);
	}
	return 0;
}

static int load_reference(struct gpu *g, char *err, size_t errlen)
{
	static const char *const init[_GEMM_DTYPE_MAX] = {
		[GEMM_DTYPE_BF16] = "gemmd_init_bf16",
		[GEMM_DTYPE_FP16] = "gemmd_init_fp16",
	};
	static const char *const ref[_GEMM_DTYPE_MAX] = {
		[GEMM_DTYPE_BF16] = "gemmd_ref_bf16_tn",
		[GEMM_DTYPE_FP16] = "gemmd_ref_fp16_tn",
	};
	static const char *const cmp[_GEMM_DTYPE_MAX] = {
		[GEMM_DTYPE_BF16] = "gemmd_compare_bf16",
		[GEMM_DTYPE_FP16] = "gemmd_compare_fp16",
	};
	int e;

	e = function_get(g, REFERENCE_CUBIN, "gemmd_fill_u16", &g->f_fill, err,
			 errlen);
	for (int i = 0; !e && i < _GEMM_DTYPE_MAX; i++) {
		e = function_get(g, REFERENCE_CUBIN, init[i], &g->f_init[i],
				 err, errlen);
		if (!e)
			e = function_get(g, REFERENCE_CUBIN, ref[i],
					 &g->f_ref[i], err, errlen);
		if (!e)
			e = function_get(g, REFERENCE_CUBIN, cmp[i],
					 &g->f_cmp[i], err, errlen);
	}
	return e;
}

int gpu_open(int ordinal, const char *kernel_dir, struct gpu **ret, char *err,
	     size_t errlen)
{
	struct dev_info info;
	struct gpu *g;
	CUmodule ws;
	int count, e;

	e = driver_init(err, errlen);
	if (e)
		return e;
	e = CU_TRY(err, errlen, cuDeviceGetCount, &count);
	if (e)
		return e;
	if (ordinal < 0 || ordinal >= count) {
		snprintf(err, errlen, "no CUDA device %d (%d found)", ordinal,
			 count);
		return -ENODEV;
	}
	if (strlen(kernel_dir) >= sizeof(g->kernel_dir)) {
		snprintf(err, errlen, "kernel directory name too long");
		return -ENAMETOOLONG;
	}

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->ordinal = ordinal;
	strcpy(g->kernel_dir, kernel_dir);

	e = CU_TRY(err, errlen, cuDeviceGet, &g->dev, ordinal);
	if (e)
		goto fail;
	e = CU_TRY(err, errlen, cuDevicePrimaryCtxRetain, &g->ctx, g->dev);
	if (e)
		goto fail;
	e = CU_TRY(err, errlen, cuCtxSetCurrent, g->ctx);
	if (e)
		goto fail;
	e = CU_TRY(err, errlen, cuStreamCreate, &g->stream,
		   CU_STREAM_NON_BLOCKING);
	if (e)
		goto fail;
	e = dev_info_get(g->dev, &info, err, errlen);
	if (e)
		goto fail;
	g->sm_count = info.sm_count;
	g->cc_major = info.major;
	g->clock_khz = info.sm_clock;
	g->l2_bytes = info.l2;
	g->nvml = nvml_open(info.uuid);
	/* Both cubins now: a missing or stale file fails the open. */
	e = load_reference(g, err, errlen);
	if (e)
		goto fail;
	e = module_get(g, WS_CUBIN, &ws, err, errlen);
	if (e)
		goto fail;

	*ret = g;
	return 0;

fail:
	gpu_close(g);
	return e;
}

struct gpu *gpu_close(struct gpu *g)
{
	if (!g)
		return NULL;
	/* Errors are ignored: this also runs on a broken context. */
	if (g->ctx)
		driver.api.cuCtxSetCurrent(g->ctx);
	for (unsigned int i = 0; i < g->n_mods; i++)
		driver.api.cuModuleUnload(g->mods[i].mod);
	if (g->stream)
		driver.api.cuStreamDestroy(g->stream);
	if (g->ctx)
		driver.api.cuDevicePrimaryCtxRelease(g->dev);
	nvml_close(g->nvml);
	free(g);
	return NULL;
}

/* ---- one run ------------------------------------------------------------- */

struct run {
	struct gpu *g;
	const struct gemm_spec *spec;
	const struct gemm_plan *plan;
	/* queue one launch of the GEMM being timed: ours or the baseline */
	int (*launch)(struct run *r);
	CUtensorMap tma_a, tma_b; /* 64-B aligned by their type */
	struct gemm_args args;
	CUfunction f;
	CUdeviceptr a, b, d, ref, stats;
	/* cuBLASLt: the baseline (output D) and the reference (output ref) */
	CUdeviceptr lt_ws;
	struct cublaslt_gemm *lt, *lt_ref;
	/* timing */
	CUdeviceptr flush; /* cold mode: written before each sample */
	size_t flush_bytes;
	unsigned int flush_value;
	unsigned int batch; /* launches per sample */
	double launch_us; /* one launch, measured in the warm-up */
	CUevent *events; /* a start/stop pair per sample of a chunk */
	unsigned int n_events;
	double *samples; /* per-launch times, in the order taken */
	unsigned int n_samples, cap_samples;
	double gpu_time_us; /* whole batches */
	struct nvml_track tele;
	bool sticky;
	char *err;
	size_t errlen;
};

static int run_check(struct run *r, CUresult res, const char *call)
{
	if (res == CUDA_SUCCESS)
		return 0;
	if (cuda_api_is_sticky(res))
		r->sticky = true;
	return cuda_api_error(res, call, r->err, r->errlen);
}

#define CU(r, call, ...) run_check((r), driver.api.call(__VA_ARGS__), #call)

static int run_invalid(struct run *r, const char *msg)
{
	snprintf(r->err, r->errlen, "%s", msg);
	return -EINVAL;
}

static int run_validate(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	const struct gemm_plan *p = r->plan;
	uint64_t stage;

	if ((unsigned int)s->dtype >= _GEMM_DTYPE_MAX)
		return run_invalid(r, "unknown dtype");
	if (s->layout != GEMM_LAYOUT_TN)
		return run_invalid(r, "only layout tn is implemented");
	if (!s->m || !s->n || !s->k || s->m > INT32_MAX || s->n > INT32_MAX ||
	    s->k > INT32_MAX)
		return run_invalid(r, "m, n and k must be in 1..2^31-1");
	/* TMA: the row pitch (k * 2 bytes) must be a multiple of 16. */
	if (s->k % 8)
		return run_invalid(r, "k must be a multiple of 8 (TMA pitch)");
	if (!p->kernel[0] || !p->cubin[0])
		return run_invalid(r, "plan names no kernel");
	/* 128B swizzle: a box row is at most 128 bytes; box dims <= 256. */
	if (p->tile.k * gemm_dtype_size(s->dtype) != 128 || !p->tile.m ||
	    p->tile.m > 256 || !p->tile.n || p->tile.n > 256)
		return run_invalid(r, "tile does not fit the TMA boxes");
	if (p->stages < 2 || p->stages > GEMMD_MAX_STAGES)
		return run_invalid(r, "stages must be in 2..16");
	/* The kernel traps (a lost context) when its ring does not fit. */
	stage = (uint64_t)(p->tile.m + p->tile.n) * p->tile.k *
		gemm_dtype_size(s->dtype);
	if (p->smem_bytes < GEMMD_SMEM_FIXED + p->stages * stage)
		return run_invalid(r, "smem_bytes too small for the stages");
	if (!p->grid[0] || !p->grid[1] || !p->grid[2] || !p->block[0] ||
	    !p->block[1] || !p->block[2])
		return run_invalid(r, "empty launch geometry");
	return 0;
}

/* Blocks for a grid-stride kernel over count elements. */
static unsigned int stride_blocks(struct run *r, uint64_t count)
{
	uint64_t want = DIV_ROUND_UP(count, 256);
	uint64_t cap = (uint64_t)r->g->sm_count * 16;

	return (unsigned int)MAX(1, MIN(want, cap));
}

/* Launch a helper kernel whose one parameter is a struct. */
static int run_helper(struct run *r, CUfunction f, unsigned int gx,
		      unsigned int gy, void *args)
{
	void *params[] = { args };

	return CU(r, cuLaunchKernel, f, gx, gy, 1, 256, 1, 1, 0, r->g->stream,
		  params, NULL);
}

static int run_init_matrix(struct run *r, CUdeviceptr p, uint64_t count,
			   uint32_t stream)
{
	struct gemm_init_args a = {
		.p = p,
		.count = count,
		.seed = r->spec->seed,
		.stream = stream,
	};

	switch (r->spec->init) {
	case GEMM_INIT_NORMAL:
		a.dist = GEMMD_DIST_NORMAL;
		break;
	case GEMM_INIT_UNIFORM:
		a.dist = GEMMD_DIST_UNIFORM;
		break;
	case GEMM_INIT_RANDINT:
		a.dist = GEMMD_DIST_RANDINT;
		break;
	case _GEMM_INIT_MAX:
	default:
		return run_invalid(r, "unknown init distribution");
	}
	return run_helper(r, r->g->f_init[r->spec->dtype],
			  stride_blocks(r, count), 1, &a);
}

/* K-major operand: rows x k elements, row pitch k, box box_k x box_rows. */
static int run_tensor_map(struct run *r, CUtensorMap *map, CUdeviceptr p,
			  uint64_t rows, unsigned int box_rows)
{
	const uint64_t k = r->spec->k;
	const cuuint64_t dims[2] = { k, rows };
	const cuuint64_t strides[1] = { k * 2 };
	const cuuint32_t box[2] = { r->plan->tile.k, box_rows };
	const cuuint32_t elem_strides[2] = { 1, 1 };
	const CUtensorMapDataType type =
		r->spec->dtype == GEMM_DTYPE_BF16 ?
			CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 :
			CU_TENSOR_MAP_DATA_TYPE_FLOAT16;

	/* OOB_FILL_NONE fills out-of-bounds elements with zeros. */
	return CU(r, cuTensorMapEncodeTiled, map, type, 2, (void *)(uintptr_t)p,
		  dims, strides, box, elem_strides,
		  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
		  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
		  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static int run_prepare(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	const uint64_t esize = gemm_dtype_size(s->dtype);
	int e;

	e = CU(r, cuCtxSetCurrent, r->g->ctx);
	if (!e)
		e = function_get(r->g, r->plan->cubin, r->plan->kernel, &r->f,
				 r->err, r->errlen);
	if (!e)
		e = CU(r, cuFuncSetAttribute, r->f,
		       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
		       (int)r->plan->smem_bytes);
	if (!e)
		e = CU(r, cuMemAlloc, &r->a, s->m * s->k * esize);
	if (!e)
		e = CU(r, cuMemAlloc, &r->b, s->n * s->k * esize);
	if (!e)
		e = CU(r, cuMemAlloc, &r->d, s->m * s->n * esize);
	if (!e)
		e = run_init_matrix(r, r->a, s->m * s->k, GEMMD_STREAM_A);
	if (!e)
		e = run_init_matrix(r, r->b, s->n * s->k, GEMMD_STREAM_B);
	if (!e)
		e = run_tensor_map(r, &r->tma_a, r->a, s->m, r->plan->tile.m);
	if (!e)
		e = run_tensor_map(r, &r->tma_b, r->b, s->n, r->plan->tile.n);
	if (e)
		return e;

	r->args.d = r->d;
	r->args.m = (uint32_t)s->m;
	r->args.n = (uint32_t)s->n;
	r->args.k = (uint32_t)s->k;
	r->args.ldd = (uint32_t)s->n;
	r->args.stages = r->plan->stages;
	return 0;
}

static int run_launch_ours(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	void *params[] = { &r->tma_a, &r->tma_b, &r->args };
	CUlaunchAttribute attr;
	CUlaunchConfig cfg;

	memset(&attr, 0, sizeof(attr));
	attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	attr.value.clusterDim.x = MAX(p->cluster[0], 1u);
	attr.value.clusterDim.y = MAX(p->cluster[1], 1u);
	attr.value.clusterDim.z = MAX(p->cluster[2], 1u);

	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = p->grid[0];
	cfg.gridDimY = p->grid[1];
	cfg.gridDimZ = p->grid[2];
	cfg.blockDimX = p->block[0];
	cfg.blockDimY = p->block[1];
	cfg.blockDimZ = p->block[2];
	cfg.sharedMemBytes = p->smem_bytes;
	cfg.hStream = r->g->stream;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	return CU(r, cuLaunchKernelEx, &cfg, r->f, params, NULL);
}

static int run_launch(struct run *r)
{
	return r->launch(r);
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = us * 1000 };

	nanosleep(&ts, NULL);
}

/*
 * Wait for the stream by polling, with a deadline: a pipeline bug can
 * hang a kernel forever, and the supervisor should hear about it rather
 * than a silent worker.  After a timeout the kernel is still running, so
 * the context counts as lost.
 */
static int run_sync(struct run *r, const char *what, double launches)
{
	const double flops = gemm_flops(r->spec) * launches;
	const uint64_t deadline = now_usec() + GPU_SYNC_SLACK_US +
				  (uint64_t)(flops / GPU_SYNC_FLOPS_PER_US);
	long pause = 20;
	CUresult res;

	for (;;) {
		res = driver.api.cuStreamQuery(r->g->stream);
		if (res == CUDA_SUCCESS)
			return 0;
		if (res != CUDA_ERROR_NOT_READY)
			return err_context(run_check(r, res, "cuStreamQuery"),
					   r->err, r->errlen, what);
		if (now_usec() > deadline) {
			r->sticky = true;
			snprintf(r->err, r->errlen,
				 "%s did not finish in time (kernel hang?)",
				 what);
			return -ETIMEDOUT;
		}
		sleep_us(pause);
		pause = MIN(pause * 2, 2000);
	}
}

static double bf16_to_double(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static double fp16_to_double(uint16_t h)
{
	const int exp = (h >> 10) & 0x1f;
	const int man = h & 0x3ff;
	const double sign = (h & 0x8000) ? -1.0 : 1.0;

	if (exp == 0x1f)
		return man ? NAN : sign * INFINITY;
	if (exp == 0)
		return sign * ldexp(man, -24);
	return sign * ldexp(man + 1024, exp - 25);
}

static int read_row(struct run *r, CUdeviceptr base, uint64_t row, float *out)
{
	uint64_t k = r->spec->k, i;
	uint16_t *h = malloc(k * sizeof(*h));
	int e;

	if (!h)
		return -ENOMEM;
	e = CU(r, cuMemcpyDtoH, h, base + row * k * 2, k * sizeof(*h));
	for (i = 0; !e && i < k; i++)
		out[i] = (float)(r->spec->dtype == GEMM_DTYPE_BF16 ?
					 bf16_to_double(h[i]) :
					 fp16_to_double(h[i]));
	free(h);
	return e;
}

/*
 * Trace the first mismatch to the k-tile and stage that made it: its row
 * of A and row of B (B is stored N x K) come back to the host and the
 * error is matched against per-k-tile partial sums.  Best effort: a
 * failure here leaves the verdict as it is.
 */
static void run_diagnose(struct run *r, struct gemm_verdict *v)
{
	uint64_t k = r->spec->k;
	float *a = malloc(k * sizeof(*a)), *b = malloc(k * sizeof(*b));
	double err = v->first_got - v->first_want;
	struct kdiag d;

	if (!a || !b || !isfinite(err) ||
	    read_row(r, r->a, (uint64_t)v->first_row, a) ||
	    read_row(r, r->b, (uint64_t)v->first_col, b))
		goto out;
	/* randint sums are exact integers; otherwise allow the tolerance */
	diagnose_element(&r->plan->tile, r->plan->stages,
			 (unsigned int)v->first_row, (unsigned int)v->first_col,
			 a, b, (unsigned int)k, err,
			 r->spec->init == GEMM_INIT_RANDINT ?
				 0.5 :
				 v->atol + v->rtol * fabs(v->first_want),
			 &d);
	v->diagnosed = true;
	v->where.tile_m = d.tile_m;
	v->where.tile_n = d.tile_n;
	v->where.warpgroup = d.warpgroup;
	v->where.kind = d.kind;
	v->where.k_tile = d.k_tile;
	v->where.stage = d.stage;
	v->where.other_k_tile = d.other_k_tile;
	v->where.other_stage = d.other_stage;
out:
	free(a);
	free(b);
}

/* Value and reference at the first mismatch, read back from the GPU. */
static int run_first_mismatch(struct run *r, struct gemm_verdict *v,
			      uint64_t index)
{
	uint16_t got;
	float want;
	int e;

	v->first_row = (int64_t)(index / r->spec->n);
	v->first_col = (int64_t)(index % r->spec->n);
	e = CU(r, cuMemcpyDtoH, &got, r->d + index * 2, sizeof(got));
	if (!e)
		e = CU(r, cuMemcpyDtoH, &want, r->ref + index * 4,
		       sizeof(want));
	if (e)
		return e;
	v->first_got = r->spec->dtype == GEMM_DTYPE_BF16 ? bf16_to_double(got) :
							   fp16_to_double(got);
	v->first_want = want;
	return 0;
}

static void verdict_fill(struct run *r, const struct gemm_cmp_stats *st,
			 struct gemm_verdict *v)
{
	float max_abs, max_rel;

	memcpy(&max_abs, &st->max_abs_bits, sizeof(max_abs));
	memcpy(&max_rel, &st->max_rel_bits, sizeof(max_rel));
	v->checked = true;
	v->mismatches = st->mismatches;
	v->nan_count = st->nan_count;
	v->inf_count = st->inf_count;
	v->unwritten = st->unwritten;
	v->max_abs_err = max_abs;
	v->max_rel_err = max_rel;
	if (st->sum_sq_ref > 0)
		v->rel_fro_err = sqrt(st->sum_sq_err / st->sum_sq_ref);
	else
		v->rel_fro_err = st->sum_sq_err > 0 ? INFINITY : 0;
	v->passed = st->mismatches == 0;
	(void)r;
}

/*
 * Tolerances: see cmp_elem() in kernels/reference.cu.  randint is exact;
 * otherwise rtol is the output format's epsilon and atol covers fp32
 * summation order, K * 2^-20.
 */
static void run_tolerance(struct run *r, struct gemm_cmp_args *c,
			  struct gemm_verdict *v)
{
	if (r->spec->init == GEMM_INIT_RANDINT) {
		c->exact = 1;
		c->atol = 0;
		c->rtol = 0;
	} else {
		c->exact = 0;
		c->atol = (float)ldexp((double)r->spec->k, -20);
		c->rtol = r->spec->dtype == GEMM_DTYPE_BF16 ? 0x1p-7f :
							      0x1p-10f;
	}
	v->atol = c->atol;
	v->rtol = c->rtol;
}

/* ---- cuBLASLt: shared by the reference and the baseline ----------------- */

/*
 * A cuBLASLt GEMM on the run's A and B into out (D for the baseline, the
 * fp32 reference buffer for fp32_out), with the workspace allocated on
 * first use.
 */
static int run_lt_new(struct run *r, bool fp32_out, CUdeviceptr out,
		      struct cublaslt_gemm **ret)
{
	struct cublaslt_gemm_desc d = {
		.dtype = r->spec->dtype,
		.fp32_out = fp32_out,
		.m = r->spec->m,
		.n = r->spec->n,
		.k = r->spec->k,
		.a = r->a,
		.b = r->b,
		.d = out,
		.workspace_bytes = PLAN_CUBLASLT_WORKSPACE,
	};
	int e;

	e = cublaslt_load(r->err, r->errlen);
	if (e)
		return e;
	if (!r->lt_ws)
		e = CU(r, cuMemAlloc, &r->lt_ws, PLAN_CUBLASLT_WORKSPACE);
	if (e)
		return e;
	d.workspace = r->lt_ws;
	return cublaslt_gemm_new(&d, ret, r->err, r->errlen);
}

/* After a failed cuBLASLt call: did it take the context down? */
static int run_lt_failed(struct run *r, int e)
{
	CUresult res = driver.api.cuStreamQuery(r->g->stream);

	if (cuda_api_is_sticky(res))
		r->sticky = true;
	return err_context(e, r->err, r->errlen, "cuBLASLt");
}

static int run_launch_lt(struct run *r)
{
	int e = cublaslt_gemm_launch(r->lt, r->g->stream, r->err, r->errlen);

	return e ? run_lt_failed(r, e) : 0;
}

/* The fp32 reference from cuBLASLt's first heuristic choice. */
static int run_reference_cublas(struct run *r)
{
	int e;

	e = run_lt_new(r, true, r->ref, &r->lt_ref);
	if (e)
		return e;
	e = cublaslt_gemm_launch(r->lt_ref, r->g->stream, r->err, r->errlen);
	return e ? run_lt_failed(r, e) : 0;
}

static int run_verify(struct run *r, struct gemm_verdict *v)
{
	const struct gemm_spec *s = r->spec;
	const uint64_t count = s->m * s->n;
	struct gemm_fill_args fill = {
		.count = count,
		.value = GEMMD_POISON_U16,
	};
	struct gemm_ref_args ref = {
		.m = (uint32_t)s->m,
		.n = (uint32_t)s->n,
		.k = (uint32_t)s->k,
	};
	struct gemm_cmp_args cmp = { .count = count };
	struct gemm_cmp_stats st;
	int e;

	e = CU(r, cuMemAlloc, &r->ref, count * sizeof(float));
	if (!e)
		e = CU(r, cuMemAlloc, &r->stats, sizeof(st));
	if (e)
		return e;

	/* Poison D so that elements the kernel never writes show. */
	fill.p = r->d;
	e = run_helper(r, r->g->f_fill, stride_blocks(r, count), 1, &fill);
	if (!e)
		e = run_launch(r);
	if (!e)
		e = run_sync(r, "verification launch", 1);
	if (e)
		return e;

	ref.a = r->a;
	ref.b = r->b;
	ref.r = r->ref;
	memset(&st, 0, sizeof(st));
	st.first_index = UINT64_MAX;
	cmp.d = r->d;
	cmp.r = r->ref;
	cmp.stats = r->stats;
	run_tolerance(r, &cmp, v);
	if (s->reference == GEMM_REFERENCE_CUBLAS)
		e = run_reference_cublas(r);
	else
		e = run_helper(r, r->g->f_ref[s->dtype], DIV_ROUND_UP(s->m, 64),
			       DIV_ROUND_UP(s->n, 64), &ref);
	if (!e)
		e = CU(r, cuMemcpyHtoD, r->stats, &st, sizeof(st));
	if (!e)
		e = run_helper(r, r->g->f_cmp[s->dtype],
			       stride_blocks(r, count), 1, &cmp);
	if (!e)
		e = run_sync(r, "reference and compare", 1);
	if (!e)
		e = CU(r, cuMemcpyDtoH, &st, r->stats, sizeof(st));
	if (e)
		return e;

	verdict_fill(r, &st, v);
	if (!st.mismatches)
		return 0;
	e = run_first_mismatch(r, v, st.first_index);
	if (!e)
		run_diagnose(r, v);
	return e;
}

/*
 * Timing.  A sample is one batch of launches between a pair of events,
 * divided by the batch size.  In cold mode an L2-flushing memset of twice
 * the L2 size goes before each sample (outside its events); with a batch
 * of more than one launch only the first launch of a batch then sees a
 * cold L2.  In hot mode the samples run back to back.
 *
 * The warm-up measures one launch; one shorter than STATS_SHORT_LAUNCH_US
 * is timed in batches (stats_batch_size()).  Samples are queued in chunks
 * of about TIMING_CHUNK_US of GPU time; after each chunk the events are
 * read and the stopping rule is asked whether to go on: a fixed count
 * (timing.iterations) or stats_should_stop().
 */

static int run_timing_alloc(struct run *r)
{
	const unsigned int cap = r->spec->iterations ? r->spec->iterations :
						       GEMM_SAMPLES_MAX;
	const unsigned int pairs =
		MAX(MIN(cap, TIMING_CHUNK_MAX), TIMING_CALIBRATE);
	int e;

	r->events = calloc((size_t)pairs * 2, sizeof(*r->events));
	r->samples = calloc(cap, sizeof(*r->samples));
	if (!r->events || !r->samples)
		return -ENOMEM;
	r->cap_samples = cap;
	while (r->n_events < 2 * pairs) {
		e = CU(r, cuEventCreate, &r->events[r->n_events],
		       CU_EVENT_DEFAULT);
		if (e)
			return e;
		r->n_events++;
	}
	if (r->spec->timing_mode != GEMM_TIMING_COLD)
		return 0;
	/* Twice the L2: nothing of A, B or D can be left in it. */
	r->flush_bytes = r->g->l2_bytes > 0 ? 2 * (size_t)r->g->l2_bytes :
					      TIMING_L2_FALLBACK;
	return CU(r, cuMemAlloc, &r->flush, r->flush_bytes);
}

/* One sample: the L2 flush in cold mode, then batch launches in pair i. */
static int run_queue_sample(struct run *r, unsigned int batch, unsigned int i)
{
	int e = 0;

	if (r->flush)
		e = run_check(r,
			      driver.memset_d32_async(
				      r->flush, r->flush_value++,
				      r->flush_bytes / 4, r->g->stream),
			      "cuMemsetD32Async");
	if (!e)
		e = CU(r, cuEventRecord, r->events[2 * i], r->g->stream);
	for (unsigned int k = 0; k < batch && !e; k++)
		e = run_launch(r);
	if (!e)
		e = CU(r, cuEventRecord, r->events[2 * i + 1], r->g->stream);
	return e;
}

/* Microseconds between the events of pair i (both done). */
static int run_elapsed(struct run *r, unsigned int i, double *ret_us)
{
	float ms;
	int e;

	e = CU(r, cuEventElapsedTime, &ms, r->events[2 * i],
	       r->events[2 * i + 1]);
	if (!e)
		*ret_us = ms * 1000.0;
	return e;
}

/*
 * The warm-up launches.  The last TIMING_CALIBRATE of them (at least one
 * launch, even with warmup 0) are timed one by one, as samples of one
 * launch in this mode, and the shortest sets the batch size.
 */
static int run_warmup(struct run *r)
{
	const unsigned int n = MAX(r->spec->warmup, 1u);
	const unsigned int timed = MIN(n, TIMING_CALIBRATE);
	double best = INFINITY, us = 0;
	int e = 0;

	for (unsigned int i = 0; i < n - timed && !e; i++)
		e = run_launch(r);
	for (unsigned int i = 0; i < timed && !e; i++)
		e = run_queue_sample(r, 1, i);
	if (!e)
		e = run_sync(r, "warm-up launches", n);
	for (unsigned int i = 0; i < timed && !e; i++) {
		e = run_elapsed(r, i, &us);
		best = fmin(best, us);
	}
	if (e)
		return e;
	r->launch_us = best;
	r->batch = stats_batch_size(best);
	return 0;
}

/* Samples to queue before the next look at the stopping rule. */
static unsigned int run_chunk(const struct run *r)
{
	const double sample_us = r->launch_us * r->batch;
	unsigned int n = TIMING_CHUNK_MAX;

	if (sample_us * TIMING_CHUNK_MAX > TIMING_CHUNK_US)
		n = MAX(1u, (unsigned int)(TIMING_CHUNK_US / sample_us));
	return MIN(n, r->cap_samples - r->n_samples);
}

/* Queue n samples, wait for them and add them to the run's samples. */
static int run_chunk_samples(struct run *r, unsigned int n)
{
	double us = 0;
	int e = 0;

	for (unsigned int i = 0; i < n && !e; i++) {
		e = run_queue_sample(r, r->batch, i);
		/* Read while the sample runs, or waits its turn. */
		nvml_track_sample(&r->tele);
	}
	if (!e)
		e = run_sync(r, "timed launches", (double)n * r->batch);
	for (unsigned int i = 0; i < n && !e; i++) {
		e = run_elapsed(r, i, &us);
		if (e)
			break;
		r->gpu_time_us += us;
		r->samples[r->n_samples++] = us / r->batch;
	}
	return e;
}

static bool run_done(const struct run *r, enum gemm_stop *ret_reason)
{
	const struct gemm_spec *s = r->spec;
	const struct stats_rule rule = {
		.min_samples = s->min_samples,
		.max_samples = r->cap_samples,
		.min_time_us = s->min_time_ms * 1000.0,
		.max_time_us = s->max_time_ms * 1000.0,
		.max_noise = s->max_noise,
	};
	const size_t n = r->n_samples;
	double mean;

	if (s->iterations) {
		*ret_reason = GEMM_STOP_ITERATIONS;
		return n >= s->iterations;
	}
	mean = stats_mean(r->samples, n);
	return stats_should_stop(
		&rule, n, r->gpu_time_us,
		stats_rel_stderr(mean, stats_stdev(r->samples, n, mean), n),
		ret_reason);
}

static int run_timing_fill(struct run *r, enum gemm_stop reason,
			   struct gemm_timing *t, bool raw)
{
	struct stats_summary s;

	if (raw) {
		t->raw_us = calloc(MAX(r->n_samples, 1u), sizeof(*t->raw_us));
		if (!t->raw_us)
			return -ENOMEM;
		memcpy(t->raw_us, r->samples,
		       r->n_samples * sizeof(*t->raw_us));
	}
	stats_summarize(r->samples, r->n_samples, &s);
	t->samples = r->n_samples;
	t->min_us = s.min;
	t->median_us = s.median;
	t->mean_us = s.mean;
	t->stdev_us = s.stdev;
	t->iqr_us = s.p75 - s.p25;
	t->p90_us = s.p90;
	t->p99_us = s.p99;
	t->noise = s.noise;
	t->gpu_time_ms = r->gpu_time_us / 1000.0;
	t->stop_reason = reason;
	t->mode = r->spec->timing_mode;
	t->l2_flush_bytes = r->flush_bytes;
	t->batch = r->batch;
	return 0;
}

/*
 * Time r->launch: warm up, then samples until the stopping rule.  May run
 * more than once per run (ours, then the baseline): the events, sample
 * array and flush buffer are allocated the first time only.
 */
static int run_time(struct run *r, struct gemm_timing *t,
		    struct gemm_telemetry *tele, bool raw)
{
	enum gemm_stop reason = GEMM_STOP_ITERATIONS;
	int e = 0;

	nvml_track_free(&r->tele);
	r->n_samples = 0;
	r->gpu_time_us = 0;
	if (!r->events)
		e = run_timing_alloc(r);
	if (!e)
		e = run_warmup(r);
	if (e)
		return e;
	nvml_track_start(&r->tele, r->g->nvml, r->cap_samples);
	while (!e && !run_done(r, &reason))
		e = run_chunk_samples(r, run_chunk(r));
	if (e)
		return e;
	nvml_track_finish(&r->tele, tele);
	return run_timing_fill(r, reason, t, raw);
}

/*
 * Rates at the median time.  The peak is SMs x the maximum SM clock
 * (CU_DEVICE_ATTRIBUTE_CLOCK_RATE) x GPU_SM90_DENSE_FLOP_PER_CLK, for
 * SM90 only.  The fewest bytes a GEMM can move: A and B read once, D
 * written once.
 */
static void run_rates(const struct run *r, struct gemm_result *res)
{
	const struct gemm_spec *s = r->spec;
	const double median_s = res->timing.median_us * 1e-6;

	res->tflops = gemm_flops(s) / median_s / 1e12;
	res->min_bytes = (s->m * s->k + s->n * s->k + s->m * s->n) *
			 gemm_dtype_size(s->dtype);
	res->achieved_gbps = (double)res->min_bytes / median_s / 1e9;
	res->peak_tflops = NAN;
	if (r->g->cc_major == 9)
		res->peak_tflops = r->g->sm_count * (r->g->clock_khz * 1e3) *
				   GPU_SM90_DENSE_FLOP_PER_CLK / 1e12;
	res->peak_percent = 100.0 * res->tflops / res->peak_tflops;
	res->telemetry.tflops_per_watt =
		res->tflops / res->telemetry.power_mean_w;
}

/* ---- the cuBLASLt baseline ---------------------------------------------- */

/*
 * Time algorithm i briefly: one launch to warm up, then
 * BASELINE_TRIAL_LAUNCHES between the first event pair.  A launch the
 * library refuses skips the algorithm (*ret_us = INFINITY).
 */
static int run_lt_trial(struct run *r, unsigned int i, double *ret_us)
{
	int e;

	*ret_us = INFINITY;
	cublaslt_gemm_select(r->lt, i);
	e = run_launch_lt(r);
	if (e)
		return r->sticky ? e : 0;
	e = CU(r, cuEventRecord, r->events[0], r->g->stream);
	for (unsigned int k = 0; k < BASELINE_TRIAL_LAUNCHES && !e; k++)
		e = run_launch_lt(r);
	if (!e)
		e = CU(r, cuEventRecord, r->events[1], r->g->stream);
	if (!e)
		e = run_sync(r, "cuBLASLt algorithm trial",
			     BASELINE_TRIAL_LAUNCHES + 1);
	if (!e)
		e = run_elapsed(r, 0, ret_us);
	if (!e)
		*ret_us /= BASELINE_TRIAL_LAUNCHES;
	return e;
}

/* Try each algorithm the heuristic gave; select the fastest. */
static int run_lt_pick(struct run *r, struct gemm_baseline_result *b)
{
	const unsigned int n = cublaslt_gemm_algos(r->lt);
	double best = INFINITY, us;
	unsigned int pick = 0;
	int e;

	for (unsigned int i = 0; i < n; i++) {
		e = run_lt_trial(r, i, &us);
		if (e)
			return e;
		if (us < best) {
			best = us;
			pick = i;
		}
	}
	if (!(best < INFINITY))
		return err_context(-EOPNOTSUPP, r->err, r->errlen,
				   "no cuBLASLt algorithm could be launched");
	cublaslt_gemm_select(r->lt, pick);
	b->heuristics_tried = n;
	b->algo_index = (int)pick;
	b->algo_id = cublaslt_gemm_algo_id(r->lt, pick);
	return 0;
}

/*
 * The baseline: cuBLASLt on the same A, B and D, timed exactly as ours
 * was (same mode, warm-up and stopping rule), after ours.  D is
 * overwritten, which is fine: verification is done by now.
 */
static int run_baseline(struct run *r, struct gemm_result *res)
{
	struct gemm_baseline_result *b = &res->baseline;
	struct gemm_telemetry tele;
	int e;

	e = run_lt_new(r, false, r->d, &r->lt);
	if (!e)
		e = run_lt_pick(r, b);
	if (e)
		return e;
	r->launch = run_launch_lt;
	e = run_time(r, &b->timing, &tele, false);
	r->launch = run_launch_ours;
	if (e)
		return e;
	snprintf(b->library, sizeof(b->library), "cublasLt");
	b->version = cublaslt_version();
	b->tflops = gemm_flops(r->spec) / (b->timing.median_us * 1e-6) / 1e12;
	b->present = true;
	res->speedup_vs_baseline = b->timing.median_us / res->timing.median_us;
	return 0;
}

/*
 * Frees everything a run allocated; errors are ignored.  After a sticky
 * error (or a hang, with the kernel still running) the driver calls could
 * block or fail, and the process is about to exit anyway: host memory
 * only.
 */
static void run_free(struct run *r)
{
	const CUdeviceptr bufs[] = { r->a,     r->b,	 r->d,	  r->ref,
				     r->stats, r->flush, r->lt_ws };

	if (r->sticky)
		goto host;
	cublaslt_gemm_free(r->lt);
	cublaslt_gemm_free(r->lt_ref);
	for (unsigned int i = 0; i < r->n_events; i++)
		driver.api.cuEventDestroy(r->events[i]);
	for (size_t i = 0; i < ARRAY_SIZE(bufs); i++)
		if (bufs[i])
			driver.api.cuMemFree(bufs[i]);
host:
	free(r->events);
	free(r->samples);
	nvml_track_free(&r->tele);
}

int gpu_run(struct gpu *g, const struct gemm_spec *spec,
	    const struct gemm_plan *plan, struct gemm_result *ret,
	    bool *ret_sticky, char *err, size_t errlen)
{
	struct run r;
	int e;

	memset(&r, 0, sizeof(r));
	r.g = g;
	r.spec = spec;
	r.plan = plan;
	r.launch = run_launch_ours;
	r.err = err;
	r.errlen = errlen;
	memset(ret, 0, sizeof(*ret));
	ret->speedup_vs_baseline = NAN;
	ret->verify.first_row = -1;
	ret->verify.first_col = -1;
	*ret_sticky = false;

	e = run_validate(&r);
	if (!e)
		e = run_prepare(&r);
	if (!e && spec->verify)
		e = run_verify(&r, &ret->verify);
	if (!e)
		e = run_time(&r, &ret->timing, &ret->telemetry,
			     spec->raw_samples);
	if (!e)
		run_rates(&r, ret);
	if (!e && spec->baseline == GEMM_BASELINE_CUBLAS)
		e = run_baseline(&r, ret);
	run_free(&r);
	if (e) {
		free(ret->timing.raw_us);
		ret->timing.raw_us = NULL;
	}
	*ret_sticky = r.sticky;
	return e;
}
