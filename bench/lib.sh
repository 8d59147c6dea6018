# Shared by the bench scripts.

# bench_gemmd_wait LOG: wait for the gemmd logging to LOG to listen and
# its workers to come up, so that nothing is timed against a start-up;
# sets $url.
bench_gemmd_wait() {
	url=""
	for _ in $(seq 100); do
		# The log may not be there yet: gemmd's shell, in the
		# background, opens it.  Not an error for set -e.
		url=$(sed -n 's/.*listening on \(.*\)$/http:\/\/\1/p' "$1" \
			2>/dev/null) || url=""
		[ -n "$url" ] && curl -sf "$url/healthz" >/dev/null && break
		sleep 0.2
	done
	[ -n "$url" ] || { echo "gemmd ($1) did not start" >&2; exit 1; }
	# Until no GPU's worker is still to come up.  A gemmd that has no
	# GPU stops the bench here: each of its jobs would be refused (it
	# used to wait 20 s for a ready that could not come, then send
	# them all).
	for _ in $(seq 100); do
		left=$(curl -sf "$url/v1/devices" | python3 -c 'import json, sys
d = json.load(sys.stdin)["devices"]
print(sum(x["worker"]["state"] != "ready" for x in d) if d else "none")') || left=""
		if [ "$left" = none ]; then
			echo "bench: gemmd has no GPU, and would refuse every job: $(grep -m1 'No GPUs' "$1")" >&2
			exit 1
		fi
		[ "$left" = 0 ] && break
		sleep 0.2
	done
}

# start_bench_gemmd BUILD_DIR: a gemmd from a build directory on a free
# loopback port; sets $url, and stops it on exit.
start_bench_gemmd() {
	bench_tmp=$(mktemp -d)
	"$1/daemon/gemmd" --listen 127.0.0.1:0 --state-dir "$bench_tmp/state" \
		>"$bench_tmp/log" 2>&1 &
	bench_pid=$!
	trap 'kill $bench_pid 2>/dev/null; rm -rf "$bench_tmp"' EXIT
	bench_gemmd_wait "$bench_tmp/log"
}
