// SPDX-License-Identifier: MIT
/*
 * test-catalog - the catalog read from the real cubins of this build, and
 * the note parser on good and bad notes.  Needs no GPU.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "catalog.h"
#include "check.h"

static const char *kernel_dir(void)
{
	const char *d = getenv("GEMMD_KERNEL_DIR");

	return d ? d : "kernels";
}

static void test_note_parse(void)
{
	struct kernel_info k;

	CHECK_EQ_INT(kernel_info_parse(
			     "kernel=gemmd_ws_bf16_tn_128x256x64 schedule=ws "
			     "dtype=bf16 layout=tn tile=128x256x64 threads=384 "
			     "smem_fixed=2048 smem_stage=49152 min_stages=2 "
			     "max_stages=4 cluster=1x1 out=bf16 future=ignored",
			     "gemm_ws.cubin", &k),
		     0);
	CHECK_STREQ(k.name, "gemmd_ws_bf16_tn_128x256x64");
	CHECK_STREQ(k.cubin, "gemm_ws.cubin");
	CHECK_EQ_INT(k.tile.n, 256);
	CHECK_EQ_INT(k.threads, 384);
	CHECK_EQ_INT(k.smem_stage, 49152);
	CHECK_EQ_INT(k.max_stages, 4);
	CHECK_EQ_INT(k.cluster_x, 1);
	CHECK_EQ_INT(k.out, GEMM_DTYPE_BF16);

	/* missing essentials, bad values, unknown schedules */
	CHECK(kernel_info_parse("schedule=ws tile=1x1x1", "x", &k) < 0);
	CHECK(kernel_info_parse("kernel=a schedule=nope tile=1x1x1 threads=1 "
				"smem_stage=1 min_stages=1 max_stages=1",
				"x", &k) < 0);
	CHECK(kernel_info_parse("kernel=a schedule=ws tile=1x1x1 threads=x "
				"smem_stage=1 min_stages=1 max_stages=1",
				"x", &k) < 0);
	CHECK(kernel_info_parse("kernel=a schedule=ws tile=1x1x1 threads=1 "
				"smem_stage=1 min_stages=3 max_stages=2",
				"x", &k) < 0);
	CHECK(kernel_info_parse("garbage", "x", &k) < 0);
}

/* The real cubins: every ws kernel the build makes, with sane limits. */
static void test_real_cubins(void)
{
	struct catalog *c = NULL;
	const struct kernel_info *k;
	unsigned int bf16 = 0, fp16 = 0;
	size_t i;

	CHECK_EQ_INT(catalog_load(kernel_dir(), &c), 0);
	CHECK(catalog_size(c) >= 4);
	for (i = 0; i < catalog_size(c); i++) {
		k = catalog_get(c, i);
		CHECK(!strncmp(k->name, "gemmd_", 6));
		CHECK_STREQ(k->cubin, "gemm_ws.cubin");
		CHECK(k->threads % 128 == 0);
		CHECK(k->tile.k == 64);
		CHECK(k->min_stages >= 2);
		CHECK(k->smem_fixed + k->max_stages * k->smem_stage <= 232448);
		CHECK(k->smem_fixed + (k->max_stages + 1) * k->smem_stage >
		      232448);
		bf16 += k->dtype == GEMM_DTYPE_BF16;
		fp16 += k->dtype == GEMM_DTYPE_FP16;
	}
	CHECK(bf16 >= 2 && fp16 >= 2);
	k = catalog_find(c, "gemmd_ws_bf16_tn_128x256x64");
	CHECK(k != NULL);
	if (k) {
		CHECK_EQ_INT(k->tile.m, 128);
		CHECK_EQ_INT(k->smem_stage, (128 + 256) * 64 * 2);
	}
	/* The reference cubin has kernels but no notes: nothing listed. */
	CHECK(catalog_find(c, "gemmd_ref_bf16_tn") == NULL);
	catalog_free(c);
}

/* A truncated or corrupt cubin is refused, never crashes the reader. */
static void test_corrupt(void)
{
	char src[4096], dst[] = "/tmp/gemmd-test-XXXXXX.cubin";
	struct catalog *c = catalog_new();
	static unsigned char buf[1 << 20];
	ssize_t n, cut;
	int fd;

	snprintf(src, sizeof(src), "%s/gemm_ws.cubin", kernel_dir());
	fd = open(src, O_RDONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	CHECK(n > 64);
	for (cut = 1; cut < n; cut += n / 37 + 1) {
		fd = mkstemps(dst, 6);
		CHECK(fd >= 0);
		if (write(fd, buf, (size_t)cut) != cut)
			CHECK(0);
		close(fd);
		CHECK(catalog_read_cubin(c, dst) <= 0 || cut > n / 2);
		unlink(dst);
		strcpy(dst, "/tmp/gemmd-test-XXXXXX.cubin");
	}
	CHECK(catalog_read_cubin(c, "/nonexistent.cubin") == -ENOENT);
	catalog_free(c);
}

int main(void)
{
	RUN_TEST(test_note_parse);
	RUN_TEST(test_real_cubins);
	RUN_TEST(test_corrupt);
	return check_exit();
}
