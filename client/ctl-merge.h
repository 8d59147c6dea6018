/* SPDX-License-Identifier: MIT */
/*
 * ctl-merge.h - gemmctl merge: the sweeps of one job on several nodes
 * (tune --json documents), ranked together.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct ctl_merge_opts {
	long top; /* rows of the ranking; 0: all */
	bool json; /* one JSON document on stdout */
};

/* One tune --json document and the file it came from. */
struct ctl_sweep {
	const char *file;
	json_t *doc;
};

/*
 * Ranks the configurations of n sweeps by their median rate over the
 * sweeps, those that passed in every sweep only.  Returns an exit status
 * (enum ctl_exit): CTL_EXIT_OK when one passed everywhere, CTL_EXIT_ERROR
 * when none did or the documents cannot be merged (said on stderr).
 */
int ctl_merge(const struct ctl_merge_opts *opts, const struct ctl_sweep *sweeps,
	      size_t n);
