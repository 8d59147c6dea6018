#!/bin/sh
# Runs a test (TEST_LOG_COMPILER and LOG_COMPILER in Makefile.am) under
# timeout(1): it is stopped, with its process group, after
# GEMMD_TEST_TIMEOUT seconds (1200 by default) and fails (124).
#
# timeout runs the test in a process group of its own, which a ^C at
# the terminal does not reach, nor a signal to make's process group:
# make would wait for the test to end, up to the timeout.  This shell
# stays in make's group and hands the signal on to timeout, which hands
# it on to the test's group.
timeout -k 30 "${GEMMD_TEST_TIMEOUT:-1200}" "$@" &
pid=$!
for sig in INT TERM HUP; do
	# shellcheck disable=SC2064 # $sig and $pid now
	trap "kill -$sig $pid 2>/dev/null" $sig
done
# A trapped signal ends the wait early: wait again until timeout ends.
while :; do
	wait $pid
	rc=$?
	kill -0 $pid 2>/dev/null || break
done
exit $rc
