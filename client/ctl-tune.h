/* SPDX-License-Identifier: MIT */
/*
 * ctl-tune.h - gemmctl tune: every kernel configuration gemmd's catalog
 * offers for one job, checked with dry runs, then run and ranked.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "ctl-http.h"

struct ctl_tune_opts {
	const char *schedules; /* "ws,cooperative": only these; NULL: all */
	long top; /* rows of the ranking; 0: all */
	long max_inflight; /* jobs queued or running at once; 0: one a GPU */
	long wait_s; /* the most the whole sweep may take; 0: no limit */
	bool all_stages; /* each of min_stages..max_stages, not the default */
	bool cluster_1x1; /* 1x1 clusters only */
	bool dry_run; /* stop after the dry runs: needs no GPU */
	bool verbose; /* list the candidates gemmd refused */
	bool json; /* one JSON document on stdout */
};

/*
 * Tunes the base job, an object (a reference is taken).
 * Returns an exit status (enum ctl_exit): CTL_EXIT_OK when a candidate
 * passed (or, with --dry-run, was valid), CTL_EXIT_ERROR when none did or
 * gemmd refused the base job, 128 + the signal after SIGINT
 * (CTL_EXIT_INTERRUPTED), SIGTERM or SIGHUP.
 */
int ctl_tune(const struct ctl_http *http, const struct ctl_tune_opts *opts,
	     json_t *base);
