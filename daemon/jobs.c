// SPDX-License-Identifier: MIT
/*
 * jobs.c - the job table.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jobs.h"
#include "plan.h"
#include "spec.h"
#include "util.h"

struct job_store {
	struct list_head jobs;
	struct list_head queue;
	struct list_head ended; /* the final jobs, first to end first */
	unsigned int n_jobs, n_queued, n_final;
	uint64_t n_created;
	uint64_t n_ended[_JOB_STATE_MAX]; /* since start, kept or dropped */
	unsigned int max_queued, max_kept;
	unsigned int deadline_max; /* seconds */
	job_changed_fn notify;
	void *userdata;
	json_t *node;
};

static const char *const state_names[_JOB_STATE_MAX] = {
	[JOB_QUEUED] = "queued",   [JOB_RUNNING] = "running",
	[JOB_DONE] = "done",	   [JOB_FAILED] = "failed",
	[JOB_TIMEOUT] = "timeout", [JOB_CANCELLED] = "cancelled",
};

const char *job_state_to_string(enum job_state st)
{
	return string_table_lookup(state_names, ARRAY_SIZE(state_names), st);
}

int job_state_from_string(const char *s)
{
	return string_table_find(state_names, ARRAY_SIZE(state_names), s);
}

bool job_state_is_final(enum job_state st)
{
	return st != JOB_QUEUED && st != JOB_RUNNING;
}

struct job_store *job_store_new(unsigned int max_queued, unsigned int max_kept,
				unsigned int deadline_max)
{
	struct job_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	list_init(&s->jobs);
	list_init(&s->queue);
	list_init(&s->ended);
	s->max_queued = max_queued;
	s->max_kept = max_kept;
	s->deadline_max = deadline_max;
	return s;
}

static void job_free(struct job *job)
{
	json_decref(job->node);
	json_decref(job->device);
	json_decref(job->result);
	free(job);
}

struct job_store *job_store_free(struct job_store *s)
{
	struct list_head *pos, *tmp;

	if (!s)
		return NULL;
	list_for_each_safe(pos, tmp, &s->jobs)
		job_free(list_entry(pos, struct job, all));
	json_decref(s->node);
	free(s);
	return NULL;
}

void job_store_set_node(struct job_store *s, json_t *node)
{
	json_decref(s->node);
	s->node = json_incref(node);
}

void job_store_set_notify(struct job_store *s, job_changed_fn fn,
			  void *userdata)
{
	s->notify = fn;
	s->userdata = userdata;
}

static void job_changed(struct job_store *s, struct job *job)
{
	if (s->notify)
		s->notify(job, s->userdata);
}

static int new_id(struct job_store *s, char *id)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[JOB_ID_LEN / 2];
	int r, i, tries;

	for (tries = 0; tries < 8; tries++) {
		r = random_bytes(raw, sizeof(raw));
		if (r < 0)
			return r;
		for (i = 0; i < JOB_ID_LEN / 2; i++) {
			id[2 * i] = hex[raw[i] >> 4];
			id[2 * i + 1] = hex[raw[i] & 15];
		}
		id[JOB_ID_LEN] = '\0';
		if (!job_store_find(s, id))
			return 0;
	}
	return -EEXIST;
}

/*
 * Make room by dropping the jobs that ended longest ago, past the retention
 * limit.  Never keep, the job just finished: whoever finished it (a dry
 * run's POST, a DELETE) still answers with it, even with max-kept = 0.  By
 * end, not creation: a long job that ends after many short ones is the one
 * its client is about to read.
 */
static void job_store_trim(struct job_store *s, const struct job *keep)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &s->ended) {
		struct job *job = list_entry(pos, struct job, ended);

		if (s->n_final <= s->max_kept)
			break;
		if (job == keep)
			continue;
		list_del_init(&job->ended);
		list_del_init(&job->all);
		s->n_jobs--;
		s->n_final--;
		job_free(job);
	}
}

int job_store_add(struct job_store *s, const struct gemm_spec *spec, bool idle,
		  struct job **ret)
{
	struct job *job;
	int r;

	/*
	 * The limit is on jobs that wait.  A dry run never waits for a GPU,
	 * and one an idle GPU takes at once does not either: refused, it
	 * was told to come back while a GPU it may run on had nothing to
	 * do, because other GPUs' jobs filled the queue.
	 */
	if (!spec->dry_run && !idle && s->n_queued >= s->max_queued)
		return -EBUSY;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	r = new_id(s, job->id);
	if (r < 0) {
		free(job);
		return r;
	}
	job->state = JOB_QUEUED;
	job->node = json_incref(s->node);
	job->spec = *spec;
	job->created_usec = wallclock_usec();
	job->deadline_sec = MIN(plan_deadline_sec(spec), s->deadline_max);
	job->seq = ++s->n_created;
	list_init(&job->queue);
	list_init(&job->ended);
	list_add_tail(&job->all, &s->jobs);
	s->n_jobs++;
	if (!spec->dry_run) {
		list_add_tail(&job->queue, &s->queue);
		s->n_queued++;
	}
	*ret = job;
	return 0;
}

struct job *job_store_find(struct job_store *s, const char *id)
{
	struct list_head *pos;

	list_for_each(pos, &s->jobs) {
		struct job *job = list_entry(pos, struct job, all);

		if (strcmp(job->id, id) == 0)
			return job;
	}
	return NULL;
}

struct job *job_store_find_key(struct job_store *s, const char *key)
{
	struct list_head *pos;

	if (!*key)
		return NULL;
	list_for_each(pos, &s->jobs) {
		struct job *job = list_entry(pos, struct job, all);

		if (strcmp(job->key, key) == 0)
			return job;
	}
	return NULL;
}

/* Whether the job names this device; -1 for one that names none. */
static bool job_names(const struct job *job, int device)
{
	return device < 0 ? job->spec.device < 0 : job->spec.device == device;
}

static struct job *queue_first(struct job_store *s, int device, bool or_any)
{
	struct list_head *pos;

	list_for_each(pos, &s->queue) {
		struct job *job = list_entry(pos, struct job, queue);

		if (job_names(job, device) || (or_any && job->spec.device < 0))
			return job;
	}
	return NULL;
}

struct job *job_store_next_for(struct job_store *s, int device)
{
	return queue_first(s, device, true);
}

struct job *job_store_next_named(struct job_store *s, int device)
{
	return queue_first(s, device, false);
}

unsigned int job_store_queued(const struct job_store *s)
{
	return s->n_queued;
}

unsigned int job_store_count(const struct job_store *s)
{
	return s->n_jobs;
}

static void job_dequeue(struct job_store *s, struct job *job)
{
	if (list_empty(&job->queue))
		return;
	list_del_init(&job->queue);
	s->n_queued--;
}

void job_start(struct job_store *s, struct job *job, json_t *device)
{
	job_dequeue(s, job);
	job->state = JOB_RUNNING;
	job->started_usec = wallclock_usec();
	json_decref(job->device);
	job->device = json_incref(device);
	job_changed(s, job);
}

void job_finish(struct job_store *s, struct job *job, enum job_state state,
		json_t *result, const char *reason_fmt, ...)
{
	va_list ap;

	if (job_state_is_final(job->state)) {
		json_decref(result);
		return;
	}
	job_dequeue(s, job);
	job->state = state;
	job->finished_usec = wallclock_usec();
	json_decref(job->result);
	job->result = result;
	job->reason[0] = '\0';
	if (reason_fmt) {
		/* It may quote a worker's message: keep it JSON-encodable. */
		va_start(ap, reason_fmt);
		utf8_vformat(job->reason, sizeof(job->reason), reason_fmt, ap);
		va_end(ap);
	}
	list_add_tail(&job->ended, &s->ended);
	s->n_final++;
	s->n_ended[state]++;
	job_changed(s, job);
	job_store_trim(s, job);
}

void job_store_counts(const struct job_store *s, struct job_counts *ret)
{
	const struct list_head *pos;

	memset(ret, 0, sizeof(*ret));
	ret->created = s->n_created;
	memcpy(ret->ended, s->n_ended, sizeof(ret->ended));
	list_for_each(pos, &s->jobs)
		ret->kept[list_entry(pos, struct job, all)->state]++;
}

static json_t *time_or_null(uint64_t usec)
{
	char buf[32];

	if (!usec)
		return json_null();
	return json_string(format_rfc3339(usec, buf, sizeof(buf)));
}

json_t *job_to_json(const struct job *job)
{
	char self[64];

	snprintf(self, sizeof(self), "/v1/jobs/%s", job->id);
	return json_pack(
		"{s:s, s:o, s:s, s:o, s:o, s:o, s:O?, s:O?, s:O?, s:I, s:o,"
		" s:o, s:o, s:{s:s}}",
		"id", job->id, "idempotency_key",
		job->key[0] ? json_string(job->key) : json_null(), "state",
		job_state_to_string(job->state), "reason",
		job->reason[0] ? json_string(job->reason) : json_null(), "spec",
		spec_to_json(&job->spec), "plan",
		job->planned ? plan_to_json(&job->plan) : json_null(), "node",
		job->node, "device", job->device, "result", job->result,
		"deadline_sec", (json_int_t)job->deadline_sec, "created_at",
		time_or_null(job->created_usec), "started_at",
		time_or_null(job->started_usec), "finished_at",
		time_or_null(job->finished_usec), "links", "self", self);
}

static bool job_on_page(const struct job *job, const struct job_page *p)
{
	return job->seq > p->after &&
	       (p->state < 0 || job->state == (enum job_state)p->state) &&
	       (!p->key || !strcmp(job->key, p->key));
}

json_t *job_store_page_json(struct job_store *s, const struct job_page *p,
			    uint64_t *ret_next)
{
	json_t *a = json_array();
	struct list_head *pos;
	uint64_t last = 0;
	unsigned int n = 0;

	*ret_next = 0;
	if (!a)
		return NULL;
	list_for_each(pos, &s->jobs) {
		struct job *job = list_entry(pos, struct job, all);

		if (!job_on_page(job, p))
			continue;
		if (n == p->limit) {
			*ret_next = last;
			break;
		}
		if (json_array_append_new(a, job_to_json(job)) < 0) {
			json_decref(a);
			return NULL;
		}
		last = job->seq;
		n++;
	}
	return a;
}
