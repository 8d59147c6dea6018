// SPDX-License-Identifier: MIT
/*
 * test-jobs - the job table: ids, queue order, device affinity, state
 * changes and their notifications, retention, queue limit, listing pages.
 */
#include "check.h"
#include "jobs.h"
#include "plan.h"
#include "spec.h"

static unsigned int notified;

static void on_change(struct job *job, void *userdata)
{
	notified++;
}

static struct gemm_spec spec_for(int device)
{
	struct gemm_spec s;

	spec_init(&s);
	s.m = s.n = s.k = 256;
	s.device = device;
	return s;
}

static void test_lifecycle(void)
{
	struct job_store *s = job_store_new(10, 100, 600);
	struct gemm_spec spec = spec_for(-1);
	struct job_page all_cancelled = { .state = JOB_CANCELLED, .limit = 10 };
	struct job *a, *b;
	json_t *j, *dev = json_pack("{s:i}", "index", 0);
	uint64_t next;

	job_store_set_notify(s, on_change, NULL);
	notified = 0;
	CHECK_EQ_INT(job_store_add(s, &spec, false, &a), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &b), 0);
	CHECK_EQ_INT(strlen(a->id), JOB_ID_LEN);
	CHECK(strcmp(a->id, b->id) != 0);
	CHECK(job_store_find(s, a->id) == a);
	CHECK(job_store_find(s, "nope") == NULL);
	CHECK_EQ_INT(job_store_queued(s), 2);
	CHECK(job_store_next_for(s, 0) == a);

	job_start(s, a, dev);
	CHECK_EQ_INT(a->state, JOB_RUNNING);
	CHECK(a->started_usec > 0);
	CHECK(job_store_next_for(s, 0) == b);
	job_finish(s, a, JOB_DONE, json_pack("{s:i}", "x", 1), NULL);
	CHECK_EQ_INT(a->state, JOB_DONE);
	/* a final job stays final */
	job_finish(s, a, JOB_FAILED, NULL, "late");
	CHECK_EQ_INT(a->state, JOB_DONE);
	job_finish(s, b, JOB_CANCELLED, NULL, "by %s", "test");
	CHECK_STREQ(b->reason, "by test");
	CHECK_EQ_INT(job_store_queued(s), 0);
	CHECK_EQ_INT(notified, 3);

	j = job_to_json(a);
	CHECK_STREQ(json_string_value(json_object_get(j, "state")), "done");
	CHECK(json_is_object(json_object_get(j, "result")));
	CHECK(json_is_object(json_object_get(j, "device")));
	CHECK(json_is_string(json_object_get(j, "finished_at")));
	CHECK(json_is_object(json_object_get(j, "spec")));
	CHECK(json_is_null(json_object_get(j, "plan")));
	json_decref(j);
	/* each time its own, in UTC with microseconds */
	a->created_usec = 1700000000000001ull;
	a->started_usec = 1700000001250000ull;
	a->finished_usec = 1700000062999999ull;
	j = job_to_json(a);
	CHECK_STREQ(json_string_value(json_object_get(j, "created_at")),
		    "2023-11-14T22:13:20.000001Z");
	CHECK_STREQ(json_string_value(json_object_get(j, "started_at")),
		    "2023-11-14T22:13:21.250000Z");
	CHECK_STREQ(json_string_value(json_object_get(j, "finished_at")),
		    "2023-11-14T22:14:22.999999Z");
	json_decref(j);
	/* b never started */
	j = job_to_json(b);
	CHECK(json_is_string(json_object_get(j, "created_at")));
	CHECK(json_is_null(json_object_get(j, "started_at")));
	CHECK(json_is_string(json_object_get(j, "finished_at")));
	json_decref(j);
	j = job_store_page_json(s, &all_cancelled, &next);
	CHECK_EQ_INT(json_array_size(j), 1);
	CHECK(next == 0);
	json_decref(j);
	json_decref(dev);
	job_store_free(s);
}

static void test_affinity(void)
{
	struct job_store *s = job_store_new(10, 100, 600);
	struct gemm_spec on1 = spec_for(1), any = spec_for(-1);
	struct job *a, *b;

	CHECK_EQ_INT(job_store_add(s, &on1, false, &a), 0);
	CHECK_EQ_INT(job_store_add(s, &any, false, &b), 0);
	CHECK(job_store_next_for(s, 0) == b);
	CHECK(job_store_next_for(s, 1) == a);
	/* Named: only the jobs for that device, or those for none. */
	CHECK(job_store_next_named(s, 0) == NULL);
	CHECK(job_store_next_named(s, 1) == a);
	CHECK(job_store_next_named(s, -1) == b);
	job_store_free(s);
}

/* A deadline is capped by job-timeout-max when the job is accepted. */
static void test_deadline_cap(void)
{
	struct job_store *s = job_store_new(10, 100, 45);
	struct gemm_spec big = spec_for(-1);
	struct job *j;

	big.m = big.n = big.k = 65536;
	CHECK(plan_deadline_sec(&big) > 600);
	CHECK_EQ_INT(job_store_add(s, &big, false, &j), 0);
	CHECK_EQ_INT(j->deadline_sec, 45);
	job_store_free(s);
	s = job_store_new(10, 100, 86400);
	CHECK_EQ_INT(job_store_add(s, &big, false, &j), 0);
	CHECK_EQ_INT(j->deadline_sec, plan_deadline_sec(&big));
	job_store_free(s);
}

static void test_limits(void)
{
	struct job_store *s = job_store_new(3, 2, 600);
	struct gemm_spec spec = spec_for(-1);
	struct job *j[5];
	char first[JOB_ID_LEN + 1];
	int i;

	for (i = 0; i < 3; i++)
		CHECK_EQ_INT(job_store_add(s, &spec, false, &j[i]), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &j[3]), -EBUSY);
	strcpy(first, j[0]->id);
	for (i = 0; i < 3; i++)
		job_finish(s, j[i], JOB_DONE, NULL, NULL);
	/* only the two newest finished jobs are kept */
	CHECK_EQ_INT(job_store_count(s), 2);
	CHECK(job_store_find(s, first) == NULL);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &j[4]), 0);
	job_store_free(s);
}

/*
 * A full queue refuses GPU jobs, but not dry runs, which never queue, nor
 * one an idle worker is about to take.
 */
static void test_dry_run_full_queue(void)
{
	struct job_store *s = job_store_new(1, 100, 600);
	struct gemm_spec spec = spec_for(-1), dry = spec_for(-1);
	struct job *a, *b, *c, *d;

	dry.dry_run = true;
	CHECK_EQ_INT(job_store_add(s, &spec, false, &a), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &b), -EBUSY);
	CHECK_EQ_INT(job_store_add(s, &dry, false, &d), 0);
	CHECK_EQ_INT(job_store_queued(s), 1);
	CHECK(job_store_next_for(s, 0) == a);
	CHECK_EQ_INT(job_store_add(s, &spec, true, &c), 0);
	CHECK_EQ_INT(job_store_queued(s), 2);
	job_start(s, c, NULL);
	CHECK_EQ_INT(job_store_queued(s), 1);
	job_finish(s, d, JOB_DONE, NULL, "dry run");
	CHECK_EQ_INT(d->state, JOB_DONE);
	CHECK_EQ_INT(job_store_queued(s), 1);
	CHECK_EQ_INT(job_store_count(s), 3);
	job_store_free(s);
}

/* max-kept = 0: the job just finished stays until the next one ends. */
static void test_keep_none(void)
{
	struct job_store *s = job_store_new(10, 0, 600);
	struct gemm_spec spec = spec_for(-1);
	char first[JOB_ID_LEN + 1];
	struct job *a, *b;

	CHECK_EQ_INT(job_store_add(s, &spec, false, &a), 0);
	strcpy(first, a->id);
	job_finish(s, a, JOB_DONE, NULL, "dry run");
	CHECK(job_store_find(s, first) == a);
	CHECK_EQ_INT(a->state, JOB_DONE);
	CHECK_STREQ(a->reason, "dry run");
	CHECK_EQ_INT(job_store_add(s, &spec, false, &b), 0);
	job_finish(s, b, JOB_CANCELLED, NULL, NULL);
	CHECK(job_store_find(s, first) == NULL);
	CHECK(job_store_find(s, b->id) == b);
	CHECK_EQ_INT(b->state, JOB_CANCELLED);
	CHECK_EQ_INT(job_store_count(s), 1);
	job_store_free(s);
}

/*
 * Past max-kept, the job that ended longest ago goes, not the one made
 * first: a long job that ends after short ones stays to be read.
 */
static void test_keep_by_end(void)
{
	struct job_store *s = job_store_new(10, 2, 600);
	struct gemm_spec spec = spec_for(-1);
	char c_id[JOB_ID_LEN + 1];
	struct job *a, *b, *c, *d;

	CHECK_EQ_INT(job_store_add(s, &spec, false, &a), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &b), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &c), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &d), 0);
	strcpy(c_id, c->id);
	job_finish(s, b, JOB_FAILED, NULL, "b");
	job_finish(s, c, JOB_FAILED, NULL, "c");
	job_finish(s, a, JOB_CANCELLED, NULL, NULL); /* drops b */
	job_finish(s, d, JOB_FAILED, NULL, "d"); /* drops c, not a */
	CHECK(job_store_find(s, a->id) == a);
	CHECK(job_store_find(s, d->id) == d);
	CHECK(job_store_find(s, c_id) == NULL);
	CHECK_EQ_INT(job_store_count(s), 2);
	job_store_free(s);
}

/*
 * A worker's message longer than the reason, in characters of two bytes,
 * or with bytes that are not UTF-8: the reason stays valid UTF-8, so the
 * job can be encoded and is listed with the failed ones.
 */
static void test_reason_utf8(void)
{
	struct job_store *s = job_store_new(10, 100, 600);
	struct gemm_spec spec = spec_for(-1);
	struct job_page failed = { .state = JOB_FAILED, .limit = 10 };
	char text[701];
	struct job *a, *b;
	const char *id;
	uint64_t next;
	json_t *j;
	size_t i;

	for (i = 0; i + 2 < sizeof(text); i += 2)
		memcpy(text + i, "\xc3\xa9", 2); /* é */
	text[i] = '\0';
	CHECK_EQ_INT(job_store_add(s, &spec, false, &a), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &b), 0);
	/* 26 bytes before the é: 511 bytes would end inside one */
	job_finish(s, a, JOB_FAILED, NULL, "worker for GPU %d exited: %s", 10,
		   text);
	CHECK_EQ_INT(strlen(a->reason), 510);
	job_finish(s, b, JOB_FAILED, NULL, "%s", "bad \xff byte");
	CHECK_STREQ(b->reason, "bad \\xff byte");

	j = job_to_json(a);
	CHECK(j != NULL);
	json_decref(j);
	j = job_store_page_json(s, &failed, &next);
	CHECK_EQ_INT(json_array_size(j), 2);
	id = json_string_value(json_object_get(json_array_get(j, 0), "id"));
	CHECK_STREQ(id, a->id);
	json_decref(j);
	job_store_free(s);
}

/*
 * One page from p: its size, its first job's id (or none) and the cursor
 * of its next page (0: last page), which it returns.
 */
static uint64_t check_page(struct job_store *s, const struct job_page *p,
			   size_t size, const struct job *first, uint64_t next)
{
	uint64_t got;
	json_t *page;

	page = job_store_page_json(s, p, &got);
	CHECK_EQ_INT(json_array_size(page), size);
	if (first)
		CHECK_STREQ(json_string_value(json_object_get(
				    json_array_get(page, 0), "id")),
			    first->id);
	CHECK(got == next);
	json_decref(page);
	return got;
}

static void test_pages(void)
{
	struct job_store *s = job_store_new(10, 2, 600);
	struct gemm_spec spec = spec_for(-1);
	struct job_page p = { .state = -1, .limit = 2 };
	struct job *j[5];
	int i;

	for (i = 0; i < 5; i++)
		CHECK_EQ_INT(job_store_add(s, &spec, false, &j[i]), 0);
	/* two pages of two and one of one, in creation order */
	p.after = check_page(s, &p, 2, j[0], j[1]->seq);
	p.after = check_page(s, &p, 2, j[2], j[3]->seq);
	check_page(s, &p, 1, j[4], 0);

	/* a full page with nothing after it has no next */
	p.after = j[2]->seq;
	check_page(s, &p, 2, j[3], 0);

	/* the cursor outlives its job: trimmed jobs do not move it */
	p.after = j[1]->seq;
	for (i = 0; i < 4; i++)
		job_finish(s, j[i], JOB_DONE, NULL, NULL);
	CHECK_EQ_INT(job_store_count(s), 3);
	check_page(s, &p, 2, j[2], j[3]->seq);

	/* a filter counts only the jobs it matches */
	p.after = 0;
	p.state = JOB_QUEUED;
	check_page(s, &p, 1, j[4], 0);
	job_store_free(s);
}

/* A job is found by its Idempotency-Key while kept; "" is no key. */
static void test_keys(void)
{
	struct job_store *s = job_store_new(10, 1, 600);
	struct gemm_spec spec = spec_for(-1);
	struct job_page by_key = { .state = -1,
				   .key = "sweep-7/0",
				   .limit = 10 };
	struct job *a, *b, *c;
	uint64_t next;
	json_t *j;

	CHECK_EQ_INT(job_store_add(s, &spec, false, &a), 0);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &b), 0);
	snprintf(a->key, sizeof(a->key), "sweep-7/0");
	CHECK(job_store_find_key(s, "sweep-7/0") == a);
	CHECK(job_store_find_key(s, "sweep-7/1") == NULL);
	/* b has no key, and "" finds nothing */
	CHECK(job_store_find_key(s, "") == NULL);
	j = job_to_json(a);
	CHECK_STREQ(json_string_value(json_object_get(j, "idempotency_key")),
		    "sweep-7/0");
	json_decref(j);
	j = job_to_json(b);
	CHECK(json_is_null(json_object_get(j, "idempotency_key")));
	json_decref(j);
	/* a listing by key: that job alone */
	j = job_store_page_json(s, &by_key, &next);
	CHECK_EQ_INT(json_array_size(j), 1);
	CHECK_STREQ(
		json_string_value(json_object_get(json_array_get(j, 0), "id")),
		a->id);
	CHECK(next == 0);
	json_decref(j);
	/* past max-kept (1) the key goes with its job */
	job_finish(s, a, JOB_DONE, NULL, NULL);
	job_finish(s, b, JOB_DONE, NULL, NULL);
	CHECK(job_store_find_key(s, "sweep-7/0") == NULL);
	CHECK_EQ_INT(job_store_add(s, &spec, false, &c), 0);
	snprintf(c->key, sizeof(c->key), "sweep-7/0");
	CHECK(job_store_find_key(s, "sweep-7/0") == c);
	job_store_free(s);
}

/*
 * The counts /metrics shows: jobs created and ended by final state since
 * start, the dropped ones too, and the jobs kept now by state.
 */
static void test_counts(void)
{
	struct job_store *s = job_store_new(10, 1, 600);
	struct gemm_spec spec = spec_for(-1), dry = spec_for(-1);
	struct job_counts c;
	struct job *j[4];
	int i;

	dry.dry_run = true;
	job_store_counts(s, &c);
	CHECK_EQ_INT(c.created, 0);
	CHECK_EQ_INT(c.kept[JOB_QUEUED], 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ_INT(job_store_add(s, &spec, false, &j[i]), 0);
	CHECK_EQ_INT(job_store_add(s, &dry, false, &j[3]), 0);
	job_start(s, j[0], NULL);
	job_store_counts(s, &c);
	CHECK_EQ_INT(c.created, 4);
	CHECK_EQ_INT(c.kept[JOB_QUEUED], 3); /* the dry run is queued too */
	CHECK_EQ_INT(c.kept[JOB_RUNNING], 1);
	for (i = JOB_DONE; i < _JOB_STATE_MAX; i++)
		CHECK_EQ_INT(c.ended[i], 0);

	job_finish(s, j[0], JOB_DONE, NULL, NULL);
	job_finish(s, j[1], JOB_FAILED, NULL, "x");
	job_finish(s, j[2], JOB_CANCELLED, NULL, NULL);
	job_finish(s, j[3], JOB_DONE, NULL, "dry run");
	/* a final job's second end is not counted */
	job_finish(s, j[3], JOB_TIMEOUT, NULL, NULL);
	job_store_counts(s, &c);
	CHECK_EQ_INT(c.created, 4);
	CHECK_EQ_INT(c.ended[JOB_DONE], 2);
	CHECK_EQ_INT(c.ended[JOB_FAILED], 1);
	CHECK_EQ_INT(c.ended[JOB_CANCELLED], 1);
	CHECK_EQ_INT(c.ended[JOB_TIMEOUT], 0);
	CHECK_EQ_INT(c.ended[JOB_QUEUED], 0);
	CHECK_EQ_INT(c.ended[JOB_RUNNING], 0);
	/* max-kept 1: only the last to end is kept, as done */
	CHECK_EQ_INT(job_store_count(s), 1);
	CHECK_EQ_INT(c.kept[JOB_DONE], 1);
	CHECK_EQ_INT(c.kept[JOB_FAILED], 0);
	CHECK_EQ_INT(c.kept[JOB_CANCELLED], 0);
	CHECK_EQ_INT(c.kept[JOB_QUEUED], 0);
	CHECK_EQ_INT(c.kept[JOB_RUNNING], 0);
	job_store_free(s);
}

static void test_state_names(void)
{
	CHECK_STREQ(job_state_to_string(JOB_TIMEOUT), "timeout");
	CHECK_EQ_INT(job_state_from_string("cancelled"), JOB_CANCELLED);
	CHECK(job_state_from_string("bogus") < 0);
	CHECK(job_state_is_final(JOB_FAILED));
	CHECK(!job_state_is_final(JOB_RUNNING));
}

int main(void)
{
	RUN_TEST(test_lifecycle);
	RUN_TEST(test_affinity);
	RUN_TEST(test_limits);
	RUN_TEST(test_deadline_cap);
	RUN_TEST(test_keep_none);
	RUN_TEST(test_keep_by_end);
	RUN_TEST(test_dry_run_full_queue);
	RUN_TEST(test_reason_utf8);
	RUN_TEST(test_pages);
	RUN_TEST(test_keys);
	RUN_TEST(test_counts);
	RUN_TEST(test_state_names);
	return check_exit();
}
