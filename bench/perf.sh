#!/bin/sh
# Throughput of our kernels through a real gemmd, next to cuBLAS (torch) in
# the same run.  Run on a GPU machine from a build directory:
#   bench/perf.sh BUILD_DIR [SIZES...]      (default: 4096x4096x4096 8192x8192x8192)
# Prints a table last: one row per (size, kernel, stages) plus cuBLAS.
# Both sides hot (L2 left warm, launches back to back), 20 warm-up and
# 100 timed launches: gemmd's default, cold, flushes the L2 before each
# launch of ours, and cublas.py times torch hot.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
start_bench_gemmd "$(cd "${1:?usage: perf.sh BUILD_DIR [MxNxK...]}" && pwd)"
shift
sizes=${*:-4096x4096x4096 8192x8192x8192}
dtype=${DTYPE:-bf16}
curl -sf "$url/v1/devices" | python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"]; print("device:", d[0]["name"] if d else "none")'

# schedule:tile:min_stages:max_stages of each tn kernel of the dtype,
# the layout the jobs below run.
kernels=$(curl -sf "$url/v1/kernels" | python3 -c "
import json,sys
for k in json.load(sys.stdin)['kernels']:
    if k['dtype'] == '$dtype' and k['layout'] == 'tn':
        print('%s:%dx%dx%d:%d:%d' % (k['schedule'], *k['tile'],
                                     k['min_stages'], k['max_stages']))")

rows="$bench_tmp/rows"
: >"$rows"
for size in $sizes; do
	m=${size%%x*}; rest=${size#*x}; n=${rest%%x*}; k=${rest#*x}
	for kt in $kernels; do
		sched=${kt%%:*}; kt=${kt#*:}
		tile=${kt%%:*}; kt=${kt#*:}
		s=${kt%%:*}; max=${kt#*:}
		while [ "$s" -le "$max" ]; do
			sleep 1 # cool down between jobs
			# Not -f: a job gemmd refuses is a row, with its message.
			curl -s -X POST "$url/v1/jobs?wait=600" -d "{\"m\":$m,\"n\":$n,\"k\":$k,\"dtype\":\"$dtype\",\"kernel\":{\"schedule\":\"$sched\",\"tile\":\"$tile\",\"stages\":$s},\"timing\":{\"mode\":\"hot\",\"warmup\":20,\"iterations\":100},\"verify\":{\"init\":\"normal\"}}" |
				python3 -c "
import json,sys
j=json.load(sys.stdin); r=j.get('result') or {}
row='%-16s %-24s %-6s' % ('$size', '$sched $tile', '$s')
if j.get('state') != 'done':
    print(row, '%7s' % (j.get('state') or 'refused'), j.get('reason') or (j.get('error') or {}).get('message'))
else:
    print(row, '%7s %10.1f %8.1f  %s' % (j['state'], r['timing']['median_us'], r['tflops'], 'pass' if (r.get('verify') or {}).get('passed') else 'FAIL'))" >>"$rows"
			s=$((s + 1))
		done
	done
	sleep 1
	python3 "$here/cublas.py" --warmup 20 --iters 100 "$dtype" "$size" | python3 -c "
import json,sys
r=json.loads(sys.stdin.readline())
print('%-16s %-24s %-6s %7s %10.1f %8.1f  %s' % ('$size', 'cuBLAS', '-', 'torch', r['median_us'], r['tflops'], '-'))" >>"$rows"
done
printf '%-16s %-24s %-6s %7s %10s %8s  %s\n' size kernel stages state median_us TFLOP/s verify
cat "$rows"
