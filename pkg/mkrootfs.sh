#!/bin/sh
# Copies into a root directory the shared libraries (and loader) that the given ELF files need, by ldd.
# SPDX-License-Identifier: MIT
#
# usage: mkrootfs.sh ROOT FILE...
# Each library goes to ROOT at the path ldd resolves it to on this
# machine (/lib/x86_64-linux-gnu/libc.so.6, /lib64/ld-linux-x86-64.so.2),
# symbolic links followed, so that the files run in ROOT as a container's
# root. A FILE that needs a library ldd cannot find is an error.
set -e
[ $# -ge 2 ] || { echo "usage: mkrootfs.sh ROOT FILE..." >&2; exit 2; }
root=$1; shift
for f in "$@"; do
	out=$(ldd "$f" 2>&1) || { echo "mkrootfs: ldd $f: $out" >&2; exit 1; }
	if echo "$out" | grep -q 'not found'; then
		echo "mkrootfs: $f: $(echo "$out" | grep 'not found')" >&2
		exit 1
	fi
	echo "$out" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
	while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
done
