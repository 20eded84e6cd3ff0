# Sourced by the packaging tests (install, deb, sidecar) after init.sh: run the tree's Makefile, find the .deb.
# SPDX-License-Identifier: MIT

# make_ ARGS...: make in the top directory, as a user would type it (no
# jobserver or variables of a make that runs the tests).
make_() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory -C "$TOP" "$@"
}

# need_deb_tools_: skip unless this machine can build the .deb.
need_deb_tools_() {
	for c in dpkg-buildpackage dpkg-deb dh; do
		command -v "$c" >/dev/null || skip_ "no $c (debhelper, dpkg-dev: make deps installs them)"
	done
}

# build_deb_: make deb; set DEB to the package's path.
build_deb_() {
	make_ deb >"$T/make-deb.log" 2>&1 || fail_ "make deb failed: $(tail -n 30 "$T/make-deb.log")"
	DEB=$TOP/build/deb/heapattach_$("$HA" --version | cut -d' ' -f2)_$(dpkg --print-architecture).deb
	[ -f "$DEB" ] || fail_ "make deb made no $DEB: $(cat "$T/make-deb.log")"
}
