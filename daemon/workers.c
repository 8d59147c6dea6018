// SPDX-License-Identifier: MIT
/*
 * workers.c - spawn, feed and supervise the per-GPU worker processes.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "frame.h"
#include "log.h"
#include "result.h"
#include "spec.h"
#include "util.h"
#include "workers.h"

#define PROBE_OUTPUT_MAX (1u << 20)
/* A crash loop backs off from 0.5 s, doubling, up to 30 s. */
#define RESTART_DELAY_MIN_USEC 250000ull
#define RESTART_DELAY_MAX_USEC (30 * 1000000ull)
#define START_FAILURES_MAX 5
/* A killed worker may be inside a kernel; the driver needs a moment. */
#define KILL_GRACE_USEC (2 * 1000000ull)
#define USEC_PER_SEC 1000000ull
/*
 * How long gemmd waits for its killed workers at shutdown, all of them:
 * one stuck in the driver may never go, and systemd's TimeoutStopSec=
 * (30 s) would kill gemmd and count the stop as failed.
 */
#define REAP_TIMEOUT_USEC (5 * USEC_PER_SEC)

enum worker_state {
	WORKER_STARTING,
	WORKER_READY,
	WORKER_BUSY,
	WORKER_RESTARTING,
	WORKER_FAILED,
	WORKER_STOPPING, /* alive, but going away: no more jobs */
	_WORKER_STATE_MAX,
};

enum kill_reason {
	KILL_NONE,
	KILL_TIMEOUT,
	KILL_CANCEL,
	KILL_FAULT, /* it broke the protocol: last_error says how */
};

struct worker {
	struct workers *pool;
	int index;
	enum worker_state state;
	pid_t pid;
	int fd;
	sd_event_source *io, *child, *timer;
	sd_event_source *watchdog; /* kills a worker that stops answering */
	struct frame_reader fr;
	json_t *device; /* from the probe, then from the worker */
	struct job *job;
	enum kill_reason kill;
	unsigned int restarts;
	unsigned int start_failures;
	unsigned int crashes; /* exits not asked for since a job finished */
	bool took_job; /* was sent a job since it was spawned */
	uint64_t spawned_usec; /* CLOCK_MONOTONIC */
	char last_error[256];
};

struct workers {
	sd_event *event;
	struct job_store *jobs;
	const struct catalog *catalog;
	char worker_path[4096];
	char kernel_dir[4096];
	/*
	 * A worker says hello once it has a CUDA context, which takes
	 * seconds.  One stuck in cuInit() on a wedged GPU never would, and
	 * the jobs queued for its device would wait for it forever.  The
	 * probe gets as long.
	 */
	uint64_t start_timeout_usec;
	uint64_t retry_usec; /* how long a failed worker rests; 0: for good */
	struct worker *w;
	unsigned int n;
	bool shutting_down;
};

static const char *const worker_state_names[_WORKER_STATE_MAX] = {
	[WORKER_STARTING] = "starting", [WORKER_READY] = "ready",
	[WORKER_BUSY] = "busy",		[WORKER_RESTARTING] = "restarting",
	[WORKER_FAILED] = "failed",	[WORKER_STOPPING] = "stopping",
};

static int worker_spawn(struct worker *w);

int workers_new(sd_event *event, struct job_store *jobs,
		const struct catalog *catalog, const struct workers_config *cfg,
		struct workers **ret)
{
	struct workers *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->event = sd_event_ref(event);
	p->jobs = jobs;
	p->catalog = catalog;
	snprintf(p->worker_path, sizeof(p->worker_path), "%s",
		 cfg->worker_path);
	snprintf(p->kernel_dir, sizeof(p->kernel_dir), "%s", cfg->kernel_dir);
	p->start_timeout_usec = cfg->start_timeout * USEC_PER_SEC;
	p->retry_usec = cfg->retry * USEC_PER_SEC;
	*ret = p;
	return 0;
}

static void worker_release(struct worker *w)
{
	w->io = sd_event_source_disable_unref(w->io);
	w->timer = sd_event_source_disable_unref(w->timer);
	w->watchdog = sd_event_source_disable_unref(w->watchdog);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	frame_reader_done(&w->fr);
}

/* Whether pid, killed, was reaped by the deadline. */
static bool reap(pid_t pid, uint64_t deadline)
{
	for (;;) {
		pid_t got = waitpid(pid, NULL, WNOHANG);

		if (got == pid || (got < 0 && errno != EINTR))
			return true;
		if (now_usec() >= deadline)
			return false;
		sleep_ms(10);
	}
}

/*
 * Every worker is killed before any is waited for: each may take a
 * while to let go of its GPU, and they do so side by side.
 */
static void workers_kill_all(struct workers *p)
{
	uint64_t deadline = now_usec() + REAP_TIMEOUT_USEC;
	unsigned int i;

	for (i = 0; i < p->n; i++)
		if (p->w[i].pid > 0)
			kill(p->w[i].pid, SIGKILL);
	for (i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];

		if (w->pid > 0 && !reap(w->pid, deadline))
			log_warning("Worker %d (pid %d) outlived SIGKILL",
				    w->index, (int)w->pid);
		w->pid = 0;
	}
}

struct workers *workers_free(struct workers *p)
{
	unsigned int i;

	if (!p)
		return NULL;
	p->shutting_down = true;
	workers_kill_all(p);
	for (i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];

		worker_release(w);
		w->child = sd_event_source_disable_unref(w->child);
		json_decref(w->device);
	}
	free(p->w);
	sd_event_unref(p->event);
	free(p);
	return NULL;
}

/*
 * In the child: gemmd's own descriptors are all close-on-exec, but one
 * it inherited (started from a shell or a script, not from systemd)
 * would pass on to a worker and be held open for as long as it runs.
 */
static void close_inherited(int from)
{
	long fd, max;

	if (close_range((unsigned int)from, ~0U, 0) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	for (fd = from; fd < max; fd++)
		close((int)fd);
}

/* fork+exec with fd 3 (or stdout) wired to our end of a socket/pipe. */
static int spawn(const char *path, char *const argv[], int child_fd,
		 int target_fd, pid_t *ret_pid)
{
	pid_t parent = getpid(), pid;
	sigset_t all;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		*ret_pid = pid;
		return 0;
	}
	/*
	 * Child: never outlive gemmd, even if it is killed outright.  Set
	 * here, where gemmd's pid is known, so that a death just before it
	 * is caught too; it lasts through exec.  The worker could not tell
	 * from getppid() alone: gemmd may be PID 1 itself (a container's).
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	/* Undo the supervisor's mask and limits, wire the fd, exec. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	/*
	 * SIGHUP is for gemmd, which logs it, but "systemctl kill -s HUP"
	 * (as a logrotate script sends it) signals every process of the
	 * service: a worker would die of it with its job.
	 */
	signal(SIGHUP, SIG_IGN);
	nofile_restore();
	if (child_fd == target_fd)
		fd_set_cloexec(child_fd, false);
	else if (dup2(child_fd, target_fd) < 0)
		_exit(127);
	close_inherited(MAX(target_fd, STDERR_FILENO) + 1);
	execv(path, argv);
	fprintf(stderr, "gemmd: cannot run %s: %s\n", path, strerror(errno));
	_exit(127);
}

/*
 * A stop asked for while the probe runs.  SIGTERM stays blocked until the
 * event loop takes it, and systemd must not wait out a hung probe.
 */
static bool stop_pending(void)
{
	sigset_t set;

	return sigpending(&set) == 0 && (sigismember(&set, SIGTERM) == 1 ||
					 sigismember(&set, SIGINT) == 1);
}

/* Until the deadline, or -ECANCELED at once when gemmd is told to stop. */
static int wait_slice(uint64_t deadline, int *ret_ms)
{
	uint64_t now = now_usec();

	if (stop_pending())
		return -ECANCELED;
	if (now >= deadline)
		return -ETIMEDOUT;
	*ret_ms = (int)MIN((deadline - now + 999) / 1000, 100);
	return 0;
}

static int read_probe_output(int fd, uint64_t deadline, char **ret)
{
	_cleanup_free_ char *buf = malloc(PROBE_OUTPUT_MAX + 1);
	size_t len = 0;
	int ms;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r = wait_slice(deadline, &ms);

		if (r < 0)
			return (int)r;
		r = poll(&pfd, 1, ms);
		if (r == 0 || (r < 0 && errno == EINTR))
			continue;
		if (r < 0)
			return -errno;
		r = read(fd, buf + len, PROBE_OUTPUT_MAX - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == PROBE_OUTPUT_MAX)
			return -EFBIG;
	}
	buf[len] = '\0';
	*ret = TAKE_PTR(buf);
	return 0;
}

/* A probe may close its output and still hang: it gets the same deadline. */
static int probe_wait(pid_t pid, uint64_t deadline, int *ret_status)
{
	int status, ms, r;

	for (;;) {
		pid_t got = waitpid(pid, &status, WNOHANG);

		if (got == pid) {
			*ret_status = status;
			return 0;
		}
		if (got < 0 && errno != EINTR)
			return -errno;
		r = wait_slice(deadline, &ms);
		if (r < 0)
			return r;
		sleep_ms((unsigned int)MIN(ms, 10));
	}
}

/*
 * Kill a probe that overran.  One stuck in the driver may not die at
 * once; it is not waited for long, and systemd reaps what is left.
 */
static void probe_kill(pid_t pid)
{
	int i;

	kill(pid, SIGKILL);
	for (i = 0; i < 100; i++) {
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return;
		sleep_ms(10);
	}
	log_warning("The device probe (pid %d) did not die when killed",
		    (int)pid);
}

/* -EBADMSG for output that is not {"devices": [OBJECT...]}. */
static int parse_probe(struct workers *p, const char *out)
{
	json_error_t jerr;
	json_t *root, *devs, *d;
	size_t i;

	root = json_loads(out, 0, &jerr);
	devs = json_object_get(root, "devices");
	if (!json_is_array(devs)) {
		json_decref(root);
		return -EBADMSG;
	}
	/* Each one is a worker's device: its limits, its identity. */
	json_array_foreach(devs, i, d) {
		if (!json_is_object(d)) {
			json_decref(root);
			return -EBADMSG;
		}
	}
	p->w = calloc(json_array_size(devs) ? json_array_size(devs) : 1,
		      sizeof(*p->w));
	if (!p->w) {
		json_decref(root);
		return -ENOMEM;
	}
	json_array_foreach(devs, i, d) {
		struct worker *w = &p->w[p->n++];

		w->pool = p;
		w->index = (int)i;
		w->fd = -1;
		w->state = WORKER_STARTING;
		w->device = json_incref(d);
	}
	json_decref(root);
	return 0;
}

/* "exited with status 1", "killed by signal SEGV": code is either. */
static void describe_end(bool exited, int code, char *buf, size_t len)
{
	if (exited)
		snprintf(buf, len, "exited with status %d", code);
	else
		snprintf(buf, len, "killed by signal %s",
			 sigabbrev_np(code) ? sigabbrev_np(code) : "?");
}

/* Runs "gemmd-worker --probe" and leaves its output in *ret_out. */
static int probe_run(struct workers *p, char **ret_out, char *how,
		     size_t howlen)
{
	char *argv[] = { p->worker_path, (char *)"--probe", NULL };
	uint64_t deadline = now_usec() + p->start_timeout_usec;
	int pipefd[2], status = 0, r;
	pid_t pid = 0;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	r = spawn(p->worker_path, argv, pipefd[1], STDOUT_FILENO, &pid);
	close(pipefd[1]);
	if (r < 0) {
		close(pipefd[0]);
		snprintf(how, howlen, "could not start: %s", strerror(-r));
		return r;
	}
	r = read_probe_output(pipefd[0], deadline, ret_out);
	close(pipefd[0]);
	if (r >= 0)
		r = probe_wait(pid, deadline, &status);
	if (r < 0) {
		probe_kill(pid);
		if (r == -ETIMEDOUT)
			snprintf(how, howlen, "took over %llu s",
				 (unsigned long long)(p->start_timeout_usec /
						      USEC_PER_SEC));
		else
			snprintf(how, howlen, "failed: %s", strerror(-r));
		return r;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	describe_end(WIFEXITED(status),
		     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
		     how, howlen);
	return -EIO;
}

/*
 * A worker that is not there is a broken install or a typo in "worker",
 * not a node without GPUs: its probe would fail as one without a driver
 * does, and gemmd would serve with no devices.
 */
static int worker_runnable(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	return RET_NERRNO(access(path, X_OK));
}

int workers_probe(struct workers *p)
{
	_cleanup_free_ char *out = NULL;
	char how[64] = "";
	int r;

	r = worker_runnable(p->worker_path);
	if (r < 0) {
		log_error_errno(r, "Cannot run the worker %s: %m",
				p->worker_path);
		return -ENOEXEC;
	}
	r = probe_run(p, &out, how, sizeof(how));
	if (r == -ECANCELED) {
		log_info("Told to stop during the device probe");
		return r;
	}
	if (r < 0) {
		log_warning("No GPUs: the device probe (%s --probe) %s; "
			    "serving without devices",
			    p->worker_path, how);
		return 0;
	}
	/*
	 * A probe that succeeds without a device list is not from a
	 * gemmd-worker ("worker" names some other program) or from one of
	 * another build: a broken install, as one that cannot be run, which
	 * no restart mends.
	 */
	r = parse_probe(p, out);
	if (r == -EBADMSG) {
		log_error(
			"The worker %s is no gemmd-worker: its probe (--probe) "
			"gave no device list",
			p->worker_path);
		return -ENOEXEC;
	}
	if (r < 0)
		return log_error_errno(r, "Cannot keep the device list: %m");
	log_info("%u GPU(s) found", p->n);
	return 0;
}

static void worker_set_state(struct worker *w, enum worker_state st)
{
	w->state = st;
	log_debug("worker %d: %s", w->index, worker_state_names[st]);
}

/*
 * What a job says of its GPU: enough to tell boards, drivers and CUDA
 * versions apart when results from a fleet are put side by side.
 */
static json_t *device_identity(const struct worker *w)
{
	return json_pack("{s:i, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "index",
			 w->index, "name", json_object_get(w->device, "name"),
			 "uuid", json_object_get(w->device, "uuid"), "serial",
			 json_object_get(w->device, "serial"), "vbios",
			 json_object_get(w->device, "vbios"), "nvidia_driver",
			 json_object_get(w->device, "nvidia_driver"),
			 "cuda_driver",
			 json_object_get(w->device, "driver_version"));
}

/*
 * Kills the worker for why and hands back its job, which the caller ends
 * now rather than when the exit is reaped: a worker stuck in the driver
 * of a hung GPU may outlive SIGKILL for long, and its job stayed running
 * all that time (past its deadline, or after its cancel or the fault).
 * The worker stays busy until it is gone.
 */
static struct job *worker_kill(struct worker *w, enum kill_reason why)
{
	struct job *job = w->job;

	w->kill = why;
	w->job = NULL;
	w->timer = sd_event_source_disable_unref(w->timer);
	kill(w->pid, SIGKILL);
	return job;
}

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct worker *w = userdata;
	struct job *job = w->job;

	if (!job || w->pid <= 0)
		return 0;
	log_warning(
		"Job %s passed its %us deadline on GPU %d: killing worker %d",
		job->id, job->deadline_sec, w->index, (int)w->pid);
	worker_kill(w, KILL_TIMEOUT);
	job_finish(w->pool->jobs, job, JOB_TIMEOUT, NULL,
		   "ran past its %us deadline; worker killed",
		   job->deadline_sec);
	return 0;
}

/*
 * A worker that breaks the protocol can be trusted with neither its job
 * nor the next: kill it, fail its job with the fault, and let
 * on_worker_exit() start a new one.  Said once: what it sends after that
 * is not read.
 */
static void worker_fault(struct worker *w, const char *fmt, ...)
{
	struct job *job;
	char what[200];
	va_list ap;

	if (w->kill != KILL_NONE)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	log_warning("Worker %d (pid %d) %s: killing it", w->index, (int)w->pid,
		    what);
	utf8_copy(w->last_error, sizeof(w->last_error), what);
	w->kill = KILL_FAULT;
	worker_set_state(w, WORKER_STOPPING);
	/* Found in what it said last: on_worker_exit() ends the job. */
	if (w->pid <= 0)
		return;
	job = worker_kill(w, KILL_FAULT);
	if (job)
		job_finish(w->pool->jobs, job, JOB_FAILED, NULL,
			   "worker for GPU %d killed: %s", w->index,
			   w->last_error);
}

static void worker_watch(struct worker *w, uint64_t usec,
			 sd_event_time_handler_t handler)
{
	int r;

	w->watchdog = sd_event_source_disable_unref(w->watchdog);
	r = sd_event_add_time_relative(w->pool->event, &w->watchdog,
				       CLOCK_MONOTONIC, usec, 0, handler, w);
	if (r < 0) {
		/* No timer, no grace: what it would have done is done now. */
		log_warning_errno(r, "GPU %d: cannot arm a timer: %m",
				  w->index);
		handler(NULL, 0, w);
	}
}

static int worker_send_job(struct worker *w, struct job *job)
{
	json_t *msg;
	int r;

	msg = json_pack("{s:s, s:s, s:o, s:o}", "type", "run", "id", job->id,
			"spec", spec_to_json(&job->spec), "plan",
			plan_to_json(&job->plan));
	if (!msg)
		return -ENOMEM;
	r = frame_write(w->fd, msg);
	json_decref(msg);
	return r;
}

static int worker_limits(const struct worker *w, struct device_limits *l)
{
	device_limits_from_json(w->device, l);
	return 0;
}

/* A job must not run without its deadline: armed before it is sent. */
static int worker_arm_deadline(struct worker *w, const struct job *job)
{
	uint64_t timeout = (uint64_t)job->deadline_sec * 1000000ull;

	return sd_event_add_time_relative(w->pool->event, &w->timer,
					  CLOCK_MONOTONIC, timeout, 0,
					  on_deadline, w);
}

/*
 * The next queued job for this worker, planned again for its device: its
 * limits are the ones that count.  A job that cannot be planned fails
 * here, naming the GPU, and the next one is tried, so that it does not
 * hold up the queue.  It keeps the plan it was accepted with:
 * plan_resolve() writes none when it refuses.  The job returned has its
 * deadline armed.
 */
static struct job *worker_next_job(struct worker *w)
{
	struct workers *p = w->pool;
	struct gemmd_error err;
	struct device_limits lim;
	struct job *job;
	int r;

	worker_limits(w, &lim);
	while ((job = job_store_next_for(p->jobs, w->index))) {
		if (plan_resolve(p->catalog, &job->spec, &lim, &job->plan,
				 &err) < 0) {
			job_finish(p->jobs, job, JOB_FAILED, NULL,
				   "on GPU %d: %s", w->index, err.message);
			continue;
		}
		r = worker_arm_deadline(w, job);
		if (r >= 0)
			return job;
		job_finish(p->jobs, job, JOB_FAILED, NULL,
			   "on GPU %d: gemmd cannot arm its deadline: %s",
			   w->index, strerror(-r));
	}
	return NULL;
}

static void worker_dispatch(struct worker *w)
{
	struct workers *p = w->pool;
	struct job *job;
	json_t *ident;
	int r;

	job = worker_next_job(w);
	if (!job)
		return;
	job->planned = true;
	r = worker_send_job(w, job);
	if (r < 0) {
		/* The job stays queued for the worker that replaces it. */
		w->timer = sd_event_source_disable_unref(w->timer);
		worker_fault(w, "cannot be sent a job: %s", strerror(-r));
		return;
	}
	ident = device_identity(w);
	job_start(p->jobs, job, ident);
	json_decref(ident);
	/*
	 * Started: it took a job.  A hello alone does not show it: one that
	 * breaks the protocol with its hello (read in the same turn, so no
	 * job is sent first) or dies right after it would otherwise clear
	 * the count each time, its GPU would never go out of service, and
	 * the jobs queued for that GPU, which have no deadline, would wait
	 * for good.
	 */
	w->took_job = true;
	w->start_failures = 0;
	w->job = job;
	/* A crash during this job must not quote an earlier job's error. */
	w->last_error[0] = '\0';
	w->kill = KILL_NONE;
	worker_set_state(w, WORKER_BUSY);
}

void workers_kick(struct workers *p)
{
	unsigned int i;

	for (i = 0; i < p->n; i++)
		if (p->w[i].state == WORKER_READY)
			worker_dispatch(&p->w[i]);
}

/* Busy with no job: resting after one, alive and not being killed. */
static bool worker_rests(const struct worker *w)
{
	return w->state == WORKER_BUSY && w->kill == KILL_NONE && w->pid > 0 &&
	       !w->job;
}

static int on_rested(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct worker *w = userdata;

	w->timer = sd_event_source_disable_unref(w->timer);
	if (!worker_rests(w))
		return 0;
	worker_set_state(w, WORKER_READY);
	workers_kick(w->pool);
	return 0;
}

static void worker_job_done(struct worker *w)
{
	uint64_t rest = (uint64_t)w->job->spec.cooldown_ms * 1000ull;

	/* It can run jobs: whatever killed it before did not last. */
	w->crashes = 0;
	w->job = NULL;
	w->timer = sd_event_source_disable_unref(w->timer);
	/*
	 * An answer drained from the socket of a worker that has died
	 * (on_worker_exit()) leaves it as it is: a next job sent to it
	 * would fail as killed without having run.  (One from a worker
	 * killed for its job never gets here: killed_for_job().)
	 */
	if (!worker_rests(w))
		return;
	/*
	 * The worker answers, then rests for the job's cooldown_ms, and
	 * reads no job meanwhile.  One sent at once ran through the rest:
	 * its deadline counted it, so that a job behind a long cool-down
	 * could end "timeout" without having run, and its started_at came
	 * before it did.  The worker stays busy, with no job, until it has
	 * rested; on time (accuracy 1 us: the default 250 ms would idle
	 * the GPU longer than the rest itself).  Without a timer, ready
	 * now, as before.
	 */
	if (rest && sd_event_add_time_relative(w->pool->event, &w->timer,
					       CLOCK_MONOTONIC, rest, 1,
					       on_rested, w) >= 0)
		return;
	worker_set_state(w, WORKER_READY);
}

/*
 * Killed for its job's deadline or a cancel, which ended the job then:
 * what the worker still says of it comes too late.
 */
static bool killed_for_job(const struct worker *w)
{
	return !w->job && (w->kill == KILL_TIMEOUT || w->kill == KILL_CANCEL);
}

static void on_hello(struct worker *w, json_t *msg)
{
	json_t *dev = json_object_get(msg, "device");

	/*
	 * Read from the socket of one already gone (on_worker_exit()'s
	 * drain): it died as it started.  Taken as a hello, it made the
	 * dead one ready, and it was sent a job.
	 */
	if (w->pid <= 0) {
		log_debug("Worker %d: a hello read after it exited: no start",
			  w->index);
		return;
	}
	if (w->state != WORKER_STARTING) {
		worker_fault(w, "said hello twice");
		return;
	}
	w->watchdog = sd_event_source_disable_unref(w->watchdog);
	if (json_is_object(dev)) {
		json_decref(w->device);
		w->device = json_incref(dev);
	}
	worker_set_state(w, WORKER_READY);
	log_info("Worker %d (pid %d) ready on GPU %d", w->index, (int)w->pid,
		 w->index);
}

static void on_result(struct worker *w, json_t *msg)
{
	struct workers *p = w->pool;
	const char *id = json_string_value(json_object_get(msg, "id"));
	json_t *result = json_object_get(msg, "result");
	struct gemm_result check;

	if (killed_for_job(w))
		return;
	if (!w->job || !id || strcmp(id, w->job->id) != 0) {
		log_warning("Worker %d sent a result for a job it does not run",
			    w->index);
		return;
	}
	if (!json_is_object(result)) {
		worker_fault(w, "sent a result without one");
		return;
	}
	/*
	 * Served as it came, but read first as gemmd reads results: one
	 * with its timing or verdict missing or mistyped (a worker of
	 * another build, or a bug) is the worker's fault, not a "done" job
	 * whose answer clients cannot use.
	 */
	if (result_from_json(result, &check) < 0) {
		worker_fault(w, "sent a result gemmd cannot read");
		return;
	}
	free(check.timing.raw_us);
	job_finish(p->jobs, w->job, JOB_DONE, json_incref(result), NULL);
	worker_job_done(w);
}

/*
 * A worker stuck on its way out after a sticky error (in the driver,
 * behind a kernel that never ends) would stay "stopping" for good, and
 * the jobs queued for its GPU, which have no deadline, would wait for
 * it for good too.
 */
static int on_sticky_grace(sd_event_source *s, uint64_t usec, void *userdata)
{
	worker_fault(userdata, "reported a sticky error but did not exit");
	return 0;
}

static void on_error(struct worker *w, json_t *msg)
{
	struct workers *p = w->pool;
	const char *text = json_string_value(json_object_get(msg, "message"));
	const char *id = json_string_value(json_object_get(msg, "id"));
	bool sticky = json_is_true(json_object_get(msg, "sticky"));
	char stray[sizeof(w->last_error)];

	if (killed_for_job(w))
		return;
	/*
	 * One for another job is logged, and kept out of last_error: a
	 * crash of the running job would have quoted it as its reason.
	 * Cut to fit, either must still be UTF-8: it ends up in JSON.
	 */
	if (id && (!w->job || strcmp(id, w->job->id))) {
		utf8_copy(stray, sizeof(stray), text ? text : "unknown error");
		log_warning("Worker %d sent an error for a job it does not "
			    "run: %s",
			    w->index, stray);
	} else {
		utf8_copy(w->last_error, sizeof(w->last_error),
			  text ? text : "unknown error");
		/* An error without an id is the worker's own: ends its job. */
		if (w->job) {
			job_finish(p->jobs, w->job, JOB_FAILED, NULL, "%s",
				   w->last_error);
			worker_job_done(w);
		}
	}
	/*
	 * A sticky error poisons the CUDA context and the worker exits
	 * after saying so: a job sent now would die with it.  The next job
	 * waits for the worker that replaces it.
	 */
	if (sticky) {
		worker_set_state(w, WORKER_STOPPING);
		worker_watch(w, KILL_GRACE_USEC, on_sticky_grace);
	}
}

static void worker_handle(struct worker *w, json_t *msg)
{
	const char *type = json_string_value(json_object_get(msg, "type"));

	if (!type)
		worker_fault(w, "sent a message without a type");
	else if (!strcmp(type, "hello"))
		on_hello(w, msg);
	else if (!strcmp(type, "result"))
		on_result(w, msg);
	else if (!strcmp(type, "error"))
		on_error(w, msg);
}

static void worker_read_frames(struct worker *w)
{
	json_t *msg;
	int r;

	while (w->kill != KILL_FAULT) {
		r = frame_reader_next(&w->fr, &msg);
		if (r == -EMSGSIZE)
			worker_fault(w, "sent a frame over %u bytes",
				     FRAME_MAX);
		else if (r < 0)
			worker_fault(w,
				     "sent a frame that is not a JSON object");
		if (r <= 0)
			return;
		worker_handle(w, msg);
		json_decref(msg);
	}
}

static int on_exit_grace(sd_event_source *s, uint64_t usec, void *userdata)
{
	worker_fault(userdata, "closed its socket but did not exit");
	return 0;
}

static int on_worker_io(sd_event_source *s, int fd, uint32_t revents,
			void *userdata)
{
	struct worker *w = userdata;
	int r;

	r = frame_reader_feed(&w->fr, fd);
	worker_read_frames(w);
	if (r < 0) {
		/*
		 * End of stream.  An exiting worker closes its socket too,
		 * so wait a moment for the exit before calling it a fault:
		 * one that stays alive without it would never get a job.
		 */
		w->io = sd_event_source_disable_unref(w->io);
		/*
		 * What is left once the whole frames are taken is a frame
		 * the end of the stream cut short: the last thing it said,
		 * lost, is a fault, quoted in the reason of its job, not
		 * only "exited with status 0".
		 */
		/*
		 * One stopping after a sticky error has its grace running
		 * already: a second, from the close, let it live up to
		 * twice as long and blamed the close, not the error.
		 */
		if (frame_reader_partial(&w->fr))
			worker_fault(w, "sent a frame cut short");
		else if (w->kill == KILL_NONE && w->state != WORKER_STOPPING)
			worker_watch(w, KILL_GRACE_USEC, on_exit_grace);
		return 0;
	}
	workers_kick(w->pool);
	return 0;
}

static void describe_exit(const siginfo_t *si, char *buf, size_t len)
{
	describe_end(si->si_code == CLD_EXITED, si->si_status, buf, len);
}

/*
 * The job a dead worker was running ends with the reason it died.  One
 * killed for its deadline, a cancel or a fault has none left:
 * worker_kill()'s callers end the job when they kill.
 */
static void fail_running_job(struct worker *w, const char *how)
{
	struct job *job = w->job;

	if (!job)
		return;
	job_finish(w->pool->jobs, job, JOB_FAILED, NULL,
		   "worker for GPU %d %s%s%s", w->index, how,
		   w->last_error[0] ? ": " : "", w->last_error);
	w->job = NULL;
}

/*
 * A queued job that cannot run any more: it names a GPU out of service,
 * or names none while every GPU is.  It fails now, with the reason,
 * rather than wait for a worker that may never come back.
 */
static void fail_stranded_jobs(struct workers *p, struct worker *w)
{
	char why[200];
	struct job *job;

	if (!workers_in_service(p, w->index, NULL, why, sizeof(why)))
		while ((job = job_store_next_named(p->jobs, w->index)))
			job_finish(p->jobs, job, JOB_FAILED, NULL, "%s", why);
	if (!workers_in_service(p, -1, NULL, why, sizeof(why)))
		while ((job = job_store_next_named(p->jobs, -1)))
			job_finish(p->jobs, job, JOB_FAILED, NULL, "%s", why);
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata);

/* Out of service until the retry, with what went wrong in last_error. */
static void worker_out_of_service(struct worker *w, const char *how)
{
	struct workers *p = w->pool;
	char what[sizeof(w->last_error)];

	/* Formatted aside: it quotes last_error. */
	utf8_format(what, sizeof(what),
		    "its worker failed to start %u times in a row (last: "
		    "%s%s%s)",
		    w->start_failures, how, w->last_error[0] ? ": " : "",
		    w->last_error);
	memcpy(w->last_error, what, sizeof(what));
	worker_set_state(w, WORKER_FAILED);
	log_error("GPU %d is out of service: %s", w->index, w->last_error);
	/*
	 * While failed, the timer is the retry's, or there is none.  Its
	 * time is told to clients (Retry-After), so it fires on time: with
	 * sd-event's default accuracy (0: 250 ms) a client that came back
	 * when told could still find the GPU out.
	 */
	if (p->retry_usec &&
	    sd_event_add_time_relative(p->event, &w->timer, CLOCK_MONOTONIC,
				       p->retry_usec, 1, on_retry, w) < 0)
		log_error("GPU %d: cannot arm its retry: it stays out of "
			  "service until gemmd restarts",
			  w->index);
	fail_stranded_jobs(p, w);
}

static void schedule_restart(struct worker *w, const char *how);

/* A spawn that failed counts as a start that failed. */
static void worker_respawn(struct worker *w)
{
	char how[128];
	int r;

	w->restarts++;
	r = worker_spawn(w);
	if (r >= 0)
		return;
	snprintf(how, sizeof(how), "could not be started: %s", strerror(-r));
	log_error("Worker %d %s", w->index, how);
	w->start_failures++;
	w->crashes++;
	schedule_restart(w, how);
}

static int on_restart(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct worker *w = userdata;

	w->timer = sd_event_source_disable_unref(w->timer);
	worker_respawn(w);
	return 0;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct worker *w = userdata;

	w->timer = sd_event_source_disable_unref(w->timer);
	log_info("Trying GPU %d again", w->index);
	/* One try: a failed start puts it straight back out of service. */
	w->start_failures = START_FAILURES_MAX - 1;
	w->crashes = 0;
	worker_respawn(w);
	return 0;
}

static uint64_t restart_delay(const struct worker *w)
{
	/* One that died right after a kill restarts after a grace. */
	if (!w->crashes)
		return KILL_GRACE_USEC / 4;
	/* One that keeps dying, before hello or after it, backs off. */
	return MIN(RESTART_DELAY_MIN_USEC << MIN(w->crashes, 8u),
		   RESTART_DELAY_MAX_USEC);
}

static void schedule_restart(struct worker *w, const char *how)
{
	struct workers *p = w->pool;
	int r;

	if (p->shutting_down)
		return;
	if (w->start_failures >= START_FAILURES_MAX) {
		worker_out_of_service(w, how);
		return;
	}
	worker_set_state(w, WORKER_RESTARTING);
	r = sd_event_add_time_relative(p->event, &w->timer, CLOCK_MONOTONIC,
				       restart_delay(w), 0, on_restart, w);
	if (r < 0) {
		/*
		 * Nothing would restart it later: now, without the back-off.
		 * Failed starts still count, so this cannot loop for ever.
		 */
		log_warning_errno(r, "GPU %d: cannot arm its restart: %m",
				  w->index);
		worker_respawn(w);
	}
}

/* An exit we neither asked for nor were told of (a sticky error) is a crash. */
static bool worker_crashed(const struct worker *w)
{
	if (w->kill == KILL_FAULT)
		return true;
	return w->kill == KILL_NONE && w->state != WORKER_STOPPING;
}

static int on_worker_exit(sd_event_source *s, const siginfo_t *si,
			  void *userdata)
{
	struct worker *w = userdata;
	char how[64];

	describe_exit(si, how, sizeof(how));
	if (w->kill == KILL_NONE)
		log_warning("Worker %d (pid %d) %s", w->index, (int)w->pid,
			    how);
	/* Gone: a fault found in what it said last has nothing to kill. */
	w->pid = 0;
	/*
	 * Gone before it took a job: a start that failed, whether it said
	 * hello or not, and also when it was killed for taking too long to
	 * say it or for breaking the protocol.  Not one that was ready for
	 * longer than a start may take and no job came: it had started, and
	 * five such deaths, hours apart on an idle GPU, must not put it out
	 * of service as "failed to start".  Its crashes still back off.
	 */
	if (w->took_job ||
	    now_usec() - w->spawned_usec >= w->pool->start_timeout_usec)
		w->start_failures = 0;
	else
		w->start_failures++;
	/* Drain what it said last (an error message) before judging it. */
	if (w->io)
		on_worker_io(w->io, w->fd, EPOLLIN, w);
	if (worker_crashed(w))
		w->crashes++;
	fail_running_job(w, how);
	w->child = sd_event_source_disable_unref(w->child);
	worker_release(w);
	schedule_restart(w, how);
	return 0;
}

static int on_hello_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct worker *w = userdata;

	worker_fault(w, "said no hello within %llu s",
		     (unsigned long long)(w->pool->start_timeout_usec /
					  USEC_PER_SEC));
	return 0;
}

static int worker_spawn(struct worker *w)
{
	struct workers *p = w->pool;
	char index[16];
	char *argv[] = { p->worker_path, (char *)"--device",
			 index,		 (char *)"--fd",
			 (char *)"3",	 (char *)"--kernel-dir",
			 p->kernel_dir,	 NULL };
	int sv[2], r;

	snprintf(index, sizeof(index), "%d", w->index);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	r = spawn(p->worker_path, argv, sv[1], 3, &w->pid);
	close(sv[1]);
	if (r < 0) {
		close(sv[0]);
		return r;
	}
	w->fd = sv[0];
	w->last_error[0] = '\0';
	w->kill = KILL_NONE;
	w->took_job = false;
	w->spawned_usec = now_usec();
	fd_set_nonblock(w->fd, true);
	worker_set_state(w, WORKER_STARTING);
	r = sd_event_add_io(p->event, &w->io, w->fd, EPOLLIN, on_worker_io, w);
	if (r >= 0)
		r = sd_event_add_child(p->event, &w->child, w->pid, WEXITED,
				       on_worker_exit, w);
	if (r >= 0)
		r = sd_event_add_time_relative(p->event, &w->watchdog,
					       CLOCK_MONOTONIC,
					       p->start_timeout_usec, 0,
					       on_hello_timeout, w);
	if (r < 0) {
		/* reaped here: its child source must not outlive it */
		w->child = sd_event_source_disable_unref(w->child);
		kill(w->pid, SIGKILL);
		waitpid(w->pid, NULL, 0);
		w->pid = 0;
		worker_release(w);
		return r;
	}
	return 0;
}

int workers_start(struct workers *p)
{
	unsigned int i;
	int r;

	for (i = 0; i < p->n; i++) {
		r = worker_spawn(&p->w[i]);
		if (r < 0)
			return log_error_errno(r, "Cannot start worker %u: %m",
					       i);
	}
	return 0;
}

void workers_cancel(struct workers *p, struct job *job)
{
	unsigned int i;

	for (i = 0; i < p->n; i++) {
		struct worker *w = &p->w[i];

		if (w->job != job || w->pid <= 0)
			continue;
		/* No way to stop a kernel from outside: end the process. */
		worker_kill(w, KILL_CANCEL);
		job_finish(p->jobs, job, JOB_CANCELLED, NULL,
			   "cancelled while running; worker restarted");
		return;
	}
	job_finish(p->jobs, job, JOB_CANCELLED, NULL, "cancelled while queued");
}

unsigned int workers_count(const struct workers *p)
{
	return p->n;
}

/* When a failed worker is tried next (CLOCK_MONOTONIC), if it is. */
static bool next_try(const struct worker *w, uint64_t *ret)
{
	return w->timer && sd_event_source_get_time(w->timer, ret) >= 0;
}

/*
 * Why the GPU is out, and the whole seconds to its next try, rounded up,
 * or 0 if there is none.  The message quotes the number the caller hands
 * on to the client, so that the two never disagree.
 */
static unsigned int describe_outage(const struct worker *w, char *buf,
				    size_t len)
{
	uint64_t now = now_usec(), at;
	unsigned int sec = 0;
	char when[64];

	/* A try that is due: 1 s, the least a Retry-After can say. */
	if (next_try(w, &at))
		sec = (unsigned int)DIV_ROUND_UP(MAX(at, now + 1) - now,
						 USEC_PER_SEC);
	if (!sec)
		snprintf(when, sizeof(when),
			 "not retried until gemmd restarts");
	else
		snprintf(when, sizeof(when), "next try in %u s", sec);
	utf8_format(buf, len, "GPU %d is out of service (%s): %s", w->index,
		    when, w->last_error);
	return sec;
}

/* Of the GPUs, all out of service, the one tried first (or GPU 0). */
static const struct worker *soonest_back(const struct workers *p)
{
	const struct worker *best = &p->w[0];
	uint64_t at, best_at;
	bool have = next_try(best, &best_at);
	unsigned int i;

	for (i = 1; i < p->n; i++) {
		if (!next_try(&p->w[i], &at) || (have && at >= best_at))
			continue;
		best = &p->w[i];
		best_at = at;
		have = true;
	}
	return best;
}

/*
 * The out-of-service GPU a job for index (-1: any) waits for, or NULL
 * if it can run.  A job for any GPU can run again with the first back.
 */
static const struct worker *blocking_worker(const struct workers *p, int index)
{
	unsigned int i;

	if (index >= 0) {
		if ((unsigned int)index >= p->n ||
		    p->w[index].state != WORKER_FAILED)
			return NULL;
		return &p->w[index];
	}
	for (i = 0; i < p->n; i++)
		if (p->w[i].state != WORKER_FAILED)
			return NULL;
	return p->n ? soonest_back(p) : NULL;
}

bool workers_in_service(const struct workers *p, int index,
			unsigned int *retry_sec, char *why, size_t len)
{
	const struct worker *w = blocking_worker(p, index);
	char outage[256];
	unsigned int sec;

	if (!w)
		return true;
	if (index >= 0 || p->n == 1) {
		sec = describe_outage(w, why, len);
	} else {
		sec = describe_outage(w, outage, sizeof(outage));
		utf8_format(why, len, "all %u GPUs are out of service; %s",
			    p->n, outage);
	}
	if (retry_sec)
		*retry_sec = sec;
	return false;
}

bool workers_idle(const struct workers *p, int index)
{
	unsigned int i;

	if (index >= 0)
		return (unsigned int)index < p->n &&
		       p->w[index].state == WORKER_READY;
	for (i = 0; i < p->n; i++)
		if (p->w[i].state == WORKER_READY)
			return true;
	return false;
}

bool workers_device_limits(const struct workers *p, int index,
			   struct device_limits *ret)
{
	struct device_limits l, best = { 0 };
	unsigned int i;

	if (index >= 0) {
		if ((unsigned int)index >= p->n)
			return false;
		return worker_limits(&p->w[index], ret) == 0;
	}
	for (i = 0; i < p->n; i++) {
		worker_limits(&p->w[i], &l);
		if (i == 0)
			best = l;
		else
			device_limits_merge(&best, &l);
	}
	*ret = best;
	return p->n > 0;
}

json_t *workers_devices_json(const struct workers *p)
{
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; i < p->n; i++) {
		const struct worker *w = &p->w[i];
		json_t *d = json_deep_copy(w->device);

		json_object_set_new(d, "index", json_integer(w->index));
		json_object_set_new(
			d, "worker",
			json_pack("{s:s, s:i, s:I, s:s?, s:s?}", "state",
				  worker_state_names[w->state], "pid",
				  (int)w->pid, "restarts",
				  (json_int_t)w->restarts, "job",
				  w->job ? w->job->id : NULL, "last_error",
				  w->last_error[0] ? w->last_error : NULL));
		json_array_append_new(a, d);
	}
	return a;
}

const char *workers_state_name(unsigned int i)
{
	return i < _WORKER_STATE_MAX ? worker_state_names[i] : NULL;
}

const char *workers_health(const struct workers *p)
{
	unsigned int i;

	if (!p->n)
		return "no_devices";
	for (i = 0; i < p->n; i++)
		if (p->w[i].state != WORKER_READY &&
		    p->w[i].state != WORKER_BUSY)
			return "degraded";
	return "ok";
}
