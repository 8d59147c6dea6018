/* SPDX-License-Identifier: MIT */
/*
 * ctl-http.h - gemmctl's side of the HTTP API: one blocking request at a
 * time through libcurl.
 */
#pragma once

#include <stddef.h>

struct ctl_http {
	const char *url; /* base URL, no trailing slash */
	long timeout_s; /* whole request; 0: no limit */
};

struct ctl_reply {
	long status; /* HTTP status code */
	char *body; /* NUL-terminated, NULL when empty */
	size_t len;
};

/*
 * Sends method to url + path, with body when it is not NULL, and waits up to
 * timeout_s + extra_s for the whole reply.  A reply of any HTTP status is a
 * success.  On failure the reason has been printed and the return value is
 * -EINVAL (the URL is unusable: malformed, or not http or https), -ENOMEM,
 * -EFBIG (reply too large) or another negative errno meaning that gemmd
 * could not be reached or did not answer in HTTP.
 */
int ctl_http_request(const struct ctl_http *h, const char *method,
		     const char *path, const char *body, size_t len,
		     long extra_s, struct ctl_reply *ret);
void ctl_reply_done(struct ctl_reply *r);

/* Percent-encodes s for a path segment or query value; NULL on OOM. */
char *ctl_http_escape(const char *s);
