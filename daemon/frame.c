// SPDX-License-Identifier: MIT
/*
 * frame.c - length-prefixed JSON frames.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "frame.h"
#include "util.h"

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t r = send(fd, p, len, MSG_NOSIGNAL);

		if (r < 0) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			/*
			 * A signal ends poll() early whatever SA_RESTART
			 * says: no sign that the reader stalled.
			 */
			r = poll(&pfd, 1, 5000);
			if (r < 0 && errno != EINTR)
				return -errno;
			if (r == 0)
				return -ETIMEDOUT;
			continue;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int frame_write(int fd, const json_t *msg)
{
	_cleanup_free_ char *text = NULL;
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;

	text = json_dumps(msg, JSON_COMPACT);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	if (len > FRAME_MAX)
		return -EMSGSIZE;
	buf = malloc(len + 4);
	if (!buf)
		return -ENOMEM;
	buf[0] = (uint8_t)(len >> 24);
	buf[1] = (uint8_t)(len >> 16);
	buf[2] = (uint8_t)(len >> 8);
	buf[3] = (uint8_t)len;
	memcpy(buf + 4, text, len);
	return write_all(fd, buf, len + 4);
}

static int read_all(int fd, uint8_t *p, size_t len, bool *ret_eof)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, p + got, len - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0) {
			*ret_eof = got == 0;
			return -EPIPE;
		}
		got += (size_t)r;
	}
	return 0;
}

static int frame_decode(const uint8_t *p, size_t len, json_t **ret)
{
	json_error_t jerr;
	json_t *j;

	j = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return -EBADMSG;
	}
	*ret = j;
	return 0;
}

int frame_read(int fd, json_t **ret)
{
	_cleanup_free_ uint8_t *buf = NULL;
	uint8_t hdr[4];
	bool eof = false;
	uint32_t len;
	int r;

	r = read_all(fd, hdr, sizeof(hdr), &eof);
	if (r < 0)
		return r == -EPIPE && !eof ? -EBADMSG : r;
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 |
	      (uint32_t)hdr[2] << 8 | hdr[3];
	if (len > FRAME_MAX)
		return -EMSGSIZE;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	r = read_all(fd, buf, len, &eof);
	if (r < 0) /* even at a clean end: the frame is cut short */
		return r == -EPIPE ? -EBADMSG : r;
	return frame_decode(buf, len, ret);
}

/* Room for the largest frame that frame_write() sends, header and all. */
#define READER_MAX ((size_t)FRAME_MAX + 4)

static int reader_grow(struct frame_reader *fr)
{
	size_t alloc = fr->alloc ? MIN(fr->alloc * 2, READER_MAX) : 8192;
	uint8_t *n;

	if (fr->alloc - fr->len >= 4096 || fr->alloc == READER_MAX)
		return 0;
	n = realloc(fr->buf, alloc);
	if (!n)
		return -ENOMEM;
	fr->buf = n;
	fr->alloc = alloc;
	return 0;
}

int frame_reader_feed(struct frame_reader *fr, int fd)
{
	for (;;) {
		ssize_t r;

		if (reader_grow(fr) < 0)
			return -ENOMEM;
		/*
		 * Full: the buffer holds a whole frame of at most FRAME_MAX,
		 * which frame_reader_next() takes to make room, or a header
		 * that it refuses.  The rest waits in the socket.
		 */
		if (fr->len == fr->alloc)
			return 0;
		r = read(fd, fr->buf + fr->len, fr->alloc - fr->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (r == 0)
			return -EPIPE;
		fr->len += (size_t)r;
	}
}

int frame_reader_next(struct frame_reader *fr, json_t **ret)
{
	uint32_t len;
	int r;

	if (fr->len < 4)
		return 0;
	len = (uint32_t)fr->buf[0] << 24 | (uint32_t)fr->buf[1] << 16 |
	      (uint32_t)fr->buf[2] << 8 | fr->buf[3];
	if (len > FRAME_MAX)
		return -EMSGSIZE;
	if (fr->len - 4 < len)
		return 0;
	r = frame_decode(fr->buf + 4, len, ret);
	memmove(fr->buf, fr->buf + 4 + len, fr->len - 4 - len);
	fr->len -= 4 + len;
	return r < 0 ? r : 1;
}

void frame_reader_done(struct frame_reader *fr)
{
	free(fr->buf);
	memset(fr, 0, sizeof(*fr));
}
