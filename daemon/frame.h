/* SPDX-License-Identifier: MIT */
/*
 * frame.h - JSON messages over a stream socket between gemmd and its
 * workers: a 4-byte big-endian length, then that many bytes of JSON.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define FRAME_MAX (16u << 20)

struct frame_reader {
	uint8_t *buf;
	size_t len, alloc;
};

/*
 * Writes the whole frame, waiting out EAGAIN on non-blocking sockets, and
 * signals while it waits; -ETIMEDOUT when the reader takes nothing for 5 s.
 */
int frame_write(int fd, const json_t *msg);

/*
 * Blocking read of one frame; -EPIPE at a clean end of stream (between
 * frames), -EBADMSG for a frame cut short or not a JSON object.
 */
int frame_read(int fd, json_t **ret);

/*
 * Non-blocking side: pull what the socket has, then take whole frames.
 * feed stops at a full buffer (one frame of FRAME_MAX and its header):
 * take frames, then feed again.  next returns -EMSGSIZE for a frame too
 * large and -EBADMSG for one that is not a JSON object.
 */
int frame_reader_feed(struct frame_reader *fr, int fd);
int frame_reader_next(struct frame_reader *fr, json_t **ret);
void frame_reader_done(struct frame_reader *fr);

/*
 * Whether bytes wait for the rest of their frame.  Once feed has said
 * -EPIPE and next has taken the whole frames, they are a frame cut
 * short by the end of the stream, not a clean end.
 */
static inline bool frame_reader_partial(const struct frame_reader *fr)
{
	return fr->len > 0;
}
