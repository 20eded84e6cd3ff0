# Sourced by tests/integration/*.test: helpers to start victims, attach, and judge.
# SPDX-License-Identifier: MIT
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$TOP/$BUILD ;; esac
HA=$TOP/heapattach
FIX=$BUILD/fixtures
TOOLS=$BUILD/tools
T=$(mktemp -d /tmp/ha-test.XXXXXX)
VICTIMS=""
cleanup_() {
	for p in $VICTIMS; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup_ EXIT

fail_() { echo "FAIL: $*" >&2; exit 1; }
skip_() { echo "SKIP: $*" >&2; exit 77; }
framework_failure_() { echo "ERROR: $*" >&2; exit 99; }

# start_victim OUTFILE CMD...: start CMD in the background with stdout to OUTFILE,
# wait for its "ready" line, set VPID.
start_victim() {
	out=$1; shift
	"$@" >"$out" 2>&1 &
	VPID=$!
	VICTIMS="$VICTIMS $VPID"
	i=0
	while ! grep -q '^ready' "$out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt 500 ] && fail_ "victim $* did not get ready"
		kill -0 "$VPID" 2>/dev/null || fail_ "victim $* died: $(cat "$out")"
		sleep 0.01
	done
}

# wait_for_line FILE REGEX [TIMEOUT_S]: wait until FILE has a line matching REGEX.
wait_for_line() {
	i=0; lim=$(( ${3:-30} * 100 ))
	while ! grep -q -- "$2" "$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -gt $lim ] && return 1
		sleep 0.01
	done
	return 0
}

# ptrace_ok_: skip when this machine forbids ptrace.
ptrace_ok_() {
	[ -x "$HA" ] || framework_failure_ "no $HA; run make"
	s=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)
	[ "$s" = 3 ] && skip_ "Yama ptrace_scope=3 forbids ptrace"
	return 0
}
