#!/bin/sh
# The kernel family against cuBLAS through a real gemmd (bench/family.py).
# Run on a GPU machine from a build directory:
#   bench/family.sh BUILD_DIR design [--size MxNxK] [--dtype bf16]
#   bench/family.sh BUILD_DIR shapes [--shapes "..."] [--dtype bf16,fp16]
#   bench/family.sh BUILD_DIR final [--shapes "..."] [--dtype bf16,fp16]
#   bench/family.sh BUILD_DIR clusters [--shapes "..."] [--dtype bf16,fp16]
# (design: every schedule, tile, stage count and cluster shape, stream-K
# and the other epilogue at each kernel's best, and cuBLASLt's rate;
# shapes, final and clusters take --rounds N: jobs per configuration
# with cuBLAS, 3 by default; final gives each row's share of
# bench/ceiling's rate where the build has it)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
build=$(cd "${1:?usage: family.sh BUILD_DIR design|shapes|final|clusters}" && pwd)
start_bench_gemmd "$build"
shift
curl -sf "$url/v1/devices" | python3 -c 'import json,sys; d=json.load(sys.stdin)["devices"]; print("device:", d[0]["name"] if d else "none")'
# final: each row's share of what the tensor cores sustain alone.
if [ -x "$build/bench/ceiling" ]; then
	set -- "$@" --ceiling "$build/bench/ceiling"
fi
python3 "$here/family.py" "$url" "$@"
