// SPDX-License-Identifier: MIT
/*
 * ctl-tune.c - gemmctl tune: an autotuning sweep of one job on one node.
 *
 * The candidates are the catalog's kernels for the job's dtype, layout and
 * output type, each over the cluster shapes, epilogues and (with --stages
 * all) stage counts it takes, less what the base job's own "kernel" object
 * fixes.  gemmd's planner judges which of them can run: each is sent as a
 * dry run first, so that the rules of README's job table live in one
 * place, and only those it plans are submitted, a few at a time.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ctl-print.h"
#include "ctl-tune.h"
#include "util.h"

#define BACKOFF_MIN_S 1L
#define BACKOFF_MAX_S 30L
/*
 * A request that got no answer (a timeout, a dropped connection) is sent
 * again this many times, 1, 2 and 4 s apart, where that is safe: a dry
 * run, a poll, or a candidate's POST with the same Idempotency-Key
 * (gemmd answers with the job if the first one made it, so the
 * candidate runs once either way).
 */
#define RESENDS_MAX 3
/* The longest a GET holds on a job while no other job needs a look. */
#define HOLD_MAX_S 30L
/* The stage counts a job may ask for (README: outside them, a 400). */
#define STAGES_MIN 1
#define STAGES_MAX 64

enum cand_state {
	CAND_REFUSED, /* the dry run was refused: error says why */
	CAND_VALID, /* planned; not submitted yet */
	CAND_INFLIGHT, /* submitted, not ended: id */
	CAND_ENDED, /* the job ended: job says how */
	CAND_FAILED, /* refused when submitted (error), or not run (why) */
};

struct cand {
	enum cand_state state;
	json_t *kernel; /* the kernel object it sends */
	json_t *plan; /* the dry run's */
	json_t *error; /* gemmd's error object */
	json_t *job; /* the job as it ended */
	unsigned int lost; /* POSTs of it that got no answer */
	char *id;
	const char *why;
};

struct tune {
	struct ctl_http http;
	const struct ctl_tune_opts *opts;
	json_t *base; /* the job as read */
	json_t *fixed; /* its "kernel" object: the knobs it fixes */
	json_t *spec; /* the base as gemmd resolved it, defaults filled in */
	json_t *node; /* who answered the base's dry run, or NULL */
	struct cand *cands;
	size_t n, alloc;
	char sweep_id[17]; /* in each candidate's Idempotency-Key */
	/* the sweep: cands[0..next) have been through submit() */
	size_t next, inflight, max_inflight;
	double deadline, retry_at; /* CLOCK_MONOTONIC s; deadline 0: none */
	unsigned int lost_polls; /* polls in a row that got no answer */
	long backoff_s;
	int status; /* the exit status of an error that ends the sweep */
};

/* Every cluster shape a job may ask for: sides 1..8, at most 16 CTAs. */
static const unsigned int cluster_shapes[][2] = {
	{ 1, 1 }, { 2, 1 }, { 1, 2 }, { 4, 1 }, { 2, 2 }, { 1, 4 }, { 8, 1 },
	{ 4, 2 }, { 2, 4 }, { 1, 8 }, { 8, 2 }, { 4, 4 }, { 2, 8 },
};

/* The signal that stops the sweep, 0 before one comes. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	interrupted = sig;
}

/*
 * Ctrl-C, and the signals a batch scheduler, timeout(1) or a closed ssh
 * session end a sweep with: each cancels the jobs in flight.
 */
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };

static int oom(void)
{
	fputs("gemmctl: out of memory\n", stderr);
	return -ENOMEM;
}

static bool same_str(const json_t *a, const json_t *b, const char *key)
{
	const char *x = ctl_jstr(a, key), *y = ctl_jstr(b, key);

	return x && y && !strcmp(x, y);
}

static bool in_array(const json_t *arr, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), s))
			return true;
	return false;
}

/* Whether name is one of the comma-separated list's. */
static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	for (;;) {
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
		p = strchr(p, ',');
		if (!p)
			return false;
		p++;
	}
}

/* --- requests ------------------------------------------------------------- */

/* The base job with kernel (unless NULL) for its own, JSON text. */
static char *job_body(const struct tune *t, json_t *kernel, bool dry_run)
{
	json_t *job = json_copy(t->base);
	char *body = NULL;

	if (job && (!kernel || !json_object_set(job, "kernel", kernel)) &&
	    !json_object_set_new(job, "dry_run", json_boolean(dry_run)))
		body = json_dumps(job, JSON_COMPACT);
	json_decref(job);
	return body;
}

/*
 * A negative return has been reported.  SIGINT does not cut it short: a
 * job that gemmd made before the reply was read would be left running,
 * with no ID to cancel it by.  It is not held, so --timeout bounds it.
 */
static int post_job(struct tune *t, json_t *kernel, bool dry_run,
		    const char *key, struct ctl_reply *reply)
{
	struct ctl_http http = { t->http.url, t->http.timeout_s, NULL, key };
	char *body = job_body(t, kernel, dry_run);
	int r;

	if (!body)
		return oom();
	r = ctl_http_request(&http, "POST", "/v1/jobs", body, strlen(body), 0,
			     reply);
	free(body);
	return r;
}

/* Whether a failed request may have reached gemmd and lost its answer. */
static bool answer_lost(int r)
{
	return r != -EINVAL && r != -ENOMEM && r != -EFBIG && r != -EINTR;
}

/*
 * Sleeps s seconds after a request that got no answer, or less where
 * SIGINT comes or the sweep's deadline (0 before it starts) is sooner.
 */
static void pause_lost(double deadline, long s, const char *what)
{
	double until = ctl_now_s() + (double)s;
	struct timespec ts = { .tv_nsec = 100000000 };

	ctl_print_text(stderr,
		       "gemmctl: tune: no answer to %s; asking again in %ld s",
		       what, s);
	fputc('\n', stderr);
	if (deadline > 0)
		until = MIN(until, deadline);
	while (!interrupted && ctl_now_s() < until)
		nanosleep(&ts, NULL);
}

/* A dry run makes no GPU work: one sent twice does no harm. */
static int post_dry_run(struct tune *t, json_t *kernel, struct ctl_reply *reply)
{
	unsigned int lost;
	int r;

	for (lost = 0;; lost++) {
		r = post_job(t, kernel, true, NULL, reply);
		if (r >= 0 || !answer_lost(r) || lost == RESENDS_MAX)
			return r;
		pause_lost(0, 1L << lost, "a dry run");
	}
}

/* gemmd's error object in the reply, or one made of its status. */
static json_t *reply_error(const struct ctl_reply *reply)
{
	json_t *root = NULL, *error;
	char msg[64];

	if (reply->len)
		root = json_loadb(reply->body, reply->len, 0, NULL);
	error = json_incref(json_object_get(root, "error"));
	json_decref(root);
	if (ctl_jstr(error, "code"))
		return error;
	json_decref(error);
	snprintf(msg, sizeof(msg), "HTTP status %ld", reply->status);
	return json_pack("{s:s, s:s}", "code", "http_status", "message", msg);
}

/* --- the base job ---------------------------------------------------------- */

/*
 * The base job, dry run as it is: gemmd's own error for a bad one, and
 * for a good one its spec with the defaults (out_dtype, layout) filled in.
 */
static int check_base(struct tune *t)
{
	struct ctl_reply reply = {};
	json_t *job = NULL;
	int r;

	r = post_dry_run(t, NULL, &reply);
	if (r < 0)
		return ctl_transport_exit(r);
	r = CTL_EXIT_ERROR;
	if (!ctl_status_is_2xx(reply.status)) {
		ctl_report_error(&t->http, t->opts->json, "POST", "/v1/jobs",
				 &reply);
		goto out;
	}
	job = ctl_reply_job(&reply);
	t->spec = json_incref(json_object_get(job, "spec"));
	t->node = json_incref(json_object_get(job, "node"));
	if (!json_is_object(t->spec)) {
		fprintf(stderr,
			"gemmctl: POST %s/v1/jobs: reply is not a job\n",
			t->http.url);
		goto out;
	}
	r = CTL_EXIT_OK;
out:
	json_decref(job);
	ctl_reply_done(&reply);
	return r;
}

/* --- candidates ------------------------------------------------------------ */

/* "128x256x64" from the catalog's [128, 256, 64]; NULL if not that. */
static const char *tile_text(const json_t *k, char *buf, size_t len)
{
	const json_t *tile = json_object_get(k, "tile");
	json_int_t d[3];
	size_t i;

	if (json_array_size(tile) != 3)
		return NULL;
	for (i = 0; i < 3; i++) {
		if (!json_is_integer(json_array_get(tile, i)))
			return NULL;
		d[i] = json_integer_value(json_array_get(tile, i));
	}
	snprintf(buf, len,
		 "%" JSON_INTEGER_FORMAT "x%" JSON_INTEGER_FORMAT
		 "x%" JSON_INTEGER_FORMAT,
		 d[0], d[1], d[2]);
	return buf;
}

/*
 * Whether kernel k fits the job: its types, the schedules asked for, and
 * the knobs the base fixes that the catalog tells of.  The planner has
 * the last word on the rest.
 */
static bool kernel_fits(const struct tune *t, const json_t *k, const char *tile)
{
	const char *sched = ctl_jstr(k, "schedule"), *want;

	if (!sched || !same_str(k, t->spec, "dtype") ||
	    !same_str(k, t->spec, "layout") ||
	    !in_array(json_object_get(k, "outs"),
		      ctl_jstr(t->spec, "out_dtype") ?: ""))
		return false;
	if (t->opts->schedules && !in_list(t->opts->schedules, sched))
		return false;
	want = ctl_jstr(t->fixed, "schedule");
	if (want && strcmp(want, sched))
		return false;
	/* as gemmd spells it: "128x256x064" is the tile 128x256x64 */
	want = ctl_jstr(json_object_get(t->spec, "kernel"), "tile");
	if (want && strcmp(want, tile))
		return false;
	if (json_is_true(json_object_get(t->fixed, "pdl")) &&
	    !json_is_true(json_object_get(k, "pdl")))
		return false;
	want = ctl_jstr(t->fixed, "placement");
	if (want && strcmp(want, "none") &&
	    !json_is_true(json_object_get(k, "placement")))
		return false;
	/* whole waves of work units: the persistent kernels' alone */
	want = ctl_jstr(t->fixed, "occupancy");
	if (want && !strcmp(want, "balanced") &&
	    !json_is_true(json_object_get(k, "persistent")))
		return false;
	want = ctl_jstr(t->fixed, "decomposition");
	return !want || in_array(json_object_get(k, "decompositions"), want);
}

/* The stage counts to try, lo..hi; 0..0 leaves them to the planner. */
static bool stage_range(const struct tune *t, const json_t *k, json_int_t *lo,
			json_int_t *hi)
{
	const json_t *fixed = json_object_get(t->fixed, "stages");
	json_int_t min, max;

	min = json_integer_value(json_object_get(k, "min_stages"));
	max = json_integer_value(json_object_get(k, "max_stages"));
	if (json_is_integer(fixed)) {
		*lo = *hi = json_integer_value(fixed);
		return *lo >= min && *lo <= max;
	}
	if (!t->opts->all_stages) {
		*lo = *hi = 0;
		return true;
	}
	/* an odd catalog must not make 2^63 candidates, nor a stages 0 */
	*lo = MAX(min, (json_int_t)STAGES_MIN);
	*hi = MIN(max, (json_int_t)STAGES_MAX);
	return *lo <= *hi;
}

static bool cluster_wanted(const struct tune *t, const json_t *k, size_t i)
{
	const json_t *fixed = json_object_get(t->fixed, "cluster");
	json_int_t most = json_integer_value(json_object_get(k, "cluster_max"));
	unsigned int x = cluster_shapes[i][0], y = cluster_shapes[i][1];

	/* --clusters 1x1 narrows what the base fixes, as --schedule does */
	if (x * y > most || (t->opts->cluster_1x1 && x * y != 1))
		return false;
	return !json_is_array(fixed) ||
	       (json_integer_value(json_array_get(fixed, 0)) == x &&
		json_integer_value(json_array_get(fixed, 1)) == y);
}

static bool epilogue_wanted(const struct tune *t, const char *epilogue)
{
	const char *fixed = ctl_jstr(t->fixed, "epilogue");

	return !fixed || !strcmp(fixed, "auto") || !strcmp(fixed, epilogue);
}

static struct cand *new_cand(struct tune *t)
{
	struct cand *c;
	size_t alloc;

	if (t->n == t->alloc) {
		alloc = t->alloc ? t->alloc * 2 : 64;
		c = reallocarray(t->cands, alloc, sizeof(*c));
		if (!c)
			return NULL;
		t->cands = c;
		t->alloc = alloc;
	}
	c = &t->cands[t->n];
	memset(c, 0, sizeof(*c));
	return c;
}

/* One candidate: the base's kernel object with these knobs set. */
static int add_cand(struct tune *t, const json_t *k, const char *tile,
		    size_t shape, const char *epilogue, json_int_t stages)
{
	struct cand *c = new_cand(t);
	json_t *kernel;
	int r = 0;

	kernel = t->fixed ? json_copy(t->fixed) : json_object();
	if (!c || !kernel)
		goto fail;
	r |= json_object_set_new(kernel, "schedule",
				 json_string(ctl_jstr(k, "schedule")));
	r |= json_object_set_new(kernel, "tile", json_string(tile));
	r |= json_object_set_new(kernel, "cluster",
				 json_pack("[i,i]", cluster_shapes[shape][0],
					   cluster_shapes[shape][1]));
	r |= json_object_set_new(kernel, "epilogue", json_string(epilogue));
	if (stages)
		r |= json_object_set_new(kernel, "stages",
					 json_integer(stages));
	if (r)
		goto fail;
	c->kernel = kernel;
	t->n++;
	return 0;
fail:
	json_decref(kernel);
	return oom();
}

/* Every candidate of kernel k, cluster shape by shape. */
static int add_kernel(struct tune *t, const json_t *k)
{
	const json_t *epilogues = json_object_get(k, "epilogues"), *e;
	json_int_t lo, hi, s;
	char tile[64];
	size_t i, j;
	int r;

	if (!tile_text(k, tile, sizeof(tile)) || !kernel_fits(t, k, tile) ||
	    !stage_range(t, k, &lo, &hi))
		return 0;
	for (i = 0; i < ARRAY_SIZE(cluster_shapes); i++) {
		if (!cluster_wanted(t, k, i))
			continue;
		json_array_foreach(epilogues, j, e) {
			if (!json_is_string(e) ||
			    !epilogue_wanted(t, json_string_value(e)))
				continue;
			for (s = lo; s <= hi; s++) {
				r = add_cand(t, k, tile, i,
					     json_string_value(e), s);
				if (r < 0)
					return r;
			}
		}
	}
	return 0;
}

/* Whether a kernel of the catalog has the schedule of n bytes at name. */
static bool catalog_has(const json_t *kernels, const char *name, size_t n)
{
	const char *sched;
	const json_t *k;
	size_t i;

	json_array_foreach(kernels, i, k) {
		sched = ctl_jstr(k, "schedule");
		if (sched && strlen(sched) == n && !strncmp(sched, name, n))
			return true;
	}
	return false;
}

/* Whether a kernel before kernel i has the schedule sched. */
static bool seen_before(const json_t *kernels, size_t i, const char *sched)
{
	const char *s;

	while (i--) {
		s = ctl_jstr(json_array_get(kernels, i), "schedule");
		if (s && !strcmp(s, sched))
			return true;
	}
	return false;
}

/* The catalog's schedules, each once: "cooperative, interleaved, ...". */
static void print_schedules(const json_t *kernels)
{
	const char *sched;
	const json_t *k;
	bool any = false;
	size_t i;

	json_array_foreach(kernels, i, k) {
		sched = ctl_jstr(k, "schedule");
		if (!sched || seen_before(kernels, i, sched))
			continue;
		ctl_print_text(stderr, "%s%s", any ? ", " : "", sched);
		any = true;
	}
	if (!any)
		fputs("none", stderr);
}

/*
 * Each name of --schedule must be a schedule of some kernel in the
 * catalog, whatever the job: one that is not (a typo, "cooprative") was
 * left out in silence, so that "--schedule ws,cooprative" ranked the ws
 * kernels alone as if they were all that was asked for, and a list of
 * such names came to "no kernel of gemmd's catalog fits the job", which
 * blamed the job.  Reported with the catalog's schedules.
 */
static int check_schedules(const struct tune *t, const json_t *kernels)
{
	const char *p;
	size_t n;

	for (p = t->opts->schedules; p; p = strchr(p, ',')) {
		p += *p == ',';
		n = strcspn(p, ",");
		if (catalog_has(kernels, p, n))
			continue;
		ctl_print_text(stderr,
			       "gemmctl: tune: invalid --schedule '%s': no "
			       "kernel of gemmd's catalog has the schedule "
			       "'%.*s' (it has: ",
			       t->opts->schedules, (int)n, p);
		print_schedules(kernels);
		fputs(")\n", stderr);
		return CTL_EXIT_ERROR;
	}
	return CTL_EXIT_OK;
}

static int enumerate(struct tune *t)
{
	static const struct ctl_shape shape = { "a kernel list", "kernels",
						JSON_ARRAY };
	json_t *root = NULL;
	const json_t *k;
	size_t i;
	int r;

	r = ctl_call(&t->http, false, "GET", "/v1/kernels", NULL, 0, 0, &shape,
		     &root);
	if (r != CTL_EXIT_OK)
		return r;
	r = check_schedules(t, json_object_get(root, "kernels"));
	if (r != CTL_EXIT_OK)
		goto out;
	json_array_foreach(json_object_get(root, "kernels"), i, k) {
		if (add_kernel(t, k) < 0) {
			r = CTL_EXIT_ERROR;
			break;
		}
	}
out:
	json_decref(root);
	return r;
}

/* Dry-runs candidate c: planned (CAND_VALID) or refused, with why. */
/*
 * gemmd's planner judged the candidate: a 422, or a 400 for a knob a
 * newer gemmd no longer takes.  Any other answer is not about it.
 */
static bool planner_refused(const struct ctl_reply *reply)
{
	return reply->status == 400 || reply->status == 422;
}

static int dry_run(struct tune *t, struct cand *c)
{
	struct ctl_reply reply = {};
	json_t *job = NULL;
	int r;

	r = post_dry_run(t, c->kernel, &reply);
	if (r < 0)
		return ctl_transport_exit(r);
	r = CTL_EXIT_OK;
	if (ctl_status_is_2xx(reply.status)) {
		job = ctl_reply_job(&reply);
		if (!job) {
			fprintf(stderr,
				"gemmctl: POST %s/v1/jobs: reply is not a "
				"job\n",
				t->http.url);
			r = CTL_EXIT_ERROR;
			goto out;
		}
		c->plan = json_incref(json_object_get(job, "plan"));
		c->state = CAND_VALID;
	} else if (planner_refused(&reply)) {
		c->error = reply_error(&reply);
		c->state = CAND_REFUSED;
	} else {
		/* A 5xx, a proxy's 401 or 404: no verdict on any candidate. */
		ctl_report_error(&t->http, t->opts->json, "POST", "/v1/jobs",
				 &reply);
		r = CTL_EXIT_ERROR;
	}
out:
	json_decref(job);
	ctl_reply_done(&reply);
	return r;
}

static int dry_run_all(struct tune *t)
{
	size_t i;
	int r;

	for (i = 0; i < t->n; i++) {
		r = dry_run(t, &t->cands[i]);
		if (r != CTL_EXIT_OK)
			return r;
	}
	return CTL_EXIT_OK;
}

/* --- the sweep -------------------------------------------------------------- */

/* At most --max-inflight, by default one a GPU of the node. */
static int set_max_inflight(struct tune *t)
{
	json_t *devices = NULL;
	int r;

	if (t->opts->max_inflight > 0) {
		t->max_inflight = (size_t)t->opts->max_inflight;
		return CTL_EXIT_OK;
	}
	r = ctl_devices(&t->http, &devices);
	if (r != CTL_EXIT_OK)
		return r;
	t->max_inflight = MAX(json_array_size(devices), (size_t)1);
	json_decref(devices);
	return CTL_EXIT_OK;
}

/*
 * Waits for a slot in the queue: the server's Retry-After where it sends
 * one, otherwise 1 s, doubling on each refusal in a row up to 30 s.
 */
static void back_off(struct tune *t, const struct ctl_reply *reply,
		     const json_t *error)
{
	long delay = reply->retry_after_s ?: t->backoff_s;

	t->backoff_s = MIN(t->backoff_s * 2, BACKOFF_MAX_S);
	t->retry_at = ctl_now_s() + (double)delay;
	if (!t->opts->verbose)
		return;
	ctl_print_text(stderr, "gemmctl: tune: %s: retrying in %ld s",
		       ctl_jstr(error, "code"), delay);
	fputc('\n', stderr);
}

/* Candidate i's Idempotency-Key. */
static void cand_key(const struct tune *t, size_t i, char key[64])
{
	snprintf(key, 64, "gemmctl-tune-%s-%zu", t->sweep_id, i);
}

/* The candidate's POST goes again at t->retry_at, under the same key. */
static void resend_later(struct tune *t, struct cand *c, const char *key)
{
	long delay = 1L << c->lost;

	c->lost++;
	t->retry_at = ctl_now_s() + (double)delay;
	ctl_print_text(stderr,
		       "gemmctl: tune: no answer to POST /v1/jobs; sending it "
		       "again in %ld s with Idempotency-Key %s",
		       delay, key);
	fputc('\n', stderr);
}

/*
 * Submits candidate c.  Returns 0 when it is in flight or has failed, 1
 * when gemmd has no room for it now or its POST got no answer (try again
 * at t->retry_at), -1 when the sweep cannot go on (t->status says how,
 * and it has been reported).
 */
static int submit(struct tune *t, struct cand *c)
{
	struct ctl_reply reply = {};
	json_t *job = NULL, *error = NULL;
	const char *code;
	char key[64];
	int r;

	cand_key(t, (size_t)(c - t->cands), key);
	r = post_job(t, c->kernel, false, key, &reply);
	if (r < 0 && answer_lost(r) && c->lost < RESENDS_MAX) {
		resend_later(t, c, key);
		return 1;
	}
	if (r < 0) {
		t->status = ctl_transport_exit(r);
		return -1;
	}
	if (ctl_status_is_2xx(reply.status))
		job = ctl_reply_job(&reply);
	else
		error = reply_error(&reply);
	code = ctl_jstr(error, "code") ?: "";
	r = 0;
	if (job && ctl_jstr(job, "id")) {
		c->id = strdup(ctl_jstr(job, "id"));
		c->state = c->id ? CAND_INFLIGHT : CAND_FAILED;
		c->why = c->id ? NULL : "out of memory";
		t->inflight += c->id != NULL;
		t->backoff_s = BACKOFF_MIN_S;
	} else if (reply.status == 503 && (!strcmp(code, "queue_full") ||
					   !strcmp(code, "out_of_service"))) {
		back_off(t, &reply, error);
		r = 1;
	} else if (ctl_status_is_2xx(reply.status)) {
		/* as submit says it, not as an error of HTTP status 2xx */
		fprintf(stderr,
			"gemmctl: POST %s/v1/jobs: reply is not a job\n",
			t->http.url);
		t->status = CTL_EXIT_ERROR;
		r = -1;
	} else if (reply.status == 503 || !error) {
		/* no_device: no job will run here, nor a reply that is odd */
		ctl_report_error(&t->http, t->opts->json, "POST", "/v1/jobs",
				 &reply);
		t->status = CTL_EXIT_ERROR;
		r = -1;
	} else {
		c->state = CAND_FAILED;
		c->error = json_incref(error);
	}
	json_decref(job);
	json_decref(error);
	ctl_reply_done(&reply);
	return r;
}

/* Submits candidates while there is room; as submit() returns. */
static int fill(struct tune *t)
{
	int r;

	for (;;) {
		while (t->next < t->n && t->cands[t->next].state != CAND_VALID)
			t->next++;
		if (t->next == t->n || t->inflight >= t->max_inflight ||
		    ctl_now_s() < t->retry_at || interrupted)
			return 0;
		r = submit(t, &t->cands[t->next]);
		if (r)
			return r;
		t->next++;
	}
}

/* GET /v1/jobs/ID, held up to hold_s; records the job once it ended. */
static int poll_job(struct tune *t, struct cand *c, long hold_s)
{
	struct ctl_reply reply = {};
	char *id = ctl_http_escape(c->id), *path = NULL;
	json_t *job = NULL;
	int r;

	if (!id || asprintf(&path, "/v1/jobs/%s?wait=%ld", id, hold_s) < 0) {
		free(id);
		t->status = CTL_EXIT_ERROR;
		return oom();
	}
	r = ctl_http_request(&t->http, "GET", path, NULL, 0, hold_s, &reply);
	free(path);
	free(id);
	if (r < 0 && answer_lost(r) && t->lost_polls < RESENDS_MAX) {
		char what[64];

		/* still in flight: polled again on the next round */
		snprintf(what, sizeof(what), "GET /v1/jobs/%s", c->id);
		pause_lost(t->deadline, 1L << t->lost_polls++, what);
		return 0;
	}
	if (r < 0) {
		t->status = ctl_transport_exit(r);
		return -1;
	}
	t->lost_polls = 0;
	if (ctl_status_is_2xx(reply.status))
		job = ctl_reply_job(&reply);
	if (job && !ctl_job_in_flight(job)) {
		c->job = json_incref(job);
		c->state = CAND_ENDED;
		/*
		 * A state this gemmctl does not know may still hold a GPU
		 * (a newer gemmd's "paused", say): cancelled, best effort,
		 * since it is no longer followed.  gemmd refuses to cancel
		 * a job that really ended (409), which changes nothing.
		 */
		if (!ctl_state_is_final(ctl_jstr(job, "state")))
			ctl_job_delete(&t->http, c->id, NULL);
	} else if (!job) {
		/*
		 * 404: gone (gemmd restarted, or dropped it).  Any other
		 * answer that is not the job: no longer followed, so not
		 * left to hold a GPU or a queue slot past the sweep's
		 * in-flight limit either.
		 */
		c->error = reply_error(&reply);
		c->state = CAND_FAILED;
		if (reply.status != 404)
			ctl_job_delete(&t->http, c->id, NULL);
	}
	t->inflight -= c->state != CAND_INFLIGHT;
	json_decref(job);
	ctl_reply_done(&reply);
	return 0;
}

/*
 * How long to hold on the oldest job: a second while others may end
 * first and free a slot, otherwise until it ends, a retry is due or the
 * sweep's time runs out.
 */
static long hold_time(const struct tune *t)
{
	double now = ctl_now_s(), h = HOLD_MAX_S;

	if (t->inflight > 1)
		return 1;
	if (t->next < t->n && t->retry_at > now)
		h = MIN(h, ceil(t->retry_at - now));
	if (t->deadline > 0)
		h = MIN(h, ceil(t->deadline - now));
	return MAX((long)h, 1L);
}

static int poll_all(struct tune *t)
{
	long hold = hold_time(t);
	size_t i;
	int r;

	for (i = 0; i < t->next && !interrupted; i++) {
		if (t->cands[i].state != CAND_INFLIGHT)
			continue;
		r = poll_job(t, &t->cands[i], hold);
		if (r < 0)
			return r;
		hold = 0;
	}
	return 0;
}

/*
 * The job a POST that got no answer may have made for candidate i,
 * looked up by its key: the job, or NULL where there is none.
 * *ret_known is false where gemmd could not say.  A job is taken only
 * where it carries the key: a gemmd or proxy that dropped the query
 * would answer with every job, and the first, another's, would be
 * cancelled or ranked as this candidate.
 */
static json_t *lost_job(const struct tune *t, const struct ctl_http *http,
			size_t i, bool *ret_known)
{
	struct ctl_reply reply = {};
	json_t *root = NULL, *job;
	char key[64], *path = NULL;
	const char *job_key;

	cand_key(t, i, key);
	if (asprintf(&path, "/v1/jobs?idempotency_key=%s", key) >= 0 &&
	    ctl_http_request(http, "GET", path, NULL, 0, 0, &reply) == 0 &&
	    ctl_status_is_2xx(reply.status) && reply.body)
		root = json_loadb(reply.body, reply.len, 0, NULL);
	*ret_known = json_is_array(json_object_get(root, "jobs"));
	job = json_incref(json_array_get(json_object_get(root, "jobs"), 0));
	json_decref(root);
	ctl_reply_done(&reply);
	free(path);
	job_key = ctl_jstr(job, "idempotency_key");
	if (job && (!ctl_jstr(job, "id") || !job_key || strcmp(job_key, key))) {
		json_decref(job);
		job = NULL;
	}
	return job;
}

static bool cancel_cand(const struct ctl_http *http, struct cand *c,
			const char *why);

/*
 * The candidate waiting to send its POST again, whose first one may have
 * made a job after all: a job that ended is taken as the candidate's, one
 * in flight is cancelled like the others.  How many were.
 */
static size_t cancel_lost(struct tune *t, const struct ctl_http *http,
			  const char *why)
{
	struct cand *c = &t->cands[t->next];
	size_t n = 0;
	json_t *job;
	bool known;

	if (t->next == t->n || c->state != CAND_VALID || !c->lost)
		return 0;
	job = lost_job(t, http, t->next, &known);
	if (!known) {
		c->state = CAND_FAILED;
		c->why = "not run: its POST got no answer, and gemmd could "
			 "not say whether it made the job";
		return 0;
	}
	if (!job)
		return 0;
	c->id = strdup(ctl_jstr(job, "id"));
	if (ctl_state_is_final(ctl_jstr(job, "state"))) {
		c->state = CAND_ENDED;
		c->job = json_incref(job);
	} else if (c->id) {
		n = cancel_cand(http, c, why);
	} else {
		c->state = CAND_FAILED;
		c->why = "out of memory";
	}
	json_decref(job);
	return n;
}

/*
 * Cancels candidate c's job; whether it was.  A job that ended between
 * the last poll and the cancel (gemmd refuses that cancel) is taken as
 * it ended, not listed as cancelled.
 */
static bool cancel_cand(const struct ctl_http *http, struct cand *c,
			const char *why)
{
	int status = ctl_job_delete(http, c->id, &c->job);

	/* Kept with the job as cancelled, so its entry shows that state. */
	if (ctl_status_is_2xx(status)) {
		c->state = CAND_FAILED;
		c->why = why;
		return true;
	}
	/* 409: it ended first; no answer (gemmd hung, say): not asked again */
	c->job = status == 409 ? ctl_job_ended(http, c->id) : NULL;
	c->state = c->job ? CAND_ENDED : CAND_FAILED;
	if (c->job)
		c->why = NULL;
	else if (status == 409)
		c->why = why;
	else /* not listed as cancelled: it may still hold its GPU */
		c->why = "not cancelled (its DELETE failed): it may still run";
	return false;
}

/*
 * Cancels the jobs in flight, whatever stops the sweep; how many.  Each
 * DELETE gets timeout_s at most (0: none).  A job whose cancel got no
 * answer is named: it may hold its GPU until it ends.
 */
static size_t cancel_inflight(struct tune *t, const char *why, long timeout_s)
{
	/* not stopped by the SIGINT that got us here */
	struct ctl_http http = { t->http.url, timeout_s, NULL };
	char id[64];
	size_t i, n = 0;

	for (i = 0; i < t->next; i++) {
		struct cand *c = &t->cands[i];

		if (c->state != CAND_INFLIGHT)
			continue;
		if (cancel_cand(&http, c, why)) {
			n++;
		} else if (c->state == CAND_FAILED) {
			ctl_escape(id, sizeof(id), c->id);
			fprintf(stderr,
				"gemmctl: tune: job %s may still be queued or "
				"running\n",
				id);
		}
	}
	t->inflight = 0;
	return n + cancel_lost(t, &http, why);
}

/* Each DELETE after gemmd stopped answering gets this long at most. */
#define UNREACHABLE_CANCEL_S 5

/*
 * gemmd stopped answering mid-sweep (exit 3).  The jobs in flight are
 * cancelled where a short DELETE still gets through (a poll's answer may
 * be what was lost, not gemmd).  They used to be left without a word.
 */
static void cancel_unreachable(struct tune *t)
{
	long timeout_s = UNREACHABLE_CANCEL_S;
	size_t n;

	if (t->http.timeout_s && t->http.timeout_s < timeout_s)
		timeout_s = t->http.timeout_s;
	n = cancel_inflight(t, "cancelled: gemmd stopped answering", timeout_s);
	fprintf(stderr,
		"gemmctl: tune: gemmd stopped answering: %zu job(s) "
		"cancelled\n",
		n);
}

/* --wait ran out: what has not ended is not run. */
static void give_up(struct tune *t)
{
	size_t i, n;

	n = cancel_inflight(t, "cancelled: --wait ran out", t->http.timeout_s);
	for (i = t->next; i < t->n; i++) {
		if (t->cands[i].state != CAND_VALID)
			continue;
		t->cands[i].state = CAND_FAILED;
		t->cands[i].why = "not run: --wait ran out";
	}
	t->next = t->n;
	fprintf(stderr,
		"gemmctl: tune: gave up after --wait %ld s, %zu job(s) "
		"cancelled\n",
		t->opts->wait_s, n);
}

/* Sleeps until a retry is due, a second at most, SIGINT cutting it short. */
static void nap(const struct tune *t)
{
	double d = MIN(t->retry_at - ctl_now_s(), 1.0);
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(d * 1e9);
	if (d >= 1.0)
		ts = (struct timespec){ .tv_sec = 1 };
	nanosleep(&ts, NULL);
}

static int sweep_loop(struct tune *t)
{
	for (;;) {
		if (interrupted)
			return CTL_EXIT_INTERRUPTED;
		if (t->deadline > 0 && ctl_now_s() >= t->deadline) {
			give_up(t);
			return CTL_EXIT_OK;
		}
		if (fill(t) < 0)
			return t->status;
		if (!t->inflight && t->next == t->n)
			return CTL_EXIT_OK;
		if (!t->inflight)
			nap(t);
		else if (poll_all(t) < 0)
			return t->status;
	}
}

/* 64 random bits: one sweep's keys never meet another's on a gemmd. */
static void make_sweep_id(struct tune *t)
{
	struct timespec ts;
	uint64_t x;

	if (getrandom(&x, sizeof(x), 0) != (ssize_t)sizeof(x)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		x = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		x ^= (uint64_t)getpid() << 40;
	}
	snprintf(t->sweep_id, sizeof(t->sweep_id), "%016llx",
		 (unsigned long long)x);
}

/*
 * Runs the valid candidates, at most max_inflight queued or running at
 * once.  SIGINT, SIGTERM or SIGHUP (once: a second one kills) cancels
 * what is in flight; the exit status is then 128 + the signal, as a
 * shell reports a process the signal ended.
 */
static int sweep(struct tune *t)
{
	struct sigaction sa = { .sa_handler = on_sigint };
	struct sigaction old[ARRAY_SIZE(stop_signals)];
	size_t i, n;
	int r;

	r = set_max_inflight(t);
	if (r != CTL_EXIT_OK)
		return r;
	t->backoff_s = BACKOFF_MIN_S;
	if (t->opts->verbose)
		fprintf(stderr,
			"gemmctl: tune: candidate N is sent with "
			"Idempotency-Key gemmctl-tune-%s-N\n",
			t->sweep_id);
	if (t->opts->wait_s)
		t->deadline = ctl_now_s() + (double)t->opts->wait_s;
	interrupted = 0;
	/* once: a second signal kills, cancelling nothing */
	sa.sa_flags = (int)SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(stop_signals); i++) {
		/* ignored, as SIGINT in a script's background job: stays so */
		sigaction(stop_signals[i], NULL, &old[i]);
		if (old[i].sa_handler != SIG_IGN)
			sigaction(stop_signals[i], &sa, NULL);
	}
	t->http.stop = &interrupted;

	r = sweep_loop(t);
	if (r == CTL_EXIT_INTERRUPTED || interrupted) {
		n = cancel_inflight(t, "cancelled: interrupted",
				    t->http.timeout_s);
		fprintf(stderr, "gemmctl: interrupted: %zu job(s) cancelled\n",
			n);
		r = interrupted ? 128 + interrupted : CTL_EXIT_INTERRUPTED;
	} else if (r == CTL_EXIT_UNREACHABLE) {
		cancel_unreachable(t);
	} else if (r != CTL_EXIT_OK) {
		cancel_inflight(t, "cancelled", t->http.timeout_s);
	}
	t->http.stop = NULL;
	for (i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &old[i], NULL);
	return r;
}

/* --- results ---------------------------------------------------------------- */

static json_t *result_member(const json_t *job, const char *key)
{
	return json_object_get(json_object_get(job, "result"), key);
}

static double tflops(const struct cand *c)
{
	const json_t *v = result_member(c->job, "tflops");

	return json_is_number(v) ? json_number_value(v) : -1.0;
}

/*
 * A rate that was measured: a number, finite and not negative.  A job
 * that ended done without one (an odd or broken gemmd) has nothing to
 * rank it by: it was ranked, last or anywhere, made tune exit 0 where
 * nothing was measured, and its entry, "tflops": null, made merge
 * refuse the document as not tune's.
 */
static bool has_rate(const struct cand *c)
{
	double v = tflops(c);

	return isfinite(v) && v >= 0;
}

static bool ranked(const struct cand *c)
{
	return c->state == CAND_ENDED && ctl_job_succeeded(c->job) &&
	       has_rate(c);
}

/* Fastest first; the catalog's order among equals. */
static int by_tflops(const void *a, const void *b)
{
	const struct cand *x = *(const struct cand *const *)a;
	const struct cand *y = *(const struct cand *const *)b;
	double dx = tflops(x), dy = tflops(y);

	if (dx < dy)
		return 1;
	if (dx > dy)
		return -1;
	return x < y ? -1 : x > y;
}

/* The plan that ran, or the dry run's where the job has none. */
static json_t *plan_of(const struct cand *c)
{
	json_t *plan = json_object_get(c->job, "plan");

	return json_is_object(plan) ? plan : c->plan;
}

static json_t *ranked_entry(const struct cand *c, size_t rank)
{
	return json_pack(
		"{s:I, s:O, s:s, s:s?, s:O?, s:O?, s:s, s:O?, s:O?, s:O?, s:O?}",
		"rank", (json_int_t)rank, "kernel", c->kernel, "id", c->id,
		"state", ctl_jstr(c->job, "state"), "tflops",
		result_member(c->job, "tflops"), "median_us",
		json_object_get(result_member(c->job, "timing"), "median_us"),
		"verify", ctl_job_verdict(c->job), "speedup_vs_baseline",
		result_member(c->job, "speedup_vs_baseline"), "launch",
		result_member(c->job, "launch"), "plan", plan_of(c), "device",
		json_object_get(c->job, "device"));
}

/* Why c did not make the ranking, for people. */
static char *failure_text(const struct cand *c)
{
	const json_t *v = result_member(c->job, "verify");
	const char *reason = ctl_jstr(c->job, "reason");
	const char *state = ctl_jstr(c->job, "state");
	char *text = NULL;

	if (c->error)
		return ctl_error_text(c->error);
	if (c->why)
		return strdup(c->why);
	if (reason)
		return strdup(reason);
	if (!state)
		return strdup("ended in no state");
	if (strcmp(state, "done")) {
		if (asprintf(&text, "ended %s", state) < 0)
			return NULL;
		return text;
	}
	if (ctl_job_succeeded(c->job))
		return strdup("no rate: result.tflops is not a finite, "
			      "non-negative number");
	if (asprintf(&text,
		     "verification failed: %" JSON_INTEGER_FORMAT " mismatches",
		     json_integer_value(json_object_get(v, "mismatches"))) < 0)
		return NULL;
	return text;
}

static json_t *failed_entry(const struct cand *c)
{
	char *why = failure_text(c);
	json_t *e;

	e = json_pack("{s:O, s:s?, s:s?, s:s?, s:O?, s:O?, s:O?}", "kernel",
		      c->kernel, "id", c->id, "state",
		      ctl_jstr(c->job, "state"), "reason", why, "error",
		      c->error, "plan", plan_of(c), "device",
		      json_object_get(c->job, "device"));
	free(why);
	return e;
}

static int append(json_t *arr, json_t *e)
{
	return e ? json_array_append_new(arr, e) : -ENOMEM;
}

/* The ranked entries (at most --top), best first, and the failed ones. */
static int results(const struct tune *t, json_t *ranking, json_t *failed)
{
	const struct cand **order;
	size_t i, n = 0;
	int r = 0;

	order = calloc(t->n + 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		if (ranked(&t->cands[i]))
			order[n++] = &t->cands[i];
		else if (t->cands[i].state == CAND_ENDED ||
			 t->cands[i].state == CAND_FAILED)
			r |= append(failed, failed_entry(&t->cands[i]));
	}
	qsort(order, n, sizeof(*order), by_tflops);
	if (t->opts->top)
		n = MIN(n, (size_t)t->opts->top);
	for (i = 0; i < n; i++)
		r |= append(ranking, ranked_entry(order[i], i + 1));
	free(order);
	return r ? -ENOMEM : 0;
}

/* The dry runs' entries: valid ones with their plans, refused with why. */
static int plans(const struct tune *t, json_t *valid, json_t *refused)
{
	const struct cand *c;
	size_t i;
	int r = 0;

	for (i = 0; i < t->n; i++) {
		c = &t->cands[i];
		if (c->state == CAND_REFUSED)
			r |= append(refused,
				    json_pack("{s:O, s:O?}", "kernel",
					      c->kernel, "error", c->error));
		else if (t->opts->dry_run)
			r |= append(valid,
				    json_pack("{s:O, s:O?}", "kernel",
					      c->kernel, "plan", c->plan));
	}
	return r ? -ENOMEM : 0;
}

static void print_summary(const struct tune *t, const json_t *refused,
			  const json_t *failed)
{
	size_t nrefused = json_array_size(refused);
	size_t nvalid = t->n - nrefused;

	printf("%zu candidates: %zu refused by gemmd's planner, %zu valid",
	       t->n, nrefused, nvalid);
	if (!t->opts->dry_run)
		printf(": %zu passed, %zu failed",
		       nvalid - json_array_size(failed),
		       json_array_size(failed));
	putchar('\n');
}

static int print_text(const struct tune *t, const json_t *valid,
		      const json_t *refused, const json_t *ranking,
		      const json_t *failed)
{
	const json_t *baseline = json_object_get(t->spec, "baseline");
	bool speedup = baseline && !json_is_null(baseline);
	int r = 0;

	print_summary(t, refused, failed);
	if (t->opts->dry_run && json_array_size(valid))
		r = ctl_print_tune_plans(valid);
	else if (!t->opts->dry_run && json_array_size(ranking))
		r = ctl_print_tune_ranking(ranking, speedup);
	if (!r && json_array_size(failed)) {
		fputs("\nfailed:\n", stdout);
		r = ctl_print_tune_failed(failed);
	}
	if (t->opts->verbose)
		ctl_print_tune_refused(refused);
	return r;
}

/* Why no candidate made it, for the exit status 1. */
static const char *none_why(const struct tune *t)
{
	size_t i;

	if (!t->n)
		return "no kernel of gemmd's catalog fits the job and the "
		       "knobs it fixes";
	for (i = 0; i < t->n; i++)
		if (t->cands[i].state != CAND_REFUSED)
			break;
	if (i == t->n)
		return "gemmd's planner refused every candidate (--verbose "
		       "says why)";
	return "no candidate ran and passed";
}

/* The JSON document, or the tables; the exit status. */
static int report(const struct tune *t)
{
	json_t *valid = json_array(), *refused = json_array();
	json_t *ranking = json_array(), *failed = json_array(), *doc = NULL;
	const json_t *best;
	bool any;
	int r = -ENOMEM;

	if (!valid || !refused || !ranking || !failed ||
	    plans(t, valid, refused) < 0 || results(t, ranking, failed) < 0)
		goto out;
	any = json_array_size(t->opts->dry_run ? valid : ranking) > 0;
	if (!t->opts->json) {
		r = print_text(t, valid, refused, ranking, failed);
		goto out;
	}
	best = json_object_get(json_array_get(ranking, 0), "kernel");
	doc = json_pack("{s:O, s:s?, s:O?, s:I, s:O, s:O, s:O, s:O?}", "base",
			t->base, "sweep", t->sweep_id[0] ? t->sweep_id : NULL,
			"node", t->node, "candidates", (json_int_t)t->n,
			"refused", refused, "results",
			t->opts->dry_run ? valid : ranking, "failed", failed,
			"best", best);
	r = ctl_print_doc(doc);
out:
	json_decref(doc);
	json_decref(valid);
	json_decref(refused);
	json_decref(ranking);
	json_decref(failed);
	if (r < 0) {
		if (r == -ENOMEM)
			oom();
		return CTL_EXIT_ERROR;
	}
	if (!any)
		fprintf(stderr, "gemmctl: tune: %s\n", none_why(t));
	return any ? CTL_EXIT_OK : CTL_EXIT_ERROR;
}

/* --- entry ---------------------------------------------------------------- */

static void tune_done(struct tune *t)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		json_decref(t->cands[i].kernel);
		json_decref(t->cands[i].plan);
		json_decref(t->cands[i].error);
		json_decref(t->cands[i].job);
		free(t->cands[i].id);
	}
	free(t->cands);
	json_decref(t->spec);
	json_decref(t->node);
	json_decref(t->base);
}

static bool any_valid(const struct tune *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->cands[i].state == CAND_VALID)
			return true;
	return false;
}

int ctl_tune(const struct ctl_http *http, const struct ctl_tune_opts *opts,
	     json_t *base)
{
	struct tune t = { .http = *http,
			  .opts = opts,
			  .base = json_incref(base),
			  .fixed = json_object_get(base, "kernel") };
	int r;

	r = check_base(&t);
	if (r == CTL_EXIT_OK)
		r = enumerate(&t);
	if (r == CTL_EXIT_OK)
		r = dry_run_all(&t);
	/*
	 * Every tune that is not a dry run has an id, also where gemmd's
	 * planner refused every candidate: merge takes a null one for a dry
	 * run, and refused the whole fleet's merge for that node.
	 */
	if (!opts->dry_run)
		make_sweep_id(&t);
	if (r == CTL_EXIT_OK && !opts->dry_run && any_valid(&t))
		r = sweep(&t);
	if (r == CTL_EXIT_OK)
		r = report(&t);
	tune_done(&t);
	return r;
}
