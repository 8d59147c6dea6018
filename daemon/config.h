/* SPDX-License-Identifier: MIT */
/*
 * config.h - gemmd settings: built-in defaults, then an optional config
 * file, then command-line flags, each overriding the one before.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>

/* The longest ?wait= a request may ask for, and so max-wait's ceiling. */
#define CONFIG_WAIT_MAX 3600
/* The longest worker-start-timeout and worker-retry: a day. */
#define CONFIG_SECONDS_MAX 86400
#define CONFIG_LISTEN_DEFAULT "127.0.0.1:8090"

struct config {
	char listen[128]; /* HOST:PORT; port 0 picks a free one */
	char state_dir[PATH_MAX];
	char kernel_dir[PATH_MAX];
	char worker_path[PATH_MAX];
	char config_file[PATH_MAX];
	unsigned int max_queued; /* queued jobs before 503 */
	unsigned int max_kept; /* finished jobs remembered */
	unsigned int max_body; /* request body bytes */
	unsigned int max_wait; /* seconds a ?wait= may hold */
	unsigned int max_connections;
	unsigned int per_ip_connections;
	unsigned int connection_timeout; /* idle seconds */
	unsigned int job_timeout_max; /* cap on a job's deadline */
	unsigned int worker_start_timeout; /* seconds to hello (and probe) */
	unsigned int worker_retry; /* seconds before a failed GPU is retried */
	bool debug;
};

void config_defaults(struct config *c);
/* Whether listen was set to something else than the built-in default. */
bool config_listen_changed(const struct config *c);
/* Reads "key = value" lines; unknown keys and bad values are errors. */
int config_load_file(struct config *c, const char *path, char *err,
		     size_t errlen);
/* Parses argv; returns 1 when the program should exit 0 (--help). */
int config_parse_args(struct config *c, int argc, char **argv);
