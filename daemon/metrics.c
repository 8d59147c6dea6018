// SPDX-License-Identifier: MIT
/*
 * metrics.c - the Prometheus text exposition of a metrics_view.
 *
 * Every family is written with its HELP and TYPE lines, and every label
 * set it can have is written, at 0 where nothing happened yet, so that a
 * query sees a series from the first scrape on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "workers.h"

static void family(FILE *f, const char *name, const char *type,
		   const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped. */
static void label_value(FILE *f, const char *v)
{
	for (; v && *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(f, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void label(FILE *f, const char *sep, const char *name, const char *v)
{
	fprintf(f, "%s%s=\"", sep, name);
	label_value(f, v);
	fputc('"', f);
}

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static void write_info(FILE *f, const struct metrics_view *v)
{
	family(f, "gemmd_build_info", "gauge",
	       "gemmd's version and build, node and kernel set; always 1.");
	fputs("gemmd_build_info", f);
	label(f, "{", "version", jstr(v->node, "gemmd"));
	label(f, ",", "build", jstr(v->node, "build"));
	label(f, ",", "hostname", jstr(v->node, "hostname"));
	label(f, ",", "node_id", jstr(v->node, "id"));
	label(f, ",", "kernels_digest", v->kernels_digest);
	fputs("} 1\n", f);
	family(f, "gemmd_uptime_seconds", "gauge",
	       "Seconds since gemmd started.");
	fprintf(f, "gemmd_uptime_seconds %llu\n",
		(unsigned long long)v->uptime_sec);
	family(f, "gemmd_kernels", "gauge", "Kernels in the catalog.");
	fprintf(f, "gemmd_kernels %u\n", v->kernels);
	family(f, "gemmd_requests_held", "gauge",
	       "Requests held until their job ends (?wait), not yet answered.");
	fprintf(f, "gemmd_requests_held %u\n", v->requests_held);
}

static void write_jobs(FILE *f, const struct job_counts *c)
{
	int st;

	family(f, "gemmd_jobs", "gauge",
	       "Jobs gemmd keeps now, by state (ended ones up to max-kept).");
	for (st = 0; st < _JOB_STATE_MAX; st++)
		fprintf(f, "gemmd_jobs{state=\"%s\"} %u\n",
			job_state_to_string(st), c->kept[st]);
	family(f, "gemmd_jobs_created_total", "counter",
	       "Jobs accepted since gemmd started, dry runs included.");
	fprintf(f, "gemmd_jobs_created_total %llu\n",
		(unsigned long long)c->created);
	family(f, "gemmd_jobs_ended_total", "counter",
	       "Jobs that ended since gemmd started, by final state.");
	for (st = 0; st < _JOB_STATE_MAX; st++)
		if (job_state_is_final(st))
			fprintf(f,
				"gemmd_jobs_ended_total{state=\"%s\"} %llu\n",
				job_state_to_string(st),
				(unsigned long long)c->ended[st]);
}

static void gpu_label(FILE *f, const json_t *d)
{
	fprintf(f, "{gpu=\"%lld\"",
		(long long)json_integer_value(json_object_get(d, "index")));
}

static void write_gpu_info(FILE *f, const json_t *devices)
{
	size_t i;
	json_t *d;

	family(f, "gemmd_gpu_info", "gauge", "Each GPU's identity; always 1.");
	json_array_foreach(devices, i, d) {
		fputs("gemmd_gpu_info", f);
		gpu_label(f, d);
		label(f, ",", "name", jstr(d, "name"));
		label(f, ",", "uuid", jstr(d, "uuid"));
		label(f, ",", "nvidia_driver", jstr(d, "nvidia_driver"));
		label(f, ",", "cuda_driver", jstr(d, "driver_version"));
		fputs("} 1\n", f);
	}
}

static void write_workers(FILE *f, const json_t *devices)
{
	const char *name;
	unsigned int s;
	size_t i;
	json_t *d;

	family(f, "gemmd_worker_state", "gauge",
	       "Each GPU's worker: 1 for the state it is in, 0 for the others.");
	json_array_foreach(devices, i, d) {
		const char *now = jstr(json_object_get(d, "worker"), "state");

		for (s = 0; (name = workers_state_name(s)); s++) {
			fputs("gemmd_worker_state", f);
			gpu_label(f, d);
			fprintf(f, ",state=\"%s\"} %d\n", name,
				now && !strcmp(now, name));
		}
	}
	family(f, "gemmd_worker_restarts_total", "counter",
	       "Times each GPU's worker was started again.");
	json_array_foreach(devices, i, d) {
		fputs("gemmd_worker_restarts_total", f);
		gpu_label(f, d);
		fprintf(f, "} %lld\n",
			(long long)json_integer_value(json_object_get(
				json_object_get(d, "worker"), "restarts")));
	}
}

char *metrics_text(const struct metrics_view *v)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	write_info(f, v);
	write_jobs(f, &v->jobs);
	write_gpu_info(f, v->devices);
	write_workers(f, v->devices);
	if (ferror(f)) {
		fclose(f);
		free(text);
		return NULL;
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
