// SPDX-License-Identifier: MIT
/*
 * test-sha256 - FIPS 180-4's examples and lengths around the padding's
 * edges, whole and fed in pieces.
 */
#include <string.h>

#include "check.h"
#include "sha256.h"

static void check_tag(const char *msg, size_t len, const char *want)
{
	char tag[SHA256_TAG_LEN];

	sha256_tag(msg, len, tag);
	CHECK_STREQ(tag, want);
}

static void test_known_answers(void)
{
	check_tag("", 0,
		  "sha256:e3b0c44298fc1c149afbf4c8996fb924"
		  "27ae41e4649b934ca495991b7852b855");
	check_tag("abc", 3,
		  "sha256:ba7816bf8f01cfea414140de5dae2223"
		  "b00361a396177a9cb410ff61f20015ad");
	/* 56 bytes: the length no longer fits the first block. */
	check_tag("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  56,
		  "sha256:248d6a61d20638b8e5c026930c3e6039"
		  "a33ce45964ff2167f6ecedd419db06c1");
}

/* A million 'a', fed in uneven pieces: what a file read in chunks is. */
static void test_pieces(void)
{
	uint8_t digest[SHA256_BYTES];
	char tag[SHA256_TAG_LEN], buf[1000];
	struct sha256 s;
	size_t done = 0, n = 1;

	memset(buf, 'a', sizeof(buf));
	sha256_init(&s);
	while (done < 1000000) {
		if (n > 1000000 - done)
			n = 1000000 - done;
		sha256_update(&s, buf, n);
		done += n;
		n = n % 997 + 1;
	}
	sha256_final(&s, digest);
	sha256_format(digest, tag);
	CHECK_STREQ(tag, "sha256:cdc76e5c9914fb9281a1c7e284d73e67"
			 "f1809a48a497200e046d39ccc7112cd0");
}

/* 55, 63 and 64 bytes: one block, the padding spilling over, exactly one. */
static void test_edges(void)
{
	static const char a64[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

	check_tag(a64, 55,
		  "sha256:9f4390f8d30c2dd92ec9f095b65e2b9a"
		  "e9b0a925a5258e241c9f1e910f734318");
	check_tag(a64, 63,
		  "sha256:7d3e74a05d7db15bce4ad9ec0658ea98"
		  "e3f06eeecf16b4c6fff2da457ddc2f34");
	check_tag(a64, 64,
		  "sha256:ffe054fe7ae0cb6dc65c3af9b61d5209"
		  "f439851db43d0ba5997337df154668eb");
}

int main(void)
{
	RUN_TEST(test_known_answers);
	RUN_TEST(test_pieces);
	RUN_TEST(test_edges);
	return check_exit();
}
