#!/usr/bin/env python3
"""The kernel family against cuBLAS, through a running gemmd.

    bench/family.py URL design [--dtype bf16] [--size 8192x8192x8192]
    bench/family.py URL shapes [--dtype bf16,fp16] [--shapes ...]
    bench/family.py URL final [--dtype bf16,fp16] [--shapes ...]
    bench/family.py URL clusters [--dtype bf16,fp16] [--shapes ...]

design: at one size, every schedule and tile over its stage counts (cluster
1x1, the planner's epilogue), then each one's best stage count over the
cluster shapes and with the other epilogue, so a reader sees what each
design buys.
shapes: per shape and dtype, a search over the family (schedule, tile,
cluster, epilogue at the default stages), then over the winner's
deeper rings, raster and swizzle, every candidate verified with normal
inputs (one whose output is wrong is never picked), then the best configuration timed again with baseline "cublas" (cuBLASLt in the same
job, on the same inputs, the fastest of its top heuristics) in --rounds
jobs (3 unless given), the first verified with normal inputs; the table
gives the medians over the rounds and the range of the per-round ratios
(a row whose rounds did not all run names those its medians leave out,
and why; one whose verified round failed gives no figure).
final: the rounds alone, for the configurations in BEST (the winners of
the last shapes search logged in docs/perf.md), without the search,
taken in passes over the rows: a row's rounds lie minutes apart, so a
spell of fast or slow jobs at the power cap (either side's rate moves by
up to 7 % from one job to the next) falls on many rows once rather than
on one row in every round;
--pdl launches ours with programmatic dependent launch (cuBLASLt is
launched as it launches itself, without).  With --ceiling PATH (which
bench/family.sh passes where the build has bench/ceiling) the final
table also gives each row's rate as a share of what the tensor cores
sustain at the cap with nothing but wgmmas to run, measured by that
program per dtype before the rounds.
clusters: per shape and dtype, BEST's configuration over every cluster
shape its kernel takes, where it has stream-K with the other
decomposition, and where it takes it with kernel.placement "gpc" (its
data-parallel form), and, for a persistent kernel, its data-parallel
form with kernel.occupancy "full" (every cluster that fits, beside the
default's whole waves), each timed in the final rounds' way: the shapes search
times jobs too short for the power cap to bind, and at the cap a
cluster's multicast (fewer L2 bytes) can win where it lost unbound.
The configurations take turns within a round, in an order rotated from
round to round.
With --order separate (the default) each job pauses --cooldown-ms,
times ours, pauses again and times cuBLAS; with --order interleaved it alternates
chunks of their samples.  The table, printed last, also names cuBLAS's
kernel (tile, stages, cluster, split-K), gives our launch as
waves/cl/fit (result.launch: the busiest cluster's work units, the
clusters launched, how many fit at once), and TF/W: TFLOP/s per watt of
ours and of cuBLAS (the job's telemetry: NVML's instant power over the
samples, flushes included; medians over the rounds), which decides the
clock wherever the power cap binds; on small jobs the idle flushes
dominate the mean power and the figure says little.  Timing: cold L2,
the stopping rule with max_noise 1 % and at most 300 ms of GPU time
per job; the final rounds at least 300 ms, so that the power field
(updated every 100 ms) sees each side.
The exit status is 1 where a row of the shapes, final or clusters
table gives no figure or its verified round's output was wrong, or
where the design table's cuBLASLt row has no figure (no configuration
ran, or its job failed); the table is printed either way.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

SHAPES = ("8192x8192x8192 4096x4096x4096 2048x2048x2048 1024x1024x1024 "
          "16384x16384x4096 8192x8192x1024 4096x14336x4096 "
          "14336x4096x4096 8192x1024x8192 512x8192x8192 128x8192x8192")
CLUSTERS = ([1, 1], [2, 1], [1, 2], [2, 2], [4, 1], [1, 4])
TIMING = {"warmup": 5, "min_samples": 10, "min_time_ms": 20,
          "max_time_ms": 300, "max_noise": 0.01}
# The shape search only ranks candidates: a shorter budget per job.
SEARCH = dict(TIMING, max_time_ms=100)
# The final rounds: long enough for a power reading of each side.
FINAL = dict(TIMING, min_time_ms=300, max_time_ms=500)
# The winners of the shapes search of 2026-11-22, session 4 (docs/perf.md):
# schedule, tile, extra kernel fields (no epilogue: the planner's "auto").
# Since 1x1 clusters launch as plain grids (session 5, run 14), the 1x1
# form of a winner replaced it where it measured better in both rounds.
# Stream-K (session 12): the last wave's tiles cut along K, ahead of
# whole tiles in every A/B pair of final rounds at the shapes that keep
# it (at 16384x16384x4096 a balanced grid is the full one: 4096 units
# take 63 rounds on 66 clusters either way).
SK = {"decomposition": "stream_k"}
# Whole tiles on whole waves (kernel.occupancy "balanced", the default
# since session 27) overtook stream-K at 8192^3 bf16 (735 against 717
# TFLOP/s, medians of 8 and 12 jobs), fp16 (696 against 691) and
# 14336x4096x4096 fp16, in sustained rounds on H100s (docs/perf.md,
# session 27, runs 1-2).
BEST = {
    "bf16": {
        "8192x8192x8192": ("cooperative", "128x256x64",
            {"cluster": [2, 1], "raster": "along_m", "swizzle": 8}),
        # At the power cap a 2x1 cluster's multicast beats the plain
        # grid here, 0.5-2.3 % in sustained A/B rounds on both
        # machines (docs/perf.md, session 16); the short search does
        # not reach the cap.
        "4096x4096x4096": ("cooperative", "128x256x64",
            {"cluster": [2, 1], "raster": "along_m", "swizzle": 8}),
        # ws: one tile a CTA either way, and 1.6-1.8 % ahead of
        # cooperative in every round on an H200 (docs/perf.md,
        # session 19, run 8).
        "2048x2048x2048": ("ws", "128x256x64",
            {}),
        "1024x1024x1024": ("pingpong", "64x128x64",
            {"raster": "along_m", "swizzle": 1}),
        "16384x16384x4096": ("cooperative", "128x256x64",
            dict(SK, cluster=[2, 1], raster="along_n", swizzle=8)),
        # Pingpong 128x192 since session 9 (docs/perf.md): both
        # consumers' epilogues hidden behind the other's mainloop; five
        # stages since its consumers share one set of staging buffers
        # (session 11).
        "8192x8192x1024": ("pingpong", "128x192x64",
            {"stages": 5, "raster": "along_n", "swizzle": 8}),
        # On whole waves 128x256 on 2x1 (684.8 TFLOP/s) passed the
        # 256x128 1x2 stream-K kernel (672.7) and its whole tiles (681.7)
        # (docs/perf.md, session 27, run 2).
        "4096x14336x4096": ("cooperative", "128x256x64",
            {"cluster": [2, 1], "raster": "along_n", "swizzle": 8}),
        # Whole tiles: stream-K was 1.6-2.4 % behind in sustained A/B
        # rounds on both machines (docs/perf.md, session 16).
        "14336x4096x4096": ("cooperative", "128x256x64",
            {"cluster": [2, 1], "raster": "along_m", "swizzle": 8}),
        "8192x1024x8192": ("cooperative", "128x256x64",
            {"raster": "along_m", "swizzle": 8}),
        "512x8192x8192": ("ws", "128x256x64",
            {"cluster": [2, 1], "raster": "along_m", "swizzle": 8}),
        # The search's winner ran at the default 4 stages; a deeper
        # ring measured 349 against 283 TFLOP/s (docs/perf.md).
        "128x8192x8192": ("pingpong", "64x128x64",
            {"stages": 9}),
    },
    "fp16": {
        "8192x8192x8192": ("cooperative", "128x256x64",
            {"cluster": [2, 1], "raster": "along_m", "swizzle": 8}),
        "4096x4096x4096": ("cooperative", "128x256x64",
            {}),
        "2048x2048x2048": ("ws", "128x256x64",
            {}),
        "1024x1024x1024": ("pingpong", "64x128x64",
            {"raster": "along_m", "swizzle": 4}),
        # Here and at 8192^3 the search's winners (ws, 256x128) were
        # noise at the power cap: sustained, ws was 0.93-0.96x and
        # cooperative 128x256 0.96-0.99x (docs/perf.md, session 5,
        # run 10).
        "16384x16384x4096": ("cooperative", "128x256x64",
            dict(SK, cluster=[2, 1], raster="along_n", swizzle=8)),
        "8192x8192x1024": ("pingpong", "128x192x64",
            {"stages": 5, "cluster": [2, 1], "raster": "along_n",
             "swizzle": 8}),
        # 2x1: 0.4-1.4 % ahead of 1x1 in sustained rounds on both
        # machines (docs/perf.md, session 16).
        "4096x14336x4096": ("cooperative", "128x256x64",
            {"cluster": [2, 1], "raster": "along_n", "swizzle": 8}),
        "14336x4096x4096": ("cooperative", "128x256x64",
            {"cluster": [2, 1], "raster": "along_m", "swizzle": 8}),
        "8192x1024x8192": ("cooperative", "128x256x64",
            {"raster": "along_n", "swizzle": 1}),
        "512x8192x8192": ("ws", "128x256x64",
            {"raster": "along_n", "swizzle": 4}),
        # The search's winner ran at the default 4 stages; a deeper
        # ring measured 349 against 283 TFLOP/s (docs/perf.md).
        "128x8192x8192": ("pingpong", "64x128x64",
            {"stages": 9}),
    },
}
# The winner and cuBLAS are timed this many times (--rounds), one job
# each, and the medians compared: at the power cap one job's pair drifts
# by several %.
ROUNDS = 3


def post(url, job):
    req = urllib.request.Request(url + "/v1/jobs?wait=600",
                                 data=json.dumps(job).encode(),
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=900) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return {"state": "rejected", "error": json.load(e)}


def kernels(url):
    with urllib.request.urlopen(url + "/v1/kernels") as r:
        return json.load(r)["kernels"]


def tile_str(k):
    return "x".join(str(x) for x in k["tile"])


def tflops_per_watt(result):
    """A result's (ours or the baseline's) TFLOP/s per watt, or None."""
    return (result.get("telemetry") or {}).get("tflops_per_watt")


def run(url, m, n, k, dtype, kern, extra=None, verify=False, timing=TIMING):
    job = {"m": m, "n": n, "k": k, "dtype": dtype,
           "kernel": {"schedule": kern["schedule"], "tile": tile_str(kern)},
           "timing": dict(timing),
           "verify": {"enabled": verify, "init": "normal"}}
    for key, v in (extra or {}).items():
        if key in ("stages", "cluster", "epilogue", "raster", "swizzle",
                   "pdl", "decomposition", "placement", "occupancy"):
            job["kernel"][key] = v
        else:
            job[key] = v
    j = post(url, job)
    r = j.get("result") or {}
    return {
        "state": j.get("state"),
        "tflops": r.get("tflops") or 0.0,
        "median_us": (r.get("timing") or {}).get("median_us") or 0.0,
        "verify": (r.get("verify") or {}).get("passed"),
        "tfw": tflops_per_watt(r),
        "baseline": r.get("baseline"),
        "speedup": r.get("speedup_vs_baseline"),
        "plan": j.get("plan") or {},
        "launch": r.get("launch") or {},
        # Why: gemmd's error where it refused the job, the job's reason
        # where it ended other than done.
        "error": (j.get("error") or {}).get("message")
        or ((j.get("error") or {}).get("error") or {}).get("message")
        or j.get("reason"),
    }


def desc(kern, extra):
    c = extra.get("cluster", [1, 1])
    order = ""
    if "raster" in extra:
        order = " %s/%d" % (extra["raster"], extra["swizzle"])
    return "%s %s s%s c%dx%d %s%s%s%s%s%s" % (
        kern["schedule"], tile_str(kern), extra.get("stages", "def"),
        c[0], c[1], extra.get("epilogue", "auto"), order,
        " sk" if extra.get("decomposition") == "stream_k" else "",
        " gpc" if extra.get("placement") == "gpc" else "",
        " full" if extra.get("occupancy") == "full" else "",
        " pdl" if extra.get("pdl") else "")


def faster(r, best):
    """Whether a run is done and beats the best (extra, result) so far."""
    return r["state"] == "done" and (not best or
                                     r["tflops"] > best[1]["tflops"])


def design_kernel(url, m, n, k, dtype, kern):
    """One kernel's rows of the design comparison: every stage count on
    1x1, the best of them on every other cluster shape it takes, then at
    the best of all these stream-K (where the kernel has it) and the
    other epilogue. Returns the rows and the best (extra, result)."""
    rows, best = [], None

    def one(extra):
        nonlocal best
        r = run(url, m, n, k, dtype, kern, extra)
        rows.append((kern, extra, r))
        if faster(r, best):
            best = (extra, r)

    # The planner's epilogue ("auto": tma where it fits beside the
    # stages): with direct stores rings deeper than 4 stages ran 15 %
    # slower at 8192^3, with tma ones not (docs/perf.md, session 9),
    # and tma is what a job gets by default.
    for s in range(kern["min_stages"], kern["max_stages"] + 1):
        one({"stages": s})
    if not best:
        return rows, None
    stages = best[0]
    for c in CLUSTERS[1:]:
        if c[0] * c[1] <= kern.get("cluster_max", 1):
            one(dict(stages, cluster=c))
    top = best
    if "stream_k" in kern.get("decompositions", []):
        one(dict(top[0], **SK))
    # The other epilogue, where there is one.
    other = {"tma": "direct", "direct": "tma"}.get(
        top[1]["plan"].get("epilogue"))
    if other in kern.get("epilogues", []):
        one(dict(top[0], epilogue=other))
    return rows, best


def design(url, args):
    """Every schedule, tile, stage count and cluster shape of one dtype
    (tn) at one size, cold and unverified, and cuBLASLt timed the same
    way in the job of the fastest row, so that a reader sees what each
    pipeline design buys against the vendor library."""
    m, n, k = (int(x) for x in args.size.split("x"))
    rows, best = [], None
    family = [x for x in kernels(url)
              if x["dtype"] == args.dtype and x["layout"] == "tn"]
    for kern in family:
        krows, kbest = design_kernel(url, m, n, k, args.dtype, kern)
        rows += krows
        if kbest and faster(kbest[1], best and best[1]):
            best = (kern, kbest)
    ref = None
    if best:
        time.sleep(TIMING["cooldown_ms"] / 1000.0)
        ref = run(url, m, n, k, args.dtype, best[0],
                  dict(best[1][0], baseline="cublas"))
    print("design comparison at %s %s (tn, cold L2)" % (args.size,
                                                        args.dtype))
    print("%-44s %8s %10s %8s" % ("config", "state", "median_us",
                                  "TFLOP/s"))
    for kern, extra, r in rows:
        # The epilogue the plan chose, for "auto".
        d = desc(kern, dict(extra, epilogue=r["plan"].get(
            "epilogue", extra.get("epilogue", "auto"))))
        print("%-44s %8s %10.1f %8.1f%s" % (
            d, r["state"], r["median_us"], r["tflops"],
            "" if r["state"] == "done" else "  " + str(r["error"])))
    return print_reference(ref)


def print_reference(ref):
    """cuBLASLt's row of the design table: its timing in the job that
    ran the fastest configuration again, and that job's ratio. One job:
    ours runs straight after cuBLASLt's algorithm trial, the baseline
    after a pause, so the ratio moves by several percent from job to
    job; `final` gives the sustained one."""
    b = (ref or {}).get("baseline") or {}
    if not b.get("tflops"):
        print("%-44s %8s  %s" % ("cuBLASLt (reference)", "-",
                                 (ref or {}).get("error") if ref else
                                 "not run: no configuration ran"))
        return 1
    us = (b.get("timing") or {}).get("median_us") or 0.0
    print("%-44s %8s %10.1f %8.1f  (fastest row again: %.1f, %.3fx)" % (
        "cuBLASLt " + lt_kernel(ref), "done", us, b["tflops"],
        ref["tflops"], ref["speedup"] or 0.0))
    return 0


def candidates(kern):
    """The configurations tried per kernel in the shape search: the
    planner's epilogue ("auto": tma where the kernel has it) and, where
    that is tma, direct stores too, each without a cluster and with 2x1
    and 1x2 where the kernel takes them."""
    cmax = kern.get("cluster_max", 1)
    clusters = [{}] + [{"cluster": c} for c in ([2, 1], [1, 2])
                       if c[0] * c[1] <= cmax]
    epilogues = [{}]
    if "tma" in kern.get("epilogues", []):
        epilogues.append({"epilogue": "direct"})
    return [dict(e, **c) for e in epilogues for c in clusters]


def counted(r):
    """Whether a round has both sides' figures."""
    return r["state"] == "done" and bool(r["tflops"]) and \
        bool((r["baseline"] or {}).get("tflops"))


def merge_rounds(rounds):
    """Medians over the rounds of ours and cuBLAS, and their ratio; the
    verdict of the first (verified) round; which rounds the medians
    leave out (a job that failed), and why."""
    done = [r for r in rounds if counted(r)]
    left = ["round %d %s: %s" % (i + 1, r["state"], r["error"])
            if r["state"] != "done" else "round %d: no figure" % (i + 1)
            for i, r in enumerate(rounds) if not counted(r)]
    if not done or rounds[0]["state"] != "done":
        return dict(rounds[0], state="failed", error="; ".join(left))
    ours = statistics.median(r["tflops"] for r in done)
    theirs = statistics.median(r["baseline"]["tflops"] for r in done)
    ratios = [r["tflops"] / r["baseline"]["tflops"] for r in done]
    return dict(rounds[0], tflops=ours, baseline={"tflops": theirs},
                speedup=ours / theirs, spread=(min(ratios), max(ratios)),
                tfw_pair=(median_of(r["tfw"] for r in done),
                          median_of(tflops_per_watt(r["baseline"])
                                    for r in done)),
                left_out="" if not left else
                "  (medians of %d of %d rounds; %s)" % (
                    len(done), len(rounds), "; ".join(left)))


def median_of(values):
    """The median of the values that are there (NVML may be missing)."""
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def lt_kernel(r):
    """cuBLAS's kernel as its algorithm's configuration describes it."""
    a = (r.get("baseline") or {}).get("algo") or {}
    if not a:
        return "-"
    return "%s s%s c%s k%s" % (a.get("tile"), a.get("stages"),
                               a.get("cluster"), a.get("split_k"))


def final_round(url, m, n, k, dtype, kern, extra, first):
    """One final round of a configuration with cuBLASLt, after the pause;
    the first round of a configuration is verified."""
    time.sleep(TIMING["cooldown_ms"] / 1000.0)
    return run(url, m, n, k, dtype, kern, dict(extra, baseline="cublas"),
               verify=first, timing=FINAL)


def final_rounds(url, m, n, k, dtype, kern, extra, count):
    return [final_round(url, m, n, k, dtype, kern, extra, i == 0)
            for i in range(count)]


def ceiling_cell(r, dtype, ceil):
    """Ours as a share of bench/ceiling's rate for the dtype, or '-'."""
    c = (ceil or {}).get(dtype)
    return "%.1f%%" % (100.0 * r["tflops"] / c) if c else "-"


def waves_cell(r):
    """'waves/clusters/fit' of a run's launch (result.launch), or '-'."""
    la = r.get("launch") or {}
    if la.get("waves") is None:
        return "-"
    return "%g/%s/%s" % (round(la["waves"], 2), la.get("clusters", "-"),
                         la.get("clusters_resident") or "-")


def print_table(table, ceil=None):
    """The table; returns how many of its rows give no figure or failed
    verification."""
    bad = 0
    if ceil:
        print("ceiling (bench/ceiling, wgmmas alone at the cap): %s" % ", ".join(
            "%s %.1f TFLOP/s" % (d, t) for d, t in sorted(ceil.items())))
    print("%-17s %-5s %-46s %8s %8s %7s %13s %9s %6s %7s %11s %s" % (
        "shape", "dtype", "best config", "TFLOP/s", "cuBLAS", "ratio",
        "round ratios", "TF/W", "verify", "of ceil", "waves/cl/fit",
        "cuBLAS kernel"))
    for shape, dtype, d, r in table:
        if not r or r["state"] != "done":
            print("%-17s %-5s %-46s %s" % (shape, dtype, d,
                                           r and r["error"]))
            bad += 1
            continue
        bad += not r["verify"]
        b = r["baseline"] or {}
        lo, hi = r.get("spread", (0.0, 0.0))
        # Without a baseline round, merge_rounds() leaves ours alone.
        tfw = r.get("tfw_pair", (r.get("tfw"), None))
        print("%-17s %-5s %-46s %8.1f %8.1f %6.3fx %6.3f-%5.3f %9s %6s %7s %11s %s%s"
              % (shape, dtype, d, r["tflops"], b.get("tflops") or 0.0,
                 r["speedup"] or 0.0, lo, hi,
                 "/".join("%.2f" % x if x is not None else "-" for x in tfw),
                 "pass" if r["verify"] else "FAIL",
                 ceiling_cell(r, dtype, ceil), waves_cell(r),
                 r.get("lt_kernel", "-"), r.get("left_out", "")))
    return bad


def ceiling(path, dtypes, rest_ms):
    """bench/ceiling's median TFLOP/s per dtype (3 rounds of 400 ms), or
    None where it cannot run (not an SM90 GPU, say): the table then goes
    without the column rather than without its rows."""
    try:
        out = subprocess.run(
            [path, "--dtype", dtypes, "--rounds", "3", "--rest-ms",
             str(rest_ms)], check=True, capture_output=True,
            text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        err = getattr(e, "stderr", None) or str(e)
        print("  ceiling: not measured: %s" % err.strip(), file=sys.stderr,
              flush=True)
        return None
    got = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] in dtypes.split(","):
            got[cells[0]] = float(cells[1].split()[0])
    print("  ceiling: %s" % got, file=sys.stderr, flush=True)
    return got


def best_of(allk, dtype, shape, pdl):
    """BEST's kernel (from the catalog) and extra fields for a shape."""
    if shape not in BEST.get(dtype, {}):
        sys.exit("family.py: BEST has no configuration for %s %s: run "
                 "shapes for it first, and add its winner to BEST" %
                 (shape, dtype))
    sched, tile, extra = BEST[dtype][shape]
    if pdl:
        extra = dict(extra, pdl=True)
    kern = next((x for x in allk if x["dtype"] == dtype and
                 x["layout"] == "tn" and x["schedule"] == sched and
                 tile_str(x) == tile), None)
    if kern is None:
        sys.exit("family.py: the catalog has no %s %s %s kernel (tn), "
                 "which BEST names for %s" % (sched, tile, dtype, shape))
    return kern, extra


def add_row(table, shape, dtype, kern, extra, rounds):
    """A configuration's merged rounds into the table, and its per-round
    TFLOP/s on stderr."""
    table.append((shape, dtype, desc(kern, extra),
                  dict(merge_rounds(rounds), lt_kernel=lt_kernel(rounds[0]))))
    print("  %s %s: %s %s" % (
        shape, dtype, desc(kern, extra),
        [round(x["tflops"], 1) if x["state"] == "done" else x["state"]
         for x in rounds]),
        file=sys.stderr, flush=True)


def best_cells(url, args):
    """Per dtype and shape asked for: (dtype, shape, m, n, k, kern,
    extra), BEST's configuration for it; all looked up before any job
    runs, so that a shape BEST lacks stops the run before it starts."""
    allk = kernels(url)
    cells = []
    for dtype in args.dtype.split(","):
        for shape in args.shapes.split():
            m, n, k = (int(x) for x in shape.split("x"))
            kern, extra = best_of(allk, dtype, shape, args.pdl)
            cells.append((dtype, shape, m, n, k, kern, extra))
    return cells


def final(url, args):
    cells = list(best_cells(url, args))
    ceil = (ceiling(args.ceiling, args.dtype, args.cooldown_ms)
            if args.ceiling else None)
    rounds = [[] for _ in cells]
    for i in range(args.rounds):
        for cell, r in zip(cells, rounds):
            dtype, shape, m, n, k, kern, extra = cell
            r.append(final_round(url, m, n, k, dtype, kern, extra, i == 0))
            print("  pass %d: %s %s: %s" % (
                i + 1, shape, dtype, "%.1f / %.1f" % (
                    r[-1]["tflops"],
                    (r[-1]["baseline"] or {}).get("tflops") or 0.0)
                if r[-1]["state"] == "done" else
                "%s: %s" % (r[-1]["state"], r[-1]["error"])),
                file=sys.stderr, flush=True)
    table = []
    for cell, r in zip(cells, rounds):
        dtype, shape, m, n, k, kern, extra = cell
        add_row(table, shape, dtype, kern, extra, r)
    return print_table(table, ceil)


def variants(kern, extra):
    """extra first, then on every other cluster shape the kernel takes,
    then with the other decomposition where the kernel has stream-K,
    then placed by GPC where the kernel takes it (data-parallel only),
    then a persistent data-parallel form on every cluster that fits
    (occupancy "full": the last wave partial)."""
    out = [extra]
    for c in CLUSTERS:
        if c != extra.get("cluster", [1, 1]) and \
                c[0] * c[1] <= kern.get("cluster_max", 1):
            out.append(dict(extra, cluster=c))
    if "stream_k" in kern.get("decompositions", []):
        other = {x: v for x, v in extra.items() if x != "decomposition"}
        if extra.get("decomposition") != "stream_k":
            other.update(SK)
        out.append(other)
    if kern.get("placement") and extra.get("placement") != "gpc":
        placed = {x: v for x, v in extra.items() if x != "decomposition"}
        out.append(dict(placed, placement="gpc"))
    if kern.get("persistent"):
        dp = {x: v for x, v in extra.items() if x != "decomposition"}
        out.append(dict(dp, occupancy="full"))
    return out


def turns(url, m, n, k, dtype, kern, configs, count):
    """count final rounds of each configuration, with cuBLASLt; within
    a round they take turns, in an order rotated from round to round."""
    rounds = [[] for _ in configs]
    for i in range(count):
        turn = i % len(configs)
        for j in list(range(turn, len(configs))) + list(range(turn)):
            rounds[j].append(final_round(url, m, n, k, dtype, kern,
                                         configs[j], i == 0))
    return rounds


def clusters(url, args):
    table = []
    for dtype, shape, m, n, k, kern, extra in best_cells(url, args):
        configs = variants(kern, extra)
        rounds = turns(url, m, n, k, dtype, kern, configs, args.rounds)
        for e, r in zip(configs, rounds):
            add_row(table, shape, dtype, kern, e, r)
    return print_table(table)


def shapes(url, args):
    table = []
    allk = kernels(url)

    def search(kern, extra):
        """A candidate's job, verified: its result, or None where it did
        not run or its output was wrong (in why), which no pick may
        take however fast it ran."""
        nonlocal why
        r = run(url, m, n, k, dtype, kern, extra, verify=True,
                timing=SEARCH)
        if r["state"] != "done":
            why = "%s, %s" % (r["state"], r["error"])
        elif r["verify"] is not True:
            why = "verification failed"
        else:
            return r
        return None

    for dtype in args.dtype.split(","):
        family = [x for x in allk
                  if x["dtype"] == dtype and x["layout"] == "tn"]
        for shape in args.shapes.split():
            m, n, k = (int(x) for x in shape.split("x"))
            best, why = None, "no candidate"
            for kern in family:
                for extra in candidates(kern):
                    r = search(kern, extra)
                    if r and (not best or r["tflops"] > best[2]["tflops"]):
                        best = (kern, extra, r)
            if not best:
                table.append((shape, dtype, "none", {
                    "state": "failed",
                    "error": "no candidate ran and passed (the last: %s)"
                    % why}))
                continue
            # Deeper rings than the default (at most 4): small and skinny
            # problems, one or two tiles per CTA, want more.
            for st in sorted({6, best[0]["max_stages"]}):
                if st <= 4 or st > best[0]["max_stages"]:
                    continue
                extra = dict(best[1], stages=st)
                r = search(best[0], extra)
                if r and r["tflops"] > best[2]["tflops"]:
                    best = (best[0], extra, r)
            # The winner's work order: raster and swizzle.
            for raster in ("along_m", "along_n"):
                for sw in (1, 4, 8):
                    extra = dict(best[1], raster=raster, swizzle=sw)
                    r = search(best[0], extra)
                    if r and r["tflops"] > best[2]["tflops"]:
                        best = (best[0], extra, r)
            kern = best[0]
            rounds = final_rounds(url, m, n, k, dtype, kern, best[1],
                                  args.rounds)
            add_row(table, shape, dtype, kern, best[1], rounds)
    return print_table(table)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url")
    p.add_argument("what", choices=("design", "shapes", "final",
                                    "clusters"))
    p.add_argument("--dtype", default=None)
    p.add_argument("--size", default="8192x8192x8192")
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--order", default="separate",
                   choices=("separate", "interleaved"))
    p.add_argument("--cooldown-ms", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=ROUNDS,
                   help="shapes, final, clusters: jobs per configuration "
                   "with cuBLAS (default %d)" % ROUNDS)
    p.add_argument("--pdl", action="store_true",
                   help="final, clusters: launch ours with programmatic "
                   "dependent launch (kernel.pdl)")
    p.add_argument("--ceiling", default=None, metavar="PATH",
                   help="final: bench/ceiling, whose rate per dtype the "
                   "table gives each row a share of")
    args = p.parse_args()
    if args.rounds < 1:
        p.error("--rounds: at least one job per configuration")
    # Each shape before any job: not one that stops the run after the
    # search of those before it, with no table.
    for shape in [args.size] + args.shapes.split():
        dims = shape.split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0
                                     for d in dims):
            p.error("%r: not a shape MxNxK" % shape)
    # The jobs that time cuBLAS next to ours, in every timing mode: the
    # final rounds' pause between the two sides is this one too.
    for timing in (TIMING, SEARCH, FINAL):
        timing.update(baseline_order=args.order,
                      cooldown_ms=args.cooldown_ms)
    if args.dtype is None:
        args.dtype = "bf16" if args.what == "design" else "bf16,fp16"
    bad = {"design": design, "shapes": shapes, "final": final,
           "clusters": clusters}[args.what](url=args.url, args=args)
    if bad:
        sys.exit("family.py: %s" % ("no cuBLASLt figure"
                                    if args.what == "design" else
                                    "%d row(s) without a figure or with "
                                    "a wrong output" % bad))


if __name__ == "__main__":
    main()
