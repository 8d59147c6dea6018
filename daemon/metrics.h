/* SPDX-License-Identifier: MIT */
/*
 * metrics.h - GET /metrics: gemmd's state in Prometheus's text format
 * (0.0.4), so a fleet's monitoring scrapes every node the way it scrapes
 * DCGM's exporter: jobs by state, the GPUs and their workers.
 */
#pragma once

#include <stdint.h>
#include <jansson.h>

#include "jobs.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics_view {
	const json_t *node; /* node_identity() */
	const char *kernels_digest;
	unsigned int kernels;
	uint64_t uptime_sec;
	struct job_counts jobs;
	unsigned int requests_held; /* ?wait requests not yet answered */
	const json_t *devices; /* workers_devices_json() */
};

/* The exposition, malloc()ed; NULL without memory. */
char *metrics_text(const struct metrics_view *v);
