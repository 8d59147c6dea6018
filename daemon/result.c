// SPDX-License-Identifier: MIT
/*
 * result.c - struct gemm_result <-> JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "result.h"
#include "util.h"

/* Indexed by bit number: GEMM_THROTTLE_* is 1 << index. */
static const char *const throttle_names[] = {
	"gpu_idle",
	"applications_clocks_setting",
	"sw_power_cap",
	"hw_slowdown",
	"sync_boost",
	"sw_thermal_slowdown",
	"hw_thermal_slowdown",
	"hw_power_brake_slowdown",
	"display_clock_setting",
};

json_t *json_finite(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *where_to_json(const struct gemm_verdict *v)
{
	struct kdiag d = {
		.kind = v->where.kind,
		.tile_m = v->where.tile_m,
		.tile_n = v->where.tile_n,
		.warpgroup = v->where.warpgroup,
		.k_tile = v->where.k_tile,
		.stage = v->where.stage,
		.other_k_tile = v->where.other_k_tile,
		.used = v->where.used,
		.other_stage = v->where.other_stage,
	};

	if (!v->diagnosed || d.kind < 0 || d.kind >= _KDIAG_KIND_MAX)
		return json_null();
	return kdiag_to_json(&d);
}

static json_t *first_mismatch_to_json(const struct gemm_verdict *v)
{
	if (v->first_row < 0)
		return json_null();
	return json_pack("{s:I, s:I, s:o, s:o, s:o}", "row",
			 (json_int_t)v->first_row, "col",
			 (json_int_t)v->first_col, "got",
			 json_finite(v->first_got), "want",
			 json_finite(v->first_want), "where", where_to_json(v));
}

static json_t *mismatch_to_json(const struct gemm_mismatch *x)
{
	return json_pack("{s:I, s:I, s:o, s:o}", "row", (json_int_t)x->row,
			 "col", (json_int_t)x->col, "got", json_finite(x->got),
			 "want", json_finite(x->want));
}

/* [{"row": r, "col": c, "got": x, "want": y}, ...], in index order. */
static json_t *sample_to_json(const struct gemm_verdict *v)
{
	const unsigned int n = MIN(v->n_sample, GEMM_MISMATCH_SAMPLE);
	json_t *a = json_array();

	for (unsigned int i = 0; a && i < n; i++) {
		if (json_array_append_new(a, mismatch_to_json(&v->sample[i])) <
		    0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *verdict_to_json(const struct gemm_verdict *v)
{
	if (!v->checked)
		return json_pack("{s:b}", "checked", 0);
	return json_pack("{s:b, s:b, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I,"
			 " s:I, s:I, s:o, s:o}",
			 "checked", 1, "passed", v->passed, "max_abs_err",
			 json_finite(v->max_abs_err), "max_rel_err",
			 json_finite(v->max_rel_err), "rel_fro_err",
			 json_finite(v->rel_fro_err), "atol",
			 json_finite(v->atol), "rtol", json_finite(v->rtol),
			 "mismatches", (json_int_t)v->mismatches, "nan_count",
			 (json_int_t)v->nan_count, "inf_count",
			 (json_int_t)v->inf_count, "unwritten",
			 (json_int_t)v->unwritten, "overflow_count",
			 (json_int_t)v->overflow, "first_mismatch",
			 first_mismatch_to_json(v), "mismatches_sample",
			 sample_to_json(v));
}

/* How the samples were taken: "flush" says which launches saw a cold L2. */
static json_t *method_to_json(const struct gemm_timing *t)
{
	const char *flush = "none";

	if (t->mode == GEMM_TIMING_COLD)
		flush = t->batch > 1 ? "each_batch" : "each_launch";
	return json_pack("{s:s?, s:I, s:i, s:s}", "mode",
			 string_table_lookup(gemm_timing_mode_names,
					     ARRAY_SIZE(gemm_timing_mode_names),
					     t->mode),
			 "l2_flush_bytes", (json_int_t)t->l2_flush_bytes,
			 "batch", t->batch, "flush", flush);
}

static json_t *raw_to_json(const struct gemm_timing *t)
{
	json_t *a = json_array();

	for (unsigned int i = 0; a && i < t->samples; i++)
		json_array_append_new(a, json_finite(t->raw_us[i]));
	return a;
}

static json_t *timing_to_json(const struct gemm_timing *t)
{
	json_t *j;

	j = json_pack("{s:o, s:o, s:o, s:o, s:i, s:o, s:o, s:o, s:o, s:o,"
		      " s:s?, s:o}",
		      "min_us", json_finite(t->min_us), "median_us",
		      json_finite(t->median_us), "mean_us",
		      json_finite(t->mean_us), "stdev_us",
		      json_finite(t->stdev_us), "samples", t->samples, "iqr_us",
		      json_finite(t->iqr_us), "p90_us", json_finite(t->p90_us),
		      "p99_us", json_finite(t->p99_us), "noise",
		      json_finite(t->noise), "gpu_time_ms",
		      json_finite(t->gpu_time_ms), "stop_reason",
		      string_table_lookup(gemm_stop_names,
					  ARRAY_SIZE(gemm_stop_names),
					  t->stop_reason),
		      "method", method_to_json(t));
	if (j && t->raw_us)
		json_object_set_new(j, "raw_us", raw_to_json(t));
	return j;
}

static json_t *reasons_to_json(uint64_t bits)
{
	json_t *a = json_array();
	char name[32];

	for (unsigned int i = 0; a && i < 64; i++) {
		if (!(bits & (1ull << i)))
			continue;
		if (i < ARRAY_SIZE(throttle_names))
			snprintf(name, sizeof(name), "%s", throttle_names[i]);
		else
			snprintf(name, sizeof(name), "bit_%u", i);
		json_array_append_new(a, json_string(name));
	}
	return a;
}

/* {"a": x, "b": y}, or null when x is not known. */
static json_t *pair_or_null(const char *a, double x, const char *b, double y)
{
	if (isnan(x))
		return json_null();
	return json_pack("{s:o, s:o}", a, json_finite(x), b, json_finite(y));
}

static json_t *telemetry_to_json(const struct gemm_telemetry *t)
{
	return json_pack(
		"{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "sm_clock_mhz",
		pair_or_null("min", t->sm_clock_min_mhz, "median",
			     t->sm_clock_median_mhz),
		"mem_clock_mhz",
		pair_or_null("min", t->mem_clock_min_mhz, "median",
			     t->mem_clock_median_mhz),
		"power_w",
		pair_or_null("mean", t->power_mean_w, "max", t->power_max_w),
		"power_limit_w", json_finite(t->power_limit_w), "energy_j",
		json_finite(t->energy_j), "temperature_c",
		isnan(t->temp_max_c) ?
			json_null() :
			json_pack("{s:o}", "max", json_finite(t->temp_max_c)),
		"throttle_reasons_seen",
		t->reasons_known ? reasons_to_json(t->reasons_seen) :
				   json_null(),
		"throttled_samples",
		t->reasons_known ? json_integer(t->throttled_samples) :
				   json_null(),
		"tflops_per_watt", json_finite(t->tflops_per_watt));
}

/* "" (the library did not say) as null; -1 likewise. */
static json_t *string_or_null(const char *s)
{
	return *s ? json_string(s) : json_null();
}

static json_t *int_or_null(int v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *lt_algo_to_json(const struct gemm_lt_algo *a)
{
	if (!a->known)
		return json_null();
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "tile",
			 string_or_null(a->tile), "stages",
			 string_or_null(a->stages), "cluster",
			 string_or_null(a->cluster), "split_k",
			 int_or_null(a->split_k), "reduction",
			 string_or_null(a->reduction), "cta_swizzling",
			 int_or_null(a->swizzle), "custom_option",
			 int_or_null(a->custom));
}

static json_t *baseline_to_json(const struct gemm_baseline_result *b)
{
	return json_pack(
		"{s:s, s:i, s:s?, s:i, s:i, s:o, s:i, s:s?, s:i, s:o, s:o, s:o}",
		"library", b->library, "version", b->version, "mode",
		string_table_lookup(gemm_baseline_mode_names,
				    ARRAY_SIZE(gemm_baseline_mode_names),
				    b->mode),
		"algo_index", b->algo_index, "algo_id", b->algo_id, "algo",
		lt_algo_to_json(&b->algo), "heuristics_tried",
		b->heuristics_tried, "order",
		string_table_lookup(gemm_baseline_order_names,
				    ARRAY_SIZE(gemm_baseline_order_names),
				    b->order),
		"rounds", b->rounds, "timing", timing_to_json(&b->timing),
		"telemetry", telemetry_to_json(&b->telemetry), "tflops",
		json_finite(b->tflops));
}

/* reference_cached is null when there was no reference: not verified. */
static json_t *inputs_to_json(const struct gemm_inputs *in)
{
	json_t *ref = in->reference_used ? json_boolean(in->reference_cached) :
					   json_null();

	return json_pack("{s:s?, s:I, s:b, s:o, s:b}", "init",
			 gemm_init_to_string(in->init), "seed",
			 (json_int_t)in->seed, "cached", in->cached,
			 "reference_cached", ref, "intact", in->intact);
}

/* clusters_resident is null where the driver could not say. */
static json_t *launch_to_json(const struct gemm_launch *l)
{
	return json_pack("{s:[i,i,i], s:I, s:I, s:o, s:o}", "grid", l->grid[0],
			 l->grid[1], l->grid[2], "ctas", (json_int_t)l->ctas,
			 "clusters", (json_int_t)l->clusters,
			 "clusters_resident",
			 l->clusters_resident ?
				 json_integer(l->clusters_resident) :
				 json_null(),
			 "waves", json_finite(l->waves));
}

/* j[key] = v, taking v over; j is dropped when that fails.  j may be NULL. */
static json_t *set_or_drop(json_t *j, const char *key, json_t *v)
{
	if (!j) {
		json_decref(v);
		return NULL;
	}
	if (json_object_set_new(j, key, v) < 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/*
 * "launch" and "inputs" only when the worker reported them; "baseline"
 * and "speedup_vs_baseline" only when a baseline ran.
 */
json_t *result_to_json(const struct gemm_result *r)
{
	json_t *j;

	j = json_pack("{s:o, s:o, s:{s:o, s:o}, s:{s:I, s:o}, s:o, s:o}",
		      "timing", timing_to_json(&r->timing), "tflops",
		      json_finite(r->tflops), "peak", "dense_tflops",
		      json_finite(r->peak_tflops), "percent",
		      json_finite(r->peak_percent), "bytes", "min",
		      (json_int_t)r->min_bytes, "achieved_gbps",
		      json_finite(r->achieved_gbps), "telemetry",
		      telemetry_to_json(&r->telemetry), "verify",
		      verdict_to_json(&r->verify));
	if (r->launch.ctas)
		j = set_or_drop(j, "launch", launch_to_json(&r->launch));
	if (r->inputs.present)
		j = set_or_drop(j, "inputs", inputs_to_json(&r->inputs));
	if (r->baseline.present) {
		j = set_or_drop(j, "baseline", baseline_to_json(&r->baseline));
		j = set_or_drop(j, "speedup_vs_baseline",
				json_finite(r->speedup_vs_baseline));
	}
	return j;
}

static double number_or_nan(json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static double real_at(json_t *obj, const char *key)
{
	return number_or_nan(json_object_get(obj, key));
}

/* The index of obj[key] in table, or def when absent or unknown. */
static int name_at(json_t *obj, const char *key, const char *const *table,
		   size_t n, int def)
{
	const char *s = json_string_value(json_object_get(obj, key));
	int i = s ? string_table_find(table, n, s) : -1;

	return i < 0 ? def : i;
}

static int raw_from_json(json_t *a, struct gemm_timing *t)
{
	json_t *v;
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) != t->samples)
		return -EINVAL;
	t->raw_us = calloc(MAX(t->samples, 1u), sizeof(*t->raw_us));
	if (!t->raw_us)
		return -ENOMEM;
	json_array_foreach(a, i, v)
		t->raw_us[i] = number_or_nan(v);
	return 0;
}

/* The keys beside min/median/mean/stdev/samples; all optional. */
static int timing_from_json(json_t *j, struct gemm_timing *t)
{
	json_t *method = json_object_get(j, "method");

	t->iqr_us = real_at(j, "iqr_us");
	t->p90_us = real_at(j, "p90_us");
	t->p99_us = real_at(j, "p99_us");
	t->noise = real_at(j, "noise");
	t->gpu_time_ms = real_at(j, "gpu_time_ms");
	t->stop_reason = name_at(j, "stop_reason", gemm_stop_names,
				 ARRAY_SIZE(gemm_stop_names),
				 GEMM_STOP_ITERATIONS);
	t->mode = name_at(method, "mode", gemm_timing_mode_names,
			  ARRAY_SIZE(gemm_timing_mode_names), GEMM_TIMING_COLD);
	t->l2_flush_bytes = (uint64_t)json_integer_value(
		json_object_get(method, "l2_flush_bytes"));
	t->batch = (unsigned int)json_integer_value(
		json_object_get(method, "batch"));
	return raw_from_json(json_object_get(j, "raw_us"), t);
}

static uint64_t reasons_from_json(json_t *a)
{
	uint64_t bits = 0;
	unsigned int b;
	json_t *v;
	size_t i;
	int k;

	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		k = s ? string_table_find(throttle_names,
					  ARRAY_SIZE(throttle_names), s) :
			-1;
		if (k >= 0)
			bits |= 1ull << k;
		else if (s && sscanf(s, "bit_%u", &b) == 1 && b < 64)
			bits |= 1ull << b;
	}
	return bits;
}

static void telemetry_from_json(json_t *j, struct gemm_telemetry *t)
{
	json_t *sm = json_object_get(j, "sm_clock_mhz");
	json_t *mem = json_object_get(j, "mem_clock_mhz");
	json_t *power = json_object_get(j, "power_w");
	json_t *reasons = json_object_get(j, "throttle_reasons_seen");

	t->sm_clock_min_mhz = real_at(sm, "min");
	t->sm_clock_median_mhz = real_at(sm, "median");
	t->mem_clock_min_mhz = real_at(mem, "min");
	t->mem_clock_median_mhz = real_at(mem, "median");
	t->power_mean_w = real_at(power, "mean");
	t->power_max_w = real_at(power, "max");
	t->energy_j = real_at(j, "energy_j");
	t->power_limit_w = real_at(j, "power_limit_w");
	t->temp_max_c = real_at(json_object_get(j, "temperature_c"), "max");
	t->reasons_known = json_is_array(reasons);
	t->reasons_seen = reasons_from_json(reasons);
	t->throttled_samples = (unsigned int)json_integer_value(
		json_object_get(j, "throttled_samples"));
	t->tflops_per_watt = real_at(j, "tflops_per_watt");
}

/* Absent in records made before there was one. */
static int sample_from_json(json_t *a, struct gemm_verdict *v)
{
	json_t *x;
	size_t i;

	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > GEMM_MISMATCH_SAMPLE)
		return -EINVAL;
	json_array_foreach(a, i, x) {
		struct gemm_mismatch *m = &v->sample[i];
		json_int_t row, col;
		json_t *got, *want;

		if (json_unpack(x, "{s:I, s:I, s:o, s:o}", "row", &row, "col",
				&col, "got", &got, "want", &want) < 0)
			return -EINVAL;
		m->row = row;
		m->col = col;
		m->got = number_or_nan(got);
		m->want = number_or_nan(want);
	}
	v->n_sample = (unsigned int)json_array_size(a);
	return 0;
}

static int verdict_from_json(json_t *j, struct gemm_verdict *v)
{
	json_t *first;
	json_int_t mism, nan, inf, unwr, ovf;
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
			" s:I, s:o}",
			"passed", &passed, "max_abs_err", &a, "max_rel_err", &b,
			"rel_fro_err", &c, "atol", &d, "rtol", &e, "mismatches",
			&mism, "nan_count", &nan, "inf_count", &inf,
			"unwritten", &unwr, "overflow_count", &ovf,
			"first_mismatch", &first) < 0)
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
	v->overflow = (uint64_t)ovf;
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
	return sample_from_json(json_object_get(j, "mismatches_sample"), v);
}

/* Basic timing keys (as result_from_json reads ours), the rest optional. */
static int timing_basic_from_json(json_t *j, struct gemm_timing *t)
{
	json_t *mn, *md, *me, *sd;
	int samples;

	if (json_unpack(j, "{s:o, s:o, s:o, s:o, s:i}", "min_us", &mn,
			"median_us", &md, "mean_us", &me, "stdev_us", &sd,
			"samples", &samples) < 0 ||
	    samples < 0)
		return -EINVAL;
	t->min_us = number_or_nan(mn);
	t->median_us = number_or_nan(md);
	t->mean_us = number_or_nan(me);
	t->stdev_us = number_or_nan(sd);
	t->samples = (unsigned int)samples;
	return 0;
}

/*
 * obj[key], a name in table: its index, or def when the key is absent
 * (a record from before the field existed); -EINVAL for an unknown name.
 */
static int optional_name_at(json_t *obj, const char *key,
			    const char *const *table, size_t n, int def)
{
	json_t *v = json_object_get(obj, key);
	int i;

	if (!v)
		return def;
	i = string_table_find(table, n, json_string_value(v));
	return i < 0 ? -EINVAL : i;
}

static void copy_string_at(json_t *obj, const char *key, char *buf, size_t len)
{
	const char *v = json_string_value(json_object_get(obj, key));

	snprintf(buf, len, "%s", v ? v : "");
}

static int int_at(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

/* Records from before "algo" leave it unknown. */
static void lt_algo_from_json(json_t *j, struct gemm_lt_algo *a)
{
	memset(a, 0, sizeof(*a));
	a->split_k = a->swizzle = a->custom = -1;
	if (!json_is_object(j))
		return;
	a->known = true;
	copy_string_at(j, "tile", a->tile, sizeof(a->tile));
	copy_string_at(j, "stages", a->stages, sizeof(a->stages));
	copy_string_at(j, "cluster", a->cluster, sizeof(a->cluster));
	copy_string_at(j, "reduction", a->reduction, sizeof(a->reduction));
	a->split_k = int_at(j, "split_k");
	a->swizzle = int_at(j, "cta_swizzling");
	a->custom = int_at(j, "custom_option");
}

/*
 * Absent: no baseline.  Its timing never carries raw samples.  "algo",
 * "order", "rounds" and "telemetry" are absent from records made before
 * them: those timed the baseline after ours (separate, without a pause).
 */
static int baseline_from_json(json_t *j, struct gemm_baseline_result *b)
{
	const char *lib;
	json_t *timing;
	int tried, mode, order, e;

	if (!j || json_is_null(j))
		return 0;
	/* Before there was a choice, all picked the fastest, separately. */
	mode = optional_name_at(j, "mode", gemm_baseline_mode_names,
				ARRAY_SIZE(gemm_baseline_mode_names),
				GEMM_BASELINE_MODE_FASTEST);
	order = optional_name_at(j, "order", gemm_baseline_order_names,
				 ARRAY_SIZE(gemm_baseline_order_names),
				 GEMM_ORDER_SEPARATE);
	if (json_unpack(j, "{s:s, s:i, s:i, s:i, s:i, s:o}", "library", &lib,
			"version", &b->version, "algo_index", &b->algo_index,
			"algo_id", &b->algo_id, "heuristics_tried", &tried,
			"timing", &timing) < 0 ||
	    strlen(lib) >= sizeof(b->library) || tried < 0 || mode < 0 ||
	    order < 0)
		return -EINVAL;
	b->mode = mode;
	b->order = order;
	b->heuristics_tried = (unsigned int)tried;
	e = timing_basic_from_json(timing, &b->timing);
	if (!e)
		e = timing_from_json(timing, &b->timing);
	if (!e && b->timing.raw_us) {
		free(b->timing.raw_us);
		b->timing.raw_us = NULL;
		e = -EINVAL;
	}
	if (e < 0)
		return e;
	snprintf(b->library, sizeof(b->library), "%s", lib);
	lt_algo_from_json(json_object_get(j, "algo"), &b->algo);
	telemetry_from_json(json_object_get(j, "telemetry"), &b->telemetry);
	b->rounds = (unsigned int)MAX(int_at(j, "rounds"), 0);
	b->tflops = real_at(j, "tflops");
	b->present = true;
	return 0;
}

/* Absent: not reported (older workers). */
static int launch_from_json(json_t *j, struct gemm_launch *l)
{
	int x, y, z;
	json_int_t ctas;

	if (!j)
		return 0;
	if (json_unpack(j, "{s:[iii], s:I}", "grid", &x, &y, &z, "ctas",
			&ctas) < 0 ||
	    x < 0 || y < 0 || z < 0 || ctas < 0)
		return -EINVAL;
	l->grid[0] = (unsigned int)x;
	l->grid[1] = (unsigned int)y;
	l->grid[2] = (unsigned int)z;
	l->ctas = (uint64_t)ctas;
	l->clusters = (uint64_t)MAX(int_at(j, "clusters"), 0);
	l->clusters_resident =
		(unsigned int)MAX(int_at(j, "clusters_resident"), 0);
	l->waves = real_at(j, "waves");
	return 0;
}

/* Absent: not reported (older workers). */
static int inputs_from_json(json_t *j, struct gemm_inputs *in)
{
	const char *init;
	json_int_t seed;
	json_t *ref;
	int cached, intact, i;

	if (!j)
		return 0;
	if (json_unpack(j, "{s:s, s:I, s:b, s:o, s:b}", "init", &init, "seed",
			&seed, "cached", &cached, "reference_cached", &ref,
			"intact", &intact) < 0 ||
	    (!json_is_null(ref) && !json_is_boolean(ref)) || seed < 0)
		return -EINVAL;
	i = gemm_init_from_string(init);
	if (i < 0)
		return -EINVAL;
	in->present = true;
	in->init = i;
	in->seed = (uint64_t)seed;
	in->cached = cached;
	in->reference_used = json_is_boolean(ref);
	in->reference_cached = json_is_true(ref);
	in->intact = intact;
	return 0;
}

int result_from_json(json_t *j, struct gemm_result *ret)
{
	struct gemm_result r;
	json_t *mn, *md, *me, *sd, *tf, *verify, *peak, *bytes;
	int samples, e;

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
	peak = json_object_get(j, "peak");
	bytes = json_object_get(j, "bytes");
	r.peak_tflops = real_at(peak, "dense_tflops");
	r.peak_percent = real_at(peak, "percent");
	r.min_bytes =
		(uint64_t)json_integer_value(json_object_get(bytes, "min"));
	r.achieved_gbps = real_at(bytes, "achieved_gbps");
	telemetry_from_json(json_object_get(j, "telemetry"), &r.telemetry);
	e = baseline_from_json(json_object_get(j, "baseline"), &r.baseline);
	if (e < 0)
		return e;
	r.speedup_vs_baseline = real_at(j, "speedup_vs_baseline");
	e = launch_from_json(json_object_get(j, "launch"), &r.launch);
	if (e < 0)
		return e;
	e = inputs_from_json(json_object_get(j, "inputs"), &r.inputs);
	if (e < 0)
		return e;
	e = timing_from_json(json_object_get(j, "timing"), &r.timing);
	if (e < 0)
		return e;
	*ret = r;
	return 0;
}
