// SPDX-License-Identifier: MIT
/*
 * kill-delay.so - an LD_PRELOAD shim for gemmd that holds back each
 * SIGKILL it sends for GEMMD_TEST_KILL_DELAY_MS milliseconds, as a worker
 * stuck in the driver of a hung GPU outlives SIGKILL for a while.  With
 * it tests/workers.test drives the paths that must not wait for such a
 * worker to go: a job cancelled while it runs, a job past its deadline,
 * and shutdown.  Other signals, and every signal without the variable,
 * are sent at once.
 *
 * The held signal is sent from a thread of its own, which inherits the
 * caller's signal mask: gemmd blocks the signals it takes through
 * sd-event, so none of them can land on that thread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct held_kill {
	pid_t pid;
	unsigned long ms;
};

static int send_now(pid_t pid, int sig)
{
	return (int)syscall(SYS_kill, pid, sig);
}

static void *send_later(void *arg)
{
	struct held_kill k = *(struct held_kill *)arg;
	struct timespec ts = { (time_t)(k.ms / 1000),
			       (long)(k.ms % 1000) * 1000000L };

	free(arg);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	send_now(k.pid, SIGKILL);
	return NULL;
}

/* Held for the delay; sent at once where no thread can hold it. */
static int hold(pid_t pid, unsigned long ms)
{
	struct held_kill *k;
	pthread_attr_t attr;
	pthread_t thread;
	int r;

	k = malloc(sizeof(*k));
	if (!k)
		return send_now(pid, SIGKILL);
	k->pid = pid;
	k->ms = ms;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = pthread_create(&thread, &attr, send_later, k);
	pthread_attr_destroy(&attr);
	if (r) {
		free(k);
		return send_now(pid, SIGKILL);
	}
	return 0;
}

/* The delay in ms, read once at load; 0: SIGKILL is not held. */
static unsigned long delay_ms;

__attribute__((constructor)) static void read_delay(void)
{
	const char *delay = getenv("GEMMD_TEST_KILL_DELAY_MS");
	char *end;
	unsigned long ms;

	if (!delay || !*delay)
		return;
	errno = 0;
	ms = strtoul(delay, &end, 10);
	if (!errno && !*end)
		delay_ms = ms;
}

int kill(pid_t pid, int sig)
{
	if (sig != SIGKILL || pid <= 0 || !delay_ms)
		return send_now(pid, sig);
	/* The target must exist now, as kill() itself would check. */
	if (send_now(pid, 0) < 0)
		return -1;
	return hold(pid, delay_ms);
}
