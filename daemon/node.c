// SPDX-License-Identifier: MIT
/*
 * node.c - the node's identity, read once.
 */
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-id128.h>

#include "catalog.h"
#include "node.h"
#include "sha256.h"
#include "util.h"
#include "version.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0"
#endif

/* gemmd's application id: the ids it reports are hashed with it. */
#define GEMMD_APP_ID                                                          \
	SD_ID128_MAKE(6b, 2e, 51, 0c, 94, 7a, 4f, 3d, 8e, 1b, c5, 72, 09, d4, \
		      3a, e6)

static json_t *id_json(int (*get)(sd_id128_t, sd_id128_t *))
{
	char buf[SD_ID128_STRING_MAX];
	sd_id128_t id;

	if (get(GEMMD_APP_ID, &id) < 0)
		return json_null();
	return json_string(sd_id128_to_string(id, buf));
}

/*
 * The kernel takes any bytes as a hostname, jansson only UTF-8: a name
 * that is not would leave gemmd without an identity, and so not start.
 */
static json_t *hostname_json(void)
{
	char buf[HOST_NAME_MAX + 1], text[4 * sizeof(buf)];

	if (gethostname(buf, sizeof(buf)) < 0)
		return json_null();
	buf[sizeof(buf) - 1] = '\0';
	utf8_copy(text, sizeof(text), buf);
	return json_string(text);
}

json_t *node_identity(void)
{
	return json_pack("{s:o, s:o, s:o, s:s, s:s}", "hostname",
			 hostname_json(), "id",
			 id_json(sd_id128_get_machine_app_specific), "boot_id",
			 id_json(sd_id128_get_boot_app_specific), "gemmd",
			 PACKAGE_VERSION, "build", GEMMD_BUILD);
}

json_t *node_kernels(const struct catalog *c)
{
	char digest[SHA256_TAG_LEN];

	catalog_digest(c, digest);
	return json_pack("{s:i, s:s}", "count", (int)catalog_size(c), "digest",
			 digest);
}
