// SPDX-License-Identifier: MIT
/*
 * test-log - what gemmd writes to its log: one line per message, control
 * characters and bytes that are not UTF-8 from quoted names written as
 * \xNN, so that nothing a file name, a cubin or a worker says can end a
 * line early, forge one or turn a message into binary.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static char path[PATH_MAX];

/* What one log_warning() of text writes to stderr, or NULL. */
static char *logged(const char *text)
{
	static char buf[8192];
	int fd, saved;
	ssize_t n;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return NULL;
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	log_warning("note %s: ignored", text);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static void test_plain(void)
{
	CHECK_STREQ(
		logged("gemmd_ws_bf16_tn_128x256x64 \xc3\xa9"),
		"gemmd: note gemmd_ws_bf16_tn_128x256x64 \xc3\xa9: ignored\n");
}

/* Bytes that are not UTF-8 too: the journal would keep a blob. */
static void test_not_utf8(void)
{
	CHECK_STREQ(logged("a\xff\x9b"
			   "b\xc3"),
		    "gemmd: note a\\xff\\x9bb\\xc3: ignored\n");
}

static void test_controls(void)
{
	CHECK_STREQ(logged("x\n<0>gemmd: forged\r\x1b[2J\x7f\t"),
		    "gemmd: note x\\x0a<0>gemmd: forged\\x0d\\x1b[2J\\x7f"
		    "\\x09: ignored\n");
}

/* A message of nothing but controls still fits, cut, on one line. */
static void test_long(void)
{
	char text[1100], *out;

	memset(text, '\n', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	out = logged(text);
	CHECK(out != NULL);
	if (!out)
		return;
	CHECK(strncmp(out, "gemmd: note \\x0a\\x0a", 20) == 0);
	CHECK(strchr(out, '\n') == out + strlen(out) - 1);
}

int main(void)
{
	int fd;

	unsetenv("JOURNAL_STREAM");
	unsetenv("GEMMD_LOG_LEVEL");
	log_setup("gemmd");
	check_tmp_path(path, sizeof(path), "gemmd-log-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return EXIT_FAILURE;
	}
	close(fd);
	RUN_TEST(test_plain);
	RUN_TEST(test_controls);
	RUN_TEST(test_not_utf8);
	RUN_TEST(test_long);
	unlink(path);
	return check_exit();
}
