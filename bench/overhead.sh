#!/bin/sh
# The daemon's own overhead, end to end through HTTP: a dry run, and a tiny
# GPU job (256^3, one timed launch, no verification, no cool-down).  For
# the GPU job, overhead = client round trip - time the job spent in the
# worker (finished_at - started_at).  Prints a table last.
#   bench/overhead.sh BUILD_DIR [N]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
start_bench_gemmd "$(cd "${1:?usage: overhead.sh BUILD_DIR [N]}" && pwd)"
n=${2:-50}

rtt() { # rtt BODY -> "seconds job-json" on one line
	curl -s -o "$bench_tmp/out" -w '%{time_total}' -X POST \
		"$url/v1/jobs?wait=60" -d "$1"
	printf ' '
	tr -d '\n' <"$bench_tmp/out"
	echo
}

dry='{"m":256,"n":256,"k":256,"dry_run":true}'
tiny='{"m":256,"n":256,"k":256,"timing":{"warmup":1,"iterations":1,"cooldown_ms":0},"verify":{"enabled":false}}'
: >"$bench_tmp/dry"
: >"$bench_tmp/tiny"
for _ in $(seq "$n"); do rtt "$dry" >>"$bench_tmp/dry"; done
for _ in $(seq "$n"); do rtt "$tiny" >>"$bench_tmp/tiny"; done

python3 - "$bench_tmp/dry" "$bench_tmp/tiny" <<'PY'
import json, statistics, sys
from datetime import datetime

def ts(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()

def load(path):
    rows = []
    for line in open(path):
        t, body = line.split(" ", 1)
        rows.append((float(t) * 1e3, json.loads(body)))
    return rows

dry = load(sys.argv[1])
tiny = load(sys.argv[2])
bad = [j for _, j in dry + tiny if j.get("state") != "done"]
if bad:
    j = bad[0]
    sys.exit("overhead.sh: %d of %d jobs did not end done; the first: %s: %s"
             % (len(bad), len(dry + tiny), j.get("state"),
                (j.get("error") or {}).get("message") or j.get("reason")
                or json.dumps(j)[:200]))
rt_dry = [t for t, _ in dry]
rt = [t for t, _ in tiny]
worker = [(ts(j["finished_at"]) - ts(j["started_at"])) * 1e3 for _, j in tiny]
gpu = [j["result"]["timing"]["median_us"] / 1e3 for _, j in tiny]
over = [a - b for a, b in zip(rt, worker)]
med = statistics.median
print("%-34s %10s %10s" % ("what (ms)", "median", "p90"))
p90 = lambda v: sorted(v)[int(0.9 * (len(v) - 1))]
for name, v in (("dry run, HTTP round trip", rt_dry),
                ("256^3 job, HTTP round trip", rt),
                ("256^3 job, time in the worker", worker),
                ("256^3 job, GPU time of the launch", gpu),
                ("256^3 job, daemon overhead", over)):
    print("%-34s %10.3f %10.3f" % (name, med(v), p90(v)))
PY
