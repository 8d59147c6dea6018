#!/bin/sh
# Kernel builds side by side on one GPU: this build's GEMM kernels against
# those of other git revisions, each served by its own gemmd, every job
# asked of each in turn.  Every other round takes the daemons in reverse
# order: the first one asked reads up to 1 us slow on small jobs
# (docs/perf.md, 2026-11-22 session 5, run 8).
#   bench/ab.sh BUILD_DIR JOBS_FILE REV...
#   ROUNDS=4 bench/ab.sh ...                     (default 2)
#   KERNELS='*_bf16_tn_* *_64x128x64' bench/ab.sh ... (only these cubins)
# JOBS_FILE holds one JSON job per line ("baseline": "cublas" adds
# cuBLASLt's times; a second table gives TFLOP/s per watt and the SM
# clock, where the worker reads them).  For each REV, kernels/ of that
# revision is compiled with the build's nvcc flags into every GEMM cubin
# the build has, of every schedule (or those whose name matches KERNELS:
# the others are left out of its catalog); its reference kernel is the
# build's own.
# Where REV's worker differs from this tree's (the launch and the tensor
# maps must match the kernels), REV is checked out beside and its gemmd
# and worker (which must speak the same job JSON) built and used too.
# A REV that is a directory is a copy of kernels/ (an uncommitted
# variant): it is served by the build's gemmd and worker, so its
# gemm-abi.h must be the build's.
set -eu
usage="usage: ab.sh BUILD_DIR JOBS_FILE REV..."
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=$(cd "${1:?$usage}" && pwd)
jobs=$(cd "$(dirname "${2:?$usage}")" && pwd)/$(basename "$2")
shift 2
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
tmp=$(mktemp -d)
pids=""
trees=""
trap 'kill $pids 2>/dev/null
	for t in $trees; do git -C "$here/.." worktree remove --force "$t"; done
	rm -rf "$tmp"' EXIT

# The build's compiler and flags, as its Makefile has them.
nvcc_cmd=$(printf 'ab-print:\n\t@echo $(NVCC) $(NVCC_GENCODE) $(NVCCFLAGS)\n' |
	make -s -C "$build" -f Makefile -f - ab-print)

# rev_file REV FILE: kernels/FILE as REV has it.
rev_file() {
	if [ -d "$1" ]; then
		cat "$1/$2"
	else
		git -C "$here/.." show "$1:kernels/$2"
	fi
}

# wanted NAME: whether cubin NAME matches a pattern of $KERNELS (all do
# where it is unset).
wanted() {
	[ -n "${KERNELS:-}" ] || return 0
	set -f
	for pat in $KERNELS; do
		case "$1" in $pat) set +f && return 0 ;; esac
	done
	set +f
	return 1
}

# gemm_cubins: the names of the build's GEMM cubins that KERNELS wants,
# one a line, as "SCHED DTYPE LAYOUT BM BN BK" (every cubin but the
# reference kernel's is one).
gemm_cubins() {
	for c in "$build"/kernels/gemmd_*.cubin; do
		[ -e "$c" ] || continue
		c=$(basename "$c" .cubin)
		! wanted "$c" || echo "$c"
	done | sed -n 's/^gemmd_\([a-z]*\)_\([a-z0-9]*\)_\([a-z]*\)_\([0-9]*\)x\([0-9]*\)x\([0-9]*\)$/\1 \2 \3 \4 \5 \6/p'
}

# build_rev REV DIR: REV's GEMM kernels, the build's reference kernel.
# The schedules live in four sources: ws, cooperative and pingpong in
# sm90_gemm.cu, each other one in gemm_SCHED.cu, as Makefile.am builds
# them.
build_rev() {
	mkdir -p "$2/src" "$2/k"
	cp "$build"/kernels/reference.cubin "$2/k/"
	# A REV older than one of these fails only where its kernels are
	# wanted: nvcc then finds no source.
	for f in sm90_gemm.cu gemm_interleaved.cu gemm_multistage.cu \
		gemm_pipelined.cu common.cuh gemm-abi.h sched.cuh sm80.cuh; do
		rev_file "$1" "$f" >"$2/src/$f" 2>/dev/null ||
			rm -f "$2/src/$f"
	done
	gemm_cubins | xargs -P "$(nproc)" -L 1 sh -c '
		case $2 in
		ws | cooperative | pingpong) src=sm90_gemm.cu ;;
		*) src=gemm_$2.cu ;;
		esac
		$0 -I"$1/src" -DGEMMD_SCHED=$2 -DGEMMD_DTYPE=$3 \
			-DGEMMD_LAYOUT=$4 -DGEMMD_BM=$5 -DGEMMD_BN=$6 \
			-DGEMMD_BK=$7 -cubin \
			-o "$1/k/gemmd_$2_$3_$4_$5x$6x$7.cubin" \
			"$1/src/$src"' "$nvcc_cmd" "$2"
}

# daemon_rev REV DIR: the directory of the gemmd and worker to serve
# REV's kernels with, on stdout.
daemon_rev() {
	if [ -d "$1" ]; then
		cmp -s "$1/gemm-abi.h" "$here/../kernels/gemm-abi.h" ||
			{ echo "$1: gemm-abi.h is not the build's" >&2; exit 1; }
		echo "$build/daemon"
		return
	fi
	if git -C "$here/.." diff --quiet "$1" -- daemon/worker kernels/gemm-abi.h; then
		echo "$build/daemon"
		return
	fi
	git -C "$here/.." worktree add -q --detach "$2/tree" "$1" >&2
	(cd "$2/tree" && autoreconf -fi && ./configure &&
		make -j"$(nproc)" daemon/gemmd daemon/gemmd-worker) \
		>"$2/daemon.log" 2>&1 ||
		{ tail -20 "$2/daemon.log" >&2; exit 1; }
	echo "$2/tree/daemon"
}

# start NAME KERNEL_DIR DAEMON_DIR: a gemmd on a free port; its URL in
# $tmp/NAME.url.
start() {
	"$3/gemmd" --listen 127.0.0.1:0 --state-dir "$tmp/$1.state" \
		--kernel-dir "$2" --worker "$3/gemmd-worker" \
		>"$tmp/$1.log" 2>&1 &
	pids="$pids $!"
	bench_gemmd_wait "$tmp/$1.log"
	echo "$url" >"$tmp/$1.url"
}

# A KERNELS that matches none of the build's GEMM cubins would compare
# catalogs with nothing of REV's in them.
[ -n "$(gemm_cubins)" ] || {
	echo "ab.sh: no GEMM cubin of $build/kernels matches KERNELS='${KERNELS:-}'" >&2
	exit 2
}

names="build"
start build "$build/kernels" "$build/daemon"
for rev in "$@"; do
	if [ -d "$rev" ]; then
		rev=$(cd "$rev" && pwd)
		name=$(basename "$rev")
	else
		name=$(git -C "$here/.." rev-parse --short "$rev")
	fi
	build_rev "$rev" "$tmp/$name"
	daemon=$(daemon_rev "$rev" "$tmp/$name")
	[ -d "$tmp/$name/tree" ] && trees="$trees $tmp/$name/tree"
	start "$name" "$tmp/$name/k" "$daemon"
	names="$names $name"
done

: >"$tmp/rows"
for r in $(seq "${ROUNDS:-2}"); do
	order=$names
	[ $((r % 2)) -eq 0 ] && order=$(echo "$names" | tr ' ' '\n' | tac | tr '\n' ' ')
	i=0
	# Numbered as the table below numbers them: blank lines skipped, a
	# last line without a newline read too.
	while IFS= read -r job || [ -n "$job" ]; do
		case $job in *[![:space:]]*) ;; *) continue ;; esac
		i=$((i + 1))
		for name in $order; do
			printf '%s\t%s\t%s\t' "$i" "$name" "$r" >>"$tmp/rows"
			curl -s -X POST "$(cat "$tmp/$name.url")/v1/jobs?wait=600" \
				-d "$job" | tr -d '\n' >>"$tmp/rows"
			echo >>"$tmp/rows"
		done
	done <"$jobs"
done

python3 - "$tmp/rows" "$jobs" $names <<'PY'
import json, sys
rows, jobs, names = sys.argv[1], sys.argv[2], sys.argv[3:]
lines = [l for l in open(jobs).read().splitlines() if l.strip()]
res = {}
for l in open(rows):
    i, name, r, body = l.rstrip("\n").split("\t", 3)
    try:
        j = json.loads(body)
    except ValueError:
        j = {}
    res.setdefault((int(i), name), []).append(j)


def time_cell(j):
    """A job's median in µs, or why there is none."""
    r = j.get("result") or {}
    if j.get("state") != "done" or not r.get("timing"):
        err = j.get("error") or {}
        return "failed: " + str(err.get("message") or j.get("reason") or
                                "?")[:40]
    bad = (r.get("verify") or {}).get("passed") is False
    return "%.1f%s" % (r["timing"]["median_us"],
                       " (verify FAILED)" if bad else "")


def tele_cell(r):
    """'TF/W @ MHz' of a result or baseline, or None without telemetry."""
    t = (r or {}).get("telemetry") or {}
    tfw, clk = t.get("tflops_per_watt"), (t.get("sm_clock_mhz") or {})
    if tfw is None:
        return None
    return "%.2f @ %.0f" % (tfw, clk.get("median") or 0)


# Per job: each daemon's cells and cuBLASLt's, times and telemetry.
table = []
for i, job in enumerate(lines, 1):
    times, teles, lt, lt_tele = [], [], [], []
    for n in names:
        got = res.get((i, n), [])
        times.append(", ".join(time_cell(j) for j in got))
        teles.append(", ".join(tele_cell(j.get("result")) or "-"
                               for j in got))
        for j in got:
            b = (j.get("result") or {}).get("baseline") or {}
            if b.get("timing"):
                lt.append(b["timing"]["median_us"])
            lt_tele += [c for c in [tele_cell(b)] if c]
    span = "%.1f–%.1f" % (min(lt), max(lt)) if lt else ""
    table.append((job, times, span, teles, ", ".join(lt_tele)))


def show(unit, col, lt_col):
    print("| job | " + " | ".join("%s %s" % (n, unit) for n in names) +
          " | cuBLASLt %s |" % unit)
    print("| --- |" + " --- |" * (len(names) + 1))
    for row in table:
        print("| %s | %s | %s |" % (row[0], " | ".join(row[col]),
                                    row[lt_col]))


show("µs", 1, 2)
# Where the power cap binds, speed follows energy per FLOP: the same jobs'
# TFLOP/s per watt and median SM clock, when the worker has NVML.
if any(c.strip("-, ") for row in table for c in row[3]):
    print()
    show("TF/W @ MHz", 3, 4)
PY
