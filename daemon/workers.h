/* SPDX-License-Identifier: MIT */
/*
 * workers.h - one gemmd-worker process per GPU, supervised.
 *
 * At start the pool runs "gemmd-worker --probe" to learn the devices (the
 * supervisor itself never loads the CUDA driver), then keeps one worker
 * per device: it hands a worker one queued job at a time over a
 * socketpair, kills it when the job outlives its deadline or is
 * cancelled, fails the job with the reason when the worker dies, and
 * starts a new worker in its place.
 */
#pragma once

#include <jansson.h>
#include <systemd/sd-event.h>

#include "catalog.h"
#include "jobs.h"
#include "plan.h"

struct workers;

struct workers_config {
	const char *worker_path;
	const char *kernel_dir;
	unsigned int start_timeout; /* seconds to the hello, and the probe */
	unsigned int retry; /* seconds before a failed one is retried; 0: never */
};

int workers_new(sd_event *event, struct job_store *jobs,
		const struct catalog *catalog, const struct workers_config *cfg,
		struct workers **ret);
struct workers *workers_free(struct workers *w);

/*
 * Learn the devices; none (no driver, no GPU) is not an error, a worker
 * program that cannot be run is: -ENOEXEC.
 */
int workers_probe(struct workers *w);
int workers_start(struct workers *w);
/* Hand queued jobs to idle workers; call after anything is queued. */
void workers_kick(struct workers *w);
/* Stop a job: dequeue it, or kill the worker that runs it. */
void workers_cancel(struct workers *w, struct job *job);

unsigned int workers_count(const struct workers *w);
/*
 * Whether a job for device index (-1: any) can run: false while that
 * GPU (every GPU) is out of service, with why in the buffer and, unless
 * retry_sec is NULL, the whole seconds (at least 1) until that GPU (the
 * first of them) is tried again in *retry_sec: 0 when it is not, with
 * worker-retry 0.  A job is taken again from the moment of the try.
 */
bool workers_in_service(const struct workers *w, int index,
			unsigned int *retry_sec, char *why, size_t len);
/*
 * Whether a worker is ready for a job for device index (-1: any): such a
 * job goes to it at the next workers_kick(), as a ready worker has taken
 * every queued job it may run.
 */
bool workers_idle(const struct workers *w, int index);
/* Limits of device index (or, with -1, the smallest of all devices). */
bool workers_device_limits(const struct workers *w, int index,
			   struct device_limits *ret);
json_t *workers_devices_json(const struct workers *w);
/* The i-th name a worker's "state" may have, NULL past the last. */
const char *workers_state_name(unsigned int i);
/* "ok" when every worker is up, "degraded" otherwise, "no_devices". */
const char *workers_health(const struct workers *w);
