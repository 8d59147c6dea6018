// SPDX-License-Identifier: MIT
/*
 * spec.c - parse and validate job requests.
 *
 * Each JSON object of a request is walked key by key against a table of
 * known fields, so an unknown or misspelt key is an error that names it
 * rather than something silently ignored.
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "spec.h"

/* Limits on the timing fields, in milliseconds. */
#define SPEC_TIME_MS_MAX 10000
#define SPEC_COOLDOWN_MS_MAX 5000

static const char *const reference_names[_GEMM_REFERENCE_MAX] = {
	[GEMM_REFERENCE_DEVICE] = "device",
	[GEMM_REFERENCE_CUBLAS] = "cublas",
};

struct field {
	const char *name;
	int (*parse)(json_t *v, const char *path, struct gemm_spec *spec,
		     struct gemmd_error *err);
};

static int walk_object(json_t *obj, const char *path,
		       const struct field *fields, size_t n,
		       struct gemm_spec *spec, struct gemmd_error *err);

void spec_init(struct gemm_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->dtype = GEMM_DTYPE_BF16;
	spec->out = GEMM_DTYPE_BF16; /* follows dtype unless given */
	spec->layout = GEMM_LAYOUT_TN;
	spec->schedule = GEMM_SCHEDULE_WS;
	spec->cluster_x = 1;
	spec->cluster_y = 1;
	spec->raster = GEMM_RASTER_AUTO;
	spec->swizzle = 0;
	spec->epilogue = GEMM_EPILOGUE_AUTO;
	spec->decomposition = GEMM_DECOMP_DATA_PARALLEL;
	spec->placement = GEMM_PLACEMENT_NONE;
	spec->occupancy = GEMM_OCCUPANCY_AUTO;
	spec->alpha = 1.0;
	spec->beta = 0.0;
	spec->warmup = 10;
	spec->iterations = 0;
	spec->timing_mode = GEMM_TIMING_COLD;
	spec->min_samples = 10;
	spec->min_time_ms = 100;
	spec->max_noise = 0.005;
	spec->max_time_ms = 5000;
	spec->cooldown_ms = 100;
	spec->verify = true;
	spec->init = GEMM_INIT_NORMAL;
	spec->seed = 1;
	spec->device = -1;
}

static int bad_type(struct gemmd_error *err, const char *path, const char *want)
{
	return gemmd_error_set(err, 400, "invalid_type", path,
			       "'%s' must be %s", path, want);
}

static int get_int(json_t *v, const char *path, json_int_t min, json_int_t max,
		   json_int_t *ret, struct gemmd_error *err)
{
	json_int_t x = 0;

	if (!json_is_integer(v))
		return bad_type(err, path, "an integer");
	x = json_integer_value(v);
	if (x < min || x > max)
		return gemmd_error_set(err, 400, "out_of_range", path,
				       "'%s' is %" JSON_INTEGER_FORMAT
				       ", outside %" JSON_INTEGER_FORMAT
				       "..%" JSON_INTEGER_FORMAT,
				       path, x, min, max);
	*ret = x;
	return 0;
}

static int get_uint(json_t *v, const char *path, unsigned int min,
		    unsigned int max, unsigned int *ret,
		    struct gemmd_error *err)
{
	json_int_t x = 0;
	int r = get_int(v, path, min, max, &x, err);

	if (r < 0)
		return r;
	*ret = (unsigned int)x;
	return 0;
}

/*
 * Any JSON number, integer or not, in min..max.  The message gives the
 * value with the 15 digits answers use: %g's 6 would call 1000000.5
 * "1e+06, outside -1e+06..1e+06".
 */
static int get_number(json_t *v, const char *path, double min, double max,
		      double *ret, struct gemmd_error *err)
{
	double x;

	if (!json_is_number(v))
		return bad_type(err, path, "a number");
	x = json_number_value(v);
	if (!(x >= min && x <= max))
		return gemmd_error_set(err, 400, "out_of_range", path,
				       "'%s' is %.15g, outside %.15g..%.15g",
				       path, x, min, max);
	*ret = x;
	return 0;
}

static int get_bool(json_t *v, const char *path, bool *ret,
		    struct gemmd_error *err)
{
	if (!json_is_boolean(v))
		return bad_type(err, path, "true or false");
	*ret = json_is_true(v);
	return 0;
}

/* An enum spelt as a string; "allowed" lists the values for the message. */
/* "\"a\", \"b\"": the names of table[0..n), for messages. */
static void names_list(const char *const *table, size_t n, char *buf,
		       size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++) {
		if (!table[i])
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s\"%s\"",
					 used ? ", " : "", table[i]);
	}
}

/*
 * A string naming one of table[0..n) (indexed by its enum): the index.
 * An unknown name is refused with the names allowed, from the table.
 */
static int get_enum(json_t *v, const char *path, const char *const *table,
		    size_t n, int *ret, struct gemmd_error *err)
{
	char allowed[256];
	int r;

	if (!json_is_string(v))
		return bad_type(err, path, "a string");
	r = string_table_find(table, n, json_string_value(v));
	if (r < 0) {
		names_list(table, n, allowed, sizeof(allowed));
		return gemmd_error_set(err, 400, "invalid_value", path,
				       "'%s' is \"%s\"; expected one of %s",
				       path, json_string_value(v), allowed);
	}
	*ret = r;
	return 0;
}

#define GET_ENUM(v, path, table, ret, err) \
	get_enum(v, path, table, ARRAY_SIZE(table), ret, err)

static int parse_dim(json_t *v, const char *path, uint64_t *ret,
		     struct gemmd_error *err)
{
	json_int_t x = 0;
	int r = get_int(v, path, 1, SPEC_DIM_MAX, &x, err);

	if (r < 0)
		return r;
	*ret = (uint64_t)x;
	return 0;
}

static int parse_m(json_t *v, const char *path, struct gemm_spec *spec,
		   struct gemmd_error *err)
{
	return parse_dim(v, path, &spec->m, err);
}

static int parse_n(json_t *v, const char *path, struct gemm_spec *spec,
		   struct gemmd_error *err)
{
	return parse_dim(v, path, &spec->n, err);
}

static int parse_k(json_t *v, const char *path, struct gemm_spec *spec,
		   struct gemmd_error *err)
{
	return parse_dim(v, path, &spec->k, err);
}

/* The tensor cores take 16-bit inputs; fp32 exists only as an output. */
static int parse_dtype(json_t *v, const char *path, struct gemm_spec *spec,
		       struct gemmd_error *err)
{
	int x = 0, r;

	/* The input types are the names before fp32. */
	if (json_is_string(v) && strcmp(json_string_value(v),
					gemm_dtype_names[GEMM_DTYPE_FP32]) == 0)
		return gemmd_error_set(err, 400, "invalid_value", path,
				       "'%s' is \"fp32\": fp32 is an output "
				       "type only (out_dtype); inputs are "
				       "\"bf16\" or \"fp16\"",
				       path);
	r = get_enum(v, path, gemm_dtype_names, GEMM_DTYPE_FP32, &x, err);
	if (r < 0)
		return r;
	spec->dtype = x;
	return 0;
}

static int parse_out_dtype(json_t *v, const char *path, struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_dtype_names, &x, err);
	if (r < 0)
		return r;
	spec->out = x;
	return 0;
}

static int parse_layout(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_layout_names, &x, err);
	if (r < 0)
		return r;
	spec->layout = x;
	return 0;
}

static int parse_schedule(json_t *v, const char *path, struct gemm_spec *spec,
			  struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_schedule_names, &x, err);
	if (r < 0)
		return r;
	spec->schedule = x;
	return 0;
}

/*
 * The kernels take alpha and beta as floats.  One so small that it
 * rounds to 0 there is refused, so that a job times the kernel its
 * numbers say: such a beta had C allocated, counted and planned for (no
 * _packed entry) while the kernel never read it, and such an alpha left
 * D all beta·C (or zeros) and the verdict vacuous.  Round to nearest
 * takes half of the smallest float to 0 and anything over it up.
 */
static int get_scale(json_t *v, const char *path, double *ret,
		     struct gemmd_error *err)
{
	int r = get_number(v, path, -SPEC_SCALE_MAX, SPEC_SCALE_MAX, ret, err);

	if (r < 0 || fabs(*ret) <= 0.0 || fabsf((float)*ret) > 0.0f)
		return r;
	return gemmd_error_set(err, 400, "out_of_range", path,
			       "'%s' is %g, which is 0 as the kernels' fp32: "
			       "give 0, or one over %g in size",
			       path, *ret, (double)FLT_TRUE_MIN / 2);
}

static int parse_alpha(json_t *v, const char *path, struct gemm_spec *spec,
		       struct gemmd_error *err)
{
	return get_scale(v, path, &spec->alpha, err);
}

static int parse_beta(json_t *v, const char *path, struct gemm_spec *spec,
		      struct gemmd_error *err)
{
	return get_scale(v, path, &spec->beta, err);
}

/*
 * One side of a tile, then the character end: digits only, 1..999.  Not
 * sscanf("%u"), which takes a sign ("-1" is UINT_MAX) and leading spaces.
 * Returns what follows end, or NULL.
 */
static const char *tile_side(const char *s, char end, unsigned int *ret)
{
	unsigned int x = 0;
	size_t n;

	for (n = 0; n < 3 && s[n] >= '0' && s[n] <= '9'; n++)
		x = x * 10 + (unsigned int)(s[n] - '0');
	if (!n || s[n] != end || x < 1)
		return NULL;
	*ret = x;
	return s + n + 1;
}

int tile_parse(const char *s, struct gemm_tile *ret)
{
	struct gemm_tile t;

	s = tile_side(s, 'x', &t.m);
	if (s)
		s = tile_side(s, 'x', &t.n);
	if (s)
		s = tile_side(s, '\0', &t.k);
	if (!s)
		return -EINVAL;
	*ret = t;
	return 0;
}

char *tile_format(const struct gemm_tile *t, char *buf, size_t len)
{
	snprintf(buf, len, "%ux%ux%u", t->m, t->n, t->k);
	return buf;
}

static int parse_tile(json_t *v, const char *path, struct gemm_spec *spec,
		      struct gemmd_error *err)
{
	if (json_is_null(v)) {
		memset(&spec->tile, 0, sizeof(spec->tile));
		return 0;
	}
	if (!json_is_string(v))
		return bad_type(err, path, "a string like \"128x256x64\"");
	if (tile_parse(json_string_value(v), &spec->tile) < 0)
		return gemmd_error_set(err, 400, "invalid_value", path,
				       "'%s' is \"%s\"; expected MxNxK such "
				       "as \"128x256x64\"",
				       path, json_string_value(v));
	return 0;
}

static int parse_stages(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	if (json_is_null(v)) {
		spec->stages = 0;
		return 0;
	}
	return get_uint(v, path, 1, SPEC_STAGES_MAX, &spec->stages, err);
}

static bool is_pow2(json_int_t x)
{
	return x > 0 && (x & (x - 1)) == 0;
}

/* One side of a cluster: 1, 2, 4 or 8 CTAs. */
static int get_cluster_dim(json_t *v, const char *path, unsigned int *ret,
			   struct gemmd_error *err)
{
	unsigned int x = 0;
	int r = get_uint(v, path, 1, SPEC_CLUSTER_DIM_MAX, &x, err);

	if (r < 0)
		return r;
	if (!is_pow2(x))
		return gemmd_error_set(err, 400, "invalid_value", path,
				       "'%s' is %u; expected 1, 2, 4 or 8",
				       path, x);
	*ret = x;
	return 0;
}

/*
 * The hardware's limit (16 CTAs, non-portable beyond 8) is checked here;
 * what each kernel accepts is plan.c's (422).
 */
static int parse_cluster(json_t *v, const char *path, struct gemm_spec *spec,
			 struct gemmd_error *err)
{
	unsigned int x = 0, y = 0;
	char sub[64];
	int r;

	if (!json_is_array(v) || json_array_size(v) != 2)
		return bad_type(err, path, "an array of two integers [x, y]");
	snprintf(sub, sizeof(sub), "%s[0]", path);
	r = get_cluster_dim(json_array_get(v, 0), sub, &x, err);
	if (r < 0)
		return r;
	snprintf(sub, sizeof(sub), "%s[1]", path);
	r = get_cluster_dim(json_array_get(v, 1), sub, &y, err);
	if (r < 0)
		return r;
	if (x * y > SPEC_CLUSTER_MAX)
		return gemmd_error_set(err, 400, "invalid_value", path,
				       "'%s' is [%u, %u]: %u CTAs, more than "
				       "the %u a cluster may hold",
				       path, x, y, x * y, SPEC_CLUSTER_MAX);
	spec->cluster_x = x;
	spec->cluster_y = y;
	return 0;
}

static int parse_raster(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_raster_names, &x, err);
	if (r < 0)
		return r;
	spec->raster = x;
	return 0;
}

/* null (the default): the plan picks. */
static int parse_swizzle(json_t *v, const char *path, struct gemm_spec *spec,
			 struct gemmd_error *err)
{
	json_int_t x;

	if (json_is_null(v)) {
		spec->swizzle = 0;
		return 0;
	}
	if (!json_is_integer(v))
		return bad_type(err, path, "an integer or null");
	x = json_integer_value(v);
	if (!is_pow2(x) || x > 8)
		return gemmd_error_set(err, 400, "invalid_value", path,
				       "'%s' is %" JSON_INTEGER_FORMAT
				       "; expected 1, 2, 4, 8 or null",
				       path, x);
	spec->swizzle = (unsigned int)x;
	return 0;
}

static int parse_epilogue(json_t *v, const char *path, struct gemm_spec *spec,
			  struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_epilogue_names, &x, err);
	if (r < 0)
		return r;
	spec->epilogue = x;
	return 0;
}

/* Which schedules take which is plan.c's (422). */
static int parse_decomposition(json_t *v, const char *path,
			       struct gemm_spec *spec, struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_decomposition_names, &x, err);
	if (r < 0)
		return r;
	spec->decomposition = x;
	return 0;
}

/* Which schedules take which is plan.c's (422), as for decomposition. */
static int parse_placement(json_t *v, const char *path, struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_placement_names, &x, err);
	if (r < 0)
		return r;
	spec->placement = x;
	return 0;
}

/* Which kernels take "balanced" is plan.c's (422). */
static int parse_occupancy(json_t *v, const char *path, struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_occupancy_names, &x, err);
	if (r < 0)
		return r;
	spec->occupancy = x;
	return 0;
}

static int parse_pdl(json_t *v, const char *path, struct gemm_spec *spec,
		     struct gemmd_error *err)
{
	return get_bool(v, path, &spec->pdl, err);
}

static const struct field kernel_fields[] = {
	{ "schedule", parse_schedule },
	{ "tile", parse_tile },
	{ "stages", parse_stages },
	{ "cluster", parse_cluster },
	{ "raster", parse_raster },
	{ "swizzle", parse_swizzle },
	{ "epilogue", parse_epilogue },
	{ "pdl", parse_pdl },
	{ "decomposition", parse_decomposition },
	{ "placement", parse_placement },
	{ "occupancy", parse_occupancy },
};

static int parse_kernel(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	return walk_object(v, path, kernel_fields, ARRAY_SIZE(kernel_fields),
			   spec, err);
}

static int parse_warmup(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	return get_uint(v, path, 0, SPEC_WARMUP_MAX, &spec->warmup, err);
}

/* null (the default) leaves the count to the stopping rule. */
static int parse_iterations(json_t *v, const char *path, struct gemm_spec *spec,
			    struct gemmd_error *err)
{
	if (json_is_null(v)) {
		spec->iterations = 0;
		return 0;
	}
	return get_uint(v, path, 1, SPEC_ITERATIONS_MAX, &spec->iterations,
			err);
}

static int parse_mode(json_t *v, const char *path, struct gemm_spec *spec,
		      struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_timing_mode_names, &x, err);
	if (r < 0)
		return r;
	spec->timing_mode = x;
	return 0;
}

static int parse_min_samples(json_t *v, const char *path,
			     struct gemm_spec *spec, struct gemmd_error *err)
{
	return get_uint(v, path, 1, GEMM_SAMPLES_MAX, &spec->min_samples, err);
}

static int parse_min_time(json_t *v, const char *path, struct gemm_spec *spec,
			  struct gemmd_error *err)
{
	return get_uint(v, path, 0, SPEC_TIME_MS_MAX, &spec->min_time_ms, err);
}

static int parse_max_time(json_t *v, const char *path, struct gemm_spec *spec,
			  struct gemmd_error *err)
{
	return get_uint(v, path, 1, SPEC_TIME_MS_MAX, &spec->max_time_ms, err);
}

static int parse_max_noise(json_t *v, const char *path, struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	return get_number(v, path, 0, 1, &spec->max_noise, err);
}

static int parse_cooldown(json_t *v, const char *path, struct gemm_spec *spec,
			  struct gemmd_error *err)
{
	return get_uint(v, path, 0, SPEC_COOLDOWN_MS_MAX, &spec->cooldown_ms,
			err);
}

static int parse_baseline_order(json_t *v, const char *path,
				struct gemm_spec *spec, struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_baseline_order_names, &x, err);
	if (r < 0)
		return r;
	spec->baseline_order = x;
	return 0;
}

static int parse_samples(json_t *v, const char *path, struct gemm_spec *spec,
			 struct gemmd_error *err)
{
	return get_bool(v, path, &spec->raw_samples, err);
}

static const struct field timing_fields[] = {
	{ "warmup", parse_warmup },
	{ "iterations", parse_iterations },
	{ "mode", parse_mode },
	{ "min_samples", parse_min_samples },
	{ "min_time_ms", parse_min_time },
	{ "max_time_ms", parse_max_time },
	{ "max_noise", parse_max_noise },
	{ "cooldown_ms", parse_cooldown },
	{ "baseline_order", parse_baseline_order },
	{ "samples", parse_samples },
};

static int parse_timing(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	return walk_object(v, path, timing_fields, ARRAY_SIZE(timing_fields),
			   spec, err);
}

static int parse_enabled(json_t *v, const char *path, struct gemm_spec *spec,
			 struct gemmd_error *err)
{
	return get_bool(v, path, &spec->verify, err);
}

static int parse_init(json_t *v, const char *path, struct gemm_spec *spec,
		      struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, gemm_init_names, &x, err);
	if (r < 0)
		return r;
	spec->init = x;
	return 0;
}

static int parse_seed(json_t *v, const char *path, struct gemm_spec *spec,
		      struct gemmd_error *err)
{
	json_int_t x = 0;
	int r = get_int(v, path, 0, INT64_MAX, &x, err);

	if (r < 0)
		return r;
	spec->seed = (uint64_t)x;
	return 0;
}

static int parse_reference(json_t *v, const char *path, struct gemm_spec *spec,
			   struct gemmd_error *err)
{
	int x = 0, r;

	r = GET_ENUM(v, path, reference_names, &x, err);
	if (r < 0)
		return r;
	spec->reference = x;
	return 0;
}

static const struct field verify_fields[] = {
	{ "enabled", parse_enabled },
	{ "init", parse_init },
	{ "seed", parse_seed },
	{ "reference", parse_reference },
};

static int parse_verify(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	return walk_object(v, path, verify_fields, ARRAY_SIZE(verify_fields),
			   spec, err);
}

static int parse_device(json_t *v, const char *path, struct gemm_spec *spec,
			struct gemmd_error *err)
{
	json_int_t x = 0;
	int r;

	if (json_is_null(v)) {
		spec->device = -1;
		return 0;
	}
	r = get_int(v, path, -1, SPEC_DEVICE_MAX, &x, err);
	if (r < 0)
		return r;
	spec->device = (int)x;
	return 0;
}

/* null (the default): no baseline. */
static int parse_baseline(json_t *v, const char *path, struct gemm_spec *spec,
			  struct gemmd_error *err)
{
	int x = 0, r;

	if (json_is_null(v)) {
		spec->baseline = GEMM_BASELINE_NONE;
		return 0;
	}
	r = GET_ENUM(v, path, gemm_baseline_names, &x, err);
	if (r < 0)
		return r;
	spec->baseline = x;
	return 0;
}

static int parse_dry_run(json_t *v, const char *path, struct gemm_spec *spec,
			 struct gemmd_error *err)
{
	return get_bool(v, path, &spec->dry_run, err);
}

static int parse_label(json_t *v, const char *path, struct gemm_spec *spec,
		       struct gemmd_error *err)
{
	if (!json_is_string(v))
		return bad_type(err, path, "a string");
	if (json_string_length(v) >= sizeof(spec->label))
		return gemmd_error_set(err, 400, "out_of_range", path,
				       "'%s' is longer than %zu bytes", path,
				       sizeof(spec->label) - 1);
	snprintf(spec->label, sizeof(spec->label), "%s", json_string_value(v));
	return 0;
}

static const struct field job_fields[] = {
	{ "m", parse_m },
	{ "n", parse_n },
	{ "k", parse_k },
	{ "dtype", parse_dtype },
	{ "out_dtype", parse_out_dtype },
	{ "layout", parse_layout },
	{ "alpha", parse_alpha },
	{ "beta", parse_beta },
	{ "kernel", parse_kernel },
	{ "timing", parse_timing },
	{ "verify", parse_verify },
	{ "device", parse_device },
	{ "dry_run", parse_dry_run },
	{ "label", parse_label },
	{ "baseline", parse_baseline },
};

static int walk_object(json_t *obj, const char *path,
		       const struct field *fields, size_t n,
		       struct gemm_spec *spec, struct gemmd_error *err)
{
	const char *key;
	json_t *v;

	if (!json_is_object(obj))
		return bad_type(err, path[0] ? path : "(body)", "an object");

	json_object_foreach(obj, key, v) {
		char sub[64];
		size_t i;
		int r;

		/* A long key is cut: never inside a character. */
		utf8_format(sub, sizeof(sub), "%s%s%s", path,
			    path[0] ? "." : "", key);
		for (i = 0; i < n; i++)
			if (strcmp(fields[i].name, key) == 0)
				break;
		if (i == n)
			return gemmd_error_set(err, 400, "unknown_field", sub,
					       "unknown field '%s'", sub);
		r = fields[i].parse(v, sub, spec, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int require(json_t *root, const char *key, struct gemmd_error *err)
{
	if (!json_object_get(root, key))
		return gemmd_error_set(err, 400, "missing_field", key,
				       "'%s' is required", key);
	return 0;
}

/*
 * Checks across fields, once every field is read.  The field named is one
 * the job sent: a max_time_ms under the default min_time_ms is the
 * max_time_ms's fault.
 */
static int check_timing(json_t *root, const struct gemm_spec *spec,
			struct gemmd_error *err)
{
	json_t *timing = json_object_get(root, "timing");

	if (spec->min_time_ms <= spec->max_time_ms)
		return 0;
	if (!json_object_get(timing, "min_time_ms"))
		return gemmd_error_set(err, 400, "invalid_value",
				       "timing.max_time_ms",
				       "'timing.max_time_ms' (%u) is less than "
				       "'timing.min_time_ms' (%u, its default)",
				       spec->max_time_ms, spec->min_time_ms);
	return gemmd_error_set(err, 400, "invalid_value", "timing.min_time_ms",
			       "'timing.min_time_ms' (%u) is more than "
			       "'timing.max_time_ms' (%u)",
			       spec->min_time_ms, spec->max_time_ms);
}

int spec_from_json(json_t *root, struct gemm_spec *ret, struct gemmd_error *err)
{
	struct gemm_spec spec;
	int r;

	spec_init(&spec);
	r = walk_object(root, "", job_fields, ARRAY_SIZE(job_fields), &spec,
			err);
	if (r < 0)
		return r;
	/* Keys come in any order: the output type follows dtype at the end. */
	if (!json_object_get(root, "out_dtype"))
		spec.out = spec.dtype;
	r = require(root, "m", err);
	if (r >= 0)
		r = require(root, "n", err);
	if (r >= 0)
		r = require(root, "k", err);
	if (r >= 0)
		r = check_timing(root, &spec, err);
	if (r < 0)
		return r;
	*ret = spec;
	return 0;
}

/* Map jansson's parse errors onto stable codes a client can branch on. */
static const char *parse_error_code(const json_error_t *jerr)
{
	/* An if-chain, not a switch: the enum grows between jansson releases. */
	enum json_error_code c = json_error_code(jerr);

	if (c == json_error_duplicate_key)
		return "duplicate_key";
	if (c == json_error_numeric_overflow)
		return "numeric_overflow";
	if (c == json_error_null_character || c == json_error_null_byte_in_key)
		return "null_byte";
	if (c == json_error_invalid_utf8)
		return "invalid_utf8";
	if (strstr(jerr->text, "depth"))
		return "too_deep";
	return "invalid_json";
}

/*
 * jansson's words ("too big integer near '1e400'"), but not where they
 * name its own flag ("... is not allowed without JSON_ALLOW_NUL").
 */
static const char *parse_error_text(const json_error_t *jerr)
{
	enum json_error_code c = json_error_code(jerr);

	if (c == json_error_null_character || c == json_error_null_byte_in_key)
		return "a string holds a NUL character (\\u0000)";
	return jerr->text;
}

/*
 * Where in the document jansson stopped, as a field ("verify.seed",
 * "kernel.cluster[1]"): the keys and indices of the containers open at
 * byte pos, each object's being its last key read.  jansson stops just
 * past a number too large or a key given twice, so this names what a
 * client sent wrong.  "" at the top level or for a key too long.
 */
struct path_level {
	bool array;
	unsigned int index; /* in an array */
	const char *key; /* in an object: the last key, in the text */
	size_t key_len;
};

#define PATH_DEPTH 8

static size_t scan_string(const char *text, size_t len, size_t i)
{
	for (i++; i < len && text[i] != '"'; i++)
		if (text[i] == '\\')
			i++;
	return i;
}

static void path_format(const struct path_level *lv, int depth, char *buf,
			size_t buflen)
{
	size_t used = 0;
	int d;

	buf[0] = '\0';
	for (d = 0; d < depth && used < buflen; d++) {
		/* A key with a NUL in it cannot be named: none. */
		if (!lv[d].array && lv[d].key &&
		    memchr(lv[d].key, '\0', lv[d].key_len))
			used = buflen;
		else if (lv[d].array)
			used += snprintf(buf + used, buflen - used, "[%u]",
					 lv[d].index);
		else if (lv[d].key)
			used += snprintf(buf + used, buflen - used, "%s%.*s",
					 used ? "." : "", (int)lv[d].key_len,
					 lv[d].key);
	}
	if (used >= buflen)
		buf[0] = '\0';
}

static void json_path_at(const char *text, size_t len, size_t pos, char *buf,
			 size_t buflen)
{
	struct path_level lv[PATH_DEPTH];
	bool want_key = false;
	int depth = 0;
	size_t i, end;

	for (i = 0; i < len && i < pos; i++) {
		char c = text[i];

		if (c == '{' || c == '[') {
			if (depth == PATH_DEPTH)
				break;
			lv[depth++] = (struct path_level){ .array = c == '[' };
			want_key = c == '{';
		} else if ((c == '}' || c == ']') && depth) {
			depth--;
		} else if (c == ',' && depth) {
			if (lv[depth - 1].array)
				lv[depth - 1].index++;
			else
				want_key = true;
		} else if (c == '"') {
			end = scan_string(text, len, i);
			if (want_key && depth && !lv[depth - 1].array) {
				lv[depth - 1].key = text + i + 1;
				lv[depth - 1].key_len = end - i - 1;
				want_key = false;
			}
			i = end;
		}
	}
	path_format(lv, depth, buf, buflen);
	/* Keys are quoted as sent: one with an escape or a NUL, none. */
	if (memchr(buf, '\\', strlen(buf)))
		buf[0] = '\0';
}

int spec_parse(const char *body, size_t len, struct gemm_spec *ret,
	       struct gemmd_error *err)
{
	char field[sizeof(err->field)] = "";
	const char *nul = memchr(body, '\0', len);
	json_error_t jerr;
	json_t *root;
	int r;

	/*
	 * A NUL byte is never JSON, but jansson's lexer takes one outside a
	 * string as the end of a token, so that '{"dry_run":true<NUL>}' was
	 * read as '{"dry_run":true}'.
	 */
	if (nul) {
		json_path_at(body, len, (size_t)(nul - body), field,
			     sizeof(field));
		return gemmd_error_set(err, 400, "null_byte",
				       field[0] ? field : NULL,
				       "the body holds a NUL byte at offset "
				       "%zu",
				       (size_t)(nul - body));
	}
	/*
	 * Any JSON text, not only an object or array: a scalar is JSON, and
	 * a body that is not an object is refused as such (invalid_type).
	 */
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
			  &jerr);
	if (!root) {
		enum json_error_code c = json_error_code(&jerr);

		if (c == json_error_numeric_overflow ||
		    c == json_error_duplicate_key)
			json_path_at(body, len, (size_t)jerr.position, field,
				     sizeof(field));
		return gemmd_error_set(err, 400, parse_error_code(&jerr),
				       field[0] ? field : NULL,
				       "invalid JSON at line %d, column %d: "
				       "%s",
				       jerr.line, jerr.column,
				       parse_error_text(&jerr));
	}
	r = spec_from_json(root, ret, err);
	json_decref(root);
	return r;
}

static json_t *timing_to_json(const struct gemm_spec *spec)
{
	return json_pack(
		"{s:I, s:o, s:s, s:I, s:I, s:I, s:f, s:I, s:s, s:b}", "warmup",
		(json_int_t)spec->warmup, "iterations",
		spec->iterations ? json_integer(spec->iterations) : json_null(),
		"mode",
		string_table_lookup(gemm_timing_mode_names,
				    ARRAY_SIZE(gemm_timing_mode_names),
				    spec->timing_mode),
		"min_samples", (json_int_t)spec->min_samples, "min_time_ms",
		(json_int_t)spec->min_time_ms, "max_time_ms",
		(json_int_t)spec->max_time_ms, "max_noise", spec->max_noise,
		"cooldown_ms", (json_int_t)spec->cooldown_ms, "baseline_order",
		string_table_lookup(gemm_baseline_order_names,
				    ARRAY_SIZE(gemm_baseline_order_names),
				    spec->baseline_order),
		"samples", spec->raw_samples);
}

static json_t *baseline_to_json(const struct gemm_spec *spec)
{
	const char *s = gemm_baseline_to_string(spec->baseline);

	return s ? json_string(s) : json_null();
}

/* null where the plan picks: tile, stages, swizzle. */
static json_t *kernel_to_json(const struct gemm_spec *spec)
{
	char tile[32];
	json_t *t = NULL;

	if (spec->tile.m)
		t = json_string(tile_format(&spec->tile, tile, sizeof(tile)));
	return json_pack(
		"{s:s, s:o, s:o, s:[I,I], s:s, s:o, s:s, s:b, s:s, s:s, s:s}",
		"schedule", gemm_schedule_to_string(spec->schedule), "tile",
		t ? t : json_null(), "stages",
		spec->stages ? json_integer(spec->stages) : json_null(),
		"cluster", (json_int_t)spec->cluster_x,
		(json_int_t)spec->cluster_y, "raster",
		gemm_raster_to_string(spec->raster), "swizzle",
		spec->swizzle ? json_integer(spec->swizzle) : json_null(),
		"epilogue", gemm_epilogue_to_string(spec->epilogue), "pdl",
		spec->pdl, "decomposition",
		gemm_decomposition_to_string(spec->decomposition), "placement",
		gemm_placement_to_string(spec->placement), "occupancy",
		gemm_occupancy_to_string(spec->occupancy));
}

json_t *spec_to_json(const struct gemm_spec *spec)
{
	return json_pack(
		"{s:I, s:I, s:I, s:s, s:s, s:s, s:f, s:f,"
		" s:o, s:o,"
		" s:{s:b, s:s, s:I, s:s},"
		" s:I, s:b, s:s, s:o}",
		"m", (json_int_t)spec->m, "n", (json_int_t)spec->n, "k",
		(json_int_t)spec->k, "dtype", gemm_dtype_to_string(spec->dtype),
		"out_dtype", gemm_dtype_to_string(spec->out), "layout",
		gemm_layout_to_string(spec->layout), "alpha", spec->alpha,
		"beta", spec->beta, "kernel", kernel_to_json(spec), "timing",
		timing_to_json(spec), "verify", "enabled", spec->verify, "init",
		gemm_init_to_string(spec->init), "seed", (json_int_t)spec->seed,
		"reference",
		string_table_lookup(reference_names,
				    ARRAY_SIZE(reference_names),
				    spec->reference),
		"device", (json_int_t)spec->device, "dry_run", spec->dry_run,
		"label", spec->label, "baseline", baseline_to_json(spec));
}
