# Sourced by seccomp*.test after init.sh: a run of fixtures/seccomp under RULEs with heapattach attached, judged.
# SPDX-License-Identifier: MIT
#
# HA_WRAP, if set, is a command heapattach runs under (seccomp-probe.test:
# setpriv without CAP_SYS_ADMIN, so that the target's filters cannot be
# read). WHY names the syscall a refusal must name.

ptrace_ok_
[ -x "$FIX/seccomp" ] || framework_failure_ "build the seccomp fixture first (make fixtures)"
[ "$(id -u)" -eq 0 ] || skip_ "reading a target's seccomp filters needs CAP_SYS_ADMIN (run as root)"
grep -q '^Seccomp:[[:space:]]*0' /proc/self/status ||
	skip_ "this shell runs under a seccomp filter: PTRACE_SECCOMP_GET_FILTER is refused"
"$FIX/seccomp" "$T/nostop" 1 getpid:kill >/dev/null 2>&1
[ $? -eq 2 ] || framework_failure_ "the fixture accepted an unknown syscall name"

n=0
# run EXPECT "HEAPATTACH ARGS" RULE...: start the fixture under RULEs, attach,
# and judge. EXPECT: ok (a profile with events) or refuse (exit 1, one line
# naming the syscall in $WHY). Either way the fixture must run on and exit 0.
# heapattach's stderr is left in $T/ha; it stays attached for $DUR (300ms);
# the fixture allocates on $THREADS threads (1: the CPUs are shared).
run() {
	expect=$1; args=$2; shift 2
	n=$((n + 1))
	start_victim "$T/out$n" "$FIX/seccomp" "$T/stop$n" "${THREADS:-1}" "$@"
	# shellcheck disable=SC2086
	timeout 60 $HA_WRAP "$HA" -v -p "$VPID" -o "$T/p$n.heap" --duration "${DUR:-300ms}" $args 2>"$T/ha"
	rc=$?
	grep -v 'debug:' "$T/ha" >"$T/ha.lines"
	kill -0 "$VPID" 2>/dev/null ||
		fail_ "[$*] [$args]: heapattach made the target die: $(cat "$T/out$n"; grep -v debug "$T/ha")"
	case $expect in
	ok)
		[ $rc -eq 0 ] || fail_ "[$*] [$args]: exit $rc: $(cat "$T/ha.lines")"
		grep -q 'wrote .* ([1-9][0-9]* events)' "$T/ha.lines" ||
			fail_ "[$*] [$args]: no events: $(cat "$T/ha.lines")" ;;
	refuse)
		[ $rc -eq 1 ] || fail_ "[$*] [$args]: exit $rc, expected a refusal: $(cat "$T/ha.lines")"
		[ "$(wc -l <"$T/ha.lines")" -eq 1 ] ||
			fail_ "[$*] [$args]: not one line: $(cat "$T/ha.lines")"
		grep -q "seccomp.*$WHY" "$T/ha.lines" ||
			fail_ "[$*] [$args]: the message does not name '$WHY': $(cat "$T/ha.lines")"
		grep -q 'heapattach' "/proc/$VPID/maps" &&
			fail_ "[$*] [$args]: something was mapped before the refusal" ;;
	esac
	sleep 0.1	# let the target run on after the detach
	touch "$T/stop$n"
	wait "$VPID"
	frc=$?
	[ $frc -eq 0 ] && grep -q '^ok ops [1-9]' "$T/out$n" ||
		fail_ "[$*] [$args]: the target exited $frc: $(cat "$T/out$n")"
}
