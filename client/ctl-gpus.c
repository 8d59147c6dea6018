// SPDX-License-Identifier: MIT
/*
 * ctl-gpus.c - gemmctl gpus: the same job on each GPU, compared.
 *
 * All the jobs are submitted first, so that the GPUs run at once, under
 * the load a sweep puts on the node (power, heat, the host), and then
 * each is waited for.  A GPU whose job ends other than done and verified,
 * or whose rate is under (1 - tolerance) of the best GPU's, fails the
 * check.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl-gpus.h"
#include "ctl-print.h"
#include "util.h"

/* Each wait request holds at most this long (gemmd's cap is 3600). */
#define GPUS_POLL_S 600L

struct gpu_run {
	json_t *device; /* from GET /v1/devices */
	json_t *job; /* the last we heard of its job, or NULL */
	char *why; /* why it has no job, or NULL */
};

struct gpus {
	const struct ctl_http *http;
	const struct ctl_gpus_opts *opts;
	json_t *base;
	struct gpu_run *runs;
	size_t n;
	bool has_deadline;
	double deadline; /* CLOCK_MONOTONIC s */
};

/* The first device before device i with its index; i where none. */
static size_t same_index(const json_t *devices, size_t i)
{
	json_int_t index = json_integer_value(
		json_object_get(json_array_get(devices, i), "index"));
	size_t j;

	for (j = 0; j < i; j++)
		if (json_integer_value(json_object_get(
			    json_array_get(devices, j), "index")) == index)
			return j;
	return i;
}

static int get_devices(struct gpus *g)
{
	json_t *devices = NULL;
	size_t i, j, n;
	int r;

	r = ctl_devices(g->http, &devices);
	if (r != CTL_EXIT_OK)
		return r;
	n = json_array_size(devices);
	if (!n) {
		fprintf(stderr, "gemmctl: gpus: gemmd at %s has no GPU\n",
			g->http->url);
		json_decref(devices);
		return CTL_EXIT_ERROR;
	}
	/* Checked before any job is made: each job names its GPU by it. */
	for (i = 0; i < n; i++) {
		json_t *index =
			json_object_get(json_array_get(devices, i), "index");

		if (!json_is_integer(index) || json_integer_value(index) < 0) {
			fprintf(stderr,
				"gemmctl: gpus: GET %s/v1/devices: device %zu "
				"has no index\n",
				g->http->url, i);
			json_decref(devices);
			return CTL_EXIT_ERROR;
		}
		/*
		 * An index twice would send two jobs to one GPU, to queue
		 * one behind the other, and leave another GPU unchecked:
		 * "every GPU ok" of a GPU that ran nothing.
		 */
		j = same_index(devices, i);
		if (j < i) {
			fprintf(stderr,
				"gemmctl: gpus: GET %s/v1/devices: devices %zu "
				"and %zu have the same index\n",
				g->http->url, j, i);
			json_decref(devices);
			return CTL_EXIT_ERROR;
		}
	}
	g->runs = calloc(n, sizeof(*g->runs));
	g->n = g->runs ? n : 0; /* gpus_done() walks them */
	for (i = 0; i < g->n; i++)
		g->runs[i].device = json_incref(json_array_get(devices, i));
	json_decref(devices);
	return g->runs ? CTL_EXIT_OK : -ENOMEM;
}

static int submit(struct gpus *g, struct gpu_run *run)
{
	json_t *spec = json_deep_copy(g->base);
	char *body = NULL;
	int r = -ENOMEM;

	if (!spec || json_object_set(spec, "device",
				     json_object_get(run->device, "index")) < 0)
		goto out;
	body = json_dumps(spec, JSON_COMPACT);
	if (!body)
		goto out;
	r = ctl_call(g->http, false, "POST", "/v1/jobs", body, strlen(body), 0,
		     &ctl_job_shape, &run->job);
	/* Refused: gemmd's error has been printed; the GPU fails the check. */
	if (r != CTL_EXIT_OK && r != CTL_EXIT_UNREACHABLE) {
		run->why = strdup("gemmd refused the job (above)");
		r = run->why ? CTL_EXIT_OK : -ENOMEM;
	}
out:
	free(body);
	json_decref(spec);
	return r;
}

/*
 * Seconds the next wait may hold; 0 once the deadline has passed.  Up,
 * not down: down, --wait N gave up about a second early, and --wait 1
 * at once.
 */
static long wait_for(const struct gpus *g)
{
	double left;

	if (!g->has_deadline)
		return GPUS_POLL_S;
	left = g->deadline - ctl_now_s();
	if (left <= 0)
		return 0;
	return MIN((long)ceil(left), GPUS_POLL_S);
}

static char *job_path(const json_t *job, const char *suffix)
{
	char *id = ctl_http_escape(ctl_jstr(job, "id"));
	char *path = NULL;

	if (id && asprintf(&path, "/v1/jobs/%s%s", id, suffix) < 0)
		path = NULL;
	free(id);
	return path;
}

/*
 * No longer followed (out of time, or its poll refused): the job is
 * cancelled, so that it holds its GPU no longer, and the GPU fails.  A
 * cancel that got no answer is said, not taken for done: the job may
 * still hold the GPU.
 */
static int give_up(struct gpus *g, struct gpu_run *run, const char *why)
{
	const char *id = ctl_jstr(run->job, "id");
	int status = ctl_job_delete(g->http, id, NULL);
	json_t *ended;
	int r;

	/* 409: it ended between the last look and the cancel; take that. */
	if (status == 409) {
		ended = ctl_job_ended(g->http, id);
		if (ended) {
			json_decref(run->job);
			run->job = ended;
			return CTL_EXIT_OK;
		}
	}
	if (ctl_status_is_2xx(status))
		r = asprintf(&run->why, "cancelled: %s", why);
	else if (status == 409)
		r = asprintf(&run->why, "%s (it had ended)", why);
	else if (status)
		r = asprintf(&run->why,
			     "%s; not cancelled (HTTP %d): it may still run",
			     why, status);
	else
		r = asprintf(&run->why,
			     "%s; not cancelled (no answer): it may still run",
			     why);
	if (r < 0) {
		run->why = NULL;
		return -ENOMEM;
	}
	return CTL_EXIT_OK;
}

static int wait_job(struct gpus *g, struct gpu_run *run)
{
	bool last = false;
	char suffix[32];
	json_t *job;
	char *path;
	long w;
	int r;

	while (ctl_job_in_flight(run->job)) {
		if (last)
			return give_up(g, run, "--wait ran out");
		/*
		 * Past the deadline, one look without holding: a job that
		 * ended while another GPU's was waited for is not cancelled.
		 */
		w = wait_for(g);
		last = !w;
		snprintf(suffix, sizeof(suffix), "?wait=%ld", w);
		path = job_path(run->job, suffix);
		if (!path)
			return -ENOMEM;
		job = NULL;
		r = ctl_call(g->http, false, "GET", path, NULL, 0, w,
			     &ctl_job_shape, &job);
		free(path);
		/* gemmd's error has been printed; the other GPUs go on */
		if (r == CTL_EXIT_ERROR)
			return give_up(g, run, "its poll failed (above)");
		if (r != CTL_EXIT_OK)
			return r;
		json_decref(run->job);
		run->job = job;
	}
	return CTL_EXIT_OK;
}

static double job_tflops(const json_t *job)
{
	const json_t *v =
		json_object_get(json_object_get(job, "result"), "tflops");

	return json_is_number(v) ? json_number_value(v) : 0;
}

static double best_tflops(const struct gpus *g)
{
	double best = 0;
	size_t i;

	for (i = 0; i < g->n; i++)
		if (ctl_job_succeeded(g->runs[i].job))
			best = MAX(best, job_tflops(g->runs[i].job));
	return best;
}

/* "ok", "slow" or "failed", and why where it is not ok. */
static const char *verdict(const struct gpus *g, const struct gpu_run *run,
			   double best, char *why, size_t len)
{
	const char *state = ctl_jstr(run->job, "state");
	double t = job_tflops(run->job);

	why[0] = '\0';
	if (run->why) {
		snprintf(why, len, "%s", run->why);
		return "failed";
	}
	if (!ctl_job_succeeded(run->job)) {
		const char *reason = ctl_jstr(run->job, "reason");

		if (state && !strcmp(state, "done"))
			snprintf(why, len, "verification failed");
		else
			snprintf(why, len, "%s%s%s", state ?: "no state",
				 reason ? ": " : "", reason ?: "");
		return "failed";
	}
	if (!(t > 0)) {
		snprintf(why, len, "no rate (a dry run?)");
		return "failed";
	}
	if (t < (1 - g->opts->tolerance) * best) {
		/* Up to a tenth, as OF_BEST goes down (ctl-print.c). */
		snprintf(why, len, "%.1f %% under the best",
			 ceil(1000 * (1 - t / best) - 1e-9) / 10);
		return "slow";
	}
	return "ok";
}

static json_t *telemetry(const json_t *job, const char *key)
{
	return json_object_get(json_object_get(json_object_get(job, "result"),
					       "telemetry"),
			       key);
}

static json_t *entry(const struct gpus *g, const struct gpu_run *run,
		     double best)
{
	double t = job_tflops(run->job);
	char why[256];
	const char *v = verdict(g, run, best, why, sizeof(why));

	return json_pack("{s:O?, s:O?, s:O?, s:s?, s:s?, s:o, s:o, s:O?,"
			 " s:O?, s:s, s:s, s:s?}",
			 "index", json_object_get(run->device, "index"), "name",
			 json_object_get(run->device, "name"), "uuid",
			 json_object_get(run->device, "uuid"), "id",
			 ctl_jstr(run->job, "id"), "state",
			 ctl_jstr(run->job, "state"), "tflops",
			 t > 0 ? json_real(t) : json_null(), "of_best",
			 t > 0 && best > 0 ? json_real(t / best) : json_null(),
			 "sm_clock_mhz", telemetry(run->job, "sm_clock_mhz"),
			 "power_limit_w", telemetry(run->job, "power_limit_w"),
			 "verify", ctl_job_verdict(run->job), "verdict", v,
			 "why", why[0] ? why : NULL);
}

static int report(struct gpus *g, bool *ret_ok)
{
	double best = best_tflops(g);
	json_t *rows = json_array(), *doc = NULL, *e;
	int r = -ENOMEM;
	size_t i;

	*ret_ok = rows != NULL;
	for (i = 0; rows && i < g->n; i++) {
		e = entry(g, &g->runs[i], best);
		if (!e || json_array_append_new(rows, e) < 0)
			goto out;
		*ret_ok &= !strcmp(ctl_jstr(e, "verdict"), "ok");
	}
	if (!g->opts->json) {
		r = ctl_print_gpus(rows, g->opts->tolerance);
		goto out;
	}
	doc = json_pack("{s:O, s:f, s:o, s:O}", "base", g->base, "tolerance",
			g->opts->tolerance, "best_tflops",
			best > 0 ? json_real(best) : json_null(), "gpus", rows);
	r = ctl_print_doc(doc);
out:
	json_decref(doc);
	json_decref(rows);
	return r;
}

static void gpus_done(struct gpus *g)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		json_decref(g->runs[i].device);
		json_decref(g->runs[i].job);
		free(g->runs[i].why);
	}
	free(g->runs);
	json_decref(g->base);
}

/* Each DELETE after the check failed gets this long at most. */
#define ABORT_CANCEL_S 5L

/*
 * The check stopped short (gemmd stopped answering, out of memory): the
 * jobs it made are cancelled, best effort, rather than left to hold
 * their GPUs unseen.  One whose cancel got no answer is named.
 */
static void cancel_inflight(struct gpus *g)
{
	long t = g->http->timeout_s;
	struct ctl_http http = { g->http->url,
				 t && t < ABORT_CANCEL_S ? t : ABORT_CANCEL_S,
				 NULL };
	char id[64];
	size_t i;
	int status;

	for (i = 0; i < g->n; i++) {
		if (!ctl_job_in_flight(g->runs[i].job))
			continue;
		status = ctl_job_delete(&http, ctl_jstr(g->runs[i].job, "id"),
					NULL);
		if (status == 409 || ctl_status_is_2xx(status))
			continue;
		ctl_escape(id, sizeof(id), ctl_jstr(g->runs[i].job, "id"));
		fprintf(stderr,
			"gemmctl: gpus: job %s may still be queued or "
			"running\n",
			id);
	}
}

static int run_all(struct gpus *g)
{
	size_t i;
	int r = CTL_EXIT_OK;

	for (i = 0; i < g->n && r == CTL_EXIT_OK; i++)
		r = submit(g, &g->runs[i]);
	for (i = 0; i < g->n && r == CTL_EXIT_OK; i++)
		r = wait_job(g, &g->runs[i]);
	if (r != CTL_EXIT_OK)
		cancel_inflight(g);
	return r;
}

int ctl_gpus(const struct ctl_http *http, const struct ctl_gpus_opts *opts,
	     json_t *base)
{
	struct gpus g = { .http = http,
			  .opts = opts,
			  .base = json_incref(base) };
	bool ok = false;
	int r;

	g.has_deadline = opts->wait_s > 0;
	g.deadline = ctl_now_s() + (double)opts->wait_s;
	r = get_devices(&g);
	if (r == CTL_EXIT_OK)
		r = run_all(&g);
	if (r == CTL_EXIT_OK)
		r = report(&g, &ok);
	gpus_done(&g);
	if (r < 0) {
		/* a write error is told at exit (close_stdout) */
		if (r != -EIO)
			fprintf(stderr, "gemmctl: gpus: %s\n", strerror(-r));
		return CTL_EXIT_ERROR;
	}
	if (r == CTL_EXIT_OK && !ok)
		r = CTL_EXIT_ERROR;
	return r;
}
