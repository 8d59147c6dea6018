#!/bin/sh
# Set up a Debian 12 machine that has the CUDA toolkit, in one command:
#
#   ./bootstrap.sh install   install what is missing, build, install and
#                            start gemmd with built-in defaults
#   ./bootstrap.sh test      install what is missing, build, run the whole
#                            test suite (make check, make distcheck)
#   ./bootstrap.sh format    only the check that ends "test": the C and CUDA
#                            sources against .clang-format
#
# CUDA lives in /usr/local/cuda unless CUDA_HOME says otherwise.
set -eu
# A relative CUDA_HOME is taken from where this was run: made absolute
# before the cd below, and so for configure, which runs in a build
# folder (it looked for the toolkit under build/ and stopped on cuda.h).
case ${CUDA_HOME:-/} in
/*) ;;
*) CUDA_HOME=$(pwd)/$CUDA_HOME ;;
esac
cd "$(dirname "$0")"

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
JOBS=$(nproc 2>/dev/null || echo 2)
# xz-utils: make dist and distcheck write and unpack a .tar.xz, and xz is
# not in a minimal Debian (Priority: standard).
DEPS="build-essential autoconf automake pkg-config libmicrohttpd-dev
libjansson-dev libsystemd-dev libcurl4-openssl-dev curl python3 systemd
clang-format procps valgrind xz-utils"

# can_root WHAT: exit with a message unless this runs as root or has
# sudo, which WHAT needs.
can_root() {
	[ "$(id -u)" = 0 ] || command -v sudo >/dev/null || {
		echo "bootstrap: $1 needs root, and there is no sudo: run bootstrap.sh as root" >&2
		exit 1
	}
}

as_root() {
	can_root "$1"
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

install_deps() {
	missing=
	for p in $DEPS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "bootstrap: installing$missing"
	as_root apt-get update -qq
	# shellcheck disable=SC2086
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $missing
}

check_cuda() {
	[ -x "$CUDA_HOME/bin/nvcc" ] || {
		echo "bootstrap: no nvcc in $CUDA_HOME/bin: install the CUDA toolkit or set CUDA_HOME" >&2
		exit 1
	}
}

# Each command builds in a folder of its own: the two configure with
# other flags and paths, and one folder shared would compile everything
# again at each switch (the objects follow their flags, cc-flags, and
# the install paths are in a generated header, paths.h: "test" then
# "install" in one folder once installed a gemmd that looked for
# /usr/local/etc/gemmd/gemmd.conf).
configure_build() { # configure_build DIR [configure args...]
	dir=$1
	shift
	[ -x configure ] && [ configure -nt configure.ac ] &&
		[ configure -nt Makefile.am ] || autoreconf -fi
	src=$(pwd)
	mkdir -p "$dir"
	(cd "$dir" && "$src/configure" --with-cuda="$CUDA_HOME" "$@")
}

do_test() {
	install_deps
	check_cuda
	configure_build build/check --enable-werror
	make -C build/check -j"$JOBS"
	make -C build/check -j"$JOBS" check || {
		cat build/check/test-suite.log
		exit 1
	}
	awk '/^# PASS:/ { p = $3 } /^# FAIL:/ { f = $3 } /^# SKIP:/ { s = $3 }
	     END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' \
		build/check/test-suite.log
	make -C build/check -j"$JOBS" distcheck \
		DISTCHECK_CONFIGURE_FLAGS=--enable-werror
	check_format
}

# The C and CUDA sources held to .clang-format: those git tracks, or where
# git cannot list them (a release tarball, a copy without .git, no git)
# those in the folders git tracks them in, which leaves out what configure
# and the build write (config.h, build/).  A new folder of C sources goes
# in the find as well.
c_sources() {
	if [ -e .git ] && git ls-files '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null; then
		return 0
	fi
	find bench client daemon kernels tests -type f \( -name '*.[ch]' \
		-o -name '*.cu' -o -name '*.cuh' \)
}

# The list is taken on its own, not piped into the loop, so that a find
# that fails stops the script; an empty list is refused, as it would pass
# (outside a checkout, "git ls-files" used to list nothing, and the check
# passed without looking at a file).
check_format() {
	command -v clang-format >/dev/null || return 0
	files=$(c_sources)
	[ -n "$files" ] || {
		echo "bootstrap: no C sources found to check against .clang-format" >&2
		exit 1
	}
	bad=$(printf '%s\n' "$files" | while read -r f; do
		clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"
	done)
	[ -z "$bad" ] || {
		echo "bootstrap: not clean against .clang-format:" $bad >&2
		exit 1
	}
}

do_format() {
	command -v clang-format >/dev/null || {
		echo "bootstrap: format needs clang-format" >&2
		exit 1
	}
	check_format
	echo "bootstrap: clean against .clang-format"
}

# healthz [CURL ARGS...]: gemmd's /healthz on the address install starts
# it on.  Never through a proxy: curl takes http_proxy (set for apt on
# many nodes) for 127.0.0.1 too, and the proxy's answer, or none, was
# taken for gemmd's.  And at most 5 s: a server that takes the connection
# and does not answer held the wait below for good.
healthz() {
	curl -s --noproxy '*' --max-time 5 "$@" http://127.0.0.1:8090/healthz
}

# Started in the background, gemmd listens only once its device probe is
# done, which may take worker-start-timeout (60 s): wait 90 s, by the
# clock.  Counted as 450 polls, a port that took each connection and did
# not answer (5 s a poll) was waited for 39 minutes.
wait_healthy() {
	end=$(($(date +%s) + 90))
	while ! healthz -f >/dev/null; do
		if [ "$(date +%s)" -ge $end ]; then
			echo "bootstrap: gemmd did not answer on 127.0.0.1:8090 within 90 s (its log: /var/log/gemmd.log, or journalctl -u gemmd)" >&2
			return 1
		fi
		sleep 0.2
	done
}

# Stop the gemmd an earlier install started in the background, and wait
# until its port is free (its workers exit with it).  That one only: its
# command line is the installed path alone, as started below; the gemmds
# that make check or a user run from elsewhere or with flags are not ours.
GEMMD_BIN=/usr/local/bin/gemmd
stop_background() {
	as_root pkill -x -f "$GEMMD_BIN" || return 0
	i=0
	while [ $i -lt 100 ] && pgrep -x -f "$GEMMD_BIN" >/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
}

do_install() {
	# Said before the build, not after it.
	can_root "installing gemmd"
	install_deps
	check_cuda
	configure_build build --sysconfdir=/etc --localstatedir=/var
	make -C build -j"$JOBS"
	as_root make -C build install
	# An install over a running gemmd (an upgrade) restarts it: the old
	# one would otherwise keep serving, with the old binary and catalog.
	if [ -d /run/systemd/system ]; then
		as_root systemctl daemon-reload
		as_root systemctl enable gemmd.service
		as_root systemctl restart gemmd.service
	else
		# No systemd here (a container): run it in the background.
		stop_background
		# What still listens there (one that did not stop, another
		# server) the new gemmd cannot displace, and wait_healthy
		# would take it for the new one.  Whatever takes the
		# connection, answer or not: curl fails with 7 only where
		# nothing does.  One that took it and did not answer in time
		# (a gemmd that hangs, a server that is not HTTP) used to
		# pass, and a new gemmd was started beside it, failed to
		# listen, and was waited for as long as 450 polls of 5 s.
		rc=0
		curl -s -o /dev/null --noproxy '*' --max-time 5 \
			http://127.0.0.1:8090/ || rc=$?
		if [ $rc != 7 ]; then
			echo "bootstrap: something already listens on 127.0.0.1:8090 (a gemmd that did not stop, another server): not starting gemmd" >&2
			exit 1
		fi
		as_root sh -c "nohup $GEMMD_BIN >/var/log/gemmd.log 2>&1 &"
	fi
	wait_healthy
	echo "bootstrap: gemmd is serving on http://127.0.0.1:8090"
	healthz
}

case "${1:-}" in
install) do_install ;;
test) do_test ;;
format) do_format ;;
*)
	echo "usage: $0 install|test|format" >&2
	exit 2
	;;
esac
