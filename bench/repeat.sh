#!/bin/sh
# Repeatability: the same job N times (default 10 x 8192^3 bf16, default
# timing: cold, stopping rule); prints each median and the spread.
#   bench/repeat.sh BUILD_DIR [N] [MxNxK]
#   TIMING='{"cooldown_ms":2000}' bench/repeat.sh ...   (job timing options)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
start_bench_gemmd "$(cd "${1:?usage: repeat.sh BUILD_DIR [N] [MxNxK]}" && pwd)"
n=${2:-10}
size=${3:-8192x8192x8192}
timing=${TIMING:-"{}"}
m=${size%%x*}; rest=${size#*x}; nn=${rest%%x*}; k=${rest#*x}
: >"$bench_tmp/rows"
for _ in $(seq "$n"); do
	curl -s -X POST "$url/v1/jobs?wait=600" \
		-d "{\"m\":$m,\"n\":$nn,\"k\":$k,\"timing\":$timing,\"verify\":{\"enabled\":false}}" |
		tr -d '\n' >>"$bench_tmp/rows"
	echo >>"$bench_tmp/rows"
done
python3 - "$bench_tmp/rows" "$size" <<'PY'
import json, statistics, sys
jobs = [json.loads(l) if l.strip() else {} for l in open(sys.argv[1])]
med = []
for i, j in enumerate(jobs):
    # A run that did not end done is listed with why, and left out of
    # the spread, which says how many it is over.
    if j.get("state") != "done":
        print("run %2d: %s: %s" % (i + 1, j.get("state") or
                                   ("refused" if j else "no answer"),
                                   j.get("reason") or
                                   (j.get("error") or {}).get("message")))
        continue
    t = j["result"]["timing"]
    med.append(t["median_us"])
    print("run %2d: median %9.1f us  %6.1f TFLOP/s  samples %4d  stop %s" %
          (i + 1, t["median_us"], j["result"]["tflops"], t["samples"],
           t["stop_reason"]))
if not med:
    sys.exit("%s: no run ended done" % sys.argv[2])
mean = statistics.mean(med)
print("%s: %d runs%s, medians %.1f..%.1f us, spread (max-min)/mean %.2f %%, "
      "stdev/mean %.2f %%" % (sys.argv[2], len(med),
                              "" if len(med) == len(jobs) else
                              " of %d (the others failed)" % len(jobs),
                              min(med), max(med),
                              100 * (max(med) - min(med)) / mean,
                              100 * statistics.pstdev(med) / mean))
PY
