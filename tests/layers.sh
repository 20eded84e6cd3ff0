#!/bin/sh
# The layering check: an #include in src/ or include/ may point to its own folder or to a layer below, never up.
# SPDX-License-Identifier: MIT
# Run by tests/run.sh (make test); exit 0 pass, 1 a climbing include, a bare include of a
# layer's header, a folder missing from the table, or a stale allowlist line.
# Usage: sh tests/layers.sh [TREE]   (default: the tree this script is in)
cd "${1:-$(dirname "$0")/..}" || exit 99
ARCH=${ARCH:-x86_64}

# The layers, bottom to top: "rank folder". A file may include its own folder and
# folders of a lower rank; folders of one rank are siblings and include neither
# each other. "abi" is include/ (the agent ABI) and src/arch/ARCH (the machine), but
# for the arch files ARCH_AT places higher.
LAYERS='
0 abi
1 base
2 profile
3 model
4 ptrace
5 stacks
6 python
7 implant
7 output
8 fast
8 trap
8 report
8 snapshot
8 serve
9 session
10 cli
'

# src/arch/ARCH files that belong to a higher layer than the machine's ABI: "file folder"
ARCH_AT='
unwind_regs.c stacks
tramp_fast.c implant
tramp_fast.h implant
hookcall.c trap
hookcall.h trap
'

# Debts: climbing includes of today's code, "file include  reason". Pay one off by
# removing its line; a new climb fails until it is fixed (or, reviewed, listed here).
ALLOW='
'

find src include -name '*.[ch]' | sort | LC_ALL=C xargs grep -H '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' |
awk -v layers="$LAYERS" -v arch_at="$ARCH_AT" -v allow="$ALLOW" -v arch="src/arch/$ARCH" '
function layer(path,   parts) {
	if (path ~ /^include\//)
		return "abi"
	if (index(path, arch "/") == 1) {
		split(path, parts, "/")
		return (parts[4] in at) ? at[parts[4]] : "abi"
	}
	split(path, parts, "/")
	return parts[2]
}
function exists(p) { return (system("test -f \"" p "\"") == 0) }
BEGIN {
	n = split(layers, l, "\n")
	for (i = 1; i <= n; i++)
		if (split(l[i], f, " ") == 2)
			rank[f[2]] = f[1]
	n = split(arch_at, l, "\n")
	for (i = 1; i <= n; i++)
		if (split(l[i], f, " ") >= 2)
			at[f[1]] = f[2]
	n = split(allow, l, "\n")
	for (i = 1; i <= n; i++)
		if (split(l[i], f, " ") >= 2) {
			ok[f[1] " " f[2]] = 1
			used[f[1] " " f[2]] = 0
		}
	bad = 0
}
{
	file = substr($0, 1, index($0, ":") - 1)
	inc = $0
	sub(/^[^"]*"/, "", inc)
	sub(/".*/, "", inc)
	dir = file
	sub(/\/[^\/]*$/, "", dir)
	from = layer(file)
	if (!(from in rank)) {
		if (!(from in told))
			print "layers: " file ": folder " from " is not in the table (tests/layers.sh)"
		told[from] = 1
		bad = 1
		next
	}
	if (inc ~ /\//) {
		target = "src/" inc
	} else if (exists(dir "/" inc)) {
		target = dir "/" inc
		if (target !~ /^include\// && index(target, arch "/") != 1) {
			print "layers: " file ": include \"" inc "\" by its path from src/"
			bad = 1
			next
		}
	} else if (exists("include/" inc)) {
		target = "include/" inc
	} else if (exists(arch "/" inc)) {
		target = arch "/" inc
	} else {
		next	# generated (build/gen) or not ours
	}
	to = layer(target)
	if (from == to)
		next
	if ((to in rank) && rank[to] < rank[from])
		next
	if ((file " " inc) in ok) {
		used[file " " inc] = 1
		next
	}
	printf "layers: %s: includes %s: %s (%s) may not include %s (%s)\n", file, inc, from, rank[from], to, (to in rank) ? rank[to] : "?"
	bad = 1
}
END {
	for (k in used)
		if (!used[k]) {
			print "layers: allowlist line no longer needed: " k
			bad = 1
		}
	exit bad
}'
