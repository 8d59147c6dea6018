// SPDX-License-Identifier: MIT
/*
 * test-gpcmap - GPC groups from probe clusters, each group's share of a
 * placed launch, and the claims of kernels/sm90_gemm.cu's place_claim()
 * replayed here: every place goes to exactly one cluster, wherever the
 * clusters land.
 */
#include <string.h>

#include "check.h"
#include "gpcmap.h"

/*
 * The layout an H200 showed (docs/perf.md, session 17): clusters of 16
 * join TPCs 2k+2.. of the first 64 SMs with TPCs of SMs 64..119.
 */
static void join_h200(struct gpc_map *m)
{
	for (unsigned int k = 0; k < 7; k++) {
		uint32_t sms[16];
		unsigned int n = 0;

		for (unsigned int j = 0; j < 4; j++) {
			sms[n++] = 2 * (k + 1) + 16 * j;
			sms[n++] = 2 * (k + 1) + 16 * j + 1;
			sms[n++] = 64 + 2 * k + 14 * j;
			sms[n++] = 64 + 2 * k + 14 * j + 1;
		}
		gpc_map_join(m, sms, n);
	}
	for (unsigned int t = 0; t < 66; t++) {
		const uint32_t pair[2] = { 2 * t, 2 * t + 1 };

		gpc_map_join(m, pair, 2);
	}
}

static void test_groups(void)
{
	struct gpc_map m;
	const uint32_t far[2] = { 0, 300 }; /* past GEMMD_MAX_SMS: ignored */

	gpc_map_init(&m);
	join_h200(&m);
	gpc_map_join(&m, far, 2);
	gpc_map_finish(&m);
	/* 7 GPCs of 16 SMs, then the 10 pairs never in a bigger cluster */
	CHECK_EQ_INT(m.groups, GEMMD_MAX_GROUPS);
	for (unsigned int g = 0; g < 7; g++)
		CHECK_EQ_INT(m.group_sms[g], 16);
	CHECK_EQ_INT(m.group_sms[7], 2);
	CHECK_EQ_INT(m.group_sms[15], 2 + 2); /* the rest share the last */
	CHECK_EQ_INT(m.sm_group[2], m.sm_group[65]);
	CHECK_EQ_INT(m.sm_group[2], m.sm_group[51]);
	CHECK(m.sm_group[2] != m.sm_group[4]);
	CHECK(m.sm_group[0] >= 7);
	CHECK_EQ_INT(m.sm_group[0], m.sm_group[1]);
	CHECK_EQ_INT(m.sm_group[132], GEMMD_NO_GROUP);
	/* largest first, ties by lowest SM: SMs 2,3 lead the first group */
	CHECK_EQ_INT(m.sm_group[2], 0);
}

static unsigned int cap_sum(const struct gemm_places *a)
{
	unsigned int s = 0;

	for (unsigned int g = 0; g < a->groups; g++) {
		CHECK_EQ_INT(a->group_base[g], s);
		s += a->group_cap[g];
	}
	return s;
}

static void test_args(void)
{
	static struct gemm_places a;
	struct gpc_map m;

	gpc_map_init(&m);
	join_h200(&m);
	gpc_map_finish(&m);
	/* 66 pairs: 8 per GPC of 16, one per lone pair */
	gpc_map_placement(&m, 66, 2, &a);
	CHECK_EQ_INT(a.groups, GEMMD_MAX_GROUPS);
	CHECK_EQ_INT(a.group_cap[0], 8);
	CHECK_EQ_INT(a.group_cap[7], 1);
	CHECK_EQ_INT(a.group_cap[15], 2);
	CHECK_EQ_INT(cap_sum(&a), 66);
	CHECK_EQ_INT(a.sm_group[64], m.sm_group[64]);
	/* fewer clusters: trimmed from the last groups */
	gpc_map_placement(&m, 20, 2, &a);
	CHECK_EQ_INT(a.group_cap[0], 8);
	CHECK_EQ_INT(a.group_cap[2], 4);
	CHECK_EQ_INT(a.group_cap[3], 0);
	CHECK_EQ_INT(cap_sum(&a), 20);
	/* more than the map holds: the rest in the last group */
	gpc_map_placement(&m, 140, 1, &a);
	CHECK_EQ_INT(cap_sum(&a), 140);
	/* no map: one group of every place, every SM without a group */
	gpc_map_init(&m);
	gpc_map_finish(&m);
	CHECK_EQ_INT(m.groups, 0);
	gpc_map_placement(&m, 33, 4, &a);
	CHECK_EQ_INT(a.groups, 1);
	CHECK_EQ_INT(a.group_cap[0], 33);
	CHECK_EQ_INT(a.sm_group[5], GEMMD_NO_GROUP);
}

/* place_claim() of kernels/sm90_gemm.cu, one cluster at a time. */
static unsigned int claim(const struct gemm_places *a, uint32_t *cnt,
			  unsigned int sm)
{
	const unsigned int own = sm < GEMMD_MAX_SMS ? a->sm_group[sm] :
						      GEMMD_NO_GROUP;
	unsigned int pos;

	if (own < a->groups) {
		pos = cnt[own]++;
		if (pos < a->group_cap[own])
			return a->group_base[own] + pos;
	}
	for (unsigned int g = 0; g < a->groups; g++) {
		if (g == own)
			continue;
		pos = cnt[g]++;
		if (pos < a->group_cap[g])
			return a->group_base[g] + pos;
	}
	return ~0u;
}

/* Clusters landing on `sms`, in that order: each place taken once. */
static void check_claims(const struct gemm_places *a, const unsigned int *sms,
			 unsigned int clusters)
{
	uint32_t cnt[GEMMD_MAX_GROUPS] = { 0 };
	bool taken[256] = { false };

	for (unsigned int i = 0; i < clusters; i++) {
		const unsigned int v = claim(a, cnt, sms[i]);

		CHECK(v < clusters);
		if (v >= clusters)
			return;
		CHECK(!taken[v]);
		taken[v] = true;
	}
}

static void test_claims(void)
{
	static struct gemm_places a;
	unsigned int sms[140], x = 12345;
	struct gpc_map m;

	gpc_map_init(&m);
	join_h200(&m);
	gpc_map_finish(&m);
	/* as the map says: pairs on TPCs, in launch order */
	gpc_map_placement(&m, 66, 2, &a);
	for (unsigned int i = 0; i < 66; i++)
		sms[i] = 2 * i;
	check_claims(&a, sms, 66);
	/* all on one GPC's SMs (a map that does not hold), SMs unknown */
	for (unsigned int i = 0; i < 66; i++)
		sms[i] = i % 3 ? 2 : 250 + i % 5;
	check_claims(&a, sms, 66);
	/* random SMs, many times; and more clusters than the map holds */
	for (unsigned int t = 0; t < 200; t++) {
		const unsigned int n = t % 2 ? 66 : 140;

		gpc_map_placement(&m, n, t % 2 ? 2 : 1, &a);
		for (unsigned int i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			sms[i] = (x >> 8) % 160;
		}
		check_claims(&a, sms, n);
	}
}

int main(void)
{
	RUN_TEST(test_groups);
	RUN_TEST(test_args);
	RUN_TEST(test_claims);
	return check_exit();
}
