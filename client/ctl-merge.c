// SPDX-License-Identifier: MIT
/*
 * ctl-merge.c - gemmctl merge: the sweeps of one job on several nodes,
 * ranked together.
 *
 * A fleet is tuned by running the same tune on each node and keeping each
 * node's --json document.  A configuration is ranked by the median of its
 * rates over those sweeps, and only if it passed in every one: one that
 * failed verification on a single node is no configuration to roll out.
 * The others are listed, with what happened on each node where they did
 * not pass.  Configurations are told apart by their kernel object as
 * tune sent it, so sweeps made with other options (--stages all, say)
 * still line up where they share candidates.  Rates are compared only
 * where the nodes ran the same cubin (its digest in the job's plan).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ctl-http.h"
#include "ctl-merge.h"
#include "ctl-print.h"
#include "util.h"

enum outcome {
	OUTCOME_ABSENT,
	OUTCOME_PASSED,
	OUTCOME_FAILED,
	OUTCOME_REFUSED,
	OUTCOME_CUBIN,
	_OUTCOME_MAX
};

static const char *const outcome_names[_OUTCOME_MAX] = {
	[OUTCOME_ABSENT] = "absent", /* in none of the sweep's lists */
	[OUTCOME_PASSED] = "passed", /* in its results */
	[OUTCOME_FAILED] = "failed", /* ran, and did not pass */
	[OUTCOME_REFUSED] = "refused", /* by the node's planner */
	[OUTCOME_CUBIN] = "other_cubin", /* passed, on another cubin */
};

struct config {
	char *key; /* the kernel object: compact, keys sorted */
	json_t *kernel;
	const json_t **entry; /* per sweep: its tune entry, NULL if absent */
	enum outcome *outcome; /* per sweep */
	size_t order; /* first seen: the unranked are listed in this order */
	size_t cubin_from; /* the first sweep whose plan has a digest */
	bool everywhere; /* passed in every sweep */
	double median, min, max; /* TFLOP/s over the sweeps, if everywhere */
};

struct merge {
	const struct ctl_sweep *sweeps;
	size_t n;
	char **files; /* per sweep: its file's name, as UTF-8 (utf8_name()) */
	char **labels; /* per sweep: its node's hostname, or its file */
	struct config *configs;
	size_t nconfigs, alloc;
	json_t *index; /* config key -> its index in configs, while collecting */
};

/* --- checks --------------------------------------------------------------- */

static int check_array(const struct ctl_sweep *s, const char *key)
{
	if (json_is_array(json_object_get(s->doc, key)))
		return 0;
	fprintf(stderr,
		"gemmctl: merge: %s: no \"%s\" list: not what tune "
		"--json prints\n",
		s->file, key);
	return -EINVAL;
}

static int check_sweep(const struct ctl_sweep *s)
{
	const json_t *id = json_object_get(s->doc, "sweep");

	if (!json_is_object(s->doc) ||
	    !json_is_object(json_object_get(s->doc, "base"))) {
		fprintf(stderr,
			"gemmctl: merge: %s: not what tune --json prints "
			"(no \"base\" job)\n",
			s->file);
		return -EINVAL;
	}
	if (json_is_null(id)) {
		fprintf(stderr,
			"gemmctl: merge: %s: a dry run (tune --dry-run) has "
			"no rates to merge\n",
			s->file);
		return -EINVAL;
	}
	if (!json_is_string(id)) {
		fprintf(stderr, "gemmctl: merge: %s: no \"sweep\" id\n",
			s->file);
		return -EINVAL;
	}
	if (check_array(s, "results") < 0 || check_array(s, "failed") < 0 ||
	    check_array(s, "refused") < 0)
		return -EINVAL;
	return 0;
}

/* Every sweep of one job, each given once. */
static int check_together(const struct ctl_sweep *sweeps, size_t n)
{
	const json_t *base = json_object_get(sweeps[0].doc, "base");
	size_t i, j;

	for (i = 1; i < n; i++) {
		if (!json_equal(json_object_get(sweeps[i].doc, "base"), base)) {
			fprintf(stderr,
				"gemmctl: merge: %s is a sweep of another job "
				"than %s (their \"base\" differs)\n",
				sweeps[i].file, sweeps[0].file);
			return -EINVAL;
		}
		for (j = 0; j < i; j++) {
			if (!json_equal(json_object_get(sweeps[i].doc, "sweep"),
					json_object_get(sweeps[j].doc,
							"sweep")))
				continue;
			ctl_print_text(stderr,
				       "gemmctl: merge: %s and %s are the same "
				       "sweep (%s)",
				       sweeps[j].file, sweeps[i].file,
				       ctl_jstr(sweeps[i].doc, "sweep"));
			fputc('\n', stderr);
			return -EINVAL;
		}
	}
	return 0;
}

/* --- labels --------------------------------------------------------------- */

static const char *hostname(const struct ctl_sweep *s)
{
	return ctl_jstr(json_object_get(s->doc, "node"), "hostname");
}

/*
 * A file's name as a JSON string can hold it: a name need not be UTF-8,
 * and jansson refuses a string that is not.  The bytes of such a name
 * past ASCII are written "\xNN".
 */
static char *utf8_name(const char *name)
{
	json_t *v = json_string(name);
	char *s, *p;

	if (v) {
		json_decref(v);
		return strdup(name);
	}
	s = malloc(strlen(name) * 4 + 1);
	if (!s)
		return NULL;
	for (p = s; *name; name++) {
		unsigned char c = *name;

		if (c < 0x80)
			*p++ = (char)c;
		else
			p += sprintf(p, "\\x%02x", c);
	}
	*p = '\0';
	return s;
}

/* Two sweeps of one host (a rerun) are told apart by their files. */
static int make_labels(struct merge *m)
{
	size_t i, j;
	int r;

	m->files = calloc(m->n, sizeof(*m->files));
	m->labels = calloc(m->n, sizeof(*m->labels));
	if (!m->files || !m->labels)
		return -ENOMEM;
	for (i = 0; i < m->n; i++) {
		m->files[i] = utf8_name(m->sweeps[i].file);
		if (!m->files[i])
			return -ENOMEM;
	}
	for (i = 0; i < m->n; i++) {
		const char *host = hostname(&m->sweeps[i]);
		bool twice = false;

		for (j = 0; host && j < m->n; j++)
			twice |= j != i && hostname(&m->sweeps[j]) &&
				 !strcmp(hostname(&m->sweeps[j]), host);
		if (!host)
			r = asprintf(&m->labels[i], "%s", m->files[i]);
		else if (twice)
			r = asprintf(&m->labels[i], "%s (%s)", host,
				     m->files[i]);
		else
			r = asprintf(&m->labels[i], "%s", host);
		if (r < 0) {
			m->labels[i] = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

/* --- collecting ----------------------------------------------------------- */

static struct config *find_config(struct merge *m, const char *key)
{
	json_t *i = json_object_get(m->index, key);

	return i ? &m->configs[json_integer_value(i)] : NULL;
}

static struct config *add_config(struct merge *m, json_t *kernel, char *key)
{
	struct config *c;
	size_t alloc;

	if (m->nconfigs == m->alloc) {
		alloc = m->alloc ? 2 * m->alloc : 64;
		c = reallocarray(m->configs, alloc, sizeof(*c));
		if (!c)
			return NULL;
		m->configs = c;
		m->alloc = alloc;
	}
	c = &m->configs[m->nconfigs];
	memset(c, 0, sizeof(*c));
	c->entry = calloc(m->n, sizeof(*c->entry));
	c->outcome = calloc(m->n, sizeof(*c->outcome));
	if (!c->entry || !c->outcome) {
		free(c->entry);
		free(c->outcome);
		return NULL;
	}
	if (json_object_set_new(m->index, key,
				json_integer((json_int_t)m->nconfigs)) < 0) {
		free(c->entry);
		free(c->outcome);
		return NULL;
	}
	c->key = key;
	c->kernel = json_incref(kernel);
	c->order = m->nconfigs++;
	return c;
}

/* A rate tune could have measured: a number, finite, not negative. */
static bool rate_ok(const json_t *e)
{
	const json_t *v = json_object_get(e, "tflops");

	return json_is_number(v) && isfinite(json_number_value(v)) &&
	       json_number_value(v) >= 0;
}

static int add_entry(struct merge *m, size_t s, const char *list, size_t i,
		     enum outcome outcome)
{
	const json_t *e =
		json_array_get(json_object_get(m->sweeps[s].doc, list), i);
	json_t *kernel = json_object_get(e, "kernel");
	struct config *c;
	char *key;

	if (!json_is_object(kernel) ||
	    (outcome == OUTCOME_PASSED && !rate_ok(e))) {
		fprintf(stderr,
			"gemmctl: merge: %s: %s[%zu] has no kernel%s: not what "
			"tune --json prints\n",
			m->sweeps[s].file, list, i,
			outcome == OUTCOME_PASSED ? " or rate (tflops)" : "");
		return -EINVAL;
	}
	key = json_dumps(kernel, JSON_COMPACT | JSON_SORT_KEYS);
	if (!key)
		return -ENOMEM;
	c = find_config(m, key);
	if (c) {
		free(key);
	} else {
		c = add_config(m, kernel, key);
		if (!c) {
			free(key);
			return -ENOMEM;
		}
	}
	/* tune lists each candidate once, in one of its lists */
	if (c->entry[s]) {
		fprintf(stderr,
			"gemmctl: merge: %s: %s[%zu] is a candidate listed "
			"before: not what tune --json prints\n",
			m->sweeps[s].file, list, i);
		return -EINVAL;
	}
	c->entry[s] = e;
	c->outcome[s] = outcome;
	return 0;
}

static int add_list(struct merge *m, size_t s, const char *list,
		    enum outcome outcome)
{
	size_t i, n = json_array_size(json_object_get(m->sweeps[s].doc, list));
	int r;

	for (i = 0; i < n; i++) {
		r = add_entry(m, s, list, i, outcome);
		if (r < 0)
			return r;
	}
	return 0;
}

static int collect(struct merge *m)
{
	size_t s;
	int r = 0;

	for (s = 0; !r && s < m->n; s++) {
		r = add_list(m, s, "results", OUTCOME_PASSED);
		if (!r)
			r = add_list(m, s, "failed", OUTCOME_FAILED);
		if (!r)
			r = add_list(m, s, "refused", OUTCOME_REFUSED);
	}
	return r;
}

/* --- ranking -------------------------------------------------------------- */

/* The digest of the cubin sweep s ran the configuration from, or NULL. */
static const char *cubin_digest(const struct config *c, size_t s)
{
	return ctl_jstr(json_object_get(c->entry[s], "plan"), "digest");
}

/*
 * A kernel name is no promise of its code: a node built from another
 * commit may hold another cubin under it, and its rate is then not one
 * of this configuration's.  The first sweep that passed on a named
 * cubin sets it (one that failed has no rate to compare with); one that
 * passed on another is not counted as passed.  Sweeps whose plans name
 * none (gemmd read no cubin) are taken as they are.
 */
static void check_cubin(struct config *c, size_t n)
{
	const char *want = NULL, *d;
	size_t s;

	for (s = 0; s < n; s++) {
		d = cubin_digest(c, s);
		if (!d || c->outcome[s] != OUTCOME_PASSED)
			continue;
		if (!want) {
			want = d;
			c->cubin_from = s;
		} else if (strcmp(d, want)) {
			c->outcome[s] = OUTCOME_CUBIN;
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void rate(struct config *c, size_t n, double *buf)
{
	size_t s;

	c->everywhere = true;
	for (s = 0; s < n; s++) {
		if (c->outcome[s] != OUTCOME_PASSED) {
			c->everywhere = false;
			return;
		}
		buf[s] = json_number_value(
			json_object_get(c->entry[s], "tflops"));
	}
	qsort(buf, n, sizeof(*buf), cmp_double);
	c->min = buf[0];
	c->max = buf[n - 1];
	/* halves first: the sum of two rates near DBL_MAX is Inf */
	c->median = n % 2 ? buf[n / 2] : buf[n / 2 - 1] / 2 + buf[n / 2] / 2;
}

/* Ranked ones first, fastest median first; the rest as they came. */
static int cmp_config(const void *a, const void *b)
{
	const struct config *x = a, *y = b;
	int by;

	if (x->everywhere != y->everywhere)
		return y->everywhere - x->everywhere;
	by = x->everywhere ? cmp_double(&y->median, &x->median) : 0;
	if (!by && x->everywhere)
		by = cmp_double(&y->min, &x->min);
	if (by)
		return by;
	return (x->order > y->order) - (x->order < y->order);
}

static int rank(struct merge *m)
{
	double *buf = calloc(m->n, sizeof(*buf));
	size_t i;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < m->nconfigs; i++) {
		check_cubin(&m->configs[i], m->n);
		rate(&m->configs[i], m->n, buf);
	}
	free(buf);
	qsort(m->configs, m->nconfigs, sizeof(*m->configs), cmp_config);
	return 0;
}

/* --- the document --------------------------------------------------------- */

/* The first plan among the sweeps' entries, for the table's STAGES. */
static json_t *first_plan(const struct config *c, size_t n)
{
	json_t *plan;
	size_t s;

	for (s = 0; s < n; s++) {
		plan = json_object_get(c->entry[s], "plan");
		if (json_is_object(plan))
			return plan;
	}
	return json_null();
}

/* Why a configuration did not pass in sweep s, as text. */
static json_t *why_not(const struct merge *m, const struct config *c, size_t s)
{
	const json_t *e = c->entry[s];
	json_t *v;
	char *text;

	switch (c->outcome[s]) {
	case OUTCOME_CUBIN:
		/* "sha256:" and 12 of the 64 digits tell them apart */
		if (asprintf(&text,
			     "ran cubin %.19s..., not %.19s... as %s did",
			     cubin_digest(c, s), cubin_digest(c, c->cubin_from),
			     m->labels[c->cubin_from]) < 0)
			text = NULL;
		break;
	case OUTCOME_FAILED:
		text = ctl_jstr(e, "reason") ?
			       strdup(ctl_jstr(e, "reason")) :
			       ctl_error_text(json_object_get(e, "error"));
		break;
	case OUTCOME_REFUSED:
		text = ctl_error_text(json_object_get(e, "error"));
		break;
	case OUTCOME_ABSENT:
		text = strdup("not in the sweep's results (tune --top?)");
		break;
	case OUTCOME_PASSED:
	case _OUTCOME_MAX:
	default:
		return json_null();
	}
	v = text ? json_string(text) : json_null();
	free(text);
	return v;
}

static json_t *node_entry(const struct merge *m, const struct config *c,
			  size_t s)
{
	const json_t *e = c->entry[s];
	json_t *o;

	o = json_pack("{s:s, s:O, s:s}", "node", m->labels[s], "sweep",
		      json_object_get(m->sweeps[s].doc, "sweep"), "outcome",
		      outcome_names[c->outcome[s]]);
	if (!o)
		return NULL;
	/* what ran on another cubin passed: its rate is shown, not ranked */
	if ((c->outcome[s] == OUTCOME_PASSED ||
	     c->outcome[s] == OUTCOME_CUBIN) &&
	    json_object_set(o, "tflops", json_object_get(e, "tflops")) < 0)
		goto fail;
	if (c->outcome[s] != OUTCOME_PASSED &&
	    json_object_set_new(o, "reason", why_not(m, c, s)) < 0)
		goto fail;
	if (json_object_set_new(o, "plan",
				json_incref(json_object_get(e, "plan")) ?:
					json_null()) < 0 ||
	    json_object_set_new(o, "device",
				json_incref(json_object_get(e, "device")) ?:
					json_null()) < 0)
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* (max - min) / median; null where that is no number (a median of 0) */
static json_t *spread(const struct config *c)
{
	double v = (c->max - c->min) / c->median;

	return c->median > 0 && isfinite(v) ? json_real(v) : json_null();
}

static json_t *config_entry(const struct merge *m, const struct config *c,
			    size_t rank)
{
	json_t *o, *nodes;
	size_t s;

	nodes = json_array();
	for (s = 0; nodes && s < m->n; s++)
		if (json_array_append_new(nodes, node_entry(m, c, s)) < 0) {
			json_decref(nodes);
			nodes = NULL;
		}
	if (!nodes)
		return NULL;
	if (!c->everywhere)
		return json_pack("{s:O, s:O, s:o}", "kernel", c->kernel, "plan",
				 first_plan(c, m->n), "nodes", nodes);
	o = json_pack("{s:I, s:O, s:{s:f, s:f, s:f}, s:o, s:O, s:o}", "rank",
		      (json_int_t)rank, "kernel", c->kernel, "tflops", "median",
		      c->median, "min", c->min, "max", c->max, "spread",
		      spread(c), "plan", first_plan(c, m->n), "nodes", nodes);
	return o;
}

static json_t *sweeps_list(const struct merge *m)
{
	json_t *list = json_array();
	size_t s;

	for (s = 0; list && s < m->n; s++) {
		const json_t *doc = m->sweeps[s].doc;
		json_t *node = json_object_get(doc, "node");

		if (json_array_append_new(
			    list,
			    json_pack("{s:s, s:s, s:O, s:O}", "file",
				      m->files[s], "label", m->labels[s],
				      "sweep", json_object_get(doc, "sweep"),
				      "node", node ?: json_null())) < 0) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

static json_t *make_doc(const struct merge *m, long top)
{
	json_t *results = json_array(), *unranked = json_array();
	json_t *best = json_null();
	size_t i, ranked = 0;
	int r = 0;

	for (i = 0; results && unranked && !r && i < m->nconfigs; i++) {
		const struct config *c = &m->configs[i];

		if (c->everywhere && !ranked++)
			best = c->kernel;
		if (c->everywhere && top && ranked > (size_t)top)
			continue;
		r = json_array_append_new(c->everywhere ? results : unranked,
					  config_entry(m, c, ranked));
	}
	if (!results || !unranked || r) {
		json_decref(results);
		json_decref(unranked);
		return NULL;
	}
	return json_pack("{s:O, s:o, s:I, s:I, s:o, s:o, s:O}", "base",
			 json_object_get(m->sweeps[0].doc, "base"), "sweeps",
			 sweeps_list(m), "configurations",
			 (json_int_t)m->nconfigs, "ranked", (json_int_t)ranked,
			 "results", results, "unranked", unranked, "best",
			 best);
}

/* --- output --------------------------------------------------------------- */

static int print_table(const struct merge *m, const json_t *doc)
{
	size_t ranked = json_integer_value(json_object_get(doc, "ranked"));
	size_t s;
	int r;

	printf("%zu sweep(s) of one job:", m->n);
	for (s = 0; s < m->n; s++)
		ctl_print_text(stdout, "%s %s", s ? "," : "", m->labels[s]);
	printf("\n%zu configuration%s: %zu passed in every sweep, %zu did "
	       "not\n",
	       m->nconfigs, m->nconfigs == 1 ? "" : "s", ranked,
	       m->nconfigs - ranked);
	if (ranked)
		printf("TFLOP/s is the median over the sweeps; SPREAD is "
		       "(MAX - MIN) / TFLOP/s\n");
	r = ctl_print_merge_ranking(json_object_get(doc, "results"));
	if (r < 0 || !json_array_size(json_object_get(doc, "unranked")))
		return r;
	printf("not ranked:\n");
	return ctl_print_merge_unranked(json_object_get(doc, "unranked"));
}

static void merge_done(struct merge *m)
{
	size_t i;

	for (i = 0; i < m->nconfigs; i++) {
		free(m->configs[i].key);
		json_decref(m->configs[i].kernel);
		free(m->configs[i].entry);
		free(m->configs[i].outcome);
	}
	free(m->configs);
	for (i = 0; m->labels && i < m->n; i++)
		free(m->labels[i]);
	free(m->labels);
	for (i = 0; m->files && i < m->n; i++)
		free(m->files[i]);
	free(m->files);
	json_decref(m->index);
}

int ctl_merge(const struct ctl_merge_opts *opts, const struct ctl_sweep *sweeps,
	      size_t n)
{
	struct merge m = { .sweeps = sweeps, .n = n };
	json_t *doc = NULL;
	size_t i;
	int r;

	for (i = 0; i < n; i++)
		if (check_sweep(&sweeps[i]) < 0)
			return CTL_EXIT_ERROR;
	if (check_together(sweeps, n) < 0)
		return CTL_EXIT_ERROR;
	m.index = json_object();
	r = m.index ? make_labels(&m) : -ENOMEM;
	if (!r)
		r = collect(&m);
	/* rank() reorders the configurations the index points into */
	json_decref(m.index);
	m.index = NULL;
	if (!r)
		r = rank(&m);
	if (!r) {
		doc = make_doc(&m, opts->top);
		r = doc ? 0 : -ENOMEM;
	}
	if (!r)
		r = opts->json ? ctl_print_doc(doc) : print_table(&m, doc);
	if (r == -ENOMEM)
		fprintf(stderr, "gemmctl: out of memory\n");
	if (!r && !json_integer_value(json_object_get(doc, "ranked"))) {
		fprintf(stderr, "gemmctl: merge: no configuration passed in "
				"every sweep\n");
		r = -ENOENT;
	}
	json_decref(doc);
	merge_done(&m);
	return r ? CTL_EXIT_ERROR : CTL_EXIT_OK;
}
