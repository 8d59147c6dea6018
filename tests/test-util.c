// SPDX-License-Identifier: MIT
/*
 * test-util - text copied into fixed buffers stays valid UTF-8: cuts fall
 * between characters, invalid bytes are escaped, and jansson takes it all.
 * Also the helpers that read numbers and files.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "util.h"

/* What jansson makes of it: every answer goes through json_string(). */
static bool jansson_takes(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

#define CHECK_COPY(size, src, want)                         \
	do {                                                \
		char _buf[64];                              \
		size_t _n = utf8_copy(_buf, (size), (src)); \
		CHECK_STREQ(_buf, (want));                  \
		CHECK_EQ_INT(_n, strlen(want));             \
		CHECK(jansson_takes(_buf));                 \
	} while (0)

static void test_copy_fits(void)
{
	CHECK_COPY(64, "", "");
	CHECK_COPY(64, "plain ascii", "plain ascii");
	CHECK_COPY(64, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
		   "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"); /* é € 😀 */
}

/* Cut where the next character would not fit, never inside it. */
static void test_copy_cuts_between_characters(void)
{
	CHECK_COPY(5, "abcdef", "abcd");
	CHECK_COPY(1, "abc", "");
	CHECK_COPY(4, "a\xc3\xa9\xc3\xa9", "a\xc3\xa9"); /* aéé */
	CHECK_COPY(3, "a\xc3\xa9", "a"); /* é needs 2 bytes, 1 left */
	CHECK_COPY(4, "a\xe2\x82\xac", "a"); /* € needs 3, 2 left */
	CHECK_COPY(4, "\xf0\x9f\x98\x80", ""); /* 😀 needs 4, 3 left */
	CHECK_COPY(5, "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80");
}

static void test_copy_escapes_invalid_bytes(void)
{
	CHECK_COPY(64, "\xff", "\\xff");
	CHECK_COPY(64, "a\x80z", "a\\x80z"); /* lone continuation byte */
	CHECK_COPY(64, "\xc0\xaf", "\\xc0\\xaf"); /* overlong '/' */
	CHECK_COPY(64, "\xe0\x80\xaf", "\\xe0\\x80\\xaf"); /* overlong */
	CHECK_COPY(64, "\xed\xa0\x80", "\\xed\\xa0\\x80"); /* surrogate */
	/* past U+10FFFF */
	CHECK_COPY(64, "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	CHECK_COPY(64, "ab\xc3", "ab\\xc3"); /* cut by the end of the text */
	/* a lead byte, then no continuation byte */
	CHECK_COPY(64, "\xc3(", "\\xc3(");
	/* an escape is not cut either */
	CHECK_COPY(6, "ab\xff", "ab");
	CHECK_COPY(7, "ab\xff", "ab\\xff");
}

static void test_copy_zero_size(void)
{
	char buf[4] = "xyz";

	CHECK_EQ_INT(utf8_copy(buf, 0, "abc"), 0);
	CHECK_STREQ(buf, "xyz");
}

/* Any bytes at all, any buffer size: valid UTF-8 that fits. */
static void test_copy_random_bytes(void)
{
	uint32_t x = 12345;
	char src[48], dst[32];
	size_t size;
	int i, j;

	for (i = 0; i < 20000; i++) {
		for (j = 0; j < (int)sizeof(src) - 1; j++) {
			x = x * 1103515245 + 12345;
			src[j] = (char)((x >> 16) | 1); /* no NUL inside */
		}
		src[j] = '\0';
		size = 1 + i % sizeof(dst);
		CHECK(utf8_copy(dst, size, src) < size);
		CHECK(jansson_takes(dst));
	}
}

static void test_format(void)
{
	char msg[256], text[600];
	size_t i;

	for (i = 0; i + 2 < sizeof(text); i += 2)
		memcpy(text + i, "\xc3\xa9", 2);
	text[i] = '\0';
	/* 127 é fill 254 bytes; the 128th would need the byte for the NUL */
	CHECK_EQ_INT(utf8_format(msg, sizeof(msg), "%s", text), 254);
	CHECK(jansson_takes(msg));
	utf8_format(msg, sizeof(msg), "unknown state \"%s\"", "\xff");
	CHECK_STREQ(msg, "unknown state \"\\xff\"");
}

/* A field and message that quote the client are kept valid. */
static void test_error_set(void)
{
	struct gemmd_error e;
	char key[80];
	size_t i;

	for (i = 0; i + 2 < sizeof(key); i += 2)
		memcpy(key + i, "\xc3\xa9", 2);
	key[i] = '\0';
	CHECK_EQ_INT(gemmd_error_set(&e, 400, "unknown_field", key,
				     "unknown field '%s'", key),
		     -EINVAL);
	CHECK_EQ_INT(e.status, 400);
	CHECK_STREQ(e.code, "unknown_field");
	CHECK_EQ_INT(strlen(e.field), 62);
	CHECK(jansson_takes(e.field));
	CHECK(jansson_takes(e.message));
}

/* A file up to max bytes is read whole; a larger one, or no file, is not. */
static void test_read_file(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 8];
	uint8_t *data = NULL;
	size_t len = 0;
	FILE *f;

	check_tmp_path(dir, sizeof(dir), "test-util.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/ten", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("0123456789", f);
		fclose(f);
	}
	CHECK_EQ_INT(read_file(path, 10, &data, &len), 0);
	CHECK_EQ_INT(len, 10);
	CHECK(data && !memcmp(data, "0123456789", 10));
	free(data);
	data = NULL;
	CHECK_EQ_INT(read_file(path, 9, &data, &len), -EFBIG);
	CHECK(data == NULL);
	CHECK_EQ_INT(read_file(dir, 1 << 20, &data, &len), -EBADF);
	unlink(path);
	CHECK_EQ_INT(read_file(path, 10, &data, &len), -ENOENT);
	/* A FIFO is refused at once, not waited on for a writer. */
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
	alarm(10);
	CHECK_EQ_INT(read_file(path, 10, &data, &len), -EBADF);
	alarm(0);
	unlink(path);
	rmdir(dir);
}

/* Digits only, up to max: no sign, no space, no overflow. */
static void test_parse_uint(void)
{
	unsigned int u = 7;
	uint64_t x = 7;

	CHECK_EQ_INT(parse_uint("0", 10, &u), 0);
	CHECK_EQ_INT(u, 0);
	CHECK_EQ_INT(parse_uint("10", 10, &u), 0);
	CHECK_EQ_INT(u, 10);
	CHECK_EQ_INT(parse_uint("11", 10, &u), -EINVAL);
	CHECK_EQ_INT(u, 10);
	CHECK_EQ_INT(parse_uint("+5", 10, &u), -EINVAL);
	CHECK_EQ_INT(parse_uint(" 5", 10, &u), -EINVAL);
	CHECK_EQ_INT(parse_uint("5 ", 10, &u), -EINVAL);
	CHECK_EQ_INT(parse_uint("", 10, &u), -EINVAL);
	CHECK_EQ_INT(parse_uint(NULL, 10, &u), -EINVAL);
	CHECK_EQ_INT(parse_u64("-1", UINT64_MAX, &x), -EINVAL);
	CHECK_EQ_INT(parse_u64("18446744073709551615", UINT64_MAX, &x), 0);
	CHECK(x == UINT64_MAX);
	CHECK_EQ_INT(parse_u64("18446744073709551616", UINT64_MAX, &x),
		     -EINVAL);
}

/* HOST:PORT at the last colon, IPv6's brackets taken off. */
static void test_listen_split(void)
{
	char host[8];

	CHECK_STREQ(listen_split("[::1]:80", host, sizeof(host)), "80");
	CHECK_STREQ(host, "::1");
	CHECK_STREQ(listen_split("*:0", host, sizeof(host)), "0");
	CHECK_STREQ(host, "*");
	CHECK_STREQ(listen_split("a:b:9", host, sizeof(host)), "9");
	CHECK_STREQ(host, "a:b");
	CHECK_STREQ(listen_split("[]:1", host, sizeof(host)), "1");
	CHECK_STREQ(host, "");
	CHECK_STREQ(listen_split("[::1:0", host, sizeof(host)), "0");
	CHECK_STREQ(host, "[::1");
	CHECK(!listen_split(":80", host, sizeof(host)));
	CHECK(!listen_split("nocolon", host, sizeof(host)));
	CHECK(!listen_split("longhost:80", host, sizeof(host)));
}

int main(void)
{
	RUN_TEST(test_copy_fits);
	RUN_TEST(test_copy_cuts_between_characters);
	RUN_TEST(test_copy_escapes_invalid_bytes);
	RUN_TEST(test_copy_zero_size);
	RUN_TEST(test_copy_random_bytes);
	RUN_TEST(test_format);
	RUN_TEST(test_error_set);
	RUN_TEST(test_read_file);
	RUN_TEST(test_parse_uint);
	RUN_TEST(test_listen_split);
	return check_exit();
}
