// SPDX-License-Identifier: MIT
/*
 * util.c - helpers shared by every module.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util.h"

const char *string_table_lookup(const char *const *table, size_t n, int i)
{
	if (i < 0 || (size_t)i >= n)
		return NULL;
	return table[i];
}

int string_table_find(const char *const *table, size_t n, const char *s)
{
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (table[i] && strcmp(table[i], s) == 0)
			return (int)i;
	return -EINVAL;
}

static uint64_t clock_usec(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t now_usec(void)
{
	return clock_usec(CLOCK_MONOTONIC);
}

uint64_t wallclock_usec(void)
{
	return clock_usec(CLOCK_REALTIME);
}

void sleep_us(uint64_t us)
{
	struct timespec ts = {
		.tv_sec = (time_t)(us / 1000000),
		.tv_nsec = (long)(us % 1000000) * 1000,
	};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void sleep_ms(unsigned int ms)
{
	sleep_us((uint64_t)ms * 1000);
}

char *format_rfc3339(uint64_t usec, char *buf, size_t len)
{
	time_t sec = (time_t)(usec / 1000000);
	struct tm tm;
	char base[24];

	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%06uZ", base, (unsigned int)(usec % 1000000));
	return buf;
}

int random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t r = getrandom(p, len, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int fd_update_flag(int fd, int get, int set, int flag, bool on)
{
	int flags = fcntl(fd, get);
	int nflags;

	if (flags < 0)
		return -errno;
	nflags = on ? flags | flag : flags & ~flag;
	if (nflags != flags && fcntl(fd, set, nflags) < 0)
		return -errno;
	return 0;
}

int fd_set_cloexec(int fd, bool on)
{
	return fd_update_flag(fd, F_GETFD, F_SETFD, FD_CLOEXEC, on);
}

int fd_set_nonblock(int fd, bool on)
{
	return fd_update_flag(fd, F_GETFL, F_SETFL, O_NONBLOCK, on);
}

int gemmd_error_set(struct gemmd_error *e, unsigned int status,
		    const char *code, const char *field, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -EINVAL;
	e->status = status;
	snprintf(e->code, sizeof(e->code), "%s", code);
	snprintf(e->field, sizeof(e->field), "%s", field ? field : "");
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int parse_uint(const char *s, unsigned int max, unsigned int *ret)
{
	unsigned long x;
	char *end;

	/* strtoul() would take "-1", " 7" and "+7"; we want digits only. */
	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	x = strtoul(s, &end, 10);
	if (errno || *end || x > max)
		return -EINVAL;
	*ret = (unsigned int)x;
	return 0;
}
