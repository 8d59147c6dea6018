// SPDX-License-Identifier: MIT
/*
 * fault-worker - a gemmd-worker that breaks on purpose, so that tests can
 * drive gemmd's supervision (tests/workers.test) and gemmctl tune's sweep
 * (tests/gemmctl-tune.test) through their error paths on any machine.  It
 * never runs a job and never sends a real result: a job it is given fails,
 * one way or another, or never ends.
 *
 * GEMMD_FAULT_FILE names a file of one line per device.  "--probe" lists
 * that many devices (each with no GPU behind it), and the worker for
 * device N does what line N says, read afresh at every start:
 *
 *   refuse       say hello, then answer every job with an error
 *   crash        say hello, then abort() on the first job
 *   garbage      say hello, then answer the first job with a frame that
 *                is not JSON
 *   cut          say hello, then answer the first job with the start of
 *                a frame, and exit 0
 *   hello_twice  say hello twice
 *   hello_garbage  say hello and, in the same write, send a frame that
 *                is not JSON: gemmd reads both at once, before it can
 *                hand the worker a job
 *   close        say hello, then close the socket on the first job and
 *                stay alive
 *   idle_exit MS say hello, then exit 0 MS milliseconds later, job or
 *                not
 *   silent       never say hello
 *   hang         say hello, then take every job and never answer: it
 *                runs until cancelled or past its deadline
 *   slow MS      say hello, then answer every job with an error, each
 *                MS milliseconds after it came
 *   cool         say hello, then answer every job with an error at once
 *                and then pause for its timing.cooldown_ms, as
 *                gemmd-worker rests after a job it has answered
 *   sticky_hang  say hello, then answer the first job with a sticky
 *                error and stay alive, as a worker stuck in the driver
 *                on its way out would
 *   sticky_close the same, but close the socket after the error
 *   stray_error  say hello, then answer every job with an error for
 *                another job's id and then with an error for its own
 *   stray_crash  say hello, then answer the first job with an error for
 *                another job's id and abort()
 *   bad_result   say hello, then answer every job with a result that
 *                has no timing
 *   exit         exit 1 at once
 *   hello_late   exit once the file GEMMD_FAULT_FILE.go exists, and
 *                leave the hello to a child, which sends it once the
 *                worker is gone and then makes GEMMD_FAULT_FILE.sent:
 *                the hello of a worker that died as it started, there
 *                to be found in its socket after its exit
 *
 * A line may end in " smem=BYTES": that device's shared memory per block
 * (232448, an H100's, otherwise), so that a node's GPUs can differ.
 * A first line of "probe_hang" makes "--probe" hang instead.
 * GEMMD_FAULT_NAME, when set, is every device's name, so that tests can
 * give gemmd one that must be escaped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

#define LINE_MAX_LEN 64

/* Line n of the fault file (from 0), or "" past its end, as written. */
static int fault_line_raw(unsigned int n, char *buf, size_t len)
{
	const char *path = getenv("GEMMD_FAULT_FILE");
	unsigned int i = 0;
	FILE *f;

	buf[0] = '\0';
	if (!path)
		return -ENOENT;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(buf, (int)len, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		if (i++ == n)
			break;
		buf[0] = '\0';
	}
	fclose(f);
	return 0;
}

/* Line n, its mode alone: what comes before " smem=". */
static int fault_line(unsigned int n, char *buf, size_t len)
{
	int r = fault_line_raw(n, buf, len);
	char *opt = strstr(buf, " smem=");

	if (opt)
		*opt = '\0';
	return r;
}

/* Device n's shared memory per block: its " smem=" or an H100's. */
static int fault_smem(unsigned int n)
{
	char line[LINE_MAX_LEN];
	const char *opt;

	fault_line_raw(n, line, sizeof(line));
	opt = strstr(line, " smem=");
	return opt ? atoi(opt + 6) : 232448;
}

static unsigned int fault_lines(void)
{
	char line[LINE_MAX_LEN];
	unsigned int n = 0;

	while (fault_line(n, line, sizeof(line)) == 0 && line[0])
		n++;
	return n;
}

static json_t *device_json(unsigned int index)
{
	const char *name = getenv("GEMMD_FAULT_NAME");

	return json_pack("{s:i, s:s, s:s, s:i, s:I, s:i, s:{s:b}}", "index",
			 (int)index, "name",
			 name ? name : "gemmd fault-worker (no GPU)", "uuid",
			 "none", "sm_count", 132, "memory_bytes",
			 (json_int_t)80 << 30, "max_smem_per_block_optin",
			 fault_smem(index), "cublaslt", "available", 0);
}

static int probe(void)
{
	char first[LINE_MAX_LEN];
	unsigned int i, n = fault_lines();
	json_t *devs = json_array(), *out;

	fault_line(0, first, sizeof(first));
	while (!strcmp(first, "probe_hang"))
		pause();
	for (i = 0; i < n; i++)
		json_array_append_new(devs, device_json(i));
	out = json_pack("{s:o}", "devices", devs);
	json_dumpf(out, stdout, 0);
	putchar('\n');
	json_decref(out);
	return 0;
}

static int send_json(int fd, json_t *m)
{
	int r = m ? frame_write(fd, m) : -ENOMEM;

	json_decref(m);
	return r;
}

static int send_hello(int fd)
{
	return send_json(fd, json_pack("{s:s, s:i}", "type", "hello", "pid",
				       (int)getpid()));
}

static int send_error_text(int fd, const char *id, const char *text,
			   bool sticky)
{
	return send_json(fd, json_pack("{s:s, s:s?, s:s, s:b}", "type", "error",
				       "id", id, "message", text, "sticky",
				       sticky));
}

static int send_error(int fd, const char *id, bool sticky)
{
	return send_error_text(fd, id, "fault-worker runs no jobs", sticky);
}

static const char junk[] = "this is not JSON";

/* A length header and bytes that are no JSON object. */
static void send_garbage(int fd)
{
	uint8_t hdr[4] = { 0, 0, 0, sizeof(junk) - 1 };

	if (write(fd, hdr, sizeof(hdr)) < 0 ||
	    write(fd, junk, sizeof(junk) - 1) < 0)
		exit(1);
}

/* A frame of text at p: its length header, then the text. */
static size_t put_frame(uint8_t *p, const char *text, size_t len)
{
	p[0] = (uint8_t)(len >> 24);
	p[1] = (uint8_t)(len >> 16);
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	memcpy(p + 4, text, len);
	return len + 4;
}

/* "hello_garbage": a hello and a frame that is not JSON in one write. */
static int send_hello_garbage(int fd)
{
	char hello[64];
	uint8_t buf[128];
	size_t n;

	snprintf(hello, sizeof(hello), "{\"type\":\"hello\",\"pid\":%d}",
		 (int)getpid());
	n = put_frame(buf, hello, strlen(hello));
	n += put_frame(buf + n, junk, sizeof(junk) - 1);
	return write(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* GEMMD_FAULT_FILE with SUFFIX: a file the test makes or waits for. */
static void marker(const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", getenv("GEMMD_FAULT_FILE"), suffix);
}

/*
 * "hello_late": gone before its hello is sent, for the test that stops
 * gemmd across both; the child that sends it says when it has.
 */
static void hello_late(int fd)
{
	char go[PATH_MAX], sent[PATH_MAX];
	pid_t worker = getpid();
	int out;

	marker(".go", go, sizeof(go));
	marker(".sent", sent, sizeof(sent));
	while (access(go, F_OK) < 0)
		sleep_ms(10);
	if (fork() != 0)
		return;
	while (getppid() == worker)
		sleep_ms(10);
	if (send_hello(fd) < 0)
		_exit(1);
	out = open(sent, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	_exit(out < 0);
}

/* What to do with one "run" message; returns <0 to stop reading. */
static int on_job(int fd, const char *fault, const char *id)
{
	unsigned int ms;

	if (!strcmp(fault, "hang"))
		return 0;
	if (sscanf(fault, "slow %u", &ms) == 1)
		sleep_ms(ms);
	if (!strcmp(fault, "crash"))
		abort();
	if (!strcmp(fault, "garbage")) {
		send_garbage(fd);
		return 0;
	}
	if (!strcmp(fault, "cut")) {
		/* 64 bytes announced, 8 sent */
		static const uint8_t part[] = "\0\0\0\x40{\"type\":";

		exit(write(fd, part, sizeof(part) - 1) < 0);
	}
	if (!strcmp(fault, "bad_result"))
		return send_json(fd, json_pack("{s:s, s:s, s:{s:f, s:{s:b}}}",
					       "type", "result", "id", id,
					       "result", "tflops", 1.0,
					       "verify", "checked", 0));
	if (!strcmp(fault, "sticky_hang") || !strcmp(fault, "sticky_close")) {
		send_error(fd, id, true);
		if (!strcmp(fault, "sticky_close"))
			close(fd);
		for (;;)
			pause();
	}
	/* an error for some other job first: not the running job's */
	if ((!strcmp(fault, "stray_error") || !strcmp(fault, "stray_crash")) &&
	    send_error_text(fd, "not-this-job", "an error for another job",
			    false) < 0)
		return -1;
	if (!strcmp(fault, "stray_crash"))
		abort();
	if (!strcmp(fault, "close")) {
		close(fd);
		for (;;)
			pause();
	}
	return send_error(fd, id, false);
}

/* A "run" message's timing.cooldown_ms, 0 where it has none. */
static unsigned int cooldown_ms(json_t *msg)
{
	json_t *timing =
		json_object_get(json_object_get(msg, "spec"), "timing");

	return (unsigned int)json_integer_value(
		json_object_get(timing, "cooldown_ms"));
}

static int serve(unsigned int device, int fd)
{
	char fault[LINE_MAX_LEN];
	unsigned int ms;
	json_t *msg;
	int r;

	fault_line(device, fault, sizeof(fault));
	if (!strcmp(fault, "exit"))
		return 1;
	while (!strcmp(fault, "silent"))
		pause();
	if (!strcmp(fault, "hello_late")) {
		hello_late(fd);
		return 0;
	}
	if (!strcmp(fault, "hello_garbage")) {
		if (send_hello_garbage(fd) < 0)
			return 1;
		for (;;)
			pause();
	}
	if (send_hello(fd) < 0)
		return 1;
	if (sscanf(fault, "idle_exit %u", &ms) == 1) {
		sleep_ms(ms);
		return 0;
	}
	if (!strcmp(fault, "hello_twice") && send_hello(fd) < 0)
		return 1;
	while ((r = frame_read(fd, &msg)) >= 0) {
		r = on_job(fd, fault,
			   json_string_value(json_object_get(msg, "id")));
		if (r >= 0 && !strcmp(fault, "cool"))
			sleep_ms(cooldown_ms(msg));
		json_decref(msg);
		if (r < 0)
			break;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i, device = -1, fd = -1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--probe"))
			return probe();
		if (!strcmp(argv[i], "--device") && i + 1 < argc)
			device = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fd") && i + 1 < argc)
			fd = atoi(argv[++i]);
	}
	if (device < 0 || fd < 0) {
		fprintf(stderr, "usage: fault-worker --probe | --device N "
				"--fd FD\n");
		return 2;
	}
	return serve((unsigned int)device, fd);
}
