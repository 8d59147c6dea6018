// SPDX-License-Identifier: MIT
/*
 * util.c - helpers shared by every module.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

static struct rlimit nofile_saved;
static bool nofile_raised;

int nofile_raise(uint64_t want)
{
	struct rlimit rl;
	uint64_t to;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return 0;
	to = rl.rlim_max == RLIM_INFINITY ? want : MIN(rl.rlim_max, want);
	if (to > rl.rlim_cur) {
		nofile_saved = rl;
		rl.rlim_cur = to;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return -errno;
		nofile_raised = true;
	}
	return to < want ? -ENFILE : 0;
}

/* After fork(): async-signal-safe. */
void nofile_restore(void)
{
	if (nofile_raised)
		setrlimit(RLIMIT_NOFILE, &nofile_saved);
}

/*
 * The length of the UTF-8 character at s, 1 to 4, or 0 if s does not start
 * a valid one.  It reads no further than the first byte that is not a
 * continuation byte, so a character cut by the terminating NUL is invalid.
 */
static size_t utf8_char_len(const unsigned char *s)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc0 || s[0] > 0xf4)
		return 0;
	n = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	cp = s[0] & (0x7f >> n);
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and past U+10FFFF: jansson refuses them. */
	if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* The four characters "\xNN" of byte c at dst; returns dst + 4. */
static char *hex_escape(char *dst, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";

	dst[0] = '\\';
	dst[1] = 'x';
	dst[2] = hex[c >> 4];
	dst[3] = hex[c & 15];
	return dst + 4;
}

/* utf8_copy(), with control characters escaped too where controls. */
static size_t utf8_copy_as(char *dst, size_t size, const char *src,
			   bool controls)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t used = 0, n;

	if (!size)
		return 0;
	for (; *s; s += n) {
		n = controls && (*s < 0x20 || *s == 0x7f) ? 0 :
							    utf8_char_len(s);
		if (!n) {
			if (used + 4 >= size)
				break;
			hex_escape(dst + used, *s);
			used += 4;
			n = 1;
			continue;
		}
		if (used + n >= size)
			break;
		memcpy(dst + used, s, n);
		used += n;
	}
	dst[used] = '\0';
	return used;
}

size_t utf8_copy(char *dst, size_t size, const char *src)
{
	return utf8_copy_as(dst, size, src, false);
}

size_t utf8_copy_line(char *dst, size_t size, const char *src)
{
	return utf8_copy_as(dst, size, src, true);
}

size_t utf8_vformat(char *dst, size_t size, const char *fmt, va_list ap)
{
	/*
	 * vsnprintf() may cut inside a character; utf8_copy() then escapes
	 * what is left of it.  Every caller's buffer is smaller than this.
	 */
	char text[1024];

	vsnprintf(text, sizeof(text), fmt, ap);
	return utf8_copy(dst, size, text);
}

size_t utf8_format(char *dst, size_t size, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = utf8_vformat(dst, size, fmt, ap);
	va_end(ap);
	return n;
}

int gemmd_error_setv(struct gemmd_error *e, unsigned int status,
		     const char *code, const char *field, const char *fmt,
		     va_list ap)
{
	if (!e)
		return -EINVAL;
	e->status = status;
	snprintf(e->code, sizeof(e->code), "%s", code);
	utf8_copy(e->field, sizeof(e->field), field ? field : "");
	utf8_vformat(e->message, sizeof(e->message), fmt, ap);
	return -EINVAL;
}

int gemmd_error_set(struct gemmd_error *e, unsigned int status,
		    const char *code, const char *field, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gemmd_error_setv(e, status, code, field, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int parse_u64(const char *s, uint64_t max, uint64_t *ret)
{
	unsigned long long x;
	char *end;

	/* strtoull() would take "-1", " 7" and "+7"; we want digits only. */
	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end || x > max)
		return -EINVAL;
	*ret = x;
	return 0;
}

int parse_uint(const char *s, unsigned int max, unsigned int *ret)
{
	uint64_t x;
	int r;

	r = parse_u64(s, max, &x);
	if (r < 0)
		return r;
	*ret = (unsigned int)x;
	return 0;
}

const char *listen_split(const char *address, char *host, size_t len)
{
	const char *colon = strrchr(address, ':');
	size_t hl;

	if (!colon || colon == address)
		return NULL;
	hl = (size_t)(colon - address);
	if (hl >= 2 && address[0] == '[' && colon[-1] == ']') {
		address++;
		hl -= 2;
	}
	if (hl >= len)
		return NULL;
	memcpy(host, address, hl);
	host[hl] = '\0';
	return colon + 1;
}

int read_file(const char *path, size_t max, uint8_t **ret, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ uint8_t *buf = NULL;
	struct stat st;
	size_t got = 0;

	/*
	 * O_NONBLOCK: opening a FIFO (a "cubin" in the kernel directory, say)
	 * would otherwise wait for a writer, for ever, before the check
	 * below could refuse it; gemmd reads the kernels with SIGTERM
	 * blocked.  A regular file's reads do not heed the flag.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADF;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		got += (size_t)r;
	}
	*ret_len = got;
	*ret = TAKE_PTR(buf);
	return 0;
}

int build_tree_dir(const char *rel, const char *probe, char *dir)
{
	char exe[PATH_MAX], path[2 * PATH_MAX + 2], *slash;
	struct stat st;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/%s/%s", exe, rel, probe);
	if (stat(path, &st) < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/%s", exe, rel);
	if (!realpath(path, dir))
		return -errno;
	return 0;
}
