#!/bin/sh
# Run a command with a fresh tmpfs on /tmp, the project's tree still visible where it sits.
# SPDX-License-Identifier: MIT
#
# usage (inside `unshare -m --propagation private`): private-tmp.sh MOUNT_OPTS CMD [ARG...]
# MOUNT_OPTS are tmpfs options ("-" for none). A tree under /tmp (a clone
# in /tmp/x, a build directory there) would vanish under the new tmpfs: it
# is held open first and bound back to its path afterwards (-c: mount
# would otherwise resolve /proc/self/fd/N to the path, now the tmpfs).
opts=$1
shift
TOP=${TOP:?} BUILD=${BUILD:?}
exec 8<"$TOP" 9<"$BUILD" || exit 90
if [ "$opts" = - ]; then
	mount -t tmpfs ha-private-tmp /tmp || exit 90
else
	mount -t tmpfs -o "$opts" ha-private-tmp /tmp || exit 90
fi
case $TOP in /tmp/*) mkdir -p "$TOP" && mount -c --bind /proc/self/fd/8 "$TOP" || exit 90 ;; esac
case $BUILD in
"$TOP"/*) ;;
/tmp/*) mkdir -p "$BUILD" && mount -c --bind /proc/self/fd/9 "$BUILD" || exit 90 ;;
esac
exec 8<&- 9<&-
exec "$@"
