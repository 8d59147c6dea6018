// SPDX-License-Identifier: MIT
/*
 * gemmctl - command-line client for gemmd's HTTP API.
 *
 * Options, commands and exit codes; the transport is in ctl-http.c and the
 * output formats in ctl-print.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>

#include "ctl-gpus.h"
#include "ctl-merge.h"
#include "ctl-http.h"
#include "ctl-print.h"
#include "ctl-tune.h"
#include "util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

#define DEFAULT_URL "http://127.0.0.1:8090"
#define DEFAULT_TIMEOUT_S 30L
#define DEFAULT_WAIT_S 600L
#define DEFAULT_TUNE_WAIT_S 3600L
#define SECONDS_MAX 31536000UL /* a year: anything longer is a typo */
#define JOB_FILE_MAX (16u << 20)

struct ctl {
	struct ctl_http http;
	char *url; /* what http.url points to, once resolved */
	bool json;
	bool help;
	bool version;
};

struct command {
	const char *name;
	int (*run)(struct ctl *ctl, int argc, char **argv);
	bool local; /* asks no gemmd, so needs no URL (help, merge) */
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: gemmctl [OPTION]... COMMAND [ARG]...\n"
		"Submit GEMM benchmark jobs to gemmd and read their results.\n"
		"\n"
		"Commands:\n"
		"  submit FILE [--wait [SEC]] [--key KEY]\n"
		"                              submit the job in FILE ('-' for stdin); with\n"
		"                              --wait, wait up to SEC s (default 600, at\n"
		"                              most 3600) for it; --key sends KEY as its\n"
		"                              Idempotency-Key\n"
		"  status ID                   show a job\n"
		"  list [--state STATE]        list jobs, optionally in one state\n"
		"  cancel ID                   cancel a job\n"
		"  kernels                     list the kernels gemmd can run\n"
		"  devices                     list the GPUs and their workers\n"
		"  health                      check that gemmd is up\n"
		"  tune FILE [OPTION]...       try each kernel configuration the catalog\n"
		"                              offers for the job in FILE and rank them\n"
		"  gpus FILE [--tolerance PCT] [--wait SEC]\n"
		"                              run the job in FILE on every GPU at once;\n"
		"                              fail a GPU under (100 - PCT) %% of the\n"
		"                              best (default 5) or not verified\n"
		"  merge FILE... [--top N]     rank together the sweeps of one job on\n"
		"                              several nodes (tune --json output):\n"
		"                              by the median rate, those that passed\n"
		"                              in every sweep\n"
		"  help                        show this help\n"
		"\n"
		"Options of tune:\n"
		"  --dry-run             only check the candidates with dry runs (no GPU\n"
		"                        needed) and list the valid ones\n"
		"  --schedule S[,S]...   only kernels of these schedules\n"
		"  --stages all|default  each stage count a kernel takes, or the planner's\n"
		"                        choice (default)\n"
		"  --clusters all|1x1    each cluster shape a kernel takes (default), or 1x1\n"
		"  --max-inflight N      jobs queued or running at once (default: one a GPU)\n"
		"  --wait SEC            give up on the sweep after SEC s (default 3600,\n"
		"                        0: never)\n"
		"  --top N               rank only the N fastest\n"
		"  -v, --verbose         list the candidates gemmd refused, and why\n"
		"\n"
		"Options (anywhere on the line; each that takes a value also as\n"
		"--name=VALUE):\n"
		"  --url URL      gemmd's address (default: $GEMMD_URL, else %s)\n"
		"  --json         print gemmd's JSON reply, indented\n"
		"  --timeout SEC  give up on a request after SEC s (default 30, 0: never);\n"
		"                 submit --wait adds its wait to this\n"
		"  -h, --help     show this help\n"
		"  -V, --version  show the version\n"
		"\n"
		"Exit status: 0 success; 1 gemmd reported an error; 2 usage error;\n"
		"3 gemmd cannot be reached; 4 submit --wait: the job did not end\n"
		"done with verification passed or not checked.  tune: 1 also when no\n"
		"candidate passed (with --dry-run: none was valid); 130, 143, 129\n"
		"interrupted by SIGINT, SIGTERM, SIGHUP.\n"
		"gpus: 1 also when a GPU is slow or failed.  merge: 1 also when no\n"
		"configuration passed in every sweep.\n",
		DEFAULT_URL);
}

static _printf_(1, 2) int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("gemmctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'gemmctl --help' for more information.\n", stderr);
	return -EINVAL;
}

static int oom(void)
{
	fputs("gemmctl: out of memory\n", stderr);
	return CTL_EXIT_ERROR;
}

/* --- arguments ------------------------------------------------------------ */

static int parse_seconds(const char *s, long *ret)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > SECONDS_MAX)
		return -EINVAL;
	*ret = (long)v;
	return 0;
}

/*
 * Matches argv[*i] against an option that takes a value, given as
 * "--name VALUE" or "--name=VALUE".  Returns 1 with *ret set on a match,
 * 0 for any other argument, -EINVAL when the value is missing.  cmd is
 * the command whose option it is, NULL for a global one.
 */
static int match_value(const char *cmd, const char *name, int argc, char **argv,
		       int *i, const char **ret)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=') {
		*ret = a + n + 1;
		return 1;
	}
	if (a[n])
		return 0;
	if (*i + 1 >= argc)
		return cmd ? usage_error("%s: option '%s' needs a value", cmd,
					 name) :
			     usage_error("option '%s' needs a value", name);
	*ret = argv[++*i];
	return 1;
}

static int match_global(struct ctl *ctl, int argc, char **argv, int *i)
{
	const char *a = argv[*i], *val;
	int r;

	if (!strcmp(a, "--json")) {
		ctl->json = true;
		return 1;
	}
	if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
		ctl->help = true;
		return 1;
	}
	if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
		ctl->version = true;
		return 1;
	}
	r = match_value(NULL, "--url", argc, argv, i, &val);
	if (r > 0)
		ctl->http.url = val;
	if (r)
		return r;
	r = match_value(NULL, "--timeout", argc, argv, i, &val);
	if (r > 0 && parse_seconds(val, &ctl->http.timeout_s) < 0)
		return usage_error("invalid --timeout '%s': want whole seconds",
				   val);
	return r;
}

/*
 * Takes the global options out of argv wherever they stand, so that
 * "gemmctl status ID --json" works, and leaves the command and its
 * arguments in argv[0..*argc).  After "--" nothing is an option: the "--"
 * is passed on for the command's own parser to see, after the command
 * when it came before it ("gemmctl -- status ID").
 */
static int parse_globals(struct ctl *ctl, int *argc, char **argv)
{
	int i, n = 0, r;
	char *dashes;

	for (i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--")) {
			dashes = argv[i++];
			if (!n && i < *argc)
				argv[n++] = argv[i++];
			if (n)
				argv[n++] = dashes;
			while (i < *argc)
				argv[n++] = argv[i++];
			break;
		}
		r = match_global(ctl, *argc, argv, &i);
		if (r < 0)
			return r;
		if (!r)
			argv[n++] = argv[i];
	}
	*argc = n;
	return 0;
}

/* Takes exactly n operands (what names them), for commands without options. */
static int operands(const char *cmd, const char *what, int argc, char **argv,
		    int n, const char **ret)
{
	bool opts = true;
	int i, got = 0;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (opts && !strcmp(a, "--")) {
			opts = false;
			continue;
		}
		if (opts && a[0] == '-' && a[1])
			return usage_error("%s: unknown option '%s'", cmd, a);
		if (got == n)
			return usage_error("%s: unexpected argument '%s'", cmd,
					   a);
		ret[got++] = a;
	}
	if (got < n)
		return usage_error("%s: missing %s", cmd, what);
	return 0;
}

/* --- requests ------------------------------------------------------------- */

/* ctl_call() with the global options. */
static int call(struct ctl *ctl, const char *method, const char *path,
		const char *body, size_t len, long extra_s,
		const struct ctl_shape *want, json_t **ret_root)
{
	return ctl_call(&ctl->http, ctl->json, method, path, body, len, extra_s,
			want, ret_root);
}

/* prefix followed by value, percent-encoded: IDs never reach the URL raw. */
static char *escaped_path(const char *prefix, const char *value)
{
	char *esc = ctl_http_escape(value);
	char *path = NULL;
	size_t n;

	if (!esc)
		return NULL;
	n = strlen(prefix) + strlen(esc) + 1;
	path = malloc(n);
	if (path)
		snprintf(path, n, "%s%s", prefix, esc);
	free(esc);
	return path;
}

static int show(int r)
{
	return r < 0 ? oom() : CTL_EXIT_OK;
}

/* --- submit --------------------------------------------------------------- */

static int set_key(const char *v, const char **ret_key)
{
	if (!idempotency_key_ok(v, strlen(v)))
		return usage_error("submit: invalid --key '%s': 1..255 visible "
				   "ASCII characters, without '\"' or '\\'",
				   v);
	*ret_key = v;
	return 0;
}

/* A word meant as a number: digits, with a sign or not. */
static bool looks_numeric(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	return *s >= '0' && *s <= '9';
}

static int parse_submit(int argc, char **argv, const char **ret_file,
			long *ret_wait, const char **ret_key)
{
	bool opts = true;
	int i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (opts && !strcmp(a, "--")) {
			opts = false;
		} else if (opts && !strcmp(a, "--key")) {
			if (i + 1 == argc)
				return usage_error("submit: --key needs a key");
			if (set_key(argv[++i], ret_key) < 0)
				return -EINVAL;
		} else if (opts && !strncmp(a, "--key=", 6)) {
			if (set_key(a + 6, ret_key) < 0)
				return -EINVAL;
		} else if (opts && !strcmp(a, "--wait")) {
			/*
			 * The number is optional: the next word is it if it
			 * looks like one, and then it must be a good one.
			 */
			*ret_wait = DEFAULT_WAIT_S;
			if (i + 1 < argc && looks_numeric(argv[i + 1]) &&
			    parse_seconds(argv[++i], ret_wait) < 0)
				return usage_error(
					"submit: invalid --wait '%s'", argv[i]);
		} else if (opts && !strncmp(a, "--wait=", 7)) {
			if (parse_seconds(a + 7, ret_wait) < 0)
				return usage_error(
					"submit: invalid --wait '%s'", a + 7);
		} else if (opts && a[0] == '-' && a[1]) {
			return usage_error("submit: unknown option '%s'", a);
		} else if (*ret_file) {
			return usage_error("submit: unexpected argument '%s'",
					   a);
		} else {
			*ret_file = a;
		}
	}
	if (!*ret_file)
		return usage_error("submit: missing job file ('-' for stdin)");
	return 0;
}

static int read_stream(FILE *f, char **ret, size_t *ret_len)
{
	size_t len = 0, alloc = 0, n;
	char *buf = NULL, *p;
	int r;

	for (;;) {
		if (len == alloc) {
			r = -EFBIG;
			if (alloc > JOB_FILE_MAX)
				goto fail;
			/* a byte past the limit: a file of 16 MiB fits */
			alloc = MIN(alloc ? alloc * 2 : 8192,
				    (size_t)JOB_FILE_MAX + 1);
			r = -ENOMEM;
			p = realloc(buf, alloc + 1);
			if (!p)
				goto fail;
			buf = p;
		}
		errno = 0;
		n = fread(buf + len, 1, alloc - len, f);
		if (!n)
			break;
		len += n;
	}
	if (ferror(f)) {
		/* read(2)'s errno says why: EISDIR for a directory, say */
		r = errno > 0 ? -errno : -EIO;
		goto fail;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
fail:
	free(buf);
	return r;
}

/*
 * Whether a parse error is better left to gemmd: the text is JSON, but
 * has a number too large for jansson or a NUL in a key, which gemmd
 * answers with a code of its own (numeric_overflow, null_byte) rather
 * than a typo's line and column.
 */
static bool left_to_gemmd(const json_error_t *err)
{
	enum json_error_code c = json_error_code(err);

	return c == json_error_numeric_overflow ||
	       c == json_error_null_byte_in_key;
}

/*
 * Reads the job file and checks that it is JSON, so that a typo is
 * reported with its line and column; gemmd gets the bytes unchanged.
 * The check is JSON's grammar only: whatever else gemmd refuses (a
 * scalar at the top, a NUL in a string, a number out of range) it
 * refuses with a code and message of its own.
 */
static int read_job(const char *file, const char *what, char **ret,
		    size_t *ret_len)
{
	bool is_stdin = !strcmp(file, "-");
	const char *name = is_stdin ? "<stdin>" : file;
	FILE *f = is_stdin ? stdin : fopen(file, "re");
	json_error_t err;
	json_t *root;
	size_t len;
	char *buf;
	int r;

	if (!f) {
		r = -errno;
		fprintf(stderr, "gemmctl: %s: %s\n", name, strerror(-r));
		return r;
	}
	r = read_stream(f, &buf, &len);
	if (!is_stdin)
		fclose(f);
	if (r == -EFBIG)
		fprintf(stderr,
			"gemmctl: %s: %s file too large (over %u MiB)\n", name,
			what, JOB_FILE_MAX >> 20);
	else if (r < 0)
		fprintf(stderr, "gemmctl: %s: %s\n", name, strerror(-r));
	if (r < 0)
		return r;
	/* jansson calls it "unexpected token near end of file" at 1:0 */
	if (strspn(buf, " \t\r\n") == len) {
		fprintf(stderr, "gemmctl: %s: the %s file is empty\n", name,
			what);
		free(buf);
		return -EINVAL;
	}
	root = json_loadb(buf, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (!root && !left_to_gemmd(&err)) {
		ctl_print_text(stderr, "gemmctl: %s:%d:%d: %s", name, err.line,
			       err.column, err.text);
		fputc('\n', stderr);
		free(buf);
		return -EINVAL;
	}
	json_decref(root);
	*ret = buf;
	*ret_len = len;
	return 0;
}

static int cmd_submit(struct ctl *ctl, int argc, char **argv)
{
	const char *file = NULL, *key = NULL;
	long wait_s = -1;
	json_t *job = NULL;
	char path[64];
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (parse_submit(argc, argv, &file, &wait_s, &key) < 0)
		return CTL_EXIT_USAGE;
	ctl->http.idempotency_key = key;
	if (read_job(file, "job", &buf, &len) < 0)
		return CTL_EXIT_ERROR;
	if (wait_s >= 0)
		snprintf(path, sizeof(path), "/v1/jobs?wait=%ld", wait_s);
	else
		snprintf(path, sizeof(path), "/v1/jobs");

	r = call(ctl, "POST", path, buf, len, MAX(wait_s, 0L), &ctl_job_shape,
		 &job);
	if (r == CTL_EXIT_OK && !ctl->json)
		ctl_print_job(job);
	if (r == CTL_EXIT_OK && wait_s >= 0 && !ctl_job_succeeded(job))
		r = CTL_EXIT_JOB_FAILED;
	json_decref(job);
	free(buf);
	return r;
}

/* --- tune ----------------------------------------------------------------- */

static int parse_count(const char *cmd, const char *opt, const char *s,
		       long *ret)
{
	if (parse_seconds(s, ret) < 0 || *ret < 1)
		return usage_error("%s: invalid %s '%s': want a whole number "
				   "from 1 to %lu",
				   cmd, opt, s, SECONDS_MAX);
	return 0;
}

/* "--name WORD" where WORD is one of two; *ret: whether it is the second. */
static int parse_choice(const char *opt, const char *s, const char *no,
			const char *yes, bool *ret)
{
	if (strcmp(s, no) && strcmp(s, yes))
		return usage_error("tune: invalid %s '%s': want %s or %s", opt,
				   s, no, yes);
	*ret = !strcmp(s, yes);
	return 0;
}

static int set_top(const char *v, struct ctl_tune_opts *o)
{
	return parse_count("tune", "--top", v, &o->top);
}

static int set_max_inflight(const char *v, struct ctl_tune_opts *o)
{
	return parse_count("tune", "--max-inflight", v, &o->max_inflight);
}

static int set_wait(const char *v, struct ctl_tune_opts *o)
{
	if (parse_seconds(v, &o->wait_s) < 0)
		return usage_error("tune: invalid --wait '%s'", v);
	return 0;
}

static int set_stages(const char *v, struct ctl_tune_opts *o)
{
	return parse_choice("--stages", v, "default", "all", &o->all_stages);
}

static int set_clusters(const char *v, struct ctl_tune_opts *o)
{
	return parse_choice("--clusters", v, "all", "1x1", &o->cluster_1x1);
}

static int set_schedule(const char *v, struct ctl_tune_opts *o)
{
	if (!*v)
		return usage_error("tune: empty --schedule");
	o->schedules = v;
	return 0;
}

/* As match_value(): 1 for an option of tune's, 0 for another word. */
static int match_tune(int argc, char **argv, int *i, struct ctl_tune_opts *o)
{
	static const struct {
		const char *name;
		int (*set)(const char *v, struct ctl_tune_opts *o);
	} values[] = {
		{ "--top", set_top },
		{ "--max-inflight", set_max_inflight },
		{ "--wait", set_wait },
		{ "--stages", set_stages },
		{ "--clusters", set_clusters },
		{ "--schedule", set_schedule },
	};
	const char *a = argv[*i], *v;
	size_t k;
	int r;

	if (!strcmp(a, "--dry-run")) {
		o->dry_run = true;
		return 1;
	}
	if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
		o->verbose = true;
		return 1;
	}
	for (k = 0; k < ARRAY_SIZE(values); k++) {
		r = match_value("tune", values[k].name, argc, argv, i, &v);
		if (r > 0)
			r = values[k].set(v, o) ?: 1;
		if (r)
			return r;
	}
	return 0;
}

/*
 * The words of a command that takes one job file and options: match
 * takes an option at argv[*i] (1), leaves a word that is not one (0) or
 * refuses it (< 0, reported).
 */
static int parse_file_and(const char *cmd, int argc, char **argv,
			  const char **ret_file,
			  int (*match)(int argc, char **argv, int *i, void *o),
			  void *o)
{
	bool opts = true;
	int i, r;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (opts && !strcmp(a, "--")) {
			opts = false;
			continue;
		}
		r = opts ? match(argc, argv, &i, o) : 0;
		if (r < 0)
			return r;
		if (r)
			continue;
		if (opts && a[0] == '-' && a[1])
			return usage_error("%s: unknown option '%s'", cmd, a);
		if (*ret_file)
			return usage_error("%s: unexpected argument '%s'", cmd,
					   a);
		*ret_file = a;
	}
	if (!*ret_file)
		return usage_error("%s: missing job file ('-' for stdin)", cmd);
	return 0;
}

static int match_tune_any(int argc, char **argv, int *i, void *o)
{
	return match_tune(argc, argv, i, o);
}

/*
 * The JSON object in file: the job, for the commands that make jobs of
 * it (tune, gpus), or a sweep (merge).  A key twice is refused, as gemmd
 * refuses it (duplicate_key): the jobs sent are made from what is read
 * here, where the last would win.  A \u0000 is read, and sent on for
 * gemmd to refuse with its own null_byte, as submit's would be; a number
 * past 64 bits cannot be read at all.
 */
static int read_object(const char *file, const char *what, json_t **ret)
{
	const char *name = strcmp(file, "-") ? file : "<stdin>";
	json_error_t err;
	char *buf = NULL;
	size_t len = 0;

	if (read_job(file, what, &buf, &len) < 0)
		return CTL_EXIT_ERROR;
	*ret = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			  &err);
	free(buf);
	if (!*ret) {
		ctl_print_text(stderr, "gemmctl: %s:%d:%d: %s", name, err.line,
			       err.column, err.text);
		fputc('\n', stderr);
		return CTL_EXIT_ERROR;
	}
	if (!json_is_object(*ret)) {
		fprintf(stderr, "gemmctl: %s: the %s is not an object\n", name,
			what);
		json_decref(*ret);
		*ret = NULL;
		return CTL_EXIT_ERROR;
	}
	return CTL_EXIT_OK;
}

static int cmd_tune(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_tune_opts o = { .wait_s = DEFAULT_TUNE_WAIT_S,
				   .json = ctl->json };
	const char *file = NULL;
	json_t *base = NULL;
	int r;

	if (parse_file_and("tune", argc, argv, &file, match_tune_any, &o) < 0)
		return CTL_EXIT_USAGE;
	r = read_object(file, "job", &base);
	if (r == CTL_EXIT_OK)
		r = ctl_tune(&ctl->http, &o, base);
	json_decref(base);
	return r;
}

/* --- gpus ----------------------------------------------------------------- */

#define DEFAULT_GPUS_TOLERANCE 0.05

/*
 * "5" or "5%": a percentage of the best, 0 up to (not) 100.  A decimal
 * number only: strtod() would also take leading blanks and hexadecimal,
 * so that "0x10" passed for 16 %.
 */
static int parse_tolerance(const char *s, double *ret)
{
	bool decimal = (*s >= '0' && *s <= '9') || *s == '.';
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end != s && *end == '%')
		end++;
	if (!decimal || strpbrk(s, "xX") || errno || end == s || *end ||
	    !(v >= 0 && v < 100))
		return usage_error("gpus: invalid --tolerance '%s': want a "
				   "percentage, at least 0 and below 100",
				   s);
	*ret = v / 100;
	return 0;
}

static int match_gpus(int argc, char **argv, int *i, void *opts)
{
	struct ctl_gpus_opts *o = opts;
	const char *v;
	int r;

	r = match_value("gpus", "--tolerance", argc, argv, i, &v);
	if (r > 0)
		return parse_tolerance(v, &o->tolerance) ?: 1;
	if (r)
		return r;
	r = match_value("gpus", "--wait", argc, argv, i, &v);
	if (r > 0 && parse_seconds(v, &o->wait_s) < 0)
		return usage_error("gpus: invalid --wait '%s'", v);
	return r;
}

static int cmd_gpus(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_gpus_opts o = { .tolerance = DEFAULT_GPUS_TOLERANCE,
				   .wait_s = DEFAULT_WAIT_S,
				   .json = ctl->json };
	const char *file = NULL;
	json_t *base = NULL;
	int r;

	if (parse_file_and("gpus", argc, argv, &file, match_gpus, &o) < 0)
		return CTL_EXIT_USAGE;
	r = read_object(file, "job", &base);
	if (r == CTL_EXIT_OK &&
	    json_is_true(json_object_get(base, "dry_run"))) {
		fprintf(stderr, "gemmctl: gpus: a dry run runs on no GPU: "
				"nothing to compare\n");
		r = CTL_EXIT_ERROR;
	}
	if (r == CTL_EXIT_OK)
		r = ctl_gpus(&ctl->http, &o, base);
	json_decref(base);
	return r;
}

/* --- merge ---------------------------------------------------------------- */

static int parse_merge(int argc, char **argv, const char ***ret_files,
		       size_t *ret_n, struct ctl_merge_opts *o)
{
	const char **files = calloc(argc ? argc : 1, sizeof(*files));
	bool opts = true, is_stdin = false;
	const char *v;
	size_t n = 0;
	int i, r;

	if (!files) {
		oom();
		return -ENOMEM;
	}
	for (i = 0; i < argc; i++) {
		if (opts && !strcmp(argv[i], "--")) {
			opts = false;
			continue;
		}
		r = opts ? match_value("merge", "--top", argc, argv, &i, &v) :
			   0;
		if (r > 0)
			r = parse_count("merge", "--top", v, &o->top) ?: 1;
		if (r < 0)
			goto fail;
		if (r)
			continue;
		if (opts && argv[i][0] == '-' && argv[i][1]) {
			r = usage_error("merge: unknown option '%s'", argv[i]);
			goto fail;
		}
		if (!strcmp(argv[i], "-") && is_stdin) {
			r = usage_error("merge: '-' (stdin) given twice");
			goto fail;
		}
		is_stdin |= !strcmp(argv[i], "-");
		files[n++] = argv[i];
	}
	if (!n) {
		r = usage_error("merge: missing sweep file (tune --json "
				"output; '-' for stdin)");
		goto fail;
	}
	*ret_files = files;
	*ret_n = n;
	return 0;
fail:
	free(files);
	return r;
}

static int cmd_merge(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_merge_opts o = { .json = ctl->json };
	struct ctl_sweep *sweeps = NULL;
	const char **files = NULL;
	size_t i, n = 0;
	int r;

	r = parse_merge(argc, argv, &files, &n, &o);
	if (r == -ENOMEM)
		return CTL_EXIT_ERROR;
	if (r < 0)
		return CTL_EXIT_USAGE;
	sweeps = calloc(n, sizeof(*sweeps));
	if (!sweeps) {
		r = oom();
		goto out;
	}
	r = CTL_EXIT_OK;
	for (i = 0; i < n && r == CTL_EXIT_OK; i++) {
		sweeps[i].file = strcmp(files[i], "-") ? files[i] : "<stdin>";
		r = read_object(files[i], "sweep", &sweeps[i].doc);
	}
	if (r == CTL_EXIT_OK)
		r = ctl_merge(&o, sweeps, n);
	for (i = 0; sweeps && i < n; i++)
		json_decref(sweeps[i].doc);
out:
	free(sweeps);
	free(files);
	return r;
}

/* --- status, cancel, list ------------------------------------------------- */

static int job_call(struct ctl *ctl, const char *cmd, const char *method,
		    const struct ctl_shape *want, int argc, char **argv)
{
	const char *id;
	json_t *job = NULL;
	char *path;
	int r;

	if (operands(cmd, "job ID", argc, argv, 1, &id) < 0)
		return CTL_EXIT_USAGE;
	if (!*id) {
		usage_error("%s: empty job ID", cmd);
		return CTL_EXIT_USAGE;
	}
	path = escaped_path("/v1/jobs/", id);
	if (!path)
		return oom();
	r = call(ctl, method, path, NULL, 0, 0, want, &job);
	/* Only a cancel may be answered with an empty 202/204. */
	if (r == CTL_EXIT_OK && !ctl->json && !job)
		printf("%s: %s requested\n", id, cmd);
	else if (r == CTL_EXIT_OK && !ctl->json)
		ctl_print_job(job);
	json_decref(job);
	free(path);
	return r;
}

static int cmd_status(struct ctl *ctl, int argc, char **argv)
{
	return job_call(ctl, "status", "GET", &ctl_job_shape, argc, argv);
}

static int cmd_cancel(struct ctl *ctl, int argc, char **argv)
{
	static const struct ctl_shape cancelled = {
		.what = "a job",
		.key = "id",
		.type = JSON_STRING,
		.empty_ok = true,
	};

	return job_call(ctl, "cancel", "DELETE", &cancelled, argc, argv);
}

static int parse_list(int argc, char **argv, const char **ret_state)
{
	bool opts = true;
	int i, r;

	for (i = 0; i < argc; i++) {
		if (opts && !strcmp(argv[i], "--")) {
			opts = false;
			continue;
		}
		/* list takes no operands: after "--" any word is one too many */
		r = 0;
		if (opts)
			r = match_value("list", "--state", argc, argv, &i,
					ret_state);
		if (r < 0)
			return r;
		/* as the other commands say it: "--stat" is no operand */
		if (!r && opts && argv[i][0] == '-' && argv[i][1])
			return usage_error("list: unknown option '%s'",
					   argv[i]);
		if (!r)
			return usage_error("list: unexpected argument '%s'",
					   argv[i]);
	}
	return 0;
}

static const struct ctl_shape jobs_shape = { "a job list", "jobs", JSON_ARRAY };

/*
 * Every page of a listing, from path on, into all: gemmd answers at most
 * 1000 jobs a request and links the next page.  Takes path.
 */
/*
 * Every page, following "next" from path (taken).  A link to a page
 * already fetched would never end: gemmd's pages only go forward, so
 * such a reply is an error, not a loop.
 */
/*
 * Whether a page's "next" is a path of gemmd's, to be put after --url:
 * a URL of its own, or a character that is no URL's, would have made
 * libcurl refuse the joined URL, reported as a bad --url (exit 2).
 */
static bool is_page_path(const char *next)
{
	if (next[0] != '/' || next[1] == '/')
		return false;
	for (; *next; next++)
		if (*next <= ' ' || *next >= 0x7f)
			return false;
	return true;
}

static int fetch_pages(struct ctl *ctl, char *path, json_t *all)
{
	json_t *page = NULL, *seen = json_object();
	const char *next;
	int r = seen ? CTL_EXIT_OK : oom();

	while (path && r == CTL_EXIT_OK) {
		if (json_object_set_new(seen, path, json_true()) < 0) {
			r = oom();
			break;
		}
		r = call(ctl, "GET", path, NULL, 0, 0, &jobs_shape, &page);
		if (r != CTL_EXIT_OK)
			break;
		next = json_string_value(json_object_get(page, "next"));
		if (json_array_extend(all, json_object_get(page, "jobs")) < 0) {
			r = oom();
		} else if (next && !is_page_path(next)) {
			fprintf(stderr,
				"gemmctl: GET %s%s: next page is not a path "
				"of gemmd's\n",
				ctl->http.url, path);
			r = CTL_EXIT_ERROR;
		} else if (next && json_object_get(seen, next)) {
			fprintf(stderr,
				"gemmctl: GET %s%s: next page is %s, "
				"a page already listed\n",
				ctl->http.url, path, next);
			r = CTL_EXIT_ERROR;
		} else {
			free(path);
			path = next ? strdup(next) : NULL;
			if (next && !path)
				r = oom();
		}
		json_decref(page);
	}
	free(path);
	json_decref(seen);
	return r;
}

static int cmd_list(struct ctl *ctl, int argc, char **argv)
{
	const char *state = NULL;
	json_t *root = NULL, *all;
	char *path;
	int r;

	if (parse_list(argc, argv, &state) < 0)
		return CTL_EXIT_USAGE;
	path = state ? escaped_path("/v1/jobs?state=", state) :
		       strdup("/v1/jobs");
	if (!path)
		return oom();
	/* --json: the first page as gemmd wrote it, "next" and all. */
	if (ctl->json) {
		r = call(ctl, "GET", path, NULL, 0, 0, &jobs_shape, &root);
		json_decref(root);
		free(path);
		return r;
	}
	all = json_array();
	if (!all) {
		free(path);
		return oom();
	}
	r = fetch_pages(ctl, path, all);
	if (r == CTL_EXIT_OK)
		r = show(ctl_print_jobs(all));
	json_decref(all);
	return r;
}

/* --- kernels, devices, health --------------------------------------------- */

/* A command without arguments: one GET, its reply shown by show. */
struct view {
	const char *cmd;
	const char *path;
	struct ctl_shape shape;
	int (*show)(json_t *root);
};

static int show_kernels(json_t *root)
{
	return ctl_print_kernels(json_object_get(root, "kernels"));
}

static int show_devices(json_t *root)
{
	return ctl_print_devices(json_object_get(root, "devices"));
}

static int show_health(json_t *root)
{
	ctl_print_object(root);
	return 0;
}

static int get_and_show(struct ctl *ctl, const struct view *view, int argc,
			char **argv)
{
	json_t *root = NULL;
	int r;

	if (operands(view->cmd, NULL, argc, argv, 0, NULL) < 0)
		return CTL_EXIT_USAGE;
	r = call(ctl, "GET", view->path, NULL, 0, 0, &view->shape, &root);
	if (r == CTL_EXIT_OK && !ctl->json)
		r = show(view->show(root));
	json_decref(root);
	return r;
}

static int cmd_kernels(struct ctl *ctl, int argc, char **argv)
{
	static const struct view view = {
		.cmd = "kernels",
		.path = "/v1/kernels",
		.shape = { "a kernel list", "kernels", JSON_ARRAY },
		.show = show_kernels,
	};

	return get_and_show(ctl, &view, argc, argv);
}

static int cmd_devices(struct ctl *ctl, int argc, char **argv)
{
	static const struct view view = {
		.cmd = "devices",
		.path = "/v1/devices",
		.shape = { "a device list", "devices", JSON_ARRAY },
		.show = show_devices,
	};

	return get_and_show(ctl, &view, argc, argv);
}

static int cmd_health(struct ctl *ctl, int argc, char **argv)
{
	static const struct view view = {
		.cmd = "health",
		.path = "/healthz",
		.shape = { "a health report", "status", JSON_STRING },
		.show = show_health,
	};

	return get_and_show(ctl, &view, argc, argv);
}

static int cmd_help(struct ctl *ctl, int argc, char **argv)
{
	if (operands("help", NULL, argc, argv, 0, NULL) < 0)
		return CTL_EXIT_USAGE;
	usage(stdout);
	return CTL_EXIT_OK;
}

static const struct command commands[] = {
	{ "submit", cmd_submit },     { "status", cmd_status },
	{ "list", cmd_list },	      { "cancel", cmd_cancel },
	{ "kernels", cmd_kernels },   { "devices", cmd_devices },
	{ "health", cmd_health },     { "help", cmd_help, true },
	{ "tune", cmd_tune },	      { "gpus", cmd_gpus },
	{ "merge", cmd_merge, true },
};

/* --- main ----------------------------------------------------------------- */

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/*
 * --url, else $GEMMD_URL, else the default; without trailing slashes.  An
 * empty one is refused rather than taken for the default: GEMMD_URL= set
 * by a script whose variable was empty would otherwise reach whatever
 * listens on the default port.
 */
static int base_url(const char *opt, char **ret)
{
	const char *env = getenv("GEMMD_URL");
	const char *url = opt ?: env ?: DEFAULT_URL;
	size_t n;

	if (!*url)
		return usage_error("%s is empty: give gemmd's URL",
				   opt ? "--url" : "GEMMD_URL");
	/* Each request's path goes after it: a query would swallow it. */
	if (strpbrk(url, "?#"))
		return usage_error("%s '%s' has a query or fragment: give "
				   "gemmd's address alone",
				   opt ? "--url" : "GEMMD_URL", url);
	*ret = strdup(url);
	if (!*ret)
		return -ENOMEM;
	n = strlen(*ret);
	while (n > 0 && (*ret)[n - 1] == '/')
		n--;
	/*
	 * Not the slashes of "http://" with no host after them, so that the
	 * request refuses it for that ("no host").
	 */
	if ((n == 5 && !strncasecmp(*ret, "http:", n)) ||
	    (n == 6 && !strncasecmp(*ret, "https:", n)))
		return 0;
	(*ret)[n] = '\0';
	return 0;
}

/* A full disk or a closed pipe must not look like success to a script. */
static int close_stdout(int r)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return r;
	fprintf(stderr, "gemmctl: write error: %s\n", strerror(errno));
	return r ?: CTL_EXIT_ERROR;
}

static int run(struct ctl *ctl, int argc, char **argv)
{
	const struct command *cmd;
	int r;

	/* --help goes with any command line, as in "gemmctl tune --help". */
	if (ctl->help) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	if (ctl->version) {
		printf("gemmctl %s\n", PACKAGE_VERSION);
		return CTL_EXIT_OK;
	}
	if (argc == 0) {
		usage_error("missing command");
		return CTL_EXIT_USAGE;
	}
	cmd = find_command(argv[0]);
	if (!cmd && argv[0][0] == '-' && argv[0][1]) {
		usage_error("unknown option '%s'", argv[0]);
		return CTL_EXIT_USAGE;
	}
	if (!cmd) {
		usage_error("unknown command '%s'", argv[0]);
		return CTL_EXIT_USAGE;
	}
	/*
	 * help and merge need no URL, so they work whatever GEMMD_URL holds:
	 * a script's empty one refused only where it would be used.
	 */
	if (!cmd->local) {
		r = base_url(ctl->http.url, &ctl->url);
		if (r < 0)
			return r == -ENOMEM ? oom() : CTL_EXIT_USAGE;
		ctl->http.url = ctl->url;
	}
	return cmd->run(ctl, argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	struct ctl ctl = { .http.timeout_s = DEFAULT_TIMEOUT_S };
	int r;

	if (parse_globals(&ctl, &argc, argv) < 0)
		return CTL_EXIT_USAGE;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fputs("gemmctl: cannot initialise libcurl\n", stderr);
		return CTL_EXIT_ERROR;
	}
	r = run(&ctl, argc, argv);
	curl_global_cleanup();
	free(ctl.url);
	return close_stdout(r);
}
