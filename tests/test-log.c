// SPDX-License-Identifier: MIT
/*
 * test-log - what gemmd writes to its log: one line per message, control
 * characters and bytes that are not UTF-8 from quoted names written as
 * \xNN, so that nothing a file name, a cubin or a worker says can end a
 * line early, forge one or turn a message into binary.
 */

#include <sys/socket.h>
#include <sys/stat.h>

#include "check.h"
#include "log.h"

/* What one log_warning() of text writes to stderr ("" on failure). */
static const char *logged(const char *text)
{
	static char buf[8192];
	int fd, saved;

	buf[0] = '\0';
	fd = stderr_catch(&saved);
	if (fd < 0)
		return buf;
	log_warning("note %s: ignored", text);
	stderr_release(fd, saved, buf, sizeof(buf));
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
	char text[1100];
	const char *out;

	memset(text, '\n', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	out = logged(text);
	CHECK(strncmp(out, "gemmd: note \\x0a\\x0a", 20) == 0);
	CHECK(strchr(out, '\n') == out + strlen(out) - 1);
}

/*
 * In the journal's stream, a line and its "<N>" go in one write():
 * gemmd's workers write to the same stream, and a line of theirs
 * between the two would take gemmd's priority, leaving gemmd's own
 * line without one.  A SOCK_SEQPACKET socket keeps each write apart.
 */
static void test_journal_one_write(void)
{
	char buf[256], env[64];
	int sv[2], saved;
	struct stat st;
	ssize_t n;

	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
	CHECK(fstat(sv[0], &st) == 0);
	snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	setenv("JOURNAL_STREAM", env, 1);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	dup2(sv[0], STDERR_FILENO);
	log_setup("gemmd");
	log_warning("note %s", "one");
	dup2(saved, STDERR_FILENO);
	close(saved);
	unsetenv("JOURNAL_STREAM");
	log_setup("gemmd");
	n = recv(sv[1], buf, sizeof(buf) - 1, MSG_DONTWAIT);
	buf[n > 0 ? n : 0] = '\0';
	CHECK_STREQ(buf, "<4>gemmd: note one\n");
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	unsetenv("JOURNAL_STREAM");
	unsetenv("GEMMD_LOG_LEVEL");
	log_setup("gemmd");
	RUN_TEST(test_plain);
	RUN_TEST(test_controls);
	RUN_TEST(test_not_utf8);
	RUN_TEST(test_long);
	RUN_TEST(test_journal_one_write);
	return check_exit();
}
