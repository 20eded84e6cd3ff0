# Sourced by listhooks-*.test after init.sh: run the hook lister, compare with the victim's own view.
# SPDX-License-Identifier: MIT

# The real CLI once it is wired, else the test tool.
if [ -x "$HA" ] && "$HA" --help 2>&1 | grep -q -- --list-hooks; then
	LISTHOOKS="$HA --list-hooks -p"
else
	LISTHOOKS=$TOOLS/listhooks
	[ -x "$LISTHOOKS" ] || framework_failure_ "no $LISTHOOKS; run make tools"
fi

# list_hooks_ PID OUT: write the hook list of PID to OUT; fail if the lister fails.
list_hooks_() {
	$LISTHOOKS "$1" >"$2" 2>"$2.err" || fail_ "listhooks $1 failed: $(cat "$2.err")"
	[ -s "$2" ] || fail_ "listhooks $1 printed nothing"
}

# check_addrs_ VICTIM_OUT HOOKS_OUT: every "NAME 0xADDR" line the victim printed
# (ADDR non-zero) must be a listed entry at ADDR whose names include NAME.
# Sets NCHECKED.
# Entries not to patch (comment lines) count as listed here.
check_addrs_() {
	NCHECKED=0
	sed -e 's/^# forwards to [^ ]* //' -e 's/^# unsupported ifunc //' "$2" >"$2.all"
	while read -r name addr; do
		case $name in ready|'') continue ;; esac
		[ "$addr" = 0x0 ] && continue
		line=$(awk -v a="$addr" '$1 == a' "$2.all")
		[ -n "$line" ] || fail_ "$name at $addr (victim's view) not listed: $(cat "$2")"
		echo "$line" | awk -v n="$name" '{ k = split($2, v, "="); f = 0
			for (i = 1; i <= k; i++) if (v[i] == n) f = 1; exit !f }' ||
			fail_ "$addr listed as '$line', expected the name $name"
		NCHECKED=$((NCHECKED + 1))
	done <"$1"
	[ "$NCHECKED" -gt 0 ] || fail_ "victim printed no addresses"
}

# forwards_of_ NAME HOOKS_OUT: the entry point NAME's wrapper forwards to, if any.
forwards_of_() {
	awk -v n="$1" '$1 == "#" && $2 == "forwards" { k = split($6, v, "=")
		for (i = 1; i <= k; i++) if (v[i] == n) print $4 }' "$2"
}

# path_of_ NAME HOOKS_OUT: the object path listed (to patch) for NAME.
path_of_() {
	awk -v n="$1" '$1 !~ /^#/ { k = split($2, v, "=")
		for (i = 1; i <= k; i++) if (v[i] == n) print $3 }' "$2"
}

# victim_alive_ PID: the victim must survive the listing.
victim_alive_() {
	kill -0 "$1" 2>/dev/null || fail_ "victim $1 died"
}
