#!/bin/sh
# The whole correctness cross product, tests/gpu-gemm --full, over the
# catalog: one kernel at a time on each GPU, a table last.  About 50
# minutes of one H200 for the 64 kernels, too long for make check; run
# it by hand after a change to a kernel (docs/kernels.md).
#   tests/full-matrix.sh BUILD_DIR [TEXT...]
# TEXT narrows the run to the kernels whose name holds one of them.
# FULL_GPUS="0 2" picks the GPUs (default: every one nvidia-smi lists),
# FULL_LOGS the folder for the logs (default: a new one, kept),
# FULL_TIMEOUT the seconds one kernel may take (default 1200, 0 for no
# limit), GEMMD_KERNEL_DIR the cubins (default BUILD_DIR/kernels).
# Exit 0 when every kernel passed, 77 when every one skipped (no GPU),
# 2 on bad arguments, else 1.
set -u

usage() {
	echo "usage: full-matrix.sh BUILD_DIR [TEXT...]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
build=$(cd "$1" 2>/dev/null && pwd) || usage
shift
gpu_gemm=$build/tests/gpu-gemm
kdir=${GEMMD_KERNEL_DIR:-$build/kernels}
[ -x "$gpu_gemm" ] || {
	echo "full-matrix.sh: no $gpu_gemm (make tests/gpu-gemm)" >&2
	exit 2
}
logs=${FULL_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/gemmd-full.XXXXXX")}
mkdir -p "$logs" || exit 2
# A folder used before: its claims would leave nothing to run.
rm -rf "$logs"/claim.* "$logs"/tmp.*
timeout_s=${FULL_TIMEOUT:-1200}
case $timeout_s in
'' | *[!0-9]*)
	echo "full-matrix.sh: FULL_TIMEOUT: not a number of seconds" >&2
	exit 2
	;;
esac

# The kernels, those with clusters first: they take 50 s each, the
# others (no cluster shapes to walk) 3 s, so the long ones are spread
# over the GPUs rather than left to one at the end.
wanted() {
	[ $# -eq 0 ] && return 0
	for t in "$@"; do
		case $kname in *"$t"*) return 0 ;; esac
	done
	return 1
}
: >"$logs/kernels"
for f in "$kdir"/gemmd_*.cubin; do
	[ -e "$f" ] || continue
	kname=${f##*/gemmd_}
	kname=${kname%.cubin}
	wanted "$@" || continue
	case $kname in
	interleaved_* | multistage_* | pipelined_*) echo "1 $kname" ;;
	*) echo "0 $kname" ;;
	esac
done | sort | cut -d' ' -f2 >"$logs/kernels"
[ -s "$logs/kernels" ] || {
	echo "full-matrix.sh: no kernel in $kdir matches" >&2
	exit 2
}

if [ -n "${FULL_GPUS:-}" ]; then
	gpus=$FULL_GPUS
elif gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader \
	2>/dev/null) && [ -n "$gpus" ]; then
	:
else
	# No GPU to list: gpu-gemm decides (it skips, exit 77).
	gpus=0
fi

# One worker per GPU.  A worker takes the next kernel that no worker has
# claimed (mkdir is atomic), so a slow kernel holds up only its GPU.
# Each worker has a TMPDIR of its own: gpu-gemm locks
# $TMPDIR/gemmd-gpu-tests.lock, which is one GPU's, not the machine's.
worker() {
	gpu=$1
	mkdir -p "$logs/tmp.$gpu"
	while read -r k; do
		mkdir "$logs/claim.$k" 2>/dev/null || continue
		start=$(date +%s)
		TMPDIR=$logs/tmp.$gpu CUDA_VISIBLE_DEVICES=$gpu \
			GEMMD_KERNEL_DIR=$kdir timeout "$timeout_s" \
			"$gpu_gemm" --full --kernel "gemmd_$k" \
			>"$logs/$k.log" 2>&1
		rc=$?
		echo "$k $gpu $rc $(($(date +%s) - start))" >>"$logs/results"
	done <"$logs/kernels"
}

: >"$logs/results"
began=$(date +%s)
for g in $gpus; do
	worker "$g" &
done
wait

# A kernel's row: its schedule's line of gpu-gemm's closing table
# (cases, passed, failed, skipped), or why there is none.
fails=0
passes=0
skips=0
printf '%-34s %3s %4s %6s %6s %6s  %s\n' kernel gpu rc secs cases passed \
	verdict
while read -r k g rc secs; do
	s=${k%%_*}
	row=$(awk -v s="$s" '$1 == s { print $2, $3, $4 }' "$logs/$k.log")
	set -- $row
	cases=${1:--}
	passed=${2:--}
	if [ "$rc" -eq 0 ] && [ "${3:-}" = 0 ]; then
		verdict=pass
		passes=$((passes + 1))
	elif [ "$rc" -eq 77 ]; then
		verdict="skip: $(sed -n 's/^SKIP: //p' "$logs/$k.log" | head -n1)"
		skips=$((skips + 1))
	else
		if [ "$rc" -eq 124 ]; then
			verdict="FAIL: over $timeout_s s"
		elif [ -n "$row" ]; then
			verdict="FAIL: exit $rc, $3 cases failed"
		else
			verdict="FAIL: exit $rc, no table"
		fi
		fails=$((fails + 1))
	fi
	printf '%-34s %3s %4s %6s %6s %6s  %s\n' "$k" "$g" "$rc" "$secs" \
		"$cases" "$passed" "$verdict"
done <"$logs/results"
# A kernel with no result: its worker died (the table says which).
while read -r k; do
	grep -q "^$k " "$logs/results" && continue
	printf '%-34s %3s %4s %6s %6s %6s  %s\n' "$k" - - - - - \
		"FAIL: no result"
	fails=$((fails + 1))
done <"$logs/kernels"
echo "$(wc -l <"$logs/kernels") kernels: $passes passed, $fails failed," \
	"$skips skipped; $(($(date +%s) - began)) s on GPUs" \
	"$(echo $gpus); logs in $logs"
# Passed only when every kernel passed: a kernel skipped beside others
# that ran (a GPU named in FULL_GPUS that is not there) is a failure.
[ "$fails" -eq 0 ] && [ "$skips" -eq 0 ] && exit 0
[ "$fails" -eq 0 ] && [ "$passes" -eq 0 ] && exit 77
exit 1
