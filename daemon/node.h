/* SPDX-License-Identifier: MIT */
/*
 * node.h - who answered: this machine's identity and gemmd's software, as
 * every job and /healthz carry it, so that results gathered from a fleet
 * can be told apart and grouped by node, boot and build.
 */
#pragma once

#include <jansson.h>

struct catalog;

/*
 * {"hostname", "id", "boot_id", "gemmd"}: the id and boot_id are the
 * machine's and the boot's ids as systemd keeps them, hashed for gemmd
 * (sd_id128_get_machine_app_specific()), so the machine id itself is
 * never sent; null where the system has none (a container without
 * /etc/machine-id).  NULL without memory.
 */
json_t *node_identity(void);

/* The kernel set: {"count", "digest"} (catalog_digest()). */
json_t *node_kernels(const struct catalog *c);
