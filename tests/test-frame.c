// SPDX-License-Identifier: MIT
/*
 * test-frame - framed JSON over a socketpair: whole, split, large, bad.
 */
#include <poll.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "frame.h"
#include "util.h"

static void test_round_trip(void)
{
	int sv[2];
	json_t *in = json_pack("{s:s, s:i}", "type", "hello", "n", 42), *out;

	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ_INT(frame_write(sv[0], in), 0);
	CHECK_EQ_INT(frame_read(sv[1], &out), 0);
	CHECK(json_equal(in, out));
	json_decref(out);
	close(sv[0]);
	CHECK_EQ_INT(frame_read(sv[1], &out), -EPIPE);
	close(sv[1]);
	json_decref(in);
}

/* The non-blocking reader must cope with frames split at any byte. */
static void test_split(void)
{
	json_t *in = json_pack("{s:s}", "type", "result"), *out = NULL;
	struct frame_reader fr = { 0 };
	char *text = json_dumps(in, JSON_COMPACT);
	uint32_t len = (uint32_t)strlen(text);
	uint8_t wire[256];
	size_t i, total = len + 4;
	int sv[2], got = 0;

	wire[0] = 0;
	wire[1] = 0;
	wire[2] = (uint8_t)(len >> 8);
	wire[3] = (uint8_t)len;
	memcpy(wire + 4, text, len);
	memcpy(wire + total, wire, total); /* two frames back to back */
	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd_set_nonblock(sv[1], true);
	for (i = 0; i < 2 * total; i++) {
		int r;

		CHECK_EQ_INT(write(sv[0], wire + i, 1), 1);
		CHECK_EQ_INT(frame_reader_feed(&fr, sv[1]), 0);
		while ((r = frame_reader_next(&fr, &out)) > 0) {
			CHECK(json_equal(in, out));
			json_decref(out);
			got++;
		}
		CHECK(r == 0);
	}
	CHECK_EQ_INT(got, 2);
	close(sv[0]);
	CHECK_EQ_INT(frame_reader_feed(&fr, sv[1]), -EPIPE);
	/* a clean end: between frames */
	CHECK(!frame_reader_partial(&fr));
	close(sv[1]);
	frame_reader_done(&fr);
	free(text);
	json_decref(in);
}

/*
 * The non-blocking reader at an end of stream inside a frame, in its
 * header or its body: the bytes left are a frame cut short.
 */
static void test_reader_cut(void)
{
	static const uint8_t frame[] = { 0, 0, 0, 2, '{', '}' };
	size_t cut;

	for (cut = 1; cut < sizeof(frame); cut++) {
		struct frame_reader fr = { 0 };
		json_t *out = NULL;
		int sv[2];

		CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		fd_set_nonblock(sv[1], true);
		CHECK_EQ_INT(write(sv[0], frame, sizeof(frame)), sizeof(frame));
		CHECK_EQ_INT(write(sv[0], frame, cut), (ssize_t)cut);
		close(sv[0]);
		CHECK_EQ_INT(frame_reader_feed(&fr, sv[1]), -EPIPE);
		CHECK_EQ_INT(frame_reader_next(&fr, &out), 1);
		json_decref(out);
		CHECK_EQ_INT(frame_reader_next(&fr, &out), 0);
		CHECK(frame_reader_partial(&fr));
		close(sv[1]);
		frame_reader_done(&fr);
	}
}

/* A frame of a few MiB: more than a socket's buffer holds. */
static json_t *big_object(void)
{
	static char big[3 << 20];

	memset(big, 'x', sizeof(big) - 1);
	return json_pack("{s:s}", "blob", big);
}

static void test_large(void)
{
	json_t *in = big_object(), *out = NULL;
	int sv[2];
	pid_t pid;

	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	if (pid == 0) {
		int r = frame_write(sv[0], in);

		/* Left to _exit(), valgrind's memcheck calls them leaks. */
		json_decref(in);
		close(sv[0]);
		close(sv[1]);
		_exit(r == 0 ? 0 : 1);
	}
	CHECK_EQ_INT(frame_read(sv[1], &out), 0);
	CHECK(out && json_equal(in, out));
	json_decref(out);
	close(sv[0]);
	close(sv[1]);
	json_decref(in);
}

/* A JSON object that encodes to exactly FRAME_MAX bytes. */
static json_t *max_object(void)
{
	size_t pad = FRAME_MAX - strlen("{\"b\":\"\"}");
	char *big = malloc(pad + 1);
	json_t *o;

	CHECK(big != NULL);
	memset(big, 'x', pad);
	big[pad] = '\0';
	o = json_pack("{s:s}", "b", big);
	free(big);
	return o;
}

/*
 * A child that writes o n times into one end of a socket pair and
 * exits; the other end in *ret_fd.
 */
static pid_t fork_writer(json_t *o, int n, int *ret_fd)
{
	int sv[2], r = 0;
	pid_t pid;

	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	if (pid == 0) {
		close(sv[1]);
		while (r == 0 && n--)
			r = frame_write(sv[0], o);
		json_decref(o);
		close(sv[0]);
		_exit(r == 0 ? 0 : 1);
	}
	close(sv[0]);
	*ret_fd = sv[1];
	return pid;
}

static void check_writer(pid_t pid)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
}

static void on_alarm(int sig)
{
}

/*
 * A signal that lands while frame_write() waits for room on a
 * non-blocking socket interrupts its poll(): it waits on, and the frame
 * goes whole, rather than fail as if the reader had stalled.
 */
static void test_write_eintr(void)
{
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	struct itimerval it = { .it_value = { .tv_usec = 50000 } };
	json_t *in = big_object(), *out = NULL;
	int sv[2];
	pid_t pid;

	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork();
	if (pid == 0) {
		int r;

		close(sv[0]);
		/* long after the alarm: the writer waits in poll() for us */
		sleep_ms(300);
		r = frame_read(sv[1], &out);
		r = r == 0 && json_equal(in, out) ? 0 : 1;
		json_decref(out);
		json_decref(in);
		close(sv[1]);
		_exit(r);
	}
	close(sv[1]);
	fd_set_nonblock(sv[0], true);
	CHECK_EQ_INT(sigaction(SIGALRM, &sa, &old), 0);
	CHECK_EQ_INT(setitimer(ITIMER_REAL, &it, NULL), 0);
	CHECK_EQ_INT(frame_write(sv[0], in), 0);
	sigaction(SIGALRM, &old, NULL);
	close(sv[0]);
	check_writer(pid);
	json_decref(in);
}

/* A frame of FRAME_MAX bytes is legal to send, so it must be read. */
static void test_reader_max(void)
{
	struct frame_reader fr = { 0 };
	json_t *in = max_object(), *out = NULL;
	int fd, r = 0, got = 0;
	pid_t pid = fork_writer(in, 2, &fd);

	fd_set_nonblock(fd, true);
	while (r == 0 && got < 2) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		CHECK_EQ_INT(poll(&pfd, 1, 10000), 1);
		r = frame_reader_feed(&fr, fd);
		while (frame_reader_next(&fr, &out) > 0) {
			CHECK(json_equal(in, out));
			json_decref(out);
			got++;
		}
	}
	CHECK_EQ_INT(got, 2);
	/* Closed first: a writer still blocked then fails, not hangs. */
	close(fd);
	check_writer(pid);
	frame_reader_done(&fr);
	json_decref(in);
}

/*
 * The same for the blocking reader (the worker's): FRAME_MAX bytes are
 * read, one more is refused from the header.
 */
static void test_read_max(void)
{
	static const uint8_t over[4] = { 0x01, 0x00, 0x00, 0x01 };
	json_t *in = max_object(), *out = NULL;
	int sv[2], fd;
	pid_t pid = fork_writer(in, 1, &fd);

	CHECK_EQ_INT(frame_read(fd, &out), 0);
	CHECK(out && json_equal(in, out));
	json_decref(out);
	close(fd);
	check_writer(pid);
	json_decref(in);
	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ_INT(write(sv[0], over, sizeof(over)), sizeof(over));
	/* closed: a reader that took the header would fail, not hang */
	close(sv[0]);
	CHECK_EQ_INT(frame_read(sv[1], &out), -EMSGSIZE);
	close(sv[1]);
}

/* A header over FRAME_MAX is refused before any of the body is read. */
static void test_reader_too_large(void)
{
	static const uint8_t hdr[4] = { 0x01, 0x00, 0x00, 0x01 };
	struct frame_reader fr = { 0 };
	json_t *out = NULL;
	int sv[2];

	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd_set_nonblock(sv[1], true);
	CHECK_EQ_INT(write(sv[0], hdr, sizeof(hdr)), sizeof(hdr));
	CHECK_EQ_INT(frame_reader_feed(&fr, sv[1]), 0);
	CHECK_EQ_INT(frame_reader_next(&fr, &out), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
	frame_reader_done(&fr);
}

static void test_bad_frames(void)
{
	static const uint8_t huge[4] = { 0xff, 0xff, 0xff, 0xff };
	static const uint8_t junk[] = { 0, 0, 0, 3, '{', '{', '{' };
	static const uint8_t array[] = { 0, 0, 0, 2, '[', ']' };
	json_t *out;
	int sv[2];

	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ_INT(write(sv[0], huge, 4), 4);
	CHECK_EQ_INT(frame_read(sv[1], &out), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ_INT(write(sv[0], junk, sizeof(junk)), sizeof(junk));
	CHECK_EQ_INT(frame_read(sv[1], &out), -EBADMSG);
	CHECK_EQ_INT(write(sv[0], array, sizeof(array)), sizeof(array));
	CHECK_EQ_INT(frame_read(sv[1], &out), -EBADMSG);
	close(sv[0]);
	close(sv[1]);
	/* the stream ends inside a header: cut short, not a clean close */
	CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ_INT(write(sv[0], huge, 2), 2);
	close(sv[0]);
	CHECK_EQ_INT(frame_read(sv[1], &out), -EBADMSG);
	close(sv[1]);
}

int main(void)
{
	RUN_TEST(test_round_trip);
	RUN_TEST(test_split);
	RUN_TEST(test_reader_cut);
	RUN_TEST(test_large);
	RUN_TEST(test_write_eintr);
	RUN_TEST(test_reader_max);
	RUN_TEST(test_read_max);
	RUN_TEST(test_reader_too_large);
	RUN_TEST(test_bad_frames);
	return check_exit();
}
