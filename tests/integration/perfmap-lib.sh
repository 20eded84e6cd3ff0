# Sourced by perfmap*.test after init.sh: run the jit fixture under heapattach, read the JIT names back.
# SPDX-License-Identifier: MIT

command -v go >/dev/null 2>&1 || skip_ "go (go tool pprof) not installed"
go tool pprof -h >/dev/null 2>&1 || skip_ "go tool pprof does not run"
[ -x "$FIX/jit" ] || framework_failure_ "no $FIX/jit; run make fixtures"

# leaves_ PROFILE: one "SIZE<TAB>LEAF" line per distinct pair: a sample's
# bytes label and its first frame's function as pprof -raw prints it.
leaves_() {
	go tool pprof -raw "$1" 2>/dev/null | awk '
	/^Samples:/ { s = 1; next }
	/^Locations/ { s = 0; l = 1; next }
	/^Mappings/ { l = 0; next }
	s && /: [0-9]/ { sub(/.*: /, ""); first[++n] = $1; next }
	s && /bytes:\[/ { v = $0; sub(/.*bytes:\[/, "", v); sub(/\].*/, "", v); size[n] = v; next }
	l && /^ *[0-9]+: 0x/ {
		id = $1; sub(/:$/, "", id); t = $0
		sub(/^ *[0-9]+: 0x[0-9a-f]+ /, "", t); sub(/^M=[0-9]+ /, "", t)
		sub(/ [^ ]*:[0-9]* s=[0-9]+.*$/, "", t); loc[id] = t }
	END { for (i = 1; i <= n; i++) printf "%s\t%s\n", size[i], loc[first[i]] }' | sort -u
}

# frames_ PROFILE SIZE N: the first N frames' functions ("F1 F2 ...", leaf
# first) of each sample of SIZE bytes, one line per distinct stack.
frames_() {
	go tool pprof -raw "$1" 2>/dev/null | awk -v sz="$2" -v nf="$3" '
	/^Samples:/ { s = 1; next }
	/^Locations/ { s = 0; l = 1; next }
	/^Mappings/ { l = 0; next }
	s && /: [0-9]/ { sub(/.*: /, ""); cur = $0; next }
	s && /bytes:\[/ { v = $0; sub(/.*bytes:\[/, "", v); sub(/\].*/, "", v); if (v == sz) want[cur] = 1; next }
	l && /^ *[0-9]+: 0x/ {
		id = $1; sub(/:$/, "", id); t = $0
		sub(/^ *[0-9]+: 0x[0-9a-f]+ /, "", t); sub(/^M=[0-9]+ /, "", t)
		sub(/ [^ ]*:[0-9]* s=[0-9]+.*$/, "", t); loc[id] = t }
	END {
		for (k in want) {
			n = split(k, f, " "); out = ""
			for (i = 1; i <= n && i <= nf; i++) out = out (i > 1 ? " " : "") loc[f[i]]
			print out
		}
	}' | sort -u
}

# jit_size_ K: what JIT function K allocates (fixtures/jit.c).
jit_size_() { echo $((4096 + 16 * $1 + 8)); }

# jit_name_ K: its name in the map.
jit_name_() {
	if [ "$1" = 8 ]; then echo "JS:*jit_reused_8 jit.js:8"; else echo "JS:*jit_fn_$1 jit.js:$1"; fi
}

# expect_leaf_ LEAVES K NAME: every sample of function K's size has NAME as its leaf.
expect_leaf_() {
	got=$(awk -F '\t' -v s="$(jit_size_ "$2")" '$1 == s { print $2 }' "$1")
	[ "$got" = "$3" ] || fail_ "$(basename "$1"): size $(jit_size_ "$2") (function $2) has leaf '$got', expected '$3'"
}

# run_jit_ NAME HA_ARGS...: with the victim started (VPID, $T/NAME.out), attach
# heapattach with HA_ARGS, let the victim add its functions, stop heapattach
# with SIGTERM after phase 3; $T/NAME.heap, $T/NAME.err, and heapattach's
# peak RSS in kB until then in $T/NAME.hwm.
run_jit_() {
	n=$1; shift
	"$HA" -p "$VPID" -o "$T/$n.heap" "$@" 2>"$T/$n.err" &
	HPID=$!
	VICTIMS="$VICTIMS $HPID"
	wait_for_line "$T/$n.err" "attached to" 30 || fail_ "heapattach did not attach: $(cat "$T/$n.err")"
	kill -USR1 "$VPID"
	wait_for_line "$T/$n.out" '^phase 3' 30 || fail_ "the victim did not reach phase 3: $(cat "$T/$n.out")"
	sleep 0.2
	awk '/^VmHWM:/ { print $2 }' "/proc/$HPID/status" >"$T/$n.hwm"
	kill -TERM "$HPID"
	wait "$HPID"
	rc=$?
	[ "$rc" -eq 0 ] || fail_ "heapattach exited $rc: $(cat "$T/$n.err")"
	grep -q "wrote $T/$n.heap" "$T/$n.err" || fail_ "no profile: $(cat "$T/$n.err")"
}

# stop_victim_ NAME: SIGUSR2, it must exit 0.
stop_victim_() {
	kill -USR2 "$VPID"
	wait "$VPID" || fail_ "the victim failed: $(cat "$T/$1.out")"
}
