#!/bin/sh
# Runs the layering check (tests/layers.sh), unit tests (build/tests/test_*) and integration tests (tests/integration/*.test).
# Exit codes of a test: 0 pass, 77 skip, anything else fail.
# SPDX-License-Identifier: MIT
cd "$(dirname "$0")/.." || exit 99
BUILD=${BUILD:-build}
export BUILD
pass=0; fail=0; skip=0; failed_names=""
logdir=$BUILD/test-logs
mkdir -p "$logdir"

run_one() {
	name=$1; shift
	log=$logdir/$(echo "$name" | tr '/' '_').log
	start=$(date +%s)
	"$@" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) pass=$((pass + 1)); echo "PASS $name (${secs}s)" ;;
	77) skip=$((skip + 1)); echo "SKIP $name: $(tail -n 1 "$log")" ;;
	*) fail=$((fail + 1)); failed_names="$failed_names $name"
	   echo "FAIL $name (exit $rc, ${secs}s)"; sed 's/^/    | /' "$log" | tail -n 40 ;;
	esac
}

run_one "layers" sh tests/layers.sh

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	run_one "unit/$(basename "$t")" "$t"
done

if [ -z "$UNIT_ONLY" ]; then
	for t in tests/integration/*.test; do
		[ -f "$t" ] || continue
		if [ -n "$ONLY" ] && ! echo "$t" | grep -q -- "$ONLY"; then continue; fi
		run_one "integration/$(basename "$t" .test)" timeout 600 sh "$t"
	done
fi

[ -n "$failed_names" ] && echo "failed:$failed_names"
if [ "$skip" -gt 0 ]; then
	echo "tests: $pass passed, $fail failed, $skip skipped"
else
	echo "tests: $pass passed, $fail failed"
fi
[ "$fail" -eq 0 ]
