// SPDX-License-Identifier: MIT
/*
 * test-cuda-api - the worker's reading of CUDA errors (gpu.c), no GPU or
 * driver needed: which errors lose the context (the worker must exit and
 * be replaced) and which leave it usable for the next job.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "cuda-api.h"

/*
 * Those cuda.h says leave "the process in an inconsistent state": the
 * worker that goes on after one fails every later job.
 */
static void test_sticky(void)
{
	static const CUresult sticky[] = {
		CUDA_ERROR_ILLEGAL_ADDRESS,
		CUDA_ERROR_LAUNCH_FAILED,
		CUDA_ERROR_LAUNCH_TIMEOUT,
		CUDA_ERROR_HARDWARE_STACK_ERROR,
		CUDA_ERROR_ILLEGAL_INSTRUCTION,
		CUDA_ERROR_MISALIGNED_ADDRESS,
		CUDA_ERROR_INVALID_ADDRESS_SPACE,
		CUDA_ERROR_INVALID_PC,
		CUDA_ERROR_ECC_UNCORRECTABLE,
		CUDA_ERROR_CONTAINED,
		CUDA_ERROR_MPS_CLIENT_TERMINATED,
		CUDA_ERROR_EXTERNAL_DEVICE,
	};

	for (size_t i = 0; i < sizeof(sticky) / sizeof(*sticky); i++)
		if (!cuda_api_is_sticky(sticky[i])) {
			fprintf(stderr, "CUDA error %d not sticky\n",
				(int)sticky[i]);
			CHECK(false);
		}
}

/* A job's own failures: the next job runs on the same context. */
static void test_not_sticky(void)
{
	CHECK(!cuda_api_is_sticky(CUDA_SUCCESS));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_OUT_OF_MEMORY));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_INVALID_VALUE));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_NOT_READY));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_FILE_NOT_FOUND));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_INVALID_IMAGE));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_NO_BINARY_FOR_GPU));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_INVALID_CLUSTER_SIZE));
	CHECK(!cuda_api_is_sticky(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE));
}

/* Without the driver's names the message still says what failed. */
static void test_error_text(void)
{
	char err[128] = "";

	CHECK_EQ_INT(cuda_api_error(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc", err,
				    sizeof(err)),
		     -ENOMEM);
	CHECK_STREQ(err, "cuMemAlloc: CUDA error 2");
}

int main(void)
{
	RUN_TEST(test_sticky);
	RUN_TEST(test_not_sticky);
	RUN_TEST(test_error_text);
	return check_exit();
}
