// SPDX-License-Identifier: MIT
/*
 * ctl-http.c - gemmctl's HTTP transport (libcurl easy interface).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "ctl-http.h"
#include "ctl-print.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* The largest reply we buffer: a long job list is a few MiB at most. */
#define REPLY_MAX (64u << 20)
#define CONNECT_TIMEOUT_S 10L

struct sink {
	struct ctl_reply *reply;
	int err;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *data)
{
	struct sink *s = data;
	struct ctl_reply *r = s->reply;
	size_t n = size * nmemb;
	char *p;

	if (n > REPLY_MAX - r->len) {
		s->err = -EFBIG;
		return 0;
	}
	p = realloc(r->body, r->len + n + 1);
	if (!p) {
		s->err = -ENOMEM;
		return 0;
	}
	memcpy(p + r->len, ptr, n);
	r->len += n;
	p[r->len] = '\0';
	r->body = p;
	return n;
}

void ctl_reply_done(struct ctl_reply *r)
{
	free(r->body);
	r->body = NULL;
	r->len = 0;
	r->status = 0;
	r->retry_after_s = 0;
}

char *ctl_http_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out, *p;

	out = malloc(strlen(s) * 3 + 1);
	if (!out)
		return NULL;
	for (p = out; *s; s++) {
		unsigned char c = *s;

		/*
		 * '.' is unreserved, but an ID of "." or ".." left as it
		 * is makes a dot segment, which libcurl removes (RFC 3986
		 * 5.2.4): "status .." asked for /v1/ and "cancel ." sent
		 * DELETE /v1/jobs/, each answered for another resource.
		 */
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-_~", c)) {
			*p++ = c;
			continue;
		}
		*p++ = '%';
		*p++ = hex[c >> 4];
		*p++ = hex[c & 15];
	}
	*p = '\0';
	return out;
}

/* Gives up on the transfer once *stop is set (SIGINT in tune). */
static int on_progress(void *data, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	volatile sig_atomic_t *stop = data;

	return *stop ? 1 : 0;
}

/*
 * Whether the transfer got past connecting (TCP, and TLS for https):
 * libcurl's pre-transfer time is 0 until then.
 */
static bool connected(CURL *curl)
{
	double t = 0;

	return curl_easy_getinfo(curl, CURLINFO_PRETRANSFER_TIME, &t) ==
		       CURLE_OK &&
	       t > 0;
}

static int report_curl(const struct ctl_http *h, CURL *curl, CURLcode cc,
		       const char *errbuf, long timeout_s)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);

	/* The caller asked for it, and says why it stops. */
	if (cc == CURLE_ABORTED_BY_CALLBACK && h->stop && *h->stop)
		return -EINTR;
	/* Not a switch: -Wswitch-enum wants all of libcurl's ~100 codes. */
	if (cc == CURLE_URL_MALFORMAT) {
		fprintf(stderr, "gemmctl: invalid URL '%s': %s\n", h->url, why);
		return -EINVAL;
	}
	/*
	 * check_scheme() has ruled out a scheme we do not speak, so this is
	 * what libcurl says of a reply that is not HTTP ("Received HTTP/0.9
	 * when not allowed"): something else listens there.
	 */
	if (cc == CURLE_UNSUPPORTED_PROTOCOL ||
	    cc == CURLE_WEIRD_SERVER_REPLY) {
		fprintf(stderr,
			"gemmctl: no HTTP answer from gemmd at %s: %s\n",
			h->url, why);
		return -EPROTO;
	}
	/*
	 * gemmd was reached, so "cannot reach" would mislead; the exit status
	 * stays that of no answer, which is what the caller got (and tune
	 * asks again with the same Idempotency-Key).
	 */
	if (cc == CURLE_GOT_NOTHING) {
		fprintf(stderr,
			"gemmctl: gemmd at %s closed the connection without "
			"an answer\n",
			h->url);
		return -ECONNRESET;
	}
	if (cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR) {
		fprintf(stderr,
			"gemmctl: the answer of gemmd at %s was cut short: %s\n",
			h->url, why);
		return -ECONNRESET;
	}
	/*
	 * A connection not made in time ran into CONNECT_TIMEOUT_S, not the
	 * request's limit: "within 0 s" (no limit) or "within 30 s" after
	 * 10 s would name a limit that did not apply.
	 */
	if (cc == CURLE_OPERATION_TIMEDOUT && !connected(curl)) {
		fprintf(stderr,
			"gemmctl: no connection to gemmd at %s within %ld s\n",
			h->url,
			timeout_s && timeout_s < CONNECT_TIMEOUT_S ?
				timeout_s :
				CONNECT_TIMEOUT_S);
		return -ETIMEDOUT;
	}
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		fprintf(stderr,
			"gemmctl: no answer from gemmd at %s within %ld s\n",
			h->url, timeout_s);
		return -ETIMEDOUT;
	}
	fprintf(stderr, "gemmctl: cannot reach gemmd at %s: %s\n", h->url, why);
	return -ECONNREFUSED;
}

/*
 * The length of what may be a URL's scheme, as libcurl finds it: a
 * letter, then letters, digits, '+', '-' or '.'; 0 if none.  It is one
 * where ":/" follows.
 */
static size_t scheme_len(const char *url)
{
	static const char scheme_chars[] = "abcdefghijklmnopqrstuvwxyz"
					   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					   "0123456789+-.";

	if ((url[0] >= 'a' && url[0] <= 'z') ||
	    (url[0] >= 'A' && url[0] <= 'Z'))
		return strspn(url, scheme_chars);
	return 0;
}

static bool is_http(const char *url, size_t n)
{
	return (n == 4 && !strncasecmp(url, "http", n)) ||
	       (n == 5 && !strncasecmp(url, "https", n));
}

/*
 * Refuses a URL whose scheme is not http or https before any request.
 * libcurl would refuse it too, but with CURLE_UNSUPPORTED_PROTOCOL, the
 * code it also gives for a reply that is not HTTP, which is another exit
 * status.  A URL without a scheme is left alone; libcurl takes it for
 * http.
 */
static int check_scheme(const char *url)
{
	size_t n = scheme_len(url);

	if (!n || url[n] != ':' || url[n + 1] != '/' || is_http(url, n))
		return 0;
	fprintf(stderr,
		"gemmctl: invalid URL '%s': the scheme must be http or https\n",
		url);
	return -EINVAL;
}

/*
 * Refuses a URL without a host ("http://", as "http://$HOST" makes of an
 * empty HOST) or with an empty port ("gemmd:", from "gemmd:$PORT"), which
 * libcurl would not refuse: it reads "http:/healthz", the base with a
 * request's path, as a request to the host "healthz", and "gemmd:/healthz"
 * as a URL of the scheme "gemmd", which it reports as a reply that is not
 * HTTP (exit 3, as if gemmd did not answer); "http://gemmd:" goes to port
 * 80.  check_scheme() has passed the URL.
 */
static int check_host(const char *url)
{
	size_t n = scheme_len(url);
	const char *host = url;

	/* libcurl takes any number of slashes after "http:", none included */
	if (n && url[n] == ':' && (url[n + 1] == '/' || is_http(url, n)))
		host = url + n + 1 + strspn(url + n + 1, "/");
	n = strcspn(host, "/");
	if (!n) {
		fprintf(stderr, "gemmctl: invalid URL '%s': no host\n", url);
		return -EINVAL;
	}
	if (host[n - 1] == ':') {
		fprintf(stderr,
			"gemmctl: invalid URL '%s': no port after ':'\n", url);
		return -EINVAL;
	}
	return 0;
}

static int set_method(CURL *curl, const char *method, const char *body,
		      size_t len)
{
	CURLcode cc;

	if (body) {
		cc = curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
		if (cc == CURLE_OK)
			cc = curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
					      (curl_off_t)len);
	} else {
		cc = curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
	}
	/* POSTFIELDS and HTTPGET pick POST and GET; anything else is custom. */
	if (cc == CURLE_OK && strcmp(method, "GET") && strcmp(method, "POST"))
		cc = curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	return cc == CURLE_OK ? 0 : -EINVAL;
}

/* libcurl calls it about once a second even while nothing moves. */
static int set_stop(CURL *curl, volatile sig_atomic_t *stop)
{
	CURLcode cc = CURLE_OK;

	if (!stop)
		return 0;
	cc |= curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	cc |= curl_easy_setopt(curl, CURLOPT_XFERINFODATA, (void *)stop);
	cc |= curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	return cc == CURLE_OK ? 0 : -ENOMEM;
}

/* Whole seconds, from a number or an HTTP date; 0 without the header. */
static long retry_after(CURL *curl)
{
#if LIBCURL_VERSION_NUM >= 0x074200
	curl_off_t s = 0;

	if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &s) == CURLE_OK &&
	    s > 0)
		return s > LONG_MAX ? LONG_MAX : (long)s;
#endif
	return 0;
}

#define CURL_TIMEOUT_MAX_S ((long)(INT_MAX / 1000))

static int set_common(CURL *curl, const char *url, struct curl_slist *headers,
		      long timeout_s, char *errbuf, struct sink *sink)
{
	CURLcode cc = CURLE_OK;

	/* Setting an option only fails for a bad option or OOM. */
	cc |= curl_easy_setopt(curl, CURLOPT_URL, url);
	cc |= curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	cc |= curl_easy_setopt(curl, CURLOPT_USERAGENT,
			       "gemmctl/" PACKAGE_VERSION);
	cc |= curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	cc |= curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
	cc |= curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	cc |= curl_easy_setopt(curl, CURLOPT_WRITEDATA, sink);
	/*
	 * libcurl refuses a timeout past INT_MAX ms (24.8 days) outright;
	 * gemmctl takes up to a year, and that long is no limit anyway.
	 */
	cc |= curl_easy_setopt(curl, CURLOPT_TIMEOUT,
			       timeout_s > CURL_TIMEOUT_MAX_S ?
				       CURL_TIMEOUT_MAX_S :
				       timeout_s);
	cc |= curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
#if LIBCURL_VERSION_NUM >= 0x075500
	cc |= curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	cc |= curl_easy_setopt(curl, CURLOPT_PROTOCOLS,
			       (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	return cc == CURLE_OK ? 0 : -ENOMEM;
}

static struct curl_slist *make_headers(bool has_body, const char *key)
{
	static const char *const lines[] = {
		"Accept: application/json",
		/* No 100-continue round trip for a large job file. */
		"Expect:",
		"Content-Type: application/json",
	};
	struct curl_slist *list = NULL, *next;
	size_t i, n = has_body ? 3 : 1;
	char *line = NULL;

	for (i = 0; i < n; i++) {
		next = curl_slist_append(list, lines[i]);
		if (!next)
			goto fail;
		list = next;
	}
	if (!key)
		return list;
	if (asprintf(&line, "Idempotency-Key: %s", key) < 0)
		goto fail;
	next = curl_slist_append(list, line);
	free(line);
	if (next)
		return next;
fail:
	curl_slist_free_all(list);
	return NULL;
}

static char *join_url(const char *base, const char *path)
{
	size_t a = strlen(base), b = strlen(path);
	char *url = malloc(a + b + 1);

	if (!url)
		return NULL;
	memcpy(url, base, a);
	memcpy(url + a, path, b + 1);
	return url;
}

int ctl_http_request(const struct ctl_http *h, const char *method,
		     const char *path, const char *body, size_t len,
		     long extra_s, struct ctl_reply *ret)
{
	struct ctl_reply reply = {};
	struct sink sink = { .reply = &reply };
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *headers = NULL;
	long timeout_s = h->timeout_s ? h->timeout_s + extra_s : 0;
	char *url = NULL;
	CURL *curl;
	CURLcode cc;
	int r;

	r = check_scheme(h->url) ?: check_host(h->url);
	if (r < 0)
		return r;
	r = -ENOMEM;
	curl = curl_easy_init();
	if (!curl)
		goto out;
	url = join_url(h->url, path);
	headers = make_headers(body != NULL, h->idempotency_key);
	if (!url || !headers)
		goto out;
	r = set_common(curl, url, headers, timeout_s, errbuf, &sink);
	if (r < 0)
		goto out;
	r = set_method(curl, method, body, len);
	if (r == 0)
		r = set_stop(curl, h->stop);
	if (r < 0)
		goto out;

	cc = curl_easy_perform(curl);
	if (cc == CURLE_WRITE_ERROR && sink.err == -EFBIG)
		fprintf(stderr,
			"gemmctl: reply from %s is larger than %u MiB\n",
			h->url, REPLY_MAX >> 20);
	if (cc == CURLE_WRITE_ERROR && sink.err) {
		r = sink.err;
		goto out;
	}
	if (cc != CURLE_OK) {
		r = report_curl(h, curl, cc, errbuf, timeout_s);
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
	reply.retry_after_s = retry_after(curl);
	*ret = reply;
	reply.body = NULL;
	r = 0;
out:
	if (r == -ENOMEM)
		fprintf(stderr, "gemmctl: out of memory\n");
	ctl_reply_done(&reply);
	curl_slist_free_all(headers);
	free(url);
	curl_easy_cleanup(curl);
	return r;
}

/* --- API calls ------------------------------------------------------------ */

int ctl_transport_exit(int r)
{
	switch (-r) {
	case EINVAL:
		return CTL_EXIT_USAGE;
	case ENOMEM:
	case EFBIG:
		return CTL_EXIT_ERROR;
	case EINTR:
		return CTL_EXIT_INTERRUPTED;
	default:
		return CTL_EXIT_UNREACHABLE;
	}
}

static void print_raw(FILE *f, const char *body, size_t len)
{
	fwrite(body, 1, len, f);
	if (len && body[len - 1] != '\n')
		fputc('\n', f);
}

void ctl_report_error(const struct ctl_http *h, bool json, const char *method,
		      const char *path, const struct ctl_reply *reply)
{
	json_t *root = NULL;
	char *text;

	if (reply->len)
		root = json_loadb(reply->body, reply->len, 0, NULL);
	if (json && root)
		ctl_print_json_text(stdout, reply->body, reply->len);
	else if (json)
		print_raw(stdout, reply->body, reply->len);

	/* What gemmd says goes to a terminal: escaped. */
	text = ctl_error_text(json_object_get(root, "error"));
	if (text)
		ctl_print_text(stderr, "gemmctl: %s", text);
	else
		fprintf(stderr, "gemmctl: %s %s%s: HTTP status %ld", method,
			h->url, path, reply->status);
	fputc('\n', stderr);
	free(text);
	json_decref(root);
}

static bool has_shape(const json_t *root, const struct ctl_shape *want)
{
	const json_t *v = json_object_get(root, want->key);

	return v && json_typeof(v) == want->type;
}

/* Whether a 2xx reply is what the command expects; reported if not. */
static bool check_reply(const struct ctl_http *h, const char *method,
			const char *path, const struct ctl_reply *reply,
			const struct ctl_shape *want, json_t **ret_root)
{
	json_error_t err;
	json_t *root;

	if (!reply->len && want->empty_ok &&
	    (reply->status == 202 || reply->status == 204))
		return true;
	if (!reply->len) {
		fprintf(stderr, "gemmctl: %s %s%s: empty reply (HTTP %ld)\n",
			method, h->url, path, reply->status);
		return false;
	}
	root = json_loadb(reply->body, reply->len, 0, &err);
	if (!root) {
		/* jansson quotes the reply: "invalid token near '...'" */
		ctl_print_text(stderr,
			       "gemmctl: %s %s%s: reply is not JSON: %s",
			       method, h->url, path, err.text);
		fputc('\n', stderr);
		return false;
	}
	if (!has_shape(root, want)) {
		fprintf(stderr, "gemmctl: %s %s%s: reply is not %s\n", method,
			h->url, path, want->what);
		json_decref(root);
		return false;
	}
	*ret_root = root;
	return true;
}

int ctl_call(const struct ctl_http *h, bool json, const char *method,
	     const char *path, const char *body, size_t len, long extra_s,
	     const struct ctl_shape *want, json_t **ret_root)
{
	struct ctl_reply reply = {};
	json_t *root = NULL;
	int r;

	r = ctl_http_request(h, method, path, body, len, extra_s, &reply);
	if (r < 0)
		return ctl_transport_exit(r);
	r = CTL_EXIT_ERROR;
	if (reply.status < 200 || reply.status > 299) {
		ctl_report_error(h, json, method, path, &reply);
		goto out;
	}
	if (!check_reply(h, method, path, &reply, want, &root))
		goto out;
	if (root && json)
		ctl_print_json_text(stdout, reply.body, reply.len);
	*ret_root = root;
	r = CTL_EXIT_OK;
out:
	ctl_reply_done(&reply);
	return r;
}

int ctl_job_delete(const struct ctl_http *h, const char *job_id, json_t **ret)
{
	struct ctl_reply reply = {};
	char *id = ctl_http_escape(job_id), *path = NULL;
	int status = 0;

	if (id && asprintf(&path, "/v1/jobs/%s", id) >= 0 &&
	    ctl_http_request(h, "DELETE", path, NULL, 0, 0, &reply) == 0)
		status = (int)reply.status;
	if (ret)
		*ret = ctl_status_is_2xx(status) ? ctl_reply_job(&reply) : NULL;
	ctl_reply_done(&reply);
	free(path);
	free(id);
	return status;
}

bool ctl_status_is_2xx(long status)
{
	return status >= 200 && status <= 299;
}

json_t *ctl_reply_job(const struct ctl_reply *reply)
{
	json_t *job = NULL;

	if (reply->len)
		job = json_loadb(reply->body, reply->len, 0, NULL);
	if (json_is_string(json_object_get(job, "id")))
		return job;
	json_decref(job);
	return NULL;
}

json_t *ctl_job_ended(const struct ctl_http *h, const char *job_id)
{
	struct ctl_reply reply = {};
	char *id = ctl_http_escape(job_id), *path = NULL;
	json_t *job = NULL;

	if (id && asprintf(&path, "/v1/jobs/%s", id) >= 0 &&
	    ctl_http_request(h, "GET", path, NULL, 0, 0, &reply) == 0 &&
	    ctl_status_is_2xx(reply.status))
		job = ctl_reply_job(&reply);
	ctl_reply_done(&reply);
	free(path);
	free(id);
	if (job && !ctl_state_is_final(ctl_jstr(job, "state"))) {
		json_decref(job);
		job = NULL;
	}
	return job;
}

const struct ctl_shape ctl_job_shape = { "a job", "id", JSON_STRING };

int ctl_devices(const struct ctl_http *h, json_t **ret)
{
	static const struct ctl_shape shape = { "a device list", "devices",
						JSON_ARRAY };
	json_t *root = NULL;
	int r;

	r = ctl_call(h, false, "GET", "/v1/devices", NULL, 0, 0, &shape, &root);
	if (r == CTL_EXIT_OK)
		*ret = json_incref(json_object_get(root, "devices"));
	json_decref(root);
	return r;
}

double ctl_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
