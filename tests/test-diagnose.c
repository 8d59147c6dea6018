// SPDX-License-Identifier: MIT
/*
 * test-diagnose - errors made the way pipeline races make them are traced
 * back to their k-tile and stage; anything else stays unexplained.
 */

#include "check.h"
#include "diagnose.h"

#define K 512 /* 8 k-tiles of 64 */

static float a[K], b[K];
static const struct gemm_tile tile = { 128, 256, 64 };

static void setup(void)
{
	unsigned int i;

	/* small integers, like randint: every partial sum is exact */
	for (i = 0; i < K; i++) {
		a[i] = (float)((int)((i * 7u + 3u) % 5u) - 2);
		b[i] = (float)((int)((i * 11u + 1u) % 5u) - 2);
	}
}

static double partial(unsigned int t)
{
	double s = 0;
	unsigned int i;

	for (i = t * 64; i < (t + 1) * 64; i++)
		s += (double)a[i] * b[i];
	return s;
}

static void test_position(void)
{
	struct kdiag d;

	diagnose_element(&tile, 4, 300, 600, a, b, K, 0.0, 0.0, &d);
	CHECK_EQ_INT(d.tile_m, 2); /* 300 / 128 */
	CHECK_EQ_INT(d.tile_n, 2); /* 600 / 256 */
	CHECK_EQ_INT(d.warpgroup, 0); /* 300 % 128 = 44 */
	diagnose_element(&tile, 4, 100, 0, a, b, K, 0.0, 0.0, &d);
	CHECK_EQ_INT(d.warpgroup, 1);
}

static void test_stale_stage(void)
{
	struct kdiag d;
	/* k-tile 5 read its stage (1) while it still held k-tile 1 */
	double err = partial(1) - partial(5);

	diagnose_element(&tile, 4, 0, 0, a, b, K, err, 0.5, &d);
	CHECK_EQ_INT(d.kind, KDIAG_REPLACED);
	CHECK_EQ_INT(d.k_tile, 5);
	CHECK_EQ_INT(d.stage, 1);
	CHECK_EQ_INT(d.other_k_tile, 1);
	CHECK_EQ_INT(d.other_stage, 1);
}

/*
 * The partial sums are 63 61 65 65 66 63 61 65: k-tile 4's (66) is no
 * other k-tile's and no difference of two, so its loss and its double
 * count are explained by k-tile 4 alone.
 */
static void test_missing_and_doubled(void)
{
	struct kdiag d;

	diagnose_element(&tile, 3, 0, 0, a, b, K, -partial(4), 0.5, &d);
	CHECK_EQ_INT(d.kind, KDIAG_MISSING);
	CHECK_EQ_INT(d.k_tile, 4);
	CHECK_EQ_INT(d.stage, 1);
	CHECK_EQ_INT(d.other_k_tile, -1);
	diagnose_element(&tile, 3, 0, 0, a, b, K, partial(4), 0.5, &d);
	CHECK_EQ_INT(d.kind, KDIAG_DOUBLED);
	CHECK_EQ_INT(d.k_tile, 4);
	CHECK_EQ_INT(d.stage, 1);
	CHECK_EQ_INT(d.other_k_tile, -1);
	diagnose_element(&tile, 3, 0, 0, a, b, K, 1000.5, 0.25, &d);
	CHECK_EQ_INT(d.kind, KDIAG_NONE);
	CHECK_EQ_INT(d.k_tile, -1);
	CHECK_EQ_INT(d.stage, -1);
}

static void test_json(void)
{
	struct kdiag d;
	json_t *j;

	diagnose_element(&tile, 4, 0, 0, a, b, K, partial(1) - partial(5), 0.5,
			 &d);
	j = kdiag_to_json(&d);
	CHECK_STREQ(json_string_value(json_object_get(j, "kind")),
		    "k_tile_replaced");
	CHECK_EQ_INT(json_integer_value(json_object_get(j, "stage")), 1);
	json_decref(j);
}

int main(void)
{
	setup();
	RUN_TEST(test_position);
	RUN_TEST(test_stale_stage);
	RUN_TEST(test_missing_and_doubled);
	RUN_TEST(test_json);
	return check_exit();
}
