#!/bin/sh
# Throughput of our kernels through a real gemmd, next to cuBLAS (torch) in
# the same run.  Run on a GPU machine from a build directory:
#   bench/perf.sh BUILD_DIR [SIZES...]      (default: 4096x4096x4096 8192x8192x8192)
# Prints a table last: one row per (size, kernel, stages) plus cuBLAS.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
start_bench_gemmd "$(cd "${1:?usage: perf.sh BUILD_DIR [MxNxK...]}" && pwd)"
shift
sizes=${*:-4096x4096x4096 8192x8192x8192}
dtype=${DTYPE:-bf16}
curl -sf "$url/v1/devices" | python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"]; print("device:", d[0]["name"] if d else "none")'

kernels=$(curl -sf "$url/v1/kernels" | python3 -c "
import json,sys
for k in json.load(sys.stdin)['kernels']:
    if k['dtype'] == '$dtype':
        print('%dx%dx%d:%d' % (*k['tile'], k['max_stages']))")

rows="$bench_tmp/rows"
: >"$rows"
for size in $sizes; do
	m=${size%%x*}; rest=${size#*x}; n=${rest%%x*}; k=${rest#*x}
	for kt in $kernels; do
		tile=${kt%%:*}; max=${kt#*:}
		s=2
		while [ "$s" -le "$max" ]; do
			sleep 1 # cool down between jobs
			curl -sf -X POST "$url/v1/jobs?wait=600" -d "{\"m\":$m,\"n\":$n,\"k\":$k,\"dtype\":\"$dtype\",\"kernel\":{\"tile\":\"$tile\",\"stages\":$s},\"timing\":{\"warmup\":20,\"iterations\":100},\"verify\":{\"init\":\"normal\"}}" |
				python3 -c "
import json,sys
j=json.load(sys.stdin); r=j['result'] or {}
v=r.get('verify',{})
print('%-16s %-12s %-6s %7s %10.1f %8.1f  %s' % ('$size', '$tile', '$s', j['state'], r.get('timing',{}).get('median_us',0), r.get('tflops') or 0, 'pass' if v.get('passed') else 'FAIL'))" >>"$rows"
			s=$((s + 1))
		done
	done
	sleep 1
	python3 "$here/cublas.py" "$dtype" "$size" | python3 -c "
import json,sys
r=json.loads(sys.stdin.readline())
print('%-16s %-12s %-6s %7s %10.1f %8.1f  %s' % ('$size', 'cuBLAS', '-', 'torch', r['median_us'], r['tflops'], '-'))" >>"$rows"
done
printf '%-16s %-12s %-6s %7s %10s %8s  %s\n' size kernel stages state median_us TFLOP/s verify
cat "$rows"
