// SPDX-License-Identifier: MIT
/*
 * http.c - libmicrohttpd inside sd-event.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "http.h"
#include "log.h"

#define LISTEN_BACKLOG 512
/*
 * Each connection's memory pool, for its request line, headers and query
 * parameters: at MHD's 32 KiB a URL of some 500 parameters (4 KB) ran
 * it out, and MHD closed the connection without an answer.  64 KiB takes
 * some 900 (past that the same happens: MHD's), and a 100 KB URL or
 * header still gets MHD's 414 or 431.
 */
#define HTTP_CONNECTION_MEMORY (64u * 1024)
/* Runs of MHD with no request open that end a flush (http_server_flush()). */
#define HTTP_FLUSH_QUIET_RUNS 3

struct http_server {
	struct MHD_Daemon *mhd;
	sd_event *event;
	sd_event_source *io, *timer;
	http_handler_fn handler;
	void *userdata;
	unsigned int max_body;
	unsigned int n_open; /* requests begun and not yet answered */
	char address[128];
};

struct http_request {
	struct http_server *srv;
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
	char *body;
	size_t len;
	bool too_large;
	bool no_memory; /* the body could not be kept (append_body()) */
	uint64_t received; /* body bytes, kept or not */
	bool nul_path; /* the path held "%00" (on_uri()) */
	bool started;
	bool responded;
	bool suspended;
	bool resumed;
	sd_event_source *hangup; /* watches that socket while suspended */
	void *data;
	void (*destroy)(void *);
};

static void http_arm_timer(struct http_server *s)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t now;

	if (MHD_get_timeout(s->mhd, &ms) != MHD_YES) {
		sd_event_source_set_enabled(s->timer, SD_EVENT_OFF);
		return;
	}
	sd_event_now(s->event, CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(s->timer, now + ms * 1000);
	sd_event_source_set_enabled(s->timer, SD_EVENT_ONESHOT);
}

static void http_run(struct http_server *s)
{
	MHD_run(s->mhd);
	http_arm_timer(s);
}

static int on_mhd_io(sd_event_source *src, int fd, uint32_t revents,
		     void *userdata)
{
	http_run(userdata);
	return 0;
}

static int on_mhd_timer(sd_event_source *src, uint64_t usec, void *userdata)
{
	http_run(userdata);
	return 0;
}

const char *http_request_method(const struct http_request *req)
{
	return req->method;
}

const char *http_request_path(const struct http_request *req)
{
	return req->path;
}

const char *http_request_query(const struct http_request *req, const char *key)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND,
					   key);
}

struct param_scan {
	const char *const *known;
	const char *unknown;
};

/*
 * An empty segment of a query ("?&wait=1", "?a=1&&b=2") names nothing:
 * MHD hands it on as a parameter "" without a value, where it drops one
 * at the end ("?wait=1&").  It is no parameter, wherever it is.
 */
static bool empty_segment(const char *key, const char *value)
{
	return !*key && !value;
}

static enum MHD_Result scan_param(void *cls, enum MHD_ValueKind kind,
				  const char *key, const char *value)
{
	struct param_scan *s = cls;
	const char *const *k;

	if (empty_segment(key, value))
		return MHD_YES;
	for (k = s->known; *k; k++)
		if (!strcmp(*k, key))
			return MHD_YES;
	s->unknown = key;
	return MHD_NO;
}

const char *http_request_unknown_param(const struct http_request *req,
				       const char *const *known)
{
	struct param_scan s = { .known = known };

	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, scan_param,
				  &s);
	return s.unknown;
}

const char *http_request_header(const struct http_request *req,
				const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

const char *http_request_body(const struct http_request *req, size_t *len)
{
	*len = req->len;
	return req->body ? req->body : "";
}

bool http_request_resumed(const struct http_request *req)
{
	return req->resumed;
}

void http_request_set_data(struct http_request *req, void *data,
			   void (*destroy)(void *))
{
	if (req->destroy)
		req->destroy(req->data);
	req->data = data;
	req->destroy = destroy;
}

void *http_request_get_data(const struct http_request *req)
{
	return req->data;
}

/*
 * MHD does not poll a suspended connection, so a client that gives up on a
 * held request would keep its connection slot until the request is
 * resumed: a few hundred abandoned ?wait calls locked every client out
 * until their jobs ended.  So watch the socket ourselves while suspended.
 * On hangup the request is resumed early and answered as if its wait had
 * run out; sending that answer is how MHD finds the socket closed and
 * frees the slot.
 */
static int on_hangup(sd_event_source *src, int fd, uint32_t revents,
		     void *userdata)
{
	http_request_resume(userdata);
	return 0;
}

static void watch_hangup(struct http_request *req)
{
	const union MHD_ConnectionInfo *info;
	int r;

	info = MHD_get_connection_info(req->conn,
				       MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info)
		return;
	r = sd_event_add_io(req->srv->event, &req->hangup, info->connect_fd,
			    EPOLLRDHUP, on_hangup, req);
	if (r < 0)
		log_warning("http: cannot watch a held request's socket: %s",
			    strerror(-r));
}

void http_request_suspend(struct http_request *req)
{
	if (req->suspended)
		return;
	req->suspended = true;
	MHD_suspend_connection(req->conn);
	watch_hangup(req);
}

void http_request_resume(struct http_request *req)
{
	if (!req->suspended)
		return;
	req->hangup = sd_event_source_disable_unref(req->hangup);
	req->suspended = false;
	req->resumed = true;
	MHD_resume_connection(req->conn);
	/*
	 * In external-epoll mode MHD 0.9.x does not wake its epoll fd for a
	 * resume, so run it on the next loop iteration ourselves.
	 */
	sd_event_source_set_time(req->srv->timer, 1);
	sd_event_source_set_enabled(req->srv->timer, SD_EVENT_ONESHOT);
}

/*
 * Sent when an answer cannot be encoded: text that is not valid UTF-8 is
 * kept out of every answer (utf8_copy()), so this is out of memory, but the
 * client still gets JSON.
 */
static const char unencodable[] = "{\n"
				  "  \"error\": {\n"
				  "    \"code\": \"internal\",\n"
				  "    \"message\": \"the answer could not be "
				  "encoded\",\n"
				  "    \"field\": null\n"
				  "  }\n"
				  "}\n";

static int respond_typed(struct http_request *req, unsigned int status,
			 const char *type, char *text,
			 enum MHD_ResponseMemoryMode mode, const char *header,
			 const char *value)
{
	struct MHD_Response *resp;
	int r;

	resp = MHD_create_response_from_buffer(strlen(text), text, mode);
	if (!resp) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(text);
		return -ENOMEM;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	if (header)
		MHD_add_response_header(resp, header, value);
	r = MHD_queue_response(req->conn, status, resp) == MHD_YES ? 0 : -EIO;
	MHD_destroy_response(resp);
	req->responded = true;
	return r;
}

static int respond_text(struct http_request *req, unsigned int status,
			char *text, enum MHD_ResponseMemoryMode mode,
			const char *header, const char *value)
{
	return respond_typed(req, status, "application/json", text, mode,
			     header, value);
}

int http_respond_text(struct http_request *req, unsigned int status,
		      const char *type, char *text)
{
	return respond_typed(req, status, type, text, MHD_RESPMEM_MUST_FREE,
			     NULL, NULL);
}

/*
 * body as text, with a newline that keeps curl output readable.  Reals
 * with 15 significant digits (DBL_DIG): a value sent with at most that
 * many comes back as it was written, where jansson's 17 showed an alpha
 * of 0.1 as 0.10000000000000001.
 */
static char *json_text(const json_t *body)
{
	char *text, *n;

	text = body ? json_dumps(body, JSON_INDENT(2) | JSON_ENSURE_ASCII |
					       JSON_REAL_PRECISION(15)) :
		      NULL;
	if (!text)
		return NULL;
	n = realloc(text, strlen(text) + 2);
	if (!n) {
		free(text);
		return NULL;
	}
	return strcat(n, "\n");
}

int http_respond_json(struct http_request *req, unsigned int status,
		      json_t *body, const char *header, const char *value)
{
	char *text = json_text(body);

	json_decref(body);
	if (!text) {
		log_error("http: cannot encode the answer to %s %s",
			  req->method, req->path);
		return respond_text(req, 500, (char *)unencodable,
				    MHD_RESPMEM_PERSISTENT, NULL, NULL);
	}
	return respond_text(req, status, text, MHD_RESPMEM_MUST_FREE, header,
			    value);
}

/*
 * The error object, with "retry_after_sec" when retry_sec is not 0.  A
 * failed json_pack() gives NULL: http_respond_json() answers for it.
 */
static json_t *error_json(const struct gemmd_error *e, unsigned int retry_sec)
{
	json_t *body, *retry = retry_sec ? json_integer(retry_sec) : NULL;

	body = json_pack("{s:{s:s, s:s, s:s?, s:o*}}", "error", "code", e->code,
			 "message", e->message, "field",
			 e->field[0] ? e->field : NULL, "retry_after_sec",
			 retry);
	/* Left out, the member would tell the client to retry at once. */
	if (retry_sec && !retry) {
		json_decref(body);
		return NULL;
	}
	return body;
}

static int respond_error(struct http_request *req, const struct gemmd_error *e,
			 const char *header, const char *value)
{
	return http_respond_json(req, e->status, error_json(e, 0), header,
				 value);
}

int http_respond_error(struct http_request *req, const struct gemmd_error *e)
{
	return http_respond_error_retry(req, e, 0);
}

int http_respond_error_retry(struct http_request *req,
			     const struct gemmd_error *e,
			     unsigned int retry_sec)
{
	char sec[16];

	if (!retry_sec)
		return respond_error(req, e, NULL, NULL);
	/* RFC 9110 10.2.3: delta-seconds, the body's number. */
	snprintf(sec, sizeof(sec), "%u", retry_sec);
	return http_respond_json(req, e->status, error_json(e, retry_sec),
				 MHD_HTTP_HEADER_RETRY_AFTER, sec);
}

int http_respond_not_allowed(struct http_request *req, const char *allow)
{
	struct gemmd_error e;

	gemmd_error_set(&e, 405, "method_not_allowed", NULL,
			"%s is not allowed here (%s)", req->method, allow);
	/* RFC 9110 15.5.6: a 405 must say what is allowed. */
	return respond_error(req, &e, MHD_HTTP_HEADER_ALLOW, allow);
}

int http_respond_errorf(struct http_request *req, unsigned int status,
			const char *code, const char *field, const char *fmt,
			...)
{
	struct gemmd_error e;
	va_list ap;

	va_start(ap, fmt);
	gemmd_error_setv(&e, status, code, field, fmt, ap);
	va_end(ap);
	return http_respond_error(req, &e);
}

static bool declared_too_large(struct http_request *req)
{
	const char *cl = MHD_lookup_connection_value(
		req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return cl && strtoull(cl, NULL, 10) > req->srv->max_body;
}

/*
 * MHD decodes one transfer coding: a Transfer-Encoding of exactly
 * "chunked", in any case.  Under any other ("gzip", "identity", "gzip,
 * chunked") it takes the body to run until the client closes, so a client
 * waiting for its answer got none until connection-timeout (60 s) closed
 * the connection, and then an empty reply.  RFC 9112 6.1: a server that
 * does not understand a transfer coding should answer 501 and close.  The
 * test is MHD's own, on the value MHD reads, so whatever MHD decodes still
 * goes through.
 */
static const char *unknown_coding(struct http_request *req)
{
	const char *te = MHD_lookup_connection_value(
		req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	return te && strcasecmp(te, "chunked") ? te : NULL;
}

/*
 * What MHD's C strings would hide: a header or query value with a NUL in
 * it (MHD hands on "k1" for "k1\0other"), a query parameter without a
 * value ("?state", which MHD gives as NULL, as if not sent), and an
 * Idempotency-Key sent twice (MHD hands on the first).  The first such
 * thing found is kept in e.
 *
 * And what MHD lets through that RFC 9112 has a server refuse, as the
 * ways a request is read differently by two servers in a row (request
 * smuggling): two Host headers, two different Content-Lengths (MHD reads
 * the first), both Content-Length and Transfer-Encoding (MHD goes by the
 * second), an HTTP/1.1 request without a Host (3.2, 6.1, 6.3),
 * whitespace before a header's colon (5.1) and a bare CR (2.2).
 */
struct value_check {
	struct gemmd_error e;
	unsigned int keys;
	unsigned int hosts;
	unsigned int codings; /* Transfer-Encoding lines */
	const char *length;
	const char *params[8]; /* query parameters seen, for repeats */
	unsigned int n_params;
};

/*
 * A query parameter sent twice ("?wait=1&wait=zz") is refused: MHD hands
 * on the first, and the second went unread, though it may be what the
 * client meant.  Any more than the array holds are not checked: gemmd
 * reads four at most, and a request with more has unknown ones.
 */
static enum MHD_Result check_param(struct value_check *v, const char *key)
{
	unsigned int i;

	for (i = 0; i < v->n_params; i++) {
		if (strcmp(v->params[i], key))
			continue;
		gemmd_error_set(&v->e, 400, "invalid_value", key,
				"parameter %s sent more than once", key);
		return MHD_NO;
	}
	if (v->n_params < ARRAY_SIZE(v->params))
		v->params[v->n_params++] = key;
	return MHD_YES;
}

/*
 * Two Transfer-Encoding lines mean what one line with both values does
 * (RFC 9110 5.3), which MHD would not decode, but MHD reads the first
 * alone: "chunked" then "gzip" was de-chunked here while a proxy in
 * front, joining them, read the body another way.
 */
static enum MHD_Result check_coding(struct value_check *v)
{
	if (++v->codings == 1)
		return MHD_YES;
	gemmd_error_set(&v->e, 400, "invalid_value",
			MHD_HTTP_HEADER_TRANSFER_ENCODING,
			"Transfer-Encoding sent more than once: send one, "
			"chunked");
	return MHD_NO;
}

/* A Content-Length sent again is taken only with the same value. */
static enum MHD_Result check_length(struct value_check *v, const char *value)
{
	if (!v->length) {
		v->length = value ? value : "";
		return MHD_YES;
	}
	if (value && !strcmp(v->length, value))
		return MHD_YES;
	gemmd_error_set(&v->e, 400, "invalid_value", "Content-Length",
			"Content-Length sent more than once, with different "
			"values");
	return MHD_NO;
}

/*
 * Whitespace between a header's name and its colon: RFC 9112 5.1 has a
 * server refuse it.  MHD keeps it as part of the name, so "Content-Length
 * : 5" was no Content-Length here and its body was read as the next
 * request on the connection, while a proxy in front that took the header
 * had sent it as this one's body.
 */
static enum MHD_Result check_name(struct value_check *v, const char *key,
				  size_t key_size)
{
	char name[sizeof(v->e.field)];
	size_t n = key_size;

	while (n && (key[n - 1] == ' ' || key[n - 1] == '\t'))
		n--;
	if (n == key_size)
		return MHD_YES;
	snprintf(name, sizeof(name), "%.*s", (int)n, key);
	gemmd_error_set(&v->e, 400, "invalid_value", name,
			"whitespace between header %s and its colon", name);
	return MHD_NO;
}

/*
 * A bare CR in a header line: RFC 9112 2.2 has a recipient refuse it or
 * read it as a space.  MHD kept it in the value, so "X-A: a\rContent-
 * Length: 53" was no Content-Length here and its body was read as the
 * next request, while a proxy in front that ends lines at a CR had sent
 * it as this one's body.
 */
static enum MHD_Result check_cr(struct value_check *v, const char *key,
				size_t key_size, const char *value,
				size_t value_size)
{
	if (!memchr(key, '\r', key_size) &&
	    !(value && memchr(value, '\r', value_size)))
		return MHD_YES;
	gemmd_error_set(&v->e, 400, "invalid_value", key,
			"header %s holds a bare CR", key);
	return MHD_NO;
}

static enum MHD_Result check_value(void *cls, enum MHD_ValueKind kind,
				   const char *key, size_t key_size,
				   const char *value, size_t value_size)
{
	struct value_check *v = cls;
	const char *what = kind == MHD_HEADER_KIND ? "header" : "parameter";

	if (strlen(key) != key_size || (value && strlen(value) != value_size)) {
		gemmd_error_set(&v->e, 400, "null_byte", key,
				"%s %s holds a NUL byte", what, key);
		return MHD_NO;
	}
	if (kind == MHD_HEADER_KIND && check_name(v, key, key_size) == MHD_NO)
		return MHD_NO;
	if (kind == MHD_HEADER_KIND &&
	    check_cr(v, key, key_size, value, value_size) == MHD_NO)
		return MHD_NO;
	if (kind == MHD_GET_ARGUMENT_KIND && empty_segment(key, value))
		return MHD_YES;
	if (kind == MHD_GET_ARGUMENT_KIND && !value) {
		gemmd_error_set(&v->e, 400, "invalid_value", key,
				"parameter %s has no value: send %s=VALUE", key,
				key);
		return MHD_NO;
	}
	if (kind == MHD_HEADER_KIND && !strcasecmp(key, "Idempotency-Key") &&
	    ++v->keys > 1) {
		gemmd_error_set(&v->e, 400, "invalid_value", "Idempotency-Key",
				"Idempotency-Key sent more than once");
		return MHD_NO;
	}
	if (kind == MHD_HEADER_KIND && !strcasecmp(key, "Host") &&
	    ++v->hosts > 1) {
		gemmd_error_set(&v->e, 400, "invalid_value", "Host",
				"Host sent more than once");
		return MHD_NO;
	}
	if (kind == MHD_HEADER_KIND &&
	    !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return check_coding(v);
	if (kind == MHD_GET_ARGUMENT_KIND)
		return check_param(v, key);
	if (kind == MHD_HEADER_KIND && !strcasecmp(key, "Content-Length"))
		return check_length(v, value);
	return MHD_YES;
}

/*
 * MHD takes HTTP/1.0 and 1.1, and reads 1.2 to 1.9 as 1.1 (RFC 9110
 * 2.5: keep-alive, chunked bodies), so every version but 1.0 is held to
 * 1.1's rules here too: "HTTP/1.9" without a Host was served.  HTTP/1.0
 * has no transfer codings, and one sent with it is faulty framing (RFC
 * 9112 6.1): MHD de-chunked its body and kept the connection, where a
 * proxy in front may have read the chunks as the next request.
 */
static void check_framing(struct value_check *v, const char *version)
{
	bool http_1_1 = strcmp(version, MHD_HTTP_VERSION_1_0) != 0;

	if (v->e.status)
		return;
	if (v->length && v->codings)
		gemmd_error_set(&v->e, 400, "invalid_value", "Content-Length",
				"Content-Length and Transfer-Encoding both "
				"sent: send one");
	else if (!v->hosts && http_1_1)
		gemmd_error_set(&v->e, 400, "missing_field", "Host",
				"an HTTP/1.1 request needs a Host header");
	else if (v->codings && !http_1_1)
		gemmd_error_set(&v->e, 400, "invalid_value",
				"Transfer-Encoding",
				"Transfer-Encoding in an HTTP/1.0 request: "
				"send the body with a Content-Length");
}

static bool bad_values(struct http_request *req, const char *version,
		       struct gemmd_error *ret)
{
	struct value_check v = { .e.status = 0 };

	if (req->nul_path) {
		gemmd_error_set(ret, 400, "null_byte", "(path)",
				"the path holds a NUL byte");
		return true;
	}
	MHD_get_connection_values_n(req->conn,
				    MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND,
				    check_value, &v);
	check_framing(&v, version);
	*ret = v.e;
	return v.e.status != 0;
}

/*
 * Answers now a request that its headers already rule out.  Answered
 * before its body, a request has no body read: MHD sends the answer and
 * closes the connection.
 */
static void check_headers(struct http_request *req, const char *version)
{
	const char *te = unknown_coding(req);
	struct gemmd_error e;

	/* HTTP/1.0 has no chunked bodies (check_framing()). */
	if (te)
		http_respond_errorf(req, 501, "unsupported_transfer_encoding",
				    MHD_HTTP_HEADER_TRANSFER_ENCODING,
				    "transfer coding \"%s\" is not supported; "
				    "send the body %s",
				    te,
				    strcmp(version, MHD_HTTP_VERSION_1_0) ?
					    "as is or chunked" :
					    "with a Content-Length");
	else if (bad_values(req, version, &e))
		http_respond_error(req, &e);
	else if (declared_too_large(req))
		http_respond_errorf(req, 413, "body_too_large", NULL,
				    "request body over %u bytes",
				    req->srv->max_body);
}

static void drop_body(struct http_request *req)
{
	free(req->body);
	req->body = NULL;
	req->len = 0;
}

/*
 * A chunked body that goes over max-body is read on, not kept, so that
 * its client gets the 413 at its end: MHD 0.9.75 takes no answer while
 * an upload goes on.  Past this much more, the client is taken to send
 * without end (while bytes flow, connection-timeout never fires), and
 * the connection is closed without an answer.  A body with a
 * Content-Length never gets there: one over max-body is refused before
 * it is read.
 */
#define DROPPED_BODY_MAX (64ull << 20)

/* -EMSGSIZE: close the connection, the body is past DROPPED_BODY_MAX. */
static int append_body(struct http_request *req, const char *data, size_t size)
{
	char *n;

	req->received += size;
	if (req->received > req->srv->max_body + DROPPED_BODY_MAX)
		return -EMSGSIZE;
	if (req->too_large || req->no_memory)
		return 0;
	if (req->len + size > req->srv->max_body) {
		/* Stop keeping it; the 413 goes out when the upload ends. */
		req->too_large = true;
		drop_body(req);
		return 0;
	}
	n = realloc(req->body, req->len + size + 1);
	if (!n) {
		/* Not the client's fault: a 503 when the upload ends. */
		req->no_memory = true;
		drop_body(req);
		return 0;
	}
	memcpy(n + req->len, data, size);
	req->body = n;
	req->len += size;
	req->body[req->len] = '\0';
	return 0;
}

/*
 * The answer to a body append_body() stopped keeping: over max-body is
 * the client's to fix (413); no memory for one within it is gemmd's, and
 * may pass (503, try again soon).
 */
#define NO_MEMORY_RETRY_SEC 1

static int respond_body_dropped(struct http_request *req)
{
	struct gemmd_error e;

	if (req->too_large)
		return http_respond_errorf(req, 413, "body_too_large", NULL,
					   "request body over %u bytes",
					   req->srv->max_body);
	gemmd_error_set(&e, 503, "out_of_memory", NULL,
			"no memory to keep the request body; try again in %u s",
			NO_MEMORY_RETRY_SEC);
	return http_respond_error_retry(req, &e, NO_MEMORY_RETRY_SEC);
}

/*
 * The path of a request target in absolute form ("http://host/v1/jobs"),
 * which HTTP/1.1 servers must take (RFC 9112 3.2.2), as of one in origin
 * form ("/v1/jobs").
 */
static const char *origin_path(const char *url)
{
	const char *p;

	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
		return url;
	p = strchr(strstr(url, "://") + 3, '/');
	return p ? p : "/";
}

/*
 * MHD decodes the path in place and hands it on as a C string, so a
 * "%00" in it cut the path there unseen: DELETE /v1/jobs/ID%00x
 * cancelled job ID.  Only the raw URI, which MHD shows here before it
 * decodes it, tells; what this returns is the request's first *con_cls,
 * and the mark tells on_request() to refuse it.
 */
static char nul_path_mark;

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	size_t n = strcspn(uri, "?");
	const char *p;

	for (p = uri; (p = memchr(p, '%', n - (size_t)(p - uri))); p++)
		if (p[1] == '0' && p[2] == '0')
			return &nul_path_mark;
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct http_request *req = *con_cls;

	if (!req || req == (void *)&nul_path_mark) {
		bool nul_path = req != NULL;

		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		req->nul_path = nul_path;
		s->n_open++;
		req->srv = s;
		req->conn = conn;
		req->method = method;
		req->path = origin_path(url);
		*con_cls = req;
		check_headers(req, version);
		return MHD_YES;
	}
	if (req->responded)
		return MHD_YES;
	if (*upload_data_size) {
		if (append_body(req, upload_data, *upload_data_size) < 0) {
			log_warning("http: a %s %s body went on past %llu "
				    "bytes over the limit: connection closed",
				    method, req->path,
				    (unsigned long long)DROPPED_BODY_MAX);
			return MHD_NO;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (req->too_large || req->no_memory)
		return respond_body_dropped(req) < 0 ? MHD_NO : MHD_YES;

	s->handler(req, s->userdata);
	if (!req->responded && !req->suspended)
		http_respond_errorf(req, 500, "internal", NULL,
				    "request was not answered");
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_request *req = *con_cls;

	/* Also a request that ended before on_request() saw it. */
	if (!req || req == (void *)&nul_path_mark) {
		*con_cls = NULL;
		return;
	}
	sd_event_source_disable_unref(req->hangup);
	req->srv->n_open--;
	if (req->destroy)
		req->destroy(req->data);
	free(req->body);
	free(req);
	*con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	if (n && msg[n - 1] == '\n')
		msg[n - 1] = '\0';
	log_warning("http: %s", msg);
}

/*
 * The resolver's own words go to *why: as an errno, a name that does not
 * resolve read "Invalid argument".
 */
static int parse_listen(const char *address, struct addrinfo **ret,
			const char **why)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char host[128];
	const char *port = listen_split(address, host, sizeof(host));
	int e;

	if (!port)
		return -EINVAL;
	e = getaddrinfo(strcmp(host, "*") ? host : NULL, port, &hints, ret);
	if (e == EAI_SYSTEM)
		return -errno;
	if (e) {
		*why = gai_strerror(e);
		return -EADDRNOTAVAIL;
	}
	return 0;
}

static int open_listener(const char *address, const char **why)
{
	struct addrinfo *ai;
	int fd, one = 1, r;

	r = parse_listen(address, &ai, why);
	if (r < 0)
		return r;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, LISTEN_BACKLOG) < 0) {
		r = -errno;
		close(fd);
		goto out;
	}
	r = fd;
out:
	freeaddrinfo(ai);
	return r;
}

static void describe_address(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(buf, len, "?");
		return;
	}
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		snprintf(buf, len, "unix");
	}
}

static int http_attach(struct http_server *s)
{
	const union MHD_DaemonInfo *info;
	int r;

	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info)
		return -EIO;
	r = sd_event_add_io(s->event, &s->io, info->epoll_fd, EPOLLIN,
			    on_mhd_io, s);
	if (r < 0)
		return r;
	/*
	 * Accuracy 1 us, not 0: 0 means sd-event's default of 250 ms, and MHD
	 * reads at most its buffer's worth (some 20 KB) per MHD_run(), then
	 * asks through a timeout of 0 to be run again for the rest.  With the
	 * slack, each such read waited up to 250 ms: 11 s for a 1 MiB body.
	 */
	r = sd_event_add_time(s->event, &s->timer, CLOCK_MONOTONIC, 0, 1,
			      on_mhd_timer, s);
	if (r < 0)
		return r;
	http_arm_timer(s);
	return 0;
}

int http_server_new(sd_event *event, const struct http_config *cfg,
		    http_handler_fn handler, void *userdata,
		    struct http_server **ret)
{
	struct http_server *s;
	const char *why = NULL;
	int fd = cfg->listen_fd, r;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->event = sd_event_ref(event);
	s->handler = handler;
	s->userdata = userdata;
	s->max_body = cfg->max_body;
	if (fd < 0) {
		fd = open_listener(cfg->listen, &why);
		if (fd < 0) {
			r = log_error_errno(fd, "Cannot listen on %s: %s",
					    cfg->listen, why ?: strerror(-fd));
			goto fail;
		}
	}
	describe_address(fd, s->address, sizeof(s->address));
	/*
	 * MHD_USE_ITC: resume from outside a handler wakes the loop, and MHD
	 * does not shutdown() an inherited socket (socket re-activation).
	 */
	s->mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC |
			MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
		on_mhd_log, s, MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_CONNECTION_LIMIT, cfg->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->per_ip_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)HTTP_CONNECTION_MEMORY, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
		MHD_OPTION_END);
	if (!s->mhd) {
		close(fd);
		r = log_error_errno(-EIO, "Cannot start the HTTP server");
		goto fail;
	}
	r = http_attach(s);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	http_server_free(s);
	return r;
}

struct http_server *http_server_free(struct http_server *s)
{
	if (!s)
		return NULL;
	s->io = sd_event_source_disable_unref(s->io);
	s->timer = sd_event_source_disable_unref(s->timer);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	sd_event_unref(s->event);
	free(s);
	return NULL;
}

void http_server_flush(struct http_server *s, unsigned int timeout_ms)
{
	const union MHD_DaemonInfo *info;
	uint64_t end = now_usec() + timeout_ms * 1000ull;
	struct pollfd pfd = { .events = POLLIN };
	unsigned int quiet = 0;

	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info)
		return;
	pfd.fd = info->epoll_fd;
	/*
	 * A request pipelined behind one just answered is read only on a
	 * later run, so the flush ends after a few runs with none open, not
	 * at the first.
	 */
	while (quiet < HTTP_FLUSH_QUIET_RUNS && now_usec() < end) {
		MHD_run(s->mhd);
		quiet = s->n_open ? 0 : quiet + 1;
		poll(&pfd, 1, 10);
	}
}

const char *http_server_address(const struct http_server *s)
{
	return s->address;
}
