// SPDX-License-Identifier: MIT
/*
 * timer-fail.so - an LD_PRELOAD shim for gemmd whose
 * sd_event_add_time_relative() fails with ENOMEM, as it does when memory
 * runs out, for each time listed in GEMMD_TEST_TIMER_FAIL_USEC
 * (microseconds, comma-separated).  gemmd arms each of its worker timers
 * for a time of its own (a job's deadline, a restart's back-off, the
 * grace before a kill, the retry of a GPU out of service), so that
 * tests/timers.test can pick which one cannot be armed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <systemd/sd-event.h>

typedef int add_time_fn(sd_event *e, sd_event_source **s, clockid_t clock,
			uint64_t usec, uint64_t accuracy,
			sd_event_time_handler_t callback, void *userdata);

static bool listed(uint64_t usec)
{
	const char *p = getenv("GEMMD_TEST_TIMER_FAIL_USEC");
	char *end;

	while (p && *p) {
		if (strtoull(p, &end, 10) == usec)
			return true;
		if (*end != ',')
			break;
		p = end + 1;
	}
	return false;
}

int sd_event_add_time_relative(sd_event *e, sd_event_source **s,
			       clockid_t clock, uint64_t usec,
			       uint64_t accuracy,
			       sd_event_time_handler_t callback, void *userdata)
{
	static add_time_fn *next;

	if (listed(usec))
		return -ENOMEM;
	/* POSIX's way to take a function from dlsym()'s void *. */
	if (!next)
		*(void **)&next =
			dlsym(RTLD_NEXT, "sd_event_add_time_relative");
	if (!next)
		return -ENOSYS;
	return next(e, s, clock, usec, accuracy, callback, userdata);
}
