/* SPDX-License-Identifier: MIT */
/*
 * catalog.h - the kernels our cubins hold, read from the files themselves.
 *
 * Every GEMM entry point in a cubin carries a note: a device string
 * "gemmd_meta_<entry>" of key=value pairs (schedule, dtype, layout, tile,
 * threads, shared memory, stage and cluster limits, epilogues, output
 * types; kernels/common.cuh lists the keys).  The catalog reads those
 * notes from the ELF symbol table, so it needs no GPU and no CUDA library.
 * The kernels may sit one per cubin or many to one.
 */
#pragma once

#include <stddef.h>
#include <jansson.h>

#include "gemm.h"
#include "sha256.h"

/* No cubin is read past this size. */
#define CUBIN_SIZE_MAX (256u << 20)

/* Bit i of a mask stands for enum value i. */
#define KERNEL_BIT(i) (1u << (i))

/* A kernel's name, its NUL included, is at most this long. */
#define KERNEL_NAME_SIZE 96

struct kernel_info {
	char name[KERNEL_NAME_SIZE];
	char cubin[64];
	enum gemm_schedule schedule;
	enum gemm_dtype dtype; /* of A and B */
	unsigned int outs; /* output types offered: KERNEL_BIT(gemm_dtype) */
	enum gemm_layout layout;
	struct gemm_tile tile;
	unsigned int threads;
	unsigned int smem_fixed; /* bytes besides the stage ring */
	unsigned int smem_stage; /* bytes per pipeline stage */
	unsigned int smem_epilogue; /* bytes the tma epilogue adds */
	unsigned int min_stages, max_stages;
	unsigned int cluster_max; /* largest cluster accepted, x * y CTAs */
	bool persistent; /* grid sized by occupancy, not by the tiles */
	bool pdl; /* waits for the grid before it: may launch with PDL */
	bool placement; /* claims its place by GPC: kernel.placement gpc */
	unsigned int epilogues; /* KERNEL_BIT(gemm_epilogue) */
	char arch[16]; /* oldest its design runs on: "sm_90a", "sm_80" */
	unsigned int sm; /* what its cubin is built for: 90; 0 if not known */
	char digest[SHA256_TAG_LEN]; /* its cubin's, or "" for none read */
};

/* The sm_80 kernels read A and B with cp.async, not TMA. */
bool kernel_is_sm80(const struct kernel_info *k);
/*
 * Its cubin also has <name>_packed, for TMA stores of D in the input type
 * without C (kernels/gemm-abi.h): the SM90 warp-specialized schedules.
 */
bool kernel_has_packed_entry(const struct kernel_info *k);

struct catalog;

/*
 * Reads every *.cubin in dir, in file name order (strcmp); a file that is
 * not a readable cubin is skipped.
 */
int catalog_load(const char *dir, struct catalog **ret);
struct catalog *catalog_free(struct catalog *c);

size_t catalog_size(const struct catalog *c);
/* Notes read so far that did not parse: a build that went wrong. */
size_t catalog_bad_notes(const struct catalog *c);
/*
 * Kernels found again in another cubin (an older install's files left
 * beside the new ones): the cubin named after the kernel is the one
 * listed, or else the first by file name, and each is logged.
 */
size_t catalog_duplicates(const struct catalog *c);
const struct kernel_info *catalog_get(const struct catalog *c, size_t i);
/*
 * The kernel set's fingerprint: the digest of a line "NAME DIGEST\n" for
 * each kernel, in the catalog's order (by name), so two nodes that list
 * the same kernels from the same files give the same one.
 */
void catalog_digest(const struct catalog *c, char out[SHA256_TAG_LEN]);
const struct kernel_info *catalog_find(const struct catalog *c,
				       const char *name);

/* Parse one note ("kernel=... schedule=ws ..."); exposed for tests. */
int kernel_info_parse(const char *note, const char *cubin,
		      struct kernel_info *ret);
/* Notes found in one cubin image; exposed for tests. */
int catalog_read_cubin(struct catalog *c, const char *path);
struct catalog *catalog_new(void);
int catalog_add(struct catalog *c, const struct kernel_info *k);

json_t *kernel_info_to_json(const struct kernel_info *k);
json_t *catalog_to_json(const struct catalog *c);
