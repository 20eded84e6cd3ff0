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

# pymalloc's arenas and Python objects (fuzz_pywalk's input: the minor
# version (3.8 + byte 0 % 6), a byte of control (bit 0: a glibc block in the
# arena), then patches on the fake target: u8 mapping, u32 offset, u16 len,
# bytes; mappings 0 the interpreter's data, 1 an arena of 64 KiB, 2 glibc's
# heap of 512-byte blocks): pools in use, empty, with a looped free list;
# static and heap types, GC objects, dicts with their keys and values
mkdir -p "$FB/seeds/pywalk"
python3 - "$FB/seeds/pywalk" <<'EOF_PY'
import struct, sys
d = sys.argv[1]
PY, ARENA, HEAP = 0x555555a00000, 0x7f0000000000, 0x7f0000100000
READY, GC, DICT, TYPE, MDICT = 1 << 12, 1 << 14, 1 << 29, 1 << 31, 1 << 4
def patch(m, off, b):
    return bytes([m]) + struct.pack('<IH', off, len(b)) + b
def q(*w):
    return struct.pack('<%dQ' % len(w), *w)
def typeobj(m, off, meta, name_at, flags):
    # PyTypeObject: ob_refcnt, ob_type, ob_size, tp_name (24) ... tp_flags (168)
    t = bytearray(176)
    struct.pack_into('<QQQQ', t, 0, 1, meta, 0, name_at)
    struct.pack_into('<Q', t, 168, flags)
    return patch(m, off, bytes(t))
def pool(i, psize, szidx, carved, count, free, blocks):
    # struct pool_header, its free list, and each block's bytes (blocks: {index: bytes})
    size, p = (szidx + 1) * 16, ARENA + i * psize
    at = lambda k: p + 48 + k * size
    out = patch(1, i * psize, struct.pack('<IIQQQIIII', count, 0, at(free[0]) if free else 0, p, p,
                                          0, szidx, 48 + carved * size, psize - size))
    for k, b in enumerate(free):
        out += patch(1, i * psize + 48 + b * size, q(at(free[k + 1]) if k + 1 < len(free) else 0))
    for k, b in blocks.items():
        out += patch(1, i * psize + 48 + k * size, b)
    return out
def seed(minor, ctl, psize, managed=0):
    out = bytes([minor - 8, ctl])
    names = {0x800: b'type\0', 0x810: b'Node\0', 0x820: b'dict\0', 0x830: b'str\0', 0x840: b'HeapT\0'}
    for off, s in names.items():
        out += patch(0, off, s)
    out += typeobj(0, 0, PY, PY + 0x800, READY | GC | TYPE)
    out += typeobj(0, 0x200, PY, PY + 0x810, READY | GC | managed)
    out += typeobj(0, 0x400, PY, PY + 0x820, READY | GC | DICT)
    out += typeobj(0, 0x600, PY, PY + 0x830, READY)
    out += typeobj(2, 16, PY, PY + 0x840, READY | GC)      # a heap type: glibc's block 0, past its GC head
    pre = 32 if managed else 16
    node = lambda: (q(HEAP + 1024, 0) if managed else b'') + q(0, 0, 1, PY + 0x200)
    out += pool(0, psize, (pre + 16) // 16 - 1, 5, 3, [1, 3], {0: node(), 2: node(), 4: node()})
    dict_ = q(0, 0, 1, PY + 0x400, 2, 0, HEAP + 512, HEAP + 1536)  # ma_keys, ma_values
    out += pool(1, psize, 3, 4, 2, [2, 3], {0: dict_, 1: dict_})
    out += pool(2, psize, 2, 3, 3, [], {0: q(1, PY + 0x600), 1: q(0, 0, 1, HEAP + 16), 2: q(1, PY + 0x600)})
    out += pool(3, psize, 4, 6, 0, [], {})                  # empty
    if psize == 4096:
        out += pool(4, psize, 0, 4, 2, [0, 1, 0], {})       # a free list with a loop: refused
    return out
open(d + '/py11', 'wb').write(seed(11, 0, 16384))
open(d + '/py11-managed', 'wb').write(seed(11, 0, 16384, MDICT))
open(d + '/py12', 'wb').write(seed(12, 0, 16384, MDICT))
open(d + '/py13-glibc', 'wb').write(seed(13, 1 | 8 << 1, 16384))
open(d + '/py8', 'wb').write(seed(8, 0, 4096))
EOF_PY

# jemalloc's extents map (fuzz_jewalk's input: a byte of control (bit 0:
# find the root by its shape first), then patches as above on mappings 0
# extents (256 KiB: root entry 0x1fc00), 1 a base block of 4 MiB (a leaf,
# edata_t), 2 a thread's TLS (fs_base 64 KiB in), 3 libjemalloc's data
# (the root at 0x1000)): slabs, a large extent, a dirty one, a thread cache;
# a leaf filled with garbage
mkdir -p "$FB/seeds/jewalk"
python3 - "$FB/seeds/jewalk" <<'EOF_PY'
import struct, sys
d = sys.argv[1]
EXT, META, TLS, LIB = 0x7f0000000000, 0x7f0040000000, 0x7f0080000000, 0x7f00c0000000
LEAF, ED = META + 0x40, META + 0x201000
def patch(m, off, b):
    return bytes([m]) + struct.pack('<IH', off, len(b)) + b
def q(*w):
    return struct.pack('<%dQ' % len(w), *w)
def seed(ctl, tcache):
    out = bytes([ctl])
    out += patch(3, 0x1000 + 8 * 0x1fc00, q(LEAF))                       # the root's entry
    out += patch(1, 0, q(4 << 20, 0, 0, META + 0x300000, 0))             # base_block_t
    # (first page, pages, state, slab, szind, free regions (bitmap), addr's offset)
    extents = [(0, 1, 0, 1, 2, [1, 5, 7, 100]), (1, 1, 0, 1, 8, [0]), (4, 4, 0, 0, 36, []),
               (8, 2, 1, 0, 0, []), (10, 3, 0, 1, 3, [])]
    for k, (pg, npg, state, slab, szind, free) in enumerate(extents):
        e, base = ED + 128 * k, EXT + pg * 4096
        bits = slab << 12 | state << 17 | szind << 20 | len(free) << 28
        bm = [0] * 8
        for r in free:
            bm[r // 64] |= 1 << (r % 64)
        out += patch(1, e - META, q(bits, base, npg * 4096, 0, 0, 0, 0, 0, *bm))
        pages = range(pg, pg + npg) if slab or state else [pg, pg + npg - 1]
        for p in sorted(set(pages)):
            le = e | slab | state << 2 | (szind if slab or p == pg else 232) << 48
            out += patch(1, LEAF - META + 8 * p, q(le))
    if tcache:
        big = EXT + 4 * 4096                                             # the cache's array: the large block
        tc, slow = TLS + 0x8000, TLS + 0x9000
        bins = bytearray(73 * 24)
        for i, n in ((0, 0), (1, 0), (2, 2)):
            head = big + 64 + 128 * i
            struct.pack_into('<QQHHH', bins, 24 * i, head, 0, 0, 0, (head + 8 * n) & 0xffff)
        out += patch(0, big - EXT + 64 + 256, q(EXT + 0, EXT + 64))      # bin 2's regions
        out += patch(2, tc - TLS, q(slow) + bytes(bins))
        out += patch(2, slow - TLS, q(tc, tc + 8))
        out += patch(2, 0xa000, q(EXT & ~((1 << 30) - 1), LEAF))         # a lookup cache's pair
    return out
open(d + '/je', 'wb').write(seed(0, 0))
# prof:true: the large extent sampled, and a small one promoted to 5 pages of its own
# (its tail page the first large class's), both by one tctx -> gctx -> bt of
# 2 frames in libjemalloc's code, then 2 in the program's
TCTX, GCTX, CODE, JECODE = META + 0x310000, META + 0x311000, 0x7f0100000000, 0x7f0140000000
prof = patch(1, ED + 128 * 2 + 72 - META, q(16384, TCTX))
prof += patch(1, ED + 128 * 5 - META, q(3 << 20, EXT + 14 * 4096, 5 * 4096, 0, 0, 0, 0, 0, 0, 32, TCTX))
prof += patch(1, LEAF - META + 8 * 14, q(ED + 128 * 5 | 3 << 48))
prof += patch(1, LEAF - META + 8 * 18, q(ED + 128 * 5 | 36 << 48))
prof += patch(1, TCTX - META + 96, q(GCTX))
prof += patch(1, GCTX - META + 104, q(GCTX + 120, 4, JECODE + 0x100, JECODE + 0x200, CODE + 0x1234,
                                        CODE + 0x2345))
open(d + '/je-prof', 'wb').write(seed(0, 0) + prof)
open(d + '/je-tcache', 'wb').write(seed(0, 1))
open(d + '/je-find', 'wb').write(seed(1, 1))
# a fill (u8 0x80 | mapping, u32 offset, u16 count, u64 value, u64 step: 4 * count
# words): the rest of the leaf, each element naming another edata_t of zeros
open(d + '/je-fill', 'wb').write(seed(0, 1) + b'\x81' + struct.pack('<IHQQ', 0x40 + 8 * 64, 65535,
                                                                      0x7f0080000000, 128))
EOF_PY

# mimalloc 2.0.9's segments (fuzz_miwalk's input: patches as above on
# mappings 0 a segment's first MiB at a 32 MiB boundary, 1 another aligned
# MiB): a segment whose page of 64-byte blocks has a free, a local and a
# thread free list, its heap's delayed list in the second mapping; and a
# huge segment there instead
mkdir -p "$FB/seeds/miwalk"
python3 - "$FB/seeds/miwalk" <<'EOF_PY'
import struct, sys
d = sys.argv[1]
SEG1, SEG2, KEY = 0x7f0002000000, 0x7f0004000000, 0x5a5a1234
def patch(m, off, b):
    return bytes([m]) + struct.pack('<IH', off, len(b)) + b
def q(*w):
    return struct.pack('<%dQ' % len(w), *w)
def header(m, a, slices, kind, entries):
    # mi_segment_t from +208: used, cookie, segment_slices, segment_info_slices, kind, slice_entries, thread_id
    return patch(m, 208, q(1, a ^ KEY, slices, 1, kind, entries, 1))
def entry(m, i, count, cap=0, free=0, used=0, bsize=0, local=0, thread=0, heap=0):
    e = struct.pack('<IIHHHHQII', count, 0, 0, cap, cap, 0, free, used, bsize) + q(local, thread, heap)
    return patch(m, 264 + 80 * i, e)
def seed(huge):
    page = SEG1 + 65536 + 384                    # slice 1's blocks, 64 bytes apart
    blk = lambda k: page + 64 * k
    out = header(0, SEG1, 512, 0, 512) + entry(0, 0, 1)
    out += entry(0, 1, 1, cap=12, free=blk(3), used=9, bsize=64, local=blk(9), thread=blk(10) | 1,
                 heap=SEG2 + 4096)
    out += entry(0, 2, 510)                      # the rest: a free span
    for a, b in ((3, 5), (5, 0), (9, 0), (10, 0), (7, 0)):
        out += patch(0, blk(a) - SEG1, q(blk(b) if b else 0))
    if huge:                                     # one page of a block of 40 MiB
        out += header(1, SEG2, 700, 1, 512) + entry(1, 0, 1)
        out += entry(1, 1, 699, cap=1, used=1, bsize=1 << 31)
    else:                                        # the heap: its delayed list (block 7), its thread
        out += patch(1, 4096 + 2840, q(blk(7), 1))
    return out
open(d + '/seg', 'wb').write(seed(0))
open(d + '/seg-huge', 'wb').write(seed(1))
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

# the walkers' seeds still walk: what each makes of its target (FUZZ_SAY)
seed_says() {
	[ -x "$FB/fuzz_$1" ] || return 0
	if ! FUZZ_SAY=1 "$FB/fuzz_$1" "$FB/seeds/$1/$2" 2>&1 | grep -q "$3"; then
		echo "FAIL fuzz/$1: seed $2 does not say '$3':"
		FUZZ_SAY=1 "$FB/fuzz_$1" "$FB/seeds/$1/$2" 2>&1 | grep '^rc \|^pools '
		fail=1
	fi
}
seed_says pywalk py11 'pools 4 blocks 8 refused 0 free 4; g 40 objects 9 types 5 keys 1 values 1 gc 7'
seed_says pywalk py11-managed 'objects 9 types 5 keys 1 values 2 gc 7'
seed_says pywalk py12 'objects 9 types 5 keys 1 values 2 gc 7'
seed_says pywalk py13-glibc 'pools 3 blocks 5 refused 0'
seed_says pywalk py8 'pools 4 blocks 8 refused 1 free 4'
seed_says jewalk je 'rc 0 () found 0 .* pages 9 slabs 3 large 1 torn 0 tcaches 0 .* g 412 meta 3'
seed_says jewalk je-prof 'rc 0 () found 0 .* slabs 3 large 2 torn 0 .* g 413 meta 4 sampled 2 stacks 2 of 4 frames'
seed_says jewalk je-tcache 'rc 0 () found 0 .* tcaches 1 free 2 arrays 1; g 409 meta 4'
seed_says jewalk je-find 'rc 0 () found 1 .* tcaches 1 free 2 arrays 1; g 409 meta 4'
seed_says jewalk je-fill 'does not hold together'
seed_says miwalk seg 'rc 0 () segments 1 rejected 0 pages 1 free 4 delayed 1 torn 0 miscounted 0 heaps 1; g 7'
seed_says miwalk seg-huge 'rc 0 () segments 2 rejected 0 pages 2 free 4 delayed 0 torn 0 miscounted 0 heaps 0; g 9'

# tcmalloc's walker (fuzz_tcwalk): its regression inputs, a corpus merged
# from a longer run (each reaches a listing or a refusal of its own)
mkdir -p "$FB/seeds/tcwalk"
cp tests/fuzz/regress/tcwalk/* "$FB/seeds/tcwalk/"

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
