// SPDX-License-Identifier: MIT
/*
 * gemmd-worker - owns one GPU for the supervisor.
 *
 *   gemmd-worker --probe
 *	print {"devices": [...]} and exit (non-zero without a driver).
 *   gemmd-worker --device N --fd 3 --kernel-dir DIR
 *	serve: framed JSON on fd 3, one job at a time.
 *   gemmd-worker --device N --kernel-dir DIR --once JOB.json
 *	run one job from a file and print its result (for debugging);
 *	exits 3 after a sticky error, as the served worker does.
 *
 * After a sticky CUDA error the context is useless, so the worker reports
 * the job's failure and exits; the supervisor starts a fresh one.
 *
 * Environment (inherited from gemmd):
 *   GEMMD_CUDA_LIBRARY      the driver library instead of libcuda.so.1
 *   GEMMD_NVML_LIBRARY      NVML instead of libnvidia-ml.so.1
 *   GEMMD_CUBLASLT_LIBRARY  cuBLASLt instead of libcublasLt.so.13/.12/.so
 *   GEMMD_LOG_LEVEL         "debug" logs debug messages too
 *   GEMMD_FAULT             tests only: "early_release" runs every launch
 *                           of the kernel under test with that deliberate
 *                           pipeline bug (gemm_args.fault), and
 *                           "placement_skew" with a skewed GPC map;
 *                           "sticky_error" and "job_error" fail a job
 *                           labelled so, with a sticky error or one that
 *                           leaves the context usable; any other
 *                           non-empty value fails each job
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "frame.h"
#include "gpu.h"
#include "log.h"
#include "paths.h"
#include "plan.h"
#include "result.h"
#include "spec.h"
#include "util.h"
#include "version.h"

#define EXIT_STICKY 3

struct options {
	bool probe;
	int device;
	int fd;
	const char *kernel_dir;
	char kernel_dir_buf[PATH_MAX];
	const char *once;
};

static int do_probe(void)
{
	char err[512] = "";
	json_t *devs = NULL, *out;
	int r;

	r = gpu_probe(&devs, err, sizeof(err));
	if (r < 0) {
		log_error("%s", err);
		return 1;
	}
	/*
	 * Exit 0 only with the list printed: gemmd takes a probe that
	 * succeeds without one for a program that is no gemmd-worker, and
	 * stops for good; out of memory here is a failure worth a restart.
	 */
	out = json_pack("{s:o}", "devices", devs);
	if (!out || json_dumpf(out, stdout, JSON_INDENT(2)) < 0 ||
	    putchar('\n') == EOF || fflush(stdout) == EOF) {
		log_error("cannot print the device list");
		json_decref(out);
		return 1;
	}
	json_decref(out);
	return 0;
}

/*
 * msg may quote a path or a library's words (dlerror(), a kernel
 * directory that is not UTF-8) and may have been cut inside a character
 * by snprintf(): jansson refuses such a string, and no frame at all
 * would leave the supervisor waiting for the job's deadline.
 */
static int send_error(int fd, const char *id, const char *msg, bool sticky)
{
	char text[1024];
	json_t *m;
	int r;

	utf8_copy(text, sizeof(text), msg);
	m = json_pack("{s:s, s:s?, s:s, s:b}", "type", "error", "id", id,
		      "message", text, "sticky", sticky);
	r = frame_write(fd, m);
	json_decref(m);
	return r;
}

/* The job's cooldown: its heat should not slow the next job down. */
static void cool_down(unsigned int ms)
{
	sleep_ms(ms);
}

/* One "run" message: returns 1 when the context is gone and we must exit. */
static int handle_run(struct gpu *g, int fd, json_t *msg)
{
	const char *id = json_string_value(json_object_get(msg, "id"));
	struct gemmd_error perr;
	struct gemm_spec spec;
	struct gemm_plan plan;
	struct gemm_result res;
	bool sticky = false;
	char err[512] = "";
	json_t *out;
	int r;

	/*
	 * Why, said: a gemmd and a worker of different builds (a package
	 * upgraded under a running gemmd) is the likely cause, and the
	 * field names which side is behind.
	 */
	if (!id) {
		send_error(fd, id, "worker could not read the job: no id",
			   false);
		return 0;
	}
	if (spec_from_json(json_object_get(msg, "spec"), &spec, &perr) < 0) {
		snprintf(err, sizeof(err),
			 "worker could not read the job's spec: %s%s%s%s",
			 perr.message, perr.field[0] ? " (field: " : "",
			 perr.field, perr.field[0] ? ")" : "");
		send_error(fd, id, err, false);
		return 0;
	}
	if (plan_from_json(json_object_get(msg, "plan"), &plan) < 0) {
		send_error(fd, id, "worker could not read the job's plan",
			   false);
		return 0;
	}
	memset(&res, 0, sizeof(res));
	r = gpu_run(g, &spec, &plan, &res, &sticky, err, sizeof(err));
	if (r < 0) {
		send_error(fd, id, err[0] ? err : strerror(-r), sticky);
		if (!sticky)
			cool_down(spec.cooldown_ms);
		return sticky;
	}
	out = json_pack("{s:s, s:s, s:o}", "type", "result", "id", id, "result",
			result_to_json(&res));
	free(res.timing.raw_us);
	r = frame_write(fd, out);
	json_decref(out);
	/* Unanswered, the job would wait for its deadline: say why. */
	if (r == -ENOMEM || r == -EMSGSIZE)
		send_error(fd, id, "worker could not encode the result", false);
	/* After the answer: the job is done, the next one waits for us. */
	cool_down(spec.cooldown_ms);
	return 0;
}

static int serve(const struct options *o)
{
	char err[512] = "";
	struct gpu *g = NULL;
	json_t *msg;
	int r;

	r = gpu_open(o->device, o->kernel_dir, &g, err, sizeof(err));
	if (r < 0) {
		send_error(o->fd, NULL, err, false);
		log_error("GPU %d: %s", o->device, err);
		return 1;
	}
	msg = json_pack("{s:s, s:i, s:o}", "type", "hello", "pid",
			(int)getpid(), "device", gpu_describe(g));
	r = frame_write(o->fd, msg);
	json_decref(msg);

	while (r >= 0 && (r = frame_read(o->fd, &msg)) >= 0) {
		const char *type =
			json_string_value(json_object_get(msg, "type"));

		if (type && !strcmp(type, "run") &&
		    handle_run(g, o->fd, msg) > 0) {
			/*
			 * No gpu_close(): with the context poisoned, driver
			 * calls may block behind a kernel that never ends.
			 * Nor exit(): the driver's own exit handlers would
			 * make those calls, and gemmd would kill the worker
			 * as one that did not leave after a sticky error.
			 */
			json_decref(msg);
			fflush(NULL);
			_exit(EXIT_STICKY);
		}
		json_decref(msg);
	}
	gpu_close(g);
	/* The supervisor closing our socket is the normal way to stop. */
	return r == -EPIPE ? 0 : 1;
}

static int run_once(const struct options *o)
{
	struct catalog *cat = NULL;
	struct gemmd_error perr;
	struct gemm_spec spec;
	struct gemm_plan plan;
	struct gemm_result res;
	struct gpu *g = NULL;
	bool sticky = false;
	char err[512] = "";
	json_error_t jerr;
	json_t *j;
	int r;

	j = json_load_file(o->once, JSON_REJECT_DUPLICATES, &jerr);
	if (!j) {
		log_error("%s: %s", o->once, jerr.text);
		return 2;
	}
	r = spec_from_json(j, &spec, &perr);
	json_decref(j);
	if (r < 0) {
		log_error("%s: %s", o->once, perr.message);
		return 2;
	}
	r = catalog_load(o->kernel_dir, &cat);
	if (r < 0) {
		log_error("cannot read kernels from %s: %s", o->kernel_dir,
			  strerror(-r));
		return 2;
	}
	if (plan_resolve(cat, &spec, NULL, &plan, &perr) < 0) {
		log_error("%s", perr.message);
		catalog_free(cat);
		return 2;
	}
	catalog_free(cat);
	/*
	 * A dry run is planned and not run, as gemmd does with it: the
	 * plan, and no result, with no driver loaded.
	 */
	if (spec.dry_run) {
		j = json_pack("{s:o, s:n}", "plan", plan_to_json(&plan),
			      "result");
		json_dumpf(j, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(j);
		return 0;
	}
	r = gpu_open(o->device, o->kernel_dir, &g, err, sizeof(err));
	if (r >= 0)
		r = gpu_run(g, &spec, &plan, &res, &sticky, err, sizeof(err));
	if (r < 0)
		log_error("%s", err);
	/*
	 * As in serve(): after a sticky error (a hung kernel included)
	 * gpu_close() can block in the driver for good, so the error above
	 * is said first and the GPU is left to the driver's teardown.
	 */
	if (sticky) {
		fflush(NULL);
		_exit(EXIT_STICKY);
	}
	gpu_close(g);
	if (r < 0)
		return 1;
	j = json_pack("{s:o, s:o}", "plan", plan_to_json(&plan), "result",
		      result_to_json(&res));
	free(res.timing.raw_us);
	json_dumpf(j, stdout, JSON_INDENT(2));
	putchar('\n');
	json_decref(j);
	return 0;
}

static void usage(void)
{
	printf("Usage: gemmd-worker --probe\n"
	       "       gemmd-worker --device N --fd FD [--kernel-dir DIR]\n"
	       "       gemmd-worker --device N --once JOB.json [--kernel-dir DIR]\n"
	       "The per-GPU worker of gemmd, which starts it; --once runs one job\n"
	       "by hand and prints its plan and result.\n\n"
	       "  -p, --probe              list the GPUs as JSON and exit\n"
	       "  -d, --device N           the GPU to own (default 0)\n"
	       "  -f, --fd FD              the supervisor's socket\n"
	       "  -k, --kernel-dir DIR     where the cubins are\n"
	       "  -o, --once JOB.json      run the job in the file\n"
	       "  -h, --help               this text\n"
	       "  -V, --version            print the version\n");
}

static int parse_number(const char *name, const char *s, int *ret)
{
	unsigned int x;

	if (parse_uint(s, INT_MAX, &x) < 0) {
		log_error("Bad value for --%s: '%s'", name, s);
		return -EINVAL;
	}
	*ret = (int)x;
	return 0;
}

/* 1: done (help, version); 0: go on; -EINVAL: a bad command line. */
static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option opts[] = {
		{ "probe", no_argument, NULL, 'p' },
		{ "device", required_argument, NULL, 'd' },
		{ "fd", required_argument, NULL, 'f' },
		{ "kernel-dir", required_argument, NULL, 'k' },
		{ "once", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	int opt, r = 0;

	o->device = 0;
	o->fd = -1;
	/* Run from its build tree, the kernels built beside it. */
	o->kernel_dir = build_tree_dir("../kernels", "reference.cubin",
				       o->kernel_dir_buf) < 0 ?
				KERNELDIR :
				o->kernel_dir_buf;
	while (r == 0 && (opt = getopt_long(argc, argv, "pd:f:k:o:hV", opts,
					    NULL)) != -1) {
		if (opt == 'p') {
			o->probe = true;
		} else if (opt == 'd') {
			r = parse_number("device", optarg, &o->device);
		} else if (opt == 'f') {
			r = parse_number("fd", optarg, &o->fd);
		} else if (opt == 'k') {
			o->kernel_dir = optarg;
		} else if (opt == 'o') {
			o->once = optarg;
		} else if (opt == 'h') {
			usage();
			return 1;
		} else if (opt == 'V') {
			printf("gemmd-worker %s (build %s)\n", PACKAGE_VERSION,
			       GEMMD_BUILD);
			return 1;
		} else {
			return -EINVAL;
		}
	}
	if (r < 0)
		return r;
	if (optind < argc) {
		log_error("Unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!o->probe && !o->once && o->fd < 0) {
		log_error("One of --probe, --fd or --once is needed; "
			  "see gemmd-worker --help");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	int r;

	log_setup("gemmd-worker");
	r = parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? 0 : 2;
	if (o.probe)
		return do_probe();
	if (o.once)
		return run_once(&o);
	/*
	 * Never outlive the supervisor, even if it is killed outright.
	 * gemmd sets this before exec, where it can tell whether it died
	 * first; a parent of PID 1 says nothing of that here, since gemmd
	 * may be a container's init.  This covers other parents.
	 */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGPIPE, SIG_IGN);
	return serve(&o);
}
