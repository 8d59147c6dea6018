/* SPDX-License-Identifier: MIT */
/*
 * api.h - the v1 HTTP API: routes requests to the job table, the kernel
 * catalog and the worker pool, and holds ?wait= requests until their job
 * ends.
 */
#pragma once

#include <systemd/sd-event.h>

#include "catalog.h"
#include "http.h"
#include "jobs.h"
#include "workers.h"

struct api;

int api_new(sd_event *event, struct job_store *jobs, struct workers *workers,
	    const struct catalog *catalog, unsigned int max_wait,
	    struct api **ret);
/*
 * Resumes every held request, to be answered 503 shutting_down unless its
 * job has ended: then http_server_flush() sends those answers before the
 * server stops.
 */
void api_stop(struct api *api);
struct api *api_free(struct api *api);

void api_handle(struct http_request *req, void *userdata);
/* Job-store hook: wakes the requests waiting on a job that ended. */
void api_job_changed(struct job *job, void *userdata);
