// SPDX-License-Identifier: MIT
/*
 * ctl-print.c - how gemmctl shows jobs, kernels and devices.
 *
 * Everything here reads the daemon's JSON defensively: a missing or null
 * member prints as "-" rather than failing, so that an older or newer
 * daemon still gives readable output.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl-print.h"
#include "util.h"

#define CELL_MAX 96
#define ESCAPE_MAX 9 /* the longest escape, "\xc2\x9b", and its NUL */

/* --- JSON text ------------------------------------------------------------ */

static void newline(FILE *f, int depth)
{
	fputc('\n', f);
	while (depth-- > 0)
		fputs("  ", f);
}

static size_t skip_space(const char *s, size_t i, size_t len)
{
	while (i < len &&
	       (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i;
}

/*
 * Re-indents the text rather than dumping a parsed copy: jansson would print
 * 755.2 as 755.20000000000005, and --json promises the daemon's own JSON.
 * The caller has checked that the text parses.
 */
void ctl_print_json_text(FILE *f, const char *s, size_t len)
{
	bool in_str = false, esc = false;
	int depth = 0;
	size_t i, j;

	for (i = 0; i < len; i++) {
		char c = s[i];

		if (in_str) {
			fputc(c, f);
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				in_str = false;
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			fputc(c, f);
			break;
		case '{':
		case '[':
			fputc(c, f);
			j = skip_space(s, i + 1, len);
			if (j < len && (s[j] == '}' || s[j] == ']')) {
				fputc(s[j], f);
				i = j;
			} else {
				newline(f, ++depth);
			}
			break;
		case '}':
		case ']':
			newline(f, --depth);
			fputc(c, f);
			break;
		case ',':
			fputc(c, f);
			newline(f, depth);
			break;
		case ':':
			fputs(": ", f);
			break;
		case ' ':
		case '\t':
		case '\r':
		case '\n':
			break;
		default:
			fputc(c, f);
			break;
		}
	}
	fputc('\n', f);
}

/* --- text from gemmd ------------------------------------------------------ */

/*
 * The escape for the character at s, or NULL when it prints as it is;
 * *len is how many bytes of s it stands for.  Text from gemmd (a label,
 * a reason, a message) must not add lines to the output or drive the
 * terminal, so the C0 controls and DEL, and the C1 controls as UTF-8
 * (U+0080..U+009F; terminals take 0x9b for CSI), are escaped: "\n" for
 * a newline, "\xNN" for each byte of the others.
 */
static const char *escape_at(const char *s, char buf[ESCAPE_MAX], size_t *len)
{
	unsigned char c = s[0], d = s[1];

	*len = 1;
	if (c == '\n')
		return "\\n";
	if (c < 0x20 || c == 0x7f) {
		snprintf(buf, ESCAPE_MAX, "\\x%02x", c);
		return buf;
	}
	if (c == 0xc2 && d >= 0x80 && d <= 0x9f) {
		*len = 2;
		snprintf(buf, ESCAPE_MAX, "\\x%02x\\x%02x", c, d);
		return buf;
	}
	return NULL;
}

size_t ctl_escape(char *dst, size_t size, const char *src)
{
	size_t used = 0, out = 0, n, skip;
	bool cut = false;
	char buf[ESCAPE_MAX];
	const char *e;

	for (; *src; src += skip) {
		e = escape_at(src, buf, &skip);
		n = e ? strlen(e) : 1;
		cut = cut || used + n >= size;
		if (!cut) {
			memcpy(dst + used, e ?: src, n);
			out = used + n;
		}
		used += n;
	}
	if (size)
		dst[out] = '\0';
	return used;
}

static void vprint_text(FILE *f, const char *fmt, va_list ap)
{
	const char *s, *e;
	char *text, buf[ESCAPE_MAX];
	size_t skip;

	if (vasprintf(&text, fmt, ap) < 0) {
		fputs("(out of memory)", f);
		return;
	}
	for (s = text; *s; s += skip) {
		e = escape_at(s, buf, &skip);
		if (e)
			fputs(e, f);
		else
			fputc(*s, f);
	}
	free(text);
}

void ctl_print_text(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint_text(f, fmt, ap);
	va_end(ap);
}

/* --- reading members ------------------------------------------------------ */

const char *ctl_jstr(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

static bool jnum(const json_t *obj, const char *key, double *ret)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_number(v))
		return false;
	*ret = json_number_value(v);
	return true;
}

static bool jint(const json_t *obj, const char *key, json_int_t *ret)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v))
		return false;
	*ret = json_integer_value(v);
	return true;
}

/* "32x16x1" from [32,16,1]; "-" when it is not an array of integers. */
/* buf of len bytes after text of used bytes was put in it: cut, "...". */
static const char *mark_cut(char *buf, size_t len, size_t used)
{
	if (used >= len && len > 3)
		memcpy(buf + len - 4, "...", 4);
	return buf;
}

static const char *dims(const json_t *arr, char *buf, size_t len)
{
	size_t i, used = 0;

	if (!json_is_array(arr) || !json_array_size(arr))
		return "-";
	for (i = 0; i < json_array_size(arr) && used < len; i++) {
		const json_t *v = json_array_get(arr, i);

		if (!json_is_integer(v))
			return "-";
		used += snprintf(buf + used, len - used,
				 "%s%" JSON_INTEGER_FORMAT, i ? "x" : "",
				 json_integer_value(v));
	}
	return mark_cut(buf, len, used);
}

/* ["bf16", "fp32"] as "bf16,fp32"; "-" when empty or not strings. */
static const char *names(const json_t *arr, char *buf, size_t len)
{
	size_t i, used = 0;

	if (!json_is_array(arr) || !json_array_size(arr))
		return "-";
	for (i = 0; i < json_array_size(arr) && used < len; i++) {
		const char *s = json_string_value(json_array_get(arr, i));

		if (!s)
			return "-";
		used += snprintf(buf + used, len - used, "%s%s", i ? "," : "",
				 s);
	}
	return mark_cut(buf, len, used);
}

/* Integer member as text, "-" when absent. */
static const char *int_text(const json_t *obj, const char *key, char *buf,
			    size_t len)
{
	json_int_t v;

	if (!jint(obj, key, &v))
		return "-";
	snprintf(buf, len, "%" JSON_INTEGER_FORMAT, v);
	return buf;
}

char *ctl_error_text(const json_t *error)
{
	const char *code = ctl_jstr(error, "code");
	const char *msg = ctl_jstr(error, "message");
	const char *field = ctl_jstr(error, "field");
	char *text;
	int r;

	if (!code)
		return NULL;
	if (field)
		r = asprintf(&text, "%s: %s (field: %s)", code, msg ?: "-",
			     field);
	else
		r = asprintf(&text, "%s: %s", code, msg ?: "-");
	return r < 0 ? NULL : text;
}

/* --- tables --------------------------------------------------------------- */

struct table {
	const char *const *head;
	const char *align; /* 'l' or 'r' per column */
	size_t ncols, nrows, alloc;
	char (*cells)[CELL_MAX];
};

static char *cell(const struct table *t, size_t row, size_t col)
{
	return t->cells[row * t->ncols + col];
}

static int table_add_row(struct table *t)
{
	char(*cells)[CELL_MAX];
	size_t alloc;

	if (t->nrows == t->alloc) {
		alloc = t->alloc ? t->alloc * 2 : 16;
		cells = reallocarray(t->cells, alloc * t->ncols, CELL_MAX);
		if (!cells)
			return -ENOMEM;
		t->cells = cells;
		t->alloc = alloc;
	}
	memset(cell(t, t->nrows, 0), 0, t->ncols * CELL_MAX);
	return t->nrows++;
}

/* len, less a UTF-8 sequence that s[0..len) ends in the middle of. */
static size_t utf8_whole(const char *s, size_t len)
{
	size_t i = len, need;
	unsigned char c;

	while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (!i)
		return len;
	c = s[i - 1];
	if (c < 0xc0)
		return len;
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	return len - i + 1 >= need ? len : i - 1;
}

/*
 * A cell holds at most CELL_MAX - 1 bytes; a longer text is cut to end in
 * "...", so that a cut name cannot pass for a whole one.
 */
static _printf_(4, 5) void table_set(struct table *t, size_t row, size_t col,
				     const char *fmt, ...)
{
	static const char more[] = "...";
	char *c = cell(t, row, col), *text;
	va_list ap;
	size_t n;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (r < 0) {
		snprintf(c, CELL_MAX, "?");
		return;
	}
	if (ctl_escape(c, CELL_MAX, text) >= CELL_MAX) {
		ctl_escape(c, CELL_MAX - strlen(more), text);
		n = utf8_whole(c, strlen(c));
		memcpy(c + n, more, sizeof(more));
	}
	free(text);
}

/*
 * The columns text takes on a terminal: its characters, not its bytes.
 * printf's widths count bytes, which padded a cell with a name past
 * ASCII (UTF-8: two bytes for an accented letter) short and pushed the
 * rest of its row out of line.  (A wide character, as of CJK, still
 * takes two columns for one here.)
 */
static size_t text_width(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void table_print_row(const struct table *t, const size_t *width,
			    const char *const *text)
{
	size_t c;

	for (c = 0; c < t->ncols; c++) {
		bool last = c + 1 == t->ncols;
		int pad = (int)(width[c] - text_width(text[c]));

		if (t->align[c] == 'r')
			printf("%*s%s", pad, "", text[c]);
		else
			printf("%s%*s", text[c], last ? 0 : pad, "");
		fputs(last ? "\n" : "  ", stdout);
	}
}

static int table_print(const struct table *t)
{
	const char **text;
	size_t *width;
	size_t r, c;

	width = calloc(t->ncols, sizeof(*width));
	text = calloc(t->ncols, sizeof(*text));
	if (!width || !text) {
		free(width);
		free(text);
		return -ENOMEM;
	}
	for (c = 0; c < t->ncols; c++) {
		width[c] = text_width(t->head[c]);
		for (r = 0; r < t->nrows; r++)
			width[c] = MAX(width[c], text_width(cell(t, r, c)));
	}
	table_print_row(t, width, t->head);
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++)
			text[c] = cell(t, r, c);
		table_print_row(t, width, text);
	}
	free(width);
	free(text);
	return 0;
}

static void table_done(struct table *t)
{
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->alloc = 0;
}

/* --- verification --------------------------------------------------------- */

const char *ctl_job_verdict(const json_t *job)
{
	const json_t *v =
		json_object_get(json_object_get(job, "result"), "verify");

	if (!json_is_object(v))
		return "-";
	if (!json_is_true(json_object_get(v, "checked")))
		return "unchecked";
	return json_is_true(json_object_get(v, "passed")) ? "PASSED" : "FAILED";
}

bool ctl_job_in_flight(const json_t *job)
{
	const char *state = ctl_jstr(job, "state");

	return state && (!strcmp(state, "queued") || !strcmp(state, "running"));
}

bool ctl_state_is_final(const char *state)
{
	static const char *const final[] = { "done", "failed", "timeout",
					     "cancelled" };

	for (size_t i = 0; state && i < ARRAY_SIZE(final); i++)
		if (!strcmp(state, final[i]))
			return true;
	return false;
}

bool ctl_job_succeeded(const json_t *job)
{
	const char *state = ctl_jstr(job, "state");

	return state && !strcmp(state, "done") &&
	       strcmp(ctl_job_verdict(job), "FAILED") != 0;
}

/* --- job summary ---------------------------------------------------------- */

static _printf_(2, 3) void field(const char *label, const char *fmt, ...)
{
	va_list ap;

	printf("%-10s", label);
	va_start(ap, fmt);
	vprint_text(stdout, fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void print_state(const json_t *job)
{
	const json_t *reason = json_object_get(job, "reason");
	const char *state = ctl_jstr(job, "state");
	const char *text = json_string_value(reason);
	char *dump = NULL;

	/* The reason is a string today; show anything richer compactly. */
	if (!text && json_is_object(reason))
		text = ctl_jstr(reason, "message");
	if (!text && reason && !json_is_null(reason))
		text = dump =
			json_dumps(reason, JSON_COMPACT | JSON_ENCODE_ANY);
	if (text)
		field("state:", "%s (%s)", state ?: "-", text);
	else
		field("state:", "%s", state ?: "-");
	free(dump);
}

/* " -> fp32, alpha 2, beta -1": what differs from D = A * B in dtype. */
static void epilogue_text(const json_t *spec, char *buf, size_t len)
{
	const char *dtype = ctl_jstr(spec, "dtype");
	const char *out = ctl_jstr(spec, "out_dtype");
	double alpha = 1, beta = 0;
	int n = 0;

	buf[0] = '\0';
	if (out && dtype && strcmp(out, dtype))
		n = snprintf(buf, len, " -> %s", out);
	if (n >= 0 && (size_t)n < len && jnum(spec, "alpha", &alpha) &&
	    jnum(spec, "beta", &beta) &&
	    (fabs(alpha - 1.0) > 0.0 || fabs(beta) > 0.0))
		snprintf(buf + n, len - n, ", alpha %g, beta %g", alpha, beta);
}

static void print_problem(const json_t *spec)
{
	char m[32], n[32], k[32], epi[96];
	const char *dtype = ctl_jstr(spec, "dtype");
	const char *layout = ctl_jstr(spec, "layout");

	epilogue_text(spec, epi, sizeof(epi));
	field("problem:", "m=%s n=%s k=%s%s%s%s%s%s%s",
	      int_text(spec, "m", m, sizeof(m)),
	      int_text(spec, "n", n, sizeof(n)),
	      int_text(spec, "k", k, sizeof(k)), dtype ? " " : "", dtype ?: "",
	      layout ? " " : "", layout ?: "", epi,
	      json_is_true(json_object_get(spec, "dry_run")) ? " (dry run)" :
							       "");
}

/* Stream-K shows; data_parallel, the default, and older plans do not. */
static bool stream_k(const json_t *plan)
{
	const char *d = ctl_jstr(plan, "decomposition");

	return d && !strcmp(d, "stream_k");
}

/* GPC placement shows; none, the default, and older plans do not. */
static bool gpc_placement(const json_t *plan)
{
	const char *p = ctl_jstr(plan, "placement");

	return p && !strcmp(p, "gpc");
}

/* Balanced occupancy shows; full, auto's other choice, does not. */
static bool balanced(const json_t *plan)
{
	const char *o = ctl_jstr(plan, "occupancy");

	return o && !strcmp(o, "balanced");
}

/* pdl: the job's launches may overlap (spec.kernel.pdl). */
static void print_plan(const json_t *plan, const json_t *spec)
{
	const json_t *kernel = json_object_get(spec, "kernel");
	char grid[48], block[48], cluster[48], stages[32];
	const char *units;
	json_int_t smem = 0;

	if (!json_is_object(plan)) {
		field("kernel:", "-");
		return;
	}
	field("kernel:", "%s%s", ctl_jstr(plan, "kernel") ?: "-",
	      json_is_true(json_object_get(kernel, "pdl")) ?
		      " (programmatic dependent launch)" :
		      "");
	jint(plan, "smem_bytes", &smem);
	field("launch:",
	      "%s stages, grid %s, block %s, cluster %s, %" JSON_INTEGER_FORMAT
	      " B shared",
	      int_text(plan, "stages", stages, sizeof(stages)),
	      dims(json_object_get(plan, "grid"), grid, sizeof(grid)),
	      dims(json_object_get(plan, "block"), block, sizeof(block)),
	      dims(json_object_get(plan, "cluster"), cluster, sizeof(cluster)),
	      smem);
	if (!ctl_jstr(plan, "raster"))
		return;
	/* filled first: the arguments of one call have no order */
	units = int_text(plan, "units", grid, sizeof(grid));
	field("order:", "%s, swizzle %s, %s epilogue%s%s%s%s, %s work unit%s",
	      ctl_jstr(plan, "raster"),
	      int_text(plan, "swizzle", stages, sizeof(stages)),
	      ctl_jstr(plan, "epilogue") ?: "-",
	      json_is_true(json_object_get(plan, "persistent")) ?
		      ", persistent" :
		      "",
	      stream_k(plan) ? ", stream_k decomposition" : "",
	      gpc_placement(plan) ? ", gpc placement" : "",
	      balanced(plan) ? ", balanced occupancy" : "", units,
	      strcmp(units, "1") ? "s" : "");
}

static void print_device(const json_t *dev)
{
	const char *driver = ctl_jstr(dev, "nvidia_driver");
	char index[32];

	if (!json_is_object(dev)) {
		field("device:", "-");
		return;
	}
	if (driver)
		field("device:", "%s %s, driver %s",
		      int_text(dev, "index", index, sizeof(index)),
		      ctl_jstr(dev, "name") ?: "", driver);
	else
		field("device:", "%s %s",
		      int_text(dev, "index", index, sizeof(index)),
		      ctl_jstr(dev, "name") ?: "");
}

/* Who took the job: what tells a fleet's results apart. */
static void print_node(const json_t *node)
{
	const char *host = ctl_jstr(node, "hostname");
	const char *build = ctl_jstr(node, "build");

	if (!json_is_object(node))
		return;
	/* A gemmd older than node.build has only its version. */
	if (build)
		field("node:", "%s (gemmd %s, build %s)", host ?: "-",
		      ctl_jstr(node, "gemmd") ?: "-", build);
	else
		field("node:", "%s (gemmd %s)", host ?: "-",
		      ctl_jstr(node, "gemmd") ?: "-");
}

static void print_timing(const json_t *result)
{
	const json_t *t = json_object_get(result, "timing");
	double median, min = 0, mean = 0, stdev = 0, tflops;
	json_int_t samples = 0;

	if (jnum(t, "median_us", &median)) {
		jnum(t, "min_us", &min);
		jnum(t, "mean_us", &mean);
		jnum(t, "stdev_us", &stdev);
		jint(t, "samples", &samples);
		field("median:",
		      "%.1f us (min %.1f, mean %.1f, stdev %.1f, %" JSON_INTEGER_FORMAT
		      " samples)",
		      median, min, mean, stdev, samples);
	}
	if (jnum(result, "tflops", &tflops))
		field("TFLOP/s:", "%.1f", tflops);
}

/*
 * result.launch: the grid as launched (a persistent kernel's is cut to
 * what fits), and the waves of work units it took, which explain most
 * of the gaps between cluster shapes.
 */
static void print_launch(const json_t *result)
{
	const json_t *l = json_object_get(result, "launch");
	char grid[48], clusters[32], fit[32];
	double waves;

	if (!jnum(l, "waves", &waves))
		return;
	field("waves:", "%g on %s clusters (%s fit at once), grid %s", waves,
	      int_text(l, "clusters", clusters, sizeof(clusters)),
	      int_text(l, "clusters_resident", fit, sizeof(fit)),
	      dims(json_object_get(l, "grid"), grid, sizeof(grid)));
}

/*
 * A mismatch's value as text.  gemmd writes null for a value that is not
 * finite; bad names it (see bad_got_name()).
 */
static const char *value_text(const json_t *e, const char *key, const char *bad,
			      char *buf, size_t len)
{
	const json_t *v = json_object_get(e, key);

	if (json_is_null(v))
		return bad;
	if (!json_is_number(v))
		return "-";
	snprintf(buf, len, "%g", json_number_value(v));
	return buf;
}

/*
 * What a null "got" stands for: NaN, Inf or an element never written
 * (still the poison pattern).  The counts tell which only when one kind
 * occurred at all.
 */
static const char *bad_got_name(json_int_t nans, json_int_t infs,
				json_int_t unwritten)
{
	if (nans && !infs && !unwritten)
		return "NaN";
	if (!nans && infs && !unwritten)
		return "Inf";
	if (!nans && !infs && unwritten)
		return "unwritten";
	return "non-finite";
}

static void print_first_mismatch(const json_t *first, const char *bad_got)
{
	char got[32], want[32];
	json_int_t row, col;
	char *dump;

	if (jint(first, "row", &row) && jint(first, "col", &col)) {
		field("",
		      "first mismatch at [%" JSON_INTEGER_FORMAT
		      ",%" JSON_INTEGER_FORMAT "]: got %s, want %s",
		      row, col,
		      value_text(first, "got", bad_got, got, sizeof(got)),
		      value_text(first, "want", "non-finite", want,
				 sizeof(want)));
		return;
	}
	dump = json_dumps(first, JSON_COMPACT | JSON_ENCODE_ANY);
	if (dump)
		field("", "first mismatch: %s", dump);
	free(dump);
}

/* The mismatches after the first, as "[row,col] got/want" pairs. */
static void print_mismatch_sample(const json_t *sample, const char *bad_got)
{
	char line[512], got[32], want[32];
	size_t i, used = 0;
	const json_t *e;
	int n;

	line[0] = '\0';
	json_array_foreach(sample, i, e) {
		json_int_t row, col;

		if (i == 0 || !jint(e, "row", &row) || !jint(e, "col", &col))
			continue;
		n = snprintf(line + used, sizeof(line) - used,
			     "%s[%" JSON_INTEGER_FORMAT ",%" JSON_INTEGER_FORMAT
			     "] %s/%s",
			     used ? ", " : "", row, col,
			     value_text(e, "got", bad_got, got, sizeof(got)),
			     value_text(e, "want", "non-finite", want,
					sizeof(want)));
		if (n < 0 || (size_t)n >= sizeof(line) - used)
			break;
		used += n;
	}
	if (used)
		field("", "then (got/want): %s", line);
}

static void print_verify(const json_t *job)
{
	const json_t *v =
		json_object_get(json_object_get(job, "result"), "verify");
	const char *text = ctl_job_verdict(job);
	double abs_err = 0, rel_err = 0, atol = 0, rtol = 0;
	json_int_t bad = 0, nans = 0, infs = 0, unwritten = 0, overflow = 0;
	const char *bad_got;
	const json_t *first;

	if (strcmp(text, "PASSED") && strcmp(text, "FAILED")) {
		field("verify:", "not checked");
		return;
	}
	jnum(v, "max_abs_err", &abs_err);
	jnum(v, "max_rel_err", &rel_err);
	jnum(v, "atol", &atol);
	jnum(v, "rtol", &rtol);
	jint(v, "mismatches", &bad);
	field("verify:",
	      "%s (%" JSON_INTEGER_FORMAT " mismatches, max abs err %g, "
	      "max rel err %g; atol %g, rtol %g)",
	      text, bad, abs_err, rel_err, atol, rtol);

	jint(v, "nan_count", &nans);
	jint(v, "inf_count", &infs);
	jint(v, "unwritten", &unwritten);
	if (nans || infs || unwritten)
		field("",
		      "%" JSON_INTEGER_FORMAT " NaN, %" JSON_INTEGER_FORMAT
		      " Inf, %" JSON_INTEGER_FORMAT " never written",
		      nans, infs, unwritten);
	if (jint(v, "overflow_count", &overflow) && overflow)
		field("",
		      "%" JSON_INTEGER_FORMAT " past the output type's "
		      "range, Inf as they should be",
		      overflow);
	bad_got = bad_got_name(nans, infs, unwritten);
	first = json_object_get(v, "first_mismatch");
	if (first && !json_is_null(first))
		print_first_mismatch(first, bad_got);
	print_mismatch_sample(json_object_get(v, "mismatches_sample"), bad_got);
}

/* Whether the job made its inputs and reference or found them kept. */
static void print_inputs(const json_t *job)
{
	const json_t *in =
		json_object_get(json_object_get(job, "result"), "inputs");
	const json_t *ref = json_object_get(in, "reference_cached");
	char seed[32];

	if (!json_is_object(in))
		return;
	field("inputs:", "%s, seed %s: %s%s%s", ctl_jstr(in, "init") ?: "-",
	      int_text(in, "seed", seed, sizeof(seed)),
	      json_is_true(json_object_get(in, "cached")) ? "kept from an "
							    "earlier job" :
							    "generated",
	      json_is_boolean(ref) ?
		      (json_is_true(ref) ? ", reference kept" :
					   ", reference computed") :
		      "",
	      json_is_false(json_object_get(in, "intact")) ?
		      " (KEPT INPUTS CHANGED: dropped)" :
		      "");
}

/* cuBLASLt's kernel, as its configuration describes it. */
static void print_baseline_algo(const json_t *b)
{
	const json_t *a = json_object_get(b, "algo");
	char id[32], split[32];

	if (!json_is_object(a))
		return;
	field("", "algo %s: tile %s, stages %s, cluster %s, split-K %s",
	      int_text(b, "algo_id", id, sizeof(id)),
	      ctl_jstr(a, "tile") ?: "-", ctl_jstr(a, "stages") ?: "-",
	      ctl_jstr(a, "cluster") ?: "-",
	      int_text(a, "split_k", split, sizeof(split)));
}

/* The baseline's time next to ours, and how they were taken. */
static void print_baseline(const json_t *result)
{
	const json_t *b = json_object_get(result, "baseline");
	const json_t *t = json_object_get(b, "timing");
	double median, tflops = 0, speedup = 0;

	if (!json_is_object(b) || !jnum(t, "median_us", &median))
		return;
	jnum(b, "tflops", &tflops);
	jnum(result, "speedup_vs_baseline", &speedup);
	field("baseline:", "%s (%s, %s) %.1f us, %.1f TFLOP/s: ours %.3fx",
	      ctl_jstr(b, "library") ?: "-", ctl_jstr(b, "mode") ?: "-",
	      ctl_jstr(b, "order") ?: "separate", median, tflops, speedup);
	print_baseline_algo(b);
}

static void print_result(const json_t *job)
{
	const json_t *result = json_object_get(job, "result");
	const char *state = ctl_jstr(job, "state") ?: "";
	const json_t *spec = json_object_get(job, "spec");

	if (json_is_object(result)) {
		print_timing(result);
		print_launch(result);
		print_baseline(result);
	} else if (!strcmp(state, "queued") || !strcmp(state, "running")) {
		field("result:", "pending");
		return;
	} else if (json_is_true(json_object_get(spec, "dry_run"))) {
		field("result:", "none (dry run)");
	} else {
		field("result:", "none");
	}
	print_verify(job);
	print_inputs(job);
}

void ctl_print_job(const json_t *job)
{
	static const char *const times[][2] = {
		{ "created_at", "created:" },
		{ "started_at", "started:" },
		{ "finished_at", "finished:" },
	};
	const char *label;
	size_t i;

	field("id:", "%s", ctl_jstr(job, "id") ?: "-");
	label = ctl_jstr(json_object_get(job, "spec"), "label");
	if (label && *label)
		field("label:", "%s", label);
	print_state(job);
	print_problem(json_object_get(job, "spec"));
	print_plan(json_object_get(job, "plan"), json_object_get(job, "spec"));
	print_node(json_object_get(job, "node"));
	print_device(json_object_get(job, "device"));
	print_result(job);
	for (i = 0; i < ARRAY_SIZE(times); i++) {
		const char *t = ctl_jstr(job, times[i][0]);

		if (t)
			field(times[i][1], "%s", t);
	}
}

/* --- jobs, kernels, devices ----------------------------------------------- */

static void job_row(struct table *t, size_t row, const json_t *job)
{
	const json_t *spec = json_object_get(job, "spec");
	const json_t *plan = json_object_get(job, "plan");
	const json_t *result = json_object_get(job, "result");
	char buf[32];
	double tflops;

	table_set(t, row, 0, "%s", ctl_jstr(job, "id") ?: "-");
	table_set(t, row, 1, "%s", ctl_jstr(job, "state") ?: "-");
	table_set(t, row, 2, "%s", int_text(spec, "m", buf, sizeof(buf)));
	table_set(t, row, 3, "%s", int_text(spec, "n", buf, sizeof(buf)));
	table_set(t, row, 4, "%s", int_text(spec, "k", buf, sizeof(buf)));
	table_set(t, row, 5, "%s", ctl_jstr(spec, "dtype") ?: "-");
	table_set(t, row, 6, "%s", ctl_jstr(plan, "kernel") ?: "-");
	/* Before planning, show the stages asked for, if any. */
	if (json_is_object(plan))
		table_set(t, row, 7, "%s",
			  int_text(plan, "stages", buf, sizeof(buf)));
	else
		table_set(t, row, 7, "%s",
			  int_text(json_object_get(spec, "kernel"), "stages",
				   buf, sizeof(buf)));
	if (jnum(result, "tflops", &tflops))
		table_set(t, row, 8, "%.1f", tflops);
	else
		table_set(t, row, 8, "-");
	table_set(t, row, 9, "%s", ctl_job_verdict(job));
}

static int print_rows(struct table *t, const json_t *items, const char *none,
		      void (*fill)(struct table *, size_t, const json_t *))
{
	size_t i;
	int r;

	if (!json_array_size(items)) {
		printf("%s\n", none);
		return 0;
	}
	for (i = 0; i < json_array_size(items); i++) {
		r = table_add_row(t);
		if (r < 0)
			goto out;
		fill(t, r, json_array_get(items, i));
	}
	r = table_print(t);
out:
	table_done(t);
	return r;
}

int ctl_print_jobs(const json_t *jobs)
{
	static const char *const head[] = { "ID",     "STATE",	"M",
					    "N",      "K",	"DTYPE",
					    "KERNEL", "STAGES", "TFLOP/s",
					    "VERIFY" };
	struct table t = { .head = head,
			   .align = "llrrrllrrl",
			   .ncols = ARRAY_SIZE(head) };

	return print_rows(&t, jobs, "no jobs", job_row);
}

static void kernel_row(struct table *t, size_t row, const json_t *k)
{
	char buf[48];
	json_int_t lo, hi;

	table_set(t, row, 0, "%s", ctl_jstr(k, "name") ?: "-");
	table_set(t, row, 1, "%s", ctl_jstr(k, "dtype") ?: "-");
	table_set(t, row, 2, "%s",
		  names(json_object_get(k, "outs"), buf, sizeof(buf)));
	table_set(t, row, 3, "%s",
		  dims(json_object_get(k, "tile"), buf, sizeof(buf)));
	if (jint(k, "min_stages", &lo) && jint(k, "max_stages", &hi))
		table_set(t, row, 4,
			  "%" JSON_INTEGER_FORMAT "-%" JSON_INTEGER_FORMAT, lo,
			  hi);
	else
		table_set(t, row, 4, "-");
	/* the largest cluster the kernel takes, in CTAs */
	table_set(t, row, 5, "%s",
		  int_text(k, "cluster_max", buf, sizeof(buf)));
	table_set(t, row, 6, "%s", int_text(k, "threads", buf, sizeof(buf)));
	table_set(t, row, 7, "%s", int_text(k, "smem_stage", buf, sizeof(buf)));
	table_set(t, row, 8, "%s", ctl_jstr(k, "cubin") ?: "-");
}

int ctl_print_kernels(const json_t *kernels)
{
	static const char *const head[] = { "NAME",    "DTYPE",	     "OUT",
					    "TILE",    "STAGES",     "CLUSTER",
					    "THREADS", "SMEM/STAGE", "CUBIN" };
	struct table t = { .head = head,
			   .align = "llllrlrrl",
			   .ncols = ARRAY_SIZE(head) };

	return print_rows(&t, kernels, "no kernels", kernel_row);
}

static void worker_cell(struct table *t, size_t row, size_t col,
			const json_t *w)
{
	json_int_t pid = 0, restarts = 0;
	char buf[48] = "";

	if (!json_is_object(w)) {
		table_set(t, row, col, "-");
		return;
	}
	if (jint(w, "restarts", &restarts) && restarts)
		snprintf(buf, sizeof(buf),
			 ", %" JSON_INTEGER_FORMAT " restarts", restarts);
	if (jint(w, "pid", &pid) && pid > 0)
		table_set(t, row, col, "%s (pid %" JSON_INTEGER_FORMAT "%s)",
			  ctl_jstr(w, "state") ?: "-", pid, buf);
	else
		table_set(t, row, col, "%s%s", ctl_jstr(w, "state") ?: "-",
			  buf);
}

static void device_row(struct table *t, size_t row, const json_t *d)
{
	char buf[32];
	double mem, khz;

	table_set(t, row, 0, "%s", int_text(d, "index", buf, sizeof(buf)));
	table_set(t, row, 1, "%s", ctl_jstr(d, "name") ?: "-");
	table_set(t, row, 2, "%s", ctl_jstr(d, "compute_capability") ?: "-");
	table_set(t, row, 3, "%s", int_text(d, "sm_count", buf, sizeof(buf)));
	if (jnum(d, "memory_bytes", &mem))
		table_set(t, row, 4, "%.1f GiB", mem / (1024.0 * 1024 * 1024));
	else
		table_set(t, row, 4, "-");
	if (jnum(d, "sm_clock_khz", &khz))
		table_set(t, row, 5, "%.0f MHz", khz / 1000);
	else
		table_set(t, row, 5, "-");
	if (jnum(d, "mem_clock_khz", &khz))
		table_set(t, row, 6, "%.0f MHz", khz / 1000);
	else
		table_set(t, row, 6, "-");
	table_set(t, row, 7, "%s", ctl_jstr(d, "nvidia_driver") ?: "-");
	table_set(t, row, 8, "%s", ctl_jstr(d, "driver_version") ?: "-");
	worker_cell(t, row, 9, json_object_get(d, "worker"));
}

int ctl_print_devices(const json_t *devices)
{
	static const char *const head[] = { "INDEX",	 "NAME",   "CC",
					    "SMS",	 "MEMORY", "SM_CLOCK",
					    "MEM_CLOCK", "DRIVER", "CUDA",
					    "WORKER" };
	struct table t = { .head = head,
			   .align = "rllrrrrlll",
			   .ncols = ARRAY_SIZE(head) };

	size_t i;
	int r;

	r = print_rows(&t, devices, "no devices", device_row);
	if (r < 0)
		return r;
	/* Too long for a cell: why a worker is down, one line per GPU. */
	for (i = 0; i < json_array_size(devices); i++) {
		const json_t *d = json_array_get(devices, i);
		const char *err =
			ctl_jstr(json_object_get(d, "worker"), "last_error");
		char buf[32];

		if (!err)
			continue;
		ctl_print_text(stdout, "GPU %s: %s",
			       int_text(d, "index", buf, sizeof(buf)), err);
		putchar('\n');
	}
	return 0;
}

/* --- tune ---------------------------------------------------------------- */

/*
 * The knobs of a tune entry in five cells from col on: schedule, tile,
 * stages, cluster and epilogue.  The stages are the plan's where there is
 * one, since a candidate may leave them to the planner.
 */
static void knob_cells(struct table *t, size_t row, size_t col, const json_t *e)
{
	const json_t *kernel = json_object_get(e, "kernel");
	const json_t *plan = json_object_get(e, "plan");
	char buf[48];

	table_set(t, row, col, "%s", ctl_jstr(kernel, "schedule") ?: "-");
	table_set(t, row, col + 1, "%s", ctl_jstr(kernel, "tile") ?: "-");
	table_set(t, row, col + 2, "%s",
		  json_is_object(plan) ?
			  int_text(plan, "stages", buf, sizeof(buf)) :
			  int_text(kernel, "stages", buf, sizeof(buf)));
	table_set(t, row, col + 3, "%s",
		  dims(json_object_get(kernel, "cluster"), buf, sizeof(buf)));
	table_set(t, row, col + 4, "%s", ctl_jstr(kernel, "epilogue") ?: "-");
}

static void plan_row(struct table *t, size_t row, const json_t *e)
{
	char buf[48];

	table_set(t, row, 0, "%zu", row + 1);
	knob_cells(t, row, 1, e);
	table_set(t, row, 6, "%s",
		  dims(json_object_get(json_object_get(e, "plan"), "grid"), buf,
		       sizeof(buf)));
}

int ctl_print_tune_plans(const json_t *entries)
{
	static const char *const head[] = { "#",      "SCHEDULE", "TILE",
					    "STAGES", "CLUSTER",  "EPILOGUE",
					    "GRID" };
	struct table t = { .head = head,
			   .align = "rllrlll",
			   .ncols = ARRAY_SIZE(head) };

	return print_rows(&t, entries, "no valid candidates", plan_row);
}

/* A number member with prec decimals and a unit, "-" when absent. */
static void num_cell(struct table *t, size_t row, size_t col, const json_t *obj,
		     const char *key, int prec, const char *unit)
{
	double v;

	if (jnum(obj, key, &v))
		table_set(t, row, col, "%.*f%s", prec, v, unit);
	else
		table_set(t, row, col, "-");
}

/*
 * result.launch's waves, and in brackets the clusters launched of those
 * that fit at once: "4 (64/66)"; "-" without a launch.
 */
static void waves_cell(struct table *t, size_t row, size_t col,
		       const json_t *launch)
{
	char clusters[32], fit[32];
	double waves;

	if (!jnum(launch, "waves", &waves)) {
		table_set(t, row, col, "-");
		return;
	}
	table_set(t, row, col, "%g (%s/%s)", waves,
		  int_text(launch, "clusters", clusters, sizeof(clusters)),
		  int_text(launch, "clusters_resident", fit, sizeof(fit)));
}

static void rank_row(struct table *t, size_t row, const json_t *e)
{
	char buf[32];

	table_set(t, row, 0, "%s", int_text(e, "rank", buf, sizeof(buf)));
	num_cell(t, row, 1, e, "tflops", 1, "");
	num_cell(t, row, 2, e, "median_us", 1, "");
	knob_cells(t, row, 3, e);
	waves_cell(t, row, 8, json_object_get(e, "launch"));
	table_set(t, row, 9, "%s", ctl_jstr(e, "verify") ?: "-");
	/* only in the table when the base job has a baseline */
	if (t->ncols > 10)
		num_cell(t, row, 10, e, "speedup_vs_baseline", 3, "x");
}

int ctl_print_tune_ranking(const json_t *entries, bool speedup)
{
	static const char *const head[] = {
		"RANK",	 "TFLOP/s", "MEDIAN_US", "SCHEDULE",
		"TILE",	 "STAGES",  "CLUSTER",	 "EPILOGUE",
		"WAVES", "VERIFY",  "SPEEDUP",
	};
	struct table t = { .head = head,
			   .align = "rrrllrlllll",
			   .ncols = ARRAY_SIZE(head) - !speedup };

	return print_rows(&t, entries, "no candidate ran", rank_row);
}

static void failed_row(struct table *t, size_t row, const json_t *e)
{
	knob_cells(t, row, 0, e);
	table_set(t, row, 5, "%s", ctl_jstr(e, "state") ?: "-");
	table_set(t, row, 6, "%s", ctl_jstr(e, "reason") ?: "-");
}

int ctl_print_tune_failed(const json_t *entries)
{
	static const char *const head[] = { "SCHEDULE", "TILE",	    "STAGES",
					    "CLUSTER",	"EPILOGUE", "STATE",
					    "REASON" };
	struct table t = { .head = head,
			   .align = "llrllll",
			   .ncols = ARRAY_SIZE(head) };

	return print_rows(&t, entries, "", failed_row);
}

/* One line each, whole: the planner's reasons are too long for a cell. */
void ctl_print_tune_refused(const json_t *entries)
{
	const json_t *e, *kernel;
	char cluster[48], stages[32];
	char *why;
	size_t i;

	json_array_foreach(entries, i, e) {
		kernel = json_object_get(e, "kernel");
		why = ctl_error_text(json_object_get(e, "error"));
		ctl_print_text(stdout,
			       "refused: %s %s, stages %s, cluster %s, %s "
			       "epilogue: %s",
			       ctl_jstr(kernel, "schedule") ?: "-",
			       ctl_jstr(kernel, "tile") ?: "-",
			       int_text(kernel, "stages", stages,
					sizeof(stages)),
			       dims(json_object_get(kernel, "cluster"), cluster,
				    sizeof(cluster)),
			       ctl_jstr(kernel, "epilogue") ?: "-", why ?: "-");
		putchar('\n');
		free(why);
	}
}

/* A scalar or an array of scalars compactly, an array of objects as a count. */
static void print_value(const char *label, json_t *value)
{
	json_t *first = json_array_get(value, 0);
	char *dump;

	if (json_is_string(value)) {
		ctl_print_text(stdout, "%s: %s", label,
			       json_string_value(value));
	} else if (json_is_object(first) || json_is_array(first)) {
		ctl_print_text(stdout, "%s: %zu", label,
			       json_array_size(value));
	} else {
		dump = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY |
						 JSON_REAL_PRECISION(10));
		ctl_print_text(stdout, "%s: %s", label, dump ?: "?");
		free(dump);
	}
	putchar('\n');
}

static void print_flat(json_t *obj, const char *prefix)
{
	char label[128];
	const char *key;
	json_t *value;

	json_object_foreach(obj, key, value) {
		snprintf(label, sizeof(label), "%s%s%s", prefix,
			 *prefix ? "." : "", key);
		if (json_is_object(value))
			print_flat(value, label);
		else
			print_value(label, value);
	}
}

/* Nested objects flatten to "outer.inner: value" lines. */
void ctl_print_object(json_t *obj)
{
	print_flat(obj, "");
}

/* --- documents of our own ------------------------------------------------- */

/*
 * -ENOMEM where there is no document, -EIO where stdout took it not:
 * gemmctl's exit reports that write error itself ("write error"), so it
 * is not to be told as out of memory.
 */
int ctl_print_doc(const json_t *doc)
{
	if (!doc)
		return -ENOMEM;
	if (json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) <
	    0)
		return -EIO;
	putchar('\n');
	return 0;
}

/* --- merge --------------------------------------------------------------- */

static void merge_row(struct table *t, size_t row, const json_t *e)
{
	const json_t *tflops = json_object_get(e, "tflops");
	char buf[32];
	double v;

	table_set(t, row, 0, "%s", int_text(e, "rank", buf, sizeof(buf)));
	num_cell(t, row, 1, tflops, "median", 1, "");
	num_cell(t, row, 2, tflops, "min", 1, "");
	num_cell(t, row, 3, tflops, "max", 1, "");
	if (jnum(e, "spread", &v))
		table_set(t, row, 4, "%.1f %%", 100 * v);
	else
		table_set(t, row, 4, "-");
	knob_cells(t, row, 5, e);
}

int ctl_print_merge_ranking(const json_t *entries)
{
	static const char *const head[] = {
		"RANK",	    "TFLOP/s", "MIN",	 "MAX",	    "SPREAD",
		"SCHEDULE", "TILE",    "STAGES", "CLUSTER", "EPILOGUE",
	};
	struct table t = { .head = head,
			   .align = "rrrrrllrll",
			   .ncols = ARRAY_SIZE(head) };

	return print_rows(&t, entries, "no configuration passed in every sweep",
			  merge_row);
}

/* A row for each sweep where the configuration did not pass. */
static int unranked_rows(struct table *t, const json_t *e)
{
	const json_t *node;
	size_t i;
	int r;

	json_array_foreach(json_object_get(e, "nodes"), i, node) {
		if (!strcmp(ctl_jstr(node, "outcome") ?: "", "passed"))
			continue;
		r = table_add_row(t);
		if (r < 0)
			return r;
		knob_cells(t, r, 0, e);
		table_set(t, r, 5, "%s", ctl_jstr(node, "node") ?: "-");
		table_set(t, r, 6, "%s", ctl_jstr(node, "outcome") ?: "-");
		table_set(t, r, 7, "%s", ctl_jstr(node, "reason") ?: "-");
	}
	return 0;
}

int ctl_print_merge_unranked(const json_t *entries)
{
	static const char *const head[] = { "SCHEDULE", "TILE",	    "STAGES",
					    "CLUSTER",	"EPILOGUE", "NODE",
					    "OUTCOME",	"WHY" };
	struct table t = { .head = head,
			   .align = "llrlllll",
			   .ncols = ARRAY_SIZE(head) };
	const json_t *e;
	size_t i;
	int r = 0;

	json_array_foreach(entries, i, e) {
		r = unranked_rows(&t, e);
		if (r < 0)
			goto out;
	}
	r = table_print(&t);
out:
	table_done(&t);
	return r;
}

/* --- gpus ---------------------------------------------------------------- */

static void gpu_row(struct table *t, size_t row, const json_t *e)
{
	const json_t *clock = json_object_get(e, "sm_clock_mhz");
	double v;
	char buf[32];

	table_set(t, row, 0, "%s", int_text(e, "index", buf, sizeof(buf)));
	table_set(t, row, 1, "%s", ctl_jstr(e, "name") ?: "-");
	if (jnum(e, "tflops", &v))
		table_set(t, row, 2, "%.1f", v);
	else
		table_set(t, row, 2, "-");
	/*
	 * Down to a tenth, as the verdict's shortfall goes up: a slow GPU
	 * at 94.96 % of the best would read 95.0 %, not under the line.
	 * (The 1e-9: 0.95 is a hair under it in binary.)
	 */
	if (jnum(e, "of_best", &v))
		table_set(t, row, 3, "%.1f %%", floor(1000 * v + 1e-9) / 10);
	else
		table_set(t, row, 3, "-");
	if (jnum(clock, "median", &v))
		table_set(t, row, 4, "%.0f", v);
	else
		table_set(t, row, 4, "-");
	if (jnum(e, "power_limit_w", &v))
		table_set(t, row, 5, "%.0f", v);
	else
		table_set(t, row, 5, "-");
	table_set(t, row, 6, "%s", ctl_jstr(e, "verify") ?: "-");
	table_set(t, row, 7, "%s", ctl_jstr(e, "verdict") ?: "-");
	table_set(t, row, 8, "%s", ctl_jstr(e, "why") ?: "");
}

int ctl_print_gpus(const json_t *rows, double tolerance)
{
	static const char *const head[] = { "GPU",     "NAME",	  "TFLOP/s",
					    "OF_BEST", "SM_MHZ",  "LIMIT_W",
					    "VERIFY",  "VERDICT", "WHY" };
	struct table t = { .head = head,
			   .align = "rlrrrrlll",
			   .ncols = ARRAY_SIZE(head) };
	double line = 100 * (1 - tolerance);
	int prec = 1;

	/*
	 * To a tenth where that is the line, as it is for whole percents;
	 * otherwise with the digits it has: --tolerance 0.04 read "under
	 * 100.0 %" where a GPU at 99.97 % of the best was ok.
	 */
	while (prec < 9 &&
	       fabs(round(line * pow(10, prec)) / pow(10, prec) - line) > 1e-9)
		prec++;
	printf("%zu GPU(s); slow: under %.*f %% of the best\n",
	       json_array_size(rows), prec, line);
	return print_rows(&t, rows, "no GPU", gpu_row);
}
