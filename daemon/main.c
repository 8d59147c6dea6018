// SPDX-License-Identifier: MIT
/*
 * gemmd - the supervisor: HTTP API, job table, kernel catalog and the
 * per-GPU workers, on one sd-event loop.  It never loads the CUDA driver.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "api.h"
#include "catalog.h"
#include "config.h"
#include "http.h"
#include "jobs.h"
#include "log.h"
#include "workers.h"

/* How long held requests get for their answers at shutdown. */
#define HELD_FLUSH_MS 1000
/* Descriptors besides the connections: the loop's, the workers', stdio. */
#define NOFILE_RESERVE 64
/*
 * Exit status of a start that no restart mends (a config error, a worker
 * that cannot be run): gemmd.service's RestartPreventExitStatus=.
 */
#define EXIT_CONFIG 2
/*
 * What READY=1 may come later than the probe's deadline: the kill of a
 * probe that overran (up to a second), the bind and the workers' forks.
 */
#define PROBE_MARGIN_SEC 10

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX], *p;
	struct stat st;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	/* EEXIST is also a file of that name, which is no folder. */
	if (stat(buf, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/*
 * Socket activation: the one inherited socket in *ret, or -1 for none.
 * More than one (two ListenStream= lines, say) stops gemmd: it serves
 * one socket, and serving on listen instead left the clients of the
 * sockets systemd held waiting for an accept that never came.
 */
static int inherited_listener(int *ret)
{
	int n = sd_listen_fds(1);

	*ret = -1;
	if (n < 0)
		return log_error_errno(n, "sd_listen_fds: %m");
	if (n > 1)
		return log_error_errno(
			-EINVAL, "Got %d sockets from systemd; expected 1", n);
	if (n == 1)
		*ret = SD_LISTEN_FDS_START;
	return 0;
}

/*
 * systemd starts services with a soft limit of 1024 open files, fewer
 * than max-connections' default needs, and libmicrohttpd then stops
 * accepting (health checks included) well short of the limit it was
 * given.  gemmd polls with epoll, so the limit can be raised to the
 * hard one; the workers get the old one back.
 */
static void setup_nofile(const struct config *cfg)
{
	uint64_t want = (uint64_t)cfg->max_connections + NOFILE_RESERVE;
	int r = nofile_raise(want);

	if (r == -ENFILE)
		log_warning("max-connections = %u needs %llu open files, over "
			    "the hard limit: lower it or raise LimitNOFILE=",
			    cfg->max_connections, (unsigned long long)want);
	else if (r < 0)
		log_warning_errno(r, "Cannot raise the open files limit: %m");
}

/*
 * Settings are read at start only.  SIGHUP, which a daemon is commonly
 * sent to reload, would have ended gemmd on the spot: its default
 * action, with held requests unanswered and, to systemd, a clean exit
 * that Restart=on-failure leaves down.
 */
static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si,
		     void *userdata)
{
	log_notice("SIGHUP: gemmd has no reload; restart it to apply "
		   "changed settings");
	return 0;
}

static int setup_event(sd_event **ret)
{
	sd_event *e;
	int r;

	r = sd_event_default(&e);
	if (r < 0)
		return r;
	r = sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL);
	if (r >= 0)
		r = sd_event_add_signal(e, NULL, SIGINT, NULL, NULL);
	if (r >= 0)
		r = sd_event_add_signal(e, NULL, SIGHUP, on_sighup, NULL);
	if (r >= 0)
		r = sd_event_set_watchdog(e, true);
	if (r < 0) {
		sd_event_unref(e);
		return r;
	}
	*ret = e;
	return 0;
}

static void load_catalog(const char *dir, struct catalog **ret)
{
	int r = catalog_load(dir, ret);

	if (r < 0) {
		log_warning_errno(r, "Cannot read kernels from %s: %m", dir);
		*ret = catalog_new();
		return;
	}
	log_info("%zu kernel(s) in %s", catalog_size(*ret), dir);
}

/*
 * READY=1 comes after the device probe, which may take up to
 * worker-start-timeout (a day at most).  gemmd.service sets no
 * TimeoutStartSec=: past systemd's default of 90 s, a slow probe under
 * a raised worker-start-timeout had gemmd killed as failed to start,
 * and started again by Restart=on-failure, for ever.  The unit cannot
 * know the setting; gemmd tells systemd how long to wait.
 * EXTEND_TIMEOUT_USEC= only ever lengthens the start timeout.
 */
static void notify_probing(const struct config *cfg)
{
	unsigned long long sec = (unsigned long long)cfg->worker_start_timeout +
				 PROBE_MARGIN_SEC;

	sd_notifyf(0, "EXTEND_TIMEOUT_USEC=%llu\nSTATUS=Probing GPUs",
		   sec * 1000000ull);
}

static int run(struct config *cfg)
{
	struct workers_config wcfg = {
		.worker_path = cfg->worker_path,
		.kernel_dir = cfg->kernel_dir,
		.start_timeout = cfg->worker_start_timeout,
		.retry = cfg->worker_retry,
	};
	struct http_config hcfg = {
		.listen = cfg->listen,
		.max_body = cfg->max_body,
		.max_connections = cfg->max_connections,
		.per_ip_connections = cfg->per_ip_connections,
		.connection_timeout = cfg->connection_timeout,
	};
	struct catalog *catalog = NULL;
	struct job_store *jobs = NULL;
	struct workers *workers = NULL;
	struct api *api = NULL;
	struct http_server *http = NULL;
	sd_event *event = NULL;
	int r, status = EXIT_FAILURE;

	setup_nofile(cfg);
	r = mkdir_p(cfg->state_dir);
	if (r < 0)
		log_warning_errno(r, "Cannot create state directory %s: %m",
				  cfg->state_dir);
	load_catalog(cfg->kernel_dir, &catalog);

	r = setup_event(&event);
	if (r < 0) {
		log_error_errno(r, "Cannot set up the event loop: %m");
		goto out_catalog;
	}
	jobs = job_store_new(cfg->max_queued, cfg->max_kept,
			     cfg->job_timeout_max);
	if (!jobs) {
		r = log_error_errno(-ENOMEM, "Out of memory");
		goto out_event;
	}
	r = workers_new(event, jobs, catalog, &wcfg, &workers);
	if (r < 0)
		goto out_jobs;
	notify_probing(cfg);
	r = workers_probe(workers);
	if (r == -ECANCELED) {
		/* SIGTERM during the probe: a clean stop, not a failure. */
		r = 0;
		goto out_workers;
	}
	if (r == -ENOEXEC)
		/* a broken install or a typo in "worker": as a config error */
		status = EXIT_CONFIG;
	if (r < 0)
		goto out_workers;
	r = api_new(event, jobs, workers, catalog, cfg->max_wait, &api);
	if (r < 0)
		goto out_workers;
	job_store_set_notify(jobs, api_job_changed, api);

	r = inherited_listener(&hcfg.listen_fd);
	if (r < 0) {
		/* gemmd.socket's to mend: a restart gets the same sockets */
		status = EXIT_CONFIG;
		goto out_api;
	}
	if (hcfg.listen_fd >= 0 && config_listen_changed(cfg))
		log_warning("listen = %s is not used: serving on the socket "
			    "systemd passed (ListenStream= in gemmd.socket)",
			    cfg->listen);
	r = http_server_new(event, &hcfg, api_handle, api, &http);
	if (r < 0)
		goto out_api;
	log_info("listening on %s", http_server_address(http));

	r = workers_start(workers);
	if (r < 0)
		goto out_http;
	sd_notifyf(0, "READY=1\nSTATUS=Serving on %s with %u GPU(s)",
		   http_server_address(http), workers_count(workers));

	r = sd_event_loop(event);
	if (r < 0)
		log_error_errno(r, "Event loop failed: %m");
	sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
	log_info("Stopping");

out_http:
	/* Held requests are answered before the server stops. */
	api_stop(api);
	http_server_flush(http, HELD_FLUSH_MS);
	api = api_free(api);
	http_server_free(http);
out_api:
	api_free(api);
out_workers:
	job_store_set_notify(jobs, NULL, NULL);
	workers_free(workers);
out_jobs:
	job_store_free(jobs);
out_event:
	sd_event_unref(event);
out_catalog:
	catalog_free(catalog);
	return r < 0 ? status : 0;
}

int main(int argc, char **argv)
{
	struct config cfg;
	sigset_t mask;
	int r;

	log_setup("gemmd");
	config_defaults(&cfg);
	r = config_parse_args(&cfg, argc, argv);
	if (r != 0)
		return r > 0 ? 0 : EXIT_CONFIG;
	if (cfg.debug)
		log_set_max_level(LOG_DEBUG);

	/* sd-event wants these blocked; workers get a clean mask back. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	return run(&cfg);
}
