// SPDX-License-Identifier: MIT
/*
 * exit-hang.so - an LD_PRELOAD shim whose exit handler never returns, as
 * the CUDA driver's own exit handlers may block behind a kernel that
 * never ends on a poisoned context.  GEMMD_TEST_EXIT_HANG=PROGRAM:STATUS
 * holds exit(STATUS) in the program of that name and no other.
 * tests/gpu-sticky.test preloads it into gemmd and so into its workers,
 * with gemmd-worker and the status of a sticky error: a worker that left
 * through exit() after one would stay, and gemmd kill it after its
 * grace; one that leaves with _exit(), past every handler, goes at once.
 * Any other exit, the device probe's (0) or gemmd's own, is not held.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Run by exit() with its status; arg is the status to hold. */
static void hang(int status, void *arg)
{
	if (status != (int)(intptr_t)arg)
		return;
	for (;;)
		pause();
}

__attribute__((constructor)) static void arm(void)
{
	const char *spec = getenv("GEMMD_TEST_EXIT_HANG");
	const char *colon;
	char *end;
	long s;

	if (!spec)
		return;
	colon = strchr(spec, ':');
	if (!colon ||
	    strlen(program_invocation_short_name) != (size_t)(colon - spec) ||
	    strncmp(spec, program_invocation_short_name, colon - spec))
		return;
	errno = 0;
	s = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || s < 0 || s > 255)
		return;
	on_exit(hang, (void *)(intptr_t)s);
}
