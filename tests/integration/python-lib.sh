# Sourced by python-*.test after init.sh: the interpreters to test and a run of fixtures/py/pytruth.py under heapattach.
# SPDX-License-Identifier: MIT

PYT=$TOP/fixtures/py/pytruth.py
PYCHECK=$TOP/tests/tools/pprof_python.py
[ -r "$PYT" ] || framework_failure_ "no $PYT"
"$HA" --help 2>/dev/null | grep -q -- --no-python ||
	skip_ "this heapattach has no Python frames (no --no-python in --help)"

# A non-interactive sh starts background jobs with SIGINT ignored; restore
# the default so SIGINT reaches heapattach as Ctrl-C would.
SIGDFL=
env --default-signal=INT true 2>/dev/null && SIGDFL="env --default-signal=INT"

# pythons_: "LABEL PATH" lines, Debian's python3.11 and the newest pyenv
# interpreter of each of 3.8 .. 3.13; says on stderr which are missing.
# PYTHONS="LABEL=PATH ..." in the environment replaces the list.
pythons_() {
	if [ -n "${PYTHONS:-}" ]; then
		for p in $PYTHONS; do echo "${p%%=*} ${p#*=}"; done
		return
	fi
	if [ -x /usr/bin/python3.11 ]; then
		echo "debian-3.11 /usr/bin/python3.11"
	else
		echo "note: skipped Debian's python3.11: no /usr/bin/python3.11" >&2
	fi
	root=${PYENV_ROOT:-$HOME/.pyenv}
	for m in 8 9 10 11 12 13; do
		p=$(ls -d "$root"/versions/3.$m.* 2>/dev/null | grep -E '/3\.[0-9]+\.[0-9]+$' |
			sort -t. -k3 -n | tail -n 1)
		if [ -n "$p" ] && [ -x "$p/bin/python3" ]; then
			echo "pyenv-${p##*/} $p/bin/python3"
		else
			echo "note: skipped pyenv 3.$m: not in $root/versions" >&2
		fi
	done
}

alive_() {
	[ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# forget_ PID: PID was reaped; drop it from the kill list of cleanup_.
forget_() {
	VICTIMS=$(echo " $VICTIMS " | sed "s/ $1 / /g")
}

# py_start_ PYTHON DIR ARGS...: start pytruth.py in DIR (made empty), VPID.
py_start_() {
	py_=$1; d_=$2; shift 2
	rm -rf "$d_"; mkdir -p "$d_"
	start_victim "$d_/victim.out" "$py_" -B "$PYT" "$d_" "$@"
}

# py_check_ DIR WHAT: ask the fixture to check its own data; fail unless ok.
py_check_() {
	rm -f "$1/check.out"
	touch "$1/check"
	wait_for_line "$1/check.out" '^' 30 ||
		fail_ "$2: the fixture did not answer a check: $(cat "$1/victim.out")"
	grep -q '^ok' "$1/check.out" || fail_ "$2: the fixture's own check: $(cat "$1/check.out")"
}

# py_stop_ DIR WHAT: let the fixture exit; fail unless it exits 0 untraced.
py_stop_() {
	alive_ "$VPID" || fail_ "$2: the fixture died: $(cat "$1/victim.out")"
	tp=$(sed -n 's/^TracerPid:[[:space:]]*//p' "/proc/$VPID/status")
	[ "$tp" = 0 ] || fail_ "$2: the fixture is still traced by $tp"
	touch "$1/exit"
	n=0
	while alive_ "$VPID"; do
		n=$((n + 1)); [ $n -gt 600 ] && fail_ "$2: the fixture did not exit"
		sleep 0.05
	done
	wait "$VPID"; rc=$?
	forget_ "$VPID"
	[ "$rc" = 0 ] || fail_ "$2: the fixture exited $rc: $(cat "$1/victim.out")"
}

# py_profile_ PYTHON DIR FIXTURE_ARGS -- HEAPATTACH_ARGS...: one profiled
# round of pytruth.py: attach, release it, SIGINT heapattach at its "done";
# DIR/out.heap, DIR/truth, DIR/ha.err; the fixture checks itself and exits.
py_profile_() {
	py_=$1; d_=$2; shift 2
	fargs_=
	while [ $# -gt 0 ] && [ "$1" != -- ]; do fargs_="$fargs_ $1"; shift; done
	shift
	# shellcheck disable=SC2086
	py_start_ "$py_" "$d_" $fargs_
	$SIGDFL "$HA" -p "$VPID" -o "$d_/out.heap" "$@" 2>"$d_/ha.err" &
	HPID=$!
	VICTIMS="$HPID $VICTIMS"
	wait_for_line "$d_/ha.err" "attached to $VPID" 60 ||
		fail_ "$d_: heapattach did not attach: $(cat "$d_/ha.err")"
	touch "$d_/go"
	wait_for_line "$d_/victim.out" '^done' 120 ||
		fail_ "$d_: the fixture did not finish its round: $(cat "$d_/victim.out")"
	kill -INT "$HPID"
	wait "$HPID"; rc=$?
	forget_ "$HPID"
	[ "$rc" = 0 ] || fail_ "$d_: heapattach exited $rc: $(cat "$d_/ha.err")"
	grep -q "wrote $d_/out.heap" "$d_/ha.err" || fail_ "$d_: no profile: $(cat "$d_/ha.err")"
	py_check_ "$d_" "$d_"
	py_stop_ "$d_" "$d_"
}
