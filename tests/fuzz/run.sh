#!/bin/sh
# Runs each libFuzzer target (build-fuzz/fuzz_*) for FUZZ_SECONDS: first its regression inputs, then new ones from seeds.
# SPDX-License-Identifier: MIT
#
# Seeds are made fresh from the fixtures: their binaries (whole, stripped,
# their split debug files, and with compressed debug sections) for the
# ELF and DWARF readers, maps and
# status texts (the fixtures' and this shell's own) for the maps reader,
# fixtures/perfmap/ for the perf map reader, synthprof's profiles and
# fixtures/pprof/ for the pprof reader, clients' request heads for the HTTP parser.
# The corpus a target grows stays in $FB/corpus/NAME between runs. A crash
# leaves its input in $FB/artifacts/; fix the bug and add the input to
# tests/fuzz/regress/NAME/ so that every later run replays it.
cd "$(dirname "$0")/../.." || exit 99
FB=${FB:-build-fuzz}
BUILD=${BUILD:-build}
SECS=${FUZZ_SECONDS:-20}
FIX=$BUILD/fixtures
fail=0

mkdir -p "$FB/seeds/elf" "$FB/seeds/dwarf" "$FB/seeds/maps" "$FB/seeds/perfmap" "$FB/seeds/pprof" \
	"$FB/artifacts"
for f in "$FIX"/*; do
	[ -x "$f" ] || continue
	n=$(basename "$f")
	# the static ones are large and add nothing the others lack
	[ "$(wc -c <"$f")" -gt 200000 ] && continue
	objcopy --strip-all "$f" "$FB/seeds/elf/$n.stripped" 2>/dev/null
	cp "$f" "$FB/seeds/dwarf/$n"
	objcopy --only-keep-debug "$f" "$FB/seeds/dwarf/$n.debug" 2>/dev/null
	# compressed sections (gABI and GNU), which zsection inflates
	objcopy --compress-debug-sections=zlib-gabi "$f" "$FB/seeds/dwarf/$n.zgabi" 2>/dev/null
	objcopy --compress-debug-sections=zlib-gnu "$f" "$FB/seeds/dwarf/$n.zgnu" 2>/dev/null
done
cp fixtures/maps/* fixtures/status/* "$FB/seeds/maps/"
cat /proc/self/maps >"$FB/seeds/maps/self.txt"
cat /proc/self/status >"$FB/seeds/maps/status.txt"
# pprof: our writer's profiles (synthprof) and other tools' (fixtures/pprof/), gzipped and raw
if [ -x "$BUILD/tools/synthprof" ]; then
	"$BUILD/tools/synthprof" --format pprof -o "$FB/seeds/pprof/synth.pb.gz" >/dev/null 2>&1
	"$BUILD/tools/synthprof" --format pprof --many 50 -o "$FB/seeds/pprof/many.pb.gz" >/dev/null 2>&1
fi
cp fixtures/pprof/*.pb.gz "$FB/seeds/pprof/"
for f in "$FB"/seeds/pprof/*.pb.gz; do gzip -dc "$f" >"${f%.gz}" 2>/dev/null; done
# pylines: the tables CPython 3.8-3.13 made (tests/unit/data), with their format and first line
mkdir -p "$FB/seeds/pylines"
python3 - "$FB/seeds/pylines" tests/unit/data/pylines-3.*.txt <<'EOF_PY'
import struct, sys
n = 0
for path in sys.argv[2:]:
    for line in open(path):
        f = line.split()
        if f and f[0] == 'code':
            head = struct.pack('<Bi', {'lnotab': 0, '310': 1}.get(f[2], 2), int(f[3]))
        elif f and f[0] == 'table' and f[1] != '-':
            n += 1
            open('%s/%d' % (sys.argv[1], n), 'wb').write(head + bytes.fromhex(f[1]))
EOF_PY
for f in fixtures/perfmap/*; do
	printf '\200' | cat - "$f" >"$FB/seeds/perfmap/${f##*/}"	# first byte: where it is split
done

# heap images: a chain of chunks (a thread cache first, blocks in use, free
# ones, the top), with and without a fast bin list
mkdir -p "$FB/seeds/heapwalk"
python3 - "$FB/seeds/heapwalk" <<'EOF_PY'
import struct, sys
d = sys.argv[1]
def heap(tc_entries, nchunks):
    out = bytearray()
    base = 0x10000000
    # the tcache chunk: 0x290, counts[64] u16 then entries[64]
    tc = bytearray(0x290)
    struct.pack_into('<QQ', tc, 0, 0, 0x291)
    out += tc
    chunks = []
    for i in range(nchunks):
        c = bytearray(0x30)
        struct.pack_into('<QQ', c, 0, 0, 0x31)
        chunks.append(len(out))
        out += c
    top = 0x1000 - (len(out) % 0x1000) or 0x1000
    out += struct.pack('<QQ', 0, top | 1) + bytes(top - 16)
    for k, off in enumerate(chunks[:tc_entries]):
        nxt = chunks[k + 1] + 16 + base if k + 1 < tc_entries else 0
        pos = off + 16 + base
        struct.pack_into('<Q', out, off + 16, (pos >> 12) ^ nxt)
    if tc_entries:
        struct.pack_into('<H', out, 16 + 2 * 1, tc_entries)
        struct.pack_into('<Q', out, 16 + 128 + 8 * 1, chunks[0] + 16 + base)
    return bytes(out)
open(d + '/plain', 'wb').write(heap(0, 40))
open(d + '/tcache', 'wb').write(heap(5, 40))
open(d + '/tcache-big', 'wb').write(heap(7, 400))
EOF_PY

# HTTP request heads: what go tool pprof, Prometheus and curl send, and a few refused
mkdir -p "$FB/seeds/http"
printf 'GET /debug/pprof/heap?seconds=2 HTTP/1.1\r\nHost: 127.0.0.1:6060\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n' \
	>"$FB/seeds/http/pprof"
printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:6060\r\nAccept: application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n' \
	>"$FB/seeds/http/prometheus"
printf 'GET / HTTP/1.0\n\n' >"$FB/seeds/http/lf"
printf 'POST /x?a=1&b HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc' >"$FB/seeds/http/post"
printf 'GET / HTTP/1.1\r\n folded: x\r\n\r\n' >"$FB/seeds/http/fold"

for bin in "$FB"/fuzz_*; do
	[ -x "$bin" ] || continue
	name=${bin##*/fuzz_}
	seeds=$FB/seeds/$name
	[ -d "$seeds" ] || seeds=$FB/seeds/elf
	regress=tests/fuzz/regress/$name
	mkdir -p "$FB/corpus/$name"
	if [ -d "$regress" ] && [ -n "$(ls "$regress")" ]; then
		if ! "$bin" "$regress"/* >"$FB/$name.regress.log" 2>&1; then
			echo "FAIL fuzz/$name: a regression input fails"
			tail -n 30 "$FB/$name.regress.log"
			fail=1
			continue
		fi
	fi
	# no leak checks: libelf and libdw keep per-process caches
	"$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -detect_leaks=0 \
		-print_final_stats=1 -artifact_prefix="$FB/artifacts/$name-" \
		"$FB/corpus/$name" "$seeds" >"$FB/$name.log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$FB/$name.log")
	cov=$(grep -o 'cov: [0-9]*' "$FB/$name.log" | tail -n 1)
	if [ $rc -eq 0 ]; then
		echo "PASS fuzz/$name (${SECS}s, $runs runs, $cov)"
	else
		echo "FAIL fuzz/$name (exit $rc): input in $FB/artifacts/"
		grep -A 30 'ERROR\|runtime error\|deadly signal\|timeout' "$FB/$name.log" | head -n 40
		fail=1
	fi
done
exit $fail
