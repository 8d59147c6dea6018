// SPDX-License-Identifier: MIT
/*
 * config.c - defaults, config file and flags.
 */
#include <ctype.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "log.h"
#include "paths.h"
#include "util.h"
#include "version.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

/* Is there a built tree around this executable (BUILD/daemon/gemmd)? */
static bool build_tree_paths(struct config *c)
{
	char dir[PATH_MAX];

	if (build_tree_dir(".", "gemmd-worker", dir) < 0 ||
	    build_tree_dir("../kernels", "reference.cubin", c->kernel_dir) < 0)
		return false;
	return snprintf(c->worker_path, sizeof(c->worker_path),
			"%s/gemmd-worker", dir) < (int)sizeof(c->worker_path);
}

/*
 * The length of the first folder in $name, set by systemd from
 * StateDirectory= or ConfigurationDirectory=, which may hand us a
 * colon-separated list; 0 where it is unset or empty.
 */
static int systemd_dir(const char *name, const char **ret)
{
	const char *v = getenv(name);

	*ret = v;
	return v ? (int)strcspn(v, ":") : 0;
}

void config_defaults(struct config *c)
{
	const char *dir;
	int len;

	memset(c, 0, sizeof(*c));
	snprintf(c->listen, sizeof(c->listen), "%s", CONFIG_LISTEN_DEFAULT);
	len = systemd_dir("STATE_DIRECTORY", &dir);
	if (len)
		snprintf(c->state_dir, sizeof(c->state_dir), "%.*s", len, dir);
	else
		snprintf(c->state_dir, sizeof(c->state_dir), "%s/lib/gemmd",
			 LOCALSTATEDIR);
	if (!build_tree_paths(c)) {
		snprintf(c->kernel_dir, sizeof(c->kernel_dir), "%s", KERNELDIR);
		snprintf(c->worker_path, sizeof(c->worker_path),
			 "%s/gemmd-worker", LIBEXECDIR);
	}
	/*
	 * ConfigurationDirectory= is always under /etc, whatever sysconfdir
	 * was: under systemd the file is where the unit says, not where a
	 * plain ./configure (/usr/local/etc) would have had it.
	 */
	len = systemd_dir("CONFIGURATION_DIRECTORY", &dir);
	if (len)
		snprintf(c->config_file, sizeof(c->config_file),
			 "%.*s/gemmd.conf", len, dir);
	else
		snprintf(c->config_file, sizeof(c->config_file),
			 "%s/gemmd/gemmd.conf", SYSCONFDIR);
	c->max_queued = 10000;
	c->max_kept = 100000;
	c->max_body = 1 << 20;
	c->max_wait = 3600;
	c->max_connections = 1024;
	c->per_ip_connections = 256;
	c->connection_timeout = 60;
	c->job_timeout_max = 600;
	c->worker_start_timeout = 60;
	c->worker_retry = 300;
}

static int set_string(char *dst, size_t len, const char *v)
{
	if (!*v || strlen(v) >= len)
		return -EINVAL;
	strcpy(dst, v);
	return 0;
}

bool config_listen_changed(const struct config *c)
{
	return strcmp(c->listen, CONFIG_LISTEN_DEFAULT) != 0;
}

/*
 * The HOST of HOST:PORT as http.c reads it (listen_split()): an address
 * ([...] around one of IPv6), "*" or a host name.  Whatever is neither
 * an address nor spelt as a name ("[::1", "256.1.1.1", "a:b") only
 * failed to resolve at the bind, after the GPU probe, with status 1:
 * restarted by systemd every RestartSec=, for ever.  A name is resolved
 * there still, where a failure may pass (DNS not up yet).
 */
static bool listen_host_ok(const char *host)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	bool name = false;
	const char *p;

	if (!*host)
		return false;
	if (!strcmp(host, "*"))
		return true;
	if (getaddrinfo(host, NULL, &hints, &ai) == 0) {
		freeaddrinfo(ai);
		return true;
	}
	/* letters, digits, '-', '_' and dots, with a letter among them */
	for (p = host; *p; p++) {
		if (isalpha((unsigned char)*p))
			name = true;
		else if (!isdigit((unsigned char)*p) && !strchr("-_.", *p))
			return false;
	}
	return name && host[0] != '.' && host[0] != '-';
}

/*
 * HOST:PORT with a port of 0..65535, checked here so that a typo stops
 * gemmd at once: getaddrinfo() would take port 99999 as 99999 % 65536,
 * and the address is only bound after the GPU probe.
 */
static int set_listen(struct config *c, const char *v)
{
	char host[128];
	const char *port = listen_split(v, host, sizeof(host));
	unsigned int n;

	if (!port || parse_uint(port, 65535, &n) < 0 || !listen_host_ok(host))
		return -EINVAL;
	return set_string(c->listen, sizeof(c->listen), v);
}

static int set_uint(unsigned int *dst, const char *v)
{
	return parse_uint(v, 1000000000u, dst);
}

/*
 * A limit that 0 would turn into refusing everything: max-connections = 0
 * had gemmd say it was listening and leave every connection unanswered,
 * max-queued = 0 refused every job with 503 queue_full and a Retry-After
 * of 1 (to be tried again at once, for ever) on idle GPUs, and
 * max-body = 0 every POST with 413.
 */
static int set_count(unsigned int *dst, const char *v)
{
	unsigned int n;
	int r = set_uint(&n, v);

	if (r < 0 || !n)
		return -EINVAL;
	*dst = n;
	return 0;
}

/* A duration of 1 s to a day: sd-event's timers take microseconds. */
static int set_seconds(unsigned int *dst, const char *v)
{
	unsigned int sec;
	int r = parse_uint(v, CONFIG_SECONDS_MAX, &sec);

	if (r < 0 || !sec)
		return -EINVAL;
	*dst = sec;
	return 0;
}

/* One setting by name, as both the file and the flags spell it. */
static int config_set(struct config *c, const char *key, const char *v)
{
	if (!strcmp(key, "listen"))
		return set_listen(c, v);
	if (!strcmp(key, "state-dir"))
		return set_string(c->state_dir, sizeof(c->state_dir), v);
	if (!strcmp(key, "kernel-dir"))
		return set_string(c->kernel_dir, sizeof(c->kernel_dir), v);
	if (!strcmp(key, "worker"))
		return set_string(c->worker_path, sizeof(c->worker_path), v);
	if (!strcmp(key, "max-queued"))
		return set_count(&c->max_queued, v);
	if (!strcmp(key, "max-kept"))
		return set_uint(&c->max_kept, v);
	if (!strcmp(key, "max-body"))
		return set_count(&c->max_body, v);
	if (!strcmp(key, "max-wait"))
		return parse_uint(v, CONFIG_WAIT_MAX, &c->max_wait);
	if (!strcmp(key, "max-connections"))
		return set_count(&c->max_connections, v);
	if (!strcmp(key, "per-ip-connections"))
		return set_uint(&c->per_ip_connections, v);
	/*
	 * At most a day, as the other durations: libmicrohttpd keeps the
	 * timeout in 32-bit milliseconds, and 4294968 s (49.7 days) or more
	 * wrapped round to well under a second, closing every connection
	 * as soon as it was idle.
	 */
	if (!strcmp(key, "connection-timeout"))
		return parse_uint(v, CONFIG_SECONDS_MAX,
				  &c->connection_timeout);
	if (!strcmp(key, "job-timeout-max"))
		return set_seconds(&c->job_timeout_max, v);
	if (!strcmp(key, "worker-start-timeout"))
		return set_seconds(&c->worker_start_timeout, v);
	if (!strcmp(key, "worker-retry"))
		return parse_uint(v, CONFIG_SECONDS_MAX, &c->worker_retry);
	return -ENOENT;
}

/* What config_set() takes for key, for the message that refuses a value. */
static const char *config_expect(const char *key)
{
	static const struct {
		const char *key, *expect;
	} keys[] = {
		{ "listen",
		  "HOST:PORT, HOST an address, [IPv6], * or a name, with a port of 0..65535" },
		{ "state-dir", "a path, 1..4095 bytes" },
		{ "kernel-dir", "a path, 1..4095 bytes" },
		{ "worker", "a path, 1..4095 bytes" },
		{ "max-queued", "a whole number, 1..1000000000" },
		{ "max-kept", "a whole number, 0..1000000000" },
		{ "max-body", "a whole number of bytes, 1..1000000000" },
		{ "max-wait", "whole seconds, 0..3600" },
		{ "max-connections", "a whole number, 1..1000000000" },
		{ "per-ip-connections", "a whole number, 0..1000000000" },
		{ "connection-timeout", "whole seconds, 0..86400" },
		{ "job-timeout-max", "whole seconds, 1..86400" },
		{ "worker-start-timeout", "whole seconds, 1..86400" },
		{ "worker-retry", "whole seconds, 0..86400" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(keys[i].key, key))
			return keys[i].expect;
	return "another value";
}

/*
 * Why value is not one for key: what the key takes, and where the value
 * holds a '#', that a comment is not read after a value.
 */
static void config_why(char *buf, size_t len, const char *key,
		       const char *value)
{
	snprintf(buf, len, "\"%.200s\"; expected %s%s", value,
		 config_expect(key),
		 strchr(value, '#') ? " (a comment takes a line of its own)" :
				      "");
}

static char *strip(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
			 e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* One line of the file: blank, a comment or "key = value". */
static int config_line(struct config *c, char *line, const char **ret_key,
		       const char **ret_value)
{
	char *s = strip(line), *eq;

	*ret_key = NULL;
	if (!*s || *s == '#')
		return 0;
	eq = strchr(s, '=');
	if (!eq)
		return -EBADMSG;
	*eq = '\0';
	*ret_key = strip(s);
	*ret_value = strip(eq + 1);
	return config_set(c, *ret_key, *ret_value);
}

int config_load_file(struct config *c, const char *path, char *err,
		     size_t errlen)
{
	_cleanup_free_ char *line = NULL;
	unsigned int lineno = 0;
	const char *key = NULL, *value = "";
	char why[320];
	size_t alloc = 0;
	FILE *f;
	int r = 0;

	f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	/* getline(), not a fixed buffer: a long line must not split in two. */
	while (r >= 0 && getline(&line, &alloc, f) >= 0) {
		char *s = line;

		/*
		 * A UTF-8 byte order mark, which Windows editors put first as
		 * they end lines in CRLF: it made the first key "unknown",
		 * with the mark invisible in the message.
		 */
		if (++lineno == 1 && !strncmp(s, "\xef\xbb\xbf", 3))
			s += 3;
		r = config_line(c, s, &key, &value);
	}
	if (r == -EBADMSG) {
		snprintf(err, errlen, "%s:%u: expected 'key = value'", path,
			 lineno);
	} else if (r == -ENOENT) {
		snprintf(err, errlen, "%s:%u: unknown key '%s'", path, lineno,
			 key);
	} else if (r < 0) {
		config_why(why, sizeof(why), key, value);
		snprintf(err, errlen, "%s:%u: bad value for '%s': %s", path,
			 lineno, key, why);
	} else if (ferror(f)) {
		r = errno ? -errno : -EIO;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	}
	fclose(f);
	return r;
}

static void usage(void)
{
	printf("Usage: gemmd [OPTIONS]\n"
	       "GEMM benchmark daemon: runs and times GEMM jobs on this node's GPUs.\n\n"
	       "  -l, --listen HOST:PORT   address to serve on (default 127.0.0.1:8090)\n"
	       "  -s, --state-dir DIR      state directory\n"
	       "  -k, --kernel-dir DIR     where the cubins are\n"
	       "  -c, --config FILE        config file (key = value lines)\n"
	       "  -w, --worker PATH        the gemmd-worker program\n"
	       "  -d, --debug              debug logging\n"
	       "  -h, --help               this text\n"
	       "  -V, --version            print the version\n");
}

int config_parse_args(struct config *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "kernel-dir", required_argument, NULL, 'k' },
		{ "config", required_argument, NULL, 'c' },
		{ "worker", required_argument, NULL, 'w' },
		{ "debug", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	static const char *const keys[128] = {
		['l'] = "listen",
		['s'] = "state-dir",
		['k'] = "kernel-dir",
		['w'] = "worker",
	};
	char err[512];
	bool explicit_config = false;
	int opt, r;

	/* The config file first, so that flags override what it says. */
	for (optind = 1; (opt = getopt_long(argc, argv, "l:s:k:c:w:dhV", opts,
					    NULL)) != -1;) {
		if (opt == 'c') {
			if (set_string(c->config_file, sizeof(c->config_file),
				       optarg) < 0)
				return log_error_errno(
					-EINVAL, "Bad value for --config: '%s'",
					optarg);
			explicit_config = true;
		} else if (opt == 'h') {
			usage();
			return 1;
		} else if (opt == 'V') {
			printf("gemmd %s (build %s)\n", PACKAGE_VERSION,
			       GEMMD_BUILD);
			return 1;
		} else if (opt == '?') {
			return -EINVAL;
		}
	}
	/*
	 * The default file may be missing, and is then skipped; one that is
	 * there but cannot be read (its mode, a link loop) is an error, as
	 * it is with --config.  access(R_OK) skipped it without a word, and
	 * gemmd ran without the settings it holds: on another address, say.
	 */
	if (explicit_config || access(c->config_file, F_OK) == 0 ||
	    errno != ENOENT) {
		r = config_load_file(c, c->config_file, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "%s", err);
	}
	for (optind = 1; (opt = getopt_long(argc, argv, "l:s:k:c:w:dhV", opts,
					    NULL)) != -1;) {
		if (opt == 'd') {
			c->debug = true;
		} else if (opt < 128 && keys[opt]) {
			r = config_set(c, keys[opt], optarg);
			if (r < 0) {
				config_why(err, sizeof(err), keys[opt], optarg);
				return log_error_errno(r,
						       "Bad value for --%s: %s",
						       keys[opt], err);
			}
		}
	}
	if (optind < argc)
		return log_error_errno(-EINVAL, "Unexpected argument '%s'",
				       argv[optind]);
	return 0;
}
