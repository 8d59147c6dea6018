// SPDX-License-Identifier: MIT
/*
 * gpu.c - one GPU through the CUDA Driver API: probe, open, run a job.
 *
 * The driver is loaded with dlopen() (see cuda-api.h), so this file, and
 * the worker, run on machines without it and say so.  Kernels come from
 * cubins in the kernel directory: the one the plan names (the kernel
 * under test, loaded on first use) and reference.cubin (init, poison,
 * reference GEMM, compare, checksum).  A run allocates its buffers,
 * builds the inputs on the GPU from the seed (or takes them, and the
 * reference, from the previous job on the same problem: run_buffers()),
 * optionally verifies one launch against the reference and then times
 * samples with CUDA events (see run_time()), reading NVML telemetry
 * alongside (nvml.c).
 *
 * Every GEMM kernel takes (tma_a, tma_b, tma_d, struct gemm_args): see
 * kernels/gemm-abi.h for the launch geometry, and run_maps() for the
 * tensor maps of each layout.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
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
#include "log.h"
#include "nvml.h"
#include "plan.h"
#include "stats.h"
#include "util.h"

#define REFERENCE_CUBIN "reference.cubin"
/* Cubins one worker keeps loaded: one per kernel at most, and a bound. */
#define GPU_MODULES_MAX 4096
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
#define TIMING_WATCH_US 200 /* polls of a running chunk, for telemetry */
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

/* What A and B are made from (the init kernels): equal keys, equal bits. */
struct inputs_key {
	uint64_t m, n, k, seed;
	enum gemm_dtype dtype;
	enum gemm_layout layout;
	enum gemm_init init;
};

/* The buffers a worker keeps between jobs; see run_buffers(). */
enum cache_slot {
	SLOT_A,
	SLOT_B,
	SLOT_C,
	SLOT_REF,
	_SLOT_MAX,
};

/*
 * One job's inputs, kept for the next: A and B (ab_valid) for key; C
 * (c_valid) of type c_out; the fp32 reference (ref_valid) for alpha,
 * beta, ref_kind and, with beta != 0, C of type ref_out.  sum[]: each
 * buffer's fingerprint (gemmd_checksum) when it was made.  A buffer may
 * be allocated and not valid: it is then reused or freed, never read.
 */
struct gpu_cache {
	CUdeviceptr buf[_SLOT_MAX];
	uint64_t sum[_SLOT_MAX];
	bool ab_valid, c_valid, ref_valid;
	struct inputs_key key;
	enum gemm_dtype c_out;
	double alpha, beta;
	enum gemm_reference ref_kind;
	enum gemm_dtype ref_out;
};

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
	struct gpu_module *mods;
	unsigned int n_mods, alloc_mods;
	/*
	 * reference.cubin, indexed by enum gemm_dtype: init and compare by
	 * element type, the reference GEMM by input type (bf16, fp16).
	 */
	CUfunction f_init[_GEMM_DTYPE_MAX];
	CUfunction f_ref[_GEMM_DTYPE_MAX];
	CUfunction f_cmp[_GEMM_DTYPE_MAX];
	CUfunction f_fill16, f_fill32;
	CUfunction f_sum;
	/* inputs kept between jobs, and room for their fingerprints */
	struct gpu_cache cache;
	CUdeviceptr sums; /* uint64_t[_SLOT_MAX] */
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
	if (g->n_mods == GPU_MODULES_MAX) {
		snprintf(err, errlen, "too many cubins loaded (%d)",
			 GPU_MODULES_MAX);
		return -ENOSPC;
	}
	if (g->n_mods == g->alloc_mods) {
		unsigned int alloc = g->alloc_mods ? 2 * g->alloc_mods : 16;

		m = reallocarray(g->mods, alloc, sizeof(*m));
		if (!m)
			return -ENOMEM;
		g->mods = m;
		g->alloc_mods = alloc;
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
		[GEMM_DTYPE_FP32] = "gemmd_init_fp32",
	};
	/* Inputs are bf16 or fp16 only. */
	static const char *const ref[_GEMM_DTYPE_MAX] = {
		[GEMM_DTYPE_BF16] = "gemmd_ref_bf16",
		[GEMM_DTYPE_FP16] = "gemmd_ref_fp16",
	};
	static const char *const cmp[_GEMM_DTYPE_MAX] = {
		[GEMM_DTYPE_BF16] = "gemmd_compare_bf16",
		[GEMM_DTYPE_FP16] = "gemmd_compare_fp16",
		[GEMM_DTYPE_FP32] = "gemmd_compare_fp32",
	};
	int e;

	e = function_get(g, REFERENCE_CUBIN, "gemmd_fill_u16", &g->f_fill16,
			 err, errlen);
	if (!e)
		e = function_get(g, REFERENCE_CUBIN, "gemmd_checksum",
				 &g->f_sum, err, errlen);
	if (!e)
		e = function_get(g, REFERENCE_CUBIN, "gemmd_fill_u32",
				 &g->f_fill32, err, errlen);
	for (int i = 0; !e && i < _GEMM_DTYPE_MAX; i++) {
		e = function_get(g, REFERENCE_CUBIN, init[i], &g->f_init[i],
				 err, errlen);
		if (!e && ref[i])
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
	/*
	 * reference.cubin now: a missing or stale file fails the open.  The
	 * kernels under test are loaded as jobs name them.
	 */
	e = load_reference(g, err, errlen);
	if (!e)
		e = CU_TRY(err, errlen, cuMemAlloc, &g->sums,
			   _SLOT_MAX * sizeof(uint64_t));
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
	for (int i = 0; i < _SLOT_MAX; i++)
		if (g->cache.buf[i])
			driver.api.cuMemFree(g->cache.buf[i]);
	if (g->sums)
		driver.api.cuMemFree(g->sums);
	for (unsigned int i = 0; i < g->n_mods; i++)
		driver.api.cuModuleUnload(g->mods[i].mod);
	free(g->mods);
	if (g->stream)
		driver.api.cuStreamDestroy(g->stream);
	if (g->ctx)
		driver.api.cuDevicePrimaryCtxRelease(g->dev);
	nvml_close(g->nvml);
	free(g);
	return NULL;
}

/* ---- one run ------------------------------------------------------------- */

/* Rows of a TMA box along an MN-major operand's k. */
#define TMA_BOX_64 64u
/* The 128B swizzle: a box row is exactly this many bytes. */
#define TMA_SWIZZLE_BYTES 128u
/* TMA wants global row pitches in multiples of this. */
#define TMA_PITCH_ALIGN 16u
/* Clusters beyond this many CTAs are "non-portable" and need opting in. */
#define CLUSTER_PORTABLE_MAX 8u
#define CLUSTER_MAX 16u

struct run;

/*
 * One GEMM's timing: ours, or the baseline's.  With a baseline the two
 * take their samples in alternating chunks (see run_time()).
 */
struct timer {
	int (*launch)(struct run *r);
	unsigned int batch; /* launches per sample */
	double launch_us; /* one launch, measured in the warm-up */
	double *samples; /* per-launch times, in the order taken */
	unsigned int n_samples;
	double gpu_time_us; /* whole batches */
	struct nvml_track tele;
	enum gemm_stop reason;
	bool done;
	unsigned int chunks;
};

struct run {
	struct gpu *g;
	const struct gemm_spec *spec;
	const struct gemm_plan *plan;
	/* queue one launch of the GEMM being timed: ours or the baseline */
	int (*launch)(struct run *r);
	/* 64-B aligned by their type; all zero when the kernel has no use */
	CUtensorMap tma_a, tma_b, tma_d;
	struct gemm_args args;
	uint32_t fault; /* GEMMD_FAULT_*, from $GEMMD_FAULT: tests only */
	CUfunction f;
	unsigned int grid[3]; /* as launched: the plan's, cut if persistent */
	bool tma; /* the kernel loads A and B with TMA (not an sm_80 one) */
	bool reads_c; /* beta != 0: C exists and is read */
	unsigned int in_size, out_size; /* bytes per element */
	/* a, b, c and ref belong to g->cache; d and stats to the run */
	CUdeviceptr a, b, c, d, ref, stats;
	bool cached[_SLOT_MAX]; /* taken from the cache, not made anew */
	bool current; /* the context is current: driver calls may follow */
	/* cuBLASLt: the baseline (output D) and the reference (output ref) */
	CUdeviceptr lt_ws;
	struct cublaslt_gemm *lt, *lt_ref;
	/* timing */
	CUdeviceptr flush; /* cold mode: written before each sample */
	size_t flush_bytes;
	unsigned int flush_value;
	CUevent *events; /* a start/stop pair per sample of a chunk */
	unsigned int n_events;
	unsigned int cap_samples; /* per timer */
	struct timer ours, base;
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

static int run_invalid(struct run *r, const char *fmt, ...) _printf_(2, 3);

static int run_invalid(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* "t" A and "n" B are K-major (gemm.h); the others M- or N-major. */
static bool layout_a_kmajor(enum gemm_layout l)
{
	return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_TT;
}

static bool layout_b_kmajor(enum gemm_layout l)
{
	return l == GEMM_LAYOUT_TN || l == GEMM_LAYOUT_NN;
}

/*
 * The sm_80 schedules (catalog arch sm_80) read A and B through args.a
 * and args.b with cp.async; every other one loads them with TMA.
 */
static bool schedule_uses_tma(enum gemm_schedule s)
{
	switch (s) {
	case GEMM_SCHEDULE_MULTISTAGE:
	case GEMM_SCHEDULE_PIPELINED:
		return false;
	case GEMM_SCHEDULE_WS:
	case GEMM_SCHEDULE_COOPERATIVE:
	case GEMM_SCHEDULE_PINGPONG:
	case GEMM_SCHEDULE_INTERLEAVED:
	case _GEMM_SCHEDULE_MAX:
	default:
		return true;
	}
}

/* D = alpha * A * B + beta * C reads C unless beta is zero. */
static bool spec_reads_c(const struct gemm_spec *s)
{
	return fpclassify(s->beta) != FP_ZERO;
}

static uint32_t out_code(enum gemm_dtype t)
{
	switch (t) {
	case GEMM_DTYPE_FP16:
		return GEMMD_OUT_FP16;
	case GEMM_DTYPE_FP32:
		return GEMMD_OUT_FP32;
	case GEMM_DTYPE_BF16:
	case _GEMM_DTYPE_MAX:
	default:
		return GEMMD_OUT_BF16;
	}
}

/*
 * Rows of A and B (and of D for the tma epilogue) must be a multiple of
 * 16 bytes for TMA, and for the 16-byte cp.async of the sm_80 kernels.
 */
static int run_validate_pitches(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	const char *layout = gemm_layout_to_string(s->layout);
	const uint64_t a_pitch = layout_a_kmajor(s->layout) ? s->k : s->m;
	const uint64_t b_pitch = layout_b_kmajor(s->layout) ? s->k : s->n;

	if (a_pitch * r->in_size % TMA_PITCH_ALIGN)
		return run_invalid(r,
				   "layout %s: rows of A are %s = %llu "
				   "elements, not a multiple of %u bytes",
				   layout,
				   layout_a_kmajor(s->layout) ? "k" : "m",
				   (unsigned long long)a_pitch,
				   TMA_PITCH_ALIGN);
	if (b_pitch * r->in_size % TMA_PITCH_ALIGN)
		return run_invalid(r,
				   "layout %s: rows of B are %s = %llu "
				   "elements, not a multiple of %u bytes",
				   layout,
				   layout_b_kmajor(s->layout) ? "k" : "n",
				   (unsigned long long)b_pitch,
				   TMA_PITCH_ALIGN);
	if (r->plan->epilogue == GEMM_EPILOGUE_TMA &&
	    s->n * r->out_size % TMA_PITCH_ALIGN)
		return run_invalid(r,
				   "tma epilogue: rows of D are n = %llu "
				   "elements of %s, not a multiple of %u bytes",
				   (unsigned long long)s->n,
				   gemm_dtype_to_string(s->out),
				   TMA_PITCH_ALIGN);
	return 0;
}

/*
 * TMA boxes: a box row is one 128-byte swizzle row (BK 16-bit
 * elements), and a box has at most 256 rows, so a tile side of at most
 * 256.  The ring must fit the launch's shared memory: the kernel traps
 * (a lost context) when it does not.
 */
static int run_validate_tma(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	uint64_t need;

	if (p->tile.k * r->in_size != TMA_SWIZZLE_BYTES || !p->tile.m ||
	    p->tile.m > 256 || !p->tile.n || p->tile.n > 256)
		return run_invalid(r,
				   "tile %ux%ux%u does not fit the TMA "
				   "boxes",
				   p->tile.m, p->tile.n, p->tile.k);
	need = GEMMD_SMEM_FIXED + (uint64_t)p->stages *
					  (p->tile.m + p->tile.n) * p->tile.k *
					  r->in_size;
	if (p->epilogue == GEMM_EPILOGUE_TMA)
		need += GEMMD_SMEM_EPILOGUE;
	if (p->smem_bytes < need)
		return run_invalid(r,
				   "smem_bytes %u too small for %u stages "
				   "(%llu needed)",
				   p->smem_bytes, p->stages,
				   (unsigned long long)need);
	return 0;
}

static int run_validate_launch(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	const unsigned int cx = p->cluster[0], cy = p->cluster[1];

	if (!p->grid[0] || !p->grid[1] || !p->grid[2] || !p->block[0] ||
	    !p->block[1] || !p->block[2])
		return run_invalid(r, "empty launch geometry");
	if (!cx || !cy || p->cluster[2] != 1 || cx * cy > CLUSTER_MAX)
		return run_invalid(r, "bad cluster %ux%ux%u", cx, cy,
				   p->cluster[2]);
	if (p->grid[0] % cx || p->grid[1] % cy)
		return run_invalid(r, "grid %ux%u is not whole %ux%u clusters",
				   p->grid[0], p->grid[1], cx, cy);
	if (p->persistent && (!p->units || p->units > UINT32_MAX / cx))
		return run_invalid(r, "persistent plan with %llu work units",
				   (unsigned long long)p->units);
	return 0;
}

/*
 * GEMMD_FAULT, read from the worker's environment for each job: the
 * fault-injection tests set it to run every launch of the kernel under
 * test with a deliberate pipeline bug (gemm_args.fault), to show that
 * verification catches it and the diagnosis points at it.  Unset or
 * empty: none, as always outside those tests.  A name not known fails
 * the job, so that a misspelt fault cannot pass for a test of nothing.
 */
static int run_fault(struct run *r)
{
	static bool told;
	const char *f = getenv("GEMMD_FAULT");

	r->fault = 0;
	if (!f || !*f)
		return 0;
	if (strcmp(f, "early_release") != 0)
		return run_invalid(r,
				   "GEMMD_FAULT=%s: no such fault (known: "
				   "early_release)",
				   f);
	r->fault = GEMMD_FAULT_EARLY_RELEASE;
	if (!told)
		log_warning("GEMMD_FAULT=%s: every launch of a kernel under "
			    "test carries a deliberate pipeline bug",
			    f);
	told = true;
	return 0;
}

static int run_validate(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	const struct gemm_plan *p = r->plan;
	int e;

	if (s->dtype != GEMM_DTYPE_BF16 && s->dtype != GEMM_DTYPE_FP16)
		return run_invalid(r, "inputs must be bf16 or fp16");
	if ((unsigned int)s->out >= _GEMM_DTYPE_MAX)
		return run_invalid(r, "unknown output type");
	if ((unsigned int)s->layout >= _GEMM_LAYOUT_MAX)
		return run_invalid(r, "unknown layout");
	if (!s->m || !s->n || !s->k || s->m > INT32_MAX || s->n > INT32_MAX ||
	    s->k > INT32_MAX)
		return run_invalid(r, "m, n and k must be in 1..2^31-1");
	if (!p->kernel[0] || !p->cubin[0])
		return run_invalid(r, "plan names no kernel");
	if (p->stages < 1 || p->stages > GEMMD_MAX_STAGES)
		return run_invalid(r, "stages must be in 1..%d",
				   GEMMD_MAX_STAGES);
	e = run_fault(r);
	if (!e)
		e = run_validate_pitches(r);
	if (!e && r->tma)
		e = run_validate_tma(r);
	if (!e)
		e = run_validate_launch(r);
	return e;
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

/* Set words 32-bit words at p to value, in stream order. */
static int run_memset32(struct run *r, CUdeviceptr p, uint32_t value,
			size_t words)
{
	return run_check(r,
			 driver.memset_d32_async(p, value, words, r->g->stream),
			 "cuMemsetD32Async");
}

/* count elements of type at p from the seed's stream, as the job asks. */
static int run_init_matrix(struct run *r, CUdeviceptr p, uint64_t count,
			   uint32_t stream, enum gemm_dtype type)
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
	return run_helper(r, r->g->f_init[type], stride_blocks(r, count), 1,
			  &a);
}

static CUtensorMapDataType tma_type(enum gemm_dtype t)
{
	switch (t) {
	case GEMM_DTYPE_BF16:
		return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
	case GEMM_DTYPE_FP16:
		return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	case GEMM_DTYPE_FP32:
	case _GEMM_DTYPE_MAX:
	default:
		return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	}
}

/*
 * A dense 2-D map over p: inner elements per row (contiguous), outer
 * rows, boxes of box_inner x box_outer; 128B swizzle, L2 promotion of
 * 256 B, and OOB_FILL_NONE, which fills out-of-bounds loads with zeros
 * (and drops out-of-bounds stores).
 */
static int run_tensor_map(struct run *r, CUtensorMap *map, enum gemm_dtype type,
			  CUdeviceptr p, uint64_t inner, uint64_t outer,
			  unsigned int box_inner, unsigned int box_outer,
			  const char *what)
{
	const cuuint64_t dims[2] = { inner, outer };
	const cuuint64_t strides[1] = { inner * gemm_dtype_size(type) };
	const cuuint32_t box[2] = { box_inner, box_outer };
	const cuuint32_t elem_strides[2] = { 1, 1 };
	int e;

	e = CU(r, cuTensorMapEncodeTiled, map, tma_type(type), 2,
	       (void *)(uintptr_t)p, dims, strides, box, elem_strides,
	       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
	       CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
	       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	return e ? err_context(e, r->err, r->errlen, what) : 0;
}

/*
 * An operand of rows (m for A, n for B) by k.  K-major: k elements per
 * row, one box is the whole BK x tile_rows k-tile.  MN-major: rows
 * elements per row of k, boxes of 64 x BK, one per 64-wide chunk of the
 * tile (the kernel issues tile_rows / 64 loads).
 */
static int run_operand_map(struct run *r, CUtensorMap *map, CUdeviceptr p,
			   bool k_major, uint64_t rows, unsigned int tile_rows,
			   const char *what)
{
	const struct gemm_spec *s = r->spec;
	const unsigned int bk = r->plan->tile.k;

	if (k_major)
		return run_tensor_map(r, map, s->dtype, p, s->k, rows, bk,
				      tile_rows, what);
	return run_tensor_map(r, map, s->dtype, p, rows, s->k, TMA_BOX_64, bk,
			      what);
}

/*
 * The kernel's tensor maps; those it does not use stay zero (they are
 * still passed).  tma_d, for the tma epilogue: D as n x m rows, boxes of
 * one 128-byte row (64 16-bit or 32 fp32 columns) by one warp's rows.
 */
static int run_maps(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	const struct gemm_plan *p = r->plan;
	int e;

	if (!r->tma)
		return 0;
	e = run_operand_map(r, &r->tma_a, r->a, layout_a_kmajor(s->layout),
			    s->m, p->tile.m, "tensor map of A");
	if (!e)
		e = run_operand_map(r, &r->tma_b, r->b,
				    layout_b_kmajor(s->layout), s->n, p->tile.n,
				    "tensor map of B");
	if (!e && p->epilogue == GEMM_EPILOGUE_TMA)
		e = run_tensor_map(r, &r->tma_d, s->out, r->d, s->n, s->m,
				   TMA_SWIZZLE_BYTES / r->out_size,
				   GEMMD_EPI_BOX_ROWS, "tensor map of D");
	return e;
}

/* ---- inputs kept between jobs ------------------------------------------- */

/*
 * A worker keeps one job's inputs on the device for the next: a sweep
 * runs one problem with many kernel knobs, and making A, B and C and,
 * above all, the naive reference again for every job is time wasted.
 * The set is reused part by part:
 *   A, B       when m, n, k, dtype, layout, init and seed are the same;
 *   C          when also out_dtype is, for a job that reads C (beta != 0);
 *   reference  when also alpha, beta and the reference kind are (and,
 *              with beta != 0, out_dtype: C's type).
 * A job on another problem frees the set before it allocates anything.
 * A part the job has no use for (C when it does not read C, the
 * reference when it does not verify) stays for a later job, unless an
 * allocation finds the memory full (run_alloc()).  D is never kept: it
 * is allocated, poisoned and written per job.
 *
 * A kernel under test that stores outside D could corrupt what is kept,
 * and with it the verdict of every later job.  So each buffer is
 * fingerprinted (gemmd_checksum) when it is made, and every kept buffer
 * again at the end of every job, a pass over memory that costs a
 * fraction of a millisecond.  Nothing else runs on the worker's GPU in
 * between, so one that changed was written by this job's launches: the
 * job says so (result.inputs.intact) and the set is dropped.  A job that
 * fails part way drops it unchecked.  After a sticky error nothing is
 * trusted, nor freed (the worker exits).
 */

static const char *const slot_names[_SLOT_MAX] = {
	[SLOT_A] = "A",
	[SLOT_B] = "B",
	[SLOT_C] = "C",
	[SLOT_REF] = "reference",
};

static void inputs_key_of(const struct gemm_spec *s, struct inputs_key *k)
{
	memset(k, 0, sizeof(*k));
	k->m = s->m;
	k->n = s->n;
	k->k = s->k;
	k->seed = s->seed;
	k->dtype = s->dtype;
	k->layout = s->layout;
	k->init = s->init;
}

/* Bytes of a buffer for the problem of key, C of type out. */
static uint64_t slot_bytes(const struct inputs_key *k, enum gemm_dtype out,
			   enum cache_slot slot)
{
	const uint64_t in = gemm_dtype_size(k->dtype);

	switch (slot) {
	case SLOT_A:
		return k->m * k->k * in;
	case SLOT_B:
		return k->n * k->k * in;
	case SLOT_C:
		return k->m * k->n * gemm_dtype_size(out);
	case SLOT_REF:
	case _SLOT_MAX:
	default:
		return k->m * k->n * sizeof(float);
	}
}

static uint64_t run_slot_bytes(const struct run *r, enum cache_slot slot)
{
	struct inputs_key k;

	inputs_key_of(r->spec, &k);
	return slot_bytes(&k, r->spec->out, slot);
}

static bool inputs_key_equal(const struct inputs_key *x,
			     const struct inputs_key *y)
{
	return x->m == y->m && x->n == y->n && x->k == y->k &&
	       x->seed == y->seed && x->dtype == y->dtype &&
	       x->layout == y->layout && x->init == y->init;
}

/* Bit for bit: a -0.0 that misses the cache costs a recomputation only. */
static bool same_double(double x, double y)
{
	return memcmp(&x, &y, sizeof(x)) == 0;
}

/* The kept reference is this job's, given the same A and B. */
static bool cache_ref_matches(const struct gpu_cache *c, const struct run *r)
{
	const struct gemm_spec *s = r->spec;

	return same_double(c->alpha, s->alpha) &&
	       same_double(c->beta, s->beta) && c->ref_kind == s->reference &&
	       (!r->reads_c || c->ref_out == s->out);
}

static void cache_free(struct gpu *g, enum cache_slot slot)
{
	struct gpu_cache *c = &g->cache;

	if (c->buf[slot])
		driver.api.cuMemFree(c->buf[slot]);
	c->buf[slot] = 0;
	if (slot == SLOT_A || slot == SLOT_B)
		c->ab_valid = false;
	else if (slot == SLOT_C)
		c->c_valid = false;
	else
		c->ref_valid = false;
}

static void cache_drop(struct gpu *g)
{
	for (int i = 0; i < _SLOT_MAX; i++)
		cache_free(g, i);
}

/*
 * What of the cache this job can use (r->cached), with what it cannot
 * freed first: everything, for another problem; C of another type, for
 * a job that reads C.  A reference for other terms is made again in its
 * buffer, which has the right size.
 */
static void cache_prepare(struct run *r)
{
	struct gpu_cache *c = &r->g->cache;
	const struct gemm_spec *s = r->spec;
	struct inputs_key key;

	inputs_key_of(s, &key);
	if (!c->ab_valid || !inputs_key_equal(&c->key, &key)) {
		cache_drop(r->g);
		return;
	}
	r->cached[SLOT_A] = r->cached[SLOT_B] = true;
	if (c->c_valid && (!r->reads_c || c->c_out == s->out))
		r->cached[SLOT_C] = r->reads_c;
	else
		cache_free(r->g, SLOT_C);
	if (s->verify) {
		r->cached[SLOT_REF] = c->ref_valid && cache_ref_matches(c, r);
		c->ref_valid = r->cached[SLOT_REF];
	} else if (!c->ref_valid) {
		cache_free(r->g, SLOT_REF);
	}
}

/*
 * Free what the cache holds that this job does not use; true if that was
 * anything.  The parts it uses cannot go: it would have to make them
 * again, in as much memory.
 */
static bool cache_trim(struct run *r)
{
	const struct gpu_cache *c = &r->g->cache;
	bool freed = false;

	if (c->buf[SLOT_C] && !r->reads_c) {
		cache_free(r->g, SLOT_C);
		freed = true;
	}
	if (c->buf[SLOT_REF] && !r->spec->verify) {
		cache_free(r->g, SLOT_REF);
		freed = true;
	}
	return freed;
}

/*
 * cuMemAlloc; when the memory is full and the cache holds something this
 * job does not use, that goes and the allocation is tried once more.
 */
static int run_alloc(struct run *r, CUdeviceptr *p, size_t bytes)
{
	CUresult res = driver.api.cuMemAlloc(p, bytes);

	if (res == CUDA_ERROR_OUT_OF_MEMORY && cache_trim(r))
		res = driver.api.cuMemAlloc(p, bytes);
	return run_check(r, res, "cuMemAlloc");
}

/* Queue the fingerprint of a kept buffer into its place in g->sums. */
static int run_sum_queue(struct run *r, enum cache_slot slot, uint64_t bytes)
{
	struct gemm_sum_args a = {
		.p = r->g->cache.buf[slot],
		.bytes = bytes,
		.sum = r->g->sums + slot * sizeof(uint64_t),
	};
	int e;

	e = run_memset32(r, a.sum, 0, 2);
	if (!e)
		e = run_helper(r, r->g->f_sum, stride_blocks(r, a.bytes / 4), 1,
			       &a);
	return e;
}

/* The fingerprints queued, once the stream is done. */
static int run_sums_read(struct run *r, uint64_t sums[_SLOT_MAX])
{
	return CU(r, cuMemcpyDtoH, sums, r->g->sums,
		  _SLOT_MAX * sizeof(uint64_t));
}

/* A, B and (beta != 0) C where the cache has none, from the seed. */
static int run_make_inputs(struct run *r)
{
	static const uint32_t streams[] = {
		[SLOT_A] = GEMMD_STREAM_A,
		[SLOT_B] = GEMMD_STREAM_B,
		[SLOT_C] = GEMMD_STREAM_C,
	};
	const struct gemm_spec *s = r->spec;
	struct gpu_cache *c = &r->g->cache;
	bool made[_SLOT_MAX] = { false };
	uint64_t sums[_SLOT_MAX];
	int e = 0;

	for (int i = SLOT_A; i <= SLOT_C && !e; i++) {
		const enum gemm_dtype type = i == SLOT_C ? s->out : s->dtype;
		const uint64_t bytes = run_slot_bytes(r, i);

		if (r->cached[i] || (i == SLOT_C && !r->reads_c))
			continue;
		cache_free(r->g, i);
		made[i] = true;
		e = run_alloc(r, &c->buf[i], bytes);
		if (!e)
			e = run_init_matrix(r, c->buf[i],
					    bytes / gemm_dtype_size(type),
					    streams[i], type);
		if (!e)
			e = run_sum_queue(r, i, bytes);
	}
	if (e || !(made[SLOT_A] || made[SLOT_B] || made[SLOT_C]))
		return e;
	e = run_sync(r, "making the inputs", 1);
	if (!e)
		e = run_sums_read(r, sums);
	if (e)
		return e;
	for (int i = SLOT_A; i <= SLOT_C; i++)
		if (made[i])
			c->sum[i] = sums[i];
	if (made[SLOT_A]) {
		inputs_key_of(s, &c->key);
		c->ab_valid = true;
	}
	if (made[SLOT_C]) {
		c->c_out = s->out;
		c->c_valid = true;
	}
	return 0;
}

/* The reference just made, fingerprinted and read back, is kept. */
static void cache_keep_ref(struct run *r, const uint64_t sums[_SLOT_MAX])
{
	struct gpu_cache *c = &r->g->cache;

	c->sum[SLOT_REF] = sums[SLOT_REF];
	c->alpha = r->spec->alpha;
	c->beta = r->spec->beta;
	c->ref_kind = r->spec->reference;
	c->ref_out = r->spec->out;
	c->ref_valid = true;
}

/*
 * At the end of the job, every kept buffer fingerprinted again.  One
 * that changed was written by something the job ran, the kernel under
 * test storing outside D most likely: *ret_intact is cleared, and the
 * set is dropped, to be made anew.
 */
static int run_check_kept(struct run *r, bool *ret_intact)
{
	struct gpu_cache *c = &r->g->cache;
	const bool kept[_SLOT_MAX] = {
		[SLOT_A] = c->ab_valid,
		[SLOT_B] = c->ab_valid,
		[SLOT_C] = c->ab_valid && c->c_valid,
		[SLOT_REF] = c->ab_valid && c->ref_valid,
	};
	uint64_t sums[_SLOT_MAX];
	int e = 0;

	*ret_intact = true;
	if (!c->ab_valid)
		return 0;
	for (int i = 0; i < _SLOT_MAX && !e; i++)
		if (kept[i])
			e = run_sum_queue(r, i,
					  slot_bytes(&c->key, c->c_out, i));
	if (!e)
		e = run_sync(r, "fingerprints of the kept inputs", 1);
	if (!e)
		e = run_sums_read(r, sums);
	if (e) {
		/* Not known to be intact; after a sticky error, left alone. */
		if (!r->sticky)
			cache_drop(r->g);
		return e;
	}
	for (int i = 0; i < _SLOT_MAX; i++) {
		if (!kept[i] || sums[i] == c->sum[i])
			continue;
		log_warning("GPU %d: %s changed during a job of %s (a store "
			    "outside D?); the kept inputs are dropped",
			    r->g->ordinal, slot_names[i], r->plan->kernel);
		*ret_intact = false;
	}
	if (!*ret_intact)
		cache_drop(r->g);
	return 0;
}

/* D for this job; A, B and (beta != 0) C kept or made (see above). */
static int run_buffers(struct run *r)
{
	const struct gpu_cache *c = &r->g->cache;
	const struct gemm_spec *s = r->spec;
	int e;

	cache_prepare(r);
	e = run_make_inputs(r);
	if (!e)
		e = run_alloc(r, &r->d, s->m * s->n * r->out_size);
	if (e)
		return e;
	r->a = c->buf[SLOT_A];
	r->b = c->buf[SLOT_B];
	r->c = r->reads_c ? c->buf[SLOT_C] : 0;
	return 0;
}

/* The kernel, its shared memory and, for big clusters, the opt-in. */
static int run_function(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	int e;

	e = function_get(r->g, p->cubin, p->kernel, &r->f, r->err, r->errlen);
	if (!e)
		e = CU(r, cuFuncSetAttribute, r->f,
		       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
		       (int)p->smem_bytes);
	if (!e && p->cluster[0] * p->cluster[1] > CLUSTER_PORTABLE_MAX)
		e = CU(r, cuFuncSetAttribute, r->f,
		       CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
	return e;
}

/* A launch of our kernel with the given grid, cluster and shared memory. */
static void run_launch_config(struct run *r, const unsigned int grid[3],
			      CUlaunchConfig *cfg, CUlaunchAttribute *attr)
{
	const struct gemm_plan *p = r->plan;

	memset(attr, 0, sizeof(*attr));
	attr->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	attr->value.clusterDim.x = p->cluster[0];
	attr->value.clusterDim.y = p->cluster[1];
	attr->value.clusterDim.z = p->cluster[2];

	memset(cfg, 0, sizeof(*cfg));
	cfg->gridDimX = grid[0];
	cfg->gridDimY = grid[1];
	cfg->gridDimZ = grid[2];
	cfg->blockDimX = p->block[0];
	cfg->blockDimY = p->block[1];
	cfg->blockDimZ = p->block[2];
	cfg->sharedMemBytes = p->smem_bytes;
	cfg->hStream = r->g->stream;
	cfg->attrs = attr;
	cfg->numAttrs = 1;
}

/*
 * The grid to launch.  A persistent kernel gets as many clusters as can
 * be resident at once (cuOccupancyMaxActiveClusters, asked with the real
 * cluster shape, block and shared memory), at most one per work unit;
 * it walks the rest itself.  None resident means the job cannot run.
 */
static int run_grid(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	const unsigned int one[3] = { p->cluster[0], p->cluster[1], 1 };
	CUlaunchAttribute attr;
	CUlaunchConfig cfg;
	int n = 0, e;

	memcpy(r->grid, p->grid, sizeof(r->grid));
	if (!p->persistent)
		return 0;
	run_launch_config(r, one, &cfg, &attr);
	e = CU(r, cuOccupancyMaxActiveClusters, &n, r->f, &cfg);
	if (e)
		return err_context(e, r->err, r->errlen, p->kernel);
	if (n <= 0) {
		snprintf(r->err, r->errlen,
			 "%s: no cluster of %ux%u CTAs of %u threads and %u "
			 "bytes of shared memory can be resident on this GPU "
			 "(cuOccupancyMaxActiveClusters: %d)",
			 p->kernel, p->cluster[0], p->cluster[1], p->block[0],
			 p->smem_bytes, n);
		return -EOPNOTSUPP;
	}
	r->grid[0] = p->cluster[0] * (unsigned int)MIN(p->units, (uint64_t)n);
	return 0;
}

/* struct gemm_args from the spec and the plan (kernels/gemm-abi.h). */
static void run_args(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	const struct gemm_plan *p = r->plan;
	struct gemm_args *a = &r->args;

	memset(a, 0, sizeof(*a));
	a->d = r->d;
	a->c = r->reads_c ? r->c : 0;
	a->a = r->a;
	a->b = r->b;
	a->m = (uint32_t)s->m;
	a->n = (uint32_t)s->n;
	a->k = (uint32_t)s->k;
	a->ldd = (uint32_t)s->n;
	a->lda = (uint32_t)(layout_a_kmajor(s->layout) ? s->k : s->m);
	a->ldb = (uint32_t)(layout_b_kmajor(s->layout) ? s->k : s->n);
	a->stages = p->stages;
	a->cluster_x = p->cluster[0];
	a->cluster_y = p->cluster[1];
	a->raster = p->raster == GEMM_RASTER_ALONG_N ? GEMMD_RASTER_ALONG_N :
						       GEMMD_RASTER_ALONG_M;
	a->swizzle = MAX(p->swizzle, 1u);
	a->epilogue = p->epilogue == GEMM_EPILOGUE_TMA ? GEMMD_EPILOGUE_TMA :
							 GEMMD_EPILOGUE_DIRECT;
	a->out = out_code(s->out);
	a->alpha = (float)s->alpha;
	a->beta = (float)s->beta;
	a->fault = r->fault;
}

static int run_prepare(struct run *r)
{
	int e;

	e = CU(r, cuCtxSetCurrent, r->g->ctx);
	r->current = !e;
	if (!e)
		e = run_function(r);
	if (!e)
		e = run_buffers(r);
	if (!e)
		e = run_maps(r);
	if (!e)
		e = run_grid(r);
	if (!e)
		run_args(r);
	return e;
}

static int run_launch_ours(struct run *r)
{
	void *params[] = { &r->tma_a, &r->tma_b, &r->tma_d, &r->args };
	CUlaunchAttribute attr;
	CUlaunchConfig cfg;

	run_launch_config(r, r->grid, &cfg, &attr);
	return CU(r, cuLaunchKernelEx, &cfg, r->f, params, NULL);
}

static int run_launch(struct run *r)
{
	return r->launch(r);
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

/* An element of D as read back, in its output type. */
static double out_to_double(enum gemm_dtype t, const void *p)
{
	uint16_t h;
	float f;

	switch (t) {
	case GEMM_DTYPE_BF16:
		memcpy(&h, p, sizeof(h));
		return bf16_to_double(h);
	case GEMM_DTYPE_FP16:
		memcpy(&h, p, sizeof(h));
		return fp16_to_double(h);
	case GEMM_DTYPE_FP32:
	case _GEMM_DTYPE_MAX:
	default:
		memcpy(&f, p, sizeof(f));
		return f;
	}
}

/*
 * The operands' element strides in the job's layout (see struct
 * gemm_ref_args): A[m][k] = a[m * a_sm + k * a_sk], B[k][n] = b[k * b_sk
 * + n * b_sn].
 */
static void run_strides(const struct run *r, struct gemm_ref_args *ref)
{
	const struct gemm_spec *s = r->spec;
	const uint32_t m = (uint32_t)s->m, n = (uint32_t)s->n;
	const uint32_t k = (uint32_t)s->k;

	ref->a_sm = layout_a_kmajor(s->layout) ? k : 1;
	ref->a_sk = layout_a_kmajor(s->layout) ? 1 : m;
	ref->b_sk = layout_b_kmajor(s->layout) ? 1 : n;
	ref->b_sn = layout_b_kmajor(s->layout) ? k : 1;
}

/*
 * The k inputs of one output element on one side, as floats: elements
 * first, first + stride, ... of an input matrix (a row of A or a column
 * of B; stride 1 when the operand is K-major).
 */
static int read_k_vector(struct run *r, CUdeviceptr base, uint64_t first,
			 uint64_t stride, float *out)
{
	const uint64_t k = r->spec->k;
	uint16_t *h = malloc(k * sizeof(*h));
	CUDA_MEMCPY2D c;
	int e;

	if (!h)
		return -ENOMEM;
	if (stride == 1) {
		e = CU(r, cuMemcpyDtoH, h, base + first * sizeof(*h),
		       k * sizeof(*h));
	} else {
		memset(&c, 0, sizeof(c));
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = base + first * sizeof(*h);
		c.srcPitch = stride * sizeof(*h);
		c.dstMemoryType = CU_MEMORYTYPE_HOST;
		c.dstHost = h;
		c.dstPitch = sizeof(*h);
		c.WidthInBytes = sizeof(*h);
		c.Height = k;
		e = CU(r, cuMemcpy2D, &c);
	}
	for (uint64_t i = 0; !e && i < k; i++)
		out[i] = (float)(r->spec->dtype == GEMM_DTYPE_BF16 ?
					 bf16_to_double(h[i]) :
					 fp16_to_double(h[i]));
	free(h);
	return e;
}

/*
 * Which consumer warpgroup wrote row: ws and cooperative split a tile's
 * rows between two; in the other schedules a warpgroup owns whole tiles
 * (pingpong) or there is none, and 0 is reported.
 */
static unsigned int run_warpgroup(const struct run *r, uint64_t row)
{
	const struct gemm_tile *t = &r->plan->tile;

	switch (r->spec->schedule) {
	case GEMM_SCHEDULE_WS:
	case GEMM_SCHEDULE_COOPERATIVE:
		return t->m >= 2 ? (unsigned int)(row % t->m / (t->m / 2)) : 0;
	case GEMM_SCHEDULE_PINGPONG:
	case GEMM_SCHEDULE_INTERLEAVED:
	case GEMM_SCHEDULE_MULTISTAGE:
	case GEMM_SCHEDULE_PIPELINED:
	case _GEMM_SCHEDULE_MAX:
	default:
		return 0;
	}
}

/*
 * Trace the first mismatch to the k-tile and stage that made it: its row
 * of A and column of B come back to the host and the error is matched
 * against per-k-tile partial sums (the error scaled back by alpha).  The
 * tile is the plan's; the stage is k_tile % stages only where the ring
 * starts afresh with each tile, so a persistent kernel reports none.
 * Best effort: a failure here leaves the verdict as it is.
 */
static void run_diagnose(struct run *r, struct gemm_verdict *v)
{
	const struct gemm_spec *s = r->spec;
	const uint64_t k = s->k;
	float *a = malloc(k * sizeof(*a)), *b = malloc(k * sizeof(*b));
	const double alpha = s->alpha;
	double err = v->first_got - v->first_want, tol;
	struct gemm_ref_args st = { 0 };
	struct kdiag d;

	run_strides(r, &st);
	if (!a || !b || !isfinite(err) || fpclassify(alpha) == FP_ZERO ||
	    read_k_vector(r, r->a, (uint64_t)v->first_row * st.a_sm, st.a_sk,
			  a) ||
	    read_k_vector(r, r->b, (uint64_t)v->first_col * st.b_sn, st.b_sk,
			  b))
		goto out;
	/* randint sums are exact integers; otherwise allow the tolerance */
	tol = s->init == GEMM_INIT_RANDINT ?
		      0.5 :
		      v->atol + v->rtol * fabs(v->first_want);
	diagnose_element(&r->plan->tile, r->plan->stages,
			 (unsigned int)v->first_row, (unsigned int)v->first_col,
			 a, b, (unsigned int)k, err / alpha, tol / fabs(alpha),
			 &d);
	v->diagnosed = true;
	v->where.tile_m = d.tile_m;
	v->where.tile_n = d.tile_n;
	v->where.warpgroup = run_warpgroup(r, (uint64_t)v->first_row);
	v->where.kind = d.kind;
	v->where.k_tile = d.k_tile;
	v->where.stage = r->plan->persistent ? -1 : d.stage;
	v->where.other_k_tile = d.other_k_tile;
	v->where.other_stage = r->plan->persistent ? -1 : d.other_stage;
out:
	free(a);
	free(b);
}

/* Value and reference at a mismatch, read back from the GPU. */
static int run_read_mismatch(struct run *r, uint64_t index,
			     struct gemm_mismatch *x)
{
	unsigned char got[4];
	float want;
	int e;

	e = CU(r, cuMemcpyDtoH, got, r->d + index * r->out_size, r->out_size);
	if (!e)
		e = CU(r, cuMemcpyDtoH, &want, r->ref + index * sizeof(want),
		       sizeof(want));
	if (e)
		return e;
	x->row = (int64_t)(index / r->spec->n);
	x->col = (int64_t)(index % r->spec->n);
	x->got = out_to_double(r->spec->out, got);
	x->want = want;
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	const uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/*
 * The first mismatches in index order, up to GEMM_MISMATCH_SAMPLE: the
 * indices the compare kernel recorded, and first_index, which is exact
 * (atomicMin) and so first even when the slots ran out before the
 * kernel met it; sorted, repeats dropped.  With at most
 * GEMMD_CMP_SAMPLE_SLOTS mismatches every one was recorded, and these
 * are exactly the first; with more, the lowest of those recorded.
 */
static int run_mismatches(struct run *r, const struct gemm_cmp_stats *st,
			  struct gemm_verdict *v)
{
	const uint64_t count = r->spec->m * r->spec->n;
	const size_t recorded =
		(size_t)MIN(st->sample_count, (uint64_t)GEMMD_CMP_SAMPLE_SLOTS);
	uint64_t idx[GEMMD_CMP_SAMPLE_SLOTS + 1];
	size_t n = 0;
	int e = 0;

	idx[n++] = st->first_index;
	for (size_t i = 0; i < recorded; i++)
		idx[n++] = st->sample[i];
	qsort(idx, n, sizeof(*idx), cmp_u64);
	for (size_t i = 0; i < n && v->n_sample < GEMM_MISMATCH_SAMPLE; i++) {
		if ((i && idx[i] == idx[i - 1]) || idx[i] >= count)
			continue;
		e = run_read_mismatch(r, idx[i], &v->sample[v->n_sample]);
		if (e)
			return e;
		v->n_sample++;
	}
	if (!v->n_sample)
		return 0;
	v->first_row = v->sample[0].row;
	v->first_col = v->sample[0].col;
	v->first_got = v->sample[0].got;
	v->first_want = v->sample[0].want;
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
 * Exact comparison needs every value the GEMM makes to be an integer
 * that fp32 holds exactly, whatever the order of the sums and whether
 * the epilogue fuses alpha * acc + beta * c: randint inputs (|x| <= 2),
 * integer alpha and beta, and |alpha| * 4k + |beta| * 2 below 2^24.
 */
static bool run_exact(const struct gemm_spec *s)
{
	const double bound =
		fabs(s->alpha) * 4.0 * (double)s->k + fabs(s->beta) * 2.0;

	return s->init == GEMM_INIT_RANDINT &&
	       !(fabs(s->alpha - trunc(s->alpha)) > 0) &&
	       !(fabs(s->beta - trunc(s->beta)) > 0) && bound < 0x1p24;
}

/*
 * Tolerances: see cmp_elem() in kernels/reference.cu.  Exact where
 * run_exact() says so; otherwise atol covers fp32 summation order,
 * max(1, |alpha|) * K * 2^-20, and rtol the output's final rounding: its
 * epsilon for bf16 and fp16; for fp32 there is none, and 2^-22 covers the
 * epilogue's own fp32 roundings.
 */
static void run_tolerance(struct run *r, struct gemm_cmp_args *c,
			  struct gemm_verdict *v)
{
	const struct gemm_spec *s = r->spec;

	if (run_exact(s)) {
		c->exact = 1;
		c->atol = 0;
		c->rtol = 0;
	} else {
		c->exact = 0;
		c->atol = (float)(fmax(1.0, fabs(s->alpha)) *
				  ldexp((double)s->k, -20));
		switch (s->out) {
		case GEMM_DTYPE_BF16:
			c->rtol = 0x1p-7f;
			break;
		case GEMM_DTYPE_FP16:
			c->rtol = 0x1p-10f;
			break;
		case GEMM_DTYPE_FP32:
		case _GEMM_DTYPE_MAX:
		default:
			c->rtol = 0x1p-22f;
			break;
		}
	}
	v->atol = c->atol;
	v->rtol = c->rtol;
}

/* ---- cuBLASLt: shared by the reference and the baseline ----------------- */

/*
 * A cuBLASLt GEMM on the run's A and B: d = alpha * A * B + beta * c, d
 * and c of type out (D and C for the baseline; the fp32 reference buffer
 * for the reference), with the workspace allocated on first use.  algos:
 * the heuristic results to ask for (0: CUBLASLT_ALGOS_MAX).
 */
static int run_lt_new(struct run *r, enum gemm_dtype out, CUdeviceptr c,
		      CUdeviceptr d, float alpha, float beta,
		      unsigned int algos, struct cublaslt_gemm **ret)
{
	const struct gemm_spec *s = r->spec;
	struct cublaslt_gemm_desc desc = {
		.dtype = s->dtype,
		.out = out,
		.layout = s->layout,
		.m = s->m,
		.n = s->n,
		.k = s->k,
		.alpha = alpha,
		.beta = beta,
		.a = r->a,
		.b = r->b,
		.c = c,
		.d = d,
		.workspace_bytes = PLAN_CUBLASLT_WORKSPACE,
		.algos = algos,
	};
	int e;

	e = cublaslt_load(r->err, r->errlen);
	if (e)
		return e;
	if (!r->lt_ws)
		e = run_alloc(r, &r->lt_ws, PLAN_CUBLASLT_WORKSPACE);
	if (e)
		return e;
	desc.workspace = r->lt_ws;
	return cublaslt_gemm_new(&desc, ret, r->err, r->errlen);
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

/*
 * The device reference into r->ref: alpha * A * B (k terms) + beta * C,
 * as the spec has them.
 */
static int run_reference_device(struct run *r, uint64_t k, float alpha)
{
	const struct gemm_spec *s = r->spec;
	struct gemm_ref_args ref = {
		.a = r->a,
		.b = r->b,
		.c = r->reads_c ? r->c : 0,
		.r = r->ref,
		.m = (uint32_t)s->m,
		.n = (uint32_t)s->n,
		.k = (uint32_t)k,
		.out = out_code(s->out),
		.alpha = alpha,
		.beta = r->reads_c ? (float)s->beta : 0.0f,
	};

	run_strides(r, &ref);
	return run_helper(r, r->g->f_ref[s->dtype], DIV_ROUND_UP(s->m, 64),
			  DIV_ROUND_UP(s->n, 64), &ref);
}

/*
 * The fp32 reference from cuBLASLt's first heuristic choice.  cuBLASLt
 * wants C of D's type, so with beta != 0 the reference kernel first
 * writes beta * C (k = 0) in fp32 into the reference buffer, and
 * cuBLASLt adds alpha * A * B to it in place (beta 1).
 */
static int run_reference_cublas(struct run *r)
{
	const float alpha = (float)r->spec->alpha;
	int e = 0;

	if (r->reads_c)
		e = run_reference_device(r, 0, 0.0f);
	if (!e)
		e = run_lt_new(r, GEMM_DTYPE_FP32, r->reads_c ? r->ref : 0,
			       r->ref, alpha, r->reads_c ? 1.0f : 0.0f, 0,
			       &r->lt_ref);
	if (e)
		return e;
	e = cublaslt_gemm_launch(r->lt_ref, r->g->stream, r->err, r->errlen);
	return e ? run_lt_failed(r, e) : 0;
}

/* Poison D so that elements the kernel never writes show. */
static int run_poison(struct run *r)
{
	const uint64_t count = r->spec->m * r->spec->n;
	const bool wide = r->out_size == 4;
	struct gemm_fill_args fill = {
		.p = r->d,
		.count = count,
		.value = wide ? GEMMD_POISON_U32 : GEMMD_POISON_U16,
	};

	return run_helper(r, wide ? r->g->f_fill32 : r->g->f_fill16,
			  stride_blocks(r, count), 1, &fill);
}

/* The reference into the kept buffer, then its fingerprint. */
static int run_reference(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	int e;

	if (s->reference == GEMM_REFERENCE_CUBLAS)
		e = run_reference_cublas(r);
	else
		e = run_reference_device(r, s->k, (float)s->alpha);
	if (!e)
		e = run_sum_queue(r, SLOT_REF, run_slot_bytes(r, SLOT_REF));
	return e;
}

/*
 * Zero the compare statistics, first_index all ones, in stream order: a
 * cuMemcpyHtoD from pageable memory goes through the legacy stream, which
 * our stream does not wait for, and may still be in flight when it
 * returns.
 */
static int run_stats_reset(struct run *r)
{
	const CUdeviceptr first =
		r->stats + offsetof(struct gemm_cmp_stats, first_index);
	int e;

	e = run_memset32(r, r->stats, 0, sizeof(struct gemm_cmp_stats) / 4);
	if (!e)
		e = run_memset32(r, first, UINT32_MAX, 2);
	return e;
}

/*
 * The first launch, on a poisoned D, against the fp32 reference: the
 * kept one when it is this job's, otherwise one made now (and kept).
 */
static int run_verify(struct run *r, struct gemm_verdict *v)
{
	const struct gemm_spec *s = r->spec;
	const uint64_t count = s->m * s->n;
	const bool make_ref = !r->cached[SLOT_REF];
	struct gpu_cache *c = &r->g->cache;
	struct gemm_cmp_args cmp = { .count = count };
	struct gemm_cmp_stats st;
	uint64_t sums[_SLOT_MAX];
	int e = 0;

	if (!c->buf[SLOT_REF])
		e = run_alloc(r, &c->buf[SLOT_REF],
			      run_slot_bytes(r, SLOT_REF));
	if (!e)
		e = run_alloc(r, &r->stats, sizeof(st));
	if (!e)
		e = run_poison(r);
	if (!e)
		e = run_launch(r);
	if (!e)
		e = run_sync(r, "verification launch", 1);
	if (e)
		return e;

	r->ref = c->buf[SLOT_REF];
	cmp.d = r->d;
	cmp.r = r->ref;
	cmp.stats = r->stats;
	run_tolerance(r, &cmp, v);
	if (make_ref)
		e = run_reference(r);
	if (!e)
		e = run_stats_reset(r);
	if (!e)
		e = run_helper(r, r->g->f_cmp[s->out], stride_blocks(r, count),
			       1, &cmp);
	if (!e)
		e = run_sync(r, "reference and compare", 1);
	if (!e)
		e = CU(r, cuMemcpyDtoH, &st, r->stats, sizeof(st));
	if (!e && make_ref)
		e = run_sums_read(r, sums);
	if (e)
		return e;
	if (make_ref)
		cache_keep_ref(r, sums);

	verdict_fill(r, &st, v);
	if (!st.mismatches)
		return 0;
	e = run_mismatches(r, &st, v);
	if (!e && v->first_row >= 0)
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
	r->ours.samples = calloc(cap, sizeof(*r->ours.samples));
	r->base.samples = calloc(cap, sizeof(*r->base.samples));
	if (!r->events || !r->ours.samples || !r->base.samples)
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
	return run_alloc(r, &r->flush, r->flush_bytes);
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
 * The warm-up launches of t.  The last TIMING_CALIBRATE of them (at
 * least one launch, even with warmup 0) are timed one by one, as samples
 * of one launch in this mode, and the shortest sets the batch size.
 */
static int run_warmup(struct run *r, struct timer *t)
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
	t->launch_us = best;
	t->batch = stats_batch_size(best);
	return 0;
}

/* Samples to queue before the next look at the stopping rule. */
static unsigned int run_chunk(const struct run *r, const struct timer *t)
{
	const double sample_us = t->launch_us * t->batch;
	unsigned int n = TIMING_CHUNK_MAX;

	if (sample_us * TIMING_CHUNK_MAX > TIMING_CHUNK_US)
		n = MAX(1u, (unsigned int)(TIMING_CHUNK_US / sample_us));
	return MIN(n, r->cap_samples - t->n_samples);
}

/*
 * While the n queued samples run: read the telemetry about every
 * TIMING_WATCH_US, and count the samples that ran while a reading saw
 * the GPU slowed down.  The sample running is the first whose stop event
 * has not completed.  Gives up after the chunk's expected time four
 * times over and a second; run_sync() then waits out (or calls) a hang.
 */
static void run_watch_chunk(struct run *r, struct timer *t, unsigned int n)
{
	const double expect_us = t->launch_us * t->batch * n;
	const uint64_t until = now_usec() + 1000000 + (uint64_t)(4 * expect_us);
	unsigned int cur = 0, throttled = 0, last = UINT_MAX;

	while (cur < n && now_usec() < until) {
		while (cur < n &&
		       driver.api.cuEventQuery(r->events[2 * cur + 1]) ==
			       CUDA_SUCCESS)
			cur++;
		if (cur == n)
			break;
		/* Sample cur is running or next: counted once if slowed. */
		if (nvml_track_sample(&t->tele) && cur != last) {
			throttled++;
			last = cur;
		}
		sleep_us(TIMING_WATCH_US);
	}
	nvml_track_throttled(&t->tele, throttled);
}

/*
 * Queue n samples, then watch them run and add them to t's samples.
 * Everything is queued first: with a telemetry read between two
 * launches, a read slower than a sample let the GPU run dry between
 * samples, and the duty cycle, which sets the clocks at the power cap,
 * then depended on NVML.
 */
static int run_chunk_samples(struct run *r, struct timer *t, unsigned int n)
{
	double us = 0;
	int e = 0;

	for (unsigned int i = 0; i < n && !e; i++)
		e = run_queue_sample(r, t->batch, i);
	if (!e)
		run_watch_chunk(r, t, n);
	if (!e)
		e = run_sync(r, "timed launches", (double)n * t->batch);
	for (unsigned int i = 0; i < n && !e; i++) {
		e = run_elapsed(r, i, &us);
		if (e)
			break;
		t->gpu_time_us += us;
		t->samples[t->n_samples++] = us / t->batch;
	}
	return e;
}

static bool run_done(const struct run *r, const struct timer *t,
		     enum gemm_stop *ret_reason)
{
	const struct gemm_spec *s = r->spec;
	const struct stats_rule rule = {
		.min_samples = s->min_samples,
		.max_samples = r->cap_samples,
		.min_time_us = s->min_time_ms * 1000.0,
		.max_time_us = s->max_time_ms * 1000.0,
		.max_noise = s->max_noise,
	};
	const size_t n = t->n_samples;
	double mean;

	if (s->iterations) {
		*ret_reason = GEMM_STOP_ITERATIONS;
		return n >= s->iterations;
	}
	mean = stats_mean(t->samples, n);
	return stats_should_stop(
		&rule, n, t->gpu_time_us,
		stats_rel_stderr(mean, stats_stdev(t->samples, n, mean), n),
		ret_reason);
}

static int run_timing_fill(struct run *r, const struct timer *tm,
			   struct gemm_timing *t, bool raw)
{
	struct stats_summary s;

	if (raw) {
		t->raw_us = calloc(MAX(tm->n_samples, 1u), sizeof(*t->raw_us));
		if (!t->raw_us)
			return -ENOMEM;
		memcpy(t->raw_us, tm->samples,
		       tm->n_samples * sizeof(*t->raw_us));
	}
	stats_summarize(tm->samples, tm->n_samples, &s);
	t->samples = tm->n_samples;
	t->min_us = s.min;
	t->median_us = s.median;
	t->mean_us = s.mean;
	t->stdev_us = s.stdev;
	t->iqr_us = s.p75 - s.p25;
	t->p90_us = s.p90;
	t->p99_us = s.p99;
	t->noise = s.noise;
	t->gpu_time_ms = tm->gpu_time_us / 1000.0;
	t->stop_reason = tm->reason;
	t->mode = r->spec->timing_mode;
	t->l2_flush_bytes = r->flush_bytes;
	t->batch = tm->batch;
	return 0;
}

/* Warm t up and make it the one run_launch() launches. */
static int run_timer_start(struct run *r, struct timer *t)
{
	int e;

	r->launch = t->launch;
	e = run_warmup(r, t);
	if (e)
		return e;
	nvml_track_start(&t->tele, r->g->nvml, r->cap_samples);
	nvml_track_pause(&t->tele);
	t->done = run_done(r, t, &t->reason);
	return 0;
}

/* One chunk of t's samples, its telemetry running meanwhile only. */
static int run_timer_chunk(struct run *r, struct timer *t)
{
	int e;

	r->launch = t->launch;
	nvml_track_resume(&t->tele);
	e = run_chunk_samples(r, t, run_chunk(r, t));
	nvml_track_pause(&t->tele);
	t->chunks++;
	if (!e)
		t->done = run_done(r, t, &t->reason);
	return e;
}

/* One timer alone, to the end of its stopping rule. */
static int run_time_one(struct run *r, struct timer *t)
{
	int e = run_timer_start(r, t);

	while (!e && !t->done)
		e = run_timer_chunk(r, t);
	r->launch = run_launch_ours;
	return e;
}

static int run_time_separate(struct run *r)
{
	int e = run_time_one(r, &r->ours);

	if (e || !r->base.launch)
		return e;
	sleep_ms(r->spec->cooldown_ms);
	return run_time_one(r, &r->base);
}

static int run_time_together(struct run *r, struct timer *a, struct timer *b)
{
	struct timer *const timers[] = { a, b };
	const unsigned int n = ARRAY_SIZE(timers);
	bool done = false;
	int e = 0;

	for (unsigned int i = 0; i < n && !e; i++)
		e = run_timer_start(r, timers[i]);
	while (!e && !done) {
		done = true;
		for (unsigned int i = 0; i < n && !e; i++) {
			if (!timers[i]->done)
				e = run_timer_chunk(r, timers[i]);
			done = done && timers[i]->done;
		}
	}
	r->launch = run_launch_ours;
	return e;
}

/*
 * Time our kernel and, with a baseline (r->base.launch set), the
 * baseline's, in the job's order.  Separate: ours warmed up and timed
 * to the end, the job's cool-down, then the baseline likewise.
 * Interleaved: both warmed up, then a chunk of samples (about
 * TIMING_CHUNK_US) of one and then the other until each has met the
 * stopping rule.
 */
static int run_time(struct run *r)
{
	if (r->base.launch && r->spec->baseline_order == GEMM_ORDER_INTERLEAVED)
		return run_time_together(r, &r->ours, &r->base);
	return run_time_separate(r);
}

/* Ours, into the result: its timing and telemetry. */
static int run_time_report(struct run *r, struct gemm_result *res)
{
	nvml_track_finish(&r->ours.tele, &res->telemetry);
	return run_timing_fill(r, &r->ours, &res->timing, r->spec->raw_samples);
}

/*
 * Rates at the median time.  The peak is SMs x the maximum SM clock
 * (CU_DEVICE_ATTRIBUTE_CLOCK_RATE) x GPU_SM90_DENSE_FLOP_PER_CLK, for
 * SM90 only.  The fewest bytes a GEMM can move: A and B read once, D
 * written once and, with beta != 0, C read once, each in its own type.
 */
static void run_rates(const struct run *r, struct gemm_result *res)
{
	const struct gemm_spec *s = r->spec;
	const double median_s = res->timing.median_us * 1e-6;

	res->tflops = gemm_flops(s) / median_s / 1e12;
	res->min_bytes = (s->m * s->k + s->n * s->k) * r->in_size +
			 s->m * s->n * r->out_size * (r->reads_c ? 2 : 1);
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

/* Try each algorithm the heuristic gave; *ret: the fastest. */
static int run_lt_fastest(struct run *r, unsigned int n, unsigned int *ret)
{
	double best = INFINITY, us;
	int e;

	for (unsigned int i = 0; i < n; i++) {
		e = run_lt_trial(r, i, &us);
		if (e)
			return e;
		if (us < best) {
			best = us;
			*ret = i;
		}
	}
	if (!(best < INFINITY))
		return err_context(-EOPNOTSUPP, r->err, r->errlen,
				   "no cuBLASLt algorithm could be launched");
	return 0;
}

/*
 * Select the algorithm to time.  In the default mode the heuristic was
 * asked for one only, and it is taken untried, as cuBLAS would take it.
 */
static int run_lt_pick(struct run *r, struct gemm_baseline_result *b)
{
	const unsigned int n = cublaslt_gemm_algos(r->lt);
	unsigned int pick = 0;
	int e;

	if (b->mode == GEMM_BASELINE_MODE_FASTEST) {
		e = run_lt_fastest(r, n, &pick);
		if (e)
			return e;
	}
	cublaslt_gemm_select(r->lt, pick);
	b->heuristics_tried = n;
	b->algo_index = (int)pick;
	b->algo_id = cublaslt_gemm_algo_id(r->lt, pick);
	return 0;
}

/*
 * The baseline: cuBLASLt on the same A, B, C and D (same alpha, beta and
 * output type), timed exactly as ours is (same mode, warm-up and
 * stopping rule) and alongside it.  D is overwritten, which is fine:
 * verification is done by now.  "cublas" times the fastest of the
 * heuristic's top CUBLASLT_ALGOS_MAX, "cublas_default" its first choice,
 * the like-for-like figure next to a framework that calls cuBLAS.  The
 * trials of "cublas" run here, before either is timed.
 */
static int run_baseline_prepare(struct run *r, struct gemm_result *res)
{
	const struct gemm_spec *s = r->spec;
	struct gemm_baseline_result *b = &res->baseline;
	const bool first = s->baseline == GEMM_BASELINE_CUBLAS_DEFAULT;
	int e;

	b->mode = first ? GEMM_BASELINE_MODE_DEFAULT :
			  GEMM_BASELINE_MODE_FASTEST;
	e = run_lt_new(r, s->out, r->reads_c ? r->c : 0, r->d, (float)s->alpha,
		       r->reads_c ? (float)s->beta : 0.0f,
		       first ? 1 : CUBLASLT_ALGOS_MAX, &r->lt);
	if (!e)
		e = run_lt_pick(r, b);
	if (e)
		return e;
	cublaslt_gemm_algo_describe(r->lt, (unsigned int)b->algo_index,
				    &b->algo);
	r->base.launch = run_launch_lt;
	return 0;
}

static int run_baseline_report(struct run *r, struct gemm_result *res)
{
	struct gemm_baseline_result *b = &res->baseline;
	int e;

	nvml_track_finish(&r->base.tele, &b->telemetry);
	e = run_timing_fill(r, &r->base, &b->timing, false);
	if (e)
		return e;
	snprintf(b->library, sizeof(b->library), "cublasLt");
	b->version = cublaslt_version();
	b->order = r->spec->baseline_order;
	b->rounds = r->base.chunks;
	b->tflops = gemm_flops(r->spec) / (b->timing.median_us * 1e-6) / 1e12;
	b->telemetry.tflops_per_watt = b->tflops / b->telemetry.power_mean_w;
	b->present = true;
	res->speedup_vs_baseline = b->timing.median_us / res->timing.median_us;
	return 0;
}

/* The grid that runs, for the result: a persistent kernel's is cut. */
static void run_launch_report(const struct run *r, struct gemm_launch *l)
{
	memcpy(l->grid, r->grid, sizeof(l->grid));
	l->ctas = (uint64_t)r->grid[0] * r->grid[1] * r->grid[2];
}

/* Where the inputs came from, for the result. */
static void run_inputs_report(const struct run *r, struct gemm_inputs *in)
{
	in->present = true;
	in->init = r->spec->init;
	in->seed = r->spec->seed;
	in->cached = r->cached[SLOT_A] && r->cached[SLOT_B] &&
		     (!r->reads_c || r->cached[SLOT_C]);
	in->reference_used = r->spec->verify;
	in->reference_cached = r->spec->verify && r->cached[SLOT_REF];
}

/*
 * Frees everything a run allocated; errors are ignored.  After a sticky
 * error (or a hang, with the kernel still running) the driver calls could
 * block or fail, and the process is about to exit anyway: host memory
 * only.
 */
static void run_free(struct run *r)
{
	/* Not a, b, c and ref: the cache keeps them for the next job. */
	const CUdeviceptr bufs[] = { r->d, r->stats, r->flush, r->lt_ws };

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
	free(r->ours.samples);
	free(r->base.samples);
	nvml_track_free(&r->ours.tele);
	nvml_track_free(&r->base.tele);
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
	r.ours.launch = run_launch_ours;
	r.tma = schedule_uses_tma(spec->schedule);
	r.reads_c = spec_reads_c(spec);
	r.in_size = gemm_dtype_size(spec->dtype);
	r.out_size = gemm_dtype_size(spec->out);
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
	if (!e)
		run_launch_report(&r, &ret->launch);
	if (!e && spec->verify)
		e = run_verify(&r, &ret->verify);
	if (!e)
		e = run_timing_alloc(&r);
	if (!e && spec->baseline != GEMM_BASELINE_NONE)
		e = run_baseline_prepare(&r, ret);
	if (!e)
		e = run_time(&r);
	if (!e)
		e = run_time_report(&r, ret);
	if (!e)
		run_rates(&r, ret);
	if (!e && spec->baseline != GEMM_BASELINE_NONE)
		e = run_baseline_report(&r, ret);
	/* A job that failed part way is not checked: what it kept goes. */
	if (r.current && !r.sticky && e)
		cache_drop(g);
	else if (r.current && !r.sticky)
		e = run_check_kept(&r, &ret->inputs.intact);
	if (!e)
		run_inputs_report(&r, &ret->inputs);
	run_free(&r);
	if (e) {
		free(ret->timing.raw_us);
		ret->timing.raw_us = NULL;
	}
	/*
	 * A lost context: what the cache holds is not to be trusted, nor
	 * freed (the worker exits and the driver takes it all back).
	 */
	if (r.sticky)
		memset(&g->cache, 0, sizeof(g->cache));
	*ret_sticky = r.sticky;
	return e;
}
