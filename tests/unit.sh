#!/bin/sh
# Runs a C test (LOG_COMPILER in Makefile.am): as it is, or with
# GEMMD_VALGRIND=1 under valgrind, failing on what valgrind_check finds.
# The GPU tests always run as they are: memcheck and CUDA do not mix.
case "${GEMMD_VALGRIND:-0}:$1" in
0:* | *gpu-*) exec "$@" ;;
esac
. "${GEMMD_SRCDIR:-.}/tests/lib.sh"
prog=$(valgrind_wrap "${1##*/}" "$1")
shift
"$prog" "$@"
rc=$?
valgrind_check
exit $rc
