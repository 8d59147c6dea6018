// SPDX-License-Identifier: MIT
/*
 * log.c - levelled logging to stderr.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "util.h"

static const char *log_ident = "gemmd";
static int log_max_level = LOG_INFO;
static bool log_prefix_level;

/*
 * Whether stderr is the journal's stream: JOURNAL_STREAM names it by
 * "DEVICE:INODE", and is inherited by whatever is started from a
 * service (a shell, a test run) whose stderr goes elsewhere.
 */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	int n = 0;

	if (!e || sscanf(e, "%llu:%llu%n", &dev, &ino, &n) != 2 || e[n])
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return st.st_dev == dev && st.st_ino == ino;
}

void log_setup(const char *ident)
{
	const char *level = getenv("GEMMD_LOG_LEVEL");

	log_ident = ident;
	/* The journal reads "<N>" prefixes when stderr is connected to it. */
	log_prefix_level = stderr_is_journal();
	if (level && strcmp(level, "debug") == 0)
		log_max_level = LOG_DEBUG;
}

void log_set_max_level(int level)
{
	log_max_level = level;
}

int log_get_max_level(void)
{
	return log_max_level;
}

int log_internal(int level, int err, const char *file, int line,
		 const char *func, const char *fmt, ...)
{
	int saved_errno = errno;
	char raw[1024], msg[4 * sizeof(raw)], prefix[16];
	va_list ap;

	if (err < 0)
		err = -err;
	if (level > log_max_level)
		return -err;

	/* Let %m in fmt name the error we were given, not a stale errno. */
	errno = err;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/*
	 * Control characters, and bytes that are not UTF-8, as \xNN.  A
	 * message may quote what gemmd did not write: a file name, a
	 * cubin's symbol, a worker's error.  A newline in one would end the
	 * line early, and in the journal's stream the next line could begin
	 * with a "<N>" priority of its own: a forged entry.  And the journal
	 * keeps a message that is not UTF-8 as binary ("[blob data]").
	 */
	utf8_copy_line(msg, sizeof(msg), raw);

	/*
	 * The "<N>" and its line in one fprintf(), so one write() (stderr
	 * is unbuffered): the workers write to the same stream, and a line
	 * of theirs between the two would take this one's priority and
	 * leave this line with none.
	 */
	if (!log_prefix_level)
		prefix[0] = '\0';
	else
		snprintf(prefix, sizeof(prefix), "<%d>", level);
	if (log_max_level >= LOG_DEBUG)
		fprintf(stderr, "%s%s: %s:%d %s(): %s\n", prefix, log_ident,
			file, line, func, msg);
	else
		fprintf(stderr, "%s%s: %s\n", prefix, log_ident, msg);
	errno = saved_errno;
	return -err;
}
