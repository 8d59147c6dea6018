// SPDX-License-Identifier: MIT
/*
 * gpu.c - one GPU through the CUDA Driver API: probe, open, run a job.
 *
 * The driver is loaded with dlopen() (see cuda-api.h), so this file, and
 * the worker, run on machines without it and say so.  Kernels come from
 * cubins in the kernel directory: the one the plan names (the kernel
 * under test, loaded on first use) and reference.cubin (init, poison,
 * reference GEMM, compare, checksum).  A run (struct run, run.h) checks
 * the job, loads its kernel, allocates its buffers and builds the inputs
 * on the GPU from the seed (or takes them, and the reference, from the
 * previous job on the same problem: run_buffers(), inputs.c), optionally
 * verifies one launch against the reference (run_verify(), verify.c),
 * and then times samples with CUDA events (run_time(), timing.c), with
 * the cuBLASLt baseline (baseline.c) if the job asks, reading NVML
 * telemetry alongside (nvml.c).  This file holds the steps of gpu_run()
 * that set the launch up, and the helpers the modules share.
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

#include "baseline.h"
#include "catalog.h"
#include "cublaslt.h"
#include "cuda-api.h"
#include "gemm-abi.h"
#include "gpu.h"
#include "inputs.h"
#include "log.h"
#include "nvml.h"
#include "run.h"
#include "timing.h"
#include "util.h"
#include "verify.h"

#define REFERENCE_CUBIN "reference.cubin"
/* Cubins one worker keeps loaded: one per kernel at most, and a bound. */
#define GPU_MODULES_MAX 4096
/* Sync deadline: this much plus the work at a pessimistic 10 TFLOP/s. */
#define GPU_SYNC_SLACK_US (30ull * 1000 * 1000)
#define GPU_SYNC_FLOPS_PER_US 1e7

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

const struct cuda_api *const gpu_cuda = &driver.api;

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
	case CUDA_ERROR_MPS_CLIENT_TERMINATED:
	case CUDA_ERROR_EXTERNAL_DEVICE:
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
	char digest[SHA256_TAG_LEN]; /* of the bytes loaded */
};

#define SMEM_OPTIN CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN

static int dev_attr(CUdevice dev, CUdevice_attribute a, int *v, char *err,
		    size_t errlen)
{
	return CU_TRY(err, errlen, cuDeviceGetAttribute, v, a, dev);
}

void cuda_api_format_uuid(const CUuuid *u, char *buf, size_t len)
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
	cuda_api_format_uuid(&uuid, d->uuid, sizeof(d->uuid));
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

static json_t *text_or_null(const char *s)
{
	return *s ? json_string(s) : json_null();
}

json_t *gpu_describe(struct gpu *g)
{
	struct nvml_identity id;
	char err[256];
	struct dev_info d;
	size_t free_b;
	json_t *o;

	if (dev_info_get(g->dev, &d, err, sizeof(err)) < 0)
		return NULL;
	o = dev_info_json(&d, g->ordinal);
	if (!o)
		return NULL;
	if (gpu_mem_free(g, &free_b) == 0)
		json_object_set_new(o, "memory_free_bytes",
				    json_integer((json_int_t)free_b));
	nvml_identity(g->nvml, &id);
	json_object_set_new(o, "nvidia_driver", text_or_null(id.driver));
	json_object_set_new(o, "vbios", text_or_null(id.vbios));
	json_object_set_new(o, "serial", text_or_null(id.serial));
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

/*
 * A cubin of the kernel directory, loaded on first use from the bytes
 * whose digest it keeps: what runs is what was hashed, even if the file
 * is replaced later.
 */
static int module_load(struct gpu *g, const char *name, struct gpu_module **ret,
		       char *err, size_t errlen)
{
	_cleanup_free_ uint8_t *data = NULL;
	char path[PATH_MAX + 64];
	struct gpu_module *m;
	size_t len = 0;
	int e;

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
	e = read_file(path, CUBIN_SIZE_MAX, &data, &len);
	if (e) {
		snprintf(err, errlen, "kernel file %s: %s", path, strerror(-e));
		return e;
	}
	m = &g->mods[g->n_mods];
	e = CU_TRY(err, errlen, cuModuleLoadData, &m->mod, data);
	if (e)
		return err_context(e, err, errlen, path);
	snprintf(m->name, sizeof(m->name), "%s", name);
	sha256_tag(data, len, m->digest);
	g->n_mods++;
	*ret = m;
	return 0;
}

static int module_get(struct gpu *g, const char *name, struct gpu_module **ret,
		      char *err, size_t errlen)
{
	for (unsigned int i = 0; i < g->n_mods; i++) {
		if (strcmp(g->mods[i].name, name) == 0) {
			*ret = &g->mods[i];
			return 0;
		}
	}
	return module_load(g, name, ret, err, errlen);
}

/*
 * digest, where given, is the cubin's as gemmd's catalog read it: a file
 * replaced since then may hold a kernel of other limits than the plan
 * was made for, so it is not run.
 */
static int function_get(struct gpu *g, const char *cubin, const char *digest,
			const char *kernel, CUfunction *ret, char *err,
			size_t errlen)
{
	struct gpu_module *m;
	char what[256];
	int e;

	e = module_get(g, cubin, &m, err, errlen);
	if (e)
		return e;
	if (digest && *digest && strcmp(digest, m->digest)) {
		snprintf(err, errlen,
			 "kernel file %s/%s changed since gemmd listed it "
			 "(listed %s, now %s): restart gemmd to list it again",
			 g->kernel_dir, cubin, digest, m->digest);
		return -ESTALE;
	}
	e = CU_TRY(err, errlen, cuModuleGetFunction, ret, m->mod, kernel);
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

	e = function_get(g, REFERENCE_CUBIN, NULL, "gemmd_fill_u16",
			 &g->f_fill16, err, errlen);
	if (!e)
		e = function_get(g, REFERENCE_CUBIN, NULL, "gemmd_checksum",
				 &g->f_sum, err, errlen);
	if (!e)
		e = function_get(g, REFERENCE_CUBIN, NULL, "gemmd_fill_u32",
				 &g->f_fill32, err, errlen);
	if (!e)
		e = function_get(g, REFERENCE_CUBIN, NULL, "gemmd_probe_sm",
				 &g->f_probe, err, errlen);
	for (int i = 0; !e && i < _GEMM_DTYPE_MAX; i++) {
		e = function_get(g, REFERENCE_CUBIN, NULL, init[i],
				 &g->f_init[i], err, errlen);
		if (!e && ref[i])
			e = function_get(g, REFERENCE_CUBIN, NULL, ref[i],
					 &g->f_ref[i], err, errlen);
		if (!e)
			e = function_get(g, REFERENCE_CUBIN, NULL, cmp[i],
					 &g->f_cmp[i], err, errlen);
	}
	return e;
}

/*
 * A launch of grid blocks of block threads in clusters of cluster, with
 * smem bytes of dynamic shared memory, on stream: a GEMM's and the GPC
 * probe's.
 */
static void launch_config(CUlaunchConfig *cfg, CUlaunchAttribute *attr,
			  const unsigned int grid[3],
			  const unsigned int block[3],
			  const unsigned int cluster[3], unsigned int smem,
			  CUstream stream)
{
	memset(attr, 0, sizeof(*attr));
	attr->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	attr->value.clusterDim.x = cluster[0];
	attr->value.clusterDim.y = cluster[1];
	attr->value.clusterDim.z = cluster[2];

	memset(cfg, 0, sizeof(*cfg));
	cfg->gridDimX = grid[0];
	cfg->gridDimY = grid[1];
	cfg->gridDimZ = grid[2];
	cfg->blockDimX = block[0];
	cfg->blockDimY = block[1];
	cfg->blockDimZ = block[2];
	cfg->sharedMemBytes = smem;
	cfg->hStream = stream;
	cfg->attrs = attr;
	cfg->numAttrs = 1;
}

/*
 * The GPC probe's cluster sizes: 16 where the GPU takes clusters that
 * large (non-portable), and smaller ones, which also reach the SMs of a
 * GPC that a larger cluster leaves over.
 */
static const unsigned int probe_sizes[] = { 16, 8, 6, 4, 2 };
#define PROBE_CLUSTERS 64u

/* One probe launch: every cluster's SMs join a group of g->gpcs. */
static int probe_launch(struct gpu *g, CUdeviceptr out, uint32_t *sms,
			unsigned int size, unsigned int smem, char *err,
			size_t errlen)
{
	const unsigned int grid[3] = { size * PROBE_CLUSTERS, 1, 1 };
	const unsigned int block[3] = { 32, 1, 1 };
	const unsigned int cluster[3] = { size, 1, 1 };
	void *params[] = { &out };
	CUlaunchAttribute attr;
	CUlaunchConfig cfg;
	int e;

	/* The default stream: the copy below waits for the launch. */
	launch_config(&cfg, &attr, grid, block, cluster, smem, NULL);
	/* A size this GPU does not take is left out, not an error. */
	if (driver.api.cuLaunchKernelEx(&cfg, g->f_probe, params, NULL) !=
	    CUDA_SUCCESS)
		return 0;
	e = CU_TRY(err, errlen, cuMemcpyDtoH, sms, out,
		   size * PROBE_CLUSTERS * sizeof(*sms));
	for (unsigned int c = 0; !e && c < PROBE_CLUSTERS; c++)
		gpc_map_join(&g->gpcs, sms + c * size, size);
	return e;
}

/*
 * Which SMs share a GPC, for kernel.placement: clusters of each probe
 * size, one block per SM (more than half its shared memory), the SMs
 * of a cluster always in one GPC.  Where the GPU has no clusters the
 * map stays empty, and a placed job claims its places in one group.
 */
static int probe_gpcs(struct gpu *g, int smem_optin, char *err, size_t errlen)
{
	const unsigned int smem = (unsigned int)smem_optin / 2 + 1024;
	CUdeviceptr out = 0;
	uint32_t *sms;
	int e;

	gpc_map_init(&g->gpcs);
	if (g->cc_major < 9) {
		gpc_map_finish(&g->gpcs);
		return 0;
	}
	sms = calloc(16 * PROBE_CLUSTERS, sizeof(*sms));
	if (!sms)
		return -ENOMEM;
	e = CU_TRY(err, errlen, cuFuncSetAttribute, g->f_probe,
		   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem);
	if (!e)
		e = CU_TRY(err, errlen, cuFuncSetAttribute, g->f_probe,
			   CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
			   1);
	if (!e)
		e = CU_TRY(err, errlen, cuMemAlloc, &out,
			   16 * PROBE_CLUSTERS * sizeof(*sms));
	for (size_t i = 0; !e && i < ARRAY_SIZE(probe_sizes); i++)
		e = probe_launch(g, out, sms, probe_sizes[i], smem, err,
				 errlen);
	if (out)
		driver.api.cuMemFree(out);
	free(sms);
	gpc_map_finish(&g->gpcs);
	return e ? err_context(e, err, errlen, "GPC probe") : 0;
}

/*
 * The fingerprint slots, zeroed in stream order: a read of the
 * fingerprints takes every slot, also those no job has summed yet
 * (compute-sanitizer's initcheck flags the uninitialised bytes otherwise).
 */
static int sums_alloc(struct gpu *g, char *err, size_t errlen)
{
	const size_t bytes = _SLOT_MAX * sizeof(uint64_t);
	CUresult r;
	int e;

	e = CU_TRY(err, errlen, cuMemAlloc, &g->sums, bytes);
	if (e)
		return e;
	r = driver.memset_d32_async(g->sums, 0, bytes / 4, g->stream);
	return r == CUDA_SUCCESS ?
		       0 :
		       cuda_api_error(r, "cuMemsetD32Async", err, errlen);
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
		e = probe_gpcs(g, info.smem_optin, err, errlen);
	if (!e)
		e = sums_alloc(g, err, errlen);
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
	inputs_drop(g);
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

int run_check(struct run *r, CUresult res, const char *call)
{
	if (res == CUDA_SUCCESS)
		return 0;
	if (cuda_api_is_sticky(res))
		r->sticky = true;
	return cuda_api_error(res, call, r->err, r->errlen);
}

int run_invalid(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int run_context(struct run *r, int e, const char *what)
{
	return err_context(e, r->err, r->errlen, what);
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

uint32_t run_out_code(enum gemm_dtype t)
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
 * 256.
 */
static int run_validate_tma(struct run *r)
{
	const struct gemm_plan *p = r->plan;

	if (p->tile.k * r->in_size != TMA_SWIZZLE_BYTES || !p->tile.m ||
	    p->tile.m > 256 || !p->tile.n || p->tile.n > 256)
		return run_invalid(r,
				   "tile %ux%ux%u does not fit the TMA "
				   "boxes",
				   p->tile.m, p->tile.n, p->tile.k);
	return 0;
}

/*
 * The ring, (BM + BN) x BK inputs a stage in every schedule, must fit
 * the launch's shared memory: a kernel traps (a lost context, the
 * worker replaced) when it does not, where this check fails the job
 * alone with the reason.
 */
static int run_validate_ring(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	uint64_t need;

	if (!p->tile.m || !p->tile.n || !p->tile.k)
		return run_invalid(r, "empty tile %ux%ux%u", p->tile.m,
				   p->tile.n, p->tile.k);
	need = GEMMD_SMEM_FIXED + (uint64_t)p->stages *
					  (p->tile.m + p->tile.n) * p->tile.k *
					  r->in_size;
	/* Pingpong's consumers can share one set of staging buffers. */
	if (r->tma && p->epilogue == GEMM_EPILOGUE_TMA)
		need += GEMMD_SMEM_EPILOGUE_OF(r->spec->schedule ==
					       GEMM_SCHEDULE_PINGPONG);
	if (p->smem_bytes < need)
		return run_invalid(r,
				   "smem_bytes %u too small for %u stages "
				   "(%llu needed)",
				   p->smem_bytes, p->stages,
				   (unsigned long long)need);
	return 0;
}

/*
 * Each CTA of a multicast group loads 1/parts of an operand tile
 * (run_operand_map()): the part must be whole 8-row swizzle atoms.
 */
static bool tma_share_ok(bool k_major, unsigned int tile_rows, unsigned int bk,
			 unsigned int parts)
{
	return (k_major ? tile_rows : bk) % (8 * parts) == 0;
}

static int run_validate_launch(struct run *r)
{
	const struct gemm_spec *s = r->spec;
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
	if (r->tma && (!tma_share_ok(layout_a_kmajor(s->layout), p->tile.m,
				     p->tile.k, cy) ||
		       !tma_share_ok(layout_b_kmajor(s->layout), p->tile.n,
				     p->tile.k, cx)))
		return run_invalid(r,
				   "tile %ux%ux%u cannot be cut among a %ux%u "
				   "cluster in whole 8-row swizzle atoms",
				   p->tile.m, p->tile.n, p->tile.k, cx, cy);
	return 0;
}

/*
 * GEMMD_FAULT, read from the worker's environment for each job: the
 * fault-injection tests set it to run every launch of the kernel under
 * test with a deliberate pipeline bug (gemm_args.fault), to show that
 * verification catches it and the diagnosis points at it, or with a
 * stress that must not change the result.  Unset or empty: none, as
 * always outside those tests.  A name not known fails the job, so that
 * a misspelt fault cannot pass for a test of nothing.  Faults with no
 * bit are the worker's own, not the kernel's: run_fault_injected().
 */
static const struct {
	const char *name;
	uint32_t bit;
	const char *what;
} faults[] = {
	{ "early_release", GEMMD_FAULT_EARLY_RELEASE,
	  "a deliberate pipeline bug" },
	{ "placement_skew", GEMMD_FAULT_PLACEMENT_SKEW,
	  "a GPC map that puts every SM in one group" },
	{ "sticky_error", 0, NULL },
	{ "job_error", 0, NULL },
};

static int run_fault(struct run *r)
{
	static bool told;
	const char *f = getenv("GEMMD_FAULT");
	size_t i;

	r->fault = 0;
	if (!f || !*f)
		return 0;
	for (i = 0; i < ARRAY_SIZE(faults) && strcmp(f, faults[i].name); i++)
		;
	if (i == ARRAY_SIZE(faults))
		return run_invalid(r,
				   "GEMMD_FAULT=%s: no such fault (known: "
				   "early_release, placement_skew, "
				   "sticky_error, job_error)",
				   f);
	r->fault = faults[i].bit;
	if (!r->fault)
		return 0;
	if (!told)
		log_warning("GEMMD_FAULT=%s: every launch of a kernel under "
			    "test carries %s",
			    f, faults[i].what);
	told = true;
	return 0;
}

/*
 * The worker's own faults, for a job whose label names the fault set in
 * GEMMD_FAULT, once its launches have run:
 *   job_error (tests/gpu-cache.test): the job fails with the context
 *     intact, as when cuBLASLt or the driver refuses something part way;
 *   sticky_error (tests/gpu-sticky.test): it fails as if its kernel had
 *     poisoned the context, so the worker exits and the supervisor's side
 *     of a real sticky error gets tested without a kernel that faults.
 */
static int run_fault_injected(struct run *r)
{
	const char *f = getenv("GEMMD_FAULT");

	if (!f || strcmp(f, r->spec->label))
		return 0;
	if (!strcmp(f, "job_error"))
		return run_invalid(r, "GEMMD_FAULT=job_error: injected");
	if (!strcmp(f, "sticky_error")) {
		r->sticky = true;
		run_invalid(r, "GEMMD_FAULT=sticky_error: injected");
		return -EFAULT;
	}
	return 0;
}

/*
 * Placement needs a persistent kernel (the others never claim a place)
 * and its data-parallel entry (the stream-K ones have none).
 */
static int run_validate_placement(struct run *r)
{
	const struct gemm_plan *p = r->plan;

	if (p->placement != GEMM_PLACEMENT_GPC)
		return 0;
	if (!p->persistent || p->decomposition != GEMM_DECOMP_DATA_PARALLEL)
		return run_invalid(
			r,
			"placement %s: not with the %s schedule "
			"or decomposition %s",
			gemm_placement_to_string(p->placement),
			gemm_schedule_to_string(r->spec->schedule),
			gemm_decomposition_to_string(p->decomposition));
	return 0;
}

/*
 * Stream-K needs a schedule whose kernel does it (the planner's rule,
 * gemm_schedule_has_decomposition()) and a persistent grid to cut the
 * last wave's tiles among.
 */
static int run_validate_decomposition(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	const enum gemm_schedule sched = r->spec->schedule;

	if (p->decomposition == GEMM_DECOMP_DATA_PARALLEL)
		return 0;
	if (!gemm_schedule_has_decomposition(sched, p->decomposition) ||
	    !p->persistent)
		return run_invalid(
			r, "decomposition %s: not with the %s%s schedule",
			gemm_decomposition_to_string(p->decomposition),
			p->persistent ? "" : "non-persistent ",
			gemm_schedule_to_string(sched));
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
	if (!p->kernel[0] || !p->entry[0] || !p->cubin[0])
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
		e = run_validate_ring(r);
	if (!e)
		e = run_validate_launch(r);
	if (!e)
		e = run_validate_decomposition(r);
	if (!e)
		e = run_validate_placement(r);
	return e;
}

unsigned int run_stride_blocks(struct run *r, uint64_t count)
{
	uint64_t want = DIV_ROUND_UP(count, 256);
	uint64_t cap = (uint64_t)r->g->sm_count * 16;

	return (unsigned int)MAX(1, MIN(want, cap));
}

int run_helper(struct run *r, CUfunction f, unsigned int gx, unsigned int gy,
	       void *args)
{
	void *params[] = { args };

	return CU(r, cuLaunchKernel, f, gx, gy, 1, 256, 1, 1, 0, r->g->stream,
		  params, NULL);
}

int run_sync(struct run *r, const char *what, double launches)
{
	const double flops = gemm_flops_budget(r->spec) * launches;
	const uint64_t deadline = now_usec() + GPU_SYNC_SLACK_US +
				  (uint64_t)(flops / GPU_SYNC_FLOPS_PER_US);
	long pause = 20;
	CUresult res;

	for (;;) {
		res = driver.api.cuStreamQuery(r->g->stream);
		if (res == CUDA_SUCCESS)
			return 0;
		if (res != CUDA_ERROR_NOT_READY)
			return run_context(
				r, run_check(r, res, "cuStreamQuery"), what);
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

int run_memset32(struct run *r, CUdeviceptr p, uint32_t value, size_t words)
{
	return run_check(r,
			 driver.memset_d32_async(p, value, words, r->g->stream),
			 "cuMemsetD32Async");
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
	return e ? run_context(r, e, what) : 0;
}

/*
 * An operand of rows (m for A, n for B) by k.  K-major: k elements per
 * row, a box of BK x tile_rows / parts.  MN-major: rows elements per row
 * of k, boxes of 64 x BK / parts, one per 64-wide chunk of the tile (the
 * kernel issues tile_rows / 64 loads).  parts is the cluster side that
 * multicasts this operand: each CTA of it loads 1/parts of the tile
 * (kernels/sm90_gemm.cu, share_of()); 1 loads the whole tile.
 */
static int run_operand_map(struct run *r, CUtensorMap *map, CUdeviceptr p,
			   bool k_major, uint64_t rows, unsigned int tile_rows,
			   unsigned int parts, const char *what)
{
	const struct gemm_spec *s = r->spec;
	const unsigned int bk = r->plan->tile.k;

	if (k_major)
		return run_tensor_map(r, map, s->dtype, p, s->k, rows, bk,
				      tile_rows / parts, what);
	return run_tensor_map(r, map, s->dtype, p, rows, s->k, TMA_BOX_64,
			      bk / parts, what);
}

/*
 * The kernel's tensor maps; those it does not use stay zero (they are
 * still passed).  A is multicast along the cluster's y, B along its x.
 * tma_d, for the tma epilogue: D as n x m rows, boxes of one 128-byte
 * row (64 16-bit or 32 fp32 columns) by one warp's rows.
 */
static int run_maps(struct run *r)
{
	const struct gemm_spec *s = r->spec;
	const struct gemm_plan *p = r->plan;
	int e;

	if (!r->tma)
		return 0;
	e = run_operand_map(r, &r->tma_a, r->a, layout_a_kmajor(s->layout),
			    s->m, p->tile.m, p->cluster[1], "tensor map of A");
	if (!e)
		e = run_operand_map(r, &r->tma_b, r->b,
				    layout_b_kmajor(s->layout), s->n, p->tile.n,
				    p->cluster[0], "tensor map of B");
	if (!e && p->epilogue == GEMM_EPILOGUE_TMA)
		e = run_tensor_map(r, &r->tma_d, s->out, r->d, s->n, s->m,
				   TMA_SWIZZLE_BYTES / r->out_size,
				   GEMMD_EPI_BOX_ROWS, "tensor map of D");
	return e;
}

/*
 * Under GEMMD_FAULT=early_release, a kernel that keeps the race in an
 * entry of its own (GEMMD_FAULT_ENTRY_SUFFIX) runs that one; the others
 * test the bit themselves.  -ENOENT: the cubin has no such entry.
 */
static int run_function_unguarded(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	char name[sizeof(p->entry) + sizeof(GEMMD_FAULT_ENTRY_SUFFIX)];

	if (!(r->fault & GEMMD_FAULT_EARLY_RELEASE))
		return -ENOENT;
	snprintf(name, sizeof(name), "%s%s", p->entry,
		 GEMMD_FAULT_ENTRY_SUFFIX);
	return function_get(r->g, p->cubin, p->digest, name, &r->f, r->err,
			    r->errlen);
}

/*
 * The kernel, its shared memory and, for big clusters, the opt-in.
 * Stream-K has an entry of its own beside the plain one (gemm-abi.h).
 */
static int run_function(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	int e;

	e = run_function_unguarded(r);
	if (e == -ENOENT) {
		r->err[0] = '\0'; /* the plain entry's error, if any */
		e = function_get(r->g, p->cubin, p->digest, p->entry, &r->f,
				 r->err, r->errlen);
	}
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

	launch_config(cfg, attr, grid, p->block, p->cluster, p->smem_bytes,
		      r->g->stream);
}

/*
 * Balanced occupancy: the fewest of n clusters that still take no more
 * rounds of work units than n do, ceil(units / rounds).  At 4096^3 in
 * 128x256 tiles on 2x1 clusters an H100 fits 66, 256 units take 4 rounds
 * either way, and 64 clusters make every wave whole: 0.6-1.8 % faster at
 * the power cap on every data-parallel shape tried (docs/perf.md,
 * session 27).
 */
static unsigned int balanced_clusters(uint64_t units, unsigned int n)
{
	const uint64_t rounds = (units + n - 1) / n;

	return (unsigned int)((units + rounds - 1) / rounds);
}

/*
 * How many clusters of the plan's shape, block and shared memory can be
 * resident at once (cuOccupancyMaxActiveClusters), in *n.
 */
static int run_resident(struct run *r, int *n)
{
	const struct gemm_plan *p = r->plan;
	const unsigned int one[3] = { p->cluster[0], p->cluster[1], 1 };
	CUlaunchAttribute attr;
	CUlaunchConfig cfg;

	*n = 0;
	run_launch_config(r, one, &cfg, &attr);
	return CU(r, cuOccupancyMaxActiveClusters, n, r->f, &cfg);
}

/*
 * The grid to launch.  A persistent kernel gets as many clusters as can
 * be resident at once, at most one per work unit unless it cuts units
 * along K (stream-K), fewer with balanced occupancy, and at most
 * clusters_max where the plan sets it; it walks the rest itself.  None
 * resident means the job cannot run.  Any other kernel launches the
 * plan's grid; how many of its clusters fit at once is only reported
 * (result.launch), so a failed question does not fail the job.
 */
static int run_grid(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	int n, e;

	memcpy(r->grid, p->grid, sizeof(r->grid));
	if (!p->persistent) {
		/* Only reported: a failed question leaves no message behind. */
		if (run_resident(r, &n) || n <= 0)
			r->err[0] = '\0';
		else
			r->resident = (unsigned int)n;
		return 0;
	}
	e = run_resident(r, &n);
	if (e)
		return run_context(r, e, p->entry);
	r->resident = (unsigned int)MAX(n, 0);
	if (n <= 0) {
		snprintf(r->err, r->errlen,
			 "%s: no cluster of %ux%u CTAs of %u threads and %u "
			 "bytes of shared memory can be resident on this GPU "
			 "(cuOccupancyMaxActiveClusters: %d)",
			 p->entry, p->cluster[0], p->cluster[1], p->block[0],
			 p->smem_bytes, n);
		return -EOPNOTSUPP;
	}
	/* Stream-K deals k-tiles out to every cluster, units or not. */
	if (p->decomposition == GEMM_DECOMP_DATA_PARALLEL)
		n = (int)MIN(p->units, (uint64_t)n);
	if (p->occupancy == GEMM_OCCUPANCY_BALANCED)
		n = (int)balanced_clusters(p->units, (unsigned int)n);
	if (p->clusters_max)
		n = (int)MIN(p->clusters_max, (unsigned int)n);
	r->grid[0] = p->cluster[0] * (unsigned int)n;
	return 0;
}

/* run.h: the slots come first in the workspace, the flags after them. */
uint64_t run_sk_slots_bytes(const struct run *r)
{
	const uint64_t ctas = (uint64_t)r->grid[0] * r->grid[1] * r->grid[2];

	return ctas * GEMMD_SK_SLOT_BYTES(r->plan->tile.m, r->plan->tile.n);
}

/*
 * Stream-K's workspace, sized for the grid run_grid() settled on: a
 * BM x BN fp32 slot per CTA, then a flag per CTA.  The flags are zeroed
 * here, once, in stream order before the first launch; every launch
 * leaves them zero, so the verified launch, the warm-up and the samples
 * all share the one workspace.  A data-parallel run has none.
 */
static int run_workspace(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	const uint64_t ctas = (uint64_t)r->grid[0] * r->grid[1] * r->grid[2];
	const uint64_t flags = run_sk_slots_bytes(r);
	int e;

	if (p->decomposition != GEMM_DECOMP_STREAM_K)
		return 0;
	e = run_alloc(r, &r->sk_ws,
		      GEMMD_SK_WORKSPACE_BYTES(ctas, p->tile.m, p->tile.n));
	if (!e)
		e = run_memset32(r, r->sk_ws + flags, 0, ctas);
	return e ? run_context(r, e, "stream-K workspace") : 0;
}

/*
 * Placement's tables and counters (gemm-abi.h), for the grid that
 * run_grid() settled on: the counters start at zero, and every launch
 * leaves them so.  Copied in stream order: a cuMemcpyHtoD() from
 * pageable memory goes through the legacy stream, which our stream does
 * not wait for, and may still be in flight when the first launch reads
 * the tables (with counters left from whatever the memory held before,
 * a claim finds every group full and the kernel traps).
 */
static int run_placement(struct run *r)
{
	const struct gemm_plan *p = r->plan;
	struct gemm_places pl;
	int e;

	if (p->placement != GEMM_PLACEMENT_GPC)
		return 0;
	gpc_map_placement(&r->g->gpcs, r->grid[0] / p->cluster[0],
			  p->cluster[0] * p->cluster[1], &pl);
	/* Nearly every cluster then finds its group full (tests only). */
	if (r->fault & GEMMD_FAULT_PLACEMENT_SKEW)
		memset(pl.sm_group, 0, sizeof(pl.sm_group));
	e = run_alloc(r, &r->placement, sizeof(pl));
	if (!e)
		e = CU(r, cuMemcpyHtoDAsync, r->placement, &pl, sizeof(pl),
		       r->g->stream);
	return e ? run_context(r, e, "placement tables") : 0;
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
	a->out = run_out_code(s->out);
	a->alpha = (float)s->alpha;
	a->beta = (float)s->beta;
	a->fault = r->fault;
	a->decomposition = p->decomposition == GEMM_DECOMP_STREAM_K ?
				   GEMMD_DECOMP_STREAM_K :
				   GEMMD_DECOMP_DATA_PARALLEL;
	a->workspace = r->sk_ws;
	a->placement = r->placement;
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
		e = run_workspace(r);
	if (!e)
		e = run_placement(r);
	if (!e)
		run_args(r);
	return e;
}

int run_launch_ours(struct run *r)
{
	void *params[] = { &r->tma_a, &r->tma_b, &r->tma_d, &r->args };
	CUlaunchAttribute attr[2];
	CUlaunchConfig cfg;

	run_launch_config(r, r->grid, &cfg, attr);
	/*
	 * A 1x1 cluster is launched as a plain grid: as a cluster launch a
	 * 2048^3 ws job of two waves took 38 us instead of 35.5 on an H100
	 * (docs/perf.md).  The occupancy query above still needs the
	 * attribute, or it answers 0.
	 */
	if (r->plan->cluster[0] * r->plan->cluster[1] == 1)
		cfg.numAttrs = 0;
	/*
	 * "pdl": this launch may begin while the one before it ends; the
	 * kernel waits for it before touching memory (griddepcontrol).
	 */
	if (r->spec->pdl) {
		attr[cfg.numAttrs] = (CUlaunchAttribute){
			.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
			.value.programmaticStreamSerializationAllowed = 1,
		};
		cfg.numAttrs++;
	}
	return CU(r, cuLaunchKernelEx, &cfg, r->f, params, NULL);
}

/* ---- the job: gpu_run() -------------------------------------------------- */

/*
 * The launch as it ran, for the result: a persistent kernel's grid is
 * cut.  waves: the work units of the busiest cluster, ceil(units /
 * clusters at work at once); stream-K evens its clusters' shares out,
 * units / clusters each.
 */
static void run_launch_report(const struct run *r, struct gemm_launch *l)
{
	const struct gemm_plan *p = r->plan;
	const uint64_t units = p->units;
	uint64_t active;

	memcpy(l->grid, r->grid, sizeof(l->grid));
	l->ctas = (uint64_t)r->grid[0] * r->grid[1] * r->grid[2];
	l->clusters = l->ctas / ((uint64_t)p->cluster[0] * p->cluster[1]);
	l->clusters_resident = r->resident;
	active = r->resident ? MIN(l->clusters, (uint64_t)r->resident) :
			       l->clusters;
	if (p->decomposition == GEMM_DECOMP_STREAM_K)
		l->waves = (double)units / (double)l->clusters;
	else
		l->waves = (double)DIV_ROUND_UP(units, active);
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
	const CUdeviceptr bufs[] = { r->d,     r->stats, r->flush,
				     r->lt_ws, r->sk_ws, r->placement };

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
		e = run_time_report(&r, &r.ours, &ret->timing, &ret->telemetry,
				    spec->raw_samples);
	if (!e)
		run_rates(&r, ret);
	if (!e && spec->baseline != GEMM_BASELINE_NONE)
		e = run_baseline_report(&r, ret);
	if (!e)
		e = run_fault_injected(&r);
	if (r.current && !r.sticky && e)
		run_check_kept_failed(&r);
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
