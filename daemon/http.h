/* SPDX-License-Identifier: MIT */
/*
 * http.h - the HTTP server: libmicrohttpd driven from the sd-event loop.
 *
 * MHD runs without threads of its own: its epoll fd sits in our event loop
 * and MHD_run() is called when it is readable or its timeout expires.
 * A handler is called once a request's body is complete; it must answer
 * (http_respond_*) or suspend the request, which is then handled again
 * after http_request_resume().  Bodies over the limit get a 413 without
 * being buffered; a transfer coding other than chunked gets a 501 before
 * any of the body is read.
 */
#pragma once

#include <stdbool.h>
#include <jansson.h>
#include <systemd/sd-event.h>

#include "util.h"

struct http_server;
struct http_request;

typedef void (*http_handler_fn)(struct http_request *req, void *userdata);

struct http_config {
	const char *listen; /* HOST:PORT, used when listen_fd < 0 */
	int listen_fd; /* an inherited (socket-activated) socket */
	unsigned int max_body;
	unsigned int max_connections;
	unsigned int per_ip_connections;
	unsigned int connection_timeout;
};

int http_server_new(sd_event *event, const struct http_config *cfg,
		    http_handler_fn handler, void *userdata,
		    struct http_server **ret);
struct http_server *http_server_free(struct http_server *s);
/*
 * Runs MHD outside the event loop until every request begun has been
 * answered, also those pipelined behind them, or timeout_ms has passed:
 * for the held requests at shutdown.
 */
void http_server_flush(struct http_server *s, unsigned int timeout_ms);
/* "127.0.0.1:8090": the address actually bound. */
const char *http_server_address(const struct http_server *s);

const char *http_request_method(const struct http_request *req);
const char *http_request_path(const struct http_request *req);
const char *http_request_query(const struct http_request *req, const char *key);
/* The first query parameter not in known (NULL-terminated), or NULL. */
const char *http_request_unknown_param(const struct http_request *req,
				       const char *const *known);
/* A request header's value (names match in any case), or NULL. */
const char *http_request_header(const struct http_request *req,
				const char *name);
const char *http_request_body(const struct http_request *req, size_t *len);
bool http_request_resumed(const struct http_request *req);

/* Per-request state for a suspended handler; freed with the request. */
void http_request_set_data(struct http_request *req, void *data,
			   void (*destroy)(void *));
void *http_request_get_data(const struct http_request *req);

void http_request_suspend(struct http_request *req);
void http_request_resume(struct http_request *req);

/*
 * Respond with JSON (the reference is taken) and optional extra header.
 * A NULL body, from a json_pack() that failed, answers a fixed 500 error.
 */
int http_respond_json(struct http_request *req, unsigned int status,
		      json_t *body, const char *header, const char *value);
int http_respond_error(struct http_request *req, const struct gemmd_error *e);
/* Respond with text (malloc()ed, taken) of this Content-Type. */
int http_respond_text(struct http_request *req, unsigned int status,
		      const char *type, char *text);
/*
 * The same, telling the client when to try again: retry_sec (not 0) as a
 * Retry-After header and as "retry_after_sec" in the error object.  0
 * sends neither, where retrying cannot help or gemmd cannot say when.
 */
int http_respond_error_retry(struct http_request *req,
			     const struct gemmd_error *e,
			     unsigned int retry_sec);
/* 405 method_not_allowed, with allow ("GET, HEAD") as the Allow header. */
int http_respond_not_allowed(struct http_request *req, const char *allow);
int http_respond_errorf(struct http_request *req, unsigned int status,
			const char *code, const char *field, const char *fmt,
			...) _printf_(5, 6);
