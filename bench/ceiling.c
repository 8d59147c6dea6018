// SPDX-License-Identifier: MIT
/*
 * ceiling.c - what the tensor cores of one GPU sustain when nothing but
 * wgmmas run: bench/ceiling.cubin's kernel (the two consumer warpgroups
 * of a cooperative 128x256 tile, their operands N(0,1) values already in
 * shared memory) on every SM, launched back to back for --time-ms after
 * a warm-up, as a final round of bench/family.sh times a job, so that at
 * the power cap it runs at the clock its own draw allows.
 *
 * Every GEMM made of these wgmmas does this work and more on the same
 * inputs, so the rate bounds theirs; how far a GEMM's sustained rate
 * falls below it is what its operand traffic, barriers, epilogue and
 * launches cost (docs/kernels.md, "What the cap leaves").
 *
 *   bench/ceiling [--dtype bf16,fp16] [--rounds N] [--time-ms MS]
 *                 [--rest-ms MS] [--gpu N] [--cubin PATH]
 *
 * The cubin is ceiling.cubin beside the program unless --cubin names
 * another.  Prints one row per dtype: the median TFLOP/s over the rounds
 * and their range, NVML's median SM clock and mean power draw, and the
 * work per clock against the SMs' dense 16-bit peak.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda-api.h"
#include "nvml.h"
#include "stats.h"
#include "util.h"

/* Dense fp16/bf16 wgmma on SM90: 4096 FLOP a clock an SM. */
#define CEIL_PEAK_FLOP_PER_CLK 4096.0
/* One k-tile of a 128x256x64 tile. */
#define CEIL_KTILE_FLOP (2.0 * 128 * 256 * 64)
/*
 * k-tiles a CTA a launch: about 20 ms at the cap, so that the kernel's
 * fill of its shared memory (tens of µs) is lost in it.
 */
#define CEIL_KTILES 32768u
#define CEIL_SMEM (49152 * 4 + 1024)
#define CEIL_THREADS 256
#define CEIL_WARMUP_MS 150.0
#define CEIL_MAX_ROUNDS 64
/* NVML reads in a window: every 2 ms for up to a minute. */
#define CEIL_TELEMETRY_SAMPLES 30000

static const char *const ceil_dtypes[] = { "bf16", "fp16" };
#define CEIL_NDTYPES ARRAY_SIZE(ceil_dtypes)

struct ceil_opts {
	unsigned int dtypes; /* bit i: ceil_dtypes[i] */
	unsigned int rounds, time_ms, rest_ms, gpu;
	const char *cubin;
};

struct ceil_gpu {
	const struct cuda_api *cu;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn[CEIL_NDTYPES];
	CUstream stream;
	CUevent ev[2];
	CUdeviceptr sink;
	int sms;
	char name[256];
	struct nvml *nvml;
	char err[512];
};

/* One window's figures. */
struct ceil_sample {
	double tflops;
	struct gemm_telemetry tele;
};

#define CU(g, call, ...)                                                   \
	({                                                                 \
		CUresult _r_ = (g)->cu->call(__VA_ARGS__);                 \
		_r_ == CUDA_SUCCESS ? 0 :                                  \
				      cuda_api_error(_r_, #call, (g)->err, \
						     sizeof((g)->err));    \
	})

static int ceil_nvml_open(struct ceil_gpu *g)
{
	CUuuid u;
	char uuid[48];
	int e;

	e = CU(g, cuDeviceGetUuid, &u, g->dev);
	if (e)
		return e;
	cuda_api_format_uuid(&u, uuid, sizeof(uuid));
	g->nvml = nvml_open(uuid);
	return 0;
}

static int ceil_load(struct ceil_gpu *g, const char *cubin)
{
	static const char *const entry[CEIL_NDTYPES] = { "gemmd_ceiling_bf16",
							 "gemmd_ceiling_fp16" };
	int e;

	e = CU(g, cuModuleLoad, &g->mod, cubin);
	for (size_t i = 0; i < CEIL_NDTYPES && !e; i++) {
		e = CU(g, cuModuleGetFunction, &g->fn[i], g->mod, entry[i]);
		if (!e)
			e = CU(g, cuFuncSetAttribute, g->fn[i],
			       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
			       CEIL_SMEM);
	}
	return e;
}

static int ceil_open(struct ceil_gpu *g, unsigned int ordinal,
		     const char *cubin)
{
	int major = 0, e;

	g->cu = cuda_api_get(&e, g->err, sizeof(g->err));
	if (!g->cu)
		return e;
	e = CU(g, cuInit, 0);
	if (!e)
		e = CU(g, cuDeviceGet, &g->dev, (int)ordinal);
	if (!e)
		e = CU(g, cuDeviceGetName, g->name, sizeof(g->name), g->dev);
	if (!e)
		e = CU(g, cuDeviceGetAttribute, &major,
		       CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev);
	if (!e && major != 9) {
		snprintf(g->err, sizeof(g->err),
			 "%s is not an SM90 GPU: wgmma needs sm_90a", g->name);
		return -ENOTSUP;
	}
	if (!e)
		e = CU(g, cuDeviceGetAttribute, &g->sms,
		       CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g->dev);
	if (!e)
		e = CU(g, cuDevicePrimaryCtxRetain, &g->ctx, g->dev);
	if (!e)
		e = CU(g, cuCtxSetCurrent, g->ctx);
	if (!e)
		e = ceil_load(g, cubin);
	if (!e)
		e = CU(g, cuStreamCreate, &g->stream, CU_STREAM_NON_BLOCKING);
	if (!e)
		e = CU(g, cuEventCreate, &g->ev[0], CU_EVENT_DEFAULT);
	if (!e)
		e = CU(g, cuEventCreate, &g->ev[1], CU_EVENT_DEFAULT);
	if (!e)
		e = CU(g, cuMemAlloc, &g->sink, (size_t)g->sms * sizeof(float));
	if (!e)
		e = ceil_nvml_open(g);
	return e;
}

static void ceil_close(struct ceil_gpu *g)
{
	if (!g->cu)
		return;
	nvml_close(g->nvml);
	if (g->sink)
		g->cu->cuMemFree(g->sink);
	for (int i = 0; i < 2; i++)
		if (g->ev[i])
			g->cu->cuEventDestroy(g->ev[i]);
	if (g->stream)
		g->cu->cuStreamDestroy(g->stream);
	if (g->mod)
		g->cu->cuModuleUnload(g->mod);
	if (g->ctx)
		g->cu->cuDevicePrimaryCtxRelease(g->dev);
}

static int ceil_launch(struct ceil_gpu *g, CUfunction fn, uint32_t seed)
{
	uint32_t ktiles = CEIL_KTILES;
	void *args[] = { &ktiles, &seed, &g->sink };

	return CU(g, cuLaunchKernel, fn, (unsigned int)g->sms, 1, 1,
		  CEIL_THREADS, 1, 1, CEIL_SMEM, g->stream, args, NULL);
}

/*
 * Wait for ev[1], reading telemetry into t (if any) every 2 ms meanwhile.
 */
static int ceil_wait(struct ceil_gpu *g, struct nvml_track *t)
{
	CUresult r;

	while ((r = g->cu->cuEventQuery(g->ev[1])) == CUDA_ERROR_NOT_READY) {
		if (t)
			nvml_track_sample(t);
		sleep_ms(2);
	}
	return r == CUDA_SUCCESS ? 0 :
				   cuda_api_error(r, "cuEventQuery", g->err,
						  sizeof(g->err));
}

/*
 * n launches between the two events, NVML's telemetry read into t (if
 * any) while they run; *ret_ms: their GPU time.
 */
static int ceil_batch(struct ceil_gpu *g, CUfunction fn, unsigned int n,
		      struct nvml_track *t, double *ret_ms)
{
	float ms = 0;
	int e;

	e = CU(g, cuEventRecord, g->ev[0], g->stream);
	for (unsigned int i = 0; i < n && !e; i++)
		e = ceil_launch(g, fn, i);
	if (!e)
		e = CU(g, cuEventRecord, g->ev[1], g->stream);
	if (!e)
		e = ceil_wait(g, t);
	if (!e)
		e = CU(g, cuEventElapsedTime, &ms, g->ev[0], g->ev[1]);
	*ret_ms = ms;
	return e;
}

/*
 * Launches one at a time for CEIL_WARMUP_MS, then about time_ms of them
 * back to back with NVML's telemetry.
 */
static int ceil_measure(struct ceil_gpu *g, CUfunction fn, unsigned int time_ms,
			struct ceil_sample *ret)
{
	const double flop = CEIL_KTILE_FLOP * CEIL_KTILES * g->sms;
	struct nvml_track t;
	double ms = 0, one = 0;
	unsigned int n = 0;
	int e = 0;

	while (!e && ms < CEIL_WARMUP_MS) {
		e = ceil_batch(g, fn, 1, NULL, &one);
		ms += one;
	}
	if (e)
		return e;
	n = (unsigned int)fmax(1.0, time_ms / one);
	nvml_track_start(&t, g->nvml, CEIL_TELEMETRY_SAMPLES);
	e = ceil_batch(g, fn, n, &t, &ms);
	nvml_track_finish(&t, &ret->tele);
	nvml_track_free(&t);
	ret->tflops = flop * n / (ms * 1e-3) / 1e12;
	return e;
}

static int parse_dtypes(const char *s, struct ceil_opts *o)
{
	char buf[64], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	o->dtypes = 0;
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		int i = string_table_find(ceil_dtypes, CEIL_NDTYPES, w);

		if (i < 0)
			return -EINVAL;
		o->dtypes |= 1u << i;
	}
	return o->dtypes ? 0 : -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ceiling [--dtype bf16,fp16] [--rounds N] "
		   "[--time-ms MS] [--rest-ms MS]\n"
		   "               [--gpu N] [--cubin PATH]\n");
}

static int parse_opts(int argc, char **argv, struct ceil_opts *o)
{
	static const struct option longopts[] = {
		{ "dtype", required_argument, NULL, 'd' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "time-ms", required_argument, NULL, 't' },
		{ "rest-ms", required_argument, NULL, 'w' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "cubin", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c, e = 0;

	while (!e && (c = getopt_long(argc, argv, "d:r:t:w:g:c:h", longopts,
				      NULL)) != -1) {
		switch (c) {
		case 'd':
			e = parse_dtypes(optarg, o);
			break;
		case 'r':
			e = parse_uint(optarg, CEIL_MAX_ROUNDS, &o->rounds);
			e = e ? e : o->rounds ? 0 : -EINVAL;
			break;
		case 't':
			e = parse_uint(optarg, 60000, &o->time_ms);
			break;
		case 'w':
			e = parse_uint(optarg, 60000, &o->rest_ms);
			break;
		case 'g':
			e = parse_uint(optarg, 1024, &o->gpu);
			break;
		case 'c':
			o->cubin = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
		if (e)
			fprintf(stderr, "ceiling: bad value for -%c: %s\n", c,
				optarg);
	}
	return e ? e : optind == argc ? 0 : -EINVAL;
}

static double median_of(double *v, unsigned int n)
{
	struct stats_summary s;

	stats_summarize(v, n, &s);
	return s.median;
}

static void print_row(const struct ceil_gpu *g, const char *dtype,
		      const struct ceil_sample *s, unsigned int n)
{
	double tf[CEIL_MAX_ROUNDS], mhz[CEIL_MAX_ROUNDS], w[CEIL_MAX_ROUNDS];
	double lo = INFINITY, hi = 0, t, clk;
	unsigned int nc = 0, nw = 0;

	/* NVML's figures are NAN where it could not be read: left out. */
	for (unsigned int i = 0; i < n; i++) {
		tf[i] = s[i].tflops;
		lo = fmin(lo, tf[i]);
		hi = fmax(hi, tf[i]);
		if (!isnan(s[i].tele.sm_clock_median_mhz))
			mhz[nc++] = s[i].tele.sm_clock_median_mhz;
		if (!isnan(s[i].tele.power_mean_w))
			w[nw++] = s[i].tele.power_mean_w;
	}
	t = median_of(tf, n);
	clk = median_of(mhz, nc);
	printf("| %s | %.1f (%.1f–%.1f) | %.0f | %.0f | %.1f | %.1f %% |\n",
	       dtype, t, lo, hi, clk, median_of(w, nw), t / clk * 1e3,
	       t * 1e12 / (clk * 1e6 * g->sms * CEIL_PEAK_FLOP_PER_CLK) * 100);
}

static int run_rounds(struct ceil_gpu *g, const struct ceil_opts *o,
		      struct ceil_sample s[CEIL_NDTYPES][CEIL_MAX_ROUNDS])
{
	int e = 0;

	for (unsigned int r = 0; r < o->rounds && !e; r++)
		for (size_t i = 0; i < CEIL_NDTYPES && !e; i++) {
			/* Rotate the order so that no dtype always goes first. */
			const size_t d = (i + r) % CEIL_NDTYPES;

			if (!(o->dtypes & 1u << d))
				continue;
			sleep_ms(o->rest_ms);
			e = ceil_measure(g, g->fn[d], o->time_ms, &s[d][r]);
			fprintf(stderr, "  round %u: %s %.1f TFLOP/s\n", r + 1,
				ceil_dtypes[d], s[d][r].tflops);
		}
	return e;
}

/* ceiling.cubin beside this program, as make leaves them. */
static const char *default_cubin(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return "ceiling.cubin";
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash || (size_t)(slash - buf) + sizeof("/ceiling.cubin") > len)
		return "ceiling.cubin";
	strcpy(slash, "/ceiling.cubin");
	return buf;
}

int main(int argc, char **argv)
{
	char cubin[4096];
	static struct ceil_sample s[CEIL_NDTYPES][CEIL_MAX_ROUNDS];
	struct ceil_opts o = { .dtypes = 3,
			       .rounds = 3,
			       .time_ms = 400,
			       .rest_ms = 1000,
			       .cubin = default_cubin(cubin, sizeof(cubin)) };
	struct ceil_gpu g = {};
	int e;

	if (parse_opts(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	e = ceil_open(&g, o.gpu, o.cubin);
	if (!e)
		e = run_rounds(&g, &o, s);
	if (e) {
		fprintf(stderr, "ceiling: %s\n", g.err);
		ceil_close(&g);
		return 1;
	}
	printf("device: %s, %d SMs; %u rounds of %u ms of launches of %u "
	       "k-tiles a CTA\n",
	       g.name, g.sms, o.rounds, o.time_ms, CEIL_KTILES);
	printf("| dtype | TFLOP/s median (rounds) | SM MHz | W | TFLOP/s per GHz "
	       "| of the peak a clock |\n");
	printf("| --- | --- | --- | --- | --- | --- |\n");
	for (size_t d = 0; d < CEIL_NDTYPES; d++)
		if (o.dtypes & 1u << d)
			print_row(&g, ceil_dtypes[d], s[d], o.rounds);
	ceil_close(&g);
	return 0;
}
