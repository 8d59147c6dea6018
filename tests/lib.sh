# Shared by the shell tests: start a real gemmd on a free loopback port.
# Sourced with GEMMD_BUILDDIR, GEMMD_SRCDIR and GEMMD_KERNEL_DIR set by
# "make check".

: "${GEMMD_BUILDDIR:=$(pwd)}"
: "${GEMMD_SRCDIR:=$GEMMD_BUILDDIR}"
: "${GEMMD_KERNEL_DIR:=$GEMMD_BUILDDIR/kernels}"
GEMMD="$GEMMD_BUILDDIR/daemon/gemmd"
GEMMCTL="$GEMMD_BUILDDIR/client/gemmctl"
GEMMD_WORKER="$GEMMD_BUILDDIR/daemon/gemmd-worker"

TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/gemmd-test.XXXXXX")
GEMMD_PID=
trap 'stop_gemmd; rm -rf "$TEST_TMP"' EXIT
# A test stopped by a signal (GEMMD_TEST_TIMEOUT's SIGTERM, a ^C) cleans
# up too: a shell killed by one runs no EXIT trap, one that exits does.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# python3 resolved once, to the interpreter itself.  Where python3 is a
# version manager's shim (pyenv's is a script that runs "pyenv exec"),
# each call costs a third of a second, and the tests make about a
# thousand: most of the suite's time.  A script on the PATH rather than
# a shell function, so that "timeout python3" takes it too and
# "python3 ... &" leaves python's own pid in $!.
if GEMMD_PYTHON=$(python3 -c 'import sys; print(sys.executable)' \
	2>/dev/null) && [ -x "$GEMMD_PYTHON" ]; then
	export GEMMD_PYTHON
	mkdir "$TEST_TMP/bin" &&
		printf '#!/bin/sh\nexec "$GEMMD_PYTHON" "$@"\n' \
			>"$TEST_TMP/bin/python3" &&
		chmod +x "$TEST_TMP/bin/python3" &&
		PATH=$TEST_TMP/bin:$PATH
fi

fail() {
	echo "FAIL: $*" >&2
	[ -f "$TEST_TMP/gemmd.log" ] && sed 's/^/  gemmd: /' "$TEST_TMP/gemmd.log" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# What GEMMD_VALGRIND=1 and tests/valgrind.test run gemmd and gemmctl
# under: an invalid access, a use of an uninitialised value or a definite
# leak is an error; descriptors left open are listed (valgrind_check).
# The workers are not followed: they are other programs, and the real
# one needs a GPU.
VALGRIND_FLAGS="--tool=memcheck --leak-check=full
	--errors-for-leak-kinds=definite --error-exitcode=99 --track-fds=yes
	--trace-children=no"

# valgrind_wrap NAME PROGRAM: prints the path of a script that runs
# PROGRAM under valgrind, with a log per process in $TEST_TMP/valgrind.
# A script, not a prefix, so that "$GEMMD" works wherever a test runs it:
# after timeout or systemd-socket-activate, or with &, whose $! stays
# the program's (exec keeps the pid).
valgrind_wrap() {
	mkdir -p "$TEST_TMP/valgrind"
	{
		echo '#!/bin/sh'
		echo "exec valgrind" $VALGRIND_FLAGS \
			"--log-file='$TEST_TMP/valgrind/$1.%p.log' '$2' \"\$@\""
	} >"$TEST_TMP/valgrind/$1"
	chmod +x "$TEST_TMP/valgrind/$1"
	echo "$TEST_TMP/valgrind/$1"
}

# valgrind_check: fails the test where the log of a process that has
# ended shows an error, or a descriptor that it opened and left open
# (valgrind 3.19 lists those but counts no error for them).  A fork
# whose exec failed ends with its parent's descriptors, which are not
# its leaks: only a process that no other logged process forked is held
# to them.  Failing logs are printed; checked logs are removed, so that
# it may run again.
valgrind_check() {
	vg_bad=
	vg_pids=$(ls "$TEST_TMP"/valgrind 2>/dev/null |
		sed -n 's/.*\.\([0-9]*\)\.log$/\1/p' | tr '\n' ' ')
	for log in "$TEST_TMP"/valgrind/*.log; do
		[ -f "$log" ] || continue
		grep -q 'ERROR SUMMARY' "$log" || continue
		if awk -v pids=" $vg_pids" '
			/Parent PID: / { forked = index(pids, " " $NF " ") }
			/ERROR SUMMARY: [1-9]/ { bad = 1 }
			/Open (file descriptor|[A-Za-z0-9_]+ socket) [0-9]+/ {
				fd = 1; next }
			fd && NF > 1 {
				if (!forked && !/<inherited from parent>/)
					bad = 1
				fd = 0 }
			END { exit !bad }' "$log"; then
			echo "FAIL: valgrind: $log" >&2
			sed 's/^/  /' "$log" >&2
			vg_bad=1
		fi
		rm -f "$log"
	done
	[ -z "$vg_bad" ] && return 0
	rm -rf "$TEST_TMP"
	exit 1
}

if [ "${GEMMD_VALGRIND:-0}" != 0 ]; then
	command -v valgrind >/dev/null ||
		fail "GEMMD_VALGRIND is set, but valgrind is not installed"
	GEMMD=$(valgrind_wrap gemmd "$GEMMD")
	GEMMCTL=$(valgrind_wrap gemmctl "$GEMMCTL")
fi

# start_gemmd [extra gemmd flags...]: sets GEMMD_URL and GEMMD_PID.
start_gemmd() {
	# Emptied here, not only by the background job's redirection, which
	# may come after the loop below has read the last gemmd's address.
	: >"$TEST_TMP/gemmd.log"
	"$GEMMD" --listen 127.0.0.1:0 --state-dir "$TEST_TMP/state" \
		--kernel-dir "$GEMMD_KERNEL_DIR" --worker "$GEMMD_WORKER" "$@" 9>&- \
		>"$TEST_TMP/gemmd.log" 2>&1 &
	GEMMD_PID=$!
	i=0
	while [ $i -lt 300 ]; do
		addr=$(sed -n 's/.*listening on \([0-9.]*:[0-9]*\).*/\1/p' \
			"$TEST_TMP/gemmd.log" | head -n 1)
		if [ -n "$addr" ]; then
			GEMMD_URL="http://$addr"
			export GEMMD_URL
			return 0
		fi
		kill -0 "$GEMMD_PID" 2>/dev/null || fail "gemmd exited at start"
		sleep 0.1
		i=$((i + 1))
	done
	fail "gemmd did not start listening"
}

# wait_held N: until gemmd holds N requests (?wait) unanswered, so that
# what comes next (a SIGTERM, a DELETE) finds them held, not on the way.
wait_held() {
	wh=0
	until curl -sS "$GEMMD_URL/metrics" 2>/dev/null |
		grep -qx "gemmd_requests_held $1"; do
		wh=$((wh + 1))
		[ $wh -le 300 ] || fail "gemmd did not hold $1 request(s) within 30 s"
		sleep 0.1
	done
}

# worker_field DEV KEY: a field of GET /v1/devices' worker object.
worker_field() {
	http GET /v1/devices | json "j['devices'][$1]['worker']['$2']"
}

# wait_state DEV STATE SECONDS: until GPU DEV's worker is in STATE.
wait_state() {
	ws=0
	while [ "$(worker_field "$1" state)" != "$2" ]; do
		ws=$((ws + 1))
		[ $ws -le $(($3 * 10)) ] ||
			fail "GPU $1 was not $2 after $3 s: $(http GET /v1/devices)"
		sleep 0.1
	done
}

# wait_log PATTERN SECONDS: until gemmd's log has a line that matches.
wait_log() {
	wl=0
	until grep -q -- "$1" "$TEST_TMP/gemmd.log"; do
		wl=$((wl + 1))
		[ $wl -le $(($2 * 10)) ] || fail "no '$1' in the log"
		sleep 0.1
	done
}

# stop_gemmd: SIGTERM to the gemmd start_gemmd started, and wait for it.
# It must end cleanly (status 0): a gemmd that crashes on its way out, or
# that died during the test (a crash after the last request looked at),
# fails the test.
stop_gemmd() {
	if [ -n "$GEMMD_PID" ]; then
		kill -TERM "$GEMMD_PID" 2>/dev/null
		wait "$GEMMD_PID"
		sg_rc=$?
		GEMMD_PID=
		if [ $sg_rc != 0 ]; then
			[ -d "$TEST_TMP/valgrind" ] && valgrind_check
			echo "FAIL: gemmd exited with status $sg_rc" >&2
			[ -f "$TEST_TMP/gemmd.log" ] &&
				sed 's/^/  gemmd: /' "$TEST_TMP/gemmd.log" >&2
			rm -rf "$TEST_TMP"
			exit 1
		fi
	fi
	[ -d "$TEST_TMP/valgrind" ] && valgrind_check
	return 0
}

# ready_worker_pid DEV: the pid of GPU DEV's worker once it is ready
# (it has said hello), within 10 s.  Run in $(...), its fail ends only
# that subshell: call it as pid=$(ready_worker_pid 0) || exit 1.
ready_worker_pid() {
	_i=0
	while :; do
		_body=$(http GET /v1/devices)
		_st=$(echo "$_body" | json "j['devices'][$1]['worker']['state']")
		[ "$_st" = ready ] && break
		[ $_i -lt 100 ] || fail "worker $1 is $_st, not ready"
		sleep 0.1
		_i=$((_i + 1))
	done
	echo "$_body" | json "j['devices'][$1]['worker']['pid']"
}

# http_with HEADER METHOD PATH BODY: http with one more request header,
# "Name: value" (or "Name;" for an empty value).
http_with() {
	curl -sS -o "$TEST_TMP/body" -w '%{http_code}' -X "$2" \
		-H 'Content-Type: application/json' -H "$1" \
		--data-binary "$4" "$GEMMD_URL$3" >"$TEST_TMP/status" ||
		fail "curl $2 $3"
	cat "$TEST_TMP/body"
}

# http METHOD PATH [BODY]: prints the body; the status goes to a file
# because callers run it in a $(...) subshell.
http() {
	if [ $# -ge 3 ]; then
		curl -sS -o "$TEST_TMP/body" -w '%{http_code}' -X "$1" \
			-H 'Content-Type: application/json' \
			--data-binary "$3" "$GEMMD_URL$2" >"$TEST_TMP/status" ||
			fail "curl $1 $2"
	else
		curl -sS -o "$TEST_TMP/body" -w '%{http_code}' -X "$1" \
			"$GEMMD_URL$2" >"$TEST_TMP/status" || fail "curl $1 $2"
	fi
	cat "$TEST_TMP/body"
}

# json EXPR < body: evaluate a python expression on the parsed body "j".
json() {
	python3 -c 'import json,sys
j = json.load(sys.stdin, parse_constant=lambda c: sys.exit("bad token " + c))
v = eval(sys.argv[1])
print("" if v is None else (json.dumps(v) if isinstance(v, (dict, list, bool)) else v))' "$1"
}

expect_status() {
	STATUS=$(cat "$TEST_TMP/status")
	[ "$STATUS" = "$1" ] || fail "$2: HTTP $STATUS, expected $1: $(cat "$TEST_TMP/body")"
}

# expect_error STATUS CODE FIELD METHOD PATH [BODY]
expect_error() {
	st=$1 code=$2 field=$3
	shift 3
	body=$(http "$@")
	expect_status "$st" "$*"
	# One python for the three checks: its start-up (a third of a second
	# on a slow machine) was most of http.test's time, three a call.
	# printf, not echo: dash's echo would eat the backslashes of escapes
	why=$(printf '%s\n' "$body" | python3 -c 'import json,sys
code, field = sys.argv[1:3]
def bad(c):
	sys.exit("bad token " + c)
try:
	e = dict(json.load(sys.stdin, parse_constant=bad)["error"])
except (ValueError, KeyError, TypeError) as x:
	sys.exit("not an error body: %r" % x)
if e.get("code") != code:
	sys.exit("code %s, expected %s" % (e.get("code"), code))
if field and e.get("field") != field:
	sys.exit("field %s, expected %s" % (e.get("field"), field))
if not e.get("message"):
	sys.exit("no message")' "$code" "$field" 2>&1) || fail "$*: $why"
}

# nvidia_gpu_present: the kernel shows an NVIDIA GPU, whatever gemmd's
# probe makes of it.
nvidia_gpu_present() {
	ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1 || [ -e /dev/nvidia0 ]
}

# have_gpu: true when gemmd-worker --probe lists a GPU (its list then in
# $TEST_TMP/probe.json); false, for the caller to skip, only where the
# machine has none.  A probe that fails, answers other than a device
# list, or finds nothing on a machine with a GPU fails the test: it is
# what is under test, and its failure must not pass for "no GPU".
# CUDA_VISIBLE_DEVICES set and a probe that runs and lists none is a
# GPU hidden on purpose.
have_gpu() {
	if "$GEMMD_WORKER" --probe >"$TEST_TMP/probe.json" \
		2>"$TEST_TMP/probe.err"; then
		n=$(json 'len(j["devices"])' <"$TEST_TMP/probe.json") ||
			fail "gemmd-worker --probe: not a device list: $(cat "$TEST_TMP/probe.json")"
		[ "$n" -gt 0 ] && return 0
		[ -n "${CUDA_VISIBLE_DEVICES+set}" ] && return 1
	fi
	nvidia_gpu_present &&
		fail "this machine has an NVIDIA GPU, but gemmd-worker --probe found none: $(cat "$TEST_TMP/probe.err" "$TEST_TMP/probe.json")"
	return 1
}

# gpu_exclusive: hold the machine's GPU for the rest of this test.  make
# check runs tests in parallel; timings compared across runs mean nothing
# while another test loads the same GPU, so GPU tests take turns.
gpu_exclusive() {
	command -v flock >/dev/null || return 0
	exec 9>"${TMPDIR:-/tmp}/gemmd-gpu-tests.lock"
	flock 9
}
