/* SPDX-License-Identifier: MIT */
/*
 * sha256.h - SHA-256 (FIPS 180-4), for fingerprints: a kernel's digest is
 * its cubin's, as sha256sum prints it, so an operator can check a node's
 * files against what gemmd reports without any tool of ours.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
/* "sha256:" and 64 hex digits, with the NUL. */
#define SHA256_TAG_LEN (7 + 2 * SHA256_BYTES + 1)

struct sha256 {
	uint32_t h[8];
	uint8_t block[64];
	size_t fill; /* bytes in block */
	uint64_t total; /* bytes hashed so far */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_BYTES]);

/* One buffer's digest as "sha256:<64 lower-case hex digits>". */
void sha256_tag(const void *data, size_t len, char out[SHA256_TAG_LEN]);
/* A finished digest in the same form. */
void sha256_format(const uint8_t digest[SHA256_BYTES],
		   char out[SHA256_TAG_LEN]);
