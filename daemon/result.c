// SPDX-License-Identifier: MIT
/*
 * result.c - struct gemm_result <-> JSON.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "result.h"

json_t *json_finite(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *first_mismatch_to_json(const struct gemm_verdict *v)
{
	if (v->first_row < 0)
		return json_null();
	return json_pack("{s:I, s:I, s:o, s:o}", "row",
			 (json_int_t)v->first_row, "col",
			 (json_int_t)v->first_col, "got",
			 json_finite(v->first_got), "want",
			 json_finite(v->first_want));
}

static json_t *verdict_to_json(const struct gemm_verdict *v)
{
	if (!v->checked)
		return json_pack("{s:b}", "checked", 0);
	return json_pack("{s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I,"
			 " s:I, s:o}",
			 "checked", 1, "passed", v->passed, "max_abs_err",
			 json_finite(v->max_abs_err), "max_rel_err",
			 json_finite(v->max_rel_err), "rel_fro_err",
			 json_finite(v->rel_fro_err), "atol",
			 json_finite(v->atol), "rtol", json_finite(v->rtol),
			 "mismatches", (json_int_t)v->mismatches, "nan_count",
			 (json_int_t)v->nan_count, "inf_count",
			 (json_int_t)v->inf_count, "unwritten",
			 (json_int_t)v->unwritten, "first_mismatch",
			 first_mismatch_to_json(v));
}

json_t *result_to_json(const struct gemm_result *r)
{
	const struct gemm_timing *t = &r->timing;

	return json_pack("{s:{s:o, s:o, s:o, s:o, s:i}, s:o, s:o}", "timing",
			 "min_us", json_finite(t->min_us), "median_us",
			 json_finite(t->median_us), "mean_us",
			 json_finite(t->mean_us), "stdev_us",
			 json_finite(t->stdev_us), "samples", t->samples,
			 "tflops", json_finite(r->tflops), "verify",
			 verdict_to_json(&r->verify));
}

static double number_or_nan(json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static int verdict_from_json(json_t *j, struct gemm_verdict *v)
{
	json_t *first;
	json_int_t mism, nan, inf, unwr;
	int checked, passed;
	json_t *a, *b, *c, *d, *e;

	if (json_unpack(j, "{s:b}", "checked", &checked) < 0)
		return -EINVAL;
	v->checked = checked;
	v->first_row = v->first_col = -1;
	if (!checked)
		return 0;
	if (json_unpack(j,
			"{s:b, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I,"
			" s:o}",
			"passed", &passed, "max_abs_err", &a, "max_rel_err", &b,
			"rel_fro_err", &c, "atol", &d, "rtol", &e, "mismatches",
			&mism, "nan_count", &nan, "inf_count", &inf,
			"unwritten", &unwr, "first_mismatch", &first) < 0)
		return -EINVAL;
	v->passed = passed;
	v->max_abs_err = number_or_nan(a);
	v->max_rel_err = number_or_nan(b);
	v->rel_fro_err = number_or_nan(c);
	v->atol = number_or_nan(d);
	v->rtol = number_or_nan(e);
	v->mismatches = (uint64_t)mism;
	v->nan_count = (uint64_t)nan;
	v->inf_count = (uint64_t)inf;
	v->unwritten = (uint64_t)unwr;
	if (json_is_object(first)) {
		json_int_t row, col;
		json_t *got, *want;

		if (json_unpack(first, "{s:I, s:I, s:o, s:o}", "row", &row,
				"col", &col, "got", &got, "want", &want) < 0)
			return -EINVAL;
		v->first_row = row;
		v->first_col = col;
		v->first_got = number_or_nan(got);
		v->first_want = number_or_nan(want);
	}
	return 0;
}

int result_from_json(json_t *j, struct gemm_result *ret)
{
	struct gemm_result r;
	json_t *mn, *md, *me, *sd, *tf, *verify;
	int samples;

	memset(&r, 0, sizeof(r));
	if (json_unpack(j, "{s:{s:o, s:o, s:o, s:o, s:i}, s:o, s:o}", "timing",
			"min_us", &mn, "median_us", &md, "mean_us", &me,
			"stdev_us", &sd, "samples", &samples, "tflops", &tf,
			"verify", &verify) < 0 ||
	    samples < 0)
		return -EINVAL;
	r.timing.min_us = number_or_nan(mn);
	r.timing.median_us = number_or_nan(md);
	r.timing.mean_us = number_or_nan(me);
	r.timing.stdev_us = number_or_nan(sd);
	r.timing.samples = (unsigned int)samples;
	r.tflops = number_or_nan(tf);
	if (verdict_from_json(verify, &r.verify) < 0)
		return -EINVAL;
	*ret = r;
	return 0;
}
