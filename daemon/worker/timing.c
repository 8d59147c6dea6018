// SPDX-License-Identifier: MIT
/*
 * timing.c - a run's timing: ours and the baseline's, with CUDA events,
 * and the rates at the median time.
 *
 * A sample is one batch of launches between a pair of events,
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
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"
#include "plan.h"
#include "run.h"
#include "stats.h"
#include "timing.h"
#include "util.h"

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
#define TIMING_WATCH_US 200 /* polls of a running chunk, for telemetry */

int run_timing_alloc(struct run *r)
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
	r->flush_bytes = plan_flush_bytes(
		r->g->l2_bytes > 0 ? (uint64_t)r->g->l2_bytes : 0);
	return run_alloc(r, &r->flush, r->flush_bytes);
}

/*
 * One sample of t: the L2 flush in cold mode, then batch launches in
 * pair i.
 */
static int run_queue_sample(struct run *r, struct timer *t, unsigned int batch,
			    unsigned int i)
{
	int e = 0;

	if (r->flush)
		e = run_memset32(r, r->flush, r->flush_value++,
				 r->flush_bytes / 4);
	if (!e)
		e = CU(r, cuEventRecord, r->events[2 * i], r->g->stream);
	for (unsigned int k = 0; k < batch && !e; k++)
		e = t->launch(r);
	if (!e)
		e = CU(r, cuEventRecord, r->events[2 * i + 1], r->g->stream);
	return e;
}

int run_elapsed(struct run *r, unsigned int i, double *ret_us)
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
		e = t->launch(r);
	for (unsigned int i = 0; i < timed && !e; i++)
		e = run_queue_sample(r, t, 1, i);
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

/*
 * Samples to queue before the next look at the stopping rule; under the
 * rule (no fixed count) no more than its max_time_ms has left.
 */
static unsigned int run_chunk(const struct run *r, const struct timer *t)
{
	const double left_us =
		r->spec->iterations ?
			INFINITY :
			r->spec->max_time_ms * 1000.0 - t->gpu_time_us;
	const unsigned int n = stats_chunk_size(t->launch_us * t->batch,
						TIMING_CHUNK_US,
						TIMING_CHUNK_MAX, left_us);

	return MIN(n, r->cap_samples - t->n_samples);
}

/*
 * While the n queued samples run: read the telemetry about every
 * TIMING_WATCH_US, and count the samples that ran while a reading saw
 * the GPU slowed down.  The sample running is the first whose stop event
 * has not completed.  Gives up after the chunk's expected time four
 * times over and a second, or at once when an event answers an error (a
 * fault in the chunk); run_sync() then waits out (or calls) a hang, or
 * reports the error.
 */
static void run_watch_chunk(struct run *r, struct timer *t, unsigned int n)
{
	const double expect_us = t->launch_us * t->batch * n;
	const uint64_t until = now_usec() + 1000000 + (uint64_t)(4 * expect_us);
	unsigned int cur = 0, throttled = 0, last = UINT_MAX;
	CUresult res = CUDA_SUCCESS;

	while (cur < n && now_usec() < until) {
		while (cur < n &&
		       (res = gpu_cuda->cuEventQuery(r->events[2 * cur + 1])) ==
			       CUDA_SUCCESS)
			cur++;
		if (cur == n || res != CUDA_ERROR_NOT_READY)
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
 * The energy counter is read once per chunk, just after the chunk is
 * queued, so that the GPU is busy for the milliseconds the read takes
 * (see nvml_energy_j()); the joules from one read to the next go to the
 * timer whose chunk was queued at the first.  A read after the last
 * chunk (next NULL) closes the window; the rest between two chunks,
 * a fraction of a millisecond, is counted with the chunk before it.
 */
static void run_energy_mark(struct run *r, struct timer *next)
{
	const double e = nvml_energy_j(r->g->nvml);

	if (r->energy_owner)
		nvml_track_energy(&r->energy_owner->tele, e - r->energy_at);
	r->energy_owner = next;
	r->energy_at = e;
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
		e = run_queue_sample(r, t, t->batch, i);
	if (!e) {
		run_energy_mark(r, t);
		run_watch_chunk(r, t, n);
	}
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

/* Warm t up and start its telemetry, which runs during its chunks only. */
static int run_timer_start(struct run *r, struct timer *t)
{
	int e;

	e = run_warmup(r, t);
	if (e)
		return e;
	nvml_track_start(&t->tele, r->g->nvml, r->cap_samples);
	t->done = run_done(r, t, &t->reason);
	return 0;
}

/* One chunk of t's samples, its telemetry running meanwhile only. */
static int run_timer_chunk(struct run *r, struct timer *t)
{
	int e;

	e = run_chunk_samples(r, t, run_chunk(r, t));
	t->chunks++;
	if (!e)
		t->done = run_done(r, t, &t->reason);
	return e;
}

/*
 * The n timers (one, or two interleaved), to the end of their stopping
 * rules: each warmed up, then a chunk of each in turn, skipping those
 * whose rule is met.
 */
static int run_time_timers(struct run *r, struct timer *const *timers,
			   unsigned int n)
{
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
	run_energy_mark(r, NULL);
	return e;
}

/*
 * Separate: each side from the same rested state.  Ours would otherwise
 * start straight after the baseline's algorithm trial and the verified
 * launch, at the power cap a state of its own: at 8192^3 on an H100,
 * with this pause our fp16 jobs ran at the cap's higher level in 10 of
 * 10 and without it in 6 of 10 (docs/perf.md, session 27, run 8).
 */
int run_time(struct run *r)
{
	struct timer *const timers[] = { &r->ours, &r->base };
	int e;

	if (r->base.launch && r->spec->baseline_order == GEMM_ORDER_INTERLEAVED)
		return run_time_timers(r, timers, 2);
	if (r->base.launch)
		sleep_ms(r->spec->cooldown_ms);
	e = run_time_timers(r, timers, 1);
	if (e || !r->base.launch)
		return e;
	sleep_ms(r->spec->cooldown_ms);
	return run_time_timers(r, timers + 1, 1);
}

int run_time_report(struct run *r, struct timer *t, struct gemm_timing *timing,
		    struct gemm_telemetry *tele, bool raw)
{
	nvml_track_finish(&t->tele, tele);
	return run_timing_fill(r, t, timing, raw);
}

void run_rates(const struct run *r, struct gemm_result *res)
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
