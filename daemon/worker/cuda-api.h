/* SPDX-License-Identifier: MIT */
/*
 * cuda-api.h - the CUDA Driver API entry points the worker uses, resolved
 * at run time.
 *
 * The worker does not link libcuda: it must start, and say why it cannot
 * work, on a machine without the NVIDIA driver.  libcuda.so.1 is
 * dlopen()ed and every entry point below is looked up with
 * cuGetProcAddress at the CUDA_VERSION of the cuda.h we were built with,
 * so each pointer has exactly the prototype cuda.h declares for it
 * (cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2, and __typeof__ follows).
 *
 * Implemented in gpu.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <cuda.h>

/* X(name): every driver function the worker calls. */
#define CUDA_API_FUNCS(X)               \
	X(cuGetErrorName)               \
	X(cuGetErrorString)             \
	X(cuInit)                       \
	X(cuDriverGetVersion)           \
	X(cuDeviceGetCount)             \
	X(cuDeviceGet)                  \
	X(cuDeviceGetName)              \
	X(cuDeviceGetUuid)              \
	X(cuDeviceGetAttribute)         \
	X(cuDeviceTotalMem)             \
	X(cuDevicePrimaryCtxRetain)     \
	X(cuDevicePrimaryCtxRelease)    \
	X(cuCtxSetCurrent)              \
	X(cuMemGetInfo)                 \
	X(cuModuleLoad)                 \
	X(cuModuleLoadData)             \
	X(cuModuleUnload)               \
	X(cuModuleGetFunction)          \
	X(cuFuncSetAttribute)           \
	X(cuMemAlloc)                   \
	X(cuMemFree)                    \
	X(cuMemcpyHtoD)                 \
	X(cuMemcpyHtoDAsync)            \
	X(cuMemcpyDtoH)                 \
	X(cuMemcpy2D)                   \
	X(cuStreamCreate)               \
	X(cuStreamDestroy)              \
	X(cuStreamQuery)                \
	X(cuEventCreate)                \
	X(cuEventDestroy)               \
	X(cuEventRecord)                \
	X(cuEventQuery)                 \
	X(cuEventElapsedTime)           \
	X(cuLaunchKernel)               \
	X(cuLaunchKernelEx)             \
	X(cuOccupancyMaxActiveClusters) \
	X(cuTensorMapEncodeTiled)

#define CUDA_API_MEMBER(name) __typeof__(name) *name;

struct cuda_api {
	CUDA_API_FUNCS(CUDA_API_MEMBER)
};

#undef CUDA_API_MEMBER

/*
 * The process-wide table, loaded on first use.  Returns NULL with the
 * reason in err when libcuda.so.1 or one of its entry points is missing;
 * *ret_errno is then -ENOENT (no driver) or -ENOSYS (driver too old).
 */
const struct cuda_api *cuda_api_get(int *ret_errno, char *err, size_t errlen);

/* "cuXxx: CUDA_ERROR_NAME (description)" into err; returns the errno. */
int cuda_api_error(CUresult r, const char *call, char *err, size_t errlen);

/* The context is unusable after r: the process must be restarted. */
bool cuda_api_is_sticky(CUresult r);

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it. */
void cuda_api_format_uuid(const CUuuid *u, char *buf, size_t len);
