#!/bin/sh
# make demo: start the bundled demo service, profile it for a few seconds, show the top sites, end with the leak report.
# SPDX-License-Identifier: MIT
cd "$(dirname "$0")/.." || exit 1
out=$(mktemp -d /tmp/heapattach-demo.XXXXXX)
./build/fixtures/demo >"$out/demo.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
while ! grep -q ready "$out/demo.log"; do sleep 0.05; done
echo "== demo target running as pid $pid"
echo "== heapattach --list-hooks -p $pid"
./heapattach --list-hooks -p "$pid" || exit 1
echo "== heapattach -p $pid -o $out/demo.heap --duration 5s --every 500ms --sample-rate 4K"
./heapattach -p "$pid" -o "$out/demo.heap" --duration 5s --every 500ms --sample-rate 4K || exit 1
echo "== go tool pprof -top -sample_index=inuse_space (what is still live)"
go tool pprof -top -sample_index=inuse_space "$out/demo.heap" 2>/dev/null | head -n 12
echo "== go tool pprof -top -sample_index=alloc_space (what was allocated)"
go tool pprof -top -sample_index=alloc_space "$out/demo.heap" 2>/dev/null | head -n 12
kill -0 "$pid" 2>/dev/null && echo "== demo target still running after detach; stopping it"
echo "== heapattach report --plot $out/plot.svg --flame $out/flame.svg --html $out/report.html $out/demo.0*.heap"
./heapattach report --plot "$out/plot.svg" --flame "$out/flame.svg" --html "$out/report.html" \
	"$out"/demo.0*.heap || exit 1
echo "profiles kept in $out: demo.heap, demo.0001.heap ...; the report: $out/report.html"
