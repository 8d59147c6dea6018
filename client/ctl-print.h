/* SPDX-License-Identifier: MIT */
/*
 * ctl-print.h - gemmctl's output: the daemon's JSON re-indented as it came,
 * or tables and summaries for people.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "util.h"

/*
 * Prints valid JSON text with an indent of 2, keeping every token (number
 * spelling, key order, escapes) exactly as the daemon sent it.
 */
void ctl_print_json_text(FILE *f, const char *text, size_t len);

/*
 * Text for people, from gemmd or the user, as it must be printed: with
 * control characters escaped ("\n", "\x1b"), so that it can neither add
 * lines to the output nor drive the terminal.  Not for --json output,
 * which stays as gemmd wrote it.
 *
 * ctl_escape() writes at most size bytes to dst, NUL included, never half
 * an escape, and returns the length of the whole escaped text: a return
 * of size or more means it was cut.  ctl_print_text() prints fmt's output
 * escaped.
 */
size_t ctl_escape(char *dst, size_t size, const char *src);
_printf_(2, 3) void ctl_print_text(FILE *f, const char *fmt, ...);

/*
 * gemmd's error object ({"code", "message", "field"}) as "code: message
 * (field: f)", unescaped; NULL when it has no code, or on OOM.  Free it.
 */
char *ctl_error_text(const json_t *error);

/* A job object as a short "label: value" summary. */
void ctl_print_job(const json_t *job);
/* obj's member key if it is a string, else NULL (obj may be NULL). */
const char *ctl_jstr(const json_t *obj, const char *key);
/* Whether a finished job is a success: done, and not failing verification. */
bool ctl_job_succeeded(const json_t *job);
/*
 * A job lives while queued or running.  Any other state ends it, also one
 * this gemmctl does not know (a newer gemmd's), where waiting for it could
 * go on forever.
 */
bool ctl_job_in_flight(const json_t *job);
/* One of the states a job ends in: done, failed, timeout, cancelled. */
bool ctl_state_is_final(const char *state);
/* PASSED / FAILED / unchecked for a job's result.verify; "-" without one. */
const char *ctl_job_verdict(const json_t *job);

/* Tables; each returns 0 or -ENOMEM. */
int ctl_print_jobs(const json_t *jobs);
int ctl_print_kernels(const json_t *kernels);
int ctl_print_devices(const json_t *devices);

/*
 * gemmctl tune's tables, of the entries of its JSON document: each has
 * the "kernel" object it sent and the dry run's "plan"; a ranked one
 * "rank", "tflops", "median_us", "verify" and "speedup_vs_baseline"
 * (shown when speedup is true); a failed one "state" and "reason"; a
 * refused one gemmd's "error".  Each returns 0 or -ENOMEM.
 */
int ctl_print_tune_plans(const json_t *entries);
int ctl_print_tune_ranking(const json_t *entries, bool speedup);
int ctl_print_tune_failed(const json_t *entries);
void ctl_print_tune_refused(const json_t *entries);

/* Any object as "key: value" lines, for people. */
void ctl_print_object(json_t *obj);
/*
 * A JSON document of gemmctl's own (tune's, gpus'), indented by 2,
 * numbers to 15 digits; -ENOMEM where doc is NULL or will not encode.
 */
int ctl_print_doc(const json_t *doc);
/*
 * gemmctl merge: the ranking, and a row for each sweep where a
 * configuration did not pass (ctl-merge.c's entries).
 */
int ctl_print_merge_ranking(const json_t *entries);
int ctl_print_merge_unranked(const json_t *entries);

/*
 * gemmctl gpus: a line with the rule, then a table of the entries
 * ctl-gpus.c makes, one a GPU.
 */
int ctl_print_gpus(const json_t *rows, double tolerance);
