// SPDX-License-Identifier: MIT
/*
 * api.c - routes of the v1 API.
 */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "config.h"
#include "list.h"
#include "log.h"
#include "metrics.h"
#include "node.h"
#include "plan.h"
#include "spec.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

struct api {
	sd_event *event;
	struct job_store *jobs;
	struct workers *workers;
	const struct catalog *catalog;
	json_t *node; /* node_identity(), in /healthz and every job */
	char kernels_digest[SHA256_TAG_LEN];
	unsigned int max_wait;
	struct list_head waiters;
	uint64_t start_usec;
	bool stopping;
};

/*
 * A request held until its job ends or its wait runs out.  It stays on
 * api->waiters until it is answered, woken or not: a job that ends
 * between the wake and the answer still leaves its final state here.
 */
struct waiter {
	struct list_head link;
	struct api *api;
	struct http_request *req;
	char id[JOB_ID_LEN + 1];
	sd_event_source *timer;
	bool created; /* POST: answer 202 while still not final */
	bool woken; /* resumed: its answer goes out on a later turn */
	json_t *ended; /* the job as it ended, or NULL */
};

int api_new(sd_event *event, struct job_store *jobs, struct workers *workers,
	    const struct catalog *catalog, unsigned int max_wait,
	    struct api **ret)
{
	struct api *api = calloc(1, sizeof(*api));

	if (!api)
		return -ENOMEM;
	api->event = sd_event_ref(event);
	api->jobs = jobs;
	api->workers = workers;
	api->catalog = catalog;
	api->max_wait = max_wait;
	api->start_usec = now_usec();
	list_init(&api->waiters);
	api->node = node_identity();
	if (!api->node) {
		sd_event_unref(api->event);
		free(api);
		return -ENOMEM;
	}
	job_store_set_node(jobs, api->node);
	catalog_digest(catalog, api->kernels_digest);
	*ret = api;
	return 0;
}

static void waiter_destroy(void *data)
{
	struct waiter *w = data;

	list_del_init(&w->link);
	sd_event_source_disable_unref(w->timer);
	json_decref(w->ended);
	free(w);
}

static void waiter_wake(struct waiter *w)
{
	if (w->woken)
		return;
	w->woken = true;
	w->timer = sd_event_source_disable_unref(w->timer);
	http_request_resume(w->req);
}

void api_stop(struct api *api)
{
	struct list_head *pos;

	api->stopping = true;
	list_for_each(pos, &api->waiters)
		waiter_wake(list_entry(pos, struct waiter, link));
}

struct api *api_free(struct api *api)
{
	struct list_head *pos, *tmp;

	if (!api)
		return NULL;
	api_stop(api);
	/* Requests the server has not let go of yet outlive the list. */
	list_for_each_safe(pos, tmp, &api->waiters)
		list_del_init(pos);
	sd_event_unref(api->event);
	json_decref(api->node);
	free(api);
	return NULL;
}

static int on_wait_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	waiter_wake(userdata);
	return 0;
}

void api_job_changed(struct job *job, void *userdata)
{
	struct api *api = userdata;
	struct list_head *pos;

	if (!job_state_is_final(job->state))
		return;
	list_for_each(pos, &api->waiters) {
		struct waiter *w = list_entry(pos, struct waiter, link);

		if (strcmp(w->id, job->id) != 0 || w->ended)
			continue;
		/*
		 * The answer goes out on a later turn of the loop, by which
		 * time jobs ending meanwhile may have pushed this one past
		 * max-kept: keep it as it ended.  That holds as well for a
		 * request whose wait ran out earlier in this turn.
		 */
		w->ended = job_to_json(job);
		waiter_wake(w);
	}
}

/*
 * No Retry-After: the job ends with gemmd, so the same request can only
 * get a 404, and a gemmd stopped on purpose is not restarted
 * (Restart=on-failure); if and when it comes back is not ours to say.
 * job is NULL for a job not made.
 */
static void refuse_stopping(struct http_request *req, const struct job *job)
{
	if (!job) {
		http_respond_errorf(req, 503, "shutting_down", NULL,
				    "gemmd is stopping and takes no new jobs");
		return;
	}
	http_respond_errorf(req, 503, "shutting_down", NULL,
			    "gemmd is stopping; job %s has not ended (%s) "
			    "and will not",
			    job->id, job_state_to_string(job->state));
}

/*
 * Requests still come in while the server flushes its answers at
 * shutdown (the next one pipelined on a connection): nothing is held
 * then, as nothing would wake it.
 */
static int hold_request(struct api *api, struct http_request *req,
			const struct job *job, unsigned int wait, bool created)
{
	struct waiter *w;
	int r;

	if (api->stopping) {
		refuse_stopping(req, job);
		return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->api = api;
	w->req = req;
	w->created = created;
	snprintf(w->id, sizeof(w->id), "%s", job->id);
	r = sd_event_add_time_relative(api->event, &w->timer, CLOCK_MONOTONIC,
				       (uint64_t)wait * 1000000ull, 0,
				       on_wait_timeout, w);
	if (r < 0) {
		free(w);
		return r;
	}
	list_init(&w->link);
	list_add_tail(&w->link, &api->waiters);
	http_request_set_data(req, w, waiter_destroy);
	http_request_suspend(req);
	return 0;
}

/* A job's JSON, with a Location for the POST that made it. */
static int respond_with(struct http_request *req, const char *id, json_t *body,
			unsigned int status, bool created)
{
	char location[64];

	snprintf(location, sizeof(location), "/v1/jobs/%s", id);
	return http_respond_json(req, status, body, created ? "Location" : NULL,
				 location);
}

static int respond_job(struct http_request *req, const struct job *job,
		       bool created)
{
	unsigned int status = 200;

	if (created && !job_state_is_final(job->state))
		status = 202;
	return respond_with(req, job->id, job_to_json(job), status, created);
}

/*
 * ?wait=SECONDS: 0..CONFIG_WAIT_MAX; absent means do not wait.  max-wait caps
 * what is asked rather than refusing it: a client cannot know the
 * server's setting, and gemmctl submit --wait asks for 600.
 */
static int parse_wait(struct api *api, struct http_request *req,
		      unsigned int *ret)
{
	const char *v = http_request_query(req, "wait");

	*ret = 0;
	if (v && parse_uint(v, CONFIG_WAIT_MAX, ret) < 0) {
		http_respond_errorf(req, 400, "invalid_value", "wait",
				    "'wait' must be whole seconds, 0..%u",
				    CONFIG_WAIT_MAX);
		return -EINVAL;
	}
	*ret = MIN(*ret, api->max_wait);
	return 0;
}

/*
 * Whether this node can take the job at all: a GPU (or a dry run), the
 * device it names, and cuBLASLt on it if the job asks for that.  lim gets
 * the limits the planner must respect; *retry_sec, for an error, the
 * seconds after which the job could be taken (0: not that soon, if ever).
 */
static int check_device(struct api *api, const struct gemm_spec *spec,
			struct device_limits *lim, struct gemmd_error *err,
			unsigned int *retry_sec)
{
	unsigned int n = workers_count(api->workers);
	char why[256];

	memset(lim, 0, sizeof(*lim));
	/* No GPU now is no GPU later: no Retry-After for no_device. */
	*retry_sec = 0;
	if (!n && !spec->dry_run)
		return gemmd_error_set(err, 503, "no_device", NULL,
				       "this node has no usable GPU, so GPU "
				       "jobs are refused (dry_run works)");
	if (n && spec->device >= (int)n)
		return gemmd_error_set(err, 422, "no_such_device", "device",
				       "device %d does not exist: this node "
				       "has %u GPU(s)",
				       spec->device, n);
	if (!n)
		return 0;
	if (!spec->dry_run && !workers_in_service(api->workers, spec->device,
						  retry_sec, why, sizeof(why)))
		return gemmd_error_set(err, 503, "out_of_service",
				       spec->device >= 0 ? "device" : NULL,
				       "%s", why);
	/* The device the job names, or every one: it may land on any. */
	workers_device_limits(api->workers, spec->device, lim);
	return plan_check_baseline(spec, lim->cublaslt, err);
}

/*
 * When a full queue takes a job again: a slot frees as soon as any queued
 * job starts, which gemmd cannot foresee.  The running jobs' deadlines
 * bound it, but they are loose by design (30 s at the least, for a
 * default 4096^3 job that runs in under a second) and would idle a
 * client long after the queue moved on.  A refusal costs gemmd a parse
 * and a plan, so clients are asked back soon: that keeps the GPUs fed
 * where max-queued is small, and costs little where it is large.
 */
#define QUEUE_FULL_RETRY_SEC 1

static void refuse_queue_full(struct api *api, struct http_request *req)
{
	struct gemmd_error err;

	gemmd_error_set(&err, 503, "queue_full", NULL,
			"%u jobs are queued; try again in %u s",
			job_store_queued(api->jobs), QUEUE_FULL_RETRY_SEC);
	http_respond_error_retry(req, &err, QUEUE_FULL_RETRY_SEC);
}

/*
 * Idempotency-Key (the IETF httpapi draft): a client that lost the
 * answer to a POST (a timeout, a dropped connection) sends it again with
 * the same key and gets the job it made, not a second one.  A key is as
 * idempotency_key_ok() says; the draft's quoted form is taken without
 * its quotes.  field: where the key came from, for the error.
 */
static int key_refused(struct gemmd_error *err, const char *field)
{
	return gemmd_error_set(err, 400, "invalid_value", field,
			       "'%s' must be 1..%d visible ASCII characters, "
			       "without '\"' or '\\'",
			       field, IDEMPOTENCY_KEY_MAX);
}

static int parse_key(struct http_request *req, char *key,
		     struct gemmd_error *err)
{
	const char *v = http_request_header(req, "Idempotency-Key");
	size_t len;

	key[0] = '\0';
	if (!v)
		return 0;
	len = strlen(v);
	if (len >= 2 && v[0] == '"' && v[len - 1] == '"') {
		v++;
		len -= 2;
	}
	if (!idempotency_key_ok(v, len))
		return key_refused(err, "Idempotency-Key");
	memcpy(key, v, len);
	key[len] = '\0';
	return 0;
}

/*
 * The kept job made under this key, in *ret, when it is the same job:
 * the spec as parsed, defaults and all, equal to its own.  It is answered
 * before anything that could refuse it now (a full queue, a GPU out of
 * service), since it was accepted.  Another job under the key is the
 * client's error.
 */
static int find_replay(struct api *api, const char *key,
		       const struct gemm_spec *spec, struct job **ret,
		       struct gemmd_error *err)
{
	struct job *job = job_store_find_key(api->jobs, key);
	json_t *was, *now;
	int same;

	*ret = NULL;
	if (!job)
		return 0;
	was = spec_to_json(&job->spec);
	now = spec_to_json(spec);
	same = was && now ? json_equal(was, now) : -1;
	json_decref(was);
	json_decref(now);
	if (same < 0)
		return gemmd_error_set(err, 500, "internal", NULL,
				       "out of memory");
	if (!same)
		return gemmd_error_set(err, 422, "idempotency_key_reused",
				       "Idempotency-Key",
				       "Idempotency-Key \"%s\" belongs to job "
				       "%s, which has another spec",
				       key, job->id);
	*ret = job;
	return 0;
}

/*
 * A POST's answer: the job, held until it ends if the client waits.
 * While gemmd stops, a job that has not ended never will: a 202 to the
 * same POST again (Idempotency-Key) said it was under way, where the
 * one that waits is refused (hold_request()).
 */
static void answer_post(struct api *api, struct http_request *req,
			const struct job *job, unsigned int wait)
{
	if (api->stopping && !job_state_is_final(job->state)) {
		refuse_stopping(req, job);
		return;
	}
	if (wait && !job_state_is_final(job->state) &&
	    hold_request(api, req, job, wait, true) == 0)
		return;
	respond_job(req, job, true);
}

static void post_job(struct api *api, struct http_request *req)
{
	unsigned int wait, retry_sec = 0;
	char key[IDEMPOTENCY_KEY_MAX + 1];
	struct gemmd_error err;
	struct device_limits lim;
	struct gemm_spec spec;
	struct gemm_plan plan;
	struct job *job;
	const char *body;
	size_t len;
	int r;

	if (parse_wait(api, req, &wait) < 0)
		return;
	body = http_request_body(req, &len);
	if (parse_key(req, key, &err) < 0 ||
	    spec_parse(body, len, &spec, &err) < 0 ||
	    find_replay(api, key, &spec, &job, &err) < 0) {
		http_respond_error(req, &err);
		return;
	}
	if (job) {
		log_debug("job %s: the same POST again (Idempotency-Key)",
			  job->id);
		answer_post(api, req, job, wait);
		return;
	}
	if (check_device(api, &spec, &lim, &err, &retry_sec) < 0 ||
	    plan_resolve(api->catalog, &spec, &lim, &plan, &err) < 0) {
		http_respond_error_retry(req, &err, retry_sec);
		return;
	}
	/* A job made now would never run, and be lost with gemmd. */
	if (api->stopping && !spec.dry_run) {
		refuse_stopping(req, NULL);
		return;
	}
	r = job_store_add(api->jobs, &spec,
			  workers_idle(api->workers, spec.device), &job);
	if (r == -EBUSY) {
		refuse_queue_full(api, req);
		return;
	}
	if (r < 0) {
		http_respond_errorf(req, 500, "internal", NULL,
				    "cannot create job: %s", strerror(-r));
		return;
	}
	snprintf(job->key, sizeof(job->key), "%s", key);
	job->plan = plan;
	job->planned = true;
	if (spec.dry_run)
		job_finish(api->jobs, job, JOB_DONE, NULL,
			   "dry run: validated and planned, not run");
	else
		workers_kick(api->workers);
	log_debug("job %s: %s", job->id, job_state_to_string(job->state));
	answer_post(api, req, job, wait);
}

/*
 * A listing is paged so that answering it never holds the event loop for
 * long: 100 000 kept jobs made one 223 MB document that took 7 s to build,
 * long enough for the watchdog to kill gemmd with every job it held.
 */
#define LIST_PAGE_MAX 1000

static int parse_page(struct http_request *req, struct job_page *p)
{
	const char *state = http_request_query(req, "state");
	const char *limit = http_request_query(req, "limit");
	const char *after = http_request_query(req, "after");
	const char *key = http_request_query(req, "idempotency_key");

	p->state = state ? job_state_from_string(state) : -1;
	p->key = key;
	p->after = 0;
	p->limit = LIST_PAGE_MAX;
	if (state && p->state < 0) {
		http_respond_errorf(req, 400, "invalid_value", "state",
				    "unknown state: queued, running, done, "
				    "failed, timeout or cancelled");
		return -EINVAL;
	}
	if (limit &&
	    (parse_uint(limit, LIST_PAGE_MAX, &p->limit) < 0 || !p->limit)) {
		http_respond_errorf(req, 400, "invalid_value", "limit",
				    "'limit' must be 1..%u", LIST_PAGE_MAX);
		return -EINVAL;
	}
	if (key && !idempotency_key_ok(key, strlen(key))) {
		struct gemmd_error err;

		key_refused(&err, "idempotency_key");
		http_respond_error(req, &err);
		return -EINVAL;
	}
	if (after && parse_u64(after, UINT64_MAX, &p->after) < 0) {
		http_respond_errorf(req, 400, "invalid_value", "after",
				    "'after' must be the number from a "
				    "\"next\" link");
		return -EINVAL;
	}
	return 0;
}

/*
 * The next page's path: the same filter, after the last job listed.  A
 * key's listing has one job at most, so no next page to carry it.
 */
static json_t *next_link(const struct job_page *p, uint64_t next)
{
	char path[128];

	if (!next)
		return json_null();
	snprintf(path, sizeof(path), "/v1/jobs?after=%llu&limit=%u%s%s",
		 (unsigned long long)next, p->limit,
		 p->state < 0 ? "" : "&state=",
		 p->state < 0 ? "" : job_state_to_string(p->state));
	return json_string(path);
}

static void list_jobs(struct api *api, struct http_request *req)
{
	struct job_page page;
	uint64_t next;
	json_t *jobs;

	if (parse_page(req, &page) < 0)
		return;
	jobs = job_store_page_json(api->jobs, &page, &next);
	http_respond_json(req, 200,
			  json_pack("{s:o, s:o}", "jobs", jobs, "next",
				    next_link(&page, next)),
			  NULL, NULL);
}

static void get_job(struct api *api, struct http_request *req, struct job *job)
{
	unsigned int wait;

	if (parse_wait(api, req, &wait) < 0)
		return;
	if (wait && !job_state_is_final(job->state) &&
	    hold_request(api, req, job, wait, false) == 0)
		return;
	respond_job(req, job, false);
}

static void delete_job(struct api *api, struct http_request *req,
		       struct job *job)
{
	if (job_state_is_final(job->state)) {
		http_respond_errorf(req, 409, "job_finished", NULL,
				    "job %s already ended (%s)", job->id,
				    job_state_to_string(job->state));
		return;
	}
	workers_cancel(api->workers, job);
	respond_job(req, job, false);
}

/* A held request whose job ended: 200, as for any job that has ended. */
static void respond_ended(struct http_request *req, struct waiter *w)
{
	respond_with(req, w->id, TAKE_PTR(w->ended), 200, w->created);
}

/* A held request comes back here once its job ended or its wait ran out. */
static void answer_waiter(struct api *api, struct http_request *req)
{
	struct waiter *w = http_request_get_data(req);
	struct job *job;

	if (w && w->ended) {
		respond_ended(req, w);
		return;
	}
	job = w ? job_store_find(api->jobs, w->id) : NULL;
	if (!job) {
		http_respond_errorf(req, 404, "not_found", NULL,
				    "the job is gone");
		return;
	}
	if (api->stopping && !job_state_is_final(job->state)) {
		refuse_stopping(req, job);
		return;
	}
	respond_job(req, job, w->created);
}

/* What each route takes, for the 405 and its Allow header. */
#define ALLOW_GET "GET, HEAD"
#define ALLOW_JOBS "GET, HEAD, POST"
#define ALLOW_JOB "GET, HEAD, DELETE"

/*
 * The query parameters each route reads.  Any other is refused: a typo
 * ("?stat=done", "?wiat=60") would otherwise list every job, or answer
 * at once, with nothing to say it was not read.
 */
static const char *const no_params[] = { NULL };
static const char *const wait_params[] = { "wait", NULL };
static const char *const list_params[] = { "state", "limit", "after",
					   "idempotency_key", NULL };

static bool params_ok(struct http_request *req, const char *const *known)
{
	const char *bad = http_request_unknown_param(req, known);
	char list[128] = "none";
	const char *const *k;
	size_t n = 0;

	if (!bad)
		return true;
	for (k = known; *k && n < sizeof(list); k++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      k == known ? "" : ", ", *k);
	http_respond_errorf(req, 400, "unknown_field", bad,
			    "unknown parameter '%s': %s %s reads %s", bad,
			    http_request_method(req), http_request_path(req),
			    list);
	return false;
}

/* HEAD is GET without the body, which MHD leaves out by itself. */
static bool is_get(const char *method)
{
	return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

static void route_job(struct api *api, struct http_request *req,
		      const char *method, const char *id)
{
	struct job *job;

	if (!is_get(method) && strcmp(method, "DELETE")) {
		http_respond_not_allowed(req, ALLOW_JOB);
		return;
	}
	if (!params_ok(req, is_get(method) ? wait_params : no_params))
		return;
	job = job_store_find(api->jobs, id);
	if (!job)
		http_respond_errorf(req, 404, "not_found", NULL,
				    "no job with id \"%s\"", id);
	else if (is_get(method))
		get_job(api, req, job);
	else
		delete_job(api, req, job);
}

static uint64_t uptime_sec(const struct api *api)
{
	return (now_usec() - api->start_usec) / 1000000;
}

static void get_health(struct api *api, struct http_request *req)
{
	const char *status = workers_health(api->workers);

	http_respond_json(
		req, 200,
		json_pack("{s:s, s:b, s:s, s:I, s:O, s:o, s:{s:i, s:i}, s:i,"
			  " s:s}",
			  "status", status, "ready", 1, "version",
			  PACKAGE_VERSION, "uptime_sec",
			  (json_int_t)uptime_sec(api), "node", api->node,
			  "devices", workers_devices_json(api->workers), "jobs",
			  "queued", job_store_queued(api->jobs), "total",
			  job_store_count(api->jobs), "kernels",
			  (int)catalog_size(api->catalog), "kernels_digest",
			  api->kernels_digest),
		NULL, NULL);
}

static unsigned int requests_held(const struct api *api)
{
	const struct list_head *pos;
	unsigned int n = 0;

	list_for_each(pos, &api->waiters)
		n += !list_entry(pos, struct waiter, link)->woken;
	return n;
}

static void get_metrics(struct api *api, struct http_request *req)
{
	json_t *devices = workers_devices_json(api->workers);
	struct metrics_view v = {
		.node = api->node,
		.kernels_digest = api->kernels_digest,
		.kernels = (unsigned int)catalog_size(api->catalog),
		.uptime_sec = uptime_sec(api),
		.devices = devices,
		.requests_held = requests_held(api),
	};
	char *text;

	job_store_counts(api->jobs, &v.jobs);
	text = devices ? metrics_text(&v) : NULL;
	json_decref(devices);
	if (!text) {
		http_respond_errorf(req, 500, "internal", NULL,
				    "out of memory for the metrics");
		return;
	}
	http_respond_text(req, 200, METRICS_CONTENT_TYPE, text);
}

/* GET or HEAD, and no query parameter: the routes that read none. */
static bool only_get(struct http_request *req, const char *method)
{
	if (is_get(method))
		return params_ok(req, no_params);
	http_respond_not_allowed(req, ALLOW_GET);
	return false;
}

void api_handle(struct http_request *req, void *userdata)
{
	struct api *api = userdata;
	const char *method = http_request_method(req);
	const char *path = http_request_path(req);

	if (http_request_resumed(req)) {
		answer_waiter(api, req);
		return;
	}
	if (!strcmp(path, "/healthz")) {
		if (only_get(req, method))
			get_health(api, req);
	} else if (!strcmp(path, "/metrics")) {
		if (only_get(req, method))
			get_metrics(api, req);
	} else if (!strcmp(path, "/v1/kernels")) {
		if (only_get(req, method))
			http_respond_json(
				req, 200,
				json_pack("{s:o}", "kernels",
					  catalog_to_json(api->catalog)),
				NULL, NULL);
	} else if (!strcmp(path, "/v1/devices")) {
		if (only_get(req, method))
			http_respond_json(
				req, 200,
				json_pack("{s:o}", "devices",
					  workers_devices_json(api->workers)),
				NULL, NULL);
	} else if (!strcmp(path, "/v1/jobs")) {
		if (!strcmp(method, "POST")) {
			if (params_ok(req, wait_params))
				post_job(api, req);
		} else if (is_get(method)) {
			if (params_ok(req, list_params))
				list_jobs(api, req);
		} else {
			http_respond_not_allowed(req, ALLOW_JOBS);
		}
	} else if (!strncmp(path, "/v1/jobs/", 9) && path[9] &&
		   !strchr(path + 9, '/')) {
		route_job(api, req, method, path + 9);
	} else {
		http_respond_errorf(req, 404, "not_found", NULL,
				    "no such resource: %s", path);
	}
}
