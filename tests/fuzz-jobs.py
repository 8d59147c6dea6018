#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Random jobs against a running gemmd: every one must either be refused
at validation (4xx, a JSON error naming a field) or run and pass
verification.  A job that fails at launch or in the worker, a wrong D, a
5xx or an answer that is not gemmd's is a finding.

    tests/fuzz-jobs.py --url http://127.0.0.1:8090 --jobs 200 --seed 1

The jobs draw every knob of the job table in README.md: schedule, tile,
stages, cluster shape, raster, swizzle, epilogue, decomposition,
placement, occupancy, pdl, dtype, out_dtype, layout, alpha and beta, on
sizes that are square, ragged, short in K or misaligned.  Most take the
values GET /v1/kernels lists for a kernel of the schedule; a share
(--wild) takes any value of every knob, legal or not.  Inputs are randint, so
every run is compared exactly (a verdict with a tolerance is a finding),
with some normal ones.  Timing is one hot sample: this is about
correctness, not speed.  A schedule that drew ten jobs or more and ran
none of them, or a run in which no job ran, tested nothing: a finding
too.  The table is printed last; exit 1 on any finding, 2 on a usage
error.
"""

import argparse
import json
import random
import sys
import urllib.error
import urllib.request

SCHEDULES = ["ws", "cooperative", "pingpong", "interleaved", "multistage",
             "pipelined"]
CLUSTERS = [[1, 1], [2, 1], [1, 2], [2, 2], [4, 1], [1, 4], [8, 1], [1, 8],
            [2, 4], [4, 2], [3, 1], [16, 1]]


def request(url, method, path, body=None, timeout=600):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def size(rng):
    """One of m, n, k: mostly multiples of 8 (16-byte rows), some not."""
    kind = rng.random()
    if kind < 0.25:
        return rng.choice([8, 16, 64, 128, 256, 512, 1024])
    if kind < 0.55:
        return 8 * rng.randint(1, 200)
    if kind < 0.65:
        return rng.randint(1, 1600)
    if kind < 0.92:
        return rng.choice([1000, 1032, 1500, 2048, 3000])
    if kind < 0.96:
        return 8 * rng.randint(250, 750)  # several tiles a CTA
    return rng.choice([1, 2, 3, 4, 5, 7, 9, 63, 65, 127, 129])


def maybe(rng, p, value):
    return value if rng.random() < p else None


def plausible_kernel(rng, kern, offers):
    """Knobs the chosen kernels list (GET /v1/kernels), mostly legal."""
    k = rng.choice(offers)
    kern["tile"] = "x".join(map(str, k["tile"]))
    if rng.random() < 0.6:
        kern["stages"] = rng.randint(k["min_stages"], k["max_stages"])
    shapes = [c for c in CLUSTERS if c[0] * c[1] <= k["cluster_max"]]
    if rng.random() < 0.6:
        kern["cluster"] = rng.choice(shapes)
    if rng.random() < 0.4:
        kern["epilogue"] = rng.choice(k["epilogues"] + ["auto"])
    if k["persistent"]:
        if rng.random() < 0.3:
            kern["decomposition"] = rng.choice(k["decompositions"])
        if rng.random() < 0.3:
            kern["raster"] = rng.choice(["along_m", "along_n", "auto"])
        if rng.random() < 0.3:
            kern["swizzle"] = rng.choice([1, 2, 4, 8])
        if k["placement"] and rng.random() < 0.2:
            kern["placement"] = "gpc"
        if (kern.get("decomposition", "data_parallel") == "data_parallel"
                and rng.random() < 0.2):
            kern["occupancy"] = rng.choice(["full", "balanced"])
    if k["pdl"] and rng.random() < 0.2:
        kern["pdl"] = True
    return k


def wild_kernel(rng, kern, tiles):
    """Any value of every knob: the planner must refuse what is wrong."""
    opt = {
        "tile": maybe(rng, 0.6, rng.choice(tiles) if tiles else None),
        "stages": maybe(rng, 0.5, rng.randint(1, 10)),
        "cluster": maybe(rng, 0.5, rng.choice(CLUSTERS)),
        "raster": maybe(rng, 0.2, rng.choice(["along_m", "along_n",
                                              "auto"])),
        "swizzle": maybe(rng, 0.2, rng.choice([1, 2, 4, 8])),
        "epilogue": maybe(rng, 0.4, rng.choice(["direct", "tma", "auto"])),
        "decomposition": maybe(rng, 0.2, rng.choice(["data_parallel",
                                                     "stream_k"])),
        "placement": maybe(rng, 0.15, rng.choice(["none", "gpc"])),
        "occupancy": maybe(rng, 0.15, rng.choice(["auto", "full",
                                                  "balanced"])),
        "pdl": maybe(rng, 0.2, rng.choice([True, False])),
    }
    kern.update({k: v for k, v in opt.items() if v is not None})


def make_job(rng, kernels, wild):
    sched = rng.choice(SCHEDULES)
    job = {"m": size(rng), "n": size(rng), "k": size(rng)}
    kern = {"schedule": sched}
    offers = [k for k in kernels if k["schedule"] == sched]
    if offers and rng.random() >= wild:
        k = rng.choice(offers)
        job["dtype"] = k["dtype"]
        job["layout"] = k["layout"]
        offers = [o for o in offers if o["dtype"] == k["dtype"] and
                  o["layout"] == k["layout"]]
        k = plausible_kernel(rng, kern, offers)
        if rng.random() < 0.4:
            job["out_dtype"] = rng.choice(k["outs"])
    else:
        opt = {
            "dtype": maybe(rng, 0.5, rng.choice(["bf16", "fp16"])),
            "out_dtype": maybe(rng, 0.4, rng.choice(["bf16", "fp16",
                                                     "fp32"])),
            "layout": maybe(rng, 0.5, rng.choice(["tn", "nt", "nn", "tt"])),
        }
        job.update({k: v for k, v in opt.items() if v is not None})
        tiles = sorted({"x".join(map(str, k["tile"])) for k in offers})
        wild_kernel(rng, kern, tiles)
    if rng.random() < 0.3:
        job["alpha"] = rng.choice([-1, 2, 3, 0.5, 0])
    if rng.random() < 0.3:
        job["beta"] = rng.choice([1, -2, 0.5, 0])
    job["kernel"] = kern
    job["timing"] = {"mode": "hot", "warmup": 0, "iterations": 1,
                     "cooldown_ms": 0}
    job["verify"] = {"init": "randint" if rng.random() < 0.85 else "normal",
                     "seed": rng.randint(1, 1 << 30)}
    return job


def exact(job):
    """randint, whole alpha and beta, every value below 2^24 (run_exact()
    in daemon/worker/verify.c): compared bit for bit."""
    alpha = float(job.get("alpha", 1))
    beta = float(job.get("beta", 0))
    return (job["verify"]["init"] == "randint" and alpha.is_integer() and
            beta.is_integer() and
            abs(alpha) * 4 * job["k"] + abs(beta) * 2 < 1 << 24)


def judge(job, status, body):
    """(class, detail): refused, passed or a finding."""
    try:
        j = json.loads(body)
    except ValueError:
        return "finding", "HTTP %d, not JSON: %r" % (status, body[:200])
    if 400 <= status < 500:
        err = j.get("error") or {}
        if not err.get("code") or not err.get("message"):
            return "finding", "HTTP %d without a JSON error: %s" % (status,
                                                                   j)
        if not err.get("field"):
            return "finding", "HTTP %d naming no field: %s" % (status, j)
        return "refused", "%d %s %s: %s" % (status, err.get("code"),
                                            err.get("field"),
                                            err.get("message"))
    if status >= 300:
        return "finding", "HTTP %d: %s" % (status, j)
    state = j.get("state")
    if state != "done":
        return "finding", "ended %s: %s" % (state, j.get("error"))
    v = (j.get("result") or {}).get("verify") or {}
    if not v.get("passed") or v.get("unwritten") or v.get("nan_count"):
        keep = {x: v.get(x) for x in ("mismatches", "unwritten", "nan_count",
                                      "inf_count", "first_mismatch")}
        return "finding", "wrong D: %s" % keep
    if exact(job) and (v.get("atol") != 0 or v.get("rtol") != 0):
        return "finding", "randint not compared bit for bit: atol %s, " \
            "rtol %s" % (v.get("atol"), v.get("rtol"))
    return "passed", (j.get("plan") or {}).get("kernel", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8090")
    ap.add_argument("--jobs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--wild", type=float, default=0.2,
                    help="share of jobs with any value of every knob "
                    "(default 0.2); the others take what the kernels list")
    ap.add_argument("--verbose", action="store_true",
                    help="print every job and its outcome")
    a = ap.parse_args()
    if a.jobs < 1:
        ap.error("--jobs must be at least 1")
    url = a.url.rstrip("/")
    status, body = request(url, "GET", "/v1/kernels")
    if status != 200:
        print("GET /v1/kernels: HTTP %d" % status, file=sys.stderr)
        return 1
    kernels = json.loads(body)["kernels"]
    rng = random.Random(a.seed)
    counts = {"refused": 0, "passed": 0, "finding": 0}
    exact_runs = 0
    refusals = {}
    schedules = {}
    for i in range(a.jobs):
        job = make_job(rng, kernels, a.wild)
        status, body = request(url, "POST", "/v1/jobs?wait=300", job)
        cls, detail = judge(job, status, body)
        counts[cls] += 1
        sched = job["kernel"]["schedule"]
        row = schedules.setdefault(sched, [0, 0, 0])
        row[["refused", "passed", "finding"].index(cls)] += 1
        if cls == "refused":
            key = detail.split(": ", 1)[0].split(" ", 1)[1]
            refusals[key] = refusals.get(key, 0) + 1
        if cls == "passed" and exact(job):
            exact_runs += 1
        if cls == "finding" or a.verbose:
            print("%s job %d: %s\n  %s" % (cls.upper(), i, json.dumps(job),
                                           detail), flush=True)
    print("\nrefusals by code and field:")
    for key, n in sorted(refusals.items(), key=lambda x: -x[1]):
        print("  %5d  %s" % (n, key))
    print("\n%-12s %8s %8s %8s" % ("schedule", "refused", "passed",
                                   "finding"))
    for sched in SCHEDULES:
        r = schedules.get(sched, [0, 0, 0])
        print("%-12s %8d %8d %8d" % (sched, r[0], r[1], r[2]))
    print("%-12s %8d %8d %8d   (%d of the passed compared exactly)" % (
        "all", counts["refused"], counts["passed"], counts["finding"],
        exact_runs))
    # A refusal is no finding, but refusals alone test nothing: more than
    # half the jobs of each schedule run, so ten with none run is no luck.
    for sched in SCHEDULES:
        r = schedules.get(sched, [0, 0, 0])
        if sum(r) >= 10 and not r[1]:
            print("FINDING: none of the %d %s jobs ran" % (sum(r), sched))
            counts["finding"] += 1
    if not counts["passed"]:
        print("FINDING: no job ran")
        counts["finding"] += 1
    return 1 if counts["finding"] else 0


if __name__ == "__main__":
    sys.exit(main())
