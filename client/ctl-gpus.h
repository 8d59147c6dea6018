/* SPDX-License-Identifier: MIT */
/*
 * ctl-gpus.h - gemmctl gpus: one job on every GPU of a node at once, and
 * each GPU's rate against the node's best, so that a slow or failing GPU
 * shows before a sweep spreads its candidates over all of them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "ctl-http.h"

struct ctl_gpus_opts {
	double tolerance; /* a GPU under (1 - tolerance) of the best is slow */
	long wait_s; /* the most the check may take; 0: no limit */
	bool json; /* one JSON document on stdout */
};

/*
 * Runs the job base, an object (a reference is taken), on every GPU
 * gemmd has.  Returns an exit status (enum ctl_exit): CTL_EXIT_OK
 * when every GPU ran it, passed and is within the tolerance of the best,
 * CTL_EXIT_ERROR otherwise.
 */
int ctl_gpus(const struct ctl_http *http, const struct ctl_gpus_opts *opts,
	     json_t *base);
