#!/bin/sh
# Cold against hot timing, and what the stopping rule and telemetry report,
# through a real gemmd.  Run on a GPU machine from a build directory:
#   bench/modes.sh BUILD_DIR [SIZES...]   (default: 256^3 1024^3 4096^3 8192^3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
start_bench_gemmd "$(cd "${1:?usage: modes.sh BUILD_DIR [MxNxK...]}" && pwd)"
shift
sizes=${*:-256x256x256 1024x1024x1024 4096x4096x4096 8192x8192x8192}

printf '%-16s %-5s %9s %8s %7s %6s %-11s %8s %6s %7s %6s %5s\n' size mode median_us TFLOP/s samples batch stop noise% peak% power_W sm_MHz thr
for size in $sizes; do
	m=${size%%x*}; rest=${size#*x}; n=${rest%%x*}; k=${rest#*x}
	for mode in cold hot; do
		curl -s -X POST "$url/v1/jobs?wait=600" -d "{\"m\":$m,\"n\":$n,\"k\":$k,\"timing\":{\"mode\":\"$mode\"}}" |
			python3 -c "
import json,sys
j=json.load(sys.stdin); r=j.get('result') or {}; t=r.get('timing') or {}; te=r.get('telemetry') or {}
def g(d,*ks):
    for k in ks:
        d = (d or {}).get(k)
    return d
f=lambda x,fmt: (fmt % x) if isinstance(x,(int,float)) else '-'
# A job that did not end done has no figures: its state and reason
# (gemmd's message where it was refused) instead.
if j.get('state') != 'done':
    print('%-16s %-5s %s: %s' % ('$size', '$mode', j.get('state') or 'refused', j.get('reason') or (j.get('error') or {}).get('message')))
else:
    print('%-16s %-5s %9s %8s %7s %6s %-11s %8s %6s %7s %6s %5s' % ('$size', '$mode', f(t.get('median_us'),'%.1f'), f(r.get('tflops'),'%.1f'), f(t.get('samples'),'%d'), f(g(t,'method','batch'),'%d'), t.get('stop_reason') or '-', '-' if t.get('noise') is None else '%.3f' % (t['noise']*100), f(g(r,'peak','percent'),'%.1f'), f(g(te,'power_w','mean'),'%.0f'), f(g(te,'sm_clock_mhz','median'),'%.0f'), te.get('throttled_samples','-')))
print(json.dumps({'size':'$size','mode':'$mode','state':j.get('state'),'reason':j.get('reason'),'error':j.get('error'),'result':r}), file=sys.stderr)"
	done
done
