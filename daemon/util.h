/* SPDX-License-Identifier: MIT */
/*
 * util.h - small helpers every module uses: cleanup attributes, errno
 * conversion, string tables, time.
 */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_ __attribute__((unused))

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

/*
 * An Idempotency-Key as gemmd takes it and gemmctl sends it: 1 to
 * IDEMPOTENCY_KEY_MAX visible ASCII characters other than '"' and '\\',
 * so that none can end a header line or need escaping in one.
 */
#define IDEMPOTENCY_KEY_MAX 255

static inline bool idempotency_key_ok(const char *v, size_t len)
{
	size_t i;

	if (!len || len > IDEMPOTENCY_KEY_MAX)
		return false;
	for (i = 0; i < len; i++)
		if (v[i] < 0x21 || v[i] > 0x7e || v[i] == '"' || v[i] == '\\')
			return false;
	return true;
}

/* Hand ownership on: returns the pointer and clears the variable. */
#define TAKE_PTR(p)                      \
	({                               \
		__typeof__(p) _p_ = (p); \
		(p) = NULL;              \
		_p_;                     \
	})

#define TAKE_FD(fd)              \
	({                       \
		int _fd_ = (fd); \
		(fd) = -1;       \
		_fd_;            \
	})

/* Turn libc's -1/errno convention into a negative errno. */
#define RET_NERRNO(expr)                       \
	({                                     \
		__typeof__(expr) _r_ = (expr); \
		_r_ < 0 ? -errno : _r_;        \
	})

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define DIV_ROUND_UP(n, d) (((n) + (d)-1) / (d))

const char *string_table_lookup(const char *const *table, size_t n, int i);
int string_table_find(const char *const *table, size_t n, const char *s);

/* CLOCK_MONOTONIC and CLOCK_REALTIME in microseconds. */
uint64_t now_usec(void);
uint64_t wallclock_usec(void);
/* Sleep us microseconds (ms milliseconds), through signals. */
void sleep_us(uint64_t us);
void sleep_ms(unsigned int ms);
/* RFC 3339 UTC with microseconds; buf must hold 32 bytes. */
char *format_rfc3339(uint64_t usec, char *buf, size_t len);

/* A decimal number of digits only, at most max. */
int parse_u64(const char *s, uint64_t max, uint64_t *ret);
int parse_uint(const char *s, unsigned int max, unsigned int *ret);

/*
 * A listen address HOST:PORT, split at its last colon: HOST, without the
 * brackets around an IPv6 address, into host (len bytes, NUL included).
 * Returns PORT, or NULL where there is no colon, nothing before it, or a
 * HOST that does not fit.  HOST may come out empty ("[]:80").
 */
const char *listen_split(const char *address, char *host, size_t len);

/*
 * Copy text into dst (size bytes, NUL included) as valid UTF-8, which is
 * what every string handed to jansson must be: a byte that does not start
 * a valid character (jansson's rules: no overlong forms, no surrogates,
 * nothing past U+10FFFF) is written as the four characters "\xNN", and
 * text that does not fit is cut between characters, never inside one.
 * Returns the length written.
 */
size_t utf8_copy(char *dst, size_t size, const char *src);
/*
 * As utf8_copy(), and control characters (newlines, escape sequences)
 * written as "\xNN" too: text for one line of a log or a terminal.
 */
size_t utf8_copy_line(char *dst, size_t size, const char *src);
/* printf into dst, then as utf8_copy(); output past 1 KiB is dropped. */
size_t utf8_format(char *dst, size_t size, const char *fmt, ...) _printf_(3, 4);
size_t utf8_vformat(char *dst, size_t size, const char *fmt, va_list ap)
	_printf_(3, 0);

/*
 * A regular file's bytes, all of them (at most max: -EFBIG), in a buffer
 * of *ret_len + 1 bytes to free().
 */
int read_file(const char *path, size_t max, uint8_t **ret, size_t *ret_len);
/*
 * The folder rel from this executable's own, resolved into dir (PATH_MAX
 * bytes), if it holds the file probe: how a program run from its build
 * tree finds what was built beside it.  -ENOENT if not.
 */
int build_tree_dir(const char *rel, const char *probe, char *dir);
int random_bytes(void *buf, size_t len);
int fd_set_cloexec(int fd, bool on);
int fd_set_nonblock(int fd, bool on);

/*
 * Raise the soft limit on open files to want, or as far as the hard
 * limit lets it: -ENFILE when that is short of want.  The limit found is
 * kept for nofile_restore(), which a child calls before exec: a program
 * that uses select() breaks on descriptors past FD_SETSIZE.
 */
int nofile_raise(uint64_t want);
void nofile_restore(void);

/*
 * An error to report to an API client: HTTP status, a stable machine code
 * ("unknown_field", "out_of_range", ...), the offending field as a dotted
 * path ("kernel.stages"), and a sentence for humans.
 */
struct gemmd_error {
	unsigned int status;
	char code[32];
	char field[64];
	char message[256];
};

/*
 * Fills e and returns -EINVAL, so callers can "return gemmd_error_set(...)".
 * field and the message may quote what the client sent: both are kept
 * valid UTF-8 (utf8_copy()), so that the error can always be sent as JSON.
 */
int gemmd_error_set(struct gemmd_error *e, unsigned int status,
		    const char *code, const char *field, const char *fmt, ...)
	_printf_(5, 6);
int gemmd_error_setv(struct gemmd_error *e, unsigned int status,
		     const char *code, const char *field, const char *fmt,
		     va_list ap) _printf_(5, 0);
