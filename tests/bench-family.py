#!/usr/bin/env python3
"""bench/family.py's picks and arithmetic on gemmd answers made up here
(no gemmd, no GPU): its post() and kernels() are replaced by a fake
that answers each job from a script, and what the modes print is
checked against figures worked out by hand.

    tests/bench-family.py SRCDIR
"""
import contextlib
import io
import sys
import types

sys.path.insert(0, sys.argv[1] + "/bench")
import family  # noqa: E402

KERNELS = [
    {"schedule": "cooperative", "dtype": "bf16", "layout": "tn",
     "tile": [128, 256, 64], "min_stages": 2, "max_stages": 4,
     "cluster_max": 8, "epilogues": ["direct", "tma"],
     "decompositions": ["data_parallel", "stream_k"], "persistent": True,
     "placement": True, "pdl": True},
    {"schedule": "pingpong", "dtype": "bf16", "layout": "tn",
     "tile": [64, 128, 64], "min_stages": 2, "max_stages": 9,
     "cluster_max": 8, "epilogues": ["direct", "tma"],
     "decompositions": ["data_parallel"], "persistent": True,
     "placement": True, "pdl": True},
]
failures = []
# The jobs the last mode() posted, there even where the mode exited.
family_jobs = []


def check(what, got, want):
    if got != want:
        failures.append("%s: got %r, want %r" % (what, got, want))


def done(tflops, job, base=None):
    """A job that ended done at tflops (and base for cuBLASLt)."""
    v = job.get("verify", {})
    r = {"tflops": tflops, "timing": {"median_us": 1e6 / tflops},
         "verify": {"checked": True, "passed": True}
         if v.get("enabled") else {"checked": False},
         "launch": {}}
    if base is not None:
        r["baseline"] = {"tflops": base, "timing": {"median_us": 1e6 / base}}
        r["speedup_vs_baseline"] = tflops / base
    return {"state": "done", "reason": None, "result": r, "plan": {}}


def failed(reason):
    return {"state": "failed", "reason": reason, "result": None,
            "plan": {}}


def mode(what, answer, **kw):
    """Run family.py's mode what with answer(job) as gemmd; its table."""
    global family_jobs
    jobs = family_jobs = []

    def post(url, job):
        jobs.append(job)
        return answer(job, jobs)

    family.post = post
    family.kernels = lambda url: KERNELS
    family.time.sleep = lambda s: None
    args = dict(dtype="bf16", shapes="4096x4096x4096", rounds=3,
                pdl=False, ceiling=None, cooldown_ms=0, order="separate",
                size="1024x1024x1024")
    args.update(kw)
    for t in (family.TIMING, family.SEARCH, family.FINAL):
        t.update(baseline_order=args["order"], cooldown_ms=args["cooldown_ms"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        (what if callable(what) else getattr(family, what))(
            "http://fake", types.SimpleNamespace(**args))
    return out.getvalue(), jobs


def row(table, start):
    rows = [x for x in table.splitlines() if x.startswith(start)]
    check("rows starting %r in\n%s" % (start, table), len(rows), 1)
    return rows[0].split() if rows else ["(no row)"] * 20


# final, three rounds, the second failed: the medians and the ratios
# are of rounds 1 and 3, and the row says that round 2 is left out.
def final_answer(job, jobs):
    n = len(jobs)
    if n == 2:
        return failed("injected")
    return done({1: 700.0, 3: 720.0}[n], job, {1: 710.0, 3: 690.0}[n])


table, jobs = mode("final", final_answer)
check("final: jobs", len(jobs), 3)
check("final: verified rounds", [j["verify"]["enabled"] for j in jobs],
      [True, False, False])
cells = row(table, "4096x4096x4096")
# ours median(700, 720) = 710, cuBLAS median(710, 690) = 700, 710/700;
# per round 700/710 and 720/690.
check("final: ours, cuBLAS, ratio, round ratios", cells[8:12],
      ["710.0", "700.0", "1.014x", "0.986-1.043"])
check("final: rounds left out", " ".join(cells[-10:]),
      "(medians of 2 of 3 rounds; round 2 failed: injected)")

# Every round done: nothing is said of rounds left out.
table, jobs = mode("final", lambda job, jobs: done(700.0, job, 700.0))
check("final, all done: the row's end", row(table, "4096x4096x4096")[-1],
      "-")

# The verified round failed: the row gives no figure, and says why.
table, jobs = mode("final", lambda job, jobs: failed("injected")
                   if len(jobs) == 1 else done(700.0, job, 700.0))
check("final, first round failed", " ".join(row(table, "4096x4096x4096")),
      "4096x4096x4096 bf16 cooperative 128x256x64 sdef c2x1 auto "
      "along_m/8 round 1 failed: injected")



# shapes: cooperative on a 1x2 cluster is the fastest candidate, but its
# output is wrong; the pick must pass it over for the next fastest, 2x1,
# and then take the best work order of that one.
def shapes_answer(job, jobs):
    kern = job["kernel"]
    broken = kern.get("cluster") == [1, 2]
    if broken and job["verify"]["enabled"]:
        r = done(900.0, job, 700.0 if "baseline" in job else None)
        r["result"]["verify"]["passed"] = False
        return r
    rate = 900.0 if broken else \
        {"cooperative": 700.0, "pingpong": 500.0}[kern["schedule"]]
    rate += 10.0 if kern.get("cluster") == [2, 1] else 0.0
    rate += 5.0 if (kern.get("raster"), kern.get("swizzle")) == \
        ("along_n", 4) else 0.0
    return done(rate, job, 700.0 if "baseline" in job else None)


table, jobs = mode("shapes", shapes_answer, rounds=1)
check("shapes: the pick", " ".join(row(table, "4096x4096x4096")[2:8]),
      "cooperative 128x256x64 sdef c2x1 auto along_n/4")
check("shapes: its verdict", row(table, "4096x4096x4096")[13], "pass")

# A shape BEST has no winner for, or a kernel the catalog lacks: a
# message before any job, not a traceback.
for shape, kerns, says in (("100x100x100", KERNELS, "BEST has no"),
                           ("4096x4096x4096", [], "the catalog has no")):
    try:
        family.best_of(kerns, "bf16", shape, False)
        check("best_of %s: exits" % shape, "returned", "exit")
    except SystemExit as e:
        check("best_of %s: says" % shape, says in str(e), True)

# In clusters and final alike, before any job: not after the rows
# of the shapes before it have run, with no table for them.
for what in ("clusters", "final"):
    try:
        table, jobs = mode(what, lambda job, jobs: done(700.0, job, 700.0),
                           shapes="4096x4096x4096 100x100x100", rounds=1)
        check("%s, a shape BEST lacks: exits" % what, "returned", "exit")
    except SystemExit as e:
        check("%s, a shape BEST lacks: says" % what,
              "BEST has no" in str(e), True)
        check("%s, a shape BEST lacks: jobs run first" % what,
              len(family_jobs), 0)


# The exit status of family.py itself: 0 where every row has its
# figures, 1 where a row has none or its output was wrong (the table
# printed either way).
def status(what, answer, shapes="4096x4096x4096"):
    argv = sys.argv
    sys.argv = ["family.py", "http://fake", what, "--dtype", "bf16",
                "--shapes", shapes, "--cooldown-ms", "0"]
    try:
        mode(lambda url, args: family.main(), answer)
    except SystemExit as e:
        return e.code
    finally:
        sys.argv = argv
    return 0


def wrong(job, jobs):
    r = done(700.0, job, 700.0)
    if job["verify"]["enabled"]:
        r["result"]["verify"]["passed"] = False
    return r


check("final exit, all done", status("final", lambda job, jobs:
                                     done(700.0, job, 700.0)), 0)
check("final exit, all failed", bool(status(
    "final", lambda job, jobs: failed("injected"))), True)
check("final exit, wrong output", bool(status("final", wrong)), True)

# A shape that is not MxNxK stops shapes before the search of the
# shapes before it, not with a traceback after it.
with contextlib.redirect_stderr(io.StringIO()):
    check("shapes, a bad shape: exit", status(
        "shapes", lambda job, jobs: done(700.0, job),
        "4096x4096x4096 1024x1024"), 2)
check("shapes, a bad shape: jobs run first", len(family_jobs), 0)

if failures:
    sys.exit("\n".join(failures))
