/* SPDX-License-Identifier: MIT */
/*
 * ctl-http.h - gemmctl's side of the HTTP API: one blocking request at a
 * time through libcurl.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Scripts tell these apart, so they are part of the interface. */
enum ctl_exit {
	CTL_EXIT_OK = 0,
	CTL_EXIT_ERROR = 1, /* gemmd answered with an error, or a local one */
	CTL_EXIT_USAGE = 2,
	CTL_EXIT_UNREACHABLE = 3,
	CTL_EXIT_JOB_FAILED = 4, /* submit --wait: the job did not succeed */
	CTL_EXIT_INTERRUPTED = 130, /* tune: SIGINT, as a shell reports it */
};

struct ctl_http {
	const char *url; /* base URL, no trailing slash */
	long timeout_s; /* whole request; 0: no limit */
	/* When set and it becomes non-zero, a request gives up (-EINTR). */
	volatile sig_atomic_t *stop;
	/* Sent as the Idempotency-Key header when set (idempotency_key_ok()). */
	const char *idempotency_key;
};

struct ctl_reply {
	long status; /* HTTP status code */
	char *body; /* NUL-terminated, NULL when empty */
	size_t len;
	long retry_after_s; /* the Retry-After header; 0 without one */
};

/*
 * Sends method to url + path, with body when it is not NULL, and waits up to
 * timeout_s + extra_s for the whole reply.  A reply of any HTTP status is a
 * success.  On failure the reason has been printed and the return value is
 * -EINVAL (the URL is unusable: malformed, or not http or https), -ENOMEM,
 * -EFBIG (reply too large), -EINTR (h->stop was set: not reported) or
 * another negative errno meaning that gemmd could not be reached or did
 * not answer in HTTP.
 */
int ctl_http_request(const struct ctl_http *h, const char *method,
		     const char *path, const char *body, size_t len,
		     long extra_s, struct ctl_reply *ret);
void ctl_reply_done(struct ctl_reply *r);

/* CLOCK_MONOTONIC in seconds: deadlines and back-off of tune and gpus. */
double ctl_now_s(void);

/* What a reply with a job must hold: its "id". */
extern const struct ctl_shape ctl_job_shape;

/*
 * GET /v1/devices, unprinted: *ret the array of devices (a new
 * reference).  Returns an exit status; a failure has been reported.
 */
int ctl_devices(const struct ctl_http *h, json_t **ret);

/*
 * DELETE /v1/jobs/ID, best effort, unreported: gemmd's HTTP status (2xx
 * cancelled, 409 the job had already ended), or 0 where none came.  With
 * ret, a 2xx's job as it was cancelled goes there (NULL if none came).
 */
int ctl_job_delete(const struct ctl_http *h, const char *job_id, json_t **ret);
/* Whether an HTTP status is a success (2xx). */
bool ctl_status_is_2xx(long status);
/* The reply's body as a job, an object with an "id"; NULL if not one. */
json_t *ctl_reply_job(const struct ctl_reply *reply);
/*
 * GET /v1/jobs/ID, unreported: the job where it has ended (what a cancel
 * refused with 409 is told by), NULL otherwise.
 */
json_t *ctl_job_ended(const struct ctl_http *h, const char *job_id);

/* Percent-encodes s for a path segment or query value; NULL on OOM. */
char *ctl_http_escape(const char *s);

/* The exit status for a failed ctl_http_request(). */
int ctl_transport_exit(int r);

/*
 * What a 2xx reply must hold: an object with member key of the given
 * type.  Anything else, an empty body included, would print as an empty
 * list or nothing at all and pass for success.
 */
struct ctl_shape {
	const char *what; /* for the message: "reply is not <what>" */
	const char *key;
	json_type type;
	bool empty_ok; /* an empty 202 or 204 will do (cancel) */
};

/*
 * Prints gemmd's error reply to stderr as "gemmctl: code: message (field:
 * f)", and with json its body to stdout as well.
 */
void ctl_report_error(const struct ctl_http *h, bool json, const char *method,
		      const char *path, const struct ctl_reply *reply);

/*
 * One API call.  On a 2xx reply of the shape wanted, *ret_root holds the
 * parsed body (NULL for an empty one that want allows), and with json it
 * has been printed.  Returns an exit status (enum ctl_exit); anything that
 * went wrong has been reported.
 */
int ctl_call(const struct ctl_http *h, bool json, const char *method,
	     const char *path, const char *body, size_t len, long extra_s,
	     const struct ctl_shape *want, json_t **ret_root);
