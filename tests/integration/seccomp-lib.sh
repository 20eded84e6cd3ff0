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

# seccomp_matrix_: a filter that kills (traps, refuses...) each call heapattach
# makes the target run, on every thread, on one worker, or on the main
# thread only, and one thread in strict mode: heapattach falls back and
# profiles, or refuses in one line; the target always runs on.
seccomp_matrix_() {
	# Remote syscalls, run in a stopped thread: a fallback where one exists.
	run ok "" memfd_create:kill
	grep -q '(anonymous)' "$T/ha" || fail_ "memfd_create killed, yet no shared anonymous memory"
	grep -q 'warning: seccomp.*memfd_create' "$T/ha" || fail_ "no warning about memfd_create"
	run ok "" close:kill
	grep -q '(anonymous)' "$T/ha" || fail_ "close killed, yet a memfd was used"
	# Arguments count: killed only with MFD_EXEC (which heapattach asks for
	# first), then only with MFD_HUGETLB (which it never asks for).
	run ok "" memfd_create:kill:1:0x10
	grep -q '(anonymous)' "$T/ha" || fail_ "memfd_create(MFD_EXEC) killed, yet a memfd was used"
	run ok "" memfd_create:kill:1:0x4
	grep -q '(memfd)' "$T/ha" || fail_ "memfd_create(MFD_HUGETLB) killed: a memfd was still fine"
	# ...and with MFD_ALLOW_SEALING, which it always asks for (the seal).
	run ok "" memfd_create:kill:1:0x2
	grep -q '(anonymous)' "$T/ha" || fail_ "memfd_create(MFD_ALLOW_SEALING) killed, yet a memfd was used"
	run ok "" memfd_create:errno
	WHY=mmap run refuse "" mmap:kill
	WHY=mmap run refuse "" mmap:trace	# no tracer asking for it: ENOSYS, always
	WHY=munmap run refuse "" munmap:kill
	WHY=rt_sigreturn run refuse "" rt_sigreturn:kill
	# Anonymous mmap killed: fast mode needs it for its data view, trap mode
	# maps its code through the memfd only.
	WHY=mmap run refuse "" mmap:kill:3:0x20
	run ok "--mode trap" mmap:kill:3:0x20
	grep -q '(memfd)' "$T/ha" || fail_ "trap mode did not map a memfd"
	WHY=mremap run refuse "" mremap:kill
	WHY=mprotect run refuse "" mprotect:trap
	run ok "--mode trap" mremap:kill

	# The agent's own syscalls, made by any thread that allocates.
	for act in kill errno trap notif; do
		run ok "" "process_vm_readv:$act"
		grep -q 'warning: seccomp.*no stack copies' "$T/ha" ||
			fail_ "process_vm_readv:$act: stack copies not turned off"
	done
	# The agent asks gettid for the thread id it reads its stack copy on.
	run ok "" gettid:kill
	grep -q 'warning: seccomp.*no stack copies (gettid' "$T/ha" ||
		fail_ "gettid:kill: stack copies not turned off: $(cat "$T/ha.lines")"
	# exact mode: writers wait for room when the rings fill
	THREADS=2 DUR=1s run ok "--sample-rate 1" futex:kill
	grep -q 'dropped' "$T/ha" && fail_ "futex:kill: exact mode dropped events: $(cat "$T/ha.lines")"
	run ok "" futex:killthread
	# futex refused and sched_yield killed: writers waiting for room spin.
	THREADS=2 DUR=1s run ok "--sample-rate 1" futex:errno sched_yield:kill
	grep -q 'does not yield' "$T/ha" || fail_ "sched_yield killed, yet the agent may yield"
	WHY=clock_gettime run refuse "--sample-rate 1" clock_gettime:kill
	run ok "" clock_gettime:kill	# only exact mode times its waits
	WHY=strict run refuse "" strict
	# Threads differ. The agent runs in any thread: every thread counts.
	THREADS=2 run ok "" only1 process_vm_readv:kill
	grep -q 'warning: seccomp.*no stack copies' "$T/ha" ||
		fail_ "a filter on one thread only: stack copies not turned off"
	# Remote calls run in one thread: not in the main thread, whose filter
	# kills on munmap (the first one tried otherwise).
	run ok "" onlymain munmap:kill
	grep -q "warning: seccomp.*no remote calls in thread $VPID" "$T/ha" ||
		fail_ "munmap killed in the main thread only: $(cat "$T/ha.lines")"
}
