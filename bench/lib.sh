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
	for _ in $(seq 100); do
		curl -sf "$url/v1/devices" | grep -q '"state": "ready"' && break
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
