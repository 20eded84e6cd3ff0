#!/bin/sh
# What a target's signals cost it while heapattach is attached: each signal is a ptrace stop in heapattach.
# SPDX-License-Identifier: MIT
# usage: bench/sigrate.sh [PAIRS] [SECONDS] [RATES]. For each timer-signal rate
# (default 0 1000 10000 50000 a second) runs bench/sigbench PAIRS times
# unattached and attached (default mode) in turn, SECONDS each, and prints
# the median ratio of its malloc loop's operations, unattached / attached.
cd "$(dirname "$0")/.." || exit 2
PAIRS=${1:-3} SECS=${2:-3} RATES=${3:-0 1000 10000 50000}
B=${BUILD:-build}/bench/sigbench HA=${HA:-./heapattach}
T=$(mktemp -d /tmp/sigrate.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$B" ] || { echo "no $B: run make bench" >&2; exit 2; }

# run_ RATE attach: prints the loop's ops
run_() {
	rm -f "$T/go"
	"$B" "$1" "$SECS" "$T/go" >"$T/out" 2>&1 &
	v=$!
	while ! grep -q '^ready' "$T/out"; do sleep 0.01; done
	if [ "$2" = 1 ]; then
		"$HA" -p "$v" --duration $((SECS + 3))s -o "$T/h.heap" >"$T/ha.err" 2>&1 &
		h=$!
		while ! grep -q 'attached to' "$T/ha.err"; do sleep 0.01; done
	fi
	touch "$T/go"
	wait "$v"
	[ "$2" = 1 ] && { kill -INT "$h" 2>/dev/null; wait "$h"; }
	sed -n 's/^ops \([0-9]*\) signals \([0-9]*\)/\1 \2/p' "$T/out"
}

echo "timer/s  signals/s unattached, attached  ops unattached/attached (median of $PAIRS pairs, ${SECS} s each)"
for r in $RATES; do
	ratios=""
	for i in $(seq "$PAIRS"); do
		set -- $(run_ "$r" 0)
		u=$1 usig=$2
		set -- $(run_ "$r" 1)
		ratios="$ratios $(echo "$u $1" | awk '{printf "%.3f", $1 / $2}')"
		asig=$2
	done
	med=$(echo $ratios | tr ' ' '\n' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
	printf '%7s  %9s, %8s  %sx   (%s)\n' "$r" "$((usig / SECS))" "$((asig / SECS))" "$med" "$ratios"
done
