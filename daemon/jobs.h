/* SPDX-License-Identifier: MIT */
/*
 * jobs.h - the job table: every accepted job, its state and its result.
 *
 * A job moves queued -> running -> done | failed | timeout, or to
 * cancelled from queued or running.  The store keeps jobs in creation
 * order and a FIFO of queued ones; finished jobs are kept until the
 * retention limit, oldest first out.  Nothing here blocks or does I/O.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "gemm.h"
#include "list.h"
#include "util.h"

enum job_state {
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_DONE,
	JOB_FAILED,
	JOB_TIMEOUT,
	JOB_CANCELLED,
	_JOB_STATE_MAX,
};

#define JOB_ID_LEN 16

struct job {
	char id[JOB_ID_LEN + 1];
	char key[IDEMPOTENCY_KEY_MAX +
		 1]; /* the client's Idempotency-Key, or "" */
	enum job_state state;
	char reason[512];
	struct gemm_spec spec;
	bool planned;
	struct gemm_plan plan;
	json_t *node; /* node_identity() of the gemmd that took it, or NULL */
	json_t *device; /* identity of the GPU it ran on, or NULL */
	json_t *result; /* the worker's result object, or NULL */
	uint64_t created_usec, started_usec, finished_usec; /* wall clock */
	unsigned int deadline_sec;
	uint64_t seq; /* creation number from 1: where a listing page ends */
	struct list_head all; /* job_store.jobs, creation order */
	struct list_head queue; /* job_store.queue while queued */
	struct list_head ended; /* job_store.ended once final, end order */
};

struct job_store;

typedef void (*job_changed_fn)(struct job *job, void *userdata);

/* deadline_max caps every job's deadline (seconds; job-timeout-max). */
struct job_store *job_store_new(unsigned int max_queued, unsigned int max_kept,
				unsigned int deadline_max);
struct job_store *job_store_free(struct job_store *s);
void job_store_set_notify(struct job_store *s, job_changed_fn fn,
			  void *userdata);
/* Every job added from now on shows this node (a reference is taken). */
void job_store_set_node(struct job_store *s, json_t *node);

/*
 * A new queued job, or -EBUSY if max-queued are queued already.  A dry run
 * is not put on the queue nor held to its limit: the caller finishes it at
 * once (job_finish()).  Nor is a job that an idle worker takes (idle): it
 * is on the queue only until the caller's workers_kick() hands it over.
 */
int job_store_add(struct job_store *s, const struct gemm_spec *spec, bool idle,
		  struct job **ret);
struct job *job_store_find(struct job_store *s, const char *id);
/* The kept job created with this Idempotency-Key (not ""), or NULL. */
struct job *job_store_find_key(struct job_store *s, const char *key);

/* The oldest queued job that may run on this device index, or NULL. */
struct job *job_store_next_for(struct job_store *s, int device);
/* The oldest queued job that names this device (-1: that names none). */
struct job *job_store_next_named(struct job_store *s, int device);
unsigned int job_store_queued(const struct job_store *s);

/* What /metrics counts: since gemmd started, and what is kept now. */
struct job_counts {
	uint64_t created; /* jobs accepted, dry runs included */
	uint64_t ended[_JOB_STATE_MAX]; /* by final state, dropped or not */
	unsigned int kept[_JOB_STATE_MAX]; /* the jobs kept now, by state */
};

void job_store_counts(const struct job_store *s, struct job_counts *ret);
unsigned int job_store_count(const struct job_store *s);

void job_start(struct job_store *s, struct job *job, json_t *device);
void job_finish(struct job_store *s, struct job *job, enum job_state state,
		json_t *result, const char *reason_fmt, ...)
	__attribute__((format(printf, 5, 6)));

bool job_state_is_final(enum job_state st);
const char *job_state_to_string(enum job_state st);
int job_state_from_string(const char *s);

json_t *job_to_json(const struct job *job);

/* One page of a listing: jobs after number after, at most limit of them. */
struct job_page {
	int state; /* only jobs in this state; -1: all */
	const char *key; /* only the job of this Idempotency-Key; NULL: all */
	uint64_t after;
	unsigned int limit;
};

/*
 * The page's jobs in creation order.  *ret_next is the number of its last
 * job when more match after it, else 0.  NULL if any of them cannot be
 * encoded: a job is never silently left out.
 */
json_t *job_store_page_json(struct job_store *s, const struct job_page *p,
			    uint64_t *ret_next);
