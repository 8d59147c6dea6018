// SPDX-License-Identifier: MIT
/*
 * test-nvml - the telemetry reductions of daemon/worker/nvml.c over
 * readings from a fake NVML, no GPU or driver needed.  The module is
 * included, so that the test can hand it its fake entry points without
 * dlopen().
 */
#include "nvml.c"

#include "check.h"

/* The values below are exact in binary: equal to within rounding. */
#define CHECK_NEAR(a, b) CHECK(fabs((a) - (b)) <= 1e-9)

/*
 * One job's telemetry: samples as timing asks for, NVML read n times
 * (without waiting out NVML_PERIOD_US between reads).
 */
static void track_job(struct nvml *nv, size_t samples, int n,
		      struct gemm_telemetry *tele)
{
	struct nvml_track t;

	nvml_track_start(&t, nv, samples);
	for (int i = 0; i < n; i++) {
		t.last_us = 0;
		nvml_track_sample(&t);
	}
	nvml_track_finish(&t, tele);
	nvml_track_free(&t);
}

/* The fake GPU: each reading slower and hotter than the one before. */
static unsigned int readings;

static nvml_ret fake_clock(nvml_dev d, int type, unsigned int *mhz)
{
	(void)d;
	*mhz = type == NVML_CLOCK_SM ? 2000 - readings : 2600;
	return NVML_SUCCESS;
}

/* Called after the clocks in each reading: it counts the readings. */
static nvml_ret fake_power(nvml_dev d, unsigned int *mw)
{
	(void)d;
	*mw = 300000 + 1000 * readings++;
	return NVML_SUCCESS;
}

static nvml_ret fake_limit(nvml_dev d, unsigned int *mw)
{
	(void)d;
	*mw = 700000;
	return NVML_SUCCESS;
}

static nvml_ret fake_temperature(nvml_dev d, int sensor, unsigned int *c)
{
	(void)d;
	(void)sensor;
	*c = 60 + readings / 10;
	return NVML_SUCCESS;
}

/*
 * A job of 4 samples (timing.iterations 4) on a kernel long enough for
 * 100 readings: every reading counts, not the first 4.
 */
static void test_track_more_readings_than_samples(void)
{
	struct nvml n = {
		.clock = fake_clock,
		.power = fake_power,
		.temperature = fake_temperature,
		.limit = fake_limit,
	};
	struct gemm_telemetry tele;

	readings = 0;
	track_job(&n, 4, 100, &tele);
	CHECK_NEAR(tele.power_limit_w, 700);
	CHECK_EQ_INT(readings, 100);
	/* SM clocks 2000 down to 1901 */
	CHECK_EQ_INT(tele.sm_clock_min_mhz, 1901);
	CHECK_NEAR(tele.sm_clock_median_mhz, 1950.5);
	CHECK_EQ_INT(tele.mem_clock_min_mhz, 2600);
	/* 300 W is the reading before the samples; 301..399 W count */
	CHECK_NEAR(tele.power_mean_w, 350);
	CHECK_NEAR(tele.power_max_w, 399);
	CHECK_NEAR(tele.temp_max_c, 70); /* 60 + 100 / 10 */
}

/* The instant power field: 500 W and up, but its second read times out. */
static unsigned int field_reads;

static nvml_ret fake_fields(nvml_dev d, int count, struct nvml_field_value *v)
{
	(void)d;
	(void)count;
	if (field_reads++ == 1)
		return 10; /* NVML_ERROR_TIMEOUT */
	v->value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
	v->value.ui = 500000 + 1000 * field_reads;
	return NVML_SUCCESS;
}

/* The 1 s mean, lagging behind: 100 W. */
static nvml_ret fake_power_mean(nvml_dev d, unsigned int *mw)
{
	(void)d;
	*mw = 100000;
	return NVML_SUCCESS;
}

/*
 * One failed read of the instant field skips that reading; the field
 * stays in use, for this job and the next, and the mean never mixes in.
 */
static void test_instant_power_glitch(void)
{
	struct nvml n = {
		.fields = fake_fields,
		.power = fake_power_mean,
	};
	struct gemm_telemetry tele;

	field_reads = 0;
	for (int job = 0; job < 2; job++) {
		track_job(&n, 16, 10, &tele);
		CHECK(!n.no_instant);
		CHECK(tele.power_mean_w > 500);
	}
	CHECK_EQ_INT(field_reads, 20);
}

/* A driver without the field: the mean stands in from then on. */
static nvml_ret fake_fields_unknown(nvml_dev d, int count,
				    struct nvml_field_value *v)
{
	(void)d;
	(void)count;
	field_reads++;
	v->ret = NVML_ERROR_NOT_SUPPORTED;
	return NVML_SUCCESS;
}

static void test_instant_power_lacking(void)
{
	struct nvml n = {
		.fields = fake_fields_unknown,
		.power = fake_power_mean,
	};
	struct gemm_telemetry tele;

	field_reads = 0;
	track_job(&n, 16, 10, &tele);
	CHECK(n.no_instant);
	CHECK_EQ_INT(field_reads, 1);
	/* every reading the same: none counts (see track_power()) */
	CHECK(isnan(tele.power_mean_w));
}

/* Without NVML everything is unknown, and nothing is read. */
static void test_track_without_nvml(void)
{
	struct gemm_telemetry tele;
	struct nvml_track t;

	nvml_track_start(&t, NULL, 4);
	CHECK(!nvml_track_sample(&t));
	nvml_track_finish(&t, &tele);
	nvml_track_free(&t);
	CHECK(isnan(tele.sm_clock_min_mhz));
	CHECK(isnan(tele.power_mean_w));
	CHECK(isnan(tele.energy_j));
	CHECK(isnan(tele.temp_max_c));
	CHECK(isnan(tele.power_limit_w));
}

/*
 * The energy counter moves in steps: over a window shorter than one it
 * may not move, which is "unknown", not 0 J.  One that moves adds up.
 */
static void test_energy_counter_steps(void)
{
	struct nvml n = { .clock = fake_clock };
	struct gemm_telemetry tele;
	struct nvml_track t;

	nvml_track_start(&t, &n, 3);
	nvml_track_energy(&t, 0);
	nvml_track_finish(&t, &tele);
	nvml_track_free(&t);
	CHECK(isnan(tele.energy_j));

	nvml_track_start(&t, &n, 3);
	nvml_track_energy(&t, 0);
	nvml_track_energy(&t, 70.5);
	nvml_track_finish(&t, &tele);
	nvml_track_free(&t);
	CHECK_NEAR(tele.energy_j, 70.5);

	/* A counter that went backwards spoils the window. */
	nvml_track_start(&t, &n, 3);
	nvml_track_energy(&t, 70.5);
	nvml_track_energy(&t, -1);
	nvml_track_finish(&t, &tele);
	nvml_track_free(&t);
	CHECK(isnan(tele.energy_j));
}

/*
 * Clock event reasons, one answer per reading: REASON_FAILS is a read
 * that fails, as is every read past the end.
 */
#define REASON_FAILS (~0ull)
static const unsigned long long reason_answers[] = {
	GEMM_THROTTLE_GPU_IDLE,
	GEMM_THROTTLE_SW_POWER_CAP, /* no slowdown of the kernel's */
	GEMM_THROTTLE_HW_THERMAL | GEMM_THROTTLE_APP_CLOCKS,
	REASON_FAILS, /* right after a slowdown */
	GEMM_THROTTLE_HW_POWER_BRAKE,
	1ull << 40, /* a reason newer than the table */
};
static unsigned int reason_reads;

static nvml_ret fake_reasons(nvml_dev d, unsigned long long *bits)
{
	(void)d;
	if (reason_reads >= ARRAY_SIZE(reason_answers) ||
	    reason_answers[reason_reads] == REASON_FAILS) {
		reason_reads++;
		return 999; /* NVML_ERROR_UNKNOWN */
	}
	*bits = reason_answers[reason_reads++];
	return NVML_SUCCESS;
}

/*
 * nvml_track_sample() says whether the reading it took shows the kernel
 * slowed down (GEMM_THROTTLE_SLOWDOWN; timing counts those samples), not
 * whether any reason is set; a reading that fails says no, and leaves
 * what was seen before; every reason seen is kept.
 */
static void test_reasons(void)
{
	static const bool slowed[] = { false, false, true, false,
				       true,  false, false };
	struct nvml n = { .reasons = fake_reasons };
	struct gemm_telemetry tele;
	struct nvml_track t;

	reason_reads = 0;
	nvml_track_start(&t, &n, 4);
	for (size_t i = 0; i < ARRAY_SIZE(slowed); i++) {
		t.last_us = 0;
		CHECK_EQ_INT(nvml_track_sample(&t), slowed[i]);
	}
	CHECK_EQ_INT(reason_reads, 7);
	nvml_track_finish(&t, &tele);
	nvml_track_free(&t);
	CHECK(tele.reasons_known);
	CHECK(tele.reasons_seen ==
	      (GEMM_THROTTLE_GPU_IDLE | GEMM_THROTTLE_SW_POWER_CAP |
	       GEMM_THROTTLE_HW_THERMAL | GEMM_THROTTLE_APP_CLOCKS |
	       GEMM_THROTTLE_HW_POWER_BRAKE | 1ull << 40));

	/* a driver that never answers: not known, and never slowed */
	reason_reads = ARRAY_SIZE(reason_answers);
	nvml_track_start(&t, &n, 4);
	t.last_us = 0;
	CHECK(!nvml_track_sample(&t));
	nvml_track_finish(&t, &tele);
	nvml_track_free(&t);
	CHECK(!tele.reasons_known);
	CHECK(tele.reasons_seen == 0);
}

static nvml_ret fake_driver(char *buf, unsigned int len)
{
	snprintf(buf, len, "580.159.04");
	return NVML_SUCCESS;
}

static nvml_ret fake_vbios_fails(nvml_dev d, char *buf, unsigned int len)
{
	(void)d;
	snprintf(buf, len, "garbage");
	return NVML_ERROR_NOT_SUPPORTED;
}

/* The driver's version, a VBIOS NVML cannot read, no serial at all. */
static void test_identity(void)
{
	struct nvml n = { .driver = fake_driver, .vbios = fake_vbios_fails };
	struct nvml_identity id;

	memset(&id, 'x', sizeof(id));
	nvml_identity(&n, &id);
	CHECK_STREQ(id.driver, "580.159.04");
	CHECK_STREQ(id.vbios, "");
	CHECK_STREQ(id.serial, "");
	nvml_identity(NULL, &id);
	CHECK_STREQ(id.driver, "");
}

int main(void)
{
	RUN_TEST(test_track_more_readings_than_samples);
	RUN_TEST(test_instant_power_glitch);
	RUN_TEST(test_instant_power_lacking);
	RUN_TEST(test_track_without_nvml);
	RUN_TEST(test_energy_counter_steps);
	RUN_TEST(test_reasons);
	RUN_TEST(test_identity);
	return check_exit();
}
