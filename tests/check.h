/* SPDX-License-Identifier: MIT */
/*
 * check.h - the smallest useful test harness: named cases, assertions
 * that survive NDEBUG and report file:line, exit 77 for "skipped".
 */
#pragma once

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_TEST_SKIP 77

static int check_failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			check_failures++;                                      \
		}                                                              \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                    \
	do {                                                                  \
		long long _a = (long long)(a), _b = (long long)(b);           \
		if (_a != _b) {                                               \
			fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", \
				__FILE__, __LINE__, #a, _a, _b);              \
			check_failures++;                                     \
		}                                                             \
	} while (0)

#define CHECK_STREQ(a, b)                                                   \
	do {                                                                \
		const char *_a = (a), *_b = (b);                            \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                    \
			fprintf(stderr,                                     \
				"%s:%d: %s == \"%s\", expected "            \
				"\"%s\"\n",                                 \
				__FILE__, __LINE__, #a, _a ? _a : "(null)", \
				_b ? _b : "(null)");                        \
			check_failures++;                                   \
		}                                                           \
	} while (0)

#define RUN_TEST(fn)                                                         \
	do {                                                                 \
		int _before = check_failures;                                \
		fn();                                                        \
		printf("%s %s\n", check_failures == _before ? "ok" : "FAIL", \
		       #fn);                                                 \
	} while (0)

/*
 * "$TMPDIR/name" (or /tmp's) in buf, for mkdtemp() or mkstemps(): the
 * temporary files go where the test run was told to put them.
 */
static inline char *check_tmp_path(char *buf, size_t size, const char *name)
{
	const char *dir = getenv("TMPDIR");

	snprintf(buf, size, "%s/%s", dir && *dir ? dir : "/tmp", name);
	return buf;
}

/*
 * What the code under test logs, caught: stderr_catch() sends stderr to
 * a file of its own and returns it (-1 on failure), stderr_release()
 * puts stderr back and reads what was written into text.
 */
static inline int stderr_catch(int *saved)
{
	char log[PATH_MAX];
	int fd;

	check_tmp_path(log, sizeof(log), "gemmd-test-XXXXXX.log");
	fd = mkstemps(log, 4);
	CHECK(fd >= 0);
	if (fd < 0)
		return -1;
	unlink(log);
	fflush(stderr);
	*saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	return fd;
}

static inline void stderr_release(int fd, int saved, char *text, size_t size)
{
	ssize_t got;

	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	got = pread(fd, text, size - 1, 0);
	text[got > 0 ? got : 0] = '\0';
	close(fd);
}

static inline int check_exit(void)
{
	if (check_failures)
		fprintf(stderr, "%d check(s) failed\n", check_failures);
	return check_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
