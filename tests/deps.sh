#!/bin/sh
# Checks for, or installs, the Debian packages the build and the tests need.
# SPDX-License-Identifier: MIT
PKGS="build-essential g++ pkg-config libunwind-dev libelf-dev libdw-dev libdebuginfod-dev libcapstone-dev zlib1g-dev golang-go google-perftools libgoogle-perftools-dev libtcmalloc-minimal4 libjemalloc-dev libmimalloc-dev python3 python3-numpy util-linux strace gdb debuginfod dwz heaptrack clang libclang-rt-14-dev debhelper groff-base man-db podman runc uidmap fuse-overlayfs slirp4netns tmux chromium libxml2-utils nodejs memcached redis-server prometheus nginx-light"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || missing="$missing $p"
done
case $1 in
check)
	[ -z "$missing" ] && exit 0
	echo "missing packages:$missing" >&2
	exit 1 ;;
install)
	[ -z "$missing" ] && { echo "deps: all packages present"; exit 0; }
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: not root; run: sudo sh -c 'apt-get update && apt-get install -y$missing'" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update && apt-get install -y --no-install-recommends $missing ;;
*)
	echo "usage: deps.sh check|install" >&2; exit 2 ;;
esac
