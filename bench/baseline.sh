#!/bin/sh
# gemmd's cuBLASLt baseline against torch's a @ b.t() (bench/cublas.py),
# the same matmul timed the same way (hot, one event pair per launch, 20
# warm-up, 100 timed).  Like with like: gemmd runs "cublas_default",
# cuBLASLt's first heuristic choice, which is what cuBLAS (and so torch)
# runs; "cublas" would time the fastest of the top 8 instead, 4-7 %
# faster than torch.  The two are interleaved ROUNDS times so that the
# card's drift in clocks and power hits both alike; the table, printed
# last, shows the median over rounds of each, their difference and
# whether they agree within 3 %.
#   bench/baseline.sh BUILD_DIR [ROUNDS] [SIZES...]
#   GEMMD_BASELINE=cublas bench/baseline.sh ...   (the fastest instead)
#   GEMMD_TORCH_BLAS=cublaslt bench/baseline.sh ...  (torch through cuBLASLt)
#   GEMMD_BENCH_PAUSE=5 bench/baseline.sh ...  (idle seconds before each,
#   whole seconds 0 to 5, 2 by default)
#   GEMMD_BASELINE_ORDER=interleaved bench/baseline.sh ...  (timing.
#   baseline_order of the gemmd jobs; separate by default)
# Then the kernel each ran: cuBLASLt's configuration in gemmd, the kernel
# names torch's profiler saw.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
# Idle seconds before each measurement, so each starts from a cooled card.
pause=${GEMMD_BENCH_PAUSE:-2}
# The jobs carry it as timing.cooldown_ms, which gemmd takes up to 5000.
case $pause in
[0-5]) ;;
*) echo "baseline.sh: GEMMD_BENCH_PAUSE '$pause': whole seconds 0 to 5" >&2
	exit 2 ;;
esac
start_bench_gemmd "$(cd "${1:?usage: baseline.sh BUILD_DIR [ROUNDS] [SIZES]}" && pwd)"
rounds=${2:-3}
shift $(($# > 1 ? 2 : 1))
sizes=${*:-4096x4096x4096 8192x8192x8192}
baseline=${GEMMD_BASELINE:-cublas_default}
# gemmd times our kernel too: separate puts that pause between it and
# cuBLASLt; interleaved alternates them.
order=${GEMMD_BASELINE_ORDER:-separate}

: >"$bench_tmp/rows"
: >"$bench_tmp/kernels"
: >"$bench_tmp/algo"
for size in $sizes; do
	m=${size%%x*}; rest=${size#*x}; n=${rest%%x*}; k=${rest#*x}
	for _ in $(seq "$rounds"); do
		sleep "$pause"
		# Not -f: the body of a job gemmd refuses says why.
		g=$(curl -s -X POST "$url/v1/jobs?wait=600" -d "{\"m\":$m,\"n\":$n,\"k\":$k,\"baseline\":\"$baseline\",\"timing\":{\"mode\":\"hot\",\"warmup\":20,\"iterations\":100,\"cooldown_ms\":$((pause * 1000)),\"baseline_order\":\"$order\"},\"verify\":{\"enabled\":false}}" |
			python3 -c 'import json,sys
j = json.load(sys.stdin)
if "error" in j:
    sys.exit("gemmd refused the job: %s" % j["error"]["message"])
if j.get("state") != "done":
    sys.exit("gemmd job %s: %s" % (j.get("state"), j.get("reason") or j))
b = j["result"]["baseline"]
print(b["timing"]["median_us"], b["algo_id"], b["mode"], b["heuristics_tried"])
print(sys.argv[1], "gemmd:", b.get("algo"), file=open(sys.argv[2], "a"))' "$size" "$bench_tmp/algo")
		sleep "$pause"
		t=$(python3 "$here/cublas.py" --warmup 20 --iters 100 bf16 "$size" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["median_us"])')
		echo "$size $g $t" >>"$bench_tmp/rows"
	done
	# Which kernel each ran: cuBLASLt's configuration (as the first
	# round's job gave it), torch's profiler.
	head -n 1 "$bench_tmp/algo" >>"$bench_tmp/kernels"
	: >"$bench_tmp/algo"
	echo "$size torch: $(python3 "$here/cublas.py" --kernels bf16 "$size" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["kernels"])')" >>"$bench_tmp/kernels"
done
cat "$bench_tmp/kernels"
python3 - "$bench_tmp/rows" "$baseline" "$order" "$pause" <<'PY'
import statistics, sys
rows = {}
modes = set()
for line in open(sys.argv[1]):
    size, g, algo, mode, tried, t = line.split()
    rows.setdefault(size, []).append((float(g), int(algo), float(t)))
    modes.add("%s, %s heuristic(s)" % (mode, tried))
print("gemmd baseline \"%s\" (mode %s, order %s) against torch a @ b.t(), "
      "bf16, hot, %s s idle before each"
      % (sys.argv[2], "; ".join(sorted(modes)), sys.argv[3], sys.argv[4]))
print("%-16s %6s %12s %12s %8s %s" % ("size", "rounds", "gemmd_us", "torch_us", "diff_%", "within_3%"))
for size, r in rows.items():
    g = statistics.median(x[0] for x in r)
    t = statistics.median(x[2] for x in r)
    d = 100 * (g - t) / t
    print("%-16s %6d %12.1f %12.1f %8.2f %s   (algo ids %s; per round %s)" % (
        size, len(r), g, t, d, "yes" if abs(d) <= 3 else "NO",
        sorted(set(x[1] for x in r)),
        ", ".join("%.0f/%.0f" % (x[0], x[2]) for x in r)))
PY
