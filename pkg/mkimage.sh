#!/bin/sh
# Builds the sidecar container image from the heapattach .deb with podman, no registry: prints its size.
# SPDX-License-Identifier: MIT
#
# usage: mkimage.sh DEB IMAGE WORKDIR
# The root file system is the package's files (less the man page) and the
# libraries they need, taken from this machine by ldd (the same Debian
# libraries the package depends on), plus sh, cat and tar (kubectl cp
# needs tar); /out (mode 1777) is the working directory, so a profile
# written there with a volume mounted on it lands on the host. The tree
# is imported as a single layer with podman import, entry point
# /usr/bin/heapattach.
set -e
[ $# -eq 3 ] || { echo "usage: mkimage.sh DEB IMAGE WORKDIR" >&2; exit 2; }
deb=$1 image=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v podman >/dev/null || { echo "mkimage: no podman (make deps installs it)" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work/rootfs"
root=$work/rootfs
dpkg-deb -x "$deb" "$root"
rm -rf "$root/usr/share/man"
mkdir -p "$root/bin" "$root/tmp" "$root/out" "$root/etc"
chmod 1777 "$root/tmp" "$root/out"
for tool in sh cat tar; do
	p=$(command -v "$tool")
	cp -L "$p" "$root/bin/$tool"
done
echo 'root:x:0:0:root:/out:/bin/sh' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
sh "$here/mkrootfs.sh" "$root" "$root/usr/bin/heapattach" "$root/bin/sh" "$root/bin/cat" "$root/bin/tar"
version=$(dpkg-deb -f "$deb" Version)
tar --numeric-owner --owner=0 --group=0 -C "$root" -cf "$work/rootfs.tar" .
podman import --quiet \
	--change 'ENTRYPOINT ["/usr/bin/heapattach"]' \
	--change 'ENV PATH=/usr/bin:/bin' \
	--change 'WORKDIR /out' \
	--change "LABEL org.opencontainers.image.title=heapattach" \
	--change "LABEL org.opencontainers.image.version=$version" \
	--message "heapattach $version sidecar" \
	"$work/rootfs.tar" "$image" >/dev/null
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "image $image: $size bytes ($(du -sk "$root" | cut -f1) KiB of files)"
